'use strict';
// Numbers given to methods (not options) are checked at the JS boundary like
// options are: NaN, negatives, fractions where a whole number is meant, strings
// and null throw EINVALIDCONFIG naming the argument, and change nothing; before,
// they reached the native layer, which read NaN and negatives as 0 and turned
// strings into napi's own NumberExpected errors.
const test = require('node:test');
const assert = require('node:assert/strict');
const { Health, Backoff, RetryBudget, BreakerCore, SemaphoreCore, Deadline, Bulkhead, isSeawallError } = require('..');

/** `f` throws a SeawallError EINVALIDCONFIG whose `field` is `field`. */
function refuses(f, field, label) {
  assert.throws(f, (e) => {
    assert.ok(isSeawallError(e, 'EINVALIDCONFIG'), `${label}: ${e && e.code} ${e && e.message}`);
    assert.equal(e.field, field, label);
    return true;
  }, label);
}

const NOT_NUMBERS = [NaN, '3', null, true, {}, 10n];

test('Health.record refuses a NaN, negative, infinite or non-number latency and records nothing', () => {
  const h = new Health({});
  for (let i = 0; i < 99; i++) h.record(5, false, 1000);
  for (const bad of [...NOT_NUMBERS, -20, -0.001, Infinity, undefined]) {
    refuses(() => h.record(bad, false, 1000), 'latencyMs', `latencyMs ${String(bad)}`);
  }
  // Still the 99 calls of 5 ms, every one a success: p99 is 5 ms (within the
  // histogram's 3.125 %), not dragged down to 0 by a NaN read as 0.
  const s = h.snapshot(1000);
  assert.equal(s.calls, 99);
  assert.equal(s.errors, 0);
  assert.ok(Math.abs(s.p99Ms - 5) <= 5 * 0.03125, `p99 ${s.p99Ms}`);
  // 0 ms is a latency (a cache hit), and is recorded.
  h.record(0, false, 1000);
  assert.equal(h.snapshot(1000).calls, 100);
});

test('Health.record refuses a non-boolean `failed` and a bad nowMs; snapshot, percentileMs and status check theirs', () => {
  const h = new Health({});
  for (const bad of ['yes', 1, 0, null]) refuses(() => h.record(5, bad, 1000), 'failed', `failed ${String(bad)}`);
  for (const bad of [...NOT_NUMBERS, -1, Infinity]) {
    refuses(() => h.record(5, false, bad), 'nowMs', `record nowMs ${String(bad)}`);
    refuses(() => h.snapshot(bad), 'nowMs', `snapshot nowMs ${String(bad)}`);
    refuses(() => h.status(bad), 'nowMs', `status nowMs ${String(bad)}`);
    refuses(() => h.percentileMs(50, bad), 'nowMs', `percentileMs nowMs ${String(bad)}`);
  }
  for (const bad of [...NOT_NUMBERS, -1, 100.5, Infinity, undefined]) {
    refuses(() => h.percentileMs(bad, 1000), 'percent', `percent ${String(bad)}`);
  }
  assert.equal(h.snapshot(1000).calls, 0);
  h.record(8, true, 1000);
  h.record(2, false, 1000);
  const s = h.snapshot(1000);
  assert.deepEqual([s.calls, s.errors, s.errorRate], [2, 1, 50]);
});

