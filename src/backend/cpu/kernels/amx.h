/*
 * amx.h - the AMX level's tile GEMMs (amx.c), called by ingot__qgemm and ingot__gemm_half for
 * batches of 16 or more activation rows at the AMX level.
 */
#ifndef INGOT_AMX_H
#define INGOT_AMX_H

#include "cpu/kernels/qdot.h"

/* Whether the tiles take this case: AMX supported, nx >= 16, weights I8 (K a multiple of 64),
 * Q8_0 or BF16 (K a multiple of 32). */
bool ingot__amx_ok(ingot_dtype wt, size_t K, size_t nx);
/* Bytes of scratch ingot__amx_gemm needs (64-byte aligned) for the packed activations. */
size_t ingot__amx_scratch(ingot_dtype wt, size_t K, size_t nx);
/* Y[i * ldy + m] (+)= sum_k W[m, k] x_i[k] for m < M, i < nx. I8 / Q8_0: x holds quantized
 * activation rows (qdot.h), xstride bytes apart; BF16: f32 rows, xstride floats apart (each
 * split into two bf16 halves, hi + lo, so the sum keeps f32 precision). ldw: bytes. */
void ingot__amx_gemm(ingot__pool *pool, ingot_dtype wt, size_t M, size_t K, const void *W,
                     size_t ldw, const float *wscale, const void *x, size_t xstride, size_t nx,
                     bool accumulate, float *Y, size_t ldy, void *scratch);

#endif
