//! Units at the edges: the core counts `u64` nanoseconds and parts per million
//! (DESIGN §0); Python speaks seconds, Node and the conformance scenarios
//! milliseconds, all three percentages and factors as floats. One rounding rule for
//! all of them: to the nearest whole unit, halves away from zero, saturating at
//! `u64::MAX`; a negative or NaN value maps to 0. Callers that must refuse such a
//! value check it first with [`is_non_negative`]. The one exception is gRPC's
//! token counts, which A6 truncates ([`milli_tokens`]).

use seawall_core::{MILLI, Ratio};

/// Whether `x` is a finite number ≥ 0: the values the conversions below map
/// without clamping (bindings turn anything else into a configuration error).
#[must_use]
pub fn is_non_negative(x: f64) -> bool {
    x.is_finite() && x >= 0.0
}

/// `x` rounded to the nearest whole number, halves away from zero; negative and
/// NaN → 0, at or above 2⁶⁴ (and +∞) → `u64::MAX`.
#[must_use]
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "the value is checked to lie in 0 ..< 2^64 before the cast"
)]
pub fn round_to_u64(x: f64) -> u64 {
    // 2^64 is exactly representable; every f64 below it rounds to at most u64::MAX.
    const TWO_POW_64: f64 = 18_446_744_073_709_551_616.0;
    if x.is_nan() || x <= 0.0 {
        return 0;
    }
    let r = x.round();
    if r >= TWO_POW_64 { u64::MAX } else { r as u64 }
}

/// Seconds (Python) → nanoseconds.
#[must_use]
pub fn secs_to_ns(secs: f64) -> u64 {
    round_to_u64(secs * 1e9)
}

/// Milliseconds (Node, scenarios) → nanoseconds.
#[must_use]
pub fn ms_to_ns(ms: f64) -> u64 {
    round_to_u64(ms * 1e6)
}

/// Nanoseconds → seconds.
#[must_use]
pub fn ns_to_secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// Nanoseconds → milliseconds.
#[must_use]
pub fn ns_to_ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// A percentage (`50.0` is one half) → a ratio in parts per million.
#[must_use]
pub fn ratio_of_percent(percent: f64) -> Ratio {
    Ratio::from_ppm(round_to_u64(percent * 10_000.0))
}

/// A factor (`1.5`) → a ratio in parts per million.
#[must_use]
pub fn ratio_of_factor(factor: f64) -> Ratio {
    Ratio::from_ppm(round_to_u64(factor * 1e6))
}

/// A token count (gRPC retry throttling, A6: `maxTokens` and `tokenRatio`
/// keep 3 decimals) → whole thousandths, truncated as A6 says. The small
/// epsilon keeps `0.1 · 1000 = 99.999…` from truncating to 99; negative and NaN
/// → 0, saturating at `u32::MAX`.
#[must_use]
pub fn milli_tokens(tokens: f64) -> u32 {
    let thousandths = round_to_u64((tokens * f64::from(MILLI) + 1e-6).floor());
    u32::try_from(thousandths).unwrap_or(u32::MAX)
}

/// A ratio → a percentage, for messages and metrics.
#[must_use]
pub fn percent_of_ratio(r: Ratio) -> f64 {
    r.ppm() as f64 / 10_000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_to_nearest_and_saturates() {
        assert_eq!(round_to_u64(0.4), 0);
        assert_eq!(round_to_u64(0.5), 1);
        assert_eq!(round_to_u64(2.5), 3);
        assert_eq!(round_to_u64(-3.0), 0);
        assert_eq!(round_to_u64(f64::NAN), 0);
        assert_eq!(round_to_u64(f64::INFINITY), u64::MAX);
        assert_eq!(round_to_u64(1e30), u64::MAX);
        // The largest f64 below 2^64 is 2^64 - 2048.
        assert_eq!(round_to_u64(18_446_744_073_709_549_568.0), u64::MAX - 2047);
    }

    #[test]
    fn durations_in_each_unit() {
        assert_eq!(secs_to_ns(1.5), 1_500_000_000);
        assert_eq!(secs_to_ns(1e-9), 1);
        assert_eq!(secs_to_ns(4e-10), 0);
        assert_eq!(ms_to_ns(2.5), 2_500_000);
        assert_eq!(ms_to_ns(0.000_000_6), 1);
        assert!((ns_to_secs(250_000_000) - 0.25).abs() < f64::EPSILON);
        assert!((ns_to_ms(1_500_000) - 1.5).abs() < f64::EPSILON);
    }

    #[test]
    fn token_counts_truncate_to_thousandths() {
        assert_eq!(milli_tokens(0.1), 100);
        assert_eq!(milli_tokens(10.0), 10_000);
        assert_eq!(milli_tokens(0.1239), 123);
        assert_eq!(milli_tokens(-1.0), 0);
        assert_eq!(milli_tokens(1e12), u32::MAX);
    }

    #[test]
    fn percentages_and_factors_in_ppm() {
        assert_eq!(ratio_of_percent(50.0).ppm(), 500_000);
        assert_eq!(ratio_of_percent(0.00005).ppm(), 1);
        assert_eq!(ratio_of_percent(33.33333).ppm(), 333_333);
        assert_eq!(ratio_of_factor(1.5).ppm(), 1_500_000);
        assert!((percent_of_ratio(Ratio::from_ppm(125_000)) - 12.5).abs() < f64::EPSILON);
        assert!(!is_non_negative(-0.1) && !is_non_negative(f64::INFINITY));
        assert!(is_non_negative(0.0));
    }
}
