//! [`SemCore`]: one bulkhead's semaphore and waiter registry, shared
//! (`Arc`) by its Python object, permits, tickets and decorated functions.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use seawall_core::{Corrupt, Priority, RejectReason, TicketState};
use seawall_host::semaphore::{
    AcquireError, Acquired, Cancelled, GaveUp, Permit, Polled, ReleaseWaiter,
    SEMAPHORE_HOLDER_SLOTS, Semaphore, Ticket,
};

use super::waiters::{Parker, Waiters, Wake};
use crate::errors;

/// How long a blocked thread sleeps at most before it looks at Python signals
/// (so Ctrl-C interrupts a wait) and at its ticket again.
const SIGNAL_CHECK: Duration = Duration::from_millis(50);

static GRANT: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static DEADLINE_LEFT: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// `timeout`, cut to what is left of the caller's current deadline
/// (`seawall.current_deadline()`, e.g. a request's), so a queued wait never
/// outlasts the budget of the request it serves. A lookup that fails leaves
/// the timeout as it was.
fn within_current_deadline(py: Python<'_>, timeout: Option<Duration>) -> Option<Duration> {
    let left = DEADLINE_LEFT
        .import(py, "seawall._deadline", "remaining_ns")
        .and_then(PyAnyMethods::call0)
        .and_then(|v| v.extract::<Option<u64>>())
        .ok()
        .flatten()
        .map(Duration::from_nanos);
    match (timeout, left) {
        (Some(t), Some(l)) => Some(t.min(l)),
        (t, l) => t.or(l),
    }
}

/// Where a ticket stands, as a look finds it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Look {
    Waiting,
    /// Granted: the owner's look took the permit (a waker's only saw it).
    Granted,
    /// Not in the queue: cancelled, or (shared) taken by a reclaim that believed
    /// this process dead. Nothing is held.
    Gone,
}

/// What an acquire that may wait got.
pub enum Got {
    /// A permit is held: its id (0 for a local bulkhead).
    Admitted(u64),
    /// Waiting with this ticket.
    Queued(u64),
}

/// One bulkhead; shared (`Arc`) by its Python object, permits and decorated
/// functions.
pub struct SemCore {
    pub(super) sem: Semaphore,
    waiters: Waiters,
    pub(super) name: Option<String>,
    /// Never wake sleepers, so waiting relies on re-polling alone: always for a
    /// shared bulkhead (a release in another process wakes nobody here), and a
    /// test hook for a local one.
    pub(super) poll_only: bool,
    /// How often a waiter re-polls its ticket: `None` while every release that
    /// can grant it happens in this process (and wakes it).
    pub(super) poll_interval: Option<Duration>,
    /// Whether a rejection hook is set (checked on each refusal, without a lock).
    hooked: AtomicBool,
    /// `rejected(error)`: told of each refusal before it is raised.
    hook: Mutex<Option<Py<PyAny>>>,
}

impl SemCore {
    pub(super) fn new(
        sem: Semaphore,
        name: Option<String>,
        poll_only: bool,
        poll_interval: Option<Duration>,
    ) -> Self {
        Self {
            sem,
            waiters: Waiters::default(),
            name,
            poll_only,
            poll_interval,
            hooked: AtomicBool::new(false),
            hook: Mutex::new(None),
        }
    }

    /// Set (or clear) the rejection hook.
    pub(super) fn set_hook(&self, hook: Option<Py<PyAny>>) {
        let on = hook.is_some();
        *self.hook.lock().unwrap_or_else(PoisonError::into_inner) = hook;
        self.hooked.store(on, Ordering::Release);
    }

    /// `err`, a `BulkheadFullError` about to be raised, after the rejection hook
    /// heard of it. The hook (the Python side's dispatcher) logs its listeners'
    /// exceptions itself; what it raises that is not an `Exception`
    /// (`KeyboardInterrupt`) is the caller's own and raised instead: nothing is
    /// held by a refused call.
    pub(super) fn refused(&self, py: Python<'_>, err: PyErr) -> PyErr {
        if !self.hooked.load(Ordering::Acquire) {
            return err;
        }
        let hook = self
            .hook
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .map(|h| h.clone_ref(py));
        if let Some(hook) = hook
            && let Err(e) = hook.call1(py, (err.value(py),))
        {
            if !e.is_instance_of::<PyException>(py) {
                return e;
            }
            e.write_unraisable(py, Some(hook.bind(py)));
        }
        err
    }

