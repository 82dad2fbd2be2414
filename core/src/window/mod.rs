//! Sliding windows of call outcomes (DESIGN §2): count-based and time-based.
//!
//! Both are lock-free, fixed-size and pointer-free. Every entry carries the
//! *generation* it was written in (the low 16 bits of the breaker epoch that was
//! `closed` when the call was admitted): a new generation empties the window without
//! touching it, and a record from an older generation can never land in a newer one
//! (DESIGN §3.4, "stale outcomes never decide").

mod count;
mod time;

pub use count::CountWindow;
pub use time::TimeWindow;

use crate::corrupt::Corrupt;
use crate::error::ConfigError;

/// Shape of a sliding window, as given in configuration.
#[repr(C, u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WindowConfig {
    /// The last `size` outcomes exactly (resilience4j `COUNT_BASED`).
    Count {
        /// Number of outcomes kept, `1 ..= capacity` of the [`CountWindow`] type.
        size: u32,
    },
    /// The current partial bucket plus the `buckets − 1` before it
    /// (resilience4j `TIME_BASED`).
    Time {
        /// Number of buckets, `1 ..= capacity` of the [`TimeWindow`] type.
        buckets: u32,
        /// Width of one bucket in nanoseconds, at least [`TimeWindow::MIN_BUCKET_WIDTH_NS`].
        bucket_width_ns: u64,
    },
}

impl WindowConfig {
    /// The DESIGN default: 10 s in 10 buckets of 1 s.
    pub const DEFAULT: Self = Self::Time {
        buckets: 10,
        bucket_width_ns: crate::time::secs(1),
    };
}

impl Default for WindowConfig {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// One outcome as a window sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Sample {
    /// The call failed.
    pub failure: bool,
    /// The call took longer than `slow_call_duration`.
    pub slow: bool,
}

/// What a window holds right now.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct WindowCounts {
    /// Outcomes in the window.
    pub calls: u64,
    /// Failed outcomes in the window.
    pub failures: u64,
    /// Slow outcomes (failed or not) in the window.
    pub slow: u64,
    /// Outcomes both slow and failed.
    pub slow_failures: u64,
}

/// What a record did: the counts to evaluate, and who counts its success.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Recorded {
    /// The window's counts when the outcome may have raised a rate or crossed
    /// the gate (the caller must evaluate), else `None`.
    pub counts: Option<WindowCounts>,
    /// The window keeps this success in [`SlidingWindow::successes`]; otherwise
    /// (a failure, a dropped record, a window that keeps none) the caller counts
    /// successes itself.
    pub kept: bool,
}

/// A sliding window the circuit breaker can count in. Implemented by
/// [`CountWindow`] and [`TimeWindow`]; sealed.
pub trait SlidingWindow: sealed::Sealed + Sized {
    /// Build an empty window for `config`; a config of the other kind, or with a
    /// size outside what this type holds, is an error naming the field.
    fn new(config: &WindowConfig) -> Result<Self, ConfigError>;

    /// The configuration this window was built with.
    fn config(&self) -> WindowConfig;

    /// Record one outcome of `generation` at `now` (ns). `is_current` answers
    /// whether `generation` is still the breaker's closed epoch; it is asked only
    /// when the record meets another generation.
    ///
    /// Returns the window's counts when the outcome may have raised a failure or
    /// slow-call rate, or crossed `gate` calls (so the caller must evaluate), and
    /// `None` when it cannot have (a plain success into a live, already-busy
    /// bucket) or when the record was dropped as stale; and whether the window
    /// keeps the success in [`successes`](Self::successes). [`Corrupt`] when the
    /// window's memory holds what this code never writes (a corrupted shared
    /// region): then the outcome may or may not have been counted.
    #[doc(hidden)]
    fn record_gen(
        &self,
        generation: u32,
        sample: Sample,
        now: u64,
        gate: u64,
        is_current: impl Fn() -> bool,
    ) -> Result<Recorded, Corrupt>;

    /// Whether [`record_quiet_success`](Self::record_quiet_success) can ever
    /// record (the breaker skips asking when not).
    #[doc(hidden)]
    const QUIET_SUCCESS: bool = false;

    /// Record a plain success of `generation` at `now` (ns) if it can decide
    /// nothing: it lands in a live bucket of the current epoch that already
    /// holds more than `gate` calls (so the rates can only fall) and the window
    /// keeps it in [`successes`](Self::successes). `false` when it cannot be
    /// recorded so, and then nothing was written.
    #[doc(hidden)]
    #[inline]
    fn record_quiet_success(&self, generation: u32, now: u64, gate: u64) -> bool {
        let _ = (generation, now, gate);
        false
    }

    /// Lifetime successes the window kept (see [`Recorded::kept`]), exact
    /// whenever no record is half-way. Reading changes nothing.
    #[doc(hidden)]
    fn successes(&self) -> u64;

    /// The counts of `generation` as of `now` (ns). Reading changes nothing.
    #[doc(hidden)]
    fn counts_gen(&self, generation: u32, now: u64) -> WindowCounts;

    /// The newest generation the window holds outcomes of, if any.
    #[doc(hidden)]
    fn latest_gen(&self) -> Option<u32>;

    /// The minimum number of calls that can ever be in the window, capped:
    /// `min(minimum_calls, size)` for a count window, `minimum_calls` otherwise.
    #[doc(hidden)]
    fn gate(&self, minimum_calls: u64) -> u64;
}

mod sealed {
    pub trait Sealed {}
    impl<const N: usize> Sealed for super::CountWindow<N> {}
    impl<const B: usize> Sealed for super::TimeWindow<B> {}
}
