'use strict';
// One retry budget and one retry throttle shared by every worker process of a
// host (DESIGN §4, §8): 4 forked workers and this process draw on them at once.
// Every figure below is worked out by hand from Finagle's and gRPC A6's rules.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { fork } = require('node:child_process');
const { RetryBudget, RetryThrottle, retry, monotonicMs, sharedSupported } = require('..');
const { rejection, reply, ask } = require('./helpers');

const skip = !sharedSupported() && 'no native 128-bit atomics';
const WORKERS = 4;

// Same options as the workers (fixtures/shared-retry-worker.js).
const BUDGET = { ttlMs: 20_000, minRetriesPerSec: 1, percentCanRetry: 25 };
const THROTTLE = { maxTokens: 10, tokenRatio: 0.5 };

function all(workers, step, args) {
  return Promise.all(workers.map((w) => ask(w, step, args)));
}

const sum = (rs, key) => rs.reduce((a, r) => a + r[key], 0);

test('4 worker processes share one retry budget and one retry throttle: exact figures', { skip, timeout: 60_000 }, async (t) => {
  // One name for both: a budget and a throttle live in different files.
  const name = `node-retry-${process.pid}-${Date.now()}`;
  RetryBudget.unlinkShared(name);
  RetryThrottle.unlinkShared(name);
  t.after(() => {
    RetryBudget.unlinkShared(name);
    RetryThrottle.unlinkShared(name);
  });
  const workers = Array.from({ length: WORKERS }, () => fork(path.join(__dirname, 'fixtures', 'shared-retry-worker.js'), {
    env: { ...process.env, SEAWALL_BUDGET: name, SEAWALL_THROTTLE: name },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  }));
  t.after(() => workers.forEach((w) => w.kill('SIGKILL')));
  const ready = await Promise.all(workers.map((w) => reply(w, 'ready')));
  for (const r of ready) assert.deepEqual([r.budgetShared, r.throttleShared], [true, true]);
  const budget = new RetryBudget({ shared: name, ...BUDGET, name: 'parent' });
  const throttle = new RetryThrottle({ shared: name, ...THROTTLE });
  assert.equal(budget.isShared, true);
  assert.equal(budget.name, 'parent');
  assert.equal(throttle.name, name);

  // Budget: ttl 20 s in 10 buckets of 2 s; reserve 1/s · 20 s = 20 retries;
  // each request deposits 0.25 of a retry. Steps at T use T as the time; the
  // later ones use the clock, within 18 s of T, so nothing has expired.
  const T = monotonicMs();
  // `allowed` and `refused` are every process's withdrawals since the budget was made.
  const none = { allowed: 0, refused: 0 };
  assert.deepEqual(budget.snapshot(T), { requests: 0, retries: 0, available: 20, ...none });
  // 4 × 40 requests at once from 4 processes: 160 · 0.25 = 40, balance 60.
  await all(workers, 'deposit', { n: 40, at: T });
  assert.deepEqual(budget.snapshot(T), { requests: 160, retries: 0, available: 60, ...none });
  // 4 × 30 retries asked at once: exactly 60 allowed (check-and-withdraw is one
  // step on the shared memory, so no two processes spend the same retry).
  const withdrawn = await all(workers, 'withdraw', { n: 30, at: T });
  assert.equal(sum(withdrawn, 'allowed'), 60);
  assert.deepEqual(budget.snapshot(T), { requests: 160, retries: 60, available: 0, allowed: 60, refused: 60 });
  // Here: a call that fails once deposits 0.25 (balance 0.25) and its retry is
  // refused.
  let attempts = 0;
  const refused = await rejection(retry(async () => { attempts += 1; throw new Error('down'); }, {
    attempts: 2, backoff: { baseMs: 1, jitter: 'none' }, budget,
  }));
  assert.equal(refused.code, 'ERETRYBUDGET');
  assert.equal(refused.reason, 'budgetExhausted');
  assert.equal(attempts, 1);
  assert.deepEqual(budget.snapshot(), { requests: 161, retries: 60, available: 0, allowed: 60, refused: 61 });
  // 4 more requests (balance 0.25 + 1 = 1.25): worker 2's failing call deposits
  // (1.5) and retries (0.5 left); worker 3's deposits (0.75) and is refused.
  await all(workers, 'deposit', { n: 1 });
  assert.deepEqual(budget.snapshot(), { requests: 165, retries: 60, available: 1, allowed: 60, refused: 61 });
  assert.deepEqual(await ask(workers[2], 'retryWithBudget'), { step: 'retryWithBudget', outcome: 'ok', attempts: 2 });
  assert.deepEqual(await ask(workers[3], 'retryWithBudget'), { step: 'retryWithBudget', outcome: 'ERETRYBUDGET', attempts: 1 });
  assert.deepEqual(budget.snapshot(), { requests: 167, retries: 61, available: 0, allowed: 61, refused: 62 });
  assert.ok(monotonicMs() - T < 18_000, 'the steps above ran within the window');
  // 40 s after T every bucket has expired: only the reserve is left.
  assert.deepEqual(budget.snapshot(T + 40_000), { requests: 0, retries: 0, available: 20, allowed: 61, refused: 62 });

  // Throttle (gRPC A6): 10 tokens; a failure takes 1 and its retry is allowed
  // iff more than 10 / 2 are left; a success adds 0.5; tokens stay in [0, 10].
  assert.equal(throttle.tokens, 10);
  // 4 × 3 failures at once: the k-th leaves 10 − k, so k = 1..4 are allowed
  // (9, 8, 7, 6 > 5) and the other 8 refused, whichever process made them.
  const failed = await all(workers, 'fail', { n: 3 });
  assert.equal(sum(failed, 'allowed'), 4);
  assert.equal(throttle.tokens, 0);
  // 4 × 3 successes: 12 · 0.5 = 6.
  await all(workers, 'succeed', { n: 3 });
  assert.equal(throttle.tokens, 6);
  assert.equal(throttle.recordFailure(), false, '6 − 1 = 5 is not more than 5');
  await ask(workers[1], 'succeed', { n: 4 });
  assert.equal(throttle.tokens, 7);
  assert.equal(throttle.recordFailure(), true, '7 − 1 = 6 > 5');
  assert.deepEqual(await ask(workers[0], 'retryWithThrottle'), { step: 'retryWithThrottle', outcome: 'ERETRYBUDGET', attempts: 1 });
  assert.equal(throttle.tokens, 5);
  // 4 × 20 successes: 5 + 40, capped at 10; then a call that fails once (9,
  // allowed) and succeeds (9.5).
  await all(workers, 'succeed', { n: 20 });
  assert.equal(throttle.tokens, 10);
  assert.deepEqual(await ask(workers[0], 'retryWithThrottle'), { step: 'retryWithThrottle', outcome: 'ok', attempts: 2 });
  assert.equal(throttle.tokens, 9.5);

  await all(workers, 'exit');
});

