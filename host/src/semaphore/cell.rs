//! The core semaphore next to its holder table ([`crate::holders`]): the protocol
//! that makes every permit and ticket a C caller holds single-use.
//!
//! Order of the two steps, and why no permit is ever counted twice:
//! * acquire: the core admits (or queues) first, then a slot is claimed; with no
//!   free slot the admission is undone on the core (a release, or a cancel that
//!   passes on a grant made in the same instant).
//! * release / cancel: the slot's CAS first, then the core's release / cancel,
//!   made only by the CAS winner.
//! * poll: the core's peek says granted, then the slot's CAS `waiting → held`
//!   takes the grant, and only its winner acknowledges the grant on the core
//!   (which frees the core's wait slot). A racing cancel (or reclaim) that wins
//!   the slot CAS instead makes the core cancel, which acknowledges the grant
//!   and passes the permit on; this poll then reads the ticket as gone.
//!
//! So a slot in use always stands for one permit or ticket the core counts, and
//! `slots in use ≤ active + queued ≤ max_concurrent + max_queue ≤ N`: a table of
//! `N ≥ max_concurrent + Q` slots always has a free slot for a caller the core
//! admitted or queued. A claim scans the table from a per-thread cursor, and
//! slots freed and taken by other threads behind the scan could in principle
//! make it miss every free one; it scans up to three times, and only then
//! (`PermitsExhausted`) undoes the admission. A process killed between the
//! core step and the slot step (a few instructions) leaves one permit or ticket
//! that no slot names, and no reclaim can find. One killed between a poll's
//! `waiting → held` and the core's acknowledgement leaves a held slot (reclaim
//! releases its permit) and a core wait slot that stays granted, counted in
//! `queued`, for good: no permit is lost, the queue has one place less.

use core::mem::MaybeUninit;

use seawall_core::{
    CancelOutcome, ConfigError, Corrupt, Field, Priority, Problem, RawAdmission, Semaphore,
    SemaphoreConfig, SemaphoreRejected, SemaphoreSnapshot, Ticket as CoreTicket, TicketState,
};

use crate::holders::{HolderError, HolderTable};

/// A held permit: give it back exactly once with [`SemaphoreCell::release`].
/// Plain data: any thread, or any process sharing the semaphore, may release it.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Permit {
    /// Slot and generation in the holder table (opaque).
    pub id: u64,
}

/// A place in the wait queue: poll it until granted, or cancel it, exactly once.
/// When granted it turns into the [`Permit`] with the same id.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ticket {
    /// Slot and generation in the holder table (opaque).
    pub id: u64,
}

/// What an acquire that may wait got.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Acquired {
    /// A permit, now.
    Admitted(Permit),
    /// A place in the queue.
    Queued(Ticket),
}

/// Why an acquire got neither a permit nor a ticket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AcquireError {
    /// Shed by priority, or full (no permit, no room to wait), with the
    /// occupancy that refused it.
    Rejected(SemaphoreRejected),
    /// Three scans of the holder table found no free slot (there always is one,
    /// see the module docs; only scans racing many others could miss it); the
    /// admission was undone.
    PermitsExhausted,
}

/// Where a ticket stands after a poll.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Polled {
    /// Still waiting.
    Waiting,
    /// Granted: the caller holds this permit now (the ticket's id) and must
    /// release it.
    Granted(Permit),
}

/// How a cancel ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cancelled {
    /// The waiter left the queue without a permit.
    Cancelled,
    /// A permit had reached the ticket in the same instant; it went on to the
    /// next waiter or back to the pool.
    PassedOn,
}

/// A core [`Semaphore`] with `Q` queue slots and its table of `N` holders,
/// `#[repr(C)]` for sharing.
#[repr(C)]
pub struct SemaphoreCell<const Q: usize, const N: usize> {
    sem: Semaphore<Q>,
    holders: HolderTable<N>,
}

impl<const Q: usize, const N: usize> SemaphoreCell<Q, N> {
    /// Largest `max_concurrent`: every permit and ticket must fit the table.
    pub const MAX_CONCURRENT: u32 = (N - Q) as u32;

