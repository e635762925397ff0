/*
 * tenzor_write.c - `.tenzor` writer ops, laid out exactly as upstream's writer does (header, JSON
 * at 64 zero-padded to 8, the 48-byte index, zero fill to 4096, the tensors packed in declaration
 * order, nothing after). Metadata becomes one compact JSON object; the tensor names go under
 * "ingot.tensor_names" (option names=false leaves them out). Spec: ../shared/formats/tenzor.md;
 * mapping and lossy steps: docs/formats/tenzor.md.
 */
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "checked.h"
#include "error.h"
#include "json.h"
#include "tenzor_format.h"
#include "writer_impl.h"

typedef struct {
    bool names;   /* option: record tensor names in the JSON (default true) */
    uint8_t *hdr; /* [0, data_off) */
    size_t hdr_len;
    uint64_t total;
} wstate;

/* ---- JSON output: measure (out NULL) then fill ---- */

typedef struct {
    char *out;
    size_t len;
    ingot_writer *w; /* notices are sent while measuring only */
} jbuf;

static void put(jbuf *b, const char *s, size_t n)
{
    if (b->out && n) memcpy(b->out + b->len, s, n);
    b->len += n;
}

static void puts_(jbuf *b, const char *s) { put(b, s, strlen(s)); }

static void put_quoted(jbuf *b, const char *s, size_t n)
{
    size_t need = ingot__json_quote(NULL, 0, s, n);
    if (b->out) ingot__json_quote(b->out + b->len, need, s, n);
    b->len += need;
}

static void notice(jbuf *b, const char *key, const char *what)
{
    if (!b->out) ingot__writer_notice(b->w, "tenzor: metadata '%s': %s", key, what);
}

/* Shortest text that reads back as the same double, always with a '.' or an exponent (so it reads
 * back as a float), in the C locale's spelling whatever the process locale. 0 for NaN/Inf. */
static size_t f64_text(double v, char *buf, size_t cap)
{
    if (v != v || v - v != 0) return 0;
    int n = 0;
    for (int prec = 15; prec <= 17; prec++) {
        n = snprintf(buf, cap, "%.*g", prec, v);
        if (n > 0 && (size_t)n < cap && strtod(buf, NULL) == v) break;
    }
    if (n <= 0 || (size_t)n >= cap) return 0;
    const struct lconv *lc = localeconv();
    const char *dp = lc && lc->decimal_point && lc->decimal_point[0] ? lc->decimal_point : ".";
    size_t dpl = strlen(dp), o = 0;
    bool frac = false;
    for (size_t i = 0; i < (size_t)n;) {
        if (dp[0] != '.' && strncmp(buf + i, dp, dpl) == 0) {
            buf[o++] = '.';
            i += dpl;
            frac = true;
            continue;
        }
        if (buf[i] == '.' || buf[i] == 'e') frac = true;
        buf[o++] = buf[i++];
    }
    if (!frac && o + 2 < cap) {
        buf[o++] = '.';
        buf[o++] = '0';
    }
    buf[o] = 0;
    return o;
}

/* One numeric or bool element (raw LE bits of `esz` bytes) as JSON. */
static void put_num(jbuf *b, ingot_meta_type t, uint64_t bits, const char *key)
{
    char buf[48];
    size_t n = 0;
    switch (t) {
    case INGOT_META_U8:
    case INGOT_META_U16:
    case INGOT_META_U32:
    case INGOT_META_U64: n = ingot__fmt(buf, sizeof buf, "%llu", (unsigned long long)bits); break;
    case INGOT_META_I8: n = ingot__fmt(buf, sizeof buf, "%d", (int)(int8_t)bits); break;
    case INGOT_META_I16: n = ingot__fmt(buf, sizeof buf, "%d", (int)(int16_t)bits); break;
    case INGOT_META_I32: n = ingot__fmt(buf, sizeof buf, "%d", (int)(int32_t)bits); break;
    case INGOT_META_I64: n = ingot__fmt(buf, sizeof buf, "%lld", (long long)(int64_t)bits); break;
    case INGOT_META_BOOL: n = ingot__fmt(buf, sizeof buf, "%s", bits ? "true" : "false"); break;
    case INGOT_META_F32:
    case INGOT_META_F64: {
        double d;
        if (t == INGOT_META_F32) {
            float x;
            uint32_t u = (uint32_t)bits;
            memcpy(&x, &u, 4);
            d = x;
        } else {
            memcpy(&d, &bits, 8);
        }
        n = f64_text(d, buf, sizeof buf);
        if (n == 0) { /* JSON has no NaN or infinity */
            const char *s = d != d ? "NaN" : d > 0 ? "Infinity" : "-Infinity";
            notice(b, key, "NaN/infinity stored as a JSON string");
            put_quoted(b, s, strlen(s));
            return;
        }
        break;
    }
    default: break;
    }
    put(b, buf, n);
}

