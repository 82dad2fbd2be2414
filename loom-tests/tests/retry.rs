//! loom models of the retry budget's and retry throttle's CAS protocols.
//! Each model states its invariant and asserts it in every interleaving loom
//! explores; `scripts/loom-mutants.sh` checks each fails on its broken variant.
#![cfg(loom)]

use seawall_loom_tests::model;

use loom::sync::Arc;
use loom::thread;
use seawall_core::{Ratio, RetryBudget, RetryBudgetConfig, RetryThrottle, RetryThrottleConfig};

/// Bucket width 1 ms: ttl 10 ms.
const W: u64 = 1_000_000;

fn budget(min_retries_per_sec: u32, percent: u64) -> RetryBudget {
    RetryBudget::new(RetryBudgetConfig {
        ttl_ns: 10 * W,
        min_retries_per_sec,
        percent_can_retry: Ratio::from_percent(percent),
    })
    .unwrap()
}

/// Check-and-withdraw is one atomic step: with a balance of exactly one retry
/// (two requests at 50 %), two racing retries never both get it.
#[test]
fn budget_racing_retries_never_overdraw() {
    model(|| {
        let b = Arc::new(budget(0, 50));
        b.deposit(0);
        b.deposit(0);
        let hs: Vec<_> = (0..2)
            .map(|_| {
                let b = b.clone();
                thread::spawn(move || b.try_withdraw(0))
            })
            .collect();
        let allowed = hs.into_iter().map(|h| h.join().unwrap());
        let allowed = allowed.filter(|a| *a).count();
        assert_eq!(allowed, 1, "exactly one retry fits a balance of one");
        let s = b.snapshot(0);
        assert_eq!((s.requests, s.retries, s.balance_ppm), (2, 1, 0));
    });
}

/// Moving to a new bucket archives the old one exactly: a deposit into the old
/// bucket racing two deposits that rotate to the new one — all three count.
#[test]
fn budget_rotation_keeps_every_deposit() {
    model(|| {
        let b = Arc::new(budget(0, 100));
        let hs: Vec<_> = [0, W, W]
            .into_iter()
            .map(|now| {
                let b = b.clone();
                thread::spawn(move || b.deposit(now))
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        let s = b.snapshot(W);
        assert_eq!(s.requests, 3, "no deposit lost across the rotation");
        assert_eq!(s.available(), 3);
        // Both buckets expire together once the window has passed them.
        assert_eq!(b.snapshot(11 * W).requests, 0);
    });
}

/// The archive's sums are reused only for the head epoch they were counted for:
/// two deposits in epoch 0 pay for the two withdrawals of epoch 1 (the second
/// reads the sums counted for epoch 1); by epoch 11 everything has expired, and
/// two withdrawals racing there (one may count the sums of epoch 11 while the
/// other reads them) are both refused.
#[test]
fn budget_archive_sums_belong_to_their_epoch() {
    model(|| {
        let b = Arc::new(budget(0, 100));
        b.deposit(0);
        b.deposit(0);
        assert!(
            b.try_withdraw(W),
            "epoch 1: the first of two retries paid for"
        );
        assert!(b.try_withdraw(W), "epoch 1: the second");
        assert!(!b.try_withdraw(W), "epoch 1: no third");
        let hs: Vec<_> = (0..2)
            .map(|_| {
                let b = b.clone();
                thread::spawn(move || b.try_withdraw(11 * W))
            })
            .collect();
        for h in hs {
            assert!(!h.join().unwrap(), "epoch 11: every deposit has expired");
        }
        assert_eq!(b.snapshot(11 * W).requests, 0);
    });
}

/// The throttle applied in one sequential order: final milli-tokens and the two
/// failures' verdicts.
fn sequential(order: &[u8], max: u64, ratio: u64) -> (u64, [bool; 2]) {
    let mut t = max;
    let mut verdicts = [false; 2];
    for &op in order {
        match op {
            0 | 1 => {
                t = t.saturating_sub(1000);
                verdicts[op as usize] = 2 * t > max;
            }
            _ => t = (t + ratio).min(max),
        }
    }
    (t, verdicts)
}

/// Racing failures and a success are linearizable: the final tokens and each
/// failure's verdict are those of some sequential order of the three.
#[test]
fn throttle_racing_failures_and_successes_are_linearizable() {
    const MAX: u64 = 3_000;
    const RATIO: u64 = 500;
    let orders = [
        [0u8, 1, 2],
        [0, 2, 1],
        [1, 0, 2],
        [1, 2, 0],
        [2, 0, 1],
        [2, 1, 0],
    ];
    let allowed: Vec<(u64, [bool; 2])> = orders.iter().map(|o| sequential(o, MAX, RATIO)).collect();
    model(move || {
        let t = Arc::new(
            RetryThrottle::new(RetryThrottleConfig {
                max_milli_tokens: MAX as u32,
                token_ratio_milli: RATIO as u32,
            })
            .unwrap(),
        );
        let f: Vec<_> = (0..2)
            .map(|_| {
                let t = t.clone();
                thread::spawn(move || t.record_failure())
            })
            .collect();
        let s = {
            let t = t.clone();
            thread::spawn(move || t.record_success())
        };
        let v: Vec<bool> = f.into_iter().map(|h| h.join().unwrap()).collect();
        s.join().unwrap();
        let got = (t.milli_tokens(), [v[0], v[1]]);
        assert!(
            allowed.contains(&got),
            "{got:?} is no sequential order's result"
        );
    });
}
