'use strict';
// Errors thrown by seawall: `Error`s with a `code` (Node's convention), told apart
// from the user's own errors by `isSeawallError`. The user's errors are never
// wrapped: they pass through unchanged.

const { constants } = require('./native');

const BRAND = Symbol.for('seawall.error');

/** Every code a SeawallError can carry. */
const codes = Object.freeze({
  /** A circuit breaker refused the call (open, forced open, half-open full). */
  ECIRCUITOPEN: 'ECIRCUITOPEN',
  /** A bulkhead refused the call (shed, full, or its queue wait timed out). */
  EBULKHEADFULL: 'EBULKHEADFULL',
  /** A timeout or deadline expired. */
  ETIMEDOUT: 'ETIMEDOUT',
  /** A rate limiter refused the call: over its rate (`retryAfterMs` says when it conforms). */
  ERATELIMITED: 'ERATELIMITED',
  /** A retry budget or throttle refused a retry. */
  ERETRYBUDGET: 'ERETRYBUDGET',
  /** A chaos policy injected this failure (DESIGN §11; `chaos` names it). */
  ECHAOS: 'ECHAOS',
  /** The caller's AbortSignal aborted a wait of seawall's own. */
  EABORTED: 'EABORTED',
  /** An option or a method's argument is invalid (`field` names it). */
  EINVALIDCONFIG: 'EINVALIDCONFIG',
  /** A shared region was made with another configuration, layout or ABI. */
  ESHAREDMISMATCH: 'ESHAREDMISMATCH',
  /** A shared region could not be opened (I/O, timeout, no lock-free atomics). */
  ESHARED: 'ESHARED',
  /** Every permit slot of a shared breaker is taken (`permitSlots` outstanding calls, 4096 by default). */
  EPERMITS: 'EPERMITS',
  /** A feature that this build does not have yet. */
  ENOTSUPPORTED: 'ENOTSUPPORTED',
  /** Anything else from the native layer (a bug: please report it). */
  EINTERNAL: 'EINTERNAL',
});

class SeawallError extends Error {
  /**
   * @param {string} code one of `codes`
   * @param {string} message
   * @param {object} [props] extra fields (`cause` becomes the standard cause)
   */
  constructor(code, message, props) {
    const cause = props !== undefined ? props.cause : undefined;
    super(message, cause !== undefined ? { cause } : undefined);
    this.code = code;
    if (props !== undefined) {
      for (const k of Object.keys(props)) if (k !== 'cause') this[k] = props[k];
    }
  }
}
Object.defineProperty(SeawallError.prototype, 'name', { value: 'SeawallError', writable: true });
Object.defineProperty(SeawallError.prototype, BRAND, { value: true });

/**
 * Whether `e` was thrown by seawall (any copy of the package), optionally with
 * the given `code`.
 */
function isSeawallError(e, code) {
  return e != null && typeof e === 'object' && e[BRAND] === true && (code === undefined || e.code === code);
}

function configError(field, problem) {
  return new SeawallError(codes.EINVALIDCONFIG, `invalid ${field}: ${problem}`, { field });
}

// Marks the reason a call context's signal aborts with when its deadline
// passes (lib/middleware): a wait cut short by it is that deadline's ETIMEDOUT,
// not the caller's EABORTED.
const DEADLINE_REASON = Symbol('seawall.deadlineReason');

/** An ETIMEDOUT for a call context's signal to abort with when its deadline passes. */
function deadlineReason(message, props) {
  const e = new SeawallError(codes.ETIMEDOUT, message, props);
  Object.defineProperty(e, DEADLINE_REASON, { value: true });
  return e;
}

/**
 * The error for an abort of the caller's signal during a wait of seawall's own
 * (the deadline's ETIMEDOUT itself when a call context's deadline aborted it).
 */
function abortedError(signal) {
  const reason = signal.reason;
  if (reason !== null && typeof reason === 'object' && reason[DEADLINE_REASON] === true) return reason;
  return new SeawallError(codes.EABORTED, 'the operation was aborted', { cause: signal.reason });
}

// The codes the native layer sets on what it throws (src/boundary.rs).
const NATIVE_CODES = new Set(constants.errorCodes);

/**
 * Turn an error thrown by the native addon into a SeawallError with the same
 * `code` (and `field`, for an invalid option), both set natively; anything
 * else (napi-rs's own argument errors) is EINTERNAL.
 */
function fromNative(e) {
  if (isSeawallError(e)) return e;
  const message = e && typeof e.message === 'string' ? e.message : String(e);
  if (e && NATIVE_CODES.has(e.code)) {
    const props = {};
    if (typeof e.field === 'string') props.field = e.field;
    if (typeof e.reason === 'string') props.reason = e.reason;
    return new SeawallError(e.code, message, Object.keys(props).length > 0 ? props : undefined);
  }
  return new SeawallError(codes.EINTERNAL, message, { cause: e });
}

/**
 * An error of the native layer while opening shared structure `what` named
 * `name`, as a SeawallError; a configuration mismatch says which options every
 * process must agree on (`agree`).
 */
function sharedOpenError(e, what, name, agree) {
  const err = fromNative(e);
  if (err.code !== codes.ESHAREDMISMATCH || name === undefined) return err;
  return new SeawallError(
    codes.ESHAREDMISMATCH,
    `shared ${what} '${name}' exists with another configuration: every process must give it the same ${agree} (${err.message})`,
    { shared: name },
  );
}

/**
 * A SeawallError for a refusal (an open breaker's, a full bulkhead's) with no
 * stack frames: a refusal is a policy's expected answer under load, made many
 * thousands of times a second, and capturing the stack is three quarters of
 * its cost (a refusal cost twice opossum's and cockatiel's). Its `stack` is
 * its first line; the caller's own frames are where it catches it.
 */
function refusal(code, message, props) {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    // Fields assigned at once (a refusal has no `cause`): cheaper than the
    // constructor's loop.
    return Object.assign(new SeawallError(code, message), props);
  } finally {
    Error.stackTraceLimit = limit;
  }
}

/**
 * Make `postMessage(obj)` (structured clone, e.g. to a worker_thread) throw a
 * SeawallError saying what to do instead, rather than a DataCloneError quoting
 * the source of an internal listener. A copy could not work anyway: the native
 * structure belongs to this thread. Structured clone reads an object's own
 * enumerable properties in order, integer keys first, so a throwing getter at
 * key 0 is met before anything else.
 */
function refuseCloning(obj, what) {
  Object.defineProperty(obj, 0, {
    enumerable: true,
    get() {
      throw new SeawallError(codes.ENOTSUPPORTED, `a ${what} cannot be copied to a worker_thread or another process: `
        + `create one there with the same { shared: name } option, and every thread and process shares one ${what}`);
    },
  });
}

module.exports = {
  SeawallError, isSeawallError, codes, configError, abortedError, deadlineReason, fromNative, sharedOpenError, refuseCloning, refusal,
};
