//! The Python exceptions the native module raises. They are defined in Python
//! (`seawall/_errors.py`, where users read them) and looked up once here.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;
use seawall_core::{ConfigError, Field, Problem};

const MODULE: &str = "seawall._errors";

static CONFIG: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static CIRCUIT_OPEN: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static BULKHEAD_FULL: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static PERMITS_EXHAUSTED: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static PERMIT_USED: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static SHARED: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static SEAWALL: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static RATE_LIMITED: PyOnceLock<Py<PyType>> = PyOnceLock::new();

fn raise(
    py: Python<'_>,
    cell: &'static PyOnceLock<Py<PyType>>,
    name: &str,
    args: impl for<'py> pyo3::call::PyCallArgs<'py>,
) -> PyErr {
    match cell.import(py, MODULE, name) {
        Ok(cls) => match cls.call1(args) {
            Ok(exc) => PyErr::from_value(exc),
            Err(e) => e,
        },
        Err(e) => e,
    }
}

/// The Python name of a core configuration field: the keyword argument a user
/// wrote (`semaphore.max_queue` is `max_queue`; window fields keep `window.`).
#[must_use]
pub fn field_name(field: Field) -> &'static str {
    match field {
        Field::PriorityShares => "shares",
        Field::RatePeriod => "per",
        other => {
            let name = other.name();
            if name.starts_with("window.") {
                return name;
            }
            name.rsplit_once('.').map_or(name, |(_, last)| last)
        }
    }
}

/// `SeawallConfigError(message, field)`.
pub fn config_error(py: Python<'_>, field: &str, message: &str) -> PyErr {
    raise(py, &CONFIG, "SeawallConfigError", (message, field))
}

/// Whether the core keeps `field` in nanoseconds, which Python users give in
/// seconds.
const fn is_duration(field: Field) -> bool {
    matches!(
        field,
        Field::WindowBucketWidth
            | Field::SlowCallDuration
            | Field::OpenDuration
            | Field::MaxOpenDuration
            | Field::HalfOpenMaxWait
            | Field::DeadlineTotal
            | Field::BackoffBase
            | Field::BackoffMax
            | Field::RetryBudgetTtl
            | Field::HealthBucketWidth
            | Field::DegradedP99
            | Field::UnhealthyP99
            | Field::RatePeriod
    )
}

/// A core [`ConfigError`] as `SeawallConfigError`, naming the Python field.
pub fn from_config(py: Python<'_>, e: ConfigError) -> PyErr {
    let field = field_name(e.field);
    // The core names fields in DESIGN terms and durations in nanoseconds; say
    // both as the user wrote them: the keyword and seconds.
    let text = match e.problem {
        Problem::OutOfRange { min, max } if is_duration(e.field) => format!(
            "invalid {field}: must be between {} and {} seconds",
            crate::time::ns_to_secs(min),
            crate::time::ns_to_secs(max)
        ),
        Problem::BelowField(other) => {
            format!(
                "invalid {field}: must not be less than {}",
                field_name(other)
            )
        }
        _ => e.to_string().replacen(e.field.name(), field, 1),
    };
    config_error(py, field, &text)
}

/// `CircuitOpenError(message, name, state, retry_after)`.
pub fn circuit_open(
    py: Python<'_>,
    name: Option<&str>,
    state: &'static str,
    retry_after_ns: Option<u64>,
) -> PyErr {
    let who = name.map_or_else(
        || "circuit breaker".to_owned(),
        |n| format!("circuit breaker {n:?}"),
    );
    let retry_after = retry_after_ns.map(crate::time::ns_to_secs);
    let message = match retry_after {
        Some(s) => format!("{who} is {state}; retry after {s:.3} s"),
        None => format!("{who} is {state}"),
    };
    raise(
        py,
        &CIRCUIT_OPEN,
        "CircuitOpenError",
        (message, name, state, retry_after),
    )
}

/// `PermitsExhaustedError(message, name, state, limit)`: a shared breaker's
/// permit table is full (`limit` calls of the host admitted and not yet
/// recorded). A `CircuitOpenError`, so a handler for refusals handles it.
pub fn permits_exhausted(
    py: Python<'_>,
    name: Option<&str>,
    state: &'static str,
    limit: usize,
) -> PyErr {
    let message = format!(
        "shared circuit breaker {:?}: all {limit} permits of the host are outstanding (admitted, not yet recorded); the call was refused",
        name.unwrap_or("")
    );
    raise(
        py,
        &PERMITS_EXHAUSTED,
        "PermitsExhaustedError",
        (message, name, state, limit),
    )
}

/// `BulkheadFullError(message, name, active, queued, reason)`.
pub fn bulkhead_full(
    py: Python<'_>,
    name: Option<&str>,
    reason: &'static str,
    active: u32,
    queued: u32,
) -> PyErr {
    let who = name.map_or_else(|| "bulkhead".to_owned(), |n| format!("bulkhead {n:?}"));
    let why = match reason {
        "shed" => "shed this priority (its share is in use)",
        "timeout" => "kept the caller waiting past its queue timeout",
        _ => "is full",
    };
    let message = format!("{who} {why}: {active} active, {queued} queued");
    raise(
        py,
        &BULKHEAD_FULL,
        "BulkheadFullError",
        (message, name, active, queued, reason),
    )
}

/// `PermitAlreadyUsedError(message)`.
pub fn permit_used(py: Python<'_>, what: &str) -> PyErr {
    let message = format!("this {what} permit was already used: a permit records or releases once");
    raise(py, &PERMIT_USED, "PermitAlreadyUsedError", (message,))
}

/// `SharedRegionError(message)`.
pub fn shared_region(py: Python<'_>, message: &str) -> PyErr {
    raise(py, &SHARED, "SharedRegionError", (message,))
}

/// `SeawallError(message)`.
pub fn seawall(py: Python<'_>, message: &str) -> PyErr {
    raise(py, &SEAWALL, "SeawallError", (message,))
}

/// Whether `err` is a `RateLimitedError`: a rate limiter refused the call
/// before it was made (DESIGN §9), which says nothing about the dependency.
pub fn is_rate_limited(py: Python<'_>, err: &Bound<'_, PyAny>) -> bool {
    RATE_LIMITED
        .import(py, MODULE, "RateLimitedError")
        .is_ok_and(|cls| err.is_instance(cls).unwrap_or(false))
}
