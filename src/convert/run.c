/*
 * run.c - running a conversion plan (include/ingot/convert.h section 3): describes the target to
 * the format's writer (redescribing once per dtype a format refuses only at begin), then streams
 * every tensor through bounded buffers, converting where the plan says, and commits atomically.
 * Lossy steps become ingot_lossy records; nothing here prints.
 */
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "convert_impl.h"
#include "error.h"

#define IO_CHUNK (4u << 20)          /* bytes copied per step when no conversion happens */
#define CONV_CHUNK_ELEMS (1u << 20)  /* elements converted per step (a multiple of 256) */

/* ---------------------------------------------------------------------------------------------
 * Result and records
 * ------------------------------------------------------------------------------------------- */

typedef struct {
    ingot_lossy rec;
    char *message, *name; /* owned; rec points at them */
} record;

struct ingot_convert_result {
    ingot_convert_summary s;
    record *recs;
    uint64_t n, cap;
    uint64_t delivered;
};

static void rec_free(record *r)
{
    if (r->message) ingot__free(NULL, r->message, strlen(r->message) + 1);
    if (r->name) ingot__free(NULL, r->name, strlen(r->name) + 1);
}

void ingot_convert_result_free(ingot_convert_result *r)
{
    if (!r) return;
    for (uint64_t i = 0; i < r->n; i++) rec_free(&r->recs[i]);
    if (r->recs) ingot__free(NULL, r->recs, (size_t)r->cap * sizeof *r->recs);
    ingot__free(NULL, r, sizeof *r);
}

void ingot_convert_result_summary(const ingot_convert_result *r, ingot_convert_summary *out)
{
    if (!out) return;
    if (!r) {
        memset(out, 0, sizeof *out);
        out->failed_tensor = UINT64_MAX;
        return;
    }
    *out = r->s;
}

uint64_t ingot_convert_result_lossy_count(const ingot_convert_result *r) { return r ? r->n : 0; }

ingot_status ingot_convert_result_lossy_at(const ingot_convert_result *r, uint64_t i,
                                           ingot_lossy *out)
{
    if (!r || !out || i >= r->n) {
        if (out) memset(out, 0, sizeof *out);
        return r && out ? INGOT_RANGE : INGOT_MISUSE;
    }
    *out = r->recs[i].rec;
    return INGOT_OK;
}

/* Appends a record (message and name copied). False when out of memory (the record is lost:
 * the run then fails with NOMEM, so nothing lossy happens unreported). */
static bool add_record(ingot_convert_result *r, ingot_lossy_kind kind, const char *msg,
                       const char *name, ingot_dtype from, ingot_dtype to, uint64_t count)
{
    if (r->n == r->cap) {
        uint64_t nc = r->cap * 2 + 8;
        if (!ingot__grow(NULL, (void **)&r->recs, (size_t)r->cap * sizeof *r->recs,
                         (size_t)nc * sizeof *r->recs))
            return false;
        r->cap = nc;
    }
    record *x = &r->recs[r->n];
    memset(x, 0, sizeof *x);
    x->message = ingot__strndup(NULL, msg, strlen(msg));
    x->name = ingot__strndup(NULL, name ? name : "", name ? strlen(name) : 0);
    if (!x->message || !x->name) {
        rec_free(x);
        return false;
    }
    x->rec = (ingot_lossy){kind, x->message, x->name, from, to, count};
    r->n++;
    return true;
}

/* Forgets the records from index `from` on (a description that is redone). */
static void drop_records(ingot_convert_result *r, uint64_t from)
{
    while (r->n > from) rec_free(&r->recs[--r->n]);
}

/* ---------------------------------------------------------------------------------------------
 * The job
 * ------------------------------------------------------------------------------------------- */

/* How an entry's data reaches the writer. */
typedef enum {
    M_DROP, M_POINTER, M_COPY, M_CAST, M_QUANT, M_DEQ
} mode;

typedef struct {
    const ingot_convert_plan *p;
    const ingot_file *f;
    const ingot_convert_opts *o;
    const char *path, *format;
    ingot_writer_opts wo;
    ingot_dtype dq;
    mode *m;           /* per entry */
    ingot_dtype *to;   /* per entry: the dtype stored */
    bool *fallback;    /* per entry: DEQ because the target refused the dtype */
    ingot_dtype forced[64]; /* source dtypes a format refused at begin: converted from the start */
    int n_forced;
    ingot_convert_result *r;
    bool nomem;        /* a record could not be kept */
} job;

static void fail_at(job *j, ingot_convert_stage stage, uint64_t tensor)
{
    j->r->s.failed_stage = stage;
    j->r->s.failed_tensor = tensor;
}

static void on_notice(void *ctx, const char *msg)
{
    job *j = ctx;
    if (!add_record(j->r, INGOT_LOSSY_METADATA, msg, "", INGOT_DTYPE_INVALID, INGOT_DTYPE_INVALID,
                    1))
        j->nomem = true;
}

