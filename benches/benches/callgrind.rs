//! Instruction counts per operation, for `benches/run --callgrind`: each
//! operation is one `#[inline(never)]` function `cg_<name>_op`, called `n` times
//! from a loop; valgrind's callgrind counts only what runs inside it
//! (`--toggle-collect`), so set-up (a fresh breaker before a trip) is not
//! counted and the count per call is stable on a noisy machine. Each count
//! includes the function's `ret` (a `fetch_add` counts 2: `lock xadd`, `ret`).
//!
//! `callgrind --list` prints the operation names; `callgrind NAME N` runs one;
//! with no argument every operation runs once natively, as a smoke test.

mod common;

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};

use common::{
    Breaker, CountBreaker, Failsafe, Governor, GovernorFakeClock, T0, TICK, TowerBreaker,
    async_lock_semaphore, async_lock_semaphore_cycle, failsafe, failsafe_call, failsafe_is_open,
    failsafe_long_open, failures_to_trip, governor, governor_fake_clock, governor_fake_clock_spent,
    governor_spent, recloser, recloser_call, recloser_is_open, seawall_breaker, seawall_budget,
    seawall_budget_cycle, seawall_closed, seawall_count_breaker, seawall_fail, seawall_is_open,
    seawall_rate_check, seawall_rate_limiter, seawall_rate_limiter_spent, seawall_semaphore,
    seawall_semaphore_cycle, tokio_semaphore, tokio_semaphore_cycle, tower_breaker, tower_budget,
    tower_budget_cycle, tower_call, tower_is_open,
};
use recloser::Recloser;
use seawall_core::{RateLimiter, RetryBudget, Semaphore};
use tower::retry::budget::TpsBudget;

#[inline(never)]
fn cg_floor_fetch_add_op(a: &AtomicU64) {
    a.fetch_add(1, Ordering::AcqRel);
}
#[inline(never)]
fn cg_floor_compare_exchange_op(a: &AtomicU64) {
    let v = a.load(Ordering::Relaxed);
    let _ =
        black_box(a.compare_exchange(v, v.wrapping_add(1), Ordering::AcqRel, Ordering::Relaxed));
}
#[inline(never)]
fn cg_floor_load_cmpxchg16b_op(a: &portable_atomic::AtomicU128) {
    let v = a.load(Ordering::Acquire);
    let _ =
        black_box(a.compare_exchange(v, v.wrapping_add(1), Ordering::AcqRel, Ordering::Acquire));
}
#[inline(never)]
fn cg_closed_seawall_op(b: &Breaker, now: u64) {
    seawall_closed(b, now);
}
#[inline(never)]
fn cg_closed_seawall_count_op(b: &CountBreaker, now: u64) {
    seawall_closed(b, now);
}
#[inline(never)]
fn cg_closed_recloser_op(r: &Recloser) {
    recloser_call(r, true).expect("closed");
}
#[inline(never)]
fn cg_closed_failsafe_op(f: &Failsafe) {
    failsafe_call(f, true).expect("closed");
}
#[inline(never)]
fn cg_closed_tower_op(t: &mut TowerBreaker) {
    tower_call(t, true).expect("closed");
}
#[inline(never)]
fn cg_rejected_seawall_op(b: &Breaker) {
    black_box(b.try_acquire(T0)).expect_err("open");
}
#[inline(never)]
fn cg_rejected_recloser_op(r: &Recloser) {
    recloser_call(r, true).expect_err("open");
}
#[inline(never)]
fn cg_rejected_failsafe_op(f: &Failsafe) {
    failsafe_call(f, true).expect_err("open");
}
#[inline(never)]
fn cg_rejected_tower_op(t: &mut TowerBreaker) {
    tower_call(t, true).expect_err("open");
}
#[inline(never)]
fn cg_trip_seawall_op(b: &Breaker) {
    seawall_fail(b, T0).expect("admitted");
}
#[inline(never)]
fn cg_trip_recloser_op(r: &Recloser) {
    let _ = recloser_call(r, false);
}
#[inline(never)]
fn cg_trip_failsafe_op(f: &Failsafe) {
    let _ = failsafe_call(f, false);
}
#[inline(never)]
fn cg_trip_tower_op(t: &mut TowerBreaker) {
    let _ = tower_call(t, false);
}
#[inline(never)]
fn cg_semaphore_seawall_op(s: &Semaphore<64>) {
    seawall_semaphore_cycle(s);
}
#[inline(never)]
fn cg_semaphore_tokio_op(s: &tokio::sync::Semaphore) {
    tokio_semaphore_cycle(s);
}
#[inline(never)]
fn cg_semaphore_async_lock_op(s: &async_lock::Semaphore) {
    async_lock_semaphore_cycle(s);
}
#[inline(never)]
fn cg_budget_seawall_op(b: &RetryBudget, now: u64) {
    black_box(seawall_budget_cycle(b, now));
}
#[inline(never)]
fn cg_budget_tower_op(b: &TpsBudget) {
    black_box(tower_budget_cycle(b));
}

