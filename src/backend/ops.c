/*
 * ops.c - the checked op wrappers (include/ingot/backend.h section 5). Each validates dtypes,
 * shapes, buffers and aliasing, names the op and operand in every error, skips empty outputs,
 * picks the op group from the dtype and calls the backend's member, or the documented fallback,
 * or returns UNSUPPORTED. Backends trust what reaches them.
 */
#include "backend_internal.h"

/* ---- error helpers ---- */

static void fmt_shape(const ingot_tensor *t, char *buf, size_t cap)
{
    size_t n = ingot__fmt(buf, cap, "[");
    for (uint32_t i = 0; i < t->rank && n + 2 < cap; i++)
        n += ingot__fmt(buf + n, cap - n, i ? ",%lld" : "%lld", (long long)t->shape[i]);
    ingot__fmt(buf + n, cap - n, "]");
}

static const char *dtname(ingot_dtype dt)
{
    const char *s = ingot_dtype_name(dt);
    return s ? s : "?";
}

#define OPERR(code, ...) ingot__err(err, code, INGOT_NO_OFFSET, op, ing_strlen(op), __VA_ARGS__)

static ingot_status unsupported(ingot_backend *b, const char *op, const char *group,
                                ingot_dtype dt, ingot_error *err)
{
    return OPERR(INGOT_E_UNSUPPORTED, "%s: backend '%s' has no %s op for dtype %s", op,
                 b->ops->name, group, dtname(dt));
}

/* ---- operand checks ---- */

static ingot_status chk(ingot_backend *b, const char *op, const char *name, const ingot_tensor *t,
                        ingot_error *err)
{
    if (!t) return OPERR(INGOT_E_MISUSE, "%s: operand '%s' is NULL", op, name);
    if (ing_kind(t->dtype) == ING_K_NONE)
        return OPERR(INGOT_E_BAD_TYPE, "%s: operand '%s' has dtype %s, not a backend dtype", op,
                     name, dtname(t->dtype));
    if (t->rank > INGOT_MAX_RANK)
        return OPERR(INGOT_E_BAD_NDIMS, "%s: operand '%s' has rank %u", op, name, t->rank);
    for (uint32_t i = 0; i < t->rank; i++)
        if (t->shape[i] < 0)
            return OPERR(INGOT_E_BAD_SHAPE, "%s: operand '%s' has a negative dimension", op, name);
    if (ing_nelem(t) == 0) return INGOT_OK;
    if (!t->buf) return OPERR(INGOT_E_MISUSE, "%s: operand '%s' has no buffer", op, name);
    if (t->buf->owner != b)
        return OPERR(INGOT_E_MISUSE, "%s: operand '%s' belongs to another backend instance", op,
                     name);
    if (!t->buf->host && !t->buf->device)
        return OPERR(INGOT_E_MISUSE, "%s: operand '%s' has no memory", op, name);
    return INGOT_OK;
}

/* Byte range [lo, hi) covered by t (empty tensors cover nothing). */
static void extent(const ingot_tensor *t, uint64_t *lo, uint64_t *hi)
{
    int64_t es = (int64_t)ing_esize(t->dtype), neg = 0, pos = 0;
    if (ing_kind(t->dtype) == ING_K_QUANT) {
        *lo = t->offset;
        *hi = t->offset + (uint64_t)ing_nelem(t) / ingot_dtype_block_elems(t->dtype) *
                         ingot_dtype_block_bytes(t->dtype);
        return;
    }
    for (uint32_t i = 0; i < t->rank; i++) {
        int64_t e = (t->shape[i] - 1) * t->strides[i];
        if (e < 0) neg += e; else pos += e;
    }
    *lo = t->offset + (uint64_t)(neg * es);
    *hi = t->offset + (uint64_t)((pos + 1) * es);
}

static bool same_view(const ingot_tensor *a, const ingot_tensor *c)
{
    if (a->buf != c->buf || a->offset != c->offset || a->dtype != c->dtype || a->rank != c->rank)
        return false;
    for (uint32_t i = 0; i < a->rank; i++)
        if (a->shape[i] != c->shape[i] || (a->shape[i] > 1 && a->strides[i] != c->strides[i]))
            return false;
    return true;
}

/* dst must be writable, without broadcast strides, and (unless `inplace_ok` and the views are
 * identical) must not overlap `in`. */
static ingot_status chk_dst(ingot_backend *b, const char *op, const char *name,
                            const ingot_tensor *dst, ingot_error *err)
{
    ING_TRY(chk(b, op, name, dst, err));
    if (ing_nelem(dst) == 0) return INGOT_OK;
    if (!dst->buf->writable)
        return OPERR(INGOT_E_MISUSE, "%s: operand '%s' is in a read-only buffer", op, name);
    for (uint32_t i = 0; i < dst->rank; i++)
        if (dst->shape[i] > 1 && dst->strides[i] == 0)
            return OPERR(INGOT_E_MISUSE, "%s: operand '%s' is a broadcast view (zero stride)", op,
                         name);
    return INGOT_OK;
}

static ingot_status chk_alias(const char *op, const ingot_tensor *dst, const char *name,
                              const ingot_tensor *in, bool inplace_ok, ingot_error *err)
{
    if (!in || ing_nelem(dst) == 0 || ing_nelem(in) == 0 || in->buf != dst->buf) return INGOT_OK;
    if (inplace_ok && same_view(dst, in)) return INGOT_OK;
    uint64_t a0, a1, b0, b1;
    extent(dst, &a0, &a1);
    extent(in, &b0, &b1);
    if (a0 < b1 && b0 < a1)
        return OPERR(INGOT_E_MISUSE, "%s: dst overlaps operand '%s'%s", op, name,
                     inplace_ok ? " (only an identical view may be updated in place)" : "");
    return INGOT_OK;
}

static ingot_status chk_shape_eq(const char *op, const char *name, const ingot_tensor *t,
                                 uint32_t rank, const int64_t *shape, ingot_error *err)
{
    bool ok = t->rank == rank;
    for (uint32_t i = 0; ok && i < rank; i++) ok = t->shape[i] == shape[i];
    if (ok) return INGOT_OK;
    char got[96], want[96];
    ingot_tensor w = {0};
    w.rank = rank;
    for (uint32_t i = 0; i < rank; i++) w.shape[i] = shape[i];
    fmt_shape(t, got, sizeof got);
    fmt_shape(&w, want, sizeof want);
    return OPERR(INGOT_E_BAD_SHAPE, "%s: operand '%s' has shape %s, expected %s", op, name, got,
                 want);
}

/* t broadcasts (numpy rules) to dst's shape. */
static ingot_status chk_bcast(const char *op, const char *name, const ingot_tensor *t,
                              const ingot_tensor *dst, ingot_error *err)
{
    bool ok = t->rank <= dst->rank;
    for (uint32_t i = 0; ok && i < t->rank; i++) {
        int64_t s = t->shape[i], d = dst->shape[dst->rank - t->rank + i];
        ok = s == d || s == 1;
    }
    if (ok) return INGOT_OK;
    char a[96], d[96];
    fmt_shape(t, a, sizeof a);
    fmt_shape(dst, d, sizeof d);
    return OPERR(INGOT_E_BAD_SHAPE, "%s: operand '%s' shape %s does not broadcast to dst %s", op,
                 name, a, d);
}

/* dst must have the broadcast shape of a and c exactly. */
static ingot_status chk_bcast2(const char *op, const ingot_tensor *dst, const ingot_tensor *a,
                               const ingot_tensor *c, ingot_error *err)
{
    uint32_t r = a->rank > c->rank ? a->rank : c->rank;
    int64_t shape[INGOT_MAX_RANK];
    for (uint32_t i = 0; i < r; i++) {
        int64_t x = i >= r - a->rank ? a->shape[i - (r - a->rank)] : 1;
        int64_t y = c && i >= r - c->rank ? c->shape[i - (r - c->rank)] : 1;
        if (x != y && x != 1 && y != 1) {
            char sa[96], sc[96];
            fmt_shape(a, sa, sizeof sa);
            fmt_shape(c, sc, sizeof sc);
            return OPERR(INGOT_E_BAD_SHAPE, "%s: operands 'a' %s and 'b' %s do not broadcast", op,
                         sa, sc);
        }
        shape[i] = x == 1 ? y : x;
    }
    return chk_shape_eq(op, "dst", dst, r, shape, err);
}

static ingot_status chk_kind(const char *op, const char *name, const ingot_tensor *t, int kind,
                             ingot_error *err)
{
    static const char *const kn[] = {"", "a float", "an int", "a bool", "a quantized"};
    if (ing_kind(t->dtype) == kind) return INGOT_OK;
    return OPERR(INGOT_E_BAD_TYPE, "%s: operand '%s' has dtype %s, needs %s dtype", op, name,
                 dtname(t->dtype), kn[kind]);
}

static ingot_status chk_same_dtype(const char *op, const char *name, const ingot_tensor *t,
                                   ingot_dtype want, ingot_error *err)
{
    if (t->dtype == want) return INGOT_OK;
    return OPERR(INGOT_E_BAD_TYPE, "%s: operand '%s' has dtype %s, expected %s (cast first)", op,
                 name, dtname(t->dtype), dtname(want));
}

static ingot_status chk_index(const char *op, const char *name, const ingot_tensor *t,
                              ingot_error *err)
{
    if (t->dtype == INGOT_DTYPE_I64 || t->dtype == INGOT_DTYPE_I32) return INGOT_OK;
    return OPERR(INGOT_E_BAD_TYPE, "%s: operand '%s' has dtype %s, indices must be I64 or I32", op,
                 name, dtname(t->dtype));
}

