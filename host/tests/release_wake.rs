//! The release counter waiters sleep on: while a thread may sleep on it, every
//! step that hands a permit to a waiter changes it (so a waiter that read it
//! before looking at its ticket never sleeps through its grant); a release that
//! hands nothing to anyone, or that no thread could be sleeping through, leaves
//! it alone (no wake-up to pay for).

use seawall_core::{Priority, SemaphoreConfig};
use seawall_host::semaphore::{Acquired, Cancelled, Polled, Semaphore, Ticket};
use seawall_host::shared::OpenOptions;

fn config() -> SemaphoreConfig {
    SemaphoreConfig {
        max_concurrent: 1,
        max_queue: 2,
        ..SemaphoreConfig::DEFAULT
    }
}

/// A local untracked, a local tracked and a shared semaphore of `config()`.
fn each_kind(test: &str, f: impl Fn(&Semaphore)) {
    f(&Semaphore::local(&config()).unwrap());
    f(&Semaphore::new(&config()).unwrap());
    let name = format!("release-wake-{test}-{}", std::process::id());
    let shared = Semaphore::open_shared(&name, &config(), &OpenOptions::default()).unwrap();
    f(&shared);
    drop(shared);
    Semaphore::unlink_shared(&name).unwrap();
}

fn queued(sem: &Semaphore) -> Ticket {
    match sem.acquire_or_enqueue(Priority::Normal).unwrap() {
        Acquired::Queued(t) => t,
        Acquired::Admitted(_) => panic!("admitted with the only permit held"),
    }
}

#[test]
fn a_release_that_grants_a_waiter_changes_the_count_and_one_that_grants_nobody_does_not() {
    each_kind("grant", |sem| {
        let sleeper = sem.release_waiter();
        let p = sem.try_acquire(Priority::Normal).unwrap();
        let before = sleeper.count();
        sem.release(p).unwrap();
        assert_eq!(sleeper.count(), before, "nobody waited");

        let p = sem.try_acquire(Priority::Normal).unwrap();
        let t = queued(sem);
        let before = sleeper.count();
        sem.release(p).unwrap();
        assert_ne!(sleeper.count(), before, "the waiter was granted");
        let Polled::Granted(p) = sem.poll(t).unwrap() else {
            panic!("the release handed the permit to the waiter");
        };
        sem.release(p).unwrap();
    });
}

#[test]
fn a_cancel_that_passes_a_grant_on_changes_the_count() {
    each_kind("pass-on", |sem| {
        let sleeper = sem.release_waiter();
        let p = sem.try_acquire(Priority::Normal).unwrap();
        let first = queued(sem);
        let second = queued(sem);
        sem.release(p).unwrap();
        // The grant reached `first`, which leaves instead of taking it.
        let before = sleeper.count();
        assert_eq!(sem.cancel(first).unwrap(), Cancelled::PassedOn);
        assert_ne!(
            sleeper.count(),
            before,
            "the permit went on to the second waiter"
        );
        let Polled::Granted(p) = sem.poll(second).unwrap() else {
            panic!("the second waiter holds the permit passed on");
        };
        sem.release(p).unwrap();
    });
}

#[test]
fn a_wait_on_a_count_that_moved_on_returns_at_once() {
    // Deterministic: the wait compares before it sleeps, so a stale value
    // never sleeps (600 s would fail the run if it did).
    each_kind("stale", |sem| {
        let sleeper = sem.release_waiter();
        let stale = sleeper.count().wrapping_sub(1);
        let _ = sleeper.sleep(stale, std::time::Duration::from_secs(600));
    });
}

#[test]
fn with_no_thread_that_may_sleep_a_grant_wakes_nobody() {
    each_kind("no-sleeper", |sem| {
        let p = sem.try_acquire(Priority::Normal).unwrap();
        let t = queued(sem);
        let before = sem.release_waiter().count();
        sem.release(p).unwrap();
        assert_eq!(
            sem.release_waiter().count(),
            before,
            "no thread could sleep through it"
        );
        let Polled::Granted(p) = sem.poll(t).unwrap() else {
            panic!("the release handed the permit to the waiter");
        };
        sem.release(p).unwrap();
    });
}
