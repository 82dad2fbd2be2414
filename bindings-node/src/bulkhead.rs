//! The permit semaphore (bulkhead with priority load shedding, DESIGN §5) as
//! JavaScript sees it: the core's ticket / poll / cancel / release protocol, one
//! call per step.
//!
//! A semaphore lives in this process (a core `Semaphore<Q>`) or in a region
//! shared by every process of the host (`seawall_host::semaphore::Semaphore`,
//! whose permits and tickets are single-use ids of its holder table).
//!
//! `acquire`, `poll`, `cancel` and `release` return the numbers of
//! [`crate::boundary`]; `release` gives back one permit this handle holds.
//!
//! Local: a ticket is the core's ticket number; permits are counted by the core
//! alone. Shared: a ticket is the holder id's code (`crate::boundary`, exact in
//! an `f64`); the handle keeps the ids of the permits it holds (any one
//! of them is what a `release` gives back: they are alike) and of its tickets in
//! the queue, so a ticket of another handle or process is `unknown` here, and
//! dropping the handle gives back what it still holds.
//!
//! The local wait ring holds `Q` tickets: the smallest of 64, 512, 4 096 and
//! 32 768 that is at least twice `max_queue` (the core needs only `max_queue ≤
//! Q`: a waiter that gives up frees its slot at once; a release with waiters
//! scans the first `max_queue` slots, so the spare half costs memory, not time).
//! A shared semaphore has 1 024 (`SEMAPHORE_MAX_QUEUE`), so its `max_queue` is at
//! most 1 024 and its `max_concurrent` at most 4 096.

use std::cell::RefCell;
use std::collections::HashSet;

use napi::bindgen_prelude::{Env, External};
use napi_derive::napi;
use seawall_core::{
    Priority, PriorityShares, RawAdmission, RejectReason, Semaphore, SemaphoreConfig,
    SemaphoreRejected, Ticket,
};
use seawall_host::semaphore::{
    self as shared_sem, AcquireError, Acquired, Cancelled, Permit, Polled, SEMAPHORE_MAX_QUEUE,
};
use seawall_host::shared::OpenOptions;

use crate::boundary::{
    ADMITTED, CANCEL_CANCELLED, CANCEL_PASSED_ON, CANCEL_UNKNOWN, POLL_GRANTED, POLL_UNKNOWN,
    POLL_WAITING, RELEASE_NOT_HELD, Result, cancel_code, holder_code, holder_id, poll_code,
    priority_of, semaphore_rejection, throwing,
};
use crate::convert::{config_error, count, percent, region_error};
use crate::handles::{Token, registry};

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

/// A local semaphore, over the smallest ring that fits.
enum Local {
    Q64(Box<Semaphore<64>>),
    Q512(Box<Semaphore<512>>),
    Q4096(Box<Semaphore<4096>>),
    Q32768(Box<Semaphore<32768>>),
}

enum Sem {
    Local(Local),
    Shared(Box<Shared>),
}

macro_rules! each {
    ($local:expr, $s:ident => $e:expr) => {
        match $local {
            Local::Q64($s) => $e,
            Local::Q512($s) => $e,
            Local::Q4096($s) => $e,
            Local::Q32768($s) => $e,
        }
    };
}

/// A shared semaphore and what this handle holds of it.
struct Shared {
    sem: shared_sem::Semaphore,
    /// Ids of the permits this handle holds (acquired, or taken by a poll).
    held: RefCell<Vec<u64>>,
    /// Ids of this handle's tickets still in the queue.
    waiting: RefCell<HashSet<u64>>,
}

impl Drop for Shared {
    /// A handle dropped while it still holds permits or waits (its process is
    /// ending, or its JS wrapper was collected) gives them back, so they do not
    /// stay taken until a reclaim.
    fn drop(&mut self) {
        for id in self.waiting.get_mut().drain() {
            let _ = self.sem.cancel(shared_sem::Ticket { id });
        }
        for id in self.held.get_mut().drain(..) {
            let _ = self.sem.release(Permit { id });
        }
    }
}

impl Shared {
    fn acquire(&self, p: Priority, wait: bool) -> f64 {
        let got = if wait {
            self.sem.acquire_or_enqueue(p)
        } else {
            self.sem.try_acquire(p).map(Acquired::Admitted)
        };
        match got {
            Ok(Acquired::Admitted(permit)) => {
                self.held.borrow_mut().push(permit.id);
                ADMITTED
            }
            Ok(Acquired::Queued(t)) => {
                self.waiting.borrow_mut().insert(t.id);
                holder_code(t.id)
            }
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
        }
    }

