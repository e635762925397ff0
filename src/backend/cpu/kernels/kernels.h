/*
 * kernels.h - the CPU backend's compute kernels: a persistent thread pool, run-time ISA levels,
 * cache-blocked f32 GEMM, f32 / F16 / BF16 GEMV, and the quantized dots (int8 with per-row
 * scales, GGML Q8_0, Q4_0, Q4_K, Q5_K, Q6_K weights read in their stored layout) for GEMV and GEMM.
 *
 * Every kernel exists for each ISA level (ingot_cpu_isa in ingot/backend.h: scalar, AVX2,
 * AVX-VNNI, AVX-512, AVX-512 VNNI, AMX), compiled into the same library with GCC/clang target
 * attributes; the level is chosen once at run time from CPUID (ingot__cpu_isa), capped by
 * INGOT_ISA or ingot__set_isa. A kernel reads the level once per call. Matrices are row-major
 * with explicit leading dimensions, in elements (bytes for quantized weights).
 *
 * Determinism: for a fixed level, results do not depend on the thread count (work is split over
 * output rows or columns; each output element is always reduced in the same order).
 * Threads: a pool runs one job at a time, so jobs from several threads on one pool run one
 * after another; a kernel call is not one job, though: the AMX and AVX-512 VNNI prefill routes
 * of ingot__qgemm grow the workers' scratch and pack the activations into worker 0's between
 * two jobs, so a pool must serve one calling thread at a time for ingot__qgemm (the cpu
 * backend's own rule: an instance is used by one thread at a time). pool may be NULL: the
 * kernel then runs on the calling thread with scratch allocated for the call.
 */
#ifndef INGOT_KERNELS_H
#define INGOT_KERNELS_H

#include "deps.h"
#include "ingot/backend.h"
#include "ingot/core.h"

typedef enum {
#define INGOT_X_(n, v, s) INGOT__ISA_##n = v,
    INGOT_CPU_ISA_LIST(INGOT_X_)
#undef INGOT_X_
        INGOT__ISA_COUNT
} ingot__isa;

/* Best level this CPU and OS support. */
ingot__isa ingot__cpu_isa(void);
/* Whether the CPU and OS support a level (they may support AVX512 without AVX_VNNI). */
bool ingot__isa_supported(ingot__isa isa);
/* The level kernels use (default: ingot__cpu_isa() capped by INGOT_ISA). Setting one caps it:
 * the best supported level at or below isa is used. Returns the level now in effect. */
ingot__isa ingot__set_isa(ingot__isa isa);
ingot__isa ingot__get_isa(void);
/* Whether the CPU and OS have AVX-512 VBMI (vpmultishiftqb: the repacked Q4_K kernel). */
bool ingot__cpu_vbmi(void);
/* Whether the streaming kernels prefetch ahead: the quantized dots on Intel CPUs and AMD Zen 5,
 * the F16 / BF16 ones (ingot__cpu_prefetch_half) on Intel; INGOT_PREFETCH=0|1 sets both (see
 * isa.c). */
bool ingot__cpu_prefetch(void);
bool ingot__cpu_prefetch_half(void);
/* Read streams per task of a one-row GEMV (decode): the 512-bit quantized dots read a run of
 * rows as this many sub-ranges in turn, one row (or step) of each, so that a core keeps as many
 * sequential streams in flight (the hardware prefetchers follow each within a page); each row
 * is still reduced as it is alone (the same bits). 4 on Intel, else 1. The F16 / BF16 dots take
 * ingot__gemv_streams_half: 4 on Intel and Zen 5, else 1. INGOT_GEMV_STREAMS=1, 2, 4 or 8 sets
 * both (1: one stream). */
unsigned ingot__gemv_streams(void);
unsigned ingot__gemv_streams_half(void);
/* Rows the f32 GEMV (ingot__sgemv, not transposed) reads together: 16 (sixteen for rows of up
 * to 1024 elements, else eight: as many read streams), 8, or 1 (one row, one stream, at a time);
 * each row is reduced the same way whichever (the same bits). 1 on Zen 5, else 16;
 * INGOT_SGEMV_ROWS=1|8|16 sets it; ingot__set_sgemv_rows (tests, benchmarks; 0: the default)
 * returns the value in effect. */
unsigned ingot__sgemv_rows(void);
unsigned ingot__set_sgemv_rows(unsigned r);
/* Sets both (rounded down to 1, 2, 4 or 8; 0: back to the defaults, re-reading the
 * environment); returns the quantized dots' value in effect (tests, benchmarks). */
