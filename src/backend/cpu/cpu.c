/*
 * cpu.c - the "cpu" backend: the ref op set with the hot ops routed onto the CPU kernels of
 * src/backend/cpu/kernels/ (kernels.h), all on the kernels' one persistent thread pool:
 *   - f32 linear ([out,in] weights, bias as an epilogue): ingot__sgemv for a single row,
 *     ingot__sgemm for more (the kernel picks its own small-M and blocked paths); the bias is
 *     written into y first and the kernel accumulates onto it (beta = 1);
 *   - f32 matmul (batched, broadcast batch axes): ingot__sgemm per batch item (ingot__sgemv for a
 *     single row);
 *   - quantized linear (Q8_0, Q4_0, Q4_K, Q5_K, Q6_K or per-row int8 weights, read in place):
 *     activations quantized once per row to int8 (per 32 or 256 elements, or per row), then the
 *     quantized dot kernels (ingot__qgemm) over blocks of weight rows, each block reused for every
 *     activation row while it is in cache; F16 / BF16 weights against f32 activations
 *     (ingot__gemm_half), widened as they are read;
 *   - contiguous f32 activations and last-axis softmax, threaded; f32 RMSNorm, layer norm,
 *     RoPE, binary ops, attention and row copies (cpu_rowops.c, cpu_attention.c).
 * Operands the kernels can read through their leading dimensions (row-major or transposed views
 * with unit stride on one axis) are passed as they are; any other view (negative, zero or
 * overlapping strides, non-collapsible batch axes) is packed into contiguous instance scratch
 * first, and a dst the kernels cannot write is computed in scratch and copied out. Everything
 * else (other dtypes, conv, pooling, sort, sampling) runs the ref definition.
 *
 * Determinism: every chunk of work is fixed by the problem's shape alone and each output element
 * is reduced by the same kernel sequence whatever thread runs it, so results do not depend on
 * the thread count (kernels.h promises the same for its kernels).
 */
#include <unistd.h>

#include "cpu.h"
#include "export/backend_export.h"
#include "ref/ref.h"

static cpu_ctx *ctx_of(ingot_backend *b) { return ingot_backend_ctx(b); }

/* ---- the pool, for range jobs ---- */

typedef struct range_job {
    cpu_range_fn fn;
    void *arg;
    int64_t n, chunk;
} range_job;

static void range_task(void *ctx, size_t task, unsigned worker)
{
    (void)worker;
    const range_job *j = ctx;
    int64_t b = (int64_t)task * j->chunk, e = b + j->chunk < j->n ? b + j->chunk : j->n;
    j->fn(j->arg, b, e);
}

void ingot__cpu_run(cpu_ctx *c, int64_t n, int64_t chunk, cpu_range_fn fn, void *arg)
{
    if (n <= 0) return;
    if (chunk < 1) chunk = 1;
    range_job j = {fn, arg, n, chunk};
    ingot__pool_run(c->pool, range_task, &j, (size_t)((n + chunk - 1) / chunk));
}

/* ---- scratch and operand layouts ---- */

static size_t round64(size_t n) { return (n + 63) & ~(size_t)63; }

/* Instance scratch of at least n bytes (64-byte aligned), grown on demand. */
static ingot_status scratch(ingot_backend *b, size_t n, const char *op, void **out,
                            ingot_error *err)
{
    cpu_ctx *c = ctx_of(b);
    if (c->scratch_size < n + 64) {
        void *p = ingot__alloc(&b->alloc, n + 64);
        if (!p)
            return ingot__err(err, INGOT_E_NOMEM, INGOT_NO_OFFSET, op, ing_strlen(op),
                              "%s: %zu bytes of scratch", op, n);
        ingot__free(&b->alloc, c->scratch, c->scratch_size);
        c->scratch = p;
        c->scratch_size = n + 64;
    }
    *out = (void *)(((uintptr_t)c->scratch + 63) & ~(uintptr_t)63);
    return INGOT_OK;
}

/* A contiguous tensor of `like`'s shape and dtype over host memory `mem` (a stack buffer that
 * only lives for the op). */
static void tmp_tensor(ingot_backend *b, ingot_buffer *sb, ingot_tensor *t, void *mem,
                       const ingot_tensor *like)
{
    memset(sb, 0, sizeof *sb);
    sb->owner = b;
    sb->host = mem;
    sb->size = (size_t)ing_nelem(like) * ing_esize(like->dtype);
    sb->writable = true;
    ingot_tensor_init(t, sb, 0, like->dtype, like->rank, like->shape, NULL);
}

