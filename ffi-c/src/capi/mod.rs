//! The exported C functions and types (`include/seawall.h` is generated from this
//! module by cbindgen).
//!
//! Every exported function runs its body inside [`guard`]: a Rust panic never
//! crosses into C, it becomes [`seawall_status::Panic`]. Every pointer argument is
//! checked for NULL. A failing call stores a human-readable reason that
//! `seawall_last_error_message()` returns on the same thread.

pub mod backoff;
pub mod breaker;
pub mod common;
pub mod deadline;
pub mod health;
pub mod rate_limiter;
pub mod retry_budget;
pub mod retry_throttle;
pub mod semaphore;

use core::ffi::c_void;
use core::fmt::Display;
use core::ptr::NonNull;
use std::cell::RefCell;
use std::ffi::{CStr, CString, c_char};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Duration;

use seawall_core::{ConfigError, Corrupt};

use seawall_host::shared::{OpenOptions, RegionError};

/// What every fallible function returns. The values are part of the ABI: they
/// never change and are never reused; new codes are appended.
#[allow(non_camel_case_types, reason = "C type name")]
#[repr(i32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum seawall_status {
    /// Success.
    Ok = 0,
    /// A required pointer argument was NULL (the message names it).
    NullArgument = 1,
    /// A configuration value is invalid (the message names the field).
    InvalidConfig = 2,
    /// Not an error: the breaker or semaphore refused the call (see
    /// `seawall_rejection`, `seawall_semaphore_rejection`), or the rate limiter
    /// is over its rate (see its `out_retry_after_ns`).
    Rejected = 3,
    /// The permit was recorded (breaker) or released (semaphore) already, or was
    /// not issued by this breaker or semaphore.
    PermitAlreadyUsed = 4,
    /// Header and library, or a shared region and this library, disagree on the
    /// ABI version or on a structure's layout.
    AbiMismatch = 5,
    /// The OS refused a file or mapping operation (the message has its reason).
    IoError = 6,
    /// An internal error was caught at the boundary; nothing was changed halfway
    /// (please report it).
    Panic = 7,
    /// An argument other than a configuration is invalid: an unknown outcome, a
    /// bad region name, an altered or foreign permit, a deadline ending before it
    /// starts.
    InvalidArgument = 8,
    /// The shared region exists with another configuration or window kind.
    ConfigMismatch = 9,
    /// Caller memory for a region is too small or misaligned.
    BadRegion = 10,
    /// The memory holds no initialised seawall region.
    NotARegion = 11,
    /// Another process created the shared region but did not finish in time.
    Timeout = 12,
    /// This machine has no native lock-free 64/128-bit atomics, so nothing can
    /// be shared between processes.
    NotLockFree = 13,
    /// All `SEAWALL_BREAKER_MAX_PERMITS` permits of the breaker are outstanding;
    /// the admission was given back as ignored. (A semaphore's holder table has
    /// a slot for every permit and ticket; only scans racing many others could
    /// miss a free one three times over, and then the admission is undone.)
    PermitsExhausted = 14,
    /// Not an error: no permit now; the caller waits in the semaphore's queue
    /// with the ticket written out (poll it until granted, or cancel it).
    Queued = 15,
    /// Not an error: the ticket still waits; poll it again later.
    Waiting = 16,
    /// Not an error: the waiter left the queue without a permit.
    Cancelled = 17,
    /// Not an error: a permit reached the ticket in the same instant it was
    /// cancelled; it was passed on to the next waiter or back to the pool.
    PassedOn = 18,
    /// The ticket is not waiting: already granted and taken by a poll,
    /// cancelled, reclaimed, or not issued by this semaphore. Nothing changed.
    UnknownTicket = 19,
    /// Not an error: a blocking acquire waited its whole timeout and left the
    /// queue; nothing is held.
    WaitTimedOut = 20,
    /// The file at a shared region's path is not one this user may trust: a
    /// symbolic link, not a regular file, owned by another user (the message
    /// gives its uid), open to group or others, or of the wrong size (DESIGN §8).
    /// Nothing in it was read or changed.
    RegionUntrusted = 21,
    /// The structure in a shared region holds values seawall never writes (an
    /// index out of range, an invalid configuration field, a word that kept a
    /// retry loop going past its bound of 2^20 passes): another process wrote
    /// to it, or it was damaged. The call stopped without touching memory outside
    /// the region; what it had done before is unspecified (DESIGN §8). Recreate
    /// the region.
    RegionCorrupt = 22,
}

