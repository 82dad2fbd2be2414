//! The bulkhead behind `seawall.Bulkhead` (DESIGN §5): the core's lock-free
//! permit semaphore, with the wake-ups a host runtime needs on top.
//!
//! The core hands a released permit straight to the oldest waiter's ticket
//! (`acquire_raw` / `poll` / `cancel` / `release`); it cannot wake anyone. So each
//! bulkhead keeps a small registry of sleeping waiters: a thread parks on its own
//! [`Parker`] with the GIL released, an asyncio task awaits a future. Whoever
//! releases or cancels (the two operations that can grant a ticket) then wakes
//! every registered waiter whose ticket is granted: a thread is unparked, a future
//! is resolved through `loop.call_soon_threadsafe`. There is no polling: a waiter
//! registers, then polls its ticket once more before sleeping, so a grant made
//! between its enqueue and its registration is never missed. The registry's
//! mutex is held only to add, remove or collect entries, never around user code.
//!
//! A waiter that times out or is cancelled calls `cancel`: if a permit reached it
//! in the same instant, the core passes it on to the next waiter (who is then
//! woken here) or back to the pool, so no permit is ever lost.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use seawall_core::{
    CancelOutcome, Priority, PriorityShares, RawAdmission, RejectReason, Semaphore,
    SemaphoreConfig, Ticket, TicketState,
};

use crate::errors;
use crate::time::{count, ns_to_secs, percent, secs_to_ns};

/// Ring slots of a bulkhead's wait queue: the most waiters `max_queue` may allow.
pub const QUEUE_CAPACITY: usize = 1024;

/// How long a blocked thread sleeps at most before it looks at Python signals
/// (so Ctrl-C interrupts a wait) and at its ticket again.
const SIGNAL_CHECK: Duration = Duration::from_millis(50);

/// Where the semaphore lives. Only in this process for now; a shared one (a
/// `SharedRegion` of the semaphore, from seawall-ffi) is one more variant here.
enum Store {
    Local(Box<Semaphore<QUEUE_CAPACITY>>),
}

impl core::ops::Deref for Store {
    type Target = Semaphore<QUEUE_CAPACITY>;
    fn deref(&self) -> &Self::Target {
        match self {
            Self::Local(s) => s,
        }
    }
}

/// A sleeping thread's wake-up flag.
#[derive(Default)]
struct Parker {
    woken: Mutex<bool>,
    cond: Condvar,
}

impl Parker {
    fn park_timeout(&self, t: Duration) {
        let mut woken = self.woken.lock().unwrap_or_else(PoisonError::into_inner);
        if !*woken {
            woken = self
                .cond
                .wait_timeout(woken, t)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        *woken = false;
    }

    fn unpark(&self) {
        *self.woken.lock().unwrap_or_else(PoisonError::into_inner) = true;
        self.cond.notify_one();
    }
}

enum Wake {
    Thread(Arc<Parker>),
    Future {
        event_loop: Py<PyAny>,
        future: Py<PyAny>,
    },
}

struct Sleeper {
    ticket: u32,
    wake: Wake,
}

/// Counters for metrics (relaxed: statistics only).
#[derive(Default)]
struct Counters {
    admitted: AtomicU64,
    shed: AtomicU64,
    full: AtomicU64,
    timeouts: AtomicU64,
}

/// One bulkhead; shared (`Arc`) by its Python object, permits and decorated
/// functions.
pub struct SemCore {
    sem: Store,
    sleepers: Mutex<Vec<Sleeper>>,
    name: Option<String>,
    counters: Counters,
    /// Test hook: never wake sleepers, so waiting relies on re-polling alone (the
    /// mode a bulkhead shared with other processes needs, whose releases cannot
    /// wake this process).
    poll_only: bool,
    /// How often a waiter re-polls its ticket: `None` while every release that
    /// can grant it happens in this process (and wakes it).
    poll_interval: Option<Duration>,
}

static GRANT: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

fn priority(py: Python<'_>, p: &str) -> PyResult<Priority> {
    Priority::ALL
        .into_iter()
        .find(|x| x.name() == p)
        .ok_or_else(|| {
            errors::config_error(
                py,
                "priority",
                &format!(
                    "invalid priority: must be 'critical', 'high', 'normal' or 'low', got {p:?}"
                ),
            )
        })
}

/// What an acquire that may wait got.
pub enum Got {
    /// A permit is held.
    Admitted,
    /// Waiting with this ticket.
    Queued(Ticket),
}

impl SemCore {
    /// Take a permit now, or (if `wait` and there is room) a ticket; a refusal is
    /// `BulkheadFullError`.
    pub fn enter(&self, py: Python<'_>, p: Priority, wait: bool) -> PyResult<Got> {
        match self.sem.acquire_raw(p, wait) {
            Ok(RawAdmission::Admitted) => {
                self.counters.admitted.fetch_add(1, Ordering::Relaxed);
                Ok(Got::Admitted)
            }
            Ok(RawAdmission::Queued(t)) => Ok(Got::Queued(t)),
            Err(r) => {
                let reason = match r.reason {
                    RejectReason::Shed => {
                        self.counters.shed.fetch_add(1, Ordering::Relaxed);
                        "shed"
                    }
                    RejectReason::Full => {
                        self.counters.full.fetch_add(1, Ordering::Relaxed);
                        "full"
                    }
                };
                Err(errors::bulkhead_full(
                    py,
                    self.name.as_deref(),
                    reason,
                    r.active,
                    r.queued,
                ))
            }
        }
    }

