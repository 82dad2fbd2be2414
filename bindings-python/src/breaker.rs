//! The circuit breaker behind `seawall.CircuitBreaker` (DESIGN §3): Python glue
//! over `seawall_host::breaker::Breaker`, which is the breaker itself, in this
//! process (`new_without_permit_table`: the permit objects below are single-use
//! by themselves) or in a region shared by every process of the host
//! (`open_shared`, whose permit table makes each permit single-use across
//! processes and lets `reclaim_abandoned` give back the permits of dead workers).
//!
//! What stays here is Python's: permits cross into Python as [`BreakerPermit`]
//! objects that record once; the Rust decorator path ([`crate::guarded`]) never
//! makes one: it acquires, calls and records without leaving Rust. Transitions
//! are noticed by comparing the breaker's observed state and epoch (the host's
//! transition word) after each operation, so changes made by other processes
//! are seen too, and reported to a Python hook when one is set.
//!
//! A permit dropped unrecorded (its thread ended, its process finalizes) is
//! recorded as ignored; what is never dropped [`crate::at_exit`] gives back.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use pyo3::exceptions::PyException;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple};
use seawall_core::{BreakerConfig, Corrupt, Outcome, Rejected, State, WindowConfig};
use seawall_host::breaker::{AcquireError, Breaker as HostBreaker, Observed, Permit, PermitSlots};
use seawall_host::permits::PermitError;
use seawall_host::shared::{OpenOptions, RegionError};

use crate::classify::{Classifier, outcome_from, outcome_name};
use crate::errors;
use crate::time::{Clock, count, factor, ns_to_secs, opt_secs_to_ns, percent, secs_to_ns};

/// Largest count window of a breaker (in this process or shared).
pub const COUNT_CAPACITY: usize = seawall_host::breaker::COUNT_WINDOW_CAPACITY;
/// Largest time window (buckets) of a breaker.
pub const TIME_CAPACITY: usize = seawall_host::breaker::TIME_WINDOW_CAPACITY;

/// Everything one breaker is; shared (`Arc`) by its Python object, its permits and
/// every decorated function.
pub struct BreakerCore {
    breaker: HostBreaker,
    pub(crate) clock: Clock,
    /// Whether the slow-call rule is on: then every call's duration is needed.
    times_calls: bool,
    name: Option<String>,
    classifier: Classifier,
    /// `failure_on_result(value) -> bool`: a returned value that is a failure
    /// (an HTTP 503 returned, not raised; DESIGN §1).
    failure_on_result: Option<Py<PyAny>>,
    /// Whether a call-event hook is set (checked on every call, without a lock).
    events_on: AtomicBool,
    /// `events(kind, duration_seconds)`: `success`, `failure`, `ignored` once a
    /// call is recorded, `rejected` when one is refused.
    events: Mutex<Option<Py<PyAny>>>,
    /// Whether a transition hook is set (checked on every call, without a lock).
    watching: AtomicBool,
    hook: Mutex<Option<Py<PyAny>>>,
    /// The last state and epoch this process reported, as the host's
    /// transition word ([`Observed::word`]).
    last_seen: AtomicU64,
}

thread_local! {
    /// A `KeyboardInterrupt` / `SystemExit` a listener raised in this thread,
    /// not yet re-raised.
    static PENDING: RefCell<Option<PyErr>> = const { RefCell::new(None) };
}

/// Raise what a listener raised that is not an `Exception` (DESIGN §1: re-raised
/// after the state change is complete); called once an operation is done.
pub fn raise_pending() -> PyResult<()> {
    PENDING.with_borrow_mut(Option::take).map_or(Ok(()), Err)
}

/// What a hook raised: an `Exception` is reported as unraisable (the Python
/// side logs listeners' own); `KeyboardInterrupt`, `SystemExit` are the caller's
/// own, raised once the operation that ran the hook is complete.
fn keep_interrupt(py: Python<'_>, e: PyErr, hook: &Bound<'_, PyAny>) {
    if e.is_instance_of::<PyException>(py) {
        e.write_unraisable(py, Some(hook));
    } else {
        PENDING.with_borrow_mut(|p| {
            if p.is_none() {
                *p = Some(e);
            }
        });
    }
}

fn state_of(word: u64) -> &'static str {
    Observed::from_word(word)
        .map_or(State::Closed, |o| o.state)
        .name()
}

impl BreakerCore {
    /// Ask to make one call at `now` (ns): a permit, or `CircuitOpenError`.
    pub fn acquire(&self, py: Python<'_>, now: u64) -> PyResult<Permit> {
        let got = self.uncorrupted(py, self.breaker.try_acquire_checked(now))?;
        self.settle(py, got, || now)
    }

