//! Shared regions through the Rust API the bindings use: the creation race, the
//! checks on attach, caller memory, and that attaching changes nothing.

// The loom build compiles only the table models (tests/loom_*.rs).
#![cfg(not(loom))]
use std::alloc::{Layout, alloc_zeroed, dealloc};
use std::fs;
use std::path::PathBuf;
use std::ptr::NonNull;
use std::sync::Barrier;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use seawall_core::{BreakerConfig, Outcome, State, WindowConfig};
use seawall_host::breaker::{AcquireError, Breaker, CountCell, TimeCell};
use seawall_host::shared::{OpenOptions, RegionError, SharedRegion};

fn count_config(size: u32) -> BreakerConfig {
    BreakerConfig {
        window: WindowConfig::Count { size },
        minimum_calls: 4,
        open_duration_ns: 1_000,
        ..BreakerConfig::DEFAULT
    }
}

/// A fresh path in /dev/shm (tmpfs, as in production), removed on drop.
struct TempRegion(PathBuf);

impl TempRegion {
    fn new(tag: &str) -> Self {
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let p = PathBuf::from(format!(
            "/dev/shm/seawall-rust-test-{}-{tag}-{n}",
            std::process::id()
        ));
        let _ = fs::remove_file(&p);
        Self(p)
    }
}

impl Drop for TempRegion {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.0);
    }
}

fn quick() -> OpenOptions {
    OpenOptions {
        init_timeout: Duration::from_millis(200),
    }
}

#[test]
fn racing_creators_initialise_once_and_share_one_breaker() {
    let t = TempRegion::new("race");
    let cfg = count_config(10);
    let threads = 8;
    let barrier = Barrier::new(threads);
    let regions: Vec<SharedRegion<CountCell>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    barrier.wait();
                    SharedRegion::<CountCell>::open_path(&t.0, &cfg, &quick()).unwrap()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(regions.iter().filter(|r| r.created()).count(), 1);
    let fp = regions[0].fingerprint();
    assert!(regions.iter().all(|r| r.fingerprint() == fp));
}

#[test]
fn one_shared_breaker_seen_through_every_handle() {
    let name = format!("rust-test-{}-shared", std::process::id());
    Breaker::unlink_shared(&name).unwrap();
    let cfg = count_config(4);
    let a = Breaker::open_shared(&name, &cfg, &quick()).unwrap();
    let b = Breaker::open_shared(&name, &cfg, &quick()).unwrap();
    assert!(a.created() && !b.created());
    assert!(std::path::Path::new(&format!("/dev/shm/seawall-breaker-{name}")).exists());
    // 4 failures through `a` open the breaker (window 4, minimum 4, 50 %).
    for t in 0..4 {
        let p = a.try_acquire(t).unwrap();
        a.record(p, Outcome::Failure, 0, t).unwrap();
    }
    assert_eq!(b.state(), State::Open);
    // A permit acquired through one handle is recorded once, through the other.
    b.reset();
    let p = a.try_acquire(10).unwrap();
    b.record(p, Outcome::Success, 0, 10).unwrap();
    assert!(a.record(p, Outcome::Success, 0, 10).is_err());
    assert_eq!(a.metrics(10).core.totals.successes, 1);
    Breaker::unlink_shared(&name).unwrap();
    assert!(!std::path::Path::new(&format!("/dev/shm/seawall-breaker-{name}")).exists());
    // Attached handles keep working after the unlink.
    assert_eq!(a.state(), State::Closed);
}

#[test]
fn attaching_changes_nothing() {
    let cfg = count_config(4);
    let name = format!("rust-test-{}-attach", std::process::id());
    Breaker::unlink_shared(&name).unwrap();
    let a = Breaker::open_shared(&name, &cfg, &quick()).unwrap();
    let held = a.try_acquire(1).unwrap();
    for t in 2..6 {
        let p = a.try_acquire(t).unwrap();
        a.record(p, Outcome::Failure, 0, t).unwrap();
    }
    let before = a.metrics(7);
    let bytes_before = fs::read(format!("/dev/shm/seawall-breaker-{name}")).unwrap();
    let b = Breaker::open_shared(&name, &cfg, &quick()).unwrap();
    let bytes_after = fs::read(format!("/dev/shm/seawall-breaker-{name}")).unwrap();
    assert_eq!(bytes_before, bytes_after, "attach wrote to the region");
    assert_eq!(b.metrics(7), before);
    assert_eq!(before.core.state, State::Open);
    assert_eq!(before.permits_outstanding, Some(1));
    b.record(held, Outcome::Ignored, 0, 8).unwrap();
    Breaker::unlink_shared(&name).unwrap();
}

