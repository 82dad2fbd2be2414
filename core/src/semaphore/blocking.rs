//! A ready blocking wait with timeout for Rust threads (`std` feature): the
//! lock-free protocol of [`Semaphore`] with a condition variable to sleep on
//! between polls. The mutex guards nothing but the sleep; it is never held while
//! the semaphore's state changes hands, and the core itself takes no lock.
//!
//! A release made through [`BlockingSemaphore::inner`] (or by anyone else
//! sharing the core) hands its permit to a waiter without notifying the
//! condition variable, so a waiter never sleeps longer than 1 ms
//! (`POLL_SLICE`) before polling again: such a grant is seen within that slice.

use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use super::{Admission, Priority, Rejected, Semaphore, SemaphoreConfig};
use crate::error::ConfigError;

/// The longest a blocked waiter sleeps between two polls of its ticket.
const POLL_SLICE: Duration = Duration::from_millis(1);

/// Why a blocking acquire returned without a permit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WaitError {
    /// Refused at once: shed, or no room in the queue.
    Rejected(Rejected),
    /// Waited the whole timeout; the waiter left the queue.
    TimedOut,
}

/// A [`Semaphore`] that Rust threads can block on, with a timeout.
pub struct BlockingSemaphore<const Q: usize = 64> {
    sem: Semaphore<Q>,
    sleep: Mutex<()>,
    wake: Condvar,
}

impl<const Q: usize> BlockingSemaphore<Q> {
    /// A blocking semaphore for `config`, or the first invalid field.
    pub fn new(config: SemaphoreConfig) -> Result<Self, ConfigError> {
        Ok(Self {
            sem: Semaphore::new(config)?,
            sleep: Mutex::new(()),
            wake: Condvar::new(),
        })
    }

    /// The lock-free semaphore underneath (for snapshots and `try_acquire`). A
    /// permit released through it reaches a blocked waiter within
    /// 1 ms instead of at once.
    pub fn inner(&self) -> &Semaphore<Q> {
        &self.sem
    }

    /// Take a permit, waiting at most `timeout` in FIFO order behind earlier
    /// waiters. Shed priorities and a full queue are refused at once.
    pub fn acquire_timeout(
        &self,
        p: Priority,
        timeout: Duration,
    ) -> Result<BlockingPermit<'_, Q>, WaitError> {
        let deadline = Instant::now().checked_add(timeout);
        let mut waiter = match self.sem.acquire_or_wait(p).map_err(WaitError::Rejected)? {
            Admission::Admitted(permit) => {
                permit.forget();
                return Ok(BlockingPermit { sem: self });
            }
            Admission::Queued(w) => w,
        };
        let mut guard = self.lock();
        loop {
            // Polled under the lock that `release` takes before notifying, so a
            // grant made by this wrapper after this poll always finds this thread
            // asleep; one made through the core alone is seen at the next slice.
            waiter = match waiter.try_into_permit() {
                Ok(permit) => {
                    permit.forget();
                    return Ok(BlockingPermit { sem: self });
                }
                Err(w) => w,
            };
            let now = Instant::now();
            let left = deadline.map_or(Duration::MAX, |d| d.saturating_duration_since(now));
            if left.is_zero() {
                drop(guard);
                // A permit granted in this same instant is passed on by cancel.
                let _ = waiter.cancel();
                self.notify();
                return Err(WaitError::TimedOut);
            }
            guard = self
                .wake
                .wait_timeout(guard, left.min(POLL_SLICE))
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    fn release(&self) {
        self.sem.release();
        self.notify();
    }

    fn notify(&self) {
        let _guard = self.lock();
        self.wake.notify_all();
    }

    fn lock(&self) -> MutexGuard<'_, ()> {
        self.sleep.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<const Q: usize> core::fmt::Debug for BlockingSemaphore<Q> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("BlockingSemaphore")
            .field("sem", &self.sem)
            .finish_non_exhaustive()
    }
}

/// A permit of a [`BlockingSemaphore`]; released (and the next waiter woken) on drop.
#[must_use = "dropping the permit releases it at once"]
pub struct BlockingPermit<'a, const Q: usize> {
    sem: &'a BlockingSemaphore<Q>,
}

impl<const Q: usize> Drop for BlockingPermit<'_, Q> {
    fn drop(&mut self) {
        self.sem.release();
    }
}

impl<const Q: usize> core::fmt::Debug for BlockingPermit<'_, Q> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("BlockingPermit")
    }
}
