#!/usr/bin/env node
'use strict';
// Conformance runner for the Node package: runs every JSON scenario
// (conformance/cases/FORMAT.md) through the package's own classes and prints
// PASS / FAIL / SKIP per scenario. Scenario dirs: the arguments, else
// SEAWALL_CASES (colon-separated), else <repo>/conformance/cases and
// <repo>/../shared/cases where present, then the same two of cases-rate-limiter.
// Exit status 1 if any scenario fails.

const fs = require('node:fs');
const path = require('node:path');
const {
  BreakerCore, SemaphoreCore, Backoff, RetryBudget, RetryThrottle, Deadline, Health, RateLimiter, isSeawallError,
} = require('..');

const repo = path.resolve(__dirname, '..', '..');

function scenarioDirs(args = []) {
  if (args.length > 0) return args;
  const env = process.env.SEAWALL_CASES;
  if (env) {
    const dirs = env.split(':').filter(Boolean);
    if (dirs.length > 0) return dirs;
  }
  const dirs = [];
  for (const name of ['cases', 'cases-rate-limiter']) {
    dirs.push(path.join(repo, 'conformance', name));
    const shared = path.join(repo, '..', 'shared', name);
    if (fs.existsSync(shared)) dirs.push(shared);
  }
  return dirs;
}

class StepError extends Error {
  constructor(step, message) {
    super(`step ${step} (0-based): ${message}`);
  }
}

const show = (v) => JSON.stringify(v);
const mismatch = (i, want, got) => new StepError(i, `expected ${show(want)}, got ${show(got)}`);
const malformed = (i, what) => new StepError(i, `malformed: ${what}`);

/** The step clock: at_ms is non-decreasing; omitted keeps the previous time. */
function clock() {
  let now = 0;
  return (i, step) => {
    if (step.at_ms !== undefined) {
      if (typeof step.at_ms !== 'number' || step.at_ms < now) throw malformed(i, 'at_ms goes backwards');
      now = step.at_ms;
    }
    return now;
  };
}

function onlyKeys(i, step, keys) {
  for (const k of Object.keys(step)) if (!keys.includes(k)) throw malformed(i, `unknown key ${k}`);
}

/** ms values compare at whole-nanosecond precision, as the core computes them. */
const ns = (ms) => Math.round(ms * 1e6);

// ---- breaker ----

function breakerOptions(c) {
  const o = {};
  const map = {
    minimum_calls: 'minimumCalls', failure_rate_threshold: 'failureRateThreshold',
    slow_call_duration_ms: 'slowCallDurationMs', slow_call_rate_threshold: 'slowCallRateThreshold',
    consecutive_failures: 'consecutiveFailures', open_duration_ms: 'openDurationMs',
    open_backoff_multiplier: 'openBackoffMultiplier', max_open_duration_ms: 'maxOpenDurationMs',
    open_jitter_factor: 'openJitterFactor', half_open_max_calls: 'halfOpenMaxCalls',
    half_open_success_threshold: 'halfOpenSuccessThreshold', half_open_max_wait_ms: 'halfOpenMaxWaitMs',
  };
  for (const [k, v] of Object.entries(c)) {
    if (k === 'window') {
      o.window = v.kind === 'count' ? { kind: 'count', size: v.size } : { kind: 'time', buckets: v.buckets, bucketMs: v.bucket_ms };
    } else if (map[k] !== undefined) {
      o[map[k]] = v;
    } else {
      throw new Error(`unknown breaker config key ${k}`);
    }
  }
  return o;
}

const STATE_NAMES = { closed: 'closed', open: 'open', halfOpen: 'half_open', forcedOpen: 'forced_open', disabled: 'disabled' };

function runBreaker(sc) {
  const b = new BreakerCore(breakerOptions(sc.breaker));
  const held = new Map();
  const at = clock();
  sc.steps.forEach((step, i) => {
    const now = at(i, step);
    onlyKeys(i, step, ['at_ms', 'call', 'duration_ms', 'expect', 'acquire', 'record', 'outcome', 'force_open', 'disable', 'reset', 'expect_state', 'expect_retry_after_ms']);
    const duration = step.duration_ms === undefined ? 0 : step.duration_ms;
    const admit = (r) => {
      const got = r.permit !== undefined ? 'admitted' : 'rejected';
      if (step.expect !== undefined && step.expect !== got) throw mismatch(i, step.expect, got);
      return r.permit;
    };
    if (step.call !== undefined) {
      const p = admit(b.tryAcquire(now));
      if (p !== undefined) b.record(p, step.call, duration, now);
    } else if (step.acquire !== undefined) {
      const p = admit(b.tryAcquire(now));
      if (p !== undefined) held.set(step.acquire, p);
    } else if (step.record !== undefined) {
      if (!held.has(step.record)) throw malformed(i, `no held permit ${step.record}`);
      b.record(held.get(step.record), step.outcome, duration, now);
      held.delete(step.record);
    } else if (step.force_open !== undefined) {
      b.forceOpen();
    } else if (step.disable !== undefined) {
      b.disable();
    } else if (step.reset !== undefined) {
      b.reset();
    } else if (step.expect_state !== undefined) {
      const got = STATE_NAMES[b.state];
      if (got !== step.expect_state) throw mismatch(i, step.expect_state, got);
    } else if (step.expect_retry_after_ms !== undefined) {
      const want = step.expect_retry_after_ms;
      const got = b.retryAfterMs(now);
      const same = want === null ? got === null : got !== null && ns(got) === ns(want);
      if (!same) throw mismatch(i, want, got);
    } else if (step.at_ms === undefined) {
      throw malformed(i, 'step does nothing');
    }
  });
}

