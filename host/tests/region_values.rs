//! Values read from a region whose bytes were overwritten while processes are
//! attached (DESIGN §8: content is untrusted). The handles read back what the
//! overwrite left — a breaker open for 54 years, 693800 permits held in a
//! bulkhead of 4, a rate limiter of burst 0 that blames its caller — and the
//! checks of `shared::sanity`, given the configuration this process holds
//! (`config_checked`), turn each into `Corrupt`; honest values of the same
//! structures pass. Each region is built in caller memory, as another process
//! would map it, and overwritten at the places the core's layouts give (read
//! back first where the test relies on them).

#![cfg(not(loom))]

mod common;

use common::Memory;

use seawall_core::{
    BreakerConfig, Corrupt, Outcome, Priority, RateLimitError, RateLimiterConfig, Ratio,
    SemaphoreConfig, State, WindowConfig,
};
use seawall_host::breaker::{Breaker, CountCell};
use seawall_host::rate_limiter::RateLimiter;
use seawall_host::semaphore::{Cell as SemaphoreCell, Semaphore};
use seawall_host::shared::sanity::{
    check_breaker_metrics, check_rate_limit, check_rejected, check_retry_after, check_snapshot,
    longest_open_ns,
};
use seawall_host::shared::{OpenOptions, SharedRegion};

const MS: u64 = 1_000_000;
const SEC: u64 = 1_000_000_000;

fn breaker_config() -> BreakerConfig {
    BreakerConfig {
        window: WindowConfig::Count { size: 8 },
        minimum_calls: 4,
        consecutive_failures: Some(5),
        open_duration_ns: 30 * SEC,
        open_backoff_multiplier: Ratio::from_percent(200),
        max_open_duration_ns: Some(300 * SEC),
        half_open_max_calls: 2,
        half_open_success_threshold: 2,
        ..BreakerConfig::DEFAULT
    }
}

/// The state word's low half (DESIGN §3.5, the core's `state.rs`): state (3
/// bits), epoch (28), two 11-bit counters, k (11).
fn state_word(state: u64, epoch: u64, a: u64, b: u64, k: u64) -> u64 {
    state | epoch << 3 | a << 31 | b << 42 | k << 53
}

#[test]
fn a_breaker_open_for_54_years_is_corrupt() {
    let config = breaker_config();
    let mem = Memory::new(Breaker::region_size(), Breaker::region_align());
    // SAFETY: fresh memory of the advertised size and alignment, ours alone
    // until the handles below are gone.
    let b = unsafe { Breaker::init_in(mem.ptr, mem.len(), &config) }.unwrap();
    // SAFETY: as above; the region `init_in` built.
    let held = unsafe { SharedRegion::<CountCell>::attach(mem.ptr, mem.len()) }
        .unwrap()
        .config_checked()
        .unwrap();
    assert_eq!(held, config);
    let longest = longest_open_ns(&held);
    // 30 s doubling per opening, capped at 300 s; no jitter.
    assert_eq!(longest, 300 * SEC);

    // Honest: 4 failures at t = 1 s open it for 30 s (rate 100 % ≥ 50 % over
    // the minimum of 4 calls).
    let t = SEC;
    for _ in 0..4 {
        let p = b.try_acquire(t).unwrap();
        b.record(p, Outcome::Failure, 0, t).unwrap();
    }
    let now = t + 10 * SEC;
    assert_eq!(b.retry_after(now), Some(20 * SEC));
    assert_eq!(
        check_retry_after(&held, b.retry_after(now)),
        Ok(Some(20 * SEC))
    );
    let rejected = match b.try_acquire(now) {
        Err(seawall_host::breaker::AcquireError::Rejected(r)) => r,
        other => panic!("expected a rejection, got {other:?}"),
    };
    assert_eq!(check_rejected(longest, rejected), Ok(rejected));
    assert!(check_breaker_metrics(&held, b.metrics(now).core).is_ok());
    // The handle's checked forms pass honest values through.
    assert_eq!(b.retry_after_checked(now), Ok(Some(20 * SEC)));
    assert!(matches!(b.try_acquire_checked(now), Ok(Err(_))));
    assert!(b.metrics_checked(now).is_ok());

    // The core breaker is the cell's first field and its state word the core's
    // first: `open_until` is the high half of that 128-bit word.
    let until_at = SharedRegion::<CountCell>::VALUE_OFFSET + 8;
    assert_eq!(mem.read_u64(until_at), t + 30 * SEC, "layout as expected");
    mem.write(until_at, &(now + 1_713_643_524_538 * MS).to_le_bytes());

    // The core's own reading, as it stands.
    assert_eq!(b.retry_after(now), Some(1_713_643_524_538 * MS));
    assert_eq!(check_retry_after(&held, b.retry_after(now)), Err(Corrupt));
    assert_eq!(
        check_breaker_metrics(&held, b.metrics(now).core),
        Err(Corrupt)
    );
    // What the handle answers: the checked forms say Corrupt (C's
    // REGION_CORRUPT, Python's SharedRegionError, Node's ESHARED); the plain
    // acquire refuses with no retry-after rather than one of 54 years.
    assert_eq!(b.retry_after_checked(now), Err(Corrupt));
    assert_eq!(b.try_acquire_checked(now), Err(Corrupt));
    assert!(b.metrics_checked(now).is_err());
    let rejected = match b.try_acquire(now) {
        Err(seawall_host::breaker::AcquireError::Rejected(r)) => r,
        other => panic!("expected a rejection, got {other:?}"),
    };
    assert_eq!(rejected.retry_after_ns, None);
}

