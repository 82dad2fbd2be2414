//! Multi-thread stress: millions of operations on one breaker / one window from
//! several threads, checking invariants while it runs and exact totals afterwards
//! (each thread counts what it did; the sums must match the structure's counters).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use seawall_core::{
    BreakerConfig, CircuitBreaker, CountWindow, Outcome, PermitToken, Sample, State, TimeWindow,
    WindowConfig,
};

const THREADS: usize = 4;

#[derive(Default, Clone, Copy)]
struct Tally {
    admitted: u64,
    rejected: u64,
    successes: u64,
    failures: u64,
    ignored: u64,
}

fn breaker() -> CircuitBreaker<CountWindow<16>> {
    CircuitBreaker::new(BreakerConfig {
        window: WindowConfig::Count { size: 16 },
        minimum_calls: 8,
        open_duration_ns: 200_000,
        open_backoff_multiplier: seawall_core::Ratio::from_int(2),
        max_open_duration_ns: Some(800_000),
        half_open_max_calls: 3,
        half_open_success_threshold: 2,
        half_open_max_wait_ns: Some(2_000_000),
        ..BreakerConfig::DEFAULT
    })
    .unwrap()
}

/// One worker: acquire, sometimes hold the permit for a while (so outcomes arrive
/// stale), record with a failure rate that flips every 5 ms of virtual time.
fn worker(b: &CircuitBreaker<CountWindow<16>>, clock: &AtomicU64, seed: u64, ops: u64) -> Tally {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut t = Tally::default();
    let mut held: Vec<PermitToken> = Vec::new();
    let record = |t: &mut Tally, p: PermitToken, now: u64, rng: &mut SmallRng| {
        let bad_phase = (now / 5_000_000).is_multiple_of(2);
        let r: f64 = rng.random();
        let o = if r < 0.05 {
            Outcome::Ignored
        } else if r < if bad_phase { 0.8 } else { 0.1 } {
            Outcome::Failure
        } else {
            Outcome::Success
        };
        match o {
            Outcome::Success => t.successes += 1,
            Outcome::Failure => t.failures += 1,
            Outcome::Ignored => t.ignored += 1,
        }
        b.record_token(p, o, rng.random_range(0..1000), now);
    };
    for _ in 0..ops {
        let now = clock.fetch_add(1_000, Ordering::Relaxed);
        match b.acquire_token(now) {
            Ok(p) => {
                t.admitted += 1;
                if held.len() < 4 && rng.random_ratio(1, 8) {
                    held.push(p);
                } else {
                    record(&mut t, p, now, &mut rng);
                }
            }
            Err(_) => t.rejected += 1,
        }
        if !held.is_empty() && rng.random_ratio(1, 4) {
            let p = held.swap_remove(rng.random_range(0..held.len()));
            record(&mut t, p, now, &mut rng);
        }
    }
    let now = clock.load(Ordering::Relaxed);
    for p in held {
        record(&mut t, p, now, &mut rng);
    }
    t
}

#[test]
fn breaker_keeps_exact_totals_and_probe_limit_under_contention() {
    let ops: u64 = if cfg!(debug_assertions) {
        300_000
    } else {
        2_000_000
    };
    let b = Arc::new(breaker());
    let clock = Arc::new(AtomicU64::new(1_000_000_000));
    let done = Arc::new(AtomicBool::new(false));
    let monitor = {
        let (b, clock, done) = (Arc::clone(&b), Arc::clone(&clock), Arc::clone(&done));
        thread::spawn(move || {
            let mut samples = 0u64;
            let mut half_open_seen = 0u64;
            while !done.load(Ordering::Acquire) {
                let m = b.metrics(clock.load(Ordering::Relaxed));
                assert!(
                    m.half_open_in_flight <= 3,
                    "probes in flight {}",
                    m.half_open_in_flight
                );
                assert!(
                    m.window.calls <= 16 && m.window.failures <= m.window.calls,
                    "{:?} {:?}",
                    m.window,
                    m.state
                );
                assert!(m.window.slow <= m.window.calls);
                half_open_seen += u64::from(m.state == State::HalfOpen);
                samples += 1;
            }
            (samples, half_open_seen)
        })
    };
    let workers: Vec<_> = (0..THREADS)
        .map(|i| {
            let (b, clock) = (Arc::clone(&b), Arc::clone(&clock));
            thread::spawn(move || worker(&b, &clock, i as u64, ops))
        })
        .collect();
    let tallies: Vec<Tally> = workers.into_iter().map(|h| h.join().unwrap()).collect();
    done.store(true, Ordering::Release);
    let (samples, _) = monitor.join().unwrap();
    assert!(samples > 0);

    let sum = |f: fn(&Tally) -> u64| tallies.iter().map(f).sum::<u64>();
    let m = b.metrics(clock.load(Ordering::Relaxed));
    let t = m.totals;
    assert_eq!(t.admitted, sum(|t| t.admitted));
    assert_eq!(t.rejected, sum(|t| t.rejected));
    assert_eq!(t.successes, sum(|t| t.successes));
    assert_eq!(t.failures, sum(|t| t.failures));
    assert_eq!(t.ignored, sum(|t| t.ignored));
    assert_eq!(t.admitted + t.rejected, ops * THREADS as u64);
    assert_eq!(
        t.admitted,
        t.successes + t.failures + t.ignored,
        "every permit consumed once"
    );
    assert!(
        t.transitions >= 4,
        "the breaker cycled: {} transitions",
        t.transitions
    );
    assert!(t.stale > 0, "held permits came back stale");
    // Every transition took a new epoch, one number skipped at most so that
    // half-open epochs are odd and all others even.
    let epoch = u64::from(m.epoch);
    assert!(
        (t.transitions..=2 * t.transitions).contains(&epoch),
        "epoch {epoch} after {} transitions",
        t.transitions
    );
    assert_eq!(
        epoch % 2 == 1,
        m.state == State::HalfOpen,
        "epoch {epoch} in {:?}",
        m.state
    );
    if m.state == State::HalfOpen {
        assert_eq!(m.half_open_in_flight, 0, "every probe was recorded");
    }
}

