//! Time-based sliding window: `B` buckets of a fixed width (DESIGN §2).
//!
//! # Protocol
//! A record at `now` lands in bucket epoch `E = now / width`, never earlier than the
//! largest epoch the window has seen (`head`), in slot `E mod buckets`. A slot is two
//! 64-bit words side by side: the *tag* (the bucket's epoch, the low bits of its
//! generation, and an *unplaced* flag) and the *counts* (calls 24 bits,
//! failures 24, a seal bit and a 15-bit *placement number*). Adding one outcome is
//! one 64-bit CAS on the counts, from a value read before the tag was checked.
//!
//! A bucket is replaced in steps, each a CAS that anyone who finds it half-done
//! finishes: *seal* its counts (no record adds to sealed counts), *fold* a main
//! bucket's successes into the slot's `folded` word (see below), *move* the tag to
//! the new bucket with the unplaced flag set, then the first record of the new
//! bucket *places* fresh counts over the sealed ones (with the next placement
//! number) and clears the flag. So under a tag without the flag the counts are
//! that bucket's; under a flagged tag sealed counts are the previous bucket's
//! leftovers (already folded) and unsealed ones the new bucket's. A flagged tag is
//! moved on only after an empty bucket was placed under it, so a late first record
//! of that bucket cannot place into counts that already belong to a newer tag.
//!
//! Tags never return to a value a slot held (epochs of a generation only grow; an
//! older generation never replaces a newer one), so a record that read the
//! counts and then found the tag its own adds to that bucket or, if a rotation
//! changed the counts since, fails its CAS; the counts come back to the very value
//! it read only after 2¹⁵ placements in that slot in between two of its
//! instructions.
//!
//! A slot of another generation is replaced only by a record whose generation the
//! breaker confirms is current (`is_current`, asked after the slot was read);
//! otherwise the record is stale and dropped. Slow outcomes are counted the same
//! way in a second array of slots (sealed, never folded), touched only by slow
//! calls. The window is the current bucket plus the `buckets − 1` before it: a
//! slot whose tag lies outside that span counts zero, however long ago it was
//! written.
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
//! A tag gives the epoch the bits the largest epoch of a `u64` clock needs and
//! the generation the other 63 − those: 28 bits with buckets of 1 s or more, 15
//! with the narrowest (0.1 ms). A record of a generation 2²⁸ (2¹⁵) after the one
//! a slot holds, for the same bucket epoch, is taken for that one's: with the
//! breaker's closed epochs two apart, 2²⁷ (16 384) resets within one bucket
//! width with no record landing in the slot. A bucket counts at most
//! [`TimeWindow::MAX_BUCKET_CALLS`] outcomes.

use crossbeam_utils::CachePadded;

use super::{Recorded, Sample, SlidingWindow, WindowConfig, WindowCounts};
use crate::corrupt::{Corrupt, MAX_RETRIES};
use crate::div::Divisor;
use crate::error::{ConfigError, Field, Problem};
use crate::sync::{AtomicU64, AtomicU128, Ordering, raise_to};

/// Tag word: epoch | generation | unplaced (bit 63); see [`Tags`].
const UNPLACED: u64 = 1 << 63;
/// The most bits an epoch takes: `u64::MAX / MIN_BUCKET_WIDTH_NS < 2⁴⁸`.
const MAX_EPOCH_BITS: u32 = 48;
/// Counts word: calls (24) | failures (24) | sealed (1) | placement number (15).
const COUNT_BITS: u32 = 24;
const COUNT_MASK: u64 = (1 << COUNT_BITS) - 1;
const SEALED: u64 = 1 << (2 * COUNT_BITS);
const PLACEMENT_SHIFT: u32 = 2 * COUNT_BITS + 1;
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
    /// Slot `index`, empty: its tag is the first epoch it serves.
    fn new(index: usize) -> Self {
        Self {
            // Generation 0, epoch `index`, whatever the split.
            tag: AtomicU64::new(index as u64),
            counts: AtomicU64::new(0),
        }
    }

    /// The tag and the counts, read so that the counts are the tag's or, under a
    /// flagged tag, the leftovers before it: the counts the same before and
    /// after the tag was read (a tag moves on only after its counts were sealed,
    /// and sealed counts stay as they are until the next bucket is placed under
    /// the moved tag), see [`confirm`](Self::confirm).
    fn read(&self) -> Option<(u64, u64)> {
        let c = self.counts.load(Ordering::Acquire);
        let tag = self.tag.load(Ordering::Acquire);
        self.confirm(c, tag)
    }

    /// The counts, when they are a live, unsealed bucket of tag `want` (unflagged)
    /// with room for one more outcome, else `Err((counts, tag))` as read. The
    /// counts are read before the tag (see the invariant in `bump`).
    #[inline]
    fn live_counts(&self, want: u64) -> Result<u64, (u64, u64)> {
        #[cfg(not(seawall_mutant = "time_tag_first"))]
        let (c, tag) = (
            self.counts.load(Ordering::Acquire),
            self.tag.load(Ordering::Acquire),
        );
        // Mutant: the tag read first, so the counts may be a newer bucket's.
        #[cfg(seawall_mutant = "time_tag_first")]
        let (tag, c) = (
            self.tag.load(Ordering::Acquire),
            self.counts.load(Ordering::Acquire),
        );
        let n = c & COUNT_MASK;
        if tag == want && !is_sealed(c) && n != 0 && n < u64::from(MAX_BUCKET_CALLS) {
            Ok(c)
        } else {
            Err((c, tag))
        }
    }

    /// `(tag, c)` when the counts, read as `c` before `tag` was read, still are.
    fn confirm(&self, c: u64, tag: u64) -> Option<(u64, u64)> {
        (self.counts.load(Ordering::Acquire) == c).then_some((tag, c))
    }
}

