'use strict';
// One bulkhead shared by every worker process of a host (DESIGN §5, §8): 4 forked
// workers and this process attach to one semaphore in /dev/shm.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { fork, spawn } = require('node:child_process');
const { Bulkhead, CircuitBreaker, sharedSupported } = require('..');
const { delay, deferred, rejection, reply, ask, peakOverlap } = require('./helpers');

const skip = !sharedSupported() && 'no native 128-bit atomics';
// A lost grant would leave a waiter waiting: fail instead of hanging.
const timeout = 60_000;
const WORKERS = 4;

function occupancy(b) {
  const m = b.metrics();
  return { active: m.active, queued: m.queued, permits: m.permitsOutstanding, tickets: m.ticketsOutstanding };
}

test('peakOverlap (the checker itself): touching intervals do not overlap, nested ones do', () => {
  assert.equal(peakOverlap([[0, 1], [1, 2], [2, 3]]), 1);
  assert.equal(peakOverlap([[0, 10], [1, 2], [1.5, 3], [2.5, 4]]), 3);
  assert.equal(peakOverlap([[0, 10], [1, 9], [2, 8], [3, 7]]), 4);
});

test('4 worker processes share one bulkhead: never more than maxConcurrent at once, FIFO grants across processes, a killed worker\'s permits and ticket reclaimed', { skip, timeout }, async (t) => {
  const name = `node-bulkhead-${process.pid}-${Date.now()}`;
  Bulkhead.unlinkShared(name);
  t.after(() => Bulkhead.unlinkShared(name));
  const workers = Array.from({ length: WORKERS }, () => fork(path.join(__dirname, 'fixtures', 'shared-bulkhead-worker.js'), {
    env: { ...process.env, SEAWALL_SHARED: name },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  }));
  t.after(() => workers.forEach((w) => w.kill('SIGKILL')));
  await Promise.all(workers.map((w) => reply(w, 'ready')));
  // This process attaches too (a fifth view); its local options may differ.
  const mine = new Bulkhead({ shared: name, maxConcurrent: 3, maxQueue: 16, queueTimeoutMs: 50, name: 'parent' });
  assert.equal(mine.isShared, true);
  assert.deepEqual(occupancy(mine), { active: 0, queued: 0, permits: 0, tickets: 0 });

  // 1. Worker 0 takes all 3 permits; workers 1, 2, 3 queue two calls each, in
  // that order. Worker 0's releases hand its permits to the three oldest waiters
  // (in workers 1 and 2), which learn of it only by polling; their releases then
  // serve the rest. Worker 0 itself never waits.
  assert.equal((await ask(workers[0], 'hold', { n: 3 })).active, 3);
  for (const i of [1, 2, 3]) {
    assert.equal((await ask(workers[i], 'queue', { n: 2, runMs: 20 })).queued, 2 * i);
  }
  assert.deepEqual(occupancy(mine), { active: 3, queued: 6, permits: 3, tickets: 6 });
  const served = [1, 2, 3].map((i) => reply(workers[i], 'served'));
  await ask(workers[0], 'release');
  const ran = await Promise.all(served);
  for (const r of ran) assert.equal(r.ran.length, 2);
  // One set of totals (DESIGN §8): every process's admissions, read here in
  // a process that made none: 3 by worker 0, 2 by each of the others.
  assert.equal(mine.metrics().admitted, 9);
  // FIFO across processes: worker 3 queued last, so both its calls got permits
  // only once calls of workers 1 and 2 had ended.
  const earlierEnds = [...ran[0].ran, ...ran[1].ran].map(([, e]) => e);
  const thirdStarts = ran[2].ran.map(([s]) => s);
  assert.ok(Math.min(...thirdStarts) >= Math.min(...earlierEnds), `worker 3 started at ${thirdStarts}, first end ${Math.min(...earlierEnds)}`);
  assert.ok(peakOverlap(ran.flatMap((r) => r.ran)) <= 3);
  assert.deepEqual(occupancy(mine), { active: 0, queued: 0, permits: 0, tickets: 0 });

  // 2. Every worker: 25 calls, 4 at a time (16 callers for 3 permits, at most 13
  // waiting, so none is refused). The intervals, taken inside the permits and
  // laid on the host's one monotonic clock, never overlap more than 3 deep — and
  // do reach 3, so the check had something to catch.
  const hammer = await Promise.all(workers.map((w) => ask(w, 'hammer', { calls: 25, lanes: 4, runMs: 10 })));
  assert.deepEqual(hammer.flatMap((r) => r.errors), []);
  const intervals = hammer.flatMap((r) => r.intervals);
  assert.equal(intervals.length, WORKERS * 25);
  assert.equal(peakOverlap(intervals), 3);
  assert.deepEqual(occupancy(mine), { active: 0, queued: 0, permits: 0, tickets: 0 });

  // 3. Worker 1 holds a permit, worker 3 the other two and a ticket, worker 2
  // queues behind it. Worker 3 is killed: what it held stays taken until
  // reclaimAbandoned gives back its 2 permits and cancels its ticket; worker 2's
  // waiter is then served (a grant made by the reclaim in this process).
  await ask(workers[1], 'hold', { n: 1 });
  await ask(workers[3], 'hold', { n: 2 });
  assert.equal((await ask(workers[3], 'queueHeld')).queued, 1);
  const servedAfterReclaim = reply(workers[2], 'served');
  assert.equal((await ask(workers[2], 'queue', { n: 1, runMs: 5 })).queued, 2);
  assert.deepEqual(occupancy(mine), { active: 3, queued: 2, permits: 3, tickets: 2 });
  const exited = new Promise((r) => workers[3].once('exit', r));
  workers[3].kill('SIGKILL');
  await exited;
  assert.deepEqual(occupancy(mine), { active: 3, queued: 2, permits: 3, tickets: 2 });
  assert.deepEqual(mine.reclaimAbandoned(), { permits: 2, tickets: 1 });
  assert.deepEqual(mine.reclaimAbandoned(), { permits: 0, tickets: 0 });
  const last = await servedAfterReclaim;
  assert.equal(last.ran.length, 1);
  assert.deepEqual(occupancy(mine), { active: 1, queued: 0, permits: 1, tickets: 0 });
  await ask(workers[1], 'release');
  assert.deepEqual(occupancy(mine), { active: 0, queued: 0, permits: 0, tickets: 0 });

  // Another configuration cannot attach.
  assert.throws(() => new Bulkhead({ shared: name, maxConcurrent: 4, maxQueue: 16 }), {
    code: 'ESHAREDMISMATCH',
    message: /: maxConcurrent differs\)$/,
  });
  assert.throws(() => new Bulkhead({ shared: name, maxConcurrent: 3, maxQueue: 16, shares: { low: 50 } }), {
    code: 'ESHAREDMISMATCH',
    message: /: shares differs\)$/,
  });
  await Promise.all([0, 1, 2].map((i) => ask(workers[i], 'exit')));
});

