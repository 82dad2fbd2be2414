// Types of the npm package `seawall`. Durations are milliseconds; rates, shares
// and thresholds are percentages (0–100). Errors thrown by seawall are
// `SeawallError`s with a `code`; the user's own errors pass through unchanged.

import { EventEmitter } from 'node:events';

/** What every seawall policy offers, so policies nest (`wrap`, `pipeline`). */
export interface Policy<Ctx = CallContext> {
  execute<T>(fn: (ctx: Ctx) => T | PromiseLike<T>, options?: ExecuteOptions | AbortSignal): Promise<T>;
}

/** What a protected function receives. */
export interface CallContext {
  /** Aborted when the caller's signal aborts (or, under `timeout`, when time is up). */
  signal: AbortSignal | undefined;
  /** The request's deadline, when a pipeline or retry has one. */
  deadline?: Deadline;
  /** 1 for the first attempt (under `retry`). */
  attempt?: number;
}

export interface ExecuteOptions {
  /** The caller's signal: an abort is the caller's own cancellation (ignored by breakers, DESIGN §1). */
  signal?: AbortSignal;
  /** A deadline the call must finish by (timeouts shrink to it; retries stop before it); anything but a Deadline throws EINVALIDCONFIG. */
  deadline?: Deadline;
  /** Bulkhead priority (default `normal`). */
  priority?: Priority;
}

export type Priority = 'critical' | 'high' | 'normal' | 'low';

export type ErrorCode =
  | 'ECIRCUITOPEN'
  | 'EBULKHEADFULL'
  | 'ETIMEDOUT'
  | 'ERATELIMITED'
  | 'ERETRYBUDGET'
  | 'EABORTED'
  | 'ECHAOS'
  | 'EINVALIDCONFIG'
  | 'ESHAREDMISMATCH'
  | 'ESHARED'
  | 'EPERMITS'
  | 'ENOTSUPPORTED'
  | 'EINTERNAL';

export declare const codes: Readonly<{ [K in ErrorCode]: K }>;

/** An error thrown by seawall itself. */
export declare class SeawallError extends Error {
  constructor(code: ErrorCode, message: string, props?: Record<string, unknown> & { cause?: unknown });
  code: ErrorCode;
  /** EINVALIDCONFIG: the option or argument at fault, e.g. `failureRateThreshold`, `window.size`, `attempt` or `nowMs`. */
  field?: string;
  /** ECIRCUITOPEN in `open`: ms until the breaker lets a probe through; ERATELIMITED: ms until the same request conforms (Infinity: never). */
  retryAfterMs?: number;
  /** ERATELIMITED: the rate limiter's name. */
  limiter?: string;
  /** ERATELIMITED: the key of a keyed rate limiter. */
  key?: string | number;
  /** ECIRCUITOPEN: the state that refused (`open`, `halfOpen`, `forcedOpen`). */
  state?: BreakerState;
  /** ECIRCUITOPEN: the breaker's name. */
  breaker?: string;
  /** EBULKHEADFULL: `shed` (load shedding), `full`, `queueTimeout`; ERETRYBUDGET: `budgetExhausted`, `throttled`. */
  reason?: string;
  /** EBULKHEADFULL: the bulkhead's name, and its occupancy when it refused. */
  bulkhead?: string;
  active?: number;
  queued?: number;
  /** ETIMEDOUT: the time allowed (ms). */
  timeoutMs?: number;
  /** ERETRYBUDGET: attempts made. */
  attempts?: number;
  /** ESHAREDMISMATCH: the region name given as `shared`. */
  shared?: string;
}

/** Whether `e` was thrown by seawall (optionally with `code`). */
export declare function isSeawallError(e: unknown, code?: ErrorCode): e is SeawallError;

/** A listener registration: `dispose()` (or `using`) removes it. */
export interface Disposable {
  dispose(): void;
  [Symbol.dispose](): void;
}

export type BreakerState = 'closed' | 'open' | 'halfOpen' | 'forcedOpen' | 'disabled';

export type WindowOptions =
  | { kind: 'count'; size: number }
  | { kind: 'time'; buckets?: number; bucketMs?: number };

