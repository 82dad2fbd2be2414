//! The rate limiter (DESIGN §10, GCRA) as JavaScript sees it: one take is one
//! lock-free step of the core, answered as one number — `0` when admitted,
//! else the retry-after in ms (`> 0`; `Infinity` when it could never conform).
//! The JS layer (`lib/rate_limiter.js`) waits between takes with a timer, so a
//! pending `acquire` holds nothing and aborting it leaves nothing behind.

use napi::bindgen_prelude::{Either, Env, External};
use napi_derive::napi;
use seawall_core::{Corrupt, RateLimitError, RateLimiterConfig};
use seawall_host::clock::monotonic_ns;
use seawall_host::rate_limiter::{KeyedConfig, KeyedRateLimiter, RateLimiter, key_of_bytes};
use seawall_host::shared::OpenOptions;

use seawall_host::units::round_to_u64;

use crate::boundary::{Code, Result, config_error, error, invalid, throwing};
use crate::convert::{ms_to_ns, ns_to_ms, region_error};
use crate::handles::{Token, registry};

/// A rate limiter configuration: `rate` cells per `perMs`, bursts of `burst`.
#[napi(object)]
pub struct NativeRateLimiterConfig {
    /// Cells per period (whole, ≥ 1).
    pub rate: f64,
    /// The period (ms, > 0).
    pub per_ms: f64,
    /// Cells a rested limiter gives at once (whole, ≥ 1).
    pub burst: f64,
}

/// What a limiter is.
#[napi(object)]
pub struct NativeRateLimiterInfo {
    /// Cells per period.
    pub rate: f64,
    /// The period (ms).
    pub per_ms: f64,
    /// Cells a rested limiter gives at once.
    pub burst: f64,
    /// One limit per key.
    pub keyed: bool,
    /// In a region shared by the processes of the host.
    pub shared: bool,
    /// This handle created (initialised) it.
    pub created: bool,
}

enum Limiter {
    Single(RateLimiter),
    Keyed(KeyedRateLimiter),
}

registry!(LIMITERS, Limiter, "rate limiter");

fn free_limiter(handle: f64) {
    let _ = LIMITERS.try_with(|r| r.free(handle));
}

fn with_limiter<R>(h: f64, f: impl FnOnce(&Limiter) -> Result<R>) -> Result<R> {
    LIMITERS.with(|r| r.with(h, f))?
}

/// A whole, non-negative number of the configuration (garbage saturates or
/// becomes 0, which the core's validation names).
fn whole(x: f64) -> u64 {
    if x.is_finite() && x >= 0.0 && x.fract() == 0.0 {
        round_to_u64(x)
    } else {
        0
    }
}

/// A rate limiter in this process, or (with `shared`) the one named `shared`
/// in `/dev/shm`, created or attached; keyed, every key gets the limit in one
/// of 4096 slots. Returns the token that owns it. Throws on an invalid
/// configuration (naming `rate`, `perMs` or `burst`) or a region that cannot
/// be opened.
#[napi]
pub fn rate_limiter_new(
    env: Env,
    config: NativeRateLimiterConfig,
    keyed: bool,
    shared: Option<String>,
) -> napi::Result<External<Token>> {
    throwing(env, new_limiter(&config, keyed, shared))
}

fn new_limiter(
    config: &NativeRateLimiterConfig,
    keyed: bool,
    shared: Option<String>,
) -> Result<External<Token>> {
    let cfg = RateLimiterConfig {
        rate: whole(config.rate),
        period_ns: if config.per_ms > 0.0 {
            ms_to_ns(config.per_ms)
        } else {
            0
        },
        burst: u32::try_from(whole(config.burst))
            .map_err(|_| invalid("burst", &format!("must be at most {}", u32::MAX)))?,
    };
    let open = OpenOptions::default();
    let limiter = if keyed {
        let kc = KeyedConfig {
            limiter: cfg,
            key_seed: seawall_host::entropy::entropy(),
        };
        Limiter::Keyed(match &shared {
            None => KeyedRateLimiter::new(&kc).map_err(config_error)?,
            Some(name) => KeyedRateLimiter::open_shared(name, &kc, &open).map_err(region_error)?,
        })
    } else {
        Limiter::Single(match &shared {
            None => RateLimiter::new(&cfg).map_err(config_error)?,
            Some(name) => RateLimiter::open_shared(name, &cfg, &open).map_err(region_error)?,
        })
    };
    let handle = LIMITERS.with(|r| r.insert(limiter))?;
    Ok(External::new(Token::new(handle, free_limiter)))
}

/// Remove the shared rate limiter `name` (`keyed`: the keyed one); a missing
/// one is fine. Processes attached to it keep theirs.
#[napi]
pub fn rate_limiter_unlink_shared(env: Env, name: String, keyed: Option<bool>) -> napi::Result<()> {
    let unlinked = if keyed == Some(true) {
        KeyedRateLimiter::unlink_shared(&name).map_err(region_error)
    } else {
        RateLimiter::unlink_shared(&name).map_err(region_error)
    };
    throwing(env, unlinked)
}

