'use strict';
// The Express middleware and the Fastify plugin over real servers on loopback
// (ephemeral ports): priority shedding at the door (DESIGN §5), the request
// deadline in the ambient call context, the health report, chaos in a handler.
const test = require('node:test');
const assert = require('node:assert/strict');
const express = require('express');
const Fastify = require('fastify');
const seawall = require('..');
const { middleware, health } = require('seawall/express');
const seawallFastify = require('seawall/fastify');
const { deferred, delay } = require('./helpers');

const { Bulkhead, Health, CircuitBreaker, timeout, wrap, chaos, callContext, isSeawallError } = seawall;

/** Poll `fn` until it is true (fails after 5 s). */
async function until(fn, what) {
  for (let i = 0; i < 500; i++) {
    if (fn()) return;
    await delay(10);
  }
  throw new Error(`timed out waiting for ${what}`);
}

/**
 * A server of `kind` on 127.0.0.1 port 0 with the seawall middleware (options
 * `mw`, health `healthOptions`) and `routes` (method, path, async (req) =>
 * [status, body]); `url`, `close()`.
 */
async function serve(kind, mw, routes, healthOptions) {
  if (kind === 'express') {
    const app = express();
    app.use(middleware(mw));
    app.use(express.json());
    if (healthOptions !== undefined) app.get('/health', health(healthOptions));
    for (const [method, path, h] of routes) {
      app[method](path, async (req, res) => {
        const [status, body] = await h(req);
        res.status(status).json(body);
      });
    }
    const server = await new Promise((resolve) => {
      const s = app.listen(0, '127.0.0.1', () => resolve(s));
    });
    return {
      url: `http://127.0.0.1:${server.address().port}`,
      close: () => new Promise((resolve) => {
        server.closeAllConnections();
        server.close(resolve);
      }),
    };
  }
  // Every connection ends with the server (as express's closeAllConnections),
  // so a client's idle keep-alive socket does not hold the close for seconds.
  const app = Fastify({ forceCloseConnections: true });
  await app.register(seawallFastify, { ...mw, ...(healthOptions !== undefined ? { health: healthOptions } : {}) });
  for (const [method, path, h] of routes) {
    app[method](path, async (req, reply) => {
      const [status, body] = await h(req);
      reply.code(status);
      return body;
    });
  }
  await app.listen({ port: 0, host: '127.0.0.1' });
  return { url: `http://127.0.0.1:${app.server.address().port}`, close: () => app.close() };
}

async function get(url, headers = {}, signal) {
  const r = await fetch(url, { headers, signal });
  return { status: r.status, retryAfter: r.headers.get('retry-after'), body: await r.json() };
}

