//! The permit semaphore (bulkhead with priority load shedding, DESIGN §5) as
//! JavaScript sees it: seawall-host's `Semaphore` (local, or shared by every
//! process of the host), one call per step of its ticket / poll / cancel /
//! release protocol.
//!
//! # Numbers that cross the boundary
//! * `acquire` returns `-1` (admitted: a permit is held), a ticket `≥ 0` (queued:
//!   poll it, or cancel it), or a rejection `-(2 + reason + 2·(queued + 2¹⁶·active))`
//!   with `reason` 0 shed, 1 full, and the occupancy that refused it.
//! * `poll` returns 0 waiting, 1 granted (the waiter now holds a permit),
//!   2 cancelled (or, shared, reclaimed), 3 unknown; `cancel` returns 0
//!   cancelled, 1 passed on (a permit reached the waiter in the same instant and
//!   went on to the next waiter or the pool), 2 unknown.
//! * `release` gives back one permit this handle holds.
//!
//! Local (untracked: `Semaphore::local`, whose queue ring follows the host's one
//! rule, `seawall_host::semaphore::ring_size`): a ticket is the core's ticket
//! number; permits are counted by the core alone. Shared: a ticket is the holder
//! id `high · 2¹³ + slot` (30 + 13 bits, exact in an `f64`); the handle keeps
//! the ids of the permits it holds (any one of them is what a `release` gives
//! back: they are alike) and of its tickets in the queue, so a ticket of another
//! handle or process is `unknown` here, and dropping the handle gives back what
//! it still holds. A shared semaphore takes at most 1 024 waiters
//! (`SEMAPHORE_MAX_QUEUE`) and 4 096 permits.

use std::cell::RefCell;
use std::collections::HashSet;
use std::sync::Arc;

use napi::bindgen_prelude::{Env, External, Function};
use napi_derive::napi;
use seawall_core::{
    Corrupt, Priority, PriorityShares, RejectReason, SemaphoreConfig, SemaphoreRejected,
};
use seawall_host::holders::HolderError;
use seawall_host::semaphore::{
    AcquireError, Acquired, Cancelled, GaveUp, Permit, Polled, SHARED_WAIT_POLL, Semaphore, Ticket,
};
use seawall_host::shared::OpenOptions;

use crate::boundary::{
    ADMITTED, CANCEL_CANCELLED, CANCEL_PASSED_ON, CANCEL_UNKNOWN, Code, POLL_CANCELLED,
    POLL_GRANTED, POLL_UNKNOWN, POLL_WAITING, RELEASE_NOT_HELD, Result, error, holder_code,
    holder_id, priority_of, semaphore_rejection, throwing,
};

use crate::convert::{config_error, count, percent, region_error};
use crate::handles::{Token, registry};
use crate::waker::{self, Waker};

/// A semaphore configuration as the JS layer sends it (absent = default):
/// shares in percent of `max_concurrent`.
#[napi(object)]
pub struct NativeSemaphoreConfig {
    /// Permits in all (≥ 1). Default 10.
    pub max_concurrent: Option<f64>,
    /// Waiters at most. Default 0.
    pub max_queue: Option<f64>,
    /// Share of `critical` (percent). Default 100.
    pub share_critical: Option<f64>,
    /// Share of `high` (percent). Default 100.
    pub share_high: Option<f64>,
    /// Share of `normal` (percent). Default 100.
    pub share_normal: Option<f64>,
    /// Share of `low` (percent). Default 100.
    pub share_low: Option<f64>,
}

/// The core configuration for `c`.
pub fn semaphore_config(c: &NativeSemaphoreConfig) -> Result<SemaphoreConfig> {
    let d = SemaphoreConfig::DEFAULT;
    let share = |v: Option<f64>, def| v.map_or(def, percent);
    let cfg = SemaphoreConfig {
        max_concurrent: c.max_concurrent.map_or(d.max_concurrent, count),
        max_queue: c.max_queue.map_or(d.max_queue, count),
        shares: PriorityShares {
            critical: share(c.share_critical, d.shares.critical),
            high: share(c.share_high, d.shares.high),
            normal: share(c.share_normal, d.shares.normal),
            low: share(c.share_low, d.shares.low),
        },
    };
    cfg.validate().map_err(config_error)?;
    Ok(cfg)
}

