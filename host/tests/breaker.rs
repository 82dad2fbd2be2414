//! The breaker handle in this process: with a permit table (single-use permits,
//! as C gets them) and without one (for runtimes whose permit objects are
//! single-use themselves), and the state-and-epoch observation bindings poll.

// The loom build compiles only the table models (tests/loom_*.rs).
#![cfg(not(loom))]
use seawall_core::{BreakerConfig, Field, Outcome, State, WindowConfig};
use seawall_host::breaker::{Breaker, CountCell, Observed};
use seawall_host::permits::PermitError;

fn count(size: u32) -> BreakerConfig {
    BreakerConfig {
        window: WindowConfig::Count { size },
        minimum_calls: 1,
        ..BreakerConfig::DEFAULT
    }
}

#[test]
fn without_a_permit_table_every_record_counts() {
    let b = Breaker::new_without_permit_table(count(10)).unwrap();
    assert!(!b.has_permit_table() && !b.is_shared() && b.created());
    let p = b.try_acquire(1).unwrap();
    assert_eq!((p.id, p.epoch), (0, b.epoch()));
    b.record(p, Outcome::Success, 0, 2).unwrap();
    // The runtime guards single use; the breaker takes what it is given.
    b.record(p, Outcome::Success, 0, 3).unwrap();
    let m = b.metrics(4);
    // A closed permit is counted as admitted when recorded: here twice.
    assert_eq!(m.core.totals.admitted, 2);
    assert_eq!(m.core.totals.successes, 2);
    assert_eq!(m.permits_outstanding, None);
    assert_eq!(b.reclaim_abandoned(5), 0);
}

#[test]
fn with_a_permit_table_a_second_record_is_refused() {
    let b = Breaker::new(count(10)).unwrap();
    assert!(b.has_permit_table());
    let p = b.try_acquire(1).unwrap();
    assert_eq!(b.metrics(1).permits_outstanding, Some(1));
    b.record(p, Outcome::Success, 0, 2).unwrap();
    assert_eq!(
        b.record(p, Outcome::Success, 0, 3),
        Err(PermitError::AlreadyUsed)
    );
    let m = b.metrics(4);
    assert_eq!(
        (m.core.totals.successes, m.permits_outstanding),
        (1, Some(0))
    );
}

#[test]
fn a_process_gives_back_what_it_still_holds_as_ignored() {
    let b = Breaker::new(count(10)).unwrap();
    let held: Vec<_> = (0..3).map(|t| b.try_acquire(t).unwrap()).collect();
    b.record(held[0], Outcome::Success, 0, 3).unwrap();
    // This process is alive: a reclaim takes nothing of it.
    assert_eq!(b.reclaim_abandoned(4), 0);
    assert_eq!(b.reclaim_own(5), 2);
    assert_eq!(b.reclaim_own(6), 0);
    let m = b.metrics(7);
    assert_eq!(m.permits_outstanding, Some(0));
    let t = m.core.totals;
    assert_eq!((t.admitted, t.successes, t.ignored), (3, 1, 2));
    // A holder that records after all is refused, and counts nothing.
    assert_eq!(
        b.record(held[1], Outcome::Failure, 0, 8),
        Err(PermitError::AlreadyUsed)
    );
    assert_eq!(b.metrics(9).core.totals.failures, 0);
    let without = Breaker::new_without_permit_table(count(10)).unwrap();
    let _ = without.try_acquire(1).unwrap();
    assert_eq!(without.reclaim_own(2), 0);
}

#[test]
fn both_kinds_accept_the_same_window_sizes() {
    for make in [Breaker::new, Breaker::new_without_permit_table] {
        for size in [1, 32, 33, 128, 129, 1024] {
            assert!(make(count(size)).is_ok(), "count {size}");
        }
        assert_eq!(make(count(1025)).unwrap_err().field, Field::WindowSize);
        for buckets in [1, 10, 11, 32, 33, 128] {
            let c = BreakerConfig {
                window: WindowConfig::Time {
                    buckets,
                    bucket_width_ns: 1_000_000,
                },
                ..BreakerConfig::DEFAULT
            };
            assert!(make(c).is_ok(), "time {buckets}");
        }
        let c = BreakerConfig {
            window: WindowConfig::Time {
                buckets: 129,
                bucket_width_ns: 1_000_000,
            },
            ..BreakerConfig::DEFAULT
        };
        assert_eq!(make(c).unwrap_err().field, Field::WindowBuckets);
    }
}

#[test]
fn a_small_window_takes_little_memory_without_a_table() {
    let small = Breaker::new_without_permit_table(count(10)).unwrap();
    let tracked = Breaker::new(count(10)).unwrap();
    assert_eq!(tracked.local_size(), size_of::<CountCell>());
    // 32 calls of window instead of 1024, and no table of 4096 slots.
    assert!(small.local_size() * 10 < tracked.local_size());
}

#[test]
fn a_failure_opens_and_the_observation_follows_state_and_epoch() {
    let b = Breaker::new_without_permit_table(BreakerConfig {
        consecutive_failures: Some(1),
        ..count(10)
    })
    .unwrap();
    let first = b.observe();
    assert_eq!(first.state, State::Closed);
    let p = b.try_acquire(1).unwrap();
    b.record(p, Outcome::Failure, 0, 2).unwrap();
    let open = b.observe();
    // Closed 0 → open 2: half-open epochs are odd, all others even.
    assert_eq!(
        open,
        Observed {
            state: State::Open,
            epoch: first.epoch + 2
        }
    );
    assert_eq!(open.word(), (1 << 32) + u64::from(first.epoch) + 2);
    b.force_open();
    let forced = b.observe();
    assert_eq!(forced.state, State::ForcedOpen);
    assert_eq!(Observed::from_word(forced.word()), Some(forced));
}
