/* alloc.h - every heap allocation of ingot goes through here (the only caller of malloc/free). */
#ifndef INGOT_ALLOC_H
#define INGOT_ALLOC_H

#include "deps.h"
#include "ingot/core.h"

/* a may be NULL or have NULL members: libc. Alignment is at least 16. */
void *ingot__alloc(const ingot_allocator *a, size_t n);
void *ingot__calloc(const ingot_allocator *a, size_t n);
void ingot__free(const ingot_allocator *a, void *p, size_t n);
/* Grows *p from old to new bytes (copying); on failure *p is unchanged. */
bool ingot__grow(const ingot_allocator *a, void **p, size_t old_n, size_t new_n);
/* Copies s[0..n) plus a NUL. */
char *ingot__strndup(const ingot_allocator *a, const char *s, size_t n);

#endif
