//! Two threads hammering one shared object: total operations per second of
//! seawall's breaker, semaphore, retry budget and rate limiter next to the Rust peers doing
//! the same job, and next to `fetch_add` on one shared cache line (the floor of
//! any shared counter) and on two private ones (what two cores do when they share
//! nothing).
//!
//! A round starts both threads at a barrier and times a fixed number of
//! operations per thread by wall clock (first start to last end). Each
//! contender's operation count is calibrated to about `ROUND` of work; the
//! contenders take turns round by round, so drift of a busy machine hits all of
//! them alike; each reports its median round (and the slowest and fastest).
//! Results go to `$SEAWALL_BENCH_OUT/contended.json` (default `target/bench-run`).
//!
//! Environment: `SEAWALL_BENCH_THREADS` (default 2), `SEAWALL_BENCH_ROUNDS`
//! (default 7), `SEAWALL_BENCH_ROUND_MS` (default 200).

mod common;

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};

use common::{
    T0, TICK, async_lock_semaphore, async_lock_semaphore_cycle, failsafe_call, failsafe_is_open,
    failsafe_long_open, governor, governor_fake_clock, governor_fake_clock_spent, governor_spent,
    recloser, recloser_call, recloser_is_open, seawall_breaker, seawall_budget,
    seawall_budget_cycle, seawall_closed, seawall_count_breaker, seawall_fail, seawall_is_open,
    seawall_rate_check, seawall_rate_limiter, seawall_rate_limiter_spent, seawall_semaphore,
    seawall_semaphore_cycle, tokio_semaphore, tokio_semaphore_cycle, tower_breaker, tower_budget,
    tower_budget_cycle, tower_call,
};
use crossbeam_utils::CachePadded;
use seawall_benches::{Contended, contend, median};
use serde_json::json;

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// One contender: runs one round of `threads` threads × `ops` operations.
struct Case {
    group: &'static str,
    imp: &'static str,
    round: Box<dyn Fn(usize, u64) -> Contended>,
}

fn case(
    group: &'static str,
    imp: &'static str,
    round: impl Fn(usize, u64) -> Contended + 'static,
) -> Case {
    Case {
        group,
        imp,
        round: Box::new(round),
    }
}

