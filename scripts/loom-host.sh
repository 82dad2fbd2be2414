#!/usr/bin/env bash
# loom models of seawall-host's own atomic protocols — the breaker's permit table
# (tests/loom_permits.rs) and the semaphore's holder table next to the core
# semaphore (tests/loom_holders.rs) — then each deliberately broken variant
# (`--cfg seawall_mutant="…"`) must make its model fail. Exits 1 on a failing
# model or a surviving mutant.
set -u
cd "$(dirname "$0")/.."
export LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-2}"
LOOM_FLAGS="--cfg loom"

RUSTFLAGS="$LOOM_FLAGS" CARGO_TARGET_DIR=target/loom \
  cargo test -q --release --locked -p seawall-host --test loom_permits --test loom_holders || exit 1

# mutant, test file, the model that must catch it
triples=(
  "permit_blind_release loom_permits a_permit_is_used_exactly_once"
  "permit_blind_claim loom_permits a_slot_goes_to_one_claimer"
  "permit_reclaim_any_generation loom_permits a_reclaim_never_takes_a_claim_in_progress"
  "holder_blind_release loom_holders a_semaphore_permit_is_released_exactly_once"
  "holder_blind_cancel loom_holders a_ticket_is_granted_or_cancelled_never_both"
  "holder_reclaim_blind loom_holders a_reclaim_and_a_release_free_a_holder_once"
  "holder_reclaim_any_generation loom_holders a_holder_reclaim_never_takes_a_claim_in_progress"
)
survived=0
for triple in "${triples[@]}"; do
  set -- $triple
  mutant=$1 file=$2 test=$3
  log=/tmp/seawall-host-mutant-$mutant.log
  if RUSTFLAGS="$LOOM_FLAGS --cfg seawall_mutant=\"$mutant\"" CARGO_TARGET_DIR=target/loom-mutant \
     cargo test -q --release --locked -p seawall-host --test "$file" -- --exact "$test" >"$log" 2>&1; then
    echo "SURVIVED $mutant: $test passed on the broken variant"
    survived=1
  elif ! grep -q "panicked at" "$log"; then
    # A mutant that does not build (or a model that never ran) proves nothing.
    echo "NOT RUN $mutant: no model failed (build error?); see $log"
    survived=1
  else
    why=$(grep -m1 -A1 "panicked at" "$log" | tr '\n' ' ' | head -c 200)
    echo "caught $mutant by $test: $why"
  fi
done
exit $survived
