#!/usr/bin/env bash
# Install the C library of seawall from a release build into a prefix:
#
#   PREFIX/include/seawall.h
#   PREFIX/lib/libseawall.so.MAJOR.MINOR.PATCH   stripped, SONAME libseawall.so.MAJOR,
#   PREFIX/lib/libseawall.so.MAJOR -> …           exports only seawall_*
#   PREFIX/lib/libseawall.so -> libseawall.so.MAJOR
#   PREFIX/lib/libseawall.a                       one object, only seawall_* global
#   PREFIX/lib/.debug/libseawall.so.VERSION.debug its debug info (gdb finds it by
#                                                 the .so's debuglink)
#   PREFIX/lib/pkgconfig/seawall.pc
#   PREFIX/lib/cmake/seawall/seawallConfig.cmake, seawallConfigVersion.cmake
#
# The pkg-config and CMake files locate the prefix from their own place, so the
# tree also works unpacked anywhere (the C tarball of scripts/dist.sh is this
# tree). DESTDIR is honoured as in `make install`: files go to $DESTDIR$PREFIX.
#
# Usage: scripts/install.sh [--prefix DIR] [--build-dir DIR]
#   --prefix     where to install (default /usr/local)
#   --build-dir  where the release build is (default target/release, or
#                $CARGO_TARGET_DIR/release; build it with
#                `cargo build --release --locked -p seawall-ffi`)
# Needs binutils (ld, objcopy, ar) beside the C compiler.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)

