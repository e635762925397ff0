/*
 * cpu.h - the cpu backend's instance state. The compute kernels and the one thread pool come from
 * src/backend/cpu/kernels/ (kernels.h: ingot__sgemm, ingot__sgemv, ingot__gemm_half,
 * ingot__qx_quantize + ingot__qgemm, ingot__pool_*); cpu.c routes the backend's ops onto them.
 */
#ifndef INGOT_CPU_H
#define INGOT_CPU_H

#include "backend_internal.h"
#include "cpu/kernels/kernels.h"

#define INGOT__CPU_ROPE_MAX_HALF 2048 /* RoPE pairs per row the fast path takes */

typedef struct cpu_ctx {
    ingot__pool *pool; /* the kernels' persistent pool: the instance's only threads */
    uint32_t threads;
    char desc[96];
    /* Scratch grown on demand (never shrunk): packed copies of operands the kernels cannot read
     * through their strides, and quantized activations of qlinear. */
    void *scratch;
    size_t scratch_size;
    /* RoPE at one position (decode rotates the queries and keys of every layer at the same
     * position): the cos and sin of its angles, kept from the first such call for the next ones
     * with the same position, theta and head size (cpu_rowops.c; the same doubles either way). */
    bool rope_valid;
    double rope_p, rope_theta;
    int64_t rope_d;
    double rope_cs[INGOT__CPU_ROPE_MAX_HALF], rope_sn[INGOT__CPU_ROPE_MAX_HALF];
} cpu_ctx;

/* Runs fn(arg, begin, end) over [0, n) in chunks of `chunk` on the pool (the caller included);
 * returns when all chunks are done. Chunks are fixed by (n, chunk) alone, so what a chunk
 * computes never depends on the thread count. */
typedef void (*cpu_range_fn)(void *arg, int64_t begin, int64_t end);
void ingot__cpu_run(cpu_ctx *c, int64_t n, int64_t chunk, cpu_range_fn fn, void *arg);

/* ingot_op_attention for f32 rows (cpu_attention.c); other cases run the ref definition. */
ingot_status ingot__cpu_attention(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *q,
                                  const ingot_tensor *k, const ingot_tensor *v,
                                  const ingot_attn_params *p, ingot_error *err);

/* Contiguous f32 binary / binary_scalar and [heads, seq, d] f32 RoPE (cpu_rowops.c); same
 * values as ref, other cases run it. */
ingot_status ingot__cpu_binary(ingot_backend *b, ingot_binary_op op, ingot_tensor *dst,
                               const ingot_tensor *a, const ingot_tensor *c, ingot_error *err);
ingot_status ingot__cpu_binary_scalar(ingot_backend *b, ingot_binary_op op, ingot_tensor *dst,
                                      const ingot_tensor *a, double s, ingot_error *err);
ingot_status ingot__cpu_rope(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *x,
                             const ingot_tensor *pos, double theta, ingot_rope_mode mode,
                             ingot_error *err);

/* t as a row-major matrix [rows, cols] (cols = the last dimension) with row stride *ld >= cols,
 * when the last axis has unit stride and the leading axes collapse into one stride (cpu.c). */
bool ingot__cpu_rows_view(const ingot_tensor *t, int64_t *rows, int64_t *ld);

/* f32 RMSNorm and layer norm over the last axis (cpu_rowops.c): rows split over the pool, the
 * sums in double as ref, vectorised; other cases (w NULL included) run ref. Copy of views whose
 * last axis is contiguous: one memmove per row; other cases run ref. */
ingot_status ingot__cpu_rms_norm(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *x,
                                 const ingot_tensor *w, double eps, ingot_error *err);
ingot_status ingot__cpu_layer_norm(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *x,
                                   const ingot_tensor *w, const ingot_tensor *bias, double eps,
                                   ingot_error *err);
ingot_status ingot__cpu_copy(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *src,
                             ingot_error *err);
ingot_status ingot__cpu_cast(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *src,
                             ingot_error *err);
/* d[i] = a[i] / (1 + e^-a[i]) for i < n (d may be a): at the AVX2 level and above eight lanes
 * a step with a polynomial e^x within 2 ulp of expf (the tail through the same lanes, so an
 * element's value does not depend on where it sits), else expf. */
void ingot__cpu_silu(const float *a, float *d, int64_t n);

#endif
