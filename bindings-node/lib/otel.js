'use strict';
// OpenTelemetry metrics through @opentelemetry/api (an optional peer
// dependency): observable instruments whose values are read from `metrics()`
// snapshots when a reader collects, so nothing runs between collections and no
// timer is kept. OpenTelemetry's semantic conventions define no circuit-breaker,
// bulkhead or retry metrics, so the names follow its naming rules: a `seawall.`
// namespace, dotted names, no `_total`, units in UCUM annotation braces, and
// up-down counters for what is in use now (as `http.server.active_requests`).

const { SeawallError, codes, configError } = require('./errors');

const STATES = ['closed', 'open', 'halfOpen', 'forcedOpen', 'disabled'];
const BULKHEAD_REASONS = ['shed', 'full', 'queueTimeout', 'aborted'];
const GIVE_UPS = ['maxAttempts', 'deadline', 'budgetExhausted', 'throttled'];

function otelApi() {
  try {
    return require('@opentelemetry/api');
  } catch (e) {
    throw new SeawallError(codes.ENOTSUPPORTED, 'instrumentOtel needs the @opentelemetry/api package (npm install @opentelemetry/api) or a meter', {
      cause: e,
    });
  }
}

/**
 * Report seawall's metrics through an OpenTelemetry meter (default: the global
 * MeterProvider's meter `seawall`). Every point has the attribute `seawall.name`:
 * - `seawall.circuit_breaker.state` ({circuit_breaker}, up-down counter) 1 for
 *   the current state (attribute `seawall.circuit_breaker.state`), else 0
 * - `seawall.circuit_breaker.transitions` ({transition}, counter)
 * - `seawall.circuit_breaker.calls` ({call}, counter) by `seawall.outcome`:
 *   success, failure, ignored, rejected (for a shared breaker, of every process)
 * - `seawall.circuit_breaker.slow_calls` ({call}, counter)
 * - `seawall.bulkhead.active` ({permit}), `seawall.bulkhead.queued` ({waiter}),
 *   `seawall.bulkhead.limit` ({permit}): up-down counters
 * - `seawall.bulkhead.rejections` ({call}, counter) by `seawall.reason`: shed,
 *   full, queueTimeout, aborted (for a shared bulkhead, of every process)
 * - `seawall.retry.retries` ({retry}, counter) and `seawall.retry.give_ups`
 *   ({call}, counter) by `seawall.reason`: maxAttempts, deadline,
 *   budgetExhausted, throttled; this process's decisions, with `process.pid`
 *
 * @param {{ breakers?, bulkheads?, retries?, meter?, meterProvider? }} sources
 * @returns {{ breakers: Set, bulkheads: Set, retries: Set }} live sets: add or
 *   delete policies later and the next collection follows
 */
function instrumentOtel(sources = {}) {
  if (sources === null || typeof sources !== 'object') throw configError('sources', 'must be an object');
  let meter = sources.meter;
  if (meter === undefined) {
    const provider = sources.meterProvider !== undefined ? sources.meterProvider : otelApi().metrics.getMeterProvider();
    if (provider === null || typeof provider !== 'object' || typeof provider.getMeter !== 'function') {
      throw configError('meterProvider', 'must be an OpenTelemetry MeterProvider');
    }
    meter = provider.getMeter('seawall', require('../package.json').version);
  }
  if (meter === null || typeof meter !== 'object' || typeof meter.createObservableCounter !== 'function') {
    throw configError('meter', 'must be an OpenTelemetry Meter');
  }
  const breakers = new Set(sources.breakers || []);
  const bulkheads = new Set(sources.bulkheads || []);
  const retries = new Set(sources.retries || []);

  const observe = (kind, name, unit, description, read) => {
    const make = kind === 'counter' ? meter.createObservableCounter : meter.createObservableUpDownCounter;
    make.call(meter, name, { unit, description }).addCallback((result) => {
      for (const [value, attributes] of read()) result.observe(value, attributes);
    });
  };
  function* eachBreaker(f) {
    for (const b of breakers) yield* f(b.metrics(), { 'seawall.name': b.name });
  }
  function* eachBulkhead(f) {
    for (const b of bulkheads) yield* f(b.metrics(), { 'seawall.name': b.name });
  }
  // A retry policy's decisions are this process's own: its points say which process.
  function* eachRetry(f) {
    for (const r of retries) yield* f(r.metrics(), { 'seawall.name': r.name, 'process.pid': process.pid });
  }

  observe('upDown', 'seawall.circuit_breaker.state', '{circuit_breaker}', 'Circuit breaker state: 1 for the current state, 0 for the others.',
    () => eachBreaker(function* (m, a) {
      for (const s of STATES) yield [m.state === s ? 1 : 0, { ...a, 'seawall.circuit_breaker.state': s }];
    }));
  observe('counter', 'seawall.circuit_breaker.transitions', '{transition}', 'State changes of the circuit breaker.',
    () => eachBreaker(function* (m, a) { yield [m.totals.transitions, a]; }));
  observe('counter', 'seawall.circuit_breaker.calls', '{call}', 'Calls by outcome: recorded (success, failure, ignored) or refused (rejected).',
    () => eachBreaker(function* (m, a) {
      const t = m.totals;
      for (const [outcome, v] of [['success', t.successes], ['failure', t.failures], ['ignored', t.ignored], ['rejected', t.rejected]]) {
        yield [v, { ...a, 'seawall.outcome': outcome }];
      }
    }));
  observe('counter', 'seawall.circuit_breaker.slow_calls', '{call}', 'Calls slower than slowCallDurationMs.',
    () => eachBreaker(function* (m, a) { yield [m.totals.slow, a]; }));
  observe('upDown', 'seawall.bulkhead.active', '{permit}', 'Bulkhead permits held (every process, for a shared bulkhead).',
    () => eachBulkhead(function* (m, a) { yield [m.active, a]; }));
  observe('upDown', 'seawall.bulkhead.queued', '{waiter}', 'Callers waiting in the bulkhead\'s queue (every process, for a shared bulkhead).',
    () => eachBulkhead(function* (m, a) { yield [m.queued, a]; }));
  observe('upDown', 'seawall.bulkhead.limit', '{permit}', 'Bulkhead capacity (maxConcurrent).',
    () => eachBulkhead(function* (m, a) { yield [m.maxConcurrent, a]; }));
  observe('counter', 'seawall.bulkhead.rejections', '{call}', 'Calls refused by the bulkhead, by reason (every process, for a shared bulkhead).',
    () => eachBulkhead(function* (m, a) {
      for (const r of BULKHEAD_REASONS) yield [m.rejected[r], { ...a, 'seawall.reason': r }];
    }));
  observe('counter', 'seawall.retry.retries', '{retry}', 'Retries allowed.',
    () => eachRetry(function* (m, a) { yield [m.retries, a]; }));
  observe('counter', 'seawall.retry.give_ups', '{call}', 'Calls that stopped retrying, by reason.',
    () => eachRetry(function* (m, a) {
      for (const r of GIVE_UPS) yield [m.giveUps[r], { ...a, 'seawall.reason': r }];
    }));
  return { breakers, bulkheads, retries };
}

module.exports = { instrumentOtel };
