//! The conformance scenarios driven through the C ABI: `libseawall.so` is loaded
//! with `dlopen` and every step goes through its exported `seawall_*` functions
//! (the same symbols a C program links), by the interpreters of
//! `seawall-conformance`.
//!
//! The library is `$SEAWALL_LIB`, else the `libseawall.so` cargo built next to this
//! test. Scenario directories: `$SEAWALL_CASES` (colon-separated), else
//! `conformance/cases`, `../shared/cases`, `conformance/cases-rate-limiter` and
//! `../shared/cases-rate-limiter`. Prints `PASS` / `FAIL` / `SKIP` per
//! scenario (never SKIP: every primitive is in the C ABI) and exits 1 on any
//! failure.
//!
//! Besides each scenario's own expectations: every recorded breaker permit is
//! recorded a second time and must come back
//! `SEAWALL_STATUS_PERMIT_ALREADY_USED`; every released semaphore permit is
//! released a second time (the same status) and every cancelled ticket cancelled
//! again (`SEAWALL_STATUS_UNKNOWN_TICKET`), changing nothing the following steps
//! check; and every semaphore occupancy check also checks the permits and
//! tickets outstanding against what the driver holds.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use std::ffi::c_char;

use libloading::Library;
use seawall::capi::backoff::seawall_backoff_config;
use seawall::capi::breaker::{
    seawall_breaker, seawall_breaker_config, seawall_outcome, seawall_permit, seawall_rejection,
    seawall_state,
};
use seawall::capi::deadline::seawall_deadline;
use seawall::capi::health::{seawall_health, seawall_health_config, seawall_health_snapshot};
use seawall::capi::rate_limiter::{seawall_rate_limiter, seawall_rate_limiter_config};
use seawall::capi::retry_budget::{seawall_retry_budget, seawall_retry_budget_config};
use seawall::capi::retry_throttle::{seawall_retry_throttle, seawall_retry_throttle_config};
use seawall::capi::semaphore::{
    seawall_semaphore, seawall_semaphore_config, seawall_semaphore_permit,
    seawall_semaphore_rejection, seawall_semaphore_snapshot, seawall_semaphore_ticket,
};
use seawall_conformance::backoff::{self, BackoffDriver};
use seawall_conformance::breaker::{self, BreakerDriver};
use seawall_conformance::deadline::{self, DeadlineDriver};
use seawall_conformance::health::{self, HealthDriver};
use seawall_conformance::rate_limiter::{self, RateLimiterDriver, Taken};
use seawall_conformance::retry_budget::{self, RetryBudgetDriver};
use seawall_conformance::retry_throttle::{self, RetryThrottleDriver};
use seawall_conformance::scenario::{Primitive, Scenario, scenario_dirs, scenario_files, whole};
use seawall_conformance::semaphore::{self, Acquired, SemaphoreDriver};
use seawall_core::{
    BackoffConfig, BreakerConfig, HealthConfig, Jitter, Outcome, Priority, RateLimiterConfig,
    RetryBudgetConfig, RetryThrottleConfig, SemaphoreConfig, WindowConfig,
};

// Values from include/seawall.h, written out here rather than taken from the
// crate, so a renumbering in the library shows up as a failure.
const OK: i32 = 0;
const INVALID_CONFIG: i32 = 2;
const REJECTED: i32 = 3;
const PERMIT_ALREADY_USED: i32 = 4;
const QUEUED: i32 = 15;
const WAITING: i32 = 16;
const CANCELLED: i32 = 17;
const PASSED_ON: i32 = 18;
const UNKNOWN_TICKET: i32 = 19;
const NONE: u64 = u64::MAX;

type Status = i32;