    /// `got`, or `SharedRegionError` when the breaker's shared region holds
    /// what its configuration never gives (another process overwrote it).
    pub fn uncorrupted<T>(&self, py: Python<'_>, got: Result<T, Corrupt>) -> PyResult<T> {
        got.map_err(|Corrupt| {
            errors::shared_region(
                py,
                &format!(
                    "circuit breaker {:?}: its shared region holds values its configuration never gives (overwritten by another process?)",
                    self.name.as_deref().unwrap_or("")
                ),
            )
        })
    }

    /// Start a call: its permit (or `CircuitOpenError`) and its start time (ns),
    /// read only when something will use it: the slow-call rule, the call-event
    /// hook's durations, a clock of the caller's (read eagerly, so that its
    /// errors are raised here). Otherwise the OS clock is read only when the
    /// breaker's decision needs the time (not closed), and the call's duration
    /// is not measured: at about 40 ns, a clock read costs more than the acquire.
    pub fn begin(&self, py: Python<'_>) -> PyResult<(Permit, Option<u64>)> {
        if self.times_calls
            || self.events_on.load(Ordering::Relaxed)
            || matches!(self.clock, Clock::Custom(_))
        {
            let start = self.clock.now(py)?;
            return Ok((self.acquire(py, start)?, Some(start)));
        }
        let os = seawall_host::clock::monotonic_ns;
        let got = self.uncorrupted(py, self.breaker.try_acquire_checked_at(os))?;
        Ok((self.settle(py, got, os)?, None))
    }

    /// The duration and the end (ns) of a call [`begin`](Self::begin) started
    /// at `start`: no duration when its start was not read.
    pub fn end(&self, py: Python<'_>, start: Option<u64>) -> (u64, u64) {
        let end = self.clock.now_or(py, start.unwrap_or(0));
        (start.map_or(0, |s| end.saturating_sub(s)), end)
    }

    /// The answer to an acquire: the permit once transitions were noticed, or
    /// the error to raise. `now` (ns) is asked only to give the permit back,
    /// should a listener's interrupt be pending.
    fn settle(
        &self,
        py: Python<'_>,
        got: Result<Permit, AcquireError>,
        now: impl FnOnce() -> u64,
    ) -> PyResult<Permit> {
        let got = got.map_err(|e| match e {
            AcquireError::Rejected(r) => Some(r),
            AcquireError::PermitsExhausted => None,
        });
        match got {
            Ok(held) => {
                self.notice_admitted(py, held.epoch);
                if let Err(e) = raise_pending() {
                    self.record_quiet(held, Outcome::Ignored, 0, now());
                    return Err(e);
                }
                Ok(held)
            }
            Err(Some(Rejected {
                state,
                retry_after_ns,
            })) => {
                self.notice(py);
                self.emit(py, "rejected", 0);
                raise_pending()?;
                Err(errors::circuit_open(
                    py,
                    self.name.as_deref(),
                    state.name(),
                    retry_after_ns,
                ))
            }
            Err(None) => {
                self.emit(py, "rejected", 0);
                raise_pending()?;
                Err(errors::permits_exhausted(
                    py,
                    self.name.as_deref(),
                    self.state().name(),
                    self.breaker
                        .permit_slots()
                        .unwrap_or(seawall_host::permits::PERMIT_SLOTS),
                ))
            }
        }
    }

    /// Record how a call admitted with `held` ended (exactly once per permit).
    pub fn record(&self, py: Python<'_>, held: Permit, outcome: Outcome, duration: u64, now: u64) {
        self.record_quiet(held, outcome, duration, now);
        self.notice(py);
        self.emit(py, outcome_name(outcome), duration);
    }

    /// Tell the call-event hook, if one is set, that a call ended as `kind` (or
    /// was `rejected`). Its errors are handled as the transition hook's.
    fn emit(&self, py: Python<'_>, kind: &'static str, duration: u64) {
        if !self.events_on.load(Ordering::Relaxed) {
            return;
        }
        let hook = self
            .events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .map(|h| h.clone_ref(py));
        if let Some(hook) = hook
            && let Err(e) = hook.call1(py, (kind, ns_to_secs(duration)))
        {
            keep_interrupt(py, e, hook.bind(py));
        }
    }

    /// [`record`](Self::record) without noticing transitions (for drops, where
    /// Python code must not run).
    fn record_quiet(&self, held: Permit, outcome: Outcome, duration: u64, now: u64) {
        // The permit objects guard single use, and a permit only ever goes back
        // to the breaker that issued it: the one failure is a permit given back
        // at exit meanwhile (`crate::at_exit`), which counted it already.
        let _: Result<(), PermitError> = self.breaker.record(held, outcome, duration, now);
    }

    /// Record the outcome of a call that raised `err`, classified by this
    /// breaker's rule; returns the outcome.
    pub fn record_error(
        &self,
        py: Python<'_>,
        held: Permit,
        err: &Bound<'_, PyAny>,
        start: Option<u64>,
    ) -> Outcome {
        let outcome = self.classifier.classify(py, err);
        let (duration, end) = self.end(py, start);
        self.record(py, held, outcome, duration, end);
        outcome
    }

