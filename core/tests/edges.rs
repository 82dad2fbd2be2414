//! Hand-worked cases for what the model test does not reach: backwards clocks,
//! open-duration jitter, RAII permits, deadlines, one-bucket and one-slot windows.

use seawall_core::time::millis;
use seawall_core::{
    BreakerConfig, CircuitBreaker, CountWindow, Deadline, Outcome, Ratio, Sample, State,
    TimeWindow, WindowConfig,
};

fn count_breaker(cfg: BreakerConfig) -> CircuitBreaker<CountWindow<10>> {
    CircuitBreaker::new(BreakerConfig {
        window: WindowConfig::Count { size: 2 },
        minimum_calls: 2,
        ..cfg
    })
    .unwrap()
}

fn trip<W: seawall_core::SlidingWindow>(b: &CircuitBreaker<W>, now: u64) {
    for _ in 0..2 {
        b.try_acquire(now).unwrap().failure(0, now);
    }
    assert_eq!(b.state(), State::Open);
}

#[test]
fn a_clock_that_steps_back_counts_as_no_time_passed() {
    let b = count_breaker(BreakerConfig {
        open_duration_ns: millis(100),
        ..BreakerConfig::DEFAULT
    });
    trip(&b, millis(1_000)); // open until 1 100 ms
    assert_eq!(
        b.try_acquire(millis(1_050)).unwrap_err().retry_after_ns,
        Some(millis(50))
    );
    // A caller whose clock reads 1 000 ms after another read 1 050 ms: still 50 ms left.
    assert_eq!(
        b.try_acquire(millis(1_000)).unwrap_err().retry_after_ns,
        Some(millis(50))
    );
    assert_eq!(b.retry_after(0), Some(millis(50)));
    assert!(b.try_acquire(millis(1_100)).is_ok());

    // Time window: a record stamped before the newest bucket lands in the newest.
    let w = TimeWindow::<4>::with_buckets(4, millis(1)).unwrap();
    w.record(Sample::default(), millis(10));
    w.record(
        Sample {
            failure: true,
            slow: false,
        },
        millis(2),
    ); // 8 buckets back
    let c = w.counts(millis(10));
    assert_eq!((c.calls, c.failures), (2, 1));
    assert_eq!(
        w.counts(millis(14)).calls,
        0,
        "both expire together with bucket 10"
    );
}

#[test]
fn open_jitter_stays_within_the_factor_and_is_the_same_for_everyone() {
    let cfg = BreakerConfig {
        open_duration_ns: millis(1_000),
        open_jitter_factor: Ratio::from_percent(50),
        jitter_seed: 42,
        ..BreakerConfig::DEFAULT
    };
    let a = count_breaker(cfg);
    let b = count_breaker(cfg);
    let mut seen = std::collections::BTreeSet::new();
    let mut now = millis(10_000);
    for _ in 0..20 {
        trip(&a, now);
        trip(&b, now);
        let ra = a.retry_after(now).unwrap();
        assert_eq!(
            Some(ra),
            b.retry_after(now),
            "same seed and epoch, same duration"
        );
        assert!((millis(500)..=millis(1_500)).contains(&ra), "{ra}");
        seen.insert(ra);
        // Predicted retry-after equals the one the rejection reports.
        assert_eq!(a.try_acquire(now).unwrap_err().retry_after_ns, Some(ra));
        a.reset();
        b.reset();
        now += millis(1);
    }
    assert!(seen.len() > 10, "durations vary between openings: {seen:?}");
}

#[test]
fn a_dropped_permit_counts_as_ignored_and_frees_its_probe_slot() {
    let b = count_breaker(BreakerConfig {
        open_duration_ns: 10,
        ..BreakerConfig::DEFAULT
    });
    trip(&b, 0);
    {
        let _probe = b.try_acquire(10).unwrap();
        assert!(b.try_acquire(10).is_err(), "the only probe slot is taken");
        // _probe dropped here, e.g. by a panic or an early return
    }
    assert_eq!(b.state(), State::HalfOpen);
    let p = b.try_acquire(10).expect("the slot came back");
    assert_eq!(b.metrics(10).totals.ignored, 1);
    let token = p.into_token();
    b.record_token(token, Outcome::Success, 1, 11);
    assert_eq!(b.state(), State::Closed);
    let t = b.metrics(11).totals;
    assert_eq!(
        (t.admitted, t.successes, t.failures, t.ignored),
        (4, 1, 2, 1)
    );
}

