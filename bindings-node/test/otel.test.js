'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const {
  MeterProvider, PeriodicExportingMetricReader, InMemoryMetricExporter, AggregationTemporality, DataPointType,
} = require('@opentelemetry/sdk-metrics');
const { CircuitBreaker, Bulkhead, Retry, instrumentOtel, isSeawallError } = require('..');
const { rejection } = require('./helpers');

// A reader that exports only when asked (forceFlush), into memory.
function inMemory() {
  const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 });
  const provider = new MeterProvider({ readers: [reader] });
  // { 'metric name|attr=value,…': { value, unit, monotonic } } of the latest collection.
  const points = async () => {
    exporter.reset();
    await reader.forceFlush();
    const out = {};
    for (const rm of exporter.getMetrics()) {
      for (const sm of rm.scopeMetrics) {
        assert.equal(sm.scope.name, 'seawall');
        for (const m of sm.metrics) {
          assert.equal(m.dataPointType, DataPointType.SUM);
          for (const p of m.dataPoints) {
            const attrs = Object.entries(p.attributes).sort().map(([k, v]) => `${k}=${v}`).join(',');
            const key = `${m.descriptor.name}|${attrs}`;
            assert.ok(!(key in out), `duplicate point ${key}`);
            out[key] = { value: p.value, unit: m.descriptor.unit, monotonic: m.isMonotonic };
          }
        }
      }
    }
    return out;
  };
  return { provider, points };
}

const fail = async () => { throw new Error('down'); };

test('OpenTelemetry instruments report the counts the policies made', async () => {
  const { provider, points } = inMemory();
  // A count window of 4 with a minimum of 4 calls and the default 50 % threshold:
  // two successes and two failures make 2/4 = 50 % and open it; the next three
  // calls are refused without running.
  const breaker = new CircuitBreaker({ name: 'pay', window: { kind: 'count', size: 4 }, minimumCalls: 4 });
  const bulkhead = new Bulkhead({ name: 'pool', maxConcurrent: 1 });
  const policy = new Retry({ name: 'rt', attempts: 3, backoff: { baseMs: 1, jitter: 'none' } });
  instrumentOtel({ meterProvider: provider, breakers: [breaker], bulkheads: [bulkhead], retries: [policy] });

  for (let i = 0; i < 2; i++) await breaker.execute(async () => 1);
  for (let i = 0; i < 2; i++) await assert.rejects(breaker.execute(fail), /down/);
  for (let i = 0; i < 3; i++) assert.ok(isSeawallError(await rejection(breaker.execute(async () => 1)), 'ECIRCUITOPEN'));
  let release;
  const held = bulkhead.execute(() => new Promise((r) => { release = r; }));
  for (let i = 0; i < 3; i++) assert.ok(isSeawallError(await rejection(bulkhead.execute(async () => 0)), 'EBULKHEADFULL'));
  // Three attempts that all fail: two retries, then one give-up at maxAttempts.
  await assert.rejects(policy.execute(fail), /down/);

  const p = await points();
  const v = (name, attrs) => {
    const key = `${name}|${Object.entries(attrs).sort().map(([k, x]) => `${k}=${x}`).join(',')}`;
    assert.ok(key in p, `no point ${key} in ${Object.keys(p).join('\n')}`);
    return p[key].value;
  };
  assert.equal(v('seawall.circuit_breaker.state', { 'seawall.name': 'pay', 'seawall.circuit_breaker.state': 'open' }), 1);
  assert.equal(v('seawall.circuit_breaker.state', { 'seawall.name': 'pay', 'seawall.circuit_breaker.state': 'closed' }), 0);
  assert.equal(v('seawall.circuit_breaker.transitions', { 'seawall.name': 'pay' }), 1);
  const calls = Object.fromEntries(['success', 'failure', 'ignored', 'rejected'].map((o) =>
    [o, v('seawall.circuit_breaker.calls', { 'seawall.name': 'pay', 'seawall.outcome': o })]));
  assert.deepEqual(calls, { success: 2, failure: 2, ignored: 0, rejected: 3 });
  assert.equal(v('seawall.circuit_breaker.slow_calls', { 'seawall.name': 'pay' }), 0);
  assert.equal(v('seawall.bulkhead.active', { 'seawall.name': 'pool' }), 1);
  assert.equal(v('seawall.bulkhead.queued', { 'seawall.name': 'pool' }), 0);
  assert.equal(v('seawall.bulkhead.limit', { 'seawall.name': 'pool' }), 1);
  assert.equal(v('seawall.bulkhead.rejections', { 'seawall.name': 'pool', 'seawall.reason': 'full' }), 3);
  assert.equal(v('seawall.bulkhead.rejections', { 'seawall.name': 'pool', 'seawall.reason': 'shed' }), 0);
  // A retry's decisions are this process's: the points say which process.
  const me = { 'process.pid': process.pid };
  assert.equal(v('seawall.retry.retries', { 'seawall.name': 'rt', ...me }), 2);
  assert.equal(v('seawall.retry.give_ups', { 'seawall.name': 'rt', 'seawall.reason': 'maxAttempts', ...me }), 1);
  assert.equal(v('seawall.retry.give_ups', { 'seawall.name': 'rt', 'seawall.reason': 'budgetExhausted', ...me }), 0);
  // Units in UCUM braces; counters are monotonic sums, what is in use now is not.
  const calls0 = p['seawall.circuit_breaker.calls|seawall.name=pay,seawall.outcome=success'];
  assert.deepEqual([calls0.unit, calls0.monotonic], ['{call}', true]);
  const active = p['seawall.bulkhead.active|seawall.name=pool'];
  assert.deepEqual([active.unit, active.monotonic], ['{permit}', false]);

  // The next collection sees the release: the instruments read live counters.
  release();
  await held;
  assert.equal((await points())['seawall.bulkhead.active|seawall.name=pool'].value, 0);
  await provider.shutdown();
});

test('instrumentOtel refuses what is not a meter or provider', () => {
  assert.throws(() => instrumentOtel({ meter: {} }), (e) => isSeawallError(e, 'EINVALIDCONFIG') && e.field === 'meter');
  assert.throws(() => instrumentOtel({ meterProvider: 42 }), (e) => isSeawallError(e, 'EINVALIDCONFIG') && e.field === 'meterProvider');
});

test('Retry metrics() counts retries and give-ups by reason', async () => {
  const policy = new Retry({ attempts: 2, backoff: { baseMs: 1, jitter: 'none' } });
  let n = 0;
  assert.equal(await policy.execute(async () => { if (++n < 2) throw new Error('once'); return 'ok'; }), 'ok');
  await assert.rejects(policy.execute(fail), /down/);
  const m = policy.metrics();
  assert.match(m.name, /^retry-\d+$/);
  assert.deepEqual({ retries: m.retries, giveUps: m.giveUps },
    { retries: 2, giveUps: { maxAttempts: 1, deadline: 0, budgetExhausted: 0, throttled: 0 } });
});
