/*
 * copy.c - ingot_file_tensor_copy(): the one explicit path that turns a stored tensor which is not
 * a dense little-endian C-order array in the mapping (big-endian, Fortran order, a strided view,
 * unmapped or deflated bytes) into one. Formats only describe the stored layout (flags, strides);
 * the conversion is written once, here. Also the element value check of BOOL tensors (0 or 1).
 */
#include <string.h>

#include "alloc.h"
#include "checked.h"
#include "error.h"
#include "file.h"
#include "guard.h"

typedef struct {
    const uint8_t *src; /* element [0,..,0] sits at src + origin * esize */
    uint64_t origin;    /* element offset of [0,..,0] from src (>= 0) */
    uint8_t *dst;
    uint32_t rank;
    const uint64_t *shape;
    const int64_t *strides; /* in elements */
    uint32_t esize;
    uint64_t nelem;
    uint64_t bad;   /* check mode (dst NULL, 1-byte elements): first element > 1, or UINT64_MAX */
    uint8_t bad_v;  /* ... and its byte */
} gather_job;

size_t ingot__first_non_bool(const uint8_t *p, size_t n)
{
    /* 512-byte blocks OR-ed together as 64-bit words (a byte above 1 sets a bit outside 0x01 of
     * its lane), then the exact byte from the first block that has one: about 3x a byte loop
     * (10 GB/s in cache). */
    size_t k = 0;
    for (; k + 512 <= n; k += 512) {
        uint64_t acc = 0;
        for (size_t j = 0; j < 512; j += 8) {
            uint64_t w;
            memcpy(&w, p + k + j, 8);
            acc |= w;
        }
        if (acc & 0xfefefefefefefefeull) break;
    }
    for (; k < n; k++)
        if (p[k] > 1) return k;
    return n;
}

/* Dense C-order walk over the logical indices; runs of stride 1 in the innermost dimension are
 * copied with memcpy. With dst NULL it copies nothing and instead finds the first element (in
 * that order) whose byte is not 0 or 1 (BOOL views). */
static ingot_status do_gather(void *arg)
{
    gather_job *g = arg;
    g->bad = UINT64_MAX;
    if (g->nelem == 0) return INGOT_OK;
    uint64_t idx[INGOT_MAX_RANK] = {0};
    uint32_t r = g->rank;
    uint64_t inner = r ? g->shape[r - 1] : 1;
    int64_t inner_stride = r ? g->strides[r - 1] : 0;
    uint64_t rows = g->nelem / inner;
    uint8_t *d = g->dst;
    size_t es = g->esize;
    for (uint64_t row = 0; row < rows; row++) {
        int64_t base = (int64_t)g->origin;
        for (uint32_t k = 0; k + 1 < r; k++) base += (int64_t)idx[k] * g->strides[k];
        if (!d) {
            for (uint64_t j = 0; j < inner; j++)
                if (g->src[base + (int64_t)j * inner_stride] > 1) {
                    g->bad = row * inner + j;
                    g->bad_v = g->src[base + (int64_t)j * inner_stride];
                    return INGOT_OK;
                }
        } else if (inner_stride == 1) {
            memcpy(d, g->src + (uint64_t)base * es, (size_t)inner * es);
            d += (size_t)inner * es;
        } else {
            for (uint64_t j = 0; j < inner; j++, d += es)
                memcpy(d, g->src + (uint64_t)(base + (int64_t)j * inner_stride) * es, es);
        }
        for (uint32_t k = r > 1 ? r - 1 : 0; k-- > 0;) { /* odometer over the outer dims */
            if (++idx[k] < g->shape[k]) break;
            idx[k] = 0;
        }
    }
    return INGOT_OK;
}

static void swap_elems(uint8_t *p, uint64_t nelem, uint32_t es)
{
    if (es == 1) return;
    for (uint64_t i = 0; i < nelem; i++, p += es)
        for (uint32_t a = 0, b = es - 1; a < b; a++, b--) {
            uint8_t t = p[a];
            p[a] = p[b];
            p[b] = t;
        }
}

