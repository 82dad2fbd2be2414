// Types of seawall/opossum: opossum's CircuitBreaker on seawall's breaker.
// `import CircuitBreaker from 'seawall/opossum'` or
// `const CircuitBreaker = require('seawall/opossum')`. Durations in ms.

import { EventEmitter } from 'node:events';
import type { BreakerMetrics } from './index';

declare namespace CircuitBreaker {
  /** A custom cache: `set`'s third argument is the expiry (ms since the epoch, 0: none). */
  interface CacheTransport<T = unknown> {
    get(key: string): T | undefined;
    set(key: string, value: T, expiresAt: number): void;
    flush(): void;
  }

  interface Options<TI extends unknown[] = unknown[]> {
    /** Stats to start from (CircuitBreaker.newStatus, or a stats record). */
    status?: Status | Partial<Stats>;
    /** ms a call may take before it fails with ETIMEDOUT; `false` (or 0): no limit. Default 10000. */
    timeout?: number | false;
    /** Deprecated by opossum; accepted and ignored. */
    maxFailures?: number;
    /** ms open before half-open. Default 30000. */
    resetTimeout?: number;
    /** ms of the rolling window the error rate is taken over. Default 10000. */
    rollingCountTimeout?: number;
    /** Buckets of the rolling window. Default 10. */
    rollingCountBuckets?: number;
    /** Default: the action's name. */
    name?: string;
    /** Accepted; latency percentiles are not kept (stats report -1). */
    rollingPercentilesEnabled?: boolean;
    /** Calls at once; more are refused with ESEMLOCKED. Default unbounded. */
    capacity?: number;
    /** Open when failures / calls in the window is above this (percent). Default 50. */
    errorThresholdPercentage?: number;
    /** Default true. */
    enabled?: boolean;
    /** No opening during the first rollingCountTimeout ms. Default false. */
    allowWarmUp?: boolean;
    /** Calls the window must hold before it can open. Default 0. */
    volumeThreshold?: number;
    /** A true result: the error counts as a success (and still rejects, with no fallback). */
    errorFilter?: (err: any, ...args: TI) => boolean;
    /** Cache the first successful result per key. Default false. */
    cache?: boolean;
    /** ms a cached result lives; 0: until evicted. Default 0. */
    cacheTTL?: number;
    /** Entries of the built-in cache (least recently used evicted). Default 1024. */
    cacheSize?: number;
    /** The cache and coalescing key of a call. Default `JSON.stringify(args)`. */
    cacheGetKey?: (...args: TI) => string;
    cacheTransport?: CacheTransport;
    /** Concurrent calls with one key share one call. Default false. */
    coalesce?: boolean;
    /** ms a coalesced call is shared; 0: until evicted. Default: timeout. */
    coalesceTTL?: number;
    coalesceSize?: number;
    coalesceResetOn?: Array<'error' | 'success' | 'timeout'>;
    /** Aborted when a call times out. */
    abortController?: AbortController;
    /** Emit `snapshot` on `status` each bucket (only once something listens). Default true. */
    enableSnapshots?: boolean;
    /** An emitter of 'rotate' events that drives the snapshots instead of a timer. */
    rotateBucketController?: EventEmitter;
    /** A fresh AbortController on halfOpen / close when the old one was aborted. Default false. */
    autoRenewAbortController?: boolean;
    /** Default: the name. */
    group?: string;
    /** A state record of `toJSON().state` to start in. */
    state?: Partial<State>;
    /** seawall: one breaker for every process of the host (a region name in /dev/shm). */
    shared?: string;
  }

  interface State {
    name: string;
    enabled: boolean;
    closed: boolean;
    open: boolean;
    halfOpen: boolean;
    warmUp: boolean;
    shutdown: boolean;
    /** ms since the epoch of the last opening. */
    lastTimerAt: number | undefined;
  }

  interface Stats {
    failures: number;
    fallbacks: number;
    successes: number;
    rejects: number;
    fires: number;
    timeouts: number;
    cacheHits: number;
    cacheMisses: number;
    coalesceCacheHits: number;
    coalesceCacheMisses: number;
    semaphoreRejections: number;
    /** Always -1 (latencies are not kept). */
    percentiles: Record<string, number>;
    latencyTimes: number[];
    latencyMean: number;
  }

