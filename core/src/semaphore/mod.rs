//! Permit semaphore (bulkhead) with FIFO hand-off and priority load shedding
//! (DESIGN §5).
//!
//! # Protocol
//! One 64-bit word, `state`, holds `active` (permits held, 20 bits), `queued`
//! (waiters that have not left: counted from their admission to the queue until
//! they *acknowledge* their grant, cancel, or take a free permit themselves; 17
//! bits) and `seq` (27 bits, bumped by every arrival, which takes the value
//! before as its arrival number, by every waiter that settles into the queue,
//! and by every permit returned to the pool, so the word does not come back to
//! a value it held for 2²⁷ steps). Each of the `Q` slots is a 64-bit word `status |
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
//!   `max_queue` ≤ `Q`), and *settles* with a CAS of `state`: `seq + 1` if every
//!   permit is held; if a permit is free (a release found no installed waiter,
//!   see below) it withdraws its slot and takes that permit instead
//!   (`active + 1, queued − 1`).
//! * **Release**: with `queued = 0`, `active − 1`. Otherwise the `WAITING` slot
//!   with the oldest arrival is granted by ONE CAS of the slot to `GRANTED` — the
//!   permit moves to that waiter, `active` and `queued` are unchanged. With no
//!   `WAITING` slot, `active − 1` by a CAS from the `state` read *before* the
//!   scan: any waiter that settled since changed `seq`, so the CAS fails and
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

mod acquire;
#[cfg(feature = "std")]
mod blocking;
mod config;
#[cfg(all(test, not(loom)))]
mod corrupt_tests;
mod orphans;
mod outcome;
mod permit;
mod release;
mod ticket;
mod word;
#[cfg(all(test, not(loom)))]
mod wrap_tests;

#[cfg(feature = "std")]
pub use blocking::{BlockingPermit, BlockingSemaphore, WaitError};
pub use config::{Priority, PriorityShares, SemaphoreConfig};
pub use outcome::{
    CancelOutcome, RawAdmission, RejectReason, Rejected, SemaphoreSnapshot, Ticket, TicketState,
};
pub use permit::{Admission, SemaphorePermit, Waiter};

use crossbeam_utils::CachePadded;

use crate::error::{ConfigError, Field};
use crate::sync::{AtomicU64, Ordering};
use word::{FREE, GEN_BITS, Word, slot_word};

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
    state: CachePadded<AtomicU64>,
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
            state: CachePadded::new(AtomicU64::new(0)),
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

    /// Permits held and waiters queued now, with the whole state word they were
    /// read from. `state` does not return to a value it held for 2²⁷ steps:
    /// `seq` grows by one at each enqueue, settle and return to the pool, and
    /// the other steps only raise `active` or lower `queued`. So two equal words mean no count moved between the
    /// reads: for a host that reconciles its own records with the counts.
    #[must_use]
    pub fn stamped_snapshot(&self) -> (SemaphoreSnapshot, u64) {
        let raw = self.state.load(Ordering::Acquire);
        let w = Word::unpack(raw);
        (
            SemaphoreSnapshot {
                active: w.active,
                queued: w.queued,
            },
            raw,
        )
    }

    fn load(&self) -> Word {
        Word::unpack(self.state.load(Ordering::Acquire))
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
