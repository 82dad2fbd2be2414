//! Time-based sliding window: `B` buckets of a fixed width (DESIGN §2).
//!
//! # Protocol
//! A record at `now` lands in bucket epoch `E = now / width`, never earlier than the
//! largest epoch the window has seen (`head`), in slot `E mod buckets`. Each slot is
//! one 128-bit word: a tag (the 28-bit generation and the 48-bit `E`) and two 26-bit
//! counts, so "is this bucket mine, or stale?" and "add one" happen in the same CAS.
//! A record for a newer tag replaces the slot's content in that CAS, which is why a
//! reset can never swallow a record made for the new epoch, and why concurrent
//! records to a live bucket are never lost. A slot of another generation is replaced
//! only by a record whose generation the breaker confirms is current (`is_current`,
//! asked after the slot was read); otherwise the record is stale and dropped. Slow outcomes are counted the same way in a second
//! array of words, touched only by slow calls.
//!
//! The window is the current bucket plus the `buckets − 1` before it: a slot whose
//! tag lies outside that span counts zero, however long ago it was written.
//!
//! # Lifetime successes
//! The breaker's lifetime success total is kept here, off the hot path: a success
//! is the `calls − failures` of the main bucket it landed in until that bucket is
//! rotated out, then part of the slot's `folded` word. A rotation takes three
//! steps, each one a CAS that anyone who finds it half-done finishes: *seal* the
//! old bucket (no record adds to a sealed bucket, so its counts are final),
//! *fold* its successes into `folded` (which names the last bucket it took, so a
//! bucket is folded once however many finish the step), *replace* it. A process
//! killed between two steps leaves a sealed bucket that readers count where it
//! is (or in `folded`, which tells) and the next record to the slot finishes.

use crossbeam_utils::CachePadded;

use super::{Recorded, Sample, SlidingWindow, WindowConfig, WindowCounts};
use crate::corrupt::{Corrupt, MAX_RETRIES};
use crate::div::Divisor;
use crate::error::{ConfigError, Field, Problem};
use crate::sync::{AtomicU64, AtomicU128, Ordering, raise_to};

const EPOCH_BITS: u32 = 48;
const EPOCH_MASK: u64 = (1 << EPOCH_BITS) - 1;
const GEN_MASK: u32 = (1 << 28) - 1;
const COUNT_BITS: u32 = 26;
const COUNT_MASK: u64 = (1 << COUNT_BITS) - 1;
const FAIL_BITS: u32 = 25;
const FAIL_MASK: u64 = (1 << FAIL_BITS) - 1;
/// High half of a main bucket: rotation has begun, its counts are final.
const SEALED: u64 = 1 << (COUNT_BITS + FAIL_BITS);
/// High half: where the generation's upper 12 bits sit, in buckets and `folded`.
const GEN_HI_SHIFT: u32 = 52;
/// High half of a `folded` word: the successes (51 bits) and whether a bucket
/// was ever folded (the tag beside it is then that bucket's).
const SUM_MASK: u64 = (1 << 51) - 1;
const FOLDED: u64 = 1 << 51;
/// Outcomes one bucket can count; further outcomes in the same bucket count in the
/// breaker's totals only (33 million per bucket width).
pub const MAX_BUCKET_CALLS: u32 = (1 << FAIL_BITS) - 1;

/// Time-based window of up to `B` buckets; the configured bucket count may be smaller.
///
/// `size_of::<TimeWindow<B>>()` is `48·B` bytes of buckets and folded successes, one cache line (128 bytes
/// on x86-64 and aarch64) for the epoch high-water mark, and 32 bytes of
/// configuration (bucket count and width with their precomputed reciprocals),
/// rounded to the cache-line alignment.
#[repr(C)]
pub struct TimeWindow<const B: usize> {
    head: CachePadded<AtomicU64>,
    main: [AtomicU128; B],
    slow: [AtomicU128; B],
    /// Per main slot: the successes of the buckets it held before, and the tag of
    /// the last one folded (see the module docs).
    folded: [AtomicU128; B],
    buckets: Divisor,
    width: Divisor,
}

/// One slot word, unpacked.
#[derive(Clone, Copy)]
struct Bucket {
    generation: u32,
    epoch: u64,
    /// calls (main array) or slow calls (slow array)
    n: u32,
    /// failures (main array) or slow failures (slow array)
    fails: u32,
    /// Being rotated out (main array only): nothing is added any more.
    sealed: bool,
}

