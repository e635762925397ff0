/*
 * safetensors_write.c - safetensors writer ops: one file, or HF-style shards plus an index.
 *
 * Single file: u64 LE header length, the compact JSON header (serde_json's spelling: "__metadata__"
 * first when there is metadata, then every tensor in declaration order as
 * {"dtype":..,"shape":[..],"data_offsets":[b,e]}), right-padded with spaces so the data starts at
 * a multiple of the alignment (8 by default, as the reference writer), then the tensors packed in
 * declaration order. Same description, same bytes.
 *
 * Sharded (target named "<stem>.safetensors.index.json"): tensors are split greedily in
 * declaration order into shards of at most max_shard_size data bytes (a larger tensor gets a shard
 * of its own), written as "<stem>-0000k-of-0000N.safetensors" beside the index, each a complete
 * safetensors file with the full __metadata__. The core's sink (w->af) is the index file: while
 * tensor data streams, this file swaps each shard's own ingot__afile into w->af and keeps the
 * index's aside; at finish the index is written through the sink, and the commit puts every
 * shard and then the index in place as one step (ingot__afile_commit_all: all fsynced first,
 * then renamed in order with termination signals held off; RELIABILITY.md §3: shards, then
 * manifest).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "checked.h"
#include "error.h"
#include "json.h"
#include "safetensors_format.h"
#include "st_internal.h"
#include "writer_impl.h"

typedef struct {
    char *p;
    size_t len, cap;
    bool oom;
} sbuf;

typedef struct {
    size_t first, count;  /* tensors [first, first+count) */
    uint64_t data_bytes;
    sbuf hdr;             /* 8-byte length + JSON + padding */
    ingot__afile af;
    bool created;
} shard;

typedef struct {
    uint64_t alignment;      /* data start alignment; 0 = not set (8) */
    uint64_t max_shard;      /* 0 = not set */
    bool sharded;
    shard *shards;
    size_t n_shards;
    size_t cur_shard;        /* shard currently in w->af (sharded) */
    ingot__afile **group;    /* n_shards + 1 slots: the shards and the index, for the commit */
    ingot__afile primary;    /* the index target, parked here while shards stream */
    bool primary_parked;
    sbuf index;              /* index JSON (sharded) */
    sbuf single;             /* header (single file) */
    uint64_t total;          /* single: file size */
} wstate;

static bool sb_reserve(const ingot_allocator *a, sbuf *b, size_t n)
{
    if (b->oom) return false;
    if (n > SIZE_MAX / 4 - b->len) {
        b->oom = true;
        return false;
    }
    if (b->len + n <= b->cap) return true;
    size_t nc = b->cap ? b->cap : 1024;
    while (nc < b->len + n) nc *= 2;
    void *p = b->p;
    if (!ingot__grow(a, &p, b->cap, nc)) {
        b->oom = true;
        return false;
    }
    b->p = p;
    b->cap = nc;
    return true;
}

static void sb_put(const ingot_allocator *a, sbuf *b, const void *s, size_t n)
{
    if (!sb_reserve(a, b, n)) return;
    if (n) memcpy(b->p + b->len, s, n);
    b->len += n;
}

static void sb_str(const ingot_allocator *a, sbuf *b, const char *s) { sb_put(a, b, s, strlen(s)); }

static void sb_quote(const ingot_allocator *a, sbuf *b, const char *s, size_t n)
{
    size_t need = ingot__json_quote(NULL, 0, s, n);
    if (!sb_reserve(a, b, need)) return;
    b->len += ingot__json_quote(b->p + b->len, b->cap - b->len, s, n);
}

static void sb_u64(const ingot_allocator *a, sbuf *b, uint64_t v)
{
    char t[24];
    size_t n = 0;
    do t[sizeof t - 1 - n++] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    sb_put(a, b, t + sizeof t - n, n);
}

static void sb_free(const ingot_allocator *a, sbuf *b)
{
    ingot__free(a, b->p, b->cap);
    b->p = NULL;
    b->len = b->cap = 0;
}

/* ---- metadata stringification (docs/formats/safetensors.md, "Writing metadata") ---- */

static void fmt_double(char *out, size_t cap, double v, bool is_f32)
{
    if (v != v) {
        snprintf(out, cap, "nan");
        return;
    }
    if (__builtin_isinf(v)) {
        snprintf(out, cap, v < 0 ? "-inf" : "inf");
        return;
    }
    /* Shortest %.Ng that reads back to the same value. */
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(out, cap, "%.*g", prec, v);
        if (is_f32) {
            if (strtof(out, NULL) == (float)v) return;
        } else if (strtod(out, NULL) == v) {
            return;
        }
    }
}

