/*
 * gguf_split.c - llama.cpp's split GGUF models (gguf-split, ../shared/formats/gguf.md): files
 * "<prefix>-00001-of-0000N.gguf" .. "-0000N-of-0000N.gguf", each a complete GGUF file holding some
 * of the tensors, with the keys split.no (u16, 0-based), split.count (u16, N) and
 * split.tensors.count (i32, the tensors of all of them); the first also holds the model's
 * metadata. Opening any one of them opens all N (beside it, by that naming, as llama.cpp finds
 * them) and presents one model: the tensors of every shard in shard order, each view pointing
 * into its shard's mapping (offset within the shard), the first shard's metadata without the
 * split.* keys. The content decides: a GGUF file without split.count, or opened from a buffer,
 * is declined and opens as plain GGUF. Read-only (no writer).
 */
#include <string.h>

#include "alloc.h"
#include "error.h"
#include "file.h"
#include "gguf_format.h"
#include "order.h"

typedef struct {
    ingot_file **sh;    /* shards, in order */
    uint32_t nsh;
    uint64_t *first;    /* first global tensor index of each shard (nsh + 1 entries) */
    uint64_t n;         /* tensors */
    uint32_t *by_name;  /* 2n: global indices sorted by name, then scratch */
    uint64_t *meta_map; /* view index -> index in shard 0's metadata */
    uint64_t nm;        /* entries of the view (shard 0's without split.*) */
    uint64_t nm_alloc;  /* entries allocated in meta_map */
} split_state;

#define SP(f) ((const split_state *)(f)->state)

static int probe(const uint8_t *head, size_t n)
{
    /* above plain GGUF: open() declines whatever is not a split model */
    return n >= 4 && memcmp(head, "GGUF", 4) == 0 ? 101 : 0;
}

/* "<prefix>-%05d-of-%05d.gguf": the prefix length and the two numbers; false if the name has
 * another form. */
static bool split_name(const char *path, size_t len, size_t *prefix, uint32_t *no, uint32_t *of)
{
    static const char tail[] = "-00000-of-00000.gguf";
    size_t tl = sizeof tail - 1;
    if (len < tl + 1) return false;
    const char *t = path + len - tl;
    uint32_t a = 0, b = 0;
    for (size_t i = 0; i < tl; i++) {
        if (tail[i] == '0') {
            if (t[i] < '0' || t[i] > '9') return false;
            if (i < 6) a = a * 10 + (uint32_t)(t[i] - '0');
            else b = b * 10 + (uint32_t)(t[i] - '0');
        } else if (t[i] != tail[i]) {
            return false;
        }
    }
    if (a < 1 || b < 1 || a > b) return false;
    *prefix = len - tl, *no = a, *of = b;
    return true;
}

static ingot_status get_u(const ingot_file *g, const char *key, uint64_t *v)
{
    ingot_meta_info m;
    ING_TRY(ingot_file_meta_find(g, key, &m));
    if (m.is_array) return INGOT_WRONG_TYPE;
    switch (m.type) {
    case INGOT_META_U8: case INGOT_META_U16: case INGOT_META_U32: case INGOT_META_U64:
        *v = m.v.u;
        return INGOT_OK;
    case INGOT_META_I8: case INGOT_META_I16: case INGOT_META_I32: case INGOT_META_I64:
        if (m.v.i < 0) return INGOT_BAD_METADATA;
        *v = (uint64_t)m.v.i;
        return INGOT_OK;
    default: return INGOT_WRONG_TYPE;
    }
}

static void free_state(const ingot_allocator *a, split_state *s)
{
    if (!s) return;
    for (uint32_t k = 0; s->sh && k < s->nsh; k++) ingot_file_close(s->sh[k]);
    if (s->sh) ingot__free(a, s->sh, (size_t)s->nsh * sizeof *s->sh);
    if (s->first) ingot__free(a, s->first, ((size_t)s->nsh + 1) * sizeof *s->first);
    if (s->by_name) ingot__free(a, s->by_name, (size_t)(s->n ? s->n : 1) * 2 * sizeof *s->by_name);
    if (s->meta_map)
        ingot__free(a, s->meta_map, (size_t)(s->nm_alloc ? s->nm_alloc : 1) * sizeof *s->meta_map);
    ingot__free(a, s, sizeof *s);
}

