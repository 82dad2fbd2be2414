#!/usr/bin/env bash
# Fuzz the C ABI for a bounded time: `cargo fuzz` (nightly) on ffi-c/fuzz's targets
# c_api, which feeds arbitrary configurations and operation sequences through the
# exported functions and checks every status and invariant (two thirds of the
# time), and corrupted_regions, which runs calls over arbitrary shared region
# images and fails on a caught panic or a call that does not return within its
# bound (one third; libFuzzer's -timeout catches a call that never returns).
#   scripts/fuzz.sh [SECONDS]   (default $SEAWALL_FUZZ_SECONDS, else 60, in total)
# Exit 3 when the nightly toolchain or cargo-fuzz is missing (scripts/setup.sh
# installs both), so the caller can report the run as skipped; 1 on a finding
# (the crashing input is kept under ffi-c/fuzz/artifacts/).
# Inputs that once found a bug are committed under ffi-c/fuzz/regressions/<target>/
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
# run TARGET SECONDS [LIBFUZZER OPTIONS...]
run() {
  local target=$1 time=$2 log
  shift 2
  log=$(mktemp)
  mkdir -p "corpus/$target" "regressions/$target"
  if cargo +nightly fuzz run "$target" "corpus/$target" "regressions/$target" -- \
    -max_total_time="$time" "$@" >"$log" 2>&1; then
    echo "$target: $(grep -E '^Done [0-9]+ runs' "$log" || tail -3 "$log")"
    rm -f "$log"
  else
    tail -60 "$log"
    # The input's dump can push the reason out of the tail: repeat it last.
    grep -m1 -A1 'panicked at' "$log" >&2 || true
    rm -f "$log"
    echo "fuzzing found a failure: the input is under ffi-c/fuzz/artifacts/$target/" >&2
    exit 1
  fi
}
third=$(((secs + 2) / 3))
run c_api $((secs - third > 0 ? secs - third : 1))
# A bounded retry loop gives up within milliseconds; 10 s without an answer is a hang.
run corrupted_regions "$third" -timeout=10
