//! `seawall_breaker`: the circuit breaker (DESIGN §3) through the C ABI.

use core::ffi::c_void;
use core::ptr::NonNull;
use std::ffi::c_char;

use seawall_core::{
    BreakerConfig, ConfigError, Field, MAX_CONSECUTIVE_FAILURES, MAX_HALF_OPEN_CALLS, Outcome,
    Problem, Ratio, State, WindowConfig,
};

use super::common::SEAWALL_NONE;
use super::{
    Failure, arg, guard, guard_value, mem_arg, name_arg, out, put, seawall_status, shared_options,
};
use seawall_host::breaker::{AcquireError, Breaker, Metrics, Permit};
use seawall_host::entropy::entropy;
use seawall_host::permits::{PERMIT_SLOTS, PermitError};

/// A window kind: `SEAWALL_WINDOW_COUNT` or `SEAWALL_WINDOW_TIME`.
#[allow(non_camel_case_types, reason = "C type name")]
pub type seawall_window_kind = u32;
/// Count-based window: the last `window_size` calls.
pub const SEAWALL_WINDOW_COUNT: seawall_window_kind = 0;
/// Time-based window: `window_size` buckets of `window_bucket_width_ns`.
pub const SEAWALL_WINDOW_TIME: seawall_window_kind = 1;
// The limits below are literals so that cbindgen can print them; the tests check
// them against the Rust constants they mirror.
/// Largest `window_size` of a count window.
pub const SEAWALL_COUNT_WINDOW_MAX: u32 = 1024;
/// Largest `window_size` (buckets) of a time window.
pub const SEAWALL_TIME_WINDOW_MAX_BUCKETS: u32 = 128;
/// Permits that may be outstanding at once on one breaker (all processes together).
pub const SEAWALL_BREAKER_MAX_PERMITS: u32 = 4096;
/// Longest shared region name.
pub const SEAWALL_REGION_NAME_MAX: u32 = 200;

/// How a call ended: `SEAWALL_OUTCOME_SUCCESS`, `_FAILURE` or `_IGNORED`.
#[allow(non_camel_case_types, reason = "C type name")]
pub type seawall_outcome = u32;
/// The call succeeded.
pub const SEAWALL_OUTCOME_SUCCESS: seawall_outcome = 0;
/// The call failed.
pub const SEAWALL_OUTCOME_FAILURE: seawall_outcome = 1;
/// The outcome says nothing about the dependency (e.g. the caller cancelled): it
/// frees the permit and counts only in the lifetime totals.
pub const SEAWALL_OUTCOME_IGNORED: seawall_outcome = 2;

/// A breaker state: `SEAWALL_STATE_CLOSED`, ...
#[allow(non_camel_case_types, reason = "C type name")]
pub type seawall_state = u32;
/// Calls are admitted and counted.
pub const SEAWALL_STATE_CLOSED: seawall_state = 0;
/// Calls are rejected until the open period ends.
pub const SEAWALL_STATE_OPEN: seawall_state = 1;
/// A few probe calls decide whether to close or reopen.
pub const SEAWALL_STATE_HALF_OPEN: seawall_state = 2;
/// Manually opened: every call is rejected until reset.
pub const SEAWALL_STATE_FORCED_OPEN: seawall_state = 3;
/// Manually disabled: every call is admitted, counted in totals only.
pub const SEAWALL_STATE_DISABLED: seawall_state = 4;

