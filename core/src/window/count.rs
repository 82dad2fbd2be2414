//! Count-based sliding window: the last `size` outcomes exactly (DESIGN §2).
//!
//! # Protocol
//! One 128-bit word, `agg`, holds the write position (`tick`, `idx`), the generation
//! and the four counts. Each of the `size` slots remembers who wrote it last.
//! A record at position `tick`:
//! 1. *claims* slot `idx` with one CAS, writing its own outcome **and the outcome
//!    it evicts** (the slot's previous content, when the window is full: then that
//!    slot holds the outcome committed one lap earlier in this generation);
//! 2. *commits* with one CAS on `agg`: `tick + 1`, counts `+ mine − evicted`.
//!
//! Anyone who finds a claim for the current position that is not yet committed
//! commits it for its owner, since the claim carries everything the commit needs:
//! a preempted writer never blocks the others (lock-free), and the counts never
//! go negative because an outcome is subtracted only by the commit that evicts it,
//! which follows the commit that added it.
//!
//! A new generation is a CAS of `agg` to zero counts (the tick goes on); until the
//! window is full again nothing is evicted, so slots of older generations never
//! count. Which of two different generations is the live one is not guessed from
//! the numbers (they wrap): the caller says whether the record's generation is the
//! breaker's current closed epoch, and a record that is not current is dropped.

use crossbeam_utils::CachePadded;

use super::{Recorded, Sample, SlidingWindow, WindowConfig, WindowCounts};
use crate::corrupt::{Corrupt, MAX_RETRIES};
use crate::error::{ConfigError, Field, Problem};
use crate::sync::{AtomicU64, AtomicU128, Ordering};

/// Largest supported window size: the counts and the write index are 12-bit fields
/// of one atomic word, next to a tick and a 28-bit generation.
pub const MAX_COUNT_WINDOW: usize = 4095;

// agg, low 64 bits: tick (32) | generation (28);
// high 64 bits: calls | failures | slow | slow failures | idx, 12 bits each.
const GEN_SHIFT: u32 = 32;
const GEN_MASK: u64 = (1 << 28) - 1;
const F12: u64 = (1 << 12) - 1;
// slot: tick (32) | low 16 bits of the generation | flags; an outcome is two
// bits, failed and slow, at MINE (the claimer's) and OLD (the one it evicts).
const WRITTEN: u64 = 1 << 48;
const MINE: u32 = 49;
const OLD_PRESENT: u64 = 1 << 51;
const OLD: u32 = 52;

/// Count-based window holding up to `N` outcomes (`N ≤ 4 095`); the configured
/// `size` may be smaller.
///
/// `size_of::<CountWindow<N>>()` is `8·N` bytes for the slots plus one cache line
/// (128 bytes on x86-64 and aarch64) for the shared counts, plus 8 bytes of
/// configuration, rounded to the cache-line alignment.
#[repr(C)]
pub struct CountWindow<const N: usize> {
    agg: CachePadded<AtomicU128>,
    slots: [AtomicU64; N],
    size: u32,
}

/// `agg` unpacked, its four counts kept as the 48-bit word they are in `agg`
/// (12 bits each: calls, failures, slow, slow failures), so a commit adds and
/// subtracts all four at once.
#[derive(Clone, Copy)]
struct Agg {
    tick: u32,
    generation: u32,
    idx: u16,
    counts: u64,
}

/// The four 12-bit counts of the high half of `agg`.
const COUNTS_MASK: u64 = (1 << 48) - 1;
/// The lowest bit of each count but the first, and the bit above the last: a
/// carry or a borrow out of a count shows there.
const FIELD_EDGES: u64 = (1 << 12) | (1 << 24) | (1 << 36) | (1 << 48);

impl Agg {
    fn unpack(v: u128) -> Self {
        let lo = v as u64;
        let hi = (v >> 64) as u64;
        Self {
            tick: lo as u32,
            generation: ((lo >> GEN_SHIFT) & GEN_MASK) as u32,
            idx: ((hi >> 48) & F12) as u16,
            counts: hi & COUNTS_MASK,
        }
    }

    fn pack(self) -> u128 {
        let lo = u64::from(self.tick) | ((u64::from(self.generation) & GEN_MASK) << GEN_SHIFT);
        let hi = ((u64::from(self.idx) & F12) << 48) | (self.counts & COUNTS_MASK);
        u128::from(lo) | (u128::from(hi) << 64)
    }