  class Status extends EventEmitter {
    constructor(options?: { stats?: Partial<Stats> });
    readonly stats: Stats;
    readonly window: Stats[];
    on(event: 'snapshot', listener: (stats: Stats) => void): this;
    on(event: string | symbol, listener: (...args: any[]) => void): this;
  }

  /** An error of the breaker itself (`CircuitBreaker.isOurError`). */
  interface OpossumError extends Error {
    code: 'EOPENBREAKER' | 'ETIMEDOUT' | 'ESEMLOCKED' | 'ESHUTDOWN';
    /** EOPENBREAKER: ms until half-open (undefined when half-open). */
    retryAfterMs?: number;
    /** ETIMEDOUT: the timeout. */
    timeoutMs?: number;
  }

  interface Events<TI extends unknown[], TR> {
    fire: [args: TI];
    reject: [err: OpossumError];
    timeout: [err: OpossumError, latencyMs: number, args: TI];
    success: [result: TR, latencyMs: number];
    failure: [err: any, latencyMs: number, args: TI];
    open: [];
    close: [];
    halfOpen: [resetTimeout: number];
    fallback: [result: unknown, err: any];
    semaphoreLocked: [err: OpossumError, latencyMs: number];
    healthCheckFailed: [err: any];
    shutdown: [];
    cacheHit: [];
    cacheMiss: [];
    coalesceCacheHit: [];
    coalesceCacheMiss: [];
  }
}

/** opossum's CircuitBreaker on seawall's native breaker. */
declare class CircuitBreaker<TI extends unknown[] = unknown[], TR = unknown> extends EventEmitter {
  static isOurError(error: unknown): boolean;
  static newStatus(options?: { stats?: Partial<CircuitBreaker.Stats> }): CircuitBreaker.Status;
  static readonly codes: { readonly EOPENBREAKER: 'EOPENBREAKER'; readonly ETIMEDOUT: 'ETIMEDOUT'; readonly ESEMLOCKED: 'ESEMLOCKED'; readonly ESHUTDOWN: 'ESHUTDOWN' };

  constructor(action: ((...args: TI) => TR | PromiseLike<TR>) | TR, options?: CircuitBreaker.Options<TI>);

  readonly options: CircuitBreaker.Options<TI>;
  readonly action: (...args: TI) => TR | PromiseLike<TR>;
  readonly name: string;
  readonly group: string;
  readonly enabled: boolean;
  readonly warmUp: boolean;
  readonly volumeThreshold: number;
  readonly isShutdown: boolean;
  readonly closed: boolean;
  readonly opened: boolean;
  readonly halfOpen: boolean;
  readonly pendingClose: boolean;
  readonly status: CircuitBreaker.Status;
  readonly stats: CircuitBreaker.Stats;
  /** seawall: whether the breaker is shared by the host's processes. */
  readonly isShared: boolean;

  fire(...args: TI): Promise<Awaited<TR>>;
  call(context: unknown, ...args: TI): Promise<Awaited<TR>>;
  fallback(func: ((...args: any[]) => unknown) | CircuitBreaker<any, any>): this;
  open(): void;
  close(): void;
  enable(): void;
  disable(): void;
  shutdown(): void;
  clearCache(): void;
  healthCheck(func: (this: this) => PromiseLike<unknown>, interval?: number): void;
  getSignal(): AbortSignal | undefined;
  getAbortController(): AbortController | undefined;
  toJSON(): { state: CircuitBreaker.State; status: CircuitBreaker.Stats };
  /** seawall's snapshot of the native breaker (what registerMetrics / instrumentOtel read). */
  metrics(): BreakerMetrics;

  on<E extends keyof CircuitBreaker.Events<TI, TR>>(event: E, listener: (...args: CircuitBreaker.Events<TI, TR>[E]) => void): this;
  on(event: string | symbol, listener: (...args: any[]) => void): this;
  once<E extends keyof CircuitBreaker.Events<TI, TR>>(event: E, listener: (...args: CircuitBreaker.Events<TI, TR>[E]) => void): this;
  once(event: string | symbol, listener: (...args: any[]) => void): this;
}

export = CircuitBreaker;
