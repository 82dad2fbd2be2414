//! Single-use permits for callers that hold a plain value instead of a Rust
//! [`Permit`](seawall_core::Permit): C, and any process attached to a shared
//! breaker (DESIGN §3.6: "C rejects a second use with an error code").
//!
//! The core's [`PermitToken`](seawall_core::PermitToken) is just an epoch, which a
//! caller could record twice. The table here sits next to the breaker (in the same
//! shared region when there is one) and gives every admitted call a slot:
//!
//! * slot word: `generation (32) | owner (30) | state (2)` (the owner id: pid and
//!   start-time tag, see [`crate::owner`]), state `FREE`,
//!   `ACQUIRING` (claimed, the core's admission not yet answered), `HELD` or
//!   `RECORDING` (the core's record next). Who moves the slot is part of the word
//!   every move writes, so the process a slot belongs to is known from the very
//!   step that took it (DESIGN §8, "Death at any instruction"). The epoch a
//!   permit was admitted in sits next to the word, written before it is `HELD`.
//! * claim: `free(g) → acquiring(g + 1, pid)` with one CAS, before the core is
//!   asked; then `held(g + 1)` once admitted (free again if refused). The permit
//!   id is a keyed hash of slot and generation in the high half and the slot
//!   index in the low half.
//! * use: `held(g) → recording(g, pid)` with one CAS, won once, then the core's
//!   record, then free. A second use finds the slot recording, free, or held again
//!   under a later generation, and fails: that is [`PermitError::AlreadyUsed`],
//!   and nothing is recorded.
//!
//! The `salt` (random per table) makes a permit of another breaker fail too,
//! except with probability 2⁻³² when it names a slot that happens to be held.
//! A permit would have to stay unused for 2³² reuses of its slot to be mistaken.
//! No allocation, no lock: a claim is one load and one CAS on a slot chosen by a
//! per-thread cursor (so threads and processes spread over the table) plus one
//! CAS once admitted, a use two CASes.
//!
//! # Permits of processes that died
//! A process killed while it holds permits (a worker killed by SIGKILL on a
//! timeout) would leave their slots held for ever, and a half-open probe among
//! them would hold the probe slot. Reclaim (in [`crate::breaker`]) takes over,
//! with a CAS from the exact word read, every slot whose word names a process
//! that no longer exists: a held one is recorded as ignored; an acquiring or
//! recording one (whether the core made its step is not in the table) is settled
//! by count. Pids are only meaningful within one pid namespace: reclaim only
//! where every process sharing the table sees the same pids.

use core::mem::MaybeUninit;
use core::sync::atomic::Ordering;

use crate::sync::{AtomicU32, AtomicU64};
use crossbeam_utils::CachePadded;

use crate::owner::{OWNER_MASK, cursor, pid};
/// Loom models only: this thread's pid, and when its process dies.
#[cfg(loom)]
pub use crate::owner::{die_after, killed, set_claiming_pid};

/// Permits that may be outstanding (admitted, not yet recorded) at once on one
/// breaker, over all threads and processes sharing it, unless it was opened
/// with other [`PermitSlots`](crate::breaker::PermitSlots).
pub const PERMIT_SLOTS: usize = 4096;

const STATE_MASK: u64 = 0b11;
const PID_SHIFT: u32 = 2;
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

/// What a permit slot stands for now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PermitState {
    Free,
    Acquiring,
    Held,
    Recording,
}

impl PermitState {
    const ALL: [Self; 4] = [Self::Free, Self::Acquiring, Self::Held, Self::Recording];
}

/// A slot word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Word(u64);

impl Word {
    fn new(generation: u32, pid: u32, state: PermitState) -> Self {
        Self(
            (u64::from(generation) << 32)
                | (u64::from(pid & OWNER_MASK) << PID_SHIFT)
                | state as u64,
        )
    }

    pub(crate) const fn generation(self) -> u32 {
        (self.0 >> 32) as u32
    }