#[allow(clippy::too_many_lines)] // one flat list of contenders reads best
fn cases() -> Vec<Case> {
    let mut v = Vec::new();

    let shared = std::sync::Arc::new(CachePadded::new(AtomicU64::new(0)));
    v.push(case("floor", "fetch_add_shared", move |t, n| {
        contend(t, n, |_| {
            let a = &**shared;
            move || {
                black_box(a).fetch_add(1, Ordering::AcqRel);
            }
        })
    }));
    v.push(case("floor", "fetch_add_private", |t, n| {
        contend(t, n, |_| {
            let a = CachePadded::new(AtomicU64::new(0));
            move || {
                black_box(&a).fetch_add(1, Ordering::AcqRel);
            }
        })
    }));

    let b = std::sync::Arc::new(seawall_breaker());
    v.push(case("breaker_closed", "seawall", move |t, n| {
        contend(t, n, |_| {
            let (b, mut now) = (&*b, T0);
            move || {
                now += TICK;
                seawall_closed(black_box(b), now);
            }
        })
    }));
    let b = std::sync::Arc::new(seawall_count_breaker());
    v.push(case(
        "breaker_closed",
        "seawall_count_window",
        move |t, n| {
            contend(t, n, |_| {
                let (b, mut now) = (&*b, T0);
                move || {
                    now += TICK;
                    seawall_closed(black_box(b), now);
                }
            })
        },
    ));
    let r = std::sync::Arc::new(recloser());
    v.push(case("breaker_closed", "recloser", move |t, n| {
        contend(t, n, |_| {
            let r = &*r;
            move || {
                black_box(recloser_call(black_box(r), true)).expect("closed");
            }
        })
    }));
    let f = common::failsafe();
    v.push(case("breaker_closed", "failsafe", move |t, n| {
        contend(t, n, |_| {
            let f = f.clone();
            move || {
                black_box(failsafe_call(black_box(&f), true)).expect("closed");
            }
        })
    }));
    let tb = tower_breaker();
    v.push(case("breaker_closed", "tower-resilience", move |t, n| {
        contend(t, n, |_| {
            let mut s = tb.clone();
            move || {
                black_box(tower_call(black_box(&mut s), true)).expect("closed");
            }
        })
    }));

    // Rejections on an open breaker. tower-resilience is left out: when two
    // threads race for its circuit mutex while it is open, the loser arms a
    // `tokio::time::Sleep`, which needs a tokio runtime (no synchronous driving).
    let b = std::sync::Arc::new(seawall_breaker());
    while !seawall_is_open(&b) {
        seawall_fail(&b, T0).expect("closed until it opens");
    }
    v.push(case("breaker_rejected", "seawall", move |t, n| {
        contend(t, n, |_| {
            let b = &*b;
            move || {
                black_box(black_box(b).try_acquire(T0)).expect_err("open");
            }
        })
    }));
    let r = std::sync::Arc::new(recloser());
    v.push(case("breaker_rejected", "recloser", move |t, n| {
        // Opened here, each round: recloser reads its own clock, and on a busy
        // machine the cases before this one can outlast its open period.
        while !recloser_is_open(&r) {
            let _ = recloser_call(&r, false);
        }
        contend(t, n, |_| {
            let r = &*r;
            move || {
                black_box(recloser_call(black_box(r), true)).expect_err("open");
            }
        })
    }));
    let f = failsafe_long_open();
    v.push(case("breaker_rejected", "failsafe", move |t, n| {
        // As recloser's: opened here, each round.
        while !failsafe_is_open(&f) {
            let _ = failsafe_call(&f, false);
        }
        contend(t, n, |_| {
            let f = f.clone();
            move || {
                black_box(failsafe_call(black_box(&f), true)).expect_err("open");
            }
        })
    }));

    let s = std::sync::Arc::new(seawall_semaphore());
    v.push(case("semaphore", "seawall", move |t, n| {
        contend(t, n, |_| {
            let s = &*s;
            move || seawall_semaphore_cycle(black_box(s))
        })
    }));
    let s = std::sync::Arc::new(tokio_semaphore());
    v.push(case("semaphore", "tokio", move |t, n| {
        contend(t, n, |_| {
            let s = &*s;
            move || tokio_semaphore_cycle(black_box(s))
        })
    }));
    let s = std::sync::Arc::new(async_lock_semaphore());
    v.push(case("semaphore", "async-lock", move |t, n| {
        contend(t, n, |_| {
            let s = &*s;
            move || async_lock_semaphore_cycle(black_box(s))
        })
    }));

    let b = std::sync::Arc::new(seawall_budget());
    v.push(case("retry_budget", "seawall", move |t, n| {
        contend(t, n, |_| {
            let (b, mut now) = (&*b, T0);
            move || {
                now += TICK;
                black_box(seawall_budget_cycle(black_box(b), now));
            }
        })
    }));
    let b = std::sync::Arc::new(tower_budget());
    v.push(case("retry_budget", "tower", move |t, n| {
        contend(t, n, |_| {
            let b = &*b;
            move || {
                black_box(tower_budget_cycle(black_box(b)));
            }
        })
    }));
    // Rate limiters, every check admitted: seawall's threads each move their own
    // clock 1 ns per check, as fast as the TAT moves per admission, so neither
    // falls behind the other by more than the quota's 4.3 s tolerance.
    let l = std::sync::Arc::new(seawall_rate_limiter());
    v.push(case("rate_limiter", "seawall", move |t, n| {
        contend(t, n, |_| {
            let (l, mut now) = (&*l, T0);
            move || {
                now += 1;
                black_box(seawall_rate_check(black_box(l), now)).expect("admitted");
            }
        })
    }));
    let g = std::sync::Arc::new(governor());
    v.push(case("rate_limiter", "governor", move |t, n| {
        contend(t, n, |_| {
            let g = &*g;
            move || {
                black_box(black_box(g).check()).expect("admitted");
            }
        })
    }));
    let g = std::sync::Arc::new(governor_fake_clock());
    v.push(case("rate_limiter", "governor_fake_clock", move |t, n| {
        contend(t, n, |_| {
            let g = &*g;
            move || {
                black_box(black_box(g).check()).expect("admitted");
            }
        })
    }));

    // Every check rejected: one cell per hour, already taken.
    let l = std::sync::Arc::new(seawall_rate_limiter_spent());
    v.push(case("rate_limiter_rejected", "seawall", move |t, n| {
        contend(t, n, |_| {
            let l = &*l;
            move || {
                black_box(seawall_rate_check(black_box(l), T0)).expect_err("spent");
            }
        })
    }));
    let g = std::sync::Arc::new(governor_spent());
    v.push(case("rate_limiter_rejected", "governor", move |t, n| {
        contend(t, n, |_| {
            let g = &*g;
            move || {
                black_box(black_box(g).check()).expect_err("spent");
            }
        })
    }));
    let g = std::sync::Arc::new(governor_fake_clock_spent());
    v.push(case(
        "rate_limiter_rejected",
        "governor_fake_clock",
        move |t, n| {
            contend(t, n, |_| {
                let g = &*g;
                move || {
                    black_box(black_box(g).check()).expect_err("spent");
                }
            })
        },
    ));
    v
}

