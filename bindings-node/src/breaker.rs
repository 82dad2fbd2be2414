//! The circuit breaker (DESIGN §3) as JavaScript sees it: Node-API glue over
//! `seawall_host::breaker::Breaker`, in this process without a permit table
//! (`new_without_permit_table`: the JS layer records each permit once; the
//! window type is the smallest that fits, so the default breaker is about
//! 1 KiB) or in a region shared by every process of the host (`open_shared`,
//! with its single-use permit table).
//!
//! Permits, rejections and the state word cross as the numbers of
//! [`crate::boundary`]. The high half of a shared permit's id (its slot
//! generation, salted) stays on this side, in a per-handle array indexed by
//! slot: a slot is held by one permit at a time, so the entry cannot be
//! overwritten while its permit is outstanding. **Record** returns the breaker's
//! epoch after recording, so the JS layer notices a transition (its own or
//! another process's) without another call, and whether the successes that
//! follow may be held back and recorded in one batch (a local breaker whose
//! window holds no failure: no success can open it).
//!
//! The same entry says whether this handle still holds that slot's permit and
//! with which epoch, so a handle that goes away (its worker thread is
//! terminated, its process exits, its wrapper is collected) records what it
//! still holds as ignored (the `Drop` of its entry): a shared breaker's half-open
//! probe held by a worker that ended is back at once, not after a reclaim. The
//! handle tables are per thread, so their entries are dropped by the thread's
//! exit (a worker's end) and by `exit()` (which runs the calling thread's
//! thread-local destructors: the main thread's `process.exit`).

use std::cell::Cell;

use napi::bindgen_prelude::{Env, External};
use napi_derive::napi;
use seawall_core::{BreakerConfig, BreakerMetrics, Corrupt, Outcome, WindowConfig};
use seawall_host::breaker::PermitSlots;
use seawall_host::breaker::{AcquireError, Breaker, Permit};
use seawall_host::clock::monotonic_ns;
use seawall_host::permits::PermitError;
use seawall_host::shared::OpenOptions;

use crate::boundary::{
    Code, PERMIT_CODE_SPAN, REJECTED_PERMITS_EXHAUSTED, Result, STATES, breaker_rejection, error,
    invalid, outcome_of, permit_code, split_permit_code, state_name, state_word, throwing,
};
use crate::convert::{
    config_error, count, factor, ms_to_ns, ns_to_ms, percent, region_error, rule_ms,
};
use crate::handles::{Token, registry};

/// A breaker configuration as the JS layer sends it: every field optional
/// (absent = DESIGN §3 default); for the rules that can be turned off a negative
/// number means "off" (the JS layer sends -1 for `null`). Durations in ms,
/// rates in percent (0–100), factors as plain numbers.
#[napi(object)]
pub struct NativeBreakerConfig {
    /// `"count"` or `"time"` (default time).
    pub window_kind: Option<String>,
    /// Count window: the last `window_size` calls.
    pub window_size: Option<f64>,
    /// Time window: number of buckets.
    pub window_buckets: Option<f64>,
    /// Time window: bucket width (ms).
    pub window_bucket_ms: Option<f64>,
    /// Calls before a rate can open the breaker.
    pub minimum_calls: Option<f64>,
    /// Failure rate (percent) that opens; negative: off.
    pub failure_rate_threshold: Option<f64>,
    /// Slow-call rate (percent) that opens.
    pub slow_call_rate_threshold: Option<f64>,
    /// A call slower than this (ms) is slow; negative: slow rule off.
    pub slow_call_duration_ms: Option<f64>,
    /// Failures in a row that open; negative: off.
    pub consecutive_failures: Option<f64>,
    /// First open period (ms).
    pub open_duration_ms: Option<f64>,
    /// Growth of each consecutive open period (factor ≥ 1).
    pub open_backoff_multiplier: Option<f64>,
    /// Cap of an open period (ms); negative: uncapped.
    pub max_open_duration_ms: Option<f64>,
    /// ± jitter of an open period (factor 0–1).
    pub open_jitter_factor: Option<f64>,
    /// Probes in flight at once in half-open.
    pub half_open_max_calls: Option<f64>,
    /// Successful probes that close.
    pub half_open_success_threshold: Option<f64>,
    /// Half-open with no decision for this long (ms) reopens; negative: off.
    pub half_open_max_wait_ms: Option<f64>,
}

