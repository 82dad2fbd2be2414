'use strict';
// The examples of opossum's README (opossum 9.0.0), their code as printed there,
// run against seawall/opossum: `require('opossum')` is answered with
// seawall/opossum, and the names each example leaves to the reader (x, y,
// options, jQuery's $, an http server, reportFallbackEvent, …) are given by the
// harness. Left out: the browser / hapi set-up (no breaker code), the coalesce
// fetch helpers (no breaker code), opossum's own internals quoted under
// "Calculating errorThresholdPercentage", and the app.js example, whose code
// does not parse as printed (`...Try later.`));` has one `)` too many).
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { EventEmitter } = require('node:events');
const { promisify } = require('node:util');
// SEAWALL_OPOSSUM_REFERENCE=1 runs the same expectations against opossum itself
// (benches/node's copy), to check them.
const CircuitBreaker = process.env.SEAWALL_OPOSSUM_REFERENCE ? require('../../benches/node/node_modules/opossum') : require('seawall/opossum');
const { delay } = require('./helpers');

/** What an example printed, and a promise of its first line. */
function capture() {
  const lines = [];
  let first;
  const printed = new Promise((resolve) => { first = resolve; });
  const put = (kind) => (...args) => {
    lines.push([kind, ...args]);
    first([kind, ...args]);
  };
  return { console: { log: put('log'), error: put('error') }, lines, printed };
}

/**
 * An http module whose get() answers like httpbin's /delay/10: not for 10 s,
 * unless the request's signal aborts first (then an 'abort' is recorded).
 */
function slowHttp() {
  const aborted = [];
  return {
    aborted,
    get(url, { signal }, callback) {
      const timer = setTimeout(() => callback({ statusCode: 200 }), 10000);
      timer.unref();
      signal.addEventListener('abort', () => {
        clearTimeout(timer);
        aborted.push(url);
      });
      return new EventEmitter();
    },
  };
}

/**
 * Run `code` (an example as printed) with `globals` as its free names;
 * `require('opossum')` is seawall/opossum. `tail` is harness code appended
 * after it, e.g. to hand back a variable of the example.
 */
function runExample(code, globals, modules = {}, tail = '') {
  const req = (name) => {
    if (name === 'opossum') return CircuitBreaker;
    if (name in modules) return modules[name];
    return require(name);
  };
  // Timers the examples set themselves (e.g. a 20 s delay) must not hold the test process.
  const unrefTimeout = (fn, ms, ...args) => {
    const t = setTimeout(fn, ms, ...args);
    t.unref();
    return t;
  };
  const names = ['require', 'setTimeout', ...Object.keys(globals)];
  // eslint-disable-next-line no-new-func
  const fn = new Function(...names, `'use strict';\n${code}\n${tail}`);
  return fn(req, unrefTimeout, ...Object.values(globals));
}

const USAGE = `
const CircuitBreaker = require('opossum');

function asyncFunctionThatCouldFail(x, y) {
  return new Promise((resolve, reject) => {
    // Do something, maybe on the network or a disk
  });
}

const options = {
  timeout: 3000, // If our function takes longer than 3 seconds, trigger a failure
  errorThresholdPercentage: 50, // When 50% of requests fail, trip the circuit
  resetTimeout: 30000 // After 30 seconds, try again.
};
const breaker = new CircuitBreaker(asyncFunctionThatCouldFail, options);

breaker.fire(x, y)
  .then(console.log)
  .catch(console.error);
`;

const ABORT_CONTROLLER = `
const CircuitBreaker = require('opossum');
const http = require('http');

function asyncFunctionThatCouldFail(abortSignal, x, y) {
  return new Promise((resolve, reject) => {
    http.get(
      'http://httpbin.org/delay/10',
      { signal: abortSignal },
      (res) => {
        if(res.statusCode < 300) {
          resolve(res.statusCode);
          return;
        }

        reject(res.statusCode);
      }
    );
  });
}

const abortController = new AbortController();
const options = {
  abortController,
  timeout: 3000, // If our function takes longer than 3 seconds, trigger a failure
};
const breaker = new CircuitBreaker(asyncFunctionThatCouldFail, options);

breaker.fire(abortController.signal)
  .then(console.log)
  .catch(console.error);
`;

const AUTO_RENEW = `
const CircuitBreaker = require('opossum');
const http = require('http');

function asyncFunctionThatCouldFail(abortSignal, x, y) {
  return new Promise((resolve, reject) => {
    http.get(
      'http://httpbin.org/delay/10',
      { signal: abortSignal },
      (res) => {
        if(res.statusCode < 300) {
          resolve(res.statusCode);
          return;
        }

        reject(res.statusCode);
      }
    );
  });
}

const abortController = new AbortController();
const options = {
  autoRenewAbortController: true,
  timeout: 3000, // If our function takes longer than 3 seconds, trigger a failure
};
const breaker = new CircuitBreaker(asyncFunctionThatCouldFail, options);

const signal = breaker.getSignal();
breaker.fire(signal)
  .then(console.log)
  .catch(console.error);
`;

