//! Hand-worked cases of DESIGN §4, §5, §7 that the model tests do not single out:
//! the retry decision's order of checks, backoff corner values, config errors,
//! clocks that step back, and the health histogram's error bound on real
//! distributions.

use seawall_core::time::{millis, secs};
use seawall_core::{
    Backoff, BackoffConfig, BackoffState, ConfigError, FailedAttempt, Field, GiveUp, Health,
    HealthConfig, HealthStatus, Jitter, MAX_BACKOFF_STEPS, Priority, PriorityShares, Problem,
    Ratio, RetryBudget, RetryBudgetConfig, RetryConfig, RetryDecision, RetryGate, RetryPolicy,
    RetryThrottle, RetryThrottleConfig, Semaphore, SemaphoreConfig,
};

fn failed(attempt: u32) -> FailedAttempt {
    FailedAttempt {
        attempt,
        previous_delay_ns: 0,
        random: 0,
        deadline_remaining_ns: None,
        retry_after_ns: None,
    }
}

fn exact_policy(max_attempts: u32) -> RetryPolicy {
    RetryPolicy::new(RetryConfig {
        backoff: BackoffConfig {
            jitter: Jitter::None,
            ..BackoffConfig::DEFAULT
        },
        max_attempts,
    })
    .unwrap()
}

#[test]
fn decision_retries_with_the_backoff_until_attempts_run_out() {
    let p = exact_policy(3);
    // attempt 1 failed → sleep exp(1) = 100 ms; attempt 2 → 200 ms; attempt 3 is the last.
    assert_eq!(
        p.decide(&failed(1), RetryGate::None, 0),
        RetryDecision::Retry {
            delay_ns: millis(100)
        }
    );
    assert_eq!(
        p.decide(&failed(2), RetryGate::None, 0),
        RetryDecision::Retry {
            delay_ns: millis(200)
        }
    );
    assert_eq!(
        p.decide(&failed(3), RetryGate::None, 0),
        RetryDecision::GiveUp(GiveUp::MaxAttempts)
    );
    assert_eq!(
        exact_policy(1).decide(&failed(1), RetryGate::None, 0),
        RetryDecision::GiveUp(GiveUp::MaxAttempts)
    );
}

#[test]
fn decision_never_sleeps_past_the_deadline_and_honours_retry_after() {
    let p = exact_policy(5);
    let with = |left: Option<u64>, ra: Option<u64>| FailedAttempt {
        deadline_remaining_ns: left,
        retry_after_ns: ra,
        ..failed(2)
    };
    // 200 ms sleep with 201 ms left: made. With exactly 200 ms left it would start
    // at the deadline, with nothing left: not made.
    assert_eq!(
        p.decide(&with(Some(millis(201)), None), RetryGate::None, 0),
        RetryDecision::Retry {
            delay_ns: millis(200)
        }
    );
    assert_eq!(
        p.decide(&with(Some(millis(200)), None), RetryGate::None, 0),
        RetryDecision::GiveUp(GiveUp::Deadline)
    );
    // The server says 1.5 s: the sleep is raised to it (past the 10 s cap too).
    assert_eq!(
        p.decide(&with(None, Some(millis(1_500))), RetryGate::None, 0),
        RetryDecision::Retry {
            delay_ns: millis(1_500)
        }
    );
    assert_eq!(
        p.decide(&with(None, Some(secs(60))), RetryGate::None, 0),
        RetryDecision::Retry { delay_ns: secs(60) }
    );
    // …and a retry-after that outlives the deadline gives up.
    assert_eq!(
        p.decide(
            &with(Some(secs(1)), Some(millis(1_500))),
            RetryGate::None,
            0
        ),
        RetryDecision::GiveUp(GiveUp::Deadline)
    );
}

