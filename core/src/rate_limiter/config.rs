//! Rate limiter configuration (DESIGN §10).

use crate::error::{ConfigError, Field, Problem};
use crate::time::secs;

/// Rate limiter configuration (DESIGN §10, GCRA): `rate` cells per `period_ns`,
/// up to `burst` at once.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RateLimiterConfig {
    /// Cells per period (`1 ..= period_ns`: the emission interval
    /// `⌊period_ns / rate⌋` is at least 1 ns). Default 100.
    pub rate: u64,
    /// The period `rate` is counted over, in nanoseconds (`≥ 1`). Default 1 s.
    pub period_ns: u64,
    /// Cells that may be taken at once by a rested limiter (`≥ 1`). Default 10.
    pub burst: u32,
}

impl RateLimiterConfig {
    /// 100 cells per second, bursts of up to 10 (seawall's choice: DESIGN §10
    /// names no default).
    pub const DEFAULT: Self = Self {
        rate: 100,
        period_ns: secs(1),
        burst: 10,
    };

    /// Check every field.
    pub const fn validate(&self) -> Result<(), ConfigError> {
        if self.rate == 0 {
            return Err(ConfigError::new(Field::Rate, Problem::Zero));
        }
        if self.period_ns == 0 {
            return Err(ConfigError::new(Field::RatePeriod, Problem::Zero));
        }
        if self.burst == 0 {
            return Err(ConfigError::new(Field::Burst, Problem::Zero));
        }
        ConfigError::check_range(Field::Rate, self.rate, 1, self.period_ns)
    }

    /// The emission interval `T = ⌊period_ns / rate⌋` in nanoseconds: one cell
    /// comes back every `T`. 0 when `rate` is 0 (an invalid config).
    #[must_use]
    pub const fn emission_interval_ns(&self) -> u64 {
        match self.period_ns.checked_div(self.rate) {
            Some(t) => t,
            None => 0,
        }
    }

    /// The tolerance `τ = T·(burst − 1)` in nanoseconds, saturating at
    /// `u64::MAX` (a saturated `τ` admits exactly what the exact one does: no
    /// `next − T − now` of a `u64` clock exceeds it).
    #[must_use]
    pub const fn tolerance_ns(&self) -> u64 {
        self.emission_interval_ns()
            .saturating_mul(self.burst.saturating_sub(1) as u64)
    }
}

impl Default for RateLimiterConfig {
    fn default() -> Self {
        Self::DEFAULT
    }
}
