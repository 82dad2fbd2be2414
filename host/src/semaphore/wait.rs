//! How a waiter learns that its ticket was granted: a thread blocked in
//! [`Semaphore::acquire_timeout`] sleeps on the release counter (any process's
//! release wakes it, see `super::wake`); a host runtime with an event loop
//! looks at its tickets every [`SHARED_WAIT_POLL`].

use std::time::{Duration, Instant};

use seawall_core::{Corrupt, Priority, SemaphoreRejected};

use super::Semaphore;
use super::cell::{AcquireError, Acquired, Cancelled, Permit, Polled, Ticket};

/// How often a host runtime's waiter of a shared semaphore that cannot sleep
/// on the release counter looks at its ticket (asyncio tasks, Node's event
/// loop), and the longest a sleep on the counter lasts before the waiter looks
/// again anyway (the bound a lost wake-up costs). A grant is noticed within
/// this interval; until then the permit is held for the waiter. 2 ms keeps
/// that delay below a typical dependency call's latency while an idle waiter
/// costs 500 looks a second.
pub const SHARED_WAIT_POLL: Duration = Duration::from_millis(2);

/// Why [`Semaphore::acquire_timeout`] returned without a permit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitError {
    /// Refused at once: shed, or full with no room to wait.
    Rejected(SemaphoreRejected),
    /// Waited the whole timeout; the waiter left the queue.
    TimedOut,
    /// No free holder slot found (see [`AcquireError::PermitsExhausted`]).
    PermitsExhausted,
    /// The waiting ticket was taken by someone else (a reclaim that believed
    /// this process dead): nothing is held.
    TicketLost,
    /// The shared region's semaphore holds what seawall never writes, or kept a
    /// retry loop going past its bound ([`Corrupt`], DESIGN §8): nothing is held.
    RegionCorrupt,
}

impl From<Corrupt> for WaitError {
    fn from(Corrupt: Corrupt) -> Self {
        Self::RegionCorrupt
    }
}

impl Semaphore {
    /// A permit for priority `p`, waiting at most `timeout` (`None`: no limit)
    /// in FIFO order; a zero timeout never queues. Shed priorities and a full
    /// queue are refused at once.
    ///
    /// The wait sleeps on the release counter (on Linux: a futex, which a
    /// release in any process sharing the semaphore wakes), never more than
    /// [`SHARED_WAIT_POLL`] at a time and never past the deadline; elsewhere
    /// it is a bounded poll-and-park loop: a few polls with `yield`, then
    /// sleeps doubling from 20 µs to 1 ms. Host runtimes with an event loop
    /// should poll tickets themselves instead, every [`SHARED_WAIT_POLL`].
    ///
    /// Whatever a shared region holds, the call returns by the deadline (give
    /// or take one poll, each bounded): a corrupted one is
    /// [`WaitError::RegionCorrupt`].
    pub fn acquire_timeout(
        &self,
        p: Priority,
        timeout: Option<Duration>,
    ) -> Result<Permit, WaitError> {
        let exhausted = |e| match e {
            AcquireError::Rejected(r) => WaitError::Rejected(r),
            AcquireError::PermitsExhausted => WaitError::PermitsExhausted,
        };
        if timeout == Some(Duration::ZERO) {
            return self.try_acquire_checked(p)?.map_err(exhausted);
        }
        let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
        let ticket = match self.acquire_or_enqueue_checked(p)?.map_err(exhausted)? {
            Acquired::Admitted(permit) => return Ok(permit),
            Acquired::Queued(t) => t,
        };
        self.wait(ticket, deadline)
    }

    fn wait(&self, ticket: Ticket, deadline: Option<Instant>) -> Result<Permit, WaitError> {
        let mut polls = 0u32;
        let mut nap = Duration::from_micros(20);
        let sleeper = self.release_waiter();
        loop {
            // Read before the look: a release after it changes the counter.
            let seen = sleeper.count();
            match self.poll_checked(ticket) {
                Ok(Ok(Polled::Granted(permit))) => return Ok(permit),
                Ok(Ok(Polled::Waiting)) => {}
                Ok(Err(_)) => return Err(WaitError::TicketLost),
                Err(Corrupt) => {
                    // Leave the queue if the region still lets us; the answer is
                    // the corruption either way.
                    let _ = self.cancel_checked(ticket);
                    return Err(WaitError::RegionCorrupt);
                }
            }
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            if left == Some(Duration::ZERO) {
                // A permit granted in this same instant is passed on.
                // Only this thread polls or cancels the ticket, so a cancel that
                // fails means a reclaim by another process took it.
                return match self.cancel_checked(ticket)? {
                    Ok(Cancelled::Cancelled | Cancelled::PassedOn) => Err(WaitError::TimedOut),
                    Err(_) => Err(WaitError::TicketLost),
                };
            }
            let bound = left.map_or(SHARED_WAIT_POLL, |l| l.min(SHARED_WAIT_POLL));
            if sleeper.sleep(seen, bound) {
                continue;
            }
            polls += 1;
            if polls < 16 {
                std::thread::yield_now();
            } else {
                std::thread::sleep(left.map_or(nap, |l| l.min(nap)));
                nap = (nap * 2).min(Duration::from_millis(1));
            }
        }
    }
}
