//! The report's arithmetic, each piece with its definition, so the tests can check
//! it against values worked out by hand.

use crate::load::Sample;
use crate::service::Via;
use serde::Serialize;

/// The `p`-th percentile (`1 ..= 100`) of `sorted` (ascending), by the
/// nearest-rank definition: the smallest value such that at least `p` % of the
/// values are at or below it, i.e. the value at 1-based rank `⌈p·n/100⌉`.
/// `None` for no values.
#[must_use]
pub fn percentile(sorted: &[u64], p: u32) -> Option<u64> {
    let n = sorted.len() as u64;
    if n == 0 {
        return None;
    }
    let rank = (u64::from(p.clamp(1, 100)) * n).div_ceil(100);
    sorted.get(usize::try_from(rank - 1).ok()?).copied()
}

/// `part / whole` in percent; 0 when `whole` is 0 (no evidence passes no check).
#[must_use]
pub fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

/// Nanoseconds as milliseconds, rounded to 0.1 ms for the report.
#[must_use]
pub fn ms_1dp(ns: u64) -> f64 {
    (ns as f64 / 100_000.0).round() / 10.0
}

/// What one service did with the requests of one phase (or part of one).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ServiceStats {
    /// Requests sent.
    pub requests: u64,
    /// Answered with product data, fresh or stale (HTTP 200).
    pub served: u64,
    /// Answered with fresh data from the upstream.
    pub fresh: u64,
    /// Answered with stale data by the fallback (degraded).
    pub stale: u64,
    /// No HTTP answer at all (connection error or the load's own timeout).
    pub no_response: u64,
    /// `served / requests` in %: the user got a product page.
    pub success_pct: f64,
    /// `stale / requests` in %: of those, pages built from the stale cache.
    pub degraded_pct: f64,
    /// `fresh / requests` in %.
    pub fresh_pct: f64,
    /// Median latency seen by the load (ms, nearest rank).
    pub p50_ms: Option<f64>,
    /// 99th percentile latency seen by the load (ms, nearest rank).
    pub p99_ms: Option<f64>,
    /// Slowest request (ms).
    pub max_ms: Option<f64>,
    /// Upstream calls the service made for these requests (sum of its
    /// `x-upstream-calls` headers).
    pub upstream_calls: u64,
    /// `upstream_calls / requests`: the retry amplification.
    pub calls_per_request: f64,
    /// Upstream calls beyond the first of each request.
    pub retries: u64,
    /// Upstream attempts that ended by their timeout.
    pub attempt_timeouts: u64,
    /// Refused by the bulkhead (shed, full, or waited too long).
    pub bulkhead_rejections: u64,
    /// Of those, by priority: critical, high, normal, low.
    pub bulkhead_rejections_by_priority: [u64; 4],
    /// Refused by the circuit breaker.
    pub breaker_rejections: u64,
    /// Gave up because the retry budget refused a retry.
    pub budget_denials: u64,
}

impl ServiceStats {
    /// Aggregate `samples`.
    #[must_use]
    pub fn of<'a>(samples: impl IntoIterator<Item = &'a Sample>) -> Self {
        let mut s = Self::default();
        let mut latencies = Vec::new();
        for x in samples {
            s.requests += 1;
            s.served += u64::from(x.served());
            s.fresh += u64::from(x.fresh());
            s.stale += u64::from(x.stale());
            s.no_response += u64::from(x.status == 0);
            s.upstream_calls += u64::from(x.calls);
            s.retries += u64::from(x.calls.saturating_sub(1));
            s.attempt_timeouts += u64::from(x.timeouts);
            if let Some(via) = x.via {
                let refused = u64::from(via.is_bulkhead_rejection());
                s.bulkhead_rejections += refused;
                s.bulkhead_rejections_by_priority[x.priority as usize] += refused;
                s.breaker_rejections += u64::from(via == Via::BreakerOpen);
                s.budget_denials += u64::from(via == Via::RetryBudget);
            }
            latencies.push(x.latency_ns);
        }
        latencies.sort_unstable();
        s.success_pct = percent(s.served, s.requests);
        s.degraded_pct = percent(s.stale, s.requests);
        s.fresh_pct = percent(s.fresh, s.requests);
        s.p50_ms = percentile(&latencies, 50).map(ms_1dp);
        s.p99_ms = percentile(&latencies, 99).map(ms_1dp);
        s.max_ms = latencies.last().copied().map(ms_1dp);
        s.calls_per_request = if s.requests == 0 {
            0.0
        } else {
            s.upstream_calls as f64 / s.requests as f64
        };
        s
    }
}