/* How a kernel reads a rows x cols matrix with element strides (sr, sc): row-major (*trans
 * false, *ld = row stride >= cols) or column-major (*trans true: the transpose is row-major with
 * *ld = column stride >= rows). False when neither (negative, zero or overlapping strides). */
static bool mat_layout(int64_t rows, int64_t cols, int64_t sr, int64_t sc, bool *trans,
                       size_t *ld)
{
    if ((sc == 1 || cols <= 1) && (rows <= 1 || sr >= cols)) {
        *trans = false;
        *ld = (size_t)(rows <= 1 ? (cols > 1 ? cols : 1) : sr);
        return true;
    }
    if ((sr == 1 || rows <= 1) && (cols <= 1 || sc >= rows)) {
        *trans = true;
        *ld = (size_t)(cols <= 1 ? (rows > 1 ? rows : 1) : sc);
        return true;
    }
    return false;
}

/* t as a row-major matrix [rows, cols] (cols = the last dimension, rows = the product of the
 * others) with row stride *ld >= cols: the last axis has unit stride and the leading axes
 * collapse into one stride. */
bool ingot__cpu_rows_view(const ingot_tensor *t, int64_t *rows, int64_t *ld)
{
    int64_t cols = t->rank ? t->shape[t->rank - 1] : 1, r = 1, st = 0;
    if (t->rank && cols > 1 && t->strides[t->rank - 1] != 1) return false;
    for (uint32_t i = t->rank > 0 ? t->rank - 1 : 0; i-- > 0;) {
        if (t->shape[i] == 1) continue;
        if (r == 1) st = t->strides[i];
        else if (t->strides[i] != st * r) return false;
        r *= t->shape[i];
    }
    int64_t minld = cols > 1 ? cols : 1;
    if (r > 1 && st < minld) return false;
    *rows = r;
    *ld = r > 1 ? st : minld;
    return true;
}

static bool f32_host(const ingot_tensor *t)
{
    const uint8_t *p = ing_ptr(t);
    return t->dtype == INGOT_DTYPE_F32 && p && (uintptr_t)p % 4 == 0;
}

static const float *cfp(const ingot_tensor *t) { return (const float *)(const void *)ing_ptr(t); }
static float *fp(const ingot_tensor *t) { return (float *)(void *)ing_ptr(t); }

static ingot_status nomem(ingot_error *err, const char *op)
{
    return ingot__err(err, INGOT_E_NOMEM, INGOT_NO_OFFSET, op, ing_strlen(op),
                      "%s: GEMM packing buffers", op);
}

/* y rows [0, M) (row stride ldy, OUT wide) = bias (any stride), or left alone without bias. */
static void preload_bias(float *y, int64_t ldy, int64_t M, int64_t OUT, const ingot_tensor *bias)
{
    if (!bias) return;
    const float *pb = cfp(bias);
    int64_t bs = bias->strides[0];
    for (int64_t m = 0; m < M; m++)
        for (int64_t o = 0; o < OUT; o++) y[m * ldy + o] = pb[o * bs];
}

/* ---- f32 linear: y = x . w^T + bias, w [out, in] ---- */

