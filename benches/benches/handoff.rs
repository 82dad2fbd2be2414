//! Waiting for a bulkhead permit through seawall-host's `Semaphore`:
//!
//! * **contended within one process**: `THREADS` threads share a semaphore of
//!   `PERMITS` permits, each looping `acquire_timeout` (no limit), a short
//!   critical section, `release`; calls per second of a shared semaphore
//!   (a region in /dev/shm) next to a local one (`Semaphore::local`), rounds
//!   interleaved, median round of each.
//! * **cross-process hand-off**: this process holds the only permit of a
//!   shared semaphore while a child process (this binary again) waits for it in
//!   `acquire_timeout`; the time from just before the release here to the
//!   child's return with the permit, both read from `CLOCK_MONOTONIC` (one
//!   clock for every process of the host); p50 and p90 of `HANDOFFS`.
//!
//! Results go to `$SEAWALL_BENCH_OUT/handoff.json` (default `target/bench-run`).
//! Environment: `SEAWALL_BENCH_ROUNDS` (default 7), `SEAWALL_BENCH_ROUND_MS`
//! (default 200).

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use seawall_benches::median;
use seawall_core::{Priority, SemaphoreConfig};
use seawall_host::clock::monotonic_ns;
use seawall_host::semaphore::Semaphore;
use seawall_host::shared::OpenOptions;
use serde_json::json;

const THREADS: usize = 4;
const PERMITS: u32 = 2;
const HANDOFFS: usize = 300;
/// Set in the child's environment: the region it attaches to.
const CHILD: &str = "SEAWALL_HANDOFF_CHILD";

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn config(permits: u32) -> SemaphoreConfig {
    SemaphoreConfig {
        max_concurrent: permits,
        max_queue: 64,
        ..SemaphoreConfig::DEFAULT
    }
}

fn region_name(what: &str) -> String {
    format!("bench-{what}-{}", std::process::id())
}

/// Calls per second of `THREADS` threads cycling through `sem` for `dur`.
fn contended_round(sem: &Semaphore, dur: Duration) -> f64 {
    let start = Barrier::new(THREADS + 1);
    let stop = AtomicBool::new(false);
    let calls = AtomicU64::new(0);
    let elapsed = std::thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| {
                start.wait();
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let p = sem
                        .acquire_timeout(Priority::Normal, None)
                        .expect("a permit");
                    // A short critical section, so that waiters queue up.
                    std::hint::black_box((0..200u32).fold(0u32, u32::wrapping_add));
                    sem.release(p).expect("release");
                    n += 1;
                }
                calls.fetch_add(n, Ordering::Relaxed);
            });
        }
        start.wait();
        let t0 = Instant::now();
        std::thread::sleep(dur);
        stop.store(true, Ordering::Relaxed);
        t0.elapsed()
    });
    calls.load(Ordering::Relaxed) as f64 / elapsed.as_secs_f64()
}

/// The child: attach, then for each line on stdin wait for the permit, print
/// when it came (ns of `CLOCK_MONOTONIC`), release it.
fn child(name: &str) {
    let sem = Semaphore::open_shared(name, &config(1), &OpenOptions::default()).expect("attach");
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        if line.is_err() {
            break;
        }
        let p = sem
            .acquire_timeout(Priority::Normal, Some(Duration::from_secs(10)))
            .expect("a permit within 10 s");
        let got = monotonic_ns();
        sem.release(p).expect("release");
        writeln!(out, "{got}").expect("write");
        out.flush().expect("flush");
    }
}

/// Hand-off latencies (ns) from this process to a child process.
fn handoffs() -> Vec<f64> {
    let name = region_name("handoff");
    let sem = Semaphore::open_shared(&name, &config(1), &OpenOptions::default()).expect("region");
    let exe = std::env::current_exe().expect("current exe");
    let mut kid = Command::new(exe)
        .env(CHILD, &name)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn the child");
    let mut to_kid = kid.stdin.take().expect("stdin");
    let mut from_kid = BufReader::new(kid.stdout.take().expect("stdout"));
    let mut lat = Vec::with_capacity(HANDOFFS);
    for _ in 0..HANDOFFS {
        let held = sem
            .acquire_timeout(Priority::Normal, Some(Duration::from_secs(10)))
            .expect("the permit back from the child");
        writeln!(to_kid, "go").expect("tell the child");
        to_kid.flush().expect("flush");
        // The child is queued: the release below hands the permit to it.
        let t = Instant::now();
        while sem.snapshot().queued == 0 {
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "the child never queued"
            );
            std::thread::yield_now();
        }
        // Let it fall asleep, as a waiter of a quiet bulkhead has.
        std::thread::sleep(Duration::from_millis(1));
        let t0 = monotonic_ns();
        sem.release(held).expect("release");
        let mut line = String::new();
        from_kid.read_line(&mut line).expect("the child's answer");
        let t1: u64 = line.trim().parse().expect("a time");
        lat.push(t1.saturating_sub(t0) as f64);
    }
    drop(to_kid);
    let _ = kid.wait();
    drop(sem);
    let _ = Semaphore::unlink_shared(&name);
    lat
}

/// The `pct`-th percentile (nearest rank below) of `v`.
fn percentile(v: &mut [f64], pct: usize) -> f64 {
    v.sort_by(f64::total_cmp);
    v[(v.len() - 1) * pct / 100]
}

fn main() {
    if let Ok(name) = std::env::var(CHILD) {
        child(&name);
        return;
    }
    let rounds: usize = env_or("SEAWALL_BENCH_ROUNDS", 7);
    let round = Duration::from_millis(env_or("SEAWALL_BENCH_ROUND_MS", 200));
    let shared_name = region_name("contended");
    let shared = Semaphore::open_shared(&shared_name, &config(PERMITS), &OpenOptions::default())
        .expect("region");
    let local = Semaphore::local(&config(PERMITS)).expect("local");
    let (mut s_shared, mut s_local) = (Vec::new(), Vec::new());
    contended_round(&shared, round / 4);
    contended_round(&local, round / 4);
    for _ in 0..rounds {
        s_shared.push(contended_round(&shared, round));
        s_local.push(contended_round(&local, round));
    }
    drop(shared);
    let _ = Semaphore::unlink_shared(&shared_name);
    let (shared_cps, local_cps) = (median(&s_shared), median(&s_local));
    eprintln!(
        "contended, {THREADS} threads, {PERMITS} permits: shared {shared_cps:.0} calls/s, local {local_cps:.0} calls/s ({:.2} of local)",
        shared_cps / local_cps
    );
    let mut lat = handoffs();
    let (p50, p90) = (percentile(&mut lat, 50), percentile(&mut lat, 90));
    eprintln!(
        "cross-process hand-off ({HANDOFFS}): p50 {:.1} µs, p90 {:.1} µs",
        p50 / 1e3,
        p90 / 1e3
    );
    let doc = json!({
        "threads": THREADS, "permits": PERMITS, "rounds": rounds, "round_ms": round.as_secs_f64() * 1e3,
        "contended_calls_per_s": { "shared": shared_cps, "local": local_cps },
        "handoff": { "count": HANDOFFS, "p50_ns": p50, "p90_ns": p90 },
    });
    let path = seawall_benches::out_dir().join("handoff.json");
    std::fs::write(&path, serde_json::to_string_pretty(&doc).expect("JSON"))
        .expect("write handoff.json");
    eprintln!("wrote {}", path.display());
}
