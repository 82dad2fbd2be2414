//! A bulkhead's lifetime totals (DESIGN §8, "One set of totals"): for a
//! tracked semaphore they live in its cell, so every process sharing it
//! reports the same host-wide figures.
//!
//! Admissions are not counted on the way in, which would put a second atomic
//! write beside the admission's one CAS: every claim of a holder slot already
//! moves that slot to its next generation, so the claims made are the sum of
//! the generations, and each ended claim is exactly one of admitted now,
//! refused (counted here) or queued (counted here; a queued caller is admitted
//! later when its grant is taken, counted here too). So
//! `admitted = claims ended − refused − queued + granted`. The counts here are
//! written before the claim's slot leaves its step, and read after the table,
//! so a read can only fall short of the truth (a claim that ends during the
//! scan may be counted out before it is counted in), never exceed it; the
//! figure reported is the highest ever computed, so it never goes back.
//! Exact until one holder slot is claimed 2³⁰ times (5 · 10¹² claims over the
//! default table).

use core::sync::atomic::Ordering;

use crossbeam_utils::CachePadded;
use seawall_core::{RejectReason, StripedCounter};

use crate::sync::AtomicU64;

/// Why a waiter left the queue without a permit, for [`BulkheadTotals`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GaveUp {
    /// Its wait ran out (a timeout or the deadline).
    TimedOut,
    /// Its caller cancelled it (an abort signal, a cancelled task).
    Aborted,
}

/// A bulkhead's lifetime figures: host-wide for a shared one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BulkheadTotals {
    /// Calls that got a permit, at once or after waiting.
    pub admitted: u64,
    /// Calls shed by priority.
    pub rejected_shed: u64,
    /// Calls refused because no permit was free and there was no room to wait.
    pub rejected_full: u64,
    /// Waiters whose wait ran out.
    pub rejected_timeout: u64,
    /// Waiters whose caller cancelled them.
    pub aborted: u64,
}

/// The counts a tracked semaphore keeps beside its holder table. Any values
/// are valid (they are statistics).
#[repr(C)]
pub struct SharedTotals {
    /// Refusals: striped, since a full bulkhead under load refuses on every core.
    shed: StripedCounter,
    full: StripedCounter,
    /// Waits: each is a call that waits anyway.
    waits: CachePadded<WaitCounts>,
}

#[repr(C)]
struct WaitCounts {
    /// Claims that ended queued.
    queued: AtomicU64,
    /// Grants taken.
    granted: AtomicU64,
    timed_out: AtomicU64,
    aborted: AtomicU64,
    /// Refusals with no holder slot claimed (every slot taken).
    unclaimed_full: AtomicU64,
    /// The highest admitted figure reported.
    admitted_seen: AtomicU64,
}

impl SharedTotals {
    /// All zero.
    pub fn new() -> Self {
        Self {
            shed: StripedCounter::new(),
            full: StripedCounter::new(),
            waits: CachePadded::new(WaitCounts {
                queued: AtomicU64::new(0),
                granted: AtomicU64::new(0),
                timed_out: AtomicU64::new(0),
                aborted: AtomicU64::new(0),
                unclaimed_full: AtomicU64::new(0),
                admitted_seen: AtomicU64::new(0),
            }),
        }
    }

    /// A claim ended refused, for `reason`.
    pub(crate) fn refused(&self, reason: RejectReason) {
        match reason {
            RejectReason::Shed => self.shed.bump(),
            RejectReason::Full => self.full.bump(),
        }
    }

    /// A call refused before it claimed a slot.
    pub(crate) fn refused_unclaimed(&self) {
        self.waits.unclaimed_full.fetch_add(1, Ordering::Relaxed);
    }

    /// A claim ended queued.
    pub(crate) fn queued(&self) {
        self.waits.queued.fetch_add(1, Ordering::Relaxed);
    }

    /// A queued caller took its grant.
    pub(crate) fn granted(&self) {
        self.waits.granted.fetch_add(1, Ordering::Relaxed);
    }

    /// A waiter left without a permit.
    pub fn gave_up(&self, why: GaveUp) {
        let c = match why {
            GaveUp::TimedOut => &self.waits.timed_out,
            GaveUp::Aborted => &self.waits.aborted,
        };
        c.fetch_add(1, Ordering::Relaxed);
    }

    /// The figures, given the claims that had ended when the holder table was
    /// read (just before this call; see the module docs).
    pub(crate) fn read(&self, claims_ended: u64) -> BulkheadTotals {
        let w = &*self.waits;
        let granted = w.granted.load(Ordering::Relaxed);
        let queued = w.queued.load(Ordering::Relaxed);
        let shed = self.shed.sum();
        let full = self.full.sum();
        let computed = claims_ended
            .wrapping_sub(shed)
            .wrapping_sub(full)
            .wrapping_sub(queued)
            .wrapping_add(granted);
        // A figure that wrapped below zero is a read that fell short: none.
        let computed = if computed > claims_ended.wrapping_add(granted) {
            0
        } else {
            computed
        };
        let seen = w.admitted_seen.fetch_max(computed, Ordering::Relaxed);
        BulkheadTotals {
            admitted: seen.max(computed),
            rejected_shed: shed,
            rejected_full: full.wrapping_add(w.unclaimed_full.load(Ordering::Relaxed)),
            rejected_timeout: w.timed_out.load(Ordering::Relaxed),
            aborted: w.aborted.load(Ordering::Relaxed),
        }
    }
}

impl Default for SharedTotals {
    fn default() -> Self {
        Self::new()
    }
}
