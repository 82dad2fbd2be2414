'use strict';
// timeout(ms): each call gets its own fresh AbortController, aborted when its
// time is up (never one shared controller that stays aborted: opossum #861).
// The timer is cleared, and the listener on the caller's signal removed, the
// moment the call settles.

const { SeawallError, codes, configError, abortedError } = require('./errors');
const { checkSignal, listen, noop } = require('./abort');
const { LongTimer } = require('./timers');
const { checkDeadline } = require('./deadline');

function timeoutError(ms, deadline) {
  return new SeawallError(codes.ETIMEDOUT, deadline ? `deadline exceeded (${ms} ms left)` : `timed out after ${ms} ms`, {
    timeoutMs: ms,
  });
}

class Timeout {
  /**
   * @param {number} ms how long one call may take (ms, > 0; any length, timers
   *   past Node's 24.8-day limit are chained; `Infinity`: no time limit, only the
   *   deadline and the caller's signal end the call)
   */
  constructor(ms) {
    if (typeof ms !== 'number' || !(ms > 0)) {
      throw configError('timeoutMs', `must be a number of ms greater than 0 (or Infinity), not ${ms}`);
    }
    this.ms = ms;
  }

  /**
   * Run `fn({ signal, deadline })`: resolves or rejects as it does, or rejects
   * with ETIMEDOUT after `ms` (or the `deadline`'s remaining time, if shorter;
   * at once if it has expired) and aborts `signal`, or with EABORTED when the
   * caller's `signal` aborts.
   */
  execute(fn, options) {
    const signal = options === undefined ? undefined : checkSignal(options.signal, configError);
    const deadline = options === undefined ? undefined : checkDeadline(options.deadline);
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
    const controller = new AbortController();
    return new Promise((resolve, reject) => {
      let settled = false;
      let off = noop;
      const timer = new LongTimer(() => {
        if (settled) return;
        settled = true;
        off();
        const err = timeoutError(ms, byDeadline);
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
          if (settled) return;
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
          resolve(v);
        },
        (e) => {
          if (settled) return;
          finish();
          reject(e);
        },
      );
    });
  }
}

/** A timeout policy of `ms` milliseconds per call. */
function timeout(ms) {
  return new Timeout(ms);
}

module.exports = { Timeout, timeout, timeoutError };
