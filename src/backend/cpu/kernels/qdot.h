/*
 * qdot.h - shared by the quantized-dot files (qdot.c and one file per ISA level): the layout of a
 * quantized activation row and the kernel signature each level provides per weight dtype.
 */
#ifndef INGOT_QDOT_H
#define INGOT_QDOT_H

#include "cpu/kernels/kernels.h"

/* One quantized activation row, as ingot__qx_quantize lays it out in its buffer:
 *   int8  q[kpad]    kpad = K rounded up to 64, zero past K
 *   float d[nb]      per block: 32 elements (Q8_0, Q4_0 weights), 256 (K-quants), the row (I8)
 *   int32 s[nb]      per block: sum of q (32-blocks and I8)
 *   int16 bs[K/16]   per 16 elements: sum of q (K-quants)
 * For Q4_K / Q5_K weights the four 32-element sub-blocks of every 128 elements are stored in the
 * order 0, 2, 1, 3 (ingot__qx_index): a 64-byte load of the weights' nibbles holds sub-blocks
 * 2c and 2c + 2 in its low nibbles, and one 64-byte load of q then meets them (bs stays in
 * element order). */
typedef struct {
    const int8_t *q;
    const float *d;
    const int32_t *s;
    const int16_t *bs;
    size_t K, nb;
} ingot__qx;

void ingot__qx_view(ingot_dtype wt, size_t K, const void *xq, ingot__qx *v);

/* Where element e of an activation row lies in q (sub-blocks 1 and 2 of each 128 swapped for
 * Q4_K / Q5_K). */
static inline size_t ingot__qx_index(ingot_dtype wt, size_t e)
{
    if (wt != INGOT_DTYPE_Q4_K && wt != INGOT_DTYPE_Q5_K) return e;
    size_t sb = (e >> 5) & 3;
    return sb == 1 || sb == 2 ? e ^ 96 : e; /* 32 <-> 64 within each 128 */
}

/* rows weight rows (w, then every ldw bytes) against one activation row: for r < rows,
 * y[r] = (acc ? y[r] : 0) + dot(row r, x), I8 rows also times wscale[r]. */
typedef void (*ingot__qdot_fn)(const uint8_t *w, size_t ldw, size_t rows, const ingot__qx *x,
                               const float *wscale, bool acc, float *y);

/* Each level's kernel for weight dtype wt, or NULL where it has none (the next level down is
 * used). The files of levels the compiler cannot target return NULL for everything. */
ingot__qdot_fn ingot__qdot_scalar(ingot_dtype wt);
ingot__qdot_fn ingot__qdot_avx2(ingot_dtype wt);
ingot__qdot_fn ingot__qdot_avx_vnni(ingot_dtype wt);
ingot__qdot_fn ingot__qdot_avx512(ingot_dtype wt);
ingot__qdot_fn ingot__qdot_avx512_vnni(ingot_dtype wt);
/* The repacked Q4_K kernel (kernels.h, ingot__q4kr_repack) of the AVX-512 VNNI level, which also
 * needs VBMI; NULL where the compiler cannot target it. */
ingot__qdot_fn ingot__qdot_q4kr_avx512_vnni(void);

/* Y[i * ldy + m] (+)= sum_k deq(W)[m, k] X[i * ldx + k]: rows of W of any dtype
 * ingot_dequantize decodes (ldw bytes apart) widened to f32 a panel at a time in pool scratch,
 * then the blocked f32 GEMM; the prefill route of ingot__qgemm and ingot__gemm_half. NOMEM if
 * scratch cannot be had. */
ingot_status ingot__dequant_gemm(ingot__pool *pool, ingot_dtype wt, size_t M, size_t K,
                                 const void *W, size_t ldw, const float *X, size_t ldx, size_t nx,
                                 bool accumulate, float *Y, size_t ldy);

/* One block of n elements of an activation row quantized as ingot__qx_quantize defines it (the
 * same bits), on AVX-512 (qx_avx512.c): q[n], *d, and *sum (if not NULL) or the sums of each 16
 * elements into bs (if not NULL). False, with nothing written that counts, for a block holding
 * NaN or inf (the scalar definition handles those) or where the compiler cannot target it. */
bool ingot__qx_block_avx512(const float *x, size_t n, int8_t *q, float *d, int32_t *sum,
                            int16_t *bs);

/* f16 -> f32 (exact), for the scalar paths. */
float ingot__kq_f16_to_f32(uint16_t h);

/* Q4_K / Q5_K: the 8 six-bit scales and mins of a super-block from their 12 packed bytes. */
static inline void ingot__k_scale_min(const uint8_t *s, uint8_t sc[8], uint8_t mn[8])
{
    for (int i = 0; i < 4; i++) {
        sc[i] = s[i] & 0x3F;
        mn[i] = s[4 + i] & 0x3F;
        sc[4 + i] = (uint8_t)((s[8 + i] & 0x0F) | ((s[i] >> 2) & 0x30));
        mn[4 + i] = (uint8_t)((s[8 + i] >> 4) | ((s[4 + i] >> 2) & 0x30));
    }
}

/* Repacked Q4_K (kernels.h): a super-block's first 16 bytes in the repacked layout (the scales
 * and mins as two 48-bit fields, d, dmin) from GGML's block s; and the whole repacking on
 * AVX-512 F/BW (qx_avx512.c: the same bytes as qdot.c's loop, src == dst allowed), false where
 * it is not compiled in. */
void ingot__q4kr_head(const uint8_t *s, uint8_t *out);
bool ingot__q4kr_repack_avx512(const void *src, void *dst, size_t nblocks);

#endif
