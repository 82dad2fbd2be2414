//! [`Semaphore`]: the one bulkhead handle of the C ABI and both bindings, local
//! or shared behind the same methods.

use core::ptr::NonNull;
use core::sync::atomic::{Ordering, fence};
use core::time::Duration;

use seawall_core::{
    CancelOutcome, ConfigError, Corrupt, Priority, RawAdmission, RejectReason, SemaphoreConfig,
    SemaphoreRejected, SemaphoreSnapshot, Ticket as CoreTicket, TicketState,
};

use super::cell::{AcquireError, Acquired, Cancelled, Permit, Polled, Ticket};
use super::region::{Cell, SEMAPHORE_MAX_QUEUE};
use super::ring::{Ring, each};
use super::totals::{BulkheadTotals, GaveUp, SharedTotals};
use super::wake;
use crate::handle::Handle;
use crate::holders::HolderError;
use crate::shared::{OpenOptions, RegionError, sanity};
use crate::sync::{AtomicU32, AtomicU64};

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

enum Store {
    /// The core semaphore alone ([`Semaphore::local`]).
    Untracked(Ring),
    /// The core semaphore and its holder table, local or shared.
    Tracked(Handle<Cell>),
}

/// A bulkhead with permits and queue tickets as plain `u64` ids, in this process
/// or shared. Every method may be called from any number of threads at once.
///
/// *Tracked* semaphores ([`new`](Self::new), and every shared one) keep a holder
/// table ([`crate::holders`]): each permit and ticket is single-use (a second
/// release is [`HolderError::AlreadyUsed`]), names the process that holds it,
/// and can be reclaimed when that process dies. They take up to
/// [`SEMAPHORE_MAX_QUEUE`] waiters and [`super::SEMAPHORE_MAX_CONCURRENT`]
/// permits. An *untracked* local semaphore ([`local`](Self::local)) is the core
/// semaphore alone: faster, up to [`super::LOCAL_MAX_QUEUE`] waiters, for a
/// runtime whose own objects make each permit single-use; its permits all have
/// id 0 and a release only fails when no permit is held at all.
pub struct Semaphore {
    store: Store,
    /// An untracked semaphore's release counter and sleepers (a tracked
    /// one's are in its cell, shared with every process that shares it).
    released: AtomicU32,
    sleepers: AtomicU32,
    /// An untracked semaphore's totals (a tracked one's are in its cell), and
    /// its calls answered, which a tracked one reads off its holder table.
    untracked_totals: SharedTotals,
    untracked_calls: AtomicU64,
    /// The configuration this process holds (its own, or the region's when it
    /// attached to caller memory): what values read from a shared region are
    /// checked against (DESIGN §8).
    held_config: SemaphoreConfig,
}

/// A thread that waits for a grant by sleeping on the release counter
/// ([`Semaphore::release_waiter`]): while it exists, releases wake sleepers.
/// Read [`count`](Self::count) before each look at the ticket, then
/// [`sleep`](Self::sleep) with what was read.
#[derive(Debug)]
pub struct ReleaseWaiter<'a> {
    sem: &'a Semaphore,
}

impl ReleaseWaiter<'_> {
    /// The release counter now.
    #[must_use]
    pub fn count(&self) -> u32 {
        self.sem.released().load(Ordering::Acquire)
    }

    /// Sleep until a release, cancel or reclaim that may have granted a ticket
    /// (in any process sharing the semaphore) changes the release counter from
    /// `seen`, or `timeout` passes (always bounded, whatever a shared region
    /// holds). Returns at once if it changed already; false where the OS has
    /// no such wait (not Linux), having slept nothing.
    #[must_use = "false: there is no such wait here and nothing slept"]
    pub fn sleep(&self, seen: u32, timeout: Duration) -> bool {
        wake::wait(self.sem.released(), seen, timeout)
    }
}

impl Drop for ReleaseWaiter<'_> {
    fn drop(&mut self) {
        self.sem.sleepers().fetch_sub(1, Ordering::SeqCst);
    }
}