/// Circuit breaker configuration (DESIGN §3). Start from
/// `seawall_breaker_config_default()` and change what you need. Durations are
/// nanoseconds; ratios are parts per million (500000 = 50 %, multipliers:
/// 2000000 = ×2); `SEAWALL_NONE` turns an optional rule off.
#[allow(non_camel_case_types, reason = "C type name")]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct seawall_breaker_config {
    /// `SEAWALL_WINDOW_COUNT` or `SEAWALL_WINDOW_TIME`. Default time.
    pub window_kind: seawall_window_kind,
    /// Count window: calls kept (1 ..= `SEAWALL_COUNT_WINDOW_MAX`); time window:
    /// buckets (1 ..= `SEAWALL_TIME_WINDOW_MAX_BUCKETS`). Default 10.
    pub window_size: u32,
    /// Time window only: width of one bucket (ns, ≥ 100 000). Default 1 s.
    /// Ignored for count windows (`seawall_breaker_get_config` reports 0).
    pub window_bucket_width_ns: u64,
    /// Calls the window must hold before a rate can open the breaker (≥ 1,
    /// capped at a count window's size). Default 20.
    pub minimum_calls: u64,
    /// Open when failures / calls ≥ this (ppm, 0 ..= 1 000 000), or
    /// `SEAWALL_NONE`. Default 500 000.
    pub failure_rate_threshold_ppm: u64,
    /// Open when slow calls / calls ≥ this (ppm, 0 ..= 1 000 000). Default 1 000 000.
    pub slow_call_rate_threshold_ppm: u64,
    /// A call is slow when it takes strictly longer (ns), or `SEAWALL_NONE`
    /// (the slow-call rule is off; default).
    pub slow_call_duration_ns: u64,
    /// Open after this many failures in a row (1 ..= 4 194 303), or
    /// `SEAWALL_NONE` (default).
    pub consecutive_failures: u64,
    /// First open period (ns, ≥ 1). Default 30 s.
    pub open_duration_ns: u64,
    /// Each consecutive opening lasts this many times the previous one (ppm,
    /// ≥ 1 000 000). Default 1 000 000 (off).
    pub open_backoff_multiplier_ppm: u64,
    /// Longest open period (ns, ≥ `open_duration_ns`), or `SEAWALL_NONE`
    /// (uncapped). Default 5 min.
    pub max_open_duration_ns: u64,
    /// Open periods vary by ± this fraction (ppm, 0 ..= 1 000 000). Default 0.
    pub open_jitter_factor_ppm: u64,
    /// Probes in flight at once in half-open (1 ..= 2047). Default 1.
    pub half_open_max_calls: u64,
    /// Successful probes that close the breaker (1 ..= 2047). Default 1.
    pub half_open_success_threshold: u64,
    /// Reopen at the next acquire when half-open has decided nothing for this long
    /// (ns, ≥ 1), or `SEAWALL_NONE` (wait forever; default).
    pub half_open_max_wait_ns: u64,
    /// Seed of the open-period jitter. `seawall_breaker_config_default()` draws it
    /// from OS entropy; set it for reproducible runs. Processes sharing a breaker
    /// use the seed of the one that created it.
    pub jitter_seed: u64,
}

/// A single-use permit: pass it to `seawall_breaker_record` exactly once. A
/// second use returns `SEAWALL_STATUS_PERMIT_ALREADY_USED` and changes nothing.
/// Plain data: copy it freely, even to another process sharing the breaker.
#[allow(non_camel_case_types, reason = "C type name")]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct seawall_permit {
    /// Slot and generation in the breaker's permit table (opaque; do not change).
    pub id: u64,
    /// Epoch of the breaker state that admitted the call.
    pub epoch: u32,
    /// Must be 0: anything else is `SEAWALL_STATUS_INVALID_ARGUMENT`.
    pub reserved: u32,
}

/// Why an acquire was refused.
#[allow(non_camel_case_types, reason = "C type name")]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct seawall_rejection {
    /// The state that refused: `SEAWALL_STATE_OPEN`, `SEAWALL_STATE_HALF_OPEN`
    /// (all probe slots taken) or `SEAWALL_STATE_FORCED_OPEN`.
    pub state: seawall_state,
    /// Zero.
    pub reserved: u32,
    /// Rejections in open only: ns until the open period ends; else `SEAWALL_NONE`.
    pub retry_after_ns: u64,
}

/// A snapshot of a breaker. Reading it changes nothing.
#[allow(non_camel_case_types, reason = "C type name")]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct seawall_breaker_metrics {
    /// Current state (open until an acquire moves it on).
    pub state: seawall_state,
    /// Current epoch (changes with every state change).
    pub epoch: u32,
    /// Calls in the sliding window of the current closed period (of the last one
    /// while open or half-open).
    pub window_calls: u64,
    /// Failed calls in the window.
    pub window_failures: u64,
    /// Slow calls in the window.
    pub window_slow: u64,
    /// Calls both slow and failed in the window.
    pub window_slow_failures: u64,
    /// `window_failures / window_calls` in ppm; `SEAWALL_NONE` for an empty window.
    pub failure_rate_ppm: u64,
    /// `window_slow / window_calls` in ppm; `SEAWALL_NONE` for an empty window.
    pub slow_call_rate_ppm: u64,
    /// Failures in a row so far (closed only).
    pub consecutive_failures: u32,
    /// Probes in flight (half-open only).
    pub half_open_in_flight: u32,
    /// Successful probes so far (half-open only).
    pub half_open_successes: u32,
    /// Consecutive openings (0 while closed).
    pub openings: u32,
    /// What a rejection in open would report now (ns), or `SEAWALL_NONE`.
    pub retry_after_ns: u64,
    /// Lifetime: permits handed out.
    pub admitted: u64,
    /// Lifetime: acquires refused.
    pub rejected: u64,
    /// Lifetime: outcomes recorded as success (stale ones included).
    pub successes: u64,
    /// Lifetime: outcomes recorded as failure (stale ones included).
    pub failures: u64,
    /// Lifetime: successes and failures slower than `slow_call_duration_ns`.
    pub slow: u64,
    /// Lifetime: outcomes recorded as ignored.
    pub ignored: u64,
    /// Lifetime: outcomes whose permit came from an earlier epoch.
    pub stale: u64,
    /// Lifetime: state changes.
    pub transitions: u64,
    /// Permits admitted and not yet recorded.
    pub permits_outstanding: u64,
}

