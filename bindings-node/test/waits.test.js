'use strict';
// Waits beyond the exponential family (DESIGN §4): zero, constant, linear, a
// list of delays and a user's function, with the same attempts, Retry-After and
// deadline rules; and the test mode that skips every sleep.
const test = require('node:test');
const assert = require('node:assert/strict');
const { Retry, Backoff, Deadline, setTesting, isSeawallError } = require('..');

/** The delays a policy of `backoff` reports to onRetry over `attempts` failing attempts. */
async function delaysOf(backoff, attempts, extra = {}) {
  const seen = [];
  const policy = new Retry({ attempts, backoff, onRetry: ({ delayMs }) => seen.push(delayMs), ...extra });
  const before = setTesting(true); // decided and reported, not slept
  try {
    await assert.rejects(policy.execute(() => { throw new Error('down'); }), { message: 'down' });
  } finally {
    setTesting(before.sleep === false ? { sleep: false, attempts: before.attempts } : false);
  }
  return seen;
}

test('baseMs 0 is zero waits: five attempts take no time', async () => {
  let calls = 0;
  const t0 = performance.now();
  await assert.rejects(new Retry({ attempts: 5, backoff: { baseMs: 0 } }).execute(() => { calls += 1; throw new Error('x'); }));
  assert.equal(calls, 5);
  assert.ok(performance.now() - t0 < 50, `${performance.now() - t0} ms`);
  assert.equal(new Backoff({ baseMs: 0 }).delayMs(3), 0);
});

test('constant, linear, list and function waits give the delays worked out by hand', async () => {
  assert.deepEqual(await delaysOf({ kind: 'constant', delayMs: 250 }, 4), [250, 250, 250]);
  // linear: min(cap, base + step·(n−1)) = 100, 150, 200, 250, then the 260 cap
  assert.deepEqual(await delaysOf({ kind: 'linear', baseMs: 100, stepMs: 50, maxMs: 260 }, 6), [100, 150, 200, 250, 260]);
  // a list: the last one repeats
  assert.deepEqual(await delaysOf([10, 20, 40], 6), [10, 20, 40, 40, 40]);
  assert.deepEqual(await delaysOf({ kind: 'list', delaysMs: [5] }, 3), [5, 5]);
  const args = [];
  const custom = (attempt, error) => { args.push([attempt, error.message]); return attempt * 7; };
  assert.deepEqual(await delaysOf(custom, 4), [7, 14, 21]);
  assert.deepEqual(args, [[1, 'down'], [2, 'down'], [3, 'down']]);
  assert.equal(new Backoff({ kind: 'linear', baseMs: 100, stepMs: 50 }).delayMs(3), 200);
  assert.equal(new Backoff([1, 2]).exponentialMs(9), 2);
});

test('own waits keep the Retry-After and deadline rules', async () => {
  // A Retry-After of 300 ms raises a 10 ms list delay to 300.
  const withHeader = Object.assign(new Error('busy'), { headers: { 'retry-after': '0.3' } });
  const seen = [];
  const policy = new Retry({ attempts: 2, backoff: [10], onRetry: ({ delayMs }) => seen.push(delayMs) });
  setTesting(true);
  try {
    await assert.rejects(policy.execute(() => { throw withHeader; }), { message: 'busy' });
  } finally {
    setTesting(false);
  }
  assert.deepEqual(seen, [300]);
  // A 500 ms linear delay past a 100 ms deadline is not made: the error at once.
  let calls = 0;
  const t0 = performance.now();
  await assert.rejects(new Retry({ attempts: 5, backoff: { kind: 'linear', baseMs: 500 } })
    .execute(() => { calls += 1; throw new Error('late'); }, { deadline: new Deadline(100) }), { message: 'late' });
  assert.equal(calls, 1);
  assert.ok(performance.now() - t0 < 80);
});

test('setTesting: no sleeps, and attempts capped for every policy, until turned off', async () => {
  const slow = new Retry({ attempts: 4, backoff: { kind: 'constant', delayMs: 5000 } });
  let calls = 0;
  setTesting({ attempts: 2 });
  try {
    const t0 = performance.now();
    await assert.rejects(slow.execute(() => { calls += 1; throw new Error('x'); }));
    assert.equal(calls, 2);
    assert.ok(performance.now() - t0 < 100);
    assert.equal(slow.metrics().giveUps.maxAttempts, 1);
  } finally {
    setTesting(false);
  }
  calls = 0;
  const ac = new AbortController();
  const p = slow.execute(() => { calls += 1; throw new Error('x'); }, ac.signal);
  await new Promise((r) => setTimeout(r, 30));
  ac.abort();
  await assert.rejects(p, { code: 'EABORTED' }); // slept again: still in the first backoff
  assert.equal(calls, 1);
  assert.throws(() => setTesting({ attempts: 0 }), (e) => isSeawallError(e, 'EINVALIDCONFIG') && e.field === 'testing.attempts');
  assert.throws(() => setTesting('yes'), { code: 'EINVALIDCONFIG', field: 'testing' });
});

test('bad waits are EINVALIDCONFIG naming the field', () => {
  const cases = [
    [{ kind: 'cubic' }, 'backoff.kind'],
    [{ kind: 'constant' }, 'backoff.delayMs'],
    [{ kind: 'constant', delayMs: -1 }, 'backoff.delayMs'],
    [{ kind: 'linear', stepMs: NaN }, 'backoff.stepMs'],
    [[], 'backoff.delaysMs'],
    [[1, -2], 'backoff.delaysMs[1]'],
    [{ kind: 'list', delaysMs: [1], jitter: 'decorrelated' }, 'backoff.jitter'],
    [{ kind: 'linear', baseMs: 1, extra: 1 }, 'backoff.extra'],
    [{ baseMs: 0, jitter: 'sideways' }, 'backoff.jitter'],
    ['100', 'backoff'],
  ];
  for (const [backoff, field] of cases) {
    assert.throws(() => new Retry({ backoff }), (e) => isSeawallError(e, 'EINVALIDCONFIG') && e.field === field, `${JSON.stringify(backoff)}: ${field}`);
  }
});

test('a backoff function that returns no delay rejects with EINVALIDCONFIG', async () => {
  await assert.rejects(new Retry({ attempts: 2, backoff: () => NaN }).execute(() => { throw new Error('x'); }), { code: 'EINVALIDCONFIG', field: 'backoff' });
});
