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
//
// Local bulkheads keep the permits their callers gave back while nobody waits
// (`_idle`: taken from the semaphore, held by no caller): only this object
// uses the semaphore, so the next call takes one without crossing into Rust
// when the semaphore itself would admit it (nobody waits and fewer than its
// priority's limit are active, DESIGN §5). Every other step gives them back
// first (`_unlease`), so the semaphore decides and reports exactly as if they
// had never been kept.
//
// Shared bulkheads (`shared: name`, one semaphore for every process of the
// host): a release in another process hands its permit to the oldest waiter of
// any process. While this process has waiters, a native thread sleeps on the
// semaphore's release counter (src/waker.rs: a futex that every process's
// release wakes) and calls `_onWake` to look at the tickets; where that wait
// does not exist, a timer polls them every `semaphoreSharedPollMs()` (the
// host's one shared-wait policy) instead. Both stop the moment the last waiter
// is served or leaves. The timer runs in either case (every `SAFETY_POLL_MS`
// beside the thread, the bound on a wake-up lost to a region another process
// overwrote) and is not unref'd: a waiter is work not yet done, and a process
// that exited while waiting would leave its ticket in the shared queue, where a
// grant would hold a permit until a caller that needs it gives it back. The thread never keeps
// the process alive.

const { binding, fast, constants } = require('./native');
const {
  SeawallError, codes, configError, abortedError, fromNative, sharedOpenError, refuseCloning, refusal,
} = require('./errors');
const { only, number, argument, semaphoreConfig, isPlainObject, name: nameOption, PRIORITIES, BULKHEAD_KEYS } = require('./config');
const { listen, noop } = require('./abort');
const { callOptions } = require('./call');
const { SafeEmitter, disposable } = require('./hooks');
const { LongTimer } = require('./timers');

const { semaphoreAcquire, semaphoreRelease, semaphorePoll, semaphoreCancel } = fast;

// The encodings of src/boundary.rs. No prototype: `priority: 'toString'` must
// be refused, not looked up.
const PRIORITY = Object.assign(Object.create(null), Object.fromEntries(constants.priorities.map((p, i) => [p, i])));
const ADMITTED = constants.admitted;
const POLL_RESULTS = constants.pollResults;
const CANCEL_RESULTS = constants.cancelResults;
const WAITING = POLL_RESULTS.indexOf('waiting');
const GRANTED = POLL_RESULTS.indexOf('granted');
const PASSED_ON = CANCEL_RESULTS.indexOf('passedOn');
const NO_TICKET = constants.absent;
const NOT_HELD = constants.releaseNotHeld;
const SHARED_POLL_MS = binding.semaphoreSharedPollMs();
/** The timer's period while the native waker thread runs (see the top of this file). */
const SAFETY_POLL_MS = 100;
const NO_SIGNAL = Object.freeze({ signal: undefined });
const TICKET = { integer: true, max: Number.MAX_SAFE_INTEGER };

let unnamed = 0;

/** The EBULKHEADFULL error of rejection `code`: `-(base + reason + 2·(queued + span·active))`. */
function rejection(name, code, priority) {
  const x = -code - constants.rejectedSemaphoreBase;
  const reason = constants.rejectReasons[x % 2];
  const rest = (x - (x % 2)) / 2;
  const queued = rest % constants.occupancySpan;
  const active = (rest - queued) / constants.occupancySpan;
  const what = reason === 'shed' ? `sheds ${priority} priority calls` : 'is full';
  return refusal(codes.EBULKHEADFULL, `bulkhead '${name}' ${what} (${active} active, ${queued} queued)`, {
    bulkhead: name, reason, active, queued, priority,
  });
}

