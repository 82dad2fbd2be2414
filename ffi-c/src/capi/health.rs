//! `seawall_health`: windowed latency and errors of one dependency, with p50 /
//! p90 / p99, error rate and status (DESIGN §7), through the C ABI.

use core::ffi::c_void;
use std::ffi::c_char;

use seawall_core::{HealthConfig, HealthStatus, Ratio};

use super::breaker::{
    SEAWALL_OUTCOME_FAILURE, SEAWALL_OUTCOME_IGNORED, SEAWALL_OUTCOME_SUCCESS, seawall_outcome,
};
use super::common::SEAWALL_NONE;
use super::{
    Failure, arg, construct, destroy, guard, guard_value, mem_arg, name_arg, out, put,
    seawall_status, shared_options,
};
use seawall_host::health::Health;

// A literal so that cbindgen can print it; a test checks it against Rust.
/// Most buckets (`buckets`) of a health window.
pub const SEAWALL_HEALTH_MAX_BUCKETS: u32 = 60;

/// A health status: `SEAWALL_HEALTH_HEALTHY`, `_DEGRADED` or `_UNHEALTHY`.
#[allow(non_camel_case_types, reason = "C type name")]
pub type seawall_health_status = u32;
/// Within every threshold (or no calls in the window).
pub const SEAWALL_HEALTH_HEALTHY: seawall_health_status = 0;
/// Past a degraded threshold.
pub const SEAWALL_HEALTH_DEGRADED: seawall_health_status = 1;
/// Past an unhealthy threshold.
pub const SEAWALL_HEALTH_UNHEALTHY: seawall_health_status = 2;

/// Health window and status rule (DESIGN §7). Start from
/// `seawall_health_config_default()`. Rates are ppm (100 000 = 10 %), compared
/// strictly (`errors / calls > rate`, `p99 > limit`).
#[allow(non_camel_case_types, reason = "C type name")]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct seawall_health_config {
    /// Time buckets in the window (1 ..= `SEAWALL_HEALTH_MAX_BUCKETS`). Default 10.
    pub buckets: u32,
    /// Must be 0: anything else is `SEAWALL_STATUS_INVALID_ARGUMENT`.
    pub reserved: u32,
    /// Width of a bucket (ns, ≥ 1 000 000). Default 1 s.
    pub bucket_width_ns: u64,
    /// Degraded above this error rate (ppm, 0 ..= 1 000 000). Default 100 000.
    pub degraded_error_rate_ppm: u64,
    /// Unhealthy above this error rate (ppm, ≥ the degraded one). Default 500 000.
    pub unhealthy_error_rate_ppm: u64,
    /// Degraded when p99 is above this (ns). Default 2 s.
    pub degraded_p99_ns: u64,
    /// Unhealthy when p99 is above this (ns, ≥ the degraded one). Default 5 s.
    pub unhealthy_p99_ns: u64,
}

/// A picture of the window. Percentiles are within 3.125 % of the exact
/// nearest-rank value (a log-linear histogram's bucket midpoint).
#[allow(non_camel_case_types, reason = "C type name")]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct seawall_health_snapshot {
    /// Calls in the window.
    pub calls: u64,
    /// Failed calls in the window.
    pub errors: u64,
    /// Latencies in the window's histogram (`calls`, unless a latency bucket of
    /// one time bucket saturated at 2^24 − 1 records).
    pub latencies: u64,
    /// `errors / calls` in ppm, rounded down; `SEAWALL_NONE` for an empty window.
    pub error_rate_ppm: u64,
    /// Median latency (ns); `SEAWALL_NONE` for an empty window.
    pub p50_ns: u64,
    /// 90th percentile latency (ns); `SEAWALL_NONE` for an empty window.
    pub p90_ns: u64,
    /// 99th percentile latency (ns); `SEAWALL_NONE` for an empty window.
    pub p99_ns: u64,
    /// The status rule applied to the above (`SEAWALL_HEALTH_*`).
    pub status: seawall_health_status,
    /// Zero.
    pub reserved: u32,
}

/// A health window (opaque). Every function taking a `const seawall_health *`
/// may be called from any number of threads at once.
#[allow(non_camel_case_types, reason = "C type name")]
pub struct seawall_health {
    inner: Health,
}

