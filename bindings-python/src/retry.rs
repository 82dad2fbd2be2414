//! Retry at the Python edge (DESIGN §4): backoff with jitter, the Finagle retry
//! budget, the gRPC retry throttle, and the core's retry decision that combines
//! them with attempts, the deadline and a server's Retry-After. The Python
//! `seawall.Retry` runs the attempt loop and sleeps; every "retry or give up, and
//! after how long" is decided here, by the core.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use pyo3::prelude::*;
use seawall_core::{
    Backoff as CoreBackoff, BackoffConfig, FailedAttempt, GiveUp, Jitter, MILLI, RetryBudgetConfig,
    RetryConfig, RetryDecision, RetryGate, RetryPolicy as CorePolicy, RetryThrottleConfig,
    SplitMix64, mix64,
};
use seawall_host::shared::{OpenOptions, RegionError};

use crate::errors;
use crate::time::{Clock, count, factor, ns_to_secs, real, seconds, secs_to_ns, text, whole};

/// A budget or throttle (`seawall_host::handle::Handle` of the core type) in
/// this process, or in a region shared by every process of the host; either way
/// it derefs to the core structure.
type BudgetStore = seawall_host::retry::RetryBudget;
type ThrottleStore = seawall_host::retry::RetryThrottle;

/// A region error as a Python exception: a bad value is `SeawallConfigError`
/// naming the field; another configuration names the fields every process must
/// agree on; the rest is `SharedRegionError`.
fn region_error(py: Python<'_>, what: &str, name: &str, agree: &str, e: RegionError) -> PyErr {
    match e {
        RegionError::Config(c) => errors::from_config(py, c),
        e @ RegionError::ConfigMismatch { .. } => errors::shared_region(
            py,
            &format!("shared {what} {name:?}: {e}; every process must give the same {agree}"),
        ),
        other => errors::shared_region(py, &format!("shared {what} {name:?}: {other}")),
    }
}

/// `seawall.RetryBudget`: Finagle's retry budget. Each request deposits
/// `percent_can_retry` % of a retry, each retry withdraws one, plus a reserve of
/// `min_retries_per_sec · ttl`; everything expires after `ttl` seconds (10
/// buckets). Check-and-withdraw is one atomic step. With `shared="name"` it lives
/// in `/dev/shm/seawall-retry-budget-<name>`, one budget for every process of
/// the host that opens that name with the same configuration (their clocks must
/// agree: the default, `CLOCK_MONOTONIC`, is the host's).
#[pyclass(frozen, module = "seawall._native", name = "RetryBudget")]
pub struct RetryBudget {
    budget: BudgetStore,
    clock: Clock,
    name: Option<String>,
}

