//! The experiment itself: start the upstream and both services, drive the load
//! through the six phases while sampling the breaker, then stop everything.
//!
//! Every wait is bounded: requests by the load's own timeout, the final drain by
//! that timeout plus a margin, each admin call by a few seconds, each server stop
//! by its grace period (then it is aborted).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use seawall_core::State;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio::time::{MissedTickBehavior, sleep_until, timeout_at};

use crate::clock::{instant_at, now_ns};
use crate::http::Client;
use crate::load::{self, Endpoint, Requests, Sample, Service, due_ns};
use crate::phases::{Faults, PHASES};
use crate::protected::{self, Protected};
use crate::report::{PhaseSpan, RunData};
use crate::service;
use crate::settings::Settings;
use crate::upstream;

/// The longest the load waits for an answer: past the unprotected service's 10 s
/// client timeout, so that timeout, not the load's, is what the report shows.
pub const LOAD_TIMEOUT_NS: u64 = 12_000_000_000;
/// How often the breaker's state is sampled for the report and the picture.
const SAMPLE_EVERY: Duration = Duration::from_millis(20);
/// How long a stopping server may take to finish its in-flight requests.
pub(crate) const STOP_GRACE: Duration = Duration::from_secs(3);
/// Bound on each call to the upstream's admin endpoints.
pub(crate) const ADMIN_TIMEOUT: Duration = Duration::from_secs(3);

/// What to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Seed of every random choice.
    pub seed: u64,
    /// Requests per second to each service.
    pub rate: u32,
    /// Seconds per phase.
    pub phase_secs: u32,
}

/// Counts of answered requests while the run goes on, for the progress lines.
#[derive(Debug, Default)]
struct Live {
    /// Per phase, per service: answered, with product data, stale.
    counts: [[[AtomicU64; 3]; 2]; PHASES.len()],
}

impl Live {
    fn record(&self, s: &Sample) {
        if let Some(c) = self.counts.get(s.phase) {
            let c = &c[s.service as usize];
            c[0].fetch_add(u64::from(s.status != 0), Ordering::Relaxed);
            c[1].fetch_add(u64::from(s.served()), Ordering::Relaxed);
            c[2].fetch_add(u64::from(s.stale()), Ordering::Relaxed);
        }
    }

    /// A progress line; a row without a name (no direct row) is left out.
    fn line(&self, phase: usize, sent: u64, names: [&str; 2], breaker: Option<State>) -> String {
        let mut parts = Vec::new();
        for (svc, name) in Service::BOTH.into_iter().zip(names) {
            if name.is_empty() {
                continue;
            }
            let c = &self.counts[phase][svc as usize];
            let [answered, served, stale] = [0, 1, 2].map(|k| c[k].load(Ordering::Relaxed));
            parts.push(format!(
                "{name} {answered}/{sent} answered, {:.1} % with data ({:.1} % stale)",
                crate::stats::percent(served, sent),
                crate::stats::percent(stale, sent),
            ));
        }
        format!(
            "    so far: {} | breaker {}",
            parts.join(" | "),
            breaker.map_or("unknown", State::name)
        )
    }
}

pub(crate) fn describe(f: &Faults) -> String {
    match (f.latency_ms, f.error_ppm) {
        (0, 0) => "upstream healthy".into(),
        (ms, 0) => format!("upstream +{ms} ms"),
        (0, e) => format!("upstream fails {} % of calls", e / 10_000),
        (ms, e) => format!("upstream +{ms} ms and {} % errors", e / 10_000),
    }
}

/// What differs between the built-in demo and a run against a target: how the
/// phase's faults are put in force, and what is known of the breaker while the
/// load runs.
pub(crate) trait Bench {
    /// Put phase `i`'s faults in force.
    async fn enter_phase(&self, i: usize, faults: Faults) -> Result<(), String>;
    /// The breaker's state now, if known without waiting.
    fn breaker_now(&self) -> Option<State>;
    /// The breaker's state changes so far, if known without waiting.
    fn transitions(&self) -> u64;
    /// The rows' names: the comparison, then the service under test.
    fn names(&self) -> [&'static str; 2];
}

/// The built-in demo: the upstream's admin endpoint and the protected pipeline.
struct Demo<'a> {
    admin: Client,
    base: &'a str,
    state: &'a Protected,
}

