//! How a Python exception ends a breaker call (DESIGN §1): `failure`, `ignored`,
//! or — when the user's `record_on` does not match it — `success`.
//!
//! Anything that is not an `Exception` (the caller's own cancellation:
//! `asyncio.CancelledError`, `KeyboardInterrupt`, `SystemExit`, `GeneratorExit`,
//! and any other `BaseException`) is always `ignored`: it says nothing about the
//! dependency. Neither is a rate limiter's `RateLimitedError` (DESIGN §9: the
//! call was never made), whatever the classifier says. For an `Exception`, the
//! default is `failure`; a classifier built in Python from `record_on=` /
//! `ignore_on=` decides otherwise.

use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use seawall_core::Outcome;

/// The classification rule of one breaker.
pub enum Classifier {
    /// Every `Exception` is a failure.
    Default,
    /// A Python callable `exc -> int` (0 success, 1 failure, 2 ignored), built by
    /// `seawall._classify` from `record_on` / `ignore_on`.
    Custom(Py<PyAny>),
}

impl Classifier {
    /// The outcome of a call that raised `err`. A classifier that itself fails is
    /// reported as unraisable and the call counts as a failure: the user's own
    /// exception still propagates unchanged.
    pub fn classify(&self, py: Python<'_>, err: &Bound<'_, PyAny>) -> Outcome {
        if !err.is_instance_of::<PyException>() || crate::errors::is_rate_limited(py, err) {
            return Outcome::Ignored;
        }
        match self {
            Self::Default => Outcome::Failure,
            Self::Custom(f) => match f.call1(py, (err,)).and_then(|v| v.extract::<u8>(py)) {
                Ok(0) => Outcome::Success,
                Ok(2) => Outcome::Ignored,
                Ok(_) => Outcome::Failure,
                Err(e) => {
                    e.write_unraisable(py, Some(f.bind(py)));
                    Outcome::Failure
                }
            },
        }
    }
}

/// The outcome's name as Python sees it.
#[must_use]
pub fn outcome_name(o: Outcome) -> &'static str {
    match o {
        Outcome::Success => "success",
        Outcome::Failure => "failure",
        Outcome::Ignored => "ignored",
    }
}

/// An outcome from its name.
#[must_use]
pub fn outcome_from(name: &str) -> Option<Outcome> {
    match name {
        "success" => Some(Outcome::Success),
        "failure" => Some(Outcome::Failure),
        "ignored" => Some(Outcome::Ignored),
        _ => None,
    }
}