    pub(crate) const fn owner(self) -> u32 {
        (self.0 >> PID_SHIFT) as u32 & OWNER_MASK
    }

    pub(crate) const fn state(self) -> PermitState {
        PermitState::ALL[(self.0 & STATE_MASK) as usize]
    }

    /// This slot's generation in `state`, moved by this process (`FREE` names
    /// nobody).
    fn moved(self, state: PermitState) -> Self {
        let by = if state == PermitState::Free {
            0
        } else {
            pid::owner()
        };
        Self::new(self.generation(), by, state)
    }
}

/// A slot this process is moving: where it is and the word it wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use = "a step in progress leaves its slot taken until it is finished"]
pub(crate) struct Step {
    idx: usize,
    word: Word,
}

/// A table of `N` permit slots; `#[repr(C)]`, pointer-free, all atomics after init.
/// Breakers use [`PERMIT_SLOTS`]; the loom models use tiny tables.
#[repr(C)]
pub struct PermitTable<const N: usize = PERMIT_SLOTS> {
    /// Random, written once by `init`.
    salt: CachePadded<u64>,
    slots: [AtomicU64; N],
    /// The epoch of a held slot's permit.
    epochs: [AtomicU32; N],
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
            let epochs = (&raw mut (*p).epochs).cast::<AtomicU32>();
            for i in 0..N {
                slots.add(i).write(AtomicU64::new(0));
                epochs.add(i).write(AtomicU32::new(0));
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

    pub(crate) fn load(&self, idx: usize) -> Word {
        Word(self.slots[idx].load(Ordering::Acquire))
    }

    fn cas(&self, idx: usize, from: Word, to: Word) -> Option<Step> {
        self.slots[idx]
            .compare_exchange(from.0, to.0, Ordering::AcqRel, Ordering::Acquire)
            .ok()
            .map(|_| Step { idx, word: to })
    }

    /// Take a free slot for a call about to ask the core; the step, or `None`
    /// when all `N` are taken.
    pub(crate) fn begin_claim(&self) -> Option<Step> {
        let me = pid::owner();
        let mut idx = cursor::get(N);
        // Invariant: a slot goes free(g) → acquiring(g + 1, pid) only by this
        // CAS, from the exact free word read, so each generation of a slot is
        // handed to exactly one claim, which is named in the word from that step.
        // One more than the table: a jump after the first try still sees every slot.
        for tried in 0..=N {
            let w = self.load(idx);
            if w.state() == PermitState::Free {
                #[cfg(seawall_mutant = "permit_claim_anonymous")]
                let me = 0; // Mutant: the claim names nobody until a later store.
                let next = Word::new(w.generation().wrapping_add(1), me, PermitState::Acquiring);
                #[cfg(seawall_mutant = "permit_blind_claim")]
                {
                    // Mutant: check-then-store hands one slot to two claimers.
                    self.slots[idx].store(next.0, Ordering::Release);
                    return Some(Step { idx, word: next });
                }
                #[cfg(not(seawall_mutant = "permit_blind_claim"))]
                match self.cas(idx, w, next) {
                    Some(step) => {
                        cursor::set((idx + 1) % N);
                        return Some(step);
                    }
                    None if tried == 0 => {
                        // Someone else starts here too (threads of forked processes
                        // inherit the cursor): jump elsewhere.
                        idx = cursor::fresh(w.0 ^ idx as u64, N);
                        continue;
                    }
                    None => {}
                }
            }
            idx = (idx + 1) % N;
        }
        None
    }

    /// The claim of `step` was admitted in `epoch`: a held permit; its id.
    pub(crate) fn admitted(&self, step: Step, epoch: u32) -> u64 {
        // Release: a reader that sees this epoch sees the claim before it (so a
        // use of an older permit re-reading the slot finds it moved on).
        self.epochs[step.idx].store(epoch, Ordering::Release);
        let next = step.word.moved(PermitState::Held);
        // Only this process moves a slot it is stepping (reclaim takes only a
        // dead process's): the CAS does not fail.
        let _ = self.cas(step.idx, step.word, next);
        self.id(next.generation(), step.idx)
    }

    /// The step in progress is done or undone: the slot is free.
    pub(crate) fn finish(&self, step: Step) {
        let _ = self.cas(step.idx, step.word, step.word.moved(PermitState::Free));
    }

    /// Begin using permit `id` (issued with `epoch`): `held(g) →
    /// recording(g, pid)`, won once. The caller records on the core, then
    /// [`finish`](Self::finish)es.
    pub(crate) fn begin_release(&self, id: u64, epoch: u32) -> Result<Step, PermitError> {
        let idx = id & INDEX_MASK;
        let Some(idx) = usize::try_from(idx).ok().filter(|&i| i < N) else {
            return Err(PermitError::Foreign);
        };
        let w = self.load(idx);
        // The slot's generation now: an id of another generation (or forged)
        // does not carry its tag.
        if (id >> 32) as u32 != self.tag(w.generation(), idx) || w.state() != PermitState::Held {
            return Err(PermitError::AlreadyUsed);
        }
        if self.epochs[idx].load(Ordering::Acquire) != epoch {
            // The epoch of this very permit if the slot still holds the word
            // read (a new claim may have written its own meanwhile).
            return Err(if self.load(idx) == w {
                PermitError::Altered
            } else {
                PermitError::AlreadyUsed
            });
        }
        #[cfg(seawall_mutant = "permit_blind_release")]
        {
            // Mutant: check-then-store lets two racing uses of one permit both pass.
            let to = w.moved(PermitState::Recording);
            self.slots[idx].store(to.0, Ordering::Release);
            return Ok(Step { idx, word: to });
        }
        #[cfg(not(seawall_mutant = "permit_blind_release"))]
        self.cas(idx, w, w.moved(PermitState::Recording))
            .ok_or(PermitError::AlreadyUsed)
    }

    /// Reclaim takes over slot `idx`, read as `from` (a dead process's), moving
    /// it to `to` in its own name; `None` if the slot moved meanwhile.
    pub(crate) fn take_over(&self, idx: usize, from: Word, to: PermitState) -> Option<Step> {
        self.cas(idx, from, from.moved(to))
    }

    /// The epoch of the permit of slot `idx` (meaningful once it was held).
    pub(crate) fn epoch_of(&self, idx: usize) -> u32 {
        self.epochs[idx].load(Ordering::Relaxed)
    }

    /// Slot words, one by one (a scan, not a snapshot).
    pub(crate) fn words(&self) -> impl Iterator<Item = (usize, Word)> + '_ {
        (0..N).map(|i| (i, self.load(i)))
    }

