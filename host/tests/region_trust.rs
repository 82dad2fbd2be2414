//! The trust rules of DESIGN §8 at the file system: a region at a planted
//! symbolic link, a file others may write, another user's file or a file of the
//! wrong size is refused at once, untouched; a full /dev/shm is an error that
//! leaves no file behind.

#![cfg(all(target_os = "linux", not(loom)))]

use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use seawall_core::{BreakerConfig, WindowConfig};
use seawall_host::breaker::CountCell;
use seawall_host::shared::{OpenOptions, RegionError, SharedRegion};

fn config() -> BreakerConfig {
    BreakerConfig {
        window: WindowConfig::Count { size: 8 },
        minimum_calls: 4,
        ..BreakerConfig::DEFAULT
    }
}

fn options() -> OpenOptions {
    OpenOptions {
        init_timeout: Duration::from_secs(2),
    }
}

/// Fresh paths in /dev/shm, removed on drop.
struct Paths(Vec<PathBuf>);

impl Paths {
    fn new(tags: &[&str]) -> Self {
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let paths = tags
            .iter()
            .map(|t| {
                let p = PathBuf::from(format!(
                    "/dev/shm/seawall-trust-test-{}-{n}-{t}",
                    std::process::id()
                ));
                let _ = fs::remove_file(&p);
                p
            })
            .collect();
        Self(paths)
    }
}

impl Drop for Paths {
    fn drop(&mut self) {
        for p in &self.0 {
            let _ = fs::remove_file(p);
        }
    }
}

fn open(path: &Path) -> Result<SharedRegion<CountCell>, RegionError> {
    SharedRegion::<CountCell>::open_path(path, &config(), &options())
}

/// Opens `path`, expecting a refusal as untrusted within half a second; returns
/// the reason.
fn refused(path: &Path) -> String {
    let started = Instant::now();
    let e = open(path)
        .map(drop)
        .expect_err("an untrusted file was opened");
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "refusal took {:?}",
        started.elapsed()
    );
    match e {
        RegionError::Untrusted { reason, .. } => reason,
        other => panic!("expected an untrusted-region error, got {other}"),
    }
}

#[test]
fn a_symlink_to_a_valid_region_is_refused_and_its_target_untouched() {
    let p = Paths::new(&["target", "link"]);
    let (target, link) = (&p.0[0], &p.0[1]);
    drop(open(target).unwrap());
    let before = fs::read(target).unwrap();
    symlink(target, link).unwrap();
    let reason = refused(link);
    assert!(reason.contains("symbolic link"), "{reason}");
    assert_eq!(
        fs::read(target).unwrap(),
        before,
        "the link's target changed"
    );
    assert!(
        fs::symlink_metadata(link).unwrap().file_type().is_symlink(),
        "the planted link was replaced"
    );
}

#[test]
fn a_dangling_symlink_is_refused_at_once() {
    let p = Paths::new(&["nowhere", "dangling"]);
    symlink(&p.0[0], &p.0[1]).unwrap();
    let reason = refused(&p.0[1]);
    assert!(reason.contains("symbolic link"), "{reason}");
    assert!(!p.0[0].exists(), "the link's target was created");
}

#[test]
fn a_region_others_may_write_is_refused() {
    let p = Paths::new(&["open-to-all"]);
    drop(open(&p.0[0]).unwrap());
    fs::set_permissions(&p.0[0], fs::Permissions::from_mode(0o666)).unwrap();
    let reason = refused(&p.0[0]);
    assert!(reason.contains("0666"), "{reason}");
    fs::set_permissions(&p.0[0], fs::Permissions::from_mode(0o640)).unwrap();
    assert!(refused(&p.0[0]).contains("0640"));
    // Back to the owner alone, the same file is a region again.
    fs::set_permissions(&p.0[0], fs::Permissions::from_mode(0o600)).unwrap();
    assert!(!open(&p.0[0]).unwrap().created());
}

