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
//!
//! A bulkhead shared by every process of the host (`shared="name"`) is the
//! semaphore region of seawall-ffi (`seawall_host::semaphore::Semaphore`): its
//! permits and tickets are single-use ids in a holder table that records the
//! owning process, so `reclaim_abandoned` can give back what a killed worker held.
//! A release in another process cannot wake anyone here, so waiters of a shared
//! bulkhead re-poll their own ticket every few milliseconds instead of being
//! woken; only the waiter polls its ticket, because a poll that finds it granted
//! takes the permit (the permit's id is the ticket's).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use seawall_core::{
    CancelOutcome, Priority, PriorityShares, RawAdmission, RejectReason, Semaphore,
    SemaphoreConfig, SemaphoreRejected, SemaphoreSnapshot, Ticket, TicketState,
};
use seawall_host::semaphore::{
    AcquireError, Acquired, Permit as SharedPermit, Polled, SEMAPHORE_MAX_CONCURRENT,
    Semaphore as SharedSemaphore, Ticket as SharedTicket,
};
use seawall_host::shared::{OpenOptions, RegionError};

use crate::errors;
use crate::time::{count, ns_to_secs, percent, secs_to_ns};

/// Ring slots of a bulkhead's wait queue: the most waiters `max_queue` may allow.
pub const QUEUE_CAPACITY: usize = 1024;

/// Most permits of a shared bulkhead (its holder table has a slot for each).
pub const SHARED_MAX_CONCURRENT: usize = SEMAPHORE_MAX_CONCURRENT;

/// How often a waiter of a shared bulkhead looks at its ticket: a grant made by
/// another process wakes nobody here.
const SHARED_POLL: Duration = Duration::from_millis(2);

/// How long a blocked thread sleeps at most before it looks at Python signals
/// (so Ctrl-C interrupts a wait) and at its ticket again.
const SIGNAL_CHECK: Duration = Duration::from_millis(50);

/// Where the semaphore lives: the core semaphore in this process, or the
/// semaphore region shared by every process of the host.
///
/// Permits and tickets are `u64` ids: a local permit needs none (0) and a local
/// ticket is the core's; a shared permit or ticket is its holder-table id, and a
/// granted ticket becomes the permit with the same id.
enum Store {
    Local(Box<Semaphore<QUEUE_CAPACITY>>),
    Shared(SharedSemaphore),
}

/// Why an acquire got neither a permit nor a ticket.
enum Refused {
    Rejected(SemaphoreRejected),
    /// A shared bulkhead's holder table had no free slot (see
    /// `seawall_host::semaphore::AcquireError::PermitsExhausted`); nothing is held.
    Exhausted,
}

/// Where a ticket stands, as its owner sees it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Look {
    Waiting,
    /// Granted: the owner holds the permit now (for a shared bulkhead this look
    /// took it, so it is reported once).
    Granted,
    /// Not in the queue: cancelled, or (shared) taken by a reclaim that believed
    /// this process dead. Nothing is held.
    Gone,
}

impl Store {
    fn acquire(&self, p: Priority, wait: bool) -> Result<Got, Refused> {
        match self {
            Self::Local(s) => match s.acquire_raw(p, wait) {
                Ok(RawAdmission::Admitted) => Ok(Got::Admitted(0)),
                Ok(RawAdmission::Queued(t)) => Ok(Got::Queued(u64::from(t.id))),
                Err(r) => Err(Refused::Rejected(r)),
            },
            Self::Shared(s) => {
                let got = if wait {
                    s.acquire_or_enqueue(p)
                } else {
                    s.try_acquire(p).map(Acquired::Admitted)
                };
                match got {
                    Ok(Acquired::Admitted(permit)) => Ok(Got::Admitted(permit.id)),
                    Ok(Acquired::Queued(t)) => Ok(Got::Queued(t.id)),
                    Err(AcquireError::Rejected(r)) => Err(Refused::Rejected(r)),
                    Err(AcquireError::PermitsExhausted) => Err(Refused::Exhausted),
                }
            }
        }
    }