/// How a window's tags split their 63 bits: the epoch takes as many as the
/// largest epoch of a `u64` clock needs (35 for 1 s buckets, 48 for the
/// narrowest), the generation the rest (28 and 15).
#[derive(Clone, Copy)]
struct Tags {
    epoch_bits: u32,
}

impl Tags {
    /// The split for buckets of `width`: `width.max_quotient()` is the largest
    /// epoch (at most 48 bits, even for a divisor overwritten in a region).
    #[inline]
    fn for_width(width: Divisor) -> Self {
        Self {
            epoch_bits: (64 - width.max_quotient().leading_zeros()).min(MAX_EPOCH_BITS),
        }
    }

    #[inline]
    fn gen_mask(self) -> u64 {
        (1 << (63 - self.epoch_bits)) - 1
    }

    /// `generation` as tags name it.
    #[inline]
    fn generation(self, generation: u32) -> u32 {
        (u64::from(generation) & self.gen_mask()) as u32
    }

    /// The tag word of (`generation`, `epoch`), unflagged.
    #[inline]
    fn of(self, generation: u32, epoch: u64) -> u64 {
        ((u64::from(generation) & self.gen_mask()) << self.epoch_bits)
            | (epoch & ((1 << self.epoch_bits) - 1))
    }

    #[inline]
    fn epoch(self, tag: u64) -> u64 {
        tag & ((1 << self.epoch_bits) - 1)
    }

