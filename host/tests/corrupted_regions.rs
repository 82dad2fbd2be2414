//! Shared region content is untrusted input (DESIGN §8): a region whose structure
//! holds any bytes at all — counters, indices, generations, window sizes, divisors
//! and configuration fields included — must never make a call panic, hang or
//! print. Each trial builds a real region in caller memory, overwrites random
//! bytes and words of its structure (the header stays valid, so attaching
//! succeeds), then has several threads, each attached on its own as another
//! process would be, run random operations while the main thread watches the
//! clock. Seeded, so a failure replays.

// The loom build compiles only the table models (tests/loom_*.rs).
#![cfg(not(loom))]

mod common;

use common::Memory;
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use seawall_core::{
    BreakerConfig, CircuitBreaker, Corrupt, CountWindow, HealthConfig, Outcome, Priority,
    PriorityShares, Ratio, RetryBudgetConfig, RetryThrottleConfig, SemaphoreConfig, SplitMix64,
    State, TimeWindow, WindowConfig,
};
use seawall_host::breaker::{
    Breaker, COUNT_WINDOW_CAPACITY, CountCell, Permit, TIME_WINDOW_CAPACITY, TimeCell,
};
use seawall_host::health::{Health, HealthWindow};
use seawall_host::retry::{RetryBudget, RetryThrottle};
use seawall_host::semaphore::{
    Acquired, Cell as SemaphoreCell, Permit as SemPermit, Polled, SEMAPHORE_MAX_QUEUE, Semaphore,
    Ticket as SemTicket, WaitError,
};
use seawall_host::shared::SharedRegion;

/// No single call may take longer than this, whatever the region holds.
const CALL_BOUND: Duration = Duration::from_secs(1);
/// A whole trial (every thread's operations) must end within this.
const TRIAL_BOUND: Duration = Duration::from_secs(20);
const THREADS: u64 = 3;
const OPS: u64 = 40;

fn coin(rng: &mut SplitMix64) -> bool {
    rng.next_u64() & 1 == 0
}

/// A value that is often one of the edges a corrupted word likes to hold.
fn word(rng: &mut SplitMix64) -> u64 {
    let r = rng.next_u64();
    match r % 8 {
        0 => 0,
        1 => u64::MAX,
        2 => r >> 40,
        3 => 1 << (r % 64),
        4 => u64::MAX - (r >> 56),
        _ => rng.next_u64(),
    }
}

/// Overwrite `hits` random places of `[start, end)` (relative to `mem`), skipping
/// `[keep.0, keep.1)`: a flipped bit, a random byte, or an aligned 8-byte word.
/// Half of the hits land in the first `hot` bytes, where the state words, the
/// counts and the first slots live.
fn corrupt(
    mem: &Memory,
    start: usize,
    end: usize,
    hot: usize,
    keep: (usize, usize),
    hits: u64,
    rng: &mut SplitMix64,
) {
    let base = mem.ptr.as_ptr();
    for _ in 0..hits {
        let span = if coin(rng) {
            hot.min(end - start)
        } else {
            end - start
        };
        let at = start + (rng.next_u64() as usize) % span;
        if at >= keep.0 && at < keep.1 {
            continue;
        }
        match rng.next_u64() % 3 {
            0 => {
                let bit = 1u8 << (rng.next_u64() % 8);
                // SAFETY: `at` is inside the allocation; no thread runs yet.
                unsafe { *base.add(at) ^= bit };
            }
            1 => {
                // SAFETY: as above.
                unsafe { *base.add(at) = rng.next_u64() as u8 };
            }
            _ => {
                let at = at & !7;
                if at < start || at + 8 > end || (at + 8 > keep.0 && at < keep.1) {
                    continue;
                }
                let w = word(rng);
                // SAFETY: 8-aligned (the region is), inside the allocation.
                unsafe { base.add(at).cast::<u64>().write_unaligned(w) };
            }
        }
    }
}

