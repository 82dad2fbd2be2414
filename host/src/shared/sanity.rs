//! Values read from a shared region, held to the configuration this process
//! holds (DESIGN §8: content is untrusted).
//!
//! A process attached to a region goes on reading it after another process, or
//! a stray write, may have overwritten its bytes. The core keeps such a region
//! from crashing or hanging anyone, but a word it reads back as a number — a
//! time, a count — can still be one that no honest sequence of operations
//! stores: an open period of 54 years, 693800 permits held in a bulkhead of 4.
//! Shown to a caller, such a number is a lie; each check here returns the value
//! read, or [`Corrupt`] when the configuration rules it out, so that the caller
//! reports a corrupt region (Rust `Corrupt`, C `SEAWALL_STATUS_REGION_CORRUPT`,
//! Python `SharedRegionError`, Node `ESHARED`) instead of the number.
//!
//! Pass the configuration the process holds: for a shared structure, the one
//! [`SharedRegion::config_checked`](super::SharedRegion::config_checked)
//! returns (the region's, held to the fingerprint this process agreed on when
//! it opened), never the region's configuration read unchecked, which may be
//! overwritten along with the value. Every bound below follows from the
//! configuration and the core's rules (DESIGN §3, §5, §10); none depends on a
//! clock, so no honest value is ever refused, whatever the callers' clocks say.

use seawall_core::{
    BreakerConfig, BreakerMetrics, Corrupt, MAX_OPENINGS, RateLimitError, RateLimiterConfig, Ratio,
    Rejected, SemaphoreConfig, SemaphoreRejected, SemaphoreSnapshot, State, WindowConfig,
    WindowCounts,
};

/// `Ok(value)` when `honest`, else [`Corrupt`].
fn held<V>(honest: bool, value: V) -> Result<V, Corrupt> {
    if honest { Ok(value) } else { Err(Corrupt) }
}

/// The longest open period (ns) a breaker of `config` can report (DESIGN §3.2):
/// the open duration of the last consecutive opening it counts
/// ([`MAX_OPENINGS`]), `open_duration · multiplier^(k−1)` rounded down at each
/// step and capped by `max_open_duration`, plus the most `open_jitter_factor`
/// adds to it. Every honest `retry_after` is at most this: an opening's
/// `open_until` is the breaker's own clock (the latest `now` any caller gave)
/// plus that opening's duration, and a `retry_after` counts from that clock or
/// later. `u64::MAX` when the periods grow uncapped past the clock's end.
///
/// Up to [`MAX_OPENINGS`] multiplications; a handle that checks every
/// rejection works it out once, from its configuration, when it opens.
#[must_use]
pub fn longest_open_ns(config: &BreakerConfig) -> u64 {
    let cap = config.max_open_duration_ns.unwrap_or(u64::MAX);
    let mut d = config.open_duration_ns.min(cap);
    if config.open_backoff_multiplier > Ratio::ONE {
        for _ in 1..MAX_OPENINGS {
            let next = config.open_backoff_multiplier.scale(d).min(cap);
            // At the cap, or too short for the multiplier to round up: it stays.
            if next == d {
                break;
            }
            d = next;
        }
    }
    if config.open_jitter_factor > Ratio::ZERO {
        d = d.saturating_add(config.open_jitter_factor.scale(d));
    }
    // A state restored from an export (DESIGN §3.7) may be open for as long as
    // the cap allows, whatever this configuration's own periods.
    d.max(config.max_open_duration_ns.unwrap_or(0))
}

/// A breaker's `retry_after` (ns), as [`Breaker::retry_after`] or a metrics
/// snapshot reports it: at most [`longest_open_ns`].
///
/// [`Breaker::retry_after`]: crate::breaker::Breaker::retry_after
pub fn check_retry_after(
    config: &BreakerConfig,
    retry_after_ns: Option<u64>,
) -> Result<Option<u64>, Corrupt> {
    check_retry_after_within(longest_open_ns(config), retry_after_ns)
}

/// [`check_retry_after`] with the bound worked out already
/// (`longest_open_ns(config)`), for a path that must not loop.
pub fn check_retry_after_within(
    longest_open_ns: u64,
    retry_after_ns: Option<u64>,
) -> Result<Option<u64>, Corrupt> {
    held(
        retry_after_ns.is_none_or(|r| r <= longest_open_ns),
        retry_after_ns,
    )
}

