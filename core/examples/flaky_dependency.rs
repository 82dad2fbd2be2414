//! Protect a simulated flaky dependency with a circuit breaker and print every
//! state change.
//!
//! The dependency is healthy for 2 s, fails 90 % of calls for 3 s, then recovers.
//! Time is simulated (one call every 10 ms of a virtual monotonic clock), so the
//! run takes a blink and prints the same story every time.
//!
//! ```text
//! cargo run --release --example flaky_dependency -p seawall-core
//! ```

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use seawall_core::time::millis;
use seawall_core::{BreakerConfig, CircuitBreaker, CountWindow, Ratio, WindowConfig};

/// The dependency: fails with a probability that depends on the (virtual) time.
fn call_dependency(now: u64, rng: &mut SmallRng) -> Result<u64, &'static str> {
    let failure_rate = match now {
        t if t < millis(2_000) => 0.02,
        t if t < millis(5_000) => 0.9,
        _ => 0.0,
    };
    let latency = millis(rng.random_range(5..40));
    if rng.random_bool(failure_rate) {
        Err("upstream 503")
    } else {
        Ok(latency)
    }
}

fn main() {
    let breaker: CircuitBreaker<CountWindow<20>> = CircuitBreaker::new(BreakerConfig {
        window: WindowConfig::Count { size: 20 },
        minimum_calls: 10,
        failure_rate_threshold: Some(Ratio::from_percent(50)),
        open_duration_ns: millis(500),
        open_backoff_multiplier: Ratio::from_int(2),
        max_open_duration_ns: Some(millis(2_000)),
        half_open_max_calls: 2,
        half_open_success_threshold: 2,
        ..BreakerConfig::DEFAULT
    })
    .expect("valid configuration");

    let mut rng = SmallRng::seed_from_u64(7);
    let (mut served, mut failed, mut rejected) = (0u32, 0u32, 0u32);
    let mut last_epoch = breaker.epoch();
    // Print a line whenever the epoch moved (every state change starts a new one).
    let mut report = |now: u64| {
        if breaker.epoch() == last_epoch {
            return;
        }
        last_epoch = breaker.epoch();
        let m = breaker.metrics(now);
        let detail = match m.retry_after_ns {
            Some(ns) => format!("  (retry after {} ms)", ns / 1_000_000),
            None => String::new(),
        };
        let rate = m.failure_rate.map_or(0, |r| r.ppm() / 10_000);
        println!(
            "{:>6}ms  {:<10} window failure rate {rate:>3} %{detail}",
            now / 1_000_000,
            m.state.name()
        );
    };
    println!("{:>8}  state", "time");
    println!("{:>6}ms  {}", 0, breaker.state().name());
    for step in 0..700u64 {
        let now = millis(step * 10);
        let Ok(permit) = breaker.try_acquire(now) else {
            rejected += 1;
            report(now);
            continue;
        };
        report(now);
        if let Ok(latency) = call_dependency(now, &mut rng) {
            served += 1;
            permit.success(latency, now + latency);
            report(now + latency);
        } else {
            failed += 1;
            permit.failure(millis(30), now + millis(30));
            report(now + millis(30));
        }
    }
    let t = breaker.metrics(millis(7_000)).totals;
    println!(
        "\n{served} served, {failed} failed, {rejected} rejected fast by the breaker \
         ({} transitions)",
        t.transitions
    );
}