class Bulkhead extends SafeEmitter {
  /**
   * @param {object} options `maxConcurrent` (1 ..= 1 048 575, default 10),
   *   `maxQueue` (default 0),
   *   `queueTimeoutMs` (any length; default and `Infinity`: wait as long as it
   *   takes), `shares` (percent of
   *   `maxConcurrent` per priority: critical / high / normal / low, default 100
   *   each), `name`, `shared` (a region name: one bulkhead for every process
   *   of the host, `maxConcurrent` ≤ 4096 and `maxQueue` ≤ 1024). Throws
   *   EINVALIDCONFIG naming the option, ESHAREDMISMATCH when the shared
   *   bulkhead exists with another configuration, ESHARED when it cannot be
   *   opened.
   */
  constructor(options = {}) {
    super();
    if (!isPlainObject(options)) throw configError('options', 'must be an object');
    only(options, BULKHEAD_KEYS);
    const shared = options.shared;
    if (shared !== undefined && (typeof shared !== 'string' || shared === '')) {
      throw configError('shared', 'must be a non-empty region name');
    }
    const cfg = semaphoreConfig(options);
    const queueTimeoutMs = number(options, 'queueTimeoutMs', 'queueTimeoutMs', { min: 0, exclusive: true, infinite: true });
    this._queueTimeoutMs = queueTimeoutMs === Infinity ? undefined : queueTimeoutMs;
    try {
      this._token = binding.semaphoreNew(cfg, shared);
    } catch (e) {
      throw sharedOpenError(e, 'bulkhead', shared, 'maxConcurrent, maxQueue and shares');
    }
    this._h = binding.handleOf(this._token);
    this.name = nameOption(options, shared !== undefined ? shared : `bulkhead-${++unnamed}`);
    this.maxConcurrent = cfg.maxConcurrent === undefined ? 10 : cfg.maxConcurrent;
    this.maxQueue = cfg.maxQueue === undefined ? 0 : cfg.maxQueue;
    this._shared = shared;
    this._waiters = [];
    this._head = 0;
    this._live = 0;
    this._timer = undefined;
    this._onTick = shared === undefined ? undefined : () => this._tick();
    // Shared: whether the waker thread runs, and how often each way looked.
    this._watching = false;
    this._onWake = shared === undefined ? undefined : () => this._woken();
    this._looks = { timer: 0, waker: 0 };
    this._counts = { admitted: 0, shed: 0, full: 0, queueTimeout: 0, aborted: 0 };
    // Local only: permits kept for the next calls, callers holding permits, and
    // each priority's limit (critical, high, normal, low).
    this._keep = shared === undefined;
    this._idle = 0;
    this._active = 0;
    this._limits = this._keep ? binding.semaphoreLimits(this._h).slice(0, 4) : undefined;
    refuseCloning(this, 'bulkhead');
  }

  /** Whether this bulkhead lives in a region shared by the processes of the host. */
  get isShared() {
    return this._shared !== undefined;
  }