    /// Take a permit now, or (if `wait` and there is room) a ticket; a refusal is
    /// `BulkheadFullError`.
    pub fn enter(&self, py: Python<'_>, p: Priority, wait: bool) -> PyResult<Got> {
        let got = self
            .sem
            .acquire_checked(p, wait)
            .map_err(|Corrupt| self.corrupt(py))?;
        match got {
            Ok(Acquired::Admitted(permit)) => Ok(Got::Admitted(permit.id)),
            Ok(Acquired::Queued(t)) => Ok(Got::Queued(t.id)),
            Err(AcquireError::PermitsExhausted) => Err(errors::seawall(
                py,
                &format!(
                    "shared bulkhead {:?}: no free slot in its holder table of {SEMAPHORE_HOLDER_SLOTS} (only scans racing many others can miss one); nothing is held, try again",
                    self.name.as_deref().unwrap_or(""),
                ),
            )),
            Err(AcquireError::Rejected(r)) => {
                let reason = match r.reason {
                    RejectReason::Shed => "shed",
                    RejectReason::Full => "full",
                };
                Err(self.refused(
                    py,
                    errors::bulkhead_full(py, self.name.as_deref(), reason, r.active, r.queued),
                ))
            }
        }
    }

    /// Give permit `id` back and wake whoever it was handed to.
    pub fn release(&self, py: Python<'_>, id: u64) {
        // An error means a reclaim already gave this permit back (it believed
        // this process dead): there is nothing left to return.
        if self.sem.release(Permit { id }).is_ok() {
            self.wake_granted(py);
        }
    }

    /// A waiter gives up: leave the queue (a permit granted in the same instant,
    /// or already taken by its owner's look, goes on to the next waiter, who is
    /// woken) and forget its registration. Called once per ticket, by its
    /// owner, and never for a ticket whose permit was handed to a
    /// `BulkheadPermit`.
    pub fn abandon(&self, py: Python<'_>, t: u64) {
        self.waiters.unregister(t);
        match self.sem.cancel(Ticket { id: t }) {
            Ok(Cancelled::PassedOn) => self.wake_granted(py),
            Ok(Cancelled::Cancelled) => {}
            // Not waiting any more: its owner's look took the grant (the permit
            // has the ticket's id), which only that owner could, and it gives up
            // once; or, shared, a reclaim took the ticket (then this release
            // finds nothing either).
            Err(_) => self.release(py, t),
        }
    }

    /// Where ticket `t` stands, taking nothing: a waker's look, which must not
    /// take a grant meant for another thread.
    fn peek(&self, t: u64) -> Look {
        match self.sem.peek(Ticket { id: t }) {
            TicketState::Waiting => Look::Waiting,
            TicketState::Granted => Look::Granted,
            TicketState::Cancelled | TicketState::Unknown => Look::Gone,
        }
    }

    /// The owner's look at ticket `t`: a grant found is taken (the owner holds
    /// the permit with the ticket's id from now on, until it is admitted or
    /// abandoned), so it is reported once.
    pub(super) fn take_if_granted(&self, t: u64) -> Look {
        match self.sem.poll(Ticket { id: t }) {
            Ok(Polled::Waiting) => Look::Waiting,
            Ok(Polled::Granted(_)) => Look::Granted,
            Err(_) => Look::Gone,
        }
    }

    /// The owner of ticket `t` looks at it: `true` once granted (it then holds
    /// the permit), an error if the ticket is gone.
    pub(super) fn look(&self, py: Python<'_>, t: u64) -> PyResult<bool> {
        match self.take_if_granted(t) {
            Look::Waiting => Ok(false),
            Look::Granted => Ok(true),
            Look::Gone => {
                self.waiters.unregister(t);
                Err(self.ticket_lost(py))
            }
        }
    }

    /// The permit a look took for ticket `t` goes to a `BulkheadPermit`.
    pub(super) fn admit(&self, t: u64) {
        self.waiters.unregister(t);
    }

