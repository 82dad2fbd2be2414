'use strict';
// One breaker shared by every worker process of a host (DESIGN §8): 4 forked
// workers open it once between them, and half-open probes across all of them
// stay within halfOpenMaxCalls.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { fork } = require('node:child_process');
const { CircuitBreaker, sharedSupported } = require('..');

const WORKERS = 4;

function next(workers, phase) {
  return Promise.all(workers.map((w) => new Promise((resolve, reject) => {
    const onMessage = (m) => {
      if (m.phase === phase) {
        w.off('message', onMessage);
        resolve(m);
      }
    };
    w.on('message', onMessage);
    w.once('exit', (code) => reject(new Error(`worker exited (${code}) before ${phase}`)));
  })));
}

test('4 cluster workers share one breaker: it opens once, probes stay within halfOpenMaxCalls', { skip: !sharedSupported() && 'no native 128-bit atomics' }, async (t) => {
  const name = `node-test-${process.pid}-${Date.now()}`;
  CircuitBreaker.unlinkShared(name);
  t.after(() => CircuitBreaker.unlinkShared(name));
  const workers = Array.from({ length: WORKERS }, () => fork(path.join(__dirname, 'fixtures', 'shared-worker.js'), {
    env: { ...process.env, SEAWALL_SHARED: name },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  }));
  t.after(() => workers.forEach((w) => w.kill()));
  await next(workers, 'ready');
  // The parent attaches too: a fifth view of the same breaker.
  const mine = new CircuitBreaker({ shared: name, consecutiveFailures: 3, openDurationMs: 400, halfOpenMaxCalls: 2 });
  assert.equal(mine.isShared, true);
  assert.equal(mine.state, 'closed');

  workers.forEach((w) => w.send('fail'));
  const failed = await next(workers, 'fail');
  const m = mine.metrics();
  assert.equal(m.state, 'open');
  assert.equal(m.openings, 1);
  assert.equal(m.totals.transitions, 1, 'opened exactly once');
  const admittedFailures = failed.reduce((a, r) => a + r.failed, 0);
  const rejected = failed.reduce((a, r) => a + r.rejected, 0);
  assert.equal(admittedFailures + rejected, WORKERS * 6);
  assert.equal(admittedFailures, m.totals.failures);
  assert.ok(admittedFailures >= 3, `${admittedFailures} failures admitted`);
  for (const r of failed) {
    assert.equal(r.state, 'open');
    const opens = r.events.filter(([e]) => e === 'open');
    assert.equal(opens.length, 1, `a worker saw ${opens.length} openings`);
    assert.equal(opens[0][1], m.epoch, 'every worker saw the same opening');
  }

  await new Promise((r) => setTimeout(r, 450));
  workers.forEach((w) => w.send('probe'));
  const probes = await next(workers, 'probe');
  const admitted = probes.reduce((a, r) => a + r.admitted, 0);
  assert.equal(admitted, 2, `probes admitted across 4 processes: ${admitted}`);
  assert.equal(probes.reduce((a, r) => a + r.rejected, 0), WORKERS * 5 - 2);
  assert.equal(mine.metrics().halfOpenInFlight, 2);

  workers.forEach((w) => w.send('release'));
  const closed = await next(workers, 'release');
  for (const r of closed) {
    assert.equal(r.state, 'closed');
    assert.deepEqual(r.events.map(([e]) => e), ['open', 'halfOpen', 'close']);
  }
  assert.equal(mine.state, 'closed');
  assert.equal(mine.metrics().permitsOutstanding, 0);
  workers.forEach((w) => w.send('exit'));
});

test('attaching with another configuration is ESHAREDMISMATCH', (t) => {
  const name = `node-mismatch-${process.pid}`;
  CircuitBreaker.unlinkShared(name);
  t.after(() => CircuitBreaker.unlinkShared(name));
  const a = new CircuitBreaker({ shared: name, minimumCalls: 10 });
  assert.equal(a.state, 'closed');
  assert.throws(() => new CircuitBreaker({ shared: name, minimumCalls: 11 }), { code: 'ESHAREDMISMATCH' });
  // The native message names the option that differs.
  assert.throws(() => new CircuitBreaker({ shared: name, minimumCalls: 11, openDurationMs: 5 }), {
    code: 'ESHAREDMISMATCH',
    message: /another configuration: minimumCalls and openDurationMs differ/,
  });
});