#[test]
fn half_open_needs_every_success_and_counts_probes_in_flight() {
    let b = count_breaker(BreakerConfig {
        open_duration_ns: 10,
        half_open_max_calls: 2,
        half_open_success_threshold: 3,
        ..BreakerConfig::DEFAULT
    });
    trip(&b, 0);
    let p1 = b.try_acquire(10).unwrap();
    let p2 = b.try_acquire(10).unwrap();
    assert!(b.try_acquire(10).is_err());
    p1.success(1, 11);
    let p3 = b.try_acquire(11).unwrap();
    p2.success(1, 12);
    assert_eq!(b.metrics(12).half_open_successes, 2);
    assert_eq!(b.state(), State::HalfOpen);
    p3.success(1, 13);
    assert_eq!(b.state(), State::Closed);
    assert_eq!(b.metrics(13).openings, 0, "k back to 0 on close");
}

#[test]
fn disabled_records_totals_only_and_forced_open_has_no_retry_after() {
    let b = count_breaker(BreakerConfig::DEFAULT);
    b.disable();
    for _ in 0..5 {
        b.try_acquire(0).unwrap().failure(0, 0);
    }
    let m = b.metrics(0);
    assert_eq!(
        (m.state, m.window.calls, m.totals.failures),
        (State::Disabled, 0, 5)
    );
    b.force_open();
    let r = b.try_acquire(0).unwrap_err();
    assert_eq!((r.state, r.retry_after_ns), (State::ForcedOpen, None));
}

#[test]
fn one_bucket_and_one_slot_windows() {
    let w = TimeWindow::<1>::with_buckets(1, millis(1)).unwrap();
    w.record(
        Sample {
            failure: true,
            slow: true,
        },
        millis(5),
    );
    w.record(Sample::default(), millis(5) + millis(1) - 1);
    let c = w.counts(millis(5));
    assert_eq!((c.calls, c.failures, c.slow, c.slow_failures), (2, 1, 1, 1));
    assert_eq!(w.counts(millis(6)).calls, 0);
    let c1 = CountWindow::<1>::with_size(1).unwrap();
    c1.record(Sample {
        failure: true,
        slow: false,
    });
    c1.record(Sample::default());
    assert_eq!((c1.counts().calls, c1.counts().failures), (1, 0));
}

#[test]
fn deadline_budget_hand_worked() {
    let d = Deadline::new(millis(3_000), millis(1_000));
    assert_eq!(d.remaining(millis(1_000)), millis(3_000));
    assert_eq!(
        d.remaining(millis(500)),
        millis(3_000),
        "before the start: nothing spent"
    );
    assert_eq!(d.remaining(millis(3_999)), millis(1));
    assert!(!d.expired(millis(3_999)));
    assert!(d.expired(millis(4_000)), "expired exactly at start + total");
    assert_eq!(d.allocate(millis(500), millis(3_800)), millis(200));
    assert_eq!(d.allocate(millis(100), millis(3_000)), millis(100));
    let child = d.child(millis(5_000), millis(2_000));
    assert_eq!(child.end(), d.end(), "a child never outlives its parent");
    let short = d.child(millis(100), millis(2_000));
    assert_eq!(short.end(), millis(2_100));
    let late = d.child(millis(100), millis(9_000));
    assert_eq!(late.remaining(millis(9_000)), 0);
    let forever = Deadline::new(u64::MAX, 5);
    assert_eq!(forever.end(), u64::MAX);
    assert_eq!(forever.remaining(u64::MAX), 0);
}

#[test]
fn rates_are_compared_exactly() {
    // threshold 1/3 as 333 334 ppm: 1 failure in 3 calls is 333 333.3 ppm, below it.
    let b: CircuitBreaker<CountWindow<3>> = CircuitBreaker::new(BreakerConfig {
        window: WindowConfig::Count { size: 3 },
        minimum_calls: 3,
        failure_rate_threshold: Some(Ratio::from_ppm(333_334)),
        ..BreakerConfig::DEFAULT
    })
    .unwrap();
    for o in [Outcome::Failure, Outcome::Success, Outcome::Success] {
        b.try_acquire(0).unwrap().record(o, 0, 0);
    }
    assert_eq!(b.state(), State::Closed);
    b.try_acquire(0).unwrap().failure(0, 0); // window S S F: still 1/3
    assert_eq!(b.state(), State::Closed);
    b.try_acquire(0).unwrap().failure(0, 0); // S F F → 2/3
    assert_eq!(b.state(), State::Open);
}