static void deliver(job *j)
{
    for (; j->r->delivered < j->r->n; j->r->delivered++)
        if (j->o->lossy) j->o->lossy(j->o->lossy_ctx, &j->r->recs[j->r->delivered].rec);
}

static bool refusal(ingot_status st) { return st == INGOT_UNSUPPORTED || st == INGOT_BAD_TYPE; }

static bool is_forced(const job *j, ingot_dtype dt)
{
    for (int k = 0; k < j->n_forced; k++)
        if (j->forced[k] == dt) return true;
    return false;
}

/* Whether the writer may take tensor t by pointer: its stored bytes are its dense bytes and are
 * mapped. Not BOOL: reading it checks every byte is 0 or 1 (BAD_VALUE), a pointer does not. */
static bool by_pointer(const ingot_tensor_info *t)
{
    const uint32_t not_dense = INGOT_TENSOR_BIG_ENDIAN | INGOT_TENSOR_FORTRAN |
                               INGOT_TENSOR_STRIDED | INGOT_TENSOR_NOT_MAPPED;
    return t->data && !(t->flags & not_dense) && t->dtype != INGOT_DTYPE_BOOL;
}

static ingot_status set_options(ingot_writer *w, const ingot_convert_opts *o, ingot_error *e)
{
    for (size_t i = 0; i < o->n_options; i++) {
        const char *kv = o->options[i], *eq = kv ? strchr(kv, '=') : NULL;
        char key[128];
        size_t kl = eq ? (size_t)(eq - kv) : 0;
        if (!eq || kl == 0 || kl >= sizeof key)
            return ingot__err(e, INGOT_MISUSE, INGOT_NO_OFFSET, kv ? kv : "", kv ? strlen(kv) : 0,
                              "writer option '%s': expected KEY=VALUE", kv ? kv : "(null)");
        memcpy(key, kv, kl);
        key[kl] = '\0';
        ING_TRY(ingot_writer_set_option(w, key, eq + 1, e));
    }
    return INGOT_OK;
}

/* Copies source metadata entry m to the writer under `key`. */
static ingot_status copy_meta(ingot_writer *w, const ingot_file *f, const ingot_meta_info *m,
                              const char *key)
{
    ingot_status st = INGOT_OK;
    if (!m->is_array) {
        switch (m->type) {
        case INGOT_META_U8: return ingot_writer_set_u8(w, key, (uint8_t)m->v.u);
        case INGOT_META_U16: return ingot_writer_set_u16(w, key, (uint16_t)m->v.u);
        case INGOT_META_U32: return ingot_writer_set_u32(w, key, (uint32_t)m->v.u);
        case INGOT_META_U64: return ingot_writer_set_u64(w, key, m->v.u);
        case INGOT_META_I8: return ingot_writer_set_i8(w, key, (int8_t)m->v.i);
        case INGOT_META_I16: return ingot_writer_set_i16(w, key, (int16_t)m->v.i);
        case INGOT_META_I32: return ingot_writer_set_i32(w, key, (int32_t)m->v.i);
        case INGOT_META_I64: return ingot_writer_set_i64(w, key, m->v.i);
        case INGOT_META_F32: return ingot_writer_set_f32(w, key, (float)m->v.f);
        case INGOT_META_F64: return ingot_writer_set_f64(w, key, m->v.f);
        case INGOT_META_BOOL: return ingot_writer_set_bool(w, key, m->v.b);
        case INGOT_META_STRING: return ingot_writer_set_stringn(w, key, m->data, (size_t)m->count);
        case INGOT_META_BYTES: return ingot_writer_set_bytes(w, key, m->data, (size_t)m->count);
        default: return INGOT_BAD_TYPE;
        }
    }
    size_t n = m->count ? (size_t)m->count : 1;
    if (m->type == INGOT_META_STRING || m->type == INGOT_META_BYTES) {
        const void **elems = ingot__calloc(NULL, n * sizeof *elems);
        size_t *lens = ingot__calloc(NULL, n * sizeof *lens);
        if (!elems || !lens) st = INGOT_NOMEM;
        for (uint64_t k = 0; st == INGOT_OK && k < m->count; k++) {
            const char *s;
            st = ingot_file_meta_array_string(f, m->index, k, &s, &lens[k]);
            elems[k] = s;
        }
        if (st == INGOT_OK)
            st = ingot_writer_set_string_array(w, key, m->type, elems, lens, m->count);
        if (elems) ingot__free(NULL, elems, n * sizeof *elems);
        if (lens) ingot__free(NULL, lens, n * sizeof *lens);
        return st;
    }
    uint32_t esz = ingot_meta_type_size(m->type);
    void *buf = ingot__alloc(NULL, n * esz);
    if (!buf) return INGOT_NOMEM;
    st = ingot_file_meta_array_read(f, m->index, m->type, 0, m->count, buf);
    if (st == INGOT_OK) st = ingot_writer_set_array(w, key, m->type, buf, m->count);
    ingot__free(NULL, buf, n * esz);
    return st;
}

