//! Sequential reference model of DESIGN §7: every record kept with its time
//! bucket; quantiles computed exactly by sorting, and the histogram's reported
//! value derived from the documented bucketing (values below 32 ns exact; above,
//! each power of two split into 16 buckets, reported at their midpoint).

pub struct MHealth {
    pub width: u64,
    pub buckets: u64,
    pub head: u64,
    /// (time bucket, latency, failed)
    pub records: Vec<(u64, u64, bool)>,
}

impl MHealth {
    pub fn new(buckets: u64, width: u64) -> Self {
        Self {
            width,
            buckets,
            head: 0,
            records: Vec::new(),
        }
    }

    pub fn record(&mut self, latency: u64, failed: bool, now: u64) {
        self.head = self.head.max(now / self.width);
        self.records.push((self.head, latency, failed));
    }

    fn live(&self, now: u64) -> Vec<(u64, bool)> {
        let head = self.head.max(now / self.width);
        self.records
            .iter()
            .filter(|(b, _, _)| *b <= head && head - b < self.buckets)
            .map(|(_, l, f)| (*l, *f))
            .collect()
    }

    pub fn counts(&self, now: u64) -> (u64, u64) {
        let live = self.live(now);
        (
            live.len() as u64,
            live.iter().filter(|(_, f)| *f).count() as u64,
        )
    }

    /// Exact nearest-rank quantile `ppm / 10⁶`.
    pub fn exact_quantile(&self, ppm: u64, now: u64) -> Option<u64> {
        let mut l: Vec<u64> = self.live(now).into_iter().map(|(l, _)| l).collect();
        if l.is_empty() {
            return None;
        }
        l.sort_unstable();
        let n = l.len() as u64;
        let rank = (n * ppm).div_ceil(1_000_000).max(1);
        Some(l[(rank - 1) as usize])
    }
}

/// The value the histogram reports for latency `v`: the midpoint of its bucket.
pub fn reported(v: u64) -> u64 {
    let v = v.min((1 << 35) - 1);
    if v < 32 {
        return v;
    }
    let e = 63 - u64::from(v.leading_zeros());
    let w = 1u64 << (e - 4);
    (v / w) * w + w / 2
}

/// DESIGN §7 status from an error count and a p99.
pub fn status(
    calls: u64,
    errors: u64,
    p99: Option<u64>,
    rates: (u64, u64),
    p99s: (u64, u64),
) -> &'static str {
    // rates in percent: (degraded, unhealthy); p99 limits in ns: (degraded, unhealthy)
    if calls == 0 {
        return "healthy";
    }
    let p = p99.unwrap_or(0);
    if errors * 100 > rates.1 * calls || p > p99s.1 {
        "unhealthy"
    } else if errors * 100 > rates.0 * calls || p > p99s.0 {
        "degraded"
    } else {
        "healthy"
    }
}
