//! Time-based sliding window: `B` buckets of a fixed width (DESIGN §2).
//!
//! # Protocol
//! A record at `now` lands in bucket epoch `E = now / width`, never earlier than the
//! largest epoch the window has seen (`head`), in slot `E mod buckets`. A slot is two
//! 64-bit words side by side: the *tag* (the bucket's 48-bit epoch and the low 16
//! bits of its generation) and the *counts* (calls 24 bits, failures 24, a seal bit
//! and a 15-bit *stamp*). The stamp is computed from the tag the counts were written
//! for (`lap + generation`, `lap = epoch / buckets`), so counts whose stamp is not
//! their tag's are the previous bucket's, left by a replacement half-done, and read
//! as an empty bucket. Adding one outcome is one 64-bit CAS on the counts, from a
//! value carrying the record's own stamp: a record that read a bucket since rotated
//! out can only succeed once the slot's stamps have come round to the same value
//! with the same counts, which takes 2¹⁵ laps or generations of that one slot in
//! between two of the record's instructions.
//!
//! A bucket is replaced in three steps, each a CAS that anyone who finds it half-done
//! finishes: *seal* the counts (no record adds to a sealed bucket, and counts left
//! by a previous tag are first sealed under this one, so no one can still place
//! into them), *fold* a main bucket's successes into the slot's `folded` word (see
//! below), *move* the tag; the first record of the new tag then *places* fresh
//! counts over the sealed ones. A slot of another generation is replaced only by a
//! record whose generation the breaker confirms is current (`is_current`, asked
//! after the slot was read); otherwise the record is stale and dropped. Slow
//! outcomes are counted the same way in a second array of slots, touched only by
//! slow calls.
//!
//! The window is the current bucket plus the `buckets − 1` before it: a slot whose
//! tag lies outside that span counts zero, however long ago it was written.
//!
//! # Lifetime successes
//! The breaker's lifetime success total is kept here, off the hot path: a success
//! is the `calls − failures` of the main bucket it landed in until that bucket is
//! rotated out, then part of the slot's `folded` word, which names the last bucket
//! it took (so a bucket is folded once however many finish the step). A process
//! killed between two steps leaves a sealed bucket that readers count where it is
//! (or in `folded`, which tells) and the next record to the slot finishes.
//!
//! # Limits
//! A tag names its generation by the low 16 bits: a slot left untouched while
//! 2¹⁶ generations pass (32 768 trips or resets with no record landing in it)
//! takes the new generation's records into its old counts. A bucket counts at
//! most [`TimeWindow::MAX_BUCKET_CALLS`] outcomes.

use crossbeam_utils::CachePadded;

use super::{Recorded, Sample, SlidingWindow, WindowConfig, WindowCounts};
use crate::corrupt::{Corrupt, MAX_RETRIES};
use crate::div::Divisor;
use crate::error::{ConfigError, Field, Problem};
use crate::sync::{AtomicU64, AtomicU128, Ordering, raise_to};

const EPOCH_BITS: u32 = 48;
const EPOCH_MASK: u64 = (1 << EPOCH_BITS) - 1;
const GEN_MASK: u32 = (1 << 16) - 1;
const COUNT_BITS: u32 = 24;
const COUNT_MASK: u64 = (1 << COUNT_BITS) - 1;
/// Counts word: calls (24) | failures (24) | sealed (1) | stamp (15).
const SEALED: u64 = 1 << (2 * COUNT_BITS);
const STAMP_SHIFT: u32 = 2 * COUNT_BITS + 1;
const STAMP_MASK: u64 = (1 << (64 - STAMP_SHIFT)) - 1;
/// High half of a `folded` word: the successes (63 bits) and whether a bucket
/// was ever folded (the low half is then that bucket's tag).
const SUM_MASK: u64 = (1 << 63) - 1;
const FOLDED: u64 = 1 << 63;
/// See [`TimeWindow::MAX_BUCKET_CALLS`].
const MAX_BUCKET_CALLS: u32 = (1 << COUNT_BITS) - 1;

