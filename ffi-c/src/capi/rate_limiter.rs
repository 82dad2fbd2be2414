//! `seawall_rate_limiter` and `seawall_keyed_rate_limiter`: the GCRA rate
//! limiter (DESIGN §10) through the C ABI, single or one limit per key.

use core::ffi::c_void;
use std::ffi::c_char;

use seawall_core::{RateLimitError, RateLimiterConfig};

use super::{
    Failure, Outcome, arg, construct, destroy, guard, mem_arg, name_arg, out, put, put_opt,
    seawall_status, shared_options,
};
use seawall_host::rate_limiter::{
    KEYED_SLOTS, KeyedConfig, KeyedRateLimiter, RateLimiter, key_of_bytes,
};

/// Slots of a keyed rate limiter: a key shares its slot (and so its cells)
/// with another of `K` active keys with probability about `K / 4096`; a
/// collision only makes the limit stricter.
pub const SEAWALL_KEYED_RATE_LIMITER_SLOTS: u32 = 4096;

const _: () = assert!(SEAWALL_KEYED_RATE_LIMITER_SLOTS as usize == KEYED_SLOTS);

/// Rate limiter configuration (DESIGN §10, the GCRA of the ATM Forum, as in
/// Rust's `governor`): `rate` cells per `period_ns`, bursts of up to `burst`.
/// Start from `seawall_rate_limiter_config_default()`.
#[allow(non_camel_case_types, reason = "C type name")]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct seawall_rate_limiter_config {
    /// Cells per period (1 ..= `period_ns`: one cell comes back every
    /// `period_ns / rate` ns, rounded down, at least 1 ns). Default 100.
    pub rate: u64,
    /// The period `rate` counts over (ns, ≥ 1). Default 1 000 000 000 (1 s).
    pub period_ns: u64,
    /// Cells a rested limiter gives at once (≥ 1). Default 10.
    pub burst: u32,
    /// Must be 0: anything else is `SEAWALL_STATUS_INVALID_ARGUMENT`.
    pub reserved: u32,
}

/// A rate limiter (opaque), shared by every caller of one dependency. Every
/// function taking a `const seawall_rate_limiter *` may be called from any
/// number of threads at once.
#[allow(non_camel_case_types, reason = "C type name")]
pub struct seawall_rate_limiter {
    pub(crate) inner: RateLimiter,
}

/// A keyed rate limiter (opaque): every key (a `uint64_t`, e.g. a hash of a
/// client id) gets its own limit, in `SEAWALL_KEYED_RATE_LIMITER_SLOTS` slots.
/// Thread-safe as `seawall_rate_limiter`.
#[allow(non_camel_case_types, reason = "C type name")]
pub struct seawall_keyed_rate_limiter {
    pub(crate) inner: KeyedRateLimiter,
}

/// The C view of a core configuration.
pub(crate) fn c_config(c: &RateLimiterConfig) -> seawall_rate_limiter_config {
    seawall_rate_limiter_config {
        rate: c.rate,
        period_ns: c.period_ns,
        burst: c.burst,
        reserved: 0,
    }
}

/// The core configuration of a C one (validated when the limiter is built).
pub(crate) fn core_config(c: &seawall_rate_limiter_config) -> Result<RateLimiterConfig, Failure> {
    Failure::reserved(c.reserved, "seawall_rate_limiter_config.reserved")?;
    Ok(RateLimiterConfig {
        rate: c.rate,
        period_ns: c.period_ns,
        burst: c.burst,
    })
}

/// The keyed configuration of a C one, with a seed from the OS.
fn keyed_config(c: &seawall_rate_limiter_config) -> Result<KeyedConfig, Failure> {
    Ok(KeyedConfig {
        limiter: core_config(c)?,
        key_seed: seawall_host::entropy::entropy(),
    })
}

/// A take's result as a status: OK with 0, REJECTED with the retry-after.
fn decided(taken: Result<(), RateLimitError>, retry_after_ns: *mut u64) -> Outcome {
    match taken {
        Ok(()) => {
            // SAFETY: NULL or writable (the C caller's promise).
            unsafe { put_opt(retry_after_ns, 0) };
            Ok(seawall_status::Ok)
        }
        Err(RateLimitError::Rejected { retry_after_ns: r }) => {
            // SAFETY: as above.
            unsafe { put_opt(retry_after_ns, r) };
            Ok(seawall_status::Rejected)
        }
        Err(RateLimitError::InvalidCells(e)) => Err(e.into()),
    }
}

