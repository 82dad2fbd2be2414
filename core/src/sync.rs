//! The one place that chooses between real atomics and loom's model-checked ones.
//!
//! Everything else in the crate names `crate::sync::AtomicU64` and friends, so a
//! `RUSTFLAGS="--cfg loom"` build explores every interleaving of the very same code.
//! Real builds use `portable-atomic`, which gives 64- and 128-bit atomics on every
//! target (natively where the CPU has them, by critical section where it does not).

pub(crate) use core::sync::atomic::Ordering;

#[cfg(not(loom))]
pub(crate) use portable_atomic::{AtomicU64, AtomicU128};

#[cfg(loom)]
pub(crate) use loom::sync::atomic::AtomicU64;

#[cfg(loom)]
pub(crate) use loom_u128::AtomicU128;

/// loom has no 128-bit atomic. A mutex around a `u128` is an exact model of one:
/// every operation is indivisible, and loom explores the interleavings between them.
#[cfg(loom)]
mod loom_u128 {
    use super::Ordering;

    #[derive(Debug)]
    pub(crate) struct AtomicU128(loom::sync::Mutex<u128>);

    impl AtomicU128 {
        pub(crate) fn new(v: u128) -> Self {
            Self(loom::sync::Mutex::new(v))
        }

        pub(crate) fn load(&self, _: Ordering) -> u128 {
            *self.0.lock().unwrap()
        }

        pub(crate) fn store(&self, v: u128, _: Ordering) {
            *self.0.lock().unwrap() = v;
        }

        pub(crate) fn compare_exchange(
            &self,
            current: u128,
            new: u128,
            _: Ordering,
            _: Ordering,
        ) -> Result<u128, u128> {
            let mut g = self.0.lock().unwrap();
            if *g == current {
                *g = new;
                Ok(current)
            } else {
                Err(*g)
            }
        }

        pub(crate) fn compare_exchange_weak(
            &self,
            current: u128,
            new: u128,
            success: Ordering,
            failure: Ordering,
        ) -> Result<u128, u128> {
            self.compare_exchange(current, new, success, failure)
        }
    }
}

/// `fetch_max` that skips the write when it would change nothing: with a frozen or
/// coarse clock most calls then cost one load instead of a read-modify-write.
/// Returns the larger of `v` and the stored value, and whether `v` was larger than
/// the value this call first read (it may have raised the mark).
#[inline]
pub(crate) fn raise_to(cell: &AtomicU64, v: u64) -> (u64, bool) {
    let seen = cell.load(Ordering::Acquire);
    if v <= seen {
        return (seen, false);
    }
    let prev = cell.fetch_max(v, Ordering::AcqRel);
    (prev.max(v), true)
}