/* Element k of a numeric array blob (LE) or the scalar, as text. */
static void num_text(const ingot__wmeta *m, const uint8_t *le, char *out, size_t cap)
{
    uint32_t sz = ingot_meta_type_size(m->type);
    uint64_t bits = 0;
    for (uint32_t i = 0; i < sz; i++) bits |= (uint64_t)le[i] << (8 * i);
    switch (m->type) {
    case INGOT_META_U8:
    case INGOT_META_U16:
    case INGOT_META_U32:
    case INGOT_META_U64:
        snprintf(out, cap, "%llu", (unsigned long long)bits);
        break;
    case INGOT_META_I8: snprintf(out, cap, "%d", (int)(int8_t)bits); break;
    case INGOT_META_I16: snprintf(out, cap, "%d", (int)(int16_t)bits); break;
    case INGOT_META_I32: snprintf(out, cap, "%ld", (long)(int32_t)bits); break;
    case INGOT_META_I64: snprintf(out, cap, "%lld", (long long)(int64_t)bits); break;
    case INGOT_META_F32: {
        uint32_t u = (uint32_t)bits;
        float f;
        memcpy(&f, &u, 4);
        fmt_double(out, cap, f, true);
        break;
    }
    case INGOT_META_F64: {
        double d;
        memcpy(&d, &bits, 8);
        fmt_double(out, cap, d, false);
        break;
    }
    case INGOT_META_BOOL: snprintf(out, cap, bits ? "true" : "false"); break;
    default: snprintf(out, cap, "?"); break;
    }
}

static void hex_text(const ingot_allocator *a, sbuf *b, const uint8_t *p, size_t n)
{
    static const char hx[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        char t[2] = {hx[p[i] >> 4], hx[p[i] & 15]};
        sb_put(a, b, t, 2);
    }
}

/* Writes the string form of m into b (unquoted). */
static void stringify(const ingot_allocator *a, sbuf *b, const ingot__wmeta *m)
{
    char t[64];
    if (!m->is_array) {
        if (m->type == INGOT_META_STRING) sb_put(a, b, m->blob, m->blob_len);
        else if (m->type == INGOT_META_BYTES) hex_text(a, b, m->blob, m->blob_len);
        else {
            uint8_t le[8];
            for (int i = 0; i < 8; i++) le[i] = (uint8_t)(m->scalar >> (8 * i));
            num_text(m, le, t, sizeof t);
            sb_str(a, b, t);
        }
        return;
    }
    sb_put(a, b, "[", 1);
    size_t at = 0;
    for (uint64_t k = 0; k < m->count; k++) {
        if (k) sb_put(a, b, ",", 1);
        if (m->type == INGOT_META_STRING) {
            sb_quote(a, b, (const char *)m->blob + at, (size_t)m->lens[k]);
            at += (size_t)m->lens[k];
        } else if (m->type == INGOT_META_BYTES) {
            sb_put(a, b, "\"", 1);
            hex_text(a, b, m->blob + at, (size_t)m->lens[k]);
            sb_put(a, b, "\"", 1);
            at += (size_t)m->lens[k];
        } else {
            num_text(m, m->blob + k * ingot_meta_type_size(m->type), t, sizeof t);
            bool nonfinite = (m->type == INGOT_META_F32 || m->type == INGOT_META_F64) &&
                             (t[0] == 'n' || t[0] == 'i' || t[1] == 'i');
            if (nonfinite) sb_put(a, b, "\"", 1);
            sb_str(a, b, t);
            if (nonfinite) sb_put(a, b, "\"", 1);
        }
    }
    sb_put(a, b, "]", 1);
}

/* ---- options ---- */

static ingot_status wnomem(ingot_error *err, const char *what)
{
    return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating %s", what);
}

static ingot_status init(ingot_writer *w, ingot_error *err)
{
    if (w->alignment && w->alignment < 8)
        return ingot__err(err, INGOT_BAD_ALIGN, INGOT_NO_OFFSET, 0, 0,
                          "safetensors alignment must be at least 8");
    wstate *s = ingot__calloc(&w->alloc, sizeof *s);
    if (!s) return wnomem(err, "the safetensors writer");
    s->primary.fd = s->primary.dir_fd = -1;
    s->alignment = w->alignment ? w->alignment : 8;
    w->fmt_state = s;
    return INGOT_OK;
}

