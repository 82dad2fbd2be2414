//! Permit semaphore (bulkhead) with FIFO hand-off and priority load shedding
//! (DESIGN §5).
//!
//! # Protocol
//! One 128-bit word, `state`, holds `active` (permits held), `queued` (live
//! waiters), and the `head` and `tail` of a ring of tickets. Each of the `Q` ring
//! slots is a 64-bit word `ticket | status << 32` with status `EMPTY`, `WAITING`,
//! `GRANTED` or `CANCELLED`; ticket `t` lives in slot `t mod Q`. Nothing is a
//! pointer, so the semaphore can live in memory shared by processes.
//!
//! * **Admit** (one CAS of `state`): `active < limit(priority)` and `queued = 0`.
//!   A priority whose limit is below `max_concurrent` is shed at once when
//!   `active ≥ limit`.
//! * **Wait** (one CAS of `state`, then one of the slot): take ticket `tail`
//!   (`queued + 1`, bounded by `max_queue`, and `tail − head < Q` so a slot is
//!   never needed by two live tickets), then *install* `WAITING(t)` in its slot —
//!   unless a release already granted it.
//! * **Release**: with no ticket between `head` and `tail`, `active − 1`.
//!   Otherwise look at ticket `head`: `CANCELLED` is skipped (`head + 1`);
//!   `WAITING`, or not yet installed, is granted by a CAS of its slot to
//!   `GRANTED(t)` — the permit moves to that waiter, `active` is unchanged — and
//!   then `head + 1, queued − 1`. Anyone who finds `GRANTED` at `head` finishes
//!   that step for the releaser, so a preempted releaser never blocks others.
//! * **Cancel**: a CAS of its own slot from `WAITING(t)` to `CANCELLED(t)`, then
//!   `queued − 1`. If the CAS fails, a release granted the ticket in the same
//!   instant: the waiter now holds a permit and releases it at once, so it goes on
//!   to the next waiter or back to the pool — never lost.
//!
//! The slot CAS is where a grant and a cancellation race: exactly one wins.
//! Tickets are granted in ticket order (FIFO), whatever their priority.
//! A host runtime learns of its grant by polling its ticket ([`Semaphore::poll`]);
//! the `std` feature adds a blocking wait with timeout (`BlockingSemaphore`).

#[cfg(feature = "std")]
mod blocking;
mod config;
mod permit;

#[cfg(feature = "std")]
pub use blocking::{BlockingPermit, BlockingSemaphore, WaitError};
pub use config::{Priority, PriorityShares, SemaphoreConfig};
pub use permit::{Admission, SemaphorePermit, Waiter};

use crossbeam_utils::CachePadded;

use crate::error::{ConfigError, Field, Problem};
use crate::sync::{AtomicU64, AtomicU128, Ordering};

const EMPTY: u64 = 0;
const WAITING: u64 = 1;
const GRANTED: u64 = 2;
const CANCELLED: u64 = 3;

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
    /// Waiters queued when it was refused.
    pub queued: u32,
}

/// A place in the wait queue.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ticket {
    /// Sequence number; wraps after 2³² waiters.
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
    /// Handed a permit: the waiter holds it now and must release it.
    Granted = 1,
    /// Cancelled by its waiter.
    Cancelled = 2,
    /// Not a ticket this semaphore issued (or one already cancelled and reused).
    Unknown = 3,
}

/// How a cancellation ended.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CancelOutcome {
    /// The waiter left the queue without a permit.
    Cancelled = 0,
    /// A permit had been handed to it in the same instant; it was passed on to
    /// the next waiter or back to the pool.
    PassedOn = 1,
    /// Not a waiting ticket of this semaphore.
    Unknown = 2,
}

/// Occupancy at one instant.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct SemaphoreSnapshot {
    /// Permits held (granted waiters included).
    pub active: u32,
    /// Live waiters.
    pub queued: u32,
}

