/*
 * burnpack_write.c - Burnpack writer ops: the byte layout Burn's burn-store writer produces
 * (../shared/formats/burnpack.md §4, §5, §7.4): header, shortest-form CBOR with tensors sorted by
 * name and descriptors in Burn's field order, zero padding, data in declaration order. Layout 0.21
 * by default; option "layout" = "0.20" (text "Bool") or "0.19" (unaligned, text "Bool").
 * The reserved keys ingot.burnpack.* (written by the reader) restore what ingot dtypes cannot say.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "burnpack_format.h"
#include "burnpack_internal.h"
#include "checked.h"
#include "error.h"
#include "writer_impl.h"

typedef struct {
    unsigned layout_opt; /* BP_V19/20/21, 0: not set */
    uint8_t *hdr;        /* header + metadata + padding */
    size_t hdr_len;
    uint64_t total;
} wstate;

typedef struct {
    bp_kind kind;
    uint32_t brank;
    uint64_t bshape[INGOT_MAX_RANK];
    size_t q_off, q_len; /* QFloat: the dtype's CBOR in qbuf */
    bool has_shape;      /* QFloat: shape key seen */
    uint64_t start, end;
} wtensor;

static ingot_status init(ingot_writer *w, ingot_error *err)
{
    wstate *s = ingot__calloc(&w->alloc, sizeof *s);
    if (!s) return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating the writer");
    w->fmt_state = s;
    return INGOT_OK;
}

static void free_state(ingot_writer *w)
{
    wstate *s = w->fmt_state;
    if (!s) return;
    ingot__free(&w->alloc, s->hdr, s->hdr_len);
    ingot__free(&w->alloc, s, sizeof *s);
    w->fmt_state = NULL;
}

static bool parse_layout(const char *v, size_t n, unsigned *out)
{
    if (n == 4 && memcmp(v, "0.19", 4) == 0) *out = BP_V19;
    else if (n == 4 && memcmp(v, "0.20", 4) == 0) *out = BP_V20;
    else if (n == 4 && memcmp(v, "0.21", 4) == 0) *out = BP_V21;
    else return false;
    return true;
}

static ingot_status set_option(ingot_writer *w, const char *key, const char *value,
                               ingot_error *err)
{
    wstate *s = w->fmt_state;
    if (strcmp(key, "layout") != 0)
        return ingot__err(err, INGOT_UNSUPPORTED, INGOT_NO_OFFSET, key, strlen(key),
                          "burnpack has one option, \"layout\"");
    if (!parse_layout(value, strlen(value), &s->layout_opt))
        return ingot__err(err, INGOT_BAD_METADATA, INGOT_NO_OFFSET, key, strlen(key),
                          "layout must be 0.19, 0.20 or 0.21, not \"%s\"", value);
    return INGOT_OK;
}

/* Every dtype some Burnpack spelling maps to; the rest is refused when the tensor is added. */
static bool kind_of(ingot_dtype dt, bp_kind *k)
{
    switch (dt) {
    case INGOT_DTYPE_F64: *k = BP_F64; return true;
    case INGOT_DTYPE_F32: *k = BP_F32; return true;
    case INGOT_DTYPE_F16: *k = BP_F16; return true;
    case INGOT_DTYPE_BF16: *k = BP_BF16; return true;
    case INGOT_DTYPE_I64: *k = BP_I64; return true;
    case INGOT_DTYPE_I32: *k = BP_I32; return true;
    case INGOT_DTYPE_I16: *k = BP_I16; return true;
    case INGOT_DTYPE_I8: *k = BP_I8; return true;
    case INGOT_DTYPE_U64: *k = BP_U64; return true;
    case INGOT_DTYPE_U32: *k = BP_U32; return true;
    case INGOT_DTYPE_U16: *k = BP_U16; return true;
    case INGOT_DTYPE_U8: *k = BP_U8; return true;
    case INGOT_DTYPE_BOOL: *k = BP_BOOL_NATIVE; return true;
    default: return false;
    }
}


