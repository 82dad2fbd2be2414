//! The rate limiter handles in this process or shared: one limiter seen through
//! every handle, a mismatched configuration refused, keyed limiters sharing
//! their creator's seed, sizes worked out from the layouts. Expected cell
//! counts and retry-afters are hand-worked from DESIGN §10 (`T = ⌊period /
//! rate⌋`, `τ = T·(burst − 1)`).

// The loom build compiles only the table models (tests/loom_*.rs).
#![cfg(not(loom))]
use std::time::Duration;

use seawall_core::{Field, RateLimitError, RateLimiterConfig};
use seawall_host::rate_limiter::{
    KEYED_SLOTS, KeyedConfig, KeyedRateLimiter, LimiterTotals, RateLimiter, keyed_agreement,
    limiter_agreement,
};
use seawall_host::shared::{OpenOptions, RegionError};

fn quick() -> OpenOptions {
    OpenOptions {
        init_timeout: Duration::from_millis(200),
    }
}

fn name(tag: &str) -> String {
    format!("rust-rate-{}-{tag}", std::process::id())
}

const MS: u64 = 1_000_000;

/// 10 per second, burst 3: T = 100 ms, τ = 200 ms.
const TEN_PER_SECOND: RateLimiterConfig = RateLimiterConfig {
    rate: 10,
    period_ns: 1_000 * MS,
    burst: 3,
};

fn rejected(retry_after_ns: u64) -> Result<(), RateLimitError> {
    Err(RateLimitError::Rejected { retry_after_ns })
}

#[test]
fn one_limiter_through_two_shared_handles() {
    let n = name("single");
    RateLimiter::unlink_shared(&n).unwrap();
    let a = RateLimiter::open_shared(&n, &TEN_PER_SECOND, &quick()).unwrap();
    let b = RateLimiter::open_shared(&n, &TEN_PER_SECOND, &quick()).unwrap();
    assert!(a.created() && !b.created());
    assert!(a.is_shared() && b.is_shared());
    // Three cells at 0 whichever handle takes them; the fourth waits 100 ms.
    assert_eq!(a.try_acquire(1, 0), Ok(()));
    assert_eq!(b.try_acquire(1, 0), Ok(()));
    assert_eq!(a.try_acquire(1, 0), Ok(()));
    assert_eq!(b.try_acquire(1, 0), rejected(100 * MS));
    assert_eq!(a.theoretical_arrival_ns(), 300 * MS);
    // At 150 ms: next = 400, 400 − 100 − 150 = 150 ≤ 200: admitted through b.
    assert_eq!(b.try_acquire(1, 150 * MS), Ok(()));
    assert_eq!(a.theoretical_arrival_ns(), 400 * MS);
    // A third handle attaching later sees the same state and changes nothing.
    let c = RateLimiter::open_shared(&n, &TEN_PER_SECOND, &quick()).unwrap();
    assert_eq!(c.theoretical_arrival_ns(), 400 * MS);
    assert_eq!(c.config(), &TEN_PER_SECOND);
    RateLimiter::unlink_shared(&n).unwrap();
}

#[test]
fn a_shared_limiter_with_another_config_is_refused() {
    let n = name("mismatch");
    RateLimiter::unlink_shared(&n).unwrap();
    let _a = RateLimiter::open_shared(&n, &TEN_PER_SECOND, &quick()).unwrap();
    for (other, field) in [
        (
            RateLimiterConfig {
                rate: 11,
                ..TEN_PER_SECOND
            },
            Field::Rate,
        ),
        (
            RateLimiterConfig {
                period_ns: 999 * MS,
                ..TEN_PER_SECOND
            },
            Field::RatePeriod,
        ),
        (
            RateLimiterConfig {
                burst: 4,
                ..TEN_PER_SECOND
            },
            Field::Burst,
        ),
    ] {
        let e = RateLimiter::open_shared(&n, &other, &quick()).unwrap_err();
        let RegionError::ConfigMismatch {
            found,
            expected,
            differing,
        } = e
        else {
            panic!("{e}");
        };
        assert_eq!(found, limiter_agreement(&TEN_PER_SECOND).fingerprint());
        assert_eq!(expected, limiter_agreement(&other).fingerprint());
        assert_eq!(differing, [field]);
    }
    // A keyed limiter of the same name is another file, not a mismatch.
    KeyedRateLimiter::unlink_shared(&n).unwrap();
    let k = KeyedRateLimiter::open_shared(
        &n,
        &KeyedConfig {
            limiter: TEN_PER_SECOND,
            key_seed: 1,
        },
        &quick(),
    )
    .unwrap();
    assert!(k.created());
    KeyedRateLimiter::unlink_shared(&n).unwrap();
    RateLimiter::unlink_shared(&n).unwrap();
}

#[test]
fn bad_configs_are_refused_by_name() {
    let e = RateLimiter::new(&RateLimiterConfig {
        burst: 0,
        ..TEN_PER_SECOND
    })
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid rate_limiter.burst: must not be zero"
    );
    let e = RateLimiter::open_shared(
        &name("bad"),
        &RateLimiterConfig {
            rate: 2_000,
            period_ns: 1_000,
            burst: 1,
        },
        &quick(),
    )
    .unwrap_err();
    assert!(matches!(e, RegionError::Config(_)), "{e}");
}

