/*
 * tenzor_adapter.c - reader of `.tenzor` (Zig project mattneel/tenzor), following the facts read
 * from its code (../shared/formats/tenzor.md), not its README. Mapping: docs/formats/tenzor.md.
 *
 *   0     "TENZOR\0\0" | u32 version = 1 | u32 flags = 0 | u32 tensor_count | u32 pad
 *   24    u64 index_offset (= roundup8(64 + metadata_size)) | u64 data_offset (= roundup4096(index
 *         end)) | u32 metadata_size | 20 reserved bytes
 *   64    metadata: JSON text, zero-padded to 8
 *   index tensor_count entries of 48 bytes: u64 FNV-1a(name) | u8 dtype | u8 ndim | 2 pad |
 *         u32 shape[5] | u64 offset relative to data_offset | u64 size
 *   data  the tensors back to back in index order, no per-tensor alignment; EOF right after
 *
 * Names are stored only as hashes. ingot's writer also records them in the JSON under
 * "ingot.tensor_names"; without that key a tensor is named "#<16 hex digits>" and can still be
 * found by its real name, by hashing. JSON members become typed metadata (docs/formats/tenzor.md).
 */
#include <string.h>

#include "alloc.h"
#include "checked.h"
#include "error.h"
#include "json.h"
#include "order.h"
#include "tenzor_format.h"

/* Metadata of a tenzor file is a small JSON object (a checkpoint's epoch and loss); the cap bounds
 * what the decoded form may take in memory. */
#define TZ_MAX_META (16u << 20)

static const ingot_dtype dtypes[TZ_DTYPES] = {
    INGOT_DTYPE_F32, INGOT_DTYPE_F16, INGOT_DTYPE_BF16, INGOT_DTYPE_F64,
    INGOT_DTYPE_I8,  INGOT_DTYPE_I16, INGOT_DTYPE_I32,  INGOT_DTYPE_I64,
    INGOT_DTYPE_U8,  INGOT_DTYPE_U16, INGOT_DTYPE_U32,  INGOT_DTYPE_U64};

ingot_dtype ingot__tz_dtype(uint8_t code)
{
    return code < TZ_DTYPES ? dtypes[code] : INGOT_DTYPE_INVALID;
}

int ingot__tz_code(ingot_dtype dt)
{
    for (int i = 0; i < (int)TZ_DTYPES; i++)
        if (dtypes[i] == dt) return i;
    return -1;
}

bool ingot__tz_hexname(const char *s, size_t n, uint64_t *h)
{
    if (n != 17 || s[0] != '#') return false;
    uint64_t v = 0;
    for (size_t i = 1; i < 17; i++) {
        char c = s[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0) return false;
        v = v << 4 | (uint64_t)d;
    }
    *h = v;
    return true;
}

/* ---- state ---- */

typedef struct {
    const char *key;
    size_t key_len;
    ingot_meta_type type;
    bool is_array;
    uint64_t count;
    uint64_t bits;          /* scalar U64/I64/F64/BOOL value */
    const void *data;       /* scalar string; numeric array (8-byte or 1-byte bool elements) */
    const char *const *strs; /* string array */
    const size_t *lens;
} mentry;

typedef struct {
    uint64_t h;
    uint64_t i;
} hidx;

typedef struct {
    const uint8_t *index;
    uint64_t n, index_off, data_off;
    bool names_known;
    uint8_t *arena;
    size_t arena_len;
    mentry *meta;
    uint32_t n_meta;
    uint32_t *meta_sorted;
    const char **names;
    hidx *by_hash;
} state;

#define S(f) ((const state *)(f)->state)

/* Bump allocation in two passes: measuring (base NULL) then filling. */
typedef struct {
    uint8_t *base;
    size_t len;
} arena;

static void *take(arena *a, size_t n, size_t align)
{
    size_t off = (a->len + align - 1) & ~(align - 1);
    a->len = off + n;
    return a->base ? a->base + off : NULL;
}

static const char *copy_str(arena *a, const uint8_t *p, size_t n)
{
    char *d = take(a, n + 1, 1);
    if (d) {
        if (n) memcpy(d, p, n);
        d[n] = 0;
    }
    return d;
}

static ingot_status decode(arena *a, const ingot__json_tok *t, const char **out)
{
    char *d = take(a, t->dlen + 1, 1);
    *out = d;
    if (!d) return INGOT_OK;
    size_t n;
    ING_TRY(ingot__json_str(t, d, t->dlen, &n, NULL));
    d[n] = 0;
    return INGOT_OK;
}