/** Every option of DESIGN §3, camelCase, milliseconds, percentages. */
export interface CircuitBreakerOptions<T = unknown> {
  /** For events and metrics. Default `breaker-N` (or the `shared` name). */
  name?: string;
  /** Share this breaker with every process of the host under this name (`/dev/shm/seawall-breaker-<name>`). */
  shared?: string;
  /**
   * Shared breakers only: how many calls of every process sharing it may be in
   * flight at once, one of 256, 4096 (default), 32768, 262144; the next is
   * refused with EPERMITS. Every process must give the same size
   * (ESHAREDMISMATCH, field `permitSlots`, otherwise); another value, or one
   * without `shared`, is EINVALIDCONFIG.
   */
  permitSlots?: 256 | 4096 | 32768 | 262144;
  /** Sliding window. Default `{ kind: 'time', buckets: 10, bucketMs: 1000 }`. Count ≤ 1024 calls, time ≤ 128 buckets. */
  window?: WindowOptions;
  /** Calls the window must hold before a rate can open the breaker. Default 20. */
  minimumCalls?: number;
  /** Open at this failure rate (percent). `null`: rule off. Default 50. */
  failureRateThreshold?: number | null;
  /** A call slower than this (ms) is slow. `null`/absent: slow rule off. */
  slowCallDurationMs?: number | null;
  /** Open at this slow-call rate (percent). Default 100. */
  slowCallRateThreshold?: number;
  /** Open after this many failures in a row. `null`/absent: off. */
  consecutiveFailures?: number | null;
  /** First open period (ms). Default 30 000. */
  openDurationMs?: number;
  /** Each consecutive opening lasts this many times longer (≥ 1). Default 1. */
  openBackoffMultiplier?: number;
  /**
   * Cap of an open period's growth (ms). `null`: uncapped. Default 300 000, or
   * `openDurationMs` when that is longer and the multiplier is 1 (a longer
   * open duration with a multiplier above 1 needs this set: EINVALIDCONFIG).
   */
  maxOpenDurationMs?: number | null;
  /** ± jitter of an open period (0–1). Default 0. */
  openJitterFactor?: number;
  /** Probes in flight at once in half-open. Default 1. */
  halfOpenMaxCalls?: number;
  /** Successful probes that close. Default 1. */
  halfOpenSuccessThreshold?: number;
  /** Half-open with no decision for this long (ms) reopens. `null`/absent: wait forever. */
  halfOpenMaxWaitMs?: number | null;
  /** `false` marks an error `ignored` (neither success nor failure). Default: every error is a failure. */
  isFailure?: (error: unknown) => boolean;
  /**
   * `true` marks a returned value a failure (cockatiel `handleWhenResult`): recorded
   * as one (it may open the breaker), the caller still gets the value.
   */
  isFailureResult?: (value: T) => boolean;
  /** opossum's name: `true` marks an error `ignored` (opossum counts it a success; seawall ignores it, DESIGN §1). */
  errorFilter?: (error: unknown) => boolean;
  /** Called with the error when the breaker refuses or the call fails; its result is returned instead. */
  fallback?: (error: unknown) => T | PromiseLike<T>;
  /**
   * Start from a record of `toJSON()` (DESIGN §3.7): `open` for exactly the time
   * it had left, `halfOpen` as open with no time left, the others as they were.
   * A bad record: EINVALIDCONFIG naming the field; a shared breaker that another
   * process made in another state: ESHAREDMISMATCH.
   */
  initialState?: BreakerStateRecord;
}

/** A breaker's exported state (`toJSON()`), the `initialState` of a new one. */
export interface BreakerStateRecord {
  version: 1;
  state: BreakerState;
  /** Consecutive openings (k of DESIGN §3.2). */
  openings: number;
  /** Time `open` has left (ms); null in other states. */
  retryAfterMs: number | null;
}

export interface BreakerMetrics {
  name: string;
  shared: boolean;
  state: BreakerState;
  epoch: number;
  window: { calls: number; failures: number; slowCalls: number; slowFailures: number };
  /** Percent, null for an empty window. */
  failureRate: number | null;
  slowCallRate: number | null;
  consecutiveFailures: number;
  halfOpenInFlight: number;
  halfOpenSuccesses: number;
  openings: number;
  retryAfterMs: number | null;
  totals: {
    admitted: number; rejected: number; successes: number; failures: number;
    slow: number; ignored: number; stale: number; transitions: number;
  };
  /** Shared breakers: permits admitted and not yet recorded, over every process. */
  permitsOutstanding: number | null;
  /** Shared breakers: permits (probes included) held by processes that died, until a caller gives them back; null when local. */
  permitsAbandoned: number | null;
}

export interface BreakerEvents {
  open: [{ retryAfterMs: number | undefined; epoch: number }];
  halfOpen: [{ epoch: number }];
  close: [{ epoch: number }];
  forcedOpen: [{ epoch: number }];
  disabled: [{ epoch: number }];
  reject: [SeawallError];
  success: [{ durationMs: number }];
  /** `result`: the returned value an `isFailureResult` marked a failure (`error` undefined). */
  failure: [{ error: unknown; result?: unknown; durationMs: number }];
  stateChange: [{ from: BreakerState; to: BreakerState; epoch: number }];
}

