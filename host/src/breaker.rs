//! The circuit breaker as C and the bindings see it: the window kind is chosen at
//! run time, permits are single-use values, and the breaker can live in this
//! process or in a region shared by every process of the host.
//!
//! Behind a [`Breaker`] is one of two fixed-capacity core breakers: a count window
//! of up to [`COUNT_WINDOW_CAPACITY`] calls or a time window of up to
//! [`TIME_WINDOW_CAPACITY`] buckets, each next to a [`PermitTable`] that makes
//! every permit usable once ([`crate::permits`]).

use core::mem::MaybeUninit;
use core::ops::Deref;
use core::ptr::NonNull;

use seawall_core::{
    BreakerConfig, BreakerMetrics, CircuitBreaker, ConfigError, Corrupt, CountWindow, Outcome,
    PermitToken, Rejected, SlidingWindow, State, TimeWindow, WindowConfig,
};

use crate::entropy::entropy;
use crate::permits::{PermitError, PermitTable};
use crate::shared::fingerprint::{fingerprint, opt};
use crate::shared::{self, OpenOptions, RegionError, Shareable, SharedRegion};

/// Largest count window (calls) a [`Breaker`] holds.
pub const COUNT_WINDOW_CAPACITY: usize = 1024;
/// Largest time window (buckets) a [`Breaker`] holds.
pub const TIME_WINDOW_CAPACITY: usize = 128;

/// A core breaker and its permit table, laid out for sharing.
#[repr(C)]
pub struct BreakerCell<W: SlidingWindow> {
    breaker: CircuitBreaker<W>,
    permits: PermitTable,
}

/// The cell behind count-window breakers.
pub type CountCell = BreakerCell<CountWindow<COUNT_WINDOW_CAPACITY>>;
/// The cell behind time-window breakers.
pub type TimeCell = BreakerCell<TimeWindow<TIME_WINDOW_CAPACITY>>;

impl<W: SlidingWindow> BreakerCell<W> {
    /// Build in place: the core breaker by value (a few KiB), the permit table
    /// slot by slot.
    fn build_in_place(
        slot: &mut MaybeUninit<Self>,
        config: &BreakerConfig,
    ) -> Result<(), ConfigError> {
        let breaker = CircuitBreaker::<W>::new(*config)?;
        let p = slot.as_mut_ptr();
        // SAFETY: `p` comes from `&mut MaybeUninit<Self>`: writable and aligned;
        // each field is written once through a raw pointer, never read before.
        unsafe { (&raw mut (*p).breaker).write(breaker) };
        // SAFETY: as above; `MaybeUninit<PermitTable>` has the table's layout.
        let permits = unsafe { &mut *(&raw mut (*p).permits).cast::<MaybeUninit<PermitTable>>() };
        PermitTable::init(permits, entropy());
        Ok(())
    }
}

/// The fingerprint every process sharing a breaker must agree on: every field of
/// the configuration except `jitter_seed` (each process may draw its own; the
/// region keeps its creator's).
#[must_use]
pub fn config_fingerprint(c: &BreakerConfig) -> u64 {
    let (kind, size, width) = match c.window {
        WindowConfig::Count { size } => (1, u64::from(size), 0),
        WindowConfig::Time {
            buckets,
            bucket_width_ns,
        } => (2, u64::from(buckets), bucket_width_ns),
    };
    let [fr0, fr1] = opt(c.failure_rate_threshold.map(seawall_core::Ratio::ppm));
    let [sd0, sd1] = opt(c.slow_call_duration_ns);
    let [cf0, cf1] = opt(c.consecutive_failures.map(u64::from));
    let [mo0, mo1] = opt(c.max_open_duration_ns);
    let [mw0, mw1] = opt(c.half_open_max_wait_ns);
    fingerprint(&[
        u64::from_le_bytes(*b"breaker\0"),
        kind,
        size,
        width,
        u64::from(c.minimum_calls),
        fr0,
        fr1,
        c.slow_call_rate_threshold.ppm(),
        sd0,
        sd1,
        cf0,
        cf1,
        c.open_duration_ns,
        c.open_backoff_multiplier.ppm(),
        mo0,
        mo1,
        c.open_jitter_factor.ppm(),
        u64::from(c.half_open_max_calls),
        u64::from(c.half_open_success_threshold),
        mw0,
        mw1,
    ])
}

macro_rules! shareable_breaker {
    ($cell:ty, $layout:expr, $what:expr) => {
        // SAFETY: `BreakerCell` is repr(C) of a core `CircuitBreaker` (repr(C),
        // pointer-free, plain fields written only by `new`) and a `PermitTable`
        // (a salt written only by `init`, then atomics); neither needs Drop.
        unsafe impl Shareable for $cell {
            const FAMILY: &'static str = "breaker";
            const LAYOUT_ID: u32 = $layout;
            const DESCRIPTION: &'static str = $what;
            type Config = BreakerConfig;
            fn fingerprint(config: &BreakerConfig) -> u64 {
                config_fingerprint(config)
            }
            fn init(
                slot: &mut MaybeUninit<Self>,
                config: &BreakerConfig,
            ) -> Result<(), ConfigError> {
                Self::build_in_place(slot, config)
            }
        }
    };
}

