//! Time at the Python edge: `float` seconds outside, `u64` nanoseconds of the OS
//! monotonic clock inside (DESIGN §0), and percentages and factors as the core's
//! parts per million. The rounding is `seawall_host::units` (one rule for every
//! binding); what stays here is Python's refusal of what it cannot represent, as
//! a `SeawallConfigError` naming the keyword argument, and the clock glue.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyInt, PyString};
use seawall_core::Ratio;
pub use seawall_host::units::ns_to_secs;
use seawall_host::units::{is_non_negative, ratio_of_factor, ratio_of_percent};

use crate::errors::config_error;

/// Seconds → whole nanoseconds, rounded to nearest, saturating at `u64::MAX`.
/// A negative, NaN or infinite value is a `SeawallConfigError` naming `field`.
pub fn secs_to_ns(py: Python<'_>, field: &str, secs: f64) -> PyResult<u64> {
    if !is_non_negative(secs) {
        return Err(config_error(
            py,
            field,
            &format!("invalid {field}: must be a finite number of seconds >= 0, got {secs}"),
        ));
    }
    Ok(seawall_host::units::secs_to_ns(secs))
}

/// An optional duration (`None` turns a rule off).
pub fn opt_secs_to_ns(py: Python<'_>, field: &str, secs: Option<f64>) -> PyResult<Option<u64>> {
    secs.map(|s| secs_to_ns(py, field, s)).transpose()
}

/// A percentage `0 ..= 100` as a ratio, to the nearest part per million.
pub fn percent(py: Python<'_>, field: &str, p: f64) -> PyResult<Ratio> {
    if !p.is_finite() || !(0.0..=100.0).contains(&p) {
        return Err(config_error(
            py,
            field,
            &format!("invalid {field}: must be a percentage between 0 and 100, got {p}"),
        ));
    }
    Ok(ratio_of_percent(p))
}

/// A factor in `min ..= max` as a ratio, to the nearest part per million.
pub fn factor(py: Python<'_>, field: &str, f: f64, min: f64, max: f64) -> PyResult<Ratio> {
    if !f.is_finite() || f < min || f > max {
        let upper = if max.is_finite() {
            format!(" and {max}")
        } else {
            String::new()
        };
        let range = if upper.is_empty() {
            format!("at least {min}")
        } else {
            format!("between {min}{upper}")
        };
        return Err(config_error(
            py,
            field,
            &format!("invalid {field}: must be {range}, got {f}"),
        ));
    }
    Ok(ratio_of_factor(f))
}

/// A whole number `min ..= max` as `u32`.
pub fn count(py: Python<'_>, field: &str, n: i64, min: u32, max: u32) -> PyResult<u32> {
    match u32::try_from(n) {
        Ok(v) if (min..=max).contains(&v) => Ok(v),
        _ => Err(config_error(
            py,
            field,
            &format!("invalid {field}: must be a whole number between {min} and {max}, got {n}"),
        )),
    }
}

/// A numeric setting given as a Python object. `bool` is an `int` subclass,
/// so `True` would silently mean 1 (1 %, 1 s): it is refused, like an `int`
/// too large for a float or what is not a number at all, as a
/// `SeawallConfigError` naming `field`.
pub fn real(py: Python<'_>, field: &str, v: &Bound<'_, PyAny>) -> PyResult<f64> {
    if v.is_instance_of::<PyBool>() {
        return Err(config_error(
            py,
            field,
            &format!("invalid {field}: must be a number, got a bool ({v})"),
        ));
    }
    if !(v.is_instance_of::<PyInt>() || v.is_instance_of::<PyFloat>()) {
        return Err(config_error(
            py,
            field,
            &format!("invalid {field}: must be a number, got {}", v.repr()?),
        ));
    }
    v.extract::<f64>().map_err(|_| {
        config_error(
            py,
            field,
            &format!("invalid {field}: {v} is too large for a float"),
        )
    })
}

static TIMEDELTA: pyo3::sync::PyOnceLock<Py<PyAny>> = pyo3::sync::PyOnceLock::new();

