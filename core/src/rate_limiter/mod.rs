//! Rate limiter (DESIGN §10): the generic cell rate algorithm (GCRA, the ATM
//! Forum's traffic-shaping algorithm, as in the `governor` crate), one 64-bit
//! word per limiter.
//!
//! # Protocol
//! The word holds the theoretical arrival time `TAT` in nanoseconds of the
//! caller's monotonic clock. With the emission interval `T = ⌊period / rate⌋` and
//! the tolerance `τ = T·(burst − 1)`, taking `n` cells at `now` computes
//! `next = max(TAT, now) + n·T` and admits iff `next − T − now ≤ τ`, storing
//! `TAT = next` with one compare-and-swap from the value it read (a lost race
//! decides again on the new value). A rejection reports
//! `retry_after = next − T − τ − now` and writes nothing.
//!
//! * A clock that steps back only makes the test stricter; the retry-after is
//!   measured from the caller's `now`.
//! * The clock ends at `u64::MAX`: a request whose `next` would lie past it is
//!   never admitted (`retry_after_ns = u64::MAX`), so the stored `TAT` is always
//!   the exact GCRA value and saturation never admits more.
//! * A keyed limiter is a fixed table of such words indexed by a hash of the
//!   key; keys that share a word share its cells, so collisions only make it
//!   stricter.

mod config;
mod error;
mod gcra;
mod keyed;
mod limiter;

pub use config::RateLimiterConfig;
pub use error::RateLimitError;
pub use keyed::KeyedRateLimiter;
pub use limiter::RateLimiter;
