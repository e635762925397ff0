/*
 * npy_write.c - writers for .npy (exactly one tensor, the header byte-identical to NumPy 1.24's
 * np.save) and .npz (stored members, deterministic: DOS timestamp 1980-01-01 00:00, no data
 * descriptors, zip64 only where needed unless zip64=always). The zip CRC-32 of each member is
 * computed as its data streams through (the writer core's data_chunk hook; the npy header is
 * summed when it is written), patched into the local header in finish (a seek back, not a data
 * descriptor: same bytes as a writer that knew the CRC up front), and the central directory
 * follows. Nothing written is ever read back.
 * Documentation: docs/formats/npy.md.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "checked.h"
#include "error.h"
#include "npy_header.h"
#include "writer_impl.h"
#include "zip.h"

extern const ingot__writer_ops ingot__writer_npy;
extern const ingot__writer_ops ingot__writer_npz;

/* Note: the core calls this from ingot_writer_add_tensor before the name is stored (t->name is
 * NULL there), and again from begin with the name. */
static ingot_status check_tensor(ingot_writer *w, const ingot__wtensor *t, ingot_error *err)
{
    (void)w;
    const char *nm = t->name ? t->name : "";
    size_t nl = t->name ? t->name_len : 0;
    if (!ingot__npy_descr(t->dtype))
        return ingot__err(err, INGOT_UNSUPPORTED, INGOT_NO_OFFSET, nm, nl,
                          "NumPy has no dtype for %s: tensor%s%s%s cannot be written to npy/npz",
                          ingot_dtype_name(t->dtype) ? ingot_dtype_name(t->dtype) : "?",
                          nl ? " '" : "", nm, nl ? "'" : "");
    if (t->rank > INGOT_MAX_RANK)
        return ingot__err(err, INGOT_BAD_NDIMS, INGOT_NO_OFFSET, nm, nl, "rank");
    return INGOT_OK;
}

static void drop_metadata(ingot_writer *w, const char *fmt)
{
    for (size_t i = 0; i < w->n_meta; i++)
        ingot__writer_notice(w, "%s: metadata '%s' dropped (the format has no metadata)", fmt,
                             w->meta[i].key);
}

/* ---------------------------------------------------------------------------------------------
 * .npy
 * ------------------------------------------------------------------------------------------- */

typedef struct {
    uint64_t total;
} npy_wstate;

static ingot_status npy_begin(ingot_writer *w, uint64_t *total, ingot_error *err)
{
    if (w->n_tensors != 1)
        return ingot__err(err, INGOT_UNSUPPORTED, INGOT_NO_OFFSET, 0, 0,
                          "npy holds exactly one tensor, %zu given (write .npz for several)",
                          w->n_tensors);
    ingot__wtensor *t = &w->tensors[0];
    ING_TRY(check_tensor(w, t, err));
    drop_metadata(w, "npy");
    ingot__writer_notice(w, "npy: tensor name '%s' is not stored (a .npy array is named by its "
                            "file name)", t->name);
    uint8_t hdr[NPY_HDR_CAP];
    size_t hl = ingot__npy_format_header(hdr, sizeof hdr, t->dtype, t->rank, t->shape);
    if (!hl)
        return ingot__err(err, INGOT_LIMIT, INGOT_NO_OFFSET, t->name, t->name_len,
                          "npy header does not fit");
    uint64_t tot;
    if (!ing_add(hl, t->nbytes, &tot))
        return ingot__err(err, INGOT_BAD_SIZE, INGOT_NO_OFFSET, t->name, t->name_len, "size");
    t->offset = hl;
    npy_wstate *s = w->fmt_state;
    s->total = tot;
    *total = tot;
    ING_TRY(ingot__wsink_reserve(w, tot, err));
    return ingot__wsink_write(w, hdr, hl, err);
}

static ingot_status npy_before(ingot_writer *w, uint64_t i, ingot_error *err)
{
    (void)i;
    if (w->pos != w->tensors[0].offset)
        return ingot__err(err, INGOT_MISUSE, w->pos, 0, 0, "npy: stream position");
    return INGOT_OK;
}

static ingot_status npy_finish(ingot_writer *w, ingot_error *err)
{
    npy_wstate *s = w->fmt_state;
    if (w->pos != s->total)
        return ingot__err(err, INGOT_MISUSE, w->pos, 0, 0, "npy: wrote %llu bytes, expected %llu",
                          (unsigned long long)w->pos, (unsigned long long)s->total);
    return INGOT_OK;
}

static ingot_status npy_init(ingot_writer *w, ingot_error *err)
{
    w->fmt_state = ingot__calloc(&w->alloc, sizeof(npy_wstate));
    if (!w->fmt_state) return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "npy state");
    return INGOT_OK;
}

