#!/usr/bin/env bash
# bench/run_lm_bench.sh [INGOT [BENCH_LM [DIR [STORIES]]]]: writes the four benchmark models
# (bench_lm: llama.cpp's llama-bench shape, F32 / F16 / Q8_0 / Q4_K) into DIR unless present,
# then runs `ingot bench generate` on each at 1 and 2 threads (prefill of 128, 32 decode steps
# as llama-bench's pp128 / tg; REPS repetitions, 5 by default: best and median wall-clock rates,
# median rates per CPU second beside the bounds per CPU second), and on stories260K (255 decode
# steps from one prompt token, llama2.c's run) at 1 thread. One JSON object per line on stdout.
# The KV cache is f16 (llama.cpp's default; the read bound counts the weights only, and an f16
# cache reads half the bytes per position of an f32 one); KV=f32 runs the f32 cache. stories260K
# keeps the f32 cache (llama2.c's; its head size of 8 has no in-place f16 decode kernel).
# Each run holds /tmp/ingot-bench.lock, so benchmarks of parallel sessions do not overlap.
# BASE=/path/to/an/older/ingot runs that binary too, alternating with INGOT case by case (its
# lines carry "build": "base", INGOT's "build": "new"), for before/after figures of one run.
set -euo pipefail
ING=${1:-build/tools/cli/ingot}
GEN=${2:-build/bench/bench_lm}
DIR=${3:-build/lm-bench}
STORIES=${4:-../shared/fixtures/models/stories260K/stories260K.gguf}
mkdir -p "$DIR"
for dt in F32 F16 Q8_0 Q4_K; do
    [ -f "$DIR/llama-$dt.gguf" ] || "$GEN" "$DIR/llama-$dt.gguf" "$dt" >&2
done
REPS=${REPS:-5}
KV=${KV:-f16}
BASE=${BASE:-}
tag() { sed "s/^{/{\"build\": \"$1\", /"; }
for dt in Q4_K Q8_0 F16 F32; do
    for t in 1 2; do
        for b in ${BASE:+base} new; do
            bin=$ING
            [ "$b" = base ] && bin=$BASE
            flock /tmp/ingot-bench.lock "$bin" bench generate "$DIR/llama-$dt.gguf" --threads "$t" \
                --prompt-tokens 128 --decode-tokens 32 --reps "$REPS" --kv "$KV" --json |
                if [ -n "$BASE" ]; then tag "$b"; else cat; fi
        done
    done
done
flock /tmp/ingot-bench.lock "$ING" bench generate "$STORIES" --threads 1 --prompt-tokens 1 \
    --decode-tokens 255 --reps 15 --json
