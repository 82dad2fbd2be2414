'use strict';
// Delays past Node's setTimeout limit (2^31 − 1 ms, about 24.8 days): Node sets
// such a timer to 1 ms. These tests run on node:test's mock timers, wrapped to
// clamp exactly as Node does (lib/internal/timers.js: a delay that is not
// within 1 ..= 2^31 − 1 becomes 1), so a package that hands Node a 30-day delay
// fails them as it would in production, and no test waits for real.
const test = require('node:test');
const assert = require('node:assert/strict');
const { setImmediate: flush } = require('node:timers/promises');
const { timeout, retry, Bulkhead } = require('..');
const { LongTimer, MAX_TIMER_MS } = require('../lib/timers');
const { rejection } = require('./helpers');

const DAY = 24 * 3600 * 1000;
const NODE_TIMEOUT_MAX = 2147483647; // 2^31 - 1, Node's TIMEOUT_MAX

/**
 * Mock setTimeout (only), clamped like Node's. node:test's tick() runs every
 * callback due within it at the tick's end time; a real event loop runs each at
 * its own time, so `advance` ticks from one due time to the next. Returns the
 * delays asked for.
 */
function nodeLikeTimers(t) {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const mocked = globalThis.setTimeout;
  const asked = [];
  const clock = { now: 0, due: [] };
  globalThis.setTimeout = (fn, ms, ...args) => {
    asked.push(ms);
    const after = ms >= 1 && ms <= NODE_TIMEOUT_MAX ? ms : 1;
    clock.due.push(clock.now + after);
    return mocked(fn, after, ...args);
  };
  clocks.set(t, clock);
  return asked;
}
const clocks = new WeakMap();

/** Advance the mock clock by `ms`, each timer firing at its due time; promise reactions run in between. */
async function advance(t, ms) {
  const clock = clocks.get(t);
  const target = clock.now + ms;
  for (;;) {
    for (let i = 0; i < 5; i++) await flush();
    const next = Math.min(...clock.due.filter((d) => d > clock.now && d <= target));
    if (next === Infinity) break;
    const by = next - clock.now;
    clock.now = next; // before the tick: the callbacks run at their due time
    t.mock.timers.tick(by);
  }
  const by = target - clock.now;
  clock.now = target;
  if (by > 0) t.mock.timers.tick(by);
  for (let i = 0; i < 5; i++) await flush();
}

/** A promise's state without waiting: 'pending', or the settled value / error. */
function track(p) {
  const s = { state: 'pending', value: undefined };
  p.then((v) => { s.state = 'resolved'; s.value = v; }, (e) => { s.state = 'rejected'; s.value = e; });
  return s;
}

test('MAX_TIMER_MS is Node\'s setTimeout limit, 2^31 - 1 ms', () => {
  assert.equal(MAX_TIMER_MS, 2147483647);
});

test('LongTimer: 30 days fires at 30 days, not after 1 ms and not one ms early', async (t) => {
  const asked = nodeLikeTimers(t);
  let fired = 0;
  new LongTimer(() => { fired += 1; }, 30 * DAY); // eslint-disable-line no-new
  await advance(t, 1);
  assert.equal(fired, 0);
  await advance(t, NODE_TIMEOUT_MAX - 1); // the end of the first step
  assert.equal(fired, 0);
  await advance(t, 30 * DAY - NODE_TIMEOUT_MAX - 1); // 1 ms before 30 days
  assert.equal(fired, 0);
  await advance(t, 1);
  assert.equal(fired, 1);
  await advance(t, 100 * DAY);
  assert.equal(fired, 1);
  // 2 592 000 000 = 2 147 483 647 + 444 516 353
  assert.deepEqual(asked, [2147483647, 444516353]);
});