    /// Give permit `id` back; `true` if a local waiter may have been handed it.
    fn release(&self, id: u64) -> bool {
        match self {
            Self::Local(s) => s.release(),
            Self::Shared(s) => {
                // An error means a reclaim already gave this permit back (it
                // believed this process dead): there is nothing left to return.
                let _ = s.release(SharedPermit { id });
                false
            }
        }
    }

    fn look(&self, t: u64) -> Look {
        match self {
            Self::Local(s) => {
                let Ok(id) = u32::try_from(t) else {
                    return Look::Gone;
                };
                // A peek: the grant is acknowledged by `take` (or passed on
                // by a cancel), never by a look that a waker may make.
                match s.peek(Ticket { id }) {
                    TicketState::Waiting => Look::Waiting,
                    TicketState::Granted => Look::Granted,
                    TicketState::Cancelled | TicketState::Unknown => Look::Gone,
                }
            }
            Self::Shared(s) => match s.poll(SharedTicket { id: t }) {
                Ok(Polled::Waiting) => Look::Waiting,
                Ok(Polled::Granted(_)) => Look::Granted,
                Err(_) => Look::Gone,
            },
        }
    }

    /// The owner takes the grant a look found: a local ticket's grant is
    /// acknowledged now (a local look only peeks, so a waker's look takes
    /// nothing and a cancel before this passes the permit on); a shared
    /// ticket's look took it already.
    fn take(&self, t: u64) {
        if let Self::Local(s) = self
            && let Ok(id) = u32::try_from(t)
        {
            let taken = s.poll(Ticket { id });
            debug_assert_eq!(taken, TicketState::Granted, "only the owner takes");
        }
    }

    /// Ticket `t` leaves the queue; a permit granted to it meanwhile is passed on.
    /// `true` if a local waiter may have been handed it.
    fn cancel(&self, t: u64) -> bool {
        match self {
            Self::Local(s) => {
                u32::try_from(t).is_ok_and(|id| s.cancel(Ticket { id }) == CancelOutcome::PassedOn)
            }
            Self::Shared(s) => {
                if s.cancel(SharedTicket { id: t }).is_err() {
                    // Not waiting any more: a look of its owner took the grant (the
                    // permit has the ticket's id and goes back now), or a reclaim
                    // took it (then this release finds nothing either).
                    let _ = s.release(SharedPermit { id: t });
                }
                false
            }
        }
    }

    fn snapshot(&self) -> SemaphoreSnapshot {
        match self {
            Self::Local(s) => s.snapshot(),
            Self::Shared(s) => s.snapshot(),
        }
    }

    fn config(&self) -> SemaphoreConfig {
        match self {
            Self::Local(s) => *s.config(),
            Self::Shared(s) => s.config(),
        }
    }

