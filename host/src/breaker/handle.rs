//! The [`Breaker`] handle: one type for a breaker in this process or shared,
//! with or without a permit table, dispatching to its cell.

use core::ops::Deref;
use core::ptr::NonNull;

use seawall_core::{
    BreakerConfig, BreakerMetrics, ConfigError, Corrupt, Outcome, PermitToken, Rejected, State,
    WindowConfig,
};

use super::cell::{CountCell, TimeCell};
use super::local::{Untracked, each_untracked};
use super::observed::Observed;
use super::slots::{PermitSlots, Tracked, each_tracked};
use super::{AcquireError, Permit};
use crate::permits::PermitError;
use crate::shared::{self, OpenOptions, RegionError, Shareable, SharedRegion, sanity};

/// Where a cell lives.
pub(super) enum Storage<T: Shareable> {
    Local(Box<T>),
    Shared(SharedRegion<T>),
}

impl<T: Shareable> Deref for Storage<T> {
    type Target = T;
    fn deref(&self) -> &T {
        match self {
            Self::Local(b) => b,
            Self::Shared(r) => r,
        }
    }
}

enum Inner {
    /// With a permit table, in this process or shared.
    Tracked(Tracked),
    /// In this process, without a permit table.
    Untracked(Untracked),
}

/// A snapshot of a breaker: the core's metrics plus the permits outstanding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Metrics {
    /// State, window, rates and lifetime totals.
    pub core: BreakerMetrics,
    /// Permits admitted and not yet recorded; `None` for a breaker without a
    /// permit table (it does not know).
    pub permits_outstanding: Option<u64>,
}

/// A circuit breaker, in this process or shared, with single-use permits or
/// (in this process only) without a permit table.
pub struct Breaker {
    inner: Inner,
    created: bool,
    /// The configuration this process holds (its own, or the region's when it
    /// attached to caller memory), and the longest open period it allows:
    /// what values read from a shared region are checked against (DESIGN §8).
    config: BreakerConfig,
    longest_open_ns: u64,
}

impl core::fmt::Debug for Breaker {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Breaker")
            .field("state", &self.state())
            .field("epoch", &self.epoch())
            .field("shared", &self.is_shared())
            .finish_non_exhaustive()
    }
}

/// Run `$tracked` with `$c` bound to the cell of a breaker with a permit table,
/// or `$untracked` with `$b` bound to the core breaker of one without.
macro_rules! dispatch {
    ($self:expr, cell $c:ident => $tracked:expr, core $b:ident => $untracked:expr) => {
        match &$self.inner {
            Inner::Tracked(t) => each_tracked!(t, _s, $c => $tracked),
            Inner::Untracked(u) => each_untracked!(u, $b => $untracked),
        }
    };
}

/// Run `$e` with `$b` bound to the core breaker, whatever surrounds it.
macro_rules! with_breaker {
    ($self:expr, $b:ident => $e:expr) => {
        dispatch!($self, cell c => { let $b = &c.breaker; $e }, core $b => $e)
    };
}

/// Whether refusal `e` may be capacity a dead process holds: every half-open
/// probe slot taken, or every permit slot. An open breaker's refusal is its
/// open period's, which no holder shortens.
fn holds_capacity(e: &AcquireError) -> bool {
    match e {
        AcquireError::PermitsExhausted => true,
        AcquireError::Rejected(r) => r.state == State::HalfOpen,
    }
}

impl Breaker {
    fn of(inner: Inner, created: bool) -> Self {
        let mut b = Self {
            inner,
            created,
            config: BreakerConfig::DEFAULT,
            longest_open_ns: 0,
        };
        b.config = with_breaker!(b, c => *c.config());
        b.longest_open_ns = sanity::longest_open_ns(&b.config);
        b
    }

    /// A breaker in this process's memory, with a permit table: a permit recorded
    /// twice is [`PermitError::AlreadyUsed`] the second time (what C callers get).
    pub fn new(config: BreakerConfig) -> Result<Self, ConfigError> {
        Ok(Self::of(Inner::Tracked(Tracked::local(&config)?), true))
    }

    /// A breaker in this process's memory without a permit table, for a host
    /// runtime whose permit objects are single-use by themselves: [`record`](Self::record)
    /// records whatever permit it is given (one recorded twice counts twice),
    /// [`reclaim_abandoned`](Self::reclaim_abandoned) finds nothing and
    /// [`Metrics::permits_outstanding`] is `None`. It takes far less memory (no
    /// table; the smallest window type that fits) and admits a call without
    /// claiming a table slot.
    pub fn new_without_permit_table(config: BreakerConfig) -> Result<Self, ConfigError> {
        Ok(Self::of(Inner::Untracked(Untracked::new(config)?), true))
    }

