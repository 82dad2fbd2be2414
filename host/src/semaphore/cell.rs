//! The core semaphore next to its holder table ([`crate::holders`]): the protocol
//! that makes every permit and ticket a C caller holds single-use, and lets
//! reclaim give back whatever a process killed at any instruction held
//! (DESIGN §8, "Death at any instruction").
//!
//! Every step is one atomic operation, and every slot taken names, in the same
//! word, the process making its step. Order of the steps:
//! * acquire: a slot is claimed first (`acquiring`, or `enqueuing` when the call
//!   may queue), then the core admits, queues or refuses, then the slot becomes
//!   `held`, `waiting` (its core ticket stored first) or free again. With no free
//!   slot the core is not asked at all.
//! * release: `held → releasing` (won once), the core's release, then free.
//! * cancel: `waiting → cancelling` (won once), the core's cancel, then free.
//! * poll: the core's peek says granted, then `waiting → granting` (won once),
//!   the core's acknowledgement, then `held`. A racing cancel (or reclaim) that
//!   wins the slot CAS instead makes the core cancel, which acknowledges the
//!   grant and passes the permit on; this poll then reads the ticket as gone.
//!
//! So the core counts no permit or ticket that no slot accounts for, and
//! `slots in use ≤ active + queued + calls in progress`: a table of `N ≥
//! max_concurrent + Q` slots has a free slot for every call but those that
//! overlap many others; a claim scans the table up to three times before it
//! gives up (`PermitsExhausted`, with nothing asked of the core).
//!
//! # Reclaim
//! A slot whose word names a process that is gone is taken over by the
//! reclaimer, in its own name, with a CAS from the exact word read (so a slot
//! moved meanwhile is left alone), and its step finished or undone:
//! * `held`: the permit is released on the core; `waiting` and `cancelling`:
//!   the ticket is cancelled on the core (a cancel already made finds the
//!   ticket finished and does nothing); `granting`: the grant is acknowledged on
//!   the core if it was not, and the permit released.
//! * `acquiring`, `enqueuing` and `releasing`: whether the core made its step
//!   is not in the table. They are settled by count, in a moment when nothing
//!   moves: the core's state word read twice around a scan of the table, the
//!   same both times (the word never comes back to a value it held, see
//!   [`Semaphore::stamped_snapshot`]), nobody queued, and no live process in a
//!   step. Then `active` = the held slots + those of the unsettled ones whose core
//!   step counts a permit, and so many of them (any; the first ones) are
//!   released, the others freed. A moment with a waiter queued or a live step
//!   in progress defers them to a later reclaim.
//!
//! A death inside one of the core's own calls that takes more than one atomic
//! step (the table sees the call, not its steps) leaves what only the core's
//! counts show:
//! * inside the enqueue of an acquire that may queue, between taking a place in
//!   the queue (`queued + 1`) and settling in it: a place, or a queue slot, that
//!   no ticket names;
//! * inside the acknowledgement of a grant (a poll, or a cancel or reclaim that
//!   meets a grant), or a cancel, between freeing the queue slot and `queued −
//!   1`: `queued` one too high;
//! * inside a cancel that meets a grant, between that acknowledgement and
//!   passing the permit on: one permit that nobody holds.
//!
//! These are settled by count too, in a quiet moment with no live process
//! queued or in a step: every queue slot still in use is then a dead
//! process's, and is cancelled on the core (a grant it met is passed on); once
//! no slot is in use, every place `queued` counts is a dead process's, and all
//! are forgotten by one CAS from the state word read around the scan; then
//! `active` − held permits are given back, the dead steps' first.

use core::mem::MaybeUninit;

use seawall_core::{
    CancelOutcome, ConfigError, Corrupt, Field, Priority, Problem, RawAdmission, RejectReason,
    Semaphore, SemaphoreConfig, SemaphoreRejected, SemaphoreSnapshot, Ticket as CoreTicket,
    TicketState,
};

