//! `seawall_semaphore`: the permit semaphore / bulkhead with priority load
//! shedding and a FIFO wait queue (DESIGN §5) through the C ABI.

use core::ffi::c_void;
use std::ffi::c_char;
use std::time::Duration;

use seawall_core::{Corrupt, Priority, PriorityShares, Ratio, RejectReason, SemaphoreConfig};

use super::common::SEAWALL_NONE;
use super::{
    Failure, arg, construct, destroy, guard, guard_value, mem_arg, name_arg, out, put, put_opt,
    seawall_status, shared_options,
};
use seawall_host::holders::HolderError;
use seawall_host::semaphore::{
    AcquireError, Acquired, Cancelled, Permit, Polled, Semaphore, Ticket, WaitError,
};

/// A priority: `SEAWALL_PRIORITY_CRITICAL`, `_HIGH`, `_NORMAL` or `_LOW`.
#[allow(non_camel_case_types, reason = "C type name")]
pub type seawall_priority = u32;
/// Never shed before the others.
pub const SEAWALL_PRIORITY_CRITICAL: seawall_priority = 0;
/// Shed after normal.
pub const SEAWALL_PRIORITY_HIGH: seawall_priority = 1;
/// The default priority.
pub const SEAWALL_PRIORITY_NORMAL: seawall_priority = 2;
/// Shed first.
pub const SEAWALL_PRIORITY_LOW: seawall_priority = 3;

/// Why a semaphore refused: `SEAWALL_REJECT_SHED` or `SEAWALL_REJECT_FULL`.
#[allow(non_camel_case_types, reason = "C type name")]
pub type seawall_reject_reason = u32;
/// Load shedding: the priority's share is used up (such a request never waits).
pub const SEAWALL_REJECT_SHED: seawall_reject_reason = 0;
/// No permit free (or waiters ahead) and no room to wait, or the caller would
/// not wait.
pub const SEAWALL_REJECT_FULL: seawall_reject_reason = 1;

// Literals so that cbindgen can print them; a test checks them against Rust.
/// Largest `max_concurrent` of a semaphore.
pub const SEAWALL_SEMAPHORE_MAX_CONCURRENT: u32 = 4096;
/// Largest `max_queue` of a semaphore.
pub const SEAWALL_SEMAPHORE_MAX_QUEUE: u32 = 1024;

/// Semaphore (bulkhead) configuration (DESIGN §5). Start from
/// `seawall_semaphore_config_default()`. Shares are parts per million of
/// `max_concurrent` (1 000 000 = 100 %); a priority's limit is
/// `max(1, floor(max_concurrent · share))`, and a priority whose limit is below
/// `max_concurrent` is shed at once when the limit is reached.
#[allow(non_camel_case_types, reason = "C type name")]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct seawall_semaphore_config {
    /// Permits in all (1 ..= `SEAWALL_SEMAPHORE_MAX_CONCURRENT`). Default 10.
    pub max_concurrent: u32,
    /// Waiters at most (0 ..= `SEAWALL_SEMAPHORE_MAX_QUEUE`). Default 0 (reject
    /// at once when full).
    pub max_queue: u32,
    /// Share of `SEAWALL_PRIORITY_CRITICAL` (ppm, 0 ..= 1 000 000). Default 100 %.
    pub critical_share_ppm: u64,
    /// Share of `SEAWALL_PRIORITY_HIGH` (ppm). Default 100 %.
    pub high_share_ppm: u64,
    /// Share of `SEAWALL_PRIORITY_NORMAL` (ppm). Default 100 %.
    pub normal_share_ppm: u64,
    /// Share of `SEAWALL_PRIORITY_LOW` (ppm). Default 100 %.
    pub low_share_ppm: u64,
}

/// A held permit: give it back exactly once with `seawall_semaphore_release`. A
/// second release returns `SEAWALL_STATUS_PERMIT_ALREADY_USED` and changes
/// nothing. Plain data: copy it freely, even to another process sharing the
/// semaphore.
#[allow(non_camel_case_types, reason = "C type name")]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct seawall_semaphore_permit {
    /// Slot and generation in the semaphore's holder table (opaque).
    pub id: u64,
}

