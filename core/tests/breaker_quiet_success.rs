//! A closed breaker records a plain success into a bucket already past the gate
//! with the window's one CAS alone. These are the successes that must not take
//! that path, each against a figure worked out by hand.

use seawall_core::time::millis;
use seawall_core::{
    BreakerConfig, CircuitBreaker, Outcome, Ratio, State, TimeWindow, WindowConfig,
};

type Breaker = CircuitBreaker<TimeWindow<10>>;

fn breaker(config: BreakerConfig) -> Breaker {
    CircuitBreaker::new(BreakerConfig {
        window: WindowConfig::Time {
            buckets: 10,
            bucket_width_ns: millis(1000),
        },
        ..config
    })
    .unwrap()
}

fn call(b: &Breaker, outcome: Outcome, duration_ns: u64, now: u64) {
    let t = b.acquire_token(now).expect("closed");
    b.record_token(t, outcome, duration_ns, now);
}

#[test]
fn a_success_after_failures_ends_the_consecutive_failure_run() {
    let b = breaker(BreakerConfig {
        minimum_calls: 1,
        failure_rate_threshold: None,
        consecutive_failures: Some(3),
        ..BreakerConfig::DEFAULT
    });
    // S S F F S F F: the run is 2 at the end (the third S ended the first one).
    for o in [
        Outcome::Success,
        Outcome::Success,
        Outcome::Failure,
        Outcome::Failure,
        Outcome::Success,
        Outcome::Failure,
        Outcome::Failure,
    ] {
        call(&b, o, 1, 10);
    }
    assert_eq!(b.state(), State::Closed);
    assert_eq!(b.metrics(10).consecutive_failures, 2);
    call(&b, Outcome::Failure, 1, 10);
    assert_eq!(b.state(), State::Open, "the third failure in a row opens");
}

#[test]
fn slow_successes_count_towards_the_slow_call_rate() {
    let b = breaker(BreakerConfig {
        minimum_calls: 2,
        slow_call_duration_ns: Some(millis(10)),
        slow_call_rate_threshold: Ratio::from_percent(50),
        ..BreakerConfig::DEFAULT
    });
    for _ in 0..3 {
        call(&b, Outcome::Success, millis(1), 10);
    }
    // Slow successes: 1 of 4, 2 of 5 stay below 50 %; 3 of 6 reaches it.
    call(&b, Outcome::Success, millis(11), 10);
    call(&b, Outcome::Success, millis(11), 10);
    assert_eq!(b.state(), State::Closed);
    call(&b, Outcome::Success, millis(11), 10);
    assert_eq!(b.state(), State::Open);
    let m = b.metrics(10);
    assert_eq!((m.totals.successes, m.totals.slow), (6, 3));
}

#[test]
fn a_success_admitted_before_a_reset_counts_as_stale_only() {
    let b = breaker(BreakerConfig {
        minimum_calls: 1,
        ..BreakerConfig::DEFAULT
    });
    for _ in 0..3 {
        call(&b, Outcome::Success, 1, 10);
    }
    let before = b.acquire_token(10).unwrap();
    b.reset();
    // Its generation's bucket is still in the slot and past the gate: the
    // success must not land there.
    b.record_token(before, Outcome::Success, 1, 10);
    let m = b.metrics(10);
    assert_eq!(m.window.calls, 0, "the new closed period's window is empty");
    assert_eq!(
        (m.totals.admitted, m.totals.successes, m.totals.stale),
        (4, 4, 1)
    );
}

#[test]
fn plain_successes_past_the_gate_are_counted_exactly() {
    let b = breaker(BreakerConfig {
        minimum_calls: 5,
        ..BreakerConfig::DEFAULT
    });
    // 7 successes in second 0, 4 in second 1, 2 failures in second 1.
    for _ in 0..7 {
        call(&b, Outcome::Success, 1, millis(100));
    }
    for _ in 0..4 {
        call(&b, Outcome::Success, 1, millis(1100));
    }
    call(&b, Outcome::Failure, 1, millis(1200));
    call(&b, Outcome::Failure, 1, millis(1300));
    let m = b.metrics(millis(1300));
    assert_eq!((m.window.calls, m.window.failures), (13, 2));
    assert_eq!(
        (m.totals.admitted, m.totals.successes, m.totals.failures),
        (13, 11, 2)
    );
    assert_eq!(b.state(), State::Closed, "2 of 13 is below 50 %");
}
