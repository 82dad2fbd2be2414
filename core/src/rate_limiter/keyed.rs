//! A keyed rate limiter: one GCRA word per slot of a fixed table, chosen by a
//! hash of the key.

use crossbeam_utils::CachePadded;

use super::config::RateLimiterConfig;
use super::error::RateLimitError;
use super::gcra::Gcra;
use crate::error::{ConfigError, Field, Problem};
use crate::mix::{mix64, pick};
use crate::sync::{AtomicU64, Ordering};

/// The constants every call reads: the GCRA's and the key seed.
#[repr(C)]
struct Shape {
    gcra: Gcra,
    key_seed: u64,
}

/// A lock-free GCRA rate limiter per key (DESIGN §10, keyed use): every key
/// gets `rate` cells per `period_ns` and bursts of up to `burst`, in a fixed
/// table of `N` slots that never allocates.
///
/// A key `k` uses slot `⌊mix64(k ⊕ key_seed) · N / 2⁶⁴⌋` (the `SplitMix64`
/// finaliser, then Lemire's multiply-shift). Keys that land on one slot share
/// its theoretical arrival time, so each sees the other's cells: a collision
/// only ever makes the limiter stricter, never admits more than the GCRA would
/// for either key alone.
///
/// **Sizing `N`**: with `K` keys active at once, a given key shares its slot
/// with at least one other with probability `1 − (1 − 1/N)^(K−1) ≈ K/N`; `N =
/// 100·K` keeps that near 1 %. Memory is `8·N` bytes plus one line. Draw
/// `key_seed` at random (bindings use OS entropy) where keys come from
/// untrusted clients, so nobody can pick keys that collide with a victim's.
///
/// `#[repr(C)]`, fixed-size and pointer-free; the constants are written only by
/// [`new`](Self::new), each slot is one atomic word, 0 for a rested key.
/// `size_of::<KeyedRateLimiter<N>>()` is the constants' 128-byte line plus
/// `8·N` bytes, rounded to 128 (1 152 bytes for `N = 128` on x86-64).
#[repr(C)]
pub struct KeyedRateLimiter<const N: usize> {
    // Read by every call, written only by `new`: on a line of its own, so the
    // slots' writes never evict it.
    shape: CachePadded<Shape>,
    slots: [AtomicU64; N],
}

impl<const N: usize> KeyedRateLimiter<N> {
    /// Every key rested, or the first invalid field (`N = 0` is
    /// [`Field::RateLimiterSlots`]).
    pub fn new(config: RateLimiterConfig, key_seed: u64) -> Result<Self, ConfigError> {
        let gcra = Gcra::new(config)?;
        if N == 0 {
            return Err(ConfigError::new(Field::RateLimiterSlots, Problem::Zero));
        }
        Ok(Self {
            shape: CachePadded::new(Shape { gcra, key_seed }),
            slots: core::array::from_fn(|_| AtomicU64::new(0)),
        })
    }

    /// The configuration every key gets.
    #[must_use]
    pub fn config(&self) -> &RateLimiterConfig {
        self.shape.gcra.config()
    }

    /// The seed of the key hash.
    #[must_use]
    pub fn key_seed(&self) -> u64 {
        self.shape.key_seed
    }

    /// The slot `key` uses (`0 .. N`); keys with the same slot share its cells.
    #[must_use]
    pub fn slot_of(&self, key: u64) -> usize {
        pick(
            mix64(key ^ self.shape.key_seed),
            0,
            (N as u64).saturating_sub(1),
        ) as usize
    }

    /// Take `n` cells for `key` at `now` (ns), all or none, in one atomic step;
    /// as [`RateLimiter::try_acquire`](super::RateLimiter::try_acquire), on the
    /// key's slot.
    pub fn try_acquire(&self, key: u64, n: u32, now: u64) -> Result<(), RateLimitError> {
        self.shape
            .gcra
            .acquire(&self.slots[self.slot_of(key)], n, now)
    }