    /// Give a permit back and wake whoever it was handed to.
    pub fn release(&self, py: Python<'_>) {
        if self.sem.release() {
            self.wake_granted(py);
        }
    }

    /// A waiter gives up: leave the queue (a permit granted in the same instant
    /// goes on to the next waiter, who is woken) and forget its registration.
    pub fn abandon(&self, py: Python<'_>, t: Ticket) {
        self.unregister(t.id);
        if self.sem.cancel(t) == CancelOutcome::PassedOn {
            self.wake_granted(py);
        }
    }

    fn granted(&self, t: Ticket) -> bool {
        self.sem.poll(t) == TicketState::Granted
    }

    fn register(&self, ticket: u32, wake: Wake) {
        self.sleepers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Sleeper { ticket, wake });
    }

    fn unregister(&self, ticket: u32) {
        self.sleepers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|s| s.ticket != ticket);
    }

    /// Wake every registered waiter whose ticket has been granted.
    fn wake_granted(&self, py: Python<'_>) {
        if self.poll_only {
            return;
        }
        let ready: Vec<Sleeper> = {
            let mut list = self.sleepers.lock().unwrap_or_else(PoisonError::into_inner);
            if list.is_empty() {
                return;
            }
            let mut ready = Vec::new();
            let mut i = 0;
            while i < list.len() {
                if self.granted(Ticket { id: list[i].ticket }) {
                    ready.push(list.swap_remove(i));
                } else {
                    i += 1;
                }
            }
            ready
        };
        for s in ready {
            match s.wake {
                Wake::Thread(p) => p.unpark(),
                Wake::Future { event_loop, future } => {
                    let woke = GRANT
                        .import(py, "seawall._bulkhead", "_grant")
                        .and_then(|grant| {
                            event_loop.call_method1(py, "call_soon_threadsafe", (grant, future))
                        });
                    if woke.is_err() {
                        // Its loop is gone: nobody will take this permit, so pass it on.
                        self.abandon(py, Ticket { id: s.ticket });
                    }
                }
            }
        }
    }

    /// Block this thread (GIL released) until ticket `t` is granted, `timeout`
    /// passes (`BulkheadFullError`, reason `timeout`) or a Python signal handler
    /// raises (e.g. `KeyboardInterrupt`): in every case but the grant the ticket
    /// is cancelled, so no permit is held or lost.
    pub fn wait(&self, py: Python<'_>, t: Ticket, timeout: Option<Duration>) -> PyResult<()> {
        let deadline = timeout.and_then(|d| Instant::now().checked_add(d));
        let parker = Arc::new(Parker::default());
        self.register(t.id, Wake::Thread(Arc::clone(&parker)));
        loop {
            if self.granted(t) {
                self.unregister(t.id);
                self.counters.admitted.fetch_add(1, Ordering::Relaxed);
                return Ok(());
            }
            let now = Instant::now();
            let left = deadline.map_or(Duration::MAX, |d| d.saturating_duration_since(now));
            if left.is_zero() {
                self.abandon(py, t);
                return Err(self.timed_out(py));
            }
            let mut nap = left.min(SIGNAL_CHECK);
            if let Some(p) = self.poll_interval {
                nap = nap.min(p);
            }
            py.detach(|| parker.park_timeout(nap));
            if let Err(e) = py.check_signals() {
                self.abandon(py, t);
                return Err(e);
            }
        }
    }

    fn timed_out(&self, py: Python<'_>) -> PyErr {
        self.counters.timeouts.fetch_add(1, Ordering::Relaxed);
        let s = self.sem.snapshot();
        errors::bulkhead_full(py, self.name.as_deref(), "timeout", s.active, s.queued)
    }

    /// Acquire for a blocking caller: now, or wait up to `timeout`.
    pub fn acquire_blocking(
        &self,
        py: Python<'_>,
        p: Priority,
        timeout: Option<Duration>,
    ) -> PyResult<()> {
        match self.enter(py, p, true)? {
            Got::Admitted => Ok(()),
            Got::Queued(t) => self.wait(py, t, timeout),
        }
    }
}