/// A duration setting given as a Python object: seconds as a number (checked as
/// [`real`] checks it) or a `datetime.timedelta` (its `total_seconds()`).
pub fn seconds(py: Python<'_>, field: &str, v: &Bound<'_, PyAny>) -> PyResult<f64> {
    let timedelta = TIMEDELTA.import(py, "datetime", "timedelta")?;
    if v.is_instance(timedelta)? {
        return v
            .call_method0(pyo3::intern!(py, "total_seconds"))?
            .extract::<f64>();
    }
    real(py, field, v)
}

/// A whole-number setting given as a Python object: `bool`, an `int` beyond
/// 64 bits and what is not an `int` are a `SeawallConfigError` naming `field`
/// (the caller checks the range).
pub fn whole(py: Python<'_>, field: &str, v: &Bound<'_, PyAny>) -> PyResult<i64> {
    if v.is_instance_of::<PyBool>() {
        return Err(config_error(
            py,
            field,
            &format!("invalid {field}: must be a whole number, got a bool ({v})"),
        ));
    }
    if !v.is_instance_of::<PyInt>() {
        return Err(config_error(
            py,
            field,
            &format!("invalid {field}: must be a whole number, got {}", v.repr()?),
        ));
    }
    v.extract::<i64>().map_err(|_| {
        config_error(
            py,
            field,
            &format!("invalid {field}: must be a whole number that fits in 64 bits, got {v}"),
        )
    })
}

/// An optional string setting (a name, a region) given as a Python object:
/// anything but a `str` is a `SeawallConfigError` naming `field`.
pub fn text(py: Python<'_>, field: &str, v: Option<&Bound<'_, PyAny>>) -> PyResult<Option<String>> {
    match v {
        None => Ok(None),
        Some(v) if v.is_instance_of::<PyString>() => v.extract().map(Some),
        Some(v) => Err(config_error(
            py,
            field,
            &format!("invalid {field}: must be a string, got {}", v.repr()?),
        )),
    }
}

/// Where "now" comes from: the OS monotonic clock (`CLOCK_MONOTONIC`, shared by
/// every process of the host), or a Python callable returning seconds (tests,
/// simulations).
pub enum Clock {
    /// `CLOCK_MONOTONIC`.
    Os,
    /// A callable returning monotonic seconds as a float.
    Custom(Py<PyAny>),
}

impl Clock {
    /// From the optional `clock=` argument.
    #[must_use]
    pub fn new(clock: Option<Py<PyAny>>) -> Self {
        clock.map_or(Self::Os, Self::Custom)
    }

    /// From a `clock=` argument users pass to a native class directly: what is
    /// not callable is a `SeawallConfigError` naming `clock`.
    pub fn checked(py: Python<'_>, clock: Option<Py<PyAny>>) -> PyResult<Self> {
        match clock {
            Some(f) if !f.bind(py).is_callable() => Err(config_error(
                py,
                "clock",
                &format!(
                    "invalid clock: must be callable, got {}",
                    f.bind(py).repr()?
                ),
            )),
            other => Ok(Self::new(other)),
        }
    }

    /// Now, in nanoseconds.
    pub fn now(&self, py: Python<'_>) -> PyResult<u64> {
        match self {
            Self::Os => Ok(seawall_host::clock::monotonic_ns()),
            Self::Custom(f) => {
                let s: f64 = f.call0(py)?.extract(py)?;
                secs_to_ns(py, "clock()", s)
            }
        }
    }

    /// Now, or `fallback` if a custom clock fails (its error is reported as
    /// unraisable): used where an error must not replace the user's own result.
    pub fn now_or(&self, py: Python<'_>, fallback: u64) -> u64 {
        self.now(py).unwrap_or_else(|e| {
            e.write_unraisable(py, None);
            fallback
        })
    }
}

/// `monotonic() -> float`: seconds of the OS monotonic clock the native module
/// reads (`CLOCK_MONOTONIC`; the same clock as `time.monotonic()` on Linux).
#[pyfunction]
#[must_use]
pub fn monotonic() -> f64 {
    ns_to_secs(seawall_host::clock::monotonic_ns())
}
