'use strict';
// A local bulkhead keeps the permits its callers gave back while nobody waits,
// for the next calls: these check that the semaphore still decides and
// reports as if it had not (figures worked by hand from DESIGN §5).
const test = require('node:test');
const assert = require('node:assert/strict');
const { Bulkhead } = require('..');
const { deferred } = require('./helpers');

/** Start `n` calls of `priority` that run until `gate` resolves. */
function hold(b, n, priority, gate) {
  return Array.from({ length: n }, () => b.execute(() => gate.promise, { priority }));
}

/** Let every call started so far reach its `fn`. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

test('a priority at its limit is shed with the occupancy the semaphore counts, permits kept or not', async () => {
  // maxConcurrent 4, low share 50 %: low's limit is 2. Three calls done leave
  // permits kept; two low calls held; a third low call is shed with 2 active.
  const b = new Bulkhead({ maxConcurrent: 4, maxQueue: 4, shares: { low: 50 } });
  const done = deferred();
  done.resolve();
  await Promise.all(hold(b, 3, 'normal', done));
  const gate = deferred();
  const held = hold(b, 2, 'low', gate);
  await settle();
  await assert.rejects(b.execute(async () => 1, { priority: 'low' }), (e) => {
    assert.deepEqual([e.code, e.reason, e.active, e.queued], ['EBULKHEADFULL', 'shed', 2, 0]);
    return true;
  });
  // A normal call still fits: 3 of 4.
  assert.equal(await b.execute(async () => 'normal'), 'normal');
  gate.resolve();
  await Promise.all(held);
});

test('metrics count the callers holding permits, not the permits kept', async () => {
  const b = new Bulkhead({ maxConcurrent: 3 });
  for (let i = 0; i < 5; i++) await b.execute(async () => i);
  assert.equal(b.metrics().active, 0);
  const gate = deferred();
  const held = hold(b, 2, 'normal', gate);
  await settle();
  assert.equal(b.metrics().active, 2);
  gate.resolve();
  await Promise.all(held);
  const m = b.metrics();
  assert.deepEqual([m.active, m.queued, m.admitted], [0, 0, 7]);
});

test('a full bulkhead queues and refuses exactly with permits kept before', async () => {
  // maxConcurrent 2, maxQueue 1: after sequential calls, 2 held, one queued,
  // the next refused as full (2 active, 1 queued); a release serves the queued one.
  const b = new Bulkhead({ maxConcurrent: 2, maxQueue: 1 });
  for (let i = 0; i < 3; i++) await b.execute(async () => i);
  const gate = deferred();
  const held = hold(b, 2, 'normal', gate);
  await settle();
  const queued = b.execute(async () => 'served');
  await settle();
  await assert.rejects(b.execute(async () => 1), (e) => {
    assert.deepEqual([e.reason, e.active, e.queued], ['full', 2, 1]);
    return true;
  });
  gate.resolve();
  await Promise.all(held);
  assert.equal(await queued, 'served');
  assert.equal(b.metrics().active, 0);
});
