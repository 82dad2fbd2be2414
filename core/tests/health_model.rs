//! proptest: random records through the health window and the reference model
//! (`tests/model/health.rs`): exact calls and errors, percentiles equal to the
//! documented bucket midpoint of the exact quantile and within 1/32 of it, and the
//! status rule.

mod model;

use model::health::{MHealth, reported, status};
use proptest::prelude::*;
use seawall_core::{Health, HealthConfig, Ratio};

fn latency() -> impl Strategy<Value = u64> {
    prop_oneof![
        0u64..64,
        64u64..1_000_000,
        1_000_000u64..10_000_000_000,
        Just(1u64 << 35),
        Just(u64::MAX),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn health_matches_model(
        buckets in 1u32..6,
        ops in proptest::collection::vec((latency(), any::<bool>(), 0u64..1500), 1..200),
        degraded in 0u64..50,
        unhealthy_extra in 0u64..50,
    ) {
        let width = 1_000_000u64;
        let cfg = HealthConfig {
            buckets,
            bucket_width_ns: width,
            degraded_error_rate: Ratio::from_percent(degraded),
            unhealthy_error_rate: Ratio::from_percent(degraded + unhealthy_extra),
            degraded_p99_ns: 2_000_000,
            unhealthy_p99_ns: 5_000_000,
        };
        let h: Health<6> = Health::new(cfg).unwrap();
        let mut m = MHealth::new(u64::from(buckets), width);
        let mut now = 1_000 * width;
        for (i, (lat, failed, dt_us)) in ops.into_iter().enumerate() {
            now += dt_us * 1_000;
            h.record(lat, failed, now);
            m.record(lat, failed, now);
            let s = h.snapshot(now);
            let (calls, errors) = m.counts(now);
            prop_assert_eq!((s.calls, s.errors, s.latencies), (calls, errors, calls), "op {}", i);
            for (ppm, got) in [(500_000, s.p50_ns), (900_000, s.p90_ns), (990_000, s.p99_ns)] {
                let exact = m.exact_quantile(ppm, now);
                prop_assert_eq!(got, exact.map(reported), "q {} after op {}", ppm, i);
                if let (Some(g), Some(e)) = (got, exact) {
                    let e = e.min((1 << 35) - 1);
                    prop_assert!(g.abs_diff(e) * 32 <= e, "{} vs exact {}", g, e);
                }
            }
            let want = status(
                calls,
                errors,
                m.exact_quantile(990_000, now).map(reported),
                (degraded, degraded + unhealthy_extra),
                (2_000_000, 5_000_000),
            );
            prop_assert_eq!(s.status.name(), want, "status after op {}", i);
        }
    }
}