for (const kind of ['express', 'fastify']) {
  test(`${kind}: priority shedding answers 503 with Retry-After, never queues a shed request, and releases on close`, async (t) => {
    // Limits max(1, ⌊4·share/100⌋): critical 4, high 3, normal 2, low 1.
    const bulkhead = new Bulkhead({ maxConcurrent: 4, maxQueue: 2, shares: { critical: 100, high: 75, normal: 50, low: 25 } });
    const gate = deferred();
    const hold = async () => {
      await gate.promise;
      return [200, { ok: true }];
    };
    const srv = await serve(kind, { bulkhead, retryAfterMs: 1500 }, [['get', '/slow', hold], ['get', '/payments/slow', hold], ['get', '/health/slow', hold]]);
    t.after(() => srv.close());
    const held = [get(`${srv.url}/slow`), get(`${srv.url}/slow`)];
    await until(() => bulkhead.metrics().active === 2, '2 normal requests admitted');
    // A third normal one is shed at once, though the queue has room.
    const shed = await get(`${srv.url}/slow`);
    assert.equal(shed.status, 503);
    assert.equal(shed.retryAfter, '2');
    assert.equal(shed.body.reason, 'shed');
    assert.equal(bulkhead.metrics().queued, 0);
    // High priority still gets in, up to 3.
    held.push(get(`${srv.url}/payments/slow`));
    await until(() => bulkhead.metrics().active === 3, 'a high priority request admitted');
    assert.equal((await get(`${srv.url}/payments/slow`)).body.reason, 'shed');
    // Critical (/health by default) takes the 4th permit, then a 5th waits in the queue.
    held.push(get(`${srv.url}/health/slow`));
    await until(() => bulkhead.metrics().active === 4, 'a critical request admitted');
    assert.equal((await get(`${srv.url}/slow`)).body.reason, 'shed');
    const queued = get(`${srv.url}/health/slow`);
    await until(() => bulkhead.metrics().queued === 1, 'a critical request queued');
    gate.resolve();
    for (const r of await Promise.all([...held, queued])) assert.equal(r.status, 200);
    await until(() => bulkhead.metrics().active === 0, 'every permit released');
    const m = bulkhead.metrics();
    assert.equal(m.admitted, 5);
    assert.equal(m.rejected.shed, 3);
  }, { timeout: 20000 });

  test(`${kind}: a full bulkhead answers 503 'full'; a client that goes away gives its permit back`, async (t) => {
    const bulkhead = new Bulkhead({ maxConcurrent: 1 });
    const gate = deferred();
    let started = 0;
    const srv = await serve(kind, { bulkhead }, [['get', '/slow', async () => {
      started += 1;
      await gate.promise;
      return [200, {}];
    }]]);
    t.after(() => srv.close());
    const ac = new AbortController();
    const gone = get(`${srv.url}/slow`, {}, ac.signal).catch((e) => e.name);
    await until(() => bulkhead.metrics().active === 1, 'the first request admitted');
    const full = await get(`${srv.url}/slow`);
    assert.deepEqual([full.status, full.retryAfter, full.body.reason], [503, '1', 'full']);
    ac.abort();
    assert.equal(await gone, 'AbortError');
    await until(() => bulkhead.metrics().active === 0, 'the permit of the request whose client left');
    gate.resolve();
    assert.equal(started, 1);
  }, { timeout: 20000 });

  test(`${kind}: the request deadline header bounds every policy inside the handler, and the client's body still arrives`, async (t) => {
    const slowCall = ({ signal }) => new Promise((resolve, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
    const srv = await serve(kind, { maxDeadlineMs: 5000 }, [
      ['get', '/deadline', async () => {
        try {
          await timeout(60000).execute(slowCall);
          return [200, { code: null }];
        } catch (e) {
          return [504, { code: e.code, message: e.message }];
        }
      }],
      ['get', '/context', async () => {
        const ctx = callContext();
        return [200, { deadline: ctx.deadline === undefined ? null : ctx.deadline.remainingMs(), signal: ctx.signal instanceof AbortSignal }];
      }],
      ['post', '/echo', async (req) => [200, { body: req.body, remaining: callContext().deadline.remainingMs() }]],
      ['get', '/chaos', async () => {
        chaos('mw-hang', { enabled: true, hang: true });
        try {
          await wrap(timeout(60000), chaos('mw-hang')).execute(async () => 'never');
          return [200, {}];
        } catch (e) {
          return [504, { code: e.code }];
        }
      }],
    ]);
    t.after(() => srv.close());
    // The deadline starts when the request arrives, so the client waits at least 80 ms.
    const t0 = performance.now();
    const r = await get(`${srv.url}/deadline`, { 'x-request-deadline-ms': '80' });
    const took = performance.now() - t0;
    assert.equal(r.status, 504);
    assert.equal(r.body.code, 'ETIMEDOUT');
    assert.match(r.body.message, /deadline exceeded/, r.body.message);
    assert.ok(took >= 78 && took < 4000, `${took} ms`);
    // Capped by maxDeadlineMs.
    const capped = await get(`${srv.url}/context`, { 'x-request-deadline-ms': '100000' });
    assert.ok(capped.body.deadline > 4000 && capped.body.deadline <= 5000, String(capped.body.deadline));
    assert.deepEqual((await get(`${srv.url}/context`)).body, { deadline: null, signal: true });
    for (const bad of ['abc', '0', '-5', '1e3']) {
      const b = await get(`${srv.url}/context`, { 'x-request-deadline-ms': bad });
      assert.equal(b.status, 400, bad);
      assert.match(b.body.error, /x-request-deadline-ms/);
    }
    const echoed = await fetch(`${srv.url}/echo`, {
      method: 'POST', headers: { 'content-type': 'application/json', 'x-request-deadline-ms': '3000' }, body: JSON.stringify({ a: [1, 2] }),
    });
    const e = await echoed.json();
    assert.deepEqual(e.body, { a: [1, 2] });
    assert.ok(e.remaining > 0 && e.remaining <= 3000);
    // An injected hang under the request's deadline ends when the deadline does.
    const c = await get(`${srv.url}/chaos`, { 'x-request-deadline-ms': '50' });
    assert.deepEqual([c.status, c.body.code], [504, 'ETIMEDOUT']);
    chaos('mw-hang').set({ enabled: false });
  }, { timeout: 20000 });

  test(`${kind}: the health endpoint reports each dependency and answers 503 when a critical one is unhealthy`, async (t) => {
    const invHealth = new Health();
    const breaker = new CircuitBreaker({ name: `inv-${kind}` });
    const recs = new Health();
    const srv = await serve(kind, {}, [], { dependencies: { inventory: { health: invHealth, breaker }, recommendations: { health: recs, critical: false } } });
    t.after(() => srv.close());
    let h = await get(`${srv.url}/health`);
    assert.equal(h.status, 200);
    assert.equal(h.body.status, 'healthy');
    assert.equal(h.body.dependencies.inventory.breaker, 'closed');
    // 2 failures in 10 calls (20 % > 10 %): degraded; 6 of 10 in recommendations
    // (60 % > 50 %): unhealthy, but not critical: the service is degraded.
    for (let i = 0; i < 10; i++) invHealth.record(5, i < 2);
    for (let i = 0; i < 10; i++) recs.record(5, i < 6);
    h = await get(`${srv.url}/health`);
    assert.equal(h.status, 200);
    assert.equal(h.body.status, 'degraded');
    assert.equal(h.body.dependencies.inventory.status, 'degraded');
    assert.equal(h.body.dependencies.recommendations.status, 'unhealthy');
    assert.equal(h.body.dependencies.inventory.health.errors, 2);
    // The breaker open: inventory, critical, is unhealthy.
    breaker.forceOpen();
    h = await get(`${srv.url}/health`);
    assert.equal(h.status, 503);
    assert.equal(h.body.status, 'unhealthy');
    assert.equal(h.body.dependencies.inventory.breaker, 'forcedOpen');
    breaker.reset();
  });
}

for (const kind of ['express', 'fastify']) {
  test(`${kind}: a request deadline longer than one setTimeout keeps (2^31 − 1 ms) is honoured, with no warning`, async (t) => {
    const warnings = [];
    const onWarning = (w) => warnings.push(w.name);
    process.on('warning', onWarning);
    t.after(() => process.off('warning', onWarning));
    const srv = await serve(kind, {}, [
      ['get', '/work', async () => {
        await delay(20);
        const ctx = callContext();
        const r = await wrap(timeout(1000)).execute(async () => 'done').catch((e) => e.code);
        return [200, { aborted: ctx.signal.aborted, r }];
      }],
    ]);
    t.after(() => srv.close());
    for (const ms of ['2147483647', '2147483648', '99999999999999999']) {
      const r = await get(`${srv.url}/work`, { 'x-request-deadline-ms': ms });
      assert.deepEqual([r.status, r.body], [200, { aborted: false, r: 'done' }], ms);
    }
    await delay(5);
    assert.deepEqual(warnings, []);
  });
}

test('bad options are EINVALIDCONFIG naming the option', () => {
  for (const [options, field] of [
    [{ bulkhead: {} }, 'bulkhead'],
    [{ getPriority: 'high' }, 'getPriority'],
    [{ deadlineHeader: '' }, 'deadlineHeader'],
    [{ retryAfterMs: 0 }, 'retryAfterMs'],
    [{ maxDeadlineMs: -1 }, 'maxDeadlineMs'],
    [{ shed: true }, 'shed'],
  ]) {
    assert.throws(() => middleware(options), (e) => isSeawallError(e, 'EINVALIDCONFIG') && e.field === field, field);
  }
  assert.throws(() => health({ dependencies: { db: {} } }), (e) => e.field === 'dependencies.db');
  assert.throws(() => health({ dependencies: { db: { health: 1 } } }), (e) => e.field === 'dependencies.db.health');
  assert.throws(() => health({}), (e) => e.field === 'dependencies');
});

test('a bad priority from getPriority reaches the framework\'s error handling', async (t) => {
  const bulkhead = new Bulkhead({ maxConcurrent: 2 });
  const app = express();
  app.use(middleware({ bulkhead, getPriority: () => 'urgent' }));
  app.get('/', (req, res) => res.json({}));
  app.use((err, req, res, next) => res.status(500).json({ code: err.code, field: err.field }));
  const server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  t.after(() => new Promise((resolve) => {
    server.closeAllConnections();
    server.close(resolve);
  }));
  const r = await get(`http://127.0.0.1:${server.address().port}/`);
  assert.deepEqual([r.status, r.body], [500, { code: 'EINVALIDCONFIG', field: 'priority' }]);
  assert.equal(bulkhead.metrics().active, 0);
});

test('a request whose deadline passes while it waits for a permit is answered 503 at its deadline', async (t) => {
  const bulkhead = new Bulkhead({ maxConcurrent: 1, maxQueue: 4 });
  const gate = deferred();
  const srv = await serve('express', { bulkhead }, [['get', '/slow', async () => {
    await gate.promise;
    return [200, {}];
  }]]);
  t.after(() => srv.close());
  const held = get(`${srv.url}/slow`);
  await until(() => bulkhead.metrics().active === 1, 'the first request admitted');
  const t0 = performance.now();
  const late = await get(`${srv.url}/slow`, { 'x-request-deadline-ms': '60' });
  const took = performance.now() - t0;
  assert.deepEqual([late.status, late.body.reason], [503, 'deadline']);
  assert.ok(took >= 55 && took < 4000, `${took} ms`);
  assert.equal(bulkhead.metrics().queued, 0);
  gate.resolve();
  assert.equal((await held).status, 200);
});

test('the health of a breaker open past its open period is degraded (200), before any call probes', async () => {
  const { healthReport } = require('../lib/middleware/common');
  const b = new CircuitBreaker({ consecutiveFailures: 1, openDurationMs: 20, openJitterFactor: 0 });
  await assert.rejects(b.execute(async () => { throw new Error('down'); }), /down/);
  assert.equal(healthReport({ db: { breaker: b, critical: true } })[0], 503);
  await new Promise((r) => setTimeout(r, 40));
  const [status, body] = healthReport({ db: { breaker: b, critical: true } });
  assert.equal(status, 200);
  assert.deepEqual(body.dependencies.db, { status: 'degraded', breaker: 'halfOpen', health: null });
  assert.equal(b.metrics().state, 'open', 'the report changes nothing');
});