/// The state word, unpacked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Word {
    active: u32,
    queued: u32,
    head: u32,
    tail: u32,
}

impl Word {
    fn unpack(v: u128) -> Self {
        Self {
            active: v as u32,
            queued: (v >> 32) as u32,
            head: (v >> 64) as u32,
            tail: (v >> 96) as u32,
        }
    }

    fn pack(self) -> u128 {
        u128::from(self.active)
            | (u128::from(self.queued) << 32)
            | (u128::from(self.head) << 64)
            | (u128::from(self.tail) << 96)
    }

    fn outstanding(self) -> u32 {
        self.tail.wrapping_sub(self.head)
    }

    fn rejected(self, reason: RejectReason) -> Rejected {
        Rejected {
            reason,
            active: self.active,
            queued: self.queued,
        }
    }
}

const fn slot_word(ticket: u32, status: u64) -> u64 {
    ticket as u64 | (status << 32)
}

const fn slot_ticket(v: u64) -> u32 {
    v as u32
}

const fn slot_status(v: u64) -> u64 {
    v >> 32
}

/// Ticket `a` was issued before ticket `b` (serial-number arithmetic: tickets
/// less than 2³¹ apart compare correctly across the wrap).
const fn before(a: u32, b: u32) -> bool {
    let d = b.wrapping_sub(a);
    d != 0 && d < 0x8000_0000
}

/// A lock-free, allocation-free counting semaphore with a FIFO wait queue of up to
/// `Q` tickets and per-priority load shedding (DESIGN §5).
///
/// **Queue bound.** At most `max_queue` live waiters, and at most `Q` tickets
/// issued since the oldest ticket `head` has not yet passed. A cancelled waiter
/// leaves `queued` at once, but its ticket is passed only when it reaches the
/// front; so while an older waiter stays queued, waiters that arrive and cancel
/// behind it use up ring slots, and a caller may be refused (`Full`, with
/// `queued < max_queue`) once `Q` tickets are outstanding. Pick `Q` well above
/// `max_queue` (the default `Q` is 64) when waiters often give up out of order.
///
/// `size_of::<Semaphore<Q>>()` is 128 bytes for the state word's cache line plus
/// `8·Q` bytes of slots and 56 bytes of configuration and limits, rounded to the
/// 128-byte alignment: 768 bytes for `Semaphore<64>` on x86-64.
#[repr(C)]
pub struct Semaphore<const Q: usize = 64> {
    state: CachePadded<AtomicU128>,
    slots: [AtomicU64; Q],
    config: SemaphoreConfig,
    limits: [u32; 4],
}

impl<const Q: usize> Semaphore<Q> {
    /// A semaphore with every permit free, or the first invalid field
    /// (`max_queue` above `Q` included).
    pub fn new(config: SemaphoreConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        let ring = Q.min(1 << 31) as u64;
        ConfigError::check_range(Field::MaxQueue, u64::from(config.max_queue), 0, ring)?;
        if Q > 1 << 31 {
            return Err(ConfigError::new(
                Field::MaxQueue,
                Problem::OutOfRange { min: 0, max: ring },
            ));
        }
        Ok(Self {
            state: CachePadded::new(AtomicU128::new(0)),
            // Slot i starts as an empty slot of the ticket one lap before i, so
            // ticket i finds it "older" and installs over it.
            slots: core::array::from_fn(|i| {
                AtomicU64::new(slot_word((i as u32).wrapping_sub(Q as u32), EMPTY))
            }),
            config,
            limits: Priority::ALL.map(|p| config.limit(p)),
        })
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &SemaphoreConfig {
        &self.config
    }

    /// The limit of priority `p`: `max(1, ⌊max_concurrent · share⌋)`.
    #[must_use]
    pub fn limit(&self, p: Priority) -> u32 {
        self.limits[p as usize]
    }

    /// Permits held and waiters queued now.
    #[must_use]
    pub fn snapshot(&self) -> SemaphoreSnapshot {
        let w = self.load();
        SemaphoreSnapshot {
            active: w.active,
            queued: w.queued,
        }
    }

    /// Take a permit now if one is free for `p` and nobody waits; never waits.
    pub fn try_acquire(&self, p: Priority) -> Result<SemaphorePermit<'_, Q>, Rejected> {
        match self.acquire_raw(p, false)? {
            RawAdmission::Admitted => Ok(SemaphorePermit::new(self)),
            // `wait = false` never queues.
            RawAdmission::Queued(t) => {
                let _ = self.cancel(t);
                Err(self.load().rejected(RejectReason::Full))
            }
        }
    }