/// A place in the wait queue: poll it (`seawall_semaphore_poll`) until it is
/// granted, or cancel it (`seawall_semaphore_cancel`). A granted ticket is used
/// up: it became the permit the poll wrote out. Plain data, like a permit.
#[allow(non_camel_case_types, reason = "C type name")]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct seawall_semaphore_ticket {
    /// Slot and generation in the semaphore's holder table (opaque).
    pub id: u64,
}

/// Why an acquire was refused, with the occupancy that refused it.
#[allow(non_camel_case_types, reason = "C type name")]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct seawall_semaphore_rejection {
    /// `SEAWALL_REJECT_SHED` or `SEAWALL_REJECT_FULL`.
    pub reason: seawall_reject_reason,
    /// Permits held when it was refused.
    pub active: u32,
    /// Waiters queued when it was refused.
    pub queued: u32,
    /// Zero.
    pub reserved: u32,
}

/// Occupancy of a semaphore, and what callers hold.
#[allow(non_camel_case_types, reason = "C type name")]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct seawall_semaphore_snapshot {
    /// Permits held (granted waiters included): never above `max_concurrent`.
    pub active: u32,
    /// Waiters queued: never above `max_queue`.
    pub queued: u32,
    /// Permits callers hold (acquired, or taken by a poll) and have not released.
    pub permits_outstanding: u64,
    /// Tickets callers hold (waiting, or granted and not yet polled).
    pub tickets_outstanding: u64,
}

/// A permit semaphore (opaque). Every function taking a
/// `const seawall_semaphore *` may be called from any number of threads at once.
#[allow(non_camel_case_types, reason = "C type name")]
pub struct seawall_semaphore {
    inner: Semaphore,
}

fn share(r: Ratio) -> u64 {
    r.ppm()
}

/// The C view of a core configuration.
pub(crate) fn c_config(c: &SemaphoreConfig) -> seawall_semaphore_config {
    seawall_semaphore_config {
        max_concurrent: c.max_concurrent,
        max_queue: c.max_queue,
        critical_share_ppm: share(c.shares.critical),
        high_share_ppm: share(c.shares.high),
        normal_share_ppm: share(c.shares.normal),
        low_share_ppm: share(c.shares.low),
    }
}

/// The core configuration of a C one (validated when the semaphore is built).
pub(crate) fn core_config(c: &seawall_semaphore_config) -> SemaphoreConfig {
    SemaphoreConfig {
        max_concurrent: c.max_concurrent,
        max_queue: c.max_queue,
        shares: PriorityShares {
            critical: Ratio::from_ppm(c.critical_share_ppm),
            high: Ratio::from_ppm(c.high_share_ppm),
            normal: Ratio::from_ppm(c.normal_share_ppm),
            low: Ratio::from_ppm(c.low_share_ppm),
        },
    }
}

pub(crate) fn priority(p: seawall_priority) -> Result<Priority, Failure> {
    Priority::ALL.get(p as usize).copied().ok_or_else(|| {
        Failure::new(
            seawall_status::InvalidArgument,
            format_args!(
                "invalid priority {p}: use SEAWALL_PRIORITY_CRITICAL (0), _HIGH (1), _NORMAL (2) or _LOW (3)"
            ),
        )
    })
}

fn c_rejection(r: seawall_core::SemaphoreRejected) -> seawall_semaphore_rejection {
    seawall_semaphore_rejection {
        reason: match r.reason {
            RejectReason::Shed => SEAWALL_REJECT_SHED,
            RejectReason::Full => SEAWALL_REJECT_FULL,
        },
        active: r.active,
        queued: r.queued,
        reserved: 0,
    }
}

fn exhausted() -> Failure {
    Failure::new(
        seawall_status::PermitsExhausted,
        "no free holder slot found in this semaphore's table after three scans (racing ones); nothing was acquired: try again",
    )
}

