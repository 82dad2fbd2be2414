//! A sequential reference model of the GCRA rate limiter, written straight from
//! DESIGN §10 in `i128` arithmetic (nothing saturates, wraps or goes below zero unseen), sharing no
//! code with the implementation.

/// What one take returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MTake {
    Admitted,
    Rejected {
        retry_after: u64,
    },
    /// `n = 0` or `n > burst`.
    Invalid,
}

/// One GCRA cell: `T`, `τ`, `burst` and the theoretical arrival time, in i128.
#[derive(Clone, Copy, Debug)]
pub struct MGcra {
    pub t: i128,
    pub tau: i128,
    pub burst: i128,
    pub tat: i128,
}

impl MGcra {
    /// `rate` cells per `period` ns (valid: `1 ≤ rate ≤ period`), `burst ≥ 1`.
    pub fn new(rate: u64, period: u64, burst: u32) -> Self {
        let t = i128::from(period) / i128::from(rate);
        Self {
            t,
            tau: t * (i128::from(burst) - 1),
            burst: i128::from(burst),
            tat: 0,
        }
    }

    /// `try_acquire(n, now)` of DESIGN §10: `tat = max(TAT, now)`,
    /// `next = tat + n·T`, admit iff `next − T − now ≤ τ`, else
    /// `retry_after = next − T − τ − now`. The clock ends at `u64::MAX`: a TAT
    /// past it cannot be held, so that request is never admitted.
    pub fn take(&mut self, n: u32, now: u64) -> MTake {
        let n = i128::from(n);
        if n == 0 || n > self.burst {
            return MTake::Invalid;
        }
        let now = i128::from(now);
        let tat = self.tat.max(now);
        let next = tat + n * self.t;
        if next > i128::from(u64::MAX) {
            return MTake::Rejected {
                retry_after: u64::MAX,
            };
        }
        if next - self.t - now <= self.tau {
            self.tat = next;
            MTake::Admitted
        } else {
            let retry = next - self.t - self.tau - now;
            MTake::Rejected {
                retry_after: u64::try_from(retry).expect("below next ≤ u64::MAX"),
            }
        }
    }
}
