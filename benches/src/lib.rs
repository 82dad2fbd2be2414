//! Shared pieces of the benchmark harness; the benchmarks themselves
//! live in `benches/` and `benches/run` runs them and prints the tables.
//!
//! * [`CountingAlloc`]: a global allocator that counts, per thread, the
//!   allocations and bytes made through it, so a harness can assert that a hot
//!   path allocates nothing and measure what one peer instance holds on the heap.
//! * [`contend`]: two (or more) threads hammering one shared object for a fixed
//!   number of operations each, timed by wall clock.
//!
//! Only `benches/` uses this crate; it is not part of any test build.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::Barrier;
use std::time::{Duration, Instant};

thread_local! {
    // Per thread, so that other threads (criterion's, the other contender's)
    // never show up in a measurement. `const` with no destructor: safe to touch
    // from inside the allocator at any point of a thread's life.
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
    static BYTES: Cell<u64> = const { Cell::new(0) };
}

/// A global allocator that forwards to [`System`] and counts, for the calling
/// thread, every `alloc`/`alloc_zeroed`/`realloc` and the bytes they asked for.
///
/// Install it with `#[global_allocator] static A: CountingAlloc = CountingAlloc;`.
/// The count costs one thread-local add per allocation, the same for every
/// contender, and nothing on code that does not allocate.
#[derive(Debug, Clone, Copy, Default)]
pub struct CountingAlloc;

fn count(bytes: usize) {
    ALLOCS.with(|c| c.set(c.get() + 1));
    BYTES.with(|c| c.set(c.get() + bytes as u64));
}

// SAFETY: every method forwards to the system allocator with the caller's own
// arguments; the counting touches only `const` thread-locals without destructors.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size);
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Allocations (calls) and bytes requested on this thread while `f` ran, with
/// `f`'s result. Meaningful only where [`CountingAlloc`] is the global allocator.
pub fn allocations<R>(f: impl FnOnce() -> R) -> (R, u64, u64) {
    let (a0, b0) = (ALLOCS.with(Cell::get), BYTES.with(Cell::get));
    let r = f();
    let (a1, b1) = (ALLOCS.with(Cell::get), BYTES.with(Cell::get));
    (r, a1 - a0, b1 - b0)
}

/// Allocations per call of `op`, over `n` calls after one warm-up call (lazy
/// one-time initialisation, such as a thread-local, does not count).
pub fn allocations_per_op(n: u64, mut op: impl FnMut()) -> f64 {
    op();
    let ((), allocs, _) = allocations(|| {
        for _ in 0..n {
            op();
        }
    });
    allocs as f64 / n as f64
}

/// One timed run of [`contend`].
#[derive(Debug, Clone, Copy)]
pub struct Contended {
    /// Operations done by all threads together.
    pub ops: u64,
    /// From the first thread's start to the last thread's end.
    pub wall: Duration,
}

impl Contended {
    /// Throughput of all threads together, in millions of operations per second.
    #[must_use]
    pub fn mops(&self) -> f64 {
        self.ops as f64 / self.wall.as_secs_f64() / 1e6
    }
}

/// Run `threads` threads that each call their own `make(thread_index)()`
/// `ops_per_thread` times, all released at once by a barrier; time from the
/// earliest start to the latest end (the wall time the shared object was busy).
///
/// `make` runs on the worker thread before the barrier, so per-thread setup
/// (a clone of a handle, a local clock) stays outside the timed region.
///
/// # Panics
/// When a thread's operation panics, or `threads` is 0.
pub fn contend<M, F>(threads: usize, ops_per_thread: u64, make: M) -> Contended
where
    M: Fn(usize) -> F + Sync,
    F: FnMut(),
{
    let barrier = Barrier::new(threads);
    let spans: Vec<(Instant, Instant)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|i| {
                let (barrier, make) = (&barrier, &make);
                s.spawn(move || {
                    let mut op = make(i);
                    barrier.wait();
                    let start = Instant::now();
                    for _ in 0..ops_per_thread {
                        op();
                    }
                    (start, Instant::now())
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a contending thread panicked"))
            .collect()
    });
    let start = spans
        .iter()
        .map(|s| s.0)
        .min()
        .expect("at least one thread");
    let end = spans
        .iter()
        .map(|s| s.1)
        .max()
        .expect("at least one thread");
    Contended {
        ops: ops_per_thread * threads as u64,
        wall: end - start,
    }
}

/// Where the harnesses write their JSON: `$SEAWALL_BENCH_OUT` (set by
/// `benches/run`), else the workspace's `target/bench-run` (cargo runs a bench
/// binary from the package directory, so a relative default would land in
/// `benches/`).
///
/// # Panics
/// When the directory cannot be created.
#[must_use]
pub fn out_dir() -> std::path::PathBuf {
    let dir = std::env::var_os("SEAWALL_BENCH_OUT").map_or_else(
        || std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bench-run"),
        std::path::PathBuf::from,
    );
    std::fs::create_dir_all(&dir).expect("create the benchmark output directory");
    dir
}

/// The median of `xs` (the mean of the two middle values for an even count).
///
/// # Panics
/// When `xs` is empty or holds a NaN.
#[must_use]
pub fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(|a, b| a.partial_cmp(b).expect("no NaN"));
    let n = v.len();
    assert!(n > 0, "median of nothing");
    if n % 2 == 1 {
        v[n / 2]
    } else {
        f64::midpoint(v[n / 2 - 1], v[n / 2])
    }
}