    fn calls(self) -> u32 {
        (self.counts & F12) as u32
    }

    fn window_counts(self) -> WindowCounts {
        let field = |i: u32| (self.counts >> (12 * i)) & F12;
        WindowCounts {
            calls: field(0),
            failures: field(1),
            slow: field(2),
            slow_failures: field(3),
        }
    }
}

/// One outcome as the four counts add it, by its two bits (failed, slow).
const SAMPLE_COUNTS: [u64; 4] = [1, 1 | 1 << 12, 1 | 1 << 24, 1 | 1 << 12 | 1 << 24 | 1 << 36];

/// The counts of the outcome whose two bits are at `shift` in slot word `s`.
fn sample_counts(s: u64, shift: u32) -> u64 {
    SAMPLE_COUNTS[((s >> shift) & 3) as usize]
}

fn slot_tick(s: u64) -> u32 {
    s as u32
}

fn slot_gen(s: u64) -> u16 {
    (s >> GEN_SHIFT) as u16
}

/// The low 16 bits of a generation, as a slot stores them.
fn gen16(generation: u32) -> u16 {
    generation as u16
}

impl<const N: usize> CountWindow<N> {
    /// An empty window of `size` outcomes (`1 ..= N`).
    pub fn with_size(size: u32) -> Result<Self, ConfigError> {
        let max = N.min(MAX_COUNT_WINDOW) as u64;
        if size == 0 {
            return Err(ConfigError::new(Field::WindowSize, Problem::Zero));
        }
        ConfigError::check_range(Field::WindowSize, u64::from(size), 1, max)?;
        Ok(Self {
            agg: CachePadded::new(AtomicU128::new(0)),
            slots: core::array::from_fn(|_| AtomicU64::new(0)),
            size,
        })
    }

    /// Record one outcome (standalone use, one generation).
    pub fn record(&self, sample: Sample) {
        let _ = self.record_gen(0, sample, 0, 0, || true);
    }

    /// The counts now (standalone use).
    #[must_use]
    pub fn counts(&self) -> WindowCounts {
        self.counts_gen(0, 0)
    }

    /// The `agg` that commits `claim` at position `a`. Corrupt when the claim
    /// evicts an outcome the counts do not hold (never, for words this code wrote).
    fn commit(&self, a: Agg, claim: u64) -> Result<Agg, Corrupt> {
        let mine = sample_counts(claim, MINE);
        let old = if claim & OLD_PRESENT == 0 {
            0
        } else {
            sample_counts(claim, OLD)
        };
        let next_idx = if u32::from(a.idx) + 1 >= self.size {
            0
        } else {
            a.idx + 1
        };
        // Never below zero: `old` was added by the commit one lap earlier; and
        // subtracting first keeps a full window of 4 095 within range (no count
        // exceeds the size, so adding one cannot overflow). A count that would
        // borrow from or carry into its neighbour (`x ^ y ^ (x ± y)` has the bit
        // where it does) is corrupt.
        let less = a.counts.wrapping_sub(old);
        let counts = less.wrapping_add(mine);
        if ((a.counts ^ old ^ less) | (less ^ mine ^ counts)) & FIELD_EDGES != 0 {
            return Err(Corrupt);
        }
        Ok(Agg {
            tick: a.tick.wrapping_add(1),
            generation: a.generation,
            idx: next_idx,
            counts,
        })
    }

    /// The configured size, checked: the field lives in the structure, which a
    /// shared region lets anyone write.
    fn checked_size(&self) -> Result<u32, Corrupt> {
        let size = self.size;
        if size == 0 || size as usize > N.min(MAX_COUNT_WINDOW) {
            return Err(Corrupt);
        }
        Ok(size)
    }

    /// The claim a record at position `a` writes over the slot value `s`.
    fn claim(&self, a: Agg, s: u64, sample: Sample) -> u64 {
        // A full window's slot `idx` holds the outcome committed one lap ago in this
        // generation (every position since the reset was committed in it); a window
        // not yet full evicts nothing, whatever older generation the slot holds.
        let lap_ago = a.tick.wrapping_sub(self.size);
        let full = a.calls() == self.size;
        let evicts = full && s & WRITTEN != 0 && slot_tick(s) == lap_ago;
        let mine = u64::from(sample.failure) | (u64::from(sample.slow) << 1);
        let mut c = u64::from(a.tick)
            | (u64::from(gen16(a.generation)) << GEN_SHIFT)
            | WRITTEN
            | (mine << MINE);
        if evicts {
            // The evicted slot's own outcome, moved to the OLD bits.
            c |= OLD_PRESENT | (((s >> MINE) & 3) << OLD);
        }
        c
    }
}

