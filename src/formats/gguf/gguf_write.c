/*
 * gguf_write.c - GGUF v3 writer ops (spec: ../shared/formats/gguf.md §8; mapping and options:
 * docs/formats/gguf.md). Lays out what gguf-py's GGUFWriter and ggml's gguf_write_to_file emit:
 * KV records in the order they were set, tensor infos in declaration order, zero padding to the
 * alignment, then each tensor's bytes followed by zero padding to the alignment. Offsets are the
 * packed layout ggml requires. Without tensors nothing follows the KV section (gguf-py's
 * vocab-only files). Deterministic: the same description gives the same bytes.
 * With max_shard_size or max_shard_tensors: llama.cpp's split files (gguf-split's layout,
 * "<prefix>-00001-of-0000N.gguf" ..., split.no/split.count/split.tensors.count, the metadata in
 * the first), streamed shard by shard and committed together (read back by gguf_split.c).
 */
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "gguf_format.h"
#include "gguf_internal.h"
#include "writer_impl.h"

typedef struct {
    size_t first, count; /* tensors [first, first + count) */
    uint8_t *hdr;
    size_t hdr_len;
    uint64_t size;       /* the shard file's size */
    ingot__afile af;
    bool created;
} gshard;

typedef struct {
    bool explicit_align; /* alignment given in the writer options or set_option */
    bool append_align;   /* write general.alignment after the other KVs */
    uint8_t *hdr;
    size_t hdr_len;
    uint64_t file_size;
    /* split output */
    uint64_t max_shard, max_tensors; /* 0 = not set */
    bool split;
    gshard *shards;
    size_t n_shards, cur_shard;
    uint64_t shard_base;   /* w->pos where the current shard's file began */
    ingot__afile **group;  /* the shards, for the commit */
    ingot__afile primary;  /* the target named by the caller: never published when split */
    bool primary_parked;
    size_t prefix_len;     /* of the shard names, in primary.path */
} wstate;

static const char align_key[] = "general.alignment";

static ingot_status init(ingot_writer *w, ingot_error *err)
{
    wstate *s = ingot__calloc(&w->alloc, sizeof *s);
    if (!s) return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating the writer");
    s->explicit_align = w->alignment != 0;
    if (!w->alignment) w->alignment = GGUF_DEFAULT_ALIGN;
    w->fmt_state = s;
    return INGOT_OK;
}

static void free_state(ingot_writer *w)
{
    wstate *s = w->fmt_state;
    if (!s) return;
    ingot__free(&w->alloc, s->hdr, s->hdr_len);
    for (size_t k = 0; k < s->n_shards; k++) {
        if (s->shards[k].created) ingot__afile_abort(&s->shards[k].af);
        if (s->shards[k].hdr) ingot__free(&w->alloc, s->shards[k].hdr, s->shards[k].hdr_len);
    }
    if (s->shards) ingot__free(&w->alloc, s->shards, s->n_shards * sizeof *s->shards);
    if (s->group) ingot__free(&w->alloc, s->group, (s->n_shards ? s->n_shards : 1) * sizeof *s->group);
    if (s->primary_parked) ingot__afile_abort(&s->primary);
    ingot__free(&w->alloc, s, sizeof *s);
    w->fmt_state = NULL;
}

