//! `rate_limiter` scenarios (DESIGN §10, GCRA): the step interpreter, generic
//! over [`RateLimiterDriver`] so another binding can reuse it, and the core's
//! [`RateLimiter`] behind it.

use seawall_core::{RateLimitError, RateLimiter, RateLimiterConfig};

use crate::scenario::{Fields, ScenarioOf, StepClock, StepError, ms_to_ns, ns_to_ms};

/// What one take returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Taken {
    /// The cells were taken.
    Admitted,
    /// Over the rate: retry after this many ns.
    Rejected {
        /// ns from the step's time.
        retry_after_ns: u64,
    },
    /// `n = 0` or `n > burst` (DESIGN §10 counts it a configuration error).
    ConfigError(String),
}

/// What a rate limiter implementation must offer to run the scenarios.
pub trait RateLimiterDriver {
    /// Take `n` cells at `now` (ns).
    fn acquire(&mut self, n: u32, now: u64) -> Taken;
}

const CONFIG_KEYS: &[&str] = &["rate", "period_ms", "burst"];
const STEP_KEYS: &[&str] = &["at_ms", "acquire", "expect", "expect_retry_after_ms"];

/// The scenario's `rate_limiter` object as a core config. DESIGN §10 names no
/// defaults, so every key is required.
pub fn parse_config(
    map: &serde_json::Map<String, serde_json::Value>,
) -> Result<RateLimiterConfig, String> {
    let f = Fields::new(map, "rate_limiter");
    f.only(CONFIG_KEYS)?;
    let need = |key: &str| format!("rate_limiter needs `{key}`");
    let rate = f.u64("rate")?.ok_or_else(|| need("rate"))?;
    let period_ms = f.f64("period_ms")?.ok_or_else(|| need("period_ms"))?;
    if period_ms < 0.0 {
        return Err("`period_ms` in rate_limiter is negative".into());
    }
    let burst = f.u64("burst")?.ok_or_else(|| need("burst"))?;
    Ok(RateLimiterConfig {
        rate,
        period_ns: ms_to_ns(period_ms),
        burst: u32::try_from(burst).map_err(|_| "`burst` in rate_limiter is above 2³² − 1")?,
    })
}

/// Run a rate limiter scenario against driver `d`.
pub fn run<P, D: RateLimiterDriver>(sc: &ScenarioOf<P>, d: &mut D) -> Result<(), StepError> {
    let mut clock = StepClock::default();
    for (i, step) in sc.steps.iter().enumerate() {
        let now = clock.advance(i, step)?;
        let f = Fields::new(step, "step");
        let bad = |m: String| StepError::malformed(i, m);
        f.only(STEP_KEYS).map_err(bad)?;
        let expect = f.str("expect").map_err(bad)?;
        let want_retry = f.f64("expect_retry_after_ms").map_err(bad)?;
        if !(f.has("acquire") || expect.is_some() || want_retry.is_some()) {
            if f.has("at_ms") {
                continue;
            }
            return Err(bad("step does nothing".into()));
        }
        // Beyond u32 the core cannot be asked; any such n is above every burst.
        let n = f.u64("acquire").map_err(bad)?.unwrap_or(1);
        let got = d.acquire(u32::try_from(n).unwrap_or(u32::MAX), now);
        let verdict = match &got {
            Taken::Admitted => "admitted",
            Taken::Rejected { .. } => "rejected",
            Taken::ConfigError(_) => "config_error",
        };
        if let Some(e) = expect
            && e != verdict
        {
            return Err(StepError::mismatch(i, e, format!("{got:?}")));
        }
        if let Some(ms) = want_retry {
            let want = ms_to_ns(ms);
            match got {
                Taken::Rejected { retry_after_ns } if retry_after_ns == want => {}
                Taken::Rejected { retry_after_ns } => {
                    return Err(StepError::mismatch(
                        i,
                        format!("retry after {ms} ms"),
                        format!("retry after {} ms", ns_to_ms(retry_after_ns)),
                    ));
                }
                other => {
                    return Err(StepError::mismatch(
                        i,
                        format!("rejected, retry after {ms} ms"),
                        other,
                    ));
                }
            }
        }
    }
    Ok(())
}

/// The Rust core behind [`RateLimiterDriver`].
pub struct CoreRateLimiter(pub RateLimiter);

impl RateLimiterDriver for CoreRateLimiter {
    fn acquire(&mut self, n: u32, now: u64) -> Taken {
        match self.0.try_acquire(n, now) {
            Ok(()) => Taken::Admitted,
            Err(RateLimitError::Rejected { retry_after_ns }) => Taken::Rejected { retry_after_ns },
            Err(RateLimitError::InvalidCells(e)) => Taken::ConfigError(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{CoreRateLimiter, parse_config, run};
    use crate::scenario::{Primitive, Scenario};
    use seawall_core::RateLimiter;
    use serde_json::{Value, json};

    fn scenario(steps: &Value) -> Scenario {
        let Value::Array(steps) = steps else {
            unreachable!()
        };
        Scenario {
            id: "t".into(),
            name: "t".into(),
            primitive: Primitive::RateLimiter,
            config: json!({"rate": 10, "period_ms": 1000, "burst": 1})
                .as_object()
                .unwrap()
                .clone(),
            steps: steps
                .iter()
                .map(|s| s.as_object().unwrap().clone())
                .collect(),
        }
    }

    fn outcome(steps: &Value) -> Result<(), String> {
        let sc = scenario(steps);
        let mut l = CoreRateLimiter(RateLimiter::new(parse_config(&sc.config).unwrap()).unwrap());
        run(&sc, &mut l).map_err(|e| e.to_string())
    }

    #[test]
    fn wrong_expectations_fail_with_the_step() {
        let ok = json!([{"at_ms": 0, "acquire": 1}, {"acquire": 1, "expect": "rejected", "expect_retry_after_ms": 100}]);
        assert_eq!(outcome(&ok), Ok(()));
        let wrong_retry =
            json!([{"at_ms": 0, "acquire": 1}, {"acquire": 1, "expect_retry_after_ms": 99}]);
        assert_eq!(
            outcome(&wrong_retry).unwrap_err(),
            "step 1 (0-based): expected \"retry after 99 ms\", got \"retry after 100 ms\""
        );
        let wrong_verdict = json!([{"at_ms": 0, "acquire": 2, "expect": "admitted"}]);
        assert!(
            outcome(&wrong_verdict)
                .unwrap_err()
                .starts_with("step 0 (0-based): expected \"admitted\", got \"ConfigError(")
        );
        let retry_on_admission = json!([{"at_ms": 0, "expect_retry_after_ms": 0}]);
        assert!(outcome(&retry_on_admission).is_err());
        assert!(outcome(&json!([{"expect": "nothing"}])).is_err());
        assert!(outcome(&json!([{"take": 1}])).is_err());
    }

    #[test]
    fn every_config_key_is_required() {
        for missing in ["rate", "period_ms", "burst"] {
            let mut c = json!({"rate": 10, "period_ms": 1000, "burst": 1});
            c.as_object_mut().unwrap().remove(missing);
            assert_eq!(
                parse_config(c.as_object().unwrap()).unwrap_err(),
                format!("rate_limiter needs `{missing}`")
            );
        }
    }
}