/* Shard and local index of global tensor i. */
static const ingot_file *locate(const split_state *s, uint64_t i, uint64_t *local)
{
    uint32_t lo = 0, hi = s->nsh; /* the last shard whose first <= i */
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (s->first[mid] <= i) lo = mid;
        else hi = mid;
    }
    *local = i - s->first[lo];
    return s->sh[lo];
}

/* The name of global tensor i (the shard's tensor table holds it while the shards are open). */
static const void *name_of(const void *ctx, uint32_t i, size_t *len)
{
    const split_state *s = ctx;
    ingot_tensor_info t;
    uint64_t l;
    const ingot_file *g = locate(s, i, &l);
    ingot_file_tensor_at(g, l, &t);
    *len = t.name_len;
    return t.name;
}

static int cmp_name(const void *ctx, uint32_t a, uint32_t b)
{
    size_t la, lb;
    const void *na = name_of(ctx, a, &la), *nb = name_of(ctx, b, &lb);
    return ingot__bytes_cmp(na, la, nb, lb);
}

static bool is_split_key(const char *k, size_t n) { return n >= 6 && memcmp(k, "split.", 6) == 0; }

static ingot_status open_split(ingot_file *f, ingot_error *err)
{
    size_t prefix;
    uint32_t no, of;
    if (!f->path || !split_name(f->path, f->path_len, &prefix, &no, &of)) return INGOT__DECLINED;
    split_state *s = ingot__calloc(&f->alloc, sizeof *s);
    if (!s) return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating shards");
    ingot_status st = INGOT_OK;
    s->nsh = of;
    s->sh = ingot__calloc(&f->alloc, (size_t)of * sizeof *s->sh);
    s->first = ingot__calloc(&f->alloc, ((size_t)of + 1) * sizeof *s->first);
    char *path = ingot__alloc(&f->alloc, f->path_len + 1);
    if (!s->sh || !s->first || !path) {
        st = ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating shards");
        goto fail;
    }
    static const ingot__format *const only[] = {&ingot__format_gguf, NULL};
    ingot_open_opts o = f->opts;
    o.format = NULL;
    if (o.verify == INGOT_VERIFY_ALL) o.verify = INGOT_VERIFY_HEADER; /* the split verifies */
    o.allocator = &f->alloc;
    uint64_t declared = 0;
    for (uint32_t k = 0; k < of; k++) {
        memcpy(path, f->path, prefix);
        ingot__fmt(path + prefix, f->path_len + 1 - prefix, "-%05u-of-%05u.gguf", k + 1, of);
        st = ingot__file_open_path(only, path, &o, &s->sh[k], err);
        if (st != INGOT_OK) {
            if (err) { /* keep the code and message, name the shard */
                char msg[sizeof err->msg];
                memcpy(msg, err->msg, sizeof msg);
                const char *base = path + prefix;
                while (base > path && base[-1] != '/') base--;
                ingot__err(err, st, err->offset, base, ing_strlen(base), "shard: %s", msg);
            }
            goto fail;
        }
        uint64_t sno = 0, scount = 0, stotal = 0;
        ingot_status a = get_u(s->sh[k], "split.no", &sno);
        ingot_status b = get_u(s->sh[k], "split.count", &scount);
        if (k + 1 == no && a == INGOT_NOT_FOUND && b == INGOT_NOT_FOUND) {
            st = INGOT__DECLINED; /* only named like a split: a plain GGUF file */
            goto fail;
        }
        if (a != INGOT_OK || b != INGOT_OK || sno != k || scount != of) {
            st = ingot__err(err, INGOT_BAD_METADATA, INGOT_NO_OFFSET, path + prefix + 1,
                            ing_strlen(path + prefix + 1),
                            "split.no/split.count %s; the name says shard %u of %u",
                            a != INGOT_OK || b != INGOT_OK ? "missing or not integers"
                                                           : "disagree with the file name",
                            k + 1, of);
            goto fail;
        }
        if (get_u(s->sh[k], "split.tensors.count", &stotal) == INGOT_OK) {
            if (k && stotal != declared) {
                st = ingot__err(err, INGOT_BAD_METADATA, INGOT_NO_OFFSET, "split.tensors.count",
                                19, "shard %u says %llu tensors, shard 1 says %llu", k + 1,
                                (unsigned long long)stotal, (unsigned long long)declared);
                goto fail;
            }
            declared = stotal;
        }
        s->first[k] = s->n;
        s->n += ingot_file_tensor_count(s->sh[k]);
    }
    s->first[of] = s->n;
    if (declared != s->n) {
        st = ingot__err(err, INGOT_BAD_METADATA, INGOT_NO_OFFSET, "split.tensors.count", 19,
                        "split.tensors.count says %llu tensors, the %u shards hold %llu",
                        (unsigned long long)declared, of, (unsigned long long)s->n);
        goto fail;
    }
    if (s->n > UINT32_MAX - 1) {
        st = ingot__err(err, INGOT_LIMIT, INGOT_NO_OFFSET, 0, 0, "too many tensors");
        goto fail;
    }
    s->by_name = ingot__alloc(&f->alloc, (size_t)(s->n ? s->n : 1) * 2 * sizeof *s->by_name);
    uint64_t nm0 = ingot_file_meta_count(s->sh[0]);
    s->nm_alloc = nm0;
    s->meta_map = ingot__alloc(&f->alloc, (size_t)(nm0 ? nm0 : 1) * sizeof *s->meta_map);
    if (!s->by_name || !s->meta_map) {
        st = ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating the name index");
        goto fail;
    }
    for (uint32_t i = 0; i < s->n; i++) s->by_name[i] = i;
    ingot__index_sort(s->by_name, s->by_name + s->n, (size_t)s->n, cmp_name, s);
    for (uint64_t k = 1; k < s->n; k++)
        if (cmp_name(s, s->by_name[k - 1], s->by_name[k]) == 0) {
            ingot_tensor_info t;
            uint64_t l;
            const ingot_file *g_l = locate(s, s->by_name[k], &l);
            ingot_file_tensor_at(g_l, l, &t);
            st = ingot__err(err, INGOT_DUPLICATE, INGOT_NO_OFFSET, t.name, t.name_len,
                            "tensor in two shards");
            goto fail;
        }
    for (uint64_t i = 0; i < nm0; i++) {
        ingot_meta_info m;
        ingot_file_meta_at(s->sh[0], i, &m);
        if (!is_split_key(m.key, m.key_len)) s->meta_map[s->nm++] = i;
    }
    ingot__free(&f->alloc, path, f->path_len + 1);
    f->state = s;
    f->alignment = ingot_file_alignment(s->sh[0]);
    for (uint32_t k = 1; k < of; k++)
        if (ingot_file_alignment(s->sh[k]) < f->alignment)
            f->alignment = ingot_file_alignment(s->sh[k]);
    ingot__fmt(f->version, sizeof f->version, "%s", ingot_file_version(s->sh[0]));
    return INGOT_OK;
fail:
    if (path) ingot__free(&f->alloc, path, f->path_len + 1);
    free_state(&f->alloc, s);
    return st;
}

