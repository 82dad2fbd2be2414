//! # seawall-ffi
//!
//! The C ABI of seawall (`libseawall.a`, `libseawall.so`, header
//! `include/seawall.h` generated from [`capi`] by cbindgen) and the pieces every
//! binding shares:
//!
//! * [`shared`]: a core structure in memory shared by every process of a host
//!   (`/dev/shm/seawall-<family>-<name>`, or memory the caller brings), with the
//!   header, init race and checks of DESIGN §8. Generic over any [`Shareable`]
//!   structure.
//! * [`breaker`]: the circuit breaker with its window kind chosen at run time and
//!   single-use permits ([`permits`]), in this process or shared.
//! * [`semaphore`]: the bulkhead with single-use permits and queue tickets
//!   ([`holders`]), in this process or shared.
//! * [`retry`] (retry budget, retry throttle) and [`health`]: core structures in
//!   a [`handle::Handle`], in this process or shared.
//! * [`clock`]: the OS monotonic clock.
//!
//! `unsafe` lives only here, at the edge: in the exported functions (raw
//! pointers from C) and where a region is mapped and read; each block says why it
//! is sound.
//!
//! [`Shareable`]: shared::Shareable

// The header is generated from `capi` alone: the `cbindgen:ignore` lines keep the
// Rust-only modules (and their public constants) out of it.

// Under `--cfg loom` only the permit table, the holder table and the semaphore
// cell are built: their loom models (`tests/loom_permits.rs`,
// `tests/loom_holders.rs`) are all that build is for.

/// cbindgen:ignore
#[cfg(not(loom))]
pub mod breaker;
#[cfg(not(loom))]
pub mod capi;
/// cbindgen:ignore
#[cfg(not(loom))]
pub mod clock;
/// cbindgen:ignore
#[cfg(not(loom))]
pub mod handle;
/// cbindgen:ignore
#[cfg(not(loom))]
pub mod health;
/// cbindgen:ignore
pub mod holders;
/// cbindgen:ignore
pub mod permits;
/// cbindgen:ignore
#[cfg(not(loom))]
pub mod retry;
/// cbindgen:ignore
pub mod semaphore;
/// cbindgen:ignore
#[cfg(not(loom))]
pub mod shared;

/// cbindgen:ignore
///
/// The ABI version: bumped whenever an exported signature, a `repr(C)` type of the
/// header, or the layout of a shared structure changes. Stored in every shared
/// region; `seawall_abi_version()` returns it.
#[cfg(not(loom))]
pub const ABI_VERSION: u32 = capi::common::SEAWALL_ABI_VERSION;