test('Backoff.delayMs / exponentialMs: attempt is a whole number >= 1 (attempts start at 1)', () => {
  // base 100 ms, x2, cap 10 s, no jitter: attempt n waits min(10 000, 100 * 2^(n-1))
  const b = new Backoff({ baseMs: 100, multiplier: 2, maxMs: 10000, jitter: 'none' });
  for (const bad of [...NOT_NUMBERS, 0, -1, 1.5, Infinity, 2 ** 32, undefined]) {
    refuses(() => b.delayMs(bad), 'attempt', `delayMs attempt ${String(bad)}`);
    refuses(() => b.exponentialMs(bad), 'attempt', `exponentialMs attempt ${String(bad)}`);
  }
  for (const bad of [...NOT_NUMBERS, -1, Infinity]) {
    refuses(() => b.delayMs(2, bad), 'previousMs', `previousMs ${String(bad)}`);
  }
  for (const bad of [...NOT_NUMBERS, Infinity]) refuses(() => b.reseed(bad), 'seed', `seed ${String(bad)}`);
  assert.equal(b.delayMs(1), 100);
  assert.equal(b.delayMs(3, 200), 400);
  assert.equal(b.exponentialMs(8), 10000); // 100 * 2^7 = 12 800, capped
  assert.equal(b.delayMs(2 ** 32 - 1), 10000);
  b.reseed(-7);
});

test('RetryBudget: nowMs of deposit / tryWithdraw / snapshot is a finite number >= 0', () => {
  // ttl 1 s, 0 reserve, 50 %: two deposits make one retry
  const budget = new RetryBudget({ ttlMs: 1000, minRetriesPerSec: 0, percentCanRetry: 50 });
  for (const bad of [...NOT_NUMBERS, -5, Infinity]) {
    refuses(() => budget.deposit(bad), 'nowMs', `deposit ${String(bad)}`);
    refuses(() => budget.tryWithdraw(bad), 'nowMs', `tryWithdraw ${String(bad)}`);
    refuses(() => budget.snapshot(bad), 'nowMs', `snapshot ${String(bad)}`);
  }
  budget.deposit(10);
  budget.deposit(20);
  // The refused bad calls withdrew nothing: no verdict counted.
  assert.deepEqual(budget.snapshot(30), { requests: 2, retries: 0, available: 1, allowed: 0, refused: 0 });
  assert.equal(budget.tryWithdraw(30), true);
  assert.equal(budget.tryWithdraw(30), false);
  assert.deepEqual(budget.snapshot(30), { requests: 2, retries: 1, available: 0, allowed: 1, refused: 1 });
});

test('BreakerCore: nowMs, permit and durationMs are checked; an unknown outcome is refused, inherited names too', () => {
  // count window of 2, opens at 50 % failures after 2 calls
  const b = new BreakerCore({ window: { kind: 'count', size: 2 }, minimumCalls: 2, failureRateThreshold: 50 });
  for (const bad of [...NOT_NUMBERS, -1, Infinity, undefined]) {
    refuses(() => b.tryAcquire(bad), 'nowMs', `tryAcquire ${String(bad)}`);
  }
  const p = b.tryAcquire(0).permit;
  for (const bad of [...NOT_NUMBERS, -1, 0.5, Infinity, undefined]) {
    refuses(() => b.record(bad, 'failure', 1, 1), 'permit', `permit ${String(bad)}`);
  }
  for (const bad of ['toString', 'constructor', '__proto__', 'fail', undefined]) {
    refuses(() => b.record(p, bad, 1, 1), 'outcome', `outcome ${String(bad)}`);
  }
  for (const bad of [...NOT_NUMBERS, -1, Infinity, undefined]) {
    refuses(() => b.record(p, 'failure', bad, 1), 'durationMs', `durationMs ${String(bad)}`);
    refuses(() => b.record(p, 'failure', 1, bad), 'nowMs', `record nowMs ${String(bad)}`);
  }
  for (const bad of [NaN, '3', -1]) {
    refuses(() => b.retryAfterMs(bad), 'nowMs', `retryAfterMs ${String(bad)}`);
    refuses(() => b.metrics(bad), 'nowMs', `metrics ${String(bad)}`);
  }
  // Nothing above was recorded: the window holds the two calls below only.
  b.record(p, 'failure', 1, 1);
  b.record(b.tryAcquire(2).permit, 'success', 1, 3);
  assert.equal(b.state, 'open');
  assert.equal(b.metrics(3).calls, 2);
});

