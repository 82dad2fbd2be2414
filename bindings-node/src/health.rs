//! Windowed health (DESIGN §7): a log-linear latency histogram per time bucket
//! (p50 / p90 / p99 within 3.125 %), the error rate, and the seed documents'
//! status rule.

use napi::bindgen_prelude::{Env, External};
use napi_derive::napi;
use seawall_core::{Health, HealthConfig, HealthSnapshot, HealthStatus};
use seawall_host::clock::monotonic_ns;

use crate::boundary::{Result, throwing};
use crate::convert::{config_error, count, ms_to_ns, ns_to_ms, percent};
use crate::handles::{Token, registry};

/// A health configuration (absent = default: 10 buckets of 1 s; degraded above
/// 10 % errors or p99 2 s, unhealthy above 50 % or 5 s).
#[napi(object)]
pub struct NativeHealthConfig {
    /// Buckets in the window (1–60).
    pub buckets: Option<f64>,
    /// Bucket width (ms, ≥ 1).
    pub bucket_ms: Option<f64>,
    /// Percent of errors above which the status is degraded.
    pub degraded_error_rate: Option<f64>,
    /// Percent of errors above which the status is unhealthy.
    pub unhealthy_error_rate: Option<f64>,
    /// p99 (ms) above which the status is degraded.
    pub degraded_p99_ms: Option<f64>,
    /// p99 (ms) above which the status is unhealthy.
    pub unhealthy_p99_ms: Option<f64>,
}

enum Window {
    B10(Box<Health<10>>),
    B60(Box<Health<60>>),
}

macro_rules! each {
    ($w:expr, $h:ident => $e:expr) => {
        match $w {
            Window::B10($h) => $e,
            Window::B60($h) => $e,
        }
    };
}

/// The window now.
#[napi(object)]
pub struct NativeHealthSnapshot {
    /// Calls in the window.
    pub calls: f64,
    /// Failed calls in the window.
    pub errors: f64,
    /// Errors per call, percent (null for an empty window).
    pub error_rate: Option<f64>,
    /// Median latency (ms), null for an empty window.
    pub p50_ms: Option<f64>,
    /// 90th percentile latency (ms).
    pub p90_ms: Option<f64>,
    /// 99th percentile latency (ms).
    pub p99_ms: Option<f64>,
    /// `healthy`, `degraded` or `unhealthy`.
    pub status: String,
}

fn status_name(s: HealthStatus) -> &'static str {
    s.name()
}

fn snapshot_object(s: &HealthSnapshot) -> NativeHealthSnapshot {
    NativeHealthSnapshot {
        calls: s.calls as f64,
        errors: s.errors as f64,
        error_rate: s.error_rate.map(seawall_host::units::percent_of_ratio),
        p50_ms: s.p50_ns.map(ns_to_ms),
        p90_ms: s.p90_ns.map(ns_to_ms),
        p99_ms: s.p99_ns.map(ns_to_ms),
        status: status_name(s.status).to_owned(),
    }
}

registry!(HEALTHS, Window, "health window");

fn free(handle: f64) {
    let _ = HEALTHS.try_with(|r| r.free(handle));
}

fn with<R>(h: f64, f: impl FnOnce(&Window) -> R) -> Result<R> {
    HEALTHS.with(|r| r.with(h, f))
}

/// A health window; returns the token that owns it. Throws on an invalid
/// configuration.
#[napi]
pub fn health_new(env: Env, config: NativeHealthConfig) -> napi::Result<External<Token>> {
    throwing(env, new_health_new(config))
}

fn new_health_new(config: NativeHealthConfig) -> Result<External<Token>> {
    let d = HealthConfig::DEFAULT;
    let cfg = HealthConfig {
        buckets: config.buckets.map_or(d.buckets, count),
        bucket_width_ns: config.bucket_ms.map_or(d.bucket_width_ns, ms_to_ns),
        degraded_error_rate: config
            .degraded_error_rate
            .map_or(d.degraded_error_rate, percent),
        unhealthy_error_rate: config
            .unhealthy_error_rate
            .map_or(d.unhealthy_error_rate, percent),
        degraded_p99_ns: config.degraded_p99_ms.map_or(d.degraded_p99_ns, ms_to_ns),
        unhealthy_p99_ns: config.unhealthy_p99_ms.map_or(d.unhealthy_p99_ns, ms_to_ns),
    };
    let window = if cfg.buckets <= 10 {
        Window::B10(Box::new(Health::new(cfg).map_err(config_error)?))
    } else {
        Window::B60(Box::new(Health::new(cfg).map_err(config_error)?))
    };
    let size = match &window {
        Window::B10(h) => size_of_val(&**h),
        Window::B60(h) => size_of_val(&**h),
    };
    let handle = HEALTHS.with(|r| r.insert(window))?;
    Ok(External::new_with_size_hint(Token::new(handle, free), size))
}

/// One call of `latency_ms` ended (failed or not) at `now_ms` (default: now).
#[napi]
pub fn health_record(h: f64, latency_ms: f64, failed: bool, now_ms: Option<f64>) -> Result<()> {
    let now = now_ms.map_or_else(monotonic_ns, ms_to_ns);
    with(
        h,
        |w| each!(w, x => x.record(ms_to_ns(latency_ms), failed, now)),
    )
}

/// The window as of `now_ms` (default: now).
#[napi]
pub fn health_snapshot(h: f64, now_ms: Option<f64>) -> Result<NativeHealthSnapshot> {
    let now = now_ms.map_or_else(monotonic_ns, ms_to_ns);
    with(h, |w| snapshot_object(&each!(w, x => x.snapshot(now))))
}

/// The `percent`-th percentile latency (ms; nearest rank, within 3.125 %), or
/// null for an empty window.
#[napi]
pub fn health_percentile(h: f64, percent: f64, now_ms: Option<f64>) -> Result<Option<f64>> {
    let now = now_ms.map_or_else(monotonic_ns, ms_to_ns);
    let q = crate::convert::percent(percent);
    with(h, |w| each!(w, x => x.quantile(q, now)).map(ns_to_ms))
}
