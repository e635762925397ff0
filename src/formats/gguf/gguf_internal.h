/*
 * gguf_internal.h - what the GGUF reader (gguf_adapter.c) and writer (gguf_write.c) share: the
 * value-type table, the ggml_type <-> ingot dtype mapping, the caps, and the bounded cursor plus
 * the value walker used to validate metadata values (also nested arrays handed to the writer).
 * Spec: ../shared/formats/gguf.md. Layout recap (all little-endian):
 *   "GGUF" u32 version u64 n_tensors u64 n_kv
 *   n_kv x { u64 key_len, key, u32 value_type, value }
 *   n_tensors x { u64 name_len, name, u32 n_dims, u64 ne[n_dims] (innermost first),
 *                 u32 ggml_type, u64 offset (relative to the data section) }
 *   zero padding to ALIGNMENT (general.alignment, default 32), tensor data
 */
#ifndef INGOT_GGUF_INTERNAL_H
#define INGOT_GGUF_INTERNAL_H

#include "checked.h"
#include "deps.h"
#include "error.h"
#include "ingot/core.h"

/* gguf_type ids */
enum {
    GT_U8 = 0, GT_I8 = 1, GT_U16 = 2, GT_I16 = 3, GT_U32 = 4, GT_I32 = 5, GT_F32 = 6,
    GT_BOOL = 7, GT_STRING = 8, GT_ARRAY = 9, GT_U64 = 10, GT_I64 = 11, GT_F64 = 12,
    GT_COUNT = 13
};

#define GGUF_DEFAULT_ALIGN 32u
#define GGUF_MAX_ALIGN (1u << 20)        /* same bound as the ingot writer */
#define GGUF_MAX_STRING (256ull << 20)   /* one string (ggml: 1 GiB) */
#define GGUF_MAX_ARRAY (1ull << 28)      /* elements of one array (ggml: 2^30) */
#define GGUF_MAX_DEPTH 8                 /* nesting of ARRAY of ARRAY (ggml: none allowed) */
#define GGUF_MAX_COUNT (1ull << 24)      /* tensors, and KV records (ggml: SIZE_MAX/size) */
#define GGUF_MAX_NAME 63                 /* tensor name bytes (ggml: < GGML_MAX_NAME = 64) */
#define GGUF_MAX_KEY 65535u              /* key bytes (spec) */
#define GGUF_MAX_DIMS 4
#define GGUF_CK_STRIDE 16                /* string arrays: one offset kept per 16 elements */

