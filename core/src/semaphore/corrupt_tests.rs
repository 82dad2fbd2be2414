//! A semaphore whose words hold what its protocol never writes (memory shared
//! with a process that wrote garbage): every operation stops with `Corrupt`
//! instead of searching or retrying for ever.
use super::*;
use crate::corrupt::Corrupt;

/// Every permit held, nobody counted in the queue, and every slot `WAITING`:
/// an arrival is admitted to the queue and finds no free slot.
fn all_slots_waiting<const Q: usize>() -> Semaphore<Q> {
    let s = Semaphore::<Q>::new(SemaphoreConfig {
        max_concurrent: 2,
        max_queue: Q as u32,
        ..SemaphoreConfig::DEFAULT
    })
    .unwrap();
    s.state.store(
        Word {
            active: 2,
            queued: 0,
            seq: 0,
        }
        .pack(),
        Ordering::Relaxed,
    );
    for (i, slot) in s.slots.iter().enumerate() {
        slot.store(slot_word(i as u32, 1, word::WAITING), Ordering::Relaxed);
    }
    s
}

#[test]
fn an_arrival_that_finds_every_slot_waiting_is_told_corrupt() {
    let s = all_slots_waiting::<8>();
    assert_eq!(s.acquire_raw_checked(Priority::Normal, true), Err(Corrupt));
    // The plain form refuses as full, with the occupancy it read (the arrival
    // had counted itself in `queued` before it found no slot).
    let s = all_slots_waiting::<8>();
    assert_eq!(
        s.acquire_raw(Priority::Normal, true),
        Err(Rejected {
            reason: RejectReason::Full,
            active: 2,
            queued: 1,
        })
    );
}

#[test]
fn an_arrival_without_waiting_needs_no_slot() {
    // Not waiting, the arrival never searches: refused as full, not corrupt.
    let s = all_slots_waiting::<8>();
    assert_eq!(
        s.acquire_raw_checked(Priority::Normal, false),
        Ok(Err(Rejected {
            reason: RejectReason::Full,
            active: 2,
            queued: 0,
        }))
    );
}

#[test]
fn the_slot_search_reads_at_most_max_64n_or_2_pow_16_slots() {
    // Worked by hand: 2^16 / n passes while that is above 64, else 64.
    assert_eq!(Semaphore::<1>::install_passes(1), 65536);
    assert_eq!(Semaphore::<256>::install_passes(256), 256);
    assert_eq!(Semaphore::<1024>::install_passes(1024), 64);
    assert_eq!(Semaphore::<16384>::install_passes(16384), 64);
    assert_eq!(Semaphore::<65536>::install_passes(65536), 64);
}