static uint64_t elem_bits(const ingot__wmeta *m, uint64_t k, uint32_t esz)
{
    uint64_t v = 0;
    for (uint32_t i = 0; i < esz; i++) v |= (uint64_t)m->blob[k * esz + i] << (8 * i);
    return v;
}

static void put_value(jbuf *b, const ingot__wmeta *m)
{
    const char *key = m->key;
    if (m->type == INGOT_META_STRING && !m->is_array) {
        put_quoted(b, (const char *)m->blob, m->blob_len);
        return;
    }
    if (m->type != INGOT_META_STRING && m->type != INGOT_META_BOOL && m->type != INGOT_META_I64 &&
        m->type != INGOT_META_F64)
        notice(b, key, "stored as a JSON number; it reads back as i64 (or u64/f64 by value)");
    if (!m->is_array) {
        put_num(b, m->type, m->scalar, key);
        return;
    }
    if (m->count == 0) notice(b, key, "an empty array reads back as an empty string array");
    puts_(b, "[");
    if (m->type == INGOT_META_STRING) {
        size_t at = 0;
        for (uint64_t k = 0; k < m->count; k++) {
            if (k) puts_(b, ",");
            put_quoted(b, (const char *)m->blob + at, (size_t)m->lens[k]);
            at += (size_t)m->lens[k];
        }
    } else {
        uint32_t esz = ingot_meta_type_size(m->type);
        for (uint64_t k = 0; k < m->count; k++) {
            if (k) puts_(b, ",");
            put_num(b, m->type, elem_bits(m, k, esz), key);
        }
    }
    puts_(b, "]");
}

static bool is_hex(const ingot__wtensor *t)
{
    uint64_t h;
    return ingot__tz_hexname(t->name, t->name_len, &h);
}

static const ingot__wmeta *find_meta(const ingot_writer *w, const char *key, size_t len,
                                     size_t *at)
{
    for (size_t i = 0; i < w->n_meta; i++)
        if (w->meta[i].key_len == len && memcmp(w->meta[i].key, key, len) == 0) {
            *at = i;
            return &w->meta[i];
        }
    return NULL;
}

static void put_member(jbuf *b, const ingot__wmeta *m, bool *first)
{
    if (strcmp(m->key, TZ_NAMES_KEY) == 0) {
        notice(b, m->key, "dropped: the key is reserved for the tensor names");
        return;
    }
    if (strcmp(m->key, TZ_ORDER_KEY) == 0) {
        if (!m->is_array || m->type != INGOT_META_STRING)
            notice(b, m->key, "dropped: the key is reserved for the JSON member order");
        return;
    }
    if (m->type == INGOT_META_BYTES) {
        notice(b, m->key, "dropped: JSON has no bytes type");
        return;
    }
    if (!*first) puts_(b, ",");
    *first = false;
    put_quoted(b, m->key, m->key_len);
    puts_(b, ":");
    put_value(b, m);
}

/* Members in tenzor.key_order's order first (when given), then the rest in writer order.
 * `done` has one flag per metadata entry. */
static void build_json(jbuf *b, const ingot_writer *w, bool names, uint8_t *done)
{
    bool first = true;
    size_t at;
    puts_(b, "{");
    memset(done, 0, w->n_meta + 1);
    const ingot__wmeta *ord = find_meta(w, TZ_ORDER_KEY, sizeof TZ_ORDER_KEY - 1, &at);
    if (ord && ord->is_array && ord->type == INGOT_META_STRING) {
        size_t off = 0;
        for (uint64_t k = 0; k < ord->count; k++) {
            const char *key = (const char *)ord->blob + off;
            off += (size_t)ord->lens[k];
            const ingot__wmeta *m = find_meta(w, key, (size_t)ord->lens[k], &at);
            if (!m || done[at]) continue;
            done[at] = 1;
            put_member(b, m, &first);
        }
    }
    for (size_t i = 0; i < w->n_meta; i++)
        if (!done[i]) put_member(b, &w->meta[i], &first);
    if (names) {
        if (!first) puts_(b, ",");
        puts_(b, "\"" TZ_NAMES_KEY "\":[");
        for (size_t i = 0; i < w->n_tensors; i++) {
            if (i) puts_(b, ",");
            put_quoted(b, w->tensors[i].name, w->tensors[i].name_len);
        }
        puts_(b, "]");
    }
    puts_(b, "}");
}