#[test]
fn breaker_state_words_no_honest_breaker_holds_are_corrupt() {
    let config = breaker_config();
    let mem = Memory::new(Breaker::region_size(), Breaker::region_align());
    // SAFETY: as above.
    let b = unsafe { Breaker::init_in(mem.ptr, mem.len(), &config) }.unwrap();
    let state_at = SharedRegion::<CountCell>::VALUE_OFFSET;
    assert_eq!(mem.read_u64(state_at), 0, "closed, epoch 0");

    // Honest words of every state, reached the honest way, pass.
    let t = SEC;
    let fail = |n| {
        for _ in 0..n {
            let p = b.try_acquire(t).unwrap();
            b.record(p, Outcome::Failure, 0, t).unwrap();
        }
    };
    let ok = |now| check_breaker_metrics(&config, b.metrics(now).core).map(|m| m.state);
    let p = b.try_acquire(t).unwrap();
    b.record(p, Outcome::Success, 0, t).unwrap();
    fail(2);
    assert_eq!(b.metrics(t).core.consecutive_failures, 2);
    assert_eq!(ok(t), Ok(State::Closed));
    // The 4th call: 3 failures of 4 (75 % ≥ 50 %) open it.
    fail(1);
    assert_eq!(ok(t), Ok(State::Open));
    // 30 s later: half-open, one probe in flight, then one success of two.
    let probe = b.try_acquire(t + 30 * SEC).unwrap();
    assert_eq!(ok(t + 30 * SEC), Ok(State::HalfOpen));
    b.record(probe, Outcome::Success, 0, t + 30 * SEC).unwrap();
    assert_eq!(b.metrics(t + 30 * SEC).core.half_open_successes, 1);
    assert_eq!(ok(t + 30 * SEC), Ok(State::HalfOpen));
    b.force_open();
    assert_eq!(ok(t + 31 * SEC), Ok(State::ForcedOpen));
    b.reset();
    assert_eq!(ok(t + 31 * SEC), Ok(State::Closed));

    // (state, epoch, a, b, k): what an overwrite can leave.
    let words = [
        // Half-open with an even epoch, open with an odd one.
        (2, 4, 1, 0, 1),
        (1, 5, 0, 0, 1),
        // Closed with openings counted; open with none.
        (0, 2, 0, 0, 3),
        (1, 2, 0, 0, 0),
        // A closed run of 6 failures where 5 open the breaker.
        (0, 2, 6, 0, 0),
        // Half-open with 3 probes of 2 in flight, or 2 successes of 2 needed.
        (2, 3, 3, 0, 1),
        (2, 3, 1, 2, 1),
    ];
    for (state, epoch, a, bb, k) in words {
        mem.write(state_at, &state_word(state, epoch, a, bb, k).to_le_bytes());
        // Open until 1 s from the breaker's clock: a time honest on its own.
        mem.write(state_at + 8, &(t + 32 * SEC).to_le_bytes());
        assert_eq!(
            check_breaker_metrics(&config, b.metrics(t + 31 * SEC).core).map(drop),
            Err(Corrupt),
            "word {:?}",
            (state, epoch, a, bb, k)
        );
    }
}

