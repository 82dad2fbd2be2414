'use strict';
// DESIGN §8, "Self-healing": a probe a killed worker held is reported (metrics,
// health) until the next caller that needs it gives it back; nobody calls reclaim.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { fork } = require('node:child_process');
const { once } = require('node:events');
const { setTimeout: delay } = require('node:timers/promises');
const { CircuitBreaker, sharedSupported } = require('..');
const { healthReport } = require('../lib/middleware/common');

const skip = !sharedSupported() && 'no native 128-bit atomics';
const HOLDER = path.join(__dirname, 'fixtures', 'breaker-probe-holder.js');
const OPTIONS = {
  consecutiveFailures: 1,
  openDurationMs: 20,
  openJitterFactor: 0,
  halfOpenMaxCalls: 1,
  halfOpenSuccessThreshold: 1,
  halfOpenMaxWaitMs: null,
};

test('a killed worker\'s probe is reported until the next caller takes its place', { skip, timeout: 30_000 }, async (t) => {
  const name = `node-heal-report-${process.pid}`;
  CircuitBreaker.unlinkShared(name);
  t.after(() => CircuitBreaker.unlinkShared(name));
  const mine = new CircuitBreaker({ shared: name, ...OPTIONS });
  await assert.rejects(mine.execute(async () => { throw new Error('down'); }), /down/);
  await delay(40); // past the open period: the next call is the probe
  const child = fork(HOLDER, {
    env: { ...process.env, SEAWALL_SHARED: name, SEAWALL_OPTIONS: JSON.stringify(OPTIONS) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const [held] = await once(child, 'message');
  assert.deepEqual(held, { state: 'halfOpen', halfOpenInFlight: 1 });
  child.kill('SIGKILL');
  await once(child, 'exit');

  // Reported, not taken back, by reading: the metrics and the health document.
  const m = mine.metrics();
  assert.equal(m.permitsAbandoned, 1);
  assert.equal(m.halfOpenInFlight, 1);
  const [status, body] = healthReport({ db: { breaker: mine, critical: true } });
  assert.equal(status, 200);
  assert.deepEqual(body.dependencies.db, { status: 'degraded', breaker: 'halfOpen', health: null, abandoned: 1 });

  // The next caller is refused by the dead probe's slot, gives it back (as
  // ignored) and probes: the breaker closes.
  assert.equal(await mine.execute(async () => 'ok'), 'ok');
  const after = mine.metrics();
  assert.equal(after.state, 'closed');
  assert.equal(after.permitsAbandoned, 0);
  assert.equal(after.totals.ignored, 1);
  assert.equal(healthReport({ db: { breaker: mine, critical: true } })[1].dependencies.db.abandoned, undefined);
});