// ---- backoff ----

function runBackoff(sc) {
  const c = sc.backoff;
  const b = new Backoff({ baseMs: c.base_ms, multiplier: c.multiplier, maxMs: c.max_ms, jitter: c.jitter, jitterFactor: c.jitter_factor });
  const sequential = c.jitter === 'decorrelated';
  let seed = 0x5ea3a11;
  const draw = (attempt) => {
    b.reseed((seed += 1));
    if (!sequential) return b.delayMs(attempt, 0);
    let previous = 0;
    for (let n = 1; n <= attempt; n++) previous = b.delayMs(n, previous);
    return previous;
  };
  sc.steps.forEach((step, i) => {
    onlyKeys(i, step, ['at_ms', 'attempt', 'expect_delay_ms', 'expect_range_ms', 'draws']);
    if (step.expect_delay_ms !== undefined) {
      const got = draw(step.attempt);
      if (ns(got) !== ns(step.expect_delay_ms)) throw mismatch(i, step.expect_delay_ms, got);
    } else if (step.expect_range_ms !== undefined) {
      const [lo, hi] = step.expect_range_ms;
      const draws = step.draws === undefined ? 1 : step.draws;
      const seen = [];
      for (let k = 0; k < draws; k++) {
        const got = draw(step.attempt);
        if (ns(got) < ns(lo) || ns(got) > ns(hi)) throw mismatch(i, `a delay in [${lo}, ${hi}] ms`, got);
        seen.push(got);
      }
      if (lo < hi && draws > 1 && seen.every((x) => x === seen[0])) throw mismatch(i, 'draws that differ', `${draws} draws all ${seen[0]} ms`);
    } else {
      throw malformed(i, 'needs expect_delay_ms or expect_range_ms');
    }
  });
}

// ---- retry budget / throttle ----

function runBudget(sc) {
  const c = sc.retry_budget;
  const b = new RetryBudget({ ttlMs: c.ttl_ms, minRetriesPerSec: c.min_retries_per_sec, percentCanRetry: c.percent_can_retry });
  const at = clock();
  sc.steps.forEach((step, i) => {
    const now = at(i, step);
    onlyKeys(i, step, ['at_ms', 'request', 'retry', 'expect_allowed']);
    if (step.request !== undefined) {
      for (let k = 0; k < step.request; k++) b.deposit(now);
    } else if (step.retry !== undefined) {
      let allowed = 0;
      for (let k = 0; k < step.retry; k++) if (b.tryWithdraw(now)) allowed += 1;
      if (step.expect_allowed !== undefined && allowed !== step.expect_allowed) throw mismatch(i, step.expect_allowed, allowed);
    } else if (step.at_ms === undefined) {
      throw malformed(i, 'step does nothing');
    }
  });
}

function runThrottle(sc) {
  const c = sc.retry_throttle;
  const t = new RetryThrottle({ maxTokens: c.max_tokens, tokenRatio: c.token_ratio });
  sc.steps.forEach((step, i) => {
    onlyKeys(i, step, ['at_ms', 'success', 'failure', 'expect_retry']);
    if (step.success !== undefined) {
      for (let k = 0; k < step.success; k++) t.recordSuccess();
    } else if (step.failure !== undefined) {
      let last;
      for (let k = 0; k < step.failure; k++) last = t.recordFailure();
      if (step.expect_retry !== undefined && last !== undefined && last !== step.expect_retry) throw mismatch(i, step.expect_retry, last);
    } else if (step.at_ms === undefined) {
      throw malformed(i, 'step does nothing');
    }
  });
}

// ---- semaphore ----

