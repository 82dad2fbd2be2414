//! Arbitrary region images through the C ABI (DESIGN §8: region content is
//! untrusted input). A breaker (count or time window), health window, retry
//! budget, retry throttle or semaphore is built in caller memory, used a little,
//! then has arbitrary bytes and words of its structure overwritten (for a
//! breaker, its configuration only with values of the configuration's own type,
//! so every enum and `Option` tag stays valid; for a semaphore, optionally a run
//! of its wait slots set to one status), and then runs an arbitrary sequence of
//! calls.
//!
//! Fails on any call that returns `SEAWALL_STATUS_PANIC` (a panic was reachable
//! from region content) or takes longer than [`CALL_BOUND`] (a loop over region
//! words ran past its bound); a call that never returns is caught by
//! libFuzzer's `-timeout` (scripts/fuzz.sh sets it).
#![no_main]

use std::alloc::{Layout, alloc_zeroed, dealloc};
use std::ptr;
use std::time::{Duration, Instant};

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use seawall::capi::breaker::*;
use seawall::capi::health::*;
use seawall::capi::retry_budget::*;
use seawall::capi::retry_throttle::*;
use seawall::capi::seawall_status as S;
use seawall::capi::semaphore::*;
use seawall_core::{
    BreakerConfig, CircuitBreaker, CountWindow, Ratio, Semaphore, SemaphoreConfig, TimeWindow,
    WindowConfig,
};
use seawall_host::breaker::{COUNT_WINDOW_CAPACITY, CountCell, TIME_WINDOW_CAPACITY, TimeCell};
use seawall_host::semaphore::{Cell as SemaphoreCell, SEMAPHORE_MAX_QUEUE};
use seawall_host::shared::SharedRegion;

/// No call may take longer, whatever the region holds: a bounded retry loop
/// gives up after 2^20 passes, a few milliseconds.
const CALL_BOUND: Duration = Duration::from_secs(1);

#[derive(Arbitrary, Debug)]
enum Kind {
    CountBreaker,
    TimeBreaker,
    Health,
    Budget,
    Throttle,
    Semaphore,
}

#[derive(Arbitrary, Debug)]
enum Hit {
    /// Flip bit `bit % 8` of byte `at`.
    Flip { at: u32, bit: u8 },
    /// Set byte `at`.
    Byte { at: u32, value: u8 },
    /// Set the aligned 8-byte word at `at`.
    Word { at: u32, value: u64 },
    /// As `Word`, within the first 2 KiB of the structure, where the state
    /// words, the counts and the first slots live.
    HotWord { at: u16, value: u64 },
}

#[derive(Arbitrary, Debug)]
struct RawBreakerConfig {
    count: bool,
    size: u32,
    width: u64,
    minimum_calls: u32,
    failure_rate: Option<u64>,
    slow_rate: u64,
    slow_duration: Option<u64>,
    consecutive: Option<u32>,
    open_duration: u64,
    multiplier: u64,
    max_open: Option<u64>,
    jitter: u64,
    probes: u32,
    successes: u32,
    max_wait: Option<u64>,
    seed: u64,
}

impl RawBreakerConfig {
    fn config(&self) -> BreakerConfig {
        BreakerConfig {
            window: if self.count {
                WindowConfig::Count { size: self.size }
            } else {
                WindowConfig::Time {
                    buckets: self.size,
                    bucket_width_ns: self.width,
                }
            },
            minimum_calls: self.minimum_calls,
            failure_rate_threshold: self.failure_rate.map(Ratio::from_ppm),
            slow_call_rate_threshold: Ratio::from_ppm(self.slow_rate),
            slow_call_duration_ns: self.slow_duration,
            consecutive_failures: self.consecutive,
            open_duration_ns: self.open_duration,
            open_backoff_multiplier: Ratio::from_ppm(self.multiplier),
            max_open_duration_ns: self.max_open,
            open_jitter_factor: Ratio::from_ppm(self.jitter),
            half_open_max_calls: self.probes,
            half_open_success_threshold: self.successes,
            half_open_max_wait_ns: self.max_wait,
            jitter_seed: self.seed,
        }
    }
}