/* Early refusal at add_tensor (the core lends the name); begin checks again. */
static ingot_status check_tensor(ingot_writer *w, const ingot__wtensor *t, ingot_error *err)
{
    (void)w;
    bp_kind k;
    if (!kind_of(t->dtype, &k))
        return ingot__err(err, INGOT_UNSUPPORTED, INGOT_NO_OFFSET, t->name, t->name_len,
                          "Burnpack has no dtype %s", ingot_dtype_name(t->dtype));
    return INGOT_OK;
}

static int cmp_tensor(const void *ctx, uint32_t a, uint32_t b)
{
    const ingot_writer *w = ctx;
    return ingot__bytes_cmp(w->tensors[a].name, w->tensors[a].name_len, w->tensors[b].name,
                      w->tensors[b].name_len);
}

static int cmp_meta(const void *ctx, uint32_t a, uint32_t b)
{
    const ingot_writer *w = ctx;
    return ingot__bytes_cmp(w->meta[a].key, w->meta[a].key_len, w->meta[b].key, w->meta[b].key_len);
}

static bool has_prefix(const ingot__wmeta *m, const char *p)
{
    size_t n = strlen(p);
    return m->key_len >= n && memcmp(m->key, p, n) == 0;
}

static const void *wname_of(const void *ctx, uint32_t i, size_t *len)
{
    const ingot_writer *w = ctx;
    *len = w->tensors[i].name_len;
    return w->tensors[i].name;
}

/* Index of the tensor called name[0..n) (by_name sorted), or -1. */
static long find_tensor(const ingot_writer *w, const uint32_t *by_name, const char *name,
                        size_t n)
{
    uint32_t i;
    return ingot__index_find(by_name, w->n_tensors, wname_of, w, name, n, &i) ? (long)i : -1;
}

/* ---- typed metadata -> text (Burnpack's user metadata is text only) ---- */

static void put_num(bp_buf *b, const ingot__wmeta *m, uint64_t bits)
{
    char tmp[40];
    int k = 0;
    switch (m->type) {
    case INGOT_META_U8:
    case INGOT_META_U16:
    case INGOT_META_U32:
    case INGOT_META_U64: k = snprintf(tmp, sizeof tmp, "%llu", (unsigned long long)bits); break;
    case INGOT_META_I8: k = snprintf(tmp, sizeof tmp, "%d", (int)(int8_t)bits); break;
    case INGOT_META_I16: k = snprintf(tmp, sizeof tmp, "%d", (int)(int16_t)bits); break;
    case INGOT_META_I32: k = snprintf(tmp, sizeof tmp, "%ld", (long)(int32_t)bits); break;
    case INGOT_META_I64: k = snprintf(tmp, sizeof tmp, "%lld", (long long)(int64_t)bits); break;
    case INGOT_META_F32: { /* shortest text that reads back to the same value */
        uint32_t b32 = (uint32_t)bits;
        float f;
        memcpy(&f, &b32, 4);
        for (int prec = 6; prec <= 9; prec++) {
            k = snprintf(tmp, sizeof tmp, "%.*g", prec, (double)f);
            if (strtof(tmp, NULL) == f) break;
        }
        break;
    }
    case INGOT_META_F64: {
        double d;
        memcpy(&d, &bits, 8);
        for (int prec = 15; prec <= 17; prec++) {
            k = snprintf(tmp, sizeof tmp, "%.*g", prec, d);
            if (strtod(tmp, NULL) == d) break;
        }
        break;
    }
    case INGOT_META_BOOL: k = snprintf(tmp, sizeof tmp, "%s", bits ? "true" : "false"); break;
    default: break;
    }
    if (k > 0) ingot__bp_buf_put(b, tmp, (size_t)k);
}

