//! A counter spread over a few cache lines, so that threads bumping it at once do
//! not take turns owning one line (the idea of Java's `LongAdder`).
//!
//! Used for the breaker's `rejected` total: an open breaker under load rejects on
//! every core, and a rejection otherwise only reads, so one shared counter line
//! would be the whole cost of a contended rejection. Public for the host's
//! totals that live in shared regions beside a primitive (its refusals).

use crossbeam_utils::CachePadded;

use crate::sync::{AtomicU64, Ordering};

/// How many lines the count is spread over.
pub(crate) const STRIPES: usize = 4;

/// A relaxed event counter: [`bump`](Self::bump) adds one to a line chosen by the
/// caller's stack, [`sum`](Self::sum) adds the lines up (wrapping: the lines may sit
/// in memory another process writes).
#[repr(C)]
pub struct StripedCounter {
    lines: [CachePadded<AtomicU64>; STRIPES],
}

impl StripedCounter {
    /// Zero.
    #[must_use]
    pub fn new() -> Self {
        Self {
            lines: core::array::from_fn(|_| CachePadded::new(AtomicU64::new(0))),
        }
    }

    /// Add one, on the calling thread's line.
    pub fn bump(&self) {
        self.add(1);
    }

    /// Add `n`, on the calling thread's line.
    pub fn add(&self, n: u64) {
        self.lines[stripe()].fetch_add(n, Ordering::Relaxed);
    }

    /// The count: the lines added up.
    #[must_use]
    pub fn sum(&self) -> u64 {
        self.lines
            .iter()
            .fold(0, |s, l| s.wrapping_add(l.load(Ordering::Relaxed)))
    }
}

impl Default for StripedCounter {
    fn default() -> Self {
        Self::new()
    }
}

/// The line for the calling thread, from where its stack is: a `no_std` core has
/// no thread id.
#[inline]
fn stripe() -> usize {
    let here = 0u8;
    stripe_of(core::ptr::from_ref(&here).addr())
}

/// Threads' stacks are separate mappings, usually placed next to each other, of
/// 2 MiB (Rust's default), 8 MiB (a C thread's default) or more; so the 2 MiB
/// block `b` a local sits in differs between neighbouring threads by 1, 4, 8 or
/// 16. `b + b/4 + b/16` changes by 1 to 3, 1 or 2, 2 or 3, and 1 (mod 4) for
/// those steps, never by 0: neighbours get different lines. A thread whose stack
/// straddles a block boundary uses two lines; threads that land on one line only
/// share it as they would without stripes.
fn stripe_of(addr: usize) -> usize {
    let b = addr >> 21;
    b.wrapping_add(b >> 2).wrapping_add(b >> 4) % STRIPES
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::StripedCounter;

    #[test]
    fn the_sum_counts_every_bump_of_every_thread() {
        let c = StripedCounter::new();
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| (0..10_000).for_each(|_| c.bump()));
            }
        });
        assert_eq!(c.sum(), 40_000);
    }

    #[test]
    fn neighbouring_thread_stacks_get_different_lines() {
        const MIB: usize = 1 << 20;
        // Stacks of 2, 8, 16 and 32 MiB, each with a 4 KiB guard page, next to
        // each other: the same local in two neighbours is one stack apart.
        for stack in [2 * MIB, 8 * MIB, 16 * MIB, 32 * MIB] {
            for block in 0..4096usize {
                let a = block * 2 * MIB + 0x1_2345;
                let b = a + stack + 4096;
                assert_ne!(
                    super::stripe_of(a),
                    super::stripe_of(b),
                    "{stack} at {a:#x}"
                );
            }
        }
    }

    #[test]
    fn lines_written_by_another_process_wrap_when_summed() {
        let c = StripedCounter::new();
        c.lines[0].store(u64::MAX, crate::sync::Ordering::Relaxed);
        c.lines[1].store(2, crate::sync::Ordering::Relaxed);
        assert_eq!(c.sum(), 1);
    }
}
