#!/usr/bin/env bash
# A model that cannot fail is not a model: rebuild the crate with each
# deliberately broken variant listed in loom-tests/mutants.txt
# (`--cfg seawall_mutant="…"`) and check that the loom model written for that
# protocol fails with an assertion. Exits 1 if any mutant survives or proves
# nothing (a build error, a model that never ran).
#   bash scripts/loom-mutants.sh            every mutant
#   bash scripts/loom-mutants.sh sem_       only the mutants whose name starts so
set -u
cd "$(dirname "$0")/.."
export LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-2}"
only="${1:-}"
survived=0
ran=0
while read -r mutant crate file test; do
  [[ -z "$mutant" || "$mutant" == \#* ]] && continue
  [[ "$mutant" == "$only"* ]] || continue
  # The core's models live in their own crate; the host's beside its tables.
  package=$crate
  [ "$crate" = seawall-core ] && package=seawall-loom-tests
  log=/tmp/seawall-mutant-$mutant.log
  ran=$((ran + 1))
  if RUSTFLAGS="--cfg loom --cfg seawall_mutant=\"$mutant\"" CARGO_TARGET_DIR=target/loom-mutant \
     cargo test -q --release --locked -p "$package" --test "$file" -- --exact "$test" >"$log" 2>&1; then
    echo "SURVIVED $mutant: $test passed on the broken variant"
    survived=1
  elif grep -q "panicked at" "$log"; then
    why=$(grep -m1 -A1 "panicked at" "$log" | tr '\n' ' ' | head -c 200)
    echo "caught $mutant by $test: $why"
  else
    echo "ERROR $mutant: no model assertion failed (build error?); see $log"
    survived=1
  fi
done < loom-tests/mutants.txt
[ "$ran" -gt 0 ] || { echo "no mutant matches '$only'"; exit 1; }
exit $survived
