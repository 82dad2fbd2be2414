'use strict';
// The package's option tables (lib/options.js) against the core's
// configuration fields (seawall_host::options, through the native
// configFields()) and against what the classes accept: a core field no option
// sets, or a table entry for a field the core does not have, fails here.
const test = require('node:test');
const assert = require('node:assert/strict');
const { CircuitBreaker, Bulkhead, RetryBudget, RetryThrottle, Health, StaleCache, isSeawallError } = require('..');
const { binding, constants } = require('../lib/native');
const { CORE_OPTIONS, WRAPPER_OPTIONS, NOT_OPTIONS } = require('../lib/options');

const KINDS = ['breaker', 'semaphore', 'retry_budget', 'retry_throttle', 'health'];
const CLASSES = {
  breaker: (o) => new CircuitBreaker(o),
  semaphore: (o) => new Bulkhead(o),
  retry_budget: (o) => new RetryBudget(o),
  retry_throttle: (o) => new RetryThrottle(o),
  health: (o) => new Health(o),
};

test('every configuration kind of the core has a table', () => {
  assert.deepEqual(Object.keys(binding.configFields()).sort(), [...KINDS].sort());
  assert.deepEqual(Object.keys(CORE_OPTIONS).sort(), [...KINDS].sort());
});

for (const kind of KINDS) {
  test(`${kind}: the option table places every core field once`, () => {
    const placed = [...Object.values(CORE_OPTIONS[kind]).flat(), ...Object.keys(NOT_OPTIONS[kind])];
    assert.deepEqual(placed.sort(), [...binding.configFields()[kind]].sort());
  });

  test(`${kind}: an option outside the table is refused, one inside is known`, () => {
    assert.throws(() => CLASSES[kind]({ notAnOption: 1 }), (e) => {
      assert.ok(isSeawallError(e, 'EINVALIDCONFIG'), e.message);
      // Breaker and bulkhead name the bare option; the others prefix the class.
      assert.match(e.field, /^(\w+\.)?notAnOption$/);
      for (const k of [...Object.keys(CORE_OPTIONS[kind]), ...WRAPPER_OPTIONS[kind]]) {
        assert.ok(e.message.includes(k), `${k} missing from ${e.message}`);
      }
      return true;
    });
  });
}

test('the breaker table names the jitter seed as set natively', () => {
  // Written from seawall-core's BreakerConfig: 14 fields, the window's 3 expanded.
  assert.equal(binding.configFields().breaker.length, 16);
  assert.ok(binding.configFields().breaker.includes('jitter_seed'));
  assert.ok('jitter_seed' in NOT_OPTIONS.breaker);
});

test('a stale cache keeps 1024 entries by default, as in Python', () => {
  assert.equal(constants.staleCacheMaxEntries, 1024);
  const cache = new StaleCache();
  for (let i = 0; i < 1025; i++) cache.set(i, i);
  // The least recently stored key went first; the 1024 after it stayed.
  assert.equal(cache.get(0), undefined);
  assert.equal(cache.get(1), 1);
  assert.equal(cache.get(1024), 1024);
});
