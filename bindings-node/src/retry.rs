//! Retry (DESIGN §4): backoff with jitter, the retry budget (Finagle
//! `RetryBudget`), the retry throttle (gRPC A6) and the retry decision, as
//! JavaScript sees them.
//!
//! The JS layer asks [`retry_policy_decide`] once per failed attempt; the
//! answer is a delay in ms (`≥ 0`) or why to give up (`-1` max attempts, `-2`
//! deadline, `-3` budget exhausted, `-4` throttled). Budgets and throttles are
//! their own objects so that many policies, and with `shared` every process of
//! the host (`seawall_host::retry`, a region in `/dev/shm`), draw on one.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use napi::bindgen_prelude::{Env, External};
use napi_derive::napi;
use seawall_core::{
    Backoff, BackoffConfig, FailedAttempt, Jitter, MILLI, RetryBudget, RetryBudgetConfig,
    RetryConfig, RetryDecision, RetryGate, RetryPolicy, RetryThrottle, RetryThrottleConfig,
    SplitMix64,
};
use seawall_host::clock::monotonic_ns;
use seawall_host::handle::Handle;
use seawall_host::shared::{OpenOptions, Shareable};

use crate::boundary::{Result, give_up_code, invalid, throwing};
use crate::convert::{config_error, count, factor, ms_to_ns, ns_to_ms, percent, region_error};
use crate::handles::{Token, registry};
use seawall_host::units::milli_tokens as milli;

/// A budget or throttle in this process, or (with `shared`) the one named
/// `shared`, created or attached (attaching changes nothing; another
/// configuration is `ESHAREDMISMATCH`). Every method goes through `Deref`.
fn store<T: Shareable>(config: &T::Config, shared: Option<String>) -> Result<Rc<Handle<T>>> {
    let handle = match shared {
        None => Handle::new(config).map_err(config_error)?,
        Some(name) => {
            Handle::open_shared(&name, config, &OpenOptions::default()).map_err(region_error)?
        }
    };
    Ok(Rc::new(handle))
}

fn now_or_clock(now_ms: Option<f64>) -> u64 {
    now_ms.map_or_else(monotonic_ns, ms_to_ns)
}

/// A backoff configuration (absent = DESIGN §4 default: 100 ms × 2ⁿ⁻¹, cap 10 s,
/// full jitter).
#[napi(object)]
pub struct NativeBackoffConfig {
    /// First delay (ms).
    pub base_ms: Option<f64>,
    /// Growth per attempt (≥ 1).
    pub multiplier: Option<f64>,
    /// Cap (ms).
    pub max_ms: Option<f64>,
    /// `none`, `full`, `equal`, `decorrelated` or `proportional`.
    pub jitter: Option<String>,
    /// Proportional jitter's factor (0–1, default 0.2).
    pub jitter_factor: Option<f64>,
}

fn backoff_config(c: &NativeBackoffConfig) -> Result<BackoffConfig> {
    let d = BackoffConfig::DEFAULT;
    let jitter = match c.jitter.as_deref() {
        None => d.jitter,
        Some("none") => Jitter::None,
        Some("full") => Jitter::Full,
        Some("equal") => Jitter::Equal,
        Some("decorrelated") => Jitter::Decorrelated,
        Some("proportional") => {
            c.jitter_factor
                .map_or(Jitter::PROPORTIONAL, |f| Jitter::Proportional {
                    factor: factor(f),
                })
        }
        Some(other) => {
            return Err(invalid(
                "backoff.jitter",
                &format!(
                    "must be 'none', 'full', 'equal', 'decorrelated' or 'proportional', not {other:?}"
                ),
            ));
        }
    };
    let cfg = BackoffConfig {
        base_ns: c.base_ms.map_or(d.base_ns, ms_to_ns),
        multiplier: c.multiplier.map_or(d.multiplier, factor),
        max_ns: c.max_ms.map_or(d.max_ns, ms_to_ns),
        jitter,
    };
    cfg.validate().map_err(config_error)?;
    Ok(cfg)
}

/// Backoff delays (DESIGN §4) with their own PRNG (seeded from OS entropy).
pub struct BackoffEntry {
    backoff: Backoff,
    rng: Cell<SplitMix64>,
}

registry!(BACKOFFS, BackoffEntry, "backoff");

fn free_backoff(handle: f64) {
    let _ = BACKOFFS.try_with(|r| r.free(handle));
}

fn draw(rng: &Cell<SplitMix64>) -> u64 {
    let mut r = rng.get();
    let x = r.next_u64();
    rng.set(r);
    x
}