/// The exported functions, resolved once from the loaded library.
struct Api {
    config_default: unsafe extern "C" fn() -> seawall_breaker_config,
    new: unsafe extern "C" fn(*const seawall_breaker_config, *mut *mut seawall_breaker) -> Status,
    free: unsafe extern "C" fn(*mut seawall_breaker),
    try_acquire: unsafe extern "C" fn(
        *const seawall_breaker,
        u64,
        *mut seawall_permit,
        *mut seawall_rejection,
    ) -> Status,
    record: unsafe extern "C" fn(
        *const seawall_breaker,
        seawall_permit,
        seawall_outcome,
        u64,
        u64,
    ) -> Status,
    state: unsafe extern "C" fn(*const seawall_breaker, *mut seawall_state) -> Status,
    state_name: unsafe extern "C" fn(seawall_state) -> *const std::ffi::c_char,
    retry_after: unsafe extern "C" fn(*const seawall_breaker, u64, *mut u64) -> Status,
    force_open: unsafe extern "C" fn(*const seawall_breaker) -> Status,
    disable: unsafe extern "C" fn(*const seawall_breaker) -> Status,
    reset: unsafe extern "C" fn(*const seawall_breaker) -> Status,
    last_error: unsafe extern "C" fn() -> *const std::ffi::c_char,
    deadline_start: unsafe extern "C" fn(u64, u64, *mut seawall_deadline) -> Status,
    deadline_remaining: unsafe extern "C" fn(*const seawall_deadline, u64, *mut u64) -> Status,
    deadline_allocate: unsafe extern "C" fn(*const seawall_deadline, u64, u64, *mut u64) -> Status,
    deadline_expired: unsafe extern "C" fn(*const seawall_deadline, u64, *mut bool) -> Status,
    backoff_config_default: unsafe extern "C" fn() -> seawall_backoff_config,
    backoff_delay:
        unsafe extern "C" fn(*const seawall_backoff_config, u32, u64, u64, *mut u64) -> Status,
    budget_new: unsafe extern "C" fn(
        *const seawall_retry_budget_config,
        *mut *mut seawall_retry_budget,
    ) -> Status,
    budget_free: unsafe extern "C" fn(*mut seawall_retry_budget),
    budget_deposit: unsafe extern "C" fn(*const seawall_retry_budget, u64) -> Status,
    budget_try_withdraw:
        unsafe extern "C" fn(*const seawall_retry_budget, u64, *mut bool) -> Status,
    throttle_new: unsafe extern "C" fn(
        *const seawall_retry_throttle_config,
        *mut *mut seawall_retry_throttle,
    ) -> Status,
    throttle_free: unsafe extern "C" fn(*mut seawall_retry_throttle),
    throttle_success: unsafe extern "C" fn(*const seawall_retry_throttle) -> Status,
    throttle_failure: unsafe extern "C" fn(*const seawall_retry_throttle, *mut bool) -> Status,
    sem_new: unsafe extern "C" fn(
        *const seawall_semaphore_config,
        *mut *mut seawall_semaphore,
    ) -> Status,
    sem_free: unsafe extern "C" fn(*mut seawall_semaphore),
    sem_try_acquire: unsafe extern "C" fn(
        *const seawall_semaphore,
        u32,
        *mut seawall_semaphore_permit,
        *mut seawall_semaphore_rejection,
    ) -> Status,
    sem_acquire_or_enqueue: unsafe extern "C" fn(
        *const seawall_semaphore,
        u32,
        *mut seawall_semaphore_permit,
        *mut seawall_semaphore_ticket,
        *mut seawall_semaphore_rejection,
    ) -> Status,
    sem_poll: unsafe extern "C" fn(
        *const seawall_semaphore,
        seawall_semaphore_ticket,
        *mut seawall_semaphore_permit,
    ) -> Status,
    sem_cancel: unsafe extern "C" fn(*const seawall_semaphore, seawall_semaphore_ticket) -> Status,
    sem_release: unsafe extern "C" fn(*const seawall_semaphore, seawall_semaphore_permit) -> Status,
    sem_snapshot:
        unsafe extern "C" fn(*const seawall_semaphore, *mut seawall_semaphore_snapshot) -> Status,
    health_new:
        unsafe extern "C" fn(*const seawall_health_config, *mut *mut seawall_health) -> Status,
    health_free: unsafe extern "C" fn(*mut seawall_health),
    limiter_new: unsafe extern "C" fn(
        *const seawall_rate_limiter_config,
        *mut *mut seawall_rate_limiter,
    ) -> Status,
    limiter_free: unsafe extern "C" fn(*mut seawall_rate_limiter),
    limiter_try_acquire:
        unsafe extern "C" fn(*const seawall_rate_limiter, u32, u64, *mut u64) -> Status,
    health_record: unsafe extern "C" fn(*const seawall_health, u32, u64, u64) -> Status,
    health_snapshot:
        unsafe extern "C" fn(*const seawall_health, u64, *mut seawall_health_snapshot) -> Status,
    health_quantile: unsafe extern "C" fn(*const seawall_health, u64, u64, *mut u64) -> Status,
    health_status_name: unsafe extern "C" fn(u32) -> *const c_char,
    // Last: the functions above are valid only while the library is loaded.
    _lib: Library,
}

macro_rules! sym {
    ($lib:expr, $name:literal) => {{
        // SAFETY: the symbol is the exported function of that name, whose C
        // signature (include/seawall.h) the field's type spells out.
        let s = unsafe { $lib.get(concat!($name, "\0").as_bytes()) }
            .map_err(|e| format!("{}: {e}", $name))?;
        *s
    }};
}

