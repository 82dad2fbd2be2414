//! An async face for seawall's lock-free [`Semaphore`]: priority load shedding at
//! once, and for those who may wait, a wait bounded by the request's deadline.
//!
//! The core never blocks and never wakes anyone: a queued caller learns of its
//! grant by polling its ticket. Here every release also notifies a tokio
//! [`Notify`], so waiters poll only when a permit may have moved, and a waiter that
//! gives up (or whose request is dropped) cancels its ticket; a permit handed to
//! it in that same instant is passed on by the core, and the next waiter is woken.

use seawall_core::{
    Admission, CancelOutcome, ConfigError, Deadline, Priority, RejectReason, Semaphore,
    SemaphoreConfig, SemaphorePermit, SemaphoreSnapshot, Waiter,
};
use tokio::sync::Notify;

use crate::clock::{instant_at, now_ns};
use crate::settings::QUEUE_SLOTS;

/// Why the bulkhead refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// The priority's share is used up (load shedding; never waits).
    Shed,
    /// No permit and no room in the queue.
    Full,
    /// Waited in the queue until the wait limit or the deadline.
    Timeout,
}

/// The bulkhead: a [`Semaphore`] and a wake-up for its waiters.
#[derive(Debug)]
pub struct Bulkhead {
    sem: Semaphore<QUEUE_SLOTS>,
    freed: Notify,
    max_wait_ns: u64,
}

/// A held permit; dropping it releases the permit and wakes the waiters.
#[derive(Debug)]
pub struct BulkheadPermit<'a> {
    permit: Option<SemaphorePermit<'a, QUEUE_SLOTS>>,
    freed: &'a Notify,
}

impl Drop for BulkheadPermit<'_> {
    fn drop(&mut self) {
        drop(self.permit.take());
        self.freed.notify_waiters();
    }
}

/// A place in the queue; dropping it (the request gave up or was dropped) cancels
/// the ticket, and wakes the waiters if a permit reached it meanwhile and was
/// passed on.
struct Queued<'a> {
    waiter: Option<Waiter<'a, QUEUE_SLOTS>>,
    freed: &'a Notify,
}

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        if let Some(w) = self.waiter.take()
            && w.cancel() == CancelOutcome::PassedOn
        {
            self.freed.notify_waiters();
        }
    }
}

impl Bulkhead {
    /// A bulkhead for `config`, where a queued caller waits at most `max_wait_ns`.
    pub fn new(config: SemaphoreConfig, max_wait_ns: u64) -> Result<Self, ConfigError> {
        Ok(Self {
            sem: Semaphore::new(config)?,
            freed: Notify::new(),
            max_wait_ns,
        })
    }

    /// Permits held and callers queued now.
    pub fn snapshot(&self) -> SemaphoreSnapshot {
        self.sem.snapshot()
    }

