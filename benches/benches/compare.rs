//! seawall next to the Rust peers a user would pick instead (breakers,
//! semaphores, retry budget, rate limiter), one operation at a time on one thread, all in one criterion run, with the physical floor
//! (`fetch_add`, `compare_exchange`, a 128-bit load + `compare_exchange`) measured
//! first (`fetch_add` again last).
//!
//! Before each operation is timed, its allocations per call are counted once,
//! outside the timed loop (a counting global allocator); a seawall operation
//! that allocates stops the run. The counts, the ids and what each one measures
//! go to `$SEAWALL_BENCH_OUT/compare.json` (default `target/bench-run`), next to
//! criterion's own estimates; `benches/report.py` turns both into the table.
//!
//! `benches/run` runs this; by hand:
//! `cargo bench -p seawall-benches --bench compare -- [criterion options]`.

mod common;

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::{
    T0, TICK, async_lock_semaphore, async_lock_semaphore_cycle, failsafe, failsafe_call,
    failsafe_is_open, failsafe_long_open, failures_to_trip, governor, governor_fake_clock,
    governor_fake_clock_spent, governor_spent, recloser, recloser_call, recloser_is_open,
    seawall_breaker, seawall_budget, seawall_budget_cycle, seawall_closed, seawall_count_breaker,
    seawall_fail, seawall_is_open, seawall_rate_check, seawall_rate_limiter,
    seawall_rate_limiter_spent, seawall_semaphore, seawall_semaphore_cycle, tokio_semaphore,
    tokio_semaphore_cycle, tower_breaker, tower_budget, tower_budget_cycle, tower_call,
    tower_is_open,
};
use criterion::{BatchSize, BenchmarkGroup, Criterion, measurement::WallTime};
use seawall_benches::{CountingAlloc, allocations, allocations_per_op};
use serde_json::{Value, json};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

/// Calls over which allocations per operation are counted.
const ALLOC_CHECK_CALLS: u64 = 10_000;
/// Fresh instances over which a trip's allocations are counted.
const ALLOC_CHECK_TRIPS: usize = 200;
/// Trips timed per batch: the instances are built (untimed) in batches of this
/// many, then tripped one after the other in the timed loop.
const TRIP_BATCH: u64 = 64;

/// A criterion group and its name (criterion does not give the name back).
struct Group<'a> {
    g: BenchmarkGroup<'a, WallTime>,
    name: &'static str,
}

impl<'a> Group<'a> {
    fn new(c: &'a mut Criterion, name: &'static str) -> Self {
        Self {
            g: c.benchmark_group(name),
            name,
        }
    }
}

/// What this run measured, for the report: one entry per benchmark id.
#[derive(Default)]
struct Manifest {
    rows: Vec<Value>,
}

impl Manifest {
    /// Count allocations per call of `op` (outside the timed loop), refuse any
    /// for seawall, and note the benchmark.
    fn add(&mut self, group: &str, imp: &str, allocs_per_op: f64, extra: Value) {
        if imp.starts_with("seawall") {
            assert!(
                allocs_per_op == 0.0,
                "{group}/{imp}: seawall allocated {allocs_per_op} times per operation (target: zero)"
            );
        }
        let mut row = json!({ "id": format!("{group}/{imp}"), "group": group, "impl": imp, "allocs_per_op": allocs_per_op });
        if let (Value::Object(r), Value::Object(e)) = (&mut row, extra) {
            r.extend(e);
        }
        self.rows.push(row);
    }

    /// Count, note, then time `op` with `Bencher::iter`.
    fn bench(&mut self, g: &mut Group<'_>, imp: &str, mut op: impl FnMut()) {
        let allocs = allocations_per_op(ALLOC_CHECK_CALLS, &mut op);
        self.add(g.name, imp, allocs, json!({}));
        g.g.bench_function(imp, |b| b.iter(&mut op));
    }

