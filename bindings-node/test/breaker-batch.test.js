'use strict';
// A local breaker holds successes back while its window has no failure and
// records them in one crossing: these check that nothing outside the breaker
// object can tell (figures worked by hand from DESIGN §3's rules).
const test = require('node:test');
const assert = require('node:assert/strict');
const { CircuitBreaker, isSeawallError } = require('..');
const { binding } = require('../lib/native');

const ok = async () => 'ok';
const boom = async () => {
  throw new Error('boom');
};

/** What the native breaker itself holds, bypassing the JS object. */
const nativeTotals = (b) => binding.breakerMetrics(b._h, undefined);

test('successes held back are in the native breaker by the end of the job that settled them', async () => {
  const b = new CircuitBreaker();
  for (let i = 0; i < 7; i++) await b.execute(ok);
  await new Promise((resolve) => setImmediate(resolve));
  const m = nativeTotals(b);
  assert.equal(m.totalSuccesses, 7);
  assert.equal(m.calls, 7);
});

test('more successes than one batch holds are all counted', async () => {
  const b = new CircuitBreaker({ window: { kind: 'count', size: 100 } });
  for (let i = 0; i < 10_000; i++) await b.execute(ok);
  const m = b.metrics();
  assert.equal(m.totals.successes, 10_000);
  assert.equal(m.totals.admitted, 10_000);
  assert.equal(m.window.calls, 100);
});

test('a success that opens the breaker is recorded at once: the next call is refused', async () => {
  // Count window 4, minimum 4, threshold 50 %: F F F, then S makes 4 calls at
  // 75 % failures, which opens; the call after it must be refused without any
  // reading of the breaker in between.
  const b = new CircuitBreaker({ window: { kind: 'count', size: 4 }, minimumCalls: 4, failureRateThreshold: 50, consecutiveFailures: null });
  for (let i = 0; i < 3; i++) await b.execute(boom).catch(() => {});
  await b.execute(ok);
  await assert.rejects(b.execute(ok), (e) => isSeawallError(e, 'ECIRCUITOPEN'));
});

test('successes held back are recorded in their epoch, before a state change', async () => {
  // 3 successes then forceOpen: recorded after it they would be stale.
  const b = new CircuitBreaker();
  for (let i = 0; i < 3; i++) await b.execute(ok);
  b.forceOpen();
  const t = b.metrics().totals;
  assert.equal(t.successes, 3);
  assert.equal(t.stale, 0);
});

test('successes held back are recorded before the failure that follows them', async () => {
  // Count window 4, minimum 4, threshold 50 %, no consecutive rule: after
  // S S S S F the window holds its last 4 calls, 1 failure, 25 %: closed (the
  // failure recorded alone would leave 1 call); one more F makes 50 %: open.
  const b = new CircuitBreaker({ window: { kind: 'count', size: 4 }, minimumCalls: 4, failureRateThreshold: 50, consecutiveFailures: null });
  for (let i = 0; i < 4; i++) await b.execute(ok);
  await b.execute(boom).catch(() => {});
  const m = nativeTotals(b);
  assert.deepEqual([m.state, m.calls, m.failures, m.totalSuccesses], ['closed', 4, 1, 4]);
  await b.execute(boom).catch(() => {});
  assert.equal(nativeTotals(b).state, 'open');
});

test('a slow-call rule turns batching off: every success carries its duration', async () => {
  // Count window 2, minimum 2, slow ≥ 100 % of calls slower than 5 ms: two slow
  // successes open it (a batched success would be recorded with no duration).
  const b = new CircuitBreaker({
    window: { kind: 'count', size: 2 }, minimumCalls: 2, slowCallDurationMs: 5, slowCallRateThreshold: 100, failureRateThreshold: null,
  });
  const slow = () => new Promise((resolve) => setTimeout(resolve, 15));
  await b.execute(slow);
  await b.execute(slow);
  assert.equal(nativeTotals(b).state, 'open');
});

test('seawall/opossum holds its successes back the same way: all counted, and judged before the failure after them', async () => {
  // opossum's defaults: 50 % of the calls in the rolling window, no volume
  // threshold. S S S F is 25 %: closed; recorded without the successes before
  // it the failure would be 100 %, and open the breaker.
  const Opossum = require('seawall/opossum');
  const b = new Opossum(async (x) => {
    if (x === 'F') throw new Error('boom');
    return x;
  });
  for (let i = 0; i < 3; i++) assert.equal(await b.fire(i), i);
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(nativeTotals(b._breaker).totalSuccesses, 3);
  await assert.rejects(b.fire('F'), /boom/);
  const m = nativeTotals(b._breaker);
  assert.deepEqual([m.state, m.calls, m.failures, m.totalSuccesses], ['closed', 4, 1, 3]);
  assert.equal(b.opened, false);
});
