/* alloc.c - the allocator hook: per-object ingot_allocator or libc. No other file calls malloc. */
#include "alloc.h"

#include <stdlib.h>
#include <string.h>

void *ingot__alloc(const ingot_allocator *a, size_t n)
{
    if (n == 0) n = 1;
    if (a && a->alloc) return a->alloc(a->ctx, n, 16);
    return malloc(n);
}

void *ingot__calloc(const ingot_allocator *a, size_t n)
{
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