shareable_breaker!(CountCell, 0x0101, "count-window circuit breaker");
shareable_breaker!(TimeCell, 0x0102, "time-window circuit breaker");

/// Where a cell lives.
enum Storage<T: Shareable> {
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
    Count(Storage<CountCell>),
    Time(Storage<TimeCell>),
}

/// A single-use permit: the right to make one call, to be recorded once with
/// [`Breaker::record`].
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Permit {
    /// Slot and generation in the breaker's permit table (opaque).
    pub id: u64,
    /// The breaker epoch that admitted the call.
    pub epoch: u32,
}

/// Why [`Breaker::try_acquire`] gave no permit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AcquireError {
    /// The breaker refused the call.
    Rejected(Rejected),
    /// The breaker admitted the call but all
    /// [`PERMIT_SLOTS`](crate::permits::PERMIT_SLOTS) permits are outstanding; the
    /// admission was given back as `ignored`.
    PermitsExhausted,
}

/// A snapshot of a breaker: the core's metrics plus the permits outstanding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Metrics {
    /// State, window, rates and lifetime totals.
    pub core: BreakerMetrics,
    /// Permits admitted and not yet recorded.
    pub permits_outstanding: u64,
}

/// A circuit breaker with single-use permits, in this process or shared.
pub struct Breaker {
    inner: Inner,
    created: bool,
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

/// Run `$e` with `$c` bound to the cell, whichever window it has.
macro_rules! with_cell {
    ($self:expr, $c:ident => $e:expr) => {
        match &$self.inner {
            Inner::Count(s) => {
                let $c: &CountCell = s;
                $e
            }
            Inner::Time(s) => {
                let $c: &TimeCell = s;
                $e
            }
        }
    };
}

impl Breaker {
    /// A breaker in this process's memory.
    pub fn new(config: BreakerConfig) -> Result<Self, ConfigError> {
        let inner = match config.window {
            WindowConfig::Count { .. } => Inner::Count(Storage::Local(shared::boxed(&config)?)),
            WindowConfig::Time { .. } => Inner::Time(Storage::Local(shared::boxed(&config)?)),
        };
        Ok(Self {
            inner,
            created: true,
        })
    }

