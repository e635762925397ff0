/*
 * mag_read.c - reader of magnetron's two ".mag" formats (spec: ../shared/formats/mag.md; ours:
 * docs/formats/mag.md). Everything little-endian.
 *   storage archive (A): "MAG!" u32 version (1|100) u32 crc32c of [12, end of records)
 *     u32 n_tensors u32 n_meta u32 aux=0 | n_meta x {u32 type (1 i64, 2 f64), u64 value,
 *     u32 key_len, key} | n_tensors x {u32 dtype | rank << 8, u64 numel, u64 absolute offset,
 *     u64 shape[rank], u32 key_len, key} | 0xFF up to 64 | data blocks in record order, each
 *     0xFF-padded to 64 | zero slack up to the reference writer's size estimate
 *   snapshot (B): "MAG!" u32 100 u64 time u32 crc32c of [20, "BUF!") u32 aux u32 meta_len
 *     u32 count | "SRP!" pool | "MDT!" | "DSC!" count x {u8 rank, u8 dtype, u8 0, u8 0,
 *     u32 key_id, u64 numel, u64 relative offset, u64 shape[rank]} | "BUF!" data, EOF at its end
 * Both descriptors share the state and every getter; only probe and open differ.
 */
#include <string.h>

#include "alloc.h"
#include "checked.h"
#include "error.h"
#include "file.h"
#include "mag_format.h"
#include "mag_internal.h"
#include "utf8.h"

typedef struct {
    uint64_t rec;       /* file offset of the record */
    uint64_t shape_off; /* file offset of the rank u64 dims */
    uint64_t offset, nelem, nbytes;
    uint64_t name; /* while parsing: file offset of the key; then offset in the name pool */
    uint32_t name_len;
    uint8_t rank, code;
    uint16_t dtype;
} mtensor;

typedef struct {
    uint64_t rec, key_off, bits;
    uint32_t key_len;
    uint8_t type; /* 1 i64, 2 f64 */
} mmeta;

typedef struct {
    bool snapshot;
    int era;
    uint32_t version;
    uint32_t nt, nm;       /* records parsed so far, then the counts */
    uint32_t t_cap, m_cap; /* allocated entries: the tables grow with the records actually
                              present, so a huge count in a small file allocates little */
    mtensor *t;
    uint32_t *t_idx; /* tensor indices sorted by name */
    mmeta *m;
    uint32_t *m_idx;
    char *names;
    size_t names_len;
    const uint8_t *hdr; /* file bytes [0, hdr_len): the mapping or the pread head */
    uint64_t crc_lo, crc_hi;
    uint32_t crc_stored;
} mstate;

/* ---- cursor over the header bytes ---- */

typedef struct {
    ingot_file *f;
    const uint8_t *p; /* [0, have) readable; re-fetched after every growth */
    uint64_t have;
    ingot_error *err;
} cur;

static ingot_status need(cur *c, uint64_t end, uint64_t field, const char *where, size_t wlen,
                         const char *what)
{
    if (end <= c->have) return INGOT_OK;
    if (end > c->f->size)
        return ingot__err(c->err, INGOT_TRUNCATED, field, where, wlen,
                          "%s ends at byte %llu, the file has %llu", what,
                          (unsigned long long)end, (unsigned long long)c->f->size);
    uint64_t want = end;
    if (c->have <= c->f->size / 2 && want < 2 * c->have) want = 2 * c->have; /* fewer preads */
    if (want > c->f->size) want = c->f->size;
    ING_TRY(ingot__file_head(c->f, want, &c->p, c->err));
    c->have = c->f->base ? c->f->size : want;
    return INGOT_OK;
}

static uint32_t ld32(const cur *c, uint64_t off) { return ing_ld32(c->p + off); }
static uint64_t ld64(const cur *c, uint64_t off) { return ing_ld64(c->p + off); }

/* Checks that [off, off+len) holds only `byte`; BAD_LAYOUT at the first other byte. */
static ingot_status check_fill(const ingot_file *f, uint64_t off, uint64_t len, uint8_t byte,
                               const char *where, size_t wlen, const char *what, ingot_error *err)
{
    uint8_t buf[512];
    for (uint64_t done = 0; done < len;) {
        size_t k = len - done < sizeof buf ? (size_t)(len - done) : sizeof buf;
        ingot_status st = ingot__file_read(f, off + done, buf, k, err);
        if (st != INGOT_OK)
            return ingot__err(err, st, off + done, where, wlen, "reading %s failed", what);
        for (size_t j = 0; j < k; j++)
            if (buf[j] != byte)
                return ingot__err(err, INGOT_BAD_LAYOUT, off + done + j, where, wlen,
                                  "%s byte is 0x%02x, must be 0x%02x", what, buf[j], byte);
        done += k;
    }
    return INGOT_OK;
}

/* ---- state ---- */

static void free_state(const ingot_allocator *a, mstate *s)
{
    if (!s) return;
    ingot__free(a, s->t, (size_t)s->t_cap * sizeof *s->t);
    ingot__free(a, s->t_idx, (size_t)s->nt * sizeof *s->t_idx);
    ingot__free(a, s->m, (size_t)s->m_cap * sizeof *s->m);
    ingot__free(a, s->m_idx, (size_t)s->nm * sizeof *s->m_idx);
    ingot__free(a, s->names, s->names_len);
    ingot__free(a, s, sizeof *s);
}