static const ingot_tensor_ops *group(ingot_backend *b, ingot_dtype dt)
{
    switch (ing_kind(dt)) {
    case ING_K_FLOAT: return b->ops->float_ops;
    case ING_K_INT: return b->ops->int_ops;
    case ING_K_BOOL: return b->ops->bool_ops;
    default: return NULL;
    }
}

static const char *group_name(ingot_dtype dt)
{
    switch (ing_kind(dt)) {
    case ING_K_FLOAT: return "float";
    case ING_K_INT: return "int";
    case ING_K_BOOL: return "bool";
    default: return "quantized";
    }
}

#define GROUP_MEMBER(b, dt, m) (group((b), (dt)) ? group((b), (dt))->m : NULL)
/* Members appended in ABI version v exist only in tables written against v or later: a
 * version-1 table's op-group structs end before them. */
#define HAS_ABI(b, v) ((b)->ops->abi_version >= (v))
#define NEED(member, dt)                                                                           \
    do {                                                                                           \
        if (!(member)) return unsupported(b, op, group_name(dt), (dt), err);                       \
    } while (0)
#define ISEMPTY(t) (ing_nelem(t) == 0)

static bool unary_in_group(ingot_unary_op u, int kind)
{
    if (kind == ING_K_FLOAT) return u != INGOT_UNARY_NOT && ingot_unary_op_name(u);
    if (kind == ING_K_INT)
        return u == INGOT_UNARY_NEG || u == INGOT_UNARY_ABS || u == INGOT_UNARY_SIGN ||
               u == INGOT_UNARY_SQUARE;
    if (kind == ING_K_BOOL) return u == INGOT_UNARY_NOT;
    return false;
}

static bool binary_in_group(ingot_binary_op o, int kind)
{
    if (!ingot_binary_op_name(o)) return false;
    if (kind == ING_K_FLOAT) return o <= INGOT_BINARY_REM;
    if (kind == ING_K_INT) return o != INGOT_BINARY_POW;
    if (kind == ING_K_BOOL) return o >= INGOT_BINARY_AND;
    return false;
}

/* ---- element-wise ---- */

INGOT_API ingot_status ingot_op_unary(ingot_backend *b, ingot_unary_op u, ingot_tensor *dst,
                                      const ingot_tensor *a, ingot_error *err)
{
    const char *op = ingot_unary_op_name(u) ? ingot_unary_op_name(u) : "unary";
    if (!b) return OPERR(INGOT_E_MISUSE, "%s: backend is NULL", op);
    ING_TRY(chk(b, op, "a", a, err));
    ING_TRY(chk_dst(b, op, "dst", dst, err));
    if (!unary_in_group(u, ing_kind(a->dtype)))
        return OPERR(INGOT_E_BAD_TYPE, "%s: not defined for operand 'a' of dtype %s", op,
                     dtname(a->dtype));
    ING_TRY(chk_same_dtype(op, "dst", dst, a->dtype, err));
    ING_TRY(chk_shape_eq(op, "dst", dst, a->rank, a->shape, err));
    ING_TRY(chk_alias(op, dst, "a", a, true, err));
    if (ISEMPTY(dst)) return INGOT_OK;
    NEED(GROUP_MEMBER(b, a->dtype, unary), a->dtype);
    return group(b, a->dtype)->unary(b, u, dst, a, err);
}

INGOT_API ingot_status ingot_op_binary(ingot_backend *b, ingot_binary_op o, ingot_tensor *dst,
                                       const ingot_tensor *a, const ingot_tensor *c,
                                       ingot_error *err)
{
    const char *op = ingot_binary_op_name(o) ? ingot_binary_op_name(o) : "binary";
    if (!b) return OPERR(INGOT_E_MISUSE, "%s: backend is NULL", op);
    ING_TRY(chk(b, op, "a", a, err));
    ING_TRY(chk(b, op, "b", c, err));
    ING_TRY(chk_dst(b, op, "dst", dst, err));
    if (!binary_in_group(o, ing_kind(a->dtype)))
        return OPERR(INGOT_E_BAD_TYPE, "%s: not defined for operand 'a' of dtype %s", op,
                     dtname(a->dtype));
    ING_TRY(chk_same_dtype(op, "b", c, a->dtype, err));
    ING_TRY(chk_same_dtype(op, "dst", dst, a->dtype, err));
    ING_TRY(chk_bcast2(op, dst, a, c, err));
    ING_TRY(chk_alias(op, dst, "a", a, true, err));
    ING_TRY(chk_alias(op, dst, "b", c, true, err));
    if (ISEMPTY(dst)) return INGOT_OK;
    NEED(GROUP_MEMBER(b, a->dtype, binary), a->dtype);
    return group(b, a->dtype)->binary(b, o, dst, a, c, err);
}

INGOT_API ingot_status ingot_op_binary_scalar(ingot_backend *b, ingot_binary_op o,
                                              ingot_tensor *dst, const ingot_tensor *a, double s,
                                              ingot_error *err)
{
    const char *op = ingot_binary_op_name(o) ? ingot_binary_op_name(o) : "binary_scalar";
    if (!b) return OPERR(INGOT_E_MISUSE, "%s: backend is NULL", op);
    ING_TRY(chk(b, op, "a", a, err));
    ING_TRY(chk_dst(b, op, "dst", dst, err));
    if (!binary_in_group(o, ing_kind(a->dtype)))
        return OPERR(INGOT_E_BAD_TYPE, "%s: not defined for operand 'a' of dtype %s", op,
                     dtname(a->dtype));
    ING_TRY(chk_same_dtype(op, "dst", dst, a->dtype, err));
    ING_TRY(chk_shape_eq(op, "dst", dst, a->rank, a->shape, err));
    ING_TRY(chk_alias(op, dst, "a", a, true, err));
    if (ISEMPTY(dst)) return INGOT_OK;
    NEED(GROUP_MEMBER(b, a->dtype, binary_scalar), a->dtype);
    return group(b, a->dtype)->binary_scalar(b, o, dst, a, s, err);
}

INGOT_API ingot_status ingot_op_compare(ingot_backend *b, ingot_cmp_op o, ingot_tensor *dst,
                                        const ingot_tensor *a, const ingot_tensor *c,
                                        ingot_error *err)
{
    const char *op = ingot_cmp_op_name(o) ? ingot_cmp_op_name(o) : "compare";
    if (!b) return OPERR(INGOT_E_MISUSE, "%s: backend is NULL", op);
    if (!ingot_cmp_op_name(o)) return OPERR(INGOT_E_MISUSE, "compare: unknown op %d", (int)o);
    ING_TRY(chk(b, op, "a", a, err));
    ING_TRY(chk(b, op, "b", c, err));
    ING_TRY(chk_dst(b, op, "dst", dst, err));
    ING_TRY(chk_same_dtype(op, "b", c, a->dtype, err));
    ING_TRY(chk_same_dtype(op, "dst", dst, INGOT_DTYPE_BOOL, err));
    ING_TRY(chk_bcast2(op, dst, a, c, err));
    ING_TRY(chk_alias(op, dst, "a", a, a->dtype == INGOT_DTYPE_BOOL, err));
    ING_TRY(chk_alias(op, dst, "b", c, c->dtype == INGOT_DTYPE_BOOL, err));
    if (ISEMPTY(dst)) return INGOT_OK;
    NEED(GROUP_MEMBER(b, a->dtype, compare), a->dtype);
    return group(b, a->dtype)->compare(b, o, dst, a, c, err);
}

INGOT_API ingot_status ingot_op_clamp(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *a,
                                      double lo, double hi, ingot_error *err)
{
    const char *op = "clamp";
    if (!b) return OPERR(INGOT_E_MISUSE, "clamp: backend is NULL");
    ING_TRY(chk(b, op, "a", a, err));
    ING_TRY(chk_dst(b, op, "dst", dst, err));
    if (ing_kind(a->dtype) == ING_K_BOOL) ING_TRY(chk_kind(op, "a", a, ING_K_FLOAT, err));
    ING_TRY(chk_same_dtype(op, "dst", dst, a->dtype, err));
    ING_TRY(chk_shape_eq(op, "dst", dst, a->rank, a->shape, err));
    ING_TRY(chk_alias(op, dst, "a", a, true, err));
    if (ISEMPTY(dst)) return INGOT_OK;
    NEED(GROUP_MEMBER(b, a->dtype, clamp), a->dtype);
    return group(b, a->dtype)->clamp(b, dst, a, lo, hi, err);
}

INGOT_API ingot_status ingot_op_where(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *cond,
                                      const ingot_tensor *a, const ingot_tensor *c,
                                      ingot_error *err)
{
    const char *op = "where";
    if (!b) return OPERR(INGOT_E_MISUSE, "where: backend is NULL");
    ING_TRY(chk(b, op, "cond", cond, err));
    ING_TRY(chk(b, op, "a", a, err));
    ING_TRY(chk(b, op, "b", c, err));
    ING_TRY(chk_dst(b, op, "dst", dst, err));
    ING_TRY(chk_same_dtype(op, "cond", cond, INGOT_DTYPE_BOOL, err));
    ING_TRY(chk_same_dtype(op, "b", c, a->dtype, err));
    ING_TRY(chk_same_dtype(op, "dst", dst, a->dtype, err));
    ING_TRY(chk_bcast(op, "cond", cond, dst, err));
    ING_TRY(chk_bcast(op, "a", a, dst, err));
    ING_TRY(chk_bcast(op, "b", c, dst, err));
    ING_TRY(chk_alias(op, dst, "cond", cond, true, err));
    ING_TRY(chk_alias(op, dst, "a", a, true, err));
    ING_TRY(chk_alias(op, dst, "b", c, true, err));
    if (ISEMPTY(dst)) return INGOT_OK;
    NEED(GROUP_MEMBER(b, a->dtype, where), a->dtype);
    return group(b, a->dtype)->where(b, dst, cond, a, c, err);
}