test('LongTimer: 100 days is five steps; a short delay is one plain setTimeout', async (t) => {
  const asked = nodeLikeTimers(t);
  let at = -1;
  new LongTimer(() => { at = clocks.get(t).now; }, 100 * DAY); // eslint-disable-line no-new
  // 8 640 000 000 = 4 · 2 147 483 647 + 50 065 412
  await advance(t, 8640000000 - 1);
  assert.equal(at, -1, 'fired early');
  await advance(t, 1);
  assert.equal(at, 8640000000);
  assert.deepEqual(asked, [2147483647, 2147483647, 2147483647, 2147483647, 50065412]);
  let short = 0;
  new LongTimer(() => { short += 1; }, 250); // eslint-disable-line no-new
  await advance(t, 249);
  assert.equal(short, 0);
  await advance(t, 1);
  assert.equal(short, 1);
  assert.equal(asked.at(-1), 250);
});

test('LongTimer: clear() in the first step or a later one stops it for good; Infinity sets no timer', async (t) => {
  const asked = nodeLikeTimers(t);
  let fired = 0;
  const a = new LongTimer(() => { fired += 1; }, 60 * DAY);
  await advance(t, DAY);
  a.clear();
  const b = new LongTimer(() => { fired += 1; }, 60 * DAY);
  await advance(t, NODE_TIMEOUT_MAX + DAY); // b is in its second step
  assert.equal(asked.length, 3);
  b.clear();
  b.clear();
  assert.equal(b.hasRef(), false);
  const never = new LongTimer(() => { fired += 1; }, Infinity);
  assert.equal(asked.length, 3, 'Infinity must not set a timer');
  assert.equal(never.hasRef(), false);
  await advance(t, 1000 * DAY);
  assert.equal(fired, 0);
});

test('LongTimer: unref() applies to the current step and to every later one', (t) => {
  // A hand-made setTimeout, to see each step's ref state and fire steps at will.
  const steps = [];
  t.mock.method(globalThis, 'setTimeout', (fn, ms) => {
    const s = { fn, ms, refed: true, unref() { this.refed = false; return this; }, ref() { this.refed = true; return this; } };
    steps.push(s);
    return s;
  });
  t.mock.method(globalThis, 'clearTimeout', () => {});
  let fired = 0;
  const timer = new LongTimer(() => { fired += 1; }, 30 * DAY);
  assert.equal(timer.hasRef(), true);
  assert.equal(timer.unref(), timer);
  assert.deepEqual(steps.map((s) => [s.ms, s.refed]), [[2147483647, false]]);
  assert.equal(timer.hasRef(), false);
  steps[0].fn();
  assert.deepEqual(steps.map((s) => [s.ms, s.refed]), [[2147483647, false], [444516353, false]]);
  timer.ref();
  assert.deepEqual(steps.map((s) => [s.ms, s.refed]), [[2147483647, false], [444516353, true]]);
  assert.equal(timer.hasRef(), true);
  assert.equal(fired, 0);
  steps[1].fn();
  assert.equal(fired, 1);
  assert.equal(timer.hasRef(), false);
});

test('timeout(30 days) does not fire after 1 ms; it fires at 30 days with ETIMEDOUT', async (t) => {
  nodeLikeTimers(t);
  let signal;
  const call = track(timeout(30 * DAY).execute(({ signal: s }) => { signal = s; return new Promise(() => {}); }));
  await advance(t, 1);
  assert.equal(call.state, 'pending');
  await advance(t, 30 * DAY - 2);
  assert.equal(call.state, 'pending');
  assert.equal(signal.aborted, false);
  await advance(t, 1);
  assert.equal(call.state, 'rejected');
  assert.equal(call.value.code, 'ETIMEDOUT');
  assert.equal(call.value.timeoutMs, 2592000000);
  assert.equal(signal.aborted, true);
});

test('timeout(Infinity): no timer at all; the call runs to its end and the caller\'s signal still aborts it', async (t) => {
  const asked = nodeLikeTimers(t);
  const forever = timeout(Infinity);
  assert.equal(forever.ms, Infinity);
  let finish;
  const call = track(forever.execute(() => new Promise((r) => { finish = r; })));
  await advance(t, 1000 * DAY);
  assert.equal(call.state, 'pending');
  finish('late but fine');
  await flush();
  assert.deepEqual(call, { state: 'resolved', value: 'late but fine' });
  const ac = new AbortController();
  const aborted = forever.execute(() => new Promise(() => {}), { signal: ac.signal });
  ac.abort();
  assert.equal((await rejection(aborted)).code, 'EABORTED');
  assert.deepEqual(asked, []);
  for (const bad of [0, -1, NaN, -Infinity, '5']) {
    assert.throws(() => timeout(bad), { code: 'EINVALIDCONFIG', field: 'timeoutMs' }, String(bad));
  }
});

