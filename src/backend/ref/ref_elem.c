/*
 * ref_elem.c - "ref" element-wise ops: unary, binary (+scalar), compare, clamp, where, mask_fill,
 * copy, cast, fill, arange and the activations. Floats are computed in double and rounded once
 * on store; ints in exact int64 with wrap-around; any strided or broadcast view is walked with
 * the N-d odometer of backend_internal.h.
 */
#include "ref.h"

static double unary_f(ingot_unary_op op, double x)
{
    switch (op) {
    case INGOT_UNARY_NEG: return -x;
    case INGOT_UNARY_ABS: return fabs(x);
    case INGOT_UNARY_EXP: return exp(x);
    case INGOT_UNARY_LOG: return log(x);
    case INGOT_UNARY_SQRT: return sqrt(x);
    case INGOT_UNARY_RSQRT: return 1.0 / sqrt(x);
    case INGOT_UNARY_SIN: return sin(x);
    case INGOT_UNARY_COS: return cos(x);
    case INGOT_UNARY_TANH: return tanh(x);
    case INGOT_UNARY_ERF: return erf(x);
    case INGOT_UNARY_RECIP: return 1.0 / x;
    case INGOT_UNARY_SQUARE: return x * x;
    case INGOT_UNARY_FLOOR: return floor(x);
    case INGOT_UNARY_CEIL: return ceil(x);
    case INGOT_UNARY_ROUND: return nearbyint(x);
    case INGOT_UNARY_SIGN: return x > 0 ? 1.0 : x < 0 ? -1.0 : x;
    case INGOT_UNARY_LOG1P: return log1p(x);
    case INGOT_UNARY_EXPM1: return expm1(x);
    default: return x != 0 ? 0.0 : 1.0; /* NOT */
    }
}

static int64_t unary_i(ingot_unary_op op, int64_t x)
{
    switch (op) {
    case INGOT_UNARY_NEG: return (int64_t)(0 - (uint64_t)x);
    case INGOT_UNARY_ABS: return x < 0 ? (int64_t)(0 - (uint64_t)x) : x;
    case INGOT_UNARY_SIGN: return (x > 0) - (x < 0);
    case INGOT_UNARY_SQUARE: return (int64_t)((uint64_t)x * (uint64_t)x);
    default: return !x; /* NOT */
    }
}

ingot_status ingot__ref_unary(ingot_backend *b, ingot_unary_op op, ingot_tensor *dst,
                              const ingot_tensor *a, ingot_error *err)
{
    (void)b;
    (void)err;
    const ingot_tensor *ops[2] = {dst, a};
    ing_it it;
    ing_it_init(&it, dst->rank, dst->shape, 2, ops);
    bool flt = ing_kind(a->dtype) == ING_K_FLOAT;
    do {
        if (flt) ing_st(dst->dtype, it.p[0], unary_f(op, ing_ld(a->dtype, it.p[1])));
        else ing_sti(dst->dtype, it.p[0], unary_i(op, ing_ldi(a->dtype, it.p[1])));
    } while (ing_it_next(&it));
    return INGOT_OK;
}

static double binary_f(ingot_binary_op op, double x, double y)
{
    switch (op) {
    case INGOT_BINARY_ADD: return x + y;
    case INGOT_BINARY_SUB: return x - y;
    case INGOT_BINARY_MUL: return x * y;
    case INGOT_BINARY_DIV: return x / y;
    case INGOT_BINARY_POW: return pow(x, y);
    case INGOT_BINARY_MAX: return x != x || y != y ? NAN : x > y ? x : y;
    case INGOT_BINARY_MIN: return x != x || y != y ? NAN : x < y ? x : y;
    case INGOT_BINARY_REM: {
        double r = fmod(x, y);
        if (r != 0 && ((r < 0) != (y < 0))) r += y;
        return r;
    }
    default: return 0;
    }
}

