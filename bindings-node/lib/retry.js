'use strict';
// Retry (DESIGN §4): attempts, exponential backoff with none / full / equal /
// decorrelated (AWS) / proportional jitter, a retry budget (Finagle RetryBudget)
// or throttle (gRPC A6 retry throttling), a total deadline, and Retry-After. The
// decision for each failed attempt is one call into the core.

const { binding, fast, constants } = require('./native');
const { SeawallError, isSeawallError, codes, configError, abortedError, fromNative, sharedOpenError } = require('./errors');
const {
  only, number, argument, clockMs, ATTEMPT, optionalFunction, budgetConfig, throttleConfig, isPlainObject,
  name: nameOption,
} = require('./config');
const { listen, noop } = require('./abort');
const { Deadline } = require('./deadline');
const { callOptions } = require('./call');
const { backoffPlan, ownDelay } = require('./waits');
const { SafeEmitter, callSafely, disposable } = require('./hooks');
const { settings: testing } = require('./testing');
const { LongTimer } = require('./timers');

const { retryBudgetDeposit, retryThrottleRecordSuccess } = fast;

function create(fn, ...args) {
  try {
    return fn(...args);
  } catch (e) {
    throw fromNative(e);
  }
}

/** The `shared` option: undefined, or a non-empty region name. */
function sharedName(options) {
  const shared = options.shared;
  if (shared !== undefined && (typeof shared !== 'string' || shared === '')) {
    throw configError('shared', 'must be a non-empty region name');
  }
  return shared;
}

/**
 * What RetryBudget and RetryThrottle share: options checked, the native object
 * opened (in this process, or in the region `shared` of /dev/shm) and its
 * handle kept.
 */
class SharedNative {
  constructor(options, toConfig, open, what, fields) {
    if (!isPlainObject(options)) throw configError('options', 'must be an object');
    const cfg = toConfig(options);
    const shared = sharedName(options);
    // Checked before the native object (maybe a region of /dev/shm) is opened.
    const name = nameOption(options, shared);
    try {
      this._token = open(cfg, shared);
    } catch (e) {
      throw sharedOpenError(e, what, shared, fields);
    }
    this._h = binding.handleOf(this._token);
    this._shared = shared;
    this.name = name;
  }

  /** Whether this object lives in a region shared by the processes of the host. */
  get isShared() {
    return this._shared !== undefined;
  }
}

/**
 * A retry budget (Finagle RetryBudget): over `ttlMs` (default 10 000), each
 * request deposits `percentCanRetry` % of a retry (default 20), each retry
 * withdraws one, on top of a reserve of `minRetriesPerSec` · ttl (default 10/s).
 * Share one budget between every retry policy calling one dependency; with
 * `shared: name`, between every process of the host too (every process must
 * give the same options: ESHAREDMISMATCH otherwise).
 */
class RetryBudget extends SharedNative {
  constructor(options = {}) {
    super(options, budgetConfig, binding.retryBudgetNew, 'retry budget',
      'ttlMs, minRetriesPerSec and percentCanRetry');
  }

  /** Remove the shared retry budget `name` from /dev/shm (a missing one is fine). */
  static unlinkShared(name) {
    create(binding.retryBudgetUnlinkShared, name);
  }

  /** One original request starts (at `nowMs` of your clock, default now). */
  deposit(nowMs) {
    if (nowMs === undefined) retryBudgetDeposit(this._h);
    else binding.retryBudgetDepositAt(this._h, clockMs(nowMs));
  }

  /** Withdraw one retry if the balance covers it (one atomic step). */
  tryWithdraw(nowMs) {
    return binding.retryBudgetTryWithdraw(this._h, clockMs(nowMs));
  }

  /** `{ requests, retries, available }` in the live window. */
  snapshot(nowMs) {
    return binding.retryBudgetSnapshot(this._h, clockMs(nowMs));
  }
}

/**
 * A retry throttle (gRPC A6): tokens start at `maxTokens` (default 10); each
 * failure takes one, each success adds `tokenRatio` (default 0.1); a retry is
 * allowed while tokens > maxTokens / 2. With `shared: name`, one throttle for
 * every process of the host (same options everywhere: ESHAREDMISMATCH
 * otherwise).
 */
