//! Every invalid configuration value is refused with the field named; no input panics.

use seawall_core::{
    BreakerConfig, CircuitBreaker, ConfigError, CountWindow, Deadline, Field, Problem, Ratio,
    TimeWindow, WindowConfig,
};

type Timed = CircuitBreaker<TimeWindow<10>>;
type Counted = CircuitBreaker<CountWindow<100>>;

fn err_of<W: seawall_core::SlidingWindow>(cfg: BreakerConfig) -> ConfigError {
    CircuitBreaker::<W>::new(cfg).expect_err("config must be refused")
}

fn field_of(cfg: BreakerConfig) -> Field {
    err_of::<TimeWindow<10>>(cfg).field
}

#[test]
fn defaults_are_design_defaults_and_valid() {
    let d = BreakerConfig::DEFAULT;
    assert_eq!(
        d.window,
        WindowConfig::Time {
            buckets: 10,
            bucket_width_ns: 1_000_000_000
        }
    );
    assert_eq!(d.minimum_calls, 20);
    assert_eq!(d.failure_rate_threshold, Some(Ratio::from_ppm(500_000)));
    assert_eq!(d.slow_call_rate_threshold, Ratio::from_ppm(1_000_000));
    assert_eq!(d.slow_call_duration_ns, None);
    assert_eq!(d.consecutive_failures, None);
    assert_eq!(d.open_duration_ns, 30_000_000_000);
    assert_eq!(d.open_backoff_multiplier, Ratio::from_ppm(1_000_000));
    assert_eq!(d.max_open_duration_ns, Some(300_000_000_000));
    assert_eq!(d.half_open_max_calls, 1);
    assert_eq!(d.half_open_success_threshold, 1);
    assert_eq!(d.half_open_max_wait_ns, None);
    assert!(Timed::new(d).is_ok());
}

#[test]
#[allow(
    clippy::too_many_lines,
    reason = "one table of cases, one line of logic"
)]
fn each_bad_field_is_named() {
    let d = BreakerConfig::DEFAULT;
    let cases: Vec<(BreakerConfig, Field)> = vec![
        (
            BreakerConfig {
                minimum_calls: 0,
                ..d
            },
            Field::MinimumCalls,
        ),
        (
            BreakerConfig {
                failure_rate_threshold: Some(Ratio::from_ppm(1_000_001)),
                ..d
            },
            Field::FailureRateThreshold,
        ),
        (
            BreakerConfig {
                slow_call_rate_threshold: Ratio::from_percent(101),
                ..d
            },
            Field::SlowCallRateThreshold,
        ),
        (
            BreakerConfig {
                consecutive_failures: Some(0),
                ..d
            },
            Field::ConsecutiveFailures,
        ),
        (
            BreakerConfig {
                consecutive_failures: Some(1 << 22),
                ..d
            },
            Field::ConsecutiveFailures,
        ),
        (
            BreakerConfig {
                open_duration_ns: 0,
                ..d
            },
            Field::OpenDuration,
        ),
        (
            BreakerConfig {
                open_backoff_multiplier: Ratio::from_ppm(999_999),
                ..d
            },
            Field::OpenBackoffMultiplier,
        ),
        (
            BreakerConfig {
                max_open_duration_ns: Some(1),
                ..d
            },
            Field::MaxOpenDuration,
        ),
        (
            BreakerConfig {
                open_jitter_factor: Ratio::from_ppm(1_000_001),
                ..d
            },
            Field::OpenJitterFactor,
        ),
        (
            BreakerConfig {
                half_open_max_calls: 0,
                ..d
            },
            Field::HalfOpenMaxCalls,
        ),
        (
            BreakerConfig {
                half_open_max_calls: 2048,
                ..d
            },
            Field::HalfOpenMaxCalls,
        ),
        (
            BreakerConfig {
                half_open_success_threshold: 0,
                ..d
            },
            Field::HalfOpenSuccessThreshold,
        ),
        (
            BreakerConfig {
                half_open_success_threshold: 5000,
                ..d
            },
            Field::HalfOpenSuccessThreshold,
        ),
        (
            BreakerConfig {
                half_open_max_wait_ns: Some(0),
                ..d
            },
            Field::HalfOpenMaxWait,
        ),
        (
            BreakerConfig {
                window: WindowConfig::Time {
                    buckets: 0,
                    bucket_width_ns: 1_000_000,
                },
                ..d
            },
            Field::WindowBuckets,
        ),
        (
            BreakerConfig {
                window: WindowConfig::Time {
                    buckets: 11,
                    bucket_width_ns: 1_000_000,
                },
                ..d
            },
            Field::WindowBuckets,
        ),
        (
            BreakerConfig {
                window: WindowConfig::Time {
                    buckets: 10,
                    bucket_width_ns: 0,
                },
                ..d
            },
            Field::WindowBucketWidth,
        ),
        (
            BreakerConfig {
                window: WindowConfig::Time {
                    buckets: 10,
                    bucket_width_ns: 99_999,
                },
                ..d
            },
            Field::WindowBucketWidth,
        ),
        (
            BreakerConfig {
                window: WindowConfig::Time {
                    buckets: 10,
                    bucket_width_ns: u64::MAX / 5,
                },
                ..d
            },
            Field::WindowBucketWidth,
        ),
        (
            BreakerConfig {
                window: WindowConfig::Count { size: 10 },
                ..d
            },
            Field::WindowKind,
        ),
    ];
    for (cfg, field) in cases {
        assert_eq!(field_of(cfg), field, "{cfg:?}");
    }
}

