'use strict';
// What the Express middleware and the Fastify plugin share, on Node's own
// http.ServerResponse (both frameworks' responses are one):
// - priority load shedding at the door (DESIGN §5): each request holds a
//   permit of a Bulkhead with shares, at its priority, until its response
//   closes; a shed or full bulkhead answers 503 with Retry-After, and a shed
//   request is never queued (the bulkhead refuses it at once);
// - a per-request Deadline from a header, and an AbortSignal aborted when that
//   deadline passes or the client goes away, both put in the ambient call
//   context (lib/context.js) of the handler, so every seawall policy inside it
//   honours them without being passed them;
// - a health report of Health snapshots and breaker states.

const { configError, SeawallError, codes, isSeawallError, deadlineReason } = require('../errors');
const { isPlainObject, only, number } = require('../config');
const { Deadline } = require('../deadline');
const { LongTimer } = require('../timers');
const { Bulkhead } = require('../bulkhead');

const OPTION_KEYS = ['bulkhead', 'getPriority', 'retryAfterMs', 'deadlineHeader', 'maxDeadlineMs', 'defaultDeadlineMs'];
const RANK = { healthy: 0, degraded: 1, unhealthy: 2 };
const STATUS = ['healthy', 'degraded', 'unhealthy'];

/** The seed documents' priorities: /health critical, payments high, the rest normal. */
function defaultPriority(req) {
  const url = typeof req.originalUrl === 'string' ? req.originalUrl : req.url;
  const path = String(url).split('?')[0];
  if (path === '/health' || path.startsWith('/health/')) return 'critical';
  if (/^\/payments?(\/|$)/.test(path)) return 'high';
  return 'normal';
}

/** The middleware's options, checked (EINVALIDCONFIG naming the option). */
function middlewareOptions(options) {
  if (!isPlainObject(options)) throw configError('options', 'must be an object');
  only(options, OPTION_KEYS);
  const { bulkhead, getPriority } = options;
  if (bulkhead !== undefined && !(bulkhead instanceof Bulkhead)) throw configError('bulkhead', 'must be a seawall Bulkhead');
  if (getPriority !== undefined && typeof getPriority !== 'function') throw configError('getPriority', 'must be a function (req) => priority');
  const header = options.deadlineHeader;
  if (header !== undefined && header !== false && (typeof header !== 'string' || header === '')) {
    throw configError('deadlineHeader', 'must be a header name or false');
  }
  const retryAfterMs = number(options, 'retryAfterMs', 'retryAfterMs', { min: 0, exclusive: true });
  return {
    bulkhead,
    getPriority: getPriority === undefined ? defaultPriority : getPriority,
    retryAfterS: Math.ceil((retryAfterMs === undefined ? 1000 : retryAfterMs) / 1000),
    header: header === false ? undefined : (header === undefined ? 'x-request-deadline-ms' : header).toLowerCase(),
    maxMs: number(options, 'maxDeadlineMs', 'maxDeadlineMs', { min: 0, exclusive: true }),
    defaultMs: number(options, 'defaultDeadlineMs', 'defaultDeadlineMs', { min: 0, exclusive: true }),
  };
}

/**
 * The request's Deadline (or undefined): the header's milliseconds, capped at
 * maxMs, else defaultMs. A header that is not a number of ms > 0 throws
 * EINVALIDCONFIG naming it (the caller answers 400).
 */
function requestDeadline(o, headers) {
  let ms = o.defaultMs;
  const raw = o.header === undefined ? undefined : headers[o.header];
  if (raw !== undefined) {
    const text = Array.isArray(raw) ? raw[0] : raw;
    const v = /^\s*\d+(\.\d+)?\s*$/.test(text) ? Number(text) : NaN;
    if (!(v > 0) || !Number.isFinite(v)) throw configError(o.header, `must be a number of milliseconds greater than 0, not ${JSON.stringify(text)}`);
    ms = v;
  }
  if (ms !== undefined && o.maxMs !== undefined && ms > o.maxMs) ms = o.maxMs;
  return ms === undefined ? undefined : new Deadline(ms);
}

/**
 * Follow one request until its response closes: `signal` aborts with ETIMEDOUT
 * when `deadline` passes, with EABORTED when the client goes away first;
 * `onClose(fn)` runs `fn` when the response closes (at once if it has).
 */
function openRequest(res, deadline) {
  const controller = new AbortController();
  const closers = [];
  let closed = false;
  let timer;
  if (deadline !== undefined) {
    const ms = deadline.remainingMs();
    // A LongTimer: a client's header may ask for more than one setTimeout keeps.
    timer = new LongTimer(() => {
      controller.abort(deadlineReason(`request deadline exceeded (${Math.round(deadline.endMs - deadline.startMs)} ms)`, { timeoutMs: ms }));
    }, ms);
  }
  res.once('close', () => {
    closed = true;
    if (timer !== undefined) timer.clear();
    if (!res.writableFinished && !controller.signal.aborted) {
      controller.abort(new SeawallError(codes.EABORTED, 'the client closed the request'));
    }
    for (const fn of closers.splice(0)) fn();
  });
  return {
    context: { signal: controller.signal, deadline },
    onClose(fn) {
      if (closed) fn();
      else closers.push(fn);
    },
    get closed() {
      return closed;
    },
  };
}

/**
 * A permit of `bulkhead` at `priority`, held until the returned release
 * function is called; rejects as the bulkhead refuses (EBULKHEADFULL, EABORTED).
 */
