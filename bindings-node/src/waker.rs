//! Waking the JavaScript waiters of a shared semaphore when a release happens
//! in any process: one native thread per handle with waiters sleeps on the
//! semaphore's release counter (seawall-host's [`ReleaseWaiter`], a futex on
//! Linux) and, each time the counter moves, asks the handle's JS thread to look
//! at its tickets through a threadsafe function.
//!
//! Why a thread of its own: the JS thread cannot block, and a wait as long as
//! the queue's would hold one of libuv's four pool threads for its whole length.
//! The threadsafe function is weak (unref'd): the thread never keeps the event
//! loop alive; the JS layer keeps a timer for that while anyone waits.
//!
//! Why no grant is missed: the thread counts as a sleeper before it reads the
//! counter, then asks JS to look once (a release before it counted woke
//! nobody); after that, each look JS makes follows a read of the counter that
//! any later release changes. Calls are coalesced (one queued at a time): the
//! flag is cleared on the JS thread before JS looks, after the read that set it.
//! Every sleep is bounded by [`SHARED_WAIT_POLL`], so a stop request ends the
//! thread within that time, as does a JS thread that is gone.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use napi::Status;
use napi::bindgen_prelude::Function;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use seawall_host::semaphore::{SHARED_WAIT_POLL, Semaphore};

/// A weak threadsafe function of no arguments whose errors nobody handles.
type Wake = ThreadsafeFunction<(), (), (), Status, false, true>;

/// The running waker thread of one handle; dropping it asks the thread to end
/// (within [`SHARED_WAIT_POLL`]).
pub struct Waker {
    stop: Arc<AtomicBool>,
}

impl Drop for Waker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
    }
}

/// Whether a thread here can sleep on `sem`'s release counter: a sleep on a
/// value the counter does not hold returns at once where the OS has the wait.
pub fn available(sem: &Semaphore) -> bool {
    let w = sem.release_waiter();
    w.sleep(w.count().wrapping_add(1), Duration::ZERO)
}

/// Start a thread that calls `wake` (on its JS thread) whenever a release,
/// cancel or reclaim of any process may have granted one of `sem`'s tickets,
/// and once at the start. None where the thread cannot be made.
pub fn start(sem: &Arc<Semaphore>, wake: &Function<'_, (), ()>) -> napi::Result<Option<Waker>> {
    let pending = Arc::new(AtomicBool::new(false));
    let cleared = Arc::clone(&pending);
    let tsfn: Wake = wake
        .build_threadsafe_function::<()>()
        .weak::<true>()
        .callee_handled::<false>()
        .build_callback(move |_| {
            // Before JS looks: a change read after this clear queues another call.
            cleared.store(false, Ordering::SeqCst);
            Ok(())
        })?;
    let stop = Arc::new(AtomicBool::new(false));
    let thread_stop = Arc::clone(&stop);
    let sem = Arc::clone(sem);
    let spawned = std::thread::Builder::new()
        .name("seawall-waker".into())
        .spawn(move || watch(&sem, &tsfn, &pending, &thread_stop));
    Ok(spawned.ok().map(|_| Waker { stop }))
}

/// The thread's loop: ends when asked to, or when its JS thread is gone (the
/// call fails) or the OS has no such wait.
fn watch(sem: &Semaphore, wake: &Wake, pending: &AtomicBool, stop: &AtomicBool) {
    let sleeper = sem.release_waiter();
    let mut seen = sleeper.count();
    let call = || {
        pending.swap(true, Ordering::SeqCst)
            || wake.call((), ThreadsafeFunctionCallMode::NonBlocking) == Status::Ok
    };
    if !call() {
        return;
    }
    // An aborted function: its environment (a worker thread, say) is gone.
    while !stop.load(Ordering::Acquire) && !wake.aborted() {
        if !sleeper.sleep(seen, SHARED_WAIT_POLL) {
            return;
        }
        let now = sleeper.count();
        if now != seen {
            seen = now;
            if !call() {
                return;
            }
        }
    }
}
