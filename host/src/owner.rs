//! Who holds a slot of the permit table or the semaphore's holder table, and
//! whether that holder is gone: the part of reclaim both tables share.
//!
//! Each slot has an owner word, `generation (10 low bits) | pid (22 bits)`, stored
//! by the claimer right after its claim CAS. A slot may be reclaimed only when its
//! owner word was stored for the slot's current generation (an older one means the
//! claimer has not stored its own yet, and is never trusted) and names a process
//! that no longer runs. Pids are only meaningful within one pid namespace: reclaim
//! only where every process sharing the table sees the same pids.

use core::sync::atomic::Ordering;

use crate::sync::AtomicU32;

/// Owner word: low 22 bits the pid (Linux pids are below 2²²), high 10 bits the
/// low bits of the generation it was stored for.
pub(crate) const PID_BITS: u32 = 22;
pub(crate) const PID_MASK: u32 = (1 << PID_BITS) - 1;

/// Generation bits an owner word keeps.
const OWNER_GENERATION_MASK: u32 = (1 << (32 - PID_BITS)) - 1;

/// The owner word of a slot claimed in `generation` by process `pid` (the
/// semaphore's holder table uses the same scheme).
pub(crate) fn owner_word(generation: u32, pid: u32) -> u32 {
    (generation << PID_BITS) | (pid & PID_MASK)
}

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

#[cfg(loom)]
pub(crate) mod kill {
    use std::cell::Cell;

    loom::thread_local! {
        static LEFT: Cell<Option<u32>> = Cell::new(None);
    }

    pub(crate) fn here() -> bool {
        LEFT.with(|left| match left.get() {
            Some(0) => true,
            Some(n) => {
                left.set(Some(n - 1));
                false
            }
            None => false,
        })
    }

    pub(crate) fn after(steps: Option<u32>) {
        LEFT.with(|left| left.set(steps));
    }

    pub(crate) fn dead() -> bool {
        LEFT.with(|left| left.get() == Some(0))
    }
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

/// Whether the slot whose current generation is `generation` and whose owner word
/// is `owner` was claimed by a process that `alive` says is gone. The caller
/// frees it with a CAS from the slot word it read before loading `owner`, so a
/// slot claimed again since then is left alone.
pub(crate) fn claimed_by_dead_process(
    owner: &AtomicU32,
    generation: u32,
    alive: impl Fn(u32) -> bool,
) -> bool {
    let o = owner.load(Ordering::Acquire);
    let pid = o & PID_MASK;
    // Invariant: the owner word counts only if it was stored for this very
    // generation; with the caller's CAS from the slot word of that generation, a
    // live claimer's slot is never taken.
    let this_generation = o >> PID_BITS == generation & OWNER_GENERATION_MASK;
    #[cfg(seawall_mutant = "reclaim_any_generation")]
    let this_generation = true; // Mutant: trust a stale owner word.
    this_generation && pid != 0 && !alive(pid)
}

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
