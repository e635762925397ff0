/*
 * native_write.c - .ingot v1 writer ops: lays out the header region (fixed header, tensor table,
 * name index, shape records and their dims, param ids, sorted metadata, pool, names) at begin,
 * pads each tensor to the alignment, and at finish patches the tensor checksums and the header
 * checksum. Deterministic: the same description gives the same bytes. Layout: docs/FORMAT.md,
 * native_layout.h.
 */
#include <string.h>

#include "alloc.h"
#include "checked.h"
#include "error.h"
#include "ingot/core.h"
#include "native_formats.h"
#include "native_layout.h"

typedef struct {
    uint8_t *hdr; /* the whole header region [0, data_off) */
    size_t hdr_len;
    uint64_t data_off, file_size;
} wstate;

/* ---- a small stable merge sort of indices with a context comparator (qsort has no context) ---- */

typedef int (*cmp_fn)(const void *ctx, uint32_t a, uint32_t b);

static void msort(uint32_t *v, uint32_t *tmp, size_t n, cmp_fn cmp, const void *ctx)
{
    if (n < 2) return;
    size_t h = n / 2;
    msort(v, tmp, h, cmp, ctx);
    msort(v + h, tmp, n - h, cmp, ctx);
    size_t i = 0, j = h, k = 0;
    while (i < h && j < n) tmp[k++] = cmp(ctx, v[j], v[i]) < 0 ? v[j++] : v[i++];
    while (i < h) tmp[k++] = v[i++];
    while (j < n) tmp[k++] = v[j++];
    memcpy(v, tmp, n * sizeof *v);
}

static int bcmp_len(const char *a, size_t al, const char *b, size_t bl)
{
    size_t n = al < bl ? al : bl;
    int c = n ? memcmp(a, b, n) : 0;
    return c ? c : al < bl ? -1 : al > bl ? 1 : 0;
}

static int cmp_tensor(const void *ctx, uint32_t a, uint32_t b)
{
    const ingot_writer *w = ctx;
    return bcmp_len(w->tensors[a].name, w->tensors[a].name_len, w->tensors[b].name,
                    w->tensors[b].name_len);
}

/* Shape record order (docs/FORMAT.md §5.2): dtype, rank, then the dimensions, as unsigned. */
static int cmp_shape(const void *ctx, uint32_t a, uint32_t b)
{
    const ingot_writer *w = ctx;
    const ingot__wtensor *x = &w->tensors[a], *y = &w->tensors[b];
    if (x->dtype != y->dtype) return (uint32_t)x->dtype < (uint32_t)y->dtype ? -1 : 1;
    if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
    for (uint32_t d = 0; d < x->rank; d++)
        if (x->shape[d] != y->shape[d]) return x->shape[d] < y->shape[d] ? -1 : 1;
    return 0;
}

static int cmp_meta(const void *ctx, uint32_t a, uint32_t b)
{
    const ingot_writer *w = ctx;
    return bcmp_len(w->meta[a].key, w->meta[a].key_len, w->meta[b].key, w->meta[b].key_len);
}

/* ---- pool layout: one pass computes sizes, a second writes (same code, out == NULL first) ---- */

typedef struct {
    uint8_t *out; /* NULL: measuring */
    uint64_t len;
} pool_t;

static uint64_t pool_put(pool_t *p, const void *b, uint64_t n, bool nul)
{
    uint64_t at = p->len;
    if (p->out && n) memcpy(p->out + at, b, (size_t)n);
    if (p->out && nul) p->out[at + n] = 0;
    p->len += n + (nul ? 1 : 0);
    return at;
}

static void pool_align8(pool_t *p)
{
    uint64_t pad = (8 - (p->len & 7)) & 7;
    if (p->out) memset(p->out + p->len, 0, (size_t)pad);
    p->len += pad;
}

/* Whether string/bytes array m is written packed (docs/FORMAT.md §7.1, §8): unless the writer
 * was asked for v1.0, whenever its blob (the elements, each string with its NUL) fits u32
 * offsets. */
