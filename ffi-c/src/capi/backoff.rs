//! `seawall_backoff` and `seawall_retry_decide`: exponential backoff with jitter
//! and the retry decision (DESIGN §4) through the C ABI. Both are plain data the
//! caller keeps (a configuration, and the state of one retry loop): no handle,
//! nothing to free.

use std::ffi::c_char;

use seawall_core::{
    Backoff, BackoffConfig, FailedAttempt, Jitter, Ratio, RetryConfig, RetryDecision, RetryGate,
    RetryPolicy, SplitMix64,
};

use super::common::SEAWALL_NONE;
use super::{Failure, arg, guard, guard_value, out, put, seawall_status};
use super::{retry_budget, retry_throttle};

/// A jitter: `SEAWALL_JITTER_NONE`, `_FULL`, `_EQUAL`, `_DECORRELATED` or
/// `_PROPORTIONAL`.
#[allow(non_camel_case_types, reason = "C type name")]
pub type seawall_jitter = u32;
/// `exp(n)` exactly.
pub const SEAWALL_JITTER_NONE: seawall_jitter = 0;
/// `U[0, exp(n)]` (AWS full jitter).
pub const SEAWALL_JITTER_FULL: seawall_jitter = 1;
/// `U[floor(exp(n)/2), exp(n)]` (AWS equal jitter).
pub const SEAWALL_JITTER_EQUAL: seawall_jitter = 2;
/// `d1 = min(cap, base)`, `dn = min(cap, U[base, 3·d(n−1)])` (AWS decorrelated
/// jitter): each delay grows from the previous one, which the state carries.
pub const SEAWALL_JITTER_DECORRELATED: seawall_jitter = 3;
/// `min(cap, exp(n) · U[1 − f, 1 + f])` with `f = jitter_factor_ppm`.
pub const SEAWALL_JITTER_PROPORTIONAL: seawall_jitter = 4;

/// Why a call gives up: `SEAWALL_GIVE_UP_*`.
#[allow(non_camel_case_types, reason = "C type name")]
pub type seawall_give_up = u32;
/// `max_attempts` attempts were made.
pub const SEAWALL_GIVE_UP_MAX_ATTEMPTS: seawall_give_up = 0;
/// The retry would start at or after the deadline.
pub const SEAWALL_GIVE_UP_DEADLINE: seawall_give_up = 1;
/// The retry budget is spent.
pub const SEAWALL_GIVE_UP_BUDGET_EXHAUSTED: seawall_give_up = 2;
/// The retry throttle refused (tokens ≤ max / 2).
pub const SEAWALL_GIVE_UP_THROTTLED: seawall_give_up = 3;
/// Not given up: the decision is to retry.
pub const SEAWALL_GIVE_UP_NONE: seawall_give_up = 255;

/// Backoff configuration (DESIGN §4): `exp(n) = min(max, base · multiplier^(n−1))`
/// for retry `n ≥ 1`, then jitter. Start from `seawall_backoff_config_default()`.
#[allow(non_camel_case_types, reason = "C type name")]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct seawall_backoff_config {
    /// Delay before the first retry (ns; 0 makes every delay 0: retry at once).
    /// Default 100 ms.
    pub base_ns: u64,
    /// Growth per attempt (ppm, ≥ 1 000 000; 2 000 000 doubles). Default ×2.
    pub multiplier_ppm: u64,
    /// Cap of every delay, after jitter (ns, ≥ `base_ns`). Default 10 s.
    pub max_ns: u64,
    /// `SEAWALL_JITTER_*`. Default full.
    pub jitter: seawall_jitter,
    /// Must be 0: anything else is `SEAWALL_STATUS_INVALID_ARGUMENT`.
    pub reserved: u32,
    /// Proportional jitter's factor `f` (ppm, 0 ..= 1 000 000); ignored by the
    /// other jitters. Default 200 000.
    pub jitter_factor_ppm: u64,
}