impl<const N: usize> SlidingWindow for CountWindow<N> {
    fn new(config: &WindowConfig) -> Result<Self, ConfigError> {
        match *config {
            WindowConfig::Count { size } => Self::with_size(size),
            WindowConfig::Time { .. } => {
                Err(ConfigError::new(Field::WindowKind, Problem::KindMismatch))
            }
        }
    }

    fn config(&self) -> WindowConfig {
        WindowConfig::Count { size: self.size }
    }

    fn record_gen(
        &self,
        generation: u32,
        sample: Sample,
        _now: u64,
        gate: u64,
        is_current: impl Fn() -> bool,
    ) -> Result<Recorded, Corrupt> {
        self.record_counts(generation, sample, gate, is_current)
    }

    fn successes(&self) -> u64 {
        0
    }

    fn counts_gen(&self, generation: u32, _now: u64) -> WindowCounts {
        let a = Agg::unpack(self.agg.load(Ordering::Acquire));
        if a.generation == generation & GEN_MASK as u32 {
            a.window_counts()
        } else {
            WindowCounts::default()
        }
    }

    fn latest_gen(&self) -> Option<u32> {
        Some(Agg::unpack(self.agg.load(Ordering::Acquire)).generation)
    }

    fn gate(&self, minimum_calls: u64) -> u64 {
        minimum_calls.min(u64::from(self.size))
    }
}

