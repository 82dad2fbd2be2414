//! Time as the core sees it: `u64` nanoseconds of a monotonic clock the caller reads
//! (DESIGN §0). The core never reads a clock itself.

/// Nanoseconds in one millisecond.
pub const NANOS_PER_MILLI: u64 = 1_000_000;
/// Nanoseconds in one second.
pub const NANOS_PER_SEC: u64 = 1_000_000_000;

/// `ms` milliseconds in nanoseconds, saturating.
#[must_use]
pub const fn millis(ms: u64) -> u64 {
    ms.saturating_mul(NANOS_PER_MILLI)
}

/// `s` seconds in nanoseconds, saturating.
#[must_use]
pub const fn secs(s: u64) -> u64 {
    s.saturating_mul(NANOS_PER_SEC)
}
