//! `BulkheadPermit`: a held permit, released once.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use pyo3::prelude::*;

use super::semcore::SemCore;
use crate::errors;

/// A held bulkhead permit; released once (`release()`, the end of a `with`
/// block, or when the object is dropped).
#[pyclass(frozen, module = "seawall._native", name = "BulkheadPermit")]
pub struct BulkheadPermit {
    core: Arc<SemCore>,
    /// The permit's id (0 for a local bulkhead).
    id: u64,
    released: AtomicBool,
    /// The process that acquired it: a child made by `fork()` that drops its copy
    /// must not release the parent's permit (an explicit `release()` still may).
    owner: u32,
}

impl BulkheadPermit {
    pub(super) fn new(core: &Arc<SemCore>, id: u64) -> Self {
        Self {
            core: Arc::clone(core),
            id,
            released: AtomicBool::new(false),
            owner: seawall_host::process_id(),
        }
    }
}

#[pymethods]
impl BulkheadPermit {
    /// Give the permit back (to the oldest waiter, or the pool).
    fn release(&self, py: Python<'_>) -> PyResult<()> {
        if self.released.swap(true, Ordering::AcqRel) {
            return Err(errors::permit_used(py, "bulkhead"));
        }
        self.core.release(py, self.id);
        Ok(())
    }

    #[getter]
    fn released(&self) -> bool {
        self.released.load(Ordering::Acquire)
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, py: Python<'_>, _exc: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        if !self.released.swap(true, Ordering::AcqRel) {
            self.core.release(py, self.id);
        }
        false
    }
}

impl Drop for BulkheadPermit {
    fn drop(&mut self) {
        if seawall_host::process_id() == self.owner && !self.released.swap(true, Ordering::AcqRel) {
            Python::attach(|py| self.core.release(py, self.id));
        }
    }
}
