//! What the semaphore's operations return: tickets, ticket states, rejections
//! and occupancy, all plain values.

/// Why an acquire was refused.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RejectReason {
    /// Load shedding: the priority's share is used up (`active ≥ limit <
    /// max_concurrent`); such a request never waits.
    Shed = 0,
    /// No permit free (or waiters ahead) and no room to wait (or the caller would
    /// not wait).
    Full = 1,
}

/// A refused acquire, with the occupancy that refused it.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Rejected {
    /// Why.
    pub reason: RejectReason,
    /// Permits held when it was refused.
    pub active: u32,
    /// Waiters queued when it was refused (a waiter counts until it has learned
    /// of its grant by polling, see [`SemaphoreSnapshot::queued`]).
    pub queued: u32,
}

/// A place in the wait queue.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ticket {
    /// `slot | generation << log2(Q)`: the slot the waiter waits in and how
    /// many waiters that slot had held (its generation, wrapping after
    /// `2^min(30, 32 − log2 Q)`), so a ticket names one wait, not the slot. A
    /// slot is not reused while its ticket is waiting or granted-but-not-polled,
    /// so a live ticket never wraps onto another; a finished one (polled as
    /// granted, or cancelled) must not be used again.
    pub id: u32,
}

/// What [`Semaphore::acquire_raw`] did.
#[repr(C, u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RawAdmission {
    /// A permit is held; give it back with [`Semaphore::release`].
    Admitted,
    /// Waiting with this ticket: [`Semaphore::poll`] it until granted, or
    /// [`Semaphore::cancel`] it.
    Queued(Ticket),
}

/// Where a ticket stands.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TicketState {
    /// Still waiting.
    Waiting = 0,
    /// Handed a permit: the waiter holds it now and must release it. Returned
    /// once: this poll acknowledged the grant, the ticket is finished and reads
    /// `Unknown` from now on.
    Granted = 1,
    /// Cancelled by its waiter (until its slot is reused).
    Cancelled = 2,
    /// Not a live ticket of this semaphore: never issued by it, already
    /// acknowledged as granted, or cancelled and its slot reused.
    Unknown = 3,
}

/// How a cancellation ended.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CancelOutcome {
    /// The waiter left the queue without a permit.
    Cancelled = 0,
    /// A permit had been handed to it (and not yet polled); it was passed on
    /// to the next waiter or back to the pool.
    PassedOn = 1,
    /// Not a live ticket of this semaphore (see [`TicketState::Unknown`]).
    Unknown = 2,
}

/// Occupancy at one instant.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct SemaphoreSnapshot {
    /// Permits held (granted waiters included).
    pub active: u32,
    /// Live waiters: admitted to the queue and not yet gone. A granted waiter
    /// counts here (and in `active`) until its poll acknowledges the grant, so
    /// that its slot is not reused before it has learned of the grant.
    pub queued: u32,
}
