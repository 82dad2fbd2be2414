//! Log-linear bucketing of latencies (the `HdrHistogram` layout with 4 sub-bucket
//! bits): values below 32 ns get a bucket each; above, every power of two is split
//! into 16 equal buckets. A bucket `[lower, lower + width)` has
//! `width ≤ lower / 16`, so reporting its midpoint is off by at most
//! `width / 2 ≤ lower / 32`: **a relative error of at most 1/32 = 3.125 %**
//! (exact below 32 ns). Values from 2³⁵ ns (≈ 34.4 s) up count in the top bucket.

/// Sub-bucket bits: 16 buckets per power of two.
const SUB_BITS: u32 = 4;
const SUB: u64 = 1 << SUB_BITS;

/// Number of buckets.
#[cfg(not(loom))]
pub const HISTOGRAM_BUCKETS: usize = 512;
/// Under loom the same protocol runs over the first 32 buckets (values below 32 ns
/// each their own), so a model explores every interleaving without hitting loom's
/// branch limit on the 512 loads of a snapshot.
#[cfg(loom)]
pub const HISTOGRAM_BUCKETS: usize = 32;

/// Largest latency told apart (ns); larger ones count as this: 2³⁵ − 1.
pub const MAX_TRACKED_NS: u64 = lower(HISTOGRAM_BUCKETS - 1) + width(HISTOGRAM_BUCKETS - 1) - 1;

/// The bucket of `v` (ns).
pub(crate) const fn index(v: u64) -> usize {
    let v = if v > MAX_TRACKED_NS {
        MAX_TRACKED_NS
    } else {
        v
    };
    if v < SUB {
        return v as usize;
    }
    let e = v.ilog2(); // ≥ SUB_BITS
    ((((e - SUB_BITS + 1) as u64) << SUB_BITS) + ((v >> (e - SUB_BITS)) & (SUB - 1))) as usize
}

/// Smallest value of bucket `i`.
pub(crate) const fn lower(i: usize) -> u64 {
    let i = i as u64;
    if i < SUB {
        return i;
    }
    let e = (i >> SUB_BITS) as u32 + SUB_BITS - 1;
    (SUB + (i & (SUB - 1))) << (e - SUB_BITS)
}

/// Width of bucket `i`.
pub(crate) const fn width(i: usize) -> u64 {
    let i = i as u64;
    if i < 2 * SUB {
        return 1;
    }
    let e = (i >> SUB_BITS) as u32 + SUB_BITS - 1;
    1 << (e - SUB_BITS)
}

/// The value reported for bucket `i`: its midpoint (whole ns, rounded down).
pub(crate) const fn representative(i: usize) -> u64 {
    lower(i) + width(i) / 2
}