#[test]
fn count_window_sizes() {
    let d = BreakerConfig {
        window: WindowConfig::Count { size: 0 },
        ..BreakerConfig::DEFAULT
    };
    let e = err_of::<CountWindow<100>>(d);
    assert_eq!((e.field, e.problem), (Field::WindowSize, Problem::Zero));
    let d = BreakerConfig {
        window: WindowConfig::Count { size: 101 },
        ..d
    };
    let e = err_of::<CountWindow<100>>(d);
    assert_eq!(
        (e.field, e.problem),
        (Field::WindowSize, Problem::OutOfRange { min: 1, max: 100 })
    );
    let d = BreakerConfig {
        window: WindowConfig::Count { size: 100 },
        ..d
    };
    assert!(Counted::new(d).is_ok());
    assert_eq!(
        err_of::<CountWindow<100>>(BreakerConfig::DEFAULT).field,
        Field::WindowKind
    );
}

#[test]
fn messages_name_the_field() {
    let e = field_of(BreakerConfig {
        half_open_max_calls: 0,
        ..BreakerConfig::DEFAULT
    });
    assert_eq!(e.name(), "half_open_max_calls");
    let e = err_of::<TimeWindow<10>>(BreakerConfig {
        max_open_duration_ns: Some(5),
        ..BreakerConfig::DEFAULT
    });
    assert_eq!(
        e.to_string(),
        "invalid max_open_duration: must not be less than open_duration"
    );
    assert_eq!(
        Deadline::try_new(0, 5).unwrap_err().to_string(),
        "invalid deadline.total: must not be zero"
    );
}

#[test]
fn extreme_but_valid_values_do_not_panic() {
    let b: Timed = CircuitBreaker::new(BreakerConfig {
        minimum_calls: 1,
        open_duration_ns: u64::MAX,
        open_backoff_multiplier: Ratio::from_ppm(u64::MAX),
        max_open_duration_ns: None,
        slow_call_duration_ns: Some(0),
        ..BreakerConfig::DEFAULT
    })
    .unwrap();
    let now = u64::MAX - 1;
    b.try_acquire(now).unwrap().failure(u64::MAX, now);
    assert_eq!(b.state(), seawall_core::State::Open);
    // open_until = now + u64::MAX saturates at u64::MAX: one nanosecond left.
    assert_eq!(b.try_acquire(now).unwrap_err().retry_after_ns, Some(1));
    let m = b.metrics(u64::MAX);
    assert_eq!((m.window.calls, m.window.slow, m.totals.slow), (1, 1, 1));
    assert!(
        b.try_acquire(u64::MAX).is_ok(),
        "the saturated end is reachable"
    );
}

#[test]
fn rate_limiter_fields() {
    use seawall_core::{KeyedRateLimiter, RateLimiter, RateLimiterConfig};
    let d = RateLimiterConfig::DEFAULT;
    assert_eq!((d.rate, d.period_ns, d.burst), (100, 1_000_000_000, 10));
    assert_eq!(d.emission_interval_ns(), 10_000_000);
    assert_eq!(d.tolerance_ns(), 90_000_000);
    assert!(RateLimiter::new(d).is_ok());
    let cases = [
        (
            RateLimiterConfig { rate: 0, ..d },
            Field::Rate,
            Problem::Zero,
        ),
        (
            RateLimiterConfig { period_ns: 0, ..d },
            Field::RatePeriod,
            Problem::Zero,
        ),
        (
            RateLimiterConfig { burst: 0, ..d },
            Field::Burst,
            Problem::Zero,
        ),
        // T = ⌊period / rate⌋ must be at least 1 ns.
        (
            RateLimiterConfig {
                rate: 1001,
                period_ns: 1000,
                ..d
            },
            Field::Rate,
            Problem::OutOfRange { min: 1, max: 1000 },
        ),
        // Zeros are named first, rate before period before burst.
        (
            RateLimiterConfig {
                rate: 0,
                period_ns: 0,
                burst: 0,
            },
            Field::Rate,
            Problem::Zero,
        ),
    ];
    for (cfg, field, problem) in cases {
        let e = RateLimiter::new(cfg).expect_err("config must be refused");
        assert_eq!((e.field, e.problem), (field, problem), "{cfg:?}");
        assert_eq!(cfg.validate(), Err(e));
        let k = KeyedRateLimiter::<4>::new(cfg, 0).expect_err("keyed too");
        assert_eq!(k, e);
    }
    // The extremes that are valid: T = 1 ns, T = u64::MAX, the largest burst.
    for cfg in [
        RateLimiterConfig {
            rate: 1000,
            period_ns: 1000,
            burst: 1,
        },
        RateLimiterConfig {
            rate: 1,
            period_ns: u64::MAX,
            burst: u32::MAX,
        },
        RateLimiterConfig {
            rate: u64::MAX,
            period_ns: u64::MAX,
            burst: u32::MAX,
        },
    ] {
        assert!(RateLimiter::new(cfg).is_ok(), "{cfg:?}");
    }
    let e = RateLimiter::new(RateLimiterConfig {
        rate: 5,
        period_ns: 4,
        burst: 1,
    })
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid rate_limiter.rate: must be between 1 and 4"
    );
    assert_eq!(Field::Burst.name(), "rate_limiter.burst");
    assert_eq!(Field::RatePeriod.name(), "rate_limiter.period");
}