/// The core configuration for `c`, with a jitter seed from OS entropy.
pub fn breaker_config(c: &NativeBreakerConfig) -> Result<BreakerConfig> {
    let d = BreakerConfig::DEFAULT;
    let window = match c.window_kind.as_deref() {
        None if c.window_size.is_none() && c.window_buckets.is_none() => d.window,
        Some("count") => WindowConfig::Count {
            size: c.window_size.map_or(0, count),
        },
        None | Some("time") => WindowConfig::Time {
            buckets: c.window_buckets.map_or(10, count),
            bucket_width_ns: c.window_bucket_ms.map_or(1_000_000_000, ms_to_ns),
        },
        Some(other) => {
            return Err(invalid(
                "window.kind",
                &format!("must be 'count' or 'time', not {other:?}"),
            ));
        }
    };
    let rate = |v: Option<f64>| v.map(|p| if p < 0.0 { None } else { Some(percent(p)) });
    let cfg = BreakerConfig {
        window,
        minimum_calls: c.minimum_calls.map_or(d.minimum_calls, count),
        failure_rate_threshold: rate(c.failure_rate_threshold).unwrap_or(d.failure_rate_threshold),
        slow_call_rate_threshold: c
            .slow_call_rate_threshold
            .map_or(d.slow_call_rate_threshold, percent),
        slow_call_duration_ns: rule_ms(c.slow_call_duration_ms, d.slow_call_duration_ns),
        consecutive_failures: match c.consecutive_failures {
            None => d.consecutive_failures,
            Some(n) if n < 0.0 => None,
            Some(n) => Some(count(n)),
        },
        open_duration_ns: c.open_duration_ms.map_or(d.open_duration_ns, ms_to_ns),
        open_backoff_multiplier: c
            .open_backoff_multiplier
            .map_or(d.open_backoff_multiplier, factor),
        max_open_duration_ns: rule_ms(c.max_open_duration_ms, d.max_open_duration_ns),
        open_jitter_factor: c.open_jitter_factor.map_or(d.open_jitter_factor, factor),
        half_open_max_calls: c.half_open_max_calls.map_or(d.half_open_max_calls, count),
        half_open_success_threshold: c
            .half_open_success_threshold
            .map_or(d.half_open_success_threshold, count),
        half_open_max_wait_ns: rule_ms(c.half_open_max_wait_ms, d.half_open_max_wait_ns),
        jitter_seed: seawall_host::entropy::entropy(),
    };
    cfg.validate().map_err(config_error)?;
    Ok(cfg)
}

/// A breaker and, for one with a permit table (a shared one), what this handle
/// knows of the permits it was given.
struct Inner {
    breaker: Breaker,
    holdings: Option<Holdings>,
    /// Whether a success can be held back and recorded later in a batch
    /// ([`breaker_record_successes`]) while the window is clean: a local breaker
    /// (no other thread or process records into it) with no slow-call rule and
    /// no failure-rate threshold of 0 (which a success alone can reach).
    batchable: bool,
}

/// A local breaker whose successes may be batched (see `Inner::batchable`).
fn batchable(cfg: &BreakerConfig) -> bool {
    cfg.slow_call_duration_ns.is_none()
        && cfg
            .failure_rate_threshold
            .is_none_or(|t| !t.is_reached_by(0, 1))
}

/// Per permit slot, what this handle knows of the slot's permit: `tag (32) |
/// epoch (30) | held (1)`, the tag being the high half of its id. The tag stays
/// after the record, so a second record of the permit is refused as used.
struct Holdings(Box<[Cell<u64>]>);

const HELD: u64 = 1;
const EPOCH_MASK: u64 = (1 << 30) - 1;

impl Holdings {
    fn new(slots: usize) -> Self {
        Self((0..slots).map(|_| Cell::new(0)).collect())
    }

    fn size(&self) -> usize {
        self.0.len() * size_of::<Cell<u64>>()
    }

    /// Permit `p` (of slot `slot`) is held by this handle.
    fn acquired(&self, slot: usize, p: Permit) {
        let tag = p.id & !0xFFFF_FFFF;
        self.0[slot].set(tag | ((u64::from(p.epoch) & EPOCH_MASK) << 1) | HELD);
    }

