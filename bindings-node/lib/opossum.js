'use strict';
// seawall/opossum: opossum's CircuitBreaker — its constructor, option names and
// defaults, methods, getters, events and error codes — on seawall's breaker
// (the native window, thresholds and open/half-open rules), bulkhead
// (`capacity`) and stale cache (`cache`, `coalesce`). Where opossum's rules
// differ from DESIGN.md this follows opossum; bindings-node/README.md ("Coming
// from opossum") lists every difference from seawall's own API.
//
// Cost per call: no timer and no clock read per call (lib/timeout-list.js), and
// no native crossing for a success while the window is clean: successes are
// held back and recorded in one crossing, as execute() does (breaker.js
// `_record`).

const { SafeEmitter } = require('./hooks');
const { CircuitBreaker: SeawallBreaker, OUTCOME } = require('./breaker');
const { Bulkhead } = require('./bulkhead');
const { StaleCache } = require('./pipeline');
const { SeawallError, isSeawallError, configError, refusal } = require('./errors');
const { isPlainObject, optionalFunction } = require('./config');
const { MAX_TIMER_MS } = require('./timers');
const { TimeoutList } = require('./timeout-list');
const { Status } = require('./opossum-status');

const { SUCCESS, FAILURE } = OUTCOME;

/** opossum's error codes. */
const EOPENBREAKER = 'EOPENBREAKER';
const ETIMEDOUT = 'ETIMEDOUT';
const ESEMLOCKED = 'ESEMLOCKED';
const ESHUTDOWN = 'ESHUTDOWN';

const RESET_ON = ['error', 'success', 'timeout'];
// opossum's `fire` event and the outcomes' events: a call checks one flag, not
// the listener table, for each.
const HOT_EVENTS = ['fire', 'success', 'failure', 'timeout', 'fallback'];

const MIN_BUCKET_MS = 0.1;

const OUR_ERROR = Symbol.for('seawall.opossum.error');

let unnamed = 0;

/**
 * Where opossum throws a TypeError (no action, a bad cacheTransport,
 * abortController or health check), the same TypeError and message, with
 * seawall's `code` EINVALIDCONFIG and `field`.
 */
function typeError(field, message) {
  return Object.assign(new TypeError(message), { code: 'EINVALIDCONFIG', field });
}

/** An opossum error: `code`, `isOurError` true; no stack for refusals (the hot path under load). */
function ourError(code, message, props, stackless) {
  const e = stackless ? refusal(code, message, props) : new SeawallError(code, message, props);
  e[OUR_ERROR] = true;
  return e;
}

function isThenable(r) {
  return r !== null && (typeof r === 'object' || typeof r === 'function') && typeof r.then === 'function';
}

/** A whole number option (opossum's integers), `dflt` when absent. */
function integerOption(o, key, dflt, min) {
  const v = o[key];
  if (v === undefined || v === null) return dflt;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min) {
    throw configError(key, `must be a whole number ≥ ${min}, not ${String(v)}`);
  }
  return v;
}

/** A duration option in ms (> 0), `dflt` when absent. */
function msOption(o, key, dflt) {
  const v = o[key];
  if (v === undefined || v === null) return dflt;
  if (typeof v !== 'number' || !(v > 0) || !Number.isFinite(v)) {
    throw configError(key, `must be a number of ms greater than 0, not ${String(v)}`);
  }
  return v;
}

/** A TTL option in ms: 0 (or false) is "no TTL". */
function ttlOption(o, key, dflt) {
  const v = o[key];
  if (v === undefined || v === null) return dflt;
  if (v === false) return 0;
  if (typeof v !== 'number' || !(v >= 0) || !Number.isFinite(v)) {
    throw configError(key, `must be a number of ms ≥ 0 (0: no TTL), not ${String(v)}`);
  }
  return v;
}

function boolOption(o, key, dflt) {
  const v = o[key];
  if (v === undefined || v === null) return dflt;
  if (typeof v !== 'boolean') throw configError(key, `must be true or false, not ${String(v)}`);
  return v;
}

