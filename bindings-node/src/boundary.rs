//! Every number and code that crosses into JavaScript, encoded and decoded here
//! only; [`constants`] hands the same numbers to `lib/` (through
//! `lib/native.js`), so no JavaScript file writes one of them down.
//!
//! * **Breaker permit**: `epoch · 262144 + slot` (the largest permit table,
//!   so one span fits every size; an integer below 2⁵⁰, exact in an `f64`): `epoch` admitted the call, `slot` is the shared permit-table slot
//!   (0 for a local breaker).
//! * **Breaker rejection**: `-1` forced open, `-2` half-open with every probe
//!   slot taken, `-3` every shared permit slot taken, `-(4 + ns)` open with `ns`
//!   nanoseconds until the open period ends (capped at 2⁵²).
//! * **Breaker state word**: the host's transition word
//!   (`seawall_host::breaker::Observed::word`, `state · 2³² + epoch`), states in
//!   [`STATES`] order.
//! * **Outcome**: 0 success, 1 failure, 2 ignored.
//! * **Bulkhead acquire**: `-1` admitted, a ticket `≥ 0` queued, or a rejection
//!   `-(2 + reason + 2·(queued + 2¹⁶·active))` with `reason` 0 shed, 1 full.
//!   Priorities 0 critical, 1 high, 2 normal, 3 low.
//! * **Holder id** (shared bulkhead tickets): `high · 2¹³ + slot`.
//! * **Poll**: 0 waiting, 1 granted, 2 cancelled, 3 unknown; **cancel**: 0
//!   cancelled, 1 passed on, 2 unknown; **release** (`head`: the caller's oldest
//!   ticket, negative for none): a poll result, or `-1` when no permit was held.
//! * **Retry decision**: a delay `≥ 0` (ms), or `-1` attempts used up, `-2`
//!   deadline, `-3` budget exhausted, `-4` throttled.
//! * **Absent numbers** (a rule turned off, no ticket, no retry-after): any
//!   negative number; JavaScript sends `-1`.
//! * **Errors**: every error this addon throws has its `code` set here ([`Code`]),
//!   and an invalid option also its `field` (the option's JavaScript name).

use napi::Status;
use napi::bindgen_prelude::{Env, JsObjectValue, JsValue};
use napi_derive::napi;
use seawall_core::{
    BreakerConfig, ConfigError, GiveUp, Outcome, Priority, RejectReason, Rejected,
    SemaphoreRejected, State,
};
use seawall_host::breaker::Observed;
use seawall_host::breaker::PERMIT_SLOT_SIZES;
use seawall_host::permits::PERMIT_SLOTS;
use seawall_host::semaphore::SEMAPHORE_HOLDER_SLOTS;

/// The `code` of an error this addon throws.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Code {
    /// An option is invalid; the error's `field` names it.
    InvalidConfig(&'static str),
    /// A shared region exists with another configuration, layout or ABI.
    SharedMismatch,
    /// A shared region could not be opened; the error's `reason` says why:
    /// `untrusted` (a symbolic link, another user's file, open to group or
    /// others, the wrong size: DESIGN §8), `io`, `timeout`, `notLockFree`.
    Shared(&'static str),
    /// A handle names nothing alive.
    Handle,
    /// A shared breaker permit was used twice (or was reclaimed).
    Permit,
    /// More live objects of one kind than a handle can name.
    Limit,
    /// An argument lib/ passed is not one the native function takes (a
    /// non-number to a hot-path function, an unknown action): a bug of lib/.
    InvalidArg,
    /// A panic was caught before it crossed into Node (a bug).
    Panic,
}

impl Code {
    /// Every code, for [`constants`]'s `errorCodes`.
    const ALL: [Self; 8] = [
        Self::InvalidConfig(""),
        Self::SharedMismatch,
        Self::Shared(""),
        Self::Handle,
        Self::Permit,
        Self::Limit,
        Self::InvalidArg,
        Self::Panic,
    ];

    /// The string JavaScript sees as `error.code`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::InvalidConfig(_) => "EINVALIDCONFIG",
            Self::SharedMismatch => "ESHAREDMISMATCH",
            Self::Shared(_) => "ESHARED",
            Self::Handle => "EHANDLE",
            Self::Permit => "EPERMIT",
            Self::Limit => "ELIMIT",
            Self::InvalidArg => "EINVALIDARG",
            Self::Panic => "EPANIC",
        }
    }
}

