'use strict';
// The Node package's option tables: for each configurable class, which option
// sets which fields of the core configuration (names as the native
// `configFields()` gives them, from seawall_host::options), and which options
// configure the JavaScript wrapper only. The classes accept exactly these
// options (lib/config.js reads the keys from here), and test/options.test.js
// checks the tables against the core's fields, so a new core option fails until
// it is placed here (and read in lib/config.js).

const CORE_OPTIONS = Object.freeze({
  breaker: {
    window: ['window.count.size', 'window.time.buckets', 'window.time.bucket_width_ns'],
    minimumCalls: ['minimum_calls'],
    failureRateThreshold: ['failure_rate_threshold'],
    slowCallRateThreshold: ['slow_call_rate_threshold'],
    slowCallDurationMs: ['slow_call_duration_ns'],
    consecutiveFailures: ['consecutive_failures'],
    openDurationMs: ['open_duration_ns'],
    openBackoffMultiplier: ['open_backoff_multiplier'],
    maxOpenDurationMs: ['max_open_duration_ns'],
    openJitterFactor: ['open_jitter_factor'],
    halfOpenMaxCalls: ['half_open_max_calls'],
    halfOpenSuccessThreshold: ['half_open_success_threshold'],
    halfOpenMaxWaitMs: ['half_open_max_wait_ns'],
  },
  semaphore: {
    maxConcurrent: ['max_concurrent'],
    maxQueue: ['max_queue'],
    shares: ['shares.critical', 'shares.high', 'shares.normal', 'shares.low'],
  },
  retry_budget: {
    ttlMs: ['ttl_ns'],
    minRetriesPerSec: ['min_retries_per_sec'],
    percentCanRetry: ['percent_can_retry'],
  },
  retry_throttle: {
    maxTokens: ['max_milli_tokens'],
    tokenRatio: ['token_ratio_milli'],
  },
  health: {
    buckets: ['buckets'],
    bucketMs: ['bucket_width_ns'],
    degradedErrorRate: ['degraded_error_rate'],
    unhealthyErrorRate: ['unhealthy_error_rate'],
    degradedP99Ms: ['degraded_p99_ns'],
    unhealthyP99Ms: ['unhealthy_p99_ns'],
  },
});

/** Options of the JavaScript wrapper, not of the core. */
const WRAPPER_OPTIONS = Object.freeze({
  // permitSlots: the shared region's permit table size, not a core field.
  breaker: ['name', 'shared', 'isFailure', 'isFailureResult', 'errorFilter', 'fallback', 'initialState', 'permitSlots'],
  semaphore: ['queueTimeoutMs', 'name', 'shared'],
  retry_budget: ['name', 'shared'],
  retry_throttle: ['name', 'shared'],
  health: [],
});

/** Core fields no option sets, and why. */
const NOT_OPTIONS = Object.freeze({
  breaker: { jitter_seed: 'seeded natively from OS entropy, so breakers do not open in step' },
  semaphore: {},
  retry_budget: {},
  retry_throttle: {},
  health: {},
});

/** Every option a class of configuration `kind` accepts. */
function optionKeys(kind) {
  return [...Object.keys(CORE_OPTIONS[kind]), ...WRAPPER_OPTIONS[kind]];
}

module.exports = { CORE_OPTIONS, WRAPPER_OPTIONS, NOT_OPTIONS, optionKeys };
