//! The untracked local semaphore (`Semaphore::local`) the bindings use for a
//! local bulkhead: the queue ring rule, its limits, and the ticket protocol
//! through the same methods as a tracked one (whose peek is checked too), on
//! scenarios worked by hand.

// The loom build compiles only the table models (tests/loom_*.rs).
#![cfg(not(loom))]
use std::time::Duration;

use seawall_core::{Field, Priority, SemaphoreConfig, TicketState};
use seawall_host::holders::HolderError;
use seawall_host::semaphore::{
    AcquireError, Acquired, Cancelled, Permit, Polled, Semaphore, Ticket, WaitError,
};

fn config(max_concurrent: u32, max_queue: u32) -> SemaphoreConfig {
    SemaphoreConfig {
        max_concurrent,
        max_queue,
        ..SemaphoreConfig::DEFAULT
    }
}

fn queued(s: &Semaphore) -> Ticket {
    match s.acquire_or_enqueue(Priority::Normal) {
        Ok(Acquired::Queued(t)) => t,
        other => panic!("expected a place in the queue, got {other:?}"),
    }
}

#[test]
fn the_queue_ring_follows_the_one_rule() {
    // The smallest of 64 / 512 / 4096 / 32768 holding twice max_queue.
    for (max_queue, ring) in [(0, 64), (32, 64), (33, 512), (1024, 4096), (16385, 32768)] {
        let s = Semaphore::local(&config(1, max_queue)).unwrap();
        assert_eq!(s.queue_capacity(), ring, "max_queue {max_queue}");
    }
    // A tracked semaphore's ring is its cell's, whatever max_queue.
    assert_eq!(
        Semaphore::new(&config(1, 3)).unwrap().queue_capacity(),
        1024
    );
}

#[test]
fn a_local_queue_takes_32768_waiters_and_a_tracked_one_1024() {
    let most = Semaphore::local(&config(1, 32768)).unwrap();
    assert_eq!(most.config().max_queue, 32768);
    let past = Semaphore::local(&config(1, 32769)).map(|_| ()).unwrap_err();
    assert_eq!(past.field, Field::MaxQueue);
    let tracked = Semaphore::new(&config(1, 1025)).map(|_| ()).unwrap_err();
    assert_eq!(tracked.field, Field::MaxQueue);
    // No holder table: max_concurrent is the core's alone.
    assert!(Semaphore::local(&config(100_000, 0)).is_ok());
}

#[test]
fn fifo_hand_off_peek_poll_and_cancel() {
    let s = Semaphore::local(&config(1, 3)).unwrap();
    assert!(!s.is_shared() && s.created());
    let held = s.try_acquire(Priority::Normal).unwrap();
    assert_eq!(held, Permit { id: 0 });
    let first = queued(&s);
    let second = queued(&s);
    assert_eq!((s.snapshot().active, s.snapshot().queued), (1, 2));

    // The release grants the oldest waiter; a peek sees it and takes nothing.
    s.release(held).unwrap();
    assert_eq!(s.peek(first), TicketState::Granted);
    assert_eq!(s.peek(first), TicketState::Granted);
    assert_eq!(s.peek(second), TicketState::Waiting);
    assert_eq!((s.snapshot().active, s.snapshot().queued), (1, 2));

    // The poll takes the grant once: the waiter leaves the queue.
    assert_eq!(s.poll(first), Ok(Polled::Granted(Permit { id: 0 })));
    assert_eq!((s.snapshot().active, s.snapshot().queued), (1, 1));
    assert!(s.poll(first).is_err());

    // The second gives up: cancelled, then no longer in the queue.
    assert_eq!(s.cancel(second), Ok(Cancelled::Cancelled));
    assert_eq!(s.poll(second), Err(HolderError::UnknownTicket));
    assert_eq!(s.cancel(second), Err(HolderError::UnknownTicket));

    // One permit is held; a second release finds none.
    s.release(Permit { id: 0 }).unwrap();
    assert_eq!(s.release(Permit { id: 0 }), Err(HolderError::AlreadyUsed));
    let f = s.full_snapshot();
    assert_eq!((f.active, f.queued, f.permits_outstanding), (0, 0, 0));
    assert_eq!(s.reclaim_abandoned(), (0, 0));
}

#[test]
fn a_cancel_racing_a_grant_passes_the_permit_on() {
    let s = Semaphore::local(&config(1, 2)).unwrap();
    let held = s.try_acquire(Priority::Normal).unwrap();
    let first = queued(&s);
    let second = queued(&s);
    s.release(held).unwrap();
    // Granted but not taken: its cancel hands the permit to the next waiter.
    assert_eq!(s.cancel(first), Ok(Cancelled::PassedOn));
    assert_eq!(s.peek(second), TicketState::Granted);
    assert_eq!((s.snapshot().active, s.snapshot().queued), (1, 1));
}

#[test]
fn an_id_the_semaphore_never_issued_is_foreign() {
    let s = Semaphore::local(&config(1, 2)).unwrap();
    let beyond = Ticket {
        id: u64::from(u32::MAX) + 1,
    };
    assert_eq!(s.poll(beyond), Err(HolderError::Foreign));
    assert_eq!(s.peek(beyond), TicketState::Unknown);
}

#[test]
fn shed_full_and_timed_out_waits() {
    let mut cfg = config(4, 1);
    cfg.shares.low = seawall_core::Ratio::from_percent(25);
    let s = Semaphore::local(&cfg).unwrap();
    // low's limit is max(1, ⌊4 · 25 %⌋) = 1.
    assert_eq!(s.limit(Priority::Low), 1);
    let a = s.try_acquire(Priority::Low).unwrap();
    assert!(matches!(
        s.try_acquire(Priority::Low),
        Err(AcquireError::Rejected(r)) if r.reason == seawall_core::RejectReason::Shed
    ));
    let more: Vec<_> = (0..3)
        .map(|_| s.try_acquire(Priority::High).unwrap())
        .collect();
    // Every permit held: one waiter may queue, and times out.
    let t = s.acquire_timeout(Priority::High, Some(Duration::from_millis(5)));
    assert_eq!(t, Err(WaitError::TimedOut));
    assert_eq!((s.snapshot().active, s.snapshot().queued), (4, 0));
    for p in more.into_iter().chain([a]) {
        s.release(p).unwrap();
    }
    assert_eq!(s.snapshot().active, 0);
}

#[test]
fn a_tracked_peek_takes_nothing_either() {
    let s = Semaphore::new(&config(1, 2)).unwrap();
    let held = s.try_acquire(Priority::Normal).unwrap();
    let t = queued(&s);
    s.release(held).unwrap();
    assert_eq!(s.peek(t), TicketState::Granted);
    assert_eq!(s.peek(t), TicketState::Granted);
    assert_eq!((s.snapshot().active, s.snapshot().queued), (1, 1));
    // The permit a tracked ticket turns into has the ticket's id.
    assert_eq!(s.poll(t), Ok(Polled::Granted(Permit { id: t.id })));
    assert_eq!(s.peek(t), TicketState::Unknown);
    s.release(Permit { id: t.id }).unwrap();
    assert_eq!(
        s.release(Permit { id: t.id }),
        Err(HolderError::AlreadyUsed)
    );
}