impl Api {
    fn load(path: &Path) -> Result<Self, String> {
        // SAFETY: loading libseawall runs no initialisers beyond Rust's own.
        let lib = unsafe { Library::new(path) }.map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Self {
            config_default: sym!(lib, "seawall_breaker_config_default"),
            new: sym!(lib, "seawall_breaker_new"),
            free: sym!(lib, "seawall_breaker_free"),
            try_acquire: sym!(lib, "seawall_breaker_try_acquire"),
            record: sym!(lib, "seawall_breaker_record"),
            state: sym!(lib, "seawall_breaker_state"),
            state_name: sym!(lib, "seawall_state_name"),
            retry_after: sym!(lib, "seawall_breaker_retry_after"),
            force_open: sym!(lib, "seawall_breaker_force_open"),
            disable: sym!(lib, "seawall_breaker_disable"),
            reset: sym!(lib, "seawall_breaker_reset"),
            last_error: sym!(lib, "seawall_last_error_message"),
            deadline_start: sym!(lib, "seawall_deadline_start"),
            deadline_remaining: sym!(lib, "seawall_deadline_remaining"),
            deadline_allocate: sym!(lib, "seawall_deadline_allocate"),
            deadline_expired: sym!(lib, "seawall_deadline_expired"),
            backoff_config_default: sym!(lib, "seawall_backoff_config_default"),
            backoff_delay: sym!(lib, "seawall_backoff_delay"),
            budget_new: sym!(lib, "seawall_retry_budget_new"),
            budget_free: sym!(lib, "seawall_retry_budget_free"),
            budget_deposit: sym!(lib, "seawall_retry_budget_deposit"),
            budget_try_withdraw: sym!(lib, "seawall_retry_budget_try_withdraw"),
            throttle_new: sym!(lib, "seawall_retry_throttle_new"),
            throttle_free: sym!(lib, "seawall_retry_throttle_free"),
            throttle_success: sym!(lib, "seawall_retry_throttle_record_success"),
            throttle_failure: sym!(lib, "seawall_retry_throttle_record_failure"),
            sem_new: sym!(lib, "seawall_semaphore_new"),
            sem_free: sym!(lib, "seawall_semaphore_free"),
            sem_try_acquire: sym!(lib, "seawall_semaphore_try_acquire"),
            sem_acquire_or_enqueue: sym!(lib, "seawall_semaphore_acquire_or_enqueue"),
            sem_poll: sym!(lib, "seawall_semaphore_poll"),
            sem_cancel: sym!(lib, "seawall_semaphore_cancel"),
            sem_release: sym!(lib, "seawall_semaphore_release"),
            sem_snapshot: sym!(lib, "seawall_semaphore_get_snapshot"),
            health_new: sym!(lib, "seawall_health_new"),
            health_free: sym!(lib, "seawall_health_free"),
            limiter_new: sym!(lib, "seawall_rate_limiter_new"),
            limiter_free: sym!(lib, "seawall_rate_limiter_free"),
            limiter_try_acquire: sym!(lib, "seawall_rate_limiter_try_acquire"),
            health_record: sym!(lib, "seawall_health_record"),
            health_snapshot: sym!(lib, "seawall_health_get_snapshot"),
            health_quantile: sym!(lib, "seawall_health_quantile"),
            health_status_name: sym!(lib, "seawall_health_status_name"),
            _lib: lib,
        })
    }

    /// Panic (caught per scenario, reported as FAIL) unless `status` is `want`.
    fn expect(&self, what: &str, status: Status, want: Status) {
        assert!(
            status == want,
            "{what} returned status {status}, expected {want}: {:?}",
            self.message()
        );
    }

    /// The last error message of this thread.
    fn message(&self) -> String {
        // SAFETY: the library returns a NUL-terminated string it keeps alive.
        unsafe { std::ffi::CStr::from_ptr((self.last_error)()) }
            .to_string_lossy()
            .into_owned()
    }

    /// A constructor's result: the handle, or the status and message.
    fn made<H>(&self, what: &str, status: Status, handle: *mut H) -> Result<*mut H, String> {
        if status == OK && !handle.is_null() {
            Ok(handle)
        } else {
            Err(format!("{what}: status {status}: {:?}", self.message()))
        }
    }
}

/// The C configuration of a scenario's core configuration, field by field.
fn c_config(api: &Api, c: &BreakerConfig) -> seawall_breaker_config {
    // SAFETY: no arguments; returns a plain struct.
    let mut out = unsafe { (api.config_default)() };
    match c.window {
        WindowConfig::Count { size } => {
            out.window_kind = 0;
            out.window_size = size;
        }
        WindowConfig::Time {
            buckets,
            bucket_width_ns,
        } => {
            out.window_kind = 1;
            out.window_size = buckets;
            out.window_bucket_width_ns = bucket_width_ns;
        }
    }
    let opt = |v: Option<u64>| v.unwrap_or(NONE);
    out.minimum_calls = u64::from(c.minimum_calls);
    out.failure_rate_threshold_ppm = opt(c.failure_rate_threshold.map(seawall_core::Ratio::ppm));
    out.slow_call_rate_threshold_ppm = c.slow_call_rate_threshold.ppm();
    out.slow_call_duration_ns = opt(c.slow_call_duration_ns);
    out.consecutive_failures = opt(c.consecutive_failures.map(u64::from));
    out.open_duration_ns = c.open_duration_ns;
    out.open_backoff_multiplier_ppm = c.open_backoff_multiplier.ppm();
    out.max_open_duration_ns = opt(c.max_open_duration_ns);
    out.open_jitter_factor_ppm = c.open_jitter_factor.ppm();
    out.half_open_max_calls = u64::from(c.half_open_max_calls);
    out.half_open_success_threshold = u64::from(c.half_open_success_threshold);
    out.half_open_max_wait_ns = opt(c.half_open_max_wait_ns);
    out.jitter_seed = c.jitter_seed;
    out
}

/// A breaker handle of the loaded library, driven by the scenario interpreter.
struct CBreaker<'a> {
    api: &'a Api,
    handle: *mut seawall_breaker,
}

