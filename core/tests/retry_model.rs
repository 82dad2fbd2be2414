//! proptest: backoff, retry budget and retry throttle against the sequential
//! reference models of `tests/model/retry.rs`, comparing every value.

mod model;

use model::retry::{MBudget, MJitter, MThrottle, delay, exp};
use proptest::prelude::*;
use seawall_core::{
    Backoff, BackoffConfig, BackoffState, Jitter, Ratio, RetryBudget, RetryBudgetConfig,
    RetryThrottle, RetryThrottleConfig, SplitMix64,
};

fn multiplier() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(1_000_000u64),
        Just(1_100_000),
        Just(1_500_000),
        Just(2_000_000),
        Just(2_718_281),
        Just(3_000_000),
        Just(10_000_000),
        Just(10_000_000_000_000_000),
    ]
}

fn jitter() -> impl Strategy<Value = MJitter> {
    prop_oneof![
        Just(MJitter::None),
        Just(MJitter::Full),
        Just(MJitter::Equal),
        Just(MJitter::Decorrelated),
        (0u64..=1_000_000).prop_map(MJitter::Proportional),
    ]
}

fn core_jitter(j: MJitter) -> Jitter {
    match j {
        MJitter::None => Jitter::None,
        MJitter::Full => Jitter::Full,
        MJitter::Equal => Jitter::Equal,
        MJitter::Decorrelated => Jitter::Decorrelated,
        MJitter::Proportional(f) => Jitter::Proportional {
            factor: Ratio::from_ppm(f),
        },
    }
}

fn attempt() -> impl Strategy<Value = u32> {
    prop_oneof![4 => 1u32..70, 1 => any::<u32>(), 1 => Just(u32::MAX)]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1024, ..ProptestConfig::default() })]

    #[test]
    fn backoff_matches_model(
        base in prop_oneof![Just(0u64), 1u64..1_000, 1_000_000u64..1_000_000_000, Just(u64::MAX / 2)],
        m in multiplier(),
        extra in prop_oneof![Just(0u64), 1u64..1_000_000_000_000, Just(u64::MAX)],
        j in jitter(),
        draws in proptest::collection::vec((attempt(), any::<u64>(), any::<u64>()), 1..20),
    ) {
        let cap = base.saturating_add(extra);
        let cfg = BackoffConfig {
            base_ns: base,
            multiplier: Ratio::from_ppm(m),
            max_ns: cap,
            jitter: core_jitter(j),
        };
        let b = Backoff::new(cfg).expect("these multipliers settle in time");
        for (n, prev, bits) in draws {
            prop_assert_eq!(b.exponential(n), exp(base, m, cap, n), "exp({})", n);
            let got = b.delay(n, prev, bits);
            prop_assert_eq!(got, delay(base, m, cap, j, n, prev, bits), "delay({}, {}, {})", n, prev, bits);
            prop_assert!(got <= cap);
            let ra = bits >> 3;
            prop_assert_eq!(b.delay_with_retry_after(n, prev, bits, Some(ra)), got.max(ra));
        }
    }

    #[test]
    fn backoff_state_walks_the_model_sequence(
        base in prop_oneof![Just(0u64), 1u64..10_000_000],
        m in multiplier(),
        extra in 0u64..10_000_000_000,
        j in jitter(),
        seed in any::<u64>(),
        steps in 1usize..40,
    ) {
        let cap = base + extra;
        let b = Backoff::new(BackoffConfig {
            base_ns: base,
            multiplier: Ratio::from_ppm(m),
            max_ns: cap,
            jitter: core_jitter(j),
        })
        .unwrap();
        let mut state = BackoffState::new(seed);
        let mut rng = SplitMix64::new(seed);
        let mut prev = 0;
        for n in 1..=steps as u32 {
            let want = delay(base, m, cap, j, n, prev, rng.next_u64());
            prev = want;
            prop_assert_eq!(state.next_delay(&b, None), want, "attempt {}", n);
        }
        prop_assert_eq!(state.attempt(), steps as u32);
    }

    #[test]
    fn retry_budget_matches_model(
        ttl_ms in 1u64..5_000,
        min in 0u32..20,
        pct in prop_oneof![Just(0u64), Just(200_000), Just(600_000), 0u64..=10_000_000],
        ops in proptest::collection::vec((any::<bool>(), 0u64..400, any::<bool>()), 1..300),
    ) {
        let ttl = ttl_ms * 1_000_000;
        let b = RetryBudget::new(RetryBudgetConfig {
            ttl_ns: ttl,
            min_retries_per_sec: min,
            percent_can_retry: Ratio::from_ppm(pct),
        })
        .unwrap();
        let mut m = MBudget::new(ttl, u64::from(min), pct);
        let mut now = 5 * ttl;
        for (i, (retry, dt_permille, back)) in ops.into_iter().enumerate() {
            // time moves by a fraction of ttl; sometimes a caller's clock lags behind
            now += ttl * dt_permille / 1000;
            let at = if back { now.saturating_sub(ttl / 3) } else { now };
            if retry {
                prop_assert_eq!(b.try_withdraw(at), m.withdraw(at), "op {}", i);
            } else {
                b.deposit(at);
                m.deposit(at);
            }
            let s = b.snapshot(now);
            let want = u64::try_from(m.balance(now).max(0)).unwrap();
            prop_assert_eq!(s.balance_ppm, want, "balance after op {}", i);
        }
    }

    #[test]
    fn retry_throttle_matches_model(
        max in 1u32..=1_000_000,
        ratio in 1u32..5_000,
        ops in proptest::collection::vec(any::<bool>(), 1..400),
    ) {
        let t = RetryThrottle::new(RetryThrottleConfig {
            max_milli_tokens: max,
            token_ratio_milli: ratio,
        })
        .unwrap();
        let mut m = MThrottle::new(u64::from(max), u64::from(ratio));
        for (i, failure) in ops.into_iter().enumerate() {
            if failure {
                prop_assert_eq!(t.record_failure(), m.failure(), "op {}", i);
            } else {
                t.record_success();
                m.success();
            }
            prop_assert_eq!(t.milli_tokens(), m.tokens);
        }
    }
}