prefix=/usr/local
build="$(cd "$repo" && realpath -m "${CARGO_TARGET_DIR:-target}")/release"
while [ $# -gt 0 ]; do
  case $1 in
    --prefix) prefix=${2:?--prefix needs a directory}; shift 2 ;;
    --prefix=*) prefix=${1#--prefix=}; shift ;;
    --build-dir) build=${2:?--build-dir needs a directory}; shift 2 ;;
    --build-dir=*) build=${1#--build-dir=}; shift ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "install.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
case $prefix in /*) ;; *) prefix="$PWD/$prefix" ;; esac

for f in libseawall.so libseawall.a; do
  [ -f "$build/$f" ] || {
    echo "install.sh: $build/$f is missing: build it first with cargo build --release --locked -p seawall-ffi" >&2
    exit 1
  }
done
for tool in ld objcopy ar; do
  command -v "$tool" >/dev/null || { echo "install.sh: $tool (binutils) is not installed" >&2; exit 1; }
done

# The one version of the workspace ([workspace.package] in Cargo.toml).
version=$(sed -n '/^\[workspace.package\]/,/^\[/ s/^version = "\(.*\)"/\1/p' "$repo/Cargo.toml")
major=${version%%.*}
minor=${version#*.}; minor=${minor%%.*}
[ -n "$major" ] && [ -n "$minor" ] || { echo "install.sh: no version in Cargo.toml" >&2; exit 1; }

root="${DESTDIR:-}$prefix"
lib="$root/lib"
so="libseawall.so.$version"
mkdir -p "$root/include" "$lib/.debug" "$lib/pkgconfig" "$lib/cmake/seawall"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

install -m 644 "$repo/include/seawall.h" "$root/include/seawall.h"

# Shared library: the debug info goes to its own file, linked back by name.
objcopy --only-keep-debug "$build/libseawall.so" "$tmp/$so.debug"
objcopy --strip-unneeded --remove-section=.comment \
  --add-gnu-debuglink="$tmp/$so.debug" "$build/libseawall.so" "$tmp/$so"
install -m 644 "$tmp/$so.debug" "$lib/.debug/$so.debug"
install -m 755 "$tmp/$so" "$lib/$so"
ln -sfn "$so" "$lib/libseawall.so.$major"
ln -sfn "libseawall.so.$major" "$lib/libseawall.so"

# Static library: cargo's archive holds every object of Rust's std with their
# global symbols, debug info and LLVM bitcode. Linked into one relocatable
# object from the seawall_* roots (unused std code collected), with every
# other symbol made local, it can sit beside another Rust static library in one
# program without duplicate symbols, and only what the header declares is
# visible.
archive_exports() { # the seawall_* functions the archive defines
  readelf -sW "$1" | awk '$5 == "GLOBAL" && $7 != "UND" && $8 ~ /^seawall_/ {print $8}' | sort -u
}
archive_exports "$build/libseawall.a" >"$tmp/exports"
[ -s "$tmp/exports" ] || { echo "install.sh: $build/libseawall.a defines no seawall_* symbol" >&2; exit 1; }
mapfile -t roots < <(sed 's/^/--undefined=/' "$tmp/exports")
ld -r --gc-sections "${roots[@]}" --whole-archive "$build/libseawall.a" -o "$tmp/all.o"
objcopy --strip-debug --remove-section=.llvmbc --remove-section=.llvmcmd --remove-section=.comment \
  --keep-global-symbols="$tmp/exports" "$tmp/all.o" "$tmp/seawall.o"
rm -f "$tmp/libseawall.a"
ar rcsD "$tmp/libseawall.a" "$tmp/seawall.o"
install -m 644 "$tmp/libseawall.a" "$lib/libseawall.a"

# What a static link needs besides the archive (rustc --print native-static-libs
# for std on linux-gnu).
static_libs="-lgcc_s -lutil -lrt -lpthread -lm -ldl -lc"

cat >"$lib/pkgconfig/seawall.pc" <<EOF
# The prefix is found from this file's place, so the tree can be moved.
prefix=\${pcfiledir}/../..
includedir=\${prefix}/include
libdir=\${prefix}/lib

Name: seawall
Description: Fault-tolerance primitives (circuit breaker, bulkhead, retry budget, health) on a lock-free core
URL: https://github.com/seawall-rs/seawall
Version: $version
Cflags: -I\${includedir}
Libs: -L\${libdir} -lseawall
Libs.private: $static_libs
EOF

cmake_libs=$(printf '%s' "$static_libs" | sed 's/-l//g; s/ /;/g')
cat >"$lib/cmake/seawall/seawallConfig.cmake" <<EOF
# find_package(seawall) defines two imported targets:
#   seawall::seawall  the shared library (libseawall.so.$major)
#   seawall::static   the static library (libseawall.a and what it needs)
# The prefix is found from this file's place (PREFIX/lib/cmake/seawall).
get_filename_component(_seawall_prefix "\${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
if(NOT TARGET seawall::seawall)
  add_library(seawall::seawall SHARED IMPORTED)
  set_target_properties(seawall::seawall PROPERTIES
    IMPORTED_LOCATION "\${_seawall_prefix}/lib/$so"
    IMPORTED_SONAME "libseawall.so.$major"
    INTERFACE_INCLUDE_DIRECTORIES "\${_seawall_prefix}/include")
endif()
if(NOT TARGET seawall::static)
  add_library(seawall::static STATIC IMPORTED)
  set_target_properties(seawall::static PROPERTIES
    IMPORTED_LOCATION "\${_seawall_prefix}/lib/libseawall.a"
    INTERFACE_INCLUDE_DIRECTORIES "\${_seawall_prefix}/include"
    INTERFACE_LINK_LIBRARIES "$cmake_libs")
endif()
set(seawall_INCLUDE_DIRS "\${_seawall_prefix}/include")
set(seawall_LIBRARIES seawall::seawall)
unset(_seawall_prefix)
EOF

cat >"$lib/cmake/seawall/seawallConfigVersion.cmake" <<EOF
# seawall $version for x86_64 (64-bit). Before 1.0 a minor release may change
# the ABI, so a request is met by the same major and, at major 0, the same minor.
set(PACKAGE_VERSION "$version")
if(PACKAGE_FIND_VERSION STREQUAL "")
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
elseif(PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
elseif(NOT PACKAGE_FIND_VERSION_MAJOR STREQUAL "$major")
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
elseif("$major" STREQUAL "0" AND NOT PACKAGE_FIND_VERSION_MINOR STREQUAL "$minor")
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
else()
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
  if(PACKAGE_FIND_VERSION STREQUAL PACKAGE_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
endif()
if(NOT CMAKE_SIZEOF_VOID_P STREQUAL "8")
  set(PACKAGE_VERSION "$version (64-bit)")
  set(PACKAGE_VERSION_UNSUITABLE TRUE)
endif()
EOF
chmod 644 "$lib/pkgconfig/seawall.pc" "$lib/cmake/seawall/"*.cmake
echo "installed seawall $version into $root"
