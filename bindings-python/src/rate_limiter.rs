//! The rate limiter at the Python edge (DESIGN §10, GCRA): the native half of
//! `seawall.RateLimiter`. One take is one lock-free step of the core; the Python
//! half (`_rate_limiter.py`) sleeps between takes (`time.sleep`, which releases
//! the GIL, or `asyncio.sleep`), so a waiting caller holds nothing and an
//! interrupted or cancelled wait leaves nothing behind.

use pyo3::prelude::*;
use seawall_core::{RateLimitError, RateLimiterConfig};
use seawall_host::rate_limiter::{
    KeyedConfig, KeyedRateLimiter, RateLimiter as Single, key_of_bytes,
};
use seawall_host::shared::{OpenOptions, RegionError};

use crate::errors;
use crate::time::{Clock, ns_to_secs, secs_to_ns};

/// One limit for every caller, or one per key.
enum Store {
    Single(Single),
    Keyed(KeyedRateLimiter),
}

/// `_native.RateLimiter`: `rate` cells per `period` seconds, bursts of up to
/// `burst` (GCRA, as Rust's `governor`); with `keyed=True` every key (a
/// `u64` the Python half derives from the user's key) gets that limit in one of
/// 4096 slots. With `shared="name"` it lives in
/// `/dev/shm/seawall-rate-limiter-<name>` (keyed: `seawall-keyed-rate-limiter-`),
/// one limiter for every process of the host that opens that name with the same
/// configuration.
#[pyclass(frozen, module = "seawall._native", name = "RateLimiter")]
pub struct RateLimiter {
    store: Store,
    clock: Clock,
    name: Option<String>,
}

fn region_error(py: Python<'_>, name: &str, e: RegionError) -> PyErr {
    match e {
        RegionError::Config(c) => errors::from_config(py, c),
        e @ RegionError::ConfigMismatch { .. } => errors::shared_region(
            py,
            &format!(
                "shared rate limiter {name:?}: {e}; every process must give the same rate, per and burst"
            ),
        ),
        other => errors::shared_region(py, &format!("shared rate limiter {name:?}: {other}")),
    }
}

#[pymethods]
impl RateLimiter {
    #[new]
    #[pyo3(signature = (rate, period, burst, *, keyed=false, name=None, shared=None, clock=None))]
    #[allow(clippy::too_many_arguments, reason = "the Python keyword arguments")]
    fn new(
        py: Python<'_>,
        rate: i64,
        period: f64,
        burst: i64,
        keyed: bool,
        name: Option<String>,
        shared: Option<String>,
        clock: Option<Py<PyAny>>,
    ) -> PyResult<Self> {
        let whole = |field: &str, v: i64| {
            u64::try_from(v).map_err(|_| {
                errors::config_error(
                    py,
                    field,
                    &format!("invalid {field}: must be a whole number >= 1, got {v}"),
                )
            })
        };
        let config = RateLimiterConfig {
            rate: whole("rate", rate)?,
            period_ns: secs_to_ns(py, "per", period)?,
            burst: u32::try_from(whole("burst", burst)?).map_err(|_| {
                errors::config_error(
                    py,
                    "burst",
                    &format!("invalid burst: must be at most {}, got {burst}", u32::MAX),
                )
            })?,
        };
        let store = if keyed {
            let kc = KeyedConfig {
                limiter: config,
                key_seed: seawall_host::entropy::entropy(),
            };
            Store::Keyed(match &shared {
                // Attaching may wait for another process that is creating the region.
                Some(region) => py
                    .detach(|| KeyedRateLimiter::open_shared(region, &kc, &OpenOptions::default()))
                    .map_err(|e| region_error(py, region, e))?,
                None => KeyedRateLimiter::new(&kc).map_err(|e| errors::from_config(py, e))?,
            })
        } else {
            Store::Single(match &shared {
                Some(region) => py
                    .detach(|| Single::open_shared(region, &config, &OpenOptions::default()))
                    .map_err(|e| region_error(py, region, e))?,
                None => Single::new(&config).map_err(|e| errors::from_config(py, e))?,
            })
        };
        Ok(Self {
            store,
            clock: Clock::new(clock),
            name: name.or(shared),
        })
    }