static ingot_status cpu_linear(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *x,
                               const ingot_tensor *w, const ingot_tensor *bias, ingot_error *err)
{
    if (!f32_host(x) || !f32_host(w) || !f32_host(dst) || (bias && !f32_host(bias)) ||
        w->shape[1] == 0)
        return ingot__ref_linear(b, dst, x, w, bias, err);
    cpu_ctx *c = ctx_of(b);
    int64_t OUT = w->shape[0], IN = w->shape[1], M = ing_nelem(dst) / OUT, xr, ldx, yr, ldy;
    bool wt;
    size_t ldw;
    bool w_ok = mat_layout(OUT, IN, w->strides[0], w->strides[1], &wt, &ldw);
    bool x_ok = ingot__cpu_rows_view(x, &xr, &ldx);
    bool y_ok = ingot__cpu_rows_view(dst, &yr, &ldy);
    size_t xbytes = x_ok ? 0 : round64((size_t)(M * IN) * 4);
    size_t wbytes = w_ok ? 0 : round64((size_t)(OUT * IN) * 4);
    size_t ybytes = y_ok ? 0 : round64((size_t)(M * OUT) * 4);
    uint8_t *s = NULL;
    if (xbytes + wbytes + ybytes) ING_TRY(scratch(b, xbytes + wbytes + ybytes, "linear",
                                                  (void **)&s, err));
    ingot_buffer sbx, sbw, sby;
    ingot_tensor tx, tw, ty;
    const float *px = cfp(x), *pw = cfp(w);
    float *py = fp(dst);
    if (!x_ok) {
        tmp_tensor(b, &sbx, &tx, s, x);
        ING_TRY(ingot__ref_copy(b, &tx, x, err));
        px = (const float *)(const void *)s, ldx = IN;
    }
    if (!w_ok) {
        tmp_tensor(b, &sbw, &tw, s + xbytes, w);
        ING_TRY(ingot__ref_copy(b, &tw, w, err));
        pw = (const float *)(const void *)(s + xbytes), wt = false, ldw = (size_t)IN;
    }
    if (!y_ok) {
        tmp_tensor(b, &sby, &ty, s + xbytes + wbytes, dst);
        py = (float *)(void *)(s + xbytes + wbytes), ldy = OUT;
    }
    preload_bias(py, ldy, M, OUT, bias);
    float beta = bias ? 1.0f : 0.0f;
    if (M == 1) {
        if (!wt)
            ingot__sgemv(c->pool, false, (size_t)OUT, (size_t)IN, 1.0f, pw, ldw, px, beta, py);
        else /* w is a column-major view: its transpose [in, out] is row-major */
            ingot__sgemv(c->pool, true, (size_t)IN, (size_t)OUT, 1.0f, pw, ldw, px, beta, py);
    } else if (ingot__sgemm(c->pool, false, !wt, (size_t)M, (size_t)OUT, (size_t)IN, 1.0f, px,
                            (size_t)ldx, pw, ldw, beta, py, (size_t)ldy) != INGOT_OK) {
        return nomem(err, "linear");
    }
    if (!y_ok) return ingot__ref_copy(b, dst, &ty, err);
    return INGOT_OK;
}

/* ---- f32 batched matmul ---- */

static ingot_tensor head_view(const ingot_tensor *t, uint32_t rank)
{
    ingot_tensor v = *t;
    v.rank = rank;
    return v;
}

static ingot_status cpu_matmul(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *a,
                               const ingot_tensor *cc, ingot_error *err)
{
    if (!f32_host(a) || !f32_host(cc) || !f32_host(dst) || a->shape[a->rank - 1] == 0)
        return ingot__ref_matmul(b, dst, a, cc, err);
    cpu_ctx *c = ctx_of(b);
    uint32_t r = dst->rank, ra = a->rank, rc = cc->rank;
    int64_t M = dst->shape[r - 2], N = dst->shape[r - 1], K = a->shape[ra - 1];
    bool ta, tb, td;
    size_t lda, ldb, ldd;
    bool a_ok = mat_layout(M, K, a->strides[ra - 2], a->strides[ra - 1], &ta, &lda);
    bool b_ok = mat_layout(K, N, cc->strides[rc - 2], cc->strides[rc - 1], &tb, &ldb);
    bool d_ok = mat_layout(M, N, dst->strides[r - 2], dst->strides[r - 1], &td, &ldd) && !td;
    size_t abytes = a_ok ? 0 : round64((size_t)ing_nelem(a) * 4);
    size_t bbytes = b_ok ? 0 : round64((size_t)ing_nelem(cc) * 4);
    size_t dbytes = d_ok ? 0 : round64((size_t)ing_nelem(dst) * 4);
    uint8_t *s = NULL;
    if (abytes + bbytes + dbytes)
        ING_TRY(scratch(b, abytes + bbytes + dbytes, "matmul", (void **)&s, err));
    ingot_buffer sba, sbb, sbd;
    ingot_tensor at = *a, bt = *cc, dt = *dst;
    if (!a_ok) {
        tmp_tensor(b, &sba, &at, s, a);
        ING_TRY(ingot__ref_copy(b, &at, a, err));
        ta = false, lda = (size_t)(K > 1 ? K : 1);
    }
    if (!b_ok) {
        tmp_tensor(b, &sbb, &bt, s + abytes, cc);
        ING_TRY(ingot__ref_copy(b, &bt, cc, err));
        tb = false, ldb = (size_t)(N > 1 ? N : 1);
    }
    if (!d_ok) {
        tmp_tensor(b, &sbd, &dt, s + abytes + bbytes, dst);
        ldd = (size_t)(N > 1 ? N : 1);
    }
    ingot_tensor bd = head_view(&dt, r - 2), ba = head_view(&at, ra - 2),
                 bc = head_view(&bt, rc - 2);
    const ingot_tensor *ops[3] = {&bd, &ba, &bc};
    ing_it it;
    ing_it_init(&it, r - 2, dst->shape, 3, ops);
    do {
        float *D = (float *)(void *)it.p[0];
        const float *A = (const float *)(const void *)it.p[1];
        const float *B = (const float *)(const void *)it.p[2];
        if (M == 1 && !ta) {
            /* One row: dst[N] = c^T . a (c row-major) or (c^T) . a (c column-major). */
            if (!tb) ingot__sgemv(c->pool, true, (size_t)K, (size_t)N, 1.0f, B, ldb, A, 0.0f, D);
            else ingot__sgemv(c->pool, false, (size_t)N, (size_t)K, 1.0f, B, ldb, A, 0.0f, D);
        } else if (ingot__sgemm(c->pool, ta, tb, (size_t)M, (size_t)N, (size_t)K, 1.0f, A, lda,
                                B, ldb, 0.0f, D, ldd) != INGOT_OK) {
            return nomem(err, "matmul");
        }
    } while (ing_it_next(&it));
    if (!d_ok) return ingot__ref_copy(b, dst, &dt, err);
    return INGOT_OK;
}

