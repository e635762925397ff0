/*
 * ref_reduce.c - "ref" ops that walk an axis: batched matmul, reductions, cumsum, top-k, and the
 * indexing ops (gather, scatter_add, index_select). Sums are accumulated in double (floats) or
 * wrapping int64 (ints), in index order.
 */
#include "ref.h"

/* Copy of t reduced to its first `rank` axes (the batch part of a matmul operand). */
static ingot_tensor head_view(const ingot_tensor *t, uint32_t rank)
{
    ingot_tensor v = *t;
    v.rank = rank;
    return v;
}

ingot_status ingot__ref_matmul(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *a,
                               const ingot_tensor *c, ingot_error *err)
{
    (void)b;
    (void)err;
    uint32_t r = dst->rank;
    int64_t M = dst->shape[r - 2], N = dst->shape[r - 1], K = a->shape[a->rank - 1];
    int64_t es = (int64_t)ing_esize(a->dtype);
    int64_t as_m = a->strides[a->rank - 2] * es, as_k = a->strides[a->rank - 1] * es;
    int64_t cs_k = c->strides[c->rank - 2] * es, cs_n = c->strides[c->rank - 1] * es;
    int64_t ds_m = dst->strides[r - 2] * es, ds_n = dst->strides[r - 1] * es;
    ingot_tensor bd = head_view(dst, r - 2), ba = head_view(a, a->rank - 2),
                 bc = head_view(c, c->rank - 2);
    const ingot_tensor *ops[3] = {&bd, &ba, &bc};
    ing_it it;
    ing_it_init(&it, r - 2, dst->shape, 3, ops);
    do {
        for (int64_t m = 0; m < M; m++)
            for (int64_t n = 0; n < N; n++) {
                double acc = 0;
                const uint8_t *pa = it.p[1] + m * as_m, *pc = it.p[2] + n * cs_n;
                for (int64_t k = 0; k < K; k++)
                    acc += ing_ld(a->dtype, pa + k * as_k) * ing_ld(c->dtype, pc + k * cs_k);
                ing_st(dst->dtype, it.p[0] + m * ds_m + n * ds_n, acc);
            }
    } while (ing_it_next(&it));
    return INGOT_OK;
}

/* Walks every position of `a` with `axis` collapsed: calls fn(ctx, pa, pd) where pa points at
 * element 0 of the axis in a and pd at the matching element of dst (same shape as a with axis
 * size 1 for reductions, or full shape for cumsum). */
static void outer_walk(const ingot_tensor *dst, const ingot_tensor *a, uint32_t axis,
                       void (*fn)(void *, const uint8_t *, uint8_t *), void *ctx)
{
    ingot_tensor va = *a, vd = *dst;
    va.shape[axis] = 1;
    vd.shape[axis] = 1;
    const ingot_tensor *ops[2] = {&vd, &va};
    ing_it it;
    ing_it_init(&it, va.rank, va.shape, 2, ops);
    do {
        fn(ctx, it.p[1], it.p[0]);
    } while (ing_it_next(&it));
}

typedef struct red_ctx {
    ingot_reduce_op op;
    ingot_dtype adt, ddt;
    int64_t n, astride; /* bytes */
    int64_t dstride;    /* cumsum: dst byte stride along the axis */
} red_ctx;

static void red_row(void *vctx, const uint8_t *pa, uint8_t *pd)
{
    const red_ctx *c = vctx;
    int kind = ing_kind(c->adt);
    switch (c->op) {
    case INGOT_REDUCE_ARGMAX:
    case INGOT_REDUCE_ARGMIN: {
        bool mx = c->op == INGOT_REDUCE_ARGMAX;
        int64_t best = 0;
        double bv = ing_ld(c->adt, pa);
        int64_t bi = ing_ldi(c->adt, pa);
        for (int64_t i = 1; i < c->n && bv == bv; i++) {
            const uint8_t *p = pa + i * c->astride;
            if (kind == ING_K_INT) {
                int64_t v = ing_ldi(c->adt, p);
                if (mx ? v > bi : v < bi) bi = v, best = i;
            } else {
                double v = ing_ld(c->adt, p);
                if (v != v || (mx ? v > bv : v < bv)) bv = v, best = i;
            }
        }
        ing_sti(INGOT_DTYPE_I64, pd, best);
        return;
    }
    case INGOT_REDUCE_ANY:
    case INGOT_REDUCE_ALL: {
        bool any = false, all = true;
        for (int64_t i = 0; i < c->n; i++) {
            bool v = pa[i * c->astride] != 0;
            any |= v;
            all &= v;
        }
        *pd = c->op == INGOT_REDUCE_ANY ? any : all;
        return;
    }
    default: break;
    }
    if (kind == ING_K_INT) {
        int64_t acc = c->op == INGOT_REDUCE_PROD ? 1 : 0;
        if (c->op == INGOT_REDUCE_MAX || c->op == INGOT_REDUCE_MIN) acc = ing_ldi(c->adt, pa);
        for (int64_t i = 0; i < c->n; i++) {
            int64_t v = ing_ldi(c->adt, pa + i * c->astride);
            switch (c->op) {
            case INGOT_REDUCE_SUM: acc = (int64_t)((uint64_t)acc + (uint64_t)v); break;
            case INGOT_REDUCE_PROD: acc = (int64_t)((uint64_t)acc * (uint64_t)v); break;
            case INGOT_REDUCE_MAX: acc = v > acc ? v : acc; break;
            default: acc = v < acc ? v : acc; break;
            }
        }
        ing_sti(c->ddt, pd, acc);
        return;
    }
    double acc = c->op == INGOT_REDUCE_PROD ? 1.0 : 0.0;
    if (c->op == INGOT_REDUCE_MAX || c->op == INGOT_REDUCE_MIN) acc = ing_ld(c->adt, pa);
    for (int64_t i = 0; i < c->n; i++) {
        double v = ing_ld(c->adt, pa + i * c->astride);
        switch (c->op) {
        case INGOT_REDUCE_SUM:
        case INGOT_REDUCE_MEAN: acc += v; break;
        case INGOT_REDUCE_PROD: acc *= v; break;
        case INGOT_REDUCE_MAX: acc = (v != v || v > acc) ? v : acc; break;
        default: acc = (v != v || v < acc) ? v : acc; break;
        }
        if (acc != acc && (c->op == INGOT_REDUCE_MAX || c->op == INGOT_REDUCE_MIN)) break;
    }
    if (c->op == INGOT_REDUCE_MEAN) acc = c->n ? acc / (double)c->n : NAN;
    ing_st(c->ddt, pd, acc);
}

