//! The largest counts the semaphore's 64-bit state word holds: every permit of
//! the largest `max_concurrent` (2²⁰ − 1) and every waiter of the largest
//! queue (2¹⁶) are counted exactly, one more is refused, and the counts come
//! back to zero. A count that spilled into its neighbouring field would show
//! as a wrong `queued` or `active` here.

use seawall_core::{
    ConfigError, Field, Priority, Problem, RawAdmission, RejectReason, Semaphore, SemaphoreConfig,
    SemaphoreRejected as Rejected, TicketState,
};

mod semaphore_support;
use semaphore_support::{admitted, queue, sem, snap};

const MAX: u32 = (1 << 20) - 1;

#[test]
fn max_concurrent_above_what_the_state_word_counts_is_a_range_error() {
    assert_eq!(SemaphoreConfig::MAX_CONCURRENT, MAX);
    let too_many = SemaphoreConfig {
        max_concurrent: MAX + 1,
        ..SemaphoreConfig::DEFAULT
    };
    assert_eq!(
        Semaphore::<4>::new(too_many).unwrap_err(),
        ConfigError {
            field: Field::MaxConcurrent,
            problem: Problem::OutOfRange {
                min: 1,
                max: 1_048_575
            },
        }
    );
    assert_eq!(
        Semaphore::<4>::new(too_many).unwrap_err().to_string(),
        "invalid semaphore.max_concurrent: must be between 1 and 1048575"
    );
    let u32_max = SemaphoreConfig {
        max_concurrent: u32::MAX,
        ..SemaphoreConfig::DEFAULT
    };
    assert!(Semaphore::<4>::new(u32_max).is_err());
}

#[test]
fn every_permit_of_the_largest_max_concurrent_is_counted() {
    let s = sem::<4>(MAX, 1);
    for _ in 0..MAX {
        admitted(&s);
    }
    assert_eq!(s.snapshot(), snap(MAX, 0));
    let full = Rejected {
        reason: RejectReason::Full,
        active: MAX,
        queued: 0,
    };
    assert_eq!(s.acquire_raw(Priority::Normal, false), Err(full));
    // The one waiter the queue holds, then a refusal.
    let t = queue(&s);
    assert_eq!(s.snapshot(), snap(MAX, 1));
    assert_eq!(
        s.acquire_raw(Priority::Normal, true),
        Err(Rejected { queued: 1, ..full })
    );
    assert!(s.release());
    assert_eq!(s.poll(t), TicketState::Granted);
    assert_eq!(s.snapshot(), snap(MAX, 0));
    for _ in 0..MAX {
        assert!(s.release());
    }
    assert_eq!(s.snapshot(), snap(0, 0));
    assert!(!s.release(), "no permit is held");
}

#[test]
fn every_waiter_of_the_largest_queue_is_counted() {
    const Q: usize = 1 << 16;
    // 512 KiB of slots: built on a thread with room for it.
    std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(|| {
            let s = Box::new(sem::<Q>(1, Q as u32));
            admitted(&s);
            let tickets: Vec<_> = (0..Q).map(|_| queue(&s)).collect();
            assert_eq!(s.snapshot(), snap(1, Q as u32));
            assert_eq!(
                s.acquire_raw(Priority::Normal, true),
                Err(Rejected {
                    reason: RejectReason::Full,
                    active: 1,
                    queued: Q as u32,
                })
            );
            // FIFO: the first and the last waiter, in their order.
            assert!(s.release());
            assert_eq!(s.poll(tickets[0]), TicketState::Granted);
            assert_eq!(s.poll(tickets[Q - 1]), TicketState::Waiting);
            assert_eq!(s.snapshot(), snap(1, Q as u32 - 1));
            for t in &tickets[1..] {
                assert!(s.cancel(*t) != seawall_core::CancelOutcome::Unknown);
            }
            assert_eq!(s.snapshot(), snap(1, 0));
            assert!(s.release());
            assert_eq!(
                s.acquire_raw(Priority::Normal, false),
                Ok(RawAdmission::Admitted)
            );
        })
        .unwrap()
        .join()
        .unwrap();
}
