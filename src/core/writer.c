/*
 * writer.c - the public streaming writer: description (metadata, tensors), the sink (atomic file
 * or memory), and the data pump that CRCs and writes tensor bytes chunk by chunk. The bytes around
 * the data come from the format's ingot__writer_ops.
 */
#include <string.h>

#include "alloc.h"
#include "checked.h"
#include "crc32c.h"
#include "error.h"
#include "file.h"
#include "guard.h"
#include "utf8.h"
#include "writer_impl.h"

size_t ingot__write_chunk = 1u << 20;

static ingot_status nomem(ingot_error *err, const char *what)
{
    return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating %s", what);
}

ingot_status ingot__writer_create(const ingot__writer_ops *ops, const ingot_writer_opts *opts,
                                  ingot_writer **out, ingot_error *err)
{
    if (!out) return INGOT_MISUSE;
    *out = NULL;
    /* 0 asks for the format's default; each format's init checks its own range. */
    uint32_t align = opts ? opts->alignment : 0;
    if (align && (!ing_is_pow2(align) || align > (1u << 20)))
        return ingot__err(err, INGOT_BAD_ALIGN, INGOT_NO_OFFSET, 0, 0,
                          "alignment %u is not a power of two up to 1 MiB", align);
    ingot_allocator a = {0};
    if (opts && opts->allocator) a = *opts->allocator;
    ingot_writer *w = ingot__calloc(&a, sizeof *w);
    if (!w) return nomem(err, "the writer");
    w->alloc = a;
    w->ops = ops;
    w->alignment = align;
    w->no_fsync = opts && opts->no_fsync;
    w->ingot_v1_0 = opts && opts->ingot_v1_0;
    w->af.fd = -1;
    w->af.dir_fd = -1;
    if (ops->init) {
        ingot_status st = ops->init(w, err);
        if (st != INGOT_OK) {
            ingot_writer_free(w);
            return st;
        }
    }
    *out = w;
    return INGOT_OK;
}

static void free_meta(ingot_writer *w, ingot__wmeta *m)
{
    ingot__free(&w->alloc, m->key, m->key_len + 1);
    ingot__free(&w->alloc, m->blob, m->blob_len);
    if (m->lens) ingot__free(&w->alloc, m->lens, (size_t)m->count * sizeof(uint64_t));
}

void ingot_writer_free(ingot_writer *w)
{
    if (!w) return;
    if (w->af.path || w->af.fd >= 0 || w->af.dir_fd >= 0) ingot__afile_abort(&w->af);
    if (w->ops && w->ops->free_state) w->ops->free_state(w);
    for (size_t i = 0; i < w->n_meta; i++) free_meta(w, &w->meta[i]);
    ingot__free(&w->alloc, w->meta, w->cap_meta * sizeof *w->meta);
    for (size_t i = 0; i < w->n_tensors; i++)
        ingot__free(&w->alloc, w->tensors[i].name,
                    ingot__wtensor_block(w->tensors[i].name_len, w->tensors[i].rank));
    ingot__free(&w->alloc, w->tensors, w->cap_tensors * sizeof *w->tensors);
    ingot__free(&w->alloc, w->mem, w->mem_cap);
    ingot__free(&w->alloc, w, sizeof *w);
}

size_t ingot_writer_remove_temporaries(void) { return ingot__afile_unlink_all(); }

void ingot_writer_set_progress(ingot_writer *w, ingot_progress_fn fn, void *ctx)
{
    if (!w) return;
    w->progress = fn;
    w->progress_ctx = ctx;
}

void ingot_writer_set_notice(ingot_writer *w, ingot_notice_fn fn, void *ctx)
{
    if (!w) return;
    w->notice = fn;
    w->notice_ctx = ctx;
}