/* Option "alignment": a power of two 1..2^20, as the writer options' alignment. */
static ingot_status set_option(ingot_writer *w, const char *key, const char *value,
                               ingot_error *err)
{
    wstate *s = w->fmt_state;
    if (strcmp(key, "max_shard_size") == 0 || strcmp(key, "max_shard_tensors") == 0) {
        bool bytes = key[10] == 's';
        uint64_t *to = bytes ? &s->max_shard : &s->max_tensors;
        const char *c = value;
        uint64_t v = 0;
        if (!bytes)
            for (; *c >= '0' && *c <= '9' && v < (1ull << 40); c++) v = v * 10 + (uint64_t)(*c - '0');
        if (bytes ? !ingot__writer_parse_size(value, to) : (c == value || *c || v == 0))
            return ingot__err(err, INGOT_BAD_METADATA, INGOT_NO_OFFSET, key, strlen(key),
                              "%s \"%s\": expected %s", key, value,
                              bytes ? "bytes or a size like 2GB, 500MB" : "a count above 0");
        if (!bytes) *to = v;
        return INGOT_OK;
    }
    if (strcmp(key, "alignment") != 0)
        return ingot__err(err, INGOT_UNSUPPORTED, INGOT_NO_OFFSET, key, strlen(key),
                          "GGUF writer options: alignment, max_shard_size, max_shard_tensors");
    uint64_t v = 0;
    const char *c = value;
    for (; *c >= '0' && *c <= '9' && v <= GGUF_MAX_ALIGN; c++) v = v * 10 + (uint64_t)(*c - '0');
    if (c == value || *c || !ing_is_pow2(v) || v > GGUF_MAX_ALIGN)
        return ingot__err(err, INGOT_BAD_METADATA, INGOT_NO_OFFSET, key, strlen(key),
                          "alignment '%s' is not a power of two in 1..%u", value, GGUF_MAX_ALIGN);
    w->alignment = (uint32_t)v;
    s->explicit_align = true;
    return INGOT_OK;
}

/* A BYTES value that is exactly one GGUF nested-array value (as the reader exposes ARRAY of
 * ARRAY: u32 9, u32 9, u64 count, items) is written back verbatim. */
static bool is_nested_encoding(const uint8_t *b, size_t n)
{
    if (n < 16 || ing_ld32(b) != GT_ARRAY || ing_ld32(b + 4) != GT_ARRAY) return false;
    gguf_cur c = {.p = b, .avail = n, .size = n};
    uint64_t end;
    return gguf_walk(&c, 4, GT_ARRAY, 0, NULL, &end) == INGOT_OK && end == n;
}

static ingot_status check_tensor_named(const ingot__wtensor *t, ingot_error *err)
{
    uint32_t id;
    if (!gguf_ggml_type(t->dtype, &id))
        return ingot__err(err, INGOT_UNSUPPORTED, INGOT_NO_OFFSET, t->name, t->name_len,
                          "GGUF has no type for dtype %s", ingot_dtype_name(t->dtype));
    if (t->rank > GGUF_MAX_DIMS)
        return ingot__err(err, INGOT_UNSUPPORTED, INGOT_NO_OFFSET, t->name, t->name_len,
                          "rank %u: GGUF holds at most %u dimensions (GGML_MAX_DIMS)", t->rank,
                          GGUF_MAX_DIMS);
    if (t->name_len > GGUF_MAX_NAME)
        return ingot__err(err, INGOT_BAD_NAME, INGOT_NO_OFFSET, t->name, t->name_len,
                          "tensor name of %u bytes: GGUF readers take at most %u", t->name_len,
                          GGUF_MAX_NAME);
    return INGOT_OK;
}

/* Called before the core has copied the name (t->name may be NULL): refuse early only when the
 * name is there to be reported; begin() checks every tensor again with its name. */
static ingot_status check_tensor(ingot_writer *w, const ingot__wtensor *t, ingot_error *err)
{
    (void)w;
    return t->name ? check_tensor_named(t, err) : INGOT_OK;
}

/* ---- encoding: one function measures (out NULL) and writes ---- */

typedef struct {
    uint8_t *out;
    uint64_t len;
} buf_t;

static void put(buf_t *b, const void *p, uint64_t n)
{
    if (b->out && n) memcpy(b->out + b->len, p, (size_t)n);
    b->len += n;
}
static void put32(buf_t *b, uint32_t v)
{
    uint8_t x[4];
    ing_st32(x, v);
    put(b, x, 4);
}
static void put64(buf_t *b, uint64_t v)
{
    uint8_t x[8];
    ing_st64(x, v);
    put(b, x, 8);
}
static void put_str(buf_t *b, const void *p, uint64_t n)
{
    put64(b, n);
    put(b, p, n);
}