/// A circuit breaker (opaque). Every function taking a `const seawall_breaker *`
/// may be called from any number of threads at once.
#[allow(non_camel_case_types, reason = "C type name")]
pub struct seawall_breaker {
    inner: Breaker,
}

const fn none_if_off(v: Option<u64>) -> u64 {
    match v {
        Some(x) => x,
        None => SEAWALL_NONE,
    }
}

fn optional(v: u64) -> Option<u64> {
    (v != SEAWALL_NONE).then_some(v)
}

fn state_code(s: State) -> seawall_state {
    seawall_state::from(s as u8)
}

/// The C view of a core configuration.
pub(crate) fn c_config(c: &BreakerConfig) -> seawall_breaker_config {
    let (window_kind, window_size, window_bucket_width_ns) = match c.window {
        WindowConfig::Count { size } => (SEAWALL_WINDOW_COUNT, size, 0),
        WindowConfig::Time {
            buckets,
            bucket_width_ns,
        } => (SEAWALL_WINDOW_TIME, buckets, bucket_width_ns),
    };
    seawall_breaker_config {
        window_kind,
        window_size,
        window_bucket_width_ns,
        minimum_calls: u64::from(c.minimum_calls),
        failure_rate_threshold_ppm: none_if_off(c.failure_rate_threshold.map(Ratio::ppm)),
        slow_call_rate_threshold_ppm: c.slow_call_rate_threshold.ppm(),
        slow_call_duration_ns: none_if_off(c.slow_call_duration_ns),
        consecutive_failures: none_if_off(c.consecutive_failures.map(u64::from)),
        open_duration_ns: c.open_duration_ns,
        open_backoff_multiplier_ppm: c.open_backoff_multiplier.ppm(),
        max_open_duration_ns: none_if_off(c.max_open_duration_ns),
        open_jitter_factor_ppm: c.open_jitter_factor.ppm(),
        half_open_max_calls: u64::from(c.half_open_max_calls),
        half_open_success_threshold: u64::from(c.half_open_success_threshold),
        half_open_max_wait_ns: none_if_off(c.half_open_max_wait_ns),
        jitter_seed: c.jitter_seed,
    }
}

/// A `u64` C field narrowed to the core's `u32`, or the core's range error.
fn narrow(v: u64, field: Field, max: u64) -> Result<u32, ConfigError> {
    u32::try_from(v).map_err(|_| ConfigError {
        field,
        problem: Problem::OutOfRange { min: 1, max },
    })
}

/// The core configuration of a C one; a value the core type cannot even hold is
/// reported like the core reports an out-of-range value (naming the field).
pub(crate) fn core_config(c: &seawall_breaker_config) -> Result<BreakerConfig, Failure> {
    let window = match c.window_kind {
        SEAWALL_WINDOW_COUNT => WindowConfig::Count {
            size: c.window_size,
        },
        SEAWALL_WINDOW_TIME => WindowConfig::Time {
            buckets: c.window_size,
            bucket_width_ns: c.window_bucket_width_ns,
        },
        other => {
            return Err(Failure::new(
                seawall_status::InvalidConfig,
                format_args!(
                    "invalid {}: {other} is neither SEAWALL_WINDOW_COUNT (0) nor SEAWALL_WINDOW_TIME (1)",
                    Field::WindowKind.name()
                ),
            ));
        }
    };
    let half_open_max = u64::from(MAX_HALF_OPEN_CALLS);
    let consecutive_failures = match optional(c.consecutive_failures) {
        None => None,
        Some(n) => Some(narrow(
            n,
            Field::ConsecutiveFailures,
            u64::from(MAX_CONSECUTIVE_FAILURES),
        )?),
    };
    Ok(BreakerConfig {
        window,
        minimum_calls: narrow(c.minimum_calls, Field::MinimumCalls, u64::from(u32::MAX))?,
        failure_rate_threshold: optional(c.failure_rate_threshold_ppm).map(Ratio::from_ppm),
        slow_call_rate_threshold: Ratio::from_ppm(c.slow_call_rate_threshold_ppm),
        slow_call_duration_ns: optional(c.slow_call_duration_ns),
        consecutive_failures,
        open_duration_ns: c.open_duration_ns,
        open_backoff_multiplier: Ratio::from_ppm(c.open_backoff_multiplier_ppm),
        max_open_duration_ns: optional(c.max_open_duration_ns),
        open_jitter_factor: Ratio::from_ppm(c.open_jitter_factor_ppm),
        half_open_max_calls: narrow(
            c.half_open_max_calls,
            Field::HalfOpenMaxCalls,
            half_open_max,
        )?,
        half_open_success_threshold: narrow(
            c.half_open_success_threshold,
            Field::HalfOpenSuccessThreshold,
            half_open_max,
        )?,
        half_open_max_wait_ns: optional(c.half_open_max_wait_ns),
        jitter_seed: c.jitter_seed,
    })
}

