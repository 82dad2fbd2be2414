//! loom models of the semaphore's holder protocol (`src/holders.rs`,
//! `src/semaphore/cell.rs`): a core semaphore of one permit and one queue slot
//! next to a holder table of two slots, every interleaving of two threads. Run with
//! `RUSTFLAGS="--cfg loom" cargo test --release -p seawall-ffi --test loom_holders`
//! (`scripts/loom-host.sh`, which also checks each model fails on its mutant).
#![cfg(loom)]

use std::mem::MaybeUninit;

use loom::sync::Arc;
use loom::thread;
use seawall_core::{Priority, SemaphoreConfig};
use seawall_host::heal::{HEAL_INTERVAL_NS, HealGate};
use seawall_host::holders::{HolderError, die_after, killed, set_claiming_pid};
use seawall_host::semaphore::{Acquired, Cancelled, Polled, SemaphoreCell};

type Cell = SemaphoreCell<1, 2>;

const LIVE: u32 = 1;
const DEAD: u32 = 999;

/// One permit, one queue slot.
fn cell() -> Arc<Cell> {
    set_claiming_pid(LIVE);
    let cfg = SemaphoreConfig {
        max_concurrent: 1,
        max_queue: 1,
        ..SemaphoreConfig::DEFAULT
    };
    let mut slot = MaybeUninit::uninit();
    Cell::init(&mut slot, &cfg, 0x5a17).unwrap();
    // SAFETY: init returned Ok, so it wrote every field.
    Arc::new(unsafe { slot.assume_init() })
}

/// Nothing held, nothing queued, no slot in use.
fn assert_idle(c: &Cell) {
    let s = c.snapshot();
    assert_eq!((s.active, s.queued), (0, 0), "a permit or waiter leaked");
    assert_eq!(c.outstanding(), (0, 0), "a holder slot leaked");
}

/// Two racing releases of one permit: exactly one succeeds, and the core gives
/// exactly one permit back.
#[test]
fn semaphore_permit_is_released_exactly_once() {
    loom::model(|| {
        let c = cell();
        let p = c.try_acquire(Priority::Normal).unwrap();
        let c2 = Arc::clone(&c);
        let other = thread::spawn(move || c2.release(p));
        let mine = c.release(p);
        let theirs = other.join().unwrap();
        assert!(
            mine.is_ok() != theirs.is_ok(),
            "both or neither release succeeded: {mine:?} {theirs:?}"
        );
        assert_eq!(mine.and(theirs), Err(HolderError::AlreadyUsed));
        assert_idle(&c);
    });
}

/// A holder releases (handing its permit to the waiter) and then cancels the
/// ticket, while the waiter polls it (and cancels it if still waiting): the
/// ticket ends exactly once — granted to the poller, or cancelled by one of the
/// two — and no permit or slot is left.
#[test]
fn ticket_is_granted_or_cancelled_never_both() {
    loom::model(|| {
        let c = cell();
        let p = c.try_acquire(Priority::Normal).unwrap();
        let Ok(Acquired::Queued(t)) = c.acquire_or_enqueue(Priority::Normal) else {
            panic!("the second acquire must queue");
        };
        let c2 = Arc::clone(&c);
        let holder = thread::spawn(move || {
            c2.release(p).unwrap();
            c2.cancel(t)
        });
        let (granted, mine) = match c.poll(t) {
            Ok(Polled::Granted(permit)) => {
                assert_eq!(c.release(permit), Ok(()), "a granted permit releases once");
                (true, None)
            }
            Ok(Polled::Waiting) => (false, Some(c.cancel(t))),
            Err(e) => {
                assert_eq!(e, HolderError::UnknownTicket);
                (false, None)
            }
        };
        let theirs = holder.join().unwrap();
        let ends = u32::from(granted)
            + u32::from(theirs.is_ok())
            + u32::from(mine.is_some_and(|m| m.is_ok()));
        assert_eq!(
            ends, 1,
            "granted {granted}, holder's cancel {theirs:?}, waiter's cancel {mine:?}"
        );
        for r in [Some(theirs), mine].into_iter().flatten() {
            assert!(matches!(
                r,
                Ok(Cancelled::Cancelled | Cancelled::PassedOn) | Err(HolderError::UnknownTicket)
            ));
        }
        assert_idle(&c);
    });
}