impl AsRef<str> for Code {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

/// An error of this addon: napi-rs throws it as an `Error` whose `code` is
/// its [`Code`].
pub type Error = napi::Error<Code>;
/// The result of every function of this addon.
pub type Result<T> = napi::Result<T, Code>;

/// An error with `code` and `message`.
#[must_use]
pub fn error(code: Code, message: impl Into<String>) -> Error {
    Error::new(code, message.into())
}

/// The error for an invalid option `field`: message `invalid <field>: <problem>`.
#[must_use]
pub fn invalid(field: &'static str, problem: &str) -> Error {
    error(
        Code::InvalidConfig(field),
        format!("invalid {field}: {problem}"),
    )
}

/// The error for a core configuration error, in the JavaScript API's option
/// names and units.
#[must_use]
pub fn config_error(e: ConfigError) -> Error {
    let (field, problem) = crate::convert::describe(e);
    invalid(field, &problem)
}

/// `e` as the JavaScript error a function that can refuse an option throws:
/// napi-rs sets only `code` and `message`, so an invalid option's error is
/// built here with its `field` as well. Functions whose errors name no option
/// return [`Result`] directly.
pub fn thrown(env: Env, e: Error) -> napi::Error {
    let build = || -> napi::Result<napi::Error> {
        let mut obj = env.create_error(napi::Error::new(Status::GenericFailure, &e.reason))?;
        obj.set_named_property("code", e.status.as_str())?;
        match e.status {
            Code::InvalidConfig(field) => obj.set_named_property("field", field)?,
            Code::Shared(reason) => obj.set_named_property("reason", reason)?,
            _ => {}
        }
        Ok(napi::Error::from(obj.to_unknown()))
    };
    // Building the object fails only while the environment is torn down; the
    // plain error keeps its message then.
    build().unwrap_or_else(|f| f)
}

/// Map [`thrown`] over a result.
pub fn throwing<T>(env: Env, r: Result<T>) -> napi::Result<T> {
    r.map_err(|e| thrown(env, e))
}

// ---- breaker ----

/// Permit codes are `epoch · PERMIT_CODE_SPAN + slot`: the largest table's slots.
pub const PERMIT_CODE_SPAN: u64 = PERMIT_SLOT_SIZES[PERMIT_SLOT_SIZES.len() - 1];
/// Largest retry-after (ns) a rejection code carries exactly.
const MAX_CODE_NS: u64 = 1 << 52;
/// The breaker state word is `state · STATE_SPAN + epoch` (the host's encoding).
const STATE_SPAN: u64 = seawall_host::breaker::STATE_FACTOR;
const REJECTED_FORCED_OPEN: f64 = -1.0;
const REJECTED_HALF_OPEN: f64 = -2.0;
/// Every shared permit slot is taken.
pub const REJECTED_PERMITS_EXHAUSTED: f64 = -3.0;
const REJECTED_OPEN_BASE: u64 = 4;
/// Breaker states in the order of the state word's `state`.
pub const STATES: [State; 5] = [
    State::Closed,
    State::Open,
    State::HalfOpen,
    State::ForcedOpen,
    State::Disabled,
];

/// The permit code of a call admitted in `epoch` with permit-table `slot`.
#[must_use]
pub fn permit_code(epoch: u32, slot: usize) -> f64 {
    (u64::from(epoch) * PERMIT_CODE_SPAN + slot as u64) as f64
}

/// `(epoch, slot)` of a permit code; garbage gives some pair, never a panic.
#[must_use]
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "codes are integers below 2^50 made by `permit_code`; garbage is clamped"
)]
pub fn split_permit_code(code: f64) -> (u32, usize) {
    let c = if code.is_finite() && code > 0.0 {
        code as u64
    } else {
        0
    };
    (
        ((c / PERMIT_CODE_SPAN) & u64::from(u32::MAX)) as u32,
        (c % PERMIT_CODE_SPAN) as usize,
    )
}