static bool packs(const ingot_writer *w, const ingot__wmeta *m)
{
    if (!m->is_array || !m->lens || w->ingot_v1_0) return false;
    uint64_t blob = m->blob_len;
    return blob <= UINT32_MAX && m->count <= UINT32_MAX - blob &&
           blob + (m->type == INGOT_META_STRING ? m->count : 0) <= UINT32_MAX;
}

/* Lays out the pool (metadata keys and values in key order); with mt set, also fills the
 * metadata entries. */
static void layout_pool(ingot_writer *w, pool_t *p, uint8_t *mt, const uint32_t *meta_order)
{
    for (size_t k = 0; k < w->n_meta; k++) {
        const ingot__wmeta *m = &w->meta[meta_order ? meta_order[k] : k];
        uint8_t *e = mt ? mt + k * ING_MET_SIZE : NULL;
        uint64_t koff = pool_put(p, m->key, m->key_len, true);
        uint64_t value = m->scalar;
        bool str = m->type == INGOT_META_STRING;
        if (!m->is_array && (m->type == INGOT_META_STRING || m->type == INGOT_META_BYTES)) {
            value = pool_put(p, m->blob, m->blob_len, str);
        } else if (packs(w, m)) {
            /* the column of count + 1 offsets relative to the blob, then the blob */
            pool_align8(p);
            value = p->len;
            uint64_t col = p->len, at = 0, rel = 0;
            p->len += (m->count + 1) * 4;
            if (p->out) ing_st32(p->out + col, 0);
            for (uint64_t j = 0; j < m->count; j++) {
                pool_put(p, m->blob + at, m->lens[j], str);
                at += m->lens[j];
                rel += m->lens[j] + (str ? 1 : 0);
                if (p->out) ing_st32(p->out + col + 4 * (j + 1), (uint32_t)rel);
            }
        } else if (m->is_array && m->lens) {
            pool_align8(p);
            value = p->len;
            uint64_t refs = p->len;
            p->len += m->count * ING_STRREF_SIZE;
            uint64_t at = 0;
            for (uint64_t j = 0; j < m->count; j++) {
                uint64_t so = pool_put(p, m->blob + at, m->lens[j], str);
                if (p->out) {
                    ing_st64(p->out + refs + j * ING_STRREF_SIZE, so);
                    ing_st64(p->out + refs + j * ING_STRREF_SIZE + 8, m->lens[j]);
                }
                at += m->lens[j];
            }
        } else if (m->is_array) {
            pool_align8(p);
            value = pool_put(p, m->blob, m->blob_len, false);
        }
        if (e) {
            ing_st64(e + MET_KEY_OFF, koff);
            ing_st32(e + MET_KEY_LEN, m->key_len);
            e[MET_TYPE] = (uint8_t)m->type;
            e[MET_FLAGS] = (uint8_t)((m->is_array ? MET_FLAG_ARRAY : 0) |
                                     (packs(w, m) ? MET_FLAG_PACKED : 0));
            ing_st64(e + MET_COUNT, m->count);
            ing_st64(e + MET_VALUE, value);
        }
    }
}

static void free_state(ingot_writer *w)
{
    wstate *s = w->fmt_state;
    if (!s) return;
    ingot__free(&w->alloc, s->hdr, s->hdr_len);
    ingot__free(&w->alloc, s, sizeof *s);
    w->fmt_state = NULL;
}

/* Orders the tensors by name (the name index), the metadata by key (the pool), and the tensors by
 * shape, where each run of equal shapes shares one record: shape_of[i] is tensor i's record. One
 * allocation holds the four arrays and the sorts' scratch. */
typedef struct {
    uint32_t *buf, *names, *meta, *by_shape, *shape_of;
    size_t bytes;
    uint64_t n_shapes, n_dims;
} orders;