fn c_metrics(m: &Metrics) -> seawall_breaker_metrics {
    let c = &m.core;
    let t = &c.totals;
    seawall_breaker_metrics {
        state: state_code(c.state),
        epoch: c.epoch,
        window_calls: c.window.calls,
        window_failures: c.window.failures,
        window_slow: c.window.slow,
        window_slow_failures: c.window.slow_failures,
        failure_rate_ppm: none_if_off(c.failure_rate.map(Ratio::ppm)),
        slow_call_rate_ppm: none_if_off(c.slow_call_rate.map(Ratio::ppm)),
        consecutive_failures: c.consecutive_failures,
        half_open_in_flight: c.half_open_in_flight,
        half_open_successes: c.half_open_successes,
        openings: c.openings,
        retry_after_ns: none_if_off(c.retry_after_ns),
        admitted: t.admitted,
        rejected: t.rejected,
        successes: t.successes,
        failures: t.failures,
        slow: t.slow,
        ignored: t.ignored,
        stale: t.stale,
        transitions: t.transitions,
        // Every breaker made through C has a permit table (`seawall_breaker_new`
        // included), so the count is always known.
        permits_outstanding: m.permits_outstanding.unwrap_or(0),
    }
}

/// Borrow the breaker behind a handle argument.
///
/// # Safety
/// `b` is NULL or a live handle from this library.
unsafe fn handle<'a>(b: *const seawall_breaker) -> Result<&'a Breaker, Failure> {
    // SAFETY: the caller's promise.
    Ok(&unsafe { arg(b, "breaker") }?.inner)
}

/// Hand a new breaker to C through `out` (already checked non-NULL).
///
/// # Safety
/// `out` is valid for writing a pointer.
unsafe fn give(out: NonNull<*mut seawall_breaker>, inner: Breaker) {
    let raw = Box::into_raw(Box::new(seawall_breaker { inner }));
    // SAFETY: the caller's promise.
    unsafe { put(out, raw) };
}

/// Check a constructor's `out` argument and set `*out = NULL` until success.
///
/// # Safety
/// `out` is NULL or valid for writing a pointer.
unsafe fn out_handle(
    out_ptr: *mut *mut seawall_breaker,
) -> Result<NonNull<*mut seawall_breaker>, Failure> {
    let o = out(out_ptr, "out")?;
    // SAFETY: the caller's promise.
    unsafe { put(o, core::ptr::null_mut()) };
    Ok(o)
}

/// The DESIGN §3 defaults: a time window of 10 buckets of 1 s, minimum 20 calls,
/// failure rate 50 %, slow-call rule off, consecutive-failure rule off, open 30 s
/// (no backoff, capped at 5 min, no jitter), 1 probe in half-open, 1 success to
/// close, no half-open max wait; `jitter_seed` from OS entropy.
///
/// # Safety
/// Always safe to call, from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn seawall_breaker_config_default() -> seawall_breaker_config {
    let fixed = c_config(&BreakerConfig::DEFAULT);
    guard_value(fixed, || seawall_breaker_config {
        jitter_seed: entropy(),
        ..fixed
    })
}

/// Create a breaker in this process's memory. On success `*out` is a new handle
/// the caller owns and releases with `seawall_breaker_free`; on failure `*out` is
/// NULL and the message names the invalid field.
///
/// # Safety
/// `config` is NULL or points to a readable `seawall_breaker_config`; `out` is NULL
/// or writable. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_breaker_new(
    config: *const seawall_breaker_config,
    out: *mut *mut seawall_breaker,
) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `out`.
        let out = unsafe { out_handle(out) }?;
        // SAFETY: the caller's promise on `config`.
        let cfg = core_config(unsafe { arg(config, "config") }?)?;
        let b = Breaker::new(cfg)?;
        // SAFETY: checked non-NULL, writable per the caller.
        unsafe { give(out, b) };
        Ok(seawall_status::Ok)
    })
}

/// Release a handle. NULL is fine. A shared breaker stays in its region for the
/// other processes (see `seawall_breaker_unlink_shared`); caller memory is not
/// touched. Permits still held become unusable with this handle.
///
/// # Safety
/// `breaker` is NULL or a handle from this library not freed yet; no other thread
/// may use it during or after this call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_breaker_free(breaker: *mut seawall_breaker) {
    guard_value((), || {
        if !breaker.is_null() {
            // SAFETY: a live handle made by `Box::into_raw` in this library, given
            // back exactly once (the caller's promise).
            drop(unsafe { Box::from_raw(breaker) });
        }
    });
}

