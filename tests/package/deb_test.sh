#!/usr/bin/env bash
# Makes the Debian packages with CPack and checks them: the command's package
# depends on the package of every shared library the command links against;
# the development package ships the library, header, CMake package and .pc
# file, depends on the -dev packages, and a program builds against its
# unpacked files with pkg-config and runs.
# usage: deb_test.sh BUILD_DIR SOURCE_DIR CXX_COMPILER
set -euo pipefail
build=$1 src=$2 cxx=$3
for tool in cpack dpkg-deb dpkg-shlibdeps dpkg-query; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool is missing"; exit 77; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# depends_on NAME DEPENDS: whether the Depends field names package NAME
# (alternatives and version constraints aside).
depends_on() {
  tr ',|' '\n\n' <<<"$2" | awk '{print $1}' | grep -qxF -- "$1"
}

# Uncompressed: a debug build's files are hundreds of MB, and how the .deb is
# compressed is not what is checked here.
(cd "$tmp" && cpack -G DEB --config "$build/CPackConfig.cmake" -B "$tmp/out" \
   -D CPACK_DEBIAN_COMPRESSION_TYPE=none) \
  >"$tmp/cpack.log" 2>&1 || { cat "$tmp/cpack.log" >&2; fail "cpack -G DEB"; }
cmd_deb=$(ls "$tmp"/out/taskforce_*.deb 2>/dev/null | head -1)
dev_deb=$(ls "$tmp"/out/libtaskforce-dev_*.deb 2>/dev/null | head -1)
[ -n "$cmd_deb" ] || fail "no taskforce_*.deb: $(ls "$tmp/out")"
[ -n "$dev_deb" ] || fail "no libtaskforce-dev_*.deb: $(ls "$tmp/out")"

# --- the command ------------------------------------------------------------------
depends=$(dpkg-deb -f "$cmd_deb" Depends)
echo "taskforce Depends: $depends"
cmd_contents=$(dpkg-deb -c "$cmd_deb")
grep -q '\./usr/bin/taskforce$' <<<"$cmd_contents" || fail "no /usr/bin/taskforce"
# Every library the command needs (DT_NEEDED), found where the loader finds
# it, belongs to a package that Depends names (itself or a name it provides:
# libspdlog1.10 is depended on as libspdlog1.10-fmt9).
binary=$build/taskforce
needed=$(objdump -p "$binary" | awk '$1 == "NEEDED" {print $2}')
[ -n "$needed" ] || fail "objdump found no NEEDED entries"
for lib in $needed; do
  path=$(ldd "$binary" | awk -v l="$lib" '$1 == l {print $3}')
  [ -n "$path" ] || fail "ldd does not resolve $lib"
  real=$(readlink -f "$path")
  pkg=$(dpkg-query -S "$real" 2>/dev/null | head -1 | cut -d: -f1) \
    || pkg=$(dpkg-query -S "$path" 2>/dev/null | head -1 | cut -d: -f1) || true
  [ -n "$pkg" ] || fail "no package owns $path"
  names="$pkg $(dpkg-query -W -f='${Provides}' "$pkg" | sed 's/([^)]*)//g; s/,/ /g')"
  found=""
  for name in $names; do
    if depends_on "$name" "$depends"; then found=$name; fi
  done
  [ -n "$found" ] || fail "$lib comes from $pkg, which Depends does not name"
done

# --- the development package -------------------------------------------------------
dev_depends=$(dpkg-deb -f "$dev_deb" Depends)
echo "libtaskforce-dev Depends: $dev_depends"
for pkg in libcaf-dev libgit2-dev libsqlite3-dev libspdlog-dev; do
  depends_on "$pkg" "$dev_depends" || fail "Depends lacks $pkg"
done
contents=$(dpkg-deb -c "$dev_deb")
for f in 'usr/include/taskforce/runtime.hpp' 'usr/lib/.*libtaskforce\.a' \
         'usr/lib/.*cmake/taskforce/taskforceConfig\.cmake' \
         'usr/lib/.*pkgconfig/taskforce\.pc'; do
  grep -Eq "\./$f\$" <<<"$contents" || fail "the package lacks $f"
done
dpkg-deb -x "$dev_deb" "$tmp/root"
pc=$(find "$tmp/root" -name taskforce.pc)
export PKG_CONFIG_PATH=$(dirname "$pc")
cp "$src/examples/embed.cpp" "$tmp/embed.cpp"
# shellcheck disable=SC2046
"$cxx" -std=c++17 "$tmp/embed.cpp" $(pkg-config --cflags --libs taskforce) \
  -o "$tmp/embed" 2>"$tmp/build.log" \
  || { cat "$tmp/build.log" >&2; fail "building against the unpacked package"; }
"$tmp/embed" | grep -q '^done: 0 left over' || fail "the program built against the package failed"
echo "deb: ok"