fn permit_failure(e: HolderError) -> Failure {
    match e {
        HolderError::AlreadyUsed => Failure::new(
            seawall_status::PermitAlreadyUsed,
            "permit already released (or not issued by this semaphore): nothing changed",
        ),
        HolderError::StillWaiting => Failure::new(
            seawall_status::InvalidArgument,
            "that id is a ticket still waiting, not a permit: poll it or cancel it",
        ),
        HolderError::UnknownTicket | HolderError::Foreign => Failure::new(
            seawall_status::InvalidArgument,
            "not a permit of this semaphore: nothing changed",
        ),
    }
}

fn ticket_failure(e: HolderError) -> Failure {
    match e {
        HolderError::Foreign => Failure::new(
            seawall_status::InvalidArgument,
            "not a ticket of this semaphore: nothing changed",
        ),
        _ => Failure::new(
            seawall_status::UnknownTicket,
            "ticket is not waiting (already granted and taken, cancelled, reclaimed, or not issued by this semaphore): nothing changed",
        ),
    }
}

/// Borrow the semaphore behind a handle argument.
///
/// # Safety
/// `s` is NULL or a live handle from this library.
unsafe fn handle<'a>(s: *const seawall_semaphore) -> Result<&'a Semaphore, Failure> {
    // SAFETY: the caller's promise.
    Ok(&unsafe { arg(s, "semaphore") }?.inner)
}

/// 10 permits, no queue, every share 100 % (a plain bulkhead; DESIGN §5).
///
/// # Safety
/// Always safe to call, from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn seawall_semaphore_config_default() -> seawall_semaphore_config {
    c_config(&SemaphoreConfig::DEFAULT)
}

/// Create a semaphore in this process's memory. On success `*out` is a new handle
/// the caller owns and releases with `seawall_semaphore_free`; on failure `*out`
/// is NULL and the message names the invalid field.
///
/// # Safety
/// `config` is NULL or readable; `out` is NULL or writable. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_semaphore_new(
    config: *const seawall_semaphore_config,
    out: *mut *mut seawall_semaphore,
) -> seawall_status {
    let make = || {
        // SAFETY: the caller's promise on `config`.
        let cfg = core_config(unsafe { arg(config, "config") }?);
        Ok(seawall_semaphore {
            inner: Semaphore::new(&cfg)?,
        })
    };
    // SAFETY: the caller's promise on `out`.
    unsafe { construct(out, make) }
}

/// Release a handle. NULL is fine. A shared semaphore stays in its region for the
/// other processes; caller memory is not touched. Permits and tickets still held
/// stay counted: release or cancel them through another handle first (or let
/// `seawall_semaphore_reclaim_abandoned` take them once this process is gone).
///
/// # Safety
/// `semaphore` is NULL or a handle from this library not freed yet; no other
/// thread may use it during or after this call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_semaphore_free(semaphore: *mut seawall_semaphore) {
    // SAFETY: the caller's promise.
    unsafe { destroy(semaphore) };
}

/// Create or attach the semaphore `name` shared by every process of the host
/// (`/dev/shm/seawall-semaphore-<name>`; names as for
/// `seawall_breaker_open_shared`). Exactly one of the racing processes
/// initialises it; the others wait (`SEAWALL_SHM_TIMEOUT_MS`, default 2000 ms)
/// and attach without changing anything. Another configuration is
/// `SEAWALL_STATUS_CONFIG_MISMATCH`, another ABI `SEAWALL_STATUS_ABI_MISMATCH`.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string; `config` and `out` as in
/// `seawall_semaphore_new`. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_semaphore_open_shared(
    name: *const c_char,
    config: *const seawall_semaphore_config,
    out: *mut *mut seawall_semaphore,
) -> seawall_status {
    let make = || {
        // SAFETY: the caller's promise on `name` and `config`.
        let (name, cfg) = unsafe { (name_arg(name)?, core_config(arg(config, "config")?)) };
        Ok(seawall_semaphore {
            inner: Semaphore::open_shared(name, &cfg, &shared_options())?,
        })
    };
    // SAFETY: the caller's promise on `out`.
    unsafe { construct(out, make) }
}

