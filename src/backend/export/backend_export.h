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
 * of 8 and shapes the op accepts; otherwise returns false and does nothing (run the op). */
bool ingot__attention_keys8(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *q,
                            const ingot_tensor *k, const ingot_tensor *v,
                            const ingot_attn_params *p);

#endif
