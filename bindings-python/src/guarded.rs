//! The sync decorator: a callable that runs a function through the layers of
//! DESIGN §9 that apply to it — bulkhead, then circuit breaker, then retry — all
//! in Rust, so a call through a closed breaker costs an acquire, a call and a
//! record, with no Python frame, no allocation of ours and no lock.
//!
//! Retry's first attempt runs here; only after a failure does the loop move to
//! Python (`seawall._retry`), which asks the core whether and when to retry.

use std::sync::Arc;
use std::time::Duration;

use pyo3::PyTraverseError;
use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple};
use seawall_core::Priority;

use crate::breaker::{Breaker, BreakerCore, guarded_call};
use crate::bulkhead::{Bulkhead, SemCore, parse_priority};
use crate::retry::{RetryCore, RetryPolicy};
use crate::time::secs_to_ns;

struct BulkheadLayer {
    core: Arc<SemCore>,
    priority: Priority,
    timeout: Option<Duration>,
}

struct RetryLayer {
    core: Arc<RetryCore>,
    /// `slow(func, args, kwargs, first_error, start_ns)`: the rest of the attempt
    /// loop, in Python.
    slow: Py<PyAny>,
}

/// `seawall._native.Guarded(func, *, bulkhead=None, priority="normal",
/// queue_timeout=None, breaker=None, retry=None, retry_slow=None)`.
#[pyclass(frozen, dict, weakref, module = "seawall._native", name = "Guarded")]
pub struct Guarded {
    /// Always `Some` once made. An `Option` because the collector can visit a
    /// Guarded while it is being made: `dict` makes the base `object.__new__`
    /// allocate the instance dict, which may run a collection before `PyO3` has
    /// written the fields, still zeroed then — `None`, where a bare `Py` would
    /// be a null pointer handed to the collector (an interpreter crash).
    func: Option<Py<PyAny>>,
    bulkhead: Option<BulkheadLayer>,
    breaker: Option<Arc<BreakerCore>>,
    retry: Option<RetryLayer>,
}

static METHOD_TYPE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static COROUTINE_TYPE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// Whether `v` is a coroutine object: what a sync-decorated callable returns
/// when it is really async (`breaker(lambda: fetch())`). One type comparison,
/// so the hot path pays next to nothing.
pub fn is_coroutine(py: Python<'_>, v: &Bound<'_, PyAny>) -> bool {
    COROUTINE_TYPE
        .import(py, "types", "CoroutineType")
        .is_ok_and(|t| v.get_type().is(t))
}

/// The `TypeError` for a sync-decorated callable that returned the coroutine
/// `coro`, which is closed first: protecting only its creation would protect
/// nothing, and an unawaited coroutine would warn.
pub fn refuse_coroutine(py: Python<'_>, coro: &Bound<'_, PyAny>) -> PyErr {
    if let Err(e) = coro.call_method0("close") {
        e.write_unraisable(py, Some(coro));
    }
    pyo3::exceptions::PyTypeError::new_err(
        "a function decorated as sync returned a coroutine: the protection would end before \
         its body runs; decorate an `async def` function (or call `.call()` with one) instead",
    )
}

impl Guarded {
    fn run_retry(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        let Some(func) = &self.func else {
            return Err(pyo3::exceptions::PyTypeError::new_err(
                "Guarded is not made yet",
            ));
        };
        let func = func.bind(py);
        // Under a breaker, `guarded_call` refuses a coroutine (recording the
        // permit as ignored); alone, this layer does.
        let refuse_here = self.breaker.is_none();
        let Some(r) = &self.retry else {
            let v = func.call(args, kwargs)?;
            if refuse_here && is_coroutine(py, &v) {
                return Err(refuse_coroutine(py, &v));
            }
            return Ok(v.unbind());
        };
        let start = r.core.clock.now(py)?;
        r.core.on_request(py, start);
        match func.call(args, kwargs) {
            Ok(v) if refuse_here && is_coroutine(py, &v) => Err(refuse_coroutine(py, &v)),
            Ok(v) => {
                r.core.on_success();
                Ok(v.unbind())
            }
            Err(e) => r
                .slow
                .call1(py, (func, args, kwargs, e.into_value(py), start)),
        }
    }

