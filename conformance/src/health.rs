//! `health` scenarios (format: `conformance/cases/FORMAT.md`): calls, errors,
//! percentiles within the histogram's documented 1/32 relative error, and status.

use seawall_core::{Health, HealthConfig, HealthStatus};

use crate::scenario::{Fields, Scenario, StepClock, StepError, ms_to_ns, ns_to_ms, percent};

/// What a health implementation must offer. Times in ns.
pub trait HealthDriver {
    /// Record one call.
    fn record(&mut self, latency_ns: u64, failed: bool, now: u64);
    /// Calls and errors in the window.
    fn counts(&self, now: u64) -> (u64, u64);
    /// The `percent`-th percentile latency (ns), `None` for an empty window.
    fn percentile(&self, percent: f64, now: u64) -> Option<u64>;
    /// `healthy`, `degraded` or `unhealthy`.
    fn status(&self, now: u64) -> String;
}

/// The scenario's `health` object as a core config.
pub fn parse_config(
    map: &serde_json::Map<String, serde_json::Value>,
) -> Result<HealthConfig, String> {
    let f = Fields::new(map, "health");
    f.only(&[
        "buckets",
        "bucket_ms",
        "degraded_error_rate",
        "unhealthy_error_rate",
        "degraded_p99_ms",
        "unhealthy_p99_ms",
    ])?;
    let d = HealthConfig::DEFAULT;
    Ok(HealthConfig {
        buckets: match f.u64("buckets")? {
            None => d.buckets,
            Some(n) => u32::try_from(n).map_err(|_| "`buckets` too large")?,
        },
        bucket_width_ns: f.f64("bucket_ms")?.map_or(d.bucket_width_ns, ms_to_ns),
        degraded_error_rate: f
            .f64("degraded_error_rate")?
            .map_or(d.degraded_error_rate, percent),
        unhealthy_error_rate: f
            .f64("unhealthy_error_rate")?
            .map_or(d.unhealthy_error_rate, percent),
        degraded_p99_ns: f
            .f64("degraded_p99_ms")?
            .map_or(d.degraded_p99_ns, ms_to_ns),
        unhealthy_p99_ns: f
            .f64("unhealthy_p99_ms")?
            .map_or(d.unhealthy_p99_ns, ms_to_ns),
    })
}

/// Run a health scenario against driver `d`.
pub fn run<D: HealthDriver>(sc: &Scenario, d: &mut D) -> Result<(), StepError> {
    let mut clock = StepClock::default();
    for (i, step) in sc.steps.iter().enumerate() {
        let now = clock.advance(i, step)?;
        let f = Fields::new(step, "step");
        let bad = |m: String| StepError::malformed(i, m);
        f.only(&[
            "at_ms",
            "record_ms",
            "count",
            "failed",
            "expect_calls",
            "expect_errors",
            "expect_percentile",
            "approx_ms",
            "expect_status",
        ])
        .map_err(bad)?;
        if let Some(ms) = f.f64("record_ms").map_err(bad)? {
            let failed = f.bool("failed").map_err(bad)?.unwrap_or(false);
            for _ in 0..f.u64("count").map_err(bad)?.unwrap_or(1) {
                d.record(ms_to_ns(ms), failed, now);
            }
        }
        let (calls, errors) = d.counts(now);
        if let Some(want) = f.u64("expect_calls").map_err(bad)?
            && want != calls
        {
            return Err(StepError::mismatch(i, format!("{want} calls"), calls));
        }
        if let Some(want) = f.u64("expect_errors").map_err(bad)?
            && want != errors
        {
            return Err(StepError::mismatch(i, format!("{want} errors"), errors));
        }
        if let Some(p) = f.f64("expect_percentile").map_err(bad)? {
            let want = f.f64("approx_ms").map_err(bad)?;
            let got = d.percentile(p, now);
            let ok = match (want, got) {
                (None, None) => true,
                (Some(w), Some(g)) => {
                    // |got − want| ≤ want / 32, in ns.
                    let w = ms_to_ns(w);
                    g.abs_diff(w) * 32 <= w
                }
                _ => false,
            };
            if !ok {
                return Err(StepError::mismatch(
                    i,
                    format!("p{p} ≈ {want:?} ms (± 1/32)"),
                    got.map(ns_to_ms),
                ));
            }
        }
        if let Some(want) = f.str("expect_status").map_err(bad)? {
            let got = d.status(now);
            if got != want {
                return Err(StepError::mismatch(i, want, got));
            }
        }
    }
    Ok(())
}

/// The Rust core behind [`HealthDriver`].
pub struct CoreHealth(pub Box<Health<60>>);

impl HealthDriver for CoreHealth {
    fn record(&mut self, latency_ns: u64, failed: bool, now: u64) {
        self.0.record(latency_ns, failed, now);
    }

    fn counts(&self, now: u64) -> (u64, u64) {
        let s = self.0.snapshot(now);
        (s.calls, s.errors)
    }

    fn percentile(&self, percent: f64, now: u64) -> Option<u64> {
        self.0.quantile(crate::scenario::percent(percent), now)
    }

    fn status(&self, now: u64) -> String {
        let s: HealthStatus = self.0.status(now);
        s.name().to_owned()
    }
}
