//! Reading a target service's breaker state and counters from its Prometheus
//! endpoint (`--metrics`, text exposition format), in the names seawall's own
//! exporters emit. Both dialects are read:
//!
//! | what | Python (`seawall.prometheus`) | Node (`registerMetrics`) |
//! |---|---|---|
//! | breaker state (the series at 1) | `seawall_circuit_breaker_state{name,state}` | `seawall_breaker_state{breaker,state}` |
//! | breaker state changes | `seawall_circuit_breaker_transitions_total{name}` | `seawall_breaker_transitions_total{breaker}` |
//! | bulkhead rejections (every bulkhead, every reason) | `seawall_bulkhead_rejections_total{name,reason}` | `seawall_bulkhead_rejected_total{bulkhead,reason}` |
//! | retries the budget refused | `seawall_retries_denied_total{name,reason="budget_exhausted"}` | (not exported) |
//!
//! A value the endpoint does not expose is `None`: the checks that need it are
//! reported as not checked.

use prometheus_parse::{Sample, Scrape, Value};
use seawall_core::State;

/// One reading of the endpoint.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Reading {
    /// The chosen breaker's state.
    pub state: Option<State>,
    /// Its state changes so far.
    pub transitions: Option<f64>,
    /// Bulkhead rejections so far, summed over every bulkhead and reason.
    pub bulkhead_rejections: Option<f64>,
    /// Retries refused by the retry budget so far, summed over every retry.
    pub budget_denials: Option<f64>,
}

const BREAKER_STATE: [&str; 2] = ["seawall_circuit_breaker_state", "seawall_breaker_state"];
const BREAKER_TRANSITIONS: [&str; 2] = [
    "seawall_circuit_breaker_transitions_total",
    "seawall_breaker_transitions_total",
];
const BULKHEAD_REJECTIONS: [&str; 2] = [
    "seawall_bulkhead_rejections_total",
    "seawall_bulkhead_rejected_total",
];
const RETRIES_DENIED: &str = "seawall_retries_denied_total";
/// The label naming the object: Python's, then Node's breaker label.
const NAME_LABELS: [&str; 2] = ["name", "breaker"];

fn number(v: &Value) -> Option<f64> {
    match *v {
        Value::Counter(x) | Value::Gauge(x) | Value::Untyped(x) => Some(x),
        _ => None,
    }
}

fn name_of(s: &Sample) -> Option<&str> {
    NAME_LABELS.iter().find_map(|l| s.labels.get(l))
}

/// The state a label value names, in either dialect.
#[must_use]
pub fn state_named(s: &str) -> Option<State> {
    match s {
        "closed" => Some(State::Closed),
        "open" => Some(State::Open),
        "half_open" | "halfOpen" => Some(State::HalfOpen),
        "forced_open" | "forcedOpen" => Some(State::ForcedOpen),
        "disabled" => Some(State::Disabled),
        _ => None,
    }
}

/// Read `text`. `breaker` picks the breaker by name; without it the endpoint must
/// export exactly one (else an error naming them, to choose with `--breaker`).
pub fn read(text: &str, breaker: Option<&str>) -> Result<Reading, String> {
    let scrape = Scrape::parse(text.lines().map(|l| Ok(l.to_owned())))
        .map_err(|e| format!("not Prometheus text: {e}"))?;
    let series = |names: &'static [&'static str]| {
        scrape
            .samples
            .iter()
            .filter(move |s| names.contains(&s.metric.as_str()))
    };
    let mut names: Vec<&str> = series(&BREAKER_STATE).filter_map(name_of).collect();
    names.sort_unstable();
    names.dedup();
    let chosen = match (breaker, names.as_slice()) {
        (Some(b), _) if names.contains(&b) => Some(b),
        (Some(b), []) => return Err(format!("no breaker state is exported (looked for {b:?})")),
        (Some(b), all) => return Err(format!("no breaker {b:?}; the endpoint exports {all:?}")),
        (None, []) => None,
        (None, [one]) => Some(*one),
        (None, all) => {
            return Err(format!(
                "the endpoint exports several breakers {all:?}: choose one with --breaker"
            ));
        }
    };
    let of_chosen = |s: &&Sample| chosen.is_some() && name_of(s) == chosen;
    let state = series(&BREAKER_STATE)
        .filter(of_chosen)
        .find(|s| number(&s.value).is_some_and(|v| v >= 1.0))
        .and_then(|s| s.labels.get("state"))
        .and_then(state_named);
    let sum = |it: &mut dyn Iterator<Item = &Sample>| {
        let mut found = false;
        let mut total = 0.0;
        for s in it {
            if let Some(v) = number(&s.value) {
                found = true;
                total += v;
            }
        }
        found.then_some(total)
    };
    Ok(Reading {
        state,
        transitions: sum(&mut series(&BREAKER_TRANSITIONS).filter(of_chosen)),
        bulkhead_rejections: sum(&mut series(&BULKHEAD_REJECTIONS)),
        budget_denials: sum(&mut series(&[RETRIES_DENIED])
            .filter(|s| s.labels.get("reason") == Some("budget_exhausted"))),
    })
}