/**
 * `errorThresholdPercentage` p → the native `failureRateThreshold`. opossum
 * opens when failures / fires > p %, the core when failures / calls ≥ its
 * threshold (exactly, in parts per million). p + 1 ppm gives `>`: for a whole
 * p, failures · 10⁶ − p · 10⁴ · calls is a multiple of 10⁴, so `> p` and `≥ p +
 * 1 ppm` agree for every window of up to 10 000 calls (and within 1 ppm
 * beyond, or for fractional p). `> 100 %` can never hold: the rate rule is off.
 */
function failureRateThreshold(p) {
  if (p >= 100) return null;
  return p + 1e-4;
}

/** opossum's default cache transport on seawall's StaleCache (lru-cache). */
class StaleCacheTransport {
  constructor(max, ttlMs) {
    this._options = { ...(max !== undefined ? { max } : {}), ...(ttlMs > 0 ? { maxStaleMs: ttlMs } : {}) };
    this._cache = new StaleCache(this._options);
  }

  get(key) {
    return this._cache.get(key);
  }

  /** `value` for `key`; the TTL is the cache's own (`cacheTTL`), so `expiresAt` is not needed. */
  set(key, value) {
    this._cache.set(key, value);
  }

  delete(key) {
    this._cache.delete(key);
  }

  flush() {
    this._cache = new StaleCache(this._options);
  }
}

/** One call in flight: its permit, arguments and place in the timeout list. */
class Call {
  constructor(context, args, permit, key) {
    this.context = context;
    this.args = args;
    this.permit = permit;
    this.key = key;
    this.start = 0; // performance.now() at the start, read only for a latency listener
    this.expires = 0; // the tick that times it out; 0: no timeout
    this.done = false;
    this.held = false; // a capacity permit
    this.prev = undefined; // the TimeoutList's links
    this.next = undefined;
    this.resolve = undefined;
    this.reject = undefined;
  }
}

class CircuitBreaker extends SafeEmitter {
  /** Whether `error` was made by the breaker (open, timeout, capacity, shutdown), not by the action. */
  static isOurError(error) {
    return error != null && typeof error === 'object' && error[OUR_ERROR] === true;
  }

  /** A Status primed with `options.stats`, for `new CircuitBreaker(action, { status })`. */
  static newStatus(options) {
    return new Status(options);
  }