/// Borrow the limiter behind a handle argument.
///
/// # Safety
/// `l` is NULL or a live handle from this library.
unsafe fn handle<'a>(l: *const seawall_rate_limiter) -> Result<&'a RateLimiter, Failure> {
    // SAFETY: the caller's promise.
    Ok(&unsafe { arg(l, "limiter") }?.inner)
}

/// Borrow the keyed limiter behind a handle argument.
///
/// # Safety
/// `l` is NULL or a live handle from this library.
unsafe fn keyed<'a>(l: *const seawall_keyed_rate_limiter) -> Result<&'a KeyedRateLimiter, Failure> {
    // SAFETY: the caller's promise.
    Ok(&unsafe { arg(l, "limiter") }?.inner)
}

/// seawall's defaults: 100 cells per second, bursts of 10.
///
/// # Safety
/// Always safe to call, from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn seawall_rate_limiter_config_default() -> seawall_rate_limiter_config {
    c_config(&RateLimiterConfig::DEFAULT)
}

/// Create a rate limiter in this process's memory, rested (a whole burst
/// available). On success `*out` is a new handle the caller owns and releases
/// with `seawall_rate_limiter_free`; on failure `*out` is NULL and the message
/// names the invalid field.
///
/// # Safety
/// `config` is NULL or readable; `out` is NULL or writable. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_rate_limiter_new(
    config: *const seawall_rate_limiter_config,
    out: *mut *mut seawall_rate_limiter,
) -> seawall_status {
    let make = || {
        // SAFETY: the caller's promise on `config`.
        let cfg = core_config(unsafe { arg(config, "config") }?)?;
        Ok(seawall_rate_limiter {
            inner: RateLimiter::new(&cfg)?,
        })
    };
    // SAFETY: the caller's promise on `out`.
    unsafe { construct(out, make) }
}

/// Release a handle. NULL is fine. A shared limiter stays in its region.
///
/// # Safety
/// `limiter` is NULL or a handle from this library not freed yet; no other
/// thread may use it during or after this call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_rate_limiter_free(limiter: *mut seawall_rate_limiter) {
    // SAFETY: the caller's promise.
    unsafe { destroy(limiter) };
}

/// Create or attach the rate limiter `name` shared by every process of the
/// host (`/dev/shm/seawall-rate-limiter-<name>`), as
/// `seawall_breaker_open_shared` does for breakers: one creator, the others
/// attach without changing anything; another configuration is
/// `SEAWALL_STATUS_CONFIG_MISMATCH`, a file this user may not trust
/// `SEAWALL_STATUS_REGION_UNTRUSTED`.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string; `config` and `out` as in
/// `seawall_rate_limiter_new`. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_rate_limiter_open_shared(
    name: *const c_char,
    config: *const seawall_rate_limiter_config,
    out: *mut *mut seawall_rate_limiter,
) -> seawall_status {
    let make = || {
        // SAFETY: the caller's promise on `name` and `config`.
        let (name, cfg) = unsafe { (name_arg(name)?, core_config(arg(config, "config")?)?) };
        Ok(seawall_rate_limiter {
            inner: RateLimiter::open_shared(name, &cfg, &shared_options())?,
        })
    };
    // SAFETY: the caller's promise on `out`.
    unsafe { construct(out, make) }
}

/// Remove the shared rate limiter `name` (a missing one is fine).
///
/// # Safety
/// `name` is NULL or a NUL-terminated string. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_rate_limiter_unlink_shared(name: *const c_char) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `name`.
        RateLimiter::unlink_shared(unsafe { name_arg(name) }?)?;
        Ok(seawall_status::Ok)
    })
}

/// Bytes of memory `seawall_rate_limiter_init_in` needs.
///
/// # Safety
/// Always safe to call.
#[unsafe(no_mangle)]
pub extern "C" fn seawall_rate_limiter_size() -> usize {
    RateLimiter::region_size()
}

