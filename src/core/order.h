/*
 * order.h - the orderings format adapters share: byte-wise key comparison (the order of every
 * sorted name and key index) and a stable merge sort of uint32 indices through a comparator.
 */
#ifndef INGOT_ORDER_H
#define INGOT_ORDER_H

#include "deps.h"

/* memcmp order of the bytes, a proper prefix first. */
int ingot__bytes_cmp(const void *a, size_t al, const void *b, size_t bl);

/* cmp(ctx, a, b) < 0 when index a sorts before index b. */
typedef int (*ingot__index_cmp)(const void *ctx, uint32_t a, uint32_t b);

/* Stable sort of v[0..n) (tmp: n scratch entries, no allocation). An already ordered input
 * costs one comparison per merge (headers written by tools are mostly sorted). */
void ingot__index_sort(uint32_t *v, uint32_t *tmp, size_t n, ingot__index_cmp cmp,
                       const void *ctx);

#endif
