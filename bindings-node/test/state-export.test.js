'use strict';
// State export / import (DESIGN §3.7; opossum toJSON, cockatiel initialState):
// a serverless cold start resumes an open breaker for exactly the time it had
// left, then probes as usual.
const test = require('node:test');
const assert = require('node:assert/strict');
const { CircuitBreaker, sharedSupported, isSeawallError } = require('..');
const { delay, rejection } = require('./helpers');

test('toJSON of a closed breaker, and JSON.stringify of it', () => {
  const b = new CircuitBreaker();
  assert.deepEqual(b.toJSON(), { version: 1, state: 'closed', openings: 0, retryAfterMs: null });
  assert.deepEqual(JSON.parse(JSON.stringify(b)), b.toJSON());
});

test('an open breaker exported and imported stays open for the time it had left, then probes', async () => {
  const options = { consecutiveFailures: 1, openDurationMs: 150, openBackoffMultiplier: 2, maxOpenDurationMs: 10_000 };
  const old = new CircuitBreaker(options);
  await rejection(old.execute(() => { throw new Error('down'); }));
  await delay(50);
  const saved = JSON.parse(JSON.stringify(old));
  assert.equal(saved.state, 'open');
  assert.equal(saved.openings, 1);
  assert.ok(saved.retryAfterMs > 0 && saved.retryAfterMs <= 101, String(saved.retryAfterMs));
  const fresh = new CircuitBreaker({ ...options, initialState: saved });
  assert.equal(fresh.state, 'open');
  const e = await rejection(fresh.execute(() => 1));
  assert.equal(e.code, 'ECIRCUITOPEN');
  assert.ok(e.retryAfterMs <= saved.retryAfterMs && e.retryAfterMs > saved.retryAfterMs - 40, String(e.retryAfterMs));
  await delay(saved.retryAfterMs + 5);
  // The probe fails: the second opening in a row lasts 150 · 2 = 300 ms.
  await rejection(fresh.execute(() => { throw new Error('still down'); }));
  assert.equal(fresh.state, 'open');
  const left = fresh.metrics().retryAfterMs;
  assert.ok(left > 290 && left <= 300, String(left));
});

test('halfOpen imports as open with no time left; forcedOpen and disabled as they were', async () => {
  const h = new CircuitBreaker({ initialState: { version: 1, state: 'halfOpen', openings: 1, retryAfterMs: null } });
  assert.equal(await h.execute(() => 'probe'), 'probe');
  assert.equal(h.state, 'closed');
  const f = new CircuitBreaker({ initialState: { version: 1, state: 'forcedOpen', openings: 0, retryAfterMs: null } });
  assert.equal((await rejection(f.execute(() => 1))).state, 'forcedOpen');
  const d = new CircuitBreaker({ initialState: { version: 1, state: 'disabled', openings: 0, retryAfterMs: null } });
  assert.equal(d.state, 'disabled');
});

test('a record of another version or with a bad value is EINVALIDCONFIG naming the field', () => {
  const good = { version: 1, state: 'open', openings: 1, retryAfterMs: 10 };
  const cases = [
    ['x', 'initialState'],
    [{ ...good, version: 2 }, 'initialState.version'],
    [{ ...good, state: 'ajar' }, 'initialState.state'],
    [{ ...good, openings: -1 }, 'initialState.openings'],
    [{ ...good, openings: 1.5 }, 'initialState.openings'],
    [{ ...good, retryAfterMs: -5 }, 'initialState.retryAfterMs'],
    [{ ...good, retryAfterMs: undefined }, 'initialState.retryAfterMs'],
    [{ ...good, extra: 1 }, 'initialState.extra'],
  ];
  for (const [initialState, field] of cases) {
    assert.throws(() => new CircuitBreaker({ initialState }), (e) => isSeawallError(e, 'EINVALIDCONFIG') && e.field === field, field);
  }
});

test('a shared breaker refuses an initialState that disagrees with the region', { skip: !sharedSupported() && 'no native 128-bit atomics' }, (t) => {
  const name = `node-initial-${process.pid}`;
  CircuitBreaker.unlinkShared(name);
  t.after(() => CircuitBreaker.unlinkShared(name));
  const open = { version: 1, state: 'open', openings: 1, retryAfterMs: 60_000 };
  const first = new CircuitBreaker({ shared: name, initialState: open });
  assert.equal(first.state, 'open');
  // The region exists, open: the same state is accepted, another refused.
  assert.equal(new CircuitBreaker({ shared: name, initialState: open }).state, 'open');
  assert.throws(() => new CircuitBreaker({ shared: name, initialState: { version: 1, state: 'closed', openings: 0, retryAfterMs: null } }), (e) => {
    assert.equal(e.code, 'ESHAREDMISMATCH');
    assert.match(e.message, /already 'open'/);
    return true;
  });
});
