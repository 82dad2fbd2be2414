//! loom models of a breaker with a permit table (`src/breaker/steps.rs`): a
//! core breaker with a count window of 2 next to a permit table of 2 slots,
//! one process killed after any step of an acquire and a record while a live
//! one calls, and reclaim settling what the dead one left. The invariant is
//! DESIGN §8's: once every holder is gone and reclaim has run, no permit slot
//! is outstanding and the totals add up (admitted = successes + failures +
//! ignored). Run with `RUSTFLAGS="--cfg loom" cargo test --release -p
//! seawall-host --test loom_breaker_cell` (`scripts/loom-host.sh`, which also
//! checks each model fails on its mutant).
#![cfg(loom)]

use std::mem::MaybeUninit;

use loom::sync::Arc;
use loom::thread;
use seawall_core::{BreakerConfig, CountWindow, Outcome, Ratio, State, WindowConfig};
use seawall_host::breaker::BreakerCell;
use seawall_host::permits::{die_after, killed, set_claiming_pid};

type Cell = BreakerCell<CountWindow<2>, 2>;

const LIVE: u32 = 1;
const DEAD: u32 = 999;
/// Open duration (ns): a call at `OPEN` after a trip at 0 is a half-open probe.
const OPEN: u64 = 1_000;
/// Steps of an acquire and a record at which a process can die: after the
/// slot's claim, after the core's admission, after the slot is held, after the
/// slot's use begins, after the core's record; 5 is never.
const KILL_POINTS: u32 = 5;

/// Two probes per half-open episode, so a live and a dead probe fit in one.
fn cell() -> Arc<Cell> {
    set_claiming_pid(LIVE);
    let cfg = BreakerConfig {
        window: WindowConfig::Count { size: 2 },
        minimum_calls: 2,
        failure_rate_threshold: Some(Ratio::from_percent(50)),
        open_duration_ns: OPEN,
        half_open_max_calls: 2,
        half_open_success_threshold: 2,
        ..BreakerConfig::DEFAULT
    };
    let mut slot = MaybeUninit::uninit();
    Cell::init(&mut slot, &cfg, 0x5a17).unwrap();
    // SAFETY: init returned Ok, so it wrote every field.
    Arc::new(unsafe { slot.assume_init() })
}

/// Two failures at 0 (through the core: no slot): open until `OPEN`.
fn trip(c: &Cell) {
    let b = c.breaker();
    for _ in 0..2 {
        let t = b.acquire_token(0).unwrap();
        b.record_token(t, Outcome::Failure, 0, 0);
    }
    assert_eq!(b.state(), State::Open);
}

/// No slot outstanding, and every admission is counted once as an outcome.
fn assert_settled(c: &Cell, now: u64) {
    assert_eq!(c.permits().outstanding(), 0, "a permit slot leaked");
    let t = c.breaker().metrics(now).totals;
    assert_eq!(
        t.admitted,
        t.successes + t.failures + t.ignored,
        "totals do not add up: {t:?}"
    );
}

/// One call's acquire and success record at `now`, as the process `pid`, which
/// dies after `die` steps (`None`: never).
fn call(c: &Cell, pid: u32, die: Option<u32>, now: u64) {
    set_claiming_pid(pid);
    die_after(die);
    if let Ok(Ok(p)) = c.try_acquire_checked(now)
        && !killed()
    {
        let _ = c.record_checked(p, Outcome::Success, 1, now);
    }
}

/// Closed: a process killed after any step of a call, then a live call
/// racing the reclaim, and a reclaim after it: nothing outstanding, totals that
/// add up, and the live call's success counted.
#[test]
fn closed_caller_killed_after_any_step_is_settled() {
    for k in 0..=KILL_POINTS {
        loom::model(move || {
            let c = cell();
            call(&c, DEAD, Some(k), 0);
            let c2 = Arc::clone(&c);
            let live = thread::spawn(move || call(&c2, LIVE, None, 0));
            set_claiming_pid(LIVE);
            die_after(None);
            c.reclaim(|pid| pid != DEAD, 0);
            live.join().unwrap();
            c.reclaim(|pid| pid != DEAD, 0);
            assert_settled(&c, 0);
            // The dead call's success is in the totals once the core recorded it.
            let dead_recorded = k >= KILL_POINTS - 1;
            let t = c.breaker().metrics(0).totals;
            assert_eq!(
                t.successes,
                1 + u64::from(dead_recorded),
                "a success was lost or made up"
            );
        });
    }
}

/// Half-open: a probe killed after any step, then a live probe admitted while
/// a reclaim runs (recorded after it), and a reclaim after that. The dead
/// probe's admission (counted by the core when admitted) is recorded as ignored
/// exactly once: settling by count in a moment that was not quiet would take
/// the live probe's admission for the dead one's and free the dead slot
/// unrecorded.
#[test]
fn half_open_probe_killed_after_any_step_is_settled_once() {
    for k in 0..=KILL_POINTS {
        loom::model(move || {
            let c = cell();
            trip(&c);
            call(&c, DEAD, Some(k), OPEN);
            set_claiming_pid(LIVE);
            die_after(None);
            let c2 = Arc::clone(&c);
            let live = thread::spawn(move || c2.try_acquire_checked(OPEN));
            c.reclaim(|pid| pid != DEAD, OPEN);
            if let Ok(Ok(p)) = live.join().unwrap() {
                assert_eq!(c.record_checked(p, Outcome::Success, 1, OPEN), Ok(Ok(())));
            }
            c.reclaim(|pid| pid != DEAD, OPEN);
            assert_settled(&c, OPEN);
        });
    }
}
