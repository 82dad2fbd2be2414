//! Deadline budgets and windowed health at the Python edge (DESIGN §6, §7).

use pyo3::prelude::*;
use seawall_core::{Deadline as CoreDeadline, Health as CoreHealth, HealthConfig, Ratio};

use crate::errors;
use crate::time::{Clock, count, ns_to_secs, percent, real, seconds, secs_to_ns, whole};

/// `seawall._native.Deadline`: a time budget started at a monotonic instant;
/// plain data. `remaining(now)` saturates at 0; it is expired exactly at
/// `start + total`; a child never outlives its parent.
#[pyclass(frozen, module = "seawall._native", name = "Deadline")]
pub struct Deadline {
    d: CoreDeadline,
}

#[pymethods]
impl Deadline {
    /// A budget of `total_ns` starting at `now_ns`.
    #[new]
    fn new(total_ns: u64, now_ns: u64) -> Self {
        Self {
            d: CoreDeadline::new(total_ns, now_ns),
        }
    }

    #[getter]
    fn start_ns(&self) -> u64 {
        self.d.start()
    }

    #[getter]
    fn end_ns(&self) -> u64 {
        self.d.end()
    }

    fn remaining_ns(&self, now_ns: u64) -> u64 {
        self.d.remaining(now_ns)
    }

    fn expired(&self, now_ns: u64) -> bool {
        self.d.expired(now_ns)
    }

    fn allocate_ns(&self, max_ns: u64, now_ns: u64) -> u64 {
        self.d.allocate(max_ns, now_ns)
    }

    fn child(&self, total_ns: u64, now_ns: u64) -> Self {
        Self {
            d: self.d.child(total_ns, now_ns),
        }
    }
}

/// Buckets a health window may have.
pub const HEALTH_BUCKETS: usize = 60;

/// `seawall.Health`: windowed latency (log-linear histogram, p50/p90/p99 within
/// 3.125 %) and error rate of one dependency, and its status: unhealthy if the
/// error rate is above `unhealthy_error_rate` % or p99 above `unhealthy_p99`
/// seconds, degraded above the degraded ones (DESIGN §7).
#[pyclass(frozen, module = "seawall._native", name = "Health")]
pub struct Health {
    h: Box<CoreHealth<HEALTH_BUCKETS>>,
    clock: Clock,
}

fn opt_ns(v: Option<u64>) -> Option<f64> {
    v.map(ns_to_secs)
}

#[pymethods]
impl Health {
    #[new]
    #[pyo3(
        signature = (
            *, buckets=None, bucket_width=None, degraded_error_rate=None,
            unhealthy_error_rate=None, degraded_p99=None, unhealthy_p99=None, clock=None
        ),
        text_signature = "(*, buckets=10, bucket_width=1.0, degraded_error_rate=10.0, unhealthy_error_rate=50.0, degraded_p99=2.0, unhealthy_p99=5.0, clock=None)"
    )]
    #[allow(
        clippy::too_many_arguments,
        reason = "keyword arguments of the Python class"
    )]
    fn new(
        py: Python<'_>,
        buckets: Option<&Bound<'_, PyAny>>,
        bucket_width: Option<&Bound<'_, PyAny>>,
        degraded_error_rate: Option<&Bound<'_, PyAny>>,
        unhealthy_error_rate: Option<&Bound<'_, PyAny>>,
        degraded_p99: Option<&Bound<'_, PyAny>>,
        unhealthy_p99: Option<&Bound<'_, PyAny>>,
        clock: Option<Py<PyAny>>,
    ) -> PyResult<Self> {
        // Defaults here, not in the signature: each given value is checked as a
        // number (no bool, no overflow) under its own name.
        let num = |v: Option<&Bound<'_, PyAny>>, field: &str, default: f64| {
            v.map_or(Ok(default), |v| real(py, field, v))
        };
        let buckets = buckets.map_or(Ok(10), |v| whole(py, "buckets", v))?;
        let secs = |v: Option<&Bound<'_, PyAny>>, field: &str, default: f64| {
            v.map_or(Ok(default), |v| seconds(py, field, v))
        };
        let bucket_width = secs(bucket_width, "bucket_width", 1.0)?;
        let degraded_error_rate = num(degraded_error_rate, "degraded_error_rate", 10.0)?;
        let unhealthy_error_rate = num(unhealthy_error_rate, "unhealthy_error_rate", 50.0)?;
        let degraded_p99 = secs(degraded_p99, "degraded_p99", 2.0)?;
        let unhealthy_p99 = secs(unhealthy_p99, "unhealthy_p99", 5.0)?;
        let config = HealthConfig {
            buckets: count(py, "buckets", buckets, 1, HEALTH_BUCKETS as u32)?,
            bucket_width_ns: secs_to_ns(py, "bucket_width", bucket_width)?,
            degraded_error_rate: percent(py, "degraded_error_rate", degraded_error_rate)?,
            unhealthy_error_rate: percent(py, "unhealthy_error_rate", unhealthy_error_rate)?,
            degraded_p99_ns: secs_to_ns(py, "degraded_p99", degraded_p99)?,
            unhealthy_p99_ns: secs_to_ns(py, "unhealthy_p99", unhealthy_p99)?,
        };
        config.validate().map_err(|e| errors::from_config(py, e))?;
        let h = CoreHealth::new(config).map_err(|e| errors::from_config(py, e))?;
        Ok(Self {
            h: Box::new(h),
            clock: Clock::checked(py, clock)?,
        })
    }

    /// One call that took `latency` seconds and failed or not.
    #[pyo3(signature = (latency, failed=false))]
    fn record(&self, py: Python<'_>, latency: f64, failed: bool) -> PyResult<()> {
        let l = secs_to_ns(py, "latency", latency)?;
        let now = self.clock.now(py)?;
        self.h.record(l, failed, now);
        Ok(())
    }

    /// The `p`-th percentile latency (seconds, nearest rank), `None` when empty.
    fn percentile(&self, py: Python<'_>, p: f64) -> PyResult<Option<f64>> {
        let q: Ratio = percent(py, "p", p)?;
        let now = self.clock.now(py)?;
        Ok(opt_ns(self.h.quantile(q, now)))
    }

    /// `healthy`, `degraded` or `unhealthy`.
    #[getter]
    fn status(&self, py: Python<'_>) -> PyResult<&'static str> {
        let now = self.clock.now(py)?;
        Ok(self.h.status(now).name())
    }

    /// `calls`, `errors`, `error_rate` (%), `p50`/`p90`/`p99` (s), `status` (dict).
    fn snapshot<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
        let now = self.clock.now(py)?;
        let s = self.h.snapshot(now);
        let d = pyo3::types::PyDict::new(py);
        d.set_item("calls", s.calls)?;
        d.set_item("errors", s.errors)?;
        d.set_item(
            "error_rate",
            s.error_rate.map(seawall_host::units::percent_of_ratio),
        )?;
        d.set_item("p50", opt_ns(s.p50_ns))?;
        d.set_item("p90", opt_ns(s.p90_ns))?;
        d.set_item("p99", opt_ns(s.p99_ns))?;
        d.set_item("status", s.status.name())?;
        Ok(d)
    }
}
