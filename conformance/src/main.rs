//! `seawall-conformance [DIR...]`: run every scenario in the given directories
//! (else `SEAWALL_CASES`, else `conformance/cases`, `../shared/cases`,
//! `conformance/cases-rate-limiter` and `../shared/cases-rate-limiter`) against
//! seawall-core. Prints `PASS`/`FAIL`/`SKIP` per scenario and a summary; exits 1 on
//! any failure or malformed file.

use std::process::ExitCode;

use seawall_conformance::run_file;
use seawall_conformance::scenario::{Verdict, scenario_dirs, scenario_files};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
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
            match run_file(&file) {
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
