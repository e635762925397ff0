/*
 * dtype.c - the one dtype table (INGOT_DTYPE_LIST in core.h) and metadata type table, with the
 * checked element-count and byte-size arithmetic every format uses. Freestanding.
 */
#include "checked.h"
#include "ingot/core.h"

typedef struct {
    const char *name;
    uint16_t value;
    uint16_t block_elems;
    uint16_t block_bytes;
} dtype_row;

static const dtype_row dtype_rows[] = {
#define X(name, value, be, bb) {#name, value, be, bb},
    INGOT_DTYPE_LIST(X)
#undef X
};

#define N_DTYPES (sizeof dtype_rows / sizeof dtype_rows[0])

/* Position of each dtype in dtype_rows, so lookups are one switch (called per tensor at open). */
enum {
#define X(name, value, be, bb) ROW_##name,
    INGOT_DTYPE_LIST(X)
#undef X
};

static const dtype_row *row(ingot_dtype dt)
{
    switch (dt) {
#define X(name, value, be, bb)                                                                     \
    case INGOT_DTYPE_##name:                                                                       \
        return &dtype_rows[ROW_##name];
        INGOT_DTYPE_LIST(X)
#undef X
    case INGOT_DTYPE_INVALID: break;
    }
    return 0;
}

const char *ingot_dtype_name(ingot_dtype dt)
{
    const dtype_row *r = row(dt);
    return r ? r->name : 0;
}

bool ingot_dtype_valid(ingot_dtype dt) { return row(dt) != 0; }

uint32_t ingot_dtype_block_elems(ingot_dtype dt)
{
    const dtype_row *r = row(dt);
    return r ? r->block_elems : 0;
}

uint32_t ingot_dtype_block_bytes(ingot_dtype dt)
{
    const dtype_row *r = row(dt);
    return r ? r->block_bytes : 0;
}

bool ingot_dtype_is_quantized(ingot_dtype dt)
{
    const dtype_row *r = row(dt);
    return r && r->value >= 256;
}

ingot_status ingot_dtype_from_name(const char *name, ingot_dtype *out)
{
    if (!name || !out) return INGOT_MISUSE;
    for (size_t i = 0; i < N_DTYPES; i++) {
        const char *a = dtype_rows[i].name, *b = name;
        while (*a && *a == *b) a++, b++;
        if (*a == *b) {
            *out = (ingot_dtype)dtype_rows[i].value;
            return INGOT_OK;
        }
    }
    return INGOT_BAD_TYPE;
}

ingot_status ingot_dtype_nbytes(ingot_dtype dt, uint32_t rank, const uint64_t *shape,
                                uint64_t *nelem, uint64_t *nbytes)
{
    const dtype_row *r = row(dt);
    if (!r) return INGOT_BAD_TYPE;
    if (rank > INGOT_MAX_RANK) return INGOT_BAD_NDIMS;
    /* Every dimension and the element count must fit in int64 (the range of every framework's
     * numel); a zero dimension makes the product 0 but the other dimensions must still be sane,
     * whatever their order. */
    bool zero = false;
    for (uint32_t i = 0; i < rank; i++) {
        if (shape[i] > (uint64_t)INT64_MAX) return INGOT_BAD_SHAPE;
        if (shape[i] == 0) zero = true;
    }
    uint64_t n = 1;
    for (uint32_t i = 0; i < rank && !zero; i++)
        if (!ing_mul(n, shape[i], &n) || n > (uint64_t)INT64_MAX) return INGOT_BAD_SHAPE;
    if (zero) n = 0;
    if (r->value >= 256) { /* GGML blocks run along the innermost dimension */
        uint64_t inner = rank ? shape[rank - 1] : 1;
        if (inner % r->block_elems) return INGOT_BAD_SIZE;
    } else if (r->block_elems > 1 && n % r->block_elems) { /* packed sub-byte: whole bytes */
        return INGOT_BAD_SIZE;
    }
    uint64_t bytes;
    if (!ing_mul(r->block_elems > 1 ? n / r->block_elems : n, r->block_bytes, &bytes))
        return INGOT_BAD_SIZE;
    if (nelem) *nelem = n;
    if (nbytes) *nbytes = bytes;
    return INGOT_OK;
}

const char *ingot_meta_type_name(ingot_meta_type t)
{
    switch (t) {
    case INGOT_META_U8: return "u8";
    case INGOT_META_U16: return "u16";
    case INGOT_META_U32: return "u32";
    case INGOT_META_U64: return "u64";
    case INGOT_META_I8: return "i8";
    case INGOT_META_I16: return "i16";
    case INGOT_META_I32: return "i32";
    case INGOT_META_I64: return "i64";
    case INGOT_META_F32: return "f32";
    case INGOT_META_F64: return "f64";
    case INGOT_META_BOOL: return "bool";
    case INGOT_META_STRING: return "string";
    case INGOT_META_BYTES: return "bytes";
    case INGOT_META_INVALID: break;
    }
    return 0;
}

uint32_t ingot_meta_type_size(ingot_meta_type t)
{
    switch (t) {
#define X(name, value, size)                                                                       \
    case INGOT_META_##name:                                                                        \
        return size;
        INGOT_META_TYPE_LIST(X)
#undef X
    case INGOT_META_INVALID: break;
    }
    return 0;
}