impl Bucket {
    // low 64 bits: generation bits 0–15 | epoch (48); high 64 bits: n (26) |
    // fails (25) | sealed (1) | generation bits 16–27 (12).
    fn unpack(v: u128) -> Self {
        let tag = v as u64;
        let hi = (v >> 64) as u64;
        Self {
            generation: ((tag >> EPOCH_BITS) as u32) | (((hi >> GEN_HI_SHIFT) as u32) << 16),
            epoch: tag & EPOCH_MASK,
            n: (hi & COUNT_MASK) as u32,
            fails: ((hi >> COUNT_BITS) & FAIL_MASK) as u32,
            sealed: hi & SEALED != 0,
        }
    }

    fn pack(self) -> u128 {
        let g = u64::from(self.generation & GEN_MASK);
        let tag = ((g & 0xFFFF) << EPOCH_BITS) | self.epoch;
        let hi = (u64::from(self.n) & COUNT_MASK)
            | ((u64::from(self.fails) & FAIL_MASK) << COUNT_BITS)
            | if self.sealed { SEALED } else { 0 }
            | ((g >> 16) << GEN_HI_SHIFT);
        u128::from(tag) | (u128::from(hi) << 64)
    }

    /// Successes counted in a main bucket (saturating: a corrupted word may
    /// claim more failures than calls).
    fn successes(self) -> u64 {
        u64::from(self.n.saturating_sub(self.fails))
    }
}

/// The (generation, epoch) tag of a bucket or `folded` word, for comparing.
fn tag_of(v: u128) -> (u64, u64) {
    (v as u64, ((v >> 64) as u64) >> GEN_HI_SHIFT)
}

/// The successes a `folded` word holds.
fn folded_sum(f: u128) -> u64 {
    ((f >> 64) as u64) & SUM_MASK
}

/// Whether `folded` word `f` has taken the bucket `raw` already.
fn has_folded(f: u128, raw: u128) -> bool {
    ((f >> 64) as u64) & FOLDED != 0 && tag_of(f) == tag_of(raw)
}

/// Result of adding one outcome to a slot.
enum Bump {
    /// Added; `rotated` when it replaced an older bucket; `n` is the count after.
    Added { rotated: bool, n: u32 },
    /// The record belongs to a bucket already rotated out, or to an older
    /// generation, or the bucket is full: it counts in no window.
    Dropped,
    /// The CAS lost [`MAX_RETRIES`] races in a row: the slot is being written by
    /// something that is not this protocol.
    Corrupt,
}

impl<const B: usize> TimeWindow<B> {
    /// Narrowest bucket accepted: 0.1 ms. It keeps every epoch of a `u64` clock
    /// within the 48 bits of a slot tag, so tags never wrap.
    pub const MIN_BUCKET_WIDTH_NS: u64 = 100_000;

    /// An empty window of `buckets` buckets (`1 ..= B`) of `bucket_width_ns` each.
    pub fn with_buckets(buckets: u32, bucket_width_ns: u64) -> Result<Self, ConfigError> {
        if buckets == 0 {
            return Err(ConfigError::new(Field::WindowBuckets, Problem::Zero));
        }
        ConfigError::check_range(Field::WindowBuckets, u64::from(buckets), 1, B as u64)?;
        if bucket_width_ns == 0 {
            return Err(ConfigError::new(Field::WindowBucketWidth, Problem::Zero));
        }
        ConfigError::check_range(
            Field::WindowBucketWidth,
            bucket_width_ns,
            Self::MIN_BUCKET_WIDTH_NS,
            u64::MAX / u64::from(buckets),
        )?;
        Ok(Self {
            head: CachePadded::new(AtomicU64::new(0)),
            main: core::array::from_fn(|_| AtomicU128::new(0)),
            slow: core::array::from_fn(|_| AtomicU128::new(0)),
            folded: core::array::from_fn(|_| AtomicU128::new(0)),
            buckets: Divisor::new(u64::from(buckets)),
            width: Divisor::new(bucket_width_ns),
        })
    }

    /// Record one outcome at `now` (ns) (standalone use, one generation).
    pub fn record(&self, sample: Sample, now: u64) {
        let _ = self.record_gen(0, sample, now, 0, || true);
    }

