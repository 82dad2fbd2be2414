//! Sequential reference model of DESIGN §5: a counter of held permits and a FIFO
//! list of live waiters. A waiter that gives up leaves the list at once, so only
//! live waiters count against `max_queue` (`ring`, the `Q` of `Semaphore<Q>`, is
//! kept to check `max_queue ≤ Q` is all the queue ever needs).

use std::collections::VecDeque;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MAcquire {
    Admitted,
    Queued(u64),
    Shed,
    Full,
}

pub struct MSemaphore {
    pub max: u64,
    pub max_queue: u64,
    /// percent shares: critical, high, normal, low
    pub shares: [u64; 4],
    pub ring: u64,
    pub active: u64,
    /// Tickets in order, `(id, live)`; cancelled ones stay until they reach the front.
    pub tickets: VecDeque<(u64, bool)>,
    pub granted: Vec<u64>,
    next_id: u64,
}

impl MSemaphore {
    pub fn new(max: u64, max_queue: u64, shares: [u64; 4], ring: u64) -> Self {
        Self {
            max,
            max_queue,
            shares,
            ring,
            active: 0,
            tickets: VecDeque::new(),
            granted: Vec::new(),
            next_id: 0,
        }
    }

    pub fn limit(&self, p: usize) -> u64 {
        (self.max * self.shares[p] / 100).max(1)
    }

    /// Live waiters.
    pub fn queued(&self) -> u64 {
        self.tickets.iter().filter(|(_, live)| *live).count() as u64
    }

    pub fn acquire(&mut self, p: usize, wait: bool) -> MAcquire {
        let limit = self.limit(p);
        let queued = self.queued();
        if self.active < limit && queued == 0 {
            self.active += 1;
            MAcquire::Admitted
        } else if self.active >= limit && limit < self.max {
            MAcquire::Shed
        } else if wait && queued < self.max_queue {
            debug_assert!(queued < self.ring, "max_queue ≤ Q");
            let id = self.next_id;
            self.next_id += 1;
            self.tickets.push_back((id, true));
            MAcquire::Queued(id)
        } else {
            MAcquire::Full
        }
    }

    fn pass_cancelled(&mut self) {
        while self.tickets.front().is_some_and(|(_, live)| !live) {
            self.tickets.pop_front();
        }
    }

    /// A holder gives its permit back: to the oldest waiter, else to the pool.
    pub fn release(&mut self) {
        self.pass_cancelled();
        if let Some((id, _)) = self.tickets.pop_front() {
            self.granted.push(id);
        } else {
            self.active -= 1;
        }
    }

    /// A waiter leaves; `false` if it was not waiting.
    pub fn cancel(&mut self, id: u64) -> bool {
        let Some(t) = self.tickets.iter_mut().find(|(w, live)| *w == id && *live) else {
            return false;
        };
        t.1 = false;
        self.pass_cancelled();
        true
    }
}