#[test]
fn decision_withdraws_from_the_budget_only_for_retries_it_makes() {
    // min 0, 50 %, two requests: exactly one retry in the budget.
    let b = RetryBudget::new(RetryBudgetConfig {
        ttl_ns: secs(1),
        min_retries_per_sec: 0,
        percent_can_retry: Ratio::from_percent(50),
    })
    .unwrap();
    b.deposit(0);
    b.deposit(0);
    let p = exact_policy(3);
    // A retry refused by the deadline takes nothing from the budget…
    let late = FailedAttempt {
        deadline_remaining_ns: Some(1),
        ..failed(1)
    };
    assert_eq!(
        p.decide(&late, RetryGate::Budget(&b), 0),
        RetryDecision::GiveUp(GiveUp::Deadline)
    );
    assert_eq!(b.snapshot(0).retries, 0);
    // …so the one retry is still there, and then it is gone.
    assert!(matches!(
        p.decide(&failed(1), RetryGate::Budget(&b), 0),
        RetryDecision::Retry { .. }
    ));
    assert_eq!(
        p.decide(&failed(1), RetryGate::Budget(&b), 0),
        RetryDecision::GiveUp(GiveUp::BudgetExhausted)
    );
}

#[test]
fn decision_records_every_failure_in_the_throttle() {
    // gRPC A6 with 10 tokens: failures 1–4 leave 9, 8, 7, 6 > 5 → retry;
    // the 5th leaves 5 → throttled. The 3rd attempt's failure still takes a
    // token even though max_attempts gives up first.
    let t = RetryThrottle::new(RetryThrottleConfig::DEFAULT).unwrap();
    let p = exact_policy(3);
    let g = RetryGate::Throttle(&t);
    assert!(matches!(
        p.decide(&failed(1), g, 0),
        RetryDecision::Retry { .. }
    ));
    assert!(matches!(
        p.decide(&failed(2), g, 0),
        RetryDecision::Retry { .. }
    ));
    assert_eq!(
        p.decide(&failed(3), g, 0),
        RetryDecision::GiveUp(GiveUp::MaxAttempts)
    );
    assert_eq!(t.milli_tokens(), 7_000);
    assert!(matches!(
        p.decide(&failed(1), g, 0),
        RetryDecision::Retry { .. }
    ));
    assert_eq!(
        p.decide(&failed(1), g, 0),
        RetryDecision::GiveUp(GiveUp::Throttled)
    );
    assert_eq!(t.milli_tokens(), 5_000);
}

#[test]
fn backoff_hand_values_and_saturation() {
    let b = Backoff::new(BackoffConfig {
        base_ns: millis(100),
        multiplier: Ratio::from_ppm(1_500_000),
        max_ns: secs(1),
        jitter: Jitter::None,
    })
    .unwrap();
    // 100, 150, 225, 337.5, 506.25, 759.375 ms, then the 1 s cap
    let want = [
        100_000_000,
        150_000_000,
        225_000_000,
        337_500_000,
        506_250_000,
        759_375_000,
    ];
    for (n, w) in want.iter().enumerate() {
        assert_eq!(b.exponential(n as u32 + 1), *w);
    }
    assert_eq!(b.exponential(7), secs(1));
    assert_eq!(b.exponential(u32::MAX), secs(1));
    assert_eq!(b.exponential(0), millis(100), "attempt 0 counts as 1");
    // Base u64::MAX / 2, doubling, uncapped: saturates at u64::MAX, never wraps.
    let huge = Backoff::new(BackoffConfig {
        base_ns: u64::MAX / 2,
        multiplier: Ratio::from_int(2),
        max_ns: u64::MAX,
        jitter: Jitter::None,
    })
    .unwrap();
    assert_eq!(huge.exponential(2), u64::MAX - 1);
    assert_eq!(huge.exponential(3), u64::MAX);
    assert_eq!(huge.exponential(u32::MAX), u64::MAX);
}

#[test]
fn proportional_and_decorrelated_jitter_stay_in_their_ranges() {
    // proportional 0.2 on exp(3) = 400 ms: [320, 480] ms; bits 0 and u64::MAX
    // draw the two ends exactly.
    let p = Backoff::new(BackoffConfig {
        jitter: Jitter::PROPORTIONAL,
        ..BackoffConfig::DEFAULT
    })
    .unwrap();
    assert_eq!(p.delay(3, 0, 0), millis(320));
    assert_eq!(p.delay(3, 0, u64::MAX), millis(480));
    // capped after jitter: exp(8) = 10 s cap, +20 % → still 10 s
    assert_eq!(p.delay(8, 0, u64::MAX), secs(10));
    // decorrelated: d1 = base; dn ∈ [base, 3·d(n−1)], capped
    let d = Backoff::new(BackoffConfig {
        jitter: Jitter::Decorrelated,
        ..BackoffConfig::DEFAULT
    })
    .unwrap();
    assert_eq!(d.delay(1, 12345, u64::MAX), millis(100));
    assert_eq!(d.delay(2, millis(100), 0), millis(100));
    assert_eq!(d.delay(2, millis(100), u64::MAX), millis(300));
    assert_eq!(d.delay(9, secs(5), u64::MAX), secs(10));
}