/// Remove the shared semaphore `name` (a missing one is fine). Attached processes
/// keep using theirs; the next `seawall_semaphore_open_shared` creates a new one.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_semaphore_unlink_shared(name: *const c_char) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `name`.
        Semaphore::unlink_shared(unsafe { name_arg(name) }?)?;
        Ok(seawall_status::Ok)
    })
}

/// Bytes of memory `seawall_semaphore_init_in` needs.
///
/// # Safety
/// Always safe to call.
#[unsafe(no_mangle)]
pub extern "C" fn seawall_semaphore_size() -> usize {
    Semaphore::region_size()
}

/// Alignment (bytes) of memory for `seawall_semaphore_init_in`.
///
/// # Safety
/// Always safe to call.
#[unsafe(no_mangle)]
pub extern "C" fn seawall_semaphore_align() -> usize {
    Semaphore::region_align()
}

/// Build a semaphore in memory the caller brings (`len` bytes at `mem`, aligned to
/// `seawall_semaphore_align()`, at least `seawall_semaphore_size()` long, else
/// `SEAWALL_STATUS_BAD_REGION`). `*out` as in `seawall_semaphore_new`.
///
/// # Safety
/// `mem` is NULL or valid for reads and writes of `len` bytes until every handle
/// on it is freed, and used by no one else during this call. `config` and `out`
/// as in `seawall_semaphore_new`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_semaphore_init_in(
    mem: *mut c_void,
    len: usize,
    config: *const seawall_semaphore_config,
    out: *mut *mut seawall_semaphore,
) -> seawall_status {
    let make = || {
        let mem = mem_arg(mem)?;
        // SAFETY: the caller's promise on `config`.
        let cfg = core_config(unsafe { arg(config, "config") }?);
        Ok(seawall_semaphore {
            // SAFETY: the caller's promise on `mem` and `len`.
            inner: unsafe { Semaphore::init_in(mem, len, &cfg) }?,
        })
    };
    // SAFETY: the caller's promise on `out`.
    unsafe { construct(out, make) }
}

/// Attach to a semaphore `seawall_semaphore_init_in` built in this memory.
/// Changes nothing. No region there is `SEAWALL_STATUS_NOT_A_REGION`; another
/// structure `SEAWALL_STATUS_CONFIG_MISMATCH`; another ABI
/// `SEAWALL_STATUS_ABI_MISMATCH`; size or alignment `SEAWALL_STATUS_BAD_REGION`.
///
/// # Safety
/// `mem` is NULL or valid for reads and writes of `len` bytes until the handle is
/// freed, and holds a region `seawall_*_init_in` built or anything whose header
/// fails the checks; `out` as in `seawall_semaphore_new`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_semaphore_attach(
    mem: *mut c_void,
    len: usize,
    out: *mut *mut seawall_semaphore,
) -> seawall_status {
    let make = || {
        let mem = mem_arg(mem)?;
        Ok(seawall_semaphore {
            // SAFETY: the caller's promise on `mem` and `len`.
            inner: unsafe { Semaphore::attach(mem, len) }?,
        })
    };
    // SAFETY: the caller's promise on `out`.
    unsafe { construct(out, make) }
}

/// `*out = true` when this handle created (initialised) its semaphore.
///
/// # Safety
/// `semaphore` is NULL or a live handle; `out` is NULL or writable. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_semaphore_created(
    semaphore: *const seawall_semaphore,
    out: *mut bool,
) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `semaphore`.
        let s = unsafe { handle(semaphore) }?;
        let o = self::out(out, "out")?;
        // SAFETY: checked non-NULL, writable per the caller.
        unsafe { put(o, s.created()) };
        Ok(seawall_status::Ok)
    })
}

/// The configuration the semaphore runs with (for a shared one, its creator's).
///
/// # Safety
/// `semaphore` is NULL or a live handle; `out` is NULL or writable. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_semaphore_get_config(
    semaphore: *const seawall_semaphore,
    out: *mut seawall_semaphore_config,
) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `semaphore`.
        let s = unsafe { handle(semaphore) }?;
        let o = self::out(out, "out")?;
        // SAFETY: checked non-NULL, writable per the caller.
        unsafe { put(o, c_config(&s.config())) };
        Ok(seawall_status::Ok)
    })
}

