//! The report: per phase and service, the numbers of the table, the JSON file, and
//! the printed table.

use std::fmt::Write as _;

use seawall_core::State;
use serde::Serialize;

use crate::checks::Check;
use crate::load::{Sample, Service};
use crate::phases::{Faults, PHASES, RECOVERY};
use crate::settings::{Settings, SettingsReport};
use crate::stats::{BudgetCheck, ServiceStats, budget_check};
use crate::target::{PhaseCounters, TargetData};
use crate::upstream::UpstreamCalls;

/// One phase's place on the clock, and the breaker's state changes in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PhaseSpan {
    /// Start (ns of the experiment clock): when its faults were set and its first
    /// request was due.
    pub start_ns: u64,
    /// End (ns): the next phase's start.
    pub end_ns: u64,
    /// State changes of the breaker between start and end (its lifetime total
    /// read at both ends).
    pub breaker_transitions: u64,
}

/// Everything a run produced.
#[derive(Clone, Debug)]
pub struct RunData {
    /// `--seed`.
    pub seed: u64,
    /// `--rate`.
    pub rate: u32,
    /// Seconds per phase.
    pub phase_secs: u32,
    /// The settings the protected service ran with (against a target: only its
    /// deadline is known, the rest is the built-in demo's and unused).
    pub settings: Settings,
    /// The phases as they ran.
    pub phases: Vec<PhaseSpan>,
    /// Every request of both services.
    pub samples: Vec<Sample>,
    /// The breaker's state, sampled every few ms: (ns, state).
    pub breaker: Vec<(u64, State)>,
    /// Calls the upstream received, by caller.
    pub upstream_calls: UpstreamCalls,
    /// Wall-clock seconds the experiment took, servers' start to stop.
    pub wall_secs: f64,
    /// A run against a target (`--target`): what the proxy and the metrics said.
    pub target: Option<TargetData>,
}

impl RunData {
    /// The name of `service`'s row: `unprotected` / `protected` in the demo,
    /// `direct` (empty when there is none) / `target` against a target.
    #[must_use]
    pub fn row_name(&self, service: Service) -> &'static str {
        match (&self.target, service) {
            (None, s) => s.name(),
            (Some(t), Service::Unprotected) if t.direct.is_some() => "direct",
            (Some(_), Service::Unprotected) => "",
            (Some(_), Service::Protected) => "target",
        }
    }

    /// Samples of `service` sent in phase `phase`.
    pub fn of(&self, service: Service, phase: usize) -> impl Iterator<Item = &Sample> {
        self.samples
            .iter()
            .filter(move |s| s.service == service && s.phase == phase)
    }
}

/// Unprotected and protected, side by side.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Pair {
    /// Only a generous client timeout.
    pub unprotected: ServiceStats,
    /// seawall's full pipeline.
    pub protected: ServiceStats,
}

impl Pair {
    /// The stats of `service`.
    #[must_use]
    pub fn get(&self, service: Service) -> &ServiceStats {
        match service {
            Service::Unprotected => &self.unprotected,
            Service::Protected => &self.protected,
        }
    }
}

/// What the breaker did during one phase.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct BreakerPhase {
    /// State changes (every opening, half-opening and closing).
    pub transitions: u64,
    /// States seen by the sampler during the phase, in the order first seen.
    pub states_seen: Vec<&'static str>,
    /// Share of the phase's samples in which it was not closed (%).
    pub not_closed_pct: f64,
    /// State at the phase's last sample.
    pub state_at_end: &'static str,
}

/// One row pair of the table.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PhaseReport {
    /// 1-based.
    pub number: usize,
    /// Phase name.
    pub name: &'static str,
    /// Faults the upstream injected.
    pub faults: Faults,
    /// Start, seconds after the load started.
    pub start_s: f64,
    /// End, seconds after the load started.
    pub end_s: f64,
    /// Both services' numbers, by the phase in which each request was sent.
    pub services: Pair,
    /// The protected service's breaker.
    pub breaker: BreakerPhase,
    /// The protected service's retries against its retry budget's promise (not
    /// measured against a target: it needs each answer's trace headers and the
    /// budget's settings).
    pub retry_budget: Option<BudgetCheck>,
}

/// Upstream calls counted at both ends.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CallsReport {
    /// As the upstream counted them.
    pub counted_by_upstream: UpstreamCalls,
    /// Sum of the services' `x-upstream-calls` headers: unprotected, protected.
    pub reported_by_services: [u64; 2],
}

