//! Permit semaphore (bulkhead) with FIFO hand-off and priority load shedding
//! (DESIGN §5).
//!
//! # Protocol
//! One 128-bit word, `state`, holds `active` (permits held), `queued` (waiters
//! that have not left: counted from their admission to the queue until they
//! *acknowledge* their grant, cancel, or take a free permit themselves),
//! `arrivals` (the next arrival number) and `epoch` (bumped by every waiter that
//! settles into the queue). Each of the `Q` slots is a 64-bit word `status |
//! generation << 2 | arrival << 32` with status `FREE`, `WAITING`, `GRANTED` or
//! `CANCELLED`; a `WAITING` or `GRANTED` slot is in use (its ticket is live),
//! a `FREE` or `CANCELLED` one may be taken by the next waiter. A ticket is
//! `slot | generation << log2(Q)`. Nothing is a pointer, so the semaphore can
//! live in memory shared by processes.
//!
//! * **Admit** (one CAS of `state`): `active < limit(priority)` and no waiter
//!   is still unserved: `queued = 0`, or every queued waiter is one whose grant
//!   is not acknowledged yet (a scan finds `queued` `GRANTED` slots; any waiter
//!   that arrives or acknowledges meanwhile changes `state` and fails the CAS).
//!   A priority whose limit is below `max_concurrent` is shed at once when
//!   `active ≥ limit`.
//! * **Wait**: one CAS of `state` takes an arrival number (`queued + 1`, bounded
//!   by `max_queue`). The waiter then *installs* `WAITING(arrival)` in a slot
//!   that is `FREE` or `CANCELLED` (there is one: slots in use ≤ `queued` − 1 <
//!   `max_queue` ≤ `Q`), and *settles* with a CAS of `state`: `epoch + 1` if every
//!   permit is held; if a permit is free (a release found no installed waiter,
//!   see below) it withdraws its slot and takes that permit instead
//!   (`active + 1, queued − 1`).
//! * **Release**: with `queued = 0`, `active − 1`. Otherwise the `WAITING` slot
//!   with the oldest arrival is granted by ONE CAS of the slot to `GRANTED` — the
//!   permit moves to that waiter, `active` and `queued` are unchanged. With no
//!   `WAITING` slot, `active − 1` by a CAS from the `state` read *before* the
//!   scan: any waiter that settled since changed `epoch`, so the CAS fails and
//!   the scan is made again; a waiter that settles later sees the free permit.
//!   So a permit never sits in the pool while a settled waiter waits (no waiter
//!   is ever stranded), and a permit is handed to exactly one waiter or returned.
//! * **Acknowledge**: the waiter's [`Semaphore::poll`] that finds its slot
//!   `GRANTED` moves it to `FREE` (one CAS), then `queued − 1`, and returns
//!   `Granted` — once. Only then may the slot be reused, so a granted ticket
//!   keeps its meaning however long its waiter takes to poll (a slow poller, a
//!   stopped process, a dead one awaiting reclaim), and a ticket whose generation
//!   differs from its slot's is always finished (`Unknown`, never `Granted`).
//! * **Cancel**: a CAS of its own slot from `WAITING` to `CANCELLED`, then
//!   `queued − 1`: the slot is free for the next waiter at once. If the slot is
//!   `GRANTED`, a release granted the ticket in the same instant: the waiter
//!   acknowledges the grant and releases the permit at once, so it goes on to
//!   the next waiter or back to the pool — never lost.
//!
//! The slot CAS is where a grant and a cancellation (or a withdrawal) race:
//! exactly one wins. Waiters are granted in arrival order (FIFO), whatever their
//! priority; an arrival is settled when its acquire returns, so a waiter whose
//! acquire returned before another's began is always served first.
//!
//! A ticket means something only to the semaphore that issued it, and only
//! until it is finished (granted and polled, or cancelled): a forged id, one of
//! another semaphore, or a finished one reads `Unknown` unless it happens to
//! name exactly a live slot's generation, and then it acts for that ticket's
//! waiter. Callers that cannot trust their ids (the C ABI) keep a table of
//! the tickets they issued.
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

