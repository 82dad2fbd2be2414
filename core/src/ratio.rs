//! Integer fixed-point ratios, so that 60 % is exactly 60 % and rate comparisons
//! never truncate (DESIGN §0).

/// Parts per million in one whole: `Ratio::ONE`.
pub const PPM: u64 = 1_000_000;

/// A non-negative ratio in parts per million (`1_000_000` = 1.0 = 100 %).
///
/// Used for percentages (thresholds, shares: 0 ..= 1.0), multipliers (≥ 1.0) and
/// jitter factors (0 ..= 1.0); each config field documents its own range, which
/// validation enforces. Conversions from floats are the bindings' job and round to
/// the nearest part per million.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Ratio(u64);

impl Ratio {
    /// 0 %.
    pub const ZERO: Self = Self(0);
    /// 100 %, or a multiplier of 1.
    pub const ONE: Self = Self(PPM);

    /// A ratio of `ppm` parts per million.
    #[must_use]
    pub const fn from_ppm(ppm: u64) -> Self {
        Self(ppm)
    }

    /// A whole percentage: `from_percent(50)` is one half. Saturates.
    #[must_use]
    pub const fn from_percent(percent: u64) -> Self {
        Self(percent.saturating_mul(PPM / 100))
    }

    /// A whole multiplier: `from_int(2)` doubles. Saturates.
    #[must_use]
    pub const fn from_int(n: u64) -> Self {
        Self(n.saturating_mul(PPM))
    }

    /// Parts per million.
    #[must_use]
    pub const fn ppm(self) -> u64 {
        self.0
    }

    /// `part / whole ≥ self`, compared exactly: `part · 10⁶ ≥ ppm · whole`.
    #[must_use]
    pub const fn is_reached_by(self, part: u64, whole: u64) -> bool {
        (part as u128) * (PPM as u128) >= (self.0 as u128) * (whole as u128)
    }

    /// `⌊value · self⌋`, saturating at `u64::MAX`.
    #[must_use]
    pub const fn scale(self, value: u64) -> u64 {
        let v = (value as u128) * (self.0 as u128) / (PPM as u128);
        if v > u64::MAX as u128 {
            u64::MAX
        } else {
            v as u64
        }
    }

    /// `part / whole` as a ratio, rounded down; `None` when `whole` is 0.
    #[must_use]
    pub const fn of(part: u64, whole: u64) -> Option<Self> {
        if whole == 0 {
            return None;
        }
        Some(Self(
            ((part as u128) * (PPM as u128) / (whole as u128)) as u64,
        ))
    }
}