/// Alignment (bytes) of memory for `seawall_rate_limiter_init_in`.
///
/// # Safety
/// Always safe to call.
#[unsafe(no_mangle)]
pub extern "C" fn seawall_rate_limiter_align() -> usize {
    RateLimiter::region_align()
}

/// Build a rate limiter in memory the caller brings (`len` bytes at `mem`,
/// aligned to `seawall_rate_limiter_align()`, at least
/// `seawall_rate_limiter_size()` long, else `SEAWALL_STATUS_BAD_REGION`).
///
/// # Safety
/// `mem` is NULL or valid for reads and writes of `len` bytes until every
/// handle on it is freed, and used by no one else during this call; `config`
/// and `out` as in `seawall_rate_limiter_new`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_rate_limiter_init_in(
    mem: *mut c_void,
    len: usize,
    config: *const seawall_rate_limiter_config,
    out: *mut *mut seawall_rate_limiter,
) -> seawall_status {
    let make = || {
        let mem = mem_arg(mem)?;
        // SAFETY: the caller's promise on `config`.
        let cfg = core_config(unsafe { arg(config, "config") }?)?;
        Ok(seawall_rate_limiter {
            // SAFETY: the caller's promise on `mem` and `len`.
            inner: unsafe { RateLimiter::init_in(mem, len, &cfg) }?,
        })
    };
    // SAFETY: the caller's promise on `out`.
    unsafe { construct(out, make) }
}

/// Attach to a rate limiter `seawall_rate_limiter_init_in` built in this
/// memory. Changes nothing; errors as for `seawall_semaphore_attach`.
///
/// # Safety
/// `mem` is NULL or valid for reads and writes of `len` bytes until the handle
/// is freed, and holds a region `seawall_*_init_in` built or anything whose
/// header fails the checks; `out` as in `seawall_rate_limiter_new`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_rate_limiter_attach(
    mem: *mut c_void,
    len: usize,
    out: *mut *mut seawall_rate_limiter,
) -> seawall_status {
    let make = || {
        let mem = mem_arg(mem)?;
        Ok(seawall_rate_limiter {
            // SAFETY: the caller's promise on `mem` and `len`.
            inner: unsafe { RateLimiter::attach(mem, len) }?,
        })
    };
    // SAFETY: the caller's promise on `out`.
    unsafe { construct(out, make) }
}

/// `*out = true` when this handle created (initialised) its limiter.
///
/// # Safety
/// `limiter` is NULL or a live handle; `out` is NULL or writable. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_rate_limiter_created(
    limiter: *const seawall_rate_limiter,
    out: *mut bool,
) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `limiter`.
        let l = unsafe { handle(limiter) }?;
        let o = self::out(out, "out")?;
        // SAFETY: checked non-NULL, writable per the caller.
        unsafe { put(o, l.created()) };
        Ok(seawall_status::Ok)
    })
}

/// The configuration the limiter runs with (for a shared one, its creator's).
///
/// # Safety
/// `limiter` is NULL or a live handle; `out` is NULL or writable. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_rate_limiter_get_config(
    limiter: *const seawall_rate_limiter,
    out: *mut seawall_rate_limiter_config,
) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `limiter`.
        let l = unsafe { handle(limiter) }?;
        let o = self::out(out, "out")?;
        // SAFETY: checked non-NULL, writable per the caller.
        unsafe { put(o, c_config(l.config())) };
        Ok(seawall_status::Ok)
    })
}

/// Take `n` cells at `now_ns` (the caller's monotonic clock), all or none, in
/// one atomic step. `SEAWALL_STATUS_OK`: admitted, `*out_retry_after_ns = 0`.
/// `SEAWALL_STATUS_REJECTED`: over the rate, nothing taken; the same request
/// conforms `*out_retry_after_ns` ns after `now_ns` unless others take cells
/// first (`UINT64_MAX`: never, past the end of the clock).
/// `SEAWALL_STATUS_INVALID_CONFIG`: `n` is 0 or above `burst` (no time would
/// admit it). `SEAWALL_STATUS_REGION_CORRUPT`: a refusal that the limiter's
/// configuration never gives (its shared region was overwritten).
/// `out_retry_after_ns` may be NULL. Lock-free, no allocation. Counted in the
/// limiter's totals (a shared limiter's: every process's).
///
/// # Safety
/// `limiter` is NULL or a live handle; `out_retry_after_ns` is NULL or
/// writable. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_rate_limiter_try_acquire(
    limiter: *const seawall_rate_limiter,
    n: u32,
    now_ns: u64,
    out_retry_after_ns: *mut u64,
) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `limiter`.
        let l = unsafe { handle(limiter) }?;
        decided(l.try_acquire_checked(n, now_ns)?, out_retry_after_ns)
    })
}