/// The negative number a breaker rejection crosses as.
#[must_use]
pub fn breaker_rejection(r: Rejected) -> f64 {
    match r.state {
        State::ForcedOpen => REJECTED_FORCED_OPEN,
        State::HalfOpen => REJECTED_HALF_OPEN,
        _ => -((REJECTED_OPEN_BASE + r.retry_after_ns.unwrap_or(0).min(MAX_CODE_NS)) as f64),
    }
}

const OUTCOME_SUCCESS: u32 = 0;
const OUTCOME_FAILURE: u32 = 1;
const OUTCOME_IGNORED: u32 = 2;

/// The outcome JavaScript sends (anything but success or failure is ignored).
#[must_use]
pub fn outcome_of(code: u32) -> Outcome {
    match code {
        OUTCOME_SUCCESS => Outcome::Success,
        OUTCOME_FAILURE => Outcome::Failure,
        _ => Outcome::Ignored,
    }
}

/// The host's transition word `state · 2³² + epoch` as a JavaScript number.
#[must_use]
pub fn state_word(observed: Observed) -> f64 {
    #[allow(
        clippy::cast_precision_loss,
        reason = "a transition word is below 2^35, exact in an f64"
    )]
    let word = observed.word() as f64;
    word
}

/// A state's JavaScript name.
#[must_use]
pub fn state_name(s: State) -> &'static str {
    match s {
        State::Closed => "closed",
        State::Open => "open",
        State::HalfOpen => "halfOpen",
        State::ForcedOpen => "forcedOpen",
        State::Disabled => "disabled",
    }
}

// ---- bulkhead ----

/// `acquire` admitted the call: it holds a permit.
pub const ADMITTED: f64 = -1.0;
/// Holder ids cross as `high · HOLDER_SLOT_SPAN + slot`: the slot index (low
/// half of the id) is below `SEMAPHORE_HOLDER_SLOTS`, the high half has 30 bits.
const HOLDER_SLOT_SPAN: u64 = 1 << 13;
const _: () = assert!(SEMAPHORE_HOLDER_SLOTS as u64 <= HOLDER_SLOT_SPAN);
/// Occupancy in a bulkhead rejection: `queued + OCCUPANCY_SPAN · active`.
const OCCUPANCY_SPAN: f64 = 65_536.0;
const REJECTED_SEMAPHORE_BASE: f64 = 2.0;
/// Poll results.
pub const POLL_WAITING: u32 = 0;
/// The waiter now holds a permit.
pub const POLL_GRANTED: u32 = 1;
/// The ticket was cancelled.
pub const POLL_CANCELLED: u32 = 2;
/// The ticket names nothing this handle waits for.
pub const POLL_UNKNOWN: u32 = 3;
/// Cancel results.
pub const CANCEL_CANCELLED: u32 = 0;
/// A permit reached the waiter in the same instant and went on.
pub const CANCEL_PASSED_ON: u32 = 1;
/// The ticket names nothing this handle waits for.
pub const CANCEL_UNKNOWN: u32 = 2;
/// `release` found no permit held.
pub const RELEASE_NOT_HELD: i32 = -1;
/// A number argument that is absent: a `release` with no ticket waiting, a rule
/// turned off, no retry-after or deadline (any negative number means none).
const ABSENT: f64 = -1.0;
/// Priorities in the order of their codes.
const PRIORITIES: [Priority; 4] = [
    Priority::Critical,
    Priority::High,
    Priority::Normal,
    Priority::Low,
];

/// The ticket code of a shared holder id.
#[must_use]
pub fn holder_code(id: u64) -> f64 {
    ((id >> 32) * HOLDER_SLOT_SPAN + (id & 0xFFFF_FFFF)) as f64
}

/// The holder id of a ticket code; garbage names no ticket held here.
#[must_use]
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "codes are integers below 2^43 made by `holder_code`; garbage names no ticket held here"
)]
pub fn holder_id(code: f64) -> u64 {
    let c = if code.is_finite() && code > 0.0 {
        code as u64
    } else {
        0
    };
    ((c / HOLDER_SLOT_SPAN) << 32) | (c % HOLDER_SLOT_SPAN)
}

