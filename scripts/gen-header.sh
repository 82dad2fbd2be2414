#!/usr/bin/env bash
# Generate include/seawall.h from ffi-c/src/capi with the pinned cbindgen.
#   scripts/gen-header.sh           write include/seawall.h
#   scripts/gen-header.sh --check   regenerate into a temp file; fail on any difference
#   scripts/gen-header.sh --install only make sure the pinned cbindgen is installed
# Installs the pinned cbindgen with `cargo install --locked` when it is missing or
# another version (exit 3 if that fails, so callers can tell "no tool" from "stale").
set -euo pipefail
cd "$(dirname "$0")/.."

CBINDGEN_VERSION=0.29.4
if [ "$(cbindgen --version 2>/dev/null)" != "cbindgen $CBINDGEN_VERSION" ]; then
  echo "installing cbindgen $CBINDGEN_VERSION" >&2
  cargo install --locked --quiet --version "$CBINDGEN_VERSION" cbindgen >&2 || {
    printf '\n!!! cargo install cbindgen %s failed: cannot generate include/seawall.h\n\n' "$CBINDGEN_VERSION" >&2
    exit 3
  }
fi

[ "${1:-}" = "--install" ] && exit 0

out="$PWD/include/seawall.h"
[ "${1:-}" = "--check" ] && out="$(mktemp)"
# cbindgen warns about `u64::MAX` while printing it as UINT64_MAX: keep its output quiet.
(cd ffi-c && cbindgen --quiet --config cbindgen.toml --crate seawall-ffi --output "$out" .)

if [ "${1:-}" = "--check" ]; then
  if ! diff -u include/seawall.h "$out"; then
    rm -f "$out"
    echo "include/seawall.h is stale: run scripts/gen-header.sh and commit it" >&2
    exit 1
  fi
  rm -f "$out"
  echo "include/seawall.h is up to date (cbindgen $CBINDGEN_VERSION)"
fi