/* Makes room for entry i of a table of elem-byte entries (doubling). */
static ingot_status grow(ingot_file *f, void **arr, uint32_t *cap, uint32_t i, size_t elem,
                         ingot_error *err)
{
    if (i < *cap) return INGOT_OK;
    uint32_t nc = *cap ? (*cap > UINT32_MAX / 2 ? UINT32_MAX : *cap * 2) : 16;
    void *p = *arr;
    if (!ingot__grow(&f->alloc, &p, (size_t)*cap * elem, (size_t)nc * elem))
        return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating the tables");
    *arr = p;
    *cap = nc;
    return INGOT_OK;
}

static ingot_status new_tensor(ingot_file *f, mstate *s, uint32_t i, mtensor **t,
                               ingot_error *err)
{
    void *p = s->t;
    ingot_status st = grow(f, &p, &s->t_cap, i, sizeof *s->t, err);
    s->t = p;
    if (st != INGOT_OK) return st;
    *t = memset(&s->t[i], 0, sizeof *s->t);
    return INGOT_OK;
}

static ingot_status new_meta(ingot_file *f, mstate *s, uint32_t i, mmeta **m, ingot_error *err)
{
    void *p = s->m;
    ingot_status st = grow(f, &p, &s->m_cap, i, sizeof *s->m, err);
    s->m = p;
    if (st != INGOT_OK) return st;
    *m = memset(&s->m[i], 0, sizeof *s->m);
    return INGOT_OK;
}

/* The name-sorted indices, allocated once the counts are known to be real. */
static ingot_status alloc_index(ingot_file *f, mstate *s, ingot_error *err)
{
    if (s->nt) s->t_idx = ingot__alloc(&f->alloc, (size_t)s->nt * sizeof *s->t_idx);
    if (s->nm) s->m_idx = ingot__alloc(&f->alloc, (size_t)s->nm * sizeof *s->m_idx);
    if ((s->nt && !s->t_idx) || (s->nm && !s->m_idx))
        return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating the index");
    return INGOT_OK;
}

typedef struct {
    const mstate *s;
    const uint8_t *p;
} sort_ctx;

static const void *name_of(const void *ctx, uint32_t i, size_t *len)
{
    const mstate *s = ctx;
    *len = s->t[i].name_len;
    return s->names + s->t[i].name;
}

static const void *key_of(const void *ctx, uint32_t i, size_t *len)
{
    const mstate *s = ctx;
    *len = s->m[i].key_len;
    return s->hdr + s->m[i].key_off;
}

static int cmp_tensor(const void *ctx, uint32_t a, uint32_t b)
{
    const mstate *s = ((const sort_ctx *)ctx)->s;
    return ingot__bytes_cmp(s->names + s->t[a].name, s->t[a].name_len, s->names + s->t[b].name,
                           s->t[b].name_len);
}

static int cmp_meta(const void *ctx, uint32_t a, uint32_t b)
{
    const sort_ctx *c = ctx;
    const mmeta *m = c->s->m;
    return ingot__bytes_cmp(c->p + m[a].key_off, m[a].key_len, c->p + m[b].key_off, m[b].key_len);
}

/* Sorts idx[0..n) (filled with 0..n-1 here) and reports the first duplicate in file order. */
static ingot_status sort_unique(ingot_file *f, uint32_t *idx, uint32_t n, ingot__index_cmp cmp,
                                const sort_ctx *ctx, bool tensors, ingot_error *err)
{
    if (n == 0) return INGOT_OK;
    uint32_t *tmp = ingot__alloc(&f->alloc, (size_t)n * sizeof *tmp);
    if (!tmp) return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating the index");
    for (uint32_t i = 0; i < n; i++) idx[i] = i;
    ingot__index_sort(idx, tmp, n, cmp, ctx);
    ingot__free(&f->alloc, tmp, (size_t)n * sizeof *tmp);
    uint32_t dup = UINT32_MAX; /* the later record of the first equal pair in file order */
    for (uint32_t i = 1; i < n; i++)
        if (cmp(ctx, idx[i - 1], idx[i]) == 0 && (dup == UINT32_MAX || idx[i] < dup)) dup = idx[i];
    if (dup == UINT32_MAX) return INGOT_OK;
    const mstate *s = ctx->s;
    if (tensors)
        return ingot__err(err, INGOT_DUPLICATE, s->t[dup].rec, s->names + s->t[dup].name,
                          s->t[dup].name_len, "tensor name appears twice");
    return ingot__err(err, INGOT_DUPLICATE, s->m[dup].rec, (const char *)ctx->p + s->m[dup].key_off,
                      s->m[dup].key_len, "metadata key appears twice");
}

/* Copies the tensor names (NUL-terminated) out of the header bytes. */
static ingot_status build_names(ingot_file *f, mstate *s, const uint8_t *p, ingot_error *err)
{
    size_t total = 0;
    for (uint32_t i = 0; i < s->nt; i++) total += (size_t)s->t[i].name_len + 1;
    if (total == 0) return INGOT_OK;
    s->names = ingot__alloc(&f->alloc, total);
    if (!s->names) return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating names");
    s->names_len = total;
    size_t at = 0;
    for (uint32_t i = 0; i < s->nt; i++) {
        memcpy(s->names + at, p + s->t[i].name, s->t[i].name_len);
        s->names[at + s->t[i].name_len] = 0;
        s->t[i].name = at;
        at += (size_t)s->t[i].name_len + 1;
    }
    return INGOT_OK;
}

