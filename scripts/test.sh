#!/usr/bin/env bash
# Builds ingot twice and runs every test: a release build (unit, interop, fault-injection, CLI,
# install, freestanding and fuzz-corpus replay tests), a few tests again under valgrind, and an
# ASan+UBSan build running the whole suite. README's test command; .ci/run calls it.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${JOBS:-$(nproc)}
t0=$(date +%s)

echo "== release build"
cmake -S . -B build-test -DCMAKE_BUILD_TYPE=Release >/dev/null # as README's build: -O3 warnings too
cmake --build build-test -j"$jobs"
(cd build-test && ctest -j"$jobs" --output-on-failure)

echo "== valgrind (memcheck) on the core round trip, freestanding and corpus replay tests"
if command -v valgrind >/dev/null; then
  for t in build-test/tests/test_roundtrip build-test/tests/freestanding/fs_test; do
    valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite "$t" >/dev/null
  done
  for r in build-test/fuzz/replay_*; do
    [ -x "$r" ] || continue
    valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite "$r" fuzz/corpus/"$(basename "$r" | sed 's/^replay_//')" >/dev/null
  done
else
  echo "valgrind not installed: skipping (scripts/install-deps.sh installs it)" >&2
  exit 1
fi

echo "== ASan+UBSan build, whole suite"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DINGOT_SANITIZE=ON -DINGOT_BUILD_BENCH=OFF >/dev/null
cmake --build build-asan -j"$jobs"
(cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest -j"$jobs" --output-on-failure)

echo "== Python package: pip --target install, pytest, and the same against ASan (python/)"
bash python/run_tests.sh

echo "== all tests passed in $(( $(date +%s) - t0 )) s"