static ingot_status set_option(ingot_writer *w, const char *key, const char *value,
                               ingot_error *err)
{
    wstate *s = w->fmt_state;
    if (strcmp(key, "max_shard_size") == 0) {
        if (!ingot__writer_parse_size(value, &s->max_shard))
            return ingot__err(err, INGOT_BAD_METADATA, INGOT_NO_OFFSET, key, strlen(key),
                              "max_shard_size \"%s\": expected bytes or a size like 5GB, 500MB",
                              value);
        return INGOT_OK;
    }
    if (strcmp(key, "alignment") == 0) {
        uint64_t a;
        if (!ingot__writer_parse_size(value, &a) || !ing_is_pow2(a) || a < 8 || a > (1u << 20))
            return ingot__err(err, INGOT_BAD_ALIGN, INGOT_NO_OFFSET, key, strlen(key),
                              "alignment \"%s\": a power of two from 8 to 1 MiB", value);
        s->alignment = a;
        return INGOT_OK;
    }
    return ingot__err(err, INGOT_UNSUPPORTED, INGOT_NO_OFFSET, key, strlen(key),
                      "safetensors options: max_shard_size, alignment");
}

static ingot_status refuse(const ingot__wtensor *t, ingot_error *err)
{
    if (!ingot__st_dtype_by_ingot(t->dtype))
        return ingot__err(err, INGOT_UNSUPPORTED, INGOT_NO_OFFSET, t->name, t->name_len,
                          "safetensors cannot hold dtype %s (no such safetensors dtype); "
                          "dequantize first",
                          ingot_dtype_name(t->dtype) ? ingot_dtype_name(t->dtype) : "?");
    if (t->name_len == 12 && memcmp(t->name, "__metadata__", 12) == 0)
        return ingot__err(err, INGOT_BAD_NAME, INGOT_NO_OFFSET, t->name, t->name_len,
                          "\"__metadata__\" is reserved in safetensors");
    return INGOT_OK;
}

/* The core lends the tensor's name for this check; begin() checks every tensor again, so a
 * description that bypassed this (no name lent) is still refused naming the tensor. */
static ingot_status check_tensor(ingot_writer *w, const ingot__wtensor *t, ingot_error *err)
{
    (void)w;
    if (!t->name) return INGOT_OK;
    return refuse(t, err);
}

/* ---- header ---- */

static ingot_status build_header(ingot_writer *w, size_t first, size_t count, bool notices,
                                 sbuf *b, uint64_t *data_bytes, ingot_error *err)
{
    wstate *s = w->fmt_state;
    const ingot_allocator *a = &w->alloc;
    sb_put(a, b, "\0\0\0\0\0\0\0\0{", 9);
    bool comma = false;
    if (w->n_meta) {
        sb_str(a, b, "\"__metadata__\":{");
        sbuf tmp = {0};
        for (size_t k = 0; k < w->n_meta; k++) {
            const ingot__wmeta *m = &w->meta[k];
            if (k) sb_put(a, b, ",", 1);
            sb_quote(a, b, m->key, m->key_len);
            sb_put(a, b, ":", 1);
            if (m->type == INGOT_META_STRING && !m->is_array) {
                sb_quote(a, b, (const char *)m->blob, m->blob_len);
                continue;
            }
            tmp.len = 0;
            stringify(a, &tmp, m);
            sb_quote(a, b, tmp.p ? tmp.p : "", tmp.len);
            if (notices && !tmp.oom)
                ingot__writer_notice(w, "metadata '%s': %s%s value stored as the string \"%.*s\" "
                                        "(safetensors metadata holds strings only; type lost)",
                                     m->key, ingot_meta_type_name(m->type),
                                     m->is_array ? " array" : "",
                                     (int)(tmp.len > 200 ? 200 : tmp.len), tmp.p ? tmp.p : "");
        }
        bool oom = tmp.oom;
        sb_free(a, &tmp);
        if (oom) b->oom = true;
        sb_put(a, b, "}", 1);
        comma = true;
    }
    uint64_t pos = 0;
    for (size_t i = first; i < first + count; i++) {
        const ingot__wtensor *t = &w->tensors[i];
        const st_dtype *d = ingot__st_dtype_by_ingot(t->dtype);
        if (comma) sb_put(a, b, ",", 1);
        comma = true;
        sb_quote(a, b, t->name, t->name_len);
        sb_str(a, b, ":{\"dtype\":\"");
        sb_str(a, b, d->name);
        sb_str(a, b, "\",\"shape\":[");
        for (uint32_t k = 0; k < t->rank; k++) {
            if (k) sb_put(a, b, ",", 1);
            sb_u64(a, b, t->shape[k]);
        }
        sb_str(a, b, "],\"data_offsets\":[");
        sb_u64(a, b, pos);
        sb_put(a, b, ",", 1);
        if (!ing_add(pos, t->nbytes, &pos))
            return ingot__err(err, INGOT_BAD_SIZE, INGOT_NO_OFFSET, t->name, t->name_len,
                              "data size overflows");
        sb_u64(a, b, pos);
        sb_str(a, b, "]}");
    }
    sb_put(a, b, "}", 1);
    /* Pad so the data starts at a multiple of the alignment. */
    while (!b->oom && b->len % s->alignment) sb_put(a, b, " ", 1);
    if (b->oom) return wnomem(err, "the header");
    uint64_t hn = b->len - 8;
    if (hn > ST_MAX_HEADER)
        return ingot__err(err, INGOT_LIMIT, INGOT_NO_OFFSET, "header", 6,
                          "header of %llu bytes exceeds the 100,000,000-byte cap of readers",
                          (unsigned long long)hn);
    ing_st64((uint8_t *)b->p, hn);
    *data_bytes = pos;
    return INGOT_OK;
}