    /// The id of the permit of `slot` this handle was given last.
    fn id(&self, slot: usize) -> u64 {
        // A code past this table (made up by the caller) names no permit: its
        // slot alone is foreign to the breaker's table too.
        let tag = self.0.get(slot).map_or(0, |e| e.get() & !0xFFFF_FFFF);
        tag | slot as u64
    }

    /// The permit of `slot` is recorded (or used already): no longer held here.
    fn recorded(&self, slot: usize) {
        if let Some(e) = self.0.get(slot) {
            e.set(e.get() & !HELD);
        }
    }

    /// Every permit this handle still holds, with the epoch it was issued in.
    fn held(&self) -> impl Iterator<Item = Permit> + '_ {
        self.0.iter().enumerate().filter_map(|(slot, e)| {
            let w = e.get();
            (w & HELD != 0).then_some(Permit {
                id: (w & !0xFFFF_FFFF) | slot as u64,
                epoch: ((w >> 1) & EPOCH_MASK) as u32,
            })
        })
    }
}

impl Drop for Inner {
    /// Record as ignored what this handle still holds: nothing can record it
    /// once the handle is gone. A permit a reclaim took already is refused
    /// here, and counted once.
    fn drop(&mut self) {
        let Some(h) = &self.holdings else {
            return;
        };
        let now = monotonic_ns();
        for p in h.held() {
            let _ = self.breaker.record(p, Outcome::Ignored, 0, now);
        }
    }
}

/// A snapshot of a breaker (`metrics()`); reading changes nothing.
#[napi(object)]
pub struct NativeBreakerMetrics {
    /// `closed`, `open`, `halfOpen`, `forcedOpen` or `disabled`.
    pub state: String,
    /// Current epoch (changes with every state change).
    pub epoch: u32,
    /// Calls in the sliding window.
    pub calls: f64,
    /// Failed calls in the window.
    pub failures: f64,
    /// Slow calls in the window.
    pub slow_calls: f64,
    /// Slow failed calls in the window.
    pub slow_failures: f64,
    /// Failures per call in the window, percent (null for an empty window).
    pub failure_rate: Option<f64>,
    /// Slow calls per call in the window, percent (null for an empty window).
    pub slow_call_rate: Option<f64>,
    /// Failures in a row (closed only).
    pub consecutive_failures: u32,
    /// Probes in flight (half-open only).
    pub half_open_in_flight: u32,
    /// Successful probes so far (half-open only).
    pub half_open_successes: u32,
    /// Consecutive openings (k of DESIGN §3.2).
    pub openings: u32,
    /// What a rejection in open reports now (ms), or null.
    pub retry_after_ms: Option<f64>,
    /// Lifetime: permits handed out.
    pub total_admitted: f64,
    /// Lifetime: acquires refused.
    pub total_rejected: f64,
    /// Lifetime: successes recorded.
    pub total_successes: f64,
    /// Lifetime: failures recorded.
    pub total_failures: f64,
    /// Lifetime: slow calls recorded.
    pub total_slow: f64,
    /// Lifetime: ignored outcomes.
    pub total_ignored: f64,
    /// Lifetime: outcomes of permits from an earlier epoch.
    pub total_stale: f64,
    /// Lifetime: state changes.
    pub total_transitions: f64,
    /// Shared breakers: permits admitted and not yet recorded (all processes).
    pub permits_outstanding: Option<f64>,
}

fn rate(r: Option<seawall_core::Ratio>) -> Option<f64> {
    r.map(seawall_host::units::percent_of_ratio)
}

fn metrics_object(m: &BreakerMetrics, outstanding: Option<u64>) -> NativeBreakerMetrics {
    NativeBreakerMetrics {
        state: state_name(m.state).to_owned(),
        epoch: m.epoch,
        calls: m.window.calls as f64,
        failures: m.window.failures as f64,
        slow_calls: m.window.slow as f64,
        slow_failures: m.window.slow_failures as f64,
        failure_rate: rate(m.failure_rate),
        slow_call_rate: rate(m.slow_call_rate),
        consecutive_failures: m.consecutive_failures,
        half_open_in_flight: m.half_open_in_flight,
        half_open_successes: m.half_open_successes,
        openings: m.openings,
        retry_after_ms: m.retry_after_ns.map(ns_to_ms),
        total_admitted: m.totals.admitted as f64,
        total_rejected: m.totals.rejected as f64,
        total_successes: m.totals.successes as f64,
        total_failures: m.totals.failures as f64,
        total_slow: m.totals.slow as f64,
        total_ignored: m.totals.ignored as f64,
        total_stale: m.totals.stale as f64,
        total_transitions: m.totals.transitions as f64,
        permits_outstanding: outstanding.map(|n| n as f64),
    }
}

