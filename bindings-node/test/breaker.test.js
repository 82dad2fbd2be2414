'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { CircuitBreaker, isSeawallError } = require('..');
const { delay, deferred, rejection } = require('./helpers');

const fail = (msg = 'boom') => async () => {
  throw new Error(msg);
};
const ok = (v = 'ok') => async () => v;

async function run(b, outcomes) {
  for (const o of outcomes) {
    await b.execute(o === 'F' ? fail() : ok()).catch(() => {});
  }
}

test('DESIGN §3 oracle: count window 10, minimum 10, threshold 50', async () => {
  // 5 F + 5 S opens on the 10th call; 4 F + 6 S stays closed; 9 F of 9 decides nothing.
  const opts = { window: { kind: 'count', size: 10 }, minimumCalls: 10, failureRateThreshold: 50 };
  const a = new CircuitBreaker(opts);
  await run(a, ['F', 'S', 'F', 'S', 'F', 'S', 'F', 'S', 'F']);
  assert.equal(a.state, 'closed');
  await run(a, ['S']);
  assert.equal(a.state, 'open');
  const b = new CircuitBreaker(opts);
  await run(b, ['F', 'S', 'S', 'F', 'S', 'F', 'S', 'F', 'S', 'S']);
  assert.equal(b.state, 'closed');
  const c = new CircuitBreaker(opts);
  await run(c, ['F', 'F', 'F', 'F', 'F', 'F', 'F', 'F', 'F']);
  assert.equal(c.state, 'closed');
  assert.deepEqual(c.metrics().window, { calls: 9, failures: 9, slowCalls: 0, slowFailures: 0 });
  assert.equal(c.metrics().failureRate, 100);
});

test('open rejects with ECIRCUITOPEN and retryAfterMs; the user error passes through unchanged', async () => {
  const b = new CircuitBreaker({ consecutiveFailures: 2, openDurationMs: 2000, name: 'pay' });
  const mine = new Error('mine');
  const got = await rejection(b.execute(async () => { throw mine; }));
  assert.equal(got, mine);
  assert.equal(isSeawallError(got), false);
  await b.execute(fail()).catch(() => {});
  let called = false;
  const e = await rejection(b.execute(async () => { called = true; }));
  assert.equal(called, false);
  assert.equal(e.code, 'ECIRCUITOPEN');
  assert.ok(isSeawallError(e, 'ECIRCUITOPEN'));
  assert.ok(e instanceof Error);
  assert.equal(e.state, 'open');
  assert.equal(e.breaker, 'pay');
  assert.ok(e.retryAfterMs > 1500 && e.retryAfterMs <= 2000, `retryAfterMs ${e.retryAfterMs}`);
});

test('half-open admits halfOpenMaxCalls probes; events open → halfOpen → close', async () => {
  const b = new CircuitBreaker({ consecutiveFailures: 1, openDurationMs: 30, halfOpenMaxCalls: 2, halfOpenSuccessThreshold: 2 });
  const changes = [];
  b.on('stateChange', ({ from, to }) => changes.push(`${from}>${to}`));
  const opened = [];
  b.on('open', (e) => opened.push(e.retryAfterMs));
  await b.execute(fail()).catch(() => {});
  assert.equal(b.state, 'open');
  assert.equal(opened.length, 1);
  assert.ok(opened[0] > 0 && opened[0] <= 30);
  await delay(40);
  const gates = [deferred(), deferred()];
  const probes = gates.map((g) => b.execute(() => g.promise));
  const third = await rejection(b.execute(ok()));
  assert.equal(third.code, 'ECIRCUITOPEN');
  assert.equal(third.state, 'halfOpen');
  assert.equal(third.retryAfterMs, undefined);
  assert.equal(b.metrics().halfOpenInFlight, 2);
  gates[0].resolve(1);
  gates[1].resolve(2);
  assert.deepEqual(await Promise.all(probes), [1, 2]);
  assert.equal(b.state, 'closed');
  assert.deepEqual(changes, ['closed>open', 'open>halfOpen', 'halfOpen>closed']);
});

