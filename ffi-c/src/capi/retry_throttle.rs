//! `seawall_retry_throttle`: the gRPC retry throttle (DESIGN §4, gRPC A6)
//! through the C ABI.

use core::ffi::c_void;
use std::ffi::c_char;

use seawall_core::RetryThrottleConfig;

use super::{
    Failure, arg, construct, destroy, guard, mem_arg, name_arg, out, put, seawall_status,
    shared_options,
};
use seawall_host::retry::RetryThrottle;

/// Retry throttle configuration in milli-tokens (gRPC A6 `maxTokens` and
/// `tokenRatio` times 1000, the ratio truncated to 3 decimals). Start from
/// `seawall_retry_throttle_config_default()`.
#[allow(non_camel_case_types, reason = "C type name")]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct seawall_retry_throttle_config {
    /// `max_tokens · 1000` (1 ..= 1 000 000). Default 10 000.
    pub max_milli_tokens: u32,
    /// `token_ratio · 1000`, truncated (≥ 1). Default 100.
    pub token_ratio_milli: u32,
}

/// A retry throttle (opaque), shared by every call to one server. Every function
/// taking a `const seawall_retry_throttle *` may be called from any number of
/// threads at once.
#[allow(non_camel_case_types, reason = "C type name")]
pub struct seawall_retry_throttle {
    pub(crate) inner: RetryThrottle,
}

/// The C view of a core configuration.
pub(crate) fn c_config(c: RetryThrottleConfig) -> seawall_retry_throttle_config {
    seawall_retry_throttle_config {
        max_milli_tokens: c.max_milli_tokens,
        token_ratio_milli: c.token_ratio_milli,
    }
}

/// The core configuration of a C one (validated when the throttle is built).
pub(crate) fn core_config(c: seawall_retry_throttle_config) -> RetryThrottleConfig {
    RetryThrottleConfig {
        max_milli_tokens: c.max_milli_tokens,
        token_ratio_milli: c.token_ratio_milli,
    }
}

/// Borrow the throttle behind a handle argument.
///
/// # Safety
/// `t` is NULL or a live handle from this library.
pub(crate) unsafe fn handle<'a>(
    t: *const seawall_retry_throttle,
) -> Result<&'a RetryThrottle, Failure> {
    // SAFETY: the caller's promise.
    Ok(&unsafe { arg(t, "throttle") }?.inner)
}

/// gRPC's example: 10 tokens (10 000 milli-tokens), token ratio 0.1 (100).
///
/// # Safety
/// Always safe to call, from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn seawall_retry_throttle_config_default() -> seawall_retry_throttle_config {
    c_config(RetryThrottleConfig::DEFAULT)
}

/// Create a retry throttle in this process's memory (tokens full). On success
/// `*out` is a new handle the caller owns and releases with
/// `seawall_retry_throttle_free`; on failure `*out` is NULL and the message names
/// the invalid field.
///
/// # Safety
/// `config` is NULL or readable; `out` is NULL or writable. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_retry_throttle_new(
    config: *const seawall_retry_throttle_config,
    out: *mut *mut seawall_retry_throttle,
) -> seawall_status {
    let make = || {
        // SAFETY: the caller's promise on `config`.
        let cfg = core_config(*unsafe { arg(config, "config") }?);
        Ok(seawall_retry_throttle {
            inner: RetryThrottle::new(&cfg)?,
        })
    };
    // SAFETY: the caller's promise on `out`.
    unsafe { construct(out, make) }
}

/// Release a handle. NULL is fine. A shared throttle stays in its region.
///
/// # Safety
/// `throttle` is NULL or a handle from this library not freed yet; no other thread
/// may use it during or after this call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_retry_throttle_free(throttle: *mut seawall_retry_throttle) {
    // SAFETY: the caller's promise.
    unsafe { destroy(throttle) };
}

/// Create or attach the retry throttle `name` shared by every process of the host
/// (`/dev/shm/seawall-retry-throttle-<name>`), as `seawall_breaker_open_shared`
/// does for breakers: one creator, the others attach without changing
/// anything; another configuration is `SEAWALL_STATUS_CONFIG_MISMATCH`.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string; `config` and `out` as in
/// `seawall_retry_throttle_new`. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_retry_throttle_open_shared(
    name: *const c_char,
    config: *const seawall_retry_throttle_config,
    out: *mut *mut seawall_retry_throttle,
) -> seawall_status {
    let make = || {
        // SAFETY: the caller's promise on `name` and `config`.
        let (name, cfg) = unsafe { (name_arg(name)?, core_config(*arg(config, "config")?)) };
        Ok(seawall_retry_throttle {
            inner: RetryThrottle::open_shared(name, &cfg, &shared_options())?,
        })
    };
    // SAFETY: the caller's promise on `out`.
    unsafe { construct(out, make) }
}

/// Remove the shared retry throttle `name` (a missing one is fine).
///
/// # Safety
/// `name` is NULL or a NUL-terminated string. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_retry_throttle_unlink_shared(
    name: *const c_char,
) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `name`.
        RetryThrottle::unlink_shared(unsafe { name_arg(name) }?)?;
        Ok(seawall_status::Ok)
    })
}

/// Bytes of memory `seawall_retry_throttle_init_in` needs.
///
/// # Safety
/// Always safe to call.
#[unsafe(no_mangle)]
pub extern "C" fn seawall_retry_throttle_size() -> usize {
    RetryThrottle::region_size()
}

/// Alignment (bytes) of memory for `seawall_retry_throttle_init_in`.
///
/// # Safety
/// Always safe to call.
#[unsafe(no_mangle)]
pub extern "C" fn seawall_retry_throttle_align() -> usize {
    RetryThrottle::region_align()
}

