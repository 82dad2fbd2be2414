//! Multi-thread stress of the retry budget, retry throttle, semaphore and health
//! window: invariants checked while they run, exact totals afterwards (each
//! thread counts what it did; the sums must match the structure's counters or a
//! value worked out by hand).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::Duration;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use seawall_core::{
    Admission, BlockingSemaphore, Health, HealthConfig, Priority, PriorityShares, Ratio,
    RetryBudget, RetryBudgetConfig, RetryThrottle, RetryThrottleConfig, Semaphore, SemaphoreConfig,
    WaitError,
};

mod model;

const THREADS: usize = 4;

fn ops(debug: u64, release: u64) -> u64 {
    if cfg!(debug_assertions) {
        debug
    } else {
        release
    }
}

#[test]
fn budget_never_overdraws_under_contention() {
    // 4 threads deposit 10 000 requests each at 30 % (a balance of exactly 12 000
    // retries, plus a reserve of 5/s · 10 s = 50), then all race to withdraw
    // 5 000 each: exactly 12 050 succeed, whatever the interleaving.
    let b = Arc::new(
        RetryBudget::new(RetryBudgetConfig {
            ttl_ns: 10_000_000_000,
            min_retries_per_sec: 5,
            percent_can_retry: Ratio::from_percent(30),
        })
        .unwrap(),
    );
    let bar = Arc::new(Barrier::new(THREADS));
    let hs: Vec<_> = (0..THREADS)
        .map(|_| {
            let (b, bar) = (Arc::clone(&b), Arc::clone(&bar));
            thread::spawn(move || {
                for _ in 0..10_000 {
                    b.deposit(1_000);
                }
                bar.wait();
                (0..5_000).filter(|_| b.try_withdraw(1_000)).count() as u64
            })
        })
        .collect();
    let allowed: u64 = hs.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(allowed, 12_050);
    let s = b.snapshot(1_000);
    assert_eq!((s.requests, s.retries, s.available()), (40_000, 12_050, 0));
}