/// Time-based window of up to `B` buckets; the configured bucket count may be smaller.
///
/// `size_of::<TimeWindow<B>>()` is `48·B` bytes of buckets and folded successes, one cache line (128 bytes
/// on x86-64 and aarch64) for the epoch high-water mark, and 32 bytes of
/// configuration (bucket count and width with their precomputed reciprocals),
/// rounded to the cache-line alignment.
#[repr(C)]
pub struct TimeWindow<const B: usize> {
    head: CachePadded<AtomicU64>,
    main: [Slot; B],
    slow: [Slot; B],
    /// Per main slot: the successes of the buckets it held before, and the tag of
    /// the last one folded (see the module docs).
    folded: [AtomicU128; B],
    buckets: Divisor,
    width: Divisor,
}

/// One bucket: its tag and its counts, on one 16-byte pair so a record reads one
/// line.
#[repr(C, align(16))]
struct Slot {
    tag: AtomicU64,
    counts: AtomicU64,
}

impl Slot {
    /// Slot `index`, empty: its tag is the first epoch it serves, so a record of
    /// any later epoch finds a tag of its own slot (whose stamp it can tell from
    /// its own) and seals it before moving on.
    fn new(index: usize) -> Self {
        Self {
            tag: AtomicU64::new(tag_of(0, index as u64)),
            counts: AtomicU64::new(0),
        }
    }
}

/// The tag word of (`generation`, `epoch`).
fn tag_of(generation: u32, epoch: u64) -> u64 {
    (u64::from(generation & GEN_MASK) << EPOCH_BITS) | (epoch & EPOCH_MASK)
}

fn tag_epoch(tag: u64) -> u64 {
    tag & EPOCH_MASK
}

fn tag_gen(tag: u64) -> u32 {
    (tag >> EPOCH_BITS) as u32
}

/// The stamp of the bucket of `lap` (`epoch / buckets`) and `generation`: every
/// later bucket of a slot adds at least one to one of the two, so stamps repeat
/// only after 2¹⁵ of them.
fn stamp_of(lap: u64, generation: u32) -> u64 {
    // Mutant `time_unstamped`: the stamp forgets the generation, so a bucket's
    // successor of another generation carries its stamp.
    let generation = if cfg!(seawall_mutant = "time_unstamped") {
        0
    } else {
        generation
    };
    lap.wrapping_add(u64::from(generation & GEN_MASK)) & STAMP_MASK
}

fn calls(c: u64) -> u32 {
    (c & COUNT_MASK) as u32
}

fn fails(c: u64) -> u32 {
    ((c >> COUNT_BITS) & COUNT_MASK) as u32
}

fn is_sealed(c: u64) -> bool {
    c & SEALED != 0
}

fn stamp_in(c: u64) -> u64 {
    c >> STAMP_SHIFT
}

/// Counts of a new bucket of stamp `stamp` holding one outcome.
fn first_outcome(stamp: u64, fail: bool) -> u64 {
    (stamp << STAMP_SHIFT) | (u64::from(fail) << COUNT_BITS) | 1
}

/// Successes counted in main-bucket counts `c` (saturating: a corrupted word may
/// claim more failures than calls).
fn successes_in(c: u64) -> u64 {
    u64::from(calls(c).saturating_sub(fails(c)))
}

/// The successes a `folded` word holds.
fn folded_sum(f: u128) -> u64 {
    ((f >> 64) as u64) & SUM_MASK
}

/// Whether `folded` word `f` has taken the bucket of `tag` already.
fn has_folded(f: u128, tag: u64) -> bool {
    ((f >> 64) as u64) & FOLDED != 0 && f as u64 == tag
}

/// The bucket a record is for.
#[derive(Clone, Copy)]
struct Want {
    tag: u64,
    stamp: u64,
    fail: bool,
}

/// Result of adding one outcome to a slot.
enum Bump {
    /// Added; `rotated` when it placed a new bucket; `n` is the count after.
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

