'use strict';
// CircuitBreaker: the JS face of the core's breaker (DESIGN §3).
//
// A protected call crosses into Rust twice: `breakerAcquire` (a permit number, or
// a negative rejection that carries its retry-after) and `breakerRecord` (returns
// the breaker's epoch). The epoch changes with every state change, whoever made it
// (this call, another call, another process sharing the breaker), so comparing it
// with the last one seen is how events are noticed: no timers, no polling loop.
//
// A local breaker that is closed (or disabled) crosses neither way for most
// calls. Its acquire changes nothing but a count (see `execute`). Its successes,
// while its window holds no failure (the record says so: `clean`), cannot open
// it, and only this object records into it, so they are counted here and
// recorded in one crossing (`breakerRecordSuccesses`): before any other record
// or any reading of the breaker, when MAX_BATCH are pending, and at the latest
// by the end of the JavaScript job that settled them (process.nextTick), so
// nothing outside this object can observe that they waited.

const { SafeEmitter, disposable } = require('./hooks');
const { binding, fast, constants } = require('./native');
const {
  SeawallError, isSeawallError, codes, configError, abortedError, fromNative, sharedOpenError, refuseCloning, refusal,
} = require('./errors');
const { breakerConfig, only, optionalFunction, argument, clockMs, name: nameOption, BREAKER_KEYS } = require('./config');
const { callOptions } = require('./call');

const { breakerAcquire, breakerRecord, breakerRecordSuccesses, breakerStateWord } = fast;

// The encodings of src/boundary.rs: permit = epoch · SLOTS + slot,
// stateWord = state · STATE_SHIFT + epoch.
const SLOTS = constants.permitCodeSpan;
const STATE_SHIFT = constants.stateSpan;
const SUCCESS = constants.outcomeSuccess;
const FAILURE = constants.outcomeFailure;
const IGNORED = constants.outcomeIgnored;
const STATES = constants.states;
const OPEN = STATES.indexOf('open');
const HALF_OPEN = STATES.indexOf('halfOpen');
const FORCED_OPEN = STATES.indexOf('forcedOpen');
// The event of each state is its name, but `close` for `closed`.
const STATE_EVENTS = STATES.map((s) => (s === 'closed' ? 'close' : s));
const TIMED_EVENTS = new Set(['success', 'failure']);
const NO_SIGNAL = Object.freeze({ signal: undefined });
// Successes held back at most (one crossing records them all).
const MAX_BATCH = 4096;
// Not a permit code: no success is batched.
const NO_BATCH = -1;

function flushPending(breaker) {
  breaker._flush();
}

let unnamed = 0;

/** The version of the record `toJSON()` exports and `initialState` takes. */
const EXPORT_VERSION = 1;
const EXPORT_KEYS = ['version', 'state', 'openings', 'retryAfterMs'];

/** An `initialState` record, checked: EINVALIDCONFIG naming the field otherwise. */
function checkExported(r) {
  if (r === null || typeof r !== 'object' || Array.isArray(r)) {
    throw configError('initialState', 'must be a record from breaker.toJSON(): { version, state, openings, retryAfterMs }');
  }
  only(r, EXPORT_KEYS, 'initialState');
  if (r.version !== EXPORT_VERSION) {
    throw configError('initialState.version', `must be ${EXPORT_VERSION} (a record of this version of seawall), not ${JSON.stringify(r.version)}`);
  }
  if (!STATES.includes(r.state)) throw configError('initialState.state', `must be one of ${STATES.join(', ')}, not ${JSON.stringify(r.state)}`);
  const openings = argument(r.openings, 'initialState.openings', { integer: true, max: 2 ** 32 - 1 });
  let retryAfterMs = null;
  if (r.state === 'open') {
    retryAfterMs = argument(r.retryAfterMs, 'initialState.retryAfterMs');
  } else if (r.retryAfterMs !== null && r.retryAfterMs !== undefined) {
    throw configError('initialState.retryAfterMs', `must be null unless the state is open, not ${String(r.retryAfterMs)}`);
  }
  return { state: r.state, openings, retryAfterMs };
}

/**
 * `permitSlots` (undefined: the default table), checked here as far as JS
 * can: a shared breaker's option only, and a number; the sizes natively.
 */
