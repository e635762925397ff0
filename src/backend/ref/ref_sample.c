/*
 * ref_sample.c - "ref" definitions of the ops behind sampling: stable sort, the nucleus (top-p)
 * filter and multinomial draws (include/ingot/backend.h documents each rule). Sorting is a
 * bottom-up merge sort of an index array (stable by construction); the index and probability
 * scratch of one row is allocated per call from the instance's allocator.
 */
#include "ref.h"

/* ---- ranking ---- */

/* What the comparator reads: one row of a tensor (byte pointer + byte stride) and its order. */
typedef struct rank_src {
    const uint8_t *p;
    int64_t stride;
    ingot_dtype dt;
    bool ints, desc;
    const double *vals; /* when set, the row's values as doubles (top_p) instead of p */
} rank_src;

/* Element i strictly before element j (equal elements are not: the merge keeps them in input
 * order). NaN is larger than every number. */
static bool ranks_before(const rank_src *s, int64_t i, int64_t j)
{
    if (s->ints) {
        int64_t x = ing_ldi(s->dt, s->p + i * s->stride), y = ing_ldi(s->dt, s->p + j * s->stride);
        return s->desc ? x > y : x < y;
    }
    double x = s->vals ? s->vals[i] : ing_ld(s->dt, s->p + i * s->stride);
    double y = s->vals ? s->vals[j] : ing_ld(s->dt, s->p + j * s->stride);
    bool xn = x != x, yn = y != y;
    if (s->desc) return (xn && !yn) || (!xn && !yn && x > y);
    return (!xn && yn) || (!xn && !yn && x < y);
}

/* Sorts idx[0..n) (initially 0..n-1) by the source's order, stably; tmp holds n entries.
 * Returns the array that holds the result (idx or tmp). */
static int64_t *merge_sort(const rank_src *s, int64_t *idx, int64_t *tmp, int64_t n)
{
    int64_t *from = idx, *to = tmp;
    for (int64_t w = 1; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int64_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) to[k++] = ranks_before(s, from[j], from[i]) ? from[j++]
                                                                                   : from[i++];
            while (i < mid) to[k++] = from[i++];
            while (j < hi) to[k++] = from[j++];
        }
        int64_t *t = from;
        from = to;
        to = t;
    }
    return from;
}

static ingot_status scratch_nomem(ingot_error *err, const char *op, int64_t n)
{
    return ingot__err(err, INGOT_E_NOMEM, INGOT_NO_OFFSET, op, ing_strlen(op),
                      "%s: index scratch for rows of %lld elements", op, (long long)n);
}

/* Iteration over the rows along `axis` of up to three tensors of a's shape (pointers at each
 * row's element 0). */
static void rows_it(ing_it *it, const ingot_tensor *a, uint32_t axis, const ingot_tensor *t1,
                    const ingot_tensor *t2)
{
    ingot_tensor va = *a, v1 = t1 ? *t1 : *a, v2 = t2 ? *t2 : *a;
    va.shape[axis] = v1.shape[axis] = v2.shape[axis] = 1;
    const ingot_tensor *ops[3] = {&va, &v1, &v2};
    ing_it_init(it, a->rank, va.shape, 3, ops);
}

ingot_status ingot__ref_sort(ingot_backend *b, ingot_tensor *values, ingot_tensor *indices,
                             const ingot_tensor *a, uint32_t axis, bool descending,
                             ingot_error *err)
{
    int64_t n = a->shape[axis];
    size_t bytes = (size_t)n * 2 * sizeof(int64_t);
    int64_t *idx = ingot__alloc(&b->alloc, bytes);
    if (!idx) return scratch_nomem(err, "sort", n);
    size_t es = ing_esize(a->dtype);
    rank_src src = {NULL, a->strides[axis] * (int64_t)es, a->dtype,
                    ing_kind(a->dtype) == ING_K_INT, descending, NULL};
    int64_t vs = values ? values->strides[axis] * (int64_t)es : 0;
    int64_t is = indices ? indices->strides[axis] * 8 : 0;
    ing_it it;
    rows_it(&it, a, axis, values, indices);
    do {
        src.p = it.p[0];
        for (int64_t i = 0; i < n; i++) idx[i] = i;
        const int64_t *ord = merge_sort(&src, idx, idx + n, n);
        for (int64_t j = 0; j < n; j++) {
            if (values) memcpy(it.p[1] + j * vs, src.p + ord[j] * src.stride, es);
            if (indices) ing_sti(INGOT_DTYPE_I64, it.p[2] + j * is, ord[j]);
        }
    } while (ing_it_next(&it));
    ingot__free(&b->alloc, idx, bytes);
    return INGOT_OK;
}

/* ---- top-p ---- */

