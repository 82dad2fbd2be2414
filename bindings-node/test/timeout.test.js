'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { timeout, Deadline, wrap, pipeline, CircuitBreaker, Retry, Bulkhead, StaleCache } = require('..');
const { delay, rejection } = require('./helpers');

test('timeout rejects with ETIMEDOUT on time and aborts the signal it gave the call', async () => {
  const t = timeout(30);
  let signal;
  const t0 = performance.now();
  const e = await rejection(t.execute(({ signal: s }) => { signal = s; return delay(1000, undefined, { signal: s }); }));
  const took = performance.now() - t0;
  assert.equal(e.code, 'ETIMEDOUT');
  assert.equal(e.timeoutMs, 30);
  assert.ok(took >= 29 && took < 200, `took ${took}`);
  assert.equal(signal.aborted, true);
  assert.equal(signal.reason, e);
});

test('each call gets a fresh signal: one timeout does not abort the next call (opossum #861)', async () => {
  const t = timeout(20);
  await rejection(t.execute(() => delay(100)));
  let signal;
  const v = await t.execute(async ({ signal: s }) => { signal = s; await delay(5); return 'fresh'; });
  assert.equal(v, 'fresh');
  assert.equal(signal.aborted, false);
});

test('a deadline shorter than the timeout wins; an expired one fails at once', async () => {
  const t = timeout(1000);
  const d = new Deadline(25);
  const t0 = performance.now();
  const e = await rejection(t.execute(() => delay(500), { deadline: d }));
  assert.equal(e.code, 'ETIMEDOUT');
  assert.ok(performance.now() - t0 < 200);
  let called = false;
  const e2 = await rejection(t.execute(async () => { called = true; }, { deadline: new Deadline(1, { nowMs: performance.now() - 10 }) }));
  assert.equal(e2.code, 'ETIMEDOUT');
  assert.equal(called, false);
});

test('Deadline: remaining saturates, expires exactly at the end, children never outlive it', () => {
  const d = new Deadline(100, { nowMs: 1000 });
  assert.equal(d.remainingMs(1040), 60);
  assert.equal(d.remainingMs(900), 100);
  assert.equal(d.expired(1099), false);
  assert.equal(d.expired(1100), true);
  assert.equal(d.remainingMs(5000), 0);
  assert.equal(d.allocateMs(30, 1040), 30);
  assert.equal(d.allocateMs(80, 1040), 60);
  assert.equal(d.child(500, 1040).remainingMs(1040), 60);
  assert.equal(d.child(10, 1040).remainingMs(1040), 10);
  assert.throws(() => new Deadline(0), { code: 'EINVALIDCONFIG' });
});

test('wrap nests in the order given; retry inside the breaker is one breaker call', async () => {
  const breaker = new CircuitBreaker({ consecutiveFailures: 1 });
  const policy = wrap(breaker, new Retry({ attempts: 3, backoff: { baseMs: 1, jitter: 'none' } }), timeout(100));
  let n = 0;
  const v = await policy.execute(async ({ signal, attempt }) => {
    n += 1;
    assert.equal(signal.aborted, false);
    assert.equal(attempt, n);
    if (n < 3) throw new Error('flaky');
    return 'third time';
  });
  assert.equal(v, 'third time');
  assert.equal(breaker.state, 'closed');
  assert.equal(breaker.metrics().totals.successes, 1);
  assert.equal(breaker.metrics().totals.failures, 0);
});

test('pipeline: DESIGN §9 order, { source, degraded }, stale cache then fallbacks', async () => {
  const bulkhead = new Bulkhead({ maxConcurrent: 1 });
  const breaker = new CircuitBreaker({ consecutiveFailures: 2, openDurationMs: 60_000 });
  const p = pipeline({
    // given out of order on purpose
    timeout: timeout(50),
    retry: new Retry({ attempts: 2, backoff: { baseMs: 1, jitter: 'none' } }),
    breaker,
    bulkhead,
    staleCache: new StaleCache({ max: 10 }),
    fallback: [() => { throw new Error('no'); }, (err) => `fallback for ${err.message}`],
  });
  let running = 0;
  const call = (v) => async () => {
    running += 1;
    assert.equal(running, 1, 'the bulkhead is outermost: one call at a time');
    await delay(1);
    running -= 1;
    if (v instanceof Error) throw v;
    return v;
  };
  assert.deepEqual(await p.execute(call('fresh'), { key: 'a' }), { value: 'fresh', source: 'primary', degraded: false });
  const stale = await p.execute(call(new Error('down')), { key: 'a' });
  assert.equal(stale.value, 'fresh');
  assert.equal(stale.source, 'stale-cache');
  assert.equal(stale.degraded, true);
  assert.equal(stale.error.message, 'down');
  // retry made 2 attempts inside the breaker: one breaker failure
  assert.equal(breaker.metrics().totals.failures, 1);
  const fb = await p.execute(call(new Error('gone')), { key: 'b' });
  assert.deepEqual([fb.value, fb.source, fb.degraded], ['fallback for gone', 'fallback-2', true]);
  assert.equal(breaker.state, 'open');
  const rejected = await p.execute(call('unused'), { key: 'b' });
  assert.equal(rejected.source, 'fallback-2');
  assert.equal(rejected.error.code, 'ECIRCUITOPEN');
});

test('pipeline deadlineMs bounds the whole call', async () => {
  const p = pipeline({ deadlineMs: 40, retry: new Retry({ attempts: 10, backoff: { baseMs: 5, jitter: 'none', multiplier: 1 } }), timeout: timeout(1000) });
  const t0 = performance.now();
  const e = await rejection(p.execute(() => delay(1000)));
  assert.equal(e.code, 'ETIMEDOUT');
  assert.ok(performance.now() - t0 < 150, `took ${performance.now() - t0}`);
});
