//! Single-use holders of a semaphore: each permit and each queued ticket a C
//! caller (or a process sharing the semaphore) holds is a slot of this table, so
//! a permit released twice, a ticket cancelled twice or polled after it was
//! taken, or an id of another semaphore is an error code — never a second
//! `release` of the core semaphore, which would hand out a permit nobody gave
//! back (the core's raw protocol trusts its caller to give each permit back once).
//!
//! * slot word: `generation (30) | owner (30) | state (3)`, the owner id being
//!   the pid and a start-time tag (see [`crate::owner`]): who is in the slot is
//!   part of the word every move writes, so the process a slot belongs to is
//!   known from the very step that took it (DESIGN §8, "Death at any
//!   instruction"). A ticket's core ticket sits next to the word, written while
//!   the slot is being claimed and read only while it waits.
//! * states: `FREE`; `HELD` (a permit), `WAITING` (a ticket of the core's queue);
//!   and one state for each step in progress, named by the process making it:
//!   `ACQUIRING` / `ENQUEUING` (claimed, the core's acquire not yet answered),
//!   `RELEASING` (the core's release next), `CANCELLING` (the core's cancel next),
//!   `GRANTING` (the core's acknowledgement of a grant next).
//! * claim: `free(g) → acquiring(g + 1, pid)` with one CAS, before the core is
//!   asked; the id is a keyed hash of slot and generation in the high half and
//!   the slot index in the low half. A ticket and the permit it turns into share
//!   the id.
//! * every later move is one CAS from the exact word read, of the generation the
//!   id names; the CAS that leaves `HELD` or `WAITING` is won once, so each
//!   permit is given back once and each ticket either taken or cancelled.
//!
//! The table moves one slot at a time; [`crate::semaphore::cell`] pairs each move
//! with the core's step and says how reclaim repairs a death between the two.

use core::mem::MaybeUninit;
use core::sync::atomic::Ordering;

use crate::sync::{AtomicU32, AtomicU64};
use crossbeam_utils::CachePadded;

use crate::owner::{OWNER_MASK, cursor, pid};

/// Loom models only: this thread's pid, and when its process dies.
#[cfg(loom)]
pub use crate::owner::{die_after, killed, set_claiming_pid};

/// What a slot stands for now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SlotState {
    Free,
    Held,
    Waiting,
    Acquiring,
    Enqueuing,
    Releasing,
    Cancelling,
    Granting,
}

impl SlotState {
    const ALL: [Self; 8] = [
        Self::Free,
        Self::Held,
        Self::Waiting,
        Self::Acquiring,
        Self::Enqueuing,
        Self::Releasing,
        Self::Cancelling,
        Self::Granting,
    ];

    const fn bits(self) -> u64 {
        self as u64
    }
}

const STATE_MASK: u64 = 0b111;
const PID_SHIFT: u32 = 3;
const GENERATION_SHIFT: u32 = 34;
/// Generations are 30 bits: an id must stay unused for 2³⁰ reuses of its slot to
/// be mistaken for a live one.
const GENERATION_MASK: u32 = (1 << 30) - 1;
const INDEX_MASK: u64 = 0xFFFF_FFFF;

/// Why a permit or ticket id could not be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HolderError {
    /// The permit was released already (or reclaimed), or never issued by this
    /// table.
    AlreadyUsed,
    /// The ticket is not waiting: granted and taken already, cancelled,
    /// reclaimed, or never issued by this table.
    UnknownTicket,
    /// The id is a ticket still waiting, not a permit: poll or cancel it.
    StillWaiting,
    /// The id names no slot of this table: not from this semaphore.
    Foreign,
}

/// A table of `N` holder slots; `#[repr(C)]`, pointer-free, all atomics after init.
#[repr(C)]
pub struct HolderTable<const N: usize> {
    /// Random, written once by `init`.
    salt: CachePadded<u64>,
    slots: [AtomicU64; N],
    /// The core ticket of a waiting slot.
    tickets: [AtomicU32; N],
}

/// A slot word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Slot(u64);

impl Slot {
    const fn new(generation: u32, pid: u32, state: SlotState) -> Self {
        Self(
            ((generation & GENERATION_MASK) as u64) << GENERATION_SHIFT
                | ((pid & OWNER_MASK) as u64) << PID_SHIFT
                | state.bits(),
        )
    }

    pub(crate) const fn generation(self) -> u32 {
        (self.0 >> GENERATION_SHIFT) as u32
    }

    pub(crate) const fn owner(self) -> u32 {
        (self.0 >> PID_SHIFT) as u32 & OWNER_MASK
    }

