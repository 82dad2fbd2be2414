'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { retry, Retry, RetryBudget, RetryThrottle, Backoff, parseRetryAfter } = require('..');
const { delay, rejection } = require('./helpers');

test('retries until success, with un-jittered exponential delays (20, 40 ms)', async () => {
  const times = [];
  const t0 = performance.now();
  const v = await retry(async ({ attempt }) => {
    times.push(performance.now() - t0);
    if (attempt < 3) throw new Error(`fail ${attempt}`);
    return attempt;
  }, { attempts: 3, backoff: { baseMs: 20, multiplier: 2, jitter: 'none' } });
  assert.equal(v, 3);
  assert.equal(times.length, 3);
  assert.ok(times[1] - times[0] >= 19, `first delay ${times[1] - times[0]}`);
  assert.ok(times[2] - times[1] >= 39, `second delay ${times[2] - times[1]}`);
});

test('gives up after the attempts with the last error unchanged', async () => {
  let n = 0;
  const errors = [];
  const e = await rejection(retry(async () => {
    n += 1;
    const err = new Error(`e${n}`);
    errors.push(err);
    throw err;
  }, { attempts: 4, backoff: { baseMs: 1, jitter: 'none' } }));
  assert.equal(n, 4);
  assert.equal(e, errors[3]);
});

test('shouldRetry false stops at once', async () => {
  let n = 0;
  const e = await rejection(retry(async () => { n += 1; throw new TypeError('bad request'); }, {
    attempts: 5, backoff: { baseMs: 1 }, shouldRetry: (err) => !(err instanceof TypeError),
  }));
  assert.equal(n, 1);
  assert.ok(e instanceof TypeError);
});

test('a retry budget with no reserve and 0 % refuses every retry: ERETRYBUDGET with the cause', async () => {
  const budget = new RetryBudget({ minRetriesPerSec: 0, percentCanRetry: 0 });
  const first = new Error('first');
  const e = await rejection(retry(async () => { throw first; }, { attempts: 5, backoff: { baseMs: 1 }, budget }));
  assert.equal(e.code, 'ERETRYBUDGET');
  assert.equal(e.reason, 'budgetExhausted');
  assert.equal(e.cause, first);
  assert.deepEqual(budget.snapshot(), { requests: 1, retries: 0, available: 0, allowed: 0, refused: 1 });
});

test('budget: 10 requests at 50 % and no reserve buy exactly 5 retries', async () => {
  // Each of 10 calls deposits 0.5 retry and fails twice: 5 retries are allowed in
  // all, so 5 calls get a second attempt and every call then gives up.
  const budget = new RetryBudget({ minRetriesPerSec: 0, percentCanRetry: 50 });
  const policy = new Retry({ attempts: 2, backoff: { baseMs: 1, jitter: 'none' }, budget });
  let attempts = 0;
  for (let i = 0; i < 10; i++) {
    await policy.execute(async () => { attempts += 1; throw new Error('x'); }).catch(() => {});
  }
  assert.equal(attempts, 15);
  assert.equal(budget.snapshot().retries, 5);
});

test('throttle (gRPC A6, 10 tokens): failures 1–4 retried, the 5th not', async () => {
  const throttle = new RetryThrottle({ maxTokens: 10, tokenRatio: 0.1 });
  const policy = new Retry({ attempts: 100, backoff: { baseMs: 1, jitter: 'none' }, throttle });
  let attempts = 0;
  const e = await rejection(policy.execute(async () => { attempts += 1; throw new Error('down'); }));
  assert.equal(attempts, 5);
  assert.equal(e.code, 'ERETRYBUDGET');
  assert.equal(e.reason, 'throttled');
  assert.equal(throttle.tokens, 5);
});

test('a delay that would end after the deadline is not made: the last error at once', async () => {
  const t0 = performance.now();
  let n = 0;
  const last = new Error('slow dependency');
  const e = await rejection(retry(async () => { n += 1; throw last; }, {
    attempts: 10, deadlineMs: 500, backoff: { baseMs: 300, multiplier: 2, jitter: 'none' },
  }));
  // attempt 1 fails at ~0, delay 300 fits; attempt 2 fails at ~300, delay 600 does not.
  assert.equal(n, 2);
  assert.equal(e, last);
  assert.ok(performance.now() - t0 < 500, `gave up after ${performance.now() - t0} ms`);
});

test('Retry-After raises the delay (error.retryAfterMs and the HTTP header)', async () => {
  const t0 = performance.now();
  let n = 0;
  await retry(async () => {
    n += 1;
    if (n === 1) throw Object.assign(new Error('429'), { retryAfterMs: 60 });
    if (n === 2) throw Object.assign(new Error('503'), { headers: { 'retry-after': '0.05' } });
    return n;
  }, { attempts: 3, backoff: { baseMs: 1, jitter: 'none' } });
  assert.ok(performance.now() - t0 >= 108, `elapsed ${performance.now() - t0}`);
  assert.equal(parseRetryAfter('2'), 2000);
  assert.equal(parseRetryAfter('nonsense'), -1);
});