static void put_quoted(bp_buf *b, const uint8_t *s, size_t n, bool hex)
{
    static const char hx[] = "0123456789abcdef";
    ingot__bp_buf_put(b, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        uint8_t c = s[i];
        if (hex) {
            char e[2] = {hx[c >> 4], hx[c & 15]};
            ingot__bp_buf_put(b, e, 2);
        } else if (c == '"' || c == '\\') {
            char e[2] = {'\\', (char)c};
            ingot__bp_buf_put(b, e, 2);
        } else if (c < 0x20) {
            char e[6] = {'\\', 'u', '0', '0', hx[c >> 4], hx[c & 15]};
            ingot__bp_buf_put(b, e, 6);
        } else {
            ingot__bp_buf_put(b, &c, 1);
        }
    }
    ingot__bp_buf_put(b, "\"", 1);
}

/* Scalars: decimal, shortest %g that reads back exactly (NaN/inf as printf spells them), true/false, bytes as lowercase hex. Arrays:
 * JSON arrays of those (strings quoted and escaped, bytes as quoted hex). */
static void stringify(bp_buf *b, const ingot__wmeta *m)
{
    static const char hx[] = "0123456789abcdef";
    if (!m->is_array) {
        if (m->type == INGOT_META_BYTES) {
            for (size_t i = 0; i < m->blob_len; i++) {
                char e[2] = {hx[m->blob[i] >> 4], hx[m->blob[i] & 15]};
                ingot__bp_buf_put(b, e, 2);
            }
        } else {
            put_num(b, m, m->scalar);
        }
        return;
    }
    ingot__bp_buf_put(b, "[", 1);
    uint32_t esz = ingot_meta_type_size(m->type);
    size_t at = 0;
    for (uint64_t k = 0; k < m->count; k++) {
        if (k) ingot__bp_buf_put(b, ",", 1);
        if (m->lens) {
            put_quoted(b, m->blob + at, (size_t)m->lens[k], m->type == INGOT_META_BYTES);
            at += (size_t)m->lens[k];
        } else {
            uint64_t v = 0;
            for (uint32_t j = 0; j < esz; j++) v |= (uint64_t)m->blob[k * esz + j] << (8 * j);
            put_num(b, m, v);
        }
    }
    ingot__bp_buf_put(b, "]", 1);
}

/* ---- begin: resolve dtypes, lay out, encode ---- */

typedef struct {
    ingot_writer *w;
    wtensor *wt;
    uint32_t *by_name; /* n tensors */
    uint32_t *user;    /* user metadata indices, sorted by key */
    size_t n_user;
    bp_buf qbuf;       /* QFloat dtype CBOR */
    bp_buf vals;       /* stringified values */
    size_t *val_off;   /* per meta: offset in vals, or SIZE_MAX for a STRING */
    size_t *val_len;
    unsigned layout;
} plan;

static ingot_status apply_dtype_key(plan *p, const ingot__wmeta *m, long ti, ingot_error *err)
{
    ingot_writer *w = p->w;
    const ingot__wtensor *t = &w->tensors[ti];
    wtensor *x = &p->wt[ti];
    if (m->type != INGOT_META_STRING || m->is_array)
        return ingot__err(err, INGOT_BAD_METADATA, INGOT_NO_OFFSET, m->key, m->key_len,
                          "expected the dtype as a JSON string");
    bp_buf cb = {.a = &w->alloc};
    ingot_status st = ingot__bp_json_to_cbor((const char *)m->blob, m->blob_len, &cb, m->key,
                                      m->key_len, err);
    bp_dtype d;
    if (st == INGOT_OK) {
        bp_cur c = {.buf = cb.p, .len = cb.len, .base = 0};
        st = ingot__bp_next(&c, err);
        if (st == INGOT_OK) st = ingot__bp_parse_dtype(&c, t->name, t->name_len, &d, NULL, err);
        if (st == INGOT_OK && c.pos != c.len)
            st = ingot__err(err, INGOT_BAD_METADATA, INGOT_NO_OFFSET, m->key, m->key_len,
                            "trailing data after the dtype");
        if (st != INGOT_OK && err && err->code != INGOT_NOMEM) {
            st = ingot__err(err, INGOT_BAD_METADATA, INGOT_NO_OFFSET, m->key, m->key_len,
                            "not a Burnpack dtype: %s", err->msg);
        }
    }
    if (st == INGOT_OK) {
        /* which ingot dtype the spelling is read back as */
        if (d.dtype != t->dtype)
            st = ingot__err(err, INGOT_BAD_METADATA, INGOT_NO_OFFSET, m->key, m->key_len,
                            "dtype key says %s but the tensor is %s", ingot_dtype_name(d.dtype),
                            ingot_dtype_name(t->dtype));
    }
    if (st == INGOT_OK) {
        x->kind = d.kind == BP_BOOL_TEXT ? BP_BOOL_NATIVE : d.kind; /* layout picks spelling */
        if (d.kind == BP_QFLOAT) {
            if (!(d.versions & p->layout))
                st = ingot__err(err, INGOT_UNSUPPORTED, INGOT_NO_OFFSET, t->name, t->name_len,
                                "its QFloat store variant does not exist in this layout");
            x->q_off = p->qbuf.len;
            x->q_len = cb.len;
            if (!ingot__bp_buf_put(&p->qbuf, cb.p, cb.len))
                st = ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating");
        }
    }
    ingot__bp_buf_free(&cb);
    return st;
}

