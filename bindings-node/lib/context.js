'use strict';
// The ambient call context: `{ signal, deadline }` that every policy's execute
// takes when its own options leave them out, carried by AsyncLocalStorage
// across awaits, timers and callbacks started inside `withCallContext`. The
// framework middleware runs each request's handler in one, so a deadline from a
// request header and the abort of a client that went away reach every seawall
// policy inside the handler without being passed by hand.
//
// Until the first `withCallContext` no store is ever read: policies pay nothing
// for a feature they do not use.

const { AsyncLocalStorage } = require('node:async_hooks');
const { configError } = require('./errors');
const { checkSignal } = require('./abort');
const { checkDeadline } = require('./deadline');

const storage = new AsyncLocalStorage();
let used = false;

/**
 * Run `fn()` with `{ signal, deadline }` as the default of every policy's
 * execute options inside it (an option given to execute wins over the
 * ambient one of the same name); returns what `fn` returns.
 */
function withCallContext(context, fn) {
  if (context === null || typeof context !== 'object') throw configError('context', 'must be an object ({ signal, deadline })');
  if (typeof fn !== 'function') throw configError('fn', 'must be a function');
  const ctx = Object.freeze({ signal: checkSignal(context.signal, configError), deadline: checkDeadline(context.deadline) });
  used = true;
  return storage.run(ctx, fn);
}

/** The ambient `{ signal, deadline }`, or undefined outside any withCallContext. */
function callContext() {
  return used ? storage.getStore() : undefined;
}

module.exports = { withCallContext, callContext };
