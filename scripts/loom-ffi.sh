#!/usr/bin/env bash
# loom models of seawall-ffi's permit table, then each deliberately broken
# variant (`--cfg seawall_mutant="…"`) must make its model fail. Exits 1 on a
# failing model or a surviving mutant.
set -u
cd "$(dirname "$0")/.."
export LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-2}"
LOOM_FLAGS="--cfg loom"

RUSTFLAGS="$LOOM_FLAGS" CARGO_TARGET_DIR=target/loom \
  cargo test -q --release --locked -p seawall-ffi --test loom_permits || exit 1

pairs=(
  "permit_blind_release a_permit_is_used_exactly_once"
  "permit_blind_claim a_slot_goes_to_one_claimer"
  "permit_reclaim_any_generation a_reclaim_never_takes_a_claim_in_progress"
)
survived=0
for pair in "${pairs[@]}"; do
  set -- $pair
  mutant=$1 test=$2
  log=/tmp/seawall-ffi-mutant-$mutant.log
  if RUSTFLAGS="$LOOM_FLAGS --cfg seawall_mutant=\"$mutant\"" CARGO_TARGET_DIR=target/loom-mutant \
     cargo test -q --release --locked -p seawall-ffi --test loom_permits -- --exact "$test" >"$log" 2>&1; then
    echo "SURVIVED $mutant: $test passed on the broken variant"
    survived=1
  else
    why=$(grep -m1 -E "panicked at|assertion|one slot|both or neither" "$log" | head -c 200)
    echo "caught $mutant by $test: $why"
  fi
done
exit $survived