/// The limit of `priority`: `max(1, floor(max_concurrent · share))`.
///
/// # Safety
/// `semaphore` is NULL or a live handle; `out` is NULL or writable. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_semaphore_limit(
    semaphore: *const seawall_semaphore,
    priority: seawall_priority,
    out: *mut u32,
) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `semaphore`.
        let s = unsafe { handle(semaphore) }?;
        let p = self::priority(priority)?;
        let o = self::out(out, "out")?;
        // SAFETY: checked non-NULL, writable per the caller.
        unsafe { put(o, s.limit(p)) };
        Ok(seawall_status::Ok)
    })
}

/// A refused acquire: `REJECTED` with the reason written out, or a failure.
///
/// # Safety
/// `out_rejection` is NULL or writable.
unsafe fn acquire_failure(
    e: AcquireError,
    out_rejection: *mut seawall_semaphore_rejection,
) -> super::Outcome {
    match e {
        AcquireError::Rejected(r) => {
            // SAFETY: NULL or writable (the caller's promise).
            unsafe { put_opt(out_rejection, c_rejection(r)) };
            Ok(seawall_status::Rejected)
        }
        AcquireError::PermitsExhausted => Err(exhausted()),
    }
}

/// Take a permit now for `priority` if one is free and nobody waits; never
/// waits. Returns `SEAWALL_STATUS_OK` with the permit in `*out_permit`, or
/// `SEAWALL_STATUS_REJECTED` with the reason and occupancy in `*out_rejection`
/// when that is not NULL, or `SEAWALL_STATUS_REGION_CORRUPT` when a shared
/// semaphore's memory holds values seawall never writes (no permit is held
/// then). Lock-free, no allocation.
///
/// # Safety
/// `semaphore` is NULL or a live handle; `out_permit` is NULL or writable;
/// `out_rejection` is NULL (not wanted) or writable. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_semaphore_try_acquire(
    semaphore: *const seawall_semaphore,
    priority: seawall_priority,
    out_permit: *mut seawall_semaphore_permit,
    out_rejection: *mut seawall_semaphore_rejection,
) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `semaphore`.
        let s = unsafe { handle(semaphore) }?;
        let p = self::priority(priority)?;
        let permit_out = out(out_permit, "out_permit")?;
        match s.try_acquire_checked(p)? {
            Ok(permit) => {
                // SAFETY: checked non-NULL, writable per the caller.
                unsafe { put(permit_out, seawall_semaphore_permit { id: permit.id }) };
                Ok(seawall_status::Ok)
            }
            // SAFETY: the caller's promise on `out_rejection`.
            Err(e) => unsafe { acquire_failure(e, out_rejection) },
        }
    })
}

/// Take a permit now, or a place in the FIFO queue if there is room: returns
/// `SEAWALL_STATUS_OK` with `*out_permit`, `SEAWALL_STATUS_QUEUED` with
/// `*out_ticket` (poll it until granted, or cancel it), or
/// `SEAWALL_STATUS_REJECTED` (shed, or full) with `*out_rejection` when that is
/// not NULL. A shed priority never queues. `SEAWALL_STATUS_REGION_CORRUPT`: a
/// shared semaphore's memory holds values seawall never writes (no permit or
/// ticket is held then). Lock-free, no allocation.
///
/// # Safety
/// `semaphore` is NULL or a live handle; `out_permit` and `out_ticket` are NULL or
/// writable; `out_rejection` is NULL (not wanted) or writable. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_semaphore_acquire_or_enqueue(
    semaphore: *const seawall_semaphore,
    priority: seawall_priority,
    out_permit: *mut seawall_semaphore_permit,
    out_ticket: *mut seawall_semaphore_ticket,
    out_rejection: *mut seawall_semaphore_rejection,
) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `semaphore`.
        let s = unsafe { handle(semaphore) }?;
        let p = self::priority(priority)?;
        let permit_out = out(out_permit, "out_permit")?;
        let ticket_out = out(out_ticket, "out_ticket")?;
        match s.acquire_or_enqueue_checked(p)? {
            Ok(Acquired::Admitted(permit)) => {
                // SAFETY: checked non-NULL, writable per the caller.
                unsafe { put(permit_out, seawall_semaphore_permit { id: permit.id }) };
                Ok(seawall_status::Ok)
            }
            Ok(Acquired::Queued(t)) => {
                // SAFETY: checked non-NULL, writable per the caller.
                unsafe { put(ticket_out, seawall_semaphore_ticket { id: t.id }) };
                Ok(seawall_status::Queued)
            }
            // SAFETY: the caller's promise on `out_rejection`.
            Err(e) => unsafe { acquire_failure(e, out_rejection) },
        }
    })
}