/// Many failed probe cycles without a closed period move the epoch far past 2¹⁵
/// (each cycle is two epochs); the window must still take the next closed
/// period's records and open on its rate rule. (Serial-number guessing between the
/// window's generation and the record's once dropped every record from there on.)
fn opens_again_after_a_long_outage<W: seawall_core::SlidingWindow>(window: WindowConfig) {
    let b: CircuitBreaker<W> = CircuitBreaker::new(BreakerConfig {
        window,
        minimum_calls: 4,
        open_duration_ns: 10,
        ..BreakerConfig::DEFAULT
    })
    .unwrap();
    let mut now = millis(1);
    for _ in 0..4 {
        b.try_acquire(now).unwrap().failure(0, now);
    }
    assert_eq!(b.state(), State::Open);
    for _ in 0..40_000 {
        now += 10;
        b.try_acquire(now).unwrap().failure(0, now); // half-open probe fails: reopen
    }
    assert!(b.epoch() > 80_000);
    now += 10;
    b.try_acquire(now).unwrap().success(0, now);
    assert_eq!(b.state(), State::Closed);
    for i in 0..4 {
        b.try_acquire(now).unwrap().failure(0, now);
        assert_eq!(
            b.metrics(now).window.calls,
            i + 1,
            "every record of the new period counts"
        );
    }
    assert_eq!(b.state(), State::Open, "the rate rule still opens");
}

#[test]
fn the_rate_rule_works_after_a_long_outage() {
    opens_again_after_a_long_outage::<CountWindow<10>>(WindowConfig::Count { size: 8 });
    opens_again_after_a_long_outage::<TimeWindow<4>>(WindowConfig::Time {
        buckets: 4,
        bucket_width_ns: millis(100),
    });
}

#[test]
fn a_count_window_of_the_largest_size_fills_and_evicts() {
    let w = CountWindow::<4095>::with_size(4095).unwrap();
    for i in 0..3 * 4095u32 {
        w.record(Sample {
            failure: i % 2 == 0,
            slow: i % 3 == 0,
        });
    }
    // The last 4 095 records are i = 8 190 .. 12 284: failures at even i, slow at i % 3 == 0.
    let last = 2 * 4095..3 * 4095u32;
    let c = w.counts();
    assert_eq!(c.calls, 4095);
    assert_eq!(
        c.failures,
        last.clone().filter(|i| i % 2 == 0).count() as u64
    );
    assert_eq!(c.slow, last.clone().filter(|i| i % 3 == 0).count() as u64);
    assert_eq!(c.slow_failures, last.filter(|i| i % 6 == 0).count() as u64);
    assert!(
        CountWindow::<4096>::with_size(4096).is_err(),
        "4 095 is the largest size"
    );
}

#[test]
fn a_restored_open_breaker_stays_open_for_exactly_the_time_left_then_probes() {
    // open duration 100 ns, multiplier 2: the restored k = 3 makes the next
    // opening (after a failed probe) the 4th, 100 · 2³ = 800 ns long.
    let b = count_breaker(BreakerConfig {
        open_duration_ns: 100,
        open_backoff_multiplier: Ratio::from_ppm(2_000_000),
        max_open_duration_ns: None,
        ..BreakerConfig::DEFAULT
    });
    b.restore(State::Open, 3, 40, 1000).unwrap();
    assert_eq!(b.state(), State::Open);
    assert_eq!(b.metrics(1000).openings, 3);
    assert_eq!(b.retry_after(1010), Some(30));
    assert!(b.try_acquire(1039).is_err());
    let probe = b.try_acquire(1040).expect("half-open exactly at the end");
    assert_eq!(b.state(), State::HalfOpen);
    probe.failure(0, 1041);
    assert_eq!(b.state(), State::Open);
    assert_eq!(b.retry_after(1041), Some(800));
}

#[test]
fn restored_half_open_probes_at_once_and_manual_states_stay_as_they_were() {
    let b = count_breaker(BreakerConfig::DEFAULT);
    let epoch = b.epoch();
    b.restore(State::HalfOpen, 1, 5_000, 50).unwrap();
    assert_ne!(b.epoch(), epoch, "a restore is a state change");
    assert!(
        b.try_acquire(50).is_ok(),
        "no time left: the next acquire probes"
    );
    assert_eq!(b.state(), State::HalfOpen);
    b.restore(State::ForcedOpen, 0, 0, 60).unwrap();
    assert!(b.try_acquire(10_000_000_000).is_err());
    b.restore(State::Disabled, 0, 0, 70).unwrap();
    assert_eq!(b.state(), State::Disabled);
    b.restore(State::Closed, 9, 0, 80).unwrap();
    assert_eq!((b.state(), b.metrics(80).openings), (State::Closed, 0));
    // k beyond the word's 11 bits is clamped, never wraps to a short opening
    b.restore(State::Open, u32::MAX, 10, 90).unwrap();
    assert_eq!(b.metrics(90).openings, seawall_core::MAX_OPENINGS);
}
