'use strict';
// Health of a dependency (DESIGN §7): calls, errors, p50 / p90 / p99 latency
// (log-linear histogram, within 3.125 %) over a sliding time window, and the seed
// documents' status rule (unhealthy above 50 % errors or p99 5 s, degraded above
// 10 % or 2 s; every threshold configurable).

const { binding } = require('./native');
const { fromNative, configError } = require('./errors');
const { healthConfig, isPlainObject, argument, clockMs } = require('./config');

class Health {
  constructor(options = {}) {
    if (!isPlainObject(options)) throw configError('options', 'must be an object');
    try {
      this._token = binding.healthNew(healthConfig(options));
    } catch (e) {
      throw fromNative(e);
    }
    this._h = binding.handleOf(this._token);
  }

  /**
   * One call of `latencyMs` (finite, ≥ 0) ended, `failed` (a boolean) or not,
   * at `nowMs` (default now). Anything else throws EINVALIDCONFIG naming the
   * argument, and records nothing.
   */
  record(latencyMs, failed = false, nowMs) {
    argument(latencyMs, 'latencyMs');
    if (typeof failed !== 'boolean') throw configError('failed', `must be a boolean, not ${typeof failed}`);
    binding.healthRecord(this._h, latencyMs, failed, clockMs(nowMs));
  }

  /** `{ calls, errors, errorRate, p50Ms, p90Ms, p99Ms, status }` (rates in percent). */
  snapshot(nowMs) {
    const s = binding.healthSnapshot(this._h, clockMs(nowMs));
    return {
      calls: s.calls,
      errors: s.errors,
      errorRate: s.errorRate === undefined ? null : s.errorRate,
      p50Ms: s.p50Ms === undefined ? null : s.p50Ms,
      p90Ms: s.p90Ms === undefined ? null : s.p90Ms,
      p99Ms: s.p99Ms === undefined ? null : s.p99Ms,
      status: s.status,
    };
  }

  /** The `percent`-th percentile latency (ms; `percent` 0–100), or null for an empty window. */
  percentileMs(percent, nowMs) {
    argument(percent, 'percent', { max: 100 });
    const v = binding.healthPercentile(this._h, percent, clockMs(nowMs));
    return v === undefined ? null : v;
  }

  /** `healthy`, `degraded` or `unhealthy`. */
  status(nowMs) {
    return binding.healthSnapshot(this._h, clockMs(nowMs)).status;
  }
}

module.exports = { Health };
