//! `breaker` scenarios: config parsing, the step interpreter, and the driver trait
//! an implementation plugs in (the Rust core here; the C ABI in `ffi-c`).

use std::collections::HashMap;

use seawall_core::{
    BreakerConfig, CircuitBreaker, CountWindow, Outcome, PermitToken, State, TimeWindow,
    WindowConfig,
};

use crate::scenario::{Fields, Scenario, StepClock, StepError, factor, ms_to_ns, percent, whole};

/// What a breaker implementation must offer to run the scenarios. Times in ns.
pub trait BreakerDriver {
    /// A held permit.
    type Permit;
    /// Acquire at `now`; `None` when rejected.
    fn acquire(&mut self, now: u64) -> Option<Self::Permit>;
    /// Record a held permit.
    fn record(&mut self, permit: Self::Permit, outcome: Outcome, duration: u64, now: u64);
    /// The state's DESIGN name.
    fn state(&self) -> String;
    /// What a rejection in `open` at `now` would report.
    fn retry_after(&self, now: u64) -> Option<u64>;
    /// `forced_open`.
    fn force_open(&mut self);
    /// `disabled`.
    fn disable(&mut self);
    /// `reset()`.
    fn reset(&mut self);
}

const CONFIG_KEYS: &[&str] = &[
    "window",
    "minimum_calls",
    "failure_rate_threshold",
    "slow_call_duration_ms",
    "slow_call_rate_threshold",
    "consecutive_failures",
    "open_duration_ms",
    "open_backoff_multiplier",
    "max_open_duration_ms",
    "open_jitter_factor",
    "half_open_max_calls",
    "half_open_success_threshold",
    "half_open_max_wait_ms",
];

fn count(f: &Fields<'_>, key: &str, default: u32) -> Result<u32, String> {
    f.u64(key)?.map_or(Ok(default), |n| {
        u32::try_from(n).map_err(|_| format!("`{key}` too large"))
    })
}

fn window_config(f: &Fields<'_>) -> Result<WindowConfig, String> {
    let Some(serde_json::Value::Object(w)) = f.raw("window") else {
        return if f.has("window") {
            Err("`window` is not an object".into())
        } else {
            Ok(WindowConfig::DEFAULT)
        };
    };
    let w = Fields::new(w, "window");
    match w.str("kind")? {
        Some("count") => {
            w.only(&["kind", "size"])?;
            Ok(WindowConfig::Count {
                size: count(&w, "size", 0)?,
            })
        }
        Some("time") => {
            w.only(&["kind", "buckets", "bucket_ms"])?;
            Ok(WindowConfig::Time {
                buckets: count(&w, "buckets", 0)?,
                bucket_width_ns: ms_to_ns(w.f64("bucket_ms")?.unwrap_or(0.0)),
            })
        }
        other => Err(format!("unknown window kind {other:?}")),
    }
}

/// The scenario's `breaker` object as a core config (DESIGN defaults for omitted keys).
pub fn parse_config(
    map: &serde_json::Map<String, serde_json::Value>,
) -> Result<BreakerConfig, String> {
    let f = Fields::new(map, "breaker");
    f.only(CONFIG_KEYS)?;
    let d = BreakerConfig::DEFAULT;
    let ns = ms_to_ns;
    Ok(BreakerConfig {
        window: window_config(&f)?,
        minimum_calls: count(&f, "minimum_calls", d.minimum_calls)?,
        failure_rate_threshold: f.rule(
            "failure_rate_threshold",
            d.failure_rate_threshold,
            percent,
        )?,
        slow_call_rate_threshold: f
            .f64("slow_call_rate_threshold")?
            .map_or(d.slow_call_rate_threshold, percent),
        slow_call_duration_ns: f.rule("slow_call_duration_ms", d.slow_call_duration_ns, ns)?,
        consecutive_failures: f.rule("consecutive_failures", d.consecutive_failures, |n| {
            u32::try_from(whole(n)).unwrap_or(u32::MAX)
        })?,
        open_duration_ns: f.f64("open_duration_ms")?.map_or(d.open_duration_ns, ns),
        open_backoff_multiplier: f
            .f64("open_backoff_multiplier")?
            .map_or(d.open_backoff_multiplier, factor),
        max_open_duration_ns: f.rule("max_open_duration_ms", d.max_open_duration_ns, ns)?,
        open_jitter_factor: f
            .f64("open_jitter_factor")?
            .map_or(d.open_jitter_factor, factor),
        half_open_max_calls: count(&f, "half_open_max_calls", d.half_open_max_calls)?,
        half_open_success_threshold: count(
            &f,
            "half_open_success_threshold",
            d.half_open_success_threshold,
        )?,
        half_open_max_wait_ns: f.rule("half_open_max_wait_ms", d.half_open_max_wait_ns, ns)?,
        jitter_seed: d.jitter_seed,
    })
}

fn outcome(s: &str) -> Option<Outcome> {
    match s {
        "success" => Some(Outcome::Success),
        "failure" => Some(Outcome::Failure),
        "ignored" => Some(Outcome::Ignored),
        _ => None,
    }
}

