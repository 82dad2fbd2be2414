'use strict';
// Rate limiter (DESIGN §10): the generic cell rate algorithm (GCRA, the ATM
// Forum's; as in Rust's governor) on one atomic word of the native core, in
// this process or shared by every process of the host, one limit or one per
// key. `rate` cells per `perMs`: one cell comes back every perMs / rate ms (the
// emission interval, rounded down to a whole nanosecond); a rested limiter
// gives up to `burst` at once. A take is all or none, and a refused take
// changes nothing and says exactly when the same request conforms. Waiting is a
// timer between takes: a pending acquire holds nothing, so aborting it leaves
// nothing behind.

const { binding, fast } = require('./native');
const { SeawallError, codes, configError, abortedError, fromNative, sharedOpenError } = require('./errors');
const { only, number, clockMs, isPlainObject, name: nameOption } = require('./config');
const { checkSignal, listen } = require('./abort');
const { callOptions } = require('./call');
const { LongTimer } = require('./timers');
const { SafeEmitter, disposable } = require('./hooks');

const { rateLimiterTake } = fast;

const OPTION_KEYS = ['rate', 'perMs', 'burst', 'keyed', 'shared', 'name', 'maxWaitMs'];
const NO_SIGNAL = Object.freeze({ signal: undefined });

/** An error of a take from the native layer: its `code` and `field` are set there. */
function takeError(e) {
  return fromNative(e);
}

function checkKey(key) {
  if (typeof key === 'string') return key;
  if (typeof key === 'number' && Number.isSafeInteger(key)) return key;
  throw configError('key', 'must be a string or a safe integer');
}

function cellsOf(n, burst) {
  if (n === undefined) return 1;
  if (typeof n !== 'number' || !Number.isInteger(n)) throw configError('n', 'must be a whole number of cells');
  // Said here: the native side reads a negative count as 0 ("must not be zero").
  if (n < 0) throw configError('n', `must be between 1 and ${burst}, not ${n}`);
  return n;
}

/**
 * A GCRA rate limiter: `rate` calls per `perMs` (default 1000), bursts of up to
 * `burst` (default `rate`, as governor's quotas). With `keyed: true` every key
 * (a string or a safe integer, e.g. a client id) gets that limit in a fixed
 * table of 4096 slots (keys sharing a slot share its cells: stricter, never
 * looser). With `shared: name`, one limiter for every process of the host
 * (`/dev/shm/seawall-rate-limiter-<name>`; keyed
 * `seawall-keyed-rate-limiter-<name>`; every process must give the same rate,
 * perMs and burst: ESHAREDMISMATCH otherwise). `maxWaitMs` (default Infinity)
 * bounds how long `execute` waits for a cell before it rejects with
 * ERATELIMITED; 0 rejects at once, so a Retry around it can wait out
 * `retryAfterMs` within its deadline.
 */
class RateLimiter extends SafeEmitter {
  constructor(options) {
    super();
    if (!isPlainObject(options)) throw configError('options', 'must be an object with rate');
    only(options, OPTION_KEYS);
    const rate = number(options, 'rate', 'rate', { min: 1, integer: true });
    if (rate === undefined) throw configError('rate', 'is required');
    const perMs = number(options, 'perMs', 'perMs', { min: 0, exclusive: true });
    let burst = number(options, 'burst', 'burst', { min: 1, integer: true, max: 2 ** 32 - 1 });
    if (burst === undefined) burst = Math.min(rate, 2 ** 32 - 1);
    const maxWaitMs = number(options, 'maxWaitMs', 'maxWaitMs', { min: 0, infinite: true });
    const keyed = options.keyed === undefined ? false : options.keyed;
    if (typeof keyed !== 'boolean') throw configError('keyed', 'must be a boolean');
    const shared = options.shared;
    if (shared !== undefined && (typeof shared !== 'string' || shared === '')) {
      throw configError('shared', 'must be a non-empty region name');
    }
    // Checked before the native limiter (maybe a region of /dev/shm) is made.
    const name = nameOption(options, shared);
    try {
      this._token = binding.rateLimiterNew({ rate, perMs: perMs === undefined ? 1000 : perMs, burst }, keyed, shared);
    } catch (e) {
      throw sharedOpenError(e, 'rate limiter', shared, 'rate, perMs and burst');
    }
    this._h = binding.handleOf(this._token);
    this._keyed = keyed;
    this._burst = burst;
    this._shared = shared;
    this.maxWaitMs = maxWaitMs === undefined ? Infinity : maxWaitMs;
    this.name = name;
  }