/// Where a ticket stands: `SEAWALL_STATUS_OK` when a release handed it a permit
/// (written to `*out_permit`; the caller holds it now and the ticket is used
/// up), `SEAWALL_STATUS_WAITING` while it waits, `SEAWALL_STATUS_UNKNOWN_TICKET`
/// for a ticket that is not waiting (taken already, cancelled, reclaimed). A
/// ticket of no slot of this semaphore is `SEAWALL_STATUS_INVALID_ARGUMENT`.
/// `SEAWALL_STATUS_REGION_CORRUPT`: a shared semaphore's memory holds values
/// seawall never writes (the ticket is used up; whether its permit is held is
/// unspecified). Lock-free, no allocation.
///
/// # Safety
/// `semaphore` is NULL or a live handle; `out_permit` is NULL or writable.
/// Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_semaphore_poll(
    semaphore: *const seawall_semaphore,
    ticket: seawall_semaphore_ticket,
    out_permit: *mut seawall_semaphore_permit,
) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `semaphore`.
        let s = unsafe { handle(semaphore) }?;
        let permit_out = out(out_permit, "out_permit")?;
        match s
            .poll_checked(Ticket { id: ticket.id })?
            .map_err(ticket_failure)?
        {
            Polled::Waiting => Ok(seawall_status::Waiting),
            Polled::Granted(p) => {
                // SAFETY: checked non-NULL, writable per the caller.
                unsafe { put(permit_out, seawall_semaphore_permit { id: p.id }) };
                Ok(seawall_status::Ok)
            }
        }
    })
}

/// The waiter of `ticket` gives up (timeout or cancellation) and leaves the
/// queue at once: `SEAWALL_STATUS_CANCELLED`, or `SEAWALL_STATUS_PASSED_ON` when
/// a permit reached it in the same instant (that permit went on to the next
/// waiter or back to the pool: the caller holds nothing either way). A ticket
/// that is not waiting is `SEAWALL_STATUS_UNKNOWN_TICKET` and changes nothing.
/// `SEAWALL_STATUS_REGION_CORRUPT`: a shared semaphore's memory holds values
/// seawall never writes (the ticket is used up, nothing is held). Lock-free, no
/// allocation.
///
/// # Safety
/// `semaphore` is NULL or a live handle. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_semaphore_cancel(
    semaphore: *const seawall_semaphore,
    ticket: seawall_semaphore_ticket,
) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `semaphore`.
        let s = unsafe { handle(semaphore) }?;
        Ok(
            match s
                .cancel_checked(Ticket { id: ticket.id })?
                .map_err(ticket_failure)?
            {
                Cancelled::Cancelled => seawall_status::Cancelled,
                Cancelled::PassedOn => seawall_status::PassedOn,
            },
        )
    })
}

