'use strict';
// DESIGN §8, "Self-healing", end to end: an Express (and a Fastify) service
// under node:cluster, 4 workers calling an upstream through one shared
// bulkhead (max 4) and one shared breaker, workers SIGKILLed while they hold
// what those share. Nobody calls reclaimAbandoned — not the service
// (fixtures/self-healing-cluster.js), not this test: the next caller that
// needs what a dead worker held, or the next process that opens the region,
// gets it back.
//
// The upstream is a server of this process on a loopback port: it answers at
// once, fails (500), or holds every request until released, and counts the
// requests in flight (one ends when it is answered or its connection closes —
// a killed worker's connections close with it) and by which worker, from the
// `x-worker` header. This process also opens a view of both regions; it only
// reads them (metrics() looks for no dead holder), so the figures it shows
// between a kill and the next call are what the kill left.
const test = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const path = require('node:path');
const { fork } = require('node:child_process');
const { Bulkhead, CircuitBreaker, sharedSupported, monotonicMs } = require('..');
const { delay, deferred } = require('./helpers');

const skip = !sharedSupported() && 'no native 128-bit atomics';
const CLUSTER = path.join(__dirname, 'fixtures', 'self-healing-cluster.js');
const WORKERS = 4;
const LIMIT = 4;
// DESIGN §8: a look for dead holders runs at most every 100 ms per region; a
// caller that needs what the dead held has it well within this.
const HEALED_WITHIN_MS = 1000;
// Calls one after another until a breaker closes: ten or so, each an HTTP
// round trip through the cluster, on a loaded machine (a liveness bound).
const CLOSED_WITHIN_MS = 5000;