/* Sets a value the plan owns. */
static ingot_status set_owned(ingot_writer *w, const ingot__plan_meta *m)
{
    const char *key = m->key;
    if (m->is_array) {
        if (m->type != INGOT_META_STRING && m->type != INGOT_META_BYTES)
            return ingot_writer_set_array(w, key, m->type, m->data, m->count);
        size_t n = m->count ? (size_t)m->count : 1;
        const void **elems = ingot__calloc(NULL, n * sizeof *elems);
        size_t *lens = ingot__calloc(NULL, n * sizeof *lens);
        ingot_status st = elems && lens ? INGOT_OK : INGOT_NOMEM;
        for (uint64_t k = 0; st == INGOT_OK && k < m->count; k++) {
            elems[k] = m->elems[k].data;
            lens[k] = m->elems[k].len;
        }
        if (st == INGOT_OK)
            st = ingot_writer_set_string_array(w, key, m->type, elems, lens, m->count);
        if (elems) ingot__free(NULL, elems, n * sizeof *elems);
        if (lens) ingot__free(NULL, lens, n * sizeof *lens);
        return st;
    }
    const void *d = m->data;
    switch (m->type) {
    case INGOT_META_U8: return ingot_writer_set_u8(w, key, *(const uint8_t *)d);
    case INGOT_META_U16: { uint16_t v; memcpy(&v, d, 2); return ingot_writer_set_u16(w, key, v); }
    case INGOT_META_U32: { uint32_t v; memcpy(&v, d, 4); return ingot_writer_set_u32(w, key, v); }
    case INGOT_META_U64: { uint64_t v; memcpy(&v, d, 8); return ingot_writer_set_u64(w, key, v); }
    case INGOT_META_I8: return ingot_writer_set_i8(w, key, *(const int8_t *)d);
    case INGOT_META_I16: { int16_t v; memcpy(&v, d, 2); return ingot_writer_set_i16(w, key, v); }
    case INGOT_META_I32: { int32_t v; memcpy(&v, d, 4); return ingot_writer_set_i32(w, key, v); }
    case INGOT_META_I64: { int64_t v; memcpy(&v, d, 8); return ingot_writer_set_i64(w, key, v); }
    case INGOT_META_F32: { float v; memcpy(&v, d, 4); return ingot_writer_set_f32(w, key, v); }
    case INGOT_META_F64: { double v; memcpy(&v, d, 8); return ingot_writer_set_f64(w, key, v); }
    case INGOT_META_BOOL: return ingot_writer_set_bool(w, key, *(const uint8_t *)d != 0);
    case INGOT_META_STRING: return ingot_writer_set_stringn(w, key, d, (size_t)m->count);
    case INGOT_META_BYTES: return ingot_writer_set_bytes(w, key, d, (size_t)m->count);
    default: return INGOT_BAD_TYPE;
    }
}

/* describe()'s result when the description stood but ingot_writer_begin() failed (the error is
 * in *e; the caller may retry). */
#define BEGIN_FAILED (-1)

/* Describes the whole target to a new writer (*wout, freed by the caller even on failure) and
 * begins it. Returns OK, BEGIN_FAILED, or an error with the stage recorded. */