#[test]
fn a_count_window_holding_more_than_its_size_is_corrupt() {
    let config = breaker_config();
    let mem = Memory::new(Breaker::region_size(), Breaker::region_align());
    // SAFETY: as above.
    let b = unsafe { Breaker::init_in(mem.ptr, mem.len(), &config) }.unwrap();
    // 20 successes through a window of 8: it holds 8.
    for i in 0..20 {
        let p = b.try_acquire(i).unwrap();
        b.record(p, Outcome::Success, 0, i).unwrap();
    }
    let m = b.metrics(20).core;
    assert_eq!(m.window.calls, 8);
    assert!(check_breaker_metrics(&config, m).is_ok());
    let forged = seawall_core::BreakerMetrics {
        window: seawall_core::WindowCounts {
            calls: 9,
            ..m.window
        },
        ..m
    };
    assert_eq!(check_breaker_metrics(&config, forged), Err(Corrupt));
    let forged = seawall_core::BreakerMetrics {
        window: seawall_core::WindowCounts {
            failures: 3,
            calls: 2,
            ..m.window
        },
        ..m
    };
    assert_eq!(check_breaker_metrics(&config, forged), Err(Corrupt));
}

#[test]
fn a_bulkhead_of_4_with_693800_active_is_corrupt() {
    let config = SemaphoreConfig {
        max_concurrent: 4,
        max_queue: 16,
        ..SemaphoreConfig::DEFAULT
    };
    let mem = Memory::new(Semaphore::region_size(), Semaphore::region_align());
    // SAFETY: fresh memory of the advertised size and alignment, ours alone.
    let s = unsafe { Semaphore::init_in(mem.ptr, mem.len(), &config) }.unwrap();
    // SAFETY: the region `init_in` built.
    let region = unsafe { SharedRegion::<SemaphoreCell>::attach(mem.ptr, mem.len()) }.unwrap();
    let held = region.config_checked().unwrap();
    assert_eq!(held, config);

    let permits: Vec<_> = (0..3)
        .map(|_| s.try_acquire(Priority::Normal).unwrap())
        .collect();
    let snap = s.snapshot();
    assert_eq!((snap.active, snap.queued), (3, 0));
    assert_eq!(check_snapshot(&held, snap), Ok(snap));

    // The core semaphore is the cell's first field, its state word the core's
    // first: `active` in the low 20 bits.
    let state_at = SharedRegion::<SemaphoreCell>::VALUE_OFFSET;
    assert_eq!(
        mem.read_u64(state_at) & ((1 << 20) - 1),
        3,
        "layout as expected"
    );
    mem.write(state_at, &693_800u64.to_le_bytes());
    let snap = s.snapshot();
    assert_eq!((snap.active, snap.queued), (693_800, 0));
    assert_eq!(check_snapshot(&held, snap), Err(Corrupt));
    assert_eq!(permits.len(), 3);
    // What the handle answers: its checked forms say Corrupt, never "693800 active".
    assert_eq!(s.snapshot_checked(), Err(Corrupt));
    assert!(s.full_snapshot_checked().is_err());
    assert_eq!(s.try_acquire_checked(Priority::Normal), Err(Corrupt));

    // The whole structure zeroed: its configuration is no longer the one agreed.
    let offset = SharedRegion::<SemaphoreCell>::VALUE_OFFSET;
    mem.write(
        offset,
        &vec![0; SharedRegion::<SemaphoreCell>::SIZE - offset],
    );
    assert_eq!(region.config_checked(), Err(Corrupt));
    // The handle says so too, rather than refusing as "0 active, 0 queued".
    assert_eq!(s.snapshot_checked(), Err(Corrupt));
    assert_eq!(s.try_acquire_checked(Priority::Normal), Err(Corrupt));
    assert_eq!(s.config(), config, "the configuration this process holds");
}

