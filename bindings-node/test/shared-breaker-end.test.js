'use strict';
// DESIGN §8: a handle whose thread or process ends normally gives back what it
// held. A worker thread terminated, or a process that calls process.exit(0),
// while it holds a shared breaker's only half-open probe gives the probe back
// as ignored: the breaker leaves the stuck half-open at once, with no reclaim.
// One killed (SIGKILL) gives nothing back itself: its probe is reported until
// the next caller that needs it gives it back.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { fork } = require('node:child_process');
const { Worker } = require('node:worker_threads');
const { setTimeout: delay } = require('node:timers/promises');
const { once } = require('node:events');
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

/** A fresh shared breaker, opened by one failure and past its open period. */
async function openedBreaker(t, label) {
  const name = `node-breaker-end-${label}-${process.pid}`;
  CircuitBreaker.unlinkShared(name);
  t.after(() => CircuitBreaker.unlinkShared(name));
  const mine = new CircuitBreaker({ shared: name, ...OPTIONS });
  await assert.rejects(mine.execute(async () => { throw new Error('down'); }), /down/);
  assert.equal(mine.metrics().state, 'open');
  await delay(40);
  return { name, mine };
}

/** Wait (bounded) until no probe is in flight; the metrics then. */
async function probeGivenBack(breaker) {
  const until = performance.now() + 2000;
  let m = breaker.metrics();
  while (m.halfOpenInFlight !== 0 && performance.now() < until) {
    await delay(5);
    m = breaker.metrics();
  }
  return m;
}

/** The probe is back: counted once as ignored, and the next probe closes the breaker. */
async function assertGivenBack(mine) {
  const m = await probeGivenBack(mine);
  assert.equal(m.halfOpenInFlight, 0, 'the probe was given back');
  assert.equal(m.state, 'halfOpen');
  assert.equal(m.permitsOutstanding, 0);
  // One failure (the opening call) and the probe, ignored.
  assert.deepEqual(
    { admitted: m.totals.admitted, failures: m.totals.failures, ignored: m.totals.ignored, successes: m.totals.successes },
    { admitted: 2, failures: 1, ignored: 1, successes: 0 },
  );
  assert.equal(mine.reclaimAbandoned(), 0, 'nothing was left for a reclaim');
  assert.equal(await mine.execute(async () => 'probe'), 'probe');
  assert.equal(mine.metrics().state, 'closed');
}

test('a worker thread terminated while it holds a shared breaker\'s only probe gives it back', { skip, timeout: 20_000 }, async (t) => {
  const { name, mine } = await openedBreaker(t, 'worker');
  const worker = new Worker(HOLDER, { workerData: { name, options: JSON.stringify(OPTIONS) } });
  t.after(() => worker.terminate());
  const [held] = await Promise.race([
    new Promise((r) => worker.once('message', (m) => r([m]))),
    new Promise((_, reject) => worker.once('error', reject)),
  ]);
  assert.deepEqual(held, { state: 'halfOpen', halfOpenInFlight: 1 });
  assert.equal(mine.metrics().halfOpenInFlight, 1);
  await assert.rejects(mine.execute(async () => 'refused'), { code: 'ECIRCUITOPEN' });
  await worker.terminate();
  await assertGivenBack(mine);
});

/** A child process holding the probe, told how to end; resolves once it exited. */
async function childHoldingProbe(t, name, mine, how) {
  const child = fork(HOLDER, {
    env: { ...process.env, SEAWALL_SHARED: name, SEAWALL_OPTIONS: JSON.stringify(OPTIONS) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  t.after(() => child.kill('SIGKILL'));
  const exited = new Promise((r) => child.once('exit', (code, signal) => r({ code, signal })));
  const held = await Promise.race([
    new Promise((r) => child.once('message', r)),
    exited.then((e) => ({ exitedEarly: e })),
  ]);
  assert.deepEqual(held, { state: 'halfOpen', halfOpenInFlight: 1 });
  assert.equal(mine.metrics().halfOpenInFlight, 1);
  child.send(how);
  assert.deepEqual(await exited, { code: 0, signal: null });
}

test('a process that calls process.exit(0) while it holds a shared breaker\'s only probe gives it back', { skip, timeout: 20_000 }, async (t) => {
  const { name, mine } = await openedBreaker(t, 'exit');
  await childHoldingProbe(t, name, mine, 'exit');
  await assertGivenBack(mine);
});

test('a process that ends at the end of its script while it holds a shared breaker\'s only probe gives it back', { skip, timeout: 20_000 }, async (t) => {
  const { name, mine } = await openedBreaker(t, 'end');
  await childHoldingProbe(t, name, mine, 'end');
  await assertGivenBack(mine);
});

// DESIGN §8, "Self-healing": a probe a killed worker held is reported (metrics,
// health) until the next caller that needs it gives it back; nobody calls reclaim.
test('a killed worker\'s probe is reported until the next caller takes its place', { skip, timeout: 30_000 }, async (t) => {
  const { name, mine } = await openedBreaker(t, 'killed');
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
