//! Random bits for what must not be predictable or identical across processes:
//! permit-table salts, semaphore holder salts, jitter seeds.

/// Random bits from the OS; if the OS has none to give, a mix of the clock, the
/// process id and an address (distinct per process and call site, not secret).
#[must_use]
pub fn entropy() -> u64 {
    getrandom::u64().unwrap_or_else(|_| {
        let local = 0u8;
        seawall_core::mix64(
            crate::clock::monotonic_ns()
                ^ (u64::from(std::process::id()) << 32)
                ^ core::ptr::from_ref(&local) as u64,
        )
    })
}
