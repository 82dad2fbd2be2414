//! Health (DESIGN §7): a windowed log-linear latency histogram with p50 / p90 /
//! p99, the error rate, and the healthy / degraded / unhealthy rule.
//!
//! # Protocol
//! The window is `B` time buckets of a fixed width, like the breaker's time
//! window. Each time bucket holds one 128-bit word (epoch tag, calls, errors) and
//! [`HISTOGRAM_BUCKETS`] 64-bit latency counters, **each carrying its own epoch
//! tag** (40 bits of epoch, 24 bits of count). Every record is a CAS on the word
//! it counts in: if the tag is its epoch it adds one; if the tag is older it
//! replaces the stale count with 1 for its epoch; if newer, the record belongs to a
//! bucket already rotated out and counts nowhere. So there is no separate "reset"
//! that could swallow a record made for the new epoch, and concurrent records to a
//! live bucket are never lost — the care of `window/time.rs`, per counter.

mod histogram;

pub use histogram::{HISTOGRAM_BUCKETS, MAX_TRACKED_NS};

use crossbeam_utils::CachePadded;

use crate::corrupt::{Corrupt, MAX_RETRIES};
use crate::error::{ConfigError, Field, Problem};
use crate::ratio::{PPM, Ratio};
use crate::sync::{AtomicU64, AtomicU128, Ordering, raise_to};
use crate::time::{millis, secs};

/// Epoch bits of a latency counter's tag: with buckets of at least 1 ms, 2⁴⁰
/// epochs are 34 years of a monotonic clock.
const TAG_BITS: u32 = 40;
const TAG_MASK: u64 = (1 << TAG_BITS) - 1;
const COUNT_MAX: u64 = (1 << (64 - TAG_BITS)) - 1;

/// Health of a dependency.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HealthStatus {
    /// Within every threshold (or no calls in the window).
    Healthy = 0,
    /// Past a degraded threshold.
    Degraded = 1,
    /// Past an unhealthy threshold.
    Unhealthy = 2,
}

impl HealthStatus {
    /// `healthy`, `degraded` or `unhealthy`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Healthy => "healthy",
            Self::Degraded => "degraded",
            Self::Unhealthy => "unhealthy",
        }
    }
}

/// Health window and status rule. Durations in ns; rates are compared strictly
/// (`errors / calls > rate`, `p99 > limit`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HealthConfig {
    /// Buckets in the window (`1 ..= B`). Default 10.
    pub buckets: u32,
    /// Width of a bucket (ns, `≥ 1 ms`). Default 1 s.
    pub bucket_width_ns: u64,
    /// Degraded when the error rate is above this. Default 10 %.
    pub degraded_error_rate: Ratio,
    /// Unhealthy when the error rate is above this (`≥ degraded`). Default 50 %.
    pub unhealthy_error_rate: Ratio,
    /// Degraded when p99 is above this (ns). Default 2 s.
    pub degraded_p99_ns: u64,
    /// Unhealthy when p99 is above this (ns, `≥ degraded`). Default 5 s.
    pub unhealthy_p99_ns: u64,
}

impl HealthConfig {
    /// The seed's rule over a 10 s window of 10 buckets: unhealthy if error rate >
    /// 50 % or p99 > 5 s; degraded if > 10 % or p99 > 2 s.
    pub const DEFAULT: Self = Self {
        buckets: 10,
        bucket_width_ns: secs(1),
        degraded_error_rate: Ratio::from_percent(10),
        unhealthy_error_rate: Ratio::from_percent(50),
        degraded_p99_ns: secs(2),
        unhealthy_p99_ns: secs(5),
    };

    /// Narrowest bucket accepted.
    pub const MIN_BUCKET_WIDTH_NS: u64 = millis(1);

