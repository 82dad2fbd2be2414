'use strict';
// The rate limiter (DESIGN §10, GCRA) against hand-worked figures: with `rate`
// cells per `perMs` and `burst`, T = perMs / rate and τ = T · (burst − 1); n
// cells at now are admitted iff max(TAT, now) + n·T − T − now ≤ τ, else the
// wait is that excess minus τ. Times are given as `nowMs` so every figure is
// exact; the waits, aborts, the policy in wrap / pipeline, the keyed form,
// sharing and metrics are checked on top.
const test = require('node:test');
const assert = require('node:assert/strict');
const { getEventListeners } = require('node:events');
const { execFileSync } = require('node:child_process');
const path = require('node:path');
const {
  RateLimiter, CircuitBreaker, Retry, Deadline, wrap, pipeline, registerMetrics, isSeawallError, monotonicMs, sharedSupported,
} = require('..');
const { rejection } = require('./helpers');

// 10 per second, burst 3: T = 100 ms, τ = 200 ms.
const TEN = { rate: 10, perMs: 1000, burst: 3 };

test('a burst, then one cell per emission interval, with exact retry-afters', () => {
  const l = new RateLimiter(TEN);
  const at = (nowMs) => ({ nowMs });
  assert.deepEqual([0, 0, 0].map(() => l.take(1, at(0))), [0, 0, 0]);
  // TAT 300: next 400, 400 − 100 − 0 = 300 > 200: wait 100 ms.
  assert.equal(l.take(1, at(0)), 100);
  assert.equal(l.take(1, at(30)), 70); // 400 − 100 − 30 = 270: 70 ms
  assert.equal(l.take(1, at(100)), 0); // 200 ≤ 200
  assert.equal(l.take(2, at(100)), 200); // next 600: 400 − 200
  assert.equal(l.tryAcquire(3, at(10_000)), true); // rested again
  assert.equal(l.tryAcquire(1, at(10_000)), false);
  const m = l.metrics();
  assert.deepEqual(
    [m.rate, m.perMs, m.burst, m.keyed, m.shared, m.created, m.admitted, m.rejected],
    [10, 1000, 3, false, false, true, 5, 4],
  );
});

test('n cells are all or none; defaults: perMs 1000, burst = rate', () => {
  // 5 per second, burst 4: T = 200 ms, τ = 600 ms.
  const l = new RateLimiter({ rate: 5, burst: 4 });
  assert.equal(l.take(3, { nowMs: 0 }), 0);
  assert.equal(l.take(2, { nowMs: 0 }), 200); // next 1000: 800 − 600
  assert.equal(l.take(1, { nowMs: 0 }), 0); // the refusal took nothing
  const d = new RateLimiter({ rate: 100 }).metrics();
  assert.deepEqual([d.perMs, d.burst], [1000, 100]);
});

test('invalid options and cell counts are EINVALIDCONFIG naming the field', () => {
  const bad = [
    [{}, 'rate'], [{ rate: 0 }, 'rate'], [{ rate: 1.5 }, 'rate'], [{ rate: 10, perMs: 0 }, 'perMs'],
    [{ rate: 10, burst: 0 }, 'burst'], [{ rate: 10, burst: 2 ** 32 }, 'burst'],
    [{ rate: 2000, perMs: 0.001 }, 'rate'], // T = 1000 ns / 2000 < 1 ns
    [{ rate: 10, keyed: 'yes' }, 'keyed'], [{ rate: 10, maxWaitMs: -1 }, 'maxWaitMs'], [{ rate: 10, speed: 1 }, 'speed'],
    // A name is a non-empty string, as for every other class.
    [{ rate: 10, name: 5 }, 'name'], [{ rate: 10, name: '' }, 'name'], [{ rate: 10, name: {} }, 'name'],
  ];
  for (const [options, field] of bad) {
    assert.throws(() => new RateLimiter(options), (e) => isSeawallError(e, 'EINVALIDCONFIG') && e.field === field, JSON.stringify(options));
  }
  const l = new RateLimiter(TEN);
  assert.throws(() => l.take(0), { code: 'EINVALIDCONFIG', field: 'n', message: 'invalid n: must not be zero' });
  assert.throws(() => l.take(4), { code: 'EINVALIDCONFIG', field: 'n', message: 'invalid n: must be between 1 and 3' });
  assert.throws(() => l.take(2 ** 40), { code: 'EINVALIDCONFIG', field: 'n' });
  assert.throws(() => l.take(1.5), { code: 'EINVALIDCONFIG', field: 'n' });
  // A negative count says the range and the count given, not "must not be zero".
  assert.throws(() => l.take(-1), { code: 'EINVALIDCONFIG', field: 'n', message: 'invalid n: must be between 1 and 3, not -1' });
  assert.throws(() => l.tryAcquire(-2), { code: 'EINVALIDCONFIG', field: 'n', message: 'invalid n: must be between 1 and 3, not -2' });
  assert.throws(() => l.take(1, { key: 'a' }), { code: 'EINVALIDCONFIG', field: 'key' });
  assert.equal(l.take(3), 0); // nothing was taken by the refusals
});