    fn state(&self) -> State {
        self.breaker.state()
    }

    /// The outcome of a call that returned `value`: a success, unless
    /// `failure_on_result(value)` is true. The predicate's own exception is
    /// the call's (classified and raised like one).
    pub fn result_outcome(&self, py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<Outcome> {
        match &self.failure_on_result {
            None => Ok(Outcome::Success),
            Some(pred) => {
                let bad = pred.bind(py).call1((value,))?.is_truthy()?;
                Ok(if bad {
                    Outcome::Failure
                } else {
                    Outcome::Success
                })
            }
        }
    }

    /// [`notice`](Self::notice) after an acquire admitted a permit of `epoch`,
    /// skipped when that permit shows the breaker as this process last saw it:
    /// closed or disabled in `epoch` (every state change takes a new epoch, so
    /// the two never share one). The acquire read the state, so there is nothing
    /// new to tell as of then; a later change is told by the next look.
    fn notice_admitted(&self, py: Python<'_>, epoch: u32) {
        let seen = Observed::from_word(self.last_seen.load(Ordering::Acquire));
        let unchanged = seen.is_some_and(|o| {
            o.epoch == epoch && matches!(o.state, State::Closed | State::Disabled)
        });
        if !unchanged {
            self.notice(py);
        }
    }

    /// If the breaker moved on since this process last looked, tell the hook
    /// `(old_state, new_state)` once. A hook that raises is reported as
    /// unraisable; it never disturbs the call.
    pub fn notice(&self, py: Python<'_>) {
        if !self.watching.load(Ordering::Relaxed) {
            return;
        }
        let observed = self.breaker.observe();
        let now = observed.word();
        let before = self.last_seen.load(Ordering::Acquire);
        if before == now
            || self
                .last_seen
                .compare_exchange(before, now, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
        {
            return;
        }
        let hook = self
            .hook
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .map(|h| h.clone_ref(py));
        if let Some(hook) = hook
            && let Err(e) = hook.call1(py, (state_of(before), observed.state.name()))
        {
            keep_interrupt(py, e, hook.bind(py));
        }
    }

    /// The breaker's name, if it has one.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }
}

impl crate::at_exit::GiveBack for BreakerCore {
    /// Every permit this process still holds, recorded as ignored.
    fn give_back(&self, py: Python<'_>) {
        let now = self.clock.now_or(py, seawall_host::clock::monotonic_ns());
        if self.breaker.reclaim_own(now) > 0 {
            self.notice(py);
        }
    }
}

fn window_config(
    py: Python<'_>,
    kind: &str,
    size: i64,
    bucket_width: f64,
) -> PyResult<WindowConfig> {
    match kind {
        "count" => Ok(WindowConfig::Count {
            size: count(py, "window.size", size, 1, COUNT_CAPACITY as u32)?,
        }),
        "time" => Ok(WindowConfig::Time {
            buckets: count(py, "window.buckets", size, 1, TIME_CAPACITY as u32)?,
            bucket_width_ns: secs_to_ns(py, "window.bucket_width", bucket_width)?,
        }),
        other => Err(errors::config_error(
            py,
            "window",
            &format!("invalid window: kind must be 'count' or 'time', got {other:?}"),
        )),
    }
}

fn region_error(py: Python<'_>, name: &str, e: RegionError) -> PyErr {
    match e {
        RegionError::Config(c) => errors::from_config(py, c),
        other => errors::shared_region(py, &format!("shared circuit breaker {name:?}: {other}")),
    }
}

/// `seawall._native.Breaker`: the native half of `seawall.CircuitBreaker`.
/// Durations are float seconds; thresholds are percentages `0 ..= 100`.
#[pyclass(frozen, module = "seawall._native", name = "Breaker")]
pub struct Breaker {
    pub(crate) core: Arc<BreakerCore>,
}

#[pymethods]
impl Breaker {
    #[new]
    #[pyo3(signature = (
        *, window_kind, window_size, bucket_width, minimum_calls, failure_rate_threshold,
        slow_call_rate_threshold, slow_call_duration, consecutive_failures, open_duration,
        open_backoff_multiplier, max_open_duration, open_jitter_factor, half_open_max_calls,
        half_open_success_threshold, half_open_max_wait, name=None, shared=None,
        classifier=None, clock=None, jitter_seed=None, shm_timeout=2.0, failure_on_result=None,
        permit_slots=None
    ))]
    #[allow(
        clippy::too_many_arguments,
        reason = "one keyword per DESIGN §3 option"
    )]
    fn new(
        py: Python<'_>,
        window_kind: &str,
        window_size: i64,
        bucket_width: f64,
        minimum_calls: i64,
        failure_rate_threshold: Option<f64>,
        slow_call_rate_threshold: f64,
        slow_call_duration: Option<f64>,
        consecutive_failures: Option<i64>,
        open_duration: f64,
        open_backoff_multiplier: f64,
        max_open_duration: Option<f64>,
        open_jitter_factor: f64,
        half_open_max_calls: i64,
        half_open_success_threshold: i64,
        half_open_max_wait: Option<f64>,
        name: Option<String>,
        shared: Option<String>,
        classifier: Option<Py<PyAny>>,
        clock: Option<Py<PyAny>>,
        jitter_seed: Option<u64>,
        shm_timeout: f64,
        failure_on_result: Option<Py<PyAny>>,
        permit_slots: Option<i64>,
    ) -> PyResult<Self> {
        let max_half_open = seawall_core::MAX_HALF_OPEN_CALLS;
        let config = BreakerConfig {
            window: window_config(py, window_kind, window_size, bucket_width)?,
            minimum_calls: count(py, "minimum_calls", minimum_calls, 1, u32::MAX)?,
            failure_rate_threshold: failure_rate_threshold
                .map(|p| percent(py, "failure_rate_threshold", p))
                .transpose()?,
            slow_call_rate_threshold: percent(
                py,
                "slow_call_rate_threshold",
                slow_call_rate_threshold,
            )?,
            slow_call_duration_ns: opt_secs_to_ns(py, "slow_call_duration", slow_call_duration)?,
            consecutive_failures: consecutive_failures
                .map(|n| {
                    count(
                        py,
                        "consecutive_failures",
                        n,
                        1,
                        seawall_core::MAX_CONSECUTIVE_FAILURES,
                    )
                })
                .transpose()?,
            open_duration_ns: secs_to_ns(py, "open_duration", open_duration)?,
            open_backoff_multiplier: factor(
                py,
                "open_backoff_multiplier",
                open_backoff_multiplier,
                1.0,
                f64::INFINITY,
            )?,
            max_open_duration_ns: opt_secs_to_ns(py, "max_open_duration", max_open_duration)?,
            open_jitter_factor: factor(py, "open_jitter_factor", open_jitter_factor, 0.0, 1.0)?,
            half_open_max_calls: count(
                py,
                "half_open_max_calls",
                half_open_max_calls,
                1,
                max_half_open,
            )?,
            half_open_success_threshold: count(
                py,
                "half_open_success_threshold",
                half_open_success_threshold,
                1,
                max_half_open,
            )?,
            half_open_max_wait_ns: opt_secs_to_ns(py, "half_open_max_wait", half_open_max_wait)?,
            jitter_seed: jitter_seed.unwrap_or_else(seawall_host::entropy::entropy),
        };
        let slots = permit_table(py, shared.is_some(), permit_slots)?;
        let breaker = match shared {
            Some(region) => {
                let options = OpenOptions {
                    init_timeout: std::time::Duration::from_nanos(secs_to_ns(
                        py,
                        "shm_timeout",
                        shm_timeout,
                    )?),
                };
                // Attaching may wait for another process that is creating the region.
                let opened = py.detach(|| {
                    HostBreaker::open_shared_with_slots(&region, &config, slots, &options)
                });
                opened.map_err(|e| region_error(py, &region, e))?
            }
            None => HostBreaker::new_without_permit_table(config)
                .map_err(|e| errors::from_config(py, e))?,
        };
        let core = BreakerCore {
            breaker,
            clock: Clock::new(clock),
            times_calls: config.slow_call_duration_ns.is_some(),
            name,
            classifier: classifier.map_or(Classifier::Default, Classifier::Custom),
            failure_on_result,
            watching: AtomicBool::new(false),
            events_on: AtomicBool::new(false),
            events: Mutex::new(None),
            hook: Mutex::new(None),
            last_seen: AtomicU64::new(0),
        };
        core.last_seen
            .store(core.breaker.observe().word(), Ordering::Release);
        let core = Arc::new(core);
        if core.breaker.is_shared() {
            crate::at_exit::remember(&core);
        }
        Ok(Self { core })
    }

    /// Acquire a permit now, or raise `CircuitOpenError`.
    fn acquire(&self, py: Python<'_>) -> PyResult<BreakerPermit> {
        let start = self.core.clock.now(py)?;
        let held = self.core.acquire(py, start)?;
        Ok(BreakerPermit {
            core: Arc::clone(&self.core),
            held,
            start,
            used: AtomicBool::new(false),
            owner: seawall_host::process_id(),
        })
    }

    /// Call `func(*args, **kwargs)` through the breaker.
    #[pyo3(signature = (func, args, kwargs=None))]
    fn call(
        &self,
        py: Python<'_>,
        func: &Bound<'_, PyAny>,
        args: &Bound<'_, pyo3::types::PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        guarded_call(py, &self.core, || {
            func.call(args, kwargs).map(Bound::unbind)
        })
    }

    /// `closed`, `open`, `half_open`, `forced_open` or `disabled` (reported
    /// transitions are noticed on the way).
    #[getter]
    fn state(&self, py: Python<'_>) -> PyResult<&'static str> {
        self.core.notice(py);
        raise_pending()?;
        Ok(self.core.state().name())
    }

    /// The epoch: it changes with every state change.
    #[getter]
    fn epoch(&self) -> u32 {
        self.core.breaker.epoch()
    }

    /// Seconds a rejection in `open` would report now, or `None`.
    #[getter]
    fn retry_after(&self, py: Python<'_>) -> PyResult<Option<f64>> {
        let now = self.core.clock.now(py)?;
        let retry_after = self
            .core
            .uncorrupted(py, self.core.breaker.retry_after_checked(now))?;
        Ok(retry_after.map(ns_to_secs))
    }

    /// Whether the breaker lives in a shared region.
    #[getter]
    fn shared(&self) -> bool {
        self.core.breaker.is_shared()
    }

    /// Whether this process created the shared region (always true for a local breaker).
    #[getter]
    fn created(&self) -> bool {
        self.core.breaker.created()
    }

    #[getter]
    fn name(&self) -> Option<&str> {
        self.core.name()
    }

    /// Set (or clear) the call-event hook `events(kind, duration_seconds)`.
    #[pyo3(signature = (events))]
    fn set_events(&self, events: Option<Py<PyAny>>) {
        let on = events.is_some();
        *self
            .core
            .events
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = events;
        self.core.events_on.store(on, Ordering::Release);
    }

    /// Set (or clear) the transition hook `hook(old_state, new_state)`.
    #[pyo3(signature = (hook))]
    fn set_hook(&self, py: Python<'_>, hook: Option<Py<PyAny>>) {
        let on = hook.is_some();
        *self
            .core
            .hook
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = hook;
        if on {
            self.core
                .last_seen
                .store(self.core.breaker.observe().word(), Ordering::Release);
        }
        self.core.watching.store(on, Ordering::Release);
        let _ = py;
    }

    /// Look for transitions now (made by any thread or process) and report them.
    fn poll(&self, py: Python<'_>) -> PyResult<()> {
        self.core.notice(py);
        raise_pending()
    }

    fn force_open(&self, py: Python<'_>) -> PyResult<()> {
        self.core.breaker.force_open();
        self.core.notice(py);
        raise_pending()
    }

    fn disable(&self, py: Python<'_>) -> PyResult<()> {
        self.core.breaker.disable();
        self.core.notice(py);
        raise_pending()
    }

    fn reset(&self, py: Python<'_>) -> PyResult<()> {
        self.core.breaker.reset();
        self.core.notice(py);
        raise_pending()
    }

    /// Start from an exported state (DESIGN §3.7): `state` a state's name,
    /// `openings` the consecutive openings, `open_left` the seconds `open` has
    /// left. The Python side checks the record; this checks the names and
    /// numbers again, so nothing unchecked reaches the core.
    fn restore(&self, py: Python<'_>, state: &str, openings: i64, open_left: f64) -> PyResult<()> {
        let s = [
            State::Closed,
            State::Open,
            State::HalfOpen,
            State::ForcedOpen,
            State::Disabled,
        ]
        .into_iter()
        .find(|s| s.name() == state)
        .ok_or_else(|| {
            errors::config_error(
                py,
                "initial_state.state",
                &format!("invalid initial_state.state: unknown state {state:?}"),
            )
        })?;
        let k = count(py, "initial_state.openings", openings, 0, u32::MAX)?;
        let left = secs_to_ns(py, "initial_state.retry_after", open_left)?;
        let now = self.core.clock.now(py)?;
        self.core
            .breaker
            .restore(s, k, left, now)
            .map_err(|Corrupt| {
                errors::shared_region(
                    py,
                    "the shared breaker's state kept changing as no process of seawall changes it: its region is corrupted",
                )
            })?;
        self.core.notice(py);
        raise_pending()
    }

    /// Give back, as ignored, the permits of processes that no longer exist
    /// (shared breakers; 0 for a local one). Scans the permit table.
    fn reclaim_abandoned(&self, py: Python<'_>) -> PyResult<u64> {
        let now = self.core.clock.now(py)?;
        Ok(self.core.breaker.reclaim_abandoned(now))
    }

    /// Remove the shared region `name` (a missing one is fine).
    #[staticmethod]
    fn unlink_shared(py: Python<'_>, name: &str) -> PyResult<()> {
        HostBreaker::unlink_shared(name).map_err(|e| region_error(py, name, e))
    }

    /// A snapshot: state, window, rates (percent), totals (dict).
    fn metrics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let now = self.core.clock.now(py)?;
        let snapshot = self
            .core
            .uncorrupted(py, self.core.breaker.metrics_checked(now))?;
        let (m, outstanding) = (snapshot.core, snapshot.permits_outstanding);
        let rate = |r: Option<seawall_core::Ratio>| r.map(seawall_host::units::percent_of_ratio);
        let d = PyDict::new(py);
        d.set_item("name", self.core.name())?;
        d.set_item("state", m.state.name())?;
        d.set_item("epoch", m.epoch)?;
        let w = PyDict::new(py);
        w.set_item("calls", m.window.calls)?;
        w.set_item("failures", m.window.failures)?;
        w.set_item("slow_calls", m.window.slow)?;
        w.set_item("slow_failures", m.window.slow_failures)?;
        d.set_item("window", w)?;
        d.set_item("failure_rate", rate(m.failure_rate))?;
        d.set_item("slow_call_rate", rate(m.slow_call_rate))?;
        d.set_item("consecutive_failures", m.consecutive_failures)?;
        d.set_item("half_open_in_flight", m.half_open_in_flight)?;
        d.set_item("half_open_successes", m.half_open_successes)?;
        d.set_item("openings", m.openings)?;
        d.set_item("retry_after", m.retry_after_ns.map(ns_to_secs))?;
        d.set_item("permits_outstanding", outstanding)?;
        // What dead processes hold, until a caller gives it back (shared only).
        let shared = self.core.breaker.is_shared();
        d.set_item(
            "permits_abandoned",
            shared.then(|| self.core.breaker.abandoned()),
        )?;
        let t = PyDict::new(py);
        let tot = m.totals;
        t.set_item("admitted", tot.admitted)?;
        t.set_item("rejected", tot.rejected)?;
        t.set_item("successes", tot.successes)?;
        t.set_item("failures", tot.failures)?;
        t.set_item("slow", tot.slow)?;
        t.set_item("ignored", tot.ignored)?;
        t.set_item("stale", tot.stale)?;
        t.set_item("transitions", tot.transitions)?;
        d.set_item("totals", t)?;
        Ok(d)
    }

    /// The outcome this breaker gives a returned value (`success`, or
    /// `failure` when `failure_on_result` says so).
    fn classify_result(&self, py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<&'static str> {
        Ok(outcome_name(self.core.result_outcome(py, value)?))
    }

    /// The outcome this breaker gives an exception (`success`, `failure`, `ignored`).
    fn classify(&self, py: Python<'_>, exc: &Bound<'_, PyAny>) -> &'static str {
        outcome_name(self.core.classifier.classify(py, exc))
    }
}