#[pymethods]
impl RetryBudget {
    #[new]
    #[pyo3(
        signature = (ttl=None, min_retries_per_sec=None, percent_can_retry=None, *, name=None, shared=None, clock=None),
        text_signature = "(ttl=10.0, min_retries_per_sec=10, percent_can_retry=20.0, *, name=None, shared=None, clock=None)"
    )]
    fn new(
        py: Python<'_>,
        ttl: Option<&Bound<'_, PyAny>>,
        min_retries_per_sec: Option<&Bound<'_, PyAny>>,
        percent_can_retry: Option<&Bound<'_, PyAny>>,
        name: Option<&Bound<'_, PyAny>>,
        shared: Option<&Bound<'_, PyAny>>,
        clock: Option<Py<PyAny>>,
    ) -> PyResult<Self> {
        let name = text(py, "name", name)?;
        let shared = text(py, "shared", shared)?;
        let clock = Clock::checked(py, clock)?;
        // Defaults here, not in the signature: each given value is checked as a
        // number (no bool, no overflow) under its own name.
        let ttl = ttl.map_or(Ok(10.0), |v| seconds(py, "ttl", v))?;
        let min_retries_per_sec =
            min_retries_per_sec.map_or(Ok(10), |v| whole(py, "min_retries_per_sec", v))?;
        let percent_can_retry =
            percent_can_retry.map_or(Ok(20.0), |v| real(py, "percent_can_retry", v))?;
        if !percent_can_retry.is_finite() || !(0.0..=1000.0).contains(&percent_can_retry) {
            return Err(errors::config_error(
                py,
                "percent_can_retry",
                &format!(
                    "invalid percent_can_retry: must be between 0 and 1000 (%), got {percent_can_retry}"
                ),
            ));
        }
        let config = RetryBudgetConfig {
            ttl_ns: secs_to_ns(py, "ttl", ttl)?,
            min_retries_per_sec: count(
                py,
                "min_retries_per_sec",
                min_retries_per_sec,
                0,
                u32::MAX,
            )?,
            percent_can_retry: seawall_host::units::ratio_of_percent(percent_can_retry),
        };
        let budget = match &shared {
            Some(region) => {
                // Attaching may wait for another process that is creating the region.
                let opened = py
                    .detach(|| BudgetStore::open_shared(region, &config, &OpenOptions::default()));
                opened.map_err(|e| {
                    region_error(
                        py,
                        "retry budget",
                        region,
                        "ttl, min_retries_per_sec and percent_can_retry",
                        e,
                    )
                })?
            }
            None => BudgetStore::new(&config).map_err(|e| errors::from_config(py, e))?,
        };
        Ok(Self {
            budget,
            clock,
            name: name.or(shared),
        })
    }

    /// Whether the budget lives in a region shared by the host's processes.
    #[getter]
    fn shared(&self) -> bool {
        self.budget.is_shared()
    }

    /// Whether this process created the shared region (always true for a local
    /// budget).
    #[getter]
    fn created(&self) -> bool {
        self.budget.created()
    }

    /// Remove the shared retry budget region `name` (a missing one is fine).
    #[staticmethod]
    fn unlink_shared(py: Python<'_>, name: &str) -> PyResult<()> {
        BudgetStore::unlink_shared(name)
            .map_err(|e| errors::shared_region(py, &format!("shared retry budget {name:?}: {e}")))
    }

    /// An original request starts: deposit `percent_can_retry` % of a retry.
    fn deposit(&self, py: Python<'_>) -> PyResult<()> {
        let now = self.clock.now(py)?;
        self.budget.deposit(now);
        Ok(())
    }

    /// A retry wants to start: `True` (and one retry withdrawn) if the balance
    /// covers it.
    fn try_withdraw(&self, py: Python<'_>) -> PyResult<bool> {
        let now = self.clock.now(py)?;
        Ok(self.budget.try_withdraw(now))
    }

    /// Whole retries the budget would allow now.
    #[getter]
    fn available(&self, py: Python<'_>) -> PyResult<u64> {
        let now = self.clock.now(py)?;
        Ok(self.budget.snapshot(now).available())
    }

    /// `{"requests", "retries", "available"}` in the live window, and
    /// `{"allowed", "refused"}`: withdrawals since the budget was made (of
    /// every process, for a shared budget: its region holds them).
    fn snapshot<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
        let now = self.clock.now(py)?;
        let s = self.budget.snapshot(now);
        let t = self.budget.totals();
        let d = pyo3::types::PyDict::new(py);
        d.set_item("requests", s.requests)?;
        d.set_item("retries", s.retries)?;
        d.set_item("available", s.available())?;
        d.set_item("allowed", t.allowed)?;
        d.set_item("refused", t.refused)?;
        Ok(d)
    }

    #[getter]
    fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }
}

/// `seawall.RetryThrottle`: gRPC retry throttling (proposal A6). Tokens start at
/// `max_tokens` (0 < max ≤ 1000); a failure takes one, a success adds
/// `token_ratio` (truncated to 3 decimals); a retry is allowed while more than
/// half the tokens are left. With `shared="name"` it lives in
/// `/dev/shm/seawall-retry-throttle-<name>`, one throttle for every process of
/// the host that opens that name with the same configuration.
#[pyclass(frozen, module = "seawall._native", name = "RetryThrottle")]
pub struct RetryThrottle {
    throttle: ThrottleStore,
    name: Option<String>,
}

/// Tokens (up to 3 decimals) in milli-tokens, truncated as gRPC says; out of
/// range is a `SeawallConfigError` naming `field`.
fn milli(py: Python<'_>, field: &str, x: f64, max: f64) -> PyResult<u32> {
    if !x.is_finite() || x <= 0.0 || x > max {
        return Err(errors::config_error(
            py,
            field,
            &format!("invalid {field}: must be above 0 and at most {max}, got {x}"),
        ));
    }
    Ok(seawall_host::units::milli_tokens(x))
}