registry!(BREAKERS, Inner, "breaker");

fn free(handle: f64) {
    let _ = BREAKERS.try_with(|r| r.free(handle));
}

fn with<R>(h: f64, f: impl FnOnce(&Inner) -> R) -> Result<R> {
    BREAKERS.with(|r| r.with(h, f))
}

/// A breaker in this process, or (with `shared`) the breaker named `shared` in
/// `/dev/shm`, created or attached. Returns the token that owns it (its handle:
/// `handleOf`). Throws on an invalid configuration or a region that cannot be
/// opened (see `convert::region_error`).
#[napi]
pub fn breaker_new(
    env: Env,
    config: NativeBreakerConfig,
    shared: Option<String>,
    permit_slots: Option<f64>,
) -> napi::Result<External<Token>> {
    throwing(env, new_breaker(&config, shared, permit_slots))
}

/// The permit table size of `permitSlots` (the default when not given). A
/// fraction or a negative number is no size either.
fn permit_table(n: Option<f64>) -> Result<PermitSlots> {
    let Some(n) = n else {
        return Ok(PermitSlots::DEFAULT);
    };
    let whole = n.is_finite() && n >= 0.0 && n.fract() == 0.0 && n <= 9_007_199_254_740_992.0;
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "checked whole, non-negative and below 2^53 above"
    )]
    PermitSlots::new(if whole { n as u64 } else { 0 }).map_err(config_error)
}

fn new_breaker(
    config: &NativeBreakerConfig,
    shared: Option<String>,
    permit_slots: Option<f64>,
) -> Result<External<Token>> {
    let cfg = breaker_config(config)?;
    let slots = permit_table(permit_slots)?;
    let inner = match shared {
        None => Inner {
            batchable: batchable(&cfg),
            breaker: Breaker::new_without_permit_table(cfg).map_err(config_error)?,
            holdings: None,
        },
        Some(name) => Inner {
            breaker: Breaker::open_shared_with_slots(&name, &cfg, slots, &OpenOptions::default())
                .map_err(region_error)?,
            holdings: Some(Holdings::new(slots.get())),
            batchable: false,
        },
    };
    let size = inner.breaker.local_size() + inner.holdings.as_ref().map_or(0, Holdings::size);
    let handle = BREAKERS.with(|r| r.insert(inner))?;
    // The size hint tells V8 how much native memory the small token keeps alive,
    // so that dropped breakers are collected in time.
    Ok(External::new_with_size_hint(Token::new(handle, free), size))
}

/// Ask breaker `h` to make one call now: a permit code (≥ 0) or a rejection (< 0).
pub fn breaker_acquire(h: f64) -> Result<f64> {
    with(h, |b| acquire_ns(b, monotonic_ns()))?
}

/// [`breaker_acquire`] at `now_ms` of the caller's clock.
#[napi]
pub fn breaker_acquire_at(h: f64, now_ms: f64) -> Result<f64> {
    with(h, |b| acquire_ns(b, ms_to_ns(now_ms)))?
}

/// A breaker's shared region holding what its configuration never gives: `ESHARED`.
fn corrupted(Corrupt: Corrupt) -> napi::Error<Code> {
    error(
        Code::Shared("untrusted"),
        "the shared breaker's region holds values its configuration never gives: it was overwritten",
    )
}

fn acquire_ns(inner: &Inner, now: u64) -> Result<f64> {
    Ok(
        match inner.breaker.try_acquire_checked(now).map_err(corrupted)? {
            Ok(p) => {
                // Without a permit table the id is 0 and the code is `epoch · SLOTS`.
                let slot = ((p.id & 0xFFFF_FFFF) % PERMIT_CODE_SPAN) as usize;
                if let Some(h) = &inner.holdings {
                    h.acquired(slot, p);
                }
                permit_code(p.epoch, slot)
            }
            Err(AcquireError::Rejected(r)) => breaker_rejection(r),
            Err(AcquireError::PermitsExhausted) => REJECTED_PERMITS_EXHAUSTED,
        },
    )
}