/* ---- JSON metadata ---- */

enum { K_INT, K_UINT, K_FLOAT };

static ingot_status num_kind(const ingot__json *j, const ingot__json_tok *t, int *kind,
                             uint64_t *bits, ingot_error *err)
{
    if (!(t->flags & (ING_JSON_FRAC | ING_JSON_EXP))) {
        int64_t i;
        uint64_t u;
        if (ingot__json_i64(j, t, &i, NULL) == INGOT_OK) {
            *kind = K_INT;
            *bits = (uint64_t)i;
            return INGOT_OK;
        }
        if (!(t->flags & ING_JSON_NEG) && ingot__json_u64(j, t, &u, NULL) == INGOT_OK) {
            *kind = K_UINT;
            *bits = u;
            return INGOT_OK;
        }
    }
    double d;
    ingot_status st = ingot__json_f64(j, t, &d, err);
    if (st != INGOT_OK)
        return ingot__err(err, INGOT_BAD_METADATA, j->base_offset + t->pos, "metadata", 8,
                          "number not representable as a double");
    *kind = K_FLOAT;
    memcpy(bits, &d, 8);
    return INGOT_OK;
}

static ingot_status f64_bits(const ingot__json *j, const ingot__json_tok *t, uint64_t *bits,
                             ingot_error *err)
{
    double d;
    if (ingot__json_f64(j, t, &d, NULL) != INGOT_OK)
        return ingot__err(err, INGOT_BAD_METADATA, j->base_offset + t->pos, "metadata", 8,
                          "number not representable as a double");
    memcpy(bits, &d, 8);
    return INGOT_OK;
}

/* An array value whose '[' token is v: a homogeneous array of strings, bools or numbers becomes a
 * typed array; anything else (nested, null, mixed) the raw JSON text as a string. */
static ingot_status read_array(ingot__json *j, const ingot__json_tok *v, arena *a, mentry *e,
                               ingot_error *err)
{
    ingot__json j2 = *j;
    ingot__json_tok u;
    uint64_t n = 0;
    bool any_str = false, any_bool = false, any_num = false, any_other = false;
    bool any_float = false, any_uint = false, any_neg = false;
    for (;;) {
        ING_TRY(ingot__json_next(&j2, &u, err));
        if (u.type == ING_JSON_ARRAY_END && u.depth == v->depth) break;
        n++;
        switch (u.type) {
        case ING_JSON_STRING: any_str = true; break;
        case ING_JSON_TRUE:
        case ING_JSON_FALSE: any_bool = true; break;
        case ING_JSON_NUMBER: {
            int kind;
            uint64_t bits;
            ING_TRY(num_kind(&j2, &u, &kind, &bits, err));
            any_num = true;
            if (kind == K_FLOAT) any_float = true;
            if (kind == K_UINT) any_uint = true;
            if (u.flags & ING_JSON_NEG) any_neg = true;
            break;
        }
        default:
            any_other = true;
            ING_TRY(ingot__json_skip(&j2, &u, err));
            break;
        }
    }
    e->is_array = true;
    e->count = n;
    if (any_other || any_str + any_bool + any_num > 1) {
        *j = j2;
        e->is_array = false;
        e->type = INGOT_META_STRING;
        e->count = j->pos - v->pos;
        e->data = copy_str(a, j->buf + v->pos, (size_t)e->count);
        return INGOT_OK;
    }
    if (n == 0 || any_str) {
        e->type = INGOT_META_STRING;
        const char **strs = take(a, (size_t)n * sizeof(char *), 8);
        size_t *lens = take(a, (size_t)n * sizeof(size_t), 8);
        e->strs = strs;
        e->lens = lens;
        for (uint64_t k = 0; k < n; k++) {
            ING_TRY(ingot__json_next(j, &u, err));
            const char *s;
            ING_TRY(decode(a, &u, &s));
            if (strs) strs[k] = s, lens[k] = u.dlen;
        }
    } else if (any_bool) {
        e->type = INGOT_META_BOOL;
        uint8_t *d = take(a, (size_t)n, 1);
        e->data = d;
        for (uint64_t k = 0; k < n; k++) {
            ING_TRY(ingot__json_next(j, &u, err));
            if (d) d[k] = u.type == ING_JSON_TRUE;
        }
    } else {
        bool as_f64 = any_float || (any_uint && any_neg);
        e->type = as_f64 ? INGOT_META_F64 : any_uint ? INGOT_META_U64 : INGOT_META_I64;
        uint64_t *d = take(a, (size_t)n * 8, 8);
        e->data = d;
        for (uint64_t k = 0; k < n; k++) {
            ING_TRY(ingot__json_next(j, &u, err));
            uint64_t bits;
            int kind;
            if (as_f64) ING_TRY(f64_bits(j, &u, &bits, err));
            else ING_TRY(num_kind(j, &u, &kind, &bits, err));
            if (d) d[k] = bits;
        }
    }
    ING_TRY(ingot__json_next(j, &u, err)); /* the ']' */
    return INGOT_OK;
}

