//! The fields of every core configuration a binding exposes, by name, so that
//! each binding can check its own option table against the core: a field added
//! to a core config fails to compile here until it is named, and then fails the
//! bindings' option tests until each binding says which option sets it (or that
//! none does). Nested fields are dotted (`window.time.buckets`,
//! `shares.critical`).
//!
//! Also the defaults of options that belong to no core structure but must agree
//! across bindings.

use seawall_core::{
    BreakerConfig, HealthConfig, PriorityShares, RetryBudgetConfig, RetryThrottleConfig,
    SemaphoreConfig, WindowConfig,
};

/// Entries a stale-if-error cache keeps when the caller does not say (Python's
/// `StaleCache(maxsize=…)`, Node's `staleCache: { max }`): the least recently
/// stored key goes first.
pub const STALE_CACHE_MAX_ENTRIES: u32 = 1024;

/// The names of the fields of `$ty` (each after `$prefix`), in declaration
/// order. A value of the type (`$value`, default `$ty::DEFAULT`) is destructured
/// by a pattern that lists every field without `..`, so a field the list forgets
/// does not compile; the names are made from the same tokens, so the list and
/// the pattern cannot disagree.
macro_rules! field_names {
    ($ty:ident { $($field:ident),* $(,)? }) => {
        field_names!($ty::DEFAULT, "", $ty { $($field),* })
    };
    ($value:expr, $prefix:literal, $ty:ident { $($field:ident),* $(,)? }) => {{
        let $ty { $($field: _),* } = $value;
        [$(concat!($prefix, stringify!($field))),*]
    }};
}

/// The sliding window's fields, one group per window kind. A new kind fails the
/// `match`; a new field of a kind fails its pattern.
fn window_fields() -> Vec<&'static str> {
    let mut names = Vec::new();
    for kind in [
        WindowConfig::Count { size: 0 },
        WindowConfig::Time {
            buckets: 0,
            bucket_width_ns: 0,
        },
    ] {
        match kind {
            WindowConfig::Count { size: _ } => names.push("window.count.size"),
            WindowConfig::Time {
                buckets: _,
                bucket_width_ns: _,
            } => names.extend(["window.time.buckets", "window.time.bucket_width_ns"]),
        }
    }
    names
}

/// Every field of [`BreakerConfig`], the window's expanded.
#[must_use]
pub fn breaker() -> Vec<&'static str> {
    let top = field_names!(BreakerConfig {
        window,
        minimum_calls,
        failure_rate_threshold,
        slow_call_rate_threshold,
        slow_call_duration_ns,
        consecutive_failures,
        open_duration_ns,
        open_backoff_multiplier,
        max_open_duration_ns,
        open_jitter_factor,
        half_open_max_calls,
        half_open_success_threshold,
        half_open_max_wait_ns,
        jitter_seed,
    });
    top.into_iter()
        .flat_map(|name| {
            if name == "window" {
                window_fields()
            } else {
                vec![name]
            }
        })
        .collect()
}

/// Every field of [`SemaphoreConfig`], the priority shares expanded.
#[must_use]
pub fn semaphore() -> Vec<&'static str> {
    let top = field_names!(SemaphoreConfig {
        max_concurrent,
        max_queue,
        shares,
    });
    let shares = field_names!(
        PriorityShares::ALL_FULL,
        "shares.",
        PriorityShares {
            critical,
            high,
            normal,
            low,
        }
    );
    top.into_iter()
        .flat_map(|name| {
            if name == "shares" {
                shares.to_vec()
            } else {
                vec![name]
            }
        })
        .collect()
}

/// Every field of [`RetryBudgetConfig`].
#[must_use]
pub fn retry_budget() -> Vec<&'static str> {
    field_names!(RetryBudgetConfig {
        ttl_ns,
        min_retries_per_sec,
        percent_can_retry,
    })
    .to_vec()
}

/// Every field of [`RetryThrottleConfig`].
#[must_use]
pub fn retry_throttle() -> Vec<&'static str> {
    field_names!(RetryThrottleConfig {
        max_milli_tokens,
        token_ratio_milli,
    })
    .to_vec()
}

/// Every field of [`HealthConfig`].
#[must_use]
pub fn health() -> Vec<&'static str> {
    field_names!(HealthConfig {
        buckets,
        bucket_width_ns,
        degraded_error_rate,
        unhealthy_error_rate,
        degraded_p99_ns,
        unhealthy_p99_ns,
    })
    .to_vec()
}

/// Each configuration the bindings expose, by the name the bindings' option
/// tables use, with its fields.
#[must_use]
pub fn all() -> Vec<(&'static str, Vec<&'static str>)> {
    vec![
        ("breaker", breaker()),
        ("semaphore", semaphore()),
        ("retry_budget", retry_budget()),
        ("retry_throttle", retry_throttle()),
        ("health", health()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    // The lists below are written from the struct definitions in seawall-core
    // (DESIGN §3, §5, §6, §7), not from the functions under test.

    #[test]
    fn breaker_fields_expand_the_window() {
        assert_eq!(
            breaker(),
            [
                "window.count.size",
                "window.time.buckets",
                "window.time.bucket_width_ns",
                "minimum_calls",
                "failure_rate_threshold",
                "slow_call_rate_threshold",
                "slow_call_duration_ns",
                "consecutive_failures",
                "open_duration_ns",
                "open_backoff_multiplier",
                "max_open_duration_ns",
                "open_jitter_factor",
                "half_open_max_calls",
                "half_open_success_threshold",
                "half_open_max_wait_ns",
                "jitter_seed",
            ]
        );
    }

    #[test]
    fn semaphore_fields_expand_the_shares() {
        assert_eq!(
            semaphore(),
            [
                "max_concurrent",
                "max_queue",
                "shares.critical",
                "shares.high",
                "shares.normal",
                "shares.low",
            ]
        );
    }

    #[test]
    fn retry_and_health_fields() {
        assert_eq!(
            retry_budget(),
            ["ttl_ns", "min_retries_per_sec", "percent_can_retry"]
        );
        assert_eq!(retry_throttle(), ["max_milli_tokens", "token_ratio_milli"]);
        assert_eq!(
            health(),
            [
                "buckets",
                "bucket_width_ns",
                "degraded_error_rate",
                "unhealthy_error_rate",
                "degraded_p99_ns",
                "unhealthy_p99_ns",
            ]
        );
    }

    #[test]
    fn every_kind_is_listed_once() {
        let kinds: Vec<_> = all().into_iter().map(|(k, _)| k).collect();
        assert_eq!(
            kinds,
            [
                "breaker",
                "semaphore",
                "retry_budget",
                "retry_throttle",
                "health"
            ]
        );
    }
}
