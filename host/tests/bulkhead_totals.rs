//! DESIGN §8, "One set of totals": a shared bulkhead's lifetime figures live in
//! its region, so every handle (every process) reports the same ones; a local
//! bulkhead counts the same way. Expected figures are worked out by hand from
//! the sequence of calls.

#![cfg(not(loom))]

use seawall_core::{Priority, PriorityShares, Ratio, SemaphoreConfig};
use seawall_host::semaphore::{Acquired, BulkheadTotals, GaveUp, Polled, Semaphore};
use seawall_host::shared::OpenOptions;

/// Two permits, one place to wait; `low` may hold only half of them (one).
fn config() -> SemaphoreConfig {
    SemaphoreConfig {
        max_concurrent: 2,
        max_queue: 1,
        shares: PriorityShares {
            low: Ratio::from_percent(50),
            ..PriorityShares::ALL_FULL
        },
    }
}

/// The sequence, over two handles `a` and `b` (the same semaphore, or the same
/// local one twice):
/// 1. a: two normal permits — admitted 2.
/// 2. b: a low caller with 2 held (low's limit 1) — shed 1.
/// 3. b: a normal try — full 1.
/// 4. b: a normal wait — queued; a releases one — granted to b — admitted 3.
/// 5. a: a normal wait — queued; it gives up (timed out) — timeout 1.
/// 6. a: a wait with the queue full — full 2.
fn run(a: &Semaphore, b: &Semaphore) {
    let p1 = a.try_acquire(Priority::Normal).unwrap();
    let _p2 = a.try_acquire(Priority::Normal).unwrap();
    assert!(b.try_acquire(Priority::Low).is_err());
    assert!(b.try_acquire(Priority::Normal).is_err());
    let Ok(Acquired::Queued(t)) = b.acquire_or_enqueue(Priority::Normal) else {
        panic!("b waits");
    };
    a.release(p1).unwrap();
    assert!(matches!(b.poll(t), Ok(Polled::Granted(_))));
    let Ok(Acquired::Queued(t2)) = a.acquire_or_enqueue(Priority::Normal) else {
        panic!("a waits");
    };
    assert!(
        a.acquire_or_enqueue(Priority::Normal).is_err(),
        "the queue is full"
    );
    a.cancel(t2).unwrap();
    a.gave_up(GaveUp::TimedOut);
}

const EXPECTED: BulkheadTotals = BulkheadTotals {
    admitted: 3,
    rejected_shed: 1,
    rejected_full: 2,
    rejected_timeout: 1,
    aborted: 0,
};

#[test]
fn every_handle_of_a_shared_bulkhead_reports_the_same_totals() {
    let name = format!("rust-test-totals-{}", std::process::id());
    let a = Semaphore::open_shared(&name, &config(), &OpenOptions::default()).unwrap();
    let b = Semaphore::open_shared(&name, &config(), &OpenOptions::default()).unwrap();
    run(&a, &b);
    let (ta, tb) = (a.totals(), b.totals());
    let _ = Semaphore::unlink_shared(&name);
    assert_eq!(ta, EXPECTED);
    assert_eq!(tb, EXPECTED);
}

#[test]
fn a_local_bulkhead_counts_the_same() {
    let a = Semaphore::local(&config()).unwrap();
    run(&a, &a);
    assert_eq!(a.totals(), EXPECTED);
    let tracked = Semaphore::new(&config()).unwrap();
    run(&tracked, &tracked);
    assert_eq!(tracked.totals(), EXPECTED);
}

#[test]
fn admitted_never_goes_back_while_callers_race_the_reads() {
    let sem = Semaphore::new(&SemaphoreConfig {
        max_concurrent: 4,
        max_queue: 4,
        ..SemaphoreConfig::DEFAULT
    })
    .unwrap();
    let rounds = 20_000;
    std::thread::scope(|s| {
        for _ in 0..3 {
            s.spawn(|| {
                for _ in 0..rounds {
                    match sem.acquire_or_enqueue(Priority::Normal) {
                        Ok(Acquired::Admitted(p)) => sem.release(p).unwrap(),
                        Ok(Acquired::Queued(t)) => loop {
                            match sem.poll(t) {
                                Ok(Polled::Granted(p)) => break sem.release(p).unwrap(),
                                Ok(Polled::Waiting) => std::thread::yield_now(),
                                Err(e) => panic!("{e:?}"),
                            }
                        },
                        Err(_) => {}
                    }
                }
            });
        }
        let mut last = 0;
        for _ in 0..2_000 {
            let now = sem.totals().admitted;
            assert!(now >= last, "admitted went back from {last} to {now}");
            last = now;
        }
    });
    let t = sem.totals();
    // Every call was admitted at once, or queued and granted, or refused.
    assert_eq!(t.admitted + t.rejected_full + t.rejected_shed, 3 * rounds);
}