    /// A permit for priority `p`: at once, or after a wait of at most the wait
    /// limit and never past `deadline`.
    pub async fn acquire(
        &self,
        p: Priority,
        deadline: &Deadline,
    ) -> Result<BulkheadPermit<'_>, Refused> {
        let waiter = match self.sem.acquire_or_wait(p) {
            Ok(Admission::Admitted(permit)) => return Ok(self.held(permit)),
            Ok(Admission::Queued(w)) => w,
            Err(r) => {
                return Err(match r.reason {
                    RejectReason::Shed => Refused::Shed,
                    RejectReason::Full => Refused::Full,
                });
            }
        };
        let mut queued = Queued {
            waiter: Some(waiter),
            freed: &self.freed,
        };
        let now = now_ns();
        let until = instant_at(now + deadline.allocate(self.max_wait_ns, now));
        loop {
            // Register for the wake-up before looking, so a release between the
            // look and the wait is not missed.
            let notified = self.freed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if let Some(w) = queued.waiter.take() {
                match w.try_into_permit() {
                    Ok(permit) => return Ok(self.held(permit)),
                    Err(w) => queued.waiter = Some(w),
                }
            }
            if tokio::time::timeout_at(until.into(), notified)
                .await
                .is_err()
            {
                // `queued` cancels the ticket as it drops.
                return Err(Refused::Timeout);
            }
        }
    }

    fn held<'a>(&'a self, permit: SemaphorePermit<'a, QUEUE_SLOTS>) -> BulkheadPermit<'a> {
        BulkheadPermit {
            permit: Some(permit),
            freed: &self.freed,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use seawall_core::{PriorityShares, Ratio};

    use super::*;

    const MS: u64 = 1_000_000;

    fn one_permit(max_wait_ms: u64) -> Bulkhead {
        let config = SemaphoreConfig {
            max_concurrent: 2,
            max_queue: 4,
            shares: PriorityShares {
                low: Ratio::from_percent(50),
                ..PriorityShares::ALL_FULL
            },
        };
        Bulkhead::new(config, max_wait_ms * MS).unwrap()
    }

    fn far() -> Deadline {
        Deadline::new(10_000 * MS, now_ns())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sheds_low_priority_and_hands_a_freed_permit_to_the_waiter() {
        let b = Arc::new(one_permit(5_000));
        let first = b.acquire(Priority::Low, &far()).await.unwrap();
        // Low's limit is ⌊2 · 50 %⌋ = 1, below max_concurrent: shed at once.
        assert_eq!(
            b.acquire(Priority::Low, &far()).await.unwrap_err(),
            Refused::Shed
        );
        let second = b.acquire(Priority::Critical, &far()).await.unwrap();
        // Both permits held: critical waits in the queue.
        let waiter = {
            let b = Arc::clone(&b);
            tokio::spawn(async move {
                let p = b.acquire(Priority::Critical, &far()).await.map(drop);
                (p, now_ns())
            })
        };
        while b.snapshot().queued == 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let released = now_ns();
        drop(first);
        let (got, at) = tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(got, Ok(()));
        // Woken by the release, not by a poll interval: well under 1 s.
        assert!(at - released < 1_000 * MS, "{} ms", (at - released) / MS);
        drop(second);
        assert_eq!(b.snapshot(), SemaphoreSnapshot::default());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_wait_ends_at_its_limit_or_the_deadline_and_leaves_the_queue() {
        let b = one_permit(50);
        let _a = b.acquire(Priority::Critical, &far()).await.unwrap();
        let _c = b.acquire(Priority::Critical, &far()).await.unwrap();
        // The wait limit (50 ms) ends this wait.
        let t = now_ns();
        assert_eq!(
            b.acquire(Priority::High, &far()).await.unwrap_err(),
            Refused::Timeout
        );
        let waited = now_ns() - t;
        assert!(
            (50 * MS..1_000 * MS).contains(&waited),
            "{} ms",
            waited / MS
        );
        // A deadline with 10 ms left ends it sooner than the limit.
        let b = one_permit(5_000);
        let _a = b.acquire(Priority::Critical, &far()).await.unwrap();
        let _c = b.acquire(Priority::Critical, &far()).await.unwrap();
        let t = now_ns();
        let near = Deadline::new(10 * MS, t);
        assert_eq!(
            b.acquire(Priority::High, &near).await.unwrap_err(),
            Refused::Timeout
        );
        assert!(now_ns() - t < 1_000 * MS);
        assert_eq!(b.snapshot().queued, 0);
        // A request dropped while it waits leaves the queue too.
        let d = far();
        let pending = b.acquire(Priority::Critical, &d);
        assert!(
            tokio::time::timeout(Duration::from_millis(20), pending)
                .await
                .is_err()
        );
        assert_eq!(
            b.snapshot(),
            SemaphoreSnapshot {
                active: 2,
                queued: 0
            }
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn full_when_the_queue_is_full() {
        let config = SemaphoreConfig {
            max_concurrent: 1,
            max_queue: 0,
            shares: PriorityShares::ALL_FULL,
        };
        let b = Bulkhead::new(config, 100 * MS).unwrap();
        let _a = b.acquire(Priority::Normal, &far()).await.unwrap();
        assert_eq!(
            b.acquire(Priority::Critical, &far()).await.unwrap_err(),
            Refused::Full
        );
    }
}