INGOT_API ingot_status ingot_op_mask_fill(ingot_backend *b, ingot_tensor *dst,
                                          const ingot_tensor *a, const ingot_tensor *mask,
                                          double value, ingot_error *err)
{
    const char *op = "mask_fill";
    if (!b) return OPERR(INGOT_E_MISUSE, "mask_fill: backend is NULL");
    ING_TRY(chk(b, op, "a", a, err));
    ING_TRY(chk(b, op, "mask", mask, err));
    ING_TRY(chk_dst(b, op, "dst", dst, err));
    ING_TRY(chk_same_dtype(op, "mask", mask, INGOT_DTYPE_BOOL, err));
    ING_TRY(chk_same_dtype(op, "dst", dst, a->dtype, err));
    ING_TRY(chk_shape_eq(op, "dst", dst, a->rank, a->shape, err));
    ING_TRY(chk_bcast(op, "mask", mask, dst, err));
    ING_TRY(chk_alias(op, dst, "a", a, true, err));
    ING_TRY(chk_alias(op, dst, "mask", mask, true, err));
    if (ISEMPTY(dst)) return INGOT_OK;
    NEED(GROUP_MEMBER(b, a->dtype, mask_fill), a->dtype);
    return group(b, a->dtype)->mask_fill(b, dst, a, mask, value, err);
}

INGOT_API ingot_status ingot_op_copy(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *src,
                                     ingot_error *err)
{
    const char *op = "copy";
    if (!b) return OPERR(INGOT_E_MISUSE, "copy: backend is NULL");
    ING_TRY(chk(b, op, "src", src, err));
    ING_TRY(chk_dst(b, op, "dst", dst, err));
    ING_TRY(chk_same_dtype(op, "dst", dst, src->dtype, err));
    ING_TRY(chk_shape_eq(op, "dst", dst, src->rank, src->shape, err));
    ING_TRY(chk_alias(op, dst, "src", src, true, err));
    if (ISEMPTY(dst) || same_view(dst, src)) return INGOT_OK;
    if (ing_kind(src->dtype) == ING_K_QUANT) {
        /* Block tensors are always contiguous: a byte copy. */
        uint64_t lo, hi;
        extent(src, &lo, &hi);
        if (!src->buf->host || !dst->buf->host)
            return OPERR(INGOT_E_UNSUPPORTED, "copy: quantized device tensors");
        memcpy(ing_ptr(dst), ing_ptr(src), (size_t)(hi - lo));
        return INGOT_OK;
    }
    NEED(GROUP_MEMBER(b, src->dtype, copy), src->dtype);
    return group(b, src->dtype)->copy(b, dst, src, err);
}

INGOT_API ingot_status ingot_op_cast(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *src,
                                     ingot_error *err)
{
    const char *op = "cast";
    if (!b) return OPERR(INGOT_E_MISUSE, "cast: backend is NULL");
    ING_TRY(chk(b, op, "src", src, err));
    ING_TRY(chk_dst(b, op, "dst", dst, err));
    if (ing_kind(src->dtype) == ING_K_QUANT || ing_kind(dst->dtype) == ING_K_QUANT)
        return OPERR(INGOT_E_BAD_TYPE, "cast: block-quantized operand: use quantize/dequantize");
    ING_TRY(chk_shape_eq(op, "dst", dst, src->rank, src->shape, err));
    ING_TRY(chk_alias(op, dst, "src", src, ing_esize(src->dtype) == ing_esize(dst->dtype), err));
    if (ISEMPTY(dst)) return INGOT_OK;
    NEED(GROUP_MEMBER(b, dst->dtype, cast), dst->dtype);
    return group(b, dst->dtype)->cast(b, dst, src, err);
}

INGOT_API ingot_status ingot_op_fill(ingot_backend *b, ingot_tensor *dst, double v,
                                     ingot_error *err)
{
    const char *op = "fill";
    if (!b) return OPERR(INGOT_E_MISUSE, "fill: backend is NULL");
    ING_TRY(chk_dst(b, op, "dst", dst, err));
    if (ISEMPTY(dst)) return INGOT_OK;
    NEED(GROUP_MEMBER(b, dst->dtype, fill), dst->dtype);
    return group(b, dst->dtype)->fill(b, dst, v, err);
}

INGOT_API ingot_status ingot_op_arange(ingot_backend *b, ingot_tensor *dst, double start,
                                       double step, ingot_error *err)
{
    const char *op = "arange";
    if (!b) return OPERR(INGOT_E_MISUSE, "arange: backend is NULL");
    ING_TRY(chk_dst(b, op, "dst", dst, err));
    if (dst->rank == 0) return OPERR(INGOT_E_BAD_NDIMS, "arange: dst must have rank >= 1");
    if (ISEMPTY(dst)) return INGOT_OK;
    NEED(GROUP_MEMBER(b, dst->dtype, arange), dst->dtype);
    return group(b, dst->dtype)->arange(b, dst, start, step, err);
}

/* ---- matmul, reductions, indexing ---- */

INGOT_API ingot_status ingot_op_matmul(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *a,
                                       const ingot_tensor *c, ingot_error *err)
{
    const char *op = "matmul";
    if (!b) return OPERR(INGOT_E_MISUSE, "matmul: backend is NULL");
    ING_TRY(chk(b, op, "a", a, err));
    ING_TRY(chk(b, op, "b", c, err));
    ING_TRY(chk_dst(b, op, "dst", dst, err));
    ING_TRY(chk_kind(op, "a", a, ING_K_FLOAT, err));
    ING_TRY(chk_same_dtype(op, "b", c, a->dtype, err));
    ING_TRY(chk_same_dtype(op, "dst", dst, a->dtype, err));
    if (a->rank < 2 || c->rank < 2)
        return OPERR(INGOT_E_BAD_NDIMS, "matmul: operands need rank >= 2 (got %u and %u)",
                     a->rank, c->rank);
    if (a->shape[a->rank - 1] != c->shape[c->rank - 2])
        return OPERR(INGOT_E_BAD_SHAPE, "matmul: inner dimensions differ: 'a' has k=%lld, 'b' "
                     "has k=%lld", (long long)a->shape[a->rank - 1],
                     (long long)c->shape[c->rank - 2]);
    uint32_t r = a->rank > c->rank ? a->rank : c->rank;
    int64_t shape[INGOT_MAX_RANK];
    for (uint32_t i = 0; i + 2 < r; i++) {
        int64_t x = i + a->rank >= r ? a->shape[i + a->rank - r] : 1;
        int64_t y = i + c->rank >= r ? c->shape[i + c->rank - r] : 1;
        if (x != y && x != 1 && y != 1)
            return OPERR(INGOT_E_BAD_SHAPE, "matmul: batch axis %u: %lld vs %lld", i,
                         (long long)x, (long long)y);
        shape[i] = x == 1 ? y : x;
    }
    shape[r - 2] = a->shape[a->rank - 2];
    shape[r - 1] = c->shape[c->rank - 1];
    ING_TRY(chk_shape_eq(op, "dst", dst, r, shape, err));
    ING_TRY(chk_alias(op, dst, "a", a, false, err));
    ING_TRY(chk_alias(op, dst, "b", c, false, err));
    if (ISEMPTY(dst)) return INGOT_OK;
    NEED(GROUP_MEMBER(b, a->dtype, matmul), a->dtype);
    return group(b, a->dtype)->matmul(b, dst, a, c, err);
}

INGOT_API ingot_status ingot_op_reduce(ingot_backend *b, ingot_reduce_op o, ingot_tensor *dst,
                                       const ingot_tensor *a, uint32_t axis, ingot_error *err)
{
    const char *op = ingot_reduce_op_name(o) ? ingot_reduce_op_name(o) : "reduce";
    if (!b) return OPERR(INGOT_E_MISUSE, "%s: backend is NULL", op);
    if (!ingot_reduce_op_name(o)) return OPERR(INGOT_E_MISUSE, "reduce: unknown op %d", (int)o);
    ING_TRY(chk(b, op, "a", a, err));
    ING_TRY(chk_dst(b, op, "dst", dst, err));
    if (axis >= a->rank)
        return OPERR(INGOT_E_RANGE, "%s: axis %u out of range for operand 'a' of rank %u", op,
                     axis, a->rank);
    int k = ing_kind(a->dtype);
    bool arg = o == INGOT_REDUCE_ARGMAX || o == INGOT_REDUCE_ARGMIN;
    bool ok = k == ING_K_BOOL ? (o == INGOT_REDUCE_ANY || o == INGOT_REDUCE_ALL)
            : k == ING_K_INT  ? (o != INGOT_REDUCE_MEAN && o != INGOT_REDUCE_ANY &&
                                 o != INGOT_REDUCE_ALL)
            : k == ING_K_FLOAT ? (o != INGOT_REDUCE_ANY && o != INGOT_REDUCE_ALL)
                               : false;
    if (!ok)
        return OPERR(INGOT_E_BAD_TYPE, "%s: not defined for operand 'a' of dtype %s", op,
                     dtname(a->dtype));
    ING_TRY(chk_same_dtype(op, "dst", dst, arg ? INGOT_DTYPE_I64 : a->dtype, err));
    int64_t shape[INGOT_MAX_RANK];
    for (uint32_t i = 0; i < a->rank; i++) shape[i] = a->shape[i];
    shape[axis] = 1;
    ING_TRY(chk_shape_eq(op, "dst", dst, a->rank, shape, err));
    ING_TRY(chk_alias(op, dst, "a", a, false, err));
    if (ISEMPTY(dst)) return INGOT_OK;
    if (a->shape[axis] == 0 && (o == INGOT_REDUCE_MAX || o == INGOT_REDUCE_MIN || arg))
        return OPERR(INGOT_E_RANGE, "%s: reduction over an empty axis %u has no value", op, axis);
    NEED(GROUP_MEMBER(b, a->dtype, reduce), a->dtype);
    return group(b, a->dtype)->reduce(b, o, dst, a, axis, err);
}

