'use strict';
// Test mode for retries (stamina's set_testing): a test suite makes every retry
// skip its sleep, and may cap the attempts of every policy, without touching
// the policies the code under test builds. Process-wide, off by default.

const { configError } = require('./errors');
const { isPlainObject, only, number } = require('./config');

const settings = { sleep: true, attempts: undefined };

/**
 * `setTesting(true)`: retries do not sleep (the delay is still decided and
 * reported to `onRetry`); `setTesting({ sleep, attempts })`: also cap every
 * retry policy at `attempts` (a whole number ≥ 1); `setTesting(false)`: back to
 * normal. Returns the settings it replaced, to restore.
 */
function setTesting(mode) {
  const before = { sleep: settings.sleep, attempts: settings.attempts };
  if (mode === true || mode === false) {
    settings.sleep = !mode;
    settings.attempts = undefined;
    return before;
  }
  if (!isPlainObject(mode)) throw configError('testing', 'must be true, false or { sleep, attempts }');
  only(mode, ['sleep', 'attempts'], 'testing');
  if (mode.sleep !== undefined && typeof mode.sleep !== 'boolean') throw configError('testing.sleep', 'must be a boolean');
  const attempts = number(mode, 'attempts', 'testing.attempts', { min: 1, integer: true, max: 2 ** 32 - 1 });
  settings.sleep = mode.sleep === undefined ? false : mode.sleep;
  settings.attempts = attempts;
  return before;
}

module.exports = { setTesting, settings };