/* Shape dims (file offset sh, rank r) -> element count; BAD_SHAPE naming the tensor. */
static ingot_status read_shape(const cur *c, uint64_t sh, uint32_t r, const char *name,
                               size_t nlen, uint64_t *nelem)
{
    uint64_t n = 1;
    for (uint32_t d = 0; d < r; d++) {
        uint64_t dim = ld64(c, sh + 8 * d);
        if (dim == 0 || dim > (uint64_t)INT64_MAX)
            return ingot__err(c->err, INGOT_BAD_SHAPE, sh + 8 * d, name, nlen,
                              "dimension %u is %llu, must be 1..2^63-1", d,
                              (unsigned long long)dim);
        if (!ing_mul(n, dim, &n) || n > (uint64_t)INT64_MAX)
            return ingot__err(c->err, INGOT_BAD_SHAPE, sh + 8 * d, name, nlen,
                              "element count overflows at dimension %u", d);
    }
    *nelem = n;
    return INGOT_OK;
}

/* Key at [off, off+len): length rule, bounds, strict UTF-8 without NUL. */
static ingot_status check_key(cur *c, uint64_t len_field, uint64_t len, const char *where,
                              size_t wlen)
{
    if (len == 0)
        return ingot__err(c->err, INGOT_BAD_STRING, len_field, where, wlen, "key length is 0");
    if (len > MAG_KEY_MAX)
        return ingot__err(c->err, INGOT_BAD_NAME, len_field, where, wlen,
                          "key length %llu exceeds 65535", (unsigned long long)len);
    ING_TRY(need(c, len_field + 4 + len, len_field, where, wlen, "key"));
    if (!ingot__utf8_valid(c->p + len_field + 4, (size_t)len, false))
        return ingot__err(c->err, INGOT_BAD_STRING, len_field + 4, where, wlen,
                          "key is not valid UTF-8 without NUL");
    return INGOT_OK;
}

/* ---- Format A: storage archive ---- */

