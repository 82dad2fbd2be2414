'use strict';
// seawall/opossum against opossum's documented contract (its README and the
// JSDoc of its options, methods and events): every option, method, getter and
// event. Expected values are worked out by hand from that contract.
const test = require('node:test');
const assert = require('node:assert/strict');
const { EventEmitter } = require('node:events');
const client = require('prom-client');
const CircuitBreaker = require('seawall/opossum');
const seawall = require('seawall');
const { delay, deferred, rejection } = require('./helpers');

const boom = (msg = 'boom') => Object.assign(new Error(msg), { statusCode: 500 });
/** An action: `'F'` rejects, `'T'` never settles, anything else resolves with itself. */
const act = async (x) => {
  if (x === 'F') throw boom();
  if (x === 'T') return new Promise(() => {});
  return x;
};

/** Fire `outcomes` one after another; the settled results. */
async function run(b, outcomes) {
  const out = [];
  for (const o of outcomes) out.push(await b.fire(o).then((v) => ({ v }), (e) => ({ e })));
  return out;
}

/** Every event of `b` in order, as [name, ...args]. */
function record(b) {
  const seen = [];
  for (const e of ['fire', 'reject', 'timeout', 'success', 'failure', 'open', 'close', 'halfOpen', 'fallback',
    'semaphoreLocked', 'healthCheckFailed', 'shutdown', 'cacheHit', 'cacheMiss', 'coalesceCacheHit', 'coalesceCacheMiss']) {
    b.on(e, (...args) => seen.push([e, ...args]));
  }
  return seen;
}
const names = (seen) => seen.map((s) => s[0]);

/** Wait until `cond()` holds (polled; a loaded machine may run timers late), at most `ms`. */
async function until(cond, ms = 3000) {
  const end = performance.now() + ms;
  while (!cond() && performance.now() < end) await delay(5);
}

test('defaults are opossum\'s: timeout 10 s, resetTimeout 30 s, 50 %, window 10 s in 10 buckets, volumeThreshold 0', () => {
  const b = new CircuitBreaker(async function getUser() { return 1; });
  assert.equal(b.options.timeout, 10000);
  assert.equal(b.options.resetTimeout, 30000);
  assert.equal(b.options.errorThresholdPercentage, 50);
  assert.equal(b.options.rollingCountTimeout, 10000);
  assert.equal(b.options.rollingCountBuckets, 10);
  assert.equal(b.options.capacity, Number.MAX_SAFE_INTEGER);
  assert.equal(b.volumeThreshold, 0);
  assert.equal(b.name, 'getUser'); // the action's name
  assert.equal(b.group, 'getUser');
  assert.equal(b.enabled, true);
  assert.equal(b.warmUp, false);
  assert.deepEqual([b.closed, b.opened, b.halfOpen, b.isShutdown], [true, false, false, false]);
  assert.equal(b.options.errorFilter(boom()), false);
  assert.equal(b.options.cacheGetKey(1, 'a'), '[1,"a"]');
  // the caller's options object is left as it was
  const options = { timeout: 5 };
  void new CircuitBreaker(act, options);
  assert.deepEqual(options, { timeout: 5 });
});

test('the first failure opens (volumeThreshold 0, 100 % > 50 %), then fire rejects with EOPENBREAKER', async () => {
  const b = new CircuitBreaker(act);
  const seen = record(b);
  const [r] = await run(b, ['F']);
  assert.equal(r.e.message, 'boom');
  assert.equal(CircuitBreaker.isOurError(r.e), false);
  assert.deepEqual(names(seen), ['fire', 'failure', 'open']);
  assert.equal(seen[1][1], r.e);
  assert.equal(typeof seen[1][2], 'number'); // latency
  assert.deepEqual(seen[1][3], ['F']); // args
  assert.equal(b.opened, true);
  const e = await rejection(b.fire(1));
  assert.equal(e.code, 'EOPENBREAKER');
  assert.equal(e.message, 'Breaker is open');
  assert.ok(CircuitBreaker.isOurError(e));
  assert.ok(e.retryAfterMs > 29000 && e.retryAfterMs <= 30000);
  assert.deepEqual(names(seen).slice(3), ['fire', 'reject']);
  assert.equal(seen[4][1], e);
  assert.deepEqual(
    { fires: b.stats.fires, failures: b.stats.failures, successes: b.stats.successes, rejects: b.stats.rejects },
    { fires: 2, failures: 1, successes: 0, rejects: 1 },
  );
});