static int describe(job *j, ingot_writer **wout, ingot_error *e)
{
    ingot_writer *w;
    *wout = NULL;
    if (ingot_writer_new(&j->wo, &w, e) != INGOT_OK) {
        fail_at(j, INGOT_CONVERT_STAGE_TARGET, UINT64_MAX);
        return e->code;
    }
    *wout = w;
    ingot_writer_set_notice(w, on_notice, j);
    if (set_options(w, j->o, e) != INGOT_OK) {
        fail_at(j, INGOT_CONVERT_STAGE_OPTION, UINT64_MAX);
        return e->code;
    }
    const ingot_convert_plan *p = j->p;
    for (uint64_t i = 0; i < p->nm; i++) {
        const ingot__plan_meta *m = &p->m[i];
        ingot_status st;
        if (m->from_src) {
            ingot_meta_info mi;
            ingot_file_meta_at(j->f, m->src_index, &mi);
            st = copy_meta(w, j->f, &mi, m->key);
        } else {
            st = set_owned(w, m);
        }
        if (st != INGOT_OK) {
            ingot__err(e, st, INGOT_NO_OFFSET, m->key, m->key_len, "%s", ingot_status_str(st));
            fail_at(j, INGOT_CONVERT_STAGE_METADATA, UINT64_MAX);
            return st;
        }
    }
    /* A KEEP tensor whose stored bytes are its dense bytes and are mapped is handed over by
     * pointer (the writer reads it under the SIGBUS guard, in whatever order the target stores
     * tensors); the others are pushed in plan order. A KEEP tensor the target refuses is, with
     * `dequantize`, described again as that float dtype and pushed converted. */
    for (uint64_t i = 0; i < p->nt; i++) {
        const ingot__plan_tensor *pe = &p->t[i];
        j->fallback[i] = false;
        if (pe->action == INGOT_CONVERT_DROP) {
            j->m[i] = M_DROP;
            continue;
        }
        ingot_tensor_info t;
        ingot_file_tensor_at(j->f, i, &t);
        const char *name = ingot__plan_name(p, i, NULL);
        ingot_tensor_opts to = {(t.flags & INGOT_TENSOR_HAS_PARAM_ID) != 0, t.param_id};
        ingot_status st = INGOT_UNSUPPORTED;
        if (pe->action == INGOT_CONVERT_KEEP) {
            bool convertible = j->dq != INGOT_DTYPE_INVALID && ingot_dtype_is_float_like(t.dtype) &&
                               t.dtype != j->dq;
            bool ptr = by_pointer(&t) && !pe->permute_heads;
            if (!(convertible && is_forced(j, t.dtype))) {
                st = ingot_writer_add_tensor(w, name, t.dtype, t.rank, t.shape, &to,
                                             ptr ? t.data : NULL, e);
                j->m[i] = ptr ? M_POINTER : M_COPY;
                j->to[i] = t.dtype;
            }
            if (st != INGOT_OK && refusal(st) && convertible) {
                st = ingot_writer_add_tensor(w, name, j->dq, t.rank, t.shape, &to, NULL, e);
                j->m[i] = M_DEQ;
                j->to[i] = j->dq;
                j->fallback[i] = true;
            }
        } else {
            st = ingot_writer_add_tensor(w, name, pe->dtype, t.rank, t.shape, &to, NULL, e);
            j->m[i] = pe->action == INGOT_CONVERT_CAST       ? M_CAST
                      : pe->action == INGOT_CONVERT_QUANTIZE ? M_QUANT
                                                             : M_DEQ;
            j->to[i] = pe->dtype;
        }
        if (st != INGOT_OK) {
            fail_at(j, INGOT_CONVERT_STAGE_TARGET, i);
            return st;
        }
    }
    ingot_writer_set_progress(w, j->o->progress, j->o->progress_ctx);
    if (ingot_writer_begin(w, j->path, e) != INGOT_OK) return BEGIN_FAILED;
    return INGOT_OK;
}

/* The entry a writer error names by its target name (`where` may be a cut name), or
 * UINT64_MAX. */
static uint64_t entry_named(const job *j, const ingot_error *e)
{
    size_t wl = strnlen(e->where, sizeof e->where);
    if (!wl) return UINT64_MAX;
    const ingot_convert_plan *p = j->p;
    for (int pass = 0; pass < 2; pass++)
        for (uint64_t i = 0; i < p->nt; i++) {
            if (p->t[i].action == INGOT_CONVERT_DROP) continue;
            size_t n;
            const char *name = ingot__plan_name(p, i, &n);
            if (pass == 0 ? n == wl && memcmp(name, e->where, wl) == 0
                          : wl == sizeof e->where - 1 && n >= wl && memcmp(name, e->where, wl) == 0)
                return i;
        }
    return UINT64_MAX;
}

/* Whether a cast from `from` to `to` keeps every value exactly. */
static bool cast_exact(ingot_dtype from, ingot_dtype to)
{
    bool f8 = from == INGOT_DTYPE_F8_E4M3 || from == INGOT_DTYPE_F8_E5M2 ||
              from == INGOT_DTYPE_F8_E4M3FNUZ || from == INGOT_DTYPE_F8_E5M2FNUZ;
    switch (to) {
    case INGOT_DTYPE_F64: return true;
    case INGOT_DTYPE_F32: return from != INGOT_DTYPE_F64;
    case INGOT_DTYPE_F16: return f8;
    case INGOT_DTYPE_BF16: return f8 || from == INGOT_DTYPE_F8_E8M0;
    default: return from == to;
    }
}

/* One record per (kind, source dtype, target dtype) of converted tensors, in the order of their
 * first tensor: dequantized first, then cast, then quantized. Counts them in the summary. */
