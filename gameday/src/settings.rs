//! The protected service's pipeline settings, and why each value was chosen.
//!
//! The gameday runs at `--rate` requests per second (80 by default) through phases
//! of 5 s (`--quick`) to 15 s. Every window and duration below is short enough for
//! the whole story (open, probe, reopen, close) to happen inside a 5 s phase, and
//! long enough to hold a meaningful number of calls at 80 rps.

use seawall_core::time::millis;
use seawall_core::{
    BackoffConfig, BreakerConfig, Jitter, PriorityShares, Ratio, RetryBudgetConfig, RetryConfig,
    SemaphoreConfig, WindowConfig,
};
use serde::Serialize;

/// Wait-queue slots of the bulkhead semaphore (its type parameter `Q`).
pub const QUEUE_SLOTS: usize = 64;

/// Everything the protected service is configured with. Durations in ns.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    /// Per-request deadline: the whole pipeline, bulkhead wait included, ends by then.
    pub deadline_ns: u64,
    /// Longest single upstream attempt; the deadline cuts it shorter when less is left.
    pub attempt_timeout_ns: u64,
    /// Longest wait in the bulkhead queue (critical requests only: the other
    /// priorities are shed, never queued, when their share is used up).
    pub bulkhead_max_wait_ns: u64,
    /// Bulkhead with priority load shedding.
    pub bulkhead: SemaphoreConfig,
    /// Circuit breaker.
    pub breaker: BreakerConfig,
    /// Retry attempts and backoff.
    pub retry: RetryConfig,
    /// Finagle retry budget.
    pub budget: RetryBudgetConfig,
    /// The unprotected service's only protection: a generous client timeout.
    pub unprotected_timeout_ns: u64,
}

impl Settings {
    /// The gameday's settings.
    pub const GAMEDAY: Self = Self {
        // The product page must answer within 1 s, whatever the dependency does.
        deadline_ns: millis(1_000),
        // Healthy calls take ~2 ms (~100 ms in phase 2), so 400 ms is a clear
        // failure and leaves room in the deadline for a retry.
        attempt_timeout_ns: millis(400),
        bulkhead_max_wait_ns: millis(100),
        // 60 permits hold 80 rps × 100 ms (phase 2) with room to spare, and are used
        // up when calls take a second (phase 3): low sheds at 12 in flight, normal
        // at 30, high at 48, and critical waits.
        bulkhead: SemaphoreConfig {
            max_concurrent: 60,
            max_queue: 16,
            shares: PriorityShares::SEED_LOAD_SHEDDING,
        },
        breaker: BreakerConfig {
            // 2 s in 10 buckets of 200 ms: ~160 calls at 80 rps, and old enough
            // outcomes leave within a phase.
            window: WindowConfig::Time {
                buckets: 10,
                bucket_width_ns: millis(200),
            },
            minimum_calls: 20,
            // The breaker sits outside retry (DESIGN §9), so it sees one outcome per
            // request after its retries. When the upstream fails 50 % of attempts
            // at 80 rps, the retry budget (below: 20 % of 80 + 5 = 21 retries/s)
            // retries about half of the 40 failed requests a second and rescues
            // half of those, so ~37 % of requests still fail: 25 % opens it with
            // margin, while a healthy dependency fails none.
            failure_rate_threshold: Some(Ratio::from_percent(25)),
            // A request over 500 ms is slow (healthy: ~2 ms; phase 2: ~100 ms); half
            // of them slow opens the breaker even before the timeouts are failures.
            slow_call_duration_ns: Some(millis(500)),
            slow_call_rate_threshold: Ratio::from_percent(50),
            // Open 1 s, then probe with 2 requests; 2 successes close. Fixed (no
            // open backoff) so that recovery is noticed within ~1 s even in --quick.
            open_duration_ns: millis(1_000),
            max_open_duration_ns: Some(millis(1_000)),
            half_open_max_calls: 2,
            half_open_success_threshold: 2,
            ..BreakerConfig::DEFAULT
        },
        retry: RetryConfig {
            // 20 ms × 2ⁿ⁻¹ with full jitter, capped at 200 ms; 3 attempts in all.
            backoff: BackoffConfig {
                base_ns: millis(20),
                multiplier: Ratio::from_int(2),
                max_ns: millis(200),
                jitter: Jitter::Full,
            },
            max_attempts: 3,
        },
        // Finagle's 20 % of requests, plus 5 retries/s, over a 2 s ttl (the same
        // span as the breaker window).
        budget: RetryBudgetConfig {
            ttl_ns: millis(2_000),
            min_retries_per_sec: 5,
            percent_can_retry: Ratio::from_percent(20),
        },
        unprotected_timeout_ns: millis(10_000),
    };
}

