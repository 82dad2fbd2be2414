'use strict';
// Bulkhead (DESIGN §5): at most `maxConcurrent` calls at once, up to `maxQueue`
// waiting in FIFO order, per-priority shares for load shedding, on the core's
// ticket / poll / cancel / release hand-off.
//
// Wake-ups: a release hands its permit straight to the oldest waiter inside the
// core, and returns that waiter's ticket state in the same call, so the waiter
// is resolved at once: no polling loop and no timer. A waiter that times out or
// whose signal aborts cancels its ticket at once (the core passes a permit that
// reached it in that instant on to the next waiter), so it never blocks the
// waiters behind it (cockatiel #112).

const { binding, fast } = require('./native');
const { SeawallError, codes, configError, abortedError, fromNative } = require('./errors');
const { only, number, semaphoreConfig, isPlainObject, name: nameOption, PRIORITIES } = require('./config');
const { checkSignal, listen, noop } = require('./abort');

const { semaphoreAcquire, semaphoreRelease, semaphorePoll, semaphoreCancel } = fast;

const PRIORITY = { critical: 0, high: 1, normal: 2, low: 3 };
const ADMITTED = -1;
const GRANTED = 1;
const PASSED_ON = 1;
const NO_SIGNAL = Object.freeze({ signal: undefined });

let unnamed = 0;

function rejection(name, code, priority) {
  const x = -code - 2;
  const reason = x % 2 === 0 ? 'shed' : 'full';
  const rest = (x - (x % 2)) / 2;
  const queued = rest % 65536;
  const active = (rest - queued) / 65536;
  const what = reason === 'shed' ? `sheds ${priority} priority calls` : 'is full';
  return new SeawallError(codes.EBULKHEADFULL, `bulkhead '${name}' ${what} (${active} active, ${queued} queued)`, {
    bulkhead: name, reason, active, queued, priority,
  });
}

class Bulkhead {
  /**
   * @param {object} options `maxConcurrent` (default 10), `maxQueue` (default 0),
   *   `queueTimeoutMs` (default: wait as long as it takes), `shares` (percent of
   *   `maxConcurrent` per priority: critical / high / normal / low, default 100
   *   each), `name`.
   */
  constructor(options = {}) {
    if (!isPlainObject(options)) throw configError('options', 'must be an object');
    only(options, ['maxConcurrent', 'maxQueue', 'queueTimeoutMs', 'shares', 'name', 'shared']);
    if (options.shared !== undefined) {
      throw new SeawallError(
        codes.ENOTSUPPORTED,
        'Bulkhead { shared } needs the shared-region API for semaphores, which this build of seawall does not have yet',
        { field: 'shared' },
      );
    }
    const cfg = semaphoreConfig(options);
    this._queueTimeoutMs = number(options, 'queueTimeoutMs', 'queueTimeoutMs', { min: 0, exclusive: true });
    try {
      this._token = binding.semaphoreNew(cfg);
    } catch (e) {
      throw fromNative(e);
    }
    this._h = binding.handleOf(this._token);
    this.name = nameOption(options, `bulkhead-${++unnamed}`);
    this.maxConcurrent = cfg.maxConcurrent === undefined ? 10 : cfg.maxConcurrent;
    this.maxQueue = cfg.maxQueue === undefined ? 0 : cfg.maxQueue;
    this._waiters = [];
    this._head = 0;
    this._counts = { admitted: 0, shed: 0, full: 0, queueTimeout: 0, aborted: 0 };
  }

  /**
   * Run `fn({ signal })` once a permit is held: at once if one is free, after
   * waiting in the queue otherwise. Rejects with EBULKHEADFULL (`reason` shed,
   * full or queueTimeout, with `active` and `queued`) or EABORTED (the caller's
   * `signal` aborted the wait). `priority`: critical, high, normal (default), low.
   */
  async execute(fn, options) {
    if (typeof fn !== 'function') throw configError('fn', 'must be a function');
    let signal;
    let priority = 2;
    let priorityName = 'normal';
    if (options !== undefined) {
      signal = checkSignal(options.signal, configError);
      if (options.priority !== undefined) {
        priority = PRIORITY[options.priority];
        if (priority === undefined) throw configError('priority', `must be one of ${PRIORITIES.join(', ')}`);
        priorityName = options.priority;
      }
    }
    if (signal !== undefined && signal.aborted) throw abortedError(signal);
    const r = semaphoreAcquire(this._h, priority, this.maxQueue > 0 ? 1 : 0);
    if (r !== ADMITTED) {
      if (r >= 0) await this._wait(r, signal);
      else this._refuse(r, priorityName);
    }
    this._counts.admitted += 1;
    try {
      return await fn(signal === undefined ? NO_SIGNAL : { signal });
    } finally {
      this._release();
    }
  }