test('errorThresholdPercentage is compared with > (opossum), not ≥ (DESIGN §3)', async () => {
  // 50: S F is 1/2 = 50 %, not above: closed; S F F is 2/3: open.
  const b = new CircuitBreaker(act, { errorThresholdPercentage: 50 });
  await run(b, ['S', 'F']);
  assert.equal(b.closed, true);
  await run(b, ['F']);
  assert.equal(b.opened, true);
  // 25: S S S F is exactly 25 %: closed; a second F makes 2/5 = 40 %: open.
  const c = new CircuitBreaker(act, { errorThresholdPercentage: 25 });
  await run(c, ['S', 'S', 'S', 'F']);
  assert.equal(c.closed, true);
  await run(c, ['F']);
  assert.equal(c.opened, true);
  // 100 can never be exceeded: no number of failures opens it.
  const d = new CircuitBreaker(act, { errorThresholdPercentage: 100 });
  await run(d, ['F', 'F', 'F', 'F']);
  assert.equal(d.closed, true);
  // 0: any failure is above.
  const z = new CircuitBreaker(act, { errorThresholdPercentage: 0 });
  await run(z, ['S', 'S', 'S', 'S', 'S', 'S', 'S', 'S', 'S', 'F']);
  assert.equal(z.opened, true);
});

test('volumeThreshold: no opening while the window holds fewer calls', async () => {
  const b = new CircuitBreaker(act, { volumeThreshold: 3 });
  await run(b, ['F', 'F']);
  assert.equal(b.closed, true); // 2 calls < 3
  await run(b, ['F']);
  assert.equal(b.opened, true); // 3 calls, 100 %
  assert.equal(b.volumeThreshold, 3);
});

test('rollingCountTimeout / rollingCountBuckets: failures older than the window no longer count', async () => {
  // window 200 ms in 2 buckets, volumeThreshold 2: one failure, the window
  // passes, one more failure: the window holds 1 call, below the volume.
  const b = new CircuitBreaker(act, { rollingCountTimeout: 200, rollingCountBuckets: 2, volumeThreshold: 2 });
  await run(b, ['F']);
  await delay(350);
  await run(b, ['F']);
  assert.equal(b.closed, true);
  await run(b, ['F']); // 2 calls in the window, both failures
  assert.equal(b.opened, true);
});

test('resetTimeout: halfOpen (with the resetTimeout) when it is up, one trial call, its success closes', async () => {
  let gate;
  const b = new CircuitBreaker((x) => (x === 'gate' ? gate : act(x)), { resetTimeout: 60 });
  const seen = record(b);
  await run(b, ['F']);
  assert.equal(b.opened, true);
  await until(() => seen.some((s) => s[0] === 'halfOpen'));
  assert.deepEqual(seen.find((s) => s[0] === 'halfOpen'), ['halfOpen', 60]);
  assert.equal(b.halfOpen, true);
  assert.equal(b.pendingClose, true);
  const trial = deferred();
  gate = trial.promise;
  const first = b.call(null, 'gate'); // `this` is null: the action below ignores it
  void first;
  const second = await rejection(b.fire('S')); // the trial is in flight: rejected
  assert.equal(second.code, 'EOPENBREAKER');
  assert.equal(b.pendingClose, false);
  trial.resolve();
  await first;
  assert.equal(b.closed, true);
  assert.ok(names(seen).includes('close'));
});

test('a failure when half-open opens again at once', async () => {
  const b = new CircuitBreaker(act, { resetTimeout: 40, volumeThreshold: 10 });
  b.open();
  await delay(80);
  assert.equal(b.halfOpen, true);
  const seen = record(b);
  await run(b, ['F']); // below the volume threshold, but half-open
  assert.deepEqual(names(seen), ['fire', 'failure', 'open']);
  assert.equal(b.opened, true);
});

test('timeout: ETIMEDOUT after `timeout` ms, a failure, the timeout event, the abortController aborted', async () => {
  const abortController = new AbortController();
  const b = new CircuitBreaker(act, { timeout: 30, abortController });
  const seen = record(b);
  const e = await rejection(b.fire('T'));
  assert.equal(e.code, 'ETIMEDOUT');
  assert.equal(e.message, 'Timed out after 30ms');
  assert.ok(CircuitBreaker.isOurError(e));
  assert.deepEqual(names(seen), ['fire', 'timeout', 'failure', 'open']);
  assert.equal(seen[1][1], e);
  assert.ok(seen[1][2] >= 30, `latency ${seen[1][2]}`); // never early
  assert.deepEqual(seen[1][3], ['T']);
  assert.equal(abortController.signal.aborted, true);
  assert.equal(b.getAbortController(), abortController);
  assert.equal(b.getSignal(), abortController.signal);
  assert.equal(b.stats.timeouts, 1);
  assert.equal(b.stats.failures, 1);
});

test('timeout: false lets a call take as long as it takes; a call that ends in time is not timed out later', async () => {
  const slow = new CircuitBreaker(() => delay(60).then(() => 'late'), { timeout: false });
  assert.equal(await slow.fire(), 'late');
  const b = new CircuitBreaker(() => delay(5).then(() => 'ok'), { timeout: 40 });
  const seen = record(b);
  assert.equal(await b.fire(), 'ok');
  await delay(90);
  assert.deepEqual(names(seen), ['fire', 'success']);
  assert.equal(b.stats.timeouts, 0);
});

