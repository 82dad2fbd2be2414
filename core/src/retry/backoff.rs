//! Exponential backoff with jitter (DESIGN §4; AWS "Exponential Backoff and
//! Jitter", 2015).
//!
//! `exp(n) = min(cap, base · multiplier^(n−1))` for attempt `n ≥ 1`, each
//! multiplication rounded down to whole nanoseconds (the rule the breaker's open
//! backoff uses too), saturating. The attempt at which the delay first reaches the
//! cap (or stops growing) is found once, at construction, so `exp(n)` costs O(1)
//! from there on and at most that many multiplications below it: for any attempt
//! up to `u32::MAX` the work is bounded by the config, never by the attempt.

use crate::error::{ConfigError, Field, Problem};
use crate::mix::pick;
use crate::ratio::{PPM, Ratio};
use crate::rng::SplitMix64;
use crate::time::{millis, secs};

/// Most multiplications allowed before the delay reaches the cap or stops growing;
/// a multiplier that grows slower than that is a configuration error. A multiplier
/// of 1.01 from 1 µs to a cap of 10 minutes takes 2 700 steps; 1.5 from 100 ms to
/// 10 s takes 12.
pub const MAX_BACKOFF_STEPS: u32 = 4096;

/// How the exponential delay is randomised (DESIGN §4).
#[repr(C, u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Jitter {
    /// `exp(n)` exactly.
    None,
    /// `U[0, exp(n)]` (AWS full jitter).
    Full,
    /// `U[⌊exp(n)/2⌋, exp(n)]` (AWS equal jitter).
    Equal,
    /// `d1 = min(cap, base)`, `dn = min(cap, U[base, 3·d(n−1)])` (AWS decorrelated
    /// jitter): depends on the previous delay, which the caller carries.
    Decorrelated,
    /// `min(cap, exp(n) · U[1 − f, 1 + f])`, `f` in `0 ..= 1.0` (default 0.2).
    Proportional {
        /// The factor `f`.
        factor: Ratio,
    },
}

impl Jitter {
    /// Proportional jitter with the default factor 0.2.
    pub const PROPORTIONAL: Self = Self::Proportional {
        factor: Ratio::from_ppm(200_000),
    };

    /// The scenario name: `none`, `full`, `equal`, `decorrelated`, `proportional`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Full => "full",
            Self::Equal => "equal",
            Self::Decorrelated => "decorrelated",
            Self::Proportional { .. } => "proportional",
        }
    }
}

/// Backoff configuration. Durations in nanoseconds.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BackoffConfig {
    /// Delay before the first retry (ns; 0 makes every delay 0: retry at once).
    /// Default 100 ms.
    pub base_ns: u64,
    /// Growth per attempt (`≥ 1.0`). Default 2.
    pub multiplier: Ratio,
    /// Cap of every delay, after jitter (ns, `≥ base_ns`). Default 10 s.
    pub max_ns: u64,
    /// Default: full jitter.
    pub jitter: Jitter,
}

impl BackoffConfig {
    /// DESIGN §4 defaults: base 100 ms, multiplier 2, cap 10 s, full jitter.
    pub const DEFAULT: Self = Self {
        base_ns: millis(100),
        multiplier: Ratio::from_int(2),
        max_ns: secs(10),
        jitter: Jitter::Full,
    };

    /// Check every field (the multiplier's growth is checked by [`Backoff::new`]).
    /// A zero base is valid (DESIGN §4: zero delays).
    pub const fn validate(&self) -> Result<(), ConfigError> {
        if self.multiplier.ppm() < PPM {
            return Err(ConfigError::range(Field::BackoffMultiplier, PPM, u64::MAX));
        }
        if self.max_ns < self.base_ns {
            return Err(ConfigError::new(
                Field::BackoffMax,
                Problem::BelowField(Field::BackoffBase),
            ));
        }
        if let Jitter::Proportional { factor } = self.jitter
            && factor.ppm() > PPM
        {
            return Err(ConfigError::range(Field::JitterFactor, 0, PPM));
        }
        Ok(())
    }
}

impl Default for BackoffConfig {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// A validated backoff: plain data (`Copy`), shared freely.
///
/// `size_of::<Backoff>()` is 48 bytes on 64-bit targets.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Backoff {
    config: BackoffConfig,
    /// First attempt whose `exp` is final (the cap, or a value the multiplier no
    /// longer changes); `exp(n) = exp(settled)` for every `n ≥ settled`.
    settled: u32,
}