/* One pass over the JSON object: measures (a->base NULL) or fills s->meta and s->names. */
static ingot_status parse_meta(state *s, const uint8_t *json, size_t len, arena *a,
                               uint32_t *n_meta, bool *has_names, ingot_error *err)
{
    ingot__json j;
    ingot__json_tok t, v;
    ingot__json_init(&j, json, len, 0, TZ_HDR);
    j.syntax_code = INGOT_BAD_METADATA;
    ING_TRY(ingot__json_next(&j, &t, err));
    if (t.type != ING_JSON_OBJECT)
        return ingot__err(err, INGOT_BAD_METADATA, TZ_HDR + t.pos, "metadata", 8,
                          "the metadata is not a JSON object");
    uint32_t count = 0;
    *has_names = false;
    for (;;) {
        ING_TRY(ingot__json_next(&j, &t, err));
        if (t.type == ING_JSON_OBJECT_END) break;
        uint64_t at = TZ_HDR + t.pos;
        if (t.dlen == 0 || (t.flags & ING_JSON_HAS_NUL))
            return ingot__err(err, INGOT_BAD_STRING, at, "metadata", 8,
                              "a metadata key is empty or contains NUL");
        if (t.dlen > 65535)
            return ingot__err(err, INGOT_BAD_NAME, at, "metadata", 8, "key longer than 65535 bytes");
        bool names = ingot__json_str_eq(&t, TZ_NAMES_KEY, sizeof TZ_NAMES_KEY - 1);
        const char *key;
        ING_TRY(decode(a, &t, &key));
        size_t key_len = t.dlen;
        ING_TRY(ingot__json_next(&j, &v, err));
        if (names) {
            if (*has_names)
                return ingot__err(err, INGOT_DUPLICATE, at, TZ_NAMES_KEY, sizeof TZ_NAMES_KEY - 1,
                                  "key appears twice");
            *has_names = true;
            mentry e = {0};
            if (v.type == ING_JSON_ARRAY) ING_TRY(read_array(&j, &v, a, &e, err));
            else ING_TRY(ingot__json_skip(&j, &v, err));
            if (v.type != ING_JSON_ARRAY || !e.is_array || e.type != INGOT_META_STRING ||
                e.count != s->n)
                return ingot__err(err, INGOT_BAD_METADATA, TZ_HDR + v.pos, TZ_NAMES_KEY,
                                  sizeof TZ_NAMES_KEY - 1,
                                  "must be an array of %llu strings (one per tensor)",
                                  (unsigned long long)s->n);
            for (uint64_t i = 0; a->base && i < s->n; i++) {
                if (strlen(e.strs[i]) != e.lens[i])
                    return ingot__err(err, INGOT_BAD_METADATA, TZ_HDR + v.pos, TZ_NAMES_KEY,
                                      sizeof TZ_NAMES_KEY - 1, "name %llu contains NUL",
                                      (unsigned long long)i);
                s->names[i] = e.strs[i];
            }
            continue;
        }
        mentry e = {.key = key, .key_len = key_len, .count = 1};
        switch (v.type) {
        case ING_JSON_STRING: {
            const char *str;
            ING_TRY(decode(a, &v, &str));
            e.type = INGOT_META_STRING;
            e.data = str;
            e.count = v.dlen;
            break;
        }
        case ING_JSON_NUMBER: {
            int kind;
            ING_TRY(num_kind(&j, &v, &kind, &e.bits, err));
            e.type = kind == K_INT ? INGOT_META_I64 : kind == K_UINT ? INGOT_META_U64 : INGOT_META_F64;
            break;
        }
        case ING_JSON_TRUE:
        case ING_JSON_FALSE:
            e.type = INGOT_META_BOOL;
            e.bits = v.type == ING_JSON_TRUE;
            break;
        case ING_JSON_ARRAY: ING_TRY(read_array(&j, &v, a, &e, err)); break;
        default: /* null or an object: its JSON text */
            ING_TRY(ingot__json_skip(&j, &v, err));
            e.type = INGOT_META_STRING;
            e.count = j.pos - v.pos;
            e.data = copy_str(a, json + v.pos, (size_t)e.count);
            break;
        }
        if (a->base) s->meta[count] = e;
        count++;
    }
    ING_TRY(ingot__json_next(&j, &t, err));
    *n_meta = count;
    return INGOT_OK;
}

