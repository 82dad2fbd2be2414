//! The load: an open-loop generator at a fixed rate, sending each request to both
//! services at the same instant with the same product id and priority, and what
//! it records about each response.
//!
//! Open loop: request `i` is sent at `start + i / rate` whatever happened to the
//! earlier ones (a slow service does not slow the load down, as with real users).

use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use seawall_core::Priority;
use serde::Serialize;

use crate::clock::now_ns;
use crate::http::Client;
use crate::service::{
    ARRIVAL_HEADER, CALLS_HEADER, PRIORITY_HEADER, Product, Source, TIMEOUTS_HEADER, VIA_HEADER,
    Via,
};
use crate::upstream::CALLER_HEADER;

/// Product ids the load asks for: `1 ..= PRODUCT_IDS`, each once per cycle of
/// `PRODUCT_IDS` requests, so the baseline warms the stale cache for all of them
/// within its first second at the default rate.
pub const PRODUCT_IDS: u32 = 50;

/// The load's priority mix, in percent: critical, high, normal, low.
pub const PRIORITY_MIX: [(Priority, u32); 4] = [
    (Priority::Critical, 10),
    (Priority::High, 20),
    (Priority::Normal, 40),
    (Priority::Low, 30),
];

/// The two services under test.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Service {
    /// Only a generous client timeout.
    Unprotected,
    /// seawall's full pipeline.
    Protected,
}

impl Service {
    /// Both, in report order.
    pub const BOTH: [Self; 2] = [Self::Unprotected, Self::Protected];

    /// `unprotected` or `protected`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Unprotected => "unprotected",
            Self::Protected => "protected",
        }
    }
}

/// One request as the load generator saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sample {
    /// Which service.
    pub service: Service,
    /// Phase in which it was sent.
    pub phase: usize,
    /// Its priority (`x-priority`).
    pub priority: Priority,
    /// When it was sent (ns of the experiment clock).
    pub sent_ns: u64,
    /// Until the whole response was read, or the request failed (ns).
    pub latency_ns: u64,
    /// HTTP status; 0 when no response came (connection error or load timeout).
    pub status: u16,
    /// Where the product data came from, for a 200 with a product body.
    pub source: Option<Source>,
    /// Upstream calls the service made for it (its [`CALLS_HEADER`]).
    pub calls: u32,
    /// Of those, attempts ended by their timeout.
    pub timeouts: u32,
    /// What the service did (its [`VIA_HEADER`]).
    pub via: Option<Via>,
    /// When the service received it (its [`ARRIVAL_HEADER`]).
    pub arrival_ns: Option<u64>,
}

impl Sample {
    /// Answered with product data, fresh or stale.
    #[must_use]
    pub fn served(&self) -> bool {
        self.source.is_some()
    }

    /// Answered with fresh product data.
    #[must_use]
    pub fn fresh(&self) -> bool {
        self.source == Some(Source::Primary)
    }

    /// Answered with stale product data from the fallback.
    #[must_use]
    pub fn stale(&self) -> bool {
        self.source == Some(Source::StaleCache)
    }
}

/// Where the load sends one of its two streams, and how it reads the answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Endpoint {
    /// A built-in product service at this base URL (`{base}/products/{id}`),
    /// answering a product body and the trace headers.
    Builtin(String),
    /// A user's service: this URL with `{id}` replaced. A 2xx answer has product
    /// data; it is stale when its JSON body says `"degraded": true` at the top level
    /// or under `_meta`, or `"source": "stale-cache"`.
    Target(String),
    /// The dependency called directly through the proxy: this URL with `{id}`
    /// replaced; a 2xx answer counts as fresh data.
    Direct(String),
}

impl Endpoint {
    fn url(&self, id: u32) -> String {
        match self {
            Self::Builtin(base) => format!("{base}/products/{id}"),
            Self::Target(t) | Self::Direct(t) => t.replace("{id}", &id.to_string()),
        }
    }

    /// Where the data of a 2xx answer with `body` came from, if it has any.
    fn source(&self, body: &[u8]) -> Option<Source> {
        match self {
            Self::Builtin(_) => serde_json::from_slice::<Product>(body)
                .ok()
                .map(|p| p.source),
            Self::Direct(_) => Some(Source::Primary),
            Self::Target(_) => Some(if says_degraded(body) {
                Source::StaleCache
            } else {
                Source::Primary
            }),
        }
    }
}

/// A target's answer is degraded when its JSON body says so.
fn says_degraded(body: &[u8]) -> bool {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(body) else {
        return false;
    };
    v["degraded"] == true || v["_meta"]["degraded"] == true || v["source"] == "stale-cache"
}

/// When request `i` is due, `rate` per second from `start_ns`.
#[must_use]
pub fn due_ns(start_ns: u64, i: u64, rate: u32) -> u64 {
    start_ns + i * 1_000_000_000 / u64::from(rate.max(1))
}

/// The sequence of (product id, priority) the load sends, seeded.
#[derive(Debug)]
pub struct Requests {
    rng: SmallRng,
    cycle: Vec<u32>,
    next: usize,
}