    /// A trip: `setup` builds a fresh instance `failures − 1` failures short of
    /// opening (untimed); `trip` is the failure that opens it (timed).
    fn bench_trip<T>(
        &mut self,
        g: &mut Group<'_>,
        imp: &str,
        failures: usize,
        setup: impl Fn() -> T,
        mut trip: impl FnMut(&mut T),
        is_open: impl Fn(&T) -> bool,
    ) {
        let mut allocs = 0;
        for _ in 0..ALLOC_CHECK_TRIPS {
            let mut x = setup();
            assert!(!is_open(&x), "{imp}: open before the tripping failure");
            let ((), a, _) = allocations(|| trip(&mut x));
            assert!(is_open(&x), "{imp}: not open after the tripping failure");
            allocs += a;
        }
        let per_trip = allocs as f64 / ALLOC_CHECK_TRIPS as f64;
        self.add(
            g.name,
            imp,
            per_trip,
            json!({ "failures_to_trip": failures }),
        );
        g.g.bench_function(imp, |b| {
            b.iter_batched_ref(&setup, |x| trip(x), BatchSize::NumIterations(TRIP_BATCH));
        });
    }
}

/// One load and one `compare_exchange` to the next value: an uncontended CAS.
fn load_cas64(x: &AtomicU64) {
    let v = x.load(Ordering::Relaxed);
    let _ =
        black_box(x.compare_exchange(v, v.wrapping_add(1), Ordering::AcqRel, Ordering::Relaxed));
}

/// [`load_cas64`] on a 128-bit word (`lock cmpxchg16b` on x86-64).
fn load_cas128(w: &portable_atomic::AtomicU128) {
    let v = w.load(Ordering::Acquire);
    let _ =
        black_box(w.compare_exchange(v, v.wrapping_add(1), Ordering::AcqRel, Ordering::Acquire));
}

fn floor(c: &mut Criterion, m: &mut Manifest, group: &'static str) {
    let mut g = Group::new(c, group);
    let a = AtomicU64::new(0);
    m.bench(&mut g, "fetch_add", || {
        black_box(&a).fetch_add(1, Ordering::AcqRel);
    });
    if group == "floor" {
        let x = AtomicU64::new(0);
        m.bench(&mut g, "compare_exchange", || load_cas64(black_box(&x)));
        // What seawall's 128-bit words (the breaker's state, the count window)
        // cost at best: one load and one `compare_exchange` (`lock cmpxchg16b` on
        // x86-64) on the same line; the bound for a closed acquire +
        // success record, whose one locked instruction is now the time window
        // bucket's 64-bit `compare_exchange` (the row above).
        let w = portable_atomic::AtomicU128::new(0);
        m.bench(&mut g, "load_cmpxchg16b", || load_cas128(black_box(&w)));
        // What a count-window record must do at least: claim its slot (a load and
        // a 64-bit `compare_exchange`) and commit the 128-bit counts word on
        // another line (a load and `lock cmpxchg16b`).
        let slot = crossbeam_utils::CachePadded::new(AtomicU64::new(0));
        let counts = crossbeam_utils::CachePadded::new(portable_atomic::AtomicU128::new(0));
        m.bench(&mut g, "cas64_cas128", || {
            load_cas64(black_box(&*slot));
            load_cas128(black_box(&*counts));
        });
        // What an open rejection must do at least: read the 128-bit state word
        // and count the rejection on another line (one locked instruction).
        let state = portable_atomic::AtomicU128::new(0);
        let rejected = crossbeam_utils::CachePadded::new(AtomicU64::new(0));
        m.bench(&mut g, "load128_fetch_add", || {
            black_box(black_box(&state).load(Ordering::Acquire));
            black_box(&*rejected).fetch_add(1, Ordering::Relaxed);
        });
        m.bench(&mut g, "instant_now", || {
            black_box(Instant::now());
        });
    }
    g.g.finish();
}

