#!/usr/bin/python3
"""bench_python.py - open + first tensor access from Python, each in a fresh process, against
the same file through numpy.load(mmap_mode="r") (.npy), np.load (.npz), torch.load (.pt state
dict) and the C API (a small C program linked with libingot.a). Prints medians of --runs runs
(thread CPU time and wall time inside each process, page cache warm) and the import cost of each module.

    /usr/bin/python3 bench/bench_python.py --lib build/cmake/libingot.a [--runs 9] [--mb 256]

The package must be importable (PYTHONPATH=<pip --target dir>). Test files (a few hundred MB)
are written under build/bench-python/ once. Needs numpy and torch (Debian's python3-numpy,
python3-torch).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

C_SRC = r"""
#include <stdio.h>
#include <time.h>
#include <ingot/ingot.h>
static double now(void) {
    struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static double cpu(void) {
    struct timespec t; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec * 1e-9; }
int main(int argc, char **argv) {
    double c0 = cpu(), t0 = now();
    ingot_file *f; ingot_error e; ingot_tensor_info t;
    if (ingot_file_open(argv[1], NULL, &f, &e) != INGOT_OK) return 1;
    if (ingot_file_tensor_find(f, argv[2], &t) != INGOT_OK) return 1;
    volatile float x = ((const float *)t.data)[0];
    double t1 = now(), c1 = cpu();
    (void)x;
    printf("{\"open_access\": %.9f, \"cpu\": %.9f}\n", t1 - t0, c1 - c0);
    ingot_file_close(f);
    return 0;
}
"""

# Each snippet runs in a fresh interpreter; it prints a JSON object of seconds.
PY_INGOT = r"""
import time, json, sys
t0 = time.perf_counter()
import ingot
t1 = time.perf_counter(); c1 = time.thread_time()
f = ingot.open(sys.argv[1])
a = f[sys.argv[2]]
x = float(a.flat[0])
t2 = time.perf_counter(); c2 = time.thread_time()
print(json.dumps({"import": t1 - t0, "open_access": t2 - t1, "cpu": c2 - c1}))
"""
PY_NPY = r"""
import time, json, sys
t0 = time.perf_counter()
import numpy as np
t1 = time.perf_counter(); c1 = time.thread_time()
a = np.load(sys.argv[1], mmap_mode="r")
x = float(a.flat[0])
t2 = time.perf_counter(); c2 = time.thread_time()
print(json.dumps({"import": t1 - t0, "open_access": t2 - t1, "cpu": c2 - c1}))
"""
PY_NPZ = r"""
import time, json, sys
t0 = time.perf_counter()
import numpy as np
t1 = time.perf_counter(); c1 = time.thread_time()
z = np.load(sys.argv[1])
a = z[sys.argv[2]]
x = float(a.flat[0])
t2 = time.perf_counter(); c2 = time.thread_time()
print(json.dumps({"import": t1 - t0, "open_access": t2 - t1, "cpu": c2 - c1}))
"""
PY_TORCH = r"""
import time, json, sys
t0 = time.perf_counter()
import torch
t1 = time.perf_counter(); c1 = time.thread_time()
sd = torch.load(sys.argv[1], map_location="cpu")
x = float(sd[sys.argv[2]].view(-1)[0])
t2 = time.perf_counter(); c2 = time.thread_time()
print(json.dumps({"import": t1 - t0, "open_access": t2 - t1, "cpu": c2 - c1}))
"""


def make_files(d, mb):
    import numpy as np
    import torch
    os.makedirs(d, exist_ok=True)
    side = int(((mb << 20) // 4) ** 0.5)
    paths = {"npy": os.path.join(d, "w.npy"), "npz": os.path.join(d, "w.npz"),
             "pt": os.path.join(d, "sd.pt")}
    if all(os.path.exists(p) for p in paths.values()):
        return paths
    rng = np.random.default_rng(0)
    w = rng.standard_normal((side, side), dtype=np.float32)
    np.save(paths["npy"], w)
    np.savez(paths["npz"], w=w, b=np.ones(side, np.float32))
    # a state dict of a few hundred MB: 24 layers of 4 tensors
    per = (mb << 20) // 4 // 96
    r = int(per ** 0.5)
    sd = {}
    for k in range(24):
        for part in ("q", "k", "v", "o"):
            sd[f"layers.{k}.attn.{part}.weight"] = torch.from_numpy(
                rng.standard_normal((r, r), dtype=np.float32))
    torch.save(sd, paths["pt"])
    return paths


def build_c(lib, d):
    src = os.path.join(d, "open_access.c")
    exe = os.path.join(d, "open_access")
    with open(src, "w") as f:
        f.write(C_SRC)
    libs = ["-lpthread", "-lm"]
    pc = os.path.join(os.path.dirname(lib), "ingot.pc")
    if os.path.exists(pc):
        for line in open(pc):
            if line.startswith("Libs.private:"):
                libs = line.split()[1:]
    subprocess.check_call(["gcc", "-O2", "-DINGOT_STATIC_DEFINE", "-I", os.path.join(ROOT,
                           "include"), src, "-o", exe, lib] + libs)
    return exe


def median_run(cmd, runs):
    vals = {}
    for _ in range(runs):
        out = subprocess.run(cmd, check=True, capture_output=True).stdout
        for k, v in json.loads(out).items():
            vals.setdefault(k, []).append(v)
    return {k: statistics.median(v) for k, v in vals.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lib", default=os.path.join(ROOT, "python", "build", "cmake",
                                                   "libingot.a"))
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--mb", type=int, default=256)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    d = os.path.join(ROOT, "build", "bench-python")
    paths = make_files(d, a.mb)
    exe = build_c(a.lib, d)
    py = sys.executable
    for p in paths.values():   # page cache warm for everyone
        with open(p, "rb") as f:
            while f.read(1 << 24):
                pass
    rows = []
    import ingot
    with ingot.open(paths["npy"]) as f:
        npy_tensor = f.keys()[0]
    cases = [
        ("npy", "ingot", [py, "-c", PY_INGOT, paths["npy"], npy_tensor]),
        ("npy", "numpy.load(mmap_mode='r')", [py, "-c", PY_NPY, paths["npy"]]),
        ("npy", "C API", [exe, paths["npy"], npy_tensor]),
        ("npz", "ingot", [py, "-c", PY_INGOT, paths["npz"], "w"]),
        ("npz", "np.load", [py, "-c", PY_NPZ, paths["npz"], "w"]),
        ("npz", "C API", [exe, paths["npz"], "w"]),
        ("pt", "ingot", [py, "-c", PY_INGOT, paths["pt"], "layers.0.attn.q.weight"]),
        ("pt", "torch.load", [py, "-c", PY_TORCH, paths["pt"], "layers.0.attn.q.weight"]),
        ("pt", "C API", [exe, paths["pt"], "layers.0.attn.q.weight"]),
    ]
    for fmt, who, cmd in cases:
        r = median_run(cmd, a.runs)
        rows.append({"file": fmt, "size": os.path.getsize(paths[fmt]), "reader": who, **r})
    if a.json:
        print(json.dumps(rows, indent=1))
        return
    print(f"open + first tensor access, fresh process, median of {a.runs} runs "
          f"(page cache warm; thread CPU time and wall time inside the process)")
    print(f"{'file':<5} {'MB':>6}  {'reader':<28} {'cpu':>12} {'wall':>12} {'import':>10}")
    for r in rows:
        imp = f"{r['import'] * 1e3:8.1f} ms" if "import" in r else ""
        print(f"{r['file']:<5} {r['size'] / 1e6:6.0f}  {r['reader']:<28} "
              f"{r['cpu'] * 1e6:9.1f} us {r['open_access'] * 1e6:9.1f} us {imp:>10}")
    by = {(r["file"], r["reader"]): r["cpu"] for r in rows}
    for fmt, ref in (("npy", "numpy.load(mmap_mode='r')"), ("npz", "np.load"),
                     ("pt", "torch.load")):
        print(f"{fmt} (cpu): ingot {by[(fmt, ref)] / by[(fmt, 'ingot')]:.1f}x faster than "
              f"{ref}; {by[(fmt, 'ingot')] / by[(fmt, 'C API')]:.2f}x the C API's time")


if __name__ == "__main__":
    main()
