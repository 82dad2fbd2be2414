'use strict';
// Options as users write them (camelCase, milliseconds, percentages 0–100) to the
// plain objects the native layer takes. Types and signs are checked here, with
// the option named in the error; the ranges and relations between fields are
// checked by the core, whose errors the native layer names the same way.

const { configError } = require('./errors');
const { optionKeys } = require('./options');
const { constants } = require('./native');

function isPlainObject(o) {
  return o !== null && typeof o === 'object' && !Array.isArray(o);
}

/** Refuse keys outside `allowed` (catches typos such as `failureThreshold`). */
function only(o, allowed, where) {
  for (const k of Object.keys(o)) {
    if (!allowed.includes(k)) {
      throw configError(where ? `${where}.${k}` : k, `unknown option (known: ${allowed.join(', ')})`);
    }
  }
}

/**
 * A number option: undefined stays undefined (the core's default); `null` is
 * `constants.absent` ("rule off") where `nullable`; otherwise a finite number ≥ `min`
 * (`> min` with `exclusive`), ≤ `max`, an integer with `integer`; `Infinity`
 * too where `infinite`.
 */
function number(o, key, field, rules = {}) {
  const v = o[key];
  if (v === undefined) return undefined;
  if (v === null) {
    if (rules.nullable) return constants.absent;
    throw configError(field, 'must not be null (this rule cannot be turned off)');
  }
  return checked(v, field, rules);
}

/**
 * A number argument of a method (checked like an option): `undefined` is
 * refused unless `optional` (then it stays undefined), `null` is refused.
 */
function argument(v, field, rules = {}) {
  if (v === undefined) {
    if (rules.optional) return undefined;
    throw configError(field, 'is required');
  }
  if (v === null) throw configError(field, 'must be a number, not null');
  return checked(v, field, rules);
}

/** `nowMs` of the caller's monotonic clock: absent (now), or a finite number ≥ 0. */
function clockMs(v, field = 'nowMs') {
  if (v === undefined) return undefined;
  return argument(v, field);
}

/** A whole number ≥ 1 that fits a u32 (`attempt` of a backoff or retry). */
const ATTEMPT = { min: 1, integer: true, max: 2 ** 32 - 1 };

function checked(v, field, { min = 0, max = Infinity, integer = false, exclusive = false, infinite = false }) {
  if (typeof v !== 'number' || Number.isNaN(v)) throw configError(field, `must be a number, not ${typeof v === 'number' ? 'NaN' : typeof v}`);
  if (integer && !Number.isInteger(v)) throw configError(field, `must be a whole number, not ${v}`);
  if (exclusive ? v <= min : v < min) throw configError(field, `must be ${exclusive ? 'greater than' : 'at least'} ${min}, not ${v}`);
  if (v > max) throw configError(field, `must be at most ${max}, not ${v}`);
  if (!Number.isFinite(v) && !(infinite && v === Infinity)) throw configError(field, `must be finite, not ${v}`);
  return v;
}

const BREAKER_KEYS = optionKeys('breaker');
const BULKHEAD_KEYS = optionKeys('semaphore');

