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
        }
    }
}

impl core::error::Error for ConfigError {}