/* One KV record. notices: report lossy steps (only on the writing pass). */
static void put_kv(ingot_writer *w, buf_t *b, const ingot__wmeta *m, uint64_t scalar_override,
                   bool override, bool notices)
{
    put_str(b, m->key, m->key_len);
    if (m->type == INGOT_META_BYTES) {
        if (!m->is_array && is_nested_encoding(m->blob, m->blob_len)) {
            put(b, m->blob, m->blob_len);
            return;
        }
        if (!m->is_array) {
            if (notices)
                ingot__writer_notice(w, "metadata '%s': bytes have no GGUF type, written as an "
                                        "array of UINT8", m->key);
            put32(b, GT_ARRAY);
            put32(b, GT_U8);
            put_str(b, m->blob, m->blob_len);
            return;
        }
        if (notices)
            ingot__writer_notice(w, "metadata '%s': array of bytes written as an ARRAY of "
                                    "UINT8 arrays (nested: llama.cpp does not read those)",
                                 m->key);
        put32(b, GT_ARRAY);
        put32(b, GT_ARRAY);
        put64(b, m->count);
        uint64_t at = 0;
        for (uint64_t k = 0; k < m->count; k++) {
            put32(b, GT_U8);
            put_str(b, m->blob + at, m->lens[k]);
            at += m->lens[k];
        }
        return;
    }
    uint32_t vt = gguf_meta_vt(m->type);
    if (m->is_array) {
        put32(b, GT_ARRAY);
        put32(b, vt);
        put64(b, m->count);
        if (vt == GT_STRING) {
            uint64_t at = 0;
            for (uint64_t k = 0; k < m->count; k++) {
                put_str(b, m->blob + at, m->lens[k]);
                at += m->lens[k];
            }
        } else {
            put(b, m->blob, m->blob_len);
        }
        return;
    }
    put32(b, vt);
    if (vt == GT_STRING) {
        put_str(b, m->blob, m->blob_len);
        return;
    }
    uint8_t x[8];
    ing_st64(x, override ? scalar_override : m->scalar);
    put(b, x, gguf_vt_size(vt));
}

static void put_info(buf_t *b, const ingot__wtensor *t, uint64_t rel)
{
    uint32_t id = 0;
    gguf_ggml_type(t->dtype, &id);
    put_str(b, t->name, t->name_len);
    put32(b, t->rank);
    for (uint32_t d = 0; d < t->rank; d++) put64(b, t->shape[t->rank - 1 - d]); /* innermost first */
    put32(b, id);
    put64(b, rel);
}

static bool is_split_key(const ingot__wmeta *m)
{
    return m->key_len >= 6 && memcmp(m->key, "split.", 6) == 0;
}

/* The header of the file holding tensors [first, first + count): with shard >= 0, shard `shard`
 * of n_shards (the model's metadata only in shard 0, split.* keys written here). */
static void layout(ingot_writer *w, buf_t *b, int64_t align_kv, bool notices, size_t first,
                   size_t count, int64_t shard, size_t n_shards)
{
    wstate *s = w->fmt_state;
    bool meta = shard <= 0;
    uint64_t n_kv = 0;
    for (size_t i = 0; meta && i < w->n_meta; i++) n_kv += !(shard == 0 && is_split_key(&w->meta[i]));
    bool align = meta ? s->append_align : w->alignment != GGUF_DEFAULT_ALIGN;
    n_kv += (align ? 1 : 0) + (shard >= 0 ? 3 : 0);
    put(b, "GGUF", 4);
    put32(b, 3);
    put64(b, count);
    put64(b, n_kv);
    for (size_t i = 0; meta && i < w->n_meta; i++)
        if (!(shard == 0 && is_split_key(&w->meta[i])))
            put_kv(w, b, &w->meta[i], w->alignment, (int64_t)i == align_kv, notices);
    if (align) {
        ingot__wmeta m = {.key = (char *)align_key, .key_len = 17, .type = INGOT_META_U32,
                          .count = 1, .scalar = w->alignment};
        put_kv(w, b, &m, 0, false, false);
    }
    if (shard >= 0) { /* gguf-split's keys, after the others as it writes them */
        ingot__wmeta no = {.key = (char *)"split.no", .key_len = 8, .type = INGOT_META_U16,
                           .count = 1, .scalar = (uint64_t)shard};
        ingot__wmeta nn = {.key = (char *)"split.count", .key_len = 11, .type = INGOT_META_U16,
                           .count = 1, .scalar = n_shards};
        ingot__wmeta nt = {.key = (char *)"split.tensors.count", .key_len = 19,
                           .type = INGOT_META_I32, .count = 1, .scalar = w->n_tensors};
        put_kv(w, b, &no, 0, false, false);
        put_kv(w, b, &nn, 0, false, false);
        put_kv(w, b, &nt, 0, false, false);
    }
    uint64_t rel = 0;
    for (size_t i = first; i < first + count; i++) {
        put_info(b, &w->tensors[i], rel);
        uint64_t padded = 0;
        ing_round_up(w->tensors[i].nbytes, w->alignment, &padded); /* checked in begin */
        rel += padded;
    }
}