impl<'a> CBreaker<'a> {
    fn new(api: &'a Api, cfg: &BreakerConfig) -> Result<Self, String> {
        let c = c_config(api, cfg);
        let mut handle = core::ptr::null_mut();
        // SAFETY: valid config and out pointers.
        let s = unsafe { (api.new)(&raw const c, &raw mut handle) };
        if s != OK {
            // SAFETY: NUL-terminated string kept by the library.
            let msg = unsafe { std::ffi::CStr::from_ptr((api.last_error)()) };
            return Err(format!("seawall_breaker_new: status {s}: {msg:?}"));
        }
        Ok(Self { api, handle })
    }
}

impl Drop for CBreaker<'_> {
    fn drop(&mut self) {
        // SAFETY: our live handle, freed once.
        unsafe { (self.api.free)(self.handle) };
    }
}

impl BreakerDriver for CBreaker<'_> {
    type Permit = seawall_permit;

    fn acquire(&mut self, now: u64) -> Option<seawall_permit> {
        let mut p = seawall_permit {
            id: 0,
            epoch: 0,
            reserved: 0,
        };
        let mut r = seawall_rejection {
            state: 0,
            reserved: 0,
            retry_after_ns: 0,
        };
        // SAFETY: live handle, valid out pointers.
        let s = unsafe { (self.api.try_acquire)(self.handle, now, &raw mut p, &raw mut r) };
        match s {
            OK => Some(p),
            REJECTED => None,
            other => {
                self.api.expect("seawall_breaker_try_acquire", other, OK);
                None
            }
        }
    }

    fn record(&mut self, permit: seawall_permit, outcome: Outcome, duration: u64, now: u64) {
        let o = match outcome {
            Outcome::Success => 0,
            Outcome::Failure => 1,
            Outcome::Ignored => 2,
        };
        // SAFETY: live handle; the permit is plain data.
        let s = unsafe { (self.api.record)(self.handle, permit, o, duration, now) };
        self.api.expect("seawall_breaker_record", s, OK);
        // SAFETY: as above.
        let again = unsafe { (self.api.record)(self.handle, permit, o, duration, now) };
        self.api.expect(
            "seawall_breaker_record (second use)",
            again,
            PERMIT_ALREADY_USED,
        );
    }

    fn state(&self) -> String {
        let mut st: seawall_state = 99;
        // SAFETY: live handle, valid out pointer.
        let s = unsafe { (self.api.state)(self.handle, &raw mut st) };
        self.api.expect("seawall_breaker_state", s, OK);
        // SAFETY: returns a static NUL-terminated string.
        let name = unsafe { std::ffi::CStr::from_ptr((self.api.state_name)(st)) };
        name.to_string_lossy().into_owned()
    }

    fn retry_after(&self, now: u64) -> Option<u64> {
        let mut ns = 0;
        // SAFETY: live handle, valid out pointer.
        let s = unsafe { (self.api.retry_after)(self.handle, now, &raw mut ns) };
        self.api.expect("seawall_breaker_retry_after", s, OK);
        (ns != NONE).then_some(ns)
    }

    fn force_open(&mut self) {
        // SAFETY: live handle.
        let s = unsafe { (self.api.force_open)(self.handle) };
        self.api.expect("seawall_breaker_force_open", s, OK);
    }

    fn disable(&mut self) {
        // SAFETY: live handle.
        let s = unsafe { (self.api.disable)(self.handle) };
        self.api.expect("seawall_breaker_disable", s, OK);
    }

    fn reset(&mut self) {
        // SAFETY: live handle.
        let s = unsafe { (self.api.reset)(self.handle) };
        self.api.expect("seawall_breaker_reset", s, OK);
    }
}

/// A deadline of the loaded library.
struct CDeadline<'a> {
    api: &'a Api,
    d: seawall_deadline,
}

impl<'a> CDeadline<'a> {
    fn start(api: &'a Api, total: u64, now: u64) -> Self {
        let mut d = seawall_deadline {
            start_ns: 0,
            end_ns: 0,
        };
        // SAFETY: valid out pointer.
        let s = unsafe { (api.deadline_start)(total, now, &raw mut d) };
        api.expect("seawall_deadline_start", s, OK);
        Self { api, d }
    }
}

impl DeadlineDriver for CDeadline<'_> {
    fn remaining(&self, now: u64) -> u64 {
        let mut v = 0;
        // SAFETY: valid pointers.
        let s = unsafe { (self.api.deadline_remaining)(&raw const self.d, now, &raw mut v) };
        self.api.expect("seawall_deadline_remaining", s, OK);
        v
    }

    fn allocate(&self, max: u64, now: u64) -> u64 {
        let mut v = 0;
        // SAFETY: valid pointers.
        let s = unsafe { (self.api.deadline_allocate)(&raw const self.d, max, now, &raw mut v) };
        self.api.expect("seawall_deadline_allocate", s, OK);
        v
    }

    fn expired(&self, now: u64) -> bool {
        let mut v = false;
        // SAFETY: valid pointers.
        let s = unsafe { (self.api.deadline_expired)(&raw const self.d, now, &raw mut v) };
        self.api.expect("seawall_deadline_expired", s, OK);
        v
    }
}

