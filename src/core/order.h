/*
 * order.h - the orderings format adapters share: byte-wise key comparison (the order of every
 * sorted name and key index), stable merge sorts of uint32 indices through a comparator, and
 * the binary search of such a sorted index.
 */
#ifndef INGOT_ORDER_H
#define INGOT_ORDER_H

#include "deps.h"

/* memcmp order of the bytes, a proper prefix first. Inline: it runs a few times per name while an
 * adapter sorts its index at open. */
static inline int ingot__bytes_cmp(const void *a, size_t al, const void *b, size_t bl)
{
    const uint8_t *x = (const uint8_t *)a, *y = (const uint8_t *)b;
    size_t n = al < bl ? al : bl, i = 0;
    /* Skip the common prefix a word at a time (tensor names share long prefixes). On a
     * little-endian host the first differing word decides: byte-swapped, its numeric order is
     * the bytes' memcmp order. */
    for (; i + 8 <= n; i += 8) {
        uint64_t u, v;
        ING_MEMCPY(&u, x + i, 8);
        ING_MEMCPY(&v, y + i, 8);
        if (u != v) {
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            u = __builtin_bswap64(u);
            v = __builtin_bswap64(v);
            return u < v ? -1 : 1;
#else
            break;
/* The key of entry i of the caller's table (a name, a metadata key): its bytes, and their count
 * in *len. The bytes stay valid as long as the table does. */
typedef const void *(*ingot__index_key)(const void *ctx, uint32_t i, size_t *len);

/* Binary search of v[0..n), sorted by the ingot__bytes_cmp order of key_of's keys (as the sorts
 * above leave an index whose comparator is that order), for the entry whose key is the n bytes
 * at key: true and *entry set to it when one is there, false (and *entry untouched) when none
 * is. log2(n) + 1 key comparisons at most. */
bool ingot__index_find(const uint32_t *v, size_t n, ingot__index_key key_of, const void *ctx,
                       const void *key, size_t len, uint32_t *entry);

#endif
        }
    }
    for (; i < n; i++)
        if (x[i] != y[i]) return x[i] < y[i] ? -1 : 1;
    return al < bl ? -1 : al > bl ? 1 : 0;
}

/* cmp(ctx, a, b) < 0 when index a sorts before index b. */
typedef int (*ingot__index_cmp)(const void *ctx, uint32_t a, uint32_t b);

/* Stable sort of v[0..n) (tmp: n scratch entries, no allocation). An already ordered input
 * costs one comparison per merge (headers written by tools are mostly sorted). */
void ingot__index_sort(uint32_t *v, uint32_t *tmp, size_t n, ingot__index_cmp cmp,
                       const void *ctx);

/* Sort and uniqueness check in one: sorts v[0..n) and returns true when no two entries compare
 * equal (v is then strictly increasing); returns false as soon as two compare equal, leaving v a
 * permutation of its entries in an unspecified order (a caller that names the duplicate sorts
 * again with ingot__index_sort). Natural merge sort over strictly increasing runs, so an equal
 * pair is always compared: n - 1 comparisons on a sorted input, about 2n on two sorted runs (a
 * header sorted by dtype, then by name); more than 16 runs go to ingot__index_sort plus one
 * pass over neighbours. tmp: n scratch entries, no allocation. */
bool ingot__index_sort_unique(uint32_t *v, uint32_t *tmp, size_t n, ingot__index_cmp cmp,
                              const void *ctx);

/* The key of entry i of the caller's table (a name, a metadata key): its bytes, and their count
 * in *len. The bytes stay valid as long as the table does. */
typedef const void *(*ingot__index_key)(const void *ctx, uint32_t i, size_t *len);

/* Binary search of v[0..n), sorted by the ingot__bytes_cmp order of key_of's keys (as the sorts
 * above leave an index whose comparator is that order), for the entry whose key is the n bytes
 * at key: true and *entry set to it when one is there, false (and *entry untouched) when none
 * is. log2(n) + 1 key comparisons at most. */
bool ingot__index_find(const uint32_t *v, size_t n, ingot__index_key key_of, const void *ctx,
                       const void *key, size_t len, uint32_t *entry);

#endif