  /**
   * @param {Function|*} action what `fire(...args)` calls (anything else: fire resolves with it)
   * @param {object} [options] opossum's options (see lib/opossum.d.ts), and `shared`
   */
  constructor(action, options = {}) {
    super();
    if (action === undefined || action === null || action === false || action === 0 || action === '') {
      throw typeError('action', 'No action provided. Cannot construct a CircuitBreaker without an invocable action.');
    }
    if (options === null || options === undefined) options = {};
    if (!isPlainObject(options)) throw configError('options', 'must be an object');
    // Other keys are ignored, as opossum ignores them (its own tests pass a
    // `fallback` option, for one); the known ones are checked.
    const timeoutMs = options.timeout === false || options.timeout === 0 ? false : msOption(options, 'timeout', 10000);
    const resetTimeout = options.resetTimeout === 0 ? 0 : msOption(options, 'resetTimeout', 30000);
    // 0 is the default, as for opossum's window (which keeps the 0 in `options`).
    const rollingCountTimeout = options.rollingCountTimeout === 0 ? 10000 : msOption(options, 'rollingCountTimeout', 10000);
    const rollingCountBuckets = options.rollingCountBuckets === 0 ? 10 : integerOption(options, 'rollingCountBuckets', 10, 1);
    const threshold = options.errorThresholdPercentage === undefined || options.errorThresholdPercentage === null
      ? 50 : options.errorThresholdPercentage;
    if (typeof threshold !== 'number' || !(threshold >= 0) || !Number.isFinite(threshold)) {
      throw configError('errorThresholdPercentage', `must be a percentage ≥ 0, not ${String(threshold)}`);
    }
    const volumeThreshold = integerOption(options, 'volumeThreshold', 0, 0);
    const capacity = options.capacity === undefined || options.capacity === null
      ? Number.MAX_SAFE_INTEGER : integerOption(options, 'capacity', 0, -Infinity);
    const errorFilter = optionalFunction(options, 'errorFilter');
    const cacheGetKey = optionalFunction(options, 'cacheGetKey');
    const cache = boolOption(options, 'cache', false);
    const coalesce = boolOption(options, 'coalesce', false);
    const cacheTTL = ttlOption(options, 'cacheTTL', 0);
    const coalesceTTL = ttlOption(options, 'coalesceTTL', timeoutMs === false ? 0 : timeoutMs);
    const cacheSize = integerOption(options, 'cacheSize', undefined, 1);
    const coalesceSize = integerOption(options, 'coalesceSize', undefined, 1);
    let resetOn = [];
    if (options.coalesceResetOn !== undefined) {
      if (!Array.isArray(options.coalesceResetOn)) throw configError('coalesceResetOn', "must be an array of 'error', 'success', 'timeout'");
      resetOn = options.coalesceResetOn.filter((o) => RESET_ON.includes(o));
    }
    let transport;
    if (cache) {
      transport = options.cacheTransport;
      if (transport === undefined) {
        transport = new StaleCacheTransport(cacheSize, cacheTTL);
      } else if (transport === null || typeof transport !== 'object' || typeof transport.get !== 'function'
        || typeof transport.set !== 'function' || typeof transport.flush !== 'function') {
        throw typeError('cacheTransport', 'options.cacheTransport should be an object with `get`, `set` and `flush` methods');
      }
    }
    let abortController = options.abortController;
    const autoRenew = boolOption(options, 'autoRenewAbortController', false);
    if (autoRenew && abortController === undefined) abortController = new AbortController();
    if (abortController !== undefined && (abortController === null || typeof abortController.abort !== 'function')) {
      throw typeError('abortController', 'AbortController does not contain `abort()` method');
    }
    const rotate = options.rotateBucketController;
    if (rotate !== undefined && (rotate === null || typeof rotate.on !== 'function' || typeof rotate.listeners !== 'function')) {
      throw configError('rotateBucketController', "must be an EventEmitter that emits 'rotate'");
    }
    if (options.name !== undefined && (typeof options.name !== 'string' || options.name === '')) {
      throw configError('name', 'must be a non-empty string');
    }
    const state = options.state;
    if (state !== undefined && !isPlainObject(state)) throw configError('state', 'must be the state record of toJSON().state');

    // opossum keeps its options, defaults filled in, as `breaker.options`
    // (a copy here: the caller's object is left as it was).
    this.options = {
      ...options,
      timeout: timeoutMs === false ? options.timeout : timeoutMs, // false or 0, as given
      resetTimeout,
      errorThresholdPercentage: threshold,
      rollingCountTimeout: options.rollingCountTimeout === 0 ? 0 : rollingCountTimeout,
      rollingCountBuckets: options.rollingCountBuckets === 0 ? 0 : rollingCountBuckets,
      rollingPercentilesEnabled: options.rollingPercentilesEnabled !== false,
      capacity,
      errorFilter: errorFilter === undefined ? () => false : errorFilter,
      cacheTTL,
      cacheGetKey: cacheGetKey === undefined ? (...args) => JSON.stringify(args) : cacheGetKey,
      enableSnapshots: options.enableSnapshots !== false,
      coalesce,
      coalesceTTL,
      coalesceResetOn: resetOn,
      ...(cache ? { cacheTransport: transport } : {}),
      ...(abortController !== undefined ? { abortController } : {}),
    };
    this._name = options.name !== undefined ? options.name
      : (typeof action === 'function' && action.name) ? action.name : `opossum-${++unnamed}`;
    this._group = typeof options.group === 'string' ? options.group : this._name;
    this.action = typeof action === 'function' ? action : () => Promise.resolve(action);
    this._volumeThreshold = volumeThreshold;
    this._timeoutMs = timeoutMs;
    this._resetTimeout = resetTimeout;
    this._errorFilter = errorFilter;
    this._cache = cache ? transport : undefined;
    this._cacheTTL = cacheTTL;
    this._coalesce = coalesce ? new StaleCacheTransport(coalesceSize, coalesceTTL) : undefined;
    this._resetOn = resetOn;
    this._keyed = cache || coalesce;
    this._getKey = this.options.cacheGetKey;
    this._fallback = undefined;
    this._enabled = state !== undefined ? state.enabled !== false : options.enabled !== false;
    this._shut = false;
    this._warmUp = false;
    this._warmUpTimer = undefined;
    this._resetTimer = undefined;
    this._healthTimers = [];
    this._lastTimerAt = undefined;
    this._openUntil = 0; // performance.now() when an opening's resetTimeout is up
    this._halfOpenSaid = false;
    this._counted = { fires: 0, fallbacks: 0, timeouts: 0, cacheHits: 0, cacheMisses: 0, coalesceCacheHits: 0, coalesceCacheMisses: 0 };
    this._timeouts = timeoutMs === false ? undefined
      : new TimeoutList(timeoutMs, (call, atLeastMs) => this._timedOut(call, atLeastMs));
    this._lockedAll = 0; // calls refused by a capacity ≤ 0 (no bulkhead counts them)
    this._hears = Object.fromEntries(HOT_EVENTS.map((e) => [e, false]));

    // capacity: a seawall bulkhead (no queue, as opossum's semaphore); none
    // when unbounded; ≤ 0 refuses every call, as opossum's does.
    this._noCapacity = capacity <= 0;
    this._bulkhead = capacity > 0 && capacity <= 2 ** 32 - 1
      ? new Bulkhead({ maxConcurrent: capacity, name: this._name })
      : undefined;

    const native = {
      name: this._name,
      // The core's buckets are at least 0.1 ms wide.
      window: { kind: 'time', buckets: rollingCountBuckets, bucketMs: Math.max(MIN_BUCKET_MS, rollingCountTimeout / rollingCountBuckets) },
      minimumCalls: Math.max(1, volumeThreshold),
      failureRateThreshold: failureRateThreshold(threshold),
      // 0 (half-open at once) is 1 ns: the core's opening lasts at least that.
      openDurationMs: resetTimeout === 0 ? 1e-6 : resetTimeout,
      halfOpenMaxCalls: 1,
      halfOpenSuccessThreshold: 1,
    };
    if (options.shared !== undefined) native.shared = options.shared;
    const initial = state !== undefined ? this._initialState(state) : undefined;
    if (initial !== undefined) native.initialState = initial;
    try {
      this._breaker = new SeawallBreaker(native);
    } catch (e) {
      throw renamed(e);
    }
    this._breaker.on('stateChange', (change) => this._changed(change));

    const status = options.status;
    this._status = status instanceof Status ? status : new Status(isPlainObject(status) ? { stats: status } : {});
    this._status._attach(this, Math.max(1, Math.floor(rollingCountTimeout / rollingCountBuckets)), this.options.enableSnapshots, rotate);

    this.on('newListener', (event) => {
      if (event in this._hears) this._hears[event] = true;
    });
    this.on('removeListener', (event) => {
      if (event in this._hears) this._hears[event] = this.listenerCount(event) > 0;
    });

    if (state !== undefined && state.shutdown === true) {
      this.shutdown();
      return;
    }
    const s = this._breaker.state;
    if (initial !== undefined && initial.state === 'halfOpen') {
      // The core keeps a half-open start as an opening whose time is up.
      this._openUntil = 0;
      this._halfOpenSaid = true;
    } else if (s === 'open') {
      this._opened(this._breaker.metrics().retryAfterMs ?? 0);
    } else if (s === 'halfOpen') {
      this._halfOpenSaid = true;
    }
    if (options.allowWarmUp === true || (state !== undefined && state.warmUp === true)) this._startWarmUp(rollingCountTimeout);
  }