/// The state of one retry loop, carried by the caller between attempts: start
/// it with `seawall_backoff_state_new(seed)`, pass it to every
/// `seawall_backoff_next_delay`. Plain data; one per retry loop, not shared.
#[allow(non_camel_case_types, reason = "C type name")]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct seawall_backoff_state {
    /// Retries delayed so far.
    pub attempt: u32,
    /// Must be 0: anything else is `SEAWALL_STATUS_INVALID_ARGUMENT`.
    pub reserved: u32,
    /// The delay the last `seawall_backoff_next_delay` drew (before any
    /// retry-after raised it); decorrelated jitter grows from it.
    pub previous_ns: u64,
    /// The jitter generator's state (`SplitMix64`).
    pub rng_state: u64,
}

/// Retry policy: backoff and attempts in all.
#[allow(non_camel_case_types, reason = "C type name")]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct seawall_retry_config {
    /// The delays between attempts.
    pub backoff: seawall_backoff_config,
    /// Attempts in all, the first one included (≥ 1; 1 never retries). Default 3.
    pub max_attempts: u32,
    /// Must be 0: anything else is `SEAWALL_STATUS_INVALID_ARGUMENT`.
    pub reserved: u32,
}

/// The failed attempt, as the caller knows it.
#[allow(non_camel_case_types, reason = "C type name")]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct seawall_failed_attempt {
    /// Which attempt failed, 1-based (the first call is attempt 1).
    pub attempt: u32,
    /// Must be 0: anything else is `SEAWALL_STATUS_INVALID_ARGUMENT`.
    pub reserved: u32,
    /// The delay the previous retry of this call slept (0 before the first
    /// retry); decorrelated jitter grows from it.
    pub previous_delay_ns: u64,
    /// 64 random bits for the jitter (e.g. `seawall_random_seed()`).
    pub random: u64,
    /// Time left in the call's deadline (ns), or `SEAWALL_NONE` for none.
    pub deadline_remaining_ns: u64,
    /// The server's Retry-After / pushback (ns), or `SEAWALL_NONE` for none.
    pub retry_after_ns: u64,
}

/// The answer: retry after `delay_ns`, or give up with the last error at once.
#[allow(non_camel_case_types, reason = "C type name")]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct seawall_retry_decision {
    /// Retry: the sleep (ns), the backoff raised to the retry-after. Give up: 0.
    pub delay_ns: u64,
    /// Give up: why (`SEAWALL_GIVE_UP_*`). Retry: `SEAWALL_GIVE_UP_NONE`.
    pub give_up: seawall_give_up,
    /// Whether to retry.
    pub retry: bool,
}

/// Weyl increment of `SplitMix64` (the golden ratio in 64 bits): the generator's
/// state moves by this much per draw (Steele, Lea & Flood 2014), as in the
/// core's `SplitMix64`; a test checks the sequences agree.
const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

/// The C view of a core configuration.
pub(crate) fn c_config(c: &BackoffConfig) -> seawall_backoff_config {
    let (jitter, factor) = match c.jitter {
        Jitter::None => (SEAWALL_JITTER_NONE, None),
        Jitter::Full => (SEAWALL_JITTER_FULL, None),
        Jitter::Equal => (SEAWALL_JITTER_EQUAL, None),
        Jitter::Decorrelated => (SEAWALL_JITTER_DECORRELATED, None),
        Jitter::Proportional { factor } => (SEAWALL_JITTER_PROPORTIONAL, Some(factor.ppm())),
    };
    let default_factor = match Jitter::PROPORTIONAL {
        Jitter::Proportional { factor } => factor.ppm(),
        _ => 0,
    };
    seawall_backoff_config {
        base_ns: c.base_ns,
        multiplier_ppm: c.multiplier.ppm(),
        max_ns: c.max_ns,
        jitter,
        reserved: 0,
        jitter_factor_ppm: factor.unwrap_or(default_factor),
    }
}

