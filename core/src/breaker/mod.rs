//! Circuit breaker (DESIGN §3): closed / open / half-open, plus manual forced-open
//! and disabled, with epoch-tagged permits so that stale outcomes never decide.
//!
//! All state that must change together lives in one 128-bit word ([`state`]); the
//! sliding window is tagged with the closed epoch it counts for ([`crate::window`]).
//! Every operation is a bounded number of atomic loads plus CAS loops whose
//! invariants are written above them and model-checked in `loom-tests/`.

mod config;
mod metrics;
mod permit;
mod state;

pub use config::BreakerConfig;
pub use metrics::{BreakerMetrics, BreakerTotals};
pub use permit::{Permit, PermitToken};
pub use state::{MAX_CONSECUTIVE_FAILURES, MAX_HALF_OPEN_CALLS, MAX_OPENINGS, State};

use crossbeam_utils::CachePadded;

use self::metrics::Totals;
use self::state::{Word, is_probe_epoch, next_epoch};
use crate::corrupt::{Corrupt, MAX_RETRIES};
use crate::error::ConfigError;
use crate::mix::{mix64, pick};
use crate::outcome::Outcome;
use crate::ratio::Ratio;
use crate::sync::{AtomicU64, AtomicU128, Ordering, raise_to};
use crate::window::{Sample, SlidingWindow, TimeWindow, WindowCounts};

/// Why an acquire was refused.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Rejected {
    /// The state that refused: `open`, `half_open` (all probe slots taken) or
    /// `forced_open`.
    pub state: State,
    /// Only for rejections in `open`: nanoseconds until the open period ends
    /// (DESIGN §3.2).
    pub retry_after_ns: Option<u64>,
}

/// A lock-free, allocation-free circuit breaker over the sliding window `W`
/// ([`TimeWindow<10>`] by default: DESIGN's 10 s in 10 buckets).
///
/// Every method takes the caller's monotonic `now` in nanoseconds where time
/// matters; the breaker never reads a clock.
///
/// `size_of::<CircuitBreaker<TimeWindow<10>>>()` is 1 792 bytes and
/// `size_of::<CircuitBreaker<CountWindow<100>>>()` is 2 176 bytes on x86-64 (the hot
/// words sit on separate 128-byte lines so readers of the state are not slowed by
/// writers of the counters, and the `rejected` total is spread over four lines so
/// that rejecting threads do not share one); `tests/sizes.rs` pins these figures.
#[repr(C)]
pub struct CircuitBreaker<W: SlidingWindow = TimeWindow<10>> {
    state: CachePadded<AtomicU128>,
    clock: CachePadded<AtomicU64>,
    totals: CachePadded<Totals>,
    window: W,
    config: BreakerConfig,
    gate: u64,
}

/// One pass of an acquire: finished, or retry against the word the CAS found.
#[derive(Clone, Copy)]
enum Step {
    Done(Result<PermitToken, Rejected>),
    Retry(Word),
}

impl<W: SlidingWindow> CircuitBreaker<W> {
    /// A closed breaker with an empty window, or the first invalid field of `config`.
    pub fn new(config: BreakerConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        let window = W::new(&config.window)?;
        let gate = window.gate(u64::from(config.minimum_calls));
        Ok(Self {
            state: CachePadded::new(AtomicU128::new(Word::closed(0).0)),
            clock: CachePadded::new(AtomicU64::new(0)),
            totals: CachePadded::new(Totals::new()),
            window,
            config,
            gate,
        })
    }

    /// The configuration the breaker was built with.
    pub fn config(&self) -> &BreakerConfig {
        &self.config
    }