/// Create a keyed rate limiter in this process's memory: every key rested,
/// the key hash seeded from OS randomness (so clients cannot choose keys that
/// collide with a victim's). Ownership and errors as `seawall_rate_limiter_new`.
///
/// # Safety
/// As `seawall_rate_limiter_new`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_keyed_rate_limiter_new(
    config: *const seawall_rate_limiter_config,
    out: *mut *mut seawall_keyed_rate_limiter,
) -> seawall_status {
    let make = || {
        // SAFETY: the caller's promise on `config`.
        let cfg = keyed_config(unsafe { arg(config, "config") }?)?;
        Ok(seawall_keyed_rate_limiter {
            inner: KeyedRateLimiter::new(&cfg)?,
        })
    };
    // SAFETY: the caller's promise on `out`.
    unsafe { construct(out, make) }
}

/// Release a keyed handle. NULL is fine. A shared limiter stays in its region.
///
/// # Safety
/// As `seawall_rate_limiter_free`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_keyed_rate_limiter_free(limiter: *mut seawall_keyed_rate_limiter) {
    // SAFETY: the caller's promise.
    unsafe { destroy(limiter) };
}

/// Create or attach the keyed rate limiter `name` shared by every process of
/// the host (`/dev/shm/seawall-keyed-rate-limiter-<name>`); attachers use the
/// creator's key seed. Errors as `seawall_rate_limiter_open_shared`.
///
/// # Safety
/// As `seawall_rate_limiter_open_shared`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_keyed_rate_limiter_open_shared(
    name: *const c_char,
    config: *const seawall_rate_limiter_config,
    out: *mut *mut seawall_keyed_rate_limiter,
) -> seawall_status {
    let make = || {
        // SAFETY: the caller's promise on `name` and `config`.
        let (name, cfg) = unsafe { (name_arg(name)?, keyed_config(arg(config, "config")?)?) };
        Ok(seawall_keyed_rate_limiter {
            inner: KeyedRateLimiter::open_shared(name, &cfg, &shared_options())?,
        })
    };
    // SAFETY: the caller's promise on `out`.
    unsafe { construct(out, make) }
}

/// Remove the shared keyed rate limiter `name` (a missing one is fine).
///
/// # Safety
/// `name` is NULL or a NUL-terminated string. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_keyed_rate_limiter_unlink_shared(
    name: *const c_char,
) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `name`.
        KeyedRateLimiter::unlink_shared(unsafe { name_arg(name) }?)?;
        Ok(seawall_status::Ok)
    })
}

/// Bytes of memory `seawall_keyed_rate_limiter_init_in` needs.
///
/// # Safety
/// Always safe to call.
#[unsafe(no_mangle)]
pub extern "C" fn seawall_keyed_rate_limiter_size() -> usize {
    KeyedRateLimiter::region_size()
}

/// Alignment (bytes) of memory for `seawall_keyed_rate_limiter_init_in`.
///
/// # Safety
/// Always safe to call.
#[unsafe(no_mangle)]
pub extern "C" fn seawall_keyed_rate_limiter_align() -> usize {
    KeyedRateLimiter::region_align()
}

/// Build a keyed rate limiter in memory the caller brings, as
/// `seawall_rate_limiter_init_in` (with `seawall_keyed_rate_limiter_size()` and
/// `_align()`), its key hash seeded from OS randomness.
///
/// # Safety
/// As `seawall_rate_limiter_init_in`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_keyed_rate_limiter_init_in(
    mem: *mut c_void,
    len: usize,
    config: *const seawall_rate_limiter_config,
    out: *mut *mut seawall_keyed_rate_limiter,
) -> seawall_status {
    let make = || {
        let mem = mem_arg(mem)?;
        // SAFETY: the caller's promise on `config`.
        let cfg = keyed_config(unsafe { arg(config, "config") }?)?;
        Ok(seawall_keyed_rate_limiter {
            // SAFETY: the caller's promise on `mem` and `len`.
            inner: unsafe { KeyedRateLimiter::init_in(mem, len, &cfg) }?,
        })
    };
    // SAFETY: the caller's promise on `out`.
    unsafe { construct(out, make) }
}

