//! # seawall-gameday
//!
//! seawall's main job, run for real: a chaos experiment over loopback HTTP. An
//! inventory upstream with fault injection ([`upstream`]), the same
//! product-details service twice — unprotected ([`service`]) and protected by
//! seawall's full pipeline in DESIGN §9 order ([`protected`]) — an open-loop load
//! against both at once ([`load`]), six phases of faults ([`phases`]), and the
//! evidence: a table and `gameday-report.json` ([`report`]), `gameday.svg`
//! ([`plot`]), and a checklist whose failures set the exit status ([`checks`]).
//!
//! Against the user's own service ([`target`]): a fault-injecting [`proxy`] between
//! the service and its dependency, the load to the service, breaker and counters
//! from its Prometheus endpoint ([`scrape`]).
//!
//! ```text
//! cargo run --release -p seawall-gameday            # 6 × 15 s
//! cargo run --release -p seawall-gameday -- --quick # 6 × 5 s
//! cargo run --release -p seawall-gameday -- --target URL --upstream URL [--metrics URL]
//! ```

pub mod bulkhead;
pub mod checks;
pub mod cli;
pub mod clock;
pub mod fault;
pub mod http;
pub mod load;
pub mod phases;
pub mod plot;
pub mod protected;
pub mod proxy;
pub mod report;
pub mod run;
pub mod scrape;
pub mod service;
pub mod settings;
pub mod stats;
pub mod target;
pub mod upstream;

use std::path::PathBuf;
use std::time::Duration;

/// Report file name in `--out`.
pub const REPORT_JSON: &str = "gameday-report.json";
/// Picture file name in `--out`.
pub const PICTURE_SVG: &str = "gameday.svg";

/// What a finished run left.
#[derive(Debug)]
pub struct Finished {
    /// The report (checks included).
    pub report: report::Report,
    /// Where the JSON report was written.
    pub json: PathBuf,
    /// Where the picture was written.
    pub svg: PathBuf,
}

/// A progress line on stderr; a closed stderr is not worth a panic.
fn progress(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// Run the gameday for `args`: progress on stderr, the table and the checks on
/// stdout, the files in `args.out`. An `Err` is a failure to run at all (a port,
/// a file); failed checks are in the returned report.
pub fn execute(args: &cli::Args) -> Result<Finished, String> {
    std::fs::create_dir_all(&args.out)
        .map_err(|e| format!("creating the output directory {}: {e}", args.out.display()))?;
    let plan = run::Plan {
        seed: args.seed,
        rate: args.rate,
        phase_secs: args.phase_secs(),
    };
    let target = args.target_template().map(|template| target::TargetPlan {
        template,
        upstream: args.upstream.clone().filter(|u| u != cli::BUILTIN_UPSTREAM),
        proxy_listen: args.proxy_listen,
        metrics: args.metrics.clone(),
        breaker: args.breaker.clone(),
        deadline_ns: args.deadline_ms * 1_000_000,
        direct_path: args.direct_template(),
    });
    progress(&format!(
        "seawall gameday: {} phases of {} s at {} requests/s to each service (seed {})",
        phases::PHASES.len(),
        plan.phase_secs,
        plan.rate,
        plan.seed
    ));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("starting the tokio runtime: {e}"))?;
    let data = rt.block_on(async {
        match &target {
            Some(t) => target::run(plan, t, &mut progress).await,
            None => run::run(plan, &mut progress).await,
        }
    });
    // Whatever is left (nothing, normally) must not keep the process alive.
    rt.shutdown_timeout(Duration::from_secs(2));
    let data = data?;
    let mut report = report::build(&data);
    report.checks = checks::evaluate(&report);
    let json = args.out.join(REPORT_JSON);
    let svg = args.out.join(PICTURE_SVG);
    let text =
        serde_json::to_vec_pretty(&report).map_err(|e| format!("encoding the report: {e}"))?;
    std::fs::write(&json, text).map_err(|e| format!("writing {}: {e}", json.display()))?;
    plot::draw(&data, &svg)?;
    Ok(Finished { report, json, svg })
}
