#!/usr/bin/env bash
# The C tarball of scripts/dist.sh as a user gets it: its exact file list, the
# SONAME and links, only seawall_* exported (shared and static), then unpacked
# to a fresh prefix and the README's two C examples built against it with
# `pkg-config --cflags --libs seawall` and with a CMakeLists.txt using
# `find_package(seawall)` (shared and static), run with nothing of the build
# folder on their library path; `scripts/install.sh --prefix` with DESTDIR lays
# out the same tree; a find_package for another minor version is refused.
#
# Expects target/release/libseawall.{a,so} (scripts/test.sh builds them).
# Exit 3 (after saying so loudly) when pkg-config or cmake is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

for tool in pkg-config cmake readelf; do
  command -v "$tool" >/dev/null || {
    printf '\n!!! C PACKAGE TESTS: %s is not installed (scripts/setup.sh installs it)\n\n' "$tool" >&2
    exit 3
  }
done
step() { printf -- '--- %s\n' "$*"; }

bash scripts/dist.sh c
version=$(sed -n '/^\[workspace.package\]/,/^\[/ s/^version = "\(.*\)"/\1/p' Cargo.toml)
major=${version%%.*}
minor=${version#*.}; minor=${minor%%.*}
name="seawall-$version-x86_64-linux-gnu"
tarball="$repo/dist/$name.tar.gz"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

step "$name.tar.gz holds exactly the installed layout"
diff <(tar -tzf "$tarball" | sed "s|^$name/||" | grep -v -e '/$' -e '^$' | sort) - <<EOF
include/seawall.h
lib/cmake/seawall/seawallConfig.cmake
lib/cmake/seawall/seawallConfigVersion.cmake
lib/libseawall.a
lib/libseawall.so
lib/libseawall.so.$major
lib/libseawall.so.$version
lib/pkgconfig/seawall.pc
EOF
prefix="$tmp/prefix"
mkdir -p "$prefix"
tar -xzf "$tarball" -C "$prefix" --strip-components=1
lib="$prefix/lib"
[ "$(readlink "$lib/libseawall.so")" = "libseawall.so.$major" ] &&
  [ "$(readlink "$lib/libseawall.so.$major")" = "libseawall.so.$version" ] ||
  { echo "the links are not libseawall.so -> .so.$major -> .so.$version"; exit 1; }
cmp include/seawall.h "$prefix/include/seawall.h"

step "SONAME libseawall.so.$major, no RPATH, stripped, debug info in its own tarball"
readelf -d "$lib/libseawall.so.$version" | tee "$tmp/dynamic" | grep -E 'SONAME|RPATH|RUNPATH'
grep -q "Library soname: \[libseawall.so.$major\]" "$tmp/dynamic" || { echo "no SONAME libseawall.so.$major"; exit 1; }
! grep -qE 'RPATH|RUNPATH' "$tmp/dynamic" || { echo "the library has a run path"; exit 1; }
! readelf -SW "$lib/libseawall.so.$version" | grep '\.debug_' >/dev/null || { echo "the library has debug sections"; exit 1; }
tar -tzf "$repo/dist/$name-debug.tar.gz" | grep -x "$name/lib/.debug/libseawall.so.$version.debug" >/dev/null

step "only the functions the header declares are global, in the .so and in the .a"
grep -E '^[a-z].*[ *]seawall_[a-z_]+\(' include/seawall.h | grep -oE 'seawall_[a-z_]+\(' | tr -d '(' |
  sort -u >"$tmp/declared"
readelf -sW --dyn-syms "$lib/libseawall.so.$version" |
  awk '/Symbol table .\.dynsym/ {d=1; next} /Symbol table/ {d=0} d && ($5 == "GLOBAL" || $5 == "WEAK") && $7 != "UND" {sub(/@.*/, "", $8); print $8}' |
  sort -u | diff "$tmp/declared" -
readelf -sW "$lib/libseawall.a" | awk '($5 == "GLOBAL" || $5 == "WEAK") && $7 != "UND" {print $8}' |
  sort -u | diff "$tmp/declared" -

# The README's C examples, exactly as printed (scripts/test-c.sh extracts the same).
readme_block() { # marker, output file
  local doc
  doc=$(grep -l -- "<!-- $1" README.md ffi-c/README.md 2>/dev/null | head -1 || true)
  [ -n "$doc" ] || { echo "no $1 block in README.md or ffi-c/README.md" >&2; exit 1; }
  awk -v m="<!-- $1" 'index($0, m) == 1 {f=1; next} f && /^```c/ {p=1; next} p && /^```/ {exit} p' \
    "$doc" >"$2"
  [ -s "$2" ] || { echo "no $1 block found in $doc" >&2; exit 1; }
}
mkdir "$tmp/src"
readme_block c-quickstart "$tmp/src/quickstart.c"
readme_block c-bulkhead "$tmp/src/bulkhead.c"

runs_as_documented() { # program: the lines the README promises
  local out
  out=$(env -u LD_LIBRARY_PATH ${LD_PATH:+LD_LIBRARY_PATH="$LD_PATH"} "$1")
  case $(basename "$1") in
    quickstart*) grep -qx 'call 60 rejected (open), retry in 30.0 s' <<<"$out" ;;
    bulkhead*) grep -qx 'done after 3 attempts' <<<"$out" ;;
  esac || { echo "$1 printed:"; echo "$out"; return 1; }
  echo "$(basename "$1"): ok"
}
loads_from_prefix() { # program: libseawall.so.MAJOR resolves into the prefix, not the build folder
  local resolved
  resolved=$(env -u LD_LIBRARY_PATH ${LD_PATH:+LD_LIBRARY_PATH="$LD_PATH"} ldd "$1" | awk '$1 == "libseawall.so.'"$major"'" {print $3}')
  [ "$resolved" = "$lib/libseawall.so.$major" ] || { echo "$1 loads libseawall from '$resolved'"; return 1; }
  ! readelf -d "$1" | grep -E 'RPATH|RUNPATH' | grep "$repo" >/dev/null || { echo "$1 has a run path into $repo"; return 1; }
}