/** A circuit breaker (DESIGN §3) on the Rust core. */
export declare class CircuitBreaker<A extends unknown[] = unknown[], R = unknown> extends EventEmitter implements Policy {
  constructor(options?: CircuitBreakerOptions<R>);
  /** opossum style: an action for `fire(...args)`. */
  constructor(action: (...args: A) => R | PromiseLike<R>, options?: CircuitBreakerOptions<R>);
  readonly name: string;
  readonly state: BreakerState;
  readonly isShared: boolean;
  execute<T>(fn: (ctx: { signal: AbortSignal | undefined }) => T | PromiseLike<T>, options?: ExecuteOptions | AbortSignal): Promise<T>;
  fire(...args: A): Promise<Awaited<R>>;
  wrap<P extends unknown[], T>(fn: (...args: P) => T | PromiseLike<T>): (...args: P) => Promise<Awaited<T>>;
  metrics(): BreakerMetrics;
  forceOpen(): void;
  disable(): void;
  reset(): void;
  reclaimAbandoned(): number;
  static unlinkShared(name: string): void;
  subscribe<E extends keyof BreakerEvents>(event: E, listener: (...args: BreakerEvents[E]) => void): Disposable;
  onOpen(listener: (...args: BreakerEvents['open']) => void): Disposable;
  onHalfOpen(listener: (...args: BreakerEvents['halfOpen']) => void): Disposable;
  onClose(listener: (...args: BreakerEvents['close']) => void): Disposable;
  onReject(listener: (...args: BreakerEvents['reject']) => void): Disposable;
  onSuccess(listener: (...args: BreakerEvents['success']) => void): Disposable;
  onFailure(listener: (...args: BreakerEvents['failure']) => void): Disposable;
  onStateChange(listener: (...args: BreakerEvents['stateChange']) => void): Disposable;
  /** The state as a plain record, for `initialState` (serverless cold starts). */
  toJSON(): BreakerStateRecord;
  on<E extends keyof BreakerEvents>(event: E, listener: (...args: BreakerEvents[E]) => void): this;
  on(event: string | symbol, listener: (...args: any[]) => void): this;
}

/**
 * The breaker driven by hand, with the caller's clock (`nowMs`, a finite number
 * ≥ 0). `permit` is what `tryAcquire` gave (a whole number ≥ 0), `durationMs` a
 * finite number ≥ 0; anything else throws EINVALIDCONFIG naming the argument.
 */
export declare class BreakerCore {
  constructor(options?: Omit<CircuitBreakerOptions, 'isFailure' | 'errorFilter' | 'fallback'>);
  tryAcquire(nowMs: number): { permit: number; error?: undefined } | { permit?: undefined; error: SeawallError };
  record(permit: number, outcome: 'success' | 'failure' | 'ignored', durationMs: number, nowMs: number): void;
  readonly state: BreakerState;
  retryAfterMs(nowMs: number): number | null;
  metrics(nowMs: number): Record<string, unknown>;
  forceOpen(): void;
  disable(): void;
  reset(): void;
}

export type Jitter = 'none' | 'full' | 'equal' | 'decorrelated' | 'proportional';

/** The exponential family (the core's), the default kind. */
export interface BackoffOptions {
  kind?: 'exponential';
  /** First delay (ms). Default 100; 0: no delay at all (retry at once). */
  baseMs?: number;
  /** Growth per attempt (≥ 1). Default 2. */
  multiplier?: number;
  /** Cap (ms). Default 10 000. */
  maxMs?: number;
  /** Default `full` (AWS full jitter). */
  jitter?: Jitter;
  /** Proportional jitter only: ± this fraction (0–1). Default 0.2. */
  jitterFactor?: number;
}

/** Jitter of a wait that is not exponential: none (the default), full, equal or proportional. */
export type OwnJitter = 'none' | 'full' | 'equal' | 'proportional';
/** The same delay every time (ms, ≥ 0); jitter default none. */
export interface ConstantBackoff { kind: 'constant'; delayMs: number; jitter?: Jitter; jitterFactor?: number }
/** `min(maxMs, baseMs + stepMs·(attempt−1))` (ms; base default 0, step default base, cap default 10 000). */
export interface LinearBackoff { kind: 'linear'; baseMs?: number; stepMs?: number; maxMs?: number; jitter?: OwnJitter; jitterFactor?: number }
/** These delays in turn (ms), the last one repeating. */
export interface ListBackoff { kind: 'list'; delaysMs: number[]; jitter?: OwnJitter; jitterFactor?: number }
/**
 * The delay (ms, ≥ 0) before retry `attempt`, after `error` (undefined when a
 * returned `result` was the failure). Retry-After still raises it; a delay past
 * the deadline still gives up.
 */
export type BackoffFunction = (attempt: number, error: unknown, result?: unknown) => number;
/** Every form of a retry's `backoff`; bad values throw EINVALIDCONFIG naming the field. */
export type AnyBackoff = BackoffOptions | ConstantBackoff | LinearBackoff | ListBackoff | number[] | BackoffFunction;

/**
 * Test mode for retries (stamina's set_testing), process-wide: `true` makes
 * every retry skip its sleep (the delay is still decided and given to
 * `onRetry`); `{ attempts }` also caps every policy's attempts; `false` turns it
 * off. Returns the settings it replaced.
 */
export declare function setTesting(mode: boolean | { sleep?: boolean; attempts?: number }): { sleep: boolean; attempts: number | undefined };

export interface RetryBudgetOptions {
  /** Window of deposits and withdrawals (ms). Default 10 000. */
  ttlMs?: number;
  /** Retries always allowed per second of the window. Default 10. */
  minRetriesPerSec?: number;
  /** Percent of a retry each request deposits (0–1000). Default 20. */
  percentCanRetry?: number;
  /** Default: the `shared` name, if any. */
  name?: string;
  /**
   * Share this budget with every process of the host under this name
   * (`/dev/shm/seawall-retry-budget-<name>`). Every process must give the same
   * `ttlMs`, `minRetriesPerSec` and `percentCanRetry` (ESHAREDMISMATCH otherwise).
   */
  shared?: string;
}

