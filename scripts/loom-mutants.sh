#!/usr/bin/env bash
# A model that cannot fail is not a model: rebuild seawall-core with each
# deliberately broken variant (`--cfg seawall_mutant="…"`) and check that the loom
# model written for that protocol fails. Exits 1 if any mutant survives.
# `bash scripts/loom-mutants.sh sem_` checks only the mutants whose name starts
# with the given prefix.
set -u
cd "$(dirname "$0")/.."
export LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-2}"
# mutant → the test file (loom-tests/tests/<file>.rs) and the test that must catch it
pairs=(
  "probe_limit breaker a_probes_in_flight_never_exceed_half_open_max_calls"
  "double_half_open breaker b_one_half_open_move_per_opening"
  "stale_permit breaker c_stale_permit_never_changes_state"
  "bucket_reset windows d_bucket_rotation_loses_no_record_of_the_new_epoch"
  "count_stale_claim windows d_count_window_generation_change_is_exact"
  "count_blind_commit windows count_window_claims_commit_exactly_once"
  "time_stale_replace windows d_time_window_straggler_never_replaces_the_current_generation"
  "open_until_split breaker e_open_until_belongs_to_its_opening"
  "double_consume breaker f_every_permit_consumed_once"
  "budget_check_then_withdraw retry g_budget_racing_retries_never_overdraw"
  "budget_blind_archive retry h_budget_rotation_keeps_every_deposit"
  "throttle_lost_update retry i_throttle_racing_failures_and_successes_are_linearizable"
  "sem_admit_blind semaphore j_semaphore_active_never_exceeds_max"
  "sem_queue_unbounded semaphore k_semaphore_queued_never_exceeds_max_queue"
  "sem_cancel_blind semaphore l_semaphore_cancel_racing_hand_off_leaks_nothing"
  "sem_pool_unvalidated semaphore o_semaphore_hand_off_to_waiters_still_settling"
  "sem_settle_blind semaphore p_semaphore_no_waiter_stranded_with_a_free_permit"
  "sem_slot_kept semaphore q_semaphore_cancelled_slots_are_reused"
  "sem_grant_frees_slot semaphore r_semaphore_granted_slot_kept_until_acknowledged"
  "health_blind_rotation health n_health_rotation_loses_no_record_of_the_new_epoch"
  "rate_limiter_blind_store rate_limiter racing_takes_admit_exactly_the_burst"
)
only="${1:-}"
survived=0
for pair in "${pairs[@]}"; do
  set -- $pair
  mutant=$1 file=$2 test=$3
  [[ "$mutant" == "${only:-}"* ]] || continue
  if RUSTFLAGS="--cfg loom --cfg seawall_mutant=\"$mutant\"" CARGO_TARGET_DIR=target/loom-mutant \
     cargo test -q --release --locked -p seawall-loom-tests --test "$file" -- --exact "$test" >/tmp/seawall-mutant-$mutant.log 2>&1; then
    echo "SURVIVED $mutant: $test passed on the broken variant"
    survived=1
  elif grep -q "panicked at" /tmp/seawall-mutant-$mutant.log; then
    why=$(grep -m1 -E "panicked at|assertion" /tmp/seawall-mutant-$mutant.log | head -c 200)
    echo "caught $mutant by $test: $why"
  else
    # A mutant that fails to build, or a model that fails without an assertion,
    # proves nothing.
    echo "ERROR $mutant: no model assertion failed (see /tmp/seawall-mutant-$mutant.log)"
    survived=1
  fi
done
exit $survived