/// Jitter codes of include/seawall.h.
fn jitter_code(j: Jitter) -> (u32, Option<u64>) {
    match j {
        Jitter::None => (0, None),
        Jitter::Full => (1, None),
        Jitter::Equal => (2, None),
        Jitter::Decorrelated => (3, None),
        Jitter::Proportional { factor } => (4, Some(factor.ppm())),
    }
}

/// A backoff configuration of the loaded library (plain data: no handle).
struct CBackoff<'a> {
    api: &'a Api,
    config: seawall_backoff_config,
    decorrelated: bool,
}

impl<'a> CBackoff<'a> {
    fn new(api: &'a Api, c: &BackoffConfig) -> Self {
        // SAFETY: no arguments; returns a plain struct.
        let mut config = unsafe { (api.backoff_config_default)() };
        let (jitter, factor) = jitter_code(c.jitter);
        config.base_ns = c.base_ns;
        config.multiplier_ppm = c.multiplier.ppm();
        config.max_ns = c.max_ns;
        config.jitter = jitter;
        if let Some(f) = factor {
            config.jitter_factor_ppm = f;
        }
        Self {
            api,
            config,
            decorrelated: c.jitter == Jitter::Decorrelated,
        }
    }
}

impl BackoffDriver for CBackoff<'_> {
    fn delay(&mut self, attempt: u32, previous_ns: u64, random: u64) -> u64 {
        let mut d = 0;
        // SAFETY: valid pointers.
        let s = unsafe {
            (self.api.backoff_delay)(
                &raw const self.config,
                attempt,
                previous_ns,
                random,
                &raw mut d,
            )
        };
        self.api.expect("seawall_backoff_delay", s, OK);
        d
    }

    fn sequential(&self) -> bool {
        self.decorrelated
    }
}

/// A retry budget handle of the loaded library.
struct CBudget<'a> {
    api: &'a Api,
    handle: *mut seawall_retry_budget,
}

impl<'a> CBudget<'a> {
    fn new(api: &'a Api, c: &RetryBudgetConfig) -> Result<Self, String> {
        let cfg = seawall_retry_budget_config {
            ttl_ns: c.ttl_ns,
            min_retries_per_sec: c.min_retries_per_sec,
            reserved: 0,
            percent_can_retry_ppm: c.percent_can_retry.ppm(),
        };
        let mut h = core::ptr::null_mut();
        // SAFETY: valid config and out pointers.
        let s = unsafe { (api.budget_new)(&raw const cfg, &raw mut h) };
        Ok(Self {
            api,
            handle: api.made("seawall_retry_budget_new", s, h)?,
        })
    }
}

impl Drop for CBudget<'_> {
    fn drop(&mut self) {
        // SAFETY: our live handle, freed once.
        unsafe { (self.api.budget_free)(self.handle) };
    }
}

impl RetryBudgetDriver for CBudget<'_> {
    fn deposit(&mut self, now: u64) {
        // SAFETY: live handle.
        let s = unsafe { (self.api.budget_deposit)(self.handle, now) };
        self.api.expect("seawall_retry_budget_deposit", s, OK);
    }

    fn try_withdraw(&mut self, now: u64) -> bool {
        let mut allowed = false;
        // SAFETY: live handle, valid out pointer.
        let s = unsafe { (self.api.budget_try_withdraw)(self.handle, now, &raw mut allowed) };
        self.api.expect("seawall_retry_budget_try_withdraw", s, OK);
        allowed
    }
}

/// A rate limiter handle of the loaded library.
struct CRateLimiter<'a> {
    api: &'a Api,
    handle: *mut seawall_rate_limiter,
}

impl<'a> CRateLimiter<'a> {
    fn new(api: &'a Api, c: &RateLimiterConfig) -> Result<Self, String> {
        let cfg = seawall_rate_limiter_config {
            rate: c.rate,
            period_ns: c.period_ns,
            burst: c.burst,
            reserved: 0,
        };
        let mut h = core::ptr::null_mut();
        // SAFETY: valid config and out pointers.
        let s = unsafe { (api.limiter_new)(&raw const cfg, &raw mut h) };
        Ok(Self {
            api,
            handle: api.made("seawall_rate_limiter_new", s, h)?,
        })
    }
}

impl Drop for CRateLimiter<'_> {
    fn drop(&mut self) {
        // SAFETY: our live handle, freed once.
        unsafe { (self.api.limiter_free)(self.handle) };
    }
}

impl RateLimiterDriver for CRateLimiter<'_> {
    fn acquire(&mut self, n: u32, now: u64) -> Taken {
        // A value the library must overwrite on OK and REJECTED.
        let mut retry = 0xDEAD_BEEF;
        // SAFETY: live handle, valid out pointer.
        let s = unsafe { (self.api.limiter_try_acquire)(self.handle, n, now, &raw mut retry) };
        match s {
            OK => {
                assert_eq!(retry, 0, "an admission writes a retry-after of 0");
                Taken::Admitted
            }
            REJECTED => Taken::Rejected {
                retry_after_ns: retry,
            },
            INVALID_CONFIG => Taken::ConfigError(self.api.message()),
            other => panic!(
                "seawall_rate_limiter_try_acquire returned status {other}: {:?}",
                self.api.message()
            ),
        }
    }
}

