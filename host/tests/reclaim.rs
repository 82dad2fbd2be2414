//! Reclaiming what a killed process held in a shared semaphore, before its
//! parent has reaped it (a zombie: `kill(pid, 0)` still finds it).
//!
//! The holder is this test binary run again in the role of
//! `holder_role_takes_a_permit_and_waits_to_be_killed` (an ignored test that
//! does nothing unless the parent names the region in its environment).

#![cfg(all(target_os = "linux", not(loom)))]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use seawall_core::{Priority, SemaphoreConfig};
use seawall_host::semaphore::Semaphore;
use seawall_host::shared::OpenOptions;

const REGION_ENV: &str = "SEAWALL_TEST_HOLDER_REGION";
/// What the holder prints once it holds its permit (libtest may put its own
/// "test ... " prefix on the same line).
const READY: &str = "SEAWALL-TEST-HOLDER-READY";

fn config() -> SemaphoreConfig {
    SemaphoreConfig {
        max_concurrent: 1,
        max_queue: 2,
        ..SemaphoreConfig::DEFAULT
    }
}

/// `/proc/<pid>/stat`'s state letter.
fn proc_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat[stat.rfind(')')? + 1..].trim_start().chars().next()
}

#[test]
#[ignore = "the holder process of killed_unreaped_holders_permit_is_reclaimed, which runs it"]
fn holder_role_takes_a_permit_and_waits_to_be_killed() {
    let Ok(name) = std::env::var(REGION_ENV) else {
        return;
    };
    let s = Semaphore::open_shared(&name, &config(), &OpenOptions::default()).unwrap();
    let _permit = s.try_acquire(Priority::Normal).unwrap();
    println!("{READY}");
    // Killed long before; the bound only keeps a failed parent from leaving it.
    std::thread::sleep(Duration::from_secs(120));
}

/// This test binary run again as the holder of a permit of semaphore `name`,
/// through the command `via` (none: directly).
fn holder(name: &str, via: &[&str]) -> Command {
    let me = std::env::current_exe().unwrap();
    let mut cmd = match via.split_first() {
        Some((first, rest)) => {
            let mut c = Command::new(first);
            c.args(rest).arg(me);
            c
        }
        None => Command::new(me),
    };
    cmd.args([
        "--exact",
        "holder_role_takes_a_permit_and_waits_to_be_killed",
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(REGION_ENV, name)
    .stdout(Stdio::piped())
    .stderr(Stdio::null());
    cmd
}

/// Removes the region when the test ends, passed or failed.
struct Unlink(String);

impl Drop for Unlink {
    fn drop(&mut self) {
        let _ = Semaphore::unlink_shared(&self.0);
    }
}

#[test]
fn killed_unreaped_holders_permit_is_reclaimed() {
    let name = format!("rust-test-zombie-{}", std::process::id());
    let _ = Semaphore::unlink_shared(&name);
    let _unlink = Unlink(name.clone());
    let s = Semaphore::open_shared(&name, &config(), &OpenOptions::default()).unwrap();
    let mut child = holder(&name, &[]).spawn().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    assert!(
        lines.any(|l| l.is_ok_and(|l| l.contains(READY))),
        "the holder never took its permit"
    );
    assert_eq!(s.full_snapshot().active, 1);
    assert!(
        s.try_acquire(Priority::Normal).is_err(),
        "1 of 1 permits is held"
    );

    child.kill().unwrap(); // SIGKILL; not waited for, so it stays a zombie
    let t0 = Instant::now();
    while proc_state(child.id()) != Some('Z') {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "the holder never became a zombie"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    // The zombie's one permit, and no ticket; then the permit is free again.
    assert_eq!(s.reclaim_abandoned(), (1, 0));
    assert_eq!(s.full_snapshot().active, 0);
    let p = s.try_acquire(Priority::Normal).unwrap();
    s.release(p).unwrap();

    child.wait().unwrap();
    assert_eq!(
        s.reclaim_abandoned(),
        (0, 0),
        "reaped: nothing left to take"
    );
}

#[test]
fn a_process_gives_back_what_it_holds_and_waits_for() {
    let name = format!("rust-test-own-{}", std::process::id());
    let _ = Semaphore::unlink_shared(&name);
    let _unlink = Unlink(name.clone());
    let s = Semaphore::open_shared(&name, &config(), &OpenOptions::default()).unwrap();
    let held = s.try_acquire(Priority::Normal).unwrap();
    let Ok(seawall_host::semaphore::Acquired::Queued(waiting)) = s.acquire(Priority::Normal, true)
    else {
        panic!("the second caller should wait")
    };
    // This process is alive: a reclaim takes nothing of it.
    assert_eq!(s.reclaim_abandoned(), (0, 0));
    s.reclaim_own();
    let f = s.full_snapshot();
    assert_eq!(
        (
            f.active,
            f.queued,
            f.permits_outstanding,
            f.tickets_outstanding
        ),
        (0, 0, 0, 0)
    );
    // A holder or waiter that comes back after all finds nothing to give.
    assert!(s.release(held).is_err());
    assert!(s.cancel(waiting).is_err());
    assert_eq!(s.reclaim_own(), (0, 0));
}

/// DESIGN §8, "Self-healing": owner ids mean one process only within one pid
/// namespace. A live holder in another namespace (a container sharing
/// /dev/shm; here `unshare -p`, where it is pid 1) looks dead from this one,
/// so its attach marks the region mixed and nobody here takes its permit: not
/// by opening the region, not by being refused.
#[test]
fn a_live_holder_in_another_pid_namespace_keeps_its_permit() {
    let name = format!("rust-test-pidns-{}", std::process::id());
    let _ = Semaphore::unlink_shared(&name);
    let _unlink = Unlink(name.clone());
    let s = Semaphore::open_shared(&name, &config(), &OpenOptions::default()).unwrap();
    let child = holder(&name, &["unshare", "-p", "-f", "--mount-proc"]).spawn();
    let Some(mut child) = child.ok().filter(|_| unshare_pid_works()) else {
        let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
        assert!(!ci, "unshare -p is needed here and refused (run as root)");
        eprintln!(
            "SKIP a_live_holder_in_another_pid_namespace_keeps_its_permit: unshare -p refused"
        );
        return;
    };
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let ready = lines.any(|l| l.is_ok_and(|l| l.contains(READY)));
    // This process opens the region again, and is refused: neither may take
    // the live holder's permit.
    let again = Semaphore::open_shared(&name, &config(), &OpenOptions::default()).unwrap();
    let active = again.snapshot().active;
    let refused = again.try_acquire(Priority::Normal).is_err();
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(ready, "the holder never took its permit");
    assert_eq!(
        active, 1,
        "opening the region took the live holder's permit"
    );
    assert!(refused, "a refused caller took the live holder's permit");
    drop(s);
}

/// Whether this machine lets us make a pid namespace.
fn unshare_pid_works() -> bool {
    Command::new("unshare")
        .args(["-p", "-f", "--mount-proc", "true"])
        .status()
        .is_ok_and(|s| s.success())
}