/** CircuitBreaker options → native breaker config. */
function breakerConfig(o) {
  const c = {};
  const w = o.window;
  if (w !== undefined) {
    if (!isPlainObject(w)) throw configError('window', "must be { kind: 'count', size } or { kind: 'time', buckets, bucketMs }");
    if (w.kind === 'count') {
      only(w, ['kind', 'size'], 'window');
      c.windowKind = 'count';
      c.windowSize = number(w, 'size', 'window.size', { min: 1, integer: true });
      if (c.windowSize === undefined) throw configError('window.size', 'is required for a count window');
    } else if (w.kind === 'time') {
      only(w, ['kind', 'buckets', 'bucketMs'], 'window');
      c.windowKind = 'time';
      c.windowBuckets = number(w, 'buckets', 'window.buckets', { min: 1, integer: true });
      c.windowBucketMs = number(w, 'bucketMs', 'window.bucketMs', { min: 0, exclusive: true });
    } else {
      throw configError('window.kind', `must be 'count' or 'time', not ${JSON.stringify(w.kind)}`);
    }
  }
  // The core's u32: a larger count would saturate to 2^32 − 1 unseen (Python refuses it too).
  c.minimumCalls = number(o, 'minimumCalls', 'minimumCalls', { min: 1, integer: true, max: 2 ** 32 - 1 });
  c.failureRateThreshold = number(o, 'failureRateThreshold', 'failureRateThreshold', { max: 100, nullable: true });
  c.slowCallRateThreshold = number(o, 'slowCallRateThreshold', 'slowCallRateThreshold', { max: 100 });
  c.slowCallDurationMs = number(o, 'slowCallDurationMs', 'slowCallDurationMs', { nullable: true });
  c.consecutiveFailures = number(o, 'consecutiveFailures', 'consecutiveFailures', { min: 1, integer: true, nullable: true });
  c.openDurationMs = number(o, 'openDurationMs', 'openDurationMs', { min: 0, exclusive: true });
  c.openBackoffMultiplier = number(o, 'openBackoffMultiplier', 'openBackoffMultiplier', { min: 1 });
  c.maxOpenDurationMs = number(o, 'maxOpenDurationMs', 'maxOpenDurationMs', { nullable: true });
  c.openJitterFactor = number(o, 'openJitterFactor', 'openJitterFactor', { max: 1 });
  c.halfOpenMaxCalls = number(o, 'halfOpenMaxCalls', 'halfOpenMaxCalls', { min: 1, integer: true });
  c.halfOpenSuccessThreshold = number(o, 'halfOpenSuccessThreshold', 'halfOpenSuccessThreshold', { min: 1, integer: true });
  c.halfOpenMaxWaitMs = number(o, 'halfOpenMaxWaitMs', 'halfOpenMaxWaitMs', { min: 0, exclusive: true, nullable: true });
  openDurationCap(c);
  return c;
}

/**
 * `maxOpenDurationMs` only caps the growth of the open duration
 * (`openBackoffMultiplier` > 1). Left out, it is the core's default (300 000 ms);
 * an open duration above that with no growth takes itself as the cap, and with
 * growth the error says to set the cap.
 */
function openDurationCap(c) {
  const open = c.openDurationMs;
  const cap = constants.defaultMaxOpenDurationMs;
  if (open === undefined || c.maxOpenDurationMs !== undefined || !(open > cap)) return;
  if (c.openBackoffMultiplier === undefined || c.openBackoffMultiplier === 1) {
    c.maxOpenDurationMs = open;
    return;
  }
  throw configError('maxOpenDurationMs', `openDurationMs ${open} is above the default maxOpenDurationMs ${cap}, `
    + `which caps its growth by openBackoffMultiplier ${c.openBackoffMultiplier}: set maxOpenDurationMs `
    + '(at least openDurationMs, or null for no cap)');
}

const PRIORITIES = ['critical', 'high', 'normal', 'low'];

/** Bulkhead options → native semaphore config. */
function semaphoreConfig(o) {
  const c = {
    maxConcurrent: number(o, 'maxConcurrent', 'maxConcurrent', { min: 1, integer: true, max: 2 ** 20 - 1 }),
    maxQueue: number(o, 'maxQueue', 'maxQueue', { integer: true, max: 32768 }),
  };
  if (o.shares !== undefined) {
    if (!isPlainObject(o.shares)) throw configError('shares', 'must be { critical, high, normal, low } percentages');
    only(o.shares, PRIORITIES, 'shares');
    c.shareCritical = number(o.shares, 'critical', 'shares.critical', { max: 100 });
    c.shareHigh = number(o.shares, 'high', 'shares.high', { max: 100 });
    c.shareNormal = number(o.shares, 'normal', 'shares.normal', { max: 100 });
    c.shareLow = number(o.shares, 'low', 'shares.low', { max: 100 });
  }
  return c;
}

