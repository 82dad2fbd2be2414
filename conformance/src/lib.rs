//! Conformance runner for seawall: reads the JSON scenarios of
//! `../shared/cases/README.md` (and of the rate limiter, in
//! `cases-rate-limiter`) and checks an implementation against every step.
//!
//! The step interpreters are generic over small driver traits
//! ([`breaker::BreakerDriver`], …) so the same scenarios drive the Rust core here
//! and the C ABI elsewhere.

pub mod backoff;
pub mod breaker;
pub mod deadline;
pub mod health;
pub mod rate_limiter;
pub mod retry_budget;
pub mod retry_throttle;
pub mod scenario;
pub mod semaphore;

use std::path::Path;

use scenario::{Primitive, Scenario, Verdict};

/// Run one scenario file against the Rust core.
#[must_use]
pub fn run_file(path: &Path) -> (String, Verdict) {
    let sc = match Scenario::load(path) {
        Ok(sc) => sc,
        Err(e) => {
            let id = path
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or("?")
                .to_owned();
            return (id, Verdict::Fail(format!("malformed: {e}")));
        }
    };
    let result = match sc.primitive {
        Primitive::Breaker => {
            match breaker::parse_config(&sc.config).and_then(breaker::CoreBreaker::new) {
                Ok(mut b) => breaker::run(&sc, &mut b),
                Err(e) => return (sc.id, Verdict::Fail(format!("config: {e}"))),
            }
        }
        Primitive::Deadline => deadline::run(&sc),
        Primitive::Backoff => match backoff::parse_config(&sc.config)
            .and_then(|c| seawall_core::Backoff::new(c).map_err(|e| e.to_string()))
        {
            Ok(b) => backoff::run(&sc, &mut backoff::CoreBackoff(b)),
            Err(e) => return (sc.id, Verdict::Fail(format!("config: {e}"))),
        },
        Primitive::RetryBudget => match retry_budget::parse_config(&sc.config)
            .and_then(|c| seawall_core::RetryBudget::new(c).map_err(|e| e.to_string()))
        {
            Ok(b) => retry_budget::run(&sc, &mut retry_budget::CoreBudget(b)),
            Err(e) => return (sc.id, Verdict::Fail(format!("config: {e}"))),
        },
        Primitive::RetryThrottle => match retry_throttle::parse_config(&sc.config)
            .and_then(|c| seawall_core::RetryThrottle::new(c).map_err(|e| e.to_string()))
        {
            Ok(t) => retry_throttle::run(&sc, &mut retry_throttle::CoreThrottle(t)),
            Err(e) => return (sc.id, Verdict::Fail(format!("config: {e}"))),
        },
        Primitive::Semaphore => match semaphore::parse_config(&sc.config)
            .and_then(|c| seawall_core::Semaphore::new(c).map_err(|e| e.to_string()))
        {
            Ok(s) => semaphore::run(&sc, &mut semaphore::CoreSemaphore(Box::new(s))),
            Err(e) => return (sc.id, Verdict::Fail(format!("config: {e}"))),
        },
        Primitive::Health => match health::parse_config(&sc.config)
            .and_then(|c| seawall_core::Health::new(c).map_err(|e| e.to_string()))
        {
            Ok(h) => health::run(&sc, &mut health::CoreHealth(Box::new(h))),
            Err(e) => return (sc.id, Verdict::Fail(format!("config: {e}"))),
        },
        Primitive::RateLimiter => match rate_limiter::parse_config(&sc.config)
            .and_then(|c| seawall_core::RateLimiter::new(c).map_err(|e| e.to_string()))
        {
            Ok(l) => rate_limiter::run(&sc, &mut rate_limiter::CoreRateLimiter(l)),
            Err(e) => return (sc.id, Verdict::Fail(format!("config: {e}"))),
        },
    };
    (sc.id, verdict_of(result))
}

/// The verdict of a run that got to its steps.
fn verdict_of(result: Result<(), scenario::StepError>) -> Verdict {
    match result {
        Ok(()) => Verdict::Pass,
        Err(e) => Verdict::Fail(e.to_string()),
    }
}