INGOT_API ingot_status ingot_op_cumsum(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *a,
                                       uint32_t axis, ingot_error *err)
{
    const char *op = "cumsum";
    if (!b) return OPERR(INGOT_E_MISUSE, "cumsum: backend is NULL");
    ING_TRY(chk(b, op, "a", a, err));
    ING_TRY(chk_dst(b, op, "dst", dst, err));
    if (ing_kind(a->dtype) == ING_K_BOOL) ING_TRY(chk_kind(op, "a", a, ING_K_INT, err));
    if (axis >= a->rank)
        return OPERR(INGOT_E_RANGE, "cumsum: axis %u out of range for rank %u", axis, a->rank);
    ING_TRY(chk_same_dtype(op, "dst", dst, a->dtype, err));
    ING_TRY(chk_shape_eq(op, "dst", dst, a->rank, a->shape, err));
    ING_TRY(chk_alias(op, dst, "a", a, false, err));
    if (ISEMPTY(dst)) return INGOT_OK;
    NEED(GROUP_MEMBER(b, a->dtype, cumsum), a->dtype);
    return group(b, a->dtype)->cumsum(b, dst, a, axis, err);
}

INGOT_API ingot_status ingot_op_topk(ingot_backend *b, ingot_tensor *values, ingot_tensor *indices,
                                     const ingot_tensor *a, uint32_t k, bool largest,
                                     ingot_error *err)
{
    const char *op = "topk";
    if (!b) return OPERR(INGOT_E_MISUSE, "topk: backend is NULL");
    ING_TRY(chk(b, op, "a", a, err));
    ING_TRY(chk_dst(b, op, "values", values, err));
    ING_TRY(chk_dst(b, op, "indices", indices, err));
    if (a->rank == 0) return OPERR(INGOT_E_BAD_NDIMS, "topk: operand 'a' must have rank >= 1");
    if (ing_kind(a->dtype) == ING_K_BOOL) ING_TRY(chk_kind(op, "a", a, ING_K_FLOAT, err));
    if (k > a->shape[a->rank - 1])
        return OPERR(INGOT_E_RANGE, "topk: k=%u exceeds the last axis (%lld)", k,
                     (long long)a->shape[a->rank - 1]);
    ING_TRY(chk_same_dtype(op, "values", values, a->dtype, err));
    ING_TRY(chk_same_dtype(op, "indices", indices, INGOT_DTYPE_I64, err));
    int64_t shape[INGOT_MAX_RANK];
    for (uint32_t i = 0; i < a->rank; i++) shape[i] = a->shape[i];
    shape[a->rank - 1] = k;
    ING_TRY(chk_shape_eq(op, "values", values, a->rank, shape, err));
    ING_TRY(chk_shape_eq(op, "indices", indices, a->rank, shape, err));
    ING_TRY(chk_alias(op, values, "a", a, false, err));
    ING_TRY(chk_alias(op, indices, "a", a, false, err));
    ING_TRY(chk_alias(op, indices, "values", values, false, err));
    if (ISEMPTY(values)) return INGOT_OK;
    NEED(GROUP_MEMBER(b, a->dtype, topk), a->dtype);
    return group(b, a->dtype)->topk(b, values, indices, a, k, largest, err);
}

INGOT_API ingot_status ingot_op_gather(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *src,
                                       uint32_t axis, const ingot_tensor *index, ingot_error *err)
{
    const char *op = "gather";
    if (!b) return OPERR(INGOT_E_MISUSE, "gather: backend is NULL");
    ING_TRY(chk(b, op, "src", src, err));
    ING_TRY(chk(b, op, "index", index, err));
    ING_TRY(chk_dst(b, op, "dst", dst, err));
    ING_TRY(chk_index(op, "index", index, err));
    ING_TRY(chk_same_dtype(op, "dst", dst, src->dtype, err));
    if (axis >= src->rank || index->rank != src->rank)
        return OPERR(INGOT_E_BAD_SHAPE, "gather: operand 'index' must have the rank of 'src' (%u)"
                     " and axis (%u) must be below it", src->rank, axis);
    for (uint32_t i = 0; i < src->rank; i++)
        if (i != axis && index->shape[i] > src->shape[i])
            return OPERR(INGOT_E_BAD_SHAPE, "gather: operand 'index' axis %u (%lld) exceeds 'src' "
                         "(%lld)", i, (long long)index->shape[i], (long long)src->shape[i]);
    ING_TRY(chk_shape_eq(op, "dst", dst, index->rank, index->shape, err));
    ING_TRY(chk_alias(op, dst, "src", src, false, err));
    ING_TRY(chk_alias(op, dst, "index", index, false, err));
    if (ISEMPTY(dst)) return INGOT_OK;
    NEED(GROUP_MEMBER(b, src->dtype, gather), src->dtype);
    return group(b, src->dtype)->gather(b, dst, src, axis, index, err);
}

INGOT_API ingot_status ingot_op_scatter_add(ingot_backend *b, ingot_tensor *dst, uint32_t axis,
                                            const ingot_tensor *index, const ingot_tensor *src,
                                            ingot_error *err)
{
    const char *op = "scatter_add";
    if (!b) return OPERR(INGOT_E_MISUSE, "scatter_add: backend is NULL");
    ING_TRY(chk(b, op, "src", src, err));
    ING_TRY(chk(b, op, "index", index, err));
    ING_TRY(chk_dst(b, op, "dst", dst, err));
    ING_TRY(chk_index(op, "index", index, err));
    ING_TRY(chk_same_dtype(op, "src", src, dst->dtype, err));
    if (ing_kind(dst->dtype) == ING_K_BOOL) ING_TRY(chk_kind(op, "dst", dst, ING_K_FLOAT, err));
    if (axis >= dst->rank || index->rank != dst->rank || src->rank != dst->rank)
        return OPERR(INGOT_E_BAD_SHAPE, "scatter_add: 'index' and 'src' must have the rank of "
                     "'dst' (%u), axis %u below it", dst->rank, axis);
    for (uint32_t i = 0; i < dst->rank; i++) {
        if (index->shape[i] > src->shape[i])
            return OPERR(INGOT_E_BAD_SHAPE, "scatter_add: operand 'index' axis %u exceeds 'src'",
                         i);
        if (i != axis && index->shape[i] > dst->shape[i])
            return OPERR(INGOT_E_BAD_SHAPE, "scatter_add: operand 'index' axis %u exceeds 'dst'",
                         i);
    }
    ING_TRY(chk_alias(op, dst, "src", src, false, err));
    ING_TRY(chk_alias(op, dst, "index", index, false, err));
    if (ISEMPTY(index) || ISEMPTY(dst)) return INGOT_OK;
    NEED(GROUP_MEMBER(b, dst->dtype, scatter_add), dst->dtype);
    return group(b, dst->dtype)->scatter_add(b, dst, axis, index, src, err);
}

INGOT_API ingot_status ingot_op_index_select(ingot_backend *b, ingot_tensor *dst,
                                             const ingot_tensor *src, uint32_t axis,
                                             const ingot_tensor *index, ingot_error *err)
{
    const char *op = "index_select";
    if (!b) return OPERR(INGOT_E_MISUSE, "index_select: backend is NULL");
    ING_TRY(chk(b, op, "src", src, err));
    ING_TRY(chk(b, op, "index", index, err));
    ING_TRY(chk_dst(b, op, "dst", dst, err));
    ING_TRY(chk_index(op, "index", index, err));
    ING_TRY(chk_same_dtype(op, "dst", dst, src->dtype, err));
    if (index->rank != 1)
        return OPERR(INGOT_E_BAD_NDIMS, "index_select: operand 'index' must be 1-D");
    if (axis >= src->rank)
        return OPERR(INGOT_E_RANGE, "index_select: axis %u out of range for rank %u", axis,
                     src->rank);
    int64_t shape[INGOT_MAX_RANK];
    for (uint32_t i = 0; i < src->rank; i++) shape[i] = src->shape[i];
    shape[axis] = index->shape[0];
    ING_TRY(chk_shape_eq(op, "dst", dst, src->rank, shape, err));
    ING_TRY(chk_alias(op, dst, "src", src, false, err));
    ING_TRY(chk_alias(op, dst, "index", index, false, err));
    if (ISEMPTY(dst)) return INGOT_OK;
    NEED(GROUP_MEMBER(b, src->dtype, index_select), src->dtype);
    return group(b, src->dtype)->index_select(b, dst, src, axis, index, err);
}

