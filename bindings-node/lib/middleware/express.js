'use strict';
// Express middleware (`require('seawall/express')`): see ./common.js. Mount it
// first, so a shed request costs no body parsing:
//   app.use(middleware({ bulkhead, getPriority }));
//   app.use(express.json());
//   app.get('/health', health({ dependencies: { inventory: { health, breaker } } }));

const { withCallContext } = require('../context');
const common = require('./common');

function send(res, status, headers, body) {
  if (res.headersSent || res.destroyed) return;
  res.statusCode = status;
  for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
  res.setHeader('content-type', 'application/json; charset=utf-8');
  res.end(JSON.stringify(body));
}

/**
 * The middleware: load shedding through `options.bulkhead` (if given) at the
 * priority `getPriority(req)` gives (default: /health critical, /payments
 * high, the rest normal), 503 with Retry-After (`retryAfterMs`, default 1000,
 * sent in whole seconds) when refused; the request's deadline from the header
 * `deadlineHeader` (default `x-request-deadline-ms`; false: none), at most
 * `maxDeadlineMs`, else `defaultDeadlineMs`, 400 for a bad header; the rest of
 * the chain runs in the ambient call context `{ signal, deadline }`.
 * Throws EINVALIDCONFIG naming a bad option.
 */
function middleware(options = {}) {
  const o = common.middlewareOptions(options);
  return function seawallMiddleware(req, res, next) {
    let deadline;
    try {
      deadline = common.requestDeadline(o, req.headers);
    } catch (e) {
      send(res, 400, {}, { error: e.message });
      return;
    }
    const request = common.openRequest(res, deadline);
    common.enter(o, req, request, () => withCallContext(request.context, () => next()), next,
      (status, headers, body) => send(res, status, headers, body));
  };
}

/** A route handler answering the health report (200, or 503 when unhealthy) of `{ dependencies }`. */
function health(options) {
  const { dependencies } = common.healthOptions(options);
  return function seawallHealth(req, res) {
    const [status, body] = common.healthReport(dependencies);
    send(res, status, { 'cache-control': 'no-store' }, body);
  };
}

module.exports = { middleware, health, defaultPriority: common.defaultPriority };
