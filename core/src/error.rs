//! Configuration errors: every invalid value is refused at construction, with the
//! field named in DESIGN.md's words, never by a panic later.

use core::fmt;

/// A configuration field, named as in DESIGN.md (`Display` prints that name).
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Field {
    /// `window.size` of a count-based window.
    WindowSize,
    /// `window.buckets` of a time-based window.
    WindowBuckets,
    /// `window.bucket_ms` of a time-based window (nanoseconds in the core).
    WindowBucketWidth,
    /// `window.kind` did not match the window type the breaker was built with.
    WindowKind,
    /// `minimum_calls`.
    MinimumCalls,
    /// `failure_rate_threshold`.
    FailureRateThreshold,
    /// `slow_call_rate_threshold`.
    SlowCallRateThreshold,
    /// `slow_call_duration`.
    SlowCallDuration,
    /// `consecutive_failures`.
    ConsecutiveFailures,
    /// `open_duration`.
    OpenDuration,
    /// `open_backoff_multiplier`.
    OpenBackoffMultiplier,
    /// `max_open_duration`.
    MaxOpenDuration,
    /// `open_jitter_factor`.
    OpenJitterFactor,
    /// `half_open_max_calls`.
    HalfOpenMaxCalls,
    /// `half_open_success_threshold`.
    HalfOpenSuccessThreshold,
    /// `half_open_max_wait`.
    HalfOpenMaxWait,
    /// `total` of a deadline.
    DeadlineTotal,
    /// `base` of a backoff.
    BackoffBase,
    /// `multiplier` of a backoff.
    BackoffMultiplier,
    /// `max` (the cap) of a backoff.
    BackoffMax,
    /// `jitter_factor` of proportional jitter.
    JitterFactor,
    /// `max_attempts` of a retry policy.
    MaxAttempts,
    /// `ttl` of a retry budget.
    RetryBudgetTtl,
    /// `percent_can_retry` of a retry budget.
    PercentCanRetry,
    /// `min_retries_per_sec` of a retry budget (every value is valid: named only
    /// when processes sharing a budget disagree on it).
    MinRetriesPerSec,
    /// `max_tokens` of a retry throttle.
    MaxTokens,
    /// `token_ratio` of a retry throttle.
    TokenRatio,
    /// `max_concurrent` of a semaphore.
    MaxConcurrent,
    /// `max_queue` of a semaphore.
    MaxQueue,
    /// `priority_shares` of a semaphore.
    PriorityShares,
    /// `buckets` of a health window.
    HealthBuckets,
    /// `bucket_ms` of a health window (nanoseconds in the core).
    HealthBucketWidth,
    /// `degraded_error_rate` of a health rule.
    DegradedErrorRate,
    /// `unhealthy_error_rate` of a health rule.
    UnhealthyErrorRate,
    /// `degraded_p99` of a health rule.
    DegradedP99,
    /// `unhealthy_p99` of a health rule.
    UnhealthyP99,
    /// `rate` of a rate limiter (cells per period).
    Rate,
    /// `period` of a rate limiter (nanoseconds in the core).
    RatePeriod,
    /// `burst` of a rate limiter.
    Burst,
    /// `n`, the cells one rate-limiter acquire takes (`1 ..= burst`).
    CellsPerAcquire,
    /// `N`, the slots of a keyed rate limiter's table.
    RateLimiterSlots,
    /// `permit_slots` of a shared breaker: its permit table's size.
    PermitSlots,
}

