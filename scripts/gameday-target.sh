#!/usr/bin/env bash
# The gameday against an example service through its fault-injecting proxy, as a
# user runs it against their own (gameday/README.md, "Against your own service"):
#   scripts/gameday-target.sh node|python [extra gameday flags]
# Starts the example (its dependency pointed at the proxy's address, its port
# ephemeral), runs the release gameday binary already built by scripts/test.sh
# with --upstream builtin (the gameday's own inventory upstream is the real
# dependency, so no third server is needed), then stops the example.
# node uses the addon scripts/test-node.sh built in bindings-node/; python the
# venv scripts/test-python.sh made (target/python-venv, the seawall wheel
# installed) plus examples/python-service/requirements.txt.
# Exit 3, saying so loudly, when that environment is missing; else the gameday's
# exit status (1: a check did not hold).
set -euo pipefail
cd "$(dirname "$0")/.."
which=${1:?usage: scripts/gameday-target.sh node|python [gameday flags]}
shift
GAMEDAY=target/release/seawall-gameday
warn() { printf '\n!!! GAMEDAY %s: %s\n\n' "$which" "$*" >&2; }
[ -x "$GAMEDAY" ] || { echo "$GAMEDAY is missing: build it first (cargo build --release --locked -p seawall-gameday)"; exit 2; }

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
proxy_port=$(free_port)
out=target/gameday-$which
mkdir -p "$out"
log="$out/service.log"

case $which in
  node)
    command -v node >/dev/null || { warn "node not installed"; exit 3; }
    ls bindings-node/*.node >/dev/null 2>&1 || { warn "no addon in bindings-node/ (scripts/test-node.sh builds it)"; exit 3; }
    [ -d bindings-node/node_modules/prom-client ] || { warn "bindings-node/node_modules/prom-client missing (scripts/setup.sh runs npm ci)"; exit 3; }
    node examples/node-service/service.js --port 0 --inventory-url "http://127.0.0.1:$proxy_port" \
      --open-duration-ms 1000 --deadline-ms 1000 >"$log" 2>&1 &
    path="/api/products/{id}"; flags=(--breaker inventory --deadline-ms 1000)
    ;;
  python)
    py=target/python-venv/bin/python
    [ -x "$py" ] && "$py" -c 'import seawall' 2>/dev/null \
      || { warn "no venv with seawall in target/python-venv (scripts/test-python.sh makes it)"; exit 3; }
    target/python-venv/bin/pip install -q -r examples/python-service/requirements.txt \
      || { warn "pip could not install examples/python-service/requirements.txt"; exit 3; }
    "$py" examples/python-service/service.py --port 0 --upstream "http://127.0.0.1:$proxy_port" >"$log" 2>&1 &
    path="/products/{id}"; flags=(--deadline-ms 1000)
    ;;
  *) echo "scripts/gameday-target.sh: node or python, not $which" >&2; exit 2 ;;
esac
pid=$!
trap 'kill "$pid" 2>/dev/null || true' EXIT

# The example prints its URL once it listens.
base=""
for _ in $(seq 100); do
  base=$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$log" | head -1 || true)
  [ -n "$base" ] && break
  kill -0 "$pid" 2>/dev/null || { cat "$log"; echo "the $which example exited before it listened"; exit 1; }
  sleep 0.1
done
[ -n "$base" ] || { cat "$log"; echo "the $which example did not say where it listens within 10 s"; exit 1; }

# 40 requests/s: the example (Node or CPython, one core at most) shares CI's two
# cores with the load generator, the proxy and the upstream; 40/s still puts 80
# calls in a 2 s breaker window, four times the Python example's minimum of 20.
rc=0
"$GAMEDAY" --quick --rate 40 --target "$base$path" --upstream builtin --proxy-listen "127.0.0.1:$proxy_port" \
  --metrics "$base/metrics" "${flags[@]}" --out "$out" "$@" || rc=$?
# A clean stop: on SIGTERM the example exits by itself within 10 s, with status 0
# (Node) or 143 (uvicorn re-raises the SIGTERM it handled once it has shut down).
trap - EXIT
kill "$pid"
for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$pid" 2>/dev/null; then
  kill -9 "$pid"; echo "the $which example did not stop within 10 s of SIGTERM"; exit 1
fi
status=0; wait "$pid" || status=$?
[ "$status" -eq 0 ] || [ "$status" -eq 143 ] || { cat "$log"; echo "the $which example exited with status $status on SIGTERM"; exit 1; }
exit "$rc"
