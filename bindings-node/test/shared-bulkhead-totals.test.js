'use strict';
// DESIGN §8, "One set of totals": a shared bulkhead's lifetime figures live in
// its region, so every handle (every worker process) reports the same ones.
// Expected figures are worked out by hand from the sequence of calls.
const test = require('node:test');
const assert = require('node:assert/strict');
const { Bulkhead, sharedSupported } = require('..');
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
