//! The gameday's checklist: what must hold for the experiment to pass. A failed
//! check makes the process exit with status 1 and is named on the way out.

use serde::Serialize;

use crate::phases::{ALL_ERRORS, BASELINE, HALF_ERRORS, OUTAGES, PHASES, RECOVERY, SLOW};
use crate::report::{PhaseReport, Report};

/// The protected service must serve (fresh or stale) more than this share of
/// requests in every outage phase (%).
pub const SERVED_IN_OUTAGE_PCT: f64 = 95.0;
/// The stale cache must answer more than this share in the 100 % errors phase (%).
pub const STALE_IN_TOTAL_OUTAGE_PCT: f64 = 95.0;
/// Both services must answer fresh at least this share in the baseline (%), or the
/// machine, not the dependency, is what failed.
pub const BASELINE_FRESH_PCT: f64 = 99.0;
/// In the second half of recovery, the share of requests not answered fresh may
/// exceed the baseline's by at most this many percentage points.
pub const RECOVERY_MARGIN_PP: f64 = 2.0;

/// One expectation and how it went.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Check {
    /// Short name, printed when it fails.
    pub name: &'static str,
    /// What is expected, in words.
    pub expectation: &'static str,
    /// Whether it was decided at all: `false` when the run had no source for the
    /// numbers it needs (a target that does not expose them); then it is neither
    /// passed nor failed.
    pub checked: bool,
    /// Whether it held (`false` when not checked).
    pub passed: bool,
    /// The numbers it was decided on.
    pub detail: String,
}

/// Evaluate every check on `r`. A phase missing from the report fails the checks
/// that need it.
#[must_use]
pub fn evaluate(r: &Report) -> Vec<Check> {
    vec![
        baseline_healthy(r),
        timeouts_fired(r),
        breaker_opened_under_errors(r),
        breaker_closed_in_recovery(r),
        recovery_back_to_baseline(r),
        protected_p99_within_deadline(r),
        retries_within_budget(r),
        protected_served_in_outage(r),
        fallback_serves_stale(r),
        unprotected_degrades(r),
    ]
}

/// The names of the checks that failed (not those not checked).
#[must_use]
pub fn failed(checks: &[Check]) -> Vec<&'static str> {
    checks
        .iter()
        .filter(|c| c.checked && !c.passed)
        .map(|c| c.name)
        .collect()
}

/// `c`, or instead a not-checked entry saying `why`, when `known` is false.
fn if_known(known: bool, why: &str, c: Check) -> Check {
    if known {
        c
    } else {
        Check {
            checked: false,
            passed: false,
            detail: why.to_owned(),
            ..c
        }
    }
}

const NO_BREAKER: &str =
    "the breaker's state is not known (no --metrics, or it exports no seawall breaker state)";
const NO_COMPARISON: &str = "no unprotected comparison row (no --direct-path)";

/// A check that needs phase `i`: `decide` gives (passed, detail); a missing phase fails.
fn on_phase(
    r: &Report,
    i: usize,
    name: &'static str,
    expectation: &'static str,
    decide: impl Fn(&PhaseReport) -> (bool, String),
) -> Check {
    let (passed, detail) = r.phases.get(i).map_or_else(
        || (false, format!("phase {} is missing from the report", i + 1)),
        decide,
    );
    Check {
        name,
        expectation,
        checked: true,
        passed,
        detail,
    }
}

fn baseline_healthy(r: &Report) -> Check {
    on_phase(
        r,
        BASELINE,
        "baseline-healthy",
        "in the baseline both services answer fresh for at least 99 % of requests",
        |p| {
            let (u, q) = (&p.services.unprotected, &p.services.protected);
            let [un, pn] = r.rows;
            if !r.measured.comparison {
                return (
                    q.fresh_pct >= BASELINE_FRESH_PCT,
                    format!("fresh: {pn} {:.1} % ({NO_COMPARISON})", q.fresh_pct),
                );
            }
            (
                u.fresh_pct >= BASELINE_FRESH_PCT && q.fresh_pct >= BASELINE_FRESH_PCT,
                format!(
                    "fresh: {un} {:.1} %, {pn} {:.1} %",
                    u.fresh_pct, q.fresh_pct
                ),
            )
        },
    )
}

