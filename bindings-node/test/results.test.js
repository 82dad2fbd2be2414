'use strict';
// A returned value can be a failure (DESIGN §1): a 503 returned by fetch, not
// thrown. Breakers record it as a failure and the caller still gets the value;
// retry retries it and, when the attempts run out, resolves with the last value.
const test = require('node:test');
const assert = require('node:assert/strict');
const { CircuitBreaker, Retry, retry, wrap, pipeline } = require('..');

const zero = { baseMs: 0 };
const is503 = (r) => r.status === 503;

test('retry({ retryOnResult }) retries a returned failure and resolves with the first good value', async () => {
  const answers = [{ status: 503 }, { status: 503 }, { status: 200, body: 'ok' }];
  const seen = [];
  const v = await retry(({ attempt }) => { seen.push(attempt); return answers[attempt - 1]; }, {
    attempts: 5, backoff: zero, retryOnResult: is503,
  });
  assert.deepEqual(v, { status: 200, body: 'ok' });
  assert.deepEqual(seen, [1, 2, 3]);
});

test('when the attempts run out on returned failures, the caller gets the last returned value', async () => {
  let n = 0;
  const infos = [];
  const policy = new Retry({
    attempts: 3, backoff: zero, retryOnResult: (r, attempt) => r.status === 503 && attempt > 0,
    onRetry: (info) => infos.push(info),
  });
  const v = await policy.execute(() => ({ status: 503, n: ++n }));
  assert.deepEqual(v, { status: 503, n: 3 });
  assert.deepEqual(infos.map((i) => [i.attempt, i.error, i.result && i.result.n]), [[1, undefined, 1], [2, undefined, 2]]);
  assert.deepEqual(policy.metrics().giveUps.maxAttempts, 1);
  assert.equal(policy.metrics().retries, 2);
});

test('a returned Response with Retry-After is waited out like a thrown one', async () => {
  let n = 0;
  const t0 = performance.now();
  const v = await retry(() => (++n === 1 ? { status: 503, headers: new Headers({ 'retry-after': '0.12' }) } : { status: 200 }), {
    attempts: 2, backoff: zero, retryOnResult: is503,
  });
  assert.equal(v.status, 200);
  assert.ok(performance.now() - t0 >= 115, `waited ${performance.now() - t0} ms`);
});

test('new CircuitBreaker({ isFailureResult }) records returned failures and opens on them; the caller gets the value', async () => {
  const b = new CircuitBreaker({ consecutiveFailures: 3, isFailureResult: is503 });
  const failures = [];
  b.on('failure', (f) => failures.push(f));
  for (let i = 0; i < 2; i++) assert.deepEqual(await b.execute(() => ({ status: 503 })), { status: 503 });
  assert.equal(b.state, 'closed');
  assert.deepEqual(await b.execute(() => ({ status: 200 })), { status: 200 });
  for (let i = 0; i < 3; i++) await b.execute(() => ({ status: 503 }));
  assert.equal(b.state, 'open');
  const m = b.metrics();
  assert.equal(m.totals.failures, 5);
  assert.equal(m.totals.successes, 1);
  assert.equal(failures.length, 5);
  assert.deepEqual(failures[0].result, { status: 503 });
  assert.equal(failures[0].error, undefined);
  await assert.rejects(b.execute(() => ({ status: 200 })), { code: 'ECIRCUITOPEN' });
});

test('wrap and pipeline: retry inside a breaker retries returned failures, the breaker sees the final one', async () => {
  const b = new CircuitBreaker({ consecutiveFailures: 1, isFailureResult: is503 });
  let calls = 0;
  const w = wrap(b, new Retry({ attempts: 3, backoff: zero, retryOnResult: is503 }));
  assert.deepEqual(await w.execute(() => { calls += 1; return { status: 503 }; }), { status: 503 });
  assert.equal(calls, 3);
  assert.equal(b.state, 'open');
  // A pipeline's isFailureResult: a returned failure goes to the fallbacks and
  // is never cached as a good value.
  const p = pipeline({ retry: new Retry({ attempts: 2, backoff: zero, retryOnResult: is503 }), isFailureResult: is503,
    staleCache: { max: 4 }, fallback: () => 'fallback' });
  assert.deepEqual(await p.execute(() => ({ status: 200, v: 1 }), { key: 'k' }), { value: { status: 200, v: 1 }, source: 'primary', degraded: false });
  const stale = await p.execute(() => ({ status: 503 }), { key: 'k' });
  assert.equal(stale.source, 'stale-cache');
  assert.deepEqual(stale.value, { status: 200, v: 1 });
  assert.deepEqual(stale.result, { status: 503 });
  const fb = await p.execute(() => ({ status: 503 }), { key: 'other' });
  assert.deepEqual([fb.value, fb.source, fb.degraded], ['fallback', 'fallback-1', true]);
  // With nothing to fall back on, the last returned value, marked degraded.
  const bare = pipeline({ isFailureResult: is503 });
  assert.deepEqual(await bare.execute(() => ({ status: 503 })), { value: { status: 503 }, source: 'primary', degraded: true });
});

test('retryOnResult and isFailureResult must be functions', () => {
  assert.throws(() => new Retry({ retryOnResult: true }), { code: 'EINVALIDCONFIG', field: 'retryOnResult' });
  assert.throws(() => new CircuitBreaker({ isFailureResult: 'x' }), { code: 'EINVALIDCONFIG', field: 'isFailureResult' });
  assert.throws(() => pipeline({ isFailureResult: 1 }), { code: 'EINVALIDCONFIG', field: 'isFailureResult' });
});