static ingot_status make_orders(ingot_writer *w, orders *o, ingot_error *err)
{
    size_t n = w->n_tensors, m = w->n_meta;
    o->bytes = (3 * n + m + (n > m ? n : m)) * sizeof(uint32_t) + 4;
    o->buf = ingot__alloc(&w->alloc, o->bytes);
    if (!o->buf) return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating the index");
    o->names = o->buf;
    o->meta = o->names + n;
    o->by_shape = o->meta + m;
    o->shape_of = o->by_shape + n;
    uint32_t *tmp = o->shape_of + n;
    for (uint32_t i = 0; i < n; i++) o->names[i] = o->by_shape[i] = i;
    for (uint32_t i = 0; i < m; i++) o->meta[i] = i;
    msort(o->names, tmp, n, cmp_tensor, w);
    msort(o->meta, tmp, m, cmp_meta, w);
    msort(o->by_shape, tmp, n, cmp_shape, w);
    o->n_shapes = o->n_dims = 0;
    for (size_t k = 0; k < n; k++) {
        uint32_t i = o->by_shape[k];
        if (k == 0 || cmp_shape(w, o->by_shape[k - 1], i) != 0) {
            o->n_shapes++;
            o->n_dims += w->tensors[i].rank;
        }
        o->shape_of[i] = (uint32_t)(o->n_shapes - 1);
    }
    return INGOT_OK;
}

