//! The fault-injecting proxy over real HTTP: it forwards what it lets through
//! unchanged, injects the phase's faults instead of forwarding, and counts per
//! phase the target's calls, the calls it gave up on, and the direct ones.

use std::net::SocketAddr;
use std::time::Duration;

use seawall_gameday::http::Client;
use seawall_gameday::phases::Faults;
use seawall_gameday::proxy::{DIRECT_CALLER, PhaseCalls, Proxy};
use seawall_gameday::upstream::{self, CALLER_HEADER, Inventory};

const ANY_PORT: ([u8; 4], u16) = ([127, 0, 0, 1], 0);

fn faults(latency_ms: u64, error_ppm: u32) -> Faults {
    Faults {
        latency_ms,
        error_ppm,
        hang: false,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forwards_injects_and_counts_per_phase() {
    let up = upstream::start(1).await.unwrap();
    let proxy = Proxy::start(SocketAddr::from(ANY_PORT), up.base_url(), 1)
        .await
        .unwrap();
    let (c, base) = (Client::new(), proxy.base_url());
    let get = |caller: &'static str| {
        let (c, url) = (c.clone(), format!("{base}/inventory/7?x=1"));
        async move { c.get(&url, &[(CALLER_HEADER, caller)]).await.unwrap() }
    };
    // Before the first phase (the warm-up) nothing is counted.
    assert_eq!(get("svc").await.status, 200);
    assert!(proxy.calls().iter().all(|p| *p == PhaseCalls::default()));

    proxy.set_phase(0, Faults::default()).unwrap();
    let through = get("svc").await;
    let straight = c
        .get(&format!("{}/inventory/7", up.base_url()), &[])
        .await
        .unwrap();
    let a: Inventory = serde_json::from_slice(&through.body).unwrap();
    let b: Inventory = serde_json::from_slice(&straight.body).unwrap();
    assert_eq!((a.id, a.stock), (b.id, b.stock));
    assert_eq!(
        through.headers.get("content-type").unwrap(),
        "application/json"
    );
    assert_eq!(get(DIRECT_CALLER).await.status, 200);

    // Phase 2: every call is an injected 503, never forwarded.
    let before = upstream::calls_so_far(&c, &up.base_url(), Duration::from_secs(3))
        .await
        .unwrap();
    proxy.set_phase(1, faults(0, 1_000_000)).unwrap();
    for _ in 0..3 {
        assert_eq!(get("svc").await.status, 503);
    }
    let after = upstream::calls_so_far(&c, &up.base_url(), Duration::from_secs(3))
        .await
        .unwrap();
    assert_eq!(after, before);

    // Phase 3: +2000 ms; a caller that gives up after 100 ms is counted as such.
    proxy.set_phase(2, faults(2_000, 0)).unwrap();
    let url = format!("{base}/inventory/8");
    assert!(
        tokio::time::timeout(Duration::from_millis(100), c.get(&url, &[]))
            .await
            .is_err()
    );
    // The proxy notices the closed connection when hyper polls it again.
    let mut seen = 0;
    for _ in 0..50 {
        seen = proxy.calls()[2].target_abandoned;
        if seen == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(seen, 1);

    // A bad fault setting is refused and changes nothing.
    assert!(proxy.set_phase(3, faults(0, 1_000_001)).is_err());
    let calls = proxy.calls();
    assert_eq!(
        calls[..3],
        [
            PhaseCalls {
                target: 1,
                target_abandoned: 0,
                direct: 1
            },
            PhaseCalls {
                target: 3,
                target_abandoned: 0,
                direct: 0
            },
            PhaseCalls {
                target: 1,
                target_abandoned: 1,
                direct: 0
            },
        ]
    );
    proxy.server.stop(Duration::from_secs(3)).await;
    up.stop(Duration::from_secs(3)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_dependency_is_a_502_naming_it() {
    // A port nothing listens on: bound, then closed.
    let gone = std::net::TcpListener::bind(SocketAddr::from(ANY_PORT)).unwrap();
    let addr = gone.local_addr().unwrap();
    drop(gone);
    let proxy = Proxy::start(SocketAddr::from(ANY_PORT), format!("http://{addr}"), 1)
        .await
        .unwrap();
    proxy.set_phase(0, Faults::default()).unwrap();
    let r = Client::new()
        .get(&format!("{}/inventory/1", proxy.base_url()), &[])
        .await
        .unwrap();
    assert_eq!(r.status, 502);
    let body = String::from_utf8_lossy(&r.body);
    assert!(
        body.contains("proxy:") && body.contains(&addr.to_string()),
        "{body}"
    );
    proxy.server.stop(Duration::from_secs(3)).await;
}