/// Any value of every configuration field a breaker keeps in its region: the
/// numbers may be anything; the enum and `Option` tags stay valid values of
/// their types (the bytes of a tag are never overwritten directly).
fn random_breaker_config(rng: &mut SplitMix64, count: bool) -> BreakerConfig {
    let opt = |rng: &mut SplitMix64| coin(rng).then(|| word(rng));
    let small = |rng: &mut SplitMix64| word(rng) as u32;
    BreakerConfig {
        window: if count {
            WindowConfig::Count { size: small(rng) }
        } else {
            WindowConfig::Time {
                buckets: small(rng),
                bucket_width_ns: word(rng),
            }
        },
        minimum_calls: small(rng),
        failure_rate_threshold: opt(rng).map(Ratio::from_ppm),
        slow_call_rate_threshold: Ratio::from_ppm(word(rng)),
        slow_call_duration_ns: opt(rng),
        consecutive_failures: opt(rng).map(|v| v as u32),
        open_duration_ns: word(rng),
        open_backoff_multiplier: Ratio::from_ppm(word(rng)),
        max_open_duration_ns: opt(rng),
        open_jitter_factor: Ratio::from_ppm(word(rng)),
        half_open_max_calls: small(rng),
        half_open_success_threshold: small(rng),
        half_open_max_wait_ns: opt(rng),
        jitter_seed: word(rng),
    }
}

/// Run `op` on `THREADS` threads (given each thread's seed), each expected to
/// return the longest single call it made; fail if any call took longer than
/// [`CALL_BOUND`] or the trial did not end within [`TRIAL_BOUND`].
fn run_threads(what: &str, trial: u64, op: impl Fn(u64) -> Duration + Send + Sync + 'static) {
    let op = Arc::new(op);
    let (tx, rx) = mpsc::channel();
    for t in 0..THREADS {
        let (op, tx) = (Arc::clone(&op), tx.clone());
        std::thread::spawn(move || {
            let longest = op(trial * 1_000 + t);
            let _ = tx.send(longest);
        });
    }
    drop(tx);
    let deadline = Instant::now() + TRIAL_BOUND;
    for _ in 0..THREADS {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(longest) => assert!(
                longest < CALL_BOUND,
                "{what}, trial {trial}: a call took {longest:?}"
            ),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                panic!("{what}, trial {trial}: a call did not return within {TRIAL_BOUND:?}")
            }
            // A thread that panicked never sends.
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                panic!("{what}, trial {trial}: a call panicked")
            }
        }
    }
}

/// Time one call, keeping the longest.
fn timed<R>(longest: &mut Duration, f: impl FnOnce() -> R) -> R {
    let t0 = Instant::now();
    let r = f();
    *longest = (*longest).max(t0.elapsed());
    r
}

/// A clock that mostly moves forward, sometimes jumps, sometimes steps back.
fn next_now(now: &mut u64, rng: &mut SplitMix64) -> u64 {
    *now = match rng.next_u64() % 16 {
        0 => word(rng),
        1 => now.saturating_sub(rng.next_u64() % 1_000_000_000),
        _ => now.saturating_add(rng.next_u64() % 300_000_000),
    };
    *now
}

fn breaker_ops(b: &Breaker, seed: u64) -> Duration {
    let mut rng = SplitMix64::new(seed);
    let mut now = rng.next_u64() >> 4;
    let mut held: Vec<Permit> = Vec::new();
    let mut longest = Duration::ZERO;
    for _ in 0..OPS {
        let t = next_now(&mut now, &mut rng);
        match rng.next_u64() % 12 {
            0..=3 => {
                if let Ok(Ok(p)) = timed(&mut longest, || b.try_acquire_checked(t)) {
                    held.push(p);
                }
            }
            4..=6 if !held.is_empty() => {
                let p = held.swap_remove((rng.next_u64() as usize) % held.len());
                let outcome = [Outcome::Success, Outcome::Failure, Outcome::Ignored]
                    [(rng.next_u64() % 3) as usize];
                let d = word(&mut rng);
                let _ = timed(&mut longest, || b.record_checked(p, outcome, d, t));
            }
            7 => {
                let forged = Permit {
                    id: rng.next_u64(),
                    epoch: rng.next_u64() as u32,
                };
                let _ = timed(&mut longest, || b.record(forged, Outcome::Failure, 5, t));
            }
            8 => {
                let _ = timed(&mut longest, || (b.metrics(t), b.retry_after(t), b.state()));
            }
            9 => {
                let _ = timed(&mut longest, || b.try_acquire(t));
            }
            10 => {
                let state = [State::ForcedOpen, State::Disabled, State::Closed]
                    [(rng.next_u64() % 3) as usize];
                let _ = timed(&mut longest, || b.set_manual_checked(state));
            }
            _ => {
                let _ = timed(&mut longest, || b.reclaim_abandoned(t));
            }
        }
    }
    for p in held {
        let _ = timed(&mut longest, || {
            b.record_checked(p, Outcome::Success, 1, now)
        });
    }
    longest
}