    pub(crate) const fn state(self) -> SlotState {
        SlotState::ALL[(self.0 & STATE_MASK) as usize]
    }

    /// This slot's generation in `state`, moved by this process (`FREE` names
    /// nobody).
    fn moved(self, state: SlotState) -> Self {
        let by = if matches!(state, SlotState::Free) {
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
    word: Slot,
}

impl<const N: usize> HolderTable<N> {
    /// Write an empty table with `salt` into `slot`, in place.
    pub fn init(slot: &mut MaybeUninit<Self>, salt: u64) {
        let p = slot.as_mut_ptr();
        // SAFETY: `p` points to writable, properly aligned memory for a
        // `HolderTable` (it comes from a `&mut MaybeUninit<Self>`); each field is
        // written exactly once through a raw pointer, never read before.
        unsafe {
            (&raw mut (*p).salt).write(CachePadded::new(salt));
            let slots = (&raw mut (*p).slots).cast::<AtomicU64>();
            let tickets = (&raw mut (*p).tickets).cast::<AtomicU32>();
            for i in 0..N {
                slots
                    .add(i)
                    .write(AtomicU64::new(Slot::new(0, 0, SlotState::Free).0));
                tickets.add(i).write(AtomicU32::new(0));
            }
        }
    }

    /// The high half of the id of slot `idx` in `generation` (30 bits, as the
    /// bindings' encodings expect): a keyed hash of both under the table's
    /// random salt, so an id says nothing about the ids of other slots or
    /// generations, and a guessed one names a live holder with probability
    /// 2⁻³⁰ (DESIGN §8, "Ids").
    fn tag(&self, generation: u32, idx: usize) -> u32 {
        let h = seawall_core::mix64(*self.salt ^ ((u64::from(generation) << 32) | idx as u64));
        (h >> 32) as u32 & GENERATION_MASK
    }

    /// The id of the slot `step` claimed.
    pub(crate) fn id(&self, step: Step) -> u64 {
        (u64::from(self.tag(step.word.generation(), step.idx)) << 32) | step.idx as u64
    }

    pub(crate) fn load(&self, idx: usize) -> Slot {
        Slot(self.slots[idx].load(Ordering::Acquire))
    }

    /// Slot `idx` of word `from` goes to `to`; the step, or `None` if the slot
    /// holds another word now.
    fn cas(&self, idx: usize, from: Slot, to: Slot) -> Option<Step> {
        self.slots[idx]
            .compare_exchange(from.0, to.0, Ordering::AcqRel, Ordering::Acquire)
            .ok()
            .map(|_| Step { idx, word: to })
    }

    /// The slot an id names and its word now, if that word is of the
    /// generation the id names (else the id names no live holder: `stale`).
    fn slot_of(&self, id: u64, stale: HolderError) -> Result<(usize, Slot), HolderError> {
        let Some(idx) = usize::try_from(id & INDEX_MASK).ok().filter(|&i| i < N) else {
            return Err(HolderError::Foreign);
        };
        let w = self.load(idx);
        if (id >> 32) as u32 == self.tag(w.generation(), idx) {
            Ok((idx, w))
        } else {
            Err(stale)
        }
    }

    /// Take a free slot for an acquire about to ask the core (`enqueue`: one
    /// that may queue); the step, or `None` when all `N` are taken.
    pub(crate) fn claim(&self, enqueue: bool) -> Option<Step> {
        let to = if enqueue {
            SlotState::Enqueuing
        } else {
            SlotState::Acquiring
        };
        let me = pid::owner();
        let mut idx = cursor::get(N);
        // Invariant: a slot goes free(g) → acquiring/enqueuing(g + 1, pid) only
        // by this CAS, from the exact free word read, so each generation of a
        // slot belongs to exactly one claim, and the claimer's pid is in the
        // word from that very step.
        // One more than the table: a jump after the first try still sees every slot.
        for tried in 0..=N {
            let w = self.load(idx);
            if w.state() == SlotState::Free {
                let g = w.generation().wrapping_add(1) & GENERATION_MASK;
                #[cfg(seawall_mutant = "holder_claim_anonymous")]
                let me = 0; // Mutant: the claim names nobody until a later store.
                match self.cas(idx, w, Slot::new(g, me, to)) {
                    Some(step) => {
                        cursor::set((idx + 1) % N);
                        return Some(step);
                    }
                    None if tried == 0 => {
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

    /// The claim of `step` was admitted by the core: a held permit.
    pub(crate) fn admitted(&self, step: Step) -> Step {
        self.advance(step, SlotState::Held)
    }

    /// The claim of `step` was queued by the core as ticket `t`.
    pub(crate) fn queued(&self, step: Step, t: u32) -> Step {
        // Release: a reader that sees this ticket sees the claim before it (so
        // its re-read of the slot finds the word moved on).
        self.tickets[step.idx].store(t, Ordering::Release);
        self.advance(step, SlotState::Waiting)
    }

    /// The step in progress is done, or undone: the slot is free.
    pub(crate) fn finish(&self, step: Step) {
        let _ = self.advance(step, SlotState::Free);
    }

    /// A step this process began goes on to `to`. Only this process moves a
    /// slot it is stepping (a reclaim takes only a dead process's), so the CAS
    /// does not fail; were the word changed all the same, the slot is left to
    /// whoever changed it.
    pub(crate) fn advance(&self, step: Step, to: SlotState) -> Step {
        let next = step.word.moved(to);
        self.cas(step.idx, step.word, next);
        Step {
            idx: step.idx,
            word: next,
        }
    }

    /// Begin giving permit `id` back: `held(g) → releasing(g, pid)`, won once.
    /// `Ok` means the caller must now release one permit of the core semaphore,
    /// then [`finish`](Self::finish).
    pub(crate) fn release(&self, id: u64) -> Result<Step, HolderError> {
        let (idx, w) = self.slot_of(id, HolderError::AlreadyUsed)?;
        match w.state() {
            SlotState::Held => {}
            SlotState::Waiting | SlotState::Enqueuing => return Err(HolderError::StillWaiting),
            _ => return Err(HolderError::AlreadyUsed),
        }
        #[cfg(seawall_mutant = "holder_blind_release")]
        {
            // Mutant: check-then-store lets two racing releases both pass.
            let to = w.moved(SlotState::Releasing);
            self.slots[idx].store(to.0, Ordering::Release);
            return Ok(Step { idx, word: to });
        }
        #[cfg(not(seawall_mutant = "holder_blind_release"))]
        self.cas(idx, w, w.moved(SlotState::Releasing))
            .ok_or(HolderError::AlreadyUsed)
    }

    /// The core ticket of waiting id `id`, and the slot word it was read with.
    fn waiting(&self, id: u64) -> Result<(usize, Slot, u32), HolderError> {
        let (idx, w) = self.slot_of(id, HolderError::UnknownTicket)?;
        if w.state() != SlotState::Waiting {
            return Err(HolderError::UnknownTicket);
        }
        let t = self.tickets[idx].load(Ordering::Acquire);
        // The ticket read belongs to the word read if the slot still holds it.
        if self.load(idx) == w {
            Ok((idx, w, t))
        } else {
            Err(HolderError::UnknownTicket)
        }
    }

    /// The core ticket of waiting id `id`.
    pub fn waiting_ticket(&self, id: u64) -> Result<u32, HolderError> {
        self.waiting(id).map(|(_, _, t)| t)
    }

    /// Begin taking the grant of waiting id `id` (core ticket `t`):
    /// `waiting(g) → granting(g, pid)`, won once. The caller then acknowledges
    /// the grant on the core and [`granted`](Self::granted).
    pub(crate) fn grant(&self, id: u64, t: u32) -> Result<Step, HolderError> {
        let (idx, w, seen) = self.waiting(id)?;
        if seen != t {
            return Err(HolderError::UnknownTicket);
        }
        self.cas(idx, w, w.moved(SlotState::Granting))
            .ok_or(HolderError::UnknownTicket)
    }

    /// The grant of `step` is acknowledged: a held permit (of the process that
    /// took it).
    pub(crate) fn granted(&self, step: Step) -> Step {
        self.advance(step, SlotState::Held)
    }

    /// Begin cancelling waiting id `id` (core ticket `t`): `waiting(g) →
    /// cancelling(g, pid)`, won once. The caller then cancels `t` on the core
    /// and [`finish`](Self::finish)es.
    pub(crate) fn cancel(&self, id: u64, t: u32) -> Result<Step, HolderError> {
        let (idx, w, seen) = self.waiting(id)?;
        if seen != t {
            return Err(HolderError::UnknownTicket);
        }
        #[cfg(seawall_mutant = "holder_blind_cancel")]
        {
            // Mutant: check-then-store cancels over a grant made meanwhile.
            let to = w.moved(SlotState::Cancelling);
            self.slots[idx].store(to.0, Ordering::Release);
            return Ok(Step { idx, word: to });
        }
        #[cfg(not(seawall_mutant = "holder_blind_cancel"))]
        self.cas(idx, w, w.moved(SlotState::Cancelling))
            .ok_or(HolderError::UnknownTicket)
    }

    /// Reclaim takes over slot `idx`, read as `from` (a dead process's), moving
    /// it to `to` in its own name; `None` if the slot moved meanwhile (another
    /// reclaim took it).
    pub(crate) fn take_over(&self, idx: usize, from: Slot, to: SlotState) -> Option<Step> {
        #[cfg(seawall_mutant = "holder_reclaim_blind")]
        {
            // Mutant: a blind store takes the slot even if its holder just moved it.
            let to = from.moved(to);
            self.slots[idx].store(to.0, Ordering::Release);
            return Some(Step { idx, word: to });
        }
        #[cfg(not(seawall_mutant = "holder_reclaim_blind"))]
        self.cas(idx, from, from.moved(to))
    }

    /// The core ticket of a slot being cancelled or granted (read after the
    /// step that froze it).
    pub(crate) fn ticket_of(&self, step: Step) -> u32 {
        self.tickets[step.idx].load(Ordering::Relaxed)
    }

    /// Slot words, one by one (a scan, not a snapshot).
    pub(crate) fn words(&self) -> impl Iterator<Item = (usize, Slot)> + '_ {
        (0..N).map(|i| (i, self.load(i)))
    }

    /// Claims of every slot that have ended (the core answered them): each
    /// claim moved its slot to the next generation, so the claims made are the
    /// sum of the generations, less the claims still waiting for the core's
    /// answer. A scan; exact until a slot's generation wraps (2³⁰ claims).
    pub(crate) fn claims_ended(&self) -> u64 {
        self.words().fold(0u64, |n, (_, w)| {
            let asking = matches!(w.state(), SlotState::Acquiring | SlotState::Enqueuing);
            n + u64::from(w.generation()) - u64::from(asking)
        })
    }

    /// Permits and tickets held right now, a step in progress counted as what
    /// it stands for (a scan of the table: for snapshots, not the hot path).
    #[must_use]
    pub fn outstanding(&self) -> (u64, u64) {
        self.held_by(|_| true)
    }

    /// [`outstanding`](Self::outstanding) of the slots whose owner id
    /// `owner_matches` picks: metrics pick the dead, whose slots stay taken
    /// until a caller gives them back.
    pub fn held_by(&self, mut owner_matches: impl FnMut(u32) -> bool) -> (u64, u64) {
        self.words().fold((0, 0), |(p, t), (_, w)| match w.state() {
            SlotState::Free => (p, t),
            _ if !owner_matches(w.owner()) => (p, t),
            SlotState::Held | SlotState::Acquiring | SlotState::Releasing | SlotState::Granting => {
                (p + 1, t)
            }
            SlotState::Waiting | SlotState::Enqueuing | SlotState::Cancelling => (p, t + 1),
        })
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[allow(
        clippy::unnecessary_box_returns,
        reason = "built in place on the heap, as in a region"
    )]
    fn table<const N: usize>(salt: u64) -> Box<HolderTable<N>> {
        let mut b = Box::<HolderTable<N>>::new_uninit();
        HolderTable::init(&mut b, salt);
        // SAFETY: init wrote every field.
        unsafe { b.assume_init() }
    }

    fn held<const N: usize>(t: &HolderTable<N>) -> u64 {
        let claim = t.claim(false).unwrap();
        t.id(t.admitted(claim))
    }

    fn waiting<const N: usize>(t: &HolderTable<N>, ticket: u32) -> u64 {
        let claim = t.claim(true).unwrap();
        t.id(t.queued(claim, ticket))
    }

    #[test]
    fn the_word_packs_generation_owner_and_state_apart() {
        let w = Slot::new(GENERATION_MASK, OWNER_MASK, SlotState::Granting);
        assert_eq!(w.generation(), GENERATION_MASK);
        assert_eq!(w.owner(), OWNER_MASK);
        assert_eq!(w.state(), SlotState::Granting);
        for s in SlotState::ALL {
            assert_eq!(Slot::new(5, 77, s).state(), s);
        }
        assert_eq!(
            Slot::new(GENERATION_MASK + 1, 0, SlotState::Free).0,
            0,
            "generations wrap"
        );
    }

    #[test]
    fn a_claim_names_its_process_in_the_word_it_takes() {
        let t = table::<4>(7);
        let claim = t.claim(false).unwrap();
        let w = t.load(claim.idx);
        assert_eq!((w.state(), w.owner()), (SlotState::Acquiring, pid::owner()));
        assert_eq!(w.owner() & crate::owner::PID_MASK, std::process::id());
        assert_eq!(t.outstanding(), (1, 0), "a claim in progress is counted");
        t.finish(claim);
        assert_eq!(t.outstanding(), (0, 0));
    }

    #[test]
    fn a_permit_is_released_once() {
        let t = table::<8>(7);
        let id = held(&t);
        assert_eq!(t.outstanding(), (1, 0));
        let step = t.release(id).unwrap();
        assert_eq!(
            t.release(id),
            Err(HolderError::AlreadyUsed),
            "while releasing"
        );
        t.finish(step);
        assert_eq!(t.release(id), Err(HolderError::AlreadyUsed));
        assert_eq!(t.outstanding(), (0, 0));
    }

    #[test]
    fn a_ticket_is_granted_or_cancelled_once() {
        let t = table::<8>(9);
        let a = waiting(&t, 41);
        let b = waiting(&t, 42);
        assert_eq!(t.outstanding(), (0, 2));
        assert_eq!(t.waiting_ticket(a), Ok(41));
        assert_eq!(t.release(a), Err(HolderError::StillWaiting));
        // A grant needs the right core ticket too.
        assert_eq!(t.grant(a, 42), Err(HolderError::UnknownTicket));
        let g = t.grant(a, 41).unwrap();
        assert_eq!(
            t.cancel(a, 41),
            Err(HolderError::UnknownTicket),
            "while granting"
        );
        let _ = t.granted(g);
        assert_eq!(t.outstanding(), (1, 1));
        assert_eq!(t.waiting_ticket(a), Err(HolderError::UnknownTicket));
        let r = t.release(a).unwrap();
        t.finish(r);
        let c = t.cancel(b, 42).unwrap();
        assert_eq!(t.cancel(b, 42), Err(HolderError::UnknownTicket));
        t.finish(c);
        assert_eq!(t.grant(b, 42), Err(HolderError::UnknownTicket));
        assert_eq!(t.outstanding(), (0, 0));
    }

    #[test]
    fn foreign_and_forged_ids_fail() {
        let a = table::<4>(1);
        let id = held(&a);
        assert_eq!(a.release(id | 0xFFFF), Err(HolderError::Foreign));
        assert_eq!(a.release(u64::MAX), Err(HolderError::Foreign));
        let b = table::<4>(2);
        let all: Vec<u64> = (0..4).map(|_| held(&b)).collect();
        assert!(b.claim(false).is_none());
        assert!(matches!(
            b.release(id),
            Err(HolderError::AlreadyUsed | HolderError::Foreign)
        ));
        // The high half of one's own id with a neighbour's index.
        let forged = (all[0] & !INDEX_MASK) | (all[1] & INDEX_MASK);
        assert_ne!(forged, all[1]);
        assert_eq!(b.release(forged), Err(HolderError::AlreadyUsed));
        assert_eq!(b.outstanding(), (4, 0));
    }

    #[test]
    fn a_reused_slot_refuses_the_old_id() {
        let t = table::<1>(5);
        let first = held(&t);
        t.finish(t.release(first).unwrap());
        let second = waiting(&t, 3);
        assert_ne!(first, second);
        assert_eq!(t.release(first), Err(HolderError::AlreadyUsed));
        assert_eq!(t.cancel(first, 3), Err(HolderError::UnknownTicket));
        t.finish(t.cancel(second, 3).unwrap());
    }

    #[test]
    fn a_take_over_moves_only_the_word_it_read() {
        let t = table::<1>(5);
        let id = held(&t);
        let w = t.load(0);
        t.finish(t.release(id).unwrap());
        assert!(t.take_over(0, w, SlotState::Releasing).is_none());
        let _ = held(&t);
        let w = t.load(0);
        let step = t.take_over(0, w, SlotState::Releasing).unwrap();
        assert_eq!(t.load(0).state(), SlotState::Releasing);
        t.finish(step);
        assert_eq!(t.outstanding(), (0, 0));
    }

    #[test]
    fn concurrent_double_release_succeeds_exactly_once() {
        use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
        let t = table::<1024>(3);
        let wins = AtomicU32::new(0);
        let ids: Vec<u64> = (0..1000).map(|_| held(&t)).collect();
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for &id in &ids {
                        if let Ok(step) = t.release(id) {
                            t.finish(step);
                            wins.fetch_add(1, Relaxed);
                        }
                    }
                });
            }
        });
        assert_eq!(wins.load(Relaxed), 1000);
        assert_eq!(t.outstanding(), (0, 0));
    }
}
