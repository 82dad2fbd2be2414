//! A region built with another configuration: the error names exactly the
//! fields that differ, for every kind of shared structure, and the fingerprints
//! stored in headers are the words every earlier build hashed (so regions of
//! this build and the previous one still recognise each other).

// The loom build compiles only the table models (tests/loom_*.rs).
#![cfg(not(loom))]
use std::time::Duration;

use seawall_core::{
    BreakerConfig, Field, HealthConfig, PriorityShares, Ratio, RetryBudgetConfig,
    RetryThrottleConfig, SemaphoreConfig, WindowConfig,
};
use seawall_host::breaker::{Breaker, breaker_agreement};
use seawall_host::health::{Health, health_agreement};
use seawall_host::retry::{RetryBudget, RetryThrottle, budget_agreement, throttle_agreement};
use seawall_host::semaphore::{Semaphore, semaphore_agreement};
use seawall_host::shared::fingerprint::fingerprint;
use seawall_host::shared::{OpenOptions, RegionError};

fn quick() -> OpenOptions {
    OpenOptions {
        init_timeout: Duration::from_millis(200),
    }
}

fn name(tag: &str) -> String {
    format!("rust-mismatch-{}-{tag}", std::process::id())
}

/// The fields a mismatch names, and its message.
fn differing(e: RegionError) -> (Vec<Field>, String) {
    let message = e.to_string();
    match e {
        RegionError::ConfigMismatch { differing, .. } => (differing, message),
        other => panic!("not a configuration mismatch: {other}"),
    }
}

fn count_breaker() -> BreakerConfig {
    BreakerConfig {
        window: WindowConfig::Count { size: 50 },
        minimum_calls: 10,
        ..BreakerConfig::DEFAULT
    }
}

#[test]
fn a_breaker_mismatch_names_the_fields_that_differ() {
    let n = name("breaker");
    Breaker::unlink_shared(&n).unwrap();
    let _a = Breaker::open_shared(&n, &count_breaker(), &quick()).unwrap();
    let other = BreakerConfig {
        window: WindowConfig::Count { size: 60 },
        consecutive_failures: Some(3),
        half_open_max_wait_ns: Some(5),
        jitter_seed: 99,
        ..count_breaker()
    };
    let (fields, message) = differing(Breaker::open_shared(&n, &other, &quick()).unwrap_err());
    assert_eq!(
        fields,
        [
            Field::WindowSize,
            Field::ConsecutiveFailures,
            Field::HalfOpenMaxWait
        ]
    );
    assert!(
        message.starts_with(
            "region was created with another configuration: window.size, consecutive_failures and half_open_max_wait differ (fingerprint 0x"
        ),
        "{message}"
    );
    let one = BreakerConfig {
        open_duration_ns: 1,
        ..count_breaker()
    };
    let (fields, message) = differing(Breaker::open_shared(&n, &one, &quick()).unwrap_err());
    assert_eq!(fields, [Field::OpenDuration]);
    assert!(message.contains(": open_duration differs ("), "{message}");
    Breaker::unlink_shared(&n).unwrap();
}

#[test]
fn a_time_window_breaker_mismatch_names_the_bucket_fields() {
    let n = name("time-breaker");
    Breaker::unlink_shared(&n).unwrap();
    let cfg = BreakerConfig::DEFAULT;
    let _a = Breaker::open_shared(&n, &cfg, &quick()).unwrap();
    let other = BreakerConfig {
        window: WindowConfig::Time {
            buckets: 10,
            bucket_width_ns: 2_000_000_000,
        },
        failure_rate_threshold: None,
        ..cfg
    };
    let (fields, _) = differing(Breaker::open_shared(&n, &other, &quick()).unwrap_err());
    assert_eq!(
        fields,
        [Field::WindowBucketWidth, Field::FailureRateThreshold]
    );
    Breaker::unlink_shared(&n).unwrap();
}

#[test]
fn a_semaphore_mismatch_names_the_fields_that_differ() {
    let n = name("semaphore");
    Semaphore::unlink_shared(&n).unwrap();
    let cfg = SemaphoreConfig {
        max_concurrent: 3,
        max_queue: 16,
        ..SemaphoreConfig::DEFAULT
    };
    let _a = Semaphore::open_shared(&n, &cfg, &quick()).unwrap();
    let other = SemaphoreConfig {
        max_queue: 8,
        shares: PriorityShares {
            low: Ratio::from_ppm(500_000),
            ..cfg.shares
        },
        ..cfg
    };
    let (fields, message) = differing(Semaphore::open_shared(&n, &other, &quick()).unwrap_err());
    assert_eq!(fields, [Field::MaxQueue, Field::PriorityShares]);
    assert!(
        message.contains(": semaphore.max_queue and semaphore.priority_shares differ ("),
        "{message}"
    );
    Semaphore::unlink_shared(&n).unwrap();
}

