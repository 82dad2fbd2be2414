//! The permit semaphore (bulkhead with priority load shedding, DESIGN §5) as
//! JavaScript sees it: the core's ticket / poll / cancel / release protocol, one
//! call per step.
//!
//! # Numbers that cross the boundary
//! * `acquire` returns `-1` (admitted: a permit is held), a ticket `≥ 0` (queued:
//!   poll it, or cancel it), or a rejection `-(2 + reason + 2·(queued + 2¹⁶·active))`
//!   with `reason` 0 shed, 1 full, and the occupancy that refused it.
//! * `poll` returns 0 waiting, 1 granted (the waiter now holds a permit),
//!   2 cancelled, 3 unknown; `cancel` returns 0 cancelled, 1 passed on (a permit
//!   reached the waiter in the same instant and went on to the next waiter or the
//!   pool), 2 unknown.
//!
//! The wait ring holds `Q` tickets: the smallest of 64, 512, 4 096 and 32 768
//! that is at least twice `max_queue`, so waiters that give up out of order
//! behind a long-lived one rarely use it up (see the core's queue bound).

use napi::Result;
use napi::bindgen_prelude::External;
use napi_derive::napi;
use seawall_core::{
    CancelOutcome, Priority, PriorityShares, RawAdmission, RejectReason, Semaphore,
    SemaphoreConfig, Ticket, TicketState,
};

use crate::convert::{config_error, count, percent};
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

enum Sem {
    Q64(Box<Semaphore<64>>),
    Q512(Box<Semaphore<512>>),
    Q4096(Box<Semaphore<4096>>),
    Q32768(Box<Semaphore<32768>>),
}

macro_rules! each {
    ($sem:expr, $s:ident => $e:expr) => {
        match $sem {
            Sem::Q64($s) => $e,
            Sem::Q512($s) => $e,
            Sem::Q4096($s) => $e,
            Sem::Q32768($s) => $e,
        }
    };
}

fn boxed<const Q: usize>(cfg: SemaphoreConfig) -> Result<Box<Semaphore<Q>>> {
    Semaphore::<Q>::new(cfg).map(Box::new).map_err(config_error)
}

fn priority(p: u32) -> Priority {
    match p {
        0 => Priority::Critical,
        1 => Priority::High,
        3 => Priority::Low,
        _ => Priority::Normal,
    }
}

fn ticket_state(s: TicketState) -> u32 {
    match s {
        TicketState::Waiting => 0,
        TicketState::Granted => 1,
        TicketState::Cancelled => 2,
        TicketState::Unknown => 3,
    }
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

/// A semaphore with every permit free; returns the token that owns it (its
/// handle: `handleOf`). Throws on an invalid configuration.
#[napi]
pub fn semaphore_new(config: NativeSemaphoreConfig) -> Result<External<Token>> {
    let cfg = semaphore_config(&config)?;
    let q = cfg.max_queue.saturating_mul(2);
    let sem = if q <= 64 {
        Sem::Q64(boxed(cfg)?)
    } else if q <= 512 {
        Sem::Q512(boxed(cfg)?)
    } else if q <= 4096 {
        Sem::Q4096(boxed(cfg)?)
    } else {
        Sem::Q32768(boxed(cfg)?)
    };
    let size = each!(&sem, s => size_of_val(&**s));
    let handle = SEMAPHORES.with(|r| r.insert(sem))?;
    Ok(External::new_with_size_hint(Token::new(handle, free), size))
}

/// Take a permit of semaphore `h` now, or (with `wait`) a ticket in the queue;
/// see the module docs for the number returned. `priority`: 0 critical, 1 high,
/// 2 normal, 3 low.
pub fn semaphore_acquire(h: f64, priority: u32, wait: bool) -> Result<f64> {
    with(h, |sem| {
        match each!(sem, s => s.acquire_raw(self::priority(priority), wait)) {
            Ok(RawAdmission::Admitted) => -1.0,
            Ok(RawAdmission::Queued(t)) => f64::from(t.id),
            Err(r) => {
                let reason = match r.reason {
                    RejectReason::Shed => 0.0,
                    RejectReason::Full => 1.0,
                };
                -(2.0 + reason + 2.0 * (f64::from(r.queued) + 65_536.0 * f64::from(r.active)))
            }
        }
    })
}

/// Where `ticket` stands (0 waiting, 1 granted, 2 cancelled, 3 unknown).
pub fn semaphore_poll(h: f64, ticket: u32) -> Result<u32> {
    with(h, |sem| {
        ticket_state(each!(sem, s => s.poll(Ticket { id: ticket })))
    })
}

/// The waiter of `ticket` leaves the queue (0 cancelled, 1 passed on, 2 unknown).
pub fn semaphore_cancel(h: f64, ticket: u32) -> Result<u32> {
    with(
        h,
        |sem| match each!(sem, s => s.cancel(Ticket { id: ticket })) {
            CancelOutcome::Cancelled => 0,
            CancelOutcome::PassedOn => 1,
            CancelOutcome::Unknown => 2,
        },
    )
}

/// Give a permit back (to the oldest waiter, else the pool), then poll `head`
/// (the caller's oldest live ticket, or a negative number for none): returns its
/// state as `semaphore_poll` does, 3 when there is no `head`, and -1 when no
/// permit was held (nothing changed).
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "tickets are u32 values handed out by acquire"
)]
pub fn semaphore_release(h: f64, head: f64) -> Result<i32> {
    with(h, |sem| {
        if !each!(sem, s => s.release()) {
            return -1;
        }
        if head >= 0.0 {
            i32::from(ticket_state(each!(sem, s => s.poll(Ticket { id: head as u32 }))) as u8)
        } else {
            3
        }
    })
}

/// Permits held and waiters queued now.
#[napi]
pub fn semaphore_snapshot(h: f64) -> Result<NativeSemaphoreSnapshot> {
    with(h, |sem| {
        let s = each!(sem, s => s.snapshot());
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
        let mut v: Vec<u32> = Priority::ALL
            .iter()
            .map(|p| each!(sem, s => s.limit(*p)))
            .collect();
        v.push(match sem {
            Sem::Q64(_) => 64,
            Sem::Q512(_) => 512,
            Sem::Q4096(_) => 4096,
            Sem::Q32768(_) => 32768,
        });
        v
    })
}

/// Semaphores alive in this thread.
#[napi]
pub fn semaphore_live() -> u32 {
    u32::try_from(SEMAPHORES.with(crate::handles::Registry::live)).unwrap_or(u32::MAX)
}