const JITTERS = ['none', 'full', 'equal', 'decorrelated', 'proportional'];

/** `backoff` options → native backoff config. */
function backoffConfig(b) {
  if (b === undefined) return undefined;
  if (!isPlainObject(b)) throw configError('backoff', 'must be { baseMs, multiplier, maxMs, jitter, jitterFactor }');
  only(b, ['baseMs', 'multiplier', 'maxMs', 'jitter', 'jitterFactor'], 'backoff');
  if (b.jitter !== undefined && !JITTERS.includes(b.jitter)) {
    throw configError('backoff.jitter', `must be one of ${JITTERS.join(', ')}, not ${JSON.stringify(b.jitter)}`);
  }
  if (b.jitterFactor !== undefined && b.jitter !== 'proportional') {
    throw configError('backoff.jitterFactor', "is for jitter: 'proportional' only");
  }
  return {
    baseMs: number(b, 'baseMs', 'backoff.baseMs', { min: 0, exclusive: true }),
    multiplier: number(b, 'multiplier', 'backoff.multiplier', { min: 1 }),
    maxMs: number(b, 'maxMs', 'backoff.maxMs', { min: 0, exclusive: true }),
    jitter: b.jitter,
    jitterFactor: number(b, 'jitterFactor', 'backoff.jitterFactor', { max: 1 }),
  };
}

/** RetryBudget options → native config. */
function budgetConfig(o) {
  only(o, optionKeys('retry_budget'), 'RetryBudget');
  return {
    ttlMs: number(o, 'ttlMs', 'ttlMs', { min: 0, exclusive: true }),
    minRetriesPerSec: number(o, 'minRetriesPerSec', 'minRetriesPerSec', { integer: true, max: 2 ** 32 - 1 }),
    percentCanRetry: number(o, 'percentCanRetry', 'percentCanRetry', { max: 1000 }),
  };
}

/** RetryThrottle options → native config. */
function throttleConfig(o) {
  only(o, optionKeys('retry_throttle'), 'RetryThrottle');
  return {
    maxTokens: number(o, 'maxTokens', 'maxTokens', { min: 0, exclusive: true, max: 1000 }),
    tokenRatio: number(o, 'tokenRatio', 'tokenRatio', { min: 0, exclusive: true }),
  };
}

/** Health options → native config. */
function healthConfig(o) {
  only(o, optionKeys('health'), 'Health');
  return {
    buckets: number(o, 'buckets', 'buckets', { min: 1, integer: true, max: 60 }),
    bucketMs: number(o, 'bucketMs', 'bucketMs', { min: 0, exclusive: true }),
    degradedErrorRate: number(o, 'degradedErrorRate', 'degradedErrorRate', { max: 100 }),
    unhealthyErrorRate: number(o, 'unhealthyErrorRate', 'unhealthyErrorRate', { max: 100 }),
    degradedP99Ms: number(o, 'degradedP99Ms', 'degradedP99Ms'),
    unhealthyP99Ms: number(o, 'unhealthyP99Ms', 'unhealthyP99Ms'),
  };
}

function optionalFunction(o, key) {
  const f = o[key];
  if (f === undefined || f === null) return undefined;
  if (typeof f !== 'function') throw configError(key, `must be a function, not ${typeof f}`);
  return f;
}

function name(o, fallback) {
  const n = o.name;
  if (n === undefined) return fallback;
  if (typeof n !== 'string' || n === '') throw configError('name', 'must be a non-empty string');
  return n;
}

module.exports = {
  isPlainObject, only, number, argument, clockMs, ATTEMPT, optionalFunction, name,
  breakerConfig, semaphoreConfig, backoffConfig, budgetConfig, throttleConfig, healthConfig,
  BREAKER_KEYS, BULKHEAD_KEYS, PRIORITIES, JITTERS,
};
