//! Counters across their wrap, without 2²⁷ real steps: the semaphore starts
//! with `seq` (the arrival numbers) and slot generations just below the wrap.
use super::*;

const SEQ_WRAP: u32 = 1 << word::SEQ_BITS;

fn near_wrap<const Q: usize>(
    max_concurrent: u32,
    max_queue: u32,
    arrival: u32,
    generation: u32,
) -> Semaphore<Q> {
    let s = Semaphore::<Q>::new(SemaphoreConfig {
        max_concurrent,
        max_queue,
        ..SemaphoreConfig::DEFAULT
    })
    .unwrap();
    s.state.store(
        Word {
            active: 0,
            queued: 0,
            seq: arrival,
        }
        .pack(),
        Ordering::Relaxed,
    );
    for slot in &s.slots {
        slot.store(slot_word(0, generation, FREE), Ordering::Relaxed);
    }
    s
}

fn queued<const Q: usize>(s: &Semaphore<Q>) -> Ticket {
    match s.acquire_raw(Priority::Normal, true) {
        Ok(RawAdmission::Queued(t)) => t,
        other => panic!("expected to queue, got {other:?}"),
    }
}

/// Waiters whose arrivals straddle the 2²⁷ wrap of `seq` are granted in
/// arrival order, one permit each, and `release` returns (no phantom grant, no
/// spin).
#[test]
fn fifo_across_the_arrival_wrap() {
    let s = near_wrap::<4>(1, 4, SEQ_WRAP - 3, 0);
    assert_eq!(
        s.acquire_raw(Priority::Normal, false),
        Ok(RawAdmission::Admitted)
    );
    // Each waiter bumps `seq` twice (arrival, settle): arrivals 2²⁷ − 3,
    // 2²⁷ − 1, 1, 3.
    let t: [Ticket; 4] = core::array::from_fn(|_| queued(&s));
    let arrivals =
        t.map(|t| word::slot_arrival(s.slots[t.id as usize % 4].load(Ordering::Relaxed)));
    assert_eq!(arrivals, [SEQ_WRAP - 3, SEQ_WRAP - 1, 1, 3]);
    assert_eq!(
        s.snapshot(),
        SemaphoreSnapshot {
            active: 1,
            queued: 4
        }
    );
    for (k, want) in t.iter().enumerate() {
        assert!(s.release(), "release {k}");
        assert_eq!(s.poll(*want), TicketState::Granted, "ticket {k} is next");
        for later in &t[k + 1..] {
            assert_eq!(s.poll(*later), TicketState::Waiting);
        }
    }
    assert!(s.release());
    assert_eq!(s.snapshot(), SemaphoreSnapshot::default());
    assert!(!s.release(), "no permit is held");
}

/// A ring of one slot whose generation wraps: each ticket names its own wait,
/// cancelled and granted ones are told apart from the live one.
#[test]
fn slot_generation_wrap_keeps_tickets_apart() {
    let s = near_wrap::<1>(1, 1, SEQ_WRAP - 3, (1 << GEN_BITS) - 2);
    assert_eq!(
        s.acquire_raw(Priority::Normal, false),
        Ok(RawAdmission::Admitted)
    );
    let mut prev: Option<Ticket> = None;
    for k in 0..6 {
        let t = queued(&s);
        assert_eq!(s.poll(t), TicketState::Waiting, "round {k}");
        if let Some(p) = prev {
            assert_ne!(p, t, "round {k}: a ticket names one wait");
            // The previous wait was granted, acknowledged and its slot
            // reused: finished, never mistaken for the live wait.
            assert_eq!(s.poll(p), TicketState::Unknown, "round {k}");
            assert_eq!(s.cancel(p), CancelOutcome::Unknown, "round {k}");
        }
        if k % 2 == 0 {
            assert!(s.release(), "round {k}: hand-off");
            assert_eq!(s.poll(t), TicketState::Granted);
            prev = Some(t);
        } else {
            assert_eq!(s.cancel(t), CancelOutcome::Cancelled);
            assert_eq!(s.cancel(t), CancelOutcome::Unknown, "cancelled once");
            prev = None;
        }
        assert_eq!(
            s.snapshot(),
            SemaphoreSnapshot {
                active: 1,
                queued: 0
            }
        );
    }
    assert!(s.release());
    assert_eq!(s.snapshot(), SemaphoreSnapshot::default());
}

/// Ticket generations of a large ring (18 bits left for the generation) wrap
/// too: the wait after the wrap is not mistaken for the one before.
#[test]
fn ticket_generation_wrap_in_a_large_ring() {
    let s = near_wrap::<16384>(1, 1, 7, (1 << 18) - 1);
    assert_eq!(
        s.acquire_raw(Priority::Normal, false),
        Ok(RawAdmission::Admitted)
    );
    let a = queued(&s); // slot generation 2¹⁸: ticket generation 0
    assert!(s.release());
    assert_eq!(s.poll(a), TicketState::Granted);
    let b = queued(&s);
    assert_ne!(a, b);
    assert_eq!(s.poll(b), TicketState::Waiting);
    assert_eq!(s.poll(a), TicketState::Unknown, "a is finished");
    assert_eq!(s.cancel(b), CancelOutcome::Cancelled);
    assert!(s.release());
    assert_eq!(s.snapshot(), SemaphoreSnapshot::default());
}
