//! A shared breaker's permit table comes in a few sizes: each admits exactly so
//! many permits at once, and sharers must agree on it.

// The loom build compiles only the table models (tests/loom_*.rs).
#![cfg(not(loom))]
use std::time::Duration;

use seawall_core::{BreakerConfig, Field, Outcome, WindowConfig};
use seawall_host::breaker::{AcquireError, Breaker, PermitSlots};
use seawall_host::shared::{OpenOptions, RegionError};

fn quick() -> OpenOptions {
    OpenOptions {
        init_timeout: Duration::from_millis(200),
    }
}

fn name(tag: &str) -> String {
    format!("rust-slots-{}-{tag}", std::process::id())
}

fn count(size: u32) -> BreakerConfig {
    BreakerConfig {
        window: WindowConfig::Count { size },
        ..BreakerConfig::DEFAULT
    }
}

fn differing(e: RegionError) -> (Vec<Field>, String) {
    let message = e.to_string();
    match e {
        RegionError::ConfigMismatch { differing, .. } => (differing, message),
        other => panic!("not a configuration mismatch: {other}"),
    }
}

#[test]
fn the_smallest_table_admits_256_permits_and_refuses_the_257th() {
    let n = name("admit");
    Breaker::unlink_shared(&n).unwrap();
    let slots = PermitSlots::new(256).unwrap();
    let b = Breaker::open_shared_with_slots(&n, &count(100), slots, &quick()).unwrap();
    assert_eq!(b.permit_slots(), Some(256));
    let held: Vec<_> = (0..256).map(|_| b.try_acquire(0).unwrap()).collect();
    assert_eq!(b.try_acquire(0), Err(AcquireError::PermitsExhausted));
    // A second handle on the same region sees the same full table.
    let other = Breaker::open_shared_with_slots(&n, &count(100), slots, &quick()).unwrap();
    assert_eq!(other.try_acquire(0), Err(AcquireError::PermitsExhausted));
    assert_eq!(b.metrics(0).permits_outstanding, Some(256));
    // One recorded frees one slot, and only one.
    b.record(held[0], Outcome::Success, 0, 0).unwrap();
    let again = other.try_acquire(0).unwrap();
    assert_eq!(b.try_acquire(0), Err(AcquireError::PermitsExhausted));
    for p in held.into_iter().skip(1).chain([again]) {
        b.record(p, Outcome::Success, 0, 0).unwrap();
    }
    assert_eq!(b.metrics(0).permits_outstanding, Some(0));
    Breaker::unlink_shared(&n).unwrap();
}

#[test]
fn the_default_table_has_4096_slots() {
    let n = name("default");
    Breaker::unlink_shared(&n).unwrap();
    let b = Breaker::open_shared(&n, &count(100), &quick()).unwrap();
    assert_eq!(b.permit_slots(), Some(4096));
    let same = Breaker::open_shared_with_slots(&n, &count(100), PermitSlots::S4096, &quick());
    assert!(same.is_ok());
    Breaker::unlink_shared(&n).unwrap();
}

#[test]
fn an_opener_of_another_size_is_told_permit_slots_differ() {
    let n = name("mismatch");
    Breaker::unlink_shared(&n).unwrap();
    let _a = Breaker::open_shared_with_slots(&n, &count(100), PermitSlots::S256, &quick()).unwrap();
    let (fields, message) = differing(Breaker::open_shared(&n, &count(100), &quick()).unwrap_err());
    assert_eq!(fields, [Field::PermitSlots]);
    assert!(
        message.starts_with(
            "region was created with another configuration: breaker.permit_slots differs"
        ),
        "{message}"
    );
    // Another field as well: both named, in the configuration's order.
    let e = Breaker::open_shared_with_slots(&n, &count(50), PermitSlots::S32768, &quick());
    assert_eq!(
        differing(e.unwrap_err()).0,
        [Field::WindowSize, Field::PermitSlots]
    );
    Breaker::unlink_shared(&n).unwrap();
}

#[test]
fn another_window_kind_of_another_size_is_still_a_layout_mismatch() {
    let n = name("kind");
    Breaker::unlink_shared(&n).unwrap();
    let time = BreakerConfig {
        window: WindowConfig::Time {
            buckets: 10,
            bucket_width_ns: 1_000_000_000,
        },
        ..BreakerConfig::DEFAULT
    };
    let _a = Breaker::open_shared_with_slots(&n, &time, PermitSlots::S256, &quick()).unwrap();
    let e = Breaker::open_shared(&n, &count(100), &quick()).unwrap_err();
    assert!(
        matches!(e, RegionError::LayoutMismatch { found: 0x0132, .. }),
        "{e}"
    );
    Breaker::unlink_shared(&n).unwrap();
}

#[test]
fn a_size_that_is_not_offered_names_permit_slots() {
    for n in [0, 100, 1000, 4095, 65536, 1 << 20] {
        let e = PermitSlots::new(n).unwrap_err();
        assert_eq!(e.field, Field::PermitSlots);
        assert_eq!(
            e.to_string(),
            "invalid breaker.permit_slots: must be one of 256, 4096, 32768, 262144"
        );
    }
}