  /** opossum's `state` record (toJSON().state) → seawall's initialState record. */
  _initialState(state) {
    if (state.closed !== false) return undefined;
    if (state.halfOpen === true) return { version: 1, state: 'halfOpen', openings: 1, retryAfterMs: null };
    let left = this._resetTimeout;
    if (typeof state.lastTimerAt === 'number') left = this._resetTimeout - (Date.now() - state.lastTimerAt);
    if (left <= 0) return { version: 1, state: 'halfOpen', openings: 1, retryAfterMs: null };
    return { version: 1, state: 'open', openings: 1, retryAfterMs: left };
  }

  /** Warm-up: the native breaker disabled (outcomes counted, none opens it) for `ms`, then closed afresh. */
  _startWarmUp(ms) {
    if (this._breaker.state !== 'closed') return;
    this._warmUp = true;
    this._breaker.disable();
    this._warmUpTimer = setTimeout(() => {
      this._warmUpTimer = undefined;
      this._warmUp = false;
      if (this._breaker.state === 'disabled') this._breaker.reset();
    }, ms);
    this._warmUpTimer.unref();
  }

  _owner() {
    return `circuit breaker '${this._name}'`;
  }

  // --- getters ---------------------------------------------------------

  get name() { return this._name; }
  get group() { return this._group; }
  get enabled() { return this._enabled; }
  get warmUp() { return this._warmUp; }
  get volumeThreshold() { return this._volumeThreshold; }
  get isShutdown() { return this._shut; }
  get status() { return this._status; }
  get stats() { return this._status.stats; }
  /** opossum's semaphore as far as it is read: `count`, the permits free (capacity − calls in flight). */
  get semaphore() {
    const b = this._bulkhead;
    const capacity = this.options.capacity;
    return { count: b === undefined ? Math.max(0, capacity) : capacity - b.metrics().active, capacity };
  }

