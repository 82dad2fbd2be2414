//! `deadline` scenarios: the step interpreter, generic over [`DeadlineDriver`] so the
//! C ABI reuses it, and the core's [`Deadline`] behind it.

use seawall_core::Deadline;

use crate::scenario::{Fields, Scenario, StepClock, StepError, ms_to_ns, ns_to_ms};

/// What a deadline implementation must offer to run the scenarios. Times in ns.
pub trait DeadlineDriver {
    /// Nanoseconds left at `now`.
    fn remaining(&self, now: u64) -> u64;
    /// `min(max, remaining(now))`.
    fn allocate(&self, max: u64, now: u64) -> u64;
    /// Whether nothing remains at `now`.
    fn expired(&self, now: u64) -> bool;
}

impl DeadlineDriver for Deadline {
    fn remaining(&self, now: u64) -> u64 {
        Deadline::remaining(self, now)
    }
    fn allocate(&self, max: u64, now: u64) -> u64 {
        Deadline::allocate(self, max, now)
    }
    fn expired(&self, now: u64) -> bool {
        Deadline::expired(self, now)
    }
}

/// Run a deadline scenario against the core: the budget starts at the first step's time.
pub fn run(sc: &Scenario) -> Result<(), StepError> {
    run_with(sc, Deadline::new)
}

/// Run a deadline scenario against the driver `start(total_ns, now)` returns at the
/// first step.
pub fn run_with<D: DeadlineDriver>(
    sc: &Scenario,
    mut start: impl FnMut(u64, u64) -> D,
) -> Result<(), StepError> {
    let cfg = Fields::new(&sc.config, "deadline");
    let total = cfg
        .f64("total_ms")
        .ok()
        .flatten()
        .ok_or_else(|| StepError::malformed(0, "deadline needs `total_ms`"))?;
    let mut clock = StepClock::default();
    let mut deadline: Option<D> = None;
    for (i, step) in sc.steps.iter().enumerate() {
        let now = clock.advance(i, step)?;
        let d = deadline.get_or_insert_with(|| start(ms_to_ns(total), now));
        let f = Fields::new(step, "step");
        let bad = |m: String| StepError::malformed(i, m);
        f.only(&[
            "at_ms",
            "expect_remaining_ms",
            "allocate_ms",
            "expect_ms",
            "expect_expired",
        ])
        .map_err(bad)?;
        if let Some(want) = f.f64("expect_remaining_ms").map_err(bad)? {
            let got = d.remaining(now);
            if got != ms_to_ns(want) {
                return Err(StepError::mismatch(i, want, ns_to_ms(got)));
            }
        }
        if let Some(max) = f.f64("allocate_ms").map_err(bad)? {
            let want = f
                .f64("expect_ms")
                .map_err(bad)?
                .ok_or_else(|| bad("`allocate_ms` needs `expect_ms`".into()))?;
            let got = d.allocate(ms_to_ns(max), now);
            if got != ms_to_ns(want) {
                return Err(StepError::mismatch(i, want, ns_to_ms(got)));
            }
        }
        if let Some(want) = f.bool("expect_expired").map_err(bad)? {
            let got = d.expired(now);
            if got != want {
                return Err(StepError::mismatch(i, want, got));
            }
        }
    }
    Ok(())
}
