#!/usr/bin/env node
'use strict';
// `npm install` hook: build the native addon from source with cargo and put it
// where the generated loader (../index.js) looks for it. In the seawall repository
// the crate builds inside the workspace (shared target/ and Cargo.lock); in a
// packed tarball it builds from vendor/ (the core and ffi crates copied there by
// `npm pack`, see vendor.js). Needs Rust (cargo) on the machine.
//
// Environment: SEAWALL_SKIP_BUILD=1 skips the build (an addon already in place
// is kept); CARGO_TARGET_DIR is honoured.

const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
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

function main() {
  const dest = path.join(pkg, `seawall.${platformArchAbi()}.node`);
  if (process.env.SEAWALL_SKIP_BUILD === '1') {
    console.log(`seawall: SEAWALL_SKIP_BUILD=1, not building (${fs.existsSync(dest) ? 'addon present' : 'no addon yet'})`);
    return 0;
  }
  const inRepo = fs.existsSync(path.join(pkg, '..', 'core', 'Cargo.toml')) && fs.existsSync(path.join(pkg, '..', 'Cargo.toml'));
  const vendored = path.join(pkg, 'vendor', 'Cargo.toml');
  let manifest;
  let locked;
  if (inRepo) {
    manifest = path.join(pkg, 'Cargo.toml');
    locked = true;
  } else if (fs.existsSync(vendored)) {
    manifest = path.join(pkg, 'vendor', 'bindings-node', 'Cargo.toml');
    locked = false; // the copied lock lists the whole workspace; cargo trims it
  } else {
    console.error('seawall: no Rust sources to build from (neither ../core nor vendor/)');
    return 1;
  }
  // The host triple, given explicitly as `napi build` does, so both builds share
  // target/<triple>/release.
  const rustc = spawnSync('rustc', ['-vV'], { encoding: 'utf8' });
  const host = rustc.status === 0 ? (/^host: (\S+)$/m.exec(rustc.stdout) || [])[1] : undefined;
  const args = ['build', '--release', '--lib', '-p', 'seawall-node', '--manifest-path', manifest];
  if (host !== undefined) args.push('--target', host);
  if (locked) args.push('--locked');
  console.log(`seawall: cargo ${args.join(' ')}`);
  const r = spawnSync('cargo', args, { stdio: 'inherit', cwd: path.dirname(manifest) });
  if (r.error) {
    console.error(`seawall: cannot run cargo (${r.error.message}); install Rust from https://rustup.rs and reinstall`);
    return 1;
  }
  if (r.status !== 0) return r.status || 1;
  const meta = spawnSync('cargo', ['metadata', '--format-version', '1', '--no-deps', '--manifest-path', manifest], {
    cwd: path.dirname(manifest),
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  if (meta.status !== 0) {
    console.error(meta.stderr);
    return 1;
  }
  const targetDir = JSON.parse(meta.stdout).target_directory;
  const built = path.join(targetDir, ...(host !== undefined ? [host] : []), 'release', libraryName());
  fs.copyFileSync(built, `${dest}.tmp`);
  fs.renameSync(`${dest}.tmp`, dest);
  console.log(`seawall: built ${path.relative(process.cwd(), dest) || dest}`);
  return 0;
}

process.exitCode = main();