  /** Whether the breaker lives in a region shared by every process of the host (`shared` option). */
  get isShared() { return this._breaker.isShared; }

  /** The native state, `open` read as `halfOpen` once its resetTimeout is up (the core moves on at the next call). */
  _view() {
    if (this._shut) return 'shutdown';
    const s = this._breaker.state;
    if (s === 'open' && performance.now() >= this._openUntil) return 'halfOpen';
    if (s === 'disabled') return 'closed';
    if (s === 'forcedOpen') return 'open';
    return s;
  }

  get closed() { return this._view() === 'closed'; }
  get opened() { return this._view() === 'open'; }
  get halfOpen() { return this._view() === 'halfOpen'; }
  /** Half-open with its one trial call not yet made. */
  get pendingClose() {
    return this._view() === 'halfOpen' && this._breaker.metrics().halfOpenInFlight === 0;
  }

  /** The counts of `stats`, `primed` added. */
  _counts(primed) {
    const t = this._breaker.metrics().totals;
    const c = this._counted;
    const semaphore = this._bulkhead === undefined ? 0 : this._bulkhead.metrics().rejected.full;
    return {
      failures: primed.failures + t.failures,
      fallbacks: primed.fallbacks + c.fallbacks,
      successes: primed.successes + t.successes,
      rejects: primed.rejects + t.rejected,
      fires: primed.fires + c.fires,
      timeouts: primed.timeouts + c.timeouts,
      cacheHits: primed.cacheHits + c.cacheHits,
      cacheMisses: primed.cacheMisses + c.cacheMisses,
      coalesceCacheHits: primed.coalesceCacheHits + c.coalesceCacheHits,
      coalesceCacheMisses: primed.coalesceCacheMisses + c.coalesceCacheMisses,
      semaphoreRejections: primed.semaphoreRejections + semaphore + this._lockedAll,
    };
  }

  /** seawall's snapshot of the native breaker (`registerMetrics`, `instrumentOtel` read it). */
  metrics() {
    return this._breaker.metrics();
  }

  /** `{ state: { name, enabled, closed, open, halfOpen, warmUp, shutdown, lastTimerAt }, status: stats }`. */
  toJSON() {
    const v = this._view();
    return {
      state: {
        name: this._name,
        enabled: this._enabled,
        closed: v === 'closed',
        open: v === 'open',
        halfOpen: v === 'halfOpen',
        warmUp: this._warmUp,
        shutdown: this._shut,
        lastTimerAt: this._lastTimerAt,
      },
      status: this.stats,
    };
  }

  // --- state changes -----------------------------------------------------

  /** A state change of the native breaker (ours, or another process's) as opossum's events. */
  _changed({ from, to }) {
    if (this._shut) return;
    if (to === 'open' || to === 'forcedOpen') {
      // An opening whose time is already up has no retryAfterMs.
      this._opened(to === 'open' ? (this._breaker.metrics().retryAfterMs ?? 0) : null);
      this.emit('open');
    } else if (to === 'halfOpen') {
      this._sayHalfOpen();
    } else if (to === 'closed' && from !== 'disabled') {
      this._clearResetTimer();
      this._halfOpenSaid = false;
      this._renewAbortController();
      this.emit('close');
    }
  }

