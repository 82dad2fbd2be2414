//! Units and errors at the JavaScript edge: milliseconds ↔ nanoseconds and
//! percentages and factors ↔ parts per million (the rounding rule of
//! `seawall_host::units`), core errors → JS errors that name the option in the
//! JavaScript API's words and units.

use seawall_core::{ConfigError, Field, Problem, Ratio};
use seawall_host::shared::{RegionError, mismatch_message};
use seawall_host::units::percent_of_ratio;

pub use crate::boundary::config_error;
use crate::boundary::{Code, Error, error, invalid};

// The JS layer refuses negative, NaN and infinite values before they get here;
// the host's conversions are total anyway (negative and NaN → 0, saturating).
pub use seawall_host::units::{
    ms_to_ns, ns_to_ms, ratio_of_factor as factor, ratio_of_percent as percent,
};

/// A JS-side optional duration: negative means "rule off" (the JS layer sends -1
/// for `null`), absent means "default".
#[must_use]
pub fn rule_ms(v: Option<f64>, default: Option<u64>) -> Option<u64> {
    match v {
        None => default,
        Some(ms) if ms < 0.0 => None,
        Some(ms) => Some(ms_to_ns(ms)),
    }
}

/// A JS count (already checked to be a non-negative integer by the JS layer),
/// saturating into `u32`.
#[must_use]
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "clamped to the u32 range first"
)]
pub fn count(v: f64) -> u32 {
    if v.is_nan() || v <= 0.0 {
        0
    } else if v >= f64::from(u32::MAX) {
        u32::MAX
    } else {
        v as u32
    }
}

/// How a field's core value reads in JavaScript.
#[derive(Clone, Copy)]
enum Unit {
    Count,
    Ms,
    Percent,
    Factor,
}

/// The JavaScript option a core field comes from, and its unit there.
fn js_field(field: Field) -> (&'static str, Unit) {
    use Unit::{Count, Factor, Ms, Percent};
    match field {
        Field::WindowSize => ("window.size", Count),
        Field::WindowBuckets => ("window.buckets", Count),
        Field::WindowBucketWidth => ("window.bucketMs", Ms),
        Field::WindowKind => ("window.kind", Count),
        Field::MinimumCalls => ("minimumCalls", Count),
        Field::FailureRateThreshold => ("failureRateThreshold", Percent),
        Field::SlowCallRateThreshold => ("slowCallRateThreshold", Percent),
        Field::SlowCallDuration => ("slowCallDurationMs", Ms),
        Field::ConsecutiveFailures => ("consecutiveFailures", Count),
        Field::OpenDuration => ("openDurationMs", Ms),
        Field::OpenBackoffMultiplier => ("openBackoffMultiplier", Factor),
        Field::MaxOpenDuration => ("maxOpenDurationMs", Ms),
        Field::OpenJitterFactor => ("openJitterFactor", Factor),
        Field::HalfOpenMaxCalls => ("halfOpenMaxCalls", Count),
        Field::HalfOpenSuccessThreshold => ("halfOpenSuccessThreshold", Count),
        Field::HalfOpenMaxWait => ("halfOpenMaxWaitMs", Ms),
        Field::DeadlineTotal => ("totalMs", Ms),
        Field::BackoffBase => ("backoff.baseMs", Ms),
        Field::BackoffMultiplier => ("backoff.multiplier", Factor),
        Field::BackoffMax => ("backoff.maxMs", Ms),
        Field::JitterFactor => ("backoff.jitterFactor", Factor),
        Field::MaxAttempts => ("attempts", Count),
        Field::RetryBudgetTtl => ("ttlMs", Ms),
        Field::PercentCanRetry => ("percentCanRetry", Percent),
        Field::MinRetriesPerSec => ("minRetriesPerSec", Count),
        Field::MaxTokens => ("maxTokens", Count),
        Field::TokenRatio => ("tokenRatio", Count),
        Field::MaxConcurrent => ("maxConcurrent", Count),
        Field::MaxQueue => ("maxQueue", Count),
        Field::PriorityShares => ("shares", Percent),
        Field::HealthBuckets => ("buckets", Count),
        Field::HealthBucketWidth => ("bucketMs", Ms),
        Field::DegradedErrorRate => ("degradedErrorRate", Percent),
        Field::UnhealthyErrorRate => ("unhealthyErrorRate", Percent),
        Field::DegradedP99 => ("degradedP99Ms", Ms),
        Field::UnhealthyP99 => ("unhealthyP99Ms", Ms),
        Field::Rate => ("rate", Count),
        Field::RatePeriod => ("perMs", Ms),
        Field::Burst => ("burst", Count),
        Field::CellsPerAcquire => ("n", Count),
        Field::PermitSlots => ("permitSlots", Count),
        _ => (field.name(), Count),
    }
}