    /// Take a permit now, or a place in the queue if there is room.
    pub fn acquire_or_wait(&self, p: Priority) -> Result<Admission<'_, Q>, Rejected> {
        Ok(match self.acquire_raw(p, true)? {
            RawAdmission::Admitted => Admission::Admitted(SemaphorePermit::new(self)),
            RawAdmission::Queued(t) => Admission::Queued(Waiter::new(self, t)),
        })
    }

    /// The plain form of [`try_acquire`](Self::try_acquire) /
    /// [`acquire_or_wait`](Self::acquire_or_wait) for callers that hold no
    /// borrow (FFI, bindings): each `Admitted` and each granted ticket must be
    /// given back with exactly one [`release`](Self::release), and each `Queued`
    /// ticket polled until granted or cancelled.
    pub fn acquire_raw(&self, p: Priority, wait: bool) -> Result<RawAdmission, Rejected> {
        let limit = self.limit(p);
        let max = self.config.max_concurrent;
        // Invariant: active ≤ max_concurrent and queued ≤ max_queue hold for every
        // value of `state`; this CAS moves from exactly the value the checks read,
        // so no admission or enqueue is ever based on a stale count.
        let mut raw = self.state.load(Ordering::Acquire);
        loop {
            let w = Word::unpack(raw);
            let next = if w.active < limit && w.queued == 0 {
                Word {
                    active: w.active + 1,
                    ..w
                }
            } else if w.active >= limit && limit < max {
                return Err(w.rejected(RejectReason::Shed));
            } else if wait && self.queue_has_room(w) {
                Word {
                    queued: w.queued + 1,
                    tail: w.tail.wrapping_add(1),
                    ..w
                }
            } else {
                return Err(w.rejected(RejectReason::Full));
            };
            #[cfg(seawall_mutant = "sem_admit_blind")]
            {
                // Mutant: check, then store what was computed, over whatever is there.
                self.state.store(next.pack(), Ordering::Release);
                return Ok(if next.active > w.active {
                    RawAdmission::Admitted
                } else {
                    self.install(w.tail);
                    RawAdmission::Queued(Ticket { id: w.tail })
                });
            }
            #[cfg(not(seawall_mutant = "sem_admit_blind"))]
            match self
                .state
                .compare_exchange(raw, next.pack(), Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) if next.active > w.active => return Ok(RawAdmission::Admitted),
                Ok(_) => {
                    self.install(w.tail);
                    return Ok(RawAdmission::Queued(Ticket { id: w.tail }));
                }
                Err(seen) => raw = seen,
            }
        }
    }

    fn queue_has_room(&self, w: Word) -> bool {
        #[cfg(seawall_mutant = "sem_queue_unbounded")]
        {
            // Mutant: the bound counts only installed waiters, so tickets taken
            // but not yet installed slip past it.
            let installed = self
                .slots
                .iter()
                .filter(|s| slot_status(s.load(Ordering::Acquire)) == WAITING)
                .count() as u32;
            let _ = w;
            installed < self.config.max_queue
        }
        #[cfg(not(seawall_mutant = "sem_queue_unbounded"))]
        {
            w.queued < self.config.max_queue && (w.outstanding() as usize) < Q
        }
    }

    /// Put `WAITING(t)` in ticket `t`'s slot, unless a release already granted it.
    fn install(&self, t: u32) {
        let slot = self.slot(t);
        // Invariant: a slot's ticket only moves forward, so a slot still holding an
        // older ticket is free for `t` (its ticket is past `head`: granted or
        // cancelled), and a slot holding `t` already was granted by a release.
        let mut v = slot.load(Ordering::Acquire);
        while before(slot_ticket(v), t) {
            match slot.compare_exchange(
                v,
                slot_word(t, WAITING),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return,
                Err(seen) => v = seen,
            }
        }
    }

    /// Give a permit back: to the oldest live waiter if there is one, else to the
    /// pool. `false` (and nothing changes) when no permit is held.
    pub fn release(&self) -> bool {
        // Invariant: `head` only passes a ticket whose slot is final (GRANTED or
        // CANCELLED); `queued` drops by one for each granted ticket, exactly when
        // `head` passes it, and `active` only drops when no ticket is outstanding,
        // so a permit is either handed to exactly one waiter or returned, never both.
        loop {
            let raw = self.state.load(Ordering::Acquire);
            let w = Word::unpack(raw);
            if w.active == 0 {
                return false;
            }
            if w.head == w.tail {
                let next = Word {
                    active: w.active - 1,
                    ..w
                };
                if self.cas(raw, next) {
                    return true;
                }
                continue;
            }
            let t = w.head;
            let slot = self.slot(t);
            let v = slot.load(Ordering::Acquire);
            let (ticket, status) = (slot_ticket(v), slot_status(v));
            if ticket == t && status == CANCELLED {
                let _ = self.cas(
                    raw,
                    Word {
                        head: t.wrapping_add(1),
                        ..w
                    },
                );
            } else if ticket == t && status == GRANTED {
                self.finish_grant(t);
            } else if (ticket == t && status == WAITING) || before(ticket, t) {
                #[cfg(seawall_mutant = "sem_skip_uninstalled")]
                if ticket != t {
                    // Mutant: a ticket taken but not yet installed looks like a gap
                    // and is skipped: its waiter is stranded behind `head`.
                    let _ = self.cas(
                        raw,
                        Word {
                            head: t.wrapping_add(1),
                            ..w
                        },
                    );
                    continue;
                }
                if slot
                    .compare_exchange(
                        v,
                        slot_word(t, GRANTED),
                        Ordering::AcqRel,
                        Ordering::Acquire,
                    )
                    .is_ok()
                {
                    self.finish_grant(t);
                    return true;
                }
            } else {
                // A ticket newer than `head` in `head`'s slot: `state` moved on
                // since it was read. Read again.
            }
        }
    }

    /// Move `head` past ticket `t`, whose slot is `GRANTED`: `queued − 1`.
    fn finish_grant(&self, t: u32) {
        // Invariant: only the CAS that moves `head` off `t` decrements `queued` for
        // `t`, so the grant is counted once whoever (releaser or helper) does it.
        let mut raw = self.state.load(Ordering::Acquire);
        loop {
            let w = Word::unpack(raw);
            if w.head != t {
                return;
            }
            let next = Word {
                queued: w.queued.wrapping_sub(1),
                head: t.wrapping_add(1),
                ..w
            };
            match self
                .state
                .compare_exchange(raw, next.pack(), Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return,
                Err(seen) => raw = seen,
            }
        }
    }

    /// Where ticket `t` stands. A granted ticket's waiter holds a permit.
    #[must_use]
    pub fn poll(&self, t: Ticket) -> TicketState {
        if Q == 0 {
            return TicketState::Unknown;
        }
        let v = self.slot(t.id).load(Ordering::Acquire);
        let ticket = slot_ticket(v);
        if ticket == t.id {
            match slot_status(v) {
                WAITING => TicketState::Waiting,
                GRANTED => TicketState::Granted,
                CANCELLED => TicketState::Cancelled,
                _ => TicketState::Unknown,
            }
        } else if before(t.id, ticket) {
            // The slot was reused, so `head` passed `t`: granted (a cancelled
            // ticket is not polled again by its waiter).
            TicketState::Granted
        } else {
            TicketState::Unknown
        }
    }

    /// The waiter of ticket `t` gives up (timeout or cancellation) and leaves the
    /// queue at once. If a permit reached it in the same instant, the permit goes
    /// on to the next waiter or back to the pool.
    pub fn cancel(&self, t: Ticket) -> CancelOutcome {
        if Q == 0 {
            return CancelOutcome::Unknown;
        }
        let slot = self.slot(t.id);
        let mut v = slot.load(Ordering::Acquire);
        // Invariant: only this waiter moves its slot out of WAITING(t) other than a
        // release's grant; the CAS decides which of the two came first.
        loop {
            let ticket = slot_ticket(v);
            if ticket == t.id && slot_status(v) == WAITING {
                #[cfg(seawall_mutant = "sem_cancel_blind")]
                {
                    // Mutant: cancel by a blind store, over a grant made meanwhile.
                    slot.store(slot_word(t.id, CANCELLED), Ordering::Release);
                    self.leave_queue();
                    return CancelOutcome::Cancelled;
                }
                #[cfg(not(seawall_mutant = "sem_cancel_blind"))]
                match slot.compare_exchange(
                    v,
                    slot_word(t.id, CANCELLED),
                    Ordering::AcqRel,
                    Ordering::Acquire,
                ) {
                    Ok(_) => {
                        self.leave_queue();
                        return CancelOutcome::Cancelled;
                    }
                    Err(seen) => {
                        v = seen;
                        continue;
                    }
                }
            }
            let granted = (ticket == t.id && slot_status(v) == GRANTED) || before(t.id, ticket);
            if granted {
                // Granted in the same instant: pass the permit on.
                self.release();
                return CancelOutcome::PassedOn;
            }
            return CancelOutcome::Unknown;
        }
    }

    /// A cancelled waiter: `queued − 1`, then skip cancelled tickets at `head` so
    /// their slots come free for new waiters even while no permit is released.
    fn leave_queue(&self) {
        // Invariant: `queued` counts live waiters, and this waiter stopped being
        // live at its slot CAS; the decrement applies to the value read.
        let mut raw = self.state.load(Ordering::Acquire);
        loop {
            let w = Word::unpack(raw);
            let next = Word {
                queued: w.queued.wrapping_sub(1),
                ..w
            };
            match self
                .state
                .compare_exchange(raw, next.pack(), Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => break,
                Err(seen) => raw = seen,
            }
        }
        // Invariant: `head` passes a ticket only when its slot is CANCELLED(head).
        loop {
            let raw = self.state.load(Ordering::Acquire);
            let w = Word::unpack(raw);
            if w.head == w.tail {
                return;
            }
            let v = self.slot(w.head).load(Ordering::Acquire);
            if v != slot_word(w.head, CANCELLED) {
                return;
            }
            let _ = self.cas(
                raw,
                Word {
                    head: w.head.wrapping_add(1),
                    ..w
                },
            );
        }
    }

    /// Ticket `t`'s slot. Only called with `Q ≥ 1`: a semaphore without slots
    /// issues no ticket, and `poll` / `cancel` check first.
    fn slot(&self, t: u32) -> &AtomicU64 {
        &self.slots[t as usize % Q.max(1)]
    }

    fn load(&self) -> Word {
        Word::unpack(self.state.load(Ordering::Acquire))
    }

    fn cas(&self, current: u128, next: Word) -> bool {
        self.state
            .compare_exchange(current, next.pack(), Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }
}

impl<const Q: usize> core::fmt::Debug for Semaphore<Q> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let w = self.load();
        f.debug_struct("Semaphore")
            .field("active", &w.active)
            .field("queued", &w.queued)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}
