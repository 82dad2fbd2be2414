//! Waiters that give up must not use up the queue. Only live waiters
//! count against `max_queue`, and a cancelled waiter's slot is free at once — even
//! while an older waiter stays queued at the front, with `max_queue = Q`.

use seawall_core::{CancelOutcome, Priority, RawAdmission, RejectReason, Ticket, TicketState};

mod semaphore_support;
use semaphore_support::{queue, sem, snap};

/// The Node/Python repro on the core: one permit held, the oldest waiter stays,
/// and 200 callers queue behind it and give up at once. Each one finds room (one
/// live waiter of two), and the oldest is still served first.
#[test]
fn waiters_that_give_up_behind_the_oldest_never_fill_the_queue() {
    let s = sem::<64>(1, 2);
    assert_eq!(
        s.acquire_raw(Priority::Normal, false),
        Ok(RawAdmission::Admitted)
    );
    let oldest = queue(&s);
    for i in 0..200 {
        let t = queue(&s);
        assert_eq!(s.snapshot(), snap(1, 2), "caller {i}");
        assert_eq!(s.cancel(t), CancelOutcome::Cancelled, "caller {i}");
        assert_eq!(s.snapshot(), snap(1, 1), "caller {i} left");
    }
    assert!(s.release());
    assert_eq!(s.poll(oldest), TicketState::Granted);
    assert!(s.release());
    assert_eq!(s.snapshot(), snap(0, 0));
}

/// `max_queue = Q = 4`, waiters giving up out of order between live ones: the
/// queue is refused exactly when 4 live waiters wait (hand-worked: the refusal
/// reports queued = 4), and the live ones are granted in arrival order.
#[test]
fn holes_between_live_waiters_are_reused_and_fifo_holds() {
    let s = sem::<4>(1, 4);
    assert_eq!(
        s.acquire_raw(Priority::Normal, false),
        Ok(RawAdmission::Admitted)
    );
    let mut live = vec![queue(&s)];
    for round in 0..50 {
        // Newcomers fill the queue up to 4 live waiters; the next is refused.
        let fresh: Vec<Ticket> = (live.len()..4).map(|_| queue(&s)).collect();
        let refused = s.acquire_raw(Priority::Normal, true).unwrap_err();
        assert_eq!(
            (refused.reason, refused.active, refused.queued),
            (RejectReason::Full, 1, 4),
            "round {round}"
        );
        // They give up newest first, then oldest, leaving holes between live
        // waiters; in two rounds the middle newcomer stays.
        let keep = (round == 10 || round == 30).then_some(fresh.len() / 2);
        let mut order: Vec<usize> = (0..fresh.len()).rev().collect();
        order.rotate_left(1);
        for k in order {
            if Some(k) == keep {
                continue;
            }
            assert_eq!(
                s.cancel(fresh[k]),
                CancelOutcome::Cancelled,
                "round {round}"
            );
        }
        if let Some(k) = keep {
            live.push(fresh[k]);
        }
        assert_eq!(s.snapshot(), snap(1, live.len() as u32), "round {round}");
    }
    assert_eq!(live.len(), 3);
    // One more fits (3 live of 4), then the queue is full again.
    let last = queue(&s);
    live.push(last);
    assert!(s.acquire_raw(Priority::Normal, true).is_err());
    // Hand-off in arrival order.
    for (k, t) in live.iter().enumerate() {
        assert!(s.release(), "release {k}");
        assert_eq!(
            s.poll(*t),
            TicketState::Granted,
            "waiter {k} is served next"
        );
        for later in &live[k + 1..] {
            assert_eq!(s.poll(*later), TicketState::Waiting);
        }
    }
    assert!(s.release());
    assert_eq!(s.snapshot(), snap(0, 0));
}

/// Real threads: the holder keeps the only permit while 4 threads queue and give
/// up at once, over and over; nobody is ever refused `Full` with room in the
/// queue (`max_queue` 5: the oldest waiter plus one per thread), and the oldest
/// waiter is served first at the end.
#[test]
fn timed_out_waiters_never_fill_the_queue_under_threads() {
    use std::sync::Arc;
    let s = Arc::new(sem::<8>(1, 5));
    assert_eq!(
        s.acquire_raw(Priority::Normal, false),
        Ok(RawAdmission::Admitted)
    );
    let oldest = queue(&s);
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let s = s.clone();
            std::thread::spawn(move || {
                for _ in 0..20_000 {
                    // 1 live + at most 4 threads = 5 = max_queue: always room.
                    let t = match s.acquire_raw(Priority::Normal, true) {
                        Ok(RawAdmission::Queued(t)) => t,
                        other => panic!("refused with room in the queue: {other:?}"),
                    };
                    assert_eq!(s.cancel(t), CancelOutcome::Cancelled);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(s.snapshot(), snap(1, 1));
    assert!(s.release());
    assert_eq!(s.poll(oldest), TicketState::Granted);
    assert!(s.release());
    assert_eq!(s.snapshot(), snap(0, 0));
}
