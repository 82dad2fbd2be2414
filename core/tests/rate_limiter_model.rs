//! proptest: the GCRA rate limiter (single and keyed) against the sequential
//! reference model of `tests/model/rate_limiter.rs`, comparing every decision,
//! every retry-after and the TAT after every step, over random configurations
//! and clocks that jump forward, stand still and step back, up to `u64::MAX`.

mod model;

use std::collections::HashMap;

use model::rate_limiter::{MGcra, MTake};
use proptest::prelude::*;
use seawall_core::{KeyedRateLimiter, RateLimitError, RateLimiter, RateLimiterConfig};

fn take_of(r: Result<(), RateLimitError>) -> MTake {
    match r {
        Ok(()) => MTake::Admitted,
        Err(RateLimitError::Rejected { retry_after_ns }) => MTake::Rejected {
            retry_after: retry_after_ns,
        },
        Err(RateLimitError::InvalidCells(_)) => MTake::Invalid,
    }
}

/// `(rate, period_ns, burst)`, always valid: small quotas whose steps the clock
/// below crosses often, exact and inexact divisions, and the extremes.
fn quota() -> impl Strategy<Value = (u64, u64, u32)> {
    prop_oneof![
        4 => (1u64..20, 1u64..5_000, 1u32..8).prop_map(|(r, p, b)| (r, p.max(r), b)),
        2 => (1u64..1_000, 1u64..1_000_000_000, 1u32..100).prop_map(|(r, p, b)| (r, p.max(r), b)),
        1 => (1u64..4, Just(u64::MAX), prop_oneof![Just(1u32), Just(2), Just(u32::MAX)]),
        1 => (Just(1u64), 1u64..100, prop_oneof![Just(u32::MAX - 1), Just(u32::MAX)]),
    ]
}

/// Where the clock starts: at 0, anywhere, or within a few steps of `u64::MAX`.
fn start() -> impl Strategy<Value = u64> {
    prop_oneof![
        2 => Just(0u64),
        1 => any::<u64>(),
        2 => (0u64..20_000).prop_map(|d| u64::MAX - d),
    ]
}

/// One step: how far the clock moves (it may step back), and the cells taken.
fn step() -> impl Strategy<Value = (i64, u32)> {
    let dt = prop_oneof![
        4 => Just(0i64),
        6 => 0i64..3_000,
        1 => -3_000i64..0,
        1 => any::<i64>(),
    ];
    let n = prop_oneof![8 => 1u32..4, 1 => Just(0u32), 1 => 4u32..12, 1 => Just(u32::MAX)];
    (dt, n)
}

fn moved(now: u64, dt: i64) -> u64 {
    now.saturating_add_signed(dt)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]

    #[test]
    fn limiter_matches_model(
        (rate, period_ns, burst) in quota(),
        t0 in start(),
        steps in proptest::collection::vec(step(), 1..60),
    ) {
        let l = RateLimiter::new(RateLimiterConfig { rate, period_ns, burst }).unwrap();
        let mut m = MGcra::new(rate, period_ns, burst);
        prop_assert_eq!(i128::from(l.config().emission_interval_ns()), m.t);
        prop_assert_eq!(i128::from(l.config().tolerance_ns()), m.tau.min(i128::from(u64::MAX)));
        let mut now = t0;
        for (i, (dt, n)) in steps.into_iter().enumerate() {
            now = moved(now, dt);
            let want = m.take(n, now);
            prop_assert_eq!(take_of(l.try_acquire(n, now)), want, "step {}: take {} at {}", i, n, now);
            prop_assert_eq!(i128::from(l.theoretical_arrival_ns()), m.tat, "TAT after step {}", i);
        }
    }

    /// Keyed: each slot is a model of its own; keys that share a slot (few
    /// slots, many keys) share its model.
    #[test]
    fn keyed_matches_one_model_per_slot(
        (rate, period_ns, burst) in quota(),
        seed in any::<u64>(),
        t0 in start(),
        steps in proptest::collection::vec((step(), 0u64..12), 1..80),
    ) {
        let config = RateLimiterConfig { rate, period_ns, burst };
        let k: KeyedRateLimiter<5> = KeyedRateLimiter::new(config, seed).unwrap();
        let mut models: HashMap<usize, MGcra> = HashMap::new();
        let mut now = t0;
        for (i, ((dt, n), key)) in steps.into_iter().enumerate() {
            now = moved(now, dt);
            let slot = k.slot_of(key);
            prop_assert!(slot < 5);
            let m = models.entry(slot).or_insert_with(|| MGcra::new(rate, period_ns, burst));
            let want = m.take(n, now);
            prop_assert_eq!(take_of(k.try_acquire(key, n, now)), want, "step {}: key {} takes {} at {}", i, key, n, now);
            prop_assert_eq!(i128::from(k.theoretical_arrival_ns(key)), m.tat);
        }
    }
}

/// Admitted cells over a long run never exceed what the quota allows: in any
/// span of `d` ns starting at the first admission, at most `burst + ⌊d / T⌋`.
#[test]
fn long_run_never_exceeds_the_quota() {
    // 7 cells per 1000 ns: T = 142 ns, burst 5.
    let l = RateLimiter::new(RateLimiterConfig {
        rate: 7,
        period_ns: 1000,
        burst: 5,
    })
    .unwrap();
    let mut admitted = Vec::new();
    for now in (0..1_000_000u64).step_by(13) {
        if l.try_acquire(1, now).is_ok() {
            admitted.push(now);
        }
    }
    for (i, &a) in admitted.iter().enumerate() {
        for (j, &b) in admitted.iter().enumerate().skip(i).take(40) {
            let cells = (j - i + 1) as u64;
            assert!(cells <= 5 + (b - a) / 142, "{cells} cells in [{a}, {b}]");
        }
    }
    // And the long-run rate is the quota's: one cell per 142 ns (the 13 ns
    // clock adds at most 12 ns of lag per cell).
    let n = admitted.len() as u64;
    assert!((1_000_000 / 155..=1_000_000 / 142 + 5).contains(&n), "{n}");
}