test("an abort of the caller's own signal is ignored, not a failure (DESIGN §1)", async () => {
  const b = new CircuitBreaker({ consecutiveFailures: 1 });
  const ac = new AbortController();
  const thrown = new Error('aborted by caller');
  const e = await rejection(b.execute(async ({ signal }) => {
    assert.equal(signal, ac.signal);
    ac.abort();
    throw thrown;
  }, { signal: ac.signal }));
  assert.equal(e, thrown);
  assert.equal(b.state, 'closed');
  const t = b.metrics().totals;
  assert.equal(t.ignored, 1);
  assert.equal(t.failures, 0);
  // Already aborted: EABORTED, nothing admitted.
  const e2 = await rejection(b.execute(ok(), { signal: ac.signal }));
  assert.equal(e2.code, 'EABORTED');
  assert.equal(b.metrics().totals.admitted, 1);
});

test('isFailure and errorFilter classify errors as ignored', async () => {
  const b = new CircuitBreaker({ consecutiveFailures: 1, isFailure: (e) => !(e instanceof TypeError) });
  await b.execute(async () => { throw new TypeError('t'); }).catch(() => {});
  assert.equal(b.state, 'closed');
  assert.equal(b.metrics().totals.ignored, 1);
  await b.execute(fail()).catch(() => {});
  assert.equal(b.state, 'open');
  const c = new CircuitBreaker({ consecutiveFailures: 1, errorFilter: (e) => e.message === '404' });
  await c.execute(fail('404')).catch(() => {});
  assert.equal(c.state, 'closed');
  await c.execute(fail('500')).catch(() => {});
  assert.equal(c.state, 'open');
});

test('fallback answers rejections and failures', async () => {
  const seen = [];
  const b = new CircuitBreaker({ consecutiveFailures: 1, fallback: (e) => { seen.push(e.code || e.message); return 'cached'; } });
  assert.equal(await b.execute(fail('down')), 'cached');
  assert.equal(await b.execute(ok()), 'cached');
  assert.deepEqual(seen, ['down', 'ECIRCUITOPEN']);
});

test('disposable listeners stop after dispose()', async () => {
  const b = new CircuitBreaker({ consecutiveFailures: 1 });
  let n = 0;
  const sub = b.onReject(() => { n += 1; });
  await b.execute(fail()).catch(() => {});
  await b.execute(ok()).catch(() => {});
  assert.equal(n, 1);
  sub.dispose();
  await b.execute(ok()).catch(() => {});
  assert.equal(n, 1);
  assert.equal(b.listenerCount('reject'), 0);
});

test('forceOpen, disable and reset', async () => {
  const b = new CircuitBreaker({ consecutiveFailures: 1 });
  b.forceOpen();
  const e = await rejection(b.execute(ok()));
  assert.equal(e.state, 'forcedOpen');
  assert.equal(b.state, 'forcedOpen');
  b.disable();
  await run(b, ['F', 'F', 'F']);
  assert.equal(b.state, 'disabled');
  assert.equal(await b.execute(ok('yes')), 'yes');
  b.reset();
  assert.equal(b.state, 'closed');
  await run(b, ['F']);
  assert.equal(b.state, 'open');
});

test('an outcome from before a reset is stale: it counts in the totals only', async () => {
  const b = new CircuitBreaker({ consecutiveFailures: 1 });
  const g = deferred();
  const p = b.execute(() => g.promise);
  b.reset();
  g.reject(new Error('late'));
  await p.catch(() => {});
  assert.equal(b.state, 'closed');
  assert.equal(b.metrics().totals.stale, 1);
});

test('slow calls open the breaker by the slow-call rate', async () => {
  const b = new CircuitBreaker({
    window: { kind: 'count', size: 2 }, minimumCalls: 2, slowCallDurationMs: 15, slowCallRateThreshold: 50, failureRateThreshold: null,
  });
  await b.execute(() => delay(30));
  assert.equal(b.state, 'closed');
  await b.execute(() => delay(1));
  assert.equal(b.state, 'open');
  assert.equal(b.metrics().totals.slow, 1);
});

test('wrap keeps arguments and this; fire calls the action', async () => {
  const b = new CircuitBreaker();
  const obj = { k: 3, f: b.wrap(function (a, c) { return this.k * a + c; }) };
  assert.equal(await obj.f(2, 1), 7);
  const o = new CircuitBreaker(async (x, y) => x + y);
  assert.equal(await o.fire(2, 5), 7);
});

