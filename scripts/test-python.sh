#!/usr/bin/env bash
# The Python package's tests, run by scripts/test.sh:
#   a fresh venv (target/python-venv), the pinned tools of
#   bindings-python/requirements-test.txt, the release wheel and sdist of
#   scripts/dist.sh (dist/; one release build, in target/wheel), auditwheel's
#   check of the wheel's manylinux tag, then, with
#   no cargo or rustc on PATH, the wheel installed and the conformance
#   scenarios, the quick start and the chaos game day of bindings-python/README.md
#   (their printed output compared with the guide's), pytest (forms, classification, cancellation, bulkhead, policies,
#   multiprocess shared breaker, Prometheus, chaos, ASGI/WSGI middleware under
#   uvicorn and wsgiref on loopback, self-healing under gunicorn with uvicorn
#   and sync workers killed by SIGKILL, mypy --strict, stubtest) and a
#   smoke run of the benchmark script; last, a wheel built from the sdist holds
#   the same files.
# Exit 3 (after saying so loudly) when the venv or its tools cannot be
# installed; any test failure exits non-zero. Every test pytest skips is listed
# with its reason (-rs) and recorded as a skip (scripts/skips.sh), which fails
# the run of scripts/test.sh under CI=true.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/skips.sh
skips_init

PY="${SEAWALL_PYTHON:-python3}"
VENV="$PWD/target/python-venv"
warn() { printf '\n!!! PYTHON TESTS: %s\n\n' "$*" >&2; }

"$PY" -m venv --clear "$VENV" || { warn "could not create a venv with $PY"; exit 3; }
export PATH="$VENV/bin:$PATH"
pip install -q -r bindings-python/requirements-test.txt \
  || { warn "pip could not install bindings-python/requirements-test.txt"; exit 3; }
# maturin (bindings-python/requirements-dist.txt, in target/dist-venv) builds
# the one abi3 wheel and the sdist into dist/.
rc=0; bash scripts/dist.sh python || rc=$?
case $rc in
  0) ;;
  3) warn "pip could not install bindings-python/requirements-dist.txt (maturin, ziglang, auditwheel)"; exit 3 ;;
  *) exit "$rc" ;;
esac
DIST_VENV="$PWD/target/dist-venv"
WHEEL=$(ls "$PWD"/dist/seawall-*-cp39-abi3-*manylinux*.whl)
SDIST=$(ls "$PWD"/dist/seawall-*.tar.gz | grep -v -- '-linux-gnu')

echo "--- auditwheel: the wheel's tag is the one its symbols allow"
tag=${WHEEL##*-abi3-}; tag=${tag%.whl}; tag=${tag##*.} # the PEP 600 name of the last tag
"$DIST_VENV/bin/auditwheel" show "$WHEEL" >target/auditwheel.out
cat target/auditwheel.out
tr -s ' \n' ' ' <target/auditwheel.out | grep "is consistent with the following platform tag: \"$tag\"" >/dev/null \
  || { echo "auditwheel does not find $(basename "$WHEEL") consistent with $tag"; exit 1; }

# From here on the package runs as a user installs it: no Rust on PATH.
source scripts/without-rust.sh
RUST_PATH=$PATH
PATH=$(path_without_rust)
export PATH
! command -v cargo >/dev/null && ! command -v rustc >/dev/null \
  || { echo "cargo or rustc is still on PATH"; exit 1; }
echo "--- pip install $(basename "$WHEEL") (PATH without cargo and rustc)"
pip install -q --no-index --no-deps "$WHEEL"
python -c 'import pathlib, seawall; assert pathlib.Path(seawall.__file__).is_relative_to(pathlib.Path(__import__("sys").prefix)), seawall.__file__'

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

# -- the chaos game day of bindings-python/README.md, the same way --
echo "--- the chaos game day of bindings-python/README.md prints what the guide says"
python3 scripts/check-docs.py block bindings-python/README.md python-chaos >"$QS/chaos.py"
python3 scripts/check-docs.py block bindings-python/README.md python-chaos --output >"$QS/chaos-expected.txt"
(cd "$QS" && python chaos.py >chaos-printed.txt)
diff -u "$QS/chaos-expected.txt" "$QS/chaos-printed.txt" || { echo "the Python chaos game day printed something else"; exit 1; }

echo "--- pytest"
# -rs lists every skip with its reason; the JUnit report records them.
JUNIT="$PWD/target/pytest.xml"
(cd bindings-python && python -m pytest -q -rs -p no:cacheprovider --junitxml="$JUNIT" tests)
skips_from_junit "pytest" "$JUNIT"

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
    "$V39/bin/pip" install -q --no-index --no-deps "$WHEEL"
    "$V39/bin/python" bindings-python/tests/conformance_runner.py | tail -1
    # -rs lists what 3.9 skips: the tests of tools requirements-test-py39.txt
    # leaves out by design (not recorded as skips).
    (cd bindings-python && "$V39/bin/python" -m pytest -q -rs -p no:cacheprovider tests \
      --ignore=tests/test_typing.py --ignore=tests/test_prometheus.py)
  else
    skip "Python 3.9 run of the wheel: $PY39 is here but its venv could not be set up"
  fi
else
  echo "--- no python3.9 on this machine: the abi3 wheel ran on $(python --version) only"
fi

echo "--- benchmark script runs (a smoke run; the numbers of a real run are in benches/RESULTS.md)"
python benches/python/bench_overhead.py --quick >/dev/null

echo "--- the sdist builds a wheel (with Rust) holding the same files as the release wheel"
PATH=$RUST_PATH
FROM_SDIST="$PWD/target/python-sdist-wheel"
rm -rf "$FROM_SDIST"
# Built as dist.sh builds the wheel (zig, in target/wheel), so only the crates
# of the sdist compile again.
MATURIN_PEP517_ARGS="--zig --compatibility manylinux2014" CARGO_TARGET_DIR="$PWD/target/wheel" \
  PATH="$DIST_VENV/bin:$PATH" "$DIST_VENV/bin/pip" wheel -q --no-build-isolation --no-deps -w "$FROM_SDIST" "$SDIST"
members() { python -c 'import sys, zipfile; print("\n".join(sorted(n for n in zipfile.ZipFile(sys.argv[1]).namelist() if ".dist-info/" not in n)))' "$1"; }
diff <(members "$WHEEL") <(members "$FROM_SDIST"/seawall-*.whl) \
  || { echo "the wheel built from $(basename "$SDIST") differs from $(basename "$WHEEL")"; exit 1; }
