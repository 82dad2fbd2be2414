//! proptest: random single-thread sequences of acquire / record / time advance /
//! manual control, driven through the breaker and the reference model
//! (`tests/model`), comparing every decision, the state after every step, and the
//! window counts and totals.

mod model;

use model::{MConfig, MOutcome, MState, MWindow, Model};
use proptest::prelude::*;
use seawall_core::{
    BreakerConfig, CircuitBreaker, CountWindow, Outcome, PermitToken, Ratio, SlidingWindow,
    TimeWindow, WindowConfig, time::millis,
};

#[derive(Clone, Debug)]
enum Op {
    /// Acquire and keep the permit in a hand.
    Acquire,
    /// Record the `i`-th held permit (modulo the hand size).
    Record(usize, MOutcome, u64),
    /// Acquire and record at once.
    Call(MOutcome, u64),
    /// Let time pass (ns).
    Advance(u64),
    ForceOpen,
    Disable,
    Reset,
}

fn outcome() -> impl Strategy<Value = MOutcome> {
    prop_oneof![
        4 => Just(MOutcome::Success),
        4 => Just(MOutcome::Failure),
        1 => Just(MOutcome::Ignored),
    ]
}

fn duration() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0),
        Just(millis(5)),
        Just(millis(5) + 1),
        Just(millis(20))
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => Just(Op::Acquire),
        6 => (any::<usize>(), outcome(), duration()).prop_map(|(i, o, d)| Op::Record(i, o, d)),
        10 => (outcome(), duration()).prop_map(|(o, d)| Op::Call(o, d)),
        6 => prop_oneof![Just(0), Just(millis(1) / 2), Just(millis(1)), Just(millis(3)), Just(millis(25))]
            .prop_map(Op::Advance),
        1 => Just(Op::ForceOpen),
        1 => Just(Op::Disable),
        1 => Just(Op::Reset),
    ]
}

fn config(count: bool) -> impl Strategy<Value = MConfig> {
    let window = if count {
        (1usize..8).prop_map(MWindow::Count).boxed()
    } else {
        (1u64..5)
            .prop_map(|b| MWindow::Time {
                buckets: b,
                width: millis(1),
            })
            .boxed()
    };
    (
        window,
        1u64..8,
        prop_oneof![
            Just(None),
            Just(Some(0)),
            Just(Some(34)),
            Just(Some(50)),
            Just(Some(100))
        ],
        prop_oneof![Just(50u64), Just(100)],
        prop_oneof![Just(None), Just(Some(millis(5)))],
        prop_oneof![Just(None), (1u64..5).prop_map(Some)],
        (1u64..6).prop_map(millis),
        1u64..4,
        prop_oneof![Just(None), Just(Some(millis(12)))],
        1u64..4,
        1u64..4,
        prop_oneof![Just(None), (1u64..15).prop_map(|m| Some(millis(m)))],
    )
        .prop_map(
            |(window, min, fp, sp, sn, cons, open, mult, max, homc, hos, hmw)| MConfig {
                window,
                minimum_calls: min,
                failure_pct: fp,
                slow_pct: sp,
                slow_ns: sn,
                consecutive: cons,
                open_ns: open,
                multiplier: mult,
                max_open_ns: max.map(|m: u64| m.max(open)),
                half_open_max_calls: homc,
                half_open_successes: hos,
                half_open_max_wait_ns: hmw,
            },
        )
}