/// Attach to a keyed rate limiter `seawall_keyed_rate_limiter_init_in` built in
/// this memory. Changes nothing.
///
/// # Safety
/// As `seawall_rate_limiter_attach`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_keyed_rate_limiter_attach(
    mem: *mut c_void,
    len: usize,
    out: *mut *mut seawall_keyed_rate_limiter,
) -> seawall_status {
    let make = || {
        let mem = mem_arg(mem)?;
        Ok(seawall_keyed_rate_limiter {
            // SAFETY: the caller's promise on `mem` and `len`.
            inner: unsafe { KeyedRateLimiter::attach(mem, len) }?,
        })
    };
    // SAFETY: the caller's promise on `out`.
    unsafe { construct(out, make) }
}

/// Take `n` cells for `key` at `now_ns`, as `seawall_rate_limiter_try_acquire`
/// on the key's own limit. Keys that share a slot share its cells (stricter,
/// never looser).
///
/// # Safety
/// `limiter` is NULL or a live handle; `out_retry_after_ns` is NULL or
/// writable. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_keyed_rate_limiter_try_acquire(
    limiter: *const seawall_keyed_rate_limiter,
    key: u64,
    n: u32,
    now_ns: u64,
    out_retry_after_ns: *mut u64,
) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `limiter`.
        let l = unsafe { keyed(limiter) }?;
        decided(l.try_acquire_checked(key, n, now_ns)?, out_retry_after_ns)
    })
}

/// Take `n` cells for the byte-string key of `key_len` bytes at `key` (a
/// client id, an API token), as `seawall_keyed_rate_limiter_try_acquire`. The
/// bytes are folded with the limiter's own seed exactly as the Python and Node
/// packages fold their string keys (UTF-8), so processes of every language
/// sharing one limiter agree on every key. `key` may be NULL when `key_len` is
/// 0.
///
/// # Safety
/// `limiter` is NULL or a live handle; `key` is valid for reads of `key_len`
/// bytes (or NULL with `key_len` 0); `out_retry_after_ns` is NULL or
/// writable. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_keyed_rate_limiter_try_acquire_bytes(
    limiter: *const seawall_keyed_rate_limiter,
    key: *const u8,
    key_len: usize,
    n: u32,
    now_ns: u64,
    out_retry_after_ns: *mut u64,
) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `limiter`.
        let l = unsafe { keyed(limiter) }?;
        let bytes: &[u8] = if key_len == 0 {
            &[]
        } else if key.is_null() {
            return Err(Failure::null("key"));
        } else {
            // SAFETY: non-NULL and readable for `key_len` bytes (the caller's promise).
            unsafe { core::slice::from_raw_parts(key, key_len) }
        };
        let word = key_of_bytes(l.key_seed(), bytes);
        decided(l.try_acquire_checked(word, n, now_ns)?, out_retry_after_ns)
    })
}

/// `*out` = the slot (`0 .. SEAWALL_KEYED_RATE_LIMITER_SLOTS`) `key` uses: keys
/// with the same slot share one limit.
///
/// # Safety
/// `limiter` is NULL or a live handle; `out` is NULL or writable. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_keyed_rate_limiter_slot_of(
    limiter: *const seawall_keyed_rate_limiter,
    key: u64,
    out: *mut u32,
) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `limiter`.
        let l = unsafe { keyed(limiter) }?;
        let o = self::out(out, "out")?;
        let slot = u32::try_from(l.slot_of(key))
            .map_err(|_| Failure::new(seawall_status::Panic, "slot beyond u32"))?;
        // SAFETY: checked non-NULL, writable per the caller.
        unsafe { put(o, slot) };
        Ok(seawall_status::Ok)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_config_is_100_per_second_burst_10() {
        let c = seawall_rate_limiter_config_default();
        assert_eq!(
            (c.rate, c.period_ns, c.burst, c.reserved),
            (100, 1_000_000_000, 10, 0)
        );
        assert_eq!(c_config(&core_config(&c).unwrap()), c);
    }
}