/// Which of the numbers a run had a source for.
// Each flag is a separate fact about the run (and a field of the JSON report), not
// a state machine in disguise.
#[allow(clippy::struct_excessive_bools)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Measured {
    /// The comparison row (unprotected / direct).
    pub comparison: bool,
    /// The breaker's state and transitions.
    pub breaker: bool,
    /// Bulkhead rejections.
    pub bulkhead: bool,
    /// Retry-budget denials.
    pub budget_denials: bool,
    /// The retry-budget bound (each answer's trace headers and the budget's settings).
    pub budget_bound: bool,
}

impl Measured {
    /// Everything: the built-in demo.
    pub const ALL: Self = Self {
        comparison: true,
        breaker: true,
        bulkhead: true,
        budget_denials: true,
        budget_bound: true,
    };
}

/// A run against a target, as the JSON report shows it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TargetReport {
    /// The load's URL template.
    pub target: String,
    /// Where the proxy forwarded (`builtin`: the gameday's own upstream).
    pub upstream: String,
    /// Where the proxy listened.
    pub proxy: String,
    /// The metrics endpoint read, if any.
    pub metrics: Option<String>,
    /// The breaker followed there.
    pub breaker: Option<String>,
    /// The direct row's URL template, if any.
    pub direct: Option<String>,
    /// Per phase: calls through the proxy (the target's, those it gave up on, the direct ones).
    pub proxy_calls: Vec<crate::proxy::PhaseCalls>,
    /// Per phase: what the metrics' counters rose by (`null`: not exported).
    pub counters: Vec<PhaseCounters>,
    /// Reads of the metrics endpoint that worked, and that failed.
    pub scrapes: (u64, u64),
}

/// A change of the breaker's state.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BreakerChange {
    /// Seconds after the load started.
    pub t_s: f64,
    /// New state.
    pub state: &'static str,
}

/// Everything `gameday-report.json` holds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    /// `--seed`.
    pub seed: u64,
    /// Requests per second sent to each service.
    pub rate_per_service: u32,
    /// Seconds per phase.
    pub phase_secs: u32,
    /// The protected service's pipeline (the built-in demo's; unknown for a target).
    pub settings: Option<SettingsReport>,
    /// The protected service's (or the target's) per-request deadline (ms).
    pub deadline_ms: u64,
    /// The two rows' names: `unprotected` / `protected` in the demo, `direct`
    /// (the dependency called through the proxy; empty when there is none) /
    /// `target` against a target.
    pub rows: [&'static str; 2],
    /// What was measured; a `false` here leaves its columns `-` and its checks
    /// not checked.
    pub measured: Measured,
    /// A run against a target: where everything was, and the proxy's counts.
    pub target: Option<TargetReport>,
    /// Scheduling slack allowed on top of the deadline for the protected p99 (ms).
    pub p99_slack_ms: f64,
    /// The six phases.
    pub phases: Vec<PhaseReport>,
    /// Both services over the second half of the recovery phase.
    pub recovery_second_half: Pair,
    /// Upstream calls, counted by the upstream and by the services.
    pub upstream_calls: CallsReport,
    /// The breaker's state changes as sampled.
    pub breaker_timeline: Vec<BreakerChange>,
    /// Every expectation and whether it held.
    pub checks: Vec<Check>,
    /// Wall-clock seconds of the experiment.
    pub wall_secs: f64,
}

/// Allowed on top of the deadline for the protected p99, for what is not the
/// pipeline's doing: tokio's 1 ms timer granularity, loopback HTTP both ways, and a
/// 2-core machine shared with compilers (a worker thread may wait for a core).
pub const P99_SLACK_MS: f64 = 50.0;

fn secs_since(t0: u64, t: u64) -> f64 {
    (t.saturating_sub(t0) as f64 / 1e7).round() / 100.0
}

fn breaker_phase(samples: &[(u64, State)], span: &PhaseSpan) -> BreakerPhase {
    let mut b = BreakerPhase {
        transitions: span.breaker_transitions,
        state_at_end: State::Closed.name(),
        ..BreakerPhase::default()
    };
    let mut n = 0u64;
    let mut not_closed = 0u64;
    for &(t, s) in samples {
        if t < span.start_ns || t >= span.end_ns {
            continue;
        }
        n += 1;
        not_closed += u64::from(s != State::Closed);
        if !b.states_seen.contains(&s.name()) {
            b.states_seen.push(s.name());
        }
        b.state_at_end = s.name();
    }
    b.not_closed_pct = crate::stats::percent(not_closed, n);
    b
}