/// The owner's release racing a reclaim that believes the owner dead: exactly
/// one frees the slot, and the core gives the permit back once.
#[test]
fn reclaim_and_a_release_free_a_holder_once() {
    loom::model(|| {
        let c = cell();
        set_claiming_pid(DEAD);
        let p = c.try_acquire(Priority::Normal).unwrap();
        // The permit is given back by a live process (ids are plain data).
        set_claiming_pid(LIVE);
        let c2 = Arc::clone(&c);
        let sweeper = thread::spawn(move || c2.reclaim(|pid| pid != DEAD));
        let released = c.release(p);
        let (permits, tickets) = sweeper.join().unwrap();
        assert_eq!(tickets, 0);
        assert_eq!(
            u64::from(released.is_ok()) + permits,
            1,
            "release {released:?}, reclaimed {permits}"
        );
        assert_idle(&c);
    });
}

/// A dead waiter's ticket is reclaimed while a live holder's release hands it the
/// permit: the permit is passed on (or never reaches it), nothing leaks.
#[test]
fn dead_waiter_is_reclaimed_while_a_release_grants_it() {
    loom::model(|| {
        let c = cell();
        let p = c.try_acquire(Priority::Normal).unwrap();
        set_claiming_pid(DEAD);
        let Ok(Acquired::Queued(_)) = c.acquire_or_enqueue(Priority::Normal) else {
            panic!("the second acquire must queue");
        };
        set_claiming_pid(LIVE);
        let c2 = Arc::clone(&c);
        let sweeper = thread::spawn(move || c2.reclaim(|pid| pid != DEAD));
        assert_eq!(c.release(p), Ok(()));
        assert_eq!(sweeper.join().unwrap(), (0, 1));
        assert_idle(&c);
    });
}

/// A live process's acquire and release; while it holds its permit the core
/// counts it (a reclaim that gave it back would leave `active` at 0 here).
fn live_round(c: &Cell) {
    if let Ok(p) = c.try_acquire(Priority::Normal) {
        assert_eq!(c.snapshot().active, 1, "a held permit is not counted");
        assert_eq!(c.release(p), Ok(()));
    }
}

/// A process killed after any step of an acquire and a release (`k` steps),
/// while a live one acquires and releases: a reclaim racing the live one, then
/// one after it, leave no permit, no waiter and no slot.
#[test]
fn acquirer_killed_after_any_step_is_reclaimed() {
    for k in 0..=4 {
        loom::model(move || {
            let c = cell();
            let c1 = Arc::clone(&c);
            let doomed = thread::spawn(move || {
                set_claiming_pid(DEAD);
                die_after(Some(k));
                if let Ok(p) = c1.try_acquire(Priority::Normal)
                    && !killed()
                {
                    let _ = c1.release(p);
                }
            });
            let c2 = Arc::clone(&c);
            let live = thread::spawn(move || live_round(&c2));
            doomed.join().unwrap();
            c.reclaim(|pid| pid != DEAD);
            live.join().unwrap();
            c.reclaim(|pid| pid != DEAD);
            assert_idle(&c);
        });
    }
}

/// A process killed between its claim and the core's answer leaves a step the
/// table cannot settle alone; the count that settles it, racing a live
/// acquire, never gives back the live holder's permit.
#[test]
fn recount_never_takes_a_live_holders_permit() {
    loom::model(|| {
        let c = cell();
        set_claiming_pid(DEAD);
        die_after(Some(0));
        assert!(c.try_acquire(Priority::Normal).is_err());
        assert!(killed());
        set_claiming_pid(LIVE);
        die_after(None);
        let c2 = Arc::clone(&c);
        let live = thread::spawn(move || live_round(&c2));
        c.reclaim(|pid| pid != DEAD);
        live.join().unwrap();
        c.reclaim(|pid| pid != DEAD);
        assert_idle(&c);
    });
}