impl core::fmt::Debug for Semaphore {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match &self.store {
            Store::Untracked(r) => f
                .debug_struct("Semaphore")
                .field("ring", &r.capacity())
                .finish_non_exhaustive(),
            Store::Tracked(h) => f.debug_tuple("Semaphore").field(h).finish(),
        }
    }
}

fn full(s: SemaphoreSnapshot) -> SemaphoreRejected {
    SemaphoreRejected {
        reason: RejectReason::Full,
        active: s.active,
        queued: s.queued,
    }
}

/// An untracked ticket is the core's `u32` id; a larger id names none.
fn core_ticket(t: Ticket) -> Option<CoreTicket> {
    u32::try_from(t.id).ok().map(|id| CoreTicket { id })
}

impl Semaphore {
    fn of(store: Store) -> Self {
        let held_config = match &store {
            Store::Untracked(r) => each!(r, s => *s.config()),
            Store::Tracked(h) => h.config(),
        };
        Self {
            store,
            released: AtomicU32::new(0),
            sleepers: AtomicU32::new(0),
            untracked_totals: SharedTotals::new(),
            untracked_calls: AtomicU64::new(0),
            held_config,
        }
    }

    /// A refusal `r` whose occupancy the configuration allows, or [`Corrupt`]
    /// (an overwritten region reporting `693 800 active` on a bulkhead of 4).
    fn checked_refusal<T>(
        &self,
        r: Result<Result<T, AcquireError>, Corrupt>,
    ) -> Result<Result<T, AcquireError>, Corrupt> {
        match r? {
            Err(AcquireError::Rejected(rej)) => {
                // A region whose configuration was overwritten (zeroed, or
                // another limit) refuses by rules nobody agreed to.
                self.config_agreed()?;
                Ok(Err(AcquireError::Rejected(
                    sanity::check_semaphore_rejected(&self.held_config, rej)?,
                )))
            }
            other => Ok(other),
        }
    }

    /// [`snapshot`](Self::snapshot), or [`Corrupt`] when it counts more permits
    /// or waiters than the configuration allows, or the region's configuration
    /// is no longer the one agreed.
    pub fn snapshot_checked(&self) -> Result<SemaphoreSnapshot, Corrupt> {
        self.config_agreed()?;
        sanity::check_snapshot(&self.held_config, self.snapshot())
    }

    /// [`Corrupt`] when a shared region's configuration is no longer the one
    /// this process agreed to at open.
    fn config_agreed(&self) -> Result<(), Corrupt> {
        match &self.store {
            Store::Tracked(h) if h.config() != self.held_config => Err(Corrupt),
            _ => Ok(()),
        }
    }

    /// [`full_snapshot`](Self::full_snapshot), checked as
    /// [`snapshot_checked`](Self::snapshot_checked).
    pub fn full_snapshot_checked(&self) -> Result<Snapshot, Corrupt> {
        self.snapshot_checked()?;
        Ok(self.full_snapshot())
    }

    /// [`limit`](Self::limit), or [`Corrupt`] when it is not what the
    /// configuration gives priority `p`.
    pub fn limit_checked(&self, p: Priority) -> Result<u32, Corrupt> {
        sanity::check_limit(self.held_config.limit(p), self.limit(p))
    }

    /// Count an untracked semaphore's answer `a` to an acquire that may wait
    /// (`wait`) or not: its outcome, then the call (the order `super::totals`
    /// reads them in reverse).
    fn count_untracked(
        &self,
        a: Result<RawAdmission, SemaphoreRejected>,
        wait: bool,
    ) -> Result<RawAdmission, SemaphoreRejected> {
        match &a {
            Ok(RawAdmission::Admitted) => {}
            Ok(RawAdmission::Queued(_)) if wait => self.untracked_totals.queued(),
            // `wait = false` never queues; were it to, it leaves at once.
            Ok(RawAdmission::Queued(_)) => self.untracked_totals.refused(RejectReason::Full),
            Err(r) => self.untracked_totals.refused(r.reason),
        }
        self.untracked_calls.fetch_add(1, Ordering::Relaxed);
        a
    }

