//! Who holds a slot of the permit table or the semaphore's holder table, and
//! whether that holder is gone: the part of reclaim both tables share.
//!
//! Each slot word names, next to its state, the process that made its last move,
//! written by the very CAS that made it: a slot is never held, or in the middle
//! of a step, without naming its process (DESIGN §8, "Death at any
//! instruction"). A process is named by its *owner id*: its pid and a tag of
//! its start time, so that a process that later gets the same pid is not taken
//! for the one that died (DESIGN §8, "Self-healing"). Pids are only meaningful
//! within one pid namespace: reclaim only where every process sharing the table
//! sees the same pids.

/// Bits of a pid in an owner id (Linux pids are below 2²²).
pub(crate) const PID_BITS: u32 = 22;
#[cfg_attr(loom, allow(dead_code, reason = "a model's owner ids are plain pids"))]
pub(crate) const PID_MASK: u32 = (1 << PID_BITS) - 1;
/// Bits of the start-time tag above the pid: a process with a reused pid is
/// mistaken for the dead one only when its start time, in clock ticks (10 ms),
/// is the same modulo 256.
pub(crate) const TAG_BITS: u32 = 8;
/// Bits of an owner id in a slot word.
pub(crate) const OWNER_BITS: u32 = PID_BITS + TAG_BITS;
pub(crate) const OWNER_MASK: u32 = (1 << OWNER_BITS) - 1;

/// The owner id of process `pid` started at `start_ticks` (Linux: field 22 of
/// `/proc/<pid>/stat`; 0 where it cannot be read).
#[cfg_attr(loom, allow(dead_code, reason = "a model's owner ids are plain pids"))]
pub(crate) const fn owner_id(pid: u32, start_ticks: u64) -> u32 {
    (pid & PID_MASK) | ((start_ticks as u32) & ((1 << TAG_BITS) - 1)) << PID_BITS
}

/// This process's id and owner id, cached: `getpid` is a system call and
/// claims are the hot path. A `fork` child clears the cache (an atfork
/// handler), so it never claims under its parent's name.
#[cfg(not(loom))]
pub(crate) mod pid {
    use std::sync::Once;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// `pid | owner id << 32`; 0 until looked up.
    static ME: AtomicU64 = AtomicU64::new(0);
    /// This process's pid namespace; `u64::MAX` until looked up.
    static NAMESPACE: AtomicU64 = AtomicU64::new(u64::MAX);
    static HANDLER: Once = Once::new();

    extern "C" fn forget_in_child() {
        ME.store(0, Ordering::Relaxed);
        // `unshare -p -f` puts the child in a new pid namespace.
        NAMESPACE.store(u64::MAX, Ordering::Relaxed);
    }

    /// This process's pid namespace (the inode of `/proc/self/ns/pid`; 0 where
    /// it cannot be read): pids, and so owner ids, mean one process only
    /// among processes of one namespace.
    pub(crate) fn namespace() -> u64 {
        let n = NAMESPACE.load(Ordering::Relaxed);
        if n != u64::MAX {
            return n;
        }
        let _ = me(); // registers the fork handler that clears this cache
        let n = std::fs::metadata("/proc/self/ns/pid")
            .map_or(0, |m| std::os::unix::fs::MetadataExt::ino(&m));
        NAMESPACE.store(n, Ordering::Relaxed);
        n
    }

    fn me() -> u64 {
        let m = ME.load(Ordering::Relaxed);
        if m != 0 {
            return m;
        }
        HANDLER.call_once(|| {
            // SAFETY: registers a handler that only stores to an atomic, which is
            // async-signal-safe as a fork child handler must be.
            unsafe { libc::pthread_atfork(None, None, Some(forget_in_child)) };
        });
        let p = std::process::id();
        let owner = super::owner_id(p, stat(p).map_or(0, |s| s.start_ticks));
        let m = u64::from(p) | u64::from(owner) << 32;
        ME.store(m, Ordering::Relaxed);
        m
    }

    /// This process's pid.
    pub(crate) fn current() -> u32 {
        me() as u32
    }

    /// This process's owner id: what its slot words name.
    pub(crate) fn owner() -> u32 {
        (me() >> 32) as u32
    }

    /// The owner id of running process `pid`, if its start time can be read.
    #[cfg(test)]
    pub(crate) fn owner_of(pid: u32) -> Option<u32> {
        stat(pid).map(|s| super::owner_id(pid, s.start_ticks))
    }