#[test]
fn shared_keyed_limiter_uses_its_creators_seed() {
    let n = name("keyed");
    KeyedRateLimiter::unlink_shared(&n).unwrap();
    let mine = KeyedConfig {
        limiter: TEN_PER_SECOND,
        key_seed: 0x1234,
    };
    let theirs = KeyedConfig {
        key_seed: 0x9999,
        ..mine
    };
    assert_eq!(
        keyed_agreement(&mine).fingerprint(),
        keyed_agreement(&theirs).fingerprint()
    );
    let a = KeyedRateLimiter::open_shared(&n, &mine, &quick()).unwrap();
    let b = KeyedRateLimiter::open_shared(&n, &theirs, &quick()).unwrap();
    assert_eq!(b.key_seed(), 0x1234);
    // Two keys on different slots: each has its own burst of 3, in both handles.
    let k1 = 7;
    let k2 = (0..1000u64)
        .find(|&k| a.slot_of(k) != a.slot_of(k1))
        .unwrap();
    for _ in 0..3 {
        assert_eq!(a.try_acquire(k1, 1, 0), Ok(()));
    }
    assert_eq!(b.try_acquire(k1, 1, 0), rejected(100 * MS));
    assert_eq!(b.try_acquire(k2, 3, 0), Ok(()));
    assert_eq!(a.try_acquire(k2, 1, 0), rejected(100 * MS));
    let e = KeyedRateLimiter::open_shared(
        &n,
        &KeyedConfig {
            limiter: RateLimiterConfig {
                burst: 2,
                ..TEN_PER_SECOND
            },
            key_seed: 0x1234,
        },
        &quick(),
    )
    .unwrap_err();
    assert!(matches!(e, RegionError::ConfigMismatch { .. }), "{e}");
    KeyedRateLimiter::unlink_shared(&n).unwrap();
}

#[test]
fn caller_memory_holds_a_limiter_another_handle_attaches_to() {
    #[repr(C, align(128))]
    struct Mem([u8; 4096]);
    assert!(RateLimiter::region_size() <= 4096);
    let mut mem = Box::new(Mem([0; 4096]));
    let p = core::ptr::NonNull::from(&mut mem.0).cast::<u8>();
    // SAFETY: the buffer is 4096 aligned bytes, outlives both handles, and only
    // these handles use it.
    let a = unsafe { RateLimiter::init_in(p, 4096, &TEN_PER_SECOND) }.unwrap();
    // SAFETY: as above; it holds the region `init_in` built.
    let b = unsafe { RateLimiter::attach(p, 4096) }.unwrap();
    assert!(a.created() && !b.created());
    assert_eq!(a.try_acquire(3, 0), Ok(()));
    assert_eq!(b.try_acquire(1, 50 * MS), rejected(50 * MS));
    drop((a, b));
}

/// Region sizes on x86-64 (128-byte lines): a 128-byte header, then the
/// structure rounded to its 128-byte alignment.
#[cfg(target_arch = "x86_64")]
#[test]
fn region_sizes() {
    const LINE: usize = 128;
    // The totals after the limiter: admitted takes, cells and rejected takes,
    // each a counter striped over 4 lines.
    let totals = 3 * 4 * LINE;
    // The TAT on its own line, then 40 bytes of configuration (rate, period,
    // burst padded to 8, T, τ), rounded to a line.
    assert_eq!(RateLimiter::region_size(), LINE + LINE + LINE + totals);
    // The constants' line (40 bytes of GCRA and the 8-byte seed), then 4096
    // slots of 8 bytes.
    assert_eq!(
        KeyedRateLimiter::region_size(),
        LINE + LINE + KEYED_SLOTS * 8 + totals
    );
    assert_eq!(RateLimiter::region_align(), 128);
    assert_eq!(KeyedRateLimiter::region_align(), 128);
}

#[test]
fn handles_are_send_and_sync() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<RateLimiter>();
    send_sync::<KeyedRateLimiter>();
}

/// DESIGN §8, "One set of totals": every handle of a shared limiter reads the
/// takes of all; a count of cells the limiter can never grant is no take.
#[test]
fn every_handle_reads_the_totals_of_all() {
    let n = name("totals");
    // A burst of 3, one cell per 10 s.
    let cfg = RateLimiterConfig {
        rate: 1,
        period_ns: 10_000_000_000,
        burst: 3,
    };
    let a = RateLimiter::open_shared(&n, &cfg, &quick()).unwrap();
    let b = RateLimiter::open_shared(&n, &cfg, &quick()).unwrap();
    assert_eq!(a.try_acquire(2, 0), Ok(()));
    assert_eq!(b.try_acquire(1, 0), Ok(()));
    assert!(matches!(
        a.try_acquire(1, 0),
        Err(RateLimitError::Rejected { .. })
    ));
    assert!(matches!(
        b.try_acquire(4, 0),
        Err(RateLimitError::InvalidCells(_))
    ));
    let expected = LimiterTotals {
        admitted: 2,
        cells: 3,
        rejected: 1,
    };
    let (ta, tb) = (a.totals(), b.totals());
    let _ = RateLimiter::unlink_shared(&n);
    assert_eq!(ta, expected);
    assert_eq!(tb, expected);
}
