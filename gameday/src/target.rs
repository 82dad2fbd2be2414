//! A gameday against the user's own service (`--target`): the fault-injecting
//! [`Proxy`] stands between the service and its dependency, the open-loop load
//! goes to the service (and, for the comparison row, straight to the dependency
//! through the proxy), and the breaker and counters are read from the service's
//! Prometheus endpoint while it runs ([`crate::scrape`]).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use seawall_core::State;
use serde::Serialize;
use tokio::sync::watch;
use tokio::time::MissedTickBehavior;

use crate::clock::now_ns;
use crate::http::{Client, Server};
use crate::load::Endpoint;
use crate::phases::Faults;
use crate::proxy::{PhaseCalls, Proxy};
use crate::report::{PhaseSpan, RunData};
use crate::run::{Bench, Plan, STOP_GRACE, drive};
use crate::scrape::{self, Reading, rise};
use crate::settings::Settings;
use crate::upstream::{self, UpstreamCalls};

/// How often the target's metrics are read.
const SCRAPE_EVERY: Duration = Duration::from_millis(100);
/// Bound on one read of the metrics, and on one readiness probe.
const SCRAPE_TIMEOUT: Duration = Duration::from_secs(2);
/// How long the target may take to answer its first request.
const READY_WITHIN: Duration = Duration::from_secs(20);
/// Load sent before the baseline and not counted: a service just started (a JIT
/// compiling its hot paths, connection pools filling) is slower for a moment, and
/// the baseline is meant to show it healthy.
const WARM_UP: Duration = Duration::from_secs(2);
/// After the warm-up, how long to wait for the breaker to read closed.
const SETTLE_WITHIN: Duration = Duration::from_secs(10);

/// What to run against.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TargetPlan {
    /// The load's URL, `{id}` to replace.
    pub template: String,
    /// The real dependency (`None`: start the built-in upstream).
    pub upstream: Option<String>,
    /// Where the proxy listens.
    pub proxy_listen: SocketAddr,
    /// The target's Prometheus endpoint.
    pub metrics: Option<String>,
    /// The breaker to follow there.
    pub breaker: Option<String>,
    /// The target's per-request deadline (ns).
    pub deadline_ns: u64,
    /// The dependency path the load also calls directly (with `{id}`).
    pub direct_path: Option<String>,
}

/// What the target's metrics said in one phase (`None`: not exported).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PhaseCounters {
    /// Breaker state changes.
    pub breaker_transitions: Option<u64>,
    /// Bulkhead rejections, every bulkhead and reason.
    pub bulkhead_rejections: Option<u64>,
    /// Retries the budget refused.
    pub budget_denials: Option<u64>,
}

/// What a run against a target adds to [`RunData`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TargetData {
    /// The load's URL template.
    pub target: String,
    /// Where the proxy forwarded (`builtin` for the built-in upstream).
    pub upstream: String,
    /// Where the proxy listened.
    pub proxy: String,
    /// The metrics endpoint, if any.
    pub metrics: Option<String>,
    /// The breaker followed there.
    pub breaker: Option<String>,
    /// The target's per-request deadline (ns).
    pub deadline_ns: u64,
    /// The direct row's URL template, if there is one.
    pub direct: Option<String>,
    /// Calls through the proxy, per phase.
    pub calls: Vec<PhaseCalls>,
    /// The metrics' counters, per phase.
    pub counters: Vec<PhaseCounters>,
    /// Whether the breaker's state was read at all.
    pub breaker_read: bool,
    /// Reads of the metrics endpoint that worked, and that failed.
    pub scrapes: (u64, u64),
}

/// The latest reading, for the progress lines.
type Latest = Arc<Mutex<Reading>>;

struct Target<'a> {
    proxy: &'a Proxy,
    latest: Latest,
    direct: bool,
}

impl Bench for Target<'_> {
    async fn enter_phase(&self, i: usize, faults: Faults) -> Result<(), String> {
        self.proxy.set_phase(i, faults)
    }

    fn breaker_now(&self) -> Option<State> {
        self.latest
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .state
    }

    fn transitions(&self) -> u64 {
        // Counted afterwards from the readings (see `run`).
        0
    }

    fn names(&self) -> [&'static str; 2] {
        [if self.direct { "direct" } else { "" }, "target"]
    }
}