/// The C view of a core configuration.
pub(crate) fn c_config(c: &HealthConfig) -> seawall_health_config {
    seawall_health_config {
        buckets: c.buckets,
        reserved: 0,
        bucket_width_ns: c.bucket_width_ns,
        degraded_error_rate_ppm: c.degraded_error_rate.ppm(),
        unhealthy_error_rate_ppm: c.unhealthy_error_rate.ppm(),
        degraded_p99_ns: c.degraded_p99_ns,
        unhealthy_p99_ns: c.unhealthy_p99_ns,
    }
}

/// The core configuration of a C one (validated when the window is built).
pub(crate) fn core_config(c: &seawall_health_config) -> Result<HealthConfig, Failure> {
    Failure::reserved(c.reserved, "seawall_health_config.reserved")?;
    Ok(HealthConfig {
        buckets: c.buckets,
        bucket_width_ns: c.bucket_width_ns,
        degraded_error_rate: Ratio::from_ppm(c.degraded_error_rate_ppm),
        unhealthy_error_rate: Ratio::from_ppm(c.unhealthy_error_rate_ppm),
        degraded_p99_ns: c.degraded_p99_ns,
        unhealthy_p99_ns: c.unhealthy_p99_ns,
    })
}

fn status_code(s: HealthStatus) -> seawall_health_status {
    seawall_health_status::from(s as u8)
}

fn none_if_absent(v: Option<u64>) -> u64 {
    v.unwrap_or(SEAWALL_NONE)
}

/// Borrow the window behind a handle argument.
///
/// # Safety
/// `h` is NULL or a live handle from this library.
unsafe fn handle<'a>(h: *const seawall_health) -> Result<&'a Health, Failure> {
    // SAFETY: the caller's promise.
    Ok(&unsafe { arg(h, "health") }?.inner)
}

/// The DESIGN §7 defaults: 10 buckets of 1 s; degraded above 10 % errors or a
/// p99 of 2 s, unhealthy above 50 % or 5 s.
///
/// # Safety
/// Always safe to call, from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn seawall_health_config_default() -> seawall_health_config {
    c_config(&HealthConfig::DEFAULT)
}

/// Create an empty health window in this process's memory. On success `*out` is
/// a new handle the caller owns and releases with `seawall_health_free`; on
/// failure `*out` is NULL and the message names the invalid field.
///
/// # Safety
/// `config` is NULL or readable; `out` is NULL or writable. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_health_new(
    config: *const seawall_health_config,
    out: *mut *mut seawall_health,
) -> seawall_status {
    let make = || {
        // SAFETY: the caller's promise on `config`.
        let cfg = core_config(unsafe { arg(config, "config") }?)?;
        Ok(seawall_health {
            inner: Health::new(&cfg)?,
        })
    };
    // SAFETY: the caller's promise on `out`.
    unsafe { construct(out, make) }
}

/// Release a handle. NULL is fine. A shared window stays in its region.
///
/// # Safety
/// `health` is NULL or a handle from this library not freed yet; no other thread
/// may use it during or after this call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_health_free(health: *mut seawall_health) {
    // SAFETY: the caller's promise.
    unsafe { destroy(health) };
}

/// Create or attach the health window `name` shared by every process of the host
/// (`/dev/shm/seawall-health-<name>`), as `seawall_breaker_open_shared`
/// does for breakers: one creator, the others attach without changing
/// anything; another configuration is `SEAWALL_STATUS_CONFIG_MISMATCH`.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string; `config` and `out` as in
/// `seawall_health_new`. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_health_open_shared(
    name: *const c_char,
    config: *const seawall_health_config,
    out: *mut *mut seawall_health,
) -> seawall_status {
    let make = || {
        // SAFETY: the caller's promise on `name` and `config`.
        let (name, cfg) = unsafe { (name_arg(name)?, core_config(arg(config, "config")?)?) };
        Ok(seawall_health {
            inner: Health::open_shared(name, &cfg, &shared_options())?,
        })
    };
    // SAFETY: the caller's promise on `out`.
    unsafe { construct(out, make) }
}

/// Remove the shared health window `name` (a missing one is fine).
///
/// # Safety
/// `name` is NULL or a NUL-terminated string. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_health_unlink_shared(name: *const c_char) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `name`.
        Health::unlink_shared(unsafe { name_arg(name) }?)?;
        Ok(seawall_status::Ok)
    })
}