test('a shared bulkhead polls for grants made elsewhere only while it has waiters', { skip, timeout }, async (t) => {
  const name = `node-bulkhead-poll-${process.pid}`;
  Bulkhead.unlinkShared(name);
  t.after(() => Bulkhead.unlinkShared(name));
  // Two views of one semaphore in this process: a's release hands its permit to
  // b's waiter, and only b's poll timer can notice.
  const a = new Bulkhead({ shared: name, maxConcurrent: 1, maxQueue: 4 });
  const b = new Bulkhead({ shared: name, maxConcurrent: 1, maxQueue: 4 });
  const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
  const base = timers();

  const g = deferred();
  const holder = a.execute(() => g.promise);
  let ranAt;
  const waiter = b.execute(async () => { ranAt = performance.now(); return 'b ran'; });
  await delay(20);
  assert.equal(ranAt, undefined, 'still waiting: polling grants nothing by itself');
  assert.equal(b.metrics().queued, 1);
  assert.equal(timers(), base + 1, 'one poll timer while b has a waiter');
  const released = performance.now();
  g.resolve();
  await holder;
  assert.equal(await waiter, 'b ran');
  assert.ok(ranAt - released < 100, `b noticed its grant ${ranAt - released} ms after a's release`);
  assert.equal(timers(), base, 'the timer is gone once the queue is empty');
  assert.deepEqual(occupancy(b), { active: 0, queued: 0, permits: 0, tickets: 0 });

  // A waiter that gives up stops the timer at once too.
  const g2 = deferred();
  const holder2 = a.execute(() => g2.promise);
  const ac = new AbortController();
  const aborted = b.execute(async () => 'never', { signal: ac.signal });
  await delay(5);
  assert.equal(timers(), base + 1);
  ac.abort();
  assert.equal((await rejection(aborted)).code, 'EABORTED');
  assert.equal(timers(), base);
  g2.resolve();
  await holder2;
  assert.deepEqual(occupancy(a), { active: 0, queued: 0, permits: 0, tickets: 0 });

  // A local bulkhead's waiters never need the timer (releases resolve them).
  const local = new Bulkhead({ maxConcurrent: 1, maxQueue: 4 });
  const g3 = deferred();
  const holder3 = local.execute(() => g3.promise);
  const waiter3 = local.execute(async () => 'local');
  await Promise.resolve();
  assert.equal(timers(), base);
  g3.resolve();
  await holder3;
  assert.equal(await waiter3, 'local');
});

