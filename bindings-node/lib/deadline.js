'use strict';
// Deadline budget (DESIGN §6; the seed documents' TimeoutBudget), in
// milliseconds of performance.now() unless the caller passes its own `nowMs`.
// Semantics are the core's `Deadline`: remaining saturates at 0, a clock read
// before the start counts as the start, expired ⇔ remaining is 0 (so it expires
// exactly at start + total), and a child never outlives its parent.

const { configError } = require('./errors');
const { argument } = require('./config');

/** A time of the caller's clock: any finite number (this class only subtracts). */
const TIME = { min: -Infinity };

function time(v) {
  return argument(v, 'nowMs', TIME);
}

class Deadline {
  /**
   * @param {number} totalMs the budget (ms, > 0)
   * @param {{ nowMs?: number }} [options] start time (default performance.now();
   *   a finite number). Anything else throws EINVALIDCONFIG naming it.
   */
  constructor(totalMs, options) {
    if (typeof totalMs !== 'number' || !(totalMs > 0) || !Number.isFinite(totalMs)) {
      throw configError('totalMs', `must be a finite number of ms greater than 0, not ${totalMs}`);
    }
    if (options !== undefined && (options === null || typeof options !== 'object')) throw configError('options', 'must be an object');
    const now = options !== undefined && options.nowMs !== undefined ? time(options.nowMs) : performance.now();
    this.startMs = now;
    this.endMs = now + totalMs;
  }

  /** A deadline `ms` from now. */
  static after(ms) {
    return new Deadline(ms);
  }

  /** Milliseconds left at `nowMs` (default now), never below 0. */
  remainingMs(nowMs = performance.now()) {
    time(nowMs);
    const now = nowMs < this.startMs ? this.startMs : nowMs;
    return now >= this.endMs ? 0 : this.endMs - now;
  }

  /** Whether no time is left at `nowMs` (true exactly at start + total). */
  expired(nowMs = performance.now()) {
    return this.remainingMs(nowMs) === 0;
  }

  /** `min(maxMs, remaining)`: the share of the budget one step may use (`maxMs` ≥ 0, Infinity allowed). */
  allocateMs(maxMs, nowMs = performance.now()) {
    argument(maxMs, 'maxMs', { infinite: true });
    const r = this.remainingMs(nowMs);
    return maxMs < r ? maxMs : r;
  }

  /** A deadline of `totalMs` from `nowMs` that never ends after this one. */
  child(totalMs, nowMs = performance.now()) {
    const d = new Deadline(totalMs, { nowMs: time(nowMs) });
    if (this.endMs < d.endMs) d.endMs = this.endMs;
    if (d.startMs > d.endMs) d.startMs = d.endMs;
    return d;
  }
}

/**
 * The `deadline` of execute options: undefined, or a Deadline (of any copy of
 * the package: anything with remainingMs() and child()).
 */
function checkDeadline(d) {
  if (d === undefined) return undefined;
  if (d === null || typeof d !== 'object' || typeof d.remainingMs !== 'function' || typeof d.child !== 'function') {
    throw configError('deadline', 'must be a Deadline');
  }
  return d;
}

module.exports = { Deadline, checkDeadline };