test('many calls in flight time out in the order they started, each after its own timeout', async () => {
  const b = new CircuitBreaker(act, { timeout: 50, volumeThreshold: 1000 });
  const started = performance.now();
  const first = b.fire('T').catch((e) => [e.code, performance.now() - started]);
  await delay(30);
  const second = b.fire('T').catch((e) => [e.code, performance.now() - started]);
  const [a, c] = await Promise.all([first, second]);
  assert.equal(a[0], 'ETIMEDOUT');
  assert.equal(c[0], 'ETIMEDOUT');
  assert.ok(a[1] >= 50 && c[1] >= 80, `${a[1]} ${c[1]}`);
  assert.ok(c[1] > a[1]);
});

test('capacity: calls beyond it are refused with ESEMLOCKED (semaphoreLocked, counted a failure)', async () => {
  const gate = deferred();
  const b = new CircuitBreaker(() => gate.promise, { capacity: 1, volumeThreshold: 10 });
  const seen = record(b);
  const held = b.fire();
  const e = await rejection(b.fire());
  assert.equal(e.code, 'ESEMLOCKED');
  assert.equal(e.message, 'Semaphore locked');
  assert.ok(CircuitBreaker.isOurError(e));
  assert.deepEqual(names(seen), ['fire', 'fire', 'semaphoreLocked', 'failure']);
  assert.equal(b.stats.semaphoreRejections, 1);
  gate.resolve('done');
  assert.equal(await held, 'done');
  assert.equal(await b.fire(), 'done'); // the permit came back
  const none = new CircuitBreaker(act, { capacity: 0 });
  assert.equal((await rejection(none.fire(1))).code, 'ESEMLOCKED');
});

test('capacity: calls that ended give their permits back, so `capacity` calls at once are admitted again', async () => {
  const gates = [deferred(), deferred(), deferred()];
  let i = 0;
  const b = new CircuitBreaker(() => gates[i++ % 3].promise, { capacity: 2, volumeThreshold: 10 });
  // Two calls one after the other, each settled before the next.
  gates[0].resolve('a');
  assert.equal(await b.fire(), 'a');
  gates[1].resolve('b');
  assert.equal(await b.fire(), 'b');
  // Now two at once: both admitted (capacity 2), the third refused.
  gates[0] = deferred();
  gates[1] = deferred();
  i = 0;
  const first = b.fire();
  const second = b.fire();
  const third = await rejection(b.fire());
  assert.equal(third.code, 'ESEMLOCKED');
  gates[0].resolve('x');
  gates[1].resolve('y');
  assert.deepEqual(await Promise.all([first, second]), ['x', 'y']);
  assert.equal(b.stats.semaphoreRejections, 1);
});

test('errorFilter: a filtered error is a success (it still rejects, with no fallback) and closes a half-open breaker', async () => {
  const calls = [];
  const b = new CircuitBreaker(act, {
    resetTimeout: 30,
    errorFilter: (err, ...args) => {
      calls.push(args);
      return args[1] === 'ignore';
    },
  });
  b.fallback(() => 'fallback');
  const seen = record(b);
  const e = await rejection(b.fire('F', 'ignore'));
  assert.equal(e.message, 'boom');
  assert.deepEqual(names(seen), ['fire', 'success']);
  assert.equal(seen[1][1], e); // success is called with the error
  assert.deepEqual(calls, [['F', 'ignore']]);
  assert.equal(b.stats.successes, 1);
  assert.equal(b.closed, true);
  b.open();
  await delay(60);
  assert.equal(b.halfOpen, true);
  await rejection(b.fire('F', 'ignore'));
  assert.equal(b.closed, true);
  // not filtered: a failure with the fallback's answer
  assert.equal(await b.fire('F', 'count'), 'fallback');
});

test('fallback: called with fire\'s arguments and the error, on failure, timeout and rejection; the fallback event', async () => {
  const b = new CircuitBreaker(act, { timeout: 20 });
  b.fallback((x, y, err) => `fallback ${x} ${y} ${err.code || err.message}`);
  const seen = record(b);
  assert.equal(await b.fire('T', 2), 'fallback T 2 ETIMEDOUT');
  assert.equal(await b.fire('S', 2), 'fallback S 2 EOPENBREAKER');
  const fallbacks = seen.filter((s) => s[0] === 'fallback');
  assert.equal(fallbacks.length, 2);
  assert.equal(fallbacks[0][1], 'fallback T 2 ETIMEDOUT');
  assert.equal(fallbacks[0][2].code, 'ETIMEDOUT');
  assert.equal(b.stats.fallbacks, 2);
  // a fallback that throws: fire rejects with its error
  const c = new CircuitBreaker(act).fallback(() => { throw new Error('no fallback either'); });
  assert.equal((await rejection(c.fire('F'))).message, 'no fallback either');
  // another breaker as the fallback
  const backup = new CircuitBreaker(async (x) => `backup ${x}`);
  const d = new CircuitBreaker(act).fallback(backup);
  assert.equal(await d.fire('F'), 'backup F');
});

