//! The rate limiter and the keyed rate limiter through the C ABI, against an
//! i128 model of DESIGN §10's GCRA: `T = ⌊period / rate⌋`, `τ = T·(burst − 1)`;
//! `n` cells at `now` are admitted iff `max(TAT, now) + n·T − T − now ≤ τ` and
//! `max(TAT, now) + n·T` fits the u64 clock, else the retry-after is the excess
//! over `τ` (`u64::MAX` past the clock's end); `n ∉ 1 ..= burst` is a
//! configuration error that changes nothing. Keyed: one model word per slot the
//! library reports, so keys on one slot share its cells; byte-string keys, on a
//! limiter of their own, by what two takes at one instant may return.

use std::collections::HashMap;
use std::ptr;

use arbitrary::Arbitrary;
use seawall::capi::rate_limiter::*;
use seawall::capi::seawall_status as S;

fn check(ok: bool, what: &str) {
    assert!(ok, "{what}");
}

/// Raw configuration values, folded into valid ranges unless `raw`.
#[derive(Arbitrary, Debug)]
pub struct LimiterConfig {
    raw: bool,
    rate: u64,
    period_ns: u64,
    burst: u32,
}

#[derive(Arbitrary, Debug)]
pub enum LimiterOp {
    Take(u32),
    TakeKeyed {
        key: u64,
        n: u32,
    },
    /// A byte-string key, on a limiter of its own: the model cannot know its
    /// slot, so the same bytes are taken twice at one instant.
    TakeBytes {
        key: Vec<u8>,
        n: u32,
    },
    /// Move the limiters' clock this far ahead (saturating), to reach the end
    /// of the u64 clock.
    Leap(u64),
}

/// The GCRA of one word.
#[derive(Clone, Copy)]
struct Model {
    t: i128,
    tau: i128,
    burst: u32,
}

impl Model {
    /// `Ok(new TAT)` when admitted, `Err(status, retry-after)` otherwise.
    fn take(self, tat: u64, n: u32, now: u64) -> Result<u64, (S, u64)> {
        if n == 0 || n > self.burst {
            return Err((S::InvalidConfig, 0));
        }
        let next = i128::from(tat.max(now)) + i128::from(n) * self.t;
        let excess = next - self.t - i128::from(now);
        if next > i128::from(u64::MAX) {
            return Err((S::Rejected, u64::MAX));
        }
        if excess <= self.tau {
            Ok(u64::try_from(next).unwrap())
        } else {
            Err((S::Rejected, u64::try_from(excess - self.tau).unwrap()))
        }
    }
}

struct Single {
    h: *mut seawall_rate_limiter,
    tat: u64,
}

struct Keyed {
    h: *mut seawall_keyed_rate_limiter,
    tats: HashMap<u32, u64>,
}

/// Both limiters of one input, made on first use (None inside: refused config).
pub struct Limiters<'a> {
    c: &'a LimiterConfig,
    model: Option<Option<Model>>,
    single: Option<Single>,
    keyed: Option<Keyed>,
    /// Its own keyed limiter for byte-string keys, whose slots the model
    /// cannot know.
    by_bytes: Option<*mut seawall_keyed_rate_limiter>,
    leap: u64,
}

impl<'a> Limiters<'a> {
    pub fn new(c: &'a LimiterConfig) -> Self {
        Self {
            c,
            model: None,
            single: None,
            keyed: None,
            by_bytes: None,
            leap: 0,
        }
    }

    fn config(&self) -> seawall_rate_limiter_config {
        let c = self.c;
        if c.raw {
            return seawall_rate_limiter_config {
                rate: c.rate,
                period_ns: c.period_ns,
                burst: c.burst,
                reserved: 0,
            };
        }
        let period_ns = 1 + c.period_ns % 10_000_000_000;
        seawall_rate_limiter_config {
            rate: 1 + c.rate % period_ns.min(1_000_000),
            period_ns,
            burst: 1 + c.burst % 64,
            reserved: 0,
        }
    }

    /// The model, after checking that both constructors agree with it.
    fn model(&mut self) -> Option<Model> {
        if self.model.is_none() {
            let cfg = self.config();
            let valid =
                cfg.rate >= 1 && cfg.period_ns >= 1 && cfg.burst >= 1 && cfg.rate <= cfg.period_ns;
            let want = if valid { S::Ok } else { S::InvalidConfig };
            let mut h = ptr::null_mut();
            // SAFETY: valid config and out pointers.
            let s = unsafe { seawall_rate_limiter_new(&raw const cfg, &raw mut h) };
            check(s == want && h.is_null() != valid, "limiter config");
            let mut k = ptr::null_mut();
            // SAFETY: valid config and out pointers.
            let s = unsafe { seawall_keyed_rate_limiter_new(&raw const cfg, &raw mut k) };
            check(s == want && k.is_null() != valid, "keyed limiter config");
            let mut b = ptr::null_mut();
            // SAFETY: valid config and out pointers.
            let s = unsafe { seawall_keyed_rate_limiter_new(&raw const cfg, &raw mut b) };
            check(s == want && b.is_null() != valid, "keyed limiter config");
            if valid {
                self.by_bytes = Some(b);
                self.single = Some(Single { h, tat: 0 });
                self.keyed = Some(Keyed {
                    h: k,
                    tats: HashMap::new(),
                });
            }
            let t = cfg.period_ns.checked_div(cfg.rate).unwrap_or(0);
            self.model = Some(valid.then(|| Model {
                t: i128::from(t),
                tau: i128::from(t) * i128::from(cfg.burst - 1),
                burst: cfg.burst,
            }));
        }
        self.model.flatten()
    }

