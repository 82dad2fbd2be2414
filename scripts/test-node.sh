#!/usr/bin/env bash
# Every test of the Node package (bindings-node/), run by scripts/test.sh:
# the addon built the way `npm install` builds it, the generated loader and
# declarations checked fresh, `tsc --strict`, the conformance scenarios, the
# `node --test` suite, an install from the folder, the npm tarball of
# scripts/dist.sh (prebuilt addon) installed with no Rust on PATH, its size, its
# one-sentence error without the addon, its source build, the guide's quick
# start run in the tarball's project, the example service's test and a short
# benchmark run.
# Exit 3 when Node or the npm dependencies (scripts/setup.sh) are missing.
# Every test `node --test` skips is recorded with its reason as a skip
# (scripts/skips.sh), which fails the run of scripts/test.sh under CI=true.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
source scripts/skips.sh
skips_init

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

# The usual report on the terminal, and TAP in a file whose `# SKIP` lines say
# what was skipped and why (recorded whether or not the tests passed); the
# status is node's.
node_test() { # label, TAP file, node --test arguments...
  local label=$1 tap=$2 rc=0
  shift 2
  node --test --test-reporter=spec --test-reporter-destination=stdout \
    --test-reporter=tap --test-reporter-destination="$tap" "$@" || rc=$?
  skips_from_tap "$label" "$tap"
  return "$rc"
}

step "node --test"
(cd bindings-node && node_test "node --test" "$repo/target/node-test.tap" --test-concurrency=1 test/*.test.js)

step "npm install from the folder in a fresh project (the addon builds in the workspace)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
check_install() { # project dir
  (cd "$1" && node -e "
    const s = require('seawall');
    new s.CircuitBreaker().execute(async () => 42).then((v) => { if (v !== 42) process.exit(1); console.log('require: ok'); });
  " && node --input-type=module -e "
    import { CircuitBreaker } from 'seawall';
    console.log('import:', typeof CircuitBreaker === 'function' ? 'ok' : 'missing');
  " && node -e "
    // The middleware entries load without their optional peers (express, fastify) installed.
    const ok = typeof require('seawall/express').middleware === 'function' && typeof require('seawall/fastify') === 'function';
    if (!ok) process.exit(1); console.log('seawall/express, seawall/fastify: ok');
  ")
  # seawall/opossum: the opossum-compatible entry, both ways
  (cd "$1" && node -e "
    const C = require('seawall/opossum');
    new C(async (x) => x).fire(42).then((v) => { if (v !== 42) process.exit(1); console.log('require seawall/opossum: ok'); });
  " && node --input-type=module -e "
    import C from 'seawall/opossum';
    if (typeof C.isOurError !== 'function') process.exit(1);
    console.log('import seawall/opossum: ok');
  ")
}
mkdir "$tmp/folder" "$tmp/tarball"
(cd "$tmp/folder" && npm init -y >/dev/null && npm install --no-audit --no-fund "$repo/bindings-node" >/dev/null 2>&1)
check_install "$tmp/folder"

step "the npm tarball of scripts/dist.sh installed in a fresh project with no cargo or rustc on PATH"
bash scripts/dist.sh node
version=$(node -p "require('./bindings-node/package.json').version")
tarball="$repo/dist/seawall-$version.tgz"
source scripts/without-rust.sh
no_rust=$(path_without_rust)
started=$(date +%s%N)
(cd "$tmp/tarball" && npm init -y >/dev/null &&
  PATH=$no_rust npm install --no-audit --no-fund --foreground-scripts "$tarball" >"$tmp/install.log" 2>&1) \
  || { cat "$tmp/install.log"; echo "installing the tarball without Rust failed"; exit 1; }
echo "installed in $(( ($(date +%s%N) - started) / 1000000 )) ms"
grep -qx 'seawall: using the prebuilt addon seawall.linux-x64-gnu.node' "$tmp/install.log" \
  || { cat "$tmp/install.log"; echo "the install did not use the prebuilt addon"; exit 1; }
PATH=$no_rust check_install "$tmp/tarball"
installed=$(du -sb "$tmp/tarball/node_modules" | cut -f1)
echo "node_modules: $installed bytes (seawall itself: $(du -sb "$tmp/tarball/node_modules/seawall" | cut -f1))"
[ "$installed" -le $((10 * 1024 * 1024)) ] || { echo "node_modules is over 10 MiB"; exit 1; }
[ -z "$(find "$tmp/tarball/node_modules/seawall" -name target -o -name '*.rlib' -o -name '*.rmeta')" ] \
  || { echo "cargo's build output is in node_modules/seawall"; exit 1; }

step "without its addon the package says in one sentence what to do"
mv "$tmp/tarball/node_modules/seawall/seawall.linux-x64-gnu.node" "$tmp/addon.node"
(cd "$tmp/tarball" && node -e "
  try { require('seawall'); process.exit(1); } catch (e) {
    const oneSentence = e.message.endsWith('.') && !/[.!?]\s+[A-Z]/.test(e.message) && !e.message.includes('\\n');
    if (e.code !== 'ERR_SEAWALL_NO_ADDON' || !oneSentence || !e.message.includes('npm rebuild seawall')) {
      console.error(e); process.exit(1);
    }
    console.log(e.message);
  }")

step "where no prebuilt addon loads, the install builds one from the tarball's sources with cargo"
# SEAWALL_BUILD_FROM_SOURCE stands in for another platform; the workspace
# target dir keeps this to the vendored path crates.
(cd "$tmp/tarball" && SEAWALL_BUILD_FROM_SOURCE=1 CARGO_TARGET_DIR="$repo/target" \
  npm rebuild seawall --foreground-scripts >"$tmp/rebuild.log" 2>&1) \
  || { cat "$tmp/rebuild.log"; echo "building the addon from the tarball's sources failed"; exit 1; }
grep -E '^seawall: built seawall.linux-x64-gnu.node from source in [0-9]+ s$' "$tmp/rebuild.log" \
  || { cat "$tmp/rebuild.log"; echo "the source build did not say how long it took"; exit 1; }
PATH=$no_rust check_install "$tmp/tarball"
installed=$(du -sb "$tmp/tarball/node_modules" | cut -f1)
echo "node_modules after the source build: $installed bytes"
[ "$installed" -le $((10 * 1024 * 1024)) ] || { echo "node_modules is over 10 MiB after the source build"; exit 1; }

step "the quick start of bindings-node/README.md, in the project that installed the tarball, prints what the guide says"
python3 scripts/check-docs.py block bindings-node/README.md node-quickstart >"$tmp/tarball/quickstart.js"
python3 scripts/check-docs.py block bindings-node/README.md node-quickstart --output >"$tmp/expected.txt"
(cd "$tmp/tarball" && node quickstart.js) >"$tmp/printed.txt"
diff -u "$tmp/expected.txt" "$tmp/printed.txt" || { echo "the Node quick start printed something else"; exit 1; }

step "example service (examples/node-service): degraded answers when a dependency fails"
node_test "example service" "$repo/target/node-example-test.tap" examples/node-service/test/

step "benchmark script runs (short; the numbers are in benches/RESULTS.md, not asserted)"
if [ -d benches/node/node_modules/opossum ] && [ -d benches/node/node_modules/cockatiel ]; then
  node benches/node/bench.js --quick
else
  skip "Node benchmark smoke run: benches/node/node_modules missing (scripts/setup.sh could not npm ci)"
fi
