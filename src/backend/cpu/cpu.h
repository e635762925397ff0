/*
 * cpu.h - the cpu backend's instance state. The compute kernels and the one thread pool come from
 * src/backend/cpu/kernels/ (kernels.h: ingot__sgemm, ingot__sgemv, ingot__gemm_half,
 * ingot__qx_quantize + ingot__qgemm, ingot__pool_*); cpu.c routes the backend's ops onto them.
 */
#ifndef INGOT_CPU_H
#define INGOT_CPU_H

#include "backend_internal.h"
#include "cpu/kernels/kernels.h"

typedef struct cpu_ctx {
    ingot__pool *pool; /* the kernels' persistent pool: the instance's only threads */
    uint32_t threads;
    char desc[96];
    /* Scratch grown on demand (never shrunk): packed copies of operands the kernels cannot read
     * through their strides, and quantized activations of qlinear. */
    void *scratch;
    size_t scratch_size;
} cpu_ctx;

/* Runs fn(arg, begin, end) over [0, n) in chunks of `chunk` on the pool (the caller included);
 * returns when all chunks are done. Chunks are fixed by (n, chunk) alone, so what a chunk
 * computes never depends on the thread count. */
typedef void (*cpu_range_fn)(void *arg, int64_t begin, int64_t end);
void ingot__cpu_run(cpu_ctx *c, int64_t n, int64_t chunk, cpu_range_fn fn, void *arg);

#endif