static ingot_status begin(ingot_writer *w, uint64_t *total, ingot_error *err)
{
    uint64_t n = w->n_tensors, m = w->n_meta, names_size = 0, n_params = 0;
    if (n > UINT32_MAX)
        return ingot__err(err, INGOT_LIMIT, INGOT_NO_OFFSET, 0, 0, "more than 2^32-1 tensors");
    for (size_t i = 0; i < n; i++) {
        if (w->tensors[i].has_param_id) n_params = n;
        names_size += w->tensors[i].name_len + 1;
    }
    /* Entries address names, and records their dims, with 32-bit fields. */
    if (names_size > UINT32_MAX)
        return ingot__err(err, INGOT_LIMIT, INGOT_NO_OFFSET, 0, 0, "more than 2^32-1 name bytes");
    orders o = {0};
    ING_TRY(make_orders(w, &o, err));
    if (o.n_dims > UINT32_MAX) {
        ingot__free(&w->alloc, o.buf, o.bytes);
        return ingot__err(err, INGOT_LIMIT, INGOT_NO_OFFSET, 0, 0,
                          "more than 2^32-1 dimensions in distinct shapes");
    }
    uint64_t tt = ING_HDR_SIZE, ni = tt + n * ING_TEN_SIZE, sh = ni + ((n * 4 + 7) & ~7ull);
    uint64_t dm = sh + o.n_shapes * ING_SHP_SIZE, pa = dm + o.n_dims * 8;
    uint64_t mt = pa + n_params * 8, po = mt + m * ING_MET_SIZE;
    /* The pool is laid out in key order, and its padding depends on that order, so measuring
     * and filling use the same one. */
    pool_t measure = {NULL, 0};
    layout_pool(w, &measure, NULL, o.meta);
    uint64_t names = po + measure.len;
    uint64_t data_off, pos = 0;
    if (!ing_round_up(names + names_size, w->alignment, &data_off) || data_off > SIZE_MAX / 2) {
        ingot__free(&w->alloc, o.buf, o.bytes);
        return ingot__err(err, INGOT_LIMIT, INGOT_NO_OFFSET, 0, 0, "header region too large");
    }
    for (size_t i = 0; i < n; i++) {
        ingot__wtensor *t = &w->tensors[i];
        uint64_t off;
        if (!ing_round_up(pos, w->alignment, &off) || !ing_add(off, t->nbytes, &pos)) {
            ingot__free(&w->alloc, o.buf, o.bytes);
            return ingot__err(err, INGOT_BAD_SIZE, INGOT_NO_OFFSET, t->name, t->name_len,
                              "file size overflows");
        }
        t->offset = data_off + off;
    }
    uint64_t file_size;
    wstate *s = NULL;
    uint8_t *hdr = NULL;
    if (!ing_add(data_off, pos, &file_size)) {
        ingot__free(&w->alloc, o.buf, o.bytes);
        return ingot__err(err, INGOT_BAD_SIZE, INGOT_NO_OFFSET, 0, 0, "file size overflows");
    }
    s = ingot__calloc(&w->alloc, sizeof *s);
    hdr = ingot__calloc(&w->alloc, (size_t)data_off);
    if (!s || !hdr) {
        ingot__free(&w->alloc, s, sizeof *s);
        ingot__free(&w->alloc, o.buf, o.bytes);
        ingot__free(&w->alloc, hdr, (size_t)data_off);
        return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating the header");
    }
    s->hdr = hdr;
    s->hdr_len = (size_t)data_off;
    s->data_off = data_off;
    s->file_size = file_size;
    w->fmt_state = s;

    memcpy(hdr + HDR_MAGIC, ING_MAGIC, ING_MAGIC_LEN);
    ing_st16(hdr + HDR_MAJOR, ING_VERSION_MAJOR);
    /* minor 1 and its required flag only when an array is packed: any other file is v1.0 */
    bool packed = false;
    for (size_t k = 0; k < m; k++) packed |= packs(w, &w->meta[k]);
    ing_st16(hdr + HDR_MINOR, packed ? 1 : 0);
    ing_st32(hdr + HDR_FLAGS_REQUIRED, packed ? ING_FREQ_PACKED : 0);
    ing_st32(hdr + HDR_HEADER_SIZE, ING_HDR_SIZE);
    ing_st32(hdr + HDR_ALIGNMENT, w->alignment);
    ing_st64(hdr + HDR_FILE_SIZE, file_size);
    ing_st64(hdr + HDR_N_TENSORS, n);
    ing_st64(hdr + HDR_N_META, m);
    ing_st64(hdr + HDR_N_SHAPES, o.n_shapes);
    ing_st64(hdr + HDR_N_DIMS, o.n_dims);
    ing_st64(hdr + HDR_N_PARAMS, n_params);
    ing_st64(hdr + HDR_TENSOR_TABLE, tt);
    ing_st64(hdr + HDR_NAME_INDEX, ni);
    ing_st64(hdr + HDR_SHAPES, sh);
    ing_st64(hdr + HDR_DIMS, dm);
    ing_st64(hdr + HDR_PARAMS, pa);
    ing_st64(hdr + HDR_META_TABLE, mt);
    ing_st64(hdr + HDR_POOL, po);
    ing_st64(hdr + HDR_POOL_SIZE, measure.len);
    ing_st64(hdr + HDR_NAMES, names);
    ing_st64(hdr + HDR_NAMES_SIZE, names_size);
    ing_st64(hdr + HDR_DATA, data_off);
    ing_st64(hdr + HDR_DATA_SIZE, pos);

    /* Shape records in sorted order, each with its dims; record k is written by the first tensor
     * of the sorted run that uses it. */
    uint64_t dim = 0, next_rec = 0;
    for (size_t k = 0; k < n; k++) {
        uint32_t i = o.by_shape[k];
        if (o.shape_of[i] != next_rec) continue;
        const ingot__wtensor *t = &w->tensors[i];
        uint8_t *r = hdr + sh + next_rec++ * ING_SHP_SIZE;
        ing_st16(r + SHP_DTYPE, (uint16_t)t->dtype);
        r[SHP_RANK] = (uint8_t)t->rank;
        ing_st32(r + SHP_DIMS_AT, (uint32_t)dim);
        ing_st64(r + SHP_NBYTES, t->nbytes);
        for (uint32_t d = 0; d < t->rank; d++) ing_st64(hdr + dm + 8 * dim++, t->shape[d]);
    }
    uint64_t name_at = 0;
    for (size_t i = 0; i < n; i++) {
        const ingot__wtensor *t = &w->tensors[i];
        uint8_t *e = hdr + tt + i * ING_TEN_SIZE;
        ing_st32(e + TEN_NAME_OFF, (uint32_t)name_at);
        ing_st32(e + TEN_SHAPE, o.shape_of[i]);
        ing_st64(e + TEN_OFFSET, t->offset - data_off);
        ing_st32(e + TEN_FLAGS, t->has_param_id ? TEN_FLAG_PARAM_ID : 0);
        if (t->has_param_id) ing_st64(hdr + pa + 8 * i, t->param_id);
        memcpy(hdr + names + name_at, t->name, t->name_len); /* the NUL: calloc'd */
        name_at += t->name_len + 1;
    }
    for (size_t k = 0; k < n; k++) ing_st32(hdr + ni + 4 * k, o.names[k]);
    pool_t fill = {hdr + po, 0};
    layout_pool(w, &fill, hdr + mt, o.meta);
    ingot__free(&w->alloc, o.buf, o.bytes);
    if (fill.len != measure.len)
        return ingot__err(err, INGOT_MISUSE, INGOT_NO_OFFSET, 0, 0, "pool layout mismatch");

    /* Placeholder now (checksums are zero); finish() patches the header and tensor table. */
    *total = file_size;
    ING_TRY(ingot__wsink_reserve(w, file_size, err));
    return ingot__wsink_write(w, hdr, (size_t)data_off, err);
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
    wstate *s = w->fmt_state;
    if (w->pos != s->file_size)
        return ingot__err(err, INGOT_MISUSE, w->pos, 0, 0, "wrote %llu bytes, layout has %llu",
                          (unsigned long long)w->pos, (unsigned long long)s->file_size);
    uint8_t *tt = s->hdr + ING_HDR_SIZE;
    for (size_t i = 0; i < w->n_tensors; i++)
        ing_st32(tt + i * ING_TEN_SIZE + TEN_CRC, w->tensors[i].crc);
    uint32_t crc = ingot_crc32c(0, s->hdr, HDR_CRC);
    crc = ingot_crc32c(crc, s->hdr + ING_HDR_SIZE, s->hdr_len - ING_HDR_SIZE);
    ing_st32(s->hdr + HDR_CRC, crc);
    /* Only the fixed header and the tensor table changed. */
    return ingot__wsink_pwrite(w, 0, s->hdr, ING_HDR_SIZE + w->n_tensors * ING_TEN_SIZE, err);
}

