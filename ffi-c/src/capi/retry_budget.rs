//! `seawall_retry_budget`: the Finagle retry budget (DESIGN §4) through the C ABI.

use core::ffi::c_void;
use std::ffi::c_char;

use seawall_core::{Ratio, RetryBudgetConfig};

use super::{
    Failure, arg, construct, destroy, guard, mem_arg, name_arg, out, put, seawall_status,
    shared_options,
};
use seawall_host::retry::RetryBudget;

/// Retry budget configuration (DESIGN §4, Finagle `RetryBudget`). Start from
/// `seawall_retry_budget_config_default()`.
#[allow(non_camel_case_types, reason = "C type name")]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct seawall_retry_budget_config {
    /// How long deposits and withdrawals count (ns, ≥ 1 000 000), in 10 buckets
    /// of `ttl_ns / 10`. Default 10 s.
    pub ttl_ns: u64,
    /// Retries always allowed per second of `ttl_ns`, whatever the requests (the
    /// reserve is `min_retries_per_sec · ttl`). Default 10.
    pub min_retries_per_sec: u32,
    /// Must be 0: anything else is `SEAWALL_STATUS_INVALID_ARGUMENT`.
    pub reserved: u32,
    /// Fraction of a retry each request deposits, in ppm (0 ..= 10 000 000, i.e.
    /// up to 1000 %). Default 200 000 (20 %).
    pub percent_can_retry_ppm: u64,
}

/// What a budget holds at some instant.
#[allow(non_camel_case_types, reason = "C type name")]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct seawall_retry_budget_snapshot {
    /// Requests deposited in the live window.
    pub requests: u64,
    /// Retries withdrawn in the live window.
    pub retries: u64,
    /// Retries allowed now, in ppm of a retry: reserve + deposits − withdrawals,
    /// never negative.
    pub balance_ppm: u64,
    /// Whole retries allowed now: `balance_ppm / 1 000 000`.
    pub available: u64,
}

/// A retry budget (opaque), shared by every caller of one dependency. Every
/// function taking a `const seawall_retry_budget *` may be called from any number
/// of threads at once.
#[allow(non_camel_case_types, reason = "C type name")]
pub struct seawall_retry_budget {
    pub(crate) inner: RetryBudget,
}

/// The C view of a core configuration.
pub(crate) fn c_config(c: &RetryBudgetConfig) -> seawall_retry_budget_config {
    seawall_retry_budget_config {
        ttl_ns: c.ttl_ns,
        min_retries_per_sec: c.min_retries_per_sec,
        reserved: 0,
        percent_can_retry_ppm: c.percent_can_retry.ppm(),
    }
}

/// The core configuration of a C one (validated when the budget is built).
pub(crate) fn core_config(c: &seawall_retry_budget_config) -> Result<RetryBudgetConfig, Failure> {
    Failure::reserved(c.reserved, "seawall_retry_budget_config.reserved")?;
    Ok(RetryBudgetConfig {
        ttl_ns: c.ttl_ns,
        min_retries_per_sec: c.min_retries_per_sec,
        percent_can_retry: Ratio::from_ppm(c.percent_can_retry_ppm),
    })
}

/// Borrow the budget behind a handle argument.
///
/// # Safety
/// `b` is NULL or a live handle from this library.
pub(crate) unsafe fn handle<'a>(
    b: *const seawall_retry_budget,
) -> Result<&'a RetryBudget, Failure> {
    // SAFETY: the caller's promise.
    Ok(&unsafe { arg(b, "budget") }?.inner)
}

/// The DESIGN §4 defaults: ttl 10 s, 10 retries per second, 20 %.
///
/// # Safety
/// Always safe to call, from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn seawall_retry_budget_config_default() -> seawall_retry_budget_config {
    c_config(&RetryBudgetConfig::DEFAULT)
}

