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
//! per-thread cursor (so threads and processes spread over the table), a release
//! is one CAS.

use core::mem::MaybeUninit;
use core::sync::atomic::Ordering;

use crossbeam_utils::CachePadded;
#[cfg(loom)]
use loom::sync::atomic::AtomicU64;
#[cfg(not(loom))]
use portable_atomic::AtomicU64;

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

/// Where this thread looks for a free slot next: a hint only (any start is
/// correct), spreading threads and processes over the table.
#[cfg(not(loom))]
mod cursor {
    use core::cell::Cell;

    thread_local! {
        static CURSOR: Cell<Option<usize>> = const { Cell::new(None) };
    }

    pub(super) fn get(n: usize) -> usize {
        CURSOR.with(Cell::get).unwrap_or_else(|| fresh(0, n))
    }

    pub(super) fn set(next: usize) {
        CURSOR.with(|c| c.set(Some(next)));
    }

    /// A start index that differs between threads and processes.
    pub(super) fn fresh(hint: u64, n: usize) -> usize {
        let here = CURSOR.with(|c| core::ptr::from_ref(c) as u64);
        let pid = u64::from(std::process::id()) << 32;
        (seawall_core::mix64(here ^ hint ^ pid) as usize) % n
    }
}

/// Under loom every execution must be the same function of the schedule: start at 0.
#[cfg(loom)]
mod cursor {
    pub(super) fn get(_: usize) -> usize {
        0
    }
    pub(super) fn set(_: usize) {}
    pub(super) fn fresh(_: u64, _: usize) -> usize {
        0
    }
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
            for i in 0..N {
                slots.add(i).write(AtomicU64::new(0));
            }
        }
    }

    fn salt(&self) -> u32 {
        *self.salt as u32
    }

    /// Take a free slot for a call admitted in `epoch`; its permit id, or `None`
    /// when all `N` are held.
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
                    return Some((u64::from(g ^ self.salt()) << 32) | idx as u64);
                }
                #[cfg(not(seawall_mutant = "permit_blind_claim"))]
                match cell.compare_exchange(w, held(g, epoch), Ordering::AcqRel, Ordering::Relaxed)
                {
                    Ok(_) => {
                        cursor::set((idx + 1) % N);
                        return Some((u64::from(g ^ self.salt()) << 32) | idx as u64);
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
        let g = ((id >> 32) as u32) ^ self.salt();
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
