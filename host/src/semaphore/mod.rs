//! The permit semaphore (bulkhead, DESIGN §5) as C and the bindings see it:
//! permits and queue tickets are single-use plain values, and the semaphore can
//! live in this process or in a region shared by every process of the host.
//!
//! Behind a [`Semaphore`] is a core [`seawall_core::Semaphore`] with a queue ring
//! of [`SEMAPHORE_MAX_QUEUE`] tickets next to a holder table
//! ([`crate::holders`]) of `SEMAPHORE_MAX_CONCURRENT + SEMAPHORE_MAX_QUEUE`
//! slots ([`cell`] says why that is always enough).
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

pub use cell::{AcquireError, Acquired, Cancelled, Permit, Polled, SemaphoreCell, Ticket};

#[cfg(not(loom))]
pub use local::*;

#[cfg(not(loom))]
mod local {
    use core::mem::MaybeUninit;
    use core::ops::Deref;
    use core::ptr::NonNull;
    use std::time::{Duration, Instant};

    use seawall_core::{
        ConfigError, Field, Priority, PriorityShares, SemaphoreConfig, SemaphoreRejected,
    };

    use super::cell::{AcquireError, Acquired, Cancelled, Permit, Polled, SemaphoreCell, Ticket};
    use crate::entropy::entropy;
    use crate::handle::Handle;
    use crate::shared::{Agreement, OpenOptions, RegionError, Shareable};

    /// Longest wait queue (`max_queue`) and number of the core's wait slots.
    pub const SEMAPHORE_MAX_QUEUE: usize = 1024;
    /// Most permits (`max_concurrent`).
    pub const SEMAPHORE_MAX_CONCURRENT: usize = 4096;
    /// Holder slots: every permit and every ticket at once.
    pub const SEMAPHORE_HOLDER_SLOTS: usize = SEMAPHORE_MAX_CONCURRENT + SEMAPHORE_MAX_QUEUE;

    /// The cell behind every [`Semaphore`].
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
    // atomics) and a `HolderTable` (a salt written only by `init`, then atomics);
    // neither needs Drop.
    unsafe impl Shareable for Cell {
        const FAMILY: &'static str = "semaphore";
        const LAYOUT_ID: u32 = 0x0201;
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

    /// Why [`Semaphore::acquire_timeout`] returned without a permit.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum WaitError {
        /// Refused at once: shed, or full with no room to wait.
        Rejected(SemaphoreRejected),
        /// Waited the whole timeout; the waiter left the queue.
        TimedOut,
        /// No free holder slot found (see [`AcquireError::PermitsExhausted`]).
        PermitsExhausted,
        /// The waiting ticket was taken by someone else (a reclaim that believed
        /// this process dead): nothing is held.
        TicketLost,
    }

    /// Occupancy, and what callers hold.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
    pub struct Snapshot {
        /// Permits held (granted waiters included).
        pub active: u32,
        /// Waiters queued.
        pub queued: u32,
        /// Permits callers hold (acquired, or taken by a poll).
        pub permits_outstanding: u64,
        /// Tickets callers hold (waiting, or granted and not yet polled).
        pub tickets_outstanding: u64,
    }

    /// A bulkhead with single-use permits and tickets, in this process or shared.
    /// Every method may be called from any number of threads at once.
    #[derive(Debug)]
    pub struct Semaphore {
        cell: Handle<Cell>,
    }

    impl Deref for Semaphore {
        type Target = Cell;
        fn deref(&self) -> &Cell {
            &self.cell
        }
    }

    impl Semaphore {
        /// A semaphore in this process's memory, or the first invalid field
        /// (`max_concurrent` 1 ..= 4096, `max_queue` 0 ..= 1024, shares ≤ 100 %).
        pub fn new(config: &SemaphoreConfig) -> Result<Self, ConfigError> {
            Ok(Self {
                cell: Handle::new(config)?,
            })
        }

        /// Create or attach the semaphore `name` shared by every process of the
        /// host (`/dev/shm/seawall-semaphore-<name>`). Attaching changes nothing;
        /// another configuration is [`RegionError::ConfigMismatch`].
        pub fn open_shared(
            name: &str,
            config: &SemaphoreConfig,
            options: &OpenOptions,
        ) -> Result<Self, RegionError> {
            Ok(Self {
                cell: Handle::open_shared(name, config, options)?,
            })
        }

        /// Remove the shared semaphore `name` (a missing one is fine).
        pub fn unlink_shared(name: &str) -> Result<(), RegionError> {
            Handle::<Cell>::unlink_shared(name)
        }

        /// Bytes of caller memory [`init_in`](Self::init_in) needs.
        #[must_use]
        pub const fn region_size() -> usize {
            Handle::<Cell>::region_size()
        }

