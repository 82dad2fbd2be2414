//! Single-thread cost of the core hot paths, next to the physical floor (one
//! uncontended `AtomicU64::fetch_add`) in the same run. Report ratios, not ns:
//! `benches/run` (issue 8) turns these into the README table.

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};

use criterion::{Criterion, criterion_group, criterion_main};
use seawall_core::{
    BreakerConfig, CircuitBreaker, CountWindow, Outcome, Sample, TimeWindow, WindowConfig,
};

/// The clock advances 1 µs per call: a 1 s bucket rotates once per million calls,
/// as it would at a million calls per second.
const TICK: u64 = 1_000;

fn floor(c: &mut Criterion) {
    let a = AtomicU64::new(0);
    c.bench_function("floor/fetch_add", |b| {
        b.iter(|| black_box(&a).fetch_add(1, Ordering::AcqRel));
    });
}

fn breaker(c: &mut Criterion) {
    let time: CircuitBreaker<TimeWindow<10>> = CircuitBreaker::new(BreakerConfig::DEFAULT).unwrap();
    let mut now = 1_000_000_000u64;
    c.bench_function("breaker/closed_acquire_record/time_window", |b| {
        b.iter(|| {
            now += TICK;
            let p = black_box(&time).try_acquire(now).unwrap();
            p.record(Outcome::Success, 1_000, now);
        });
    });
    let count: CircuitBreaker<CountWindow<100>> = CircuitBreaker::new(BreakerConfig {
        window: WindowConfig::Count { size: 100 },
        ..BreakerConfig::DEFAULT
    })
    .unwrap();
    c.bench_function("breaker/closed_acquire_record/count_window", |b| {
        b.iter(|| {
            now += TICK;
            let p = black_box(&count).try_acquire(now).unwrap();
            p.record(Outcome::Success, 1_000, now);
        });
    });
    let open: CircuitBreaker<TimeWindow<10>> = CircuitBreaker::new(BreakerConfig::DEFAULT).unwrap();
    open.force_open();
    open.reset();
    for _ in 0..20 {
        open.try_acquire(now).unwrap().failure(1_000, now);
    }
    assert_eq!(open.state(), seawall_core::State::Open);
    // The clock stands still here: the 30 s open period must outlast the run.
    c.bench_function("breaker/rejected_acquire/open", |b| {
        b.iter(|| black_box(black_box(&open).try_acquire(now)).unwrap_err());
    });
}

fn windows(c: &mut Criterion) {
    let t = TimeWindow::<10>::with_buckets(10, 1_000_000_000).unwrap();
    let mut now = 0u64;
    c.bench_function("window/record/time", |b| {
        b.iter(|| {
            now += TICK;
            black_box(&t).record(Sample::default(), now);
        });
    });
    let w = CountWindow::<100>::with_size(100).unwrap();
    c.bench_function("window/record/count", |b| {
        b.iter(|| black_box(&w).record(Sample::default()));
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(std::time::Duration::from_millis(500))
        .measurement_time(std::time::Duration::from_secs(2));
    targets = floor, breaker, windows
}
criterion_main!(benches);
