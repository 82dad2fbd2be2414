#!/usr/bin/env bash
# Build the release artifacts of seawall into dist/:
#
#   c       seawall-VERSION-ARCH-linux-gnu.tar.gz  the C library as scripts/install.sh
#           lays it out (header, libseawall.so.VERSION with its SONAME links,
#           libseawall.a, pkg-config and CMake files), relocatable; and
#           seawall-VERSION-ARCH-linux-gnu-debug.tar.gz, the shared library's
#           debug info (lib/.debug/…, unpacked over the same prefix)
#   python  seawall-VERSION-cp39-abi3-manylinux2014_ARCH.manylinux_2_17_ARCH.whl
#           (one wheel for CPython >= 3.9 on glibc >= 2.17) and
#           seawall-VERSION.tar.gz (the sdist)
#   node    seawall-VERSION.tgz  the npm package with the prebuilt addon for this
#           platform inside (seawall.linux-x64-gnu.node), and the Rust sources
#           other platforms build from at install time
#
# Usage: scripts/dist.sh [c] [python] [node]   (no argument: all three)
# Each part reuses the release build the tests use (target/), so after
# scripts/test.sh it only packs (the wheel builds in target/wheel). Needs Rust;
# the Python part installs the pinned tools of bindings-python/requirements-dist.txt
# into target/dist-venv (exit 3 when it cannot), the Node part needs node and npm.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
DIST="$repo/dist"

parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(c python node)
for p in "${parts[@]}"; do
  case $p in c | python | node) ;; *) echo "dist.sh: unknown part $p (c, python, node)" >&2; exit 2 ;; esac
done

version=$(sed -n '/^\[workspace.package\]/,/^\[/ s/^version = "\(.*\)"/\1/p' Cargo.toml)
host=$(rustc -vV | sed -n 's/^host: //p') # e.g. x86_64-unknown-linux-gnu
arch=${host%%-*}
mkdir -p "$DIST"
say() { printf -- '--- dist: %s\n' "$*"; }
size() { du -h --apparent-size "$1" | cut -f1; }

# The wheel's manylinux tag: manylinux2014 (manylinux_2_17, glibc >= 2.17:
# RHEL/CentOS 7 and every later mainstream distribution, the tag pydantic-core
# and orjson ship). Linked as usual on this machine (Debian 12, glibc 2.36),
# Rust's std would reference pthread and friends at their GLIBC_2.34 versions,
# which only manylinux_2_34 allows; zig (the pinned ziglang package) links
# against glibc 2.17's symbol versions instead. auditwheel
# (scripts/test-python.sh) checks the tag against the symbols.
MANYLINUX=manylinux2014
DIST_VENV="$repo/target/dist-venv"
# zig links differently from the workspace's own builds, so the wheel builds in
# its own target dir: the two would otherwise rebuild each other's crates.
WHEEL_TARGET_DIR="$repo/target/wheel"

build_c() {
  cargo build -q --release --locked -p seawall-ffi
  local build
  build="$(realpath -m "${CARGO_TARGET_DIR:-target}")/release"
  local name="seawall-$version-$arch-linux-gnu"
  local stage="$repo/target/dist/c"
  rm -rf "$stage"
  mkdir -p "$stage"
  bash scripts/install.sh --prefix "$stage/$name" --build-dir "$build" >/dev/null
  # The debug info ships in its own tarball, unpacked over the same prefix.
  mkdir -p "$stage/debug/$name/lib"
  mv "$stage/$name/lib/.debug" "$stage/debug/$name/lib/.debug"
  tar --sort=name --owner=0 --group=0 --numeric-owner -C "$stage" -czf "$DIST/$name.tar.gz" "$name"
  tar --sort=name --owner=0 --group=0 --numeric-owner -C "$stage/debug" -czf "$DIST/$name-debug.tar.gz" "$name"
  say "$name.tar.gz ($(size "$DIST/$name.tar.gz")): libseawall.so.$version $(size "$stage/$name/lib/libseawall.so.$version"), libseawall.a $(size "$stage/$name/lib/libseawall.a") (the release build's: $(size "$build/libseawall.so"), $(size "$build/libseawall.a")); debug info in $name-debug.tar.gz ($(size "$DIST/$name-debug.tar.gz"))"
}

dist_venv() { # target/dist-venv with bindings-python/requirements-dist.txt
  local want=bindings-python/requirements-dist.txt stamp="$DIST_VENV/requirements-dist.txt"
  if ! cmp -s "$want" "$stamp"; then
    # Exit 3, as the test scripts do, when the tools cannot be installed.
    python3 -m venv --clear "$DIST_VENV" && "$DIST_VENV/bin/pip" install -q -r "$want" \
      || { printf '\n!!! dist.sh: could not install %s into %s\n\n' "$want" "$DIST_VENV" >&2; exit 3; }
    cp "$want" "$stamp"
  fi
}

build_python() {
  dist_venv
  rm -f "$DIST"/seawall-*.whl "$DIST/seawall-$version.tar.gz"
  # --strip: the wheel carries no debug info (the release profile keeps line tables).
  CARGO_TARGET_DIR=$WHEEL_TARGET_DIR PATH="$DIST_VENV/bin:$PATH" \
    maturin build -q --release --locked --strip --zig --compatibility "$MANYLINUX" \
    -m bindings-python/Cargo.toml --out "$DIST"
  "$DIST_VENV/bin/maturin" sdist -m bindings-python/Cargo.toml --out "$DIST" >/dev/null
  say "$(cd "$DIST" && ls seawall-*.whl) ($(size "$DIST"/seawall-*.whl)), seawall-$version.tar.gz ($(size "$DIST/seawall-$version.tar.gz"))"
}

build_node() {
  local addon="seawall.linux-x64-gnu.node"
  [ "$host" = x86_64-unknown-linux-gnu ] || addon="" # only this platform ships prebuilt
  (cd bindings-node && node scripts/install.js >/dev/null)
  if [ -n "$addon" ]; then
    # The copy that ships has no debug info: the npm package stays small.
    objcopy --strip-debug "bindings-node/$addon"
  fi
  rm -f "$DIST/seawall-$version.tgz"
  (cd bindings-node && npm pack --silent --pack-destination "$DIST" >/dev/null)
  [ -z "$addon" ] || tar -tzf "$DIST/seawall-$version.tgz" | grep -x "package/$addon" >/dev/null \
    || { echo "dist.sh: $addon is not in the npm tarball" >&2; exit 1; }
  say "seawall-$version.tgz ($(size "$DIST/seawall-$version.tgz")${addon:+, prebuilt $addon $(size "bindings-node/$addon")})"
}

for p in "${parts[@]}"; do "build_$p"; done