fn in_unit(v: u64, unit: Unit) -> String {
    match unit {
        Unit::Count => v.to_string(),
        Unit::Ms => format!("{} ms", ns_to_ms(v)),
        Unit::Percent => format!("{} %", percent_of_ratio(Ratio::from_ppm(v))),
        Unit::Factor => format!("{}", v as f64 / 1e6),
    }
}

/// The JavaScript option a core configuration error is about, and what is
/// wrong with it, in the JavaScript API's names and units.
#[must_use]
pub fn describe(e: ConfigError) -> (&'static str, String) {
    let (name, unit) = js_field(e.field);
    let problem = match e.problem {
        Problem::Zero => "must not be zero".to_owned(),
        Problem::OutOfRange { min, max } if max == u64::MAX => {
            format!("must be at least {}", in_unit(min, unit))
        }
        Problem::OutOfRange { min, max } => format!(
            "must be between {} and {}",
            in_unit(min, unit),
            in_unit(max, unit)
        ),
        Problem::BelowField(other) => {
            format!("must not be less than {}", js_field(other).0)
        }
        Problem::KindMismatch => "does not match the window type".to_owned(),
        Problem::NotOneOf(allowed) => {
            let allowed: Vec<String> = allowed.iter().map(u64::to_string).collect();
            format!("must be one of {}", allowed.join(", "))
        }
        Problem::CapUnreachable { max_steps } => format!(
            "the delay must reach backoff.maxMs or stop growing within {max_steps} attempts"
        ),
        _ => e.to_string(),
    };
    (name, problem)
}

/// The error for a shared region that could not be opened: `ESHAREDMISMATCH`
/// (another configuration, layout or ABI), `EINVALIDCONFIG` (bad name, field
/// `shared`, or configuration), or `ESHARED` (I/O, timeout, no lock-free
/// atomics).
#[must_use]
pub fn region_error(e: RegionError) -> Error {
    match e {
        RegionError::Config(c) => config_error(c),
        RegionError::BadName(_) => invalid("shared", &e.to_string()),
        // Named as JavaScript spells the options, not as DESIGN.md does.
        RegionError::ConfigMismatch { differing, .. } => {
            let names: Vec<&str> = differing.iter().map(|f| js_field(*f).0).collect();
            error(Code::SharedMismatch, mismatch_message(&names))
        }
        RegionError::VersionMismatch(_) | RegionError::LayoutMismatch { .. } => {
            error(Code::SharedMismatch, e.to_string())
        }
        RegionError::Untrusted { .. } => error(Code::Shared("untrusted"), e.to_string()),
        RegionError::Timeout { .. } => error(Code::Shared("timeout"), e.to_string()),
        RegionError::NotLockFree => error(Code::Shared("notLockFree"), e.to_string()),
        RegionError::Io { .. }
        | RegionError::NotARegion(_)
        | RegionError::Misaligned { .. }
        | RegionError::TooSmall { .. } => error(Code::Shared("io"), e.to_string()),
    }
}