/* ---- quantized linear (Q8_0, Q4_0, Q4_K, Q5_K, Q6_K, per-row int8) and F16 / BF16 weights ---- */

typedef struct qlin_job {
    ingot_dtype wt;
    const float *x; /* activation rows */
    int64_t ldx, IN;
    uint8_t *xq;    /* quantized activation rows, xrow bytes apart */
    size_t xrow;
    bool rp;        /* for repacked Q4_K rows: ordered by ingot__qx_q4kr_order */
} qlin_job;

/* Activation rows [b, e) quantized for the dot with wt (qdot.h's layout). */
static void qlin_quant_task(void *arg, int64_t b, int64_t e)
{
    const qlin_job *j = arg;
    for (int64_t m = b; m < e; m++) {
        uint8_t *q = j->xq + (size_t)m * j->xrow;
        ingot__qx_quantize(j->wt, j->x + m * j->ldx, (size_t)j->IN, q);
        if (j->rp) ingot__qx_q4kr_order(q, (size_t)j->IN);
    }
}

/* ingot_op_qlinear on the cpu backend; rp (NULL: none): w's Q4_K rows repacked
 * (ingot__linear_q4kr), read instead of w's data. */
static ingot_status qlinear(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *x,
                            const ingot_tensor *w, const ingot_tensor *scale,
                            const ingot_tensor *bias, const void *rp, ingot_error *err)
{
    int64_t OUT = w->shape[0], IN = w->shape[1];
    ingot_dtype wt = w->dtype;
    bool half = wt == INGOT_DTYPE_F16 || wt == INGOT_DTYPE_BF16;
    bool wt_ok = half ? w->strides[1] == 1 && w->strides[0] >= IN &&
                            (uintptr_t)ing_ptr(w) % 2 == 0
                      : ingot__qdot_k_ok(wt, (size_t)IN);
    if (!wt_ok || !f32_host(x) || !f32_host(dst) || (bias && !f32_host(bias)) ||
        (scale && !f32_host(scale)) || !ing_ptr(w))
        return ingot__ref_qlinear(b, dst, x, w, scale, bias, err);
    cpu_ctx *c = ctx_of(b);
    int64_t M = ing_nelem(dst) / OUT, xr, ldx, yr, ldy;
    bool x_ok = ingot__cpu_rows_view(x, &xr, &ldx);
    bool y_ok = ingot__cpu_rows_view(dst, &yr, &ldy);
    bool s_ok = wt != INGOT_DTYPE_I8 || OUT == 1 || scale->strides[0] == 1;
    /* prefill routes that read the f32 rows (kernels.h): no quantized copy */
    bool f32_route = !half && ingot__qgemm_reads_f32(wt, (size_t)IN, (size_t)M);
    size_t xrow = half || f32_route ? 0 : ingot__qx_bytes(wt, (size_t)IN);
    size_t qbytes = round64(xrow * (size_t)M);
    size_t xbytes = x_ok ? 0 : round64((size_t)(M * IN) * 4);
    size_t ybytes = y_ok ? 0 : round64((size_t)(M * OUT) * 4);
    size_t wsbytes = s_ok ? 0 : round64((size_t)OUT * 4);
    uint8_t *s = NULL;
    if (qbytes + xbytes + ybytes + wsbytes)
        ING_TRY(scratch(b, qbytes + xbytes + ybytes + wsbytes, "qlinear", (void **)&s, err));
    const float *px = cfp(x), *ws = NULL;
    float *py = fp(dst);
    uint8_t *rest = s + qbytes;
    ingot_buffer sbx, sby;
    ingot_tensor tx, ty;
    if (!x_ok) {
        tmp_tensor(b, &sbx, &tx, rest, x);
        ING_TRY(ingot__ref_copy(b, &tx, x, err));
        px = (const float *)(const void *)rest, ldx = IN;
    }
    if (!y_ok) {
        tmp_tensor(b, &sby, &ty, rest + xbytes, dst);
        py = (float *)(void *)(rest + xbytes), ldy = OUT;
    }
    if (wt == INGOT_DTYPE_I8) {
        if (s_ok) {
            ws = cfp(scale);
        } else {
            float *wsc = (float *)(void *)(rest + xbytes + ybytes);
            const float *ps = cfp(scale);
            for (int64_t o = 0; o < OUT; o++) wsc[o] = ps[o * scale->strides[0]];
            ws = wsc;
        }
    }
    preload_bias(py, ldy, M, OUT, bias);
    if (half) {
        ingot__gemm_half(c->pool, wt, (size_t)OUT, (size_t)IN, ing_ptr(w), (size_t)w->strides[0],
                         (size_t)M, px, (size_t)ldx, bias != NULL, py, (size_t)ldy);
    } else {
        qlin_job j = {wt, px, ldx, IN, s, xrow, rp != NULL};
        if (!f32_route) ingot__cpu_run(c, M, 16, qlin_quant_task, &j);
        size_t ldw = (size_t)IN / ingot_dtype_block_elems(wt) * ingot_dtype_block_bytes(wt);
        if (wt == INGOT_DTYPE_I8) ldw = (size_t)IN;
        ingot_status qs = rp ? ingot__qgemm_q4kr(c->pool, (size_t)OUT, (size_t)IN, rp,
                                                 f32_route ? NULL : s, px, (size_t)ldx,
                                                 (size_t)M, bias != NULL, py, (size_t)ldy)
                             : ingot__qgemm(c->pool, wt, (size_t)OUT, (size_t)IN, ing_ptr(w),
                                            ldw, ws, f32_route ? NULL : s, px, (size_t)ldx,
                                            (size_t)M, bias != NULL, py, (size_t)ldy);
        if (qs != INGOT_OK) return nomem(err, "qlinear");
    }
    if (!y_ok) return ingot__ref_copy(b, dst, &ty, err);
    return INGOT_OK;
}

