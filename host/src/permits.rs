//! Single-use permits for callers that hold a plain value instead of a Rust
//! [`Permit`](seawall_core::Permit): C, and any process attached to a shared
//! breaker (DESIGN §3.6: "C rejects a second use with an error code").
//!
//! The core's [`PermitToken`](seawall_core::PermitToken) is just an epoch, which a
//! caller could record twice. The table here sits next to the breaker (in the same
//! shared region when there is one) and gives every admitted call a slot:
//!
//! * slot word: `generation (32) | epoch (30) | held (1)`; a free slot is
//!   `generation << 32`.
//! * claim: `free(g) → held(g + 1, epoch)` with one CAS; the permit id is
//!   `(g + 1) ^ salt` in the high half and the slot index in the low half.
//! * release: `held(g, epoch) → free(g)` with one CAS. A second use finds the slot
//!   free, or held again under a later generation, and fails: that is
//!   [`PermitError::AlreadyUsed`], and nothing is recorded.
//!
//! The `salt` (random per table) makes a permit of another breaker fail too,
//! except with probability 2⁻³² when it names a slot that happens to be held.
//! A permit would have to stay unused for 2³² reuses of its slot to be mistaken.
//! No allocation, no lock: a claim is one load and one CAS on a slot chosen by a
//! per-thread cursor (so threads and processes spread over the table) plus one
//! store of its owner, a release is one CAS.
//!
//! # Permits of processes that died
//! A process killed while it holds permits (a worker killed by SIGKILL on a timeout) would
//! leave their slots held for ever, and a half-open probe among them would hold
//! the probe slot. So each slot has an owner word, `generation (10 low bits) | pid
//! (22 bits)`, stored by the claimer right after its CAS. [`PermitTable::reclaim`]
//! frees, with the same CAS as a release, every held slot whose owner word belongs
//! to the slot's current generation and names a process that no longer exists; the
//! caller then records those permits as ignored. An owner word of an older
//! generation (the claimer has not stored its own yet) is never trusted. Pids are
//! only meaningful within one pid namespace: reclaim only where every process
//! sharing the table sees the same pids.

use core::mem::MaybeUninit;
use core::sync::atomic::Ordering;

use crate::sync::{AtomicU32, AtomicU64};
use crossbeam_utils::CachePadded;

/// Loom models only: the pid the next claims store as their owner.
#[cfg(loom)]
pub use crate::owner::set_claiming_pid;
use crate::owner::{claimed_by_dead_process, cursor, owner_word, pid};

/// Permits that may be outstanding (admitted, not yet recorded) at once on one
/// breaker, over all threads and processes sharing it.
pub const PERMIT_SLOTS: usize = 4096;

const HELD: u64 = 1;
const EPOCH_SHIFT: u32 = 1;
const EPOCH_MASK: u64 = (1 << 30) - 1;
const INDEX_MASK: u64 = 0xFFFF_FFFF;

/// Why a permit could not be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PermitError {
    /// It was recorded already (or never issued by this breaker).
    AlreadyUsed,
    /// It names no slot of this table: not a permit of this breaker.
    Foreign,
    /// Its epoch differs from the one it was issued with: the caller altered it.
    Altered,
}

/// A table of `N` permit slots; `#[repr(C)]`, pointer-free, all atomics after init.
/// Breakers use [`PERMIT_SLOTS`]; the loom models use tiny tables.
#[repr(C)]
pub struct PermitTable<const N: usize = PERMIT_SLOTS> {
    /// Random, written once by `init`.
    salt: CachePadded<u64>,
    slots: [AtomicU64; N],
    owners: [AtomicU32; N],
}

fn held(generation: u32, epoch: u32) -> u64 {
    (u64::from(generation) << 32) | ((u64::from(epoch) & EPOCH_MASK) << EPOCH_SHIFT) | HELD
}

fn free(generation: u32) -> u64 {
    u64::from(generation) << 32
}

fn generation(word: u64) -> u32 {
    (word >> 32) as u32
}

impl<const N: usize> PermitTable<N> {
    /// Write an empty table with `salt` into `slot`, in place.
    pub fn init(slot: &mut MaybeUninit<Self>, salt: u64) {
        let p = slot.as_mut_ptr();
        // SAFETY: `p` points to writable, properly aligned memory for a
        // `PermitTable` (it comes from a `&mut MaybeUninit<Self>`); each field is
        // written exactly once through a raw pointer, never read before.
        unsafe {
            (&raw mut (*p).salt).write(CachePadded::new(salt));
            let slots = (&raw mut (*p).slots).cast::<AtomicU64>();
            let owners = (&raw mut (*p).owners).cast::<AtomicU32>();
            for i in 0..N {
                slots.add(i).write(AtomicU64::new(0));
                owners.add(i).write(AtomicU32::new(0));
            }
        }
    }

