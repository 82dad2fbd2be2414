//! The hot paths allocate nothing: a counting global allocator watches acquire,
//! record (every outcome, every state), rejection, metrics and the windows.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use seawall_core::{
    BreakerConfig, CircuitBreaker, CountWindow, Deadline, Outcome, Sample, TimeWindow, WindowConfig,
};

struct Counting;

thread_local! {
    // Per thread, so the test harness's own threads do not count.
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

fn count_one() {
    ALLOCATIONS.with(|c| c.set(c.get() + 1));
}

// SAFETY: forwards to the system allocator unchanged; only counts calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count_one();
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count_one();
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations_during(f: impl FnOnce()) -> usize {
    let before = ALLOCATIONS.with(Cell::get);
    f();
    ALLOCATIONS.with(Cell::get) - before
}

fn cycle<W: seawall_core::SlidingWindow>(b: &CircuitBreaker<W>) {
    let mut now = 1_000_000_000u64;
    for i in 0..10_000u64 {
        now += 250_000;
        match b.try_acquire(now) {
            Ok(p) => match i % 7 {
                0..=2 => p.failure(10, now),
                3 => p.ignore(),
                4 => drop(p),
                _ => p.success(10, now),
            },
            Err(r) => {
                std::hint::black_box(r);
            }
        }
        std::hint::black_box(b.metrics(now));
        std::hint::black_box(b.retry_after(now));
        if i % 2_500 == 0 {
            b.force_open();
            b.disable();
            b.reset();
        }
    }
}

#[test]
fn breaker_paths_allocate_nothing() {
    let time: CircuitBreaker<TimeWindow<10>> = CircuitBreaker::new(BreakerConfig {
        minimum_calls: 5,
        open_duration_ns: 2_000_000,
        half_open_max_calls: 2,
        consecutive_failures: Some(3),
        slow_call_duration_ns: Some(5),
        ..BreakerConfig::DEFAULT
    })
    .unwrap();
    let count: CircuitBreaker<CountWindow<100>> = CircuitBreaker::new(BreakerConfig {
        window: WindowConfig::Count { size: 100 },
        minimum_calls: 5,
        open_duration_ns: 2_000_000,
        ..BreakerConfig::DEFAULT
    })
    .unwrap();
    assert_eq!(allocations_during(|| cycle(&time)), 0);
    assert_eq!(allocations_during(|| cycle(&count)), 0);
    // The cycle really went through every state.
    assert!(time.metrics(0).totals.transitions > 10);
    assert!(count.metrics(0).totals.rejected > 0);
}

#[test]
fn windows_and_deadline_allocate_nothing() {
    let t = TimeWindow::<10>::with_buckets(10, 1_000_000).unwrap();
    let c = CountWindow::<64>::with_size(64).unwrap();
    let n = allocations_during(|| {
        for i in 0..10_000u64 {
            let s = Sample {
                failure: i % 3 == 0,
                slow: i % 5 == 0,
            };
            t.record(s, i * 100_000);
            c.record(s);
            std::hint::black_box((t.counts(i * 100_000), c.counts()));
            let d = Deadline::new(1_000, i);
            std::hint::black_box((d.remaining(i + 10), d.allocate(5, i), d.child(7, i + 1)));
        }
    });
    assert_eq!(n, 0);
}

#[test]
fn the_counter_counts() {
    // Guard against a test that cannot fail: an allocation is seen.
    let n = allocations_during(|| {
        std::hint::black_box(Box::new(Outcome::Success));
    });
    assert_eq!(n, 1);
}

#[test]
fn retry_semaphore_and_health_paths_allocate_nothing() {
    use seawall_core::{
        Admission, Backoff, BackoffConfig, BackoffState, FailedAttempt, Health, HealthConfig,
        Jitter, Priority, PriorityShares, Ratio, RetryBudget, RetryBudgetConfig, RetryConfig,
        RetryGate, RetryPolicy, RetryThrottle, RetryThrottleConfig, Semaphore, SemaphoreConfig,
    };
    let budget = RetryBudget::new(RetryBudgetConfig {
        ttl_ns: 10_000_000,
        ..RetryBudgetConfig::DEFAULT
    })
    .unwrap();
    let throttle = RetryThrottle::new(RetryThrottleConfig::DEFAULT).unwrap();
    let policy = RetryPolicy::new(RetryConfig::DEFAULT).unwrap();
    let sem: Semaphore<8> = Semaphore::new(SemaphoreConfig {
        max_concurrent: 2,
        max_queue: 4,
        shares: PriorityShares::SEED_LOAD_SHEDDING,
    })
    .unwrap();
    let health: Health<10> = Health::new(HealthConfig {
        bucket_width_ns: 1_000_000,
        ..HealthConfig::DEFAULT
    })
    .unwrap();
    let jitters = [
        Jitter::None,
        Jitter::Full,
        Jitter::Equal,
        Jitter::Decorrelated,
        Jitter::PROPORTIONAL,
    ];
    let n = allocations_during(|| {
        for i in 0..10_000u64 {
            let now = i * 100_000;
            for j in jitters {
                let b = Backoff::new(BackoffConfig {
                    jitter: j,
                    multiplier: Ratio::from_ppm(1_500_000),
                    ..BackoffConfig::DEFAULT
                })
                .unwrap();
                let mut st = BackoffState::new(i);
                std::hint::black_box(st.next_delay(&b, Some(5)));
                std::hint::black_box(b.delay(u32::MAX, 7, i));
            }
            budget.deposit(now);
            std::hint::black_box(budget.try_withdraw(now));
            std::hint::black_box(budget.snapshot(now));
            if i % 3 == 0 {
                throttle.record_success();
            }
            let f = FailedAttempt {
                attempt: (i % 4) as u32 + 1,
                previous_delay_ns: 0,
                random: i,
                deadline_remaining_ns: Some(i * 1_000),
                retry_after_ns: None,
            };
            std::hint::black_box(policy.decide(&f, RetryGate::Throttle(&throttle), now));
            std::hint::black_box(policy.decide(&f, RetryGate::Budget(&budget), now));
            let a = sem.try_acquire(Priority::Critical);
            let b = sem.acquire_or_wait(Priority::Critical);
            let c = sem.acquire_or_wait(Priority::Critical);
            drop(a);
            match c {
                Ok(Admission::Queued(w)) if i % 2 == 0 => {
                    std::hint::black_box(w.cancel());
                }
                other => drop(other),
            }
            drop(b);
            drop(std::hint::black_box(sem.try_acquire(Priority::Low)));
            health.record(i % 5_000_000, i % 7 == 0, now);
            if i % 100 == 0 {
                std::hint::black_box(health.snapshot(now));
            }
        }
    });
    assert_eq!(n, 0);
    // The paths really ran: retries were allowed and refused, waiters were queued.
    assert!(budget.snapshot(0).requests > 0);
    assert_eq!(sem.snapshot().active, 0);
    assert!(health.snapshot(999_900_000).calls > 0);
}

#[test]
fn rate_limiter_paths_allocate_nothing() {
    use seawall_core::{KeyedRateLimiter, RateLimitError, RateLimiter, RateLimiterConfig};
    // T = 1 ms, burst 3: admissions, rejections and refused cell counts all run.
    let config = RateLimiterConfig {
        rate: 1000,
        period_ns: 1_000_000_000,
        burst: 3,
    };
    let single = RateLimiter::new(config).unwrap();
    let keyed: KeyedRateLimiter<64> = KeyedRateLimiter::new(config, 42).unwrap();
    let (mut admitted, mut rejected, mut invalid) = (0u32, 0u32, 0u32);
    let mut tally = |r: Result<(), RateLimitError>| match r {
        Ok(()) => admitted += 1,
        Err(RateLimitError::Rejected { .. }) => rejected += 1,
        Err(RateLimitError::InvalidCells(_)) => invalid += 1,
    };
    let n = allocations_during(|| {
        for i in 0..10_000u64 {
            let now = i * 300_000;
            let cells = (i % 5) as u32;
            tally(single.try_acquire(cells, now));
            tally(keyed.try_acquire(i % 100, cells, now));
            std::hint::black_box(single.theoretical_arrival_ns());
            std::hint::black_box(keyed.theoretical_arrival_ns(i));
        }
    });
    assert_eq!(n, 0);
    assert!(admitted > 0 && rejected > 0 && invalid > 0);
}
