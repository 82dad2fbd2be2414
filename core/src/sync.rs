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

/// loom has no 128-bit atomic. This one is a loom `AtomicUsize` holding the index
/// of its current value in an append-only arena of immutable values: every
/// operation is one loom atomic operation on the index (a CAS compares the values
/// the indices name, retrying when an equal value sits under another index), so
/// loom explores exactly the interleavings and stale reads a real 128-bit atomic
/// allows. (A mutex around a `u128` hides them from loom's partial-order reduction.)
#[cfg(loom)]
mod loom_u128 {
    use super::Ordering;
    use loom::sync::atomic::AtomicUsize;
    use std::sync::Mutex;
    use std::vec::Vec;

    #[derive(Debug)]
    pub(crate) struct AtomicU128 {
        index: AtomicUsize,
        // loom runs one model thread at a time, so this std mutex never blocks.
        values: Mutex<Vec<u128>>,
    }

    impl AtomicU128 {
        pub(crate) fn new(v: u128) -> Self {
            Self {
                index: AtomicUsize::new(0),
                values: Mutex::new(std::vec![v]),
            }
        }

        fn value(&self, i: usize) -> u128 {
            self.values.lock().unwrap()[i]
        }

        fn push(&self, v: u128) -> usize {
            let mut values = self.values.lock().unwrap();
            values.push(v);
            values.len() - 1
        }

        pub(crate) fn load(&self, order: Ordering) -> u128 {
            self.value(self.index.load(order))
        }

        #[allow(dead_code, reason = "only the seawall_mutant builds store blindly")]
        pub(crate) fn store(&self, v: u128, order: Ordering) {
            let i = self.push(v);
            self.index.store(i, order);
        }

        pub(crate) fn compare_exchange(
            &self,
            current: u128,
            new: u128,
            success: Ordering,
            failure: Ordering,
        ) -> Result<u128, u128> {
            let mut seen = self.index.load(failure);
            loop {
                let v = self.value(seen);
                if v != current {
                    return Err(v);
                }
                let next = self.push(new);
                match self.index.compare_exchange(seen, next, success, failure) {
                    Ok(_) => return Ok(v),
                    Err(i) => seen = i,
                }
            }
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

/// Back off in a retry loop that waits for other threads' progress: a spin hint
/// on real atomics, a yield under loom (so its scheduler runs the others).
#[inline]
pub(crate) fn spin_loop() {
    #[cfg(not(loom))]
    core::hint::spin_loop();
    #[cfg(loom)]
    loom::thread::yield_now();
}