    /// Outcomes one bucket counts, 2²⁴ − 1; further outcomes in the same bucket
    /// count in the breaker's totals only.
    pub const MAX_BUCKET_CALLS: u32 = MAX_BUCKET_CALLS;

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
            main: core::array::from_fn(Slot::new),
            slow: core::array::from_fn(Slot::new),
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

    /// The stamp counts written for `tag` carry.
    fn stamp(&self, tag: u64) -> u64 {
        stamp_of(self.buckets.div(tag_epoch(tag)), tag_gen(tag))
    }

    /// Add one outcome to `slot` for `want`; `folded` is the slot's folded word
    /// for the main array (its buckets are folded when rotated out), `None` for
    /// the slow array.
    // Inline: the record of a success is this CAS and little else.
    #[inline]
    fn bump(
        &self,
        slot: &Slot,
        folded: Option<&AtomicU128>,
        want: Want,
        is_current: &impl Fn() -> bool,
    ) -> Bump {
        // Invariant: a slot's tag only moves to a later epoch of its generation, or
        // to another generation by a record confirmed current after the slot was
        // read, and only once the counts it names are sealed (and, in the main
        // array, folded); counts of a tag only grow, and not at all once sealed;
        // counts carry the stamp of the tag they are for. So a CAS from the value
        // just read, with this record's stamp, adds to exactly the bucket that was
        // checked: a rotation since then sealed it (the CAS fails) and every later
        // bucket of the slot carries another stamp. A CAS fails only when another
        // record changed the slot, so only a corrupted or hostile writer reaches
        // the bound.
        // The hot path: a live, unsealed bucket of this very tag with room takes
        // `n + 1` (and `fails + 1`) in place; anything else is for `bump_slow`.
        let unsealed = want.stamp << 1; // `counts >> 48`: the stamp, not sealed
        let add = 1 | (u64::from(want.fail) << COUNT_BITS);
        for _ in 0..MAX_RETRIES {
            let tag = slot.tag.load(Ordering::Acquire);
            let c = slot.counts.load(Ordering::Acquire);
            let n = c & COUNT_MASK;
            if tag != want.tag
                || c >> (2 * COUNT_BITS) != unsealed
                || n == 0
                || n >= u64::from(MAX_BUCKET_CALLS)
            {
                return self.bump_slow(slot, folded, want, is_current);
            }
            if slot
                .counts
                .compare_exchange(c, c + add, Ordering::AcqRel, Ordering::Acquire)
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
        &self,
        slot: &Slot,
        folded: Option<&AtomicU128>,
        want: Want,
        is_current: &impl Fn() -> bool,
    ) -> Bump {
        // Invariant: the one written in `bump`, whose loop this is for the other
        // cases; the hot path's CAS there is this loop's add.
        for _ in 0..MAX_RETRIES {
            // Counts read between two reads of one tag are that tag's or the
            // previous bucket's (its successor's first outcome is placed only
            // after the tag moved on); the stamp tells which.
            let tag = slot.tag.load(Ordering::Acquire);
            let c = slot.counts.load(Ordering::Acquire);
            if slot.tag.load(Ordering::Acquire) != tag {
                continue;
            }
            let placed = stamp_in(c) == self.stamp(tag);
            if tag == want.tag {
                if !placed || (calls(c) == 0 && !is_sealed(c)) {
                    // An empty bucket of this tag (never written, or the previous
                    // bucket's sealed counts): this record is its first.
                    if Self::place(slot, c, want) {
                        return Bump::Added {
                            rotated: true,
                            n: 1,
                        };
                    }
                    continue;
                }
                if is_sealed(c) || calls(c) >= MAX_BUCKET_CALLS {
                    // Being rotated out by a newer record, or full.
                    return Bump::Dropped;
                }
                let next = c + (1 | (u64::from(want.fail) << COUNT_BITS));
                if slot
                    .counts
                    .compare_exchange(c, next, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
                {
                    return Bump::Added {
                        rotated: false,
                        n: calls(next),
                    };
                }
                continue;
            }
            let replaces = if tag_gen(tag) == tag_gen(want.tag) {
                // A later epoch of this generation has rotated this one out.
                tag_epoch(tag) < tag_epoch(want.tag)
            } else {
                // Mutant `time_stale_replace`: any other generation may replace it.
                cfg!(seawall_mutant = "time_stale_replace") || is_current()
            };
            if !replaces {
                return Bump::Dropped;
            }
            // Seal what the tag names (counts left by the tag before it are sealed
            // anew under this one's stamp, so no late first record lands in them).
            let sealed = if placed {
                c | SEALED
            } else {
                (self.stamp(tag) << STAMP_SHIFT) | SEALED
            };
            if sealed != c
                && slot
                    .counts
                    .compare_exchange(c, sealed, Ordering::AcqRel, Ordering::Acquire)
                    .is_err()
            {
                continue;
            }
            if let Some(folded) = folded
                && !Self::fold(folded, slot, tag, sealed)
            {
                return Bump::Corrupt;
            }
            // Whoever wins, the next pass finds the tag moved on.
            let _ = slot
                .tag
                .compare_exchange(tag, want.tag, Ordering::AcqRel, Ordering::Acquire);
        }
        Bump::Corrupt
    }

    /// Put `want`'s first outcome over `c`, the empty or sealed counts the slot's
    /// tag (already `want.tag`) holds; `false` when another record changed them
    /// first.
    fn place(slot: &Slot, c: u64, want: Want) -> bool {
        let fresh = first_outcome(want.stamp, want.fail);
        #[cfg(seawall_mutant = "bucket_reset")]
        {
            // Mutant: a blind store swallows a concurrent record placed first.
            let _ = c;
            slot.counts.store(fresh, Ordering::Release);
            true
        }
        #[cfg(not(seawall_mutant = "bucket_reset"))]
        slot.counts
            .compare_exchange(c, fresh, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// Fold the successes of `sealed`, the sealed counts of the bucket `tag` in
    /// `slot`, into the slot's `folded` word, unless that was done already;
    /// `false` when the bound was reached (a corrupted or hostile writer).
    fn fold(folded: &AtomicU128, slot: &Slot, tag: u64, sealed: u64) -> bool {
        // Invariant: `folded` takes a bucket only while the slot's tag names it,
        // and names it; a tag moves on only after its bucket was taken. So
        // `folded` naming it means done, the tag having moved means done, and
        // otherwise a CAS from the value read adds it exactly once: any other fold
        // since then changed the word (every fold names a new bucket), so the CAS
        // fails and the next pass sees the bucket named.
        let add = successes_in(sealed);
        if add == 0 {
            // Nothing to take: readers count a sealed bucket's zero either way.
            return true;
        }
        for _ in 0..MAX_RETRIES {
            let f = folded.load(Ordering::Acquire);
            #[cfg(not(seawall_mutant = "fold_twice"))]
            if has_folded(f, tag) || slot.tag.load(Ordering::Acquire) != tag {
                return true;
            }
            let hi = (folded_sum(f).wrapping_add(add) & SUM_MASK) | FOLDED;
            let next = u128::from(tag) | (u128::from(hi) << 64);
            if folded
                .compare_exchange(f, next, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                return true;
            }
        }
        false
    }

    /// The counts of `slot` if they are its tag's: `(tag, counts)`, the counts
    /// zero when the slot holds the previous bucket's.
    fn read(&self, slot: &Slot) -> (u64, u64) {
        let tag = slot.tag.load(Ordering::Acquire);
        let c = slot.counts.load(Ordering::Acquire);
        (tag, if stamp_in(c) == self.stamp(tag) { c } else { 0 })
    }

    /// Successes counted by slot `i`: the folded ones, plus its bucket's unless
    /// folded already. A slot read in the middle of a rotation is read again.
    fn slot_successes(&self, i: usize) -> u64 {
        let (slot, folded) = (&self.main[i], &self.folded[i]);
        let mut seen = (0, 0, 0);
        for _ in 0..MAX_RETRIES {
            // The tag both before and after: it named the slot all along (tags are
            // never reused in a slot), so every bucket before it was folded before
            // `folded` was read, and the counts read are its own or, unplaced, the
            // folded ones before it.
            let before = slot.tag.load(Ordering::Acquire);
            let f = folded.load(Ordering::Acquire);
            let c = slot.counts.load(Ordering::Acquire);
            let after = slot.tag.load(Ordering::Acquire);
            seen = (f, after, c);
            if before == after {
                break;
            }
        }
        let (f, tag, c) = seen;
        let live = if stamp_in(c) != self.stamp(tag) || has_folded(f, tag) {
            0
        } else {
            successes_in(c)
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
        let live = |tag: u64| {
            let e = tag_epoch(tag);
            tag_gen(tag) == generation && e <= head && head - e < span
        };
        let mut c = WindowCounts::default();
        let n = self.live_len();
        for slot in &self.main[..n] {
            let (tag, counts) = self.read(slot);
            if live(tag) {
                c.calls += u64::from(calls(counts));
                c.failures += u64::from(fails(counts));
            }
        }
        for slot in &self.slow[..n] {
            let (tag, counts) = self.read(slot);
            if live(tag) {
                c.slow += u64::from(calls(counts));
                c.slow_failures += u64::from(fails(counts));
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
        // `index` is below `B` unless the divisor was overwritten in a shared region.
        let (lap, index) = self.buckets.div_rem(epoch);
        let index = usize::try_from(index).map_err(|_| Corrupt)?;
        let (Some(main), Some(slow), Some(folded)) = (
            self.main.get(index),
            self.slow.get(index),
            self.folded.get(index),
        ) else {
            return Err(Corrupt);
        };
        let want = Want {
            tag: tag_of(generation, epoch),
            stamp: stamp_of(lap, generation),
            fail: sample.failure,
        };
        let (rotated, n) = match self.bump(main, Some(folded), want, &is_current) {
            Bump::Added { rotated, n } => (rotated, n),
            Bump::Dropped => return Ok(Recorded::default()),
            Bump::Corrupt => return Err(Corrupt),
        };
        if sample.slow && matches!(self.bump(slow, None, want, &is_current), Bump::Corrupt) {
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

    const QUIET_SUCCESS: bool = true;

    #[inline]
    fn record_quiet_success(&self, generation: u32, now: u64, gate: u64) -> bool {
        // `record_gen`'s quiet case, with nothing written unless it is one: the
        // epoch is the head's (a record that would raise it is not quiet), and
        // the CAS is `bump`'s hot path, tried once, under the invariant written
        // there: counts carrying this tag's stamp are this bucket's.
        let head = self.head.load(Ordering::Acquire);
        if self.width.div(now) > head {
            return false;
        }
        let generation = generation & GEN_MASK;
        let (lap, index) = self.buckets.div_rem(head);
        let Some(slot) = usize::try_from(index).ok().and_then(|i| self.main.get(i)) else {
            return false;
        };
        let tag = slot.tag.load(Ordering::Acquire);
        let c = slot.counts.load(Ordering::Acquire);
        let n = c & COUNT_MASK;
        // `n ≥ gate` (the count after is past it), `n > 0` (the bucket is live).
        tag == tag_of(generation, head)
            // Mutant `time_quiet_unstamped`: counts read after the tag are taken
            // for its own without their stamp being checked.
            && (cfg!(seawall_mutant = "time_quiet_unstamped")
                || c >> (2 * COUNT_BITS) == stamp_of(lap, generation) << 1)
            && n >= gate
            && n != 0
            && n < u64::from(MAX_BUCKET_CALLS)
            && slot
                .counts
                .compare_exchange(c, c + 1, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
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
            .map(|s| self.read(s))
            .filter(|&(_, c)| calls(c) > 0)
            .max_by_key(|&(tag, _)| tag_epoch(tag))
            .map(|(tag, _)| tag_gen(tag))
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
