//! The safe Rust API the Python and Node bindings use for the semaphore, retry
//! budget, retry throttle and health window, in this process or shared: sizes
//! worked out by hand, one structure seen through every handle, single-use
//! permits and tickets, and a threaded stress of the semaphore's protocol.

// The loom build compiles only the table models (tests/loom_*.rs).
#![cfg(not(loom))]
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use seawall_core::{
    HealthConfig, Priority, RetryBudgetConfig, RetryThrottleConfig, SemaphoreConfig,
};
use seawall_host::health::{Health, HealthWindow};
use seawall_host::holders::HolderError;
use seawall_host::retry::{RetryBudget, RetryThrottle};
use seawall_host::semaphore::{Acquired, Cancelled, Polled, Semaphore, Snapshot, WaitError};
use seawall_host::shared::{OpenOptions, RegionError, SharedRegion};

fn quick() -> OpenOptions {
    OpenOptions {
        init_timeout: Duration::from_millis(200),
    }
}

fn name(tag: &str) -> String {
    format!("rust-handles-{}-{tag}", std::process::id())
}

fn sem_config(max_concurrent: u32, max_queue: u32) -> SemaphoreConfig {
    SemaphoreConfig {
        max_concurrent,
        max_queue,
        ..SemaphoreConfig::DEFAULT
    }
}

/// Region sizes on x86-64 (128-byte lines), from the layouts: a 128-byte header,
/// then the structure rounded to its 128-byte alignment.
#[cfg(target_arch = "x86_64")]
#[test]
fn region_sizes() {
    const LINE: usize = 128;
    let up = |n: usize| n.div_ceil(LINE) * LINE;
    // Semaphore<1024>: state line, 1024 slots of 8 bytes, config 4+4+4·8 and
    // limits 4·4; then the holder table: salt line, 5120 slots of 8 bytes and
    // 5120 core tickets of 4 bytes; then the release counter and the sleepers
    // (4 bytes each) and the heal gate (8), rounded up to the line; then the
    // totals: two striped counters of 4 lines and one line of wait counts.
    let semaphore = up(LINE + 1024 * 8 + 40 + 16);
    let holders = LINE + 5120 * 8 + 5120 * 4;
    let totals = 2 * 4 * LINE + LINE;
    assert_eq!(
        Semaphore::region_size(),
        LINE + up(semaphore + holders + 4 + 4 + 8) + totals
    );
    assert_eq!(Semaphore::region_size(), 71_424);
    // RetryBudget: head line, 10 archive words of 16 bytes, config 24, two u64,
    // then the totals' line.
    assert_eq!(
        RetryBudget::region_size(),
        LINE + up(LINE + 160 + 24 + 16) + LINE
    );
    assert_eq!(RetryBudget::region_size(), 640);
    // RetryThrottle: one u64, two u32 and two u64 totals, after the header.
    assert_eq!(RetryThrottle::region_size(), LINE + 32);
    // Health<60>: head line, 60 slots of (16 + 512 · 8) bytes, config 48.
    assert_eq!(Health::region_size(), LINE + up(LINE + 60 * 4112 + 48));
    assert_eq!(Health::region_size(), 247_040);
    for align in [
        Semaphore::region_align(),
        RetryBudget::region_align(),
        RetryThrottle::region_align(),
        Health::region_align(),
    ] {
        assert_eq!(align, 128);
    }
    assert_eq!(SharedRegion::<HealthWindow>::SIZE, Health::region_size());
}

