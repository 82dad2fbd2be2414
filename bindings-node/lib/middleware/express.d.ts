// Types of `seawall/express` (no dependency on @types/express: Express's
// request and response are Node's).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { MiddlewareOptions, HealthEndpointOptions, PriorityRequest } from './common';

export type { MiddlewareOptions, HealthEndpointOptions, HealthDependency, HealthReport, PriorityRequest } from './common';
export { defaultPriority } from './common';

export type RequestHandler = (req: IncomingMessage & PriorityRequest, res: ServerResponse, next: (err?: unknown) => void) => void;

/** Shedding at the door, the request deadline and the ambient call context. Throws EINVALIDCONFIG naming a bad option. */
export declare function middleware(options?: MiddlewareOptions<any>): RequestHandler;
/** A route handler answering the health report. */
export declare function health(options: HealthEndpointOptions): (req: IncomingMessage, res: ServerResponse) => void;