    /// Whether the process named by owner id `owner` still runs: its pid exists
    /// (`kill(pid, 0)`; a process of another user exists too) and, on Linux, has
    /// not exited, and was started at the time the id names (else the pid was
    /// given to another process since).
    pub(crate) fn alive(owner: u32) -> bool {
        let pid = owner & super::PID_MASK;
        let Ok(p) = libc::pid_t::try_from(pid) else {
            return true;
        };
        // SAFETY: signal 0 sends nothing; it only asks whether `pid` exists.
        let rc = unsafe { libc::kill(p, 0) };
        let exists = rc == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH);
        // An unreadable `/proc` (not mounted, `hidepid`) leaves the answer to `kill`.
        exists
            && stat(pid).is_none_or(|s| !s.exited && super::owner_id(pid, s.start_ticks) == owner)
    }

    /// [`alive`] for one scan of a table, asking the OS once per owner id: a
    /// table names few processes, in many slots (a full bulkhead of 4 096
    /// permits held by 4 workers is 4 questions, not 4 096).
    pub(crate) fn alive_memo() -> impl Fn(u32) -> bool {
        let seen: std::cell::RefCell<std::collections::HashMap<u32, bool>> =
            std::cell::RefCell::default();
        move |owner| {
            if let Some(&live) = seen.borrow().get(&owner) {
                return live;
            }
            let live = alive(owner);
            seen.borrow_mut().insert(owner, live);
            live
        }
    }

    /// Whether each owner id a scan meets is gone, as [`alive_memo`] asks.
    pub(crate) fn dead_memo() -> impl FnMut(u32) -> bool {
        let alive = alive_memo();
        move |owner| !alive(owner)
    }

    /// What `/proc/<pid>/stat` says of a process.
    struct Stat {
        /// State `Z` (zombie) or `X` (dead): exited, not reaped yet. `kill(pid,
        /// 0)` still finds such a process, yet it will never give back what it
        /// holds.
        exited: bool,
        /// Field 22: when the process started, in clock ticks after boot.
        start_ticks: u64,
    }

    #[cfg(target_os = "linux")]
    fn stat(pid: u32) -> Option<Stat> {
        let stat = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
        // "pid (comm) state ...": comm may hold ')' and spaces, so the fields
        // are counted from the byte after the last ')'.
        let close = stat.iter().rposition(|&b| b == b')')?;
        let rest = std::str::from_utf8(stat.get(close + 1..)?).ok()?;
        let mut fields = rest.split_ascii_whitespace();
        let state = fields.next()?;
        // Fields 4 to 21 lie between the state (3) and the start time (22).
        let start_ticks = fields.nth(18)?.parse().ok()?;
        Some(Stat {
            exited: state == "Z" || state == "X",
            start_ticks,
        })
    }

    /// Elsewhere `kill(pid, 0)` alone decides, and owner ids are pids.
    #[cfg(not(target_os = "linux"))]
    fn stat(_pid: u32) -> Option<Stat> {
        None
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

    /// A model's processes are named by their pid alone.
    pub(crate) fn owner() -> u32 {
        current()
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

#[cfg(all(test, not(loom), target_os = "linux"))]
mod tests {
    use super::*;

    /// Field 22 of `/proc/self/stat`, read here by its own parse.
    fn my_start_ticks() -> u64 {
        let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
        let after_comm = &stat[stat.rfind(')').unwrap() + 2..];
        // After the comm: field 3 (state) is the first; field 22 the twentieth.
        after_comm.split(' ').nth(19).unwrap().parse().unwrap()
    }

    #[test]
    fn the_owner_id_is_the_pid_and_the_low_bits_of_the_start_time() {
        let start = my_start_ticks();
        let expected = std::process::id() | ((start % 256) as u32) << 22;
        assert_eq!(pid::owner(), expected);
    }

    #[test]
    fn a_process_with_the_same_pid_and_another_start_time_is_not_the_owner() {
        let me = pid::owner();
        assert!(pid::alive(me));
        // The same pid, started one tick later: a process that took the pid of
        // one that died.
        let reused = owner_id(std::process::id(), my_start_ticks() + 1);
        assert_ne!(reused, me);
        assert!(!pid::alive(reused));
    }
}
