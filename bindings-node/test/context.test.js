'use strict';
// The ambient call context: a signal and deadline every policy inside
// withCallContext takes when its own options leave them out.
const test = require('node:test');
const assert = require('node:assert/strict');
const { withCallContext, callContext, timeout, Deadline, Bulkhead, chaos, isSeawallError } = require('..');
const { deadlineReason } = require('../lib/errors');
const { rejection, delay } = require('./helpers');

const untilAborted = ({ signal }) => new Promise((resolve, reject) => signal.addEventListener('abort', () => reject(signal.reason)));

test('outside any context there is none; inside, it follows awaits and timers', async () => {
  assert.equal(callContext(), undefined);
  const deadline = new Deadline(10000);
  await withCallContext({ deadline }, async () => {
    await delay(5);
    await new Promise((resolve) => setTimeout(resolve, 1));
    assert.equal(callContext().deadline, deadline);
    assert.equal(callContext().signal, undefined);
  });
  assert.equal(callContext(), undefined);
});

test('a policy inside takes the context\'s deadline; its own option wins', async () => {
  const t0 = performance.now();
  const e = await withCallContext({ deadline: new Deadline(40) }, () => rejection(timeout(60000).execute(untilAborted)));
  assert.equal(e.code, 'ETIMEDOUT');
  assert.match(e.message, /deadline exceeded/);
  assert.ok(performance.now() - t0 < 5000);
  // An explicit deadline (longer) replaces the context's (shorter).
  const own = new Deadline(60000);
  let seen;
  await withCallContext({ deadline: new Deadline(1) }, () => timeout(60000).execute(async (ctx) => { seen = ctx.deadline; }, { deadline: own }));
  assert.equal(seen, own);
});

test('a wait on the context\'s signal aborted by its deadline rejects with that ETIMEDOUT; another abort is EABORTED', async () => {
  const bulkhead = new Bulkhead({ maxConcurrent: 1, maxQueue: 1 });
  let release;
  const held = bulkhead.execute(() => new Promise((r) => { release = r; }));
  const ac = new AbortController();
  setTimeout(() => ac.abort(deadlineReason('request deadline exceeded (20 ms)')), 20);
  const e = await withCallContext({ signal: ac.signal }, () => rejection(bulkhead.execute(async () => 'late')));
  assert.equal(e.code, 'ETIMEDOUT');
  // Chaos's injected hang ends the same way.
  chaos('ctx-hang', { enabled: true, hang: true });
  const h = await withCallContext({ signal: ac.signal }, () => rejection(chaos('ctx-hang').execute(async () => 1)));
  assert.equal(h.code, 'ETIMEDOUT');
  chaos('ctx-hang').set({ enabled: false });
  const other = new AbortController();
  setTimeout(() => other.abort(new Error('client left')), 5);
  const a = await withCallContext({ signal: other.signal }, () => rejection(bulkhead.execute(async () => 'late')));
  assert.equal(a.code, 'EABORTED');
  release();
  await held;
  assert.equal(bulkhead.metrics().active, 0);
});

test('a bad context is EINVALIDCONFIG naming the field', () => {
  assert.throws(() => withCallContext(null, () => 1), (e) => isSeawallError(e, 'EINVALIDCONFIG') && e.field === 'context');
  assert.throws(() => withCallContext({ deadline: 5 }, () => 1), (e) => e.field === 'deadline');
  assert.throws(() => withCallContext({ signal: {} }, () => 1), (e) => e.field === 'signal');
  assert.throws(() => withCallContext({}, 'f'), (e) => e.field === 'fn');
});
