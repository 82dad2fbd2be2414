//! # seawall-node
//!
//! The native half of the npm package `seawall`: thin napi-rs classes over the
//! lock-free core (`seawall-core`) and the shareable structures of `seawall-host`
//! (breaker, semaphore, retry budget and throttle, in `/dev/shm`). The
//! JavaScript layer in `lib/` adds Promises, `AbortSignal`s, events and
//! composition; everything that decides (admission, windows, backoff, budgets,
//! hand-off) happens here, in the core.
//!
//! Boundary rules, chosen so that a protected call crosses into Rust twice
//! (acquire, record) and allocates no JavaScript object on the way:
//!
//! * **Time** crosses as `f64` milliseconds (Node's unit); methods without a
//!   `now_ms` argument read the OS monotonic clock (`CLOCK_MONOTONIC`, one clock
//!   for every process of the host, so shared breakers agree on `now`).
//! * **Permits and tickets** cross as plain numbers, every encoding in
//!   [`boundary`] (which hands its numbers to JavaScript as `constants()`);
//!   rejections are negative numbers that carry their details, so the fast-fail
//!   path needs no extra call either.
//! * **Handles**: each structure is named by a number on the hot path and owned
//!   by a token the JS wrapper holds ([`handles`]): no per-call unwrap.
//! * **Errors**: every thrown `Error` has its `code` set natively
//!   ([`boundary::Code`]); an invalid option's is `EINVALIDCONFIG` with `field`
//!   the option's JavaScript name and a message in JavaScript names and units.
//!   The JS layer rewraps it as a `SeawallError` with the same code and field.

// napi-rs hands arguments over by value and calls methods from JavaScript, where a
// Rust `#[must_use]` means nothing.
#![allow(
    clippy::needless_pass_by_value,
    clippy::must_use_candidate,
    reason = "napi-rs methods take owned arguments and are called from JavaScript"
)]
// Under `cfg(test)` napi-derive registers nothing, so every export looks unused.
#![cfg_attr(test, allow(dead_code, unused_imports))]

mod boundary;
mod breaker;
mod bulkhead;
mod convert;
mod fast;
mod handles;
mod health;
mod rate_limiter;
mod retry;
mod waker;

use napi::bindgen_prelude::External;
use napi_derive::napi;

/// The handle a token owns: the number every other function of its kind takes.
#[napi]
pub fn handle_of(token: &External<handles::Token>) -> f64 {
    token.handle()
}

/// Milliseconds of the OS monotonic clock (`CLOCK_MONOTONIC`, the clock every
/// native method uses when it is given no time).
#[napi]
pub fn monotonic_ms() -> f64 {
    convert::ns_to_ms(seawall_host::clock::monotonic_ns())
}

/// Whether this machine can share structures between processes (native lock-free
/// 64- and 128-bit atomics).
#[napi]
pub fn shared_supported() -> bool {
    seawall_host::shared::native_atomics()
}
