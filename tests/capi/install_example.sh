#!/usr/bin/env bash
# Installs the build (cmake --install) into a temporary prefix and builds
# examples/tc.c against the installed libredfox three ways: pkg-config
# (shared), pkg-config --static, and CMake's find_package(Redfox). Each
# must print the closure of the example's graph: 10 paths.
# Usage: install_example.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build="$1"
src="$2"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
prefix="$tmp/prefix"
cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; exit 1; }
for f in include/redfox.h; do
  [ -f "$prefix/$f" ] || { echo "FAIL: $f not installed"; exit 1; }
done
pc="$(find "$prefix" -name redfox.pc)"
cfg="$(find "$prefix" -name RedfoxConfig.cmake)"
[ -n "$pc" ] && [ -n "$cfg" ] || { echo "FAIL: redfox.pc or RedfoxConfig.cmake not installed"; exit 1; }
export PKG_CONFIG_PATH="$(dirname "$pc")"
libdir="$(pkg-config --variable=libdir redfox)"

check() {   # NAME BINARY
  local out
  out="$("$2" cpu)" || { echo "FAIL: $1: the example failed"; exit 1; }
  echo "$out" | grep -qx '10 paths (backend cpu)' || { echo "FAIL: $1: unexpected output:"; echo "$out"; exit 1; }
  echo "$out" | grep -qx '5 -> 6' || { echo "FAIL: $1: a path is missing"; exit 1; }
  echo "ok: $1"
}

# pkg-config, shared
cc -Wall -Wextra -Werror "$src/examples/tc.c" $(pkg-config --cflags --libs redfox) -Wl,-rpath,"$libdir" \
  -o "$tmp/tc_pc"
check "pkg-config (shared)" "$tmp/tc_pc"
# (ldd captured first: grep -q leaving early would fail the pipe under pipefail)
deps="$(ldd "$tmp/tc_pc")"
grep -q "$libdir/libredfox.so" <<<"$deps" || { echo "FAIL: not linked to the installed library:"; echo "$deps"; exit 1; }

# pkg-config, static
cc -Wall -Wextra -Werror "$src/examples/tc.c" -o "$tmp/tc_static" \
  $(pkg-config --cflags redfox) "$libdir/libredfox.a" $(pkg-config --libs-only-other --libs-only-L --static redfox | sed 's/-lredfox//') $(pkg-config --static --libs-only-l redfox | sed 's/-lredfox//')
check "pkg-config --static" "$tmp/tc_static"
deps="$(ldd "$tmp/tc_static")"
if grep -q libredfox <<<"$deps"; then echo "FAIL: the static build links libredfox.so"; exit 1; fi

# find_package(Redfox)
cmake -S "$src/examples" -B "$tmp/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" >"$tmp/cmake.log" 2>&1 \
  || { cat "$tmp/cmake.log"; echo "FAIL: configuring examples/ with find_package(Redfox)"; exit 1; }
cmake --build "$tmp/cmake-build" >>"$tmp/cmake.log" 2>&1 || { cat "$tmp/cmake.log"; exit 1; }
check "find_package(Redfox)" "$tmp/cmake-build/tc"