test('SemaphoreCore.poll / cancel: a ticket is a whole number >= 0; priorities are only the four names', () => {
  const s = new SemaphoreCore({ maxConcurrent: 1, maxQueue: 2 });
  assert.deepEqual(s.acquire('normal'), { admitted: true });
  const { ticket } = s.acquire('normal', true);
  for (const bad of [...NOT_NUMBERS, -1, ticket + 0.5, Infinity, undefined]) {
    refuses(() => s.poll(bad), 'ticket', `poll ${String(bad)}`);
    refuses(() => s.cancel(bad), 'ticket', `cancel ${String(bad)}`);
  }
  for (const bad of ['toString', 'constructor', 'hasOwnProperty']) {
    refuses(() => s.acquire(bad), 'priority', `priority ${bad}`);
  }
  assert.equal(s.poll(ticket), 'waiting');
  assert.equal(s.release(), true);
  assert.equal(s.poll(ticket), 'granted');
});

test('Bulkhead.execute refuses a priority that is an Object.prototype name', async () => {
  const b = new Bulkhead({ maxConcurrent: 1 });
  for (const bad of ['toString', 'valueOf', '__proto__']) {
    await assert.rejects(b.execute(async () => 1, { priority: bad }), { code: 'EINVALIDCONFIG', field: 'priority' }, bad);
  }
  assert.equal(b.metrics().active, 0);
});

test('Deadline: nowMs is a finite number (any sign), maxMs a number >= 0 (Infinity allowed)', () => {
  for (const bad of [...NOT_NUMBERS, Infinity, -Infinity]) {
    refuses(() => new Deadline(100, { nowMs: bad }), 'nowMs', `constructor nowMs ${String(bad)}`);
  }
  refuses(() => new Deadline(100, null), 'options', 'options null');
  const d = new Deadline(100, { nowMs: 1000 });
  for (const bad of [NaN, '1040', null, Infinity]) {
    refuses(() => d.remainingMs(bad), 'nowMs', `remainingMs ${String(bad)}`);
    refuses(() => d.expired(bad), 'nowMs', `expired ${String(bad)}`);
    refuses(() => d.allocateMs(30, bad), 'nowMs', `allocateMs nowMs ${String(bad)}`);
    refuses(() => d.child(30, bad), 'nowMs', `child nowMs ${String(bad)}`);
  }
  for (const bad of [NaN, '30', null, -1, undefined]) refuses(() => d.allocateMs(bad, 1040), 'maxMs', `maxMs ${String(bad)}`);
  // start 1000, end 1100: at 1040, 60 ms are left
  assert.equal(d.allocateMs(Infinity, 1040), 60);
  assert.equal(d.allocateMs(0, 1040), 0);
  const early = new Deadline(50, { nowMs: -20 }); // a caller's clock may start below 0
  assert.equal(early.remainingMs(0), 30);
});

test('execute options: a deadline that is not a Deadline is refused by timeout, Retry and pipeline', async () => {
  const { timeout, Retry, pipeline } = require('..');
  let calls = 0;
  const fn = async () => { calls += 1; return 'ran'; };
  for (const bad of [5000, '5000', null, {}, { remainingMs: 5 }]) {
    // A rejected promise, as from every other policy (never a synchronous throw).
    await assert.rejects(timeout(100).execute(fn, { deadline: bad }), { code: 'EINVALIDCONFIG', field: 'deadline' }, String(bad));
    await assert.rejects(new Retry().execute(fn, { deadline: bad }), { code: 'EINVALIDCONFIG', field: 'deadline' }, String(bad));
    await assert.rejects(pipeline({ deadlineMs: 1000 }).execute(fn, { deadline: bad }), { code: 'EINVALIDCONFIG', field: 'deadline' }, String(bad));
  }
  assert.equal(calls, 0);
  assert.equal(await timeout(100).execute(fn, { deadline: new Deadline(1000) }), 'ran');
  assert.equal(calls, 1);
});