    /// The counts as of `now` (ns) (standalone use).
    #[must_use]
    pub fn counts(&self, now: u64) -> WindowCounts {
        self.counts_gen(0, now)
    }

    /// The bucket epoch for `now`, raised to the largest seen (a clock that steps
    /// back counts as no time passed), and whether this call raised it.
    fn advance(&self, now: u64) -> (u64, bool) {
        raise_to(&self.head, self.width.div(now))
    }

    /// Add one outcome to slot `cell` for tag (`generation`, `epoch`); `folded`
    /// is the slot's folded word for the main array (its buckets are sealed and
    /// folded when rotated out), `None` for the slow array (replaced directly).
    // Inline: the record of a success is this CAS and little else.
    #[inline]
    fn bump(
        cell: &AtomicU128,
        folded: Option<&AtomicU128>,
        generation: u32,
        epoch: u64,
        fail: bool,
        is_current: &impl Fn() -> bool,
    ) -> Bump {
        // Invariant: a slot's tag only moves to a later epoch of its generation, or
        // to another generation by a record confirmed current after the slot was
        // read; the counts of a tag only grow, and not at all once sealed. So a CAS
        // from the value just read adds to exactly the bucket that was checked, or
        // seals or replaces exactly the stale bucket that was seen, and a main
        // bucket is replaced only sealed and folded. A CAS fails only when another
        // record changed the slot, so only a corrupted or hostile writer reaches
        // the bound.
        // The hot path, on the packed word: a live, unsealed bucket of this very
        // tag with room takes `n + 1` (and `fails + 1`) in place; anything else
        // is for `bump_slow`.
        let g = u64::from(generation & GEN_MASK);
        let want_lo = ((g & 0xFFFF) << EPOCH_BITS) | epoch;
        let want_top = (g >> 16) << 1; // `hi >> 51`: the generation's upper bits, not sealed
        let add = u128::from(1 | (u64::from(fail) << COUNT_BITS)) << 64;
        for _ in 0..MAX_RETRIES {
            let raw = cell.load(Ordering::Acquire);
            let (lo, hi) = (raw as u64, (raw >> 64) as u64);
            let n = hi & COUNT_MASK;
            if lo != want_lo || hi >> 51 != want_top || n == 0 || n >= u64::from(MAX_BUCKET_CALLS) {
                return Self::bump_slow(cell, folded, generation, epoch, fail, is_current);
            }
            if cell
                .compare_exchange(raw, raw + add, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                return Bump::Added {
                    rotated: false,
                    n: n as u32 + 1,
                };
            }
        }
        Bump::Corrupt
    }