#[derive(Arbitrary, Debug)]
enum Op {
    Advance(u32),
    Jump(u64),
    Acquire,
    Record {
        which: u8,
        outcome: u8,
        duration: u64,
    },
    Forge {
        id: u64,
        epoch: u32,
    },
    Manual(u8),
    Observe,
    Reclaim,
    HealthRecord {
        outcome: u8,
        latency: u64,
    },
    HealthRead {
        ppm: u64,
    },
    Deposit,
    Withdraw,
    Balance,
    ThrottleSuccess,
    ThrottleFailure,
    Tokens,
    SemAcquire {
        priority: u8,
        wait: bool,
    },
    SemPoll(u8),
    SemCancel(u8),
    SemRelease(u8),
    /// A blocking acquire of at most `timeout_us` µs (`% 5000`).
    SemWait {
        priority: u8,
        timeout_us: u16,
    },
    SemForge(u64),
    SemObserve,
    SemReclaim,
}

/// The first `count` wait slots of a semaphore all set to `status % 4` (the
/// other bits from `noise`), as a process writing garbage in a loop leaves them.
#[derive(Arbitrary, Debug)]
struct SlotFill {
    status: u8,
    count: u16,
    noise: u64,
}

#[derive(Arbitrary, Debug)]
struct Input {
    kind: Kind,
    warmup: u8,
    hits: Vec<Hit>,
    breaker_config: Option<RawBreakerConfig>,
    slot_fill: Option<SlotFill>,
    ops: Vec<Op>,
}

/// Zeroed memory aligned for a region, freed on drop.
struct Memory {
    ptr: *mut u8,
    layout: Layout,
}

impl Memory {
    fn new(size: usize, align: usize) -> Self {
        let layout = Layout::from_size_align(size, align).unwrap();
        // SAFETY: non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        assert!(!ptr.is_null());
        Self { ptr, layout }
    }
}

impl Drop for Memory {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { dealloc(self.ptr, self.layout) };
    }
}

/// Call `f`, failing on a panic caught at the boundary or a call too slow.
fn timed(what: &str, f: impl FnOnce() -> S) -> S {
    let t0 = Instant::now();
    let s = f();
    let took = t0.elapsed();
    assert!(s != S::Panic, "{what} panicked on a corrupted region");
    assert!(
        took < CALL_BOUND,
        "{what} took {took:?} on a corrupted region"
    );
    s
}

/// Offset of the core breaker's configuration inside a breaker cell (the core
/// breaker is the cell's first field).
fn config_offset<W: seawall_core::SlidingWindow>(b: &CircuitBreaker<W>) -> usize {
    ptr::from_ref(b.config()) as usize - ptr::from_ref(b) as usize
}

/// The structure's byte range in the region and the bytes that only typed
/// writes may change.
fn layout(kind: &Kind) -> (usize, usize, (usize, usize)) {
    let cfg = |offset: usize, at: usize| (offset + at, offset + at + size_of::<BreakerConfig>());
    match kind {
        Kind::CountBreaker => {
            let o = SharedRegion::<CountCell>::VALUE_OFFSET;
            let core = Box::new(
                CircuitBreaker::<CountWindow<COUNT_WINDOW_CAPACITY>>::new(count_config()).unwrap(),
            );
            (o, o + size_of::<CountCell>(), cfg(o, config_offset(&core)))
        }
        Kind::TimeBreaker => {
            let o = SharedRegion::<TimeCell>::VALUE_OFFSET;
            let core = Box::new(
                CircuitBreaker::<TimeWindow<TIME_WINDOW_CAPACITY>>::new(time_config()).unwrap(),
            );
            (o, o + size_of::<TimeCell>(), cfg(o, config_offset(&core)))
        }
        Kind::Health => {
            let o = SharedRegion::<seawall_host::health::HealthWindow>::VALUE_OFFSET;
            (
                o,
                o + size_of::<seawall_host::health::HealthWindow>(),
                (0, 0),
            )
        }
        Kind::Budget => {
            let o = SharedRegion::<seawall_core::RetryBudget>::VALUE_OFFSET;
            (o, o + size_of::<seawall_core::RetryBudget>(), (0, 0))
        }
        Kind::Throttle => {
            let o = SharedRegion::<seawall_core::RetryThrottle>::VALUE_OFFSET;
            (o, o + size_of::<seawall_core::RetryThrottle>(), (0, 0))
        }
        Kind::Semaphore => {
            let o = SharedRegion::<SemaphoreCell>::VALUE_OFFSET;
            (o, o + size_of::<SemaphoreCell>(), (0, 0))
        }
    }
}

