'use strict';
// DESIGN §8, "One set of totals": a shared bulkhead's and rate limiter's lifetime figures live in
// its region, so every handle (every worker process) reports the same ones.
// Expected figures are worked out by hand from the sequence of calls.
const test = require('node:test');
const assert = require('node:assert/strict');
const { Bulkhead, RateLimiter, sharedSupported } = require('..');
const { deferred, rejection } = require('./helpers');

const skip = !sharedSupported() && 'no native 128-bit atomics';

test('two handles of one shared bulkhead report the same admitted and rejected figures', { skip }, async (t) => {
  const name = `node-bulkhead-totals-${process.pid}-${Date.now()}`;
  Bulkhead.unlinkShared(name);
  t.after(() => Bulkhead.unlinkShared(name));
  const a = new Bulkhead({ shared: name, maxConcurrent: 2, maxQueue: 1, name: 'a' });
  const b = new Bulkhead({ shared: name, maxConcurrent: 2, maxQueue: 1, queueTimeoutMs: 20, name: 'b' });
  // a holds both permits (admitted 2); b waits in the one place, and a second
  // call of b finds the queue full (full 1); b's waiter times out (queueTimeout 1).
  const hold = deferred();
  const held = [a.execute(() => hold.promise), a.execute(() => hold.promise)];
  const waiting = b.execute(() => 'never');
  const full = await rejection(b.execute(() => 'never'));
  assert.equal(full.code, 'EBULKHEADFULL');
  const timedOut = await rejection(waiting);
  assert.equal(timedOut.reason, 'queueTimeout');
  hold.resolve();
  await Promise.all(held);
  // Once free, b is admitted (admitted 3).
  assert.equal(await b.execute(() => 'ran'), 'ran');
  const expected = { admitted: 3, rejected: { shed: 0, full: 1, queueTimeout: 1, aborted: 0 } };
  for (const h of [a, b]) {
    const m = h.metrics();
    assert.deepEqual({ admitted: m.admitted, rejected: m.rejected }, expected, h.name);
  }
});

test('two handles of one shared rate limiter report the same takes and cells', { skip }, (t) => {
  const name = `node-limiter-totals-${process.pid}-${Date.now()}`;
  RateLimiter.unlinkShared(name);
  t.after(() => RateLimiter.unlinkShared(name));
  // A burst of 3, refilled one cell per 10 s: a takes 2 cells, b 1, then both
  // are refused (admitted 2 takes, 3 cells; rejected 2).
  const opts = { shared: name, rate: 1, perMs: 10_000, burst: 3 };
  const a = new RateLimiter({ ...opts, name: 'a' });
  const b = new RateLimiter({ ...opts, name: 'b' });
  assert.equal(a.tryAcquire(2), true);
  assert.equal(b.tryAcquire(1), true);
  assert.equal(a.tryAcquire(1), false);
  assert.equal(b.tryAcquire(1), false);
  for (const h of [a, b]) {
    const { admitted, rejected, cells } = h.metrics();
    assert.deepEqual({ admitted, rejected, cells }, { admitted: 2, rejected: 2, cells: 3 });
  }
});