/// A semaphore (shared with its waker thread, `crate::waker`, hence the `Arc`)
/// and, when shared, what this handle holds of it.
struct Sem {
    sem: Arc<Semaphore>,
    holdings: Option<Holdings>,
}

#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "local tickets are u32 values handed out by acquire; garbage saturates"
)]
fn local_ticket(code: f64) -> u64 {
    u64::from(code as u32)
}

/// The permits and queued tickets a handle of a shared semaphore holds: the
/// ones it gives back when dropped.
#[derive(Default)]
struct Holdings {
    /// Ids of the permits this handle holds (acquired, or taken by a poll).
    held: RefCell<Vec<u64>>,
    /// Ids of this handle's tickets still in the queue.
    waiting: RefCell<HashSet<u64>>,
    /// The thread that wakes this handle's waiters, while it runs.
    waker: RefCell<Option<Waker>>,
}

impl Drop for Sem {
    /// A handle dropped while it still holds permits or waits (its process is
    /// ending, or its JS wrapper was collected) gives them back, so they do not
    /// stay taken until a reclaim.
    fn drop(&mut self) {
        if let Some(h) = &mut self.holdings {
            for id in h.waiting.get_mut().drain() {
                let _ = self.sem.cancel(Ticket { id });
            }
            for id in h.held.get_mut().drain(..) {
                let _ = self.sem.release(Permit { id });
            }
        }
    }
}

impl Sem {
    fn acquire(&self, p: Priority, wait: bool) -> Result<f64> {
        let got = self.sem.acquire_checked(p, wait).map_err(|Corrupt| {
            error(
                Code::Shared("untrusted"),
                "the shared bulkhead's region holds values its configuration never gives: it was overwritten",
            )
        })?;
        Ok(match got {
            Ok(Acquired::Admitted(permit)) => {
                if let Some(h) = &self.holdings {
                    h.held.borrow_mut().push(permit.id);
                }
                ADMITTED
            }
            Ok(Acquired::Queued(t)) => match &self.holdings {
                None => t.id as f64,
                Some(h) => {
                    h.waiting.borrow_mut().insert(t.id);
                    holder_code(t.id)
                }
            },
            Err(AcquireError::Rejected(r)) => semaphore_rejection(r),
            // Three scans of the holder table raced past every free slot (see
            // `seawall_host::semaphore::cell`); the admission was undone. To the
            // caller that is a bulkhead with no permit for it now.
            Err(AcquireError::PermitsExhausted) => {
                let s = self.sem.snapshot();
                semaphore_rejection(SemaphoreRejected {
                    reason: RejectReason::Full,
                    active: s.active,
                    queued: s.queued,
                })
            }
        })
    }

    /// The ticket `code` names, if this handle may poll or cancel it (a shared
    /// ticket must be one of this handle's in the queue).
    fn ticket(&self, code: f64) -> Option<Ticket> {
        match &self.holdings {
            None => Some(Ticket {
                id: local_ticket(code),
            }),
            Some(h) => {
                let id = holder_id(code);
                h.waiting.borrow().contains(&id).then_some(Ticket { id })
            }
        }
    }