    /// Check every field but the upper bound of `buckets` (the type's `B`).
    pub const fn validate(&self) -> Result<(), ConfigError> {
        if self.buckets == 0 {
            return Err(ConfigError::new(Field::HealthBuckets, Problem::Zero));
        }
        if self.bucket_width_ns == 0 {
            return Err(ConfigError::new(Field::HealthBucketWidth, Problem::Zero));
        }
        if let Err(e) = ConfigError::check_range(
            Field::HealthBucketWidth,
            self.bucket_width_ns,
            Self::MIN_BUCKET_WIDTH_NS,
            u64::MAX / self.buckets as u64,
        ) {
            return Err(e);
        }
        if self.degraded_error_rate.ppm() > PPM {
            return Err(ConfigError::range(Field::DegradedErrorRate, 0, PPM));
        }
        if self.unhealthy_error_rate.ppm() > PPM {
            return Err(ConfigError::range(Field::UnhealthyErrorRate, 0, PPM));
        }
        if self.unhealthy_error_rate.ppm() < self.degraded_error_rate.ppm() {
            return Err(ConfigError::new(
                Field::UnhealthyErrorRate,
                Problem::BelowField(Field::DegradedErrorRate),
            ));
        }
        if self.unhealthy_p99_ns < self.degraded_p99_ns {
            return Err(ConfigError::new(
                Field::UnhealthyP99,
                Problem::BelowField(Field::DegradedP99),
            ));
        }
        Ok(())
    }

    /// The status for an error rate of `errors / calls` and a p99 of `p99_ns`.
    #[must_use]
    pub const fn status(&self, calls: u64, errors: u64, p99_ns: Option<u64>) -> HealthStatus {
        const fn above(errors: u64, calls: u64, rate: Ratio) -> bool {
            (errors as u128) * (PPM as u128) > (rate.ppm() as u128) * (calls as u128)
        }
        let p99 = match p99_ns {
            Some(p) => p,
            None => 0,
        };
        if calls == 0 {
            HealthStatus::Healthy
        } else if above(errors, calls, self.unhealthy_error_rate) || p99 > self.unhealthy_p99_ns {
            HealthStatus::Unhealthy
        } else if above(errors, calls, self.degraded_error_rate) || p99 > self.degraded_p99_ns {
            HealthStatus::Degraded
        } else {
            HealthStatus::Healthy
        }
    }
}

impl Default for HealthConfig {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// A picture of the window.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HealthSnapshot {
    /// Calls in the window.
    pub calls: u64,
    /// Failed calls in the window.
    pub errors: u64,
    /// Latencies in the window's histogram: `calls`, unless one latency bucket
    /// of one time bucket saturated at 2²⁴ − 1 records.
    pub latencies: u64,
    /// `errors / calls`; `None` for an empty window.
    pub error_rate: Option<Ratio>,
    /// Median latency (ns), within 3.125 %; `None` for an empty window.
    pub p50_ns: Option<u64>,
    /// 90th percentile latency (ns), within 3.125 %.
    pub p90_ns: Option<u64>,
    /// 99th percentile latency (ns), within 3.125 %.
    pub p99_ns: Option<u64>,
    /// The status rule applied to the above.
    pub status: HealthStatus,
}

/// One time bucket: its calls / errors word and its latency counters.
#[repr(C)]
struct Slot {
    totals: AtomicU128,
    latency: [AtomicU64; HISTOGRAM_BUCKETS],
}

/// Windowed latency and error health of one dependency (DESIGN §7).
///
/// `size_of::<Health<B>>()` is one 128-byte line for the epoch high-water mark,
/// `4 112·B` bytes of buckets and 48 bytes of configuration, rounded to 128:
/// 41 344 bytes for the default `Health<10>` on x86-64.
#[repr(C)]
pub struct Health<const B: usize = 10> {
    head: CachePadded<AtomicU64>,
    slots: [Slot; B],
    config: HealthConfig,
}

/// Outcome of adding one to a tagged word.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Bump {
    Added,
    /// The word already belongs to a newer epoch (or is full): the record counts
    /// in no window.
    Dropped,
    /// The CAS lost [`MAX_RETRIES`] races in a row: the word is being written by
    /// something that is not this protocol.
    Corrupt,
}