test('open(), close(): the events, and open() lasts resetTimeout', async () => {
  const b = new CircuitBreaker(act, { resetTimeout: 40 });
  const seen = record(b);
  b.open();
  b.open(); // already open: nothing
  assert.equal(b.opened, true);
  assert.equal((await rejection(b.fire(1))).code, 'EOPENBREAKER');
  b.close();
  b.close();
  assert.equal(b.closed, true);
  assert.equal(await b.fire(1), 1);
  assert.deepEqual(names(seen), ['open', 'fire', 'reject', 'close', 'fire', 'success']);
  b.open();
  await delay(80);
  assert.equal(b.halfOpen, true);
  assert.equal(await b.fire(2), 2);
  assert.equal(b.closed, true);
});

test('disable() runs the action bare (no breaker, no timeout, no fallback); enable() restores it', async () => {
  const b = new CircuitBreaker(act, { timeout: 10 });
  b.fallback(() => 'fallback');
  b.disable();
  assert.equal(b.enabled, false);
  const seen = record(b);
  assert.equal((await rejection(b.fire('F'))).message, 'boom');
  assert.equal((await rejection(b.fire('F'))).message, 'boom');
  assert.equal(b.closed, true);
  assert.deepEqual(names(seen), ['fire', 'fire']);
  b.enable();
  assert.equal(await b.fire('F'), 'fallback');
  assert.equal(b.stats.failures, 1); // the calls made while disabled were not counted
  assert.equal(b.stats.fires, 3);
  const off = new CircuitBreaker(act, { enabled: false });
  assert.equal(off.enabled, false);
});

test('shutdown(): the shutdown event, then ESHUTDOWN for every fire and no listeners left', async () => {
  const b = new CircuitBreaker(act);
  let shut = 0;
  b.on('shutdown', () => { shut += 1; });
  b.shutdown();
  assert.equal(shut, 1);
  assert.equal(b.isShutdown, true);
  assert.equal(b.listenerCount('shutdown'), 0);
  const e = await rejection(b.fire(1));
  assert.equal(e.code, 'ESHUTDOWN');
  assert.equal(e.message, 'The circuit has been shutdown.');
  assert.ok(CircuitBreaker.isOurError(e));
  assert.equal(b.toJSON().state.shutdown, true);
});

test('cache: the first success per key is kept (cacheHit / cacheMiss), cacheTTL, cacheGetKey, clearCache', async () => {
  let n = 0;
  const b = new CircuitBreaker(async (x) => `${x}:${++n}`, { cache: true, cacheTTL: 60 });
  const seen = record(b);
  assert.equal(await b.fire('a'), 'a:1');
  assert.equal(await b.fire('a'), 'a:1');
  assert.equal(await b.fire('b'), 'b:2');
  assert.deepEqual(names(seen), ['fire', 'cacheMiss', 'success', 'fire', 'cacheHit', 'fire', 'cacheMiss', 'success']);
  assert.equal(b.stats.cacheHits, 1);
  assert.equal(b.stats.cacheMisses, 2);
  await delay(100);
  assert.equal(await b.fire('a'), 'a:3'); // expired
  b.clearCache();
  assert.equal(await b.fire('a'), 'a:4');
  // cacheGetKey decides what is one key
  const k = new CircuitBreaker(async (x, y) => `${x}${y}:${++n}`, { cache: true, cacheGetKey: (x) => x });
  assert.equal(await k.fire('a', 1), 'a1:5');
  assert.equal(await k.fire('a', 2), 'a1:5');
  // failures are not cached
  let m = 0;
  const f = new CircuitBreaker(async () => { m += 1; throw boom(); }, { cache: true, volumeThreshold: 10 });
  await rejection(f.fire());
  await rejection(f.fire());
  assert.equal(m, 2);
});

test('cacheSize: the built-in cache keeps that many keys, the least recently used evicted', async () => {
  let n = 0;
  const b = new CircuitBreaker(async (x) => `${x}:${++n}`, { cache: true, cacheSize: 2 });
  assert.equal(await b.fire('a'), 'a:1');
  assert.equal(await b.fire('b'), 'b:2');
  assert.equal(await b.fire('a'), 'a:1'); // a is now the most recent
  assert.equal(await b.fire('c'), 'c:3'); // evicts b
  assert.equal(await b.fire('a'), 'a:1');
  assert.equal(await b.fire('b'), 'b:4');
  assert.deepEqual([b.stats.cacheHits, b.stats.cacheMisses], [2, 4]);
});

test('cacheTransport: get / set / flush of the caller\'s cache; a transport without them is refused', async () => {
  const store = new Map();
  const cacheTransport = {
    get: (key) => store.get(key),
    set: (key, value, expiresAt) => store.set(key, value) && (store.expiresAt = expiresAt),
    flush: () => store.clear(),
  };
  const b = new CircuitBreaker(async (x) => x * 2, { cache: true, cacheTransport, cacheTTL: 1000 });
  const before = Date.now();
  assert.equal(await b.fire(21), 42);
  assert.ok(store.has('[21]'));
  assert.ok(store.expiresAt >= before + 1000);
  assert.equal(await store.get('[21]'), 42);
  b.clearCache();
  assert.equal(store.size, 0);
  assert.throws(() => new CircuitBreaker(act, { cache: true, cacheTransport: { get() {} } }), { code: 'EINVALIDCONFIG', field: 'cacheTransport' });
});

