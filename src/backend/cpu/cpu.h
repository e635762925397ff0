/*
 * cpu.h - the cpu backend's internals: thread pool (cpu_pool.c), SIMD kernels chosen at run time
 * (cpu_simd.c), and the instance state.
 *
 * Where the dedicated kernels plug in: src/backend/cpu/kernels/ (owned by the kernel work) will
 * provide the functions declared in "kernels/kernels.h" (sgemm/sgemv over [out,in] weights,
 * int8 x int8 block dots, AVX-512 / AVX2 / scalar variants, OpenBLAS comparison). Until then
 * cpu_simd.c holds small AVX2+FMA / scalar versions behind the same cpu_kernels table, so
 * swapping them in is a change of the table initialiser in cpu.c only.
 */
#ifndef INGOT_CPU_H
#define INGOT_CPU_H

#include "backend_internal.h"

typedef struct cpu_pool cpu_pool;
ingot_status ingot__cpu_pool_new(const ingot_allocator *al, uint32_t threads, cpu_pool **out);
void ingot__cpu_pool_free(cpu_pool *p);
uint32_t ingot__cpu_pool_threads(const cpu_pool *p);
/* Runs fn over [0, n) in chunks of `chunk` on every thread of the pool (the caller included);
 * returns when all chunks are done. */
void ingot__cpu_pool_run(cpu_pool *p, int64_t n, int64_t chunk, ing_task_fn fn, void *arg);

/* Kernel table, chosen once per instance from the CPU's features. */
typedef struct cpu_kernels {
    const char *isa; /* "avx2+fma", "scalar" */
    /* y[m*ldy + o] = dot(x[m*ldx .. +k], w[o*ldw .. +k]) (+ bias[o]) for m in [0,M), o in
     * [o0,o1): the f32 linear over [out,in] weights (rows contiguous). */
    void (*linear_f32)(const float *x, int64_t ldx, const float *w, int64_t ldw,
                       const float *bias, float *y, int64_t ldy, int64_t M, int64_t o0,
                       int64_t o1, int64_t k);
    /* Dot of one row of GGML Q8_0 weight blocks (f16 d + 32 int8) with activations quantized
     * per 32-block (int8 qa, f32 scales da): sum over blocks of d_w*d_a*sum(qw*qa). */
    float (*dot_q8_0)(const uint8_t *wblk, const int8_t *qa, const float *da, int64_t nblocks);
} cpu_kernels;

void ingot__cpu_pick_kernels(cpu_kernels *k);

typedef struct cpu_ctx {
    cpu_pool *pool;
    uint32_t threads;
    cpu_kernels k;
    char desc[96];
    /* Scratch grown on demand (never shrunk): quantized activations for qlinear. */
    void *scratch;
    size_t scratch_size;
} cpu_ctx;

#endif
