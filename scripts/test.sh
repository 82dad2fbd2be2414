#!/usr/bin/env bash
# Run every test of seawall. This is the command README.md names and .ci/run calls.
# Fails on the first failing step; prints a summary of steps run and skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

step() { printf '\n==> %s\n' "$*"; }
skipped=()

step "format and lints"
cargo fmt --all --check
cargo clippy --workspace --all-targets --locked -q -- -D warnings

step "unit, property, stress and example tests (every crate but the benches)"
cargo test --workspace --exclude seawall-benches --locked -q

step "conformance scenarios (conformance/cases and ../shared/cases)"
cargo run -q --locked -p seawall-conformance

step "loom models (RUSTFLAGS=--cfg loom, LOOM_MAX_PREEMPTIONS=2)"
LOOM_MAX_PREEMPTIONS=2 RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
  cargo test -q --release --locked -p seawall-loom-tests

step "loom models catch every deliberately broken variant"
bash scripts/loom-mutants.sh

step "embedded builds of seawall-core"
build_embedded() { # target, features
  if rustup target list --installed | grep -qx "$1"; then
    cargo build -q --locked -p seawall-core --target "$1" ${2:+--features "$2"}
    echo "built for $1 ${2:+(features: $2)}"
  else
    skipped+=("embedded build for $1: target not installed")
  fi
}
build_embedded thumbv7em-none-eabihf ""
build_embedded thumbv6m-none-eabi critical-section
build_embedded riscv32imc-unknown-none-elf single-core

step "gameday --quick (release): the chaos experiment over loopback HTTP; every check must hold"
cargo run -q --release --locked -p seawall-gameday -- --quick --out target/gameday-quick

step "benchmarks compile"
cargo check -q --locked -p seawall-benches --benches

printf '\nALL TESTS PASSED\n'
for s in "${skipped[@]+"${skipped[@]}"}"; do printf 'SKIPPED: %s\n' "$s"; done
