//! Semaphore (bulkhead) configuration and priorities (DESIGN §5).

use crate::error::{ConfigError, Field, Problem};
use crate::ratio::{PPM, Ratio};

/// Priority of an acquire; load shedding gives each its own share of
/// `max_concurrent`. An acquire without a priority is [`Priority::Normal`].
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum Priority {
    /// Never shed before the others.
    Critical = 0,
    /// Shed after normal.
    High = 1,
    /// The default.
    #[default]
    Normal = 2,
    /// Shed first.
    Low = 3,
}

impl Priority {
    /// All four, most important first.
    pub const ALL: [Self; 4] = [Self::Critical, Self::High, Self::Normal, Self::Low];

    /// `critical`, `high`, `normal` or `low`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Critical => "critical",
            Self::High => "high",
            Self::Normal => "normal",
            Self::Low => "low",
        }
    }
}

/// Share of `max_concurrent` each priority may use (`0 ..= 100 %`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PriorityShares {
    /// Share of [`Priority::Critical`].
    pub critical: Ratio,
    /// Share of [`Priority::High`].
    pub high: Ratio,
    /// Share of [`Priority::Normal`].
    pub normal: Ratio,
    /// Share of [`Priority::Low`].
    pub low: Ratio,
}

impl PriorityShares {
    /// Every priority may use every permit: a plain bulkhead.
    pub const ALL_FULL: Self = Self {
        critical: Ratio::ONE,
        high: Ratio::ONE,
        normal: Ratio::ONE,
        low: Ratio::ONE,
    };

    /// The seed documents' load shedder: critical 100 %, high 80 %, normal 50 %,
    /// low 20 %.
    pub const SEED_LOAD_SHEDDING: Self = Self {
        critical: Ratio::ONE,
        high: Ratio::from_percent(80),
        normal: Ratio::from_percent(50),
        low: Ratio::from_percent(20),
    };

    /// The share of `p`.
    #[must_use]
    pub const fn of(&self, p: Priority) -> Ratio {
        match p {
            Priority::Critical => self.critical,
            Priority::High => self.high,
            Priority::Normal => self.normal,
            Priority::Low => self.low,
        }
    }
}

/// Semaphore configuration (DESIGN §5).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SemaphoreConfig {
    /// Permits in all (`1 ..=` [`MAX_CONCURRENT`](Self::MAX_CONCURRENT)).
    /// Default 10.
    pub max_concurrent: u32,
    /// Live waiters at most (`0 ..= Q` of the [`Semaphore<Q>`](super::Semaphore)
    /// type; a waiter that gives up leaves at once). Default 0 (reject at once
    /// when full).
    pub max_queue: u32,
    /// Shares per priority. Default: all 100 % (a plain bulkhead).
    pub shares: PriorityShares,
}

impl SemaphoreConfig {
    /// 10 permits, no queue, no load shedding.
    pub const DEFAULT: Self = Self {
        max_concurrent: 10,
        max_queue: 0,
        shares: PriorityShares::ALL_FULL,
    };

    /// The largest `max_concurrent`, 2²⁰ − 1 (1 048 575): what the 20 bits of
    /// the semaphore's 64-bit state word count.
    pub const MAX_CONCURRENT: u32 = super::word::MAX_CONCURRENT;

    /// Check every field but `max_queue`'s upper bound (the semaphore type's).
    pub const fn validate(&self) -> Result<(), ConfigError> {
        if self.max_concurrent == 0 {
            return Err(ConfigError::new(Field::MaxConcurrent, Problem::Zero));
        }
        if self.max_concurrent > Self::MAX_CONCURRENT {
            return Err(ConfigError::range(
                Field::MaxConcurrent,
                1,
                Self::MAX_CONCURRENT as u64,
            ));
        }
        let mut i = 0;
        while i < 4 {
            if self.shares.of(Priority::ALL[i]).ppm() > PPM {
                return Err(ConfigError::range(Field::PriorityShares, 0, PPM));
            }
            i += 1;
        }
        Ok(())
    }

    /// The limit of `p`: `max(1, ⌊max_concurrent · share⌋)`.
    #[must_use]
    pub const fn limit(&self, p: Priority) -> u32 {
        let l = self.shares.of(p).scale(self.max_concurrent as u64);
        if l == 0 {
            1
        } else if l > self.max_concurrent as u64 {
            self.max_concurrent
        } else {
            l as u32
        }
    }
}

impl Default for SemaphoreConfig {
    fn default() -> Self {
        Self::DEFAULT
    }
}