fn limiter_config() -> RateLimiterConfig {
    RateLimiterConfig {
        rate: 10,
        period_ns: SEC,
        burst: 3,
    }
}

#[test]
fn a_zeroed_rate_limiter_is_corrupt_not_the_callers_fault() {
    let config = limiter_config();
    let mem = Memory::new(RateLimiter::region_size(), RateLimiter::region_align());
    // SAFETY: fresh memory of the advertised size and alignment, ours alone.
    let l = unsafe { RateLimiter::init_in(mem.ptr, mem.len(), &config) }.unwrap();
    // Honest answers pass as they are: 3 cells at once, then a refusal for
    // 100 ms (T = 100 ms), and 4 cells is the caller's error.
    assert_eq!(l.try_acquire_checked(3, 0), Ok(Ok(())));
    assert_eq!(
        l.try_acquire_checked(1, 0),
        Ok(Err(RateLimitError::Rejected {
            retry_after_ns: 100 * MS
        }))
    );
    let e = l.try_acquire_checked(4, 0).unwrap().unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid rate_limiter.n: must be between 1 and 3"
    );

    let offset = SharedRegion::<seawall_host::rate_limiter::LimiterCell>::VALUE_OFFSET;
    mem.write(offset, &vec![0; RateLimiter::region_size() - offset]);
    // What the unchecked call says today: the caller's fault.
    let e = l.try_acquire(1, SEC).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid rate_limiter.n: must be between 1 and 0"
    );
    assert_eq!(l.try_acquire_checked(1, SEC), Err(Corrupt));
    assert_eq!(l.config_checked(), Err(Corrupt));
}

#[test]
fn a_rate_limiter_whose_burst_was_rewritten_is_corrupt() {
    let config = limiter_config();
    let name = format!("rust-test-{}-values", std::process::id());
    RateLimiter::unlink_shared(&name).unwrap();
    let a = RateLimiter::open_shared(&name, &config, &OpenOptions::default()).unwrap();
    let b = RateLimiter::open_shared(&name, &config, &OpenOptions::default()).unwrap();
    assert!(a.created() && !b.created());
    // Another process rewrites the burst in the file: 3 → 2, a valid value.
    let path = format!("/dev/shm/seawall-rate-limiter-{name}");
    let burst_at = SharedRegion::<seawall_host::rate_limiter::LimiterCell>::VALUE_OFFSET
        + (core::ptr::from_ref(&b.config().burst) as usize - core::ptr::from_ref(&*b) as usize);
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(
        bytes[burst_at..burst_at + 4],
        3u32.to_le_bytes(),
        "layout as expected"
    );
    // In place: the mapped file keeps its size throughout.
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    std::os::unix::fs::FileExt::write_all_at(&file, &2u32.to_le_bytes(), burst_at as u64).unwrap();
    // Both attached handles see it; the unchecked call blames the caller.
    let e = b.try_acquire(3, 0).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid rate_limiter.n: must be between 1 and 2"
    );
    assert_eq!(b.try_acquire_checked(3, 0), Err(Corrupt));
    assert_eq!(a.try_acquire_checked(3, 0), Err(Corrupt));
    // The check alone, given the configuration this process holds.
    assert_eq!(
        check_rate_limit(&config, 3, b.try_acquire(3, 0)),
        Err(Corrupt)
    );
    RateLimiter::unlink_shared(&name).unwrap();
}

