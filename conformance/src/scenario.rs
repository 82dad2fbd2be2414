//! Loading scenario files (format: `../shared/cases/README.md`) and the small
//! helpers every primitive's runner shares: step time, typed field access, verdicts.

use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// The primitives a scenario can exercise (exactly one per file).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Primitive {
    /// `breaker`
    Breaker,
    /// `backoff`
    Backoff,
    /// `retry_budget`
    RetryBudget,
    /// `retry_throttle`
    RetryThrottle,
    /// `semaphore`
    Semaphore,
    /// `deadline`
    Deadline,
    /// `health`
    Health,
    /// `rate_limiter`
    RateLimiter,
}

impl Primitive {
    const ALL: [(Self, &'static str); 8] = [
        (Self::Breaker, "breaker"),
        (Self::Backoff, "backoff"),
        (Self::RetryBudget, "retry_budget"),
        (Self::RetryThrottle, "retry_throttle"),
        (Self::Semaphore, "semaphore"),
        (Self::Deadline, "deadline"),
        (Self::Health, "health"),
        (Self::RateLimiter, "rate_limiter"),
    ];

    /// The scenario key naming this primitive.
    #[must_use]
    pub fn key(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(p, _)| *p == self)
            .map_or("?", |(_, k)| k)
    }
}

/// One parsed scenario file of a primitive of kind `P`.
#[derive(Debug)]
pub struct ScenarioOf<P> {
    /// File name without `.json`: what the runner prints.
    pub id: String,
    /// The scenario's own `name`.
    pub name: String,
    /// Which primitive it exercises.
    pub primitive: P,
    /// The primitive's configuration object.
    pub config: Map<String, Value>,
    /// The steps, in order.
    pub steps: Vec<Map<String, Value>>,
}

/// A scenario of one primitive.
pub type Scenario = ScenarioOf<Primitive>;

/// How one scenario ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Every step held.
    Pass,
    /// The first mismatch, already formatted.
    Fail(String),
    /// Not run, with the reason.
    Skip(String),
}

/// A step that did not hold: `step i (0-based): …`.
#[derive(Debug)]
pub struct StepError {
    /// 0-based index of the step.
    pub step: usize,
    /// What went wrong.
    pub message: String,
}

impl fmt::Display for StepError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "step {} (0-based): {}", self.step, self.message)
    }
}

impl StepError {
    /// `expected X, got Y`.
    pub fn mismatch(step: usize, expected: impl fmt::Debug, got: impl fmt::Debug) -> Self {
        Self {
            step,
            message: format!("expected {expected:?}, got {got:?}"),
        }
    }

    /// A malformed step.
    pub fn malformed(step: usize, message: impl Into<String>) -> Self {
        Self {
            step,
            message: format!("malformed: {}", message.into()),
        }
    }
}

/// A file's id (its name without `.json`) and its top-level object.
fn read(path: &Path) -> Result<(String, Map<String, Value>), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read: {e}"))?;
    let v: Value = serde_json::from_str(&text).map_err(|e| format!("not JSON: {e}"))?;
    let Value::Object(top) = v else {
        return Err("top level is not an object".into());
    };
    let id = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("?")
        .to_owned();
    Ok((id, top))
}

impl<P: Copy> ScenarioOf<P> {
    /// The scenario in `top`, whose primitive key is one of `kinds`.
    fn from_top(
        id: String,
        mut top: Map<String, Value>,
        kinds: &[(P, &str)],
    ) -> Result<Self, String> {
        let Some(Value::String(name)) = top.remove("name") else {
            return Err("missing string `name`".into());
        };
        top.remove("source");
        let steps = match top.remove("steps") {
            Some(Value::Array(a)) => a
                .into_iter()
                .enumerate()
                .map(|(i, s)| match s {
                    Value::Object(m) => Ok(m),
                    _ => Err(format!("step {i} is not an object")),
                })
                .collect::<Result<Vec<_>, _>>()?,
            _ => return Err("missing array `steps`".into()),
        };
        let mut found = kinds.iter().filter(|(_, k)| top.contains_key(*k));
        let (Some((primitive, key)), None) = (found.next(), found.next()) else {
            return Err("needs exactly one primitive key".into());
        };
        let Some(Value::Object(config)) = top.remove(*key) else {
            return Err(format!("`{key}` is not an object"));
        };
        if let Some(extra) = top.keys().next() {
            return Err(format!("unknown top-level key `{extra}`"));
        }
        Ok(Self {
            id,
            name,
            primitive: *primitive,
            config,
            steps,
        })
    }
}

impl Scenario {
    /// Parse one file of a [`Primitive`]; an error describes what is malformed.
    pub fn load(path: &Path) -> Result<Self, String> {
        let (id, top) = read(path)?;
        Self::from_top(id, top, &Primitive::ALL)
    }
}

/// The step clock: `at_ms` is non-decreasing; an omitted one keeps the previous time.
#[derive(Debug, Default)]
pub struct StepClock {
    now_ms: f64,
}

