//! Why a rate limiter did not admit a request.

use core::fmt;

use crate::error::ConfigError;

/// Why `try_acquire` took nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RateLimitError {
    /// Over the rate: nothing was taken. The same request conforms
    /// `retry_after_ns` nanoseconds after the caller's `now` (exact, DESIGN §10),
    /// unless others take cells first; `u64::MAX` when it could conform only past
    /// the end of the `u64` clock (never).
    Rejected {
        /// Nanoseconds from the caller's `now` until the request conforms.
        retry_after_ns: u64,
    },
    /// `n` is 0 or above `burst` ([`Field::CellsPerAcquire`](crate::Field)): no
    /// time would ever admit it, so DESIGN §10 counts it a configuration error.
    InvalidCells(ConfigError),
}

impl RateLimitError {
    /// The retry-after of a [`Rejected`](Self::Rejected) request (ns); `None`
    /// for [`InvalidCells`](Self::InvalidCells).
    #[must_use]
    pub const fn retry_after_ns(&self) -> Option<u64> {
        match self {
            Self::Rejected { retry_after_ns } => Some(*retry_after_ns),
            Self::InvalidCells(_) => None,
        }
    }
}

impl fmt::Display for RateLimitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Rejected { retry_after_ns } => {
                write!(f, "rate limited: retry after {retry_after_ns} ns")
            }
            Self::InvalidCells(e) => e.fmt(f),
        }
    }
}

impl core::error::Error for RateLimitError {}
