//! Lifetime totals and the read-only metrics snapshot of a breaker.

use super::state::State;
use crate::ratio::Ratio;
use crate::striped::StripedCounter;
use crate::sync::{AtomicU64, Ordering};
use crate::window::WindowCounts;

/// Lifetime counters, each its own atomic (relaxed: they are statistics, not
/// synchronisation; the two probe counters order their reads, see `read`).
///
/// `admitted` is not a counter: a closed acquire writes nothing, so its permit is
/// counted when its outcome is. Only half-open probes are counted when admitted
/// (`probes_admitted`), since the probe slot is taken then, and their records in
/// `probes_recorded` (a probe's epoch is odd, see `state::next_epoch`); so
/// `admitted = successes + failures + ignored + probes_admitted − probes_recorded`,
/// exact whenever no record is half-way, and growing by one per closed record or
/// probe admission. Likewise a success the window keeps is counted there only
/// (`SlidingWindow::successes`, folded as buckets rotate out): `successes` here
/// holds the others (stale, disabled, probes, dropped by the window, count windows).
///
/// `rejected` is striped: a rejection writes nothing else, so under load on an
/// open breaker one shared counter line would be all a rejection costs.
#[repr(C)]
pub(crate) struct Totals {
    pub(crate) rejected: StripedCounter,
    pub(crate) probes_admitted: AtomicU64,
    pub(crate) successes: AtomicU64,
    pub(crate) failures: AtomicU64,
    pub(crate) slow: AtomicU64,
    pub(crate) ignored: AtomicU64,
    pub(crate) stale: AtomicU64,
    pub(crate) transitions: AtomicU64,
    pub(crate) probes_recorded: AtomicU64,
}

impl Totals {
    pub(crate) fn new() -> Self {
        Self {
            rejected: StripedCounter::new(),
            probes_admitted: AtomicU64::new(0),
            successes: AtomicU64::new(0),
            failures: AtomicU64::new(0),
            slow: AtomicU64::new(0),
            ignored: AtomicU64::new(0),
            stale: AtomicU64::new(0),
            transitions: AtomicU64::new(0),
            probes_recorded: AtomicU64::new(0),
        }
    }

    pub(crate) fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// A bump of a probe counter, ordered with the other counters' (see `read`).
    pub(crate) fn bump_ordered(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::AcqRel);
    }

    /// The totals, the successes the window keeps (`kept`) added in.
    pub(crate) fn read(&self, kept: u64) -> BreakerTotals {
        let r = |c: &AtomicU64| c.load(Ordering::Relaxed);
        // Probe records first, admissions last (acquire): every probe record read
        // was admitted before it, so the difference is never negative for honest
        // writers.
        let probes_recorded = self.probes_recorded.load(Ordering::Acquire);
        let successes = r(&self.successes).wrapping_add(kept);
        let failures = r(&self.failures);
        let ignored = r(&self.ignored);
        let probes_admitted = self.probes_admitted.load(Ordering::Acquire);
        // Wrapping and saturating: a corrupted region may hold anything.
        let probes_out = probes_admitted.saturating_sub(probes_recorded);
        BreakerTotals {
            admitted: successes
                .wrapping_add(failures)
                .wrapping_add(ignored)
                .wrapping_add(probes_out),
            rejected: self.rejected.sum(),
            successes,
            failures,
            slow: r(&self.slow),
            ignored,
            stale: r(&self.stale),
            transitions: r(&self.transitions),
        }
    }
}

/// Lifetime totals of a breaker.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct BreakerTotals {
    /// Permits handed out: a half-open probe from its acquire on, any other permit
    /// once its outcome is recorded (a closed or disabled acquire writes nothing;
    /// the host's permit table counts those in flight). Always
    /// `successes + failures + ignored` plus the probes in flight.
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