static ingot_status parse_a(ingot_file *f, mstate *s, int era, ingot_error *err)
{
    cur c = {f, NULL, 0, err};
    ING_TRY(need(&c, MAG_HDR_A, 0, "header", 6, "header"));
    if (memcmp(c.p, MAG_MAGIC, 4) != 0)
        return ingot__err(err, INGOT_BAD_MAGIC, 0, "header", 6, "magic is not \"MAG!\"");
    s->version = ld32(&c, 4);
    if (s->version != 1 && s->version != 100)
        return ingot__err(err, INGOT_BAD_VERSION, 4, "header", 6,
                          "storage archive version %u (known: 1, 100)", s->version);
    s->era = era;
    s->crc_stored = ld32(&c, 8);
    uint32_t nt = ld32(&c, 12), nm = ld32(&c, 16);
    if (ld32(&c, 20) != 0)
        return ingot__err(err, INGOT_BAD_FLAGS, 20, "header", 6, "reserved aux is 0x%08x, must be 0",
                          ld32(&c, 20));
    uint64_t room = f->size - MAG_HDR_A;
    if ((uint64_t)nm * MAG_META_MIN > room)
        return ingot__err(err, INGOT_BAD_COUNT, 16, "header", 6,
                          "%u metadata records cannot fit in %llu bytes", nm,
                          (unsigned long long)room);
    if ((uint64_t)nt * MAG_TENSOR_MIN > room - (uint64_t)nm * MAG_META_MIN)
        return ingot__err(err, INGOT_BAD_COUNT, 12, "header", 6,
                          "%u tensor records cannot fit in the file", nt);
    uint64_t est = MAG_HDR_A; /* the reference writer's file size estimate (spec §1.6) */
    uint64_t pos = MAG_HDR_A;
    char where[48];
    size_t wl;
    for (uint32_t i = 0; i < nm; i++) {
        mmeta *m;
        wl = ingot__fmt(where, sizeof where, "metadata record %u", i);
        ING_TRY(need(&c, pos + 16, pos, where, wl, "metadata record"));
        uint32_t aux = ld32(&c, pos);
        uint32_t klen = ld32(&c, pos + 12);
        ING_TRY(check_key(&c, pos + 12, klen, where, wl));
        const char *key = (const char *)c.p + pos + 16;
        if (aux >> 8)
            return ingot__err(err, INGOT_BAD_FLAGS, pos, key, klen,
                              "record aux 0x%08x has bits above the type set", aux);
        if (aux != 1 && aux != 2)
            return ingot__err(err, INGOT_BAD_TYPE, pos, key, klen,
                              "metadata type %u (known: 1 i64, 2 f64)", aux);
        ING_TRY(new_meta(f, s, i, &m, err));
        s->nm = i + 1;
        m->rec = pos;
        m->type = (uint8_t)aux;
        m->bits = ld64(&c, pos + 4);
        m->key_len = klen;
        m->key_off = pos + 16;
        pos += 16 + (uint64_t)klen;
        est += 16 + (uint64_t)klen + 8;
    }
    uint32_t max_rank = s->version == 1 ? 6 : 8;
    for (uint32_t i = 0; i < nt; i++) {
        mtensor *t;
        wl = ingot__fmt(where, sizeof where, "tensor record %u", i);
        ING_TRY(need(&c, pos + 20, pos, where, wl, "tensor record"));
        uint32_t aux = ld32(&c, pos);
        uint32_t rank = (aux >> 8) & 0xff, code = aux & 0xff;
        if (rank == 0 || rank > max_rank)
            return ingot__err(err, INGOT_BAD_NDIMS, pos, where, wl,
                              "rank %u not in 1..%u (version %u)", rank, max_rank, s->version);
        uint64_t kl_at = pos + 20 + 8 * (uint64_t)rank;
        ING_TRY(need(&c, kl_at + 4, pos, where, wl, "tensor record"));
        uint32_t klen = ld32(&c, kl_at);
        ING_TRY(check_key(&c, kl_at, klen, where, wl));
        const char *name = (const char *)c.p + kl_at + 4;
        if (aux >> 16)
            return ingot__err(err, INGOT_BAD_FLAGS, pos, name, klen,
                              "record aux 0x%08x has bits above dtype and rank set", aux);
        ingot_dtype dt = ingot__mag_dtype(era, code);
        if (dt == INGOT_DTYPE_INVALID)
            return ingot__err(err, INGOT_BAD_TYPE, pos, name, klen,
                              "dtype code %u unknown (era %s of version %u has codes 0..%u)",
                              code, era == MAG_ERA_A1 ? "A1" : "A2", s->version,
                              ingot__mag_code_count(era) - 1);
        uint64_t numel = ld64(&c, pos + 4), nelem;
        ING_TRY(read_shape(&c, pos + 20, rank, name, klen, &nelem));
        if (numel != nelem)
            return ingot__err(err, INGOT_BAD_SHAPE, pos + 4, name, klen,
                              "numel %llu differs from the shape's product %llu",
                              (unsigned long long)numel, (unsigned long long)nelem);
        uint64_t nbytes;
        if (!ing_mul(nelem, ingot_dtype_block_bytes(dt), &nbytes))
            return ingot__err(err, INGOT_BAD_SIZE, pos + 4, name, klen, "byte size overflows");
        ING_TRY(new_tensor(f, s, i, &t, err));
        s->nt = i + 1;
        t->nbytes = nbytes;
        t->rec = pos;
        t->shape_off = pos + 20;
        t->offset = ld64(&c, pos + 12);
        t->nelem = nelem;
        t->name_len = klen;
        t->rank = (uint8_t)rank;
        t->code = (uint8_t)code;
        t->dtype = (uint16_t)dt;
        t->name = kl_at + 4;
        pos = kl_at + 4 + klen;
    }
    /* Data: blocks in record order from the first 64-byte boundary after the records. */
    uint64_t records_end = pos, expect = pos, content_end = pos;
    if (nt && !ing_round_up(records_end, MAG_ALIGN_A, &expect))
        return ingot__err(err, INGOT_BAD_LAYOUT, records_end, "records", 7, "offset overflows");
    for (uint32_t i = 0; i < nt; i++) {
        mtensor *t = &s->t[i];
        const char *name = (const char *)c.p + t->name;
        uint64_t rlen = 24 + 8 * (uint64_t)t->rank + t->name_len, end;
        if (t->offset % MAG_ALIGN_A)
            return ingot__err(err, INGOT_BAD_ALIGN, t->rec + 12, name, t->name_len,
                              "data offset %llu is not a multiple of 64",
                              (unsigned long long)t->offset);
        if (t->offset != expect)
            return ingot__err(err, INGOT_BAD_LAYOUT, t->rec + 12, name, t->name_len,
                              "data offset %llu, expected %llu (%s)", (unsigned long long)t->offset,
                              (unsigned long long)expect,
                              t->offset < expect ? "overlaps what precedes it" : "leaves a gap");
        if (!ing_add(t->offset, t->nbytes, &end) || !ing_round_up(end, MAG_ALIGN_A, &expect))
            return ingot__err(err, INGOT_BAD_LAYOUT, t->rec + 12, name, t->name_len,
                              "data end overflows");
        if (expect > f->size)
            return ingot__err(err, INGOT_TRUNCATED, t->rec + 12, name, t->name_len,
                              "data block ends at byte %llu (padded to 64), the file has %llu",
                              (unsigned long long)expect, (unsigned long long)f->size);
        content_end = expect;
        if (!ing_round_up(est + rlen, MAG_ALIGN_A, &est) || !ing_add(est, expect - t->offset, &est))
            return ingot__err(err, INGOT_BAD_LAYOUT, t->rec, name, t->name_len, "size overflows");
    }
    s->crc_lo = 12;
    s->crc_hi = records_end;
    /* The 0xFF gap before the data is part of the header bytes we hold. */
    if (nt) {
        ING_TRY(need(&c, s->t[0].offset, records_end, "records", 7, "fill"));
        for (uint64_t k = records_end; k < s->t[0].offset; k++)
            if (c.p[k] != 0xff)
                return ingot__err(err, INGOT_BAD_LAYOUT, k, "records", 7,
                                  "fill byte before the data is 0x%02x, must be 0xff", c.p[k]);
    }
    /* Slack: the reference writer sizes the file by its estimate and never truncates it. */
    if (f->size > est)
        return ingot__err(err, INGOT_BAD_LAYOUT, est, "trailer", 7,
                          "%llu bytes past the writer's file size (%llu)",
                          (unsigned long long)(f->size - est), (unsigned long long)est);
    ING_TRY(check_fill(f, content_end, f->size - content_end, 0, "trailer", 7, "slack", err));
    s->hdr = c.p;
    return INGOT_OK;
}

/* In a version-100 file, code 3 is u8 (era A2) or i32 (era A1). Padding after a code-3 block
 * must be 0xFF: an interpretation whose padding holds data bytes is the wrong one. */
