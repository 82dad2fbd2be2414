//! The breaker as it lives in a region: a core breaker next to the permit table
//! that makes every permit usable once, and what sharers must agree on.

use core::mem::MaybeUninit;

use seawall_core::{
    BreakerConfig, CircuitBreaker, ConfigError, CountWindow, SlidingWindow, TimeWindow,
};
#[cfg(not(loom))]
use seawall_core::{Field, Ratio, WindowConfig};

#[cfg(not(loom))]
use crate::entropy::entropy;
use crate::heal::HealGate;
use crate::permits::{PERMIT_SLOTS, PermitTable};
#[cfg(not(loom))]
use crate::shared::{Agreement, Shareable};

/// Largest count window (calls) a [`Breaker`](super::Breaker) holds.
pub const COUNT_WINDOW_CAPACITY: usize = 1024;
/// Largest time window (buckets) a [`Breaker`](super::Breaker) holds.
pub const TIME_WINDOW_CAPACITY: usize = 128;

/// A core breaker and its permit table of `N` slots, laid out for sharing.
#[repr(C)]
pub struct BreakerCell<W: SlidingWindow, const N: usize = PERMIT_SLOTS> {
    pub(super) breaker: CircuitBreaker<W>,
    pub(super) permits: PermitTable<N>,
    /// When this breaker's permits were last looked at for dead holders.
    pub(super) heal: HealGate,
}

/// The cell behind count-window breakers with a permit table of `N` slots.
pub type CountCell<const N: usize = PERMIT_SLOTS> =
    BreakerCell<CountWindow<COUNT_WINDOW_CAPACITY>, N>;
/// The cell behind time-window breakers with a permit table of `N` slots.
pub type TimeCell<const N: usize = PERMIT_SLOTS> = BreakerCell<TimeWindow<TIME_WINDOW_CAPACITY>, N>;

impl<W: SlidingWindow, const N: usize> BreakerCell<W, N> {
    /// The core breaker (reading it, or a step that needs no permit slot).
    #[must_use]
    pub fn breaker(&self) -> &CircuitBreaker<W> {
        &self.breaker
    }

    /// The permit table next to it.
    #[must_use]
    pub fn permits(&self) -> &PermitTable<N> {
        &self.permits
    }

    /// Build in place: the core breaker by value (a few KiB), the permit table
    /// slot by slot, keyed by `salt` (random for every real table: it is what
    /// makes a permit of another table fail).
    pub fn init(
        slot: &mut MaybeUninit<Self>,
        config: &BreakerConfig,
        salt: u64,
    ) -> Result<(), ConfigError> {
        let breaker = CircuitBreaker::<W>::new(*config)?;
        let p = slot.as_mut_ptr();
        // SAFETY: `p` comes from `&mut MaybeUninit<Self>`: writable and aligned;
        // each field is written once through a raw pointer, never read before.
        unsafe { (&raw mut (*p).breaker).write(breaker) };
        // SAFETY: as above; `MaybeUninit<PermitTable<N>>` has the table's layout.
        let permits =
            unsafe { &mut *(&raw mut (*p).permits).cast::<MaybeUninit<PermitTable<N>>>() };
        PermitTable::init(permits, salt);
        // SAFETY: as above; written once, never read before.
        unsafe { (&raw mut (*p).heal).write(HealGate::new(crate::heal::this_pid_namespace())) };
        Ok(())
    }
}

