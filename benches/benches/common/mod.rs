//! The contenders, built the same way by every bench binary (`compare`,
//! `contended`, `memory`): seawall and the Rust peers a user would pick instead,
//! each with its own default configuration unless a comment says otherwise.
//!
//! Every bench binary uses a different subset of this module.
#![allow(dead_code)]

use std::future::{Ready, ready};
use std::num::NonZeroU32;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use failsafe::CircuitBreaker as _;
use seawall_core::{
    BreakerConfig, CircuitBreaker, CountWindow, Outcome, Priority, RateLimitError, RateLimiter,
    RateLimiterConfig, RetryBudget, RetryBudgetConfig, Semaphore, SemaphoreConfig, State,
    TimeWindow, WindowConfig,
};
use tower::Layer as _;
use tower::Service;
use tower::retry::budget::{Budget as _, TpsBudget};
use tower_resilience_circuitbreaker::{CircuitBreakerLayer, CircuitState, DefaultClassifier};

/// The fake clock of the seawall contenders advances 1 µs per operation: a 1 s
/// bucket of the default time window rotates once per million operations, as it
/// would at a million calls per second. (seawall's caller passes `now`; the
/// peers read `Instant::now()` themselves: see the `Instant::now()` floor row.)
pub const TICK: u64 = 1_000;
/// Where the fake clock starts (ns).
pub const T0: u64 = 1_000_000_000;
/// Permits of every semaphore.
pub const PERMITS: u32 = 100;

// ---------------------------------------------------------------- seawall

/// seawall's default breaker: `BreakerConfig::DEFAULT`, a time window of 10 × 1 s,
/// 50 % failure rate over at least 20 calls, open 30 s.
pub type Breaker = CircuitBreaker<TimeWindow<10>>;
/// The count-window variant (the last 100 calls), the shape of the peers' defaults.
pub type CountBreaker = CircuitBreaker<CountWindow<100>>;

#[must_use]
pub fn seawall_breaker() -> Breaker {
    CircuitBreaker::new(BreakerConfig::DEFAULT).expect("the default configuration is valid")
}

#[must_use]
pub fn seawall_count_breaker() -> CountBreaker {
    CircuitBreaker::new(BreakerConfig {
        window: WindowConfig::Count { size: 100 },
        ..BreakerConfig::DEFAULT
    })
    .expect("a valid configuration")
}

/// Acquire a permit at `now` and record a success (1 µs long) on it.
#[inline]
pub fn seawall_closed<W: seawall_core::SlidingWindow>(b: &CircuitBreaker<W>, now: u64) {
    let p = b.try_acquire(now).expect("a closed breaker admits");
    p.record(Outcome::Success, TICK, now);
}

/// Acquire a permit at `now` and record a failure on it; `Err` when rejected.
#[inline]
pub fn seawall_fail<W: seawall_core::SlidingWindow>(
    b: &CircuitBreaker<W>,
    now: u64,
) -> Result<(), ()> {
    let p = b.try_acquire(now).map_err(|_| ())?;
    p.record(Outcome::Failure, TICK, now);
    Ok(())
}

#[must_use]
pub fn seawall_is_open<W: seawall_core::SlidingWindow>(b: &CircuitBreaker<W>) -> bool {
    b.state() == State::Open
}

/// A semaphore of [`PERMITS`] permits (no priority shedding: the default shares).
#[must_use]
pub fn seawall_semaphore() -> Semaphore<64> {
    Semaphore::new(SemaphoreConfig {
        max_concurrent: PERMITS,
        ..SemaphoreConfig::DEFAULT
    })
    .expect("a valid configuration")
}

#[inline]
pub fn seawall_semaphore_cycle(s: &Semaphore<64>) {
    drop(s.try_acquire(Priority::Normal).expect("a free permit"));
}

/// `RetryBudgetConfig::DEFAULT`: 20 % of requests + 10 retries/s, over 10 s (Finagle).
#[must_use]
pub fn seawall_budget() -> RetryBudget {
    RetryBudget::new(RetryBudgetConfig::DEFAULT).expect("the default configuration is valid")
}

/// One original request deposits, one retry asks to withdraw.
#[inline]
pub fn seawall_budget_cycle(b: &RetryBudget, now: u64) -> bool {
    b.deposit(now);
    b.try_withdraw(now)
}

// ---------------------------------------------------------------- recloser

/// `Recloser::default()`: a ring of the last 100 calls, 50 %, open 30 s.
#[must_use]
pub fn recloser() -> recloser::Recloser {
    recloser::Recloser::default()
}

/// One call through `Recloser::call`: permission check, the call, the record.
#[inline]
pub fn recloser_call(r: &recloser::Recloser, ok: bool) -> Result<(), recloser::Error<()>> {
    r.call(|| if ok { Ok(()) } else { Err(()) })
}

