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

use seawall_core::{ConfigError, Field, RetryBudgetConfig, RetryThrottleConfig};

use crate::handle::Handle;
use crate::shared::{Agreement, Shareable};

/// A retry budget (Finagle) in this process or shared.
pub type RetryBudget = Handle<seawall_core::RetryBudget>;

/// A retry throttle (gRPC A6) in this process or shared.
pub type RetryThrottle = Handle<seawall_core::RetryThrottle>;

/// What every process sharing a budget must agree on: every field.
#[must_use]
pub fn budget_agreement(c: &RetryBudgetConfig) -> Agreement {
    let RetryBudgetConfig {
        ttl_ns,
        min_retries_per_sec,
        percent_can_retry,
    } = *c;
    Agreement::new(b"rbudget\0")
        .value(Field::RetryBudgetTtl, ttl_ns)
        .value(Field::MinRetriesPerSec, u64::from(min_retries_per_sec))
        .value(Field::PercentCanRetry, percent_can_retry.ppm())
}

/// What every process sharing a throttle must agree on: every field.
#[must_use]
pub fn throttle_agreement(c: &RetryThrottleConfig) -> Agreement {
    let RetryThrottleConfig {
        max_milli_tokens,
        token_ratio_milli,
    } = *c;
    Agreement::new(b"rthrottl")
        .value(Field::MaxTokens, u64::from(max_milli_tokens))
        .value(Field::TokenRatio, u64::from(token_ratio_milli))
}

// SAFETY: `RetryBudget` is repr(C), pointer-free, needs no Drop; its plain fields
// (configuration, bucket width, reserve) are written only by `new`, everything
// else is atomics.
unsafe impl Shareable for seawall_core::RetryBudget {
    const FAMILY: &'static str = "retry-budget";
    // 0x0303: the archive's sums for the head epoch, after the archive;
    // 0x0304: the lifetime totals, on a line of their own.
    const LAYOUT_ID: u32 = 0x0304;
    const DESCRIPTION: &'static str = "retry budget";
    type Config = RetryBudgetConfig;
    fn agreement(config: &RetryBudgetConfig) -> Agreement {
        budget_agreement(config)
    }
    fn config(&self) -> RetryBudgetConfig {
        *Self::config(self)
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
    // 0x0305: the lifetime totals after the configuration.
    const LAYOUT_ID: u32 = 0x0305;
    const DESCRIPTION: &'static str = "retry throttle";
    type Config = RetryThrottleConfig;
    fn agreement(config: &RetryThrottleConfig) -> Agreement {
        throttle_agreement(config)
    }
    fn config(&self) -> RetryThrottleConfig {
        *Self::config(self)
    }
    fn init(slot: &mut MaybeUninit<Self>, config: &RetryThrottleConfig) -> Result<(), ConfigError> {
        slot.write(Self::new(*config)?);
        Ok(())
    }
}
