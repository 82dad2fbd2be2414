//! One rate limiter: a single theoretical arrival time shared by every caller.

use crossbeam_utils::CachePadded;

use super::config::RateLimiterConfig;
use super::error::RateLimitError;
use super::gcra::Gcra;
use crate::error::ConfigError;
use crate::sync::{AtomicU64, Ordering};

/// A lock-free GCRA rate limiter (DESIGN §10): `rate` cells per `period_ns`,
/// bursts of up to `burst`, shared by every caller of one dependency. Every
/// method takes the caller's monotonic `now` in nanoseconds.
///
/// `#[repr(C)]`, fixed-size and pointer-free; the configuration is written only
/// by [`new`](Self::new) and the theoretical arrival time is one atomic word, 0
/// for a rested limiter. `size_of::<RateLimiter>()` is 256 bytes on x86-64: the
/// TAT on its own 128-byte line, then 40 bytes of configuration with the
/// emission interval and tolerance, rounded to the 128-byte alignment.
///
/// ```
/// use seawall_core::{RateLimitError, RateLimiter, RateLimiterConfig};
/// use seawall_core::time::millis;
///
/// // 10 cells per second, bursts of 3: T = 100 ms, τ = 200 ms.
/// let limiter = RateLimiter::new(RateLimiterConfig {
///     rate: 10,
///     period_ns: millis(1000),
///     burst: 3,
/// })
/// .unwrap();
/// for _ in 0..3 {
///     assert!(limiter.try_acquire(1, 0).is_ok());
/// }
/// assert_eq!(
///     limiter.try_acquire(1, 0),
///     Err(RateLimitError::Rejected { retry_after_ns: millis(100) })
/// );
/// ```
#[repr(C)]
pub struct RateLimiter {
    tat: CachePadded<AtomicU64>,
    gcra: Gcra,
}

impl RateLimiter {
    /// A rested limiter (a full burst available), or the first invalid field.
    pub fn new(config: RateLimiterConfig) -> Result<Self, ConfigError> {
        Ok(Self {
            tat: CachePadded::new(AtomicU64::new(0)),
            gcra: Gcra::new(config)?,
        })
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &RateLimiterConfig {
        self.gcra.config()
    }

    /// Take `n` cells at `now` (ns), all or none, in one atomic step: `Ok` when
    /// admitted; [`RateLimitError::Rejected`] with the exact retry-after when
    /// over the rate (nothing taken); [`RateLimitError::InvalidCells`] when
    /// `n = 0` or `n > burst`. Never blocks, never allocates.
    // Inline: across crates the call and its returned-through-memory result
    // cost about as much as the check.
    #[inline]
    pub fn try_acquire(&self, n: u32, now: u64) -> Result<(), RateLimitError> {
        self.gcra.acquire(&self.tat, n, now)
    }

    /// The theoretical arrival time (ns of the callers' clock): when the limiter
    /// will be rested again. 0 before the first admission.
    #[must_use]
    pub fn theoretical_arrival_ns(&self) -> u64 {
        self.tat.load(Ordering::Relaxed)
    }
}

impl core::fmt::Debug for RateLimiter {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("RateLimiter")
            .field("config", self.config())
            .field("theoretical_arrival_ns", &self.theoretical_arrival_ns())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::RateLimiter;
    use crate::error::{ConfigError, Field, Problem};
    use crate::rate_limiter::{RateLimitError, RateLimiterConfig};
    use crate::time::millis;
    use std::string::ToString;

    fn limiter(rate: u64, period_ns: u64, burst: u32) -> RateLimiter {
        RateLimiter::new(RateLimiterConfig {
            rate,
            period_ns,
            burst,
        })
        .unwrap()
    }

    fn rejected(retry_after_ns: u64) -> Result<(), RateLimitError> {
        Err(RateLimitError::Rejected { retry_after_ns })
    }

    /// DESIGN §10's oracle: 10 per 1000 ms, burst 3 (T = 100 ms, τ = 200 ms).
    #[test]
    fn design_oracle() {
        let l = limiter(10, millis(1000), 3);
        assert_eq!(l.config().emission_interval_ns(), millis(100));
        assert_eq!(l.config().tolerance_ns(), millis(200));
        // At 0 ms: TAT 0 → 100 → 200 → 300 ms; the fourth has next = 400 ms,
        // 400 − 100 − 0 = 300 > 200: retry after 300 − 200 = 100 ms.
        for tat in [100, 200, 300] {
            assert_eq!(l.try_acquire(1, 0), Ok(()));
            assert_eq!(l.theoretical_arrival_ns(), millis(tat));
        }
        assert_eq!(l.try_acquire(1, 0), rejected(millis(100)));
        assert_eq!(
            l.theoretical_arrival_ns(),
            millis(300),
            "a rejection changes nothing"
        );
        // At 100 ms: next = 400, 400 − 100 − 100 = 200 ≤ 200: admitted; then
        // next = 500, 500 − 100 − 100 = 300: retry after 100 ms.
        assert_eq!(l.try_acquire(1, millis(100)), Ok(()));
        assert_eq!(l.theoretical_arrival_ns(), millis(400));
        assert_eq!(l.try_acquire(1, millis(100)), rejected(millis(100)));
        // After an idle 10 s the burst is whole again.
        let now = millis(10_100);
        for _ in 0..3 {
            assert_eq!(l.try_acquire(1, now), Ok(()));
        }
        assert_eq!(l.try_acquire(1, now), rejected(millis(100)));
        assert_eq!(l.theoretical_arrival_ns(), now + millis(300));
    }