/// Offset of the core breaker's configuration inside a breaker cell (the core
/// breaker is the cell's first field).
fn breaker_config_offset<W: seawall_core::SlidingWindow>(b: &CircuitBreaker<W>) -> usize {
    core::ptr::from_ref(b.config()) as usize - core::ptr::from_ref(b) as usize
}

fn breaker_trials(count: bool, trials: u64) {
    let what = if count {
        "count-window breaker"
    } else {
        "time-window breaker"
    };
    let config = if count {
        BreakerConfig {
            window: WindowConfig::Count { size: 8 },
            minimum_calls: 2,
            consecutive_failures: Some(3),
            open_duration_ns: 1_000_000,
            half_open_max_wait_ns: Some(50_000_000),
            ..BreakerConfig::DEFAULT
        }
    } else {
        BreakerConfig {
            window: WindowConfig::Time {
                buckets: 4,
                bucket_width_ns: 100_000_000,
            },
            minimum_calls: 2,
            slow_call_duration_ns: Some(1_000),
            open_duration_ns: 1_000_000,
            open_jitter_factor: Ratio::from_percent(50),
            ..BreakerConfig::DEFAULT
        }
    };
    let (offset, value_size, config_at) = if count {
        let core =
            Box::new(CircuitBreaker::<CountWindow<COUNT_WINDOW_CAPACITY>>::new(config).unwrap());
        (
            SharedRegion::<CountCell>::VALUE_OFFSET,
            size_of::<CountCell>(),
            breaker_config_offset(&core),
        )
    } else {
        let core =
            Box::new(CircuitBreaker::<TimeWindow<TIME_WINDOW_CAPACITY>>::new(config).unwrap());
        (
            SharedRegion::<TimeCell>::VALUE_OFFSET,
            size_of::<TimeCell>(),
            breaker_config_offset(&core),
        )
    };
    for trial in 0..trials {
        let mut rng = SplitMix64::new(trial ^ if count { 0xC0 } else { 0x71 });
        let mem = Arc::new(Memory::new(Breaker::region_size(), Breaker::region_align()));
        // SAFETY: fresh memory of the advertised size and alignment, ours alone.
        let b = unsafe { Breaker::init_in(mem.ptr, mem.len(), &config) }.unwrap();
        // Some history first, so the words hold real values to corrupt.
        for i in 0..20 {
            if let Ok(p) = b.try_acquire(i * 1_000) {
                let outcome = if i % 3 == 0 {
                    Outcome::Failure
                } else {
                    Outcome::Success
                };
                let _ = b.record(p, outcome, i * 700, i * 1_000 + 500);
            }
        }
        drop(b);
        let cfg_range = (
            offset + config_at,
            offset + config_at + size_of::<BreakerConfig>(),
        );
        let hits = 1 + rng.next_u64() % 24;
        corrupt(
            &mem,
            offset,
            offset + value_size,
            1024,
            cfg_range,
            hits,
            &mut rng,
        );
        if coin(&mut rng) {
            let c = random_breaker_config(&mut rng, count);
            // SAFETY: the configuration's own place in the cell, aligned for it;
            // no thread runs yet.
            unsafe {
                mem.ptr
                    .as_ptr()
                    .add(cfg_range.0)
                    .cast::<BreakerConfig>()
                    .write_unaligned(c);
            };
        }
        let shared = Arc::clone(&mem);
        run_threads(what, trial, move |seed| {
            // SAFETY: the memory holds a region built by `init_in` and lives as
            // long as `shared`.
            let b = unsafe { Breaker::attach(shared.ptr, shared.len()) }.unwrap();
            breaker_ops(&b, seed)
        });
    }
}

#[test]
fn a_corrupted_count_window_breaker_never_panics_or_hangs() {
    breaker_trials(true, 120);
}