/// The core configuration of a C one; an unknown jitter names the field.
pub(crate) fn core_config(c: &seawall_backoff_config) -> Result<BackoffConfig, Failure> {
    Failure::reserved(c.reserved, "seawall_backoff_config.reserved")?;
    let jitter = match c.jitter {
        SEAWALL_JITTER_NONE => Jitter::None,
        SEAWALL_JITTER_FULL => Jitter::Full,
        SEAWALL_JITTER_EQUAL => Jitter::Equal,
        SEAWALL_JITTER_DECORRELATED => Jitter::Decorrelated,
        SEAWALL_JITTER_PROPORTIONAL => Jitter::Proportional {
            factor: Ratio::from_ppm(c.jitter_factor_ppm),
        },
        other => {
            return Err(Failure::new(
                seawall_status::InvalidConfig,
                format_args!(
                    "invalid backoff.jitter: {other} is not a SEAWALL_JITTER_* value (0 to 4)"
                ),
            ));
        }
    };
    Ok(BackoffConfig {
        base_ns: c.base_ns,
        multiplier: Ratio::from_ppm(c.multiplier_ppm),
        max_ns: c.max_ns,
        jitter,
    })
}

/// A validated backoff of a C configuration argument.
///
/// # Safety
/// `config` is NULL or readable.
unsafe fn backoff_arg(config: *const seawall_backoff_config) -> Result<Backoff, Failure> {
    // SAFETY: the caller's promise.
    let c = core_config(unsafe { arg(config, "config") }?)?;
    Ok(Backoff::new(c)?)
}

fn optional(v: u64) -> Option<u64> {
    (v != SEAWALL_NONE).then_some(v)
}

/// One step of a retry loop's state: the delay before its next retry, raised to
/// `retry_after` (the same sequence as the core's `BackoffState` for a seed).
pub(crate) fn next_delay(
    backoff: &Backoff,
    state: &mut seawall_backoff_state,
    retry_after: Option<u64>,
) -> u64 {
    let random = SplitMix64::new(state.rng_state).next_u64();
    state.rng_state = state.rng_state.wrapping_add(GOLDEN);
    state.attempt = state.attempt.saturating_add(1);
    let d = backoff.delay(state.attempt, state.previous_ns, random);
    state.previous_ns = d;
    match retry_after {
        Some(r) if r > d => r,
        _ => d,
    }
}

/// The DESIGN §4 defaults: base 100 ms, ×2, cap 10 s, full jitter (proportional
/// factor 0.2 if you switch to it).
///
/// # Safety
/// Always safe to call, from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn seawall_backoff_config_default() -> seawall_backoff_config {
    c_config(&BackoffConfig::DEFAULT)
}

/// `SEAWALL_STATUS_OK` when `config` is valid, else `SEAWALL_STATUS_INVALID_CONFIG`
/// naming the field (e.g. a multiplier so close to 1 that the delay would not
/// reach the cap within 4096 attempts).
///
/// # Safety
/// `config` is NULL or readable. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_backoff_check_config(
    config: *const seawall_backoff_config,
) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `config`.
        unsafe { backoff_arg(config) }?;
        Ok(seawall_status::Ok)
    })
}

/// 64 random bits from the OS (for jitter seeds and `seawall_failed_attempt`'s
/// `random`).
///
/// # Safety
/// Always safe to call, from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn seawall_random_seed() -> u64 {
    guard_value(0, seawall_host::entropy::entropy)
}

/// The state of a new retry loop (no retry yet) whose jitter draws from `seed`:
/// the same seed gives the same delays (tests fix it; use
/// `seawall_random_seed()` otherwise).
///
/// # Safety
/// Always safe to call, from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn seawall_backoff_state_new(seed: u64) -> seawall_backoff_state {
    seawall_backoff_state {
        attempt: 0,
        previous_ns: 0,
        rng_state: seed,
        reserved: 0,
    }
}