    /// The high half of the id of slot `idx` in `generation`: a keyed hash of
    /// both under the table's random salt, so an id says nothing about the ids
    /// of other slots or generations, and a guessed one names a held slot with
    /// probability 2⁻³² (DESIGN §8, "Ids").
    fn tag(&self, generation: u32, idx: usize) -> u32 {
        (seawall_core::mix64(*self.salt ^ ((u64::from(generation) << 32) | idx as u64)) >> 32)
            as u32
    }

    fn id(&self, generation: u32, idx: usize) -> u64 {
        (u64::from(self.tag(generation, idx)) << 32) | idx as u64
    }

    /// Take a free slot for a call admitted in `epoch`; its permit id, or `None`
    /// when all `N` are held.
    #[must_use = "an unused id leaves its slot held"]
    pub fn claim(&self, epoch: u32) -> Option<u64> {
        let mut idx = cursor::get(N);
        // Invariant: a slot goes free(g) → held(g + 1) only by this CAS and
        // held(g) → free(g) only by the matching release CAS, so each generation of
        // a slot is handed to exactly one claim and released at most once.
        // One more than the table: a jump after the first try still sees every slot.
        for tried in 0..=N {
            let cell = &self.slots[idx];
            let w = cell.load(Ordering::Relaxed);
            if w & HELD == 0 {
                let g = generation(w).wrapping_add(1);
                #[cfg(seawall_mutant = "permit_blind_claim")]
                {
                    // Mutant: check-then-store hands one slot to two claimers.
                    cell.store(held(g, epoch), Ordering::Release);
                    return Some(self.id(g, idx));
                }
                #[cfg(not(seawall_mutant = "permit_blind_claim"))]
                match cell.compare_exchange(w, held(g, epoch), Ordering::AcqRel, Ordering::Relaxed)
                {
                    Ok(_) => {
                        self.owners[idx].store(owner_word(g, pid::current()), Ordering::Release);
                        cursor::set((idx + 1) % N);
                        return Some(self.id(g, idx));
                    }
                    Err(_) if tried == 0 => {
                        // Someone else starts here too (threads of forked processes
                        // inherit the cursor): jump elsewhere.
                        idx = cursor::fresh(w ^ idx as u64, N);
                        continue;
                    }
                    Err(_) => {}
                }
            }
            idx = (idx + 1) % N;
        }
        None
    }

    /// Use permit `id` (issued with `epoch`) once.
    pub fn release(&self, id: u64, epoch: u32) -> Result<(), PermitError> {
        let idx = id & INDEX_MASK;
        let Some(cell) = usize::try_from(idx).ok().and_then(|i| self.slots.get(i)) else {
            return Err(PermitError::Foreign);
        };
        let idx = idx as usize;
        // The slot's generation now: an id of another generation (or forged)
        // does not carry its tag.
        let g = generation(cell.load(Ordering::Acquire));
        if (id >> 32) as u32 != self.tag(g, idx) {
            return Err(PermitError::AlreadyUsed);
        }
        #[cfg(seawall_mutant = "permit_blind_release")]
        {
            // Mutant: check-then-store lets two racing uses of one permit both pass.
            let cur = cell.load(Ordering::Acquire);
            if cur == held(g, epoch) {
                cell.store(free(g), Ordering::Release);
                return Ok(());
            }
        }
        match cell.compare_exchange(held(g, epoch), free(g), Ordering::AcqRel, Ordering::Relaxed) {
            Ok(_) => Ok(()),
            Err(cur) if cur & HELD != 0 && generation(cur) == g => Err(PermitError::Altered),
            Err(_) => Err(PermitError::AlreadyUsed),
        }
    }