    /// Take `n` cells now (for the key when keyed, where a key is required:
    /// `key`, a whole number, or `key_bytes`, mapped by
    /// `seawall_host::rate_limiter::key_of_bytes` with the limiter's seed), all
    /// or none: `None` when admitted, else the seconds after which the same
    /// request conforms (unless others take cells first; `inf` when never).
    /// `n` outside `1 ..= burst` is a `SeawallConfigError` naming `n`.
    #[pyo3(signature = (n=1, key=None, key_bytes=None))]
    fn take(
        &self,
        py: Python<'_>,
        n: i64,
        key: Option<u64>,
        key_bytes: Option<&[u8]>,
    ) -> PyResult<Option<f64>> {
        if n < 0 {
            // Clamped to 0 it would be refused as "must not be zero", which is
            // not what the caller passed.
            let burst = self.config().burst;
            return Err(errors::config_error(
                py,
                "n",
                &format!("invalid n: must be between 1 and {burst}, got {n}"),
            ));
        }
        let cells = u32::try_from(n).unwrap_or(u32::MAX);
        let now = self.clock.now(py)?;
        let key = match (&self.store, key_bytes) {
            (Store::Keyed(k), Some(b)) => Some(key_of_bytes(k.key_seed(), b)),
            (_, Some(_)) => Some(0),
            (_, None) => key,
        };
        let taken = match (&self.store, key) {
            (Store::Single(l), None) => l.try_acquire_checked(cells, now),
            (Store::Keyed(k), Some(key)) => k.try_acquire_checked(key, cells, now),
            (Store::Single(_), Some(_)) => {
                return Err(errors::seawall(
                    py,
                    "this rate limiter is not keyed: pass keyed=True to limit each key",
                ));
            }
            (Store::Keyed(_), None) => {
                return Err(errors::seawall(
                    py,
                    "a keyed rate limiter needs key= (or use for_key(key))",
                ));
            }
        };
        let Ok(taken) = taken else {
            return Err(errors::shared_region(
                py,
                &format!(
                    "rate limiter {:?}: its shared region holds values its configuration never gives (overwritten by another process?)",
                    self.name.as_deref().unwrap_or("")
                ),
            ));
        };
        match taken {
            Ok(()) => Ok(None),
            Err(RateLimitError::Rejected { retry_after_ns }) => {
                Ok(Some(if retry_after_ns == u64::MAX {
                    f64::INFINITY
                } else {
                    ns_to_secs(retry_after_ns)
                }))
            }
            Err(RateLimitError::InvalidCells(e)) => Err(errors::config_error(
                py,
                "n",
                &e.to_string().replacen("rate_limiter.n", "n", 1),
            )),
        }
    }

    /// `{"admitted", "rejected", "cells"}`: takes admitted and refused, and
    /// the cells admitted takes spent, since the limiter was made: of every
    /// process for a shared limiter (its region holds them).
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
        let t = match &self.store {
            Store::Single(l) => l.totals(),
            Store::Keyed(k) => k.totals(),
        };
        let d = pyo3::types::PyDict::new(py);
        d.set_item("admitted", t.admitted)?;
        d.set_item("rejected", t.rejected)?;
        d.set_item("cells", t.cells)?;
        Ok(d)
    }

    /// Cells per period.
    #[getter]
    fn rate(&self) -> u64 {
        self.config().rate
    }

    /// The period in seconds.
    #[getter]
    fn period(&self) -> f64 {
        ns_to_secs(self.config().period_ns)
    }

    /// Cells a rested limiter gives at once.
    #[getter]
    fn burst(&self) -> u32 {
        self.config().burst
    }

    /// Whether every key has its own limit.
    #[getter]
    fn keyed(&self) -> bool {
        matches!(self.store, Store::Keyed(_))
    }

    #[getter]
    fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// Whether the limiter lives in a region shared by the host's processes.
    #[getter]
    fn shared(&self) -> bool {
        match &self.store {
            Store::Single(l) => l.is_shared(),
            Store::Keyed(k) => k.is_shared(),
        }
    }

    /// Whether this process created the shared region (always true locally).
    #[getter]
    fn created(&self) -> bool {
        match &self.store {
            Store::Single(l) => l.created(),
            Store::Keyed(k) => k.created(),
        }
    }

    /// Remove the shared region `name` of a rate limiter (`keyed` for a keyed
    /// one); a missing one is fine.
    #[staticmethod]
    #[pyo3(signature = (name, keyed=false))]
    fn unlink_shared(py: Python<'_>, name: &str, keyed: bool) -> PyResult<()> {
        let r = if keyed {
            KeyedRateLimiter::unlink_shared(name)
        } else {
            Single::unlink_shared(name)
        };
        r.map_err(|e| errors::shared_region(py, &format!("shared rate limiter {name:?}: {e}")))
    }
}

impl RateLimiter {
    fn config(&self) -> &RateLimiterConfig {
        match &self.store {
            Store::Single(l) => l.config(),
            Store::Keyed(k) => k.config(),
        }
    }
}
