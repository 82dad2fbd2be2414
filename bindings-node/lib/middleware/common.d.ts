// Types shared by seawall/express and seawall/fastify.
import type { IncomingHttpHeaders } from 'node:http';
import type { Bulkhead, Priority, Health, CircuitBreaker, HealthStatus, BreakerState } from '../index';

/** What getPriority receives: the framework's request (its url and headers at least). */
export interface PriorityRequest { url?: string; originalUrl?: string; headers: IncomingHttpHeaders }

export interface MiddlewareOptions<Req = PriorityRequest> {
  /** Load shedding at the door: each request holds a permit of this bulkhead until its response closes. */
  bulkhead?: Bulkhead;
  /** The request's priority (default: /health critical, /payments high, the rest normal). */
  getPriority?: (req: Req) => Priority;
  /** The Retry-After of a 503 (ms, sent in whole seconds rounded up; default 1000). */
  retryAfterMs?: number;
  /** The header giving the request's budget in ms (default `x-request-deadline-ms`; false: none). */
  deadlineHeader?: string | false;
  /** The longest deadline a header may ask (ms). */
  maxDeadlineMs?: number;
  /** The deadline of a request without the header (ms; default none). */
  defaultDeadlineMs?: number;
}

export interface HealthDependency {
  health?: Health;
  breaker?: CircuitBreaker<any, any>;
  /** Whether this dependency being unhealthy makes the service unhealthy (default true; else degraded). */
  critical?: boolean;
}

export interface HealthEndpointOptions {
  dependencies: Record<string, HealthDependency>;
  /** The route (Fastify plugin only; default `/health`). */
  path?: string;
}

/** The health endpoint's JSON body (status code 503 when `status` is unhealthy, else 200). */
export interface HealthReport {
  status: HealthStatus;
  dependencies: Record<string, {
    status: HealthStatus;
    breaker: BreakerState | null;
    health: ReturnType<Health['snapshot']> | null;
  }>;
}

export declare function defaultPriority(req: PriorityRequest): Priority;
