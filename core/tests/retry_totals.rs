//! DESIGN §8, "One set of totals": a retry budget and a retry throttle count
//! the verdicts they give, in their own memory (so a shared one counts every
//! process's). Expected figures are worked out by hand.

use seawall_core::time::secs;
use seawall_core::{
    FailedAttempt, Ratio, RetryBudget, RetryBudgetConfig, RetryConfig, RetryDecision, RetryGate,
    RetryPolicy, RetryThrottle, RetryThrottleConfig, RetryTotals,
};

#[test]
fn a_budget_counts_the_withdrawals_it_allows_and_refuses() {
    // No reserve, 20 % of requests: 5 requests earn one retry.
    let b = RetryBudget::new(RetryBudgetConfig {
        ttl_ns: secs(10),
        min_retries_per_sec: 0,
        percent_can_retry: Ratio::from_percent(20),
    })
    .unwrap();
    for _ in 0..5 {
        b.deposit(1);
    }
    assert!(b.try_withdraw(2));
    assert!(!b.try_withdraw(3));
    assert!(!b.try_withdraw(4));
    assert_eq!(
        b.totals(),
        RetryTotals {
            allowed: 1,
            refused: 2
        }
    );
}

#[test]
fn a_budget_counts_the_verdicts_of_retry_decisions_through_it() {
    let b = RetryBudget::new(RetryBudgetConfig {
        ttl_ns: secs(10),
        min_retries_per_sec: 0,
        percent_can_retry: Ratio::from_percent(50),
    })
    .unwrap();
    b.deposit(1);
    b.deposit(1);
    let policy = RetryPolicy::new(RetryConfig {
        max_attempts: 10,
        ..RetryConfig::DEFAULT
    })
    .unwrap();
    let failed = FailedAttempt {
        attempt: 1,
        previous_delay_ns: 0,
        random: 0,
        retry_after_ns: None,
        deadline_remaining_ns: None,
    };
    // Two requests at 50 % earn one retry: the first decision retries, the
    // second gives up on the budget.
    let first = policy.decide(&failed, RetryGate::Budget(&b), 2);
    let second = policy.decide(&failed, RetryGate::Budget(&b), 3);
    assert!(matches!(first, RetryDecision::Retry { .. }), "{first:?}");
    assert!(matches!(second, RetryDecision::GiveUp(_)), "{second:?}");
    assert_eq!(
        b.totals(),
        RetryTotals {
            allowed: 1,
            refused: 1
        }
    );
}

#[test]
fn a_throttle_counts_failures_it_allows_and_refuses_a_retry_after() {
    // 10 tokens: a retry is allowed while more than 5 are left after the
    // failure takes one: failures 1 to 4 leave 9, 8, 7, 6 (allowed), 5 and 6
    // leave 5 and 4 (refused).
    let t = RetryThrottle::new(RetryThrottleConfig {
        max_milli_tokens: 10_000,
        token_ratio_milli: 100,
    })
    .unwrap();
    let verdicts: Vec<bool> = (0..6).map(|_| t.record_failure()).collect();
    assert_eq!(verdicts, [true, true, true, true, false, false]);
    assert_eq!(
        t.totals(),
        RetryTotals {
            allowed: 4,
            refused: 2
        }
    );
}
