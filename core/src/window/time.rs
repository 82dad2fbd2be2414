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

use crossbeam_utils::CachePadded;

use super::{Sample, SlidingWindow, WindowConfig, WindowCounts};
use crate::corrupt::{Corrupt, MAX_RETRIES};
use crate::div::Divisor;
use crate::error::{ConfigError, Field, Problem};
use crate::sync::{AtomicU64, AtomicU128, Ordering, raise_to};

const EPOCH_BITS: u32 = 48;
const EPOCH_MASK: u64 = (1 << EPOCH_BITS) - 1;
const GEN_MASK: u32 = (1 << 28) - 1;
const COUNT_BITS: u32 = 26;
const COUNT_MASK: u64 = (1 << COUNT_BITS) - 1;
/// Outcomes one bucket can count; further outcomes in the same bucket count in the
/// breaker's totals only (67 million per bucket width).
pub const MAX_BUCKET_CALLS: u32 = (1 << COUNT_BITS) - 1;

/// Time-based window of up to `B` buckets; the configured bucket count may be smaller.
///
/// `size_of::<TimeWindow<B>>()` is `32·B` bytes of buckets, one cache line (128 bytes
/// on x86-64 and aarch64) for the epoch high-water mark, and 32 bytes of
/// configuration (bucket count and width with their precomputed reciprocals),
/// rounded to the cache-line alignment.
#[repr(C)]
pub struct TimeWindow<const B: usize> {
    head: CachePadded<AtomicU64>,
    main: [AtomicU128; B],
    slow: [AtomicU128; B],
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
}

impl Bucket {
    // low 64 bits: generation bits 0–15 | epoch (48); high 64 bits: n (26) |
    // fails (26) | generation bits 16–27 (12).
    fn unpack(v: u128) -> Self {
        let tag = v as u64;
        let hi = (v >> 64) as u64;
        Self {
            generation: ((tag >> EPOCH_BITS) as u32) | (((hi >> (2 * COUNT_BITS)) as u32) << 16),
            epoch: tag & EPOCH_MASK,
            n: (hi & COUNT_MASK) as u32,
            fails: ((hi >> COUNT_BITS) & COUNT_MASK) as u32,
        }
    }

    fn pack(self) -> u128 {
        let g = u64::from(self.generation & GEN_MASK);
        let tag = ((g & 0xFFFF) << EPOCH_BITS) | self.epoch;
        let hi = (u64::from(self.n) & COUNT_MASK)
            | ((u64::from(self.fails) & COUNT_MASK) << COUNT_BITS)
            | ((g >> 16) << (2 * COUNT_BITS));
        u128::from(tag) | (u128::from(hi) << 64)
    }
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

    /// Add one outcome to slot `cell` for tag (`generation`, `epoch`).
    fn bump(
        cell: &AtomicU128,
        generation: u32,
        epoch: u64,
        fail: bool,
        is_current: &impl Fn() -> bool,
    ) -> Bump {
        // Invariant: a slot's tag only moves to a later epoch of its generation, or
        // to another generation by a record confirmed current after the slot was
        // read; the counts of a tag only grow. So a CAS from the value just read adds
        // to exactly the bucket that was checked, or replaces exactly the stale bucket
        // that was seen. A CAS fails only when another record changed the slot,
        // so only a corrupted or hostile writer reaches the bound.
        for _ in 0..MAX_RETRIES {
            let raw = cell.load(Ordering::Acquire);
            let cur = Bucket::unpack(raw);
            let fresh = Bucket {
                generation,
                epoch,
                n: 1,
                fails: u32::from(fail),
            };
            let (next, rotated) = if cur.n == 0 {
                // Never written.
                (fresh, true)
            } else if cur.generation == generation && cur.epoch == epoch {
                if cur.n == MAX_BUCKET_CALLS {
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
            #[cfg(not(seawall_mutant = "bucket_reset"))]
            if cell
                .compare_exchange(raw, next.pack(), Ordering::AcqRel, Ordering::Acquire)
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
                    .compare_exchange(raw, next.pack(), Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
                {
                    return Bump::Added { rotated, n: next.n };
                }
            }
        }
        Bump::Corrupt
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

    fn record_gen(
        &self,
        generation: u32,
        sample: Sample,
        now: u64,
        gate: u64,
        is_current: impl Fn() -> bool,
    ) -> Result<Option<WindowCounts>, Corrupt> {
        let generation = generation & GEN_MASK;
        let (epoch, advanced) = self.advance(now);
        // `rem` is below `B` unless the divisor was overwritten in a shared region.
        let index = usize::try_from(self.buckets.rem(epoch)).map_err(|_| Corrupt)?;
        let (Some(main), Some(slow)) = (self.main.get(index), self.slow.get(index)) else {
            return Err(Corrupt);
        };
        let (rotated, n) = match Self::bump(main, generation, epoch, sample.failure, &is_current) {
            Bump::Added { rotated, n } => (rotated, n),
            Bump::Dropped => return Ok(None),
            Bump::Corrupt => return Err(Corrupt),
        };
        if sample.slow
            && matches!(
                Self::bump(slow, generation, epoch, sample.failure, &is_current),
                Bump::Corrupt
            )
        {
            return Err(Corrupt);
        }
        // A plain success added to a live bucket that alone already passes the gate
        // can only lower both rates: no evaluation needed (the hot path).
        let quiet = !sample.failure && !sample.slow && !rotated && !advanced;
        if quiet && u64::from(n) > gate {
            return Ok(None);
        }
        Ok(Some(self.sum(generation, epoch)))
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
        assert_eq!(w.counts_gen(0, now), WindowCounts::default());
        assert_eq!(w.latest_gen(), None);
    }
}
