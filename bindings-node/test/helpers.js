'use strict';
const { setTimeout: delay } = require('node:timers/promises');

/** A promise and its resolve / reject. */
function deferred() {
  let resolve;
  let reject;
  const promise = new Promise((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Await `p` and return the error it rejects with (fails if it resolves). */
async function rejection(p) {
  try {
    await p;
  } catch (e) {
    return e;
  }
  throw new Error('expected a rejection');
}

/**
 * The next IPC message `{ step }` from child process `w`; rejects when it
 * answers `{ step, error }` or exits first.
 */
function reply(w, step) {
  return new Promise((resolve, reject) => {
    const onMessage = (m) => {
      if (m.step !== step) return;
      w.off('message', onMessage);
      w.off('exit', onExit);
      if (m.error !== undefined) reject(new Error(`worker ${step}: ${m.error}`));
      else resolve(m);
    };
    const onExit = (code) => reject(new Error(`worker exited (${code}) before ${step}`));
    w.on('message', onMessage);
    w.once('exit', onExit);
  });
}

/** Send `{ step, ...args }` to child process `w` and wait for its answer. */
function ask(w, step, args = {}) {
  const r = reply(w, step);
  w.send({ step, ...args });
  return r;
}

/**
 * Most intervals `[start, end]` open at one instant. An interval that ends
 * where another starts does not overlap it (each was measured inside its
 * permit, so the permits overlapped at least as much as the intervals).
 */
function peakOverlap(intervals) {
  const events = [];
  for (const [s, e] of intervals) events.push([s, 1], [e, -1]);
  events.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let open = 0;
  let peak = 0;
  for (const [, d] of events) {
    open += d;
    peak = Math.max(peak, open);
  }
  return peak;
}

module.exports = { delay, deferred, rejection, reply, ask, peakOverlap };