    /// Create or attach the breaker named `name`, shared by every process of the
    /// host (`/dev/shm/seawall-breaker-<name>`), with the default
    /// [`PermitSlots`]. Attaching gives back, as ignored, the permits of
    /// processes that died (DESIGN §8, "Self-healing"), and changes nothing
    /// else; a region built with another configuration (window kind included)
    /// is an error.
    pub fn open_shared(
        name: &str,
        config: &BreakerConfig,
        options: &OpenOptions,
    ) -> Result<Self, RegionError> {
        Self::open_shared_with_slots(name, config, PermitSlots::DEFAULT, options)
    }

    /// [`open_shared`](Self::open_shared) with a permit table of `slots`: at most
    /// so many permits outstanding at once over every process. A region of
    /// another size is a [`RegionError::ConfigMismatch`] naming
    /// [`Field::PermitSlots`](seawall_core::Field::PermitSlots).
    pub fn open_shared_with_slots(
        name: &str,
        config: &BreakerConfig,
        slots: PermitSlots,
        options: &OpenOptions,
    ) -> Result<Self, RegionError> {
        let (t, created) = Tracked::open_shared(name, config, slots, options)?;
        let b = Self::of(Inner::Tracked(t), created);
        b.join_region();
        Ok(b)
    }

    /// Remove the shared breaker `name` (a missing one is fine). Attached processes
    /// keep using theirs; the next [`open_shared`](Self::open_shared) creates anew.
    pub fn unlink_shared(name: &str) -> Result<(), RegionError> {
        shared::unlink::<CountCell>(name)
    }

    /// Bytes of caller memory [`init_in`](Self::init_in) needs for any configuration.
    #[must_use]
    pub const fn region_size() -> usize {
        let (a, b) = (
            SharedRegion::<CountCell>::SIZE,
            SharedRegion::<TimeCell>::SIZE,
        );
        if a > b { a } else { b }
    }

    /// Alignment of caller memory for [`init_in`](Self::init_in).
    #[must_use]
    pub const fn region_align() -> usize {
        let (a, b) = (
            SharedRegion::<CountCell>::ALIGN,
            SharedRegion::<TimeCell>::ALIGN,
        );
        if a > b { a } else { b }
    }

    /// Build a breaker in caller memory (see [`SharedRegion::init_in`]).
    ///
    /// # Safety
    /// As [`SharedRegion::init_in`].
    pub unsafe fn init_in(
        mem: NonNull<u8>,
        len: usize,
        config: &BreakerConfig,
    ) -> Result<Self, RegionError> {
        // SAFETY: forwarded from the caller.
        let inner = unsafe {
            match config.window {
                WindowConfig::Count { .. } => {
                    Tracked::Count4096(Storage::Shared(SharedRegion::init_in(mem, len, config)?))
                }
                WindowConfig::Time { .. } => {
                    Tracked::Time4096(Storage::Shared(SharedRegion::init_in(mem, len, config)?))
                }
            }
        };
        Ok(Self::of(Inner::Tracked(inner), true))
    }

    /// Attach to a breaker [`init_in`](Self::init_in) built in caller memory,
    /// whichever its window kind. Changes nothing.
    ///
    /// # Safety
    /// As [`SharedRegion::attach`].
    pub unsafe fn attach(mem: NonNull<u8>, len: usize) -> Result<Self, RegionError> {
        // SAFETY: forwarded from the caller.
        let inner = match unsafe { SharedRegion::<CountCell>::attach(mem, len) } {
            Ok(r) => Tracked::Count4096(Storage::Shared(r)),
            Err(RegionError::LayoutMismatch { .. }) => {
                // SAFETY: forwarded from the caller.
                Tracked::Time4096(Storage::Shared(unsafe { SharedRegion::attach(mem, len) }?))
            }
            Err(e) => return Err(e),
        };
        let b = Self::of(Inner::Tracked(inner), false);
        b.join_region();
        Ok(b)
    }

    /// Whether this handle created (and initialised) its breaker.
    #[must_use]
    pub fn created(&self) -> bool {
        self.created
    }

    /// Whether the breaker lives in a shared region (named or caller memory).
    #[must_use]
    pub fn is_shared(&self) -> bool {
        matches!(&self.inner, Inner::Tracked(t) if t.is_shared())
    }

