//! The registry of a bulkhead's sleeping waiters: who to wake when a release or
//! a cancel grants their ticket.

use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

use pyo3::prelude::*;

/// A sleeping thread's wake-up flag.
#[derive(Default)]
pub(super) struct Parker {
    woken: Mutex<bool>,
    cond: Condvar,
}

impl Parker {
    pub(super) fn park_timeout(&self, t: Duration) {
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

    pub(super) fn unpark(&self) {
        *self.woken.lock().unwrap_or_else(PoisonError::into_inner) = true;
        self.cond.notify_one();
    }
}

/// How a waiter is woken.
pub(super) enum Wake {
    Thread(Arc<Parker>),
    Future {
        event_loop: Py<PyAny>,
        future: Py<PyAny>,
    },
}

pub(super) struct Sleeper {
    pub(super) ticket: u64,
    pub(super) wake: Wake,
}

/// Waiters asleep on their tickets.
#[derive(Default)]
pub(super) struct Waiters {
    list: Mutex<Vec<Sleeper>>,
}

impl Waiters {
    pub(super) fn register(&self, ticket: u64, wake: Wake) {
        self.list
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Sleeper { ticket, wake });
    }

    pub(super) fn unregister(&self, ticket: u64) {
        self.list
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|s| s.ticket != ticket);
    }

    /// Remove and return the sleepers whose ticket `granted` says is granted.
    pub(super) fn take_granted(&self, granted: impl Fn(u64) -> bool) -> Vec<Sleeper> {
        let mut list = self.list.lock().unwrap_or_else(PoisonError::into_inner);
        let mut ready = Vec::new();
        let mut i = 0;
        while i < list.len() {
            if granted(list[i].ticket) {
                ready.push(list.swap_remove(i));
            } else {
                i += 1;
            }
        }
        ready
    }
}