/// A retry throttle handle of the loaded library.
struct CThrottle<'a> {
    api: &'a Api,
    handle: *mut seawall_retry_throttle,
}

impl<'a> CThrottle<'a> {
    fn new(api: &'a Api, c: &RetryThrottleConfig) -> Result<Self, String> {
        let cfg = seawall_retry_throttle_config {
            max_milli_tokens: c.max_milli_tokens,
            token_ratio_milli: c.token_ratio_milli,
        };
        let mut h = core::ptr::null_mut();
        // SAFETY: valid config and out pointers.
        let s = unsafe { (api.throttle_new)(&raw const cfg, &raw mut h) };
        Ok(Self {
            api,
            handle: api.made("seawall_retry_throttle_new", s, h)?,
        })
    }
}

impl Drop for CThrottle<'_> {
    fn drop(&mut self) {
        // SAFETY: our live handle, freed once.
        unsafe { (self.api.throttle_free)(self.handle) };
    }
}

impl RetryThrottleDriver for CThrottle<'_> {
    fn failure(&mut self) -> bool {
        let mut retry = false;
        // SAFETY: live handle, valid out pointer.
        let s = unsafe { (self.api.throttle_failure)(self.handle, &raw mut retry) };
        self.api
            .expect("seawall_retry_throttle_record_failure", s, OK);
        retry
    }

    fn success(&mut self) {
        // SAFETY: live handle.
        let s = unsafe { (self.api.throttle_success)(self.handle) };
        self.api
            .expect("seawall_retry_throttle_record_success", s, OK);
    }
}

/// A semaphore handle of the loaded library, with the permits the scenario's
/// holders have and the count of tickets still out.
struct CSemaphore<'a> {
    api: &'a Api,
    handle: *mut seawall_semaphore,
    held: Vec<seawall_semaphore_permit>,
    tickets: u64,
}

impl<'a> CSemaphore<'a> {
    fn new(api: &'a Api, c: &SemaphoreConfig) -> Result<Self, String> {
        let cfg = seawall_semaphore_config {
            max_concurrent: c.max_concurrent,
            max_queue: c.max_queue,
            critical_share_ppm: c.shares.critical.ppm(),
            high_share_ppm: c.shares.high.ppm(),
            normal_share_ppm: c.shares.normal.ppm(),
            low_share_ppm: c.shares.low.ppm(),
        };
        let mut h = core::ptr::null_mut();
        // SAFETY: valid config and out pointers.
        let s = unsafe { (api.sem_new)(&raw const cfg, &raw mut h) };
        Ok(Self {
            api,
            handle: api.made("seawall_semaphore_new", s, h)?,
            held: Vec::new(),
            tickets: 0,
        })
    }
}

impl Drop for CSemaphore<'_> {
    fn drop(&mut self) {
        // SAFETY: our live handle, freed once.
        unsafe { (self.api.sem_free)(self.handle) };
    }
}

/// Priority codes of include/seawall.h.
fn priority_code(p: Priority) -> u32 {
    match p {
        Priority::Critical => 0,
        Priority::High => 1,
        Priority::Normal => 2,
        Priority::Low => 3,
    }
}

