'use strict';
// DESIGN §8, "Self-healing", under a kill storm: Node processes loop on
// acquire-with-wait on one shared bulkhead (max 3, queue 8: most of their
// callers queue) and are SIGKILLed at random moments, many times, each
// replaced by a new one — so processes die holding permits, waiting in the
// queue, and inside the native enqueue, poll, cancel and release steps. Nobody
// calls reclaimAbandoned, not the processes (fixtures/self-healing-storm.js)
// and not this test. Checked:
//   - while it lasts, the calls of every process (measured inside their
//     permits, on the host's one monotonic clock) never overlap more than 3
//     deep, and no live waiter loses its place to a look for dead holders;
//   - after the last kill, the living get the full limit back (3 at once);
//   - once every process is dead, a new process opening the bulkhead finds
//     it whole (active 0, queued 0, nothing outstanding) and takes the full
//     limit at once, the fourth caller queueing behind.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { randomInt } = require('node:crypto');
const { Bulkhead, sharedSupported, monotonicMs } = require('..');
const { delay, peakOverlap } = require('./helpers');

const skip = !sharedSupported() && 'no native 128-bit atomics';
const STORM = path.join(__dirname, 'fixtures', 'self-healing-storm.js');
const OPEN = path.join(__dirname, 'fixtures', 'self-healing-open.js');
const LIMIT = 3;
const QUEUE = 8;
const PROCESSES = 5;
const KILLS = 60;

/** Poll `fn` every 10 ms until it is true; fails after `ms` (a liveness bound, not a speed claim). */
async function until(fn, what, ms = 10_000) {
  const end = performance.now() + ms;
  for (;;) {
    if (fn()) return;
    if (performance.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await delay(10);
  }
}

/** Every interval written to the files of `dir` (a line cut short by a kill is left out). */
function intervals(dir) {
  const all = [];
  for (const f of fs.readdirSync(dir)) {
    for (const l of fs.readFileSync(path.join(dir, f), 'utf8').split('\n')) {
      const m = /^(\d+(?:\.\d+)?) (\d+(?:\.\d+)?)$/.exec(l);
      if (m) all.push([Number(m[1]), Number(m[2])]);
    }
  }
  return all;
}

function occupancy(bulkhead) {
  const m = bulkhead.metrics();
  return { active: m.active, queued: m.queued, permits: m.permitsOutstanding, tickets: m.ticketsOutstanding };
}

/** A child running `script` with SEAWALL_SHARED and `env`: its JSON stdout lines, `ready`, `exited`. */
function start(script, name, env = {}) {
  const child = spawn(process.execPath, [script], {
    env: { ...process.env, SEAWALL_SHARED: name, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const p = { child, pid: child.pid, lines: [], ready: false };
  p.exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  let buffered = '';
  child.stdout.on('data', (d) => {
    buffered += d;
    let i;
    while ((i = buffered.indexOf('\n')) >= 0) {
      const m = JSON.parse(buffered.slice(0, i));
      buffered = buffered.slice(i + 1);
      if (m.ready !== undefined) p.ready = true;
      p.lines.push(m);
    }
  });
  return p;
}

test(`a kill storm on a shared bulkhead's queue: ${KILLS} SIGKILLs of processes waiting on it, no reclaim call; a new process then finds it whole`, { skip, timeout: 120_000 }, async (t) => {
  const name = `node-heal-storm-${process.pid}`;
  Bulkhead.unlinkShared(name);
  t.after(() => Bulkhead.unlinkShared(name));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'seawall-storm-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const all = [];
  const live = new Set();
  const spawnOne = () => {
    const p = start(STORM, name, { SEAWALL_INTERVALS: path.join(dir, `${all.length}.log`) });
    all.push(p);
    live.add(p);
    p.exited.then(() => live.delete(p));
  };
  t.after(() => {
    for (const p of live) p.child.kill('SIGKILL');
  });
  for (let i = 0; i < PROCESSES; i++) spawnOne();

  // The storm: a random running process killed every 5-60 ms, a new one
  // started in its place.
  let lastKill;
  for (let kills = 0; kills < KILLS; kills++) {
    await until(() => [...live].some((p) => p.ready), 'a storm process running');
    await delay(randomInt(5, 60));
    const running = [...live].filter((p) => p.ready);
    const victim = running[randomInt(running.length)];
    victim.child.kill('SIGKILL');
    assert.deepEqual(await victim.exited, { code: null, signal: 'SIGKILL' });
    lastKill = monotonicMs();
    spawnOne();
  }

  // The living get the full limit back after the last kill.
  await until(() => peakOverlap(intervals(dir).filter(([s]) => s > lastKill)) === LIMIT, `${LIMIT} calls at once after the last kill`);
  const storm = intervals(dir);
  assert.equal(peakOverlap(storm), LIMIT, `never more than ${LIMIT} calls at once over ${storm.length} calls`);

  // Freeze every process wherever it is (inside a native step, maybe), and look:
  // this process's view only reads (opening looks for dead holders only, and
  // every holder is alive, if stopped). Frozen again until something is held.
  await until(() => [...live].every((p) => p.ready), 'every storm process running');
  const view = new Bulkhead({ shared: name, maxConcurrent: LIMIT, maxQueue: QUEUE });
  let frozen;
  for (let tries = 0; ; tries++) {
    for (const p of live) p.child.kill('SIGSTOP');
    frozen = occupancy(view);
    if (frozen.permits + frozen.tickets > 0 || tries === 20) break;
    for (const p of live) p.child.kill('SIGCONT');
    await delay(20);
  }
  assert.ok(frozen.permits + frozen.tickets > 0, `something held at the freeze: ${JSON.stringify(frozen)}`);
  const last = [...live];
  for (const p of last) p.child.kill('SIGKILL');
  for (const p of last) assert.deepEqual(await p.exited, { code: null, signal: 'SIGKILL' });
  assert.deepEqual(all.flatMap((p) => p.lines.filter((l) => l.error !== undefined)), [], 'no live waiter lost its place');
  // Every process is dead, and nobody has asked since: what they held is still taken.
  assert.deepEqual(occupancy(view), frozen);

  const fresh = start(OPEN, name);
  t.after(() => fresh.child.kill('SIGKILL'));
  const exit = await Promise.race([fresh.exited, delay(20_000, 'still running after 20 s', { ref: false })]);
  assert.deepEqual(exit, { code: 0, signal: null });
  const zero = { active: 0, queued: 0, permits: 0, tickets: 0 };
  assert.deepEqual(fresh.lines, [{
    opened: zero,
    three: { started: LIMIT, active: LIMIT, queued: 0, permits: LIMIT, tickets: 0 },
    four: { started: LIMIT, active: LIMIT, queued: 1, permits: LIMIT, tickets: 1 },
    started: LIMIT + 1,
    done: zero,
  }]);
  assert.deepEqual(occupancy(view), zero);
  t.diagnostic(`${all.length} processes, ${KILLS + last.length} SIGKILLs, ${storm.length} calls in the storm; held at the last kill: ${JSON.stringify(frozen)}`);
});
