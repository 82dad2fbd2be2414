'use strict';
// The seed documents' product-details service on node:http, protected by seawall:
// the product comes from a "database", inventory, reviews and recommendations from
// HTTP dependencies. Each dependency has its own bulkhead, circuit breaker, retry
// (idempotent GETs), timeout and stale-cache / default fallbacks, composed in
// DESIGN §9 order by `pipeline`; every request has a 3 s deadline; a priority
// load shedder in front sheds low-priority paths first. Answers report
// `_meta.degraded` (and which dependencies answered from a fallback).
// `GET /metrics` exports every breaker, bulkhead and the retry budget in
// Prometheus text through seawall's prom-client integration (registerMetrics).
//
// Run it: node examples/node-service/service.js [--port N] [--inventory-url URL]
//   [--open-duration-ms MS] [--deadline-ms MS]. With --inventory-url the inventory dependency is
// that server (`GET {URL}/inventory/{id}`); without it, and for the other
// dependencies, in-process fakes answer. --port 0 takes an ephemeral port; the
// first line printed names the URL. The gameday runs against it through its
// fault-injecting proxy (gameday/README.md, "Against your own service").

const http = require('node:http');
const path = require('node:path');
const bindings = path.join(__dirname, '..', '..', 'bindings-node');
const {
  Bulkhead, CircuitBreaker, Retry, RetryBudget, timeout, pipeline, Deadline, isSeawallError, registerMetrics,
} = require(bindings);

const REQUEST_DEADLINE_MS = 3000;

/** Priority by path: checkout is critical, product pages high, reviews normal, the rest low. */
function priorityOf(pathname) {
  if (pathname.startsWith('/checkout') || pathname === '/health') return 'critical';
  if (/^\/api\/products\/[^/]+$/.test(pathname)) return 'high';
  if (pathname.includes('/reviews')) return 'normal';
  return 'low';
}

/** GET `url` as JSON, honouring `signal`; a non-2xx answer throws with the status. */
async function getJson(url, signal) {
  const res = await fetch(url, { signal });
  if (!res.ok) {
    const err = new Error(`${url}: HTTP ${res.status}`);
    err.status = res.status;
    err.headers = Object.fromEntries(res.headers);
    throw err;
  }
  return res.json();
}

/** One dependency's protection, DESIGN §9 order. */
function dependency(name, { maxConcurrent = 20, timeoutMs = 800, attempts = 2, fallback, budget, openDurationMs = 10_000 }) {
  const breaker = new CircuitBreaker({
    name,
    window: { kind: 'count', size: 20 },
    minimumCalls: 5,
    failureRateThreshold: 50,
    openDurationMs,
    // A 4xx is the caller's problem, not the dependency's.
    isFailure: (e) => !(e && e.status >= 400 && e.status < 500),
  });
  const bulkhead = new Bulkhead({ name, maxConcurrent, maxQueue: maxConcurrent, queueTimeoutMs: 200 });
  return {
    name,
    breaker,
    bulkhead,
    policy: pipeline({
      bulkhead,
      breaker,
      retry: new Retry({
        attempts,
        backoff: { baseMs: 50, maxMs: 200, jitter: 'full' },
        budget,
        shouldRetry: (e) => !(e && e.status >= 400 && e.status < 500),
      }),
      timeout: timeout(timeoutMs),
      staleCache: { max: 10_000, maxStaleMs: 10 * 60_000 },
      fallback,
    }),
  };
}

/**
 * Build the service. `deps`: `{ db: { getProduct(id, signal) }, inventoryUrl,
 * reviewsUrl, recommendationsUrl }`; `options.maxConcurrentRequests` sizes the
 * load shedder (default 100), `options.openDurationMs` how long the breakers
 * stay open (default 10 000 ms), `options.deadlineMs` each request's deadline
 * (default 3000 ms).
 */