/* Header, tensor offsets (from the start of this file) and size of the file holding tensors
 * [first, first + count); *hdr allocated. */
static ingot_status build(ingot_writer *w, int64_t align_kv, size_t first, size_t count,
                          int64_t shard, size_t n_shards, uint8_t **hdr, size_t *hdr_len,
                          uint64_t *size, ingot_error *err)
{
    buf_t m = {NULL, 0};
    layout(w, &m, align_kv, false, first, count, shard, n_shards);
    uint64_t data_off = m.len, pos = 0;
    if (count && !ing_round_up(m.len, w->alignment, &data_off))
        return ingot__err(err, INGOT_LIMIT, INGOT_NO_OFFSET, 0, 0, "header too large");
    if (data_off > SIZE_MAX / 2)
        return ingot__err(err, INGOT_LIMIT, INGOT_NO_OFFSET, 0, 0, "header too large");
    for (size_t i = first; i < first + count; i++) {
        ingot__wtensor *t = &w->tensors[i];
        uint64_t padded = 0;
        t->offset = data_off + pos;
        if (!ing_round_up(t->nbytes, w->alignment, &padded) || !ing_add(pos, padded, &pos) ||
            pos > (uint64_t)INT64_MAX - data_off)
            return ingot__err(err, INGOT_BAD_SIZE, INGOT_NO_OFFSET, t->name, t->name_len,
                              "file size overflows");
    }
    *hdr_len = (size_t)data_off;
    *hdr = ingot__calloc(&w->alloc, *hdr_len ? *hdr_len : 1);
    if (!*hdr) {
        *hdr_len = 0;
        return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating the header");
    }
    buf_t b = {*hdr, 0};
    layout(w, &b, align_kv, shard <= 0, first, count, shard, n_shards);
    if (b.len != m.len)
        return ingot__err(err, INGOT_MISUSE, INGOT_NO_OFFSET, 0, 0, "header layout mismatch");
    *size = data_off + pos;
    return INGOT_OK;
}

/* Shard k's path: the prefix of the target's name (without ".gguf", or without an existing
 * "-0000k-of-0000N.gguf") and gguf-split's suffix. */
static ingot_status shard_path(const wstate *s, size_t k, char *out, size_t cap, ingot_error *err)
{
    int r = snprintf(out, cap, "%.*s-%05zu-of-%05zu.gguf", (int)s->prefix_len, s->primary.path,
                     k + 1, s->n_shards);
    if (r < 0 || (size_t)r >= cap)
        return ingot__err(err, INGOT_BAD_PATH, INGOT_NO_OFFSET, 0, 0, "shard path too long");
    return INGOT_OK;
}

static size_t name_prefix(const char *p, size_t n)
{
    static const char tail[] = "-00000-of-00000.gguf";
    size_t tl = sizeof tail - 1;
    if (n > tl) {
        bool match = true;
        for (size_t i = 0; i < tl && match; i++)
            match = tail[i] == '0' ? p[n - tl + i] >= '0' && p[n - tl + i] <= '9'
                                   : p[n - tl + i] == tail[i];
        if (match) return n - tl;
    }
    return n > 5 && memcmp(p + n - 5, ".gguf", 5) == 0 ? n - 5 : n;
}

