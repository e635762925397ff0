/*
 * burnpack_adapter.c - reads Burn's Burnpack (.bpk) files of burn-store 0.19, 0.20 and 0.21 and
 * tells them apart (../shared/formats/burnpack.md §1, §7.3); the writer is burnpack_write.c.
 *
 *   [0,10)        "NRUB", u16 LE version (0 or 1), u32 LE metadata_size
 *   [10,U)        one CBOR map {"tensors": {name: {dtype, shape, data_offsets, param_id?}},
 *                 "metadata"?: {text: text}}, U = 10 + metadata_size
 *   [U,A)         zeros, A = ceil(U, 256)                         (0.20, 0.21)
 *   [S, EOF)      tensor data, offsets relative to S; S = A (0.20+, each tensor 256-aligned)
 *                 or S = U (0.19, packed); EOF = S + max(end)
 *
 * The version is decided by the file length (S + max end, nothing after), the exact offsets the
 * writer of that version assigns, and the dtype spellings ("Bool" text: 0.19/0.20, {"Bool": ..}:
 * 0.21, QFloat store "U32": 0.19, Packed*: 0.20+). Contradicting evidence is an error.
 */
#include <string.h>

#include "alloc.h"
#include "burnpack_format.h"
#include "burnpack_internal.h"
#include "checked.h"
#include "error.h"
#include "utf8.h"
#include "writer_impl.h"

typedef struct {
    uint32_t name_off, name_len; /* in the pool, NUL-terminated */
    bp_kind kind;
    ingot_dtype dtype;
    uint32_t esize; /* 0: QFloat (opaque bytes) */
    unsigned versions;
    uint32_t brank;   /* Burn's shape: brank u64 (unaligned) in the pool at shape_off, so a tensor
                         costs 8 bytes per dimension it has, not INGOT_MAX_RANK x 8 */
    size_t shape_off;
    uint64_t start, end; /* relative to the data start */
    uint64_t param_id;
    bool has_pid;
    uint64_t desc_at;             /* file offset of the descriptor (errors) */
    size_t json_off, json_len;    /* QFloat: JSON of the dtype, in the pool */
} bp_tensor;

enum { M_USER, M_LAYOUT, M_DTYPE, M_SHAPE };

typedef struct {
    uint32_t kind, tensor;
    size_t key_off, key_len, val_off, val_len; /* user: in the header; else in the pool */
    const char *key, *val;                     /* resolved at the end of open */
} bp_meta;

typedef struct {
    bp_tensor *t;
    size_t nt, cap_t;
    uint32_t *by_name;
    bp_meta *m;
    size_t nm, cap_m;
    uint32_t *m_by_key;
    bp_buf pool;
    const uint8_t *hdr;
    uint64_t data_start;
    unsigned versions;
} bp_state;

#define ST(f) ((const bp_state *)(f)->state)

/* Copies tensor t's brank dimensions out of the pool. */
static void bp_shape(const bp_state *s, const bp_tensor *t, uint64_t *out)
{
    if (t->brank) memcpy(out, s->pool.p + t->shape_off, 8 * (size_t)t->brank);
}

static int probe(const uint8_t *head, size_t n)
{
    if (n < 4 || memcmp(head, "NRUB", 4) != 0) return 0;
    if (n >= 6 && ing_ld16(head + 4) > 1) return 40;
    return 90;
}

static void free_state(const ingot_allocator *a, bp_state *s)
{
    if (!s) return;
    ingot__free(a, s->t, s->cap_t * sizeof *s->t);
    ingot__free(a, s->m, s->cap_m * sizeof *s->m);
    ingot__free(a, s->by_name, s->nt * sizeof(uint32_t));
    ingot__free(a, s->m_by_key, s->nm * sizeof(uint32_t));
    ingot__bp_buf_free(&s->pool);
    ingot__free(a, s, sizeof *s);
}

static void close_bpk(ingot_file *f)
{
    free_state(&f->alloc, f->state);
    f->state = NULL;
}

static ingot_status nomem(ingot_error *err, const char *what)
{
    return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating %s", what);
}

static bool grow(const ingot_allocator *a, void **p, size_t *cap, size_t n, size_t esz)
{
    if (n < *cap) return true;
    size_t nc = *cap ? *cap * 2 : 16;
    if (nc > SIZE_MAX / esz) return false;
    if (!ingot__grow(a, p, *cap * esz, nc * esz)) return false;
    *cap = nc;
    return true;
}

/* ---------------------------------------------------------------------------------------------
 * CBOR metadata
 * ------------------------------------------------------------------------------------------- */

typedef struct {
    ingot_file *f;
    bp_state *s;
    bp_cur c;
} parse_ctx;