#[inline(never)]
fn cg_rate_seawall_op(l: &RateLimiter, now: u64) {
    black_box(seawall_rate_check(l, now)).expect("admitted");
}
#[inline(never)]
fn cg_rate_governor_op(g: &Governor) {
    black_box(g.check()).expect("admitted");
}
#[inline(never)]
fn cg_rate_governor_fake_clock_op(g: &GovernorFakeClock) {
    black_box(g.check()).expect("admitted");
}
#[inline(never)]
fn cg_rate_rejected_seawall_op(l: &RateLimiter) {
    black_box(seawall_rate_check(l, T0)).expect_err("spent");
}
#[inline(never)]
fn cg_rate_rejected_governor_op(g: &Governor) {
    black_box(g.check()).expect_err("spent");
}
#[inline(never)]
fn cg_rate_rejected_governor_fake_clock_op(g: &GovernorFakeClock) {
    black_box(g.check()).expect_err("spent");
}

/// Trip `n` fresh instances, each set up outside the counted function.
fn trips<T>(
    n: u64,
    make: impl Fn() -> T,
    fail: impl Fn(&mut T),
    is_open: impl Fn(&T) -> bool,
    op: impl Fn(&mut T),
) {
    let k = failures_to_trip(&make, &fail, &is_open);
    for _ in 0..n {
        let mut x = make();
        for _ in 1..k {
            fail(&mut x);
        }
        op(&mut x);
        assert!(is_open(&x));
    }
}