/// Create or attach the breaker `name` shared by every process of the host (the
/// file `/dev/shm/seawall-breaker-<name>`; `name` is 1 to
/// `SEAWALL_REGION_NAME_MAX` characters of `A-Z a-z 0-9 . _ -`, not starting
/// with `.`). Exactly one of the processes racing to create it initialises it;
/// the others wait for it (up to `SEAWALL_SHM_TIMEOUT_MS` from the environment,
/// default 2000 ms, else `SEAWALL_STATUS_TIMEOUT`) and attach. Attaching changes
/// nothing. A region built with another configuration or window kind is
/// `SEAWALL_STATUS_CONFIG_MISMATCH` (the jitter seed may differ: the creator's is
/// used), another ABI `SEAWALL_STATUS_ABI_MISMATCH`. `*out` as in
/// `seawall_breaker_new`.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string; `config` and `out` as in
/// `seawall_breaker_new`. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_breaker_open_shared(
    name: *const c_char,
    config: *const seawall_breaker_config,
    out: *mut *mut seawall_breaker,
) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `out`.
        let out = unsafe { out_handle(out) }?;
        // SAFETY: the caller's promise on `name`.
        let name = unsafe { name_arg(name) }?;
        // SAFETY: the caller's promise on `config`.
        let cfg = core_config(unsafe { arg(config, "config") }?)?;
        let b = Breaker::open_shared(name, &cfg, &shared_options())?;
        // SAFETY: checked non-NULL, writable per the caller.
        unsafe { give(out, b) };
        Ok(seawall_status::Ok)
    })
}

/// Remove the shared breaker `name` (like `rm -f`: a missing one is fine).
/// Processes attached to it keep using it; the next `seawall_breaker_open_shared`
/// creates a new one.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_breaker_unlink_shared(name: *const c_char) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `name`.
        let name = unsafe { name_arg(name) }?;
        Breaker::unlink_shared(name)?;
        Ok(seawall_status::Ok)
    })
}

/// Bytes of memory `seawall_breaker_init_in` needs (enough for either window kind).
///
/// # Safety
/// Always safe to call.
#[unsafe(no_mangle)]
pub extern "C" fn seawall_breaker_size() -> usize {
    Breaker::region_size()
}

/// Alignment (bytes) of memory for `seawall_breaker_init_in`.
///
/// # Safety
/// Always safe to call.
#[unsafe(no_mangle)]
pub extern "C" fn seawall_breaker_align() -> usize {
    Breaker::region_align()
}

/// Build a breaker in memory the caller brings (e.g. its own `mmap` shared with
/// child processes): `len` bytes at `mem`, aligned to `seawall_breaker_align()`,
/// at least `seawall_breaker_size()` long (else `SEAWALL_STATUS_BAD_REGION`).
/// Whatever the memory held is overwritten. `*out` as in `seawall_breaker_new`;
/// freeing the handle leaves the memory alone.
///
/// # Safety
/// `mem` is NULL or valid for reads and writes of `len` bytes until every handle
/// on it is freed; no other thread or process may use that memory during this
/// call. `config` and `out` as in `seawall_breaker_new`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_breaker_init_in(
    mem: *mut c_void,
    len: usize,
    config: *const seawall_breaker_config,
    out: *mut *mut seawall_breaker,
) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `out`.
        let out = unsafe { out_handle(out) }?;
        let mem = mem_arg(mem)?;
        // SAFETY: the caller's promise on `config`.
        let cfg = core_config(unsafe { arg(config, "config") }?)?;
        // SAFETY: the caller's promise on `mem` and `len`.
        let b = unsafe { Breaker::init_in(mem, len, &cfg) }?;
        // SAFETY: checked non-NULL, writable per the caller.
        unsafe { give(out, b) };
        Ok(seawall_status::Ok)
    })
}

/// Attach to a breaker that `seawall_breaker_init_in` built in this memory (in
/// this process or another one mapping it). Changes nothing. Memory without an
/// initialised region is `SEAWALL_STATUS_NOT_A_REGION`; one made by another ABI
/// `SEAWALL_STATUS_ABI_MISMATCH`; size or alignment `SEAWALL_STATUS_BAD_REGION`.
///
/// # Safety
/// `mem` is NULL or valid for reads and writes of `len` bytes until the handle is
/// freed, and holds either a region `seawall_breaker_init_in` built or anything
/// whose header fails the checks; `out` as in `seawall_breaker_new`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_breaker_attach(
    mem: *mut c_void,
    len: usize,
    out: *mut *mut seawall_breaker,
) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `out`.
        let out = unsafe { out_handle(out) }?;
        let mem = mem_arg(mem)?;
        // SAFETY: the caller's promise on `mem` and `len`.
        let b = unsafe { Breaker::attach(mem, len) }?;
        // SAFETY: checked non-NULL, writable per the caller.
        unsafe { give(out, b) };
        Ok(seawall_status::Ok)
    })
}

/// `*out = true` when this handle created (initialised) its breaker: always for
/// `seawall_breaker_new` and `_init_in`, for exactly one of the processes opening
/// a shared breaker at once.
///
/// # Safety
/// `breaker` is NULL or a live handle; `out` is NULL or writable. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_breaker_created(
    breaker: *const seawall_breaker,
    out: *mut bool,
) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `breaker`.
        let b = unsafe { handle(breaker) }?;
        let o = out_arg(out)?;
        // SAFETY: checked non-NULL, writable per the caller.
        unsafe { put(o, b.created()) };
        Ok(seawall_status::Ok)
    })
}

