'use strict';
// Fastify plugin (`require('seawall/fastify')`): see ./common.js.
//   fastify.register(require('seawall/fastify'), {
//     bulkhead, getPriority, health: { dependencies: { inventory: { health, breaker } } },
//   });
// Shedding and the deadline start in onRequest (before a body is read), and the
// handler runs in the ambient call context from preHandler (after the body is
// parsed: a body arrives through the request stream's events, where a context
// entered earlier does not reach). The plugin is not encapsulated: its hooks
// apply to every route of the instance that registers it.

const { withCallContext } = require('../context');
const { configError } = require('../errors');
const common = require('./common');

const REQUEST = Symbol('seawall.request');

/**
 * The plugin. Options: those of the Express middleware (bulkhead, getPriority,
 * retryAfterMs, deadlineHeader, maxDeadlineMs, defaultDeadlineMs) and `health`:
 * `{ path = '/health', dependencies }` adds the health route. Throws
 * EINVALIDCONFIG naming a bad option.
 */
function seawallFastify(fastify, options, done) {
  const { health, ...rest } = options;
  const o = common.middlewareOptions(rest);
  const report = health === undefined ? undefined : common.healthOptions(health);
  if (report !== undefined && (typeof report.path !== 'string' || !report.path.startsWith('/'))) {
    throw configError('health.path', 'must be a path starting with /');
  }
  fastify.addHook('onRequest', (request, reply, next) => {
    let deadline;
    try {
      deadline = common.requestDeadline(o, request.headers);
    } catch (e) {
      reply.code(400).send({ error: e.message });
      return;
    }
    const open = common.openRequest(reply.raw, deadline);
    request[REQUEST] = open;
    common.enter(o, request, open, () => next(), next,
      (status, headers, body) => reply.code(status).headers(headers).send(body));
  });
  fastify.addHook('preHandler', (request, reply, next) => {
    const open = request[REQUEST];
    if (open === undefined) next();
    else withCallContext(open.context, next);
  });
  if (report !== undefined) {
    fastify.get(report.path, (request, reply) => {
      const [status, body] = common.healthReport(report.dependencies);
      reply.code(status).header('cache-control', 'no-store').send(body);
    });
  }
  done();
}

// fastify-plugin's marks, without depending on it: not encapsulated, and named.
seawallFastify[Symbol.for('skip-override')] = true;
seawallFastify[Symbol.for('fastify.display-name')] = 'seawall';

module.exports = seawallFastify;
module.exports.default = seawallFastify;
module.exports.seawallFastify = seawallFastify;
module.exports.defaultPriority = common.defaultPriority;