    /// `SharedRegionError`: the region holds what the configuration never gives.
    pub(super) fn corrupt(&self, py: Python<'_>) -> PyErr {
        errors::shared_region(
            py,
            &format!(
                "shared bulkhead {:?}: its region holds values its configuration never gives (overwritten by another process?)",
                self.name.as_deref().unwrap_or("")
            ),
        )
    }

    pub(super) fn ticket_lost(&self, py: Python<'_>) -> PyErr {
        errors::seawall(
            py,
            &format!(
                "{}: this waiter's ticket left the queue without it (another process, giving back what dead processes held, believed this one dead); nothing is held",
                self.name
                    .as_deref()
                    .map_or_else(|| "bulkhead".to_owned(), |n| format!("bulkhead {n:?}"))
            ),
        )
    }

    /// Register an async waiter of ticket `t` (a no-op where waiters poll).
    pub(super) fn register_future(
        &self,
        py: Python<'_>,
        t: u64,
        event_loop: Py<PyAny>,
        future: Py<PyAny>,
    ) {
        if !self.poll_only {
            self.waiters
                .register(t, Wake::Future { event_loop, future });
            // A release between the enqueue and the registration found no
            // one to wake: look once more.
            self.wake_granted(py);
        }
    }

    /// Wake every registered waiter whose ticket has been granted.
    fn wake_granted(&self, py: Python<'_>) {
        if self.poll_only {
            return;
        }
        let ready = self.waiters.take_granted(|t| self.peek(t) == Look::Granted);
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
            self.waiters.register(t, Wake::Thread(Arc::clone(&parker)));
        }
        // Where no release can unpark this thread (a shared bulkhead: it may be
        // another process's), it sleeps on the semaphore's release counter,
        // which every release bumps while it may sleep (a futex on Linux).
        let sleeper = self.poll_only.then(|| self.sem.release_waiter());
        loop {
            // Read before the look: a release after it (in any process) changes it.
            let seen = sleeper.as_ref().map(ReleaseWaiter::count);
            if self.look(py, t)? {
                self.admit(t);
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
            py.detach(|| {
                let slept = sleeper
                    .as_ref()
                    .zip(seen)
                    .is_some_and(|(w, seen)| w.sleep(seen, nap));
                if !slept {
                    parker.park_timeout(nap);
                }
                // A daemon thread at the interpreter's exit: never take the GIL
                // again (see `crate::at_exit::exiting`); the process ends it.
                while crate::at_exit::exiting() {
                    std::thread::park();
                }
            });
            if let Err(e) = py.check_signals() {
                self.abandon(py, t);
                return Err(e);
            }
        }
    }

    pub(super) fn timed_out(&self, py: Python<'_>) -> PyErr {
        self.sem.gave_up(GaveUp::TimedOut);
        let s = self.sem.snapshot();
        let err = errors::bulkhead_full(py, self.name.as_deref(), "timeout", s.active, s.queued);
        self.refused(py, err)
    }

    /// Acquire for a blocking caller: now, or wait up to `timeout`. Returns the
    /// permit's id, to give to [`release`](Self::release).
    pub fn acquire_blocking(
        &self,
        py: Python<'_>,
        p: Priority,
        timeout: Option<Duration>,
    ) -> PyResult<u64> {
        // Asked before entering, never between queuing and waiting: Python code
        // run with a ticket queued lets an exiting interpreter stop this thread
        // with the ticket on its stack. A bulkhead without a queue never waits,
        // so its acquire pays nothing for it.
        let timeout = if self.sem.config().max_queue > 0 {
            within_current_deadline(py, timeout)
        } else {
            timeout
        };
        match self.enter(py, p, true)? {
            Got::Admitted(id) => Ok(id),
            Got::Queued(t) => self.wait(py, t, timeout).map(|()| t),
        }
    }
}

impl crate::at_exit::GiveBack for SemCore {
    /// Every permit this process still holds released and every ticket it
    /// still has cancelled; waiters of this process a release granted are woken.
    fn give_back(&self, py: Python<'_>) {
        let (permits, _) = py.detach(|| self.sem.reclaim_own());
        if permits > 0 {
            self.wake_granted(py);
        }
    }
}
