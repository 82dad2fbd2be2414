#!/usr/bin/env node
'use strict';
// `npm pack` hook: make the tarball buildable on its own. The addon's crate
// depends on the core and host crates by path (../core, ../host), which a
// tarball does not carry, so this copies a minimal workspace into vendor/:
//   vendor/Cargo.toml      the repository's workspace settings, these 3 members
//   vendor/Cargo.lock      the repository's lock (cargo drops the unused entries)
//   vendor/core/, vendor/host/, vendor/bindings-node/   their manifests and src
// so the relative paths of bindings-node/Cargo.toml resolve unchanged.
// `--clean` (postpack) removes vendor/ again.

const fs = require('node:fs');
const path = require('node:path');

const pkg = path.resolve(__dirname, '..');
const repo = path.resolve(pkg, '..');
const out = path.join(pkg, 'vendor');

function copy(from, to) {
  fs.cpSync(from, to, { recursive: true, filter: (src) => !/[\\/](target|node_modules|fuzz)([\\/]|$)/.test(src) });
}

function main() {
  fs.rmSync(out, { recursive: true, force: true });
  if (process.argv.includes('--clean')) return;
  if (!fs.existsSync(path.join(repo, 'core', 'Cargo.toml'))) {
    throw new Error('vendor.js runs in the seawall repository (bindings-node/ next to core/)');
  }
  fs.mkdirSync(out, { recursive: true });
  for (const crate of ['core', 'host']) {
    fs.mkdirSync(path.join(out, crate));
    for (const f of ['Cargo.toml', 'build.rs', 'src']) {
      const src = path.join(repo, crate, f);
      if (fs.existsSync(src)) copy(src, path.join(out, crate, f));
    }
  }
  fs.mkdirSync(path.join(out, 'bindings-node'));
  for (const f of ['Cargo.toml', 'build.rs', 'src']) copy(path.join(pkg, f), path.join(out, 'bindings-node', f));
  // host's dev-dependencies and test targets are not needed (and not copied).
  const host = path.join(out, 'host', 'Cargo.toml');
  let manifest = fs.readFileSync(host, 'utf8');
  manifest = manifest.replace(/\n\[dev-dependencies\][\s\S]*?(?=\n\[lints\])/, '\n');
  fs.writeFileSync(host, manifest);
  let ws = fs.readFileSync(path.join(repo, 'Cargo.toml'), 'utf8');
  ws = ws.replace(/members = \[[^\]]*\]/, 'members = ["core", "host", "bindings-node"]');
  ws = ws.replace(/\nexclude = \[[^\]]*\]/, '');
  fs.writeFileSync(path.join(out, 'Cargo.toml'), ws);
  fs.copyFileSync(path.join(repo, 'Cargo.lock'), path.join(out, 'Cargo.lock'));
}

main();
