'use strict';
// seawall: fault tolerance for Node services on a lock-free Rust core.
// Durations are milliseconds; rates and shares are percentages (0–100).

const { CircuitBreaker, BreakerCore } = require('./breaker');
const { Retry, retry, RetryBudget, RetryThrottle, Backoff, retryAfterOf, parseRetryAfter } = require('./retry');
const { Bulkhead, SemaphoreCore } = require('./bulkhead');
const { Timeout, timeout } = require('./timeout');
const { Deadline } = require('./deadline');
const { wrap, pipeline, Pipeline, StaleCache } = require('./pipeline');
const { Health } = require('./health');
const { RateLimiter, KeyedRateLimit } = require('./rate_limiter');
const { registerMetrics } = require('./metrics');
const { instrumentOtel } = require('./otel');
const { SeawallError, isSeawallError, codes } = require('./errors');
const { binding } = require('./native');
const { setTesting } = require('./testing');
// Chaos injection and the ambient call context (the framework middleware's).
const { Chaos, chaos } = require('./chaos');
const { ChaosFile, loadChaosRules } = require('./chaos_file');
const { withCallContext, callContext } = require('./context');

chaos.load = loadChaosRules;

/** Milliseconds of the OS monotonic clock (the clock shared breakers use). */
function monotonicMs() {
  return binding.monotonicMs();
}

/** Whether this machine can share structures between processes. */
function sharedSupported() {
  return binding.sharedSupported();
}

module.exports = {
  CircuitBreaker,
  BreakerCore,
  Retry,
  retry,
  RetryBudget,
  RetryThrottle,
  Backoff,
  Bulkhead,
  SemaphoreCore,
  Timeout,
  timeout,
  Deadline,
  wrap,
  pipeline,
  Pipeline,
  StaleCache,
  Health,
  RateLimiter,
  KeyedRateLimit,
  registerMetrics,
  instrumentOtel,
  SeawallError,
  isSeawallError,
  codes,
  retryAfterOf,
  parseRetryAfter,
  monotonicMs,
  sharedSupported,
  setTesting,
  // Chaos injection and the ambient call context.
  Chaos,
  chaos,
  ChaosFile,
  loadChaosRules,
  withCallContext,
  callContext,
};
