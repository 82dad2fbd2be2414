//! `seawall-conformance [DIR...]`: run every scenario in the given directories
//! (else `SEAWALL_CASES`, else `conformance/cases`, `../shared/cases`,
//! `conformance/cases-rate-limiter` and `../shared/cases-rate-limiter`) against
//! seawall-core. Prints `PASS`/`FAIL`/`SKIP` per scenario and a summary; exits 1 on
//! any failure or malformed file.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::process::ExitCode;

use seawall_conformance::run_file;
use seawall_conformance::scenario::{Verdict, scenario_dirs, scenario_files};

/// `run(file)` ([`run_file`]), with a panic (a bug in the runner or the core)
/// reported as that scenario's failure, so the scenarios after it still run and
/// are reported.
fn run_caught(file: &Path, run: impl FnOnce(&Path) -> (String, Verdict)) -> (String, Verdict) {
    catch_unwind(AssertUnwindSafe(|| run(file))).unwrap_or_else(|panic| {
        let id = file
            .file_stem()
            .map_or_else(|| "?".into(), |s| s.to_string_lossy().into_owned());
        let why = panic
            .downcast_ref::<String>()
            .cloned()
            // `panic!("literal")` carries a `&str`, not a `String`.
            .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_else(|| "a panic without a message".into());
        (id, Verdict::Fail(format!("crashed: {why}")))
    })
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // A panic is reported as its scenario's FAIL line; keep the hook's own
    // output from interleaving with the report.
    std::panic::set_hook(Box::new(|_| {}));
    let (mut passed, mut failed, mut skipped) = (0u32, 0u32, 0u32);
    for dir in scenario_dirs(&args) {
        let files = match scenario_files(&dir) {
            Ok(f) => f,
            Err(e) => {
                println!("FAIL {e}");
                failed += 1;
                continue;
            }
        };
        for file in files {
            match run_caught(&file, run_file) {
                (id, Verdict::Pass) => {
                    passed += 1;
                    println!("PASS {id}");
                }
                (id, Verdict::Fail(why)) => {
                    failed += 1;
                    println!("FAIL {id}: {why}");
                }
                (id, Verdict::Skip(why)) => {
                    skipped += 1;
                    println!("SKIP {id}: {why}");
                }
            }
        }
    }
    println!("{passed} passed, {failed} failed, {skipped} skipped");
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scenario_that_panics_fails_alone() {
        let file = Path::new("cases/backoff-x.json");
        let (id, v) = run_caught(file, |_| panic!("boom"));
        assert_eq!(id, "backoff-x");
        assert!(
            matches!(&v, Verdict::Fail(why) if why == "crashed: boom"),
            "{v:?}"
        );
        let n = 3;
        let (_, v) = run_caught(file, |_| panic!("step {n} broke"));
        assert!(
            matches!(&v, Verdict::Fail(why) if why == "crashed: step 3 broke"),
            "{v:?}"
        );
        let (id, v) = run_caught(file, |_| ("ok".into(), Verdict::Pass));
        assert_eq!(id, "ok");
        assert!(matches!(v, Verdict::Pass));
    }
}