fn main() {
    // `cargo bench` passes `--bench`; any other argument filters by id substring.
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let threads: usize = env_or("SEAWALL_BENCH_THREADS", 2);
    let rounds: usize = env_or("SEAWALL_BENCH_ROUNDS", 7);
    let round_secs = env_or("SEAWALL_BENCH_ROUND_MS", 200.0) / 1e3;
    let cases: Vec<Case> = cases()
        .into_iter()
        .filter(|c| {
            filter.is_empty()
                || filter
                    .iter()
                    .any(|f| format!("{}/{}", c.group, c.imp).contains(f.as_str()))
        })
        .collect();
    eprintln!(
        "contended: {threads} threads, {rounds} rounds of ~{:.0} ms per contender",
        round_secs * 1e3
    );

    // Calibrate: a short warm-up round, then enough operations for `round_secs`.
    let ops: Vec<u64> = cases
        .iter()
        .map(|c| {
            let warm = (c.round)(threads, 20_000);
            let per_thread = warm.mops() * 1e6 * round_secs / threads as f64;
            #[allow(clippy::cast_sign_loss)] // at least 10 000 by the max
            let ops = per_thread.max(10_000.0) as u64;
            ops
        })
        .collect();
    let mut samples = vec![Vec::with_capacity(rounds); cases.len()];
    for _ in 0..rounds {
        for (i, c) in cases.iter().enumerate() {
            samples[i].push((c.round)(threads, ops[i]).mops());
        }
    }

    let mut rows = Vec::new();
    for (i, c) in cases.iter().enumerate() {
        let s = &samples[i];
        let (lo, hi) = s
            .iter()
            .fold((f64::MAX, 0.0f64), |(lo, hi), &x| (lo.min(x), hi.max(x)));
        let med = median(s);
        eprintln!(
            "{:<18} {:<22} {:>8.2} Mops/s  (min {:.2}, max {:.2}; {} ops/thread)",
            c.group, c.imp, med, lo, hi, ops[i]
        );
        rows.push(json!({
            "id": format!("{}/{}", c.group, c.imp), "group": c.group, "impl": c.imp,
            "mops_median": med, "mops_min": lo, "mops_max": hi, "ops_per_thread": ops[i],
        }));
    }
    let dir = seawall_benches::out_dir();
    let path = dir.join("contended.json");
    let doc = json!({ "threads": threads, "rounds": rounds, "round_ms": round_secs * 1e3, "benchmarks": rows });
    std::fs::write(&path, serde_json::to_string_pretty(&doc).expect("JSON"))
        .expect("write contended.json");
    eprintln!("wrote {}", path.display());
}