  /** Like `execute`, opossum / cockatiel style: `fn` with the same parameters. */
  wrap(fn, options) {
    if (typeof fn !== 'function') throw configError('fn', 'must be a function');
    const self = this;
    return function wrapped(...args) {
      return self.execute(() => fn.apply(this, args), options);
    };
  }

  _refuse(code, priority) {
    const err = rejection(this.name, code, priority);
    this._counts[err.reason] += 1;
    throw err;
  }

  _wait(ticket, signal) {
    return new Promise((resolve, reject) => {
      const w = { ticket, resolve, reject, timer: undefined, off: noop, done: false };
      if (this._queueTimeoutMs !== undefined) {
        const ms = this._queueTimeoutMs;
        w.timer = setTimeout(() => {
          this._counts.queueTimeout += 1;
          const { active, queued } = binding.semaphoreSnapshot(this._h);
          this._leave(w, new SeawallError(codes.EBULKHEADFULL, `bulkhead '${this.name}': no permit within ${ms} ms`, {
            bulkhead: this.name, reason: 'queueTimeout', active, queued,
          }));
        }, ms);
      }
      if (signal !== undefined) {
        w.off = listen(signal, () => {
          this._counts.aborted += 1;
          this._leave(w, abortedError(signal));
        });
      }
      this._waiters.push(w);
    });
  }

  /** The oldest waiter still waiting, or undefined. */
  _peek() {
    const q = this._waiters;
    while (this._head < q.length && q[this._head].done) this._head += 1;
    if (this._head === q.length) {
      q.length = 0;
      this._head = 0;
      return undefined;
    }
    if (this._head > 1024 && this._head * 2 > q.length) {
      q.splice(0, this._head);
      this._head = 0;
    }
    return q[this._head];
  }

  _grant(w) {
    w.done = true;
    if (w.timer !== undefined) clearTimeout(w.timer);
    w.off();
    w.resolve();
  }

  /** A waiter gives up: cancel its ticket at once and reject it. */
  _leave(w, err) {
    if (w.done) return;
    w.done = true;
    if (w.timer !== undefined) clearTimeout(w.timer);
    w.off();
    if (semaphoreCancel(this._h, w.ticket) === PASSED_ON) this._wake();
    w.reject(err);
  }

  /** Resolve the oldest waiter if the core has handed it a permit. */
  _wake() {
    const w = this._peek();
    if (w !== undefined && semaphorePoll(this._h, w.ticket) === GRANTED) this._grant(w);
  }

  _release() {
    const w = this._peek();
    const state = semaphoreRelease(this._h, w === undefined ? -1 : w.ticket);
    if (w !== undefined && state === GRANTED) this._grant(w);
  }

  /**
   * `{ name, active, queued, maxConcurrent, maxQueue, limits, admitted,
   * rejected: { shed, full, queueTimeout, aborted } }` (counts of this process).
   */
  metrics() {
    const { active, queued } = binding.semaphoreSnapshot(this._h);
    const [critical, high, normal, low, ring] = binding.semaphoreLimits(this._h);
    const c = this._counts;
    return {
      name: this.name,
      active,
      queued,
      maxConcurrent: this.maxConcurrent,
      maxQueue: this.maxQueue,
      queueRing: ring,
      limits: { critical, high, normal, low },
      admitted: c.admitted,
      rejected: { shed: c.shed, full: c.full, queueTimeout: c.queueTimeout, aborted: c.aborted },
    };
  }
}

/**
 * The semaphore without Promises (and the conformance runner's driver):
 * `acquire(priority, wait)` → `{ admitted }`, `{ ticket }` or `{ error }`.
 */
class SemaphoreCore {
  constructor(options = {}) {
    try {
      this._token = binding.semaphoreNew(semaphoreConfig(options));
    } catch (e) {
      throw fromNative(e);
    }
    this._h = binding.handleOf(this._token);
  }

  acquire(priority = 'normal', wait = false) {
    const p = PRIORITY[priority];
    if (p === undefined) throw configError('priority', `must be one of ${PRIORITIES.join(', ')}`);
    const r = semaphoreAcquire(this._h, p, wait ? 1 : 0);
    if (r === ADMITTED) return { admitted: true };
    if (r >= 0) return { ticket: r };
    return { error: rejection('core', r, priority) };
  }

  /** `waiting`, `granted`, `cancelled` or `unknown`. */
  poll(ticket) {
    return ['waiting', 'granted', 'cancelled', 'unknown'][semaphorePoll(this._h, ticket)];
  }

  /** `cancelled`, `passedOn` or `unknown`. */
  cancel(ticket) {
    return ['cancelled', 'passedOn', 'unknown'][semaphoreCancel(this._h, ticket)];
  }

  /** Give a permit back; false when none was held. */
  release() {
    return semaphoreRelease(this._h, -1) !== -1;
  }

  snapshot() {
    return binding.semaphoreSnapshot(this._h);
  }
}

module.exports = { Bulkhead, SemaphoreCore };