/// The delay (ns) before the next retry of the loop `*state`, into
/// `*out_delay_ns`, and `*state` moves on (attempt + 1, the delay drawn, the
/// generator). A server's Retry-After / pushback (`retry_after_ns`, or
/// `SEAWALL_NONE`) raises the delay to at least that value, which may exceed the
/// cap; decorrelated jitter goes on from the jittered delay, not the server's.
/// An invalid configuration is `SEAWALL_STATUS_INVALID_CONFIG` and leaves
/// `*state` alone.
///
/// # Safety
/// `config` is NULL or readable; `state` is NULL or readable and writable;
/// `out_delay_ns` is NULL or writable. Thread-safe (a state belongs to one loop).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_backoff_next_delay(
    config: *const seawall_backoff_config,
    state: *mut seawall_backoff_state,
    retry_after_ns: u64,
    out_delay_ns: *mut u64,
) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `config`.
        let b = unsafe { backoff_arg(config) }?;
        let st = out(state, "state")?;
        let o = out(out_delay_ns, "out_delay_ns")?;
        // SAFETY: checked non-NULL; readable per the caller.
        let mut s = unsafe { st.as_ptr().read() };
        Failure::reserved(s.reserved, "seawall_backoff_state.reserved")?;
        let d = next_delay(&b, &mut s, optional(retry_after_ns));
        // SAFETY: checked non-NULL, writable per the caller.
        unsafe {
            put(st, s);
            put(o, d);
        }
        Ok(seawall_status::Ok)
    })
}

/// The delay (ns) before retry `attempt` (≥ 1; 0 counts as 1) given the previous
/// delay (`previous_ns`, for decorrelated jitter; ignored for attempt 1 and by
/// the other jitters) and 64 random bits: the pure function under
/// `seawall_backoff_next_delay`. Never above the cap.
///
/// # Safety
/// `config` is NULL or readable; `out_delay_ns` is NULL or writable. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_backoff_delay(
    config: *const seawall_backoff_config,
    attempt: u32,
    previous_ns: u64,
    random: u64,
    out_delay_ns: *mut u64,
) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `config`.
        let b = unsafe { backoff_arg(config) }?;
        let o = out(out_delay_ns, "out_delay_ns")?;
        // SAFETY: checked non-NULL, writable per the caller.
        unsafe { put(o, b.delay(attempt, previous_ns, random)) };
        Ok(seawall_status::Ok)
    })
}

/// The DESIGN §4 defaults: `seawall_backoff_config_default()` and 3 attempts.
///
/// # Safety
/// Always safe to call, from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn seawall_retry_config_default() -> seawall_retry_config {
    seawall_retry_config {
        backoff: c_config(&RetryConfig::DEFAULT.backoff),
        max_attempts: RetryConfig::DEFAULT.max_attempts,
        reserved: 0,
    }
}

