//! Fault injection, shared by the built-in upstream (which answers itself) and the
//! proxy (which forwards to a real dependency): added latency, injected errors and
//! hangs, set at run time.
//!
//! Randomness (the built-in upstream's small natural latency, and which calls are
//! injected errors) comes from one generator seeded with `--seed`, drawn in arrival
//! order.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::http::Stopping;
use crate::phases::Faults;

/// The faults in force, and the generator that decides which calls fail.
#[derive(Debug)]
pub struct Injector {
    latency_ms: AtomicU64,
    error_ppm: AtomicU32,
    hang: AtomicBool,
    rng: Mutex<SmallRng>,
    stopping: Stopping,
}

impl Injector {
    /// No faults; `seed` seeds the generator; `stopping` releases hung calls.
    #[must_use]
    pub fn new(seed: u64, stopping: Stopping) -> Self {
        Self {
            latency_ms: AtomicU64::new(0),
            error_ppm: AtomicU32::new(0),
            hang: AtomicBool::new(false),
            rng: Mutex::new(SmallRng::seed_from_u64(seed)),
            stopping,
        }
    }

    /// The faults in force.
    pub fn faults(&self) -> Faults {
        Faults {
            latency_ms: self.latency_ms.load(Ordering::Relaxed),
            error_ppm: self.error_ppm.load(Ordering::Relaxed),
            hang: self.hang.load(Ordering::Relaxed),
        }
    }

    /// Put `f` in force; an error probability over 1 000 000 ppm is refused.
    pub fn set(&self, f: Faults) -> Result<(), String> {
        if f.error_ppm > 1_000_000 {
            return Err("error_ppm must be 0 ..= 1000000".into());
        }
        self.latency_ms.store(f.latency_ms, Ordering::Relaxed);
        self.error_ppm.store(f.error_ppm, Ordering::Relaxed);
        self.hang.store(f.hang, Ordering::Relaxed);
        Ok(())
    }

    /// Apply the faults to one call: wait out `natural` (a latency drawn from
    /// `natural_us`, µs) plus the added latency, or hang until the server stops;
    /// then `Err` with the response to send instead of the real answer (an injected
    /// 503, or "stopping"), or `Ok` to answer for real.
    pub async fn apply(&self, natural_us: (u64, u64)) -> Result<(), Response> {
        let faults = self.faults();
        let (natural, roll) = {
            // A poisoned lock only means another handler panicked mid-draw; the
            // generator's state is still a valid state.
            let mut rng = self
                .rng
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            (
                rng.random_range(natural_us.0..=natural_us.1),
                rng.random_range(0..1_000_000u32),
            )
        };
        if faults.hang {
            // Hang until the server stops: only the callers' own timeouts end this call.
            self.stopping.wait().await;
            return Err(stopping());
        }
        let delay = Duration::from_micros(natural) + Duration::from_millis(faults.latency_ms);
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            () = self.stopping.wait() => return Err(stopping()),
        }
        if roll < faults.error_ppm {
            return Err((
                StatusCode::SERVICE_UNAVAILABLE,
                Json(serde_json::json!({ "error": "injected fault" })),
            )
                .into_response());
        }
        Ok(())
    }
}

fn stopping() -> Response {
    (StatusCode::SERVICE_UNAVAILABLE, "stopping").into_response()
}