#[test]
fn semaphore_protocol_through_the_safe_api() {
    let s = Semaphore::new(&sem_config(1, 2)).unwrap();
    assert!(!s.is_shared() && s.created());
    let p = s.try_acquire(Priority::Normal).unwrap();
    let Ok(Acquired::Queued(t1)) = s.acquire_or_enqueue(Priority::Low) else {
        panic!("queues behind the holder");
    };
    let Ok(Acquired::Queued(t2)) = s.acquire_or_enqueue(Priority::High) else {
        panic!("queues second");
    };
    assert!(s.acquire_or_enqueue(Priority::High).is_err(), "queue full");
    assert_eq!(s.poll(t1), Ok(Polled::Waiting));
    s.release(p).unwrap();
    assert_eq!(s.release(p), Err(HolderError::AlreadyUsed));
    // FIFO: the low-priority waiter, first in line, gets it.
    assert_eq!(s.poll(t2), Ok(Polled::Waiting));
    let Ok(Polled::Granted(q)) = s.poll(t1) else {
        panic!("t1 was granted");
    };
    assert_eq!(q.id, t1.id);
    assert_eq!(s.poll(t1), Err(HolderError::UnknownTicket));
    assert_eq!(s.cancel(t2), Ok(Cancelled::Cancelled));
    assert_eq!(s.cancel(t2), Err(HolderError::UnknownTicket));
    let f = s.full_snapshot();
    assert_eq!(
        (
            f.active,
            f.queued,
            f.permits_outstanding,
            f.tickets_outstanding
        ),
        (1, 0, 1, 0)
    );
    // Blocking: times out while q is held, then gets the permit a thread frees.
    let started = Instant::now();
    assert_eq!(
        s.acquire_timeout(Priority::Normal, Some(Duration::from_millis(15))),
        Err(WaitError::TimedOut)
    );
    assert!(started.elapsed() >= Duration::from_millis(15));
    std::thread::scope(|sc| {
        sc.spawn(|| {
            std::thread::sleep(Duration::from_millis(20));
            s.release(q).unwrap();
        });
        let r = s.acquire_timeout(Priority::Normal, None).unwrap();
        s.release(r).unwrap();
    });
    assert_eq!(s.full_snapshot(), Snapshot::default());
    // A zero timeout never queues; here a permit is free.
    let p = s
        .acquire_timeout(Priority::Low, Some(Duration::ZERO))
        .unwrap();
    s.release(p).unwrap();
}

#[test]
fn one_semaphore_shared_by_two_handles() {
    let n = name("sem");
    Semaphore::unlink_shared(&n).unwrap();
    let cfg = sem_config(2, 1);
    let a = Semaphore::open_shared(&n, &cfg, &quick()).unwrap();
    let b = Semaphore::open_shared(&n, &cfg, &quick()).unwrap();
    assert!(a.created() && !b.created() && a.is_shared());
    let p1 = a.try_acquire(Priority::Critical).unwrap();
    let p2 = b.try_acquire(Priority::Critical).unwrap();
    let Ok(Acquired::Queued(t)) = a.acquire_or_enqueue(Priority::Critical) else {
        panic!("full: queues");
    };
    b.release(p1).unwrap();
    assert_eq!(a.release(p1), Err(HolderError::AlreadyUsed));
    let Ok(Polled::Granted(p3)) = b.poll(t) else {
        panic!("granted through the other handle");
    };
    a.release(p2).unwrap();
    b.release(p3).unwrap();
    assert_eq!(a.snapshot().active, 0);
    let e = Semaphore::open_shared(&n, &sem_config(3, 1), &quick()).unwrap_err();
    assert!(matches!(e, RegionError::ConfigMismatch { .. }), "{e}");
    Semaphore::unlink_shared(&n).unwrap();
}

/// Threads hammer one semaphore with every operation; a counter incremented
/// after a permit is obtained and decremented before its release never exceeds
/// `max_concurrent`, and at the end nothing is held, queued or outstanding.
#[test]
fn threads_never_exceed_the_bulkhead_and_leak_nothing() {
    const MAX: i64 = 3;
    let s = Semaphore::new(&sem_config(3, 4)).unwrap();
    let in_use = AtomicI64::new(0);
    let peak = AtomicI64::new(0);
    let obtained = AtomicU64::new(0);
    let hold = |p| {
        let now = in_use.fetch_add(1, Ordering::SeqCst) + 1;
        peak.fetch_max(now, Ordering::SeqCst);
        assert!(now <= MAX, "{now} permits in use");
        obtained.fetch_add(1, Ordering::Relaxed);
        std::thread::yield_now();
        in_use.fetch_sub(1, Ordering::SeqCst);
        s.release(p).unwrap();
    };
    std::thread::scope(|sc| {
        for seed in 0..6u64 {
            let (s, hold) = (&s, &hold);
            sc.spawn(move || {
                let mut r = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
                for _ in 0..3000 {
                    r ^= r << 13;
                    r ^= r >> 7;
                    r ^= r << 17;
                    let prio = Priority::ALL[(r % 4) as usize];
                    let snap = s.snapshot();
                    assert!(snap.active <= 3 && snap.queued <= 4, "{snap:?}");
                    match (r >> 8) % 3 {
                        0 => {
                            if let Ok(p) = s.try_acquire(prio) {
                                hold(p);
                            }
                        }
                        1 => match s.acquire_or_enqueue(prio) {
                            Ok(Acquired::Admitted(p)) => hold(p),
                            Ok(Acquired::Queued(t)) => {
                                let mut granted = None;
                                for _ in 0..(r >> 16) % 32 {
                                    if let Polled::Granted(p) = s.poll(t).unwrap() {
                                        granted = Some(p);
                                        break;
                                    }
                                    std::thread::yield_now();
                                }
                                match granted {
                                    Some(p) => hold(p),
                                    None => {
                                        s.cancel(t).unwrap();
                                    }
                                }
                            }
                            Err(_) => {}
                        },
                        _ => {
                            let t = Duration::from_micros(50 + (r >> 20) % 500);
                            if let Ok(p) = s.acquire_timeout(prio, Some(t)) {
                                hold(p);
                            }
                        }
                    }
                }
            });
        }
    });
    let f = s.full_snapshot();
    assert_eq!(
        (
            f.active,
            f.queued,
            f.permits_outstanding,
            f.tickets_outstanding
        ),
        (0, 0, 0, 0)
    );
    assert_eq!(in_use.load(Ordering::SeqCst), 0);
    assert_eq!(peak.load(Ordering::SeqCst), MAX);
    assert!(obtained.load(Ordering::Relaxed) > 1000);
}