unsigned ingot__set_gemv_streams(unsigned s);
/* The order in which a kernel of ns streams reads rows [0, rows): the rows split into ns
 * sub-ranges (sub-range s from row s * q + min(s, rem), q = rows / ns, rem = rows % ns, the first
 * rem one row longer), read position idx < q * ns is row idx / ns of sub-range idx % ns (groups
 * of ns rows, one per sub-range, read in turn); the rem rows left follow, one per longer
 * sub-range. ns = 1 (row idx), 2, 4 or 8. */
static inline size_t ingot__stream_row(size_t rows, size_t ns, size_t idx)
{
    unsigned sh = ns == 8 ? 3 : ns == 4 ? 2 : ns == 2 ? 1 : 0; /* ns: 1, 2, 4 or 8 */
    size_t q = rows >> sh, rem = rows & (ns - 1);
    if (idx < q << sh) {
        size_t s = idx & (ns - 1);
        return s * q + (s < rem ? s : rem) + (idx >> sh);
    }
    return (idx - (q << sh)) * (q + 1) + q;
}
/* Forgets the level in effect, so that the next kernel reads INGOT_ISA again (tests). */
void ingot__isa_reset(void);
/* True if INGOT_ISA is set to a name that is not a level (it is then ignored). */
bool ingot__isa_env_ignored(void);
const char *ingot__isa_name(ingot__isa isa);
int ingot__isa_from_name(const char *s); /* -1 if unknown */

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
 * Up to 16 rows of C (without trans_a, AVX2 and up) B is streamed once instead of packed, and one
 * row against B^T runs the GEMV, so a batch of rows against [out, in] weights (trans_b) is best
 * done here in one call rather than as one ingot__sgemv per row (4096 x 4096 weights, 1
 * thread: 1 row 2.9 ms either way; 2 rows 4.5 ms vs 6.1; 8 rows 9.2 ms vs 24; 16: 15 vs 48). */
ingot_status ingot__sgemm(ingot__pool *pool, bool trans_a, bool trans_b, size_t M, size_t N,
                          size_t K, float alpha, const float *A, size_t lda, const float *B,
                          size_t ldb, float beta, float *C, size_t ldc);

/* The most per-worker pool scratch any ingot__sgemm call asks for, whatever the problem size.
 * A caller that must not allocate during a GEMM grows every worker's scratch
 * (ingot__pool_scratch) to this once beforehand. */
size_t ingot__sgemm_scratch_bytes(void);

/* The blocked GEMM on the calling thread with caller scratch of ingot__sgemm_scratch_bytes()
 * (64-byte aligned), K > 0 and alpha != 0: for kernels that run it inside their own tasks. */
void ingot__sgemm_serial(bool trans_a, bool trans_b, size_t M, size_t N, size_t K, float alpha,
                         const float *A, size_t lda, const float *B, size_t ldb, float beta,
                         float *C, size_t ldc, void *scratch);

/* The L2 cache of one core in bytes (CPUID leaf 4 on Intel, 0x80000006 elsewhere; 0 if not
 * known), or the override: INGOT_L2_BYTES (read once; a decimal byte count, K or M suffix) or
 * ingot__set_l2_bytes (0: back to the CPU's or the variable's). The AVX2 f32 GEMM picks its
 * blocks by it (sgemm.c: ingot__sgemm_avx2_large_l2). */
size_t ingot__cpu_l2_bytes(void);
void ingot__set_l2_bytes(size_t bytes);
/* True when the AVX2 f32 GEMM at the current L2 size (ingot__cpu_l2_bytes) takes the large-L2
 * blocks (rows-first walk; see sgemm.c); false: the blocks measured on Zen. */
bool ingot__sgemm_avx2_large_l2(void);

/* ---- f32 GEMV: y[M] = alpha * A[M,N] . x[N] + beta * y  (trans: y[N] = alpha*A^T.x + beta*y) */
void ingot__sgemv(ingot__pool *pool, bool trans, size_t M, size_t N, float alpha, const float *A,
                  size_t lda, const float *x, float beta, float *y);