/// Offset of the first wait slot of a semaphore region: the core semaphore is
/// the cell's first field (`#[repr(C)]`), its `Q` slot words right before its
/// configuration.
fn semaphore_slots_at() -> usize {
    let core = Box::new(Semaphore::<SEMAPHORE_MAX_QUEUE>::new(semaphore_config()).unwrap());
    let config_at = ptr::from_ref(core.config()) as usize - ptr::from_ref(&*core) as usize;
    SharedRegion::<SemaphoreCell>::VALUE_OFFSET + config_at - 8 * SEMAPHORE_MAX_QUEUE
}

fn semaphore_config() -> SemaphoreConfig {
    SemaphoreConfig {
        max_concurrent: 3,
        max_queue: 8,
        ..SemaphoreConfig::DEFAULT
    }
}

fn fill_slots(mem: &Memory, fill: &SlotFill) {
    let at = semaphore_slots_at();
    let n = usize::from(fill.count) % (SEMAPHORE_MAX_QUEUE + 1);
    for i in 0..n {
        let v = (fill.noise.rotate_left(i as u32) & !3) | u64::from(fill.status % 4);
        // SAFETY: slot `i`'s place in the region, 8-aligned; nothing else runs.
        unsafe { mem.ptr.add(at + 8 * i).cast::<u64>().write(v) };
    }
}
fn count_config() -> BreakerConfig {
    BreakerConfig {
        window: WindowConfig::Count { size: 8 },
        minimum_calls: 2,
        consecutive_failures: Some(3),
        open_duration_ns: 1_000_000,
        half_open_max_wait_ns: Some(50_000_000),
        ..BreakerConfig::DEFAULT
    }
}

fn time_config() -> BreakerConfig {
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
}

fn c_breaker_config(c: &BreakerConfig) -> seawall_breaker_config {
    let mut out = seawall_breaker_config_default();
    match c.window {
        WindowConfig::Count { size } => {
            out.window_kind = SEAWALL_WINDOW_COUNT;
            out.window_size = size;
        }
        WindowConfig::Time {
            buckets,
            bucket_width_ns,
        } => {
            out.window_kind = SEAWALL_WINDOW_TIME;
            out.window_size = buckets;
            out.window_bucket_width_ns = bucket_width_ns;
        }
    }
    out.minimum_calls = u64::from(c.minimum_calls);
    out.consecutive_failures = c.consecutive_failures.map_or(u64::MAX, u64::from);
    out.slow_call_duration_ns = c.slow_call_duration_ns.unwrap_or(u64::MAX);
    out.open_duration_ns = c.open_duration_ns;
    out.open_jitter_factor_ppm = c.open_jitter_factor.ppm();
    out.half_open_max_wait_ns = c.half_open_max_wait_ns.unwrap_or(u64::MAX);
    out
}

