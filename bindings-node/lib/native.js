'use strict';
// The native addon (generated loader ../index.js), its hot-path functions and
// the numbers its encodings use.

/**
 * Loads the addon. The generated loader's own error blames an npm bug with
 * optional dependencies, which is not how this package ships its addon
 * (prebuilt inside the tarball, else built by the install script), so a
 * failed load says in one sentence what to do; napi-rs's errors stay in `cause`.
 */
function loadBinding() {
  try {
    return require('../index.js');
  } catch (error) {
    const where = `${process.platform}-${process.arch}`;
    const e = new Error(
      `seawall: the native addon for ${where} is missing or does not load; run \`npm rebuild seawall\` with Rust (https://rustup.rs) on the PATH to build it from source, or reinstall on linux-x64 with glibc 2.34 or later, where it comes prebuilt.`,
    );
    e.code = 'ERR_SEAWALL_NO_ADDON';
    e.cause = error;
    throw e;
  }
}

const binding = loadBinding();

/** Raw Node-API callbacks for the hot path (see src/fast.rs). */
const fast = binding.fastFunctions();

/**
 * The numbers that cross the boundary (permit and ticket codes, rejections,
 * poll results, error codes), from their one definition in src/boundary.rs.
 */
const constants = Object.freeze(binding.constants());

module.exports = { binding, fast, constants };
