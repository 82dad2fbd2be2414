//! Arbitrary configurations and operation sequences through the C ABI of seawall
//! (the exported `extern "C"` functions, called as a C program would).
//!
//! Checked after every step: no call ever returns `SEAWALL_STATUS_PANIC` or a
//! status outside the set that call may return; a held permit records once and
//! then is refused; an unknown outcome leaves the permit usable; the breaker's
//! totals account for every permit (admitted = recorded + outstanding); probes in
//! flight never exceed `half_open_max_calls`; deadlines never grow past their
//! parent. With `region`, the breaker lives in caller memory, a second handle is
//! attached to it, and the header is corrupted at the end: attaching then must
//! fail cleanly or still work. The other primitives (semaphore, retry budget,
//! throttle, backoff, retry decision, health) run on the same clock against
//! models of their own (`others.rs`), and so do the rate limiters
//! (`limiter.rs`).
#![no_main]

mod limiter;
mod others;

use std::alloc::{Layout, alloc_zeroed, dealloc};
use std::ptr;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use seawall::capi::breaker::*;
use seawall::capi::common::SEAWALL_NONE;
use seawall::capi::deadline::*;
use seawall::capi::seawall_status as S;

#[derive(Arbitrary, Debug)]
struct Input {
    config: RawConfig,
    region: bool,
    ops: Vec<Op>,
    corrupt: Vec<(u8, u8)>,
    others: others::Configs,
    limiter: limiter::LimiterConfig,
}

/// Each field: an arbitrary raw value, folded into a mostly-valid range unless
/// `raw` asks for it as is.
#[derive(Arbitrary, Debug)]
struct RawConfig {
    raw: u16,
    window_kind: u32,
    window_size: u32,
    bucket_width: u64,
    minimum_calls: u64,
    failure_rate: u64,
    slow_rate: u64,
    slow_duration: u64,
    consecutive: u64,
    open_duration: u64,
    multiplier: u64,
    max_open: u64,
    jitter: u64,
    probes: u64,
    successes: u64,
    max_wait: u64,
    seed: u64,
}

#[derive(Arbitrary, Debug)]
enum Op {
    Advance(u32),
    StepBack(u16),
    Acquire,
    Record {
        which: u16,
        outcome: u8,
        duration: u32,
    },
    RecordUsed {
        which: u16,
    },
    Forge {
        id: u64,
        epoch: u32,
    },
    ForceOpen,
    Disable,
    Reset,
    Observe,
    Reclaim,
    SwitchHandle,
    Deadline {
        total: u64,
        max: u64,
        child: u64,
        dt: u32,
        raw: Option<(u64, u64)>,
    },
    Other(others::Op),
    Limit(limiter::LimiterOp),
}

fn pick(raw: bool, v: u64, valid: impl Fn(u64) -> u64) -> u64 {
    if raw { v } else { valid(v) }
}

fn config(c: &RawConfig) -> seawall_breaker_config {
    let r = |bit: u16| c.raw & (1 << bit) != 0;
    let none_or = |bit: u16, v: u64, f: &dyn Fn(u64) -> u64| {
        if r(bit) {
            v
        } else if v % 3 == 0 {
            SEAWALL_NONE
        } else {
            f(v)
        }
    };
    seawall_breaker_config {
        window_kind: if r(0) {
            c.window_kind
        } else {
            c.window_kind % 2
        },
        window_size: if r(1) {
            c.window_size
        } else {
            1 + c.window_size % 64
        },
        window_bucket_width_ns: pick(r(2), c.bucket_width, |v| 100_000 + v % 10_000_000),
        minimum_calls: pick(r(3), c.minimum_calls, |v| 1 + v % 30),
        failure_rate_threshold_ppm: none_or(4, c.failure_rate, &|v| v % 1_000_001),
        slow_call_rate_threshold_ppm: pick(r(5), c.slow_rate, |v| v % 1_000_001),
        slow_call_duration_ns: none_or(6, c.slow_duration, &|v| v % 10_000_000),
        consecutive_failures: none_or(7, c.consecutive, &|v| 1 + v % 20),
        open_duration_ns: pick(r(8), c.open_duration, |v| 1 + v % 100_000_000),
        open_backoff_multiplier_ppm: pick(r(9), c.multiplier, |v| 1_000_000 + v % 3_000_000),
        max_open_duration_ns: none_or(10, c.max_open, &|v| 100_000_000 + v % 1_000_000_000),
        open_jitter_factor_ppm: pick(r(11), c.jitter, |v| v % 1_000_001),
        half_open_max_calls: pick(r(12), c.probes, |v| 1 + v % 5),
        half_open_success_threshold: pick(r(13), c.successes, |v| 1 + v % 5),
        half_open_max_wait_ns: none_or(14, c.max_wait, &|v| 1 + v % 100_000_000),
        jitter_seed: c.seed,
    }
}

