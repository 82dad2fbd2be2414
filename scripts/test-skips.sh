#!/usr/bin/env bash
# Tests of scripts/skips.sh, the skip list of scripts/test.sh, on fake steps:
# a step that exits 3 is a skip with its reason, any other failure ends the run
# with its status; the report lists every skip with its reason and, under
# CI=true (or CI=1), fails instead of printing ALL TESTS PASSED; pytest's JUnit
# report and node --test's TAP report give one skip per skipped test. Run by
# scripts/test.sh; fast, no build.
set -euo pipefail
cd "$(dirname "$0")/.."

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
check() { # description, expected, actual
  if [ "$2" == "$3" ]; then
    printf 'ok: %s\n' "$1"
  else
    printf 'FAIL: %s\n--- expected\n%s\n--- got\n%s\n' "$1" "$2" "$3"
    failures=$((failures + 1))
  fi
}

# A run of fake steps, as scripts/test.sh runs its steps: prints what the run
# prints (stdout) and its exit status on the last line.
fake_run() { # CI value, steps (bash code using skip / may_skip)
  local out rc=0
  : >"$work/skips"
  out=$(CI=$1 SEAWALL_SKIPS="$work/skips" bash -c '
    set -euo pipefail
    source scripts/skips.sh
    skips_init
    eval "$0"
    skips_report' "$2" 2>/dev/null) || rc=$?
  printf '%s\nstatus %s' "$out" "$rc"
}

steps='may_skip "header check: cbindgen missing" bash -c "exit 3"
may_skip "never shown" bash -c "exit 0"
command -v no-such-tool-here >/dev/null || skip "valgrind runs: valgrind not installed"
echo "last step ran"'

check "outside CI a skipped step (exit 3) is listed with its reason after ALL TESTS PASSED" \
  "last step ran

ALL TESTS PASSED
SKIPPED: header check: cbindgen missing
SKIPPED: valgrind runs: valgrind not installed
status 0" "$(fake_run "" "$steps")"

check "under CI=true the same skips fail the run, after every step ran, without ALL TESTS PASSED" \
  "last step ran

SKIPPED: header check: cbindgen missing
SKIPPED: valgrind runs: valgrind not installed
TESTS FAILED: 2 skipped under CI=true, where everything must run (see scripts/setup.sh)
status 1" "$(fake_run true "$steps")"

check "CI=1 counts as CI" \
  "TESTS FAILED: 2 skipped under CI=true, where everything must run (see scripts/setup.sh)
status 1" "$(fake_run 1 "$steps" | tail -2)"

check "under CI=true a run with no skip passes" \
  "last step ran

ALL TESTS PASSED
status 0" "$(fake_run true 'may_skip "x" true; echo "last step ran"')"

check "a step failing otherwise than with 3 ends the run with its status, even outside CI" \
  "
status 5" "$(fake_run "" 'may_skip "x" bash -c "exit 5"; echo "not reached"')"

check "a skip recorded by a script run from the run (test-python.sh, test-node.sh) is the run's" \
  "SKIPPED: from a child
TESTS FAILED: 1 skipped under CI=true, where everything must run (see scripts/setup.sh)
status 1" "$(fake_run true 'bash -c "source scripts/skips.sh; skips_init; skip \"from a child\""' | tail -3)"

# pytest's JUnit XML, as pytest 9 writes it (-rs prints the same reasons).
cat >"$work/pytest.xml" <<'XML'
<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests"><testsuite name="pytest" errors="0" failures="0" skipped="2" tests="3" time="0.014"><testcase classname="tests.test_a" name="test_runs" time="0.000" /><testcase classname="tests.test_a" name="test_b" time="0.000"><skipped type="pytest.skip" message="no &lt;tool&gt; &amp; &quot;quotes&quot;">tests/test_a.py:3: no &lt;tool&gt; &amp; "quotes"</skipped></testcase><testcase classname="tests.test_prometheus" name="test_c" time="0.000"><skipped type="pytest.skip" message="could not import 'prometheus_client': No module named 'prometheus_client'">tests/test_prometheus.py:5: could not import</skipped></testcase></testsuite></testsuites>
XML
check "every test pytest skipped is one skip, with its reason" \
  "SKIPPED: pytest: tests.test_a::test_b: no <tool> & \"quotes\"
SKIPPED: pytest: tests.test_prometheus::test_c: could not import 'prometheus_client': No module named 'prometheus_client'" \
  "$(fake_run "" "skips_from_junit pytest $work/pytest.xml" | grep '^SKIPPED')"

# node --test's TAP, from node itself where it is installed (else a copy of its output).
if command -v node >/dev/null; then
  cat >"$work/s.test.js" <<'JS'
const test = require('node:test');
test('runs', () => {});
test('skipped one', { skip: 'no native 128-bit atomics' }, () => {});
test('outer', async (t) => { await t.test('inner', { skip: true }, () => {}); });
JS
  (cd "$work" && node --test --test-reporter=tap --test-reporter-destination=s.tap s.test.js >/dev/null)
else
  printf '%s\n' 'TAP version 13' 'ok 1 - runs' 'ok 2 - skipped one # SKIP no native 128-bit atomics' \
    '    ok 1 - inner # SKIP' 'ok 3 - outer' >"$work/s.tap"
fi
check "every test node --test skipped is one skip, with its reason" \
  "SKIPPED: node --test: skipped one: no native 128-bit atomics
SKIPPED: node --test: inner: (no reason given)" \
  "$(fake_run "" "skips_from_tap 'node --test' $work/s.tap" | grep '^SKIPPED')"

# scripts/test.sh itself: its verdict is skips_report's, and every optional
# step goes through may_skip / skip (no list of its own that CI would not see).
check "scripts/test.sh prints its verdict only through skips_report" \
  "0 1" "$(grep -c 'ALL TESTS PASSED' scripts/test.sh || true) $(grep -c '^skips_report$' scripts/test.sh)"
check "scripts/test.sh keeps no skip list of its own" "0" "$(grep -c 'skipped+=' scripts/test.sh || true)"
check "scripts/test-python.sh runs pytest with -rs and records its skips" \
  "2 1" "$(grep -c 'pytest -q -rs' scripts/test-python.sh) $(grep -c '^skips_from_junit' scripts/test-python.sh)"

if [ "$failures" -gt 0 ]; then
  echo "$failures check(s) of scripts/skips.sh failed"
  exit 1
fi
echo "scripts/skips.sh: every check passed"