/* ---- sorting (merge sort, stable, with scratch) ---- */

static const void *meta_key(const void *ctx, uint32_t i, size_t *len)
{
    const mentry *m = ctx;
    *len = m[i].key_len;
    return m[i].key;
}

static int meta_cmp(const void *ctx, uint32_t a, uint32_t b)
{
    const mentry *m = ctx;
    return ingot__bytes_cmp(m[a].key, m[a].key_len, m[b].key, m[b].key_len);
}

static void sort_hash(hidx *v, hidx *tmp, uint64_t n)
{
    if (n < 2) return;
    uint64_t h = n / 2, i = 0, k = 0, j = h;
    sort_hash(v, tmp, h);
    sort_hash(v + h, tmp, n - h);
    while (i < h && j < n) tmp[k++] = v[j].h < v[i].h ? v[j++] : v[i++];
    while (i < h) tmp[k++] = v[i++];
    while (j < n) tmp[k++] = v[j++];
    memcpy(v, tmp, (size_t)n * sizeof *v);
}

/* ---- probe / open ---- */

static int probe(const uint8_t *head, size_t n)
{
    return n >= 8 && memcmp(head, TZ_MAGIC, 8) == 0 ? 100 : 0;
}

static bool all_zero(const uint8_t *p, uint64_t n, uint64_t *at)
{
    for (uint64_t i = 0; i < n; i++)
        if (p[i]) {
            *at = i;
            return false;
        }
    return true;
}

static void hexname(char *d, uint64_t h)
{
    static const char hx[] = "0123456789abcdef";
    d[0] = '#';
    for (int i = 0; i < 16; i++) d[1 + i] = hx[(h >> (60 - 4 * i)) & 15];
    d[17] = 0;
}

static void free_state(const ingot_allocator *a, state *s)
{
    if (!s) return;
    ingot__free(a, s->arena, s->arena_len);
    ingot__free(a, s, sizeof *s);
}

static ingot_status check_index(ingot_file *f, state *s, ingot_error *err)
{
    uint64_t pos = 0, room = f->size - s->data_off;
    for (uint64_t i = 0; i < s->n; i++) {
        const uint8_t *e = s->index + TZ_ENTRY * i;
        char nm[18];
        hexname(nm, ing_ld64(e));
        uint64_t eo = s->index_off + TZ_ENTRY * i;
        uint8_t code = e[8], nd = e[9];
        if (code >= TZ_DTYPES)
            return ingot__err(err, INGOT_BAD_TYPE, eo + 8, nm, 17, "dtype code %u (0..11)", code);
        if (nd > TZ_MAX_DIMS)
            return ingot__err(err, INGOT_BAD_NDIMS, eo + 9, nm, 17, "ndim %u (at most 5)", nd);
        if (e[10] | e[11])
            return ingot__err(err, INGOT_BAD_FLAGS, eo + 10, nm, 17, "pad bytes are not 0");
        uint64_t shape[INGOT_MAX_RANK] = {0}, nelem, nbytes;
        for (uint32_t d = 0; d < TZ_MAX_DIMS; d++) {
            uint32_t v = ing_ld32(e + 12 + 4 * d);
            if (d >= nd && v)
                return ingot__err(err, INGOT_BAD_SHAPE, eo + 12 + 4 * d, nm, 17,
                                  "shape[%u] = %u past ndim %u", d, v, nd);
            shape[d] = v;
        }
        ingot_status st = ingot_dtype_nbytes(ingot__tz_dtype(code), nd, shape, &nelem, &nbytes);
        if (st != INGOT_OK)
            return ingot__err(err, st, eo + 12, nm, 17, "element count or byte size overflows");
        uint64_t rel = ing_ld64(e + 32), size = ing_ld64(e + 40);
        if (size != nbytes)
            return ingot__err(err, INGOT_BAD_SIZE, eo + 40, nm, 17,
                              "data_size %llu, shape and dtype give %llu", (unsigned long long)size,
                              (unsigned long long)nbytes);
        if (rel != pos)
            return ingot__err(err, INGOT_BAD_LAYOUT, eo + 32, nm, 17,
                              "data offset %llu, the tensors before it end at %llu",
                              (unsigned long long)rel, (unsigned long long)pos);
        if (size > room - pos)
            return ingot__err(err, INGOT_TRUNCATED, f->size, nm, 17,
                              "data [%llu, +%llu) runs past the end of the file",
                              (unsigned long long)(s->data_off + pos), (unsigned long long)size);
        pos += size;
    }
    if (pos != room)
        return ingot__err(err, INGOT_BAD_LAYOUT, s->data_off + pos, "data", 4,
                          "%llu bytes follow the last tensor", (unsigned long long)(room - pos));
    return INGOT_OK;
}