    #[inline]
    fn gen_of(self, tag: u64) -> u32 {
        ((tag >> self.epoch_bits) & self.gen_mask()) as u32
    }
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

/// Counts placed over `c`: the next placement number, `first` outcome if any.
fn placed_over(c: u64, first: Option<bool>) -> u64 {
    // Mutant `time_placement_kept`: a placement keeps the number it replaces, so
    // a new bucket can carry the very value an old record read.
    let next = if cfg!(seawall_mutant = "time_placement_kept") {
        c >> PLACEMENT_SHIFT
    } else {
        (c >> PLACEMENT_SHIFT).wrapping_add(1)
    };
    let outcome = first.map_or(0, |fail| 1 | (u64::from(fail) << COUNT_BITS));
    (next << PLACEMENT_SHIFT) | outcome
}

/// The counts a slot read as `(tag, c)` holds for the tag's own bucket: none
/// when they are leftovers under a flagged tag.
fn own_counts(tag: u64, c: u64) -> u64 {
    if tag & UNPLACED != 0 && is_sealed(c) {
        0
    } else {
        c
    }
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

/// Whether `folded` word `f` has taken the bucket of (unflagged) `tag` already.
fn has_folded(f: u128, tag: u64) -> bool {
    ((f >> 64) as u64) & FOLDED != 0 && f as u64 == tag
}

/// Result of adding one outcome to a slot.
enum Bump {
    /// Added; `rotated` when it was the bucket's first; `n` is the count after.
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

    /// How this window's tags split their bits.
    #[inline]
    fn tags(&self) -> Tags {
        Tags::for_width(self.width)
    }

    /// The bucket epoch for `now`, raised to the largest seen (a clock that steps
    /// back counts as no time passed), and whether this call raised it.
    fn advance(&self, now: u64) -> (u64, bool) {
        raise_to(&self.head, self.width.div(now))
    }

    /// Add one outcome (`fail` or not) to `slot` for the bucket of tag `want`
    /// (unflagged); `folded` is the slot's folded word for the main array (its
    /// buckets are folded when rotated out), `None` for the slow array.
    // Inline: the record of a success is this CAS and little else.
    #[inline]
    fn bump(
        tags: Tags,
        slot: &Slot,
        folded: Option<&AtomicU128>,
        want: u64,
        fail: bool,
        is_current: &impl Fn() -> bool,
    ) -> Bump {
        // Invariant: a slot's tag only moves to a later epoch of its generation,
        // or to another generation by a record confirmed current after the slot
        // was read, never back to a value it held, and only once the counts it
        // names are sealed (and, in the main array, folded); the counts of a
        // bucket only grow, and not at all once sealed; a placement changes the
        // placement number. So counts read before the tag was found to be `want`
        // (unflagged) are `want`'s or older, and a CAS from them adds to exactly
        // `want`'s bucket or fails. A CAS fails only when another record changed
        // the slot, so only a corrupted or hostile writer reaches the bound.
        // The hot path: a live, unsealed bucket of this very tag with room takes
        // `n + 1` (and `fails + 1`) in place; anything else is for `bump_slow`.
        let add = 1 | (u64::from(fail) << COUNT_BITS);
        for _ in 0..MAX_RETRIES {
            let c = match slot.live_counts(want) {
                Ok(c) => c,
                Err(seen) => {
                    return Self::bump_slow(tags, slot, seen, folded, want, fail, is_current);
                }
            };
            let n = c & COUNT_MASK;
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
    #[allow(clippy::too_many_arguments)]
    fn bump_slow(
        tags: Tags,
        slot: &Slot,
        seen: (u64, u64),
        folded: Option<&AtomicU128>,
        want: u64,
        fail: bool,
        is_current: &impl Fn() -> bool,
    ) -> Bump {
        // Invariant: the one written in `bump`, whose loop this is for the other
        // cases; the hot path's CAS there is this loop's add.
        let add = 1 | (u64::from(fail) << COUNT_BITS);
        let mut first = Some(seen);
        for _ in 0..MAX_RETRIES {
            // The hot path's read (counts, then tag) needs one more look at the
            // counts; every later pass reads afresh.
            let read = match first.take() {
                Some((c, tag)) => slot.confirm(c, tag),
                None => slot.read(),
            };
            let Some((tag, c)) = read else {
                continue;
            };
            let bucket = tag & !UNPLACED;
            let unplaced = tag & UNPLACED != 0;
            if unplaced && !is_sealed(c) {
                // Placed, the flag not yet cleared: clear it (anyone may).
                let _ = slot
                    .tag
                    .compare_exchange(tag, bucket, Ordering::AcqRel, Ordering::Acquire);
                continue;
            }
            if bucket == want {
                if unplaced {
                    // Leftovers: this record is the new bucket's first outcome.
                    if Self::place(slot, c, Some(fail)) {
                        let _ = slot.tag.compare_exchange(
                            tag,
                            bucket,
                            Ordering::AcqRel,
                            Ordering::Acquire,
                        );
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
                let next = c + add;
                if slot
                    .counts
                    .compare_exchange(c, next, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
                {
                    return Bump::Added {
                        rotated: calls(c) == 0,
                        n: calls(next),
                    };
                }
                continue;
            }
            let replaces = if tags.gen_of(bucket) == tags.gen_of(want) {
                // A later epoch of this generation has rotated this one out.
                tags.epoch(bucket) < tags.epoch(want)
            } else {
                // Mutant `time_stale_replace`: any other generation may replace it.
                cfg!(seawall_mutant = "time_stale_replace") || is_current()
            };
            if !replaces {
                return Bump::Dropped;
            }
            if unplaced {
                // Never placed: place it empty first, so no late first record of
                // it can place into what the next tag will own.
                let _ = Self::place(slot, c, None);
                continue;
            }
            if !is_sealed(c)
                && slot
                    .counts
                    .compare_exchange(c, c | SEALED, Ordering::AcqRel, Ordering::Acquire)
                    .is_err()
            {
                continue;
            }
            if let Some(folded) = folded
                && !Self::fold(folded, slot, bucket, c | SEALED)
            {
                return Bump::Corrupt;
            }
            // Whoever wins, the next pass finds the tag moved on.
            let _ = slot.tag.compare_exchange(
                tag,
                want | UNPLACED,
                Ordering::AcqRel,
                Ordering::Acquire,
            );
        }
        Bump::Corrupt
    }

    /// Place a new bucket's counts (its `first` outcome, if any) over `c`, the
    /// leftovers under the slot's flagged tag; `false` when another record
    /// changed them first.
    fn place(slot: &Slot, c: u64, first: Option<bool>) -> bool {
        let fresh = placed_over(c, first);
        #[cfg(seawall_mutant = "bucket_reset")]
        {
            // Mutant: a blind store swallows a concurrent record placed first.
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

    /// `slot`'s bucket: its unflagged tag and its own counts (zero for
    /// leftovers); read again while a rotation moves the tag under the read.
    fn bucket_of(slot: &Slot) -> (u64, u64) {
        (0..MAX_RETRIES)
            .find_map(|_| slot.read())
            .map_or((0, 0), |(tag, c)| (tag & !UNPLACED, own_counts(tag, c)))
    }

    /// Successes counted by slot `i`: the folded ones, plus its bucket's unless
    /// folded already. A slot read in the middle of a rotation is read again.
    fn slot_successes(&self, i: usize) -> u64 {
        let (slot, folded) = (&self.main[i], &self.folded[i]);
        let mut seen = (0, 0, 0);
        for _ in 0..MAX_RETRIES {
            // The tag both before and after: it named the slot all along (tags are
            // never reused in a slot), so every bucket before it was folded before
            // `folded` was read, and the counts read are its own or its leftovers.
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
        let live = if has_folded(f, tag & !UNPLACED) {
            0
        } else {
            successes_in(own_counts(tag, c))
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
        let tags = self.tags();
        let live = |tag: u64| {
            let e = tags.epoch(tag);
            tags.gen_of(tag) == generation && e <= head && head - e < span
        };
        let mut c = WindowCounts::default();
        let n = self.live_len();
        for slot in &self.main[..n] {
            let (tag, counts) = Self::bucket_of(slot);
            if live(tag) {
                c.calls += u64::from(calls(counts));
                c.failures += u64::from(fails(counts));
            }
        }
        for slot in &self.slow[..n] {
            let (tag, counts) = Self::bucket_of(slot);
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
        let tags = self.tags();
        let generation = tags.generation(generation);
        let (epoch, advanced) = self.advance(now);
        // `index` is below `B` unless the divisor was overwritten in a shared region.
        let index = usize::try_from(self.buckets.div_rem(epoch).1).map_err(|_| Corrupt)?;
        let (Some(main), Some(slow), Some(folded)) = (
            self.main.get(index),
            self.slow.get(index),
            self.folded.get(index),
        ) else {
            return Err(Corrupt);
        };
        let want = tags.of(generation, epoch);
        let (rotated, n) =
            match Self::bump(tags, main, Some(folded), want, sample.failure, &is_current) {
                Bump::Added { rotated, n } => (rotated, n),
                Bump::Dropped => return Ok(Recorded::default()),
                Bump::Corrupt => return Err(Corrupt),
            };
        if sample.slow
            && matches!(
                Self::bump(tags, slow, None, want, sample.failure, &is_current),
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

    const QUIET_SUCCESS: bool = true;

    #[inline]
    fn record_quiet_success(&self, generation: u32, now: u64, gate: u64) -> bool {
        // `record_gen`'s quiet case, with nothing written unless it is one: the
        // epoch is the head's (a record that would raise it is not quiet), and
        // the CAS is `bump`'s hot path, tried once, under the invariant written
        // there: counts read before the tag was found to be this bucket's are
        // this bucket's or older.
        let head = self.head.load(Ordering::Acquire);
        if self.width.quotient_exceeds(now, head) {
            return false;
        }
        let index = self.buckets.div_rem(head).1;
        let Some(slot) = usize::try_from(index).ok().and_then(|i| self.main.get(i)) else {
            return false;
        };
        let tags = self.tags();
        let Ok(c) = slot.live_counts(tags.of(generation, head)) else {
            return false;
        };
        // `n ≥ gate`: the count after is past it.
        c & COUNT_MASK >= gate
            && slot
                .counts
                .compare_exchange(c, c + 1, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
    }

    fn successes(&self) -> u64 {
        (0..B).fold(0u64, |t, i| t.wrapping_add(self.slot_successes(i)))
    }

    fn counts_gen(&self, generation: u32, now: u64) -> WindowCounts {
        let generation = self.tags().generation(generation);
        let head = self.head.load(Ordering::Acquire).max(self.width.div(now));
        self.sum(generation, head)
    }

    fn latest_gen(&self) -> Option<u32> {
        let tags = self.tags();
        self.main[..self.live_len()]
            .iter()
            .map(Self::bucket_of)
            .filter(|&(_, c)| calls(c) > 0)
            .max_by_key(|&(tag, _)| tags.epoch(tag))
            .map(|(tag, _)| tags.gen_of(tag))
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
