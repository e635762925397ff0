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
/* A table of n bytes read at random (hash tables of megabytes, such as a tokenizer's): with 4 KB
 * pages most lookups in it would also miss the TLB, so with libc's allocator (a caller's
 * allocator keeps its own pages) and n of 2 MB or more it is placed at a 2 MB boundary inside an
 * allocation 2 MB larger (the slack is never touched) and, on Linux, advised for transparent huge
 * pages (advice only: a kernel without them changes nothing). *raw, *raw_n: what
 * ingot__free_table releases (raw NULL: the table itself, n bytes). */
void *ingot__alloc_table(const ingot_allocator *a, size_t n, void **raw, size_t *raw_n);
void ingot__free_table(const ingot_allocator *a, void *p, size_t n, void *raw, size_t raw_n);
/* Copies s[0..n) plus a NUL. */
char *ingot__strndup(const ingot_allocator *a, const char *s, size_t n);

#endif