    /// Build in place with holder `salt`, or name the invalid field.
    pub fn init(
        slot: &mut MaybeUninit<Self>,
        config: &SemaphoreConfig,
        salt: u64,
    ) -> Result<(), ConfigError> {
        let sem = Semaphore::<Q>::new(*config)?;
        if config.max_concurrent > Self::MAX_CONCURRENT {
            return Err(ConfigError {
                field: Field::MaxConcurrent,
                problem: Problem::OutOfRange {
                    min: 1,
                    max: u64::from(Self::MAX_CONCURRENT),
                },
            });
        }
        let p = slot.as_mut_ptr();
        // SAFETY: `p` comes from `&mut MaybeUninit<Self>`: writable and aligned;
        // each field is written once through a raw pointer, never read before.
        unsafe { (&raw mut (*p).sem).write(sem) };
        // SAFETY: as above; `MaybeUninit<HolderTable>` has the table's layout.
        let holders =
            unsafe { &mut *(&raw mut (*p).holders).cast::<MaybeUninit<HolderTable<N>>>() };
        HolderTable::init(holders, salt);
        Ok(())
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> SemaphoreConfig {
        *self.sem.config()
    }

    /// The limit of priority `p`: `max(1, ⌊max_concurrent · share⌋)`.
    #[must_use]
    pub fn limit(&self, p: Priority) -> u32 {
        self.sem.limit(p)
    }

    /// Permits held and waiters queued now (one atomic load).
    #[must_use]
    pub fn snapshot(&self) -> SemaphoreSnapshot {
        self.sem.snapshot()
    }

    /// Permits and tickets callers hold now (a scan of the holder table).
    #[must_use]
    pub fn outstanding(&self) -> (u64, u64) {
        self.holders.outstanding()
    }

    /// A permit now for priority `p`, or the rejection; never waits. A
    /// corrupted shared region refuses it as full (see
    /// [`try_acquire_checked`](Self::try_acquire_checked)).
    #[inline]
    pub fn try_acquire(&self, p: Priority) -> Result<Permit, AcquireError> {
        self.try_acquire_checked(p)
            .unwrap_or_else(|Corrupt| Err(AcquireError::Rejected(self.full())))
    }

    /// [`try_acquire`](Self::try_acquire), telling a corrupted shared region
    /// apart: [`Corrupt`] when the core semaphore's words hold what seawall
    /// never writes or kept a retry loop going past its bound (what the call
    /// did to the core is unspecified then; it holds no holder slot).
    #[inline]
    pub fn try_acquire_checked(
        &self,
        p: Priority,
    ) -> Result<Result<Permit, AcquireError>, Corrupt> {
        Ok(match self.sem.acquire_raw_checked(p, false)? {
            Ok(RawAdmission::Admitted) => self.hold()?,
            // `wait = false` never queues; were it to, leaving is the answer.
            Ok(RawAdmission::Queued(t)) => {
                self.sem.cancel_checked(t)?;
                Err(AcquireError::Rejected(self.full()))
            }
            Err(r) => Err(AcquireError::Rejected(r)),
        })
    }

    /// A permit now, or a place in the queue if there is room, for priority `p`.
    /// A corrupted shared region refuses it as full (see
    /// [`acquire_or_enqueue_checked`](Self::acquire_or_enqueue_checked)).
    #[inline]
    pub fn acquire_or_enqueue(&self, p: Priority) -> Result<Acquired, AcquireError> {
        self.acquire_or_enqueue_checked(p)
            .unwrap_or_else(|Corrupt| Err(AcquireError::Rejected(self.full())))
    }

    /// [`acquire_or_enqueue`](Self::acquire_or_enqueue), telling a corrupted
    /// shared region apart: [`Corrupt`] as for
    /// [`try_acquire_checked`](Self::try_acquire_checked).
    #[inline]
    pub fn acquire_or_enqueue_checked(
        &self,
        p: Priority,
    ) -> Result<Result<Acquired, AcquireError>, Corrupt> {
        Ok(match self.sem.acquire_raw_checked(p, true)? {
            Ok(RawAdmission::Admitted) => self.hold()?.map(Acquired::Admitted),
            Ok(RawAdmission::Queued(t)) => {
                let Some(id) = (0..3).find_map(|_| self.holders.claim_waiting(t.id)) else {
                    // Leave the queue (a permit granted meanwhile is passed on).
                    self.sem.cancel_checked(t)?;
                    return Ok(Err(AcquireError::PermitsExhausted));
                };
                Ok(Acquired::Queued(Ticket { id }))
            }
            Err(r) => Err(AcquireError::Rejected(r)),
        })
    }

    fn hold(&self) -> Result<Result<Permit, AcquireError>, Corrupt> {
        let Some(id) = (0..3).find_map(|_| self.holders.claim_held()) else {
            self.sem.release_checked()?;
            return Ok(Err(AcquireError::PermitsExhausted));
        };
        Ok(Ok(Permit { id }))
    }

    fn full(&self) -> SemaphoreRejected {
        let s = self.sem.snapshot();
        SemaphoreRejected {
            reason: seawall_core::RejectReason::Full,
            active: s.active,
            queued: s.queued,
        }
    }

    /// Give permit `p` back once: to the oldest waiter, or to the pool. In a
    /// corrupted shared region the permit counts as given back (see
    /// [`release_checked`](Self::release_checked)).
    pub fn release(&self, p: Permit) -> Result<(), HolderError> {
        self.release_checked(p).unwrap_or(Ok(()))
    }

    /// [`release`](Self::release), telling a corrupted shared region apart:
    /// [`Corrupt`] when the core semaphore's words kept its release going past
    /// its bound. The permit's holder slot is given back by then; where the
    /// core's permit went is unspecified.
    pub fn release_checked(&self, p: Permit) -> Result<Result<(), HolderError>, Corrupt> {
        if let Err(e) = self.holders.release(p.id) {
            return Ok(Err(e));
        }
        // The slot stood for one permit the core counts: exactly this one goes.
        self.sem.release_checked()?;
        Ok(Ok(()))
    }

    /// Where ticket `t` stands; once granted, the caller holds the permit with the
    /// same id and the ticket is used up. In a corrupted shared region the
    /// ticket reads as gone ([`HolderError::UnknownTicket`], see
    /// [`poll_checked`](Self::poll_checked)).
    pub fn poll(&self, t: Ticket) -> Result<Polled, HolderError> {
        self.poll_checked(t)
            .unwrap_or(Err(HolderError::UnknownTicket))
    }

    /// [`poll`](Self::poll), telling a corrupted shared region apart:
    /// [`Corrupt`] when the core's acknowledgement of a grant ran past its bound
    /// or found the grant gone although the holder slot's CAS made this the
    /// only call to take it (both only when others wrote the region). The ticket
    /// is used up then; whether its permit is held is unspecified.
    pub fn poll_checked(&self, t: Ticket) -> Result<Result<Polled, HolderError>, Corrupt> {
        let core = match self.holders.waiting_ticket(t.id) {
            Ok(core) => core,
            Err(e) => return Ok(Err(e)),
        };
        let ticket = CoreTicket { id: core };
        Ok(match self.sem.peek(ticket) {
            TicketState::Waiting => Ok(Polled::Waiting),
            TicketState::Granted => {
                if let Err(e) = self.holders.grant(t.id, core) {
                    return Ok(Err(e));
                }
                // The slot CAS made this the only call that takes the grant.
                if self.sem.poll_checked(ticket)? != TicketState::Granted {
                    return Err(Corrupt);
                }
                Ok(Polled::Granted(Permit { id: t.id }))
            }
            // Cancelled by a racing cancel of this ticket after our read.
            TicketState::Cancelled | TicketState::Unknown => Err(HolderError::UnknownTicket),
        })
    }

    /// Where ticket `t` stands, taking nothing: a granted ticket stays granted
    /// until its [`poll`](Self::poll) (or a cancel passes the permit on). For a
    /// waker that must not take a grant meant for another thread.
    #[must_use]
    pub fn peek(&self, t: Ticket) -> TicketState {
        match self.holders.waiting_ticket(t.id) {
            Ok(core) => self.sem.peek(CoreTicket { id: core }),
            Err(_) => TicketState::Unknown,
        }
    }

    /// Ticket `t` gives up and leaves the queue at once; a permit granted to it in
    /// the same instant is passed on. In a corrupted shared region the waiter
    /// counts as gone (see [`cancel_checked`](Self::cancel_checked)).
    pub fn cancel(&self, t: Ticket) -> Result<Cancelled, HolderError> {
        self.cancel_checked(t).unwrap_or(Ok(Cancelled::Cancelled))
    }

    /// [`cancel`](Self::cancel), telling a corrupted shared region apart:
    /// [`Corrupt`] when the core's cancel ran past its bound. The ticket is
    /// used up and nothing is held then.
    pub fn cancel_checked(&self, t: Ticket) -> Result<Result<Cancelled, HolderError>, Corrupt> {
        let core = match self.holders.waiting_ticket(t.id) {
            Ok(core) => core,
            Err(e) => return Ok(Err(e)),
        };
        if let Err(e) = self.holders.cancel(t.id, core) {
            return Ok(Err(e));
        }
        Ok(Ok(
            match self.sem.cancel_checked(CoreTicket { id: core })? {
                CancelOutcome::PassedOn => Cancelled::PassedOn,
                CancelOutcome::Cancelled | CancelOutcome::Unknown => Cancelled::Cancelled,
            },
        ))
    }

    fn cancel_core(&self, core: u32) -> Cancelled {
        match self.sem.cancel(CoreTicket { id: core }) {
            CancelOutcome::PassedOn => Cancelled::PassedOn,
            // `Unknown` would be a ticket the core never queued: the slot CAS
            // above made this the only cancel of a ticket the core issued.
            CancelOutcome::Cancelled | CancelOutcome::Unknown => Cancelled::Cancelled,
        }
    }

    /// Release the permits and cancel the tickets of processes that `alive` says
    /// are gone; `(permits, tickets)` reclaimed.
    pub fn reclaim(&self, alive: impl Fn(u32) -> bool) -> (u64, u64) {
        self.holders.reclaim(
            alive,
            || {
                self.sem.release();
            },
            |t| {
                let _ = self.cancel_core(t);
            },
        )
    }

    /// [`reclaim`](Self::reclaim) for processes that no longer exist (on Linux,
    /// also those exited and not reaped yet: zombies).
    #[cfg(not(loom))]
    pub fn reclaim_dead(&self) -> (u64, u64) {
        self.reclaim(crate::owner::pid::alive)
    }
}
