'use strict';
// Chaos (DESIGN §11; the seed documents' chaos middleware, Polly's Simmy): named
// rules that inject latency, failures or hangs into calls of a dependency, for
// game days on the user's own service. A Chaos policy sits innermost, next to
// the call (DESIGN §9), so the timeouts, retries and breakers around it see an
// injected fault exactly as a dependency fault.
//
// Per call, while enabled: with probability `probability` the rule applies; a
// hang then never settles until the call's signal aborts (a timeout outside, a
// deadline, the caller); otherwise `latencyMs` is waited (cut short the same
// way), then with probability `failureRate` the call rejects with ECHAOS
// instead of running. Draws: one for `probability` (skipped when it is 1), one
// for `failureRate` (skipped when it is 0 or 1), from a SplitMix64 seeded by
// `seed` or OS entropy.
//
// One registry per process maps a name to its policy, so `chaos('inventory')`,
// `chaos.forDependency('inventory')` and a rules file (lib/chaos_file.js) all
// reach the same one.

const { SeawallError, codes, configError, abortedError } = require('./errors');
const { isPlainObject, only, number } = require('./config');
const { callOptions } = require('./call');
const { listen } = require('./abort');
const { SafeEmitter, disposable } = require('./hooks');
const { LongTimer } = require('./timers');
const { SplitMix64, seedOf } = require('./splitmix');

const RULE_KEYS = ['enabled', 'probability', 'latencyMs', 'failureRate', 'hang'];
const OFF = Object.freeze({ enabled: false, probability: 1, latencyMs: 0, failureRate: 0, hang: false });

function flag(o, key, where) {
  const v = o[key];
  if (v === undefined) return false;
  if (typeof v !== 'boolean') throw configError(`${where}.${key}`, `must be true or false, not ${JSON.stringify(v)}`);
  return v;
}

function fraction(o, key, where, fallback) {
  const v = number(o, key, `${where}.${key}`, { max: 1 });
  return v === undefined ? fallback : v;
}

/**
 * Rules as given (`{ enabled, probability, latencyMs, failureRate, hang }`,
 * every field optional) → the complete frozen rules; throws EINVALIDCONFIG
 * naming `where.field`.
 */
function checkRules(rules, where = 'rules') {
  if (rules === undefined) return OFF;
  if (!isPlainObject(rules)) throw configError(where, `must be an object ({ ${RULE_KEYS.join(', ')} })`);
  only(rules, RULE_KEYS, where);
  const latencyMs = number(rules, 'latencyMs', `${where}.latencyMs`);
  return Object.freeze({
    enabled: flag(rules, 'enabled', where),
    probability: fraction(rules, 'probability', where, 1),
    latencyMs: latencyMs === undefined ? 0 : latencyMs,
    failureRate: fraction(rules, 'failureRate', where, 0),
    hang: flag(rules, 'hang', where),
  });
}

function chaosError(name, rules) {
  return new SeawallError(codes.ECHAOS, `chaos '${name}' injected a failure (failureRate ${rules.failureRate})`, { chaos: name });
}

/** Wait `ms`, or reject with EABORTED at once when `signal` aborts. */
function pause(ms, signal) {
  if (signal !== undefined && signal.aborted) return Promise.reject(abortedError(signal));
  return new Promise((resolve, reject) => {
    let off;
    const timer = new LongTimer(() => {
      off();
      resolve();
    }, ms);
    off = listen(signal, () => {
      timer.clear();
      reject(abortedError(signal));
    });
  });
}

/** Never settle; reject with EABORTED when `signal` aborts (never, without one). */
function hang(signal) {
  if (signal !== undefined && signal.aborted) return Promise.reject(abortedError(signal));
  return new Promise((resolve, reject) => {
    listen(signal, () => reject(abortedError(signal)));
  });
}

class Chaos extends SafeEmitter {
  constructor(name, rules, options) {
    super();
    this.name = name;
    this._rules = checkRules(rules);
    this._rng = new SplitMix64(seedOf(options.seed));
    this._counts = { calls: 0, passed: 0, latency: 0, failures: 0, hangs: 0 };
  }

  _owner() {
    return `chaos '${this.name}'`;
  }

  /** The rules in force: `{ enabled, probability, latencyMs, failureRate, hang }` (frozen). */
  get rules() {
    return this._rules;
  }