static ingot_status cpu_qlinear(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *x,
                                const ingot_tensor *w, const ingot_tensor *scale,
                                const ingot_tensor *bias, ingot_error *err)
{
    return qlinear(b, dst, x, w, scale, bias, NULL, err);
}

ingot_status ingot__linear_q4kr(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *x,
                                const ingot_tensor *w, const ingot_tensor *bias, const void *rp,
                                bool *done, ingot_error *err)
{
    *done = false;
    if (!b || b->ops != &ingot__backend_cpu || !rp || !w || !x || !dst ||
        w->dtype != INGOT_DTYPE_Q4_K || w->rank != 2 || !ingot__qdot_k_ok(w->dtype,
                                                                         (size_t)w->shape[1]) ||
        !f32_host(x) || !f32_host(dst) || !dst->buf->writable || x->rank < 1 ||
        dst->rank != x->rank || (bias && (!f32_host(bias) || bias->rank != 1 ||
                                          bias->shape[0] != w->shape[0])))
        return INGOT_OK;
    for (uint32_t i = 0; i < x->rank; i++)
        if (dst->shape[i] != (i + 1 == x->rank ? w->shape[0] : x->shape[i]) ||
            (i + 1 == x->rank && x->shape[i] != w->shape[1]))
            return INGOT_OK;
    *done = true;
    if (ing_nelem(dst) == 0) return INGOT_OK;
    return qlinear(b, dst, x, w, NULL, bias, rp, err);
}

/* ---- several linears on one activation row as one job (backend_export.h) ---- */

/* t holds exactly one row of n f32 elements, contiguous, on the host */
static bool one_row(const ingot_tensor *t, int64_t n)
{
    int64_t rows, ld;
    return f32_host(t) && ing_nelem(t) == n && t->rank >= 1 && t->shape[t->rank - 1] == n &&
           ingot__cpu_rows_view(t, &rows, &ld) && rows == 1;
}