static void close_split(ingot_file *f)
{
    free_state(&f->alloc, f->state);
    f->state = NULL;
}

static uint64_t tensor_count(const ingot_file *f) { return SP(f)->n; }

static ingot_status tensor_at(const ingot_file *f, uint64_t i, ingot_tensor_info *out)
{
    const split_state *s = SP(f);
    if (i >= s->n) {
        memset(out, 0, sizeof *out);
        return INGOT_RANGE;
    }
    uint64_t l;
    const ingot_file *g = locate(s, i, &l);
    ING_TRY(ingot_file_tensor_at(g, l, out));
    out->index = (uint32_t)i;
    return INGOT_OK;
}

static ingot_status tensor_find(const ingot_file *f, const char *name, size_t len,
                                ingot_tensor_info *out)
{
    const split_state *s = SP(f);
    uint32_t i;
    if (ingot__index_find(s->by_name, (size_t)s->n, name_of, s, name, len, &i))
        return tensor_at(f, i, out);
    memset(out, 0, sizeof *out);
    return INGOT_NOT_FOUND;
}

static ingot_status tensor_read(const ingot_file *f, uint64_t i, uint64_t off, void *dst, size_t n,
                                ingot_error *err)
{
    const split_state *s = SP(f);
    if (i >= s->n) return INGOT_RANGE;
    uint64_t l;
    const ingot_file *g = locate(s, i, &l);
    return ingot_file_tensor_read(g, l, off, dst, n, err);
}

