//! DESIGN §8, "One set of totals": the retries a shared budget or throttle
//! allowed and refused are counted in its region, so a handle reads what
//! every other handle (every other process) was told.

#![cfg(not(loom))]

use seawall_core::{Ratio, RetryBudgetConfig, RetryThrottleConfig, RetryTotals};
use seawall_host::retry::{RetryBudget, RetryThrottle};
use seawall_host::shared::OpenOptions;

#[test]
fn two_handles_of_a_shared_budget_read_the_same_totals() {
    let name = format!("rust-test-budget-totals-{}", std::process::id());
    let cfg = RetryBudgetConfig {
        ttl_ns: 10_000_000_000,
        min_retries_per_sec: 0,
        percent_can_retry: Ratio::from_percent(50),
    };
    let a = RetryBudget::open_shared(&name, &cfg, &OpenOptions::default()).unwrap();
    let b = RetryBudget::open_shared(&name, &cfg, &OpenOptions::default()).unwrap();
    // Two requests at 50 %: one retry, through `a`; `b` is refused.
    a.deposit(1);
    b.deposit(1);
    assert!(a.try_withdraw(2));
    assert!(!b.try_withdraw(2));
    let (ta, tb) = (a.totals(), b.totals());
    let _ = RetryBudget::unlink_shared(&name);
    assert_eq!(
        ta,
        RetryTotals {
            allowed: 1,
            refused: 1
        }
    );
    assert_eq!(tb, ta);
}

#[test]
fn two_handles_of_a_shared_throttle_read_the_same_totals() {
    let name = format!("rust-test-throttle-totals-{}", std::process::id());
    // 4 tokens: a failure leaving 3 allows a retry, one leaving 2 does not.
    let cfg = RetryThrottleConfig {
        max_milli_tokens: 4_000,
        token_ratio_milli: 100,
    };
    let a = RetryThrottle::open_shared(&name, &cfg, &OpenOptions::default()).unwrap();
    let b = RetryThrottle::open_shared(&name, &cfg, &OpenOptions::default()).unwrap();
    assert!(a.record_failure());
    assert!(!b.record_failure());
    let (ta, tb) = (a.totals(), b.totals());
    let _ = RetryThrottle::unlink_shared(&name);
    assert_eq!(
        ta,
        RetryTotals {
            allowed: 1,
            refused: 1
        }
    );
    assert_eq!(tb, ta);
}