    /// Take a free slot for a call admitted in `epoch` (both steps at once: for
    /// the models and tests of the table alone); its permit id, or `None` when
    /// all `N` are taken.
    #[must_use = "an unused id leaves its slot held"]
    pub fn claim(&self, epoch: u32) -> Option<u64> {
        let step = self.begin_claim()?;
        crate::owner::kill_point!(None);
        Some(self.admitted(step, epoch))
    }

    /// Use permit `id` (issued with `epoch`) once (both steps at once: for the
    /// models and tests of the table alone).
    pub fn release(&self, id: u64, epoch: u32) -> Result<(), PermitError> {
        let step = self.begin_release(id, epoch)?;
        crate::owner::kill_point!(Ok(()));
        self.finish(step);
        Ok(())
    }

    /// Slots taken (held, or in a step) that name owner id `pid` (a scan).
    #[must_use]
    pub fn taken_by(&self, pid: u32) -> u64 {
        self.held_by(|owner| owner == pid)
    }

    /// Free every held slot of a process that `alive` says is gone, calling
    /// `abandoned(epoch)` for each (the breaker records it as ignored, between
    /// the take-over and the free); how many. Steps in progress are the
    /// breaker's to settle.
    pub fn reclaim(&self, alive: impl Fn(u32) -> bool, mut abandoned: impl FnMut(u32)) -> u64 {
        let mut freed = 0;
        for (idx, w) in self.words() {
            // Invariant: the take-over CAS succeeds only from the word read, so
            // against a racing use exactly one of the two moves the slot.
            if w.state() != PermitState::Held || alive(w.owner()) {
                continue;
            }
            if let Some(step) = self.take_over(idx, w, PermitState::Recording) {
                abandoned(self.epoch_of(idx));
                self.finish(step);
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
        self.reclaim(pid::alive_memo(), abandoned)
    }

    /// Held permits that are not probes (a scan): the core counts them in its
    /// `admitted` total only once recorded.
    #[cfg(not(loom))]
    pub(crate) fn held_non_probes(&self) -> u64 {
        self.words()
            .filter(|&(i, w)| {
                w.state() == PermitState::Held
                    && !seawall_core::PermitToken {
                        epoch: self.epoch_of(i),
                    }
                    .is_probe()
            })
            .count() as u64
    }

    /// Permits held right now, steps in progress included (a scan of the table:
    /// for metrics, not the hot path).
    #[must_use]
    pub fn outstanding(&self) -> u64 {
        self.held_by(|_| true)
    }

    /// Slots taken (held, or in a step) whose owner id `owner_matches` picks (a
    /// scan): [`outstanding`](Self::outstanding) picks all; metrics pick the
    /// dead, whose slots stay taken until a caller gives them back.
    pub fn held_by(&self, mut owner_matches: impl FnMut(u32) -> bool) -> u64 {
        self.words()
            .filter(|(_, w)| w.state() != PermitState::Free && owner_matches(w.owner()))
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
        let me = pid::owner();
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
    fn a_claim_names_its_process_in_the_word_it_takes() {
        let t = table(0);
        let step = t.begin_claim().unwrap();
        let w = t.load(step.idx);
        assert_eq!(
            (w.state(), w.owner()),
            (PermitState::Acquiring, pid::owner())
        );
        assert_eq!(w.owner() & crate::owner::PID_MASK, std::process::id());
        assert_eq!(t.outstanding(), 1, "a claim in progress is counted");
        assert_eq!(
            t.reclaim(|_| false, |_| panic!("a step is not a held permit")),
            0
        );
        t.finish(step);
        assert_eq!(t.outstanding(), 0);
    }

    #[test]
    fn our_own_pid_is_alive_and_a_reaped_child_is_not() {
        assert!(pid::alive(pid::owner()));
        assert_eq!(pid::current(), std::process::id());
        let mut child = std::process::Command::new("sleep")
            .arg("60")
            .spawn()
            .unwrap();
        let gone = pid::owner_of(child.id()).unwrap();
        assert!(pid::alive(gone));
        child.kill().unwrap();
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
        let owner = pid::owner_of(pid).unwrap();
        assert!(pid::alive(owner));
        child.kill().unwrap(); // SIGKILL, not waited for: a zombie until reaped
        let t0 = std::time::Instant::now();
        while proc_state(pid) != Some('Z') {
            assert!(t0.elapsed().as_secs() < 10, "child never became a zombie");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(!pid::alive(owner));
        // What it held is taken back while it is still a zombie.
        let t = table(0);
        let id = t.claim(7).unwrap();
        let idx = (id & INDEX_MASK) as usize;
        let w = t.load(idx);
        t.slots[idx].store(
            Word::new(w.generation(), owner, PermitState::Held).0,
            Ordering::Relaxed,
        );
        let mut epochs = Vec::new();
        assert_eq!(t.reclaim_dead(|e| epochs.push(e)), 1);
        assert_eq!(epochs, [7]);
        child.wait().unwrap();
        assert!(!pid::alive(owner));
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
