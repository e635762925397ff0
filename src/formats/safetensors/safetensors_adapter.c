/*
 * safetensors_adapter.c - the safetensors reader (spec: ../shared/formats/safetensors.md).
 *
 *   offset 0      u64 LE  N = header length (<= 100,000,000)
 *   offset 8      N bytes UTF-8 JSON object: "__metadata__" (string -> string map or null) and
 *                         "<name>": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}
 *   offset 8 + N  data buffer: tensors at [begin, end), packed: no gaps, no overlaps, fully covered
 *
 * Every check of the reference reader (tensor.rs) is made, plus the stricter ones listed in
 * docs/formats/safetensors.md (duplicate names and keys, unknown entry fields, empty names). Tensor
 * views point into the mapping (zero-copy); a tensor whose address is not a multiple of its element
 * size is flagged INGOT_TENSOR_UNALIGNED. Names are copied once into a pool (they must be
 * NUL-terminated); metadata values without escapes stay in the mapping.
 *
 * Speed: tensor entries in the reference writer's compact form are matched byte for byte
 * (fast_entry); any other layout, and every error, goes through the general JSON scanner, so both
 * give the same tables and errors (tests/test_safetensors.c and fuzz_safetensors check that). Names
 * are sorted and checked unique in one natural merge sort (order.c).
 */
#include <string.h>

#include "alloc.h"
#include "checked.h"
#include "error.h"
#include "json.h"
#include "safetensors_format.h"
#include "st_internal.h"

typedef struct {
    const char *name; /* NUL-terminated, in the pool */
    uint32_t name_len;
    uint32_t hpos;    /* header position of the name (error offsets: 8 + hpos) */
    uint16_t dtype;
    uint8_t rank;
    uint32_t dims;    /* index of shape[0] in the dims pool */
    uint64_t begin, end;
} ent;

typedef struct {
    const char *key, *val;
    uint32_t key_len, hpos;
    size_t val_len;
} mentry;

typedef struct {
    ent *t;
    size_t n, cap;
    uint64_t *dims;
    size_t nd, capd;
    mentry *m;
    size_t nm, capm;
    uint32_t *by_name; /* n entries: tensor indices sorted by name */
    uint32_t *by_key;  /* nm entries */
    char *pool;
    size_t pool_len, pool_cap;
    uint64_t data_start;
} st_state;

#define ST(f) ((const st_state *)(f)->state)

static int probe(const uint8_t *head, size_t n)
{
    if (n < 9) return 0;
    uint64_t hn = ing_ld64(head);
    if (hn < 2 || hn > ST_MAX_HEADER) return 0;
    for (size_t i = 8; i < n && i < 8 + hn; i++) {
        uint8_t c = head[i];
        if (c == '{') return i == 8 ? 60 : 50;
        if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return 0;
    }
    return 10; /* only whitespace seen so far */
}

static void free_state(const ingot_allocator *a, st_state *s)
{
    if (!s) return;
    ingot__free(a, s->t, s->cap * sizeof *s->t);
    ingot__free(a, s->dims, s->capd * sizeof *s->dims);
    ingot__free(a, s->m, s->capm * sizeof *s->m);
    ingot__free(a, s->by_name, s->n * sizeof(uint32_t) * 2);
    ingot__free(a, s->by_key, s->nm * sizeof(uint32_t) * 2);
    ingot__free(a, s->pool, s->pool_cap);
    ingot__free(a, s, sizeof *s);
}

static bool grow(const ingot_allocator *a, void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return true;
    size_t nc = *cap ? *cap * 2 : 64;
    while (nc < need) nc *= 2;
    if (nc > SIZE_MAX / elem) return false;
    if (!ingot__grow(a, p, *cap * elem, nc * elem)) return false;
    *cap = nc;
    return true;
}

typedef struct {
    ingot_file *f;
    st_state *s;
    ingot__json j;
    ingot_error *err;
} parser;

#define HOFF(p, pos) (8 + (uint64_t)(pos))