/// The retry budget's promise for one phase, and what was measured.
///
/// Finagle's invariant is "retries in a ttl ≤ `min_retries_per_sec`·ttl +
/// `percent_can_retry`·requests in that ttl". seawall's budget counts in 10 buckets
/// of ttl/10, so over an interval `I` of length `|I|` it promises
///
/// `retries made in I ≤ min·(|I| + ttl) + p·(deposits made in [start(I) − ttl, end(I)))`
///
/// Proof: going back from `I`'s last bucket that holds a retry, take the live
/// window (10 buckets) of that retry, then the last retry before that window, and
/// so on. These windows are disjoint, lie within `[start(I) − ttl, end(I))`, hold
/// every retry of `I`, and number at most `|I|/ttl + 1`; and each holds at most
/// `min·ttl + p·its deposits` retries, since the budget withdraws a retry only
/// while the balance of the live window covers it.
///
/// A request arriving at the service at `t` deposits and retries within
/// `[t, t + deadline]` (every wait of the pipeline is cut to the deadline). So the
/// retries of the requests that *arrived* in the phase `[a, b)` fall in
/// `I = [a, b + deadline)`, and the deposits that can fund them were made by
/// requests that arrived in `[a − ttl − w − deadline, b + deadline)` and reached
/// the retry layer (the bulkhead and the breaker let them through; their
/// `x-seawall-via` says so). The extra bucket `w = ttl/10` covers a deposit whose
/// clock reading lags the budget's newest one by a few µs: the budget files it in
/// the newer bucket (DESIGN §0), one bucket later than its own reading.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct BudgetCheck {
    /// Retries of the protected requests that arrived in the phase (measured from
    /// the `x-upstream-calls` headers).
    pub retries: u64,
    /// Requests that deposited in the funding interval: arrived in
    /// `[a − ttl − ttl/10 − deadline, b + deadline)` and reached the retry layer. A request
    /// without an answer (arrival and path unknown) is counted too, so the bound
    /// stays an upper bound.
    pub deposits: u64,
    /// `min·(phase + deadline + ttl) + p·deposits`.
    pub bound: f64,
}

/// The budget's bound: `min_per_sec·(span + ttl) + percent·deposits`, with
/// durations in ns and `percent` as a fraction (0.2 for 20 %).
#[must_use]
pub fn budget_bound(
    min_per_sec: u32,
    percent: f64,
    ttl_ns: u64,
    span_ns: u64,
    deposits: u64,
) -> f64 {
    f64::from(min_per_sec) * (span_ns + ttl_ns) as f64 / 1e9 + percent * deposits as f64
}