impl Field {
    /// The DESIGN.md name of the field.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::WindowSize => "window.size",
            Self::WindowBuckets => "window.buckets",
            Self::WindowBucketWidth => "window.bucket_width",
            Self::WindowKind => "window.kind",
            Self::MinimumCalls => "minimum_calls",
            Self::FailureRateThreshold => "failure_rate_threshold",
            Self::SlowCallRateThreshold => "slow_call_rate_threshold",
            Self::SlowCallDuration => "slow_call_duration",
            Self::ConsecutiveFailures => "consecutive_failures",
            Self::OpenDuration => "open_duration",
            Self::OpenBackoffMultiplier => "open_backoff_multiplier",
            Self::MaxOpenDuration => "max_open_duration",
            Self::OpenJitterFactor => "open_jitter_factor",
            Self::HalfOpenMaxCalls => "half_open_max_calls",
            Self::HalfOpenSuccessThreshold => "half_open_success_threshold",
            Self::HalfOpenMaxWait => "half_open_max_wait",
            Self::DeadlineTotal => "deadline.total",
            Self::BackoffBase => "backoff.base",
            Self::BackoffMultiplier => "backoff.multiplier",
            Self::BackoffMax => "backoff.max",
            Self::JitterFactor => "backoff.jitter_factor",
            Self::MaxAttempts => "max_attempts",
            Self::RetryBudgetTtl => "retry_budget.ttl",
            Self::PercentCanRetry => "retry_budget.percent_can_retry",
            Self::MinRetriesPerSec => "retry_budget.min_retries_per_sec",
            Self::MaxTokens => "retry_throttle.max_tokens",
            Self::TokenRatio => "retry_throttle.token_ratio",
            Self::MaxConcurrent => "semaphore.max_concurrent",
            Self::MaxQueue => "semaphore.max_queue",
            Self::PriorityShares => "semaphore.priority_shares",
            Self::HealthBuckets => "health.buckets",
            Self::HealthBucketWidth => "health.bucket_width",
            Self::DegradedErrorRate => "health.degraded_error_rate",
            Self::UnhealthyErrorRate => "health.unhealthy_error_rate",
            Self::DegradedP99 => "health.degraded_p99",
            Self::UnhealthyP99 => "health.unhealthy_p99",
            Self::Rate => "rate_limiter.rate",
            Self::RatePeriod => "rate_limiter.period",
            Self::Burst => "rate_limiter.burst",
            Self::CellsPerAcquire => "rate_limiter.n",
            Self::RateLimiterSlots => "rate_limiter.slots",
            Self::PermitSlots => "breaker.permit_slots",
        }
    }
}

/// What is wrong with the field's value.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Problem {
    /// Zero where at least one is needed.
    Zero,
    /// Outside `min ..= max` (in the field's own unit: ppm for ratios, ns for durations).
    OutOfRange {
        /// Smallest accepted value.
        min: u64,
        /// Largest accepted value.
        max: u64,
    },
    /// Smaller than another field it must not undercut.
    BelowField(Field),
    /// The window kind of the config differs from the breaker's window type.
    KindMismatch,
    /// A backoff multiplier above 1 so close to 1 that the delay neither reaches
    /// the cap nor stops growing within `max_steps` attempts (the delay of an
    /// attempt is computed step by step, so this bounds its cost).
    CapUnreachable {
        /// Attempts allowed to reach the cap.
        max_steps: u64,
    },
    /// Not one of the few values a fixed-size structure comes in.
    NotOneOf(&'static [u64]),
}

/// An invalid configuration value: which field, and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ConfigError {
    /// The offending field.
    pub field: Field,
    /// What is wrong with it.
    pub problem: Problem,
}

impl ConfigError {
    pub(crate) const fn new(field: Field, problem: Problem) -> Self {
        Self { field, problem }
    }

    pub(crate) const fn range(field: Field, min: u64, max: u64) -> Self {
        Self::new(field, Problem::OutOfRange { min, max })
    }

    /// `Err` unless `min <= value <= max`.
    pub(crate) const fn check_range(
        field: Field,
        value: u64,
        min: u64,
        max: u64,
    ) -> Result<(), Self> {
        if value < min || value > max {
            return Err(Self::range(field, min, max));
        }
        Ok(())
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self.field.name();
        match self.problem {
            Problem::Zero => write!(f, "invalid {name}: must not be zero"),
            Problem::OutOfRange { min, max } => {
                write!(f, "invalid {name}: must be between {min} and {max}")
            }
            Problem::BelowField(other) => {
                write!(f, "invalid {name}: must not be less than {}", other.name())
            }
            Problem::KindMismatch => {
                write!(
                    f,
                    "invalid {name}: does not match the breaker's window type"
                )
            }
            Problem::CapUnreachable { max_steps } => write!(
                f,
                "invalid {name}: the delay must reach the cap or stop growing within {max_steps} attempts"
            ),
            Problem::NotOneOf(allowed) => {
                write!(f, "invalid {name}: must be one of")?;
                for (i, v) in allowed.iter().enumerate() {
                    write!(f, "{}{v}", if i == 0 { " " } else { ", " })?;
                }
                Ok(())
            }
        }
    }
}

impl core::error::Error for ConfigError {}
