#!/usr/bin/python3
"""bench_python_tokenize.py - ingot's tokenizers from Python on bench_tokenizer's corpus: one
Tokenizer.encode call per chunk against Tokenizer.encode_batch over all chunks (no word cache,
then the default 2 MB cache), in one process, CPU time (time.process_time), median of --reps.

  PYTHONPATH=<pip --target dir> /usr/bin/python3 bench/bench_python_tokenize.py \
      build/bench_tokenizer_corpus.txt [--reps N]

Same chunks as bench_tokenizer and tok_ref.py (lines joined until a chunk holds 4096 bytes); the
three ways must give the same ids (checked before timing). MB/s of input text, and the ratio of
each batch figure to the per-chunk loop measured in the same repetitions.
"""
import argparse
import os
import statistics
import sys
import time

import ingot

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from tok_ref import FIX, chunks  # noqa: E402  (the reference bench's chunking)

VOCABS = [("gpt-2", "tokenizers/llama.cpp/ggml-vocab-gpt-2.gguf"),
          ("llama-3", "tokenizers/llama3/tokenizer.json"),
          ("llama-2 spm", "tokenizers/llama.cpp/ggml-vocab-llama-spm.gguf")]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("corpus")
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    data = open(a.corpus, "rb").read()
    cs = chunks(data)
    mb = len(data) / 1e6
    print(f"corpus {len(data)} bytes, {len(cs)} chunks; CPU time, median of {a.reps}")
    for name, rel in VOCABS:
        t = ingot.Tokenizer(os.path.join(FIX, rel))
        ways = {"loop": lambda: [t.encode(c, add_special=False) for c in cs],
                "batch": lambda: t.encode_batch(cs, add_special=False, cache_bytes=0),
                "batch+cache": lambda: t.encode_batch(cs, add_special=False)}
        ref = ways["loop"]()
        for k, f in ways.items():
            if f() != ref:
                sys.exit(f"{name}: {k} gives other ids than the loop")
        times = {k: [] for k in ways}
        for _ in range(a.reps):
            for k, f in ways.items():
                t0 = time.process_time()
                f()
                times[k].append(time.process_time() - t0)
        ratios = {k: statistics.median(l / x for l, x in zip(times["loop"], times[k]))
                  for k in ways}
        print(f"{name:12s} " + "  ".join(
            f"{k} {mb / statistics.median(times[k]):6.1f} MB/s (x{ratios[k]:.2f})" for k in ways)
            + f"  ids {sum(map(len, ref))}")


if __name__ == "__main__":
    main()