static int64_t binary_i(ingot_binary_op op, int64_t x, int64_t y)
{
    uint64_t ux = (uint64_t)x, uy = (uint64_t)y;
    switch (op) {
    case INGOT_BINARY_ADD: return (int64_t)(ux + uy);
    case INGOT_BINARY_SUB: return (int64_t)(ux - uy);
    case INGOT_BINARY_MUL: return (int64_t)(ux * uy);
    case INGOT_BINARY_DIV:
        if (y == 0) return 0;
        if (y == -1) return (int64_t)(0 - ux);
        return x / y;
    case INGOT_BINARY_REM: {
        if (y == 0 || y == -1) return 0;
        int64_t r = x % y;
        if (r != 0 && ((r < 0) != (y < 0))) r += y;
        return r;
    }
    case INGOT_BINARY_MAX: return x > y ? x : y;
    case INGOT_BINARY_MIN: return x < y ? x : y;
    case INGOT_BINARY_AND: return x & y;
    case INGOT_BINARY_OR: return x | y;
    case INGOT_BINARY_XOR: return x ^ y;
    default: return 0;
    }
}

ingot_status ingot__ref_binary(ingot_backend *b, ingot_binary_op op, ingot_tensor *dst,
                               const ingot_tensor *a, const ingot_tensor *c, ingot_error *err)
{
    (void)b;
    (void)err;
    const ingot_tensor *ops[3] = {dst, a, c};
    ing_it it;
    ing_it_init(&it, dst->rank, dst->shape, 3, ops);
    bool flt = ing_kind(a->dtype) == ING_K_FLOAT;
    do {
        if (flt)
            ing_st(dst->dtype, it.p[0],
                   binary_f(op, ing_ld(a->dtype, it.p[1]), ing_ld(c->dtype, it.p[2])));
        else
            ing_sti(dst->dtype, it.p[0],
                    binary_i(op, ing_ldi(a->dtype, it.p[1]), ing_ldi(c->dtype, it.p[2])));
    } while (ing_it_next(&it));
    return INGOT_OK;
}

ingot_status ingot__ref_binary_scalar(ingot_backend *b, ingot_binary_op op, ingot_tensor *dst,
                                      const ingot_tensor *a, double s, ingot_error *err)
{
    (void)b;
    (void)err;
    const ingot_tensor *ops[2] = {dst, a};
    ing_it it;
    ing_it_init(&it, dst->rank, dst->shape, 2, ops);
    bool flt = ing_kind(a->dtype) == ING_K_FLOAT;
    int64_t si = ing_d2i(s);
    do {
        if (flt) ing_st(dst->dtype, it.p[0], binary_f(op, ing_ld(a->dtype, it.p[1]), s));
        else ing_sti(dst->dtype, it.p[0], binary_i(op, ing_ldi(a->dtype, it.p[1]), si));
    } while (ing_it_next(&it));
    return INGOT_OK;
}

ingot_status ingot__ref_compare(ingot_backend *b, ingot_cmp_op op, ingot_tensor *dst,
                                const ingot_tensor *a, const ingot_tensor *c, ingot_error *err)
{
    (void)b;
    (void)err;
    const ingot_tensor *ops[3] = {dst, a, c};
    ing_it it;
    ing_it_init(&it, dst->rank, dst->shape, 3, ops);
    bool flt = ing_kind(a->dtype) == ING_K_FLOAT;
    do {
        bool r;
        if (flt) {
            double x = ing_ld(a->dtype, it.p[1]), y = ing_ld(c->dtype, it.p[2]);
            r = op == INGOT_CMP_EQ ? x == y : op == INGOT_CMP_NE ? x != y
              : op == INGOT_CMP_LT ? x < y  : op == INGOT_CMP_LE ? x <= y
              : op == INGOT_CMP_GT ? x > y  : x >= y;
        } else {
            int64_t x = ing_ldi(a->dtype, it.p[1]), y = ing_ldi(c->dtype, it.p[2]);
            r = op == INGOT_CMP_EQ ? x == y : op == INGOT_CMP_NE ? x != y
              : op == INGOT_CMP_LT ? x < y  : op == INGOT_CMP_LE ? x <= y
              : op == INGOT_CMP_GT ? x > y  : x >= y;
        }
        *it.p[0] = r;
    } while (ing_it_next(&it));
    return INGOT_OK;
}

