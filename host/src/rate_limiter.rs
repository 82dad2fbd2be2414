//! The rate limiter (DESIGN §10, GCRA) as C and the bindings see it: a core
//! [`RateLimiter`](seawall_core::RateLimiter), or a keyed one of
//! [`KEYED_SLOTS`] slots, in this process or shared by every process of the
//! host (`/dev/shm/seawall-rate-limiter-<name>`,
//! `/dev/shm/seawall-keyed-rate-limiter-<name>`): one limit for all workers of
//! a service.
//!
//! ```no_run
//! use seawall_host::rate_limiter::RateLimiter;
//! use seawall_host::shared::OpenOptions;
//! use seawall_core::RateLimiterConfig;
//!
//! // An upstream's quota of 100 requests per second, bursts of 10.
//! let limiter = RateLimiter::open_shared("upstream", &RateLimiterConfig::DEFAULT, &OpenOptions::default())?;
//! match limiter.try_acquire(1, seawall_host::clock::monotonic_ns()) {
//!     Ok(()) => { /* call the upstream */ }
//!     Err(e) => { /* wait e.retry_after_ns() or answer 429 */ }
//! }
//! # Ok::<(), seawall_host::shared::RegionError>(())
//! ```

use core::mem::MaybeUninit;

use seawall_core::{ConfigError, Corrupt, Field, RateLimitError, RateLimiterConfig};

use crate::counted::Counted;
use crate::handle::Handle;
use crate::shared::{Agreement, Shareable, sanity};

/// A core rate limiter with its lifetime totals beside it ([`LimiterTotals`]).
pub type LimiterCell = Counted<seawall_core::RateLimiter, 3>;

/// A rate limiter in this process or shared.
pub type RateLimiter = Handle<LimiterCell>;

/// Slots of every keyed limiter of the host layer: one size, so that C, Python
/// and Node processes sharing a keyed limiter always agree on its layout.
///
/// With `K` keys active at once a key shares its slot (and so its cells) with
/// another with probability about `K / 4096`: under 1 % up to 40 active keys,
/// about 12 % at 500. A collision only makes the limit stricter. 4096 slots
/// are 32 KiB, small enough to build on any thread's stack; a service with
/// thousands of concurrent clients should use the core's
/// [`KeyedRateLimiter<N>`](seawall_core::KeyedRateLimiter) with `N = 100·K`.
pub const KEYED_SLOTS: usize = 4096;

/// The core table behind a [`KeyedRateLimiter`].
pub type KeyedTable = seawall_core::KeyedRateLimiter<KEYED_SLOTS>;

/// The core table with its lifetime totals beside it (over every key).
pub type KeyedCell = Counted<KeyedTable, 3>;

/// A keyed rate limiter (each key its own limit) in this process or shared.
pub type KeyedRateLimiter = Handle<KeyedCell>;

/// A rate limiter's lifetime figures (DESIGN §8, "One set of totals"): of
/// every process for a shared one, whose region holds them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LimiterTotals {
    /// Takes admitted.
    pub admitted: u64,
    /// Cells those takes spent.
    pub cells: u64,
    /// Takes refused.
    pub rejected: u64,
}

const ADMITTED: usize = 0;
/// Cells beyond the first of each admitted take: a take of one cell (the
/// usual) is one atomic add, to `ADMITTED`; cells = admitted + these.
const EXTRA_CELLS: usize = 1;
const REJECTED: usize = 2;

/// Count take `taken` of `n` cells, and return it.
fn count<T>(
    c: &Counted<T, 3>,
    n: u32,
    taken: Result<(), RateLimitError>,
) -> Result<(), RateLimitError> {
    match taken {
        Ok(()) => {
            c.bump(ADMITTED);
            if n > 1 {
                c.add(EXTRA_CELLS, u64::from(n - 1));
            }
        }
        Err(RateLimitError::Rejected { .. }) => c.bump(REJECTED),
        // A count of cells the limiter can never grant is the caller's error,
        // not a take.
        Err(RateLimitError::InvalidCells(_)) => {}
    }
    taken
}