static ingot_status tensor_verify(const ingot_file *f, uint64_t i, ingot_error *err)
{
    const split_state *s = SP(f);
    if (i >= s->n) return INGOT_RANGE;
    uint64_t l;
    const ingot_file *g = locate(s, i, &l);
    return ingot_file_tensor_verify(g, l, err);
}

static uint64_t meta_count(const ingot_file *f) { return SP(f)->nm; }

static ingot_status meta_at(const ingot_file *f, uint64_t i, ingot_meta_info *out)
{
    const split_state *s = SP(f);
    if (i >= s->nm) {
        memset(out, 0, sizeof *out);
        return INGOT_RANGE;
    }
    ING_TRY(ingot_file_meta_at(s->sh[0], s->meta_map[i], out));
    out->index = i;
    return INGOT_OK;
}

static ingot_status meta_find(const ingot_file *f, const char *key, size_t len,
                              ingot_meta_info *out)
{
    const split_state *s = SP(f);
    memset(out, 0, sizeof *out);
    if (is_split_key(key, len)) return INGOT_NOT_FOUND;
    /* the view index of the entry: shard 0's index mapped back (split.* keys are few) */
    for (uint64_t i = 0; i < s->nm; i++) {
        ingot_meta_info m;
        ingot_file_meta_at(s->sh[0], s->meta_map[i], &m);
        if (m.key_len == len && memcmp(m.key, key, len) == 0) {
            *out = m;
            out->index = i;
            return INGOT_OK;
        }
    }
    return INGOT_NOT_FOUND;
}

static ingot_status meta_array_read(const ingot_file *f, uint64_t index, ingot_meta_type type,
                                    uint64_t first, uint64_t n, void *dst)
{
    const split_state *s = SP(f);
    if (index >= s->nm) return INGOT_RANGE;
    return ingot_file_meta_array_read(s->sh[0], s->meta_map[index], type, first, n, dst);
}

static ingot_status meta_array_string(const ingot_file *f, uint64_t index, uint64_t elem,
                                      const char **str, size_t *len)
{
    const split_state *s = SP(f);
    if (index >= s->nm) return INGOT_RANGE;
    return ingot_file_meta_array_string(s->sh[0], s->meta_map[index], elem, str, len);
}

const ingot__format ingot__format_gguf_split = {
    .name = "gguf-split",
    .extensions = NULL,
    .probe = probe,
    .open = open_split,
    .close = close_split,
    .tensor_count = tensor_count,
    .tensor_at = tensor_at,
    .tensor_find = tensor_find,
    .tensor_read = tensor_read,
    .tensor_verify = tensor_verify,
    .checks = INGOT_CHECK_PADDING,
    .meta_count = meta_count,
    .meta_at = meta_at,
    .meta_find = meta_find,
    .meta_array_read = meta_array_read,
    .meta_array_string = meta_array_string,
    .writer = NULL,
};