ingot_status ingot__ref_clamp(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *a, double lo,
                              double hi, ingot_error *err)
{
    (void)b;
    (void)err;
    const ingot_tensor *ops[2] = {dst, a};
    ing_it it;
    ing_it_init(&it, dst->rank, dst->shape, 2, ops);
    bool flt = ing_kind(a->dtype) == ING_K_FLOAT;
    do {
        if (flt) {
            double x = ing_ld(a->dtype, it.p[1]);
            if (x < lo) x = lo;
            if (x > hi) x = hi;
            ing_st(dst->dtype, it.p[0], x);
        } else {
            int64_t x = ing_ldi(a->dtype, it.p[1]);
            if ((double)x < lo) x = ing_d2i(ceil(lo));
            if ((double)x > hi) x = ing_d2i(floor(hi));
            ing_sti(dst->dtype, it.p[0], x);
        }
    } while (ing_it_next(&it));
    return INGOT_OK;
}

/* Copies one element of dtype dt (same dtype both sides). */
static inline void copy_elem(uint8_t *d, const uint8_t *s, size_t es)
{
    switch (es) {
    case 1: *d = *s; break;
    case 2: memcpy(d, s, 2); break;
    case 4: memcpy(d, s, 4); break;
    default: memcpy(d, s, 8); break;
    }
}

ingot_status ingot__ref_where(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *cond,
                              const ingot_tensor *a, const ingot_tensor *c, ingot_error *err)
{
    (void)b;
    (void)err;
    const ingot_tensor *ops[4] = {dst, cond, a, c};
    ing_it it;
    ing_it_init(&it, dst->rank, dst->shape, 4, ops);
    size_t es = ing_esize(dst->dtype);
    do {
        copy_elem(it.p[0], *it.p[1] ? it.p[2] : it.p[3], es);
    } while (ing_it_next(&it));
    return INGOT_OK;
}

ingot_status ingot__ref_mask_fill(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *a,
                                  const ingot_tensor *mask, double v, ingot_error *err)
{
    (void)b;
    (void)err;
    const ingot_tensor *ops[3] = {dst, a, mask};
    ing_it it;
    ing_it_init(&it, dst->rank, dst->shape, 3, ops);
    size_t es = ing_esize(dst->dtype);
    uint8_t val[8];
    ing_st(dst->dtype, val, v);
    do {
        copy_elem(it.p[0], *it.p[2] ? val : it.p[1], es);
    } while (ing_it_next(&it));
    return INGOT_OK;
}

ingot_status ingot__ref_copy(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *src,
                             ingot_error *err)
{
    (void)b;
    (void)err;
    size_t es = ing_esize(dst->dtype);
    if (ingot_tensor_is_contiguous(dst) && ingot_tensor_is_contiguous(src)) {
        memmove(ing_ptr(dst), ing_ptr(src), (size_t)ing_nelem(dst) * es);
        return INGOT_OK;
    }
    const ingot_tensor *ops[2] = {dst, src};
    ing_it it;
    ing_it_init(&it, dst->rank, dst->shape, 2, ops);
    do {
        copy_elem(it.p[0], it.p[1], es);
    } while (ing_it_next(&it));
    return INGOT_OK;
}