function permitSlotsOption(options) {
  const n = options.permitSlots;
  if (n === undefined) return undefined;
  if (options.shared === undefined) throw configError('permitSlots', 'applies to shared breakers only (give shared)');
  if (typeof n !== 'number') throw configError('permitSlots', `must be one of ${constants.permitSlotSizes.join(', ')}`);
  return n;
}

/**
 * The ECIRCUITOPEN (or EPERMITS) error of rejection `code` by breaker handle
 * `h` (at `nowMs` of the caller's clock, or now).
 */
function circuitOpenError(name, code, h, nowMs, slots = constants.permitSlots) {
  if (code <= -constants.rejectedOpenBase) {
    const ns = -code - constants.rejectedOpenBase;
    // A code carries up to 2^52 ns (52 days) exactly; at that it saturated, and
    // the breaker itself says how long is left (a rare, slower crossing).
    let retryAfterMs = ns / 1e6;
    if (ns >= constants.rejectedOpenMaxNs) {
      const exact = binding.breakerRetryAfterMs(h, nowMs);
      if (typeof exact === 'number') retryAfterMs = exact;
    }
    return refusal(codes.ECIRCUITOPEN, `circuit breaker '${name}' is open; retry after ${retryAfterMs} ms`, {
      breaker: name, state: 'open', retryAfterMs,
    });
  }
  if (code === constants.rejectedForcedOpen) {
    return refusal(codes.ECIRCUITOPEN, `circuit breaker '${name}' is forced open`, {
      breaker: name, state: 'forcedOpen', retryAfterMs: undefined,
    });
  }
  if (code === constants.rejectedHalfOpen) {
    return refusal(codes.ECIRCUITOPEN, `circuit breaker '${name}' is half-open and every probe slot is taken`, {
      breaker: name, state: 'halfOpen', retryAfterMs: undefined,
    });
  }
  return refusal(codes.EPERMITS, `circuit breaker '${name}': all ${slots} shared permit slots are in use`, {
    breaker: name,
  });
}

/**
 * A circuit breaker (DESIGN §3; resilience4j's rules, with epoch-tagged permits so
 * a stale outcome never opens or closes it). Durations in milliseconds, rates in
 * percent.
 */
class CircuitBreaker extends SafeEmitter {
  /**
   * @param {Function|object} [actionOrOptions] an action for `fire(...args)`
   *   (opossum style), or the options
   * @param {object} [options] see index.d.ts; throws EINVALIDCONFIG naming the
   *   option, ESHAREDMISMATCH / ESHARED for a shared breaker that cannot be opened
   */
  constructor(actionOrOptions, options) {
    super();
    let action;
    if (typeof actionOrOptions === 'function') {
      action = actionOrOptions;
    } else if (options === undefined) {
      options = actionOrOptions;
    } else if (actionOrOptions !== undefined) {
      throw configError('action', 'must be a function');
    }
    if (options === undefined || options === null) options = {};
    if (typeof options !== 'object') throw configError('options', 'must be an object');
    only(options, BREAKER_KEYS);
    const shared = options.shared;
    if (shared !== undefined && (typeof shared !== 'string' || shared === '')) {
      throw configError('shared', 'must be a non-empty region name');
    }
    const native = breakerConfig(options);
    const permitSlots = permitSlotsOption(options);
    const initial = options.initialState === undefined ? undefined : checkExported(options.initialState);
    this.name = nameOption(options, shared !== undefined ? shared : `breaker-${++unnamed}`);
    this._action = action;
    this._isFailure = optionalFunction(options, 'isFailure');
    this._isFailureResult = optionalFunction(options, 'isFailureResult');
    this._errorFilter = optionalFunction(options, 'errorFilter');
    this._fallback = optionalFunction(options, 'fallback');
    this._slowRule = native.slowCallDurationMs !== undefined && native.slowCallDurationMs >= 0;
    let token;
    try {
      token = binding.breakerNew(native, shared, permitSlots);
    } catch (e) {
      const err = sharedOpenError(e, 'circuit breaker', shared, 'options (window, thresholds, durations, half-open limits, permitSlots)');
      if (err.code === codes.EINVALIDCONFIG && shared !== undefined && /^shared\b/.test(err.field || '')) err.field = 'shared';
      throw err;
    }
    this._token = token;
    this._h = binding.handleOf(token);
    // The permit code whose successes are batched now (NO_BATCH: none), how
    // many are pending, and whether the options allow it at all.
    this._batch = NO_BATCH;
    this._pending = 0;
    this._batchable = shared === undefined && !this._slowRule;
    if (initial !== undefined) this._start(initial, shared);
    this._shared = shared;
    this._local = shared === undefined;
    this._permitSlots = permitSlots === undefined ? constants.permitSlots : permitSlots;
    const word = breakerStateWord(this._h);
    this._state = (word / STATE_SHIFT) | 0;
    this._epoch = word - this._state * STATE_SHIFT;
    this._timed = this._slowRule;
    refuseCloning(this, 'circuit breaker');
    this.on('newListener', (event) => {
      if (TIMED_EVENTS.has(event)) this._timed = true;
    });
    this.on('removeListener', () => {
      this._timed = this._slowRule || this.listenerCount('success') > 0 || this.listenerCount('failure') > 0;
    });
  }