ingot_status ingot__ref_reduce(ingot_backend *b, ingot_reduce_op op, ingot_tensor *dst,
                               const ingot_tensor *a, uint32_t axis, ingot_error *err)
{
    (void)b;
    (void)err;
    red_ctx c = {op, a->dtype, dst->dtype, a->shape[axis],
                 a->strides[axis] * (int64_t)ing_esize(a->dtype), 0};
    outer_walk(dst, a, axis, red_row, &c);
    return INGOT_OK;
}

static void cumsum_row(void *vctx, const uint8_t *pa, uint8_t *pd)
{
    const red_ctx *c = vctx;
    if (ing_kind(c->adt) == ING_K_INT) {
        uint64_t acc = 0;
        for (int64_t i = 0; i < c->n; i++) {
            acc += (uint64_t)ing_ldi(c->adt, pa + i * c->astride);
            ing_sti(c->ddt, pd + i * c->dstride, (int64_t)acc);
        }
        return;
    }
    double acc = 0;
    for (int64_t i = 0; i < c->n; i++) {
        acc += ing_ld(c->adt, pa + i * c->astride);
        ing_st(c->ddt, pd + i * c->dstride, acc);
    }
}

ingot_status ingot__ref_cumsum(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *a,
                               uint32_t axis, ingot_error *err)
{
    (void)b;
    (void)err;
    red_ctx c = {INGOT_REDUCE_SUM, a->dtype, dst->dtype, a->shape[axis],
                 a->strides[axis] * (int64_t)ing_esize(a->dtype),
                 dst->strides[axis] * (int64_t)ing_esize(dst->dtype)};
    outer_walk(dst, a, axis, cumsum_row, &c);
    return INGOT_OK;
}

/* x ranks before y in top-k order: larger (or smaller) first, NaN counted as largest. */
static bool topk_before(double x, double y, bool largest)
{
    bool xn = x != x, yn = y != y;
    if (largest) return (xn && !yn) || (!xn && !yn && x > y);
    return (!xn && yn) || (!xn && !yn && x < y);
}

ingot_status ingot__ref_topk(ingot_backend *b, ingot_tensor *values, ingot_tensor *indices,
                             const ingot_tensor *a, uint32_t k, bool largest, ingot_error *err)
{
    (void)b;
    (void)err;
    uint32_t ax = a->rank - 1;
    int64_t n = a->shape[ax];
    int64_t as = a->strides[ax] * (int64_t)ing_esize(a->dtype);
    int64_t vs = values->strides[ax] * (int64_t)ing_esize(values->dtype);
    int64_t is = indices->strides[ax] * 8;
    ingot_tensor va = *a, vv = *values, vi = *indices;
    va.shape[ax] = vv.shape[ax] = vi.shape[ax] = 1;
    const ingot_tensor *ops[3] = {&va, &vv, &vi};
    ing_it it;
    ing_it_init(&it, a->rank, va.shape, 3, ops);
    do {
        /* Insertion into a sorted list of length m <= k kept in the outputs; a later element
         * equal to an earlier one goes after it, so ties keep the lower index first. */
        int64_t m = 0;
        for (int64_t i = 0; i < n; i++) {
            double x = ing_ld(a->dtype, it.p[0] + i * as);
            int64_t pos = m;
            while (pos > 0 && topk_before(x, ing_ld(values->dtype, it.p[1] + (pos - 1) * vs),
                                          largest))
                pos--;
            if (pos >= (int64_t)k) continue;
            int64_t last = m < (int64_t)k ? m : (int64_t)k - 1;
            for (int64_t j = last; j > pos; j--) {
                memcpy(it.p[1] + j * vs, it.p[1] + (j - 1) * vs, ing_esize(values->dtype));
                memcpy(it.p[2] + j * is, it.p[2] + (j - 1) * is, 8);
            }
            memcpy(it.p[1] + pos * vs, it.p[0] + i * as, ing_esize(values->dtype));
            ing_sti(INGOT_DTYPE_I64, it.p[2] + pos * is, i);
            if (m < (int64_t)k) m++;
        }
    } while (ing_it_next(&it));
    return INGOT_OK;
}