const STEP_KEYS: &[&str] = &[
    "at_ms",
    "call",
    "duration_ms",
    "expect",
    "acquire",
    "record",
    "outcome",
    "force_open",
    "disable",
    "reset",
    "expect_state",
    "expect_retry_after_ms",
];

/// Run a breaker scenario against driver `d`.
pub fn run<D: BreakerDriver>(sc: &Scenario, d: &mut D) -> Result<(), StepError> {
    let mut clock = StepClock::default();
    let mut held: HashMap<String, D::Permit> = HashMap::new();
    for (i, step) in sc.steps.iter().enumerate() {
        let now = clock.advance(i, step)?;
        let f = Fields::new(step, "step");
        let bad = |m: String| StepError::malformed(i, m);
        f.only(STEP_KEYS).map_err(bad)?;
        let duration = ms_to_ns(f.f64("duration_ms").map_err(bad)?.unwrap_or(0.0));
        let expect = f.str("expect").map_err(bad)?;
        let check_admission = |admitted: bool| -> Result<(), StepError> {
            let got = if admitted { "admitted" } else { "rejected" };
            match expect {
                Some(e) if e != got => Err(StepError::mismatch(i, e, got)),
                _ => Ok(()),
            }
        };
        if let Some(call) = f.str("call").map_err(bad)? {
            let o = outcome(call).ok_or_else(|| bad(format!("unknown outcome {call:?}")))?;
            let p = d.acquire(now);
            check_admission(p.is_some())?;
            if let Some(p) = p {
                d.record(p, o, duration, now);
            }
        } else if let Some(name) = f.str("acquire").map_err(bad)? {
            let p = d.acquire(now);
            check_admission(p.is_some())?;
            if let Some(p) = p {
                held.insert(name.to_owned(), p);
            }
        } else if let Some(name) = f.str("record").map_err(bad)? {
            let o = f.str("outcome").map_err(bad)?.and_then(outcome);
            let o = o.ok_or_else(|| bad("`record` needs an `outcome`".into()))?;
            let p = held
                .remove(name)
                .ok_or_else(|| bad(format!("no held permit {name:?}")))?;
            d.record(p, o, duration, now);
        } else if f.has("force_open") {
            d.force_open();
        } else if f.has("disable") {
            d.disable();
        } else if f.has("reset") {
            d.reset();
        } else if let Some(want) = f.str("expect_state").map_err(bad)? {
            let got = d.state();
            if got != want {
                return Err(StepError::mismatch(i, want, got));
            }
        } else if f.has("expect_retry_after_ms") {
            let want = f.f64("expect_retry_after_ms").map_err(bad)?.map(ms_to_ns);
            let got = d.retry_after(now);
            if got != want {
                let ms = |v: Option<u64>| v.map(crate::scenario::ns_to_ms);
                return Err(StepError::mismatch(i, ms(want), ms(got)));
            }
        } else if !f.has("at_ms") {
            return Err(bad("step does nothing".into()));
        }
    }
    Ok(())
}

/// The Rust core behind [`BreakerDriver`], for either window kind.
pub enum CoreBreaker {
    /// Count-based window.
    Count(Box<CircuitBreaker<CountWindow<4095>>>),
    /// Time-based window.
    Time(Box<CircuitBreaker<TimeWindow<256>>>),
}

impl CoreBreaker {
    /// Build from a config; a config error is reported as its message.
    pub fn new(cfg: BreakerConfig) -> Result<Self, String> {
        Ok(match cfg.window {
            WindowConfig::Count { .. } => Self::Count(Box::new(
                CircuitBreaker::new(cfg).map_err(|e| e.to_string())?,
            )),
            WindowConfig::Time { .. } => Self::Time(Box::new(
                CircuitBreaker::new(cfg).map_err(|e| e.to_string())?,
            )),
        })
    }
}

macro_rules! each {
    ($self:expr, $b:ident => $e:expr) => {
        match $self {
            CoreBreaker::Count($b) => $e,
            CoreBreaker::Time($b) => $e,
        }
    };
}

impl BreakerDriver for CoreBreaker {
    type Permit = PermitToken;

    fn acquire(&mut self, now: u64) -> Option<PermitToken> {
        each!(self, b => b.acquire_token(now).ok())
    }

    fn record(&mut self, permit: PermitToken, outcome: Outcome, duration: u64, now: u64) {
        each!(self, b => b.record_token(permit, outcome, duration, now));
    }

    fn state(&self) -> String {
        let s: State = each!(self, b => b.state());
        s.name().to_owned()
    }

    fn retry_after(&self, now: u64) -> Option<u64> {
        each!(self, b => b.retry_after(now))
    }

    fn force_open(&mut self) {
        each!(self, b => b.force_open());
    }

    fn disable(&mut self) {
        each!(self, b => b.disable());
    }

    fn reset(&mut self) {
        each!(self, b => b.reset());
    }
}