static ingot_status begin_split(ingot_writer *w, int64_t align_kv, uint64_t *total,
                                ingot_error *err)
{
    wstate *s = w->fmt_state;
    if (w->to_mem || !w->af.path)
        return ingot__err(err, INGOT_UNSUPPORTED, INGOT_NO_OFFSET, 0, 0,
                          "split GGUF output (max_shard_size, max_shard_tensors) needs a file");
    /* Plan shards greedily in declaration order, as gguf-split does. */
    size_t n = 1, cnt = 0;
    uint64_t cur = 0;
    for (size_t pass = 0; pass < 2; pass++) {
        if (pass) {
            s->shards = ingot__calloc(&w->alloc, n * sizeof *s->shards);
            s->group = ingot__alloc(&w->alloc, n * sizeof *s->group);
            if (!s->shards || !s->group)
                return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "the shard plan");
            s->n_shards = n;
        }
        size_t k = 0;
        cur = 0, cnt = 0;
        for (size_t i = 0; i < w->n_tensors; i++) {
            uint64_t padded = 0;
            ing_round_up(w->tensors[i].nbytes, w->alignment, &padded);
            if (cnt && ((s->max_shard && cur + padded > s->max_shard) ||
                        (s->max_tensors && cnt >= s->max_tensors))) {
                k++;
                cur = 0, cnt = 0;
                if (pass) s->shards[k].first = i;
            }
            cur += padded, cnt++;
            if (pass) s->shards[k].count++;
        }
        if (!pass) n = k + 1;
    }
    if (n > 65535)
        return ingot__err(err, INGOT_LIMIT, INGOT_NO_OFFSET, 0, 0,
                          "%zu shards: split.count is a u16", n);
    for (size_t k = 0; k < n; k++) {
        gshard *sh = &s->shards[k];
        sh->af.fd = sh->af.dir_fd = -1;
        ING_TRY(build(w, align_kv, sh->first, sh->count, (int64_t)k, n, &sh->hdr, &sh->hdr_len,
                      &sh->size, err));
    }
    /* Park the caller's target: the shards stream through w->af and are the output. */
    s->primary = w->af;
    s->primary_parked = true;
    s->prefix_len = name_prefix(s->primary.path, s->primary.path_len);
    memset(&w->af, 0, sizeof w->af);
    w->af.fd = w->af.dir_fd = -1;
    s->cur_shard = SIZE_MAX;
    *total = 0;
    return INGOT_OK;
}

/* Parks the shard in w->af (if any) and opens shard k there. */
static ingot_status open_shard(ingot_writer *w, size_t k, ingot_error *err)
{
    wstate *s = w->fmt_state;
    if (s->cur_shard != SIZE_MAX) {
        s->shards[s->cur_shard].af = w->af;
        s->shards[s->cur_shard].created = true;
        memset(&w->af, 0, sizeof w->af);
        w->af.fd = w->af.dir_fd = -1;
    }
    char path[4200];
    ING_TRY(shard_path(s, k, path, sizeof path, err));
    ING_TRY(ingot__afile_create(&w->af, &w->alloc, path, !w->no_fsync, err));
    s->cur_shard = k;
    s->shard_base = w->pos;
    ING_TRY(ingot__afile_reserve(&w->af, s->shards[k].size, err));
    ING_TRY(ingot__afile_write(&w->af, s->shards[k].hdr, s->shards[k].hdr_len, err));
    w->pos += s->shards[k].hdr_len;
    return INGOT_OK;
}