test('attaching a shared budget or throttle with other options is ESHAREDMISMATCH', { skip }, (t) => {
  const name = `node-retry-mismatch-${process.pid}`;
  t.after(() => {
    RetryBudget.unlinkShared(name);
    RetryThrottle.unlinkShared(name);
  });
  const budget = new RetryBudget({ shared: name, ...BUDGET });
  const throttle = new RetryThrottle({ shared: name, ...THROTTLE });
  assert.throws(() => new RetryBudget({ shared: name, ...BUDGET, percentCanRetry: 30 }), (e) => {
    assert.equal(e.code, 'ESHAREDMISMATCH');
    assert.equal(e.shared, name);
    assert.match(e.message, /^shared retry budget '.*' exists with another configuration: every process must give it the same ttlMs, minRetriesPerSec and percentCanRetry \(/);
    assert.match(e.message, /: percentCanRetry differs\)$/);
    return true;
  });
  // The defaults are another configuration too: every option differs.
  assert.throws(() => new RetryBudget({ shared: name }), {
    code: 'ESHAREDMISMATCH',
    message: /: ttlMs, minRetriesPerSec and percentCanRetry differ\)$/,
  });
  assert.throws(() => new RetryThrottle({ shared: name, maxTokens: 10, tokenRatio: 0.4 }), (e) => {
    assert.equal(e.code, 'ESHAREDMISMATCH');
    assert.match(e.message, /^shared retry throttle '.*' exists with another configuration: every process must give it the same maxTokens and tokenRatio \(/);
    assert.match(e.message, /: tokenRatio differs\)$/);
    return true;
  });
  // tokenRatio is kept to 3 decimals (gRPC A6): 0.5004 is the same configuration.
  const same = new RetryThrottle({ shared: name, maxTokens: 10, tokenRatio: 0.5004 });
  same.recordFailure();
  assert.equal(throttle.tokens, 9);
  // A bad option is still EINVALIDCONFIG, checked before the region is touched.
  assert.throws(() => new RetryBudget({ shared: name, ttlMs: 0.5 }), { code: 'EINVALIDCONFIG', field: 'ttlMs' });
  budget.deposit();
});