impl<const B: usize> Health<B> {
    /// An empty window, or the first invalid field.
    pub fn new(config: HealthConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        ConfigError::check_range(Field::HealthBuckets, u64::from(config.buckets), 1, B as u64)?;
        Ok(Self {
            head: CachePadded::new(AtomicU64::new(0)),
            slots: core::array::from_fn(|_| Slot {
                totals: AtomicU128::new(0),
                latency: core::array::from_fn(|_| AtomicU64::new(0)),
            }),
            config,
        })
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &HealthConfig {
        &self.config
    }

    /// Record one call that took `latency_ns` and `failed` or not, at `now` (ns).
    // Inline: the checked form is the same code; no call or nested result is
    // left on the hot path of in-process callers.
    #[inline]
    pub fn record(&self, latency_ns: u64, failed: bool, now: u64) {
        let _ = self.record_checked(latency_ns, failed, now);
    }

    /// [`record`](Self::record) for a window in memory others may write (a shared
    /// region): [`Corrupt`] when its configuration holds what
    /// [`new`](Self::new) never accepts (a bucket count of 0 or above `B`, a zero
    /// bucket width) or a counter kept changing under [`MAX_RETRIES`] passes.
    pub fn record_checked(&self, latency_ns: u64, failed: bool, now: u64) -> Result<(), Corrupt> {
        let (width, buckets) = (self.config.bucket_width_ns, self.config.buckets);
        if width == 0 || buckets == 0 || buckets as usize > B {
            return Err(Corrupt);
        }
        let (epoch, _) = raise_to(&self.head, now / width);
        let slot = self
            .slots
            .get((epoch % u64::from(buckets)) as usize)
            .ok_or(Corrupt)?;
        match Self::bump_totals(&slot.totals, epoch, failed) {
            Bump::Added => {}
            Bump::Dropped => return Ok(()),
            Bump::Corrupt => return Err(Corrupt),
        }
        let cell = slot
            .latency
            .get(histogram::index(latency_ns))
            .ok_or(Corrupt)?;
        match Self::bump_latency(cell, epoch) {
            Bump::Added | Bump::Dropped => Ok(()),
            Bump::Corrupt => Err(Corrupt),
        }
    }

    /// Calls, errors, p50 / p90 / p99 and status as of `now` (ns). Reading changes
    /// nothing.
    #[must_use]
    pub fn snapshot(&self, now: u64) -> HealthSnapshot {
        let head = self.head_epoch(now);
        let (calls, errors) = self.totals(head);
        let mut counts = [0u64; HISTOGRAM_BUCKETS];
        let n = self.merge(head, &mut counts);
        let q = |ppm: u64| quantile_of(&counts, n, ppm);
        let p99 = q(990_000);
        HealthSnapshot {
            calls,
            errors,
            latencies: n,
            error_rate: Ratio::of(errors, calls),
            p50_ns: q(500_000),
            p90_ns: q(900_000),
            p99_ns: p99,
            status: self.config.status(calls, errors, p99),
        }
    }

    /// The `q` quantile (nearest rank: the smallest latency with at least
    /// `⌈q · n⌉` of the window's `n` latencies at or below it), as its bucket's
    /// midpoint: within 3.125 % of the exact value. `None` for an empty window.
    #[must_use]
    pub fn quantile(&self, q: Ratio, now: u64) -> Option<u64> {
        let mut counts = [0u64; HISTOGRAM_BUCKETS];
        let n = self.merge(self.head_epoch(now), &mut counts);
        quantile_of(&counts, n, q.ppm().min(PPM))
    }

    /// The status as of `now` (ns).
    #[must_use]
    pub fn status(&self, now: u64) -> HealthStatus {
        self.snapshot(now).status
    }

    fn head_epoch(&self, now: u64) -> u64 {
        // A zero width never passes `new`; read from a corrupted shared region, it
        // counts as no time passed rather than a division by zero.
        let by_clock = now.checked_div(self.config.bucket_width_ns).unwrap_or(0);
        self.head.load(Ordering::Acquire).max(by_clock)
    }

    fn live(&self, epoch: u64, head: u64) -> bool {
        epoch <= head && head - epoch < u64::from(self.config.buckets)
    }

    fn live_slots(&self) -> &[Slot] {
        // Never past `B`, even when the field was overwritten in a shared region.
        &self.slots[..(self.config.buckets as usize).min(B)]
    }

    /// Calls and errors of the window ending at epoch `head`.
    fn totals(&self, head: u64) -> (u64, u64) {
        let (mut calls, mut errors) = (0, 0);
        for slot in self.live_slots() {
            let v = slot.totals.load(Ordering::Acquire);
            if self.live(v as u64, head) {
                let counts = (v >> 64) as u64;
                calls += counts & 0xFFFF_FFFF;
                errors += counts >> 32;
            }
        }
        (calls, errors)
    }

    /// Sum the live latency counters into `counts`; returns their total.
    fn merge(&self, head: u64, counts: &mut [u64; HISTOGRAM_BUCKETS]) -> u64 {
        let mut n = 0;
        let head_tag = head & TAG_MASK;
        for slot in self.live_slots() {
            for (c, cell) in counts.iter_mut().zip(&slot.latency) {
                let v = cell.load(Ordering::Acquire);
                let age = head_tag.wrapping_sub(v & TAG_MASK) & TAG_MASK;
                if v >> TAG_BITS > 0 && age < u64::from(self.config.buckets) {
                    *c += v >> TAG_BITS;
                    n += v >> TAG_BITS;
                }
            }
        }
        n
    }

    /// Add a call (and maybe an error) to the totals word for `epoch`.
    fn bump_totals(cell: &AtomicU128, epoch: u64, failed: bool) -> Bump {
        // Invariant: a word's tag only moves to a newer epoch and its counts of
        // one epoch only grow, so a CAS from the value read either adds to the
        // bucket that was checked or replaces exactly the stale one that was seen.
        // A CAS fails only when another record changed the word, so only a
        // corrupted or hostile writer reaches the bound.
        let mut raw = cell.load(Ordering::Acquire);
        for _ in 0..MAX_RETRIES {
            let tag = raw as u64;
            let counts = (raw >> 64) as u64;
            let (calls, errors) = (counts & 0xFFFF_FFFF, counts >> 32);
            let next_counts = match tag.cmp(&epoch) {
                core::cmp::Ordering::Equal if calls < 0xFFFF_FFFF => {
                    (calls + 1) | ((errors + u64::from(failed)) << 32)
                }
                core::cmp::Ordering::Less => 1 | (u64::from(failed) << 32),
                _ => return Bump::Dropped,
            };
            let next = u128::from(epoch) | (u128::from(next_counts) << 64);
            match cell.compare_exchange(raw, next, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return Bump::Added,
                Err(seen) => raw = seen,
            }
        }
        Bump::Corrupt
    }

    /// Add one latency to a tagged counter for `epoch`.
    fn bump_latency(cell: &AtomicU64, epoch: u64) -> Bump {
        let tag = epoch & TAG_MASK;
        // Invariant: as for the totals word — the tag only moves forward (in
        // serial order on 40 bits), the count of a tag only grows.
        let mut v = cell.load(Ordering::Acquire);
        for _ in 0..MAX_RETRIES {
            let (seen_tag, count) = (v & TAG_MASK, v >> TAG_BITS);
            let next = if seen_tag == tag {
                if count == COUNT_MAX {
                    return Bump::Dropped;
                }
                v + (1 << TAG_BITS)
            } else if count == 0 || tag_newer(tag, seen_tag) {
                tag | (1 << TAG_BITS)
            } else {
                return Bump::Dropped;
            };
            #[cfg(seawall_mutant = "health_blind_rotation")]
            if seen_tag != tag {
                // Mutant: a rotation by blind store swallows a concurrent record
                // for the new epoch.
                cell.store(next, Ordering::Release);
                return Bump::Added;
            }
            match cell.compare_exchange(v, next, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return Bump::Added,
                Err(seen) => v = seen,
            }
        }
        Bump::Corrupt
    }
}

/// `a` is a later 40-bit epoch tag than `b` (serial-number arithmetic).
const fn tag_newer(a: u64, b: u64) -> bool {
    let d = a.wrapping_sub(b) & TAG_MASK;
    d != 0 && d < (1 << (TAG_BITS - 1))
}

/// Nearest-rank quantile `ppm / 10⁶` of a merged histogram holding `n` values.
fn quantile_of(counts: &[u64; HISTOGRAM_BUCKETS], n: u64, ppm: u64) -> Option<u64> {
    if n == 0 {
        return None;
    }
    let rank = (u128::from(n) * u128::from(ppm))
        .div_ceil(u128::from(PPM))
        .max(1);
    let mut seen = 0u128;
    for (i, c) in counts.iter().enumerate() {
        seen += u128::from(*c);
        if seen >= rank {
            return Some(histogram::representative(i));
        }
    }
    counts
        .iter()
        .rposition(|c| *c > 0)
        .map(histogram::representative)
}

impl<const B: usize> core::fmt::Debug for Health<B> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Health")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}