#[cfg(not(loom))]
/// What every process sharing a breaker must agree on: every field of the
/// configuration except `jitter_seed`. The region's permit slots come after
/// these (each cell type adds its own, see `shareable_breaker!`).
#[must_use]
pub fn breaker_agreement(c: &BreakerConfig) -> Agreement {
    let BreakerConfig {
        window,
        minimum_calls,
        failure_rate_threshold,
        slow_call_rate_threshold,
        slow_call_duration_ns,
        consecutive_failures,
        open_duration_ns,
        open_backoff_multiplier,
        max_open_duration_ns,
        open_jitter_factor,
        half_open_max_calls,
        half_open_success_threshold,
        half_open_max_wait_ns,
        // Each process may draw its own seed; the region keeps its creator's, so
        // a different one is no disagreement.
        jitter_seed: _,
    } = *c;
    let agreement = Agreement::new(b"breaker\0");
    // Kind, size and bucket width are three words whichever the kind, so that the
    // fingerprint of either kind is laid out alike.
    let agreement = match window {
        WindowConfig::Count { size } => agreement
            .value(Field::WindowKind, 1)
            .value(Field::WindowSize, u64::from(size))
            .value(Field::WindowBucketWidth, 0),
        WindowConfig::Time {
            buckets,
            bucket_width_ns,
        } => agreement
            .value(Field::WindowKind, 2)
            .value(Field::WindowBuckets, u64::from(buckets))
            .value(Field::WindowBucketWidth, bucket_width_ns),
    };
    agreement
        .value(Field::MinimumCalls, u64::from(minimum_calls))
        .optional(
            Field::FailureRateThreshold,
            failure_rate_threshold.map(Ratio::ppm),
        )
        .value(Field::SlowCallRateThreshold, slow_call_rate_threshold.ppm())
        .optional(Field::SlowCallDuration, slow_call_duration_ns)
        .optional(
            Field::ConsecutiveFailures,
            consecutive_failures.map(u64::from),
        )
        .value(Field::OpenDuration, open_duration_ns)
        .value(Field::OpenBackoffMultiplier, open_backoff_multiplier.ppm())
        .optional(Field::MaxOpenDuration, max_open_duration_ns)
        .value(Field::OpenJitterFactor, open_jitter_factor.ppm())
        .value(Field::HalfOpenMaxCalls, u64::from(half_open_max_calls))
        .value(
            Field::HalfOpenSuccessThreshold,
            u64::from(half_open_success_threshold),
        )
        .optional(Field::HalfOpenMaxWait, half_open_max_wait_ns)
}

#[cfg(not(loom))]
macro_rules! shareable_breaker {
    ($cell:ty, $slots:expr, $layout:expr, $what:expr) => {
        // SAFETY: `BreakerCell` is repr(C) of a core `CircuitBreaker` (repr(C),
        // pointer-free, plain fields written only by `new`) and a `PermitTable`
        // (a salt written only by `init`, then atomics); neither needs Drop.
        unsafe impl Shareable for $cell {
            const FAMILY: &'static str = "breaker";
            const LAYOUT_ID: u32 = $layout;
            const DESCRIPTION: &'static str = $what;
            type Config = BreakerConfig;
            fn agreement(config: &BreakerConfig) -> Agreement {
                // The size is the type's, so a sharer of another size never gets
                // this far (its layout differs); the breaker's handle names the
                // field from the fingerprints all the same.
                breaker_agreement(config).value(Field::PermitSlots, $slots)
            }
            fn config(&self) -> BreakerConfig {
                *self.breaker.config()
            }
            fn init(
                slot: &mut MaybeUninit<Self>,
                config: &BreakerConfig,
            ) -> Result<(), ConfigError> {
                Self::init(slot, config, entropy())
            }
        }
    };
}

// 0x0103 / 0x0104: permit slots name their process in the word that claims them.
// 0x0111 ..= 0x0118: the core's totals count probes apart (closed permits are
// counted when recorded). 0x0121 ..= 0x0128: the core's `rejected` total is
// spread over four lines. 0x0132 ..= 0x0138 (time windows only): a bucket is
// a 64-bit tag and a 64-bit counts word instead of one 128-bit word. One pair
// of layout ids per permit table size (`super::slots`).
#[cfg(not(loom))]
shareable_breaker!(
    CountCell<256>,
    256,
    0x0121,
    "count-window circuit breaker (256 permit slots)"
);
#[cfg(not(loom))]
shareable_breaker!(
    TimeCell<256>,
    256,
    0x0132,
    "time-window circuit breaker (256 permit slots)"
);
#[cfg(not(loom))]
shareable_breaker!(
    CountCell<4096>,
    4096,
    0x0123,
    "count-window circuit breaker (4096 permit slots)"
);
#[cfg(not(loom))]
shareable_breaker!(
    TimeCell<4096>,
    4096,
    0x0134,
    "time-window circuit breaker (4096 permit slots)"
);
#[cfg(not(loom))]
shareable_breaker!(
    CountCell<32768>,
    32768,
    0x0125,
    "count-window circuit breaker (32768 permit slots)"
);
#[cfg(not(loom))]
shareable_breaker!(
    TimeCell<32768>,
    32768,
    0x0136,
    "time-window circuit breaker (32768 permit slots)"
);
#[cfg(not(loom))]
shareable_breaker!(
    CountCell<262_144>,
    262_144,
    0x0127,
    "count-window circuit breaker (262144 permit slots)"
);
#[cfg(not(loom))]
shareable_breaker!(
    TimeCell<262_144>,
    262_144,
    0x0138,
    "time-window circuit breaker (262144 permit slots)"
);