static void npy_free(ingot_writer *w)
{
    if (w->fmt_state) ingot__free(&w->alloc, w->fmt_state, sizeof(npy_wstate));
    w->fmt_state = NULL;
}

const ingot__writer_ops ingot__writer_npy = {
    .init = npy_init,
    .check_tensor = check_tensor,
    .begin = npy_begin,
    .before_tensor = npy_before,
    .finish = npy_finish,
    .free_state = npy_free,
};

/* ---------------------------------------------------------------------------------------------
 * .npz
 * ------------------------------------------------------------------------------------------- */

#define ZIP_DOS_DATE 0x0021 /* 1980-01-01 */
#define ZIP_ALIGN_EXTRA 0xD935 /* Android zipalign's alignment extra: u16 alignment + padding */
#define S32 0xFFFFFFFFu

typedef struct {
    uint64_t lho, size;   /* local header offset; member size (npy header + data) */
    uint32_t hdr_len;     /* npy header bytes */
    uint16_t pad;         /* alignment extra: padding bytes after its u16 (0: no extra) */
    bool align_extra;
    bool z64_local, z64_size, z64_off;
    uint32_t crc;
} zmember; /* the npy header is formatted again when written: up to 2 KiB, not kept per member */

typedef struct {
    bool zip64_always;
    uint32_t align;
    zmember *m;
    size_t n;
    uint64_t cd_off, cd_size, total;
    bool z64_end;
} npz_wstate;

static ingot_status npz_init(ingot_writer *w, ingot_error *err)
{
    npz_wstate *s = ingot__calloc(&w->alloc, sizeof *s);
    if (!s) return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "npz state");
    s->align = 64;
    w->fmt_state = s;
    return INGOT_OK;
}

static void npz_free(ingot_writer *w)
{
    npz_wstate *s = w->fmt_state;
    if (!s) return;
    if (s->m) ingot__free(&w->alloc, s->m, s->n * sizeof *s->m);
    ingot__free(&w->alloc, s, sizeof *s);
    w->fmt_state = NULL;
}

static ingot_status npz_option(ingot_writer *w, const char *key, const char *value,
                               ingot_error *err)
{
    npz_wstate *s = w->fmt_state;
    if (strcmp(key, "zip64") == 0) {
        if (strcmp(value, "auto") == 0)
            s->zip64_always = false;
        else if (strcmp(value, "always") == 0)
            s->zip64_always = true;
        else
            return ingot__err(err, INGOT_BAD_METADATA, INGOT_NO_OFFSET, key, strlen(key),
                              "npz: zip64 is 'auto' or 'always', not '%s'", value);
        return INGOT_OK;
    }
    if (strcmp(key, "align") == 0) {
        char *end;
        errno = 0;
        unsigned long v = strtoul(value, &end, 10);
        if (errno || *end || end == value || v < 1 || v > 4096 || (v & (v - 1)))
            return ingot__err(err, INGOT_BAD_METADATA, INGOT_NO_OFFSET, key, strlen(key),
                              "npz: align is a power of two in 1..4096, not '%s'", value);
        s->align = (uint32_t)v;
        return INGOT_OK;
    }
    return ingot__err(err, INGOT_UNSUPPORTED, INGOT_NO_OFFSET, key, strlen(key),
                      "npz: unknown option (known: zip64=auto|always, align=N)");
}

static uint16_t name_flags(const ingot__wtensor *t)
{
    for (uint32_t k = 0; k < t->name_len; k++)
        if ((uint8_t)t->name[k] >= 0x80) return 0x0800; /* UTF-8 name */
    return 0;
}

static uint32_t local_extra_len(const zmember *m)
{
    return (m->z64_local ? 20u : 0u) + (m->align_extra ? 6u + m->pad : 0u);
}

static uint32_t cd_extra_len(const zmember *m)
{
    uint32_t k = (m->z64_size ? 2u : 0u) + (m->z64_off ? 1u : 0u);
    return k ? 4u + 8u * k : 0u;
}