struct Held {
    permit: seawall_permit,
}

struct Model {
    admitted: u64,
    rejected: u64,
    recorded: u64,
}

fn check(ok: bool, what: &str) {
    assert!(ok, "{what}");
}

fn metrics(b: *const seawall_breaker, now: u64) -> seawall_breaker_metrics {
    let mut m = std::mem::MaybeUninit::<seawall_breaker_metrics>::uninit();
    // SAFETY: live handle, valid out pointer.
    let s = unsafe { seawall_breaker_get_metrics(b, now, m.as_mut_ptr()) };
    check(s == S::Ok, "metrics");
    // SAFETY: written on OK.
    unsafe { m.assume_init() }
}

fn deadline_ops(total: u64, max: u64, child_total: u64, now: u64, raw: Option<(u64, u64)>) {
    let mut d = seawall_deadline {
        start_ns: 0,
        end_ns: 0,
    };
    let s = match raw {
        Some((start_ns, end_ns)) => {
            d = seawall_deadline { start_ns, end_ns };
            if end_ns < start_ns {
                S::InvalidArgument
            } else {
                S::Ok
            }
        }
        // SAFETY: valid out pointer.
        None => unsafe { seawall_deadline_start(total, now, &raw mut d) },
    };
    if raw.is_none() {
        check(
            s == if total == 0 { S::InvalidConfig } else { S::Ok },
            "deadline start",
        );
        if s != S::Ok {
            return;
        }
        check(d.end_ns == now.saturating_add(total), "deadline end");
    }
    let later = now.wrapping_add(total / 3);
    let (mut rem, mut alloc, mut expired) = (0u64, 0u64, false);
    // SAFETY: valid pointers for every call below.
    let (s1, s2, s3) = unsafe {
        (
            seawall_deadline_remaining(&raw const d, later, &raw mut rem),
            seawall_deadline_allocate(&raw const d, max, later, &raw mut alloc),
            seawall_deadline_expired(&raw const d, later, &raw mut expired),
        )
    };
    if s != S::Ok {
        check(
            s1 == S::InvalidArgument && s2 == s1 && s3 == s1,
            "bad deadline refused",
        );
        return;
    }
    check(
        s1 == S::Ok && s2 == S::Ok && s3 == S::Ok,
        "deadline queries",
    );
    check(rem <= d.end_ns - d.start_ns, "remaining within the budget");
    check(alloc == max.min(rem), "allocate = min(max, remaining)");
    check(expired == (rem == 0), "expired iff nothing remains");
    let mut c = seawall_deadline {
        start_ns: 0,
        end_ns: 0,
    };
    // SAFETY: valid pointers.
    let s = unsafe { seawall_deadline_child(&raw const d, child_total, later, &raw mut c) };
    check(s == S::Ok, "child");
    check(
        c.end_ns <= d.end_ns && c.start_ns <= c.end_ns,
        "child never outlives its parent",
    );
}

fuzz_target!(|input: Input| {
    let cfg = config(&input.config);
    let (size, align) = (seawall_breaker_size(), seawall_breaker_align());
    let layout = Layout::from_size_align(size, align).unwrap();
    // SAFETY: non-zero size.
    let mem = unsafe { alloc_zeroed(layout) };
    assert!(!mem.is_null());
    let mut handles: Vec<*mut seawall_breaker> = Vec::new();
    let mut b = ptr::null_mut();
    // SAFETY: valid config, out pointer and memory of the advertised size.
    let s = unsafe {
        if input.region {
            seawall_breaker_init_in(mem.cast(), size, &raw const cfg, &raw mut b)
        } else {
            seawall_breaker_new(&raw const cfg, &raw mut b)
        }
    };
    check(
        matches!(s, S::Ok | S::InvalidConfig),
        "create: ok or invalid config",
    );
    if s == S::Ok {
        handles.push(b);
        if input.region {
            let mut second = ptr::null_mut();
            // SAFETY: memory initialised by init_in above.
            let s = unsafe { seawall_breaker_attach(mem.cast(), size, &raw mut second) };
            check(s == S::Ok, "attach");
            handles.push(second);
        }
        let mut real = cfg;
        // SAFETY: live handle.
        check(
            unsafe { seawall_breaker_get_config(b, &raw mut real) } == S::Ok,
            "get config",
        );
        run(&handles, &real, &input.ops);
    } else {
        check(b.is_null(), "out is NULL after a failure");
    }
    for h in handles.drain(..) {
        // SAFETY: live handles, freed once.
        unsafe { seawall_breaker_free(h) };
    }
    if input.region && s == S::Ok {
        // Corrupt header bytes: attaching must fail cleanly or still work.
        for &(at, v) in &input.corrupt {
            // SAFETY: within the allocation (offsets below 128, the header).
            unsafe { *mem.add(usize::from(at) % 128) = v };
        }
        let mut h = ptr::null_mut();
        // SAFETY: the memory holds a (possibly corrupted) region built by init_in.
        let s = unsafe { seawall_breaker_attach(mem.cast(), size, &raw mut h) };
        check(
            matches!(
                s,
                S::Ok | S::NotARegion | S::AbiMismatch | S::ConfigMismatch
            ),
            "attach after corruption",
        );
        // SAFETY: NULL or a live handle.
        unsafe { seawall_breaker_free(h) };
    }
    // SAFETY: allocated above with this layout; no handle remains.
    unsafe { dealloc(mem, layout) };
    run_others(&input.others, &input.ops);
    run_limiters(&input.limiter, &input.ops);
});

