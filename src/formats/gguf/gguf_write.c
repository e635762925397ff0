/*
 * gguf_write.c - GGUF v3 writer ops (spec: ../shared/formats/gguf.md §8; mapping and options:
 * docs/formats/gguf.md). Lays out what gguf-py's GGUFWriter and ggml's gguf_write_to_file emit:
 * KV records in the order they were set, tensor infos in declaration order, zero padding to the
 * alignment, then each tensor's bytes followed by zero padding to the alignment. Offsets are the
 * packed layout ggml requires. Without tensors nothing follows the KV section (gguf-py's
 * vocab-only files). Deterministic: the same description gives the same bytes.
 */
#include <string.h>

#include "alloc.h"
#include "gguf_format.h"
#include "gguf_internal.h"
#include "writer_impl.h"

typedef struct {
    bool explicit_align; /* alignment given in the writer options or set_option */
    bool append_align;   /* write general.alignment after the other KVs */
    uint8_t *hdr;
    size_t hdr_len;
    uint64_t file_size;
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
    ingot__free(&w->alloc, s, sizeof *s);
    w->fmt_state = NULL;
}

/* Option "alignment": a power of two 1..2^20, as the writer options' alignment. */
static ingot_status set_option(ingot_writer *w, const char *key, const char *value,
                               ingot_error *err)
{
    wstate *s = w->fmt_state;
    if (strcmp(key, "alignment") != 0)
        return ingot__err(err, INGOT_UNSUPPORTED, INGOT_NO_OFFSET, key, strlen(key),
                          "GGUF writer options: alignment");
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

static void layout(ingot_writer *w, buf_t *b, int64_t align_kv, bool notices)
{
    wstate *s = w->fmt_state;
    put(b, "GGUF", 4);
    put32(b, 3);
    put64(b, w->n_tensors);
    put64(b, w->n_meta + (s->append_align ? 1 : 0));
    for (size_t i = 0; i < w->n_meta; i++)
        put_kv(w, b, &w->meta[i], w->alignment, (int64_t)i == align_kv, notices);
    if (s->append_align) {
        ingot__wmeta m = {.key = (char *)align_key, .key_len = 17, .type = INGOT_META_U32,
                          .count = 1, .scalar = w->alignment};
        put_kv(w, b, &m, 0, false, false);
    }
    uint64_t rel = 0;
    for (size_t i = 0; i < w->n_tensors; i++) {
        put_info(b, &w->tensors[i], rel);
        uint64_t padded = 0;
        ing_round_up(w->tensors[i].nbytes, w->alignment, &padded); /* checked in begin */
        rel += padded;
    }
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

    buf_t m = {NULL, 0};
    layout(w, &m, align_kv, false);
    uint64_t data_off = m.len, pos = 0;
    if (w->n_tensors && !ing_round_up(m.len, w->alignment, &data_off))
        return ingot__err(err, INGOT_LIMIT, INGOT_NO_OFFSET, 0, 0, "header too large");
    if (data_off > SIZE_MAX / 2)
        return ingot__err(err, INGOT_LIMIT, INGOT_NO_OFFSET, 0, 0, "header too large");
    for (size_t i = 0; i < w->n_tensors; i++) {
        ingot__wtensor *t = &w->tensors[i];
        uint64_t padded = 0;
        t->offset = data_off + pos;
        if (!ing_round_up(t->nbytes, w->alignment, &padded) || !ing_add(pos, padded, &pos) ||
            pos > (uint64_t)INT64_MAX - data_off)
            return ingot__err(err, INGOT_BAD_SIZE, INGOT_NO_OFFSET, t->name, t->name_len,
                              "file size overflows");
    }
    s->hdr_len = (size_t)data_off;
    s->hdr = ingot__calloc(&w->alloc, s->hdr_len ? s->hdr_len : 1);
    if (!s->hdr) {
        s->hdr_len = 0;
        return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating the header");
    }
    buf_t b = {s->hdr, 0};
    layout(w, &b, align_kv, true);
    if (b.len != m.len)
        return ingot__err(err, INGOT_MISUSE, INGOT_NO_OFFSET, 0, 0, "header layout mismatch");
    s->file_size = data_off + pos;
    *total = s->file_size;
    ING_TRY(ingot__wsink_reserve(w, s->file_size, err));
    return ingot__wsink_write(w, s->hdr, s->hdr_len, err);
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
    if (w->pos > s->file_size)
        return ingot__err(err, INGOT_MISUSE, w->pos, 0, 0, "wrote %llu bytes, layout has %llu",
                          (unsigned long long)w->pos, (unsigned long long)s->file_size);
    return ingot__wsink_zeros(w, s->file_size - w->pos, err); /* the last tensor's padding */
}

const ingot__writer_ops ingot__writer_gguf = {
    .init = init,
    .check_tensor = check_tensor,
    .begin = begin,
    .before_tensor = before_tensor,
    .finish = finish,
    .free_state = free_state,
    .set_option = set_option,
};
