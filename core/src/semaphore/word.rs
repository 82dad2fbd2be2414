//! The packed words of the protocol: the 128-bit state word and each slot's
//! 64-bit word (status, generation, arrival).

use super::{RejectReason, Rejected};

pub(super) const FREE: u64 = 0;
pub(super) const WAITING: u64 = 1;
pub(super) const GRANTED: u64 = 2;
pub(super) const CANCELLED: u64 = 3;

/// The state word, unpacked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Word {
    pub(super) active: u32,
    pub(super) queued: u32,
    pub(super) arrivals: u32,
    pub(super) epoch: u32,
}

impl Word {
    pub(super) fn unpack(v: u128) -> Self {
        Self {
            active: v as u32,
            queued: (v >> 32) as u32,
            arrivals: (v >> 64) as u32,
            epoch: (v >> 96) as u32,
        }
    }

    pub(super) fn pack(self) -> u128 {
        u128::from(self.active)
            | (u128::from(self.queued) << 32)
            | (u128::from(self.arrivals) << 64)
            | (u128::from(self.epoch) << 96)
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

/// Arrival `a` came before arrival `b` (serial-number arithmetic: arrivals
/// less than 2³¹ apart compare correctly across the wrap).
pub(super) const fn before(a: u32, b: u32) -> bool {
    let d = b.wrapping_sub(a);
    d != 0 && d < 0x8000_0000
}
