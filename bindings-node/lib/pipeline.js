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
const { only, number, isPlainObject } = require('./config');
const { checkSignal } = require('./abort');
const { Deadline, checkDeadline } = require('./deadline');

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
      if (typeof fn !== 'function') return Promise.reject(configError('fn', 'must be a function'));
      const opts = {
        signal: options === undefined ? undefined : options.signal,
        deadline: options === undefined ? undefined : options.deadline,
        priority: options === undefined ? undefined : options.priority,
        attempt: undefined,
      };
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
    const max = number(options, 'max', 'staleCache.max', { min: 1, integer: true });
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

const PIPELINE_KEYS = ['bulkhead', 'breaker', 'retry', 'rateLimiter', 'timeout', 'deadlineMs', 'fallback', 'staleCache'];

class Pipeline {
  constructor(options = {}) {
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
    this._deadlineMs = number(options, 'deadlineMs', 'deadlineMs', { min: 0, exclusive: true });
    const fb = options.fallback;
    this._fallbacks = fb === undefined ? [] : Array.isArray(fb) ? fb : [fb];
    this._fallbacks.forEach((f, i) => {
      if (typeof f !== 'function') throw configError(`fallback[${i}]`, 'must be a function');
    });
    const sc = options.staleCache;
    this.staleCache = sc === undefined ? undefined : sc instanceof StaleCache ? sc : new StaleCache(sc);
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
    const key = options === undefined ? undefined : options.key;
    const signal = options === undefined ? undefined : checkSignal(options.signal, configError);
    let deadline = options === undefined ? undefined : checkDeadline(options.deadline);
    if (this._deadlineMs !== undefined) {
      const own = new Deadline(this._deadlineMs);
      deadline = deadline === undefined ? own : deadline.child(this._deadlineMs);
    }
    let error;
    try {
      const value = await this._inner.execute(fn, { signal, deadline, priority: options && options.priority });
      if (this.staleCache !== undefined && key !== undefined) this.staleCache.set(key, value);
      return { value, source: 'primary', degraded: false };
    } catch (e) {
      error = e;
    }
    if (signal !== undefined && signal.aborted) throw error;
    if (this.staleCache !== undefined && key !== undefined) {
      const stale = this.staleCache.get(key);
      if (stale !== undefined) return { value: stale, source: 'stale-cache', degraded: true, error };
    }
    for (let k = 0; k < this._fallbacks.length; k++) {
      try {
        const value = await this._fallbacks[k](error, { key });
        return { value, source: `fallback-${k + 1}`, degraded: true, error };
      } catch {
        // try the next fallback; the primary error is what the caller sees
      }
    }
    throw error;
  }
}

/** A DESIGN §9 pipeline: see Pipeline. */
function pipeline(options) {
  return new Pipeline(options);
}

module.exports = { wrap, pipeline, Pipeline, StaleCache };
