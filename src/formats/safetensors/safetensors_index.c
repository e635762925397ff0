/*
 * safetensors_index.c - sharded checkpoints: "<stem>.safetensors.index.json" (HF convention,
 * ../shared/formats/safetensors.md §5), detected by content (a JSON object with "weight_map"):
 *
 *   {"metadata": {"total_size": N, ...}, "weight_map": {"<tensor>": "<shard file>", ...}}
 *
 * Opening it opens every shard named in weight_map (beside the index; plain file names only) as a
 * safetensors file with its own descriptor and mapping, and presents one logical file: tensors in
 * weight_map order, each view pointing into its shard's mapping (offset is within the shard).
 * Reads and verification go to the right shard through the tensor_read / tensor_verify hooks.
 * weight_map is authoritative: a tensor it names must be in that shard; unindexed extra tensors in
 * a shard are not exposed. Metadata is that of the first shard (by file name).
 */
#include <string.h>

#include "alloc.h"
#include "checked.h"
#include "error.h"
#include "json.h"
#include "safetensors_format.h"
#include "st_internal.h"

typedef struct {
    const char *fname; /* pool, NUL-terminated */
    uint32_t flen;
    ingot_file *sf;
} ishard;

typedef struct {
    const char *name; /* pool */
    uint32_t name_len;
    const char *fname;
    uint32_t flen;
    uint32_t hpos;
    uint32_t shard;
    uint64_t idx; /* tensor index inside the shard */
} ient;

typedef struct {
    ient *t;
    size_t n, cap;
    ishard *sh;
    size_t nsh;
    uint32_t *by_name; /* 2n: sorted names, then scratch */
    size_t by_name_bytes;
    char *pool;
    size_t pool_len, pool_cap;
    size_t meta_shard;
} ix_state;

#define IX(f) ((const ix_state *)(f)->state)

static int probe(const uint8_t *head, size_t n)
{
    size_t i = 0;
    while (i < n && (head[i] == ' ' || head[i] == '\n' || head[i] == '\r' || head[i] == '\t')) i++;
    if (i >= n || head[i] != '{') return 0;
    /* The object's first member name (or its end) follows: rules out a safetensors file whose
     * 8-byte header length happens to begin with 0x7B. */
    size_t k = i + 1;
    while (k < n && (head[k] == ' ' || head[k] == '\n' || head[k] == '\r' || head[k] == '\t')) k++;
    if (k < n && head[k] != '"' && head[k] != '}') return 0;
    static const char wm[] = "\"weight_map\"", md[] = "\"metadata\"";
    bool has_md = false;
    for (; i + sizeof wm - 1 <= n; i++) {
        if (memcmp(head + i, wm, sizeof wm - 1) == 0) return 90;
        if (!has_md && i + sizeof md - 1 <= n && memcmp(head + i, md, sizeof md - 1) == 0)
            has_md = true;
    }
    return has_md ? 20 : 0; /* weight_map may lie past the probe window */
}

static void free_state(const ingot_allocator *a, ix_state *s)
{
    if (!s) return;
    for (size_t k = 0; k < s->nsh; k++) ingot_file_close(s->sh[k].sf);
    ingot__free(a, s->sh, s->n * sizeof *s->sh + sizeof *s->sh);
    ingot__free(a, s->t, s->cap * sizeof *s->t);
    ingot__free(a, s->by_name, s->by_name_bytes);
    ingot__free(a, s->pool, s->pool_cap);
    ingot__free(a, s, sizeof *s);
}

static ingot_status put(ix_state *s, const ingot__json_tok *t, const char **out, ingot_error *err)
{
    if (t->dlen + 1 > s->pool_cap - s->pool_len)
        return ingot__err(err, INGOT_LIMIT, t->pos, "index", 5, "string pool exhausted");
    char *d = s->pool + s->pool_len;
    ING_TRY(ingot__json_str(t, d, t->dlen, NULL, err));
    d[t->dlen] = 0;
    s->pool_len += t->dlen + 1;
    *out = d;
    return INGOT_OK;
}

