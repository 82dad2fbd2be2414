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

module.exports = { delay, deferred, rejection };