#[test]
fn another_configuration_is_a_mismatch_but_the_jitter_seed_may_differ() {
    let t = TempRegion::new("mismatch");
    let cfg = count_config(10);
    let _a = SharedRegion::<CountCell>::open_path(&t.0, &cfg, &quick()).unwrap();
    let other = BreakerConfig {
        minimum_calls: 5,
        ..cfg
    };
    let e = SharedRegion::<CountCell>::open_path(&t.0, &other, &quick()).unwrap_err();
    assert!(matches!(e, RegionError::ConfigMismatch { .. }), "{e}");
    let reseeded = BreakerConfig {
        jitter_seed: cfg.jitter_seed ^ 0xdead_beef,
        ..cfg
    };
    let b = SharedRegion::<CountCell>::open_path(&t.0, &reseeded, &quick()).unwrap();
    assert!(!b.created());
    let time = BreakerConfig {
        window: WindowConfig::Time {
            buckets: 10,
            bucket_width_ns: 1_000_000,
        },
        ..cfg
    };
    let e = SharedRegion::<TimeCell>::open_path(&t.0, &time, &quick()).unwrap_err();
    assert!(
        matches!(e, RegionError::LayoutMismatch { found: 0x0123, .. }),
        "{e}"
    );
}

#[test]
fn an_invalid_configuration_creates_no_file() {
    let t = TempRegion::new("invalid");
    let bad = count_config(0);
    let e = SharedRegion::<CountCell>::open_path(&t.0, &bad, &quick()).unwrap_err();
    assert_eq!(e.to_string(), "invalid window.size: must not be zero");
    assert!(!t.0.exists());
}

/// Patch one little-endian u32 of an existing region file.
fn patch_u32(path: &std::path::Path, offset: usize, value: u32) {
    let mut bytes = fs::read(path).unwrap();
    bytes[offset..offset + 4].copy_from_slice(&value.to_le_bytes());
    fs::write(path, bytes).unwrap();
}

#[test]
fn layout_version_magic_and_checksum_are_checked_on_attach() {
    let cfg = count_config(4);
    // The documented header layout: magic at 0, state at 8, layout version at 12, layout at 16,
    // creator pid at 56.
    let t = TempRegion::new("abi");
    drop(SharedRegion::<CountCell>::open_path(&t.0, &cfg, &quick()).unwrap());
    patch_u32(&t.0, 12, seawall_host::REGION_LAYOUT_VERSION + 1);
    let e = SharedRegion::<CountCell>::open_path(&t.0, &cfg, &quick()).unwrap_err();
    assert!(matches!(e, RegionError::VersionMismatch(_)), "{e}");
    let newer = format!(
        "region layout version {}",
        seawall_host::REGION_LAYOUT_VERSION + 1
    );
    assert!(e.to_string().contains(&newer), "{e}");

    let t = TempRegion::new("magic");
    drop(SharedRegion::<CountCell>::open_path(&t.0, &cfg, &quick()).unwrap());
    patch_u32(&t.0, 0, 0x1234_5678);
    let e = SharedRegion::<CountCell>::open_path(&t.0, &cfg, &quick()).unwrap_err();
    assert!(matches!(e, RegionError::NotARegion(_)), "{e}");

    let t = TempRegion::new("checksum");
    drop(SharedRegion::<CountCell>::open_path(&t.0, &cfg, &quick()).unwrap());
    patch_u32(&t.0, 56, 1);
    let e = SharedRegion::<CountCell>::open_path(&t.0, &cfg, &quick()).unwrap_err();
    assert!(e.to_string().contains("checksum"), "{e}");
}

/// Zeroed heap memory with the given alignment.
struct Mem {
    ptr: NonNull<u8>,
    layout: Layout,
}

impl Mem {
    fn new(len: usize, align: usize) -> Self {
        let layout = Layout::from_size_align(len, align).unwrap();
        // SAFETY: non-zero size.
        let ptr = NonNull::new(unsafe { alloc_zeroed(layout) }).unwrap();
        Self { ptr, layout }
    }
}

impl Drop for Mem {
    fn drop(&mut self) {
        // SAFETY: allocated above with this layout.
        unsafe { dealloc(self.ptr.as_ptr(), self.layout) };
    }
}