    /// Whether the breaker has a permit table (every permit usable once).
    #[must_use]
    pub fn has_permit_table(&self) -> bool {
        !matches!(self.inner, Inner::Untracked(_))
    }

    /// Slots of the permit table (most permits outstanding at once), `None`
    /// without one.
    #[must_use]
    pub fn permit_slots(&self) -> Option<usize> {
        match &self.inner {
            Inner::Tracked(t) => Some(t.permit_slots()),
            Inner::Untracked(_) => None,
        }
    }

    /// Bytes of this process's memory the breaker takes (0 for a shared one: its
    /// region is mapped, not allocated), for runtimes whose collector wants to
    /// know what a small handle keeps alive.
    #[must_use]
    pub fn local_size(&self) -> usize {
        match &self.inner {
            Inner::Tracked(t) => t.local_size(),
            Inner::Untracked(u) => u.size(),
        }
    }

    /// The configuration the breaker was built with (for a shared one: its
    /// creator's, jitter seed included).
    #[must_use]
    pub fn config(&self) -> BreakerConfig {
        with_breaker!(self, b => *b.config())
    }

    /// Ask to make one call at `now` (ns). A corrupted shared region rejects the
    /// call (see [`try_acquire_checked`](Self::try_acquire_checked)).
    pub fn try_acquire(&self, now: u64) -> Result<Permit, AcquireError> {
        self.try_acquire_at(|| now)
    }

    /// [`try_acquire`](Self::try_acquire), telling a corrupted shared region
    /// apart: [`Corrupt`] when the breaker's words hold what seawall never writes
    /// or kept changing under [`seawall_core::MAX_RETRIES`] passes (no permit is
    /// held then).
    pub fn try_acquire_checked(&self, now: u64) -> Result<Result<Permit, AcquireError>, Corrupt> {
        self.try_acquire_checked_at(|| now)
    }

    /// [`try_acquire`](Self::try_acquire) asking `now` (ns) only when the
    /// decision needs the time: a closed or disabled breaker admits without
    /// reading the clock (see the core's `acquire_token_checked_at`).
    pub fn try_acquire_at(&self, now: impl FnOnce() -> u64) -> Result<Permit, AcquireError> {
        self.try_acquire_checked_at(now).unwrap_or_else(|Corrupt| {
            Err(AcquireError::Rejected(Rejected {
                state: self.state(),
                retry_after_ns: None,
            }))
        })
    }

    /// [`try_acquire_checked`](Self::try_acquire_checked) asking `now` (ns)
    /// only when the decision needs it; `now` is called at most once.
    pub fn try_acquire_checked_at(
        &self,
        now: impl FnOnce() -> u64,
    ) -> Result<Result<Permit, AcquireError>, Corrupt> {
        // The time is read once at most, and kept for what a refusal does.
        let mut clock = Some(now);
        let mut read = None;
        let first = self.acquire_once(|| *read.insert(clock.take().map_or(0, |f| f())));
        match first {
            // An admission (the hot path) or a corrupt region: nothing more.
            Ok(Ok(_)) | Err(Corrupt) => first,
            Ok(Err(e)) => self.after_refusal(e, read.unwrap_or_else(|| clock.map_or(0, |f| f()))),
        }
    }

    /// What a refusal at `now` (ns) does, out of the admission's way: a refusal
    /// that may be capacity a dead process holds first gives it back and asks
    /// again (self-healing); a refusal read from a shared region is checked
    /// against the configuration this process holds (a retry-after of decades
    /// is an overwritten region, not an answer).
    #[cold]
    #[inline(never)]
    fn after_refusal(
        &self,
        e: AcquireError,
        now: u64,
    ) -> Result<Result<Permit, AcquireError>, Corrupt> {
        let answer = if holds_capacity(&e) && self.heal(now) {
            self.acquire_once(|| now)?
        } else {
            Err(e)
        };
        match answer {
            Err(AcquireError::Rejected(r)) => Ok(Err(AcquireError::Rejected(
                sanity::check_rejected(self.longest_open_ns, r)?,
            ))),
            other => Ok(other),
        }
    }

    fn acquire_once(
        &self,
        now: impl FnOnce() -> u64,
    ) -> Result<Result<Permit, AcquireError>, Corrupt> {
        dispatch!(self,
            cell c => c.try_acquire_checked_at(now),
            core b => Ok(match b.acquire_token_checked_at(now)? {
                Ok(t) => Ok(Permit { id: 0, epoch: t.epoch }),
                Err(r) => Err(AcquireError::Rejected(r)),
            })
        )
    }