bool ingot__linear_multi(ingot_backend *b, uint32_t n, ingot_tensor *const dst[],
                         const ingot_tensor *x, const ingot_tensor *const w[],
                         const ingot_tensor *const bias[], const void *const rp[])
{
    if (!b || b->ops != &ingot__backend_cpu || n < 1 || n > INGOT__QSEG_MAX || !x || !w[0] ||
        w[0]->rank != 2)
        return false;
    int64_t IN = w[0]->shape[1];
    if (IN < 1 || !one_row(x, IN)) return false;
    ingot__qseg seg[INGOT__QSEG_MAX];
    size_t xbytes = 0;
    for (uint32_t i = 0; i < n; i++) {
        const ingot_tensor *wi = w[i], *bi = bias ? bias[i] : NULL;
        if (!wi || !dst[i] || wi->rank != 2 || wi->shape[1] != IN || !ing_ptr(wi) ||
            !one_row(dst[i], wi->shape[0]) || !dst[i]->buf->writable ||
            (bi && (!f32_host(bi) || bi->rank != 1 || bi->shape[0] != wi->shape[0])))
            return false;
        ingot_dtype wt = wi->dtype;
        bool half = wt == INGOT_DTYPE_F16 || wt == INGOT_DTYPE_BF16, r = rp && rp[i];
        if (r && wt != INGOT_DTYPE_Q4_K) return false;
        if (half ? wi->strides[1] != 1 || wi->strides[0] < IN || (uintptr_t)ing_ptr(wi) % 2
                 : wt == INGOT_DTYPE_I8 || !ingot__qdot_k_ok(wt, (size_t)IN))
            return false;
        size_t ldw = half ? (size_t)wi->strides[0] * 2
                          : (size_t)IN / ingot_dtype_block_elems(wt) * ingot_dtype_block_bytes(wt);
        seg[i] = (ingot__qseg){wt,          r ? rp[i] : ing_ptr(wi), half ? cfp(x) : NULL, ldw,
                               (size_t)wi->shape[0], fp(dst[i]), bi != NULL, r};
        if (!half) xbytes += ingot__qx_bytes(wt, (size_t)IN);
    }
    /* x quantized once per weight dtype */
    uint8_t *xq;
    ingot_error e;
    if (scratch(b, xbytes + 64, "linear", (void **)&xq, &e) != INGOT_OK) return false;
    for (uint32_t i = 0; i < n; i++) {
        for (uint32_t k = 0; k < i && !seg[i].xq; k++)
            if (seg[k].wt == seg[i].wt && seg[k].rp == seg[i].rp) seg[i].xq = seg[k].xq;
        if (!seg[i].xq) {
            ingot__qx_quantize(seg[i].wt, cfp(x), (size_t)IN, xq);
            if (seg[i].rp) ingot__qx_q4kr_order(xq, (size_t)IN);
            seg[i].xq = xq;
            xq += ingot__qx_bytes(seg[i].wt, (size_t)IN);
        }
        if (bias && bias[i]) preload_bias(seg[i].Y, 0, 1, w[i]->shape[0], bias[i]);
    }
    ingot__qgemv_multi(ctx_of(b)->pool, (size_t)IN, seg, n);
    return true;
}

bool ingot__q4kr_pays(const ingot_backend *b)
{
    return b && b->ops == &ingot__backend_cpu && ingot__q4kr_fast();
}

typedef struct {
    const uint8_t *src;
    uint8_t *dst;
} q4kr_job;

static void q4kr_task(void *arg, int64_t b, int64_t e)
{
    const q4kr_job *j = arg;
    ingot__q4kr_repack(j->src + b * 144, j->dst + b * 144, (size_t)(e - b));
}

void ingot__q4kr_pack(ingot_backend *b, const void *src, void *dst, size_t nblocks)
{
    q4kr_job j = {src, dst};
    if (b && b->ops == &ingot__backend_cpu) /* over the pool, 4096 blocks (576 KiB) a task */
        ingot__cpu_run(ctx_of(b), (int64_t)nblocks, 4096, q4kr_task, &j);
    else
        ingot__q4kr_repack(src, dst, nblocks);
}

/* ---- f32 activations and softmax on contiguous tensors ---- */

typedef struct act_job {
    ingot_act_op op;
    double param;
    const float *a;
    float *d;
    int64_t n; /* softmax: row length */
    bool log;
} act_job;

