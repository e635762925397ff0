/* order.c - shared key comparison and index sort (see order.h). */
#include "order.h"

#include <string.h>

int ingot__bytes_cmp(const void *a, size_t al, const void *b, size_t bl)
{
    const uint8_t *x = a, *y = b;
    size_t n = al < bl ? al : bl, i = 0;
    /* Skip the common prefix a word at a time (tensor names share long prefixes). */
    for (; i + 8 <= n; i += 8) {
        uint64_t u, v;
        memcpy(&u, x + i, 8);
        memcpy(&v, y + i, 8);
        if (u != v) break;
    }
    for (; i < n; i++)
        if (x[i] != y[i]) return x[i] < y[i] ? -1 : 1;
    return al < bl ? -1 : al > bl ? 1 : 0;
}

void ingot__index_sort(uint32_t *v, uint32_t *tmp, size_t n, ingot__index_cmp cmp,
                       const void *ctx)
{
    if (n < 2) return;
    if (n <= 8) { /* insertion sort: stable, strict comparison */
        for (size_t i = 1; i < n; i++) {
            uint32_t x = v[i];
            size_t k = i;
            while (k > 0 && cmp(ctx, x, v[k - 1]) < 0) {
                v[k] = v[k - 1];
                k--;
            }
            v[k] = x;
        }
        return;
    }
    size_t h = n / 2;
    ingot__index_sort(v, tmp, h, cmp, ctx);
    ingot__index_sort(v + h, tmp, n - h, cmp, ctx);
    if (cmp(ctx, v[h], v[h - 1]) >= 0) return; /* already in order */
    size_t i = 0, j = h, k = 0;
    while (i < h && j < n) tmp[k++] = cmp(ctx, v[j], v[i]) < 0 ? v[j++] : v[i++];
    while (i < h) tmp[k++] = v[i++];
    memcpy(v, tmp, k * sizeof *v); /* the rest of the right half is already in place */
}
