//! proptest: random single-thread sequences of acquire / wait / cancel / release
//! through the semaphore and the FIFO reference model (`tests/model/semaphore.rs`),
//! comparing every admission, every grant (and its order) and the occupancy.

mod model;

use model::semaphore::{MAcquire, MSemaphore};
use proptest::prelude::*;
use seawall_core::{
    CancelOutcome, Priority, PriorityShares, Ratio, RawAdmission, RejectReason, Semaphore,
    SemaphoreConfig, Ticket, TicketState,
};

#[derive(Clone, Debug)]
enum Op {
    Acquire(usize, bool),
    Release,
    Cancel(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => (0usize..4, any::<bool>()).prop_map(|(p, w)| Op::Acquire(p, w)),
        4 => Just(Op::Release),
        2 => any::<usize>().prop_map(Op::Cancel),
    ]
}

fn shares() -> impl Strategy<Value = [u64; 4]> {
    prop_oneof![
        Just([100, 100, 100, 100]),
        Just([100, 80, 50, 20]),
        Just([100, 75, 50, 25]),
        [0u64..=100, 0u64..=100, 0u64..=100, 0u64..=100],
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1024, ..ProptestConfig::default() })]

    #[test]
    fn semaphore_matches_model(
        max in 1u32..6,
        max_queue in 0u32..=4,
        sh in shares(),
        ops in proptest::collection::vec(op(), 1..120),
    ) {
        let pct = |p: u64| Ratio::from_percent(p);
        let s: Semaphore<4> = Semaphore::new(SemaphoreConfig {
            max_concurrent: max,
            max_queue,
            shares: PriorityShares {
                critical: pct(sh[0]),
                high: pct(sh[1]),
                normal: pct(sh[2]),
                low: pct(sh[3]),
            },
        })
        .unwrap();
        let mut m = MSemaphore::new(u64::from(max), u64::from(max_queue), sh, 4);
        let mut holders = 0usize;
        // waiters in arrival order: (model id, core ticket)
        let mut waiting: Vec<(u64, Ticket)> = Vec::new();
        for (i, op) in ops.iter().enumerate() {
            match *op {
                Op::Acquire(p, wait) => {
                    let got = s.acquire_raw(Priority::ALL[p], wait);
                    let want = m.acquire(p, wait);
                    match (got, want) {
                        (Ok(RawAdmission::Admitted), MAcquire::Admitted) => holders += 1,
                        (Ok(RawAdmission::Queued(t)), MAcquire::Queued(id)) => waiting.push((id, t)),
                        (Err(r), MAcquire::Shed) => prop_assert_eq!(r.reason, RejectReason::Shed),
                        (Err(r), MAcquire::Full) => prop_assert_eq!(r.reason, RejectReason::Full),
                        (g, w) => prop_assert!(false, "op {} {:?}: core {:?}, model {:?}", i, op, g, w),
                    }
                    if let Err(r) = got {
                        prop_assert_eq!((u64::from(r.active), r.queued as usize), (m.active, m.queued() as usize));
                    }
                }
                Op::Release if holders == 0 => prop_assert!(!s.release(), "nothing to release"),
                Op::Release => {
                    holders -= 1;
                    prop_assert!(s.release());
                    m.release();
                }
                Op::Cancel(_) if waiting.is_empty() => {}
                Op::Cancel(k) => {
                    let (id, t) = waiting.remove(k % waiting.len());
                    prop_assert_eq!(s.cancel(t), CancelOutcome::Cancelled);
                    prop_assert!(m.cancel(id));
                }
            }
            // Grants since the last op, in order.
            let mut granted = Vec::new();
            waiting.retain(|(id, t)| match s.poll(*t) {
                TicketState::Granted => {
                    granted.push(*id);
                    false
                }
                _ => true,
            });
            holders += granted.len();
            prop_assert_eq!(&granted, &m.granted, "grants after op {} {:?}", i, op);
            m.granted.clear();
            let snap = s.snapshot();
            prop_assert_eq!(
                (u64::from(snap.active), snap.queued as usize),
                (m.active, m.queued() as usize),
                "occupancy after op {} {:?}", i, op
            );
        }
        // Everyone leaves: nothing leaks.
        for (_, t) in waiting {
            prop_assert_eq!(s.cancel(t), CancelOutcome::Cancelled);
        }
        for _ in 0..holders {
            prop_assert!(s.release());
        }
        let snap = s.snapshot();
        prop_assert_eq!((snap.active, snap.queued), (0, 0));
    }
}