/// Build a retry throttle in memory the caller brings (`len` bytes at `mem`,
/// aligned to `seawall_retry_throttle_align()`, at least
/// `seawall_retry_throttle_size()` long, else `SEAWALL_STATUS_BAD_REGION`).
///
/// # Safety
/// `mem` is NULL or valid for reads and writes of `len` bytes until every handle
/// on it is freed, and used by no one else during this call; `config` and `out`
/// as in `seawall_retry_throttle_new`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_retry_throttle_init_in(
    mem: *mut c_void,
    len: usize,
    config: *const seawall_retry_throttle_config,
    out: *mut *mut seawall_retry_throttle,
) -> seawall_status {
    let make = || {
        let mem = mem_arg(mem)?;
        // SAFETY: the caller's promise on `config`.
        let cfg = core_config(*unsafe { arg(config, "config") }?);
        Ok(seawall_retry_throttle {
            // SAFETY: the caller's promise on `mem` and `len`.
            inner: unsafe { RetryThrottle::init_in(mem, len, &cfg) }?,
        })
    };
    // SAFETY: the caller's promise on `out`.
    unsafe { construct(out, make) }
}

/// Attach to a retry throttle `seawall_retry_throttle_init_in` built in this memory.
/// Changes nothing; errors as for `seawall_semaphore_attach`.
///
/// # Safety
/// `mem` is NULL or valid for reads and writes of `len` bytes until the handle is
/// freed, and holds a region `seawall_*_init_in` built or anything whose header
/// fails the checks; `out` as in `seawall_retry_throttle_new`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_retry_throttle_attach(
    mem: *mut c_void,
    len: usize,
    out: *mut *mut seawall_retry_throttle,
) -> seawall_status {
    let make = || {
        let mem = mem_arg(mem)?;
        Ok(seawall_retry_throttle {
            // SAFETY: the caller's promise on `mem` and `len`.
            inner: unsafe { RetryThrottle::attach(mem, len) }?,
        })
    };
    // SAFETY: the caller's promise on `out`.
    unsafe { construct(out, make) }
}

/// `*out = true` when this handle created (initialised) its throttle.
///
/// # Safety
/// `throttle` is NULL or a live handle; `out` is NULL or writable. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_retry_throttle_created(
    throttle: *const seawall_retry_throttle,
    out: *mut bool,
) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `throttle`.
        let b = unsafe { handle(throttle) }?;
        let o = self::out(out, "out")?;
        // SAFETY: checked non-NULL, writable per the caller.
        unsafe { put(o, b.created()) };
        Ok(seawall_status::Ok)
    })
}

/// The configuration the throttle runs with (for a shared one, its creator's).
///
/// # Safety
/// `throttle` is NULL or a live handle; `out` is NULL or writable. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_retry_throttle_get_config(
    throttle: *const seawall_retry_throttle,
    out: *mut seawall_retry_throttle_config,
) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `throttle`.
        let b = unsafe { handle(throttle) }?;
        let o = self::out(out, "out")?;
        // SAFETY: checked non-NULL, writable per the caller.
        unsafe { put(o, c_config(*b.config())) };
        Ok(seawall_status::Ok)
    })
}

/// A call succeeded: add `token_ratio` milli-tokens, up to `max_tokens`.
/// Lock-free, no allocation.
///
/// # Safety
/// `throttle` is NULL or a live handle. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_retry_throttle_record_success(
    throttle: *const seawall_retry_throttle,
) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `throttle`.
        unsafe { handle(throttle) }?.record_success_checked()?;
        Ok(seawall_status::Ok)
    })
}

/// A call failed: take one token, and `*out_retry_allowed` is the retry decision
/// for this failure: true iff the tokens left are more than `max_tokens / 2`.
/// Lock-free, no allocation.
///
/// # Safety
/// `throttle` is NULL or a live handle; `out_retry_allowed` is NULL or writable.
/// Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_retry_throttle_record_failure(
    throttle: *const seawall_retry_throttle,
    out_retry_allowed: *mut bool,
) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `throttle`.
        let t = unsafe { handle(throttle) }?;
        let o = out(out_retry_allowed, "out_retry_allowed")?;
        // SAFETY: checked non-NULL, writable per the caller.
        unsafe { put(o, t.record_failure_checked()?) };
        Ok(seawall_status::Ok)
    })
}

/// The tokens now, in milli-tokens (0 ..= `max_milli_tokens`), and whether a
/// retry would be allowed now without recording anything (`*out_would_allow`,
/// if not NULL: tokens > max / 2).
///
/// # Safety
/// `throttle` is NULL or a live handle; `out_milli_tokens` is NULL or writable;
/// `out_would_allow` is NULL or writable. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_retry_throttle_tokens(
    throttle: *const seawall_retry_throttle,
    out_milli_tokens: *mut u64,
    out_would_allow: *mut bool,
) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `throttle`.
        let t = unsafe { handle(throttle) }?;
        let o = out(out_milli_tokens, "out_milli_tokens")?;
        let tokens = t.milli_tokens();
        // The decision for the very value reported; in 128 bits, since tokens read
        // from a shared region may be any word.
        let allows = 2 * u128::from(tokens) > u128::from(t.config().max_milli_tokens);
        // SAFETY: checked non-NULL, writable per the caller; the other NULL or
        // writable.
        unsafe {
            put(o, tokens);
            super::put_opt(out_would_allow, allows);
        }
        Ok(seawall_status::Ok)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_config_is_grpc_example() {
        let c = seawall_retry_throttle_config_default();
        assert_eq!((c.max_milli_tokens, c.token_ratio_milli), (10_000, 100));
        assert_eq!(c_config(core_config(c)), c);
    }
}