static ingot_status nomem(parser *p, const char *what)
{
    return ingot__err(p->err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating %s", what);
}

/* Copies a string token into the pool, NUL-terminated. */
static ingot_status pool_put(parser *p, const ingot__json_tok *t, const char **out)
{
    st_state *s = p->s;
    if (t->dlen + 1 > s->pool_cap - s->pool_len)
        return ingot__err(p->err, INGOT_LIMIT, HOFF(p, t->pos), "header", 6, "name pool exhausted");
    char *d = s->pool + s->pool_len;
    if (!(t->flags & ING_JSON_ESCAPED))
        ING_MEMCPY(d, t->p, t->len); /* raw bytes are the string */
    else
        ING_TRY(ingot__json_str(t, d, t->dlen, NULL, p->err));
    d[t->dlen] = 0;
    s->pool_len += t->dlen + 1;
    *out = d;
    return INGOT_OK;
}

static ingot_status parse_metadata(parser *p, const ingot__json_tok *key)
{
    ingot__json_tok t, v;
    st_state *s = p->s;
    ING_TRY(ingot__json_next(&p->j, &t, p->err));
    if (t.type == ING_JSON_NULL) return INGOT_OK; /* accepted by the reference reader */
    if (t.type != ING_JSON_OBJECT)
        return ingot__err(p->err, INGOT_BAD_METADATA, HOFF(p, t.pos), "__metadata__", 12,
                          "__metadata__ must be an object of strings");
    (void)key;
    for (;;) {
        ING_TRY(ingot__json_next(&p->j, &t, p->err));
        if (t.type == ING_JSON_OBJECT_END) return INGOT_OK;
        ING_TRY(ingot__json_next(&p->j, &v, p->err));
        if (v.type != ING_JSON_STRING) {
            char kb[64];
            size_t kl = t.dlen < sizeof kb ? t.dlen : sizeof kb;
            if (t.dlen > sizeof kb || ingot__json_str(&t, kb, sizeof kb, &kl, NULL) != INGOT_OK)
                kl = 0;
            return ingot__err(p->err, INGOT_WRONG_TYPE, HOFF(p, v.pos), kb, kl,
                              "__metadata__ value is not a string");
        }
        if (t.dlen > ST_MAX_NAME || t.dlen == 0)
            return ingot__err(p->err, INGOT_BAD_NAME, HOFF(p, t.pos), "__metadata__", 12,
                              "metadata key of %zu bytes (1..65535 allowed)", t.dlen);
        if (!grow(&p->f->alloc, (void **)&s->m, &s->capm, s->nm + 1, sizeof *s->m))
            return nomem(p, "metadata");
        mentry *m = &s->m[s->nm];
        if (t.flags & ING_JSON_ESCAPED)
            ING_TRY(pool_put(p, &t, &m->key));
        else
            m->key = (const char *)t.p;
        if (v.flags & ING_JSON_ESCAPED)
            ING_TRY(pool_put(p, &v, &m->val));
        else
            m->val = (const char *)v.p;
        m->key_len = (uint32_t)t.dlen;
        m->val_len = v.dlen;
        m->hpos = (uint32_t)t.pos;
        s->nm++;
    }
}

enum { F_DTYPE = 1, F_SHAPE = 2, F_OFFSETS = 4 };

/* Key comparison with a constant length, so the compiler inlines it (hot: three per tensor). */
static inline bool key_is(const ingot__json_tok *t, const char *lit, size_t n)
{
    if (t->flags & ING_JSON_ESCAPED) return ingot__json_str_eq(t, lit, n);
    return t->len == n && ingot__st_eq(t->p, lit, n);
}

/* p[pos..pos+n) == lit (n a constant: inlined). */
static inline bool lit_at(const uint8_t *b, size_t pos, size_t len, const char *lit, size_t n)
{
    return len - pos >= n && ingot__st_eq(b + pos, lit, n);
}

/* Fast path: the compact entry value the reference writer (serde_json) emits,
 *   {"dtype":"F32","shape":[2,3],"data_offsets":[0,24]}
 * matched byte for byte: no whitespace, the three fields once each (in any order), a dtype ingot
 * knows, canonical integers of at most 19 digits, begin <= end. A string of known dtype letters
 * has no escapes, control or non-ASCII bytes, so what matches is valid JSON with the meaning the
 * general path would give it. Anything else (other layouts, and every error) returns false having
 * consumed nothing, and the general path parses the entry again from its start. */
static bool fast_entry(ingot__json *j, const st_dtype **dt, uint64_t *shape, uint32_t *rank,
                       uint64_t o[2])
{
    size_t pos = ingot__json_value_at(j), len = j->len;
    const uint8_t *b = j->buf;
    if (pos == SIZE_MAX || !lit_at(b, pos, len, "{\"", 2)) return false;
    pos += 1; /* at the first field's opening quote */
    unsigned seen = 0;
    const st_dtype *d = NULL;
    uint32_t r = 0;
    for (int field = 0; field < 3; field++) {
        if (lit_at(b, pos, len, "\"dtype\":\"", 9) && !(seen & F_DTYPE)) {
            pos += 9;
            size_t q = pos;
            while (q < len && q - pos < 12 && b[q] != '"') q++;
            if (q >= len || b[q] != '"') return false;
            d = ingot__st_dtype_by_name(b + pos, q - pos);
            if (!d || d->dt == INGOT_DTYPE_INVALID) return false;
            pos = q + 1;
            seen |= F_DTYPE;
        } else if (lit_at(b, pos, len, "\"shape\":[", 9) && !(seen & F_SHAPE)) {
            pos += 9;
            if (pos < len && b[pos] == ']') {
                pos++;
            } else {
                for (;;) {
                    if (r == INGOT_MAX_RANK) return false;
                    size_t e = ingot__json_uint_at(b, pos, len, &shape[r]);
                    if (e == 0 || e >= len) return false;
                    r++;
                    pos = e + 1;
                    if (b[e] == ']') break;
                    if (b[e] != ',') return false;
                }
            }
            seen |= F_SHAPE;
        } else if (lit_at(b, pos, len, "\"data_offsets\":[", 16) && !(seen & F_OFFSETS)) {
            size_t e = ingot__json_uint_at(b, pos + 16, len, &o[0]);
            if (e == 0 || e >= len || b[e] != ',') return false;
            e = ingot__json_uint_at(b, e + 1, len, &o[1]);
            if (e == 0 || e >= len || b[e] != ']' || o[1] < o[0]) return false;
            pos = e + 1;
            seen |= F_OFFSETS;
        } else {
            return false;
        }
        if (pos >= len || b[pos] != (field < 2 ? ',' : '}')) return false;
        pos++;
    }
    ingot__json_value_done(j, pos);
    *dt = d;
    *rank = r;
    return true;
}

/* General path: any valid JSON layout of the entry, every error with its offset. */
static ingot_status slow_entry(parser *p, const char *nm, size_t nl, const st_dtype **dt_out,
                               uint64_t *shape, uint32_t *rank_out, uint64_t o[2])
{
    ingot_error *err = p->err;
    ingot__json_tok t;
    ING_TRY(ingot__json_next(&p->j, &t, err));
    if (t.type != ING_JSON_OBJECT)
        return ingot__err(err, INGOT_BAD_METADATA, HOFF(p, t.pos), nm, nl,
                          "tensor entry is not an object");
    unsigned seen = 0;
    const st_dtype *dt = NULL;
    uint32_t rank = 0;
    for (;;) {
        ING_TRY(ingot__json_next(&p->j, &t, err));
        if (t.type == ING_JSON_OBJECT_END) break;
        unsigned field = key_is(&t, "dtype", 5)          ? F_DTYPE
                         : key_is(&t, "shape", 5)        ? F_SHAPE
                         : key_is(&t, "data_offsets", 12) ? F_OFFSETS
                                                          : 0;
        if (!field)
            return ingot__err(err, INGOT_BAD_METADATA, HOFF(p, t.pos), nm, nl,
                              "unknown field in the tensor entry (only dtype, shape, data_offsets)");
        if (seen & field)
            return ingot__err(err, INGOT_DUPLICATE, HOFF(p, t.pos), nm, nl,
                              "field given twice in the tensor entry");
        seen |= field;
        ingot__json_tok v;
        ING_TRY(ingot__json_next(&p->j, &v, err));
        if (field == F_DTYPE) {
            if (v.type != ING_JSON_STRING)
                return ingot__err(err, INGOT_WRONG_TYPE, HOFF(p, v.pos), nm, nl,
                                  "dtype is not a string");
            dt = (v.flags & ING_JSON_ESCAPED) ? NULL : ingot__st_dtype_by_name(v.p, v.len);
            if (!dt)
                return ingot__err(err, INGOT_BAD_TYPE, HOFF(p, v.pos), nm, nl,
                                  "unknown dtype \"%.*s\"", (int)(v.len > 32 ? 32 : v.len),
                                  (const char *)v.p);
            if (dt->dt == INGOT_DTYPE_INVALID)
                return ingot__err(err, INGOT_UNSUPPORTED, HOFF(p, v.pos), nm, nl,
                                  "dtype %s has no ingot equivalent", dt->name);
        } else if (field == F_SHAPE) {
            if (v.type != ING_JSON_ARRAY)
                return ingot__err(err, INGOT_BAD_SHAPE, HOFF(p, v.pos), nm, nl,
                                  "shape is not an array");
            for (;;) {
                ingot__json_tok d;
                ING_TRY(ingot__json_next(&p->j, &d, err));
                if (d.type == ING_JSON_ARRAY_END) break;
                if (rank >= INGOT_MAX_RANK)
                    return ingot__err(err, INGOT_BAD_NDIMS, HOFF(p, d.pos), nm, nl,
                                      "more than %d dimensions", INGOT_MAX_RANK);
                if (d.type != ING_JSON_NUMBER ||
                    ingot__json_u64(&p->j, &d, &shape[rank], NULL) != INGOT_OK)
                    return ingot__err(err, INGOT_BAD_SHAPE, HOFF(p, d.pos), nm, nl,
                                      "dimension %u is not a non-negative 64-bit integer", rank);
                rank++;
            }
        } else {
            if (v.type != ING_JSON_ARRAY)
                return ingot__err(err, INGOT_BAD_LAYOUT, HOFF(p, v.pos), nm, nl,
                                  "data_offsets is not an array");
            int k = 0;
            for (;;) {
                ingot__json_tok d;
                ING_TRY(ingot__json_next(&p->j, &d, err));
                if (d.type == ING_JSON_ARRAY_END) break;
                if (k >= 2 || d.type != ING_JSON_NUMBER ||
                    ingot__json_u64(&p->j, &d, &o[k], NULL) != INGOT_OK)
                    return ingot__err(err, INGOT_BAD_LAYOUT, HOFF(p, d.pos), nm, nl,
                                      "data_offsets must be two non-negative 64-bit integers");
                k++;
            }
            if (k != 2)
                return ingot__err(err, INGOT_BAD_LAYOUT, HOFF(p, v.pos), nm, nl,
                                  "data_offsets must be two non-negative 64-bit integers");
            if (o[1] < o[0])
                return ingot__err(err, INGOT_BAD_LAYOUT, HOFF(p, v.pos), nm, nl,
                                  "data_offsets end %llu before begin %llu",
                                  (unsigned long long)o[1], (unsigned long long)o[0]);
        }
    }
    if (seen != (F_DTYPE | F_SHAPE | F_OFFSETS))
        return ingot__err(err, INGOT_BAD_METADATA, HOFF(p, t.pos), nm, nl, "tensor entry lacks %s",
                          !(seen & F_DTYPE) ? "dtype" : !(seen & F_SHAPE) ? "shape" : "data_offsets");
    *dt_out = dt;
    *rank_out = rank;
    return INGOT_OK;
}

static ingot_status parse_tensor(parser *p, const ingot__json_tok *key)
{
    st_state *s = p->s;
    ingot_error *err = p->err;
    if (key->dlen == 0)
        return ingot__err(err, INGOT_BAD_NAME, HOFF(p, key->pos), "header", 6, "empty tensor name");
    if (key->dlen > ST_MAX_NAME)
        return ingot__err(err, INGOT_BAD_NAME, HOFF(p, key->pos), "header", 6,
                          "tensor name of %zu bytes (at most 65535)", key->dlen);
    if (key->flags & ING_JSON_HAS_NUL)
        return ingot__err(err, INGOT_BAD_NAME, HOFF(p, key->pos), "header", 6,
                          "tensor name contains a NUL character");
    if (!grow(&p->f->alloc, (void **)&s->t, &s->cap, s->n + 1, sizeof *s->t))
        return nomem(p, "the tensor table");
    ent *e = &s->t[s->n];
    ING_TRY(pool_put(p, key, &e->name));
    e->name_len = (uint32_t)key->dlen;
    e->hpos = (uint32_t)key->pos;
    const char *nm = e->name;
    size_t nl = e->name_len;

    const st_dtype *dt = NULL;
    uint64_t shape[INGOT_MAX_RANK], o[2];
    uint32_t rank = 0;
    if (!fast_entry(&p->j, &dt, shape, &rank, o))
        ING_TRY(slow_entry(p, nm, nl, &dt, shape, &rank, o));
    e->begin = o[0];
    e->end = o[1];
    uint64_t nelem, nbytes;
    ingot_status st = ingot_dtype_nbytes(dt->dt, rank, shape, &nelem, &nbytes);
    if (st != INGOT_OK)
        return ingot__err(err, st, HOFF(p, key->pos), nm, nl,
                          st == INGOT_BAD_SHAPE ? "element count overflows"
                                                : "byte size overflows or is not a whole number "
                                                  "of bytes");
    if (e->end - e->begin != nbytes)
        return ingot__err(err, INGOT_BAD_SIZE, HOFF(p, key->pos), nm, nl,
                          "data_offsets span %llu bytes, %s x shape needs %llu",
                          (unsigned long long)(e->end - e->begin), dt->name,
                          (unsigned long long)nbytes);
    if (!grow(&p->f->alloc, (void **)&s->dims, &s->capd, s->nd + rank, sizeof *s->dims))
        return nomem(p, "shapes");
    e->dims = (uint32_t)s->nd;
    for (uint32_t k = 0; k < rank; k++) s->dims[s->nd++] = shape[k];
    e->rank = (uint8_t)rank;
    e->dtype = (uint16_t)dt->dt;
    s->n++;
    return INGOT_OK;
}

static const void *name_of(const void *ctx, uint32_t i, size_t *len)
{
    const st_state *s = ctx;
    *len = s->t[i].name_len;
    return s->t[i].name;
}

static const void *key_of(const void *ctx, uint32_t i, size_t *len)
{
    const st_state *s = ctx;
    *len = s->m[i].key_len;
    return s->m[i].key;
}

static int cmp_name(const void *ctx, uint32_t a, uint32_t b)
{
    const st_state *s = ctx;
    return ingot__bytes_cmp(s->t[a].name, s->t[a].name_len, s->t[b].name, s->t[b].name_len);
}

static int cmp_key(const void *ctx, uint32_t a, uint32_t b)
{
    const st_state *s = ctx;
    return ingot__bytes_cmp(s->m[a].key, s->m[a].key_len, s->m[b].key, s->m[b].key_len);
}

static int cmp_off(const void *ctx, uint32_t a, uint32_t b)
{
    const st_state *s = ctx;
    const ent *x = &s->t[a], *y = &s->t[b];
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return 0;
}

/* Checks that the tensors tile [0, data_len) exactly (reference rules 3.5 and 3.6). */
static ingot_status check_layout(parser *p, uint32_t *order, uint32_t *tmp, uint64_t data_len)
{
    st_state *s = p->s;
    if (order) {
        for (uint32_t i = 0; i < s->n; i++) order[i] = i;
        ingot__index_sort(order, tmp, s->n, cmp_off, s);
    }
    uint64_t expected = 0;
    const ent *last = NULL;
    for (size_t k = 0; k < s->n; k++) {
        const ent *e = &s->t[order ? order[k] : k];
        last = e;
        if (e->begin != expected)
            return ingot__err(p->err, INGOT_BAD_LAYOUT, HOFF(p, e->hpos), e->name, e->name_len,
                              "data_offsets begin at %llu, expected %llu (%s)",
                              (unsigned long long)e->begin, (unsigned long long)expected,
                              e->begin > expected ? "gap" : "overlap");
        expected = e->end;
    }
    if (expected > data_len)
        return ingot__err(p->err, INGOT_TRUNCATED, s->data_start + data_len,
                          last ? last->name : "data", last ? last->name_len : 4,
                          "tensors need %llu data bytes, the file has %llu",
                          (unsigned long long)expected, (unsigned long long)data_len);
    if (expected < data_len)
        return ingot__err(p->err, INGOT_BAD_LAYOUT, s->data_start + expected, "data", 4,
                          "%llu bytes after the last tensor are not covered by any tensor",
                          (unsigned long long)(data_len - expected));
    return INGOT_OK;
}

static ingot_status parse(parser *p, const uint8_t *hdr, uint64_t hn)
{
    st_state *s = p->s;
    ingot__json_init(&p->j, hdr, (size_t)hn, 3, 8);
    ingot__json_tok t;
    ING_TRY(ingot__json_next(&p->j, &t, p->err));
    if (t.type != ING_JSON_OBJECT)
        return ingot__err(p->err, INGOT_BAD_METADATA, HOFF(p, t.pos), "header", 6,
                          "header is not a JSON object");
    bool have_meta = false;
    for (;;) {
        ING_TRY(ingot__json_next(&p->j, &t, p->err));
        if (t.type == ING_JSON_OBJECT_END) break;
        if (ingot__json_str_eq(&t, "__metadata__", 12)) {
            if (have_meta)
                return ingot__err(p->err, INGOT_DUPLICATE, HOFF(p, t.pos), "__metadata__", 12,
                                  "__metadata__ given twice");
            have_meta = true;
            ING_TRY(parse_metadata(p, &t));
        } else {
            ING_TRY(parse_tensor(p, &t));
        }
    }
    ING_TRY(ingot__json_next(&p->j, &t, p->err)); /* only whitespace may follow */
    if (s->n > UINT32_MAX - 1)
        return ingot__err(p->err, INGOT_LIMIT, 8, "header", 6, "too many tensors");

    /* Unique names and keys (stricter than the reference, which lets duplicates collapse). */
    size_t idx_bytes = s->n * sizeof(uint32_t) * 2;
    s->by_name = ingot__alloc(&p->f->alloc, idx_bytes ? idx_bytes : 8);
    if (!s->by_name) return nomem(p, "the name index");
    uint32_t *tmp = s->by_name + s->n;
    for (uint32_t i = 0; i < s->n; i++) s->by_name[i] = i;
    if (!ingot__index_sort_unique(s->by_name, tmp, s->n, cmp_name, s)) {
        /* A duplicate: sort stably from header order to name the same one every time. */
        for (uint32_t i = 0; i < s->n; i++) s->by_name[i] = i;
        ingot__index_sort(s->by_name, tmp, s->n, cmp_name, s);
        for (size_t k = 1; k < s->n; k++) {
            const ent *a = &s->t[s->by_name[k - 1]], *b = &s->t[s->by_name[k]];
            if (cmp_name(s, s->by_name[k - 1], s->by_name[k]) == 0) {
                const ent *later = a->hpos > b->hpos ? a : b;
                return ingot__err(p->err, INGOT_DUPLICATE, HOFF(p, later->hpos), later->name,
                                  later->name_len, "tensor name given twice");
            }
        }
    }
    if (s->nm) {
        s->by_key = ingot__alloc(&p->f->alloc, s->nm * sizeof(uint32_t) * 2);
        if (!s->by_key) return nomem(p, "the key index");
        for (uint32_t i = 0; i < s->nm; i++) s->by_key[i] = i;
        ingot__index_sort(s->by_key, s->by_key + s->nm, s->nm, cmp_key, s);
        for (size_t k = 1; k < s->nm; k++)
            if (cmp_key(s, s->by_key[k - 1], s->by_key[k]) == 0) {
                const mentry *m = &s->m[s->by_key[k]];
                return ingot__err(p->err, INGOT_DUPLICATE, HOFF(p, m->hpos), m->key,
                                  m->key_len, "metadata key given twice");
            }
    }
    /* Layout. Writers store tensors in offset order: then the check walks the table as it is,
     * otherwise through an offset-sorted index (not kept). */
    bool sorted = true;
    for (size_t i = 1; i < s->n && sorted; i++)
        sorted = cmp_off(s, (uint32_t)(i - 1), (uint32_t)i) <= 0;
    uint32_t *order = NULL;
    size_t order_bytes = s->n * sizeof(uint32_t) * 2;
    if (!sorted) {
        order = ingot__alloc(&p->f->alloc, order_bytes);
        if (!order) return nomem(p, "the layout check");
    }
    ingot_status st = check_layout(p, order, order ? order + s->n : NULL, p->f->size - s->data_start);
    ingot__free(&p->f->alloc, order, order_bytes);
    return st;
}

static ingot_status open_st(ingot_file *f, ingot_error *err)
{
    const uint8_t *head;
    if (f->size < 8)
        return ingot__err(err, INGOT_TRUNCATED, f->size, "header", 6,
                          "file of %llu bytes is shorter than the 8-byte header length",
                          (unsigned long long)f->size);
    /* A pread copy while the mapping is fresh (file.h: no page fault on it; the probe's read
     * already holds small headers); data pointers come from f->base. */
    ING_TRY(ingot__file_head_copy(f, 8, &head, err));
    uint64_t hn = ing_ld64(head);
    if (hn > ST_MAX_HEADER)
        return ingot__err(err, INGOT_BAD_HEADER_SIZE, 0, "header", 6,
                          "header length %llu exceeds the 100,000,000-byte cap",
                          (unsigned long long)hn);
    if (hn < 2)
        return ingot__err(err, INGOT_BAD_HEADER_SIZE, 0, "header", 6,
                          "header length %llu cannot hold a JSON object", (unsigned long long)hn);
    if (8 + hn > f->size)
        return ingot__err(err, INGOT_TRUNCATED, f->size, "header", 6,
                          "header of %llu bytes runs past the end of the %llu-byte file",
                          (unsigned long long)hn, (unsigned long long)f->size);
    ING_TRY(ingot__file_head_copy(f, 8 + hn, &head, err));

    st_state *s = ingot__calloc(&f->alloc, sizeof *s);
    if (!s) return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating the state");
    s->data_start = 8 + hn;
    /* Decoded strings are never longer than their raw form plus quotes, so N bytes suffice. */
    s->pool_cap = (size_t)hn;
    s->pool = ingot__alloc(&f->alloc, s->pool_cap);
    /* Pre-size the tensor table from the header length (about 80 bytes per entry). */
    size_t guess = (size_t)(hn / 96) + 8;
    if (guess > 1u << 16) guess = 1u << 16;
    s->t = ingot__alloc(&f->alloc, guess * sizeof *s->t);
    s->dims = ingot__alloc(&f->alloc, guess * 2 * sizeof *s->dims);
    if (!s->pool || !s->t || !s->dims) {
        if (s->t) s->cap = guess;
        if (s->dims) s->capd = guess * 2;
        free_state(&f->alloc, s);
        return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating the state");
    }
    s->cap = guess;
    s->capd = guess * 2;
    parser p = {.f = f, .s = s, .err = err};
    ingot_status st = parse(&p, head + 8, hn);
    if (st != INGOT_OK) {
        free_state(&f->alloc, s);
        return st;
    }
    f->state = s;
    f->alignment = 1;
    ingot__fmt(f->version, sizeof f->version, "-");
    return INGOT_OK;
}

static void close_st(ingot_file *f)
{
    free_state(&f->alloc, f->state);
    f->state = NULL;
}

static uint64_t tensor_count(const ingot_file *f) { return ST(f)->n; }

static ingot_status tensor_at(const ingot_file *f, uint64_t i, ingot_tensor_info *out)
{
    const st_state *s = ST(f);
    if (i >= s->n) {
        memset(out, 0, sizeof *out);
        return INGOT_RANGE;
    }
    const ent *e = &s->t[i];
    memset(out, 0, sizeof *out);
    out->name = e->name;
    out->name_len = e->name_len;
    out->dtype = (ingot_dtype)e->dtype;
    out->rank = e->rank;
    uint64_t nelem = 1;
    for (uint32_t k = 0; k < e->rank; k++) {
        out->shape[k] = s->dims[e->dims + k];
        nelem *= out->shape[k]; /* checked at open */
    }
    out->nelem = nelem;
    out->nbytes = e->end - e->begin;
    out->offset = s->data_start + e->begin;
    out->index = (uint32_t)i;
    uint32_t align = ingot_dtype_block_elems(out->dtype) == 1 ? ingot_dtype_block_bytes(out->dtype) : 1;
    if (f->base) {
        out->data = f->base + out->offset;
        if (((uintptr_t)out->data & (align - 1)) != 0) out->flags |= INGOT_TENSOR_UNALIGNED;
    } else {
        out->flags |= INGOT_TENSOR_NOT_MAPPED;
        if ((out->offset & (align - 1)) != 0) out->flags |= INGOT_TENSOR_UNALIGNED;
    }
    return INGOT_OK;
}

static ingot_status tensor_find(const ingot_file *f, const char *name, size_t len,
                                ingot_tensor_info *out)
{
    const st_state *s = ST(f);
    uint32_t i;
    if (ingot__index_find(s->by_name, s->n, name_of, s, name, len, &i)) return tensor_at(f, i, out);
    memset(out, 0, sizeof *out);
    return INGOT_NOT_FOUND;
}

static uint64_t meta_count(const ingot_file *f) { return ST(f)->nm; }

static ingot_status meta_at(const ingot_file *f, uint64_t i, ingot_meta_info *out)
{
    const st_state *s = ST(f);
    memset(out, 0, sizeof *out);
    if (i >= s->nm) return INGOT_RANGE;
    const mentry *m = &s->m[i];
    out->key = m->key;
    out->key_len = m->key_len;
    out->type = INGOT_META_STRING;
    out->count = m->val_len;
    out->index = i;
    out->data = m->val;
    return INGOT_OK;
}

static ingot_status meta_find(const ingot_file *f, const char *key, size_t len,
                              ingot_meta_info *out)
{
    const st_state *s = ST(f);
    uint32_t i;
    if (ingot__index_find(s->by_key, s->nm, key_of, s, key, len, &i)) return meta_at(f, i, out);
    memset(out, 0, sizeof *out);
    return INGOT_NOT_FOUND;
}

static ingot_status meta_array_read(const ingot_file *f, uint64_t index, ingot_meta_type type,
                                    uint64_t first, uint64_t n, void *dst)
{
    (void)type, (void)first, (void)n, (void)dst;
    return index < ST(f)->nm ? INGOT_WRONG_TYPE : INGOT_RANGE; /* every value is a string */
}

static ingot_status meta_array_string(const ingot_file *f, uint64_t index, uint64_t elem,
                                      const char **str, size_t *len)
{
    (void)elem, (void)str, (void)len;
    return index < ST(f)->nm ? INGOT_WRONG_TYPE : INGOT_RANGE;
}

static const char *const st_extensions[] = {"safetensors", NULL};

const ingot__format ingot__format_safetensors = {
    .name = "safetensors",
    .extensions = st_extensions,
    .probe = probe,
    .open = open_st,
    .close = close_st,
    .tensor_count = tensor_count,
    .tensor_at = tensor_at,
    .tensor_find = tensor_find,
    .meta_count = meta_count,
    .meta_at = meta_at,
    .meta_find = meta_find,
    .meta_array_read = meta_array_read,
    .meta_array_string = meta_array_string,
    .writer = &ingot__writer_safetensors,
};