/// Build the report (checks not yet evaluated: see [`crate::checks::evaluate`]).
#[must_use]
pub fn build(run: &RunData) -> Report {
    let t0 = run.phases.first().map_or(0, |p| p.start_ns);
    let st = &run.settings;
    let budget = (
        st.budget.min_retries_per_sec,
        st.budget.percent_can_retry.ppm() as f64 / 1e6,
        st.budget.ttl_ns,
    );
    let protected: Vec<&Sample> = run
        .samples
        .iter()
        .filter(|s| s.service == Service::Protected)
        .collect();
    let phases = run
        .phases
        .iter()
        .enumerate()
        .map(|(i, span)| PhaseReport {
            number: i + 1,
            name: PHASES.get(i).map_or("?", |p| p.name),
            faults: PHASES.get(i).map(|p| p.faults).unwrap_or_default(),
            start_s: secs_since(t0, span.start_ns),
            end_s: secs_since(t0, span.end_ns),
            services: Pair {
                unprotected: ServiceStats::of(run.of(Service::Unprotected, i)),
                protected: ServiceStats::of(run.of(Service::Protected, i)),
            },
            breaker: breaker_phase(&run.breaker, span),
            retry_budget: run.target.is_none().then(|| {
                budget_check(
                    &protected,
                    (span.start_ns, span.end_ns),
                    st.deadline_ns,
                    budget,
                )
            }),
        })
        .collect();
    let mut phases: Vec<PhaseReport> = phases;
    if let Some(t) = &run.target {
        for (i, p) in phases.iter_mut().enumerate() {
            from_proxy_and_metrics(p, t, i);
        }
    }
    let recovery_second_half = run.phases.get(RECOVERY).map_or_else(Pair::default, |span| {
        let half = span.start_ns + (span.end_ns - span.start_ns) / 2;
        let late = |svc: Service| {
            ServiceStats::of(run.of(svc, RECOVERY).filter(move |s| s.sent_ns >= half))
        };
        Pair {
            unprotected: late(Service::Unprotected),
            protected: late(Service::Protected),
        }
    });
    let header_calls = |svc: Service| {
        run.samples
            .iter()
            .filter(|s| s.service == svc)
            .map(|s| u64::from(s.calls))
            .sum()
    };
    let mut breaker_timeline: Vec<BreakerChange> = Vec::new();
    let mut last = None;
    for &(t, s) in &run.breaker {
        if last != Some(s) {
            breaker_timeline.push(BreakerChange {
                t_s: secs_since(t0, t),
                state: s.name(),
            });
            last = Some(s);
        }
    }
    let (measured, target) = target_parts(run);
    Report {
        seed: run.seed,
        rate_per_service: run.rate,
        phase_secs: run.phase_secs,
        settings: run.target.is_none().then(|| st.report()),
        deadline_ms: st.deadline_ns / 1_000_000,
        rows: Service::BOTH.map(|s| run.row_name(s)),
        measured,
        target,
        p99_slack_ms: P99_SLACK_MS,
        phases,
        recovery_second_half,
        upstream_calls: CallsReport {
            counted_by_upstream: run.upstream_calls,
            reported_by_services: [
                header_calls(Service::Unprotected),
                header_calls(Service::Protected),
            ],
        },
        breaker_timeline,
        checks: Vec::new(),
        wall_secs: (run.wall_secs * 10.0).round() / 10.0,
    }
}

/// What was measured, and the target's part of the report (none for the demo).
fn target_parts(run: &RunData) -> (Measured, Option<TargetReport>) {
    run.target.as_ref().map_or((Measured::ALL, None), |t| {
        let has =
            |pick: fn(&PhaseCounters) -> Option<u64>| t.counters.iter().any(|c| pick(c).is_some());
        (
            Measured {
                comparison: t.direct.is_some(),
                breaker: t.breaker_read,
                bulkhead: has(|c| c.bulkhead_rejections),
                budget_denials: has(|c| c.budget_denials),
                budget_bound: false,
            },
            Some(TargetReport {
                target: t.target.clone(),
                upstream: t.upstream.clone(),
                proxy: t.proxy.clone(),
                metrics: t.metrics.clone(),
                breaker: t.breaker.clone(),
                direct: t.direct.clone(),
                proxy_calls: t.calls.clone(),
                counters: t.counters.clone(),
                scrapes: t.scrapes,
            }),
        )
    })
}

