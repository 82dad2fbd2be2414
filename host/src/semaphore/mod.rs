//! The permit semaphore (bulkhead, DESIGN §5) as C and the bindings see it:
//! permits and queue tickets are single-use plain values, and the semaphore can
//! live in this process or in a region shared by every process of the host.
//!
//! [`Semaphore`] is the one bulkhead handle of the C ABI and both bindings.
//! Behind a tracked one (local, or shared) is a core [`seawall_core::Semaphore`]
//! with a queue ring of [`SEMAPHORE_MAX_QUEUE`] tickets next to a holder table
//! ([`crate::holders`]) of `SEMAPHORE_MAX_CONCURRENT + SEMAPHORE_MAX_QUEUE`
//! slots ([`cell`] says why that is always enough). Behind an untracked local
//! one ([`Semaphore::local`], what the bindings use for a local bulkhead) is the
//! core semaphore alone, over the ring [`ring_size`] picks: one rule for every
//! local queue, up to [`LOCAL_MAX_QUEUE`] waiters.
//!
//! A thread that waits sleeps on the semaphore's release counter (a futex on
//! Linux, in the shared region for a shared semaphore: a release in another
//! process wakes it, see `wake`); runtimes with an event loop, which cannot
//! sleep, look at their tickets every [`SHARED_WAIT_POLL`].
//!
//! ```no_run
//! use std::time::Duration;
//! use seawall_host::semaphore::{Acquired, Polled, Semaphore};
//! use seawall_host::shared::OpenOptions;
//! use seawall_core::{Priority, SemaphoreConfig};
//!
//! let cfg = SemaphoreConfig { max_concurrent: 8, max_queue: 32, ..SemaphoreConfig::DEFAULT };
//! let sem = Semaphore::open_shared("payments", &cfg, &OpenOptions::default())?;
//! // A host runtime: acquire, or wait with a ticket polled from its event loop.
//! match sem.acquire_or_enqueue(Priority::Normal) {
//!     Ok(Acquired::Admitted(permit)) => { /* call */ sem.release(permit).unwrap(); }
//!     Ok(Acquired::Queued(ticket)) => match sem.poll(ticket).unwrap() {
//!         Polled::Granted(permit) => { /* call */ sem.release(permit).unwrap(); }
//!         Polled::Waiting => { /* poll again later, or */ sem.cancel(ticket).unwrap(); }
//!     },
//!     Err(rejected) => { /* shed or full */ }
//! }
//! // A thread that may block: at most 50 ms in the queue.
//! if let Ok(permit) = sem.acquire_timeout(Priority::High, Some(Duration::from_millis(50))) {
//!     sem.release(permit).unwrap();
//! }
//! # Ok::<(), seawall_host::shared::RegionError>(())
//! ```

pub mod cell;
mod totals;

pub use cell::{AcquireError, Acquired, Cancelled, Permit, Polled, SemaphoreCell, Ticket};
pub use totals::{BulkheadTotals, GaveUp};

#[cfg(not(loom))]
mod handle;
#[cfg(not(loom))]
mod region;
#[cfg(not(loom))]
mod ring;
#[cfg(not(loom))]
mod wait;
#[cfg(not(loom))]
mod wake;

#[cfg(not(loom))]
pub use handle::{ReleaseWaiter, Semaphore, Snapshot};
#[cfg(not(loom))]
pub use region::{
    Cell, SEMAPHORE_HOLDER_SLOTS, SEMAPHORE_MAX_CONCURRENT, SEMAPHORE_MAX_QUEUE,
    semaphore_agreement,
};
#[cfg(not(loom))]
pub use ring::{LOCAL_MAX_QUEUE, RING_SIZES, ring_size};
#[cfg(not(loom))]
pub use wait::{SHARED_WAIT_POLL, WaitError};