/// The checks never refuse an honest value: threads cycle a shared breaker
/// through every state (short open periods with backoff and jitter, a
/// half-open wait, probes) and a shared bulkhead through full and empty, on one
/// clock that moves forward, checking every refusal and, between calls, the
/// snapshots (`retry_after` included), while another thread checks snapshots
/// too.
#[test]
fn honest_values_under_load_always_pass() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    let config = BreakerConfig {
        window: WindowConfig::Count { size: 8 },
        minimum_calls: 4,
        consecutive_failures: Some(3),
        open_duration_ns: 20_000,
        open_backoff_multiplier: Ratio::from_percent(300),
        max_open_duration_ns: Some(500_000),
        open_jitter_factor: Ratio::from_percent(50),
        half_open_max_calls: 2,
        half_open_success_threshold: 2,
        half_open_max_wait_ns: Some(100_000),
        ..BreakerConfig::DEFAULT
    };
    let sem_config = SemaphoreConfig {
        max_concurrent: 3,
        max_queue: 4,
        ..SemaphoreConfig::DEFAULT
    };
    let bm = Memory::new(Breaker::region_size(), Breaker::region_align());
    let sm = Memory::new(Semaphore::region_size(), Semaphore::region_align());
    // SAFETY: fresh memory of the advertised sizes and alignments, shared only
    // by the handles below, all gone before the memory is.
    let (b, s) = unsafe {
        (
            Breaker::init_in(bm.ptr, bm.len(), &config).unwrap(),
            Semaphore::init_in(sm.ptr, sm.len(), &sem_config).unwrap(),
        )
    };
    let longest = longest_open_ns(&config);
    // 20 µs tripled per opening up to 500 µs, ± 50 %.
    assert_eq!(longest, 750_000);
    let clock = AtomicU64::new(SEC);
    let done = AtomicBool::new(false);
    let check = |now: u64, states: &mut [u64; 5]| {
        let m = check_breaker_metrics(&config, b.metrics(now).core)
            .unwrap_or_else(|Corrupt| panic!("refused: {:?}", b.metrics(now).core));
        states[m.state as usize] += 1;
        assert!(check_retry_after(&config, b.retry_after(now)).is_ok());
        assert!(check_snapshot(&sem_config, s.snapshot()).is_ok());
    };
    let seen = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..3u64)
            .map(|w| {
                let (b, s, clock, check) = (&b, &s, &clock, &check);
                scope.spawn(move || {
                    let mut rng = seawall_core::SplitMix64::new(w);
                    let mut states = [0u64; 5];
                    for i in 0..20_000 {
                        let now = clock.fetch_add(1_000, Ordering::Relaxed);
                        // A snapshot scans the permit table: one in 8 calls.
                        if i % 8 == 0 {
                            check(now, &mut states);
                        }
                        match b.try_acquire(now) {
                            Ok(p) => {
                                let outcome = if rng.next_u64().is_multiple_of(3) {
                                    Outcome::Failure
                                } else {
                                    Outcome::Success
                                };
                                b.record(p, outcome, 0, now).unwrap();
                            }
                            Err(seawall_host::breaker::AcquireError::Rejected(r)) => {
                                assert_eq!(check_rejected(longest, r), Ok(r));
                            }
                            Err(e) => panic!("{e:?}"),
                        }
                        if let Ok(p) = s.try_acquire(Priority::Normal) {
                            assert!(check_snapshot(&sem_config, s.snapshot()).is_ok());
                            s.release(p).unwrap();
                        }
                    }
                    states
                })
            })
            .collect();
        let reader = scope.spawn(|| {
            let mut states = [0u64; 5];
            while !done.load(Ordering::Relaxed) {
                check(clock.load(Ordering::Relaxed), &mut states);
            }
            states
        });
        let mut seen = [0u64; 5];
        for w in workers {
            let states = w.join().unwrap();
            (0..5).for_each(|i| seen[i] += states[i]);
        }
        done.store(true, Ordering::Relaxed);
        let states = reader.join().unwrap();
        (0..5).for_each(|i| seen[i] += states[i]);
        seen
    });
    // Every state the load can reach was checked: closed, open, half-open.
    assert!(seen[..3].iter().all(|&n| n > 0), "{seen:?}");
}