static void act_task(void *arg, int64_t b, int64_t e)
{
    const act_job *j = arg;
    const float *a = j->a;
    float *d = j->d;
    switch (j->op) {
    case INGOT_ACT_RELU:
        for (int64_t i = b; i < e; i++) d[i] = a[i] < 0 ? 0.0f : a[i];
        break;
    case INGOT_ACT_SIGMOID:
        for (int64_t i = b; i < e; i++) d[i] = 1.0f / (1.0f + expf(-a[i]));
        break;
    case INGOT_ACT_TANH:
        for (int64_t i = b; i < e; i++) d[i] = tanhf(a[i]);
        break;
    case INGOT_ACT_SILU:
        ingot__cpu_silu(a + b, d + b, e - b);
        break;
    default:
        for (int64_t i = b; i < e; i++) d[i] = (float)ingot__ref_act1(j->op, a[i], j->param);
        break;
    }
}

static ingot_status cpu_activation(ingot_backend *b, ingot_act_op op, ingot_tensor *dst,
                                   const ingot_tensor *a, double param, ingot_error *err)
{
    if (!f32_host(a) || !f32_host(dst) || !ingot_tensor_is_contiguous(a) ||
        !ingot_tensor_is_contiguous(dst))
        return ingot__ref_activation(b, op, dst, a, param, err);
    act_job j = {op, param, cfp(a), fp(dst), 0, false};
    ingot__cpu_run(ctx_of(b), ing_nelem(a), 16384, act_task, &j);
    return INGOT_OK;
}

static void smax_task(void *arg, int64_t b, int64_t e)
{
    const act_job *j = arg;
    for (int64_t r = b; r < e; r++) {
        const float *a = j->a + r * j->n;
        float *d = j->d + r * j->n;
        float mx = -INFINITY;
        bool nan = false;
        for (int64_t i = 0; i < j->n; i++) {
            if (a[i] != a[i]) nan = true;
            if (a[i] > mx) mx = a[i];
        }
        if (nan) mx = NAN;
        double sum = 0;
        for (int64_t i = 0; i < j->n; i++) sum += exp((double)a[i] - mx);
        double ls = log(sum);
        for (int64_t i = 0; i < j->n; i++) {
            double v = (double)a[i] - mx;
            d[i] = (float)(j->log ? v - ls : exp(v) / sum);
        }
    }
}

static ingot_status cpu_softmax(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *a,
                                uint32_t axis, bool log, ingot_error *err)
{
    if (!f32_host(a) || !f32_host(dst) || axis != a->rank - 1 ||
        !ingot_tensor_is_contiguous(a) || !ingot_tensor_is_contiguous(dst))
        return ingot__ref_softmax(b, dst, a, axis, log, err);
    int64_t n = a->shape[axis];
    act_job j = {INGOT_ACT_SOFTMAX, 0, cfp(a), fp(dst), n, log};
    ingot__cpu_run(ctx_of(b), ing_nelem(a) / n, 8, smax_task, &j);
    return INGOT_OK;
}

/* ---- instance ---- */

/* The GEMM packs its operands into per-worker pool scratch, grown on first use. To keep that
 * allocation out of the first op (the MLP runtime promises none in its forward pass), every worker
 * is grown now to the most any GEMM asks for; the pages are only touched when a GEMM runs. */
static bool reserve_gemm_scratch(ingot__pool *pool)
{
    size_t n = ingot__sgemm_scratch_bytes();
    for (unsigned w = 0; w < ingot__pool_threads(pool); w++)
        if (!ingot__pool_scratch(pool, w, n)) return false;
    return true;
}

static void cpu_fini(ingot_backend *b)
{
    cpu_ctx *c = ctx_of(b);
    if (!c) return;
    ingot__pool_destroy(c->pool);
    if (c->scratch) ingot__free(&b->alloc, c->scratch, c->scratch_size);
    ingot__free(&b->alloc, c, sizeof *c);
    ingot_backend_set_ctx(b, NULL);
}

