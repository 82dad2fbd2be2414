//! `seawall-gameday`: run the experiment, print the table and the checks, and exit
//! with 0 (every check held), 1 (naming each check that did not) or 2 (bad usage
//! or a failure to run at all).

use std::process::ExitCode;

use clap::Parser;
use seawall_gameday::{checks, cli::Args, execute, report};

fn main() -> ExitCode {
    let args = Args::parse();
    let done = match execute(&args) {
        Ok(done) => done,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    println!("{}", report::table(&done.report));
    println!("checks:");
    for c in &done.report.checks {
        println!(
            "  {} {}: {}",
            if c.passed { "PASS" } else { "FAIL" },
            c.name,
            c.detail
        );
    }
    println!(
        "\nwrote {} and {} ({:.1} s)",
        done.json.display(),
        done.svg.display(),
        done.report.wall_secs
    );
    let failed = checks::failed(&done.report.checks);
    if failed.is_empty() {
        println!("all {} checks passed", done.report.checks.len());
        ExitCode::SUCCESS
    } else {
        eprintln!(
            "gameday FAILED: check(s) did not hold: {}",
            failed.join(", ")
        );
        ExitCode::from(1)
    }
}