test('coalesce: calls with one key in flight share one call; coalesceResetOn error', async () => {
  let n = 0;
  const gate = deferred();
  const b = new CircuitBreaker(async (x) => { n += 1; await gate.promise; return `${x}:${n}`; }, { coalesce: true });
  const seen = record(b);
  const p1 = b.fire('a');
  const p2 = b.fire('a');
  gate.resolve();
  assert.deepEqual(await Promise.all([p1, p2]), ['a:1', 'a:1']);
  assert.equal(n, 1);
  assert.deepEqual(names(seen), ['fire', 'coalesceCacheMiss', 'fire', 'coalesceCacheHit', 'success']);
  assert.equal(b.stats.coalesceCacheHits, 1);
  // with coalesceResetOn: ['error'], a failed call is not shared afterwards
  let m = 0;
  const c = new CircuitBreaker(async () => { m += 1; throw boom(); }, { coalesce: true, coalesceResetOn: ['error'], volumeThreshold: 10 });
  await rejection(c.fire('k'));
  await rejection(c.fire('k'));
  assert.equal(m, 2);
  // without it the failed call is shared for coalesceTTL
  let o = 0;
  const d = new CircuitBreaker(async () => { o += 1; throw boom(); }, { coalesce: true, coalesceTTL: 1000, volumeThreshold: 10 });
  await rejection(d.fire('k'));
  await rejection(d.fire('k'));
  assert.equal(o, 1);
});

test('allowWarmUp: no opening during the first rollingCountTimeout ms', async () => {
  const b = new CircuitBreaker(act, { allowWarmUp: true, rollingCountTimeout: 100 });
  assert.equal(b.warmUp, true);
  await run(b, ['F', 'F', 'F']);
  assert.equal(b.closed, true);
  assert.equal(b.stats.failures, 3);
  await until(() => !b.warmUp);
  assert.equal(b.warmUp, false);
  await run(b, ['F']);
  assert.equal(b.opened, true);
});

test('autoRenewAbortController: a fresh controller once halfOpen after a timeout aborted the old one', async () => {
  const b = new CircuitBreaker(act, { autoRenewAbortController: true, timeout: 20, resetTimeout: 40 });
  const first = b.getAbortController();
  assert.ok(first instanceof AbortController);
  await rejection(b.fire('T'));
  assert.equal(first.signal.aborted, true);
  await until(() => b.getAbortController() !== first);
  assert.equal(b.halfOpen, true);
  assert.notEqual(b.getAbortController(), first);
  assert.equal(b.getSignal().aborted, false);
});

test('toJSON().state and `state`: a breaker starts where another was (open, halfOpen, closed, shutdown)', async () => {
  const a = new CircuitBreaker(act, { name: 'svc', resetTimeout: 10000 });
  a.open();
  const json = a.toJSON();
  assert.equal(json.state.name, 'svc');
  assert.deepEqual([json.state.open, json.state.closed, json.state.halfOpen, json.state.enabled], [true, false, false, true]);
  assert.equal(typeof json.state.lastTimerAt, 'number');
  const b = new CircuitBreaker(act, { resetTimeout: 10000, state: json.state });
  assert.equal(b.opened, true);
  assert.equal((await rejection(b.fire(1))).code, 'EOPENBREAKER');
  // open for longer than resetTimeout already: half-open
  const c = new CircuitBreaker(act, { resetTimeout: 10000, state: { ...json.state, lastTimerAt: Date.now() - 20000 } });
  assert.equal(c.halfOpen, true);
  assert.equal(await c.fire(1), 1);
  assert.equal(c.closed, true);
  const h = new CircuitBreaker(act, { state: { closed: false, halfOpen: true } });
  assert.equal(h.halfOpen, true);
  const d = new CircuitBreaker(act, { state: { closed: true, enabled: false } });
  assert.deepEqual([d.closed, d.enabled], [true, false]);
  const s = new CircuitBreaker(act, { state: { shutdown: true } });
  assert.equal(s.isShutdown, true);
});

test('stats, status and newStatus: counts from the native counters, primed counts added', async () => {
  const b = new CircuitBreaker(act, { volumeThreshold: 100 });
  await run(b, ['S', 'S', 'F']);
  const s = b.stats;
  assert.deepEqual(
    [s.fires, s.successes, s.failures, s.rejects, s.timeouts, s.fallbacks],
    [3, 2, 1, 0, 0, 0],
  );
  assert.equal(s.latencyMean, -1);
  assert.deepEqual(b.status.stats, { ...s });
  assert.equal(b.status.window.length, 1);
  const m = b.metrics();
  assert.equal(m.totals.successes, 2);
  assert.equal(m.totals.failures, 1);
  const status = CircuitBreaker.newStatus({ stats: { fires: 10, failures: 4, successes: 6 } });
  const c = new CircuitBreaker(act, { status });
  await run(c, ['S']);
  assert.deepEqual([c.stats.fires, c.stats.successes, c.stats.failures], [11, 7, 4]);
  const d = new CircuitBreaker(act, { status: { fires: 2 } });
  assert.equal(d.stats.fires, 2);
});

