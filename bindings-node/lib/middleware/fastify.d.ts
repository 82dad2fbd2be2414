// Types of `seawall/fastify` (CommonJS: `import seawallFastify = require('seawall/fastify')`,
// or its `default`).
import type { FastifyPluginCallback, FastifyRequest } from 'fastify';
import type { MiddlewareOptions, HealthEndpointOptions } from './common';
import type { Priority } from '../index';

declare namespace seawallFastify {
  interface SeawallFastifyOptions extends MiddlewareOptions<FastifyRequest> {
    /** Adds the health route (`path`, default `/health`). */
    health?: HealthEndpointOptions;
  }
  type HealthReport = import('./common').HealthReport;
  type HealthDependency = import('./common').HealthDependency;
}

/** The plugin: shedding and the deadline in onRequest, the ambient call context from preHandler, the health route. */
declare const seawallFastify: FastifyPluginCallback<seawallFastify.SeawallFastifyOptions> & {
  default: FastifyPluginCallback<seawallFastify.SeawallFastifyOptions>;
  seawallFastify: FastifyPluginCallback<seawallFastify.SeawallFastifyOptions>;
  defaultPriority(req: { url?: string; originalUrl?: string }): Priority;
};
export = seawallFastify;