static bool plain_file_name(const char *s, size_t n)
{
    if (n == 0 || n > 255) return false;
    if ((n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.')) return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] == '/' || s[i] == '\\' || s[i] == 0) return false;
    return true;
}

static ingot_status parse_map(ingot_file *f, ix_state *s, ingot__json *j, ingot_error *err)
{
    ingot__json_tok t, v;
    ING_TRY(ingot__json_next(j, &t, err));
    if (t.type != ING_JSON_OBJECT)
        return ingot__err(err, INGOT_BAD_METADATA, t.pos, "weight_map", 10,
                          "weight_map is not an object");
    for (;;) {
        ING_TRY(ingot__json_next(j, &t, err));
        if (t.type == ING_JSON_OBJECT_END) return INGOT_OK;
        ING_TRY(ingot__json_next(j, &v, err));
        if (t.dlen == 0 || t.dlen > ST_MAX_NAME || (t.flags & ING_JSON_HAS_NUL))
            return ingot__err(err, INGOT_BAD_NAME, t.pos, "weight_map", 10,
                              "tensor name empty, too long or with NUL");
        if (v.type != ING_JSON_STRING)
            return ingot__err(err, INGOT_WRONG_TYPE, v.pos, "weight_map", 10,
                              "shard file name is not a string");
        if (s->n == s->cap) {
            size_t nc = s->cap ? s->cap * 2 : 256;
            void *p = s->t;
            if (!ingot__grow(&f->alloc, &p, s->cap * sizeof *s->t, nc * sizeof *s->t))
                return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating the map");
            s->t = p;
            s->cap = nc;
        }
        ient *e = &s->t[s->n];
        memset(e, 0, sizeof *e);
        ING_TRY(put(s, &t, &e->name, err));
        e->name_len = (uint32_t)t.dlen;
        ING_TRY(put(s, &v, &e->fname, err));
        e->flen = (uint32_t)v.dlen;
        e->hpos = (uint32_t)t.pos;
        if (!plain_file_name(e->fname, e->flen))
            return ingot__err(err, INGOT_BAD_PATH, v.pos, e->name, e->name_len,
                              "shard \"%.*s\" is not a plain file name beside the index",
                              (int)(e->flen > 64 ? 64 : e->flen), e->fname);
        s->n++;
    }
}

static const void *name_of(const void *ctx, uint32_t i, size_t *len)
{
    const ix_state *s = ctx;
    *len = s->t[i].name_len;
    return s->t[i].name;
}

static int cmp_name(const void *ctx, uint32_t a, uint32_t b)
{
    const ix_state *s = ctx;
    return ingot__bytes_cmp(s->t[a].name, s->t[a].name_len, s->t[b].name, s->t[b].name_len);
}

static int cmp_fname(const void *ctx, uint32_t a, uint32_t b)
{
    const ix_state *s = ctx;
    return ingot__bytes_cmp(s->t[a].fname, s->t[a].flen, s->t[b].fname, s->t[b].flen);
}

static ingot_status open_shards(ingot_file *f, ix_state *s, uint32_t *order, uint32_t *tmp,
                                ingot_error *err)
{
    for (uint32_t i = 0; i < s->n; i++) order[i] = i;
    ingot__index_sort(order, tmp, s->n, cmp_fname, s);
    s->sh = ingot__calloc(&f->alloc, s->n * sizeof *s->sh + sizeof *s->sh);
    if (!s->sh) return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating shards");
    size_t dir = f->path_len;
    while (dir > 0 && f->path[dir - 1] != '/') dir--;
    static const ingot__format *const only[] = {&ingot__format_safetensors, NULL};
    ingot_open_opts o = f->opts;
    o.format = NULL;
    if (o.verify == INGOT_VERIFY_ALL) o.verify = INGOT_VERIFY_HEADER; /* the index verifies */
    o.allocator = &f->alloc;
    for (size_t r = 0; r < s->n; r++) {
        ient *e = &s->t[order[r]];
        if (r == 0 || cmp_fname(s, order[r - 1], order[r]) != 0) {
            ishard *sh = &s->sh[s->nsh];
            sh->fname = e->fname;
            sh->flen = e->flen;
            size_t plen = dir + e->flen;
            char *path = ingot__alloc(&f->alloc, plen + 1);
            if (!path) return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating a path");
            memcpy(path, f->path, dir);
            memcpy(path + dir, e->fname, e->flen + 1);
            ingot_status st = ingot__file_open_path(only, path, &o, &sh->sf, err);
            ingot__free(&f->alloc, path, plen + 1);
            if (st != INGOT_OK) {
                if (err) { /* keep the code and message, name the shard */
                    char msg[sizeof err->msg];
                    memcpy(msg, err->msg, sizeof msg);
                    ingot__err(err, st, err->offset, e->fname, e->flen, "shard: %s", msg);
                }
                return st;
            }
            s->nsh++;
        }
        e->shard = (uint32_t)(s->nsh - 1);
        ingot_tensor_info ti;
        if (ingot_file_tensor_findn(s->sh[e->shard].sf, e->name, e->name_len, &ti) != INGOT_OK)
            return ingot__err(err, INGOT_BAD_METADATA, e->hpos, e->name, e->name_len,
                              "weight_map puts the tensor in %.*s, which does not contain it",
                              (int)(e->flen > 80 ? 80 : e->flen), e->fname);
        e->idx = ti.index;
    }
    s->meta_shard = 0;
    return INGOT_OK;
}

static ingot_status open_ix(ingot_file *f, ingot_error *err)
{
    if (!f->path)
        return ingot__err(err, INGOT_UNSUPPORTED, INGOT_NO_OFFSET, "index", 5,
                          "a shard index resolves its shards beside the index file: open it by path");
    if (f->size > ST_MAX_INDEX)
        return ingot__err(err, INGOT_LIMIT, 0, "index", 5, "index of %llu bytes exceeds 64 MiB",
                          (unsigned long long)f->size);
    const uint8_t *buf;
    ING_TRY(ingot__file_head(f, f->size, &buf, err));
    ix_state *s = ingot__calloc(&f->alloc, sizeof *s);
    if (!s) return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating the index");
    s->pool_cap = (size_t)f->size + 1;
    s->pool = ingot__alloc(&f->alloc, s->pool_cap);
    ingot_status st;
    if (!s->pool) {
        st = ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating the index");
        goto fail;
    }
    ingot__json j;
    ingot__json_init(&j, buf, (size_t)f->size, 64, 0);
    ingot__json_tok t;
    bool have_map = false;
    if ((st = ingot__json_next(&j, &t, err)) != INGOT_OK) goto fail;
    if (t.type != ING_JSON_OBJECT) {
        st = ingot__err(err, INGOT_BAD_METADATA, t.pos, "index", 5, "index is not a JSON object");
        goto fail;
    }
    for (;;) {
        if ((st = ingot__json_next(&j, &t, err)) != INGOT_OK) goto fail;
        if (t.type == ING_JSON_OBJECT_END) break;
        if (ingot__json_str_eq(&t, "weight_map", 10)) {
            if (have_map) {
                st = ingot__err(err, INGOT_DUPLICATE, t.pos, "weight_map", 10, "weight_map given twice");
                goto fail;
            }
            have_map = true;
            if ((st = parse_map(f, s, &j, err)) != INGOT_OK) goto fail;
        } else { /* "metadata" and anything else: validated, not used */
            ingot__json_tok v;
            if ((st = ingot__json_next(&j, &v, err)) != INGOT_OK) goto fail;
            if ((st = ingot__json_skip(&j, &v, err)) != INGOT_OK) goto fail;
        }
    }
    if ((st = ingot__json_next(&j, &t, err)) != INGOT_OK) goto fail;
    if (!have_map) {
        st = ingot__err(err, INGOT_BAD_METADATA, 0, "index", 5, "index has no weight_map");
        goto fail;
    }
    if (s->n > UINT32_MAX - 1) {
        st = ingot__err(err, INGOT_LIMIT, 0, "index", 5, "too many tensors");
        goto fail;
    }
    s->by_name_bytes = (s->n ? s->n : 1) * 2 * sizeof(uint32_t);
    s->by_name = ingot__alloc(&f->alloc, s->by_name_bytes);
    if (!s->by_name) {
        st = ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating the name index");
        goto fail;
    }
    for (uint32_t i = 0; i < s->n; i++) s->by_name[i] = i;
    ingot__index_sort(s->by_name, s->by_name + s->n, s->n, cmp_name, s);
    for (size_t k = 1; k < s->n; k++)
        if (cmp_name(s, s->by_name[k - 1], s->by_name[k]) == 0) {
            const ient *a = &s->t[s->by_name[k - 1]], *b = &s->t[s->by_name[k]];
            const ient *later = a->hpos > b->hpos ? a : b;
            st = ingot__err(err, INGOT_DUPLICATE, later->hpos, later->name, later->name_len,
                            "tensor named twice in weight_map");
            goto fail;
        }
    /* Shards: the sorted-name order must survive, so sort file names in a separate buffer. */
    {
        size_t ob = (s->n ? s->n : 1) * 2 * sizeof(uint32_t);
        uint32_t *order = ingot__alloc(&f->alloc, ob);
        if (!order) {
            st = ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating the shard order");
            goto fail;
        }
        st = open_shards(f, s, order, order + s->n, err);
        ingot__free(&f->alloc, order, ob);
        if (st != INGOT_OK) goto fail;
    }
    f->state = s;
    f->alignment = 1;
    ingot__fmt(f->version, sizeof f->version, "-");
    return INGOT_OK;
fail:
    free_state(&f->alloc, s);
    return st;
}

static void close_ix(ingot_file *f)
{
    free_state(&f->alloc, f->state);
    f->state = NULL;
}

static uint64_t tensor_count(const ingot_file *f) { return IX(f)->n; }

static ingot_status tensor_at(const ingot_file *f, uint64_t i, ingot_tensor_info *out)
{
    const ix_state *s = IX(f);
    if (i >= s->n) {
        memset(out, 0, sizeof *out);
        return INGOT_RANGE;
    }
    const ient *e = &s->t[i];
    ING_TRY(ingot_file_tensor_at(s->sh[e->shard].sf, e->idx, out));
    out->index = (uint32_t)i;
    return INGOT_OK;
}

static ingot_status tensor_find(const ingot_file *f, const char *name, size_t len,
                                ingot_tensor_info *out)
{
    const ix_state *s = IX(f);
    uint32_t i;
    if (ingot__index_find(s->by_name, s->n, name_of, s, name, len, &i)) return tensor_at(f, i, out);
    memset(out, 0, sizeof *out);
    return INGOT_NOT_FOUND;
}

static ingot_status tensor_read(const ingot_file *f, uint64_t i, uint64_t off, void *dst, size_t n,
                                ingot_error *err)
{
    const ix_state *s = IX(f);
    if (i >= s->n) return INGOT_RANGE;
    return ingot_file_tensor_read(s->sh[s->t[i].shard].sf, s->t[i].idx, off, dst, n, err);
}

static ingot_status tensor_verify(const ingot_file *f, uint64_t i, ingot_error *err)
{
    const ix_state *s = IX(f);
    if (i >= s->n) return INGOT_RANGE;
    return ingot_file_tensor_verify(s->sh[s->t[i].shard].sf, s->t[i].idx, err);
}

static const ingot_file *meta_file(const ingot_file *f)
{
    const ix_state *s = IX(f);
    return s->nsh ? s->sh[s->meta_shard].sf : NULL;
}

static uint64_t meta_count(const ingot_file *f)
{
    const ingot_file *m = meta_file(f);
    return m ? ingot_file_meta_count(m) : 0;
}

static ingot_status meta_at(const ingot_file *f, uint64_t i, ingot_meta_info *out)
{
    const ingot_file *m = meta_file(f);
    if (!m) {
        memset(out, 0, sizeof *out);
        return INGOT_RANGE;
    }
    return ingot_file_meta_at(m, i, out);
}

static ingot_status meta_find(const ingot_file *f, const char *key, size_t len,
                              ingot_meta_info *out)
{
    const ingot_file *m = meta_file(f);
    memset(out, 0, sizeof *out);
    if (!m) return INGOT_NOT_FOUND;
    return m->fmt->meta_find(m, key, len, out);
}

static ingot_status meta_array_read(const ingot_file *f, uint64_t index, ingot_meta_type type,
                                    uint64_t first, uint64_t n, void *dst)
{
    const ingot_file *m = meta_file(f);
    return m ? ingot_file_meta_array_read(m, index, type, first, n, dst) : INGOT_RANGE;
}

static ingot_status meta_array_string(const ingot_file *f, uint64_t index, uint64_t elem,
                                      const char **str, size_t *len)
{
    const ingot_file *m = meta_file(f);
    return m ? ingot_file_meta_array_string(m, index, elem, str, len) : INGOT_RANGE;
}

static const char *const ix_extensions[] = {"safetensors.index.json", NULL};

const ingot__format ingot__format_safetensors_index = {
    .name = "safetensors-index",
    .extensions = ix_extensions,
    .probe = probe,
    .open = open_ix,
    .close = close_ix,
    .tensor_count = tensor_count,
    .tensor_at = tensor_at,
    .tensor_find = tensor_find,
    .tensor_read = tensor_read,
    .tensor_verify = tensor_verify,
    .meta_count = meta_count,
    .meta_at = meta_at,
    .meta_find = meta_find,
    .meta_array_read = meta_array_read,
    .meta_array_string = meta_array_string,
    .writer = &ingot__writer_safetensors,
};