#[test]
fn budget_rotation_under_contention_matches_the_sequential_budget() {
    // Phases of one bucket each, for 25 buckets (2.5 ttl): in each, all threads
    // deposit, then (after a barrier) all race to withdraw. Whatever the
    // interleaving, the retries allowed in a phase are exactly what the sequential
    // reference model allows for the same deposits and attempts — the racing
    // rotations lose no deposit and no withdrawal.
    const PHASES: u64 = 25;
    const W: u64 = 1_000_000;
    let b = Arc::new(
        RetryBudget::new(RetryBudgetConfig {
            ttl_ns: 10 * W,
            min_retries_per_sec: 300, // reserve 300 · 0.01 s = 3 retries
            percent_can_retry: Ratio::from_percent(20),
        })
        .unwrap(),
    );
    let allowed: Arc<Vec<AtomicU64>> = Arc::new((0..PHASES).map(|_| AtomicU64::new(0)).collect());
    let bar = Arc::new(Barrier::new(THREADS));
    // thread i deposits 10·(i+1) + phase requests and attempts 3 + phase retries
    let deposits = |i: u64, e: u64| 10 * (i + 1) + e;
    let attempts = |e: u64| 3 + e % 7;
    let hs: Vec<_> = (0..THREADS as u64)
        .map(|i| {
            let (b, allowed, bar) = (Arc::clone(&b), Arc::clone(&allowed), Arc::clone(&bar));
            thread::spawn(move || {
                for e in 0..PHASES {
                    let now = e * W + i * 1_000;
                    bar.wait();
                    for _ in 0..deposits(i, e) {
                        b.deposit(now);
                    }
                    bar.wait();
                    let n = (0..attempts(e)).filter(|_| b.try_withdraw(now)).count();
                    allowed[e as usize].fetch_add(n as u64, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    let mut m = model::retry::MBudget::new(10 * W, 300, 200_000);
    for e in 0..PHASES {
        let now = e * W;
        for i in 0..THREADS as u64 {
            for _ in 0..deposits(i, e) {
                m.deposit(now);
            }
        }
        let want = (0..attempts(e) * THREADS as u64)
            .filter(|_| m.withdraw(now))
            .count() as u64;
        assert_eq!(
            allowed[e as usize].load(Ordering::Relaxed),
            want,
            "phase {e}"
        );
    }
}

#[test]
fn throttle_counts_every_failure_under_contention() {
    // Only failures, from full (1 000 tokens): the k-th failure in linear order
    // leaves 1 000 − k tokens, so exactly the first 499 are retried (501 > 500),
    // whatever thread makes them; the rest find the floor of 0.
    let t = Arc::new(
        RetryThrottle::new(RetryThrottleConfig {
            max_milli_tokens: 1_000_000,
            token_ratio_milli: 1,
        })
        .unwrap(),
    );
    let hs: Vec<_> = (0..THREADS)
        .map(|_| {
            let t = Arc::clone(&t);
            thread::spawn(move || (0..1_000).filter(|_| t.record_failure()).count())
        })
        .collect();
    let retried: usize = hs.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(retried, 499);
    assert_eq!(t.milli_tokens(), 0);
}

#[test]
fn throttle_successes_and_failures_balance_exactly() {
    // Start full at 1 000 tokens; 4 threads each make 2 000 failures and 2 000
    // successes of 1 token, alternating F, S: every success follows a failure of
    // its own thread, so no clamp at the top ever applies and tokens never reach
    // 0 — the end is exactly where it began.
    let t = Arc::new(
        RetryThrottle::new(RetryThrottleConfig {
            max_milli_tokens: 1_000_000,
            token_ratio_milli: 1_000,
        })
        .unwrap(),
    );
    let hs: Vec<_> = (0..THREADS)
        .map(|_| {
            let t = Arc::clone(&t);
            thread::spawn(move || {
                for _ in 0..2_000 {
                    let _ = t.record_failure();
                    t.record_success();
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    assert_eq!(t.milli_tokens(), 1_000_000);
}

#[derive(Default)]
struct Tally {
    admitted: u64,
    granted: u64,
    queued: u64,
    cancelled: u64,
    passed_on: u64,
    rejected: u64,
}

#[test]
fn semaphore_bounds_hold_and_nothing_leaks_under_contention() {
    const MAX: u32 = 3;
    const QUEUE: u32 = 4;
    let s: Arc<Semaphore<8>> = Arc::new(
        Semaphore::new(SemaphoreConfig {
            max_concurrent: MAX,
            max_queue: QUEUE,
            shares: PriorityShares::SEED_LOAD_SHEDDING,
        })
        .unwrap(),
    );
    let inside = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let monitor = {
        let (s, done) = (Arc::clone(&s), Arc::clone(&done));
        thread::spawn(move || {
            let mut checks = 0u64;
            while !done.load(Ordering::Acquire) {
                let snap = s.snapshot();
                assert!(snap.active <= MAX && snap.queued <= QUEUE, "{snap:?}");
                checks += 1;
            }
            checks
        })
    };
    let n = ops(100_000, 1_000_000);
    let hs: Vec<_> = (0..THREADS)
        .map(|i| {
            let (s, inside) = (Arc::clone(&s), Arc::clone(&inside));
            thread::spawn(move || {
                let mut rng = SmallRng::seed_from_u64(100 + i as u64);
                let mut t = Tally::default();
                // Hold the permit for a short random spin, so that permits run out
                // and waiters really get handed over.
                let hold = |inside: &AtomicU64, spins: u32| {
                    let k = inside.fetch_add(1, Ordering::SeqCst) + 1;
                    assert!(k <= u64::from(MAX), "{k} holders");
                    for _ in 0..spins {
                        std::hint::spin_loop();
                    }
                    inside.fetch_sub(1, Ordering::SeqCst);
                };
                for _ in 0..n {
                    // 5 calls in 8 critical (the only priority whose limit is max, so the
                    // only one that queues), the rest spread over the shed ones
                    let p = Priority::ALL[rng.random_range(0usize..8).saturating_sub(4)];
                    match s.acquire_or_wait(p) {
                        Ok(Admission::Admitted(permit)) => {
                            t.admitted += 1;
                            hold(&inside, rng.random_range(0..200));
                            drop(permit);
                        }
                        Ok(Admission::Queued(w)) => {
                            t.queued += 1;
                            // Poll a while, then either take the permit or give up.
                            let polls = rng.random_range(0..50);
                            let granted = (0..polls).any(|_| {
                                std::hint::spin_loop();
                                w.is_granted()
                            });
                            match w.try_into_permit() {
                                Ok(permit) => {
                                    t.granted += 1;
                                    hold(&inside, rng.random_range(0..200));
                                    drop(permit);
                                }
                                Err(w) => {
                                    assert!(!granted, "a grant is never taken back");
                                    match w.cancel() {
                                        seawall_core::CancelOutcome::Cancelled => t.cancelled += 1,
                                        seawall_core::CancelOutcome::PassedOn => t.passed_on += 1,
                                        seawall_core::CancelOutcome::Unknown => {
                                            panic!("a live waiter is unknown")
                                        }
                                    }
                                }
                            }
                        }
                        Err(_) => t.rejected += 1,
                    }
                }
                t
            })
        })
        .collect();
    let tallies: Vec<Tally> = hs.into_iter().map(|h| h.join().unwrap()).collect();
    done.store(true, Ordering::Release);
    assert!(monitor.join().unwrap() > 0);
    let sum = |f: fn(&Tally) -> u64| tallies.iter().map(f).sum::<u64>();
    assert_eq!(
        sum(|t| t.admitted) + sum(|t| t.queued) + sum(|t| t.rejected),
        n * THREADS as u64
    );
    assert_eq!(
        sum(|t| t.queued),
        sum(|t| t.granted) + sum(|t| t.cancelled) + sum(|t| t.passed_on)
    );
    assert!(sum(|t| t.granted) > 0, "hand-offs happened");
    assert!(sum(|t| t.cancelled) > 0, "cancellations happened");
    let snap = s.snapshot();
    assert_eq!((snap.active, snap.queued), (0, 0), "no leaked permit");
}

#[test]
fn blocking_semaphore_serves_waiters_and_times_out_cleanly() {
    // 1 permit, 6 threads × 200 acquires with a generous timeout: every acquire
    // succeeds in the end (FIFO hand-off, no lost wake-up), and the count of
    // threads inside never exceeds 1.
    let s: Arc<BlockingSemaphore<8>> = Arc::new(
        BlockingSemaphore::new(SemaphoreConfig {
            max_concurrent: 1,
            max_queue: 8,
            ..SemaphoreConfig::DEFAULT
        })
        .unwrap(),
    );
    let inside = Arc::new(AtomicU64::new(0));
    let hs: Vec<_> = (0..6)
        .map(|_| {
            let (s, inside) = (Arc::clone(&s), Arc::clone(&inside));
            thread::spawn(move || {
                let mut ok = 0;
                for _ in 0..200 {
                    let p = s
                        .acquire_timeout(Priority::Normal, Duration::from_secs(30))
                        .expect("a permit within 30 s");
                    assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0);
                    inside.fetch_sub(1, Ordering::SeqCst);
                    drop(p);
                    ok += 1;
                }
                ok
            })
        })
        .collect();
    let ok: u32 = hs.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(ok, 1_200);
    // A held permit makes a short wait time out, and the waiter leaves no trace.
    let held = s
        .acquire_timeout(Priority::Normal, Duration::from_millis(1))
        .unwrap();
    assert_eq!(
        s.acquire_timeout(Priority::Normal, Duration::from_millis(20))
            .unwrap_err(),
        WaitError::TimedOut
    );
    let snap = s.inner().snapshot();
    assert_eq!((snap.active, snap.queued), (1, 0));
    drop(held);
    assert_eq!(s.inner().snapshot().active, 0);
}

#[test]
fn health_rotation_loses_no_record_under_contention() {
    // All threads record K calls per epoch between barriers (the first records
    // of each epoch race to rotate the bucket): the window must hold exactly
    // K·THREADS calls per live epoch, with exact errors and latencies.
    const K: u64 = 2_000;
    const EPOCHS: u64 = 12;
    const W: u64 = 1_000_000;
    let h: Arc<Health<3>> = Arc::new(
        Health::new(HealthConfig {
            buckets: 3,
            bucket_width_ns: W,
            ..HealthConfig::DEFAULT
        })
        .unwrap(),
    );
    let bar = Arc::new(Barrier::new(THREADS));
    let hs: Vec<_> = (0..THREADS)
        .map(|i| {
            let (h, bar) = (Arc::clone(&h), Arc::clone(&bar));
            thread::spawn(move || {
                for e in 0..EPOCHS {
                    bar.wait();
                    for k in 0..K {
                        let now = e * W + (k * 31 + i as u64) % W;
                        // latencies cycle over 8 values, some in the same bucket
                        h.record(1_000 * (k % 8 + 1), (k + e) % 4 == 0, now);
                    }
                    bar.wait();
                    let live = (e + 1).min(3);
                    let s = h.snapshot(e * W);
                    assert_eq!(s.calls, live * K * THREADS as u64, "epoch {e}");
                    assert_eq!(s.latencies, s.calls, "epoch {e}");
                }
            })
        })
        .collect();
    for t in hs {
        t.join().unwrap();
    }
    let last = EPOCHS - 1;
    let s = h.snapshot(last * W);
    let errors: u64 = (last - 2..=last)
        .map(|e| (0..K).filter(|k| (k + e) % 4 == 0).count() as u64 * THREADS as u64)
        .sum();
    assert_eq!((s.calls, s.errors), (3 * K * THREADS as u64, errors));
    // latencies 1..8 µs equally often: the median is 4 µs, p99 8 µs, each
    // reported at its bucket's midpoint (4 000 → [3 968, 4 096) → 4 032;
    // 8 000 → [7 936, 8 192) → 8 064).
    assert_eq!(s.p50_ns, Some(4_032));
    assert_eq!(s.p99_ns, Some(8_064));
    assert_eq!(
        h.snapshot((last + 3) * W).calls,
        0,
        "an idle window empties"
    );
}
