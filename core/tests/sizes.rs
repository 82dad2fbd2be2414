//! `size_of` of the public types on x86-64, where crossbeam's `CachePadded` pads to
//! 128 bytes. Each expected figure is worked out by hand from the layout below; the
//! docs quote the same figures.
#![cfg(target_arch = "x86_64")]

use core::mem::size_of;
use seawall_core::{BreakerConfig, CircuitBreaker, CountWindow, Deadline, PermitToken, TimeWindow};

const LINE: usize = 128;

fn round_up(n: usize) -> usize {
    n.div_ceil(LINE) * LINE
}

#[test]
fn windows() {
    // head (one padded line) + 2·B words of 16 bytes + buckets (u32, padded to 8) + width (u64)
    assert_eq!(
        size_of::<TimeWindow<10>>(),
        round_up(LINE + 2 * 10 * 16 + 8 + 8)
    );
    assert_eq!(size_of::<TimeWindow<10>>(), 512);
    // agg (one padded line) + N slots of 8 bytes + size (u32)
    assert_eq!(size_of::<CountWindow<100>>(), round_up(LINE + 100 * 8 + 4));
    assert_eq!(size_of::<CountWindow<100>>(), 1024);
}

#[test]
fn breakers() {
    // state, clock and totals each on their own line, then window, config, gate (u64)
    let fixed = 3 * LINE + size_of::<BreakerConfig>() + 8;
    assert_eq!(
        size_of::<CircuitBreaker<TimeWindow<10>>>(),
        round_up(fixed + 512)
    );
    assert_eq!(size_of::<CircuitBreaker<TimeWindow<10>>>(), 1152);
    assert_eq!(
        size_of::<CircuitBreaker<CountWindow<100>>>(),
        round_up(fixed + 1024)
    );
    assert_eq!(size_of::<CircuitBreaker<CountWindow<100>>>(), 1664);
}

#[test]
fn plain_values() {
    assert_eq!(size_of::<PermitToken>(), 4);
    assert_eq!(size_of::<Deadline>(), 16);
    // window 24 (u8 tag, u32, u64) + minimum_calls 4 + pad 4 + failure threshold
    // Option<Ratio> 16 + slow threshold 8 + slow duration Option<u64> 16 + consecutive
    // Option<u32> 8 + open duration 8 + multiplier 8 + max open Option<u64> 16 + jitter 8
    // + two u32 counts 8 + max wait Option<u64> 16 + seed 8.
    assert_eq!(size_of::<BreakerConfig>(), 152);
}
