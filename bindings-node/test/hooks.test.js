'use strict';
// Hooks on every policy (cockatiel's shape): an event, and onX(listener)
// returning a Disposable whose dispose() removes the listener.
const test = require('node:test');
const assert = require('node:assert/strict');
const { CircuitBreaker, Retry, Bulkhead, RateLimiter, timeout, pipeline, Deadline } = require('..');
const { delay, rejection } = require('./helpers');

test('retry: onRetry(fn) sees each retry, onGiveUp(fn) the reason and last error; dispose removes them', async () => {
  const p = new Retry({ attempts: 3, backoff: { kind: 'constant', delayMs: 1 } });
  const retries = [];
  const giveUps = [];
  const r = p.onRetry((i) => retries.push([i.attempt, i.delayMs, i.error.message]));
  const g = p.onGiveUp((i) => giveUps.push([i.reason, i.attempts, i.error && i.error.message]));
  let n = 0;
  await rejection(p.execute(() => { n += 1; throw new Error(`e${n}`); }));
  assert.deepEqual(retries, [[1, 1, 'e1'], [2, 1, 'e2']]);
  assert.deepEqual(giveUps, [['maxAttempts', 3, 'e3']]);
  const notRetryable = new Retry({ attempts: 3, shouldRetry: () => false });
  const why = [];
  notRetryable.onGiveUp((i) => why.push(i.reason));
  await rejection(notRetryable.execute(() => { throw new Error('4xx'); }));
  await rejection(new Retry({ attempts: 3, backoff: { kind: 'constant', delayMs: 500 } })
    .execute(() => { throw new Error('x'); }, { deadline: new Deadline(50) }));
  assert.deepEqual(why, ['notRetryable']);
  r.dispose();
  g.dispose();
  await rejection(p.execute(() => { throw new Error('quiet'); }));
  assert.equal(retries.length, 2);
  assert.equal(giveUps.length, 1);
});

test('bulkhead: onReject(fn) with the reason, for full and queue timeouts', async () => {
  const b = new Bulkhead({ maxConcurrent: 1, maxQueue: 1, queueTimeoutMs: 20 });
  const seen = [];
  const d = b.onReject((i) => seen.push([i.reason, i.error.code]));
  const held = b.execute(() => delay(80));
  const queued = rejection(b.execute(() => 1));
  const full = await rejection(b.execute(() => 1));
  assert.equal(full.code, 'EBULKHEADFULL');
  assert.equal((await queued).reason, 'queueTimeout');
  await held;
  assert.deepEqual(seen, [['full', 'EBULKHEADFULL'], ['queueTimeout', 'EBULKHEADFULL']]);
  d.dispose();
  b.execute(() => delay(30));
  await rejection(b.execute(() => 1));
  assert.equal(seen.length, 2);
});

test('timeout: onTimeout(fn) when time is up, not when the call finishes in time', async () => {
  const t = timeout(20);
  const seen = [];
  t.onTimeout((i) => seen.push(i.timeoutMs));
  await t.execute(() => 'fast');
  await rejection(t.execute(() => delay(200)));
  assert.deepEqual(seen, [20]);
});

test('pipeline: onFallback(fn) with the source that answered and the error', async () => {
  const p = pipeline({ staleCache: { max: 2 }, fallback: [() => { throw new Error('no'); }, () => 'second'] });
  const seen = [];
  p.onFallback((i) => seen.push([i.source, i.error.message]));
  await p.execute(() => 'fresh', { key: 'a' });
  await p.execute(() => { throw new Error('down'); }, { key: 'a' });
  await p.execute(() => { throw new Error('down'); }, { key: 'b' });
  assert.deepEqual(seen, [['stale-cache', 'down'], ['fallback-2', 'down']]);
});

test('breaker: onSuccess / onFailure / onReject / onStateChange disposables', async () => {
  const c = new CircuitBreaker({ consecutiveFailures: 1 });
  const seen = [];
  const ds = [
    c.onSuccess(() => seen.push('success')), c.onFailure(() => seen.push('failure')),
    c.onReject(() => seen.push('reject')), c.onStateChange((s) => seen.push(`${s.from}->${s.to}`)),
  ];
  await c.execute(() => 1);
  await rejection(c.execute(() => { throw new Error('x'); }));
  await rejection(c.execute(() => 1));
  assert.deepEqual(seen, ['success', 'closed->open', 'failure', 'reject']);
  for (const d of ds) d.dispose();
  c.reset();
  assert.equal(seen.length, 4);
});

test('rate limiter: onReject(fn) with retryAfterMs and the key for each ERATELIMITED; dispose removes it', async () => {
  // one cell a minute, burst 1: the second call within the minute is refused
  // with at most 60 000 ms to wait.
  const l = new RateLimiter({ rate: 1, perMs: 60_000, burst: 1, maxWaitMs: 0, keyed: true });
  const seen = [];
  const d = l.onReject((i) => seen.push([i.key, i.error.code, i.retryAfterMs === i.error.retryAfterMs, i.retryAfterMs]));
  const a = l.forKey('a');
  assert.equal(await a.execute(() => 1), 1);
  const e = await rejection(a.execute(() => 2));
  assert.equal(e.code, 'ERATELIMITED');
  assert.equal(seen.length, 1);
  const [key, code, same, wait] = seen[0];
  assert.deepEqual([key, code, same], ['a', 'ERATELIMITED', true]);
  assert.ok(wait > 50_000 && wait <= 60_000, String(wait));
  l.on('reject', () => { throw new Error('listener bug'); });
  assert.equal((await rejection(l.acquire(1, { key: 'a', timeoutMs: 0 }))).code, 'ERATELIMITED', 'a throwing listener changes nothing');
  d.dispose();
  await rejection(a.execute(() => 3));
  assert.equal(seen.length, 2, 'acquire refused once more while the listener was on');
});