static void conversion_records(job *j)
{
    const ingot_convert_plan *p = j->p;
    static const mode kinds[] = {M_DEQ, M_CAST, M_QUANT};
    for (size_t kk = 0; kk < 3; kk++) {
        mode want = kinds[kk];
        for (uint64_t i = 0; i < p->nt; i++) {
            if (j->m[i] != want) continue;
            ingot_tensor_info t;
            ingot_file_tensor_at(j->f, i, &t);
            bool seen = false;
            for (uint64_t k = 0; k < i && !seen; k++) {
                ingot_tensor_info u;
                ingot_file_tensor_at(j->f, k, &u);
                seen = j->m[k] == want && u.dtype == t.dtype && j->to[k] == j->to[i];
            }
            if (seen) continue;
            uint64_t n = 0;
            for (uint64_t k = i; k < p->nt; k++) {
                ingot_tensor_info u;
                ingot_file_tensor_at(j->f, k, &u);
                n += j->m[k] == want && u.dtype == t.dtype && j->to[k] == j->to[i];
            }
            const char *sn = ingot_dtype_name(t.dtype), *dn = ingot_dtype_name(j->to[i]);
            char msg[512];
            ingot_lossy_kind kind;
            if (want == M_DEQ) {
                j->r->s.dequantized += n;
                kind = INGOT_LOSSY_DEQUANTIZED;
                if (j->fallback[i])
                    snprintf(msg, sizeof msg,
                             "%llu %s tensor%s dequantized to %s (the target cannot store %s; "
                             "first '%s')",
                             (unsigned long long)n, sn, n == 1 ? "" : "s", dn, sn, t.name);
                else
                    snprintf(msg, sizeof msg, "%llu %s tensor%s dequantized to %s (first '%s')",
                             (unsigned long long)n, sn, n == 1 ? "" : "s", dn, t.name);
            } else if (want == M_CAST) {
                j->r->s.cast += n;
                kind = INGOT_LOSSY_CAST;
                if (cast_exact(t.dtype, j->to[i])) continue;
                snprintf(msg, sizeof msg, "%llu %s tensor%s cast to %s (first '%s')",
                         (unsigned long long)n, sn, n == 1 ? "" : "s", dn, t.name);
            } else {
                j->r->s.quantized += n;
                kind = INGOT_LOSSY_QUANTIZED;
                snprintf(msg, sizeof msg, "%llu %s tensor%s quantized to %s (first '%s')",
                         (unsigned long long)n, sn, n == 1 ? "" : "s", dn, t.name);
            }
            if (!add_record(j->r, kind, msg, t.name, t.dtype, j->to[i], n)) j->nomem = true;
        }
    }
}

/* ---------------------------------------------------------------------------------------------
 * Streaming
 * ------------------------------------------------------------------------------------------- */

typedef struct {
    uint8_t *io, *sbuf, *obuf; /* IO_CHUNK; CONV_CHUNK_ELEMS * 8; CONV_CHUNK_ELEMS * 8 */
    float *fbuf;               /* CONV_CHUNK_ELEMS */
} buffers;

static bool cancelled(const job *j) { return j->o->cancel && j->o->cancel(j->o->cancel_ctx); }

/* Tensor i's dense C-order little-endian bytes in memory, rows permuted if the plan says so
 * (*out allocated, size t->nbytes). */
static ingot_status materialise(const job *j, uint64_t i, const ingot_tensor_info *t,
                                uint8_t **out, ingot_error *e)
{
    size_t n = t->nbytes ? (size_t)t->nbytes : 1;
    uint8_t *d = ingot__alloc(NULL, n);
    *out = NULL;
    if (!d) return ingot__err(e, INGOT_NOMEM, INGOT_NO_OFFSET, t->name, t->name_len,
                              "out of memory for %llu bytes", (unsigned long long)t->nbytes);
    ingot_status st = ingot_file_tensor_copy(j->f, i, d, (size_t)t->nbytes, e);
    const ingot__plan_tensor *pe = &j->p->t[i];
    if (st == INGOT_OK && pe->permute_heads && t->nbytes) {
        uint8_t *q = ingot__alloc(NULL, n);
        if (!q) {
            st = ingot__err(e, INGOT_NOMEM, INGOT_NO_OFFSET, t->name, t->name_len,
                            "out of memory");
        } else {
            uint64_t rows = t->shape[0], rb = t->nbytes / rows, hd = pe->permute_heads;
            uint64_t half = rows / (2 * hd);
            for (uint64_t h = 0; h < hd; h++)
                for (uint64_t a = 0; a < half; a++)
                    for (uint64_t b = 0; b < 2; b++) {
                        /* Hugging Face order (h, 2, half) -> GGUF order (h, half, 2) */
                        uint64_t hf = h * 2 * half + b * half + a, gg = h * 2 * half + a * 2 + b;
                        uint64_t to = pe->permute_inverse ? hf : gg;
                        uint64_t from = pe->permute_inverse ? gg : hf;
                        memcpy(q + to * rb, d + from * rb, (size_t)rb);
                    }
            ingot__free(NULL, d, n);
            d = q;
        }
    }
    if (st != INGOT_OK) {
        ingot__free(NULL, d, n);
        return st;
    }
    *out = d;
    return INGOT_OK;
}