static ingot_status check_pad3(const ingot_file *f, const mstate *s, ingot_error *err)
{
    for (uint32_t i = 0; i < s->nt; i++) {
        const mtensor *t = &s->t[i];
        if (t->code != 3) continue;
        uint64_t end = t->offset + t->nbytes, pad = (MAG_ALIGN_A - end % MAG_ALIGN_A) % MAG_ALIGN_A;
        ING_TRY(check_fill(f, end, pad, 0xff, s->names + t->name, t->name_len, "block padding",
                           err));
    }
    return INGOT_OK;
}

static ingot_status check_crc(const mstate *s, const char *region, size_t rlen, uint64_t field,
                              ingot_error *err)
{
    uint32_t got = ingot_crc32c(0, s->hdr + s->crc_lo, (size_t)(s->crc_hi - s->crc_lo));
    if (got != s->crc_stored)
        return ingot__err(err, INGOT_BAD_CHECKSUM, field, region, rlen,
                          "CRC-32C of bytes [%llu, %llu) is 0x%08x, stored 0x%08x",
                          (unsigned long long)s->crc_lo, (unsigned long long)s->crc_hi, got,
                          s->crc_stored);
    return INGOT_OK;
}

static bool skip_crc(const ingot_file *f)
{
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
    (void)f;
    return true; /* let the fuzzer reach past the checksum */
#else
    return f->opts.verify == INGOT_VERIFY_NONE;
#endif
}

#define REGION_A "header and records"
#define REGION_B "header, pool and descriptors"

/* One complete parse with the given era; on success *out owns the state. */
static ingot_status try_a(ingot_file *f, int era, mstate **out, ingot_error *err)
{
    mstate *s = ingot__calloc(&f->alloc, sizeof *s);
    if (!s) return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating the reader");
    ingot_status st = parse_a(f, s, era, err);
    if (st == INGOT_OK) st = build_names(f, s, s->hdr, err);
    if (st == INGOT_OK) st = alloc_index(f, s, err);
    if (st == INGOT_OK && s->version == 100) st = check_pad3(f, s, err);
    sort_ctx ctx = {s, s->hdr};
    if (st == INGOT_OK) st = sort_unique(f, s->t_idx, s->nt, cmp_tensor, &ctx, true, err);
    if (st == INGOT_OK) st = sort_unique(f, s->m_idx, s->nm, cmp_meta, &ctx, false, err);
    if (st != INGOT_OK) {
        free_state(&f->alloc, s);
        return st;
    }
    *out = s;
    return INGOT_OK;
}

static ingot_status open_a(ingot_file *f, ingot_error *err)
{
    const uint8_t *p;
    ING_TRY(ingot__file_head(f, f->size < 8 ? f->size : 8, &p, err));
    bool v100 = f->size >= 8 && ing_ld32(p + 4) == 100;
    mstate *s = NULL;
    ingot_status st = try_a(f, v100 ? MAG_ERA_A2 : MAG_ERA_A1, &s, err);
    if (st != INGOT_OK && v100) {
        /* Written between 2025-10-16 and 2025-11-22: version 100 with the A1 codes. */
        ingot_error e1;
        if (try_a(f, MAG_ERA_A1, &s, &e1) == INGOT_OK) st = INGOT_OK;
    }
    if (st != INGOT_OK) return st;
    if (!skip_crc(f) && (st = check_crc(s, REGION_A, sizeof REGION_A - 1, 8, err)) != INGOT_OK) {
        free_state(&f->alloc, s);
        return st;
    }
    f->state = s;
    f->alignment = MAG_ALIGN_A;
    ingot__fmt(f->version, sizeof f->version, "%u", s->version);
    return INGOT_OK;
}

/* ---- Format B: snapshot ---- */

static ingot_status marker(cur *c, uint64_t pos, const char *m, ingot_error *err)
{
    ING_TRY(need(c, pos + 4, pos, m, 4, "section marker"));
    if (memcmp(c->p + pos, m, 4) != 0)
        return ingot__err(err, INGOT_BAD_MAGIC, pos, m, 4, "section marker \"%s\" missing", m);
    return INGOT_OK;
}

