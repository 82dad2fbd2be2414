//! A core structure with its lifetime totals beside it, in the same memory
//! (DESIGN §8, "One set of totals"): in a shared region every process counts
//! into, and reads, the same figures. The totals are striped counters (a
//! refused retry or take under load is counted on every core at once).
//!
//! The counting methods have the core's names and signatures, so every caller
//! of a handle (`budget.try_withdraw(now)`) counts without knowing it; the
//! core's other methods are reached through `Deref`.

use core::ops::Deref;

use seawall_core::StripedCounter;

/// A `T` and `K` totals; `#[repr(C)]`, pointer-free.
#[repr(C)]
pub struct Counted<T, const K: usize> {
    inner: T,
    totals: [StripedCounter; K],
}

impl<T, const K: usize> Counted<T, K> {
    /// `inner` with every total zero.
    pub fn new(inner: T) -> Self {
        Self {
            inner,
            totals: core::array::from_fn(|_| StripedCounter::new()),
        }
    }

    /// The core structure.
    pub fn inner(&self) -> &T {
        &self.inner
    }

    /// Add one to total `i`.
    pub(crate) fn bump(&self, i: usize) {
        self.totals[i].bump();
    }

    /// Add `n` to total `i`.
    pub(crate) fn add(&self, i: usize, n: u64) {
        self.totals[i].add(n);
    }

    /// Total `i`.
    pub(crate) fn total(&self, i: usize) -> u64 {
        self.totals[i].sum()
    }
}

impl<T, const K: usize> Deref for Counted<T, K> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.inner
    }
}
