#!/usr/bin/env bash
# loom models of seawall-host's own atomic protocols: the breaker's permit table
# (host/tests/loom_permits.rs), the breaker's steps and reclaim next to the core
# breaker (host/tests/loom_breaker_cell.rs) and the semaphore's holder table next
# to the core semaphore (host/tests/loom_holders.rs). Their mutants are run with
# the core's by scripts/loom-mutants.sh (all listed in loom-tests/mutants.txt).
set -u
cd "$(dirname "$0")/.."
export LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-2}"
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
  cargo test -q --release --locked -p seawall-host --test loom_permits --test loom_holders \
  --test loom_breaker_cell