/// Acquire, run `call`, record its outcome: the breaker layer of every sync path.
pub fn guarded_call(
    py: Python<'_>,
    core: &BreakerCore,
    call: impl FnOnce() -> PyResult<Py<PyAny>>,
) -> PyResult<Py<PyAny>> {
    let (held, start) = core.begin(py)?;
    match call() {
        Ok(v) if crate::guarded::is_coroutine(py, v.bind(py)) => {
            // The call only made the coroutine: nothing it does ran yet, so
            // nothing is known about the dependency.
            let (_, end) = core.end(py, start);
            core.record(py, held, Outcome::Ignored, 0, end);
            Err(crate::guarded::refuse_coroutine(py, v.bind(py)))
        }
        Ok(v) => match core.result_outcome(py, v.bind(py)) {
            Ok(outcome) => {
                let (duration, end) = core.end(py, start);
                core.record(py, held, outcome, duration, end);
                raise_pending()?;
                Ok(v)
            }
            Err(e) => {
                core.record_error(py, held, e.value(py).as_any(), start);
                Err(e)
            }
        },
        Err(e) => {
            core.record_error(py, held, e.value(py).as_any(), start);
            raise_pending()?;
            Err(e)
        }
    }
}

/// A breaker permit held by Python code (`breaker.acquire()`, the context
/// manager and the async and generator wrappers). It records exactly once; a
/// permit dropped unrecorded counts as ignored, so a half-open probe slot is never
/// lost.
#[pyclass(frozen, module = "seawall._native", name = "Permit")]
pub struct BreakerPermit {
    core: Arc<BreakerCore>,
    held: Permit,
    start: u64,
    used: AtomicBool,
    /// The process that acquired it: a child made by `fork()` that drops its copy
    /// must not record the parent's call.
    owner: u32,
}

