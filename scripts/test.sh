#!/usr/bin/env bash
# Run every test of seawall. This is the command README.md names and .ci/run calls.
# Fails on the first failing step; a step that cannot run here is skipped and
# listed with its reason at the end (scripts/skips.sh). Under CI=true every
# skip, of a step or of a test inside one, fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/skips.sh
# A fresh list for this run, shared with the scripts it runs.
SEAWALL_SKIPS=$(mktemp "${TMPDIR:-/tmp}/seawall-skips.XXXXXX")
export SEAWALL_SKIPS
trap 'rm -f "$SEAWALL_SKIPS"' EXIT
bash scripts/setup.sh

step() { printf '\n==> %s\n' "$*"; }

step "scripts: the skip list of this run (scripts/test-skips.sh, fake steps)"
bash scripts/test-skips.sh

step "documentation: links and anchors, blocks marked as run, README length, docs/DESIGN.md = ../shared/DESIGN.md"
python3 scripts/check-docs.py

step "format and lints"
cargo fmt --all --check
cargo clippy --workspace --all-targets --locked -q -- -D warnings

step "unit, property, stress and example tests (every crate but the benches)"
cargo test --workspace --exclude seawall-benches --locked -q

step "conformance scenarios (conformance/cases and ../shared/cases)"
cargo run -q --locked -p seawall-conformance

step "C ABI: include/seawall.h is exactly what the pinned cbindgen generates"
may_skip "header check: the pinned cbindgen could not be installed" bash scripts/gen-header.sh --check

step "C ABI: libseawall.a and libseawall.so (release, built once)"
cargo build -q --release --locked -p seawall-ffi

step "C ABI: conformance scenarios through the exported functions of libseawall.so"
SEAWALL_LIB="$PWD/target/release/libseawall.so" \
  cargo test -q --locked -p seawall-ffi --test conformance_c

step "C ABI: C99 and C++11 programs, valgrind, ASan+UBSan, multi-process"
command -v valgrind >/dev/null || skip "valgrind runs of the C tests: valgrind not installed"
bash scripts/test-c.sh

step "C package: the tarball of scripts/dist.sh unpacked to a prefix, built with pkg-config and CMake; scripts/install.sh"
may_skip "C package tests: pkg-config or cmake not installed" bash scripts/test-c-dist.sh

step "host: loom models of the permit table, the breaker cell and the holder table"
bash scripts/loom-host.sh

step "C ABI: fuzzing through the exported functions (cargo fuzz, bounded)"
may_skip "fuzzing: nightly toolchain or cargo-fuzz not installed" bash scripts/fuzz.sh "${SEAWALL_FUZZ_SECONDS:-60}"

step "lints of the loom build (RUSTFLAGS=--cfg loom)"
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
  cargo clippy -q --locked -p seawall-core -p seawall-loom-tests --tests -- -D warnings
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
  cargo clippy -q --locked -p seawall-host --lib --test loom_permits --test loom_holders \
  --test loom_breaker_cell -- -D warnings

step "loom models (RUSTFLAGS=--cfg loom, LOOM_MAX_PREEMPTIONS=2)"
LOOM_MAX_PREEMPTIONS=2 RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
  cargo test -q --release --locked -p seawall-loom-tests

step "loom models catch every deliberately broken variant (loom-tests/mutants.txt: core and host)"
bash scripts/loom-mutants.sh

step "embedded builds of seawall-core"
build_embedded() { # target, features
  if rustup target list --installed | grep -qx "$1"; then
    cargo build -q --locked -p seawall-core --target "$1" ${2:+--features "$2"}
    echo "built for $1 ${2:+(features: $2)}"
  else
    skip "embedded build for $1: target not installed"
  fi
}
build_embedded thumbv7em-none-eabihf ""
build_embedded thumbv6m-none-eabi critical-section
build_embedded riscv32imc-unknown-none-elf single-core

step "Python package: wheel and sdist (scripts/dist.sh), auditwheel, then with no Rust on PATH conformance, pytest, mypy --strict, stubtest (scripts/test-python.sh)"
may_skip "Python package tests: the venv or its pinned tools could not be installed" bash scripts/test-python.sh

step "Node package: addon, declarations, tsc, conformance, node --test, npm installs (the dist/ tarball with no Rust on PATH), example, benchmark"
may_skip "Node package tests: node/npm or their npm dependencies not installed" bash scripts/test-node.sh

step "gameday --quick (release): the chaos experiment over loopback HTTP; every check must hold"
cargo run -q --release --locked -p seawall-gameday -- --quick --out target/gameday-quick

# The same binary against the example services, through its fault-injecting proxy
# (scripts/gameday-target.sh; exit 3: the example's environment is missing).
for example in node python; do
  step "gameday --quick against the $example example service (--target, its breaker from /metrics); every check must hold"
  may_skip "gameday against the $example example: its environment (addon / venv) is missing" \
    bash scripts/gameday-target.sh "$example"
done

step "benchmarks compile"
cargo check -q --locked -p seawall-benches --benches

skips_report
