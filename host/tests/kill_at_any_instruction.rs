//! DESIGN §8, "Death at any instruction": processes killed (`SIGKILL`) at random moments
//! of tight acquire/release (semaphore) and acquire/record (breaker) loops on one
//! shared region leave nothing that reclaim cannot give back. Once every child is
//! dead and reclaim has run, the semaphore holds no permit and queues no waiter,
//! its holder table is empty, and the breaker's totals add up (every admission
//! recorded, an abandoned one as ignored) with no permit and no probe held.
//!
//! Forked children spin until killed; the parent kills one at a random moment,
//! respawns it, and goes on. Expected values are not read from the
//! implementation: zero, and the balance of the totals.
//!
//! DESIGN §8, "Self-healing": the same without any reclaim call. A semaphore
//! with a queue, its waiters killed inside enqueue, grant and cancel, is whole
//! again when the next process opens it; a bulkhead whose holders were killed
//! admits its full limit to the next callers it would have refused; a breaker
//! whose half-open probe was killed admits a new probe.

#![cfg(all(target_os = "linux", not(loom)))]

use std::sync::Mutex;
use std::time::{Duration, Instant};

use seawall_core::{BreakerConfig, Outcome, Priority, Ratio, SemaphoreConfig, State, WindowConfig};
use seawall_host::breaker::Breaker;
use seawall_host::semaphore::{Acquired, Polled, Semaphore};
use seawall_host::shared::OpenOptions;

const CHILDREN: usize = 8;
/// Kills per configuration: with a loss in a few percent of kills on a
/// protocol with a window, a handful of lost permits or admissions at least.
const KILLS: usize = 320;

/// The two tests fork; one at a time keeps the load to 8 spinners.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// A small generator for kill moments (not the library's).
struct XorShift(u64);

impl XorShift {
    fn seeded() -> Self {
        let t = Instant::now().elapsed().as_nanos() as u64;
        let s = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64);
        Self((s ^ t ^ u64::from(std::process::id())) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Run `body` (a loop that never ends) in a forked child, which is killed.
fn spawn(body: &dyn Fn()) -> libc::pid_t {
    // SAFETY: the child only runs `body`, which touches the shared region through
    // atomics and never returns to the test harness; the parent keeps going.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        body();
        // SAFETY: ends the child without running the parent's exit handlers.
        unsafe { libc::_exit(0) };
    }
    pid
}

fn kill_and_reap(pid: libc::pid_t) {
    // SAFETY: `pid` is a child of this process that has not been reaped.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
        let mut status = 0;
        libc::waitpid(pid, &raw mut status, 0);
    }
}

/// Keep `CHILDREN` children running `body`, kill one at a random moment
/// `KILLS` times (respawning it), then kill them all.
fn kill_storm(body: &dyn Fn()) {
    let mut rng = XorShift::seeded();
    let mut kids: Vec<libc::pid_t> = (0..CHILDREN).map(|_| spawn(body)).collect();
    for _ in 0..KILLS {
        std::thread::sleep(Duration::from_micros(rng.next() % 400));
        let i = (rng.next() % CHILDREN as u64) as usize;
        kill_and_reap(kids[i]);
        kids[i] = spawn(body);
    }
    std::thread::sleep(Duration::from_micros(rng.next() % 400));
    for pid in kids {
        kill_and_reap(pid);
    }
}

fn region_name(what: &str) -> String {
    format!("kill-test-{what}-{}", std::process::id())
}

fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &raw mut ts) };
    u64::try_from(ts.tv_sec).unwrap_or(0) * 1_000_000_000 + u64::try_from(ts.tv_nsec).unwrap_or(0)
}

