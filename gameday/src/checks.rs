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
    /// Whether it held.
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

/// The names of the checks that failed.
#[must_use]
pub fn failed(checks: &[Check]) -> Vec<&'static str> {
    checks
        .iter()
        .filter(|c| !c.passed)
        .map(|c| c.name)
        .collect()
}

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
            (
                u.fresh_pct >= BASELINE_FRESH_PCT && q.fresh_pct >= BASELINE_FRESH_PCT,
                format!(
                    "fresh: unprotected {:.1} %, protected {:.1} %",
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
            (n > 0, format!("protected attempt timeouts: {n}"))
        },
    )
}

fn breaker_opened_under_errors(r: &Report) -> Check {
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
    )
}

fn breaker_closed_in_recovery(r: &Report) -> Check {
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
            let measured = late.unprotected.requests > 0 && late.protected.requests > 0;
            (
                measured && lu <= bu + RECOVERY_MARGIN_PP && lp <= bp + RECOVERY_MARGIN_PP,
                format!(
                    "not fresh, baseline -> late recovery: unprotected {bu:.1} % -> {lu:.1} %, \
                     protected {bp:.1} % -> {lp:.1} %"
                ),
            )
        },
    )
}

fn protected_p99_within_deadline(r: &Report) -> Check {
    let deadline = r.settings.deadline_ms as f64;
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
    let spent: Vec<String> = r
        .phases
        .iter()
        .filter(|p| p.retry_budget.retries as f64 > p.retry_budget.bound)
        .map(|p| {
            format!(
                "phase {}: {} retries > bound {:.1}",
                p.number, p.retry_budget.retries, p.retry_budget.bound
            )
        })
        .collect();
    let all = r
        .phases
        .iter()
        .map(|p| {
            format!(
                "{}: {} <= {:.0}",
                p.number, p.retry_budget.retries, p.retry_budget.bound
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    Check {
        name: "retries-within-budget",
        expectation: "in every phase the protected service's retries stay within what the \
                      retry budget allows: min_retries_per_sec * (phase + deadline + ttl) + \
                      percent_can_retry * requests that could fund them",
        passed: spent.is_empty() && r.phases.len() == PHASES.len(),
        detail: if spent.is_empty() {
            format!("retries <= bound per phase: {all}")
        } else {
            spent.join("; ")
        },
    }
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
    let deadline = r.settings.deadline_ms as f64;
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
    )
}