test('acquire waits for the next cell and gives up when it lies past timeoutMs', async () => {
  const l = new RateLimiter({ rate: 50, burst: 1 }); // one cell every 20 ms
  await l.acquire();
  const t0 = monotonicMs();
  await l.acquire(1, { timeoutMs: 5000 });
  assert.ok(monotonicMs() - t0 >= 15, 'waited for the next cell');
  const e = await rejection(l.acquire(1, { timeoutMs: 1 }));
  assert.equal(e.code, 'ERATELIMITED');
  assert.ok(e.retryAfterMs > 1 && e.retryAfterMs <= 20, `retryAfterMs ${e.retryAfterMs}`);
});

test('aborting acquire rejects EABORTED and leaves no listener, no timer and no cell taken', async () => {
  const l = new RateLimiter({ rate: 1, perMs: 60_000, burst: 1 }); // T = 1 min
  assert.equal(l.tryAcquire(), true);
  const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
  const before = timers();
  const ac = new AbortController();
  const pending = l.acquire(1, { signal: ac.signal });
  assert.equal(getEventListeners(ac.signal, 'abort').length, 1);
  setTimeout(() => ac.abort(new Error('client went away')), 10);
  const e = await rejection(pending);
  assert.equal(e.code, 'EABORTED');
  assert.equal(e.cause.message, 'client went away');
  assert.equal(getEventListeners(ac.signal, 'abort').length, 0);
  assert.equal(timers(), before);
  const m = l.metrics();
  assert.equal(m.admitted, 1);
  // Still one minute to wait from the first take: the aborted wait took nothing.
  assert.ok(l.take() > 59_000);
  const pre = new AbortController();
  pre.abort();
  assert.equal((await rejection(l.acquire(1, { signal: pre.signal }))).code, 'EABORTED');
});

test('execute: a cell per call, ERATELIMITED with retryAfterMs past maxWaitMs or the deadline', async () => {
  const l = new RateLimiter({ rate: 10, burst: 1, name: 'upstream', maxWaitMs: 0 });
  assert.equal(await l.execute(async () => 42), 42);
  const e = await rejection(l.execute(async () => 0));
  assert.equal(e.code, 'ERATELIMITED');
  assert.equal(e.limiter, 'upstream');
  assert.ok(e.retryAfterMs > 90 && e.retryAfterMs <= 100, `retryAfterMs ${e.retryAfterMs}`);
  const waiting = new RateLimiter({ rate: 20, burst: 1 }); // 50 ms apart
  const wrapped = waiting.wrap(async (x) => x * 2);
  assert.equal(await wrapped(1), 2);
  assert.equal(await wrapped(2), 4); // waited about 50 ms
  const short = new Deadline(5);
  assert.equal((await rejection(waiting.execute(async () => 0, { deadline: short }))).code, 'ERATELIMITED');
});

test('in wrap / pipeline: retry waits out retryAfterMs; the breaker never counts a rejection', async () => {
  const limiter = new RateLimiter({ rate: 20, burst: 1, maxWaitMs: 0 }); // 50 ms apart
  const breaker = new CircuitBreaker({ consecutiveFailures: 1, failureRateThreshold: null });
  const retry = new Retry({ attempts: 3, backoff: { baseMs: 1, jitter: 'none' }, deadlineMs: 5000 });
  const policy = wrap(breaker, retry, limiter);
  const times = [];
  const call = () => policy.execute(async () => { times.push(monotonicMs()); return times.length; });
  assert.equal(await call(), 1);
  assert.equal(await call(), 2); // refused once, retried after the 50 ms it was told
  assert.ok(times[1] - times[0] >= 45, `${times[1] - times[0]} ms apart`);
  // Without a retry the rejection reaches the breaker, which ignores it.
  const bare = wrap(breaker, limiter);
  for (let i = 0; i < 3; i++) assert.equal((await rejection(bare.execute(async () => 0))).code, 'ERATELIMITED');
  assert.equal(breaker.state, 'closed');
  // pipeline puts the limiter inside retry whatever the option order.
  const p = pipeline({ rateLimiter: new RateLimiter({ rate: 20, burst: 1, maxWaitMs: 0 }), retry, deadlineMs: 5000 });
  assert.equal((await p.execute(async () => 'a')).value, 'a');
  assert.equal((await p.execute(async () => 'b')).value, 'b');
});

