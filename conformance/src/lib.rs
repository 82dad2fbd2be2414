//! Conformance runner for seawall: reads the JSON scenarios of
//! `../shared/cases/README.md` and checks an implementation against every step.
//!
//! The step interpreters are generic over small driver traits
//! ([`breaker::BreakerDriver`], …) so the same scenarios drive the Rust core here
//! and the C ABI elsewhere.

pub mod breaker;
pub mod deadline;
pub mod scenario;

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
        other => {
            return (
                sc.id,
                Verdict::Skip(format!("{} not built yet", other.key())),
            );
        }
    };
    let verdict = match result {
        Ok(()) => Verdict::Pass,
        Err(e) => Verdict::Fail(e.to_string()),
    };
    (sc.id, verdict)
}
