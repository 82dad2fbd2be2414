//! The six phases of the gameday and the faults the upstream injects in each.

use serde::{Deserialize, Serialize};

/// Faults the upstream injects into every request it receives.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Faults {
    /// Latency added to every response (ms).
    pub latency_ms: u64,
    /// Probability that a response is an error (HTTP 503), in parts per million.
    pub error_ppm: u32,
    /// Never answer (until the server shuts down).
    pub hang: bool,
}

/// One phase: a name and the faults in force while it lasts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Phase {
    /// Short name, as printed in the table.
    pub name: &'static str,
    /// Faults the upstream injects during the phase.
    pub faults: Faults,
}

const fn phase(name: &'static str, latency_ms: u64, error_ppm: u32) -> Phase {
    Phase {
        name,
        faults: Faults {
            latency_ms,
            error_ppm,
            hang: false,
        },
    }
}

/// Index of the baseline phase (it also warms the stale cache).
pub const BASELINE: usize = 0;
/// Index of the +2000 ms latency phase (attempt timeouts must fire).
pub const SLOW: usize = 2;
/// Index of the 50 % errors phase (the breaker must open).
pub const HALF_ERRORS: usize = 3;
/// Index of the 100 % errors phase (fallbacks must serve stale data).
pub const ALL_ERRORS: usize = 4;
/// Index of the recovery phase (the breaker must close).
pub const RECOVERY: usize = 5;
/// The phases in which the dependency is out, for the "served" expectation: its
/// latency is past the deadline, or it fails half or all of its calls.
pub const OUTAGES: [usize; 3] = [SLOW, HALF_ERRORS, ALL_ERRORS];

/// The gameday's script, in order (the seed documents' checklist).
pub const PHASES: [Phase; 6] = [
    phase("baseline", 0, 0),
    phase("+100ms latency", 100, 0),
    phase("+2000ms latency", 2000, 0),
    phase("50% errors", 0, 500_000),
    phase("100% errors", 0, 1_000_000),
    phase("recovery", 0, 0),
];