    /// Lifetime figures: of every process sharing the semaphore for a shared
    /// one (they live in its region), of this handle for a local one. A scan
    /// of the holder table for a tracked one: for metrics, not the hot path.
    #[must_use]
    pub fn totals(&self) -> BulkheadTotals {
        match &self.store {
            Store::Untracked(_) => self
                .untracked_totals
                .read(self.untracked_calls.load(Ordering::Relaxed)),
            Store::Tracked(h) => h.totals(),
        }
    }

    /// A waiter left the queue without a permit, for `why` (the runtime knows
    /// why it cancels): counted in [`totals`](Self::totals).
    pub fn gave_up(&self, why: GaveUp) {
        match &self.store {
            Store::Untracked(_) => self.untracked_totals.gave_up(why),
            Store::Tracked(h) => h.gave_up(why),
        }
    }

    fn released(&self) -> &AtomicU32 {
        match &self.store {
            Store::Untracked(_) => &self.released,
            Store::Tracked(h) => h.released(),
        }
    }

    fn sleepers(&self) -> &AtomicU32 {
        match &self.store {
            Store::Untracked(_) => &self.sleepers,
            Store::Tracked(h) => h.sleepers(),
        }
    }

    /// Announce a thread that will wait for its ticket by sleeping on the
    /// release counter (see [`super::wake`]); it stops counting when the
    /// [`ReleaseWaiter`] is dropped.
    #[must_use]
    pub fn release_waiter(&self) -> ReleaseWaiter<'_> {
        self.sleepers().fetch_add(1, Ordering::SeqCst);
        // Paired with the fence of `notify`: either that release sees this
        // sleeper, or this thread's next look sees what the release granted.
        fence(Ordering::SeqCst);
        ReleaseWaiter { sem: self }
    }

    /// After a step that may have handed a permit to a waiter: wake the
    /// sleepers, if any may sleep and anyone waits (a granted waiter counts as
    /// queued until it polls).
    fn notify(&self) {
        fence(Ordering::SeqCst);
        if self.sleepers().load(Ordering::SeqCst) != 0 && self.snapshot().queued > 0 {
            wake::wake_all(self.released());
        }
    }

    /// This process attaches to a shared region (before it claims anything):
    /// its pid namespace is checked against the creator's (see
    /// [`crate::heal::HealGate`]), then what processes that died before this
    /// open held comes back, so a service restarted whole starts whole
    /// (DESIGN §8, "Self-healing").
    fn join_region(&self) {
        let Store::Tracked(h) = &self.store else {
            return;
        };
        h.heal_gate().attach(crate::heal::this_pid_namespace());
        if !self.created() && h.heal_gate().may_heal() {
            self.reclaim_abandoned();
        }
    }

    /// Self-healing (DESIGN §8): a caller of a shared semaphore that would be
    /// refused, shed or made to wait looks for dead holders first, when the
    /// region's gate says a look is due (one caller per 100 ms); whether the
    /// look gave a permit or place back.
    fn heal(&self) -> bool {
        let Store::Tracked(h) = &self.store else {
            return false;
        };
        h.is_shared()
            && h.heal_gate().due(crate::clock::monotonic_ns())
            && self.reclaim_abandoned() != (0, 0)
    }

    /// A tracked semaphore in this process's memory, or the first invalid field
    /// (`max_concurrent` 1 ..= 4096, `max_queue` 0 ..= 1024, shares ≤ 100 %).
    pub fn new(config: &SemaphoreConfig) -> Result<Self, ConfigError> {
        Ok(Self::of(Store::Tracked(Handle::new(config)?)))
    }

    /// An untracked semaphore in this process's memory, over the queue ring
    /// [`super::ring_size`] picks, or the first invalid field (`max_concurrent`
    /// ≥ 1, `max_queue` 0 ..= [`super::LOCAL_MAX_QUEUE`], shares ≤ 100 %).
    pub fn local(config: &SemaphoreConfig) -> Result<Self, ConfigError> {
        Ok(Self::of(Store::Untracked(Ring::new(config)?)))
    }

    /// Create or attach the semaphore `name` shared by every process of the
    /// host (`/dev/shm/seawall-semaphore-<name>`). Attaching gives back what
    /// processes that died held (DESIGN §8, "Self-healing") and changes
    /// nothing else; another configuration is [`RegionError::ConfigMismatch`].
    pub fn open_shared(
        name: &str,
        config: &SemaphoreConfig,
        options: &OpenOptions,
    ) -> Result<Self, RegionError> {
        let s = Self::of(Store::Tracked(Handle::open_shared(name, config, options)?));
        s.join_region();
        Ok(s)
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
        // SAFETY: forwarded from the caller.
        let h = unsafe { Handle::init_in(mem, len, config) }?;
        Ok(Self::of(Store::Tracked(h)))
    }

    /// Attach to a semaphore [`init_in`](Self::init_in) built. Changes nothing.
    ///
    /// # Safety
    /// As [`crate::shared::SharedRegion::attach`].
    pub unsafe fn attach(mem: NonNull<u8>, len: usize) -> Result<Self, RegionError> {
        // SAFETY: forwarded from the caller.
        let h = unsafe { Handle::attach(mem, len) }?;
        let s = Self::of(Store::Tracked(h));
        s.join_region();
        Ok(s)
    }

    /// Whether this handle created (and initialised) its semaphore.
    #[must_use]
    pub fn created(&self) -> bool {
        match &self.store {
            Store::Untracked(_) => true,
            Store::Tracked(h) => h.created(),
        }
    }

    /// Whether the semaphore lives in a shared region.
    #[must_use]
    pub fn is_shared(&self) -> bool {
        matches!(&self.store, Store::Tracked(h) if h.is_shared())
    }

    /// Bytes of memory the semaphore takes (its region, for a tracked one).
    #[must_use]
    pub fn memory_size(&self) -> usize {
        match &self.store {
            Store::Untracked(r) => r.size(),
            Store::Tracked(_) => Self::region_size(),
        }
    }

    /// Slots of the core's wait ring: the most `max_queue` this semaphore could
    /// have been built with.
    #[must_use]
    pub fn queue_capacity(&self) -> usize {
        match &self.store {
            Store::Untracked(r) => r.capacity(),
            Store::Tracked(_) => SEMAPHORE_MAX_QUEUE,
        }
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> SemaphoreConfig {
        // The one this process holds: a shared region's agreed with it at
        // open, and what the region reads now is not to be trusted (DESIGN §8).
        self.held_config
    }

    /// The limit of priority `p`: `max(1, ⌊max_concurrent · share⌋)`.
    #[must_use]
    pub fn limit(&self, p: Priority) -> u32 {
        match &self.store {
            Store::Untracked(r) => r.limit(p),
            Store::Tracked(h) => h.limit(p),
        }
    }

    /// Permits held and waiters queued now (one atomic load).
    #[must_use]
    pub fn snapshot(&self) -> SemaphoreSnapshot {
        match &self.store {
            Store::Untracked(r) => each!(r, s => s.snapshot()),
            Store::Tracked(h) => h.snapshot(),
        }
    }

    /// Occupancy and outstanding holders (scans the holder table: not for the
    /// hot path; [`snapshot`](Self::snapshot) is one load). An untracked
    /// semaphore counts no holders: both are 0.
    #[must_use]
    pub fn full_snapshot(&self) -> Snapshot {
        let s = self.snapshot();
        let (permits_outstanding, tickets_outstanding) = match &self.store {
            Store::Untracked(_) => (0, 0),
            Store::Tracked(h) => h.outstanding(),
        };
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
    /// correct where every sharer sees the same pids (one pid namespace). An
    /// untracked semaphore has nothing to reclaim: `(0, 0)`.
    #[allow(
        clippy::must_use_candidate,
        reason = "the counts are informative; the reclaim is the point"
    )]
    pub fn reclaim_abandoned(&self) -> (u64, u64) {
        let n = match &self.store {
            Store::Untracked(_) => (0, 0),
            Store::Tracked(h) => h.reclaim_dead(),
        };
        if n != (0, 0) {
            self.notify();
        }
        n
    }

    /// Permits and tickets that processes which no longer exist hold, `(permits,
    /// tickets)`: reported until a caller that needs them gives them back
    /// (DESIGN §8, "Self-healing"). A scan of the holder table asking the OS
    /// about each process it names: for metrics and health checks, not the
    /// hot path. `(0, 0)` for an untracked semaphore.
    #[must_use]
    pub fn abandoned(&self) -> (u64, u64) {
        match &self.store {
            Store::Untracked(_) => (0, 0),
            Store::Tracked(h) => h.held_by_dead(crate::owner::pid::dead_memo()),
        }
    }

    /// Release the permits and cancel the tickets this process holds; `(permits,
    /// tickets)`: for a runtime that is ending, whose remaining holders and
    /// waiters will never give back (an interpreter's daemon threads at exit).
    /// An untracked semaphore has nothing to give back: `(0, 0)`.
    #[allow(
        clippy::must_use_candidate,
        reason = "the counts are informative; the give-back is the point"
    )]
    pub fn reclaim_own(&self) -> (u64, u64) {
        let me = crate::owner::pid::owner();
        let n = match &self.store {
            Store::Untracked(_) => (0, 0),
            Store::Tracked(h) => h.reclaim(|pid| pid != me),
        };
        if n != (0, 0) {
            self.notify();
        }
        n
    }

    /// A permit now for priority `p`, or the rejection; never waits. A
    /// corrupted shared region refuses it as full with the occupancy it reads
    /// (see [`try_acquire_checked`](Self::try_acquire_checked)).
    pub fn try_acquire(&self, p: Priority) -> Result<Permit, AcquireError> {
        self.try_acquire_checked(p)
            .unwrap_or_else(|Corrupt| Err(AcquireError::Rejected(full(self.snapshot()))))
    }

    /// A permit now, or a place in the queue if there is room, for priority
    /// `p`. A corrupted shared region refuses it as full (see
    /// [`acquire_or_enqueue_checked`](Self::acquire_or_enqueue_checked)).
    pub fn acquire_or_enqueue(&self, p: Priority) -> Result<Acquired, AcquireError> {
        self.acquire_or_enqueue_checked(p)
            .unwrap_or_else(|Corrupt| Err(AcquireError::Rejected(full(self.snapshot()))))
    }

    /// [`acquire_or_enqueue`](Self::acquire_or_enqueue) when `wait`, else
    /// [`try_acquire`](Self::try_acquire).
    pub fn acquire(&self, p: Priority, wait: bool) -> Result<Acquired, AcquireError> {
        if wait {
            self.acquire_or_enqueue(p)
        } else {
            self.try_acquire(p).map(Acquired::Admitted)
        }
    }

    /// Give permit `p` back once: to the oldest waiter, or to the pool. An
    /// untracked semaphore fails ([`HolderError::AlreadyUsed`]) only when it
    /// holds no permit at all.
    pub fn release(&self, p: Permit) -> Result<(), HolderError> {
        let released = match &self.store {
            Store::Untracked(r) => {
                if each!(r, s => s.release()) {
                    Ok(())
                } else {
                    Err(HolderError::AlreadyUsed)
                }
            }
            Store::Tracked(h) => h.release(p),
        };
        if released.is_ok() {
            self.notify();
        }
        released
    }

    /// Where ticket `t` stands, taking nothing (a granted ticket stays granted
    /// until its [`poll`](Self::poll)): for a waker that must not take a grant
    /// meant for another thread.
    #[must_use]
    pub fn peek(&self, t: Ticket) -> TicketState {
        match &self.store {
            Store::Untracked(r) => {
                core_ticket(t).map_or(TicketState::Unknown, |c| each!(r, s => s.peek(c)))
            }
            Store::Tracked(h) => h.peek(t),
        }
    }

    /// Where ticket `t` stands; once granted, the caller holds the permit (the
    /// ticket's id, for a tracked semaphore) and the ticket is used up. Not
    /// waiting is [`HolderError::UnknownTicket`] (taken, cancelled, reclaimed);
    /// an untracked semaphore says [`HolderError::Foreign`] for an id it never
    /// issued.
    pub fn poll(&self, t: Ticket) -> Result<Polled, HolderError> {
        match &self.store {
            Store::Untracked(r) => {
                let c = core_ticket(t).ok_or(HolderError::Foreign)?;
                match each!(r, s => s.poll(c)) {
                    TicketState::Waiting => Ok(Polled::Waiting),
                    TicketState::Granted => {
                        self.untracked_totals.granted();
                        Ok(Polled::Granted(Permit { id: 0 }))
                    }
                    TicketState::Cancelled => Err(HolderError::UnknownTicket),
                    TicketState::Unknown => Err(HolderError::Foreign),
                }
            }
            Store::Tracked(h) => {
                let polled = h.poll(t);
                if polled == Ok(Polled::Waiting) && self.heal() {
                    return h.poll(t);
                }
                polled
            }
        }
    }

    /// Ticket `t` gives up and leaves the queue at once; a permit granted to it
    /// in the same instant is passed on.
    pub fn cancel(&self, t: Ticket) -> Result<Cancelled, HolderError> {
        let cancelled = self.cancel_step(t);
        if cancelled == Ok(Cancelled::PassedOn) {
            self.notify();
        }
        cancelled
    }

    fn cancel_step(&self, t: Ticket) -> Result<Cancelled, HolderError> {
        match &self.store {
            Store::Untracked(r) => {
                let c = core_ticket(t).ok_or(HolderError::UnknownTicket)?;
                match each!(r, s => s.cancel(c)) {
                    CancelOutcome::Cancelled => Ok(Cancelled::Cancelled),
                    CancelOutcome::PassedOn => Ok(Cancelled::PassedOn),
                    CancelOutcome::Unknown => Err(HolderError::UnknownTicket),
                }
            }
            Store::Tracked(h) => h.cancel(t),
        }
    }
}

