//! `retry_throttle` scenarios against the gRPC A6 retry throttle.

use seawall_core::{RetryThrottle, RetryThrottleConfig};

use seawall_host::units::milli_tokens as milli;

use crate::scenario::{Fields, Scenario, StepError};

/// What a retry throttle implementation must offer.
pub trait RetryThrottleDriver {
    /// A call failed; `true` if its retry is allowed.
    fn failure(&mut self) -> bool;
    /// A call succeeded.
    fn success(&mut self);
}

/// The scenario's `retry_throttle` object as a core config.
pub fn parse_config(
    map: &serde_json::Map<String, serde_json::Value>,
) -> Result<RetryThrottleConfig, String> {
    let f = Fields::new(map, "retry_throttle");
    f.only(&["max_tokens", "token_ratio"])?;
    let d = RetryThrottleConfig::DEFAULT;
    Ok(RetryThrottleConfig {
        max_milli_tokens: f.f64("max_tokens")?.map_or(d.max_milli_tokens, milli),
        token_ratio_milli: f.f64("token_ratio")?.map_or(d.token_ratio_milli, milli),
    })
}

/// Run a retry throttle scenario against driver `d`.
pub fn run<D: RetryThrottleDriver>(sc: &Scenario, d: &mut D) -> Result<(), StepError> {
    for (i, step) in sc.steps.iter().enumerate() {
        let f = Fields::new(step, "step");
        let bad = |m: String| StepError::malformed(i, m);
        f.only(&["at_ms", "success", "failure", "expect_retry"])
            .map_err(bad)?;
        if let Some(k) = f.u64("success").map_err(bad)? {
            for _ in 0..k {
                d.success();
            }
        } else if let Some(k) = f.u64("failure").map_err(bad)? {
            let mut last = None;
            for _ in 0..k {
                last = Some(d.failure());
            }
            if let (Some(want), Some(got)) = (f.bool("expect_retry").map_err(bad)?, last)
                && want != got
            {
                return Err(StepError::mismatch(i, want, got));
            }
        } else if !f.has("at_ms") {
            return Err(bad("step does nothing".into()));
        }
    }
    Ok(())
}

/// The Rust core behind [`RetryThrottleDriver`].
pub struct CoreThrottle(pub RetryThrottle);

impl RetryThrottleDriver for CoreThrottle {
    fn failure(&mut self) -> bool {
        self.0.record_failure()
    }

    fn success(&mut self) {
        self.0.record_success();
    }
}
