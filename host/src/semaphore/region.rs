//! The tracked semaphore's cell as a shareable region: its sizes, its
//! agreement (what processes sharing it must agree on) and its layout id.

use core::mem::MaybeUninit;

use seawall_core::{ConfigError, Field, PriorityShares, SemaphoreConfig};

use super::cell::SemaphoreCell;
use crate::entropy::entropy;
use crate::shared::{Agreement, Shareable};

/// Longest wait queue (`max_queue`) of a tracked semaphore (local or shared),
/// and number of the core's wait slots in its cell.
pub const SEMAPHORE_MAX_QUEUE: usize = 1024;
/// Most permits (`max_concurrent`) of a tracked semaphore.
pub const SEMAPHORE_MAX_CONCURRENT: usize = 4096;
/// Holder slots: every permit and every ticket at once.
pub const SEMAPHORE_HOLDER_SLOTS: usize = SEMAPHORE_MAX_CONCURRENT + SEMAPHORE_MAX_QUEUE;

/// The cell behind every tracked [`super::Semaphore`].
pub type Cell = SemaphoreCell<SEMAPHORE_MAX_QUEUE, SEMAPHORE_HOLDER_SLOTS>;

/// What every process sharing a semaphore must agree on: every field.
#[must_use]
pub fn semaphore_agreement(c: &SemaphoreConfig) -> Agreement {
    let SemaphoreConfig {
        max_concurrent,
        max_queue,
        shares:
            PriorityShares {
                critical,
                high,
                normal,
                low,
            },
    } = *c;
    Agreement::new(b"semaphor")
        .value(Field::MaxConcurrent, u64::from(max_concurrent))
        .value(Field::MaxQueue, u64::from(max_queue))
        .field(
            Field::PriorityShares,
            &[critical.ppm(), high.ppm(), normal.ppm(), low.ppm()],
        )
}

// SAFETY: `SemaphoreCell` is repr(C) of a core `Semaphore` (repr(C),
// pointer-free, configuration and limits written only by `new`, the rest
// atomics), a `HolderTable` (a salt written only by `init`, then atomics) and
// an atomic release counter (any value valid); none needs Drop.
unsafe impl Shareable for Cell {
    const FAMILY: &'static str = "semaphore";
    // 0x0202: holder slots name their process in the word that claims them;
    // 0x0203: the release counter waiters sleep on, after the holder table;
    // 0x0204: the core's state word is 64 bits (active, queued, seq);
    // 0x0205: holder slots name an owner id (pid and start-time tag); the
    // heal gate and the lifetime totals follow the sleepers.
    const LAYOUT_ID: u32 = 0x0205;
    const DESCRIPTION: &'static str = "semaphore (1024 queue slots, 5120 holders)";
    type Config = SemaphoreConfig;
    fn agreement(config: &SemaphoreConfig) -> Agreement {
        semaphore_agreement(config)
    }
    fn config(&self) -> SemaphoreConfig {
        SemaphoreCell::config(self)
    }
    fn init(slot: &mut MaybeUninit<Self>, config: &SemaphoreConfig) -> Result<(), ConfigError> {
        Self::init(slot, config, entropy())
    }
}
