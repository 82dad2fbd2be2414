//! loom models of the sliding windows' CAS protocols: bucket rotation, and the
//! count window's claim/commit/help protocol.
#![cfg(loom)]

use seawall_loom_tests::model;

use loom::sync::Arc;
use loom::thread;
use seawall_core::{CountWindow, Sample, SlidingWindow, TimeWindow, WindowConfig, WindowCounts};

const W: u64 = 1_000_000;
/// Every record of these models is honest, so none may find the window corrupt:
/// a protocol bug that breaks the window's invariants shows as `Corrupt` here.
const HONEST: &str = "a window written only by its own protocol never reads as corrupt";
const FAIL: Sample = Sample {
    failure: true,
    slow: false,
};
const OK: Sample = Sample {
    failure: false,
    slow: false,
};

/// No lost count when a time bucket rotates under concurrent records: two
/// records of the new epoch race to replace the slot that held epoch 0.
#[test]
fn bucket_rotation_loses_no_record_of_the_new_epoch() {
    two_records_race_into_a_new_epoch(FAIL, 3, [FAIL, OK], |c| {
        assert_eq!(
            (c.calls, c.failures),
            (2, 1),
            "both epoch-1 records, nothing of epoch 0"
        );
    });
}

/// A one-bucket window given `setup` `n` times in epoch 0, then `racers`
/// recorded at once in epoch 1; `check` gets the counts of epoch 1.
fn two_records_race_into_a_new_epoch(
    setup: Sample,
    n: usize,
    racers: [Sample; 2],
    check: fn(WindowCounts),
) {
    model(move || {
        let w = Arc::new(TimeWindow::<1>::with_buckets(1, W).unwrap());
        for _ in 0..n {
            assert!(w.record_gen(0, setup, 0, 0, || true).is_ok(), "{HONEST}");
        }
        let hs: Vec<_> = racers
            .into_iter()
            .map(|s| {
                let w = w.clone();
                thread::spawn(move || {
                    assert!(w.record_gen(0, s, W, 0, || true).is_ok(), "{HONEST}");
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        check(w.counts(W));
    });
}

/// (d') A straggler of generation 0 (its breaker has since moved on: not current)
/// racing with a record of the current generation 1 (which resets the count window)
/// and its follow-ups: the new generation's window holds exactly its own outcomes,
/// and keeps evicting exactly once it is full.
#[test]
fn count_window_generation_change_is_exact() {
    model(|| {
        let w = Arc::new(CountWindow::<2>::new(&WindowConfig::Count { size: 2 }).unwrap());
        let old = {
            let w = w.clone();
            thread::spawn(move || {
                assert!(w.record_gen(0, FAIL, 0, 0, || false).is_ok(), "{HONEST}");
            })
        };
        let new = {
            let w = w.clone();
            thread::spawn(move || {
                assert!(w.record_gen(1, OK, 0, 0, || true).is_ok(), "{HONEST}");
                assert!(w.record_gen(1, FAIL, 0, 0, || true).is_ok(), "{HONEST}");
            })
        };
        old.join().unwrap();
        new.join().unwrap();
        let c = w.counts_gen(1, 0);
        assert_eq!((c.calls, c.failures), (2, 1));
        // Two more of generation 1 must evict exactly the two above.
        assert!(w.record_gen(1, OK, 0, 0, || true).is_ok(), "{HONEST}");
        assert!(w.record_gen(1, OK, 0, 0, || true).is_ok(), "{HONEST}");
        let c = w.counts_gen(1, 0);
        assert_eq!((c.calls, c.failures), (2, 0), "window of 2 after 4 records");
    });
}

/// Count window, one generation: three writers race for positions; claims may be
/// committed by helpers. Afterwards the window holds the last 2 in commit order —
/// whatever that order, calls = 2 and failures = the failures among them; with one
/// failure among three records the window holds 0 or 1 failure, and two more
/// successes flush it exactly.
#[test]
fn count_window_claims_commit_exactly_once() {
    model(|| {
        let w = Arc::new(CountWindow::<2>::with_size(2).unwrap());
        let hs: Vec<_> = [FAIL, OK, OK]
            .into_iter()
            .map(|s| {
                let w = w.clone();
                thread::spawn(move || {
                    assert!(w.record_gen(0, s, 0, 0, || true).is_ok(), "{HONEST}");
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        let c = w.counts();
        assert_eq!(c.calls, 2);
        assert!(c.failures <= 1);
        assert!(w.record_gen(0, OK, 0, 0, || true).is_ok(), "{HONEST}");
        assert!(w.record_gen(0, OK, 0, 0, || true).is_ok(), "{HONEST}");
        let c = w.counts();
        assert_eq!((c.calls, c.failures), (2, 0));
    });
}

/// (d'') Time window: a straggler of generation 0 (not current) racing with two
/// records of the current generation 1 into the same bucket, which the straggler's
/// generation still holds: the straggler never lands in generation 1's bucket and
/// never replaces it; generation 1 holds exactly its two outcomes.
#[test]
fn time_window_straggler_never_replaces_the_current_generation() {
    model(|| {
        let w = Arc::new(TimeWindow::<1>::with_buckets(1, W).unwrap());
        assert!(w.record_gen(0, OK, W, 0, || true).is_ok(), "{HONEST}");
        let old = {
            let w = w.clone();
            thread::spawn(move || {
                assert!(w.record_gen(0, FAIL, W, 0, || false).is_ok(), "{HONEST}");
            })
        };
        let new = {
            let w = w.clone();
            thread::spawn(move || {
                assert!(w.record_gen(1, OK, W, 0, || true).is_ok(), "{HONEST}");
                assert!(w.record_gen(1, FAIL, W, 0, || true).is_ok(), "{HONEST}");
            })
        };
        old.join().unwrap();
        new.join().unwrap();
        let c = w.counts_gen(1, W);
        assert_eq!(
            (c.calls, c.failures),
            (2, 1),
            "generation 1 holds exactly its own"
        );
    });
}

/// A time window's lifetime successes stay exact across a rotation that one
/// record begins and another finishes: the bucket of epoch 0 (two successes, one
/// failure) is sealed, folded and replaced by two records of epoch 1 at once,
/// while a reader sums. Each bucket is folded once: in the end every kept
/// success counts once, and the reader never sees more than were kept, nor
/// fewer than were kept before it started.
#[test]
fn time_window_rotation_folds_each_bucket_once() {
    model(|| {
        let w = Arc::new(TimeWindow::<1>::with_buckets(1, W).unwrap());
        for s in [OK, FAIL, OK] {
            let r = w.record_gen(0, s, 0, 0, || true).expect(HONEST);
            assert_eq!(r.kept, !s.failure, "a success into a live bucket is kept");
        }
        let hs: Vec<_> = (0..2)
            .map(|_| {
                let w = w.clone();
                thread::spawn(move || w.record_gen(0, OK, W, 0, || true).expect(HONEST).kept)
            })
            .collect();
        let reader = {
            let w = w.clone();
            thread::spawn(move || w.successes())
        };
        for h in hs {
            assert!(h.join().unwrap(), "a success of the new epoch is kept");
        }
        let seen = reader.join().unwrap();
        assert!(
            (2..=4).contains(&seen),
            "a reader saw {seen} successes of 2 to 4"
        );
        assert_eq!(
            w.successes(),
            4,
            "two of epoch 0, two of epoch 1, each once"
        );
    });
}

/// A straggler of generation 0, recorded by `straggle` (whether it landed),
/// racing with a record of the current generation 2 that replaces its bucket:
/// generation 2 holds its own record only, and each landed success counts once.
fn straggler_races_the_current_generation(
    straggle: impl Fn(&TimeWindow<1>) -> bool + Send + Sync + Copy + 'static,
) {
    model(move || {
        let w = Arc::new(TimeWindow::<1>::with_buckets(1, W).unwrap());
        assert!(w.record_gen(0, OK, 0, 0, || true).is_ok(), "{HONEST}");
        let old = {
            let w = w.clone();
            thread::spawn(move || straggle(&w))
        };
        let new = {
            let w = w.clone();
            thread::spawn(move || w.record_gen(2, OK, 0, 0, || true).expect(HONEST).kept)
        };
        let landed = old.join().unwrap();
        assert!(
            new.join().unwrap(),
            "the current generation's success is kept"
        );
        let c = w.counts_gen(2, 0);
        assert_eq!(
            (c.calls, c.failures),
            (1, 0),
            "generation 2 holds its own record only"
        );
        assert_eq!(
            w.successes(),
            2 + u64::from(landed),
            "each kept success once"
        );
    });
}

/// The straggler read the slot just before the current generation replaced its
/// bucket (seal, fold, move the tag, place the new bucket's first outcome: the
/// counts word then holds the calls and failures the straggler read, for
/// another bucket): it lands in generation 0's bucket or nowhere.
#[test]
fn time_window_record_of_a_rotated_out_bucket_never_lands_in_its_successor() {
    straggler_races_the_current_generation(|w| {
        w.record_gen(0, OK, 0, 0, || false).expect(HONEST).kept
    });
}

/// The same for the breaker's quiet success (a plain success into a live
/// bucket past the gate: one CAS, nothing else).
#[test]
fn time_window_quiet_success_never_lands_in_a_successor() {
    straggler_races_the_current_generation(|w| w.record_quiet_success(0, 0, 0));
}

/// Slow outcomes rotate in their own slots, which are sealed but never folded:
/// two slow records of epoch 1 racing to replace the slow bucket of epoch 0 both
/// count, and nothing of epoch 0 does.
#[test]
fn time_window_slow_rotation_loses_no_record_of_the_new_epoch() {
    const SLOW_FAIL: Sample = Sample {
        failure: true,
        slow: true,
    };
    const SLOW_OK: Sample = Sample {
        failure: false,
        slow: true,
    };
    two_records_race_into_a_new_epoch(SLOW_FAIL, 2, [SLOW_FAIL, SLOW_OK], |c| {
        assert_eq!(
            (c.calls, c.failures, c.slow, c.slow_failures),
            (2, 1, 2, 1),
            "both epoch-1 records, in the main and the slow bucket"
        );
    });
}