test('snapshots: the status emits its stats every bucket; rotateBucketController is accepted', async () => {
  const rotate = new EventEmitter();
  const r = new CircuitBreaker(act, { rotateBucketController: rotate, rollingCountTimeout: 10000 });
  await run(r, ['S']);
  rotate.emit('rotate');
  assert.equal(r.stats.fires, 1);
  // its own timer, one bucket (rollingCountTimeout / rollingCountBuckets) apart
  const t = new CircuitBreaker(act, { rollingCountTimeout: 100, rollingCountBuckets: 4 });
  let n = 0;
  t.status.on('snapshot', () => { n += 1; });
  await until(() => n >= 2);
  assert.ok(n >= 2, `${n} snapshots`);
  t.shutdown();
  const none = new CircuitBreaker(act, { enableSnapshots: false, rollingCountTimeout: 40, rollingCountBuckets: 4 });
  let m = 0;
  none.status.on('snapshot', () => { m += 1; });
  await delay(40);
  assert.equal(m, 0);
});

test('healthCheck: a rejected check emits healthCheckFailed and opens the breaker; `this` is the breaker', async () => {
  const b = new CircuitBreaker(act, { resetTimeout: 10000 });
  const failed = [];
  b.on('healthCheckFailed', (e) => failed.push(e.message));
  let self;
  let n = 0;
  b.healthCheck(async function check() {
    self = this;
    n += 1;
    if (n >= 2) throw new Error('unhealthy');
  }, 20);
  await delay(10);
  assert.equal(self, b);
  assert.equal(b.closed, true);
  await until(() => failed.length > 0);
  assert.deepEqual(failed.slice(0, 1), ['unhealthy']);
  assert.equal(b.opened, true);
  b.shutdown();
  assert.throws(() => b.healthCheck('nope'), { code: 'EINVALIDCONFIG' });
  assert.throws(() => new CircuitBreaker(act).healthCheck(async () => {}, 'often'), { code: 'EINVALIDCONFIG' });
});

test('call(context, ...args): the action runs with `this` = context; fire() with `this` = the action', async () => {
  function whoAmI(x) { return Promise.resolve([this, x]); }
  const b = new CircuitBreaker(whoAmI);
  const ctx = { id: 1 };
  assert.deepEqual(await b.call(ctx, 5), [ctx, 5]);
  const [self] = await b.fire(1);
  assert.equal(self, whoAmI);
  // not a function: fire resolves with it
  assert.equal(await new CircuitBreaker('foo').fire(), 'foo');
  // a synchronous action: its value, or its throw as a failure
  assert.equal(await new CircuitBreaker((x) => x + 1).fire(1), 2);
  const t = new CircuitBreaker(() => { throw boom('sync'); });
  assert.equal((await rejection(t.fire())).message, 'sync');
  assert.equal(t.opened, true);
});

test('group and name options', () => {
  const b = new CircuitBreaker(act, { name: 'users', group: 'backend' });
  assert.equal(b.name, 'users');
  assert.equal(b.group, 'backend');
  assert.equal(b.metrics().name, 'users');
});

test('bad options are refused with EINVALIDCONFIG naming the option (opossum\'s names)', () => {
  const bad = [
    [{ timeout: -1 }, 'timeout'],
    [{ timeout: 'soon' }, 'timeout'],
    [{ resetTimeout: -1 }, 'resetTimeout'],
    [{ errorThresholdPercentage: -5 }, 'errorThresholdPercentage'],
    [{ volumeThreshold: 1.5 }, 'volumeThreshold'],
    [{ rollingCountBuckets: -1 }, 'rollingCountBuckets'],
    [{ rollingCountBuckets: 100000 }, 'rollingCountBuckets'],
    [{ errorFilter: 'yes' }, 'errorFilter'],
    [{ abortController: {} }, 'abortController'],
  ];
  for (const [options, field] of bad) {
    assert.throws(() => new CircuitBreaker(act, options), (e) => e.code === 'EINVALIDCONFIG' && e.field === field, JSON.stringify(options));
  }
  assert.throws(() => new CircuitBreaker(), { code: 'EINVALIDCONFIG', field: 'action' });
  assert.throws(() => new CircuitBreaker(act).fallback(3), { code: 'EINVALIDCONFIG' });
  // accepted and ignored, as by opossum (unknown keys too)
  void new CircuitBreaker(act, { maxFailures: 3, rollingPercentilesEnabled: false, cacheSize: 10, coalesceSize: 10, fallback: () => 1 });
  // timeout 0 is no timeout, kept as given; resetTimeout 0 is half-open at once
  const z = new CircuitBreaker(act, { timeout: 0, resetTimeout: 0 });
  assert.equal(z.options.timeout, 0);
  z.open();
  assert.equal(z.halfOpen, true);
});

