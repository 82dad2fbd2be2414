//! `seawall_deadline`: deadline budgets (DESIGN §6) through the C ABI. A deadline
//! is plain data the caller keeps (no handle, nothing to free).

use seawall_core::Deadline;

use super::{Failure, arg, guard, out, put, seawall_status};

/// A time budget: from `start_ns` to `end_ns` of the monotonic clock. Plain data:
/// copy it with the request it belongs to. Made by `seawall_deadline_start` or
/// `seawall_deadline_child`; `end_ns ≥ start_ns` always.
#[allow(non_camel_case_types, reason = "C type name")]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct seawall_deadline {
    /// When the budget started (ns).
    pub start_ns: u64,
    /// When it runs out (ns); `UINT64_MAX` for a budget that never does.
    pub end_ns: u64,
}

fn to_c(d: Deadline) -> seawall_deadline {
    seawall_deadline {
        start_ns: d.start(),
        end_ns: d.end(),
    }
}

fn to_core(d: &seawall_deadline) -> Result<Deadline, Failure> {
    if d.end_ns < d.start_ns {
        return Err(Failure::new(
            seawall_status::InvalidArgument,
            format_args!(
                "invalid deadline: ends ({}) before it starts ({})",
                d.end_ns, d.start_ns
            ),
        ));
    }
    // `new` saturates, so `start + (end - start)` is exactly `end`.
    Ok(Deadline::new(d.end_ns - d.start_ns, d.start_ns))
}

/// Start a budget of `total_ns` (≥ 1) at `now_ns` into `*out`. The end saturates
/// at `UINT64_MAX`. A zero budget is `SEAWALL_STATUS_INVALID_CONFIG`
/// ("deadline.total").
///
/// # Safety
/// `out` is NULL or writable. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_deadline_start(
    total_ns: u64,
    now_ns: u64,
    out: *mut seawall_deadline,
) -> seawall_status {
    guard(|| {
        let o = self::out(out, "out")?;
        let d = Deadline::try_new(total_ns, now_ns)?;
        // SAFETY: checked non-NULL, writable per the caller.
        unsafe { put(o, to_c(d)) };
        Ok(seawall_status::Ok)
    })
}

/// Nanoseconds left at `now_ns`, saturating at 0 (a `now_ns` before the start
/// counts as the start).
///
/// # Safety
/// `deadline` is NULL or readable; `out_ns` is NULL or writable. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_deadline_remaining(
    deadline: *const seawall_deadline,
    now_ns: u64,
    out_ns: *mut u64,
) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `deadline`.
        let d = to_core(unsafe { arg(deadline, "deadline") }?)?;
        let o = out(out_ns, "out_ns")?;
        // SAFETY: checked non-NULL, writable per the caller.
        unsafe { put(o, d.remaining(now_ns)) };
        Ok(seawall_status::Ok)
    })
}

/// `*out = true` when nothing remains at `now_ns` (from exactly `end_ns` on).
///
/// # Safety
/// `deadline` is NULL or readable; `out` is NULL or writable. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_deadline_expired(
    deadline: *const seawall_deadline,
    now_ns: u64,
    out: *mut bool,
) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `deadline`.
        let d = to_core(unsafe { arg(deadline, "deadline") }?)?;
        let o = self::out(out, "out")?;
        // SAFETY: checked non-NULL, writable per the caller.
        unsafe { put(o, d.expired(now_ns)) };
        Ok(seawall_status::Ok)
    })
}

/// How much of the budget one step may use: `min(max_ns, remaining(now_ns))`.
///
/// # Safety
/// `deadline` is NULL or readable; `out_ns` is NULL or writable. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_deadline_allocate(
    deadline: *const seawall_deadline,
    max_ns: u64,
    now_ns: u64,
    out_ns: *mut u64,
) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `deadline`.
        let d = to_core(unsafe { arg(deadline, "deadline") }?)?;
        let o = out(out_ns, "out_ns")?;
        // SAFETY: checked non-NULL, writable per the caller.
        unsafe { put(o, d.allocate(max_ns, now_ns)) };
        Ok(seawall_status::Ok)
    })
}

/// A child budget of at most `total_ns` starting at `now_ns` that never outlives
/// `parent`, into `*out`.
///
/// # Safety
/// `parent` is NULL or readable; `out` is NULL or writable (it may be the same
/// object as `parent`). Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_deadline_child(
    parent: *const seawall_deadline,
    total_ns: u64,
    now_ns: u64,
    out: *mut seawall_deadline,
) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `parent`; copied out before `out` is written.
        let p = to_core(unsafe { arg(parent, "parent") }?)?;
        let o = self::out(out, "out")?;
        // SAFETY: checked non-NULL, writable per the caller.
        unsafe { put(o, to_c(p.child(total_ns, now_ns))) };
        Ok(seawall_status::Ok)
    })
}