#[test]
fn a_corrupted_time_window_breaker_never_panics_or_hangs() {
    breaker_trials(false, 120);
}

#[test]
fn a_corrupted_health_window_never_panics_or_hangs() {
    let config = HealthConfig {
        buckets: 5,
        bucket_width_ns: 10_000_000,
        ..HealthConfig::DEFAULT
    };
    let offset = SharedRegion::<HealthWindow>::VALUE_OFFSET;
    for trial in 0..60 {
        let mut rng = SplitMix64::new(trial ^ 0x4EA1);
        let mem = Arc::new(Memory::new(Health::region_size(), Health::region_align()));
        // SAFETY: fresh memory of the advertised size and alignment, ours alone.
        let h = unsafe { Health::init_in(mem.ptr, mem.len(), &config) }.unwrap();
        for i in 0..50 {
            h.record(i * 1_000_003, i % 4 == 0, i * 1_000_000);
        }
        let config_at = core::ptr::from_ref(h.config()) as usize - mem.ptr.as_ptr() as usize;
        drop(h);
        let hits = 1 + rng.next_u64() % 24;
        let end = offset + size_of::<HealthWindow>();
        corrupt(&mem, offset, end, 8192, (0, 0), hits, &mut rng);
        // The configuration sits at the end, past the hot bytes: hit it on purpose.
        let cfg_end = config_at + size_of::<HealthConfig>();
        corrupt(
            &mem,
            config_at,
            cfg_end,
            cfg_end - config_at,
            (0, 0),
            rng.next_u64() % 4,
            &mut rng,
        );
        let shared = Arc::clone(&mem);
        run_threads("health window", trial, move |seed| {
            // SAFETY: as for the breaker.
            let h = unsafe { Health::attach(shared.ptr, shared.len()) }.unwrap();
            let mut rng = SplitMix64::new(seed);
            let mut now = rng.next_u64() >> 8;
            let mut longest = Duration::ZERO;
            for _ in 0..OPS {
                let t = next_now(&mut now, &mut rng);
                let latency = word(&mut rng);
                match rng.next_u64() % 4 {
                    0 | 1 => {
                        let failed = coin(&mut rng);
                        let _ = timed(&mut longest, || h.record_checked(latency, failed, t));
                    }
                    2 => {
                        let _ = timed(&mut longest, || h.snapshot(t));
                    }
                    _ => {
                        let q = Ratio::from_ppm(word(&mut rng));
                        let _ = timed(&mut longest, || (h.quantile(q, t), h.status(t)));
                    }
                }
            }
            longest
        });
    }
}

#[test]
fn a_corrupted_retry_budget_never_panics_or_hangs() {
    let config = RetryBudgetConfig {
        ttl_ns: 1_000_000_000,
        ..RetryBudgetConfig::DEFAULT
    };
    let offset = SharedRegion::<seawall_core::RetryBudget>::VALUE_OFFSET;
    let end = offset + size_of::<seawall_core::RetryBudget>();
    for trial in 0..80 {
        let mut rng = SplitMix64::new(trial ^ 0xB0D6);
        let mem = Arc::new(Memory::new(
            RetryBudget::region_size(),
            RetryBudget::region_align(),
        ));
        // SAFETY: fresh memory of the advertised size and alignment, ours alone.
        let b = unsafe { RetryBudget::init_in(mem.ptr, mem.len(), &config) }.unwrap();
        for i in 0..40 {
            b.deposit(i * 50_000_000);
            let _ = b.try_withdraw(i * 50_000_000);
        }
        drop(b);
        let hits = 1 + rng.next_u64() % 16;
        corrupt(&mem, offset, end, end - offset, (0, 0), hits, &mut rng);
        let shared = Arc::clone(&mem);
        run_threads("retry budget", trial, move |seed| {
            // SAFETY: as for the breaker.
            let b = unsafe { RetryBudget::attach(shared.ptr, shared.len()) }.unwrap();
            let mut rng = SplitMix64::new(seed);
            let mut now = rng.next_u64() >> 8;
            let mut longest = Duration::ZERO;
            for _ in 0..OPS {
                let t = next_now(&mut now, &mut rng);
                match rng.next_u64() % 3 {
                    0 => {
                        let _ = timed(&mut longest, || b.deposit_checked(t));
                    }
                    1 => {
                        let _ = timed(&mut longest, || b.try_withdraw_checked(t));
                    }
                    _ => {
                        let _ = timed(&mut longest, || b.snapshot(t).available());
                    }
                }
            }
            longest
        });
    }
}

