#!/usr/bin/env bash
# Installs the build tree into a temporary prefix and builds
# examples/embed.cpp against the installed copy twice, with find_package and
# with pkg-config, and runs both programs. Then configures a project that
# adds taskforce with add_subdirectory and TASKFORCE_LIBRARY_ONLY.
# usage: install_test.sh BUILD_DIR SOURCE_DIR GENERATOR CXX_COMPILER
set -euo pipefail
build=$1 src=$2 generator=$3 cxx=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

prefix=$tmp/prefix
cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" \
  || { cat "$tmp/install.log" >&2; fail "cmake --install"; }
[ -x "$prefix/bin/taskforce" ] || fail "no bin/taskforce in the prefix"
"$prefix/bin/taskforce" --version | grep -q '^taskforce [0-9]' \
  || fail "the installed command does not print its version"
# Outside the source tree, so only installed headers can be found.
cp "$src/examples/embed.cpp" "$tmp/embed.cpp"

expect_embed_ran() { # PROGRAM
  local out
  out=$("$1") || fail "$1 exited $?"
  grep -q '^done: 0 left over, permit [0-9]* released true$' <<<"$out" \
    || fail "$1 printed: $out"
  grep -q 'call-5 started' <<<"$out" || fail "$1 ran no fifth call: $out"
}

# --- find_package(taskforce) ---------------------------------------------------
cmake -S "$src/tests/package/consumer" -B "$tmp/consumer" -G "$generator" \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$prefix" \
  -DEMBED_SOURCE="$tmp/embed.cpp" >"$tmp/consumer.log" 2>&1 \
  || { cat "$tmp/consumer.log" >&2; fail "find_package(taskforce) failed"; }
grep -qx "taskforce_DIR:PATH=$prefix/lib[^ ]*/cmake/taskforce" \
  "$tmp/consumer/CMakeCache.txt" \
  || fail "find_package found another taskforce: $(grep taskforce_DIR "$tmp/consumer/CMakeCache.txt")"
cmake --build "$tmp/consumer" >"$tmp/consumer-build.log" 2>&1 \
  || { cat "$tmp/consumer-build.log" >&2; fail "building against taskforce::taskforce"; }
expect_embed_ran "$tmp/consumer/embed"
echo "find_package: ok"

# --- pkg-config taskforce --------------------------------------------------------
pc=$(find "$prefix" -name taskforce.pc)
[ -n "$pc" ] || fail "no taskforce.pc in the prefix"
export PKG_CONFIG_PATH=$(dirname "$pc")
[ "$(pkg-config --modversion taskforce)" != "" ] || fail "pkg-config taskforce"
include=$(pkg-config --variable=includedir taskforce)
[ -f "$include/taskforce/runtime.hpp" ] || fail "includedir $include has no header"
# shellcheck disable=SC2046
"$cxx" -std=c++17 "$tmp/embed.cpp" $(pkg-config --cflags --libs taskforce) \
  -o "$tmp/embed-pc" 2>"$tmp/pc-build.log" \
  || { cat "$tmp/pc-build.log" >&2; fail "building with pkg-config --cflags --libs taskforce"; }
expect_embed_ran "$tmp/embed-pc"
echo "pkg-config: ok"

# --- add_subdirectory with TASKFORCE_LIBRARY_ONLY ---------------------------------
cmake -S "$src/tests/package/subdirectory" -B "$tmp/subdirectory" \
  -G "$generator" -DCMAKE_CXX_COMPILER="$cxx" -DTASKFORCE_SOURCE="$src" \
  -DEMBED_SOURCE="$tmp/embed.cpp" >"$tmp/subdirectory.log" 2>&1 \
  || { cat "$tmp/subdirectory.log" >&2; fail "add_subdirectory with TASKFORCE_LIBRARY_ONLY"; }
grep -q 'library only: ok' "$tmp/subdirectory.log" || fail "no check ran"
echo "library only: ok"