fn timeouts_fired(r: &Report) -> Check {
    on_phase(
        r,
        SLOW,
        "timeouts-fired",
        "with +2000 ms upstream latency the protected service's attempt timeouts fire",
        |p| {
            let n = p.services.protected.attempt_timeouts;
            let what = if r.target.is_some() {
                "calls the target gave up on (counted by the proxy)"
            } else {
                "protected attempt timeouts"
            };
            (n > 0, format!("{what}: {n}"))
        },
    )
}

fn breaker_opened_under_errors(r: &Report) -> Check {
    if_known(
        r.measured.breaker,
        NO_BREAKER,
        on_phase(
            r,
            HALF_ERRORS,
            "breaker-opened-under-errors",
            "with 50 % upstream errors the breaker opens during the phase, or is open in it \
         (the +2000 ms phase may have opened it already)",
            |p| {
                let b = &p.breaker;
                (
                    b.transitions > 0 || b.states_seen.iter().any(|s| *s != "closed"),
                    format!(
                        "transitions {}, states seen {:?}, not closed {:.0} % of the phase",
                        b.transitions, b.states_seen, b.not_closed_pct
                    ),
                )
            },
        ),
    )
}

fn breaker_closed_in_recovery(r: &Report) -> Check {
    if_known(
        r.measured.breaker,
        NO_BREAKER,
        on_phase(
            r,
            RECOVERY,
            "breaker-closed-in-recovery",
            "the breaker is closed at the end of the recovery phase",
            |p| {
                (
                    p.breaker.state_at_end == "closed",
                    format!(
                        "state at the end: {}, transitions in recovery: {}",
                        p.breaker.state_at_end, p.breaker.transitions
                    ),
                )
            },
        ),
    )
}

fn recovery_back_to_baseline(r: &Report) -> Check {
    let late = &r.recovery_second_half;
    on_phase(
        r,
        BASELINE,
        "recovery-back-to-baseline",
        "in the second half of recovery each service's share of requests not answered \
         fresh is at most its baseline share + 2 percentage points",
        |b| {
            let not_fresh = |fresh_pct: f64| 100.0 - fresh_pct;
            let (bu, bp) = (
                not_fresh(b.services.unprotected.fresh_pct),
                not_fresh(b.services.protected.fresh_pct),
            );
            let (lu, lp) = (
                not_fresh(late.unprotected.fresh_pct),
                not_fresh(late.protected.fresh_pct),
            );
            let [un, pn] = r.rows;
            let protected_ok = late.protected.requests > 0 && lp <= bp + RECOVERY_MARGIN_PP;
            if !r.measured.comparison {
                return (
                    protected_ok,
                    format!(
                        "not fresh, baseline -> late recovery: {pn} {bp:.1} % -> {lp:.1} % \
                         ({NO_COMPARISON})"
                    ),
                );
            }
            let unprotected_ok = late.unprotected.requests > 0 && lu <= bu + RECOVERY_MARGIN_PP;
            (
                unprotected_ok && protected_ok,
                format!(
                    "not fresh, baseline -> late recovery: {un} {bu:.1} % -> {lu:.1} %, \
                     {pn} {bp:.1} % -> {lp:.1} %"
                ),
            )
        },
    )
}

