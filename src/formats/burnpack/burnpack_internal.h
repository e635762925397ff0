/*
 * burnpack_internal.h - what the Burnpack reader (burnpack_adapter.c) and writer
 * (burnpack_write.c) share: the pull parser over libcbor's streaming decoder, the dtype table,
 * a growable byte buffer, CBOR/JSON transcoding of the opaque QFloat scheme.
 * Spec: ../shared/formats/burnpack.md.
 */
#ifndef INGOT_BURNPACK_INTERNAL_H
#define INGOT_BURNPACK_INTERNAL_H

#include "order.h" /* ingot__bytes_cmp, ingot__index_sort */

#include "deps.h"
#include "ingot/core.h"

#define BP_HEADER_SIZE 10u
#define BP_MAGIC0 0x4Eu /* "NRUB" on disk: u32 LE 0x4255524E */
#define BP_ALIGN 256u
#define BP_MAX_METADATA (100u * 1024u * 1024u)
#define BP_MAX_TENSORS 100000u
#define BP_MAX_DEPTH 128u

/* Burn releases whose layout a file (or a writer option) can match; bit sets of these. */
enum { BP_V19 = 1u, BP_V20 = 2u, BP_V21 = 4u, BP_VALL = 7u };

/* Reserved metadata namespace (docs/formats/burnpack.md): what a Burnpack file says that the
 * ingot dtype and shape cannot, so the writer can restore it. */
#define BP_PREFIX "ingot.burnpack."
#define BP_KEY_LAYOUT "ingot.burnpack.layout"
#define BP_KEY_DTYPE "ingot.burnpack.dtype."
#define BP_KEY_SHAPE "ingot.burnpack.shape."

/* ---- growable buffer (allocator of the file or the writer) ---- */
typedef struct {
    const ingot_allocator *a;
    uint8_t *p;
    size_t len, cap;
    bool oom;
} bp_buf;

bool ingot__bp_buf_put(bp_buf *b, const void *s, size_t n);
void ingot__bp_buf_free(bp_buf *b);

/* ---- pull parser: one libcbor stream event at a time ---- */
typedef enum {
    EV_UINT = 1, EV_NEGINT, EV_BYTES, EV_TEXT, EV_BYTES_START, EV_TEXT_START, EV_ARRAY,
    EV_ARRAY_INDEF, EV_MAP, EV_MAP_INDEF, EV_TAG, EV_FLOAT, EV_BOOL, EV_NULL, EV_UNDEF, EV_BREAK
} bp_ev;

typedef struct {
    const uint8_t *buf; /* the CBOR bytes */
    size_t len, pos;
    uint64_t base; /* file offset of buf[0], for error offsets */
    bp_ev kind;    /* current event */
    uint64_t u;    /* uint value or container count */
    const uint8_t *s;
    size_t n; /* text/bytes */
    size_t at; /* offset of the current event's head in buf */
} bp_cur;

/* Loads the next event, skipping tags (ciborium ignores them). */
ingot_status ingot__bp_next(bp_cur *c, ingot_error *err);
/* ingot__bp_next for a position that must hold a value: a break there is BAD_METADATA. */
ingot_status ingot__bp_value(bp_cur *c, ingot_error *err);
/* Skips the item whose head is the current event (depth = its nesting level). */
ingot_status ingot__bp_skip(bp_cur *c, unsigned depth, ingot_error *err);

/* Map/array iteration over definite or indefinite containers (current event is the head). */
typedef struct {
    bool indef, map;
    uint64_t left; /* definite: entries left (map: keys; the caller loads values) */
} bp_iter;
ingot_status ingot__bp_iter_begin(bp_cur *c, bp_iter *it, bool map, const char *what,
                                  ingot_error *err);
/* Loads the next key (map; the caller then loads and consumes the value with ingot__bp_next) or
 * element (array) as the current event; *more false at the end. */
ingot_status ingot__bp_iter_next(bp_cur *c, bp_iter *it, bool *more, ingot_error *err);

static inline bool bp_is(const bp_cur *c, const char *lit)
{
    size_t n = ing_strlen(lit);
    return c->kind == EV_TEXT && c->n == n && (n == 0 || ING_MEMCMP(c->s, lit, n) == 0);
}

/* ---- dtypes ---- */
typedef enum {
    BP_F64, BP_F32, BP_FLEX32, BP_F16, BP_BF16, BP_I64, BP_I32, BP_I16, BP_I8, BP_U64, BP_U32,
    BP_U16, BP_U8, BP_BOOL_TEXT, BP_BOOL_NATIVE, BP_BOOL_U8, BP_BOOL_U32, BP_QFLOAT
} bp_kind;

typedef struct {
    bp_kind kind;
    unsigned versions; /* BP_V* the spelling is valid in */
    ingot_dtype dtype; /* what ingot exposes */
    uint32_t esize;    /* bytes per element; 0 for QFLOAT (opaque bytes) */
} bp_dtype;

/* Parses the dtype item at the current event. For QFLOAT the whole dtype item is rendered as
 * compact JSON into json (if not NULL). `who` names the tensor for errors. */
ingot_status ingot__bp_parse_dtype(bp_cur *c, const char *who, size_t who_len, bp_dtype *out,
                            bp_buf *json, ingot_error *err);
/* The plain text spelling of a non-Bool, non-QFloat kind ("F32"). */
const char *ingot__bp_kind_text(bp_kind k);

/* Compact JSON of a CBOR value tree made of text, uints, arrays and maps with text keys
 * (docs/formats/burnpack.md) back to canonical CBOR. BAD_METADATA on anything else. */
ingot_status ingot__bp_json_to_cbor(const char *json, size_t n, bp_buf *out, const char *who,
                             size_t who_len, ingot_error *err);


/* Shortest-form CBOR heads. */
bool ingot__bp_put_head(bp_buf *b, unsigned major, uint64_t v);
bool ingot__bp_put_text(bp_buf *b, const char *s, size_t n);

#endif
