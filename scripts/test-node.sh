#!/usr/bin/env bash
# Every test of the Node package (bindings-node/), run by scripts/test.sh:
# the addon built the way `npm install` builds it, the generated loader and
# declarations checked fresh, `tsc --strict`, the conformance scenarios, the
# `node --test` suite, installs from a folder and from an `npm pack` tarball in
# fresh projects, the guide's quick start run in the tarball's project, the
# example service's test and a short benchmark run.
# Exit 3 when Node or the npm dependencies (scripts/setup.sh) are missing.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

command -v node >/dev/null && command -v npm >/dev/null || { echo "node or npm not installed"; exit 3; }
[ -d bindings-node/node_modules/@napi-rs/cli ] || { echo "bindings-node/node_modules missing: scripts/setup.sh could not npm ci"; exit 3; }

step() { printf '\n--> %s\n' "$*"; }

step "addon built as npm install builds it (scripts/install.js: cargo build --release --locked)"
(cd bindings-node && node scripts/install.js)

step "index.js / index.d.ts are exactly what napi build generates"
(cd bindings-node && npx --no-install napi build --platform --release --js index.js --dts index.d.ts >/dev/null)
git diff --exit-code -- bindings-node/index.js bindings-node/index.d.ts \
  || { echo "bindings-node/index.js or index.d.ts is stale: run 'npm run build' in bindings-node and commit"; exit 1; }

step "tsc --strict --noEmit on a typed usage file"
(cd bindings-node && npx --no-install tsc --strict --noEmit -p test/tsconfig.json)

step "conformance scenarios through the Node package"
node bindings-node/test/conformance.js

step "node --test"
(cd bindings-node && node --test --test-concurrency=1 test/*.test.js)

step "npm install from the folder, and from an npm pack tarball, in fresh projects"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; rm -f "$repo"/bindings-node/seawall-*.tgz' EXIT
check_install() { # project dir
  (cd "$1" && node -e "
    const s = require('seawall');
    new s.CircuitBreaker().execute(async () => 42).then((v) => { if (v !== 42) process.exit(1); console.log('require: ok'); });
  " && node --input-type=module -e "
    import { CircuitBreaker } from 'seawall';
    console.log('import:', typeof CircuitBreaker === 'function' ? 'ok' : 'missing');
  ")
}
mkdir "$tmp/folder" "$tmp/tarball"
(cd "$tmp/folder" && npm init -y >/dev/null && npm install --no-audit --no-fund "$repo/bindings-node" >/dev/null 2>&1)
check_install "$tmp/folder"
tarball=$(cd bindings-node && npm pack --silent 2>/dev/null | tail -1)
# In the workspace target dir: only the vendored path crates rebuild.
(cd "$tmp/tarball" && npm init -y >/dev/null && CARGO_TARGET_DIR="$repo/target" npm install --no-audit --no-fund "$repo/bindings-node/$tarball" >/dev/null 2>&1) \
  || { echo "installing the tarball failed"; exit 1; }
check_install "$tmp/tarball"

step "the quick start of bindings-node/README.md, in the project that installed the tarball, prints what the guide says"
python3 scripts/check-docs.py block bindings-node/README.md node-quickstart >"$tmp/tarball/quickstart.js"
python3 scripts/check-docs.py block bindings-node/README.md node-quickstart --output >"$tmp/expected.txt"
(cd "$tmp/tarball" && node quickstart.js) >"$tmp/printed.txt"
diff -u "$tmp/expected.txt" "$tmp/printed.txt" || { echo "the Node quick start printed something else"; exit 1; }

step "example service (examples/node-service): degraded answers when a dependency fails"
node --test examples/node-service/test/

step "benchmark script runs (short; the numbers are in benches/RESULTS.md, not asserted)"
if [ -d benches/node/node_modules/opossum ] && [ -d benches/node/node_modules/cockatiel ]; then
  node benches/node/bench.js --quick
else
  echo "benches/node/node_modules missing (scripts/setup.sh could not npm ci): benchmark skipped"
fi
