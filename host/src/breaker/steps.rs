//! The steps of a breaker with a permit table, each safe against death at any
//! instruction (DESIGN §8): an acquire claims its slot before the core is asked,
//! a record marks its slot before the core records, and reclaim gives back the
//! held permits of dead processes and settles their steps in progress by count.

use seawall_core::{Corrupt, Outcome, PermitToken, Rejected, SlidingWindow};

use super::cell::BreakerCell;
use crate::owner::kill_point;
use crate::permits::{PermitError, PermitState};

/// A single-use permit: the right to make one call, to be recorded once with
/// [`Breaker::record`](super::Breaker::record).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Permit {
    /// Slot and generation in the breaker's permit table (opaque); 0 from a
    /// breaker without one.
    pub id: u64,
    /// The breaker epoch that admitted the call.
    pub epoch: u32,
}

/// Why [`Breaker::try_acquire`](super::Breaker::try_acquire) gave no permit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AcquireError {
    /// The breaker refused the call.
    Rejected(Rejected),
    /// All the breaker's permit slots ([`Breaker::permit_slots`](super::Breaker::permit_slots)) are taken
    /// (outstanding permits and calls in progress): the breaker was not asked.
    PermitsExhausted,
}

impl<W: SlidingWindow, const N: usize> BreakerCell<W, N> {
    /// Ask to make one call at `now` (ns), claiming a permit slot first.
    /// [`Corrupt`] when the core's words hold what seawall never writes (no
    /// permit is held then).
    pub fn try_acquire_checked(&self, now: u64) -> Result<Result<Permit, AcquireError>, Corrupt> {
        self.try_acquire_checked_at(|| now)
    }

    /// [`try_acquire_checked`](Self::try_acquire_checked) asking `now` (ns) only
    /// when the core's decision needs it (see the core's
    /// `acquire_token_checked_at`).
    pub fn try_acquire_checked_at(
        &self,
        now: impl FnOnce() -> u64,
    ) -> Result<Result<Permit, AcquireError>, Corrupt> {
        // The slot first, naming this process: a death after it is the slot's to
        // tell (see `settle`); with no free slot the core is not asked.
        let Some(step) = self.permits.begin_claim() else {
            return Ok(Err(AcquireError::PermitsExhausted));
        };
        kill_point!(Ok(Err(AcquireError::PermitsExhausted)));
        let token = match self.breaker.acquire_token_checked_at(now) {
            Ok(Ok(token)) => token,
            Ok(Err(r)) => {
                self.permits.finish(step);
                return Ok(Err(AcquireError::Rejected(r)));
            }
            Err(Corrupt) => {
                self.permits.finish(step);
                return Err(Corrupt);
            }
        };
        kill_point!(Ok(Err(AcquireError::PermitsExhausted)));
        Ok(Ok(Permit {
            id: self.permits.admitted(step, token.epoch),
            epoch: token.epoch,
        }))
    }

    /// Record how the call admitted with `permit` ended: once; a second use is
    /// [`PermitError::AlreadyUsed`] and records nothing. [`Corrupt`] as for
    /// [`try_acquire_checked`](Self::try_acquire_checked) (the permit is used
    /// and the outcome in the totals by then).
    pub fn record_checked(
        &self,
        permit: Permit,
        outcome: Outcome,
        duration_ns: u64,
        now: u64,
    ) -> Result<Result<(), PermitError>, Corrupt> {
        // A process may die holding its permit, before it uses it.
        kill_point!(Ok(Ok(())));
        let step = match self.permits.begin_release(permit.id, permit.epoch) {
            Ok(step) => step,
            Err(e) => return Ok(Err(e)),
        };
        kill_point!(Ok(Ok(())));
        // The core's record before the slot is freed: a death between the two
        // leaves a recording slot that reclaim settles.
        let token = PermitToken {
            epoch: permit.epoch,
        };
        let recorded = self
            .breaker
            .record_token_checked(token, outcome, duration_ns, now);
        kill_point!(Ok(Ok(())));
        self.permits.finish(step);
        recorded?;
        Ok(Ok(()))
    }