use crate::error::{ConfigError, Field};
use crate::sync::{AtomicU64, AtomicU128, Ordering};

const FREE: u64 = 0;
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

/// The state word, unpacked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Word {
    active: u32,
    queued: u32,
    arrivals: u32,
    epoch: u32,
}

impl Word {
    fn unpack(v: u128) -> Self {
        Self {
            active: v as u32,
            queued: (v >> 32) as u32,
            arrivals: (v >> 64) as u32,
            epoch: (v >> 96) as u32,
        }
    }

    fn pack(self) -> u128 {
        u128::from(self.active)
            | (u128::from(self.queued) << 32)
            | (u128::from(self.arrivals) << 64)
            | (u128::from(self.epoch) << 96)
    }

    fn rejected(self, reason: RejectReason) -> Rejected {
        Rejected {
            reason,
            active: self.active,
            queued: self.queued,
        }
    }
}

const STATUS_MASK: u64 = 0b11;
const GEN_SHIFT: u32 = 2;
const GEN_BITS: u32 = 30;

const fn slot_word(arrival: u32, generation: u32, status: u64) -> u64 {
    status | ((generation as u64 & ((1 << GEN_BITS) - 1)) << GEN_SHIFT) | ((arrival as u64) << 32)
}

const fn slot_status(v: u64) -> u64 {
    v & STATUS_MASK
}

const fn slot_generation(v: u64) -> u32 {
    ((v >> GEN_SHIFT) as u32) & ((1 << GEN_BITS) - 1)
}

const fn slot_arrival(v: u64) -> u32 {
    (v >> 32) as u32
}

const fn with_status(v: u64, status: u64) -> u64 {
    (v & !STATUS_MASK) | status
}

/// Arrival `a` came before arrival `b` (serial-number arithmetic: arrivals
/// less than 2³¹ apart compare correctly across the wrap).
const fn before(a: u32, b: u32) -> bool {
    let d = b.wrapping_sub(a);
    d != 0 && d < 0x8000_0000
}

