/*
 * igemm.h - the AVX-512 VNNI level's int8 prefill GEMM (igemm_avx512_vnni.c), called by
 * ingot__qgemm for batches of INGOT__QGEMM_DEQUANT_ROWS or more f32 activation rows at that
 * level (not at AMX, which has its tiles) in place of the f32 GEMM on dequantized panels.
 */
#ifndef INGOT_IGEMM_H
#define INGOT_IGEMM_H

#include "cpu/kernels/qdot.h"

/* Whether the route takes weights of dtype wt with rows of K elements: the CPU has AVX-512
 * VNNI, the compiler can target it, and wt is Q8_0 or Q4_0 (K a multiple of 32) or Q4_K, Q5_K
 * or Q6_K (K a multiple of 256), K <= 65536. */
bool ingot__igemm_ok(ingot_dtype wt, size_t K);

/* Y[i * ldy + m] (+)= sum_k deq(W)[m, k] X[i * ldx + k] for m < M, i < nx (ingot__qgemm's
 * contract), rp: Q4_K rows repacked by ingot__q4kr_repack (the same values, the same bits).
 * The f32 rows X are quantized here per 32 elements to int8 (d = max|x| / 127, as
 * ingot__qx_quantize; kept with d and d * sum(q)); the weights are decoded 64 rows a task into
 * a panel of unsigned bytes u with an f32 scale s and offset o per row and 32-block (w = s u +
 * o: Q8_0 u = q + 128, o = -128 d; Q4_0 u = nibble, o = -8 d; Q4_K / Q5_K u = the 4 or 5 bits,
 * s = d sc, o = -dmin m), and y = sum over blocks of s dx isum + o sx, isum the exact int32 dot
 * (vpdpbusd), each block flushed to f32 in block order (Q6_K: u = the 6 bits, s = d sc per 16
 * elements, the offset -32 s folded into the int32 sum, y = sum over 16-element halves of
 * s dx (isum16 - 32 sum16(q)), each half flushed in order): every output element is reduced the
 * same way wherever it lies, so results do not depend on the thread count, the tiles or the
 * passes. Error: that of the int8 activations (NMSE about 1e-5 against the exact product, as
 * the dots at decode). *taken false (nothing written, INGOT_OK): X holds NaN or inf, which the
 * caller then runs through the f32 route so that they propagate as in f32. NOMEM (taken, before
 * any output is written) if pool scratch cannot be had. */
ingot_status ingot__igemm(ingot__pool *pool, ingot_dtype wt, bool rp, size_t M, size_t K,
                          const void *W, size_t ldw, const float *X, size_t ldx, size_t nx,
                          bool accumulate, float *Y, size_t ldy, bool *taken);

#endif
