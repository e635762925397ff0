/*
 * backend_internal.h - what the backend box shares internally: the instance and buffer structs,
 * element load/store for every supported dtype, an N-d odometer over strided views. The hooks the
 * runtime box may use are in export/backend_export.h. Not installed.
 */
#ifndef INGOT_BACKEND_INTERNAL_H
#define INGOT_BACKEND_INTERNAL_H

#include <math.h>
#include <string.h>

#include "alloc.h"
#include "error.h"
#include "export/backend_export.h"
#include "ingot/backend.h"

struct ingot_backend {
    const ingot_backend_ops *ops;
    ingot_allocator alloc;
    ingot_backend_opts opts; /* opts.allocator points at alloc */
    void *ctx;
    uint64_t rng;
    uint32_t nbuffers; /* live buffers, to catch a backend freed too early */
};

struct ingot_buffer {
    ingot_backend *owner;
    void *host;      /* host address of byte 0, NULL for device memory */
    void *handle;    /* device object (table buffer_alloc/wrap) or NULL */
    size_t size;
    void *raw;       /* owned host allocation (before 64-byte alignment) or NULL */
    size_t raw_size;
    bool writable;
    bool device;     /* created by the table's buffer members */
};


/* The built-in tables. */
extern const ingot_backend_ops ingot__backend_ref;
extern const ingot_backend_ops ingot__backend_cpu;

/* ---- dtypes ---- */

enum { ING_K_NONE = 0, ING_K_FLOAT, ING_K_INT, ING_K_BOOL, ING_K_QUANT };

static inline int ing_kind(ingot_dtype dt)
{
    switch (dt) {
    case INGOT_DTYPE_F64: case INGOT_DTYPE_F32: case INGOT_DTYPE_F16: case INGOT_DTYPE_BF16:
        return ING_K_FLOAT;
    case INGOT_DTYPE_I64: case INGOT_DTYPE_I32: case INGOT_DTYPE_I16: case INGOT_DTYPE_I8:
    case INGOT_DTYPE_U8:
        return ING_K_INT;
    case INGOT_DTYPE_BOOL:
        return ING_K_BOOL;
    case INGOT_DTYPE_Q8_0: case INGOT_DTYPE_Q4_0: case INGOT_DTYPE_Q4_K: case INGOT_DTYPE_Q5_K:
    case INGOT_DTYPE_Q6_K:
        return ING_K_QUANT;
    default:
        return ING_K_NONE;
    }
}

static inline size_t ing_esize(ingot_dtype dt)
{
    switch (dt) {
    case INGOT_DTYPE_F64: case INGOT_DTYPE_I64: return 8;
    case INGOT_DTYPE_F32: case INGOT_DTYPE_I32: return 4;
    case INGOT_DTYPE_F16: case INGOT_DTYPE_BF16: case INGOT_DTYPE_I16: return 2;
    case INGOT_DTYPE_I8: case INGOT_DTYPE_U8: case INGOT_DTYPE_BOOL: return 1;
    default: return 0;
    }
}

static inline float ing_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ffu, bits;
    if (exp == 0) {
        if (man == 0) {
            bits = sign;
        } else { /* subnormal: normalise */
            int e = -1;
            do {
                e++;
                man <<= 1;
            } while (!(man & 0x400u));
            bits = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ffu) << 13);
        }
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | (man << 13);
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* Round to nearest even, overflow to inf, NaN stays NaN (quiet). */
static inline uint16_t ing_f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);
    if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds to >= 65520: inf */
    if (ax < 0x38800000u) { /* below the smallest normal: subnormal or zero */
        if (ax < 0x33000000u) return (uint16_t)sign; /* < half the smallest subnormal */
        uint32_t e = ax >> 23, m = (ax & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126 - e; /* value = m 2^(e-150), unit 2^-24: q = m >> (126 - e) */
        uint32_t q = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (q & 1))) q++;
        return (uint16_t)(sign | q);
    }
    uint32_t e = (ax >> 23) - 127 + 15, m = ax & 0x7fffffu;
    uint32_t q = (e << 10) | (m >> 13), rem = m & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (q & 1))) q++;
    return (uint16_t)(sign | q);
}

