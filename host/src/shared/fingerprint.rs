//! Stable fingerprints of configurations: FNV-1a (64-bit) over the little-endian
//! bytes of a list of words.
//!
//! Every process that shares a structure must compute the same fingerprint for the
//! same configuration, whichever compiler built it, so this hashes an explicit list
//! of field values in a fixed order; `#[derive(Hash)]` output is not promised to
//! be stable across Rust releases.
//!
//! A configuration is first written out as an [`Agreement`]: each field every
//! sharer must agree on, named, with its value as words. The fingerprint hashes
//! the words in order; when a region's fingerprint differs from a caller's, the
//! two agreements name the fields that differ ([`Agreement::differing`]).

use seawall_core::Field;

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

/// What every process sharing one structure must agree on: a tag naming the
/// kind of configuration, then each field that counts with its value as words,
/// in a fixed order. Built by each structure's `Shareable::agreement`, which
/// destructures its configuration without `..`, so a field added to the core is
/// a compile error there until it is placed here (or deliberately left out).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Agreement {
    tag: u64,
    fields: Vec<(Field, Vec<u64>)>,
}

impl Agreement {
    /// An agreement on nothing yet, for the configuration kind `tag` (8 bytes, so
    /// two kinds never hash alike even with equal field values).
    #[must_use]
    pub fn new(tag: &[u8; 8]) -> Self {
        Self {
            tag: u64::from_le_bytes(*tag),
            fields: Vec::new(),
        }
    }

    /// Add `field`, whose value is `words`.
    #[must_use]
    pub fn field(mut self, field: Field, words: &[u64]) -> Self {
        self.fields.push((field, words.to_vec()));
        self
    }

    /// Add `field`, a plain value.
    #[must_use]
    pub fn value(self, field: Field, value: u64) -> Self {
        self.field(field, &[value])
    }

    /// Add `field`, a rule that may be off ([`opt`]: `None` and `Some(0)` differ).
    #[must_use]
    pub fn optional(self, field: Field, value: Option<u64>) -> Self {
        self.field(field, &opt(value))
    }

    /// The fingerprint: FNV-1a of the tag, then every field's words in order.
    #[must_use]
    pub fn fingerprint(&self) -> u64 {
        let words: Vec<u64> = core::iter::once(self.tag)
            .chain(self.fields.iter().flat_map(|(_, w)| w.iter().copied()))
            .collect();
        fingerprint(&words)
    }

    /// The fields of `self` whose values differ in `other` (an agreement of the
    /// same kind of configuration), in order. Fields only one side has are
    /// listed too, so a disagreement is never reported as none.
    #[must_use]
    pub fn differing(&self, other: &Self) -> Vec<Field> {
        let mut out: Vec<Field> = Vec::new();
        let mut note = |f: Field| {
            if !out.contains(&f) {
                out.push(f);
            }
        };
        for (i, (field, words)) in self.fields.iter().enumerate() {
            if other
                .fields
                .get(i)
                .is_none_or(|(f, w)| f != field || w != words)
            {
                note(*field);
            }
        }
        for (field, _) in other.fields.iter().skip(self.fields.len()) {
            note(*field);
        }
        out
    }
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

    #[test]
    fn an_agreement_hashes_its_tag_then_its_words_in_order() {
        let a = Agreement::new(b"foobar\0\0")
            .value(Field::MaxQueue, 7)
            .optional(Field::SlowCallDuration, None)
            .field(Field::PriorityShares, &[1, 2]);
        // The same bytes written out by hand: the tag, 7, (0, 0), 1, 2.
        let mut h = fnv1a(OFFSET_BASIS, b"foobar\0\0");
        for w in [7u64, 0, 0, 1, 2] {
            h = fnv1a(h, &w.to_le_bytes());
        }
        assert_eq!(a.fingerprint(), h);
    }

    #[test]
    fn differing_names_exactly_the_fields_whose_values_differ() {
        let base = || {
            Agreement::new(b"test\0\0\0\0")
                .value(Field::MaxConcurrent, 4)
                .value(Field::MaxQueue, 8)
                .optional(Field::SlowCallDuration, Some(0))
        };
        assert_eq!(base().differing(&base()), []);
        let other = Agreement::new(b"test\0\0\0\0")
            .value(Field::MaxConcurrent, 4)
            .value(Field::MaxQueue, 9)
            .optional(Field::SlowCallDuration, None);
        assert_eq!(
            base().differing(&other),
            [Field::MaxQueue, Field::SlowCallDuration]
        );
        assert_eq!(other.differing(&base()), base().differing(&other));
        let longer = base().value(Field::PriorityShares, 1);
        assert_eq!(base().differing(&longer), [Field::PriorityShares]);
        assert_eq!(longer.differing(&base()), [Field::PriorityShares]);
    }
}