function createService(deps, options = {}) {
  const budget = new RetryBudget({ name: 'outbound' });
  const open = { openDurationMs: options.openDurationMs };
  const deadlineMs = options.deadlineMs || REQUEST_DEADLINE_MS;
  const database = dependency('database', { maxConcurrent: 10, timeoutMs: 500, attempts: 1, budget, ...open });
  const inventory = dependency('inventory', { budget, fallback: () => ({ available: null, status: 'unknown' }), ...open });
  const reviews = dependency('reviews', { budget, fallback: () => [], ...open });
  const recommendations = dependency('recommendations', { timeoutMs: 300, attempts: 1, budget, fallback: () => [], ...open });
  const shedder = new Bulkhead({
    name: 'requests',
    maxConcurrent: options.maxConcurrentRequests || 100,
    maxQueue: 0,
    shares: { critical: 100, high: 80, normal: 50, low: 20 },
  });
  const all = [database, inventory, reviews, recommendations];
  // prom-client is bindings-node's (dev) dependency: resolved from there.
  const prom = require(require.resolve('prom-client', { paths: [bindings] }));
  const registry = new prom.Registry();
  registerMetrics(registry, {
    client: prom,
    breakers: all.map((d) => d.breaker),
    bulkheads: [shedder, ...all.map((d) => d.bulkhead)],
    budgets: [budget],
  });

  async function productDetails(id, signal) {
    const deadline = new Deadline(deadlineMs);
    const opts = (key) => ({ key, signal, deadline });
    const [product, inv, rev, recs] = await Promise.all([
      database.policy.execute(({ signal: s }) => deps.db.getProduct(id, s), opts(`product:${id}`)),
      inventory.policy.execute(({ signal: s }) => getJson(`${deps.inventoryUrl}/inventory/${id}`, s), opts(`inventory:${id}`)),
      reviews.policy.execute(({ signal: s }) => getJson(`${deps.reviewsUrl}/reviews/${id}`, s), opts(`reviews:${id}`)),
      recommendations.policy.execute(({ signal: s }) => getJson(`${deps.recommendationsUrl}/recommendations/${id}`, s), opts(`recs:${id}`)),
    ]);
    const parts = { product, inventory: inv, reviews: rev, recommendations: recs };
    const degradedDependencies = Object.keys(parts).filter((k) => parts[k].degraded);
    return {
      product: product.value,
      inventory: inv.value,
      reviews: rev.value,
      recommendations: recs.value,
      _meta: {
        degraded: degradedDependencies.length > 0,
        degradedDependencies,
        sources: Object.fromEntries(Object.entries(parts).map(([k, v]) => [k, v.source])),
        deadlineMs,
        elapsedMs: Math.round(deadlineMs - deadline.remainingMs()),
      },
    };
  }

  const send = (res, status, body, headers = {}) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  };

  async function route(req, res, signal) {
    const { pathname } = new URL(req.url, 'http://localhost');
    if (pathname === '/metrics') {
      res.writeHead(200, { 'content-type': registry.contentType });
      return res.end(await registry.metrics());
    }
    if (pathname === '/health') {
      const breakers = all.map((d) => [d.name, d.breaker.state]);
      return send(res, 200, { status: 'ok', breakers: Object.fromEntries(breakers), requests: shedder.metrics() });
    }
    const m = /^\/api\/products\/([^/]+)$/.exec(pathname);
    if (!m) return send(res, 404, { error: 'not found' });
    try {
      return send(res, 200, await productDetails(m[1], signal));
    } catch (e) {
      // The product itself is the one part without a fallback.
      const status = isSeawallError(e) ? 503 : e && e.status === 404 ? 404 : 502;
      return send(res, status, { error: e.message, code: e.code });
    }
  }

  return http.createServer((req, res) => {
    const controller = new AbortController();
    res.on('close', () => { if (!res.writableFinished) controller.abort(); });
    const priority = priorityOf(new URL(req.url, 'http://localhost').pathname);
    shedder.execute(() => route(req, res, controller.signal), { priority }).catch((e) => {
      if (isSeawallError(e, 'EBULKHEADFULL')) return send(res, 503, { error: 'overloaded', priority }, { 'retry-after': '1' });
      return send(res, 500, { error: e.message });
    });
  });
}

module.exports = { createService, priorityOf };

/** `--name value` flags of the command line. */
function flags(argv) {
  const out = {};
  for (let i = 0; i < argv.length; i += 2) {
    const m = /^--([a-z-]+)$/.exec(argv[i]);
    if (!m || argv[i + 1] === undefined) throw new Error(`usage: service.js [--port N] [--inventory-url URL] [--open-duration-ms MS] [--deadline-ms MS], not ${argv[i]}`);
    out[m[1]] = argv[i + 1];
  }
  return out;
}

if (require.main === module) {
  // A demo with in-process fake dependencies: node examples/node-service/service.js
  let opts;
  try {
    opts = flags(process.argv.slice(2));
  } catch (e) {
    console.error(e.message);
    process.exit(2);
  }
  const fake = http.createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    const id = req.url.split('/').pop();
    if (req.url.startsWith('/inventory')) res.end(JSON.stringify({ id, available: 7 }));
    else if (req.url.startsWith('/reviews')) res.end(JSON.stringify([{ stars: 5, text: 'sturdy' }]));
    else res.end(JSON.stringify([{ id: 'p2' }]));
  }).listen(0, '127.0.0.1', () => {
    const base = `http://127.0.0.1:${fake.address().port}`;
    const db = { getProduct: async (id) => ({ id, name: `Product ${id}`, price: 9.99 }) };
    const inventoryUrl = (opts['inventory-url'] || base).replace(/\/$/, '');
    const num = (k) => (opts[k] === undefined ? undefined : Number(opts[k]));
    const server = createService(
      { db, inventoryUrl, reviewsUrl: base, recommendationsUrl: base },
      { openDurationMs: num('open-duration-ms'), deadlineMs: num('deadline-ms') },
    );
    const port = opts.port !== undefined ? Number(opts.port) : Number(process.env.PORT) || 3000;
    server.listen(port, '127.0.0.1', () => {
      console.log(`product details on http://127.0.0.1:${server.address().port}/api/products/1 (inventory: ${inventoryUrl})`);
    });
    // Stop cleanly on SIGTERM / SIGINT (the gameday's test script sends SIGTERM).
    const stop = () => {
      server.close();
      server.closeAllConnections();
      fake.close();
      fake.closeAllConnections();
    };
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  });
}