/// Create a retry budget in this process's memory (only the reserve to start
/// with). On success `*out` is a new handle the caller owns and releases with
/// `seawall_retry_budget_free`; on failure `*out` is NULL and the message names
/// the invalid field.
///
/// # Safety
/// `config` is NULL or readable; `out` is NULL or writable. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_retry_budget_new(
    config: *const seawall_retry_budget_config,
    out: *mut *mut seawall_retry_budget,
) -> seawall_status {
    let make = || {
        // SAFETY: the caller's promise on `config`.
        let cfg = core_config(unsafe { arg(config, "config") }?)?;
        Ok(seawall_retry_budget {
            inner: RetryBudget::new(&cfg)?,
        })
    };
    // SAFETY: the caller's promise on `out`.
    unsafe { construct(out, make) }
}

/// Release a handle. NULL is fine. A shared budget stays in its region.
///
/// # Safety
/// `budget` is NULL or a handle from this library not freed yet; no other thread
/// may use it during or after this call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_retry_budget_free(budget: *mut seawall_retry_budget) {
    // SAFETY: the caller's promise.
    unsafe { destroy(budget) };
}

/// Create or attach the retry budget `name` shared by every process of the host
/// (`/dev/shm/seawall-retry-budget-<name>`), as `seawall_breaker_open_shared`
/// does for breakers: one creator, the others attach without changing
/// anything; another configuration is `SEAWALL_STATUS_CONFIG_MISMATCH`.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string; `config` and `out` as in
/// `seawall_retry_budget_new`. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_retry_budget_open_shared(
    name: *const c_char,
    config: *const seawall_retry_budget_config,
    out: *mut *mut seawall_retry_budget,
) -> seawall_status {
    let make = || {
        // SAFETY: the caller's promise on `name` and `config`.
        let (name, cfg) = unsafe { (name_arg(name)?, core_config(arg(config, "config")?)?) };
        Ok(seawall_retry_budget {
            inner: RetryBudget::open_shared(name, &cfg, &shared_options())?,
        })
    };
    // SAFETY: the caller's promise on `out`.
    unsafe { construct(out, make) }
}

/// Remove the shared retry budget `name` (a missing one is fine).
///
/// # Safety
/// `name` is NULL or a NUL-terminated string. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_retry_budget_unlink_shared(name: *const c_char) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `name`.
        RetryBudget::unlink_shared(unsafe { name_arg(name) }?)?;
        Ok(seawall_status::Ok)
    })
}

/// Bytes of memory `seawall_retry_budget_init_in` needs.
///
/// # Safety
/// Always safe to call.
#[unsafe(no_mangle)]
pub extern "C" fn seawall_retry_budget_size() -> usize {
    RetryBudget::region_size()
}

/// Alignment (bytes) of memory for `seawall_retry_budget_init_in`.
///
/// # Safety
/// Always safe to call.
#[unsafe(no_mangle)]
pub extern "C" fn seawall_retry_budget_align() -> usize {
    RetryBudget::region_align()
}

/// Build a retry budget in memory the caller brings (`len` bytes at `mem`,
/// aligned to `seawall_retry_budget_align()`, at least
/// `seawall_retry_budget_size()` long, else `SEAWALL_STATUS_BAD_REGION`).
///
/// # Safety
/// `mem` is NULL or valid for reads and writes of `len` bytes until every handle
/// on it is freed, and used by no one else during this call; `config` and `out`
/// as in `seawall_retry_budget_new`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_retry_budget_init_in(
    mem: *mut c_void,
    len: usize,
    config: *const seawall_retry_budget_config,
    out: *mut *mut seawall_retry_budget,
) -> seawall_status {
    let make = || {
        let mem = mem_arg(mem)?;
        // SAFETY: the caller's promise on `config`.
        let cfg = core_config(unsafe { arg(config, "config") }?)?;
        Ok(seawall_retry_budget {
            // SAFETY: the caller's promise on `mem` and `len`.
            inner: unsafe { RetryBudget::init_in(mem, len, &cfg) }?,
        })
    };
    // SAFETY: the caller's promise on `out`.
    unsafe { construct(out, make) }
}