/// The rate limiters' operations, on the same clock as the breaker's (plus
/// their own leaps towards the end of the u64 clock).
fn run_limiters(config: &limiter::LimiterConfig, ops: &[Op]) {
    let mut now: u64 = 1_000_000_000;
    let mut limiters = limiter::Limiters::new(config);
    for op in ops.iter().take(512) {
        match op {
            Op::Advance(dt) => now = now.saturating_add(u64::from(*dt) * 1000),
            Op::StepBack(dt) => now = now.saturating_sub(u64::from(*dt)),
            Op::Limit(o) => limiters.step(o, now),
            _ => {}
        }
    }
    limiters.finish();
}

/// The other primitives' operations, on the same clock as the breaker's.
fn run_others(configs: &others::Configs, ops: &[Op]) {
    let mut now: u64 = 1_000_000_000;
    let mut world = others::World::new(configs);
    for op in ops.iter().take(512) {
        match op {
            Op::Advance(dt) => now = now.saturating_add(u64::from(*dt) * 1000),
            Op::StepBack(dt) => now = now.saturating_sub(u64::from(*dt)),
            Op::Other(o) => world.step(o, now),
            _ => {}
        }
    }
    world.finish();
}

fn run(handles: &[*mut seawall_breaker], cfg: &seawall_breaker_config, ops: &[Op]) {
    let mut now: u64 = 1_000_000_000;
    let mut which_handle = 0usize;
    let mut held: Vec<Held> = Vec::new();
    let mut used: Vec<seawall_permit> = Vec::new();
    let mut model = Model {
        admitted: 0,
        rejected: 0,
        recorded: 0,
    };
    for op in ops.iter().take(512) {
        let b = handles[which_handle % handles.len()];
        match *op {
            Op::Advance(dt) => now = now.saturating_add(u64::from(dt) * 1000),
            Op::StepBack(dt) => now = now.saturating_sub(u64::from(dt)),
            Op::Acquire => {
                if held.len() >= 256 {
                    continue;
                }
                let mut p = seawall_permit {
                    id: 0,
                    epoch: 0,
                    reserved: 0,
                };
                let mut r = seawall_rejection {
                    state: 99,
                    reserved: 0,
                    retry_after_ns: 0,
                };
                // SAFETY: live handle, valid out pointers.
                let s = unsafe { seawall_breaker_try_acquire(b, now, &raw mut p, &raw mut r) };
                match s {
                    S::Ok => {
                        model.admitted += 1;
                        held.push(Held { permit: p });
                    }
                    S::Rejected => {
                        model.rejected += 1;
                        check(
                            matches!(
                                r.state,
                                SEAWALL_STATE_OPEN
                                    | SEAWALL_STATE_HALF_OPEN
                                    | SEAWALL_STATE_FORCED_OPEN
                            ),
                            "rejecting state",
                        );
                        check(
                            (r.retry_after_ns != SEAWALL_NONE) == (r.state == SEAWALL_STATE_OPEN),
                            "retry-after only for open",
                        );
                    }
                    other => panic!("acquire returned {other:?}"),
                }
            }
            Op::Record {
                which,
                outcome,
                duration,
            } => {
                if held.is_empty() {
                    continue;
                }
                let i = usize::from(which) % held.len();
                let p = held[i].permit;
                let outcome = u32::from(outcome % 4);
                // SAFETY: live handle.
                let s = unsafe { seawall_breaker_record(b, p, outcome, u64::from(duration), now) };
                if outcome <= SEAWALL_OUTCOME_IGNORED {
                    check(s == S::Ok, "a held permit records once");
                    held.swap_remove(i);
                    used.push(p);
                    model.recorded += 1;
                } else {
                    check(s == S::InvalidArgument, "unknown outcome refused");
                }
            }
            Op::RecordUsed { which } => {
                if used.is_empty() {
                    continue;
                }
                let p = used[usize::from(which) % used.len()];
                // SAFETY: live handle.
                let s = unsafe { seawall_breaker_record(b, p, SEAWALL_OUTCOME_FAILURE, 0, now) };
                check(s == S::PermitAlreadyUsed, "a used permit is refused");
            }
            Op::Forge { id, epoch } => {
                let p = seawall_permit {
                    id,
                    epoch,
                    reserved: 0,
                };
                // SAFETY: live handle.
                let s = unsafe { seawall_breaker_record(b, p, SEAWALL_OUTCOME_SUCCESS, 0, now) };
                match s {
                    S::Ok => {
                        // Only possible if it equals a permit we hold.
                        let i = held
                            .iter()
                            .position(|h| h.permit.id == id && h.permit.epoch == epoch);
                        check(i.is_some(), "a forged permit was accepted");
                        if let Some(i) = i {
                            held.swap_remove(i);
                            used.push(p);
                            model.recorded += 1;
                        }
                    }
                    S::PermitAlreadyUsed | S::InvalidArgument => {}
                    other => panic!("forged record returned {other:?}"),
                }
            }
            Op::ForceOpen => {
                // SAFETY: live handle.
                check(
                    unsafe { seawall_breaker_force_open(b) } == S::Ok,
                    "force open",
                );
            }
            Op::Disable => {
                // SAFETY: live handle.
                check(unsafe { seawall_breaker_disable(b) } == S::Ok, "disable");
            }
            Op::Reset => {
                // SAFETY: live handle.
                check(unsafe { seawall_breaker_reset(b) } == S::Ok, "reset");
            }
            Op::Observe => {
                let m = metrics(b, now);
                check(m.state <= SEAWALL_STATE_DISABLED, "state in range");
                check(m.admitted == model.admitted, "admitted");
                check(m.rejected == model.rejected, "rejected");
                check(
                    m.successes + m.failures + m.ignored == model.recorded,
                    "every record counted once",
                );
                check(
                    m.permits_outstanding == held.len() as u64,
                    "outstanding permits",
                );
                check(
                    m.admitted == model.recorded + m.permits_outstanding,
                    "permits add up",
                );
                check(
                    u64::from(m.half_open_in_flight) <= cfg.half_open_max_calls,
                    "probe limit",
                );
                check(
                    m.window_failures <= m.window_calls && m.window_slow <= m.window_calls,
                    "window",
                );
                let mut st = 99;
                let mut ra = 0;
                // SAFETY: live handle, valid out pointers.
                unsafe {
                    check(seawall_breaker_state(b, &raw mut st) == S::Ok, "state");
                    check(
                        seawall_breaker_retry_after(b, now, &raw mut ra) == S::Ok,
                        "retry after",
                    );
                }
                check(st <= SEAWALL_STATE_DISABLED, "state in range");
            }
            Op::Reclaim => {
                // Every permit belongs to this live process: nothing to take back.
                let mut n = 99;
                // SAFETY: live handle, valid out pointer.
                let s = unsafe { seawall_breaker_reclaim_abandoned(b, now, &raw mut n) };
                check(s == S::Ok && n == 0, "reclaim takes no live permit");
            }
            Op::SwitchHandle => which_handle += 1,
            Op::Deadline {
                total,
                max,
                child,
                dt,
                raw,
            } => {
                deadline_ops(total, max, child, now.wrapping_add(u64::from(dt)), raw);
            }
            Op::Other(_) | Op::Limit(_) => {} // run_others, run_limiters
        }
    }
    // Every held permit can still be given back exactly once.
    for h in held.drain(..) {
        // SAFETY: live handle.
        let s = unsafe {
            seawall_breaker_record(handles[0], h.permit, SEAWALL_OUTCOME_IGNORED, 0, now)
        };
        check(s == S::Ok, "held permits release at the end");
    }
    check(
        metrics(handles[0], now).permits_outstanding == 0,
        "no permit leaked",
    );
}