fn totals<T>(c: &Counted<T, 3>) -> LimiterTotals {
    let admitted = c.total(ADMITTED);
    LimiterTotals {
        admitted,
        cells: admitted.wrapping_add(c.total(EXTRA_CELLS)),
        rejected: c.total(REJECTED),
    }
}

impl LimiterCell {
    /// [`try_acquire`](seawall_core::RateLimiter::try_acquire), counted.
    #[inline]
    pub fn try_acquire(&self, n: u32, now: u64) -> Result<(), RateLimitError> {
        count(self, n, self.inner().try_acquire(n, now))
    }

    /// Takes admitted and refused, and cells spent, since the limiter was made.
    #[must_use]
    pub fn totals(&self) -> LimiterTotals {
        totals(self)
    }
}

impl KeyedCell {
    /// [`try_acquire`](seawall_core::KeyedRateLimiter::try_acquire) for `key`,
    /// counted.
    pub fn try_acquire(&self, key: u64, n: u32, now: u64) -> Result<(), RateLimitError> {
        count(self, n, self.inner().try_acquire(key, n, now))
    }

    /// Takes admitted and refused, and cells spent, over every key, since the
    /// limiter was made.
    #[must_use]
    pub fn totals(&self) -> LimiterTotals {
        totals(self)
    }
}

/// What a keyed limiter is built from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyedConfig {
    /// The limit every key gets.
    pub limiter: RateLimiterConfig,
    /// Seed of the key hash. Draw it at random ([`crate::entropy::entropy`])
    /// where clients choose their keys, so nobody can aim at a victim's slot.
    /// Not part of the shared fingerprint: processes attaching to a shared
    /// limiter use its creator's seed, whatever they pass.
    pub key_seed: u64,
}

/// The key of a keyed limiter for a byte-string key (a client id, an API
/// token, an address): the bytes, 8 at a time (little-endian, the last word
/// zero-padded), folded through the `SplitMix64` finaliser from
/// `mix64(seed ⊕ len)`. Every binding maps strings this way with the limiter's
/// own [`key_seed`](seawall_core::KeyedRateLimiter::key_seed), so processes
/// sharing a limiter agree on every key, and a client who does not know the
/// seed cannot choose strings that land on another's slot.
#[must_use]
pub fn key_of_bytes(seed: u64, bytes: &[u8]) -> u64 {
    bytes.chunks(8).fold(
        seawall_core::mix64(seed ^ bytes.len() as u64),
        |h, chunk| {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            seawall_core::mix64(h ^ u64::from_le_bytes(word))
        },
    )
}

impl RateLimiter {
    /// [`try_acquire`](seawall_core::RateLimiter::try_acquire), telling a
    /// corrupted shared region apart: [`Corrupt`] when the limiter's
    /// configuration is no longer the one this process opened it with, or its
    /// answer is one that configuration never gives (a zeroed limiter refuses
    /// every `n` as "between 1 and 0"). An admission is returned as it is, so
    /// the admit path costs nothing more; a refusal fingerprints the
    /// configuration.
    pub fn try_acquire_checked(
        &self,
        n: u32,
        now: u64,
    ) -> Result<Result<(), RateLimitError>, Corrupt> {
        let taken = (**self).try_acquire(n, now);
        if taken.is_ok() {
            return Ok(taken);
        }
        sanity::check_rate_limit(&self.config_checked()?, n, taken)
    }
}

impl KeyedRateLimiter {
    /// [`try_acquire`](seawall_core::KeyedRateLimiter::try_acquire) for `key`,
    /// telling a corrupted shared region apart as
    /// [`RateLimiter::try_acquire_checked`] does.
    pub fn try_acquire_checked(
        &self,
        key: u64,
        n: u32,
        now: u64,
    ) -> Result<Result<(), RateLimitError>, Corrupt> {
        let taken = (**self).try_acquire(key, n, now);
        if taken.is_ok() {
            return Ok(taken);
        }
        sanity::check_rate_limit(&self.config_checked()?.limiter, n, taken)
    }
}