function runSemaphore(sc) {
  const c = sc.semaphore;
  const s = new SemaphoreCore({ maxConcurrent: c.max_concurrent, maxQueue: c.max_queue, shares: c.priority_shares });
  const holders = new Set();
  let waiting = [];
  let granted = [];
  const at = clock();
  sc.steps.forEach((step, i) => {
    at(i, step);
    onlyKeys(i, step, ['at_ms', 'acquire', 'priority', 'wait', 'expect', 'cancel', 'release', 'expect_granted']);
    if (step.acquire !== undefined) {
      const r = s.acquire(step.priority || 'normal', step.wait === true);
      let got;
      if (r.admitted) {
        holders.add(step.acquire);
        got = 'admitted';
      } else if (r.ticket !== undefined) {
        waiting.push([step.acquire, r.ticket]);
        got = 'queued';
      } else {
        got = 'rejected';
      }
      if (typeof step.expect === 'string' && step.expect !== got) throw mismatch(i, step.expect, got);
    } else if (step.cancel !== undefined) {
      const k = waiting.findIndex(([n]) => n === step.cancel);
      if (k < 0) throw malformed(i, `no waiter ${step.cancel}`);
      s.cancel(waiting[k][1]);
      waiting.splice(k, 1);
    } else if (step.release !== undefined) {
      if (!holders.delete(step.release)) throw malformed(i, `${step.release} holds no permit`);
      s.release();
    } else if (step.expect_granted !== undefined) {
      if (show(granted) !== show(step.expect_granted)) throw mismatch(i, step.expect_granted, granted);
      granted = [];
    } else if (step.expect !== undefined && typeof step.expect === 'object') {
      const want = { active: step.expect.active || 0, queued: step.expect.queued || 0 };
      const { active, queued } = s.snapshot();
      if (want.active !== active || want.queued !== queued) throw mismatch(i, want, { active, queued });
    } else if (step.at_ms === undefined) {
      throw malformed(i, 'step does nothing');
    }
    waiting = waiting.filter(([n, t]) => {
      if (s.poll(t) !== 'granted') return true;
      granted.push(n);
      holders.add(n);
      return false;
    });
  });
}

// ---- deadline ----

function runDeadline(sc) {
  const total = sc.deadline.total_ms;
  if (typeof total !== 'number') throw malformed(0, 'deadline needs total_ms');
  const at = clock();
  let d;
  sc.steps.forEach((step, i) => {
    const now = at(i, step);
    if (d === undefined) d = new Deadline(total, { nowMs: now });
    onlyKeys(i, step, ['at_ms', 'expect_remaining_ms', 'allocate_ms', 'expect_ms', 'expect_expired']);
    if (step.expect_remaining_ms !== undefined) {
      const got = d.remainingMs(now);
      if (ns(got) !== ns(step.expect_remaining_ms)) throw mismatch(i, step.expect_remaining_ms, got);
    }
    if (step.allocate_ms !== undefined) {
      const got = d.allocateMs(step.allocate_ms, now);
      if (ns(got) !== ns(step.expect_ms)) throw mismatch(i, step.expect_ms, got);
    }
    if (step.expect_expired !== undefined) {
      const got = d.expired(now);
      if (got !== step.expect_expired) throw mismatch(i, step.expect_expired, got);
    }
  });
}

// ---- health ----

function runHealth(sc) {
  const c = sc.health;
  const h = new Health({
    buckets: c.buckets, bucketMs: c.bucket_ms, degradedErrorRate: c.degraded_error_rate,
    unhealthyErrorRate: c.unhealthy_error_rate, degradedP99Ms: c.degraded_p99_ms, unhealthyP99Ms: c.unhealthy_p99_ms,
  });
  const at = clock();
  sc.steps.forEach((step, i) => {
    const now = at(i, step);
    onlyKeys(i, step, ['at_ms', 'record_ms', 'count', 'failed', 'expect_calls', 'expect_errors', 'expect_percentile', 'approx_ms', 'expect_status']);
    if (step.record_ms !== undefined) {
      const count = step.count === undefined ? 1 : step.count;
      for (let k = 0; k < count; k++) h.record(step.record_ms, step.failed === true, now);
    }
    const snap = h.snapshot(now);
    if (step.expect_calls !== undefined && snap.calls !== step.expect_calls) throw mismatch(i, `${step.expect_calls} calls`, snap.calls);
    if (step.expect_errors !== undefined && snap.errors !== step.expect_errors) throw mismatch(i, `${step.expect_errors} errors`, snap.errors);
    if (step.expect_percentile !== undefined) {
      const want = step.approx_ms;
      const got = h.percentileMs(step.expect_percentile, now);
      const ok = want === null ? got === null : got !== null && Math.abs(ns(got) - ns(want)) * 32 <= ns(want);
      if (!ok) throw mismatch(i, `p${step.expect_percentile} ≈ ${want} ms (± 1/32)`, got);
    }
    if (step.expect_status !== undefined && snap.status !== step.expect_status) throw mismatch(i, step.expect_status, snap.status);
  });
}

// ---- rate limiter ----

