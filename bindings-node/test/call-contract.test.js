'use strict';
// What every policy's execute(fn, options) promises about its arguments and its
// time bounds: the signal may be given bare (cockatiel's execute(fn, signal)),
// bad arguments are a rejected promise with EINVALIDCONFIG (never a synchronous
// throw, never a TypeError), and a pipeline's deadline bounds the call whatever
// the layers are.
const test = require('node:test');
const assert = require('node:assert/strict');
const {
  CircuitBreaker, Retry, Bulkhead, RateLimiter, timeout, wrap, pipeline, StaleCache, isSeawallError,
} = require('..');
const { delay, rejection } = require('./helpers');

function policies() {
  return {
    breaker: new CircuitBreaker(),
    retry: new Retry({ attempts: 1 }),
    bulkhead: new Bulkhead({ maxConcurrent: 2 }),
    timeout: timeout(1000),
    wrap: wrap(new Retry({ attempts: 1 }), timeout(1000)),
    pipeline: pipeline({ retry: new Retry({ attempts: 1 }) }),
    rateLimiter: new RateLimiter({ rate: 1000 }),
    keyedRateLimit: new RateLimiter({ rate: 1000, keyed: true }).forKey('client-1'),
  };
}

test('pipeline deadlineMs bounds the call and aborts its signal, with or without a timeout layer', async () => {
  for (const layers of [{ retry: new Retry({ attempts: 1 }) }, { retry: new Retry({ attempts: 1 }), timeout: timeout(5000) }, {}]) {
    const p = pipeline({ ...layers, deadlineMs: 100 });
    let signal;
    const t0 = performance.now();
    const e = await rejection(p.execute(({ signal: s }) => { signal = s; return delay(600, 'late'); }));
    const took = performance.now() - t0;
    assert.equal(e.code, 'ETIMEDOUT', Object.keys(layers).join('+'));
    assert.ok(took >= 95 && took < 400, `took ${took} ms`);
    assert.ok(signal !== undefined, 'fn got a signal');
    assert.equal(signal.aborted, true);
  }
});

test('execute(fn, signal): the bare signal is the call\'s signal, in every policy', async () => {
  for (const [name, p] of Object.entries(policies())) {
    const ac = new AbortController();
    ac.abort(new Error('caller gave up'));
    let called = false;
    const e = await rejection(p.execute(() => { called = true; return 1; }, ac.signal));
    assert.equal(e.code, 'EABORTED', name);
    assert.equal(called, false, name);
    // A live signal: the call runs and gets a signal that aborts with it.
    const live = new AbortController();
    const e2 = await rejection(p.execute(({ signal }) => new Promise((resolve, reject) => {
      signal.addEventListener('abort', () => reject(new Error('fn saw the abort')));
      setImmediate(() => live.abort());
    }), live.signal));
    assert.ok(['fn saw the abort', 'the operation was aborted'].includes(e2.message), `${name}: ${e2.message}`);
  }
});

test('bad execute arguments are a rejected promise with EINVALIDCONFIG naming the argument, in every policy', async () => {
  const cases = [
    [[123], 'fn'],
    [[() => 1, { signal: 'x' }], 'signal'],
    [[() => 1, { deadline: 5 }], 'deadline'],
    [[() => 1, 42], 'options'],
  ];
  for (const [name, p] of Object.entries(policies())) {
    for (const [args, field] of cases) {
      let result;
      assert.doesNotThrow(() => { result = p.execute(...args); }, `${name}(${String(args[1])}) threw synchronously`);
      assert.ok(result instanceof Promise, name);
      const e = await rejection(result);
      assert.ok(isSeawallError(e, 'EINVALIDCONFIG'), `${name} ${field}: ${e && e.name} ${e && e.message}`);
      assert.equal(e.field, field, name);
    }
  }
});

test("timeout(ms, 'cooperative') aborts the signal and waits for fn to settle; 'aggressive' rejects at once; others refused", async () => {
  let settledAt;
  const t0 = performance.now();
  const e = await rejection(timeout(30, 'cooperative').execute(async ({ signal }) => {
    await new Promise((r) => signal.addEventListener('abort', r));
    await delay(60);
    settledAt = performance.now() - t0;
    return 'finished anyway';
  }));
  const took = performance.now() - t0;
  assert.equal(e.code, 'ETIMEDOUT');
  assert.ok(settledAt !== undefined && took >= settledAt, `rejected at ${took} ms, fn settled at ${settledAt} ms`);
  assert.ok(took >= 85, `took ${took}`);
  const t1 = performance.now();
  const e2 = await rejection(timeout(30, 'aggressive').execute(() => delay(300)));
  assert.equal(e2.code, 'ETIMEDOUT');
  assert.ok(performance.now() - t1 < 200);
  // A cooperative call that finishes in time resolves with its value.
  assert.equal(await timeout(200, 'cooperative').execute(() => delay(5, 'ok')), 'ok');
  for (const bad of ['Cooperative', 1, {}, null]) {
    assert.throws(() => timeout(30, bad), (err) => isSeawallError(err, 'EINVALIDCONFIG') && err.field === 'strategy', String(bad));
  }
});

test('StaleCache max beyond what can be allocated is EINVALIDCONFIG naming max', () => {
  for (const max of [2 ** 40, 1e308, 2 ** 32]) {
    assert.throws(() => new StaleCache({ max }), (e) => isSeawallError(e, 'EINVALIDCONFIG') && e.field === 'staleCache.max', String(max));
    assert.throws(() => pipeline({ staleCache: { max } }), (e) => isSeawallError(e, 'EINVALIDCONFIG') && e.field === 'staleCache.max');
  }
  assert.equal(new StaleCache({ max: 2 ** 16 }).size, 0);
});