#[test]
fn count_window_counts_every_concurrent_record_exactly() {
    const PER: u64 = 1_000; // 4 threads × 1 000 fit the largest window (4 095)
    let w = Arc::new(CountWindow::<4095>::with_size(4095).unwrap());
    let bar = Arc::new(Barrier::new(THREADS));
    let hs: Vec<_> = (0..THREADS)
        .map(|i| {
            let (w, bar) = (Arc::clone(&w), Arc::clone(&bar));
            thread::spawn(move || {
                bar.wait();
                for k in 0..PER {
                    // thread i fails on every (i+2)-th call, slow on every 3rd
                    let s = Sample {
                        failure: k % (i as u64 + 2) == 0,
                        slow: k % 3 == 0,
                    };
                    w.record(s);
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    let c = w.counts();
    let fails: u64 = (0..THREADS as u64).map(|i| PER.div_ceil(i + 2)).sum();
    let slow = PER.div_ceil(3) * THREADS as u64;
    let slow_fails: u64 = (0..THREADS as u64)
        .map(|i| (0..PER).filter(|k| k % (i + 2) == 0 && k % 3 == 0).count() as u64)
        .sum();
    assert_eq!(c.calls, PER * THREADS as u64);
    assert_eq!(
        (c.failures, c.slow, c.slow_failures),
        (fails, slow, slow_fails)
    );
}

#[test]
fn count_window_evicts_exactly_under_contention() {
    // Every thread records failures only in the first half and successes only in the
    // second, with a barrier between: after the second half the window of 64 holds
    // exactly 64 successes, whatever the interleaving of evictions.
    let w = Arc::new(CountWindow::<64>::with_size(64).unwrap());
    let bar = Arc::new(Barrier::new(THREADS));
    let hs: Vec<_> = (0..THREADS)
        .map(|_| {
            let (w, bar) = (Arc::clone(&w), Arc::clone(&bar));
            thread::spawn(move || {
                for _ in 0..50_000 {
                    w.record(Sample {
                        failure: true,
                        slow: true,
                    });
                }
                bar.wait();
                let mid = w.counts();
                assert_eq!((mid.calls, mid.failures, mid.slow), (64, 64, 64));
                bar.wait();
                for _ in 0..50_000 {
                    w.record(Sample::default());
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    let c = w.counts();
    assert_eq!(
        (c.calls, c.failures, c.slow, c.slow_failures),
        (64, 0, 0, 0)
    );
}

#[test]
fn time_window_rotation_loses_no_record_of_the_new_epoch() {
    // All threads record K outcomes in epoch e, between barriers, for e = 0..E: the
    // first records of each epoch race to rotate the slot. Afterwards the window
    // must hold exactly K·THREADS per live epoch.
    const K: u64 = 3_000;
    const EPOCHS: u64 = 40;
    const WIDTH: u64 = 1_000_000;
    const BUCKETS: u32 = 4;
    let w = Arc::new(TimeWindow::<BUCKETS_USIZE>::with_buckets(BUCKETS, WIDTH).unwrap());
    let bar = Arc::new(Barrier::new(THREADS));
    let hs: Vec<_> = (0..THREADS)
        .map(|i| {
            let (w, bar) = (Arc::clone(&w), Arc::clone(&bar));
            thread::spawn(move || {
                for e in 0..EPOCHS {
                    bar.wait();
                    for k in 0..K {
                        let now = e * WIDTH + (k * 97 + i as u64) % WIDTH;
                        w.record(
                            Sample {
                                failure: (k + e) % 5 == 0,
                                slow: false,
                            },
                            now,
                        );
                    }
                    bar.wait();
                    let live = (e + 1).min(u64::from(BUCKETS));
                    let c = w.counts(e * WIDTH);
                    assert_eq!(c.calls, live * K * THREADS as u64, "epoch {e}");
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    let last = EPOCHS - 1;
    let c = w.counts(last * WIDTH);
    let fails: u64 = (last + 1 - u64::from(BUCKETS)..=last)
        .map(|e| (0..K).filter(|k| (k + e) % 5 == 0).count() as u64 * THREADS as u64)
        .sum();
    assert_eq!(c.calls, u64::from(BUCKETS) * K * THREADS as u64);
    assert_eq!(c.failures, fails);
    // An idle gap of a whole window empties it.
    assert_eq!(w.counts((last + u64::from(BUCKETS)) * WIDTH).calls, 0);
}

const BUCKETS_USIZE: usize = 4;