#[test]
fn zero_base_gives_zero_delays_for_every_jitter() {
    // DESIGN §4: "base 0 is valid and gives zero delays (retry at once)". 0 times
    // any multiplier is 0, every jitter's range around 0 is [0, 0], and the
    // decorrelated range [base, 3·0] is [0, 0] too.
    let jitters = [
        Jitter::None,
        Jitter::Full,
        Jitter::Equal,
        Jitter::Decorrelated,
        Jitter::PROPORTIONAL,
        Jitter::Proportional {
            factor: Ratio::from_ppm(1_000_000),
        },
    ];
    let shapes = [
        // (multiplier ppm, cap ns): the default, a constant, a huge multiplier
        // uncapped (0 · m must not saturate), and a zero cap.
        (2_000_000, secs(10)),
        (1_000_000, secs(10)),
        (u64::MAX, u64::MAX),
        (3_000_000, 0),
    ];
    for jitter in jitters {
        for (multiplier_ppm, max_ns) in shapes {
            let b = Backoff::new(BackoffConfig {
                base_ns: 0,
                multiplier: Ratio::from_ppm(multiplier_ppm),
                max_ns,
                jitter,
            })
            .unwrap_or_else(|e| panic!("{jitter:?} ×{multiplier_ppm} ppm cap {max_ns}: {e}"));
            for attempt in [0, 1, 2, 3, 64, u32::MAX] {
                assert_eq!(b.exponential(attempt), 0, "{jitter:?} exp({attempt})");
                for random in [0, 1, u64::MAX / 2, u64::MAX] {
                    assert_eq!(
                        b.delay(attempt, 0, random),
                        0,
                        "{jitter:?} attempt {attempt}"
                    );
                }
            }
            // A previous delay handed in from elsewhere does not make a zero
            // base wait (decorrelated jitter would otherwise draw U[0, 3·previous]).
            assert_eq!(b.delay(5, secs(1), u64::MAX), 0, "{jitter:?}");
            // A retry loop's state: every delay 0, and the server's Retry-After
            // still raises it.
            let mut state = BackoffState::new(7);
            assert_eq!(state.next_delay(&b, None), 0);
            assert_eq!(state.next_delay(&b, None), 0);
            assert_eq!(state.next_delay(&b, Some(millis(250))), millis(250));
            assert_eq!(
                state.next_delay(&b, None),
                0,
                "{jitter:?} after a Retry-After"
            );
        }
    }
    // The cap still may not be below the base; with base 0 no cap is.
    let below = Backoff::new(BackoffConfig {
        base_ns: 1,
        max_ns: 0,
        ..BackoffConfig::DEFAULT
    });
    assert_eq!(below.unwrap_err().field, Field::BackoffMax);
    // The retry decision sleeps 0 and still counts attempts: attempt 3 of 3 is the last.
    let p = RetryPolicy::new(RetryConfig {
        backoff: BackoffConfig {
            base_ns: 0,
            ..BackoffConfig::DEFAULT
        },
        max_attempts: 3,
    })
    .unwrap();
    let r = |a| {
        p.decide(
            &FailedAttempt {
                random: u64::MAX,
                ..failed(a)
            },
            RetryGate::None,
            0,
        )
    };
    assert_eq!(r(1), RetryDecision::Retry { delay_ns: 0 });
    assert_eq!(r(2), RetryDecision::Retry { delay_ns: 0 });
    assert_eq!(r(3), RetryDecision::GiveUp(GiveUp::MaxAttempts));
}

