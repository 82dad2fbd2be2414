//! The conformance scenarios driven through the C ABI: `libseawall.so` is loaded
//! with `dlopen` and every step goes through its exported `seawall_*` functions
//! (the same symbols a C program links), by the interpreters of
//! `seawall-conformance`.
//!
//! The library is `$SEAWALL_LIB`, else the `libseawall.so` cargo built next to this
//! test. Scenario directories: `$SEAWALL_CASES` (colon-separated), else
//! `conformance/cases` and `../shared/cases`. Prints `PASS` / `FAIL` / `SKIP` per
//! scenario (SKIP for primitives the C ABI does not have yet) and exits 1 on any
//! failure.
//!
//! Besides each scenario's own expectations, every recorded permit is recorded a
//! second time and must come back `SEAWALL_STATUS_PERMIT_ALREADY_USED`, changing
//! nothing the following steps check.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use libloading::Library;
use seawall::capi::breaker::{
    seawall_breaker, seawall_breaker_config, seawall_outcome, seawall_permit, seawall_rejection,
    seawall_state,
};
use seawall::capi::deadline::seawall_deadline;
use seawall_conformance::breaker::{self, BreakerDriver};
use seawall_conformance::deadline::{self, DeadlineDriver};
use seawall_conformance::scenario::{Primitive, Scenario, scenario_dirs, scenario_files};
use seawall_core::{BreakerConfig, Outcome, WindowConfig};

// Values from include/seawall.h, written out here rather than taken from the
// crate, so a renumbering in the library shows up as a failure.
const OK: i32 = 0;
const REJECTED: i32 = 3;
const PERMIT_ALREADY_USED: i32 = 4;
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
            _lib: lib,
        })
    }

    /// Panic (caught per scenario, reported as FAIL) unless `status` is `want`.
    fn expect(&self, what: &str, status: Status, want: Status) {
        if status != want {
            // SAFETY: the library returns a NUL-terminated string it keeps alive.
            let msg = unsafe { std::ffi::CStr::from_ptr((self.last_error)()) };
            panic!("{what} returned status {status}, expected {want}: {msg:?}");
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

enum Verdict {
    Pass,
    Fail(String),
    Skip(String),
}

fn run_scenario(api: &Api, path: &Path) -> (String, Verdict) {
    let id = path
        .file_stem()
        .map_or_else(|| "?".into(), |s| s.to_string_lossy().into_owned());
    let sc = match Scenario::load(path) {
        Ok(sc) => sc,
        Err(e) => return (id, Verdict::Fail(format!("malformed: {e}"))),
    };
    let ran = catch_unwind(AssertUnwindSafe(|| match sc.primitive {
        Primitive::Breaker => {
            let cfg = breaker::parse_config(&sc.config).map_err(|e| format!("config: {e}"))?;
            let mut b = CBreaker::new(api, &cfg)?;
            breaker::run(&sc, &mut b).map_err(|e| e.to_string())?;
            Ok(None)
        }
        Primitive::Deadline => {
            deadline::run_with(&sc, |total, now| CDeadline::start(api, total, now))
                .map_err(|e| e.to_string())?;
            Ok(None)
        }
        other => Ok(Some(format!("{} not in the C ABI yet", other.key()))),
    }));
    let verdict = match ran {
        Ok(Ok(None)) => Verdict::Pass,
        Ok(Ok(Some(why))) => Verdict::Skip(why),
        Ok(Err(why)) => Verdict::Fail(why),
        Err(panic) => Verdict::Fail(
            panic
                .downcast_ref::<String>()
                .cloned()
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
    let (mut passed, mut failed, mut skipped) = (0u32, 0u32, 0u32);
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
                (id, Verdict::Skip(why)) => {
                    skipped += 1;
                    println!("SKIP {id}: {why}");
                }
            }
        }
    }
    println!("{passed} passed, {failed} failed, {skipped} skipped");
    if failed == 0 && passed > 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
