//! Division by a divisor fixed at construction, without a `div` instruction on the
//! hot path: a 64-bit `div` costs tens of cycles on the critical path of every
//! time-window record, a multiply costs three or four.
//!
//! `m = ⌊(2⁶⁴ − 1) / d⌋` underestimates `2⁶⁴ / d` by at most 1, so
//! `q̂ = ⌊n · m / 2⁶⁴⌋` is the true quotient or one less (the error `n·(2⁶⁴/d − m)/2⁶⁴`
//! is below `n / 2⁶⁴ < 1`), and one compare-and-correct step makes it exact for every
//! `n: u64` (Granlund & Montgomery 1994, "Division by invariant integers using
//! multiplication", with the simple one-step correction).

/// A divisor with its precomputed reciprocal. Plain data, `#[repr(C)]`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Divisor {
    d: u64,
    m: u64,
}

impl Divisor {
    /// Prepare division by `d` (`d ≥ 1`; 0 is treated as 1 so no input panics —
    /// callers validate their configs first).
    #[must_use]
    pub const fn new(d: u64) -> Self {
        let d = if d == 0 { 1 } else { d };
        Self { d, m: u64::MAX / d }
    }

    /// The divisor.
    #[must_use]
    pub const fn get(self) -> u64 {
        self.d
    }

    /// `u64::MAX / d`, the largest quotient of any `n: u64` (as stored: for a
    /// divisor read from a shared region, whatever it holds).
    #[must_use]
    #[inline]
    pub const fn max_quotient(self) -> u64 {
        self.m
    }

    /// `(n / d, n % d)`, exactly.
    #[must_use]
    #[inline]
    pub const fn div_rem(self, n: u64) -> (u64, u64) {
        if self.d == 1 {
            return (n, 0);
        }
        // For a divisor built by `new` nothing here can wrap (`q ≤ n / d`); the
        // wrapping forms are for one read from a shared region with any `d` and
        // `m` (DESIGN §8): then the answer is wrong, but never a panic, and
        // callers check any index they derive from it.
        let q = ((n as u128 * self.m as u128) >> 64) as u64;
        let r = n.wrapping_sub(q.wrapping_mul(self.d));
        if r >= self.d {
            (q.wrapping_add(1), r - self.d)
        } else {
            (q, r)
        }
    }

    /// `n / d`, exactly.
    #[must_use]
    #[inline]
    pub const fn div(self, n: u64) -> u64 {
        self.div_rem(n).0
    }

    /// Whether `n / d > q`, exactly: `n ≥ (q + 1) · d`, one multiply where the
    /// quotient takes two (and no `(q + 1) · d` past `u64::MAX` is reached by any
    /// `n`). A divisor of 0 read from a shared region answers `true` for every
    /// `q` below `u64::MAX`: wrong, but never a panic.
    #[must_use]
    #[inline]
    pub const fn quotient_exceeds(self, n: u64, q: u64) -> bool {
        match q.checked_add(1) {
            Some(next) => match next.checked_mul(self.d) {
                Some(start) => n >= start,
                None => false,
            },
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Divisor;
    use proptest::prelude::*;

    #[test]
    fn edges_match_the_div_instruction() {
        let ns = [
            0,
            1,
            2,
            3,
            99_999,
            100_000,
            u64::MAX - 1,
            u64::MAX,
            1 << 63,
            (1 << 63) - 1,
        ];
        let ds = [
            1,
            2,
            3,
            7,
            10,
            64,
            100_000,
            1_000_000_007,
            1 << 32,
            (1 << 63) + 1,
            u64::MAX,
        ];
        for &d in &ds {
            let v = Divisor::new(d);
            for &n in &ns {
                assert_eq!(v.div_rem(n), (n / d, n % d), "{n} / {d}");
            }
        }
    }

    #[test]
    fn quotient_exceeds_at_the_edges() {
        // 10 / 5 = 2: exceeds 1, not 2; the last quotient of u64 exceeds nothing.
        let five = Divisor::new(5);
        assert!(five.quotient_exceeds(10, 1));
        assert!(!five.quotient_exceeds(10, 2));
        assert!(!five.quotient_exceeds(9, 1));
        assert!(!five.quotient_exceeds(u64::MAX, u64::MAX / 5));
        assert!(!five.quotient_exceeds(u64::MAX, u64::MAX));
        assert!(Divisor::new(1).quotient_exceeds(u64::MAX, u64::MAX - 1));
        // A zeroed divisor in a region: every quotient but the last is "past".
        assert!(Divisor { d: 0, m: 0 }.quotient_exceeds(0, 7));
        assert!(!Divisor { d: 0, m: 0 }.quotient_exceeds(u64::MAX, u64::MAX));
    }

    #[test]
    fn a_divisor_read_from_a_shared_region_never_overflows() {
        // `m` belongs to no `d`: `q · d` passes 2⁶⁴ (and `n − q · d` goes below 0),
        // which a debug build would trap on. The answer is wrong but defined:
        // with n = m = 2⁶⁴ − 1, q̂ = ⌊n·m / 2⁶⁴⌋ = 2⁶⁴ − 2, and modulo 2⁶⁴
        // d = 3: r̂ = n − 3q̂ = 5 ≥ 3, so (q̂ + 1, 2);
        // d = 2⁶⁴ − 1: q̂·d ≡ 2, r̂ = 2⁶⁴ − 3 < d, so (q̂, 2⁶⁴ − 3).
        let n = u64::MAX;
        assert_eq!(Divisor { d: 3, m: n }.div_rem(n), (u64::MAX, 2));
        assert_eq!(
            Divisor { d: n, m: n }.div_rem(n),
            (u64::MAX - 1, u64::MAX - 2)
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 20_000, ..ProptestConfig::default() })]
        #[test]
        fn any_quotient_is_exact(n in any::<u64>(), d in 1u64..) {
            prop_assert_eq!(Divisor::new(d).div_rem(n), (n / d, n % d));
        }

        #[test]
        fn small_divisors_are_exact(n in any::<u64>(), d in 1u64..70_000) {
            prop_assert_eq!(Divisor::new(d).div_rem(n), (n / d, n % d));
        }

        #[test]
        fn quotient_exceeds_matches_the_div_instruction_next_to_the_quotient(
            n in any::<u64>(),
            d in 1u64..,
            delta in -2i64..=2,
        ) {
            let q = (n / d).wrapping_add_signed(delta);
            prop_assert_eq!(Divisor::new(d).quotient_exceeds(n, q), n / d > q);
        }

        #[test]
        fn quotient_exceeds_matches_the_div_instruction(n in any::<u64>(), d in 1u64..1_000_000, q in any::<u64>()) {
            prop_assert_eq!(Divisor::new(d).quotient_exceeds(n, q), n / d > q);
        }
    }
}