static ingot_status parse_descriptor(parse_ctx *p, bp_tensor *t, ingot_error *err)
{
    bp_cur *c = &p->c;
    const char *who = (const char *)p->s->pool.p + t->name_off; /* pool stable during this call */
    size_t wl = t->name_len;
    bp_iter it;
    bool more, seen_dtype = false, seen_shape = false, seen_off = false, seen_pid = false;
    t->desc_at = c->base + c->at;
    ING_TRY(ingot__bp_value(c, err));
    if (c->kind != EV_MAP && c->kind != EV_MAP_INDEF)
        return ingot__err(err, INGOT_WRONG_TYPE, c->base + c->at, who, wl,
                          "tensor descriptor is not a map");
    ING_TRY(ingot__bp_iter_begin(c, &it, true, who, err));
    for (;;) {
        ING_TRY(ingot__bp_iter_next(c, &it, &more, err));
        if (!more) break;
        uint64_t key_at = c->base + c->at;
        bool *seen = NULL;
        int field = -1;
        if (bp_is(c, "dtype")) seen = &seen_dtype, field = 0;
        else if (bp_is(c, "shape")) seen = &seen_shape, field = 1;
        else if (bp_is(c, "data_offsets")) seen = &seen_off, field = 2;
        else if (bp_is(c, "param_id")) seen = &seen_pid, field = 3;
        if (seen && *seen)
            return ingot__err(err, INGOT_DUPLICATE, key_at, who, wl,
                              "descriptor field \"%.*s\" appears twice", (int)c->n,
                              (const char *)c->s);
        if (seen) *seen = true;
        if (field == 0) {
            bp_dtype d;
            bp_buf json = {.a = &p->f->alloc};
            ING_TRY(ingot__bp_value(c, err));
            ingot_status st = ingot__bp_parse_dtype(c, who, wl, &d, &json, err);
            if (st == INGOT_OK && d.kind == BP_QFLOAT) {
                t->json_off = p->s->pool.len;
                t->json_len = json.len;
                if (!ingot__bp_buf_put(&p->s->pool, json.p, json.len)) st = nomem(err, "the pool");
                who = (const char *)p->s->pool.p + t->name_off; /* the pool may have moved */
            }
            ingot__bp_buf_free(&json);
            ING_TRY(st);
            t->kind = d.kind, t->dtype = d.dtype, t->esize = d.esize, t->versions = d.versions;
        } else if (field == 1) {
            bp_iter a;
            ING_TRY(ingot__bp_value(c, err));
            ING_TRY(ingot__bp_iter_begin(c, &a, false, who, err));
            if (!a.indef && c->u > INGOT_MAX_RANK)
                return ingot__err(err, INGOT_BAD_NDIMS, c->base + c->at, who, wl,
                                  "rank %llu exceeds %d", (unsigned long long)c->u,
                                  INGOT_MAX_RANK);
            t->brank = 0;
            t->shape_off = p->s->pool.len;
            for (;;) {
                ING_TRY(ingot__bp_iter_next(c, &a, &more, err));
                if (!more) break;
                if (t->brank == INGOT_MAX_RANK)
                    return ingot__err(err, INGOT_BAD_NDIMS, c->base + c->at, who, wl,
                                      "rank exceeds %d", INGOT_MAX_RANK);
                if (c->kind != EV_UINT)
                    return ingot__err(err, INGOT_WRONG_TYPE, c->base + c->at, who, wl,
                                      "shape dimension is not an unsigned integer");
                uint64_t dim = c->u;
                if (!ingot__bp_buf_put(&p->s->pool, &dim, sizeof dim))
                    return nomem(err, "the pool");
                t->brank++;
            }
        } else if (field == 2) {
            bp_iter a;
            ING_TRY(ingot__bp_value(c, err));
            uint64_t arr_at = c->base + c->at;
            ING_TRY(ingot__bp_iter_begin(c, &a, false, who, err));
            uint64_t v[2];
            unsigned k = 0;
            for (;;) {
                ING_TRY(ingot__bp_iter_next(c, &a, &more, err));
                if (!more) break;
                if (k == 2) break;
                if (c->kind != EV_UINT)
                    return ingot__err(err, INGOT_WRONG_TYPE, c->base + c->at, who, wl,
                                      "data offset is not an unsigned integer");
                v[k++] = c->u;
            }
            if (k != 2 || more)
                return ingot__err(err, INGOT_BAD_ARRAY, arr_at, who, wl,
                                  "data_offsets does not hold exactly 2 entries");
            t->start = v[0], t->end = v[1];
        } else if (field == 3) {
            ING_TRY(ingot__bp_value(c, err));
            if (c->kind == EV_NULL) { /* serde reads null as absent */
                t->has_pid = false;
            } else if (c->kind == EV_UINT) {
                t->has_pid = true;
                t->param_id = c->u;
            } else {
                return ingot__err(err, INGOT_WRONG_TYPE, c->base + c->at, who, wl,
                                  "param_id is not an unsigned integer");
            }
        } else { /* unknown fields are ignored, as serde does */
            ING_TRY(ingot__bp_skip(c, 4, err));
            ING_TRY(ingot__bp_value(c, err));
            ING_TRY(ingot__bp_skip(c, 4, err));
        }
    }
    if (!seen_dtype || !seen_shape || !seen_off)
        return ingot__err(err, INGOT_BAD_METADATA, t->desc_at, who, wl,
                          "descriptor lacks \"%s\"",
                          !seen_dtype ? "dtype" : !seen_shape ? "shape" : "data_offsets");
    return INGOT_OK;
}