static ingot_status cpu_init(ingot_backend *b, const ingot_backend_opts *o, ingot_error *err)
{
    cpu_ctx *c = ingot__calloc(&b->alloc, sizeof *c);
    if (!c) return ingot__err(err, INGOT_E_NOMEM, INGOT_NO_OFFSET, "cpu", 3, "cpu context");
    ingot_backend_set_ctx(b, c);
    uint32_t t = o->threads;
    if (t == 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        t = n > 0 ? (uint32_t)n : 1;
    }
    if (t > 256) t = 256;
    c->pool = ingot__pool_create(&b->alloc, t);
    if (!c->pool || !reserve_gemm_scratch(c->pool)) {
        cpu_fini(b);
        return ingot__err(err, INGOT_E_NOMEM, INGOT_NO_OFFSET, "cpu", 3,
                          "thread pool of %u threads and its GEMM buffers", t);
    }
    c->threads = ingot__pool_threads(c->pool);
    ingot__fmt(c->desc, sizeof c->desc, "host CPU, %s kernels, %u threads%s",
               ingot__isa_name(ingot__get_isa()), c->threads,
               ingot__isa_env_ignored() ? " (INGOT_ISA is not a level name: ignored)" : "");
    return INGOT_OK;
}

static void cpu_info(const ingot_backend *b, ingot_device_info *out)
{
    const cpu_ctx *c = ingot_backend_ctx(b);
    out->description = c->desc;
    out->threads = c->threads;
}

/* ---- ISA levels (ingot/backend.h) ---- */

INGOT_API const char *ingot_cpu_isa_name(ingot_cpu_isa isa)
{
    return (unsigned)isa < INGOT_CPU_ISA_COUNT ? ingot__isa_name((ingot__isa)isa) : NULL;
}

INGOT_API ingot_status ingot_cpu_isa_from_name(const char *name, ingot_cpu_isa *out)
{
    int l = name ? ingot__isa_from_name(name) : -1;
    if (l < 0) return INGOT_E_NOT_FOUND;
    if (out) *out = (ingot_cpu_isa)l;
    return INGOT_OK;
}

INGOT_API bool ingot_cpu_isa_supported(ingot_cpu_isa isa)
{
    return ingot__isa_supported((ingot__isa)isa);
}

INGOT_API ingot_cpu_isa ingot_cpu_isa_current(void) { return (ingot_cpu_isa)ingot__get_isa(); }

INGOT_API ingot_cpu_isa ingot_cpu_isa_set_cap(ingot_cpu_isa cap)
{
    return (ingot_cpu_isa)ingot__set_isa((ingot__isa)cap);
}

/* ---- tables: ref members except where a kernel takes over ---- */

static const ingot_tensor_ops cpu_float_ops = {
    .unary = ingot__ref_unary,
    .binary = ingot__cpu_binary,
    .binary_scalar = ingot__cpu_binary_scalar,
    .compare = ingot__ref_compare,
    .clamp = ingot__ref_clamp,
    .where = ingot__ref_where,
    .mask_fill = ingot__ref_mask_fill,
    .copy = ingot__cpu_copy,
    .cast = ingot__cpu_cast,
    .fill = ingot__ref_fill,
    .arange = ingot__ref_arange,
    .matmul = cpu_matmul,
    .reduce = ingot__ref_reduce,
    .cumsum = ingot__ref_cumsum,
    .topk = ingot__ref_topk,
    .gather = ingot__ref_gather,
    .scatter_add = ingot__ref_scatter_add,
    .index_select = ingot__ref_index_select,
    .sort = ingot__ref_sort,
};

static const ingot_module_ops cpu_module_ops = {
    .linear = cpu_linear,
    .conv = ingot__ref_conv,
    .pool = ingot__ref_pool,
    .layer_norm = ingot__cpu_layer_norm,
    .rms_norm = ingot__cpu_rms_norm,
    .batch_norm = ingot__ref_batch_norm,
    .rope = ingot__cpu_rope,
    .attention = ingot__cpu_attention,
};

static const ingot_activation_ops cpu_activation_ops = {
    .activation = cpu_activation,
    .softmax = cpu_softmax,
};

static const ingot_quant_ops cpu_quant_ops = {
    .quantize = ingot__ref_quantize,
    .dequantize = ingot__ref_dequantize,
    .linear = cpu_qlinear,
};

const ingot_backend_ops ingot__backend_cpu = {
    .abi_version = INGOT_BACKEND_ABI,
    .name = "cpu",
    .init = cpu_init,
    .fini = cpu_fini,
    .device_info = cpu_info,
    .float_ops = &cpu_float_ops,
    .int_ops = &ingot__ref_int_ops,
    .bool_ops = &ingot__ref_bool_ops,
    .quant_ops = &cpu_quant_ops,
    .module_ops = &cpu_module_ops,
    .activation_ops = &cpu_activation_ops,
    .sampling_ops = &ingot__ref_sampling_ops,
};
