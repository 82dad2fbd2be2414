//! A ticket means one wait of the semaphore that issued it, a granted ticket
//! keeps its permit until its waiter polls, and the blocking wrapper sees grants
//! made through the core.
//!
//! Expected values are worked by hand from the protocol: one permit, one holder
//! H, and waiters whose slots are named in the comments.

use std::time::{Duration, Instant};

use seawall_core::{
    BlockingSemaphore, CancelOutcome, Priority, RejectReason, Semaphore, SemaphoreConfig,
    SemaphoreRejected as Rejected, Ticket, TicketState,
};

mod semaphore_support;
use semaphore_support::{admitted, queue, sem, snap};

/// A forged id (0: slot 0, generation 0, never issued once slot 0 was
/// used) is `Unknown`, and cancelling it releases nothing: H keeps its permit
/// and B keeps waiting.
#[test]
fn forged_ticket_is_unknown_and_its_cancel_releases_nothing() {
    let s = sem::<64>(1, 4);
    admitted(&s); // H
    let a = queue(&s);
    assert_eq!(s.cancel(a), CancelOutcome::Cancelled);
    let b = queue(&s);
    let forged = Ticket { id: 0 };
    assert_ne!(forged, b);
    assert_eq!(s.poll(forged), TicketState::Unknown);
    assert_eq!(s.cancel(forged), CancelOutcome::Unknown);
    assert_eq!(s.snapshot(), snap(1, 1));
    assert_eq!(s.poll(b), TicketState::Waiting);
    // H's release goes to B; B's to the pool; then nothing is held.
    assert!(s.release());
    assert_eq!(s.poll(b), TicketState::Granted);
    assert!(s.release());
    assert_eq!(s.snapshot(), snap(0, 0));
    assert!(!s.release());
}

/// A cancelled ticket used again after its slot went to B reads `Unknown`
/// and its second cancel is `Unknown` — not `Granted`/`PassedOn`, which handed
/// H's permit to B (two holders of one permit).
#[test]
fn cancelled_ticket_after_its_slot_is_reused_is_unknown() {
    let s = sem::<1>(1, 1);
    admitted(&s); // H
    let a = queue(&s);
    assert_eq!(s.cancel(a), CancelOutcome::Cancelled);
    let b = queue(&s); // the only slot again
    assert_eq!(s.poll(a), TicketState::Unknown);
    assert_eq!(s.cancel(a), CancelOutcome::Unknown);
    assert_eq!(s.snapshot(), snap(1, 1));
    assert_eq!(s.poll(b), TicketState::Waiting);
    assert!(s.release()); // H → B
    assert_eq!(s.poll(b), TicketState::Granted);
    assert!(s.release()); // B → pool
    assert_eq!(s.snapshot(), snap(0, 0));
    assert!(!s.release(), "exactly two permits were held, one at a time");
}

/// A ticket of another semaphore whose slot generation is older than the
/// slot's here reads `Unknown`; its cancel leaves this semaphore's waiter alone.
#[test]
fn ticket_of_another_semaphore_is_unknown() {
    let s1 = sem::<4>(1, 4);
    let s2 = sem::<4>(1, 4);
    admitted(&s1);
    admitted(&s2);
    let t2 = queue(&s2); // s2: slot 0, generation 1
    // s1: slot 0 goes through several waits (arrival % 4 picks the first slot
    // tried, so every fourth wait starts at slot 0).
    for _ in 0..16 {
        let t = queue(&s1);
        assert_eq!(s1.cancel(t), CancelOutcome::Cancelled);
    }
    let t1 = queue(&s1);
    assert_ne!(t1, t2);
    assert_eq!(s1.poll(t2), TicketState::Unknown);
    assert_eq!(s1.cancel(t2), CancelOutcome::Unknown);
    assert_eq!(s1.snapshot(), snap(1, 1));
    assert_eq!(s1.poll(t1), TicketState::Waiting);
    assert_eq!(s1.cancel(t1), CancelOutcome::Cancelled);
    assert_eq!(s2.cancel(t2), CancelOutcome::Cancelled);
}

/// A grant is acknowledged once: the first poll takes it, later ones read
/// `Unknown`, and a cancel after it passes nothing on.
#[test]
fn a_grant_is_taken_by_one_poll() {
    let s = sem::<4>(1, 4);
    admitted(&s);
    let a = queue(&s);
    assert!(s.release());
    assert_eq!(s.snapshot(), snap(1, 1), "A counts until it polls");
    assert_eq!(s.poll(a), TicketState::Granted);
    assert_eq!(s.snapshot(), snap(1, 0));
    assert_eq!(s.poll(a), TicketState::Unknown);
    assert_eq!(s.cancel(a), CancelOutcome::Unknown);
    assert_eq!(s.snapshot(), snap(1, 0));
    assert!(s.release());
    assert!(!s.release());
}