/* Where a view's elements come from, for a tensor with layout flags and at least one element:
 * sets g->src and g->origin (reading the bytes into *tmp, allocated, when they are not mapped) and
 * *src_off, the file offset of g->src[0]. g->strides must already be set. */
static ingot_status view_source(const ingot_file *f, uint64_t i, const ingot_tensor_info *t,
                                gather_job *g, uint8_t **tmp, size_t *tmp_len, uint64_t *src_off,
                                ingot_error *err)
{
    uint32_t es = g->esize;
    *src_off = t->offset;
    if (t->flags & INGOT_TENSOR_STRIDED) {
        /* Reachable element range [lo, hi], checked against the file. */
        int64_t lo = 0, hi = 0;
        for (uint32_t k = 0; k < t->rank; k++) {
            int64_t span;
            if (t->shape[k] > (uint64_t)INT64_MAX ||
                __builtin_mul_overflow((int64_t)(t->shape[k] - 1), g->strides[k], &span) ||
                __builtin_add_overflow(span < 0 ? lo : hi, span, span < 0 ? &lo : &hi))
                return ingot__err(err, INGOT_BAD_SHAPE, t->offset, t->name, t->name_len,
                                  "stride arithmetic overflows");
        }
        uint64_t lo_bytes, span_bytes;
        if (!ing_mul((uint64_t)-lo, es, &lo_bytes) || lo_bytes > t->offset ||
            !ing_mul((uint64_t)(hi - lo) + 1, es, &span_bytes) ||
            !ing_in_bounds(t->offset - lo_bytes, span_bytes, f->size))
            return ingot__err(err, INGOT_BAD_LAYOUT, t->offset, t->name, t->name_len,
                              "strided view reaches outside the file");
        g->origin = (uint64_t)-lo;
        *src_off = t->offset - lo_bytes;
        if (f->base) {
            g->src = f->base + *src_off;
            return INGOT_OK;
        }
        if (span_bytes > SIZE_MAX || !(*tmp = ingot__alloc(&f->alloc, (size_t)span_bytes)))
            return ingot__err(err, INGOT_NOMEM, t->offset, t->name, t->name_len,
                              "allocating %llu bytes for the view",
                              (unsigned long long)span_bytes);
        *tmp_len = (size_t)span_bytes;
        g->src = *tmp;
        return ingot__file_read(f, *src_off, *tmp, *tmp_len, err);
    }
    if (t->data && !(t->flags & INGOT_TENSOR_NOT_MAPPED)) {
        g->src = t->data;
        return INGOT_OK;
    }
    if (t->nbytes > SIZE_MAX || !(*tmp = ingot__alloc(&f->alloc, (size_t)t->nbytes)))
        return ingot__err(err, INGOT_NOMEM, t->offset, t->name, t->name_len,
                          "allocating %llu bytes", (unsigned long long)t->nbytes);
    *tmp_len = (size_t)t->nbytes;
    g->src = *tmp;
    return ingot_file_tensor_read(f, i, 0, *tmp, *tmp_len, err); /* checks BOOL values itself */
}

/* File offset of element j (dense C order) of the view g whose g->src[0] is at file offset
 * src_off. */
static uint64_t view_elem_offset(const gather_job *g, uint64_t src_off, uint64_t j)
{
    int64_t pos = (int64_t)g->origin;
    for (uint32_t k = g->rank; k-- > 0;) {
        pos += (int64_t)(j % g->shape[k]) * g->strides[k]; /* no dimension is 0: nelem > 0 */
        j /= g->shape[k];
    }
    return src_off + (uint64_t)pos * g->esize;
}

/* Element `elem` (C order) of a BOOL view, at file offset `offset`, is v. */
static ingot_status bad_bool(ingot_error *err, const ingot_tensor_info *t, uint64_t offset,
                             uint64_t elem, uint8_t v)
{
    return ingot__err(err, INGOT_BAD_VALUE, offset, t->name, t->name_len,
                      "BOOL element %llu (C order) is 0x%02x, not 0 or 1",
                      (unsigned long long)elem, (unsigned)v);
}

