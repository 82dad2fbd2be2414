//! Retry (DESIGN §4): backoff with jitter, the Finagle retry budget, the gRPC
//! retry throttle, and the decision that combines them with attempts and deadline.

mod backoff;
mod budget;
mod decision;
mod tally;
mod throttle;

pub use backoff::{Backoff, BackoffConfig, BackoffState, Jitter, MAX_BACKOFF_STEPS};
pub use budget::{BUDGET_BUCKETS, RetryBudget, RetryBudgetConfig, RetryBudgetSnapshot};
pub use decision::{FailedAttempt, GiveUp, RetryConfig, RetryDecision, RetryGate, RetryPolicy};
pub use tally::RetryTotals;
pub use throttle::{MILLI, RetryThrottle, RetryThrottleConfig};
