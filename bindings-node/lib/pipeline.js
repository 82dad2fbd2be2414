'use strict';
// Composition (DESIGN §9). `wrap(...policies)` nests any policies in the order
// given (outermost first), cockatiel style. `pipeline({...})` builds the order
// DESIGN §9 prescribes, whatever order the options come in:
//   fallback (stale cache, then fallbacks) → bulkhead → circuit breaker →
//   retry → rate limiter → timeout / deadline → call
// (the rate limiter inside retry: every attempt spends a cell, and retry may
// wait out its retryAfterMs within the deadline).
// and says where each result came from: `{ value, source, degraded }` with
// source `primary`, `stale-cache` or `fallback-k`.

const { LRUCache } = require('lru-cache');
const { constants } = require('./native');
const { configError } = require('./errors');
const { only, number, isPlainObject, optionalFunction } = require('./config');
const { Deadline } = require('./deadline');
const { callOptions } = require('./call');
const { SafeEmitter, disposable } = require('./hooks');
const { Timeout } = require('./timeout');

// lru-cache allocates its index arrays for `max` entries up front (about 12
// bytes each): 2^24 entries are some 200 MB, and past 2^32 it cannot allocate.
const STALE_CACHE_MAX = 2 ** 24;

/** Nest `policies` (each with `execute(fn, options)`), the first outermost. */
function wrap(...policies) {
  for (const [i, p] of policies.entries()) {
    if (p === null || typeof p !== 'object' || typeof p.execute !== 'function') {
      throw configError(`policies[${i}]`, 'must have an execute(fn, options) method');
    }
  }
  const n = policies.length;
  function run(i, fn, opts) {
    if (i === n) return fn(opts);
    return policies[i].execute(
      (ctx) => run(i + 1, fn, {
        signal: ctx !== undefined && ctx.signal !== undefined ? ctx.signal : opts.signal,
        deadline: ctx !== undefined && ctx.deadline !== undefined ? ctx.deadline : opts.deadline,
        priority: opts.priority,
        attempt: ctx !== undefined && ctx.attempt !== undefined ? ctx.attempt : opts.attempt,
      }),
      opts,
    );
  }
  return {
    policies,
    /** Run `fn({ signal, deadline, attempt })` through every policy. */
    execute(fn, options) {
      let call;
      try {
        call = callOptions(fn, options);
      } catch (e) {
        return Promise.reject(e);
      }
      const opts = { signal: call.signal, deadline: call.deadline, priority: call.priority, attempt: undefined };
      return Promise.resolve().then(() => run(0, fn, opts));
    },
  };
}

/**
 * A stale-if-error cache on lru-cache: the last good value per key, kept for
 * `maxStaleMs` (default: until evicted) among at most `max` keys (default 1024,
 * `STALE_CACHE_MAX_ENTRIES` of seawall-host, the same as Python's).
 * No timers: entries expire when read.
 */
class StaleCache {
  constructor(options = {}) {
    if (!isPlainObject(options)) throw configError('staleCache', 'must be an object');
    only(options, ['max', 'maxStaleMs'], 'staleCache');
    const max = number(options, 'max', 'staleCache.max', { min: 1, integer: true, max: STALE_CACHE_MAX });
    const ttl = number(options, 'maxStaleMs', 'staleCache.maxStaleMs', { min: 1 });
    this._lru = new LRUCache({
      max: max === undefined ? constants.staleCacheMaxEntries : max,
      ...(ttl !== undefined ? { ttl: Math.ceil(ttl), ttlAutopurge: false, allowStale: false } : {}),
    });
  }

  set(key, value) {
    this._lru.set(key, value);
  }

  /** The last good value of `key` (undefined if none, or older than maxStaleMs). */
  get(key) {
    return this._lru.get(key);
  }

  delete(key) {
    this._lru.delete(key);
  }

  get size() {
    return this._lru.size;
  }
}

const PIPELINE_KEYS = ['bulkhead', 'breaker', 'retry', 'rateLimiter', 'timeout', 'deadlineMs', 'fallback', 'staleCache', 'isFailureResult'];