/// Record how the call admitted with permit `code` ended (`outcome` 0 success,
/// 1 failure, 2 ignored), taking `duration_ms`; returns `epoch · 2 + clean`,
/// the epoch after recording and whether the JS layer may batch the successes
/// that follow ([`clean`]). Throws `EPERMIT` for a shared permit used twice.
pub fn breaker_record(h: f64, code: f64, outcome: u32, duration_ms: f64) -> Result<f64> {
    with(h, |b| {
        let now = monotonic_ns();
        let epoch = record_ns(b, code, outcome, ms_to_ns(duration_ms), now)?;
        let clean = outcome_of(outcome) != Outcome::Failure && clean(b, now);
        Ok(f64::from(epoch) * 2.0 + f64::from(u8::from(clean)))
    })?
}

/// Record `n` successes of the calls admitted with permit `code` now, in one
/// crossing (the JS layer held them back while [`clean`]); returns what
/// [`breaker_record`] returns. Only for a batchable breaker (`EINVALIDARG`
/// otherwise: a bug in lib/).
pub fn breaker_record_successes(h: f64, code: f64, n: f64) -> Result<f64> {
    with(h, |b| {
        if !b.batchable {
            return Err(error(
                Code::InvalidArg,
                "successes are batched only for a local breaker".to_owned(),
            ));
        }
        let (epoch, _) = split_permit_code(code);
        let now = monotonic_ns();
        let permit = Permit { id: 0, epoch };
        for _ in 0..crate::convert::count(n) {
            // Without a permit table every record is accepted.
            let _ = b.breaker.record(permit, Outcome::Success, 0, now);
        }
        Ok(f64::from(b.breaker.epoch()) * 2.0 + f64::from(u8::from(clean(b, now))))
    })?
}

/// Whether no success recorded now could open breaker `b`: a batchable breaker
/// that is disabled, or closed with no failure in its window (a success only
/// lowers the failure rate, and with no slow-call rule it is never slow, so
/// only failures in the window can make it reach a threshold). Failures enter
/// the window of a local breaker only through its own records, so the JS layer
/// may hold successes back until its next record or reading.
fn clean(b: &Inner, now: u64) -> bool {
    if !b.batchable {
        return false;
    }
    let m = b.breaker.metrics(now).core;
    match m.state {
        seawall_core::State::Disabled => true,
        seawall_core::State::Closed => m.window.failures == 0,
        _ => false,
    }
}

/// [`breaker_record`] at `now_ms` of the caller's clock.
#[napi]
pub fn breaker_record_at(
    h: f64,
    code: f64,
    outcome: u32,
    duration_ms: f64,
    now_ms: f64,
) -> Result<u32> {
    with(h, |b| {
        record_ns(b, code, outcome, ms_to_ns(duration_ms), ms_to_ns(now_ms))
    })?
}

fn record_ns(inner: &Inner, code: f64, outcome: u32, duration: u64, now: u64) -> Result<u32> {
    let (epoch, slot) = split_permit_code(code);
    let id = inner.holdings.as_ref().map_or(0, |h| h.id(slot));
    let recorded = inner
        .breaker
        .record(Permit { id, epoch }, outcome_of(outcome), duration, now);
    if let Some(h) = &inner.holdings {
        // An altered epoch records nothing: the permit is still held (and given
        // back with its own epoch if the handle goes). Any other answer means the
        // slot's permit is used.
        if recorded != Err(PermitError::Altered) {
            h.recorded(slot);
        }
    }
    recorded.map_err(|e| error(Code::Permit, format!("permit not usable: {e:?}")))?;
    Ok(inner.breaker.epoch())
}

/// The state word of breaker `h` (`crate::boundary`, the host's transition
/// word): one call for the JS layer's transition check.
pub fn breaker_state_word(h: f64) -> Result<f64> {
    with(h, |inner| state_word(inner.breaker.observe()))
}

/// What a rejection in open would report at `now_ms` (default: now), in ms, or
/// null.
#[napi]
pub fn breaker_retry_after_ms(h: f64, now_ms: Option<f64>) -> Result<Option<f64>> {
    let now = now_ms.map_or_else(monotonic_ns, ms_to_ns);
    with(h, |inner| {
        inner
            .breaker
            .retry_after_checked(now)
            .map(|r| r.map(ns_to_ms))
            .map_err(corrupted)
    })?
}