fn core_config(m: &MConfig) -> BreakerConfig {
    let n32 = |n: u64| u32::try_from(n).unwrap();
    BreakerConfig {
        window: match m.window {
            MWindow::Count(n) => WindowConfig::Count {
                size: n32(n as u64),
            },
            MWindow::Time { buckets, width } => WindowConfig::Time {
                buckets: n32(buckets),
                bucket_width_ns: width,
            },
        },
        minimum_calls: n32(m.minimum_calls),
        failure_rate_threshold: m.failure_pct.map(Ratio::from_percent),
        slow_call_rate_threshold: Ratio::from_percent(m.slow_pct),
        slow_call_duration_ns: m.slow_ns,
        consecutive_failures: m.consecutive.map(n32),
        open_duration_ns: m.open_ns,
        open_backoff_multiplier: Ratio::from_int(m.multiplier),
        max_open_duration_ns: m.max_open_ns,
        open_jitter_factor: Ratio::ZERO,
        half_open_max_calls: n32(m.half_open_max_calls),
        half_open_success_threshold: n32(m.half_open_successes),
        half_open_max_wait_ns: m.half_open_max_wait_ns,
        jitter_seed: 1,
    }
}

fn to_core(o: MOutcome) -> Outcome {
    match o {
        MOutcome::Success => Outcome::Success,
        MOutcome::Failure => Outcome::Failure,
        MOutcome::Ignored => Outcome::Ignored,
    }
}

/// Drive both with `ops`; the first disagreement fails the case with its step.
fn compare<W: SlidingWindow>(m: &MConfig, ops: &[Op]) -> Result<(), TestCaseError> {
    let b: CircuitBreaker<W> = CircuitBreaker::new(core_config(m)).expect("valid config");
    let mut model = Model::new(*m);
    let mut now = millis(1000);
    let mut hand: Vec<(PermitToken, u64)> = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        match *op {
            Op::Acquire | Op::Call(..) => {
                let got = b.acquire_token(now);
                let want = model.acquire(now);
                prop_assert_eq!(
                    got.map(|t| u64::from(t.epoch))
                        .map_err(|r| r.retry_after_ns),
                    want,
                    "step {} {:?}",
                    i,
                    op
                );
                if let (Ok(t), Ok(e)) = (got, want) {
                    if let Op::Call(o, d) = *op {
                        b.record_token(t, to_core(o), d, now);
                        model.record(e, o, d, now);
                    } else {
                        hand.push((t, e));
                    }
                }
            }
            Op::Record(k, o, d) => {
                if !hand.is_empty() {
                    let (t, e) = hand.swap_remove(k % hand.len());
                    b.record_token(t, to_core(o), d, now);
                    model.record(e, o, d, now);
                }
            }
            Op::Advance(dt) => now += dt,
            Op::ForceOpen => {
                b.force_open();
                model.force_open();
            }
            Op::Disable => {
                b.disable();
                model.disable();
            }
            Op::Reset => {
                b.reset();
                model.reset();
            }
        }
        prop_assert_eq!(
            b.state().name(),
            model.state.name(),
            "state after step {} {:?}",
            i,
            op
        );
        prop_assert_eq!(
            b.retry_after(now),
            model.retry_after(now),
            "retry_after after step {}",
            i
        );
        let snap = b.metrics(now);
        if model.state == MState::Closed {
            let w = snap.window;
            prop_assert_eq!(
                (w.calls, w.failures, w.slow, w.slow_failures),
                model.counts(now),
                "window after step {} {:?}",
                i,
                op
            );
        }
    }
    let t = b.metrics(now).totals;
    let mt = model.totals;
    prop_assert_eq!(
        (
            t.admitted,
            t.rejected,
            t.successes,
            t.failures,
            t.slow,
            t.ignored,
            t.stale,
            t.transitions
        ),
        (
            mt.admitted,
            mt.rejected,
            mt.successes,
            mt.failures,
            mt.slow,
            mt.ignored,
            mt.stale,
            mt.transitions
        )
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn count_window_breaker_matches_model(
        m in config(true),
        ops in proptest::collection::vec(op(), 1..80),
    ) {
        compare::<CountWindow<8>>(&m, &ops)?;
    }

    #[test]
    fn time_window_breaker_matches_model(
        m in config(false),
        ops in proptest::collection::vec(op(), 1..80),
    ) {
        compare::<TimeWindow<4>>(&m, &ops)?;
    }
}
