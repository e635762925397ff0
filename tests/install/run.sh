#!/usr/bin/env bash
# Installs the build into a scratch prefix, then builds and runs a consumer program against the
# installed headers and libraries, once through pkg-config and once through find_package(ingot).
set -euo pipefail
build=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
libdir=$(find "$work/prefix" -name libingot.so -printf '%h\n' | head -n1)
test -f "$work/prefix/include/ingot/ingot.h"
test -f "$libdir/libingot.a"
readelf -d "$libdir/libingot.so" | grep -q 'SONAME.*libingot.so.0'
export PKG_CONFIG_PATH="$libdir/pkgconfig"
test "$(pkg-config --modversion ingot)" = "0.1.0"
cc -std=c11 -Wall -Werror "$src/tests/install/consumer/consumer.c" $(pkg-config --cflags --libs ingot) \
   -o "$work/consumer_pc"
LD_LIBRARY_PATH="$libdir" "$work/consumer_pc" "$work/a.ingot"
cmake -S "$src/tests/install/consumer" -B "$work/cb" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/cb" >/dev/null
"$work/cb/consumer_shared" "$work/b.ingot"
"$work/cb/consumer_static" "$work/c.ingot"
"$work/prefix/bin/ingot" verify "$work/c.ingot" >/dev/null
# man pages per command and the shell completions come with the binary
test -s "$work/prefix/share/man/man1/ingot.1"
test -s "$work/prefix/share/man/man1/ingot-convert.1"
grep -q "complete -o filenames -F _ingot ingot" "$work/prefix/share/bash-completion/completions/ingot"
grep -q "#compdef ingot" "$work/prefix/share/zsh/site-functions/_ingot"
echo "install test: pkg-config and find_package consumers OK"
