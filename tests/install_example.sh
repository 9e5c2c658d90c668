#!/bin/sh
# Install libqk from a build tree into a temporary prefix, then build the
# README's example against it with pkg-config alone, and run it.
set -eu
build=$1 src=$2
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
libdir=$(ls -d "$prefix"/lib*/pkgconfig | head -1)
test -f "$prefix/include/qk/qk.h" || { echo "qk.h not installed"; exit 1; }
export PKG_CONFIG_PATH="$libdir"
cc -std=c11 -Wall -Werror "$src/docs/example.c" $(pkg-config --cflags --libs --static qk) -o "$prefix/example"
out=$("$prefix/example")
echo "$out"
echo "$out" | grep -q "y\[0\] = .*(4.25 bits per weight)" || { echo "unexpected output"; exit 1; }
echo "install_example: 1 passed, 0 failed"