    /// [`bump`](Self::bump) when the slot holds anything but a live bucket of
    /// this tag with room: a rotation, a full or sealed bucket, a stale record.
    #[cold]
    #[inline(never)]
    fn bump_slow(
        cell: &AtomicU128,
        folded: Option<&AtomicU128>,
        generation: u32,
        epoch: u64,
        fail: bool,
        is_current: &impl Fn() -> bool,
    ) -> Bump {
        // Invariant: the one written in `bump`, whose loop this is for the
        // other cases; the hot path's CAS there is this loop's same-tag case.
        for _ in 0..MAX_RETRIES {
            let raw = cell.load(Ordering::Acquire);
            let cur = Bucket::unpack(raw);
            let fresh = Bucket {
                generation,
                epoch,
                n: 1,
                fails: u32::from(fail),
                sealed: false,
            };
            let (next, rotated) = if cur.n == 0 {
                // Never written.
                (fresh, true)
            } else if cur.generation == generation && cur.epoch == epoch {
                if cur.n >= MAX_BUCKET_CALLS || cur.sealed {
                    // Full, or being rotated out by a newer record.
                    return Bump::Dropped;
                }
                (
                    Bucket {
                        n: cur.n + 1,
                        fails: cur.fails + u32::from(fail),
                        ..cur
                    },
                    false,
                )
            } else if cur.generation == generation {
                if cur.epoch > epoch {
                    // This epoch has already been rotated out.
                    return Bump::Dropped;
                }
                (fresh, true)
            } else if cfg!(seawall_mutant = "time_stale_replace") || is_current() {
                // Mutant `time_stale_replace`: any other generation may replace it.
                (fresh, true)
            } else {
                return Bump::Dropped;
            };
            let mut from = raw;
            if rotated
                && cur.n != 0
                && let Some(folded) = folded
            {
                if !cur.sealed {
                    let sealed = Bucket {
                        sealed: true,
                        ..cur
                    }
                    .pack();
                    if cell
                        .compare_exchange(raw, sealed, Ordering::AcqRel, Ordering::Acquire)
                        .is_err()
                    {
                        continue;
                    }
                    from = sealed;
                }
                if !Self::fold(folded, cell, from) {
                    return Bump::Corrupt;
                }
            }
            #[cfg(not(seawall_mutant = "bucket_reset"))]
            if cell
                .compare_exchange(from, next.pack(), Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                return Bump::Added { rotated, n: next.n };
            }
            #[cfg(seawall_mutant = "bucket_reset")]
            {
                // Mutant: a rotation that stores blindly swallows a concurrent record.
                if rotated {
                    cell.store(next.pack(), Ordering::Release);
                    return Bump::Added { rotated, n: next.n };
                }
                if cell
                    .compare_exchange(from, next.pack(), Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
                {
                    return Bump::Added { rotated, n: next.n };
                }
            }
        }
        Bump::Corrupt
    }

    /// Fold the successes of `sealed`, the sealed bucket slot `cell` held when
    /// read, into the slot's `folded` word, unless that was done already; `false`
    /// when the bound was reached (a corrupted or hostile writer).
    fn fold(folded: &AtomicU128, cell: &AtomicU128, sealed: u128) -> bool {
        // Invariant: `folded` takes a bucket only while that bucket sits sealed in
        // the slot, and names it; a bucket is replaced only after it was taken. So
        // `folded` naming it means done, the slot holding something else means
        // done (it was taken before it was replaced), and otherwise a CAS from the
        // value read adds it exactly once: any other fold since then changed the
        // word (every fold names a new bucket), so the CAS fails and the next pass
        // sees the bucket named.
        let add = Bucket::unpack(sealed).successes();
        for _ in 0..MAX_RETRIES {
            let f = folded.load(Ordering::Acquire);
            #[cfg(not(seawall_mutant = "fold_twice"))]
            if has_folded(f, sealed) || cell.load(Ordering::Acquire) != sealed {
                return true;
            }
            let (lo, _) = tag_of(sealed);
            let hi = (folded_sum(f).wrapping_add(add) & SUM_MASK)
                | FOLDED
                | ((((sealed >> 64) as u64) >> GEN_HI_SHIFT) << GEN_HI_SHIFT);
            let next = u128::from(lo) | (u128::from(hi) << 64);
            if folded
                .compare_exchange(f, next, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                return true;
            }
        }
        false
    }

    /// Successes counted by slot `i`: the folded ones, plus its bucket's unless
    /// folded already. A pair read in the middle of a rotation is read again.
    fn slot_successes(&self, i: usize) -> u64 {
        let (cell, folded) = (&self.main[i], &self.folded[i]);
        let mut pair = (0, 0);
        for _ in 0..MAX_RETRIES {
            // The bucket both before and after `folded`: it sat in the slot all
            // along (tags are never reused in a slot), so every bucket before it
            // was folded before `folded` was read, and none after it.
            let before = cell.load(Ordering::Acquire);
            let f = folded.load(Ordering::Acquire);
            let after = cell.load(Ordering::Acquire);
            pair = (f, after);
            if tag_of(before) == tag_of(after) {
                break;
            }
        }
        let (f, raw) = pair;
        let live = if has_folded(f, raw) {
            0
        } else {
            Bucket::unpack(raw).successes()
        };
        folded_sum(f).wrapping_add(live)
    }

    /// The configured bucket count as a slice length: never more than `B`, even
    /// when the field was overwritten in a shared region.
    fn live_len(&self) -> usize {
        usize::try_from(self.buckets.get()).map_or(B, |n| n.min(B))
    }

    /// Sum of the buckets of `generation` in the window ending at epoch `head`.
    fn sum(&self, generation: u32, head: u64) -> WindowCounts {
        let span = self.buckets.get();
        let live =
            |b: &Bucket| b.generation == generation && b.epoch <= head && head - b.epoch < span;
        let mut c = WindowCounts::default();
        let n = self.live_len();
        for cell in &self.main[..n] {
            let b = Bucket::unpack(cell.load(Ordering::Acquire));
            if live(&b) {
                c.calls += u64::from(b.n);
                c.failures += u64::from(b.fails);
            }
        }
        for cell in &self.slow[..n] {
            let b = Bucket::unpack(cell.load(Ordering::Acquire));
            if live(&b) {
                c.slow += u64::from(b.n);
                c.slow_failures += u64::from(b.fails);
            }
        }
        c
    }
}

impl<const B: usize> SlidingWindow for TimeWindow<B> {
    fn new(config: &WindowConfig) -> Result<Self, ConfigError> {
        match *config {
            WindowConfig::Time {
                buckets,
                bucket_width_ns,
            } => Self::with_buckets(buckets, bucket_width_ns),
            WindowConfig::Count { .. } => {
                Err(ConfigError::new(Field::WindowKind, Problem::KindMismatch))
            }
        }
    }