static ingot_status parse_b(ingot_file *f, mstate *s, uint8_t **used_out, uint32_t *used_n,
                             ingot_error *err)
{
    cur c = {f, NULL, 0, err};
    ING_TRY(need(&c, MAG_HDR_B, 0, "header", 6, "header"));
    if (memcmp(c.p, MAG_MAGIC, 4) != 0)
        return ingot__err(err, INGOT_BAD_MAGIC, 0, "header", 6, "magic is not \"MAG!\"");
    s->snapshot = true;
    s->era = MAG_ERA_B;
    s->version = ld32(&c, 4);
    if (s->version != 100)
        return ingot__err(err, INGOT_BAD_VERSION, 4, "header", 6,
                          "snapshot version %u (known: 100)", s->version);
    s->crc_stored = ld32(&c, 16);
    if (ld32(&c, 20) != 0)
        return ingot__err(err, INGOT_BAD_FLAGS, 20, "header", 6, "aux is 0x%08x, must be 0",
                          ld32(&c, 20));
    if (ld32(&c, 24) != 0)
        return ingot__err(err, INGOT_UNSUPPORTED, 24, "header", 6,
                          "metadata map length %u: snapshot metadata is not defined yet",
                          ld32(&c, 24));
    uint32_t nt = ld32(&c, 28);
    uint64_t pos = MAG_HDR_B;
    /* count + its offsets + the three other markers + descriptors must fit */
    if ((uint64_t)nt * (MAG_DESC_MIN + 5) > f->size - pos)
        return ingot__err(err, INGOT_BAD_COUNT, 28, "header", 6,
                          "%u tensors cannot fit in the file", nt);
    ING_TRY(marker(&c, pos, "SRP!", err));
    ING_TRY(need(&c, pos + 8, pos + 4, "SRP!", 4, "string count"));
    uint32_t ns = ld32(&c, pos + 4);
    if (ns != nt)
        return ingot__err(err, INGOT_BAD_COUNT, pos + 4, "SRP!", 4,
                          "string pool holds %u keys for %u tensors", ns, nt);
    uint64_t offs = pos + 8, blob = offs + 4 * ((uint64_t)ns + 1);
    ING_TRY(need(&c, blob, offs, "SRP!", 4, "string offsets"));
    if (ld32(&c, offs) != 0)
        return ingot__err(err, INGOT_BAD_STRING, offs, "SRP!", 4, "first string offset is %u, not 0",
                          ld32(&c, offs));
    uint64_t blob_len = ld32(&c, offs + 4 * (uint64_t)ns);
    if (blob_len > MAG_B_POOL_MAX)
        return ingot__err(err, INGOT_LIMIT, offs + 4 * (uint64_t)ns, "SRP!", 4,
                          "string pool of %llu bytes exceeds 128 MiB", (unsigned long long)blob_len);
    ING_TRY(need(&c, blob + blob_len, offs + 4 * (uint64_t)ns, "SRP!", 4, "string pool"));
    uint8_t *used = NULL; /* key id i taken by a descriptor; ns bytes, backed by 4 per id */
    if (ns) {
        used = ingot__calloc(&f->alloc, ns);
        if (!used) return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating");
        *used_out = used;
        *used_n = ns;
    }
    for (uint32_t i = 0; i < ns; i++) {
        uint32_t a = ld32(&c, offs + 4 * (uint64_t)i), b = ld32(&c, offs + 4 * (uint64_t)i + 4);
        if (b <= a || b > blob_len)
            return ingot__err(err, INGOT_BAD_STRING, offs + 4 * (uint64_t)i + 4, "SRP!", 4,
                              "string %u ends at %u: offsets must increase (no empty keys) "
                              "within the %llu-byte pool", i, b, (unsigned long long)blob_len);
        if (!ingot__utf8_valid(c.p + blob + a, b - a, false))
            return ingot__err(err, INGOT_BAD_STRING, blob + a, "SRP!", 4,
                              "string %u is not valid UTF-8 without NUL", i);
    }
    pos = blob + blob_len;
    ING_TRY(marker(&c, pos, "MDT!", err));
    ING_TRY(marker(&c, pos + 4, "DSC!", err));
    pos += 8;
    uint64_t running = 0;
    char where[48];
    size_t wl;
    for (uint32_t i = 0; i < nt; i++) {
        mtensor *t;
        wl = ingot__fmt(where, sizeof where, "descriptor %u", i);
        ING_TRY(need(&c, pos + MAG_DESC_MIN, pos, where, wl, "descriptor"));
        uint32_t packed = ld32(&c, pos), key_id = ld32(&c, pos + 4);
        uint32_t rank = packed & 0xff, code = (packed >> 8) & 0xff;
        if (key_id >= ns)
            return ingot__err(err, INGOT_BAD_NAME, pos + 4, where, wl,
                              "key id %u, the pool has %u keys", key_id, ns);
        uint32_t a = ld32(&c, offs + 4 * (uint64_t)key_id);
        uint32_t klen = ld32(&c, offs + 4 * (uint64_t)key_id + 4) - a;
        const char *name = (const char *)c.p + blob + a;
        if (used[key_id])
            return ingot__err(err, INGOT_DUPLICATE, pos + 4, name, klen,
                              "key id %u used by two descriptors", key_id);
        used[key_id] = 1;
        if (packed >> 16)
            return ingot__err(err, INGOT_BAD_FLAGS, pos, name, klen,
                              "descriptor aux bytes 0x%04x, must be 0", packed >> 16);
        if (rank > INGOT_MAX_RANK) /* upstream writes up to 64 (and reads below 64) */
            return ingot__err(err, INGOT_BAD_NDIMS, pos, name, klen,
                              "rank %u exceeds %u (magnetron writes at most %u)", rank,
                              INGOT_MAX_RANK, MAG_SNAP_RANK_LIMIT);
        ingot_dtype dt = ingot__mag_dtype(MAG_ERA_B, code);
        if (dt == INGOT_DTYPE_INVALID)
            return ingot__err(err, INGOT_BAD_TYPE, pos + 1, name, klen,
                              "dtype code %u unknown (0..11)", code);
        ING_TRY(need(&c, pos + MAG_DESC_MIN + 8 * (uint64_t)rank, pos, name, klen, "descriptor"));
        name = (const char *)c.p + blob + a; /* the head may have moved */
        uint64_t numel = ld64(&c, pos + 8), nelem, rel = ld64(&c, pos + 16);
        ING_TRY(read_shape(&c, pos + 24, rank, name, klen, &nelem));
        if (numel != nelem)
            return ingot__err(err, INGOT_BAD_SHAPE, pos + 8, name, klen,
                              "numel %llu differs from the shape's product %llu",
                              (unsigned long long)numel, (unsigned long long)nelem);
        uint64_t nbytes;
        if (!ing_mul(nelem, ingot_dtype_block_bytes(dt), &nbytes))
            return ingot__err(err, INGOT_BAD_SIZE, pos + 8, name, klen, "byte size overflows");
        if (rel != running)
            return ingot__err(err, INGOT_BAD_LAYOUT, pos + 16, name, klen,
                              "relative offset %llu, expected %llu (%s)", (unsigned long long)rel,
                              (unsigned long long)running,
                              rel < running ? "overlaps the previous tensor" : "leaves a gap");
        if (!ing_add(running, nbytes, &running))
            return ingot__err(err, INGOT_BAD_SIZE, pos + 8, name, klen, "data size overflows");
        ING_TRY(new_tensor(f, s, i, &t, err));
        s->nt = i + 1;
        t->nbytes = nbytes;
        t->rec = pos;
        t->shape_off = pos + 24;
        t->offset = rel; /* made absolute below */
        t->nelem = nelem;
        t->name_len = klen;
        t->rank = (uint8_t)rank;
        t->code = (uint8_t)code;
        t->dtype = (uint16_t)dt;
        t->name = blob + a;
        pos += MAG_DESC_MIN + 8 * (uint64_t)rank;
    }
    ING_TRY(marker(&c, pos, "BUF!", err));
    s->crc_lo = 20;
    s->crc_hi = pos;
    uint64_t data = pos + 4, end;
    if (!ing_add(data, running, &end) || end > f->size)
        return ingot__err(err, INGOT_TRUNCATED, data, "BUF!", 4,
                          "data of %llu bytes runs past the end of the file",
                          (unsigned long long)running);
    if (end < f->size)
        return ingot__err(err, INGOT_BAD_LAYOUT, end, "BUF!", 4,
                          "%llu bytes after the last tensor", (unsigned long long)(f->size - end));
    for (uint32_t i = 0; i < nt; i++) s->t[i].offset += data;
    s->hdr = c.p;
    return INGOT_OK;
}

