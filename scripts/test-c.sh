#!/usr/bin/env bash
# The C ABI tests: C programs (ffi-c/tests/c/*.c, the rate limiter's among them, and the examples of ffi-c/README.md)
# compiled with -std=c99 -Wall -Wextra -Werror -pedantic against libseawall.a and
# libseawall.so, run natively and under valgrind; once more built with
# -fsanitize=address,undefined; a C++11 program including the header twice; the
# multi-process test on one shared breaker and one shared semaphore.
#
# Expects target/release/libseawall.{a,so} (scripts/test.sh builds them with
# `cargo build --release --locked -p seawall-ffi`). Fails on the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."

LIB=target/release
OUT=target/c-tests
SRC=ffi-c/tests/c
CC=${CC:-cc}
CXX=${CXX:-c++}
CFLAGS=(-std=c99 -Wall -Wextra -Werror -pedantic -g -O1 -Iinclude -I"$SRC")
STATIC=("$LIB/libseawall.a" -lpthread -ldl -lm)
SHARED=(-L"$LIB" -lseawall -Wl,-rpath,"$PWD/$LIB" -pthread)
VALGRIND=(valgrind --quiet --error-exitcode=1 --leak-check=full
  --errors-for-leak-kinds=definite,indirect --track-fds=no)

for f in "$LIB/libseawall.a" "$LIB/libseawall.so"; do
  [ -f "$f" ] || { echo "missing $f: build with cargo build --release --locked -p seawall-ffi" >&2; exit 1; }
done
mkdir -p "$OUT"
# Programs linked with -lseawall load the library by its SONAME
# (libseawall.so.<major>, ffi-c/build.rs); cargo writes only libseawall.so, so
# the link an install makes (scripts/install.sh) is made here in the build folder.
soname=$(readelf -d "$LIB/libseawall.so" | sed -n 's/.*Library soname: \[\(.*\)\]$/\1/p')
[ -n "$soname" ] || { echo "$LIB/libseawall.so has no SONAME" >&2; exit 1; }
ln -sfn libseawall.so "$LIB/$soname"

# The C guide's examples (ffi-c/README.md: the quick start, the bulkhead with retries), exactly
# as printed there.
readme_block() { # marker, output file
  awk -v m="<!-- $1" 'index($0, m) == 1 {f=1; next} f && /^```c/ {p=1; next} p && /^```/ {exit} p' \
    ffi-c/README.md >"$2"
  [ -s "$2" ] || { echo "no $1 block found in ffi-c/README.md" >&2; exit 1; }
}
readme_block c-quickstart "$OUT/quickstart.c"
readme_block c-bulkhead "$OUT/bulkhead.c"

step() { printf -- '--- %s\n' "$*"; }

step "libseawall.so exports exactly the functions the header declares"
diff <(nm -D --defined-only "$LIB/libseawall.so" | awk '{print $3}' | sort) \
  <(grep -E '^[a-z].*[ *]seawall_[a-z_]+\(' include/seawall.h | grep -oE 'seawall_[a-z_]+\(' |
    tr -d '(' | sort -u)

declare -A source=([api]="$SRC/api.c" [multiprocess]="$SRC/multiprocess.c"
  [rate_limiter]="$SRC/rate_limiter.c" [quickstart]="$OUT/quickstart.c" [bulkhead]="$OUT/bulkhead.c")
for prog in api multiprocess rate_limiter quickstart bulkhead; do
  step "compile $prog (C99, static and shared)"
  "$CC" "${CFLAGS[@]}" "${source[$prog]}" -o "$OUT/$prog-static" "${STATIC[@]}"
  "$CC" "${CFLAGS[@]}" "${source[$prog]}" -o "$OUT/$prog-shared" "${SHARED[@]}"
done
step "compile header_twice.cpp (C++11)"
"$CXX" -std=c++11 -Wall -Wextra -Werror -pedantic -Iinclude "$SRC/header_twice.cpp" \
  -o "$OUT/cpp" "${SHARED[@]}"

quickstart_says() { # the line the C guide promises
  grep -qx 'call 60 rejected (open), retry in 30.0 s' "$1" ||
    { echo "quick start printed:"; cat "$1"; return 1; }
}
bulkhead_says() { # likewise
  grep -qx 'done after 3 attempts' "$1" || { echo "bulkhead example printed:"; cat "$1"; return 1; }
}

for link in static shared; do
  step "run ($link)"
  "$OUT/api-$link"
  "$OUT/rate_limiter-$link"
  "$OUT/multiprocess-$link" 6 200000
  "$OUT/quickstart-$link" >"$OUT/quickstart.out"
  quickstart_says "$OUT/quickstart.out"
  "$OUT/bulkhead-$link" >"$OUT/bulkhead.out"
  bulkhead_says "$OUT/bulkhead.out"
done
"$OUT/cpp"

if command -v valgrind >/dev/null; then
  for link in static shared; do
    step "valgrind ($link)"
    "${VALGRIND[@]}" "$OUT/api-$link"
    "${VALGRIND[@]}" "$OUT/rate_limiter-$link"
    "${VALGRIND[@]}" "$OUT/multiprocess-$link" 4 2000
    "${VALGRIND[@]}" "$OUT/quickstart-$link" >"$OUT/quickstart.out"
    quickstart_says "$OUT/quickstart.out"
    "${VALGRIND[@]}" "$OUT/bulkhead-$link" >"$OUT/bulkhead.out"
    bulkhead_says "$OUT/bulkhead.out"
  done
  "${VALGRIND[@]}" "$OUT/cpp"
else
  printf '\n!!! valgrind is not installed: the valgrind runs are SKIPPED\n\n' >&2
fi

step "AddressSanitizer + UndefinedBehaviorSanitizer (static)"
SAN=(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all)
for prog in api multiprocess rate_limiter quickstart bulkhead; do
  "$CC" "${CFLAGS[@]}" "${SAN[@]}" "${source[$prog]}" -o "$OUT/$prog-asan" "${STATIC[@]}"
done
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1
"$OUT/api-asan"
"$OUT/rate_limiter-asan"
"$OUT/multiprocess-asan" 4 20000
"$OUT/quickstart-asan" >"$OUT/quickstart.out"
quickstart_says "$OUT/quickstart.out"
"$OUT/bulkhead-asan" >"$OUT/bulkhead.out"
bulkhead_says "$OUT/bulkhead.out"
echo "C ABI tests passed"