test('retry: a 30-day Retry-After waits 30 days (not 1 ms) for the next attempt', async (t) => {
  nodeLikeTimers(t);
  let n = 0;
  const run = track(retry(async () => {
    n += 1;
    if (n === 2) return 'second attempt';
    const e = new Error('503');
    e.retryAfterMs = 30 * DAY;
    throw e;
  }, { attempts: 3, backoff: { baseMs: 100, jitter: 'none' } }));
  await advance(t, 0);
  assert.equal(n, 1);
  await advance(t, 1);
  assert.equal(n, 1);
  // delay = max(backoff 100 ms, Retry-After 30 days): the server's word wins
  await advance(t, 30 * DAY - 2);
  assert.equal(n, 1);
  await advance(t, 1);
  assert.equal(n, 2);
  assert.deepEqual(run, { state: 'resolved', value: 'second attempt' });
});

test('retry: backoff of 30 then 60 days (base 30 d, x2, cap 60 d, no jitter); an abort ends the sleep', async (t) => {
  nodeLikeTimers(t);
  const times = [];
  const ac = new AbortController();
  const run = track(retry(async () => { times.push(clocks.get(t).now); throw new Error('x'); }, {
    attempts: 4, backoff: { baseMs: 30 * DAY, multiplier: 2, maxMs: 60 * DAY, jitter: 'none' }, signal: ac.signal,
  }));
  const step = (ms) => advance(t, ms);
  await step(0);
  await step(1);
  await step(30 * DAY - 2);
  assert.deepEqual(times, [0]);
  await step(1); // 30 days: attempt 2
  assert.deepEqual(times, [0, 30 * DAY]);
  await step(60 * DAY - 1);
  assert.deepEqual(times, [0, 30 * DAY]);
  await step(1); // 90 days: attempt 3
  assert.deepEqual(times, [0, 30 * DAY, 90 * DAY]);
  await step(DAY);
  ac.abort();
  await flush();
  assert.equal(run.state, 'rejected');
  assert.equal(run.value.code, 'EABORTED');
  assert.deepEqual(times, [0, 30 * DAY, 90 * DAY]);
});

test('bulkhead: a 30-day queueTimeoutMs waits 30 days; Infinity waits as long as it takes', async (t) => {
  const asked = nodeLikeTimers(t);
  const b = new Bulkhead({ maxConcurrent: 1, maxQueue: 2, queueTimeoutMs: 30 * DAY });
  let release;
  const holder = b.execute(() => new Promise((r) => { release = r; }));
  const waiter = track(b.execute(async () => 'got it'));
  await advance(t, 1);
  assert.equal(waiter.state, 'pending');
  await advance(t, 30 * DAY - 2);
  assert.equal(waiter.state, 'pending');
  await advance(t, 1);
  assert.equal(waiter.state, 'rejected');
  assert.equal(waiter.value.code, 'EBULKHEADFULL');
  assert.equal(waiter.value.reason, 'queueTimeout');
  assert.equal(b.metrics().queued, 0);

  const before = asked.length;
  const patient = new Bulkhead({ maxConcurrent: 1, maxQueue: 2, queueTimeoutMs: Infinity });
  let release2;
  const holder2 = patient.execute(() => new Promise((r) => { release2 = r; }));
  const waiter2 = track(patient.execute(async () => 'served'));
  await advance(t, 1000 * DAY);
  assert.equal(waiter2.state, 'pending');
  assert.equal(asked.length, before, 'queueTimeoutMs: Infinity must not set a timer');
  release2('done');
  await holder2;
  await flush();
  assert.deepEqual(waiter2, { state: 'resolved', value: 'served' });
  release('done');
  await holder;
  for (const bad of [0, -5, NaN, -Infinity, '100']) {
    assert.throws(() => new Bulkhead({ queueTimeoutMs: bad }), { code: 'EINVALIDCONFIG', field: 'queueTimeoutMs' }, String(bad));
  }
});
