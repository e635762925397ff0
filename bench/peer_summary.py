#!/usr/bin/env python3
"""bench/peer_summary.py [FILE]: the table of bench/run_peer_llamacpp.sh's JSON lines (stdin or
FILE). Per model and thread count: ingot's and llama.cpp's prefill and decode tokens/s (median
over the rounds of each run's best wall-clock rate, and of its rate per CPU second), and the
median over the rounds of ingot / llama.cpp, each round's two runs taken minutes apart at most.
Standard library only."""
import json
import os
import statistics
import sys


def main():
    src = open(sys.argv[1]) if len(sys.argv) > 1 else sys.stdin
    runs = {}
    for line in src:
        line = line.strip()
        if not line.startswith("{"):
            continue
        o = json.loads(line)
        key = (os.path.basename(o["model"]), o["threads"])
        side = runs.setdefault(key, {}).setdefault(o["build"], {})
        if o["build"] == "ingot":
            v = (o["prefill_tokens_per_s"], o["prefill_cpu_tokens_per_s"],
                 o["decode_tokens_per_s"], o["decode_cpu_tokens_per_s"])
        else:
            v = (o["prefill_best"], o["prefill_per_cpu_s"], o["decode_best"],
                 o["decode_per_cpu_s"])
        side[o["round"]] = v
    print("| model | threads | rounds | prefill ingot / llama.cpp (wall best) | ratio | "
          "per CPU s | ratio | decode ingot / llama.cpp (wall best) | ratio | per CPU s | ratio |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for (model, t), sides in sorted(runs.items()):
        a, b = sides.get("ingot", {}), sides.get("llama.cpp", {})
        rounds = sorted(set(a) & set(b))
        if not rounds:
            continue
        cells = []
        for k in range(4):
            ia = statistics.median(a[r][k] for r in rounds)
            lb = statistics.median(b[r][k] for r in rounds)
            ratio = statistics.median(a[r][k] / b[r][k] for r in rounds)
            cells.append(f"{ia:.1f} / {lb:.1f} | {ratio:.2f}x")
        print(f"| {model} | {t} | {len(rounds)} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
