//! `backoff` scenarios: exact delays (jitter `none`) and ranges of jittered draws.

use seawall_core::{Backoff, BackoffConfig, Jitter, SplitMix64};

use crate::scenario::{Fields, Scenario, StepError, factor, ms_to_ns, ns_to_ms};

/// What a backoff implementation must offer. Times in ns.
pub trait BackoffDriver {
    /// The delay before retry `attempt`, given the previous delay (decorrelated
    /// jitter) and 64 random bits.
    fn delay(&mut self, attempt: u32, previous_ns: u64, random: u64) -> u64;
    /// Whether the delay depends on the previous one (attempts are then drawn in
    /// order from 1).
    fn sequential(&self) -> bool;
}

/// The scenario's `backoff` object as a core config (DESIGN defaults for omitted keys).
pub fn parse_config(
    map: &serde_json::Map<String, serde_json::Value>,
) -> Result<BackoffConfig, String> {
    let f = Fields::new(map, "backoff");
    f.only(&["base_ms", "multiplier", "max_ms", "jitter", "jitter_factor"])?;
    let d = BackoffConfig::DEFAULT;
    let jitter_factor = f.f64("jitter_factor")?.map(factor);
    let jitter = match f.str("jitter")? {
        None => d.jitter,
        Some("none") => Jitter::None,
        Some("full") => Jitter::Full,
        Some("equal") => Jitter::Equal,
        Some("decorrelated") => Jitter::Decorrelated,
        Some("proportional") => jitter_factor.map_or(Jitter::PROPORTIONAL, |factor| {
            Jitter::Proportional { factor }
        }),
        Some(other) => return Err(format!("unknown jitter {other:?}")),
    };
    if jitter_factor.is_some() && !matches!(jitter, Jitter::Proportional { .. }) {
        return Err("`jitter_factor` is for proportional jitter only".into());
    }
    Ok(BackoffConfig {
        base_ns: f.f64("base_ms")?.map_or(d.base_ns, ms_to_ns),
        multiplier: f.f64("multiplier")?.map_or(d.multiplier, factor),
        max_ns: f.f64("max_ms")?.map_or(d.max_ns, ms_to_ns),
        jitter,
    })
}

/// The draw for `attempt` from a fresh sequence seeded by `seed`.
fn draw<D: BackoffDriver>(d: &mut D, attempt: u32, seed: u64) -> u64 {
    let mut rng = SplitMix64::new(seed);
    if !d.sequential() {
        return d.delay(attempt, 0, rng.next_u64());
    }
    let mut previous = 0;
    for n in 1..=attempt {
        previous = d.delay(n, previous, rng.next_u64());
    }
    previous
}

/// Run a backoff scenario against driver `d`.
pub fn run<D: BackoffDriver>(sc: &Scenario, d: &mut D) -> Result<(), StepError> {
    let mut seed = 0x5EA_3A11_u64;
    for (i, step) in sc.steps.iter().enumerate() {
        let f = Fields::new(step, "step");
        let bad = |m: String| StepError::malformed(i, m);
        f.only(&[
            "at_ms",
            "attempt",
            "expect_delay_ms",
            "expect_range_ms",
            "draws",
        ])
        .map_err(bad)?;
        let attempt = f
            .u64("attempt")
            .map_err(bad)?
            .ok_or_else(|| bad("needs `attempt`".into()))?;
        let attempt = u32::try_from(attempt).map_err(|_| bad("`attempt` too large".into()))?;
        if let Some(want) = f.f64("expect_delay_ms").map_err(bad)? {
            let got = draw(d, attempt, seed);
            if got != ms_to_ns(want) {
                return Err(StepError::mismatch(i, want, ns_to_ms(got)));
            }
        } else if let Some(range) = f.raw("expect_range_ms") {
            let bounds: Vec<f64> = range
                .as_array()
                .map(|a| a.iter().filter_map(serde_json::Value::as_f64).collect())
                .unwrap_or_default();
            let [lo, hi] = bounds[..] else {
                return Err(bad("`expect_range_ms` must be [lo, hi]".into()));
            };
            let draws = f.u64("draws").map_err(bad)?.unwrap_or(1);
            let (lo_ns, hi_ns) = (ms_to_ns(lo), ms_to_ns(hi));
            let mut draws_seen = Vec::new();
            for _ in 0..draws {
                seed = seed.wrapping_add(1);
                let got = draw(d, attempt, seed);
                if got < lo_ns || got > hi_ns {
                    return Err(StepError::mismatch(
                        i,
                        format!("a delay in [{lo}, {hi}] ms"),
                        ns_to_ms(got),
                    ));
                }
                draws_seen.push(got);
            }
            if lo < hi && draws > 1 && draws_seen.iter().all(|&x| x == draws_seen[0]) {
                return Err(StepError::mismatch(
                    i,
                    "draws that differ",
                    format!("{draws} draws all {} ms", ns_to_ms(draws_seen[0])),
                ));
            }
        } else {
            return Err(bad("needs `expect_delay_ms` or `expect_range_ms`".into()));
        }
    }
    Ok(())
}

/// The Rust core behind [`BackoffDriver`].
pub struct CoreBackoff(pub Backoff);

impl BackoffDriver for CoreBackoff {
    fn delay(&mut self, attempt: u32, previous_ns: u64, random: u64) -> u64 {
        self.0.delay(attempt, previous_ns, random)
    }

    fn sequential(&self) -> bool {
        self.0.config().jitter == Jitter::Decorrelated
    }
}
