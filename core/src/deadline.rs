//! Deadline budget (DESIGN §6; the seed documents' `TimeoutBudget`).

use crate::error::{ConfigError, Field, Problem};

/// A time budget started at a caller-supplied `now`. Plain data (`Copy`), so it
/// travels with a request; every method takes `now` in nanoseconds.
///
/// `size_of::<Deadline>()` is 16 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Deadline {
    start_ns: u64,
    end_ns: u64,
}

impl Deadline {
    /// A budget of `total_ns` starting at `now` (ns). The end saturates at
    /// `u64::MAX` (a deadline that never expires in practice).
    #[must_use]
    pub const fn new(total_ns: u64, now: u64) -> Self {
        Self {
            start_ns: now,
            end_ns: now.saturating_add(total_ns),
        }
    }

    /// Like [`new`](Self::new) but refusing a zero budget, for configs read from users.
    pub const fn try_new(total_ns: u64, now: u64) -> Result<Self, ConfigError> {
        if total_ns == 0 {
            return Err(ConfigError::new(Field::DeadlineTotal, Problem::Zero));
        }
        Ok(Self::new(total_ns, now))
    }

    /// When the budget started (ns).
    #[must_use]
    pub const fn start(&self) -> u64 {
        self.start_ns
    }

    /// When the budget runs out (ns).
    #[must_use]
    pub const fn end(&self) -> u64 {
        self.end_ns
    }

    /// Nanoseconds left at `now`, saturating at 0. A `now` before the start counts
    /// as the start (a clock that steps back is no time passed).
    #[must_use]
    pub const fn remaining(&self, now: u64) -> u64 {
        let now = if now < self.start_ns {
            self.start_ns
        } else {
            now
        };
        self.end_ns.saturating_sub(now)
    }

    /// Expired ⇔ nothing remains: exactly at `start + total` and after.
    #[must_use]
    pub const fn expired(&self, now: u64) -> bool {
        self.remaining(now) == 0
    }

    /// How much of the budget a step may use: `min(max_ns, remaining(now))`.
    #[must_use]
    pub const fn allocate(&self, max_ns: u64, now: u64) -> u64 {
        let r = self.remaining(now);
        if max_ns < r { max_ns } else { r }
    }

    /// A child budget of at most `total_ns` starting at `now`, never outliving this one.
    #[must_use]
    pub const fn child(&self, total_ns: u64, now: u64) -> Self {
        let own = Self::new(total_ns, now);
        let end = if own.end_ns < self.end_ns {
            own.end_ns
        } else {
            self.end_ns
        };
        let start = if now > end { end } else { now };
        Self {
            start_ns: start,
            end_ns: end,
        }
    }
}
