//! Retry throttle (DESIGN §4; gRPC proposal A6 "Retry throttling").
//!
//! Tokens are integer milli-tokens in one atomic word, clamped to
//! `[0, max_tokens]`. A failure subtracts one token (1 000 milli-tokens) and its
//! retry is allowed iff the tokens left are strictly more than half of
//! `max_tokens`; a success adds `token_ratio` (already truncated to 3 decimals,
//! i.e. given in milli-tokens). Every change is one CAS, so racing failures and
//! successes never lose an update and each failure's decision is the one its own
//! subtraction produced.

use crate::corrupt::{Corrupt, MAX_RETRIES};
use crate::error::{ConfigError, Field, Problem};
use crate::sync::{AtomicU64, Ordering};

use super::tally::{RetryTotals, Tally};

/// Milli-tokens in one token.
pub const MILLI: u32 = 1000;

/// Retry throttle configuration, in milli-tokens (gRPC's `maxTokens` and
/// `tokenRatio` times 1 000; bindings truncate `tokenRatio` to 3 decimals first).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RetryThrottleConfig {
    /// `max_tokens · 1000`: `1 ..= 1 000 000` (gRPC: `0 < maxTokens ≤ 1000`).
    pub max_milli_tokens: u32,
    /// `token_ratio · 1000`, truncated: `≥ 1` (gRPC: `tokenRatio > 0`).
    pub token_ratio_milli: u32,
}

impl RetryThrottleConfig {
    /// gRPC's example: 10 tokens, ratio 0.1.
    pub const DEFAULT: Self = Self {
        max_milli_tokens: 10 * MILLI,
        token_ratio_milli: 100,
    };

    /// Check every field.
    pub const fn validate(&self) -> Result<(), ConfigError> {
        if self.max_milli_tokens == 0 {
            return Err(ConfigError::new(Field::MaxTokens, Problem::Zero));
        }
        if let Err(e) = ConfigError::check_range(
            Field::MaxTokens,
            self.max_milli_tokens as u64,
            1,
            (1000 * MILLI) as u64,
        ) {
            return Err(e);
        }
        if self.token_ratio_milli == 0 {
            return Err(ConfigError::new(Field::TokenRatio, Problem::Zero));
        }
        Ok(())
    }
}

impl Default for RetryThrottleConfig {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// A lock-free gRPC retry throttle, shared by every call to one server.
///
/// `size_of::<RetryThrottle>()` is 32 bytes: the tokens, the configuration
/// and the lifetime totals.
#[repr(C)]
pub struct RetryThrottle {
    tokens: AtomicU64,
    config: RetryThrottleConfig,
    /// Failures after which a retry was allowed, and refused.
    tally: Tally,
}

impl RetryThrottle {
    /// A throttle with full tokens, or the first invalid field.
    pub fn new(config: RetryThrottleConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        Ok(Self {
            tokens: AtomicU64::new(u64::from(config.max_milli_tokens)),
            config,
            tally: Tally::new(),
        })
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &RetryThrottleConfig {
        &self.config
    }

    /// Tokens now, in milli-tokens.
    #[must_use]
    pub fn milli_tokens(&self) -> u64 {
        self.tokens.load(Ordering::Acquire)
    }

    /// A call failed: take one token; `true` iff its retry is allowed (the tokens
    /// left are more than `max_tokens / 2`).
    #[must_use = "the result is the retry decision for this failure"]
    // Inline: the checked form is the same code; no call or nested result is
    // left on the hot path of in-process callers.
    #[inline]
    pub fn record_failure(&self) -> bool {
        self.record_failure_checked().unwrap_or(false)
    }

    /// [`record_failure`](Self::record_failure) for a throttle in memory others
    /// may write (a shared region): [`Corrupt`] when the tokens kept changing
    /// under [`MAX_RETRIES`] passes (then nothing was taken and the retry should
    /// not go ahead).
    pub fn record_failure_checked(&self) -> Result<bool, Corrupt> {
        let after = self.update(|t| t.saturating_sub(u64::from(MILLI)))?;
        Ok(self.tally.count(self.allows(after)))
    }

    /// Failures after which a retry was allowed, and refused, since the
    /// throttle was made (in a shared region: by every process).
    #[must_use]
    pub fn totals(&self) -> RetryTotals {
        self.tally.read()
    }

    /// A call succeeded: add `token_ratio`, up to `max_tokens`.
    // Inline: the checked form is the same code; no call or nested result is
    // left on the hot path of in-process callers.
    #[inline]
    pub fn record_success(&self) {
        let _ = self.record_success_checked();
    }

    /// [`record_success`](Self::record_success) for a throttle in memory others
    /// may write: [`Corrupt`] as for
    /// [`record_failure_checked`](Self::record_failure_checked).
    pub fn record_success_checked(&self) -> Result<(), Corrupt> {
        let max = u64::from(self.config.max_milli_tokens);
        let ratio = u64::from(self.config.token_ratio_milli);
        // Saturating: tokens read from a shared region may be any word.
        self.update(|t| t.saturating_add(ratio).min(max))
            .map(|_| ())
    }

    /// Whether a retry would be allowed now without recording anything (tokens >
    /// `max_tokens / 2`).
    #[must_use]
    pub fn would_allow(&self) -> bool {
        self.allows(self.milli_tokens())
    }

    /// `tokens > max / 2`, exactly: `2·tokens > max` (in 128 bits, since tokens
    /// read from a shared region may be any word).
    fn allows(&self, tokens: u64) -> bool {
        2 * u128::from(tokens) > u128::from(self.config.max_milli_tokens)
    }

    /// Apply `f` atomically; returns the value it stored.
    fn update(&self, f: impl Fn(u64) -> u64) -> Result<u64, Corrupt> {
        #[cfg(seawall_mutant = "throttle_lost_update")]
        {
            // Mutant: read-modify-write as two steps loses a racing update.
            let next = f(self.tokens.load(Ordering::Acquire));
            self.tokens.store(next, Ordering::Release);
            Ok(next)
        }
        #[cfg(not(seawall_mutant = "throttle_lost_update"))]
        {
            // Invariant: tokens stay in [0, max] because `f` clamps, and each
            // update applies to exactly the value it read (the CAS fails otherwise).
            // A CAS fails only when another update changed the tokens, so only a
            // corrupted or hostile writer reaches the bound.
            let mut cur = self.tokens.load(Ordering::Acquire);
            for _ in 0..MAX_RETRIES {
                let next = f(cur);
                match self
                    .tokens
                    .compare_exchange(cur, next, Ordering::AcqRel, Ordering::Acquire)
                {
                    Ok(_) => return Ok(next),
                    Err(seen) => cur = seen,
                }
            }
            Err(Corrupt)
        }
    }
}

impl core::fmt::Debug for RetryThrottle {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("RetryThrottle")
            .field("milli_tokens", &self.milli_tokens())
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}