ingot_status ingot__ref_cast(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *src,
                             ingot_error *err)
{
    (void)b;
    (void)err;
    const ingot_tensor *ops[2] = {dst, src};
    ing_it it;
    ing_it_init(&it, dst->rank, dst->shape, 2, ops);
    bool exact_int = ing_kind(dst->dtype) != ING_K_FLOAT && ing_kind(src->dtype) != ING_K_FLOAT;
    do {
        if (exact_int) {
            ing_sti(dst->dtype, it.p[0], ing_ldi(src->dtype, it.p[1]));
        } else if (dst->dtype == INGOT_DTYPE_F64 && src->dtype == INGOT_DTYPE_I64) {
            ing_st(dst->dtype, it.p[0], (double)ing_ldi(src->dtype, it.p[1]));
        } else if (src->dtype == INGOT_DTYPE_I64 && ing_kind(dst->dtype) == ING_K_FLOAT) {
            /* int64 -> f32/f16/bf16 in one rounding step through float (as torch). */
            ing_st(dst->dtype, it.p[0], (double)(float)ing_ldi(src->dtype, it.p[1]));
        } else {
            ing_st(dst->dtype, it.p[0], ing_ld(src->dtype, it.p[1]));
        }
    } while (ing_it_next(&it));
    return INGOT_OK;
}

ingot_status ingot__ref_fill(ingot_backend *b, ingot_tensor *dst, double v, ingot_error *err)
{
    (void)b;
    (void)err;
    uint8_t val[8];
    size_t es = ing_esize(dst->dtype);
    ing_st(dst->dtype, val, v);
    const ingot_tensor *ops[1] = {dst};
    ing_it it;
    ing_it_init(&it, dst->rank, dst->shape, 1, ops);
    do {
        copy_elem(it.p[0], val, es);
    } while (ing_it_next(&it));
    return INGOT_OK;
}

ingot_status ingot__ref_arange(ingot_backend *b, ingot_tensor *dst, double start, double step,
                               ingot_error *err)
{
    (void)b;
    (void)err;
    const ingot_tensor *ops[1] = {dst};
    ing_it it;
    ing_it_init(&it, dst->rank, dst->shape, 1, ops);
    do {
        ing_st(dst->dtype, it.p[0], start + step * (double)it.idx[dst->rank - 1]);
    } while (ing_it_next(&it));
    return INGOT_OK;
}

double ingot__ref_act1(ingot_act_op op, double x, double param)
{
    switch (op) {
    case INGOT_ACT_RELU: return x < 0 ? 0.0 : x;
    case INGOT_ACT_GELU_ERF: return 0.5 * x * (1.0 + erf(x * 0.70710678118654752440));
    case INGOT_ACT_GELU_TANH:
        return 0.5 * x * (1.0 + tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x)));
    case INGOT_ACT_SILU: return x / (1.0 + exp(-x));
    case INGOT_ACT_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case INGOT_ACT_TANH: return tanh(x);
    case INGOT_ACT_SOFTPLUS: {
        double beta = param != 0 ? param : 1.0;
        return beta * x > 20.0 ? x : log1p(exp(beta * x)) / beta;
    }
    case INGOT_ACT_LEAKY_RELU: return x < 0 ? (param != 0 ? param : 0.01) * x : x;
    case INGOT_ACT_ELU: return x > 0 ? x : (param != 0 ? param : 1.0) * expm1(x);
    case INGOT_ACT_RELU6: return x < 0 ? 0.0 : x > 6 ? 6.0 : x;
    case INGOT_ACT_HARDSIGMOID: return x <= -3 ? 0.0 : x >= 3 ? 1.0 : x / 6.0 + 0.5;
    default: return x;
    }
}

ingot_status ingot__ref_activation(ingot_backend *b, ingot_act_op op, ingot_tensor *dst,
                                   const ingot_tensor *a, double param, ingot_error *err)
{
    (void)b;
    (void)err;
    const ingot_tensor *ops[2] = {dst, a};
    ing_it it;
    ing_it_init(&it, dst->rank, dst->shape, 2, ops);
    do {
        ing_st(dst->dtype, it.p[0], ingot__ref_act1(op, ing_ld(a->dtype, it.p[1]), param));
    } while (ing_it_next(&it));
    return INGOT_OK;
}