    /// This process attaches to a shared region (before it claims anything):
    /// its pid namespace is checked against the creator's (see
    /// [`crate::heal::HealGate`]), then, as ignored, what processes that died
    /// before this open held comes back, so a service restarted whole starts
    /// whole (DESIGN §8, "Self-healing").
    fn join_region(&self) {
        let may_heal = dispatch!(self,
            cell c => {
                c.heal.attach(crate::heal::this_pid_namespace());
                c.heal.may_heal()
            },
            core _b => false
        );
        if !self.created && may_heal {
            self.reclaim_abandoned(crate::clock::monotonic_ns());
        }
    }

    /// Self-healing (DESIGN §8): a caller of a shared breaker refused while
    /// permits are held looks for dead holders first, when the region's gate
    /// says a look is due (one caller per 100 ms); whether the look gave a
    /// permit back (recorded as ignored at `now`).
    fn heal(&self, now: u64) -> bool {
        self.is_shared()
            && dispatch!(self,
                cell c => c.heal.due(crate::clock::monotonic_ns()),
                core _b => false
            )
            && self.reclaim_abandoned(now) > 0
    }

    /// Record how the call admitted with `permit` ended. With a permit table a
    /// permit works once: a second use is [`PermitError::AlreadyUsed`] and
    /// records nothing; without one, every call records.
    pub fn record(
        &self,
        permit: Permit,
        outcome: Outcome,
        duration_ns: u64,
        now: u64,
    ) -> Result<(), PermitError> {
        // A corrupted region has used the permit and counted the outcome in the
        // totals by the time it is noticed: for this caller the record is done.
        self.record_checked(permit, outcome, duration_ns, now)
            .unwrap_or(Ok(()))
    }

    /// [`record`](Self::record), telling a corrupted shared region apart:
    /// [`Corrupt`] when the window or the state word holds what seawall never
    /// writes or kept changing under [`seawall_core::MAX_RETRIES`] passes. The
    /// permit is used and the outcome is in the totals by then; the window and
    /// the state may or may not have it.
    pub fn record_checked(
        &self,
        permit: Permit,
        outcome: Outcome,
        duration_ns: u64,
        now: u64,
    ) -> Result<Result<(), PermitError>, Corrupt> {
        dispatch!(self,
            cell c => c.record_checked(permit, outcome, duration_ns, now),
            core b => {
                let token = PermitToken { epoch: permit.epoch };
                b.record_token_checked(token, outcome, duration_ns, now)?;
                Ok(Ok(()))
            }
        )
    }

