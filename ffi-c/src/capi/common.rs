//! Versions, the ABI check, the clock and error reporting.

use std::ffi::c_char;

use super::{Failure, guard, guard_value, last_error_ptr, seawall_status};
const ABI_VERSION: u32 = SEAWALL_ABI_VERSION;

/// Version of the ABI this header describes. Compare it with
/// `seawall_abi_version()` (or call `seawall_abi_check(SEAWALL_ABI_VERSION)`) at
/// start-up: the library and the header a program was compiled with must agree.
pub const SEAWALL_ABI_VERSION: u32 = 1;
/// Major version.
pub const SEAWALL_VERSION_MAJOR: u32 = 0;
/// Minor version.
pub const SEAWALL_VERSION_MINOR: u32 = 1;
/// Patch version.
pub const SEAWALL_VERSION_PATCH: u32 = 0;
/// "No value" in optional `uint64_t` fields: turns an optional configuration rule
/// off, and marks an absent output (no retry-after, no rate of an empty window).
pub const SEAWALL_NONE: u64 = u64::MAX;

const VERSION_C: &std::ffi::CStr = c"0.1.0";

/// The library version (`SEAWALL_VERSION` of the header it was built with), as a
/// static NUL-terminated string.
///
/// # Safety
/// Always safe to call, from any thread; the string is never freed.
#[unsafe(no_mangle)]
pub extern "C" fn seawall_version() -> *const c_char {
    VERSION_C.as_ptr()
}

/// The ABI version of the library (`SEAWALL_ABI_VERSION` of the header it was
/// built with).
///
/// # Safety
/// Always safe to call, from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn seawall_abi_version() -> u32 {
    ABI_VERSION
}

/// `SEAWALL_STATUS_OK` when the caller's header (`SEAWALL_ABI_VERSION`, passed as
/// `header_abi_version`) matches the library, else `SEAWALL_STATUS_ABI_MISMATCH`
/// with both numbers in the message.
///
/// # Safety
/// Always safe to call, from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn seawall_abi_check(header_abi_version: u32) -> seawall_status {
    guard(|| {
        if header_abi_version == ABI_VERSION {
            Ok(seawall_status::Ok)
        } else {
            Err(Failure::new(
                seawall_status::AbiMismatch,
                format_args!(
                    "program compiled against seawall.h ABI version {header_abi_version}, library is ABI version {ABI_VERSION}"
                ),
            ))
        }
    })
}

/// Nanoseconds of the OS monotonic clock (`CLOCK_MONOTONIC`, shared by every
/// process of the host): the `now_ns` every other function expects.
///
/// # Safety
/// Always safe to call, from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn seawall_now_ns() -> u64 {
    guard_value(0, seawall_host::clock::monotonic_ns)
}

/// Whether this machine can share structures between processes (native lock-free
/// 64- and 128-bit atomics). When false, every `_open_shared`, `_init_in` and
/// `_attach` returns `SEAWALL_STATUS_NOT_LOCK_FREE`.
///
/// # Safety
/// Always safe to call, from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn seawall_shared_supported() -> bool {
    guard_value(false, seawall_host::shared::native_atomics)
}

/// Why the last call on this thread failed: a NUL-terminated message ("" if none
/// failed yet). Set by every call that returns a status other than
/// `SEAWALL_STATUS_OK` and `SEAWALL_STATUS_REJECTED`, untouched by the others.
///
/// # Safety
/// Always safe to call. The string belongs to the library and stays valid on this
/// thread until the next failing seawall call on the same thread; copy it to keep
/// it. Do not free it.
#[unsafe(no_mangle)]
pub extern "C" fn seawall_last_error_message() -> *const c_char {
    guard_value(c"".as_ptr(), last_error_ptr)
}

/// The name of a status code (`"SEAWALL_STATUS_OK"`, ...), or `"unknown"` for a
/// value that is no status.
///
/// # Safety
/// Always safe to call; the string is static.
#[unsafe(no_mangle)]
pub extern "C" fn seawall_status_name(status: i32) -> *const c_char {
    guard_value(c"unknown".as_ptr(), || {
        seawall_status::ALL
            .iter()
            .find(|s| **s as i32 == status)
            .map_or(c"unknown".as_ptr(), |s| s.c_name().as_ptr())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    /// `SEAWALL_VERSION` as the header defines it: cbindgen cannot print a string
    /// constant, so it comes from `cbindgen.toml`, checked here.
    const SEAWALL_VERSION: &str = "0.1.0";

    #[test]
    fn version_constants_agree_with_the_crate() {
        assert_eq!(SEAWALL_VERSION, env!("CARGO_PKG_VERSION"));
        assert_eq!(VERSION_C.to_str().unwrap(), SEAWALL_VERSION);
        let v = format!("{SEAWALL_VERSION_MAJOR}.{SEAWALL_VERSION_MINOR}.{SEAWALL_VERSION_PATCH}");
        assert_eq!(v, SEAWALL_VERSION);
        assert_eq!(SEAWALL_ABI_VERSION, ABI_VERSION);
        let toml = include_str!("../../cbindgen.toml");
        let define = format!("#define SEAWALL_VERSION \"{SEAWALL_VERSION}\"");
        assert!(toml.contains(&define), "cbindgen.toml lacks {define}");
    }

    #[test]
    fn status_names_follow_their_values() {
        let name = |v: i32| {
            // SAFETY: seawall_status_name returns static NUL-terminated strings.
            unsafe { CStr::from_ptr(seawall_status_name(v)) }
                .to_str()
                .unwrap()
                .to_owned()
        };
        assert_eq!(name(0), "SEAWALL_STATUS_OK");
        assert_eq!(name(3), "SEAWALL_STATUS_REJECTED");
        assert_eq!(name(4), "SEAWALL_STATUS_PERMIT_ALREADY_USED");
        assert_eq!(name(7), "SEAWALL_STATUS_PANIC");
        assert_eq!(name(14), "SEAWALL_STATUS_PERMITS_EXHAUSTED");
        assert_eq!(name(15), "SEAWALL_STATUS_QUEUED");
        assert_eq!(name(18), "SEAWALL_STATUS_PASSED_ON");
        assert_eq!(name(20), "SEAWALL_STATUS_WAIT_TIMED_OUT");
        assert_eq!(name(21), "SEAWALL_STATUS_REGION_UNTRUSTED");
        assert_eq!(name(22), "SEAWALL_STATUS_REGION_CORRUPT");
        assert_eq!(name(23), "unknown");
        assert_eq!(name(-1), "unknown");
        for (i, s) in seawall_status::ALL.iter().enumerate() {
            assert_eq!(
                *s as i32,
                i32::try_from(i).unwrap(),
                "values are dense, in order"
            );
        }
    }
}