  /** Remove the shared rate limiter `name` (`{ keyed: true }`: the keyed one) from /dev/shm. */
  static unlinkShared(name, options) {
    const keyed = options !== undefined && options.keyed === true;
    try {
      binding.rateLimiterUnlinkShared(name, keyed);
    } catch (e) {
      throw fromNative(e);
    }
  }

  get keyed() {
    return this._keyed;
  }

  get isShared() {
    return this._shared !== undefined;
  }

  /**
   * Take `n` cells (default 1) now, or at `nowMs` of your monotonic clock, for
   * `key` when keyed: 0 when taken, else the ms until the same request would
   * conform (nothing taken; Infinity when it never could). `n` outside
   * 1..burst throws EINVALIDCONFIG (no wait would admit it).
   */
  take(n, options) {
    const cells = cellsOf(n, this._burst);
    let r;
    try {
      if (options === undefined && !this._keyed) {
        r = rateLimiterTake(this._h, cells);
      } else {
        const o = options === undefined ? {} : options;
        const nowMs = clockMs(o.nowMs);
        if (this._keyed) {
          if (o.key === undefined) throw configError('key', 'is required by a keyed rate limiter (or use forKey(key))');
          r = binding.rateLimiterTakeKey(this._h, checkKey(o.key), cells, nowMs);
        } else {
          if (o.key !== undefined) throw configError('key', 'needs a keyed rate limiter (keyed: true)');
          r = nowMs === undefined ? rateLimiterTake(this._h, cells) : binding.rateLimiterTakeAt(this._h, cells, nowMs);
        }
      }
    } catch (e) {
      throw takeError(e);
    }
    return r;
  }

  /** Take `n` cells now if the rate allows: true (taken) or false (nothing taken). */
  tryAcquire(n, options) {
    return this.take(n, options) === 0;
  }

  /**
   * Wait until `n` cells are taken. Resolves when admitted; rejects with
   * ERATELIMITED (`retryAfterMs`) as soon as the next chance lies past
   * `timeoutMs` (default: wait as long as it takes), with EABORTED when
   * `signal` aborts (the timer and the listener are removed: nothing is left
   * behind, nothing was taken).
   */
  acquire(n, options) {
    const o = options === undefined ? {} : options;
    if (!isPlainObject(o)) return Promise.reject(configError('options', 'must be an object'));
    let signal;
    let limit;
    try {
      only(o, ['signal', 'timeoutMs', 'key'], 'acquire options');
      signal = checkSignal(o.signal, configError);
      const t = number(o, 'timeoutMs', 'timeoutMs', { min: 0, infinite: true });
      limit = t === undefined ? Infinity : t;
      if (this._keyed) checkKey(o.key);
      cellsOf(n, this._burst);
    } catch (e) {
      return Promise.reject(e);
    }
    return this._wait(n, o.key, signal, limit, performance.now());
  }

  /**
   * Take, or wait and take again, until admitted within `limit` ms of
   * `start`; with `firstMs`, wait that long before the first take.
   */
  _wait(n, key, signal, limit, start, firstMs) {
    const takeOptions = key === undefined ? undefined : { key };
    return new Promise((resolve, reject) => {
      let timer;
      let unlisten = () => {};
      const settle = (f, v) => {
        if (timer !== undefined) timer.clear();
        unlisten();
        f(v);
      };
      const attempt = () => {
        timer = undefined;
        if (signal !== undefined && signal.aborted) return settle(reject, abortedError(signal));
        let wait;
        try {
          wait = this.take(n, takeOptions);
        } catch (e) {
          return settle(reject, e);
        }
        if (wait === 0) return settle(resolve, undefined);
        // A request that never conforms (past the end of the clock) is refused
        // at once, whatever the limit: no wait would admit it.
        if (wait === Infinity || performance.now() - start + wait > limit) return settle(reject, this._refused(wait, key));
        timer = new LongTimer(attempt, wait);
        return undefined;
      };
      if (signal !== undefined) unlisten = listen(signal, () => settle(reject, abortedError(signal)));
      if (firstMs === undefined) attempt();
      else timer = new LongTimer(attempt, firstMs);
    });
  }