fn corrupt(mem: &Memory, start: usize, end: usize, keep: (usize, usize), hits: &[Hit]) {
    let len = end - start;
    let kept = |at: usize, n: usize| at + n > keep.0 && at < keep.1;
    for hit in hits {
        let (at, write): (usize, Box<dyn Fn(*mut u8)>) = match *hit {
            Hit::Flip { at, bit } => (
                start + at as usize % len,
                Box::new(move |p| {
                    // SAFETY: inside the allocation; nothing else runs.
                    unsafe { *p ^= 1 << (bit % 8) }
                }),
            ),
            Hit::Byte { at, value } => (
                start + at as usize % len,
                Box::new(move |p| {
                    // SAFETY: as above.
                    unsafe { *p = value }
                }),
            ),
            Hit::Word { at, value } => (
                (start + at as usize % len) & !7,
                Box::new(move |p| {
                    // SAFETY: as above; 8 bytes checked to fit below.
                    unsafe { p.cast::<u64>().write_unaligned(value) }
                }),
            ),
            Hit::HotWord { at, value } => (
                (start + at as usize % len.min(2048)) & !7,
                Box::new(move |p| {
                    // SAFETY: as above.
                    unsafe { p.cast::<u64>().write_unaligned(value) }
                }),
            ),
        };
        let n = if matches!(hit, Hit::Word { .. } | Hit::HotWord { .. }) {
            8
        } else {
            1
        };
        if at < start || at + n > end || kept(at, n) {
            continue;
        }
        // SAFETY: `at .. at + n` lies inside the structure, inside the allocation.
        write(unsafe { mem.ptr.add(at) });
    }
}

struct Handles {
    breaker: *mut seawall_breaker,
    health: *mut seawall_health,
    budget: *mut seawall_retry_budget,
    throttle: *mut seawall_retry_throttle,
    semaphore: *mut seawall_semaphore,
}

impl Drop for Handles {
    fn drop(&mut self) {
        // SAFETY: each is NULL or a live handle made by its `_init_in`, freed once.
        unsafe {
            seawall_breaker_free(self.breaker);
            seawall_health_free(self.health);
            seawall_retry_budget_free(self.budget);
            seawall_retry_throttle_free(self.throttle);
            seawall_semaphore_free(self.semaphore);
        }
    }
}

