//! A stateless 64-bit mixer (`SplitMix64`'s finaliser, Steele, Lea & Flood 2014).
//!
//! Jitter that must be the same for everyone who asks (the open duration of one
//! opening, say) is drawn as `mix(seed ^ key)`: deterministic, lock-free, no state.

/// `SplitMix64` finaliser of `x + golden ratio`.
#[must_use]
pub const fn mix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A draw from `lo ..= hi` (inclusive) given 64 random bits, by multiply-shift
/// (Lemire), so the bias is below 2⁻⁶⁴·span.
#[must_use]
pub const fn pick(bits: u64, lo: u64, hi: u64) -> u64 {
    if hi <= lo {
        return lo;
    }
    let span = (hi - lo) as u128 + 1;
    lo + (((bits as u128) * span) >> 64) as u64
}