class RetryThrottle extends SharedNative {
  constructor(options = {}) {
    super(options, throttleConfig, binding.retryThrottleNew, 'retry throttle', 'maxTokens and tokenRatio');
  }

  /** Remove the shared retry throttle `name` from /dev/shm (a missing one is fine). */
  static unlinkShared(name) {
    create(binding.retryThrottleUnlinkShared, name);
  }

  /** A call failed: take a token; whether its retry is allowed. */
  recordFailure() {
    return binding.retryThrottleRecordFailure(this._h);
  }

  /** A call succeeded: add `tokenRatio`. */
  recordSuccess() {
    retryThrottleRecordSuccess(this._h);
  }

  /** Tokens now. */
  get tokens() {
    return binding.retryThrottleTokens(this._h);
  }
}

/**
 * Backoff delays on their own: `delayMs(attempt, previousMs)` for retry
 * `attempt` (a whole number ≥ 1) and `previousMs` (the last delay, finite
 * ≥ 0, used by decorrelated jitter). Other values throw EINVALIDCONFIG naming
 * the argument.
 */
class Backoff {
  /** @param {object|number[]|Function} [options] any form of Retry's `backoff` (see index.d.ts) */
  constructor(options = {}) {
    const plan = backoffPlan(options);
    this._plan = plan;
    this._token = create(binding.backoffNew, plan.native);
    this._h = binding.handleOf(this._token);
  }

  delayMs(attempt, previousMs = 0) {
    argument(attempt, 'attempt', ATTEMPT);
    argument(previousMs, 'previousMs');
    if (this._plan.wait !== undefined) return this._plan.wait(attempt, undefined, undefined);
    return binding.backoffDelay(this._h, attempt, previousMs);
  }

  /**
   * The delay before jitter (`attempt` a whole number ≥ 1): for the
   * exponential family `min(maxMs, baseMs · multiplier^(attempt−1))`.
   */
  exponentialMs(attempt) {
    argument(attempt, 'attempt', ATTEMPT);
    if (this._plan.base !== undefined) return this._plan.base(attempt, undefined, undefined);
    return binding.backoffExponential(this._h, attempt);
  }

  /** Restart the jitter's random sequence from `seed` (any finite number; tests). */
  reseed(seed) {
    argument(seed, 'seed', { min: -Infinity });
    binding.backoffReseed(this._h, seed);
  }
}

/** Parse an HTTP Retry-After value (delta-seconds or HTTP-date) to ms, or -1. */
function parseRetryAfter(value) {
  if (value === undefined || value === null) return -1;
  const s = String(value).trim();
  if (/^\d+(\.\d+)?$/.test(s)) return Number(s) * 1000;
  const at = Date.parse(s);
  if (Number.isNaN(at)) return -1;
  return Math.max(0, at - Date.now());
}

/**
 * The server's requested delay carried by `error`, in ms (-1 for none):
 * `error.retryAfterMs` (seawall's ECIRCUITOPEN has it), else a `retry-after`
 * header on `error.headers`, `error.response.headers` (object or Headers).
 */
function retryAfterOf(error) {
  if (error === null || typeof error !== 'object') return -1;
  if (typeof error.retryAfterMs === 'number' && error.retryAfterMs >= 0) return error.retryAfterMs;
  const headers = error.headers || (error.response && error.response.headers);
  if (!headers) return -1;
  const v = typeof headers.get === 'function' ? headers.get('retry-after') : headers['retry-after'];
  return parseRetryAfter(v);
}

/**
 * Sleep `ms` (any length: a server's 30-day Retry-After is waited out, not cut
 * to 1 ms by Node's timer limit), or reject with EABORTED the moment `signal`
 * aborts.
 */
function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    let off = noop;
    const timer = new LongTimer(() => {
      off();
      resolve();
    }, ms);
    if (signal !== undefined) {
      off = listen(signal, () => {
        timer.clear();
        reject(abortedError(signal));
      });
    }
  });
}

// Why a retry decision gave up, by its (negative) code (src/boundary.rs).
const GIVE_UP = Object.fromEntries(constants.giveUp.map((g) => [String(g.code), g.name]));
// Without a deadline, the horizon no retry may sleep past: 2^62 ns (about 146
// years), as in the Python package. A longer delay (an endless Retry-After)
// gives up with the caller's error, as one past a deadline does.
const NO_DEADLINE_MS = 2 ** 62 / 1e6;