impl Backoff {
    /// A backoff for `config`, or the first invalid field.
    pub const fn new(config: BackoffConfig) -> Result<Self, ConfigError> {
        if let Err(e) = config.validate() {
            return Err(e);
        }
        // Walk the sequence once: it must settle within MAX_BACKOFF_STEPS steps.
        let mut d = config.base_ns;
        let mut n = 1u32;
        loop {
            let next = step(d, config.multiplier, config.max_ns);
            if next == d {
                break;
            }
            d = next;
            n += 1;
            if n > MAX_BACKOFF_STEPS {
                return Err(ConfigError::new(
                    Field::BackoffMultiplier,
                    Problem::CapUnreachable {
                        max_steps: MAX_BACKOFF_STEPS as u64,
                    },
                ));
            }
        }
        Ok(Self { config, settled: n })
    }

    /// The configuration.
    #[must_use]
    pub const fn config(&self) -> &BackoffConfig {
        &self.config
    }

    /// `exp(n) = min(cap, base · multiplier^(n−1))` in ns, each step rounded down,
    /// saturating; attempt 0 counts as 1.
    #[must_use]
    pub const fn exponential(&self, attempt: u32) -> u64 {
        let n = if attempt < self.settled {
            attempt
        } else {
            self.settled
        };
        let mut d = self.config.base_ns;
        let mut i = 1;
        while i < n {
            d = step(d, self.config.multiplier, self.config.max_ns);
            i += 1;
        }
        d
    }

    /// The delay (ns) before retry `attempt` (≥ 1; 0 counts as 1), given 64 random
    /// bits and, for decorrelated jitter, the previous delay this function returned
    /// (`previous_ns`, ignored for attempt 1 and by the other jitters). Never above
    /// the cap.
    #[must_use]
    pub const fn delay(&self, attempt: u32, previous_ns: u64, random: u64) -> u64 {
        let c = &self.config;
        match c.jitter {
            Jitter::None => self.exponential(attempt),
            Jitter::Full => pick(random, 0, self.exponential(attempt)),
            Jitter::Equal => {
                let e = self.exponential(attempt);
                pick(random, e / 2, e)
            }
            Jitter::Decorrelated => {
                // A zero base is no wait at all (DESIGN §4), even when the caller
                // hands in a previous delay that did not come from this backoff:
                // U[0, 3·previous] would wait anyway.
                if attempt <= 1 || c.base_ns == 0 {
                    return c.base_ns;
                }
                let d = pick(random, c.base_ns, previous_ns.saturating_mul(3));
                if d < c.max_ns { d } else { c.max_ns }
            }
            Jitter::Proportional { factor } => {
                let e = self.exponential(attempt);
                let lo = Ratio::from_ppm(PPM - factor.ppm()).scale(e);
                let hi = Ratio::from_ppm(PPM + factor.ppm()).scale(e);
                let d = pick(random, lo, hi);
                if d < c.max_ns { d } else { c.max_ns }
            }
        }
    }

    /// [`delay`](Self::delay) raised to at least the server's Retry-After /
    /// pushback (`retry_after_ns`), which may exceed the cap: the server's word wins.
    #[must_use]
    pub const fn delay_with_retry_after(
        &self,
        attempt: u32,
        previous_ns: u64,
        random: u64,
        retry_after_ns: Option<u64>,
    ) -> u64 {
        let d = self.delay(attempt, previous_ns, random);
        match retry_after_ns {
            Some(r) if r > d => r,
            _ => d,
        }
    }
}

/// One growth step: `min(cap, ⌊d · m⌋)`, saturating.
const fn step(d: u64, m: Ratio, cap: u64) -> u64 {
    let next = m.scale(d);
    if next < cap { next } else { cap }
}

/// The state one retry loop carries between attempts: the attempt number, the
/// previous delay (decorrelated jitter needs it) and its random generator.
/// Plain data, 24 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BackoffState {
    attempt: u32,
    previous_ns: u64,
    rng: SplitMix64,
}

impl BackoffState {
    /// Before the first retry, with jitter drawn from `seed`.
    #[must_use]
    pub const fn new(seed: u64) -> Self {
        Self {
            attempt: 0,
            previous_ns: 0,
            rng: SplitMix64::new(seed),
        }
    }

    /// Retries delayed so far.
    #[must_use]
    pub const fn attempt(&self) -> u32 {
        self.attempt
    }

    /// The delay (ns) before the next retry, raised to `retry_after_ns` when the
    /// server sent one. Decorrelated jitter continues from the jittered delay, not
    /// from the server's value.
    pub const fn next_delay(&mut self, backoff: &Backoff, retry_after_ns: Option<u64>) -> u64 {
        self.attempt = self.attempt.saturating_add(1);
        let d = backoff.delay(self.attempt, self.previous_ns, self.rng.next_u64());
        self.previous_ns = d;
        match retry_after_ns {
            Some(r) if r > d => r,
            _ => d,
        }
    }
}
