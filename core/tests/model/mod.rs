//! A sequential reference model of the circuit breaker, written straight from
//! DESIGN.md §2–3 with plain data (a list of outcomes, an enum of states), sharing no
//! code with the implementation. Tests drive both with the same operations and
//! compare every decision.
#![allow(dead_code)] // each test binary uses a different part of the model

/// Window shape of the model.
#[derive(Clone, Copy, Debug)]
pub enum MWindow {
    Count(usize),
    Time { buckets: u64, width: u64 },
}

/// The model's configuration: the DESIGN §3 fields, rules off as `None`.
/// Multipliers are whole numbers here so `base · m^(k−1)` is exact.
#[derive(Clone, Copy, Debug)]
pub struct MConfig {
    pub window: MWindow,
    pub minimum_calls: u64,
    pub failure_pct: Option<u64>,
    pub slow_pct: u64,
    pub slow_ns: Option<u64>,
    pub consecutive: Option<u64>,
    pub open_ns: u64,
    pub multiplier: u64,
    pub max_open_ns: Option<u64>,
    pub half_open_max_calls: u64,
    pub half_open_successes: u64,
    pub half_open_max_wait_ns: Option<u64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MState {
    Closed,
    Open {
        until: u64,
    },
    HalfOpen {
        since: u64,
        in_flight: u64,
        successes: u64,
    },
    Forced,
    Disabled,
}

impl MState {
    pub fn name(self) -> &'static str {
        match self {
            Self::Closed => "closed",
            Self::Open { .. } => "open",
            Self::HalfOpen { .. } => "half_open",
            Self::Forced => "forced_open",
            Self::Disabled => "disabled",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MOutcome {
    Success,
    Failure,
    Ignored,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MTotals {
    pub admitted: u64,
    pub rejected: u64,
    pub successes: u64,
    pub failures: u64,
    pub slow: u64,
    pub ignored: u64,
    pub stale: u64,
    pub transitions: u64,
}

/// One outcome in the closed window: when (bucket epoch) and what.
#[derive(Clone, Copy, Debug)]
struct Rec {
    bucket: u64,
    failure: bool,
    slow: bool,
}

pub struct Model {
    pub cfg: MConfig,
    pub state: MState,
    pub epoch: u64,
    openings: u64,
    run: u64,
    window: Vec<Rec>,
    /// Epochs that were half-open: their permits count as admitted when
    /// acquired, every other permit when recorded.
    probe_epochs: std::collections::HashSet<u64>,
    pub totals: MTotals,
}

/// Window counts: calls, failures, slow, slow failures.
pub type MCounts = (u64, u64, u64, u64);

impl Model {
    pub fn new(cfg: MConfig) -> Self {
        Self {
            cfg,
            state: MState::Closed,
            epoch: 0,
            openings: 0,
            run: 0,
            window: Vec::new(),
            probe_epochs: std::collections::HashSet::new(),
            totals: MTotals::default(),
        }
    }

    /// `min(cap, base · m^(k−1))`, saturating.
    pub fn open_duration(&self, k: u64) -> u64 {
        let cap = self.cfg.max_open_ns.unwrap_or(u64::MAX);
        let mut d = u128::from(self.cfg.open_ns);
        for _ in 1..k {
            d = (d * u128::from(self.cfg.multiplier)).min(u128::from(u64::MAX));
        }
        (d.min(u128::from(cap))) as u64
    }

    fn change(&mut self, to: MState) {
        // Half-open epochs are odd, all others even: one number skipped when needed.
        let half_open = matches!(to, MState::HalfOpen { .. });
        self.epoch += 1;
        if (self.epoch % 2 == 1) != half_open {
            self.epoch += 1;
        }
        if half_open {
            self.probe_epochs.insert(self.epoch);
        }
        self.totals.transitions += 1;
        self.state = to;
    }

    fn open(&mut self, now: u64, k: u64) {
        self.openings = k.min(2047);
        let until = now.saturating_add(self.open_duration(self.openings));
        self.change(MState::Open { until });
    }

    fn close(&mut self) {
        self.openings = 0;
        self.run = 0;
        self.window.clear();
        self.change(MState::Closed);
    }

    /// `Ok(epoch)` when admitted, `Err(retry_after)` when rejected.
    pub fn acquire(&mut self, now: u64) -> Result<u64, Option<u64>> {
        let r = self.acquire_inner(now);
        match r {
            // Only a probe is counted when admitted (its slot is taken now).
            Ok(_) if matches!(self.state, MState::HalfOpen { .. }) => self.totals.admitted += 1,
            Ok(_) => {}
            Err(_) => self.totals.rejected += 1,
        }
        r
    }

    fn acquire_inner(&mut self, now: u64) -> Result<u64, Option<u64>> {
        match self.state {
            MState::Closed | MState::Disabled => Ok(self.epoch),
            MState::Forced => Err(None),
            MState::Open { until } => {
                if now < until {
                    return Err(Some(until - now));
                }
                self.change(MState::HalfOpen {
                    since: now,
                    in_flight: 1,
                    successes: 0,
                });
                Ok(self.epoch)
            }
            MState::HalfOpen {
                since,
                in_flight,
                successes,
            } => {
                if let Some(w) = self.cfg.half_open_max_wait_ns
                    && now - since >= w
                {
                    self.open(now, self.openings + 1);
                    let MState::Open { until } = self.state else {
                        unreachable!()
                    };
                    return Err(Some(until - now));
                }
                if in_flight < self.cfg.half_open_max_calls {
                    self.state = MState::HalfOpen {
                        since,
                        in_flight: in_flight + 1,
                        successes,
                    };
                    Ok(self.epoch)
                } else {
                    Err(None)
                }
            }
        }
    }

    pub fn record(&mut self, epoch: u64, outcome: MOutcome, duration: u64, now: u64) {
        let slow = outcome != MOutcome::Ignored && self.cfg.slow_ns.is_some_and(|s| duration > s);
        match outcome {
            MOutcome::Success => self.totals.successes += 1,
            MOutcome::Failure => self.totals.failures += 1,
            MOutcome::Ignored => self.totals.ignored += 1,
        }
        if !self.probe_epochs.contains(&epoch) {
            self.totals.admitted += 1;
        }
        if slow {
            self.totals.slow += 1;
        }
        if epoch != self.epoch {
            self.totals.stale += 1;
            return;
        }
        match self.state {
            MState::Closed => self.record_closed(outcome, slow, now),
            MState::HalfOpen {
                since,
                in_flight,
                successes,
            } => match outcome {
                MOutcome::Ignored => {
                    self.state = MState::HalfOpen {
                        since,
                        in_flight: in_flight - 1,
                        successes,
                    };
                }
                MOutcome::Failure => self.open(now, self.openings + 1),
                MOutcome::Success => {
                    if successes + 1 >= self.cfg.half_open_successes {
                        self.close();
                    } else {
                        self.state = MState::HalfOpen {
                            since,
                            in_flight: in_flight - 1,
                            successes: successes + 1,
                        };
                    }
                }
            },
            _ => {}
        }
    }

    fn record_closed(&mut self, outcome: MOutcome, slow: bool, now: u64) {
        let failure = match outcome {
            MOutcome::Ignored => return,
            MOutcome::Success => false,
            MOutcome::Failure => true,
        };
        let bucket = match self.cfg.window {
            MWindow::Count(_) => 0,
            MWindow::Time { width, .. } => now / width,
        };
        self.window.push(Rec {
            bucket,
            failure,
            slow,
        });
        self.run = if failure { self.run + 1 } else { 0 };
        let (calls, failures, slow_calls, _) = self.counts(now);
        let gate = match self.cfg.window {
            MWindow::Count(n) => self.cfg.minimum_calls.min(n as u64),
            MWindow::Time { .. } => self.cfg.minimum_calls,
        };
        let by_rate = calls >= gate
            && calls > 0
            && (self
                .cfg
                .failure_pct
                .is_some_and(|p| failures * 100 >= p * calls)
                || (self.cfg.slow_ns.is_some() && slow_calls * 100 >= self.cfg.slow_pct * calls));
        let by_run = self.cfg.consecutive.is_some_and(|n| self.run >= n);
        if by_rate || by_run {
            self.open(now, 1);
        }
    }

    /// The closed window's counts as of `now`.
    pub fn counts(&self, now: u64) -> MCounts {
        let live: Vec<&Rec> = match self.cfg.window {
            MWindow::Count(n) => self.window.iter().rev().take(n).collect(),
            MWindow::Time { buckets, width } => {
                let head = now / width;
                self.window
                    .iter()
                    .filter(|r| r.bucket <= head && head - r.bucket < buckets)
                    .collect()
            }
        };
        let calls = live.len() as u64;
        let failures = live.iter().filter(|r| r.failure).count() as u64;
        let slow = live.iter().filter(|r| r.slow).count() as u64;
        let slow_failures = live.iter().filter(|r| r.slow && r.failure).count() as u64;
        (calls, failures, slow, slow_failures)
    }

    pub fn retry_after(&self, now: u64) -> Option<u64> {
        match self.state {
            MState::Open { until } => (now < until).then(|| until - now),
            MState::HalfOpen { since, .. } => {
                let w = self.cfg.half_open_max_wait_ns?;
                (now - since >= w).then(|| self.open_duration((self.openings + 1).min(2047)))
            }
            _ => None,
        }
    }

    pub fn force_open(&mut self) {
        self.change(MState::Forced);
    }

    pub fn disable(&mut self) {
        self.change(MState::Disabled);
    }

    pub fn reset(&mut self) {
        self.close();
    }
}

pub mod health;
pub mod rate_limiter;
pub mod retry;
pub mod semaphore;