test('invalid options throw EINVALIDCONFIG naming the option', () => {
  const cases = [
    [{ failureRateThreshold: 101 }, 'failureRateThreshold'],
    [{ window: { kind: 'count', size: 2000 } }, 'window.size'],
    [{ window: { kind: 'time', buckets: 129 } }, 'window.buckets'],
    [{ window: { kind: 'sliding' } }, 'window.kind'],
    [{ minimumCalls: 0 }, 'minimumCalls'],
    // Past the core's u32 (Python refuses these too): not silently 2^32 − 1.
    [{ minimumCalls: 2 ** 32 }, 'minimumCalls'],
    [{ minimumCalls: 1e300 }, 'minimumCalls'],
    [{ openDurationMs: 1000, maxOpenDurationMs: 10 }, 'maxOpenDurationMs'],
    [{ halfOpenMaxCalls: 5000 }, 'halfOpenMaxCalls'],
    [{ openDurationMs: 'soon' }, 'openDurationMs'],
    [{ failureThreshold: 5 }, 'failureThreshold'],
    [{ shared: '../etc' }, 'shared'],
  ];
  for (const [opts, field] of cases) {
    assert.throws(() => new CircuitBreaker(opts), (e) => {
      assert.equal(e.code, 'EINVALIDCONFIG', `${JSON.stringify(opts)}: ${e.message}`);
      assert.equal(e.field, field, `${JSON.stringify(opts)}: ${e.message}`);
      return true;
    });
  }
  assert.throws(() => new CircuitBreaker({ minimumCalls: 1e300 }), { message: 'invalid minimumCalls: must be at most 4294967295, not 1e+300' });
  assert.ok(new CircuitBreaker({ minimumCalls: 2 ** 32 - 1 }));
});

test('ECIRCUITOPEN.retryAfterMs of a 100-day open duration says 100 days, as metrics() does', async () => {
  const day = 86_400_000;
  const b = new CircuitBreaker({ consecutiveFailures: 1, openDurationMs: 100 * day, maxOpenDurationMs: null });
  await rejection(b.execute(() => { throw new Error('down'); }));
  const e = await rejection(b.execute(() => 1));
  assert.equal(e.code, 'ECIRCUITOPEN');
  assert.ok(e.retryAfterMs > 99.99 * day && e.retryAfterMs <= 100 * day, `${e.retryAfterMs / day} days`);
  assert.match(e.message, /retry after/);
});

test('openDurationMs above the default 300 000 ms cap is accepted when the open duration does not grow', async () => {
  const b = new CircuitBreaker({ consecutiveFailures: 1, openDurationMs: 400_000 });
  await rejection(b.execute(() => { throw new Error('down'); }));
  const e = await rejection(b.execute(() => 1));
  assert.ok(e.retryAfterMs > 399_000 && e.retryAfterMs <= 400_000, String(e.retryAfterMs));
  assert.ok(new CircuitBreaker({ openDurationMs: 400_000, openBackoffMultiplier: 1 }));
  // With growth, the cap matters: the message says which option to set.
  assert.throws(() => new CircuitBreaker({ openDurationMs: 400_000, openBackoffMultiplier: 2 }), (err) => {
    assert.equal(err.code, 'EINVALIDCONFIG');
    assert.equal(err.field, 'maxOpenDurationMs');
    assert.match(err.message, /300000/);
    assert.match(err.message, /openBackoffMultiplier/);
    return true;
  });
});

test('a breaker posted to a worker_thread is a SeawallError saying to use shared, not a DataCloneError', () => {
  const { MessageChannel } = require('node:worker_threads');
  const { port1, port2 } = new MessageChannel();
  try {
    const { Bulkhead } = require('..');
    for (const b of [new CircuitBreaker(), new CircuitBreaker({ name: 'x' }), new Bulkhead()]) {
      if (b.on) b.on('open', () => {});
      assert.throws(() => port1.postMessage(b), (e) => {
        assert.equal(e.name, 'SeawallError');
        assert.equal(e.code, 'ENOTSUPPORTED');
        assert.match(e.message, /shared/);
        assert.doesNotMatch(e.message, /=>/);
        return true;
      });
    }
  } finally {
    port1.close();
    port2.close();
  }
});
