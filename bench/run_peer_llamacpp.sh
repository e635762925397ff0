#!/usr/bin/env bash
# bench/run_peer_llamacpp.sh [DIR]: ingot and llama.cpp side by side on the benchmark models, on
# this machine, in the same minutes: for each of Q4_K, Q8_0 and F16 at 1 and 2 threads, ROUNDS
# rounds (3 by default) of `ingot bench generate` and bench/peer_llamacpp.mjs alternating, each a
# prefill of 128 tokens and 32 decode steps, REPS repetitions (3). One JSON object per line on
# stdout, ingot's tagged "build": "ingot"; bench/peer_summary.py turns them into the table of
# docs/PERFORMANCE.md (medians per side, and the median of the per-round ratios).
# Needs NLC (node-llama-cpp's folder, see peer_llamacpp.mjs for the npm command); the models
# (llama.cpp's llama-bench shape with a vocabulary, which llama.cpp requires) are written into
# DIR (build/lm-peer) by bench_lm --vocab-from unless present. Holds /tmp/ingot-bench.lock per run.
# Both sides keep the KV cache in f16 (llama.cpp's default cache type; ingot's --kv f16, KV=f32
# for ingot's own default).
set -euo pipefail
: "${NLC:?set NLC to the node-llama-cpp folder (see bench/peer_llamacpp.mjs)}"
ING=${ING:-build/tools/cli/ingot}
GEN=${GEN:-build/bench/bench_lm}
DIR=${1:-build/lm-peer}
VOCAB=${VOCAB:-../shared/fixtures/tokenizers/llama.cpp/ggml-vocab-llama-spm.gguf}
ROUNDS=${ROUNDS:-3}
REPS=${REPS:-3}
TYPES=${TYPES:-Q4_K Q8_0 F16}
KV=${KV:-f16}
THREADS=${THREADS:-1 2}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$DIR"
for dt in $TYPES; do
    [ -f "$DIR/llama-$dt.gguf" ] || "$GEN" "$DIR/llama-$dt.gguf" "$dt" --vocab-from "$VOCAB" >&2
done
for dt in $TYPES; do
    for t in $THREADS; do
        for r in $(seq "$ROUNDS"); do
            flock /tmp/ingot-bench.lock "$ING" bench generate "$DIR/llama-$dt.gguf" \
                --threads "$t" --prompt-tokens 128 --decode-tokens 32 --reps "$REPS" --kv "$KV" \
                --json | sed "s/^{/{\"build\": \"ingot\", \"round\": $r, /"
            flock /tmp/ingot-bench.lock node "$HERE/peer_llamacpp.mjs" "$DIR/llama-$dt.gguf" \
                --threads "$t" --prompt-tokens 128 --decode-tokens 32 --reps "$REPS" |
                sed "s/^{/{\"build\": \"llama.cpp\", \"round\": $r, /"
        done
    done
done