bool ingot__writer_parse_size(const char *v, uint64_t *out)
{
    uint64_t n = 0;
    size_t i = 0;
    if (v[0] < '0' || v[0] > '9') return false;
    for (; v[i] >= '0' && v[i] <= '9'; i++)
        if (!ing_mul(n, 10, &n) || !ing_add(n, (uint64_t)(v[i] - '0'), &n)) return false;
    const char *u = v + i;
    static const struct {
        const char *s;
        uint64_t m;
    } units[] = {{"", 1},          {"B", 1},           {"KB", 1000ull},   {"MB", 1000000ull},
                 {"GB", 1000000000ull}, {"TB", 1000000000000ull}, {"KiB", 1ull << 10},
                 {"MiB", 1ull << 20}, {"GiB", 1ull << 30}, {"TiB", 1ull << 40}};
    for (size_t k = 0; k < sizeof units / sizeof units[0]; k++) {
        const char *a = units[k].s;
        size_t j = 0;
        while (a[j] && u[j] && (a[j] | 0x20) == (u[j] | 0x20)) j++;
        if (a[j] == 0 && u[j] == 0) return ing_mul(n, units[k].m, out) && *out > 0;
    }
    return false;
}

void ingot__writer_notice(ingot_writer *w, const char *fmt, ...)
{
    if (!w || !w->notice) return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    ingot__vfmt(msg, sizeof msg, fmt, ap);
    va_end(ap);
    w->notice(w->notice_ctx, msg);
}

ingot_status ingot_writer_set_option(ingot_writer *w, const char *key, const char *value,
                                     ingot_error *err)
{
    if (!w || !key || !value) return INGOT_MISUSE;
    if (w->state != WS_DESCRIBE)
        return ingot__err(err, INGOT_MISUSE, INGOT_NO_OFFSET, key, strlen(key),
                          "options are set before ingot_writer_begin()");
    if (!w->ops->set_option)
        return ingot__err(err, INGOT_UNSUPPORTED, INGOT_NO_OFFSET, key, strlen(key),
                          "this format has no options");
    return w->ops->set_option(w, key, value, err);
}

/* ---------------------------------------------------------------------------------------------
 * Description
 * ------------------------------------------------------------------------------------------- */

static ingot_status check_name(const char *s, size_t n, const char *what, ingot_error *err)
{
    if (n == 0 || n > 65535)
        return ingot__err(err, INGOT_BAD_NAME, INGOT_NO_OFFSET, s, n, "%s length %zu not in 1..65535",
                          what, n);
    if (!ingot__utf8_valid((const uint8_t *)s, n, false))
        return ingot__err(err, INGOT_BAD_NAME, INGOT_NO_OFFSET, s, n,
                          "%s is not valid UTF-8 without NUL", what);
    return INGOT_OK;
}

static ingot_status add_meta(ingot_writer *w, const char *key, ingot__wmeta *m, ingot_error *err)
{
    if (!w || !key) return INGOT_MISUSE;
    if (w->state != WS_DESCRIBE)
        return ingot__err(err, INGOT_MISUSE, INGOT_NO_OFFSET, key, strlen(key),
                          "metadata after ingot_writer_begin");
    size_t klen = strlen(key);
    ING_TRY(check_name(key, klen, "metadata key", err));
    for (size_t i = 0; i < w->n_meta; i++)
        if (w->meta[i].key_len == klen && memcmp(w->meta[i].key, key, klen) == 0)
            return ingot__err(err, INGOT_DUPLICATE, INGOT_NO_OFFSET, key, klen,
                              "metadata key already set");
    if (w->n_meta == w->cap_meta) {
        size_t nc = w->cap_meta ? w->cap_meta * 2 : 8;
        void *p = w->meta;
        if (!ingot__grow(&w->alloc, &p, w->cap_meta * sizeof *w->meta, nc * sizeof *w->meta))
            return nomem(err, "metadata");
        w->meta = p;
        w->cap_meta = nc;
    }
    m->key = ingot__strndup(&w->alloc, key, klen);
    if (!m->key) return nomem(err, "a key");
    m->key_len = (uint32_t)klen;
    w->meta[w->n_meta++] = *m;
    return INGOT_OK;
}

static ingot_status set_scalar(ingot_writer *w, const char *key, ingot_meta_type t, uint64_t bits)
{
    ingot__wmeta m = {.type = t, .count = 1, .scalar = bits};
    return add_meta(w, key, &m, NULL);
}

