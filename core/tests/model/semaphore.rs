//! Sequential reference model of DESIGN §5: a counter of held permits and a FIFO
//! list of waiters.

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
    pub active: u64,
    pub queue: VecDeque<u64>,
    pub granted: Vec<u64>,
    next_id: u64,
}

impl MSemaphore {
    pub fn new(max: u64, max_queue: u64, shares: [u64; 4]) -> Self {
        Self {
            max,
            max_queue,
            shares,
            active: 0,
            queue: VecDeque::new(),
            granted: Vec::new(),
            next_id: 0,
        }
    }

    pub fn limit(&self, p: usize) -> u64 {
        (self.max * self.shares[p] / 100).max(1)
    }

    pub fn acquire(&mut self, p: usize, wait: bool) -> MAcquire {
        let limit = self.limit(p);
        if self.active < limit && self.queue.is_empty() {
            self.active += 1;
            MAcquire::Admitted
        } else if self.active >= limit && limit < self.max {
            MAcquire::Shed
        } else if wait && (self.queue.len() as u64) < self.max_queue {
            let id = self.next_id;
            self.next_id += 1;
            self.queue.push_back(id);
            MAcquire::Queued(id)
        } else {
            MAcquire::Full
        }
    }

    /// A holder gives its permit back: to the oldest waiter, else to the pool.
    pub fn release(&mut self) {
        if let Some(id) = self.queue.pop_front() {
            self.granted.push(id);
        } else {
            self.active -= 1;
        }
    }

    /// A waiter leaves; `false` if it was not waiting.
    pub fn cancel(&mut self, id: u64) -> bool {
        match self.queue.iter().position(|w| *w == id) {
            Some(i) => {
                self.queue.remove(i);
                true
            }
            None => false,
        }
    }
}
