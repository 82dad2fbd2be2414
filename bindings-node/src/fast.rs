//! The hot-path functions, as raw Node-API callbacks.
//!
//! napi-derive wraps every function that takes arguments in a borrow scope (a
//! thread-local push and pop, for its async and class machinery) that costs about
//! 70 ns per call on Node 20, several times what the core does. The few
//! functions a protected call goes through (breaker acquire / record, bulkhead
//! acquire / release, budget deposit, throttle success, rate limiter take) take only numbers and
//! return one, so they are written here directly against Node-API:
//! `napi_get_cb_info`, `napi_get_value_double` per argument, the Rust body, and
//! `napi_create_double`, or a thrown `Error` whose `code` is the failure's
//! (`crate::boundary::Code`: `EHANDLE`, `EPERMIT`; `EINVALIDARG` for a
//! non-number argument). A panic never crosses into Node (`EPANIC`).
//!
//! [`fast_functions`] hands them to JavaScript once, as one object.

use std::ffi::{CString, c_char};
use std::ptr;

use napi::bindgen_prelude::{Env, Result, Unknown};

use crate::boundary::Code;
use napi::sys;
use napi_derive::napi;

/// Throw an `Error` with `code` and `message`; returns the "no value" Node-API
/// expects after a throw.
fn throw(env: sys::napi_env, code: &str, message: &str) -> sys::napi_value {
    let code = CString::new(code).unwrap_or_default();
    let message = CString::new(message).unwrap_or_default();
    // SAFETY: `env` is the environment of the running callback; both strings
    // are NUL-terminated and live across the call.
    unsafe { sys::napi_throw_error(env, code.as_ptr(), message.as_ptr()) };
    ptr::null_mut()
}

/// Throw a failure of this addon with its code, and the `field` of an invalid
/// option (as `boundary::thrown` does for the functions napi-rs wraps).
fn throw_error(env: sys::napi_env, e: &crate::boundary::Error) -> sys::napi_value {
    let Code::InvalidConfig(field) = e.status else {
        return throw(env, e.status.as_str(), &e.reason);
    };
    let built = (|| {
        let mut code = ptr::null_mut();
        let mut message = ptr::null_mut();
        let mut name = ptr::null_mut();
        let mut error = ptr::null_mut();
        let text = |s: &str, out: &mut sys::napi_value| {
            // SAFETY: `env` is the running callback's; the bytes and length
            // describe a live UTF-8 string; `out` is writable.
            unsafe {
                sys::napi_create_string_utf8(env, s.as_ptr().cast(), s.len().cast_signed(), out)
            }
        };
        let ok = sys::Status::napi_ok;
        if text(e.status.as_str(), &mut code) != ok
            || text(&e.reason, &mut message) != ok
            || text(field, &mut name) != ok
        {
            return None;
        }
        // SAFETY: `code` and `message` are strings of this scope; `error` is writable.
        if unsafe { sys::napi_create_error(env, code, message, &raw mut error) } != ok {
            return None;
        }
        let key = c"field";
        // SAFETY: `error` is an object of this scope, `key` NUL-terminated.
        if unsafe { sys::napi_set_named_property(env, error, key.as_ptr(), name) } != ok {
            return None;
        }
        Some(error)
    })();
    match built {
        // SAFETY: `error` is a value of this scope; throwing it ends the callback.
        Some(error) => unsafe {
            sys::napi_throw(env, error);
            ptr::null_mut()
        },
        None => throw(env, e.status.as_str(), &e.reason),
    }
}

