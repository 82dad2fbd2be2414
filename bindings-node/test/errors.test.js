'use strict';
// Errors of the native layer arrive with their `code` (and, for an invalid
// option, `field`) set natively, so an option whose name has digits in it is
// reported like any other; and the numbers that cross the boundary come from
// the native side (`constants()`), not from copies in lib/.
const test = require('node:test');
const assert = require('node:assert/strict');
const { Health, CircuitBreaker, Bulkhead, RetryBudget, isSeawallError } = require('..');
const { binding } = require('../lib/native');

/** `f` throws a SeawallError with `code` whose `field` is `field`. */
function throwsCoded(f, code, field) {
  assert.throws(f, (e) => {
    assert.ok(isSeawallError(e, code), `${e && e.code}: ${e && e.message}`);
    assert.equal(e.field, field);
    return true;
  });
}

test('an unhealthy p99 below the degraded one names unhealthyP99Ms', () => {
  // Defaults: unhealthy above 5 s; a degraded threshold of 6 s is above it
  // (DESIGN §7: unhealthy must be at least degraded).
  throwsCoded(() => new Health({ degradedP99Ms: 6000 }), 'EINVALIDCONFIG', 'unhealthyP99Ms');
  assert.throws(() => new Health({ degradedP99Ms: 6000 }), /unhealthyP99Ms: must not be less than degradedP99Ms/);
});

test('a core configuration error names the option in JavaScript terms', () => {
  // DESIGN §3: the cap of an open period may not be below the first period.
  throwsCoded(
    () => new CircuitBreaker({ openDurationMs: 10000, maxOpenDurationMs: 5000 }),
    'EINVALIDCONFIG',
    'maxOpenDurationMs',
  );
  assert.throws(
    () => new CircuitBreaker({ openDurationMs: 10000, maxOpenDurationMs: 5000 }),
    { message: 'invalid maxOpenDurationMs: must not be less than openDurationMs' },
  );
});

test('a bad shared name is EINVALIDCONFIG naming shared', () => {
  throwsCoded(() => new RetryBudget({ shared: 'no/slashes' }), 'EINVALIDCONFIG', 'shared');
});

test('a stale handle is EHANDLE, thrown with its code by the native layer', () => {
  assert.throws(() => binding.breakerMetrics(2 ** 40, undefined), (e) => {
    assert.equal(e.code, 'EHANDLE');
    assert.match(e.message, /^not a live seawall breaker/);
    return true;
  });
});

test('the native constants are the encodings the JS layer decodes', () => {
  const c = binding.constants();
  // DESIGN §3: 4096 shared permit slots per breaker; states in DESIGN order.
  assert.equal(c.permitSlots, 4096);
  assert.deepEqual(c.states, ['closed', 'open', 'halfOpen', 'forcedOpen', 'disabled']);
  assert.deepEqual(c.pollResults, ['waiting', 'granted', 'cancelled', 'unknown']);
  assert.deepEqual(c.cancelResults, ['cancelled', 'passedOn', 'unknown']);
  assert.deepEqual(c.priorities, ['critical', 'high', 'normal', 'low']);
  assert.deepEqual(c.giveUp.map((g) => g.name), ['maxAttempts', 'deadline', 'budgetExhausted', 'throttled']);
  for (const code of ['EINVALIDCONFIG', 'ESHAREDMISMATCH', 'ESHARED', 'EHANDLE', 'EPERMIT']) {
    assert.ok(c.errorCodes.includes(code), code);
  }
});

test('a full bulkhead reports the occupancy the native rejection carries', async () => {
  const b = new Bulkhead({ maxConcurrent: 2, maxQueue: 0 });
  const held = [b.execute(() => new Promise((r) => setTimeout(r, 50))), b.execute(() => new Promise((r) => setTimeout(r, 50)))];
  await assert.rejects(b.execute(async () => 1), (e) => {
    assert.equal(e.code, 'EBULKHEADFULL');
    assert.equal(e.reason, 'full');
    assert.equal(e.active, 2);
    assert.equal(e.queued, 0);
    return true;
  });
  await Promise.all(held);
});

test('refusals carry no stack frames and leave Error.stackTraceLimit as the user set it', async () => {
  const { CircuitBreaker, Bulkhead } = require('..');
  const before = Error.stackTraceLimit;
  Error.stackTraceLimit = 7;
  try {
    const b = new CircuitBreaker();
    b.forceOpen();
    const open = await b.execute(() => 1).catch((e) => e);
    const full = new Bulkhead({ maxConcurrent: 1 });
    full.execute(() => new Promise(() => {}));
    const refused = await full.execute(() => 1).catch((e) => e);
    for (const [e, code] of [[open, 'ECIRCUITOPEN'], [refused, 'EBULKHEADFULL']]) {
      assert.equal(e.code, code);
      assert.equal(e.stack, `SeawallError: ${e.message}`);
    }
    assert.equal(open.state, 'forcedOpen');
    assert.deepEqual([refused.reason, refused.active, refused.queued], ['full', 1, 0]);
    assert.equal(Error.stackTraceLimit, 7);
    assert.ok(new Error('mine').stack.split('\n').length > 1);
  } finally {
    Error.stackTraceLimit = before;
  }
});