/// `seawall._native.Bulkhead`: the native half of `seawall.Bulkhead`.
#[pyclass(frozen, module = "seawall._native", name = "Bulkhead")]
pub struct Bulkhead {
    pub(crate) core: Arc<SemCore>,
}

fn opt_timeout(py: Python<'_>, field: &str, t: Option<f64>) -> PyResult<Option<Duration>> {
    Ok(t.map(|s| secs_to_ns(py, field, s))
        .transpose()?
        .map(Duration::from_nanos))
}

#[pymethods]
impl Bulkhead {
    #[new]
    #[pyo3(signature = (
        *, max_concurrent, max_queue, shares=None, name=None, shared=None,
        _poll_only=false, _poll_interval=None
    ))]
    #[allow(
        clippy::too_many_arguments,
        clippy::similar_names,
        clippy::used_underscore_binding,
        reason = "keyword arguments of the Python class"
    )]
    fn new(
        py: Python<'_>,
        max_concurrent: i64,
        max_queue: i64,
        shares: Option<(f64, f64, f64, f64)>,
        name: Option<String>,
        shared: Option<String>,
        _poll_only: bool,
        _poll_interval: Option<f64>,
    ) -> PyResult<Self> {
        let shares = match shares {
            None => PriorityShares::ALL_FULL,
            Some((c, h, n, l)) => PriorityShares {
                critical: percent(py, "shares", c)?,
                high: percent(py, "shares", h)?,
                normal: percent(py, "shares", n)?,
                low: percent(py, "shares", l)?,
            },
        };
        let config = SemaphoreConfig {
            max_concurrent: count(py, "max_concurrent", max_concurrent, 1, u32::MAX)?,
            max_queue: count(py, "max_queue", max_queue, 0, QUEUE_CAPACITY as u32)?,
            shares,
        };
        if let Some(region) = shared {
            // The shared semaphore region is not in seawall-ffi yet; refuse loudly
            // rather than hand out a bulkhead that other processes cannot see.
            return Err(errors::seawall(
                py,
                &format!(
                    "Bulkhead(shared={region:?}): bulkheads shared between processes need the shared semaphore region of seawall-ffi, which this build does not have yet"
                ),
            ));
        }
        let sem = Semaphore::new(config).map_err(|e| errors::from_config(py, e))?;
        Ok(Self {
            core: Arc::new(SemCore {
                sem: Store::Local(Box::new(sem)),
                sleepers: Mutex::new(Vec::new()),
                name,
                counters: Counters::default(),
                poll_only: _poll_only,
                poll_interval: opt_timeout(py, "_poll_interval", _poll_interval)?,
            }),
        })
    }

    /// Take a permit, waiting (GIL released) at most `timeout` seconds (`None`:
    /// as long as it takes). Raises `BulkheadFullError`.
    #[pyo3(signature = (priority="normal", timeout=None))]
    fn acquire(
        &self,
        py: Python<'_>,
        priority: &str,
        timeout: Option<f64>,
    ) -> PyResult<BulkheadPermit> {
        let p = self::priority(py, priority)?;
        let timeout = opt_timeout(py, "timeout", timeout)?;
        self.core.acquire_blocking(py, p, timeout)?;
        Ok(BulkheadPermit::new(&self.core))
    }

    /// Take a permit now or raise `BulkheadFullError`; never waits.
    #[pyo3(signature = (priority="normal"))]
    fn try_acquire(&self, py: Python<'_>, priority: &str) -> PyResult<BulkheadPermit> {
        let p = self::priority(py, priority)?;
        match self.core.enter(py, p, false)? {
            Got::Admitted => Ok(BulkheadPermit::new(&self.core)),
            Got::Queued(t) => {
                // `wait = false` never queues; give it back if it ever did.
                self.core.abandon(py, t);
                let s = self.core.sem.snapshot();
                Err(errors::bulkhead_full(
                    py,
                    self.core.name.as_deref(),
                    "full",
                    s.active,
                    s.queued,
                ))
            }
        }
    }

    /// The core protocol: a permit now, or a place in the queue (a `Ticket` to
    /// poll, take or cancel); `BulkheadFullError` when neither.
    #[pyo3(signature = (priority="normal"))]
    fn enqueue(&self, py: Python<'_>, priority: &str) -> PyResult<Py<PyAny>> {
        let p = self::priority(py, priority)?;
        Ok(match self.core.enter(py, p, true)? {
            Got::Admitted => Py::new(py, BulkheadPermit::new(&self.core))?.into_any(),
            Got::Queued(t) => Py::new(
                py,
                BulkheadTicket {
                    core: Arc::clone(&self.core),
                    ticket: t,
                    done: AtomicBool::new(false),
                },
            )?
            .into_any(),
        })
    }

    /// For `acquire_async`: `None` when admitted now, else a ticket id whose
    /// grant resolves `future` on `event_loop` (registered here).
    #[pyo3(signature = (priority, event_loop, future))]
    fn enter_async(
        &self,
        py: Python<'_>,
        priority: &str,
        event_loop: Py<PyAny>,
        future: Py<PyAny>,
    ) -> PyResult<Option<u32>> {
        let p = self::priority(py, priority)?;
        match self.core.enter(py, p, true)? {
            Got::Admitted => Ok(None),
            Got::Queued(t) => {
                self.core
                    .register(t.id, Wake::Future { event_loop, future });
                // A release between the enqueue and the registration found no one
                // to wake: look once more.
                self.core.wake_granted(py);
                Ok(Some(t.id))
            }
        }
    }

    /// Whether ticket `ticket` has been granted (it then holds a permit).
    fn is_granted(&self, ticket: u32) -> bool {
        self.core.granted(Ticket { id: ticket })
    }

    /// An async waiter's grant arrived: it holds a permit now.
    fn took(&self, ticket: u32) {
        self.core.unregister(ticket);
        self.core.counters.admitted.fetch_add(1, Ordering::Relaxed);
    }

    /// An async waiter gives up (cancelled, or `timed_out`): leave the queue; a
    /// permit granted meanwhile is passed on. With `timed_out`, returns the
    /// `BulkheadFullError` to raise.
    #[pyo3(signature = (ticket, timed_out=false))]
    fn abandon(&self, py: Python<'_>, ticket: u32, timed_out: bool) -> Option<Py<PyAny>> {
        self.core.abandon(py, Ticket { id: ticket });
        timed_out.then(|| self.core.timed_out(py).into_value(py).into_any())
    }

    /// A permit object for a permit already held (after `acquire_async`).
    fn adopt(&self) -> BulkheadPermit {
        BulkheadPermit::new(&self.core)
    }

    #[getter]
    fn active(&self) -> u32 {
        self.core.sem.snapshot().active
    }

    #[getter]
    fn queued(&self) -> u32 {
        self.core.sem.snapshot().queued
    }

    #[getter]
    fn max_concurrent(&self) -> u32 {
        self.core.sem.config().max_concurrent
    }

    #[getter]
    fn max_queue(&self) -> u32 {
        self.core.sem.config().max_queue
    }

    #[getter]
    fn name(&self) -> Option<&str> {
        self.core.name.as_deref()
    }

    /// Seconds between re-polls of a waiting ticket (`None`: woken on release).
    #[getter]
    fn poll_interval(&self) -> Option<f64> {
        self.core
            .poll_interval
            .map(|d| ns_to_secs(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)))
    }

    /// The limit of `priority`: `max(1, ⌊max_concurrent · share⌋)`.
    #[pyo3(signature = (priority="normal"))]
    fn limit(&self, py: Python<'_>, priority: &str) -> PyResult<u32> {
        Ok(self.core.sem.limit(self::priority(py, priority)?))
    }

    /// Occupancy and counters (dict).
    fn metrics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
        let s = self.core.sem.snapshot();
        let c = &self.core.counters;
        let d = pyo3::types::PyDict::new(py);
        d.set_item("name", self.core.name.as_deref())?;
        d.set_item("active", s.active)?;
        d.set_item("queued", s.queued)?;
        d.set_item("max_concurrent", self.core.sem.config().max_concurrent)?;
        d.set_item("max_queue", self.core.sem.config().max_queue)?;
        d.set_item("admitted", c.admitted.load(Ordering::Relaxed))?;
        d.set_item("rejected_shed", c.shed.load(Ordering::Relaxed))?;
        d.set_item("rejected_full", c.full.load(Ordering::Relaxed))?;
        d.set_item("rejected_timeout", c.timeouts.load(Ordering::Relaxed))?;
        Ok(d)
    }
}