/**
 * Finagle RetryBudget (DESIGN §4). Times `nowMs` are of the OS monotonic clock
 * (`monotonicMs()`), default now; a given `nowMs` must be a finite number ≥ 0
 * (else EINVALIDCONFIG, `field` `nowMs`).
 */
export declare class RetryBudget {
  constructor(options?: RetryBudgetOptions);
  readonly name: string | undefined;
  readonly isShared: boolean;
  deposit(nowMs?: number): void;
  tryWithdraw(nowMs?: number): boolean;
  /**
   * `requests`, `retries` and `available` in the live window; `allowed` and `refused`:
   * withdrawals since the budget was made (of every process, for a shared budget).
   */
  snapshot(nowMs?: number): { requests: number; retries: number; available: number; allowed: number; refused: number };
  /** Remove the shared budget `name` (a missing one is fine); attached processes keep theirs. */
  static unlinkShared(name: string): void;
}

export interface RetryThrottleOptions {
  /** gRPC maxTokens (0 < n ≤ 1000). Default 10. */
  maxTokens?: number;
  /** gRPC tokenRatio (> 0, 3 decimals). Default 0.1. */
  tokenRatio?: number;
  /** Default: the `shared` name, if any. */
  name?: string;
  /**
   * Share this throttle with every process of the host under this name
   * (`/dev/shm/seawall-retry-throttle-<name>`). Every process must give the same
   * `maxTokens` and `tokenRatio` to 3 decimals (ESHAREDMISMATCH otherwise).
   */
  shared?: string;
}

/** gRPC A6 retry throttling (DESIGN §4). */
export declare class RetryThrottle {
  constructor(options?: RetryThrottleOptions);
  readonly name: string | undefined;
  readonly isShared: boolean;
  recordFailure(): boolean;
  recordSuccess(): void;
  readonly tokens: number;
  /** Remove the shared throttle `name` (a missing one is fine); attached processes keep theirs. */
  static unlinkShared(name: string): void;
}

/**
 * Backoff delays on their own (DESIGN §4). `attempt` is the retry's number, a
 * whole number ≥ 1 (the first retry is 1); `previousMs` the last delay (ms,
 * finite, ≥ 0, default 0; decorrelated jitter uses it); `seed` any finite
 * number. Anything else (NaN, 0, −1, 1.5, '3') throws EINVALIDCONFIG naming
 * the argument.
 */
export declare class Backoff {
  constructor(options?: AnyBackoff);
  /** The delay (ms) before retry `attempt`, jitter applied. */
  delayMs(attempt: number, previousMs?: number): number;
  /** `min(maxMs, baseMs · multiplier^(attempt−1))` (ms), no jitter. */
  exponentialMs(attempt: number): number;
  /** Restart the jitter's random sequence from `seed` (tests). */
  reseed(seed: number): void;
}

export interface RetryOptions {
  /** Attempts in all, the first included. Default 3. */
  attempts?: number;
  backoff?: AnyBackoff;
  /** Whether to retry after `error` (default: every error but EABORTED). */
  shouldRetry?: (error: unknown, attempt: number) => boolean;
  /**
   * Whether a returned value is a failure to retry (an HTTP 503 returned, not
   * thrown; tenacity `retry_if_result`). When retrying stops, the caller gets
   * the last value, not an error.
   */
  retryOnResult?: (value: any, attempt: number) => boolean;
  budget?: RetryBudget;
  throttle?: RetryThrottle;
  /** A total deadline for all attempts and delays (ms). */
  deadlineMs?: number;
  /**
   * The server's requested delay (ms) for `error` (or the returned failure);
   * default reads `retryAfterMs` or a Retry-After header (`headers`, a fetch
   * Response's too).
   */
  retryAfterMs?: (error: unknown) => number | undefined;
  /** Called before each backoff sleep; `result` is the returned failure, when it was one. */
  onRetry?: (info: { attempt: number; delayMs: number; error: unknown; result?: unknown }) => void;
  /** For metrics. Default `retry-N`. */
  name?: string;
}

/** A retry policy's decisions so far. */
export interface RetryMetrics {
  name: string;
  /** Retries allowed. */
  retries: number;
  /** Calls that stopped retrying, by the core's reason. */
  giveUps: { maxAttempts: number; deadline: number; budgetExhausted: number; throttled: number };
}

export interface RetryContext {
  attempt: number;
  signal: AbortSignal | undefined;
  deadline: Deadline | undefined;
}

/** Why a retry policy stopped retrying. */
export type GiveUpReason = 'maxAttempts' | 'deadline' | 'budgetExhausted' | 'throttled' | 'notRetryable' | 'aborted';
/** Each retry: the failed attempt, the delay before the next, its error or returned failure. */
export interface RetryEvent { attempt: number; delayMs: number; error: unknown; result?: unknown }
/** A give-up: why, after how many attempts, and the last error or returned failure. */
export interface GiveUpEvent { reason: GiveUpReason; attempts: number; error: unknown; result: unknown }

/**
 * A reusable retry policy. Events `retry` and `giveUp` (also `onRetry(fn)` /
 * `onGiveUp(fn)`, returning a Disposable); a listener that throws changes nothing.
 */