#[test]
#[allow(clippy::too_many_lines, reason = "one table of cases per primitive")]
fn bad_configs_are_refused_with_the_field_named() {
    let d = BackoffConfig::DEFAULT;
    let field = |r: Result<Backoff, ConfigError>| r.unwrap_err().field;
    assert_eq!(
        field(Backoff::new(BackoffConfig {
            multiplier: Ratio::from_ppm(999_999),
            ..d
        })),
        Field::BackoffMultiplier
    );
    assert_eq!(
        field(Backoff::new(BackoffConfig { max_ns: 1, ..d })),
        Field::BackoffMax
    );
    assert_eq!(
        field(Backoff::new(BackoffConfig {
            jitter: Jitter::Proportional {
                factor: Ratio::from_ppm(1_000_001)
            },
            ..d
        })),
        Field::JitterFactor
    );
    // 1.000001 from 1 ms to 10 s would take ~9 million steps.
    let slow = Backoff::new(BackoffConfig {
        base_ns: millis(1),
        multiplier: Ratio::from_ppm(1_000_001),
        ..d
    })
    .unwrap_err();
    assert_eq!(slow.field, Field::BackoffMultiplier);
    assert_eq!(
        slow.problem,
        Problem::CapUnreachable {
            max_steps: u64::from(MAX_BACKOFF_STEPS)
        }
    );
    // …while from 1 ns it never grows at all (⌊1 · 1.000001⌋ = 1): a constant backoff.
    let flat = Backoff::new(BackoffConfig {
        base_ns: 1,
        multiplier: Ratio::from_ppm(1_000_001),
        ..d
    })
    .unwrap();
    assert_eq!(flat.exponential(u32::MAX), 1);
    assert_eq!(
        RetryPolicy::new(RetryConfig {
            max_attempts: 0,
            ..RetryConfig::DEFAULT
        })
        .unwrap_err()
        .field,
        Field::MaxAttempts
    );
    let bd = RetryBudgetConfig::DEFAULT;
    assert_eq!(
        RetryBudget::new(RetryBudgetConfig { ttl_ns: 0, ..bd })
            .unwrap_err()
            .field,
        Field::RetryBudgetTtl
    );
    assert_eq!(
        RetryBudget::new(RetryBudgetConfig {
            ttl_ns: 999_999,
            ..bd
        })
        .unwrap_err()
        .field,
        Field::RetryBudgetTtl
    );
    assert_eq!(
        RetryBudget::new(RetryBudgetConfig {
            percent_can_retry: Ratio::from_percent(1001),
            ..bd
        })
        .unwrap_err()
        .field,
        Field::PercentCanRetry
    );
    let td = RetryThrottleConfig::DEFAULT;
    for (cfg, f) in [
        (
            RetryThrottleConfig {
                max_milli_tokens: 0,
                ..td
            },
            Field::MaxTokens,
        ),
        (
            RetryThrottleConfig {
                max_milli_tokens: 1_000_001,
                ..td
            },
            Field::MaxTokens,
        ),
        (
            RetryThrottleConfig {
                token_ratio_milli: 0,
                ..td
            },
            Field::TokenRatio,
        ),
    ] {
        assert_eq!(RetryThrottle::new(cfg).unwrap_err().field, f);
    }
    let sd = SemaphoreConfig::DEFAULT;
    let sem = |c: SemaphoreConfig| Semaphore::<4>::new(c).unwrap_err().field;
    assert_eq!(
        sem(SemaphoreConfig {
            max_concurrent: 0,
            ..sd
        }),
        Field::MaxConcurrent
    );
    assert_eq!(sem(SemaphoreConfig { max_queue: 5, ..sd }), Field::MaxQueue);
    assert_eq!(
        sem(SemaphoreConfig {
            shares: PriorityShares {
                low: Ratio::from_percent(101),
                ..PriorityShares::ALL_FULL
            },
            ..sd
        }),
        Field::PriorityShares
    );
    let hd = HealthConfig::DEFAULT;
    let health = |c: HealthConfig| Health::<10>::new(c).unwrap_err().field;
    assert_eq!(
        health(HealthConfig { buckets: 0, ..hd }),
        Field::HealthBuckets
    );
    assert_eq!(
        health(HealthConfig { buckets: 11, ..hd }),
        Field::HealthBuckets
    );
    assert_eq!(
        health(HealthConfig {
            bucket_width_ns: 999_999,
            ..hd
        }),
        Field::HealthBucketWidth
    );
    assert_eq!(
        health(HealthConfig {
            unhealthy_error_rate: Ratio::from_percent(5),
            ..hd
        }),
        Field::UnhealthyErrorRate
    );
    assert_eq!(
        health(HealthConfig {
            unhealthy_p99_ns: secs(1),
            ..hd
        }),
        Field::UnhealthyP99
    );
    // Display names the field in DESIGN's words.
    let e = RetryBudget::new(RetryBudgetConfig { ttl_ns: 0, ..bd }).unwrap_err();
    assert_eq!(e.to_string(), "invalid retry_budget.ttl: must not be zero");
}