/// Lost permits after a kill storm on a semaphore of `max_concurrent` permits:
/// `(active, queued, permits outstanding, tickets outstanding)`.
fn semaphore_storm(max_concurrent: u32) -> (u32, u32, u64, u64) {
    let name = region_name(&format!("sem{max_concurrent}"));
    let cfg = SemaphoreConfig {
        max_concurrent,
        max_queue: 0,
        ..SemaphoreConfig::DEFAULT
    };
    let sem = Semaphore::open_shared(&name, &cfg, &OpenOptions::default()).unwrap();
    // Fill the pid cache (and its fork handler) before forking.
    sem.release(sem.try_acquire(Priority::Normal).unwrap())
        .unwrap();
    let body = || {
        loop {
            if let Ok(p) = sem.try_acquire(Priority::Normal) {
                let _ = sem.release(p);
            }
        }
    };
    kill_storm(&body);
    sem.reclaim_abandoned();
    let s = sem.full_snapshot();
    let _ = Semaphore::unlink_shared(&name);
    (
        s.active,
        s.queued,
        s.permits_outstanding,
        s.tickets_outstanding,
    )
}

#[test]
fn semaphore_killed_anywhere_loses_no_permit() {
    let _one = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let got: Vec<_> = [1, 3, 64].map(|max| (max, semaphore_storm(max))).into();
    for (max, left) in &got {
        eprintln!(
            "kill storm, max_concurrent {max}, {KILLS} kills: (active, queued, permits, tickets) after reclaim {left:?}"
        );
    }
    assert!(
        got.iter().all(|(_, left)| *left == (0, 0, 0, 0)),
        "permits held after reclaim: {got:?}"
    );
}

#[test]
fn breaker_killed_anywhere_keeps_its_totals() {
    let _one = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let name = region_name("breaker");
    // Half the calls fail: the breaker cycles closed → open → half-open (probes)
    // → closed or open again every few hundred microseconds.
    let cfg = BreakerConfig {
        window: WindowConfig::Count { size: 8 },
        minimum_calls: 4,
        failure_rate_threshold: Some(Ratio::from_percent(50)),
        open_duration_ns: 50_000,
        max_open_duration_ns: None,
        half_open_max_calls: 3,
        half_open_success_threshold: 2,
        ..BreakerConfig::DEFAULT
    };
    let b = Breaker::open_shared(&name, &cfg, &OpenOptions::default()).unwrap();
    if let Ok(p) = b.try_acquire(monotonic_ns()) {
        b.record(p, Outcome::Success, 0, monotonic_ns()).unwrap();
    }
    let body = || {
        let mut n = 0u64;
        loop {
            n = n.wrapping_add(1);
            if let Ok(p) = b.try_acquire(monotonic_ns()) {
                let outcome = if n.is_multiple_of(2) {
                    Outcome::Success
                } else {
                    Outcome::Failure
                };
                let _ = b.record(p, outcome, 0, monotonic_ns());
            }
        }
    };
    kill_storm(&body);
    b.reclaim_abandoned(monotonic_ns());
    let m = b.metrics(monotonic_ns());
    let _ = Breaker::unlink_shared(&name);
    let t = m.core.totals;
    let recorded = t.successes + t.failures + t.ignored;
    eprintln!(
        "kill storm, breaker: admitted {} recorded {recorded} (s {} f {} i {}), permits outstanding {:?}, state {:?}, probes {}",
        t.admitted,
        t.successes,
        t.failures,
        t.ignored,
        m.permits_outstanding,
        m.core.state,
        m.core.half_open_in_flight
    );
    assert_eq!(
        m.permits_outstanding,
        Some(0),
        "permit slots never reclaimed"
    );
    assert_eq!(t.admitted, recorded, "admissions missing from the totals");
    if m.core.state == State::HalfOpen {
        assert_eq!(m.core.half_open_in_flight, 0, "a dead probe keeps its slot");
    }
}