test('same outcomes as opossum itself, call by call (errorThresholdPercentage, volumeThreshold)', { skip: !hasOpossum() && 'benches/node/node_modules/opossum not installed (npm ci in benches/node)' }, async () => {
  const Opossum = require('../../benches/node/node_modules/opossum');
  // A seeded generator (xorshift32), so a failure can be replayed.
  let seed = 0x2545f491;
  const rand = () => {
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    return (seed >>> 0) / 2 ** 32;
  };
  let diverged = 0;
  let opened = 0;
  for (let round = 0; round < 60; round++) {
    const options = {
      errorThresholdPercentage: [0, 10, 25, 33, 50, 60, 75, 99][Math.floor(rand() * 8)],
      volumeThreshold: Math.floor(rand() * 6),
      timeout: false,
    };
    const failRate = rand();
    const ours = new CircuitBreaker(act, options);
    const theirs = new Opossum(act, { ...options });
    const outcomes = Array.from({ length: 12 }, () => (rand() < failRate ? 'F' : 'S'));
    for (const [i, o] of outcomes.entries()) {
      const a = await ours.fire(o).then(() => 'ok', (e) => e.code || 'error');
      const b = await theirs.fire(o).then(() => 'ok', (e) => e.code || 'error');
      const what = `${JSON.stringify(options)} ${outcomes.join('')} call ${i}`;
      assert.equal(a, b, what);
      if (ours.opened && !theirs.opened) {
        // The one documented difference: the core checks the rate after every
        // recorded call, opossum after failures only. So a success that brings
        // the window to volumeThreshold, with the rate already above the
        // threshold, opens here; opossum waits for the next failure.
        const failures = outcomes.slice(0, i + 1).filter((x) => x === 'F').length;
        assert.equal(o, 'S', what);
        assert.equal(i + 1, options.volumeThreshold, what);
        assert.ok(failures * 100 > options.errorThresholdPercentage * (i + 1), what);
        diverged += 1;
        break;
      }
      assert.equal(ours.opened, theirs.opened, what);
      if (theirs.opened) { // opossum counts its rejections as fires; seawall's window does not
        opened += 1;
        break;
      }
    }
    theirs.shutdown();
  }
  assert.ok(opened > 20 && diverged < 20, `${opened} rounds opened, ${diverged} diverged as documented`);
});

function hasOpossum() {
  try {
    require.resolve('../../benches/node/node_modules/opossum');
    return true;
  } catch {
    return false;
  }
}

test('shared: one breaker for every breaker object (and process) with the region name', { skip: !seawall.sharedSupported() && 'no native 128-bit atomics' }, async (t) => {
  const name = `opossum-shared-${process.pid}`;
  seawall.CircuitBreaker.unlinkShared(name);
  t.after(() => seawall.CircuitBreaker.unlinkShared(name));
  const a = new CircuitBreaker(act, { shared: name });
  const b = new CircuitBreaker(act, { shared: name });
  assert.equal(a.isShared, true);
  await run(a, ['F']);
  assert.equal(a.opened, true);
  const e = await rejection(b.fire(1));
  assert.equal(e.code, 'EOPENBREAKER');
  assert.equal(b.opened, true);
});

test('Prometheus and OpenTelemetry read the native counters through metrics()', async () => {
  const b = new CircuitBreaker(act, { name: 'opossum-prom', volumeThreshold: 5 });
  await run(b, ['S', 'S', 'F']);
  const registry = new client.Registry();
  seawall.registerMetrics(registry, { breakers: [b] });
  const text = await registry.metrics();
  assert.match(text, /seawall_breaker_calls_total\{breaker="opossum-prom",outcome="success"\} 2/);
  assert.match(text, /seawall_breaker_calls_total\{breaker="opossum-prom",outcome="failure"\} 1/);
  assert.match(text, /seawall_breaker_state\{breaker="opossum-prom",state="closed"\} 1/);
  // OpenTelemetry: the same counts, collected by an in-memory reader
  const { MeterProvider, PeriodicExportingMetricReader, InMemoryMetricExporter, AggregationTemporality } = require('@opentelemetry/sdk-metrics');
  const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 });
  seawall.instrumentOtel({ meterProvider: new MeterProvider({ readers: [reader] }), breakers: [b] });
  await reader.forceFlush();
  const calls = {};
  for (const rm of exporter.getMetrics()) {
    for (const sm of rm.scopeMetrics) {
      for (const m of sm.metrics) {
        if (m.descriptor.name !== 'seawall.circuit_breaker.calls') continue;
        for (const pt of m.dataPoints) calls[pt.attributes['seawall.outcome']] = pt.value;
      }
    }
  }
  assert.equal(calls.success, 2);
  assert.equal(calls.failure, 1);
  await reader.shutdown();
});