#[must_use]
pub fn recloser_is_open(r: &recloser::Recloser) -> bool {
    matches!(recloser_call(r, true), Err(recloser::Error::Rejected))
}

// ---------------------------------------------------------------- failsafe

/// failsafe's default policy types: an EMA success rate over 30 s (80 %, at
/// least 5 requests) or 5 consecutive failures, each with equal-jittered backoff.
pub type Failsafe = failsafe::StateMachine<
    failsafe::failure_policy::OrElse<
        failsafe::failure_policy::SuccessRateOverTimeWindow<failsafe::backoff::EqualJittered>,
        failsafe::failure_policy::ConsecutiveFailures<failsafe::backoff::EqualJittered>,
    >,
    (),
>;

/// `failsafe::Config::new().build()`.
#[must_use]
pub fn failsafe() -> Failsafe {
    failsafe::Config::new().build()
}

/// The default policy, except that it stays open for at least 60 s once
/// tripped (the default's first open period, 5–10 s, could end inside a
/// measurement of the rejected path).
#[must_use]
pub fn failsafe_long_open() -> Failsafe {
    use failsafe::FailurePolicy as _;
    use failsafe::failure_policy::{SuccessRateOverTimeWindow, consecutive_failures};
    let backoff =
        failsafe::backoff::equal_jittered(Duration::from_secs(120), Duration::from_secs(300));
    failsafe::Config::new()
        .failure_policy(
            SuccessRateOverTimeWindow::default().or_else(consecutive_failures(5, backoff)),
        )
        .build()
}

/// One call through `CircuitBreaker::call`.
#[inline]
pub fn failsafe_call(f: &Failsafe, ok: bool) -> Result<(), failsafe::Error<()>> {
    f.call(|| if ok { Ok(()) } else { Err(()) })
}

#[must_use]
pub fn failsafe_is_open(f: &Failsafe) -> bool {
    !f.is_call_permitted()
}

// ---------------------------------------------------------------- tower-resilience

/// The protected service: answers at once, `Ok` for `true`, `Err` for `false`.
#[derive(Clone, Copy, Debug)]
pub struct Immediate;

impl Service<bool> for Immediate {
    type Response = ();
    type Error = ();
    type Future = Ready<Result<(), ()>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), ()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, ok: bool) -> Self::Future {
        ready(if ok { Ok(()) } else { Err(()) })
    }
}

/// tower-resilience's circuit breaker service with `CircuitBreakerLayer::builder()`
/// defaults: a count window of 100 calls, 50 %, open 30 s.
pub type TowerBreaker =
    tower_resilience_circuitbreaker::CircuitBreaker<Immediate, DefaultClassifier>;

#[must_use]
pub fn tower_breaker() -> TowerBreaker {
    CircuitBreakerLayer::builder()
        .build()
        .expect("the default configuration is valid")
        .layer(Immediate)
}

/// One call through the tower `Service`, driven synchronously: `poll_ready`, then
/// `call`, then poll its (boxed) future, with a no-op waker. Uncontended, both
/// complete on their first poll (the inner service is ready at once and
/// the breaker's `tokio::sync::Mutex` is free). Under contention a poll may be
/// `Pending`: the thread yields to the OS and polls again, as an executor with
/// nothing else to run would. (Spinning instead stalls for whole time slices on
/// a busy machine: the fair mutex hands the lock to a waiter that may not be
/// running.)
///
/// # Panics
/// Only where tower-resilience itself needs a tokio runtime: a `try_lock` miss
/// while the circuit is not closed arms a `tokio::time::Sleep`.
#[inline]
pub fn tower_call(
    svc: &mut TowerBreaker,
    ok: bool,
) -> Result<(), tower_resilience_circuitbreaker::CircuitBreakerError<()>> {
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        match svc.poll_ready(&mut cx) {
            Poll::Ready(Ok(())) => break,
            Poll::Ready(Err(e)) => return Err(e),
            Poll::Pending => std::thread::yield_now(),
        }
    }
    let mut fut = pin!(svc.call(ok));
    loop {
        if let Poll::Ready(r) = fut.as_mut().poll(&mut cx) {
            return r;
        }
        std::thread::yield_now();
    }
}

#[must_use]
pub fn tower_is_open(svc: &TowerBreaker) -> bool {
    svc.state_sync() == CircuitState::Open
}

// ---------------------------------------------------------------- semaphores, budget

#[must_use]
pub fn tokio_semaphore() -> tokio::sync::Semaphore {
    tokio::sync::Semaphore::new(PERMITS as usize)
}

#[inline]
pub fn tokio_semaphore_cycle(s: &tokio::sync::Semaphore) {
    drop(s.try_acquire().expect("a free permit"));
}

#[must_use]
pub fn async_lock_semaphore() -> async_lock::Semaphore {
    async_lock::Semaphore::new(PERMITS as usize)
}

