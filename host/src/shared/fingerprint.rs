//! Stable fingerprints of configurations: FNV-1a (64-bit) over the little-endian
//! bytes of a list of words.
//!
//! Every process that shares a structure must compute the same fingerprint for the
//! same configuration, whichever compiler built it, so this hashes an explicit list
//! of field values in a fixed order; `#[derive(Hash)]` output is not promised to
//! be stable across Rust releases.

const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
const PRIME: u64 = 0x0000_0100_0000_01b3;

/// FNV-1a of the words, each as 8 little-endian bytes.
#[must_use]
pub fn fingerprint(words: &[u64]) -> u64 {
    words
        .iter()
        .fold(OFFSET_BASIS, |h, w| fnv1a(h, &w.to_le_bytes()))
}

/// FNV-1a, continuing from `h`.
fn fnv1a(h: u64, bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(h, |h, &b| (h ^ u64::from(b)).wrapping_mul(PRIME))
}

/// An optional value as two words (present flag, value), so `None` and `Some(0)`
/// differ.
#[must_use]
pub fn opt(v: Option<u64>) -> [u64; 2] {
    v.map_or([0, 0], |x| [1, x])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_published_fnv1a_64_vectors() {
        // Test vectors of the FNV reference (Fowler, Noll, Vo): "", "a", "foobar".
        assert_eq!(fnv1a(OFFSET_BASIS, b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(OFFSET_BASIS, b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(OFFSET_BASIS, b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn words_are_hashed_as_little_endian_bytes() {
        assert_eq!(fingerprint(&[]), OFFSET_BASIS);
        let word = u64::from_le_bytes(*b"foobar\0\0");
        assert_eq!(
            fingerprint(&[word]),
            fnv1a(fnv1a(OFFSET_BASIS, b"foobar"), &[0, 0])
        );
    }

    #[test]
    fn none_and_some_zero_differ() {
        assert_ne!(fingerprint(&opt(None)), fingerprint(&opt(Some(0))));
    }
}