impl Bench for Demo<'_> {
    async fn enter_phase(&self, _: usize, faults: Faults) -> Result<(), String> {
        upstream::set(&self.admin, self.base, faults, ADMIN_TIMEOUT).await
    }

    fn breaker_now(&self) -> Option<State> {
        Some(self.state.breaker.state())
    }

    fn transitions(&self) -> u64 {
        self.state.breaker.metrics(now_ns()).totals.transitions
    }

    fn names(&self) -> [&'static str; 2] {
        [Service::Unprotected.name(), Service::Protected.name()]
    }
}

/// Run the whole experiment; `progress` gets a line at each phase's start and end.
pub async fn run(plan: Plan, progress: &mut dyn FnMut(&str)) -> Result<RunData, String> {
    let wall = Instant::now();
    let settings = Settings::GAMEDAY;
    let upstream = upstream::start(plan.seed)
        .await
        .map_err(|e| format!("starting the upstream on 127.0.0.1: {e}"))?;
    let base = upstream.base_url();
    let unprotected = service::start_unprotected(base.clone(), settings.unprotected_timeout_ns)
        .await
        .map_err(|e| format!("starting the unprotected service: {e}"))?;
    let state = Arc::new(
        Protected::new(settings, base.clone(), plan.seed)
            .map_err(|e| format!("the protected pipeline's settings: {e:?}"))?,
    );
    let protected = protected::start(Arc::clone(&state))
        .await
        .map_err(|e| format!("starting the protected service: {e}"))?;
    progress(&format!(
        "upstream {base}, unprotected {}, protected {}",
        unprotected.base_url(),
        protected.base_url()
    ));
    let endpoints = [
        Some(Endpoint::Builtin(unprotected.base_url())),
        Some(Endpoint::Builtin(protected.base_url())),
    ];
    let result = demo(plan, &settings, &base, &endpoints, &state, progress).await;
    // Stop everything whether or not the run went well. The upstream's stop also
    // releases any call it holds on purpose (a hang), so the services drain too.
    let (a, b, c) = tokio::join!(
        upstream.stop(STOP_GRACE),
        unprotected.stop(STOP_GRACE),
        protected.stop(STOP_GRACE)
    );
    if !(a && b && c) {
        progress("note: a server had to be aborted after its grace period");
    }
    let mut data = result?;
    data.wall_secs = wall.elapsed().as_secs_f64();
    Ok(data)
}

async fn demo(
    plan: Plan,
    settings: &Settings,
    base: &str,
    endpoints: &[Option<Endpoint>; 2],
    state: &Arc<Protected>,
    progress: &mut dyn FnMut(&str),
) -> Result<RunData, String> {
    let (stop_sampler, stopped) = watch::channel(false);
    let sampler = tokio::spawn(sample_breaker(Arc::clone(state), stopped));
    let bench = Demo {
        admin: Client::new(),
        base,
        state,
    };
    let driven = drive(plan, endpoints, &bench, progress).await;
    let _ = stop_sampler.send(true);
    let breaker = sampler
        .await
        .map_err(|e| format!("the breaker sampler failed: {e}"))?;
    let (phases, answers) = driven?;
    let upstream_calls = upstream::calls_so_far(&bench.admin, base, ADMIN_TIMEOUT).await?;
    Ok(RunData {
        seed: plan.seed,
        rate: plan.rate,
        phase_secs: plan.phase_secs,
        settings: *settings,
        phases,
        samples: answers,
        breaker,
        upstream_calls,
        wall_secs: 0.0,
        target: None,
    })
}