    /// Create or attach the breaker named `name`, shared by every process of the
    /// host (`/dev/shm/seawall-breaker-<name>`). Attaching changes nothing; a region
    /// built with another configuration (window kind included) is an error.
    pub fn open_shared(
        name: &str,
        config: &BreakerConfig,
        options: &OpenOptions,
    ) -> Result<Self, RegionError> {
        let (inner, created) = match config.window {
            WindowConfig::Count { .. } => {
                let r = SharedRegion::<CountCell>::open(name, config, options)?;
                let created = r.created();
                (Inner::Count(Storage::Shared(r)), created)
            }
            WindowConfig::Time { .. } => {
                let r = SharedRegion::<TimeCell>::open(name, config, options)?;
                let created = r.created();
                (Inner::Time(Storage::Shared(r)), created)
            }
        };
        Ok(Self { inner, created })
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
                    Inner::Count(Storage::Shared(SharedRegion::init_in(mem, len, config)?))
                }
                WindowConfig::Time { .. } => {
                    Inner::Time(Storage::Shared(SharedRegion::init_in(mem, len, config)?))
                }
            }
        };
        Ok(Self {
            inner,
            created: true,
        })
    }

    /// Attach to a breaker [`init_in`](Self::init_in) built in caller memory,
    /// whichever its window kind. Changes nothing.
    ///
    /// # Safety
    /// As [`SharedRegion::attach`].
    pub unsafe fn attach(mem: NonNull<u8>, len: usize) -> Result<Self, RegionError> {
        // SAFETY: forwarded from the caller.
        let inner = match unsafe { SharedRegion::<CountCell>::attach(mem, len) } {
            Ok(r) => Inner::Count(Storage::Shared(r)),
            Err(RegionError::LayoutMismatch { .. }) => {
                // SAFETY: forwarded from the caller.
                Inner::Time(Storage::Shared(unsafe { SharedRegion::attach(mem, len) }?))
            }
            Err(e) => return Err(e),
        };
        Ok(Self {
            inner,
            created: false,
        })
    }

    /// Whether this handle created (and initialised) its breaker.
    #[must_use]
    pub fn created(&self) -> bool {
        self.created
    }

    /// Whether the breaker lives in a shared region (named or caller memory).
    #[must_use]
    pub fn is_shared(&self) -> bool {
        matches!(
            self.inner,
            Inner::Count(Storage::Shared(_)) | Inner::Time(Storage::Shared(_))
        )
    }

    /// The configuration the breaker was built with (for a shared one: its
    /// creator's, jitter seed included).
    #[must_use]
    pub fn config(&self) -> BreakerConfig {
        with_cell!(self, c => *c.breaker.config())
    }

    /// Ask to make one call at `now` (ns). A corrupted shared region rejects the
    /// call (see [`try_acquire_checked`](Self::try_acquire_checked)).
    pub fn try_acquire(&self, now: u64) -> Result<Permit, AcquireError> {
        self.try_acquire_checked(now).unwrap_or_else(|Corrupt| {
            Err(AcquireError::Rejected(Rejected {
                state: self.state(),
                retry_after_ns: None,
            }))
        })
    }

    /// [`try_acquire`](Self::try_acquire), telling a corrupted shared region
    /// apart: [`Corrupt`] when the breaker's words hold what seawall never writes
    /// or kept changing under [`seawall_core::MAX_RETRIES`] passes (no permit is
    /// held then).
    pub fn try_acquire_checked(&self, now: u64) -> Result<Result<Permit, AcquireError>, Corrupt> {
        with_cell!(self, c => {
            let token = match c.breaker.acquire_token_checked(now)? {
                Ok(token) => token,
                Err(r) => return Ok(Err(AcquireError::Rejected(r))),
            };
            let Some(id) = c.permits.claim(token.epoch) else {
                // Give the admission back, so a half-open probe slot is not lost.
                c.breaker.record_token_checked(token, Outcome::Ignored, 0, now)?;
                return Ok(Err(AcquireError::PermitsExhausted));
            };
            Ok(Ok(Permit { id, epoch: token.epoch }))
        })
    }

    /// Record how the call admitted with `permit` ended. A permit works once:
    /// a second use is [`PermitError::AlreadyUsed`] and records nothing.
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
        with_cell!(self, c => {
            if let Err(e) = c.permits.release(permit.id, permit.epoch) {
                return Ok(Err(e));
            }
            let token = PermitToken { epoch: permit.epoch };
            c.breaker.record_token_checked(token, outcome, duration_ns, now)?;
            Ok(Ok(()))
        })
    }

    /// Give back, as `ignored` at `now` (ns), every permit held by a process that
    /// no longer exists (killed while its call ran; on Linux also one exited and
    /// not reaped yet, a zombie), so a shared breaker does not
    /// run out of permits or keep a dead probe's half-open slot. Returns how many.
    /// Only correct where every process sharing the breaker is in one pid
    /// namespace. Not for the hot path: it scans the permit table.
    #[allow(
        clippy::must_use_candidate,
        reason = "the count is informative; the reclaim is the point"
    )]
    pub fn reclaim_abandoned(&self, now: u64) -> u64 {
        with_cell!(self, c => c.permits.reclaim_dead(|epoch| {
            c.breaker.record_token(PermitToken { epoch }, Outcome::Ignored, 0, now);
        }))
    }

    /// The current state (`open` until an acquire moves it on).
    #[must_use]
    pub fn state(&self) -> State {
        with_cell!(self, c => c.breaker.state())
    }

    /// The current epoch (changes with every state change).
    #[must_use]
    pub fn epoch(&self) -> u32 {
        with_cell!(self, c => c.breaker.epoch())
    }

    /// What a rejection in `open` would report at `now` (ns).
    #[must_use]
    pub fn retry_after(&self, now: u64) -> Option<u64> {
        with_cell!(self, c => c.breaker.retry_after(now))
    }

    /// A snapshot as of `now` (ns). Reading changes nothing.
    #[must_use]
    pub fn metrics(&self, now: u64) -> Metrics {
        with_cell!(self, c => Metrics {
            core: c.breaker.metrics(now),
            permits_outstanding: c.permits.outstanding(),
        })
    }

    /// Reject every call until [`reset`](Self::reset).
    pub fn force_open(&self) {
        with_cell!(self, c => c.breaker.force_open());
    }

    /// Admit every call, counting in totals only, until [`reset`](Self::reset).
    pub fn disable(&self) {
        with_cell!(self, c => c.breaker.disable());
    }

    /// Back to `closed` with an empty window; outstanding permits become stale
    /// (they can still be recorded, once, into the totals).
    pub fn reset(&self) {
        with_cell!(self, c => c.breaker.reset());
    }

    /// [`force_open`](Self::force_open) (`ForcedOpen`), [`disable`](Self::disable)
    /// (`Disabled`) or [`reset`](Self::reset) (`Closed`, and any other state),
    /// telling a corrupted shared region apart: [`Corrupt`] when the state word
    /// kept changing under [`seawall_core::MAX_RETRIES`] passes (nothing changed).
    pub fn set_manual_checked(&self, state: State) -> Result<(), Corrupt> {
        with_cell!(self, c => c.breaker.set_manual_checked(state))
    }
}
