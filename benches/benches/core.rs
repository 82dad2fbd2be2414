//! Single-thread cost of the core hot paths, next to the physical floor (one
//! uncontended `AtomicU64::fetch_add`) in the same run, including those no peer
//! has (windows, backoff, throttle, health). The side-by-side table with the
//! peers is `compare.rs`, run by `benches/run`; this one runs by hand:
//! `cargo bench -p seawall-benches --bench core`.

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};

use criterion::{Criterion, criterion_group, criterion_main};
use seawall_core::{
    Backoff, BackoffConfig, BackoffState, BreakerConfig, CircuitBreaker, CountWindow, Health,
    HealthConfig, Outcome, Priority, RetryBudget, RetryBudgetConfig, RetryThrottle,
    RetryThrottleConfig, Sample, Semaphore, SemaphoreConfig, TimeWindow, WindowConfig,
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

fn retry(c: &mut Criterion) {
    for (name, jitter) in [
        ("none", seawall_core::Jitter::None),
        ("full", seawall_core::Jitter::Full),
        ("decorrelated", seawall_core::Jitter::Decorrelated),
    ] {
        let b = Backoff::new(BackoffConfig {
            jitter,
            ..BackoffConfig::DEFAULT
        })
        .unwrap();
        let mut st = BackoffState::new(1);
        c.bench_function(&format!("backoff/next_delay/{name}"), |bench| {
            bench.iter(|| {
                // A retry loop of 5 attempts, restarted: the realistic range.
                if st.attempt() == 5 {
                    st = BackoffState::new(st.attempt().into());
                }
                black_box(st.next_delay(black_box(&b), None))
            });
        });
    }
    let budget = RetryBudget::new(RetryBudgetConfig::DEFAULT).unwrap();
    let mut now = 1_000_000_000u64;
    c.bench_function("retry_budget/deposit_withdraw", |bench| {
        bench.iter(|| {
            now += TICK;
            let b = black_box(&budget);
            b.deposit(now);
            black_box(b.try_withdraw(now))
        });
    });
    let throttle = RetryThrottle::new(RetryThrottleConfig::DEFAULT).unwrap();
    c.bench_function("retry_throttle/record_failure_success", |bench| {
        bench.iter(|| {
            let t = black_box(&throttle);
            black_box(t.record_failure());
            t.record_success();
        });
    });
}

fn semaphore(c: &mut Criterion) {
    let s: Semaphore<64> = Semaphore::new(SemaphoreConfig {
        max_concurrent: 100,
        max_queue: 64,
        ..SemaphoreConfig::DEFAULT
    })
    .unwrap();
    c.bench_function("semaphore/try_acquire_release", |bench| {
        bench.iter(|| drop(black_box(&s).try_acquire(Priority::Normal).unwrap()));
    });
}

fn health(c: &mut Criterion) {
    let h: Box<Health<10>> = Box::new(Health::new(HealthConfig::DEFAULT).unwrap());
    let mut now = 0u64;
    let mut lat = 0u64;
    c.bench_function("health/record", |bench| {
        bench.iter(|| {
            now += TICK;
            lat = (lat + 7_919) % 50_000_000;
            black_box(&h).record(lat, false, now);
        });
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(std::time::Duration::from_millis(500))
        .measurement_time(std::time::Duration::from_secs(2));
    targets = floor, breaker, windows, retry, semaphore, health
}
criterion_main!(benches);