/// Against a target the per-answer trace headers are missing: upstream calls and
/// abandoned calls come from the proxy, rejections and denials from the metrics.
fn from_proxy_and_metrics(p: &mut PhaseReport, t: &TargetData, i: usize) {
    let calls = t.calls.get(i).copied().unwrap_or_default();
    let counters = t.counters.get(i).copied().unwrap_or_default();
    let per = |n: u64, s: &ServiceStats| {
        if s.requests == 0 {
            0.0
        } else {
            n as f64 / s.requests as f64
        }
    };
    let q = &mut p.services.protected;
    q.upstream_calls = calls.target;
    q.calls_per_request = per(calls.target, q);
    q.retries = 0;
    q.attempt_timeouts = calls.target_abandoned;
    q.bulkhead_rejections = counters.bulkhead_rejections.unwrap_or(0);
    q.bulkhead_rejections_by_priority = [0; 4];
    q.breaker_rejections = 0;
    q.budget_denials = counters.budget_denials.unwrap_or(0);
    let u = &mut p.services.unprotected;
    u.upstream_calls = calls.direct;
    u.calls_per_request = per(calls.direct, u);
}

/// The table's lines about a target: where everything was, and what the rows are.
fn target_header(out: &mut String, r: &Report) {
    if let Some(t) = &r.target {
        let _ = writeln!(
            *out,
            "target {} (its dependency: {} through the proxy {}); metrics {}",
            t.target,
            t.upstream,
            t.proxy,
            t.metrics.as_deref().unwrap_or("not read")
        );
        let _ = writeln!(
            *out,
            "rows: target = your service; {}calls/req and timeouts (calls it gave up on) counted by the proxy",
            if r.measured.comparison {
                "direct = the dependency called straight through the proxy (no protection); "
            } else {
                ""
            }
        );
    }
}

/// The lines under the table: bulkhead rejections by priority, upstream calls.
fn footer(out: &mut String, r: &Report) {
    let shed: Vec<String> = r
        .phases
        .iter()
        .filter(|p| r.target.is_none() && p.services.protected.bulkhead_rejections > 0)
        .map(|p| {
            let [c, h, n, l] = p.services.protected.bulkhead_rejections_by_priority;
            format!("phase {}: {c}/{h}/{n}/{l}", p.number)
        })
        .collect();
    if !shed.is_empty() {
        let _ = writeln!(
            *out,
            "\nbulkhead rejections by priority (critical/high/normal/low): {}",
            shed.join(", ")
        );
    }
    let c = &r.upstream_calls;
    if r.target.is_some() {
        let _ = writeln!(
            *out,
            "\ncalls through the proxy: {} from the target, {} direct",
            c.counted_by_upstream.protected, c.counted_by_upstream.unprotected
        );
        return;
    }
    let _ = writeln!(
        *out,
        "upstream calls: counted by the upstream {} unprotected / {} protected; \
         reported by the services {} / {}",
        c.counted_by_upstream.unprotected,
        c.counted_by_upstream.protected,
        c.reported_by_services[0],
        c.reported_by_services[1]
    );
}

fn opt_ms(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |x| format!("{x:.1}"))
}