    fn poll(&self, code: f64) -> u32 {
        let id = holder_id(code);
        if !self.waiting.borrow().contains(&id) {
            return POLL_UNKNOWN;
        }
        match self.sem.poll(shared_sem::Ticket { id }) {
            Ok(Polled::Waiting) => POLL_WAITING,
            Ok(Polled::Granted(permit)) => {
                self.waiting.borrow_mut().remove(&id);
                self.held.borrow_mut().push(permit.id);
                POLL_GRANTED
            }
            // Taken by a reclaim that believed this process dead: nothing is held.
            Err(_) => {
                self.waiting.borrow_mut().remove(&id);
                POLL_UNKNOWN
            }
        }
    }

    fn cancel(&self, code: f64) -> u32 {
        let id = holder_id(code);
        if !self.waiting.borrow_mut().remove(&id) {
            return CANCEL_UNKNOWN;
        }
        match self.sem.cancel(shared_sem::Ticket { id }) {
            Ok(Cancelled::Cancelled) => CANCEL_CANCELLED,
            Ok(Cancelled::PassedOn) => CANCEL_PASSED_ON,
            Err(_) => CANCEL_UNKNOWN,
        }
    }

    /// Give back one permit this handle holds; false when it holds none.
    fn release(&self) -> bool {
        let Some(id) = self.held.borrow_mut().pop() else {
            return false;
        };
        // An error means a reclaim (believing this process dead) released it
        // already: either way it is given back.
        let _ = self.sem.release(Permit { id });
        true
    }
}

fn boxed<const Q: usize>(cfg: SemaphoreConfig) -> Result<Box<Semaphore<Q>>> {
    Semaphore::<Q>::new(cfg).map(Box::new).map_err(config_error)
}

/// Occupancy at one instant.
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

fn local(cfg: SemaphoreConfig) -> Result<(Local, usize)> {
    let q = cfg.max_queue.saturating_mul(2);
    let local = if q <= 64 {
        Local::Q64(boxed(cfg)?)
    } else if q <= 512 {
        Local::Q512(boxed(cfg)?)
    } else if q <= 4096 {
        Local::Q4096(boxed(cfg)?)
    } else {
        Local::Q32768(boxed(cfg)?)
    };
    let size = each!(&local, s => size_of_val(&**s));
    Ok((local, size))
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
    let (sem, size) = match shared {
        None => {
            let (l, size) = local(cfg)?;
            (Sem::Local(l), size)
        }
        Some(name) => {
            let sem = shared_sem::Semaphore::open_shared(&name, &cfg, &OpenOptions::default())
                .map_err(region_error)?;
            let shared = Shared {
                sem,
                held: RefCell::new(Vec::new()),
                waiting: RefCell::new(HashSet::new()),
            };
            // The mapping this small token keeps alive, so V8 collects it in time.
            (
                Sem::Shared(Box::new(shared)),
                shared_sem::Semaphore::region_size(),
            )
        }
    };
    let handle = SEMAPHORES.with(|r| r.insert(sem))?;
    Ok(External::new_with_size_hint(Token::new(handle, free), size))
}

/// Take a permit of semaphore `h` now, or (with `wait`) a ticket in the queue;
/// see `crate::boundary` for the numbers taken and returned.
pub fn semaphore_acquire(h: f64, priority: u32, wait: bool) -> Result<f64> {
    let p = priority_of(priority);
    with(h, |sem| match sem {
        Sem::Local(l) => match each!(l, s => s.acquire_raw(p, wait)) {
            Ok(RawAdmission::Admitted) => ADMITTED,
            Ok(RawAdmission::Queued(t)) => f64::from(t.id),
            Err(r) => semaphore_rejection(r),
        },
        Sem::Shared(s) => s.acquire(p, wait),
    })
}

#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "local tickets are u32 values handed out by acquire; garbage saturates"
)]
fn local_ticket(code: f64) -> Ticket {
    Ticket { id: code as u32 }
}

fn poll_in(sem: &Sem, ticket: f64) -> u32 {
    match sem {
        Sem::Local(l) => poll_code(each!(l, s => s.poll(local_ticket(ticket)))),
        Sem::Shared(s) => s.poll(ticket),
    }
}

/// Where `ticket` stands (a poll result of `crate::boundary`).
pub fn semaphore_poll(h: f64, ticket: f64) -> Result<u32> {
    with(h, |sem| poll_in(sem, ticket))
}

