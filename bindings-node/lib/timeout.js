'use strict';
// timeout(ms): each call gets its own fresh AbortController, aborted when its
// time is up (never one shared controller that stays aborted: opossum #861).
// The timer is cleared, and the listener on the caller's signal removed, the
// moment the call settles.

const { SeawallError, codes, configError, abortedError } = require('./errors');
const { listen, noop } = require('./abort');
const { callOptions } = require('./call');
const { SafeEmitter, disposable } = require('./hooks');
const { LongTimer } = require('./timers');

function timeoutError(ms, deadline) {
  return new SeawallError(codes.ETIMEDOUT, deadline ? `deadline exceeded (${ms} ms left)` : `timed out after ${ms} ms`, {
    timeoutMs: ms,
  });
}

const STRATEGIES = ['aggressive', 'cooperative'];

class Timeout extends SafeEmitter {
  /**
   * @param {number} ms how long one call may take (ms, > 0; any length, timers
   *   past Node's 24.8-day limit are chained; `Infinity`: no time limit, only the
   *   deadline and the caller's signal end the call)
   * @param {'aggressive'|'cooperative'} [strategy] when time is up, both abort
   *   the call's signal; `aggressive` (the default) rejects with ETIMEDOUT at
   *   once, `cooperative` (cockatiel's) waits for `fn` to settle first, so
   *   nothing of the call outlives the rejection. Anything else: EINVALIDCONFIG.
   */
  constructor(ms, strategy = 'aggressive') {
    super();
    if (typeof ms !== 'number' || !(ms > 0)) {
      throw configError('timeoutMs', `must be a number of ms greater than 0 (or Infinity), not ${ms}`);
    }
    if (!STRATEGIES.includes(strategy)) {
      throw configError('strategy', `must be 'aggressive' or 'cooperative', not ${typeof strategy === 'string' ? JSON.stringify(strategy) : String(strategy)}`);
    }
    this.ms = ms;
    this.strategy = strategy;
  }

  _owner() {
    return `timeout(${this.ms})`;
  }

  /** Listen to each call that runs out of time (`{ timeoutMs, byDeadline, error }`); returns a Disposable. */
  onTimeout(listener) {
    return disposable(this, 'timeout', listener);
  }

  /**
   * Run `fn({ signal, deadline })`: resolves or rejects as it does, or rejects
   * with ETIMEDOUT after `ms` (or the `deadline`'s remaining time, if shorter;
   * at once if it has expired) and aborts `signal`, or with EABORTED when the
   * caller's `signal` aborts. `options` may be the caller's AbortSignal itself;
   * bad arguments reject with EINVALIDCONFIG.
   */
  execute(fn, options) {
    let call;
    try {
      call = callOptions(fn, options);
    } catch (e) {
      return Promise.reject(e);
    }
    const { signal, deadline } = call;
    let ms = this.ms;
    let byDeadline = false;
    if (deadline !== undefined) {
      const left = deadline.remainingMs();
      if (left < ms) {
        ms = left;
        byDeadline = true;
      }
    }
    if (signal !== undefined && signal.aborted) return Promise.reject(abortedError(signal));
    if (ms <= 0) return Promise.reject(timeoutError(0, true));
    const cooperative = this.strategy === 'cooperative';
    const controller = new AbortController();
    return new Promise((resolve, reject) => {
      let settled = false;
      // Cooperative: the error to reject with once fn settles (time ran out).
      let late;
      let off = noop;
      const timer = new LongTimer(() => {
        if (settled) return;
        off();
        const err = timeoutError(ms, byDeadline);
        this.emit('timeout', { timeoutMs: ms, byDeadline, error: err });
        if (cooperative) {
          late = err;
          controller.abort(err);
          return;
        }
        settled = true;
        controller.abort(err);
        reject(err);
      }, ms);
      const finish = () => {
        settled = true;
        timer.clear();
        off();
      };
      if (signal !== undefined) {
        off = listen(signal, () => {
          if (settled || late !== undefined) return;
          if (cooperative) {
            late = abortedError(signal);
            timer.clear();
            controller.abort(signal.reason);
            return;
          }
          finish();
          controller.abort(signal.reason);
          reject(abortedError(signal));
        });
      }
      let p;
      try {
        p = fn({ signal: controller.signal, deadline });
      } catch (e) {
        finish();
        reject(e);
        return;
      }
      Promise.resolve(p).then(
        (v) => {
          if (settled) return;
          finish();
          if (late !== undefined) reject(late);
          else resolve(v);
        },
        (e) => {
          if (settled) return;
          finish();
          reject(late !== undefined ? late : e);
        },
      );
    });
  }
}

/**
 * A timeout policy of `ms` milliseconds per call; `strategy` `aggressive`
 * (default) or `cooperative` (see Timeout).
 */
function timeout(ms, strategy) {
  return new Timeout(ms, strategy);
}

module.exports = { Timeout, timeout, timeoutError };