#[inline]
pub fn async_lock_semaphore_cycle(s: &async_lock::Semaphore) {
    drop(s.try_acquire().expect("a free permit"));
}

/// tower's `TpsBudget` with seawall's default parameters: ttl 10 s, 10 retries/s, 20 %.
#[must_use]
pub fn tower_budget() -> TpsBudget {
    TpsBudget::new(Duration::from_secs(10), 10, 0.2)
}

#[inline]
pub fn tower_budget_cycle(b: &TpsBudget) -> bool {
    b.deposit();
    b.withdraw()
}

// ---------------------------------------------------------------- rate limiters

/// The quota every rate limiter gets for admitted checks: 10⁹ cells per second
/// (T = 1 ns) in bursts of up to 2³² − 1 (τ ≈ 4.3 s). A run never exhausts it:
/// each admission moves the TAT 1 ns, so only 4.3 × 10⁹ checks at one instant
/// would, and every clock here moves at least as fast as the TAT falls behind.
pub const RATE_ADMIT_PER_SEC: u32 = 1_000_000_000;

/// seawall with the admitting quota.
#[must_use]
pub fn seawall_rate_limiter() -> RateLimiter {
    RateLimiter::new(RateLimiterConfig {
        rate: u64::from(RATE_ADMIT_PER_SEC),
        period_ns: 1_000_000_000,
        burst: u32::MAX,
    })
    .expect("a valid configuration")
}

/// seawall with one cell per hour and no burst, its cell taken at `T0`: every
/// check at `T0` is rejected.
#[must_use]
pub fn seawall_rate_limiter_spent() -> RateLimiter {
    let l = RateLimiter::new(RateLimiterConfig {
        rate: 1,
        period_ns: 3_600_000_000_000,
        burst: 1,
    })
    .expect("a valid configuration");
    l.try_acquire(1, T0).expect("a rested limiter admits");
    l
}

/// One check: take one cell at `now`.
#[inline]
pub fn seawall_rate_check(l: &RateLimiter, now: u64) -> Result<(), RateLimitError> {
    l.try_acquire(1, now)
}

/// governor's direct (unkeyed, in-memory) limiter on its default clock
/// (`quanta`, read on every check).
pub type Governor = governor::DefaultDirectRateLimiter;
/// governor's direct limiter on its fake clock (an `Arc<AtomicU64>` that only
/// moves when told): the same check without a clock read.
pub type GovernorFakeClock = governor::RateLimiter<
    governor::state::NotKeyed,
    governor::state::InMemoryState,
    governor::clock::FakeRelativeClock,
    governor::middleware::NoOpMiddleware<governor::nanos::Nanos>,
>;

fn governor_admitting_quota() -> governor::Quota {
    governor::Quota::per_second(NonZeroU32::new(RATE_ADMIT_PER_SEC).expect("non-zero"))
        .allow_burst(NonZeroU32::MAX)
}

fn governor_spent_quota() -> governor::Quota {
    governor::Quota::per_hour(NonZeroU32::MIN)
}

/// governor with the admitting quota, on its default clock.
#[must_use]
pub fn governor() -> Governor {
    governor::RateLimiter::direct(governor_admitting_quota())
}

/// governor with the admitting quota, on a fake clock that stands still.
#[must_use]
pub fn governor_fake_clock() -> GovernorFakeClock {
    governor::RateLimiter::direct_with_clock(
        governor_admitting_quota(),
        governor::clock::FakeRelativeClock::default(),
    )
}

/// governor with one cell per hour, its cell taken: every check for the next
/// hour is rejected.
#[must_use]
pub fn governor_spent() -> Governor {
    let g = governor::RateLimiter::direct(governor_spent_quota());
    g.check().expect("a rested limiter admits");
    g
}

/// As [`governor_spent`], on a fake clock that stands still.
#[must_use]
pub fn governor_fake_clock_spent() -> GovernorFakeClock {
    let g = governor::RateLimiter::direct_with_clock(
        governor_spent_quota(),
        governor::clock::FakeRelativeClock::default(),
    );
    g.check().expect("a rested limiter admits");
    g
}

// ---------------------------------------------------------------- trips

/// How many failed calls a fresh instance takes to open: the last one is the
/// "failure record that trips", the ones before it are set-up. Each count is
/// tried on a fresh instance, since `is_open` may itself be a call.
///
/// # Panics
/// When 1 000 failures do not open it.
pub fn failures_to_trip<T>(
    make: impl Fn() -> T,
    mut fail: impl FnMut(&mut T),
    is_open: impl Fn(&T) -> bool,
) -> usize {
    for n in 1..=1_000 {
        let mut x = make();
        for _ in 0..n {
            fail(&mut x);
        }
        if is_open(&x) {
            return n;
        }
    }
    panic!("1 000 failures did not open the breaker")
}
