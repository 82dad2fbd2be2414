//! `semaphore` scenarios: admission, load shedding, FIFO waiting, cancellation.

use std::collections::HashSet;

use seawall_core::{
    CancelOutcome, Priority, PriorityShares, Ratio, RawAdmission, Semaphore, SemaphoreConfig,
    Ticket, TicketState,
};

use crate::scenario::{Fields, Scenario, StepClock, StepError, percent};

/// What an acquire did.
#[derive(Debug)]
pub enum Acquired<T> {
    /// A permit is held.
    Admitted,
    /// Waiting with this ticket.
    Queued(T),
    /// Refused.
    Rejected,
}

/// What a semaphore implementation must offer.
pub trait SemaphoreDriver {
    /// A place in the queue.
    type Ticket;
    /// Acquire for `priority`, waiting in the queue if `wait` and there is room.
    fn acquire(&mut self, priority: Priority, wait: bool) -> Acquired<Self::Ticket>;
    /// `true` once the ticket has been handed a permit.
    fn granted(&mut self, ticket: &Self::Ticket) -> bool;
    /// The waiter gives up.
    fn cancel(&mut self, ticket: Self::Ticket);
    /// A holder gives its permit back.
    fn release(&mut self);
    /// `(active, queued)`.
    fn occupancy(&self) -> (u32, u32);
}

fn priority(s: &str) -> Option<Priority> {
    Priority::ALL.into_iter().find(|p| p.name() == s)
}

/// The scenario's `semaphore` object as a core config.
pub fn parse_config(
    map: &serde_json::Map<String, serde_json::Value>,
) -> Result<SemaphoreConfig, String> {
    let f = Fields::new(map, "semaphore");
    f.only(&["max_concurrent", "max_queue", "priority_shares"])?;
    let d = SemaphoreConfig::DEFAULT;
    let count = |key: &str, default: u32| -> Result<u32, String> {
        f.u64(key)?.map_or(Ok(default), |n| {
            u32::try_from(n).map_err(|_| format!("`{key}` too large"))
        })
    };
    let mut shares = PriorityShares::ALL_FULL;
    if let Some(v) = f.raw("priority_shares") {
        let serde_json::Value::Object(m) = v else {
            return Err("`priority_shares` is not an object".into());
        };
        let s = Fields::new(m, "priority_shares");
        s.only(&["critical", "high", "normal", "low"])?;
        let pct =
            |key: &str| -> Result<Ratio, String> { Ok(s.f64(key)?.map_or(Ratio::ONE, percent)) };
        shares = PriorityShares {
            critical: pct("critical")?,
            high: pct("high")?,
            normal: pct("normal")?,
            low: pct("low")?,
        };
    }
    Ok(SemaphoreConfig {
        max_concurrent: count("max_concurrent", d.max_concurrent)?,
        max_queue: count("max_queue", d.max_queue)?,
        shares,
    })
}

const STEP_KEYS: &[&str] = &[
    "at_ms",
    "acquire",
    "priority",
    "wait",
    "expect",
    "cancel",
    "release",
    "expect_granted",
];

/// Run a semaphore scenario against driver `d`. After every step the interpreter
/// polls each waiter in queue order, so the log of grants is in grant order (a
/// step grants at most one waiter).
pub fn run<D: SemaphoreDriver>(sc: &Scenario, d: &mut D) -> Result<(), StepError> {
    let mut clock = StepClock::default();
    let mut holders: HashSet<String> = HashSet::new();
    let mut waiting: Vec<(String, D::Ticket)> = Vec::new();
    let mut granted_log: Vec<String> = Vec::new();
    for (i, step) in sc.steps.iter().enumerate() {
        clock.advance(i, step)?;
        let f = Fields::new(step, "step");
        let bad = |m: String| StepError::malformed(i, m);
        f.only(STEP_KEYS).map_err(bad)?;
        if let Some(name) = f.str("acquire").map_err(bad)? {
            let p = match f.str("priority").map_err(bad)? {
                None => Priority::Normal,
                Some(s) => priority(s).ok_or_else(|| bad(format!("unknown priority {s:?}")))?,
            };
            let wait = f.bool("wait").map_err(bad)?.unwrap_or(false);
            let got = match d.acquire(p, wait) {
                Acquired::Admitted => {
                    holders.insert(name.to_owned());
                    "admitted"
                }
                Acquired::Queued(t) => {
                    waiting.push((name.to_owned(), t));
                    "queued"
                }
                Acquired::Rejected => "rejected",
            };
            if let Some(want) = f.str("expect").map_err(bad)?
                && want != got
            {
                return Err(StepError::mismatch(i, want, got));
            }
        } else if let Some(name) = f.str("cancel").map_err(bad)? {
            let at = waiting
                .iter()
                .position(|(n, _)| n == name)
                .ok_or_else(|| bad(format!("no waiter {name:?}")))?;
            let (_, t) = waiting.remove(at);
            d.cancel(t);
        } else if let Some(name) = f.str("release").map_err(bad)? {
            if !holders.remove(name) {
                return Err(bad(format!("{name:?} holds no permit")));
            }
            d.release();
        } else if let Some(want) = f.raw("expect_granted") {
            let want: Vec<&str> = want
                .as_array()
                .ok_or_else(|| bad("`expect_granted` is not a list".into()))?
                .iter()
                .map(|v| v.as_str().unwrap_or("?"))
                .collect();
            if granted_log != want {
                return Err(StepError::mismatch(i, want, &granted_log));
            }
            granted_log.clear();
        } else if let Some(serde_json::Value::Object(m)) = f.raw("expect") {
            let e = Fields::new(m, "expect");
            let want = (
                e.u64("active").map_err(bad)?.unwrap_or(0),
                e.u64("queued").map_err(bad)?.unwrap_or(0),
            );
            let (a, q) = d.occupancy();
            if want != (u64::from(a), u64::from(q)) {
                return Err(StepError::mismatch(
                    i,
                    format!("active {}, queued {}", want.0, want.1),
                    format!("active {a}, queued {q}"),
                ));
            }
        } else if !f.has("at_ms") {
            return Err(bad("step does nothing".into()));
        }
        let mut k = 0;
        while k < waiting.len() {
            if d.granted(&waiting[k].1) {
                let (name, _) = waiting.remove(k);
                granted_log.push(name.clone());
                holders.insert(name);
            } else {
                k += 1;
            }
        }
    }
    Ok(())
}

/// The Rust core behind [`SemaphoreDriver`].
pub struct CoreSemaphore(pub Box<Semaphore<64>>);

impl SemaphoreDriver for CoreSemaphore {
    type Ticket = Ticket;

    fn acquire(&mut self, priority: Priority, wait: bool) -> Acquired<Ticket> {
        match self.0.acquire_raw(priority, wait) {
            Ok(RawAdmission::Admitted) => Acquired::Admitted,
            Ok(RawAdmission::Queued(t)) => Acquired::Queued(t),
            Err(_) => Acquired::Rejected,
        }
    }

    fn granted(&mut self, ticket: &Ticket) -> bool {
        self.0.poll(*ticket) == TicketState::Granted
    }

    fn cancel(&mut self, ticket: Ticket) {
        // A permit granted in the same instant is passed on by the core itself.
        let _: CancelOutcome = self.0.cancel(ticket);
    }

    fn release(&mut self) {
        self.0.release();
    }

    fn occupancy(&self) -> (u32, u32) {
        let s = self.0.snapshot();
        (s.active, s.queued)
    }
}