/// Decide what follows a failed attempt at `now_ns`: retry after how long, or
/// give up and why. In order: a throttle (if given) records the failure; attempts
/// left; the delay (backoff raised to the retry-after); the deadline — a retry
/// whose sleep would end at or after it is not made; the throttle's verdict; last
/// the budget (if given), from which one retry is withdrawn only when it will
/// really be made. `budget` and `throttle` may each be NULL (not both given:
/// `SEAWALL_STATUS_INVALID_ARGUMENT`).
///
/// # Safety
/// `config` and `failed` are NULL or readable; `budget` and `throttle` are NULL
/// or live handles; `out` is NULL or writable. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn seawall_retry_decide(
    config: *const seawall_retry_config,
    failed: *const seawall_failed_attempt,
    budget: *const retry_budget::seawall_retry_budget,
    throttle: *const retry_throttle::seawall_retry_throttle,
    now_ns: u64,
    out: *mut seawall_retry_decision,
) -> seawall_status {
    guard(|| {
        // SAFETY: the caller's promise on `config` and `failed`.
        let (c, f) = unsafe { (arg(config, "config")?, arg(failed, "failed")?) };
        let o = self::out(out, "out")?;
        Failure::reserved(c.reserved, "seawall_retry_config.reserved")?;
        Failure::reserved(f.reserved, "seawall_failed_attempt.reserved")?;
        let policy = RetryPolicy::new(RetryConfig {
            backoff: core_config(&c.backoff)?,
            max_attempts: c.max_attempts,
        })?;
        // SAFETY: NULL or live handles (the caller's promise).
        let gate = unsafe {
            match (budget.is_null(), throttle.is_null()) {
                (true, true) => RetryGate::None,
                (false, true) => RetryGate::Budget(retry_budget::handle(budget)?),
                (true, false) => RetryGate::Throttle(retry_throttle::handle(throttle)?),
                (false, false) => {
                    return Err(Failure::new(
                        seawall_status::InvalidArgument,
                        "give a retry budget or a retry throttle, not both",
                    ));
                }
            }
        };
        let failed = FailedAttempt {
            attempt: f.attempt,
            previous_delay_ns: f.previous_delay_ns,
            random: f.random,
            deadline_remaining_ns: optional(f.deadline_remaining_ns),
            retry_after_ns: optional(f.retry_after_ns),
        };
        let d = match policy.decide(&failed, gate, now_ns) {
            RetryDecision::Retry { delay_ns } => seawall_retry_decision {
                delay_ns,
                give_up: SEAWALL_GIVE_UP_NONE,
                retry: true,
            },
            RetryDecision::GiveUp(why) => seawall_retry_decision {
                delay_ns: 0,
                give_up: seawall_give_up::from(why as u8),
                retry: false,
            },
        };
        // SAFETY: checked non-NULL, writable per the caller.
        unsafe { put(o, d) };
        Ok(seawall_status::Ok)
    })
}

