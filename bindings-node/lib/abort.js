'use strict';
// AbortSignal plumbing that leaves nothing behind: every listener added to a
// caller's signal is removed when the operation it guards settles, so one signal
// can be reused for any number of calls (no MaxListenersExceededWarning).

/** Check that `signal` is an AbortSignal (or undefined). */
function checkSignal(signal, configError) {
  if (signal === undefined || signal === null) return undefined;
  if (typeof signal !== 'object' || typeof signal.aborted !== 'boolean' || typeof signal.addEventListener !== 'function') {
    throw configError('signal', 'must be an AbortSignal');
  }
  return signal;
}

/**
 * Call `onAbort` once if `signal` aborts; returns the function that removes the
 * listener (call it when the guarded operation settles).
 */
function listen(signal, onAbort) {
  if (signal === undefined) return noop;
  signal.addEventListener('abort', onAbort, { once: true });
  return () => signal.removeEventListener('abort', onAbort);
}

function noop() {}

module.exports = { checkSignal, listen, noop };
