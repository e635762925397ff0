/*
 * st_internal.h - shared by the safetensors reader, index (sharded) reader and writer: the dtype
 * table of ../shared/formats/safetensors.md §2.1 and small helpers. Not seen outside this folder.
 */
#ifndef INGOT_ST_INTERNAL_H
#define INGOT_ST_INTERNAL_H

#include "order.h" /* ingot__bytes_cmp, ingot__index_sort */

#include "deps.h"
#include "file.h"
#include "ingot/core.h"

/* Reference reader's cap on the JSON header (MAX_HEADER_SIZE). */
#define ST_MAX_HEADER 100000000ull
/* Cap on a shard index file (it holds one line per tensor). */
#define ST_MAX_INDEX (64ull << 20)
/* ingot's limit on a tensor name (writer.h). */
#define ST_MAX_NAME 65535u

typedef struct st_dtype {
    const char *name;  /* safetensors spelling */
    uint8_t name_len;
    uint8_t rank;      /* position in the Rust enum: the reference writer's sort key */
    ingot_dtype dt;    /* INGOT_DTYPE_INVALID: known to safetensors, not to ingot */
} st_dtype;

/* Looks a safetensors dtype string up; NULL if unknown. */
const st_dtype *ingot__st_dtype_by_name(const uint8_t *s, size_t n);
/* The safetensors spelling of an ingot dtype; NULL if safetensors cannot hold it. */
const st_dtype *ingot__st_dtype_by_ingot(ingot_dtype dt);


/* p[0..n) == lit[0..n), inlined for constant n (memcmp is an out-of-line call here). */
static inline bool ingot__st_eq(const void *p, const char *lit, size_t n)
{
    const uint8_t *a = (const uint8_t *)p;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t x, y;
        ING_MEMCPY(&x, a + i, 8);
        ING_MEMCPY(&y, lit + i, 8);
        if (x != y) return false;
    }
    for (; i < n; i++)
        if (a[i] != (uint8_t)lit[i]) return false;
    return true;
}


extern const ingot__format ingot__format_safetensors;
extern const ingot__format ingot__format_safetensors_index;
extern const struct ingot__writer_ops ingot__writer_safetensors;

#endif