export declare class Retry extends EventEmitter implements Policy<RetryContext> {
  constructor(options?: RetryOptions);
  readonly attempts: number;
  readonly name: string;
  metrics(): RetryMetrics;
  onRetry(listener: (event: RetryEvent) => void): Disposable;
  onGiveUp(listener: (event: GiveUpEvent) => void): Disposable;
  execute<T>(fn: (ctx: RetryContext) => T | PromiseLike<T>, options?: ExecuteOptions | AbortSignal): Promise<T>;
}

/** p-retry style. */
export declare function retry<T>(
  fn: (ctx: RetryContext) => T | PromiseLike<T>,
  options?: RetryOptions & { signal?: AbortSignal },
): Promise<T>;

export interface BulkheadOptions {
  /** Calls at once, 1 ..= 1 048 575 (a shared bulkhead: ≤ 4096). Default 10. */
  maxConcurrent?: number;
  /** Callers that may wait (FIFO), 0 ..= 32768 (a shared bulkhead: ≤ 1024). Default 0. */
  maxQueue?: number;
  /**
   * Longest wait for a permit (ms, > 0, any length: waits past Node's 24.8-day
   * setTimeout limit are chained, never cut to 1 ms). Default and `Infinity`: no limit.
   */
  queueTimeoutMs?: number;
  /** Percent of maxConcurrent each priority may use (load shedding); default 100 each. */
  shares?: Partial<Record<Priority, number>>;
  /** For errors and metrics. Default `bulkhead-N` (or the `shared` name). */
  name?: string;
  /**
   * Share this bulkhead with every process of the host under this name
   * (`/dev/shm/seawall-semaphore-<name>`): `maxConcurrent` calls at once over all
   * of them, one FIFO queue. Every process must give the same `maxConcurrent`
   * (≤ 4096), `maxQueue` (≤ 1024) and `shares` (ESHAREDMISMATCH otherwise);
   * `queueTimeoutMs` and `name` are each process's own. While this process has
   * waiters, a native thread (Linux: a futex on the region's release counter)
   * wakes them when another process releases; elsewhere it polls every 2 ms.
   */
  shared?: string;
}

export interface BulkheadMetrics {
  name: string;
  shared: boolean;
  /** Permits held now (of every process, for a shared bulkhead). */
  active: number;
  /** Waiters now (of every process, for a shared bulkhead). */
  queued: number;
  maxConcurrent: number;
  maxQueue: number;
  queueRing: number;
  limits: Record<Priority, number>;
  /** Calls that got a permit (of every process, for a shared bulkhead). */
  admitted: number;
  /** Calls refused (of every process, for a shared bulkhead). */
  rejected: { shed: number; full: number; queueTimeout: number; aborted: number };
  /** Shared: permits callers of every process hold (a scan of the holder table); null when local. */
  permitsOutstanding: number | null;
  /** Shared: tickets callers of every process hold (waiting, or granted and not yet taken); null when local. */
  ticketsOutstanding: number | null;
  /** Shared: permits held by processes that died, until a caller gives them back; null when local. */
  permitsAbandoned: number | null;
  /** Shared: tickets held by processes that died; null when local. */
  ticketsAbandoned: number | null;
}

/** A bulkhead's refusal. */
export interface BulkheadRejectEvent {
  reason: 'shed' | 'full' | 'queueTimeout';
  priority: Priority;
  active: number;
  queued: number;
  error: SeawallError;
}

/** Bulkhead with priority load shedding (DESIGN §5). Event `reject` (also `onReject(fn)`). */
export declare class Bulkhead extends EventEmitter implements Policy {
  constructor(options?: BulkheadOptions);
  onReject(listener: (event: BulkheadRejectEvent) => void): Disposable;
  readonly name: string;
  readonly maxConcurrent: number;
  readonly maxQueue: number;
  readonly isShared: boolean;
  execute<T>(fn: (ctx: { signal: AbortSignal | undefined }) => T | PromiseLike<T>, options?: ExecuteOptions | AbortSignal): Promise<T>;
  wrap<P extends unknown[], T>(fn: (...args: P) => T | PromiseLike<T>, options?: ExecuteOptions): (...args: P) => Promise<Awaited<T>>;
  metrics(): BulkheadMetrics;
  /**
   * Shared: release now the permits and cancel the tickets of processes that
   * died holding or waiting (the next refused or queued caller does it by
   * itself); zeros when local.
   */
  reclaimAbandoned(): { permits: number; tickets: number };
  /** Remove the shared bulkhead `name` (a missing one is fine); attached processes keep theirs. */
  static unlinkShared(name: string): void;
}

/** The semaphore driven by hand. A `ticket` is what `acquire` gave (a whole number ≥ 0; else EINVALIDCONFIG). */
export declare class SemaphoreCore {
  constructor(options?: Omit<BulkheadOptions, 'queueTimeoutMs' | 'name' | 'shared'>);
  acquire(priority?: Priority, wait?: boolean): { admitted: true } | { ticket: number } | { error: SeawallError };
  poll(ticket: number): 'waiting' | 'granted' | 'cancelled' | 'unknown';
  cancel(ticket: number): 'cancelled' | 'passedOn' | 'unknown';
  release(): boolean;
  snapshot(): { active: number; queued: number };
}

