'use strict';
// A waiter of a shared bulkhead is woken by a release in another process or
// thread (src/waker.rs: a native thread sleeping on the semaphore's release
// counter), not by a 2 ms poll: it is served, with a handful of looks at its
// tickets where a poll would have made one every 2 ms of the wait. No timing
// bound: the hand-off latency is measured by benches/node/bench.js.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { Worker } = require('node:worker_threads');
const { Bulkhead, sharedSupported } = require('..');
const { delay, deferred, rejection } = require('./helpers');

const skip = (!sharedSupported() && 'no native 128-bit atomics')
  || (process.platform !== 'linux' && 'the release-counter wait is a Linux futex; elsewhere the 2 ms poll stays');
const timeout = 60_000;
const FIXTURE = path.join(__dirname, 'fixtures', 'shared-wake.js');
/** How long the holder keeps the permit once the waiter is queued: 2 ms polls would look 25 times. */
const HOLD_MS = 50;

/** Threads of this process named by src/waker.rs. */
function wakerThreads() {
  return fs.readdirSync('/proc/self/task')
    .filter((t) => {
      try {
        return fs.readFileSync(`/proc/self/task/${t}/comm`, 'utf8').trim() === 'seawall-waker';
      } catch {
        return false; // the thread ended while we looked
      }
    }).length;
}

/** Wait (up to 5 s) until this process has `n` waker threads (a new thread names itself once it runs); returns how many it has. */
async function wakerThreadsSettle(n) {
  for (let i = 0; i < 500 && wakerThreads() !== n; i += 1) await delay(10);
  return wakerThreads();
}

function occupancy(b) {
  const m = b.metrics();
  return { active: m.active, queued: m.queued, permits: m.permitsOutstanding, tickets: m.ticketsOutstanding };
}

/**
 * What a served waiter reports must show it was woken, not polled: the 2 ms poll
 * would have looked about `waitedMs / 2` times; the waker looks once when it
 * starts and once per release (the timer beside it is a slow safety net).
 */
function assertWoken(done) {
  assert.ok(done.waitedMs >= HOLD_MS, `served after the release, ${done.waitedMs} ms after queuing`);
  assert.ok(done.looks.waker >= 1 && done.looks.waker <= 4, `waker looks: ${JSON.stringify(done.looks)}`);
  const pollLooks = done.waitedMs / 2;
  const looks = done.looks.waker + done.looks.timer;
  assert.ok(looks <= 4 + done.waitedMs / 50, `${looks} looks in ${done.waitedMs} ms (a 2 ms poll: ~${pollLooks})`);
}