/* Element strides of a tensor with layout flags (in elements; see ingot_tensor_info). */
static void layout_strides(const ingot_tensor_info *t, int64_t *strides)
{
    if (t->flags & INGOT_TENSOR_STRIDED) {
        memcpy(strides, t->strides, sizeof t->strides);
    } else if (t->flags & INGOT_TENSOR_FORTRAN) { /* column-major: the first index varies fastest */
        int64_t s = 1;
        for (uint32_t k = 0; k < t->rank; k++) {
            strides[k] = s;
            s *= (int64_t)(t->shape[k] ? t->shape[k] : 1);
        }
    } else if (t->rank) { /* big-endian C order */
        int64_t s = 1;
        for (uint32_t k = t->rank; k-- > 0;) {
            strides[k] = s;
            s *= (int64_t)(t->shape[k] ? t->shape[k] : 1);
        }
    }
}

ingot_status ingot_file_tensor_copy(const ingot_file *f, uint64_t i, void *dst, size_t cap,
                                    ingot_error *err)
{
    if (!f) return INGOT_MISUSE;
    ingot_tensor_info t;
    ingot_status st = f->fmt->tensor_at(f, i, &t);
    if (st != INGOT_OK)
        return ingot__err(err, st, INGOT_NO_OFFSET, 0, 0, "no tensor %llu", (unsigned long long)i);
    if (!dst && t.nbytes) return ingot__err(err, INGOT_MISUSE, t.offset, t.name, t.name_len,
                                            "destination is NULL");
    if (cap < t.nbytes)
        return ingot__err(err, INGOT_RANGE, t.offset, t.name, t.name_len,
                          "destination holds %zu bytes, the tensor needs %llu", cap,
                          (unsigned long long)t.nbytes);
    const uint32_t layout = INGOT_TENSOR_BIG_ENDIAN | INGOT_TENSOR_FORTRAN | INGOT_TENSOR_STRIDED;
    if (!(t.flags & layout)) return ingot_file_tensor_read(f, i, 0, dst, (size_t)t.nbytes, err);

    uint32_t es = ingot_dtype_block_bytes(t.dtype);
    if (ingot_dtype_block_elems(t.dtype) != 1 || es == 0)
        return ingot__err(err, INGOT_BAD_TYPE, t.offset, t.name, t.name_len,
                          "%s is a block type: only its stored bytes can be read",
                          ingot_dtype_name(t.dtype));
    if (t.rank > INGOT_MAX_RANK)
        return ingot__err(err, INGOT_BAD_NDIMS, t.offset, t.name, t.name_len, "bad rank");

    gather_job g = {.dst = dst, .rank = t.rank, .shape = t.shape, .esize = es, .nelem = t.nelem};
    int64_t strides[INGOT_MAX_RANK] = {0};
    layout_strides(&t, strides);
    g.strides = strides;
    if (t.nelem == 0) return INGOT_OK;
    uint8_t *tmp = NULL;
    size_t tmp_len = 0;
    uint64_t src_off = 0;
    st = view_source(f, i, &t, &g, &tmp, &tmp_len, &src_off, err);
    if (st == INGOT_OK) {
        st = tmp ? do_gather(&g) : ingot__guard(do_gather, &g);
        if (st == INGOT_IO_FAULT)
            ingot__err(err, st, t.offset, t.name, t.name_len,
                       "SIGBUS reading the mapping: the file was truncated or changed");
    }
    if (st == INGOT_OK && t.dtype == INGOT_DTYPE_BOOL) {
        size_t j = ingot__first_non_bool(dst, (size_t)t.nelem);
        if (j < t.nelem)
            st = bad_bool(err, &t, view_elem_offset(&g, src_off, j), j, ((uint8_t *)dst)[j]);
    }
    if (st == INGOT_OK && (t.flags & INGOT_TENSOR_BIG_ENDIAN)) {
        if (t.dtype == INGOT_DTYPE_C64) swap_elems(dst, t.nelem * 2, 4); /* re and im each */
        else if (t.dtype == INGOT_DTYPE_C128) swap_elems(dst, t.nelem * 2, 8);
        else swap_elems(dst, t.nelem, es);
    }
    if (tmp) ingot__free(&f->alloc, tmp, tmp_len);
    return st;
}

