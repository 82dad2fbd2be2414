// ESM entry: the same exports as the CommonJS entry.
import seawall from './index.js';

export const {
  CircuitBreaker, BreakerCore, Retry, retry, RetryBudget, RetryThrottle, Backoff, Bulkhead,
  SemaphoreCore, Timeout, timeout, Deadline, wrap, pipeline, Pipeline, StaleCache, Health,
  RateLimiter, KeyedRateLimit,
  registerMetrics, instrumentOtel, SeawallError, isSeawallError, codes, retryAfterOf, parseRetryAfter,
  monotonicMs, sharedSupported, setTesting,
} = seawall;
// Chaos injection and the ambient call context.
export const { Chaos, chaos, ChaosFile, loadChaosRules, withCallContext, callContext } = seawall;
export default seawall;
