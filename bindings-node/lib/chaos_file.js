'use strict';
// Chaos rules from a JSON file (DESIGN §11), re-read when it changes:
//   { "inventory": { "enabled": true, "latencyMs": 2000 },
//     "payments":  { "enabled": true, "failureRate": 0.5 } }
// Each key names a chaos policy of the process registry. The whole file is
// checked before anything changes, so a bad file (unreadable, not JSON, a bad
// field) keeps every previous rule and is reported; a policy the file named
// before and no longer names is turned off.
//
// Watching: fs.watch on the file's folder, not the file, because editors and
// config tools replace a file by renaming a new one over it, which a watch on
// the old inode would never see. Changes are debounced (a write often comes as
// several events), and the watcher does not keep the process alive.

const fs = require('node:fs');
const path = require('node:path');
const { SeawallError, codes, configError } = require('./errors');
const { isPlainObject, only, number } = require('./config');
const { SafeEmitter, disposable } = require('./hooks');
const { chaos, checkRules } = require('./chaos');

/** The rules of `text` (the file's content) by name, all checked; throws EINVALIDCONFIG. */
function parseRules(text, file) {
  let data;
  try {
    data = JSON.parse(text);
  } catch (e) {
    throw new SeawallError(codes.EINVALIDCONFIG, `invalid chaos rules file ${file}: not JSON (${e.message})`, { field: 'file', path: file, cause: e });
  }
  if (!isPlainObject(data)) throw configError('file', `${file} must hold an object of rules by dependency name`);
  const rules = new Map();
  for (const [name, r] of Object.entries(data)) {
    if (name === '') throw configError('file', `${file} names a dependency ''`);
    rules.set(name, checkRules(r, name));
  }
  return rules;
}

class ChaosFile extends SafeEmitter {
  constructor(file, options) {
    super();
    if (typeof file !== 'string' || file === '') throw configError('path', 'must be a file path');
    if (!isPlainObject(options)) throw configError('options', 'must be an object ({ watch, debounceMs })');
    only(options, ['watch', 'debounceMs']);
    if (options.watch !== undefined && typeof options.watch !== 'boolean') throw configError('watch', 'must be true or false');
    const debounceMs = number(options, 'debounceMs', 'debounceMs');
    this.path = path.resolve(file);
    this._debounceMs = debounceMs === undefined ? 50 : debounceMs;
    this._names = new Set();
    this._timer = undefined;
    this._watcher = undefined;
    this.reload();
    if (options.watch !== false) this._watch();
  }

  _owner() {
    return `chaos rules file ${this.path}`;
  }

  /** The dependency names the file holds now. */
  get names() {
    return [...this._names];
  }

  /**
   * Read the file again now and apply it; returns the names it holds. A bad
   * file throws EINVALIDCONFIG (with `field` and `path`) and changes nothing.
   */
  reload() {
    let text;
    try {
      text = fs.readFileSync(this.path, 'utf8');
    } catch (e) {
      throw new SeawallError(codes.EINVALIDCONFIG, `cannot read chaos rules file ${this.path}: ${e.message}`, { field: 'file', path: this.path, cause: e });
    }
    const rules = parseRules(text, this.path);
    for (const name of this._names) if (!rules.has(name)) chaos(name).set(undefined);
    for (const [name, r] of rules) chaos(name)._rules = r;
    this._names = new Set(rules.keys());
    this.emit('reload', { names: this.names });
    return this.names;
  }

  /** Listen to each reload that applied the file (`{ names }`); returns a Disposable. */
  onReload(listener) {
    return disposable(this, 'reload', listener);
  }

  /**
   * Listen to each change of the file that could not be applied (`{ error }`,
   * the previous rules stay); returns a Disposable. With no listener such an
   * error goes to Node's warning channel.
   */
  onError(listener) {
    return disposable(this, 'reloadError', listener);
  }

  _watch() {
    const base = path.basename(this.path);
    try {
      this._watcher = fs.watch(path.dirname(this.path), { persistent: false }, (event, name) => {
        if (name === null || name === base) this._changed();
      });
    } catch (e) {
      throw new SeawallError(codes.EINVALIDCONFIG, `cannot watch chaos rules file ${this.path}: ${e.message}`, { field: 'file', path: this.path, cause: e });
    }
    this._watcher.on('error', (e) => this._failed(e));
  }

  _changed() {
    if (this._timer !== undefined) clearTimeout(this._timer);
    this._timer = setTimeout(() => {
      this._timer = undefined;
      try {
        this.reload();
      } catch (e) {
        this._failed(e);
      }
    }, this._debounceMs);
    this._timer.unref();
  }

  _failed(error) {
    if (this.listenerCount('reloadError') !== 0) {
      this.emit('reloadError', { error });
      return;
    }
    const warning = new Error(`${this._owner()} not applied (the previous rules stay): ${error.message}`, { cause: error });
    warning.name = 'SeawallChaosWarning';
    process.emitWarning(warning);
  }

  /** Stop watching (the rules in force stay). */
  close() {
    if (this._timer !== undefined) clearTimeout(this._timer);
    this._timer = undefined;
    if (this._watcher !== undefined) this._watcher.close();
    this._watcher = undefined;
  }
}

/**
 * Load chaos rules from the JSON file at `file` and (unless `watch: false`)
 * re-read it `debounceMs` (default 50) after it changes. Throws EINVALIDCONFIG
 * when the file cannot be read or is bad at the start.
 */
function loadChaosRules(file, options = {}) {
  return new ChaosFile(file, options);
}

module.exports = { ChaosFile, loadChaosRules, parseRules };