static bool norm_index(int64_t *i, int64_t n)
{
    if (*i < 0) *i += n;
    return *i >= 0 && *i < n;
}

ingot_status ingot__ref_gather(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *src,
                               uint32_t axis, const ingot_tensor *index, ingot_error *err)
{
    (void)b;
    const ingot_tensor *ops[2] = {dst, index};
    ing_it it;
    ing_it_init(&it, dst->rank, dst->shape, 2, ops);
    size_t es = ing_esize(dst->dtype);
    int64_t pos[INGOT_MAX_RANK];
    do {
        for (uint32_t d = 0; d < dst->rank; d++) pos[d] = it.idx[d];
        int64_t j = ing_ldi(index->dtype, it.p[1]);
        if (!norm_index(&j, src->shape[axis]))
            return ingot__err(err, INGOT_E_RANGE, INGOT_NO_OFFSET, "gather", 6,
                              "gather: index %lld out of range for axis %u of size %lld",
                              (long long)ing_ldi(index->dtype, it.p[1]), axis,
                              (long long)src->shape[axis]);
        pos[axis] = j;
        memcpy(it.p[0], ing_at(src, pos), es);
    } while (ing_it_next(&it));
    return INGOT_OK;
}

ingot_status ingot__ref_scatter_add(ingot_backend *b, ingot_tensor *dst, uint32_t axis,
                                    const ingot_tensor *index, const ingot_tensor *src,
                                    ingot_error *err)
{
    (void)b;
    ingot_tensor vs = *src;
    for (uint32_t d = 0; d < src->rank; d++) vs.shape[d] = index->shape[d];
    const ingot_tensor *ops[2] = {index, &vs};
    ing_it it;
    ing_it_init(&it, index->rank, index->shape, 2, ops);
    int64_t pos[INGOT_MAX_RANK];
    bool flt = ing_kind(dst->dtype) == ING_K_FLOAT;
    do {
        for (uint32_t d = 0; d < dst->rank; d++) pos[d] = it.idx[d];
        int64_t j = ing_ldi(index->dtype, it.p[0]);
        if (!norm_index(&j, dst->shape[axis]))
            return ingot__err(err, INGOT_E_RANGE, INGOT_NO_OFFSET, "scatter_add", 11,
                              "scatter_add: index %lld out of range for axis %u of size %lld",
                              (long long)ing_ldi(index->dtype, it.p[0]), axis,
                              (long long)dst->shape[axis]);
        pos[axis] = j;
        uint8_t *pd = ing_at(dst, pos);
        if (flt)
            ing_st(dst->dtype, pd, ing_ld(dst->dtype, pd) + ing_ld(src->dtype, it.p[1]));
        else
            ing_sti(dst->dtype, pd, (int64_t)((uint64_t)ing_ldi(dst->dtype, pd) +
                                              (uint64_t)ing_ldi(src->dtype, it.p[1])));
    } while (ing_it_next(&it));
    return INGOT_OK;
}

ingot_status ingot__ref_index_select(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *src,
                                     uint32_t axis, const ingot_tensor *index, ingot_error *err)
{
    (void)b;
    const ingot_tensor *ops[1] = {dst};
    ing_it it;
    ing_it_init(&it, dst->rank, dst->shape, 1, ops);
    size_t es = ing_esize(dst->dtype);
    int64_t pos[INGOT_MAX_RANK];
    const uint8_t *ip = ing_ptr(index);
    int64_t istride = index->strides[0] * (int64_t)ing_esize(index->dtype);
    do {
        for (uint32_t d = 0; d < dst->rank; d++) pos[d] = it.idx[d];
        int64_t raw = ing_ldi(index->dtype, ip + it.idx[axis] * istride), j = raw;
        if (!norm_index(&j, src->shape[axis]))
            return ingot__err(err, INGOT_E_RANGE, INGOT_NO_OFFSET, "index_select", 12,
                              "index_select: index %lld out of range for axis %u of size %lld",
                              (long long)raw, axis, (long long)src->shape[axis]);
        pos[axis] = j;
        memcpy(it.p[0], ing_at(src, pos), es);
    } while (ing_it_next(&it));
    return INGOT_OK;
}