impl BreakerPermit {
    fn take(&self, py: Python<'_>) -> PyResult<()> {
        if self.used.swap(true, Ordering::AcqRel) {
            return Err(errors::permit_used(py, "circuit breaker"));
        }
        Ok(())
    }

    fn finish(&self, py: Python<'_>, outcome: Outcome, duration: Option<f64>) -> PyResult<()> {
        let d = opt_secs_to_ns(py, "duration", duration)?;
        let end = self.core.clock.now(py)?;
        self.take(py)?;
        let d = d.unwrap_or_else(|| end.saturating_sub(self.start));
        self.core.record(py, self.held, outcome, d, end);
        raise_pending()
    }
}

#[pymethods]
impl BreakerPermit {
    /// Record `outcome` (`success`, `failure` or `ignored`); `duration` in seconds
    /// (default: since the permit was acquired).
    #[pyo3(signature = (outcome, duration=None))]
    fn record(&self, py: Python<'_>, outcome: &str, duration: Option<f64>) -> PyResult<()> {
        let o = outcome_from(outcome).ok_or_else(|| {
            pyo3::exceptions::PyValueError::new_err(format!(
                "outcome must be 'success', 'failure' or 'ignored', got {outcome:?}"
            ))
        })?;
        self.finish(py, o, duration)
    }