/// `parse_priority(name)`: check a priority name (for the Python layer).
pub fn parse_priority(py: Python<'_>, p: &str) -> PyResult<Priority> {
    priority(py, p)
}

/// A held bulkhead permit; released once (`release()`, the end of a `with`
/// block, or when the object is dropped).
#[pyclass(frozen, module = "seawall._native", name = "BulkheadPermit")]
pub struct BulkheadPermit {
    core: Arc<SemCore>,
    released: AtomicBool,
}

impl BulkheadPermit {
    fn new(core: &Arc<SemCore>) -> Self {
        Self {
            core: Arc::clone(core),
            released: AtomicBool::new(false),
        }
    }
}

#[pymethods]
impl BulkheadPermit {
    /// Give the permit back (to the oldest waiter, or the pool).
    fn release(&self, py: Python<'_>) -> PyResult<()> {
        if self.released.swap(true, Ordering::AcqRel) {
            return Err(errors::permit_used(py, "bulkhead"));
        }
        self.core.release(py);
        Ok(())
    }

    #[getter]
    fn released(&self) -> bool {
        self.released.load(Ordering::Acquire)
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, py: Python<'_>, _exc: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        if !self.released.swap(true, Ordering::AcqRel) {
            self.core.release(py);
        }
        false
    }
}

