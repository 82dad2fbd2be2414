//! How a waiter learns that its ticket was granted when no release can wake it:
//! a thread blocked in [`Semaphore::acquire_timeout`], and the one shared-wait
//! policy of every host runtime ([`SHARED_WAIT_POLL`]).

use std::time::{Duration, Instant};

use seawall_core::{Corrupt, Priority, SemaphoreRejected};

use super::Semaphore;
use super::cell::{AcquireError, Acquired, Cancelled, Permit, Polled, Ticket};

/// How often a host runtime's waiter of a shared semaphore looks at its ticket
/// (Python's threads and asyncio tasks, Node's event loop). A release in another
/// process hands the permit to the oldest waiter of any process but cannot wake
/// this one, so a grant is noticed within this interval; until then the permit
/// is held for the waiter. 2 ms keeps that delay below a typical dependency
/// call's latency while an idle waiter costs 500 looks a second.
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
    /// The wait is a bounded poll-and-park loop on this thread, so it works the
    /// same for a semaphore shared with other processes (whose releases could
    /// not wake a condition variable of this one): a few polls with
    /// `yield`, then sleeps doubling from 20 µs to 1 ms, never past the
    /// deadline. A grant is noticed within about 1 ms; until then the granted
    /// permit is held for this waiter. Host runtimes with an event loop
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
        loop {
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
