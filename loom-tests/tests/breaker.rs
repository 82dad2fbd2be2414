//! loom models of the circuit breaker's CAS protocols.
//! Each model states its invariant and asserts it in every interleaving loom
//! explores. `scripts/loom-mutants.sh` rebuilds the core with each
//! `--cfg seawall_mutant="…"` broken variant and checks that its model fails.
#![cfg(loom)]

use seawall_loom_tests::model;

use loom::sync::Arc;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::thread;
use seawall_core::{
    BreakerConfig, CircuitBreaker, CountWindow, Outcome, Ratio, State, WindowConfig,
};

const OPEN: u64 = 1_000;

type Breaker = CircuitBreaker<CountWindow<2>>;

fn breaker(half_open_max_calls: u32, success_threshold: u32) -> Breaker {
    CircuitBreaker::new(BreakerConfig {
        window: WindowConfig::Count { size: 2 },
        minimum_calls: 2,
        failure_rate_threshold: Some(Ratio::from_percent(50)),
        open_duration_ns: OPEN,
        open_backoff_multiplier: Ratio::from_int(2),
        max_open_duration_ns: None,
        half_open_max_calls,
        half_open_success_threshold: success_threshold,
        ..BreakerConfig::DEFAULT
    })
    .unwrap()
}

/// Two failures at t = 0: open (epoch 2: half-open epochs are odd, all others
/// even) until `OPEN`.
fn trip(b: &Breaker) {
    for _ in 0..2 {
        b.acquire_token(0)
            .map(|t| b.record_token(t, Outcome::Failure, 0, 0))
            .unwrap();
    }
    assert_eq!(b.state(), State::Open);
}

