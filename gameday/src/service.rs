//! What both product-details services share: the response they send, the headers
//! that report what happened inside, and the unprotected service itself.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::{Deserialize, Serialize};

use crate::clock::now_ns;
use crate::http::{Client, Server};
use crate::upstream::{FetchError, Inventory, fetch};

/// Upstream calls this response took (1 + retries), so amplification is measured.
pub const CALLS_HEADER: &str = "x-upstream-calls";
/// Upstream attempts of this response that ended by timeout.
pub const TIMEOUTS_HEADER: &str = "x-attempt-timeouts";
/// What the service did: see [`Via`].
pub const VIA_HEADER: &str = "x-seawall-via";
/// When the request arrived at the service (ns of the experiment clock).
pub const ARRIVAL_HEADER: &str = "x-arrival-ns";
/// Request priority for load shedding: `critical`, `high`, `normal` (default), `low`.
pub const PRIORITY_HEADER: &str = "x-priority";

/// Where the data in a product response came from (DESIGN §9).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    /// A fresh answer from the upstream.
    Primary,
    /// The last good answer for this id, served by the fallback.
    StaleCache,
}

/// The product-details response body.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Product {
    /// Product id.
    pub id: u32,
    /// Display name.
    pub name: String,
    /// Units in stock, from the inventory upstream.
    pub stock: u32,
    /// When the upstream produced the inventory record (ms of the experiment clock).
    pub as_of_ms: u64,
    /// `primary` or `stale-cache`.
    pub source: Source,
    /// True when the answer is not fresh (a fallback served it).
    pub degraded: bool,
}

impl Product {
    /// The product page for an inventory record from `source`.
    #[must_use]
    pub fn new(inv: &Inventory, source: Source) -> Self {
        Self {
            id: inv.id,
            name: format!("Product {}", inv.id),
            stock: inv.stock,
            as_of_ms: inv.as_of_ms,
            source,
            degraded: source != Source::Primary,
        }
    }
}

/// What a service did with a request, sent in [`VIA_HEADER`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Via {
    /// The upstream answered (possibly after retries).
    Primary,
    /// The upstream has no such product (404, passed through; not a failure).
    NotFound,
    /// Bulkhead: the request's priority share was used up (load shedding).
    BulkheadShed,
    /// Bulkhead: every permit taken and no room to wait.
    BulkheadFull,
    /// Bulkhead: waited in the queue until its wait limit or the deadline.
    BulkheadTimeout,
    /// The circuit breaker refused the call (open, or half-open with its probes out).
    BreakerOpen,
    /// Retry gave up: every attempt failed.
    RetryMaxAttempts,
    /// Retry gave up: no time left in the deadline for another attempt.
    RetryDeadline,
    /// Retry gave up: the retry budget refused the retry.
    RetryBudget,
    /// Unprotected: the upstream answered with an error.
    UpstreamError,
    /// Unprotected: the client timeout fired.
    UpstreamTimeout,
    /// The request itself was malformed (a bad priority header).
    BadRequest,
}

impl Via {
    /// Every value, in the order reports list them.
    pub const ALL: [Self; 12] = [
        Self::Primary,
        Self::NotFound,
        Self::BulkheadShed,
        Self::BulkheadFull,
        Self::BulkheadTimeout,
        Self::BreakerOpen,
        Self::RetryMaxAttempts,
        Self::RetryDeadline,
        Self::RetryBudget,
        Self::UpstreamError,
        Self::UpstreamTimeout,
        Self::BadRequest,
    ];