impl SemaphoreDriver for CSemaphore<'_> {
    type Ticket = seawall_semaphore_ticket;

    fn acquire(&mut self, priority: Priority, wait: bool) -> Acquired<seawall_semaphore_ticket> {
        let mut p = seawall_semaphore_permit { id: 0 };
        let mut t = seawall_semaphore_ticket { id: 0 };
        let mut r = seawall_semaphore_rejection {
            reason: 9,
            active: 0,
            queued: 0,
            reserved: 0,
        };
        let code = priority_code(priority);
        // SAFETY: live handle, valid out pointers.
        let s = unsafe {
            if wait {
                (self.api.sem_acquire_or_enqueue)(
                    self.handle,
                    code,
                    &raw mut p,
                    &raw mut t,
                    &raw mut r,
                )
            } else {
                (self.api.sem_try_acquire)(self.handle, code, &raw mut p, &raw mut r)
            }
        };
        match s {
            OK => {
                self.held.push(p);
                Acquired::Admitted
            }
            QUEUED if wait => {
                self.tickets += 1;
                Acquired::Queued(t)
            }
            REJECTED => {
                assert!(r.reason <= 1, "rejection reason {}", r.reason);
                Acquired::Rejected
            }
            other => {
                self.api.expect("seawall_semaphore acquire", other, OK);
                Acquired::Rejected
            }
        }
    }

    fn granted(&mut self, ticket: &seawall_semaphore_ticket) -> bool {
        let mut p = seawall_semaphore_permit { id: 0 };
        // SAFETY: live handle, valid out pointer; the ticket is plain data.
        let s = unsafe { (self.api.sem_poll)(self.handle, *ticket, &raw mut p) };
        match s {
            OK => {
                self.tickets -= 1;
                self.held.push(p);
                // A granted ticket is used up: polling it again is refused.
                // SAFETY: as above.
                let again = unsafe { (self.api.sem_poll)(self.handle, *ticket, &raw mut p) };
                self.api.expect(
                    "seawall_semaphore_poll (taken ticket)",
                    again,
                    UNKNOWN_TICKET,
                );
                true
            }
            WAITING => false,
            other => {
                self.api.expect("seawall_semaphore_poll", other, WAITING);
                false
            }
        }
    }

    fn cancel(&mut self, ticket: seawall_semaphore_ticket) {
        // SAFETY: live handle; the ticket is plain data.
        let s = unsafe { (self.api.sem_cancel)(self.handle, ticket) };
        if s != CANCELLED && s != PASSED_ON {
            self.api.expect("seawall_semaphore_cancel", s, CANCELLED);
        }
        self.tickets -= 1;
        // SAFETY: as above.
        let again = unsafe { (self.api.sem_cancel)(self.handle, ticket) };
        self.api.expect(
            "seawall_semaphore_cancel (second time)",
            again,
            UNKNOWN_TICKET,
        );
    }

    fn release(&mut self) {
        let p = self
            .held
            .pop()
            .expect("the interpreter releases only holders");
        // SAFETY: live handle; the permit is plain data.
        let s = unsafe { (self.api.sem_release)(self.handle, p) };
        self.api.expect("seawall_semaphore_release", s, OK);
        // SAFETY: as above.
        let again = unsafe { (self.api.sem_release)(self.handle, p) };
        self.api.expect(
            "seawall_semaphore_release (second use)",
            again,
            PERMIT_ALREADY_USED,
        );
    }

    fn occupancy(&self) -> (u32, u32) {
        let mut snap = seawall_semaphore_snapshot {
            active: 99,
            queued: 99,
            permits_outstanding: 99,
            tickets_outstanding: 99,
        };
        // SAFETY: live handle, valid out pointer.
        let s = unsafe { (self.api.sem_snapshot)(self.handle, &raw mut snap) };
        self.api.expect("seawall_semaphore_get_snapshot", s, OK);
        assert_eq!(
            (snap.permits_outstanding, snap.tickets_outstanding),
            (self.held.len() as u64, self.tickets),
            "permits and tickets outstanding, against what the driver holds"
        );
        (snap.active, snap.queued)
    }
}

/// A health window handle of the loaded library.
struct CHealth<'a> {
    api: &'a Api,
    handle: *mut seawall_health,
}

impl<'a> CHealth<'a> {
    fn new(api: &'a Api, c: &HealthConfig) -> Result<Self, String> {
        let cfg = seawall_health_config {
            buckets: c.buckets,
            reserved: 0,
            bucket_width_ns: c.bucket_width_ns,
            degraded_error_rate_ppm: c.degraded_error_rate.ppm(),
            unhealthy_error_rate_ppm: c.unhealthy_error_rate.ppm(),
            degraded_p99_ns: c.degraded_p99_ns,
            unhealthy_p99_ns: c.unhealthy_p99_ns,
        };
        let mut h = core::ptr::null_mut();
        // SAFETY: valid config and out pointers.
        let s = unsafe { (api.health_new)(&raw const cfg, &raw mut h) };
        Ok(Self {
            api,
            handle: api.made("seawall_health_new", s, h)?,
        })
    }

    fn snapshot(&self, now: u64) -> seawall_health_snapshot {
        let mut snap = std::mem::MaybeUninit::<seawall_health_snapshot>::uninit();
        // SAFETY: live handle, valid out pointer.
        let s = unsafe { (self.api.health_snapshot)(self.handle, now, snap.as_mut_ptr()) };
        self.api.expect("seawall_health_get_snapshot", s, OK);
        // SAFETY: written on OK (checked above: a mismatch panics).
        unsafe { snap.assume_init() }
    }
}

impl Drop for CHealth<'_> {
    fn drop(&mut self) {
        // SAFETY: our live handle, freed once.
        unsafe { (self.api.health_free)(self.handle) };
    }
}

impl HealthDriver for CHealth<'_> {
    fn record(&mut self, latency_ns: u64, failed: bool, now: u64) {
        let outcome = u32::from(failed); // SUCCESS 0, FAILURE 1
        // SAFETY: live handle.
        let s = unsafe { (self.api.health_record)(self.handle, outcome, latency_ns, now) };
        self.api.expect("seawall_health_record", s, OK);
    }

    fn counts(&self, now: u64) -> (u64, u64) {
        let s = self.snapshot(now);
        (s.calls, s.errors)
    }

    fn percentile(&self, percent: f64, now: u64) -> Option<u64> {
        let mut v = 0;
        // SAFETY: live handle, valid out pointer.
        let s = unsafe {
            (self.api.health_quantile)(self.handle, whole(percent * 10_000.0), now, &raw mut v)
        };
        self.api.expect("seawall_health_quantile", s, OK);
        (v != NONE).then_some(v)
    }

    fn status(&self, now: u64) -> String {
        let st = self.snapshot(now).status;
        // SAFETY: returns a static NUL-terminated string.
        let name = unsafe { std::ffi::CStr::from_ptr((self.api.health_status_name)(st)) };
        name.to_string_lossy().into_owned()
    }
}