  /**
   * Replace the rules (fields left out take their defaults: off, probability 1,
   * no latency, no failures, no hang); calls already waiting keep theirs.
   * Throws EINVALIDCONFIG naming the field, and then changes nothing.
   */
  set(rules) {
    this._rules = checkRules(rules);
    return this;
  }

  /** Restart the draws from `seed` (a whole number or a bigint). */
  reseed(seed) {
    if (seed === undefined) throw configError('seed', 'is required');
    this._rng = new SplitMix64(seedOf(seed));
    return this;
  }

  /** Listen to each injected fault (`{ fault: 'latency' | 'failure' | 'hang', latencyMs }`); returns a Disposable. */
  onInject(listener) {
    return disposable(this, 'inject', listener);
  }

  _inject(fault, latencyMs) {
    if (this.listenerCount('inject') !== 0) this.emit('inject', { fault, latencyMs });
  }

  /**
   * Run `fn({ signal, deadline })`, with the faults the rules draw injected
   * first. Rejects with ECHAOS for an injected failure, EABORTED when the
   * call's signal aborts an injected latency or hang, or as `fn` does.
   */
  async execute(fn, options) {
    const call = callOptions(fn, options);
    const ctx = { signal: call.signal, deadline: call.deadline };
    const r = this._rules;
    const c = this._counts;
    c.calls += 1;
    if (!r.enabled || (r.probability < 1 && !(this._rng.nextUnit() < r.probability))) {
      c.passed += 1;
      return fn(ctx);
    }
    if (r.hang) {
      c.hangs += 1;
      this._inject('hang', undefined);
      return hang(call.signal);
    }
    if (r.latencyMs > 0) {
      c.latency += 1;
      this._inject('latency', r.latencyMs);
      await pause(r.latencyMs, call.signal);
    }
    if (r.failureRate >= 1 || (r.failureRate > 0 && this._rng.nextUnit() < r.failureRate)) {
      c.failures += 1;
      this._inject('failure', undefined);
      throw chaosError(this.name, r);
    }
    if (r.latencyMs <= 0) c.passed += 1;
    return fn(ctx);
  }

  /** `fn` with the same parameters, through this policy (the seed's `forDependency(name)(fn)`). */
  wrap(fn) {
    if (typeof fn !== 'function') throw configError('fn', 'must be a function');
    const self = this;
    return function chaosWrapped(...args) {
      return self.execute(() => fn.apply(this, args));
    };
  }

  /**
   * `{ name, enabled, calls, passed, latency, failures, hangs }`: calls made,
   * calls that reached `fn` with nothing injected, and the injected latencies,
   * failures and hangs (a delayed call that then fails counts in both).
   */
  metrics() {
    const c = this._counts;
    return { name: this.name, enabled: this._rules.enabled, calls: c.calls, passed: c.passed, latency: c.latency, failures: c.failures, hangs: c.hangs };
  }
}

const registry = new Map();

/**
 * The chaos policy `name` of this process, made on first use (rules off unless
 * given). With `rules`, they replace the policy's rules; with `options.seed`,
 * its draws restart from that seed. Throws EINVALIDCONFIG naming the field.
 */
function chaos(name, rules, options = {}) {
  if (typeof name !== 'string' || name === '') throw configError('name', 'must be a non-empty string');
  if (!isPlainObject(options)) throw configError('options', 'must be an object ({ seed })');
  only(options, ['seed'], 'options');
  let policy = registry.get(name);
  if (policy === undefined) {
    policy = new Chaos(name, rules, options);
    registry.set(name, policy);
    return policy;
  }
  const checked = rules === undefined ? undefined : checkRules(rules);
  if (options.seed !== undefined) policy.reseed(options.seed);
  if (checked !== undefined) policy._rules = checked;
  return policy;
}

/** The seed documents' form: `chaos.forDependency('inventory')(fn)` is `fn` through chaos 'inventory'. */
chaos.forDependency = function forDependency(name) {
  const policy = chaos(name);
  return (fn) => policy.wrap(fn);
};

/** The policy `name`, or undefined when none was made. */
chaos.get = (name) => registry.get(name);

/** Every chaos policy of this process (e.g. for registerMetrics). */
chaos.all = () => [...registry.values()];

/** Turn every chaos policy of this process off (the game day is over). */
chaos.disableAll = () => {
  for (const p of registry.values()) p.set(undefined);
};

module.exports = { Chaos, chaos, checkRules, RULE_KEYS };