    /// Free every slot held by a process that `alive` says is gone, calling
    /// `abandoned(epoch)` for each (the caller records it as ignored). Returns how
    /// many. A slot whose owner has not stored its pid yet is left alone.
    pub fn reclaim(&self, alive: impl Fn(u32) -> bool, mut abandoned: impl FnMut(u32)) -> u64 {
        let mut freed = 0;
        for (slot, owner) in self.slots.iter().zip(&self.owners) {
            let w = slot.load(Ordering::Acquire);
            if w & HELD == 0 {
                continue;
            }
            let g = generation(w);
            // Invariant: against a racing release, the CAS lets exactly one of
            // the two free the slot (the owner check is `owner`'s).
            if !claimed_by_dead_process(owner, g, &alive) {
                continue;
            }
            if slot
                .compare_exchange(w, free(g), Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                abandoned(((w >> EPOCH_SHIFT) & EPOCH_MASK) as u32);
                freed += 1;
            }
        }
        freed
    }

    /// [`reclaim`](Self::reclaim) with the OS's answer: a process is gone when
    /// `kill(pid, 0)` says there is no such process or, on Linux, when it has
    /// exited and is not reaped yet (a zombie).
    #[cfg(not(loom))]
    pub fn reclaim_dead(&self, abandoned: impl FnMut(u32)) -> u64 {
        self.reclaim(pid::alive, abandoned)
    }