static ingot_status open_b(ingot_file *f, ingot_error *err)
{
    mstate *s = ingot__calloc(&f->alloc, sizeof *s);
    if (!s) return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating the reader");
    uint8_t *used = NULL;
    uint32_t used_n = 0;
    ingot_error eb; /* the caller's record is written only if the open fails for good */
    ingot_status st = parse_b(f, s, &used, &used_n, &eb);
    ingot__free(&f->alloc, used, used_n);
    if (st == INGOT_OK) st = build_names(f, s, s->hdr, &eb);
    if (st == INGOT_OK) st = alloc_index(f, s, &eb);
    sort_ctx ctx = {s, s->hdr};
    if (st == INGOT_OK) st = sort_unique(f, s->t_idx, s->nt, cmp_tensor, &ctx, true, &eb);
    if (st == INGOT_OK && !skip_crc(f)) st = check_crc(s, REGION_B, sizeof REGION_B - 1, 16, &eb);
    if (st != INGOT_OK) {
        free_state(&f->alloc, s);
        /* "SRP!" at 32 may be a storage archive's first value by chance (spec §0): fall back,
         * unless the caller named this format. */
        ingot_error ea;
        if (!f->opts.format && open_a(f, &ea) == INGOT_OK) {
            f->fmt = &ingot__format_mag;
            return INGOT_OK;
        }
        if (err) *err = eb;
        return st;
    }
    f->state = s;
    f->alignment = 1;
    ingot__fmt(f->version, sizeof f->version, "%u", s->version);
    return INGOT_OK;
}

/* ---- probes ---- */

static int probe_a(const uint8_t *head, size_t n)
{
    if (n < 4) return n && memcmp(head, MAG_MAGIC, n) == 0 ? 10 : 0; /* truncated magic */
    if (memcmp(head, MAG_MAGIC, 4) != 0) return 0;
    if (n < 8) return 50;
    uint32_t v = ing_ld32(head + 4);
    return v == 1 || v == 100 ? 90 : 50;
}

static int probe_b(const uint8_t *head, size_t n)
{
    if (n < 36 || memcmp(head, MAG_MAGIC, 4) != 0 || memcmp(head + 32, "SRP!", 4) != 0) return 0;
    return 95;
}

/* ---- getters (shared) ---- */

#define S(f) ((const mstate *)(f)->state)

static void close_mag(ingot_file *f)
{
    free_state(&f->alloc, f->state);
    f->state = NULL;
}

static uint64_t tensor_count(const ingot_file *f) { return S(f)->nt; }

static ingot_status tensor_at(const ingot_file *f, uint64_t i, ingot_tensor_info *out)
{
    const mstate *s = S(f);
    memset(out, 0, sizeof *out);
    if (i >= s->nt) return INGOT_RANGE;
    const mtensor *t = &s->t[i];
    out->name = s->names + t->name;
    out->name_len = t->name_len;
    out->dtype = (ingot_dtype)t->dtype;
    out->rank = t->rank;
    for (uint32_t d = 0; d < t->rank; d++) out->shape[d] = ing_ld64(s->hdr + t->shape_off + 8 * d);
    out->nelem = t->nelem;
    out->nbytes = t->nbytes;
    out->offset = t->offset;
    out->index = (uint32_t)i;
    uint32_t es = ingot_dtype_block_bytes(out->dtype);
    uint64_t addr = t->offset;
    if (f->base) {
        out->data = f->base + t->offset;
        addr = (uint64_t)(uintptr_t)out->data;
    } else {
        out->flags |= INGOT_TENSOR_NOT_MAPPED;
    }
    if (addr % es) out->flags |= INGOT_TENSOR_UNALIGNED;
    return INGOT_OK;
}

