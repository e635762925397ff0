/*
 * backend_export.h - what the backend box offers the runtime box (src/runtime/) beyond the public
 * header include/ingot/backend.h: rebinding a wrapped host buffer to other memory without
 * allocating, so a model can bind caller memory per call. Not installed; nothing else sees it.
 */
#ifndef INGOT_BACKEND_EXPORT_H
#define INGOT_BACKEND_EXPORT_H

#include <stdbool.h>
#include <stddef.h>

#include "ingot/backend.h"

/* Rebinds a host buffer created by ingot_buffer_wrap to other memory without allocating. Only for
 * host buffers that do not own their memory (ingot_buffer_host() != NULL, made by wrap). */
void ingot__buffer_rebind(ingot_buffer *buf, void *host, size_t n, bool writable);

/* ingot_op_attention's semantics (p: scale 0 = 1/sqrt(D), causal bottom-right) with the scores
 * of eight keys per vector step (attn_keys8.c): the runtime's path for small head sizes, where
 * the op's per-key kernel is slow. Runs and returns true only on the cpu backend at the AVX2
 * level or above, for host F32 [B, H, L, D] operands with unit last stride, D and Dv multiples
 * of 8 and shapes the op accepts; otherwise returns false and does nothing (run the op).
 * Decode (one query row, D = Dv a multiple of 64 up to 256, query heads a multiple of four per
 * KV head) at the AVX-512 levels takes four query heads of a KV head a task, and there k and v
 * may also be F16 (the runtime's f16 cache, read in place); F16 is declined elsewhere. */
bool ingot__attention_keys8(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *q,
                            const ingot_tensor *k, const ingot_tensor *v,
                            const ingot_attn_params *p);

/* ingot_op_linear(b, dst[i], x, w[i], bias[i]) for i < n (bias NULL, or bias[i] NULL: none) as
 * one job of the cpu backend's pool, x quantized once per weight dtype: the runtime's decode
 * path for the linears that read the same row (q, k and v; gate and up). Runs and returns true
 * only on the cpu backend, for one f32 row x and 1 to 8 weights [out, len(x)] of the block
 * dtypes its quantized dots take (Q8_0, Q4_0, Q4_K, Q5_K, Q6_K) or F16 / BF16 with unit column
 * stride, mixed, one-row contiguous f32 dst and f32 biases; each dst gets the bits the op gives
 * it. Otherwise returns false and does nothing (run the ops). dst must not overlap x or one
 * another. */
/* rp (NULL: none) gives, for a Q4_K weight w[i], its rows repacked by the kernels'
 * ingot__q4kr_repack (the runtime's repacked linears): read instead of w[i]'s data,
 * with the same results (rp[i] NULL: w[i] as stored). */
bool ingot__linear_multi(ingot_backend *b, uint32_t n, ingot_tensor *const dst[],
                         const ingot_tensor *x, const ingot_tensor *const w[],
                         const ingot_tensor *const bias[], const void *const rp[]);

/* Repacked Q4_K (the runtime's layout for dense Q4_K linears): whether backend b is the cpu
 * backend and the level in effect reads repacked rows with its SIMD kernel (AVX-512 VNNI with
 * VBMI: where it does not, repacking does not pay), and the repacking itself (nblocks
 * super-blocks of 144 bytes, src to dst, on b's threads; the layout is the cpu kernels'
 * ingot__q4kr_repack). */
bool ingot__q4kr_pays(const ingot_backend *b);
/* ingot_op_linear(b, dst, x, w, bias) for a Q4_K weight w whose rows were repacked to rp
 * (ingot__q4kr_pack; w gives the shape, its data is not read): any number of rows, decode and
 * prefill, each row the bits the op gives it (kernels.h, ingot__qgemm_q4kr). Sets *done and runs
 * only on the cpu backend for host f32 x / dst / bias of the shapes the op takes (dst not
 * overlapping x); otherwise *done = false and nothing is done (run the op on w's stored data).
 * NOMEM if scratch cannot be had. */
ingot_status ingot__linear_q4kr(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *x,
                                const ingot_tensor *w, const ingot_tensor *bias, const void *rp,
                                bool *done, ingot_error *err);
void ingot__q4kr_pack(ingot_backend *b, const void *src, void *dst, size_t nblocks);

#endif