ingot_status ingot__ref_top_p(ingot_backend *b, ingot_tensor *dst, ingot_tensor *keep,
                              const ingot_tensor *a, double p, bool logits, ingot_error *err)
{
    uint32_t ax = a->rank - 1;
    int64_t n = a->shape[ax];
    size_t bytes = (size_t)n * (2 * sizeof(int64_t) + sizeof(double) + 1);
    uint8_t *mem = ingot__alloc(&b->alloc, bytes);
    if (!mem) return scratch_nomem(err, "top_p", n);
    int64_t *idx = (int64_t *)(void *)mem;
    double *prob = (double *)(void *)(mem + (size_t)n * 2 * sizeof(int64_t));
    uint8_t *kept = mem + (size_t)n * (2 * sizeof(int64_t) + sizeof(double));
    int64_t as = a->strides[ax] * (int64_t)ing_esize(a->dtype);
    int64_t ds = dst ? dst->strides[ax] * (int64_t)ing_esize(dst->dtype) : 0;
    int64_t ks = keep ? keep->strides[ax] : 0;
    rank_src src = {NULL, 0, a->dtype, false, true, prob};
    ing_it it;
    rows_it(&it, a, ax, dst, keep);
    do {
        /* The row's probabilities, in double (softmax of logits: exp(x - max) / sum, NaN for a
         * row with a NaN or of only -inf, as ingot_op_softmax). */
        double mx = -INFINITY;
        bool nan = false;
        for (int64_t i = 0; i < n; i++) {
            prob[i] = ing_ld(a->dtype, it.p[0] + i * as);
            if (prob[i] != prob[i]) nan = true;
            else if (prob[i] > mx) mx = prob[i];
        }
        if (logits) {
            double sum = 0;
            if (nan || mx == -INFINITY) mx = NAN;
            for (int64_t i = 0; i < n; i++) sum += exp(prob[i] - mx);
            for (int64_t i = 0; i < n; i++) prob[i] = exp(prob[i] - mx) / sum;
        }
        /* Rank by probability, descending, ties by lower index; keep while the mass before is
         * < p, the first always, everything for p >= 1. */
        for (int64_t i = 0; i < n; i++) idx[i] = i, kept[i] = 0;
        const int64_t *ord = merge_sort(&src, idx, idx + n, n);
        double mass = 0;
        for (int64_t j = 0; j < n; j++) {
            if (j > 0 && p < 1 && !(mass < p)) break;
            kept[ord[j]] = 1;
            mass += prob[ord[j]];
        }
        for (int64_t i = 0; i < n; i++) {
            if (dst) ing_st(dst->dtype, it.p[1] + i * ds, kept[i] ? prob[i] / mass : 0.0);
            if (keep) it.p[2][i * ks] = kept[i];
        }
    } while (ing_it_next(&it));
    ingot__free(&b->alloc, mem, bytes);
    return INGOT_OK;
}

/* ---- multinomial ---- */

ingot_status ingot__ref_multinomial(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *probs,
                                    ingot_error *err)
{
    uint32_t ax = probs->rank - 1;
    int64_t n = probs->shape[ax], S = dst->shape[ax], row = 0;
    int64_t ps = probs->strides[ax] * (int64_t)ing_esize(probs->dtype), ds = dst->strides[ax] * 8;
    ingot_tensor vp = *probs, vd = *dst;
    vp.shape[ax] = vd.shape[ax] = 1;
    const ingot_tensor *ops[2] = {&vp, &vd};
    ing_it it;
    ing_it_init(&it, probs->rank, vp.shape, 2, ops);
    do {
        double total = 0;
        int64_t last = -1;
        for (int64_t i = 0; i < n; i++) {
            double w = ing_ld(probs->dtype, it.p[0] + i * ps);
            if (!(w >= 0) || isinf(w))
                return ingot__err(err, INGOT_E_RANGE, INGOT_NO_OFFSET, "multinomial", 11,
                                  "multinomial: operand 'probs' row %lld has weight %g at index "
                                  "%lld (weights must be finite and >= 0)",
                                  (long long)row, w, (long long)i);
            if (w > 0) last = i;
            total += w;
        }
        if (!(total > 0) || isinf(total))
            return ingot__err(err, INGOT_E_RANGE, INGOT_NO_OFFSET, "multinomial", 11,
                              "multinomial: operand 'probs' row %lld sums to %g (needs a finite "
                              "positive total)", (long long)row, total);
        for (int64_t s = 0; s < S; s++) {
            double t = (double)(ingot_backend_random_u64(b) >> 11) * 0x1p-53 * total, cum = 0;
            int64_t pick = last;
            for (int64_t i = 0; i < n; i++) {
                cum += ing_ld(probs->dtype, it.p[0] + i * ps);
                if (cum > t) {
                    pick = i;
                    break;
                }
            }
            ing_sti(INGOT_DTYPE_I64, it.p[1] + s * ds, pick);
        }
        row++;
    } while (ing_it_next(&it));
    return INGOT_OK;
}
