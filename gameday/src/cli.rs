//! Command-line flags. Every value is range-checked by clap, so a bad flag is a
//! clear usage error (exit status 2), never a panic.

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
}

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
        match low {
            Some(why) if !self.below_checked_range => Err(Self::command().error(
                clap::error::ErrorKind::ValueValidation,
                format!("{why}: the breaker could not be seen to open and close (--below-checked-range runs it anyway)"),
            )),
            _ => Ok(self),
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
        ] {
            let e = parse(bad).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad:?}");
        }
    }
}
