//! The time window's buckets as 64-bit words: the per-bucket limit, lifetime
//! successes across many rotations, and generations replacing each other in one
//! bucket, against figures worked out by hand.

use seawall_core::{Sample, SlidingWindow, TimeWindow};

const MS: u64 = 1_000_000;
const OK: Sample = Sample {
    failure: false,
    slow: false,
};
const FAIL: Sample = Sample {
    failure: true,
    slow: false,
};

#[test]
fn a_bucket_holds_at_most_max_bucket_calls_and_drops_the_rest() {
    // 24 bits of calls: 2^24 - 1 = 16 777 215.
    assert_eq!(TimeWindow::<1>::MAX_BUCKET_CALLS, 16_777_215);
    let w = TimeWindow::<1>::with_buckets(1, MS).unwrap();
    for _ in 0..16_777_215u32 {
        w.record(OK, 0);
    }
    let over = w.record_gen(0, OK, 0, 0, || true).unwrap();
    assert!(!over.kept, "the outcome past the limit counts in no window");
    assert_eq!(w.counts(0).calls, 16_777_215);
    assert_eq!(w.successes(), 16_777_215);
    // The next epoch rotates the full bucket out: its successes stay counted.
    w.record(FAIL, MS);
    let c = w.counts(MS);
    assert_eq!((c.calls, c.failures), (1, 1));
    assert_eq!(w.successes(), 16_777_215);
}

#[test]
fn lifetime_successes_stay_exact_across_many_rotations() {
    // Epoch e gets (e mod 4) + 1 successes and e mod 3 failures, 3 buckets.
    let w = TimeWindow::<3>::with_buckets(3, MS).unwrap();
    for e in 0..40u64 {
        for _ in 0..=(e % 4) {
            w.record(OK, e * MS + 1);
        }
        for _ in 0..(e % 3) {
            w.record(FAIL, e * MS + 2);
        }
    }
    // Successes: ten rounds of 1 + 2 + 3 + 4.
    assert_eq!(w.successes(), 100);
    // The window at epoch 39 holds epochs 37, 38, 39:
    // successes 2 + 3 + 4, failures 1 + 2 + 0.
    let c = w.counts(39 * MS);
    assert_eq!((c.calls, c.failures), (12, 3));
    // After an idle gap of a whole window nothing is in it, and nothing is lost.
    assert_eq!(w.counts(42 * MS).calls, 0);
    assert_eq!(w.successes(), 100);
}

#[test]
fn each_of_two_thousand_generations_sees_only_its_own_outcomes() {
    // Generations 0, 2, 4, ... replace each other in one bucket of one epoch.
    let w = TimeWindow::<1>::with_buckets(1, MS).unwrap();
    for g in (0..4000u32).step_by(2) {
        for s in [OK, FAIL, OK] {
            assert!(w.record_gen(g, s, 5, 0, || true).is_ok());
        }
        let c = w.counts_gen(g, 5);
        assert_eq!((c.calls, c.failures), (3, 1), "generation {g}");
        if g > 0 {
            assert_eq!(w.counts_gen(g - 2, 5).calls, 0, "generation {g}");
        }
    }
    assert_eq!(w.successes(), 2 * 2000);
}

#[test]
fn a_straggler_of_an_older_generation_is_dropped_and_not_kept() {
    let w = TimeWindow::<1>::with_buckets(1, MS).unwrap();
    w.record_gen(4, OK, 0, 0, || true).unwrap();
    // Generation 2 is no longer current: it neither lands in generation 4's
    // bucket nor replaces it.
    let r = w.record_gen(2, FAIL, 0, 0, || false).unwrap();
    assert!(!r.kept && r.counts.is_none());
    let c = w.counts_gen(4, 0);
    assert_eq!((c.calls, c.failures), (1, 0));
    assert_eq!(w.counts_gen(2, 0).calls, 0);
    assert_eq!(w.successes(), 1);
}

#[test]
fn with_one_second_buckets_generations_far_apart_never_share_a_bucket() {
    // 1 s buckets leave 28 bits of a tag to the generation: 2^15 and 2^27
    // generations later are other generations, in one epoch.
    let w = TimeWindow::<2>::with_buckets(2, 1_000 * MS).unwrap();
    for _ in 0..2 {
        w.record_gen(0, FAIL, 0, 0, || true).unwrap();
    }
    for g in [1 << 15, 1 << 27] {
        let r = w.record_gen(g, OK, 0, 0, || true).unwrap();
        assert!(r.kept, "generation {g}");
        let c = w.counts_gen(g, 0);
        assert_eq!((c.calls, c.failures), (1, 0), "generation {g}");
    }
    assert_eq!(w.counts_gen(0, 0).calls, 0);
    assert_eq!(w.successes(), 2);
}

#[test]
fn a_bucket_idle_for_exactly_two_to_the_fifteen_laps_starts_empty() {
    // A slot's next bucket 32 768 laps later is a new bucket, however its
    // numbers line up.
    let w = TimeWindow::<1>::with_buckets(1, TimeWindow::<1>::MIN_BUCKET_WIDTH_NS).unwrap();
    w.record(FAIL, 0);
    let later = 32_768 * TimeWindow::<1>::MIN_BUCKET_WIDTH_NS;
    let r = w.record_gen(0, OK, later, 0, || true).unwrap();
    assert!(r.kept);
    let c = w.counts(later);
    assert_eq!((c.calls, c.failures), (1, 0));
    assert_eq!(w.successes(), 1);
}