/* Puts the tensor's name into an error about its values (the converters name the dtype). */
static ingot_status name_error(ingot_error *e, const ingot_tensor_info *t)
{
    char msg[sizeof e->msg];
    memcpy(msg, e->msg, sizeof msg);
    msg[sizeof msg - 1] = '\0';
    return ingot__err(e, e->code, e->offset, t->name, t->name_len, "%s", msg);
}

/* Pushes entry i's data. */
static ingot_status push(job *j, ingot_writer *w, uint64_t i, buffers *b, ingot_error *e)
{
    ingot_tensor_info t;
    ingot_file_tensor_at(j->f, i, &t);
    const mode md = j->m[i];
    const ingot_dtype to = j->to[i];
    const uint32_t relayout = INGOT_TENSOR_BIG_ENDIAN | INGOT_TENSOR_FORTRAN | INGOT_TENSOR_STRIDED;
    uint8_t *dense = NULL;
    ingot_status st = INGOT_OK;
    if ((t.flags & relayout) || j->p->t[i].permute_heads) {
        st = materialise(j, i, &t, &dense, e);
        if (st != INGOT_OK) {
            fail_at(j, st == INGOT_NOMEM ? INGOT_CONVERT_STAGE_NONE : INGOT_CONVERT_STAGE_SOURCE,
                    i);
            return st;
        }
    }
    if (md == M_COPY) {
        if (dense) {
            if ((st = ingot_writer_write(w, dense, (size_t)t.nbytes, e)) != INGOT_OK)
                fail_at(j, INGOT_CONVERT_STAGE_TARGET, i);
        }
        for (uint64_t done = 0; !dense && done < t.nbytes && st == INGOT_OK;) {
            size_t k = t.nbytes - done < IO_CHUNK ? (size_t)(t.nbytes - done) : IO_CHUNK;
            if (cancelled(j)) {
                st = ingot__err(e, INGOT_CANCELLED, INGOT_NO_OFFSET, t.name, t.name_len,
                                "cancelled");
                fail_at(j, INGOT_CONVERT_STAGE_NONE, i);
            } else if ((st = ingot_file_tensor_read(j->f, i, done, b->io, k, e)) != INGOT_OK) {
                fail_at(j, INGOT_CONVERT_STAGE_SOURCE, i);
            } else if ((st = ingot_writer_write(w, b->io, k, e)) != INGOT_OK) {
                fail_at(j, INGOT_CONVERT_STAGE_TARGET, i);
            }
            done += k;
        }
        if (dense) ingot__free(NULL, dense, t.nbytes ? (size_t)t.nbytes : 1);
        return st;
    }
    const uint32_t be = ingot_dtype_block_elems(t.dtype), bb = ingot_dtype_block_bytes(t.dtype);
    const uint32_t obe = ingot_dtype_block_elems(to), obb = ingot_dtype_block_bytes(to);
    const uint64_t step = CONV_CHUNK_ELEMS; /* a multiple of every block size */
    for (uint64_t done = 0; done < t.nelem && st == INGOT_OK;) {
        uint64_t k = t.nelem - done < step ? t.nelem - done : step;
        size_t sn = (size_t)(k / be * bb), on = (size_t)(k / obe * obb);
        if (cancelled(j)) {
            st = ingot__err(e, INGOT_CANCELLED, INGOT_NO_OFFSET, t.name, t.name_len, "cancelled");
            fail_at(j, INGOT_CONVERT_STAGE_NONE, i);
            break;
        }
        const uint8_t *src = dense ? dense + done / be * bb : b->sbuf;
        if (!dense && (st = ingot_file_tensor_read(j->f, i, done / be * bb, b->sbuf, sn, e)) !=
                          INGOT_OK) {
            fail_at(j, INGOT_CONVERT_STAGE_SOURCE, i);
            break;
        }
        if (md == M_CAST || (md == M_DEQ && ingot__is_float_dtype(t.dtype))) {
            st = ingot_cast(t.dtype, src, sn, to, b->obuf, on, k, e);
        } else if (md == M_DEQ) {
            st = ingot_dequantize(t.dtype, src, sn, b->fbuf, k, e);
            if (st == INGOT_OK) st = ingot_f32_encode(to, b->fbuf, k, b->obuf, on, e);
        } else { /* M_QUANT */
            st = ingot_dequantize(t.dtype, src, sn, b->fbuf, k, e);
            if (st == INGOT_OK) st = ingot_quantize(to, b->fbuf, k, b->obuf, on, e);
        }
        if (st != INGOT_OK) {
            name_error(e, &t);
            fail_at(j, INGOT_CONVERT_STAGE_SOURCE, i);
            break;
        }
        if ((st = ingot_writer_write(w, b->obuf, on, e)) != INGOT_OK)
            fail_at(j, INGOT_CONVERT_STAGE_TARGET, i);
        done += k;
    }
    if (dense) ingot__free(NULL, dense, t.nbytes ? (size_t)t.nbytes : 1);
    return st;
}

