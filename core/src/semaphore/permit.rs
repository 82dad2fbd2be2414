//! Borrowing handles over a [`Semaphore`]: a held permit and a queued waiter, each
//! given back exactly once (on drop at the latest).

use core::cell::Cell;
use core::mem::ManuallyDrop;

use super::{CancelOutcome, Semaphore, Ticket, TicketState};

/// A held semaphore permit; released on drop.
#[must_use = "dropping the permit releases it at once"]
pub struct SemaphorePermit<'a, const Q: usize> {
    sem: &'a Semaphore<Q>,
}

impl<'a, const Q: usize> SemaphorePermit<'a, Q> {
    pub(crate) fn new(sem: &'a Semaphore<Q>) -> Self {
        Self { sem }
    }

    /// Give the permit back now (same as dropping it).
    pub fn release(self) {
        drop(self);
    }

    /// Keep the permit without the handle; the caller must call
    /// [`Semaphore::release`] exactly once.
    pub fn forget(self) {
        let _ = ManuallyDrop::new(self);
    }
}

impl<const Q: usize> Drop for SemaphorePermit<'_, Q> {
    fn drop(&mut self) {
        self.sem.release();
    }
}

impl<const Q: usize> core::fmt::Debug for SemaphorePermit<'_, Q> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("SemaphorePermit")
    }
}

/// A place in the wait queue. Poll it with [`Waiter::is_granted`] (a host runtime
/// parks or awaits between polls), then take the permit; dropping a waiter cancels
/// it (a permit granted in the same instant is passed on, never lost), or
/// releases the permit if a poll already took the grant.
#[must_use = "dropping the waiter cancels it"]
pub struct Waiter<'a, const Q: usize> {
    sem: &'a Semaphore<Q>,
    ticket: Ticket,
    /// A poll acknowledged the grant: the waiter holds the permit.
    granted: Cell<bool>,
}

impl<'a, const Q: usize> Waiter<'a, Q> {
    pub(crate) fn new(sem: &'a Semaphore<Q>, ticket: Ticket) -> Self {
        Self {
            sem,
            ticket,
            granted: Cell::new(false),
        }
    }

    /// The ticket.
    #[must_use]
    pub fn ticket(&self) -> Ticket {
        self.ticket
    }

    /// Whether a release has handed this waiter its permit (the first poll
    /// that sees the grant acknowledges it; the waiter then holds the permit).
    #[must_use]
    pub fn is_granted(&self) -> bool {
        if !self.granted.get() && self.sem.poll(self.ticket) == TicketState::Granted {
            self.granted.set(true);
        }
        self.granted.get()
    }

    /// The permit if granted, else the waiter back.
    pub fn try_into_permit(self) -> Result<SemaphorePermit<'a, Q>, Self> {
        if self.is_granted() {
            let this = ManuallyDrop::new(self);
            Ok(SemaphorePermit::new(this.sem))
        } else {
            Err(self)
        }
    }

    /// Leave the queue now (timeout or cancellation). Ignoring the outcome is
    /// fine: a permit granted meanwhile has already been passed on.
    #[allow(clippy::must_use_candidate, reason = "the outcome is informative only")]
    pub fn cancel(self) -> CancelOutcome {
        let this = ManuallyDrop::new(self);
        this.leave()
    }

    fn leave(&self) -> CancelOutcome {
        if self.granted.get() {
            // The grant was acknowledged by a poll: give the permit back.
            self.sem.release();
            CancelOutcome::PassedOn
        } else {
            self.sem.cancel(self.ticket)
        }
    }
}

impl<const Q: usize> Drop for Waiter<'_, Q> {
    fn drop(&mut self) {
        let _ = self.leave();
    }
}

impl<const Q: usize> core::fmt::Debug for Waiter<'_, Q> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Waiter")
            .field("ticket", &self.ticket.id)
            .finish()
    }
}

/// What [`Semaphore::acquire_or_wait`] gave.
#[derive(Debug)]
pub enum Admission<'a, const Q: usize> {
    /// A permit, now.
    Admitted(SemaphorePermit<'a, Q>),
    /// A place in the queue.
    Queued(Waiter<'a, Q>),
}