#[test]
fn caller_memory_is_checked_initialised_and_attached() {
    let (size, align) = (Breaker::region_size(), Breaker::region_align());
    assert_eq!(align, 128);
    let mem = Mem::new(size + 128, align);
    let cfg = count_config(4);
    // SAFETY: `mem` outlives every breaker below and nothing else uses it.
    unsafe {
        let e = Breaker::init_in(mem.ptr.add(8), size, &cfg).unwrap_err();
        assert!(
            matches!(e, RegionError::Misaligned { align: 128, .. }),
            "{e}"
        );
        let e = Breaker::init_in(mem.ptr, size - 1, &cfg).unwrap_err();
        assert!(matches!(e, RegionError::TooSmall { .. }), "{e}");
        let e = Breaker::attach(mem.ptr, size).unwrap_err();
        assert!(matches!(e, RegionError::NotARegion(_)), "{e}");

        let a = Breaker::init_in(mem.ptr, size, &cfg).unwrap();
        a.force_open();
        let b = Breaker::attach(mem.ptr, size).unwrap();
        assert!(a.created() && !b.created());
        assert_eq!(b.state(), State::ForcedOpen);
        assert_eq!(b.config(), a.config());
        let e = Breaker::attach(mem.ptr, 100).unwrap_err();
        assert!(matches!(e, RegionError::TooSmall { .. }), "{e}");

        // A time-window breaker in the same memory is found by attach too.
        let time = BreakerConfig {
            window: WindowConfig::Time {
                buckets: 3,
                bucket_width_ns: 1_000_000,
            },
            ..cfg
        };
        drop((a, b));
        let c = Breaker::init_in(mem.ptr, size, &time).unwrap();
        let d = Breaker::attach(mem.ptr, size).unwrap();
        assert_eq!(d.config().window, time.window);
        assert!(d.try_acquire(5).is_ok());
        drop(c);
        assert_eq!(d.metrics(5).permits_outstanding, Some(1));
    }
}

#[test]
fn permits_are_exhausted_before_the_breaker_is_asked() {
    let b = Breaker::new(count_config(4)).unwrap();
    let held: Vec<_> = (0..4096).map(|_| b.try_acquire(0).unwrap()).collect();
    assert_eq!(b.try_acquire(0), Err(AcquireError::PermitsExhausted));
    let m = b.metrics(0);
    // 4096 admitted by the core; the 4097th found no slot and never asked it.
    assert_eq!(m.core.totals.admitted, 4096);
    assert_eq!(m.core.totals.ignored, 0);
    assert_eq!(m.permits_outstanding, Some(4096));
    for p in held {
        b.record(p, Outcome::Success, 0, 1).unwrap();
    }
    assert_eq!(b.metrics(1).permits_outstanding, Some(0));
    assert!(b.try_acquire(2).is_ok());
}

#[test]
fn bad_names_are_refused() {
    for name in ["", "a/b", ".hidden", "sp ace", &"x".repeat(201)] {
        let e = Breaker::open_shared(name, &count_config(4), &quick()).unwrap_err();
        assert!(matches!(e, RegionError::BadName(_)), "{name:?}: {e}");
    }
}

/// Region sizes on x86-64 (128-byte cache lines), worked out by hand from the
/// layouts: the core's `tests/sizes.rs` rules plus a 128-byte header and a
/// permit table of one padded salt line, 4096 slots of 8 bytes and 4096 owner
/// words of 4 bytes, then the 8-byte heal gate, padded to the cell's line.
#[cfg(target_arch = "x86_64")]
#[test]
fn region_sizes() {
    const LINE: usize = 128;
    let up = |n: usize| n.div_ceil(LINE) * LINE;
    // breaker: state and clock lines, the `rejected` total's four lines and the
    // other totals' one, config 152 + gate 8, then the window
    let fixed = 7 * LINE + 152 + 8;
    let count_window = up(LINE + 1024 * 8 + 4);
    // main, slow and folded words of 16 bytes per bucket
    let time_window = up(LINE + 3 * 128 * 16 + 8 + 8);
    let permits = LINE + 4096 * 8 + 4096 * 4;
    let heal_gate = 8;
    let count_region = LINE + up(fixed + count_window) + up(permits + heal_gate);
    let time_region = LINE + up(fixed + time_window) + up(permits + heal_gate);
    assert_eq!(SharedRegion::<CountCell>::SIZE, count_region);
    assert_eq!(SharedRegion::<TimeCell>::SIZE, time_region);
    assert_eq!(Breaker::region_size(), count_region.max(time_region));
    assert_eq!(Breaker::region_size(), 59_136);
}