/* ---------------------------------------------------------------------------------------------
 * The run
 * ------------------------------------------------------------------------------------------- */

static ingot_status nomem(job *j, ingot_error *e)
{
    fail_at(j, INGOT_CONVERT_STAGE_NONE, UINT64_MAX);
    return ingot__err(e, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "out of memory");
}

ingot_status ingot_convert_run(const ingot_convert_plan *p, const char *path,
                               const ingot_convert_opts *opts, ingot_convert_result **result,
                               ingot_error *err)
{
    ingot_error local;
    ingot_error *e = err ? err : &local;
    if (result) *result = NULL;
    static const ingot_convert_opts defaults;
    const ingot_convert_opts *o = opts ? opts : &defaults;
    if (!p || !path) return ingot__err(e, INGOT_MISUSE, INGOT_NO_OFFSET, 0, 0, "NULL argument");
    ingot_convert_result *r = ingot__calloc(NULL, sizeof *r);
    if (!r) return ingot__err(e, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "out of memory");
    r->s.failed_tensor = UINT64_MAX;
    job j = {0};
    j.p = p;
    j.f = p->src;
    j.o = o;
    j.path = path;
    j.r = r;
    j.dq = o->dequantize;
    ingot_writer *w = NULL;
    buffers b = {0};
    ingot_status st = INGOT_OK;
    size_t nt = (size_t)(p->nt ? p->nt : 1);
    j.format = o->format ? o->format : ingot_writer_format_for_path(path);
    r->s.format = j.format;
    if (!j.format) {
        fail_at(&j, INGOT_CONVERT_STAGE_PLAN, UINT64_MAX);
        st = ingot__err(e, INGOT_UNSUPPORTED, INGOT_NO_OFFSET, path, strlen(path),
                        "cannot tell the output format from '%s': name it", path);
        goto out;
    }
    if (j.dq != INGOT_DTYPE_INVALID && j.dq != INGOT_DTYPE_F32 && j.dq != INGOT_DTYPE_F16 &&
        j.dq != INGOT_DTYPE_BF16) {
        fail_at(&j, INGOT_CONVERT_STAGE_PLAN, UINT64_MAX);
        st = ingot__err(e, INGOT_UNSUPPORTED, INGOT_NO_OFFSET, 0, 0,
                        "dequantize takes F32, F16 or BF16");
        goto out;
    }
    j.wo.format = j.format;
    j.wo.alignment = o->alignment;
    j.wo.no_fsync = o->no_fsync;
    /* .ingot -> .ingot keeps the source alignment unless told otherwise. */
    uint64_t src_align = ingot_file_alignment(j.f);
    if (!o->alignment && strcmp(j.format, "ingot") == 0)
        j.wo.alignment = src_align >= 64 && src_align <= 65536 ? (uint32_t)src_align : 256;
    r->s.alignment = j.wo.alignment;
    j.m = ingot__calloc(NULL, nt * sizeof *j.m);
    j.to = ingot__calloc(NULL, nt * sizeof *j.to);
    j.fallback = ingot__calloc(NULL, nt * sizeof *j.fallback);
    if (!j.m || !j.to || !j.fallback) {
        st = nomem(&j, e);
        goto out;
    }
    /* Parts of the source that opened as no tensor are not in the target: one record each. */
    uint64_t skipped = ingot_file_notice_count(j.f);
    for (uint64_t i = 0; i < skipped; i++) {
        ingot_notice nt_i;
        char msg[512];
        if (ingot_file_notice_at(j.f, i, &nt_i) != INGOT_OK) continue;
        snprintf(msg, sizeof msg, "'%s' of the source skipped (%s)", nt_i.name, nt_i.reason);
        if (!add_record(r, INGOT_LOSSY_SKIPPED, msg, nt_i.name, INGOT_DTYPE_INVALID,
                        INGOT_DTYPE_INVALID, 1)) {
            st = nomem(&j, e);
            goto out;
        }
    }
    r->s.skipped = skipped;
    deliver(&j);
    for (;;) {
        uint64_t mark = r->n;
        int rc = describe(&j, &w, e);
        if (rc == INGOT_OK) break;
        if (rc == BEGIN_FAILED && e->code == INGOT_UNSUPPORTED && j.dq != INGOT_DTYPE_INVALID &&
            j.n_forced < 64) { /* refused at begin: convert that dtype and describe again */
            uint64_t k = entry_named(&j, e);
            ingot_tensor_info t;
            if (k != UINT64_MAX && ingot_file_tensor_at(j.f, k, &t) == INGOT_OK &&
                (j.m[k] == M_POINTER || j.m[k] == M_COPY) && ingot_dtype_is_float_like(t.dtype) &&
                t.dtype != j.dq && !is_forced(&j, t.dtype)) {
                j.forced[j.n_forced++] = t.dtype;
                drop_records(r, mark);
                ingot_writer_free(w);
                w = NULL;
                continue;
            }
        }
        if (rc == BEGIN_FAILED) fail_at(&j, INGOT_CONVERT_STAGE_TARGET, entry_named(&j, e));
        st = e->code;
        goto out;
    }
    for (uint64_t i = 0; i < p->nt; i++) {
        r->s.tensors += j.m[i] != M_DROP;
        r->s.dropped += j.m[i] == M_DROP;
    }
    for (uint64_t i = 0; i < r->n; i++)
        r->s.metadata_lossy += r->recs[i].rec.kind == INGOT_LOSSY_METADATA;
    conversion_records(&j);
    if (j.nomem) {
        st = nomem(&j, e);
        goto out;
    }
    deliver(&j);
    bool any_conv = false, any_copy = false;
    for (uint64_t i = 0; i < p->nt; i++) {
        any_conv |= j.m[i] == M_CAST || j.m[i] == M_QUANT || j.m[i] == M_DEQ;
        any_copy |= j.m[i] == M_COPY;
    }
    if ((any_copy && !(b.io = ingot__alloc(NULL, IO_CHUNK))) ||
        (any_conv && (!(b.sbuf = ingot__alloc(NULL, CONV_CHUNK_ELEMS * 8u)) ||
                      !(b.obuf = ingot__alloc(NULL, CONV_CHUNK_ELEMS * 8u)) ||
                      !(b.fbuf = ingot__alloc(NULL, CONV_CHUNK_ELEMS * sizeof(float)))))) {
        st = nomem(&j, e);
        goto out;
    }
    /* Stream through bounded buffers, in plan order: works in every I/O mode. */
    for (uint64_t i = 0; i < p->nt && st == INGOT_OK; i++) {
        if (j.m[i] == M_DROP || j.m[i] == M_POINTER) continue;
        st = push(&j, w, i, &b, e);
    }
    if (st == INGOT_OK && cancelled(&j)) {
        fail_at(&j, INGOT_CONVERT_STAGE_NONE, UINT64_MAX);
        st = ingot__err(e, INGOT_CANCELLED, INGOT_NO_OFFSET, 0, 0, "cancelled");
    }
    if (st == INGOT_OK && (st = ingot_writer_commit(w, e)) != INGOT_OK)
        fail_at(&j, INGOT_CONVERT_STAGE_TARGET, entry_named(&j, e));
out:
    if (j.nomem && st == INGOT_OK) st = nomem(&j, e);
    if (st == INGOT_OK) r->s.failed_stage = INGOT_CONVERT_STAGE_NONE;
    else {
        r->s.metadata_lossy = 0;
        for (uint64_t i = 0; i < r->n; i++)
            r->s.metadata_lossy += r->recs[i].rec.kind == INGOT_LOSSY_METADATA;
    }
    deliver(&j);
    ingot_writer_free(w); /* removes the temporary unless committed */
    if (b.io) ingot__free(NULL, b.io, IO_CHUNK);
    if (b.sbuf) ingot__free(NULL, b.sbuf, CONV_CHUNK_ELEMS * 8u);
    if (b.obuf) ingot__free(NULL, b.obuf, CONV_CHUNK_ELEMS * 8u);
    if (b.fbuf) ingot__free(NULL, b.fbuf, CONV_CHUNK_ELEMS * sizeof(float));
    if (j.m) ingot__free(NULL, j.m, nt * sizeof *j.m);
    if (j.to) ingot__free(NULL, j.to, nt * sizeof *j.to);
    if (j.fallback) ingot__free(NULL, j.fallback, nt * sizeof *j.fallback);
    if (result) *result = r;
    else ingot_convert_result_free(r);
    return st;
}

bool ingot_convert_target_accepts(const ingot_convert_plan *p, const ingot_convert_opts *opts,
                                  uint64_t i, ingot_dtype dt)
{
    static const ingot_convert_opts defaults;
    const ingot_convert_opts *o = opts ? opts : &defaults;
    if (!p || i >= p->nt) return true;
    ingot_writer_opts wo = {0};
    wo.format = o->format;
    wo.alignment = o->alignment;
    ingot_writer *w;
    ingot_error e;
    if (ingot_writer_new(&wo, &w, &e) != INGOT_OK) return true;
    ingot_status st = set_options(w, o, &e);
    ingot_tensor_info t;
    ingot_file_tensor_at(p->src, i, &t);
    if (st == INGOT_OK)
        st = ingot_writer_add_tensor(w, ingot__plan_name(p, i, NULL), dt, t.rank, t.shape, NULL,
                                     NULL, &e);
    if (st == INGOT_OK) st = ingot_writer_begin_mem(w, &e);
    ingot_writer_free(w);
    return !refusal(st);
}
