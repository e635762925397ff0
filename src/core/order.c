/* order.c - shared index sorts and the search of a sorted index (see order.h). */
#include "order.h"

#include <string.h>

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

/* End of the strictly increasing run of src that starts at i (n if it reaches the end); sets *eq
 * when the run ends on two equal neighbours. */
static size_t run_end(const uint32_t *src, size_t i, size_t n, ingot__index_cmp cmp,
                      const void *ctx, bool *eq)
{
    size_t m = i + 1;
    int c = -1;
    while (m < n && (c = cmp(ctx, src[m - 1], src[m])) < 0) m++;
    *eq = m < n && c == 0;
    return m;
}

enum { MAX_NATURAL_RUNS = 16 };

bool ingot__index_sort_unique(uint32_t *v, uint32_t *tmp, size_t n, ingot__index_cmp cmp,
                              const void *ctx)
{
    if (n < 2) return true;
    /* Each pass merges neighbouring runs pairwise from src into dst. Merging two strictly
     * increasing runs compares every pair of equal entries at some step (both are at the heads
     * when the smaller entries before them are out), so the merged run is strictly increasing
     * unless an equal pair was seen. */
    uint32_t *src = v, *dst = tmp;
    bool first = true;
    for (;;) {
        size_t i = 0, runs = 0;
        bool eq;
        while (i < n) {
            size_t m = run_end(src, i, n, cmp, ctx, &eq);
            if (eq) return false;
            runs++;
            if (m == n) { /* a lone last run */
                if (i == 0) goto sorted;
                memcpy(dst + i, src + i, (n - i) * sizeof *dst);
                break;
            }
            size_t e = run_end(src, m, n, cmp, ctx, &eq);
            if (eq) return false;
            runs++;
            if (first && runs > MAX_NATURAL_RUNS) {
                /* Unordered input: the top-down sort does fewer comparisons. src is still v
                 * (nothing merged back yet); keys are distinct iff no neighbours are equal. */
                ingot__index_sort(v, tmp, n, cmp, ctx);
                for (size_t k = 1; k < n; k++)
                    if (cmp(ctx, v[k - 1], v[k]) == 0) return false;
                return true;
            }
            size_t a = i, b = m, k = i;
            while (a < m && b < e) {
                int c = cmp(ctx, src[b], src[a]);
                if (c == 0) return false;
                dst[k++] = c < 0 ? src[b++] : src[a++];
            }
            while (a < m) dst[k++] = src[a++];
            while (b < e) dst[k++] = src[b++];
            if (i == 0 && e == n) { /* one merge covered everything */
                src = dst;
                goto sorted;
            }
            i = e;
        }
        first = false;
        uint32_t *t = src;
        src = dst;
        dst = t;
    }
sorted:
    if (src != v) memcpy(v, src, n * sizeof *v);
    return true;
}

bool ingot__index_find(const uint32_t *v, size_t n, ingot__index_key key_of, const void *ctx,
                       const void *key, size_t len, uint32_t *entry)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2, kl;
        const void *k = key_of(ctx, v[mid], &kl);
        int c = ingot__bytes_cmp(k, kl, key, len);
        if (c == 0) {
            *entry = v[mid];
            return true;
        }
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return false;
}
