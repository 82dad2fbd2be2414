'use strict';
// Prometheus metrics through prom-client: gauges and counters whose values are
// read from `metrics()` snapshots when the registry is scraped (collect()), so
// nothing runs between scrapes and no timer is kept.

const { SeawallError, codes, configError } = require('./errors');

function promClient(given) {
  if (given !== undefined) return given;
  try {
    return require('prom-client');
  } catch (e) {
    throw new SeawallError(codes.ENOTSUPPORTED, 'registerMetrics needs the prom-client package (npm install prom-client)', {
      cause: e,
    });
  }
}

const STATES = ['closed', 'open', 'halfOpen', 'forcedOpen', 'disabled'];

/**
 * Register seawall's metrics on a prom-client `registry`:
 * - `seawall_breaker_state{breaker, state}` 1 for the current state, else 0
 * - `seawall_breaker_failure_rate{breaker}` failures per call in the window (0–1)
 * - `seawall_breaker_window_calls{breaker}` calls in the window
 * - `seawall_breaker_calls_total{breaker, outcome}` successes, failures,
 *   ignored, rejected (lifetime; for a shared breaker, of every process)
 * - `seawall_breaker_transitions_total{breaker}`
 * - `seawall_bulkhead_active{bulkhead}`, `seawall_bulkhead_queued{bulkhead}`
 * - `seawall_bulkhead_rejected_total{bulkhead, reason}` shed, full,
 *   queueTimeout, aborted (for a shared bulkhead, of every process)
 * - `seawall_retry_budget_available{budget}` retries available now
 * - `seawall_rate_limiter_admitted_total{limiter}`,
 *   `seawall_rate_limiter_rejected_total{limiter}` takes of each rate limiter
 *   (for a shared limiter, of every process)
 * - `seawall_chaos_calls_total{chaos, result, pid}` calls through each chaos
 *   policy by what it injected: passed, latency, failure, hang (this process:
 *   sum over the workers with `sum without (pid)`)
 *
 * What a shared primitive counts lives in its region (DESIGN §8, "One set of
 * totals"): every worker exports the same figures, so scrape any one; series
 * with a `pid` label are the exporting process's own.
 *
 * @param {object} registry a prom-client Registry
 * @param {{ breakers?, bulkheads?, budgets?, rateLimiters?, chaos?, prefix?, client? }} sources
 * @returns {{ breakers: Set, bulkheads: Set, budgets: Set, rateLimiters: Set, chaos: Set }} live sets: add or
 *   delete policies later and the next scrape follows
 */