  /** An opening: halfOpen is said when its time is up (an unref'd timer, as opossum's). */
  _opened(retryAfterMs) {
    this._clearResetTimer();
    this._halfOpenSaid = false;
    this._lastTimerAt = Date.now();
    if (retryAfterMs === null || retryAfterMs === undefined) {
      this._openUntil = Infinity;
      return;
    }
    this._openUntil = performance.now() + retryAfterMs;
    this._resetTimer = setTimeout(() => {
      this._resetTimer = undefined;
      if (this._breaker.state === 'open') this._sayHalfOpen();
    }, Math.min(Math.max(1, Math.ceil(retryAfterMs)), MAX_TIMER_MS));
    this._resetTimer.unref();
  }

  _sayHalfOpen() {
    if (this._halfOpenSaid) return;
    this._halfOpenSaid = true;
    this._renewAbortController();
    this.emit('halfOpen', this._resetTimeout);
  }

  _clearResetTimer() {
    if (this._resetTimer !== undefined) clearTimeout(this._resetTimer);
    this._resetTimer = undefined;
  }

  _renewAbortController() {
    const c = this.options.abortController;
    if (this.options.autoRenewAbortController && c !== undefined && c.signal.aborted) {
      this.options.abortController = new AbortController();
    }
  }

  /** Open now (for `resetTimeout`, then half-open); nothing if already open. */
  open() {
    if (this._shut || this._view() === 'open') return;
    this._breaker._trip(this._resetTimeout);
  }

  /** Close now, the window emptied; nothing if already closed. */
  close() {
    if (this._shut || this._breaker.state === 'closed') return;
    this._breaker.reset();
  }

  /** Run calls through the breaker again (after `disable()`). */
  enable() {
    this._enabled = true;
    this._status.startListeneningForRotateEvent();
  }

  /** Call the action directly, with no breaker, timeout, cache or fallback, until `enable()`. */
  disable() {
    this._enabled = false;
    this._status.removeRotateBucketControllerListener();
  }

  /**
   * For good: every later fire() rejects with ESHUTDOWN; listeners, timers and
   * caches are dropped. Calls in flight still end (their timeout timer no
   * longer keeps the process alive).
   */
  shutdown() {
    this.emit('shutdown');
    this.disable();
    this.removeAllListeners();
    for (const k of HOT_EVENTS) this._hears[k] = false;
    this._clearResetTimer();
    if (this._warmUpTimer !== undefined) clearTimeout(this._warmUpTimer);
    this._warmUpTimer = undefined;
    for (const t of this._healthTimers) clearInterval(t);
    this._healthTimers = [];
    if (this._timeouts !== undefined) this._timeouts.unref();
    this._status.shutdown();
    this._shut = true;
    this.clearCache();
  }

  /** Empty the cache and the coalescing cache. */
  clearCache() {
    if (this._cache !== undefined) this._cache.flush();
    if (this._coalesce !== undefined) this._coalesce.flush();
  }

  /**
   * `func` (a function or another breaker) answers instead of a failure,
   * timeout, refusal or rejection, called with fire's arguments and the error.
   */
  fallback(func) {
    if (func instanceof CircuitBreaker) {
      const other = func;
      this._fallback = (...args) => other.fire(...args);
    } else if (typeof func === 'function') {
      this._fallback = func;
    } else {
      throw configError('fallback', 'must be a function or a CircuitBreaker');
    }
    return this;
  }

  /**
   * Call `func` (this: the breaker) now and every `interval` ms (default 5000;
   * an unref'd timer); when the promise it returns rejects, emit
   * `healthCheckFailed` and open the breaker.
   */
  healthCheck(func, interval) {
    const ms = interval || 5000;
    if (typeof func !== 'function') throw typeError('healthCheck', 'Health check function must be a function');
    if (typeof ms !== 'number' || Number.isNaN(ms)) throw typeError('interval', 'Health check interval must be a number');
    const check = () => {
      let r;
      try {
        r = func.apply(this);
      } catch (e) {
        r = Promise.reject(e);
      }
      Promise.resolve(r).then(undefined, (e) => {
        if (this._shut) return;
        this.emit('healthCheckFailed', e);
        this.open();
      });
    };
    const timer = setInterval(check, Math.min(ms, MAX_TIMER_MS));
    timer.unref();
    this._healthTimers.push(timer);
    check();
  }

