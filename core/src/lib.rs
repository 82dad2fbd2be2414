//! # seawall-core
//!
//! The fault-tolerance hot path of seawall: a lock-free, allocation-free `no_std`
//! circuit breaker over exact sliding windows, deadline budgets, retry (backoff
//! with jitter, retry budget, retry throttle, the retry decision), a permit
//! semaphore with FIFO hand-off and load shedding, windowed health, and a GCRA
//! rate limiter (single or keyed), implementing `DESIGN.md` §0–8 and §10.
//!
//! * **Time** is `u64` nanoseconds of a monotonic clock that the *caller* reads and
//!   passes in as `now`; the core never reads a clock. Arithmetic saturates, and a
//!   clock that steps back counts as no time passed.
//! * **Ratios** are integer parts per million ([`Ratio`]), compared exactly.
//! * **Memory**: every type is `#[repr(C)]`, fixed-size and pointer-free, built
//!   only of atomics and plain data, so it can live in memory shared by processes.
//! * **Concurrency**: no locks; every compare-and-swap loop states its invariant
//!   and is model-checked with loom (`loom-tests/`).
//!
//! ```
//! use seawall_core::{BreakerConfig, CircuitBreaker, CountWindow, Outcome, WindowConfig};
//! use seawall_core::time::millis;
//!
//! let breaker: CircuitBreaker<CountWindow<10>> = CircuitBreaker::new(BreakerConfig {
//!     window: WindowConfig::Count { size: 10 },
//!     minimum_calls: 10,
//!     open_duration_ns: millis(1000),
//!     ..BreakerConfig::DEFAULT
//! })
//! .unwrap();
//! let now = 0;
//! match breaker.try_acquire(now) {
//!     Ok(permit) => permit.record(Outcome::Success, millis(3), now + millis(3)),
//!     Err(rejected) => println!("retry after {:?} ns", rejected.retry_after_ns),
//! }
//! ```
#![no_std]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(any(test, loom, feature = "std"))]
extern crate std;

mod breaker;
mod corrupt;
mod deadline;
mod div;
mod error;
mod health;
#[cfg(not(loom))]
mod kill;
/// Loom models only: kill points inside the core's multi-step calls.
#[cfg(loom)]
#[doc(hidden)]
pub mod kill;
mod mix;
mod outcome;
mod rate_limiter;
mod ratio;
mod retry;
mod rng;
mod semaphore;
mod striped;
mod sync;
pub mod time;
mod window;

pub use breaker::{
    BreakerConfig, BreakerMetrics, BreakerTotals, CircuitBreaker, MAX_CONSECUTIVE_FAILURES,
    MAX_HALF_OPEN_CALLS, MAX_OPENINGS, Permit, PermitToken, Rejected, State,
};
pub use corrupt::{Corrupt, MAX_RETRIES};
pub use deadline::Deadline;
pub use error::{ConfigError, Field, Problem};
pub use health::{
    HISTOGRAM_BUCKETS, Health, HealthConfig, HealthSnapshot, HealthStatus, MAX_TRACKED_NS,
};
pub use mix::{mix64, pick};
pub use outcome::Outcome;
pub use rate_limiter::{KeyedRateLimiter, RateLimitError, RateLimiter, RateLimiterConfig};
pub use ratio::{PPM, Ratio};
pub use retry::{
    BUDGET_BUCKETS, Backoff, BackoffConfig, BackoffState, FailedAttempt, GiveUp, Jitter,
    MAX_BACKOFF_STEPS, MILLI, RetryBudget, RetryBudgetConfig, RetryBudgetSnapshot, RetryConfig,
    RetryDecision, RetryGate, RetryPolicy, RetryThrottle, RetryThrottleConfig, RetryTotals,
};
pub use rng::SplitMix64;
pub use semaphore::{
    Admission, CancelOutcome, Priority, PriorityShares, RawAdmission, RejectReason,
    Rejected as SemaphoreRejected, Semaphore, SemaphoreConfig, SemaphorePermit, SemaphoreSnapshot,
    Ticket, TicketState, Waiter,
};
#[cfg(feature = "std")]
pub use semaphore::{BlockingPermit, BlockingSemaphore, WaitError};
pub use striped::StripedCounter;
#[doc(hidden)]
pub use window::Recorded;
pub use window::{CountWindow, Sample, SlidingWindow, TimeWindow, WindowConfig, WindowCounts};