/* ---- ops ---- */

static ingot_status init(ingot_writer *w, ingot_error *err)
{
    wstate *s = ingot__calloc(&w->alloc, sizeof *s);
    if (!s) return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating");
    s->names = true;
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

static ingot_status set_option(ingot_writer *w, const char *key, const char *value,
                               ingot_error *err)
{
    wstate *s = w->fmt_state;
    if (strcmp(key, "names") != 0)
        return ingot__err(err, INGOT_UNSUPPORTED, INGOT_NO_OFFSET, key, strlen(key),
                          "tenzor has one option: names=true|false");
    if (!strcmp(value, "true") || !strcmp(value, "1")) s->names = true;
    else if (!strcmp(value, "false") || !strcmp(value, "0")) s->names = false;
    else
        return ingot__err(err, INGOT_BAD_METADATA, INGOT_NO_OFFSET, key, strlen(key),
                          "names=%s: expected true or false", value);
    return INGOT_OK;
}

static ingot_status tensor_hash(const ingot__wtensor *t, uint64_t *h)
{
    if (!ingot__tz_hexname(t->name, t->name_len, h)) *h = ingot__tz_fnv1a(t->name, t->name_len);
    return INGOT_OK;
}

/* What tenzor can hold: its 12 dtypes (BOOL goes in as u8), rank <= 5, u32 dimensions. */
static ingot_status check_one(const ingot__wtensor *t, ingot_error *err)
{
    if (ingot__tz_code(t->dtype) < 0 && t->dtype != INGOT_DTYPE_BOOL)
        return ingot__err(err, INGOT_UNSUPPORTED, INGOT_NO_OFFSET, t->name, t->name_len,
                          "tenzor has no %s (f32 f16 bf16 f64 i8..i64 u8..u64 only)",
                          ingot_dtype_name(t->dtype));
    if (t->rank > TZ_MAX_DIMS)
        return ingot__err(err, INGOT_UNSUPPORTED, INGOT_NO_OFFSET, t->name, t->name_len,
                          "rank %u: tenzor stores at most 5 dimensions", t->rank);
    for (uint32_t d = 0; d < t->rank; d++)
        if (t->shape[d] > UINT32_MAX)
            return ingot__err(err, INGOT_UNSUPPORTED, INGOT_NO_OFFSET, t->name, t->name_len,
                              "dimension %u is %llu: tenzor dimensions are u32", d,
                              (unsigned long long)t->shape[d]);
    return INGOT_OK;
}

static ingot_status check_tensor(ingot_writer *w, const ingot__wtensor *t, ingot_error *err)
{
    (void)w;
    return t->name ? check_one(t, err) : INGOT_OK;
}

typedef struct {
    uint64_t h;
    size_t i;
} hpair;

static int cmp_hpair(const void *a, const void *b)
{
    const hpair *x = a, *y = b;
    if (x->h != y->h) return x->h < y->h ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

static ingot_status begin(ingot_writer *w, uint64_t *total, ingot_error *err)
{
    wstate *s = w->fmt_state;
    uint64_t n = w->n_tensors;
    if (n > UINT32_MAX)
        return ingot__err(err, INGOT_LIMIT, INGOT_NO_OFFSET, 0, 0, "more than 2^32-1 tensors");
    bool any_real = false;
    for (size_t i = 0; i < n; i++) {
        ING_TRY(check_one(&w->tensors[i], err));
        if (!is_hex(&w->tensors[i])) any_real = true;
    }
    /* Hashes must be unique: lookup is by hash. */
    if (n > 1) {
        size_t hb = (size_t)n * sizeof(hpair);
        hpair *hs = ingot__alloc(&w->alloc, hb);
        if (!hs) return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating");
        for (size_t i = 0; i < n; i++) {
            tensor_hash(&w->tensors[i], &hs[i].h);
            hs[i].i = i;
        }
        qsort(hs, (size_t)n, sizeof *hs, cmp_hpair);
        ingot_status st = INGOT_OK;
        for (size_t i = 1; i < n && st == INGOT_OK; i++)
            if (hs[i].h == hs[i - 1].h) {
                const ingot__wtensor *a = &w->tensors[hs[i - 1].i], *b = &w->tensors[hs[i].i];
                st = ingot__err(err, INGOT_DUPLICATE, INGOT_NO_OFFSET, b->name, b->name_len,
                                "same FNV-1a hash as tensor '%s'", a->name);
            }
        ingot__free(&w->alloc, hs, hb);
        ING_TRY(st);
    }
    for (size_t i = 0; i < n; i++)
        if (w->tensors[i].dtype == INGOT_DTYPE_BOOL)
            ingot__writer_notice(w, "tenzor: tensor '%s': BOOL stored as u8 (tenzor has no bool)",
                                 w->tensors[i].name);
    bool names = s->names && any_real;
    if (!s->names && any_real)
        ingot__writer_notice(w, "tenzor: tensor names not recorded (names=false): only their "
                                "hashes are stored");
    uint8_t *done = ingot__alloc(&w->alloc, w->n_meta + 1);
    if (!done) return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating");
    jbuf jb = {NULL, 0, w};
    build_json(&jb, w, names, done);
    if (jb.len > UINT32_MAX) {
        ingot__free(&w->alloc, done, w->n_meta + 1);
        return ingot__err(err, INGOT_LIMIT, INGOT_NO_OFFSET, "metadata", 8,
                          "%zu bytes of JSON: metadata_size is a u32", jb.len);
    }
    uint64_t index_off, data_off, pos = 0;
    ing_round_up(TZ_HDR + (uint64_t)jb.len, 8, &index_off);
    ing_round_up(index_off + TZ_ENTRY * n, TZ_PAGE, &data_off);
    uint8_t *hdr = data_off > SIZE_MAX / 2 ? NULL : ingot__calloc(&w->alloc, (size_t)data_off);
    if (!hdr) {
        ingot__free(&w->alloc, done, w->n_meta + 1);
        return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating the header");
    }
    s->hdr = hdr;
    s->hdr_len = (size_t)data_off;
    memcpy(hdr, TZ_MAGIC, 8);
    ing_st32(hdr + 8, 1);
    ing_st32(hdr + 16, (uint32_t)n);
    ing_st64(hdr + 24, index_off);
    ing_st64(hdr + 32, data_off);
    ing_st32(hdr + 40, (uint32_t)jb.len);
    jb.out = (char *)hdr + TZ_HDR;
    jb.len = 0;
    build_json(&jb, w, names, done);
    ingot__free(&w->alloc, done, w->n_meta + 1);
    for (size_t i = 0; i < n; i++) {
        ingot__wtensor *t = &w->tensors[i];
        uint8_t *e = hdr + index_off + TZ_ENTRY * i;
        uint64_t h;
        tensor_hash(t, &h);
        ing_st64(e, h);
        int code = t->dtype == INGOT_DTYPE_BOOL ? 8 : ingot__tz_code(t->dtype);
        e[8] = (uint8_t)code;
        e[9] = (uint8_t)t->rank;
        for (uint32_t d = 0; d < t->rank; d++) ing_st32(e + 12 + 4 * d, (uint32_t)t->shape[d]);
        ing_st64(e + 32, pos);
        ing_st64(e + 40, t->nbytes);
        t->offset = data_off + pos;
        if (!ing_add(pos, t->nbytes, &pos))
            return ingot__err(err, INGOT_BAD_SIZE, INGOT_NO_OFFSET, t->name, t->name_len,
                              "file size overflows");
    }
    if (!ing_add(data_off, pos, &s->total))
        return ingot__err(err, INGOT_BAD_SIZE, INGOT_NO_OFFSET, 0, 0, "file size overflows");
    *total = s->total;
    ING_TRY(ingot__wsink_reserve(w, s->total, err));
    return ingot__wsink_write(w, hdr, (size_t)data_off, err);
}

static ingot_status before_tensor(ingot_writer *w, uint64_t i, ingot_error *err)
{
    if (w->pos != w->tensors[i].offset)
        return ingot__err(err, INGOT_MISUSE, w->pos, 0, 0, "stream position is not the tensor's");
    return INGOT_OK;
}

static ingot_status finish(ingot_writer *w, ingot_error *err)
{
    wstate *s = w->fmt_state;
    if (w->pos != s->total)
        return ingot__err(err, INGOT_MISUSE, w->pos, 0, 0, "wrote %llu bytes, layout has %llu",
                          (unsigned long long)w->pos, (unsigned long long)s->total);
    return INGOT_OK;
}

const ingot__writer_ops ingot__writer_tenzor = {
    .check_tensor = check_tensor,
    .init = init,
    .begin = begin,
    .before_tensor = before_tensor,
    .finish = finish,
    .free_state = free_state,
    .set_option = set_option,
};