    #[pyo3(signature = (duration=None))]
    fn success(&self, py: Python<'_>, duration: Option<f64>) -> PyResult<()> {
        self.finish(py, Outcome::Success, duration)
    }

    #[pyo3(signature = (duration=None))]
    fn failure(&self, py: Python<'_>, duration: Option<f64>) -> PyResult<()> {
        self.finish(py, Outcome::Failure, duration)
    }

    fn ignore(&self, py: Python<'_>) -> PyResult<()> {
        self.finish(py, Outcome::Ignored, Some(0.0))
    }

    /// Record the outcome the breaker's rule gives `exc`; returns its name.
    #[pyo3(signature = (exc, duration=None))]
    fn record_exception(
        &self,
        py: Python<'_>,
        exc: &Bound<'_, PyAny>,
        duration: Option<f64>,
    ) -> PyResult<&'static str> {
        let o = self.core.classifier.classify(py, exc);
        self.finish(py, o, duration)?;
        Ok(outcome_name(o))
    }

    /// Whether the permit was recorded.
    #[getter]
    fn used(&self) -> bool {
        self.used.load(Ordering::Acquire)
    }

    /// The breaker epoch that admitted the call.
    #[getter]
    fn epoch(&self) -> u32 {
        self.held.epoch
    }
}

