//! loom models of the semaphore's hand-off protocol. Each model states
//! its invariant and asserts it in every interleaving loom explores;
//! `scripts/loom-mutants.sh` checks each fails on its broken variant.
#![cfg(loom)]

use seawall_loom_tests::model;

use loom::sync::Arc;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::thread;
use seawall_core::{
    CancelOutcome, Priority, RawAdmission, Semaphore, SemaphoreConfig, SemaphoreSnapshot, Ticket,
    TicketState,
};

/// Every call of these models is honest, so none may find the semaphore
/// corrupt: a protocol bug that breaks its invariants (a slot search that finds
/// no free slot, an acknowledgement of a grant that is not there) shows as
/// `Corrupt` here instead of being turned into a refusal.
const HONEST: &str = "a semaphore used only through its own protocol never reads as corrupt";

fn sem<const Q: usize>(max_concurrent: u32, max_queue: u32) -> Semaphore<Q> {
    Semaphore::new(SemaphoreConfig {
        max_concurrent,
        max_queue,
        ..SemaphoreConfig::DEFAULT
    })
    .unwrap()
}

/// One caller admitted (it holds the permit) and one queued behind it: the
/// waiter's ticket.
fn holder_and_waiter<const Q: usize>(s: &Semaphore<Q>) -> Ticket {
    assert_eq!(
        s.acquire_raw_checked(Priority::Normal, false)
            .expect(HONEST),
        Ok(RawAdmission::Admitted)
    );
    match s.acquire_raw_checked(Priority::Normal, true).expect(HONEST) {
        Ok(RawAdmission::Queued(t)) => t,
        other => panic!("the waiter must queue, got {other:?}"),
    }
}

fn idle() -> SemaphoreSnapshot {
    SemaphoreSnapshot {
        active: 0,
        queued: 0,
    }
}