    pub fn step(&mut self, op: &LimiterOp, now: u64) {
        let Some(m) = self.model() else { return };
        let now = now.saturating_add(self.leap);
        match *op {
            LimiterOp::Leap(by) => self.leap = self.leap.saturating_add(by),
            LimiterOp::Take(n) => {
                let l = self.single.as_mut().unwrap();
                let mut retry = 0xDEAD_BEEF;
                // SAFETY: live handle, valid out pointer.
                let s = unsafe { seawall_rate_limiter_try_acquire(l.h, n, now, &raw mut retry) };
                l.tat = expect(m, l.tat, n, now, s, retry);
            }
            LimiterOp::TakeKeyed { key, n } => {
                let k = self.keyed.as_mut().unwrap();
                let mut slot = u32::MAX;
                // SAFETY: live handle, valid out pointer.
                let s = unsafe { seawall_keyed_rate_limiter_slot_of(k.h, key, &raw mut slot) };
                check(
                    s == S::Ok && slot < SEAWALL_KEYED_RATE_LIMITER_SLOTS,
                    "slot",
                );
                let mut retry = 0xDEAD_BEEF;
                // SAFETY: live handle, valid out pointer.
                let s = unsafe {
                    seawall_keyed_rate_limiter_try_acquire(k.h, key, n, now, &raw mut retry)
                };
                let tat = k.tats.get(&slot).copied().unwrap_or(0);
                k.tats.insert(slot, expect(m, tat, n, now, s, retry));
            }
            LimiterOp::TakeBytes { ref key, n } => {
                let h = self.by_bytes.unwrap();
                let mut first = 0xDEAD_BEEF;
                let mut second = 0xDEAD_BEEF;
                // SAFETY: live handle; `key` is readable for its length; valid out pointers.
                let (s1, s2) = unsafe {
                    (
                        seawall_keyed_rate_limiter_try_acquire_bytes(
                            h,
                            key.as_ptr(),
                            key.len(),
                            n,
                            now,
                            &raw mut first,
                        ),
                        seawall_keyed_rate_limiter_try_acquire_bytes(
                            h,
                            key.as_ptr(),
                            key.len(),
                            n,
                            now,
                            &raw mut second,
                        ),
                    )
                };
                check_pair(m, n, (s1, first), (s2, second));
            }
        }
    }

    /// Free both handles.
    pub fn finish(&mut self) {
        if let Some(l) = self.single.take() {
            // SAFETY: live handle, freed once.
            unsafe { seawall_rate_limiter_free(l.h) };
        }
        if let Some(k) = self.keyed.take() {
            // SAFETY: live handle, freed once.
            unsafe { seawall_keyed_rate_limiter_free(k.h) };
        }
        if let Some(b) = self.by_bytes.take() {
            // SAFETY: live handle, freed once.
            unsafe { seawall_keyed_rate_limiter_free(b) };
        }
    }
}

/// Two takes of `n` cells at one instant on one slot whose state is unknown:
/// an invalid `n` refuses both alike; a second admission needs the first
/// (admitting 2n at once fits the burst only when a rested slot would); a
/// refusal after a refusal waits no less.
fn check_pair(m: Model, n: u32, (s1, r1): (S, u64), (s2, r2): (S, u64)) {
    if n == 0 || n > m.burst {
        check(
            s1 == S::InvalidConfig && s2 == S::InvalidConfig,
            "invalid n refused twice",
        );
        return;
    }
    check(
        matches!(s1, S::Ok | S::Rejected) && matches!(s2, S::Ok | S::Rejected),
        "take statuses",
    );
    if s1 == S::Rejected {
        check(
            s2 == S::Rejected && r2 == r1,
            "the same refusal twice at one instant",
        );
    }
    if s2 == S::Ok {
        check(
            s1 == S::Ok && 2 * u64::from(n) <= u64::from(m.burst),
            "two admissions fit one burst",
        );
    }
}

/// Check a take's status and retry-after against the model; the new TAT.
fn expect(m: Model, tat: u64, n: u32, now: u64, s: S, retry: u64) -> u64 {
    match m.take(tat, n, now) {
        Ok(next) => {
            check(s == S::Ok && retry == 0, "admitted as the model");
            next
        }
        Err((S::Rejected, r)) => {
            check(s == S::Rejected && retry == r, "rejected as the model");
            tat
        }
        Err((want, _)) => {
            check(
                s == want && retry == 0xDEAD_BEEF,
                "invalid n changes nothing",
            );
            tat
        }
    }
}
