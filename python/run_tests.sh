#!/usr/bin/env bash
# Builds the Python package into a temporary --target (the install contract of README.md) and
# runs its pytest suite with Debian's /usr/bin/python3; then, unless INGOT_PY_ASAN=0, once more
# with library and extension built with ASan+UBSan (libasan preloaded into the interpreter,
# leak detection off: CPython keeps allocations alive at exit by design).
# Also loads the abi3 extension in every other CPython >= 3.9 under ~/.pyenv (if any).
# scripts/test.sh calls it; run it alone as `bash python/run_tests.sh`.
set -euo pipefail
cd "$(dirname "$0")"
here=$(pwd)
py=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "== python: pip install --target, pytest"
export INGOT_PY_CMAKE_DIR="$here/build/cmake"
$py -m pip install -q --no-build-isolation --no-index --target "$tmp/site" . >"$tmp/pip.log" 2>&1 ||
  { cat "$tmp/pip.log"; exit 1; }
# the CLI of the same build: the runtime tests compare generation and tokenization with it
cmake --build "$INGOT_PY_CMAKE_DIR" --target ingot_cli -j "${CMAKE_BUILD_PARALLEL_LEVEL:-2}" \
  >"$tmp/cli.log" 2>&1 || { cat "$tmp/cli.log"; exit 1; }
export INGOT_CLI="$INGOT_PY_CMAKE_DIR/tools/cli/ingot"
(cd "$tmp" && PYTHONPATH="$tmp/site" $py -m pytest -q -p no:cacheprovider "$here/tests")

# abi3: the one extension must load in every other CPython >= 3.9 on the machine (pyenv's, if
# any; they have no NumPy, so only the extension module itself is imported and called)
for other in "$HOME"/.pyenv/versions/3.*/bin/python3; do
  [ -x "$other" ] || continue
  "$other" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 9) else 1)' || continue
  "$other" - "$tmp/site/ingot/_ingot.abi3.so" <<'PY'
import importlib.util as u, sys
spec = u.spec_from_file_location("ingot._ingot", sys.argv[1])
m = u.module_from_spec(spec)
spec.loader.exec_module(m)
assert len(m.dtypes()) > 40 and m.version()
print("abi3: loads in Python", sys.version.split()[0])
PY
done

if [ "${INGOT_PY_ASAN:-1}" != 0 ]; then
  echo "== python: the same suite against an ASan+UBSan build of library and extension"
  INGOT_PY_SANITIZE=1 INGOT_PY_CMAKE_DIR="$here/build/cmake-asan" \
    $py -m pip install -q --no-build-isolation --no-index --target "$tmp/asan" . \
    >"$tmp/pip-asan.log" 2>&1 || { cat "$tmp/pip-asan.log"; exit 1; }
  libasan=$(gcc -print-file-name=libasan.so)
  (cd "$tmp" && PYTHONPATH="$tmp/asan" LD_PRELOAD="$libasan" \
    ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 INGOT_PY_UNDER_ASAN=1 \
    $py -m pytest -q -p no:cacheprovider "$here/tests")
fi
