#!/usr/bin/env bash
# Build the release artifacts of seawall into dist/:
#
#   c       seawall-VERSION-ARCH-linux-gnu.tar.gz  the C library as scripts/install.sh
#           lays it out (header, libseawall.so.VERSION with its SONAME links,
#           libseawall.a, pkg-config and CMake files), relocatable; and
#           seawall-VERSION-ARCH-linux-gnu-debug.tar.gz, the shared library's
#           debug info (lib/.debug/…, unpacked over the same prefix)
#   python  seawall-VERSION-cp39-abi3-manylinux_2_34_ARCH.whl  (one wheel for
#           CPython >= 3.9) and seawall-VERSION.tar.gz (the sdist)
#   node    seawall-VERSION.tgz  the npm package with the prebuilt addon for this
#           platform inside (seawall.linux-x64-gnu.node), and the Rust sources
#           other platforms build from at install time
#
# Usage: scripts/dist.sh [c] [python] [node]   (no argument: all three)
# Each part reuses the release build the tests use (target/), so after
# scripts/test.sh it only packs. Needs Rust; the Python part uses the maturin
# pinned in bindings-python/requirements-test.txt (from PATH, or installed into
# target/dist-venv), the Node part node and npm.
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

# The manylinux tag of the wheel: the oldest glibc whose symbol versions cover
# every one the extension module needs. Built against this machine's glibc
# (Debian 12, 2.36), Rust's std links pthread and friends at their
# GLIBC_2.34 versions (glibc 2.34 moved them into libc), so manylinux_2_34 is
# the lowest honest tag; auditwheel (scripts/test-python.sh) checks it. It
# installs on glibc >= 2.34: Debian 12, Ubuntu 22.04, RHEL/Rocky/Alma 9,
# Amazon Linux 2023, Fedora 35 and later; older systems build the sdist.
MANYLINUX=manylinux_2_34

build_c() {
  cargo build -q --release --locked -p seawall-ffi
  local name="seawall-$version-$arch-linux-gnu"
  local stage="$repo/target/dist/c"
  rm -rf "$stage"
  mkdir -p "$stage"
  bash scripts/install.sh --prefix "$stage/$name" >/dev/null
  # The debug info ships in its own tarball, unpacked over the same prefix.
  mkdir -p "$stage/debug/$name/lib"
  mv "$stage/$name/lib/.debug" "$stage/debug/$name/lib/.debug"
  tar --sort=name --owner=0 --group=0 --numeric-owner -C "$stage" -czf "$DIST/$name.tar.gz" "$name"
  tar --sort=name --owner=0 --group=0 --numeric-owner -C "$stage/debug" -czf "$DIST/$name-debug.tar.gz" "$name"
  say "$name.tar.gz ($(size "$DIST/$name.tar.gz")): libseawall.so.$version $(size "$stage/$name/lib/libseawall.so.$version"), libseawall.a $(size "$stage/$name/lib/libseawall.a") (the release build's: $(size target/release/libseawall.so), $(size target/release/libseawall.a)); debug info in $name-debug.tar.gz ($(size "$DIST/$name-debug.tar.gz"))"
}

build_python() {
  local pin
  pin=$(grep -E '^maturin==' bindings-python/requirements-test.txt)
  if [ "$(maturin --version 2>/dev/null)" != "maturin ${pin#maturin==}" ]; then
    python3 -m venv "$repo/target/dist-venv"
    "$repo/target/dist-venv/bin/pip" install -q "$pin"
    export PATH="$repo/target/dist-venv/bin:$PATH"
  fi
  rm -f "$DIST"/seawall-*.whl "$DIST/seawall-$version.tar.gz"
  # --strip: the wheel carries no debug info (the release profile keeps line tables).
  maturin build -q --release --locked --strip --compatibility "$MANYLINUX" \
    -m bindings-python/Cargo.toml --out "$DIST"
  maturin sdist -m bindings-python/Cargo.toml --out "$DIST" >/dev/null
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