    /// Ask to make one call at `now` (ns). The permit records the outcome; dropping
    /// it counts as ignored.
    pub fn try_acquire(&self, now: u64) -> Result<Permit<'_, W>, Rejected> {
        self.acquire_token(now).map(|t| Permit::new(self, t))
    }

    /// [`try_acquire`](Self::try_acquire) returning a plain token, for callers that
    /// record through [`record_token`](Self::record_token) themselves.
    ///
    /// Should the state word be corrupted (see
    /// [`acquire_token_checked`](Self::acquire_token_checked)), the call is
    /// rejected in the state last read.
    // Inline, as the records are: otherwise the nested result of the checked form
    // costs the rejected path about as much as the rejection itself.
    #[inline]
    pub fn acquire_token(&self, now: u64) -> Result<PermitToken, Rejected> {
        self.acquire_token_checked(now).unwrap_or_else(|Corrupt| {
            Err(Rejected {
                state: self.load().state(),
                retry_after_ns: None,
            })
        })
    }

    /// [`acquire_token`](Self::acquire_token) for a breaker in memory others may
    /// write (a shared region): [`Corrupt`] when the state word kept changing
    /// under [`MAX_RETRIES`] passes, which no number of honest callers does.
    #[inline]
    pub fn acquire_token_checked(
        &self,
        now: u64,
    ) -> Result<Result<PermitToken, Rejected>, Corrupt> {
        self.acquire_token_checked_at(|| now)
    }

    /// [`acquire_token_checked`](Self::acquire_token_checked) asking `now` (ns)
    /// only when the decision needs the time: a closed or disabled breaker
    /// admits without it, so a caller whose clock read costs more than the
    /// acquire (a system call, an interpreter's clock) reads it only when the
    /// breaker is open, half-open or forced open. `now` is called at most once.
    #[inline]
    pub fn acquire_token_checked_at(
        &self,
        now: impl FnOnce() -> u64,
    ) -> Result<Result<PermitToken, Rejected>, Corrupt> {
        let w = self.load();
        match w.state() {
            // Loads only: a closed or disabled permit is counted when recorded.
            State::Closed | State::Disabled => Ok(Ok(PermitToken { epoch: w.epoch() })),
            // The open rejection, inline as well: a call would cost it a quarter.
            State::Open => {
                let now = now();
                self.settle(self.acquire_open(w, now), now)
            }
            State::ForcedOpen | State::HalfOpen => self.acquire_deciding(w, now()),
        }
    }

    /// [`acquire_token_checked`](Self::acquire_token_checked) half-open or
    /// forced open, from word `w` as read: one step, then, only when its CAS
    /// lost a race, the retries. Behind a call, so that what the caller inlines
    /// (the closed admission, the open rejection) keeps a small frame; the first
    /// step outside the loop, so that what a loop hoists (the stripe of a
    /// rejection count) is computed only on the way to a rejection.
    #[inline(never)]
    fn acquire_deciding(
        &self,
        w: Word,
        now: u64,
    ) -> Result<Result<PermitToken, Rejected>, Corrupt> {
        self.settle(self.acquire_step(w, now), now)
    }

    /// The answer of a first pass's `step`: its result, or the retries after
    /// a lost CAS.
    #[inline]
    fn settle(&self, step: Step, now: u64) -> Result<Result<PermitToken, Rejected>, Corrupt> {
        match step {
            Step::Done(r) => Ok(r),
            Step::Retry(cur) => self.acquire_retrying(cur, now),
        }
    }

    /// The passes after a first one whose CAS lost (`MAX_RETRIES` in all).
    #[cold]
    #[inline(never)]
    fn acquire_retrying(
        &self,
        mut w: Word,
        now: u64,
    ) -> Result<Result<PermitToken, Rejected>, Corrupt> {
        for _ in 1..MAX_RETRIES {
            match self.acquire_step(w, now) {
                Step::Done(r) => return Ok(r),
                Step::Retry(cur) => w = cur,
            }
        }
        Err(Corrupt)
    }

    /// One pass of the acquire's state machine over word `w`.
    #[inline]
    fn acquire_step(&self, w: Word, now: u64) -> Step {
        match w.state() {
            // Loads only: a closed or disabled permit is counted when recorded.
            State::Closed | State::Disabled => Step::Done(Ok(PermitToken { epoch: w.epoch() })),
            State::ForcedOpen => Step::Done(Err(self.reject(State::ForcedOpen, None))),
            State::Open => self.acquire_open(w, now),
            State::HalfOpen => self.acquire_half_open(w, now),
        }
    }

    /// Open: reject until `open_until`; the first acquire at or after it moves to
    /// half-open and is the first probe. Exactly one caller wins that CAS.
    fn acquire_open(&self, w: Word, now: u64) -> Step {
        let now = self.observe(now);
        let until = w.time();
        if now < until {
            return Step::Done(Err(self.reject(State::Open, Some(until - now))));
        }
        let next = Word::half_open(next_epoch(w.epoch(), true), w.k(), 1, now);
        #[cfg(seawall_mutant = "double_half_open")]
        {
            // Mutant: a blind store lets two callers both "win" the move.
            self.state.store(next.0, Ordering::Release);
            self.bump_transitions();
            return Step::Done(Ok(self.admit_probe(next.epoch())));
        }
        #[cfg(not(seawall_mutant = "double_half_open"))]
        match self.cas(w, next) {
            Ok(()) => {
                self.bump_transitions();
                Step::Done(Ok(self.admit_probe(next.epoch())))
            }
            Err(cur) => Step::Retry(cur),
        }
    }

    /// Half-open: admit while probes in flight < `half_open_max_calls`; reopen (and
    /// reject) once `half_open_max_wait` has passed without a decision.
    fn acquire_half_open(&self, w: Word, now: u64) -> Step {
        if let Some(max_wait) = self.config.half_open_max_wait_ns {
            let now = self.observe(now);
            if now.saturating_sub(w.time()) >= max_wait {
                let next = self.reopen(w, now);
                return match self.cas(w, next) {
                    Ok(()) => {
                        self.bump_transitions();
                        let retry = next.time().saturating_sub(now);
                        Step::Done(Err(self.reject(State::Open, Some(retry))))
                    }
                    Err(cur) => Step::Retry(cur),
                };
            }
        }
        if w.probes() >= self.config.half_open_max_calls {
            return Step::Done(Err(self.reject(State::HalfOpen, None)));
        }
        let next = w.with_probe_counts(w.probes() + 1, w.successes());
        #[cfg(seawall_mutant = "probe_limit")]
        {
            // Mutant: check-then-store loses a concurrent probe's increment.
            self.state.store(next.0, Ordering::Release);
            return Step::Done(Ok(self.admit_probe(w.epoch())));
        }
        #[cfg(not(seawall_mutant = "probe_limit"))]
        match self.cas(w, next) {
            Ok(()) => Step::Done(Ok(self.admit_probe(w.epoch()))),
            Err(cur) => Step::Retry(cur),
        }
    }

    /// Record how a call admitted with `token` ended: `outcome`, its duration
    /// (`duration_ns`) and the time now (`now`, ns). Each token must be recorded
    /// exactly once; a token from an earlier epoch counts in the totals only.
    // Inline: the checked form is the same code; no call or nested result is
    // left on the hot path of in-process callers.
    #[inline]
    pub fn record_token(&self, token: PermitToken, outcome: Outcome, duration_ns: u64, now: u64) {
        let _ = self.record_token_checked(token, outcome, duration_ns, now);
    }

    /// [`record_token`](Self::record_token) for a breaker in memory others may
    /// write (a shared region): [`Corrupt`] when the window or the state word
    /// holds what this code never writes, or kept changing under
    /// [`MAX_RETRIES`] passes. The totals have counted a failure or ignored
    /// outcome by then, a success at most once; the window and the state may or
    /// may not have.
    // Inline: the success that can decide nothing is a few loads and the
    // window's one CAS; everything else is out of line.
    #[inline]
    pub fn record_token_checked(
        &self,
        token: PermitToken,
        outcome: Outcome,
        duration_ns: u64,
        now: u64,
    ) -> Result<(), Corrupt> {
        if W::QUIET_SUCCESS {
            if outcome == Outcome::Success && self.record_quiet_success(token, duration_ns, now) {
                return Ok(());
            }
            return self.record_outcome_out_of_line(token, outcome, duration_ns, now);
        }
        self.record_outcome(token, outcome, duration_ns, now)
    }

    /// [`record_outcome`](Self::record_outcome) behind a call, so that the
    /// quiet success inlined before it keeps its registers.
    #[inline(never)]
    fn record_outcome_out_of_line(
        &self,
        token: PermitToken,
        outcome: Outcome,
        duration_ns: u64,
        now: u64,
    ) -> Result<(), Corrupt> {
        self.record_outcome(token, outcome, duration_ns, now)
    }

    /// A closed, non-probe, fast success that leaves the consecutive-failure run
    /// alone and lands in a live window bucket already past the gate: it can only
    /// lower the rates, so it is counted by the window alone (which keeps the
    /// success) and nothing is evaluated. Whether it was recorded; when not,
    /// nothing was written.
    #[inline]
    fn record_quiet_success(&self, token: PermitToken, duration_ns: u64, now: u64) -> bool {
        if is_probe_epoch(token.epoch) || self.is_slow(duration_ns) {
            return false;
        }
        let w = self.load();
        w.state() == State::Closed
            && w.epoch() == token.epoch
            && (self.config.consecutive_failures.is_none() || w.run() == 0)
            && self
                .window
                .record_quiet_success(token.epoch, now, self.gate)
    }

    /// Whether a call of `duration_ns` is slow (`slow_call_duration`, off when
    /// unset).
    fn is_slow(&self, duration_ns: u64) -> bool {
        self.config
            .slow_call_duration_ns
            .is_some_and(|d| duration_ns > d)
    }

    /// [`record_token_checked`](Self::record_token_checked) for every outcome
    /// that may change something beyond one window bucket.
    #[inline]
    fn record_outcome(
        &self,
        token: PermitToken,
        outcome: Outcome,
        duration_ns: u64,
        now: u64,
    ) -> Result<(), Corrupt> {
        let slow = outcome != Outcome::Ignored && self.is_slow(duration_ns);
        if is_probe_epoch(token.epoch) {
            // Before the outcome: a process killed between the two leaves the
            // probe neither in flight nor recorded, so the totals still add up
            // (after it, the probe would count as in flight and recorded).
            Totals::bump_ordered(&self.totals.probes_recorded);
        }
        match outcome {
            // Counted below: by the window that keeps it, else by the totals.
            Outcome::Success => {}
            Outcome::Failure => Totals::bump(&self.totals.failures),
            Outcome::Ignored => Totals::bump(&self.totals.ignored),
        }
        if slow {
            Totals::bump(&self.totals.slow);
        }
        let w = self.load();
        let kept = 'kept: {
            #[cfg(not(seawall_mutant = "stale_permit"))]
            if w.epoch() != token.epoch {
                Totals::bump(&self.totals.stale);
                break 'kept Ok(false);
            }
            match w.state() {
                State::Closed => self.record_closed(token.epoch, outcome, slow, now),
                State::HalfOpen => self.record_probe(w.epoch(), outcome, now).map(|()| false),
                // Disabled counts in totals only; open and forced-open admit no one.
                State::Disabled | State::Open | State::ForcedOpen => Ok(false),
            }
        };
        // On `Corrupt` the window may have kept the success: counted at most once.
        if outcome == Outcome::Success && kept == Ok(false) {
            Totals::bump(&self.totals.successes);
        }
        kept.map(|_| ())
    }

    /// Closed: count the outcome in the window of this epoch, then open if a rule
    /// says so. Ignored outcomes count nowhere and decide nothing. Whether the
    /// window keeps the success in its lifetime total.
    #[inline]
    fn record_closed(
        &self,
        epoch: u32,
        outcome: Outcome,
        slow: bool,
        now: u64,
    ) -> Result<bool, Corrupt> {
        let failure = match outcome {
            Outcome::Ignored => return Ok(false),
            Outcome::Success => false,
            Outcome::Failure => true,
        };
        let sample = Sample { failure, slow };
        // Asked only when the record meets another generation in the window: is this
        // permit's epoch still the closed one (and not a straggler from before)?
        let is_current = || {
            let w = self.load();
            w.state() == State::Closed && w.epoch() == epoch
        };
        let recorded = self
            .window
            .record_gen(epoch, sample, now, self.gate, is_current)?;
        if self.config.consecutive_failures.is_some() {
            self.track_run(epoch, failure, now)?;
        }
        if recorded.counts.is_some_and(|c| self.rate_trips(&c)) {
            self.trip_closed(epoch, now)?;
        }
        Ok(recorded.kept)
    }

    /// The rate rule of DESIGN §3.1, compared exactly.
    fn rate_trips(&self, c: &WindowCounts) -> bool {
        if c.calls == 0 || c.calls < self.gate {
            return false;
        }
        let failing = self
            .config
            .failure_rate_threshold
            .is_some_and(|t| t.is_reached_by(c.failures, c.calls));
        let slow = self.config.slow_call_duration_ns.is_some()
            && self
                .config
                .slow_call_rate_threshold
                .is_reached_by(c.slow, c.calls);
        failing || slow
    }

    /// Consecutive-failure rule: a failure extends the run (opening at the limit), a
    /// success ends it.
    fn track_run(&self, epoch: u32, failure: bool, now: u64) -> Result<(), Corrupt> {
        let limit = self.config.consecutive_failures.unwrap_or(u32::MAX);
        // Invariant: the run belongs to the closed epoch it is stored with; a CAS
        // from a word of another epoch or state fails, so a stale outcome can
        // neither extend nor end the run of a newer closed period.
        let mut w = self.load();
        for _ in 0..MAX_RETRIES {
            if w.state() != State::Closed || w.epoch() != epoch {
                return Ok(());
            }
            let run = w.run();
            let (next, opens) = if failure {
                if run + 1 >= limit {
                    (self.first_opening(w, now), true)
                } else {
                    (w.with_run(run + 1), false)
                }
            } else if run == 0 {
                return Ok(());
            } else {
                (w.with_run(0), false)
            };
            match self.cas(w, next) {
                Ok(()) => {
                    if opens {
                        self.bump_transitions();
                    }
                    return Ok(());
                }
                Err(cur) => w = cur,
            }
        }
        Err(Corrupt)
    }

    /// Move closed (of `epoch`) to open, unless someone already moved it on.
    fn trip_closed(&self, epoch: u32, now: u64) -> Result<(), Corrupt> {
        // Invariant: only a closed word of this very epoch may be opened, so two
        // records that both see the threshold open the breaker once.
        let mut w = self.load();
        for _ in 0..MAX_RETRIES {
            if w.state() != State::Closed || w.epoch() != epoch {
                return Ok(());
            }
            match self.cas(w, self.first_opening(w, now)) {
                Ok(()) => {
                    self.bump_transitions();
                    return Ok(());
                }
                Err(cur) => w = cur,
            }
        }
        Err(Corrupt)
    }

    /// Half-open: a failed probe reopens, `half_open_success_threshold` successes
    /// close, an ignored probe frees its slot and decides nothing.
    fn record_probe(&self, epoch: u32, outcome: Outcome, now: u64) -> Result<(), Corrupt> {
        // Invariant: probe counters belong to the half-open episode of `epoch`; a CAS
        // from any other word fails and the outcome then decides nothing.
        let mut w = self.load();
        for _ in 0..MAX_RETRIES {
            if w.state() != State::HalfOpen || w.epoch() != epoch {
                return Ok(());
            }
            let probes = w.probes().saturating_sub(1);
            let next = match outcome {
                Outcome::Ignored => w.with_probe_counts(probes, w.successes()),
                Outcome::Failure => self.reopen(w, now),
                Outcome::Success => {
                    let s = w.successes() + 1;
                    if s >= self.config.half_open_success_threshold {
                        Word::closed(next_epoch(epoch, false))
                    } else {
                        w.with_probe_counts(probes, s)
                    }
                }
            };
            #[cfg(seawall_mutant = "open_until_split")]
            if next.state() == State::Open {
                // Mutant: publish the new state first and its timestamp after, as two
                // separately written fields would.
                let early = Word::open(next.epoch(), next.k(), w.time());
                if self.cas(w, early).is_ok() {
                    self.state.store(next.0, Ordering::Release);
                    self.bump_transitions();
                    return Ok(());
                }
            }
            match self.cas(w, next) {
                Ok(()) => {
                    if next.epoch() != epoch {
                        self.bump_transitions();
                    }
                    return Ok(());
                }
                Err(cur) => w = cur,
            }
        }
        Err(Corrupt)
    }

    /// The open word that follows closed word `w`: first opening (k = 1).
    fn first_opening(&self, w: Word, now: u64) -> Word {
        self.opening(next_epoch(w.epoch(), false), 1, now)
    }

    /// The open word that follows half-open word `w`: one more consecutive opening.
    fn reopen(&self, w: Word, now: u64) -> Word {
        let k = (w.k() + 1).min(MAX_OPENINGS);
        self.opening(next_epoch(w.epoch(), false), k, now)
    }

    fn opening(&self, epoch: u32, k: u32, now: u64) -> Word {
        let now = self.observe(now);
        Word::open(epoch, k, now.saturating_add(self.open_duration(k, epoch)))
    }

    /// Duration of the `k`-th consecutive opening, which starts epoch `epoch`:
    /// `min(max_open_duration, open_duration · multiplier^(k−1))`, each step rounded
    /// down to whole ns, then `± open_jitter_factor` drawn from (seed, epoch), so
    /// everyone predicting it gets the same answer.
    fn open_duration(&self, k: u32, epoch: u32) -> u64 {
        let c = &self.config;
        let cap = c.max_open_duration_ns.unwrap_or(u64::MAX);
        let mut d = c.open_duration_ns.min(cap);
        if c.open_backoff_multiplier > Ratio::ONE {
            for _ in 1..k {
                if d >= cap {
                    break;
                }
                d = c.open_backoff_multiplier.scale(d).min(cap);
            }
        }
        if c.open_jitter_factor > Ratio::ZERO {
            let spread = c.open_jitter_factor.scale(d);
            let bits = mix64(c.jitter_seed ^ u64::from(epoch));
            // `spread ≤ d` for any validated factor (≤ 1); saturating for a factor
            // overwritten in a shared region.
            d = pick(bits, d.saturating_sub(spread), d.saturating_add(spread));
        }
        d
    }

    /// What a rejection in `open` would report at `now` (ns): the time left until
    /// the open period ends; `None` when an acquire now would not be rejected in
    /// `open`. In `half_open` past `half_open_max_wait`, the next acquire reopens,
    /// so this is the coming open duration. Reading changes nothing.
    pub fn retry_after(&self, now: u64) -> Option<u64> {
        self.retry_after_of(self.load(), now)
    }

    fn retry_after_of(&self, w: Word, now: u64) -> Option<u64> {
        let now = now.max(self.clock.load(Ordering::Acquire));
        match w.state() {
            State::Open => (now < w.time()).then(|| w.time() - now),
            State::HalfOpen => {
                let max_wait = self.config.half_open_max_wait_ns?;
                (now.saturating_sub(w.time()) >= max_wait).then(|| {
                    let k = (w.k() + 1).min(MAX_OPENINGS);
                    self.open_duration(k, next_epoch(w.epoch(), false))
                })
            }
            _ => None,
        }
    }

    /// The current state (`open` until an acquire moves it on).
    pub fn state(&self) -> State {
        self.load().state()
    }

    /// The current epoch; it changes with every state change, so a binding can
    /// poll it to notice transitions made by other threads or processes.
    pub fn epoch(&self) -> u32 {
        self.load().epoch()
    }

    /// The state and its epoch from one read of the state word, so the two always
    /// belong together: what a binding polls to notice transitions made by other
    /// threads or processes, at the cost of one load.
    pub fn state_and_epoch(&self) -> (State, u32) {
        let w = self.load();
        (w.state(), w.epoch())
    }

    /// Reject every call until [`reset`](Self::reset) (`forced_open`).
    pub fn force_open(&self) {
        let _ = self.set_manual(State::ForcedOpen);
    }

    /// Admit every call and count outcomes in totals only, until
    /// [`reset`](Self::reset) (`disabled`).
    pub fn disable(&self) {
        let _ = self.set_manual(State::Disabled);
    }

    /// Back to `closed` with an empty window, a zero failure run and k = 1
    /// for the next opening. Outstanding permits become stale.
    pub fn reset(&self) {
        let _ = self.set_manual(State::Closed);
    }

    /// [`force_open`](Self::force_open) (`ForcedOpen`), [`disable`](Self::disable)
    /// (`Disabled`) or [`reset`](Self::reset) (`Closed`) for a breaker in memory
    /// others may write: [`Corrupt`] when the state word kept changing under
    /// [`MAX_RETRIES`] passes (nothing was changed then). Any other `state` is
    /// treated as `Closed`.
    pub fn set_manual_checked(&self, state: State) -> Result<(), Corrupt> {
        let state = match state {
            State::ForcedOpen | State::Disabled => state,
            State::Closed | State::Open | State::HalfOpen => State::Closed,
        };
        self.set_manual(state)
    }

    /// Start from an exported state (DESIGN §3.7) at `now` (ns): `open` for
    /// exactly `open_left_ns` more (then half-open as usual), `half_open` as
    /// `open` with no time left (the next acquire probes), both with `openings`
    /// consecutive openings (clamped to 1..=[`MAX_OPENINGS`]); `forced_open`,
    /// `disabled` and `closed` (an empty window) as [`force_open`](Self::force_open),
    /// [`disable`](Self::disable) and [`reset`](Self::reset) make them. Window
    /// counts are not carried. Outstanding permits become stale. [`Corrupt`]
    /// when the state word kept changing under [`MAX_RETRIES`] passes (nothing
    /// was changed then).
    pub fn restore(
        &self,
        state: State,
        openings: u32,
        open_left_ns: u64,
        now: u64,
    ) -> Result<(), Corrupt> {
        let k = openings.clamp(1, MAX_OPENINGS);
        match state {
            State::Open | State::HalfOpen => {
                let now = self.observe(now);
                let until = if matches!(state, State::Open) {
                    now.saturating_add(open_left_ns)
                } else {
                    now
                };
                self.change_state(|epoch| Word::open(epoch, k, until))
            }
            State::Closed | State::ForcedOpen | State::Disabled => self.set_manual(state),
        }
    }

    fn set_manual(&self, state: State) -> Result<(), Corrupt> {
        self.change_state(|epoch| Word::manual(state, epoch))
    }

    /// Replace the state word with `next(epoch)`, `epoch` the one after the
    /// current word's.
    fn change_state(&self, next: impl Fn(u32) -> Word) -> Result<(), Corrupt> {
        // Invariant: every state change is a new epoch, so permits of the old state
        // are stale; the CAS retries only if another change slipped in between.
        let mut w = self.load();
        #[cfg(seawall_mutant = "state_change_blind")]
        {
            // Mutant: a blind store lets two changes take the same epoch.
            let _ = &mut w;
            self.state
                .store(next(next_epoch(w.epoch(), false)).0, Ordering::Release);
            self.bump_transitions();
            return Ok(());
        }
        #[cfg(not(seawall_mutant = "state_change_blind"))]
        for _ in 0..MAX_RETRIES {
            match self.cas(w, next(next_epoch(w.epoch(), false))) {
                Ok(()) => {
                    self.bump_transitions();
                    return Ok(());
                }
                Err(cur) => w = cur,
            }
        }
        #[cfg(not(seawall_mutant = "state_change_blind"))]
        Err(Corrupt)
    }

    /// A snapshot of state, window (as of `now`, ns) and totals. Reading changes
    /// nothing.
    pub fn metrics(&self, now: u64) -> BreakerMetrics {
        let w = self.load();
        let state = w.state();
        let generation = if state == State::Closed {
            Some(w.epoch())
        } else {
            self.window.latest_gen()
        };
        let window = generation
            .map(|g| self.window.counts_gen(g, now))
            .unwrap_or_default();
        BreakerMetrics {
            state,
            epoch: w.epoch(),
            window,
            failure_rate: Ratio::of(window.failures, window.calls),
            slow_call_rate: Ratio::of(window.slow, window.calls),
            consecutive_failures: if state == State::Closed { w.run() } else { 0 },
            half_open_in_flight: if state == State::HalfOpen {
                w.probes()
            } else {
                0
            },
            half_open_successes: if state == State::HalfOpen {
                w.successes()
            } else {
                0
            },
            openings: w.k(),
            retry_after_ns: self.retry_after_of(w, now),
            totals: self.totals.read(self.window.successes()),
        }
    }

    /// A half-open probe: counted now, since its slot is taken now (a closed or
    /// disabled permit is counted when recorded, so a closed acquire writes nothing).
    fn admit_probe(&self, epoch: u32) -> PermitToken {
        // Mutant `probe_uncounted`: the probe is missing from `admitted` while out.
        #[cfg(not(seawall_mutant = "probe_uncounted"))]
        Totals::bump_ordered(&self.totals.probes_admitted);
        PermitToken { epoch }
    }

    fn reject(&self, state: State, retry_after_ns: Option<u64>) -> Rejected {
        self.totals.rejected.bump();
        Rejected {
            state,
            retry_after_ns,
        }
    }

    fn bump_transitions(&self) {
        Totals::bump(&self.totals.transitions);
    }

    /// The caller's `now`, raised to the largest the state machine has seen: a
    /// clock that steps back counts as no time passed (DESIGN §0).
    fn observe(&self, now: u64) -> u64 {
        raise_to(&self.clock, now).0
    }

    fn load(&self) -> Word {
        Word(self.state.load(Ordering::Acquire))
    }

    fn cas(&self, current: Word, next: Word) -> Result<(), Word> {
        self.state
            .compare_exchange(current.0, next.0, Ordering::AcqRel, Ordering::Acquire)
            .map(|_| ())
            .map_err(Word)
    }
}

impl<W: SlidingWindow> core::fmt::Debug for CircuitBreaker<W> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let w = self.load();
        f.debug_struct("CircuitBreaker")
            .field("state", &w.state())
            .field("epoch", &w.epoch())
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}