/// Read up to `N` number arguments of the running callback.
///
/// # Safety
/// `env` and `info` must be the running callback's.
unsafe fn numbers<const N: usize>(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> Option<[f64; N]> {
    let mut count = N;
    let mut argv = [ptr::null_mut(); N];
    // SAFETY: `argv` has room for `count` values; Node fills missing ones with
    // `undefined`; `this` and data are not asked for.
    let status = unsafe {
        sys::napi_get_cb_info(
            env,
            info,
            &raw mut count,
            argv.as_mut_ptr(),
            ptr::null_mut(),
            ptr::null_mut(),
        )
    };
    if status != sys::Status::napi_ok {
        return None;
    }
    let mut out = [0.0; N];
    for (v, slot) in argv.iter().zip(out.iter_mut()) {
        // SAFETY: `v` is a live value of this callback's scope; `slot` is writable.
        if unsafe { sys::napi_get_value_double(env, *v, slot) } != sys::Status::napi_ok {
            return None;
        }
    }
    Some(out)
}

/// A Node-API callback taking `$n` numbers and returning one.
macro_rules! fast {
    ($name:ident, [$($a:ident),*], $body:expr) => {
        unsafe extern "C" fn $name(
            env: sys::napi_env,
            info: sys::napi_callback_info,
        ) -> sys::napi_value {
            const N: usize = [$(stringify!($a)),*].len();
            // SAFETY: called by Node as the callback it was registered as.
            let Some([$($a),*]) = (unsafe { numbers::<N>(env, info) }) else {
                return throw(env, Code::InvalidArg.as_str(), "seawall: expected number arguments");
            };
            let result = std::panic::catch_unwind(move || -> crate::boundary::Result<f64> { $body });
            match result {
                Ok(Ok(v)) => {
                    let mut out = ptr::null_mut();
                    // SAFETY: `env` is live; `out` is writable.
                    unsafe { sys::napi_create_double(env, v, &raw mut out) };
                    out
                }
                Ok(Err(e)) => throw_error(env, &e),
                Err(_) => throw(env, Code::Panic.as_str(), "seawall: internal error (panic)"),
            }
        }
    };
}

fast!(breaker_acquire, [h], crate::breaker::breaker_acquire(h));
fast!(breaker_record, [h, code, outcome, duration_ms], {
    crate::breaker::breaker_record(h, code, crate::convert::count(outcome), duration_ms)
});
fast!(breaker_record_successes, [h, code, n], {
    crate::breaker::breaker_record_successes(h, code, n)
});
fast!(
    breaker_state_word,
    [h],
    crate::breaker::breaker_state_word(h)
);
fast!(semaphore_acquire, [h, priority, wait], {
    crate::bulkhead::semaphore_acquire(h, crate::convert::count(priority), wait != 0.0)
});
fast!(semaphore_release, [h, head], {
    crate::bulkhead::semaphore_release(h, head).map(f64::from)
});
fast!(semaphore_poll, [h, ticket], {
    crate::bulkhead::semaphore_poll(h, ticket).map(f64::from)
});
fast!(semaphore_cancel, [h, ticket], {
    crate::bulkhead::semaphore_cancel(h, ticket).map(f64::from)
});
fast!(retry_budget_deposit, [h], {
    crate::retry::retry_budget_deposit(h, None).map(|()| 0.0)
});
fast!(rate_limiter_take, [h, n], {
    crate::rate_limiter::rate_limiter_take(h, n, None)
});
fast!(retry_throttle_record_success, [h], {
    crate::retry::retry_throttle_record_success(h).map(|()| 0.0)
});

type Callback = unsafe extern "C" fn(sys::napi_env, sys::napi_callback_info) -> sys::napi_value;

const FAST: &[(&str, Callback)] = &[
    ("breakerAcquire", breaker_acquire),
    ("breakerRecord", breaker_record),
    ("breakerRecordSuccesses", breaker_record_successes),
    ("breakerStateWord", breaker_state_word),
    ("semaphoreAcquire", semaphore_acquire),
    ("semaphoreRelease", semaphore_release),
    ("semaphorePoll", semaphore_poll),
    ("semaphoreCancel", semaphore_cancel),
    ("retryBudgetDeposit", retry_budget_deposit),
    ("retryThrottleRecordSuccess", retry_throttle_record_success),
    ("rateLimiterTake", rate_limiter_take),
];

/// The hot-path functions, as one object (see the module docs):
/// `breakerAcquire(h)`, `breakerRecord(h, permit, outcome, durationMs)`,
/// `breakerRecordSuccesses(h, permit, n)`,
/// `breakerStateWord(h)`, `semaphoreAcquire(h, priority, wait)`,
/// `semaphoreRelease(h, head)`, `semaphorePoll(h, ticket)`,
/// `semaphoreCancel(h, ticket)`, `retryBudgetDeposit(h)`,
/// `retryThrottleRecordSuccess(h)`, `rateLimiterTake(h, n)`.
#[napi(ts_return_type = "Record<string, (...args: number[]) => number>")]
pub fn fast_functions(env: &Env) -> Result<Unknown<'_>> {
    let raw_env = env.raw();
    let mut obj = ptr::null_mut();
    // SAFETY: `raw_env` is this call's environment; `obj` is writable.
    check(unsafe { sys::napi_create_object(raw_env, &raw mut obj) })?;
    for (name, cb) in FAST {
        let cname = CString::new(*name).unwrap_or_default();
        let mut f = ptr::null_mut();
        // SAFETY: the name is NUL-terminated (length given too); `cb` is a valid
        // callback for the life of the addon; no data pointer.
        check(unsafe {
            sys::napi_create_function(
                raw_env,
                cname.as_ptr().cast::<c_char>(),
                name.len().cast_signed(),
                Some(*cb),
                ptr::null_mut(),
                &raw mut f,
            )
        })?;
        // SAFETY: `obj` and `f` are live values of this call's scope.
        check(unsafe { sys::napi_set_named_property(raw_env, obj, cname.as_ptr(), f) })?;
    }
    // SAFETY: `obj` is a live object of this call's scope.
    Ok(unsafe { Unknown::from_raw_unchecked(raw_env, obj) })
}

fn check(status: sys::napi_status) -> Result<()> {
    if status == sys::Status::napi_ok {
        Ok(())
    } else {
        Err(napi::Error::from_reason(format!(
            "Node-API call failed with status {status}"
        )))
    }
}