  /**
   * Run `fn` through the breaker: resolves with its result, rejects with its
   * error unchanged, or with ECIRCUITOPEN (with `retryAfterMs` in open) when the
   * breaker refuses (or the fallback's result, if one was given). `fn` gets
   * `{ signal }`; an error thrown after the caller's `signal` aborted is
   * `ignored` (DESIGN §1), not a failure.
   */
  async execute(fn, options) {
    const { signal } = callOptions(fn, options);
    if (signal !== undefined && signal.aborted) throw abortedError(signal);
    const h = this._h;
    let permit;
    if (this._local && this._state !== OPEN && this._state !== HALF_OPEN && this._state !== FORCED_OPEN) {
      // A local breaker that is closed or disabled admits every call with its
      // current epoch and changes nothing (the core's acquire_token: such a
      // permit counts as admitted when recorded), and only this object can
      // change it: its state and epoch are known here, from the epoch every
      // record returns. So the call skips the acquire crossing.
      permit = this._epoch * SLOTS;
    } else {
      permit = breakerAcquire(h);
      if (permit < 0) return this._rejected(permit);
      if (((permit / SLOTS) | 0) !== this._epoch) this._sync();
    }
    const t0 = this._timed ? performance.now() : 0;
    let value;
    try {
      value = await fn(signal === undefined ? NO_SIGNAL : { signal });
    } catch (error) {
      return this._failed(permit, error, t0, signal);
    }
    const durationMs = this._timed ? performance.now() - t0 : 0;
    if (this._isFailureResult !== undefined && this._resultFailed(value, signal)) {
      // A returned failure (DESIGN §1): recorded as a failure, but the caller
      // gets the value, not an error, and no fallback replaces it.
      this._record(permit, FAILURE, durationMs);
      if (this._timed) this.emit('failure', { error: undefined, result: value, durationMs });
      return value;
    }
    this._record(permit, SUCCESS, durationMs);
    if (this._timed) this.emit('success', { durationMs });
    return value;
  }

  /** opossum style: call the constructor's action with `args` through the breaker. */
  fire(...args) {
    const action = this._action;
    if (action === undefined) return Promise.reject(configError('action', 'fire() needs an action: new CircuitBreaker(action, options)'));
    return this.execute(() => action(...args));
  }

  /**
   * `fn` with the same parameters, returning a Promise of its result, every
   * call made through this breaker.
   */
  wrap(fn) {
    if (typeof fn !== 'function') throw configError('fn', 'must be a function');
    const self = this;
    return function wrapped(...args) {
      return self.execute(() => fn.apply(this, args));
    };
  }

  // The permit API of callers that run the call themselves (seawall/opossum):
  // the same admission and recording as execute(), without its Promise.

  /** A permit (≥ 0) for one call, or a negative rejection code for `_refusal`. */
  _admit() {
    if (this._local && this._state !== OPEN && this._state !== HALF_OPEN && this._state !== FORCED_OPEN) {
      return this._epoch * SLOTS;
    }
    const permit = breakerAcquire(this._h);
    if (permit < 0 || ((permit / SLOTS) | 0) !== this._epoch) this._sync();
    return permit;
  }