  /**
   * Run `fn({ signal })` once a permit is held: at once if one is free, after
   * waiting in the queue otherwise. Rejects with EBULKHEADFULL (`reason` shed,
   * full or queueTimeout, with `active` and `queued`) or EABORTED (the caller's
   * `signal` aborted the wait). `priority`: critical, high, normal (default), low.
   */
  async execute(fn, options) {
    const call = callOptions(fn, options);
    const signal = call.signal;
    let priority = 2;
    let priorityName = 'normal';
    if (call.priority !== undefined) {
      priority = PRIORITY[call.priority];
      if (priority === undefined) throw configError('priority', `must be one of ${PRIORITIES.join(', ')}`);
      priorityName = call.priority;
    }
    if (signal !== undefined && signal.aborted) throw abortedError(signal);
    // A kept permit means nobody waits (see the top of the file).
    if (this._idle > 0 && this._active < this._limits[priority]) {
      this._idle -= 1;
    } else {
      if (this._idle > 0) this._unlease();
      const r = semaphoreAcquire(this._h, priority, this.maxQueue > 0 ? 1 : 0);
      if (r !== ADMITTED) {
        if (r >= 0) await this._wait(r, signal, priorityName);
        else this._refuse(r, priorityName);
      }
    }
    this._active += 1;
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

  /**
   * A permit now or never, for callers that run the call themselves
   * (seawall/opossum's capacity): true, or the EBULKHEADFULL refusal (counted,
   * not thrown). A true must be given back with `_release()`.
   */
  _tryAdmit() {
    // The same admission as execute()'s at priority normal, kept permits included.
    if (this._idle > 0 && this._active < this._limits[2]) {
      this._idle -= 1;
    } else {
      if (this._idle > 0) this._unlease();
      const r = semaphoreAcquire(this._h, 2, 0);
      if (r !== ADMITTED) {
        const err = rejection(this.name, r, 'normal');
        this._counts[err.reason] += 1;
        return err;
      }
    }
    this._active += 1;
    this._counts.admitted += 1;
    return true;
  }

  /** A waiter left without a permit: counted here, and in the region of a shared bulkhead. */
  _gaveUp(reason) {
    this._counts[reason] += 1;
    if (this._shared !== undefined) binding.semaphoreGaveUp(this._h, reason === 'aborted');
  }

  _refuse(code, priority) {
    const err = rejection(this.name, code, priority);
    this._counts[err.reason] += 1;
    // The event's record is built only for a listener: a refusal is the hot path under load.
    if (this.listenerCount('reject') !== 0) {
      this.emit('reject', { reason: err.reason, priority, active: err.active, queued: err.queued, error: err });
    }
    throw err;
  }

  _owner() {
    return `bulkhead '${this.name}'`;
  }

  /**
   * Listen to each refusal (`{ reason, priority, active, queued, error }`,
   * reason shed, full or queueTimeout); returns a Disposable.
   */
  onReject(listener) { return disposable(this, 'reject', listener); }

  _wait(ticket, signal, priority) {
    return new Promise((resolve, reject) => {
      const w = { ticket, priority, resolve, reject, timer: undefined, off: noop, done: false };
      if (this._queueTimeoutMs !== undefined) {
        const ms = this._queueTimeoutMs;
        w.timer = new LongTimer(() => {
          this._gaveUp('queueTimeout');
          const { active, queued } = binding.semaphoreSnapshot(this._h);
          const err = new SeawallError(codes.EBULKHEADFULL, `bulkhead '${this.name}': no permit within ${ms} ms`, {
            bulkhead: this.name, reason: 'queueTimeout', active, queued,
          });
          this._leave(w, err);
          this.emit('reject', { reason: 'queueTimeout', priority: w.priority, active, queued, error: err });
        }, ms);
      }
      if (signal !== undefined) {
        w.off = listen(signal, () => {
          this._gaveUp('aborted');
          this._leave(w, abortedError(signal));
        });
      }
      this._waiters.push(w);
      this._live += 1;
      if (this._onTick !== undefined) {
        if (!this._watching) this._watching = binding.semaphoreWatch(this._h, this._onWake);
        if (this._timer === undefined) this._timer = setTimeout(this._onTick, this._pollMs());
      }
    });
  }

  /** A waiter is done (served or gone): the last one stops the shared poll timer and waker. */
  _settled() {
    this._live -= 1;
    if (this._live !== 0) return;
    if (this._timer !== undefined) {
      clearTimeout(this._timer);
      this._timer = undefined;
    }
    if (this._watching) {
      this._watching = false;
      binding.semaphoreUnwatch(this._h);
    }
  }

  _pollMs() {
    return this._watching ? SAFETY_POLL_MS : SHARED_POLL_MS;
  }

  /** Shared: look for grants made by other processes, then poll again later. */
  _tick() {
    this._timer = undefined;
    this._looks.timer += 1;
    this._drain();
    if (this._live > 0) this._timer = setTimeout(this._onTick, this._pollMs());
  }

  /** Shared: the waker thread saw a release (of any process): look. */
  _woken() {
    this._looks.waker += 1;
    if (this._live > 0) this._drain();
  }

  /**
   * Shared: resolve every waiter the semaphore has granted, oldest first (a
   * process's tickets are granted in the order it queued them, so the first one
   * still waiting ends the scan).
   */
  _drain() {
    for (;;) {
      const w = this._peek();
      if (w === undefined) return;
      const state = semaphorePoll(this._h, w.ticket);
      if (state === WAITING) return;
      if (state === GRANTED) {
        this._grant(w);
      } else {
        this._finish(w);
        w.reject(new SeawallError(codes.ESHARED, `bulkhead '${this.name}': this waiter's place in the shared queue was reclaimed `
          + 'by another process that believed this one dead (do all processes share one pid namespace?)', { bulkhead: this.name }));
      }
    }
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

  _finish(w) {
    w.done = true;
    if (w.timer !== undefined) w.timer.clear();
    w.off();
    this._settled();
  }

  _grant(w) {
    this._finish(w);
    w.resolve();
  }

  /** A waiter gives up: cancel its ticket at once and reject it. */
  _leave(w, err) {
    if (w.done) return;
    this._finish(w);
    if (semaphoreCancel(this._h, w.ticket) === PASSED_ON) this._wake();
    w.reject(err);
  }

  /** Resolve the oldest waiter if the core has handed it a permit. */
  _wake() {
    if (this._shared !== undefined) {
      this._drain();
      return;
    }
    const w = this._peek();
    if (w !== undefined && semaphorePoll(this._h, w.ticket) === GRANTED) this._grant(w);
  }

  /** Give the kept permits back to the semaphore. */
  _unlease() {
    for (; this._idle > 0; this._idle -= 1) semaphoreRelease(this._h, NO_TICKET);
  }

  _release() {
    this._active -= 1;
    if (this._keep && this._live === 0) {
      this._idle += 1;
      return;
    }
    const w = this._peek();
    const state = semaphoreRelease(this._h, w === undefined ? NO_TICKET : w.ticket);
    if (w !== undefined && state === GRANTED) {
      this._grant(w);
      // Shared: other processes' releases may have granted the next ones too.
      if (this._shared !== undefined && this._live > 0) this._drain();
    }
  }

  /**
   * Shared bulkheads: release now the permits and cancel the queued tickets
   * of processes that died holding or waiting. Returns `{ permits, tickets }`
   * reclaimed (zeros for a local bulkhead). Not needed: the next caller that
   * would be refused or queued does the same by itself (DESIGN §8,
   * self-healing). Only correct where every sharer sees the same pids (one
   * pid namespace).
   */
  reclaimAbandoned() {
    const [permits, tickets] = binding.semaphoreReclaimAbandoned(this._h);
    if (this._shared !== undefined && this._live > 0) this._drain();
    return { permits, tickets };
  }

  /** Remove the shared bulkhead `name` from /dev/shm (a missing one is fine). */
  static unlinkShared(name) {
    try {
      binding.semaphoreUnlinkShared(name);
    } catch (e) {
      throw fromNative(e);
    }
  }

  /**
   * `{ name, shared, active, queued, maxConcurrent, maxQueue, queueRing, limits,
   * admitted, rejected: { shed, full, queueTimeout, aborted }, permitsOutstanding,
   * ticketsOutstanding }`. `active` and `queued` are the semaphore's, and
   * `admitted` and `rejected` its lifetime figures: of every process for a
   * shared one (they live in its region), of this object for a local one;
   * `permitsOutstanding` / `ticketsOutstanding` are what callers of every
   * process hold, `permitsAbandoned` / `ticketsAbandoned` what processes that
   * died hold until a caller needs it back (shared only, else null: a scan of
   * the holder table).
   */
  metrics() {
    this._unlease();
    const { active, queued } = binding.semaphoreSnapshot(this._h);
    const [critical, high, normal, low, ring] = binding.semaphoreLimits(this._h);
    const holders = binding.semaphoreHolders(this._h);
    // A local bulkhead admits from the permits it keeps without asking the
    // semaphore, so its own counts are the complete ones.
    const c = this._shared === undefined ? this._counts : binding.semaphoreTotals(this._h);
    return {
      name: this.name,
      shared: this._shared !== undefined,
      active,
      queued,
      maxConcurrent: this.maxConcurrent,
      maxQueue: this.maxQueue,
      queueRing: ring,
      limits: { critical, high, normal, low },
      admitted: c.admitted,
      rejected: { shed: c.shed, full: c.full, queueTimeout: c.queueTimeout, aborted: c.aborted },
      permitsOutstanding: holders == null ? null : holders.permitsOutstanding,
      ticketsOutstanding: holders == null ? null : holders.ticketsOutstanding,
      // Shared: what dead processes hold until a caller gives it back (DESIGN §8).
      permitsAbandoned: holders == null ? null : holders.permitsAbandoned,
      ticketsAbandoned: holders == null ? null : holders.ticketsAbandoned,
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
    argument(ticket, 'ticket', TICKET);
    return POLL_RESULTS[semaphorePoll(this._h, ticket)];
  }

  /** `cancelled`, `passedOn` or `unknown`. */
  cancel(ticket) {
    argument(ticket, 'ticket', TICKET);
    return CANCEL_RESULTS[semaphoreCancel(this._h, ticket)];
  }

  /** Give a permit back; false when none was held. */
  release() {
    return semaphoreRelease(this._h, NO_TICKET) !== NOT_HELD;
  }

  snapshot() {
    return binding.semaphoreSnapshot(this._h);
  }
}

module.exports = { Bulkhead, SemaphoreCore };