impl seawall_status {
    /// The C name of the code.
    #[must_use]
    pub const fn c_name(self) -> &'static CStr {
        match self {
            Self::Ok => c"SEAWALL_STATUS_OK",
            Self::NullArgument => c"SEAWALL_STATUS_NULL_ARGUMENT",
            Self::InvalidConfig => c"SEAWALL_STATUS_INVALID_CONFIG",
            Self::Rejected => c"SEAWALL_STATUS_REJECTED",
            Self::PermitAlreadyUsed => c"SEAWALL_STATUS_PERMIT_ALREADY_USED",
            Self::AbiMismatch => c"SEAWALL_STATUS_ABI_MISMATCH",
            Self::IoError => c"SEAWALL_STATUS_IO_ERROR",
            Self::Panic => c"SEAWALL_STATUS_PANIC",
            Self::InvalidArgument => c"SEAWALL_STATUS_INVALID_ARGUMENT",
            Self::ConfigMismatch => c"SEAWALL_STATUS_CONFIG_MISMATCH",
            Self::BadRegion => c"SEAWALL_STATUS_BAD_REGION",
            Self::NotARegion => c"SEAWALL_STATUS_NOT_A_REGION",
            Self::Timeout => c"SEAWALL_STATUS_TIMEOUT",
            Self::NotLockFree => c"SEAWALL_STATUS_NOT_LOCK_FREE",
            Self::PermitsExhausted => c"SEAWALL_STATUS_PERMITS_EXHAUSTED",
            Self::Queued => c"SEAWALL_STATUS_QUEUED",
            Self::Waiting => c"SEAWALL_STATUS_WAITING",
            Self::Cancelled => c"SEAWALL_STATUS_CANCELLED",
            Self::PassedOn => c"SEAWALL_STATUS_PASSED_ON",
            Self::UnknownTicket => c"SEAWALL_STATUS_UNKNOWN_TICKET",
            Self::WaitTimedOut => c"SEAWALL_STATUS_WAIT_TIMED_OUT",
            Self::RegionUntrusted => c"SEAWALL_STATUS_REGION_UNTRUSTED",
            Self::RegionCorrupt => c"SEAWALL_STATUS_REGION_CORRUPT",
        }
    }

    /// Every code, in value order.
    pub(crate) const ALL: [Self; 23] = [
        Self::Ok,
        Self::NullArgument,
        Self::InvalidConfig,
        Self::Rejected,
        Self::PermitAlreadyUsed,
        Self::AbiMismatch,
        Self::IoError,
        Self::Panic,
        Self::InvalidArgument,
        Self::ConfigMismatch,
        Self::BadRegion,
        Self::NotARegion,
        Self::Timeout,
        Self::NotLockFree,
        Self::PermitsExhausted,
        Self::Queued,
        Self::Waiting,
        Self::Cancelled,
        Self::PassedOn,
        Self::UnknownTicket,
        Self::WaitTimedOut,
        Self::RegionUntrusted,
        Self::RegionCorrupt,
    ];
}

/// A failed call: the status to return and the message to keep.
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) status: seawall_status,
    pub(crate) message: String,
}

impl Failure {
    pub(crate) fn new(status: seawall_status, message: impl Display) -> Self {
        Self {
            status,
            message: message.to_string(),
        }
    }

    /// A `reserved` field that is not zero: refused rather than ignored, so a
    /// caller built against a later header that gives it a meaning learns at
    /// once that this library does not know it (DESIGN §8).
    pub(crate) fn reserved(value: u32, field: &str) -> Result<(), Self> {
        if value == 0 {
            Ok(())
        } else {
            Err(Self::new(
                seawall_status::InvalidArgument,
                format_args!("{field} is reserved and must be 0, got {value}"),
            ))
        }
    }

    pub(crate) fn null(argument: &str) -> Self {
        Self::new(
            seawall_status::NullArgument,
            format_args!("{argument} is NULL"),
        )
    }
}