  /** Record `permit` (exactly once) as `SUCCESS`, `FAILURE` or `IGNORED` of `OUTCOME`. */
  _settle(permit, outcome, durationMs) {
    this._record(permit, outcome, durationMs);
  }

  /** The ECIRCUITOPEN error of rejection `code` (from `_admit`). */
  _refusal(code) {
    return circuitOpenError(this.name, code, this._h, undefined);
  }

  /** Open now for `ms` (opossum's open()): an opening like a tripped one, not forcedOpen. */
  _trip(ms) {
    if (this._pending !== 0) this._flush();
    binding.breakerRestore(this._h, 'open', 1, ms);
    this._sync();
  }

  _rejected(code) {
    this._sync();
    const err = circuitOpenError(this.name, code, this._h, undefined, this._permitSlots);
    this.emit('reject', err);
    if (this._fallback !== undefined) return this._fallback(err);
    throw err;
  }

  _resultFailed(value, signal) {
    if (signal !== undefined && signal.aborted) return false;
    try {
      return Boolean(this._isFailureResult(value));
    } catch {
      return true; // a predicate that throws cannot vouch for the value
    }
  }

  _outcomeOf(error, signal) {
    if (signal !== undefined && signal.aborted) return IGNORED;
    // Refusals of seawall's own policies say nothing about the dependency: the
    // call was never made (DESIGN §9).
    if (isSeawallError(error, codes.EABORTED) || isSeawallError(error, codes.EBULKHEADFULL)
      || isSeawallError(error, codes.ERATELIMITED)) return IGNORED;
    try {
      if (this._errorFilter !== undefined && this._errorFilter(error)) return IGNORED;
      if (this._isFailure !== undefined && !this._isFailure(error)) return IGNORED;
    } catch {
      return FAILURE; // a predicate that throws cannot excuse the error
    }
    return FAILURE;
  }

  _failed(permit, error, t0, signal) {
    const outcome = this._outcomeOf(error, signal);
    const durationMs = this._timed ? performance.now() - t0 : 0;
    this._record(permit, outcome, durationMs);
    if (outcome === FAILURE) {
      if (this._timed) this.emit('failure', { error, durationMs });
      if (this._fallback !== undefined) return this._fallback(error);
    }
    throw error;
  }

  /**
   * Record one outcome, after the successes held back before it. A success is
   * held back itself while the batch is open (a local breaker, closed or
   * disabled, no failure in its window, no slow-call rule: such a success can
   * change no state), and recorded with the others in one crossing at the next
   * tick or once `MAX_BATCH` are pending. Every read of the breaker (`state`,
   * `metrics()`, a control) flushes first.
   */
  _record(permit, outcome, durationMs) {
    if (outcome === SUCCESS && permit === this._batch) {
      this._pending += 1;
      if (this._pending === 1) process.nextTick(flushPending, this);
      else if (this._pending >= MAX_BATCH) this._flush();
      return;
    }
    if (this._pending !== 0) this._flush();
    this._recorded(breakerRecord(this._h, permit, outcome, durationMs));
  }

  /** Record the successes held back, if any. */
  _flush() {
    const n = this._pending;
    if (n === 0) return;
    this._pending = 0;
    this._recorded(breakerRecordSuccesses(this._h, this._batch, n));
  }

  /**
   * What a record returned, `epoch · 2 + clean`: a new epoch is a state change
   * to notice; `clean` (a local breaker, closed or disabled, no failure in its
   * window) lets the next successes of this epoch be batched.
   */
  _recorded(r) {
    const clean = r % 2;
    if ((r - clean) / 2 !== this._epoch) this._sync();
    this._batch = clean === 1 && this._batchable && this._state !== OPEN && this._state !== HALF_OPEN && this._state !== FORCED_OPEN
      ? this._epoch * SLOTS : NO_BATCH;
  }

