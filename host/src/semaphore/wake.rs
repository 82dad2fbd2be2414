//! A release wakes the waiters of every process: each semaphore has a release
//! counter (in its shared region for a shared one), bumped by every step that
//! can hand a permit to a waiter; a waiter reads it before it looks at its
//! ticket and sleeps only while it is unchanged. On Linux the sleep is a futex
//! wait on the counter's address, not private to the process (so a release in
//! another process wakes it); elsewhere, and as a safety net everywhere, every
//! sleep is bounded, so a wake-up that never comes (a region whose counter
//! another process overwrote) costs at most that bound.
//!
//! Why no wake-up is lost: the waiter reads the counter (acquire) before it
//! looks at its ticket; the releaser hands the permit over, then bumps the
//! counter (release) and wakes. If the waiter read the bumped value, the
//! hand-over is visible to its look; if it read the value before the bump, the
//! futex wait finds the counter changed and returns at once, or is asleep when
//! the wake comes.

use core::time::Duration;

use crate::sync::AtomicU32;

/// Sleep while `word` holds `seen`, at most `timeout`; returns at once if it
/// holds another value. Whatever the word holds, this returns within
/// `timeout` (a futex wait always has one). Returns false where there is no
/// futex, having slept nothing: the caller naps its own way.
#[cfg(target_os = "linux")]
#[allow(
    clippy::unnecessary_fallible_conversions,
    reason = "`c_long` is 32 bits on some Linux targets"
)]
pub(super) fn wait(word: &AtomicU32, seen: u32, timeout: Duration) -> bool {
    let ts = libc::timespec {
        tv_sec: libc::time_t::try_from(timeout.as_secs()).unwrap_or(libc::time_t::MAX),
        // Below 10⁹: fits every `c_long`.
        tv_nsec: libc::c_long::try_from(timeout.subsec_nanos()).unwrap_or(0),
    };
    // SAFETY: the address is that of a live, aligned `u32` (the atomic's) for
    // the whole call; FUTEX_WAIT only reads it, compares it with `seen` and
    // sleeps at most `ts` (a relative timeout); the other arguments are unused
    // by FUTEX_WAIT. Not FUTEX_PRIVATE_FLAG: the word may be in memory shared
    // with other processes. Any error (EAGAIN: the value changed, EINTR,
    // ETIMEDOUT) just ends the wait: the caller looks again.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            seen,
            &raw const ts,
            core::ptr::null::<u32>(),
            0u32,
        );
    }
    true
}

#[cfg(not(target_os = "linux"))]
pub(super) fn wait(_word: &AtomicU32, _seen: u32, _timeout: Duration) -> bool {
    false
}

/// Bump `word` and wake every thread of every process sleeping on it (each
/// looks at its own ticket; only the granted one goes on).
pub(super) fn wake_all(word: &AtomicU32) {
    word.fetch_add(1, core::sync::atomic::Ordering::Release);
    #[cfg(target_os = "linux")]
    // SAFETY: as in `wait`: the live, aligned address of the atomic; FUTEX_WAKE
    // only wakes sleepers on that address (of any process: not private) and
    // reads nothing else; a failure wakes nobody, which the waiters' bounded
    // sleep covers.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE,
            i32::MAX,
            core::ptr::null::<libc::timespec>(),
            core::ptr::null::<u32>(),
            0u32,
        );
    }
}