/* ---- F16 / BF16 weights, f32 activations: Y[i, m] = sum_k W[m, k] X[i, k] (+ Y if accumulate)
 * W is [M, K] of dtype wt (INGOT_DTYPE_F16 or BF16, row stride ldw elements), X is [nx, K] f32
 * (row stride ldx), Y is [nx, M] (row stride ldy). Weights are widened to f32 exactly (F16C /
 * AVX-512 conversions, BF16 by a shift) and the products summed in f32, one row of W streamed
 * once for up to 4 rows of X. Prefill batches: at the AMX level 16 or more rows (K a multiple
 * of 32) on BF16 tiles, X split into bf16 hi + lo and F16 weights into exact hi + lo halves
 * (amx.h: f32 GEMM's accuracy); elsewhere INGOT__QGEMM_DEQUANT_ROWS or more rows through the
 * f32 GEMM on widened panels. */
void ingot__gemm_half(ingot__pool *pool, ingot_dtype wt, size_t M, size_t K, const void *W,
                      size_t ldw, size_t nx, const float *X, size_t ldx, bool accumulate, float *Y,
                      size_t ldy);

/* ---- quantized dots ----
 * Weights stay as stored (zero copy): INGOT_DTYPE_I8 rows with one f32 scale per row, or GGML
 * blocks Q8_0, Q4_0 (32 elements), Q4_K, Q5_K, Q6_K (256 elements) back to back, ldw bytes from
 * one row to the next. Activations are quantized once per row to int8 for the dot: per block of
 * 32 (Q8_0 / Q4_0 weights), of 256 (K-quants) or per row (I8): d = max|x| / 127, q = round(x / d)
 * (half away from zero) in [-127, 127], kept with d as f32 and the sums of q the dots need for
 * the weights' offsets and minimums. The integer dots are exact; each block's (or row's) result
 * is scaled in f32. */

/* True for the weight dtypes above. */
bool ingot__qdot_supported(ingot_dtype wt);
/* K must be a multiple of the weight block (any K >= 1 for I8, at most 65536 so that the int32
 * sums cannot overflow). */
bool ingot__qdot_k_ok(ingot_dtype wt, size_t K);
/* Bytes of one quantized activation row (a multiple of 64); rows of a batch are this far apart. */
size_t ingot__qx_bytes(ingot_dtype wt, size_t K);
/* Quantizes x[K] for dots with weights of dtype wt into out (ingot__qx_bytes, 64-byte aligned). */
void ingot__qx_quantize(ingot_dtype wt, const float *x, size_t K, void *out);
/* Y[i * ldy + m] = sum_k deq(W)[m, k] * deq(X_i)[k] (+ Y[...] if accumulate) for m < M, i < nx,
 * with X_i = xq + i * ingot__qx_bytes(wt, K). wscale: per-row weight scales for I8, else
 * ignored. Rows of W are split over the pool; with nx > 1 every block of rows is kept in cache
 * while it meets all nx activation rows.
 * Prefill-sized batches take faster routes that read the f32 activations X (row stride ldx;
 * NULL: not available) instead of xq, which may then be NULL (ingot__qgemm_reads_f32): block
 * types with INGOT__QGEMM_DEQUANT_ROWS or more rows, at the AMX level decoded to bf16 panels on
 * BF16 tiles (amx.h); at the AVX-512 VNNI level Q8_0, Q4_0, Q4_K and Q5_K through the int8 GEMM
 * of igemm.h (X quantized per 32 elements there, NMSE about 1e-5 as the dots; X holding NaN or
 * inf takes the next route); elsewhere dequantized to f32 a panel of rows at a time into pool
 * scratch and multiplied by the blocked f32 GEMM, the activations unquantized (closer to the
 * exact result). At the AMX level int8 weights, and Q8_0 below that many rows, with 16 or more
 * rows run on int8 tiles. NOMEM if scratch cannot be had. */
#define INGOT__QGEMM_DEQUANT_ROWS 32
ingot_status ingot__qgemm(ingot__pool *pool, ingot_dtype wt, size_t M, size_t K, const void *W,
                          size_t ldw, const float *wscale, const void *xq, const float *X,
                          size_t ldx, size_t nx, bool accumulate, float *Y, size_t ldy);
/* Rows [0, rows) of a one-row F16 / BF16 product: y[r] (+)= W[r] . x[K] (rows ldw elements
 * apart), each reduced as ingot__gemm_half reduces it for nx = 1. */
void ingot__half_rows(ingot_dtype wt, const void *W, size_t ldw, size_t rows, size_t K,
                      const float *x, bool accumulate, float *y);
/* dst[i] = src[i] widened exactly for i < n, src F16 or BF16 (vcvtph2ps / a shift at the SIMD
 * levels: the prefill route's weight panels; ingot_dequantize's scalar loop was a third of a
 * 2-thread F16 prefill on Zen 5). */
