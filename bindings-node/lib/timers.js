'use strict';
// Timers for any delay a user can give. Node's setTimeout holds its delay in a
// signed 32-bit int: anything above 2^31 − 1 ms (about 24.8 days) is set to 1 ms
// with a TimeoutOverflowWarning, so a 30-day timeout, queue wait or Retry-After
// would fire at once. A LongTimer chains setTimeout steps of at most that
// length; `Infinity` sets no timer at all (it never fires).

/** The longest delay one setTimeout keeps (ms). */
const MAX_TIMER_MS = 2 ** 31 - 1;

class LongTimer {
  /**
   * Call `fn` once, `ms` milliseconds from now (`Infinity`: never). The caller
   * checks `ms` (a number > 0 or Infinity); `clear()` stops it for good.
   */
  constructor(fn, ms) {
    this._fn = fn;
    this._left = ms;
    this._ref = true;
    this._timer = undefined;
    this._step = () => this._next();
    if (ms !== Infinity) this._arm();
  }

  _arm() {
    const step = this._left > MAX_TIMER_MS ? MAX_TIMER_MS : this._left;
    this._left -= step;
    this._timer = setTimeout(this._step, step);
    if (!this._ref && typeof this._timer.unref === 'function') this._timer.unref();
  }

  _next() {
    this._timer = undefined;
    if (this._left > 0) {
      this._arm();
      return;
    }
    const fn = this._fn;
    this._fn = undefined;
    if (fn !== undefined) fn();
  }

  /** Never call `fn` (safe to call any number of times, and after it fired). */
  clear() {
    if (this._timer !== undefined) clearTimeout(this._timer);
    this._timer = undefined;
    this._fn = undefined;
    this._left = 0;
  }

  /** Let the process exit while only this timer is pending (this step and the next ones). */
  unref() {
    this._ref = false;
    if (this._timer !== undefined && typeof this._timer.unref === 'function') this._timer.unref();
    return this;
  }

  /** Keep the process alive while this timer is pending (the default). */
  ref() {
    this._ref = true;
    if (this._timer !== undefined && typeof this._timer.ref === 'function') this._timer.ref();
    return this;
  }

  /** Whether a step is pending and keeps the process alive. */
  hasRef() {
    return this._timer !== undefined && this._ref;
  }
}

module.exports = { LongTimer, MAX_TIMER_MS };