/// The name of a give-up reason (`"max_attempts"`, `"deadline"`,
/// `"budget_exhausted"`, `"throttled"`, `"none"`), or `"unknown"`.
///
/// # Safety
/// Always safe to call; the string is static.
#[unsafe(no_mangle)]
pub extern "C" fn seawall_give_up_name(reason: seawall_give_up) -> *const c_char {
    guard_value(c"unknown".as_ptr(), || match reason {
        SEAWALL_GIVE_UP_MAX_ATTEMPTS => c"max_attempts".as_ptr(),
        SEAWALL_GIVE_UP_DEADLINE => c"deadline".as_ptr(),
        SEAWALL_GIVE_UP_BUDGET_EXHAUSTED => c"budget_exhausted".as_ptr(),
        SEAWALL_GIVE_UP_THROTTLED => c"throttled".as_ptr(),
        SEAWALL_GIVE_UP_NONE => c"none".as_ptr(),
        _ => c"unknown".as_ptr(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use seawall_core::{BackoffState, GiveUp};

    #[test]
    fn the_carried_state_draws_the_cores_sequence() {
        // The core's own retry-loop state, from the same seed, must give the same
        // delays: so C, Python and Node draw what a Rust user draws.
        let jitters = [
            Jitter::None,
            Jitter::Full,
            Jitter::Equal,
            Jitter::Decorrelated,
            Jitter::PROPORTIONAL,
        ];
        for jitter in jitters {
            let cfg = BackoffConfig {
                jitter,
                ..BackoffConfig::DEFAULT
            };
            let b = Backoff::new(cfg).unwrap();
            for seed in [0, 1, 0xdead_beef, u64::MAX] {
                let mut core = BackoffState::new(seed);
                let mut c = seawall_backoff_state_new(seed);
                for n in 0..40u64 {
                    let retry_after = (n % 7 == 3).then_some(n * 1_000_000_000);
                    assert_eq!(
                        next_delay(&b, &mut c, retry_after),
                        core.next_delay(&b, retry_after),
                        "{jitter:?} seed {seed} step {n}"
                    );
                    assert_eq!(c.attempt, core.attempt());
                }
            }
        }
    }

    #[test]
    fn give_up_values_are_the_cores() {
        for (g, v) in [
            (GiveUp::MaxAttempts, SEAWALL_GIVE_UP_MAX_ATTEMPTS),
            (GiveUp::Deadline, SEAWALL_GIVE_UP_DEADLINE),
            (GiveUp::BudgetExhausted, SEAWALL_GIVE_UP_BUDGET_EXHAUSTED),
            (GiveUp::Throttled, SEAWALL_GIVE_UP_THROTTLED),
        ] {
            assert_eq!(g as u32, v);
        }
    }

    #[test]
    fn a_zero_base_is_valid_and_every_delay_is_zero() {
        // DESIGN §4: base 0 gives zero delays (retry at once), whatever the jitter.
        for jitter in [
            SEAWALL_JITTER_NONE,
            SEAWALL_JITTER_FULL,
            SEAWALL_JITTER_EQUAL,
            SEAWALL_JITTER_DECORRELATED,
            SEAWALL_JITTER_PROPORTIONAL,
        ] {
            let c = seawall_backoff_config {
                base_ns: 0,
                jitter,
                ..seawall_backoff_config_default()
            };
            // SAFETY: pointers to live locals.
            unsafe {
                assert_eq!(
                    seawall_backoff_check_config(&raw const c),
                    seawall_status::Ok,
                    "jitter {jitter}"
                );
                let mut d = u64::MAX;
                assert_eq!(
                    seawall_backoff_delay(&raw const c, 4, 1_000_000_000, u64::MAX, &raw mut d),
                    seawall_status::Ok
                );
                assert_eq!(d, 0, "jitter {jitter}");
                let mut st = seawall_backoff_state_new(9);
                for _ in 0..5 {
                    d = u64::MAX;
                    assert_eq!(
                        seawall_backoff_next_delay(
                            &raw const c,
                            &raw mut st,
                            SEAWALL_NONE,
                            &raw mut d
                        ),
                        seawall_status::Ok
                    );
                    assert_eq!(d, 0, "jitter {jitter} attempt {}", st.attempt);
                }
                // The server's Retry-After still raises a zero delay.
                assert_eq!(
                    seawall_backoff_next_delay(&raw const c, &raw mut st, 5_000, &raw mut d),
                    seawall_status::Ok
                );
                assert_eq!(d, 5_000);
                let r = seawall_retry_config {
                    backoff: c,
                    ..seawall_retry_config_default()
                };
                let failed = seawall_failed_attempt {
                    attempt: 1,
                    previous_delay_ns: 0,
                    random: u64::MAX,
                    deadline_remaining_ns: SEAWALL_NONE,
                    retry_after_ns: SEAWALL_NONE,
                    reserved: 0,
                };
                let mut dec = seawall_retry_decision {
                    delay_ns: u64::MAX,
                    give_up: 0,
                    retry: false,
                };
                assert_eq!(
                    seawall_retry_decide(
                        &raw const r,
                        &raw const failed,
                        core::ptr::null(),
                        core::ptr::null(),
                        0,
                        &raw mut dec
                    ),
                    seawall_status::Ok
                );
                assert_eq!(
                    (dec.retry, dec.delay_ns, dec.give_up),
                    (true, 0, SEAWALL_GIVE_UP_NONE),
                    "jitter {jitter}"
                );
            }
        }
    }

    #[test]
    fn default_configs_are_the_design_defaults() {
        let c = seawall_backoff_config_default();
        // DESIGN §4: base 100 ms, multiplier 2, cap 10 s, full jitter, 3 attempts.
        assert_eq!(c.base_ns, 100_000_000);
        assert_eq!(c.multiplier_ppm, 2_000_000);
        assert_eq!(c.max_ns, 10_000_000_000);
        assert_eq!(c.jitter, SEAWALL_JITTER_FULL);
        assert_eq!(c.jitter_factor_ppm, 200_000);
        assert_eq!(seawall_retry_config_default().max_attempts, 3);
        let mut p = c;
        p.jitter = SEAWALL_JITTER_PROPORTIONAL;
        p.jitter_factor_ppm = 300_000;
        assert_eq!(c_config(&core_config(&p).unwrap()), p);
    }
}
