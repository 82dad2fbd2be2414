'use strict';
// A shared breaker's permit table size (`permitSlots`): how many calls of every
// process of the host may be in flight at once.
const test = require('node:test');
const assert = require('node:assert/strict');
const { CircuitBreaker, BreakerCore, sharedSupported } = require('..');

const skip = !sharedSupported() && 'no native 128-bit atomics';

function region(t, tag) {
  const name = `node-slots-${process.pid}-${tag}-${Date.now()}`;
  CircuitBreaker.unlinkShared(name);
  t.after(() => CircuitBreaker.unlinkShared(name));
  return name;
}

const WINDOW = { kind: 'count', size: 100 };

test('the smallest table admits 256 calls at once and refuses the 257th with EPERMITS', { skip }, async (t) => {
  const shared = region(t, 'admit');
  const core = new BreakerCore({ shared, window: WINDOW, permitSlots: 256 });
  const held = [];
  for (let i = 0; i < 256; i++) {
    const r = core.tryAcquire(0);
    assert.equal(r.error, undefined, `call ${i + 1}`);
    held.push(r.permit);
  }
  const refused = core.tryAcquire(0).error;
  assert.equal(refused.code, 'EPERMITS');
  // The same full table through a CircuitBreaker on the region: typed, and the
  // message says the breaker's own size.
  const b = new CircuitBreaker(() => 'runs', { shared, window: WINDOW, permitSlots: 256 });
  await assert.rejects(b.fire(), (e) => e.code === 'EPERMITS' && /all 256 shared permit slots/.test(e.message));
  core.record(held.pop(), 'success', 1, 0);
  assert.equal(await b.fire(), 'runs');
  held.push(core.tryAcquire(0).permit);
  assert.equal(core.tryAcquire(0).error.code, 'EPERMITS');
  for (const p of held) core.record(p, 'ignored', 1, 0);
  assert.equal(core.metrics(0).permitsOutstanding, 0);
});

test('an opener of another size gets ESHAREDMISMATCH naming permitSlots', { skip }, (t) => {
  const shared = region(t, 'mismatch');
  new CircuitBreaker({ shared, window: WINDOW, permitSlots: 256 });
  for (const other of [{}, { permitSlots: 32768 }]) {
    assert.throws(() => new CircuitBreaker({ shared, window: WINDOW, ...other }),
      (e) => e.code === 'ESHAREDMISMATCH' && /permitSlots differs/.test(e.message));
  }
  assert.equal(new CircuitBreaker({ shared, window: WINDOW, permitSlots: 256 }).isShared, true);
});

test('a size that is not offered is EINVALIDCONFIG on permitSlots listing the sizes', { skip }, (t) => {
  const shared = region(t, 'bad');
  for (const bad of [0, 100, 255, 256.5, 4095, 65536, -1, NaN, '256']) {
    assert.throws(() => new CircuitBreaker({ shared, window: WINDOW, permitSlots: bad }),
      (e) => e.code === 'EINVALIDCONFIG' && e.field === 'permitSlots'
        && /must be one of 256, 4096, 32768, 262144/.test(e.message), String(bad));
  }
});

test('a local breaker refuses permitSlots', () => {
  assert.throws(() => new CircuitBreaker({ permitSlots: 4096 }),
    (e) => e.code === 'EINVALIDCONFIG' && e.field === 'permitSlots' && /shared breakers only/.test(e.message));
  assert.throws(() => new BreakerCore({ permitSlots: 4096 }),
    (e) => e.code === 'EINVALIDCONFIG' && e.field === 'permitSlots');
});