  /** Notice a state change (ours or another process's) and emit its events. */
  _sync() {
    if (this._pending !== 0) this._flush();
    const word = breakerStateWord(this._h);
    const state = (word / STATE_SHIFT) | 0;
    const epoch = word - state * STATE_SHIFT;
    if (epoch === this._epoch) return;
    const from = this._state;
    this._state = state;
    this._epoch = epoch;
    this._batch = NO_BATCH;
    const change = { from: STATES[from], to: STATES[state], epoch };
    this.emit('stateChange', change);
    if (state === OPEN) {
      const retryAfterMs = binding.breakerRetryAfterMs(this._h, undefined);
      this.emit('open', { retryAfterMs: retryAfterMs === null ? undefined : retryAfterMs, epoch });
    } else {
      this.emit(STATE_EVENTS[state], { epoch });
    }
  }

  _owner() {
    return `circuit breaker '${this.name}'`;
  }

  /**
   * The breaker's state as a plain record (DESIGN §3.7; opossum `toJSON`):
   * `{ version: 1, state, openings, retryAfterMs }`, `openings` the consecutive
   * openings, `retryAfterMs` the time `open` has left (null in other states).
   * `new CircuitBreaker({ ...options, initialState: record })` starts there.
   * Window counts are not carried.
   */
  toJSON() {
    this._sync();
    const m = binding.breakerMetrics(this._h, undefined);
    const open = m.state === 'open';
    return {
      version: EXPORT_VERSION,
      state: m.state,
      openings: m.openings,
      retryAfterMs: open ? (m.retryAfterMs === undefined ? 0 : m.retryAfterMs) : null,
    };
  }

  /** Start from `initial` (checked); a shared breaker made by another process must already be in its state. */
  _start(initial, shared) {
    if (shared === undefined || binding.breakerCreated(this._h)) {
      binding.breakerRestore(this._h, initial.state, initial.openings, initial.retryAfterMs === null ? 0 : initial.retryAfterMs);
      this._sync();
      return;
    }
    const now = binding.breakerMetrics(this._h, undefined).state;
    if (now !== initial.state) {
      throw new SeawallError(codes.ESHAREDMISMATCH, `shared circuit breaker '${shared}' is already '${now}': `
        + `its initialState '${initial.state}' disagrees (the region's state is every process's; `
        + 'leave initialState out, or unlink the region first)', { shared, field: 'initialState' });
    }
  }

  /** `closed`, `open`, `halfOpen`, `forcedOpen` or `disabled` (`open` until a call moves it on). */
  get state() {
    this._sync();
    return STATES[this._state];
  }

  /** Whether this breaker lives in a region shared by the processes of the host. */
  get isShared() {
    return this._shared !== undefined;
  }

  /**
   * A snapshot: state, the sliding window's counts and rates (percent), the
   * half-open probes, `retryAfterMs`, lifetime totals and (shared) permits
   * outstanding. Reading changes nothing.
   */
  metrics() {
    this._sync();
    const m = binding.breakerMetrics(this._h, undefined);
    return {
      name: this.name,
      shared: this._shared !== undefined,
      state: m.state,
      epoch: m.epoch,
      window: { calls: m.calls, failures: m.failures, slowCalls: m.slowCalls, slowFailures: m.slowFailures },
      failureRate: m.failureRate === undefined ? null : m.failureRate,
      slowCallRate: m.slowCallRate === undefined ? null : m.slowCallRate,
      consecutiveFailures: m.consecutiveFailures,
      halfOpenInFlight: m.halfOpenInFlight,
      halfOpenSuccesses: m.halfOpenSuccesses,
      openings: m.openings,
      retryAfterMs: m.retryAfterMs === undefined ? null : m.retryAfterMs,
      totals: {
        admitted: m.totalAdmitted,
        rejected: m.totalRejected,
        successes: m.totalSuccesses,
        failures: m.totalFailures,
        slow: m.totalSlow,
        ignored: m.totalIgnored,
        stale: m.totalStale,
        transitions: m.totalTransitions,
      },
      permitsOutstanding: m.permitsOutstanding === undefined ? null : m.permitsOutstanding,
      // Shared: what dead processes hold until a caller gives it back (DESIGN §8).
      permitsAbandoned: binding.breakerAbandoned(this._h),
    };
  }

  /** Reject every call until `reset()` (state `forcedOpen`). */
  forceOpen() {
    if (this._pending !== 0) this._flush();
    binding.breakerControl(this._h, 'forceOpen');
    this._sync();
  }