/// Shared breakers: permits (probes included) held by processes that no
/// longer exist, until a caller gives them back; null without a permit table
/// in a region. A scan that asks the OS about each process: for metrics.
#[napi]
pub fn breaker_abandoned(h: f64) -> Result<Option<f64>> {
    with(h, |inner| {
        inner
            .breaker
            .is_shared()
            .then(|| inner.breaker.abandoned() as f64)
    })
}

/// A snapshot of breaker `h` as of `now_ms` (default: now). Reading changes
/// nothing.
#[napi]
pub fn breaker_metrics(h: f64, now_ms: Option<f64>) -> Result<NativeBreakerMetrics> {
    let now = now_ms.map_or_else(monotonic_ns, ms_to_ns);
    with(h, |inner| {
        let m = inner.breaker.metrics_checked(now).map_err(corrupted)?;
        Ok(metrics_object(&m.core, m.permits_outstanding))
    })?
}

/// Start breaker `h` from an exported state (DESIGN §3.7): `state` one of the
/// names of `constants().states`, `openings` consecutive openings, `open_left_ms`
/// the time `open` has left. lib/ checks the record; an unknown state name is a
/// bug there.
#[napi]
pub fn breaker_restore(h: f64, state: String, openings: u32, open_left_ms: f64) -> Result<()> {
    let Some(s) = STATES.into_iter().find(|s| state_name(*s) == state) else {
        return Err(error(
            Code::InvalidArg,
            format!("unknown breaker state {state:?}"),
        ));
    };
    with(h, |inner| {
        inner
            .breaker
            .restore(s, openings, ms_to_ns(open_left_ms), monotonic_ns())
            .map_err(|Corrupt| {
                error(
                    Code::Shared("untrusted"),
                    "the shared breaker's state kept changing as no process of seawall changes it: its region is corrupted",
                )
            })
    })?
}

/// Whether this handle created the breaker (false: it attached to a shared
/// breaker another process made).
#[napi]
pub fn breaker_created(h: f64) -> Result<bool> {
    with(h, |inner| inner.breaker.created())
}

/// Manual control of breaker `h`: `"forceOpen"` (reject every call until
/// reset), `"disable"` (admit every call, counting in totals only) or `"reset"`
/// (closed with an empty window).
#[napi]
pub fn breaker_control(h: f64, action: String) -> Result<()> {
    with(h, |inner| match action.as_str() {
        "forceOpen" => {
            inner.breaker.force_open();
            Ok(())
        }
        "disable" => {
            inner.breaker.disable();
            Ok(())
        }
        "reset" => {
            inner.breaker.reset();
            Ok(())
        }
        // lib/ passes only the three literals: another is a bug there.
        other => Err(error(
            Code::InvalidArg,
            format!("unknown breaker action {other:?}"),
        )),
    })?
}

/// Shared breakers: give back, as ignored, the permits of processes that no
/// longer exist (a worker killed mid-call). Returns how many; 0 for a local
/// breaker.
#[napi]
pub fn breaker_reclaim_abandoned(h: f64) -> Result<f64> {
    with(h, |inner| {
        inner.breaker.reclaim_abandoned(monotonic_ns()) as f64
    })
}

/// `[shared, created]`: whether breaker `h` lives in a shared region, and
/// whether this handle created it (always true for a local breaker).
#[napi]
pub fn breaker_placement(h: f64) -> Result<Vec<bool>> {
    with(h, |inner| {
        vec![inner.breaker.is_shared(), inner.breaker.created()]
    })
}

/// Remove the shared breaker `name` (a missing one is fine). Processes attached
/// to it keep theirs; the next open creates a new one.
#[napi]
pub fn breaker_unlink_shared(env: Env, name: String) -> napi::Result<()> {
    throwing(env, Breaker::unlink_shared(&name).map_err(region_error))
}

/// Breakers alive in this thread (tests: dropped breakers are freed).
#[napi]
pub fn breaker_live() -> u32 {
    u32::try_from(BREAKERS.with(crate::handles::Registry::live)).unwrap_or(u32::MAX)
}