/// active ≤ `max_concurrent`: three racing acquires of one permit; each thread
/// counts itself as a holder only between admission and release, so the count
/// can only undercount the semaphore's own. No permit is left when all are done.
#[test]
fn semaphore_active_never_exceeds_max() {
    model(|| {
        let s = Arc::new(sem::<1>(1, 0));
        let held = Arc::new(AtomicUsize::new(0));
        let hs: Vec<_> = (0..2)
            .map(|_| {
                let (s, held) = (s.clone(), held.clone());
                thread::spawn(move || {
                    let got = s.acquire_raw_checked(Priority::Normal, false);
                    if got.expect(HONEST) == Ok(RawAdmission::Admitted) {
                        let n = held.fetch_add(1, Ordering::SeqCst) + 1;
                        assert!(n <= 1, "{n} holders of one permit");
                        held.fetch_sub(1, Ordering::SeqCst);
                        assert!(s.release_checked().expect(HONEST));
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(s.snapshot(), idle());
    });
}

/// queued ≤ `max_queue`: the only permit is held and two callers race for the
/// one queue place: exactly one waits, the other is refused.
#[test]
fn semaphore_queued_never_exceeds_max_queue() {
    model(|| {
        let s = Arc::new(sem::<2>(1, 1));
        assert_eq!(
            s.acquire_raw_checked(Priority::Normal, false)
                .expect(HONEST),
            Ok(RawAdmission::Admitted)
        );
        let hs: Vec<_> = (0..2)
            .map(|_| {
                let s = s.clone();
                thread::spawn(move || {
                    let r = s.acquire_raw_checked(Priority::Normal, true).expect(HONEST);
                    assert!(s.snapshot().queued <= 1, "queued above max_queue");
                    r
                })
            })
            .collect();
        let results: Vec<_> = hs.into_iter().map(|h| h.join().unwrap()).collect();
        let tickets: Vec<_> = results
            .iter()
            .filter_map(|r| match r {
                Ok(RawAdmission::Queued(t)) => Some(*t),
                _ => None,
            })
            .collect();
        assert_eq!(tickets.len(), 1, "{results:?}");
        assert_eq!(s.snapshot().queued, 1);
        for t in tickets {
            assert_eq!(s.cancel_checked(t).expect(HONEST), CancelOutcome::Cancelled);
        }
        assert!(s.release_checked().expect(HONEST));
        assert_eq!(s.snapshot(), idle());
    });
}

/// Cancellation racing hand-off: the holder releases while the only waiter
/// gives up. Whoever wins, the permit ends passed on or returned — once every
/// holder and waiter is gone, active = queued = 0.
#[test]
fn semaphore_cancel_racing_hand_off_leaks_nothing() {
    model(|| {
        let s = Arc::new(sem::<1>(1, 1));
        let t = holder_and_waiter(&s);
        let holder = {
            let s = s.clone();
            thread::spawn(move || assert!(s.release_checked().expect(HONEST)))
        };
        let waiter = {
            let s = s.clone();
            thread::spawn(move || s.cancel_checked(t).expect(HONEST))
        };
        holder.join().unwrap();
        let outcome = waiter.join().unwrap();
        assert!(matches!(
            outcome,
            CancelOutcome::Cancelled | CancelOutcome::PassedOn
        ));
        assert_eq!(s.snapshot(), idle(), "after {outcome:?}");
        // The permit really is back in the pool.
        assert_eq!(
            s.acquire_raw_checked(Priority::Normal, false)
                .expect(HONEST),
            Ok(RawAdmission::Admitted)
        );
    });
}

/// FIFO hand-off: waiter A has settled in the queue before B arrives; B
/// queues while the holder releases. A gets the permit, whatever the
/// interleaving, and B waits (a later arrival never overtakes a settled one).
#[test]
fn semaphore_fifo_hand_off() {
    model(|| {
        let s = Arc::new(sem::<2>(1, 2));
        let a = holder_and_waiter(&s);
        let b = {
            let s = s.clone();
            thread::spawn(move || {
                s.acquire_raw_checked(Priority::Normal, true)
                    .expect(HONEST)
                    .unwrap()
            })
        };
        let holder = {
            let s = s.clone();
            thread::spawn(move || assert!(s.release_checked().expect(HONEST)))
        };
        holder.join().unwrap();
        let b = b.join().unwrap();
        assert_eq!(
            s.poll_checked(a).expect(HONEST),
            TicketState::Granted,
            "FIFO: A first (B: {b:?})"
        );
        let RawAdmission::Queued(b) = b else {
            panic!("B took a permit while A waited: {b:?}");
        };
        assert_eq!(s.poll_checked(b).expect(HONEST), TicketState::Waiting);
        assert_eq!(
            s.snapshot(),
            SemaphoreSnapshot {
                active: 1,
                queued: 1
            }
        );
    });
}

/// Hand-off to waiters still settling: two callers queue while the holder
/// releases, so the release may find no installed waiter. Exactly one caller
/// ends up holding the permit and the other waits — never both waiting with the
/// permit back in the pool.
#[test]
fn semaphore_hand_off_to_waiters_still_settling() {
    model(|| {
        let s = Arc::new(sem::<2>(1, 2));
        assert_eq!(
            s.acquire_raw_checked(Priority::Normal, false)
                .expect(HONEST),
            Ok(RawAdmission::Admitted)
        );
        let callers: Vec<_> = (0..2)
            .map(|_| {
                let s = s.clone();
                thread::spawn(move || {
                    s.acquire_raw_checked(Priority::Normal, true)
                        .expect(HONEST)
                        .unwrap()
                })
            })
            .collect();
        let holder = {
            let s = s.clone();
            thread::spawn(move || assert!(s.release_checked().expect(HONEST)))
        };
        holder.join().unwrap();
        let got: Vec<RawAdmission> = callers.into_iter().map(|h| h.join().unwrap()).collect();
        let holds = |a: &RawAdmission| match a {
            RawAdmission::Admitted => true,
            RawAdmission::Queued(t) => s.poll_checked(*t).expect(HONEST) == TicketState::Granted,
        };
        let holding = got.iter().filter(|a| holds(a)).count();
        assert_eq!(holding, 1, "{got:?} ({:?})", s.snapshot());
        assert_eq!(
            s.snapshot(),
            SemaphoreSnapshot {
                active: 1,
                queued: 1
            }
        );
    });
}

/// No waiter is left waiting while a permit is free once every
/// thread has finished: a waiter cancels while the holder releases and at once
/// queues again (it may count the leaving waiter as still queued). Whatever the
/// interleaving, a ticket still waiting at the end has every permit held by
/// someone who will release it; here nobody else holds one, so the holder's new
/// request must end holding the permit.
#[test]
fn semaphore_no_waiter_stranded_with_a_free_permit() {
    model(|| {
        let s = Arc::new(sem::<4>(1, 2));
        let w = holder_and_waiter(&s);
        let canceller = {
            let s = s.clone();
            thread::spawn(move || s.cancel_checked(w).expect(HONEST))
        };
        let holder = {
            let s = s.clone();
            thread::spawn(move || {
                assert!(s.release_checked().expect(HONEST));
                s.acquire_raw_checked(Priority::Normal, true).expect(HONEST)
            })
        };
        let outcome = canceller.join().unwrap();
        let again = holder.join().unwrap().expect("room to wait");
        // Polled first: a granted waiter counts in `queued` until it polls.
        let waiting = match again {
            RawAdmission::Admitted => false,
            RawAdmission::Queued(t) => s.poll_checked(t).expect(HONEST) == TicketState::Waiting,
        };
        let snap = s.snapshot();
        assert!(
            !(waiting && snap.active < 1),
            "{again:?} waits for ever: a permit is free ({snap:?}, cancel: {outcome:?})"
        );
        // The canceller may have been handed the first permit and passed it on.
        assert!(matches!(
            outcome,
            CancelOutcome::Cancelled | CancelOutcome::PassedOn
        ));
        assert_eq!(
            snap,
            SemaphoreSnapshot {
                active: 1,
                queued: 0
            }
        );
        assert!(s.release_checked().expect(HONEST));
        assert_eq!(s.snapshot(), idle());
    });
}

/// A cancelled waiter's slot is free at once: with `Q =
/// max_queue = 2`, the oldest waiter stays queued while a caller queues and gives
/// up twice and the holder hands its permit on. The caller always finds room (at
/// most 2 live waiters), and afterwards two new waiters fit again.
#[test]
fn semaphore_cancelled_slots_are_reused() {
    model(|| {
        let s = Arc::new(sem::<2>(1, 2));
        let oldest = holder_and_waiter(&s);
        let churn = {
            let s = s.clone();
            thread::spawn(move || {
                for round in 0..2 {
                    match s.acquire_raw_checked(Priority::Normal, true).expect(HONEST) {
                        Ok(RawAdmission::Queued(t)) => {
                            assert_eq!(
                                s.cancel_checked(t).expect(HONEST),
                                CancelOutcome::Cancelled
                            );
                        }
                        // The oldest may hold the permit by now: the queue is empty.
                        Ok(RawAdmission::Admitted) => panic!("round {round}: barged"),
                        Err(r) => panic!("round {round}: refused with room to wait: {r:?}"),
                    }
                }
            })
        };
        let holder = {
            let s = s.clone();
            thread::spawn(move || assert!(s.release_checked().expect(HONEST)))
        };
        churn.join().unwrap();
        holder.join().unwrap();
        assert_eq!(s.poll_checked(oldest).expect(HONEST), TicketState::Granted);
        assert_eq!(
            s.snapshot(),
            SemaphoreSnapshot {
                active: 1,
                queued: 0
            }
        );
        let a = s.acquire_raw_checked(Priority::Normal, true).expect(HONEST);
        let b = s.acquire_raw_checked(Priority::Normal, true).expect(HONEST);
        let (Ok(RawAdmission::Queued(a)), Ok(RawAdmission::Queued(b))) = (a, b) else {
            panic!("two waiters must fit a queue of two: {a:?}, {b:?}");
        };
        assert_eq!(s.cancel_checked(a).expect(HONEST), CancelOutcome::Cancelled);
        assert_eq!(s.cancel_checked(b).expect(HONEST), CancelOutcome::Cancelled);
        assert!(s.release_checked().expect(HONEST));
        assert_eq!(s.snapshot(), idle());
    });
}

/// A granted slot is never reused before its ticket is
/// acknowledged: with one slot, the holder hands its permit to A while another
/// caller queues and gives up twice. A has not polled, so that caller never
/// gets A's slot (it is refused: A still counts against `max_queue`), and A's
/// poll afterwards reads `Granted` — never `Unknown` or `Waiting`.
#[test]
fn semaphore_granted_slot_kept_until_acknowledged() {
    model(|| {
        let s = Arc::new(sem::<1>(1, 1));
        let a = holder_and_waiter(&s);
        let churn = {
            let s = s.clone();
            thread::spawn(move || {
                for round in 0..2 {
                    if let Ok(RawAdmission::Queued(t)) =
                        s.acquire_raw_checked(Priority::Normal, true).expect(HONEST)
                    {
                        let _ = s.cancel_checked(t).expect(HONEST);
                        panic!("round {round}: A's slot reused before A polled its grant");
                    }
                }
            })
        };
        let holder = {
            let s = s.clone();
            thread::spawn(move || assert!(s.release_checked().expect(HONEST)))
        };
        holder.join().unwrap();
        churn.join().unwrap();
        assert_eq!(
            s.poll_checked(a).expect(HONEST),
            TicketState::Granted,
            "A's grant was lost"
        );
        assert_eq!(
            s.snapshot(),
            SemaphoreSnapshot {
                active: 1,
                queued: 0
            }
        );
        assert!(s.release_checked().expect(HONEST));
        assert_eq!(s.snapshot(), idle());
    });
}

/// A stale or foreign ticket never reads `Granted`: A queued
/// and cancelled; B queues while the holder releases (B is granted or admitted)
/// and a third thread polls and cancels A's finished ticket and a forged id.
/// Neither is `Granted`/`PassedOn`, so no permit is released twice: B ends
/// holding the only permit, and one release empties the semaphore.
#[test]
fn semaphore_stale_ticket_never_reads_granted() {
    model(|| {
        let s = Arc::new(sem::<1>(1, 1));
        let a = holder_and_waiter(&s);
        assert_eq!(s.cancel_checked(a).expect(HONEST), CancelOutcome::Cancelled);
        let b = {
            let s = s.clone();
            thread::spawn(move || {
                s.acquire_raw_checked(Priority::Normal, true)
                    .expect(HONEST)
                    .unwrap()
            })
        };
        let stale = {
            let s = s.clone();
            thread::spawn(move || {
                let forged = seawall_core::Ticket { id: 0 };
                assert_ne!(
                    s.poll_checked(a).expect(HONEST),
                    TicketState::Granted,
                    "stale ticket granted"
                );
                assert_ne!(
                    s.cancel_checked(a).expect(HONEST),
                    CancelOutcome::PassedOn,
                    "stale cancel released"
                );
                assert_ne!(
                    s.poll_checked(forged).expect(HONEST),
                    TicketState::Granted,
                    "forged ticket granted"
                );
            })
        };
        assert!(s.release_checked().expect(HONEST));
        stale.join().unwrap();
        let b = b.join().unwrap();
        if let RawAdmission::Queued(t) = b {
            assert_eq!(
                s.poll_checked(t).expect(HONEST),
                TicketState::Granted,
                "B holds the permit"
            );
        }
        assert_eq!(
            s.snapshot(),
            SemaphoreSnapshot {
                active: 1,
                queued: 0
            }
        );
        assert!(s.release_checked().expect(HONEST));
        assert!(
            !s.release_checked().expect(HONEST),
            "one permit, released once"
        );
        assert_eq!(s.snapshot(), idle());
    });
}
