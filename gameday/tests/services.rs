//! The services over real loopback HTTP: a hung upstream, bad input, and load
//! shedding by priority. Expected values come from the settings and the pipeline's
//! rules (DESIGN §4–§6, §9), worked out in the comments.

use std::sync::Arc;
use std::time::{Duration, Instant};

use seawall_gameday::http::{Client, Reply};
use seawall_gameday::phases::Faults;
use seawall_gameday::protected::{self, Protected};
use seawall_gameday::service::{
    self, CALLS_HEADER, PRIORITY_HEADER, Product, Source, TIMEOUTS_HEADER, VIA_HEADER,
};
use seawall_gameday::settings::Settings;
use seawall_gameday::upstream;

const ADMIN: Duration = Duration::from_secs(3);

async fn get(c: &Client, url: &str, priority: &str) -> Reply {
    tokio::time::timeout(
        Duration::from_secs(15),
        c.get(url, &[(PRIORITY_HEADER, priority)]),
    )
    .await
    .expect("answered within 15 s")
    .expect("an HTTP answer")
}

fn product(r: &Reply) -> Product {
    serde_json::from_slice(&r.body).expect("a product body")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_upstream_is_cut_off_by_the_deadline_and_does_not_block_shutdown() {
    let settings = Settings::GAMEDAY;
    let up = upstream::start(7).await.unwrap();
    let base = up.base_url();
    let p = Arc::new(Protected::new(settings, base.clone(), 7).unwrap());
    let prot = protected::start(Arc::clone(&p)).await.unwrap();
    let unprot = service::start_unprotected(base.clone(), settings.unprotected_timeout_ns)
        .await
        .unwrap();
    let c = Client::new();
    let url = format!("{}/products/7", prot.base_url());

    // Healthy: fresh, one call.
    let fresh = get(&c, &url, "normal").await;
    assert_eq!(fresh.status, 200);
    let fresh_body = product(&fresh);
    assert_eq!(
        (fresh_body.source, fresh_body.degraded),
        (Source::Primary, false)
    );
    assert_eq!(fresh.header_u64(CALLS_HEADER), Some(1));

    upstream::set(
        &c,
        &base,
        Faults {
            hang: true,
            ..Faults::default()
        },
        ADMIN,
    )
    .await
    .unwrap();
    let t = Instant::now();
    let stale = get(&c, &url, "normal").await;
    let took = t.elapsed();
    // Attempts of 400 ms, 400 ms and what is left of the 1 s deadline, all cut by
    // their timeout (the backoffs, ≤ 20 and ≤ 40 ms, fit in the deadline), then the
    // third failure is the last attempt: the stale copy, marked degraded, at 1 s.
    assert_eq!(stale.status, 200);
    let stale_body = product(&stale);
    assert_eq!(
        (stale_body.source, stale_body.degraded),
        (Source::StaleCache, true)
    );
    assert_eq!(
        (stale_body.stock, stale_body.as_of_ms),
        (fresh_body.stock, fresh_body.as_of_ms)
    );
    assert_eq!(stale.header_u64(CALLS_HEADER), Some(3));
    assert_eq!(stale.header_u64(TIMEOUTS_HEADER), Some(3));
    assert_eq!(stale.header_str(VIA_HEADER), Some("retry-max-attempts"));
    assert!(
        took >= Duration::from_millis(990) && took < Duration::from_millis(1_400),
        "{took:?}"
    );

    // A product never seen has no stale copy: 503, naming why.
    let cold = get(&c, &format!("{}/products/8", prot.base_url()), "normal").await;
    assert_eq!(cold.status, 503);
    let body: serde_json::Value = serde_json::from_slice(&cold.body).unwrap();
    assert_eq!(body["via"], "retry-max-attempts");

    // The unprotected service waits on the hung upstream (10 s client timeout);
    // stopping the upstream releases it at once, so nothing keeps the process alive.
    let waiting = {
        let (c, url) = (c.clone(), format!("{}/products/7", unprot.base_url()));
        tokio::spawn(async move { get(&c, &url, "normal").await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let t = Instant::now();
    assert!(
        up.stop(Duration::from_secs(3)).await,
        "upstream stopped gracefully"
    );
    let r = tokio::time::timeout(Duration::from_secs(3), waiting)
        .await
        .expect("released by the stop")
        .unwrap();
    assert_eq!(r.status, 502);
    assert_eq!(r.header_str(VIA_HEADER), Some("upstream-error"));
    assert!(prot.stop(Duration::from_secs(3)).await);
    assert!(unprot.stop(Duration::from_secs(3)).await);
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    // Every bulkhead permit came back.
    assert_eq!(p.bulkhead.snapshot().active, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_a_clear_client_error() {
    let settings = Settings::GAMEDAY;
    let up = upstream::start(1).await.unwrap();
    let p = Arc::new(Protected::new(settings, up.base_url(), 1).unwrap());
    let prot = protected::start(p).await.unwrap();
    let c = Client::new();
    let base = prot.base_url();

    let r = get(&c, &format!("{base}/products/3"), "urgent").await;
    assert_eq!(r.status, 400);
    let body: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("critical, high, normal or low"),
        "{body}"
    );
    assert_eq!(
        get(&c, &format!("{base}/products/abc"), "low").await.status,
        400
    );
    // Past the catalog: the upstream's 404 passes through, one call, no retry.
    let r = get(&c, &format!("{base}/products/20000"), "low").await;
    assert_eq!(r.status, 404);
    assert_eq!(r.header_u64(CALLS_HEADER), Some(1));
    assert_eq!(r.header_str(VIA_HEADER), Some("not-found"));
    // The upstream's admin endpoint refuses an error rate above 100 %.
    let bad = serde_json::to_vec(&serde_json::json!({
        "latency_ms": 0, "error_ppm": 2_000_000, "hang": false
    }))
    .unwrap();
    let r = c
        .put_json(&format!("{}/faults", up.base_url()), bad)
        .await
        .unwrap();
    assert_eq!(r.status, 422);
    assert!(prot.stop(Duration::from_secs(3)).await);
    assert!(up.stop(Duration::from_secs(3)).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bulkhead_sheds_low_priority_first() {
    let settings = Settings::GAMEDAY;
    let up = upstream::start(2).await.unwrap();
    let base = up.base_url();
    let p = Arc::new(Protected::new(settings, base.clone(), 2).unwrap());
    let prot = protected::start(Arc::clone(&p)).await.unwrap();
    let c = Client::new();
    upstream::set(
        &c,
        &base,
        Faults {
            latency_ms: 300,
            ..Faults::default()
        },
        ADMIN,
    )
    .await
    .unwrap();
    // 60 permits; low's share is 20 %: ⌊60 · 0.2⌋ = 12 low calls at once.
    let low = settings
        .bulkhead
        .shares
        .low
        .scale(u64::from(settings.bulkhead.max_concurrent));
    assert_eq!(low, 12);
    let mut held = Vec::new();
    for id in 1..=low {
        let (c, url) = (c.clone(), format!("{}/products/{id}", prot.base_url()));
        held.push(tokio::spawn(async move { get(&c, &url, "low").await }));
    }
    let t = Instant::now();
    while p.bulkhead.snapshot().active < 12 {
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "{:?}",
            p.bulkhead.snapshot()
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    // The 13th low request is shed at once (no call, no stale copy yet: 503);
    // a critical one is admitted.
    let shed = get(&c, &format!("{}/products/13", prot.base_url()), "low").await;
    assert_eq!(shed.status, 503);
    assert_eq!(shed.header_str(VIA_HEADER), Some("bulkhead-shed"));
    assert_eq!(shed.header_u64(CALLS_HEADER), Some(0));
    let critical = get(&c, &format!("{}/products/14", prot.base_url()), "critical").await;
    assert_eq!(critical.status, 200);
    assert_eq!(critical.header_str(VIA_HEADER), Some("primary"));
    for h in held {
        assert_eq!(h.await.unwrap().status, 200);
    }
    assert_eq!(p.bulkhead.snapshot().active, 0);
    assert!(prot.stop(Duration::from_secs(3)).await);
    assert!(up.stop(Duration::from_secs(3)).await);
}