/**
 * A timeout: each call gets its own AbortSignal, aborted when its time is up.
 * `ms` > 0, any length (a timer past Node's 24.8-day setTimeout limit is
 * chained, never cut to 1 ms); `Infinity`: no timer, only the deadline and the
 * caller's signal end the call. Anything else throws EINVALIDCONFIG (`field`
 * `timeoutMs`).
 */
/**
 * When time is up both abort the call's signal; `aggressive` (the default)
 * rejects with ETIMEDOUT at once, `cooperative` waits for the call to settle
 * first, then rejects with ETIMEDOUT. Anything else: EINVALIDCONFIG (`strategy`).
 */
export type TimeoutStrategy = 'aggressive' | 'cooperative';
/** Event `timeout` (also `onTimeout(fn)`): a call ran out of time. */
export declare class Timeout extends EventEmitter implements Policy {
  constructor(ms: number, strategy?: TimeoutStrategy);
  readonly ms: number;
  readonly strategy: TimeoutStrategy;
  onTimeout(listener: (event: { timeoutMs: number; byDeadline: boolean; error: SeawallError }) => void): Disposable;
  execute<T>(fn: (ctx: { signal: AbortSignal; deadline: Deadline | undefined }) => T | PromiseLike<T>, options?: ExecuteOptions | AbortSignal): Promise<T>;
}
export declare function timeout(ms: number, strategy?: TimeoutStrategy): Timeout;

/**
 * A deadline budget (DESIGN §6) on performance.now(), or your `nowMs` (any
 * finite number). `totalMs` > 0 and finite, `maxMs` ≥ 0 (Infinity allowed);
 * anything else throws EINVALIDCONFIG naming the argument.
 */
export declare class Deadline {
  constructor(totalMs: number, options?: { nowMs?: number });
  static after(ms: number): Deadline;
  readonly startMs: number;
  readonly endMs: number;
  remainingMs(nowMs?: number): number;
  expired(nowMs?: number): boolean;
  allocateMs(maxMs: number, nowMs?: number): number;
  child(totalMs: number, nowMs?: number): Deadline;
}

/** Nest policies, the first outermost. */
export declare function wrap(...policies: Policy<any>[]): Policy<CallContext> & { policies: Policy<any>[] };

/** The last good value per key (lru-cache), for stale-if-error fallbacks. */
export declare class StaleCache<K extends {} = string, V extends {} = {}> {
  /** `max`: keys kept (default 1024, the same as Python's); `maxStaleMs`: age limit (default none). */
  constructor(options?: { max?: number; maxStaleMs?: number });
  set(key: K, value: V): void;
  get(key: K): V | undefined;
  delete(key: K): void;
  readonly size: number;
}

export interface PipelineOptions {
  bulkhead?: Policy<any>;
  breaker?: Policy<any>;
  retry?: Policy<any>;
  /** Inside retry, outside timeout: every attempt spends a cell. */
  rateLimiter?: Policy<any>;
  timeout?: Policy<any>;
  /** A deadline for the whole call (ms). */
  deadlineMs?: number;
  /** Tried in order when the call fails (after the stale cache); `result` is a returned failure. */
  fallback?: ((error: unknown, info: { key: unknown; result?: unknown }) => unknown) | Array<(error: unknown, info: { key: unknown; result?: unknown }) => unknown>;
  /**
   * `true` marks the returned value a failure: not cached, the stale cache and
   * fallbacks answer as for an error, and with none the value is the answer
   * (`degraded: true`).
   */
  isFailureResult?: (value: any) => boolean;
  staleCache?: StaleCache<any, any> | { max?: number; maxStaleMs?: number };
}

export type Source = 'primary' | 'stale-cache' | `fallback-${number}`;

export interface PipelineResult<T> {
  value: T;
  source: Source;
  degraded: boolean;
  /** The primary's error, when degraded. */
  error?: unknown;
  /** The primary's returned failure (`isFailureResult`), when the stale cache or a fallback answered instead. */
  result?: unknown;
}

/** DESIGN §9 order: fallback → bulkhead → breaker → retry → timeout/deadline → call. */
export declare class Pipeline extends EventEmitter {
  constructor(options?: PipelineOptions);
  readonly staleCache: StaleCache<any, any> | undefined;
  /** Event `fallback`: the stale cache or a fallback answered (`source`), after `error` or a returned failure `result`. */
  onFallback(listener: (event: { source: Source; error: unknown; result: unknown }) => void): Disposable;
  execute<T>(fn: (ctx: CallContext) => T | PromiseLike<T>, options?: (ExecuteOptions & { key?: unknown }) | AbortSignal): Promise<PipelineResult<Awaited<T>>>;
}
export declare function pipeline(options?: PipelineOptions): Pipeline;

export interface HealthOptions {
  buckets?: number;
  bucketMs?: number;
  degradedErrorRate?: number;
  unhealthyErrorRate?: number;
  degradedP99Ms?: number;
  unhealthyP99Ms?: number;
}

export type HealthStatus = 'healthy' | 'degraded' | 'unhealthy';