  /** Admit every call, counting outcomes in the totals only, until `reset()`. */
  disable() {
    if (this._pending !== 0) this._flush();
    binding.breakerControl(this._h, 'disable');
    this._sync();
  }

  /** Back to `closed` with an empty window; calls in flight become stale. */
  reset() {
    if (this._pending !== 0) this._flush();
    binding.breakerControl(this._h, 'reset');
    this._sync();
  }

  /**
   * Shared breakers: give back now, as ignored, the permits of processes that
   * died while they held them. Returns how many. Not needed: a caller refused
   * while they hold the probes or every permit slot does the same by itself
   * (DESIGN §8, self-healing).
   */
  reclaimAbandoned() {
    const n = binding.breakerReclaimAbandoned(this._h);
    this._sync();
    return n;
  }

  /** Remove the shared breaker `name` from /dev/shm (a missing one is fine). */
  static unlinkShared(name) {
    try {
      binding.breakerUnlinkShared(name);
    } catch (e) {
      throw fromNative(e);
    }
  }

  /** Listen to `event`; returns a disposable that removes the listener. */
  subscribe(event, listener) {
    return disposable(this, event, listener);
  }
  onOpen(listener) { return disposable(this, 'open', listener); }
  onHalfOpen(listener) { return disposable(this, 'halfOpen', listener); }
  onClose(listener) { return disposable(this, 'close', listener); }
  onReject(listener) { return disposable(this, 'reject', listener); }
  onSuccess(listener) { return disposable(this, 'success', listener); }
  onFailure(listener) { return disposable(this, 'failure', listener); }
  onStateChange(listener) { return disposable(this, 'stateChange', listener); }
}

const OUTCOMES = Object.assign(Object.create(null), { success: SUCCESS, failure: FAILURE, ignored: IGNORED });

/**
 * The breaker without Promises or clocks, for callers that drive it themselves
 * (and the conformance runner): every method takes the time `nowMs` of the
 * caller's monotonic clock. Each permit must be recorded exactly once.
 */
class BreakerCore {
  constructor(options = {}) {
    only(options, BREAKER_KEYS.filter((k) => !['isFailure', 'isFailureResult', 'errorFilter', 'fallback', 'initialState'].includes(k)));
    const native = breakerConfig(options);
    try {
      this._token = binding.breakerNew(native, options.shared, permitSlotsOption(options));
    } catch (e) {
      throw fromNative(e);
    }
    this._h = binding.handleOf(this._token);
  }

  /** A permit (a number ≥ 0) at `nowMs`, or the ECIRCUITOPEN error that refused it. */
  tryAcquire(nowMs) {
    const p = binding.breakerAcquireAt(this._h, argument(nowMs, 'nowMs'));
    return p >= 0 ? { permit: p } : { error: circuitOpenError('core', p, this._h, nowMs) };
  }

  /**
   * Record `permit`'s outcome (`success`, `failure`, `ignored`) for a call of
   * `durationMs` (finite, ≥ 0) at `nowMs`.
   */
  record(permit, outcome, durationMs, nowMs) {
    argument(permit, 'permit', { integer: true, max: Number.MAX_SAFE_INTEGER });
    const o = OUTCOMES[outcome];
    if (o === undefined) throw configError('outcome', "must be 'success', 'failure' or 'ignored'");
    argument(durationMs, 'durationMs');
    argument(nowMs, 'nowMs');
    try {
      binding.breakerRecordAt(this._h, permit, o, durationMs, nowMs);
    } catch (e) {
      throw fromNative(e);
    }
  }

  get state() {
    return STATES[(breakerStateWord(this._h) / STATE_SHIFT) | 0];
  }

  retryAfterMs(nowMs) {
    return binding.breakerRetryAfterMs(this._h, clockMs(nowMs));
  }

  metrics(nowMs) {
    return binding.breakerMetrics(this._h, clockMs(nowMs));
  }

  forceOpen() { binding.breakerControl(this._h, 'forceOpen'); }
  disable() { binding.breakerControl(this._h, 'disable'); }
  reset() { binding.breakerControl(this._h, 'reset'); }
}

const OUTCOME = Object.freeze({ SUCCESS, FAILURE, IGNORED });

module.exports = { CircuitBreaker, BreakerCore, disposable, OUTCOME };
