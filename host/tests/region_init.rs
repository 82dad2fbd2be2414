//! The init race of DESIGN §8 from an opener's side. A region another process
//! is building (it holds the file's init lock, as a creator does from before the
//! file has its name until it publishes) is waited for, up to the opener's init
//! timeout. A file that can never become a region — empty, of the wrong size, a
//! header of zeros, garbage over the header — is refused at once with the error
//! that says why, not after the timeout.
//!
//! "At once" is shown without reading a clock: each refusal is asked for both
//! with no time to wait (an opener that judged by the clock would answer
//! `Timeout`) and with `Duration::MAX` (an opener that waited would never
//! answer; the thread guard below only turns such a hang into a failure).

#![cfg(all(target_os = "linux", not(loom)))]

use std::fs::{self, File};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use seawall_core::{BreakerConfig, SplitMix64, WindowConfig};
use seawall_host::breaker::CountCell;
use seawall_host::shared::header::READY;
use seawall_host::shared::{OpenOptions, RegionError, SharedRegion};

fn config() -> BreakerConfig {
    BreakerConfig {
        window: WindowConfig::Count { size: 8 },
        minimum_calls: 4,
        ..BreakerConfig::DEFAULT
    }
}

fn timeout(init_timeout: Duration) -> OpenOptions {
    OpenOptions { init_timeout }
}

/// No time to wait, and all the time there is.
const EXTREMES: [Duration; 2] = [Duration::ZERO, Duration::MAX];

/// Bytes of a count-window breaker's region.
const SIZE: usize = SharedRegion::<CountCell>::SIZE;

/// A fresh path in /dev/shm, removed on drop.
struct Temp(PathBuf);

impl Temp {
    fn new(tag: &str) -> Self {
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let p = PathBuf::from(format!(
            "/dev/shm/seawall-init-test-{}-{n}-{tag}",
            std::process::id()
        ));
        let _ = fs::remove_file(&p);
        Self(p)
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.0);
    }
}

/// Open `path` on a thread of its own; a call that does not answer within a
/// minute fails the test instead of hanging it (no bound on how fast the
/// answer comes is asserted).
fn open(path: &Path, init_timeout: Duration) -> Result<SharedRegion<CountCell>, RegionError> {
    let (tx, rx) = mpsc::channel();
    let path = path.to_owned();
    std::thread::spawn(move || {
        let _ = tx.send(SharedRegion::<CountCell>::open_path(
            &path,
            &config(),
            &timeout(init_timeout),
        ));
    });
    rx.recv_timeout(Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("open with init_timeout {init_timeout:?} never answered: {e:?}"))
}

/// A file at `path`, mode 0600 as the library makes them, `len` zero bytes.
fn zero_file(path: &Path, len: usize) -> File {
    let f = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .unwrap();
    f.set_len(len as u64).unwrap();
    f
}

/// A published region at `path`, its handle dropped.
fn valid_region(path: &Path) {
    let r =
        SharedRegion::<CountCell>::open_path(path, &config(), &timeout(Duration::ZERO)).unwrap();
    assert!(r.created());
}

/// Write `bytes` at `offset` of the file at `path`.
fn overwrite(path: &Path, offset: usize, bytes: &[u8]) {
    let mut all = fs::read(path).unwrap();
    all[offset..offset + bytes.len()].copy_from_slice(bytes);
    fs::write(path, all).unwrap();
}

/// Hold `file`'s init lock, as a creator does while it builds the region.
fn lock(file: &File) {
    // SAFETY: the descriptor is open for the whole call.
    assert_eq!(unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) }, 0);
}

fn unlock(file: &File) {
    // SAFETY: as above.
    assert_eq!(unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_UN) }, 0);
}

fn untrusted_reason(e: RegionError) -> String {
    match e {
        RegionError::Untrusted { reason, .. } => reason,
        other => panic!("expected a refusal as untrusted (wrong size), got {other:?}"),
    }
}

fn not_a_region(e: RegionError) -> String {
    match e {
        RegionError::NotARegion(why) => why,
        other => panic!("expected NotARegion, got {other:?}"),
    }
}

#[test]
fn an_empty_or_wrong_size_file_nobody_is_building_is_refused_at_once() {
    for len in [0, 4096, SIZE + 4096] {
        let t = Temp::new("unbuilt");
        let _f = zero_file(&t.0, len);
        for wait in EXTREMES {
            let e = open(&t.0, wait).map(drop).unwrap_err();
            let reason = untrusted_reason(e);
            assert!(
                reason.contains(&format!(
                    "it is {len} bytes, a region of this kind is {SIZE}"
                )),
                "{len} bytes, {wait:?}: {reason}"
            );
        }
        assert_eq!(
            fs::metadata(&t.0).unwrap().len(),
            len as u64,
            "the file changed"
        );
    }
}

#[test]
fn a_header_of_zeros_is_refused_at_once_and_left_alone() {
    let t = Temp::new("zeros");
    valid_region(&t.0);
    overwrite(&t.0, 0, &[0; 128]);
    let before = fs::read(&t.0).unwrap();
    for wait in EXTREMES {
        let why = not_a_region(open(&t.0, wait).map(drop).unwrap_err());
        assert!(why.contains("never published"), "{wait:?}: {why}");
    }
    assert_eq!(fs::read(&t.0).unwrap(), before, "the file changed");
}