// The end of the u64 clock: u64::MAX ns, which as a float is 2^64 (what a
// retry-after of Infinity, "never", stands for).
const CLOCK_END_NS = 2 ** 64;

function runRateLimiter(sc) {
  const c = sc.rate_limiter;
  for (const k of Object.keys(c)) if (!['rate', 'period_ms', 'burst'].includes(k)) throw malformed(0, `unknown rate_limiter key ${k}`);
  const l = new RateLimiter({ rate: c.rate, perMs: c.period_ms, burst: c.burst });
  const at = clock();
  sc.steps.forEach((step, i) => {
    const now = at(i, step);
    onlyKeys(i, step, ['at_ms', 'acquire', 'expect', 'expect_retry_after_ms']);
    if (step.acquire === undefined && step.expect === undefined && step.expect_retry_after_ms === undefined) {
      if (step.at_ms === undefined) throw malformed(i, 'step does nothing');
      return;
    }
    let got;
    let retryNs;
    try {
      const r = l.take(step.acquire === undefined ? 1 : step.acquire, { nowMs: now });
      got = r === 0 ? 'admitted' : 'rejected';
      retryNs = r === 0 ? undefined : r === Infinity ? CLOCK_END_NS : ns(r);
    } catch (e) {
      if (!isSeawallError(e, 'EINVALIDCONFIG')) throw e;
      got = 'config_error';
    }
    if (step.expect !== undefined && step.expect !== got) throw mismatch(i, step.expect, got);
    if (step.expect_retry_after_ms !== undefined) {
      const want = Math.min(ns(step.expect_retry_after_ms), CLOCK_END_NS);
      if (got !== 'rejected' || retryNs !== want) throw mismatch(i, `rejected, retry after ${want} ns`, `${got}, ${retryNs} ns`);
    }
  });
}

const RUNNERS = {
  breaker: runBreaker,
  backoff: runBackoff,
  retry_budget: runBudget,
  retry_throttle: runThrottle,
  semaphore: runSemaphore,
  deadline: runDeadline,
  health: runHealth,
  rate_limiter: runRateLimiter,
};

/** What was thrown, as a line: the message of an Error, else the value itself. */
const describe = (e) => (e instanceof Error ? e.message : `threw ${typeof e === 'symbol' ? e.toString() : String(e)}`);

/**
 * Run one scenario file: `{ id, verdict: 'PASS'|'FAIL'|'SKIP', message }`.
 * Whatever goes wrong in it (a bad file, a crash of the package or of this
 * runner) is its FAIL, never an exception: the scenarios after it still run.
 */
function runFile(file) {
  const id = path.basename(file, '.json');
  let sc;
  try {
    sc = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (e) {
    return { id, verdict: 'FAIL', message: `malformed: ${describe(e)}` };
  }
  if (sc === null || typeof sc !== 'object' || Array.isArray(sc)) {
    return { id, verdict: 'FAIL', message: 'malformed: a scenario is a JSON object' };
  }
  const kinds = Object.keys(RUNNERS).filter((k) => sc[k] !== undefined);
  if (kinds.length !== 1) {
    const other = Object.keys(sc).filter((k) => !['name', 'source', 'steps'].includes(k));
    return { id, verdict: 'SKIP', message: `no runner for ${other.join(', ') || 'this scenario'}` };
  }
  try {
    RUNNERS[kinds[0]](sc);
    return { id, verdict: 'PASS' };
  } catch (e) {
    return { id, verdict: 'FAIL', message: describe(e) };
  }
}

/** Every `*.json` of `dirs`, each run: a list of results with `dir`. */
function runAll(dirs = scenarioDirs()) {
  const results = [];
  for (const dir of dirs) {
    let files;
    try {
      files = fs.readdirSync(dir).filter((f) => f.endsWith('.json')).sort();
    } catch (e) {
      // A folder that cannot be read fails, and the other folders still run.
      results.push({ dir, id: dir, verdict: 'FAIL', message: `cannot read the scenario folder: ${describe(e)}` });
      continue;
    }
    for (const f of files) results.push({ dir, ...runFile(path.join(dir, f)) });
  }
  return results;
}

module.exports = { runAll, runFile, scenarioDirs };

if (require.main === module) {
  const results = runAll(scenarioDirs(process.argv.slice(2)));
  let fail = 0;
  let skip = 0;
  for (const r of results) {
    if (r.verdict === 'FAIL') fail += 1;
    if (r.verdict === 'SKIP') skip += 1;
    console.log(`${r.verdict} ${r.id}${r.message ? `: ${r.message}` : ''}`);
  }
  console.log(`node conformance: ${results.length - fail - skip} passed, ${fail} failed, ${skip} skipped`);
  process.exitCode = fail > 0 || results.length === 0 ? 1 : 0;
}