step "pkg-config --cflags --libs seawall, run with LD_LIBRARY_PATH at the prefix"
export PKG_CONFIG_PATH="$lib/pkgconfig"
[ "$(pkg-config --modversion seawall)" = "$version" ]
mkdir "$tmp/pc"
for prog in quickstart bulkhead; do
  # shellcheck disable=SC2046 # pkg-config's output is a list of flags
  cc -std=c99 -Wall -Wextra -Werror -pedantic "$tmp/src/$prog.c" -o "$tmp/pc/$prog" $(pkg-config --cflags --libs seawall)
  readelf -d "$tmp/pc/$prog" | grep "Shared library: \[libseawall.so.$major\]" >/dev/null ||
    { echo "$prog does not need libseawall.so.$major"; exit 1; }
  LD_PATH=$lib loads_from_prefix "$tmp/pc/$prog"
  LD_PATH=$lib runs_as_documented "$tmp/pc/$prog"
done
unset PKG_CONFIG_PATH

step "CMake: find_package(seawall $major.$minor) from the prefix, shared and static"
cat >"$tmp/src/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.16)
project(seawall_examples C)
set(CMAKE_C_STANDARD 99)
find_package(seawall $major.$minor REQUIRED)
foreach(prog quickstart bulkhead)
  add_executable(\${prog} \${prog}.c)
  target_link_libraries(\${prog} PRIVATE seawall::seawall)
  add_executable(\${prog}-static \${prog}.c)
  target_link_libraries(\${prog}-static PRIVATE seawall::static)
endforeach()
EOF
cmake -S "$tmp/src" -B "$tmp/cmake" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release >"$tmp/cmake.log" 2>&1 ||
  { cat "$tmp/cmake.log"; exit 1; }
cmake --build "$tmp/cmake" >>"$tmp/cmake.log" 2>&1 || { cat "$tmp/cmake.log"; exit 1; }
for prog in quickstart bulkhead; do
  LD_PATH="" loads_from_prefix "$tmp/cmake/$prog" # CMake's run path is the prefix's lib/
  LD_PATH="" runs_as_documented "$tmp/cmake/$prog"
  ! readelf -d "$tmp/cmake/$prog-static" | grep 'libseawall' >/dev/null || { echo "$prog-static needs libseawall.so"; exit 1; }
  LD_PATH="" runs_as_documented "$tmp/cmake/$prog-static"
done
echo "static quickstart: $(stat -c %s "$tmp/cmake/quickstart-static") bytes"

step "find_package refuses another minor version (before 1.0 a minor release may break the ABI)"
mkdir "$tmp/wrong"
printf 'cmake_minimum_required(VERSION 3.16)\nproject(wrong C)\nfind_package(seawall %s.%s REQUIRED)\n' \
  "$major" "$((minor + 1))" >"$tmp/wrong/CMakeLists.txt"
if cmake -S "$tmp/wrong" -B "$tmp/wrong/build" -DCMAKE_PREFIX_PATH="$prefix" >"$tmp/wrong.log" 2>&1; then
  cat "$tmp/wrong.log"; echo "find_package accepted another minor version"; exit 1
fi
grep -q "$version" "$tmp/wrong.log" || { cat "$tmp/wrong.log"; exit 1; }

step "scripts/install.sh --prefix /usr/local with DESTDIR lays out the same tree"
DESTDIR="$tmp/destdir" bash scripts/install.sh --prefix /usr/local >/dev/null
rm -r "$tmp/destdir/usr/local/lib/.debug"
diff -r --no-dereference "$prefix" "$tmp/destdir/usr/local"
echo "C package tests passed"
