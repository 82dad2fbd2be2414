//! The HTTP plumbing every part shares: servers on 127.0.0.1 with an ephemeral port
//! that shut down cleanly, and one small client over hyper-util.
//!
//! Everything here bounds its own waiting: a server stop waits at most its grace
//! period, then aborts; a client call is bounded by its caller's timeout.

use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::http::{HeaderMap, Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// Tells a server's handlers that the server is stopping, so a handler that waits
/// on purpose (a hung upstream) returns at once instead of keeping the process alive.
#[derive(Clone, Debug)]
pub struct Stopping(watch::Receiver<bool>);

impl Stopping {
    /// Resolves once the server is stopping (or its owner is gone).
    pub async fn wait(&self) {
        let mut rx = self.0.clone();
        // An error means the sender was dropped: stopping all the same.
        let _ = rx.wait_for(|stop| *stop).await;
    }
}

/// A running server. Stop it with [`Server::stop`].
#[derive(Debug)]
pub struct Server {
    /// Where it listens (127.0.0.1, an ephemeral port).
    pub addr: SocketAddr,
    stop: watch::Sender<bool>,
    task: JoinHandle<io::Result<()>>,
}

impl Server {
    /// Bind 127.0.0.1 on an ephemeral port and serve the router that `make` builds
    /// (it gets the [`Stopping`] signal for its handlers).
    pub async fn start(make: impl FnOnce(Stopping) -> Router) -> io::Result<Self> {
        Self::start_on(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)), make).await
    }

    /// As [`Server::start`], bound to `addr` (port 0: an ephemeral one).
    pub async fn start_on(
        addr: SocketAddr,
        make: impl FnOnce(Stopping) -> Router,
    ) -> io::Result<Self> {
        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let (stop, rx) = watch::channel(false);
        let router = make(Stopping(rx.clone()));
        let stopping = Stopping(rx);
        let task = tokio::spawn(async move {
            axum::serve(listener, router)
                .with_graceful_shutdown(async move { stopping.wait().await })
                .await
        });
        Ok(Self { addr, stop, task })
    }

    /// `http://127.0.0.1:PORT`.
    #[must_use]
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Stop accepting, let in-flight requests finish for at most `grace`, then abort
    /// whatever is left. `true` when it stopped gracefully.
    pub async fn stop(self, grace: Duration) -> bool {
        let _ = self.stop.send(true);
        let mut task = self.task;
        match tokio::time::timeout(grace, &mut task).await {
            Ok(Ok(Ok(()))) => true,
            Ok(_) => false,
            Err(_) => {
                task.abort();
                false
            }
        }
    }
}

/// An HTTP/1 client with a connection pool (plain HTTP on loopback only; no proxy,
/// no TLS). Cheap to clone.
#[derive(Clone, Debug)]
pub struct Client(HyperClient<HttpConnector, Full<Bytes>>);

/// What came back.
#[derive(Debug)]
pub struct Reply {
    /// HTTP status.
    pub status: StatusCode,
    /// Response headers.
    pub headers: HeaderMap,
    /// The whole body.
    pub body: Bytes,
}

impl Reply {
    /// Header `name` parsed as a `u64`, if present and numeric.
    #[must_use]
    pub fn header_u64(&self, name: &str) -> Option<u64> {
        self.headers.get(name)?.to_str().ok()?.parse().ok()
    }

    /// Header `name` as text, if present and visible ASCII.
    #[must_use]
    pub fn header_str(&self, name: &str) -> Option<&str> {
        self.headers.get(name)?.to_str().ok()
    }
}

impl Default for Client {
    fn default() -> Self {
        Self::new()
    }
}

impl Client {
    /// A client whose idle connections are kept 30 s.
    #[must_use]
    pub fn new() -> Self {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        Self(
            HyperClient::builder(TokioExecutor::new())
                .pool_idle_timeout(Duration::from_secs(30))
                .build(connector),
        )
    }

    /// `GET url` with extra `headers`. Not bounded in time: callers wrap it in a
    /// timeout (the services use their deadline or client timeout).
    pub async fn get(&self, url: &str, headers: &[(&str, &str)]) -> Result<Reply, String> {
        self.send(Method::GET, url, headers, Bytes::new()).await
    }

    /// `PUT url` with a JSON body.
    pub async fn put_json(&self, url: &str, body: Vec<u8>) -> Result<Reply, String> {
        let headers = [("content-type", "application/json")];
        self.send(Method::PUT, url, &headers, Bytes::from(body))
            .await
    }

    /// `method url` with `headers` (every one, as given) and `body`: what the
    /// proxy forwards. Not bounded in time.
    pub async fn forward(
        &self,
        method: Method,
        url: &str,
        headers: &HeaderMap,
        body: Bytes,
    ) -> Result<Reply, String> {
        let what = format!("{method} {url}");
        let mut req = Request::builder().method(method).uri(url);
        for (k, v) in headers {
            req = req.header(k, v);
        }
        let req = req
            .body(Full::new(body))
            .map_err(|e| format!("{what}: bad request: {e}"))?;
        self.exchange(&what, req).await
    }

    async fn send(
        &self,
        method: Method,
        url: &str,
        headers: &[(&str, &str)],
        body: Bytes,
    ) -> Result<Reply, String> {
        let what = format!("{method} {url}");
        let mut req = Request::builder().method(method).uri(url);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let req = req
            .body(Full::new(body))
            .map_err(|e| format!("{what}: bad request: {e}"))?;
        self.exchange(&what, req).await
    }

    async fn exchange(&self, what: &str, req: Request<Full<Bytes>>) -> Result<Reply, String> {
        let resp = self
            .0
            .request(req)
            .await
            .map_err(|e| format!("{what}: {e}"))?;
        let (parts, body) = resp.into_parts();
        let body = body
            .collect()
            .await
            .map_err(|e| format!("{what}: reading the body: {e}"))?
            .to_bytes();
        Ok(Reply {
            status: parts.status,
            headers: parts.headers,
            body,
        })
    }
}
