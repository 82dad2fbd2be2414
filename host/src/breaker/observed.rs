//! A breaker's state and epoch, read together, and their one encoding as a
//! number: how a binding notices transitions (its own, another thread's, another
//! process's) by comparing what it saw last with what it sees now.

use seawall_core::State;

/// State and epoch of one moment (the epoch changes with every state change).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Observed {
    /// The state.
    pub state: State,
    /// The epoch (28 bits in the core's state word).
    pub epoch: u32,
}

/// The factor of the state in a transition word: `word = state · 2³² + epoch`.
pub const STATE_FACTOR: u64 = 1 << 32;

impl Observed {
    /// The transition word `state · 2³² + epoch`, state numbered 0 closed,
    /// 1 open, 2 half-open, 3 forced open, 4 disabled (the C ABI's
    /// `SEAWALL_STATE_*`). Below 2³⁵, so exact in an `f64`: JavaScript reads the
    /// state as `Math.floor(word / 2 ** 32)` and the epoch as the remainder.
    /// Two words are equal exactly when state and epoch both are.
    #[must_use]
    pub const fn word(self) -> u64 {
        (self.state as u64) * STATE_FACTOR + self.epoch as u64
    }

    /// The state and epoch a [`word`](Self::word) encodes; `None` for a number no
    /// `word` makes.
    #[must_use]
    pub const fn from_word(word: u64) -> Option<Self> {
        let state = match word / STATE_FACTOR {
            0 => State::Closed,
            1 => State::Open,
            2 => State::HalfOpen,
            3 => State::ForcedOpen,
            4 => State::Disabled,
            _ => return None,
        };
        #[allow(
            clippy::cast_possible_truncation,
            reason = "the remainder of a division by 2^32"
        )]
        let epoch = (word % STATE_FACTOR) as u32;
        Some(Self { state, epoch })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_word_is_state_times_two_to_the_32_plus_epoch() {
        let o = |state, epoch| Observed { state, epoch };
        assert_eq!(o(State::Closed, 0).word(), 0);
        assert_eq!(o(State::Open, 7).word(), 4_294_967_303);
        assert_eq!(o(State::HalfOpen, 1).word(), 8_589_934_593);
        assert_eq!(o(State::ForcedOpen, 0).word(), 12_884_901_888);
        // The largest 28-bit epoch, disabled: 4 · 2³² + 2²⁸ − 1.
        let top = o(State::Disabled, (1 << 28) - 1);
        assert_eq!(top.word(), 17_448_304_639);
        assert!(top.word() < 1 << 53, "exact in an f64");
        for w in [
            0,
            4_294_967_303,
            8_589_934_593,
            12_884_901_888,
            17_448_304_639,
        ] {
            assert_eq!(Observed::from_word(w).map(Observed::word), Some(w));
        }
        assert_eq!(Observed::from_word(5 << 32), None);
    }
}
