//! `retry_budget` scenarios against the Finagle-style retry budget.

use seawall_core::{RetryBudget, RetryBudgetConfig};

use crate::scenario::{Fields, Scenario, StepClock, StepError, ms_to_ns, percent};

/// What a retry budget implementation must offer. Times in ns.
pub trait RetryBudgetDriver {
    /// An original request starts.
    fn deposit(&mut self, now: u64);
    /// A retry wants to start; `true` if the budget allows it (and withdrew it).
    fn try_withdraw(&mut self, now: u64) -> bool;
}

/// The scenario's `retry_budget` object as a core config.
pub fn parse_config(
    map: &serde_json::Map<String, serde_json::Value>,
) -> Result<RetryBudgetConfig, String> {
    let f = Fields::new(map, "retry_budget");
    f.only(&["ttl_ms", "min_retries_per_sec", "percent_can_retry"])?;
    let d = RetryBudgetConfig::DEFAULT;
    Ok(RetryBudgetConfig {
        ttl_ns: f.f64("ttl_ms")?.map_or(d.ttl_ns, ms_to_ns),
        min_retries_per_sec: match f.u64("min_retries_per_sec")? {
            None => d.min_retries_per_sec,
            Some(n) => u32::try_from(n).map_err(|_| "`min_retries_per_sec` too large")?,
        },
        percent_can_retry: f
            .f64("percent_can_retry")?
            .map_or(d.percent_can_retry, percent),
    })
}

/// Run a retry budget scenario against driver `d`.
pub fn run<D: RetryBudgetDriver>(sc: &Scenario, d: &mut D) -> Result<(), StepError> {
    let mut clock = StepClock::default();
    for (i, step) in sc.steps.iter().enumerate() {
        let now = clock.advance(i, step)?;
        let f = Fields::new(step, "step");
        let bad = |m: String| StepError::malformed(i, m);
        f.only(&["at_ms", "request", "retry", "expect_allowed"])
            .map_err(bad)?;
        if let Some(k) = f.u64("request").map_err(bad)? {
            for _ in 0..k {
                d.deposit(now);
            }
        } else if let Some(k) = f.u64("retry").map_err(bad)? {
            let allowed = (0..k).filter(|_| d.try_withdraw(now)).count() as u64;
            if let Some(want) = f.u64("expect_allowed").map_err(bad)?
                && allowed != want
            {
                return Err(StepError::mismatch(i, want, allowed));
            }
        } else if !f.has("at_ms") {
            return Err(bad("step does nothing".into()));
        }
    }
    Ok(())
}

/// The Rust core behind [`RetryBudgetDriver`].
pub struct CoreBudget(pub RetryBudget);

impl RetryBudgetDriver for CoreBudget {
    fn deposit(&mut self, now: u64) {
        self.0.deposit(now);
    }

    fn try_withdraw(&mut self, now: u64) -> bool {
        self.0.try_withdraw(now)
    }
}
