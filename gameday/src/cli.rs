//! Command-line flags. Every value is range-checked by clap, so a bad flag is a
//! clear usage error (exit status 2), never a panic.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Parser;

/// Seconds per phase by default: six phases of 15 s run in 90 s.
pub const DEFAULT_PHASE_SECS: u32 = 15;
/// Seconds per phase with `--quick` (for CI): six phases of 5 s run in 30 s.
pub const QUICK_PHASE_SECS: u32 = 5;
/// Lowest `--rate`: twice the breaker's minimum number of calls (20) per 2 s window.
pub const MIN_RATE: u32 = 20;
/// Shortest `--phase-secs`: the 1 s open period, the probes and a window's worth of
/// calls after them.
pub const MIN_PHASE_SECS: u32 = 3;

/// The seawall gameday: a chaos experiment over loopback HTTP.
///
/// Starts an upstream with fault injection and the same product-details service
/// twice (unprotected, and protected by seawall's full pipeline), drives both with
/// the same open-loop load through six phases (baseline, +100 ms, +2000 ms, 50 %
/// errors, 100 % errors, recovery), prints a table, writes `gameday-report.json`
/// and `gameday.svg`, and exits with status 1 naming every expectation that did not
/// hold (2 for a usage or I/O error).
#[derive(Parser, Debug, Clone, PartialEq, Eq)]
#[command(name = "seawall-gameday", version)]
pub struct Args {
    /// Short phases (5 s each, 30 s in all) for CI; `--phase-secs` overrides.
    #[arg(long)]
    pub quick: bool,

    /// Seed of every random choice: request ids and priorities, the upstream's
    /// latency and injected errors, retry jitter.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,

    /// Requests per second sent to each service (open loop), 20 to 200. Below 20 the
    /// breaker's 2 s window holds fewer than twice its minimum of 20 calls, so it
    /// may never be allowed to open and the run could not show what it is for.
    #[arg(long, default_value_t = 80, value_parser = clap::value_parser!(u32).range(1..=200))]
    pub rate: u32,

    /// Seconds per phase, 3 to 60 [default: 15, or 5 with --quick]. A phase must
    /// hold a whole open → half-open → closed cycle (1 s open, then the probes).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=60))]
    pub phase_secs: Option<u32>,

    /// Accept `--rate` down to 1 and `--phase-secs` down to 1, where the checks
    /// cannot hold: a way to watch a failed check (the tests use it).
    #[arg(long)]
    pub below_checked_range: bool,

    /// Directory for gameday-report.json and gameday.svg (created if missing).
    #[arg(long, default_value = "gameday-out")]
    pub out: PathBuf,

    /// Run against your own service instead of the built-in demo: the load goes to
    /// this URL, `{id}` replaced by a product id 1-50 (without `{id}`,
    /// `/products/{id}` is appended). Needs `--upstream`; point the service's
    /// dependency at the proxy (`--proxy-listen`).
    #[arg(long, value_name = "URL", requires = "upstream")]
    pub target: Option<String>,

    /// The service's real dependency, where the proxy forwards
    /// (`http://host:port`), or `builtin` for the gameday's own inventory upstream
    /// (`GET /inventory/{id}`).
    #[arg(long, value_name = "URL|builtin", requires = "target")]
    pub upstream: Option<String>,

    /// Where the fault-injecting proxy listens; the service's dependency URL must
    /// point here.
    #[arg(
        long,
        value_name = "ADDR",
        default_value = "127.0.0.1:9900",
        requires = "target"
    )]
    pub proxy_listen: SocketAddr,

    /// The service's Prometheus endpoint (seawall's metric names): breaker state
    /// and transitions, bulkhead rejections, retry-budget denials. Without it the
    /// checks that need them are reported as not checked.
    #[arg(long, value_name = "URL", requires = "target")]
    pub metrics: Option<String>,

    /// Which breaker of `--metrics` to follow (its `name` / `breaker` label);
    /// needed when the endpoint exports several.
    #[arg(long, value_name = "NAME", requires = "metrics")]
    pub breaker: Option<String>,

    /// The service's per-request deadline (ms), for the p99 check.
    #[arg(long, value_name = "MS", default_value_t = 1000, requires = "target",
          value_parser = clap::value_parser!(u64).range(1..=60_000))]
    pub deadline_ms: u64,

    /// Path (with `{id}`) on the dependency that the load also calls directly
    /// through the proxy, as the unprotected comparison row ("direct")
    /// [default with `--upstream builtin`: /inventory/{id}; else none].
    #[arg(long, value_name = "PATH", requires = "target")]
    pub direct_path: Option<String>,
}

/// `--upstream builtin`: the gameday's own inventory upstream is the dependency.
pub const BUILTIN_UPSTREAM: &str = "builtin";

impl Args {
    /// The flags as given, if they lie where the checks can hold (or
    /// `--below-checked-range` says to run anyway); else a usage error (exit 2).
    pub fn checked(self) -> Result<Self, clap::Error> {
        use clap::CommandFactory;
        let low = if self.rate < MIN_RATE {
            Some(format!("--rate {} is below {MIN_RATE}", self.rate))
        } else if self.phase_secs() < MIN_PHASE_SECS {
            Some(format!(
                "--phase-secs {} is below {MIN_PHASE_SECS}",
                self.phase_secs()
            ))
        } else {
            None
        };
        if let Some(bad) = self.bad_target_flag() {
            return Err(Self::command().error(clap::error::ErrorKind::ValueValidation, bad));
        }
        match low {
            Some(why) if !self.below_checked_range => Err(Self::command().error(
                clap::error::ErrorKind::ValueValidation,
                format!("{why}: the breaker could not be seen to open and close (--below-checked-range runs it anyway)"),
            )),
            _ => Ok(self),
        }
    }