#[pymethods]
impl RetryThrottle {
    #[new]
    #[pyo3(
        signature = (max_tokens=None, token_ratio=None, *, name=None, shared=None),
        text_signature = "(max_tokens=10.0, token_ratio=0.1, *, name=None, shared=None)"
    )]
    fn new(
        py: Python<'_>,
        max_tokens: Option<&Bound<'_, PyAny>>,
        token_ratio: Option<&Bound<'_, PyAny>>,
        name: Option<&Bound<'_, PyAny>>,
        shared: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let name = text(py, "name", name)?;
        let shared = text(py, "shared", shared)?;
        let max_tokens = max_tokens.map_or(Ok(10.0), |v| real(py, "max_tokens", v))?;
        let token_ratio = token_ratio.map_or(Ok(0.1), |v| real(py, "token_ratio", v))?;
        let config = RetryThrottleConfig {
            max_milli_tokens: milli(py, "max_tokens", max_tokens, 1000.0)?,
            token_ratio_milli: milli(py, "token_ratio", token_ratio, f64::from(u32::MAX) / 1000.0)?,
        };
        let throttle = match &shared {
            Some(region) => {
                // Attaching may wait for another process that is creating the region.
                let opened = py.detach(|| {
                    ThrottleStore::open_shared(region, &config, &OpenOptions::default())
                });
                opened.map_err(|e| {
                    region_error(
                        py,
                        "retry throttle",
                        region,
                        "max_tokens and token_ratio",
                        e,
                    )
                })?
            }
            None => ThrottleStore::new(&config).map_err(|e| errors::from_config(py, e))?,
        };
        Ok(Self {
            throttle,
            name: name.or(shared),
        })
    }

    /// Whether the throttle lives in a region shared by the host's processes.
    #[getter]
    fn shared(&self) -> bool {
        self.throttle.is_shared()
    }

    /// Whether this process created the shared region (always true for a local
    /// throttle).
    #[getter]
    fn created(&self) -> bool {
        self.throttle.created()
    }

    /// Remove the shared retry throttle region `name` (a missing one is fine).
    #[staticmethod]
    fn unlink_shared(py: Python<'_>, name: &str) -> PyResult<()> {
        ThrottleStore::unlink_shared(name)
            .map_err(|e| errors::shared_region(py, &format!("shared retry throttle {name:?}: {e}")))
    }

    /// A call failed: take a token; `True` if its retry is allowed.
    fn record_failure(&self) -> bool {
        self.throttle.record_failure()
    }

    /// A call succeeded: add `token_ratio` tokens.
    fn record_success(&self) {
        self.throttle.record_success();
    }

    /// Tokens left.
    #[getter]
    fn tokens(&self) -> f64 {
        self.throttle.milli_tokens() as f64 / f64::from(MILLI)
    }

    #[getter]
    fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }
}

fn jitter(py: Python<'_>, kind: &str, f: Option<f64>) -> PyResult<Jitter> {
    let j = match kind {
        "none" => Jitter::None,
        "full" => Jitter::Full,
        "equal" => Jitter::Equal,
        "decorrelated" => Jitter::Decorrelated,
        "proportional" => match f {
            None => Jitter::PROPORTIONAL,
            Some(f) => Jitter::Proportional {
                factor: factor(py, "jitter_factor", f, 0.0, 1.0)?,
            },
        },
        other => {
            return Err(errors::config_error(
                py,
                "jitter",
                &format!(
                    "invalid jitter: must be 'none', 'full', 'equal', 'decorrelated' or 'proportional', got {other:?}"
                ),
            ));
        }
    };
    if f.is_some() && !matches!(j, Jitter::Proportional { .. }) {
        return Err(errors::config_error(
            py,
            "jitter_factor",
            "invalid jitter_factor: only proportional jitter has a factor",
        ));
    }
    Ok(j)
}

fn backoff_config(
    py: Python<'_>,
    base: f64,
    multiplier: f64,
    max: f64,
    kind: &str,
    jitter_factor: Option<f64>,
) -> PyResult<BackoffConfig> {
    Ok(BackoffConfig {
        base_ns: secs_to_ns(py, "base", base)?,
        multiplier: factor(py, "multiplier", multiplier, 1.0, f64::INFINITY)?,
        max_ns: secs_to_ns(py, "max", max)?,
        jitter: jitter(py, kind, jitter_factor)?,
    })
}