static ingot_status begin(ingot_writer *w, uint64_t *total, ingot_error *err)
{
    wstate *s = w->fmt_state;
    int64_t align_kv = -1;
    for (size_t i = 0; i < w->n_meta; i++) {
        const ingot__wmeta *m = &w->meta[i];
        if (m->key_len != 17 || memcmp(m->key, align_key, 17) != 0) continue;
        if (m->type != INGOT_META_U32 || m->is_array || !ing_is_pow2(m->scalar) ||
            m->scalar > GGUF_MAX_ALIGN)
            return ingot__err(err, INGOT_BAD_METADATA, INGOT_NO_OFFSET, m->key, m->key_len,
                              "general.alignment must be a u32 power of two in 1..%u",
                              GGUF_MAX_ALIGN);
        align_kv = (int64_t)i;
        if (!s->explicit_align) {
            w->alignment = (uint32_t)m->scalar;
        } else if (m->scalar != w->alignment) {
            ingot__writer_notice(w, "metadata 'general.alignment': %llu replaced by the "
                                    "writer's alignment %u",
                                 (unsigned long long)m->scalar, w->alignment);
        }
    }
    s->append_align = align_kv < 0 && w->alignment != GGUF_DEFAULT_ALIGN;
    for (size_t i = 0; i < w->n_tensors; i++) ING_TRY(check_tensor_named(&w->tensors[i], err));
    s->split = s->max_shard || s->max_tensors;
    if (s->split) return begin_split(w, align_kv, total, err);
    ING_TRY(build(w, align_kv, 0, w->n_tensors, -1, 0, &s->hdr, &s->hdr_len, &s->file_size, err));
    *total = s->file_size;
    ING_TRY(ingot__wsink_reserve(w, s->file_size, err));
    return ingot__wsink_write(w, s->hdr, s->hdr_len, err);
}

static ingot_status before_tensor(ingot_writer *w, uint64_t i, ingot_error *err)
{
    wstate *s = w->fmt_state;
    uint64_t base = 0;
    if (s->split) {
        size_t next = s->cur_shard == SIZE_MAX ? 0 : s->cur_shard + 1;
        if (next < s->n_shards && s->shards[next].first == i && s->shards[next].count > 0) {
            if (s->cur_shard != SIZE_MAX) /* the last tensor's padding in the shard ending */
                ING_TRY(ingot__wsink_zeros(w, s->shards[s->cur_shard].size -
                                                  (w->pos - s->shard_base), err));
            ING_TRY(open_shard(w, next, err));
        }
        base = s->shard_base;
    }
    uint64_t at = w->tensors[i].offset, pos = w->pos - base;
    if (pos > at)
        return ingot__err(err, INGOT_MISUSE, w->pos, 0, 0, "stream position past tensor start");
    return ingot__wsink_zeros(w, at - pos, err);
}

static ingot_status finish(ingot_writer *w, ingot_error *err)
{
    wstate *s = w->fmt_state;
    if (s->split) {
        if (s->cur_shard == SIZE_MAX) ING_TRY(open_shard(w, 0, err)); /* no tensors */
        ING_TRY(ingot__wsink_zeros(w, s->shards[s->cur_shard].size - (w->pos - s->shard_base),
                                   err));
        s->shards[s->cur_shard].af = w->af;
        s->shards[s->cur_shard].created = true;
        for (size_t k = 0; k < s->n_shards; k++)
            if (!s->shards[k].created)
                return ingot__err(err, INGOT_MISUSE, INGOT_NO_OFFSET, 0, 0,
                                  "shard %zu not written", k + 1);
        w->af = s->primary; /* given back to the core; commit drops it unpublished */
        s->primary_parked = false;
        return INGOT_OK;
    }
    if (w->pos > s->file_size)
        return ingot__err(err, INGOT_MISUSE, w->pos, 0, 0, "wrote %llu bytes, layout has %llu",
                          (unsigned long long)w->pos, (unsigned long long)s->file_size);
    return ingot__wsink_zeros(w, s->file_size - w->pos, err); /* the last tensor's padding */
}

static ingot_status commit(ingot_writer *w, ingot_error *err)
{
    wstate *s = w->fmt_state;
    if (!s->split) return ingot__afile_commit(&w->af, err);
    ingot__afile_abort(&w->af); /* the name the caller gave: the shards are the output */
    for (size_t k = 0; k < s->n_shards; k++) {
        s->group[k] = &s->shards[k].af;
        s->shards[k].created = false; /* finished by the call below, whatever it returns */
    }
    return ingot__afile_commit_all(s->group, s->n_shards, err);
}

const ingot__writer_ops ingot__writer_gguf = {
    .commit = commit,
    .init = init,
    .check_tensor = check_tensor,
    .begin = begin,
    .before_tensor = before_tensor,
    .finish = finish,
    .free_state = free_state,
    .set_option = set_option,
};