/// The forms that tell a corrupted shared region apart (DESIGN §8): each is its
/// plain form, with [`Corrupt`] when the semaphore's words hold what seawall
/// never writes or kept a retry loop going past its bound, which no honest use
/// of the semaphore does. The plain forms turn it into their nearest answer: a
/// refusal as full, a release done, a ticket gone, a waiter cancelled.
impl Semaphore {
    /// [`try_acquire`](Self::try_acquire), or [`Corrupt`]: no permit is held
    /// then.
    pub fn try_acquire_checked(
        &self,
        p: Priority,
    ) -> Result<Result<Permit, AcquireError>, Corrupt> {
        let got = match &self.store {
            Store::Untracked(r) => Ok(
                match self.count_untracked(each!(r, s => s.acquire_raw_checked(p, false))?, false) {
                    Ok(RawAdmission::Admitted) => Ok(Permit { id: 0 }),
                    // `wait = false` never queues; were it to, leaving is the answer.
                    Ok(RawAdmission::Queued(t)) => {
                        each!(r, s => s.cancel_checked(t))?;
                        Err(AcquireError::Rejected(full(self.snapshot())))
                    }
                    Err(rej) => Err(AcquireError::Rejected(rej)),
                },
            ),
            // A refusal first gives back what dead holders hold (DESIGN §8).
            Store::Tracked(h) => h.try_acquire_healing_checked(p, &|| self.heal()),
        };
        self.checked_refusal(got)
    }