/// A breaker's refusal: only an open breaker's carries a `retry_after`
/// (DESIGN §3.2: half-open-full and forced-open refusals carry none), and it is
/// at most [`longest_open_ns`] (worked out already: this is the rejection path).
pub fn check_rejected(longest_open_ns: u64, rejected: Rejected) -> Result<Rejected, Corrupt> {
    let Rejected {
        state,
        retry_after_ns,
    } = rejected;
    check_retry_after_within(longest_open_ns, retry_after_ns)?;
    held(retry_after_ns.is_none() || state == State::Open, rejected)
}

/// A breaker's metrics snapshot: the state word's fields as its state allows
/// them, the count window's counts, and the `retry_after`.
///
/// - Half-open epochs are odd and every other state's even (the core keeps the
///   parity so a record knows a probe by its epoch).
/// - Closed, forced open and disabled count no openings; open and half-open at
///   least one.
/// - A closed breaker's run of failures stays below `consecutive_failures` (it
///   opens when the run reaches it) and is 0 when that rule is off (not counted).
/// - Half-open: at most `half_open_max_calls` probes in flight, and fewer
///   successes than `half_open_success_threshold` (the one that reaches it closes).
/// - A count window holds at most `size` calls; failures and slow calls are
///   among them, slow failures among both (one word holds all four, read at
///   once). A time window's counts are read bucket by bucket while others
///   record, so they are not compared.
pub fn check_breaker_metrics(
    config: &BreakerConfig,
    metrics: BreakerMetrics,
) -> Result<BreakerMetrics, Corrupt> {
    let m = &metrics;
    let half_open = m.state == State::HalfOpen;
    let openings_ok = match m.state {
        State::Closed | State::ForcedOpen | State::Disabled => m.openings == 0,
        State::Open | State::HalfOpen => (1..=MAX_OPENINGS).contains(&m.openings),
    };
    let run_ok = match config.consecutive_failures {
        Some(limit) => m.consecutive_failures < limit.max(1),
        None => m.consecutive_failures == 0,
    };
    let probes_ok = !half_open
        || (m.half_open_in_flight <= config.half_open_max_calls
            && m.half_open_successes < config.half_open_success_threshold.max(1));
    let window_ok = match config.window {
        WindowConfig::Count { size } => count_window_ok(u64::from(size), &m.window),
        WindowConfig::Time { .. } => true,
    };
    check_retry_after(config, m.retry_after_ns)?;
    held(
        (m.epoch & 1 == 1) == half_open && openings_ok && run_ok && probes_ok && window_ok,
        metrics,
    )
}

fn count_window_ok(size: u64, w: &WindowCounts) -> bool {
    w.calls <= size
        && w.failures <= w.calls
        && w.slow <= w.calls
        && w.slow_failures <= w.failures.min(w.slow)
}

/// A semaphore's occupancy (DESIGN §5): at most `max_concurrent` permits held
/// (granted waiters included) and `max_queue` waiters queued.
pub fn check_snapshot(
    config: &SemaphoreConfig,
    snapshot: SemaphoreSnapshot,
) -> Result<SemaphoreSnapshot, Corrupt> {
    held(
        snapshot.active <= config.max_concurrent && snapshot.queued <= config.max_queue,
        snapshot,
    )
}

/// A semaphore's refusal, whose occupancy is a snapshot's
/// ([`check_snapshot`]).
pub fn check_semaphore_rejected(
    config: &SemaphoreConfig,
    rejected: SemaphoreRejected,
) -> Result<SemaphoreRejected, Corrupt> {
    let occupancy = SemaphoreSnapshot {
        active: rejected.active,
        queued: rejected.queued,
    };
    check_snapshot(config, occupancy).map(|_| rejected)
}

/// A semaphore's limit for one priority, as read from its region: exactly
/// `limit_of_config`, what the configuration gives that priority
/// ([`SemaphoreConfig::limit`] of the configuration the process holds).
pub fn check_limit(limit_of_config: u32, limit: u32) -> Result<u32, Corrupt> {
    held(limit == limit_of_config, limit)
}