  _refused(retryAfterMs, key) {
    const who = this.name === undefined ? 'rate limiter' : `rate limiter '${this.name}'`;
    const forKey = key === undefined ? '' : ` (key ${JSON.stringify(key)})`;
    const error = new SeawallError(codes.ERATELIMITED, `${who}${forKey} is over its rate; retry after ${retryAfterMs} ms`, {
      limiter: this.name, retryAfterMs, key,
    });
    // The event's record is built only for a listener: a refusal is the hot path under load.
    if (this.listenerCount('reject') !== 0) this.emit('reject', { retryAfterMs, key, error });
    return error;
  }

  _owner() {
    return this.name === undefined ? 'rate limiter' : `rate limiter '${this.name}'`;
  }

  /**
   * Listen to each ERATELIMITED of `execute` and `acquire` (`{ retryAfterMs,
   * key, error }`; `take` and `tryAcquire` refuse by their value and emit
   * nothing); returns a Disposable.
   */
  onReject(listener) {
    return disposable(this, 'reject', listener);
  }

  /**
   * Run `fn({ signal, deadline })` once one cell is taken — a policy for
   * `wrap` / `pipeline` (between retry and timeout: every attempt spends a
   * cell). Waits up to `maxWaitMs`, never past `options.deadline`; else
   * rejects with ERATELIMITED and `retryAfterMs`, which a Retry outside
   * waits out when its deadline allows, and a CircuitBreaker never counts as
   * a failure. `options.key` picks the key of a keyed limiter.
   */
  async execute(fn, options) {
    const { signal, deadline, key } = callOptions(fn, options);
    if (signal !== undefined && signal.aborted) throw abortedError(signal);
    const limit = deadline === undefined ? this.maxWaitMs : Math.min(this.maxWaitMs, deadline.remainingMs());
    const start = performance.now();
    const wait = this.take(1, key === undefined ? undefined : { key });
    if (wait !== 0) {
      if (wait === Infinity || wait > limit) throw this._refused(wait, key);
      await this._wait(1, key, signal, limit, start, wait);
    }
    return fn(signal === undefined && deadline === undefined ? NO_SIGNAL : { signal, deadline });
  }

  /** Like `execute`, opossum / cockatiel style: `fn` with the same parameters. */
  wrap(fn, options) {
    if (typeof fn !== 'function') throw configError('fn', 'must be a function');
    const self = this;
    return function wrapped(...args) {
      return self.execute(() => fn.apply(this, args), options);
    };
  }

  /** This keyed limiter's limit for `key`, with the same methods. */
  forKey(key) {
    if (!this._keyed) throw configError('key', 'forKey needs a keyed rate limiter (keyed: true)');
    return new KeyedRateLimit(this, checkKey(key));
  }

  /**
   * `{ rate, perMs, burst, keyed, shared, created, admitted, rejected, cells }`:
   * the configuration, the takes admitted and refused and the cells the
   * admitted ones spent since the limiter was made (of every process for a
   * shared limiter: its region holds them).
   */
  metrics() {
    return { ...binding.rateLimiterInfo(this._h), ...binding.rateLimiterTotals(this._h) };
  }
}

/** One key's limit in a keyed RateLimiter (`limiter.forKey(key)`). */
class KeyedRateLimit {
  constructor(limiter, key) {
    this.limiter = limiter;
    this.key = key;
  }

  take(n, options) {
    return this.limiter.take(n, { ...options, key: this.key });
  }

  tryAcquire(n, options) {
    return this.take(n, options) === 0;
  }

  acquire(n, options) {
    return this.limiter.acquire(n, { ...options, key: this.key });
  }

  async execute(fn, options) {
    const { signal, deadline } = callOptions(fn, options);
    return this.limiter.execute(fn, { signal, deadline, key: this.key });
  }

  wrap(fn, options) {
    return this.limiter.wrap(fn, { ...options, key: this.key });
  }
}

module.exports = { RateLimiter, KeyedRateLimit };
