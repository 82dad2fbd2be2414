//! loom models of the rate limiter's CAS protocol (DESIGN §10, GCRA). Each model
//! states its invariant and asserts it in every interleaving loom explores;
//! `scripts/loom-mutants.sh` checks the first fails on its broken variant.
#![cfg(loom)]

use seawall_loom_tests::model;

use loom::sync::Arc;
use loom::thread;
use seawall_core::{RateLimitError, RateLimiter, RateLimiterConfig};

/// Emission interval: 1 000 cells per second, T = 1 ms.
const T: u64 = 1_000_000;

fn limiter(burst: u32) -> RateLimiter {
    RateLimiter::new(RateLimiterConfig {
        rate: 1000,
        period_ns: 1_000_000_000,
        burst,
    })
    .unwrap()
}

/// Three callers take one cell each at the same `now` from a rested limiter of
/// burst 2: exactly two are admitted, the third is told to retry after one
/// interval, and the TAT counts exactly the two admitted cells.
#[test]
fn racing_takes_admit_exactly_the_burst() {
    model(|| {
        let l = Arc::new(limiter(2));
        let hs: Vec<_> = (0..3)
            .map(|_| {
                let l = l.clone();
                thread::spawn(move || l.try_acquire(1, 0))
            })
            .collect();
        let results: Vec<_> = hs.into_iter().map(|h| h.join().unwrap()).collect();
        let admitted = results.iter().filter(|r| r.is_ok()).count();
        assert_eq!(admitted, 2, "burst 2 admits exactly two: {results:?}");
        // The third saw TAT = 2T: next = 3T, 3T − T − 0 = 2T > τ = T.
        assert!(results.contains(&Err(RateLimitError::Rejected { retry_after_ns: T })));
        assert_eq!(
            l.theoretical_arrival_ns(),
            2 * T,
            "TAT counts the admitted cells"
        );
    });
}

/// A two-cell take racing a one-cell take on a rested limiter of burst 2: one
/// of them wins whole, the other takes nothing, and the TAT is the winner's.
#[test]
fn racing_multi_cell_takes_are_all_or_nothing() {
    model(|| {
        let l = Arc::new(limiter(2));
        let two = {
            let l = l.clone();
            thread::spawn(move || l.try_acquire(2, 0))
        };
        let one = {
            let l = l.clone();
            thread::spawn(move || l.try_acquire(1, 0))
        };
        let (two, one) = (two.join().unwrap(), one.join().unwrap());
        // Whoever comes second finds next = 3T, 3T − T = 2T > τ = T.
        match (two, one) {
            (Ok(()), Err(RateLimitError::Rejected { retry_after_ns })) => {
                assert_eq!(retry_after_ns, T);
                assert_eq!(l.theoretical_arrival_ns(), 2 * T);
            }
            (Err(RateLimitError::Rejected { retry_after_ns }), Ok(())) => {
                assert_eq!(retry_after_ns, T);
                assert_eq!(l.theoretical_arrival_ns(), T);
            }
            other => panic!("exactly one take wins: {other:?}"),
        }
    });
}