/// The table, as printed.
#[must_use]
pub fn table(r: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "seawall gameday: seed {}, {} requests/s to each service, 6 phases of {} s, deadline {} ms",
        r.seed, r.rate_per_service, r.phase_secs, r.deadline_ms
    );
    target_header(&mut out, r);
    let _ = writeln!(
        out,
        "success = answered with product data (fresh or stale); degraded = stale-cache answers; \
         latency as the client saw it"
    );
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "{:<17} {:<11} {:>5} {:>8} {:>9} {:>8} {:>8} {:>9} {:>8} {:>8} {:>8} {:>8}",
        "phase",
        "service",
        "reqs",
        "success%",
        "degraded%",
        "p50 ms",
        "p99 ms",
        "calls/req",
        "timeouts",
        "breaker",
        "bulkhead",
        "budget"
    );
    let _ = writeln!(
        out,
        "{:<17} {:<11} {:>5} {:>8} {:>9} {:>8} {:>8} {:>9} {:>8} {:>8} {:>8} {:>8}",
        "", "", "", "", "", "", "", "", "", "changes", "rejects", "denials"
    );
    let m = &r.measured;
    let shown = |on: bool, n: u64| if on { n.to_string() } else { "-".into() };
    for p in &r.phases {
        let mut first = true;
        for svc in Service::BOTH {
            let name = r.rows[svc as usize];
            if name.is_empty() {
                continue;
            }
            let s = p.services.get(svc);
            let label = if first {
                format!("{} {}", p.number, p.name)
            } else {
                String::new()
            };
            first = false;
            let (br, bh, bd) = if svc == Service::Protected {
                (
                    shown(m.breaker, p.breaker.transitions),
                    shown(m.bulkhead, s.bulkhead_rejections),
                    shown(m.budget_denials, s.budget_denials),
                )
            } else {
                ("-".into(), "-".into(), "-".into())
            };
            let _ = writeln!(
                out,
                "{:<17} {:<11} {:>5} {:>8.1} {:>9.1} {:>8} {:>8} {:>9.2} {:>8} {:>8} {:>8} {:>8}",
                label,
                name,
                s.requests,
                s.success_pct,
                s.degraded_pct,
                opt_ms(s.p50_ms),
                opt_ms(s.p99_ms),
                s.calls_per_request,
                s.attempt_timeouts,
                br,
                bh,
                bd
            );
        }
    }
    footer(&mut out, r);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::{Source, Via};

    const S: u64 = 1_000_000_000;

    fn sample(service: Service, phase: usize, at_ms: u64, fresh: bool) -> Sample {
        let sent_ns = at_ms * 1_000_000;
        Sample {
            service,
            phase,
            priority: seawall_core::Priority::Normal,
            sent_ns,
            latency_ns: 2_000_000,
            status: 200,
            source: Some(if fresh {
                Source::Primary
            } else {
                Source::StaleCache
            }),
            calls: 1,
            timeouts: 0,
            via: Some(Via::Primary),
            arrival_ns: Some(sent_ns),
        }
    }

    /// Six 10 s phases starting at 5 s on the clock.
    fn run(samples: Vec<Sample>, breaker: Vec<(u64, State)>) -> RunData {
        RunData {
            seed: 3,
            rate: 1,
            phase_secs: 10,
            settings: Settings::GAMEDAY,
            phases: (0..6)
                .map(|i| PhaseSpan {
                    start_ns: 5 * S + i * 10 * S,
                    end_ns: 5 * S + (i + 1) * 10 * S,
                    breaker_transitions: i,
                })
                .collect(),
            samples,
            breaker,
            upstream_calls: UpstreamCalls::default(),
            wall_secs: 61.04,
            target: None,
        }
    }

    #[test]
    fn breaker_per_phase_from_the_samples() {
        let b = vec![
            (5 * S, State::Closed),
            (36 * S, State::Open), // phase 4 is [35, 45)
            (38 * S, State::HalfOpen),
            (39 * S, State::Open),
            (44 * S, State::Closed),
            (45 * S, State::Open),   // phase 5
            (64 * S, State::Closed), // phase 6 is [55, 65)
        ];
        let r = build(&run(Vec::new(), b));
        let p4 = &r.phases[3].breaker;
        assert_eq!(p4.states_seen, ["open", "half_open", "closed"]);
        assert_eq!(p4.state_at_end, "closed");
        // 4 samples in [35, 45), 3 not closed.
        assert!((p4.not_closed_pct - 75.0).abs() < 1e-9);
        assert_eq!(p4.transitions, 3);
        assert_eq!(r.phases[4].breaker.state_at_end, "open");
        assert_eq!(r.phases[5].breaker.state_at_end, "closed");
        // No sample at all in phase 2: reported closed, nothing seen.
        assert!(r.phases[1].breaker.states_seen.is_empty());
        // The timeline keeps changes only, in seconds after the load started.
        let t: Vec<(f64, &str)> = r
            .breaker_timeline
            .iter()
            .map(|c| (c.t_s, c.state))
            .collect();
        assert_eq!(
            t,
            [
                (0.0, "closed"),
                (31.0, "open"),
                (33.0, "half_open"),
                (34.0, "open"),
                (39.0, "closed"),
                (40.0, "open"),
                (59.0, "closed")
            ]
        );
        assert!((r.wall_secs - 61.0).abs() < 1e-9);
    }

    #[test]
    fn phases_and_the_second_half_of_recovery() {
        let mut xs = Vec::new();
        // Recovery is [55, 65) s; its second half starts at 60 s.
        for (t, fresh) in [
            (55_000, false),
            (59_900, false),
            (60_000, true),
            (64_000, true),
        ] {
            xs.push(sample(Service::Protected, RECOVERY, t, fresh));
            xs.push(sample(Service::Unprotected, RECOVERY, t, true));
        }
        xs.push(sample(Service::Protected, 0, 6_000, true));
        let r = build(&run(xs, Vec::new()));
        let rec = &r.phases[RECOVERY].services;
        assert_eq!((rec.protected.requests, rec.protected.stale), (4, 2));
        assert_eq!(rec.unprotected.requests, 4);
        let late = &r.recovery_second_half;
        assert_eq!((late.protected.requests, late.protected.fresh), (2, 2));
        assert_eq!(late.unprotected.requests, 2);
        assert_eq!(r.phases[0].services.protected.requests, 1);
        assert_eq!(r.phases[0].services.unprotected.requests, 0);
        assert_eq!(r.upstream_calls.reported_by_services, [4, 5]);
        assert_eq!((r.phases[2].start_s, r.phases[2].end_s), (20.0, 30.0));
        // The table has one row per phase and service.
        let t = table(&r);
        assert!(t.contains("6 recovery"));
        for svc in ["protected", "unprotected"] {
            // The service column is characters 18 ..= 28.
            let rows = t
                .lines()
                .filter(|l| l.get(18..29).map(str::trim) == Some(svc));
            assert_eq!(rows.count(), 6, "{svc}");
        }
    }

    #[test]
    fn a_target_run_takes_its_counts_from_the_proxy_and_the_metrics() {
        use crate::proxy::PhaseCalls;
        use crate::target::{PhaseCounters, TargetData};
        let mut xs = Vec::new();
        // Phase 3: four target requests, two direct ones.
        for t in [25_000, 26_000, 27_000, 28_000] {
            xs.push(sample(Service::Protected, 2, t, true));
        }
        for t in [25_000, 26_000] {
            xs.push(sample(Service::Unprotected, 2, t, true));
        }
        let mut data = run(xs, vec![(5 * S, State::Closed)]);
        let mut calls = vec![PhaseCalls::default(); 6];
        calls[2] = PhaseCalls {
            target: 6,
            target_abandoned: 3,
            direct: 2,
        };
        let mut counters = vec![PhaseCounters::default(); 6];
        counters[2] = PhaseCounters {
            breaker_transitions: Some(4),
            bulkhead_rejections: Some(9),
            budget_denials: None,
        };
        data.target = Some(TargetData {
            target: "http://t/p/{id}".into(),
            upstream: "builtin".into(),
            proxy: "http://127.0.0.1:9".into(),
            metrics: Some("http://t/metrics".into()),
            breaker: None,
            deadline_ns: 1_000_000_000,
            direct: Some("http://127.0.0.1:9/inventory/{id}".into()),
            calls,
            counters,
            breaker_read: true,
            scrapes: (10, 1),
        });
        let r = build(&data);
        assert_eq!(r.rows, ["direct", "target"]);
        assert!(r.settings.is_none());
        let m = r.measured;
        assert!(m.comparison && m.breaker && m.bulkhead && !m.budget_denials && !m.budget_bound);
        let p = &r.phases[2];
        assert!(p.retry_budget.is_none());
        let q = &p.services.protected;
        // 6 calls for 4 requests, 3 given up on; the headers' 1 call each is not used.
        assert_eq!((q.upstream_calls, q.attempt_timeouts), (6, 3));
        assert!((q.calls_per_request - 1.5).abs() < 1e-9);
        assert_eq!((q.bulkhead_rejections, q.budget_denials), (9, 0));
        assert!((p.services.unprotected.calls_per_request - 1.0).abs() < 1e-9);
        let t = table(&r);
        let row = t.lines().find(|l| l.starts_with("3 +2000ms")).unwrap();
        assert!(row.contains(" direct "), "{row}");
        // The target row of phase 3: budget denials are not exported, so "-".
        let next = t
            .lines()
            .skip_while(|l| !l.starts_with("3 +2000ms"))
            .nth(1)
            .unwrap();
        assert!(
            next.contains(" target ") && next.trim_end().ends_with('-'),
            "{next}"
        );
        assert!(next.contains(" 1.50 ") && next.contains(" 9 "), "{next}");
    }
}
