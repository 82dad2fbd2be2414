//! The protected product service: seawall's full pipeline around the same upstream
//! call, in DESIGN §9 order, outermost first:
//!
//! fallback (stale cache) → bulkhead (priority shedding) → circuit breaker →
//! retry (budget, jittered backoff) → per-attempt timeout within the deadline → call.
//!
//! Every request gets a [`Deadline`] when it arrives; the bulkhead wait and every
//! attempt's timeout are cut to what is left of it ([`Deadline::allocate`]), and a
//! retry whose backoff would end past it is not made ([`RetryPolicy::decide`]). So
//! the pipeline ends by the deadline, and the fallback answers at once: from the
//! stale cache (`{"source": "stale-cache", "degraded": true}`), or with a 503 when
//! the cache has nothing for the id.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::get;
use seawall_core::{
    CircuitBreaker, ConfigError, Deadline, FailedAttempt, GiveUp, Priority, RetryBudget,
    RetryDecision, RetryGate, RetryPolicy, SplitMix64, TimeWindow, mix64,
};

use crate::bulkhead::{Bulkhead, Refused};
use crate::clock::now_ns;
use crate::http::{Client, Server};
use crate::service::{PRIORITY_HEADER, Source, Trace, Via, error_body, product_body, respond};
use crate::settings::Settings;
use crate::upstream::{FetchError, Inventory, fetch};

/// The protected service's state: one of each seawall primitive, shared by every
/// request, and the stale cache.
#[derive(Debug)]
pub struct Protected {
    settings: Settings,
    client: Client,
    upstream: String,
    /// Bulkhead with priority load shedding.
    pub bulkhead: Bulkhead,
    /// Circuit breaker (the gameday samples its state for the report).
    pub breaker: CircuitBreaker<TimeWindow<10>>,
    budget: RetryBudget,
    policy: RetryPolicy,
    cache: Mutex<HashMap<u32, Inventory>>,
    seed: u64,
    requests: AtomicU64,
}

impl Protected {
    /// The pipeline for `settings`, calling the upstream at `upstream`; `seed` seeds
    /// the retry jitter. A bad setting is the core's [`ConfigError`] naming it.
    pub fn new(settings: Settings, upstream: String, seed: u64) -> Result<Self, ConfigError> {
        Ok(Self {
            client: Client::new(),
            upstream,
            bulkhead: Bulkhead::new(settings.bulkhead, settings.bulkhead_max_wait_ns)?,
            breaker: CircuitBreaker::new(settings.breaker)?,
            budget: RetryBudget::new(settings.budget)?,
            policy: RetryPolicy::new(settings.retry)?,
            cache: Mutex::new(HashMap::new()),
            settings,
            seed,
            requests: AtomicU64::new(0),
        })
    }

    /// Bulkhead → breaker → retry: the inventory record, or why there is none.
    async fn call(
        &self,
        id: u32,
        p: Priority,
        deadline: &Deadline,
        trace: &mut Trace,
    ) -> Result<Inventory, Via> {
        let _permit = self
            .bulkhead
            .acquire(p, deadline)
            .await
            .map_err(|r| match r {
                Refused::Shed => Via::BulkheadShed,
                Refused::Full => Via::BulkheadFull,
                Refused::Timeout => Via::BulkheadTimeout,
            })?;
        let start = now_ns();
        // Dropped unrecorded (the request itself was dropped), the breaker permit
        // counts as ignored, so it never leaks a half-open probe slot.
        let permit = self
            .breaker
            .try_acquire(start)
            .map_err(|_| Via::BreakerOpen)?;
        let result = self.retry(id, deadline, trace).await;
        let end = now_ns();
        match result {
            // A 404 is an answer: the dependency works.
            Ok(_) | Err(Via::NotFound) => permit.success(end - start, end),
            // No call was made (the deadline was spent before the first attempt):
            // nothing is known about the dependency.
            Err(_) if trace.calls == 0 => permit.ignore(),
            Err(_) => permit.failure(end - start, end),
        }
        result
    }

