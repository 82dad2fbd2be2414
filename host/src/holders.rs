//! Single-use holders of a semaphore: each permit and each queued ticket a C
//! caller (or a process sharing the semaphore) holds is a slot of this table, so
//! a permit released twice, a ticket cancelled twice or polled after it was
//! taken, or an id of another semaphore is an error code — never a second
//! `release` of the core semaphore, which would hand out a permit nobody gave
//! back (the core's raw protocol trusts its caller to give each permit back once).
//!
//! * slot word: `generation (30) | ticket (32) | state (2)` with state `FREE`,
//!   `HELD` (a permit) or `WAITING` (a ticket of the core's queue).
//! * claim: `free(g) → held(g + 1)` or `→ waiting(g + 1, ticket)` with one CAS;
//!   the id is `(g + 1) ^ salt` in the high half and the slot index in the low
//!   half. A ticket and the permit it turns into share the id.
//! * every later move is one CAS from the exact word the id names:
//!   release `held(g) → free(g)`, grant `waiting(g, t) → held(g)`, cancel
//!   `waiting(g, t) → free(g)`. The CAS winner alone makes the matching call on the
//!   core semaphore, so each permit is given back once and each ticket is
//!   either taken (granted) or cancelled, never both.
//!
//! As in the breaker's permit table ([`crate::permits`]) the salt (random per
//! table) makes an id of another semaphore fail, each slot has an owner word
//! (`generation (10 low bits) | pid (22 bits)`, stored right after the claim),
//! and [`HolderTable::reclaim`] frees, with the same CASes, every slot whose owner
//! word belongs to the slot's current generation and names a process that no
//! longer exists; the caller then releases the dead holder's permit or cancels
//! its ticket on the core semaphore. A slot's owner is the process that acquired
//! the permit or queued the ticket, whoever holds the id now.

use core::mem::MaybeUninit;
use core::sync::atomic::Ordering;

use crate::sync::{AtomicU32, AtomicU64};
use crossbeam_utils::CachePadded;

use crate::owner::{claimed_by_dead_process, cursor, owner_word, pid};

const FREE: u64 = 0;
const HELD: u64 = 1;
const WAITING: u64 = 2;
const STATE_MASK: u64 = 0b11;
const TICKET_SHIFT: u32 = 2;
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
    owners: [AtomicU32; N],
}

const fn word(generation: u32, ticket: u32, state: u64) -> u64 {
    ((generation & GENERATION_MASK) as u64) << GENERATION_SHIFT
        | (ticket as u64) << TICKET_SHIFT
        | state
}

const fn generation(w: u64) -> u32 {
    (w >> GENERATION_SHIFT) as u32
}

const fn ticket(w: u64) -> u32 {
    (w >> TICKET_SHIFT) as u32
}