/* Alignment: 0 means the default 256; the format allows powers of two 64..65536. */
static ingot_status init(ingot_writer *w, ingot_error *err)
{
    if (w->alignment == 0) w->alignment = 256;
    if (w->alignment < 64 || w->alignment > 65536)
        return ingot__err(err, INGOT_BAD_ALIGN, INGOT_NO_OFFSET, 0, 0,
                          "alignment %u is not a power of two in 64..65536", w->alignment);
    return INGOT_OK;
}

/* Option "version": "1.1" (the default: string/bytes arrays packed) or "1.0" (the reference
 * form, for readers before minor 1); the same as ingot_writer_opts.ingot_v1_0. */
static ingot_status set_option(ingot_writer *w, const char *key, const char *value,
                               ingot_error *err)
{
    if (strcmp(key, "version") != 0)
        return ingot__err(err, INGOT_UNSUPPORTED, INGOT_NO_OFFSET, key, strlen(key),
                          "ingot has one option, \"version\"");
    if (strcmp(value, "1.0") != 0 && strcmp(value, "1.1") != 0)
        return ingot__err(err, INGOT_BAD_METADATA, INGOT_NO_OFFSET, key, strlen(key),
                          "version must be 1.0 or 1.1, not \"%s\"", value);
    w->ingot_v1_0 = value[2] == '0';
    return INGOT_OK;
}

const ingot__writer_ops ingot__writer_native = {
    .init = init,
    .check_tensor = NULL,
    .begin = begin,
    .before_tensor = before_tensor,
    .finish = finish,
    .free_state = free_state,
    .set_option = set_option,
};