test('a process waiting on a shared bulkhead stays alive until served, then exits at once', { skip, timeout }, async (t) => {
  const name = `node-bulkhead-wait-${process.pid}`;
  Bulkhead.unlinkShared(name);
  t.after(() => Bulkhead.unlinkShared(name));
  const mine = new Bulkhead({ shared: name, maxConcurrent: 1, maxQueue: 4 });
  const g = deferred();
  const holder = mine.execute(() => g.promise);

  const child = spawn(process.execPath, [path.join(__dirname, 'fixtures', 'shared-wait.js')], {
    env: { ...process.env, SEAWALL_SHARED: name },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  t.after(() => child.kill('SIGKILL'));
  const lines = [];
  const queued = deferred();
  let buffered = '';
  child.stdout.on('data', (d) => {
    buffered += d;
    let i;
    while ((i = buffered.indexOf('\n')) >= 0) {
      lines.push(JSON.parse(buffered.slice(0, i)));
      buffered = buffered.slice(i + 1);
      if (lines.length === 1) queued.resolve(lines[0]);
    }
  });
  const exit = new Promise((r) => child.once('exit', (code) => r({ code, at: performance.now() })));
  const q = await Promise.race([queued.promise, exit.then((e) => ({ exitedEarly: e }))]);
  assert.deepEqual(q, { phase: 'queued', queued: 1, timers: ['Timeout'] });

  await delay(300);
  assert.equal(child.exitCode, null, 'the waiting process is still alive');
  assert.equal(mine.metrics().queued, 1);
  const released = performance.now();
  g.resolve();
  await holder;
  const { code, at } = await exit;
  assert.equal(code, 0);
  assert.deepEqual(lines[1], { phase: 'done', value: 'granted', timers: [] });
  assert.ok(at - released < 2000, `exited ${at - released} ms after the release`);
  assert.deepEqual(occupancy(mine), { active: 0, queued: 0, permits: 0, tickets: 0 });
});

test('one name may be a breaker and a bulkhead at once; a mismatch says which structure', { skip, timeout }, (t) => {
  const name = `node-families-${process.pid}`;
  t.after(() => {
    Bulkhead.unlinkShared(name);
    CircuitBreaker.unlinkShared(name);
  });
  const b = new Bulkhead({ shared: name, maxConcurrent: 2 });
  const c = new CircuitBreaker({ shared: name, minimumCalls: 5 });
  assert.equal(b.name, name);
  assert.equal(c.name, name);
  const e = (() => {
    try {
      return new Bulkhead({ shared: name, maxConcurrent: 3 });
    } catch (err) {
      return err;
    }
  })();
  assert.equal(e.code, 'ESHAREDMISMATCH');
  assert.equal(e.shared, name);
  assert.match(e.message, /^shared bulkhead 'node-families-\d+' exists with another configuration: every process must give it the same maxConcurrent, maxQueue and shares \(/);
});