    /// A target flag that cannot work, in words.
    fn bad_target_flag(&self) -> Option<String> {
        let http = |flag: &str, v: &Option<String>| {
            v.as_deref()
                .filter(|u| !(u.starts_with("http://") && u.len() > "http://".len()))
                .map(|u| format!("{flag} {u:?} must be an http:// URL (plain HTTP)"))
        };
        let upstream = self.upstream.clone().filter(|u| u != BUILTIN_UPSTREAM);
        http("--target", &self.target)
            .or_else(|| http("--upstream", &upstream))
            .or_else(|| http("--metrics", &self.metrics))
            .or_else(|| {
                self.direct_path
                    .as_deref()
                    .filter(|p| !p.starts_with('/'))
                    .map(|p| format!("--direct-path {p:?} must start with /"))
            })
    }

    /// The load's URL template against `--target` (with `{id}`).
    #[must_use]
    pub fn target_template(&self) -> Option<String> {
        let t = self.target.as_deref()?.trim_end_matches('/');
        Some(if t.contains("{id}") {
            t.to_owned()
        } else {
            format!("{t}/products/{{id}}")
        })
    }

    /// The direct path template, if there is a direct row.
    #[must_use]
    pub fn direct_template(&self) -> Option<String> {
        match (&self.direct_path, self.upstream.as_deref()) {
            (Some(p), _) => Some(p.clone()),
            (None, Some(BUILTIN_UPSTREAM)) => Some("/inventory/{id}".into()),
            _ => None,
        }
    }

    /// Seconds per phase after `--quick` and `--phase-secs` are applied.
    #[must_use]
    pub fn phase_secs(&self) -> u32 {
        self.phase_secs.unwrap_or(if self.quick {
            QUICK_PHASE_SECS
        } else {
            DEFAULT_PHASE_SECS
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Args, clap::Error> {
        Args::try_parse_from(std::iter::once("seawall-gameday").chain(args.iter().copied()))?
            .checked()
    }

    #[test]
    fn defaults_and_quick() {
        let a = parse(&[]).unwrap();
        assert_eq!((a.rate, a.seed, a.phase_secs()), (80, 42, 15));
        assert_eq!(a.out, PathBuf::from("gameday-out"));
        assert_eq!(parse(&["--quick"]).unwrap().phase_secs(), 5);
        let a = parse(&["--quick", "--phase-secs", "7", "--rate", "200"]).unwrap();
        assert_eq!((a.phase_secs(), a.rate), (7, 200));
        let a = parse(&["--rate", "20", "--phase-secs", "3"]).unwrap();
        assert_eq!((a.phase_secs(), a.rate), (3, 20));
        let a = parse(&["--rate", "5", "--phase-secs", "1", "--below-checked-range"]).unwrap();
        assert_eq!((a.phase_secs(), a.rate), (1, 5));
    }

    #[test]
    fn target_flags() {
        let a = parse(&["--target", "http://127.0.0.1:3000", "--upstream", "builtin"]).unwrap();
        assert_eq!(
            a.target_template().as_deref(),
            Some("http://127.0.0.1:3000/products/{id}")
        );
        assert_eq!(a.direct_template().as_deref(), Some("/inventory/{id}"));
        assert_eq!(a.proxy_listen.to_string(), "127.0.0.1:9900");
        assert_eq!(a.deadline_ms, 1000);
        let a = parse(&[
            "--target",
            "http://h:1/api/products/{id}",
            "--upstream",
            "http://h:2",
            "--metrics",
            "http://h:1/metrics",
            "--breaker",
            "inventory",
            "--deadline-ms",
            "3000",
        ])
        .unwrap();
        assert_eq!(
            a.target_template().as_deref(),
            Some("http://h:1/api/products/{id}")
        );
        assert_eq!(a.direct_template(), None);
        assert_eq!(
            (a.deadline_ms, a.breaker.as_deref()),
            (3000, Some("inventory"))
        );
        assert_eq!(parse(&[]).unwrap().target_template(), None);
    }

    #[test]
    fn out_of_range_values_are_usage_errors() {
        for bad in [
            &["--rate", "0"][..],
            &["--rate", "19"],
            &["--rate", "201"],
            &["--rate", "fast"],
            &["--phase-secs", "0"],
            &["--phase-secs", "2"],
            &["--phase-secs", "61"],
            &["--seed", "-1"],
            &["--bogus"],
            &["--target", "http://h:1"],
            &["--upstream", "builtin"],
            &["--target", "https://h:1", "--upstream", "builtin"],
            &["--target", "h:1", "--upstream", "builtin"],
            &["--target", "http://h:1", "--upstream", "ftp://x"],
            &[
                "--target",
                "http://h:1",
                "--upstream",
                "builtin",
                "--metrics",
                "x",
            ],
            &[
                "--target",
                "http://h:1",
                "--upstream",
                "builtin",
                "--proxy-listen",
                "nowhere",
            ],
            &[
                "--target",
                "http://h:1",
                "--upstream",
                "builtin",
                "--deadline-ms",
                "0",
            ],
            &[
                "--target",
                "http://h:1",
                "--upstream",
                "builtin",
                "--direct-path",
                "x",
            ],
            &["--breaker", "b"],
        ] {
            let e = parse(bad).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad:?}");
        }
    }
}