/// Attach to a retry budget `seawall_retry_budget_init_in` built in this memory.
/// Changes nothing; errors as for `seawall_semaphore_attach`.
///
/// # Safety
/// `mem` is NULL or valid for reads and writes of `len` bytes until the handle is
/// freed, and holds a region `seawall_*_init_in` built or anything whose header
/// fails the checks; `out` as in `seawall_retry_budget_new`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_retry_budget_attach(
    mem: *mut c_void,
    len: usize,
    out: *mut *mut seawall_retry_budget,
) -> seawall_status {
    let make = || {
        let mem = mem_arg(mem)?;
        Ok(seawall_retry_budget {
            // SAFETY: the caller's promise on `mem` and `len`.
            inner: unsafe { RetryBudget::attach(mem, len) }?,
        })
    };
    // SAFETY: the caller's promise on `out`.
    unsafe { construct(out, make) }
}

/// `*out = true` when this handle created (initialised) its budget.
///
/// # Safety
/// `budget` is NULL or a live handle; `out` is NULL or writable. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_retry_budget_created(
    budget: *const seawall_retry_budget,
    out: *mut bool,
) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `budget`.
        let b = unsafe { handle(budget) }?;
        let o = self::out(out, "out")?;
        // SAFETY: checked non-NULL, writable per the caller.
        unsafe { put(o, b.created()) };
        Ok(seawall_status::Ok)
    })
}

/// The configuration the budget runs with (for a shared one, its creator's).
///
/// # Safety
/// `budget` is NULL or a live handle; `out` is NULL or writable. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_retry_budget_get_config(
    budget: *const seawall_retry_budget,
    out: *mut seawall_retry_budget_config,
) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `budget`.
        let b = unsafe { handle(budget) }?;
        let o = self::out(out, "out")?;
        // SAFETY: checked non-NULL, writable per the caller.
        unsafe { put(o, c_config(b.config())) };
        Ok(seawall_status::Ok)
    })
}

/// An original request starts at `now_ns`: deposit `percent_can_retry` of a
/// retry. Lock-free, no allocation.
///
/// # Safety
/// `budget` is NULL or a live handle. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_retry_budget_deposit(
    budget: *const seawall_retry_budget,
    now_ns: u64,
) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `budget`.
        unsafe { handle(budget) }?.deposit_checked(now_ns)?;
        Ok(seawall_status::Ok)
    })
}

/// A retry wants to start at `now_ns`: `*out_allowed = true` when the balance
/// covered one retry and it was withdrawn, in one atomic step (two racing retries
/// never both spend the last one); `false` when the budget is spent (nothing
/// withdrawn). Lock-free, no allocation.
///
/// # Safety
/// `budget` is NULL or a live handle; `out_allowed` is NULL or writable.
/// Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_retry_budget_try_withdraw(
    budget: *const seawall_retry_budget,
    now_ns: u64,
    out_allowed: *mut bool,
) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `budget`.
        let b = unsafe { handle(budget) }?;
        let o = out(out_allowed, "out_allowed")?;
        // SAFETY: checked non-NULL, writable per the caller.
        unsafe { put(o, b.try_withdraw_checked(now_ns)?) };
        Ok(seawall_status::Ok)
    })
}

/// What the budget holds as of `now_ns`: requests and retries in the window, the
/// balance. Reading changes nothing.
///
/// # Safety
/// `budget` is NULL or a live handle; `out` is NULL or writable. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_retry_budget_balance(
    budget: *const seawall_retry_budget,
    now_ns: u64,
    out: *mut seawall_retry_budget_snapshot,
) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `budget`.
        let b = unsafe { handle(budget) }?;
        let o = self::out(out, "out")?;
        let s = b.snapshot(now_ns);
        let snap = seawall_retry_budget_snapshot {
            requests: s.requests,
            retries: s.retries,
            balance_ppm: s.balance_ppm,
            available: s.available(),
        };
        // SAFETY: checked non-NULL, writable per the caller.
        unsafe { put(o, snap) };
        Ok(seawall_status::Ok)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_config_is_the_design_default() {
        let c = seawall_retry_budget_config_default();
        // DESIGN §4: ttl 10 s, 10 retries per second, 20 %.
        assert_eq!(c.ttl_ns, 10_000_000_000);
        assert_eq!(c.min_retries_per_sec, 10);
        assert_eq!(c.percent_can_retry_ppm, 200_000);
        assert_eq!(c_config(&core_config(&c).unwrap()), c);
    }
}