impl From<ConfigError> for Failure {
    fn from(e: ConfigError) -> Self {
        Self::new(seawall_status::InvalidConfig, e)
    }
}

impl From<Corrupt> for Failure {
    fn from(e: Corrupt) -> Self {
        Self::new(seawall_status::RegionCorrupt, e)
    }
}

impl From<RegionError> for Failure {
    fn from(e: RegionError) -> Self {
        use seawall_status as S;
        let status = match &e {
            RegionError::Config(_) => S::InvalidConfig,
            RegionError::BadName(_) => S::InvalidArgument,
            RegionError::Io { .. } => S::IoError,
            RegionError::NotLockFree => S::NotLockFree,
            RegionError::Misaligned { .. } | RegionError::TooSmall { .. } => S::BadRegion,
            RegionError::NotARegion(_) => S::NotARegion,
            RegionError::VersionMismatch(_) => S::AbiMismatch,
            RegionError::LayoutMismatch { .. } | RegionError::ConfigMismatch { .. } => {
                S::ConfigMismatch
            }
            RegionError::Timeout { .. } => S::Timeout,
            RegionError::Untrusted { .. } => S::RegionUntrusted,
        };
        Self::new(status, e)
    }
}

/// The result of a body: the status to return (OK or REJECTED), or a failure.
pub(crate) type Outcome = Result<seawall_status, Failure>;

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

pub(crate) fn set_last_error(message: &str) {
    let c = CString::new(message.replace('\0', "\\0")).unwrap_or_default();
    // During thread teardown the slot may be gone: then there is no one to tell.
    let _ = LAST_ERROR.try_with(|e| *e.borrow_mut() = c);
}

pub(crate) fn last_error_ptr() -> *const c_char {
    LAST_ERROR
        .try_with(|e| e.borrow().as_ptr())
        .unwrap_or(c"".as_ptr())
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    let what = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("unknown panic");
    format!("internal error (panic caught at the C boundary): {what}")
}

/// Run an exported function's body: failures set the last error message, and a
/// panic becomes [`seawall_status::Panic`] instead of unwinding into C.
pub(crate) fn guard(body: impl FnOnce() -> Outcome) -> seawall_status {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(status)) => status,
        Ok(Err(f)) => {
            set_last_error(&f.message);
            f.status
        }
        Err(payload) => {
            set_last_error(&panic_message(payload.as_ref()));
            seawall_status::Panic
        }
    }
}

/// [`guard`] for functions that return a value instead of a status: a panic
/// returns `fallback` (and sets the last error message).
pub(crate) fn guard_value<R>(fallback: R, body: impl FnOnce() -> R) -> R {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|payload| {
        set_last_error(&panic_message(payload.as_ref()));
        fallback
    })
}

/// Borrow a pointer argument, or fail naming it when NULL.
///
/// # Safety
/// `p` is NULL or valid for reads of a `T` for `'a`.
pub(crate) unsafe fn arg<'a, T>(p: *const T, name: &str) -> Result<&'a T, Failure> {
    // SAFETY: the caller's promise.
    unsafe { p.as_ref() }.ok_or_else(|| Failure::null(name))
}

/// Check an output pointer argument for NULL.
pub(crate) fn out<T>(p: *mut T, name: &str) -> Result<NonNull<T>, Failure> {
    NonNull::new(p).ok_or_else(|| Failure::null(name))
}

/// Store a result through a checked output pointer.
///
/// # Safety
/// `p` is valid for writes of a `T` (the C caller's promise).
pub(crate) unsafe fn put<T>(p: NonNull<T>, value: T) {
    // SAFETY: the caller's promise; `write` does not read or drop the old value.
    unsafe { p.as_ptr().write(value) }
}

/// Store through an optional output pointer: NULL means "not wanted".
///
/// # Safety
/// `p` is NULL or valid for writes of a `T` (the C caller's promise).
pub(crate) unsafe fn put_opt<T>(p: *mut T, value: T) {
    if let Some(p) = NonNull::new(p) {
        // SAFETY: non-NULL, writable per the caller.
        unsafe { put(p, value) };
    }
}