fn out_arg<T>(p: *mut T) -> Result<NonNull<T>, Failure> {
    out(p, "out")
}

/// The configuration the breaker runs with (for a shared breaker, its creator's).
///
/// # Safety
/// `breaker` is NULL or a live handle; `out` is NULL or writable. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_breaker_get_config(
    breaker: *const seawall_breaker,
    out: *mut seawall_breaker_config,
) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `breaker`.
        let b = unsafe { handle(breaker) }?;
        let o = out_arg(out)?;
        // SAFETY: checked non-NULL, writable per the caller.
        unsafe { put(o, c_config(&b.config())) };
        Ok(seawall_status::Ok)
    })
}

/// Ask to make one call at `now_ns`. Returns `SEAWALL_STATUS_OK` with the permit
/// in `*out_permit` (record it exactly once with `seawall_breaker_record`), or
/// `SEAWALL_STATUS_REJECTED` with the reason in `*out_rejection` when that is not
/// NULL (`*out_permit` untouched), or `SEAWALL_STATUS_PERMITS_EXHAUSTED` when
/// `SEAWALL_BREAKER_MAX_PERMITS` permits are outstanding, or
/// `SEAWALL_STATUS_REGION_CORRUPT` when a shared breaker's memory holds values
/// seawall never writes (no permit is held then). Lock-free, no allocation.
///
/// # Safety
/// `breaker` is NULL or a live handle; `out_permit` is NULL or writable;
/// `out_rejection` is NULL (not wanted) or writable. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_breaker_try_acquire(
    breaker: *const seawall_breaker,
    now_ns: u64,
    out_permit: *mut seawall_permit,
    out_rejection: *mut seawall_rejection,
) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `breaker`.
        let b = unsafe { handle(breaker) }?;
        let permit_out = out(out_permit, "out_permit")?;
        match b.try_acquire_checked(now_ns)? {
            Ok(p) => {
                let permit = seawall_permit {
                    id: p.id,
                    epoch: p.epoch,
                    reserved: 0,
                };
                // SAFETY: checked non-NULL, writable per the caller.
                unsafe { put(permit_out, permit) };
                Ok(seawall_status::Ok)
            }
            Err(AcquireError::Rejected(r)) => {
                if let Some(o) = NonNull::new(out_rejection) {
                    let rejection = seawall_rejection {
                        state: state_code(r.state),
                        reserved: 0,
                        retry_after_ns: none_if_off(r.retry_after_ns),
                    };
                    // SAFETY: non-NULL, writable per the caller.
                    unsafe { put(o, rejection) };
                }
                Ok(seawall_status::Rejected)
            }
            Err(AcquireError::PermitsExhausted) => Err(Failure::new(
                seawall_status::PermitsExhausted,
                format_args!(
                    "all {PERMIT_SLOTS} permits of this breaker are outstanding: record the ones you hold"
                ),
            )),
        }
    })
}

/// Record how the call admitted with `permit` ended: `outcome`
/// (`SEAWALL_OUTCOME_*`), how long it took (`duration_ns`) and the time now
/// (`now_ns`). A permit works once: a second use returns
/// `SEAWALL_STATUS_PERMIT_ALREADY_USED` and records nothing; an unknown outcome
/// or an altered / foreign permit returns `SEAWALL_STATUS_INVALID_ARGUMENT` and
/// leaves the permit usable. `SEAWALL_STATUS_REGION_CORRUPT`: a shared breaker's
/// window or state holds values seawall never writes; the permit is used and the
/// outcome is in the totals, the window may not have it. Lock-free, no allocation.
///
/// # Safety
/// `breaker` is NULL or a live handle. Thread-safe; the permit may have been
/// acquired by another thread, or another process sharing the breaker.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_breaker_record(
    breaker: *const seawall_breaker,
    permit: seawall_permit,
    outcome: seawall_outcome,
    duration_ns: u64,
    now_ns: u64,
) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `breaker`.
        let b = unsafe { handle(breaker) }?;
        let outcome = match outcome {
            SEAWALL_OUTCOME_SUCCESS => Outcome::Success,
            SEAWALL_OUTCOME_FAILURE => Outcome::Failure,
            SEAWALL_OUTCOME_IGNORED => Outcome::Ignored,
            other => {
                return Err(Failure::new(
                    seawall_status::InvalidArgument,
                    format_args!(
                        "invalid outcome {other}: use SEAWALL_OUTCOME_SUCCESS (0), _FAILURE (1) or _IGNORED (2)"
                    ),
                ));
            }
        };
        Failure::reserved(permit.reserved, "seawall_permit.reserved")?;
        let p = Permit {
            id: permit.id,
            epoch: permit.epoch,
        };
        match b.record_checked(p, outcome, duration_ns, now_ns)? {
            Ok(()) => Ok(seawall_status::Ok),
            Err(PermitError::AlreadyUsed) => Err(Failure::new(
                seawall_status::PermitAlreadyUsed,
                "permit already used (or not issued by this breaker): nothing recorded",
            )),
            Err(PermitError::Foreign) => Err(Failure::new(
                seawall_status::InvalidArgument,
                "not a permit of this breaker: nothing recorded",
            )),
            Err(PermitError::Altered) => Err(Failure::new(
                seawall_status::InvalidArgument,
                "permit was altered (its epoch differs from the one issued): nothing recorded",
            )),
        }
    })
}