static ingot_status open_tenzor(ingot_file *f, ingot_error *err)
{
    const uint8_t *h;
    uint64_t size = f->size;
    if (size < TZ_HDR) {
        size_t n = size < 8 ? (size_t)size : 8;
        ING_TRY(ingot__file_head(f, n, &h, err));
        if (memcmp(h, TZ_MAGIC, n) != 0)
            return ingot__err(err, INGOT_BAD_MAGIC, 0, "header", 6, "not a tenzor file");
        return ingot__err(err, INGOT_TRUNCATED, size, "header", 6,
                          "file has %llu bytes, the header 64", (unsigned long long)size);
    }
    ING_TRY(ingot__file_head(f, TZ_HDR, &h, err));
    if (memcmp(h, TZ_MAGIC, 8) != 0)
        return ingot__err(err, INGOT_BAD_MAGIC, 0, "header", 6, "not a tenzor file");
    uint32_t version = ing_ld32(h + 8);
    if (version != 1)
        return ingot__err(err, INGOT_BAD_VERSION, 8, "header", 6, "version %u (only 1 exists)",
                          version);
    uint64_t bad;
    if (ing_ld32(h + 12))
        return ingot__err(err, INGOT_BAD_FLAGS, 12, "header", 6, "flags 0x%x: none is defined",
                          ing_ld32(h + 12));
    if (ing_ld32(h + 20))
        return ingot__err(err, INGOT_BAD_FLAGS, 20, "header", 6, "pad bytes are not 0");
    if (!all_zero(h + 44, 20, &bad))
        return ingot__err(err, INGOT_BAD_FLAGS, 44 + bad, "header", 6, "reserved bytes are not 0");
    uint64_t n = ing_ld32(h + 16), index_off = ing_ld64(h + 24), data_off = ing_ld64(h + 32);
    uint64_t msize = ing_ld32(h + 40), want_index, index_end, want_data;
    /* The layout is the writer's, exactly: metadata at 64, the index at the next multiple of 8,
     * the data at the next multiple of 4096 after the index. */
    ing_round_up(TZ_HDR + msize, 8, &want_index); /* < 2^33: cannot overflow */
    if (index_off != want_index)
        return ingot__err(err, index_off < want_index ? INGOT_BAD_HEADER_SIZE : INGOT_BAD_LAYOUT, 24,
                          "header", 6, "index_offset %llu, metadata_size %llu puts it at %llu",
                          (unsigned long long)index_off, (unsigned long long)msize,
                          (unsigned long long)want_index);
    if (data_off % TZ_PAGE)
        return ingot__err(err, INGOT_BAD_ALIGN, 32, "header", 6,
                          "data_offset %llu is not a multiple of 4096", (unsigned long long)data_off);
    if (data_off < index_off || n > (data_off - index_off) / TZ_ENTRY)
        return ingot__err(err, INGOT_BAD_COUNT, 16, "header", 6,
                          "%llu index entries do not fit between %llu and data_offset %llu",
                          (unsigned long long)n, (unsigned long long)index_off,
                          (unsigned long long)data_off);
    index_end = index_off + TZ_ENTRY * n;
    ing_round_up(index_end, TZ_PAGE, &want_data); /* index_end <= data_off: no overflow */
    if (data_off != want_data)
        return ingot__err(err, INGOT_BAD_LAYOUT, 32, "header", 6,
                          "data_offset %llu, the index ends at %llu (next page %llu)",
                          (unsigned long long)data_off, (unsigned long long)index_end,
                          (unsigned long long)want_data);
    if (data_off > size)
        return ingot__err(err, INGOT_TRUNCATED, size, "header", 6,
                          "file has %llu bytes, its data section starts at %llu",
                          (unsigned long long)size, (unsigned long long)data_off);
    if (msize > TZ_MAX_META)
        return ingot__err(err, INGOT_LIMIT, 40, "metadata", 8,
                          "%llu bytes of JSON (ingot's cap is 16 MiB)", (unsigned long long)msize);
    ING_TRY(ingot__file_head(f, data_off, &h, err));
    if (!all_zero(h + TZ_HDR + msize, index_off - TZ_HDR - msize, &bad))
        return ingot__err(err, INGOT_BAD_LAYOUT, TZ_HDR + msize + bad, "metadata", 8,
                          "padding after the JSON is not zero");
    if (!all_zero(h + index_end, data_off - index_end, &bad))
        return ingot__err(err, INGOT_BAD_LAYOUT, index_end + bad, "index", 5,
                          "padding after the index is not zero");

    state *s = ingot__calloc(&f->alloc, sizeof *s);
    if (!s) return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating the reader");
    s->index = h + index_off;
    s->n = n;
    s->index_off = index_off;
    s->data_off = data_off;
    ingot_status st = check_index(f, s, err);

    /* JSON: measure, allocate, fill. */
    arena a = {NULL, 0};
    uint32_t n_meta = 0;
    bool has_names = false;
    if (st == INGOT_OK) st = parse_meta(s, h + TZ_HDR, (size_t)msize, &a, &n_meta, &has_names, err);
    size_t fixed = 0;
    if (st == INGOT_OK) {
        /* one spare entry (tenzor.key_order) with its string and length arrays */
        fixed = ((size_t)n_meta + 1) * sizeof(mentry) + ((size_t)n_meta + 1) * 2 * sizeof(uint32_t) +
                (size_t)n_meta * (sizeof(char *) + sizeof(size_t)) +
                (size_t)n * (sizeof(char *) + 2 * sizeof(hidx)) + (has_names ? 0 : (size_t)n * 18);
        fixed = (fixed + 7) & ~(size_t)7;
        s->arena_len = fixed + a.len + 8;
        s->arena = ingot__calloc(&f->alloc, s->arena_len);
        if (!s->arena) {
            s->arena_len = 0;
            st = ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating the metadata");
        }
    }
    hidx *tmp = NULL;
    const char **order_strs = NULL;
    size_t *order_lens = NULL;
    if (st == INGOT_OK) {
        uint8_t *p = s->arena;
        s->meta = (mentry *)(void *)p;
        p += ((size_t)n_meta + 1) * sizeof(mentry);
        s->by_hash = (hidx *)(void *)p;
        tmp = s->by_hash + n;
        p += (size_t)n * 2 * sizeof(hidx);
        s->names = (const char **)(void *)p;
        p += (size_t)n * sizeof(char *);
        s->meta_sorted = (uint32_t *)(void *)p;
        p += ((size_t)n_meta + 1) * 2 * sizeof(uint32_t);
        order_strs = (const char **)(void *)p;
        p += (size_t)n_meta * sizeof(char *);
        order_lens = (size_t *)(void *)p;
        p += (size_t)n_meta * sizeof(size_t);
        if (!has_names)
            for (uint64_t i = 0; i < n; i++, p += 18) {
                hexname((char *)p, ing_ld64(s->index + TZ_ENTRY * i));
                s->names[i] = (const char *)p;
            }
        arena fill = {s->arena + fixed, 0};
        uint32_t again;
        bool hn;
        st = parse_meta(s, h + TZ_HDR, (size_t)msize, &fill, &again, &hn, err);
        s->n_meta = again;
        s->names_known = has_names;
    }
    /* Names from the JSON must hash to their entries ("#<hex>" names stand for themselves). */
    for (uint64_t i = 0; st == INGOT_OK && has_names && i < n; i++) {
        const char *nm = s->names[i];
        size_t len = strlen(nm);
        uint64_t hv = ing_ld64(s->index + TZ_ENTRY * i), hx;
        bool ok = len > 0 && (ingot__tz_hexname(nm, len, &hx) ? hx == hv
                                                              : ingot__tz_fnv1a(nm, len) == hv);
        if (!ok)
            st = ingot__err(err, INGOT_BAD_METADATA, index_off + TZ_ENTRY * i, nm,
                            len > 63 ? 63 : len, "name %llu of " TZ_NAMES_KEY
                            " is empty or does not hash to its index entry",
                            (unsigned long long)i);
    }
    /* Unique hashes and keys. */
    if (st == INGOT_OK) {
        for (uint64_t i = 0; i < n; i++)
            s->by_hash[i] = (hidx){ing_ld64(s->index + TZ_ENTRY * i), i};
        sort_hash(s->by_hash, tmp, n);
        for (uint64_t i = 1; i < n && st == INGOT_OK; i++)
            if (s->by_hash[i].h == s->by_hash[i - 1].h) {
                uint64_t k = s->by_hash[i].i;
                st = ingot__err(err, INGOT_DUPLICATE, index_off + TZ_ENTRY * k, s->names[k],
                                strlen(s->names[k]), "two index entries have the same name hash");
            }
        for (uint32_t i = 0; i < s->n_meta; i++) s->meta_sorted[i] = i;
        ingot__index_sort(s->meta_sorted, s->meta_sorted + s->n_meta, s->n_meta, meta_cmp,
                          s->meta);
        for (uint32_t i = 1; i < s->n_meta && st == INGOT_OK; i++) {
            const mentry *m = &s->meta[s->meta_sorted[i]];
            if (meta_cmp(s->meta, s->meta_sorted[i], s->meta_sorted[i - 1]) == 0)
                st = ingot__err(err, INGOT_DUPLICATE, TZ_HDR, m->key,
                                m->key_len > 63 ? 63 : m->key_len, "metadata key appears twice");
        }
        /* JSON member order is kept (metadata is listed in file order), and exposed as
         * tenzor.key_order when it is not sorted, so that a trip through a format that sorts
         * keys (.ingot) still writes the same JSON. */
        bool sorted = true, taken = false;
        for (uint32_t i = 0; i < s->n_meta; i++) {
            if (s->meta_sorted[i] != i) sorted = false;
            const mentry *m = &s->meta[i];
            if (m->key_len == sizeof TZ_ORDER_KEY - 1 && !memcmp(m->key, TZ_ORDER_KEY, m->key_len))
                taken = true;
        }
        if (st == INGOT_OK && !sorted && !taken) {
            for (uint32_t i = 0; i < s->n_meta; i++) {
                order_strs[i] = s->meta[i].key;
                order_lens[i] = s->meta[i].key_len;
            }
            s->meta[s->n_meta] = (mentry){.key = TZ_ORDER_KEY, .key_len = sizeof TZ_ORDER_KEY - 1,
                                          .type = INGOT_META_STRING, .is_array = true,
                                          .count = s->n_meta, .strs = order_strs,
                                          .lens = order_lens};
            s->n_meta++;
            for (uint32_t i = 0; i < s->n_meta; i++) s->meta_sorted[i] = i;
            ingot__index_sort(s->meta_sorted, s->meta_sorted + s->n_meta, s->n_meta, meta_cmp,
                              s->meta);
        }
    }
    if (st != INGOT_OK) {
        free_state(&f->alloc, s);
        return st;
    }
    f->state = s;
    f->alignment = 1;
    ingot__fmt(f->version, sizeof f->version, "1");
    return INGOT_OK;
}

