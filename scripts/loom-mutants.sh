#!/usr/bin/env bash
# A model that cannot fail is not a model: rebuild seawall-core with each
# deliberately broken variant (`--cfg seawall_mutant="…"`) and check that the loom
# model written for that protocol fails. Exits 1 if any mutant survives.
set -u
cd "$(dirname "$0")/.."
export LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-2}"
# mutant → the test that must catch it
pairs=(
  "probe_limit a_probes_in_flight_never_exceed_half_open_max_calls"
  "double_half_open b_one_half_open_move_per_opening"
  "stale_permit c_stale_permit_never_changes_state"
  "bucket_reset d_bucket_rotation_loses_no_record_of_the_new_epoch"
  "count_stale_claim d_count_window_generation_change_is_exact"
  "count_blind_commit count_window_claims_commit_exactly_once"
  "open_until_split e_open_until_belongs_to_its_opening"
  "double_consume f_every_permit_consumed_once"
)
survived=0
for pair in "${pairs[@]}"; do
  set -- $pair
  mutant=$1 test=$2
  if RUSTFLAGS="--cfg loom --cfg seawall_mutant=\"$mutant\"" CARGO_TARGET_DIR=target/loom-mutant \
     cargo test -q --release --locked -p seawall-loom-tests -- --exact "$test" >/tmp/seawall-mutant-$mutant.log 2>&1; then
    echo "SURVIVED $mutant: $test passed on the broken variant"
    survived=1
  else
    why=$(grep -m1 -E "panicked at|assertion" /tmp/seawall-mutant-$mutant.log | head -c 200)
    echo "caught $mutant by $test: $why"
  fi
done
exit $survived