INGOT_API ingot_status ingot_op_sort(ingot_backend *b, ingot_tensor *values,
                                     ingot_tensor *indices, const ingot_tensor *a, uint32_t axis,
                                     bool descending, ingot_error *err)
{
    const char *op = "sort";
    if (!b) return OPERR(INGOT_E_MISUSE, "sort: backend is NULL");
    if (!values && !indices)
        return OPERR(INGOT_E_MISUSE, "sort: operands 'values' and 'indices' are both NULL");
    ING_TRY(chk(b, op, "a", a, err));
    if (values) ING_TRY(chk_dst(b, op, "values", values, err));
    if (indices) ING_TRY(chk_dst(b, op, "indices", indices, err));
    int k = ing_kind(a->dtype);
    if (k != ING_K_FLOAT && k != ING_K_INT)
        return OPERR(INGOT_E_BAD_TYPE, "sort: operand 'a' has dtype %s, needs a float or int dtype",
                     dtname(a->dtype));
    if (a->rank == 0) return OPERR(INGOT_E_BAD_NDIMS, "sort: operand 'a' must have rank >= 1");
    if (axis >= a->rank)
        return OPERR(INGOT_E_RANGE, "sort: axis %u out of range for operand 'a' of rank %u", axis,
                     a->rank);
    if (values) {
        ING_TRY(chk_same_dtype(op, "values", values, a->dtype, err));
        ING_TRY(chk_shape_eq(op, "values", values, a->rank, a->shape, err));
        ING_TRY(chk_alias(op, values, "a", a, false, err));
    }
    if (indices) {
        ING_TRY(chk_same_dtype(op, "indices", indices, INGOT_DTYPE_I64, err));
        ING_TRY(chk_shape_eq(op, "indices", indices, a->rank, a->shape, err));
        ING_TRY(chk_alias(op, indices, "a", a, false, err));
        if (values) ING_TRY(chk_alias(op, indices, "values", values, false, err));
    }
    if (ISEMPTY(a)) return INGOT_OK;
    const ingot_tensor_ops *g = group(b, a->dtype);
    if (HAS_ABI(b, 2) && g && g->sort) return g->sort(b, values, indices, a, axis, descending, err);
    /* Fallback: top-k of the whole axis (same order and tie rule), on views that make `axis`
     * the last one. */
    if (!values || !indices || !g || !g->topk || a->shape[axis] > (int64_t)UINT32_MAX)
        return unsupported(b, op, group_name(a->dtype), a->dtype, err);
    uint32_t perm[INGOT_MAX_RANK];
    for (uint32_t i = 0; i < a->rank; i++) perm[i] = i;
    perm[axis] = a->rank - 1;
    perm[a->rank - 1] = axis;
    ingot_tensor va, vv, vi;
    ING_TRY(ingot_tensor_permute(&va, a, perm, err));
    ING_TRY(ingot_tensor_permute(&vv, values, perm, err));
    ING_TRY(ingot_tensor_permute(&vi, indices, perm, err));
    return g->topk(b, &vv, &vi, &va, (uint32_t)a->shape[axis], descending, err);
}

INGOT_API ingot_status ingot_op_cat(ingot_backend *b, ingot_tensor *dst,
                                    const ingot_tensor *const *srcs, uint32_t n, uint32_t axis,
                                    ingot_error *err)
{
    const char *op = "cat";
    if (!b || (n && !srcs)) return OPERR(INGOT_E_MISUSE, "cat: backend or srcs is NULL");
    ING_TRY(chk_dst(b, op, "dst", dst, err));
    if (axis >= dst->rank)
        return OPERR(INGOT_E_RANGE, "cat: axis %u out of range for rank %u", axis, dst->rank);
    int64_t total = 0;
    for (uint32_t i = 0; i < n; i++) {
        char name[16];
        ingot__fmt(name, sizeof name, "srcs[%u]", i);
        ING_TRY(chk(b, op, name, srcs[i], err));
        ING_TRY(chk_same_dtype(op, name, srcs[i], dst->dtype, err));
        int64_t shape[INGOT_MAX_RANK];
        for (uint32_t d = 0; d < dst->rank; d++) shape[d] = dst->shape[d];
        shape[axis] = srcs[i]->shape[axis];
        ING_TRY(chk_shape_eq(op, name, srcs[i], dst->rank, shape, err));
        ING_TRY(chk_alias(op, dst, name, srcs[i], false, err));
        total += srcs[i]->shape[axis];
    }
    if (total != dst->shape[axis])
        return OPERR(INGOT_E_BAD_SHAPE, "cat: sources add up to %lld along axis %u, dst has %lld",
                     (long long)total, axis, (long long)dst->shape[axis]);
    /* Fallback composed from views + copy. */
    int64_t at = 0;
    for (uint32_t i = 0; i < n; i++) {
        ingot_tensor part;
        int64_t len = srcs[i]->shape[axis];
        ING_TRY(ingot_tensor_slice(&part, dst, axis, at, at + len, 1, err));
        ING_TRY(ingot_op_copy(b, &part, srcs[i], err));
        at += len;
    }
    return INGOT_OK;
}

/* ---- activations ---- */

INGOT_API ingot_status ingot_op_activation(ingot_backend *b, ingot_act_op a_op, ingot_tensor *dst,
                                           const ingot_tensor *a, double param, ingot_error *err)
{
    const char *op = ingot_act_op_name(a_op) ? ingot_act_op_name(a_op) : "activation";
    if (!b) return OPERR(INGOT_E_MISUSE, "%s: backend is NULL", op);
    if (!ingot_act_op_name(a_op))
        return OPERR(INGOT_E_MISUSE, "activation: unknown op %d", (int)a_op);
    ING_TRY(chk(b, op, "a", a, err));
    ING_TRY(chk_dst(b, op, "dst", dst, err));
    ING_TRY(chk_kind(op, "a", a, ING_K_FLOAT, err));
    ING_TRY(chk_same_dtype(op, "dst", dst, a->dtype, err));
    ING_TRY(chk_shape_eq(op, "dst", dst, a->rank, a->shape, err));
    bool rowwise = a_op == INGOT_ACT_SOFTMAX || a_op == INGOT_ACT_LOG_SOFTMAX;
    ING_TRY(chk_alias(op, dst, "a", a, !rowwise || ingot_tensor_is_contiguous(a), err));
    if (ISEMPTY(dst)) return INGOT_OK;
    if (rowwise) {
        if (a->rank == 0) return OPERR(INGOT_E_BAD_NDIMS, "%s: needs rank >= 1", op);
        return ingot_op_softmax(b, dst, a, a->rank - 1, a_op == INGOT_ACT_LOG_SOFTMAX, err);
    }
    if (a_op == INGOT_ACT_IDENTITY) return ingot_op_copy(b, dst, a, err);
    const ingot_activation_ops *ao = b->ops->activation_ops;
    NEED(ao ? ao->activation : NULL, a->dtype);
    return ao->activation(b, a_op, dst, a, param, err);
}

INGOT_API ingot_status ingot_op_softmax(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *a,
                                        uint32_t axis, bool log, ingot_error *err)
{
    const char *op = log ? "log_softmax" : "softmax";
    if (!b) return OPERR(INGOT_E_MISUSE, "%s: backend is NULL", op);
    ING_TRY(chk(b, op, "a", a, err));
    ING_TRY(chk_dst(b, op, "dst", dst, err));
    ING_TRY(chk_kind(op, "a", a, ING_K_FLOAT, err));
    ING_TRY(chk_same_dtype(op, "dst", dst, a->dtype, err));
    ING_TRY(chk_shape_eq(op, "dst", dst, a->rank, a->shape, err));
    if (axis >= a->rank)
        return OPERR(INGOT_E_RANGE, "%s: axis %u out of range for rank %u", op, axis, a->rank);
    ING_TRY(chk_alias(op, dst, "a", a, ingot_tensor_is_contiguous(a), err));
    if (ISEMPTY(dst)) return INGOT_OK;
    const ingot_activation_ops *ao = b->ops->activation_ops;
    NEED(ao ? ao->softmax : NULL, a->dtype);
    return ao->softmax(b, dst, a, axis, log, err);
}

/* ---- sampling ---- */

static const ingot_sampling_ops *sampling(const ingot_backend *b)
{
    return HAS_ABI(b, 2) ? b->ops->sampling_ops : NULL;
}

INGOT_API ingot_status ingot_op_top_p(ingot_backend *b, ingot_tensor *dst, ingot_tensor *keep,
                                      const ingot_tensor *a, double p, bool logits,
                                      ingot_error *err)
{
    const char *op = "top_p";
    if (!b) return OPERR(INGOT_E_MISUSE, "top_p: backend is NULL");
    if (!dst && !keep)
        return OPERR(INGOT_E_MISUSE, "top_p: operands 'dst' and 'keep' are both NULL");
    if (p != p) return OPERR(INGOT_E_RANGE, "top_p: p is NaN");
    ING_TRY(chk(b, op, "a", a, err));
    ING_TRY(chk_kind(op, "a", a, ING_K_FLOAT, err));
    if (a->rank == 0) return OPERR(INGOT_E_BAD_NDIMS, "top_p: operand 'a' must have rank >= 1");
    if (dst) {
        ING_TRY(chk_dst(b, op, "dst", dst, err));
        ING_TRY(chk_same_dtype(op, "dst", dst, a->dtype, err));
        ING_TRY(chk_shape_eq(op, "dst", dst, a->rank, a->shape, err));
        ING_TRY(chk_alias(op, dst, "a", a, true, err));
    }
    if (keep) {
        ING_TRY(chk_dst(b, op, "keep", keep, err));
        ING_TRY(chk_same_dtype(op, "keep", keep, INGOT_DTYPE_BOOL, err));
        ING_TRY(chk_shape_eq(op, "keep", keep, a->rank, a->shape, err));
        ING_TRY(chk_alias(op, keep, "a", a, false, err));
        if (dst) ING_TRY(chk_alias(op, keep, "dst", dst, false, err));
    }
    if (ISEMPTY(a)) return INGOT_OK;
    const ingot_sampling_ops *so = sampling(b);
    if (so && so->top_p) return so->top_p(b, dst, keep, a, p, logits, err);
    return unsupported(b, op, "sampling", a->dtype, err);
}