typedef struct {
    const uint8_t *p;
    size_t n, bad;
} bool_scan_job;

static ingot_status do_bool_scan(void *arg)
{
    bool_scan_job *j = arg;
    j->bad = ingot__first_non_bool(j->p, j->n);
    return INGOT_OK;
}

#define VALUE_PIECE (64u << 10)

ingot_status ingot__tensor_check_values(const ingot_file *f, uint64_t i, ingot_error *err)
{
    ingot_tensor_info t;
    ingot_status st = f->fmt->tensor_at(f, i, &t);
    if (st != INGOT_OK)
        return ingot__err(err, st, INGOT_NO_OFFSET, 0, 0, "no tensor %llu", (unsigned long long)i);
    if (t.dtype != INGOT_DTYPE_BOOL || t.nelem == 0) return INGOT_OK;
    bool mapped = t.data && !(t.flags & INGOT_TENSOR_NOT_MAPPED);
    if (!(t.flags & INGOT_TENSOR_STRIDED) && mapped) { /* in place, one guarded pass */
        if (t.nbytes > SIZE_MAX) return ingot__err(err, INGOT_LIMIT, t.offset, t.name, t.name_len,
                                                   "tensor larger than the address space");
        bool_scan_job j = {t.data, (size_t)t.nbytes, 0};
        st = ingot__guard(do_bool_scan, &j);
        if (st != INGOT_OK)
            return ingot__err(err, st, t.offset, t.name, t.name_len,
                              "SIGBUS reading the mapping: the file was truncated or changed");
        if (j.bad < j.n)
            return ingot__err(err, INGOT_BAD_VALUE, t.offset + j.bad, t.name, t.name_len,
                              "BOOL byte %llu of the data is 0x%02x, not 0 or 1",
                              (unsigned long long)j.bad, (unsigned)j.p[j.bad]);
        return INGOT_OK;
    }
    if (!(t.flags & INGOT_TENSOR_STRIDED)) { /* stored bytes, read in pieces (checked by read) */
        size_t cap = t.nbytes < VALUE_PIECE ? (size_t)t.nbytes : VALUE_PIECE;
        uint8_t *buf = ingot__alloc(&f->alloc, cap);
        if (!buf) return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating a buffer");
        for (uint64_t off = 0; off < t.nbytes && st == INGOT_OK;) {
            size_t n = t.nbytes - off < cap ? (size_t)(t.nbytes - off) : cap;
            st = ingot_file_tensor_read(f, i, off, buf, n, err);
            off += n;
        }
        ingot__free(&f->alloc, buf, cap);
        return st;
    }
    /* A strided view: only the elements it reaches count (a shared storage may hold others). */
    gather_job g = {.rank = t.rank, .shape = t.shape, .esize = 1, .nelem = t.nelem};
    int64_t strides[INGOT_MAX_RANK] = {0};
    layout_strides(&t, strides);
    g.strides = strides;
    uint8_t *tmp = NULL;
    size_t tmp_len = 0;
    uint64_t src_off = 0;
    st = view_source(f, i, &t, &g, &tmp, &tmp_len, &src_off, err);
    if (st == INGOT_OK) {
        st = tmp ? do_gather(&g) : ingot__guard(do_gather, &g);
        if (st == INGOT_IO_FAULT)
            ingot__err(err, st, t.offset, t.name, t.name_len,
                       "SIGBUS reading the mapping: the file was truncated or changed");
    }
    if (st == INGOT_OK && g.bad != UINT64_MAX) {
        st = bad_bool(err, &t, view_elem_offset(&g, src_off, g.bad), g.bad, g.bad_v);
    }
    if (tmp) ingot__free(&f->alloc, tmp, tmp_len);
    return st;
}