use super::totals::{BulkheadTotals, GaveUp, SharedTotals};
use crate::heal::HealGate;
use crate::holders::{HolderError, HolderTable, Slot, SlotState, Step};
use crate::owner::kill_point;
use crate::sync::AtomicU32;

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
    /// Bumped by every step that can hand a permit to a waiter; waiters of any
    /// process sleep on it (`super::wake`). Any value is valid.
    #[cfg_attr(loom, allow(dead_code, reason = "no futex under loom"))]
    released: AtomicU32,
    /// Threads (of any process) that may sleep on `released`: a release wakes
    /// only when there are some. A sleeper killed leaves it too high, which
    /// costs its releases a wake-up call each and nothing else.
    #[cfg_attr(loom, allow(dead_code, reason = "no futex under loom"))]
    sleepers: AtomicU32,
    /// When this semaphore was last looked at for dead holders.
    heal: HealGate,
    /// Lifetime figures of every process sharing it.
    totals: SharedTotals,
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
        // SAFETY: as above; written once, never read before.
        unsafe { (&raw mut (*p).released).write(AtomicU32::new(0)) };
        // SAFETY: as above.
        unsafe { (&raw mut (*p).sleepers).write(AtomicU32::new(0)) };
        // SAFETY: as above.
        unsafe { (&raw mut (*p).heal).write(HealGate::new(crate::heal::this_pid_namespace())) };
        // SAFETY: as above.
        unsafe { (&raw mut (*p).totals).write(SharedTotals::new()) };
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

    /// The word waiters sleep on and releases bump (see `super::wake`).
    #[cfg(not(loom))]
    pub(crate) fn released(&self) -> &AtomicU32 {
        &self.released
    }

    /// The count of threads that may sleep on [`released`](Self::released).
    #[cfg(not(loom))]
    pub(crate) fn sleepers(&self) -> &AtomicU32 {
        &self.sleepers
    }

    /// When this semaphore was last looked at for dead holders.
    #[must_use]
    pub fn heal_gate(&self) -> &HealGate {
        &self.heal
    }

    /// Lifetime figures of every process sharing this semaphore (a scan of
    /// the holder table; see [`super::totals`]).
    #[must_use]
    pub fn totals(&self) -> BulkheadTotals {
        self.totals.read(self.holders.claims_ended())
    }

    /// A waiter of any process left the queue without a permit, for `why`:
    /// counted in [`totals`](Self::totals).
    pub fn gave_up(&self, why: GaveUp) {
        self.totals.gave_up(why);
    }

    /// Permits and tickets callers hold now (a scan of the holder table).
    #[must_use]
    pub fn outstanding(&self) -> (u64, u64) {
        self.holders.outstanding()
    }

    /// Permits and tickets held by processes that `dead` says are gone (a scan).
    pub fn held_by_dead(&self, dead: impl FnMut(u32) -> bool) -> (u64, u64) {
        self.holders.held_by(dead)
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
        self.try_acquire_healing_checked(p, &|| false)
    }

    /// [`try_acquire_checked`](Self::try_acquire_checked) where a caller the
    /// core refuses first calls `heal` (DESIGN §8, self-healing: it gives back
    /// what dead holders hold, `true` when it gave something) and, if it gave
    /// something, asks the core again with the same claim, so that a call is
    /// counted once, by its final answer.
    pub fn try_acquire_healing_checked(
        &self,
        p: Priority,
        heal: &dyn Fn() -> bool,
    ) -> Result<Result<Permit, AcquireError>, Corrupt> {
        #[cfg(seawall_mutant = "holder_claim_after_core")]
        let admission = {
            // Mutant: the core admits before any slot names the caller.
            let a = self.sem.acquire_raw_checked(p, false);
            kill_point!(Ok(Err(AcquireError::PermitsExhausted)));
            a
        };
        let Some(claim) = self.claim(false, heal) else {
            return Ok(Err(AcquireError::PermitsExhausted));
        };
        kill_point!(Ok(Err(AcquireError::PermitsExhausted)));
        #[cfg(not(seawall_mutant = "holder_claim_after_core"))]
        let admission = self.sem.acquire_raw_checked(p, false);
        kill_point!(Ok(Err(AcquireError::PermitsExhausted)));
        let admission = match admission {
            Ok(Err(_)) if heal() => self.sem.acquire_raw_checked(p, false),
            first => first,
        };
        let Ok(admission) = admission else {
            self.refuse(claim, RejectReason::Full);
            return Err(Corrupt);
        };
        Ok(match admission {
            Ok(RawAdmission::Admitted) => Ok(self.admitted(claim)),
            // `wait = false` never queues; were it to, leaving is the answer.
            Ok(RawAdmission::Queued(t)) => {
                let left = self.sem.cancel_checked(t);
                self.refuse(claim, RejectReason::Full);
                left?;
                Err(AcquireError::Rejected(self.full()))
            }
            Err(r) => {
                self.refuse(claim, r.reason);
                Err(AcquireError::Rejected(r))
            }
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
        self.acquire_or_enqueue_healing_checked(p, &|| false)
    }

    /// [`acquire_or_enqueue_checked`](Self::acquire_or_enqueue_checked) with
    /// `heal` called first when the core refuses, as
    /// [`try_acquire_healing_checked`](Self::try_acquire_healing_checked) does.
    pub fn acquire_or_enqueue_healing_checked(
        &self,
        p: Priority,
        heal: &dyn Fn() -> bool,
    ) -> Result<Result<Acquired, AcquireError>, Corrupt> {
        let Some(claim) = self.claim(true, heal) else {
            return Ok(Err(AcquireError::PermitsExhausted));
        };
        kill_point!(Ok(Err(AcquireError::PermitsExhausted)));
        let admission = self.sem.acquire_raw_checked(p, true);
        kill_point!(Ok(Err(AcquireError::PermitsExhausted)));
        let admission = match admission {
            Ok(Err(_)) if heal() => self.sem.acquire_raw_checked(p, true),
            first => first,
        };
        let Ok(admission) = admission else {
            self.refuse(claim, RejectReason::Full);
            return Err(Corrupt);
        };
        Ok(match admission {
            Ok(RawAdmission::Admitted) => Ok(Acquired::Admitted(self.admitted(claim))),
            Ok(RawAdmission::Queued(t)) => {
                // Counted before the slot leaves its step (see `super::totals`).
                self.totals.queued();
                let step = self.holders.queued(claim, t.id);
                Ok(Acquired::Queued(Ticket {
                    id: self.holders.id(step),
                }))
            }
            Err(r) => {
                self.refuse(claim, r.reason);
                Err(AcquireError::Rejected(r))
            }
        })
    }

    /// A slot for an acquire (before the core is asked), three scans at most,
    /// and three more after `heal` gave something back; `None` (a refusal,
    /// counted) when every slot is taken.
    fn claim(&self, enqueue: bool, heal: &dyn Fn() -> bool) -> Option<Step> {
        let scan = || (0..3).find_map(|_| self.holders.claim(enqueue));
        let claim = scan().or_else(|| if heal() { scan() } else { None });
        if claim.is_none() {
            self.totals.refused_unclaimed();
        }
        claim
    }

    /// The claim of `claim` ended refused for `reason`: counted, then its slot
    /// freed (in that order: see `super::totals`).
    fn refuse(&self, claim: Step, reason: RejectReason) {
        self.totals.refused(reason);
        self.holders.finish(claim);
    }

    fn admitted(&self, claim: Step) -> Permit {
        let step = self.holders.admitted(claim);
        Permit {
            id: self.holders.id(step),
        }
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
        let step = match self.holders.release(p.id) {
            Ok(step) => step,
            Err(e) => return Ok(Err(e)),
        };
        kill_point!(Ok(Ok(())));
        self.release_core(step)?;
        Ok(Ok(()))
    }

    /// The core's half of a release whose slot step is `step`: the slot stood
    /// for one permit the core counts, and exactly this one goes.
    fn release_core(&self, step: Step) -> Result<(), Corrupt> {
        #[cfg(seawall_mutant = "holder_release_frees_first")]
        {
            // Mutant: the slot is freed before the core gives the permit back.
            self.holders.finish(step);
            kill_point!(Ok(()));
            return self.sem.release_checked().map(drop);
        }
        #[cfg(not(seawall_mutant = "holder_release_frees_first"))]
        {
            let released = self.sem.release_checked().map(drop);
            kill_point!(Ok(()));
            self.holders.finish(step);
            released
        }
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
                let step = match self.holders.grant(t.id, core) {
                    Ok(step) => step,
                    Err(e) => return Ok(Err(e)),
                };
                kill_point!(Ok(Ok(Polled::Granted(Permit { id: t.id }))));
                // The slot CAS made this the only call that takes the grant.
                let taken = self.sem.poll_checked(ticket);
                kill_point!(Ok(Ok(Polled::Granted(Permit { id: t.id }))));
                self.totals.granted();
                let _ = self.holders.granted(step);
                if taken? != TicketState::Granted {
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
        let step = match self.holders.cancel(t.id, core) {
            Ok(step) => step,
            Err(e) => return Ok(Err(e)),
        };
        kill_point!(Ok(Ok(Cancelled::Cancelled)));
        let how = self.cancel_core(core);
        kill_point!(how.map(Ok));
        self.holders.finish(step);
        Ok(Ok(how?))
    }

    fn cancel_core(&self, core: u32) -> Result<Cancelled, Corrupt> {
        Ok(match self.sem.cancel_checked(CoreTicket { id: core })? {
            CancelOutcome::PassedOn => Cancelled::PassedOn,
            // `Unknown`: a ticket finished already (a reclaim redoing a dead
            // process's cancel); the slot CAS made this the only cancel of a
            // live one.
            CancelOutcome::Cancelled | CancelOutcome::Unknown => Cancelled::Cancelled,
        })
    }

    /// Give back what processes that `alive` says are gone held: release their
    /// permits, cancel their tickets, finish or undo their steps in progress
    /// (see the module docs); `(permits, tickets)` reclaimed.
    pub fn reclaim(&self, alive: impl Fn(u32) -> bool) -> (u64, u64) {
        let (mut permits, mut tickets) = (0, 0);
        let mut unsettled = false;
        let mut held = 0u32;
        for (idx, w) in self.holders.words() {
            if w.state() == SlotState::Held {
                held += 1;
            }
            if w.state() == SlotState::Free || alive(w.owner()) {
                continue;
            }
            match w.state() {
                SlotState::Free => {}
                SlotState::Held => {
                    if let Some(step) = self.holders.take_over(idx, w, SlotState::Releasing) {
                        kill_point!((permits, tickets));
                        // A corrupted core counts the permit as given back.
                        let _ = self.release_core(step);
                        permits += 1;
                    }
                }
                SlotState::Waiting | SlotState::Cancelling => {
                    if let Some(step) = self.holders.take_over(idx, w, SlotState::Cancelling) {
                        kill_point!((permits, tickets));
                        let _ = self.cancel_core(self.holders.ticket_of(step));
                        kill_point!((permits, tickets));
                        self.holders.finish(step);
                        tickets += 1;
                    }
                }
                SlotState::Granting => {
                    if let Some(step) = self.holders.take_over(idx, w, SlotState::Granting) {
                        kill_point!((permits, tickets));
                        // Acknowledged already or now: the permit is ours to give back.
                        let _ = self.sem.poll(CoreTicket {
                            id: self.holders.ticket_of(step),
                        });
                        kill_point!((permits, tickets));
                        let step = self.holders.advance(step, SlotState::Releasing);
                        kill_point!((permits, tickets));
                        // A corrupted core counts the permit as given back.
                        let _ = self.release_core(step);
                        permits += 1;
                    }
                }
                SlotState::Acquiring | SlotState::Enqueuing | SlotState::Releasing => {
                    unsettled = true;
                }
            }
        }
        // Places and permits a death inside the core left show only in its
        // counts: more queued or active than the table holds.
        let counts = self.sem.snapshot();
        if unsettled || counts.queued != 0 || counts.active > held {
            permits += self.settle_unsettled(&alive);
        }
        (permits, tickets)
    }

    /// Settle the dead processes' steps whose core half the table does not show,
    /// and what deaths inside the core's own calls left, by count, in moments
    /// when nothing moves (module docs); permits given back.
    fn settle_unsettled(&self, alive: &impl Fn(u32) -> bool) -> u64 {
        // A few tries: live steps end within instructions; a moment that never
        // comes (a queue that stays busy) leaves them to the next reclaim. The
        // queue is emptied of orphans first (its slots, then its places), then
        // the permits are counted, each in a quiet moment of its own.
        let mut given = 0;
        for _ in 0..RECOUNT_TRIES + ORPHAN_STEPS {
            let Some(quiet) = self.quiet_moment(alive) else {
                continue;
            };
            if quiet.counts.queued == 0 {
                if let Some(n) = self.settle_permits(quiet) {
                    return given + n;
                }
            } else if quiet.slots_in_use {
                #[cfg(not(seawall_mutant = "holder_orphan_tickets_kept"))]
                {
                    given += self.cancel_orphan_tickets();
                }
            } else {
                #[cfg(not(seawall_mutant = "holder_orphan_places_kept"))]
                let _ = self.sem.forget_orphan_places(quiet.stamp);
            }
        }
        given
    }

    /// The table and the core's counts in a moment when nothing moves: the
    /// state word the same around a scan of the table and of the core's queue
    /// slots, no live process queued or in a step. `None` when this moment is
    /// not quiet.
    fn quiet_moment(&self, alive: &impl Fn(u32) -> bool) -> Option<Quiet> {
        let (counts, stamp) = self.sem.stamped_snapshot();
        // Counts no honest semaphore holds are an overwritten region's: they
        // are reported as such, never "repaired" by giving back what nobody
        // holds.
        let config = self.sem.config();
        if counts.active > config.max_concurrent || counts.queued > config.max_queue {
            return None;
        }
        let mut held = 0u32;
        let mut dead: Vec<(usize, Slot)> = Vec::new();
        // Invariant: with the state word the same around the scan, no core step
        // that counts happened during it, and a slot's part in `active` changes
        // only at its core step; so every slot read counts as it did at either
        // read, and `active` = held + the part of the dead unsettled steps +
        // the permits deaths inside the core left. With no live ticket or step,
        // every waiter `queued` counts is a dead process's.
        for (idx, w) in self.holders.words() {
            match w.state() {
                SlotState::Free => {}
                SlotState::Held => held += 1,
                SlotState::Acquiring | SlotState::Enqueuing | SlotState::Releasing
                    if !alive(w.owner()) =>
                {
                    dead.push((idx, w));
                }
                // Mutant: a live step is taken for a moment as quiet as any.
                #[cfg(seawall_mutant = "holder_recount_live_steps")]
                SlotState::Acquiring | SlotState::Releasing => {}
                // A live step, or a ticket: the moment is not quiet.
                _ => return None,
            }
        }
        let in_use = self.sem.tickets_in_use().count();
        if self.sem.stamped_snapshot().1 != stamp {
            return None;
        }
        // Every slot in use is a waiter `queued` counts: more slots than that
        // is an overwritten region, reported by the checked calls, not
        // "repaired".
        if in_use > counts.queued as usize {
            return None;
        }
        let slots_in_use = in_use > 0;
        Some(Quiet {
            counts,
            stamp,
            held,
            dead,
            slots_in_use,
        })
    }

    /// Cancel on the core every ticket in use: called in a quiet moment, when
    /// none is a live process's (a slot is in use until its ticket is cancelled
    /// or acknowledged, which only its dead holder would have done). A grant
    /// met is passed on. Permits given back that way.
    fn cancel_orphan_tickets(&self) -> u64 {
        let mut passed = 0;
        for t in self.sem.tickets_in_use() {
            if self.sem.cancel_checked(t) == Ok(CancelOutcome::PassedOn) {
                passed += 1;
            }
        }
        passed
    }

    /// Settle the permits of a quiet moment with nobody queued: `active` −
    /// held are owed back; the dead unsettled steps are given back first (any;
    /// the first ones) and the rest freed, then what deaths inside the core's
    /// own calls left is given back to the core directly. `None` when `active`
    /// is below what the table holds (the moment was not what it seemed).
    fn settle_permits(&self, quiet: Quiet) -> Option<u64> {
        let owed = quiet.counts.active.checked_sub(quiet.held)? as usize;
        let mut given = 0;
        let from_slots = owed.min(quiet.dead.len());
        for (k, (idx, w)) in quiet.dead.into_iter().enumerate() {
            if k < from_slots {
                if let Some(step) = self.holders.take_over(idx, w, SlotState::Releasing) {
                    kill_point!(Some(given));
                    let _ = self.release_core(step);
                    given += 1;
                }
            } else {
                let _ = self.holders.take_over(idx, w, SlotState::Free);
            }
        }
        for _ in from_slots..owed {
            if self.sem.release_checked().is_err() {
                break;
            }
            given += 1;
        }
        Some(given)
    }

    /// [`reclaim`](Self::reclaim) for processes that no longer exist (on Linux,
    /// also those exited and not reaped yet: zombies).
    #[cfg(not(loom))]
    pub fn reclaim_dead(&self) -> (u64, u64) {
        self.reclaim(crate::owner::pid::alive_memo())
    }
}

/// What a quiet moment showed (see `quiet_moment`).
struct Quiet {
    counts: seawall_core::SemaphoreSnapshot,
    /// The state word read around the scan.
    stamp: u64,
    held: u32,
    /// Dead processes' steps whose core half the table does not show.
    dead: Vec<(usize, Slot)>,
    /// Some core queue slot was in use.
    slots_in_use: bool,
}

/// Quiet moments a reclaim spends on the queue's orphans (their tickets, then
/// their places) before it counts the permits.
const ORPHAN_STEPS: u32 = 2;

/// Quiet moments a reclaim looks for before it leaves unsettled steps to the next.
const RECOUNT_TRIES: u32 = if cfg!(loom) { 2 } else { 8 };
