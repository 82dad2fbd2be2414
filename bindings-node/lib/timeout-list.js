'use strict';
// One timeout for many calls, with no timer and no clock read per call (a
// setTimeout/clearTimeout pair costs some 2 µs, a clock read 0.2 µs on a VM:
// both more than the rest of a protected call). Every call of one breaker has
// the same timeout, so the calls in flight form a FIFO list in the order they
// started, each stamped with the count of a coarse ticker (one setInterval of
// `timeout / 32` ms, at least 1 ms) that reads the clock once per tick. A call
// stamped k started before tick k + 1 was taken, so it times out at the first
// tick at least `timeout` after tick k + 1's time: never early, late by at most
// about two ticks. The ticker runs only while calls are in flight (stopped at a
// tick that finds none), and holds the process open only while one is.

const { MAX_TIMER_MS } = require('./timers');

class TimeoutList {
  /**
   * @param {number} timeoutMs every entry's timeout (> 0)
   * @param {(entry: object, atLeastMs: number) => void} onTimeout called for an
   *   entry whose time is up (removed from the list first), with a lower bound
   *   of its age
   */
  constructor(timeoutMs, onTimeout) {
    this._timeoutMs = timeoutMs;
    this._onTimeout = onTimeout;
    this._head = undefined; // the oldest entry
    this._tail = undefined;
    this._ticker = undefined;
    this._tick = 1;
    this._unref = false;
    this._tickMs = Math.min(Math.max(1, Math.round(timeoutMs / 32)), MAX_TIMER_MS);
    // The time of each recent tick, by tick mod the ring's length: an entry in
    // the list is at most about timeout / tickMs + 2 ticks old.
    this._times = new Float64Array(Math.min(4 + Math.ceil(timeoutMs / this._tickMs), 1 << 20)).fill(Infinity);
  }

  /** Add `entry` (its `prev`, `next`, `expires` fields are the list's). */
  add(entry) {
    entry.expires = this._tick + 1; // the tick whose time bounds its start
    const tail = this._tail;
    if (tail !== undefined) {
      tail.next = entry;
      entry.prev = tail;
      this._tail = entry;
      return;
    }
    this._head = entry;
    this._tail = entry;
    if (this._ticker === undefined) {
      this._ticker = setInterval(() => this._onTick(), this._tickMs);
      if (this._unref) this._ticker.unref();
    } else if (!this._unref) {
      // Armed since an earlier entry, unref'd while the list was empty: cheaper
      // than a new timer.
      this._ticker.ref();
    }
  }

  /** Take `entry` (in the list) out. */
  remove(entry) {
    const { prev, next } = entry;
    if (prev === undefined) this._head = next;
    else prev.next = next;
    if (next === undefined) this._tail = prev;
    else next.prev = prev;
    entry.prev = undefined;
    entry.next = undefined;
    // Nothing in flight: the ticker no longer holds the process open.
    if (this._head === undefined && this._ticker !== undefined) this._ticker.unref();
  }

  /** From now on the ticker never holds the process open (the entries still time out). */
  unref() {
    this._unref = true;
    if (this._ticker !== undefined) this._ticker.unref();
  }

  _onTick() {
    const now = performance.now();
    const tick = ++this._tick;
    const times = this._times;
    times[tick % times.length] = now;
    let entry = this._head;
    while (entry !== undefined && entry.expires <= tick && now - times[entry.expires % times.length] >= this._timeoutMs) {
      const age = now - times[entry.expires % times.length];
      this.remove(entry);
      entry.expires = 0;
      this._onTimeout(entry, age);
      entry = this._head;
    }
    if (this._head === undefined && this._ticker !== undefined) {
      clearInterval(this._ticker);
      this._ticker = undefined;
    }
  }
}

module.exports = { TimeoutList };
