'use strict';
// The `backoff` option of a retry (DESIGN §4): the core's exponential family
// (none / full / equal / decorrelated / proportional jitter) is computed
// natively; zero, linear, a list of delays and a user's function are computed
// here. Either way one native decision per failed attempt applies the attempts,
// the Retry-After, the deadline, the throttle and the budget: for a wait of its
// own, this module hands the core a backoff of one nanosecond and its delay as
// the lower bound (the core raises its delay to it, as to a Retry-After).

const { configError } = require('./errors');
const { isPlainObject, only, number, backoffConfig } = require('./config');

/** The native backoff behind a wait computed here: 1 ns, never more. */
const FLOOR_MS = 1e-6;
const FLOOR = Object.freeze({ baseMs: FLOOR_MS, multiplier: 1, maxMs: FLOOR_MS, jitter: 'none' });
/** The core's default cap (DESIGN §4: 10 s), for linear waits. */
const DEFAULT_MAX_MS = 10_000;
/** Jitters a wait of its own may take (decorrelated jitter is a growth of its own). */
const OWN_JITTERS = ['none', 'full', 'equal', 'proportional'];
const DEFAULT_JITTER_FACTOR = 0.2;

const KINDS = ['exponential', 'constant', 'linear', 'list'];

/**
 * `(ms) → ms` of jitter `jitter` for a wait computed here, from `b`
 * (`jitter`, `jitterFactor`), capped at `maxMs`: full U[0, d], equal
 * U[d/2, d], proportional min(cap, d · U[1−f, 1+f]).
 */
function ownJitter(b, maxMs) {
  const jitter = b.jitter === undefined ? 'none' : b.jitter;
  if (!OWN_JITTERS.includes(jitter)) {
    throw configError('backoff.jitter', `must be one of ${OWN_JITTERS.join(', ')} for this kind of wait, not ${JSON.stringify(b.jitter)}`);
  }
  if (b.jitterFactor !== undefined && jitter !== 'proportional') throw configError('backoff.jitterFactor', "is for jitter: 'proportional' only");
  const f = jitter === 'proportional' ? number(b, 'jitterFactor', 'backoff.jitterFactor', { max: 1 }) : undefined;
  const factor = f === undefined ? DEFAULT_JITTER_FACTOR : f;
  switch (jitter) {
    case 'full': return (d) => Math.random() * d;
    case 'equal': return (d) => d / 2 + Math.random() * (d / 2);
    case 'proportional': return (d) => Math.min(maxMs, d * (1 - factor + 2 * factor * Math.random()));
    default: return (d) => d;
  }
}

/** A wait computed here: `base(attempt, error, result)` un-jittered, `wait` jittered. */
function own(base, jitter) {
  return { native: FLOOR, base, wait: (attempt, error, result) => jitter(base(attempt, error, result)) };
}

function delays(list, field) {
  if (list.length === 0) throw configError(field, 'must hold at least one delay');
  return list.map((d, i) => {
    if (typeof d !== 'number' || !(d >= 0) || !Number.isFinite(d)) {
      throw configError(`${field}[${i}]`, `must be a finite number of ms ≥ 0, not ${String(d)}`);
    }
    return d;
  });
}

/**
 * What the `backoff` option asks for: `{ native, base, wait }`, `native` the
 * core's backoff config (undefined: its default), `wait` (undefined when the
 * core computes the delay) `(attempt, error, result) → ms` and `base` its
 * un-jittered value. Forms: `{ baseMs, multiplier, maxMs, jitter }`
 * (exponential; `baseMs: 0` waits zero), `{ kind: 'constant', delayMs }`,
 * `{ kind: 'linear', baseMs, stepMs, maxMs }`, `{ kind: 'list', delaysMs }` or
 * an array of delays (the last one repeats), or `(attempt, error) => ms`.
 */
function backoffPlan(b) {
  if (b === undefined) return { native: undefined, base: undefined, wait: undefined };
  if (typeof b === 'function') {
    const user = b;
    return own((attempt, error, result) => {
      const d = user(attempt, error, result);
      if (typeof d !== 'number' || !(d >= 0)) {
        throw configError('backoff', `the backoff function must return a number of ms ≥ 0, not ${String(d)} (attempt ${attempt})`);
      }
      return d;
    }, (d) => d);
  }
  if (Array.isArray(b)) return backoffPlan({ kind: 'list', delaysMs: b });
  if (!isPlainObject(b)) throw configError('backoff', 'must be an object, an array of delays (ms) or a function (attempt, error) => ms');
  const kind = b.kind === undefined ? 'exponential' : b.kind;
  if (!KINDS.includes(kind)) throw configError('backoff.kind', `must be one of ${KINDS.join(', ')}, not ${JSON.stringify(b.kind)}`);
  const rest = { ...b };
  delete rest.kind;
  switch (kind) {
    case 'constant': {
      only(rest, ['delayMs', 'jitter', 'jitterFactor'], 'backoff');
      const d = number(rest, 'delayMs', 'backoff.delayMs');
      if (d === undefined) throw configError('backoff.delayMs', 'is required for a constant wait');
      if (d === 0) return own(() => 0, ownJitter(rest, 0));
      const { delayMs, ...jitter } = rest;
      return { native: backoffConfig({ baseMs: delayMs, multiplier: 1, maxMs: delayMs, jitter: 'none', ...jitter }), base: undefined, wait: undefined };
    }
    case 'linear': {
      only(rest, ['baseMs', 'stepMs', 'maxMs', 'jitter', 'jitterFactor'], 'backoff');
      const base = number(rest, 'baseMs', 'backoff.baseMs');
      const step = number(rest, 'stepMs', 'backoff.stepMs');
      const max = number(rest, 'maxMs', 'backoff.maxMs', { infinite: true });
      const cap = max === undefined ? DEFAULT_MAX_MS : max;
      const b0 = base === undefined ? 0 : base;
      const s = step === undefined ? b0 : step;
      return own((attempt) => Math.min(cap, b0 + s * (attempt - 1)), ownJitter(rest, cap));
    }
    case 'list': {
      only(rest, ['delaysMs', 'jitter', 'jitterFactor'], 'backoff');
      if (!Array.isArray(rest.delaysMs)) throw configError('backoff.delaysMs', 'must be an array of delays (ms)');
      const list = delays(rest.delaysMs, 'backoff.delaysMs');
      return own((attempt) => list[Math.min(attempt, list.length) - 1], ownJitter(rest, Infinity));
    }
    default: {
      if (rest.baseMs === 0) {
        only(rest, ['baseMs', 'multiplier', 'maxMs', 'jitter', 'jitterFactor'], 'backoff');
        backoffConfig({ ...rest, baseMs: undefined, maxMs: undefined }); // the other fields still checked
        return own(() => 0, () => 0);
      }
      return { native: backoffConfig(rest), base: undefined, wait: undefined };
    }
  }
}

/** A delay of the core for a wait computed here: its 1 ns floor is no wait. */
function ownDelay(d) {
  return d <= FLOOR_MS ? 0 : d;
}

module.exports = { backoffPlan, ownDelay };