    fn run_breaker(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        match &self.breaker {
            Some(b) => guarded_call(py, b, || self.run_retry(py, args, kwargs)),
            None => self.run_retry(py, args, kwargs),
        }
    }
}

/// Gives a bulkhead permit back when the call ends, however it ends.
struct Release<'a, 'py> {
    core: &'a SemCore,
    py: Python<'py>,
    permit: u64,
}

impl Drop for Release<'_, '_> {
    fn drop(&mut self) {
        self.core.release(self.py, self.permit);
    }
}

#[pymethods]
impl Guarded {
    #[new]
    #[pyo3(signature = (
        func, *, bulkhead=None, priority="normal", queue_timeout=None, breaker=None,
        retry=None, retry_slow=None
    ))]
    #[allow(clippy::too_many_arguments, reason = "one keyword per layer")]
    fn new(
        py: Python<'_>,
        func: Py<PyAny>,
        bulkhead: Option<PyRef<'_, Bulkhead>>,
        priority: &str,
        queue_timeout: Option<f64>,
        breaker: Option<PyRef<'_, Breaker>>,
        retry: Option<PyRef<'_, RetryPolicy>>,
        retry_slow: Option<Py<PyAny>>,
    ) -> PyResult<Self> {
        if !func.bind(py).is_callable() {
            return Err(pyo3::exceptions::PyTypeError::new_err(
                "func must be callable",
            ));
        }
        let priority = parse_priority(py, priority)?;
        let timeout = queue_timeout
            .map(|s| secs_to_ns(py, "queue_timeout", s))
            .transpose()?
            .map(Duration::from_nanos);
        let retry = match (retry, retry_slow) {
            (Some(r), Some(slow)) => Some(RetryLayer {
                core: Arc::clone(&r.core),
                slow,
            }),
            (None, None) => None,
            _ => {
                return Err(pyo3::exceptions::PyTypeError::new_err(
                    "retry and retry_slow go together",
                ));
            }
        };
        Ok(Self {
            func: Some(func),
            bulkhead: bulkhead.map(|b| BulkheadLayer {
                core: Arc::clone(&b.core),
                priority,
                timeout,
            }),
            breaker: breaker.map(|b| Arc::clone(&b.core)),
            retry,
        })
    }

    #[pyo3(signature = (*args, **kwargs))]
    fn __call__(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        match &self.bulkhead {
            Some(b) => {
                let permit = b.core.acquire_blocking(py, b.priority, b.timeout)?;
                let _release = Release {
                    core: &b.core,
                    py,
                    permit,
                };
                self.run_breaker(py, args, kwargs)
            }
            None => self.run_breaker(py, args, kwargs),
        }
    }

    /// Bind as a method, like a function does.
    fn __get__(
        slf: &Bound<'_, Self>,
        obj: Option<&Bound<'_, PyAny>>,
        _owner: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        match obj {
            Some(o) if !o.is_none() => {
                let method = METHOD_TYPE.import(py, "types", "MethodType")?;
                Ok(method.call1((slf, o))?.unbind())
            }
            _ => Ok(slf.clone().into_any().unbind()),
        }
    }

    /// Pickled by qualified name, as pickle does a function: a decorated
    /// module-level function is found again by that name where it is loaded
    /// (`ProcessPoolExecutor.map`); any other is refused by pickle.
    fn __reduce__(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        Ok(slf.getattr("__qualname__")?.unbind())
    }

    /// The function this calls.
    #[getter]
    fn func(&self, py: Python<'_>) -> Py<PyAny> {
        self.func
            .as_ref()
            .map_or_else(|| py.None(), |f| f.clone_ref(py))
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        if let Some(f) = &self.func {
            visit.call(f)?;
        }
        if let Some(r) = &self.retry {
            visit.call(&r.slow)?;
        }
        Ok(())
    }
}