fn breaker_closed(c: &mut Criterion, m: &mut Manifest) {
    let mut g = Group::new(c, "breaker_closed");
    let b = seawall_breaker();
    let mut now = T0;
    m.bench(&mut g, "seawall", || {
        now += TICK;
        seawall_closed(black_box(&b), now);
    });
    let b = seawall_count_breaker();
    m.bench(&mut g, "seawall_count_window", || {
        now += TICK;
        seawall_closed(black_box(&b), now);
    });
    let r = recloser();
    m.bench(&mut g, "recloser", || {
        black_box(recloser_call(black_box(&r), true)).expect("closed");
    });
    let f = failsafe();
    m.bench(&mut g, "failsafe", || {
        black_box(failsafe_call(black_box(&f), true)).expect("closed");
    });
    let mut t = tower_breaker();
    m.bench(&mut g, "tower-resilience", || {
        black_box(tower_call(black_box(&mut t), true)).expect("closed");
    });
    g.g.finish();
}

fn breaker_rejected(c: &mut Criterion, m: &mut Manifest) {
    let mut g = Group::new(c, "breaker_rejected");
    // Each breaker is opened by failures and stays open for far longer than its
    // measurement (seawall's clock stands still; the peers' open periods are
    // 30 s or more); each is checked still open afterwards.
    let b = seawall_breaker();
    while !seawall_is_open(&b) {
        seawall_fail(&b, T0).expect("closed until it opens");
    }
    m.bench(&mut g, "seawall", || {
        black_box(black_box(&b).try_acquire(T0)).expect_err("open");
    });
    assert!(seawall_is_open(&b));
    let r = recloser();
    while !recloser_is_open(&r) {
        let _ = recloser_call(&r, false);
    }
    m.bench(&mut g, "recloser", || {
        black_box(recloser_call(black_box(&r), true)).expect_err("open");
    });
    let f = failsafe_long_open();
    while !failsafe_is_open(&f) {
        let _ = failsafe_call(&f, false);
    }
    m.bench(&mut g, "failsafe", || {
        black_box(failsafe_call(black_box(&f), true)).expect_err("open");
    });
    assert!(failsafe_is_open(&f));
    let mut t = tower_breaker();
    while !tower_is_open(&t) {
        let _ = tower_call(&mut t, false);
    }
    m.bench(&mut g, "tower-resilience", || {
        black_box(tower_call(black_box(&mut t), true)).expect_err("open");
    });
    assert!(tower_is_open(&t));
    g.g.finish();
}

fn breaker_trip(c: &mut Criterion, m: &mut Manifest) {
    let mut g = Group::new(c, "breaker_trip");
    // Set-up dominates these runs' wall time (up to 100 untimed calls per timed
    // one): a shorter measurement keeps the whole run within its budget.
    g.g.measurement_time(Duration::from_secs(1)).sample_size(50);
    let n = failures_to_trip(
        seawall_breaker,
        |b| seawall_fail(b, T0).expect("closed"),
        seawall_is_open,
    );
    m.bench_trip(
        &mut g,
        "seawall",
        n,
        || {
            let b = seawall_breaker();
            for _ in 1..n {
                seawall_fail(&b, T0).expect("closed");
            }
            b
        },
        |b| seawall_fail(black_box(b), T0).expect("admitted"),
        seawall_is_open,
    );
    let fail_r = |r: &mut recloser::Recloser| {
        let _ = recloser_call(r, false);
    };
    let n = failures_to_trip(recloser, fail_r, recloser_is_open);
    m.bench_trip(
        &mut g,
        "recloser",
        n,
        || {
            let mut r = recloser();
            for _ in 1..n {
                fail_r(&mut r);
            }
            r
        },
        |r| fail_r(black_box(r)),
        recloser_is_open,
    );
    let fail_f = |f: &mut common::Failsafe| {
        let _ = failsafe_call(f, false);
    };
    let n = failures_to_trip(failsafe, fail_f, failsafe_is_open);
    m.bench_trip(
        &mut g,
        "failsafe",
        n,
        || {
            let mut f = failsafe();
            for _ in 1..n {
                fail_f(&mut f);
            }
            f
        },
        |f| fail_f(black_box(f)),
        failsafe_is_open,
    );
    let fail_t = |t: &mut common::TowerBreaker| {
        let _ = tower_call(t, false);
    };
    let n = failures_to_trip(tower_breaker, fail_t, tower_is_open);
    m.bench_trip(
        &mut g,
        "tower-resilience",
        n,
        || {
            let mut t = tower_breaker();
            for _ in 1..n {
                fail_t(&mut t);
            }
            t
        },
        |t| fail_t(black_box(t)),
        tower_is_open,
    );
    g.g.finish();
}