#[test]
fn a_corrupted_retry_throttle_never_panics_or_hangs() {
    let config = RetryThrottleConfig::DEFAULT;
    let offset = SharedRegion::<seawall_core::RetryThrottle>::VALUE_OFFSET;
    let end = offset + size_of::<seawall_core::RetryThrottle>();
    for trial in 0..80 {
        let mut rng = SplitMix64::new(trial ^ 0x7407);
        let mem = Arc::new(Memory::new(
            RetryThrottle::region_size(),
            RetryThrottle::region_align(),
        ));
        // SAFETY: fresh memory of the advertised size and alignment, ours alone.
        drop(unsafe { RetryThrottle::init_in(mem.ptr, mem.len(), &config) }.unwrap());
        let hits = 1 + rng.next_u64() % 8;
        corrupt(&mem, offset, end, end - offset, (0, 0), hits, &mut rng);
        let shared = Arc::clone(&mem);
        run_threads("retry throttle", trial, move |seed| {
            // SAFETY: as for the breaker.
            let th = unsafe { RetryThrottle::attach(shared.ptr, shared.len()) }.unwrap();
            let mut rng = SplitMix64::new(seed);
            let mut longest = Duration::ZERO;
            for _ in 0..OPS {
                match rng.next_u64() % 3 {
                    0 => {
                        let _ = timed(&mut longest, || th.record_failure_checked());
                    }
                    1 => {
                        let _ = timed(&mut longest, || th.record_success_checked());
                    }
                    _ => {
                        let _ = timed(&mut longest, || (th.would_allow(), th.milli_tokens()));
                    }
                }
            }
            longest
        });
    }
}

/// Where the core semaphore's words sit in a semaphore region, from the
/// region's start: `(state, slots, config)`. The core semaphore is the cell's
/// first field (`#[repr(C)]`): its state word first, then the `Q` slot words
/// right before its configuration.
fn semaphore_layout(s: &seawall_core::Semaphore<SEMAPHORE_MAX_QUEUE>) -> (usize, usize, usize) {
    let offset = SharedRegion::<SemaphoreCell>::VALUE_OFFSET;
    let config_at = core::ptr::from_ref(s.config()) as usize - core::ptr::from_ref(s) as usize;
    (
        offset,
        offset + config_at - 8 * SEMAPHORE_MAX_QUEUE,
        offset + config_at,
    )
}

fn semaphore_config() -> SemaphoreConfig {
    SemaphoreConfig {
        max_concurrent: 4,
        max_queue: 16,
        ..SemaphoreConfig::DEFAULT
    }
}

/// A shared semaphore built in fresh memory, its handle dropped; the memory and
/// the layout of its core words.
fn semaphore_memory(config: &SemaphoreConfig) -> (Arc<Memory>, (usize, usize, usize)) {
    let core = Box::new(seawall_core::Semaphore::<SEMAPHORE_MAX_QUEUE>::new(*config).unwrap());
    let layout = semaphore_layout(&core);
    let mem = Arc::new(Memory::new(
        Semaphore::region_size(),
        Semaphore::region_align(),
    ));
    // SAFETY: fresh memory of the advertised size and alignment, ours alone.
    drop(unsafe { Semaphore::init_in(mem.ptr, mem.len(), config) }.unwrap());
    (mem, layout)
}

/// Run `f` on a thread of its own and fail unless it returns within
/// [`CALL_BOUND`] (a call that hangs is left spinning: the test fails anyway).
fn within_bound<R: Send + 'static>(what: &str, f: impl FnOnce() -> R + Send + 'static) -> R {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(CALL_BOUND)
        .unwrap_or_else(|e| panic!("{what}: no answer within {CALL_BOUND:?} ({e:?})"))
}