static ingot_status npz_begin(ingot_writer *w, uint64_t *total, ingot_error *err)
{
    npz_wstate *s = w->fmt_state;
    drop_metadata(w, "npz");
    size_t n = w->n_tensors;
    if (n) {
        s->m = ingot__calloc(&w->alloc, n * sizeof *s->m);
        if (!s->m) return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "npz members");
    }
    s->n = n;
    uint64_t pos = 0, cd = 0;
    for (size_t i = 0; i < n; i++) {
        ingot__wtensor *t = &w->tensors[i];
        zmember *m = &s->m[i];
        ING_TRY(check_tensor(w, t, err));
        if (t->name_len == 0 || t->name_len > 65535 - 4)
            return ingot__err(err, INGOT_BAD_NAME, INGOT_NO_OFFSET, t->name, t->name_len,
                              "npz: member name must be 1..65531 bytes");
        uint8_t hdr[NPY_HDR_CAP];
        size_t hl = ingot__npy_format_header(hdr, sizeof hdr, t->dtype, t->rank, t->shape);
        if (!hl)
            return ingot__err(err, INGOT_LIMIT, INGOT_NO_OFFSET, t->name, t->name_len,
                              "npy header does not fit");
        m->hdr_len = (uint32_t)hl;
        if (!ing_add(hl, t->nbytes, &m->size))
            return ingot__err(err, INGOT_BAD_SIZE, INGOT_NO_OFFSET, t->name, t->name_len, "size");
        m->lho = pos;
        m->z64_size = s->zip64_always || m->size >= S32;
        m->z64_off = s->zip64_always || pos >= S32;
        m->z64_local = m->z64_size;
        uint64_t nl = t->name_len + 4;
        uint64_t start = pos + 30 + nl + (m->z64_local ? 20 : 0);
        if (s->align > 1) {
            m->align_extra = true;
            uint64_t data = start + 6 + hl; /* tensor data with no padding */
            m->pad = (uint16_t)((s->align - data % s->align) % s->align);
        }
        t->offset = start + (m->align_extra ? 6u + m->pad : 0u) + hl;
        uint64_t next;
        if (!ing_add(t->offset, t->nbytes, &next))
            return ingot__err(err, INGOT_BAD_SIZE, INGOT_NO_OFFSET, t->name, t->name_len, "size");
        pos = next;
        cd += 46 + nl + cd_extra_len(m);
    }
    s->cd_off = pos;
    s->cd_size = cd;
    s->z64_end = s->zip64_always || n >= 0xFFFF || pos >= S32 || cd >= S32;
    uint64_t tot = pos + cd + (s->z64_end ? 56 + 20 : 0) + 22;
    s->total = tot;
    *total = tot;
    return ingot__wsink_reserve(w, tot, err);
}

static ingot_status npz_before(ingot_writer *w, uint64_t i, ingot_error *err)
{
    npz_wstate *s = w->fmt_state;
    const ingot__wtensor *t = &w->tensors[i];
    zmember *m = &s->m[i];
    if (w->pos != m->lho)
        return ingot__err(err, INGOT_MISUSE, w->pos, t->name, t->name_len, "npz: stream position");
    uint8_t h[30 + 20 + 6];
    uint16_t fl = name_flags(t);
    ing_st32(h, 0x04034b50u);
    ing_st16(h + 4, m->z64_local ? 45 : 20);
    ing_st16(h + 6, fl);
    ing_st16(h + 8, 0);
    ing_st16(h + 10, 0);
    ing_st16(h + 12, ZIP_DOS_DATE);
    ing_st32(h + 14, 0); /* CRC-32: patched in finish */
    ing_st32(h + 18, m->z64_local ? S32 : (uint32_t)m->size);
    ing_st32(h + 22, m->z64_local ? S32 : (uint32_t)m->size);
    ing_st16(h + 26, (uint16_t)(t->name_len + 4));
    ing_st16(h + 28, (uint16_t)local_extra_len(m));
    ING_TRY(ingot__wsink_write(w, h, 30, err));
    ING_TRY(ingot__wsink_write(w, t->name, t->name_len, err));
    ING_TRY(ingot__wsink_write(w, ".npy", 4, err));
    if (m->z64_local) {
        ing_st16(h, 1), ing_st16(h + 2, 16), ing_st64(h + 4, m->size), ing_st64(h + 12, m->size);
        ING_TRY(ingot__wsink_write(w, h, 20, err));
    }
    if (m->align_extra) {
        ing_st16(h, ZIP_ALIGN_EXTRA), ing_st16(h + 2, (uint16_t)(2 + m->pad));
        ing_st16(h + 4, (uint16_t)s->align);
        ING_TRY(ingot__wsink_write(w, h, 6, err));
        ING_TRY(ingot__wsink_zeros(w, m->pad, err));
    }
    uint8_t hdr[NPY_HDR_CAP];
    if (ingot__npy_format_header(hdr, sizeof hdr, t->dtype, t->rank, t->shape) != m->hdr_len)
        return ingot__err(err, INGOT_MISUSE, w->pos, t->name, t->name_len, "npz: header changed");
    m->crc = ingot__crc32(0, hdr, m->hdr_len); /* the member is npy header + data */
    return ingot__wsink_write(w, hdr, m->hdr_len, err);
}