static inline float ing_bf16_to_f32(uint16_t h)
{
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

static inline uint16_t ing_f32_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

/* Loads element of a float/int/bool dtype as double (exact for all but I64 beyond 2^53). */
static inline double ing_ld(ingot_dtype dt, const void *p)
{
    switch (dt) {
    case INGOT_DTYPE_F64: { double v; memcpy(&v, p, 8); return v; }
    case INGOT_DTYPE_F32: { float v; memcpy(&v, p, 4); return v; }
    case INGOT_DTYPE_F16: { uint16_t v; memcpy(&v, p, 2); return ing_f16_to_f32(v); }
    case INGOT_DTYPE_BF16: { uint16_t v; memcpy(&v, p, 2); return ing_bf16_to_f32(v); }
    case INGOT_DTYPE_I64: { int64_t v; memcpy(&v, p, 8); return (double)v; }
    case INGOT_DTYPE_I32: { int32_t v; memcpy(&v, p, 4); return v; }
    case INGOT_DTYPE_I16: { int16_t v; memcpy(&v, p, 2); return v; }
    case INGOT_DTYPE_I8: return *(const int8_t *)p;
    case INGOT_DTYPE_U8: return *(const uint8_t *)p;
    case INGOT_DTYPE_BOOL: return *(const uint8_t *)p ? 1.0 : 0.0;
    default: return 0;
    }
}

/* Float values to int dtypes truncate toward zero; out-of-range values saturate (defined here,
 * documented as unspecified). */
static inline int64_t ing_d2i(double v)
{
    if (v != v) return 0;
    if (v >= 9223372036854775807.0) return INT64_MAX;
    if (v <= -9223372036854775808.0) return INT64_MIN;
    return (int64_t)v;
}

static inline void ing_sti(ingot_dtype dt, void *p, int64_t v);

static inline void ing_st(ingot_dtype dt, void *p, double v)
{
    switch (dt) {
    case INGOT_DTYPE_F64: memcpy(p, &v, 8); return;
    case INGOT_DTYPE_F32: { float f = (float)v; memcpy(p, &f, 4); return; }
    case INGOT_DTYPE_F16: { uint16_t h = ing_f32_to_f16((float)v); memcpy(p, &h, 2); return; }
    case INGOT_DTYPE_BF16: { uint16_t h = ing_f32_to_bf16((float)v); memcpy(p, &h, 2); return; }
    case INGOT_DTYPE_BOOL: *(uint8_t *)p = v != 0; return;
    default: ing_sti(dt, p, ing_d2i(v)); return;
    }
}

/* Exact integer load/store (wraps modulo 2^bits on narrowing, as C casts do on gcc/clang). */
static inline int64_t ing_ldi(ingot_dtype dt, const void *p)
{
    switch (dt) {
    case INGOT_DTYPE_I64: { int64_t v; memcpy(&v, p, 8); return v; }
    case INGOT_DTYPE_I32: { int32_t v; memcpy(&v, p, 4); return v; }
    case INGOT_DTYPE_I16: { int16_t v; memcpy(&v, p, 2); return v; }
    case INGOT_DTYPE_I8: return *(const int8_t *)p;
    case INGOT_DTYPE_U8: return *(const uint8_t *)p;
    case INGOT_DTYPE_BOOL: return *(const uint8_t *)p != 0;
    default: return ing_d2i(ing_ld(dt, p));
    }
}

static inline void ing_sti(ingot_dtype dt, void *p, int64_t v)
{
    switch (dt) {
    case INGOT_DTYPE_I64: memcpy(p, &v, 8); return;
    case INGOT_DTYPE_I32: { int32_t x = (int32_t)(uint32_t)(uint64_t)v; memcpy(p, &x, 4); return; }
    case INGOT_DTYPE_I16: { int16_t x = (int16_t)(uint16_t)(uint64_t)v; memcpy(p, &x, 2); return; }
    case INGOT_DTYPE_I8: *(int8_t *)p = (int8_t)(uint8_t)(uint64_t)v; return;
    case INGOT_DTYPE_U8: *(uint8_t *)p = (uint8_t)(uint64_t)v; return;
    case INGOT_DTYPE_BOOL: *(uint8_t *)p = v != 0; return;
    default: ing_st(dt, p, (double)v); return;
    }
}

/* ---- tensors ---- */

static inline uint8_t *ing_ptr(const ingot_tensor *t)
{
    return t->buf && t->buf->host ? (uint8_t *)t->buf->host + t->offset : NULL;
}

static inline int64_t ing_nelem(const ingot_tensor *t)
{
    int64_t n = 1;
    for (uint32_t i = 0; i < t->rank; i++) n *= t->shape[i];
    return n;
}

/* N-d odometer over `shape` with up to 4 operands, offsets in bytes. Operands' strides are given
 * already aligned to the iteration shape (broadcast axes have stride 0). */
#define ING_IT_MAX 4
typedef struct ing_it {
    uint32_t rank, nops;
    int64_t shape[INGOT_MAX_RANK];
    int64_t idx[INGOT_MAX_RANK];
    int64_t bstr[ING_IT_MAX][INGOT_MAX_RANK]; /* byte strides */
    uint8_t *p[ING_IT_MAX];
} ing_it;

/* Byte strides of t aligned (right-aligned, numpy) to a shape of rank r; axes of size 1 get 0. */
static inline void ing_bcast_bstr(const ingot_tensor *t, uint32_t r, int64_t *out)
{
    size_t es = ing_esize(t->dtype);
    for (uint32_t i = 0; i < r; i++) out[i] = 0;
    for (uint32_t i = 0; i < t->rank; i++) {
        uint32_t j = r - t->rank + i;
        out[j] = t->shape[i] == 1 ? 0 : t->strides[i] * (int64_t)es;
    }
}

static inline void ing_it_init(ing_it *it, uint32_t rank, const int64_t *shape, uint32_t nops,
                               const ingot_tensor *const *ops)
{
    it->rank = rank;
    it->nops = nops;
    for (uint32_t i = 0; i < rank; i++) {
        it->shape[i] = shape[i];
        it->idx[i] = 0;
    }
    for (uint32_t k = 0; k < nops; k++) {
        ing_bcast_bstr(ops[k], rank, it->bstr[k]);
        it->p[k] = ing_ptr(ops[k]);
    }
}

/* Advances to the next index; false after the last one. */
static inline bool ing_it_next(ing_it *it)
{
    for (uint32_t d = it->rank; d-- > 0;) {
        if (++it->idx[d] < it->shape[d]) {
            for (uint32_t k = 0; k < it->nops; k++) it->p[k] += it->bstr[k][d];
            return true;
        }
        for (uint32_t k = 0; k < it->nops; k++) it->p[k] -= it->bstr[k][d] * (it->shape[d] - 1);
        it->idx[d] = 0;
    }
    return false;
}

/* Pointer to element idx[] of t (idx has t->rank entries). */
static inline uint8_t *ing_at(const ingot_tensor *t, const int64_t *idx)
{
    int64_t off = 0;
    for (uint32_t i = 0; i < t->rank; i++) off += idx[i] * t->strides[i];
    return ing_ptr(t) + off * (int64_t)ing_esize(t->dtype);
}

#endif
