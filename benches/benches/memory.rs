//! Memory: `size_of` of every seawall core type (all fixed-size, pointer-free,
//! no heap), and what one instance of each peer costs: the size of its handle
//! plus the heap it allocates when constructed, counted by a counting global
//! allocator (bytes requested, so allocator overhead is not included).
//! Results go to `$SEAWALL_BENCH_OUT/memory.json` (default `target/bench-run`).

mod common;

use std::mem::size_of;

use common::{
    async_lock_semaphore, failsafe, governor, recloser, seawall_breaker, seawall_budget,
    seawall_count_breaker, seawall_rate_limiter, seawall_semaphore, tokio_semaphore, tower_breaker,
    tower_budget,
};
use seawall_benches::{CountingAlloc, allocations};
use seawall_core::{
    Backoff, BackoffState, BreakerConfig, CircuitBreaker, CountWindow, Deadline, Health,
    KeyedRateLimiter, Permit, PermitToken, RateLimiter, RetryBudget, RetryPolicy, RetryThrottle,
    Semaphore, SemaphorePermit, SplitMix64, TimeWindow,
};
use serde_json::{Value, json};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

/// An instance built by `make`: its size, and the heap it allocated (calls, bytes).
fn instance<T>(group: &str, imp: &str, what: &str, make: impl FnOnce() -> T) -> Value {
    let (x, allocs, bytes) = allocations(make);
    let handle = size_of::<T>();
    drop(x);
    if imp.starts_with("seawall") {
        assert_eq!(allocs, 0, "{imp}: constructing it allocated ({bytes} B)");
    }
    eprintln!(
        "{group:<14} {imp:<18} {handle:>6} B + heap {bytes:>6} B in {allocs} allocations  ({what})"
    );
    json!({ "group": group, "impl": imp, "what": what, "size_of": handle, "heap_bytes": bytes,
            "heap_allocs": allocs, "total_bytes": handle as u64 + bytes })
}

#[allow(clippy::too_many_lines)] // two flat lists
fn main() {
    let types = vec![
        (
            "CircuitBreaker<TimeWindow<10>>",
            "the default breaker: a 10 × 1 s time window",
            size_of::<CircuitBreaker<TimeWindow<10>>>(),
        ),
        (
            "CircuitBreaker<CountWindow<100>>",
            "",
            size_of::<CircuitBreaker<CountWindow<100>>>(),
        ),
        ("TimeWindow<10>", "", size_of::<TimeWindow<10>>()),
        ("CountWindow<100>", "", size_of::<CountWindow<100>>()),
        ("BreakerConfig", "", size_of::<BreakerConfig>()),
        (
            "Permit<'_, TimeWindow<10>>",
            "",
            size_of::<Permit<'static, TimeWindow<10>>>(),
        ),
        ("PermitToken", "", size_of::<PermitToken>()),
        ("Deadline", "", size_of::<Deadline>()),
        ("RetryBudget", "", size_of::<RetryBudget>()),
        ("RetryThrottle", "", size_of::<RetryThrottle>()),
        ("Backoff", "", size_of::<Backoff>()),
        ("BackoffState", "", size_of::<BackoffState>()),
        ("RetryPolicy", "", size_of::<RetryPolicy>()),
        (
            "Semaphore<64>",
            "64 queue slots (the default)",
            size_of::<Semaphore<64>>(),
        ),
        ("Semaphore<8>", "", size_of::<Semaphore<8>>()),
        (
            "SemaphorePermit<'_, 64>",
            "",
            size_of::<SemaphorePermit<'static, 64>>(),
        ),
        (
            "Health<10>",
            "10 time buckets × 512 latency buckets",
            size_of::<Health<10>>(),
        ),
        ("SplitMix64", "", size_of::<SplitMix64>()),
        ("RateLimiter", "", size_of::<RateLimiter>()),
        (
            "KeyedRateLimiter<128>",
            "128 slots",
            size_of::<KeyedRateLimiter<128>>(),
        ),
    ];
    for (name, note, size) in &types {
        eprintln!("size_of {name:<34} {size:>6} B  {note}");
    }
    let types: Vec<Value> = types
        .into_iter()
        .map(|(t, note, s)| json!({ "type": t, "note": note, "size_of": s }))
        .collect();

    let instances = vec![
        instance(
            "breaker",
            "seawall",
            "default: time window 10 × 1 s",
            seawall_breaker,
        ),
        instance(
            "breaker",
            "seawall_count_window",
            "count window of 100 calls",
            seawall_count_breaker,
        ),
        instance(
            "breaker",
            "recloser",
            "Recloser::default(): ring of 100 calls",
            recloser,
        ),
        instance("breaker", "failsafe", "Config::new().build()", failsafe),
        instance(
            "breaker",
            "tower-resilience",
            "builder() defaults, layer + service",
            tower_breaker,
        ),
        instance(
            "semaphore",
            "seawall",
            "Semaphore<64>, 100 permits",
            seawall_semaphore,
        ),
        instance(
            "semaphore",
            "tokio",
            "tokio::sync::Semaphore::new(100)",
            tokio_semaphore,
        ),
        instance(
            "semaphore",
            "async-lock",
            "async_lock::Semaphore::new(100)",
            async_lock_semaphore,
        ),
        instance(
            "retry_budget",
            "seawall",
            "RetryBudgetConfig::DEFAULT",
            seawall_budget,
        ),
        instance(
            "retry_budget",
            "tower",
            "TpsBudget::new(10 s, 10/s, 20 %)",
            tower_budget,
        ),
        instance(
            "rate_limiter",
            "seawall",
            "RateLimiter, 10⁹ per second, burst 2³² − 1",
            seawall_rate_limiter,
        ),
        instance(
            "rate_limiter",
            "governor",
            "RateLimiter::direct(the same quota)",
            governor,
        ),
    ];

    let dir = seawall_benches::out_dir();
    let path = dir.join("memory.json");
    let doc = json!({ "types": types, "instances": instances });
    std::fs::write(&path, serde_json::to_string_pretty(&doc).expect("JSON"))
        .expect("write memory.json");
    eprintln!("wrote {}", path.display());
}