static void close_tenzor(ingot_file *f)
{
    free_state(&f->alloc, f->state);
    f->state = NULL;
}

/* ---- tensors ---- */

static uint64_t tensor_count(const ingot_file *f) { return S(f)->n; }

static ingot_status tensor_at(const ingot_file *f, uint64_t i, ingot_tensor_info *out)
{
    const state *s = S(f);
    memset(out, 0, sizeof *out);
    if (i >= s->n) return INGOT_RANGE;
    const uint8_t *e = s->index + TZ_ENTRY * i;
    out->name = s->names[i];
    out->name_len = strlen(out->name);
    out->dtype = ingot__tz_dtype(e[8]);
    out->rank = e[9];
    for (uint32_t d = 0; d < out->rank; d++) out->shape[d] = ing_ld32(e + 12 + 4 * d);
    ingot_dtype_nbytes(out->dtype, out->rank, out->shape, &out->nelem, &out->nbytes);
    out->offset = s->data_off + ing_ld64(e + 32);
    uint32_t es = ingot_dtype_block_bytes(out->dtype);
    if (f->base) {
        out->data = f->base + out->offset;
        if ((uintptr_t)out->data % es) out->flags |= INGOT_TENSOR_UNALIGNED;
    } else {
        out->flags |= INGOT_TENSOR_NOT_MAPPED;
        if (out->offset % es) out->flags |= INGOT_TENSOR_UNALIGNED;
    }
    out->index = (uint32_t)i;
    return INGOT_OK;
}