    /// The header value.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Primary => "primary",
            Self::NotFound => "not-found",
            Self::BulkheadShed => "bulkhead-shed",
            Self::BulkheadFull => "bulkhead-full",
            Self::BulkheadTimeout => "bulkhead-timeout",
            Self::BreakerOpen => "breaker-open",
            Self::RetryMaxAttempts => "retry-max-attempts",
            Self::RetryDeadline => "retry-deadline",
            Self::RetryBudget => "retry-budget",
            Self::UpstreamError => "upstream-error",
            Self::UpstreamTimeout => "upstream-timeout",
            Self::BadRequest => "bad-request",
        }
    }

    /// Parse a header value.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.name() == s)
    }

    /// The request got past the bulkhead and the breaker into the retry layer, and
    /// so made its deposit in the retry budget.
    #[must_use]
    pub const fn reached_retry(self) -> bool {
        matches!(
            self,
            Self::Primary
                | Self::NotFound
                | Self::RetryMaxAttempts
                | Self::RetryDeadline
                | Self::RetryBudget
        )
    }

    /// A rejection by the bulkhead (shed, full, or waited too long).
    #[must_use]
    pub const fn is_bulkhead_rejection(self) -> bool {
        matches!(
            self,
            Self::BulkheadShed | Self::BulkheadFull | Self::BulkheadTimeout
        )
    }
}

/// What one request cost inside the service.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Trace {
    /// Upstream calls made.
    pub calls: u32,
    /// Of those, attempts ended by their timeout.
    pub timeouts: u32,
}

/// Build the HTTP response: `status` and JSON `body`, with the trace headers.
#[must_use]
pub fn respond(
    status: StatusCode,
    body: serde_json::Value,
    via: Via,
    trace: Trace,
    arrival_ns: u64,
) -> Response {
    let mut resp = (status, Json(body)).into_response();
    let h = resp.headers_mut();
    h.insert(CALLS_HEADER, HeaderValue::from(trace.calls));
    h.insert(TIMEOUTS_HEADER, HeaderValue::from(trace.timeouts));
    h.insert(VIA_HEADER, HeaderValue::from_static(via.name()));
    h.insert(ARRIVAL_HEADER, HeaderValue::from(arrival_ns));
    resp
}

/// The body of a product answer.
#[must_use]
pub fn product_body(inv: &Inventory, source: Source) -> serde_json::Value {
    serde_json::to_value(Product::new(inv, source)).unwrap_or_default()
}

/// An error body naming what happened.
#[must_use]
pub fn error_body(via: Via, detail: &str) -> serde_json::Value {
    serde_json::json!({ "error": detail, "via": via.name() })
}

/// The unprotected service: calls the upstream once per request, with nothing
/// between but a generous client timeout.
#[derive(Debug)]
struct Unprotected {
    client: Client,
    upstream: String,
    timeout: Duration,
}

/// Start the unprotected product service on 127.0.0.1 (ephemeral port).
pub async fn start_unprotected(upstream: String, timeout_ns: u64) -> std::io::Result<Server> {
    let state = Arc::new(Unprotected {
        client: Client::new(),
        upstream,
        timeout: Duration::from_nanos(timeout_ns),
    });
    Server::start(move |_| {
        Router::new()
            .route("/products/{id}", get(unprotected_product))
            .with_state(state)
    })
    .await
}

async fn unprotected_product(State(s): State<Arc<Unprotected>>, Path(id): Path<u32>) -> Response {
    let arrival = now_ns();
    let trace = Trace {
        calls: 1,
        timeouts: 0,
    };
    match tokio::time::timeout(s.timeout, fetch(&s.client, &s.upstream, "unprotected", id)).await {
        Ok(Ok(inv)) => respond(
            StatusCode::OK,
            product_body(&inv, Source::Primary),
            Via::Primary,
            trace,
            arrival,
        ),
        Ok(Err(FetchError::Status(404))) => respond(
            StatusCode::NOT_FOUND,
            error_body(Via::NotFound, "no such product"),
            Via::NotFound,
            trace,
            arrival,
        ),
        Ok(Err(e)) => respond(
            StatusCode::BAD_GATEWAY,
            error_body(Via::UpstreamError, &format!("{e:?}")),
            Via::UpstreamError,
            trace,
            arrival,
        ),
        Err(_) => respond(
            StatusCode::GATEWAY_TIMEOUT,
            error_body(Via::UpstreamTimeout, "upstream timed out"),
            Via::UpstreamTimeout,
            Trace {
                calls: 1,
                timeouts: 1,
            },
            arrival,
        ),
    }
}
