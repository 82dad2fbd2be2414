//! The retry decision (DESIGN §4): after a failed attempt, retry after how long, or
//! give up and why. One function, so every binding decides the same way.

use super::backoff::{Backoff, BackoffConfig};
use super::budget::RetryBudget;
use super::throttle::RetryThrottle;
use crate::error::{ConfigError, Field, Problem};

/// Retry policy configuration: backoff and how many attempts in all.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RetryConfig {
    /// Delays between attempts.
    pub backoff: BackoffConfig,
    /// Attempts in all, the first one included (`≥ 1`; 1 never retries). Default 3.
    pub max_attempts: u32,
}

impl RetryConfig {
    /// DESIGN §4 defaults: [`BackoffConfig::DEFAULT`], 3 attempts.
    pub const DEFAULT: Self = Self {
        backoff: BackoffConfig::DEFAULT,
        max_attempts: 3,
    };
}

impl Default for RetryConfig {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// What else may refuse a retry, shared across calls.
#[derive(Clone, Copy, Debug)]
pub enum RetryGate<'a> {
    /// Nothing else: attempts, deadline and backoff decide.
    None,
    /// A retry budget: one retry is withdrawn, atomically, only when every other
    /// check has passed.
    Budget(&'a RetryBudget),
    /// A gRPC retry throttle: the failure is recorded in it first (every failure
    /// counts, even one that is not retried), and its verdict applies.
    Throttle(&'a RetryThrottle),
}

/// The failed attempt, as the caller knows it.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FailedAttempt {
    /// Which attempt failed, 1-based (the first call is attempt 1).
    pub attempt: u32,
    /// The delay the previous retry of this call slept, from
    /// [`RetryDecision::Retry`] (0 before the first retry); decorrelated jitter
    /// grows from it.
    pub previous_delay_ns: u64,
    /// 64 random bits for the jitter (from a [`SplitMix64`](crate::SplitMix64) or
    /// the caller's own generator).
    pub random: u64,
    /// Time left in the call's deadline (ns), if it has one.
    pub deadline_remaining_ns: Option<u64>,
    /// The server's Retry-After / pushback (ns), if it sent one.
    pub retry_after_ns: Option<u64>,
}

/// Why a call gives up.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GiveUp {
    /// `max_attempts` attempts were made.
    MaxAttempts = 0,
    /// The retry would start at or after the deadline.
    Deadline = 1,
    /// The retry budget is spent.
    BudgetExhausted = 2,
    /// The retry throttle refused (tokens ≤ max/2).
    Throttled = 3,
}

impl GiveUp {
    /// `max_attempts`, `deadline`, `budget_exhausted` or `throttled`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::MaxAttempts => "max_attempts",
            Self::Deadline => "deadline",
            Self::BudgetExhausted => "budget_exhausted",
            Self::Throttled => "throttled",
        }
    }
}

/// The answer: sleep and retry, or give up with the last error at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RetryDecision {
    /// Retry after sleeping `delay_ns`.
    Retry {
        /// The sleep (ns): the backoff, raised to the server's retry-after.
        delay_ns: u64,
    },
    /// Do not retry.
    GiveUp(GiveUp),
}

/// A validated retry policy: plain data (`Copy`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RetryPolicy {
    backoff: Backoff,
    max_attempts: u32,
}

impl RetryPolicy {
    /// A policy for `config`, or the first invalid field.
    pub const fn new(config: RetryConfig) -> Result<Self, ConfigError> {
        if config.max_attempts == 0 {
            return Err(ConfigError::new(Field::MaxAttempts, Problem::Zero));
        }
        match Backoff::new(config.backoff) {
            Ok(backoff) => Ok(Self {
                backoff,
                max_attempts: config.max_attempts,
            }),
            Err(e) => Err(e),
        }
    }

    /// The backoff.
    #[must_use]
    pub const fn backoff(&self) -> &Backoff {
        &self.backoff
    }

    /// Attempts in all.
    #[must_use]
    pub const fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    /// Decide what follows `failed` at `now` (ns).
    ///
    /// In order: a throttle records the failure; attempts left; the delay
    /// (backoff, raised to the retry-after); the deadline — a retry whose sleep
    /// would end at or after the deadline is never made, since it would start with
    /// no time left; then the throttle's verdict; and last the budget, so a retry
    /// is withdrawn from it only when it will really be made.
    #[must_use]
    pub fn decide(&self, failed: &FailedAttempt, gate: RetryGate<'_>, now: u64) -> RetryDecision {
        let throttle_allows = match gate {
            RetryGate::Throttle(t) => t.record_failure(),
            RetryGate::None | RetryGate::Budget(_) => true,
        };
        if failed.attempt >= self.max_attempts {
            return RetryDecision::GiveUp(GiveUp::MaxAttempts);
        }
        let delay_ns = self.backoff.delay_with_retry_after(
            failed.attempt,
            failed.previous_delay_ns,
            failed.random,
            failed.retry_after_ns,
        );
        if failed
            .deadline_remaining_ns
            .is_some_and(|left| delay_ns >= left)
        {
            return RetryDecision::GiveUp(GiveUp::Deadline);
        }
        if !throttle_allows {
            return RetryDecision::GiveUp(GiveUp::Throttled);
        }
        if let RetryGate::Budget(b) = gate
            && !b.try_withdraw(now)
        {
            return RetryDecision::GiveUp(GiveUp::BudgetExhausted);
        }
        RetryDecision::Retry { delay_ns }
    }
}