/// Never more than `half_open_max_calls` probes in flight per half-open episode.
/// Each thread counts a probe as held from just after its admission until just
/// before its outcome, so the count can only undercount the breaker's own.
#[test]
fn probes_in_flight_never_exceed_half_open_max_calls() {
    model(|| {
        let b = Arc::new(breaker(1, 2));
        trip(&b);
        let held = Arc::new(AtomicUsize::new(0));
        let hs: Vec<_> = (0..3)
            .map(|i| {
                let (b, held) = (b.clone(), held.clone());
                thread::spawn(move || {
                    if let Ok(p) = b.try_acquire(OPEN) {
                        let n = held.fetch_add(1, Ordering::SeqCst) + 1;
                        assert!(n <= 1, "{n} probes in flight with half_open_max_calls = 1");
                        held.fetch_sub(1, Ordering::SeqCst);
                        // Thread 0 frees its slot without deciding; others succeed.
                        if i == 0 {
                            p.ignore();
                        } else {
                            p.success(1, OPEN);
                        }
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        let m = b.metrics(OPEN);
        assert!(m.state != State::HalfOpen || m.half_open_in_flight == 0);
    });
}

/// Exactly one open → half-open move per opening, however many acquire at once.
#[test]
fn one_half_open_move_per_opening() {
    model(|| {
        let b = Arc::new(breaker(3, 3));
        trip(&b);
        let before = b.metrics(0).totals.transitions;
        let hs: Vec<_> = (0..3)
            .map(|_| {
                let b = b.clone();
                thread::spawn(move || b.acquire_token(OPEN).is_ok())
            })
            .collect();
        let admitted = hs
            .into_iter()
            .map(|h| h.join().unwrap())
            .filter(|a| *a)
            .count();
        let m = b.metrics(OPEN);
        assert_eq!(
            m.totals.transitions - before,
            1,
            "open → half_open happened once"
        );
        assert_eq!(m.state, State::HalfOpen);
        assert_eq!(m.epoch, 3);
        assert_eq!(admitted, 3);
        assert_eq!(m.half_open_in_flight, 3);
    });
}

/// A stale permit never changes state: a failure admitted before the opening,
/// recorded while the probe decides, neither reopens nor touches the new window.
#[test]
fn stale_permit_never_changes_state() {
    model(|| {
        let b = Arc::new(breaker(1, 1));
        let old = b.acquire_token(0).unwrap();
        trip(&b);
        let probe = b.acquire_token(OPEN).unwrap();
        let t1 = {
            let b = b.clone();
            thread::spawn(move || b.record_token(old, Outcome::Failure, 5, OPEN + 1))
        };
        let t2 = {
            let b = b.clone();
            thread::spawn(move || b.record_token(probe, Outcome::Success, 1, OPEN + 1))
        };
        t1.join().unwrap();
        t2.join().unwrap();
        let m = b.metrics(OPEN + 1);
        assert_eq!(m.state, State::Closed, "the probe's success decided");
        assert_eq!(m.epoch, 4);
        assert_eq!(
            m.window.calls, 0,
            "the stale failure is not in the new window"
        );
        assert_eq!(m.totals.stale, 1);
    });
}

/// No reader ever sees `open` with an `open_until` from another opening: a
/// reader's snapshot of `(epoch, retry_after)` always matches that epoch's opening.
#[test]
fn open_until_belongs_to_its_opening() {
    model(|| {
        let b = Arc::new(breaker(1, 1));
        trip(&b); // epoch 2: open until OPEN
        let probe = b.acquire_token(OPEN).unwrap(); // epoch 3
        let reopen_at = OPEN + 10;
        let writer = {
            let b = b.clone();
            thread::spawn(move || b.record_token(probe, Outcome::Failure, 10, reopen_at))
        };
        let reader = {
            let b = b.clone();
            thread::spawn(move || {
                let now = reopen_at;
                let m = b.metrics(now);
                if m.state == State::Open {
                    // epoch 4 is the 2nd consecutive opening: 2·OPEN from reopen_at.
                    assert_eq!(m.epoch, 4);
                    assert_eq!(m.retry_after_ns, Some(2 * OPEN), "open_until of epoch 4");
                }
            })
        };
        writer.join().unwrap();
        reader.join().unwrap();
        assert_eq!(b.retry_after(reopen_at), Some(2 * OPEN));
    });
}

/// Every permit is consumed exactly once: recorded, ignored or dropped, and
/// the probe slots all come back. Both probes fit in one episode, so each is
/// one `ignored` and none is stale (a permit consumed twice would show as a
/// second `ignored` or, its probe slot already given back, as a stale record).
#[test]
fn every_permit_consumed_once() {
    model(|| {
        let b = Arc::new(breaker(2, 3));
        trip(&b);
        let admitted = Arc::new(AtomicUsize::new(0));
        let hs: Vec<_> = (0..2)
            .map(|i| {
                let (b, admitted) = (b.clone(), admitted.clone());
                thread::spawn(move || {
                    if let Ok(p) = b.try_acquire(OPEN) {
                        admitted.fetch_add(1, Ordering::SeqCst);
                        match i {
                            0 => drop(p),
                            _ => p.record(Outcome::Ignored, 0, OPEN),
                        }
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        let m = b.metrics(OPEN);
        let t = m.totals;
        assert_eq!(
            admitted.load(Ordering::SeqCst),
            2,
            "two probe slots, two probes"
        );
        assert_eq!(
            (t.ignored, t.stale),
            (2, 0),
            "each permit consumed once: {t:?}"
        );
        assert_eq!(t.admitted, t.successes + t.failures + t.ignored);
        assert_eq!(m.state, State::HalfOpen);
        assert_eq!(m.half_open_in_flight, 0, "both probe slots came back");
    });
}

/// Every state change (a reset, a restore) is a new epoch: two at once, from
/// open at epoch 2, end at epoch 6 (none of them half-open, so even) with two
/// transitions counted, whichever wins.
#[test]
fn every_state_change_is_a_new_epoch() {
    model(|| {
        let b = Arc::new(breaker(1, 1));
        trip(&b);
        let before = b.metrics(0).totals.transitions;
        let reset = {
            let b = b.clone();
            thread::spawn(move || b.reset())
        };
        let restore = {
            let b = b.clone();
            thread::spawn(move || b.restore(State::Open, 2, OPEN, 0).unwrap())
        };
        reset.join().unwrap();
        restore.join().unwrap();
        let m = b.metrics(0);
        assert_eq!(m.epoch, 6, "each change took its own epoch");
        assert_eq!(m.totals.transitions - before, 2);
    });
}

/// `admitted` counts a probe from its acquire on (it holds a slot) and a closed
/// permit from its record on (a closed acquire writes nothing): with one probe
/// still out and one recorded at once by another thread, the totals read after
/// both threads count the probe out exactly once, and every closed outcome.
#[test]
fn admitted_counts_probes_in_flight_and_closed_records() {
    model(|| {
        let b = Arc::new(breaker(2, 3));
        let closed = b.acquire_token(0).unwrap();
        assert_eq!(
            b.metrics(0).totals.admitted,
            0,
            "a closed acquire counts nothing"
        );
        trip(&b);
        // Stale by now: in the totals only, and counted as admitted.
        b.record_token(closed, Outcome::Success, 0, 0);
        let hs: Vec<_> = (0..2)
            .map(|i| {
                let b = b.clone();
                thread::spawn(move || {
                    let p = b.acquire_token(OPEN).unwrap();
                    if i == 0 {
                        b.record_token(p, Outcome::Ignored, 0, OPEN);
                        None
                    } else {
                        Some(p)
                    }
                })
            })
            .collect();
        let out: Vec<_> = hs.into_iter().filter_map(|h| h.join().unwrap()).collect();
        let t = b.metrics(OPEN).totals;
        // 2 failures and 1 stale success, 1 probe ignored, 1 probe out.
        assert_eq!((t.successes, t.failures, t.ignored), (1, 2, 1));
        assert_eq!(t.admitted, 5, "closed records and both probes: {t:?}");
        assert_eq!(out.len(), 1);
    });
}