test('an endless Retry-After gives up at once with the error, like a deadline', { timeout: 5000 }, async () => {
  for (const hint of [
    { headers: { 'retry-after': '999999999999999999999999999999' } }, // about 3e22 years
    { retryAfterMs: 2 ** 62 / 1e6 + 1 }, // just past 146 years
  ]) {
    const last = Object.assign(new Error('503'), hint);
    let n = 0;
    const t0 = performance.now();
    const e = await rejection(retry(async () => { n += 1; throw last; }, { attempts: 3 }));
    assert.equal(e, last);
    assert.equal(n, 1);
    assert.ok(performance.now() - t0 < 100, `gave up after ${performance.now() - t0} ms`);
  }
  for (const ms of [Infinity, 1e300]) {
    const last = new Error('503');
    const e = await rejection(retry(async () => { throw last; }, { attempts: 3, retryAfterMs: () => ms }));
    assert.equal(e, last);
  }
});

test('an abort during the backoff sleep settles at once, with no further attempt', async () => {
  const ac = new AbortController();
  let n = 0;
  const p = retry(async () => { n += 1; throw new Error('x'); }, {
    attempts: 5, backoff: { baseMs: 10_000, jitter: 'none' }, signal: ac.signal,
  });
  await delay(20);
  const t0 = performance.now();
  ac.abort(new Error('shutdown'));
  const e = await rejection(p);
  const took = performance.now() - t0;
  assert.equal(e.code, 'EABORTED');
  assert.equal(e.cause.message, 'shutdown');
  assert.ok(took < 1000, `settled ${took} ms after the abort, not after the 10 s backoff`);
  await delay(30);
  assert.equal(n, 1);
});

test('every jitter kind stays within its DESIGN §4 bounds', () => {
  const within = (jitter, attempt, lo, hi, extra = {}) => {
    const b = new Backoff({ baseMs: 100, multiplier: 2, maxMs: 1000, jitter, ...extra });
    for (let i = 0; i < 200; i++) {
      const d = b.delayMs(attempt, 0);
      assert.ok(d >= lo && d <= hi, `${jitter} attempt ${attempt}: ${d} not in [${lo}, ${hi}]`);
    }
  };
  within('none', 3, 400, 400);
  within('full', 3, 0, 400);
  within('equal', 3, 200, 400);
  within('proportional', 3, 320, 480); // 400 · [0.8, 1.2]
  within('proportional', 3, 360, 440, { jitterFactor: 0.1 });
  within('none', 10, 1000, 1000); // capped
  const d = new Backoff({ baseMs: 100, maxMs: 1000, jitter: 'decorrelated' });
  assert.equal(d.delayMs(1, 0), 100);
  for (let i = 0; i < 100; i++) {
    const x = d.delayMs(2, 200);
    assert.ok(x >= 100 && x <= 600, `decorrelated ${x}`);
  }
});

test('invalid retry options throw EINVALIDCONFIG', () => {
  assert.throws(() => new Retry({ attempts: 0 }), { code: 'EINVALIDCONFIG', field: 'attempts' });
  assert.throws(() => new Retry({ backoff: { jitter: 'wild' } }), { code: 'EINVALIDCONFIG', field: 'backoff.jitter' });
  assert.throws(() => new Retry({ backoff: { baseMs: 100, maxMs: 10 } }), { code: 'EINVALIDCONFIG', field: 'backoff.maxMs' });
  assert.throws(() => new RetryThrottle({ maxTokens: 2000 }), { code: 'EINVALIDCONFIG', field: 'maxTokens' });
  assert.throws(() => new RetryBudget({ shared: '' }), { code: 'EINVALIDCONFIG', field: 'shared' });
  assert.throws(() => new RetryBudget({ shared: '../etc' }), { code: 'EINVALIDCONFIG', field: 'shared' });
  assert.throws(() => new RetryThrottle({ shared: 7 }), { code: 'EINVALIDCONFIG', field: 'shared' });
  assert.throws(() => new RetryThrottle({ shared: 'a b' }), { code: 'EINVALIDCONFIG', field: 'shared' });
});

test('RetryBudget and RetryThrottle refuse a name that is not a non-empty string, as the other classes do', () => {
  for (const make of [(o) => new RetryBudget(o), (o) => new RetryThrottle(o)]) {
    for (const bad of [5, '', {}, null, true]) {
      assert.throws(() => make({ name: bad }), {
        code: 'EINVALIDCONFIG', field: 'name', message: 'invalid name: must be a non-empty string',
      }, String(bad));
    }
    assert.equal(make({ name: 'payments' }).name, 'payments');
    assert.equal(make({}).name, undefined);
  }
});