/// Drive the open-loop load to both `endpoints` through the six phases: the
/// phases as they ran, and every request's sample sorted by time sent.
pub(crate) async fn drive(
    plan: Plan,
    endpoints: &[Option<Endpoint>; 2],
    bench: &impl Bench,
    progress: &mut dyn FnMut(&str),
) -> Result<(Vec<PhaseSpan>, Vec<Sample>), String> {
    let clients = [Client::new(), Client::new()];
    let live = Arc::new(Live::default());
    let names = bench.names();
    let per_phase = u64::from(plan.rate) * u64::from(plan.phase_secs);
    let total = per_phase * PHASES.len() as u64;
    let mut requests = Requests::new(plan.seed);
    let mut tasks = JoinSet::new();
    let mut done_samples = Vec::with_capacity(usize::try_from(total * 2).unwrap_or(0));
    let mut spans: Vec<PhaseSpan> = Vec::new();
    let t0 = now_ns() + 20_000_000;
    for i in 0..total {
        let phase = usize::try_from(i / per_phase).unwrap_or(usize::MAX);
        let due = due_ns(t0, i, plan.rate);
        sleep_until(instant_at(due).into()).await;
        if i % per_phase == 0 {
            if let Some(prev) = spans.last_mut() {
                prev.end_ns = due;
                prev.breaker_transitions = bench.transitions() - prev.breaker_transitions;
                progress(&live.line(phase - 1, per_phase, names, bench.breaker_now()));
            }
            let p = &PHASES[phase];
            bench.enter_phase(phase, p.faults).await?;
            spans.push(PhaseSpan {
                start_ns: due,
                end_ns: due,
                breaker_transitions: bench.transitions(),
            });
            progress(&format!(
                "phase {}/{} {}: {} for {} s",
                phase + 1,
                PHASES.len(),
                p.name,
                describe(&p.faults),
                plan.phase_secs
            ));
        }
        let (id, priority) = requests.next_request();
        for (k, svc) in Service::BOTH.into_iter().enumerate() {
            let Some(endpoint) = endpoints[k].clone() else {
                continue;
            };
            let (client, live) = (clients[k].clone(), Arc::clone(&live));
            tasks.spawn(async move {
                let s = load::send(
                    &client,
                    &endpoint,
                    svc,
                    phase,
                    id,
                    priority,
                    LOAD_TIMEOUT_NS,
                )
                .await;
                live.record(&s);
                s
            });
        }
        while let Some(done) = tasks.try_join_next() {
            done_samples.push(done.map_err(|e| format!("a load task failed: {e}"))?);
        }
    }
    let end = due_ns(t0, total, plan.rate);
    sleep_until(instant_at(end).into()).await;
    if let Some(last) = spans.last_mut() {
        last.end_ns = end;
        last.breaker_transitions = bench.transitions() - last.breaker_transitions;
    }
    // Every request is bounded by the load timeout, so this drain is too.
    let drain_until = instant_at(now_ns() + LOAD_TIMEOUT_NS + 2_000_000_000);
    loop {
        match timeout_at(drain_until.into(), tasks.join_next()).await {
            Ok(Some(done)) => {
                done_samples.push(done.map_err(|e| format!("a load task failed: {e}"))?);
            }
            Ok(None) => break,
            Err(_) => {
                tasks.abort_all();
                return Err("requests still in flight after the load timeout".into());
            }
        }
    }
    progress(&live.line(PHASES.len() - 1, per_phase, names, bench.breaker_now()));
    done_samples.sort_by_key(|s| (s.sent_ns, s.service as u8));
    Ok((spans, done_samples))
}

/// Sample the breaker's state every [`SAMPLE_EVERY`] until told to stop (or the
/// sender is gone).
async fn sample_breaker(p: Arc<Protected>, stop: watch::Receiver<bool>) -> Vec<(u64, State)> {
    let mut out = Vec::new();
    let mut tick = tokio::time::interval(SAMPLE_EVERY);
    tick.set_missed_tick_behavior(MissedTickBehavior::Skip);
    loop {
        out.push((now_ns(), p.breaker.state()));
        if *stop.borrow() || stop.has_changed().is_err() {
            return out;
        }
        tick.tick().await;
    }
}