/// Run the six phases against `t`; `progress` gets the phase lines.
pub async fn run(
    plan: Plan,
    t: &TargetPlan,
    progress: &mut dyn FnMut(&str),
) -> Result<RunData, String> {
    let wall = Instant::now();
    let builtin = match t.upstream {
        Some(_) => None,
        None => Some(
            upstream::start(plan.seed)
                .await
                .map_err(|e| format!("starting the built-in upstream on 127.0.0.1: {e}"))?,
        ),
    };
    let upstream_url = t
        .upstream
        .clone()
        .or_else(|| builtin.as_ref().map(Server::base_url))
        .unwrap_or_default();
    let proxy = Proxy::start(t.proxy_listen, upstream_url.clone(), plan.seed)
        .await
        .map_err(|e| format!("starting the proxy on {}: {e}", t.proxy_listen))?;
    progress(&format!(
        "proxy {} forwarding to {upstream_url}{}; load to {}",
        proxy.base_url(),
        if builtin.is_some() {
            " (built-in upstream)"
        } else {
            ""
        },
        t.template
    ));
    let result = against(plan, t, &proxy, progress).await;
    let (a, b) = tokio::join!(proxy.server.stop(STOP_GRACE), async {
        match builtin {
            Some(s) => s.stop(STOP_GRACE).await,
            None => true,
        }
    });
    if !(a && b) {
        progress("note: a server had to be aborted after its grace period");
    }
    let mut data = result?;
    if let Some(td) = data.target.as_mut() {
        td.upstream = t
            .upstream
            .clone()
            .unwrap_or_else(|| crate::cli::BUILTIN_UPSTREAM.into());
    }
    data.wall_secs = wall.elapsed().as_secs_f64();
    Ok(data)
}

async fn against(
    plan: Plan,
    t: &TargetPlan,
    proxy: &Proxy,
    progress: &mut dyn FnMut(&str),
) -> Result<RunData, String> {
    let client = Client::new();
    let first = t.template.replace("{id}", "1");
    ready(&client, t.metrics.as_deref().unwrap_or(&first)).await?;
    let latest: Latest = Arc::default();
    if let Some(m) = &t.metrics {
        let r = read_metrics(&client, m, t.breaker.as_deref())
            .await
            .map_err(|e| format!("reading --metrics {m}: {e}"))?;
        *latest.lock().unwrap_or_else(PoisonError::into_inner) = r;
    }
    warm_up(&client, &t.template, plan.rate).await;
    if let Some(m) = &t.metrics {
        settle(&client, m, t.breaker.as_deref(), progress).await;
    }
    let (stop, stopped) = watch::channel(false);
    let sampler = t.metrics.clone().map(|m| {
        tokio::spawn(sample(
            client.clone(),
            m,
            t.breaker.clone(),
            Arc::clone(&latest),
            stopped,
        ))
    });
    let direct = t
        .direct_path
        .as_ref()
        .map(|p| format!("{}{p}", proxy.base_url()));
    let endpoints = [
        direct.clone().map(Endpoint::Direct),
        Some(Endpoint::Target(t.template.clone())),
    ];
    let bench = Target {
        proxy,
        latest,
        direct: direct.is_some(),
    };
    let driven = drive(plan, &endpoints, &bench, progress).await;
    let _ = stop.send(true);
    let (readings, failed) = match sampler {
        Some(s) => s
            .await
            .map_err(|e| format!("the metrics sampler failed: {e}"))?,
        None => (Vec::new(), 0),
    };
    let (mut phases, answers) = driven?;
    let counters = counters(&phases, &readings);
    for (p, c) in phases.iter_mut().zip(&counters) {
        p.breaker_transitions = c.breaker_transitions.unwrap_or(0);
    }
    let breaker: Vec<(u64, State)> = readings
        .iter()
        .filter_map(|(at, r)| r.state.map(|s| (*at, s)))
        .collect();
    let breaker_read = !breaker.is_empty();
    let calls = proxy.calls();
    let settings = Settings {
        deadline_ns: t.deadline_ns,
        ..Settings::GAMEDAY
    };
    Ok(RunData {
        seed: plan.seed,
        rate: plan.rate,
        phase_secs: plan.phase_secs,
        settings,
        phases,
        samples: answers,
        breaker,
        upstream_calls: UpstreamCalls {
            protected: calls.iter().map(|c| c.target).sum(),
            unprotected: calls.iter().map(|c| c.direct).sum(),
            other: 0,
        },
        wall_secs: 0.0,
        target: Some(TargetData {
            target: t.template.clone(),
            upstream: String::new(),
            proxy: proxy.base_url(),
            metrics: t.metrics.clone(),
            breaker: t.breaker.clone(),
            deadline_ns: t.deadline_ns,
            direct,
            calls,
            counters,
            breaker_read,
            scrapes: (readings.len() as u64, failed),
        }),
    })
}

