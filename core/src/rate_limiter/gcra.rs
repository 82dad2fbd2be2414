//! The GCRA on one word: the decision for a request, and the compare-and-swap
//! that commits it. Both the single and the keyed limiter take cells through
//! [`Gcra::acquire`].

use super::config::RateLimiterConfig;
use super::error::RateLimitError;
use crate::error::{ConfigError, Field, Problem};
use crate::sync::{AtomicU64, Ordering};

/// A validated configuration with its emission interval and tolerance worked
/// out once, so the hot path divides nothing. Plain data, written only by `new`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Gcra {
    config: RateLimiterConfig,
    /// `T`, ns (≥ 1).
    emission_interval_ns: u64,
    /// `τ`, ns, saturated.
    tolerance_ns: u64,
}

impl Gcra {
    pub(crate) const fn new(config: RateLimiterConfig) -> Result<Self, ConfigError> {
        if let Err(e) = config.validate() {
            return Err(e);
        }
        Ok(Self {
            config,
            emission_interval_ns: config.emission_interval_ns(),
            tolerance_ns: config.tolerance_ns(),
        })
    }

    pub(crate) const fn config(&self) -> &RateLimiterConfig {
        &self.config
    }

    /// `Err` unless `1 ≤ n ≤ burst`.
    #[inline]
    const fn check_cells(&self, n: u32) -> Result<(), ConfigError> {
        if n == 0 {
            return Err(ConfigError::new(Field::CellsPerAcquire, Problem::Zero));
        }
        ConfigError::check_range(
            Field::CellsPerAcquire,
            n as u64,
            1,
            self.config.burst as u64,
        )
    }

    /// Given the stored TAT, the TAT to store if `n ≥ 1` cells conform at `now`,
    /// else the retry-after (ns from `now`).
    #[inline]
    fn decide(&self, stored_tat: u64, n: u32, now: u64) -> Result<u64, u64> {
        let t = self.emission_interval_ns;
        let tat = stored_tat.max(now);
        // A TAT past the end of the u64 clock can never be stored, nor reached.
        let Some(next) = u64::from(n)
            .checked_mul(t)
            .and_then(|cost| tat.checked_add(cost))
        else {
            return Err(u64::MAX);
        };
        // next ≥ now + n·T ≥ now + T, so neither subtraction wraps.
        let ahead = next - now - t;
        if ahead <= self.tolerance_ns {
            Ok(next)
        } else {
            Err(ahead - self.tolerance_ns)
        }
    }

    /// Take `n` cells from the TAT word `cell` at `now` (ns), or say why not.
    #[inline]
    pub(crate) fn acquire(&self, cell: &AtomicU64, n: u32, now: u64) -> Result<(), RateLimitError> {
        self.check_cells(n).map_err(RateLimitError::InvalidCells)?;
        let rejected = |retry_after_ns| RateLimitError::Rejected { retry_after_ns };
        // Relaxed throughout: the TAT guards no other memory, and a CAS always
        // compares against the latest value of the word, which is all the GCRA needs.
        #[cfg(seawall_mutant = "rate_limiter_blind_store")]
        {
            // Mutant: the decision and the write are two steps, so racing
            // callers each admit against the same TAT and the later store loses
            // the earlier one's cells.
            let next = self
                .decide(cell.load(Ordering::Relaxed), n, now)
                .map_err(rejected)?;
            cell.store(next, Ordering::Relaxed);
            Ok(())
        }
        #[cfg(not(seawall_mutant = "rate_limiter_blind_store"))]
        {
            // Invariant: the word only ever moves from the exact TAT a decision
            // read to that decision's `next = max(TAT, now) + n·T` (the CAS fails
            // otherwise and the caller decides again on what it saw), so the
            // admissions are those of the sequential GCRA in CAS order, every
            // admitted cell is counted once, and a rejection writes nothing.
            let mut seen = cell.load(Ordering::Relaxed);
            loop {
                let next = self.decide(seen, n, now).map_err(rejected)?;
                match cell.compare_exchange_weak(seen, next, Ordering::Relaxed, Ordering::Relaxed) {
                    Ok(_) => return Ok(()),
                    Err(actual) => seen = actual,
                }
            }
        }
    }
}