#[test]
fn shares_round_down_but_never_below_one() {
    let s: Semaphore<4> = Semaphore::new(SemaphoreConfig {
        max_concurrent: 3,
        max_queue: 0,
        shares: PriorityShares::SEED_LOAD_SHEDDING,
    })
    .unwrap();
    // 3 · 100 % = 3, 3 · 80 % = 2.4 → 2, 3 · 50 % = 1.5 → 1, 3 · 20 % = 0.6 → 1
    let limits: Vec<u32> = Priority::ALL.iter().map(|p| s.limit(*p)).collect();
    assert_eq!(limits, [3, 2, 1, 1]);
    let r = s
        .try_acquire(Priority::Low)
        .map(seawall_core::SemaphorePermit::forget);
    assert!(r.is_ok());
    let shed = s.try_acquire(Priority::Normal).unwrap_err();
    assert_eq!(
        (shed.reason, shed.active, shed.queued),
        (seawall_core::RejectReason::Shed, 1, 0)
    );
    assert!(s.release());
    assert!(
        !s.release(),
        "a second release of one permit changes nothing"
    );
}

#[test]
fn budget_clock_stepping_back_counts_as_no_time_passed() {
    // ttl 1 s (buckets of 100 ms), min 0, 100 %: a deposit at 950 ms, then one
    // stamped 0 ms (a lagging clock) lands in the 900 ms bucket, so both expire
    // together at 1.9 s, not the lagging one at 1 s.
    let b = RetryBudget::new(RetryBudgetConfig {
        ttl_ns: secs(1),
        min_retries_per_sec: 0,
        percent_can_retry: Ratio::ONE,
    })
    .unwrap();
    b.deposit(millis(950));
    b.deposit(0);
    assert_eq!(b.snapshot(millis(1_850)).available(), 2);
    assert_eq!(b.snapshot(millis(1_900)).available(), 0);
}

#[test]
#[allow(
    clippy::cast_sign_loss,
    reason = "the latencies are positive by construction"
)]
fn health_quantiles_are_within_the_bound_on_a_wide_distribution() {
    // 10 000 latencies spread geometrically from 1 µs to ~10 s, in one bucket:
    // every percentile from 1 to 100 is within 1/32 of the exact nearest-rank value.
    let h: Health<1> = Health::new(HealthConfig {
        buckets: 1,
        bucket_width_ns: secs(60),
        ..HealthConfig::DEFAULT
    })
    .unwrap();
    let mut exact: Vec<u64> = (0..10_000u32)
        .map(|i| (1_000.0 * 10f64.powf(f64::from(i) * 7.0 / 10_000.0)) as u64)
        .collect();
    for v in &exact {
        h.record(*v, false, 0);
    }
    exact.sort_unstable();
    for pct in 1..=100u64 {
        let rank = (10_000 * pct).div_ceil(100);
        let want = exact[rank as usize - 1];
        let got = h.quantile(Ratio::from_percent(pct), 0).unwrap();
        assert!(
            got.abs_diff(want) * 32 <= want,
            "p{pct}: {got} vs exact {want}"
        );
    }
    // p99 ≈ 8.5 s > 5 s: unhealthy by latency alone
    assert_eq!(h.status(0), HealthStatus::Unhealthy);
}

#[test]
fn health_status_thresholds_are_strict() {
    let h: Health<10> = Health::new(HealthConfig::DEFAULT).unwrap();
    assert_eq!(h.status(0), HealthStatus::Healthy, "empty window");
    // 10 calls, 1 error: 10 % is not above 10 % → healthy
    for i in 0..10 {
        h.record(millis(1), i == 0, 0);
    }
    assert_eq!(h.status(0), HealthStatus::Healthy);
    h.record(millis(1), true, 0); // 2 of 11 = 18 % → degraded
    assert_eq!(h.status(0), HealthStatus::Degraded);
    let s = h.snapshot(0);
    assert_eq!((s.calls, s.errors), (11, 2));
    assert_eq!(s.error_rate, Some(Ratio::from_ppm(181_818)));
}