/// What each counter of the metrics rose by in each phase.
fn counters(phases: &[PhaseSpan], readings: &[(u64, Reading)]) -> Vec<PhaseCounters> {
    phases
        .iter()
        .map(|p| {
            let span = (p.start_ns, p.end_ns);
            let count = |pick: fn(&Reading) -> Option<f64>| rise(readings, span, pick);
            PhaseCounters {
                breaker_transitions: count(|r| r.transitions),
                bulkhead_rejections: count(|r| r.bulkhead_rejections),
                budget_denials: count(|r| r.budget_denials),
            }
        })
        .collect()
}

/// Wait until `url` gives any HTTP answer, within [`READY_WITHIN`].
async fn ready(client: &Client, url: &str) -> Result<(), String> {
    let until = Instant::now() + READY_WITHIN;
    loop {
        match tokio::time::timeout(SCRAPE_TIMEOUT, client.get(url, &[])).await {
            Ok(Ok(_)) => return Ok(()),
            Ok(Err(e)) if Instant::now() >= until => {
                return Err(format!(
                    "the target did not answer within {READY_WITHIN:?}: {e}"
                ));
            }
            Err(_) if Instant::now() >= until => {
                return Err(format!("the target did not answer within {READY_WITHIN:?}"));
            }
            _ => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

/// [`WARM_UP`] of load at `rate` to the target, answers ignored (each bounded by
/// the warm-up itself).
async fn warm_up(client: &Client, template: &str, rate: u32) {
    let n = u64::from(rate) * WARM_UP.as_secs();
    let start = now_ns();
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..n {
        let due = crate::load::due_ns(start, i, rate);
        tokio::time::sleep_until(crate::clock::instant_at(due).into()).await;
        let (client, url) = (
            client.clone(),
            template.replace("{id}", &(1 + i % 50).to_string()),
        );
        tasks.spawn(async move {
            let _ = tokio::time::timeout(WARM_UP, client.get(&url, &[])).await;
        });
    }
    while tasks.join_next().await.is_some() {}
}

/// Wait (at most [`SETTLE_WITHIN`]) for the breaker to read closed, so the
/// baseline does not start with a breaker the warm-up opened.
async fn settle(client: &Client, url: &str, breaker: Option<&str>, progress: &mut dyn FnMut(&str)) {
    let until = Instant::now() + SETTLE_WITHIN;
    loop {
        let state = read_metrics(client, url, breaker)
            .await
            .ok()
            .and_then(|r| r.state);
        if state.is_none_or(|s| s == State::Closed) {
            return;
        }
        if Instant::now() >= until {
            progress(&format!(
                "note: the breaker is still {} after the warm-up; the baseline starts anyway",
                state.map_or("unknown", State::name)
            ));
            return;
        }
        tokio::time::sleep(SCRAPE_EVERY).await;
    }
}

async fn read_metrics(
    client: &Client,
    url: &str,
    breaker: Option<&str>,
) -> Result<Reading, String> {
    let reply = tokio::time::timeout(SCRAPE_TIMEOUT, client.get(url, &[]))
        .await
        .map_err(|_| format!("no answer within {SCRAPE_TIMEOUT:?}"))??;
    if !reply.status.is_success() {
        return Err(format!("HTTP {}", reply.status));
    }
    scrape::read(&String::from_utf8_lossy(&reply.body), breaker)
}

/// Read the metrics every [`SCRAPE_EVERY`] until told to stop: the readings, and
/// how many reads failed.
async fn sample(
    client: Client,
    url: String,
    breaker: Option<String>,
    latest: Latest,
    stop: watch::Receiver<bool>,
) -> (Vec<(u64, Reading)>, u64) {
    let mut out = Vec::new();
    let mut failed = 0;
    let mut tick = tokio::time::interval(SCRAPE_EVERY);
    tick.set_missed_tick_behavior(MissedTickBehavior::Skip);
    loop {
        let at = now_ns();
        match read_metrics(&client, &url, breaker.as_deref()).await {
            Ok(r) => {
                *latest.lock().unwrap_or_else(PoisonError::into_inner) = r;
                out.push((at, r));
            }
            Err(_) => failed += 1,
        }
        if *stop.borrow() || stop.has_changed().is_err() {
            return (out, failed);
        }
        tick.tick().await;
    }
}
