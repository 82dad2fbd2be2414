//! Who holds a slot of the permit table or the semaphore's holder table, and
//! whether that holder is gone: the part of reclaim both tables share.
//!
//! Each slot word names, next to its state, the process that made its last move
//! (its pid), written by the very CAS that made it: a slot is never held, or in
//! the middle of a step, without naming its process (DESIGN §8, "Death at any
//! instruction"). Pids are only meaningful within one pid namespace: reclaim
//! only where every process sharing the table sees the same pids.

/// Bits of a pid in a slot word (Linux pids are below 2²²).
pub(crate) const PID_BITS: u32 = 22;
pub(crate) const PID_MASK: u32 = (1 << PID_BITS) - 1;

/// This process's id, cached: `getpid` is a system call and claims are the hot
/// path. A `fork` child clears the cache (an atfork handler), so it never
/// claims under its parent's pid.
#[cfg(not(loom))]
pub(crate) mod pid {
    use std::sync::Once;
    use std::sync::atomic::{AtomicU32, Ordering};

    static PID: AtomicU32 = AtomicU32::new(0);
    static HANDLER: Once = Once::new();

    extern "C" fn forget_in_child() {
        PID.store(0, Ordering::Relaxed);
    }

    pub(crate) fn current() -> u32 {
        let p = PID.load(Ordering::Relaxed);
        if p != 0 {
            return p;
        }
        HANDLER.call_once(|| {
            // SAFETY: registers a handler that only stores to an atomic, which is
            // async-signal-safe as a fork child handler must be.
            unsafe { libc::pthread_atfork(None, None, Some(forget_in_child)) };
        });
        let p = std::process::id();
        PID.store(p, Ordering::Relaxed);
        p
    }

    /// Whether process `pid` still runs: it exists (`kill(pid, 0)`; a process of
    /// another user exists too) and, on Linux, has not already exited.
    pub(crate) fn alive(pid: u32) -> bool {
        let Ok(p) = libc::pid_t::try_from(pid) else {
            return true;
        };
        // SAFETY: signal 0 sends nothing; it only asks whether `pid` exists.
        let rc = unsafe { libc::kill(p, 0) };
        let exists = rc == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH);
        exists && !exited(pid)
    }

    /// Linux: whether `pid` has exited but its parent has not reaped it yet
    /// (state `Z` zombie or `X` dead in `/proc/<pid>/stat`). `kill(pid, 0)` still
    /// finds such a process, yet it will never give back what it holds. An
    /// unreadable `/proc` (not mounted, `hidepid`) leaves the answer to `kill`.
    #[cfg(target_os = "linux")]
    fn exited(pid: u32) -> bool {
        let Ok(stat) = std::fs::read(format!("/proc/{pid}/stat")) else {
            return false;
        };
        // "pid (comm) state ...": comm may hold ')' and spaces, so the state is
        // the byte after the last ')' and its space.
        stat.iter()
            .rposition(|&b| b == b')')
            .and_then(|close| stat.get(close + 2))
            .is_some_and(|&state| state == b'Z' || state == b'X')
    }

    /// Elsewhere `kill(pid, 0)` alone decides.
    #[cfg(not(target_os = "linux"))]
    const fn exited(_pid: u32) -> bool {
        false
    }
}

/// Under loom the models say which pid each of their threads claims as (a
/// loom thread-local: one model's threads stand for different processes).
#[cfg(loom)]
pub(crate) mod pid {
    use std::cell::Cell;

    loom::thread_local! {
        static PID: Cell<u32> = Cell::new(1);
    }

    pub(crate) fn current() -> u32 {
        PID.with(Cell::get)
    }

    pub(super) fn set(pid: u32) {
        PID.with(|p| p.set(pid));
    }
}

/// Loom models only: the pid the next claims of this thread store as their owner.
#[cfg(loom)]
pub fn set_claiming_pid(pid: u32) {
    pid::set(pid);
}

/// Where a process may be killed between two steps of a protocol (every step
/// is one atomic operation): nowhere to stop outside the loom models, where a
/// thread told to die after `n` steps stops at its `n + 1`-th kill point and at
/// every one after it, as a killed process would.
#[cfg(not(loom))]
pub(crate) mod kill {
    #[inline]
    pub(crate) const fn here() -> bool {
        false
    }
}

/// Under loom the core keeps the one counter, so a model's process may die at
/// a host step or inside the core's own multi-step calls alike.
#[cfg(loom)]
pub(crate) mod kill {
    pub(crate) use seawall_core::kill::{after, dead, here};
}

/// Loom models only: this thread's process is killed after `steps` more kill
/// points (`None`: never).
#[cfg(loom)]
pub fn die_after(steps: Option<u32>) {
    kill::after(steps);
}

/// Loom models only: whether this thread's process was killed; it then does
/// nothing more.
#[cfg(loom)]
#[must_use]
pub fn killed() -> bool {
    kill::dead()
}

/// Return (`$ret`) here if the process dies here (loom models only).
macro_rules! kill_point {
    () => {
        if crate::owner::kill::here() {
            return;
        }
    };
    ($ret:expr) => {
        if crate::owner::kill::here() {
            return $ret;
        }
    };
}
pub(crate) use kill_point;

/// Where this thread looks for a free slot next: a hint only (any start is
/// correct), spreading threads and processes over the table. One cursor serves
/// every table of the thread (breakers' permits, semaphores' holders), so it is
/// taken modulo the table's size.
#[cfg(not(loom))]
pub(crate) mod cursor {
    use core::cell::Cell;

    thread_local! {
        static CURSOR: Cell<Option<usize>> = const { Cell::new(None) };
    }

    pub(crate) fn get(n: usize) -> usize {
        CURSOR
            .with(Cell::get)
            .map_or_else(|| fresh(0, n), |c| c % n)
    }

    pub(crate) fn set(next: usize) {
        CURSOR.with(|c| c.set(Some(next)));
    }

    /// A start index that differs between threads and processes.
    pub(crate) fn fresh(hint: u64, n: usize) -> usize {
        let here = CURSOR.with(|c| core::ptr::from_ref(c) as u64);
        let pid = u64::from(std::process::id()) << 32;
        (seawall_core::mix64(here ^ hint ^ pid) as usize) % n
    }
}

/// Under loom every execution must be the same function of the schedule: start at 0.
#[cfg(loom)]
pub(crate) mod cursor {
    pub(crate) fn get(_: usize) -> usize {
        0
    }
    pub(crate) fn set(_: usize) {}
    pub(crate) fn fresh(_: u64, _: usize) -> usize {
        0
    }
}