static ingot_status tensor_find(const ingot_file *f, const char *name, size_t len,
                                ingot_tensor_info *out)
{
    const mstate *s = S(f);
    uint32_t i;
    if (ingot__index_find(s->t_idx, s->nt, name_of, s, name, len, &i)) return tensor_at(f, i, out);
    memset(out, 0, sizeof *out);
    return INGOT_NOT_FOUND;
}

static uint64_t meta_count(const ingot_file *f) { return S(f)->nm; }

static ingot_status meta_at(const ingot_file *f, uint64_t i, ingot_meta_info *out)
{
    const mstate *s = S(f);
    memset(out, 0, sizeof *out);
    if (i >= s->nm) return INGOT_RANGE;
    const mmeta *m = &s->m[i];
    out->key = (const char *)s->hdr + m->key_off;
    out->key_len = m->key_len;
    out->count = 1;
    out->index = i;
    if (m->type == 1) {
        out->type = INGOT_META_I64;
        out->v.i = (int64_t)m->bits;
    } else {
        out->type = INGOT_META_F64;
        memcpy(&out->v.f, &m->bits, 8);
    }
    return INGOT_OK;
}

static ingot_status meta_find(const ingot_file *f, const char *key, size_t len,
                              ingot_meta_info *out)
{
    const mstate *s = S(f);
    uint32_t i;
    if (ingot__index_find(s->m_idx, s->nm, key_of, s, key, len, &i)) return meta_at(f, i, out);
    memset(out, 0, sizeof *out);
    return INGOT_NOT_FOUND;
}

static ingot_status meta_array_read(const ingot_file *f, uint64_t index, ingot_meta_type type,
                                    uint64_t first, uint64_t n, void *dst)
{
    (void)type, (void)first, (void)n, (void)dst;
    return index < S(f)->nm ? INGOT_WRONG_TYPE : INGOT_RANGE; /* .mag has no arrays */
}

static ingot_status meta_array_string(const ingot_file *f, uint64_t index, uint64_t elem,
                                      const char **str, size_t *len)
{
    (void)elem, (void)str, (void)len;
    return index < S(f)->nm ? INGOT_WRONG_TYPE : INGOT_RANGE;
}

static ingot_status verify_header(const ingot_file *f, ingot_error *err)
{
    const mstate *s = S(f);
    return s->snapshot ? check_crc(s, REGION_B, sizeof REGION_B - 1, 16, err)
                       : check_crc(s, REGION_A, sizeof REGION_A - 1, 8, err);
}

/* Storage archive: the data must be readable and its block padding 0xFF (no data checksum). */
static ingot_status tensor_verify_a(const ingot_file *f, uint64_t i, ingot_error *err)
{
    const mstate *s = S(f);
    if (i >= s->nt) return ingot__err(err, INGOT_RANGE, INGOT_NO_OFFSET, 0, 0, "no tensor");
    const mtensor *t = &s->t[i];
    const char *name = s->names + t->name;
    enum { CHUNK = 1u << 16 };
    uint8_t *buf = ingot__alloc(&f->alloc, CHUNK);
    if (!buf) return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating a buffer");
    ingot_status st = INGOT_OK;
    for (uint64_t done = 0; done < t->nbytes && st == INGOT_OK;) {
        size_t k = t->nbytes - done < CHUNK ? (size_t)(t->nbytes - done) : CHUNK;
        st = ingot__file_read(f, t->offset + done, buf, k, err);
        if (st != INGOT_OK)
            st = ingot__err(err, st, t->offset + done, name, t->name_len,
                            "reading tensor data failed");
        done += k;
    }
    ingot__free(&f->alloc, buf, CHUNK);
    if (st != INGOT_OK) return st;
    uint64_t end = t->offset + t->nbytes, pad = (MAG_ALIGN_A - end % MAG_ALIGN_A) % MAG_ALIGN_A;
    return check_fill(f, end, pad, 0xff, name, t->name_len, "block padding", err);
}

static const char *const mag_extensions[] = {"mag", NULL};

const ingot__format ingot__format_mag = {
    .name = "mag",
    .extensions = mag_extensions,
    .probe = probe_a,
    .open = open_a,
    .close = close_mag,
    .tensor_count = tensor_count,
    .tensor_at = tensor_at,
    .tensor_find = tensor_find,
    .tensor_verify = tensor_verify_a,
    .verify_header = verify_header,
    .checks = INGOT_CHECK_HEADER_CRC32C | INGOT_CHECK_PADDING, /* the CRC covers no data */
    .meta_count = meta_count,
    .meta_at = meta_at,
    .meta_find = meta_find,
    .meta_array_read = meta_array_read,
    .meta_array_string = meta_array_string,
    .writer = &ingot__writer_mag,
};

/* No extension: ".mag" selects the storage archive; the snapshot is chosen by name. */
const ingot__format ingot__format_mag_snapshot = {
    .name = "mag-snapshot",
    .probe = probe_b,
    .open = open_b,
    .close = close_mag,
    .tensor_count = tensor_count,
    .tensor_at = tensor_at,
    .tensor_find = tensor_find,
    .verify_header = verify_header,
    .checks = INGOT_CHECK_HEADER_CRC32C, /* the CRC covers no data */
    .meta_count = meta_count,
    .meta_at = meta_at,
    .meta_find = meta_find,
    .meta_array_read = meta_array_read,
    .meta_array_string = meta_array_string,
    .writer = &ingot__writer_mag_snapshot,
};