/// Read a region name argument.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string.
pub(crate) unsafe fn name_arg<'a>(name: *const c_char) -> Result<&'a str, Failure> {
    if name.is_null() {
        return Err(Failure::null("name"));
    }
    // SAFETY: non-NULL and NUL-terminated (the caller's promise).
    let c = unsafe { CStr::from_ptr(name) };
    c.to_str().map_err(|_| {
        Failure::new(
            seawall_status::InvalidArgument,
            "invalid region name: not UTF-8",
        )
    })
}

/// Caller memory for a region: non-NULL.
pub(crate) fn mem_arg(mem: *mut c_void) -> Result<NonNull<u8>, Failure> {
    NonNull::new(mem.cast::<u8>()).ok_or_else(|| Failure::null("mem"))
}

/// How long `open_shared` waits for another process that is creating the region:
/// `SEAWALL_SHM_TIMEOUT_MS` from the environment, else 2000 ms.
pub(crate) fn shared_options() -> OpenOptions {
    let mut o = OpenOptions::default();
    if let Some(ms) = std::env::var("SEAWALL_SHM_TIMEOUT_MS")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
    {
        o.init_timeout = Duration::from_millis(ms);
    }
    o
}

/// Check a constructor's `out` argument and set `*out = NULL` until success.
///
/// # Safety
/// `out_ptr` is NULL or valid for writing a pointer.
pub(crate) unsafe fn out_handle<H>(out_ptr: *mut *mut H) -> Result<NonNull<*mut H>, Failure> {
    let o = out(out_ptr, "out")?;
    // SAFETY: the caller's promise.
    unsafe { put(o, core::ptr::null_mut()) };
    Ok(o)
}

/// The body of every constructor: `*out = NULL`, then `make` the handle and hand
/// it to C (it owns it until the matching `_free`).
///
/// # Safety
/// `out_ptr` is NULL or valid for writing a pointer.
pub(crate) unsafe fn construct<H>(
    out_ptr: *mut *mut H,
    make: impl FnOnce() -> Result<H, Failure>,
) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `out_ptr`.
        let o = unsafe { out_handle(out_ptr) }?;
        let raw = Box::into_raw(Box::new(make()?));
        // SAFETY: checked non-NULL, writable per the caller.
        unsafe { put(o, raw) };
        Ok(seawall_status::Ok)
    })
}

/// The body of every `_free`: drop a handle made by [`construct`]; NULL is fine.
///
/// # Safety
/// `h` is NULL or a live handle from [`construct`], given back exactly once, used
/// by no other thread during or after this call.
pub(crate) unsafe fn destroy<H>(h: *mut H) {
    guard_value((), || {
        if !h.is_null() {
            // SAFETY: made by `Box::into_raw` in `construct`, given back once
            // (the caller's promise).
            drop(unsafe { Box::from_raw(h) });
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    fn last_error() -> String {
        // SAFETY: a NUL-terminated string kept alive by this thread's slot.
        unsafe { CStr::from_ptr(last_error_ptr()) }
            .to_str()
            .unwrap()
            .to_owned()
    }

    #[test]
    fn a_panic_becomes_a_status_and_a_message() {
        let s = guard(|| panic!("boom {}", 42));
        assert_eq!(s, seawall_status::Panic);
        assert_eq!(
            last_error(),
            "internal error (panic caught at the C boundary): boom 42"
        );
        let v = guard_value(7u32, || panic!("static message"));
        assert_eq!(v, 7);
        assert_eq!(
            last_error(),
            "internal error (panic caught at the C boundary): static message"
        );
    }

    #[test]
    fn failures_set_the_message_and_successes_leave_it() {
        let s = guard(|| Err(Failure::null("thing")));
        assert_eq!(s, seawall_status::NullArgument);
        assert_eq!(last_error(), "thing is NULL");
        assert_eq!(
            guard(|| Ok(seawall_status::Rejected)),
            seawall_status::Rejected
        );
        assert_eq!(last_error(), "thing is NULL");
        // An interior NUL cannot end the C string early.
        let _ = guard(|| Err(Failure::new(seawall_status::InvalidArgument, "a\0b")));
        assert_eq!(last_error(), "a\\0b");
    }
}
