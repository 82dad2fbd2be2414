//! The fault-injecting proxy of a gameday against a user's service (`--target`):
//! it stands between the service and its real dependency (`--upstream`), applies
//! the phase's faults with the same [`Injector`] as the built-in upstream, and
//! forwards every call it lets through, method, path, query, headers and body.
//!
//! It counts what the service did to its dependency, per phase: the calls it made
//! and the calls it gave up on (closed the connection before the answer: its
//! timeout fired, or the call was cancelled), so amplification and timeouts are
//! measured without any help from the service. Calls marked
//! `x-caller: gameday-direct` are the gameday's own direct calls (the "direct" row)
//! and are counted apart.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::fault::Injector;
use crate::http::{Client, Server};
use crate::phases::{Faults, PHASES};
use crate::upstream::CALLER_HEADER;

/// The phase index before the first phase (the warm-up): calls then are not counted.
const BEFORE_THE_PHASES: usize = usize::MAX;

/// `x-caller` value of the gameday's own direct calls to the dependency.
pub const DIRECT_CALLER: &str = "gameday-direct";

/// Calls through the proxy in one phase.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PhaseCalls {
    /// Calls the target service made.
    pub target: u64,
    /// Of those, calls it gave up on before the answer.
    pub target_abandoned: u64,
    /// The gameday's own direct calls.
    pub direct: u64,
}

#[derive(Debug, Default)]
struct Counts {
    target: AtomicU64,
    target_abandoned: AtomicU64,
    direct: AtomicU64,
}

#[derive(Debug)]
struct Inner {
    faults: Injector,
    client: Client,
    upstream: String,
    phase: AtomicUsize,
    counts: [Counts; PHASES.len()],
}

/// A running proxy.
#[derive(Debug)]
pub struct Proxy {
    inner: Arc<Inner>,
    /// Its server (stop it when done).
    pub server: Server,
}

impl Proxy {
    /// Listen on `addr` and forward to `upstream` (`http://host:port`, no path),
    /// with no faults.
    pub async fn start(addr: SocketAddr, upstream: String, seed: u64) -> std::io::Result<Self> {
        let mut inner = None;
        let server = Server::start_on(addr, |stopping| {
            let state = Arc::new(Inner {
                faults: Injector::new(seed, stopping),
                client: Client::new(),
                upstream: upstream.trim_end_matches('/').to_owned(),
                phase: AtomicUsize::new(BEFORE_THE_PHASES),
                counts: Default::default(),
            });
            inner = Some(Arc::clone(&state));
            Router::new().fallback(forward).with_state(state)
        })
        .await?;
        let inner =
            inner.ok_or_else(|| std::io::Error::other("the proxy's router was not built"))?;
        Ok(Self { inner, server })
    }

    /// `http://ADDR` of the proxy.
    #[must_use]
    pub fn base_url(&self) -> String {
        self.server.base_url()
    }

    /// Enter phase `i` (its index counts the calls from now on) with `faults`.
    pub fn set_phase(&self, i: usize, faults: Faults) -> Result<(), String> {
        self.inner.faults.set(faults)?;
        self.inner.phase.store(i, Ordering::Relaxed);
        Ok(())
    }

    /// Calls counted so far, per phase.
    #[must_use]
    pub fn calls(&self) -> Vec<PhaseCalls> {
        self.inner
            .counts
            .iter()
            .map(|c| PhaseCalls {
                target: c.target.load(Ordering::Relaxed),
                target_abandoned: c.target_abandoned.load(Ordering::Relaxed),
                direct: c.direct.load(Ordering::Relaxed),
            })
            .collect()
    }
}

/// Counts a target call as abandoned unless it was answered: a handler future
/// dropped before its end is the caller closing the connection.
struct Answered<'a> {
    abandoned: Option<&'a AtomicU64>,
}

impl Drop for Answered<'_> {
    fn drop(&mut self) {
        if let Some(n) = self.abandoned {
            n.fetch_add(1, Ordering::Relaxed);
        }
    }
}

async fn forward(
    State(s): State<Arc<Inner>>,
    method: Method,
    uri: Uri,
    mut headers: HeaderMap,
    body: Bytes,
) -> Response {
    let direct = headers
        .get(CALLER_HEADER)
        .is_some_and(|v| v.as_bytes() == DIRECT_CALLER.as_bytes());
    let mut guard = Answered { abandoned: None };
    if let Some(counts) = s.counts.get(s.phase.load(Ordering::Relaxed)) {
        if direct {
            counts.direct.fetch_add(1, Ordering::Relaxed);
        } else {
            counts.target.fetch_add(1, Ordering::Relaxed);
            guard.abandoned = Some(&counts.target_abandoned);
        }
    }
    let reply = relay(&s, method, &uri, &mut headers, body).await;
    guard.abandoned = None;
    reply
}

async fn relay(
    s: &Inner,
    method: Method,
    uri: &Uri,
    headers: &mut HeaderMap,
    body: Bytes,
) -> Response {
    if let Err(injected) = s.faults.apply((0, 0)).await {
        return injected;
    }
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    // The client sets Host for the upstream; hop-by-hop headers are this hop's.
    for h in [header::HOST, header::CONNECTION, header::TRANSFER_ENCODING] {
        headers.remove(h);
    }
    headers.remove("keep-alive");
    match s
        .client
        .forward(method, &format!("{}{path}", s.upstream), headers, body)
        .await
    {
        Ok(r) => {
            let mut resp = (r.status, r.body).into_response();
            // The upstream's headers, not the defaults of a bytes body.
            resp.headers_mut().remove(header::CONTENT_TYPE);
            for (k, v) in &r.headers {
                if k != header::TRANSFER_ENCODING
                    && k != header::CONNECTION
                    && k != header::CONTENT_LENGTH
                {
                    resp.headers_mut().append(k.clone(), v.clone());
                }
            }
            resp
        }
        Err(e) => (
            StatusCode::BAD_GATEWAY,
            axum::Json(serde_json::json!({ "error": format!("proxy: {e}") })),
        )
            .into_response(),
    }
}