static ingot_status apply_shape_key(plan *p, const ingot__wmeta *m, long ti, ingot_error *err)
{
    wtensor *x = &p->wt[ti];
    if (!m->is_array || m->type != INGOT_META_U64 || m->count > INGOT_MAX_RANK)
        return ingot__err(err, INGOT_BAD_METADATA, INGOT_NO_OFFSET, m->key, m->key_len,
                          "expected a u64 array of at most %d dimensions", INGOT_MAX_RANK);
    x->brank = (uint32_t)m->count;
    x->has_shape = true;
    for (uint32_t d = 0; d < x->brank; d++) {
        uint64_t v = 0;
        for (int j = 0; j < 8; j++) v |= (uint64_t)m->blob[d * 8 + j] << (8 * j);
        x->bshape[d] = v;
    }
    uint64_t ne, nb;
    ingot_status st = ingot_dtype_nbytes(INGOT_DTYPE_U8, x->brank, x->bshape, &ne, &nb);
    if (st != INGOT_OK)
        return ingot__err(err, st, INGOT_NO_OFFSET, m->key, m->key_len, "QFloat shape: %s",
                          ingot_status_str(st));
    return INGOT_OK;
}

static ingot_status resolve(plan *p, ingot_error *err)
{
    ingot_writer *w = p->w;
    wstate *s = w->fmt_state;
    size_t pd = strlen(BP_KEY_DTYPE), ps = strlen(BP_KEY_SHAPE);
    /* layout: option, else the reserved key, else 0.21 */
    p->layout = s->layout_opt;
    for (size_t k = 0; k < w->n_meta; k++) {
        const ingot__wmeta *m = &w->meta[k];
        if (strcmp(m->key, BP_KEY_LAYOUT) != 0) continue;
        unsigned l;
        if (m->type != INGOT_META_STRING || m->is_array ||
            !parse_layout((const char *)m->blob, m->blob_len, &l))
            return ingot__err(err, INGOT_BAD_METADATA, INGOT_NO_OFFSET, m->key, m->key_len,
                              "expected \"0.19\", \"0.20\" or \"0.21\"");
        if (!p->layout) p->layout = l;
    }
    if (!p->layout) p->layout = BP_V21;
    /* Also refused by check_tensor at add_tensor; kept for writers filled another way. */
    for (size_t i = 0; i < w->n_tensors; i++) {
        const ingot__wtensor *t = &w->tensors[i];
        wtensor *x = &p->wt[i];
        if (!kind_of(t->dtype, &x->kind))
            return ingot__err(err, INGOT_UNSUPPORTED, INGOT_NO_OFFSET, t->name, t->name_len,
                              "Burnpack has no dtype %s", ingot_dtype_name(t->dtype));
        x->brank = t->rank;
        for (uint32_t d = 0; d < t->rank; d++) x->bshape[d] = t->shape[d];
    }
    for (int pass = 0; pass < 2; pass++) /* dtypes first: a shape key needs the QFloat dtype */
        for (size_t k = 0; k < w->n_meta; k++) {
            const ingot__wmeta *m = &w->meta[k];
            if (!has_prefix(m, BP_PREFIX)) continue;
            bool is_d = has_prefix(m, BP_KEY_DTYPE), is_s = has_prefix(m, BP_KEY_SHAPE);
            if (strcmp(m->key, BP_KEY_LAYOUT) == 0) continue;
            if (!is_d && !is_s) {
                if (pass == 0)
                    ingot__writer_notice(w, "metadata '%s': unknown ingot.burnpack key, dropped",
                                         m->key);
                continue;
            }
            if (is_d != (pass == 0)) continue;
            size_t off = is_d ? pd : ps;
            long ti = find_tensor(w, p->by_name, m->key + off, m->key_len - off);
            if (ti < 0) {
                ingot__writer_notice(w, "metadata '%s': no tensor of that name, dropped", m->key);
                continue;
            }
            if (is_d) {
                ING_TRY(apply_dtype_key(p, m, ti, err));
            } else if (p->wt[ti].kind != BP_QFLOAT) {
                ingot__writer_notice(w, "metadata '%s': the tensor is not QFloat, dropped",
                                     m->key);
            } else {
                ING_TRY(apply_shape_key(p, m, ti, err));
            }
        }
    /* per-tensor checks against the layout */
    for (size_t i = 0; i < w->n_tensors; i++) {
        const ingot__wtensor *t = &w->tensors[i];
        const wtensor *x = &p->wt[i];
        if (x->kind == BP_QFLOAT && !x->has_shape)
            return ingot__err(err, INGOT_BAD_METADATA, INGOT_NO_OFFSET, t->name, t->name_len,
                              "QFloat tensor without its " BP_KEY_SHAPE "<name> key");
        if ((x->kind == BP_BOOL_U8 || x->kind == BP_BOOL_U32) && p->layout != BP_V21)
            return ingot__err(err, INGOT_UNSUPPORTED, INGOT_NO_OFFSET, t->name, t->name_len,
                              "Bool(%s) exists only in the 0.21 layout",
                              x->kind == BP_BOOL_U8 ? "U8" : "U32");
    }
    /* user metadata */
    for (size_t k = 0; k < w->n_meta; k++) {
        const ingot__wmeta *m = &w->meta[k];
        p->val_off[k] = SIZE_MAX;
        if (has_prefix(m, BP_PREFIX)) continue;
        p->user[p->n_user++] = (uint32_t)k;
        if (m->type == INGOT_META_STRING && !m->is_array) continue;
        p->val_off[k] = p->vals.len;
        stringify(&p->vals, m);
        if (p->vals.oom) return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating");
        size_t n = p->vals.len - p->val_off[k];
        p->val_len[k] = n;
        ingot__writer_notice(w, "metadata '%s' (%s%s) written as the string \"%.*s%s\"", m->key,
                             ingot_meta_type_name(m->type), m->is_array ? " array" : "",
                             (int)(n > 64 ? 64 : n), (const char *)p->vals.p + p->val_off[k],
                             n > 64 ? "..." : "");
    }
    return INGOT_OK;
}

