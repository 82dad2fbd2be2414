#!/usr/bin/env bash
# The Python package's tests, run by scripts/test.sh:
#   a fresh venv (target/python-venv), the pinned tools of
#   bindings-python/requirements-test.txt, one `pip install` of the package
#   (release build, sharing target/ with the rest of the workspace), then the
#   conformance scenarios, the quick start of bindings-python/README.md
#   (its printed output compared with the guide's), pytest (forms, classification, cancellation,
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
# maturin (from the pinned requirements) builds the one abi3 wheel: no build
# isolation, so the release build reuses target/ and nothing is fetched twice.
WHEELS="$PWD/target/python-wheel"
rm -rf "$WHEELS"
pip wheel -q --no-build-isolation --no-deps -w "$WHEELS" ./bindings-python
pip install -q "$WHEELS"/seawall-*.whl

echo "--- conformance scenarios through the Python API"
python bindings-python/tests/conformance_runner.py

echo "--- the quick start of bindings-python/README.md prints what the guide says"
QS="$PWD/target/python-quickstart"
mkdir -p "$QS"
python3 scripts/check-docs.py block bindings-python/README.md python-quickstart >"$QS/quickstart.py"
python3 scripts/check-docs.py block bindings-python/README.md python-quickstart --output >"$QS/expected.txt"
# From another folder, so the installed wheel is imported, not the source tree.
(cd "$QS" && python quickstart.py >printed.txt)
diff -u "$QS/expected.txt" "$QS/printed.txt" || { echo "the Python quick start printed something else"; exit 1; }

echo "--- pytest"
(cd bindings-python && python -m pytest -q -p no:cacheprovider tests)

# The same wheel on the oldest CPython it claims (abi3, >= 3.9), where one exists.
PY39=""
for c in "${SEAWALL_PYTHON39:-}" python3.9 "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.9*/bin/python3.9; do
  if [ -n "$c" ] && "$c" -c 'import sys; assert sys.version_info[:2] == (3, 9)' 2>/dev/null; then
    PY39="$c"; break
  fi
done
if [ -n "$PY39" ]; then
  echo "--- the same wheel on $("$PY39" --version): conformance and pytest (typing and Prometheus tests need 3.11 tools)"
  V39="$PWD/target/python39-venv"
  if "$PY39" -m venv --clear "$V39" && "$V39/bin/pip" install -q -r bindings-python/requirements-test-py39.txt; then
    "$V39/bin/pip" install -q "$WHEELS"/seawall-*.whl
    "$V39/bin/python" bindings-python/tests/conformance_runner.py | tail -1
    (cd bindings-python && "$V39/bin/python" -m pytest -q -p no:cacheprovider tests \
      --ignore=tests/test_typing.py --ignore=tests/test_prometheus.py)
  else
    warn "could not set up a Python 3.9 venv: the 3.9 run is skipped"
  fi
else
  echo "--- no python3.9 on this machine: the abi3 wheel ran on $(python --version) only"
fi

echo "--- benchmark script runs (a smoke run; the numbers of a real run are in benches/RESULTS.md)"
python benches/python/bench_overhead.py --quick >/dev/null
