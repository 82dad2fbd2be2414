'use strict';
// The second argument of every policy's execute(fn, options): undefined, the
// options object `{ signal, deadline, priority, key }`, or an AbortSignal given
// bare (cockatiel's execute(fn, signal)). One reading for every policy, so no
// policy ignores a signal another honours, and one error (EINVALIDCONFIG naming
// the argument) for anything else. A signal or deadline left out comes from the
// ambient call context (lib/context.js), when there is one.

const { configError } = require('./errors');
const { checkSignal } = require('./abort');
const { checkDeadline } = require('./deadline');
const { callContext } = require('./context');

const NONE = Object.freeze({ signal: undefined, deadline: undefined, priority: undefined, key: undefined });

function isSignal(o) {
  return typeof o.aborted === 'boolean' && typeof o.addEventListener === 'function' && typeof o.removeEventListener === 'function';
}

/**
 * `{ signal, deadline, priority, key }` of execute's `options`, checked; throws
 * EINVALIDCONFIG naming `fn`, `options`, `signal` or `deadline`.
 */
function callOptions(fn, options) {
  const ambient = callContext();
  return ambient === undefined ? ownOptions(fn, options) : withAmbient(ownOptions(fn, options), ambient);
}

/** What `options` itself says. */
function ownOptions(fn, options) {
  if (typeof fn !== 'function') throw configError('fn', 'must be a function');
  if (options === undefined || options === null) return NONE;
  if (typeof options !== 'object') {
    throw configError('options', `must be an object ({ signal, deadline, ... }) or an AbortSignal, not ${typeof options}`);
  }
  if (isSignal(options)) return { signal: options, deadline: undefined, priority: undefined, key: undefined };
  return {
    signal: checkSignal(options.signal, configError),
    deadline: checkDeadline(options.deadline),
    priority: options.priority,
    key: options.key,
  };
}

/** callOptions inside a call context: its signal and deadline fill in what `options` leaves out. */
function withAmbient(own, ambient) {
  if (own.signal !== undefined && own.deadline !== undefined) return own;
  return {
    signal: own.signal !== undefined ? own.signal : ambient.signal,
    deadline: own.deadline !== undefined ? own.deadline : ambient.deadline,
    priority: own.priority,
    key: own.key,
  };
}

module.exports = { callOptions };