enum Verdict {
    Pass,
    Fail(String),
}

fn run_scenario(api: &Api, path: &Path) -> (String, Verdict) {
    let id = path
        .file_stem()
        .map_or_else(|| "?".into(), |s| s.to_string_lossy().into_owned());
    let sc = match Scenario::load(path) {
        Ok(sc) => sc,
        Err(e) => return (id, Verdict::Fail(format!("malformed: {e}"))),
    };
    let ran = catch_unwind(AssertUnwindSafe(|| -> Result<(), String> {
        match sc.primitive {
            Primitive::Breaker => {
                let cfg = breaker::parse_config(&sc.config).map_err(|e| format!("config: {e}"))?;
                let mut b = CBreaker::new(api, &cfg)?;
                breaker::run(&sc, &mut b).map_err(|e| e.to_string())?;
                Ok(())
            }
            Primitive::Deadline => {
                deadline::run_with(&sc, |total, now| CDeadline::start(api, total, now))
                    .map_err(|e| e.to_string())?;
                Ok(())
            }
            Primitive::Backoff => {
                let cfg = backoff::parse_config(&sc.config).map_err(|e| format!("config: {e}"))?;
                backoff::run(&sc, &mut CBackoff::new(api, &cfg)).map_err(|e| e.to_string())?;
                Ok(())
            }
            Primitive::RetryBudget => {
                let cfg =
                    retry_budget::parse_config(&sc.config).map_err(|e| format!("config: {e}"))?;
                retry_budget::run(&sc, &mut CBudget::new(api, &cfg)?).map_err(|e| e.to_string())?;
                Ok(())
            }
            Primitive::RetryThrottle => {
                let cfg =
                    retry_throttle::parse_config(&sc.config).map_err(|e| format!("config: {e}"))?;
                retry_throttle::run(&sc, &mut CThrottle::new(api, &cfg)?)
                    .map_err(|e| e.to_string())?;
                Ok(())
            }
            Primitive::Semaphore => {
                let cfg =
                    semaphore::parse_config(&sc.config).map_err(|e| format!("config: {e}"))?;
                semaphore::run(&sc, &mut CSemaphore::new(api, &cfg)?).map_err(|e| e.to_string())?;
                Ok(())
            }
            Primitive::Health => {
                let cfg = health::parse_config(&sc.config).map_err(|e| format!("config: {e}"))?;
                health::run(&sc, &mut CHealth::new(api, &cfg)?).map_err(|e| e.to_string())?;
                Ok(())
            }
            Primitive::RateLimiter => {
                let cfg =
                    rate_limiter::parse_config(&sc.config).map_err(|e| format!("config: {e}"))?;
                rate_limiter::run(&sc, &mut CRateLimiter::new(api, &cfg)?)
                    .map_err(|e| e.to_string())?;
                Ok(())
            }
        }
    }));
    let verdict = match ran {
        Ok(Ok(())) => Verdict::Pass,
        Ok(Err(why)) => Verdict::Fail(why),
        Err(panic) => Verdict::Fail(
            panic
                .downcast_ref::<String>()
                .cloned()
                // `panic!("literal")` carries a `&str`, not a `String`.
                .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_else(|| "panicked".into()),
        ),
    };
    (sc.id, verdict)
}

fn library_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("SEAWALL_LIB") {
        return Some(PathBuf::from(p));
    }
    let exe = std::env::current_exe().ok()?;
    let deps = exe.parent()?;
    [
        deps.join("libseawall.so"),
        deps.parent()?.join("libseawall.so"),
    ]
    .into_iter()
    .find(|p| p.is_file())
}

fn main() -> ExitCode {
    let Some(path) = library_path() else {
        println!("FAIL libseawall.so not found next to the test: set SEAWALL_LIB");
        return ExitCode::FAILURE;
    };
    let api = match Api::load(&path) {
        Ok(a) => a,
        Err(e) => {
            println!("FAIL cannot load the C library: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("conformance through the C ABI of {}", path.display());
    // Scenario panics are caught and reported; keep their default hook output out.
    std::panic::set_hook(Box::new(|_| {}));
    let (mut passed, mut failed) = (0u32, 0u32);
    for dir in scenario_dirs(&[]) {
        let files = match scenario_files(&dir) {
            Ok(f) => f,
            Err(e) => {
                println!("FAIL {e}");
                failed += 1;
                continue;
            }
        };
        for file in files {
            match run_scenario(&api, &file) {
                (id, Verdict::Pass) => {
                    passed += 1;
                    println!("PASS {id}");
                }
                (id, Verdict::Fail(why)) => {
                    failed += 1;
                    println!("FAIL {id}: {why}");
                }
            }
        }
    }
    // Every primitive is in the C ABI: nothing is ever skipped.
    println!("{passed} passed, {failed} failed, 0 skipped");
    if failed == 0 && passed > 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
