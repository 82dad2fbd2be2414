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