        /// Alignment of caller memory for [`init_in`](Self::init_in).
        #[must_use]
        pub const fn region_align() -> usize {
            Handle::<Cell>::region_align()
        }

        /// Build a semaphore in caller memory.
        ///
        /// # Safety
        /// As [`crate::shared::SharedRegion::init_in`].
        pub unsafe fn init_in(
            mem: NonNull<u8>,
            len: usize,
            config: &SemaphoreConfig,
        ) -> Result<Self, RegionError> {
            Ok(Self {
                // SAFETY: forwarded from the caller.
                cell: unsafe { Handle::init_in(mem, len, config) }?,
            })
        }

        /// Attach to a semaphore [`init_in`](Self::init_in) built. Changes nothing.
        ///
        /// # Safety
        /// As [`crate::shared::SharedRegion::attach`].
        pub unsafe fn attach(mem: NonNull<u8>, len: usize) -> Result<Self, RegionError> {
            Ok(Self {
                // SAFETY: forwarded from the caller.
                cell: unsafe { Handle::attach(mem, len) }?,
            })
        }

        /// Whether this handle created (and initialised) its semaphore.
        #[must_use]
        pub fn created(&self) -> bool {
            self.cell.created()
        }

        /// Whether the semaphore lives in a shared region.
        #[must_use]
        pub fn is_shared(&self) -> bool {
            self.cell.is_shared()
        }

        /// Occupancy and outstanding holders (scans the holder table: not for the
        /// hot path; [`SemaphoreCell::snapshot`] is one load).
        #[must_use]
        pub fn full_snapshot(&self) -> Snapshot {
            let s = self.cell.snapshot();
            let (permits_outstanding, tickets_outstanding) = self.cell.outstanding();
            Snapshot {
                active: s.active,
                queued: s.queued,
                permits_outstanding,
                tickets_outstanding,
            }
        }

        /// Release the permits and cancel the tickets of processes that no longer
        /// exist (killed while holding or waiting; on Linux also those exited
        /// and not reaped yet, zombies); `(permits, tickets)`. Only
        /// correct where every sharer sees the same pids (one pid namespace).
        #[allow(
            clippy::must_use_candidate,
            reason = "the counts are informative; the reclaim is the point"
        )]
        pub fn reclaim_abandoned(&self) -> (u64, u64) {
            self.cell.reclaim_dead()
        }

        /// A permit for priority `p`, waiting at most `timeout` (`None`: no limit)
        /// in FIFO order; a zero timeout never queues. Shed priorities and a full
        /// queue are refused at once.
        ///
        /// The wait is a bounded poll-and-park loop on this thread, so it works the
        /// same for a semaphore shared with other processes (whose releases could
        /// not wake a condition variable of this one): a few polls with
        /// `yield`, then sleeps doubling from 20 µs to 1 ms, never past the
        /// deadline. A grant is noticed within about 1 ms; until then the granted
        /// permit is held for this waiter. Host runtimes with an event loop
        /// should poll tickets themselves instead.
        pub fn acquire_timeout(
            &self,
            p: Priority,
            timeout: Option<Duration>,
        ) -> Result<Permit, WaitError> {
            let exhausted = |e| match e {
                AcquireError::Rejected(r) => WaitError::Rejected(r),
                AcquireError::PermitsExhausted => WaitError::PermitsExhausted,
            };
            if timeout == Some(Duration::ZERO) {
                return self.cell.try_acquire(p).map_err(exhausted);
            }
            let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
            let ticket = match self.cell.acquire_or_enqueue(p).map_err(exhausted)? {
                Acquired::Admitted(permit) => return Ok(permit),
                Acquired::Queued(t) => t,
            };
            self.wait(ticket, deadline)
        }

        fn wait(&self, ticket: Ticket, deadline: Option<Instant>) -> Result<Permit, WaitError> {
            let mut polls = 0u32;
            let mut nap = Duration::from_micros(20);
            loop {
                match self.cell.poll(ticket) {
                    Ok(Polled::Granted(permit)) => return Ok(permit),
                    Ok(Polled::Waiting) => {}
                    Err(_) => return Err(WaitError::TicketLost),
                }
                let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
                if left == Some(Duration::ZERO) {
                    // A permit granted in this same instant is passed on.
                    // Only this thread polls or cancels the ticket, so a cancel that
                    // fails means a reclaim by another process took it.
                    return match self.cell.cancel(ticket) {
                        Ok(Cancelled::Cancelled | Cancelled::PassedOn) => Err(WaitError::TimedOut),
                        Err(_) => Err(WaitError::TicketLost),
                    };
                }
                polls += 1;
                if polls < 16 {
                    std::thread::yield_now();
                } else {
                    std::thread::sleep(left.map_or(nap, |l| l.min(nap)));
                    nap = (nap * 2).min(Duration::from_millis(1));
                }
            }
        }
    }
}
