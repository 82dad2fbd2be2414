//! A small seedable pseudo-random generator for jitter (DESIGN §0): `SplitMix64`
//! (Steele, Lea & Flood 2014), 8 bytes of state, no allocation, deterministic for
//! a fixed seed. Tests fix the seed; bindings seed it from OS entropy.

use crate::mix::mix64;

/// Weyl increment of `SplitMix64` (the golden ratio in 64 bits).
const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

/// `SplitMix64`: each draw is the `SplitMix64` finaliser of a Weyl sequence.
/// Plain data (`Copy`, `#[repr(C)]`, 8 bytes): one per retry loop, not shared.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator seeded with `seed`.
    #[must_use]
    pub const fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    /// The next 64 random bits.
    pub const fn next_u64(&mut self) -> u64 {
        // `mix64(x)` finalises `x + GOLDEN`, so this is SplitMix64's `next()`.
        let out = mix64(self.state);
        self.state = self.state.wrapping_add(GOLDEN);
        out
    }
}
