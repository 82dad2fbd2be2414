'use strict';
// The seed documents' game-day checklist, on a real Express server, with the
// times scaled down (timeout 100 ms instead of 1 s): inject a small latency,
// then one past the timeout, and see timeouts; 50 % errors, and see the breaker
// open; 100 % errors, and see the stale cache answer; remove the chaos, and see
// the service recover — each read from the HTTP answers and the health endpoint.
const test = require('node:test');
const assert = require('node:assert/strict');
const express = require('express');
const { chaos, pipeline, timeout, CircuitBreaker, Health } = require('..');
const { middleware, health } = require('seawall/express');
const { delay } = require('./helpers');

test('game day: latency → timeouts, 50 % errors → the breaker opens, 100 % → stale data, removed → recovery', async (t) => {
  const inventory = chaos('gameday-inventory', undefined, { seed: 20240601 });
  const breaker = new CircuitBreaker({
    name: 'gameday-inventory', window: { kind: 'count', size: 10 }, minimumCalls: 10, failureRateThreshold: 30,
    consecutiveFailures: null, openDurationMs: 200, halfOpenMaxCalls: 1, halfOpenSuccessThreshold: 1,
  });
  const stock = new Health();
  const guarded = pipeline({ breaker, timeout: timeout(100), staleCache: { max: 100 } });
  const app = express();
  app.use(middleware({}));
  app.get('/health', health({ dependencies: { inventory: { health: stock, breaker } } }));
  app.get('/stock/:sku', async (req, res) => {
    const t0 = performance.now();
    try {
      // The chaos policy sits innermost, next to the call (DESIGN §9).
      const r = await guarded.execute(() => inventory.execute(async () => ({ sku: req.params.sku, count: 7 })), { key: req.params.sku });
      stock.record(performance.now() - t0, r.degraded);
      res.json({ source: r.source, degraded: r.degraded, error: r.error === undefined ? null : r.error.code });
    } catch (e) {
      stock.record(performance.now() - t0, true);
      res.status(502).json({ error: e.code });
    }
  });
  const server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  t.after(() => new Promise((resolve) => {
    server.closeAllConnections();
    server.close(resolve);
  }));
  const url = `http://127.0.0.1:${server.address().port}`;
  const ask = async (sku = 'a') => {
    const r = await fetch(`${url}/stock/${sku}`);
    return { status: r.status, ...(await r.json()) };
  };

  // Steady state: primary answers, and the stale cache learns 'a'.
  assert.deepEqual(await ask(), { status: 200, source: 'primary', degraded: false, error: null });

  // 1. 20 ms of latency: within the 100 ms timeout, still primary.
  inventory.set({ enabled: true, latencyMs: 20 });
  assert.equal((await ask()).source, 'primary');
  // 2. 300 ms: past the timeout. 'a' is served stale; 'b' was never cached, so it fails with ETIMEDOUT.
  inventory.set({ enabled: true, latencyMs: 300 });
  assert.deepEqual(await ask(), { status: 200, source: 'stale-cache', degraded: true, error: 'ETIMEDOUT' });
  assert.deepEqual(await ask('b'), { status: 502, error: 'ETIMEDOUT' });
  breaker.reset();

  // 3. 50 % errors: over 30 % of a full window of 10 opens the breaker.
  inventory.set({ enabled: true, failureRate: 0.5 });
  let calls = 0;
  while (breaker.state === 'closed' && calls < 100) {
    await ask();
    calls += 1;
  }
  assert.equal(breaker.state, 'open');
  assert.ok(calls >= 10, `opened after ${calls} calls`);
  const open = await fetch(`${url}/health`);
  assert.equal(open.status, 503);
  assert.equal((await open.json()).dependencies.inventory.breaker, 'open');

  // 4. 100 % errors: every answer is the stale value, the breaker refusing.
  inventory.set({ enabled: true, failureRate: 1 });
  for (let i = 0; i < 3; i++) assert.deepEqual(await ask(), { status: 200, source: 'stale-cache', degraded: true, error: 'ECIRCUITOPEN' });

  // 5. Chaos removed: after the open duration a probe succeeds and the breaker closes.
  const injected = inventory.metrics();
  chaos.disableAll();
  await delay(250);
  assert.deepEqual(await ask(), { status: 200, source: 'primary', degraded: false, error: null });
  assert.equal(breaker.state, 'closed');
  assert.equal(inventory.metrics().failures, injected.failures);
  assert.ok(injected.latency >= 3 && injected.failures >= 3, JSON.stringify(injected));
});