/// A rate limiter's answer to a request for `n` cells (DESIGN §10), given the
/// configuration the process holds: `n` outside `1 ..= burst` is the caller's
/// error and nothing else is; `n` inside it is never
/// [`RateLimitError::InvalidCells`] (a limiter whose burst reads otherwise —
/// a zeroed one says "between 1 and 0" — is corrupt, not the caller), and `n`
/// outside it is never admitted.
pub fn check_rate_limit(
    config: &RateLimiterConfig,
    n: u32,
    taken: Result<(), RateLimitError>,
) -> Result<Result<(), RateLimitError>, Corrupt> {
    let valid = (1..=config.burst).contains(&n);
    let honest = match taken {
        Ok(()) => valid,
        Err(RateLimitError::Rejected { retry_after_ns }) => {
            valid && (retry_after_ns == u64::MAX || retry_after_ns <= longest_wait_ns(config, n))
        }
        Err(RateLimitError::InvalidCells(_)) => !valid,
    };
    held(honest, taken)
}

/// The longest an honest refusal of `n` cells asks to wait: the theoretical
/// arrival time is never more than the tolerance ahead of the latest `now`
/// (an admission moves it there at most), so a refusal waits at most `n`
/// emission intervals, plus the tolerance and a second for callers whose
/// `now` lags another's. (`u64::MAX`, "never", is the end of the clock.)
fn longest_wait_ns(config: &RateLimiterConfig, n: u32) -> u64 {
    config
        .emission_interval_ns()
        .saturating_mul(u64::from(n))
        .saturating_add(config.tolerance_ns())
        .saturating_add(1_000_000_000)
}

#[cfg(test)]
mod tests {
    use super::*;
    use seawall_core::{ConfigError, Field, Problem};

    #[test]
    fn a_rate_limiter_wait_past_its_longest_is_corrupt() {
        // 10 per second, burst 5: T = 100 ms, τ = 400 ms; 2 cells wait at most
        // 200 + 400 ms, and a second for a lagging caller: 1.6 s.
        let c = RateLimiterConfig {
            rate: 10,
            period_ns: 1_000_000_000,
            burst: 5,
        };
        let wait = |ns| Err(RateLimitError::Rejected { retry_after_ns: ns });
        assert_eq!(
            check_rate_limit(&c, 2, wait(1_600_000_000)),
            Ok(wait(1_600_000_000))
        );
        assert_eq!(check_rate_limit(&c, 2, wait(1_600_000_001)), Err(Corrupt));
        assert_eq!(check_rate_limit(&c, 2, wait(u64::MAX)), Ok(wait(u64::MAX)));
        // What an overwritten arrival time made one limiter answer.
        assert_eq!(
            check_rate_limit(&c, 1, wait(4_600_000_000_000_000_000)),
            Err(Corrupt)
        );
    }

    fn breaker(
        open_ms: u64,
        multiplier_pct: u64,
        max_ms: Option<u64>,
        jitter_pct: u64,
    ) -> BreakerConfig {
        BreakerConfig {
            open_duration_ns: open_ms * 1_000_000,
            open_backoff_multiplier: Ratio::from_percent(multiplier_pct),
            max_open_duration_ns: max_ms.map(|m| m * 1_000_000),
            open_jitter_factor: Ratio::from_percent(jitter_pct),
            ..BreakerConfig::DEFAULT
        }
    }

    #[test]
    fn the_longest_open_period_worked_by_hand() {
        const MS: u64 = 1_000_000;
        // 30 s, no backoff, no cap: 30 s; ± 50 % jitter: 45 s.
        assert_eq!(longest_open_ns(&breaker(30_000, 100, None, 0)), 30_000 * MS);
        assert_eq!(
            longest_open_ns(&breaker(30_000, 100, None, 50)),
            45_000 * MS
        );
        // The same under a cap of 300 s: a restored state may be open that long.
        assert_eq!(
            longest_open_ns(&breaker(30_000, 100, Some(300_000), 50)),
            300_000 * MS
        );
        // 1 s doubling, capped at 10 s: 1, 2, 4, 8, 10; ± 20 %: 12 s.
        assert_eq!(
            longest_open_ns(&breaker(1_000, 200, Some(10_000), 20)),
            12_000 * MS
        );
        // A cap below the first period caps that one too.
        assert_eq!(
            longest_open_ns(&breaker(5_000, 300, Some(2_000), 0)),
            2_000 * MS
        );
        // 1 ns × 1.5 rounds down to 1 ns for ever.
        let c = BreakerConfig {
            open_duration_ns: 1,
            ..breaker(0, 150, None, 0)
        };
        assert_eq!(longest_open_ns(&c), 1);
        // Doubling uncapped reaches the end of the clock in 64 steps of 2047.
        assert_eq!(longest_open_ns(&breaker(1_000, 200, None, 0)), u64::MAX);
        // ×1.001 uncapped for 2046 steps: 1 s · 1.001^2046 ≈ 7.7289 s, less
        // what each step rounds away (under 1 ns a step).
        let c = BreakerConfig {
            open_backoff_multiplier: Ratio::from_ppm(1_001_000),
            ..breaker(1_000, 100, None, 0)
        };
        let d = longest_open_ns(&c);
        assert!((7_728_000_000..7_730_000_000).contains(&d), "{d}");
    }