INGOT_API ingot_status ingot_op_multinomial(ingot_backend *b, ingot_tensor *dst,
                                            const ingot_tensor *probs, ingot_error *err)
{
    const char *op = "multinomial";
    if (!b) return OPERR(INGOT_E_MISUSE, "multinomial: backend is NULL");
    ING_TRY(chk(b, op, "probs", probs, err));
    ING_TRY(chk_kind(op, "probs", probs, ING_K_FLOAT, err));
    ING_TRY(chk_dst(b, op, "dst", dst, err));
    ING_TRY(chk_same_dtype(op, "dst", dst, INGOT_DTYPE_I64, err));
    if (probs->rank == 0)
        return OPERR(INGOT_E_BAD_NDIMS, "multinomial: operand 'probs' must have rank >= 1");
    int64_t shape[INGOT_MAX_RANK];
    for (uint32_t i = 0; i < probs->rank; i++) shape[i] = probs->shape[i];
    shape[probs->rank - 1] = dst->rank == probs->rank ? dst->shape[dst->rank - 1] : 1;
    ING_TRY(chk_shape_eq(op, "dst", dst, probs->rank, shape, err));
    ING_TRY(chk_alias(op, dst, "probs", probs, false, err));
    if (ISEMPTY(dst)) return INGOT_OK;
    if (probs->shape[probs->rank - 1] == 0)
        return OPERR(INGOT_E_RANGE, "multinomial: operand 'probs' has no tokens (empty last axis)");
    const ingot_sampling_ops *so = sampling(b);
    if (so && so->multinomial) return so->multinomial(b, dst, probs, err);
    return unsupported(b, op, "sampling", probs->dtype, err);
}

/* ---- module ops ---- */

static ingot_status chk_vec(ingot_backend *b, const char *op, const char *name,
                            const ingot_tensor *t, int64_t n, ingot_dtype dt, ingot_error *err)
{
    if (!t) return INGOT_OK;
    ING_TRY(chk(b, op, name, t, err));
    ING_TRY(chk_same_dtype(op, name, t, dt, err));
    return chk_shape_eq(op, name, t, 1, &n, err);
}

INGOT_API ingot_status ingot_op_linear(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *x,
                                       const ingot_tensor *w, const ingot_tensor *bias,
                                       ingot_error *err)
{
    const char *op = "linear";
    if (!b) return OPERR(INGOT_E_MISUSE, "linear: backend is NULL");
    ING_TRY(chk(b, op, "w", w, err));
    if (ing_kind(w->dtype) == ING_K_QUANT) return ingot_op_qlinear(b, dst, x, w, NULL, bias, err);
    if ((w->dtype == INGOT_DTYPE_F16 || w->dtype == INGOT_DTYPE_BF16) && x &&
        x->dtype == INGOT_DTYPE_F32) /* half weights, f32 activations: widened as they are read */
        return ingot_op_qlinear(b, dst, x, w, NULL, bias, err);
    ING_TRY(chk(b, op, "x", x, err));
    ING_TRY(chk_dst(b, op, "dst", dst, err));
    ING_TRY(chk_kind(op, "x", x, ING_K_FLOAT, err));
    ING_TRY(chk_same_dtype(op, "w", w, x->dtype, err));
    ING_TRY(chk_same_dtype(op, "dst", dst, x->dtype, err));
    if (w->rank != 2) return OPERR(INGOT_E_BAD_NDIMS, "linear: operand 'w' must be [out, in]");
    if (x->rank < 1) return OPERR(INGOT_E_BAD_NDIMS, "linear: operand 'x' must be [..., in]");
    if (x->shape[x->rank - 1] != w->shape[1])
        return OPERR(INGOT_E_BAD_SHAPE, "linear: operand 'w' is [%lld, %lld] but 'x' has %lld "
                     "features (w must be [out, in], torch layout)", (long long)w->shape[0],
                     (long long)w->shape[1], (long long)x->shape[x->rank - 1]);
    ING_TRY(chk_vec(b, op, "bias", bias, w->shape[0], x->dtype, err));
    int64_t shape[INGOT_MAX_RANK];
    for (uint32_t i = 0; i < x->rank; i++) shape[i] = x->shape[i];
    shape[x->rank - 1] = w->shape[0];
    ING_TRY(chk_shape_eq(op, "dst", dst, x->rank, shape, err));
    ING_TRY(chk_alias(op, dst, "x", x, false, err));
    ING_TRY(chk_alias(op, dst, "w", w, false, err));
    ING_TRY(chk_alias(op, dst, "bias", bias, false, err));
    if (ISEMPTY(dst)) return INGOT_OK;
    const ingot_module_ops *mo = b->ops->module_ops;
    if (mo && mo->linear) return mo->linear(b, dst, x, w, bias, err);
    return unsupported(b, op, "module", x->dtype, err);
}

INGOT_API ingot_status ingot_op_conv(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *x,
                                     const ingot_tensor *w, const ingot_tensor *bias,
                                     const ingot_conv_params *p, ingot_error *err)
{
    const char *op = "conv";
    if (!b || !p) return OPERR(INGOT_E_MISUSE, "conv: backend or params is NULL");
    ING_TRY(chk(b, op, "x", x, err));
    ING_TRY(chk(b, op, "w", w, err));
    ING_TRY(chk_dst(b, op, "dst", dst, err));
    ING_TRY(chk_kind(op, "x", x, ING_K_FLOAT, err));
    ING_TRY(chk_same_dtype(op, "w", w, x->dtype, err));
    ING_TRY(chk_same_dtype(op, "dst", dst, x->dtype, err));
    uint32_t nd = p->ndim;
    if (nd < 1 || nd > 3) return OPERR(INGOT_E_MISUSE, "conv: ndim must be 1, 2 or 3");
    if (x->rank != nd + 2 || w->rank != nd + 2)
        return OPERR(INGOT_E_BAD_NDIMS, "conv: operands 'x' and 'w' must have rank %u", nd + 2);
    int64_t groups = p->groups ? p->groups : 1;
    int64_t cin = x->shape[1], cout = w->shape[0];
    if (cin % groups || cout % groups || w->shape[1] != cin / groups)
        return OPERR(INGOT_E_BAD_SHAPE, "conv: operand 'w' [%lld, %lld, ...] does not match %lld "
                     "input channels in %lld groups", (long long)cout, (long long)w->shape[1],
                     (long long)cin, (long long)groups);
    ING_TRY(chk_vec(b, op, "bias", bias, cout, x->dtype, err));
    int64_t shape[INGOT_MAX_RANK] = {x->shape[0], cout};
    for (uint32_t i = 0; i < nd; i++) {
        int64_t s = p->stride[i] ? p->stride[i] : 1, d = p->dilation[i] ? p->dilation[i] : 1;
        int64_t span = d * (w->shape[2 + i] - 1) + 1, in = x->shape[2 + i] + 2 * (int64_t)p->padding[i];
        if (w->shape[2 + i] < 1 || span > in)
            return OPERR(INGOT_E_BAD_SHAPE, "conv: kernel axis %u (span %lld) exceeds the padded "
                         "input (%lld)", i, (long long)span, (long long)in);
        shape[2 + i] = (in - span) / s + 1;
    }
    ING_TRY(chk_shape_eq(op, "dst", dst, nd + 2, shape, err));
    ING_TRY(chk_alias(op, dst, "x", x, false, err));
    ING_TRY(chk_alias(op, dst, "w", w, false, err));
    ING_TRY(chk_alias(op, dst, "bias", bias, false, err));
    if (ISEMPTY(dst)) return INGOT_OK;
    const ingot_module_ops *mo = b->ops->module_ops;
    if (mo && mo->conv) return mo->conv(b, dst, x, w, bias, p, err);
    return unsupported(b, op, "module", x->dtype, err);
}