/**
 * Windowed latency and errors of a dependency (DESIGN §7). `nowMs`: the OS
 * monotonic clock (`monotonicMs()`), default now; a given one must be a finite
 * number ≥ 0.
 */
export declare class Health {
  constructor(options?: HealthOptions);
  /**
   * One call of `latencyMs` (finite, ≥ 0) ended, `failed` (a boolean, default
   * false) or not. NaN, a negative or infinite latency, a non-number or a
   * non-boolean `failed` throws EINVALIDCONFIG naming the argument and records
   * nothing.
   */
  record(latencyMs: number, failed?: boolean, nowMs?: number): void;
  snapshot(nowMs?: number): {
    calls: number; errors: number; errorRate: number | null;
    p50Ms: number | null; p90Ms: number | null; p99Ms: number | null; status: HealthStatus;
  };
  /** The `percent`-th (0–100) percentile latency (ms), null for an empty window. */
  percentileMs(percent: number, nowMs?: number): number | null;
  status(nowMs?: number): HealthStatus;
}

export interface RateLimiterOptions {
  /** Cells (calls) per `perMs` (whole, ≥ 1). */
  rate: number;
  /** The period `rate` counts over (ms, > 0; default 1000). */
  perMs?: number;
  /** Cells a rested limiter gives at once (whole, 1 – 2³² − 1; default `rate`). */
  burst?: number;
  /** One limit per key (a string or a safe integer) in 4096 slots. */
  keyed?: boolean;
  /** Share one limiter with every process of the host (`/dev/shm/seawall-rate-limiter-<name>`). */
  shared?: string;
  name?: string;
  /** How long `execute` waits for a cell before ERATELIMITED (ms; default Infinity; 0: at once). */
  maxWaitMs?: number;
}

export interface RateLimiterMetrics {
  rate: number;
  perMs: number;
  burst: number;
  keyed: boolean;
  shared: boolean;
  created: boolean;
  /** Takes the limiter admitted (of every process, for a shared limiter). */
  admitted: number;
  /** Takes the limiter refused, over the rate (of every process, for a shared limiter). */
  rejected: number;
  /** Cells the admitted takes spent. */
  cells: number;
}

export interface TakeOptions {
  /** The key of a keyed limiter. */
  key?: string | number;
  /** ms of your monotonic clock (default now). */
  nowMs?: number;
}

export interface AcquireOptions {
  signal?: AbortSignal;
  /** Reject with ERATELIMITED as soon as the next chance lies past this (ms; default: wait as long as it takes). */
  timeoutMs?: number;
  key?: string | number;
}

export interface RateLimiterRejectEvent {
  retryAfterMs: number;
  key: string | number | undefined;
  error: SeawallError;
}

/**
 * A GCRA rate limiter (DESIGN §10, as Rust's governor), in this process or shared by the host.
 * Event `reject` (also `onReject(fn)`): each ERATELIMITED of `execute` and `acquire`.
 */
export declare class RateLimiter extends EventEmitter implements Policy {
  constructor(options: RateLimiterOptions);
  onReject(listener: (event: RateLimiterRejectEvent) => void): Disposable;
  static unlinkShared(name: string, options?: { keyed?: boolean }): void;
  readonly name: string | undefined;
  readonly keyed: boolean;
  readonly isShared: boolean;
  maxWaitMs: number;
  /** 0 when `n` cells (default 1) were taken, else ms until the same request conforms (nothing taken). */
  take(n?: number, options?: TakeOptions): number;
  tryAcquire(n?: number, options?: TakeOptions): boolean;
  /** Resolves once `n` cells are taken; ERATELIMITED past `timeoutMs`, EABORTED on abort (nothing left behind). */
  acquire(n?: number, options?: AcquireOptions): Promise<void>;
  execute<T>(fn: (ctx: CallContext) => T | PromiseLike<T>, options?: (ExecuteOptions & { key?: string | number }) | AbortSignal): Promise<T>;
  wrap<A extends unknown[], R>(fn: (...args: A) => R | PromiseLike<R>, options?: ExecuteOptions & { key?: string | number }): (...args: A) => Promise<Awaited<R>>;
  forKey(key: string | number): KeyedRateLimit;
  metrics(): RateLimiterMetrics;
}

/** One key's limit of a keyed RateLimiter. */
export declare class KeyedRateLimit implements Policy {
  readonly limiter: RateLimiter;
  readonly key: string | number;
  take(n?: number, options?: { nowMs?: number }): number;
  tryAcquire(n?: number, options?: { nowMs?: number }): boolean;
  acquire(n?: number, options?: { signal?: AbortSignal; timeoutMs?: number }): Promise<void>;
  execute<T>(fn: (ctx: CallContext) => T | PromiseLike<T>, options?: ExecuteOptions | AbortSignal): Promise<T>;
  wrap<A extends unknown[], R>(fn: (...args: A) => R | PromiseLike<R>, options?: ExecuteOptions): (...args: A) => Promise<Awaited<R>>;
}