    /// [`acquire_or_enqueue`](Self::acquire_or_enqueue), or [`Corrupt`]: no
    /// permit or ticket is held then.
    pub fn acquire_or_enqueue_checked(
        &self,
        p: Priority,
    ) -> Result<Result<Acquired, AcquireError>, Corrupt> {
        let got = match &self.store {
            Store::Untracked(r) => Ok(
                match self.count_untracked(each!(r, s => s.acquire_raw_checked(p, true))?, true) {
                    Ok(RawAdmission::Admitted) => Ok(Acquired::Admitted(Permit { id: 0 })),
                    Ok(RawAdmission::Queued(t)) => Ok(Acquired::Queued(Ticket {
                        id: u64::from(t.id),
                    })),
                    Err(rej) => Err(AcquireError::Rejected(rej)),
                },
            ),
            Store::Tracked(h) => {
                // A refusal first gives back what dead holders hold; a caller
                // queued looks after: what comes back is granted to the queue
                // in order, its ticket included (DESIGN §8).
                let got = h.acquire_or_enqueue_healing_checked(p, &|| self.heal());
                if matches!(got, Ok(Ok(Acquired::Queued(_)))) {
                    self.heal();
                }
                got
            }
        };
        self.checked_refusal(got)
    }

    /// [`acquire`](Self::acquire), or [`Corrupt`].
    pub fn acquire_checked(
        &self,
        p: Priority,
        wait: bool,
    ) -> Result<Result<Acquired, AcquireError>, Corrupt> {
        if wait {
            self.acquire_or_enqueue_checked(p)
        } else {
            Ok(self.try_acquire_checked(p)?.map(Acquired::Admitted))
        }
    }