    /// Give back, as ignored at `now` (ns), the held permits of processes that
    /// `alive` says are gone, then settle their steps in progress. Returns how
    /// many permits were recorded.
    pub fn reclaim(&self, alive: impl Fn(u32) -> bool, now: u64) -> u64 {
        let mut n = self.permits.reclaim(&alive, |epoch| {
            self.breaker
                .record_token(PermitToken { epoch }, Outcome::Ignored, 0, now);
        });
        let unsettled = self.permits.words().any(|(_, w)| {
            matches!(w.state(), PermitState::Acquiring | PermitState::Recording)
                && !alive(w.owner())
        });
        if unsettled {
            // Live steps end within instructions; a moment that never comes leaves
            // them to the next reclaim.
            n += (0..8).find_map(|_| self.settle(&alive, now)).unwrap_or(0);
        }
        n
    }

    /// Settle the dead processes' steps in progress (acquiring: admitted or not;
    /// recording: recorded or not) by count, in a moment when nothing moves: the
    /// totals the same around a scan of the table (they only grow, so equal reads
    /// mean no admission or record counted in between) and no live process in a
    /// step. The core counts a probe when admitted and any other permit when
    /// recorded, so only probes can be admitted and not recorded: `admitted −
    /// recorded − held probes` of them were. So many are recorded as ignored, the
    /// others freed. Recorded with a probe's epoch no state has (`stale`: the
    /// totals only), since which of them hold a half-open probe is not known.
    /// `None` when the moment is not quiet.
    fn settle(&self, alive: &impl Fn(u32) -> bool, now: u64) -> Option<u64> {
        let before = self.balance(now);
        let mut held = 0u64;
        let mut dead = Vec::new();
        for (idx, w) in self.permits.words() {
            match w.state() {
                // Only a held probe is in `admitted − recorded` (see the doc above).
                PermitState::Free | PermitState::Held => {
                    held += u64::from(w.state() == PermitState::Held && self.is_probe_slot(idx));
                }
                _ if !alive(w.owner()) => dead.push((idx, w)),
                _ => return None,
            }
        }
        #[cfg(not(seawall_mutant = "breaker_settle_unquiet"))]
        if self.balance(now) != before {
            return None;
        }
        let owed = before.0.checked_sub(before.1)?.checked_sub(held)?;
        if owed > dead.len() as u64 {
            return None;
        }
        // Odd (a probe's, so it balances a probe's admission) and not the current one.
        let never = (self.breaker.epoch() | 1).wrapping_add(2);
        let mut recorded = 0;
        for (k, (idx, w)) in dead.into_iter().enumerate() {
            #[cfg(seawall_mutant = "breaker_settle_frees_all")]
            let owed = 0; // Mutant: every dead step freed, none recorded.
            if (k as u64) < owed {
                if let Some(step) = self.permits.take_over(idx, w, PermitState::Recording) {
                    self.breaker.record_token(
                        PermitToken { epoch: never },
                        Outcome::Ignored,
                        0,
                        now,
                    );
                    self.permits.finish(step);
                    recorded += 1;
                }
            } else {
                let _ = self.permits.take_over(idx, w, PermitState::Free);
            }
        }
        Some(recorded)
    }

    /// The totals a permit moves: `admitted`, and the three outcomes.
    fn balance(&self, now: u64) -> (u64, u64) {
        let t = self.breaker.metrics(now).totals;
        // Wrapping: the totals of a corrupted region may hold anything.
        (
            t.admitted,
            t.successes.wrapping_add(t.failures).wrapping_add(t.ignored),
        )
    }

    /// Whether slot `idx` holds (or held last) a half-open probe.
    fn is_probe_slot(&self, idx: usize) -> bool {
        PermitToken {
            epoch: self.permits.epoch_of(idx),
        }
        .is_probe()
    }
}
