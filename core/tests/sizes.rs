//! `size_of` of the public types on x86-64, where crossbeam's `CachePadded` pads to
//! 128 bytes. Each expected figure is worked out by hand from the layout below; the
//! docs quote the same figures.
#![cfg(target_arch = "x86_64")]

use core::mem::size_of;
use seawall_core::{
    BreakerConfig, CircuitBreaker, CountWindow, Deadline, PermitToken, Rejected, State, TimeWindow,
};

const LINE: usize = 128;

fn round_up(n: usize) -> usize {
    n.div_ceil(LINE) * LINE
}

#[test]
fn windows() {
    // head (one padded line) + 3·B words of 16 bytes (main, slow, folded) +
    // buckets and width (two divisors of 8 bytes)
    assert_eq!(
        size_of::<TimeWindow<10>>(),
        round_up(LINE + 3 * 10 * 16 + 8 + 8)
    );
    assert_eq!(size_of::<TimeWindow<10>>(), 640);
    // agg (one padded line) + N slots of 8 bytes + size (u32)
    assert_eq!(size_of::<CountWindow<100>>(), round_up(LINE + 100 * 8 + 4));
    assert_eq!(size_of::<CountWindow<100>>(), 1024);
}

#[test]
fn breakers() {
    // state and clock each on their own line, the `rejected` total on four lines
    // and the other eight totals (8 bytes each) on one, then window, config, gate (u64)
    let totals = 4 * LINE + round_up(8 * 8);
    let fixed = 2 * LINE + totals + size_of::<BreakerConfig>() + 8;
    assert_eq!(
        size_of::<CircuitBreaker<TimeWindow<10>>>(),
        round_up(fixed + 640)
    );
    assert_eq!(size_of::<CircuitBreaker<TimeWindow<10>>>(), 1792);
    assert_eq!(
        size_of::<CircuitBreaker<CountWindow<100>>>(),
        round_up(fixed + 1024)
    );
    assert_eq!(size_of::<CircuitBreaker<CountWindow<100>>>(), 2176);
}

#[test]
fn plain_values() {
    assert_eq!(size_of::<PermitToken>(), 4);
    // State is a whole word, so a Rejected (state, Option<u64>) has no padding a
    // copy could read before the store of the state reaches the cache.
    assert_eq!(size_of::<State>(), 8);
    assert_eq!(size_of::<Rejected>(), 24);
    assert_eq!(size_of::<Deadline>(), 16);
    // window 24 (u8 tag, u32, u64) + minimum_calls 4 + pad 4 + failure threshold
    // Option<Ratio> 16 + slow threshold 8 + slow duration Option<u64> 16 + consecutive
    // Option<u32> 8 + open duration 8 + multiplier 8 + max open Option<u64> 16 + jitter 8
    // + two u32 counts 8 + max wait Option<u64> 16 + seed 8.
    assert_eq!(size_of::<BreakerConfig>(), 152);
}

#[test]
fn retry_types() {
    use seawall_core::{
        Backoff, BackoffConfig, BackoffState, FailedAttempt, Jitter, RetryBudget,
        RetryBudgetConfig, RetryConfig, RetryPolicy, RetryThrottle, RetryThrottleConfig,
        SplitMix64,
    };
    // u8 tag padded to 8 + the proportional factor (Ratio, 8)
    assert_eq!(size_of::<Jitter>(), 16);
    // base 8 + multiplier 8 + max 8 + jitter 16
    assert_eq!(size_of::<BackoffConfig>(), 40);
    // config 40 + settled u32, padded to 8
    assert_eq!(size_of::<Backoff>(), 48);
    assert_eq!(size_of::<SplitMix64>(), 8);
    // attempt u32 (padded to 8) + previous delay 8 + generator 8
    assert_eq!(size_of::<BackoffState>(), 24);
    assert_eq!(size_of::<RetryConfig>(), 48);
    assert_eq!(size_of::<RetryPolicy>(), 56);
    // attempt (8 with padding) + previous 8 + random 8 + two Option<u64> of 16
    assert_eq!(size_of::<FailedAttempt>(), 56);
    // ttl 8 + min u32 (padded to 8) + percent 8
    assert_eq!(size_of::<RetryBudgetConfig>(), 24);
    // head line 128 + 10 archive words of 16 + config 24 + width with its reciprocal 16
    // + reserve 8 = 336, then the totals' own line
    assert_eq!(
        size_of::<RetryBudget>(),
        round_up(LINE + 10 * 16 + 24 + 16 + 8) + LINE
    );
    assert_eq!(size_of::<RetryBudget>(), 512);
    assert_eq!(size_of::<RetryThrottleConfig>(), 8);
    // tokens 8 + config 8 + two totals of 8
    assert_eq!(size_of::<RetryThrottle>(), 32);
}

#[test]
fn semaphore_types() {
    use seawall_core::{Semaphore, SemaphoreConfig, SemaphoreRejected, Ticket};
    // max 4 + queue 4 + four shares of 8
    assert_eq!(size_of::<SemaphoreConfig>(), 40);
    // state line 128 + 8·Q slots + config 40 + four u32 limits 16
    assert_eq!(
        size_of::<Semaphore<64>>(),
        round_up(LINE + 64 * 8 + 40 + 16)
    );
    assert_eq!(size_of::<Semaphore<64>>(), 768);
    assert_eq!(size_of::<Semaphore<8>>(), 256);
    assert_eq!(size_of::<Ticket>(), 4);
    // reason u8 (padded to 4) + active 4 + queued 4
    assert_eq!(size_of::<SemaphoreRejected>(), 12);
}

#[test]
fn health_types() {
    use seawall_core::{Health, HealthConfig, HealthSnapshot};
    // buckets u32 (padded) 8 + width 8 + two rates 16 + two p99 limits 16
    assert_eq!(size_of::<HealthConfig>(), 48);
    // one time bucket: totals word 16 + 512 tagged counters of 8 = 4 112
    let slot = 16 + 512 * 8;
    assert_eq!(size_of::<Health<10>>(), round_up(LINE + 10 * slot + 48));
    assert_eq!(size_of::<Health<10>>(), 41_344);
    assert_eq!(size_of::<Health<1>>(), 4_352);
    // calls, errors, latencies 24 + Option<Ratio> 16 + three Option<u64> 48 + status
    assert_eq!(size_of::<HealthSnapshot>(), 96);
}

#[test]
fn rate_limiter_types() {
    use seawall_core::{KeyedRateLimiter, RateLimitError, RateLimiter, RateLimiterConfig};
    // rate 8 + period 8 + burst u32 (padded to 8)
    assert_eq!(size_of::<RateLimiterConfig>(), 24);
    // the TAT on its own line + config 24 + emission interval 8 + tolerance 8
    assert_eq!(size_of::<RateLimiter>(), round_up(LINE + 24 + 8 + 8));
    assert_eq!(size_of::<RateLimiter>(), 256);
    // the constants' line (config, interval, tolerance, key seed: 48) + 8·N slots
    assert_eq!(size_of::<KeyedRateLimiter<128>>(), round_up(LINE + 128 * 8));
    assert_eq!(size_of::<KeyedRateLimiter<128>>(), 1152);
    assert_eq!(size_of::<KeyedRateLimiter<1>>(), 256);
    // the larger payload, ConfigError: Field u8 + Problem (tag, two u64) 24, padded to
    // 32; the variant tag takes a spare value of the payload's tags
    assert_eq!(size_of::<RateLimitError>(), 32);
}
