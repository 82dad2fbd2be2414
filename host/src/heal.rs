//! Self-healing (DESIGN §8): what a dead process held comes back without
//! anyone's call. A caller that would be refused, shed or made to wait looks
//! for dead holders first — but one caller per region per [`HEAL_INTERVAL_NS`],
//! so a full bulkhead or a half-open breaker under load scans its table ten
//! times a second at most, and callers that find capacity free never look.

use core::sync::atomic::Ordering;

use crate::sync::AtomicU64;

/// The pid namespace of this process, for a gate it makes or attaches to
/// (none under loom: a model's threads stand for processes of one namespace).
#[must_use]
pub fn this_pid_namespace() -> u64 {
    #[cfg(not(loom))]
    return crate::owner::pid::namespace();
    #[cfg(loom)]
    0
}

/// The least time between two looks for dead holders in one region.
pub const HEAL_INTERVAL_NS: u64 = 100_000_000;

/// When a region was last looked at for dead holders: one word in the region,
/// so the interval is kept by every process sharing it. Any value is valid: 0
/// is "never", and a time ahead of the reader's clock (written by a process
/// on another clock, or by a hostile one) counts as long ago.
///
/// Beside it, the pid namespace of the region's creator: an owner id names a
/// process only within one pid namespace, so a process of another namespace
/// that attaches (a container sharing `/dev/shm`) marks the region *mixed*,
/// and nobody looks for dead holders in it any more (a live holder of one
/// namespace would look dead from the other). `reclaim_abandoned` remains,
/// at its caller's risk.
#[repr(C)]
pub struct HealGate {
    last_ns: AtomicU64,
    pid_namespace: AtomicU64,
    mixed: AtomicU64,
}

impl HealGate {
    /// Never looked at, made by a process of pid namespace `pid_namespace`
    /// (0: unknown).
    #[must_use]
    pub fn new(pid_namespace: u64) -> Self {
        Self {
            last_ns: AtomicU64::new(0),
            pid_namespace: AtomicU64::new(pid_namespace),
            mixed: AtomicU64::new(0),
        }
    }

    /// A process of pid namespace `pid_namespace` attaches, before it claims
    /// anything: another namespace than the creator's marks the region mixed
    /// (0, unknown, marks nothing).
    pub fn attach(&self, pid_namespace: u64) {
        let creator = self.pid_namespace.load(Ordering::Relaxed);
        if creator != 0 && pid_namespace != 0 && creator != pid_namespace {
            self.mixed.store(1, Ordering::Release);
        }
    }

    /// Whether owner ids in this region can be told dead or alive: every
    /// process attached so far is of the creator's pid namespace.
    #[must_use]
    pub fn may_heal(&self) -> bool {
        self.mixed.load(Ordering::Acquire) == 0
    }

    /// Whether the caller at `now` (ns of the host's monotonic clock) is the
    /// one to look for dead holders: the last look is at least the interval
    /// old, and this caller moved the gate to `now` first.
    #[must_use]
    pub fn due(&self, now: u64) -> bool {
        if !self.may_heal() {
            return false;
        }
        let last = self.last_ns.load(Ordering::Relaxed);
        if last != 0 && now >= last && now - last < HEAL_INTERVAL_NS {
            return false;
        }
        // Invariant: the gate moves only by this CAS from the value whose age
        // was checked, so of the callers that found one look due, exactly one
        // wins it; the others saw the gate move and leave the look to it.
        #[cfg(seawall_mutant = "heal_gate_blind")]
        {
            // Mutant: every caller that found the look due stores and looks.
            self.last_ns.store(now.max(1), Ordering::Relaxed);
            return true;
        }
        #[cfg(not(seawall_mutant = "heal_gate_blind"))]
        self.last_ns
            .compare_exchange(last, now.max(1), Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    }
}

impl Default for HealGate {
    fn default() -> Self {
        Self::new(0)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn one_look_per_interval() {
        let g = HealGate::new(0);
        assert!(g.due(5 * MS), "never looked at: due");
        assert!(!g.due(5 * MS), "the same instant: taken");
        assert!(!g.due(104 * MS), "99 ms later: not yet");
        assert!(g.due(105 * MS), "100 ms later: due");
        assert!(!g.due(150 * MS));
    }

    #[test]
    fn a_time_ahead_of_the_clock_counts_as_long_ago() {
        let g = HealGate::new(0);
        assert!(g.due(u64::MAX - 1));
        assert!(
            g.due(10 * MS),
            "a gate ahead of the reader's clock is stale"
        );
        assert!(!g.due(20 * MS));
    }

    #[test]
    fn a_process_of_another_pid_namespace_stops_every_look() {
        let g = HealGate::new(7);
        g.attach(7);
        g.attach(0);
        assert!(g.may_heal(), "the creator's namespace, or an unknown one");
        assert!(g.due(5 * MS));
        g.attach(8);
        assert!(!g.may_heal());
        assert!(!g.due(500 * MS), "never again, however long after");
    }

    #[test]
    fn racing_callers_win_one_look() {
        let g = std::sync::Arc::new(HealGate::new(0));
        let wins: u32 = (0..4)
            .map(|_| {
                let g = std::sync::Arc::clone(&g);
                std::thread::spawn(move || u32::from(g.due(7 * MS)))
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|h| h.join().unwrap())
            .sum();
        assert_eq!(wins, 1);
    }
}
