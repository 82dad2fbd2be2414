//! `seawall._native.Bulkhead`: the native half of `seawall.Bulkhead`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use pyo3::prelude::*;
use seawall_core::{PriorityShares, SemaphoreConfig};
use seawall_host::semaphore::{
    SEMAPHORE_MAX_CONCURRENT, SEMAPHORE_MAX_QUEUE, SHARED_WAIT_POLL, Semaphore,
};
use seawall_host::shared::{OpenOptions, RegionError};

use super::permit::BulkheadPermit;
use super::semcore::{Got, SemCore};
use super::ticket::{BulkheadTicket, Held};
use super::{QUEUE_CAPACITY, priority};
use crate::errors;
use crate::time::{count, ns_to_secs, percent, secs_to_ns};

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

fn region_error(py: Python<'_>, name: &str, config: &SemaphoreConfig, e: RegionError) -> PyErr {
    match e {
        RegionError::Config(c) => errors::from_config(py, c),
        e @ RegionError::ConfigMismatch { .. } => {
            let s = config.shares;
            let pct = seawall_host::units::percent_of_ratio;
            errors::shared_region(
                py,
                &format!(
                    "shared bulkhead {name:?}: {e}; every process must give the same max_concurrent, max_queue and shares (this one: max_concurrent={}, max_queue={}, shares critical/high/normal/low = {}/{}/{}/{} %)",
                    config.max_concurrent,
                    config.max_queue,
                    pct(s.critical),
                    pct(s.high),
                    pct(s.normal),
                    pct(s.low),
                ),
            )
        }
        other => errors::shared_region(py, &format!("shared bulkhead {name:?}: {other}")),
    }
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
        // A shared bulkhead's holder table has a slot for every permit and
        // ticket; a local one is the core semaphore alone.
        let (most_concurrent, most_queue) = if shared.is_some() {
            (SEMAPHORE_MAX_CONCURRENT as u32, SEMAPHORE_MAX_QUEUE as u32)
        } else {
            (SemaphoreConfig::MAX_CONCURRENT, QUEUE_CAPACITY)
        };
        let config = SemaphoreConfig {
            max_concurrent: count(py, "max_concurrent", max_concurrent, 1, most_concurrent)?,
            max_queue: count(py, "max_queue", max_queue, 0, most_queue)?,
            shares,
        };
        let mut poll_interval = opt_timeout(py, "_poll_interval", _poll_interval)?;
        let sem = match shared {
            Some(region) => {
                // Attaching may wait for another process that is creating the region.
                let opened =
                    py.detach(|| Semaphore::open_shared(&region, &config, &OpenOptions::default()));
                opened.map_err(|e| region_error(py, &region, &config, e))?
            }
            None => Semaphore::local(&config).map_err(|e| errors::from_config(py, e))?,
        };
        let poll_only = _poll_only || sem.is_shared();
        if poll_only {
            // With no wake-ups, waiters must look again on their own.
            poll_interval = poll_interval.or(Some(SHARED_WAIT_POLL));
        }
        let core = Arc::new(SemCore::new(sem, name, poll_only, poll_interval));
        if core.sem.is_shared() {
            crate::at_exit::remember(&core);
        }
        Ok(Self { core })
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
        let id = self.core.acquire_blocking(py, p, timeout)?;
        Ok(BulkheadPermit::new(&self.core, id))
    }

    /// Take a permit now or raise `BulkheadFullError`; never waits.
    #[pyo3(signature = (priority="normal"))]
    fn try_acquire(&self, py: Python<'_>, priority: &str) -> PyResult<BulkheadPermit> {
        let p = self::priority(py, priority)?;
        match self.core.enter(py, p, false)? {
            Got::Admitted(id) => Ok(BulkheadPermit::new(&self.core, id)),
            Got::Queued(t) => {
                // `wait = false` never queues; give it back if it ever did.
                self.core.abandon(py, t);
                let s = self.core.sem.snapshot();
                let err = errors::bulkhead_full(
                    py,
                    self.core.name.as_deref(),
                    "full",
                    s.active,
                    s.queued,
                );
                Err(self.core.refused(py, err))
            }
        }
    }

    /// The core protocol: a permit now, or a place in the queue (a `Ticket` to
    /// poll, take or cancel); `BulkheadFullError` when neither.
    #[pyo3(signature = (priority="normal"))]
    fn enqueue(&self, py: Python<'_>, priority: &str) -> PyResult<Py<PyAny>> {
        let p = self::priority(py, priority)?;
        Ok(match self.core.enter(py, p, true)? {
            Got::Admitted(id) => Py::new(py, BulkheadPermit::new(&self.core, id))?.into_any(),
            Got::Queued(t) => Py::new(
                py,
                BulkheadTicket {
                    core: Arc::clone(&self.core),
                    ticket: t,
                    state: Mutex::new(Held::Waiting),
                    owner: seawall_host::process_id(),
                },
            )?
            .into_any(),
        })
    }

    /// For `acquire_async`: a `BulkheadPermit` when admitted now, else the id of
    /// a ticket whose grant resolves `future` on `event_loop` (registered here;
    /// with polling, the caller looks with `is_granted` instead).
    #[pyo3(signature = (priority, event_loop, future))]
    fn enter_async(
        &self,
        py: Python<'_>,
        priority: &str,
        event_loop: Py<PyAny>,
        future: Py<PyAny>,
    ) -> PyResult<Py<PyAny>> {
        let p = self::priority(py, priority)?;
        match self.core.enter(py, p, true)? {
            Got::Admitted(id) => Ok(Py::new(py, BulkheadPermit::new(&self.core, id))?.into_any()),
            Got::Queued(t) => {
                self.core.register_future(py, t, event_loop, future);
                Ok(t.into_pyobject(py)?.into_any().unbind())
            }
        }
    }

    /// Whether ticket `ticket` has been granted. `True` once: the caller then
    /// holds the permit and must `adopt` it (or `abandon` the ticket, which gives
    /// it back). Raises `SeawallError` if the ticket is gone (reclaimed).
    fn is_granted(&self, py: Python<'_>, ticket: u64) -> PyResult<bool> {
        self.core.look(py, ticket)
    }

    /// The permit object for granted ticket `ticket` (after `acquire_async`).
    fn adopt(&self, ticket: u64) -> BulkheadPermit {
        // Woken by a release, the task's grant was only seen (by the waker's
        // peek): take it now. After `is_granted` it is taken already, and this
        // look finds the ticket gone, changing nothing.
        let _ = self.core.take_if_granted(ticket);
        self.core.admit(ticket);
        BulkheadPermit::new(&self.core, ticket)
    }

    /// An async waiter gives up (cancelled, or `timed_out`): leave the queue; a
    /// permit granted meanwhile is passed on. With `timed_out`, returns the
    /// `BulkheadFullError` to raise.
    #[pyo3(signature = (ticket, timed_out=false))]
    fn abandon(&self, py: Python<'_>, ticket: u64, timed_out: bool) -> Option<Py<PyAny>> {
        self.core.abandon(py, ticket);
        timed_out.then(|| self.core.timed_out(py).into_value(py).into_any())
    }

    #[getter]
    fn active(&self, py: Python<'_>) -> PyResult<u32> {
        let s = self.core.sem.snapshot_checked();
        Ok(s.map_err(|_| self.core.corrupt(py))?.active)
    }

    #[getter]
    fn queued(&self, py: Python<'_>) -> PyResult<u32> {
        let s = self.core.sem.snapshot_checked();
        Ok(s.map_err(|_| self.core.corrupt(py))?.queued)
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

    /// Whether the bulkhead lives in a region shared by the host's processes.
    #[getter]
    fn shared(&self) -> bool {
        self.core.sem.is_shared()
    }

    /// Whether this process created the shared region (always true for a local
    /// bulkhead).
    #[getter]
    fn created(&self) -> bool {
        self.core.sem.created()
    }

    /// Set (or clear) the rejection hook `rejected(error)`, told of each
    /// `BulkheadFullError` before it is raised.
    #[pyo3(signature = (hook))]
    fn set_events(&self, hook: Option<Py<PyAny>>) {
        self.core.set_hook(hook);
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
        let limit = self.core.sem.limit_checked(self::priority(py, priority)?);
        limit.map_err(|_| self.core.corrupt(py))
    }

    /// Give back the permits and cancel the tickets of processes that no longer
    /// exist (a worker killed while it held a permit or waited):
    /// `(permits, tickets)`. `(0, 0)` for a local bulkhead. Scans the holder
    /// table; a reclaimed permit goes to the oldest waiter, or to the pool.
    fn reclaim_abandoned(&self, py: Python<'_>) -> (u64, u64) {
        py.detach(|| self.core.sem.reclaim_abandoned())
    }

    /// Remove the shared bulkhead region `name` (a missing one is fine).
    #[staticmethod]
    fn unlink_shared(py: Python<'_>, name: &str) -> PyResult<()> {
        Semaphore::unlink_shared(name)
            .map_err(|e| errors::shared_region(py, &format!("shared bulkhead {name:?}: {e}")))
    }

    /// Occupancy and lifetime figures (dict).
    fn metrics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
        let sem = &self.core.sem;
        let shared = sem.is_shared();
        let f = sem
            .full_snapshot_checked()
            .map_err(|_| self.core.corrupt(py))?;
        let outstanding = shared.then_some((f.permits_outstanding, f.tickets_outstanding));
        let config = sem.config();
        // Lifetime figures: a shared bulkhead's are every process's (its region's).
        let t = sem.totals();
        let d = pyo3::types::PyDict::new(py);
        d.set_item("name", self.core.name.as_deref())?;
        d.set_item("shared", shared)?;
        d.set_item("active", f.active)?;
        d.set_item("queued", f.queued)?;
        d.set_item("max_concurrent", config.max_concurrent)?;
        d.set_item("max_queue", config.max_queue)?;
        d.set_item("permits_outstanding", outstanding.map(|o| o.0))?;
        d.set_item("tickets_outstanding", outstanding.map(|o| o.1))?;
        // What dead processes hold, until a caller gives it back (shared only).
        let abandoned = shared.then(|| sem.abandoned());
        d.set_item("permits_abandoned", abandoned.map(|a| a.0))?;
        d.set_item("tickets_abandoned", abandoned.map(|a| a.1))?;
        d.set_item("admitted", t.admitted)?;
        d.set_item("rejected_shed", t.rejected_shed)?;
        d.set_item("rejected_full", t.rejected_full)?;
        d.set_item("rejected_timeout", t.rejected_timeout)?;
        Ok(d)
    }
}
