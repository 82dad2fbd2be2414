//! loom model of the health histogram's bucket rotation.
#![cfg(loom)]

use seawall_loom_tests::model;

use loom::sync::Arc;
use loom::thread;
use seawall_core::{Health, HealthConfig};

const W: u64 = 1_000_000;

/// No lost record when a time bucket rotates under concurrent records: two
/// records of the new epoch, with the same latency, race to replace the counts
/// of epoch 0 in the one bucket.
#[test]
fn health_rotation_loses_no_record_of_the_new_epoch() {
    model(|| {
        let h = Arc::new(
            Health::<1>::new(HealthConfig {
                buckets: 1,
                bucket_width_ns: W,
                ..HealthConfig::DEFAULT
            })
            .unwrap(),
        );
        for _ in 0..3 {
            h.record(5_000, true, 0);
        }
        let hs: Vec<_> = [false, true]
            .into_iter()
            .map(|failed| {
                let h = h.clone();
                thread::spawn(move || h.record(5_000, failed, W))
            })
            .collect();
        for t in hs {
            t.join().unwrap();
        }
        let s = h.snapshot(W);
        assert_eq!(
            (s.calls, s.errors),
            (2, 1),
            "both epoch-1 calls, none of epoch 0"
        );
        assert_eq!(s.latencies, 2, "both epoch-1 latencies");
    });
}
