//! Health (windowed latency and errors, DESIGN §7) as C and the bindings see it:
//! a core [`Health`](seawall_core::Health) of up to [`HEALTH_MAX_BUCKETS`] time
//! buckets, in this process or shared by every process of the host.
//!
//! ```no_run
//! use seawall_host::health::Health;
//! use seawall_core::HealthConfig;
//!
//! let health = Health::new(&HealthConfig::DEFAULT)?;
//! let now = seawall_host::clock::monotonic_ns();
//! health.record(3_000_000, false, now); // a call of 3 ms that succeeded
//! let s = health.snapshot(now);
//! assert_eq!(s.calls, 1);
//! # Ok::<(), seawall_core::ConfigError>(())
//! ```

use core::mem::MaybeUninit;

use seawall_core::{ConfigError, Field, HealthConfig};

use crate::handle::Handle;
use crate::shared::{Agreement, Shareable};

/// Most time buckets of a window (`buckets` of the configuration): a minute of
/// 1 s buckets.
pub const HEALTH_MAX_BUCKETS: usize = 60;

/// The core window behind a [`Health`].
pub type HealthWindow = seawall_core::Health<HEALTH_MAX_BUCKETS>;

/// A health window in this process or shared.
pub type Health = Handle<HealthWindow>;

/// What every process sharing a health window must agree on: every field.
#[must_use]
pub fn health_agreement(c: &HealthConfig) -> Agreement {
    let HealthConfig {
        buckets,
        bucket_width_ns,
        degraded_error_rate,
        unhealthy_error_rate,
        degraded_p99_ns,
        unhealthy_p99_ns,
    } = *c;
    Agreement::new(b"health\0\0")
        .value(Field::HealthBuckets, u64::from(buckets))
        .value(Field::HealthBucketWidth, bucket_width_ns)
        .value(Field::DegradedErrorRate, degraded_error_rate.ppm())
        .value(Field::UnhealthyErrorRate, unhealthy_error_rate.ppm())
        .value(Field::DegradedP99, degraded_p99_ns)
        .value(Field::UnhealthyP99, unhealthy_p99_ns)
}

// SAFETY: `Health` is repr(C), pointer-free, needs no Drop; its configuration is
// written only by `new`, every counter is an atomic.
unsafe impl Shareable for HealthWindow {
    const FAMILY: &'static str = "health";
    const LAYOUT_ID: u32 = 0x0401;
    const DESCRIPTION: &'static str = "health window (60 buckets)";
    type Config = HealthConfig;
    fn agreement(config: &HealthConfig) -> Agreement {
        health_agreement(config)
    }
    fn config(&self) -> HealthConfig {
        *Self::config(self)
    }
    fn init(slot: &mut MaybeUninit<Self>, config: &HealthConfig) -> Result<(), ConfigError> {
        // The core builds a window by value: 247 KB, copied on the way (twice in
        // release builds, up to 16 times in debug ones) — more than the stack of
        // many threads (musl's 128 KiB, a Rust test thread in debug). So it is
        // built on a helper thread whose stack holds it, straight into `slot`;
        // only if no thread can be started, on this one.
        let on_helper = std::thread::scope(|s| {
            let helper = std::thread::Builder::new()
                .name("seawall-health-init".into())
                .stack_size(BUILD_STACK)
                .spawn_scoped(s, || build_here(slot, config))
                .ok()?;
            Some(
                helper
                    .join()
                    .unwrap_or_else(|p| std::panic::resume_unwind(p)),
            )
        });
        on_helper.unwrap_or_else(|| build_here(slot, config))
    }
}

/// Build a window on this thread. Out of line, so the frame that holds the
/// window by value exists only when this runs (a debug build reserves stack for
/// every temporary of a function, taken or not).
#[inline(never)]
fn build_here(
    slot: &mut MaybeUninit<HealthWindow>,
    config: &HealthConfig,
) -> Result<(), ConfigError> {
    slot.write(HealthWindow::new(*config)?);
    Ok(())
}

/// Stack of the thread that builds a window: room for the copies of a debug build.
const BUILD_STACK: usize = 16 << 20;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_is_built_from_a_thread_with_a_small_stack() {
        // musl's default 128 KiB: half a window; building it by value here would
        // overflow.
        let calls = std::thread::Builder::new()
            .stack_size(128 << 10)
            .spawn(|| {
                let h = Health::new(&HealthConfig::DEFAULT).unwrap();
                h.record(5, true, 7);
                h.record(5, false, 7);
                let s = h.snapshot(7);
                (s.calls, s.errors)
            })
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(calls, (2, 1));
        let e = Health::new(&HealthConfig {
            buckets: 61,
            ..HealthConfig::DEFAULT
        })
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid health.buckets: must be between 1 and 60"
        );
    }
}