const FALLBACK = `
const breaker = new CircuitBreaker(asyncFunctionThatCouldFail, options);
// if asyncFunctionThatCouldFail starts to fail, firing the breaker
// will trigger our fallback function
breaker.fallback(() => 'Sorry, out of service right now');
breaker.on('fallback', (result) => reportFallbackEvent(result));
`;

const FALLBACK_PARAMETERS = `
const delay = (delay, a, b, c) =>
  new Promise((resolve) => {
    setTimeout(() => {
      resolve();
    }, delay);
  });

const breaker = new CircuitBreaker(delay);
breaker.fire(20000, 1, 2, 3);
breaker.fallback((delay, a, b, c) => \`Sorry, out of service right now. But your parameters are: \${delay}, \${a}, \${b} and \${c}\`);
`;

const STATE = `
const breakerState = breaker.toJSON();
`;

const STATE_IMPORT = `
const breaker = new CircuitBreaker({state: state});
`;

const STATS = `
const stats = breaker.stats;
`;

// The README's \`stats: {....}\` is an elision: the stats read just above.
const NEW_STATUS = `
const statusOptions = {
  stats: {....}
};

const newStatus = CircuitBreaker.newStatus(statusOptions);

const breaker = new CircuitBreaker({status: newStatus});
`.replace('{....}', 'stats');

const EVENTS = `
const breaker = new CircuitBreaker(() => $.get(route), circuitBreakerOptions);

breaker.fallback(() => ({ body: \`\${route} unavailable right now. Try later.\` }));

breaker.on('success',
  (result) => $(element).append(
    makeNode(\`SUCCESS: \${JSON.stringify(result)}\`)));

breaker.on('timeout',
  () => $(element).append(
    makeNode(\`TIMEOUT: \${route} is taking too long to respond.\`)));

breaker.on('reject',
  () => $(element).append(
    makeNode(\`REJECTED: The breaker for \${route} is open. Failing fast.\`)));

breaker.on('open',
  () => $(element).append(
    makeNode(\`OPEN: The breaker for \${route} just opened.\`)));

breaker.on('halfOpen',
  () => $(element).append(
    makeNode(\`HALF_OPEN: The breaker for \${route} is half open.\`)));

breaker.on('close',
  () => $(element).append(
    makeNode(\`CLOSE: The breaker for \${route} has closed. Service OK.\`)));

breaker.on('fallback',
  (data) => $(element).append(
    makeNode(\`FALLBACK: \${JSON.stringify(data)}\`)));
`;

const PROMISIFY = `
const fs = require('fs');
const { promisify } = require('util');
const CircuitBreaker = require('opossum');

const readFile = promisify(fs.readFile);
const breaker = new CircuitBreaker(readFile, options);

breaker.fire('./package.json', 'utf-8')
  .then(console.log)
  .catch(console.error);
`;

const NOT_A_FUNCTION = `
const breaker = new CircuitBreaker('foo', options);

breaker.fire()
  .then(console.log) // logs 'foo'
  .catch(console.error);
`;

test('Usage, AbortController, Auto Renew AbortController: each call times out after 3 s, the requests are aborted', async () => {
  const usage = capture();
  runExample(USAGE, { console: usage.console, x: 1, y: 2 });
  const abort = capture();
  const http = slowHttp();
  runExample(ABORT_CONTROLLER, { console: abort.console }, { http });
  const renew = capture();
  const http2 = slowHttp();
  const started = performance.now();
  runExample(AUTO_RENEW, { console: renew.console }, { http: http2 });
  const [u, a, r] = await Promise.all([usage.printed, abort.printed, renew.printed]);
  const waited = performance.now() - started;
  for (const [kind, err] of [u, a, r]) {
    assert.equal(kind, 'error');
    assert.equal(err.code, 'ETIMEDOUT');
    assert.equal(err.message, 'Timed out after 3000ms');
  }
  assert.ok(waited >= 3000, `${waited} ms`);
  assert.deepEqual(http.aborted, ['http://httpbin.org/delay/10']);
  assert.deepEqual(http2.aborted, ['http://httpbin.org/delay/10']);
});

test('Fallback: the fallback answers and its event is reported', async () => {
  const reported = [];
  function asyncFunctionThatCouldFail() {
    return Promise.reject(new Error('down'));
  }
  const breaker = runExample(FALLBACK, {
    CircuitBreaker, asyncFunctionThatCouldFail, options: { timeout: 3000, errorThresholdPercentage: 50, resetTimeout: 30000 },
    reportFallbackEvent: (r) => reported.push(r),
  }, {}, 'return breaker;');
  assert.equal(await breaker.fire(), 'Sorry, out of service right now');
  assert.equal(breaker.opened, true);
  assert.equal(await breaker.fire(), 'Sorry, out of service right now'); // open: the fallback still answers
  assert.deepEqual(reported, ['Sorry, out of service right now', 'Sorry, out of service right now']);
});