/// Keep giving up and taking places in a queue of 8 before 3 permits, until killed.
fn queue_churn(sem: &Semaphore) {
    loop {
        match sem.acquire_or_enqueue(Priority::Normal) {
            Ok(Acquired::Admitted(p)) => {
                let _ = sem.release(p);
            }
            Ok(Acquired::Queued(t)) => {
                let mut granted = None;
                for _ in 0..64 {
                    match sem.poll(t) {
                        Ok(Polled::Granted(p)) => {
                            granted = Some(p);
                            break;
                        }
                        Ok(Polled::Waiting) => std::hint::spin_loop(),
                        Err(_) => break,
                    }
                }
                match granted {
                    Some(p) => {
                        let _ = sem.release(p);
                    }
                    None => {
                        let _ = sem.cancel(t);
                    }
                }
            }
            Err(_) => {}
        }
    }
}

#[test]
fn queue_killed_anywhere_is_whole_when_next_opened_without_reclaim() {
    let _one = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let name = region_name("queue");
    let cfg = SemaphoreConfig {
        max_concurrent: 3,
        max_queue: 8,
        ..SemaphoreConfig::DEFAULT
    };
    let sem = Semaphore::open_shared(&name, &cfg, &OpenOptions::default()).unwrap();
    sem.release(sem.try_acquire(Priority::Normal).unwrap())
        .unwrap();
    kill_storm(&|| queue_churn(&sem));
    // Every churner is dead; a process opening the region now (a restarted
    // worker) finds it whole, with nobody having called reclaim.
    let next = Semaphore::open_shared(&name, &cfg, &OpenOptions::default()).unwrap();
    let s = next.full_snapshot();
    let _ = Semaphore::unlink_shared(&name);
    let left = (
        s.active,
        s.queued,
        s.permits_outstanding,
        s.tickets_outstanding,
    );
    eprintln!(
        "kill storm on a queue, {KILLS} kills: (active, queued, permits, tickets) at the next open {left:?}"
    );
    assert_eq!(left, (0, 0, 0, 0), "a permit or a place leaked");
}

/// Fork `n` children that each take one permit of `sem` (or a probe of `b`),
/// say so on a pipe, and sleep; return once all have said so. (Not by reading
/// the region: a read of its holders would use up the heal gate's interval.)
fn holders(n: usize, take: &dyn Fn()) -> Vec<libc::pid_t> {
    let mut fds = [0; 2];
    // SAFETY: `fds` is a writable array of two descriptors.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    let [read_end, write_end] = fds;
    let kids = (0..n)
        .map(|_| {
            spawn(&|| {
                take();
                // SAFETY: writes one byte from a live local to the pipe.
                unsafe { libc::write(write_end, [1u8].as_ptr().cast(), 1) };
                loop {
                    std::thread::sleep(Duration::from_secs(1));
                }
            })
        })
        .collect();
    let mut got = 0;
    while got < n {
        let mut buf = [0u8; 16];
        // SAFETY: reads into a live local buffer of its length.
        let r = unsafe { libc::read(read_end, buf.as_mut_ptr().cast(), buf.len()) };
        assert!(r > 0, "a child died before it took its permit");
        got += r.unsigned_abs();
    }
    // SAFETY: both ends are ours and no longer used.
    unsafe {
        libc::close(read_end);
        libc::close(write_end);
    }
    kids
}

#[test]
fn bulkhead_of_killed_holders_admits_its_limit_to_the_next_callers() {
    let _one = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let name = region_name("bulkhead-heal");
    let cfg = SemaphoreConfig {
        max_concurrent: 4,
        max_queue: 0,
        ..SemaphoreConfig::DEFAULT
    };
    let sem = Semaphore::open_shared(&name, &cfg, &OpenOptions::default()).unwrap();
    let kids = holders(4, &|| {
        let _held = sem.try_acquire(Priority::Normal).unwrap();
    });
    for pid in kids {
        kill_and_reap(pid);
    }
    assert_eq!(
        sem.snapshot().active,
        4,
        "the dead hold every permit until someone needs one"
    );
    // No reclaim call: the first refused caller looks for dead holders.
    let admitted: Vec<_> = (0..4)
        .map_while(|_| sem.try_acquire(Priority::Normal).ok())
        .collect();
    let fifth = sem.try_acquire(Priority::Normal);
    let totals = sem.totals();
    let _ = Semaphore::unlink_shared(&name);
    assert_eq!(admitted.len(), 4, "the bulkhead's full limit comes back");
    assert!(fifth.is_err(), "and no more than its limit");
    // Counted once each, by their final answer: the 4 dead holders' and the 4
    // admitted here (the first after giving the dead's back), and the fifth's
    // refusal.
    assert_eq!((totals.admitted, totals.rejected_full), (8, 1));
}