/// The negative number a bulkhead rejection crosses as.
#[must_use]
pub fn semaphore_rejection(r: SemaphoreRejected) -> f64 {
    let reason = match r.reason {
        RejectReason::Shed => 0.0,
        RejectReason::Full => 1.0,
    };
    -(REJECTED_SEMAPHORE_BASE
        + reason
        + 2.0 * (f64::from(r.queued) + OCCUPANCY_SPAN * f64::from(r.active)))
}

/// The priority of code `p` (an unknown code is normal).
#[must_use]
pub fn priority_of(p: u32) -> Priority {
    usize::try_from(p)
        .ok()
        .and_then(|i| PRIORITIES.get(i).copied())
        .unwrap_or(Priority::Normal)
}

// ---- retry ----

/// The negative number a retry decision to give up crosses as.
#[must_use]
pub fn give_up_code(g: GiveUp) -> f64 {
    match g {
        GiveUp::MaxAttempts => -1.0,
        GiveUp::Deadline => -2.0,
        GiveUp::BudgetExhausted => -3.0,
        GiveUp::Throttled => -4.0,
    }
}

fn give_up_name(g: GiveUp) -> &'static str {
    match g {
        GiveUp::MaxAttempts => "maxAttempts",
        GiveUp::Deadline => "deadline",
        GiveUp::BudgetExhausted => "budgetExhausted",
        GiveUp::Throttled => "throttled",
    }
}

// ---- handed to JavaScript ----

/// A name and the number it crosses as.
#[napi(object)]
pub struct NativeNamedCode {
    /// The JavaScript name.
    pub name: String,
    /// The number.
    pub code: f64,
}

/// The numbers of the encodings above, for `lib/` to decode with.
#[napi(object)]
pub struct NativeConstants {
    /// Breaker permit codes are `epoch · permitCodeSpan + slot`.
    pub permit_code_span: f64,
    /// Shared permit slots of a breaker unless it says (`permitSlots`).
    pub permit_slots: f64,
    /// The permit table sizes `permitSlots` may be.
    pub permit_slot_sizes: Vec<f64>,
    /// Breaker state words are `state · stateSpan + epoch`.
    pub state_span: f64,
    /// Breaker state names, indexed by the state word's `state`.
    pub states: Vec<String>,
    /// Outcome codes: success.
    pub outcome_success: u32,
    /// Outcome codes: failure.
    pub outcome_failure: u32,
    /// Outcome codes: ignored.
    pub outcome_ignored: u32,
    /// Breaker rejection: forced open.
    pub rejected_forced_open: f64,
    /// Breaker rejection: half-open, every probe slot taken.
    pub rejected_half_open: f64,
    /// Breaker rejection: every shared permit slot taken.
    pub rejected_permits_exhausted: f64,
    /// Breaker rejection: open, `-(rejectedOpenBase + ns)`.
    pub rejected_open_base: f64,
    /// Largest retry-after (ns) an open rejection carries exactly: a code at it
    /// saturated, and the breaker is asked for the real one.
    pub rejected_open_max_ns: f64,
    /// The core's default cap on the open duration (ms), taken when
    /// `maxOpenDurationMs` is not given.
    pub default_max_open_duration_ms: f64,
    /// Bulkhead acquire: admitted.
    pub admitted: f64,
    /// Bulkhead rejection: `-(base + reason + 2·(queued + span·active))`.
    pub rejected_semaphore_base: f64,
    /// Bulkhead rejection: occupancy is `queued + occupancySpan · active`.
    pub occupancy_span: f64,
    /// Bulkhead rejection reasons, indexed by `reason`.
    pub reject_reasons: Vec<String>,
    /// Priority names, indexed by priority code.
    pub priorities: Vec<String>,
    /// Poll results, indexed by code.
    pub poll_results: Vec<String>,
    /// Cancel results, indexed by code.
    pub cancel_results: Vec<String>,
    /// `release`: no permit was held.
    pub release_not_held: i32,
    /// A number argument that is absent (`release` with no ticket waiting, a
    /// rule turned off, no retry-after): any negative number; this one.
    pub absent: f64,
    /// Retry decisions to give up, by code.
    pub give_up: Vec<NativeNamedCode>,
    /// Every `code` an error of this addon carries.
    pub error_codes: Vec<String>,
    /// Default entries of a stale-if-error cache (the same in Python).
    pub stale_cache_max_entries: u32,
}

