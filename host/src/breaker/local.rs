//! Breakers in this process without a permit table, for host runtimes whose
//! permit objects are single-use by themselves (a Python permit object, the
//! JavaScript call that holds its permit number): admitting and recording are
//! the core's, nothing more.
//!
//! Each is the core breaker over the smallest window type that holds the
//! configured window, so that the default breaker (10 time buckets) takes about
//! 1 KiB, not the 20 KiB of the largest window; every window size up to
//! [`COUNT_WINDOW_CAPACITY`] calls or [`TIME_WINDOW_CAPACITY`] buckets is
//! accepted, as for every other breaker.

use seawall_core::{
    BreakerConfig, CircuitBreaker, ConfigError, CountWindow, SlidingWindow, TimeWindow,
    WindowConfig,
};

use super::cell::{COUNT_WINDOW_CAPACITY, TIME_WINDOW_CAPACITY};

/// A core breaker over the smallest window type that fits its configuration.
pub(super) enum Untracked {
    Count32(Box<CircuitBreaker<CountWindow<32>>>),
    Count128(Box<CircuitBreaker<CountWindow<128>>>),
    Count(Box<CircuitBreaker<CountWindow<COUNT_WINDOW_CAPACITY>>>),
    Time10(Box<CircuitBreaker<TimeWindow<10>>>),
    Time32(Box<CircuitBreaker<TimeWindow<32>>>),
    Time(Box<CircuitBreaker<TimeWindow<TIME_WINDOW_CAPACITY>>>),
}

/// Run `$e` with `$b` bound to the core breaker, whichever its window type.
macro_rules! each_untracked {
    ($u:expr, $b:ident => $e:expr) => {
        match $u {
            Untracked::Count32($b) => $e,
            Untracked::Count128($b) => $e,
            Untracked::Count($b) => $e,
            Untracked::Time10($b) => $e,
            Untracked::Time32($b) => $e,
            Untracked::Time($b) => $e,
        }
    };
}
pub(super) use each_untracked;

fn boxed<W: SlidingWindow>(config: BreakerConfig) -> Result<Box<CircuitBreaker<W>>, ConfigError> {
    CircuitBreaker::new(config).map(Box::new)
}

impl Untracked {
    pub(super) fn new(config: BreakerConfig) -> Result<Self, ConfigError> {
        Ok(match config.window {
            WindowConfig::Count { size } if size <= 32 => Self::Count32(boxed(config)?),
            WindowConfig::Count { size } if size <= 128 => Self::Count128(boxed(config)?),
            WindowConfig::Count { .. } => Self::Count(boxed(config)?),
            WindowConfig::Time { buckets, .. } if buckets <= 10 => Self::Time10(boxed(config)?),
            WindowConfig::Time { buckets, .. } if buckets <= 32 => Self::Time32(boxed(config)?),
            WindowConfig::Time { .. } => Self::Time(boxed(config)?),
        })
    }

    /// Bytes of this process's memory the core breaker takes.
    pub(super) fn size(&self) -> usize {
        each_untracked!(self, b => size_of_val(&**b))
    }
}