impl Drop for BreakerPermit {
    fn drop(&mut self) {
        if seawall_host::process_id() == self.owner && !self.used.swap(true, Ordering::AcqRel) {
            self.core
                .record_quiet(self.held, Outcome::Ignored, 0, self.start);
        }
    }
}

/// A permit held by `with breaker:` in a thread with no running event loop.
/// Dropped unrecorded (a thread that ends inside the block), it counts as
/// ignored, like a [`BreakerPermit`].
struct Held {
    /// Shared by `Arc`, not by a reference to the Python scope: a block left
    /// open when the process exits is dropped with the thread's storage, after
    /// the interpreter may have freed its objects.
    core: Arc<BreakerCore>,
    permit: Option<Permit>,
    /// When the block began (ns), if [`BreakerCore::begin`] read it.
    start: Option<u64>,
    /// After `fork()` the child's copy of the stack must not record the parent's call.
    owner: u32,
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Some(permit) = self.permit.take()
            && seawall_host::process_id() == self.owner
        {
            // Without a start the clock is the OS's (see `BreakerCore::begin`).
            let now = self.start.unwrap_or_else(seawall_host::clock::monotonic_ns);
            self.core.record_quiet(permit, Outcome::Ignored, 0, now);
        }
    }
}

/// The `with breaker:` blocks open in this thread (one thread-local, so a
/// block's enter and exit each look up thread-local storage once while no
/// block entered under an event loop is open).
struct Scopes {
    /// The permits of the blocks entered with no event loop running, innermost
    /// last. Without an event loop no other task can run in this thread between
    /// `__enter__` and `__exit__`, so a stack per thread pairs them exactly (as
    /// a context variable would, with no context lookups).
    held: Vec<Held>,
    /// How many blocks entered with an event loop running (their permits kept
    /// per task) are not yet left. While it is 0, an `__exit__` here cannot be
    /// one of theirs, so it skips the look for a running loop.
    loop_entries: usize,
}

thread_local! {
    static SCOPES: RefCell<Scopes> = const {
        RefCell::new(Scopes {
            held: Vec::new(),
            loop_entries: 0,
        })
    };
}

static RUNNING_LOOP: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// Whether an asyncio event loop runs in this thread: then tasks interleave
/// at each `await`, also inside a sync `with` block, and the permit must be kept
/// per task (the Python side's context variable) instead of per thread.
fn in_event_loop(py: Python<'_>) -> PyResult<bool> {
    let get = RUNNING_LOOP.import(py, "asyncio.events", "_get_running_loop")?;
    Ok(!get.call0()?.is_none())
}

/// The base class of `seawall.CircuitBreaker`: `with breaker:` entered and
/// left in native code, as cheap as the decorator. In a thread running an
/// event loop it calls the Python side's `_enter_in_context` /
/// `_exit_in_context(exc)` instead, which keep the permit per task.
#[pyclass(subclass, frozen, module = "seawall._native", name = "BreakerScope")]
pub struct BreakerScope {
    core: OnceLock<Arc<BreakerCore>>,
}