fn priority_name(p: Priority) -> &'static str {
    match p {
        Priority::Critical => "critical",
        Priority::High => "high",
        Priority::Normal => "normal",
        Priority::Low => "low",
    }
}

fn owned(names: impl IntoIterator<Item = &'static str>) -> Vec<String> {
    names.into_iter().map(str::to_owned).collect()
}

/// The numbers every encoding of this module uses, for `lib/native.js`.
#[napi]
pub fn constants() -> NativeConstants {
    let by_code = |codes: &[(u32, &'static str)]| -> Vec<String> {
        let mut v = codes.to_vec();
        v.sort_by_key(|(c, _)| *c);
        owned(v.into_iter().map(|(_, n)| n))
    };
    NativeConstants {
        permit_code_span: PERMIT_CODE_SPAN as f64,
        permit_slots: PERMIT_SLOTS as f64,
        permit_slot_sizes: PERMIT_SLOT_SIZES.iter().map(|&n| n as f64).collect(),
        #[allow(clippy::cast_precision_loss, reason = "2^32, exact")]
        state_span: STATE_SPAN as f64,
        states: owned(STATES.map(state_name)),
        outcome_success: OUTCOME_SUCCESS,
        outcome_failure: OUTCOME_FAILURE,
        outcome_ignored: OUTCOME_IGNORED,
        rejected_forced_open: REJECTED_FORCED_OPEN,
        rejected_half_open: REJECTED_HALF_OPEN,
        rejected_permits_exhausted: REJECTED_PERMITS_EXHAUSTED,
        rejected_open_base: REJECTED_OPEN_BASE as f64,
        #[allow(clippy::cast_precision_loss, reason = "2^52, exact")]
        rejected_open_max_ns: MAX_CODE_NS as f64,
        #[allow(clippy::cast_precision_loss, reason = "300 s in ns, exact")]
        default_max_open_duration_ms: BreakerConfig::DEFAULT
            .max_open_duration_ns
            .map_or(f64::INFINITY, |ns| ns as f64 / 1e6),
        admitted: ADMITTED,
        rejected_semaphore_base: REJECTED_SEMAPHORE_BASE,
        occupancy_span: OCCUPANCY_SPAN,
        reject_reasons: owned(["shed", "full"]),
        priorities: owned(PRIORITIES.map(priority_name)),
        poll_results: by_code(&[
            (POLL_WAITING, "waiting"),
            (POLL_GRANTED, "granted"),
            (POLL_CANCELLED, "cancelled"),
            (POLL_UNKNOWN, "unknown"),
        ]),
        cancel_results: by_code(&[
            (CANCEL_CANCELLED, "cancelled"),
            (CANCEL_PASSED_ON, "passedOn"),
            (CANCEL_UNKNOWN, "unknown"),
        ]),
        release_not_held: RELEASE_NOT_HELD,
        absent: ABSENT,
        give_up: [
            GiveUp::MaxAttempts,
            GiveUp::Deadline,
            GiveUp::BudgetExhausted,
            GiveUp::Throttled,
        ]
        .into_iter()
        .map(|g| NativeNamedCode {
            name: give_up_name(g).to_owned(),
            code: give_up_code(g),
        })
        .collect(),
        error_codes: owned(Code::ALL.map(Code::as_str)),
        stale_cache_max_entries: seawall_host::options::STALE_CACHE_MAX_ENTRIES,
    }
}

/// The fields of each core configuration the package exposes
/// (`seawall_host::options`), which `lib/options.js` must cover.
#[napi(ts_return_type = "Record<string, string[]>")]
pub fn config_fields() -> std::collections::HashMap<String, Vec<String>> {
    seawall_host::options::all()
        .into_iter()
        .map(|(kind, fields)| (kind.to_owned(), owned(fields)))
        .collect()
}
