'use strict';
// A listener or hook that throws never changes a call's result, outcome or any
// state (DESIGN §1): its error is reported on process 'warning' and the call
// goes on.
const test = require('node:test');
const assert = require('node:assert/strict');
const { CircuitBreaker, Retry } = require('..');
const { rejection } = require('./helpers');

/** Run `f` and collect the seawall listener warnings it causes. */
async function warningsOf(f) {
  const seen = [];
  const onWarning = (w) => { if (w.name === 'SeawallListenerWarning') seen.push(w); };
  process.on('warning', onWarning);
  try {
    await f();
    await new Promise((r) => setImmediate(r)); // warnings are emitted on the next tick
    await new Promise((r) => setImmediate(r));
  } finally {
    process.off('warning', onWarning);
  }
  return seen;
}

test('a throwing success listener does not change the result, and is reported', async () => {
  const c = new CircuitBreaker({ name: 'logs' });
  const thrown = new Error('log');
  let second = 0;
  c.on('success', () => { throw thrown; });
  c.on('success', () => { second += 1; });
  let v;
  const warnings = await warningsOf(async () => { v = await c.execute(() => 'v'); });
  assert.equal(v, 'v');
  assert.equal(second, 1, 'the next listener still runs');
  assert.equal(warnings.length, 1);
  assert.equal(warnings[0].cause, thrown);
  assert.match(warnings[0].message, /'success' listener of circuit breaker 'logs'/);
  assert.equal(c.metrics().totals.successes, 1);
});

test("a throwing open listener keeps the caller's own error and the fallback", async () => {
  const down = new Error('down');
  const c = new CircuitBreaker({ consecutiveFailures: 1 });
  c.on('open', () => { throw new Error('pager'); });
  const warnings = await warningsOf(async () => {
    assert.equal(await rejection(c.execute(() => { throw down; })), down);
  });
  assert.equal(c.state, 'open');
  assert.equal(warnings.length, 1);
  const f = new CircuitBreaker({ consecutiveFailures: 1, fallback: (e) => `fallback for ${e.message}` });
  f.on('open', () => { throw new Error('pager'); });
  await warningsOf(async () => {
    assert.equal(await f.execute(() => { throw down; }), 'fallback for down');
  });
});

test('a throwing or rejecting reject listener keeps ECIRCUITOPEN', async () => {
  const c = new CircuitBreaker();
  c.forceOpen();
  c.on('reject', () => { throw new Error('metrics'); });
  c.on('reject', async () => { throw new Error('async metrics'); });
  const warnings = await warningsOf(async () => {
    const e = await rejection(c.execute(() => 1));
    assert.equal(e.code, 'ECIRCUITOPEN');
  });
  assert.deepEqual(warnings.map((w) => w.cause.message).sort(), ['async metrics', 'metrics']);
});

test('a throwing onRetry hook does not stop the retries', async () => {
  let calls = 0;
  let v;
  const warnings = await warningsOf(async () => {
    v = await new Retry({ attempts: 3, backoff: { baseMs: 0 }, onRetry: () => { throw new Error('hook'); } })
      .execute(() => { calls += 1; if (calls < 3) throw new Error('flaky'); return 'third time'; });
  });
  assert.equal(v, 'third time');
  assert.equal(warnings.length, 2);
});