/** Poll `fn` every 5 ms until it is true; fails after `ms` (a liveness bound, not a speed claim). */
async function until(fn, what, ms = 10_000) {
  const end = performance.now() + ms;
  for (;;) {
    if (fn()) return;
    if (performance.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await delay(5);
  }
}

/** The regions of one test: a bulkhead of LIMIT permits and a breaker opened by 3 failures in a row. */
function regionsOf(label) {
  const name = `node-heal-${label}-${process.pid}`;
  return {
    bulkhead: { name, maxConcurrent: LIMIT, maxQueue: 16 },
    breaker: {
      name,
      consecutiveFailures: 3,
      openDurationMs: 300,
      openJitterFactor: 0,
      halfOpenMaxCalls: 2,
      halfOpenSuccessThreshold: 2,
      // A stuck half-open never times out by itself: only healing can end it.
      halfOpenMaxWaitMs: null,
    },
  };
}

/** This process's views of the regions (created here if they do not exist yet); unlinked after the test. */
function views(t, regions) {
  const { name: b, ...bulkheadOptions } = regions.bulkhead;
  const { name: c, ...breakerOptions } = regions.breaker;
  Bulkhead.unlinkShared(b);
  CircuitBreaker.unlinkShared(c);
  t.after(() => {
    Bulkhead.unlinkShared(b);
    CircuitBreaker.unlinkShared(c);
  });
  return {
    bulkhead: new Bulkhead({ shared: b, ...bulkheadOptions }),
    breaker: new CircuitBreaker({ shared: c, ...breakerOptions }),
  };
}

function occupancy(bulkhead) {
  const m = bulkhead.metrics();
  return { active: m.active, queued: m.queued, permits: m.permitsOutstanding, tickets: m.ticketsOutstanding };
}

/** The upstream: `mode` 'fast' (200 at once), 'fail' (500 at once) or 'hold' (200 once released). */
async function startUpstream(t) {
  const u = {
    mode: 'fast',
    inFlight: 0,
    maxInFlight: 0,
    /** Requests in flight by worker pid. */
    byPid: new Map(),
    /** `{ pid, at, inFlight }` of every request as it arrived (`at`: monotonic ms). */
    arrivals: [],
    held: [],
    url: undefined,
  };
  const server = http.createServer((req, res) => {
    const pid = Number(req.headers['x-worker']);
    u.inFlight += 1;
    u.maxInFlight = Math.max(u.maxInFlight, u.inFlight);
    u.byPid.set(pid, (u.byPid.get(pid) || 0) + 1);
    u.arrivals.push({ pid, at: monotonicMs(), inFlight: u.inFlight });
    res.once('close', () => {
      u.inFlight -= 1;
      u.byPid.set(pid, u.byPid.get(pid) - 1);
    });
    if (u.mode === 'fail') {
      res.writeHead(500);
      res.end('down');
    } else if (u.mode === 'hold') {
      u.held.push(res);
    } else {
      res.writeHead(200);
      res.end('ok');
    }
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  u.url = `http://127.0.0.1:${server.address().port}`;
  t.after(() => new Promise((resolve) => {
    server.closeAllConnections();
    server.close(resolve);
  }));
  /** Answer every held request (those whose worker died are gone already). */
  u.release = () => {
    for (const res of u.held.splice(0)) {
      if (!res.destroyed) {
        res.writeHead(200);
        res.end('ok');
      }
    }
  };
  /** `[pid, requests]` of each worker with requests in flight. */
  u.holders = () => [...u.byPid].filter(([, n]) => n > 0);
  /** Start counting the peak afresh. */
  u.resetPeak = () => {
    u.maxInFlight = u.inFlight;
    u.arrivals.length = 0;
  };
  return u;
}

/**
 * A cluster primary of fixtures/self-healing-cluster.js with `regions`, its
 * workers listening. `workers`: the pids alive; `exited(pid)`: resolves with
 * `{ code, signal }` once the primary saw worker `pid` end; `respawned`: pids of
 * replacements, as they come.
 */
async function startCluster(t, { framework = 'express', regions, upstream, respawn = false }) {
  const primary = fork(CLUSTER, {
    env: {
      ...process.env,
      SEAWALL_REGIONS: JSON.stringify(regions),
      SEAWALL_UPSTREAM: upstream.url,
      SEAWALL_FRAMEWORK: framework,
      SEAWALL_WORKERS: String(WORKERS),
      SEAWALL_RESPAWN: respawn ? '1' : '0',
    },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const c = { primary, port: undefined, workers: new Set(), respawned: [], exits: new Map() };
  c.exited = (pid) => {
    if (!c.exits.has(pid)) c.exits.set(pid, deferred());
    return c.exits.get(pid).promise;
  };
  const primaryExit = new Promise((resolve) => primary.once('exit', (code, signal) => resolve({ code, signal })));
  c.primaryExited = primaryExit;
  // The primary first, so that it forks no replacement for the workers killed next.
  t.after(async () => {
    primary.kill('SIGKILL');
    await primaryExit;
    for (const pid of c.workers) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch { /* gone already */ }
    }
  });
  const ready = deferred();
  primary.on('message', (m) => {
    if (m.event === 'ready') {
      c.port = m.port;
      m.workers.forEach((pid) => c.workers.add(pid));
      ready.resolve();
    } else if (m.event === 'exit') {
      c.workers.delete(m.pid);
      c.exited(m.pid);
      c.exits.get(m.pid).resolve({ code: m.code, signal: m.signal });
    } else if (m.event === 'respawned') {
      c.workers.add(m.pid);
      c.respawned.push(m.pid);
    }
  });
  let timer;
  const bound = new Promise((resolve, reject) => {
    timer = setTimeout(() => reject(new Error('the cluster did not start within 20 s')), 20_000);
  });
  try {
    await Promise.race([ready.promise, primaryExit.then((e) => { throw new Error(`the primary exited (${e.code}, ${e.signal}) before it was ready`); }), bound]);
  } finally {
    clearTimeout(timer);
  }
  return c;
}

/** SIGKILL workers `pids` and wait until the primary saw each of them die of it. */
async function killWorkers(c, pids) {
  for (const pid of pids) process.kill(pid, 'SIGKILL');
  for (const pid of pids) assert.deepEqual(await c.exited(pid), { code: null, signal: 'SIGKILL' });
}

/** GET /call on a connection of its own (the cluster deals connections round-robin): `{ status, body }`, or `{ error }`. */
function call(c) {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port: c.port, path: '/call', agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { text += d; });
      res.on('end', () => resolve({ status: res.statusCode, body: JSON.parse(text) }));
      res.on('error', (e) => resolve({ error: e.code || e.message }));
    });
    req.on('error', (e) => resolve({ error: e.code || e.message }));
  });
}

/**
 * `n` calls at once with the upstream holding them: the upstream reaches
 * LIMIT in flight (returned: ms from the burst to that moment); then it
 * answers them all, and every call answers 200.
 */
async function burst(c, upstream, n) {
  upstream.mode = 'hold';
  upstream.resetPeak();
  const sentAt = monotonicMs();
  const answers = Array.from({ length: n }, () => call(c));
  await until(() => upstream.inFlight === LIMIT, `${LIMIT} calls in flight at the upstream`);
  const full = upstream.arrivals.find((a) => a.inFlight === LIMIT);
  // Whoever is in flight now stays so until released: nothing more may get in.
  await delay(50);
  assert.equal(upstream.inFlight, LIMIT);
  upstream.mode = 'fast';
  upstream.release();
  const done = await Promise.all(answers);
  assert.deepEqual(done.map((r) => r.status), Array(n).fill(200), JSON.stringify(done.filter((r) => r.status !== 200)));
  assert.equal(upstream.maxInFlight, LIMIT, 'never more than the limit in flight at the upstream, and the full limit reached');
  return full.at - sentAt;
}

