/*
 * kernels.h - the CPU backend's compute kernels: a persistent thread pool, run-time ISA selection,
 * cache-blocked f32 GEMM, f32 GEMV and int8 x int8 GEMV (per-row int8 and GGML Q8_0 blocks).
 *
 * Every kernel is compiled for several ISAs in the same object (GCC target attributes); the ISA
 * is chosen once at run time from CPUID (ingot__cpu_isa) and can be lowered for tests with
 * ingot__set_isa. Matrices are row-major with explicit leading dimensions, in elements.
 *
 * Determinism: for a fixed ISA, results do not depend on the thread count (work is split over
 * output rows or columns; each output element is always reduced in the same order).
 * Threads: a pool runs one job at a time; kernels called with the same pool from several
 * threads are serialised by the pool. pool may be NULL: the kernel then runs on the calling
 * thread with scratch allocated for the call.
 */
#ifndef INGOT_KERNELS_H
#define INGOT_KERNELS_H

#include "deps.h"
#include "ingot/core.h"

typedef enum {
    INGOT__ISA_SCALAR = 0, /* portable C; what the compiler vectorises for the baseline target */
    INGOT__ISA_AVX2 = 1,   /* AVX2 + FMA + F16C (Haswell, Zen 1+) */
} ingot__isa;

/* Best ISA this CPU supports. */
ingot__isa ingot__cpu_isa(void);
/* The ISA kernels use (default: ingot__cpu_isa()). Setting one the CPU lacks clamps it down.
 * Returns the ISA now in effect. For tests and benchmarks; not thread-safe against running
 * kernels. */
ingot__isa ingot__set_isa(ingot__isa isa);
ingot__isa ingot__get_isa(void);
const char *ingot__isa_name(ingot__isa isa);

/* ---- thread pool ---- */
typedef struct ingot__pool ingot__pool;
/* nthreads >= 1 workers in all, the calling thread included (nthreads - 1 are created).
 * NULL on allocation or thread-creation failure. */
ingot__pool *ingot__pool_create(const ingot_allocator *a, unsigned nthreads);
void ingot__pool_destroy(ingot__pool *p);
unsigned ingot__pool_threads(const ingot__pool *p); /* 1 for NULL */
/* Runs fn(ctx, task, worker) for task in [0, ntasks), spread over the workers (worker in
 * [0, threads)); returns when all are done. The caller works too. */
typedef void (*ingot__task_fn)(void *ctx, size_t task, unsigned worker);
void ingot__pool_run(ingot__pool *p, ingot__task_fn fn, void *ctx, size_t ntasks);
/* Per-worker scratch of at least n bytes, 64-byte aligned, kept between jobs (grown on demand).
 * NULL on allocation failure. Only for the worker's own use during a job. */
void *ingot__pool_scratch(ingot__pool *p, unsigned worker, size_t n);

/* ---- f32 GEMM: C[M,N] = alpha * op(A)[M,K] . op(B)[K,N] + beta * C ----
 * op(A) = A (M x K, lda >= K) or, with trans_a, A^T where A is K x M (lda >= M); likewise B.
 * beta == 0 does not read C (it may hold NaN). NOMEM if scratch cannot be had.
 * Up to 16 rows of C (without trans_a, AVX2) B is streamed once instead of packed, and one row
 * against B^T runs the GEMV, so a batch of rows against [out, in] weights (trans_b) is best
 * done here in one call rather than as one ingot__sgemv per row (4096 x 4096 weights, 1
 * thread: 1 row 2.9 ms either way; 2 rows 4.5 ms vs 6.1; 8 rows 9.2 ms vs 24; 16: 15 vs 48). */
ingot_status ingot__sgemm(ingot__pool *pool, bool trans_a, bool trans_b, size_t M, size_t N,
                          size_t K, float alpha, const float *A, size_t lda, const float *B,
                          size_t ldb, float beta, float *C, size_t ldc);

/* The most per-worker pool scratch any ingot__sgemm call asks for, whatever the problem size.
 * A caller that must not allocate during a GEMM grows every worker's scratch
 * (ingot__pool_scratch) to this once beforehand. */
size_t ingot__sgemm_scratch_bytes(void);

/* ---- f32 GEMV: y[M] = alpha * A[M,N] . x[N] + beta * y  (trans: y[N] = alpha*A^T.x + beta*y) */
void ingot__sgemv(ingot__pool *pool, bool trans, size_t M, size_t N, float alpha, const float *A,
                  size_t lda, const float *x, float beta, float *y);

/* ---- int8 GEMV, per-row scales: y[m] = wscale[m] * xscale * sum_k W[m,k] * x[k]
 * Operands are symmetric int8 in [-127, 127] (what symmetric quantisation, Q8_0 included,
 * produces; -128 is outside the contract: the AVX2 sign trick cannot represent +128).
 * Exact int32 accumulation; K up to 2^16 so no overflow is possible. */
void ingot__gemv_i8(ingot__pool *pool, size_t M, size_t K, const int8_t *W, size_t ldw,
                    const float *wscale, const int8_t *x, float xscale, float *y);

/* ---- Q8_0 GEMV (GGML block layout: per 32 elements an f16 scale then 32 int8):
 * y[m] = sum_b d_w[m,b] * d_x[b] * sum_i q_w[m,b,i] * q_x[b,i]; K multiple of 32;
 * W rows are K/32 blocks of 34 bytes; x is K/32 blocks. */
void ingot__gemv_q8_0(ingot__pool *pool, size_t M, size_t K, const void *W, const void *x,
                      float *y);
/* Quantizes x[K] (K multiple of 32) to Q8_0 blocks as GGML does (d = max|x|/127, round half
 * away from zero; values land in [-127, 127]). */
void ingot__quantize_q8_0(const float *x, size_t K, void *out);

#endif