    /// Retry with budget and jittered backoff; every attempt bounded by what is
    /// left of the deadline.
    async fn retry(
        &self,
        id: u32,
        deadline: &Deadline,
        trace: &mut Trace,
    ) -> Result<Inventory, Via> {
        // Each original request deposits its share of a retry (Finagle), unless the
        // deadline is already spent (no call will be made). So every deposit, like
        // every retry, happens within the request's deadline: the report's budget
        // bound relies on it.
        let now = now_ns();
        if deadline.expired(now) {
            return Err(Via::RetryDeadline);
        }
        self.budget.deposit(now);
        let n = self.requests.fetch_add(1, Ordering::Relaxed);
        let mut rng = SplitMix64::new(mix64(self.seed ^ n));
        let mut attempt = 1;
        let mut previous_delay_ns = 0;
        loop {
            let left = deadline.allocate(self.settings.attempt_timeout_ns, now_ns());
            if left == 0 {
                return Err(Via::RetryDeadline);
            }
            trace.calls += 1;
            let call = fetch(&self.client, &self.upstream, "protected", id);
            match tokio::time::timeout(Duration::from_nanos(left), call).await {
                Ok(Ok(inv)) => return Ok(inv),
                Ok(Err(FetchError::Status(404))) => return Err(Via::NotFound),
                Ok(Err(_)) => {}
                Err(_) => trace.timeouts += 1,
            }
            let now = now_ns();
            let failed = FailedAttempt {
                attempt,
                previous_delay_ns,
                random: rng.next_u64(),
                deadline_remaining_ns: Some(deadline.remaining(now)),
                retry_after_ns: None,
            };
            match self
                .policy
                .decide(&failed, RetryGate::Budget(&self.budget), now)
            {
                RetryDecision::Retry { delay_ns } => {
                    tokio::time::sleep(Duration::from_nanos(delay_ns)).await;
                    previous_delay_ns = delay_ns;
                    attempt += 1;
                }
                RetryDecision::GiveUp(why) => {
                    return Err(match why {
                        GiveUp::Deadline => Via::RetryDeadline,
                        GiveUp::BudgetExhausted => Via::RetryBudget,
                        // `Throttled` comes only from a retry-throttle gate, which
                        // this pipeline does not use.
                        GiveUp::MaxAttempts | GiveUp::Throttled => Via::RetryMaxAttempts,
                    });
                }
            }
        }
    }

    /// The whole pipeline for one request arriving at `arrival_ns`, fallback included.
    pub async fn handle(&self, id: u32, p: Priority, arrival_ns: u64) -> Response {
        let deadline = Deadline::new(self.settings.deadline_ns, arrival_ns);
        let mut trace = Trace::default();
        match self.call(id, p, &deadline, &mut trace).await {
            Ok(inv) => {
                let body = product_body(&inv, Source::Primary);
                self.cache
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(id, inv);
                respond(StatusCode::OK, body, Via::Primary, trace, arrival_ns)
            }
            Err(Via::NotFound) => respond(
                StatusCode::NOT_FOUND,
                error_body(Via::NotFound, "no such product"),
                Via::NotFound,
                trace,
                arrival_ns,
            ),
            Err(via) => {
                let stale = self
                    .cache
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .get(&id)
                    .cloned();
                match stale {
                    Some(inv) => respond(
                        StatusCode::OK,
                        product_body(&inv, Source::StaleCache),
                        via,
                        trace,
                        arrival_ns,
                    ),
                    None => respond(
                        StatusCode::SERVICE_UNAVAILABLE,
                        error_body(via, "upstream unavailable and no stale copy"),
                        via,
                        trace,
                        arrival_ns,
                    ),
                }
            }
        }
    }
}

/// Parse the priority header: absent is `normal`; anything but the four names is
/// an error naming the value.
pub fn priority_of(headers: &HeaderMap) -> Result<Priority, String> {
    let Some(v) = headers.get(PRIORITY_HEADER) else {
        return Ok(Priority::Normal);
    };
    let s = v.to_str().unwrap_or("");
    Priority::ALL
        .into_iter()
        .find(|p| p.name() == s)
        .ok_or_else(|| {
            format!("{PRIORITY_HEADER} must be critical, high, normal or low, not {s:?}")
        })
}

/// Start the protected product service on 127.0.0.1 (ephemeral port).
pub async fn start(protected: Arc<Protected>) -> std::io::Result<Server> {
    Server::start(move |_| {
        Router::new()
            .route("/products/{id}", get(product))
            .with_state(protected)
    })
    .await
}

async fn product(
    State(p): State<Arc<Protected>>,
    Path(id): Path<u32>,
    headers: HeaderMap,
) -> Response {
    let arrival = now_ns();
    match priority_of(&headers) {
        Ok(priority) => p.handle(id, priority, arrival).await,
        Err(e) => respond(
            StatusCode::BAD_REQUEST,
            error_body(Via::BadRequest, &e),
            Via::BadRequest,
            Trace::default(),
            arrival,
        ),
    }
}