    fn config(&self) -> WindowConfig {
        WindowConfig::Time {
            buckets: self.buckets.get() as u32,
            bucket_width_ns: self.width.get(),
        }
    }

    #[inline]
    fn record_gen(
        &self,
        generation: u32,
        sample: Sample,
        now: u64,
        gate: u64,
        is_current: impl Fn() -> bool,
    ) -> Result<Recorded, Corrupt> {
        let generation = generation & GEN_MASK;
        let (epoch, advanced) = self.advance(now);
        // `rem` is below `B` unless the divisor was overwritten in a shared region.
        let index = usize::try_from(self.buckets.rem(epoch)).map_err(|_| Corrupt)?;
        let (Some(main), Some(slow), Some(folded)) = (
            self.main.get(index),
            self.slow.get(index),
            self.folded.get(index),
        ) else {
            return Err(Corrupt);
        };
        let bumped = Self::bump(
            main,
            Some(folded),
            generation,
            epoch,
            sample.failure,
            &is_current,
        );
        let (rotated, n) = match bumped {
            Bump::Added { rotated, n } => (rotated, n),
            Bump::Dropped => return Ok(Recorded::default()),
            Bump::Corrupt => return Err(Corrupt),
        };
        if sample.slow
            && matches!(
                Self::bump(slow, None, generation, epoch, sample.failure, &is_current),
                Bump::Corrupt
            )
        {
            return Err(Corrupt);
        }
        // A success in a main bucket is in `successes()` from now on.
        let kept = !sample.failure;
        // A plain success added to a live bucket that alone already passes the gate
        // can only lower both rates: no evaluation needed (the hot path).
        let quiet = !sample.failure && !sample.slow && !rotated && !advanced;
        if quiet && u64::from(n) > gate {
            return Ok(Recorded { counts: None, kept });
        }
        Ok(Recorded {
            counts: Some(self.sum(generation, epoch)),
            kept,
        })
    }

    fn successes(&self) -> u64 {
        (0..B).fold(0u64, |t, i| t.wrapping_add(self.slot_successes(i)))
    }

    fn counts_gen(&self, generation: u32, now: u64) -> WindowCounts {
        let generation = generation & GEN_MASK;
        let head = self.head.load(Ordering::Acquire).max(self.width.div(now));
        self.sum(generation, head)
    }

    fn latest_gen(&self) -> Option<u32> {
        self.main[..self.live_len()]
            .iter()
            .map(|c| Bucket::unpack(c.load(Ordering::Acquire)))
            .filter(|b| b.n > 0)
            .max_by_key(|b| b.epoch)
            .map(|b| b.generation)
    }

    fn gate(&self, minimum_calls: u64) -> u64 {
        minimum_calls
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_count_past_the_capacity_ends_as_corrupt_and_reads_stay_in_bounds() {
        let mut w = TimeWindow::<4>::with_buckets(4, TimeWindow::<4>::MIN_BUCKET_WIDTH_NS).unwrap();
        // 100 buckets: epoch 7 maps to slot 7 of 4.
        w.buckets = Divisor::new(100);
        let now = 7 * TimeWindow::<4>::MIN_BUCKET_WIDTH_NS;
        let r = w.record_gen(0, Sample::default(), now, 0, || true);
        assert_eq!(r, Err(Corrupt));
        assert_eq!(w.successes(), 0);
        assert_eq!(w.counts_gen(0, now), WindowCounts::default());
        assert_eq!(w.latest_gen(), None);
    }
}