    /// The theoretical arrival time of `key`'s slot (ns); 0 before its first
    /// admission.
    #[must_use]
    pub fn theoretical_arrival_ns(&self, key: u64) -> u64 {
        self.slots[self.slot_of(key)].load(Ordering::Relaxed)
    }
}

impl<const N: usize> core::fmt::Debug for KeyedRateLimiter<N> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("KeyedRateLimiter")
            .field("slots", &N)
            .field("config", self.config())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::KeyedRateLimiter;
    use crate::error::{ConfigError, Field, Problem};
    use crate::mix::{mix64, pick};
    use crate::rate_limiter::{RateLimitError, RateLimiterConfig};
    use crate::time::millis;

    /// The oracle's quota: 10 per second, burst 3 (T = 100 ms, τ = 200 ms).
    const ORACLE: RateLimiterConfig = RateLimiterConfig {
        rate: 10,
        period_ns: 1_000_000_000,
        burst: 3,
    };

    fn two_keys_apart<const N: usize>(k: &KeyedRateLimiter<N>) -> (u64, u64) {
        let b = (1..=u64::MAX)
            .find(|&b| k.slot_of(b) != k.slot_of(0))
            .unwrap();
        (0, b)
    }

    #[test]
    fn keys_on_different_slots_are_independent() {
        let k: KeyedRateLimiter<64> = KeyedRateLimiter::new(ORACLE, 7).unwrap();
        let (a, b) = two_keys_apart(&k);
        for _ in 0..3 {
            assert_eq!(k.try_acquire(a, 1, 0), Ok(()));
        }
        let over = Err(RateLimitError::Rejected {
            retry_after_ns: millis(100),
        });
        assert_eq!(k.try_acquire(a, 1, 0), over);
        // b has its own full burst.
        for _ in 0..3 {
            assert_eq!(k.try_acquire(b, 1, 0), Ok(()));
        }
        assert_eq!(k.try_acquire(b, 1, 0), over);
        assert_eq!(k.theoretical_arrival_ns(a), millis(300));
        assert_eq!(k.theoretical_arrival_ns(b), millis(300));
    }

    #[test]
    fn keys_on_one_slot_share_it() {
        // One slot: every key is stricter, never looser, than alone.
        let k: KeyedRateLimiter<1> = KeyedRateLimiter::new(ORACLE, 0).unwrap();
        assert_eq!(k.try_acquire(1, 2, 0), Ok(()));
        assert_eq!(k.try_acquire(2, 1, 0), Ok(()));
        assert_eq!(
            k.try_acquire(3, 1, 0),
            Err(RateLimitError::Rejected {
                retry_after_ns: millis(100)
            })
        );
    }

    #[test]
    fn slot_is_the_documented_hash() {
        let k: KeyedRateLimiter<1000> = KeyedRateLimiter::new(ORACLE, 0xDEAD_BEEF).unwrap();
        let mut hits = [0u32; 1000];
        for key in 0..100_000u64 {
            let s = k.slot_of(key);
            assert_eq!(s as u64, pick(mix64(key ^ 0xDEAD_BEEF), 0, 999));
            hits[s] += 1;
        }
        // 100 keys per slot on average; a uniform hash stays far from 0 and 200.
        assert!(hits.iter().all(|&h| (50..150).contains(&h)), "{hits:?}");
    }

    #[test]
    fn zero_slots_and_bad_configs_are_refused() {
        assert_eq!(
            KeyedRateLimiter::<0>::new(ORACLE, 0).unwrap_err(),
            ConfigError {
                field: Field::RateLimiterSlots,
                problem: Problem::Zero
            }
        );
        let bad = RateLimiterConfig { burst: 0, ..ORACLE };
        assert_eq!(
            KeyedRateLimiter::<8>::new(bad, 0).unwrap_err().field,
            Field::Burst
        );
        let k: KeyedRateLimiter<8> = KeyedRateLimiter::new(ORACLE, 0).unwrap();
        assert!(matches!(
            k.try_acquire(5, 4, 0),
            Err(RateLimitError::InvalidCells(_))
        ));
    }
}
