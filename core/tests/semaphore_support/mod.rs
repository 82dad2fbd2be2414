#![allow(
    dead_code,
    reason = "each test file that includes this module uses a part of it"
)]

//! What the semaphore tests share: a semaphore of a given size, a waiter that must
//! queue, a caller that must be admitted, and a snapshot written short.

use seawall_core::{Priority, RawAdmission, Semaphore, SemaphoreConfig, SemaphoreSnapshot, Ticket};

pub fn sem<const Q: usize>(max_concurrent: u32, max_queue: u32) -> Semaphore<Q> {
    Semaphore::new(SemaphoreConfig {
        max_concurrent,
        max_queue,
        ..SemaphoreConfig::DEFAULT
    })
    .unwrap()
}

pub fn queue<const Q: usize>(s: &Semaphore<Q>) -> Ticket {
    match s.acquire_raw(Priority::Normal, true) {
        Ok(RawAdmission::Queued(t)) => t,
        other => panic!("expected a place in the queue, got {other:?}"),
    }
}

pub fn admitted<const Q: usize>(s: &Semaphore<Q>) {
    assert_eq!(
        s.acquire_raw(Priority::Normal, false),
        Ok(RawAdmission::Admitted)
    );
}

pub fn snap(active: u32, queued: u32) -> SemaphoreSnapshot {
    SemaphoreSnapshot { active, queued }
}