/* Payload size of a scalar gguf_type (0 for STRING/ARRAY and invalid ids). */
static inline uint32_t gguf_vt_size(uint32_t vt)
{
    static const uint8_t sz[GT_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    return vt < GT_COUNT ? sz[vt] : 0;
}

/* gguf_type of a leaf -> ingot metadata type (STRING included; ARRAY -> INVALID). */
static inline ingot_meta_type gguf_vt_meta(uint32_t vt)
{
    static const uint8_t m[GT_COUNT] = {
        INGOT_META_U8,  INGOT_META_I8,  INGOT_META_U16,    INGOT_META_I16, INGOT_META_U32,
        INGOT_META_I32, INGOT_META_F32, INGOT_META_BOOL,   INGOT_META_STRING, 0,
        INGOT_META_U64, INGOT_META_I64, INGOT_META_F64};
    return vt < GT_COUNT ? (ingot_meta_type)m[vt] : INGOT_META_INVALID;
}

/* ingot metadata type -> gguf_type (UINT32_MAX for BYTES/invalid: GGUF has no bytes type). */
static inline uint32_t gguf_meta_vt(ingot_meta_type t)
{
    for (uint32_t vt = 0; vt < GT_COUNT; vt++)
        if (vt != GT_ARRAY && gguf_vt_meta(vt) == t) return vt;
    return UINT32_MAX;
}

/* ggml_type id -> ingot dtype: scalar types by name, blocks as 256 + id. INVALID if removed
 * (4, 5, 31-33, 36-38) or unknown. */
static inline ingot_dtype gguf_dtype(uint32_t id)
{
    switch (id) {
    case 0: return INGOT_DTYPE_F32;
    case 1: return INGOT_DTYPE_F16;
    case 24: return INGOT_DTYPE_I8;
    case 25: return INGOT_DTYPE_I16;
    case 26: return INGOT_DTYPE_I32;
    case 27: return INGOT_DTYPE_I64;
    case 28: return INGOT_DTYPE_F64;
    case 30: return INGOT_DTYPE_BF16;
    default: break;
    }
    if (id >= 256) return INGOT_DTYPE_INVALID;
    ingot_dtype dt = (ingot_dtype)(256 + id);
    return ingot_dtype_valid(dt) && ingot_dtype_is_quantized(dt) ? dt : INGOT_DTYPE_INVALID;
}

/* ingot dtype -> ggml_type id; false when GGUF has no such type (F8_*, BOOL, U*, C64, F4, F6). */
static inline bool gguf_ggml_type(ingot_dtype dt, uint32_t *id)
{
    switch (dt) {
    case INGOT_DTYPE_F32: *id = 0; return true;
    case INGOT_DTYPE_F16: *id = 1; return true;
    case INGOT_DTYPE_I8: *id = 24; return true;
    case INGOT_DTYPE_I16: *id = 25; return true;
    case INGOT_DTYPE_I32: *id = 26; return true;
    case INGOT_DTYPE_I64: *id = 27; return true;
    case INGOT_DTYPE_F64: *id = 28; return true;
    case INGOT_DTYPE_BF16: *id = 30; return true;
    default: break;
    }
    if ((int)dt >= 256 && ingot_dtype_is_quantized(dt)) {
        *id = (uint32_t)dt - 256;
        return true;
    }
    return false;
}

/* A bounded view of the file for the parser: p[0, avail) is addressable, the file has `size`
 * bytes. A read inside the file but past avail (pread mode, header not read far enough yet) sets
 * need_more instead of failing, so the caller can read further and parse again. */
typedef struct {
    const uint8_t *p;
    uint64_t avail, size;
    bool need_more;
    uint64_t need;
    ingot_error *err;
    const char *where; /* the key or tensor being parsed, for error records */
    size_t where_len;
} gguf_cur;

/* Bytes [off, off+n) must exist. `what` names the field at `off` for the message. */
static inline ingot_status gguf_need(gguf_cur *c, uint64_t off, uint64_t n, const char *what)
{
    uint64_t end;
    if (!ing_add(off, n, &end) || end > c->size)
        return ingot__err(c->err, INGOT_TRUNCATED, off, c->where, c->where_len,
                          "%s at byte %llu needs %llu bytes, the file ends at %llu", what,
                          (unsigned long long)off, (unsigned long long)n,
                          (unsigned long long)c->size);
    if (end > c->avail) {
        c->need_more = true;
        c->need = end;
        return INGOT_TRUNCATED;
    }
    return INGOT_OK;
}

/* Reads a string header at off: *len and the offset of its bytes; checks the bytes exist. */
static inline ingot_status gguf_string(gguf_cur *c, uint64_t off, const char *what,
                                       uint64_t *len, uint64_t *bytes)
{
    ING_TRY(gguf_need(c, off, 8, what));
    uint64_t n = ing_ld64(c->p + off);
    if (n > (uint64_t)INT64_MAX)
        return ingot__err(c->err, INGOT_BAD_STRING, off, c->where, c->where_len,
                          "%s length %llu is negative as int64", what, (unsigned long long)n);
    if (n > GGUF_MAX_STRING)
        return ingot__err(c->err, INGOT_LIMIT, off, c->where, c->where_len,
                          "%s length %llu exceeds the %llu-byte cap", what, (unsigned long long)n,
                          (unsigned long long)GGUF_MAX_STRING);
    if (n > c->size - off - 8) /* the 8 length bytes exist: no underflow */
        return ingot__err(c->err, INGOT_TRUNCATED, off, c->where, c->where_len,
                          "%s of %llu bytes at byte %llu runs past the end of the file (%llu)",
                          what, (unsigned long long)n, (unsigned long long)(off + 8),
                          (unsigned long long)c->size);
    ING_TRY(gguf_need(c, off + 8, n, what));
    *len = n;
    *bytes = off + 8;
    return INGOT_OK;
}

/* Walks one value of gguf_type vt starting at off (the payload, after the type field); *end
 * receives the offset after it. depth counts enclosing arrays. When ck is not NULL and the value
 * is an array of strings, the offset of every GGUF_CK_STRIDE-th element is stored in ck[]. */
static inline ingot_status gguf_walk(gguf_cur *c, uint64_t off, uint32_t vt, uint32_t depth,
                                     uint64_t *ck, uint64_t *end)
{
    if (vt >= GT_COUNT)
        return ingot__err(c->err, INGOT_BAD_TYPE, off - 4, c->where, c->where_len,
                          "value type %u is not a GGUF type (0..12)", vt);
    if (vt == GT_STRING) {
        uint64_t len = 0, b = 0;
        ING_TRY(gguf_string(c, off, "string", &len, &b));
        *end = b + len;
        return INGOT_OK;
    }
    if (vt != GT_ARRAY) {
        ING_TRY(gguf_need(c, off, gguf_vt_size(vt), "value"));
        *end = off + gguf_vt_size(vt);
        return INGOT_OK;
    }
    ING_TRY(gguf_need(c, off, 12, "array header"));
    uint32_t et = ing_ld32(c->p + off);
    uint64_t n = ing_ld64(c->p + off + 4);
    if (et >= GT_COUNT)
        return ingot__err(c->err, INGOT_BAD_TYPE, off, c->where, c->where_len,
                          "array element type %u is not a GGUF type (0..12)", et);
    if (et == GT_ARRAY && depth + 1 >= GGUF_MAX_DEPTH)
        return ingot__err(c->err, INGOT_BAD_ARRAY, off, c->where, c->where_len,
                          "arrays nested deeper than %u levels", GGUF_MAX_DEPTH);
    if (n > (uint64_t)INT64_MAX)
        return ingot__err(c->err, INGOT_BAD_ARRAY, off + 4, c->where, c->where_len,
                          "array count %llu is negative as int64", (unsigned long long)n);
    if (n > GGUF_MAX_ARRAY)
        return ingot__err(c->err, INGOT_LIMIT, off + 4, c->where, c->where_len,
                          "array count %llu exceeds the cap of %llu elements",
                          (unsigned long long)n, (unsigned long long)GGUF_MAX_ARRAY);
    uint64_t at = off + 12;
    /* Every element takes at least this many bytes: bound the count by the file first. */
    uint64_t min = et == GT_STRING ? 8 : et == GT_ARRAY ? 12 : gguf_vt_size(et);
    ING_TRY(gguf_need(c, at, n * min, "array payload")); /* n <= 2^28, min <= 12: no wrap */
    if (et != GT_STRING && et != GT_ARRAY) {
        *end = at + n * min;
        return INGOT_OK;
    }
    const uint8_t *p = c->p;
    for (uint64_t k = 0; k < n; k++) {
        if (et == GT_STRING) {
            if (ck && k % GGUF_CK_STRIDE == 0) ck[k / GGUF_CK_STRIDE] = at;
            /* inline fast path of gguf_string: the 8 length bytes are usually available */
            uint64_t len = 0;
            if (ING_LIKELY(at + 8 <= c->avail) && (len = ing_ld64(p + at)) <= c->avail - at - 8 &&
                len <= GGUF_MAX_STRING) {
                at += 8 + len;
                continue;
            }
            uint64_t b = 0;
            ING_TRY(gguf_string(c, at, "array string", &len, &b));
            at = b + len;
        } else { /* an inner array: its own element type and count, then its items */
            ING_TRY(gguf_walk(c, at, GT_ARRAY, depth + 1, NULL, &at));
        }
    }
    *end = at;
    return INGOT_OK;
}

#endif