/// A lock-free, allocation-free counting semaphore with a FIFO wait queue of up to
/// `max_queue ≤ Q` waiters and per-priority load shedding (DESIGN §5).
///
/// **Queue bound.** At most `max_queue` live waiters: a waiter that times out or
/// is cancelled leaves `queued` and frees its slot at once, so the queue never
/// reports full while it has room, however waiters give up. A granted waiter
/// leaves when its poll acknowledges the grant.
///
/// **`Q`** is 0 (no queue) or a power of two up to 2¹⁶, checked when the type is
/// used (a compile error otherwise), so a ticket's slot and generation split
/// cleanly:
///
/// ```compile_fail
/// # use seawall_core::{Semaphore, SemaphoreConfig};
/// let s = Semaphore::<3>::new(SemaphoreConfig::DEFAULT);
/// ```
///
/// **Cost.** A release with waiters scans the first `max_queue` slots for the
/// oldest arrival (8 bytes each); a release without waiters, and an admission
/// with nobody queued, is one CAS (an admission while granted waiters have not
/// polled yet scans the slots too).
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
    /// `Q` is 0 or a power of two no larger than 2¹⁶ (a compile error otherwise).
    const RING_OK: () = assert!(
        Q == 0 || (Q.is_power_of_two() && Q <= 1 << 16),
        "Semaphore<Q>: Q must be 0 or a power of two no larger than 65536"
    );
    /// Bits of a ticket that name the slot.
    const INDEX_BITS: u32 = if Q == 0 { 0 } else { Q.trailing_zeros() };
    /// Bits of a ticket left for the slot's generation.
    const TICKET_GEN_BITS: u32 = if 32 - Self::INDEX_BITS < GEN_BITS {
        32 - Self::INDEX_BITS
    } else {
        GEN_BITS
    };

    /// A semaphore with every permit free, or the first invalid field
    /// (`max_queue` above `Q` included).
    pub fn new(config: SemaphoreConfig) -> Result<Self, ConfigError> {
        let () = Self::RING_OK;
        config.validate()?;
        ConfigError::check_range(Field::MaxQueue, u64::from(config.max_queue), 0, Q as u64)?;
        Ok(Self {
            state: CachePadded::new(AtomicU128::new(0)),
            slots: core::array::from_fn(|_| AtomicU64::new(slot_word(0, 0, FREE))),
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
        // so no admission or enqueue is ever based on a stale count, and an
        // admission never overtakes a waiter still unserved (see
        // `only_granted_waiters`).
        let mut raw = self.state.load(Ordering::Acquire);
        loop {
            let w = Word::unpack(raw);
            let next = if w.active < limit && self.only_granted_waiters(w.queued) {
                Word {
                    active: w.active + 1,
                    ..w
                }
            } else if w.active >= limit && limit < max {
                return Err(w.rejected(RejectReason::Shed));
            } else if wait && self.queue_has_room(w) {
                Word {
                    queued: w.queued + 1,
                    arrivals: w.arrivals.wrapping_add(1),
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
                    self.enqueue(w.arrivals)
                });
            }
            #[cfg(not(seawall_mutant = "sem_admit_blind"))]
            match self
                .state
                .compare_exchange(raw, next.pack(), Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) if next.active > w.active => return Ok(RawAdmission::Admitted),
                Ok(_) => return Ok(self.enqueue(w.arrivals)),
                Err(seen) => raw = seen,
            }
        }
    }

    /// Every one of the `queued` waiters of the `state` just read holds a grant
    /// it has not acknowledged yet (so an admission overtakes nobody).
    ///
    /// The scan is not atomic, but each `GRANTED` slot it sees is a distinct
    /// waiter that was counted in `queued` when seen (a slot leaves `GRANTED`
    /// before its waiter leaves `queued`); a waiter that arrives or leaves after
    /// the `state` read changes `state` (`arrivals` or `queued`), so the
    /// admission CAS from that read fails. A grant made during the scan only
    /// makes it undercount, i.e. refuse.
    fn only_granted_waiters(&self, queued: u32) -> bool {
        if queued == 0 {
            return true;
        }
        let n = (self.config.max_queue as usize).min(Q);
        let granted = self.slots[..n]
            .iter()
            .filter(|s| slot_status(s.load(Ordering::Acquire)) == GRANTED)
            .count();
        granted >= queued as usize
    }

    fn queue_has_room(&self, w: Word) -> bool {
        #[cfg(seawall_mutant = "sem_queue_unbounded")]
        {
            // Mutant: the bound counts only installed waiters, so waiters admitted
            // to the queue but not yet installed slip past it.
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
            w.queued < self.config.max_queue
        }
    }

    /// Wait as arrival `a` (already counted in `queued`): install, then settle —
    /// or take a permit a release left in the pool because it could not see us.
    fn enqueue(&self, a: u32) -> RawAdmission {
        loop {
            let (i, v) = self.install(a);
            if self.settle() {
                return RawAdmission::Queued(Self::ticket(i, v));
            }
            // A permit is free. Withdraw from the slot first, so no release can
            // grant it while we take the free permit; if a release granted it
            // already, that permit is ours: acknowledge it (nobody else knows
            // this ticket, so the acknowledgement is ours to make).
            if let Err(seen) = self.slots[i].compare_exchange(
                v,
                with_status(v, CANCELLED),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                let acknowledged = self.acknowledge(&self.slots[i], seen);
                debug_assert!(acknowledged, "only a grant moves an installed slot");
                return RawAdmission::Admitted;
            }
            if self.take_free_permit() {
                return RawAdmission::Admitted;
            }
            // Another waiter took it first: install again, same arrival.
        }
    }

    /// Put `WAITING(a)` in a slot that is not in use; that slot and word.
    fn install(&self, a: u32) -> (usize, u64) {
        // `max_queue ≥ 1` here: a waiter was admitted to the queue.
        let n = (self.config.max_queue as usize).min(Q);
        let start = a as usize % n;
        // Invariant: slots in use (`WAITING` or `GRANTED`) ≤ `queued` − 1 (this
        // waiter is counted but not installed; a granted waiter stays counted
        // until it acknowledges), and `queued ≤ max_queue`, so one of the first
        // `max_queue` slots is free; a slot goes from free to `WAITING` only by
        // this CAS, from the exact free word read, so two waiters never share one
        // and a granted slot is never taken before its ticket is acknowledged. A
        // pass that finds none raced other waiters that made progress meanwhile.
        loop {
            for k in 0..n {
                let i = (start + k) % n;
                let v = self.slots[i].load(Ordering::Acquire);
                #[cfg(seawall_mutant = "sem_slot_kept")]
                if slot_status(v) == CANCELLED {
                    // Mutant: a cancelled waiter's slot stays taken.
                    continue;
                }
                if slot_status(v) == WAITING {
                    continue;
                }
                #[cfg(not(seawall_mutant = "sem_grant_frees_slot"))]
                if slot_status(v) == GRANTED {
                    continue;
                }
                let w = slot_word(a, slot_generation(v).wrapping_add(1), WAITING);
                if self.slots[i]
                    .compare_exchange(v, w, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
                {
                    return (i, w);
                }
            }
            crate::sync::spin_loop();
        }
    }

    /// Settle into the queue: `epoch + 1` while every permit is held (`true`);
    /// `false` (and nothing changed) when a permit is free in the pool.
    fn settle(&self) -> bool {
        let max = self.config.max_concurrent;
        // Invariant: this CAS changes `state` after this waiter's slot became
        // `WAITING`. A release that read `state` before it sees the slot in its
        // scan; one that read it after and found no waiter fails its CAS and scans
        // again; one that returned a permit before it is seen here as
        // `active < max_concurrent`. So no permit is free while a settled waiter
        // waits.
        let mut raw = self.state.load(Ordering::Acquire);
        loop {
            let w = Word::unpack(raw);
            #[cfg(not(seawall_mutant = "sem_settle_blind"))]
            if w.active < max {
                return false;
            }
            let next = Word {
                epoch: w.epoch.wrapping_add(1),
                ..w
            };
            match self
                .state
                .compare_exchange(raw, next.pack(), Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return true,
                Err(seen) => raw = seen,
            }
        }
    }

    /// A withdrawn waiter takes the free permit: `active + 1, queued − 1`;
    /// `false` when none is free any more.
    fn take_free_permit(&self) -> bool {
        let max = self.config.max_concurrent;
        // Invariant: active ≤ max_concurrent; the waiter leaves `queued` exactly
        // when it takes the permit, in one CAS.
        let mut raw = self.state.load(Ordering::Acquire);
        loop {
            let w = Word::unpack(raw);
            if w.active >= max {
                return false;
            }
            let next = Word {
                active: w.active + 1,
                queued: w.queued.wrapping_sub(1),
                ..w
            };
            match self
                .state
                .compare_exchange(raw, next.pack(), Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return true,
                Err(seen) => raw = seen,
            }
        }
    }

    /// Give a permit back: to the oldest live waiter if there is one, else to the
    /// pool. `false` (and nothing changed) when no permit is held.
    pub fn release(&self) -> bool {
        // Invariant: a grant is the slot's CAS from `WAITING`, so it reaches one
        // waiter that has not left, once; the waiter stays in `queued` and its
        // slot stays in use until the waiter acknowledges (`acknowledge`). The
        // pool gets the permit only by a CAS from the `state` read before a scan
        // that found no `WAITING` slot, so no waiter settled between the scan and
        // the return (see `settle`).
        loop {
            let raw = self.state.load(Ordering::Acquire);
            let w = Word::unpack(raw);
            if w.active == 0 {
                return false;
            }
            if w.queued > 0
                && let Some((i, v)) = self.oldest_waiting()
            {
                if self.slots[i]
                    .compare_exchange(
                        v,
                        with_status(v, GRANTED),
                        Ordering::AcqRel,
                        Ordering::Acquire,
                    )
                    .is_ok()
                {
                    #[cfg(seawall_mutant = "sem_grant_frees_slot")]
                    // Mutant: the releaser counts the waiter out at the grant, so
                    // its slot may be reused before the waiter has polled.
                    self.leave_queue();
                    return true;
                }
                continue;
            }
            #[cfg(seawall_mutant = "sem_pool_unvalidated")]
            let raw = {
                // Mutant: return the permit from a fresh read, blind to waiters
                // that settled after the scan.
                let _ = raw;
                self.state.load(Ordering::Acquire)
            };
            let w = Word::unpack(raw);
            if self.cas(
                raw,
                Word {
                    active: w.active - 1,
                    ..w
                },
            ) {
                return true;
            }
        }
    }

    /// The `WAITING` slot with the oldest arrival, and its word.
    fn oldest_waiting(&self) -> Option<(usize, u64)> {
        let n = (self.config.max_queue as usize).min(Q);
        let mut best: Option<(usize, u64)> = None;
        for i in 0..n {
            let v = self.slots[i].load(Ordering::Acquire);
            if slot_status(v) != WAITING {
                continue;
            }
            if best.is_none_or(|(_, b)| before(slot_arrival(v), slot_arrival(b))) {
                best = Some((i, v));
            }
        }
        best
    }

    /// A waiter left the queue (acknowledged its grant, or cancelled): `queued − 1`.
    fn leave_queue(&self) {
        // Invariant: `queued` counts waiters that have not left; each leaves once,
        // after its slot's CAS out of `WAITING` (cancel) or out of `GRANTED`
        // (acknowledge), and this applies to the value read.
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
                Ok(_) => return,
                Err(seen) => raw = seen,
            }
        }
    }

    fn ticket(i: usize, v: u64) -> Ticket {
        let generation = slot_generation(v) & Self::gen_mask();
        Ticket {
            id: (i as u32) | generation.checked_shl(Self::INDEX_BITS).unwrap_or(0),
        }
    }

    const fn gen_mask() -> u32 {
        if Self::TICKET_GEN_BITS >= 32 {
            u32::MAX
        } else {
            (1 << Self::TICKET_GEN_BITS) - 1
        }
    }

    /// Ticket `t`'s slot, generation, and how the slot's word stands to it.
    fn locate(&self, t: Ticket) -> Option<(&AtomicU64, u32)> {
        if Q == 0 {
            return None;
        }
        let i = t.id as usize & (Q - 1);
        let generation = t.id.checked_shr(Self::INDEX_BITS).unwrap_or(0) & Self::gen_mask();
        Some((&self.slots[i], generation))
    }

    /// Slot generation `g` is ticket generation `t` (the same wait).
    fn same_wait(g: u32, t: u32) -> bool {
        g & Self::gen_mask() == t
    }

    /// The waiter of a granted slot (word `v`) learns of its grant: `GRANTED →
    /// FREE`, then `queued − 1`. `false` if the slot is no longer `v` (the
    /// grant was acknowledged by a racing call for the same ticket).
    fn acknowledge(&self, slot: &AtomicU64, v: u64) -> bool {
        // Invariant: a slot leaves `GRANTED` only by this CAS, so exactly one
        // call acknowledges a grant and counts its waiter out of `queued`; until
        // then the slot is in use and no other waiter installs in it.
        if slot
            .compare_exchange(v, with_status(v, FREE), Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return false;
        }
        #[cfg(not(seawall_mutant = "sem_grant_frees_slot"))]
        self.leave_queue();
        true
    }

    /// Ticket `t`'s slot and the slot word just read, if that word is still of
    /// `t`'s wait. The slot is not reused while its ticket is live, so any other
    /// generation means `t` is finished, or was never issued here.
    fn live_slot(&self, t: Ticket) -> Option<(&AtomicU64, u64)> {
        let (slot, g) = self.locate(t)?;
        let v = slot.load(Ordering::Acquire);
        Self::same_wait(slot_generation(v), g).then_some((slot, v))
    }

    /// Where ticket `t` stands, without acknowledging a grant: for a waker that
    /// looks at other waiters' tickets. Only the ticket's waiter takes the grant,
    /// with [`poll`](Self::poll); a granted ticket reads `Granted` here until then.
    #[must_use]
    pub fn peek(&self, t: Ticket) -> TicketState {
        let Some((_, v)) = self.live_slot(t) else {
            return TicketState::Unknown;
        };
        match slot_status(v) {
            WAITING => TicketState::Waiting,
            GRANTED => TicketState::Granted,
            CANCELLED => TicketState::Cancelled,
            _ => TicketState::Unknown,
        }
    }

    /// Where ticket `t` stands. `Granted` is returned once: this poll
    /// acknowledged the grant, so the caller holds the permit now (release it
    /// with [`release`](Self::release)) and the ticket is finished.
    #[must_use = "a Granted poll hands over a permit that must be released"]
    pub fn poll(&self, t: Ticket) -> TicketState {
        let Some((slot, v)) = self.live_slot(t) else {
            return TicketState::Unknown;
        };
        match slot_status(v) {
            WAITING => TicketState::Waiting,
            GRANTED if self.acknowledge(slot, v) => TicketState::Granted,
            CANCELLED => TicketState::Cancelled,
            _ => TicketState::Unknown,
        }
    }

    /// The waiter of ticket `t` gives up (timeout or cancellation) and leaves the
    /// queue at once, freeing its slot. If a permit reached it and was not polled
    /// yet, the permit goes on to the next waiter or back to the pool.
    pub fn cancel(&self, t: Ticket) -> CancelOutcome {
        let Some((slot, g)) = self.locate(t) else {
            return CancelOutcome::Unknown;
        };
        let mut v = slot.load(Ordering::Acquire);
        // Invariant: only this waiter moves its slot out of WAITING other than a
        // release's grant; the CAS decides which of the two came first. A granted
        // slot keeps its generation until acknowledged, so a failed CAS re-reads
        // the same wait.
        loop {
            if !Self::same_wait(slot_generation(v), g) {
                return CancelOutcome::Unknown;
            }
            match slot_status(v) {
                WAITING => {
                    #[cfg(seawall_mutant = "sem_cancel_blind")]
                    {
                        // Mutant: cancel by a blind store, over a grant made meanwhile.
                        slot.store(with_status(v, CANCELLED), Ordering::Release);
                        self.leave_queue();
                        return CancelOutcome::Cancelled;
                    }
                    #[cfg(not(seawall_mutant = "sem_cancel_blind"))]
                    match slot.compare_exchange(
                        v,
                        with_status(v, CANCELLED),
                        Ordering::AcqRel,
                        Ordering::Acquire,
                    ) {
                        Ok(_) => {
                            self.leave_queue();
                            return CancelOutcome::Cancelled;
                        }
                        Err(seen) => v = seen,
                    }
                }
                // Granted and not polled: take the permit, and pass it on.
                GRANTED if self.acknowledge(slot, v) => {
                    self.release();
                    return CancelOutcome::PassedOn;
                }
                _ => return CancelOutcome::Unknown,
            }
        }
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

#[cfg(all(test, not(loom)))]
mod wrap_tests {
    //! Counters across their wrap (finding 08), without 2³² real waiters: the
    //! semaphore starts with arrivals and slot generations just below the wrap.
    use super::*;

    fn near_wrap<const Q: usize>(
        max_concurrent: u32,
        max_queue: u32,
        arrival: u32,
        generation: u32,
    ) -> Semaphore<Q> {
        let s = Semaphore::<Q>::new(SemaphoreConfig {
            max_concurrent,
            max_queue,
            ..SemaphoreConfig::DEFAULT
        })
        .unwrap();
        s.state.store(
            Word {
                active: 0,
                queued: 0,
                arrivals: arrival,
                epoch: u32::MAX,
            }
            .pack(),
            Ordering::Relaxed,
        );
        for slot in &s.slots {
            slot.store(slot_word(0, generation, FREE), Ordering::Relaxed);
        }
        s
    }

    fn queued<const Q: usize>(s: &Semaphore<Q>) -> Ticket {
        match s.acquire_raw(Priority::Normal, true) {
            Ok(RawAdmission::Queued(t)) => t,
            other => panic!("expected to queue, got {other:?}"),
        }
    }

    /// Waiters whose arrivals straddle 2³² are granted in arrival order, one
    /// permit each, and `release` returns (no phantom grant, no spin).
    #[test]
    fn fifo_across_the_arrival_wrap() {
        let s = near_wrap::<4>(1, 4, u32::MAX - 1, 0);
        assert_eq!(
            s.acquire_raw(Priority::Normal, false),
            Ok(RawAdmission::Admitted)
        );
        // Arrivals 2³² − 2, 2³² − 1, 0, 1.
        let t: [Ticket; 4] = core::array::from_fn(|_| queued(&s));
        assert_eq!(
            s.snapshot(),
            SemaphoreSnapshot {
                active: 1,
                queued: 4
            }
        );
        for (k, want) in t.iter().enumerate() {
            assert!(s.release(), "release {k}");
            assert_eq!(s.poll(*want), TicketState::Granted, "ticket {k} is next");
            for later in &t[k + 1..] {
                assert_eq!(s.poll(*later), TicketState::Waiting);
            }
        }
        assert!(s.release());
        assert_eq!(s.snapshot(), SemaphoreSnapshot::default());
        assert!(!s.release(), "no permit is held");
    }

    /// A ring of one slot whose generation wraps: each ticket names its own wait,
    /// cancelled and granted ones are told apart from the live one.
    #[test]
    fn slot_generation_wrap_keeps_tickets_apart() {
        let s = near_wrap::<1>(1, 1, u32::MAX - 3, (1 << GEN_BITS) - 2);
        assert_eq!(
            s.acquire_raw(Priority::Normal, false),
            Ok(RawAdmission::Admitted)
        );
        let mut prev: Option<Ticket> = None;
        for k in 0..6 {
            let t = queued(&s);
            assert_eq!(s.poll(t), TicketState::Waiting, "round {k}");
            if let Some(p) = prev {
                assert_ne!(p, t, "round {k}: a ticket names one wait");
                // The previous wait was granted, acknowledged and its slot
                // reused: finished, never mistaken for the live wait.
                assert_eq!(s.poll(p), TicketState::Unknown, "round {k}");
                assert_eq!(s.cancel(p), CancelOutcome::Unknown, "round {k}");
            }
            if k % 2 == 0 {
                assert!(s.release(), "round {k}: hand-off");
                assert_eq!(s.poll(t), TicketState::Granted);
                prev = Some(t);
            } else {
                assert_eq!(s.cancel(t), CancelOutcome::Cancelled);
                assert_eq!(s.cancel(t), CancelOutcome::Unknown, "cancelled once");
                prev = None;
            }
            assert_eq!(
                s.snapshot(),
                SemaphoreSnapshot {
                    active: 1,
                    queued: 0
                }
            );
        }
        assert!(s.release());
        assert_eq!(s.snapshot(), SemaphoreSnapshot::default());
    }

    /// Ticket generations of a large ring (18 bits left for the generation) wrap
    /// too: the wait after the wrap is not mistaken for the one before.
    #[test]
    fn ticket_generation_wrap_in_a_large_ring() {
        let s = near_wrap::<16384>(1, 1, 7, (1 << 18) - 1);
        assert_eq!(
            s.acquire_raw(Priority::Normal, false),
            Ok(RawAdmission::Admitted)
        );
        let a = queued(&s); // slot generation 2¹⁸: ticket generation 0
        assert!(s.release());
        assert_eq!(s.poll(a), TicketState::Granted);
        let b = queued(&s);
        assert_ne!(a, b);
        assert_eq!(s.poll(b), TicketState::Waiting);
        assert_eq!(s.poll(a), TicketState::Unknown, "a is finished");
        assert_eq!(s.cancel(b), CancelOutcome::Cancelled);
        assert!(s.release());
        assert_eq!(s.snapshot(), SemaphoreSnapshot::default());
    }
}
