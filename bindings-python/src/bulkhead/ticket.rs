//! `BulkheadTicket`: a place in a bulkhead's queue, polled, taken or cancelled
//! once.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use pyo3::prelude::*;

use super::permit::BulkheadPermit;
use super::semcore::{Look, SemCore};

/// Where a ticket object stands.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Held {
    /// In the queue, as far as this object knows.
    Waiting,
    /// Granted, and taken by this object's look: its permit is held here until
    /// `take` or `cancel`.
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
    pub(super) core: Arc<SemCore>,
    pub(super) ticket: u64,
    /// Looks are serialised: a look that finds the ticket granted takes the
    /// permit, so two threads must not both look.
    pub(super) state: Mutex<Held>,
    /// The process that queued it: a forked child dropping its copy leaves the
    /// parent's place in the queue alone.
    pub(super) owner: u32,
}

impl BulkheadTicket {
    /// Look at the ticket if it is still waiting; where it stands now (the lock
    /// held, for `take`).
    fn refresh(&self) -> MutexGuard<'_, Held> {
        let mut st = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if *st == Held::Waiting {
            *st = match self.core.take_if_granted(self.ticket) {
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
        self.core.admit(self.ticket);
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
        if seawall_host::process_id() == self.owner && self.finish() {
            Python::attach(|py| self.core.abandon(py, self.ticket));
        }
    }
}