void ingot__half_to_f32(ingot_dtype wt, const void *src, float *dst, size_t n);
/* Several one-row products with the same activation row x[K] as one pool job (decode: the q, k
 * and v projections, or gate and up): for each segment s, Y_s[m] = sum_k deq(W_s)[m, k] *
 * deq(x)[k] (+ Y_s[m] if acc) for m < M_s, W_s of dtype wt_s (not I8) with rows ldw_s bytes
 * apart, xq_s = x quantized for wt_s (ingot__qx_quantize; segments of one dtype may share it).
 * F16 / BF16 segments (ldw_s in bytes) take x unquantized, as ingot__gemm_half does.
 * Rows are split into tasks within one segment each; every row is reduced as ingot__qgemm (or
 * ingot__gemm_half) with nx = 1 reduces it (the same bits). */
typedef struct ingot__qseg {
    ingot_dtype wt;
    const void *W, *xq; /* F16 / BF16 weights: xq is the f32 row x itself */
    size_t ldw, M;
    float *Y;
    bool acc;
    bool rp; /* Q4_K weights repacked by ingot__q4kr_repack, xq ordered by ingot__qx_q4kr_order */
} ingot__qseg;
#define INGOT__QSEG_MAX 8
void ingot__qgemv_multi(ingot__pool *pool, size_t K, const ingot__qseg *seg, size_t nseg);
/* Repacked Q4_K (the runtime's layout for dense Q4_K linears): the 144-byte super-blocks of GGML
 * Q4_K with the same values rearranged inside each block, so that the AVX-512 VNNI kernel takes
 * fewer instructions per block (docs/BACKEND.md): bytes 0-5 the eight 6-bit sub-block scales
 * (scale k at bits 6k..6k+5, little-endian), 6-7 d (f16), 8-13 the eight 6-bit mins likewise,
 * 14-15 dmin, then byte 16 + 64h + 16L + e (h < 2, L < 4, e < 16) holds element e of sub-block
 * 4h + L in its low nibble and element 16 + e in its high nibble. ingot__qgemv_multi (segments
 * with rp) and ingot__qgemm_q4kr read it; the dots take activations ingot__qx_quantize(Q4_K)
 * reordered by ingot__qx_q4kr_order. */
void ingot__q4kr_repack(const void *src, void *dst, size_t nblocks);
/* The inverse (tests; the scalar route of the repacked dot). */
void ingot__q4kr_unpack(const void *src, void *dst, size_t nblocks);
void ingot__qx_q4kr_order(void *xq, size_t K);
/* ingot__qgemm(pool, INGOT_DTYPE_Q4_K, M, K, W, K / 256 * 144, NULL, xq, X, ldx, nx, ...) for W's
 * rows repacked by ingot__q4kr_repack (the runtime's layout for every use of a repacked linear):
 * the same routes and the same bits. The routes that read xq (fewer than
 * INGOT__QGEMM_DEQUANT_ROWS rows, or no X) take its rows ordered by ingot__qx_q4kr_order and
 * run the repacked dot; the prefill routes decode the repacked blocks (AMX: to bf16 panels;
 * elsewhere unpacked a row at a time, then dequantized as before). */
ingot_status ingot__qgemm_q4kr(ingot__pool *pool, size_t M, size_t K, const void *W,
                               const void *xq, const float *X, size_t ldx, size_t nx,
                               bool accumulate, float *Y, size_t ldy);
/* True when the level in effect runs repacked Q4_K with its SIMD kernel (AVX-512 VNNI with
 * VBMI); elsewhere a scalar route runs it (correct, slow: repacking then does not pay). */
bool ingot__q4kr_fast(void);
/* True when ingot__qgemm at the level in effect, given f32 activations, reads them and not
 * xq (a caller may then skip quantizing and pass xq = NULL): the AMX tiles, the AVX-512 VNNI
 * int8 GEMM (which quantizes X itself) and the f32 panels alike. */
bool ingot__qgemm_reads_f32(ingot_dtype wt, size_t K, size_t nx);

/* Quantizes x[K] (K multiple of 32) to GGML Q8_0 blocks (per 32 elements an f16 d = max|x|/127,
 * then 32 int8 rounded half away from zero), as GGML's reference quantizer does. */
void ingot__quantize_q8_0(const float *x, size_t K, void *out);

#endif