function registerMetrics(registry, sources = {}) {
  if (registry === null || typeof registry !== 'object' || typeof registry.registerMetric !== 'function') {
    throw configError('registry', 'must be a prom-client Registry');
  }
  const client = promClient(sources.client);
  const prefix = sources.prefix === undefined ? 'seawall_' : sources.prefix;
  const breakers = new Set(sources.breakers || []);
  const bulkheads = new Set(sources.bulkheads || []);
  const budgets = new Set(sources.budgets || []);
  const rateLimiters = new Set(sources.rateLimiters || []);
  const chaos = new Set(sources.chaos || []);
  const registers = [registry];

  const snapshots = () => [...breakers].map((b) => [b.name, b.metrics()]);

  new client.Gauge({
    name: `${prefix}breaker_state`,
    help: 'Circuit breaker state: 1 for the current state, 0 for the others.',
    labelNames: ['breaker', 'state'],
    registers,
    collect() {
      this.reset();
      for (const [name, m] of snapshots()) {
        for (const s of STATES) this.set({ breaker: name, state: s }, m.state === s ? 1 : 0);
      }
    },
  });
  new client.Gauge({
    name: `${prefix}breaker_failure_rate`,
    help: 'Failures per call in the breaker\'s sliding window (0-1).',
    labelNames: ['breaker'],
    registers,
    collect() {
      this.reset();
      for (const [name, m] of snapshots()) this.set({ breaker: name }, m.failureRate === null ? 0 : m.failureRate / 100);
    },
  });
  new client.Gauge({
    name: `${prefix}breaker_window_calls`,
    help: 'Calls in the breaker\'s sliding window.',
    labelNames: ['breaker'],
    registers,
    collect() {
      this.reset();
      for (const [name, m] of snapshots()) this.set({ breaker: name }, m.window.calls);
    },
  });
  // Counters follow the core's lifetime totals: each scrape adds what changed.
  const seen = new Map();
  const delta = (key, value) => {
    const before = seen.get(key) || 0;
    seen.set(key, value);
    return value >= before ? value - before : value;
  };
  new client.Counter({
    name: `${prefix}breaker_calls_total`,
    help: 'Calls through the breaker by outcome (success, failure, ignored, rejected).',
    labelNames: ['breaker', 'outcome'],
    registers,
    collect() {
      for (const [name, m] of snapshots()) {
        const t = m.totals;
        for (const [outcome, v] of [['success', t.successes], ['failure', t.failures], ['ignored', t.ignored], ['rejected', t.rejected]]) {
          this.inc({ breaker: name, outcome }, delta(`c:${name}:${outcome}`, v));
        }
      }
    },
  });
  new client.Counter({
    name: `${prefix}breaker_transitions_total`,
    help: 'State changes of the breaker.',
    labelNames: ['breaker'],
    registers,
    collect() {
      for (const [name, m] of snapshots()) this.inc({ breaker: name }, delta(`t:${name}`, m.totals.transitions));
    },
  });
  const bulkheadGauge = (metric, help, pick) => new client.Gauge({
    name: `${prefix}bulkhead_${metric}`,
    help,
    labelNames: ['bulkhead'],
    registers,
    collect() {
      this.reset();
      for (const b of bulkheads) this.set({ bulkhead: b.name }, pick(b.metrics()));
    },
  });
  bulkheadGauge('active', 'Permits held.', (m) => m.active);
  bulkheadGauge('queued', 'Callers waiting for a permit.', (m) => m.queued);
  new client.Counter({
    name: `${prefix}bulkhead_rejected_total`,
    help: 'Calls the bulkhead refused, by reason (shed, full, queueTimeout, aborted).',
    labelNames: ['bulkhead', 'reason'],
    registers,
    collect() {
      for (const b of bulkheads) {
        const r = b.metrics().rejected;
        for (const reason of ['shed', 'full', 'queueTimeout', 'aborted']) {
          this.inc({ bulkhead: b.name, reason }, delta(`b:${b.name}:${reason}`, r[reason]));
        }
      }
    },
  });
  new client.Gauge({
    name: `${prefix}retry_budget_available`,
    help: 'Retries the budget would allow now.',
    labelNames: ['budget'],
    registers,
    collect() {
      this.reset();
      let i = 0;
      for (const b of budgets) this.set({ budget: b.name || `budget-${++i}` }, b.snapshot().available);
    },
  });
  const limiterCounter = (which, help) => new client.Counter({
    name: `${prefix}rate_limiter_${which}_total`,
    help,
    labelNames: ['limiter'],
    registers,
    collect() {
      let i = 0;
      for (const l of rateLimiters) {
        const name = l.name === undefined ? `rate-limiter-${++i}` : l.name;
        this.inc({ limiter: name }, delta(`r:${which}:${name}`, l.metrics()[which]));
      }
    },
  });
  limiterCounter('admitted', 'Takes the rate limiter admitted.');
  limiterCounter('rejected', 'Takes the rate limiter refused (over the rate).');
  // Chaos policies (lib/chaos.js).
  new client.Counter({
    name: `${prefix}chaos_calls_total`,
    help: 'Calls through the chaos policy by what it injected (passed, latency, failure, hang).',
    labelNames: ['chaos', 'result', 'pid'],
    registers,
    collect() {
      for (const p of chaos) {
        const m = p.metrics();
        for (const [result, v] of [['passed', m.passed], ['latency', m.latency], ['failure', m.failures], ['hang', m.hangs]]) {
          this.inc({ chaos: p.name, result, pid: process.pid }, delta(`x:${p.name}:${result}`, v));
        }
      }
    },
  });
  return { breakers, bulkheads, budgets, rateLimiters, chaos };
}

module.exports = { registerMetrics };