/// The settings as the JSON report shows them (ms and percentages).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SettingsReport {
    /// Per-request deadline (ms).
    pub deadline_ms: u64,
    /// Longest upstream attempt (ms).
    pub attempt_timeout_ms: u64,
    /// Bulkhead: permits, queue, shares (critical/high/normal/low, %), longest wait (ms).
    pub bulkhead: serde_json::Value,
    /// Breaker: window, thresholds, durations.
    pub breaker: serde_json::Value,
    /// Retry: attempts and backoff.
    pub retry: serde_json::Value,
    /// Retry budget.
    pub retry_budget: serde_json::Value,
    /// The unprotected service's client timeout (ms).
    pub unprotected_timeout_ms: u64,
}

fn ms(ns: u64) -> u64 {
    ns / 1_000_000
}

fn pct(r: Ratio) -> f64 {
    r.ppm() as f64 / 10_000.0
}

impl Settings {
    /// The settings in the report's units.
    #[must_use]
    pub fn report(&self) -> SettingsReport {
        let s = &self.bulkhead.shares;
        let (buckets, width) = match self.breaker.window {
            WindowConfig::Time {
                buckets,
                bucket_width_ns,
            } => (buckets, ms(bucket_width_ns)),
            WindowConfig::Count { size } => (size, 0),
        };
        SettingsReport {
            deadline_ms: ms(self.deadline_ns),
            attempt_timeout_ms: ms(self.attempt_timeout_ns),
            bulkhead: serde_json::json!({
                "max_concurrent": self.bulkhead.max_concurrent,
                "max_queue": self.bulkhead.max_queue,
                "max_wait_ms": ms(self.bulkhead_max_wait_ns),
                "shares_percent": [pct(s.critical), pct(s.high), pct(s.normal), pct(s.low)],
            }),
            breaker: serde_json::json!({
                "window": format!("time-based, {buckets} buckets of {width} ms"),
                "minimum_calls": self.breaker.minimum_calls,
                "failure_rate_threshold_percent": self.breaker.failure_rate_threshold.map(pct),
                "slow_call_duration_ms": self.breaker.slow_call_duration_ns.map(ms),
                "slow_call_rate_threshold_percent": pct(self.breaker.slow_call_rate_threshold),
                "open_duration_ms": ms(self.breaker.open_duration_ns),
                "half_open_max_calls": self.breaker.half_open_max_calls,
                "half_open_success_threshold": self.breaker.half_open_success_threshold,
            }),
            retry: serde_json::json!({
                "max_attempts": self.retry.max_attempts,
                "backoff": format!(
                    "{} ms x {}^(n-1), cap {} ms, {} jitter",
                    ms(self.retry.backoff.base_ns),
                    self.retry.backoff.multiplier.ppm() as f64 / 1e6,
                    ms(self.retry.backoff.max_ns),
                    self.retry.backoff.jitter.name()
                ),
            }),
            retry_budget: serde_json::json!({
                "ttl_ms": ms(self.budget.ttl_ns),
                "min_retries_per_sec": self.budget.min_retries_per_sec,
                "percent_can_retry": pct(self.budget.percent_can_retry),
            }),
            unprotected_timeout_ms: ms(self.unprotected_timeout_ns),
        }
    }
}