const RETRY_KEYS = [
  'attempts', 'backoff', 'shouldRetry', 'retryOnResult', 'budget', 'throttle', 'deadlineMs', 'retryAfterMs', 'onRetry', 'signal', 'name',
];
const MAX_ATTEMPTS_CODE = constants.giveUp.find((g) => g.name === 'maxAttempts').code;
let unnamed = 0;

/**
 * A reusable retry policy. `execute(fn, { signal, deadline })` calls
 * `fn({ attempt, signal, deadline })` until it resolves, `shouldRetry` says no,
 * the attempts run out, the next delay would end after the deadline (the last
 * error is thrown unchanged in those cases), or the budget / throttle refuses
 * (ERETRYBUDGET, with the last error as `cause`).
 */
class Retry extends SafeEmitter {
  constructor(options = {}) {
    super();
    if (!isPlainObject(options)) throw configError('options', 'must be an object');
    only(options, RETRY_KEYS);
    const attempts = number(options, 'attempts', 'attempts', { min: 1, integer: true, max: 2 ** 32 - 1 });
    const plan = backoffPlan(options.backoff);
    this._wait = plan.wait;
    const budget = options.budget;
    const throttle = options.throttle;
    if (budget !== undefined && !(budget instanceof RetryBudget)) throw configError('budget', 'must be a RetryBudget');
    if (throttle !== undefined && !(throttle instanceof RetryThrottle)) throw configError('throttle', 'must be a RetryThrottle');
    if (budget !== undefined && throttle !== undefined) throw configError('throttle', 'give a budget or a throttle, not both');
    this._deadlineMs = number(options, 'deadlineMs', 'deadlineMs', { min: 0, exclusive: true });
    this._shouldRetry = optionalFunction(options, 'shouldRetry');
    this._retryOnResult = optionalFunction(options, 'retryOnResult');
    this._retryAfter = optionalFunction(options, 'retryAfterMs');
    this._onRetry = optionalFunction(options, 'onRetry');
    this._budget = budget;
    this._throttle = throttle;
    this._token = create(binding.retryPolicyNew, { attempts, backoff: plan.native }, budget && budget._h, throttle && throttle._h);
    this._h = binding.handleOf(this._token);
    this.attempts = attempts === undefined ? 3 : attempts;
    this.name = nameOption(options, `retry-${++unnamed}`);
    // The policy's own decisions, for metrics: retries allowed, give-ups by reason.
    this._counts = { retries: 0, maxAttempts: 0, deadline: 0, budgetExhausted: 0, throttled: 0 };
  }

  /** `{ name, retries, giveUps: { maxAttempts, deadline, budgetExhausted, throttled } }` so far. */
  metrics() {
    const c = this._counts;
    return {
      name: this.name,
      retries: c.retries,
      giveUps: { maxAttempts: c.maxAttempts, deadline: c.deadline, budgetExhausted: c.budgetExhausted, throttled: c.throttled },
    };
  }

  async execute(fn, options) {
    const call = callOptions(fn, options);
    const signal = call.signal;
    let deadline = call.deadline;
    if (deadline === undefined && this._deadlineMs !== undefined) deadline = new Deadline(this._deadlineMs);
    if (signal !== undefined && signal.aborted) throw abortedError(signal);
    if (this._budget !== undefined) retryBudgetDeposit(this._budget._h);
    let attempt = 1;
    let previousMs = 0;
    for (;;) {
      let value;
      let delay;
      try {
        value = await fn({ attempt, signal, deadline });
      } catch (error) {
        delay = this._decide(error, attempt, previousMs, signal, deadline);
        this._hook({ attempt, delayMs: delay, error });
      }
      if (delay === undefined) {
        // A returned value the user marks a failure (an HTTP 503 returned, not
        // thrown) is retried like an error; when retrying stops, for whatever
        // reason, the caller gets the last value (DESIGN §1).
        if (this._retryOnResult === undefined || !this._retryOnResult(value, attempt)
          || (signal !== undefined && signal.aborted)) {
          if (this._throttle !== undefined) retryThrottleRecordSuccess(this._throttle._h);
          return value;
        }
        delay = this._delay(undefined, value, attempt, previousMs, deadline);
        if (delay < 0) {
          this.emit('giveUp', { reason: GIVE_UP[delay], attempts: attempt, error: undefined, result: value });
          return value;
        }
        this._hook({ attempt, delayMs: delay, error: undefined, result: value });
      }
      if (testing.sleep && delay > 0) await sleep(delay, signal);
      else if (signal !== undefined && signal.aborted) throw abortedError(signal);
      previousMs = delay;
      attempt += 1;
    }
  }