    #[test]
    fn a_retry_after_past_the_longest_open_period_is_corrupt() {
        let c = breaker(30_000, 100, None, 0);
        let longest = 30_000_000_000;
        assert_eq!(check_retry_after(&c, None), Ok(None));
        assert_eq!(check_retry_after(&c, Some(longest)), Ok(Some(longest)));
        assert_eq!(check_retry_after(&c, Some(longest + 1)), Err(Corrupt));
        // What a breaker reported from an overwritten region.
        assert_eq!(
            check_retry_after(&c, Some(1_713_643_524_538_000_000)),
            Err(Corrupt)
        );
    }

    #[test]
    fn only_an_open_refusal_carries_a_retry_after() {
        let open = |r| Rejected {
            state: State::Open,
            retry_after_ns: Some(r),
        };
        assert_eq!(check_rejected(100, open(100)), Ok(open(100)));
        assert_eq!(check_rejected(100, open(101)), Err(Corrupt));
        for state in [State::HalfOpen, State::ForcedOpen, State::Closed] {
            let none = Rejected {
                state,
                retry_after_ns: None,
            };
            assert_eq!(check_rejected(100, none), Ok(none));
            let some = Rejected {
                state,
                retry_after_ns: Some(1),
            };
            assert_eq!(check_rejected(100, some), Err(Corrupt));
        }
    }

    #[test]
    fn occupancy_past_the_configuration_is_corrupt() {
        let c = SemaphoreConfig {
            max_concurrent: 4,
            max_queue: 16,
            ..SemaphoreConfig::DEFAULT
        };
        let s = |active, queued| SemaphoreSnapshot { active, queued };
        assert_eq!(check_snapshot(&c, s(4, 16)), Ok(s(4, 16)));
        assert_eq!(check_snapshot(&c, s(693_800, 0)), Err(Corrupt));
        assert_eq!(check_snapshot(&c, s(0, 17)), Err(Corrupt));
        let r = |active, queued| SemaphoreRejected {
            reason: seawall_core::RejectReason::Full,
            active,
            queued,
        };
        assert_eq!(check_semaphore_rejected(&c, r(4, 16)), Ok(r(4, 16)));
        assert_eq!(check_semaphore_rejected(&c, r(5, 0)), Err(Corrupt));
        assert_eq!(check_limit(2, 2), Ok(2));
        assert_eq!(check_limit(2, 0), Err(Corrupt));
    }

    #[test]
    fn a_rate_limiter_blames_the_caller_only_for_cells_outside_its_burst() {
        let c = RateLimiterConfig {
            burst: 3,
            ..RateLimiterConfig::DEFAULT
        };
        let invalid = |max| {
            Err(RateLimitError::InvalidCells(ConfigError {
                field: Field::CellsPerAcquire,
                problem: Problem::OutOfRange { min: 1, max },
            }))
        };
        let rejected = Err(RateLimitError::Rejected { retry_after_ns: 5 });
        assert_eq!(check_rate_limit(&c, 1, Ok(())), Ok(Ok(())));
        assert_eq!(check_rate_limit(&c, 3, rejected), Ok(rejected));
        assert_eq!(check_rate_limit(&c, 4, invalid(3)), Ok(invalid(3)));
        // A zeroed limiter: burst 0 in the region, 3 in the configuration held.
        assert_eq!(check_rate_limit(&c, 1, invalid(0)), Err(Corrupt));
        assert_eq!(check_rate_limit(&c, 4, Ok(())), Err(Corrupt));
        assert_eq!(check_rate_limit(&c, 0, rejected), Err(Corrupt));
    }
}