/// A rate limiter's lifetime figures (DESIGN §8, "One set of totals"): of
/// every process for a shared limiter, whose region holds them.
#[napi(object)]
pub struct NativeRateLimiterTotals {
    /// Takes admitted.
    pub admitted: f64,
    /// Takes refused.
    pub rejected: f64,
    /// Cells the admitted takes spent.
    pub cells: f64,
}

/// The limiter's lifetime figures (over every key of a keyed one).
#[napi]
pub fn rate_limiter_totals(h: f64) -> Result<NativeRateLimiterTotals> {
    with_limiter(h, |l| {
        let t = match l {
            Limiter::Single(s) => s.totals(),
            Limiter::Keyed(k) => k.totals(),
        };
        Ok(NativeRateLimiterTotals {
            admitted: t.admitted as f64,
            rejected: t.rejected as f64,
            cells: t.cells as f64,
        })
    })
}

/// What the limiter is.
#[napi]
pub fn rate_limiter_info(h: f64) -> Result<NativeRateLimiterInfo> {
    with_limiter(h, |l| {
        let (c, keyed, shared, created) = match l {
            Limiter::Single(s) => (*s.config(), false, s.is_shared(), s.created()),
            Limiter::Keyed(k) => (*k.config(), true, k.is_shared(), k.created()),
        };
        Ok(NativeRateLimiterInfo {
            rate: c.rate as f64,
            per_ms: ns_to_ms(c.period_ns),
            burst: f64::from(c.burst),
            keyed,
            shared,
            created,
        })
    })
}

#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "a count of cells from JavaScript: garbage becomes 0 or saturates, and the core refuses it"
)]
fn cells(n: f64) -> u32 {
    if n.is_finite() && n.fract() == 0.0 {
        n.clamp(0.0, f64::from(u32::MAX)) as u32
    } else {
        0
    }
}

/// A take's answer: 0 admitted, else the retry-after (ms, `Infinity` never).
/// A region whose values its configuration never gives is `ESHARED`.
fn answer(
    taken: core::result::Result<core::result::Result<(), RateLimitError>, Corrupt>,
) -> Result<f64> {
    let Ok(taken) = taken else {
        return Err(error(
            Code::Shared("untrusted"),
            "the shared rate limiter's region holds values its configuration never gives: it was overwritten",
        ));
    };
    match taken {
        Ok(()) => Ok(0.0),
        Err(RateLimitError::Rejected { retry_after_ns }) if retry_after_ns == u64::MAX => {
            Ok(f64::INFINITY)
        }
        Err(RateLimitError::Rejected { retry_after_ns }) => Ok(ns_to_ms(retry_after_ns)),
        Err(RateLimitError::InvalidCells(e)) => Err(config_error(e)),
    }
}

/// Take `n` cells of an unkeyed limiter now (or at `now_ms` of the caller's
/// clock): 0 when admitted, else the retry-after in ms.
pub fn rate_limiter_take(h: f64, n: f64, now_ms: Option<f64>) -> Result<f64> {
    with_limiter(h, |l| match l {
        Limiter::Single(s) => {
            answer(s.try_acquire_checked(cells(n), now_ms.map_or_else(monotonic_ns, ms_to_ns)))
        }
        Limiter::Keyed(_) => Err(invalid("key", "a keyed rate limiter needs a key")),
    })
}

/// [`rate_limiter_take`] at `now_ms` of the caller's clock.
#[napi]
pub fn rate_limiter_take_at(env: Env, h: f64, n: f64, now_ms: f64) -> napi::Result<f64> {
    throwing(env, rate_limiter_take(h, n, Some(now_ms)))
}

/// Take `n` cells for `key` of a keyed limiter now (or at `now_ms`): a string
/// (its UTF-8 bytes through `key_of_bytes` with the limiter's seed, the same in
/// every process and binding) or an integer number (as a 64-bit two's
/// complement word). 0 when admitted, else the retry-after in ms.
#[napi]
pub fn rate_limiter_take_key(
    env: Env,
    h: f64,
    key: Either<String, f64>,
    n: f64,
    now_ms: Option<f64>,
) -> napi::Result<f64> {
    throwing(env, take_key(h, &key, n, now_ms))
}

fn take_key(h: f64, key: &Either<String, f64>, n: f64, now_ms: Option<f64>) -> Result<f64> {
    with_limiter(h, |l| match l {
        Limiter::Keyed(k) => {
            let word = match key {
                Either::A(s) => key_of_bytes(k.key_seed(), s.as_bytes()),
                Either::B(x) => integer_key(*x)?,
            };
            answer(k.try_acquire_checked(
                word,
                cells(n),
                now_ms.map_or_else(monotonic_ns, ms_to_ns),
            ))
        }
        Limiter::Single(_) => Err(invalid(
            "key",
            "this rate limiter is not keyed (keyed: true limits each key)",
        )),
    })
}

#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "a safe integer, checked first; negatives wrap as Python's key & (2^64 - 1) does"
)]
fn integer_key(x: f64) -> Result<u64> {
    if x.is_finite() && x.fract() == 0.0 && x.abs() <= 9_007_199_254_740_991.0 {
        Ok((x as i64) as u64)
    } else {
        Err(invalid(
            "key",
            &format!("a number key must be a safe integer, got {x}"),
        ))
    }
}