static ingot_status read_name(parse_ctx *p, const char *what, ingot_error *err)
{
    bp_cur *c = &p->c;
    if (c->kind == EV_TEXT_START)
        return ingot__err(err, INGOT_UNSUPPORTED, c->base + c->at, what, ing_strlen(what),
                          "chunked (indefinite-length) text key");
    if (c->kind != EV_TEXT)
        return ingot__err(err, INGOT_WRONG_TYPE, c->base + c->at, what, ing_strlen(what),
                          "map key is not text");
    if (c->n == 0 || c->n > 65535)
        return ingot__err(err, INGOT_BAD_NAME, c->base + c->at, what, ing_strlen(what),
                          "%s of %zu bytes (allowed 1..65535)", what, c->n);
    if (!ingot__utf8_valid(c->s, c->n, false))
        return ingot__err(err, INGOT_BAD_STRING, c->base + c->at, (const char *)c->s,
                          c->n > 64 ? 64 : c->n, "%s is not UTF-8 without NUL", what);
    return INGOT_OK;
}

static ingot_status parse_tensors(parse_ctx *p, ingot_error *err)
{
    bp_cur *c = &p->c;
    bp_state *s = p->s;
    bp_iter it;
    bool more;
    ING_TRY(ingot__bp_value(c, err));
    if (c->kind != EV_MAP && c->kind != EV_MAP_INDEF)
        return ingot__err(err, INGOT_WRONG_TYPE, c->base + c->at, "tensors", 7,
                          "\"tensors\" is not a map");
    ING_TRY(ingot__bp_iter_begin(c, &it, true, "tensors", err));
    if (!it.indef && c->u > BP_MAX_TENSORS)
        return ingot__err(err, INGOT_LIMIT, c->base + c->at, "tensors", 7,
                          "%llu tensors (Burn allows %u)", (unsigned long long)c->u,
                          BP_MAX_TENSORS);
    for (;;) {
        ING_TRY(ingot__bp_iter_next(c, &it, &more, err));
        if (!more) break;
        if (s->nt == BP_MAX_TENSORS)
            return ingot__err(err, INGOT_LIMIT, c->base + c->at, "tensors", 7,
                              "more than %u tensors", BP_MAX_TENSORS);
        ING_TRY(read_name(p, "tensor name", err));
        void *tp = s->t;
        if (!grow(&p->f->alloc, &tp, &s->cap_t, s->nt, sizeof *s->t)) return nomem(err, "tensors");
        s->t = tp;
        bp_tensor *t = &s->t[s->nt];
        memset(t, 0, sizeof *t);
        t->name_off = (uint32_t)s->pool.len;
        t->name_len = (uint32_t)c->n;
        if (s->pool.len > UINT32_MAX - 65536 || !ingot__bp_buf_put(&s->pool, c->s, c->n) ||
            !ingot__bp_buf_put(&s->pool, "", 1))
            return nomem(err, "tensor names");
        s->nt++;
        ING_TRY(parse_descriptor(p, t, err));
    }
    return INGOT_OK;
}

static ingot_status parse_user(parse_ctx *p, ingot_error *err)
{
    bp_cur *c = &p->c;
    bp_state *s = p->s;
    bp_iter it;
    bool more;
    ING_TRY(ingot__bp_value(c, err));
    if (c->kind != EV_MAP && c->kind != EV_MAP_INDEF)
        return ingot__err(err, INGOT_WRONG_TYPE, c->base + c->at, "metadata", 8,
                          "\"metadata\" is not a map");
    ING_TRY(ingot__bp_iter_begin(c, &it, true, "metadata", err));
    for (;;) {
        ING_TRY(ingot__bp_iter_next(c, &it, &more, err));
        if (!more) break;
        ING_TRY(read_name(p, "metadata key", err));
        const char *key = (const char *)c->s;
        size_t kl = c->n;
        if (kl >= sizeof BP_PREFIX - 1 && memcmp(key, BP_PREFIX, sizeof BP_PREFIX - 1) == 0)
            return ingot__err(err, INGOT_UNSUPPORTED, c->base + c->at, key, kl,
                              "user metadata key in ingot's reserved namespace " BP_PREFIX);
        void *mp = s->m;
        if (!grow(&p->f->alloc, &mp, &s->cap_m, s->nm, sizeof *s->m)) return nomem(err, "metadata");
        s->m = mp;
        bp_meta *m = &s->m[s->nm++];
        memset(m, 0, sizeof *m);
        m->kind = M_USER;
        m->key_off = (size_t)(c->s - s->hdr);
        m->key_len = kl;
        ING_TRY(ingot__bp_value(c, err));
        if (c->kind != EV_TEXT)
            return ingot__err(err, c->kind == EV_TEXT_START ? INGOT_UNSUPPORTED : INGOT_WRONG_TYPE,
                              c->base + c->at, key, kl,
                              "metadata value is not (definite-length) text");
        if (!ingot__utf8_valid(c->s, c->n, true))
            return ingot__err(err, INGOT_BAD_STRING, c->base + c->at, key, kl,
                              "metadata value is not UTF-8");
        m->val_off = (size_t)(c->s - s->hdr);
        m->val_len = c->n;
    }
    return INGOT_OK;
}

