#!/usr/bin/env bash
# Install what the tests need beyond a stock machine (Rust stable, Python 3.11,
# Node 20, gcc, valgrind). Each step that fails says so loudly and the rest go on;
# the test script then skips only what truly depends on it.
set -u
cd "$(dirname "$0")/.."

warn() { printf '\n!!! SETUP: %s\n\n' "$*" >&2; }

# Embedded targets for the no_std builds of seawall-core.
for t in thumbv7em-none-eabihf thumbv6m-none-eabi riscv32imc-unknown-none-elf; do
  rustup target list --installed 2>/dev/null | grep -qx "$t" \
    || rustup target add "$t" >/dev/null 2>&1 \
    || warn "rustup target add $t failed: the embedded build for $t will be skipped"
done

# C ABI: the pinned cbindgen (header check), valgrind (C tests), and the nightly
# toolchain with cargo-fuzz (fuzzing). Each missing piece skips only its own step.
bash scripts/gen-header.sh --install >/dev/null \
  || warn "cbindgen could not be installed: the include/seawall.h check will be skipped"
command -v valgrind >/dev/null \
  || (apt-get install -y -q valgrind >/dev/null 2>&1 || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q valgrind >/dev/null 2>&1; }) \
  || warn "valgrind could not be installed: the C tests will run without it"
# The C package test builds the README's examples against the installed tarball
# with pkg-config and with CMake's find_package.
for tool in pkg-config:pkgconf cmake:cmake; do
  command -v "${tool%%:*}" >/dev/null \
    || (apt-get install -y -q "${tool#*:}" >/dev/null 2>&1 || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q "${tool#*:}" >/dev/null 2>&1; }) \
    || warn "${tool#*:} could not be installed: the C package tests will be skipped"
done
CARGO_FUZZ_VERSION=0.13.2
if rustup run nightly rustc --version >/dev/null 2>&1 \
  || rustup toolchain install nightly --profile minimal >/dev/null 2>&1; then
  [ "$(cargo fuzz --version 2>/dev/null)" = "cargo-fuzz $CARGO_FUZZ_VERSION" ] \
    || cargo install --locked --quiet --version "$CARGO_FUZZ_VERSION" cargo-fuzz >/dev/null 2>&1 \
    || warn "cargo install cargo-fuzz $CARGO_FUZZ_VERSION failed: fuzzing will be skipped"
else
  warn "no nightly toolchain and rustup could not install one: fuzzing will be skipped"
fi

# Node package: its dev tools (napi-rs CLI, TypeScript, prom-client) and the peers
# the Node benchmark compares against, from the committed lockfiles. Scripts are
# not run here: scripts/test-node.sh builds the addon itself, so a build error is
# a test failure, not a skipped install.
if command -v npm >/dev/null; then
  for d in bindings-node benches/node; do
    (cd "$d" && npm ci --ignore-scripts --no-audit --no-fund >/dev/null 2>&1) \
      || warn "npm ci in $d failed: the Node tests that need it will be skipped"
  done
else
  warn "npm not installed: the Node package tests will be skipped"
fi