impl<const N: usize> CountWindow<N> {
    /// Commit `claim` at position `a` (read as `raw`): the `agg` after it when
    /// this CAS committed it, `None` when `agg` moved on first.
    fn try_commit(&self, raw: u128, a: Agg, claim: u64) -> Result<Option<Agg>, Corrupt> {
        let done = self.commit(a, claim)?;
        Ok(self
            .agg
            .compare_exchange(raw, done.pack(), Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
            .then_some(done))
    }

    /// The record of [`SlidingWindow::record_gen`]: the counts to evaluate
    /// (none for a fast success into a window that already holds `gate` calls).
    /// The breaker counts this window's successes itself.
    fn record_counts(
        &self,
        generation: u32,
        sample: Sample,
        gate: u64,
        is_current: impl Fn() -> bool,
    ) -> Result<Recorded, Corrupt> {
        // Invariant of this loop: `agg` only moves forward by committing the claim in
        // slot `agg.idx` for position `agg.tick`, or to another generation when the
        // record that moves it is current; a slot is only ever overwritten from a
        // value of an earlier position (or an abandoned claim of another generation,
        // by a current record), so a committed outcome stays in its slot until the
        // commit one lap later evicts it, and a stale snapshot of `agg` can never
        // claim over it. `is_current` is asked after the value it judges was read, so
        // a generation that became current since then has already changed that value
        // and the CAS from it fails.
        // Every pass either fails a CAS (someone else moved on) or waits for a
        // helper's read to catch up: bounded by MAX_RETRIES, since a corrupted
        // slot or `agg` could otherwise keep it passing for ever.
        let generation = generation & GEN_MASK as u32;
        let size = self.checked_size()?;
        let mut passes = 0;
        loop {
            passes += 1;
            if passes > MAX_RETRIES {
                return Err(Corrupt);
            }
            let raw = self.agg.load(Ordering::Acquire);
            let a = Agg::unpack(raw);
            if a.generation != generation {
                if !is_current() {
                    return Ok(Recorded::default());
                }
                let fresh = Agg {
                    generation,
                    counts: 0,
                    ..a
                };
                let _ = self.agg.compare_exchange(
                    raw,
                    fresh.pack(),
                    Ordering::AcqRel,
                    Ordering::Acquire,
                );
                continue;
            }
            if u32::from(a.idx) >= size {
                return Err(Corrupt);
            }
            let slot = self.slots.get(usize::from(a.idx)).ok_or(Corrupt)?;
            let s = slot.load(Ordering::Acquire);
            if s & WRITTEN != 0 {
                let behind = a.tick.wrapping_sub(slot_tick(s));
                if behind == 0 {
                    if slot_gen(s) == gen16(generation) {
                        // Claimed for this position, maybe not committed: help its owner.
                        self.try_commit(raw, a, s)?;
                        continue;
                    }
                    // Another generation claimed this position: abandoned by a reset
                    // (overwrite it), unless that generation is the live one and this
                    // record is the stale one.
                    #[cfg(not(seawall_mutant = "count_stale_claim"))]
                    if !is_current() {
                        return Ok(Recorded::default());
                    }
                } else if cfg!(not(seawall_mutant = "count_stale_claim")) && behind > u32::MAX / 2 {
                    // The slot is ahead of the `agg` read above: read again.
                    continue;
                }
            }
            let claim = self.claim(a, s, sample);
            if slot
                .compare_exchange(s, claim, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
            {
                continue;
            }
            #[cfg(not(seawall_mutant = "count_blind_commit"))]
            {
                // Fails only when someone already committed this claim, or a newer
                // generation reset the window (then this outcome is stale anyway).
                if let Some(done) = self.try_commit(raw, a, claim)? {
                    // The common case: these are the counts right after this
                    // outcome, which can decide nothing when it is a fast success
                    // into a window already past the gate (the rates can only fall).
                    let quiet = sample == Sample::default() && u64::from(a.calls()) >= gate;
                    return Ok(Recorded {
                        counts: (!quiet).then(|| done.window_counts()),
                        kept: false,
                    });
                }
            }
            #[cfg(seawall_mutant = "count_blind_commit")]
            {
                // Mutant: commit by blind store, clobbering a concurrent helper/commit.
                self.agg
                    .store(self.commit(a, claim)?.pack(), Ordering::Release);
            }
            break;
        }
        let a = Agg::unpack(self.agg.load(Ordering::Acquire));
        Ok(Recorded {
            counts: (a.generation == generation).then(|| a.window_counts()),
            kept: false,
        })
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    const FAIL: Sample = Sample {
        failure: true,
        slow: false,
    };

    /// Record `FAIL` on another thread; what it returned, or `None` when it was
    /// still running after a second.
    fn record_within_a_second(w: CountWindow<8>) -> Option<Result<Recorded, Corrupt>> {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(w.record_gen(0, FAIL, 0, 0, || true));
        });
        rx.recv_timeout(Duration::from_secs(1)).ok()
    }

    #[test]
    fn a_slot_claimed_ahead_of_the_write_position_ends_as_corrupt() {
        // One record: tick 1, write index 1. Slot 1 then claims position 5, which
        // `agg` will never reach: an honest slot is ahead only while a helper's
        // commit is in flight, so re-reading used to spin here for ever.
        let w = CountWindow::<8>::with_size(4).unwrap();
        w.record(Sample::default());
        w.slots[1].store(5 | WRITTEN, Ordering::Relaxed);
        assert_eq!(record_within_a_second(w), Some(Err(Corrupt)));
    }

    #[test]
    fn a_write_index_or_size_out_of_range_ends_as_corrupt() {
        let w = CountWindow::<8>::with_size(4).unwrap();
        // idx (bits 48..60 of the high half) = 6, past the size of 4.
        w.agg.store(u128::from(6u64 << 48) << 64, Ordering::Relaxed);
        assert_eq!(record_within_a_second(w), Some(Err(Corrupt)));
        for size in [0, 9, u32::MAX] {
            let mut w = CountWindow::<8>::with_size(4).unwrap();
            w.size = size;
            assert_eq!(record_within_a_second(w), Some(Err(Corrupt)), "size {size}");
        }
    }

    #[test]
    fn a_count_that_would_carry_into_its_neighbour_ends_as_corrupt() {
        // 4 095 calls in a window of 4 (more than it can hold, so not "full"):
        // one more call would carry into the failure count.
        let w = CountWindow::<8>::with_size(4).unwrap();
        w.agg.store(u128::from(F12) << 64, Ordering::Relaxed);
        assert_eq!(record_within_a_second(w), Some(Err(Corrupt)));
    }

    #[test]
    fn a_claim_evicting_more_than_the_counts_hold_ends_as_corrupt() {
        // Empty counts at tick 0, but slot 0 holds a claim for tick 0 that evicts
        // a failure (the first of its two OLD bits): committing it would take the
        // counts below zero.
        let w = CountWindow::<8>::with_size(4).unwrap();
        w.slots[0].store(WRITTEN | OLD_PRESENT | (1 << OLD), Ordering::Relaxed);
        assert_eq!(record_within_a_second(w), Some(Err(Corrupt)));
    }
}