/// Give back every permit held by a process that no longer exists (e.g. a worker
/// killed while its call ran): each is recorded as ignored at `now_ns`, which also
/// frees a dead half-open probe's slot; `*out_reclaimed` (if not NULL) says how
/// many. Call it when a process sharing the breaker was replaced. A process is
/// gone once no such pid exists or, on Linux, once it has exited and waits to be
/// reaped (a zombie, state `Z`/`X` in `/proc/<pid>/stat`). A permit is
/// owned by the process that acquired it; reclaim only where every process
/// sharing the breaker sees the same pids (one pid namespace). Scans the permit
/// table: not for the hot path. A process killed in the middle of an acquire or
/// a record leaves a slot that names it; reclaim settles those by count (the
/// totals add up again: an admission never recorded counts as ignored), but
/// without freeing a half-open probe's slot (which of them held a probe is not
/// known): such a probe stays in flight until the episode ends
/// (`half_open_max_wait_ns`, or a reset).
///
/// # Safety
/// `breaker` is NULL or a live handle; `out_reclaimed` is NULL or writable.
/// Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_breaker_reclaim_abandoned(
    breaker: *const seawall_breaker,
    now_ns: u64,
    out_reclaimed: *mut u64,
) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `breaker`.
        let b = unsafe { handle(breaker) }?;
        let n = b.reclaim_abandoned(now_ns);
        if let Some(o) = NonNull::new(out_reclaimed) {
            // SAFETY: non-NULL, writable per the caller.
            unsafe { put(o, n) };
        }
        Ok(seawall_status::Ok)
    })
}

/// The current state (`SEAWALL_STATE_*`); open until an acquire moves it on.
///
/// # Safety
/// `breaker` is NULL or a live handle; `out` is NULL or writable. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_breaker_state(
    breaker: *const seawall_breaker,
    out: *mut seawall_state,
) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `breaker`.
        let b = unsafe { handle(breaker) }?;
        let o = out_arg(out)?;
        // SAFETY: checked non-NULL, writable per the caller.
        unsafe { put(o, state_code(b.state())) };
        Ok(seawall_status::Ok)
    })
}

/// The current epoch: it changes with every state change, so polling it shows
/// transitions made by other threads or processes.
///
/// # Safety
/// `breaker` is NULL or a live handle; `out` is NULL or writable. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_breaker_epoch(
    breaker: *const seawall_breaker,
    out: *mut u32,
) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `breaker`.
        let b = unsafe { handle(breaker) }?;
        let o = out_arg(out)?;
        // SAFETY: checked non-NULL, writable per the caller.
        unsafe { put(o, b.epoch()) };
        Ok(seawall_status::Ok)
    })
}

/// What a rejection in open would report at `now_ns` (ns until the open period
/// ends), or `SEAWALL_NONE` when an acquire now would not be rejected in open.
/// `SEAWALL_STATUS_REGION_CORRUPT` when it is longer than any open period the
/// configuration allows (the shared region was overwritten).
///
/// # Safety
/// `breaker` is NULL or a live handle; `out_ns` is NULL or writable. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_breaker_retry_after(
    breaker: *const seawall_breaker,
    now_ns: u64,
    out_ns: *mut u64,
) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `breaker`.
        let b = unsafe { handle(breaker) }?;
        let o = out(out_ns, "out_ns")?;
        let retry_after = b.retry_after_checked(now_ns)?;
        // SAFETY: checked non-NULL, writable per the caller.
        unsafe { put(o, none_if_off(retry_after)) };
        Ok(seawall_status::Ok)
    })
}

/// A snapshot of state, window (as of `now_ns`), totals and outstanding permits.
/// Reading changes nothing. Not for the hot path: it scans the permit table.
/// `SEAWALL_STATUS_REGION_CORRUPT` when the snapshot holds what the
/// configuration never allows (the shared region was overwritten).
///
/// # Safety
/// `breaker` is NULL or a live handle; `out` is NULL or writable. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_breaker_get_metrics(
    breaker: *const seawall_breaker,
    now_ns: u64,
    out: *mut seawall_breaker_metrics,
) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `breaker`.
        let b = unsafe { handle(breaker) }?;
        let o = out_arg(out)?;
        let m = b.metrics_checked(now_ns)?;
        // SAFETY: checked non-NULL, writable per the caller.
        unsafe { put(o, c_metrics(&m)) };
        Ok(seawall_status::Ok)
    })
}