/// Every one of the 1024 wait slots `WAITING` while every permit is held and no
/// waiter is counted: no honest state has a waiting slot nobody counts, and an
/// arrival finds no free slot to wait in. Both the enqueue and the 10 ms wait
/// must answer "corrupt" at once instead of searching for ever.
#[test]
fn a_semaphore_whose_slots_all_read_waiting_answers_corrupt_within_a_second() {
    let config = semaphore_config();
    let (mem, (state_at, slots_at, _)) = semaphore_memory(&config);
    let base = mem.ptr.as_ptr();
    // active = max_concurrent (the low 20 bits), queued = 0, seq = 0.
    let state = u64::from(config.max_concurrent);
    // SAFETY: the state word's place in the region; no thread runs yet.
    unsafe { base.add(state_at).cast::<u64>().write_unaligned(state) };
    for i in 0..SEMAPHORE_MAX_QUEUE {
        // Status WAITING (1), generation and arrival 0.
        // SAFETY: slot `i`'s place in the region; no thread runs yet.
        unsafe { base.add(slots_at + 8 * i).cast::<u64>().write_unaligned(1) };
    }
    let attach = |mem: &Arc<Memory>| {
        // SAFETY: the memory holds a region built by `init_in` and outlives
        // the handle (each closure below keeps its own `Arc`).
        unsafe { Semaphore::attach(mem.ptr, mem.len()) }.unwrap()
    };
    let m = Arc::clone(&mem);
    let got = within_bound("acquire_or_enqueue", move || {
        attach(&m).acquire_or_enqueue_checked(Priority::Normal)
    });
    assert_eq!(got, Err(Corrupt), "acquire_or_enqueue");
    let m = Arc::clone(&mem);
    let got = within_bound("acquire_timeout(10 ms)", move || {
        attach(&m).acquire_timeout(Priority::Normal, Some(Duration::from_millis(10)))
    });
    assert_eq!(got, Err(WaitError::RegionCorrupt), "acquire_timeout");
}

/// Random operations of one attached thread on a (corrupted) shared semaphore:
/// acquires of every kind, polls, cancels and releases of what it holds and of
/// forged ids, short blocking waits, snapshots and reclaims; the longest call.
fn semaphore_ops(s: &Semaphore, seed: u64) -> Duration {
    let mut rng = SplitMix64::new(seed);
    let mut permits: Vec<SemPermit> = Vec::new();
    let mut tickets: Vec<SemTicket> = Vec::new();
    let mut longest = Duration::ZERO;
    let priority = |rng: &mut SplitMix64| Priority::ALL[(rng.next_u64() % 4) as usize];
    for _ in 0..OPS {
        let p = priority(&mut rng);
        match rng.next_u64() % 14 {
            0 | 1 => {
                if let Ok(Ok(permit)) = timed(&mut longest, || s.try_acquire_checked(p)) {
                    permits.push(permit);
                }
            }
            2..=4 => match timed(&mut longest, || s.acquire_or_enqueue_checked(p)) {
                Ok(Ok(Acquired::Admitted(permit))) => permits.push(permit),
                Ok(Ok(Acquired::Queued(t))) => tickets.push(t),
                _ => {}
            },
            5 | 6 if !tickets.is_empty() => {
                let t = tickets[(rng.next_u64() as usize) % tickets.len()];
                match timed(&mut longest, || s.poll_checked(t)) {
                    Ok(Ok(Polled::Waiting)) => {}
                    Ok(Ok(Polled::Granted(permit))) => {
                        tickets.retain(|&x| x != t);
                        permits.push(permit);
                    }
                    _ => tickets.retain(|&x| x != t),
                }
            }
            7 if !tickets.is_empty() => {
                let t = tickets.swap_remove((rng.next_u64() as usize) % tickets.len());
                let _ = timed(&mut longest, || s.cancel_checked(t));
            }
            8 | 9 if !permits.is_empty() => {
                let permit = permits.swap_remove((rng.next_u64() as usize) % permits.len());
                let _ = timed(&mut longest, || s.release_checked(permit));
            }
            10 => {
                let timeout = Duration::from_micros(rng.next_u64() % 3_000);
                if let Ok(permit) = timed(&mut longest, || s.acquire_timeout(p, Some(timeout))) {
                    permits.push(permit);
                }
            }
            11 => {
                let id = word(&mut rng);
                let _ = timed(&mut longest, || {
                    (
                        s.peek(SemTicket { id }),
                        s.poll(SemTicket { id }),
                        s.cancel(SemTicket { id }),
                        s.release(SemPermit { id }),
                    )
                });
            }
            12 => {
                let _ = timed(&mut longest, || {
                    (s.snapshot(), s.full_snapshot(), s.limit(p))
                });
            }
            _ => {
                let _ = timed(&mut longest, || s.reclaim_abandoned());
            }
        }
    }
    for t in tickets {
        let _ = timed(&mut longest, || s.cancel_checked(t));
    }
    for permit in permits {
        let _ = timed(&mut longest, || s.release_checked(permit));
    }
    longest
}