fuzz_target!(|input: Input| {
    let (size, align) = match input.kind {
        Kind::CountBreaker | Kind::TimeBreaker => (seawall_breaker_size(), seawall_breaker_align()),
        Kind::Health => (seawall_health_size(), seawall_health_align()),
        Kind::Budget => (seawall_retry_budget_size(), seawall_retry_budget_align()),
        Kind::Throttle => (
            seawall_retry_throttle_size(),
            seawall_retry_throttle_align(),
        ),
        Kind::Semaphore => (seawall_semaphore_size(), seawall_semaphore_align()),
    };
    let mem = Memory::new(size, align);
    let m = mem.ptr.cast();
    let mut h = Handles {
        breaker: ptr::null_mut(),
        health: ptr::null_mut(),
        budget: ptr::null_mut(),
        throttle: ptr::null_mut(),
        semaphore: ptr::null_mut(),
    };
    // SAFETY: fresh memory of the advertised size and alignment, ours alone; valid
    // config and out pointers.
    let built = unsafe {
        match input.kind {
            Kind::CountBreaker => {
                seawall_breaker_init_in(m, size, &c_breaker_config(&count_config()), &mut h.breaker)
            }
            Kind::TimeBreaker => {
                seawall_breaker_init_in(m, size, &c_breaker_config(&time_config()), &mut h.breaker)
            }
            Kind::Health => {
                let c = seawall_health_config {
                    buckets: 5,
                    bucket_width_ns: 10_000_000,
                    ..seawall_health_config_default()
                };
                seawall_health_init_in(m, size, &c, &mut h.health)
            }
            Kind::Budget => {
                let c = seawall_retry_budget_config {
                    ttl_ns: 1_000_000_000,
                    ..seawall_retry_budget_config_default()
                };
                seawall_retry_budget_init_in(m, size, &c, &mut h.budget)
            }
            Kind::Throttle => {
                let c = seawall_retry_throttle_config_default();
                seawall_retry_throttle_init_in(m, size, &c, &mut h.throttle)
            }
            Kind::Semaphore => {
                let c = seawall_semaphore_config {
                    max_concurrent: 3,
                    max_queue: 8,
                    ..seawall_semaphore_config_default()
                };
                seawall_semaphore_init_in(m, size, &c, &mut h.semaphore)
            }
        }
    };
    assert_eq!(built, S::Ok);

    let mut now = 1_000_000u64;
    let mut held: Vec<seawall_permit> = Vec::new();
    let mut sem_held: Vec<seawall_semaphore_permit> = Vec::new();
    let mut sem_waiting: Vec<seawall_semaphore_ticket> = Vec::new();
    let warmup = input.warmup % 32;
    // SAFETY (every call below): live handles (or NULL for the other kinds,
    // which the calls refuse), valid out pointers.
    for i in 0..u64::from(warmup) {
        now += 1_000_000;
        unsafe {
            let mut p = std::mem::zeroed::<seawall_permit>();
            if !h.breaker.is_null()
                && seawall_breaker_try_acquire(h.breaker, now, &mut p, ptr::null_mut()) == S::Ok
            {
                let outcome = if i % 3 == 0 {
                    SEAWALL_OUTCOME_FAILURE
                } else {
                    SEAWALL_OUTCOME_SUCCESS
                };
                let _ = seawall_breaker_record(h.breaker, p, outcome, i * 700, now);
            }
            let _ = seawall_health_record(h.health, SEAWALL_OUTCOME_SUCCESS, i * 1_000, now);
            let _ = seawall_retry_budget_deposit(h.budget, now);
            let _ = seawall_retry_throttle_record_success(h.throttle);
            // Permits held, waiters queued and some of them granted.
            if !h.semaphore.is_null() {
                let mut p = std::mem::zeroed::<seawall_semaphore_permit>();
                let mut t = std::mem::zeroed::<seawall_semaphore_ticket>();
                match seawall_semaphore_acquire_or_enqueue(
                    h.semaphore,
                    SEAWALL_PRIORITY_NORMAL,
                    &mut p,
                    &mut t,
                    ptr::null_mut(),
                ) {
                    S::Ok if i % 4 == 0 => {
                        let _ = seawall_semaphore_release(h.semaphore, p);
                    }
                    S::Ok => sem_held.push(p),
                    S::Queued => sem_waiting.push(t),
                    _ => {}
                }
            }
        }
    }

    let (start, end, keep) = layout(&input.kind);
    corrupt(&mem, start, end, keep, &input.hits);
    if let Some(raw) = &input.breaker_config {
        if keep.1 > keep.0 {
            // SAFETY: the configuration's own place in the cell; nothing else runs.
            unsafe {
                mem.ptr
                    .add(keep.0)
                    .cast::<BreakerConfig>()
                    .write_unaligned(raw.config())
            };
        }
    }
    if let (Kind::Semaphore, Some(fill)) = (&input.kind, &input.slot_fill) {
        fill_slots(&mem, fill);
    }

    for op in input.ops.iter().take(256) {
        // SAFETY: as for the warm-up.
        unsafe {
            match *op {
                Op::Advance(dt) => now = now.saturating_add(u64::from(dt)),
                Op::Jump(t) => now = t,
                Op::Acquire if !h.breaker.is_null() => {
                    let mut p = std::mem::zeroed::<seawall_permit>();
                    let mut r = std::mem::zeroed::<seawall_rejection>();
                    if timed("acquire", || {
                        seawall_breaker_try_acquire(h.breaker, now, &mut p, &mut r)
                    }) == S::Ok
                    {
                        held.push(p);
                    }
                }
                Op::Record {
                    which,
                    outcome,
                    duration,
                } if !held.is_empty() => {
                    let p = held.swap_remove(usize::from(which) % held.len());
                    timed("record", || {
                        seawall_breaker_record(h.breaker, p, u32::from(outcome % 4), duration, now)
                    });
                }
                Op::Forge { id, epoch } if !h.breaker.is_null() => {
                    let p = seawall_permit {
                        id,
                        epoch,
                        reserved: 0,
                    };
                    timed("record a forged permit", || {
                        seawall_breaker_record(h.breaker, p, SEAWALL_OUTCOME_FAILURE, 1, now)
                    });
                }
                Op::Manual(which) if !h.breaker.is_null() => {
                    timed("manual state", || match which % 3 {
                        0 => seawall_breaker_force_open(h.breaker),
                        1 => seawall_breaker_disable(h.breaker),
                        _ => seawall_breaker_reset(h.breaker),
                    });
                }
                Op::Observe if !h.breaker.is_null() => {
                    let mut m = std::mem::zeroed::<seawall_breaker_metrics>();
                    timed("metrics", || {
                        seawall_breaker_get_metrics(h.breaker, now, &mut m)
                    });
                }
                Op::Reclaim if !h.breaker.is_null() => {
                    let mut n = 0u64;
                    timed("reclaim", || {
                        seawall_breaker_reclaim_abandoned(h.breaker, now, &mut n)
                    });
                }
                Op::HealthRecord { outcome, latency } if !h.health.is_null() => {
                    timed("health record", || {
                        seawall_health_record(h.health, u32::from(outcome % 4), latency, now)
                    });
                }
                Op::HealthRead { ppm } if !h.health.is_null() => {
                    let mut s = std::mem::zeroed::<seawall_health_snapshot>();
                    let mut q = 0u64;
                    timed("health snapshot", || {
                        seawall_health_get_snapshot(h.health, now, &mut s)
                    });
                    timed("health quantile", || {
                        seawall_health_quantile(h.health, ppm, now, &mut q)
                    });
                }
                Op::Deposit if !h.budget.is_null() => {
                    timed("deposit", || seawall_retry_budget_deposit(h.budget, now));
                }
                Op::Withdraw if !h.budget.is_null() => {
                    let mut ok = false;
                    timed("withdraw", || {
                        seawall_retry_budget_try_withdraw(h.budget, now, &mut ok)
                    });
                }
                Op::Balance if !h.budget.is_null() => {
                    let mut s = std::mem::zeroed::<seawall_retry_budget_snapshot>();
                    timed("balance", || {
                        seawall_retry_budget_balance(h.budget, now, &mut s)
                    });
                }
                Op::ThrottleSuccess if !h.throttle.is_null() => {
                    timed("throttle success", || {
                        seawall_retry_throttle_record_success(h.throttle)
                    });
                }
                Op::ThrottleFailure if !h.throttle.is_null() => {
                    let mut ok = false;
                    timed("throttle failure", || {
                        seawall_retry_throttle_record_failure(h.throttle, &mut ok)
                    });
                }
                Op::Tokens if !h.throttle.is_null() => {
                    let (mut t, mut ok) = (0u64, false);
                    timed("tokens", || {
                        seawall_retry_throttle_tokens(h.throttle, &mut t, &mut ok)
                    });
                }
                Op::SemAcquire { priority, wait } if !h.semaphore.is_null() => {
                    let mut p = std::mem::zeroed::<seawall_semaphore_permit>();
                    let mut t = std::mem::zeroed::<seawall_semaphore_ticket>();
                    let mut r = std::mem::zeroed::<seawall_semaphore_rejection>();
                    let prio = u32::from(priority % 4);
                    let got = if wait {
                        timed("semaphore acquire_or_enqueue", || {
                            seawall_semaphore_acquire_or_enqueue(
                                h.semaphore,
                                prio,
                                &mut p,
                                &mut t,
                                &mut r,
                            )
                        })
                    } else {
                        timed("semaphore try_acquire", || {
                            seawall_semaphore_try_acquire(h.semaphore, prio, &mut p, &mut r)
                        })
                    };
                    match got {
                        S::Ok => sem_held.push(p),
                        S::Queued => sem_waiting.push(t),
                        _ => {}
                    }
                }
                Op::SemPoll(which) if !sem_waiting.is_empty() => {
                    let i = usize::from(which) % sem_waiting.len();
                    let mut p = std::mem::zeroed::<seawall_semaphore_permit>();
                    match timed("semaphore poll", || {
                        seawall_semaphore_poll(h.semaphore, sem_waiting[i], &mut p)
                    }) {
                        S::Waiting => {}
                        S::Ok => {
                            sem_waiting.swap_remove(i);
                            sem_held.push(p);
                        }
                        _ => {
                            sem_waiting.swap_remove(i);
                        }
                    }
                }
                Op::SemCancel(which) if !sem_waiting.is_empty() => {
                    let t = sem_waiting.swap_remove(usize::from(which) % sem_waiting.len());
                    timed("semaphore cancel", || {
                        seawall_semaphore_cancel(h.semaphore, t)
                    });
                }
                Op::SemRelease(which) if !sem_held.is_empty() => {
                    let p = sem_held.swap_remove(usize::from(which) % sem_held.len());
                    timed("semaphore release", || {
                        seawall_semaphore_release(h.semaphore, p)
                    });
                }
                Op::SemWait {
                    priority,
                    timeout_us,
                } if !h.semaphore.is_null() => {
                    let mut p = std::mem::zeroed::<seawall_semaphore_permit>();
                    let timeout_ns = u64::from(timeout_us % 5000) * 1000;
                    let prio = u32::from(priority % 4);
                    if timed("semaphore acquire_timeout", || {
                        seawall_semaphore_acquire_timeout(
                            h.semaphore,
                            prio,
                            timeout_ns,
                            &mut p,
                            ptr::null_mut(),
                        )
                    }) == S::Ok
                    {
                        sem_held.push(p);
                    }
                }
                Op::SemForge(id) if !h.semaphore.is_null() => {
                    let mut p = std::mem::zeroed::<seawall_semaphore_permit>();
                    timed("semaphore poll of a forged ticket", || {
                        seawall_semaphore_poll(h.semaphore, seawall_semaphore_ticket { id }, &mut p)
                    });
                    timed("semaphore cancel of a forged ticket", || {
                        seawall_semaphore_cancel(h.semaphore, seawall_semaphore_ticket { id })
                    });
                    timed("semaphore release of a forged permit", || {
                        seawall_semaphore_release(h.semaphore, seawall_semaphore_permit { id })
                    });
                }
                Op::SemObserve if !h.semaphore.is_null() => {
                    let mut snap = std::mem::zeroed::<seawall_semaphore_snapshot>();
                    let mut limit = 0u32;
                    timed("semaphore snapshot", || {
                        seawall_semaphore_get_snapshot(h.semaphore, &mut snap)
                    });
                    timed("semaphore limit", || {
                        seawall_semaphore_limit(h.semaphore, SEAWALL_PRIORITY_LOW, &mut limit)
                    });
                }
                Op::SemReclaim if !h.semaphore.is_null() => {
                    let (mut permits, mut tickets) = (0u64, 0u64);
                    timed("semaphore reclaim", || {
                        seawall_semaphore_reclaim_abandoned(h.semaphore, &mut permits, &mut tickets)
                    });
                }
                _ => {}
            }
        }
    }
    for p in held {
        // SAFETY: live handle.
        timed("final record", || unsafe {
            seawall_breaker_record(h.breaker, p, SEAWALL_OUTCOME_SUCCESS, 1, now)
        });
    }
    for t in sem_waiting {
        // SAFETY: live handle.
        timed("final cancel", || unsafe {
            seawall_semaphore_cancel(h.semaphore, t)
        });
    }
    for p in sem_held {
        // SAFETY: live handle.
        timed("final release", || unsafe {
            seawall_semaphore_release(h.semaphore, p)
        });
    }
    drop(h);
});