  getSignal() {
    const c = this.options.abortController;
    return c !== undefined ? c.signal : undefined;
  }

  getAbortController() {
    return this.options.abortController;
  }

  // --- calls -------------------------------------------------------------

  /** Call the action with `args` through the breaker (`this` in the action: the action). */
  fire(...args) {
    return this._call(this.action, args);
  }

  /** Like fire(), with `context` as `this` in the action. */
  call(context, ...args) {
    return this._call(context, args);
  }

  _call(context, args) {
    if (this._shut) return Promise.reject(ourError(ESHUTDOWN, 'The circuit has been shutdown.'));
    this._counted.fires += 1;
    if (this._hears.fire) this.emit('fire', args);
    if (!this._enabled) {
      let r;
      try {
        r = this.action.apply(context, args);
      } catch (e) {
        return Promise.reject(e); // a promise either way (opossum would throw here)
      }
      return isThenable(r) ? r : Promise.resolve(r);
    }
    let key;
    if (this._keyed) {
      key = this._getKey.apply(this, args);
      if (this._cache !== undefined) {
        const cached = this._cache.get(key);
        if (cached) {
          this._counted.cacheHits += 1;
          this.emit('cacheHit');
          return cached;
        }
        this._counted.cacheMisses += 1;
        this.emit('cacheMiss');
      }
      if (this._coalesce !== undefined) {
        const pending = this._coalesce.get(key);
        if (pending) {
          this._counted.coalesceCacheHits += 1;
          this.emit('coalesceCacheHit');
          return pending;
        }
        this._counted.coalesceCacheMisses += 1;
        this.emit('coalesceCacheMiss');
      }
    }
    const permit = this._breaker._admit();
    if (permit < 0) return this._rejected(permit, args);
    const call = new Call(context, args, permit, key);
    if (this._hears.success || this._hears.failure || this._hears.timeout) call.start = performance.now();
    const p = new Promise((resolve, reject) => {
      call.resolve = resolve;
      call.reject = reject;
    });
    if (this._coalesce !== undefined) this._coalesce.set(key, p);
    this._run(call);
    return p;
  }

  _rejected(code, args) {
    const cause = this._breaker._refusal(code);
    const err = cause.code === 'ECIRCUITOPEN'
      ? ourError(EOPENBREAKER, 'Breaker is open', { retryAfterMs: cause.retryAfterMs, state: cause.state }, true)
      : cause;
    if (err !== cause) err[OUR_ERROR] = true;
    this.emit('reject', err);
    const fb = this._fallBack(err, args);
    return fb !== undefined ? fb : Promise.reject(err);
  }

  _run(call) {
    if (this._noCapacity || this._bulkhead !== undefined) {
      const admitted = this._noCapacity ? false : this._bulkhead._tryAdmit();
      if (admitted !== true) {
        if (this._noCapacity) this._lockedAll += 1;
        const err = ourError(ESEMLOCKED, 'Semaphore locked', undefined, true);
        this.emit('semaphoreLocked', err, 0);
        if (this._coalesce !== undefined) this._coalesce.delete(call.key);
        this._failed(call, err, 0);
        return;
      }
      call.held = true;
    }
    if (this._timeouts !== undefined) this._timeouts.add(call);
    let r;
    try {
      r = this.action.apply(call.context, call.args);
    } catch (e) {
      this._settleError(call, e);
      return;
    }
    if (isThenable(r)) {
      r.then((v) => this._settleValue(call, v), (e) => this._settleError(call, e));
    } else {
      this._settleValue(call, r);
    }
  }

  /** Leave the timeout list and give the capacity back; false if the call already ended (timed out). */
  _end(call) {
    if (call.done) return false;
    call.done = true;
    if (call.expires !== 0) this._timeouts.remove(call);
    if (call.held) {
      call.held = false;
      this._bulkhead._release();
    }
    return true;
  }