fn semaphore(c: &mut Criterion, m: &mut Manifest) {
    let mut g = Group::new(c, "semaphore");
    let s = seawall_semaphore();
    m.bench(&mut g, "seawall", || {
        seawall_semaphore_cycle(black_box(&s));
    });
    let s = tokio_semaphore();
    m.bench(&mut g, "tokio", || {
        tokio_semaphore_cycle(black_box(&s));
    });
    let s = async_lock_semaphore();
    m.bench(&mut g, "async-lock", || {
        async_lock_semaphore_cycle(black_box(&s));
    });
    g.g.finish();
}

fn budget(c: &mut Criterion, m: &mut Manifest) {
    let mut g = Group::new(c, "retry_budget");
    let b = seawall_budget();
    let mut now = T0;
    m.bench(&mut g, "seawall", || {
        now += TICK;
        black_box(seawall_budget_cycle(black_box(&b), now));
    });
    let b = tower_budget();
    m.bench(&mut g, "tower", || {
        black_box(tower_budget_cycle(black_box(&b)));
    });
    g.g.finish();
}

fn rate_limiter(c: &mut Criterion, m: &mut Manifest) {
    // Every check is admitted (the quota of `common::seawall_rate_limiter`), and
    // `expect` says so; seawall's clock moves 1 µs per check, governor's own
    // clock is read by `check()`, its fake one stands still.
    let mut g = Group::new(c, "rate_limiter");
    let l = seawall_rate_limiter();
    let mut now = T0;
    m.bench(&mut g, "seawall", || {
        now += TICK;
        black_box(seawall_rate_check(black_box(&l), now)).expect("admitted");
    });
    let gv = governor();
    m.bench(&mut g, "governor", || {
        black_box(black_box(&gv).check()).expect("admitted");
    });
    let gv = governor_fake_clock();
    m.bench(&mut g, "governor_fake_clock", || {
        black_box(black_box(&gv).check()).expect("admitted");
    });
    g.g.finish();
}

fn rate_limiter_rejected(c: &mut Criterion, m: &mut Manifest) {
    // Every check is rejected: one cell per hour, already taken.
    let mut g = Group::new(c, "rate_limiter_rejected");
    let l = seawall_rate_limiter_spent();
    m.bench(&mut g, "seawall", || {
        black_box(seawall_rate_check(black_box(&l), T0)).expect_err("spent");
    });
    let gv = governor_spent();
    m.bench(&mut g, "governor", || {
        black_box(black_box(&gv).check()).expect_err("spent");
    });
    let gv = governor_fake_clock_spent();
    m.bench(&mut g, "governor_fake_clock", || {
        black_box(black_box(&gv).check()).expect_err("spent");
    });
    g.g.finish();
}

fn main() {
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2))
        .without_plots()
        .configure_from_args();
    let mut m = Manifest::default();
    floor(&mut c, &mut m, "floor");
    breaker_closed(&mut c, &mut m);
    breaker_rejected(&mut c, &mut m);
    breaker_trip(&mut c, &mut m);
    semaphore(&mut c, &mut m);
    budget(&mut c, &mut m);
    rate_limiter(&mut c, &mut m);
    rate_limiter_rejected(&mut c, &mut m);
    floor(&mut c, &mut m, "floor_again");
    c.final_summary();

    let dir = seawall_benches::out_dir();
    let path = dir.join("compare.json");
    let doc = json!({ "alloc_check_calls": ALLOC_CHECK_CALLS, "trip_batch": TRIP_BATCH, "benchmarks": m.rows });
    std::fs::write(&path, serde_json::to_string_pretty(&doc).expect("JSON"))
        .expect("write compare.json");
    eprintln!("wrote {}", path.display());
}
