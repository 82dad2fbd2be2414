# The skips of one run of scripts/test.sh, sourced by it and by the scripts it
# runs (test-python.sh, test-node.sh), so that every skip lands in one list.
#
# A step that cannot run here (a tool that would not install, a step that exits
# 3) or a test its runner skipped is recorded with its reason by `skip`. At the
# end `skips_report` lists each with its reason. Under CI=true (or CI=1, as
# some CI services set it) the CI machine
# is expected to run everything (scripts/setup.sh installs what the tests
# need), so any skip there fails the run: after every step has run, so the
# list is complete, and never with ALL TESTS PASSED printed.
#
# The list is the file $SEAWALL_SKIPS, one reason a line, made by test.sh.

# A script run alone (not from test.sh) keeps no list: it says each skip as it
# happens, and nobody reads a list at its end.
skips_init() {
  if [ -z "${SEAWALL_SKIPS:-}" ]; then
    SEAWALL_SKIPS=/dev/null
    export SEAWALL_SKIPS
  fi
}

# Record a skip (one line: newlines in the reason become spaces) and say so at once.
skip() { # reason
  local reason=${1//$'\n'/ }
  printf '\n!!! SKIPPED: %s\n\n' "$reason" >&2
  printf '%s\n' "$reason" >>"$SEAWALL_SKIPS"
}

# Run a step that exits 3 when it cannot run here: that exit is a skip with
# `reason`; any other failure ends the run with the step's status.
may_skip() { # reason, command...
  local reason=$1 rc=0
  shift
  "$@" || rc=$?
  case $rc in
    0) ;;
    3) skip "$reason" ;;
    *) exit "$rc" ;;
  esac
}

# Every test pytest skipped, from its JUnit XML report, as one skip each.
skips_from_junit() { # label, report.xml
  local line
  while IFS= read -r line; do
    [ -n "$line" ] && skip "$1: $line"
  done < <(python3 - "$2" <<'PY'
import sys
import xml.etree.ElementTree as ET

for case in ET.parse(sys.argv[1]).getroot().iter("testcase"):
    for s in case.findall("skipped"):
        print(f"{case.get('classname')}::{case.get('name')}: {s.get('message', '')}")
PY
  )
}

# Every test `node --test` skipped, from its TAP report (`ok N - name # SKIP why`,
# subtests indented).
skips_from_tap() { # label, report.tap
  local name why
  while IFS=$'\t' read -r name why; do
    skip "$1: $name: ${why:-(no reason given)}"
  done < <(sed -n -E 's/^[[:space:]]*ok [0-9]+ - (.*) # SKIP ?(.*)$/\1\t\2/p' "$2")
}

# Whether this run is CI's, which must run everything.
on_ci() {
  case ${CI:-} in true | 1) return 0 ;; *) return 1 ;; esac
}

# The end of the run: the skips with their reasons, then the verdict. On CI any
# skip fails (status 1); otherwise they are listed after ALL TESTS PASSED.
skips_report() {
  local -a reasons=()
  [ -s "$SEAWALL_SKIPS" ] && mapfile -t reasons <"$SEAWALL_SKIPS"
  if on_ci && [ "${#reasons[@]}" -gt 0 ]; then
    printf '\n'
    printf 'SKIPPED: %s\n' "${reasons[@]}"
    printf 'TESTS FAILED: %d skipped under CI=true, where everything must run (see scripts/setup.sh)\n' \
      "${#reasons[@]}"
    return 1
  fi
  printf '\nALL TESTS PASSED\n'
  [ "${#reasons[@]}" -eq 0 ] || printf 'SKIPPED: %s\n' "${reasons[@]}"
}