/* By hash: the query's FNV-1a, or the value of a "#<hex>" query. With the names known the stored
 * name must also match; without them, hashing a candidate name is how a tensor is found. */
static ingot_status tensor_find(const ingot_file *f, const char *name, size_t len,
                                ingot_tensor_info *out)
{
    const state *s = S(f);
    memset(out, 0, sizeof *out);
    if (!name || len == 0) return INGOT_NOT_FOUND;
    uint64_t h;
    bool hex = ingot__tz_hexname(name, len, &h);
    if (!hex) h = ingot__tz_fnv1a(name, len);
    uint64_t lo = 0, hi = s->n;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (s->by_hash[mid].h < h) lo = mid + 1;
        else hi = mid;
    }
    if (lo == s->n || s->by_hash[lo].h != h) return INGOT_NOT_FOUND;
    uint64_t i = s->by_hash[lo].i;
    const char *nm = s->names[i];
    bool exact = strlen(nm) == len && memcmp(nm, name, len) == 0;
    if (!exact && (s->names_known || hex)) return INGOT_NOT_FOUND;
    return tensor_at(f, i, out);
}

/* ---- metadata ---- */

static uint64_t meta_count(const ingot_file *f) { return S(f)->n_meta; }

static ingot_status meta_at(const ingot_file *f, uint64_t i, ingot_meta_info *out)
{
    const state *s = S(f);
    memset(out, 0, sizeof *out);
    if (i >= s->n_meta) return INGOT_RANGE;
    const mentry *m = &s->meta[i];
    out->key = m->key;
    out->key_len = m->key_len;
    out->type = m->type;
    out->is_array = m->is_array;
    out->count = m->count;
    out->index = i;
    if (!m->is_array) {
        switch (m->type) {
        case INGOT_META_STRING: out->data = m->data; break;
        case INGOT_META_F64: memcpy(&out->v.f, &m->bits, 8); break;
        case INGOT_META_BOOL: out->v.b = m->bits != 0; break;
        case INGOT_META_I64: out->v.i = (int64_t)m->bits; break;
        default: out->v.u = m->bits; break;
        }
    }
    return INGOT_OK;
}

