//! The upstream: an inventory service (`GET /inventory/{id}`) whose added latency,
//! error probability and hang are set at run time (`PUT /faults`), the dependency
//! that fails during the gameday.
//!
//! The faults are [`Injector`]'s, seeded with `--seed`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, put};
use axum::{Json, Router};
use seawall_core::mix64;
use serde::{Deserialize, Serialize};

use crate::clock::now_ns;
use crate::fault::Injector;
use crate::http::{Client, Server};
use crate::phases::Faults;

/// Product ids the upstream knows: `1 ..= CATALOG_SIZE`; others are 404.
pub const CATALOG_SIZE: u32 = 10_000;
/// The upstream's own latency before any injected fault: `U[1, 3]` ms, like a
/// fast database lookup.
const NATURAL_LATENCY_US: (u64, u64) = (1_000, 3_000);
/// Header naming who calls (`protected` / `unprotected`), so the upstream counts
/// each service's calls itself: the amplification is measured on both ends.
pub const CALLER_HEADER: &str = "x-caller";

/// One inventory record, as the upstream serves it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Inventory {
    /// Product id.
    pub id: u32,
    /// Units in stock.
    pub stock: u32,
    /// When the upstream produced this record (ms on the experiment clock).
    pub as_of_ms: u64,
}

/// Calls the upstream received, by caller.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UpstreamCalls {
    /// From the protected service.
    pub protected: u64,
    /// From the unprotected service.
    pub unprotected: u64,
    /// From anyone else.
    pub other: u64,
}

/// Shared state of the upstream's handlers.
#[derive(Debug)]
struct Inner {
    faults: Injector,
    protected: AtomicU64,
    unprotected: AtomicU64,
    other: AtomicU64,
}

impl Inner {
    fn calls(&self) -> UpstreamCalls {
        UpstreamCalls {
            protected: self.protected.load(Ordering::Relaxed),
            unprotected: self.unprotected.load(Ordering::Relaxed),
            other: self.other.load(Ordering::Relaxed),
        }
    }
}

/// Start the upstream on 127.0.0.1 (ephemeral port) with no faults.
pub async fn start(seed: u64) -> std::io::Result<Server> {
    Server::start(move |stopping| {
        let inner = Arc::new(Inner {
            faults: Injector::new(seed, stopping),
            protected: AtomicU64::new(0),
            unprotected: AtomicU64::new(0),
            other: AtomicU64::new(0),
        });
        Router::new()
            .route("/inventory/{id}", get(inventory))
            .route("/faults", put(set_faults).get(get_faults))
            .route("/calls", get(calls))
            .with_state(inner)
    })
    .await
}

async fn inventory(
    State(s): State<Arc<Inner>>,
    Path(id): Path<u32>,
    headers: HeaderMap,
) -> Response {
    match headers.get(CALLER_HEADER).and_then(|v| v.to_str().ok()) {
        Some("protected") => &s.protected,
        Some("unprotected") => &s.unprotected,
        _ => &s.other,
    }
    .fetch_add(1, Ordering::Relaxed);
    if let Err(injected) = s.faults.apply(NATURAL_LATENCY_US).await {
        return injected;
    }
    if id == 0 || id > CATALOG_SIZE {
        return (
            StatusCode::NOT_FOUND,
            Json(serde_json::json!({ "error": format!("no product {id}") })),
        )
            .into_response();
    }
    Json(Inventory {
        id,
        stock: stock_of(id),
        as_of_ms: now_ns() / 1_000_000,
    })
    .into_response()
}

/// A stock level that is the same for an id every time (so a stale answer and a
/// fresh one agree, and only `as_of_ms` tells them apart).
fn stock_of(id: u32) -> u32 {
    (mix64(u64::from(id)) % 500) as u32
}

async fn set_faults(State(s): State<Arc<Inner>>, Json(f): Json<Faults>) -> Response {
    match s.faults.set(f) {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(e) => (StatusCode::UNPROCESSABLE_ENTITY, e).into_response(),
    }
}

async fn get_faults(State(s): State<Arc<Inner>>) -> Json<Faults> {
    Json(s.faults.faults())
}

async fn calls(State(s): State<Arc<Inner>>) -> Json<UpstreamCalls> {
    Json(s.calls())
}

/// How one call to the upstream went wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FetchError {
    /// The upstream answered with this non-200 status.
    Status(u16),
    /// No answer (connection refused or reset) or a body that is not an inventory record.
    Transport(String),
}

/// `GET {base}/inventory/{id}` as `caller`. Not bounded in time: the caller wraps
/// it in its deadline or timeout.
pub async fn fetch(
    client: &Client,
    base: &str,
    caller: &str,
    id: u32,
) -> Result<Inventory, FetchError> {
    let reply = client
        .get(
            &format!("{base}/inventory/{id}"),
            &[(CALLER_HEADER, caller)],
        )
        .await
        .map_err(FetchError::Transport)?;
    if reply.status != StatusCode::OK {
        return Err(FetchError::Status(reply.status.as_u16()));
    }
    serde_json::from_slice(&reply.body).map_err(|e| FetchError::Transport(format!("bad body: {e}")))
}

/// Set the upstream's faults through its admin endpoint, within `timeout`.
pub async fn set(
    client: &Client,
    base: &str,
    faults: Faults,
    timeout: Duration,
) -> Result<(), String> {
    let body = serde_json::to_vec(&faults).map_err(|e| e.to_string())?;
    let reply = tokio::time::timeout(timeout, client.put_json(&format!("{base}/faults"), body))
        .await
        .map_err(|_| format!("setting upstream faults took over {timeout:?}"))??;
    if reply.status == StatusCode::NO_CONTENT {
        Ok(())
    } else {
        Err(format!("setting upstream faults: HTTP {}", reply.status))
    }
}

/// Calls the upstream has received so far, by caller, within `timeout`.
pub async fn calls_so_far(
    client: &Client,
    base: &str,
    timeout: Duration,
) -> Result<UpstreamCalls, String> {
    let reply = tokio::time::timeout(timeout, client.get(&format!("{base}/calls"), &[]))
        .await
        .map_err(|_| format!("reading upstream calls took over {timeout:?}"))??;
    serde_json::from_slice(&reply.body).map_err(|e| format!("upstream calls: {e}"))
}