fn protected_p99_within_deadline(r: &Report) -> Check {
    let deadline = r.deadline_ms as f64;
    let limit = deadline + r.p99_slack_ms;
    let over: Vec<String> = r
        .phases
        .iter()
        .filter(|p| p.services.protected.p99_ms.is_none_or(|v| v > limit))
        .map(|p| match p.services.protected.p99_ms {
            Some(v) => format!("phase {} p99 {v:.1} ms", p.number),
            None => format!("phase {} has no requests", p.number),
        })
        .collect();
    let worst = r
        .phases
        .iter()
        .filter_map(|p| p.services.protected.p99_ms)
        .fold(0.0, f64::max);
    Check {
        name: "protected-p99-within-deadline",
        expectation: "in every phase the protected p99 latency is within the deadline \
                      (+ a scheduling slack)",
        checked: true,
        passed: over.is_empty() && r.phases.len() == PHASES.len(),
        detail: if over.is_empty() {
            format!(
                "worst p99 {worst:.1} ms <= {deadline} ms + {} ms over {} phases",
                r.p99_slack_ms,
                r.phases.len()
            )
        } else {
            format!(
                "over {deadline} ms + {} ms: {}",
                r.p99_slack_ms,
                over.join(", ")
            )
        },
    }
}

fn retries_within_budget(r: &Report) -> Check {
    let budgets: Vec<_> = r
        .phases
        .iter()
        .filter_map(|p| p.retry_budget.as_ref().map(|b| (p.number, b)))
        .collect();
    let spent: Vec<String> = budgets
        .iter()
        .filter(|(_, b)| b.retries as f64 > b.bound)
        .map(|(n, b)| format!("phase {n}: {} retries > bound {:.1}", b.retries, b.bound))
        .collect();
    let all = budgets
        .iter()
        .map(|(n, b)| format!("{n}: {} <= {:.0}", b.retries, b.bound))
        .collect::<Vec<_>>()
        .join(", ");
    let known = r.measured.budget_bound;
    if_known(
        known,
        "needs each answer's x-upstream-calls, x-arrival-ns and x-seawall-via \
                     headers and the retry budget's settings, which only the built-in demo has",
        Check {
            name: "retries-within-budget",
            expectation: "in every phase the protected service's retries stay within what the \
                      retry budget allows: min_retries_per_sec * (phase + deadline + ttl) + \
                      percent_can_retry * requests that could fund them",
            checked: true,
            passed: spent.is_empty() && budgets.len() == PHASES.len(),
            detail: if spent.is_empty() {
                format!("retries <= bound per phase: {all}")
            } else {
                spent.join("; ")
            },
        },
    )
}

/// A check over every outage phase: `each` gives (passed, detail) per phase.
fn on_outages(
    r: &Report,
    name: &'static str,
    expectation: &'static str,
    each: impl Fn(&PhaseReport) -> (bool, String),
) -> Check {
    let mut passed = true;
    let mut details = Vec::new();
    for &i in &OUTAGES {
        let (ok, d) = r.phases.get(i).map_or_else(
            || (false, format!("phase {} is missing from the report", i + 1)),
            &each,
        );
        passed &= ok;
        details.push(d);
    }
    Check {
        name,
        expectation,
        checked: true,
        passed,
        detail: details.join(", "),
    }
}

fn protected_served_in_outage(r: &Report) -> Check {
    on_outages(
        r,
        "protected-served-in-outage",
        "in every outage phase (+2000 ms, 50 % and 100 % errors) the protected service \
         answers more than 95 % of requests with product data, fresh or stale",
        |p| {
            let s = p.services.protected.success_pct;
            (
                s > SERVED_IN_OUTAGE_PCT,
                format!("phase {}: {s:.1} %", p.number),
            )
        },
    )
}

fn fallback_serves_stale(r: &Report) -> Check {
    on_phase(
        r,
        ALL_ERRORS,
        "fallback-serves-stale",
        "with 100 % upstream errors more than 95 % of protected answers come from the \
         stale cache, marked degraded",
        |p| {
            let d = p.services.protected.degraded_pct;
            (
                d > STALE_IN_TOTAL_OUTAGE_PCT,
                format!("stale answers: {d:.1} %"),
            )
        },
    )
}