#[test]
fn retry_budget_and_throttle_mismatches_name_the_fields_that_differ() {
    let n = name("retry");
    RetryBudget::unlink_shared(&n).unwrap();
    RetryThrottle::unlink_shared(&n).unwrap();
    let bc = RetryBudgetConfig::DEFAULT;
    let _b = RetryBudget::open_shared(&n, &bc, &quick()).unwrap();
    let other = RetryBudgetConfig {
        min_retries_per_sec: bc.min_retries_per_sec + 1,
        ..bc
    };
    let (fields, message) = differing(RetryBudget::open_shared(&n, &other, &quick()).unwrap_err());
    assert_eq!(fields, [Field::MinRetriesPerSec]);
    assert!(
        message.contains(": retry_budget.min_retries_per_sec differs ("),
        "{message}"
    );

    let tc = RetryThrottleConfig::DEFAULT;
    let _t = RetryThrottle::open_shared(&n, &tc, &quick()).unwrap();
    let other = RetryThrottleConfig {
        max_milli_tokens: tc.max_milli_tokens * 2,
        token_ratio_milli: tc.token_ratio_milli + 1,
    };
    let (fields, _) = differing(RetryThrottle::open_shared(&n, &other, &quick()).unwrap_err());
    assert_eq!(fields, [Field::MaxTokens, Field::TokenRatio]);
    RetryBudget::unlink_shared(&n).unwrap();
    RetryThrottle::unlink_shared(&n).unwrap();
}

#[test]
fn a_health_mismatch_names_the_fields_that_differ() {
    let n = name("health");
    Health::unlink_shared(&n).unwrap();
    let cfg = HealthConfig::DEFAULT;
    let _h = Health::open_shared(&n, &cfg, &quick()).unwrap();
    let other = HealthConfig {
        unhealthy_p99_ns: cfg.unhealthy_p99_ns * 2,
        ..cfg
    };
    let (fields, _) = differing(Health::open_shared(&n, &other, &quick()).unwrap_err());
    assert_eq!(fields, [Field::UnhealthyP99]);
    Health::unlink_shared(&n).unwrap();
}

/// The fingerprint words as the previous build listed them by hand, in order.
#[test]
fn fingerprints_hash_the_same_words_as_before() {
    let tag = |t: &[u8; 8]| u64::from_le_bytes(*t);
    let c = BreakerConfig::DEFAULT;
    // Time window of 10 × 1 s, min calls 20, failure rate 50 %, slow rate 100 %,
    // no slow duration, no consecutive rule, open 30 s ×1, max 5 min, jitter 0,
    // half-open 1 / 1, no max wait (DESIGN §3 defaults).
    let words = [
        tag(b"breaker\0"),
        2,
        10,
        1_000_000_000,
        20,
        1,
        500_000,
        1_000_000,
        0,
        0,
        0,
        0,
        30_000_000_000,
        1_000_000,
        1,
        300_000_000_000,
        0,
        1,
        1,
        0,
        0,
    ];
    assert_eq!(breaker_agreement(&c).fingerprint(), fingerprint(&words));
    let count = count_breaker();
    let mut words = words;
    (words[1], words[2], words[3], words[4]) = (1, 50, 0, 10);
    assert_eq!(breaker_agreement(&count).fingerprint(), fingerprint(&words));

    let s = SemaphoreConfig {
        max_concurrent: 3,
        max_queue: 16,
        ..SemaphoreConfig::DEFAULT
    };
    let full = 1_000_000;
    assert_eq!(
        semaphore_agreement(&s).fingerprint(),
        fingerprint(&[tag(b"semaphor"), 3, 16, full, full, full, full])
    );
    let b = RetryBudgetConfig::DEFAULT;
    assert_eq!(
        budget_agreement(&b).fingerprint(),
        fingerprint(&[
            tag(b"rbudget\0"),
            b.ttl_ns,
            u64::from(b.min_retries_per_sec),
            b.percent_can_retry.ppm()
        ])
    );
    let t = RetryThrottleConfig::DEFAULT;
    assert_eq!(
        throttle_agreement(&t).fingerprint(),
        fingerprint(&[
            tag(b"rthrottl"),
            u64::from(t.max_milli_tokens),
            u64::from(t.token_ratio_milli)
        ])
    );
    let h = HealthConfig::DEFAULT;
    assert_eq!(
        health_agreement(&h).fingerprint(),
        fingerprint(&[
            tag(b"health\0\0"),
            10,
            1_000_000_000,
            100_000,
            500_000,
            2_000_000_000,
            5_000_000_000
        ])
    );
}