    fn poll(&self, code: f64) -> u32 {
        let Some(t) = self.ticket(code) else {
            return POLL_UNKNOWN;
        };
        let polled = self.sem.poll(t);
        if let Some(h) = &self.holdings {
            match polled {
                Ok(Polled::Waiting) => {}
                Ok(Polled::Granted(permit)) => {
                    h.waiting.borrow_mut().remove(&t.id);
                    h.held.borrow_mut().push(permit.id);
                }
                // Taken by a reclaim that believed this process dead: nothing is held.
                Err(_) => {
                    h.waiting.borrow_mut().remove(&t.id);
                }
            }
        }
        match polled {
            Ok(Polled::Waiting) => POLL_WAITING,
            Ok(Polled::Granted(_)) => POLL_GRANTED,
            Err(HolderError::UnknownTicket) => POLL_CANCELLED,
            Err(_) => POLL_UNKNOWN,
        }
    }

    fn cancel(&self, code: f64) -> u32 {
        let Some(t) = self.ticket(code) else {
            return CANCEL_UNKNOWN;
        };
        if let Some(h) = &self.holdings {
            h.waiting.borrow_mut().remove(&t.id);
        }
        match self.sem.cancel(t) {
            Ok(Cancelled::Cancelled) => CANCEL_CANCELLED,
            Ok(Cancelled::PassedOn) => CANCEL_PASSED_ON,
            Err(_) => CANCEL_UNKNOWN,
        }
    }

    /// Give back one permit this handle holds; false when it holds none.
    fn release(&self) -> bool {
        match &self.holdings {
            None => self.sem.release(Permit { id: 0 }).is_ok(),
            Some(h) => {
                let Some(id) = h.held.borrow_mut().pop() else {
                    return false;
                };
                // An error means a reclaim (believing this process dead) released it
                // already: either way it is given back.
                let _ = self.sem.release(Permit { id });
                true
            }
        }
    }
}

#[napi(object)]
pub struct NativeSemaphoreSnapshot {
    /// Permits held (granted waiters included).
    pub active: u32,
    /// Live waiters.
    pub queued: u32,
}

registry!(SEMAPHORES, Sem, "bulkhead");

fn free(handle: f64) {
    let _ = SEMAPHORES.try_with(|r| r.free(handle));
}

fn with<R>(h: f64, f: impl FnOnce(&Sem) -> R) -> Result<R> {
    SEMAPHORES.with(|r| r.with(h, f))
}

/// A semaphore with every permit free in this process, or (with `shared`) the
/// semaphore named `shared` in `/dev/shm`, created or attached (attaching changes
/// nothing). Returns the token that owns it (its handle: `handleOf`). Throws on
/// an invalid configuration or a region that cannot be opened (see
/// `convert::region_error`).
#[napi]
pub fn semaphore_new(
    env: Env,
    config: NativeSemaphoreConfig,
    shared: Option<String>,
) -> napi::Result<External<Token>> {
    throwing(env, new_semaphore(&config, shared))
}

fn new_semaphore(
    config: &NativeSemaphoreConfig,
    shared: Option<String>,
) -> Result<External<Token>> {
    let cfg = semaphore_config(config)?;
    let sem = match shared {
        None => Sem {
            sem: Arc::new(Semaphore::local(&cfg).map_err(config_error)?),
            holdings: None,
        },
        Some(name) => Sem {
            sem: Arc::new(
                Semaphore::open_shared(&name, &cfg, &OpenOptions::default())
                    .map_err(region_error)?,
            ),
            holdings: Some(Holdings::default()),
        },
    };
    // The memory this small token keeps alive, so V8 collects it in time.
    let size = sem.sem.memory_size();
    let handle = SEMAPHORES.with(|r| r.insert(sem))?;
    Ok(External::new_with_size_hint(Token::new(handle, free), size))
}

/// Milliseconds between looks of a shared semaphore's waiters at their tickets
/// where no waker thread runs (`semaphore_watch` false), and the longest a
/// waker thread sleeps at a time (`seawall_host::semaphore::SHARED_WAIT_POLL`).
#[napi]
#[allow(
    clippy::cast_possible_truncation,
    reason = "a poll interval of a few milliseconds"
)]
pub fn semaphore_shared_poll_ms() -> u32 {
    SHARED_WAIT_POLL.as_millis() as u32
}