static bool put_dtype(bp_buf *b, const plan *p, const wtensor *x)
{
    switch (x->kind) {
    case BP_BOOL_NATIVE:
    case BP_BOOL_TEXT:
        if (p->layout != BP_V21) return ingot__bp_put_text(b, "Bool", 4);
        return ingot__bp_put_head(b, 5, 1) && ingot__bp_put_text(b, "Bool", 4) &&
               ingot__bp_put_text(b, "Native", 6);
    case BP_BOOL_U8:
        return ingot__bp_put_head(b, 5, 1) && ingot__bp_put_text(b, "Bool", 4) &&
               ingot__bp_put_text(b, "U8", 2);
    case BP_BOOL_U32:
        return ingot__bp_put_head(b, 5, 1) && ingot__bp_put_text(b, "Bool", 4) &&
               ingot__bp_put_text(b, "U32", 3);
    case BP_QFLOAT: return ingot__bp_buf_put(b, p->qbuf.p + x->q_off, x->q_len);
    default: {
        const char *t = ingot__bp_kind_text(x->kind);
        return ingot__bp_put_text(b, t, strlen(t));
    }
    }
}

static ingot_status encode(plan *p, bp_buf *b, ingot_error *err)
{
    ingot_writer *w = p->w;
    ingot__bp_buf_put(b, "NRUB\x01\x00\0\0\0\0", BP_HEADER_SIZE); /* size patched below */
    ingot__bp_put_head(b, 5, p->n_user ? 2 : 1);
    ingot__bp_put_text(b, "tensors", 7);
    ingot__bp_put_head(b, 5, w->n_tensors);
    for (size_t k = 0; k < w->n_tensors; k++) {
        const ingot__wtensor *t = &w->tensors[p->by_name[k]];
        const wtensor *x = &p->wt[p->by_name[k]];
        ingot__bp_put_text(b, t->name, t->name_len);
        ingot__bp_put_head(b, 5, t->has_param_id ? 4 : 3);
        ingot__bp_put_text(b, "dtype", 5);
        put_dtype(b, p, x);
        ingot__bp_put_text(b, "shape", 5);
        ingot__bp_put_head(b, 4, x->brank);
        for (uint32_t d = 0; d < x->brank; d++) ingot__bp_put_head(b, 0, x->bshape[d]);
        ingot__bp_put_text(b, "data_offsets", 12);
        ingot__bp_put_head(b, 4, 2);
        ingot__bp_put_head(b, 0, x->start);
        ingot__bp_put_head(b, 0, x->end);
        if (t->has_param_id) {
            ingot__bp_put_text(b, "param_id", 8);
            ingot__bp_put_head(b, 0, t->param_id);
        }
    }
    if (p->n_user) {
        ingot__bp_put_text(b, "metadata", 8);
        ingot__bp_put_head(b, 5, p->n_user);
        for (size_t k = 0; k < p->n_user; k++) {
            const ingot__wmeta *m = &w->meta[p->user[k]];
            ingot__bp_put_text(b, m->key, m->key_len);
            size_t vo = p->val_off[p->user[k]];
            if (vo == SIZE_MAX) ingot__bp_put_text(b, (const char *)m->blob, m->blob_len);
            else ingot__bp_put_text(b, (const char *)p->vals.p + vo, p->val_len[p->user[k]]);
        }
    }
    if (b->oom) return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating");
    return INGOT_OK;
}