static ingot_status parse_top(parse_ctx *p, ingot_error *err)
{
    bp_cur *c = &p->c;
    bp_iter it;
    bool more, seen_t = false, seen_m = false;
    ING_TRY(ingot__bp_value(c, err));
    if (c->kind != EV_MAP && c->kind != EV_MAP_INDEF)
        return ingot__err(err, INGOT_WRONG_TYPE, c->base + c->at, "metadata", 8,
                          "the CBOR metadata is not a map");
    ING_TRY(ingot__bp_iter_begin(c, &it, true, "metadata", err));
    for (;;) {
        ING_TRY(ingot__bp_iter_next(c, &it, &more, err));
        if (!more) break;
        uint64_t at = c->base + c->at;
        if (bp_is(c, "tensors") || bp_is(c, "metadata")) {
            bool *seen = bp_is(c, "tensors") ? &seen_t : &seen_m;
            if (*seen)
                return ingot__err(err, INGOT_DUPLICATE, at, (const char *)c->s, c->n,
                                  "top-level key appears twice");
            *seen = true;
            ING_TRY(seen == &seen_t ? parse_tensors(p, err) : parse_user(p, err));
        } else if (bp_is(c, "scalars")) {
            return ingot__err(err, INGOT_UNSUPPORTED, at, "scalars", 7,
                              "Burn 0.22 \"scalars\" are not supported");
        } else { /* unknown top-level keys are ignored, as Burn does */
            ING_TRY(ingot__bp_skip(c, 2, err));
            ING_TRY(ingot__bp_value(c, err));
            ING_TRY(ingot__bp_skip(c, 2, err));
        }
    }
    if (!seen_t)
        return ingot__err(err, INGOT_BAD_METADATA, c->base, "metadata", 8,
                          "no \"tensors\" key in the metadata");
    if (c->pos != c->len)
        return ingot__err(err, INGOT_BAD_HEADER_SIZE, c->base + c->pos, "metadata", 8,
                          "%zu bytes after the CBOR item inside metadata_size", c->len - c->pos);
    return INGOT_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Layout and version
 * ------------------------------------------------------------------------------------------- */

static int cmp_data(const void *ctx, uint32_t a, uint32_t b)
{
    const bp_state *s = ctx;
    const bp_tensor *x = &s->t[a], *y = &s->t[b];
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return ingot__bytes_cmp(s->pool.p + x->name_off, x->name_len, s->pool.p + y->name_off, y->name_len);
}

static const void *name_of(const void *ctx, uint32_t i, size_t *len)
{
    const bp_state *s = ctx;
    *len = s->t[i].name_len;
    return s->pool.p + s->t[i].name_off;
}

static const void *key_of(const void *ctx, uint32_t i, size_t *len)
{
    const bp_state *s = ctx;
    *len = s->m[i].key_len;
    return s->m[i].key;
}

static int cmp_name(const void *ctx, uint32_t a, uint32_t b)
{
    const bp_state *s = ctx;
    const bp_tensor *x = &s->t[a], *y = &s->t[b];
    return ingot__bytes_cmp(s->pool.p + x->name_off, x->name_len, s->pool.p + y->name_off, y->name_len);
}

static int cmp_key(const void *ctx, uint32_t a, uint32_t b)
{
    const bp_state *s = ctx;
    return ingot__bytes_cmp(s->m[a].key, s->m[a].key_len, s->m[b].key, s->m[b].key_len);
}

#define TNAME(s, t) ((const char *)(s)->pool.p + (t)->name_off), (t)->name_len

/* Per tensor: size against dtype and shape. */
static ingot_status check_sizes(bp_state *s, ingot_error *err)
{
    for (size_t i = 0; i < s->nt; i++) {
        bp_tensor *t = &s->t[i];
        if (t->end < t->start)
            return ingot__err(err, INGOT_BAD_LAYOUT, t->desc_at, TNAME(s, t),
                              "data_offsets end %llu before start %llu",
                              (unsigned long long)t->end, (unsigned long long)t->start);
        uint64_t nelem, nbytes, shape[INGOT_MAX_RANK];
        bp_shape(s, t, shape);
        ingot_status st = ingot_dtype_nbytes(t->esize ? t->dtype : INGOT_DTYPE_U8, t->brank,
                                             shape, &nelem, &nbytes);
        if (st != INGOT_OK)
            return ingot__err(err, st, t->desc_at, TNAME(s, t), "shape: %s",
                              ingot_status_str(st));
        if (t->esize && nbytes != t->end - t->start)
            return ingot__err(err, INGOT_BAD_SIZE, t->desc_at, TNAME(s, t),
                              "holds %llu bytes, dtype and shape need %llu",
                              (unsigned long long)(t->end - t->start),
                              (unsigned long long)nbytes);
    }
    return INGOT_OK;
}

/* Tensors (sorted by data position) sit exactly where a writer with this alignment puts them.
 * Returns OK or the first gap/overlap. */
static ingot_status check_packing(const bp_state *s, uint64_t align, ingot_error *err)
{
    uint64_t cur = 0;
    for (size_t i = 0; i < s->nt; i++) {
        const bp_tensor *t = &s->t[i];
        uint64_t want;
        if (!ing_round_up(cur, align, &want))
            return ingot__err(err, INGOT_BAD_LAYOUT, t->desc_at, TNAME(s, t), "offset overflows");
        if (t->start != want)
            return ingot__err(err, INGOT_BAD_LAYOUT, t->desc_at, TNAME(s, t),
                              "data starts at %llu, the %s layout puts it at %llu (%s)",
                              (unsigned long long)t->start, align == 1 ? "0.19" : "0.20+",
                              (unsigned long long)want,
                              t->start < want ? "overlap" : "gap");
        cur = t->end;
    }
    return INGOT_OK;
}

static const char *vname(unsigned v)
{
    static const char *const names[8] = {"?", "0.19", "0.20", "0.19-0.20", "0.21", "0.19/0.21",
                                         "0.20-0.21", "0.19-0.21"};
    return names[v & 7];
}

static ingot_status decide_layout(ingot_file *f, bp_state *s, uint64_t msz, ingot_error *err)
{
    uint64_t u = BP_HEADER_SIZE + msz, a, e = 0;
    ing_round_up(u, BP_ALIGN, &a); /* msz <= 100 MiB: no overflow */
    for (size_t i = 0; i < s->nt; i++)
        if (s->t[i].end > e) e = s->t[i].end;
    uint64_t need_a, need_u;
    if (!ing_add(a, e, &need_a) || !ing_add(u, e, &need_u))
        return ingot__err(err, INGOT_BAD_LAYOUT, INGOT_NO_OFFSET, "data", 4,
                          "data end %llu overflows", (unsigned long long)e);
    bool al = f->size == need_a, le = f->size == need_u;
    if (!al && !le) {
        if (f->size > need_a)
            return ingot__err(err, INGOT_BAD_LAYOUT, need_a, "data", 4,
                              "%llu bytes after the last tensor",
                              (unsigned long long)(f->size - need_a));
        return ingot__err(err, INGOT_TRUNCATED, f->size, "data", 4,
                          "file has %llu bytes; its tensors end at %llu (0.20+ layout) or %llu "
                          "(0.19 layout)",
                          (unsigned long long)f->size, (unsigned long long)need_a,
                          (unsigned long long)need_u);
    }
    unsigned v = 0;
    ingot_error e_al, e_le;
    if (al && check_packing(s, BP_ALIGN, &e_al) == INGOT_OK) v |= BP_V20 | BP_V21;
    if (le && check_packing(s, 1, &e_le) == INGOT_OK) v |= BP_V19;
    if (!v) {
        if (!al && f->size < need_a) /* read as 0.20+ it is cut short: say so */
            return ingot__err(err, INGOT_TRUNCATED, f->size, "data", 4,
                              "file has %llu bytes; its tensors end at %llu (0.20+ layout); "
                              "the 0.19 reading fails: %s",
                              (unsigned long long)f->size, (unsigned long long)need_a, e_le.msg);
        if (err) *err = al ? e_al : e_le;
        return al ? e_al.code : e_le.code;
    }
    /* A 0.19 file with exactly A-U trailing bytes would also pass the length test as 0.20+:
     * 0.20+ writers leave zeros in [U, A), the 0.19 data there is the first tensor's. */
    if ((v & BP_V20) && a > u) {
        for (uint64_t k = u; k < a; k++)
            if (s->hdr[k])
                return ingot__err(err, INGOT_BAD_LAYOUT, k, "data", 4,
                                  "padding between the metadata and the data is not zero "
                                  "(a 0.19 file with trailing bytes?)");
    }
    for (size_t i = 0; i < s->nt; i++) {
        const bp_tensor *t = &s->t[i];
        if ((v & t->versions) == 0)
            return ingot__err(err, INGOT_BAD_VERSION, t->desc_at, TNAME(s, t),
                              "its dtype is spelled as Burn %s writes it, but the layout or "
                              "other tensors say Burn %s",
                              vname(t->versions), vname(v));
        v &= t->versions;
    }
    s->versions = v;
    s->data_start = (v & BP_V19) ? u : a; /* equal when both readings are possible */
    f->alignment = (v & BP_V19) ? 1 : BP_ALIGN;
    ingot__fmt(f->version, sizeof f->version, "%s", vname(v));
    return INGOT_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Synthetic metadata (docs/formats/burnpack.md "Reserved keys")
 * ------------------------------------------------------------------------------------------- */

static bool add_synth(ingot_file *f, bp_state *s, uint32_t kind, uint32_t tensor,
                      const char *prefix, const char *val, size_t vl)
{
    void *mp = s->m;
    if (!grow(&f->alloc, &mp, &s->cap_m, s->nm, sizeof *s->m)) return false;
    s->m = mp;
    bp_meta *m = &s->m[s->nm];
    memset(m, 0, sizeof *m);
    m->kind = kind;
    m->tensor = tensor;
    m->key_off = s->pool.len;
    ingot__bp_buf_put(&s->pool, prefix, strlen(prefix));
    if (kind == M_DTYPE || kind == M_SHAPE)
        ingot__bp_buf_put(&s->pool, s->pool.p + s->t[tensor].name_off, s->t[tensor].name_len);
    m->key_len = s->pool.len - m->key_off;
    m->val_off = s->pool.len;
    m->val_len = vl;
    if (vl) ingot__bp_buf_put(&s->pool, val, vl);
    if (s->pool.oom) return false;
    s->nm++;
    return true;
}

static ingot_status build_meta(ingot_file *f, bp_state *s, ingot_error *err)
{
    if (!(s->versions & BP_V21)) {
        const char *l = (s->versions & BP_V20) ? "0.20" : "0.19";
        if (!add_synth(f, s, M_LAYOUT, 0, BP_KEY_LAYOUT, l, 4)) return nomem(err, "metadata");
    }
    for (uint32_t i = 0; i < s->nt; i++) {
        const bp_tensor *t = &s->t[i];
        const char *v = NULL;
        size_t vl = 0;
        if (t->kind == BP_FLEX32) v = "\"Flex32\"";
        else if (t->kind == BP_BOOL_U8) v = "{\"Bool\":\"U8\"}";
        else if (t->kind == BP_BOOL_U32) v = "{\"Bool\":\"U32\"}";
        if (v) vl = strlen(v);
        if (t->kind == BP_QFLOAT) { /* value copied from the pool itself: copy via a marker */
            if (!add_synth(f, s, M_DTYPE, i, BP_KEY_DTYPE, NULL, 0)) return nomem(err, "metadata");
            bp_meta *m = &s->m[s->nm - 1];
            m->val_off = t->json_off;
            m->val_len = t->json_len;
            if (!add_synth(f, s, M_SHAPE, i, BP_KEY_SHAPE, NULL, 0)) return nomem(err, "metadata");
        } else if (v && !add_synth(f, s, M_DTYPE, i, BP_KEY_DTYPE, v, vl)) {
            return nomem(err, "metadata");
        }
    }
    /* Resolve pointers now that the pool no longer moves. */
    for (size_t k = 0; k < s->nm; k++) {
        bp_meta *m = &s->m[k];
        const uint8_t *src = m->kind == M_USER ? s->hdr : s->pool.p;
        m->key = (const char *)src + m->key_off;
        m->val = (const char *)src + m->val_off;
    }
    if (s->nm) {
        s->m_by_key = ingot__alloc(&f->alloc, s->nm * sizeof(uint32_t));
        uint32_t *tmp = ingot__alloc(&f->alloc, s->nm * sizeof(uint32_t));
        if (!s->m_by_key || !tmp) {
            ingot__free(&f->alloc, tmp, s->nm * sizeof(uint32_t));
            return nomem(err, "the metadata index");
        }
        for (uint32_t k = 0; k < s->nm; k++) s->m_by_key[k] = k;
        ingot__index_sort(s->m_by_key, tmp, s->nm, cmp_key, s);
        ingot__free(&f->alloc, tmp, s->nm * sizeof(uint32_t));
        for (size_t k = 1; k < s->nm; k++) {
            const bp_meta *a = &s->m[s->m_by_key[k - 1]], *b = &s->m[s->m_by_key[k]];
            if (cmp_key(s, s->m_by_key[k - 1], s->m_by_key[k]) == 0)
                return ingot__err(err, INGOT_DUPLICATE,
                                  b->kind == M_USER ? b->key_off : INGOT_NO_OFFSET, a->key,
                                  a->key_len, "metadata key appears twice");
        }
    }
    return INGOT_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Open
 * ------------------------------------------------------------------------------------------- */

static ingot_status sort_tensors(ingot_file *f, bp_state *s, ingot_error *err)
{
    size_t n = s->nt;
    if (n == 0) return INGOT_OK;
    uint32_t *ord = ingot__alloc(&f->alloc, n * sizeof(uint32_t));
    uint32_t *tmp = ingot__alloc(&f->alloc, n * sizeof(uint32_t));
    bp_tensor *nt = ingot__alloc(&f->alloc, n * sizeof *nt);
    ingot_status st = INGOT_OK;
    if (!ord || !tmp || !nt) {
        st = nomem(err, "the tensor index");
        goto done;
    }
    /* duplicate names first (Burn keeps the last silently; we refuse) */
    for (uint32_t i = 0; i < n; i++) ord[i] = i;
    ingot__index_sort(ord, tmp, n, cmp_name, s);
    for (size_t i = 1; i < n; i++)
        if (cmp_name(s, ord[i - 1], ord[i]) == 0) {
            const bp_tensor *t = &s->t[ord[i]];
            st = ingot__err(err, INGOT_DUPLICATE, t->desc_at, TNAME(s, t),
                            "tensor name appears twice");
            goto done;
        }
    /* data order becomes the tensor order */
    for (uint32_t i = 0; i < n; i++) ord[i] = i;
    ingot__index_sort(ord, tmp, n, cmp_data, s);
    for (size_t i = 0; i < n; i++) nt[i] = s->t[ord[i]];
    memcpy(s->t, nt, n * sizeof *nt);
    for (uint32_t i = 0; i < n; i++) ord[i] = i;
    ingot__index_sort(ord, tmp, n, cmp_name, s);
    s->by_name = ord;
    ord = NULL;
done:
    ingot__free(&f->alloc, ord, n * sizeof(uint32_t));
    ingot__free(&f->alloc, tmp, n * sizeof(uint32_t));
    ingot__free(&f->alloc, nt, n * sizeof *nt);
    return st;
}

static ingot_status open_bpk(ingot_file *f, ingot_error *err)
{
    const uint8_t *h;
    if (f->size < BP_HEADER_SIZE)
        return ingot__err(err, INGOT_TRUNCATED, f->size, "header", 6,
                          "file has %llu bytes, the header needs 10", (unsigned long long)f->size);
    ING_TRY(ingot__file_head(f, BP_HEADER_SIZE, &h, err));
    if (memcmp(h, "NRUB", 4) != 0)
        return ingot__err(err, INGOT_BAD_MAGIC, 0, "header", 6, "magic is not \"NRUB\"");
    uint16_t ver = ing_ld16(h + 4);
    if (ver > 1) /* Burn accepts 0 and 1 */
        return ingot__err(err, INGOT_BAD_VERSION, 4, "header", 6, "header version %u", ver);
    uint64_t msz = ing_ld32(h + 6);
    if (msz > BP_MAX_METADATA)
        return ingot__err(err, INGOT_BAD_HEADER_SIZE, 6, "header", 6,
                          "metadata_size %llu exceeds Burn's 100 MiB",
                          (unsigned long long)msz);
    if (BP_HEADER_SIZE + msz > f->size)
        return ingot__err(err, INGOT_TRUNCATED, f->size, "metadata", 8,
                          "metadata_size %llu runs past the %llu-byte file",
                          (unsigned long long)msz, (unsigned long long)f->size);
    uint64_t a;
    ing_round_up(BP_HEADER_SIZE + msz, BP_ALIGN, &a);
    ING_TRY(ingot__file_head(f, a < f->size ? a : f->size, &h, err));

    bp_state *s = ingot__calloc(&f->alloc, sizeof *s);
    if (!s) return nomem(err, "the reader");
    s->pool.a = &f->alloc;
    s->hdr = h;
    parse_ctx p = {f, s, {.buf = h + BP_HEADER_SIZE, .len = (size_t)msz, .base = BP_HEADER_SIZE}};
    ingot_status st = parse_top(&p, err);
    if (st == INGOT_OK) st = sort_tensors(f, s, err);
    if (st == INGOT_OK) st = check_sizes(s, err);
    if (st == INGOT_OK) st = decide_layout(f, s, msz, err);
    if (st == INGOT_OK) st = build_meta(f, s, err);
    if (st != INGOT_OK) {
        free_state(&f->alloc, s);
        return st;
    }
    f->state = s;
    return INGOT_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Queries
 * ------------------------------------------------------------------------------------------- */

static uint64_t tensor_count(const ingot_file *f) { return ST(f)->nt; }

static ingot_status tensor_at(const ingot_file *f, uint64_t i, ingot_tensor_info *out)
{
    const bp_state *s = ST(f);
    memset(out, 0, sizeof *out);
    if (i >= s->nt) return INGOT_RANGE;
    const bp_tensor *t = &s->t[i];
    out->name = (const char *)s->pool.p + t->name_off;
    out->name_len = t->name_len;
    out->dtype = t->dtype;
    out->nbytes = t->end - t->start;
    if (t->esize) {
        out->rank = t->brank;
        out->nelem = 1;
        bp_shape(s, t, out->shape);
        for (uint32_t d = 0; d < t->brank; d++) out->nelem *= out->shape[d]; /* checked at open */
    } else { /* QFloat: opaque bytes */
        out->rank = 1;
        out->shape[0] = out->nbytes;
        out->nelem = out->nbytes;
    }
    out->offset = s->data_start + t->start;
    if (f->base) out->data = f->base + out->offset;
    else out->flags |= INGOT_TENSOR_NOT_MAPPED;
    uint32_t es = ingot_dtype_block_bytes(t->dtype);
    if (es > 1 && out->offset % es) out->flags |= INGOT_TENSOR_UNALIGNED;
    if (t->has_pid) out->flags |= INGOT_TENSOR_HAS_PARAM_ID, out->param_id = t->param_id;
    out->index = (uint32_t)i;
    return INGOT_OK;
}

static ingot_status tensor_find(const ingot_file *f, const char *name, size_t len,
                                ingot_tensor_info *out)
{
    const bp_state *s = ST(f);
    uint32_t i;
    if (ingot__index_find(s->by_name, s->nt, name_of, s, name, len, &i))
        return tensor_at(f, i, out);
    memset(out, 0, sizeof *out);
    return INGOT_NOT_FOUND;
}

/* Verification also checks the zero padding the 0.20+ writer leaves after each tensor. */
static ingot_status tensor_check(const ingot_file *f, uint64_t i, bool *has_crc, uint32_t *crc,
                                 uint64_t *zero_after)
{
    const bp_state *s = ST(f);
    *has_crc = false;
    *crc = 0;
    *zero_after = i + 1 < s->nt ? s->t[i + 1].start - s->t[i].end : 0;
    return INGOT_OK;
}

static uint64_t meta_count(const ingot_file *f) { return ST(f)->nm; }

static ingot_status meta_at(const ingot_file *f, uint64_t i, ingot_meta_info *out)
{
    const bp_state *s = ST(f);
    memset(out, 0, sizeof *out);
    if (i >= s->nm) return INGOT_RANGE;
    const bp_meta *m = &s->m[i];
    out->key = m->key;
    out->key_len = m->key_len;
    out->index = i;
    if (m->kind == M_SHAPE) {
        out->type = INGOT_META_U64;
        out->is_array = true;
        out->count = s->t[m->tensor].brank;
    } else {
        out->type = INGOT_META_STRING;
        out->count = m->val_len;
        out->data = m->val;
    }
    return INGOT_OK;
}

static ingot_status meta_find(const ingot_file *f, const char *key, size_t len,
                              ingot_meta_info *out)
{
    const bp_state *s = ST(f);
    uint32_t i;
    if (ingot__index_find(s->m_by_key, s->nm, key_of, s, key, len, &i)) return meta_at(f, i, out);
    memset(out, 0, sizeof *out);
    return INGOT_NOT_FOUND;
}

static ingot_status meta_array_read(const ingot_file *f, uint64_t index, ingot_meta_type type,
                                    uint64_t first, uint64_t n, void *dst)
{
    const bp_state *s = ST(f);
    if (index >= s->nm) return INGOT_RANGE;
    const bp_meta *m = &s->m[index];
    if (m->kind != M_SHAPE || type != INGOT_META_U64) return INGOT_WRONG_TYPE;
    const bp_tensor *t = &s->t[m->tensor];
    if (first > t->brank || n > t->brank - first) return INGOT_RANGE;
    if (n) memcpy(dst, s->pool.p + t->shape_off + 8 * first, (size_t)n * sizeof(uint64_t));
    return INGOT_OK;
}

static ingot_status meta_array_string(const ingot_file *f, uint64_t index, uint64_t elem,
                                      const char **s, size_t *len)
{
    (void)elem, (void)s, (void)len;
    return index < ST(f)->nm ? INGOT_WRONG_TYPE : INGOT_RANGE;
}

static const char *const extensions[] = {"bpk", NULL};

const ingot__format ingot__format_burnpack = {
    .name = "burnpack",
    .extensions = extensions,
    .probe = probe,
    .open = open_bpk,
    .close = close_bpk,
    .tensor_count = tensor_count,
    .tensor_at = tensor_at,
    .tensor_find = tensor_find,
    .tensor_check = tensor_check,
    .checks = INGOT_CHECK_PADDING, /* no checksums in Burnpack */
    .meta_count = meta_count,
    .meta_at = meta_at,
    .meta_find = meta_find,
    .meta_array_read = meta_array_read,
    .meta_array_string = meta_array_string,
    .writer = &ingot__writer_burnpack,
};