/// `seawall.Backoff`: `exp(n) = min(max, base · multiplier^(n−1))` seconds for
/// attempt n ≥ 1, randomised by a jitter of AWS "Exponential Backoff and Jitter"
/// (none, full, equal, decorrelated) or proportional (± `jitter_factor`).
#[pyclass(frozen, module = "seawall._native", name = "Backoff")]
pub struct Backoff {
    backoff: CoreBackoff,
}

#[pymethods]
impl Backoff {
    #[new]
    #[pyo3(signature = (base=0.1, multiplier=2.0, max=10.0, jitter="full", jitter_factor=None))]
    fn new(
        py: Python<'_>,
        base: f64,
        multiplier: f64,
        max: f64,
        jitter: &str,
        jitter_factor: Option<f64>,
    ) -> PyResult<Self> {
        let c = backoff_config(py, base, multiplier, max, jitter, jitter_factor)?;
        Ok(Self {
            backoff: CoreBackoff::new(c).map_err(|e| errors::from_config(py, e))?,
        })
    }

    /// The delay (seconds) before retry `attempt` given 64 random bits and, for
    /// decorrelated jitter, the previous delay (seconds).
    #[pyo3(signature = (attempt, previous=0.0, random=None))]
    fn delay(
        &self,
        py: Python<'_>,
        attempt: u32,
        previous: f64,
        random: Option<u64>,
    ) -> PyResult<f64> {
        let prev = secs_to_ns(py, "previous", previous)?;
        let r = random.unwrap_or_else(seawall_host::entropy::entropy);
        Ok(ns_to_secs(self.backoff.delay(attempt, prev, r)))
    }

    /// The same, in nanoseconds (exact; for conformance checks).
    #[pyo3(signature = (attempt, previous_ns=0, random=0))]
    fn delay_ns(&self, attempt: u32, previous_ns: u64, random: u64) -> u64 {
        self.backoff.delay(attempt, previous_ns, random)
    }

    /// `exp(attempt)` without jitter (seconds).
    fn exponential(&self, attempt: u32) -> f64 {
        ns_to_secs(self.backoff.exponential(attempt))
    }

    /// The jitter's name.
    #[getter]
    fn jitter(&self) -> &'static str {
        self.backoff.config().jitter.name()
    }
}

/// `splitmix64(seed)`: the core's deterministic generator, `n` draws (tests).
#[pyfunction]
#[must_use]
pub fn splitmix64(seed: u64, n: usize) -> Vec<u64> {
    let mut g = SplitMix64::new(seed);
    (0..n).map(|_| g.next_u64()).collect()
}

enum Gate {
    None,
    Budget(Py<RetryBudget>),
    Throttle(Py<RetryThrottle>),
}

/// Decisions made, for metrics (relaxed).
#[derive(Default)]
struct Tally {
    allowed: AtomicU64,
    max_attempts: AtomicU64,
    deadline: AtomicU64,
    budget: AtomicU64,
    throttled: AtomicU64,
}

/// The retry policy core shared by a `Retry` object and its decorated functions.
pub struct RetryCore {
    policy: CorePolicy,
    gate: Gate,
    /// Weyl sequence for jitter draws: one `fetch_add` per draw, no lock.
    seed: AtomicU64,
    pub(crate) clock: Clock,
    tally: Tally,
}

impl RetryCore {
    /// An original request starts (a budget gets its deposit).
    pub fn on_request(&self, py: Python<'_>, now: u64) {
        if let Gate::Budget(b) = &self.gate {
            b.get().budget.deposit(now);
        }
        let _ = py;
    }

    /// An attempt succeeded (a throttle gets its tokens back).
    pub fn on_success(&self) {
        if let Gate::Throttle(t) = &self.gate {
            t.get().throttle.record_success();
        }
    }

    fn random(&self) -> u64 {
        mix64(
            self.seed
                .fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed),
        )
    }
}

/// `seawall._native.RetryPolicy`: the native half of `seawall.Retry`.
#[pyclass(frozen, module = "seawall._native", name = "RetryPolicy")]
pub struct RetryPolicy {
    pub(crate) core: Arc<RetryCore>,
}