    fn limit(&self, p: Priority) -> u32 {
        match self {
            Self::Local(s) => s.limit(p),
            Self::Shared(s) => s.limit(p),
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
    ticket: u64,
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
    /// Never wake sleepers, so waiting relies on re-polling alone: always for a
    /// shared bulkhead (whose grants are taken by the polling waiter itself), and
    /// a test hook for a local one.
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
    /// A permit is held: its id (0 for a local bulkhead).
    Admitted(u64),
    /// Waiting with this ticket.
    Queued(u64),
}

impl SemCore {
    /// Take a permit now, or (if `wait` and there is room) a ticket; a refusal is
    /// `BulkheadFullError`.
    pub fn enter(&self, py: Python<'_>, p: Priority, wait: bool) -> PyResult<Got> {
        match self.sem.acquire(p, wait) {
            Ok(Got::Admitted(id)) => {
                self.counters.admitted.fetch_add(1, Ordering::Relaxed);
                Ok(Got::Admitted(id))
            }
            Ok(queued) => Ok(queued),
            Err(Refused::Exhausted) => Err(errors::seawall(
                py,
                &format!(
                    "shared bulkhead {:?}: no free slot in its holder table of {} (only scans racing many others can miss one); nothing is held, try again",
                    self.name.as_deref().unwrap_or(""),
                    seawall_host::semaphore::SEMAPHORE_HOLDER_SLOTS
                ),
            )),
            Err(Refused::Rejected(r)) => {
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

    /// Give permit `id` back and wake whoever it was handed to.
    pub fn release(&self, py: Python<'_>, id: u64) {
        if self.sem.release(id) {
            self.wake_granted(py);
        }
    }

    /// A waiter gives up: leave the queue (a permit granted in the same instant,
    /// or already taken by its own look, goes on to the next waiter, who is
    /// woken) and forget its registration. Never called for a ticket whose
    /// permit was handed to a `BulkheadPermit`.
    pub fn abandon(&self, py: Python<'_>, t: u64) {
        self.unregister(t);
        if self.sem.cancel(t) {
            self.wake_granted(py);
        }
    }

    /// Whether ticket `t` is granted, without taking anything (local bulkheads:
    /// the waker's check; the waiter then looks for itself).
    fn granted(&self, t: u64) -> bool {
        self.sem.look(t) == Look::Granted
    }

    /// The owner of ticket `t` looks at it: `true` once granted (it then holds
    /// the permit with the ticket's id), an error if the ticket is gone.
    fn look(&self, py: Python<'_>, t: u64) -> PyResult<bool> {
        match self.sem.look(t) {
            Look::Waiting => Ok(false),
            Look::Granted => Ok(true),
            Look::Gone => {
                self.unregister(t);
                Err(self.ticket_lost(py))
            }
        }
    }

    fn ticket_lost(&self, py: Python<'_>) -> PyErr {
        errors::seawall(
            py,
            &format!(
                "{}: this waiter's ticket left the queue without it (a reclaim_abandoned() in another process believed this one dead); nothing is held",
                self.name
                    .as_deref()
                    .map_or_else(|| "bulkhead".to_owned(), |n| format!("bulkhead {n:?}"))
            ),
        )
    }

    fn register(&self, ticket: u64, wake: Wake) {
        self.sleepers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Sleeper { ticket, wake });
    }

    fn unregister(&self, ticket: u64) {
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
                if self.granted(list[i].ticket) {
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
                        self.abandon(py, s.ticket);
                    }
                }
            }
        }
    }

    /// Block this thread (GIL released) until ticket `t` is granted, `timeout`
    /// passes (`BulkheadFullError`, reason `timeout`) or a Python signal handler
    /// raises (e.g. `KeyboardInterrupt`): in every case but the grant the ticket
    /// is cancelled, so no permit is held or lost.
    pub fn wait(&self, py: Python<'_>, t: u64, timeout: Option<Duration>) -> PyResult<()> {
        let deadline = timeout.and_then(|d| Instant::now().checked_add(d));
        let parker = Arc::new(Parker::default());
        if !self.poll_only {
            self.register(t, Wake::Thread(Arc::clone(&parker)));
        }
        loop {
            if self.look(py, t)? {
                self.unregister(t);
                self.sem.take(t);
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

    /// Acquire for a blocking caller: now, or wait up to `timeout`. Returns the
    /// permit's id, to give to [`release`](Self::release).
    pub fn acquire_blocking(
        &self,
        py: Python<'_>,
        p: Priority,
        timeout: Option<Duration>,
    ) -> PyResult<u64> {
        match self.enter(py, p, true)? {
            Got::Admitted(id) => Ok(id),
            Got::Queued(t) => self.wait(py, t, timeout).map(|()| t),
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
        // A shared bulkhead's holder table has a slot for every permit.
        let most = if shared.is_some() {
            SHARED_MAX_CONCURRENT as u32
        } else {
            u32::MAX
        };
        let config = SemaphoreConfig {
            max_concurrent: count(py, "max_concurrent", max_concurrent, 1, most)?,
            max_queue: count(py, "max_queue", max_queue, 0, QUEUE_CAPACITY as u32)?,
            shares,
        };
        let mut poll_interval = opt_timeout(py, "_poll_interval", _poll_interval)?;
        let sem = match shared {
            Some(region) => {
                // Attaching may wait for another process that is creating the region.
                let opened = py.detach(|| {
                    SharedSemaphore::open_shared(&region, &config, &OpenOptions::default())
                });
                poll_interval = poll_interval.or(Some(SHARED_POLL));
                Store::Shared(opened.map_err(|e| region_error(py, &region, &config, e))?)
            }
            None => Store::Local(Box::new(
                Semaphore::new(config).map_err(|e| errors::from_config(py, e))?,
            )),
        };
        let poll_only = _poll_only || matches!(sem, Store::Shared(_));
        if poll_only {
            // With no wake-ups, waiters must look again on their own.
            poll_interval = poll_interval.or(Some(SHARED_POLL));
        }
        Ok(Self {
            core: Arc::new(SemCore {
                sem,
                sleepers: Mutex::new(Vec::new()),
                name,
                counters: Counters::default(),
                poll_only,
                poll_interval,
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
            Got::Admitted(id) => Py::new(py, BulkheadPermit::new(&self.core, id))?.into_any(),
            Got::Queued(t) => Py::new(
                py,
                BulkheadTicket {
                    core: Arc::clone(&self.core),
                    ticket: t,
                    state: Mutex::new(Held::Waiting),
                    owner: std::process::id(),
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
                if !self.core.poll_only {
                    self.core.register(t, Wake::Future { event_loop, future });
                    // A release between the enqueue and the registration found no
                    // one to wake: look once more.
                    self.core.wake_granted(py);
                }
                Ok(t.into_pyobject(py)?.into_any().unbind())
            }
        }
    }

    /// Whether ticket `ticket` has been granted. `True` once: the caller then
    /// holds the permit and must `adopt` it (for a shared bulkhead this look took
    /// it). Raises `SeawallError` if the ticket is gone (reclaimed).
    fn is_granted(&self, py: Python<'_>, ticket: u64) -> PyResult<bool> {
        self.core.look(py, ticket)
    }

    /// The permit object for granted ticket `ticket` (after `acquire_async`).
    fn adopt(&self, ticket: u64) -> BulkheadPermit {
        self.core.unregister(ticket);
        self.core.sem.take(ticket);
        self.core.counters.admitted.fetch_add(1, Ordering::Relaxed);
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

    /// Whether the bulkhead lives in a region shared by the host's processes.
    #[getter]
    fn shared(&self) -> bool {
        matches!(self.core.sem, Store::Shared(_))
    }

    /// Whether this process created the shared region (always true for a local
    /// bulkhead).
    #[getter]
    fn created(&self) -> bool {
        match &self.core.sem {
            Store::Shared(s) => s.created(),
            Store::Local(_) => true,
        }
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

    /// Give back the permits and cancel the tickets of processes that no longer
    /// exist (a worker killed while it held a permit or waited):
    /// `(permits, tickets)`. `(0, 0)` for a local bulkhead. Scans the holder
    /// table; a reclaimed permit goes to the oldest waiter, or to the pool.
    fn reclaim_abandoned(&self, py: Python<'_>) -> (u64, u64) {
        match &self.core.sem {
            Store::Shared(s) => py.detach(|| s.reclaim_abandoned()),
            Store::Local(_) => (0, 0),
        }
    }

    /// Remove the shared bulkhead region `name` (a missing one is fine).
    #[staticmethod]
    fn unlink_shared(py: Python<'_>, name: &str) -> PyResult<()> {
        SharedSemaphore::unlink_shared(name)
            .map_err(|e| errors::shared_region(py, &format!("shared bulkhead {name:?}: {e}")))
    }

    /// Occupancy and counters (dict).
    fn metrics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
        let (s, outstanding) = match &self.core.sem {
            Store::Local(l) => (l.snapshot(), None),
            Store::Shared(sh) => {
                let f = sh.full_snapshot();
                (
                    SemaphoreSnapshot {
                        active: f.active,
                        queued: f.queued,
                    },
                    Some((f.permits_outstanding, f.tickets_outstanding)),
                )
            }
        };
        let c = &self.core.counters;
        let d = pyo3::types::PyDict::new(py);
        d.set_item("name", self.core.name.as_deref())?;
        d.set_item("shared", outstanding.is_some())?;
        d.set_item("active", s.active)?;
        d.set_item("queued", s.queued)?;
        d.set_item("max_concurrent", self.core.sem.config().max_concurrent)?;
        d.set_item("max_queue", self.core.sem.config().max_queue)?;
        d.set_item("permits_outstanding", outstanding.map(|o| o.0))?;
        d.set_item("tickets_outstanding", outstanding.map(|o| o.1))?;
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
    /// The permit's id (0 for a local bulkhead).
    id: u64,
    released: AtomicBool,
    /// The process that acquired it: a child made by `fork()` that drops its copy
    /// must not release the parent's permit (an explicit `release()` still may).
    owner: u32,
}

impl BulkheadPermit {
    fn new(core: &Arc<SemCore>, id: u64) -> Self {
        Self {
            core: Arc::clone(core),
            id,
            released: AtomicBool::new(false),
            owner: std::process::id(),
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
        self.core.release(py, self.id);
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
            self.core.release(py, self.id);
        }
        false
    }
}

impl Drop for BulkheadPermit {
    fn drop(&mut self) {
        if std::process::id() == self.owner && !self.released.swap(true, Ordering::AcqRel) {
            Python::attach(|py| self.core.release(py, self.id));
        }
    }
}

/// Where a ticket object stands.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Held {
    /// In the queue, as far as this object knows.
    Waiting,
    /// Granted, and (for a shared bulkhead) taken by this object's look: its
    /// permit is held here until `take` or `cancel`.
    Granted,
    /// Taken or cancelled through this object.
    Done,
    /// Found out of the queue (cancelled elsewhere, or reclaimed): nothing held.
    Gone,
}

/// A place in a bulkhead's queue (from `Bulkhead.enqueue`): poll it, take its
/// permit once granted, or cancel it. Dropped untaken, it is cancelled (a permit
/// granted meanwhile is passed on).
#[pyclass(frozen, module = "seawall._native", name = "BulkheadTicket")]
pub struct BulkheadTicket {
    core: Arc<SemCore>,
    ticket: u64,
    /// Looks are serialised: a look at a shared ticket that finds it granted takes
    /// the permit, so two threads must not both look.
    state: Mutex<Held>,
    /// The process that queued it: a forked child dropping its copy leaves the
    /// parent's place in the queue alone.
    owner: u32,
}

impl BulkheadTicket {
    /// Look at the ticket if it is still waiting; where it stands now (the lock
    /// held, for `take`).
    fn refresh(&self) -> std::sync::MutexGuard<'_, Held> {
        let mut st = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if *st == Held::Waiting {
            *st = match self.core.sem.look(self.ticket) {
                Look::Waiting => Held::Waiting,
                Look::Granted => Held::Granted,
                Look::Gone => Held::Gone,
            };
        }
        st
    }

    /// Mark done; `true` if the ticket was still ours to give up (waiting, or
    /// granted and not taken).
    fn finish(&self) -> bool {
        let mut st = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let ours = matches!(*st, Held::Waiting | Held::Granted);
        if ours {
            *st = Held::Done;
        }
        ours
    }
}

#[pymethods]
impl BulkheadTicket {
    /// `waiting`, `granted`, `cancelled` (out of the queue without this object:
    /// e.g. reclaimed), or `done` once taken or cancelled through this object.
    #[getter]
    fn state(&self) -> &'static str {
        match *self.refresh() {
            Held::Waiting => "waiting",
            Held::Granted => "granted",
            Held::Gone => "cancelled",
            Held::Done => "done",
        }
    }

    /// Whether a release has handed this ticket its permit (and it is not taken).
    fn granted(&self) -> bool {
        *self.refresh() == Held::Granted
    }

    /// The permit, once granted (else `None`). Works once.
    fn take(&self) -> Option<BulkheadPermit> {
        let mut st = self.refresh();
        if *st != Held::Granted {
            return None;
        }
        *st = Held::Done;
        drop(st);
        self.core.sem.take(self.ticket);
        self.core.counters.admitted.fetch_add(1, Ordering::Relaxed);
        Some(BulkheadPermit::new(&self.core, self.ticket))
    }

    /// Leave the queue (a permit granted in the same instant, or granted and not
    /// taken, is passed on).
    fn cancel(&self, py: Python<'_>) {
        if self.finish() {
            self.core.abandon(py, self.ticket);
        }
    }

    #[getter]
    fn id(&self) -> u64 {
        self.ticket
    }
}

impl Drop for BulkheadTicket {
    fn drop(&mut self) {
        if std::process::id() == self.owner && self.finish() {
            Python::attach(|py| self.core.abandon(py, self.ticket));
        }
    }
}