function admit(bulkhead, priority, signal) {
  return new Promise((resolve, reject) => {
    bulkhead.execute(() => new Promise((release) => resolve(release)), { priority, signal }).catch(reject);
  });
}

/**
 * `[status, headers, body]` of a request refused at the door: 503 with
 * Retry-After for a shed or full bulkhead, or a deadline that passed in its
 * queue; undefined for anything else (a bug or a bad priority: the framework's
 * error handling answers).
 */
function refusal(o, error) {
  if (isSeawallError(error, codes.EBULKHEADFULL)) {
    const message = error.reason === 'shed' ? `shedding ${error.priority} priority requests` : 'overloaded';
    return [503, { 'retry-after': String(o.retryAfterS) }, { error: message, reason: error.reason }];
  }
  if (isSeawallError(error, codes.EABORTED) || isSeawallError(error, codes.ETIMEDOUT)) {
    return [503, { 'retry-after': String(o.retryAfterS) }, { error: 'request deadline exceeded while queued', reason: 'deadline' }];
  }
  return undefined;
}

/**
 * The door of one request `open` (from openRequest): with no bulkhead `pass()`
 * at once; else a permit at `o.getPriority(req)`, held until the response
 * closes, then `pass()`. A refusal is answered by `refuse(status, headers,
 * body)`, any other error (getPriority's included) goes to `fail(error)`, and
 * nothing runs once the client has gone.
 */
function enter(o, req, open, pass, fail, refuse) {
  if (o.bulkhead === undefined) {
    pass();
    return;
  }
  let priority;
  try {
    priority = o.getPriority(req);
  } catch (e) {
    fail(e);
    return;
  }
  admit(o.bulkhead, priority, open.context.signal).then((release) => {
    open.onClose(release);
    if (!open.closed) pass();
  }, (e) => {
    if (open.closed) return;
    const refused = refusal(o, e);
    if (refused === undefined) fail(e);
    else refuse(...refused);
  });
}

/** Health options → `{ name: { health, breaker, critical } }`, checked. */
function healthOptions(options) {
  if (!isPlainObject(options)) throw configError('options', 'must be an object ({ dependencies })');
  only(options, ['dependencies', 'path']);
  const deps = options.dependencies;
  if (!isPlainObject(deps)) throw configError('dependencies', 'must be an object of { health, breaker, critical } by dependency name');
  const out = {};
  for (const [name, d] of Object.entries(deps)) {
    const where = `dependencies.${name}`;
    if (!isPlainObject(d)) throw configError(where, 'must be { health, breaker, critical }');
    only(d, ['health', 'breaker', 'critical'], where);
    if (d.health !== undefined && (d.health === null || typeof d.health.snapshot !== 'function')) throw configError(`${where}.health`, 'must be a seawall Health');
    if (d.breaker !== undefined && (d.breaker === null || typeof d.breaker.metrics !== 'function')) throw configError(`${where}.breaker`, 'must be a seawall CircuitBreaker');
    if (d.health === undefined && d.breaker === undefined) throw configError(where, 'needs a health, a breaker or both');
    if (d.critical !== undefined && typeof d.critical !== 'boolean') throw configError(`${where}.critical`, 'must be true or false');
    out[name] = { health: d.health, breaker: d.breaker, critical: d.critical !== false };
  }
  return { dependencies: out, path: options.path === undefined ? '/health' : options.path };
}

/** A breaker state's health: open ones are unhealthy, a half-open one is degraded. */
function breakerStatus(state) {
  if (state === 'open' || state === 'forcedOpen' || state === 'unknown') return 'unhealthy';
  if (state === 'halfOpen') return 'degraded';
  return 'healthy';
}

/**
 * `[statusCode, body]`: each dependency's status, the worse of its Health's
 * and its breaker's; the overall status, the worst of them (a non-critical
 * dependency makes it degraded at worst); 503 when unhealthy, else 200.
 */
function healthReport(deps) {
  let overall = 0;
  const dependencies = {};
  for (const [name, d] of Object.entries(deps)) {
    const snapshot = d.health === undefined ? null : d.health.snapshot();
    let m = null;
    let error;
    try {
      m = d.breaker === undefined ? null : d.breaker.metrics();
    } catch (e) {
      // An overwritten shared region (ESHARED): no state to trust, and said so.
      if (e === null || typeof e !== 'object' || e.code !== codes.ESHARED) throw e;
      error = e.message;
    }
    let state = m === null ? (error === undefined ? null : 'unknown') : m.state;
    // Open past its open period: the next call probes. Until one comes the
    // state word says open; report what it is.
    if (state === 'open' && m.retryAfterMs === null) state = 'halfOpen';
    const rank = Math.max(snapshot === null ? 0 : RANK[snapshot.status], state === null ? 0 : RANK[breakerStatus(state)]);
    overall = Math.max(overall, d.critical ? rank : Math.min(rank, 1));
    dependencies[name] = { status: STATUS[rank], breaker: state, health: snapshot };
    if (error !== undefined) dependencies[name].error = error;
    // A shared breaker's permits or probes held by dead workers, until a caller
    // gives them back (DESIGN §8): reported, they change no status.
    if (m !== null && m.permitsAbandoned > 0) dependencies[name].abandoned = m.permitsAbandoned;
  }
  return [overall === 2 ? 503 : 200, { status: STATUS[overall], dependencies }];
}

module.exports = {
  defaultPriority, middlewareOptions, requestDeadline, openRequest, admit, refusal, enter, healthOptions, healthReport,
};