/** Register gauges and counters on a prom-client registry, read at scrape time. */
export declare function registerMetrics(
  registry: { registerMetric(metric: unknown): void },
  sources?: {
    breakers?: Iterable<CircuitBreaker<any, any>>;
    bulkheads?: Iterable<Bulkhead>;
    budgets?: Iterable<RetryBudget>;
    rateLimiters?: Iterable<RateLimiter>;
    chaos?: Iterable<Chaos>;
    prefix?: string;
    client?: unknown;
  },
): {
  breakers: Set<CircuitBreaker<any, any>>;
  bulkheads: Set<Bulkhead>;
  budgets: Set<RetryBudget>;
  rateLimiters: Set<RateLimiter>;
  chaos: Set<Chaos>;
};

/**
 * Report breakers, bulkheads and retries through OpenTelemetry observable
 * instruments (meter `seawall`), read at each collection: breaker state,
 * transitions, calls by outcome, slow calls; bulkhead active, queued, limit,
 * rejections by reason; retries and give-ups by reason. `meter` or
 * `meterProvider` default to the global provider of `@opentelemetry/api`.
 */
export declare function instrumentOtel(sources?: {
  breakers?: Iterable<CircuitBreaker<any, any>>;
  bulkheads?: Iterable<Bulkhead>;
  retries?: Iterable<Retry>;
  meter?: unknown;
  meterProvider?: unknown;
}): { breakers: Set<CircuitBreaker<any, any>>; bulkheads: Set<Bulkhead>; retries: Set<Retry> };

export declare function retryAfterOf(error: unknown): number;
export declare function parseRetryAfter(value: string | null | undefined): number;
export declare function monotonicMs(): number;
export declare function sharedSupported(): boolean;

// ---- Chaos injection (DESIGN §11) and the ambient call context ----

/**
 * Rules of a chaos policy; every field optional. While `enabled` (default
 * false), each call is hit with `probability` (0–1, default 1); a hit call
 * hangs until its signal aborts (`hang`), or waits `latencyMs` (≥ 0, default 0)
 * and then fails with ECHAOS with probability `failureRate` (0–1, default 0).
 * Anything else throws EINVALIDCONFIG naming the field.
 */
export interface ChaosRules {
  enabled?: boolean;
  probability?: number;
  latencyMs?: number;
  failureRate?: number;
  hang?: boolean;
}

/** `{ name, enabled, calls, passed, latency, failures, hangs }` (this process). */
export interface ChaosMetrics {
  name: string;
  enabled: boolean;
  calls: number;
  passed: number;
  latency: number;
  failures: number;
  hangs: number;
}

export interface ChaosInjectEvent { fault: 'latency' | 'failure' | 'hang'; latencyMs: number | undefined }

/** A named chaos policy of the process registry (made by `chaos(name)`). Compose it innermost. */
export declare class Chaos extends EventEmitter implements Policy {
  private constructor();
  readonly name: string;
  readonly rules: Readonly<Required<ChaosRules>>;
  set(rules?: ChaosRules): this;
  reseed(seed: number | bigint): this;
  execute<T>(fn: (ctx: CallContext) => T | PromiseLike<T>, options?: ExecuteOptions | AbortSignal): Promise<T>;
  wrap<A extends unknown[], R>(fn: (...args: A) => R | PromiseLike<R>): (...args: A) => Promise<Awaited<R>>;
  metrics(): ChaosMetrics;
  onInject(listener: (event: ChaosInjectEvent) => void): Disposable;
}

/** Options of `loadChaosRules`: `watch` (default true), `debounceMs` (default 50). */
export interface ChaosFileOptions { watch?: boolean; debounceMs?: number }

/** A JSON file of rules by dependency name, re-read when it changes. */
export declare class ChaosFile extends EventEmitter {
  private constructor();
  readonly path: string;
  readonly names: string[];
  /** Read and apply the file now; a bad file throws EINVALIDCONFIG and changes nothing. */
  reload(): string[];
  onReload(listener: (event: { names: string[] }) => void): Disposable;
  /** A change that could not be applied (the previous rules stay); without a listener, a process warning. */
  onError(listener: (event: { error: SeawallError }) => void): Disposable;
  close(): void;
}

export declare function loadChaosRules(path: string, options?: ChaosFileOptions): ChaosFile;

/** The chaos policy `name` (made on first use, rules off unless given). */
export declare const chaos: {
  (name: string, rules?: ChaosRules, options?: { seed?: number | bigint }): Chaos;
  /** `chaos.forDependency('inventory')(fn)`: `fn` through chaos 'inventory'. */
  forDependency(name: string): <A extends unknown[], R>(fn: (...args: A) => R | PromiseLike<R>) => (...args: A) => Promise<Awaited<R>>;
  get(name: string): Chaos | undefined;
  all(): Chaos[];
  disableAll(): void;
  load: typeof loadChaosRules;
};

/** The ambient `{ signal, deadline }` every policy's execute takes when its options leave them out. */
export interface AmbientCallContext { signal?: AbortSignal; deadline?: Deadline }

/** Run `fn` with `context` as the default signal and deadline of every seawall policy inside it. */
export declare function withCallContext<T>(context: AmbientCallContext, fn: () => T): T;
/** The ambient context, or undefined outside `withCallContext` (and the middleware's handlers). */
export declare function callContext(): Readonly<AmbientCallContext> | undefined;