#[pymethods]
impl BreakerScope {
    /// Takes (and ignores) the subclass's constructor arguments.
    #[new]
    #[pyo3(signature = (*_args, **_kwargs))]
    fn new(_args: &Bound<'_, PyTuple>, _kwargs: Option<&Bound<'_, PyDict>>) -> Self {
        Self {
            core: OnceLock::new(),
        }
    }

    /// Bind the breaker `with` uses (once, from the subclass's `__init__`).
    fn _bind_scope(&self, breaker: &Bound<'_, Breaker>) -> PyResult<()> {
        self.core
            .set(Arc::clone(&breaker.get().core))
            .map_err(|_| pyo3::exceptions::PyRuntimeError::new_err("breaker already bound"))
    }

    fn __enter__(slf: &Bound<'_, Self>) -> PyResult<Py<Self>> {
        let py = slf.py();
        if in_event_loop(py)? {
            slf.call_method0(intern!(py, "_enter_in_context"))?;
            SCOPES.with_borrow_mut(|s| s.loop_entries += 1);
            return Ok(slf.clone().unbind());
        }
        let core = slf.get().bound(py)?;
        let (permit, start) = core.begin(py)?;
        let held = Held {
            core: Arc::clone(core),
            permit: Some(permit),
            start,
            owner: seawall_host::process_id(),
        };
        SCOPES.with_borrow_mut(|s| s.held.push(held));
        Ok(slf.clone().unbind())
    }

    #[pyo3(signature = (_et, exc, _tb))]
    fn __exit__(
        slf: &Bound<'_, Self>,
        _et: &Bound<'_, PyAny>,
        exc: &Bound<'_, PyAny>,
        _tb: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let py = slf.py();
        // Popped before recording: recording runs listeners, which may open
        // `with` blocks of their own.
        let mut held = None;
        let looked = SCOPES.with_borrow_mut(|s| {
            if s.loop_entries > 0 {
                return true;
            }
            held = Self::pop_held(&mut s.held, slf);
            false
        });
        if looked {
            if in_event_loop(py)? {
                return Self::exit_in_context(slf, exc);
            }
            held = SCOPES.with_borrow_mut(|s| Self::pop_held(&mut s.held, slf));
        }
        let core = slf.get().bound(py)?;
        let Some(mut held) = held else {
            // Not entered here natively: a block entered where a loop runs in
            // another thread (a coroutine moved between loops) is kept per task.
            if !looked && in_event_loop(py)? {
                return Self::exit_in_context(slf, exc);
            }
            return Err(pyo3::exceptions::PyRuntimeError::new_err(
                "__exit__ without a matching __enter__ in this thread or task",
            ));
        };
        let Some(permit) = held.permit.take() else {
            return Ok(());
        };
        if exc.is_none() {
            let (duration, end) = core.end(py, held.start);
            core.record(py, permit, Outcome::Success, duration, end);
        } else {
            core.record_error(py, permit, exc, held.start);
        }
        raise_pending()
    }
}

impl BreakerScope {
    /// The innermost block of this stack entered on `slf`'s breaker, taken off it.
    fn pop_held(stack: &mut Vec<Held>, slf: &Bound<'_, Self>) -> Option<Held> {
        let core = slf.get().core.get()?;
        let at = stack.iter().rposition(|h| Arc::ptr_eq(&h.core, core))?;
        Some(stack.remove(at))
    }

    /// Leave a block whose permit the Python side keeps per task.
    fn exit_in_context(slf: &Bound<'_, Self>, exc: &Bound<'_, PyAny>) -> PyResult<()> {
        SCOPES.with_borrow_mut(|s| s.loop_entries = s.loop_entries.saturating_sub(1));
        slf.call_method1(intern!(slf.py(), "_exit_in_context"), (exc,))?;
        Ok(())
    }

    fn bound(&self, _py: Python<'_>) -> PyResult<&Arc<BreakerCore>> {
        self.core.get().ok_or_else(|| {
            pyo3::exceptions::PyRuntimeError::new_err(
                "CircuitBreaker.__init__ did not run: this breaker has no state",
            )
        })
    }
}

/// The permit table size of `permit_slots=` (the default when not given); an
/// error for a breaker that is not shared, whose permit objects need no table.
fn permit_table(py: Python<'_>, shared: bool, n: Option<i64>) -> PyResult<PermitSlots> {
    match n {
        None => Ok(PermitSlots::DEFAULT),
        Some(_) if !shared => Err(errors::config_error(
            py,
            "permit_slots",
            "invalid permit_slots: applies to shared breakers only (give shared=...)",
        )),
        Some(n) => {
            PermitSlots::new(u64::try_from(n).unwrap_or(0)).map_err(|e| errors::from_config(py, e))
        }
    }
}