static bool ends_with(const char *s, size_t n, const char *suf)
{
    size_t k = strlen(suf);
    return n >= k && memcmp(s + n - k, suf, k) == 0;
}

#define INDEX_SUFFIX ".safetensors.index.json"

/* "<dir>/<stem>-0000k-of-0000N.safetensors" for shard k (1-based), into out (NUL-terminated). */
static size_t shard_name(const char *index_path, size_t plen, size_t k, size_t n, char *out,
                         size_t cap, bool base_only)
{
    size_t stem_end = plen - strlen(INDEX_SUFFIX);
    size_t base = stem_end;
    while (base > 0 && index_path[base - 1] != '/') base--;
    size_t from = base_only ? base : 0;
    int r = snprintf(out, cap, "%.*s-%05zu-of-%05zu.safetensors", (int)(stem_end - from),
                     index_path + from, k, n);
    return r < 0 ? 0 : (size_t)r;
}

static void free_state(ingot_writer *w)
{
    wstate *s = w->fmt_state;
    if (!s) return;
    for (size_t k = 0; k < s->n_shards; k++) {
        if (s->shards[k].created) ingot__afile_abort(&s->shards[k].af);
        sb_free(&w->alloc, &s->shards[k].hdr);
    }
    ingot__free(&w->alloc, s->shards, s->n_shards * sizeof *s->shards);
    if (s->group) ingot__free(&w->alloc, s->group, (s->n_shards + 1) * sizeof *s->group);
    if (s->primary_parked) ingot__afile_abort(&s->primary);
    sb_free(&w->alloc, &s->index);
    sb_free(&w->alloc, &s->single);
    ingot__free(&w->alloc, s, sizeof *s);
    w->fmt_state = NULL;
}

static int cmp_name_idx(const void *ctx, uint32_t a, uint32_t b)
{
    const ingot_writer *w = ctx;
    return ingot__bytes_cmp(w->tensors[a].name, w->tensors[a].name_len, w->tensors[b].name,
                          w->tensors[b].name_len);
}