for (const framework of ['express', 'fastify']) {
  test(`${framework} under node:cluster: workers SIGKILLed holding shared bulkhead permits; the next caller that needs them gets the full limit back`, { skip, timeout: 60_000 }, async (t) => {
    const regions = regionsOf(`permits-${framework}`);
    const view = views(t, regions);
    const upstream = await startUpstream(t);
    const c = await startCluster(t, { framework, regions, upstream });
    assert.equal(c.workers.size, WORKERS);

    // A slow upstream phase: LIMIT calls hold every permit.
    upstream.mode = 'hold';
    const first = Array.from({ length: LIMIT }, () => call(c));
    await until(() => upstream.inFlight === LIMIT, `${LIMIT} calls held at the upstream`);
    assert.deepEqual(occupancy(view.bulkhead), { active: LIMIT, queued: 0, permits: LIMIT, tickets: 0 });

    // Every worker holding a permit is killed but the one holding fewest, which
    // stays to serve (no replacement is forked: the callers' look is under test,
    // not a new process's open).
    const holders = upstream.holders().sort((a, b) => a[1] - b[1]);
    const alive = [...c.workers];
    const survivor = alive.find((pid) => !holders.some(([p]) => p === pid)) ?? holders[0][0];
    const killed = holders.filter(([pid]) => pid !== survivor);
    const leaked = killed.reduce((n, [, k]) => n + k, 0);
    assert.ok(leaked >= 1, `holders ${JSON.stringify(holders)}`);
    await killWorkers(c, killed.map(([pid]) => pid));
    await until(() => upstream.inFlight === LIMIT - leaked, 'the dead workers\' upstream connections closed');
    // Nobody has asked since: what the dead held is still taken.
    assert.deepEqual(occupancy(view.bulkhead), { active: LIMIT, queued: 0, permits: LIMIT, tickets: 0 });

    // The survivors' calls end; the dead workers' permits stay taken.
    upstream.mode = 'fast';
    upstream.release();
    const firstDone = await Promise.all(first);
    assert.equal(firstDone.filter((r) => r.status === 200).length, LIMIT - leaked);
    assert.equal(firstDone.filter((r) => r.error !== undefined).length, leaked, 'the calls of killed workers got no answer');
    assert.deepEqual(occupancy(view.bulkhead), { active: leaked, queued: 0, permits: leaked, tickets: 0 });

    // Twice the limit at once: the first that finds no permit free makes the
    // region look for dead holders, and the upstream sees the full limit.
    const healedMs = await burst(c, upstream, 2 * LIMIT);
    t.diagnostic(`${framework}: ${killed.length} workers killed holding ${leaked} permits; ${LIMIT} in flight ${healedMs.toFixed(1)} ms after the burst`);
    assert.ok(healedMs < HEALED_WITHIN_MS, `the full limit ${healedMs} ms after the burst`);
    await until(() => occupancy(view.bulkhead).active === 0, 'every permit given back');
    assert.deepEqual(occupancy(view.bulkhead), { active: 0, queued: 0, permits: 0, tickets: 0 });
  });
}

