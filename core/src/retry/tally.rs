//! Lifetime totals of a retry gate's verdicts (DESIGN §8, "One set of
//! totals"): kept inside the budget or throttle, so a shared one counts the
//! retries of every process in its own memory. A verdict is given once per
//! failed call, never on the path of a call that succeeds.

use crate::sync::{AtomicU64, Ordering};

/// Retries a budget or throttle allowed and refused since it was made.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct RetryTotals {
    /// Verdicts that let a retry go ahead.
    pub allowed: u64,
    /// Verdicts that refused one.
    pub refused: u64,
}

/// The two counts (any values are valid: statistics).
#[repr(C)]
pub(crate) struct Tally {
    allowed: AtomicU64,
    refused: AtomicU64,
}

impl Tally {
    pub(crate) fn new() -> Self {
        Self {
            allowed: AtomicU64::new(0),
            refused: AtomicU64::new(0),
        }
    }

    /// Count `verdict` (`true`: allowed) and return it.
    pub(crate) fn count(&self, verdict: bool) -> bool {
        let c = if verdict {
            &self.allowed
        } else {
            &self.refused
        };
        c.fetch_add(1, Ordering::Relaxed);
        verdict
    }

    pub(crate) fn read(&self) -> RetryTotals {
        RetryTotals {
            allowed: self.allowed.load(Ordering::Relaxed),
            refused: self.refused.load(Ordering::Relaxed),
        }
    }
}
