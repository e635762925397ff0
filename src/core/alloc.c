/* alloc.c - the allocator hook: per-object ingot_allocator or libc. No other file calls malloc. */
#define _GNU_SOURCE /* madvise */
#include "alloc.h"

#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#define HUGE_PAGE ((size_t)2 << 20) /* a transparent huge page on x86-64 and arm64 (4 KB base) */

void *ingot__alloc(const ingot_allocator *a, size_t n)
{
    if (n == 0) n = 1;
    if (a && a->alloc) return a->alloc(a->ctx, n, 16);
    return malloc(n);
}

void *ingot__calloc(const ingot_allocator *a, size_t n)
{
    if (!(a && a->alloc)) return calloc(1, n ? n : 1); /* large blocks: zero pages, untouched */
    void *p = ingot__alloc(a, n);
    if (p) memset(p, 0, n ? n : 1);
    return p;
}

void ingot__free(const ingot_allocator *a, void *p, size_t n)
{
    if (!p) return;
    if (n == 0) n = 1;
    if (a && a->alloc) {
        if (a->free) a->free(a->ctx, p, n);
        return;
    }
    free(p);
}

bool ingot__grow(const ingot_allocator *a, void **p, size_t old_n, size_t new_n)
{
    void *q = ingot__alloc(a, new_n);
    if (!q) return false;
    if (*p) {
        memcpy(q, *p, old_n < new_n ? old_n : new_n);
        ingot__free(a, *p, old_n);
    }
    *p = q;
    return true;
}

char *ingot__strndup(const ingot_allocator *a, const char *s, size_t n)
{
    char *d = ingot__alloc(a, n + 1);
    if (!d) return NULL;
    if (n) memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

void *ingot__alloc_table(const ingot_allocator *a, size_t n, void **raw, size_t *raw_n)
{
    *raw = NULL;
    *raw_n = 0;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if ((!a || !a->alloc) && n >= HUGE_PAGE && n <= SIZE_MAX - HUGE_PAGE) {
        uint8_t *r = ingot__alloc(a, n + HUGE_PAGE);
        if (!r) return NULL;
        uint8_t *p = r + (HUGE_PAGE - (uintptr_t)r % HUGE_PAGE) % HUGE_PAGE;
        (void)madvise(p, n, MADV_HUGEPAGE);
        *raw = r;
        *raw_n = n + HUGE_PAGE;
        return p;
    }
#endif
    return ingot__alloc(a, n);
}

void ingot__free_table(const ingot_allocator *a, void *p, size_t n, void *raw, size_t raw_n)
{
    if (raw) ingot__free(a, raw, raw_n);
    else ingot__free(a, p, n);
}
