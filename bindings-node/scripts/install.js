#!/usr/bin/env node
'use strict';
// `npm install` hook: put the native addon where the generated loader
// (../index.js) looks for it, `seawall.<platform>.node` beside package.json.
//   - The packed tarball carries the prebuilt addon for linux-x64-gnu (the
//     napi-rs convention of one binary per platform): when it loads on this
//     machine nothing is built and Rust is not needed.
//   - Any other platform, or a prebuilt that does not load here (an older
//     glibc), builds from vendor/ (the core, host and addon crates copied there
//     by `npm pack`, see vendor.js) with cargo, in a temporary target folder
//     removed afterwards, so node_modules keeps only the addon.
//   - In the seawall repository the crate builds inside the workspace (shared
//     target/ and Cargo.lock).
// npm hides the output of install scripts, so a source build writes cargo's
// progress and its own lines to the terminal (/dev/tty) when there is one.
//
// Environment: SEAWALL_SKIP_BUILD=1 skips everything (an addon already in place
// is kept); SEAWALL_BUILD_FROM_SOURCE=1 builds even where a prebuilt addon
// loads; CARGO_TARGET_DIR is honoured (and then kept).

const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const pkg = path.resolve(__dirname, '..');

function platformArchAbi() {
  const { platform, arch } = process;
  if (platform === 'linux') {
    const report = typeof process.report?.getReport === 'function' ? process.report.getReport() : null;
    const glibc = report && report.header && report.header.glibcVersionRuntime;
    return `linux-${arch}-${glibc ? 'gnu' : 'musl'}`;
  }
  if (platform === 'darwin') return `darwin-${arch}`;
  if (platform === 'win32') return `win32-${arch}-msvc`;
  return `${platform}-${arch}`;
}

function libraryName() {
  if (process.platform === 'win32') return 'seawall_node.dll';
  if (process.platform === 'darwin') return 'libseawall_node.dylib';
  return 'libseawall_node.so';
}

/** Where the lines of a source build go: the terminal if npm hides stdout. */
function openOutput() {
  try {
    return fs.openSync('/dev/tty', 'w');
  } catch {
    return null;
  }
}

function say(out, line) {
  if (out === null) console.log(line);
  else fs.writeSync(out, `${line}\n`);
}

/** The error of loading the addon in a child process, or null when it loads. */
function loadError(addon) {
  const r = spawnSync(process.execPath, ['-e', `require(${JSON.stringify(addon)})`], { encoding: 'utf8' });
  if (r.status === 0) return null;
  const lines = (r.stderr || '').split('\n').filter((l) => /Error/.test(l));
  return lines[0] || `exit status ${r.status}`;
}

function cargoBuild(out, manifest, locked, targetDir) {
  // The host triple, given explicitly as `napi build` does, so both builds share
  // target/<triple>/release.
  const rustc = spawnSync('rustc', ['-vV'], { encoding: 'utf8' });
  const host = rustc.status === 0 ? (/^host: (\S+)$/m.exec(rustc.stdout) || [])[1] : undefined;
  const args = ['build', '--release', '--lib', '-p', 'seawall-node', '--manifest-path', manifest];
  if (host !== undefined) args.push('--target', host);
  if (locked) args.push('--locked');
  say(out, `seawall: cargo ${args.join(' ')}`);
  const env = targetDir === undefined ? process.env : { ...process.env, CARGO_TARGET_DIR: targetDir };
  const stdio = out === null ? 'inherit' : ['ignore', out, out];
  const r = spawnSync('cargo', args, { stdio, cwd: path.dirname(manifest), env });
  if (r.error) {
    say(out, `seawall: cannot run cargo (${r.error.message}): install Rust from https://rustup.rs, then run \`npm rebuild seawall\``);
    return null;
  }
  if (r.status !== 0) return null;
  const meta = spawnSync('cargo', ['metadata', '--format-version', '1', '--no-deps', '--manifest-path', manifest], {
    cwd: path.dirname(manifest),
    encoding: 'utf8',
    env,
    maxBuffer: 64 * 1024 * 1024,
  });
  if (meta.status !== 0) {
    say(out, meta.stderr);
    return null;
  }
  const dir = JSON.parse(meta.stdout).target_directory;
  return path.join(dir, ...(host !== undefined ? [host] : []), 'release', libraryName());
}

function place(built, dest) {
  fs.copyFileSync(built, `${dest}.tmp`);
  fs.renameSync(`${dest}.tmp`, dest);
}

function main() {
  const dest = path.join(pkg, `seawall.${platformArchAbi()}.node`);
  if (process.env.SEAWALL_SKIP_BUILD === '1') {
    console.log(`seawall: SEAWALL_SKIP_BUILD=1, not building (${fs.existsSync(dest) ? 'addon present' : 'no addon yet'})`);
    return 0;
  }
  const inRepo = fs.existsSync(path.join(pkg, '..', 'core', 'Cargo.toml')) && fs.existsSync(path.join(pkg, '..', 'Cargo.toml'));
  if (inRepo) {
    const built = cargoBuild(null, path.join(pkg, 'Cargo.toml'), true, undefined);
    if (built === null) return 1;
    place(built, dest);
    console.log(`seawall: built ${path.relative(process.cwd(), dest) || dest}`);
    return 0;
  }

  const fromSource = process.env.SEAWALL_BUILD_FROM_SOURCE === '1';
  let why = `no prebuilt addon for ${platformArchAbi()}`;
  if (fs.existsSync(dest) && !fromSource) {
    const error = loadError(dest);
    if (error === null) {
      console.log(`seawall: using the prebuilt addon ${path.basename(dest)}`);
      return 0;
    }
    why = `the prebuilt addon ${path.basename(dest)} does not load here (${error})`;
  } else if (fromSource) {
    why = 'SEAWALL_BUILD_FROM_SOURCE=1';
  }

  const out = openOutput();
  const manifest = path.join(pkg, 'vendor', 'bindings-node', 'Cargo.toml');
  if (!fs.existsSync(manifest)) {
    say(out, `seawall: ${why} and no Rust sources to build one from (vendor/ is missing): reinstall the package from its npm tarball`);
    return 1;
  }
  say(out, `seawall: ${why}: building it from source with cargo (needs Rust; a few minutes on 2 cores)`);
  const started = process.hrtime.bigint();
  const targetDir = process.env.CARGO_TARGET_DIR || fs.mkdtempSync(path.join(os.tmpdir(), 'seawall-cargo-'));
  try {
    // The copied lock lists the whole workspace; cargo trims it, so not --locked.
    const built = cargoBuild(out, manifest, false, targetDir);
    if (built === null) return 1;
    place(built, dest);
    // The release profile keeps line tables, several MB that an installed
    // addon does not need; where `strip` is missing the addon just stays larger.
    if (process.platform !== 'win32') spawnSync('strip', ['-S', dest], { stdio: 'ignore' });
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    say(out, `seawall: built ${path.basename(dest)} from source in ${seconds.toFixed(0)} s`);
    return 0;
  } finally {
    if (!process.env.CARGO_TARGET_DIR) fs.rmSync(targetDir, { recursive: true, force: true });
    if (out !== null) fs.closeSync(out);
  }
}

process.exitCode = main();