    /// 5 per second, burst 4 (T = 200 ms, τ = 600 ms): n cells at once are n
    /// single takes, all or none.
    #[test]
    fn n_cells_at_once() {
        let l = limiter(5, millis(1000), 4);
        // next = 600, 600 − 200 − 0 = 400 ≤ 600.
        assert_eq!(l.try_acquire(3, 0), Ok(()));
        // next = 1000, 1000 − 200 = 800 > 600: retry after 200 ms; nothing taken.
        assert_eq!(l.try_acquire(2, 0), rejected(millis(200)));
        assert_eq!(l.try_acquire(1, 0), Ok(()));
        assert_eq!(l.theoretical_arrival_ns(), millis(800));
        // n = burst on a rested limiter: next − T − now = τ exactly.
        let now = millis(5_000);
        assert_eq!(l.try_acquire(4, now), Ok(()));
        assert_eq!(l.theoretical_arrival_ns(), now + millis(800));
    }

    #[test]
    fn cells_outside_one_to_burst_are_refused_and_change_nothing() {
        let l = limiter(10, millis(1000), 3);
        let e = l.try_acquire(0, 0).unwrap_err();
        assert_eq!(
            e,
            RateLimitError::InvalidCells(ConfigError {
                field: Field::CellsPerAcquire,
                problem: Problem::Zero
            })
        );
        assert_eq!(e.retry_after_ns(), None);
        let e = l.try_acquire(4, 0).unwrap_err();
        assert_eq!(
            e,
            RateLimitError::InvalidCells(ConfigError {
                field: Field::CellsPerAcquire,
                problem: Problem::OutOfRange { min: 1, max: 3 }
            })
        );
        assert_eq!(
            e.to_string(),
            "invalid rate_limiter.n: must be between 1 and 3"
        );
        assert!(l.try_acquire(u32::MAX, 0).is_err());
        assert_eq!(l.theoretical_arrival_ns(), 0);
        assert_eq!(l.try_acquire(3, 0), Ok(()));
    }

    /// A clock that steps back only makes the test stricter, and the
    /// retry-after counts from the caller's own `now`.
    #[test]
    fn clock_stepping_back() {
        // burst 1, T = τ + T = 100 ms.
        let l = limiter(10, millis(1000), 1);
        assert_eq!(l.try_acquire(1, millis(1000)), Ok(()));
        // At 500 ms: next = 1200, 1200 − 100 − 500 = 600 > 0: conforms at 1100 ms,
        // 600 ms after this caller's now.
        assert_eq!(l.try_acquire(1, millis(500)), rejected(millis(600)));
        assert_eq!(l.try_acquire(1, 0), rejected(millis(1100)));
        assert_eq!(l.try_acquire(1, millis(1100)), Ok(()));
        assert_eq!(l.theoretical_arrival_ns(), millis(1200));
    }

    /// Near the end of the u64 clock: T = 10 ns, burst 2 (τ = 10 ns).
    #[test]
    fn end_of_the_clock() {
        let l = limiter(1, 10, 2);
        let now = u64::MAX - 25;
        // next = MAX − 15: 0 ≤ 10; next = MAX − 5: 20 − 10 = 10 ≤ 10.
        assert_eq!(l.try_acquire(1, now), Ok(()));
        assert_eq!(l.try_acquire(1, now), Ok(()));
        assert_eq!(l.theoretical_arrival_ns(), u64::MAX - 5);
        // next = MAX + 5 is past the clock's end: never.
        assert_eq!(l.try_acquire(1, now), rejected(u64::MAX));
        assert_eq!(l.try_acquire(1, u64::MAX), rejected(u64::MAX));
        assert_eq!(l.theoretical_arrival_ns(), u64::MAX - 5);
        // A rested limiter at MAX − 10 still admits the cell that ends at MAX.
        let l = limiter(1, 10, 1);
        assert_eq!(l.try_acquire(1, u64::MAX - 10), Ok(()));
        assert_eq!(l.theoretical_arrival_ns(), u64::MAX);
        assert_eq!(l.try_acquire(1, u64::MAX), rejected(u64::MAX));
    }

    /// T = `u64::MAX` (one cell per 584 years) and a burst whose τ saturates.
    #[test]
    fn huge_interval_and_burst() {
        let l = limiter(1, u64::MAX, u32::MAX);
        assert_eq!(l.config().tolerance_ns(), u64::MAX);
        assert_eq!(l.try_acquire(1, 0), Ok(()));
        assert_eq!(l.theoretical_arrival_ns(), u64::MAX);
        assert_eq!(l.try_acquire(1, 0), rejected(u64::MAX));
        assert_eq!(l.try_acquire(u32::MAX, 5), rejected(u64::MAX));
    }

    /// period not divisible by rate: T = ⌊1000 / 3⌋ = 333 ns, τ = 333 ns (burst 2).
    #[test]
    fn emission_interval_rounds_down() {
        let l = limiter(3, 1000, 2);
        assert_eq!(l.config().emission_interval_ns(), 333);
        assert_eq!(l.try_acquire(2, 0), Ok(()));
        assert_eq!(l.theoretical_arrival_ns(), 666);
        // next = 999, 999 − 333 − 0 = 666 > 333: retry after 333.
        assert_eq!(l.try_acquire(1, 0), rejected(333));
        assert_eq!(l.try_acquire(1, 332), rejected(1));
        assert_eq!(l.try_acquire(1, 333), Ok(()));
    }
}