#[test]
fn breaker_whose_probe_was_killed_admits_a_new_probe() {
    let _one = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let name = region_name("probe-heal");
    let open_ns = 1_000_000_000;
    let cfg = BreakerConfig {
        window: WindowConfig::Count { size: 4 },
        minimum_calls: 2,
        failure_rate_threshold: Some(Ratio::from_percent(50)),
        open_duration_ns: open_ns,
        max_open_duration_ns: None,
        half_open_max_calls: 1,
        half_open_success_threshold: 1,
        ..BreakerConfig::DEFAULT
    };
    let b = Breaker::open_shared(&name, &cfg, &OpenOptions::default()).unwrap();
    // Virtual time: two failures at t = 10 open it until t = 10 + open_ns.
    for _ in 0..2 {
        let p = b.try_acquire(10).unwrap();
        b.record(p, Outcome::Failure, 0, 10).unwrap();
    }
    assert_eq!(b.state(), State::Open);
    let probe_at = 10 + open_ns;
    let kids = holders(1, &|| {
        let _probe = b.try_acquire(probe_at).unwrap();
    });
    kill_and_reap(kids[0]);
    assert_eq!(b.state(), State::HalfOpen);
    // No reclaim call: the refused caller finds the dead probe and takes its place.
    let probe = b.try_acquire(probe_at + 1);
    let m = b.metrics(probe_at + 1);
    let _ = Breaker::unlink_shared(&name);
    let probe = probe.expect("a new probe is admitted");
    assert!(seawall_core::PermitToken { epoch: probe.epoch }.is_probe());
    assert_eq!(
        m.core.totals.ignored, 1,
        "the dead probe is recorded as ignored"
    );
}

#[test]
fn a_killed_callers_closed_permit_is_reported_until_a_caller_gives_it_back() {
    let _one = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let name = region_name("closed-heal");
    let b = Breaker::open_shared(&name, &BreakerConfig::DEFAULT, &OpenOptions::default()).unwrap();
    let sem_cfg = SemaphoreConfig {
        max_concurrent: 2,
        max_queue: 0,
        ..SemaphoreConfig::DEFAULT
    };
    let sem = Semaphore::open_shared(&name, &sem_cfg, &OpenOptions::default()).unwrap();
    // Two callers admitted by both, killed before they give back.
    let kids = holders(2, &|| {
        let _permit = b.try_acquire(1).unwrap();
        let _held = sem.try_acquire(Priority::Normal).unwrap();
    });
    for pid in kids {
        kill_and_reap(pid);
    }
    // Reading changes nothing: what the dead hold is reported as such.
    let m = b.metrics(2);
    assert_eq!(m.permits_outstanding, Some(2));
    assert_eq!(b.abandoned(), 2);
    assert_eq!(m.core.totals.ignored, 0);
    assert_eq!(sem.abandoned(), (2, 0));
    assert_eq!(sem.full_snapshot().permits_outstanding, 2);
    // The next caller the full bulkhead would refuse gives its permits back.
    let p = sem.try_acquire(Priority::Normal).unwrap();
    assert_eq!(sem.abandoned(), (0, 0));
    assert_eq!(sem.full_snapshot().permits_outstanding, 1);
    sem.release(p).unwrap();
    let _ = Breaker::unlink_shared(&name);
    let _ = Semaphore::unlink_shared(&name);
}