test('ESM: import CircuitBreaker from \'seawall/opossum\' is the same class', async () => {
  const m = await import('seawall/opossum');
  assert.equal(m.default, CircuitBreaker);
});

test('listeners that throw change nothing (seawall\'s rule): the call goes on, the error is a warning', async () => {
  const b = new CircuitBreaker(act);
  const warnings = [];
  const onWarning = (w) => warnings.push(w.name);
  process.on('warning', onWarning);
  b.on('success', () => { throw new Error('listener bug'); });
  assert.equal(await b.fire(7), 7);
  await delay(10);
  process.off('warning', onWarning);
  assert.deepEqual(warnings, ['SeawallListenerWarning']);
});

test('no timer per call: a thousand calls with the default 10 s timeout start one ticker', async () => {
  const real = { setTimeout: globalThis.setTimeout, setInterval: globalThis.setInterval };
  let timers = 0;
  globalThis.setTimeout = (...a) => { timers += 1; return real.setTimeout(...a); };
  globalThis.setInterval = (...a) => { timers += 1; return real.setInterval(...a); };
  try {
    const b = new CircuitBreaker(async (x) => x);
    for (let i = 0; i < 1000; i++) assert.equal(await b.fire(i), i);
    assert.equal(timers, 1);
  } finally {
    Object.assign(globalThis, real);
  }
});

test('the ticker holds the process open while a call is in flight, and only then', () => {
  const { spawnSync } = require('node:child_process');
  const run = (code) => spawnSync(process.execPath, ['-e', code], { cwd: __dirname, encoding: 'utf8', timeout: 8000 });
  // Done with its calls: exits at once, not 10 s later.
  const idle = run("const C = require('seawall/opossum'); new C(async () => 1).fire().then((v) => console.log('done', v));");
  assert.equal(idle.signal, null, 'still running after 8 s');
  assert.equal(idle.stdout.trim(), 'done 1');
  // A call that never settles on its own: the timeout still comes.
  const pending = run("const C = require('seawall/opossum'); new C(() => new Promise(() => {}), { timeout: 50 }).fire().catch((e) => console.log(e.code));");
  assert.equal(pending.stdout.trim(), 'ETIMEDOUT');
});

test('opossum\'s TypeErrors stay TypeErrors (with its messages), carrying code EINVALIDCONFIG and the field', () => {
  const cases = [
    [() => new CircuitBreaker(), 'action', 'No action provided. Cannot construct a CircuitBreaker without an invocable action.'],
    [() => new CircuitBreaker(act, { cache: true, cacheTransport: {} }), 'cacheTransport',
      'options.cacheTransport should be an object with `get`, `set` and `flush` methods'],
    [() => new CircuitBreaker(act, { abortController: {} }), 'abortController', 'AbortController does not contain `abort()` method'],
    [() => new CircuitBreaker(act).healthCheck(42), 'healthCheck', 'Health check function must be a function'],
    [() => new CircuitBreaker(act).healthCheck(async () => {}, 'often'), 'interval', 'Health check interval must be a number'],
  ];
  for (const [fn, field, message] of cases) {
    assert.throws(fn, (e) => e instanceof TypeError && e.message === message && e.code === 'EINVALIDCONFIG' && e.field === field, field);
  }
});

test('0 for rollingCountTimeout / rollingCountBuckets is opossum\'s default window, the 0 kept in options', async () => {
  const b = new CircuitBreaker(act, { rollingCountTimeout: 0, rollingCountBuckets: 0, volumeThreshold: 2 });
  assert.deepEqual([b.options.rollingCountTimeout, b.options.rollingCountBuckets], [0, 0]);
  await run(b, ['F']);
  await delay(20);
  await run(b, ['F']); // still in the (10 s) window: 2 of 2
  assert.equal(b.opened, true);
});

test('semaphore.count, status.window[0].isCircuitBreakerOpen, rotateBucketController listened to while enabled', async () => {
  const gate = deferred();
  const b = new CircuitBreaker(() => gate.promise, { capacity: 3 });
  assert.equal(b.semaphore.count, 3);
  const held = b.fire();
  assert.equal(b.semaphore.count, 2);
  gate.resolve(1);
  await held;
  assert.equal(b.semaphore.count, 3);
  assert.equal(b.status.window[0].isCircuitBreakerOpen, false);
  b.open();
  assert.equal(b.status.window[0].isCircuitBreakerOpen, true);
  const rotate = new EventEmitter();
  const r = new CircuitBreaker(act, { rotateBucketController: rotate });
  assert.equal(rotate.listenerCount('rotate'), 1);
  r.enable();
  assert.equal(rotate.listenerCount('rotate'), 1);
  r.disable();
  assert.equal(rotate.listenerCount('rotate'), 0);
  r.enable();
  assert.equal(rotate.listenerCount('rotate'), 1);
  r.shutdown();
  assert.equal(rotate.listenerCount('rotate'), 0);
});