#define SETTER(suffix, TYPE, ctype, conv)                                                          \
    ingot_status ingot_writer_set_##suffix(ingot_writer *w, const char *key, ctype v)              \
    {                                                                                              \
        return set_scalar(w, key, INGOT_META_##TYPE, conv);                                        \
    }
SETTER(u8, U8, uint8_t, v)
SETTER(u16, U16, uint16_t, v)
SETTER(u32, U32, uint32_t, v)
SETTER(u64, U64, uint64_t, v)
SETTER(i8, I8, int8_t, (uint8_t)v)
SETTER(i16, I16, int16_t, (uint16_t)v)
SETTER(i32, I32, int32_t, (uint32_t)v)
SETTER(i64, I64, int64_t, (uint64_t)v)
SETTER(bool, BOOL, bool, v ? 1u : 0u)
#undef SETTER

ingot_status ingot_writer_set_f32(ingot_writer *w, const char *key, float v)
{
    uint32_t b;
    memcpy(&b, &v, 4);
    return set_scalar(w, key, INGOT_META_F32, b);
}

ingot_status ingot_writer_set_f64(ingot_writer *w, const char *key, double v)
{
    uint64_t b;
    memcpy(&b, &v, 8);
    return set_scalar(w, key, INGOT_META_F64, b);
}

static ingot_status set_blob(ingot_writer *w, const char *key, ingot_meta_type t, const void *v,
                             size_t len)
{
    if (!w || (!v && len)) return INGOT_MISUSE;
    ingot__wmeta m = {.type = t, .count = len, .blob_len = len};
    m.blob = ingot__alloc(&w->alloc, len);
    if (!m.blob) return INGOT_NOMEM;
    if (len) memcpy(m.blob, v, len);
    ingot_status st = add_meta(w, key, &m, NULL);
    if (st != INGOT_OK) ingot__free(&w->alloc, m.blob, len);
    return st;
}

ingot_status ingot_writer_set_stringn(ingot_writer *w, const char *key, const char *v, size_t len)
{
    if (v && !ingot__utf8_valid((const uint8_t *)v, len, true)) return INGOT_BAD_STRING;
    return set_blob(w, key, INGOT_META_STRING, v, len);
}

ingot_status ingot_writer_set_string(ingot_writer *w, const char *key, const char *v)
{
    if (!v) return INGOT_MISUSE;
    return ingot_writer_set_stringn(w, key, v, strlen(v));
}

ingot_status ingot_writer_set_bytes(ingot_writer *w, const char *key, const void *v, size_t len)
{
    return set_blob(w, key, INGOT_META_BYTES, v, len);
}

ingot_status ingot_writer_set_array(ingot_writer *w, const char *key, ingot_meta_type type,
                                    const void *elems, uint64_t count)
{
    uint32_t esz = ingot_meta_type_size(type);
    if (!w || !esz || (!elems && count)) return !esz ? INGOT_BAD_TYPE : INGOT_MISUSE;
    uint64_t bytes;
    if (!ing_mul(count, esz, &bytes) || bytes > SIZE_MAX / 2) return INGOT_LIMIT;
    ingot__wmeta m = {.type = type, .is_array = true, .count = count, .blob_len = (size_t)bytes};
    m.blob = ingot__alloc(&w->alloc, m.blob_len);
    if (!m.blob) return INGOT_NOMEM;
    const uint8_t *src = elems;
    for (uint64_t k = 0; k < count; k++) {
        /* store little-endian whatever the host */
        uint64_t v = 0;
        switch (esz) {
        case 1: v = src[k]; break;
        case 2: { uint16_t x; memcpy(&x, src + 2 * k, 2); v = x; break; }
        case 4: { uint32_t x; memcpy(&x, src + 4 * k, 4); v = x; break; }
        default: memcpy(&v, src + 8 * k, 8); break;
        }
        if (type == INGOT_META_BOOL && v > 1) v = 1;
        for (uint32_t b = 0; b < esz; b++) m.blob[k * esz + b] = (uint8_t)(v >> (8 * b));
    }
    ingot_status st = add_meta(w, key, &m, NULL);
    if (st != INGOT_OK) ingot__free(&w->alloc, m.blob, m.blob_len);
    return st;
}

ingot_status ingot_writer_set_string_array(ingot_writer *w, const char *key, ingot_meta_type type,
                                           const void *const *elems, const size_t *lens,
                                           uint64_t count)
{
    if (!w || (count && (!elems || !lens))) return INGOT_MISUSE;
    if (type != INGOT_META_STRING && type != INGOT_META_BYTES) return INGOT_BAD_TYPE;
    if (count > SIZE_MAX / sizeof(uint64_t)) return INGOT_LIMIT;
    uint64_t total = 0;
    for (uint64_t k = 0; k < count; k++) {
        if (!elems[k] && lens[k]) return INGOT_MISUSE;
        if (type == INGOT_META_STRING &&
            !ingot__utf8_valid((const uint8_t *)elems[k], lens[k], true))
            return INGOT_BAD_STRING;
        if (!ing_add(total, lens[k], &total) || total > SIZE_MAX / 2) return INGOT_LIMIT;
    }
    ingot__wmeta m = {.type = type, .is_array = true, .count = count, .blob_len = (size_t)total};
    m.blob = ingot__alloc(&w->alloc, m.blob_len);
    m.lens = ingot__alloc(&w->alloc, (size_t)count * sizeof(uint64_t));
    if (!m.blob || !m.lens) {
        ingot__free(&w->alloc, m.blob, m.blob_len);
        ingot__free(&w->alloc, m.lens, (size_t)count * sizeof(uint64_t));
        return INGOT_NOMEM;
    }
    size_t at = 0;
    for (uint64_t k = 0; k < count; k++) {
        if (lens[k]) memcpy(m.blob + at, elems[k], lens[k]);
        at += lens[k];
        m.lens[k] = lens[k];
    }
    ingot_status st = add_meta(w, key, &m, NULL);
    if (st != INGOT_OK) {
        ingot__free(&w->alloc, m.blob, m.blob_len);
        ingot__free(&w->alloc, m.lens, (size_t)count * sizeof(uint64_t));
    }
    return st;
}

ingot_status ingot_writer_add_tensor(ingot_writer *w, const char *name, ingot_dtype dtype,
                                     uint32_t rank, const uint64_t *shape,
                                     const ingot_tensor_opts *topts, const void *data,
                                     ingot_error *err)
{
    if (!w || !name || (rank && !shape)) return INGOT_MISUSE;
    size_t nlen = strlen(name);
    if (w->state != WS_DESCRIBE)
        return ingot__err(err, INGOT_MISUSE, INGOT_NO_OFFSET, name, nlen,
                          "tensor added after ingot_writer_begin");
    ING_TRY(check_name(name, nlen, "tensor name", err));
    ingot__wtensor t = {.dtype = dtype, .rank = rank, .data = data};
    if (rank > INGOT_MAX_RANK)
        return ingot__err(err, INGOT_BAD_NDIMS, INGOT_NO_OFFSET, name, nlen,
                          "rank %u exceeds %d (INGOT_MAX_RANK)", rank, INGOT_MAX_RANK);
    uint64_t sh[INGOT_MAX_RANK];
    for (uint32_t d = 0; d < rank; d++) sh[d] = shape[d];
    t.shape = sh; /* until the block exists (check_tensor sees it) */
    ingot_status st = ingot_dtype_nbytes(dtype, rank, sh, NULL, &t.nbytes);
    if (st != INGOT_OK)
        return ingot__err(err, st, INGOT_NO_OFFSET, name, nlen, "%s", ingot_status_str(st));
    if (topts && topts->has_param_id) {
        t.has_param_id = true;
        t.param_id = topts->param_id;
    }
    /* Names are unique. Linear scan: describing is not a hot path, and the format sorts later. */
    for (size_t i = 0; i < w->n_tensors; i++)
        if (w->tensors[i].name_len == nlen && memcmp(w->tensors[i].name, name, nlen) == 0)
            return ingot__err(err, INGOT_DUPLICATE, INGOT_NO_OFFSET, name, nlen,
                              "tensor name already used");
    if (w->ops->check_tensor) { /* the name is borrowed for the check: formats name it */
        t.name = (char *)(uintptr_t)name;
        t.name_len = (uint32_t)nlen;
        ingot_status cst = w->ops->check_tensor(w, &t, err);
        t.name = NULL;
        if (cst != INGOT_OK) return cst;
    }
    if (w->n_tensors == w->cap_tensors) {
        size_t nc = w->cap_tensors ? w->cap_tensors * 2 : 16;
        void *p = w->tensors;
        if (!ingot__grow(&w->alloc, &p, w->cap_tensors * sizeof *w->tensors,
                         nc * sizeof *w->tensors))
            return nomem(err, "the tensor list");
        w->tensors = p;
        w->cap_tensors = nc;
    }
    size_t block = ingot__wtensor_block(nlen, rank);
    uint64_t total;
    if (!ing_add(w->data_total, t.nbytes, &total))
        return ingot__err(err, INGOT_BAD_SIZE, INGOT_NO_OFFSET, name, nlen, "total size overflows");
    t.name = ingot__alloc(&w->alloc, block);
    if (!t.name) return nomem(err, "a tensor name");
    memcpy(t.name, name, nlen);
    t.name[nlen] = 0;
    t.name_len = (uint32_t)nlen;
    t.shape = rank ? (uint64_t *)(void *)(t.name + block - 8 * (size_t)rank) : NULL;
    for (uint32_t d = 0; d < rank; d++) t.shape[d] = sh[d];
    w->data_total = total;
    w->tensors[w->n_tensors++] = t;
    return INGOT_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Sink
 * ------------------------------------------------------------------------------------------- */

ingot_status ingot__wsink_write(ingot_writer *w, const void *buf, size_t n, ingot_error *err)
{
    if (w->to_mem) {
        if (n > SIZE_MAX - w->mem_len) return ingot__err(err, INGOT_LIMIT, w->pos, 0, 0, "too big");
        if (w->mem_len + n > w->mem_cap) {
            size_t nc = w->mem_cap ? w->mem_cap : 4096;
            while (nc < w->mem_len + n) nc = nc > SIZE_MAX / 2 ? SIZE_MAX : nc * 2;
            void *p = w->mem;
            if (!ingot__grow(&w->alloc, &p, w->mem_cap, nc)) return nomem(err, "the output");
            w->mem = p;
            w->mem_cap = nc;
        }
        if (n) memcpy(w->mem + w->mem_len, buf, n);
        w->mem_len += n;
    } else {
        ING_TRY(ingot__afile_write(&w->af, buf, n, err));
    }
    w->pos += n;
    return INGOT_OK;
}

ingot_status ingot__wsink_zeros(ingot_writer *w, uint64_t n, ingot_error *err)
{
    static const uint8_t zeros[4096];
    while (n) {
        size_t k = n < sizeof zeros ? (size_t)n : sizeof zeros;
        ING_TRY(ingot__wsink_write(w, zeros, k, err));
        n -= k;
    }
    return INGOT_OK;
}

ingot_status ingot__wsink_reserve(ingot_writer *w, uint64_t total, ingot_error *err)
{
    return w->to_mem ? INGOT_OK : ingot__afile_reserve(&w->af, total, err);
}

ingot_status ingot__wsink_pwrite(ingot_writer *w, uint64_t off, const void *buf, size_t n,
                                 ingot_error *err)
{
    if (w->to_mem) {
        if (off > w->mem_len || n > w->mem_len - off)
            return ingot__err(err, INGOT_MISUSE, off, 0, 0, "patch beyond the written bytes");
        memcpy(w->mem + off, buf, n);
        return INGOT_OK;
    }
    return ingot__afile_pwrite(&w->af, off, buf, n, err);
}

/* ---------------------------------------------------------------------------------------------
 * Streaming
 * ------------------------------------------------------------------------------------------- */

typedef struct {
    ingot_writer *w;
    const void *p;
    size_t n;
    uint32_t crc;
    bool is_bool;     /* the tensor is BOOL: every byte must be 0 or 1 */
    size_t bad;       /* index of the first other byte, n when none */
    uint8_t bad_byte; /* its value, read under the guard */
} crc_arg;

/* The reads of a chunk before it is written: CRC-32C, the BOOL value check (a file whose bytes
 * its own verify would refuse is never written), then the format's own hook. */
static ingot_status crc_fn(void *a)
{
    crc_arg *c = a;
    c->crc = ingot__crc32c_stream(c->crc, c->p, c->n);
    if (c->is_bool && (c->bad = ingot__first_non_bool(c->p, c->n)) < c->n) {
        c->bad_byte = ((const uint8_t *)c->p)[c->bad];
        return INGOT_OK;
    }
    if (c->w->ops->data_chunk) c->w->ops->data_chunk(c->w, c->w->cur, c->p, c->n);
    return INGOT_OK;
}

static ingot_status fail(ingot_writer *w, ingot_status st)
{
    w->state = WS_FAILED;
    if (!w->to_mem) ingot__afile_abort(&w->af);
    return st;
}

/* Writes bytes of the current tensor (n <= what remains of it). */
static ingot_status put_data(ingot_writer *w, const uint8_t *p, size_t n, ingot_error *err)
{
    ingot__wtensor *t = &w->tensors[w->cur];
    while (n) {
        size_t k = n < ingot__write_chunk ? n : ingot__write_chunk;
        /* CRC (and the format's data_chunk hook) first, under the SIGBUS guard (the source may
         * be a mapped file), then write the same chunk while it is in cache. */
        crc_arg c = {w, p, k, w->cur_crc, t->dtype == INGOT_DTYPE_BOOL, k, 0};
        ingot_status st = ingot__guard(crc_fn, &c);
        if (st != INGOT_OK)
            return ingot__err(err, st, INGOT_NO_OFFSET, t->name, t->name_len,
                              "source data faulted (SIGBUS)");
        if (c.bad < k)
            return ingot__err(err, INGOT_BAD_VALUE, INGOT_NO_OFFSET, t->name, t->name_len,
                              "BOOL byte %llu of the data is 0x%02x, not 0 or 1",
                              (unsigned long long)(w->cur_done + c.bad), (unsigned)c.bad_byte);
        ING_TRY(ingot__wsink_write(w, p, k, err));
        w->cur_crc = c.crc;
        w->cur_done += k;
        w->data_done += k;
        p += k;
        n -= k;
        if (w->progress) w->progress(w->progress_ctx, w->data_done, w->data_total);
    }
    return INGOT_OK;
}

/* Moves past complete tensors and writes those that carry their own data. Stops at the first
 * pushed tensor that still needs bytes, or at the end. */
static ingot_status pump(ingot_writer *w, ingot_error *err)
{
    while (w->cur < w->n_tensors) {
        ingot__wtensor *t = &w->tensors[w->cur];
        if (w->cur_done == 0 && t->nbytes == 0 && !t->data) {
            /* empty pushed tensor: nothing to wait for */
        } else if (t->data && w->cur_done < t->nbytes) {
            ING_TRY(put_data(w, (const uint8_t *)t->data + w->cur_done,
                             (size_t)(t->nbytes - w->cur_done), err));
        } else if (w->cur_done < t->nbytes) {
            return INGOT_OK; /* waiting for ingot_writer_write */
        }
        t->crc = w->cur_crc;
        w->cur++;
        w->cur_done = 0;
        w->cur_crc = 0;
        if (w->cur < w->n_tensors) ING_TRY(w->ops->before_tensor(w, w->cur, err));
    }
    return INGOT_OK;
}

static ingot_status start(ingot_writer *w, ingot_error *err)
{
    if (w->n_tensors > SIZE_MAX / 2) return INGOT_LIMIT;
    for (size_t i = 0; i < w->n_tensors; i++)
        if (w->tensors[i].nbytes > SIZE_MAX)
            return ingot__err(err, INGOT_LIMIT, INGOT_NO_OFFSET, w->tensors[i].name,
                              w->tensors[i].name_len, "tensor larger than the address space");
    uint64_t total = 0;
    ING_TRY(w->ops->begin(w, &total, err));
    w->cur = 0;
    w->cur_done = 0;
    w->cur_crc = 0;
    if (w->n_tensors) ING_TRY(w->ops->before_tensor(w, 0, err));
    return pump(w, err);
}

ingot_status ingot_writer_begin(ingot_writer *w, const char *path, ingot_error *err)
{
    if (!w || !path) return INGOT_MISUSE;
    if (w->state != WS_DESCRIBE)
        return ingot__err(err, INGOT_MISUSE, INGOT_NO_OFFSET, 0, 0, "writer already begun");
    ING_TRY(ingot__afile_create(&w->af, &w->alloc, path, !w->no_fsync, err));
    w->state = WS_STREAM;
    ingot_status st = start(w, err);
    return st == INGOT_OK ? st : fail(w, st);
}

ingot_status ingot_writer_begin_mem(ingot_writer *w, ingot_error *err)
{
    if (!w) return INGOT_MISUSE;
    if (w->state != WS_DESCRIBE)
        return ingot__err(err, INGOT_MISUSE, INGOT_NO_OFFSET, 0, 0, "writer already begun");
    w->to_mem = true;
    w->state = WS_STREAM;
    ingot_status st = start(w, err);
    return st == INGOT_OK ? st : fail(w, st);
}

ingot_status ingot_writer_write(ingot_writer *w, const void *chunk, size_t n, ingot_error *err)
{
    if (!w || (!chunk && n)) return INGOT_MISUSE;
    if (w->state != WS_STREAM)
        return ingot__err(err, INGOT_MISUSE, INGOT_NO_OFFSET, 0, 0, "writer not streaming");
    const uint8_t *p = chunk;
    while (n) {
        if (w->cur >= w->n_tensors)
            return fail(w, ingot__err(err, INGOT_RANGE, INGOT_NO_OFFSET, 0, 0,
                                      "%zu bytes more than the declared tensors hold", n));
        ingot__wtensor *t = &w->tensors[w->cur];
        uint64_t left = t->nbytes - w->cur_done;
        size_t k = n < left ? n : (size_t)left;
        ingot_status st = put_data(w, p, k, err);
        if (st == INGOT_OK) st = pump(w, err);
        if (st != INGOT_OK) return fail(w, st);
        p += k;
        n -= k;
    }
    return INGOT_OK;
}

static ingot_status finish(ingot_writer *w, ingot_error *err)
{
    if (w->state != WS_STREAM)
        return ingot__err(err, INGOT_MISUSE, INGOT_NO_OFFSET, 0, 0, "writer not streaming");
    if (w->cur < w->n_tensors) {
        ingot__wtensor *t = &w->tensors[w->cur];
        return fail(w, ingot__err(err, INGOT_MISUSE, INGOT_NO_OFFSET, t->name, t->name_len,
                                  "commit before all tensor data was written (%llu of %llu bytes)",
                                  (unsigned long long)w->cur_done,
                                  (unsigned long long)t->nbytes));
    }
    ingot_status st = w->ops->finish(w, err);
    if (st != INGOT_OK) return fail(w, st);
    return INGOT_OK;
}

ingot_status ingot_writer_commit(ingot_writer *w, ingot_error *err)
{
    if (!w) return INGOT_MISUSE;
    if (w->to_mem)
        return ingot__err(err, INGOT_MISUSE, INGOT_NO_OFFSET, 0, 0, "use ingot_writer_commit_mem");
    ING_TRY(finish(w, err));
    ingot_status st = w->ops->commit ? w->ops->commit(w, err) : ingot__afile_commit(&w->af, err);
    w->state = st == INGOT_OK ? WS_DONE : WS_FAILED;
    return st;
}

ingot_status ingot_writer_commit_mem(ingot_writer *w, void **out, size_t *size, ingot_error *err)
{
    if (!w || !out || !size) return INGOT_MISUSE;
    *out = NULL;
    *size = 0;
    if (!w->to_mem)
        return ingot__err(err, INGOT_MISUSE, INGOT_NO_OFFSET, 0, 0, "use ingot_writer_commit");
    ING_TRY(finish(w, err));
    /* Hand over an exactly sized buffer so the caller frees with the size it was given. */
    void *p = ingot__alloc(&w->alloc, w->mem_len);
    if (!p) return fail(w, nomem(err, "the output"));
    if (w->mem_len) memcpy(p, w->mem, w->mem_len);
    *out = p;
    *size = w->mem_len;
    w->state = WS_DONE;
    return INGOT_OK;
}

void ingot_writer_free_mem(const ingot_allocator *allocator, void *p, size_t size)
{
    ingot__free(allocator, p, size);
}

ingot_status ingot_writer_save(ingot_writer *w, const char *path, ingot_error *err)
{
    if (!w) return INGOT_MISUSE;
    for (size_t i = 0; i < w->n_tensors; i++)
        if (!w->tensors[i].data && w->tensors[i].nbytes)
            return ingot__err(err, INGOT_MISUSE, INGOT_NO_OFFSET, w->tensors[i].name,
                              w->tensors[i].name_len, "tensor has no data pointer");
    ING_TRY(ingot_writer_begin(w, path, err));
    return ingot_writer_commit(w, err);
}