class Pipeline extends SafeEmitter {
  constructor(options = {}) {
    super();
    if (!isPlainObject(options)) throw configError('options', 'must be an object');
    only(options, PIPELINE_KEYS);
    const layers = [];
    for (const k of ['bulkhead', 'breaker', 'retry', 'rateLimiter', 'timeout']) {
      const p = options[k];
      if (p === undefined) continue;
      if (p === null || typeof p !== 'object' || typeof p.execute !== 'function') {
        throw configError(k, 'must be a seawall policy (an object with execute)');
      }
      layers.push(p);
    }
    this._inner = wrap(...layers);
    // With a deadline, the outermost layer is a timeout that only the deadline
    // ends: it bounds the whole call (queue wait, every attempt, every backoff)
    // and aborts the call's signal, whether or not a timeout layer is given.
    this._bounded = wrap(new Timeout(Infinity), ...layers);
    this._deadlineMs = number(options, 'deadlineMs', 'deadlineMs', { min: 0, exclusive: true });
    const fb = options.fallback;
    this._fallbacks = fb === undefined ? [] : Array.isArray(fb) ? fb : [fb];
    this._fallbacks.forEach((f, i) => {
      if (typeof f !== 'function') throw configError(`fallback[${i}]`, 'must be a function');
    });
    this._isFailureResult = optionalFunction(options, 'isFailureResult');
    const sc = options.staleCache;
    this.staleCache = sc === undefined ? undefined : sc instanceof StaleCache ? sc : new StaleCache(sc);
  }

  /** Tell the 'fallback' listeners which source answered; returns `answer`. */
  _fellBack(answer) {
    this.emit('fallback', { source: answer.source, error: answer.error, result: answer.result });
    return answer;
  }

  _owner() {
    return 'pipeline';
  }

  /** Listen to each answer of the stale cache or a fallback (`{ source, error, result }`); returns a Disposable. */
  onFallback(listener) {
    return disposable(this, 'fallback', listener);
  }

  /**
   * Run `fn({ signal, deadline, attempt })` through the layers. Resolves with
   * `{ value, source: 'primary', degraded: false }`, or on failure with the
   * stale value of `key` (`source: 'stale-cache'`), or the first fallback that
   * works (`fallback-1`, `fallback-2`, …; each gets `(error, { key })`), all
   * `degraded: true` and carrying the `error`. Rejects with the error when none
   * can answer, and at once (no fallback) when the caller's `signal` aborted.
   */
  async execute(fn, options) {
    const call = callOptions(fn, options);
    const { key, signal } = call;
    let deadline = call.deadline;
    if (this._deadlineMs !== undefined) {
      const own = new Deadline(this._deadlineMs);
      deadline = deadline === undefined ? own : deadline.child(this._deadlineMs);
    }
    let error;
    // A returned value marked a failure by isFailureResult (DESIGN §1): it is
    // never cached as good, the stale cache and the fallbacks are asked as for
    // an error, and with none it is still the answer (degraded).
    let failed = false;
    let result;
    try {
      const inner = deadline === undefined ? this._inner : this._bounded;
      const value = await inner.execute(fn, { signal, deadline, priority: call.priority });
      if (this._isFailureResult === undefined || !this._isFailureResult(value)) {
        if (this.staleCache !== undefined && key !== undefined) this.staleCache.set(key, value);
        return { value, source: 'primary', degraded: false };
      }
      failed = true;
      result = value;
    } catch (e) {
      error = e;
    }
    if (failed && signal !== undefined && signal.aborted) return { value: result, source: 'primary', degraded: true };
    if (signal !== undefined && signal.aborted) throw error;
    const why = failed ? { result } : { error };
    if (this.staleCache !== undefined && key !== undefined) {
      const stale = this.staleCache.get(key);
      if (stale !== undefined) return this._fellBack({ value: stale, source: 'stale-cache', degraded: true, ...why });
    }
    for (let k = 0; k < this._fallbacks.length; k++) {
      try {
        const value = await this._fallbacks[k](error, { key, result });
        return this._fellBack({ value, source: `fallback-${k + 1}`, degraded: true, ...why });
      } catch {
        // try the next fallback; the primary error is what the caller sees
      }
    }
    if (failed) return { value: result, source: 'primary', degraded: true };
    throw error;
  }
}

/** A DESIGN §9 pipeline: see Pipeline. */
function pipeline(options) {
  return new Pipeline(options);
}

module.exports = { wrap, pipeline, Pipeline, StaleCache };