/// Shared semaphores: while this handle's tickets wait, call `wake` (no
/// arguments, on this thread) whenever a release, cancel or reclaim in any
/// process may have granted one, and once now (see `crate::waker`). Returns
/// true when that thread runs (already, or started now); false for a local
/// semaphore, where the OS has no wait on the release counter, or where the
/// thread could not be made: then poll every `semaphoreSharedPollMs()`.
#[napi]
pub fn semaphore_watch(h: f64, wake: Function<'_, (), ()>) -> Result<bool> {
    with(h, |sem| {
        let Some(h) = &sem.holdings else {
            return false;
        };
        let mut running = h.waker.borrow_mut();
        if running.is_none() && waker::available(&sem.sem) {
            *running = waker::start(&sem.sem, &wake).ok().flatten();
        }
        running.is_some()
    })
}

/// Stop the thread `semaphore_watch` started (it ends within the poll interval;
/// one that is not running is fine). Collecting the handle stops it too.
#[napi]
pub fn semaphore_unwatch(h: f64) -> Result<()> {
    with(h, |sem| {
        if let Some(h) = &sem.holdings {
            drop(h.waker.borrow_mut().take());
        }
    })
}

/// Take a permit of semaphore `h` now, or (with `wait`) a ticket in the queue;
/// see the module docs for the number returned. `priority`: 0 critical, 1 high,
/// 2 normal, 3 low.
pub fn semaphore_acquire(h: f64, priority: u32, wait: bool) -> Result<f64> {
    let p = priority_of(priority);
    with(h, |sem| sem.acquire(p, wait))?
}

/// Where `ticket` stands (0 waiting, 1 granted, 2 cancelled, 3 unknown).
pub fn semaphore_poll(h: f64, ticket: f64) -> Result<u32> {
    with(h, |sem| sem.poll(ticket))
}

/// The waiter of `ticket` leaves the queue (0 cancelled, 1 passed on, 2 unknown).
pub fn semaphore_cancel(h: f64, ticket: f64) -> Result<u32> {
    with(h, |sem| sem.cancel(ticket))
}

/// Give a permit back (to the oldest waiter, else the pool), then poll `head`
/// (the caller's oldest live ticket, or a negative number for none): returns its
/// state as `semaphore_poll` does, 3 when there is no `head`, and -1 when no
/// permit was held (nothing changed).
pub fn semaphore_release(h: f64, head: f64) -> Result<i32> {
    with(h, |sem| {
        if !sem.release() {
            RELEASE_NOT_HELD
        } else if head >= 0.0 {
            i32::from(sem.poll(head) as u8)
        } else {
            POLL_UNKNOWN.cast_signed()
        }
    })
}

/// Permits held and waiters queued now (of every process, for a shared one).
#[napi]
pub fn semaphore_snapshot(h: f64) -> Result<NativeSemaphoreSnapshot> {
    with(h, |sem| {
        let s = sem.sem.snapshot_checked().map_err(|Corrupt| {
            error(
                Code::Shared("untrusted"),
                "the shared bulkhead's region holds values its configuration never gives: it was overwritten",
            )
        })?;
        Ok(NativeSemaphoreSnapshot {
            active: s.active,
            queued: s.queued,
        })
    })?
}

/// `[critical, high, normal, low]` limits: `max(1, ⌊max_concurrent · share⌋)`,
/// then the wait ring's size `Q`.
#[napi]
pub fn semaphore_limits(h: f64) -> Result<Vec<u32>> {
    with(h, |sem| {
        let mut v: Vec<u32> = Priority::ALL.iter().map(|p| sem.sem.limit(*p)).collect();
        v.push(u32::try_from(sem.sem.queue_capacity()).unwrap_or(u32::MAX));
        v
    })
}

