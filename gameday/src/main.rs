//! `seawall-gameday`: run the experiment, print the table and the checks, and exit
//! with 0 (every check held), 1 (naming each check that did not) or 2 (bad usage
//! or a failure to run at all).

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;
use seawall_gameday::{checks, cli::Args, execute, report};

fn main() -> ExitCode {
    let args = Args::parse().checked().unwrap_or_else(|e| e.exit());
    let done = match execute(&args) {
        Ok(done) => done,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "error: {e}");
            return ExitCode::from(2);
        }
    };
    // Written with `writeln!` and its error ignored: a reader that went away
    // (`| head`) must not turn into a panic; the exit status still tells.
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{}", report::table(&done.report));
    let _ = writeln!(out, "checks:");
    for c in &done.report.checks {
        let verdict = match (c.checked, c.passed) {
            (false, _) => "NOT CHECKED",
            (true, true) => "PASS",
            (true, false) => "FAIL",
        };
        let _ = writeln!(out, "  {verdict} {}: {}", c.name, c.detail);
    }
    let _ = writeln!(
        out,
        "\nwrote {} and {} ({:.1} s)",
        done.json.display(),
        done.svg.display(),
        done.report.wall_secs
    );
    let failed = checks::failed(&done.report.checks);
    let unchecked = done.report.checks.iter().filter(|c| !c.checked).count();
    if failed.is_empty() && unchecked > 0 {
        let _ = writeln!(
            out,
            "all {} checks that could be decided passed; {unchecked} not checked (the target does not expose what they need)",
            done.report.checks.len() - unchecked
        );
        ExitCode::SUCCESS
    } else if failed.is_empty() {
        let _ = writeln!(out, "all {} checks passed", done.report.checks.len());
        ExitCode::SUCCESS
    } else {
        let _ = out.flush();
        let _ = writeln!(
            std::io::stderr(),
            "gameday FAILED: check(s) did not hold: {}",
            failed.join(", ")
        );
        ExitCode::from(1)
    }
}