/// The [`BudgetCheck`] of the phase `[a, b)` for the protected service's `samples`.
#[must_use]
pub fn budget_check(
    samples: &[&Sample],
    (a, b): (u64, u64),
    deadline_ns: u64,
    (min_per_sec, percent, ttl_ns): (u32, f64, u64),
) -> BudgetCheck {
    let in_phase = |t: u64| a <= t && t < b;
    let funding_from = a.saturating_sub(ttl_ns + ttl_ns / 10 + deadline_ns);
    let funds = |t: u64| funding_from <= t && t < b + deadline_ns;
    let retries = samples
        .iter()
        .filter(|s| s.arrival_ns.is_some_and(in_phase))
        .map(|s| u64::from(s.calls.saturating_sub(1)))
        .sum();
    let deposits = samples
        .iter()
        .filter(|s| s.arrival_ns.is_none_or(funds) && s.via.is_none_or(Via::reached_retry))
        .count() as u64;
    BudgetCheck {
        retries,
        deposits,
        bound: budget_bound(
            min_per_sec,
            percent,
            ttl_ns,
            (b - a) + deadline_ns,
            deposits,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::Service;
    use crate::service::{Source, Via};
    use seawall_core::Priority;

    #[test]
    fn nearest_rank_percentiles_worked_by_hand() {
        let ten: Vec<u64> = (1..=10).collect();
        // p50 of 1..10: rank ⌈5⌉ = 5 → 5; p99: rank ⌈9.9⌉ = 10 → 10; p10: rank 1.
        assert_eq!(percentile(&ten, 50), Some(5));
        assert_eq!(percentile(&ten, 99), Some(10));
        assert_eq!(percentile(&ten, 10), Some(1));
        assert_eq!(percentile(&ten, 11), Some(2));
        // 200 values 1..=200: p99 is rank 198, p50 rank 100.
        let many: Vec<u64> = (1..=200).collect();
        assert_eq!(percentile(&many, 99), Some(198));
        assert_eq!(percentile(&many, 50), Some(100));
        // 101 values: p99 rank ⌈99.99⌉ = 100; p50 rank ⌈50.5⌉ = 51.
        let odd: Vec<u64> = (0..101).map(|x| x * 10).collect();
        assert_eq!(percentile(&odd, 99), Some(990));
        assert_eq!(percentile(&odd, 50), Some(500));
        assert_eq!(percentile(&[7], 99), Some(7));
        assert_eq!(percentile(&[], 50), None);
        // Out-of-range p is clamped to 1 ..= 100.
        assert_eq!(percentile(&ten, 0), Some(1));
        assert_eq!(percentile(&ten, 250), Some(10));
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn percent_and_rounding() {
        assert!((percent(1, 3) - 33.333_333).abs() < 1e-5);
        assert!(close(percent(19, 20), 95.0));
        assert!(close(percent(5, 0), 0.0));
        assert!(close(ms_1dp(1_234_567), 1.2));
        assert!(close(ms_1dp(1_250_000), 1.3));
        assert!(close(ms_1dp(999_949_999), 999.9));
    }

    fn sample(calls: u32, source: Option<Source>, via: Via, latency_ms: u64) -> Sample {
        Sample {
            service: Service::Protected,
            phase: 0,
            priority: Priority::Low,
            sent_ns: 0,
            latency_ns: latency_ms * 1_000_000,
            status: if source.is_some() { 200 } else { 503 },
            source,
            calls,
            timeouts: 0,
            via: Some(via),
            arrival_ns: Some(0),
        }
    }

    #[test]
    fn service_stats_worked_by_hand() {
        // 4 requests: fresh after 1 call (10 ms), fresh after 3 calls (300 ms),
        // stale after a budget refusal with 2 calls (900 ms), 503 after shedding
        // (0 calls, 1 ms).
        let xs = [
            sample(1, Some(Source::Primary), Via::Primary, 10),
            sample(3, Some(Source::Primary), Via::Primary, 300),
            sample(2, Some(Source::StaleCache), Via::RetryBudget, 900),
            sample(0, None, Via::BulkheadShed, 1),
        ];
        let s = ServiceStats::of(&xs);
        assert_eq!((s.requests, s.served, s.fresh, s.stale), (4, 3, 2, 1));
        assert!(
            close(s.success_pct, 75.0) && close(s.degraded_pct, 25.0) && close(s.fresh_pct, 50.0)
        );
        // Sorted latencies 1, 10, 300, 900: p50 rank 2 → 10 ms; p99 rank 4 → 900 ms.
        assert_eq!(
            (s.p50_ms, s.p99_ms, s.max_ms),
            (Some(10.0), Some(900.0), Some(900.0))
        );
        // 6 calls for 4 requests; retries 0 + 2 + 1 + 0.
        assert_eq!((s.upstream_calls, s.retries), (6, 3));
        assert!(close(s.calls_per_request, 1.5));
        assert_eq!(
            (
                s.bulkhead_rejections,
                s.budget_denials,
                s.breaker_rejections
            ),
            (1, 1, 0)
        );
    }

    #[test]
    fn budget_bound_worked_by_hand() {
        // min 5/s over a 15 s phase + 1 s deadline + 2 s ttl = 90, plus 20 % of
        // 1400 requests = 280: 370 retries.
        let b = budget_bound(5, 0.2, 2_000_000_000, 16_000_000_000, 1400);
        assert!(close(b, 370.0));
        // The DESIGN oracle: min 0, p 0.6, 10 requests buy exactly 6 retries.
        assert!(close(budget_bound(0, 0.6, 1_000_000_000, 0, 10), 6.0));
    }

    #[test]
    fn budget_check_counts_by_arrival_and_path() {
        let s = 1_000_000_000;
        let at = |arrival: Option<u64>, calls: u32, via: Option<Via>| Sample {
            arrival_ns: arrival,
            via,
            ..sample(calls, Some(Source::Primary), Via::Primary, 1)
        };
        let ok = Some(Via::Primary);
        // Phase [10 s, 20 s), deadline 1 s, ttl 2 s: retries count for arrivals in
        // [10, 20); deposits are arrivals in [6.8, 21) that reached the retry
        // layer, and requests with no answer.
        let xs = [
            at(Some(6_800_000_000 - 1), 3, ok), // just before the funding interval
            at(Some(6_800_000_000), 3, ok),     // first instant of it: deposits only
            at(Some(8 * s), 0, Some(Via::BreakerOpen)), // refused: no deposit
            at(Some(9 * s), 0, Some(Via::BulkheadShed)), // refused: no deposit
            at(Some(10 * s), 3, Some(Via::RetryBudget)), // 2 retries, deposits
            at(Some(15 * s), 0, Some(Via::BreakerOpen)), // in phase, no deposit
            at(Some(20 * s - 1), 2, ok),        // 1 retry, deposits
            at(Some(20 * s), 3, ok),            // next phase, deposits by 21 s
            at(Some(21 * s), 3, ok),            // too late to fund
            at(None, 0, None),                  // no answer: counted as a deposit
        ];
        let refs: Vec<&Sample> = xs.iter().collect();
        let c = budget_check(&refs, (10 * s, 20 * s), s, (5, 0.2, 2 * s));
        assert_eq!(c.retries, 3);
        assert_eq!(c.deposits, 5);
        // 5 · (10 + 1 + 2) + 0.2 · 5 = 66.
        assert!(close(c.bound, 66.0));
    }
}