/// Bytes of memory `seawall_health_init_in` needs.
///
/// # Safety
/// Always safe to call.
#[unsafe(no_mangle)]
pub extern "C" fn seawall_health_size() -> usize {
    Health::region_size()
}

/// Alignment (bytes) of memory for `seawall_health_init_in`.
///
/// # Safety
/// Always safe to call.
#[unsafe(no_mangle)]
pub extern "C" fn seawall_health_align() -> usize {
    Health::region_align()
}

/// Build a health window in memory the caller brings (`len` bytes at `mem`,
/// aligned to `seawall_health_align()`, at least
/// `seawall_health_size()` long, else `SEAWALL_STATUS_BAD_REGION`).
///
/// # Safety
/// `mem` is NULL or valid for reads and writes of `len` bytes until every handle
/// on it is freed, and used by no one else during this call; `config` and `out`
/// as in `seawall_health_new`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_health_init_in(
    mem: *mut c_void,
    len: usize,
    config: *const seawall_health_config,
    out: *mut *mut seawall_health,
) -> seawall_status {
    let make = || {
        let mem = mem_arg(mem)?;
        // SAFETY: the caller's promise on `config`.
        let cfg = core_config(unsafe { arg(config, "config") }?)?;
        Ok(seawall_health {
            // SAFETY: the caller's promise on `mem` and `len`.
            inner: unsafe { Health::init_in(mem, len, &cfg) }?,
        })
    };
    // SAFETY: the caller's promise on `out`.
    unsafe { construct(out, make) }
}

/// Attach to a health window `seawall_health_init_in` built in this memory.
/// Changes nothing; errors as for `seawall_semaphore_attach`.
///
/// # Safety
/// `mem` is NULL or valid for reads and writes of `len` bytes until the handle is
/// freed, and holds a region `seawall_*_init_in` built or anything whose header
/// fails the checks; `out` as in `seawall_health_new`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_health_attach(
    mem: *mut c_void,
    len: usize,
    out: *mut *mut seawall_health,
) -> seawall_status {
    let make = || {
        let mem = mem_arg(mem)?;
        Ok(seawall_health {
            // SAFETY: the caller's promise on `mem` and `len`.
            inner: unsafe { Health::attach(mem, len) }?,
        })
    };
    // SAFETY: the caller's promise on `out`.
    unsafe { construct(out, make) }
}

/// `*out = true` when this handle created (initialised) its window.
///
/// # Safety
/// `health` is NULL or a live handle; `out` is NULL or writable. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_health_created(
    health: *const seawall_health,
    out: *mut bool,
) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `health`.
        let h = unsafe { handle(health) }?;
        let o = self::out(out, "out")?;
        // SAFETY: checked non-NULL, writable per the caller.
        unsafe { put(o, h.created()) };
        Ok(seawall_status::Ok)
    })
}

/// The configuration the window runs with (for a shared one, its creator's).
///
/// # Safety
/// `health` is NULL or a live handle; `out` is NULL or writable. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_health_get_config(
    health: *const seawall_health,
    out: *mut seawall_health_config,
) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `health`.
        let h = unsafe { handle(health) }?;
        let o = self::out(out, "out")?;
        // SAFETY: checked non-NULL, writable per the caller.
        unsafe { put(o, c_config(h.config())) };
        Ok(seawall_status::Ok)
    })
}

/// Record one call that ended at `now_ns` after `latency_ns`: a
/// `SEAWALL_OUTCOME_SUCCESS` or `_FAILURE` counts (a failure as an error too);
/// `SEAWALL_OUTCOME_IGNORED` counts nowhere (DESIGN §1). An unknown outcome is
/// `SEAWALL_STATUS_INVALID_ARGUMENT`. Latencies from 2^35 ns (about 34 s) up
/// count in the top histogram bucket. `SEAWALL_STATUS_REGION_CORRUPT` when a
/// shared window's memory holds values seawall never writes. Lock-free, no
/// allocation.
///
/// # Safety
/// `health` is NULL or a live handle. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_health_record(
    health: *const seawall_health,
    outcome: seawall_outcome,
    latency_ns: u64,
    now_ns: u64,
) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `health`.
        let h = unsafe { handle(health) }?;
        match outcome {
            SEAWALL_OUTCOME_SUCCESS => h.record_checked(latency_ns, false, now_ns)?,
            SEAWALL_OUTCOME_FAILURE => h.record_checked(latency_ns, true, now_ns)?,
            SEAWALL_OUTCOME_IGNORED => {}
            other => {
                return Err(Failure::new(
                    seawall_status::InvalidArgument,
                    format_args!(
                        "invalid outcome {other}: use SEAWALL_OUTCOME_SUCCESS (0), _FAILURE (1) or _IGNORED (2)"
                    ),
                ));
            }
        }
        Ok(seawall_status::Ok)
    })
}

