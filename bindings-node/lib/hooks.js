'use strict';
// Listeners and hooks that cannot change a call (DESIGN §1): a listener that
// throws, or returns a promise that rejects, changes no result, no outcome, no
// state and no other listener's turn. Its error goes to Node's warning channel
// (`process.emitWarning`, a 'warning' event on `process`; printed by Node unless
// warnings are turned off), never to the caller.

const { EventEmitter } = require('node:events');

const disposeSymbol = Symbol.dispose || Symbol.for('nodejs.dispose');

/** Report `error`, thrown by listener `event` of `owner` (e.g. "circuit breaker 'db'"). */
function reportListenerError(owner, event, error) {
  const message = error instanceof Error ? error.message : String(error);
  const warning = new Error(`a '${event}' listener of ${owner} threw (the call goes on unchanged): ${message}`, { cause: error });
  warning.name = 'SeawallListenerWarning';
  process.emitWarning(warning);
}

/** Call `fn(...args)` on `self`; whatever it throws or rejects with is reported, never thrown. */
function callSafely(self, fn, args, owner, event) {
  let r;
  try {
    r = fn.apply(self, args);
  } catch (e) {
    reportListenerError(owner, event, e);
    return;
  }
  if (r !== null && typeof r === 'object' && typeof r.then === 'function') {
    r.then(undefined, (e) => reportListenerError(owner, event, e));
  }
}

/**
 * An EventEmitter whose listeners cannot change what emits: each one runs in
 * turn, and an error of one is reported (see above) while the others still
 * run. `error` events keep EventEmitter's own rules. Subclasses set `_owner()`.
 */
class SafeEmitter extends EventEmitter {
  emit(event, ...args) {
    if (event === 'error') return super.emit(event, ...args);
    if (this.listenerCount(event) === 0) return false;
    const owner = this._owner();
    for (const l of this.rawListeners(event)) callSafely(this, l, args, owner, event);
    return true;
  }

  _owner() {
    return this.constructor.name;
  }
}

/** A listener handle: `dispose()` (or `using`) removes the listener. */
function disposable(emitter, event, listener) {
  emitter.on(event, listener);
  const dispose = () => emitter.off(event, listener);
  return { dispose, [disposeSymbol]: dispose };
}

module.exports = { SafeEmitter, callSafely, reportListenerError, disposable };