#[test]
fn garbage_over_the_header_is_refused_at_once_even_while_the_lock_is_held() {
    let mut rng = SplitMix64::new(0x9A4B_A6E5);
    for round in 0..16 {
        let t = Temp::new("garbage");
        valid_region(&t.0);
        let mut header = [0u8; 128];
        for chunk in header.chunks_mut(8) {
            chunk.copy_from_slice(&rng.next_u64().to_le_bytes());
        }
        // A garbage magic: neither seawall's nor a creator's zeros.
        header[..8].copy_from_slice(&(rng.next_u64() | 1).to_le_bytes());
        overwrite(&t.0, 0, &header);
        // Whoever holds the lock, no creator ever writes such a magic.
        let holder = File::open(&t.0).unwrap();
        for locked in [false, true] {
            if locked {
                lock(&holder);
            }
            for wait in EXTREMES {
                let why = not_a_region(open(&t.0, wait).map(drop).unwrap_err());
                assert!(
                    why.contains("magic"),
                    "round {round}, locked {locked}, {wait:?}: {why}"
                );
            }
        }
    }
}

#[test]
fn a_region_a_process_is_building_is_waited_for_until_the_timeout() {
    for len in [0, SIZE] {
        let t = Temp::new("building");
        let f = zero_file(&t.0, len);
        lock(&f);
        let e = open(&t.0, Duration::from_millis(20)).map(drop).unwrap_err();
        match e {
            RegionError::Timeout { waited, .. } => {
                assert!(waited >= Duration::from_millis(20), "{waited:?}");
            }
            other => panic!("{len} bytes: expected Timeout, got {other:?}"),
        }
        // The builder gone without publishing, the same file is judged at once.
        unlock(&f);
        let opened = open(&t.0, Duration::MAX);
        if len == 0 {
            untrusted_reason(opened.map(drop).unwrap_err());
        } else {
            // All zeros: its creator died before it wrote anything (DESIGN §8,
            // self-healing). The file is removed and the region made anew.
            let region = opened.unwrap();
            assert!(region.created(), "made anew, not attached");
            let (old, new) = (f.metadata().unwrap(), fs::metadata(&t.0).unwrap());
            assert_ne!(old.ino(), new.ino(), "another file now has the name");
        }
    }
}

#[test]
fn a_region_published_while_an_opener_waits_is_attached() {
    let built = Temp::new("built");
    let target = Temp::new("target");
    valid_region(&built.0);
    // As a creator has it: locked and sized before it has the region's name,
    // not published yet.
    let f = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&built.0)
        .unwrap();
    lock(&f);
    let map = memmap2::MmapOptions::new().len(SIZE).map_raw(&f).unwrap();
    #[allow(
        clippy::cast_ptr_alignment,
        reason = "a mapping starts on a page, so offset 8 is 4-aligned"
    )]
    // SAFETY: the header's `state` word, 4-aligned at offset 8 of a live
    // mapping of the file; every process reads it as an atomic.
    let state = unsafe { &*map.as_mut_ptr().add(8).cast::<AtomicU32>() };
    state.store(0, Ordering::Release);
    fs::hard_link(&built.0, &target.0).unwrap();
    let path = target.0.clone();
    let opener = std::thread::spawn(move || open(&path, Duration::MAX));
    state.store(READY, Ordering::Release);
    unlock(&f);
    let r = opener.join().unwrap().unwrap();
    assert!(!r.created());
    assert_eq!(r.breaker().config().window, config().window);
}

#[test]
fn a_region_unlinked_while_an_opener_waits_is_made_anew() {
    let t = Temp::new("unlinked");
    // A creator that will fail: it holds the lock, then removes its file.
    let f = zero_file(&t.0, SIZE);
    lock(&f);
    let path = t.0.clone();
    let opener = std::thread::spawn(move || open(&path, Duration::MAX));
    fs::remove_file(&t.0).unwrap();
    unlock(&f);
    let r = opener.join().unwrap().unwrap();
    assert!(r.created(), "the opener should have made the region anew");
    let again = open(&t.0, Duration::ZERO).unwrap();
    assert!(!again.created());
}

#[test]
fn racing_creators_never_take_each_others_work_for_a_dead_one() {
    // Each round a fresh path and four openers at once: one creates, the others
    // find its file locked (never empty and unlocked) and attach.
    for round in 0..25 {
        let t = Temp::new("race");
        let barrier = std::sync::Barrier::new(4);
        let created: Vec<bool> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|_| {
                    s.spawn(|| {
                        barrier.wait();
                        SharedRegion::<CountCell>::open_path(
                            &t.0,
                            &config(),
                            &OpenOptions::default(),
                        )
                        .map(|r| r.created())
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap()
                        .unwrap_or_else(|e| panic!("round {round}: {e}"))
                })
                .collect()
        });
        assert_eq!(created.iter().filter(|&&c| c).count(), 1, "round {round}");
    }
}