fn unprotected_degrades(r: &Report) -> Check {
    let deadline = r.deadline_ms as f64;
    if_known(
        r.measured.comparison,
        NO_COMPARISON,
        on_outages(
            r,
            "unprotected-degrades",
            "in every outage phase the unprotected service answers at most 95 % of requests \
         or its p99 is past the deadline (the faults really hurt it)",
            |p| {
                let u = &p.services.unprotected;
                (
                    u.success_pct <= SERVED_IN_OUTAGE_PCT || u.p99_ms.is_some_and(|v| v > deadline),
                    format!(
                        "phase {}: success {:.1} %, p99 {} ms",
                        p.number,
                        u.success_pct,
                        u.p99_ms.map_or_else(|| "-".into(), |v| format!("{v:.0}"))
                    ),
                )
            },
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phases::{Faults, PHASES};
    use crate::report::{BreakerPhase, CallsReport, Measured, Pair, PhaseReport, Report};
    use crate::settings::Settings;
    use crate::stats::{BudgetCheck, ServiceStats, percent};

    /// Stats of `requests` answered `fresh` + `stale`, with p99 `p99_ms`.
    fn stats(requests: u64, fresh: u64, stale: u64, p99_ms: f64) -> ServiceStats {
        ServiceStats {
            requests,
            served: fresh + stale,
            fresh,
            stale,
            success_pct: percent(fresh + stale, requests),
            degraded_pct: percent(stale, requests),
            fresh_pct: percent(fresh, requests),
            p50_ms: Some(p99_ms / 2.0),
            p99_ms: Some(p99_ms),
            ..ServiceStats::default()
        }
    }

    fn phase(i: usize, unprotected: ServiceStats, protected: ServiceStats) -> PhaseReport {
        PhaseReport {
            number: i + 1,
            name: PHASES[i].name,
            faults: Faults::default(),
            start_s: i as f64 * 15.0,
            end_s: (i + 1) as f64 * 15.0,
            services: Pair {
                unprotected,
                protected,
            },
            breaker: BreakerPhase {
                transitions: 0,
                states_seen: vec!["closed"],
                not_closed_pct: 0.0,
                state_at_end: "closed",
            },
            retry_budget: Some(BudgetCheck {
                retries: 0,
                deposits: 1000,
                bound: 290.0,
            }),
        }
    }

    /// A run in which every expectation holds, by hand: deadline 1000 ms + 50 ms.
    fn passing() -> Report {
        let mut phases = vec![
            phase(0, stats(1000, 1000, 0, 5.0), stats(1000, 995, 0, 5.0)),
            phase(1, stats(1000, 1000, 0, 105.0), stats(1000, 1000, 0, 105.0)),
            // +2000 ms: unprotected answers all, but late.
            phase(
                2,
                stats(1000, 1000, 0, 2005.0),
                stats(1000, 100, 900, 1000.7),
            ),
            phase(3, stats(1000, 500, 0, 4.0), stats(1000, 200, 800, 40.0)),
            phase(4, stats(1000, 0, 0, 4.0), stats(1000, 0, 1000, 40.0)),
            phase(5, stats(1000, 1000, 0, 4.0), stats(1000, 980, 20, 5.0)),
        ];
        phases[2].services.protected.attempt_timeouts = 120;
        phases[2].breaker.transitions = 5;
        phases[2].breaker.states_seen = vec!["closed", "open", "half_open"];
        phases[3].breaker.transitions = 20;
        phases[3].breaker.states_seen = vec!["open", "half_open", "closed"];
        phases[3].retry_budget.as_mut().unwrap().retries = 150;
        Report {
            seed: 1,
            rate_per_service: 80,
            phase_secs: 15,
            settings: Some(Settings::GAMEDAY.report()),
            deadline_ms: 1000,
            rows: ["unprotected", "protected"],
            measured: Measured::ALL,
            target: None,
            p99_slack_ms: 50.0,
            phases,
            recovery_second_half: Pair {
                unprotected: stats(500, 500, 0, 4.0),
                protected: stats(1000, 990, 10, 5.0),
            },
            upstream_calls: CallsReport {
                counted_by_upstream: crate::upstream::UpstreamCalls::default(),
                reported_by_services: [0, 0],
            },
            breaker_timeline: Vec::new(),
            checks: Vec::new(),
            wall_secs: 90.0,
        }
    }

    fn failures(r: &Report) -> Vec<&'static str> {
        failed(&evaluate(r))
    }

    #[test]
    fn a_good_run_passes_every_check() {
        let checks = evaluate(&passing());
        assert_eq!(checks.len(), 10);
        assert!(failed(&checks).is_empty(), "{checks:#?}");
        let names: Vec<_> = checks.iter().map(|c| c.name).collect();
        let mut unique = names.clone();
        unique.dedup();
        assert_eq!(names, unique);
    }

    #[test]
    fn baseline_must_be_healthy() {
        let mut r = passing();
        r.phases[0].services.protected = stats(1000, 990, 0, 5.0); // exactly 99 %
        assert!(failures(&r).is_empty());
        r.phases[0].services.protected = stats(1000, 989, 0, 5.0);
        // 98.9 % fresh in the baseline; recovery (1.0 % not fresh) is still within
        // 1.1 % + 2 pp of it.
        assert_eq!(failures(&r), ["baseline-healthy"]);
    }

    #[test]
    fn timeouts_must_fire_in_the_slow_phase() {
        let mut r = passing();
        r.phases[SLOW].services.protected.attempt_timeouts = 0;
        assert_eq!(failures(&r), ["timeouts-fired"]);
    }

    #[test]
    fn breaker_must_open_under_errors() {
        let mut r = passing();
        // Still open from the +2000 ms phase, no new transition: that counts.
        r.phases[HALF_ERRORS].breaker.transitions = 0;
        r.phases[HALF_ERRORS].breaker.states_seen = vec!["open"];
        assert!(failures(&r).is_empty());
        r.phases[HALF_ERRORS].breaker.states_seen = vec!["closed"];
        assert_eq!(failures(&r), ["breaker-opened-under-errors"]);
    }

    #[test]
    fn breaker_must_close_in_recovery() {
        let mut r = passing();
        r.phases[RECOVERY].breaker.state_at_end = "half_open";
        assert_eq!(failures(&r), ["breaker-closed-in-recovery"]);
    }

    #[test]
    fn recovery_must_come_back_to_the_baseline() {
        let mut r = passing();
        // Baseline protected: 0.5 % not fresh; late recovery 2.5 % is exactly 0.5 + 2.
        r.recovery_second_half.protected = stats(1000, 975, 25, 5.0);
        assert!(failures(&r).is_empty());
        r.recovery_second_half.protected = stats(1000, 974, 26, 5.0);
        assert_eq!(failures(&r), ["recovery-back-to-baseline"]);
        // The unprotected side too: baseline 0 %, 2.2 % not fresh late.
        let mut r = passing();
        r.recovery_second_half.unprotected = stats(500, 489, 0, 4.0);
        assert_eq!(failures(&r), ["recovery-back-to-baseline"]);
        // No requests at all in the second half is no evidence.
        let mut r = passing();
        r.recovery_second_half.protected = ServiceStats::default();
        assert_eq!(failures(&r), ["recovery-back-to-baseline"]);
    }

    #[test]
    fn protected_p99_must_stay_within_deadline_plus_slack() {
        let mut r = passing();
        r.phases[SLOW].services.protected.p99_ms = Some(1050.0);
        assert!(failures(&r).is_empty());
        r.phases[SLOW].services.protected.p99_ms = Some(1050.1);
        let checks = evaluate(&r);
        assert_eq!(failed(&checks), ["protected-p99-within-deadline"]);
        let c = checks.iter().find(|c| !c.passed).unwrap();
        assert!(c.detail.contains("phase 3 p99 1050.1 ms"), "{}", c.detail);
    }

    #[test]
    fn retries_must_stay_within_the_budget() {
        let mut r = passing();
        r.phases[HALF_ERRORS].retry_budget.as_mut().unwrap().retries = 290; // = bound
        assert!(failures(&r).is_empty());
        r.phases[HALF_ERRORS].retry_budget.as_mut().unwrap().retries = 291;
        assert_eq!(failures(&r), ["retries-within-budget"]);
    }

    #[test]
    fn protected_must_serve_more_than_95_percent_in_outages() {
        let mut r = passing();
        r.phases[HALF_ERRORS].services.protected = stats(1000, 150, 801, 40.0); // 95.1 %
        assert!(failures(&r).is_empty());
        r.phases[HALF_ERRORS].services.protected = stats(1000, 150, 800, 40.0); // 95.0 %
        assert_eq!(failures(&r), ["protected-served-in-outage"]);
    }

    #[test]
    fn fallback_must_serve_stale_in_the_total_outage() {
        let mut r = passing();
        // Everything answered, but only 95.0 % from the stale cache.
        r.phases[ALL_ERRORS].services.protected = stats(1000, 50, 950, 40.0);
        assert_eq!(failures(&r), ["fallback-serves-stale"]);
    }

    #[test]
    fn the_unprotected_service_must_be_hurt() {
        let mut r = passing();
        // 100 % answered with p99 exactly at the deadline: not hurt.
        r.phases[SLOW].services.unprotected = stats(1000, 1000, 0, 1000.0);
        assert_eq!(failures(&r), ["unprotected-degrades"]);
        let mut r = passing();
        r.phases[HALF_ERRORS].services.unprotected = stats(1000, 950, 0, 4.0); // 95.0 %: hurt
        assert!(failures(&r).is_empty());
        r.phases[HALF_ERRORS].services.unprotected = stats(1000, 951, 0, 4.0);
        assert_eq!(failures(&r), ["unprotected-degrades"]);
    }

    #[test]
    fn missing_phases_fail_the_checks_that_need_them() {
        let mut r = passing();
        r.phases.truncate(5);
        let f = failures(&r);
        for name in [
            "breaker-closed-in-recovery",
            "protected-p99-within-deadline",
            "retries-within-budget",
        ] {
            assert!(f.contains(&name), "{f:?}");
        }
        let checks = evaluate(&r);
        let c = checks
            .iter()
            .find(|c| c.name == "breaker-closed-in-recovery")
            .unwrap();
        assert_eq!(c.detail, "phase 6 is missing from the report");
    }

    /// A target run without metrics or a direct row: what cannot be decided is not
    /// checked (never passed, never failed), and what can still fails as before.
    #[test]
    fn what_a_target_does_not_expose_is_not_checked() {
        let mut r = passing();
        r.measured = Measured {
            comparison: false,
            breaker: false,
            bulkhead: false,
            budget_denials: false,
            budget_bound: false,
        };
        // Numbers that would fail these checks are not looked at.
        r.phases[HALF_ERRORS].breaker.states_seen = vec!["closed"];
        r.phases[HALF_ERRORS].retry_budget.as_mut().unwrap().retries = 10_000;
        r.phases[SLOW].services.unprotected = stats(1000, 1000, 0, 4.0);
        r.phases[0].services.unprotected = stats(1000, 0, 0, 4.0);
        r.recovery_second_half.unprotected = ServiceStats::default();
        let checks = evaluate(&r);
        assert!(failed(&checks).is_empty(), "{checks:#?}");
        let unchecked: Vec<_> = checks
            .iter()
            .filter(|c| !c.checked)
            .map(|c| c.name)
            .collect();
        assert_eq!(
            unchecked,
            [
                "breaker-opened-under-errors",
                "breaker-closed-in-recovery",
                "retries-within-budget",
                "unprotected-degrades"
            ]
        );
        assert!(checks.iter().filter(|c| !c.checked).all(|c| !c.passed));
        // The protected side alone still decides the baseline and recovery checks.
        r.phases[0].services.protected = stats(1000, 989, 0, 5.0);
        assert_eq!(failures(&r), ["baseline-healthy"]);
        let mut r2 = passing();
        r2.measured.comparison = false;
        r2.recovery_second_half.protected = stats(1000, 974, 26, 5.0);
        assert_eq!(failures(&r2), ["recovery-back-to-baseline"]);
    }
}