static ingot_status begin_sharded(ingot_writer *w, uint64_t *total, ingot_error *err)
{
    wstate *s = w->fmt_state;
    const ingot_allocator *a = &w->alloc;
    if (w->to_mem)
        return ingot__err(err, INGOT_UNSUPPORTED, INGOT_NO_OFFSET, 0, 0,
                          "sharded safetensors output needs a file target");
    uint64_t max = s->max_shard ? s->max_shard : 5000000000ull; /* transformers' default */
    /* Plan shards greedily in declaration order. */
    size_t n = 1;
    uint64_t cur = 0;
    for (size_t i = 0; i < w->n_tensors; i++) {
        uint64_t sz = w->tensors[i].nbytes;
        if (i > 0 && cur > 0 && (sz > max || cur + sz > max)) {
            n++;
            cur = 0;
        }
        cur += sz;
    }
    if (n > 99999)
        return ingot__err(err, INGOT_LIMIT, INGOT_NO_OFFSET, 0, 0, "more than 99999 shards");
    s->shards = ingot__calloc(a, n * sizeof *s->shards);
    if (!s->shards) return wnomem(err, "the shard plan");
    s->n_shards = n;
    s->group = ingot__alloc(a, (n + 1) * sizeof *s->group); /* commit allocates nothing */
    if (!s->group) return wnomem(err, "the shard plan");
    size_t k = 0;
    cur = 0;
    for (size_t i = 0; i < w->n_tensors; i++) {
        uint64_t sz = w->tensors[i].nbytes;
        if (i > 0 && cur > 0 && (sz > max || cur + sz > max)) {
            k++;
            s->shards[k].first = i;
            cur = 0;
        }
        cur += sz;
        s->shards[k].count++;
    }
    for (k = 0; k < n; k++) {
        shard *sh = &s->shards[k];
        sh->af.fd = sh->af.dir_fd = -1;
        ING_TRY(build_header(w, sh->first, sh->count, k == 0, &sh->hdr, &sh->data_bytes, err));
        uint64_t off = sh->hdr.len;
        for (size_t i = sh->first; i < sh->first + sh->count; i++) {
            w->tensors[i].offset = off;
            off += w->tensors[i].nbytes;
        }
    }
    /* The index: transformers' json.dumps(indent=2, sort_keys=True) layout, UTF-8 kept. */
    uint64_t total_size = 0;
    for (size_t i = 0; i < w->n_tensors; i++) total_size += w->tensors[i].nbytes;
    size_t nt = w->n_tensors;
    uint32_t *order = ingot__alloc(a, (nt ? nt : 1) * 2 * sizeof(uint32_t));
    if (!order) return wnomem(err, "the index order");
    for (uint32_t i = 0; i < nt; i++) order[i] = i;
    ingot__index_sort(order, order + nt, nt, cmp_name_idx, w);
    uint32_t *shard_of = order + nt; /* reuse as tensor -> shard after sorting */
    for (k = 0; k < n; k++)
        for (size_t i = s->shards[k].first; i < s->shards[k].first + s->shards[k].count; i++)
            shard_of[i] = (uint32_t)k;
    sbuf *b = &s->index;
    sb_str(a, b, "{\n  \"metadata\": {\n    \"total_size\": ");
    sb_u64(a, b, total_size);
    sb_str(a, b, "\n  },\n  \"weight_map\": {");
    const char *ip = w->af.path;
    size_t ipl = w->af.path_len;
    for (size_t r = 0; r < nt; r++) {
        const ingot__wtensor *t = &w->tensors[order[r]];
        char nm[4200];
        shard_name(ip, ipl, shard_of[order[r]] + 1, n, nm, sizeof nm, true);
        sb_str(a, b, r ? ",\n    " : "\n    ");
        sb_quote(a, b, t->name, t->name_len);
        sb_str(a, b, ": ");
        sb_quote(a, b, nm, strlen(nm));
    }
    sb_str(a, b, nt ? "\n  }\n}\n" : "}\n}\n");
    ingot__free(a, order, (nt ? nt : 1) * 2 * sizeof(uint32_t));
    if (b->oom) return wnomem(err, "the index");
    *total = b->len;
    ING_TRY(ingot__wsink_reserve(w, b->len, err));
    /* Park the index target; shards stream through w->af from here on. */
    s->primary = w->af;
    s->primary_parked = true;
    memset(&w->af, 0, sizeof w->af);
    w->af.fd = w->af.dir_fd = -1;
    s->cur_shard = SIZE_MAX;
    return INGOT_OK;
}

/* Moves the shard in w->af (if any) back to its slot and opens shard k in w->af. */
static ingot_status open_shard(ingot_writer *w, size_t k, ingot_error *err)
{
    wstate *s = w->fmt_state;
    if (s->cur_shard != SIZE_MAX) {
        s->shards[s->cur_shard].af = w->af;
        s->shards[s->cur_shard].created = true;
        memset(&w->af, 0, sizeof w->af);
        w->af.fd = w->af.dir_fd = -1;
    }
    shard *sh = &s->shards[k];
    char path[4200];
    size_t pl = shard_name(s->primary.path, s->primary.path_len, k + 1, s->n_shards, path,
                           sizeof path, false);
    if (pl == 0 || pl >= sizeof path)
        return ingot__err(err, INGOT_BAD_PATH, INGOT_NO_OFFSET, 0, 0, "shard path too long");
    ING_TRY(ingot__afile_create(&w->af, &w->alloc, path, !w->no_fsync, err));
    s->cur_shard = k;
    ING_TRY(ingot__afile_reserve(&w->af, sh->hdr.len + sh->data_bytes, err));
    return ingot__afile_write(&w->af, sh->hdr.p, sh->hdr.len, err);
}

