'use strict';
// The second argument of every policy's execute(fn, options): undefined, the
// options object `{ signal, deadline, priority, key }`, or an AbortSignal given
// bare (cockatiel's execute(fn, signal)). One reading for every policy, so no
// policy ignores a signal another honours, and one error (EINVALIDCONFIG naming
// the argument) for anything else.

const { configError } = require('./errors');
const { checkSignal } = require('./abort');
const { checkDeadline } = require('./deadline');

const NONE = Object.freeze({ signal: undefined, deadline: undefined, priority: undefined, key: undefined });

function isSignal(o) {
  return typeof o.aborted === 'boolean' && typeof o.addEventListener === 'function' && typeof o.removeEventListener === 'function';
}

/**
 * `{ signal, deadline, priority, key }` of execute's `options`, checked; throws
 * EINVALIDCONFIG naming `fn`, `options`, `signal` or `deadline`.
 */
function callOptions(fn, options) {
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

module.exports = { callOptions };
