'use strict';
// Starts the example service against fake dependencies on ephemeral ports and
// checks that a failing dependency gives a degraded answer, not an error.
const test = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const path = require('node:path');
const { createService, priorityOf } = require(path.join(__dirname, '..', 'service.js'));

function listen(server) {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${server.address().port}`)));
}

test('a failing dependency gives a degraded answer from the stale cache or a default', async (t) => {
  const failing = new Set();
  const hanging = new Set();
  const fake = http.createServer((req, res) => {
    const kind = req.url.split('/')[1];
    if (hanging.has(kind)) return; // never answers
    if (failing.has(kind)) {
      res.writeHead(500);
      return res.end('down');
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    const id = req.url.split('/').pop();
    if (kind === 'inventory') return res.end(JSON.stringify({ id, available: 7 }));
    if (kind === 'reviews') return res.end(JSON.stringify([{ stars: 5 }]));
    return res.end(JSON.stringify([{ id: 'p2' }]));
  });
  const base = await listen(fake);
  const db = { getProduct: async (id) => ({ id, name: `Product ${id}` }) };
  const server = createService({ db, inventoryUrl: base, reviewsUrl: base, recommendationsUrl: base });
  const url = `${await listen(server)}/api/products/42`;
  t.after(() => {
    server.close();
    fake.closeAllConnections();
    fake.close();
  });

  const fresh = await (await fetch(url)).json();
  assert.deepEqual(fresh.product, { id: '42', name: 'Product 42' });
  assert.deepEqual(fresh.reviews, [{ stars: 5 }]);
  assert.equal(fresh._meta.degraded, false);
  assert.deepEqual(fresh._meta.sources, { product: 'primary', inventory: 'primary', reviews: 'primary', recommendations: 'primary' });

  failing.add('reviews');
  hanging.add('recommendations');
  const t0 = performance.now();
  const res = await fetch(url);
  const body = await res.json();
  assert.equal(res.status, 200);
  assert.equal(body._meta.degraded, true);
  assert.deepEqual(body._meta.degradedDependencies.sort(), ['recommendations', 'reviews']);
  assert.equal(body._meta.sources.reviews, 'stale-cache');
  assert.deepEqual(body.reviews, [{ stars: 5 }]);
  // Recommendations hang: the 300 ms timeout gives up and the value the first
  // request cached answers.
  assert.equal(body._meta.sources.recommendations, 'stale-cache');
  assert.equal(body._meta.sources.inventory, 'primary');
  assert.ok(performance.now() - t0 < 3000, 'answered within the request deadline');

  // A product never seen before: no stale value, so the defaults answer.
  const other = await (await fetch(url.replace('/42', '/43'))).json();
  assert.deepEqual(other.reviews, []);
  assert.deepEqual(other.recommendations, []);
  assert.equal(other._meta.sources.reviews, 'fallback-1');
  assert.equal(other._meta.degraded, true);
});

test('load shedding priorities by path', () => {
  assert.equal(priorityOf('/checkout'), 'critical');
  assert.equal(priorityOf('/api/products/1'), 'high');
  assert.equal(priorityOf('/api/products/1/reviews'), 'normal');
  assert.equal(priorityOf('/api/recommendations'), 'low');
});

test('GET /metrics exports the breakers and bulkheads in Prometheus text; the deadline is an option', async (t) => {
  const fake = http.createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(req.url.startsWith('/inventory') ? '{"available": 3}' : '[]');
  });
  const base = await listen(fake);
  const db = { getProduct: async (id) => ({ id }) };
  const server = createService({ db, inventoryUrl: base, reviewsUrl: base, recommendationsUrl: base }, { deadlineMs: 1500 });
  const url = await listen(server);
  t.after(() => {
    server.close();
    fake.closeAllConnections();
    fake.close();
  });
  const body = await (await fetch(`${url}/api/products/7`)).json();
  assert.equal(body._meta.deadlineMs, 1500);
  const res = await fetch(`${url}/metrics`);
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type'), /^text\/plain/);
  const text = await res.text();
  for (const dep of ['database', 'inventory', 'reviews', 'recommendations']) {
    assert.ok(text.includes(`seawall_breaker_state{breaker="${dep}",state="closed"} 1`), dep);
    assert.ok(text.includes(`seawall_breaker_state{breaker="${dep}",state="open"} 0`), dep);
  }
  // The load shedder and each dependency's bulkhead, with nothing refused yet.
  for (const b of ['requests', 'inventory']) {
    assert.ok(text.includes(`seawall_bulkhead_rejected_total{bulkhead="${b}",reason="shed"} 0`), b);
  }
  assert.match(text, /seawall_breaker_calls_total\{breaker="inventory",outcome="success"\} 1\b/);
});