/// A live process stopped between the core's admission and its slot's `held`
/// (a slow or stopped process, not a dead one) next to a dead one's claim: the
/// count must not settle the dead step while the live one is in progress, or
/// the live admission would be taken for the dead one and given back.
#[test]
fn recount_waits_for_a_live_step_in_progress() {
    loom::model(|| {
        let c = cell();
        set_claiming_pid(DEAD);
        die_after(Some(0));
        assert!(c.try_acquire(Priority::Normal).is_err());
        set_claiming_pid(LIVE);
        // Stops after its claim and the core's admission.
        die_after(Some(1));
        assert!(c.try_acquire(Priority::Normal).is_err());
        die_after(None);
        c.reclaim(|pid| pid != DEAD);
        assert_eq!(
            c.snapshot().active,
            1,
            "the stopped process's admission was given back"
        );
        assert_eq!(
            c.outstanding(),
            (2, 0),
            "the live step keeps its slot, the dead one waits for a quiet moment"
        );
    });
}

/// A waiter killed after any step (`k`) of its wait — its claim, inside the
/// core's enqueue (a place taken, a slot installed and not settled), inside the
/// acknowledgement of its grant, inside a cancel that meets a grant — while a
/// live holder hands it the one permit: once every process is gone, one
/// reclaim leaves no permit, no place, no queue slot and no holder slot.
#[test]
fn waiter_killed_inside_the_core_is_reclaimed() {
    for k in 0..=10 {
        loom::model(move || {
            let c = cell();
            let p = c.try_acquire(Priority::Normal).unwrap();
            let c1 = Arc::clone(&c);
            let doomed = thread::spawn(move || {
                set_claiming_pid(DEAD);
                die_after(Some(k));
                let Ok(Acquired::Queued(t)) = c1.acquire_or_enqueue(Priority::Normal) else {
                    return;
                };
                if killed() {
                    return;
                }
                match c1.poll(t) {
                    Ok(Polled::Granted(permit)) if !killed() => {
                        let _ = c1.release(permit);
                    }
                    Ok(Polled::Waiting) if !killed() => {
                        let _ = c1.cancel(t);
                    }
                    _ => {}
                }
            });
            let c2 = Arc::clone(&c);
            let live = thread::spawn(move || assert_eq!(c2.release(p), Ok(())));
            doomed.join().unwrap();
            live.join().unwrap();
            c.reclaim(|pid| pid != DEAD);
            assert_idle(&c);
        });
    }
}

/// Two callers of two processes find a look for dead holders due at the same
/// instant: exactly one of them looks (one scan per region per interval).
#[test]
fn heal_gate_gives_one_look_to_racing_callers() {
    loom::model(|| {
        let gate = Arc::new(HealGate::new(0));
        let g2 = Arc::clone(&gate);
        let other = thread::spawn(move || g2.due(HEAL_INTERVAL_NS));
        let mine = gate.due(HEAL_INTERVAL_NS);
        let theirs = other.join().unwrap();
        assert_eq!(
            u32::from(mine) + u32::from(theirs),
            1,
            "looks: {mine} {theirs}"
        );
    });
}

/// A live holder's release racing a reclaim when nobody is dead: the reclaim
/// gives back nothing, whatever moment of the release it meets (a release
/// frees its slot only after the core took the permit back, so no moment shows
/// a permit the table does not account for).
#[test]
fn reclaim_never_gives_back_a_live_release_in_progress() {
    loom::model(|| {
        let c = cell();
        let p = c.try_acquire(Priority::Normal).unwrap();
        let c2 = Arc::clone(&c);
        let sweeper = thread::spawn(move || c2.reclaim(|_| true));
        assert_eq!(c.release(p), Ok(()));
        assert_eq!(
            sweeper.join().unwrap(),
            (0, 0),
            "a reclaim gave back a live holder's permit"
        );
        assert_idle(&c);
    });
}