/// A granted waiter that has not polled does not block admission: with two
/// permits, A granted (unpolled) and the other permit back in the pool, a
/// `try_acquire` takes it (nobody unserved is waiting).
#[test]
fn unpolled_grant_does_not_refuse_admission() {
    let s = sem::<4>(2, 4);
    admitted(&s); // H1
    admitted(&s); // H2
    let a = queue(&s);
    assert!(s.release()); // H1 → A
    assert!(s.release()); // H2 → pool (A is not waiting any more)
    assert_eq!(s.snapshot(), snap(1, 1));
    let p = s.try_acquire(Priority::Normal).expect("a permit is free");
    assert_eq!(
        s.try_acquire(Priority::Normal).map(drop),
        Err(Rejected {
            reason: RejectReason::Full,
            active: 2,
            queued: 1
        })
    );
    assert_eq!(s.poll(a), TicketState::Granted);
    drop(p);
    assert!(s.release()); // A's
    assert_eq!(s.snapshot(), snap(0, 0));
}

/// A granted ticket whose waiter is slow to poll. Other callers queue and
/// give up 2¹⁹ times (Semaphore<16384>: 18 ticket-generation bits, so the old
/// protocol's slot, reusable at the grant, wrapped past it twice over); the
/// granted slot is never reused, so the ticket still reads `Granted` and its
/// permit is neither lost nor handed to another waiter.
#[test]
fn granted_ticket_survives_any_number_of_later_waits() {
    let s: Box<Semaphore<16384>> = Box::new(sem(1, 2));
    admitted(&s); // H
    let a = queue(&s);
    assert!(s.release()); // H → A; A does not poll yet
    for k in 0..(1u32 << 19) {
        let t = queue(&s);
        assert_eq!(s.poll(t), TicketState::Waiting, "churn {k}");
        assert_eq!(s.cancel(t), CancelOutcome::Cancelled, "churn {k}");
    }
    assert_eq!(s.snapshot(), snap(1, 1));
    let b = queue(&s);
    assert_eq!(s.poll(a), TicketState::Granted);
    assert_eq!(
        s.poll(b),
        TicketState::Waiting,
        "B still waits for A's permit"
    );
    assert!(s.release()); // A → B
    assert_eq!(s.poll(b), TicketState::Granted);
    assert!(s.release());
    assert_eq!(s.snapshot(), snap(0, 0));
}

/// The same through `cancel`: the slow waiter gives up after the churn;
/// the permit it was granted is passed on to the next waiter, not lost.
#[test]
fn granted_ticket_cancelled_late_passes_its_permit_on() {
    let s = sem::<1>(1, 1);
    admitted(&s); // H
    let a = queue(&s);
    assert!(s.release()); // H → A
    // The only slot is A's until A polls: nobody else can queue meanwhile.
    for _ in 0..1000 {
        assert_eq!(
            s.acquire_raw(Priority::Normal, true),
            Err(Rejected {
                reason: RejectReason::Full,
                active: 1,
                queued: 1
            })
        );
    }
    assert_eq!(s.cancel(a), CancelOutcome::PassedOn);
    assert_eq!(s.snapshot(), snap(0, 0));
    admitted(&s);
    assert!(s.release());
}

/// A permit taken through `inner()` and dropped hands off to a blocked
/// waiter without notifying it; the waiter must still return promptly (the
/// release is at ~100 ms, the timeout 5 s).
#[test]
fn blocking_waiter_sees_a_grant_made_through_the_core() {
    let s = BlockingSemaphore::<4>::new(SemaphoreConfig {
        max_concurrent: 1,
        max_queue: 4,
        ..SemaphoreConfig::DEFAULT
    })
    .unwrap();
    let p = s.inner().try_acquire(Priority::Normal).unwrap();
    std::thread::scope(|sc| {
        let h = sc.spawn(|| {
            let t0 = Instant::now();
            let r = s.acquire_timeout(Priority::Normal, Duration::from_secs(5));
            (r.map(drop), t0.elapsed())
        });
        while s.inner().snapshot().queued == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        std::thread::sleep(Duration::from_millis(100));
        drop(p);
        let (r, waited) = h.join().unwrap();
        assert_eq!(r, Ok(()));
        assert!(
            waited < Duration::from_secs(2),
            "slept {waited:?} holding a granted permit"
        );
    });
    assert_eq!(s.inner().snapshot(), snap(0, 0));
}