/// Calls, errors, error rate, p50 / p90 / p99 and status of the window as of
/// `now_ns`. Reading changes nothing. Reads every latency counter of the window:
/// not for the hot path.
///
/// # Safety
/// `health` is NULL or a live handle; `out` is NULL or writable. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_health_get_snapshot(
    health: *const seawall_health,
    now_ns: u64,
    out: *mut seawall_health_snapshot,
) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `health`.
        let h = unsafe { handle(health) }?;
        let o = self::out(out, "out")?;
        let s = h.snapshot(now_ns);
        let snap = seawall_health_snapshot {
            calls: s.calls,
            errors: s.errors,
            latencies: s.latencies,
            error_rate_ppm: none_if_absent(s.error_rate.map(Ratio::ppm)),
            p50_ns: none_if_absent(s.p50_ns),
            p90_ns: none_if_absent(s.p90_ns),
            p99_ns: none_if_absent(s.p99_ns),
            status: status_code(s.status),
            reserved: 0,
        };
        // SAFETY: checked non-NULL, writable per the caller.
        unsafe { put(o, snap) };
        Ok(seawall_status::Ok)
    })
}

/// The `quantile_ppm / 10^6` quantile of the window's latencies as of `now_ns`
/// (nearest rank, within 3.125 %; 990 000 is p99, values above 1 000 000 count
/// as the maximum), or `SEAWALL_NONE` for an empty window.
///
/// # Safety
/// `health` is NULL or a live handle; `out_ns` is NULL or writable. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_health_quantile(
    health: *const seawall_health,
    quantile_ppm: u64,
    now_ns: u64,
    out_ns: *mut u64,
) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `health`.
        let h = unsafe { handle(health) }?;
        let o = out(out_ns, "out_ns")?;
        let q = h.quantile(Ratio::from_ppm(quantile_ppm), now_ns);
        // SAFETY: checked non-NULL, writable per the caller.
        unsafe { put(o, none_if_absent(q)) };
        Ok(seawall_status::Ok)
    })
}

/// The name of a health status (`"healthy"`, `"degraded"`, `"unhealthy"`), or
/// `"unknown"`.
///
/// # Safety
/// Always safe to call; the string is static.
#[unsafe(no_mangle)]
pub extern "C" fn seawall_health_status_name(status: seawall_health_status) -> *const c_char {
    guard_value(c"unknown".as_ptr(), || match status {
        SEAWALL_HEALTH_HEALTHY => c"healthy".as_ptr(),
        SEAWALL_HEALTH_DEGRADED => c"degraded".as_ptr(),
        SEAWALL_HEALTH_UNHEALTHY => c"unhealthy".as_ptr(),
        _ => c"unknown".as_ptr(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_limits_and_defaults() {
        assert_eq!(
            SEAWALL_HEALTH_MAX_BUCKETS as usize,
            seawall_host::health::HEALTH_MAX_BUCKETS
        );
        let c = seawall_health_config_default();
        // DESIGN §7 (seed rule): 10 × 1 s; 10 % / 2 s degraded, 50 % / 5 s unhealthy.
        assert_eq!(c.buckets, 10);
        assert_eq!(c.bucket_width_ns, 1_000_000_000);
        assert_eq!(c.degraded_error_rate_ppm, 100_000);
        assert_eq!(c.unhealthy_error_rate_ppm, 500_000);
        assert_eq!(c.degraded_p99_ns, 2_000_000_000);
        assert_eq!(c.unhealthy_p99_ns, 5_000_000_000);
        assert_eq!(c_config(&core_config(&c).unwrap()), c);
        for (s, v) in [
            (HealthStatus::Healthy, SEAWALL_HEALTH_HEALTHY),
            (HealthStatus::Degraded, SEAWALL_HEALTH_DEGRADED),
            (HealthStatus::Unhealthy, SEAWALL_HEALTH_UNHEALTHY),
        ] {
            assert_eq!(status_code(s), v);
        }
    }
}
