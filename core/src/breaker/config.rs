//! Circuit breaker configuration (DESIGN §3) and its validation.

use super::state::{MAX_CONSECUTIVE_FAILURES, MAX_HALF_OPEN_CALLS};
use crate::error::{ConfigError, Field, Problem};
use crate::ratio::{PPM, Ratio};
use crate::time::secs;
use crate::window::WindowConfig;

/// Everything a [`CircuitBreaker`](super::CircuitBreaker) can be told. Durations are
/// `u64` nanoseconds; `None` turns an optional rule off.
///
/// Build one from [`BreakerConfig::DEFAULT`] with struct-update syntax and let
/// [`CircuitBreaker::new`](super::CircuitBreaker::new) check it:
/// ```
/// use seawall_core::{BreakerConfig, Ratio, WindowConfig, time::millis};
/// let cfg = BreakerConfig {
///     window: WindowConfig::Count { size: 10 },
///     minimum_calls: 10,
///     open_duration_ns: millis(1000),
///     ..BreakerConfig::DEFAULT
/// };
/// assert!(cfg.validate().is_ok());
/// ```
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BreakerConfig {
    /// Sliding window; its kind must match the breaker's window type.
    /// Default: time-based, 10 buckets of 1 s.
    pub window: WindowConfig,
    /// Calls the window must hold before a rate can open the breaker (capped at the
    /// size of a count window). `≥ 1`. Default 20.
    pub minimum_calls: u32,
    /// Open when `failures / calls ≥` this (0 ..= 100 %). `None`: rule off. Default 50 %.
    pub failure_rate_threshold: Option<Ratio>,
    /// Open when `slow / calls ≥` this (0 ..= 100 %). Default 100 %.
    pub slow_call_rate_threshold: Ratio,
    /// A call is slow when its duration is strictly greater (ns). `None` turns the
    /// whole slow-call rule off. Default `None`.
    pub slow_call_duration_ns: Option<u64>,
    /// Open after this many failures in a row (`1 ..= 4 194 303`). `None`: off (default).
    pub consecutive_failures: Option<u32>,
    /// How long the first opening lasts (ns, `≥ 1`). Default 30 s.
    pub open_duration_ns: u64,
    /// Each consecutive opening lasts this many times the previous one (`≥ 1.0`).
    /// Default 1 (off).
    pub open_backoff_multiplier: Ratio,
    /// Upper bound of an opening (ns, `≥ open_duration_ns`). `None`: uncapped.
    /// Default 5 min.
    pub max_open_duration_ns: Option<u64>,
    /// Each opening lasts `d · U[1 − f, 1 + f]` (`0 ..= 1.0`). Default 0.
    pub open_jitter_factor: Ratio,
    /// Probes in flight at once in `half_open` (`1 ..= 2047`). Default 1.
    pub half_open_max_calls: u32,
    /// Successful probes that close the breaker (`1 ..= 2047`). Default 1.
    pub half_open_success_threshold: u32,
    /// A `half_open` episode with no decision after this long (ns, `≥ 1`) reopens at
    /// the next acquire. `None`: wait forever (default).
    pub half_open_max_wait_ns: Option<u64>,
    /// Seed of the open-duration jitter (a deterministic function of the seed and
    /// the opening's epoch). Bindings seed it from OS entropy.
    pub jitter_seed: u64,
}

impl BreakerConfig {
    /// The defaults of DESIGN §3.
    pub const DEFAULT: Self = Self {
        window: WindowConfig::DEFAULT,
        minimum_calls: 20,
        failure_rate_threshold: Some(Ratio::from_percent(50)),
        slow_call_rate_threshold: Ratio::ONE,
        slow_call_duration_ns: None,
        consecutive_failures: None,
        open_duration_ns: secs(30),
        open_backoff_multiplier: Ratio::ONE,
        max_open_duration_ns: Some(secs(300)),
        open_jitter_factor: Ratio::ZERO,
        half_open_max_calls: 1,
        half_open_success_threshold: 1,
        half_open_max_wait_ns: None,
        jitter_seed: 0x5EA_3A11,
    };

    /// Check every field except the window (which the window type checks).
    pub const fn validate(&self) -> Result<(), ConfigError> {
        if self.minimum_calls == 0 {
            return Err(ConfigError::new(Field::MinimumCalls, Problem::Zero));
        }
        if let Some(t) = self.failure_rate_threshold
            && t.ppm() > PPM
        {
            return Err(ConfigError::range(Field::FailureRateThreshold, 0, PPM));
        }
        if self.slow_call_rate_threshold.ppm() > PPM {
            return Err(ConfigError::range(Field::SlowCallRateThreshold, 0, PPM));
        }
        if let Some(n) = self.consecutive_failures {
            if n == 0 {
                return Err(ConfigError::new(Field::ConsecutiveFailures, Problem::Zero));
            }
            if n > MAX_CONSECUTIVE_FAILURES {
                return Err(ConfigError::range(
                    Field::ConsecutiveFailures,
                    1,
                    MAX_CONSECUTIVE_FAILURES as u64,
                ));
            }
        }
        if self.open_duration_ns == 0 {
            return Err(ConfigError::new(Field::OpenDuration, Problem::Zero));
        }
        if self.open_backoff_multiplier.ppm() < PPM {
            return Err(ConfigError::range(
                Field::OpenBackoffMultiplier,
                PPM,
                u64::MAX,
            ));
        }
        if let Some(max) = self.max_open_duration_ns
            && max < self.open_duration_ns
        {
            return Err(ConfigError::new(
                Field::MaxOpenDuration,
                Problem::BelowField(Field::OpenDuration),
            ));
        }
        if self.open_jitter_factor.ppm() > PPM {
            return Err(ConfigError::range(Field::OpenJitterFactor, 0, PPM));
        }
        if let Err(e) = check_count(Field::HalfOpenMaxCalls, self.half_open_max_calls) {
            return Err(e);
        }
        if let Err(e) = check_count(
            Field::HalfOpenSuccessThreshold,
            self.half_open_success_threshold,
        ) {
            return Err(e);
        }
        if let Some(0) = self.half_open_max_wait_ns {
            return Err(ConfigError::new(Field::HalfOpenMaxWait, Problem::Zero));
        }
        Ok(())
    }
}

impl Default for BreakerConfig {
    fn default() -> Self {
        Self::DEFAULT
    }
}

const fn check_count(field: Field, n: u32) -> Result<(), ConfigError> {
    if n == 0 {
        return Err(ConfigError::new(field, Problem::Zero));
    }
    if n > MAX_HALF_OPEN_CALLS {
        return Err(ConfigError::range(field, 1, MAX_HALF_OPEN_CALLS as u64));
    }
    Ok(())
}