#[test]
fn a_region_created_here_is_mode_0600() {
    let p = Paths::new(&["mode"]);
    drop(open(&p.0[0]).unwrap());
    let mode = fs::metadata(&p.0[0]).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o600);
}

#[test]
fn a_file_of_the_wrong_size_is_refused() {
    let p = Paths::new(&["short", "long"]);
    drop(open(&p.0[0]).unwrap());
    let len = fs::metadata(&p.0[0]).unwrap().len();
    // A copy of a valid region, one page longer: the header still matches.
    let mut bytes = fs::read(&p.0[0]).unwrap();
    bytes.resize(bytes.len() + 4096, 0);
    fs::write(&p.0[1], &bytes).unwrap();
    fs::set_permissions(&p.0[1], fs::Permissions::from_mode(0o600)).unwrap();
    let reason = refused(&p.0[1]);
    assert!(
        reason.contains(&format!("{} bytes", len + 4096)),
        "{reason}"
    );
    // Shorter than a header.
    fs::write(&p.0[0], b"seawall\0").unwrap();
    assert!(refused(&p.0[0]).contains("8 bytes"));
}

#[test]
fn another_users_region_is_refused() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("SKIP another_users_region_is_refused: needs root to give a file to another uid");
        return;
    }
    let p = Paths::new(&["foreign"]);
    drop(open(&p.0[0]).unwrap());
    // uid 65534 (nobody) stands for any other user; the region is otherwise valid.
    std::os::unix::fs::chown(&p.0[0], Some(65534), Some(65534)).unwrap();
    let reason = refused(&p.0[0]);
    assert!(reason.contains("uid 65534"), "{reason}");
}

const FULL_ENV: &str = "SEAWALL_TEST_FULL_SHM";

/// Run in a private mount namespace whose /dev/shm is a tmpfs half a region's
/// size (by
/// `a_full_dev_shm_is_an_error_and_leaves_no_file`).
#[test]
#[ignore = "run by a_full_dev_shm_is_an_error_and_leaves_no_file inside unshare"]
fn full_dev_shm_role() {
    if std::env::var(FULL_ENV).is_err() {
        return;
    }
    let path = Path::new("/dev/shm/seawall-breaker-full");
    match open(path) {
        Err(RegionError::Io { source, .. }) if source.raw_os_error() == Some(libc::ENOSPC) => {}
        Err(other) => panic!("expected ENOSPC, got {other}"),
        Ok(_) => panic!("a region larger than /dev/shm was created"),
    }
    let left: Vec<_> = fs::read_dir("/dev/shm").unwrap().collect();
    assert!(left.is_empty(), "files left in /dev/shm: {left:?}");
    println!("FULL-SHM-OK");
}

#[test]
fn a_full_dev_shm_is_an_error_and_leaves_no_file() {
    // Half a region, in whole pages: room for the file, not for its contents.
    let kib = (SharedRegion::<CountCell>::SIZE / 2 / 4096).max(1) * 4;
    assert!(kib * 1024 < SharedRegion::<CountCell>::SIZE);
    let me = std::env::current_exe().unwrap();
    let script = format!(
        "mount -t tmpfs -o size={kib}k seawall-test /dev/shm && exec {} --exact full_dev_shm_role --ignored --nocapture",
        me.display()
    );
    let out = Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c", &script])
        .env(FULL_ENV, "1")
        .output();
    let out = match out {
        Ok(o) => o,
        Err(e) => {
            eprintln!(
                "SKIP a_full_dev_shm_is_an_error_and_leaves_no_file: cannot run unshare: {e}"
            );
            return;
        }
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() && !stdout.contains("running 1 test") {
        eprintln!(
            "SKIP a_full_dev_shm_is_an_error_and_leaves_no_file: unshare -m or mount refused here: {}",
            stderr.trim()
        );
        return;
    }
    assert!(
        out.status.success() && stdout.contains("FULL-SHM-OK"),
        "in a full /dev/shm: {stdout}\n{stderr}"
    );
}
