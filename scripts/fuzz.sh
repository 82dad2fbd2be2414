#!/usr/bin/env bash
# Fuzz the C ABI for a bounded time: `cargo fuzz` (nightly) on ffi-c/fuzz's target
# c_api, which feeds arbitrary configurations and operation sequences through the
# exported functions and checks every status and invariant.
#   scripts/fuzz.sh [SECONDS]   (default $SEAWALL_FUZZ_SECONDS, else 60)
# Exit 3 when the nightly toolchain or cargo-fuzz is missing (scripts/setup.sh
# installs both), so the caller can report the run as skipped; 1 on a finding
# (the crashing input is kept under ffi-c/fuzz/artifacts/).
# Inputs that once found a bug are committed under ffi-c/fuzz/regressions/c_api/
# and run first, every time, as part of the corpus.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-${SEAWALL_FUZZ_SECONDS:-60}}

if ! rustup run nightly rustc --version >/dev/null 2>&1; then
  echo "!!! no nightly toolchain: cannot fuzz (scripts/setup.sh installs it)" >&2
  exit 3
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "!!! cargo-fuzz is not installed: cannot fuzz (scripts/setup.sh installs it)" >&2
  exit 3
fi

cd ffi-c/fuzz
# cargo fuzz has no --locked: make sure the committed lock file needs no change.
cargo +nightly metadata --locked --format-version 1 >/dev/null
log=$(mktemp)
mkdir -p corpus/c_api
if cargo +nightly fuzz run c_api corpus/c_api regressions/c_api -- -max_total_time="$secs" >"$log" 2>&1; then
  grep -E '^Done [0-9]+ runs' "$log" || tail -3 "$log"
  rm -f "$log"
else
  tail -60 "$log"
  # The input's dump can push the reason out of the tail: repeat it last.
  grep -m1 -A1 'panicked at' "$log" >&2 || true
  rm -f "$log"
  echo "fuzzing found a failure: the input is under ffi-c/fuzz/artifacts/c_api/" >&2
  exit 1
fi