/// A backoff; returns the token that owns it. Throws on an invalid
/// configuration (naming `backoff.*`).
#[napi]
pub fn backoff_new(env: Env, config: NativeBackoffConfig) -> napi::Result<External<Token>> {
    throwing(env, new_backoff_new(config))
}

fn new_backoff_new(config: NativeBackoffConfig) -> Result<External<Token>> {
    let backoff = Backoff::new(backoff_config(&config)?).map_err(config_error)?;
    let entry = BackoffEntry {
        backoff,
        rng: Cell::new(SplitMix64::new(seawall_host::entropy::entropy())),
    };
    let handle = BACKOFFS.with(|r| r.insert(entry))?;
    Ok(External::new(Token::new(handle, free_backoff)))
}

/// The delay (ms) before retry `attempt` (≥ 1), given the previous delay (ms;
/// decorrelated jitter only) and a fresh random draw.
#[napi]
pub fn backoff_delay(h: f64, attempt: u32, previous_ms: f64) -> Result<f64> {
    BACKOFFS.with(|r| {
        r.with(h, |e| {
            let random = draw(&e.rng);
            ns_to_ms(e.backoff.delay(attempt, ms_to_ns(previous_ms), random))
        })
    })
}

/// The un-jittered delay `min(cap, base · multiplier^(attempt−1))` (ms).
#[napi]
pub fn backoff_exponential(h: f64, attempt: u32) -> Result<f64> {
    BACKOFFS.with(|r| r.with(h, |e| ns_to_ms(e.backoff.exponential(attempt))))
}

/// Restart the backoff's PRNG from `seed` (tests; any number).
#[napi]
pub fn backoff_reseed(h: f64, seed: f64) -> Result<()> {
    BACKOFFS.with(|r| r.with(h, |e| e.rng.set(SplitMix64::new(seed.to_bits()))))
}

/// A retry budget configuration (absent = DESIGN §4 default: ttl 10 s, 10 retries
/// per second, 20 %).
#[napi(object)]
pub struct NativeRetryBudgetConfig {
    /// How long deposits and withdrawals count (ms, ≥ 1).
    pub ttl_ms: Option<f64>,
    /// Retries always allowed per second of ttl.
    pub min_retries_per_sec: Option<f64>,
    /// Percent of a retry each request deposits (0–1000).
    pub percent_can_retry: Option<f64>,
}

/// What a budget holds now.
#[napi(object)]
pub struct NativeRetryBudgetSnapshot {
    /// Requests deposited in the live window.
    pub requests: f64,
    /// Retries withdrawn in the live window.
    pub retries: f64,
    /// Whole retries that would be allowed now.
    pub available: f64,
    /// Withdrawals allowed since the budget was made (of every process, for a
    /// shared budget).
    pub allowed: f64,
    /// Withdrawals refused since the budget was made.
    pub refused: f64,
}

type BudgetRef = Rc<Handle<RetryBudget>>;

registry!(BUDGETS, BudgetRef, "retry budget");

fn free_budget(handle: f64) {
    let _ = BUDGETS.try_with(|r| r.free(handle));
}

fn with_budget<R>(h: f64, f: impl FnOnce(&RetryBudget) -> R) -> Result<R> {
    BUDGETS.with(|r| r.with(h, |b| f(b)))
}

/// A retry budget (Finagle `RetryBudget`, DESIGN §4) in this process, or (with
/// `shared`) the budget named `shared` in `/dev/shm`, created or attached;
/// returns the token that owns it. Throws on an invalid configuration or a
/// region that cannot be opened.
#[napi]
pub fn retry_budget_new(
    env: Env,
    config: NativeRetryBudgetConfig,
    shared: Option<String>,
) -> napi::Result<External<Token>> {
    throwing(env, new_retry_budget_new(config, shared))
}

fn new_retry_budget_new(
    config: NativeRetryBudgetConfig,
    shared: Option<String>,
) -> Result<External<Token>> {
    let d = RetryBudgetConfig::DEFAULT;
    let cfg = RetryBudgetConfig {
        ttl_ns: config.ttl_ms.map_or(d.ttl_ns, ms_to_ns),
        min_retries_per_sec: config
            .min_retries_per_sec
            .map_or(d.min_retries_per_sec, count),
        percent_can_retry: config
            .percent_can_retry
            .map_or(d.percent_can_retry, percent),
    };
    let budget = store::<RetryBudget>(&cfg, shared)?;
    let handle = BUDGETS.with(|r| r.insert(budget))?;
    Ok(External::new(Token::new(handle, free_budget)))
}