const fn state(w: u64) -> u64 {
    w & STATE_MASK
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
            let owners = (&raw mut (*p).owners).cast::<AtomicU32>();
            for i in 0..N {
                slots.add(i).write(AtomicU64::new(word(0, 0, FREE)));
                owners.add(i).write(AtomicU32::new(0));
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

    fn id(&self, generation: u32, idx: usize) -> u64 {
        (u64::from(self.tag(generation, idx)) << 32) | idx as u64
    }

    /// The slot an id names and the generation it holds now; an id whose tag is
    /// not that generation's names no live holder (`stale`).
    fn slot_of(&self, id: u64, stale: HolderError) -> Result<(&AtomicU64, u32), HolderError> {
        let Some((idx, slot)) = usize::try_from(id & INDEX_MASK)
            .ok()
            .and_then(|i| self.slots.get(i).map(|s| (i, s)))
        else {
            return Err(HolderError::Foreign);
        };
        let g = generation(slot.load(Ordering::Acquire));
        if (id >> 32) as u32 == self.tag(g, idx) {
            Ok((slot, g))
        } else {
            Err(stale)
        }
    }

    /// Take a free slot for a permit; its id, or `None` when all `N` are taken.
    #[must_use = "an unused id leaves its slot held"]
    pub fn claim_held(&self) -> Option<u64> {
        self.claim(0, HELD)
    }

    /// Take a free slot for core ticket `t`; its id, or `None` when all `N` are
    /// taken.
    #[must_use = "an unused id leaves its slot held"]
    pub fn claim_waiting(&self, t: u32) -> Option<u64> {
        self.claim(t, WAITING)
    }

    fn claim(&self, t: u32, to: u64) -> Option<u64> {
        let mut idx = cursor::get(N);
        // Invariant: a slot goes free(g) → held/waiting(g + 1) only by this CAS,
        // and back to free(g') only by a CAS from the exact word of its id, so
        // each generation of a slot belongs to exactly one claim.
        // One more than the table: a jump after the first try still sees every slot.
        for tried in 0..=N {
            let cell = &self.slots[idx];
            let w = cell.load(Ordering::Relaxed);
            if state(w) == FREE {
                let g = generation(w).wrapping_add(1) & GENERATION_MASK;
                match cell.compare_exchange(w, word(g, t, to), Ordering::AcqRel, Ordering::Relaxed)
                {
                    Ok(_) => {
                        self.owners[idx].store(owner_word(g, pid::current()), Ordering::Release);
                        cursor::set((idx + 1) % N);
                        return Some(self.id(g, idx));
                    }
                    Err(_) if tried == 0 => {
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

    /// Give permit `id` back once. `Ok` means the caller must now release one
    /// permit of the core semaphore.
    pub fn release(&self, id: u64) -> Result<(), HolderError> {
        let (cell, g) = self.slot_of(id, HolderError::AlreadyUsed)?;
        #[cfg(seawall_mutant = "holder_blind_release")]
        {
            // Mutant: check-then-store lets two racing releases both pass.
            if cell.load(Ordering::Acquire) == word(g, 0, HELD) {
                cell.store(word(g, 0, FREE), Ordering::Release);
                return Ok(());
            }
        }
        match cell.compare_exchange(
            word(g, 0, HELD),
            word(g, 0, FREE),
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => Ok(()),
            Err(cur) if state(cur) == WAITING && generation(cur) == g => {
                Err(HolderError::StillWaiting)
            }
            Err(_) => Err(HolderError::AlreadyUsed),
        }
    }

    /// The core ticket of waiting id `id`.
    pub fn waiting_ticket(&self, id: u64) -> Result<u32, HolderError> {
        let (cell, g) = self.slot_of(id, HolderError::UnknownTicket)?;
        let w = cell.load(Ordering::Acquire);
        if state(w) == WAITING && generation(w) == g {
            Ok(ticket(w))
        } else {
            Err(HolderError::UnknownTicket)
        }
    }

    /// Ticket `id` (core ticket `t`) was granted: it becomes a held permit with
    /// the same id. Fails when the ticket was taken or cancelled meanwhile.
    pub fn grant(&self, id: u64, t: u32) -> Result<(), HolderError> {
        let (cell, g) = self.slot_of(id, HolderError::UnknownTicket)?;
        cell.compare_exchange(
            word(g, t, WAITING),
            word(g, 0, HELD),
            Ordering::AcqRel,
            Ordering::Acquire,
        )
        .map(drop)
        .map_err(|_| HolderError::UnknownTicket)
    }

    /// Ticket `id` (core ticket `t`) gives up. `Ok` means the caller must now
    /// cancel `t` on the core semaphore.
    pub fn cancel(&self, id: u64, t: u32) -> Result<(), HolderError> {
        let (cell, g) = self.slot_of(id, HolderError::UnknownTicket)?;
        #[cfg(seawall_mutant = "holder_blind_cancel")]
        {
            // Mutant: check-then-store cancels over a grant made meanwhile.
            if cell.load(Ordering::Acquire) == word(g, t, WAITING) {
                cell.store(word(g, 0, FREE), Ordering::Release);
                return Ok(());
            }
        }
        cell.compare_exchange(
            word(g, t, WAITING),
            word(g, 0, FREE),
            Ordering::AcqRel,
            Ordering::Acquire,
        )
        .map(drop)
        .map_err(|_| HolderError::UnknownTicket)
    }

    /// Free every slot held by a process that `alive` says is gone, calling
    /// `held()` for each permit (the caller releases it on the core semaphore) and
    /// `waiting(t)` for each ticket (the caller cancels it). Returns how many of
    /// each. A slot whose owner has not stored its pid yet is left alone.
    pub fn reclaim(
        &self,
        alive: impl Fn(u32) -> bool,
        mut held: impl FnMut(),
        mut waiting: impl FnMut(u32),
    ) -> (u64, u64) {
        let (mut permits, mut tickets) = (0, 0);
        for (slot, owner) in self.slots.iter().zip(&self.owners) {
            let w = slot.load(Ordering::Acquire);
            if state(w) == FREE {
                continue;
            }
            let g = generation(w);
            // Invariant: the CAS below succeeds only if the slot still holds the
            // word read, so against a racing release, grant or cancel exactly one
            // of the two moves it (the owner check is `owner`'s).
            if !claimed_by_dead_process(owner, g, &alive) {
                continue;
            }
            let freed = word(g, 0, FREE);
            #[cfg(seawall_mutant = "holder_reclaim_blind")]
            let won = {
                // Mutant: a blind store frees the slot even if its holder just did.
                slot.store(freed, Ordering::Release);
                true
            };
            #[cfg(not(seawall_mutant = "holder_reclaim_blind"))]
            let won = slot
                .compare_exchange(w, freed, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok();
            if won {
                if state(w) == HELD {
                    held();
                    permits += 1;
                } else {
                    waiting(ticket(w));
                    tickets += 1;
                }
            }
        }
        (permits, tickets)
    }

    /// [`reclaim`](Self::reclaim) with the OS's answer: a process is gone when
    /// `kill(pid, 0)` says there is no such process or, on Linux, when it has
    /// exited and is not reaped yet (a zombie).
    #[cfg(not(loom))]
    pub fn reclaim_dead(&self, held: impl FnMut(), waiting: impl FnMut(u32)) -> (u64, u64) {
        self.reclaim(pid::alive, held, waiting)
    }

    /// Permits and tickets held right now (a scan of the table: for snapshots,
    /// not the hot path).
    #[must_use]
    pub fn outstanding(&self) -> (u64, u64) {
        self.slots
            .iter()
            .fold((0, 0), |(p, t), s| match state(s.load(Ordering::Relaxed)) {
                HELD => (p + 1, t),
                WAITING => (p, t + 1),
                _ => (p, t),
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

    #[test]
    fn the_word_packs_generation_ticket_and_state_apart() {
        let w = word(GENERATION_MASK, u32::MAX, WAITING);
        assert_eq!(generation(w), GENERATION_MASK);
        assert_eq!(ticket(w), u32::MAX);
        assert_eq!(state(w), WAITING);
        assert_eq!(w, u64::MAX - 1, "30 + 32 + 2 bits fill the word");
        assert_eq!(word(GENERATION_MASK + 1, 0, FREE), 0, "generations wrap");
    }

    #[test]
    fn a_permit_is_released_once() {
        let t = table::<8>(7);
        let id = t.claim_held().unwrap();
        assert_eq!(t.outstanding(), (1, 0));
        assert_eq!(t.release(id), Ok(()));
        assert_eq!(t.release(id), Err(HolderError::AlreadyUsed));
        assert_eq!(t.outstanding(), (0, 0));
    }

    #[test]
    fn a_ticket_is_granted_or_cancelled_once() {
        let t = table::<8>(9);
        let a = t.claim_waiting(41).unwrap();
        let b = t.claim_waiting(42).unwrap();
        assert_eq!(t.outstanding(), (0, 2));
        assert_eq!(t.waiting_ticket(a), Ok(41));
        assert_eq!(t.release(a), Err(HolderError::StillWaiting));
        // A grant needs the right core ticket too.
        assert_eq!(t.grant(a, 42), Err(HolderError::UnknownTicket));
        assert_eq!(t.grant(a, 41), Ok(()));
        assert_eq!(t.outstanding(), (1, 1));
        assert_eq!(t.waiting_ticket(a), Err(HolderError::UnknownTicket));
        assert_eq!(t.cancel(a, 41), Err(HolderError::UnknownTicket));
        assert_eq!(t.release(a), Ok(()), "the ticket's id is now the permit's");
        assert_eq!(t.cancel(b, 42), Ok(()));
        assert_eq!(t.cancel(b, 42), Err(HolderError::UnknownTicket));
        assert_eq!(t.grant(b, 42), Err(HolderError::UnknownTicket));
        assert_eq!(t.outstanding(), (0, 0));
    }

    #[test]
    fn foreign_ids_and_other_tables_ids_fail() {
        let a = table::<4>(1);
        let b = table::<4>(2);
        let id = a.claim_held().unwrap();
        assert_eq!(a.release(id | 0xFFFF), Err(HolderError::Foreign));
        assert_eq!(a.release(u64::MAX), Err(HolderError::Foreign));
        // Hold every slot of `b`: the id of `a` still names none of them.
        let held: Vec<u64> = (0..4).map(|_| b.claim_held().unwrap()).collect();
        assert_eq!(b.claim_held(), None);
        assert!(matches!(
            b.release(id),
            Err(HolderError::AlreadyUsed | HolderError::Foreign)
        ));
        assert_eq!(b.outstanding(), (4, 0));
        for h in held {
            b.release(h).unwrap();
        }
        a.release(id).unwrap();
    }

    #[test]
    fn a_forged_id_of_another_slot_is_refused_and_its_holder_keeps_it() {
        // The high half of one's own id with a neighbour's index: with a salt
        // shared by every slot it named the neighbour's permit exactly.
        let t = table::<8>(0x5eed);
        let mine = t.claim_held().unwrap();
        let theirs = t.claim_held().unwrap();
        let forged = (mine & !INDEX_MASK) | (theirs & INDEX_MASK);
        assert_ne!(forged, theirs, "ids of two slots differ above the index");
        assert_eq!(t.release(forged), Err(HolderError::AlreadyUsed));
        assert_eq!(t.outstanding(), (2, 0));
        assert_eq!(t.release(theirs), Ok(()));
        assert_eq!(t.release(mine), Ok(()));
    }

    #[test]
    fn a_reused_slot_refuses_the_old_id() {
        let t = table::<1>(5);
        let first = t.claim_held().unwrap();
        t.release(first).unwrap();
        let second = t.claim_waiting(3).unwrap();
        assert_ne!(first, second);
        assert_eq!(t.release(first), Err(HolderError::AlreadyUsed));
        assert_eq!(t.cancel(first, 3), Err(HolderError::UnknownTicket));
        assert_eq!(t.cancel(second, 3), Ok(()));
    }

    #[test]
    fn holders_of_dead_owners_are_reclaimed_once() {
        let t = table::<8>(11);
        let me = std::process::id();
        let p = t.claim_held().unwrap();
        let w = t.claim_waiting(77).unwrap();
        assert_eq!(
            t.reclaim(|_| true, || panic!("alive"), |_| panic!("alive")),
            (0, 0)
        );
        let mut released = 0;
        let mut cancelled = Vec::new();
        let n = t.reclaim(|pid| pid != me, || released += 1, |tk| cancelled.push(tk));
        assert_eq!(n, (1, 1));
        assert_eq!((released, cancelled), (1, vec![77]));
        assert_eq!(t.release(p), Err(HolderError::AlreadyUsed));
        assert_eq!(t.waiting_ticket(w), Err(HolderError::UnknownTicket));
        assert_eq!(t.outstanding(), (0, 0));
    }

    #[test]
    fn an_owner_word_of_another_generation_is_not_trusted() {
        let t = table::<1>(0);
        let id = t.claim_held().unwrap();
        let g = generation(t.slots[0].load(Ordering::Relaxed));
        t.owners[0].store(owner_word(g.wrapping_sub(1), 12345), Ordering::Relaxed);
        assert_eq!(
            t.reclaim(|_| false, || panic!("live claim"), |_| {}),
            (0, 0)
        );
        t.owners[0].store(owner_word(g, 12345), Ordering::Relaxed);
        assert_eq!(t.reclaim(|pid| pid != 12345, || {}, |_| {}), (1, 0));
        assert_eq!(t.release(id), Err(HolderError::AlreadyUsed));
    }

    #[test]
    fn concurrent_double_release_succeeds_exactly_once() {
        use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
        let t = table::<1024>(3);
        let wins = AtomicU32::new(0);
        let ids: Vec<u64> = (0..1000).map(|_| t.claim_held().unwrap()).collect();
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for &id in &ids {
                        if t.release(id).is_ok() {
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