#[test]
fn budget_throttle_and_health_shared_by_two_handles() {
    let n = name("retry");
    RetryBudget::unlink_shared(&n).unwrap();
    RetryThrottle::unlink_shared(&n).unwrap();
    Health::unlink_shared(&n).unwrap();

    // Finagle oracle (DESIGN §4): ttl 1 s, min 0, 60 %: 10 requests buy 6 retries,
    // whichever handle deposits or withdraws.
    let bc = RetryBudgetConfig {
        ttl_ns: 1_000_000_000,
        min_retries_per_sec: 0,
        percent_can_retry: seawall_core::Ratio::from_percent(60),
    };
    let b1 = RetryBudget::open_shared(&n, &bc, &quick()).unwrap();
    let b2 = RetryBudget::open_shared(&n, &bc, &quick()).unwrap();
    assert!(b1.created() && !b2.created());
    for _ in 0..10 {
        b1.deposit(5);
    }
    let allowed = (0..10)
        .filter(|i| if i % 2 == 0 { &b1 } else { &b2 }.try_withdraw(5))
        .count();
    assert_eq!(allowed, 6);
    let e = RetryBudget::open_shared(
        &n,
        &RetryBudgetConfig {
            min_retries_per_sec: 1,
            ..bc
        },
        &quick(),
    )
    .unwrap_err();
    assert!(matches!(e, RegionError::ConfigMismatch { .. }), "{e}");

    // gRPC oracle (10, 0.1): failures 1-4 retried, the 5th not.
    let tc = RetryThrottleConfig::DEFAULT;
    let t1 = RetryThrottle::open_shared(&n, &tc, &quick()).unwrap();
    let t2 = RetryThrottle::open_shared(&n, &tc, &quick()).unwrap();
    let verdicts: Vec<bool> = (0..5)
        .map(|i| if i % 2 == 0 { &t1 } else { &t2 }.record_failure())
        .collect();
    assert_eq!(verdicts, [true, true, true, true, false]);
    assert_eq!(t1.milli_tokens(), 5000);

    let h1 = Health::open_shared(&n, &HealthConfig::DEFAULT, &quick()).unwrap();
    let h2 = Health::open_shared(&n, &HealthConfig::DEFAULT, &quick()).unwrap();
    h1.record(1_000_000, true, 10);
    h2.record(1_000_000, false, 10);
    let s = h1.snapshot(10);
    assert_eq!((s.calls, s.errors), (2, 1));
    // 50 % errors: above 10 %, not above 50 % (compared strictly): degraded.
    assert_eq!(s.status, seawall_core::HealthStatus::Degraded);
    RetryBudget::unlink_shared(&n).unwrap();
    RetryThrottle::unlink_shared(&n).unwrap();
    Health::unlink_shared(&n).unwrap();
}

/// The bindings keep these in objects of a garbage-collected runtime, used from
/// any thread (a `PyO3` `#[pyclass]`, a napi-rs class): they must be `Send + Sync`.
#[test]
fn every_handle_is_send_and_sync() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Semaphore>();
    send_sync::<RetryBudget>();
    send_sync::<RetryThrottle>();
    send_sync::<Health>();
    send_sync::<seawall_host::breaker::Breaker>();
}
