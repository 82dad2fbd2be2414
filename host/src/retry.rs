//! The retry budget and retry throttle as C and the bindings see them: a core
//! [`RetryBudget`](seawall_core::RetryBudget) or
//! [`RetryThrottle`](seawall_core::RetryThrottle) in this process or shared by
//! every process of the host (one budget for all workers of a service).
//!
//! ```no_run
//! use seawall_host::retry::RetryBudget;
//! use seawall_host::shared::OpenOptions;
//! use seawall_core::RetryBudgetConfig;
//!
//! let budget = RetryBudget::open_shared("payments", &RetryBudgetConfig::DEFAULT, &OpenOptions::default())?;
//! let now = seawall_host::clock::monotonic_ns();
//! budget.deposit(now); // an original request
//! if budget.try_withdraw(now) { /* retry */ }
//! # Ok::<(), seawall_host::shared::RegionError>(())
//! ```
//!
//! Backoff and the retry decision are plain data ([`seawall_core::Backoff`],
//! [`seawall_core::BackoffState`], [`seawall_core::RetryPolicy`]): nothing to
//! share; a decision gated by a shared budget or throttle passes
//! `RetryGate::Budget(&budget)` (the handle derefs to the core type).

use core::mem::MaybeUninit;

use seawall_core::{ConfigError, RetryBudgetConfig, RetryThrottleConfig};

use crate::handle::Handle;
use crate::shared::Shareable;
use crate::shared::fingerprint::fingerprint;

/// A retry budget (Finagle) in this process or shared.
pub type RetryBudget = Handle<seawall_core::RetryBudget>;

/// A retry throttle (gRPC A6) in this process or shared.
pub type RetryThrottle = Handle<seawall_core::RetryThrottle>;

/// What every process sharing a budget must agree on: every field.
#[must_use]
pub fn budget_fingerprint(c: &RetryBudgetConfig) -> u64 {
    fingerprint(&[
        u64::from_le_bytes(*b"rbudget\0"),
        c.ttl_ns,
        u64::from(c.min_retries_per_sec),
        c.percent_can_retry.ppm(),
    ])
}

/// What every process sharing a throttle must agree on: every field.
#[must_use]
pub fn throttle_fingerprint(c: &RetryThrottleConfig) -> u64 {
    fingerprint(&[
        u64::from_le_bytes(*b"rthrottl"),
        u64::from(c.max_milli_tokens),
        u64::from(c.token_ratio_milli),
    ])
}

// SAFETY: `RetryBudget` is repr(C), pointer-free, needs no Drop; its plain fields
// (configuration, bucket width, reserve) are written only by `new`, everything
// else is atomics.
unsafe impl Shareable for seawall_core::RetryBudget {
    const FAMILY: &'static str = "retry-budget";
    const LAYOUT_ID: u32 = 0x0301;
    const DESCRIPTION: &'static str = "retry budget";
    type Config = RetryBudgetConfig;
    fn fingerprint(config: &RetryBudgetConfig) -> u64 {
        budget_fingerprint(config)
    }
    fn init(slot: &mut MaybeUninit<Self>, config: &RetryBudgetConfig) -> Result<(), ConfigError> {
        slot.write(Self::new(*config)?);
        Ok(())
    }
}

// SAFETY: `RetryThrottle` is repr(C), pointer-free, needs no Drop; its
// configuration is written only by `new`, the tokens are an atomic.
unsafe impl Shareable for seawall_core::RetryThrottle {
    const FAMILY: &'static str = "retry-throttle";
    const LAYOUT_ID: u32 = 0x0302;
    const DESCRIPTION: &'static str = "retry throttle";
    type Config = RetryThrottleConfig;
    fn fingerprint(config: &RetryThrottleConfig) -> u64 {
        throttle_fingerprint(config)
    }
    fn init(slot: &mut MaybeUninit<Self>, config: &RetryThrottleConfig) -> Result<(), ConfigError> {
        slot.write(Self::new(*config)?);
        Ok(())
    }
}
