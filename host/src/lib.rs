//! # seawall-host
//!
//! The layer between the `no_std` core (`seawall-core`) and the languages: each
//! primitive as **one handle type** that lives in this process or in a region
//! shared by every process of the host, used the same way. The C ABI
//! (`seawall-ffi`) and the Python and Node bindings are thin glue over it.
//!
//! * [`breaker::Breaker`]: the circuit breaker, window kind chosen at run time,
//!   single-use permits ([`permits`]), or no permit table for runtimes whose
//!   permit objects are single-use themselves; [`breaker::Observed`] is the one
//!   state-and-epoch word the bindings poll for transitions.
//! * [`semaphore::Semaphore`]: the bulkhead, single-use permits and queue tickets
//!   ([`holders`]).
//! * [`retry::RetryBudget`], [`retry::RetryThrottle`], [`health::Health`],
//!   [`rate_limiter::RateLimiter`], [`rate_limiter::KeyedRateLimiter`]: core
//!   structures in a [`handle::Handle`].
//! * [`shared`]: a core structure in `/dev/shm/seawall-<family>-<name>` or in
//!   memory the caller brings, with the header, init race and checks of DESIGN §8.
//! * [`units`]: seconds / milliseconds ↔ ns and percent ↔ ppm, one rounding rule
//!   for every binding and the conformance runner.
//! * [`options`]: the field names of every core configuration the bindings
//!   expose, which each binding's option table is tested against, and the
//!   defaults the bindings share.
//! * [`clock`], [`entropy`]: the OS monotonic clock and OS randomness.
//!
//! `unsafe` lives only where a region is mapped and read (an OS edge); each block
//! says why it is sound.

// Under `--cfg loom` only the permit table, the holder table, the breaker cell
// and the semaphore cell are built: their loom models (`tests/loom_permits.rs`,
// `tests/loom_holders.rs`, `tests/loom_breaker_cell.rs`) are all that build is for.

pub mod breaker;
#[cfg(not(loom))]
pub mod clock;
#[cfg(not(loom))]
pub mod counted;
#[cfg(not(loom))]
pub mod entropy;
#[cfg(not(loom))]
pub mod handle;
pub mod heal;
#[cfg(not(loom))]
pub mod health;
pub mod holders;
#[cfg(not(loom))]
pub mod options;
mod owner;
pub mod permits;
#[cfg(not(loom))]
pub mod rate_limiter;
#[cfg(not(loom))]
pub mod retry;
pub mod semaphore;
#[cfg(not(loom))]
pub mod shared;
mod sync;
#[cfg(not(loom))]
pub mod units;

/// This process's id, cached (`getpid` is a system call, and the bindings
/// check it on every permit they hand out); a `fork` child looks it up again.
#[cfg(not(loom))]
#[must_use]
pub fn process_id() -> u32 {
    owner::pid::current()
}

/// The version of the byte layout of shared regions: bumped whenever the header,
/// a shared structure or its configuration fingerprint changes, so that processes
/// running different builds never read each other's regions. Stored in every
/// region's header. Independent of the C ABI's `SEAWALL_ABI_VERSION`.
pub const REGION_LAYOUT_VERSION: u32 = 3;
