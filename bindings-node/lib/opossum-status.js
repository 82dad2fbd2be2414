'use strict';
// seawall/opossum's Status (opossum's `breaker.status`): `stats`, `window` and
// the `snapshot` event. The counts are read from the breaker when asked (its
// native counters, and the few it counts itself), plus the primed ones.

const { SafeEmitter } = require('./hooks');
const { isPlainObject } = require('./config');

/** opossum's stats fields that count. */
const STAT_KEYS = [
  'failures', 'fallbacks', 'successes', 'rejects', 'fires', 'timeouts', 'cacheHits', 'cacheMisses',
  'coalesceCacheHits', 'coalesceCacheMisses', 'semaphoreRejections',
];
const PERCENTILES = ['0', '0.25', '0.5', '0.75', '0.9', '0.95', '0.99', '0.995', '1'];

/**
 * opossum's Status: `stats` (a plain record), `window` and the `snapshot`
 * event. The counts come from the breaker's native counters where it has them.
 */
class Status extends SafeEmitter {
  /** @param {{ stats?: object }} [options] `stats` primes the counters (opossum's `newStatus`) */
  constructor(options = {}) {
    super();
    const given = options !== null && typeof options === 'object' && isPlainObject(options.stats) ? options.stats : {};
    this._primed = {};
    for (const k of STAT_KEYS) this._primed[k] = typeof given[k] === 'number' ? given[k] : 0;
    this._breaker = undefined;
    this._interval = undefined;
  }

  _owner() {
    return 'opossum status';
  }

  /** The counters: this breaker's plus the primed ones. */
  get stats() {
    const p = this._primed;
    const s = this._breaker === undefined ? { ...p } : this._breaker._counts(p);
    s.percentiles = Object.fromEntries(PERCENTILES.map((k) => [k, -1]));
    s.latencyTimes = [];
    s.latencyMean = -1;
    return s;
  }

  /** One bucket, the totals (the native window keeps its own buckets), and whether the breaker is open. */
  get window() {
    return [{ ...this.stats, isCircuitBreakerOpen: this._breaker !== undefined && this._breaker.opened }];
  }

  /**
   * Snapshots: one unref'd timer, a bucket apart, started by the first
   * 'snapshot' listener. A rotateBucketController is listened to while the
   * breaker is enabled, as opossum does, but its 'rotate' changes nothing: the
   * native window rotates by the clock.
   */
  _attach(breaker, bucketMs, enableSnapshots, rotateBucketController) {
    this._breaker = breaker;
    this._controller = rotateBucketController;
    this._onRotate = () => {};
    this.startListeneningForRotateEvent();
    if (!enableSnapshots) return;
    this.on('newListener', (event) => {
      if (event !== 'snapshot' || this._interval !== undefined || this._breaker === undefined) return;
      this._interval = setInterval(() => this.emit('snapshot', this.stats), bucketMs);
      this._interval.unref();
    });
  }

  /** Listen to the rotateBucketController (once). */
  startListeneningForRotateEvent() {
    const c = this._controller;
    if (c !== undefined && !c.listeners('rotate').includes(this._onRotate)) c.on('rotate', this._onRotate);
  }

  removeRotateBucketControllerListener() {
    if (this._controller !== undefined) this._controller.removeListener('rotate', this._onRotate);
  }

  shutdown() {
    this.removeRotateBucketControllerListener();
    if (this._interval !== undefined) clearInterval(this._interval);
    this._interval = undefined;
    this.removeAllListeners();
  }
}

module.exports = { Status, STAT_KEYS };