/// Any value of every configuration field the core semaphore keeps in its
/// region, and of its per-priority limits right after it.
fn random_semaphore_config(rng: &mut SplitMix64) -> (SemaphoreConfig, [u32; 4]) {
    let small = |rng: &mut SplitMix64| word(rng) as u32;
    let share = |rng: &mut SplitMix64| Ratio::from_ppm(word(rng));
    let config = SemaphoreConfig {
        max_concurrent: small(rng),
        max_queue: small(rng),
        shares: PriorityShares {
            critical: share(rng),
            high: share(rng),
            normal: share(rng),
            low: share(rng),
        },
    };
    (config, [small(rng), small(rng), small(rng), small(rng)])
}

#[test]
fn a_corrupted_semaphore_never_panics_or_hangs() {
    let config = semaphore_config();
    for trial in 0..80 {
        let mut rng = SplitMix64::new(trial ^ 0x5E4A);
        let (mem, (state_at, slots_at, config_at)) = semaphore_memory(&config);
        {
            // SAFETY: as for the breaker.
            let s = unsafe { Semaphore::attach(mem.ptr, mem.len()) }.unwrap();
            // Permits held, waiters queued, some granted and not yet polled.
            let mut held = Vec::new();
            for _ in 0..8 {
                match s.acquire_or_enqueue(Priority::Normal) {
                    Ok(Acquired::Admitted(p)) => held.push(p),
                    Ok(Acquired::Queued(_)) | Err(_) => {}
                }
            }
            for p in held.into_iter().take(2) {
                s.release(p).unwrap();
            }
        }
        let end = config_at + size_of::<SemaphoreConfig>() + 16;
        let hits = 1 + rng.next_u64() % 24;
        // Half the hits in the state word and the first slots, the rest
        // anywhere in the core semaphore; a few in the holder table after it.
        corrupt(&mem, state_at, end, 256, (0, 0), hits, &mut rng);
        let table_end = SharedRegion::<SemaphoreCell>::VALUE_OFFSET + size_of::<SemaphoreCell>();
        corrupt(
            &mem,
            end,
            table_end,
            4096,
            (0, 0),
            rng.next_u64() % 4,
            &mut rng,
        );
        if coin(&mut rng) {
            // Slot words that are all one status, as a process writing garbage
            // in a loop would leave them.
            let status = rng.next_u64() % 4;
            let n = (rng.next_u64() as usize) % (SEMAPHORE_MAX_QUEUE + 1);
            for i in 0..n {
                let v = (rng.next_u64() & !3) | status;
                let at = slots_at + 8 * i;
                // SAFETY: slot `i`'s place in the region; no thread runs yet.
                unsafe { mem.ptr.as_ptr().add(at).cast::<u64>().write_unaligned(v) };
            }
        }
        if coin(&mut rng) {
            let (c, limits) = random_semaphore_config(&mut rng);
            // SAFETY: the configuration's and the limits' own places in the
            // core semaphore, aligned for them; no thread runs yet.
            unsafe {
                let at = mem.ptr.as_ptr().add(config_at);
                at.cast::<SemaphoreConfig>().write_unaligned(c);
                at.add(size_of::<SemaphoreConfig>())
                    .cast::<[u32; 4]>()
                    .write_unaligned(limits);
            }
        }
        let shared = Arc::clone(&mem);
        run_threads("semaphore", trial, move |seed| {
            // SAFETY: as for the breaker.
            let s = unsafe { Semaphore::attach(shared.ptr, shared.len()) }.unwrap();
            semaphore_ops(&s, seed)
        });
    }
}