static void npz_data_chunk(ingot_writer *w, uint64_t i, const void *p, size_t n)
{
    npz_wstate *s = w->fmt_state;
    s->m[i].crc = ingot__crc32(s->m[i].crc, p, n);
}

static ingot_status npz_finish(ingot_writer *w, ingot_error *err)
{
    npz_wstate *s = w->fmt_state;
    if (w->pos != s->cd_off)
        return ingot__err(err, INGOT_MISUSE, w->pos, 0, 0, "npz: wrote %llu bytes, expected %llu",
                          (unsigned long long)w->pos, (unsigned long long)s->cd_off);
    for (size_t i = 0; i < s->n; i++) { /* the CRCs the data_chunk hook summed */
        uint8_t c[4];
        ing_st32(c, s->m[i].crc);
        ING_TRY(ingot__wsink_pwrite(w, s->m[i].lho + 14, c, 4, err));
    }
    for (size_t i = 0; i < s->n; i++) {
        const zmember *m = &s->m[i];
        const ingot__wtensor *t = &w->tensors[i];
        uint8_t h[46 + 28];
        bool z64 = m->z64_size || m->z64_off;
        ing_st32(h, 0x02014b50u);
        ing_st16(h + 4, 45);
        ing_st16(h + 6, z64 ? 45 : 20);
        ing_st16(h + 8, name_flags(t));
        ing_st16(h + 10, 0);
        ing_st16(h + 12, 0);
        ing_st16(h + 14, ZIP_DOS_DATE);
        ing_st32(h + 16, m->crc);
        ing_st32(h + 20, m->z64_size ? S32 : (uint32_t)m->size);
        ing_st32(h + 24, m->z64_size ? S32 : (uint32_t)m->size);
        ing_st16(h + 28, (uint16_t)(t->name_len + 4));
        ing_st16(h + 30, (uint16_t)cd_extra_len(m));
        ing_st16(h + 32, 0);
        ing_st16(h + 34, 0);
        ing_st16(h + 36, 0);
        ing_st32(h + 38, 0);
        ing_st32(h + 42, m->z64_off ? S32 : (uint32_t)m->lho);
        ING_TRY(ingot__wsink_write(w, h, 46, err));
        ING_TRY(ingot__wsink_write(w, t->name, t->name_len, err));
        ING_TRY(ingot__wsink_write(w, ".npy", 4, err));
        uint32_t xl = cd_extra_len(m);
        if (xl) {
            uint8_t *x = h + 46;
            size_t k = 4;
            ing_st16(x, 1), ing_st16(x + 2, (uint16_t)(xl - 4));
            if (m->z64_size) ing_st64(x + k, m->size), ing_st64(x + k + 8, m->size), k += 16;
            if (m->z64_off) ing_st64(x + k, m->lho), k += 8;
            ING_TRY(ingot__wsink_write(w, x, k, err));
        }
    }
    uint8_t e[56 + 20 + 22];
    size_t el = 0;
    uint64_t n = s->n;
    if (s->z64_end) {
        ing_st32(e, 0x06064b50u), ing_st64(e + 4, 44), ing_st16(e + 12, 45), ing_st16(e + 14, 45);
        ing_st32(e + 16, 0), ing_st32(e + 20, 0), ing_st64(e + 24, n), ing_st64(e + 32, n);
        ing_st64(e + 40, s->cd_size), ing_st64(e + 48, s->cd_off);
        ing_st32(e + 56, 0x07064b50u), ing_st32(e + 60, 0), ing_st64(e + 64, s->cd_off + s->cd_size);
        ing_st32(e + 72, 1);
        el = 76;
    }
    uint8_t *c = e + el;
    ing_st32(c, 0x06054b50u), ing_st16(c + 4, 0), ing_st16(c + 6, 0);
    uint16_t cnt = n >= 0xFFFF ? 0xFFFF : (uint16_t)n;
    ing_st16(c + 8, cnt), ing_st16(c + 10, cnt);
    ing_st32(c + 12, s->cd_size >= S32 ? S32 : (uint32_t)s->cd_size);
    ing_st32(c + 16, s->cd_off >= S32 ? S32 : (uint32_t)s->cd_off);
    ing_st16(c + 20, 0);
    el += 22;
    ING_TRY(ingot__wsink_write(w, e, el, err));
    if (w->pos != s->total)
        return ingot__err(err, INGOT_MISUSE, w->pos, 0, 0, "npz: layout mismatch");
    return INGOT_OK;
}

const ingot__writer_ops ingot__writer_npz = {
    .init = npz_init,
    .check_tensor = check_tensor,
    .begin = npz_begin,
    .before_tensor = npz_before,
    .finish = npz_finish,
    .free_state = npz_free,
    .set_option = npz_option,
    .data_chunk = npz_data_chunk,
};