/// Remove the shared retry budget `name` (a missing one is fine). Processes
/// attached to it keep theirs; the next open creates a new one.
#[napi]
pub fn retry_budget_unlink_shared(env: Env, name: String) -> napi::Result<()> {
    throwing(env, new_retry_budget_unlink_shared(name))
}

fn new_retry_budget_unlink_shared(name: String) -> Result<()> {
    Handle::<RetryBudget>::unlink_shared(&name).map_err(region_error)
}

/// One original request starts (deposits `percent_can_retry` of a retry).
pub fn retry_budget_deposit(h: f64, now_ms: Option<f64>) -> Result<()> {
    with_budget(h, |b| b.deposit(now_or_clock(now_ms)))
}

/// Withdraw one retry if the balance covers it (one atomic step).
#[napi]
pub fn retry_budget_try_withdraw(h: f64, now_ms: Option<f64>) -> Result<bool> {
    with_budget(h, |b| b.try_withdraw(now_or_clock(now_ms)))
}

/// Requests, retries and retries available now; withdrawals allowed and
/// refused since the budget was made.
#[napi]
pub fn retry_budget_snapshot(h: f64, now_ms: Option<f64>) -> Result<NativeRetryBudgetSnapshot> {
    with_budget(h, |b| {
        let s = b.snapshot(now_or_clock(now_ms));
        let t = b.totals();
        NativeRetryBudgetSnapshot {
            requests: s.requests as f64,
            retries: s.retries as f64,
            available: s.available() as f64,
            allowed: t.allowed as f64,
            refused: t.refused as f64,
        }
    })
}

/// A retry throttle configuration (absent = gRPC's example: 10 tokens, ratio 0.1).
#[napi(object)]
pub struct NativeRetryThrottleConfig {
    /// `maxTokens` (0 < n ≤ 1000).
    pub max_tokens: Option<f64>,
    /// `tokenRatio` (> 0, truncated to 3 decimals).
    pub token_ratio: Option<f64>,
}

type ThrottleRef = Rc<Handle<RetryThrottle>>;

registry!(THROTTLES, ThrottleRef, "retry throttle");

fn free_throttle(handle: f64) {
    let _ = THROTTLES.try_with(|r| r.free(handle));
}

fn with_throttle<R>(h: f64, f: impl FnOnce(&RetryThrottle) -> R) -> Result<R> {
    THROTTLES.with(|r| r.with(h, |t| f(t)))
}

/// A retry throttle (gRPC A6, DESIGN §4) in this process, or (with `shared`)
/// the throttle named `shared` in `/dev/shm`, created or attached; returns the
/// token that owns it. Throws on an invalid configuration or a region that
/// cannot be opened.
#[napi]
pub fn retry_throttle_new(
    env: Env,
    config: NativeRetryThrottleConfig,
    shared: Option<String>,
) -> napi::Result<External<Token>> {
    throwing(env, new_retry_throttle_new(config, shared))
}

fn new_retry_throttle_new(
    config: NativeRetryThrottleConfig,
    shared: Option<String>,
) -> Result<External<Token>> {
    let d = RetryThrottleConfig::DEFAULT;
    let cfg = RetryThrottleConfig {
        max_milli_tokens: config.max_tokens.map_or(d.max_milli_tokens, milli),
        token_ratio_milli: config.token_ratio.map_or(d.token_ratio_milli, milli),
    };
    let throttle = store::<RetryThrottle>(&cfg, shared)?;
    let handle = THROTTLES.with(|r| r.insert(throttle))?;
    Ok(External::new(Token::new(handle, free_throttle)))
}

/// Remove the shared retry throttle `name` (a missing one is fine). Processes
/// attached to it keep theirs; the next open creates a new one.
#[napi]
pub fn retry_throttle_unlink_shared(env: Env, name: String) -> napi::Result<()> {
    throwing(env, new_retry_throttle_unlink_shared(name))
}

fn new_retry_throttle_unlink_shared(name: String) -> Result<()> {
    Handle::<RetryThrottle>::unlink_shared(&name).map_err(region_error)
}

/// A call failed: take a token; whether its retry is allowed.
#[napi]
pub fn retry_throttle_record_failure(h: f64) -> Result<bool> {
    with_throttle(h, RetryThrottle::record_failure)
}

/// A call succeeded: add `tokenRatio`.
pub fn retry_throttle_record_success(h: f64) -> Result<()> {
    with_throttle(h, RetryThrottle::record_success)
}

