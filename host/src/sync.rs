//! The atomics of the permit and holder tables: loom's under `--cfg loom` (so the
//! models in `tests/loom_*.rs` explore every interleaving), `portable-atomic`'s
//! otherwise (the same types on every target). One switch, as `seawall-core`'s
//! `sync` is for the core.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicU32, AtomicU64};
#[cfg(not(loom))]
pub(crate) use portable_atomic::{AtomicU32, AtomicU64};