/// Give a permit back: straight to the oldest waiter (whatever its priority), or
/// to the pool. A permit works once: a second release returns
/// `SEAWALL_STATUS_PERMIT_ALREADY_USED` and changes nothing; an id of no permit
/// of this semaphore (or of a ticket still waiting) is
/// `SEAWALL_STATUS_INVALID_ARGUMENT`. `SEAWALL_STATUS_REGION_CORRUPT`: a shared
/// semaphore's memory holds values seawall never writes (the permit is used up;
/// where it went is unspecified). Lock-free, no allocation.
///
/// # Safety
/// `semaphore` is NULL or a live handle. Thread-safe; the permit may come from
/// another thread, or another process sharing the semaphore.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_semaphore_release(
    semaphore: *const seawall_semaphore,
    permit: seawall_semaphore_permit,
) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `semaphore`.
        let s = unsafe { handle(semaphore) }?;
        s.release_checked(Permit { id: permit.id })?
            .map_err(permit_failure)?;
        Ok(seawall_status::Ok)
    })
}

/// Take a permit, blocking this thread at most `timeout_ns` in FIFO order:
/// `SEAWALL_STATUS_OK` with `*out_permit`; `SEAWALL_STATUS_REJECTED` at once when
/// shed or when the queue is full (`*out_rejection` if not NULL);
/// `SEAWALL_STATUS_WAIT_TIMED_OUT` when the time ran out (the waiter left the
/// queue; nothing is held). `timeout_ns` 0 never queues (like
/// `seawall_semaphore_try_acquire`); `SEAWALL_NONE` waits without limit.
/// `SEAWALL_STATUS_REGION_CORRUPT` when a shared semaphore's memory holds values
/// seawall never writes (nothing is held); whatever it holds, the call returns
/// by its deadline.
///
/// On Linux the wait sleeps on the semaphore's release counter (a futex that
/// is not private: a release in any process sharing the semaphore wakes it),
/// at most 2 ms at a time, never past the deadline; elsewhere it is a bounded
/// poll-and-park loop (a few polls with `sched_yield`, then sleeps doubling
/// from 20 µs to 1 ms). Until the waiter looks, a granted permit is held for
/// it. Event loops should poll tickets themselves
/// (`seawall_semaphore_acquire_or_enqueue`, `seawall_semaphore_poll`).
///
/// # Safety
/// `semaphore` is NULL or a live handle; `out_permit` is NULL or writable;
/// `out_rejection` is NULL or writable. Thread-safe; blocks.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_semaphore_acquire_timeout(
    semaphore: *const seawall_semaphore,
    priority: seawall_priority,
    timeout_ns: u64,
    out_permit: *mut seawall_semaphore_permit,
    out_rejection: *mut seawall_semaphore_rejection,
) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `semaphore`.
        let s = unsafe { handle(semaphore) }?;
        let p = self::priority(priority)?;
        let permit_out = out(out_permit, "out_permit")?;
        let timeout = (timeout_ns != SEAWALL_NONE).then(|| Duration::from_nanos(timeout_ns));
        match s.acquire_timeout(p, timeout) {
            Ok(permit) => {
                // SAFETY: checked non-NULL, writable per the caller.
                unsafe { put(permit_out, seawall_semaphore_permit { id: permit.id }) };
                Ok(seawall_status::Ok)
            }
            // SAFETY: the caller's promise on `out_rejection`.
            Err(WaitError::Rejected(r)) => unsafe {
                acquire_failure(AcquireError::Rejected(r), out_rejection)
            },
            Err(WaitError::TimedOut) => Ok(seawall_status::WaitTimedOut),
            Err(WaitError::PermitsExhausted) => Err(exhausted()),
            Err(WaitError::TicketLost) => Err(Failure::new(
                seawall_status::UnknownTicket,
                "the waiting ticket was reclaimed by another process (as if this one had died): nothing is held",
            )),
            Err(WaitError::RegionCorrupt) => Err(Corrupt.into()),
        }
    })
}