/// What a counter rose by between the readings in force at `a` and at `b` (each
/// the last reading at or before the instant, or the first one after it), from
/// `readings` sorted by time; `None` when the counter was never read.
#[must_use]
pub fn rise(
    readings: &[(u64, Reading)],
    (a, b): (u64, u64),
    pick: impl Fn(&Reading) -> Option<f64>,
) -> Option<u64> {
    let at = |t: u64| {
        let before = readings
            .iter()
            .rev()
            .find(|(rt, r)| *rt <= t && pick(r).is_some());
        before
            .or_else(|| readings.iter().find(|(_, r)| pick(r).is_some()))
            .and_then(|(_, r)| pick(r))
    };
    let (x, y) = (at(a)?, at(b)?);
    // A counter that went down was reset (the service restarted): what it holds
    // now is what it counted since.
    let d = if y >= x { y - x } else { y };
    // A count: whole, and at least 0 (a negative counter reads as 0).
    #[allow(clippy::cast_sign_loss, clippy::cast_possible_truncation)]
    Some(d.max(0.0).round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `seawall.prometheus.SeawallCollector` prints through `prometheus_client`.
    const PYTHON: &str = "\
# HELP seawall_circuit_breaker_state Circuit breakers of this name in each state.
# TYPE seawall_circuit_breaker_state gauge
seawall_circuit_breaker_state{name=\"inventory\",state=\"closed\"} 0.0
seawall_circuit_breaker_state{name=\"inventory\",state=\"open\"} 0.0
seawall_circuit_breaker_state{name=\"inventory\",state=\"half_open\"} 1.0
# HELP seawall_circuit_breaker_transitions_total State changes.
# TYPE seawall_circuit_breaker_transitions_total counter
seawall_circuit_breaker_transitions_total{name=\"inventory\"} 7.0
# TYPE seawall_bulkhead_rejections_total counter
seawall_bulkhead_rejections_total{name=\"inventory\",reason=\"full\"} 2.0
seawall_bulkhead_rejections_total{name=\"inventory\",reason=\"shed\"} 5.0
seawall_bulkhead_rejections_total{name=\"inventory\",reason=\"timeout\"} 1.0
# TYPE seawall_retries_denied_total counter
seawall_retries_denied_total{name=\"inventory\",reason=\"max_attempts\"} 30.0
seawall_retries_denied_total{name=\"inventory\",reason=\"budget_exhausted\"} 11.0
";

    /// What `registerMetrics` prints through prom-client (two breakers).
    const NODE: &str = "\
# HELP seawall_breaker_state Circuit breaker state.
# TYPE seawall_breaker_state gauge
seawall_breaker_state{breaker=\"database\",state=\"closed\"} 1
seawall_breaker_state{breaker=\"database\",state=\"halfOpen\"} 0
seawall_breaker_state{breaker=\"inventory\",state=\"closed\"} 0
seawall_breaker_state{breaker=\"inventory\",state=\"halfOpen\"} 1
# TYPE seawall_breaker_transitions_total counter
seawall_breaker_transitions_total{breaker=\"database\"} 100
seawall_breaker_transitions_total{breaker=\"inventory\"} 3
# TYPE seawall_bulkhead_rejected_total counter
seawall_bulkhead_rejected_total{bulkhead=\"inventory\",reason=\"shed\"} 4
seawall_bulkhead_rejected_total{bulkhead=\"requests\",reason=\"full\"} 6
";

    #[test]
    fn the_python_dialect() {
        let r = read(PYTHON, None).unwrap();
        assert_eq!(
            r,
            Reading {
                state: Some(State::HalfOpen),
                transitions: Some(7.0),
                bulkhead_rejections: Some(8.0),
                budget_denials: Some(11.0),
            }
        );
        assert_eq!(read(PYTHON, Some("inventory")).unwrap(), r);
        assert!(
            read(PYTHON, Some("db"))
                .unwrap_err()
                .contains("no breaker \"db\"")
        );
    }

    #[test]
    fn the_node_dialect_picks_the_named_breaker() {
        let e = read(NODE, None).unwrap_err();
        assert!(e.contains("--breaker") && e.contains("inventory"), "{e}");
        let r = read(NODE, Some("inventory")).unwrap();
        assert_eq!(
            r,
            Reading {
                state: Some(State::HalfOpen),
                transitions: Some(3.0),
                bulkhead_rejections: Some(10.0),
                budget_denials: None,
            }
        );
        assert_eq!(
            read(NODE, Some("database")).unwrap().state,
            Some(State::Closed)
        );
    }

    #[test]
    fn an_endpoint_without_seawall_metrics_reads_nothing() {
        let r = read("# TYPE up gauge\nup 1\n", None).unwrap();
        assert_eq!(r, Reading::default());
    }

    #[test]
    fn rises_between_readings() {
        let t = |v: Option<f64>| Reading {
            transitions: v,
            ..Reading::default()
        };
        let rs = [
            (10, t(Some(2.0))),
            (20, t(None)), // a failed field: skipped
            (30, t(Some(5.0))),
            (40, t(Some(1.0))), // reset
        ];
        let p = |r: &Reading| r.transitions;
        // Before the first reading the first one stands in.
        assert_eq!(rise(&rs, (0, 25), p), Some(0));
        assert_eq!(rise(&rs, (10, 35), p), Some(3));
        assert_eq!(rise(&rs, (30, 45), p), Some(1));
        assert_eq!(rise(&rs, (0, 45), |r| r.budget_denials), None);
    }
}
