//! The one monotonic clock of the experiment.
//!
//! seawall's core never reads a clock: every call takes `now` in `u64` nanoseconds
//! of a monotonic clock the caller supplies (DESIGN §0). Every part of the gameday
//! (load generator, services, sampler, report) reads this one process-wide clock,
//! so a time written by one part means the same instant to every other.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

static ORIGIN: OnceLock<Instant> = OnceLock::new();

/// The clock's origin: the first instant anyone asked for the time.
#[must_use]
pub fn origin() -> Instant {
    *ORIGIN.get_or_init(Instant::now)
}

/// Nanoseconds since [`origin`], saturating (584 years fit in a `u64`).
#[must_use]
pub fn now_ns() -> u64 {
    u64::try_from(origin().elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// The [`Instant`] of clock reading `ns`, for tokio's `sleep_until` / `timeout_at`.
#[must_use]
pub fn instant_at(ns: u64) -> Instant {
    origin() + Duration::from_nanos(ns)
}