/// Lifetime figures (DESIGN §8, "One set of totals"): of every process for a
/// shared semaphore (they live in its region).
#[napi(object)]
pub struct NativeBulkheadTotals {
    /// Calls that got a permit, at once or after waiting.
    pub admitted: f64,
    /// Calls shed by priority.
    pub shed: f64,
    /// Calls refused with no permit free and no room to wait.
    pub full: f64,
    /// Waiters whose wait ran out.
    pub queue_timeout: f64,
    /// Waiters whose caller aborted.
    pub aborted: f64,
}

/// The semaphore's lifetime figures (a scan of the holder table for a shared
/// one: for metrics).
#[napi]
pub fn semaphore_totals(h: f64) -> Result<NativeBulkheadTotals> {
    with(h, |sem| {
        let t = sem.sem.totals();
        NativeBulkheadTotals {
            admitted: t.admitted as f64,
            shed: t.rejected_shed as f64,
            full: t.rejected_full as f64,
            queue_timeout: t.rejected_timeout as f64,
            aborted: t.aborted as f64,
        }
    })
}

/// A waiter left the queue without a permit: its wait ran out, or (`aborted`)
/// its caller aborted. Counted in the semaphore's totals.
#[napi]
pub fn semaphore_gave_up(h: f64, aborted: bool) -> Result<()> {
    with(h, |sem| {
        sem.sem.gave_up(if aborted {
            GaveUp::Aborted
        } else {
            GaveUp::TimedOut
        });
    })
}

/// What a shared semaphore's holder table says, and what this handle holds.
#[napi(object)]
pub struct NativeSemaphoreHolders {
    /// Permits held by callers of every process (a scan of the holder table).
    pub permits_outstanding: f64,
    /// Tickets held by callers of every process (waiting, or granted and not yet
    /// polled).
    pub tickets_outstanding: f64,
    /// Permits held by processes that no longer exist (until a caller gives
    /// them back).
    pub permits_abandoned: f64,
    /// Tickets held by processes that no longer exist.
    pub tickets_abandoned: f64,
    /// Permits this handle holds.
    pub held_here: u32,
    /// Tickets of this handle in the queue.
    pub waiting_here: u32,
}

/// Shared semaphores: the holder table's counts (null for a local semaphore).
#[napi]
pub fn semaphore_holders(h: f64) -> Result<Option<NativeSemaphoreHolders>> {
    with(h, |sem| {
        let h = sem.holdings.as_ref()?;
        let f = sem.sem.full_snapshot();
        let (permits_abandoned, tickets_abandoned) = sem.sem.abandoned();
        Some(NativeSemaphoreHolders {
            permits_outstanding: f.permits_outstanding as f64,
            tickets_outstanding: f.tickets_outstanding as f64,
            permits_abandoned: permits_abandoned as f64,
            tickets_abandoned: tickets_abandoned as f64,
            held_here: u32::try_from(h.held.borrow().len()).unwrap_or(u32::MAX),
            waiting_here: u32::try_from(h.waiting.borrow().len()).unwrap_or(u32::MAX),
        })
    })
}

/// Shared semaphores: release the permits and cancel the tickets of processes
/// that no longer exist (a worker killed while it held or waited); returns
/// `[permits, tickets]`, `[0, 0]` for a local semaphore. Only correct where every
/// sharer sees the same pids (one pid namespace).
#[napi]
pub fn semaphore_reclaim_abandoned(h: f64) -> Result<Vec<f64>> {
    with(h, |sem| {
        let (permits, tickets) = sem.sem.reclaim_abandoned();
        vec![permits as f64, tickets as f64]
    })
}

/// Remove the shared semaphore `name` (a missing one is fine). Processes attached
/// to it keep theirs; the next open creates a new one.
#[napi]
pub fn semaphore_unlink_shared(env: Env, name: String) -> napi::Result<()> {
    throwing(env, Semaphore::unlink_shared(&name).map_err(region_error))
}

/// Semaphores alive in this thread.
#[napi]
pub fn semaphore_live() -> u32 {
    u32::try_from(SEMAPHORES.with(crate::handles::Registry::live)).unwrap_or(u32::MAX)
}