test('a waiter in a child process is woken by this process\'s release, with a few looks and nothing on stderr', { skip, timeout }, async (t) => {
  const name = `node-wake-child-${process.pid}`;
  Bulkhead.unlinkShared(name);
  t.after(() => Bulkhead.unlinkShared(name));
  const mine = new Bulkhead({ shared: name, maxConcurrent: 1, maxQueue: 4 });
  const g = deferred();
  const holder = mine.execute(() => g.promise);

  const child = spawn(process.execPath, [FIXTURE], {
    env: { ...process.env, SEAWALL_SHARED: name },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  t.after(() => child.kill('SIGKILL'));
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  const lines = [];
  const got = [deferred(), deferred()];
  let buffered = '';
  child.stdout.on('data', (d) => {
    buffered += d;
    for (let i = buffered.indexOf('\n'); i >= 0; i = buffered.indexOf('\n')) {
      lines.push(JSON.parse(buffered.slice(0, i)));
      buffered = buffered.slice(i + 1);
      got[lines.length - 1]?.resolve(lines[lines.length - 1]);
    }
  });
  const exit = new Promise((r) => child.once('exit', (code) => r(code)));
  assert.deepEqual(await got[0].promise, { phase: 'queued', queued: 1, watching: true });
  await delay(HOLD_MS);
  g.resolve();
  await holder;
  const done = await got[1].promise;
  t.diagnostic(JSON.stringify(done));
  assert.equal(done.phase, 'done', JSON.stringify(done));
  assertWoken(done);
  assert.equal(await exit, 0, 'the waker thread does not keep the served process alive');
  assert.equal(stderr, '');
  assert.deepEqual(occupancy(mine), { active: 0, queued: 0, permits: 0, tickets: 0 });
});

test('a worker thread with its own handle is woken by the main thread\'s release; its waker ends with it', { skip, timeout }, async (t) => {
  const name = `node-wake-worker-${process.pid}`;
  Bulkhead.unlinkShared(name);
  t.after(() => Bulkhead.unlinkShared(name));
  const mine = new Bulkhead({ shared: name, maxConcurrent: 1, maxQueue: 4 });
  const g = deferred();
  const holder = mine.execute(() => g.promise);

  const w = new Worker(FIXTURE, { workerData: { name }, stderr: true });
  t.after(() => w.terminate());
  let stderr = '';
  w.stderr.on('data', (d) => { stderr += d; });
  const messages = [deferred(), deferred()];
  let n = 0;
  w.on('message', (m) => messages[n++]?.resolve(m));
  const exit = new Promise((r) => w.once('exit', r));
  assert.deepEqual(await messages[0].promise, { phase: 'queued', queued: 1, watching: true });
  assert.equal(await wakerThreadsSettle(1), 1, 'one waker thread, the worker\'s');
  await delay(HOLD_MS);
  g.resolve();
  await holder;
  const done = await messages[1].promise;
  t.diagnostic(JSON.stringify(done));
  assert.equal(done.phase, 'done', JSON.stringify(done));
  assertWoken(done);
  assert.equal(await exit, 0);
  assert.equal(await wakerThreadsSettle(0), 0);
  assert.equal(stderr, '');
  assert.deepEqual(occupancy(mine), { active: 0, queued: 0, permits: 0, tickets: 0 });

  // A worker terminated while it waits: its waker ends, its ticket is given back.
  const g2 = deferred();
  const holder2 = mine.execute(() => g2.promise);
  const w2 = new Worker(FIXTURE, { workerData: { name } });
  t.after(() => w2.terminate());
  const queued = new Promise((r) => w2.once('message', r));
  assert.equal((await queued).phase, 'queued');
  assert.equal(await wakerThreadsSettle(1), 1);
  await w2.terminate();
  assert.equal(await wakerThreadsSettle(0), 0);
  assert.equal(mine.metrics().queued, 0, 'the terminated worker\'s ticket left the queue');
  g2.resolve();
  await holder2;
  assert.deepEqual(occupancy(mine), { active: 0, queued: 0, permits: 0, tickets: 0 });
});

test('a shared waiter\'s timeout and abort still end its wait, and the waker stops with the last waiter', { skip, timeout }, async (t) => {
  const name = `node-wake-leave-${process.pid}`;
  Bulkhead.unlinkShared(name);
  t.after(() => Bulkhead.unlinkShared(name));
  const a = new Bulkhead({ shared: name, maxConcurrent: 1, maxQueue: 4 });
  const b = new Bulkhead({ shared: name, maxConcurrent: 1, maxQueue: 4, queueTimeoutMs: 200 });
  const g = deferred();
  const holder = a.execute(() => g.promise);
  assert.equal(wakerThreads(), 0);

  const timedOut = b.execute(async () => 'never');
  assert.equal(b._watching, true);
  assert.equal(await wakerThreadsSettle(1), 1);
  const e = await rejection(timedOut);
  assert.equal(e.code, 'EBULKHEADFULL');
  assert.equal(e.reason, 'queueTimeout');
  assert.equal(b._watching, false);
  assert.equal(await wakerThreadsSettle(0), 0, 'the last waiter gone, the thread ends');

  const ac = new AbortController();
  const aborted = b.execute(async () => 'never', { signal: ac.signal });
  await delay(5);
  assert.equal(await wakerThreadsSettle(1), 1);
  ac.abort();
  assert.equal((await rejection(aborted)).code, 'EABORTED');
  assert.equal(await wakerThreadsSettle(0), 0);

  // Two waiters of two handles in this process: the release of one serves the other.
  const served = b.execute(async () => 'b ran');
  await delay(5);
  g.resolve();
  await holder;
  assert.equal(await served, 'b ran');
  assert.ok(b._looks.waker >= 3, `the waker looked at each of the three waits: ${JSON.stringify(b._looks)}`);
  assert.equal(await wakerThreadsSettle(0), 0);
  assert.deepEqual(occupancy(a), { active: 0, queued: 0, permits: 0, tickets: 0 });
});