test('keyed: each key its own limit, through take, forKey and execute', async () => {
  const l = new RateLimiter({ ...TEN, keyed: true, maxWaitMs: 0 });
  const a = l.forKey('client-a');
  assert.deepEqual([1, 2, 3, 4].map(() => a.take(1, { nowMs: 0 })), [0, 0, 0, 100]);
  // Of 50 other keys, those on another of the 4096 slots have a whole burst.
  const free = Array.from({ length: 50 }, (_, i) => `client-${i}`).filter((k) => l.take(1, { key: k, nowMs: 0 }) === 0);
  assert.ok(free.length >= 49, `${free.length} free`);
  assert.equal(l.take(2, { key: free[0], nowMs: 0 }), 0);
  assert.equal(l.take(1, { key: free[0], nowMs: 0 }), 100);
  // Numbers are keys too (wrapping as 64-bit words); one key is one slot.
  assert.equal(l.take(3, { key: 7 }), 0);
  assert.ok(l.take(1, { key: 7 }) > 0);
  const e = await rejection(l.forKey(7).execute(async () => 0));
  assert.deepEqual([e.code, e.key], ['ERATELIMITED', 7]);
  assert.throws(() => l.take(1), { code: 'EINVALIDCONFIG', field: 'key' });
  assert.throws(() => l.forKey(1.5), { code: 'EINVALIDCONFIG', field: 'key' });
  assert.throws(() => new RateLimiter(TEN).forKey('a'), { code: 'EINVALIDCONFIG', field: 'key' });
});

test('one shared limiter for two processes; another configuration is ESHAREDMISMATCH', { skip: !sharedSupported() && 'no native 128-bit atomics' }, () => {
  const name = `node-rate-${process.pid}`;
  RateLimiter.unlinkShared(name);
  RateLimiter.unlinkShared(name, { keyed: true });
  try {
    // One cell per 1000 s: nothing comes back while the test runs.
    const opts = { rate: 1, perMs: 1_000_000, burst: 3, shared: name };
    const l = new RateLimiter(opts);
    assert.equal(l.isShared, true);
    assert.equal(l.name, name);
    const index = path.join(__dirname, '..');
    const child = `const { RateLimiter } = require(${JSON.stringify(index)});
      const l = new RateLimiter(${JSON.stringify(opts)});
      const k = new RateLimiter(${JSON.stringify({ ...opts, burst: 1, keyed: true })});
      console.log(JSON.stringify([l.metrics().created, l.tryAcquire(2), k.tryAcquire(1, { key: 'client-42' })]));`;
    const k = new RateLimiter({ ...opts, burst: 1, keyed: true });
    const out = execFileSync(process.execPath, ['-e', child], { encoding: 'utf8' });
    assert.deepEqual(JSON.parse(out), [false, true, true]);
    assert.equal(l.tryAcquire(), true);
    assert.equal(l.tryAcquire(), false);
    // The other process's string key is this one's: the creator's seed.
    assert.equal(k.tryAcquire(1, { key: 'client-42' }), false);
    assert.throws(() => new RateLimiter({ ...opts, burst: 4 }), (e) => e.code === 'ESHAREDMISMATCH' && /rate, perMs and burst/.test(e.message));
  } finally {
    RateLimiter.unlinkShared(name);
    RateLimiter.unlinkShared(name, { keyed: true });
  }
});

test('prom-client counters of admitted and rejected takes', async () => {
  const client = require('prom-client');
  const registry = new client.Registry();
  const l = new RateLimiter({ ...TEN, name: 'quota' });
  for (let i = 0; i < 5; i++) l.tryAcquire(1, { nowMs: 0 });
  registerMetrics(registry, { rateLimiters: [l] });
  const text = await registry.metrics();
  assert.ok(text.includes('seawall_rate_limiter_admitted_total{limiter="quota"} 3'), text);
  assert.ok(text.includes('seawall_rate_limiter_rejected_total{limiter="quota"} 2'), text);
});