    /// Permits held right now (a scan of the table: for metrics, not the hot path).
    #[must_use]
    pub fn outstanding(&self) -> u64 {
        self.slots
            .iter()
            .filter(|s| s.load(Ordering::Relaxed) & HELD != 0)
            .count() as u64
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn table(salt: u64) -> Box<PermitTable> {
        let mut b = Box::<PermitTable>::new_uninit();
        PermitTable::init(&mut b, salt);
        // SAFETY: init wrote every field.
        unsafe { b.assume_init() }
    }

    #[test]
    fn a_permit_is_used_once() {
        let t = table(7);
        let id = t.claim(3).unwrap();
        assert_eq!(t.outstanding(), 1);
        assert_eq!(t.release(id, 3), Ok(()));
        assert_eq!(t.release(id, 3), Err(PermitError::AlreadyUsed));
        assert_eq!(t.outstanding(), 0);
    }

    #[test]
    fn a_reused_slot_does_not_accept_the_old_permit() {
        let t = table(0);
        let first = t.claim(1).unwrap();
        t.release(first, 1).unwrap();
        // Claim every slot, so the first one is certainly held again.
        let all: Vec<u64> = (0..PERMIT_SLOTS).map(|_| t.claim(1).unwrap()).collect();
        assert_eq!(t.claim(1), None);
        assert_eq!(t.release(first, 1), Err(PermitError::AlreadyUsed));
        for id in all {
            t.release(id, 1).unwrap();
        }
        assert_eq!(t.outstanding(), 0);
    }

    #[test]
    fn altered_and_foreign_permits_are_refused_without_consuming() {
        let t = table(99);
        let id = t.claim(5).unwrap();
        assert_eq!(t.release(id, 6), Err(PermitError::Altered));
        assert_eq!(t.release(id | (1 << 20), 5), Err(PermitError::Foreign));
        assert_eq!(t.release(id, 5), Ok(()));
    }

    #[test]
    fn a_forged_permit_of_another_slot_is_refused_and_its_holder_keeps_it() {
        // The high half of one's own permit with a neighbour's index: with a
        // salt shared by every slot it named the neighbour's permit exactly.
        let t = table(0x5eed);
        let mine = t.claim(2).unwrap();
        let theirs = t.claim(2).unwrap();
        let forged = (mine & !INDEX_MASK) | (theirs & INDEX_MASK);
        assert_ne!(forged, theirs, "ids of two slots differ above the index");
        assert_eq!(t.release(forged, 2), Err(PermitError::AlreadyUsed));
        assert_eq!(t.outstanding(), 2);
        assert_eq!(t.release(theirs, 2), Ok(()));
        assert_eq!(t.release(mine, 2), Ok(()));
    }

    #[test]
    fn the_next_generation_of_a_slot_is_not_predictable_from_the_last() {
        // One slot, reused: with the tag `generation ^ salt` two consecutive
        // ids differed by a known xor; a keyed hash leaves no pattern.
        let t = table(42);
        let ids: Vec<u64> = (0..64)
            .map(|_| {
                let id = t.claim(0).unwrap();
                t.release(id, 0).unwrap();
                id
            })
            .collect();
        let steps: std::collections::HashSet<u64> =
            ids.windows(2).map(|w| (w[0] ^ w[1]) >> 32).collect();
        assert!(
            steps.len() > 32,
            "only {} distinct steps in 63",
            steps.len()
        );
    }

    #[test]
    fn another_tables_permit_fails() {
        let a = table(1);
        let b = table(2);
        let id = a.claim(0).unwrap();
        // Hold the same slot in `b` under its own salt.
        let idx = id & INDEX_MASK;
        let mut held_in_b = Vec::new();
        loop {
            let other = b.claim(0).unwrap();
            held_in_b.push(other);
            if other & INDEX_MASK == idx {
                break;
            }
        }
        assert_eq!(b.release(id, 0), Err(PermitError::AlreadyUsed));
    }

    #[test]
    fn permits_of_dead_owners_are_reclaimed_once() {
        let t = table(11);
        let me = std::process::id();
        let a = t.claim(4).unwrap();
        let b = t.claim(5).unwrap();
        // Everyone alive, or only other processes gone: nothing to take.
        assert_eq!(t.reclaim(|_| true, |_| panic!("nothing is dead")), 0);
        assert_eq!(t.reclaim(|pid| pid == me, |_| panic!("we are alive")), 0);
        // Our process gone: both permits, with the epochs they were issued in.
        let mut epochs = Vec::new();
        assert_eq!(t.reclaim(|pid| pid != me, |e| epochs.push(e)), 2);
        epochs.sort_unstable();
        assert_eq!(epochs, [4, 5]);
        assert_eq!(t.outstanding(), 0);
        // A reclaimed permit is used up.
        assert_eq!(t.release(a, 4), Err(PermitError::AlreadyUsed));
        assert_eq!(t.release(b, 5), Err(PermitError::AlreadyUsed));
        assert_eq!(t.reclaim(|_| false, |_| panic!("twice")), 0);
    }

    #[test]
    fn an_owner_word_of_another_generation_is_not_trusted() {
        let t = table(0);
        let id = t.claim(1).unwrap();
        let idx = (id & INDEX_MASK) as usize;
        // As if the claimer had not stored its owner yet: the word of the
        // previous generation, naming a dead process.
        let g = generation(t.slots[idx].load(Ordering::Relaxed));
        t.owners[idx].store(owner_word(g.wrapping_sub(1), 12345), Ordering::Relaxed);
        assert_eq!(
            t.reclaim(|_| false, |_| panic!("reclaimed a live claim")),
            0
        );
        t.owners[idx].store(owner_word(g, 12345), Ordering::Relaxed);
        assert_eq!(t.reclaim(|pid| pid != 12345, |e| assert_eq!(e, 1)), 1);
    }

    #[test]
    fn our_own_pid_is_alive_and_a_reaped_child_is_not() {
        assert!(pid::alive(std::process::id()));
        assert_eq!(pid::current(), std::process::id());
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let gone = child.id();
        child.wait().unwrap();
        assert!(!pid::alive(gone));
    }

    /// `/proc/<pid>/stat`'s state letter, read here independently of `alive`.
    #[cfg(target_os = "linux")]
    fn proc_state(pid: u32) -> Option<char> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        stat[stat.rfind(')')? + 1..].trim_start().chars().next()
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_killed_child_not_yet_reaped_is_not_alive() {
        let mut child = std::process::Command::new("sleep")
            .arg("60")
            .spawn()
            .unwrap();
        let pid = child.id();
        assert!(pid::alive(pid));
        child.kill().unwrap(); // SIGKILL, not waited for: a zombie until reaped
        let t0 = std::time::Instant::now();
        while proc_state(pid) != Some('Z') {
            assert!(t0.elapsed().as_secs() < 10, "child never became a zombie");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(!pid::alive(pid));
        // What it held is taken back while it is still a zombie.
        let t = table(0);
        let id = t.claim(7).unwrap();
        let idx = (id & INDEX_MASK) as usize;
        let g = generation(t.slots[idx].load(Ordering::Relaxed));
        t.owners[idx].store(owner_word(g, pid), Ordering::Relaxed);
        let mut epochs = Vec::new();
        assert_eq!(t.reclaim_dead(|e| epochs.push(e)), 1);
        assert_eq!(epochs, [7]);
        child.wait().unwrap();
        assert!(!pid::alive(pid));
    }

    #[test]
    fn concurrent_double_use_succeeds_exactly_once() {
        use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
        let t = table(3);
        let wins = AtomicU32::new(0);
        let ids: Vec<u64> = (0..1000).map(|_| t.claim(2).unwrap()).collect();
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for &id in &ids {
                        if t.release(id, 2).is_ok() {
                            wins.fetch_add(1, Relaxed);
                        }
                    }
                });
            }
        });
        assert_eq!(wins.load(Relaxed), 1000);
        assert_eq!(t.outstanding(), 0);
    }
}
