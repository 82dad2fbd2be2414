//! The OS monotonic clock, read for callers that have none of their own.

/// Nanoseconds of `CLOCK_MONOTONIC`: on Linux one clock for every process of the
/// host (time since boot, not counting suspend), so processes sharing a breaker
/// agree on `now`. Returns 0 if the clock cannot be read (it always can on Linux).
#[must_use]
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC is always present.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &raw mut ts) };
    if rc != 0 {
        return 0;
    }
    let secs = u64::try_from(ts.tv_sec).unwrap_or(0);
    let nanos = u64::try_from(ts.tv_nsec).unwrap_or(0);
    secs.saturating_mul(1_000_000_000).saturating_add(nanos)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advances_like_std_instant() {
        let t = std::time::Instant::now();
        let a = monotonic_ns();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let b = monotonic_ns();
        let outer = u64::try_from(t.elapsed().as_nanos()).unwrap();
        assert!(a > 0);
        // Our interval lies inside the std measurement and covers the sleep.
        assert!(b - a >= 20_000_000, "{}", b - a);
        assert!(b - a <= outer, "{} > {outer}", b - a);
    }
}