INGOT_API ingot_status ingot_op_pool(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *x,
                                     const ingot_pool_params *p, ingot_error *err)
{
    const char *op = "pool";
    if (!b || !p) return OPERR(INGOT_E_MISUSE, "pool: backend or params is NULL");
    ING_TRY(chk(b, op, "x", x, err));
    ING_TRY(chk_dst(b, op, "dst", dst, err));
    ING_TRY(chk_kind(op, "x", x, ING_K_FLOAT, err));
    ING_TRY(chk_same_dtype(op, "dst", dst, x->dtype, err));
    uint32_t nd = p->ndim;
    if (nd < 1 || nd > 3 || (p->kind != INGOT_POOL_MAX && p->kind != INGOT_POOL_AVG))
        return OPERR(INGOT_E_MISUSE, "pool: ndim must be 1..3 and kind MAX or AVG");
    if (x->rank != nd + 2) return OPERR(INGOT_E_BAD_NDIMS, "pool: operand 'x' must have rank %u",
                                        nd + 2);
    int64_t shape[INGOT_MAX_RANK] = {x->shape[0], x->shape[1]};
    for (uint32_t i = 0; i < nd; i++) {
        int64_t k = p->kernel[i], s = p->stride[i] ? p->stride[i] : k;
        int64_t d = p->kind == INGOT_POOL_MAX && p->dilation[i] ? p->dilation[i] : 1;
        int64_t span = d * (k - 1) + 1, in = x->shape[2 + i] + 2 * (int64_t)p->padding[i];
        if (k < 1 || 2 * (int64_t)p->padding[i] > k || span > in)
            return OPERR(INGOT_E_BAD_SHAPE, "pool: kernel axis %u invalid (k=%lld, padding %u, "
                         "input %lld)", i, (long long)k, p->padding[i],
                         (long long)x->shape[2 + i]);
        shape[2 + i] = (in - span) / s + 1;
    }
    ING_TRY(chk_shape_eq(op, "dst", dst, nd + 2, shape, err));
    ING_TRY(chk_alias(op, dst, "x", x, false, err));
    if (ISEMPTY(dst)) return INGOT_OK;
    const ingot_module_ops *mo = b->ops->module_ops;
    if (mo && mo->pool) return mo->pool(b, dst, x, p, err);
    return unsupported(b, op, "module", x->dtype, err);
}

INGOT_API ingot_status ingot_op_embedding(ingot_backend *b, ingot_tensor *dst,
                                          const ingot_tensor *table, const ingot_tensor *ids,
                                          ingot_error *err)
{
    const char *op = "embedding";
    if (!b) return OPERR(INGOT_E_MISUSE, "embedding: backend is NULL");
    ING_TRY(chk(b, op, "table", table, err));
    ING_TRY(chk(b, op, "ids", ids, err));
    ING_TRY(chk_dst(b, op, "dst", dst, err));
    ING_TRY(chk_index(op, "ids", ids, err));
    if (table->rank != 2 || ids->rank + 1 > INGOT_MAX_RANK)
        return OPERR(INGOT_E_BAD_NDIMS, "embedding: 'table' must be [vocab, dim] and 'ids' of rank"
                     " < %d", INGOT_MAX_RANK);
    int64_t shape[INGOT_MAX_RANK];
    for (uint32_t i = 0; i < ids->rank; i++) shape[i] = ids->shape[i];
    shape[ids->rank] = table->shape[1];
    ING_TRY(chk_shape_eq(op, "dst", dst, ids->rank + 1, shape, err));
    ING_TRY(chk_same_dtype(op, "dst", dst, table->dtype, err));
    if (ISEMPTY(dst)) return INGOT_OK;
    /* Fallback: index_select over the flattened ids (ids must be contiguous to flatten). */
    ingot_tensor flat_ids = *ids, flat_dst = *dst;
    int64_t n = ing_nelem(ids), two[2] = {n, table->shape[1]};
    if (!ingot_tensor_is_contiguous(ids) || !ingot_tensor_is_contiguous(dst))
        return OPERR(INGOT_E_UNSUPPORTED, "embedding: 'ids' and 'dst' must be contiguous");
    ING_TRY(ingot_tensor_reshape(&flat_ids, ids, 1, &n, err));
    ING_TRY(ingot_tensor_reshape(&flat_dst, dst, 2, two, err));
    return ingot_op_index_select(b, &flat_dst, table, 0, &flat_ids, err);
}

static ingot_status norm_common(ingot_backend *b, const char *op, ingot_tensor *dst,
                                const ingot_tensor *x, ingot_error *err)
{
    ING_TRY(chk(b, op, "x", x, err));
    ING_TRY(chk_dst(b, op, "dst", dst, err));
    ING_TRY(chk_kind(op, "x", x, ING_K_FLOAT, err));
    ING_TRY(chk_same_dtype(op, "dst", dst, x->dtype, err));
    if (x->rank < 1) return OPERR(INGOT_E_BAD_NDIMS, "%s: operand 'x' needs rank >= 1", op);
    ING_TRY(chk_shape_eq(op, "dst", dst, x->rank, x->shape, err));
    return chk_alias(op, dst, "x", x, false, err);
}

INGOT_API ingot_status ingot_op_layer_norm(ingot_backend *b, ingot_tensor *dst,
                                           const ingot_tensor *x, const ingot_tensor *w,
                                           const ingot_tensor *bias, double eps, ingot_error *err)
{
    const char *op = "layer_norm";
    if (!b) return OPERR(INGOT_E_MISUSE, "layer_norm: backend is NULL");
    ING_TRY(norm_common(b, op, dst, x, err));
    ING_TRY(chk_vec(b, op, "w", w, x->shape[x->rank - 1], x->dtype, err));
    ING_TRY(chk_vec(b, op, "bias", bias, x->shape[x->rank - 1], x->dtype, err));
    if (ISEMPTY(dst)) return INGOT_OK;
    const ingot_module_ops *mo = b->ops->module_ops;
    if (mo && mo->layer_norm) return mo->layer_norm(b, dst, x, w, bias, eps, err);
    return unsupported(b, op, "module", x->dtype, err);
}

INGOT_API ingot_status ingot_op_rms_norm(ingot_backend *b, ingot_tensor *dst,
                                         const ingot_tensor *x, const ingot_tensor *w, double eps,
                                         ingot_error *err)
{
    const char *op = "rms_norm";
    if (!b) return OPERR(INGOT_E_MISUSE, "rms_norm: backend is NULL");
    ING_TRY(norm_common(b, op, dst, x, err));
    ING_TRY(chk_vec(b, op, "w", w, x->shape[x->rank - 1], x->dtype, err));
    if (ISEMPTY(dst)) return INGOT_OK;
    const ingot_module_ops *mo = b->ops->module_ops;
    if (mo && mo->rms_norm) return mo->rms_norm(b, dst, x, w, eps, err);
    return unsupported(b, op, "module", x->dtype, err);
}

INGOT_API ingot_status ingot_op_batch_norm(ingot_backend *b, ingot_tensor *dst,
                                           const ingot_tensor *x, const ingot_tensor *mean,
                                           const ingot_tensor *var, const ingot_tensor *w,
                                           const ingot_tensor *bias, double eps, ingot_error *err)
{
    const char *op = "batch_norm";
    if (!b) return OPERR(INGOT_E_MISUSE, "batch_norm: backend is NULL");
    ING_TRY(norm_common(b, op, dst, x, err));
    if (x->rank < 2) return OPERR(INGOT_E_BAD_NDIMS, "batch_norm: operand 'x' must be [N, C, ...]");
    if (!mean || !var) return OPERR(INGOT_E_MISUSE, "batch_norm: 'mean' and 'var' are required");
    int64_t c = x->shape[1];
    ING_TRY(chk_vec(b, op, "mean", mean, c, x->dtype, err));
    ING_TRY(chk_vec(b, op, "var", var, c, x->dtype, err));
    ING_TRY(chk_vec(b, op, "w", w, c, x->dtype, err));
    ING_TRY(chk_vec(b, op, "bias", bias, c, x->dtype, err));
    if (ISEMPTY(dst)) return INGOT_OK;
    const ingot_module_ops *mo = b->ops->module_ops;
    if (mo && mo->batch_norm) return mo->batch_norm(b, dst, x, mean, var, w, bias, eps, err);
    return unsupported(b, op, "module", x->dtype, err);
}

INGOT_API ingot_status ingot_op_rope(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *x,
                                     const ingot_tensor *pos, double theta, ingot_rope_mode mode,
                                     ingot_error *err)
{
    const char *op = "rope";
    if (!b) return OPERR(INGOT_E_MISUSE, "rope: backend is NULL");
    ING_TRY(norm_common(b, op, dst, x, err));
    ING_TRY(chk(b, op, "pos", pos, err));
    ING_TRY(chk_index(op, "pos", pos, err));
    if (mode != INGOT_ROPE_INTERLEAVED && mode != INGOT_ROPE_HALF)
        return OPERR(INGOT_E_MISUSE, "rope: unknown mode %d", (int)mode);
    if (x->rank < 2 || x->shape[x->rank - 1] % 2)
        return OPERR(INGOT_E_BAD_SHAPE, "rope: operand 'x' must be [..., seq, d] with d even");
    int64_t seq = x->shape[x->rank - 2];
    ING_TRY(chk_shape_eq(op, "pos", pos, 1, &seq, err));
    if (ISEMPTY(dst)) return INGOT_OK;
    const ingot_module_ops *mo = b->ops->module_ops;
    if (mo && mo->rope) return mo->rope(b, dst, x, pos, theta, mode, err);
    return unsupported(b, op, "module", x->dtype, err);
}