#[pymethods]
impl RetryPolicy {
    #[new]
    #[pyo3(signature = (
        *, attempts=3, base=0.1, multiplier=2.0, max=10.0, jitter="full", jitter_factor=None,
        budget=None, throttle=None, clock=None, seed=None
    ))]
    #[allow(
        clippy::too_many_arguments,
        reason = "keyword arguments of the Python class"
    )]
    fn new(
        py: Python<'_>,
        attempts: i64,
        base: f64,
        multiplier: f64,
        max: f64,
        jitter: &str,
        jitter_factor: Option<f64>,
        budget: Option<Py<RetryBudget>>,
        throttle: Option<Py<RetryThrottle>>,
        clock: Option<Py<PyAny>>,
        seed: Option<u64>,
    ) -> PyResult<Self> {
        let config = RetryConfig {
            backoff: backoff_config(py, base, multiplier, max, jitter, jitter_factor)?,
            max_attempts: count(py, "attempts", attempts, 1, u32::MAX)?,
        };
        let policy = CorePolicy::new(config).map_err(|e| errors::from_config(py, e))?;
        let gate = match (budget, throttle) {
            (None, None) => Gate::None,
            (Some(b), None) => Gate::Budget(b),
            (None, Some(t)) => Gate::Throttle(t),
            (Some(_), Some(_)) => {
                return Err(errors::config_error(
                    py,
                    "budget",
                    "invalid budget: give a retry budget or a retry throttle, not both",
                ));
            }
        };
        Ok(Self {
            core: Arc::new(RetryCore {
                policy,
                gate,
                seed: AtomicU64::new(seed.unwrap_or_else(seawall_host::entropy::entropy)),
                clock: Clock::new(clock),
                tally: Tally::default(),
            }),
        })
    }

    /// Decide what follows failed attempt `attempt` (1-based): `(delay_ns, None)`
    /// to retry after that many nanoseconds, or `(0, reason)` to give up
    /// (`max_attempts`, `deadline`, `budget_exhausted`, `throttled`).
    #[pyo3(signature = (attempt, previous_delay_ns, deadline_remaining_ns=None, retry_after_ns=None))]
    fn decide(
        &self,
        py: Python<'_>,
        attempt: u32,
        previous_delay_ns: u64,
        deadline_remaining_ns: Option<u64>,
        retry_after_ns: Option<u64>,
    ) -> PyResult<(u64, Option<&'static str>)> {
        let c = &self.core;
        let now = c.clock.now(py)?;
        let failed = FailedAttempt {
            attempt,
            previous_delay_ns,
            random: c.random(),
            deadline_remaining_ns,
            retry_after_ns,
        };
        let decision = match &c.gate {
            Gate::None => c.policy.decide(&failed, RetryGate::None, now),
            Gate::Budget(b) => c
                .policy
                .decide(&failed, RetryGate::Budget(&b.get().budget), now),
            Gate::Throttle(t) => {
                c.policy
                    .decide(&failed, RetryGate::Throttle(&t.get().throttle), now)
            }
        };
        let t = &c.tally;
        Ok(match decision {
            RetryDecision::Retry { delay_ns } => {
                t.allowed.fetch_add(1, Ordering::Relaxed);
                (delay_ns, None)
            }
            RetryDecision::GiveUp(why) => {
                match why {
                    GiveUp::MaxAttempts => &t.max_attempts,
                    GiveUp::Deadline => &t.deadline,
                    GiveUp::BudgetExhausted => &t.budget,
                    GiveUp::Throttled => &t.throttled,
                }
                .fetch_add(1, Ordering::Relaxed);
                (0, Some(why.name()))
            }
        })
    }

    /// An original request starts (deposit into the budget, if any).
    fn request(&self, py: Python<'_>) -> PyResult<()> {
        let now = self.core.clock.now(py)?;
        self.core.on_request(py, now);
        Ok(())
    }

    /// An attempt succeeded (tokens back into the throttle, if any).
    fn success(&self) {
        self.core.on_success();
    }

    /// Now, in nanoseconds of this policy's clock.
    fn now_ns(&self, py: Python<'_>) -> PyResult<u64> {
        self.core.clock.now(py)
    }

    #[getter]
    fn max_attempts(&self) -> u32 {
        self.core.policy.max_attempts()
    }

    /// Decisions so far: retries allowed and give-ups by reason (dict).
    fn tally<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
        let t = &self.core.tally;
        let d = pyo3::types::PyDict::new(py);
        let r = |a: &AtomicU64| a.load(Ordering::Relaxed);
        d.set_item("allowed", r(&t.allowed))?;
        d.set_item("max_attempts", r(&t.max_attempts))?;
        d.set_item("deadline", r(&t.deadline))?;
        d.set_item("budget_exhausted", r(&t.budget))?;
        d.set_item("throttled", r(&t.throttled))?;
        Ok(d)
    }
}
