//! `seawall._native`: the native half of the Python package `seawall`.
//!
//! `PyO3` classes over the lock-free core (`seawall-core`) and the shared regions
//! of `seawall-ffi`; the Python half (`python/seawall/`) gives them the API
//! Python users expect. Durations are `float` seconds at this edge and `u64`
//! nanoseconds of `CLOCK_MONOTONIC` inside; percentages are `0 ..= 100`.
//!
//! Every class is `frozen` and made of atomics (and, for a bulkhead's sleeping
//! waiters, a mutex held only to add or collect entries), so the module is safe
//! without the GIL: it declares `gil_used = false` for free-threaded `CPython`.

mod at_exit;
mod breaker;
mod bulkhead;
mod classify;
mod deadline;
mod errors;
mod guarded;
mod rate_limiter;
mod retry;
mod time;

use pyo3::prelude::*;

/// `config_fields() -> dict[str, list[str]]`: the fields of each core
/// configuration the package exposes (`seawall_host::options`), which the
/// package's option tables (`seawall/_options.py`) must cover.
#[pyfunction]
fn config_fields() -> Vec<(&'static str, Vec<&'static str>)> {
    seawall_host::options::all()
}

/// The module.
#[pymodule(gil_used = false)]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<breaker::Breaker>()?;
    m.add_class::<breaker::BreakerPermit>()?;
    m.add_class::<breaker::BreakerScope>()?;
    m.add_class::<bulkhead::Bulkhead>()?;
    m.add_class::<bulkhead::BulkheadPermit>()?;
    m.add_class::<bulkhead::BulkheadTicket>()?;
    m.add_class::<guarded::Guarded>()?;
    m.add_class::<retry::RetryPolicy>()?;
    m.add_class::<retry::RetryBudget>()?;
    m.add_class::<retry::RetryThrottle>()?;
    m.add_class::<retry::Backoff>()?;
    m.add_class::<deadline::Deadline>()?;
    m.add_class::<deadline::Health>()?;
    m.add_class::<rate_limiter::RateLimiter>()?;
    m.add_function(wrap_pyfunction!(time::monotonic, m)?)?;
    m.add_function(wrap_pyfunction!(retry::splitmix64, m)?)?;
    m.add("COUNT_WINDOW_CAPACITY", breaker::COUNT_CAPACITY)?;
    m.add("TIME_WINDOW_CAPACITY", breaker::TIME_CAPACITY)?;
    m.add(
        "TIME_WINDOW_MIN_BUCKET_WIDTH_NS",
        seawall_core::TimeWindow::<{ breaker::TIME_CAPACITY }>::MIN_BUCKET_WIDTH_NS,
    )?;
    m.add("QUEUE_CAPACITY", bulkhead::QUEUE_CAPACITY)?;
    m.add("HEALTH_BUCKETS", deadline::HEALTH_BUCKETS)?;
    m.add("REGION_LAYOUT_VERSION", seawall_host::REGION_LAYOUT_VERSION)?;
    m.add("SHARED_SUPPORTED", seawall_host::shared::native_atomics())?;
    m.add(
        "STALE_CACHE_MAX_ENTRIES",
        seawall_host::options::STALE_CACHE_MAX_ENTRIES,
    )?;
    m.add_function(wrap_pyfunction!(config_fields, m)?)?;
    // Not a name of the module: only the interpreter's exit calls it.
    m.py().import("atexit")?.call_method1(
        "register",
        (wrap_pyfunction!(at_exit::give_back_at_exit, m)?,),
    )?;
    Ok(())
}
