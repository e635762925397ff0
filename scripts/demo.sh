#!/usr/bin/env bash
# The main job (README command 1): build ingot, pack a small model from raw data, show it, verify
# it, then corrupt one byte of a copy and show `verify` naming the damaged tensor.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" --target ingot_cli >/dev/null
ING=$PWD/build/tools/cli/ingot
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
cd "$D"

echo "# 1. raw little-endian weights of a 4-16-3 MLP (written by python3's struct module)"
python3 - <<'PY'
import math, struct
def f32(name, vals): open(name, "wb").write(struct.pack("<%df" % len(vals), *vals))
f32("fc1_w.bin", [math.sin(i) * 0.5 for i in range(16 * 4)])
f32("fc1_b.bin", [0.01 * i for i in range(16)])
f32("fc2_w.bin", [math.cos(i) * 0.25 for i in range(3 * 16)])
f32("fc2_b.bin", [0.0, 0.1, -0.1])
PY
ls -l ./*.bin

echo; echo "# 2. ingot pack"
"$ING" pack mlp.ingot --meta model.name=demo-mlp --meta model.layers:u32=2 \
    --meta model.activations:string[]=relu,identity --meta train.lr:f64=0.001 \
    --tensor fc1.weight:F32:16x4=fc1_w.bin --tensor fc1.bias:F32:16=fc1_b.bin \
    --tensor fc2.weight:F32:3x16=fc2_w.bin --tensor fc2.bias:F32:3=fc2_b.bin

echo; echo "# 3. ingot info"
"$ING" info mlp.ingot
echo; echo "# 4. ingot info --json"
"$ING" info --json mlp.ingot
echo; echo "# 5. ingot dump (first values of fc2.bias)"
"$ING" dump mlp.ingot fc2.bias

echo; echo "# 6. ingot verify"
"$ING" verify mlp.ingot

echo; echo "# 7. corrupt one byte inside fc2.weight in a copy, verify again"
cp mlp.ingot damaged.ingot
off=$("$ING" info --json mlp.ingot | python3 -c 'import json,sys; print([t["offset"] for t in json.load(sys.stdin)["tensors"] if t["name"]=="fc2.weight"][0])')
printf '\x42' | dd of=damaged.ingot bs=1 seek=$((off + 17)) conv=notrunc 2>/dev/null
set +e
"$ING" verify damaged.ingot
rc=$?
set -e
echo "exit status: $rc (1 = input rejected)"
[ "$rc" = 1 ]
echo; echo "demo finished: the intact file verifies, the damaged copy is rejected naming fc2.weight"