test('Fallback with the fire parameters: the fallback gets them', async () => {
  const breaker = runExample(FALLBACK_PARAMETERS, { CircuitBreaker }, {}, 'return breaker;');
  assert.equal(breaker.options.timeout, 10000); // the 20 s delay will time out at 10 s
  breaker.open();
  assert.equal(await breaker.fire(5, 1, 2, 3), 'Sorry, out of service right now. But your parameters are: 5, 1, 2 and 3');
  breaker.shutdown(); // the pending 20 s call no longer holds the process
});

test('Breaker State Initialization and Status Initialization', async () => {
  const breaker = new CircuitBreaker(async function functionName() { return 1; });
  await breaker.fire();
  breaker.open();
  const breakerState = runExample(STATE, { breaker }, {}, 'return breakerState;');
  assert.deepEqual(
    { ...breakerState.state, lastTimerAt: undefined },
    { enabled: true, name: 'functionName', closed: false, open: true, halfOpen: false, warmUp: false, shutdown: false, lastTimerAt: undefined },
  );
  assert.equal(breakerState.status.fires, 1);
  // As printed, the README passes the record as the action: the breaker then
  // answers every fire with it (opossum's "not a function" rule).
  const imported = runExample(STATE_IMPORT, { CircuitBreaker, state: breakerState.state }, {}, 'return breaker;');
  assert.deepEqual(await imported.fire(), { state: breakerState.state });
  // The intended use: the record as the `state` option.
  const restored = new CircuitBreaker(async () => 1, { state: breakerState.state });
  assert.equal(restored.opened, true);
  const stats = runExample(STATS, { breaker }, {}, 'return stats;');
  assert.deepEqual(
    [stats.failures, stats.fallbacks, stats.successes, stats.rejects, stats.fires, stats.timeouts],
    [0, 0, 1, 0, 1, 0],
  );
  for (const k of ['cacheHits', 'cacheMisses', 'coalesceCacheHits', 'coalesceCacheMisses', 'semaphoreRejections', 'latencyMean']) {
    assert.equal(typeof stats[k], 'number', k);
  }
  assert.deepEqual(Object.keys(stats.percentiles).sort(), ['0', '0.25', '0.5', '0.75', '0.9', '0.95', '0.99', '0.995', '1']);
  assert.ok(Array.isArray(stats.latencyTimes));
  const primed = runExample(NEW_STATUS, { CircuitBreaker, stats }, {}, 'return { newStatus, breaker };');
  assert.equal(primed.newStatus.stats.fires, 1);
  await primed.breaker.fire();
  // As printed, the status is passed as the action again: a breaker of its own stats.
  assert.equal(primed.breaker.stats.fires, 1);
  const withStatus = new CircuitBreaker(async () => 1, { status: primed.newStatus });
  await withStatus.fire();
  assert.equal(withStatus.stats.fires, 2);
  assert.equal(withStatus.stats.successes, 2);
});

test('Events: every handler of the example runs at its event', async () => {
  const appended = [];
  const $ = (element) => ({ append: (node) => appended.push([element, node]) });
  const route = 'https://example-service.com/rest/route';
  let answer = () => Promise.resolve({ ok: true });
  $.get = () => answer();
  const breaker = runExample(EVENTS, {
    CircuitBreaker, $, route, element: '#out', makeNode: (text) => text,
    circuitBreakerOptions: { timeout: 50, errorThresholdPercentage: 50, resetTimeout: 100 },
  }, {}, 'return breaker;');
  await breaker.fire();
  answer = () => new Promise(() => {});
  await breaker.fire(); // times out: a failure, 1 of 2 is not above 50 %
  await breaker.fire(); // 2 of 3: opens
  await breaker.fire(); // rejected
  await delay(200); // resetTimeout 100 ms (its timer is unref'd, as opossum's: this wait holds the process)
  answer = () => Promise.resolve({ ok: 'again' });
  await breaker.fire();
  const fallback = `FALLBACK: ${JSON.stringify({ body: `${route} unavailable right now. Try later.` })}`;
  assert.deepEqual(appended.map((a) => a[1]), [
    'SUCCESS: {"ok":true}',
    `TIMEOUT: ${route} is taking too long to respond.`,
    fallback,
    `TIMEOUT: ${route} is taking too long to respond.`,
    `OPEN: The breaker for ${route} just opened.`,
    fallback,
    `REJECTED: The breaker for ${route} is open. Failing fast.`,
    fallback,
    `HALF_OPEN: The breaker for ${route} is half open.`,
    `CLOSE: The breaker for ${route} has closed. Service OK.`,
    'SUCCESS: {"ok":"again"}',
  ]);
  assert.ok(appended.every((a) => a[0] === '#out'));
});

test('Promises vs. Callbacks: a promisified readFile, and a breaker of a value', async () => {
  const read = capture();
  runExample(PROMISIFY, { console: read.console, options: {} }, { fs, util: { promisify } });
  const [kind, text] = await read.printed;
  assert.equal(kind, 'log');
  assert.equal(text, fs.readFileSync(path.join(process.cwd(), 'package.json'), 'utf-8'));
  const foo = capture();
  runExample(NOT_A_FUNCTION, { CircuitBreaker, console: foo.console, options: {} });
  assert.deepEqual(await foo.printed, ['log', 'foo']);
});