  /** ms since the call started, measured when a latency listener was there at its start (else 0). */
  _latency(call) {
    return call.start !== 0 ? performance.now() - call.start : 0;
  }

  _settleValue(call, value) {
    if (!this._end(call)) return;
    const latency = this._hears.success ? this._latency(call) : 0;
    // Recorded first: a half-open breaker's `close` comes before `success`, as in opossum.
    this._breaker._settle(call.permit, SUCCESS, 0);
    if (this._hears.success) this.emit('success', value, latency);
    if (this._coalesce !== undefined && this._resetOn.includes('success')) this._coalesce.delete(call.key);
    call.resolve(value);
    if (this._cache !== undefined) {
      const ttl = this._cacheTTL;
      this._cache.set(call.key, Promise.resolve(value), ttl > 0 ? Date.now() + ttl : 0);
    }
  }

  _settleError(call, error) {
    if (!this._end(call)) return;
    if (this._coalesce !== undefined && this._resetOn.includes('error')) this._coalesce.delete(call.key);
    this._failed(call, error, this._latency(call));
  }

  /** An error of the call (the action's, a timeout, no capacity): errorFilter'd a success, else a failure. */
  _failed(call, error, latency) {
    let filtered = false;
    if (this._errorFilter !== undefined) {
      try {
        filtered = Boolean(this._errorFilter(error, ...call.args));
      } catch {
        filtered = false; // a filter that throws cannot excuse the error
      }
    }
    if (filtered) {
      // opossum: a filtered error is a success (it closes a half-open breaker), and still rejects.
      this._breaker._settle(call.permit, SUCCESS, 0);
      if (this._hears.success) this.emit('success', error, latency);
      call.reject(error);
      return;
    }
    // `failure` before `open`, as in opossum.
    if (this._hears.failure) this.emit('failure', error, latency, call.args);
    this._breaker._settle(call.permit, FAILURE, 0);
    const fb = this._fallBack(error, call.args);
    if (fb !== undefined) call.resolve(fb);
    else call.reject(error);
  }

  /** The fallback's answer as a Promise (and the `fallback` event), or undefined with none. */
  _fallBack(error, args) {
    const f = this._fallback;
    if (f === undefined) return undefined;
    let result;
    try {
      result = f.apply(f, [...args, error]);
    } catch (e) {
      return Promise.reject(e);
    }
    this._counted.fallbacks += 1;
    if (this._hears.fallback) this.emit('fallback', result, error);
    return result instanceof Promise ? result : Promise.resolve(result);
  }

  _timedOut(call, atLeastMs) {
    this._end(call);
    this._counted.timeouts += 1;
    const ms = this._timeoutMs;
    const err = ourError(ETIMEDOUT, `Timed out after ${ms}ms`, { timeoutMs: ms });
    const latency = call.start !== 0 ? performance.now() - call.start : atLeastMs;
    if (this._hears.timeout) this.emit('timeout', err, latency, call.args);
    if (this._coalesce !== undefined && this._resetOn.includes('timeout')) this._coalesce.delete(call.key);
    this._failed(call, err, latency);
    const c = this.options.abortController;
    if (c !== undefined) c.abort();
  }
}

/** seawall's field names in a native configuration error → opossum's option names. */
const FIELD_NAMES = {
  'window.buckets': 'rollingCountBuckets',
  'window.bucketMs': 'rollingCountTimeout',
  openDurationMs: 'resetTimeout',
  minimumCalls: 'volumeThreshold',
  failureRateThreshold: 'errorThresholdPercentage',
};

function renamed(e) {
  if (isSeawallError(e) && typeof e.field === 'string') {
    for (const [from, to] of Object.entries(FIELD_NAMES)) {
      if (e.field === from) {
        e.field = to;
        e.message = `${e.message} (option ${to})`;
        break;
      }
    }
  }
  return e;
}

CircuitBreaker.Status = Status;
CircuitBreaker.default = CircuitBreaker;
CircuitBreaker.codes = Object.freeze({ EOPENBREAKER, ETIMEDOUT, ESEMLOCKED, ESHUTDOWN });

module.exports = CircuitBreaker;
