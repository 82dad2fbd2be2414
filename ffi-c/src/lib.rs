//! # seawall-ffi
//!
//! The C ABI of seawall: `libseawall.a`, `libseawall.so` and the header
//! `include/seawall.h`, generated from this crate by cbindgen. Every exported
//! function is a thin, panic-free wrapper over the handles of `seawall-host`
//! (breaker, semaphore, retry budget and throttle, health, each in this process or
//! shared) and the core's plain-data types (backoff, deadline).
//!
//! `unsafe` lives only here, at the edge: raw pointers from C; each block says why
//! it is sound.

pub mod capi;

pub use capi::common::SEAWALL_ABI_VERSION as ABI_VERSION;