    /// Give back, as `ignored` at `now` (ns), every permit held by a process that
    /// no longer exists (killed while its call ran; on Linux also one exited and
    /// not reaped yet, a zombie), so a shared breaker does not
    /// run out of permits or keep a dead probe's half-open slot. Returns how many.
    /// Only correct where every process sharing the breaker is in one pid
    /// namespace. Not for the hot path: it scans the permit table. A breaker
    /// without a permit table has nothing to reclaim (0).
    #[allow(
        clippy::must_use_candidate,
        reason = "the count is informative; the reclaim is the point"
    )]
    pub fn reclaim_abandoned(&self, now: u64) -> u64 {
        dispatch!(self,
            cell c => c.reclaim(crate::owner::pid::alive_memo(), now),
            core _b => 0
        )
    }

    /// Permits (probes included) that processes which no longer exist hold:
    /// reported until a caller that needs them gives them back (DESIGN §8,
    /// "Self-healing"). A scan of the permit table asking the OS about each
    /// process it names: for metrics and health checks, not the hot path. 0
    /// without a permit table.
    #[must_use]
    pub fn abandoned(&self) -> u64 {
        dispatch!(self,
            cell c => c.permits.held_by(crate::owner::pid::dead_memo()),
            core _b => 0
        )
    }

    /// Give back, as `ignored` at `now` (ns), every permit this process holds:
    /// for a runtime that is ending, whose remaining holders will never record
    /// (an interpreter's daemon threads at exit). A slot whose claimer has not
    /// stored its owner yet is left alone, as for a reclaim. Returns how many.
    /// Not for the hot path: it scans the permit table. A breaker without a
    /// permit table has nothing to give back (0).
    #[allow(
        clippy::must_use_candidate,
        reason = "the count is informative; the give-back is the point"
    )]
    pub fn reclaim_own(&self, now: u64) -> u64 {
        let me = crate::owner::pid::owner();
        dispatch!(self,
            cell c => c.permits.reclaim(|pid| pid != me, |epoch| {
                c.breaker.record_token(PermitToken { epoch }, Outcome::Ignored, 0, now);
            }),
            core _b => 0
        )
    }

    /// The current state (`open` until an acquire moves it on).
    #[must_use]
    pub fn state(&self) -> State {
        with_breaker!(self, b => b.state())
    }

    /// The current epoch (changes with every state change).
    #[must_use]
    pub fn epoch(&self) -> u32 {
        with_breaker!(self, b => b.epoch())
    }

    /// State and epoch of one moment (one read of the core's state word, which
    /// holds both).
    #[must_use]
    pub fn observe(&self) -> Observed {
        with_breaker!(self, b => {
            let (state, epoch) = b.state_and_epoch();
            Observed { state, epoch }
        })
    }

    /// What a rejection in `open` would report at `now` (ns).
    #[must_use]
    pub fn retry_after(&self, now: u64) -> Option<u64> {
        with_breaker!(self, b => b.retry_after(now))
    }

    /// [`retry_after`](Self::retry_after), or [`Corrupt`] when it is longer
    /// than any open period the configuration allows (an overwritten region).
    pub fn retry_after_checked(&self, now: u64) -> Result<Option<u64>, Corrupt> {
        sanity::check_retry_after_within(self.longest_open_ns, self.retry_after(now))
    }

    /// [`metrics`](Self::metrics), or [`Corrupt`] when the snapshot holds what
    /// the configuration never allows (see [`sanity::check_breaker_metrics`]).
    pub fn metrics_checked(&self, now: u64) -> Result<Metrics, Corrupt> {
        let m = self.metrics(now);
        sanity::check_breaker_metrics(&self.config, m.core)?;
        Ok(m)
    }

    /// A snapshot as of `now` (ns). Reading changes nothing: a permit or probe
    /// a dead process holds is reported (outstanding, and
    /// [`abandoned`](Self::abandoned)) until a caller that needs it gives it
    /// back (DESIGN §8, "Self-healing").
    #[must_use]
    pub fn metrics(&self, now: u64) -> Metrics {
        dispatch!(self,
            cell c => {
                let mut core = c.breaker.metrics(now);
                // The core counts a closed permit when it is recorded; the table
                // knows the ones in flight.
                core.totals.admitted = core.totals.admitted.wrapping_add(c.permits.held_non_probes());
                Metrics {
                    core,
                    permits_outstanding: Some(c.permits.outstanding()),
                }
            },
            core b => Metrics {
                core: b.metrics(now),
                permits_outstanding: None,
            }
        )
    }

    /// Reject every call until [`reset`](Self::reset).
    pub fn force_open(&self) {
        with_breaker!(self, b => b.force_open());
    }

    /// Admit every call, counting in totals only, until [`reset`](Self::reset).
    pub fn disable(&self) {
        with_breaker!(self, b => b.disable());
    }

    /// Back to `closed` with an empty window; outstanding permits become stale
    /// (they can still be recorded, once, into the totals).
    pub fn reset(&self) {
        with_breaker!(self, b => b.reset());
    }

    /// [`force_open`](Self::force_open) (`ForcedOpen`), [`disable`](Self::disable)
    /// (`Disabled`) or [`reset`](Self::reset) (`Closed`, and any other state),
    /// telling a corrupted shared region apart: [`Corrupt`] when the state word
    /// kept changing under [`seawall_core::MAX_RETRIES`] passes (nothing changed).
    pub fn set_manual_checked(&self, state: State) -> Result<(), Corrupt> {
        with_breaker!(self, b => b.set_manual_checked(state))
    }

    /// Start from an exported state at `now` (ns): see the core's
    /// `CircuitBreaker::restore` (DESIGN §3.7); [`Corrupt`] as for
    /// [`set_manual_checked`](Self::set_manual_checked).
    pub fn restore(
        &self,
        state: State,
        openings: u32,
        open_left_ns: u64,
        now: u64,
    ) -> Result<(), Corrupt> {
        // An open period longer than any the configuration allows (its own, or
        // a restored one up to `max_open_duration`) would read back as an
        // overwritten region: it is cut to the longest.
        let open_left_ns = open_left_ns.min(self.longest_open_ns);
        with_breaker!(self, b => b.restore(state, openings, open_left_ns, now))
    }
}
