//! Permits: the right to make one call, consumed exactly once (DESIGN §3.6).

use core::mem::ManuallyDrop;

use super::CircuitBreaker;
use crate::outcome::Outcome;
use crate::window::SlidingWindow;

/// A plain permit: the epoch it was admitted in. For callers that cannot hold a
/// borrowing [`Permit`] (FFI, bindings); the caller must record each token exactly
/// once.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PermitToken {
    /// Epoch (generation) of the breaker state that admitted the call.
    pub epoch: u32,
}

impl PermitToken {
    /// Whether this permit was admitted in half-open (a probe: its epoch is odd,
    /// every other state's even). A probe is in the `admitted` total from its
    /// acquire on, any other permit from its record on.
    #[must_use]
    pub const fn is_probe(self) -> bool {
        super::state::is_probe_epoch(self.epoch)
    }
}

/// A circuit-breaker permit. Record its outcome with [`Permit::record`] (or the
/// shorthands); dropping it unrecorded counts as [`Outcome::Ignored`], so a
/// half-open probe slot is never lost to a panic or an early return.
#[must_use = "a dropped permit counts as ignored; record the call's outcome"]
pub struct Permit<'a, W: SlidingWindow> {
    breaker: &'a CircuitBreaker<W>,
    token: PermitToken,
}

impl<'a, W: SlidingWindow> Permit<'a, W> {
    pub(crate) fn new(breaker: &'a CircuitBreaker<W>, token: PermitToken) -> Self {
        Self { breaker, token }
    }

    /// The epoch this permit was admitted in.
    #[must_use]
    pub fn token(&self) -> PermitToken {
        self.token
    }

    /// Record how the call ended: its `outcome`, how long it took (`duration_ns`)
    /// and the time now (`now`, ns).
    // Inline, as the breaker's record is: a call here would save and restore the
    // caller's registers around a record that is itself a few loads and a CAS.
    #[inline]
    pub fn record(self, outcome: Outcome, duration_ns: u64, now: u64) {
        #[cfg(not(seawall_mutant = "double_consume"))]
        let this = ManuallyDrop::new(self);
        #[cfg(seawall_mutant = "double_consume")]
        let this = ManuallyDrop::new(&self);
        this.breaker
            .record_token(this.token, outcome, duration_ns, now);
    }

    /// Record a success.
    #[inline]
    pub fn success(self, duration_ns: u64, now: u64) {
        self.record(Outcome::Success, duration_ns, now);
    }

    /// Record a failure.
    #[inline]
    pub fn failure(self, duration_ns: u64, now: u64) {
        self.record(Outcome::Failure, duration_ns, now);
    }

    /// Give the permit back without an outcome ([`Outcome::Ignored`]).
    pub fn ignore(self) {
        self.record(Outcome::Ignored, 0, 0);
    }

    /// Turn this permit into a plain token that the caller will record itself.
    #[must_use]
    pub fn into_token(self) -> PermitToken {
        ManuallyDrop::new(self).token
    }
}

impl<W: SlidingWindow> Drop for Permit<'_, W> {
    fn drop(&mut self) {
        self.breaker
            .record_token(self.token, Outcome::Ignored, 0, 0);
    }
}

impl<W: SlidingWindow> core::fmt::Debug for Permit<'_, W> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Permit")
            .field("epoch", &self.token.epoch)
            .finish()
    }
}