static ingot_status begin(ingot_writer *w, uint64_t *total, ingot_error *err)
{
    wstate *s = w->fmt_state;
    for (size_t i = 0; i < w->n_tensors; i++) ING_TRY(refuse(&w->tensors[i], err));
    s->sharded = !w->to_mem && w->af.path && ends_with(w->af.path, w->af.path_len, INDEX_SUFFIX);
    if (s->sharded) {
        ING_TRY(begin_sharded(w, total, err));
        if (w->n_tensors == 0) return open_shard(w, 0, err);
        return INGOT_OK;
    }
    uint64_t data = 0;
    ING_TRY(build_header(w, 0, w->n_tensors, true, &s->single, &data, err));
    if (s->max_shard && data > s->max_shard)
        return ingot__err(err, INGOT_BAD_PATH, INGOT_NO_OFFSET, 0, 0,
                          "%llu data bytes exceed max_shard_size %llu: name the target "
                          "<stem>" INDEX_SUFFIX " to write shards and an index",
                          (unsigned long long)data, (unsigned long long)s->max_shard);
    uint64_t off = s->single.len;
    for (size_t i = 0; i < w->n_tensors; i++) {
        w->tensors[i].offset = off;
        off += w->tensors[i].nbytes;
    }
    s->total = off;
    *total = off;
    ING_TRY(ingot__wsink_reserve(w, off, err));
    return ingot__wsink_write(w, s->single.p, s->single.len, err);
}

static ingot_status before_tensor(ingot_writer *w, uint64_t i, ingot_error *err)
{
    wstate *s = w->fmt_state;
    if (!s->sharded) {
        if (w->pos != w->tensors[i].offset)
            return ingot__err(err, INGOT_MISUSE, w->pos, 0, 0, "stream position off the layout");
        return INGOT_OK;
    }
    size_t next = s->cur_shard == SIZE_MAX ? 0 : s->cur_shard + 1;
    if (next < s->n_shards && s->shards[next].first == i && s->shards[next].count > 0)
        return open_shard(w, next, err);
    return INGOT_OK;
}

static ingot_status finish(ingot_writer *w, ingot_error *err)
{
    wstate *s = w->fmt_state;
    if (!s->sharded) {
        if (w->pos != s->total)
            return ingot__err(err, INGOT_MISUSE, w->pos, 0, 0, "wrote %llu bytes, layout has %llu",
                              (unsigned long long)w->pos, (unsigned long long)s->total);
        return INGOT_OK;
    }
    if (s->cur_shard == SIZE_MAX) ING_TRY(open_shard(w, 0, err)); /* only empty tensors */
    /* Park the last shard; the shards are put in place by commit(), with the index. */
    s->shards[s->cur_shard].af = w->af;
    s->shards[s->cur_shard].created = true;
    memset(&w->af, 0, sizeof w->af);
    w->af.fd = w->af.dir_fd = -1;
    for (size_t k = 0; k < s->n_shards; k++)
        if (!s->shards[k].created)
            return ingot__err(err, INGOT_MISUSE, INGOT_NO_OFFSET, 0, 0, "shard %zu not written", k);
    /* The index is written through the core's sink. */
    w->af = s->primary;
    s->primary_parked = false;
    return ingot__wsink_write(w, s->index.p, s->index.len, err);
}

static ingot_status commit(ingot_writer *w, ingot_error *err)
{
    wstate *s = w->fmt_state;
    if (!s->sharded) return ingot__afile_commit(&w->af, err);
    for (size_t k = 0; k < s->n_shards; k++) {
        s->group[k] = &s->shards[k].af;
        s->shards[k].created = false; /* finished by the call below, whatever it returns */
    }
    s->group[s->n_shards] = &w->af;
    return ingot__afile_commit_all(s->group, s->n_shards + 1, err);
}

const ingot__writer_ops ingot__writer_safetensors = {
    .init = init,
    .check_tensor = check_tensor,
    .begin = begin,
    .before_tensor = before_tensor,
    .finish = finish,
    .free_state = free_state,
    .set_option = set_option,
    .commit = commit,
};
