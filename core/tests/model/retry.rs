//! Sequential reference models of DESIGN §4 (backoff, Finagle retry budget, gRPC
//! retry throttle), written from the spec with plain integers and lists.

/// `exp(n) = min(cap, base · m^(n−1))`, each multiplication rounded down
/// (multiplier in ppm). Stops early once the value is capped or stops changing.
pub fn exp(base: u64, m_ppm: u64, cap: u64, n: u32) -> u64 {
    let mut d = u128::from(base);
    for _ in 1..n.max(1) {
        if d >= u128::from(cap) {
            break;
        }
        let next = d * u128::from(m_ppm) / 1_000_000;
        if next == d {
            break;
        }
        d = next;
    }
    d.min(u128::from(cap)) as u64
}

/// The documented draw from `[lo, hi]` given 64 random bits: `lo + ⌊bits · (hi −
/// lo + 1) / 2⁶⁴⌋`.
pub fn uniform(bits: u64, lo: u64, hi: u64) -> u64 {
    if hi <= lo {
        return lo;
    }
    let span = u128::from(hi - lo) + 1;
    lo + ((u128::from(bits) * span) >> 64) as u64
}

#[derive(Clone, Copy, Debug)]
pub enum MJitter {
    None,
    Full,
    Equal,
    Decorrelated,
    Proportional(u64),
}

/// The jittered delay of DESIGN §4 for attempt `n`, previous delay `prev`.
pub fn delay(base: u64, m_ppm: u64, cap: u64, j: MJitter, n: u32, prev: u64, bits: u64) -> u64 {
    // "base 0 is valid and gives zero delays", whatever the previous delay.
    if base == 0 {
        return 0;
    }
    let e = exp(base, m_ppm, cap, n);
    match j {
        MJitter::None => e,
        MJitter::Full => uniform(bits, 0, e),
        MJitter::Equal => uniform(bits, e / 2, e),
        MJitter::Decorrelated => {
            if n <= 1 {
                base.min(cap)
            } else {
                uniform(bits, base, prev.saturating_mul(3)).min(cap)
            }
        }
        MJitter::Proportional(f) => {
            let lo = (u128::from(e) * u128::from(1_000_000 - f) / 1_000_000) as u64;
            let hi = (u128::from(e) * u128::from(1_000_000 + f) / 1_000_000)
                .min(u128::from(u64::MAX)) as u64;
            uniform(bits, lo, hi).min(cap)
        }
    }
}

/// Finagle retry budget: every request and retry remembered with its bucket.
pub struct MBudget {
    pub width: u64,
    pub reserve_ppm: i128,
    pub deposit_ppm: i128,
    pub head: u64,
    /// `(bucket, is_retry)`
    pub events: Vec<(u64, bool)>,
}

impl MBudget {
    pub fn new(ttl_ns: u64, min_per_sec: u64, percent_ppm: u64) -> Self {
        Self {
            width: ttl_ns / 10,
            // min · ttl retries = min · ttl_ns / 10⁹ retries = min · ttl_ns / 10³ ppm.
            reserve_ppm: i128::from(min_per_sec) * i128::from(ttl_ns) / 1000,
            deposit_ppm: i128::from(percent_ppm),
            head: 0,
            events: Vec::new(),
        }
    }

    fn at(&mut self, now: u64) -> u64 {
        self.head = self.head.max(now / self.width);
        self.head
    }

    fn live(&self, head: u64) -> impl Iterator<Item = &(u64, bool)> {
        self.events
            .iter()
            .filter(move |(b, _)| *b <= head && head - b < 10)
    }

    pub fn balance(&self, now: u64) -> i128 {
        let head = self.head.max(now / self.width);
        let requests = self.live(head).filter(|(_, r)| !r).count() as i128;
        let retries = self.live(head).filter(|(_, r)| *r).count() as i128;
        self.reserve_ppm + requests * self.deposit_ppm - retries * 1_000_000
    }

    pub fn deposit(&mut self, now: u64) {
        let b = self.at(now);
        self.events.push((b, false));
    }

    pub fn withdraw(&mut self, now: u64) -> bool {
        let b = self.at(now);
        if self.balance(now) >= 1_000_000 {
            self.events.push((b, true));
            true
        } else {
            false
        }
    }
}

/// gRPC A6 retry throttle in milli-tokens.
pub struct MThrottle {
    pub max: u64,
    pub ratio: u64,
    pub tokens: u64,
}

impl MThrottle {
    pub fn new(max: u64, ratio: u64) -> Self {
        Self {
            max,
            ratio,
            tokens: max,
        }
    }

    pub fn failure(&mut self) -> bool {
        self.tokens = self.tokens.saturating_sub(1000);
        self.tokens * 2 > self.max
    }

    pub fn success(&mut self) {
        self.tokens = (self.tokens + self.ratio).min(self.max);
    }
}