    /// [`release`](Self::release), or [`Corrupt`]: the permit is used up then;
    /// where it went is unspecified.
    pub fn release_checked(&self, p: Permit) -> Result<Result<(), HolderError>, Corrupt> {
        let released = self.release_checked_step(p);
        if matches!(released, Ok(Ok(()))) {
            self.notify();
        }
        released
    }

    fn release_checked_step(&self, p: Permit) -> Result<Result<(), HolderError>, Corrupt> {
        match &self.store {
            Store::Untracked(r) => Ok(if each!(r, s => s.release_checked())? {
                Ok(())
            } else {
                Err(HolderError::AlreadyUsed)
            }),
            Store::Tracked(h) => h.release_checked(p),
        }
    }

    /// [`poll`](Self::poll), or [`Corrupt`]: the ticket is used up then; whether
    /// its permit is held is unspecified.
    pub fn poll_checked(&self, t: Ticket) -> Result<Result<Polled, HolderError>, Corrupt> {
        match &self.store {
            Store::Untracked(r) => {
                let Some(c) = core_ticket(t) else {
                    return Ok(Err(HolderError::Foreign));
                };
                Ok(match each!(r, s => s.poll_checked(c))? {
                    TicketState::Waiting => Ok(Polled::Waiting),
                    TicketState::Granted => {
                        self.untracked_totals.granted();
                        Ok(Polled::Granted(Permit { id: 0 }))
                    }
                    TicketState::Cancelled => Err(HolderError::UnknownTicket),
                    TicketState::Unknown => Err(HolderError::Foreign),
                })
            }
            Store::Tracked(h) => {
                let polled = h.poll_checked(t);
                if polled == Ok(Ok(Polled::Waiting)) && self.heal() {
                    return h.poll_checked(t);
                }
                polled
            }
        }
    }

    /// [`cancel`](Self::cancel), or [`Corrupt`]: the ticket is used up and
    /// nothing is held then.
    pub fn cancel_checked(&self, t: Ticket) -> Result<Result<Cancelled, HolderError>, Corrupt> {
        let cancelled = self.cancel_checked_step(t);
        if cancelled == Ok(Ok(Cancelled::PassedOn)) {
            self.notify();
        }
        cancelled
    }

    fn cancel_checked_step(&self, t: Ticket) -> Result<Result<Cancelled, HolderError>, Corrupt> {
        match &self.store {
            Store::Untracked(r) => {
                let Some(c) = core_ticket(t) else {
                    return Ok(Err(HolderError::UnknownTicket));
                };
                Ok(match each!(r, s => s.cancel_checked(c))? {
                    CancelOutcome::Cancelled => Ok(Cancelled::Cancelled),
                    CancelOutcome::PassedOn => Ok(Cancelled::PassedOn),
                    CancelOutcome::Unknown => Err(HolderError::UnknownTicket),
                })
            }
            Store::Tracked(h) => h.cancel_checked(t),
        }
    }
}