  /** Call the onRetry option and the 'retry' listeners; what they throw is reported, never the caller's (DESIGN §1). */
  _hook(info) {
    if (this._onRetry !== undefined) callSafely(undefined, this._onRetry, [info], this._owner(), 'onRetry');
    this.emit('retry', info);
  }

  /** Stop retrying for `reason` (not one of the core's): tell the listeners, throw `error`. */
  _giveUp(reason, attempts, error) {
    this.emit('giveUp', { reason, attempts, error, result: undefined });
    throw error;
  }

  _owner() {
    return `retry '${this.name}'`;
  }

  /** Listen to each retry (`{ attempt, delayMs, error, result }`); returns a Disposable. */
  onRetry(listener) { return disposable(this, 'retry', listener); }

  /**
   * Listen to each give-up (`{ reason, attempts, error, result }`, reason
   * maxAttempts, deadline, budgetExhausted, throttled, notRetryable or
   * aborted); returns a Disposable.
   */
  onGiveUp(listener) { return disposable(this, 'giveUp', listener); }

  /**
   * The delay (ms) before the next attempt after a failed one (its `error`, or
   * the returned `result` marked a failure), or the core's negative give-up
   * code; counts the decision.
   */
  _delay(error, result, attempt, previousMs, deadline) {
    if (testing.attempts !== undefined && attempt >= testing.attempts) {
      this._counts.maxAttempts += 1;
      return MAX_ATTEMPTS_CODE;
    }
    const subject = error !== undefined ? error : result;
    let retryAfter = this._retryAfter !== undefined ? this._retryAfter(subject) : retryAfterOf(subject);
    if (typeof retryAfter !== 'number' || !(retryAfter >= 0)) retryAfter = constants.absent;
    if (this._wait !== undefined) {
      // After the last attempt the core gives up (and a throttle still counts
      // the failure): the user's wait function is not asked for a delay.
      const own = attempt >= this.attempts ? 0 : this._wait(attempt, error, result);
      if (!(retryAfter >= own)) retryAfter = own;
    }
    const left = deadline !== undefined ? deadline.remainingMs() : NO_DEADLINE_MS;
    const d = binding.retryPolicyDecide(this._h, attempt, previousMs, left, retryAfter, undefined);
    if (d >= 0) {
      this._counts.retries += 1;
      return this._wait !== undefined ? ownDelay(d) : d;
    }
    const why = GIVE_UP[d];
    if (why !== undefined) this._counts[why] += 1;
    return d;
  }

  /** The delay before the next attempt, or throws what the caller should see. */
  _decide(error, attempt, previousMs, signal, deadline) {
    // the caller's own cancellation
    if ((signal !== undefined && signal.aborted) || isSeawallError(error, codes.EABORTED)) this._giveUp('aborted', attempt, error);
    if (this._shouldRetry !== undefined && !this._shouldRetry(error, attempt)) this._giveUp('notRetryable', attempt, error);
    const d = this._delay(error, undefined, attempt, previousMs, deadline);
    if (d >= 0) return d;
    const why = GIVE_UP[d];
    this.emit('giveUp', { reason: why, attempts: attempt, error, result: undefined });
    if (why === 'budgetExhausted' || why === 'throttled') {
      throw new SeawallError(codes.ERETRYBUDGET, `retry refused (${why}) after attempt ${attempt}`, {
        cause: error, attempts: attempt, reason: why,
      });
    }
    throw error;
  }
}

/** p-retry style: `retry(fn, options)` with a policy built from `options`. */
function retry(fn, options = {}) {
  if (!isPlainObject(options)) return Promise.reject(configError('options', 'must be an object'));
  let policy;
  try {
    policy = new Retry(options.signal === undefined ? options : { ...options, signal: undefined });
  } catch (e) {
    return Promise.reject(e);
  }
  return policy.execute(fn, { signal: options.signal });
}

module.exports = { Retry, retry, RetryBudget, RetryThrottle, Backoff, sleep, retryAfterOf, parseRetryAfter };
