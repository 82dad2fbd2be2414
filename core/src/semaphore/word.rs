//! The packed words of the protocol: the 64-bit state word and each slot's
//! 64-bit word (status, generation, arrival).

use super::{RejectReason, Rejected};

pub(super) const FREE: u64 = 0;
pub(super) const WAITING: u64 = 1;
pub(super) const GRANTED: u64 = 2;
pub(super) const CANCELLED: u64 = 3;

const ACTIVE_BITS: u32 = 20;
const QUEUED_BITS: u32 = 17;
/// What is left of the word. `seq` tells two values of `state` apart for
/// 2²⁷ steps (and orders arrivals less than 2²⁶ apart); a 64-bit word keeps
/// the admit and release of an uncontended permit at one plain
/// `lock cmpxchg` each, where a 128-bit word costs a `cmpxchg16b` (4× a
/// `fetch_add` on AMD EPYC).
pub(super) const SEQ_BITS: u32 = 64 - ACTIVE_BITS - QUEUED_BITS;
const ACTIVE_MASK: u64 = (1 << ACTIVE_BITS) - 1;
const QUEUED_MASK: u64 = (1 << QUEUED_BITS) - 1;
const SEQ_MASK: u32 = (1 << SEQ_BITS) - 1;
/// The largest `max_concurrent` the state word counts (2²⁰ − 1).
pub(super) const MAX_CONCURRENT: u32 = ACTIVE_MASK as u32;

/// `raw` with one more permit held, when nobody is queued and fewer than
/// `limit` are held: what the general step computes for the common case, in
/// one add on the packed word (`active < limit ≤ MAX_CONCURRENT`, so nothing
/// carries out of `active`).
#[inline]
pub(super) const fn admit_unqueued(raw: u64, limit: u32) -> Option<u64> {
    let limit = if limit < MAX_CONCURRENT {
        limit
    } else {
        MAX_CONCURRENT
    };
    if raw & (QUEUED_MASK << ACTIVE_BITS) == 0 && raw & ACTIVE_MASK < limit as u64 {
        Some(raw + 1)
    } else {
        None
    }
}

/// `raw` with one permit back in the pool and `seq` one step on (`active ≥ 1`
/// in `raw`): `seq` is the top field, so the add wraps it exactly as
/// `next_seq` does, and nothing borrows across a field.
#[inline]
pub(super) const fn returned(raw: u64) -> u64 {
    (raw - 1).wrapping_add(1 << (ACTIVE_BITS + QUEUED_BITS))
}

/// A release from `raw` gives its permit to the pool: one is held and nobody
/// is queued.
#[inline]
pub(super) const fn returns_to_pool(raw: u64) -> bool {
    #[cfg(seawall_mutant = "sem_return_past_waiters")]
    // Mutant: the inline release looks at `active` only, so a permit goes back
    // to the pool past a waiter that is counted and installed.
    return raw & ACTIVE_MASK != 0;
    #[cfg(not(seawall_mutant = "sem_return_past_waiters"))]
    {
        raw & (QUEUED_MASK << ACTIVE_BITS) == 0 && raw & ACTIVE_MASK != 0
    }
}

/// The state word, unpacked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Word {
    pub(super) active: u32,
    pub(super) queued: u32,
    /// Bumped by every arrival (its arrival number is the value before), every
    /// waiter that settles, and every permit returned to the pool: the steps
    /// that would otherwise bring `state` back to a value it held.
    pub(super) seq: u32,
}

impl Word {
    pub(super) fn unpack(v: u64) -> Self {
        Self {
            active: (v & ACTIVE_MASK) as u32,
            queued: ((v >> ACTIVE_BITS) & QUEUED_MASK) as u32,
            seq: (v >> (ACTIVE_BITS + QUEUED_BITS)) as u32,
        }
    }

    /// Each field masked to its width, so a count gone wrong in a corrupted
    /// word never spills into its neighbour.
    pub(super) fn pack(self) -> u64 {
        (u64::from(self.active) & ACTIVE_MASK)
            | ((u64::from(self.queued) & QUEUED_MASK) << ACTIVE_BITS)
            | (u64::from(self.seq & SEQ_MASK) << (ACTIVE_BITS + QUEUED_BITS))
    }

    /// `seq` one step on.
    pub(super) fn next_seq(self) -> u32 {
        self.seq.wrapping_add(1) & SEQ_MASK
    }

    pub(super) fn rejected(self, reason: RejectReason) -> Rejected {
        Rejected {
            reason,
            active: self.active,
            queued: self.queued,
        }
    }
}

pub(super) const STATUS_MASK: u64 = 0b11;
pub(super) const GEN_SHIFT: u32 = 2;
pub(super) const GEN_BITS: u32 = 30;

pub(super) const fn slot_word(arrival: u32, generation: u32, status: u64) -> u64 {
    status | ((generation as u64 & ((1 << GEN_BITS) - 1)) << GEN_SHIFT) | ((arrival as u64) << 32)
}

pub(super) const fn slot_status(v: u64) -> u64 {
    v & STATUS_MASK
}

pub(super) const fn slot_generation(v: u64) -> u32 {
    ((v >> GEN_SHIFT) as u32) & ((1 << GEN_BITS) - 1)
}

pub(super) const fn slot_arrival(v: u64) -> u32 {
    (v >> 32) as u32
}

pub(super) const fn with_status(v: u64, status: u64) -> u64 {
    (v & !STATUS_MASK) | status
}

/// Arrival `a` came before arrival `b` (serial-number arithmetic over the
/// `SEQ_BITS` of an arrival number: arrivals less than 2²⁶ apart compare
/// correctly across the wrap).
pub(super) const fn before(a: u32, b: u32) -> bool {
    let d = b.wrapping_sub(a) & SEQ_MASK;
    d != 0 && d < 1 << (SEQ_BITS - 1)
}