static ingot_status meta_find(const ingot_file *f, const char *key, size_t len,
                              ingot_meta_info *out)
{
    const state *s = S(f);
    uint32_t i;
    if (ingot__index_find(s->meta_sorted, s->n_meta, meta_key, s->meta, key, len, &i))
        return meta_at(f, i, out);
    memset(out, 0, sizeof *out);
    return INGOT_NOT_FOUND;
}

static ingot_status meta_array_read(const ingot_file *f, uint64_t index, ingot_meta_type type,
                                    uint64_t first, uint64_t n, void *dst)
{
    const state *s = S(f);
    if (index >= s->n_meta) return INGOT_RANGE;
    const mentry *m = &s->meta[index];
    if (!m->is_array || m->type != type || type == INGOT_META_STRING) return INGOT_WRONG_TYPE;
    if (first > m->count || n > m->count - first) return INGOT_RANGE;
    size_t esz = type == INGOT_META_BOOL ? 1 : 8;
    if (n) memcpy(dst, (const uint8_t *)m->data + first * esz, (size_t)n * esz);
    return INGOT_OK;
}

static ingot_status meta_array_string(const ingot_file *f, uint64_t index, uint64_t elem,
                                      const char **str, size_t *len)
{
    const state *s = S(f);
    if (index >= s->n_meta) return INGOT_RANGE;
    const mentry *m = &s->meta[index];
    if (!m->is_array || m->type != INGOT_META_STRING) return INGOT_WRONG_TYPE;
    if (elem >= m->count) return INGOT_RANGE;
    *str = m->strs[elem];
    *len = m->lens[elem];
    return INGOT_OK;
}

static const char *const tenzor_extensions[] = {"tenzor", NULL};

const ingot__format ingot__format_tenzor = {
    .name = "tenzor",
    .extensions = tenzor_extensions,
    .probe = probe,
    .open = open_tenzor,
    .close = close_tenzor,
    .tensor_count = tensor_count,
    .tensor_at = tensor_at,
    .tensor_find = tensor_find,
    .meta_count = meta_count,
    .meta_at = meta_at,
    .meta_find = meta_find,
    .meta_array_read = meta_array_read,
    .meta_array_string = meta_array_string,
    .writer = &ingot__writer_tenzor,
};
