'use strict';
// The native addon (generated loader ../index.js) and its hot-path functions.
const binding = require('../index.js');

/** Raw Node-API callbacks for the hot path (see src/fast.rs). */
const fast = binding.fastFunctions();

module.exports = { binding, fast };
