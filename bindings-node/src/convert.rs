//! Units and errors at the JavaScript edge: milliseconds ↔ nanoseconds,
//! percentages and factors ↔ parts per million, core errors → JS errors that
//! name the option in the JavaScript API's words and units.

use napi::{Error, Status};
use seawall_core::{ConfigError, Field, Problem, Ratio};
use seawall_host::shared::RegionError;

/// `f64` milliseconds to whole nanoseconds, rounded to nearest; negative and NaN
/// become 0, huge values saturate (the JS layer rejects those before they get
/// here; this only keeps the conversion total).
#[must_use]
pub fn ms_to_ns(ms: f64) -> u64 {
    round_u64(ms * 1e6)
}

/// A float rounded to the nearest whole number, clamped to `0 ..= u64::MAX`.
#[must_use]
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "clamped to 0 ..= u64::MAX first; `as` saturates"
)]
pub fn round_u64(x: f64) -> u64 {
    let r = x.round();
    if r.is_nan() || r <= 0.0 { 0 } else { r as u64 }
}

/// Nanoseconds to `f64` milliseconds (exact below 2⁵³ ns, about 104 days).
#[must_use]
pub fn ns_to_ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

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

/// A percentage `0 ..= 100` (fractions allowed) as a ratio, to the nearest ppm.
#[must_use]
pub fn percent(p: f64) -> Ratio {
    Ratio::from_ppm(round_u64(p * 10_000.0))
}

/// A plain factor (1.5, 0.2) as a ratio, to the nearest ppm.
#[must_use]
pub fn factor(f: f64) -> Ratio {
    Ratio::from_ppm(round_u64(f * 1e6))
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
        _ => (field.name(), Count),
    }
}

fn in_unit(v: u64, unit: Unit) -> String {
    match unit {
        Unit::Count => v.to_string(),
        Unit::Ms => format!("{} ms", ns_to_ms(v)),
        Unit::Percent => format!("{} %", v as f64 / 10_000.0),
        Unit::Factor => format!("{}", v as f64 / 1e6),
    }
}

/// The thrown error for an invalid configuration: message `"<option>: <problem>"`.
#[must_use]
pub fn config_error(e: ConfigError) -> Error {
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
        Problem::CapUnreachable { max_steps } => format!(
            "the delay must reach backoff.maxMs or stop growing within {max_steps} attempts"
        ),
        _ => e.to_string(),
    };
    Error::new(Status::InvalidArg, format!("{name}: {problem}"))
}

/// The thrown error for a shared region that could not be opened. The message
/// starts with a code the JS layer keeps: `ESHAREDMISMATCH` (another
/// configuration, layout or ABI), `EINVALIDCONFIG` (bad name or configuration),
/// or `ESHARED` (I/O, timeout, no lock-free atomics).
#[must_use]
pub fn region_error(e: RegionError) -> Error {
    match e {
        RegionError::Config(c) => config_error(c),
        RegionError::BadName(_) => Error::new(Status::InvalidArg, format!("shared: {e}")),
        RegionError::ConfigMismatch { .. }
        | RegionError::VersionMismatch(_)
        | RegionError::LayoutMismatch { .. } => {
            Error::new(Status::GenericFailure, format!("ESHAREDMISMATCH {e}"))
        }
        other => Error::new(Status::GenericFailure, format!("ESHARED {other}")),
    }
}