test('express under node:cluster: the workers holding the half-open probes are SIGKILLed; once the upstream heals the breaker probes again and closes', { skip, timeout: 60_000 }, async (t) => {
  const regions = regionsOf('probes');
  const view = views(t, regions);
  const upstream = await startUpstream(t);
  const c = await startCluster(t, { regions, upstream });

  // The upstream fails: three failures in a row open the breaker, once.
  upstream.mode = 'fail';
  const failed = [];
  while (view.breaker.metrics().state !== 'open') {
    failed.push(await call(c));
    assert.ok(failed.length <= 3, 'open after three failures in a row');
  }
  assert.deepEqual(failed.map((r) => [r.status, r.body.code]), Array(3).fill([502, 'EUPSTREAM']));
  assert.deepEqual((await call(c)).body.code, 'ECIRCUITOPEN');

  // After the open period, two calls become the two half-open probes and hang
  // at the (slow) upstream; a third is refused while their workers live.
  await delay(regions.breaker.openDurationMs + 50);
  upstream.mode = 'hold';
  const probes = [call(c), call(c)];
  await until(() => upstream.inFlight === 2, 'two probes at the upstream');
  let m = view.breaker.metrics();
  assert.deepEqual([m.state, m.halfOpenInFlight], ['halfOpen', 2]);
  const refused = await call(c);
  assert.deepEqual([refused.status, refused.body.code], [503, 'ECIRCUITOPEN']);
  assert.equal(view.breaker.metrics().halfOpenInFlight, 2);

  const holders = upstream.holders().map(([pid]) => pid);
  assert.ok(holders.length >= 1 && holders.length <= 2);
  await killWorkers(c, holders);
  await until(() => upstream.inFlight === 0, 'the probes\' upstream connections closed');
  for (const r of await Promise.all(probes)) assert.notEqual(r.error, undefined);
  m = view.breaker.metrics();
  assert.deepEqual([m.state, m.halfOpenInFlight, m.totals.ignored], ['halfOpen', 2, 0], 'the dead probes are still held');

  // The upstream heals. Callers come every 10 ms; one refused in half-open
  // (when the region's look is due) gives the dead probes back as ignored, the
  // next two calls are probes that succeed, and the breaker closes.
  upstream.mode = 'fast';
  const start = monotonicMs();
  const after = [];
  while (view.breaker.metrics().state !== 'closed') {
    assert.ok(monotonicMs() - start < CLOSED_WITHIN_MS, `not closed ${CLOSED_WITHIN_MS} ms after the upstream healed: ${JSON.stringify(after)}`);
    after.push(await call(c));
    await delay(10);
  }
  const closedMs = monotonicMs() - start;
  t.diagnostic(`probes held by ${holders.length} killed worker(s); closed after ${after.length} calls, ${closedMs.toFixed(1)} ms; answers ${after.map((r) => r.status).join(' ')}`);
  // The last two calls are the probes that closed it; every earlier one was refused.
  assert.deepEqual(after.slice(-2).map((r) => r.status), [200, 200]);
  assert.deepEqual(after.slice(0, -2).map((r) => r.body.code), Array(after.length - 2).fill('ECIRCUITOPEN'));
  m = view.breaker.metrics();
  assert.deepEqual(
    { state: m.state, transitions: m.totals.transitions, halfOpenInFlight: m.halfOpenInFlight, ignored: m.totals.ignored, failures: m.totals.failures, successes: m.totals.successes },
    { state: 'closed', transitions: 3, halfOpenInFlight: 0, ignored: 2, failures: 3, successes: 2 },
  );
  // Closed for everyone: a full burst goes through.
  await burst(c, upstream, 2 * LIMIT);
});

test('express under node:cluster: a cluster stopped with every worker SIGKILLed mid-call leaks its permits, tickets and breaker permits; a new primary with the same regions starts whole', { skip, timeout: 60_000 }, async (t) => {
  const regions = regionsOf('restart');
  const view = views(t, regions);
  const upstream = await startUpstream(t);
  const before = await startCluster(t, { regions, upstream });

  // LIMIT calls hold every permit (and a breaker permit each); LIMIT more queue.
  upstream.mode = 'hold';
  const calls = Array.from({ length: 2 * LIMIT }, () => call(before));
  await until(() => upstream.inFlight === LIMIT && view.bulkhead.metrics().queued === LIMIT, `${LIMIT} calls held and ${LIMIT} queued`);
  // Frozen first, so that no worker's look for dead holders runs between the kills.
  for (const pid of before.workers) process.kill(pid, 'SIGSTOP');
  await killWorkers(before, [...before.workers]);
  before.primary.kill('SIGKILL');
  assert.deepEqual(await before.primaryExited, { code: null, signal: 'SIGKILL' });
  for (const r of await Promise.all(calls)) assert.notEqual(r.error, undefined);
  assert.deepEqual(occupancy(view.bulkhead), { active: LIMIT, queued: LIMIT, permits: LIMIT, tickets: LIMIT });
  assert.equal(view.breaker.metrics().permitsOutstanding, LIMIT);
  await until(() => upstream.inFlight === 0, 'the dead workers\' upstream connections closed');

  // A new primary (forking replacements as a service would) opens the same
  // regions: they are whole before its first call.
  const after = await startCluster(t, { regions, upstream, respawn: true });
  assert.deepEqual(occupancy(view.bulkhead), { active: 0, queued: 0, permits: 0, tickets: 0 });
  const m = view.breaker.metrics();
  assert.deepEqual(
    { state: m.state, permitsOutstanding: m.permitsOutstanding, admitted: m.totals.admitted, ignored: m.totals.ignored },
    { state: 'closed', permitsOutstanding: 0, admitted: LIMIT, ignored: LIMIT },
    'the dead calls\' breaker permits were given back as ignored',
  );
  const fullMs = await burst(after, upstream, 2 * LIMIT);
  t.diagnostic(`after the restart, ${LIMIT} in flight ${fullMs.toFixed(1)} ms after the burst`);
  assert.deepEqual(occupancy(view.bulkhead), { active: 0, queued: 0, permits: 0, tickets: 0 });
});