/// What every process sharing a rate limiter must agree on: every field.
#[must_use]
pub fn limiter_agreement(c: &RateLimiterConfig) -> Agreement {
    let RateLimiterConfig {
        rate,
        period_ns,
        burst,
    } = *c;
    Agreement::new(b"ratelim\0")
        .value(Field::Rate, rate)
        .value(Field::RatePeriod, period_ns)
        .value(Field::Burst, u64::from(burst))
}

/// What every process sharing a keyed rate limiter must agree on: the limit and
/// the slot count; not the seed, which is the creator's.
#[must_use]
pub fn keyed_agreement(c: &KeyedConfig) -> Agreement {
    let KeyedConfig {
        limiter:
            RateLimiterConfig {
                rate,
                period_ns,
                burst,
            },
        key_seed: _,
    } = *c;
    Agreement::new(b"kratelim")
        .value(Field::RateLimiterSlots, KEYED_SLOTS as u64)
        .value(Field::Rate, rate)
        .value(Field::RatePeriod, period_ns)
        .value(Field::Burst, u64::from(burst))
}

// SAFETY: `RateLimiter` is repr(C), pointer-free, needs no Drop; its
// configuration (with the emission interval and tolerance) is written only by
// `new`, the theoretical arrival time is an atomic.
unsafe impl Shareable for LimiterCell {
    const FAMILY: &'static str = "rate-limiter";
    // 0x0503: the lifetime totals after the limiter.
    const LAYOUT_ID: u32 = 0x0503;
    const DESCRIPTION: &'static str = "rate limiter";
    type Config = RateLimiterConfig;
    fn agreement(config: &RateLimiterConfig) -> Agreement {
        limiter_agreement(config)
    }
    fn config(&self) -> RateLimiterConfig {
        *self.inner().config()
    }
    fn init(slot: &mut MaybeUninit<Self>, config: &RateLimiterConfig) -> Result<(), ConfigError> {
        slot.write(Self::new(seawall_core::RateLimiter::new(*config)?));
        Ok(())
    }
}

// SAFETY: `KeyedRateLimiter` is repr(C), pointer-free, needs no Drop; its
// constants (configuration, key seed) are written only by `new`, every slot is
// an atomic.
unsafe impl Shareable for KeyedCell {
    const FAMILY: &'static str = "keyed-rate-limiter";
    // 0x0504: the lifetime totals after the table.
    const LAYOUT_ID: u32 = 0x0504;
    const DESCRIPTION: &'static str = "keyed rate limiter (4096 slots)";
    type Config = KeyedConfig;
    fn agreement(config: &KeyedConfig) -> Agreement {
        keyed_agreement(config)
    }
    fn config(&self) -> KeyedConfig {
        KeyedConfig {
            limiter: *self.inner().config(),
            key_seed: self.key_seed(),
        }
    }
    fn init(slot: &mut MaybeUninit<Self>, config: &KeyedConfig) -> Result<(), ConfigError> {
        // The table is 32 KiB: built on the stack, then moved into place once.
        slot.write(Self::new(KeyedTable::new(config.limiter, config.key_seed)?));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::key_of_bytes;
    use seawall_core::mix64;

    #[test]
    fn byte_keys_fold_words_through_mix64() {
        // Worked by hand: "" is mix64(seed ^ 0); "abc" is one zero-padded word.
        assert_eq!(key_of_bytes(7, b""), mix64(7));
        let abc = u64::from_le_bytes(*b"abc\0\0\0\0\0");
        assert_eq!(key_of_bytes(7, b"abc"), mix64(mix64(7 ^ 3) ^ abc));
        let nine = [b'x'; 9];
        let first = u64::from_le_bytes([b'x'; 8]);
        assert_eq!(
            key_of_bytes(0, &nine),
            mix64(mix64(mix64(9) ^ first) ^ u64::from(b'x'))
        );
        // The length tells a key from its zero-padded twin; the seed changes all.
        assert_ne!(key_of_bytes(7, b"a"), key_of_bytes(7, b"a\0"));
        assert_ne!(key_of_bytes(7, b"a"), key_of_bytes(8, b"a"));
    }
}