static void plan_free(plan *p)
{
    ingot_writer *w = p->w;
    size_t n = w->n_tensors ? w->n_tensors : 1, m = w->n_meta ? w->n_meta : 1;
    ingot__free(&w->alloc, p->wt, n * sizeof *p->wt);
    ingot__free(&w->alloc, p->by_name, 2 * n * sizeof(uint32_t));
    ingot__free(&w->alloc, p->user, 2 * m * sizeof(uint32_t));
    ingot__free(&w->alloc, p->val_off, m * sizeof(size_t));
    ingot__free(&w->alloc, p->val_len, m * sizeof(size_t));
    ingot__bp_buf_free(&p->qbuf);
    ingot__bp_buf_free(&p->vals);
}

static ingot_status begin(ingot_writer *w, uint64_t *total, ingot_error *err)
{
    wstate *s = w->fmt_state;
    plan p = {.w = w, .qbuf = {.a = &w->alloc}, .vals = {.a = &w->alloc}};
    bp_buf b = {.a = &w->alloc};
    ingot_status st = INGOT_OK;
    size_t n = w->n_tensors ? w->n_tensors : 1, m = w->n_meta ? w->n_meta : 1;
    if (w->n_tensors > BP_MAX_TENSORS)
        return ingot__err(err, INGOT_LIMIT, INGOT_NO_OFFSET, 0, 0,
                          "%zu tensors; Burn reads at most %u", w->n_tensors, BP_MAX_TENSORS);
    p.wt = ingot__calloc(&w->alloc, n * sizeof *p.wt);
    p.by_name = ingot__alloc(&w->alloc, 2 * n * sizeof(uint32_t));
    p.user = ingot__alloc(&w->alloc, 2 * m * sizeof(uint32_t));
    p.val_off = ingot__alloc(&w->alloc, m * sizeof(size_t));
    p.val_len = ingot__calloc(&w->alloc, m * sizeof(size_t));
    if (!p.wt || !p.by_name || !p.user || !p.val_off || !p.val_len) {
        st = ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating the layout");
        goto done;
    }
    for (uint32_t i = 0; i < w->n_tensors; i++) p.by_name[i] = i;
    ingot__index_sort(p.by_name, p.by_name + n, w->n_tensors, cmp_tensor, w);
    if ((st = resolve(&p, err)) != INGOT_OK) goto done;
    ingot__index_sort(p.user, p.user + m, p.n_user, cmp_meta, w);

    /* data offsets, relative to the data start, in declaration order (spec §4) */
    uint64_t align = p.layout == BP_V19 ? 1 : BP_ALIGN, cur = 0;
    for (size_t i = 0; i < w->n_tensors; i++) {
        wtensor *x = &p.wt[i];
        if (!ing_round_up(cur, align, &x->start) ||
            !ing_add(x->start, w->tensors[i].nbytes, &x->end)) {
            st = ingot__err(err, INGOT_BAD_SIZE, INGOT_NO_OFFSET, w->tensors[i].name,
                            w->tensors[i].name_len, "data offsets overflow");
            goto done;
        }
        cur = x->end;
    }
    if ((st = encode(&p, &b, err)) != INGOT_OK) goto done;
    uint64_t msz = b.len - BP_HEADER_SIZE, data_start = 0;
    if (msz > BP_MAX_METADATA) {
        st = ingot__err(err, INGOT_LIMIT, INGOT_NO_OFFSET, "metadata", 8,
                        "metadata of %llu bytes; Burn reads at most 100 MiB",
                        (unsigned long long)msz);
        goto done;
    }
    ing_st32(b.p + 6, (uint32_t)msz);
    ing_round_up(b.len, align, &data_start);
    static const uint8_t zeros[BP_ALIGN];
    ingot__bp_buf_put(&b, zeros, (size_t)(data_start - b.len));
    if (b.oom || !ing_add(data_start, cur, total)) {
        st = ingot__err(err, b.oom ? INGOT_NOMEM : INGOT_BAD_SIZE, INGOT_NO_OFFSET, 0, 0,
                        b.oom ? "allocating the header" : "file size overflows");
        goto done;
    }
    for (size_t i = 0; i < w->n_tensors; i++) w->tensors[i].offset = data_start + p.wt[i].start;
    s->total = *total;
    s->hdr = b.p;
    s->hdr_len = b.cap;
    b.p = NULL;
    b.cap = 0;
    if ((st = ingot__wsink_reserve(w, *total, err)) != INGOT_OK) goto done;
    st = ingot__wsink_write(w, s->hdr, (size_t)data_start, err);
done:
    ingot__bp_buf_free(&b);
    plan_free(&p);
    return st;
}

static ingot_status before_tensor(ingot_writer *w, uint64_t i, ingot_error *err)
{
    uint64_t at = w->tensors[i].offset;
    if (w->pos > at)
        return ingot__err(err, INGOT_MISUSE, w->pos, 0, 0, "stream position past tensor start");
    return ingot__wsink_zeros(w, at - w->pos, err);
}

static ingot_status finish(ingot_writer *w, ingot_error *err)
{
    const wstate *s = w->fmt_state;
    if (w->pos < s->total) ING_TRY(ingot__wsink_zeros(w, s->total - w->pos, err));
    if (w->pos != s->total)
        return ingot__err(err, INGOT_MISUSE, w->pos, 0, 0, "wrote %llu bytes, layout has %llu",
                          (unsigned long long)w->pos, (unsigned long long)s->total);
    return INGOT_OK;
}

const ingot__writer_ops ingot__writer_burnpack = {
    .init = init,
    .check_tensor = check_tensor,
    .begin = begin,
    .before_tensor = before_tensor,
    .finish = finish,
    .free_state = free_state,
    .set_option = set_option,
};