/// Tokens now.
#[napi]
pub fn retry_throttle_tokens(h: f64) -> Result<f64> {
    with_throttle(h, |t| t.milli_tokens() as f64 / f64::from(MILLI))
}

/// A retry policy configuration: attempts (≥ 1, default 3) and backoff.
#[napi(object)]
pub struct NativeRetryConfig {
    /// Attempts in all, the first included.
    pub attempts: Option<f64>,
    /// Backoff between attempts.
    pub backoff: Option<NativeBackoffConfig>,
}

enum Gate {
    None,
    Budget(BudgetRef),
    Throttle(ThrottleRef),
}

/// The retry decision (DESIGN §4): attempts, backoff, deadline, Retry-After and a
/// budget or throttle, decided by the core in one call per failed attempt.
pub struct PolicyEntry {
    policy: RetryPolicy,
    gate: RefCell<Gate>,
    rng: Cell<SplitMix64>,
}

registry!(POLICIES, PolicyEntry, "retry policy");

fn free_policy(handle: f64) {
    let _ = POLICIES.try_with(|r| r.free(handle));
}

/// A retry policy, gated by the budget (`budget`, a handle) or the throttle
/// (`throttle`) if given; returns the token that owns it. Throws on an invalid
/// configuration or a stale budget / throttle handle.
#[napi]
pub fn retry_policy_new(
    env: Env,
    config: NativeRetryConfig,
    budget: Option<f64>,
    throttle: Option<f64>,
) -> napi::Result<External<Token>> {
    throwing(env, new_retry_policy_new(config, budget, throttle))
}

fn new_retry_policy_new(
    config: NativeRetryConfig,
    budget: Option<f64>,
    throttle: Option<f64>,
) -> Result<External<Token>> {
    let d = RetryConfig::DEFAULT;
    let backoff = match &config.backoff {
        Some(b) => backoff_config(b)?,
        None => d.backoff,
    };
    let policy = RetryPolicy::new(RetryConfig {
        backoff,
        max_attempts: config.attempts.map_or(d.max_attempts, count),
    })
    .map_err(config_error)?;
    let gate = match (budget, throttle) {
        (Some(b), _) => Gate::Budget(BUDGETS.with(|r| r.with(b, Rc::clone))?),
        (None, Some(t)) => Gate::Throttle(THROTTLES.with(|r| r.with(t, Rc::clone))?),
        (None, None) => Gate::None,
    };
    let entry = PolicyEntry {
        policy,
        gate: RefCell::new(gate),
        rng: Cell::new(SplitMix64::new(seawall_host::entropy::entropy())),
    };
    let handle = POLICIES.with(|r| r.insert(entry))?;
    Ok(External::new(Token::new(handle, free_policy)))
}

/// Attempt `attempt` (1 = the first call) failed. Returns the delay (ms) before
/// the next attempt, or a negative reason to give up (see the module docs).
/// `previous_delay_ms`: the last delay (decorrelated jitter);
/// `deadline_remaining_ms` and `retry_after_ms`: negative for none.
#[napi]
pub fn retry_policy_decide(
    h: f64,
    attempt: u32,
    previous_delay_ms: f64,
    deadline_remaining_ms: f64,
    retry_after_ms: f64,
    now_ms: Option<f64>,
) -> Result<f64> {
    POLICIES.with(|r| {
        r.with(h, |e| {
            let opt = |ms: f64| (ms >= 0.0).then(|| ms_to_ns(ms));
            let failed = FailedAttempt {
                attempt,
                previous_delay_ns: ms_to_ns(previous_delay_ms),
                random: draw(&e.rng),
                deadline_remaining_ns: opt(deadline_remaining_ms),
                retry_after_ns: opt(retry_after_ms),
            };
            let gate = e.gate.borrow();
            let gate = match &*gate {
                Gate::None => RetryGate::None,
                Gate::Budget(b) => RetryGate::Budget(b),
                Gate::Throttle(t) => RetryGate::Throttle(t),
            };
            match e.policy.decide(&failed, gate, now_or_clock(now_ms)) {
                RetryDecision::Retry { delay_ns } => ns_to_ms(delay_ns),
                RetryDecision::GiveUp(g) => give_up_code(g),
            }
        })
    })
}

/// [`retry_budget_deposit`] at `now_ms` of the caller's clock.
#[napi]
pub fn retry_budget_deposit_at(h: f64, now_ms: f64) -> Result<()> {
    with_budget(h, |b| b.deposit(ms_to_ns(now_ms)))
}
