'use strict';
// The native addon (generated loader ../index.js), its hot-path functions and
// the numbers its encodings use.
const binding = require('../index.js');

/** Raw Node-API callbacks for the hot path (see src/fast.rs). */
const fast = binding.fastFunctions();

/**
 * The numbers that cross the boundary (permit and ticket codes, rejections,
 * poll results, error codes), from their one definition in src/boundary.rs.
 */
const constants = Object.freeze(binding.constants());

module.exports = { binding, fast, constants };