/// The waiter of `ticket` leaves the queue (a cancel result of `crate::boundary`).
pub fn semaphore_cancel(h: f64, ticket: f64) -> Result<u32> {
    with(h, |sem| match sem {
        Sem::Local(l) => cancel_code(each!(l, s => s.cancel(local_ticket(ticket)))),
        Sem::Shared(s) => s.cancel(ticket),
    })
}

/// Give a permit back (to the oldest waiter, else the pool), then poll `head`
/// (the caller's oldest live ticket, or a negative number for none): returns its
/// state as `semaphore_poll` does, unknown when there is no `head`, and "not
/// held" when no permit was held (nothing changed).
pub fn semaphore_release(h: f64, head: f64) -> Result<i32> {
    with(h, |sem| {
        let released = match sem {
            Sem::Local(l) => each!(l, s => s.release()),
            Sem::Shared(s) => s.release(),
        };
        if !released {
            RELEASE_NOT_HELD
        } else if head >= 0.0 {
            i32::from(poll_in(sem, head) as u8)
        } else {
            POLL_UNKNOWN.cast_signed()
        }
    })
}

/// Permits held and waiters queued now (of every process, for a shared one).
#[napi]
pub fn semaphore_snapshot(h: f64) -> Result<NativeSemaphoreSnapshot> {
    with(h, |sem| {
        let s = match sem {
            Sem::Local(l) => each!(l, s => s.snapshot()),
            Sem::Shared(s) => s.sem.snapshot(),
        };
        NativeSemaphoreSnapshot {
            active: s.active,
            queued: s.queued,
        }
    })
}

/// `[critical, high, normal, low]` limits: `max(1, ⌊max_concurrent · share⌋)`,
/// then the wait ring's size `Q`.
#[napi]
pub fn semaphore_limits(h: f64) -> Result<Vec<u32>> {
    with(h, |sem| {
        let limit = |p: Priority| match sem {
            Sem::Local(l) => each!(l, s => s.limit(p)),
            Sem::Shared(s) => s.sem.limit(p),
        };
        let mut v: Vec<u32> = Priority::ALL.iter().map(|p| limit(*p)).collect();
        v.push(match sem {
            Sem::Local(Local::Q64(_)) => 64,
            Sem::Local(Local::Q512(_)) => 512,
            Sem::Local(Local::Q4096(_)) => 4096,
            Sem::Local(Local::Q32768(_)) => 32768,
            Sem::Shared(_) => SEMAPHORE_MAX_QUEUE as u32,
        });
        v
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
    /// Permits this handle holds.
    pub held_here: u32,
    /// Tickets of this handle in the queue.
    pub waiting_here: u32,
}

/// Shared semaphores: the holder table's counts (null for a local semaphore).
#[napi]
pub fn semaphore_holders(h: f64) -> Result<Option<NativeSemaphoreHolders>> {
    with(h, |sem| match sem {
        Sem::Local(_) => None,
        Sem::Shared(s) => {
            let f = s.sem.full_snapshot();
            Some(NativeSemaphoreHolders {
                permits_outstanding: f.permits_outstanding as f64,
                tickets_outstanding: f.tickets_outstanding as f64,
                held_here: u32::try_from(s.held.borrow().len()).unwrap_or(u32::MAX),
                waiting_here: u32::try_from(s.waiting.borrow().len()).unwrap_or(u32::MAX),
            })
        }
    })
}

/// Shared semaphores: release the permits and cancel the tickets of processes
/// that no longer exist (a worker killed while it held or waited); returns
/// `[permits, tickets]`, `[0, 0]` for a local semaphore. Only correct where every
/// sharer sees the same pids (one pid namespace).
#[napi]
pub fn semaphore_reclaim_abandoned(h: f64) -> Result<Vec<f64>> {
    with(h, |sem| match sem {
        Sem::Local(_) => vec![0.0, 0.0],
        Sem::Shared(s) => {
            let (permits, tickets) = s.sem.reclaim_abandoned();
            vec![permits as f64, tickets as f64]
        }
    })
}

/// Remove the shared semaphore `name` (a missing one is fine). Processes attached
/// to it keep theirs; the next open creates a new one.
#[napi]
pub fn semaphore_unlink_shared(env: Env, name: String) -> napi::Result<()> {
    throwing(
        env,
        shared_sem::Semaphore::unlink_shared(&name).map_err(region_error),
    )
}

/// Semaphores alive in this thread.
#[napi]
pub fn semaphore_live() -> u32 {
    u32::try_from(SEMAPHORES.with(crate::handles::Registry::live)).unwrap_or(u32::MAX)
}
