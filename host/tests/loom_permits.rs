//! loom models of the permit table (`src/permits.rs`): every interleaving of two or
//! three threads on a table of one or two slots. Run with
//! `RUSTFLAGS="--cfg loom" cargo test --release -p seawall-ffi --test loom_permits`
//! (`scripts/loom-host.sh`, which also checks each model fails on its mutant).
#![cfg(loom)]

use std::mem::MaybeUninit;

use loom::sync::Arc;
use loom::thread;
use seawall_host::permits::{PermitError, PermitTable, die_after, killed, set_claiming_pid};

fn table<const N: usize>() -> Arc<PermitTable<N>> {
    set_claiming_pid(1);
    let mut slot = MaybeUninit::uninit();
    PermitTable::init(&mut slot, 0x5a17);
    // SAFETY: init wrote every field.
    Arc::new(unsafe { slot.assume_init() })
}

/// Two racing uses of one permit: exactly one succeeds, the other is refused.
#[test]
fn permit_is_used_exactly_once() {
    loom::model(|| {
        let t = table::<2>();
        let id = t.claim(7).unwrap();
        let t2 = Arc::clone(&t);
        let other = thread::spawn(move || t2.release(id, 7));
        let mine = t.release(id, 7);
        let theirs = other.join().unwrap();
        assert!(
            mine.is_ok() != theirs.is_ok(),
            "both or neither use succeeded: {mine:?} {theirs:?}"
        );
        assert!(matches!(mine.or(theirs), Ok(())));
        assert_eq!(t.outstanding(), 0);
    });
}

/// Two claimers of a one-slot table: at most one gets it.
#[test]
fn slot_goes_to_one_claimer() {
    loom::model(|| {
        let t = table::<1>();
        let t2 = Arc::clone(&t);
        let other = thread::spawn(move || t2.claim(1));
        let mine = t.claim(2);
        let theirs = other.join().unwrap();
        assert!(
            mine.is_none() || theirs.is_none(),
            "one slot handed out twice: {mine:?} {theirs:?}"
        );
        assert_eq!(
            t.outstanding(),
            u64::from(mine.is_some() || theirs.is_some())
        );
    });
}

/// A permit used while its slot is reclaimed: the old permit works at most once,
/// never on the new claimer's slot, and the new permit still works once.
#[test]
fn reclaimed_slot_refuses_the_old_permit() {
    loom::model(|| {
        let t = table::<1>();
        let old = t.claim(1).unwrap();
        let (ta, tb) = (Arc::clone(&t), Arc::clone(&t));
        let user = thread::spawn(move || ta.release(old, 1));
        let claimer = thread::spawn(move || tb.claim(2));
        let again = t.release(old, 1);
        let first = user.join().unwrap();
        let new = claimer.join().unwrap();
        assert_eq!(
            u32::from(first.is_ok()) + u32::from(again.is_ok()),
            1,
            "the old permit must work exactly once: {first:?} {again:?}"
        );
        assert!(matches!(first.and(again), Err(PermitError::AlreadyUsed)));
        if let Some(new) = new {
            assert_ne!(new, old);
            assert_eq!(t.release(new, 2), Ok(()));
            assert_eq!(t.release(new, 2), Err(PermitError::AlreadyUsed));
        }
        assert_eq!(t.outstanding(), 0);
    });
}

/// The owner's own use racing a reclaim (the owner declared dead): exactly one
/// frees the slot, and the permit is gone either way.
#[test]
fn reclaim_and_a_use_free_a_slot_once() {
    loom::model(|| {
        let t = table::<1>();
        let id = t.claim(3).unwrap();
        let t2 = Arc::clone(&t);
        let sweeper = thread::spawn(move || t2.reclaim(|_| false, |e| assert_eq!(e, 3)));
        let used = t.release(id, 3);
        let reclaimed = sweeper.join().unwrap();
        assert_eq!(
            u64::from(used.is_ok()) + reclaimed,
            1,
            "use {used:?}, reclaimed {reclaimed}"
        );
        assert_eq!(t.outstanding(), 0);
    });
}

/// A reclaim racing a new claim of a free slot never takes the live claim,
/// though the slot's previous holder (here: a dead process) left it.
#[test]
fn reclaim_never_takes_a_claim_in_progress() {
    const DEAD: u32 = 999;
    const LIVE: u32 = 1;
    loom::model(|| {
        let t = table::<1>();
        set_claiming_pid(DEAD);
        let first = t.claim(1).unwrap();
        t.release(first, 1).unwrap();
        set_claiming_pid(LIVE);
        let t2 = Arc::clone(&t);
        let sweeper = thread::spawn(move || t2.reclaim(|pid| pid != DEAD, |_| {}));
        let second = t.claim(2).unwrap();
        let reclaimed = sweeper.join().unwrap();
        assert_eq!(reclaimed, 0, "took a live claim");
        assert_eq!(t.release(second, 2), Ok(()));
    });
}

/// A process killed after any step of a claim and a use (`k` steps) next to a
/// live one: every slot still taken once the live one is done names the dead
/// process, so reclaim can tell whose it is; the held ones it frees.
#[test]
fn a_killed_claimers_slot_always_names_it() {
    const DEAD: u32 = 999;
    for k in 0..=2 {
        loom::model(move || {
            let t = table::<2>();
            let t1 = Arc::clone(&t);
            let doomed = thread::spawn(move || {
                set_claiming_pid(DEAD);
                die_after(Some(k));
                if let Some(id) = t1.claim(4)
                    && !killed()
                {
                    let _ = t1.release(id, 4);
                }
            });
            if let Some(id) = t.claim(5) {
                assert_eq!(t.release(id, 5), Ok(()));
            }
            doomed.join().unwrap();
            assert_eq!(
                t.outstanding(),
                t.taken_by(DEAD),
                "a slot taken names nobody that reclaim could find"
            );
            t.reclaim(|pid| pid != DEAD, |e| assert_eq!(e, 4));
            assert!(t.outstanding() <= 1, "a held permit of the dead was left");
        });
    }
}