/// (group, implementation, runner of `n` operations): the names are
/// `cg_<group>_<implementation>_op` above.
type Runner = fn(u64);
const OPS: &[(&str, &str, Runner)] = &[
    ("floor", "fetch_add", |n| {
        let a = AtomicU64::new(0);
        for _ in 0..n {
            cg_floor_fetch_add_op(black_box(&a));
        }
    }),
    ("floor", "compare_exchange", |n| {
        let a = AtomicU64::new(0);
        for _ in 0..n {
            cg_floor_compare_exchange_op(black_box(&a));
        }
    }),
    ("floor", "load_cmpxchg16b", |n| {
        let a = portable_atomic::AtomicU128::new(0);
        for _ in 0..n {
            cg_floor_load_cmpxchg16b_op(black_box(&a));
        }
    }),
    ("closed", "seawall", |n| {
        let b = seawall_breaker();
        for i in 0..n {
            cg_closed_seawall_op(black_box(&b), T0 + i * TICK);
        }
    }),
    ("closed", "seawall_count", |n| {
        let b = seawall_count_breaker();
        for i in 0..n {
            cg_closed_seawall_count_op(black_box(&b), T0 + i * TICK);
        }
    }),
    ("closed", "recloser", |n| {
        let r = recloser();
        for _ in 0..n {
            cg_closed_recloser_op(black_box(&r));
        }
    }),
    ("closed", "failsafe", |n| {
        let f = failsafe();
        for _ in 0..n {
            cg_closed_failsafe_op(black_box(&f));
        }
    }),
    ("closed", "tower", |n| {
        let mut t = tower_breaker();
        for _ in 0..n {
            cg_closed_tower_op(black_box(&mut t));
        }
    }),
    ("rejected", "seawall", |n| {
        let b = seawall_breaker();
        while !seawall_is_open(&b) {
            seawall_fail(&b, T0).expect("closed until it opens");
        }
        for _ in 0..n {
            cg_rejected_seawall_op(black_box(&b));
        }
    }),
    ("rejected", "recloser", |n| {
        let r = recloser();
        while !recloser_is_open(&r) {
            let _ = recloser_call(&r, false);
        }
        for _ in 0..n {
            cg_rejected_recloser_op(black_box(&r));
        }
    }),
    ("rejected", "failsafe", |n| {
        let f = failsafe_long_open();
        while !failsafe_is_open(&f) {
            let _ = failsafe_call(&f, false);
        }
        for _ in 0..n {
            cg_rejected_failsafe_op(black_box(&f));
        }
    }),
    ("rejected", "tower", |n| {
        let mut t = tower_breaker();
        while !tower_is_open(&t) {
            let _ = tower_call(&mut t, false);
        }
        for _ in 0..n {
            cg_rejected_tower_op(black_box(&mut t));
        }
    }),
    ("trip", "seawall", |n| {
        trips(
            n,
            seawall_breaker,
            |b| seawall_fail(b, T0).expect("closed"),
            seawall_is_open,
            |b| {
                cg_trip_seawall_op(black_box(b));
            },
        );
    }),
    ("trip", "recloser", |n| {
        let fail = |r: &mut Recloser| {
            let _ = recloser_call(r, false);
        };
        trips(n, recloser, fail, recloser_is_open, |r| {
            cg_trip_recloser_op(black_box(r));
        });
    }),
    ("trip", "failsafe", |n| {
        let fail = |f: &mut Failsafe| {
            let _ = failsafe_call(f, false);
        };
        trips(n, failsafe, fail, failsafe_is_open, |f| {
            cg_trip_failsafe_op(black_box(f));
        });
    }),
    ("trip", "tower", |n| {
        let fail = |t: &mut TowerBreaker| {
            let _ = tower_call(t, false);
        };
        trips(n, tower_breaker, fail, tower_is_open, |t| {
            cg_trip_tower_op(black_box(t));
        });
    }),
    ("semaphore", "seawall", |n| {
        let s = seawall_semaphore();
        for _ in 0..n {
            cg_semaphore_seawall_op(black_box(&s));
        }
    }),
    ("semaphore", "tokio", |n| {
        let s = tokio_semaphore();
        for _ in 0..n {
            cg_semaphore_tokio_op(black_box(&s));
        }
    }),
    ("semaphore", "async_lock", |n| {
        let s = async_lock_semaphore();
        for _ in 0..n {
            cg_semaphore_async_lock_op(black_box(&s));
        }
    }),
    ("budget", "seawall", |n| {
        let b = seawall_budget();
        for i in 0..n {
            cg_budget_seawall_op(black_box(&b), T0 + i * TICK);
        }
    }),
    ("budget", "tower", |n| {
        let b = tower_budget();
        for _ in 0..n {
            cg_budget_tower_op(black_box(&b));
        }
    }),
    ("rate", "seawall", |n| {
        let l = seawall_rate_limiter();
        for i in 0..n {
            cg_rate_seawall_op(black_box(&l), T0 + i * TICK);
        }
    }),
    ("rate", "governor", |n| {
        let g = governor();
        for _ in 0..n {
            cg_rate_governor_op(black_box(&g));
        }
    }),
    ("rate", "governor_fake_clock", |n| {
        let g = governor_fake_clock();
        for _ in 0..n {
            cg_rate_governor_fake_clock_op(black_box(&g));
        }
    }),
    ("rate_rejected", "seawall", |n| {
        let l = seawall_rate_limiter_spent();
        for _ in 0..n {
            cg_rate_rejected_seawall_op(black_box(&l));
        }
    }),
    ("rate_rejected", "governor", |n| {
        let g = governor_spent();
        for _ in 0..n {
            cg_rate_rejected_governor_op(black_box(&g));
        }
    }),
    ("rate_rejected", "governor_fake_clock", |n| {
        let g = governor_fake_clock_spent();
        for _ in 0..n {
            cg_rate_rejected_governor_fake_clock_op(black_box(&g));
        }
    }),
];

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    match args.as_slice() {
        [list] if list == "--list" => {
            for (group, imp, _) in OPS {
                println!("{group} {imp} cg_{group}_{imp}_op");
            }
        }
        [name, n] => {
            let n: u64 = n.parse().expect("N: a number of operations");
            let (_, _, run) = OPS
                .iter()
                .find(|(g, i, _)| format!("{g}/{i}") == *name)
                .unwrap_or_else(|| panic!("no operation {name}: see --list"));
            run(n);
        }
        [] => {
            for (group, imp, run) in OPS {
                run(10);
                println!("ran {group}/{imp}");
            }
            println!("(instruction counts: benches/run --callgrind)");
        }
        _ => panic!("usage: callgrind [--list | GROUP/IMPL N]"),
    }
}
