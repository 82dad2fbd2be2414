#!/usr/bin/env bash
# The Python package's tests (issue 6), run by scripts/test.sh:
#   a fresh venv (target/python-venv), the pinned tools of
#   bindings-python/requirements-test.txt, one `pip install` of the package
#   (release build, sharing target/ with the rest of the workspace), then the
#   conformance scenarios, pytest (forms, classification, cancellation,
#   bulkhead, policies, multiprocess shared breaker, Prometheus, mypy --strict,
#   stubtest) and a smoke run of the benchmark script.
# Exit 3 (after saying so loudly) when the venv or its tools cannot be
# installed; any test failure exits non-zero.
set -euo pipefail
cd "$(dirname "$0")/.."

PY="${SEAWALL_PYTHON:-python3}"
VENV="$PWD/target/python-venv"
warn() { printf '\n!!! PYTHON TESTS: %s\n\n' "$*" >&2; }

"$PY" -m venv --clear "$VENV" || { warn "could not create a venv with $PY"; exit 3; }
export PATH="$VENV/bin:$PATH"
pip install -q -r bindings-python/requirements-test.txt \
  || { warn "pip could not install bindings-python/requirements-test.txt"; exit 3; }
# maturin (from the pinned requirements) builds the wheel: no build isolation,
# so the one release build reuses target/ and nothing is fetched twice.
pip install -q --no-build-isolation ./bindings-python

echo "--- conformance scenarios through the Python API"
python bindings-python/tests/conformance_runner.py

echo "--- pytest"
(cd bindings-python && python -m pytest -q -p no:cacheprovider tests)

echo "--- benchmark script runs (a smoke run; the numbers of a real run are in README.md)"
python benches/python/bench_overhead.py --quick >/dev/null