impl Drop for BulkheadPermit {
    fn drop(&mut self) {
        if !self.released.swap(true, Ordering::AcqRel) {
            Python::attach(|py| self.core.release(py));
        }
    }
}

/// A place in a bulkhead's queue (from `Bulkhead.enqueue`): poll it, take its
/// permit once granted, or cancel it. Dropped untaken, it is cancelled (a permit
/// granted meanwhile is passed on).
#[pyclass(frozen, module = "seawall._native", name = "BulkheadTicket")]
pub struct BulkheadTicket {
    core: Arc<SemCore>,
    ticket: Ticket,
    done: AtomicBool,
}

#[pymethods]
impl BulkheadTicket {
    /// `waiting`, `granted`, `cancelled`, or `done` once taken or cancelled
    /// through this object.
    #[getter]
    fn state(&self) -> &'static str {
        if self.done.load(Ordering::Acquire) {
            return "done";
        }
        match self.core.sem.poll(self.ticket) {
            TicketState::Waiting => "waiting",
            TicketState::Granted => "granted",
            TicketState::Cancelled | TicketState::Unknown => "cancelled",
        }
    }

    /// Whether a release has handed this ticket its permit.
    fn granted(&self) -> bool {
        !self.done.load(Ordering::Acquire) && self.core.granted(self.ticket)
    }

    /// The permit, once granted (else `None`). Works once.
    fn take(&self, py: Python<'_>) -> PyResult<Option<BulkheadPermit>> {
        if !self.granted() {
            return Ok(None);
        }
        if self.done.swap(true, Ordering::AcqRel) {
            return Err(errors::permit_used(py, "bulkhead ticket"));
        }
        self.core.counters.admitted.fetch_add(1, Ordering::Relaxed);
        Ok(Some(BulkheadPermit::new(&self.core)))
    }

    /// Leave the queue (a permit granted in the same instant is passed on).
    fn cancel(&self, py: Python<'_>) {
        if !self.done.swap(true, Ordering::AcqRel) {
            self.core.abandon(py, self.ticket);
        }
    }

    #[getter]
    fn id(&self) -> u32 {
        self.ticket.id
    }
}

impl Drop for BulkheadTicket {
    fn drop(&mut self) {
        if !self.done.swap(true, Ordering::AcqRel) {
            Python::attach(|py| self.core.abandon(py, self.ticket));
        }
    }
}