impl StepClock {
    /// Advance to the step's `at_ms` (if any) and return the time in nanoseconds.
    pub fn advance(&mut self, i: usize, step: &Map<String, Value>) -> Result<u64, StepError> {
        if let Some(v) = step.get("at_ms") {
            let at = v
                .as_f64()
                .ok_or_else(|| StepError::malformed(i, "`at_ms` is not a number"))?;
            if at < self.now_ms {
                return Err(StepError::malformed(i, "`at_ms` goes backwards"));
            }
            self.now_ms = at;
        }
        Ok(ms_to_ns(self.now_ms))
    }
}

// Scenario milliseconds, percentages and factors become core units by the same
// rounding rule every binding uses, so a scenario checks that rule too.
pub use seawall_host::units::{
    ms_to_ns, ns_to_ms, ratio_of_factor as factor, ratio_of_percent as percent,
    round_to_u64 as whole,
};

/// Typed access to a JSON object, with errors that name the key.
pub struct Fields<'a> {
    map: &'a Map<String, Value>,
    what: &'a str,
}

impl<'a> Fields<'a> {
    /// Wrap `map`, naming it `what` in errors.
    #[must_use]
    pub fn new(map: &'a Map<String, Value>, what: &'a str) -> Self {
        Self { map, what }
    }

    /// Fail on any key outside `allowed`.
    pub fn only(&self, allowed: &[&str]) -> Result<(), String> {
        match self.map.keys().find(|k| !allowed.contains(&k.as_str())) {
            Some(k) => Err(format!("unknown key `{k}` in {}", self.what)),
            None => Ok(()),
        }
    }

    /// Present, including as `null`.
    #[must_use]
    pub fn has(&self, key: &str) -> bool {
        self.map.contains_key(key)
    }

    /// The raw value.
    #[must_use]
    pub fn raw(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key)
    }

    /// A number, if present and not null.
    pub fn f64(&self, key: &str) -> Result<Option<f64>, String> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .as_f64()
                .map(Some)
                .ok_or_else(|| format!("`{key}` in {} is not a number", self.what)),
        }
    }

    /// A non-negative whole number, if present and not null.
    pub fn u64(&self, key: &str) -> Result<Option<u64>, String> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .as_u64()
                .map(Some)
                .ok_or_else(|| format!("`{key}` in {} is not a whole number ≥ 0", self.what)),
        }
    }

    /// A string, if present.
    pub fn str(&self, key: &str) -> Result<Option<&'a str>, String> {
        match self.map.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(format!("`{key}` in {} is not a string", self.what)),
        }
    }

    /// A boolean, if present.
    pub fn bool(&self, key: &str) -> Result<Option<bool>, String> {
        match self.map.get(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(_) => Err(format!("`{key}` in {} is not a boolean", self.what)),
        }
    }

    /// An optional rule: omitted → `default`, `null` → `None` (off), a number →
    /// `Some(convert(n))`.
    pub fn rule<T>(
        &self,
        key: &str,
        default: Option<T>,
        convert: impl FnOnce(f64) -> T,
    ) -> Result<Option<T>, String> {
        if self.has(key) {
            Ok(self.f64(key)?.map(convert))
        } else {
            Ok(default)
        }
    }
}

/// Scenario directories: the arguments, else `SEAWALL_CASES` (colon-separated), else
/// this project's `conformance/cases` and `conformance/cases-rate-limiter`, each
/// followed by its `../shared` twin where present. The rate limiter's scenarios
/// keep a folder of their own so that runners of older builds, which do not know
/// the primitive, still pass on `cases`.
#[must_use]
pub fn scenario_dirs(args: &[String]) -> Vec<PathBuf> {
    chosen_dirs(args).unwrap_or_else(|| default_dirs(&["cases", "cases-rate-limiter"]))
}

/// The directories the caller chose: the arguments, else `SEAWALL_CASES`.
fn chosen_dirs(args: &[String]) -> Option<Vec<PathBuf>> {
    if !args.is_empty() {
        return Some(args.iter().map(PathBuf::from).collect());
    }
    let list = std::env::var("SEAWALL_CASES").ok()?;
    let dirs: Vec<PathBuf> = list
        .split(':')
        .filter(|s| !s.is_empty())
        .map(PathBuf::from)
        .collect();
    (!dirs.is_empty()).then_some(dirs)
}

/// For each folder name: this project's `conformance/<name>`, then the shared
/// `../shared/<name>` where present.
fn default_dirs(names: &[&str]) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut dirs = Vec::new();
    for name in names {
        dirs.push(root.join(name));
        let shared = root.join("../../shared").join(name);
        if shared.is_dir() {
            dirs.push(shared);
        }
    }
    dirs
}

/// Every `*.json` in `dir`, sorted by name.
pub fn scenario_files(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::scenario_dirs;

    #[test]
    fn default_folders_are_cases_then_the_rate_limiters() {
        if std::env::var_os("SEAWALL_CASES").is_some() {
            return; // the caller chose the folders
        }
        let names: Vec<String> = scenario_dirs(&[])
            .iter()
            .map(|d| d.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.first().map(String::as_str), Some("cases"));
        let project: Vec<&String> = names.iter().filter(|n| n.starts_with("cases")).collect();
        assert!(
            project.contains(&&"cases-rate-limiter".to_owned()),
            "{names:?}"
        );
        let chosen = vec!["x".to_owned()];
        assert_eq!(scenario_dirs(&chosen), vec![std::path::PathBuf::from("x")]);
    }
}