impl Requests {
    /// The sequence for `seed`.
    #[must_use]
    pub fn new(seed: u64) -> Self {
        Self {
            rng: SmallRng::seed_from_u64(seed),
            cycle: (1..=PRODUCT_IDS).collect(),
            next: PRODUCT_IDS as usize,
        }
    }

    /// The next request: each id once per cycle, in a new shuffled order each cycle.
    pub fn next_request(&mut self) -> (u32, Priority) {
        if self.next >= self.cycle.len() {
            self.cycle.shuffle(&mut self.rng);
            self.next = 0;
        }
        let id = self.cycle[self.next];
        self.next += 1;
        let mut roll = self.rng.random_range(0..100);
        let mut priority = Priority::Normal;
        for (p, share) in PRIORITY_MIX {
            if roll < share {
                priority = p;
                break;
            }
            roll -= share;
        }
        (id, priority)
    }
}

/// Send one request to `base` and record what came back; bounded by `timeout_ns`.
pub async fn send(
    client: &Client,
    endpoint: &Endpoint,
    service: Service,
    phase: usize,
    id: u32,
    priority: Priority,
    timeout_ns: u64,
) -> Sample {
    let url = endpoint.url(id);
    let caller = match endpoint {
        Endpoint::Direct(_) => crate::proxy::DIRECT_CALLER,
        _ => "gameday",
    };
    let sent_ns = now_ns();
    let reply = tokio::time::timeout(
        std::time::Duration::from_nanos(timeout_ns),
        client.get(
            &url,
            &[(PRIORITY_HEADER, priority.name()), (CALLER_HEADER, caller)],
        ),
    )
    .await;
    let latency_ns = now_ns().saturating_sub(sent_ns);
    let mut s = Sample {
        service,
        phase,
        priority,
        sent_ns,
        latency_ns,
        status: 0,
        source: None,
        calls: 0,
        timeouts: 0,
        via: None,
        arrival_ns: None,
    };
    if let Ok(Ok(r)) = reply {
        s.status = r.status.as_u16();
        if r.status.is_success() {
            s.source = endpoint.source(&r.body);
        }
        s.calls = r
            .header_u64(CALLS_HEADER)
            .map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX));
        s.timeouts = r
            .header_u64(TIMEOUTS_HEADER)
            .map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX));
        s.via = r.header_str(VIA_HEADER).and_then(Via::parse);
        s.arrival_ns = r.header_u64(ARRIVAL_HEADER);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn due_times_are_exact_at_phase_boundaries() {
        // 80 rps: request 1200 (the first of the second 15 s phase) is due at 15 s.
        assert_eq!(due_ns(7, 1200, 80), 7 + 15_000_000_000);
        assert_eq!(due_ns(0, 1, 80), 12_500_000);
        assert_eq!(due_ns(0, 3, 3), 1_000_000_000);
    }

    #[test]
    fn every_id_once_per_cycle_and_the_mix_holds() {
        let mut r = Requests::new(1);
        let mut counts = [0u32; 4];
        for _ in 0..200 {
            let mut seen: Vec<u32> = (0..PRODUCT_IDS)
                .map(|_| {
                    let (id, p) = r.next_request();
                    counts[p as usize] += 1;
                    id
                })
                .collect();
            seen.sort_unstable();
            assert_eq!(seen, (1..=PRODUCT_IDS).collect::<Vec<_>>());
        }
        // 10 000 draws; each share within 2 percentage points of its target.
        for (p, share) in PRIORITY_MIX {
            let got = counts[p as usize];
            assert!(got.abs_diff(share * 100) <= 200, "{p:?}: {got} of 10000");
        }
    }

    #[test]
    fn what_a_target_answer_says() {
        let t = Endpoint::Target("http://h/p/{id}?x={id}".into());
        assert_eq!(t.url(7), "http://h/p/7?x=7");
        assert_eq!(
            Endpoint::Builtin("http://h".into()).url(7),
            "http://h/products/7"
        );
        for (body, stale) in [
            (&br#"{"id": 1, "degraded": false}"#[..], false),
            (br#"{"id": 1, "degraded": true}"#, true),
            (br#"{"_meta": {"degraded": true}}"#, true),
            (br#"{"_meta": {"degraded": "yes"}}"#, false),
            (br#"{"source": "stale-cache"}"#, true),
            (b"not json", false),
        ] {
            let want = if stale {
                Source::StaleCache
            } else {
                Source::Primary
            };
            assert_eq!(
                t.source(body),
                Some(want),
                "{}",
                String::from_utf8_lossy(body)
            );
        }
        let d = Endpoint::Direct("http://p/inventory/{id}".into());
        assert_eq!(d.source(br#"{"degraded": true}"#), Some(Source::Primary));
        assert_eq!(Endpoint::Builtin(String::new()).source(b"{}"), None);
    }

    #[test]
    fn the_same_seed_gives_the_same_requests() {
        let (mut a, mut b, mut c) = (Requests::new(9), Requests::new(9), Requests::new(10));
        let xa: Vec<_> = (0..100).map(|_| a.next_request()).collect();
        let xb: Vec<_> = (0..100).map(|_| b.next_request()).collect();
        let xc: Vec<_> = (0..100).map(|_| c.next_request()).collect();
        assert_eq!(xa, xb);
        assert_ne!(xa, xc);
    }
}