/// Occupancy (`active`, `queued`, one atomic read) and the permits and tickets
/// callers hold (a scan of the holder table: not for the hot path).
/// `SEAWALL_STATUS_REGION_CORRUPT` when it counts more permits or waiters than
/// the configuration allows (the shared region was overwritten).
///
/// # Safety
/// `semaphore` is NULL or a live handle; `out` is NULL or writable. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_semaphore_get_snapshot(
    semaphore: *const seawall_semaphore,
    out: *mut seawall_semaphore_snapshot,
) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `semaphore`.
        let s = unsafe { handle(semaphore) }?;
        let o = self::out(out, "out")?;
        let f = s.full_snapshot_checked()?;
        let snap = seawall_semaphore_snapshot {
            active: f.active,
            queued: f.queued,
            permits_outstanding: f.permits_outstanding,
            tickets_outstanding: f.tickets_outstanding,
        };
        // SAFETY: checked non-NULL, writable per the caller.
        unsafe { put(o, snap) };
        Ok(seawall_status::Ok)
    })
}

/// Give back every permit, and cancel every ticket, of a process that no longer
/// exists (a worker killed while it held a permit or waited): the permits go to
/// the next waiters or back to the pool. `*out_permits` and `*out_tickets` (each
/// if not NULL) say how many. A process is gone once no such pid exists or, on
/// Linux, once it has exited and waits to be reaped (a zombie, state `Z`/`X` in
/// `/proc/<pid>/stat`). A permit or ticket belongs to the process that
/// acquired, queued or polled it, whoever holds its id now; reclaim only where every
/// process sharing the semaphore sees the same pids (one pid namespace). Scans
/// the holder table: not for the hot path. A process killed between two steps
/// of a call is repaired too (its holder slot names it from the step that took
/// it); only a death inside the core's own queueing or acknowledgement of a grant
/// is not (README, kill windows).
///
/// # Safety
/// `semaphore` is NULL or a live handle; `out_permits` and `out_tickets` are NULL
/// or writable. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_semaphore_reclaim_abandoned(
    semaphore: *const seawall_semaphore,
    out_permits: *mut u64,
    out_tickets: *mut u64,
) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `semaphore`.
        let s = unsafe { handle(semaphore) }?;
        let (permits, tickets) = s.reclaim_abandoned();
        // SAFETY: NULL or writable (the caller's promise).
        unsafe {
            put_opt(out_permits, permits);
            put_opt(out_tickets, tickets);
        }
        Ok(seawall_status::Ok)
    })
}

/// The name of a priority (`"critical"`, `"high"`, `"normal"`, `"low"`), or
/// `"unknown"`.
///
/// # Safety
/// Always safe to call; the string is static.
#[unsafe(no_mangle)]
pub extern "C" fn seawall_priority_name(priority: seawall_priority) -> *const c_char {
    guard_value(c"unknown".as_ptr(), || match priority {
        SEAWALL_PRIORITY_CRITICAL => c"critical".as_ptr(),
        SEAWALL_PRIORITY_HIGH => c"high".as_ptr(),
        SEAWALL_PRIORITY_NORMAL => c"normal".as_ptr(),
        SEAWALL_PRIORITY_LOW => c"low".as_ptr(),
        _ => c"unknown".as_ptr(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use seawall_host::semaphore::{SEMAPHORE_MAX_CONCURRENT, SEMAPHORE_MAX_QUEUE};

    #[test]
    fn c_limits_mirror_the_rust_constants() {
        assert_eq!(
            SEAWALL_SEMAPHORE_MAX_CONCURRENT as usize,
            SEMAPHORE_MAX_CONCURRENT
        );
        assert_eq!(SEAWALL_SEMAPHORE_MAX_QUEUE as usize, SEMAPHORE_MAX_QUEUE);
        for (i, p) in Priority::ALL.iter().enumerate() {
            assert_eq!(*p as usize, i, "C priority values are the core's");
        }
    }

    #[test]
    fn default_config_is_the_design_default() {
        let c = seawall_semaphore_config_default();
        // DESIGN §5: a plain bulkhead of 10 permits, no queue, every share 100 %.
        assert_eq!(c.max_concurrent, 10);
        assert_eq!(c.max_queue, 0);
        for s in [
            c.critical_share_ppm,
            c.high_share_ppm,
            c.normal_share_ppm,
            c.low_share_ppm,
        ] {
            assert_eq!(s, 1_000_000);
        }
        assert_eq!(c_config(&core_config(&c)), c);
    }
}
