//! What a process gives back when its interpreter ends (DESIGN §8: a handle
//! whose thread or process ends normally gives back what it held).
//!
//! A permit object gives itself back when it is dropped, which a thread's end
//! does for its frames, its `threading.local`s and its context (the `with`
//! stacks), and the interpreter's finalization for what is left. What is never
//! dropped is a permit held by a daemon thread stopped mid-call (the
//! decorators' permits live on that thread's stack) or by an object that
//! outlives the interpreter. So every shared breaker and bulkhead this process
//! makes is remembered here, and [`give_back_at_exit`], registered with
//! `atexit`, gives back what this process still holds of each.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use pyo3::prelude::*;

/// A shared structure that can give back what this process holds of it.
pub trait GiveBack: Send + Sync {
    /// Give back (a breaker's permits as ignored; a bulkhead's permits and
    /// places in the queue) everything this process holds.
    fn give_back(&self, py: Python<'_>);
}

/// The shared structures this process made: one entry per structure made
/// (never touched on the hot path), pruned as they go.
static SHARED: Mutex<Vec<Weak<dyn GiveBack>>> = Mutex::new(Vec::new());

/// Set when [`give_back_at_exit`] starts; never cleared.
static EXITING: AtomicBool = AtomicBool::new(false);

/// Whether the interpreter is ending (its `atexit` handlers run). Only daemon
/// threads are left then, and one that takes the GIL again is ended by
/// `pthread_exit`, whose forced unwind through this library's frames would
/// crash the process: a waiter that sees this flag sleeps for good instead.
pub fn exiting() -> bool {
    EXITING.load(Ordering::Acquire)
}

/// Remember `shared` for [`give_back_at_exit`].
pub fn remember(shared: &Arc<impl GiveBack + 'static>) {
    let weak: Weak<dyn GiveBack> = Arc::downgrade(shared) as Weak<dyn GiveBack>;
    let mut all = SHARED.lock().unwrap_or_else(PoisonError::into_inner);
    all.retain(|w| w.strong_count() > 0);
    all.push(weak);
}

/// Registered with `atexit`, which runs once the interpreter has joined its
/// non-daemon threads: what this process still holds then belongs to a
/// daemon thread stopped mid-call or to an object that outlives the
/// interpreter, and nothing will give it back. A holder that records or
/// releases after all is refused and counts nothing. The tables' owner words
/// name the process, so a `fork` child gives back only its own.
#[pyfunction]
pub fn give_back_at_exit(py: Python<'_>) {
    // Before any give-back: a waiter it grants or cancels must not wake.
    EXITING.store(true, Ordering::Release);
    let alive: Vec<_> = SHARED
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .filter_map(Weak::upgrade)
        .collect();
    for shared in alive {
        shared.give_back(py);
    }
}
