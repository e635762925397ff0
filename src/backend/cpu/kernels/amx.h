/*
 * amx.h - the AMX level's tile GEMMs (amx.c), called by ingot__qgemm and ingot__gemm_half for
 * batches of 16 or more activation rows at the AMX level.
 */
#ifndef INGOT_AMX_H
#define INGOT_AMX_H

#include "cpu/kernels/qdot.h"

/* Whether the tiles take this case: AMX supported, nx >= 16, and weights I8 (K a multiple of
 * 64), Q8_0 (K a multiple of 32), or, with f32 activations at hand (have_f32), BF16 and F16 (K a
 * multiple of 32), and from INGOT__QGEMM_DEQUANT_ROWS rows on Q4_0 (K a multiple of 32), Q4_K,
 * Q5_K, Q6_K (K a multiple of 256): below that the block types keep the dots' quantized
 * activations, as at every level. */
bool ingot__amx_ok(ingot_dtype wt, size_t K, size_t nx, bool have_f32);
/* Y[i * ldy + m] (+)= sum_k W[m, k] x_i[k] for m < M, i < nx, on tiles; ldw in bytes.
 * I8, and Q8_0 when X is NULL or nx < INGOT__QGEMM_DEQUANT_ROWS: xq holds the quantized
 * activation rows (qdot.h layout for wt), xstride bytes apart; int8 tiles, each Q8_0 block's
 * int32 dot scaled in f32 as the dot kernels do. Otherwise the f32 rows X (ldx floats apart),
 * split into two bf16 halves hi + lo, meet BF16 weights in place (wh xh + wh xl), F16 weights
 * split exactly into two bf16 halves (wh xh + wh xl + wl xh; wl xl, under 2^-16 of the
 * product, is left out: f32 GEMM's accuracy), or Q8_0 / Q4_0 / Q4_K / Q5_K / Q6_K weights
 * decoded 32 rows at a time and rounded to one bf16 (wh xh + wh xl: the weights' 8 significant
 * bits bound the error, NMSE about 3e-6 against the exact product, where the int8 dots on
 * quantized activations give about 1e-5; a third product for their low halves cost 25% more
 * time). Results do not depend on the pool's thread count. NOMEM if scratch cannot be had
 * (pool scratch, grown before any output is written: worker 0 holds the packed activations,
 * every worker a 32-row weight panel). */
ingot_status ingot__amx_gemm(ingot__pool *pool, ingot_dtype wt, size_t M, size_t K,
                             const void *W, size_t ldw, const float *wscale, const void *xq,
                             size_t xstride, const float *X, size_t ldx, size_t nx,
                             bool accumulate, float *Y, size_t ldy);
/* ingot__amx_gemm for Q4_K weights whose rows were repacked by ingot__q4kr_repack (kernels.h),
 * with f32 activations X (ingot__amx_ok(Q4_K, K, nx, true)): decoded to the same bf16 panels,
 * so the same results. */
ingot_status ingot__amx_gemm_q4kr(ingot__pool *pool, size_t M, size_t K, const void *W,
                                  size_t ldw, const float *X, size_t ldx, size_t nx,
                                  bool accumulate, float *Y, size_t ldy);

#endif