INGOT_API ingot_status ingot_op_attention(ingot_backend *b, ingot_tensor *dst,
                                          const ingot_tensor *q, const ingot_tensor *k,
                                          const ingot_tensor *v, const ingot_attn_params *p,
                                          ingot_error *err)
{
    const char *op = "attention";
    if (!b) return OPERR(INGOT_E_MISUSE, "attention: backend is NULL");
    ING_TRY(chk(b, op, "q", q, err));
    ING_TRY(chk(b, op, "k", k, err));
    ING_TRY(chk(b, op, "v", v, err));
    ING_TRY(chk_dst(b, op, "dst", dst, err));
    ING_TRY(chk_kind(op, "q", q, ING_K_FLOAT, err));
    ING_TRY(chk_same_dtype(op, "k", k, q->dtype, err));
    ING_TRY(chk_same_dtype(op, "v", v, q->dtype, err));
    ING_TRY(chk_same_dtype(op, "dst", dst, q->dtype, err));
    if (q->rank != 4 || k->rank != 4 || v->rank != 4)
        return OPERR(INGOT_E_BAD_NDIMS, "attention: q, k, v must be [B, H, L, D]");
    int64_t B = q->shape[0], H = q->shape[1], Lq = q->shape[2], D = q->shape[3];
    int64_t Hk = k->shape[1], Lk = k->shape[2];
    if (k->shape[0] != B || k->shape[3] != D)
        return OPERR(INGOT_E_BAD_SHAPE, "attention: operand 'k' must be [%lld, Hkv, Lk, %lld]",
                     (long long)B, (long long)D);
    if (Hk == 0 || H % Hk)
        return OPERR(INGOT_E_BAD_SHAPE, "attention: %lld query heads are not a multiple of %lld "
                     "kv heads (operand 'k')", (long long)H, (long long)Hk);
    if (v->shape[0] != B || v->shape[1] != Hk || v->shape[2] != Lk)
        return OPERR(INGOT_E_BAD_SHAPE, "attention: operand 'v' must be [%lld, %lld, %lld, Dv]",
                     (long long)B, (long long)Hk, (long long)Lk);
    if (p && p->causal && Lq > Lk)
        return OPERR(INGOT_E_BAD_SHAPE, "attention: causal with more queries (%lld) than keys "
                     "(%lld)", (long long)Lq, (long long)Lk);
    int64_t shape[4] = {B, H, Lq, v->shape[3]};
    ING_TRY(chk_shape_eq(op, "dst", dst, 4, shape, err));
    ING_TRY(chk_alias(op, dst, "q", q, false, err));
    ING_TRY(chk_alias(op, dst, "k", k, false, err));
    ING_TRY(chk_alias(op, dst, "v", v, false, err));
    if (ISEMPTY(dst)) return INGOT_OK;
    ingot_attn_params dp = {0};
    if (p) dp = *p;
    if (dp.scale == 0) dp.scale = D ? 1.0 / sqrt((double)D) : 1.0;
    const ingot_module_ops *mo = b->ops->module_ops;
    if (mo && mo->attention) return mo->attention(b, dst, q, k, v, &dp, err);
    return unsupported(b, op, "module", q->dtype, err);
}

/* ---- quantized ---- */

/* Quantized operands: `quantize` writes Q8_0 / Q4_0 / I8; `dequantize` also reads the K-quants;
 * `qlinear` also takes F16 / BF16 weights (widened exactly). */
enum { QW_QUANTIZE, QW_DEQUANTIZE, QW_LINEAR };

static ingot_status chk_qweight(ingot_backend *b, const char *op, const ingot_tensor *w,
                                const ingot_tensor *scale, int use, ingot_error *err)
{
    ING_TRY(chk(b, op, "w", w, err));
    ingot_dtype dt = w->dtype;
    bool basic = dt == INGOT_DTYPE_Q8_0 || dt == INGOT_DTYPE_Q4_0 || dt == INGOT_DTYPE_I8;
    bool kq = dt == INGOT_DTYPE_Q4_K || dt == INGOT_DTYPE_Q5_K || dt == INGOT_DTYPE_Q6_K;
    bool half = dt == INGOT_DTYPE_F16 || dt == INGOT_DTYPE_BF16;
    if (use == QW_QUANTIZE && !basic)
        return OPERR(INGOT_E_BAD_TYPE, "%s: operand 'w' has dtype %s, expected Q8_0, Q4_0 or I8",
                     op, dtname(dt));
    if (use == QW_DEQUANTIZE && !basic && !kq)
        return OPERR(INGOT_E_BAD_TYPE, "%s: operand 'w' has dtype %s, expected Q8_0, Q4_0, "
                     "Q4_K, Q5_K, Q6_K or I8", op, dtname(dt));
    if (use == QW_LINEAR && !basic && !kq && !half)
        return OPERR(INGOT_E_BAD_TYPE, "%s: operand 'w' has dtype %s, expected Q8_0, Q4_0, "
                     "Q4_K, Q5_K, Q6_K, I8, F16 or BF16", op, dtname(dt));
    if (w->rank != 2) return OPERR(INGOT_E_BAD_NDIMS, "%s: operand 'w' must be [rows, cols]", op);
    if (w->dtype == INGOT_DTYPE_I8) {
        if (!scale)
            return OPERR(INGOT_E_MISUSE, "%s: per-row int8 needs operand 'scale' [rows]", op);
        ING_TRY(chk_vec(b, op, "scale", scale, w->shape[0], INGOT_DTYPE_F32, err));
        if (!ingot_tensor_is_contiguous(w))
            return OPERR(INGOT_E_UNSUPPORTED, "%s: operand 'w' must be contiguous", op);
    } else if (scale) {
        return OPERR(INGOT_E_MISUSE, "%s: operand 'scale' must be NULL for %s", op,
                     dtname(w->dtype));
    }
    return INGOT_OK;
}

INGOT_API ingot_status ingot_op_quantize(ingot_backend *b, ingot_tensor *dst, ingot_tensor *scale,
                                         const ingot_tensor *src, ingot_error *err)
{
    const char *op = "quantize";
    if (!b) return OPERR(INGOT_E_MISUSE, "quantize: backend is NULL");
    ING_TRY(chk(b, op, "src", src, err));
    ING_TRY(chk_same_dtype(op, "src", src, INGOT_DTYPE_F32, err));
    ING_TRY(chk_dst(b, op, "dst", dst, err));
    ING_TRY(chk_qweight(b, op, dst, scale, QW_QUANTIZE, err));
    if (scale) ING_TRY(chk_dst(b, op, "scale", scale, err));
    ING_TRY(chk_shape_eq(op, "src", src, dst->rank, dst->shape, err));
    ING_TRY(chk_alias(op, dst, "src", src, false, err));
    if (scale) {
        ING_TRY(chk_alias(op, scale, "src", src, false, err));
        ING_TRY(chk_alias(op, scale, "dst", dst, false, err));
    }
    if (ISEMPTY(dst)) return INGOT_OK;
    const ingot_quant_ops *qo = b->ops->quant_ops;
    if (qo && qo->quantize) return qo->quantize(b, dst, scale, src, err);
    return unsupported(b, op, "quantized", dst->dtype, err);
}

INGOT_API ingot_status ingot_op_dequantize(ingot_backend *b, ingot_tensor *dst,
                                           const ingot_tensor *src, const ingot_tensor *scale,
                                           ingot_error *err)
{
    const char *op = "dequantize";
    if (!b) return OPERR(INGOT_E_MISUSE, "dequantize: backend is NULL");
    ING_TRY(chk_qweight(b, op, src, scale, QW_DEQUANTIZE, err));
    ING_TRY(chk_dst(b, op, "dst", dst, err));
    ING_TRY(chk_same_dtype(op, "dst", dst, INGOT_DTYPE_F32, err));
    ING_TRY(chk_shape_eq(op, "dst", dst, src->rank, src->shape, err));
    ING_TRY(chk_alias(op, dst, "src", src, false, err));
    ING_TRY(chk_alias(op, dst, "scale", scale, false, err));
    if (ISEMPTY(dst)) return INGOT_OK;
    const ingot_quant_ops *qo = b->ops->quant_ops;
    if (qo && qo->dequantize) return qo->dequantize(b, dst, src, scale, err);
    return unsupported(b, op, "quantized", src->dtype, err);
}

INGOT_API ingot_status ingot_op_qlinear(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *x,
                                        const ingot_tensor *w, const ingot_tensor *scale,
                                        const ingot_tensor *bias, ingot_error *err)
{
    const char *op = "qlinear";
    if (!b) return OPERR(INGOT_E_MISUSE, "qlinear: backend is NULL");
    ING_TRY(chk_qweight(b, op, w, scale, QW_LINEAR, err));
    ING_TRY(chk(b, op, "x", x, err));
    ING_TRY(chk_dst(b, op, "dst", dst, err));
    ING_TRY(chk_same_dtype(op, "x", x, INGOT_DTYPE_F32, err));
    ING_TRY(chk_same_dtype(op, "dst", dst, INGOT_DTYPE_F32, err));
    if (x->rank < 1 || x->shape[x->rank - 1] != w->shape[1])
        return OPERR(INGOT_E_BAD_SHAPE, "qlinear: operand 'x' must be [..., %lld] for 'w' [out, "
                     "in] = [%lld, %lld]", (long long)w->shape[1], (long long)w->shape[0],
                     (long long)w->shape[1]);
    ING_TRY(chk_vec(b, op, "bias", bias, w->shape[0], INGOT_DTYPE_F32, err));
    int64_t shape[INGOT_MAX_RANK];
    for (uint32_t i = 0; i < x->rank; i++) shape[i] = x->shape[i];
    shape[x->rank - 1] = w->shape[0];
    ING_TRY(chk_shape_eq(op, "dst", dst, x->rank, shape, err));
    ING_TRY(chk_alias(op, dst, "x", x, false, err));
    ING_TRY(chk_alias(op, dst, "w", w, false, err));
    ING_TRY(chk_alias(op, dst, "bias", bias, false, err));
    ING_TRY(chk_alias(op, dst, "scale", scale, false, err));
    if (ISEMPTY(dst)) return INGOT_OK;
    const ingot_quant_ops *qo = b->ops->quant_ops;
    if (qo && qo->linear) return qo->linear(b, dst, x, w, scale, bias, err);
    return unsupported(b, op, "quantized", w->dtype, err);
}