/// Reject every call until `seawall_breaker_reset` (forced open).
///
/// # Safety
/// `breaker` is NULL or a live handle. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_breaker_force_open(
    breaker: *const seawall_breaker,
) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `breaker`.
        unsafe { handle(breaker) }?.set_manual_checked(State::ForcedOpen)?;
        Ok(seawall_status::Ok)
    })
}

/// Admit every call, counting in totals only, until `seawall_breaker_reset`.
///
/// # Safety
/// `breaker` is NULL or a live handle. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_breaker_disable(
    breaker: *const seawall_breaker,
) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `breaker`.
        unsafe { handle(breaker) }?.set_manual_checked(State::Disabled)?;
        Ok(seawall_status::Ok)
    })
}

/// Back to closed with an empty window. Outstanding permits become stale: each
/// can still be recorded once, into the lifetime totals only.
///
/// # Safety
/// `breaker` is NULL or a live handle. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_breaker_reset(breaker: *const seawall_breaker) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `breaker`.
        unsafe { handle(breaker) }?.set_manual_checked(State::Closed)?;
        Ok(seawall_status::Ok)
    })
}

/// The name of a state (`"closed"`, `"open"`, `"half_open"`, `"forced_open"`,
/// `"disabled"`), or `"unknown"`.
///
/// # Safety
/// Always safe to call; the string is static.
#[unsafe(no_mangle)]
pub extern "C" fn seawall_state_name(state: seawall_state) -> *const c_char {
    guard_value(c"unknown".as_ptr(), || {
        match state {
            SEAWALL_STATE_CLOSED => c"closed",
            SEAWALL_STATE_OPEN => c"open",
            SEAWALL_STATE_HALF_OPEN => c"half_open",
            SEAWALL_STATE_FORCED_OPEN => c"forced_open",
            SEAWALL_STATE_DISABLED => c"disabled",
            _ => c"unknown",
        }
        .as_ptr()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_limits_mirror_the_rust_constants() {
        use seawall_host::breaker::{COUNT_WINDOW_CAPACITY, TIME_WINDOW_CAPACITY};
        use seawall_host::shared::MAX_NAME_LEN;
        assert_eq!(SEAWALL_COUNT_WINDOW_MAX as usize, COUNT_WINDOW_CAPACITY);
        assert_eq!(
            SEAWALL_TIME_WINDOW_MAX_BUCKETS as usize,
            TIME_WINDOW_CAPACITY
        );
        assert_eq!(SEAWALL_BREAKER_MAX_PERMITS as usize, PERMIT_SLOTS);
        assert_eq!(SEAWALL_REGION_NAME_MAX as usize, MAX_NAME_LEN);
    }

    #[test]
    fn default_config_is_the_design_defaults() {
        let c = seawall_breaker_config_default();
        // DESIGN §3, written out by hand.
        assert_eq!(c.window_kind, SEAWALL_WINDOW_TIME);
        assert_eq!(c.window_size, 10);
        assert_eq!(c.window_bucket_width_ns, 1_000_000_000);
        assert_eq!(c.minimum_calls, 20);
        assert_eq!(c.failure_rate_threshold_ppm, 500_000);
        assert_eq!(c.slow_call_rate_threshold_ppm, 1_000_000);
        assert_eq!(c.slow_call_duration_ns, SEAWALL_NONE);
        assert_eq!(c.consecutive_failures, SEAWALL_NONE);
        assert_eq!(c.open_duration_ns, 30_000_000_000);
        assert_eq!(c.open_backoff_multiplier_ppm, 1_000_000);
        assert_eq!(c.max_open_duration_ns, 300_000_000_000);
        assert_eq!(c.open_jitter_factor_ppm, 0);
        assert_eq!(c.half_open_max_calls, 1);
        assert_eq!(c.half_open_success_threshold, 1);
        assert_eq!(c.half_open_max_wait_ns, SEAWALL_NONE);
    }

    #[test]
    fn c_and_core_configs_round_trip() {
        let mut c = seawall_breaker_config_default();
        c.window_kind = SEAWALL_WINDOW_COUNT;
        c.window_size = 7;
        c.window_bucket_width_ns = 0;
        c.consecutive_failures = 5;
        c.slow_call_duration_ns = 123;
        c.failure_rate_threshold_ppm = SEAWALL_NONE;
        c.half_open_max_wait_ns = 9;
        assert_eq!(c_config(&core_config(&c).unwrap()), c);
    }

    #[test]
    fn values_the_core_cannot_hold_name_their_field() {
        let mut c = seawall_breaker_config_default();
        c.half_open_max_calls = u64::from(u32::MAX) + 1;
        let e = core_config(&c).unwrap_err();
        assert_eq!(e.status, seawall_status::InvalidConfig);
        assert_eq!(
            e.message,
            "invalid half_open_max_calls: must be between 1 and 2047"
        );
        let mut c = seawall_breaker_config_default();
        c.window_kind = 9;
        let e = core_config(&c).unwrap_err();
        assert!(
            e.message.starts_with("invalid window.kind: 9"),
            "{}",
            e.message
        );
    }
}
