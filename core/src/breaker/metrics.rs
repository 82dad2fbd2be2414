//! Lifetime totals and the read-only metrics snapshot of a breaker.

use super::state::State;
use crate::ratio::Ratio;
use crate::sync::{AtomicU64, Ordering};
use crate::window::WindowCounts;

/// Lifetime counters, each its own atomic (relaxed: they are statistics, not
/// synchronisation).
#[repr(C)]
pub(crate) struct Totals {
    pub(crate) admitted: AtomicU64,
    pub(crate) rejected: AtomicU64,
    pub(crate) successes: AtomicU64,
    pub(crate) failures: AtomicU64,
    pub(crate) slow: AtomicU64,
    pub(crate) ignored: AtomicU64,
    pub(crate) stale: AtomicU64,
    pub(crate) transitions: AtomicU64,
}

impl Totals {
    pub(crate) fn new() -> Self {
        Self {
            admitted: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
            successes: AtomicU64::new(0),
            failures: AtomicU64::new(0),
            slow: AtomicU64::new(0),
            ignored: AtomicU64::new(0),
            stale: AtomicU64::new(0),
            transitions: AtomicU64::new(0),
        }
    }

    pub(crate) fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn read(&self) -> BreakerTotals {
        let r = |c: &AtomicU64| c.load(Ordering::Relaxed);
        BreakerTotals {
            admitted: r(&self.admitted),
            rejected: r(&self.rejected),
            successes: r(&self.successes),
            failures: r(&self.failures),
            slow: r(&self.slow),
            ignored: r(&self.ignored),
            stale: r(&self.stale),
            transitions: r(&self.transitions),
        }
    }
}

/// Lifetime totals of a breaker.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct BreakerTotals {
    /// Permits handed out.
    pub admitted: u64,
    /// Acquires refused (open, forced open, half-open full).
    pub rejected: u64,
    /// Outcomes recorded as success (stale ones included).
    pub successes: u64,
    /// Outcomes recorded as failure (stale ones included).
    pub failures: u64,
    /// Successes and failures slower than `slow_call_duration`.
    pub slow: u64,
    /// Outcomes recorded as ignored, dropped permits included.
    pub ignored: u64,
    /// Outcomes whose permit came from an earlier epoch: counted above, and
    /// nowhere else.
    pub stale: u64,
    /// State changes (every new epoch, `reset` included).
    pub transitions: u64,
}

/// A consistent-enough picture of a breaker: the state word is read once, the
/// window and totals right after. Reading changes nothing.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BreakerMetrics {
    /// Current state (`open` until an acquire moves it on).
    pub state: State,
    /// Current epoch.
    pub epoch: u32,
    /// The sliding window of the current closed period (or of the last one while
    /// open / half-open).
    pub window: WindowCounts,
    /// `window.failures / window.calls`; `None` for an empty window.
    pub failure_rate: Option<Ratio>,
    /// `window.slow / window.calls`; `None` for an empty window.
    pub slow_call_rate: Option<Ratio>,
    /// Failures in a row so far (closed only).
    pub consecutive_failures: u32,
    /// Probes in flight (half-open only).
    pub half_open_in_flight: u32,
    /// Successful probes so far (half-open only).
    pub half_open_successes: u32,
    /// Consecutive openings (`k` of DESIGN §3.2; 0 while closed).
    pub openings: u32,
    /// What a rejection in `open` would report now (ns), as
    /// [`CircuitBreaker::retry_after`](super::CircuitBreaker::retry_after).
    pub retry_after_ns: Option<u64>,
    /// Lifetime totals.
    pub totals: BreakerTotals,
}
