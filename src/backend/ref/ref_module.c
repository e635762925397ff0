/*
 * ref_module.c - "ref" module ops (Burn's ModuleOps): linear ([out,in] weights), conv 1/2/3-d,
 * max/avg pooling, layer/RMS/batch norm, RoPE (both pairings), scaled dot-product attention with
 * the bottom-right causal mask and grouped KV heads, and softmax / log-softmax on any axis.
 */
#include "ref.h"

ingot_status ingot__ref_linear(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *x,
                               const ingot_tensor *w, const ingot_tensor *bias, ingot_error *err)
{
    (void)b;
    (void)err;
    uint32_t r = x->rank;
    int64_t IN = w->shape[1], OUT = w->shape[0];
    int64_t es = (int64_t)ing_esize(x->dtype);
    int64_t xs = x->strides[r - 1] * es, ds = dst->strides[r - 1] * es;
    int64_t w0 = w->strides[0] * es, w1 = w->strides[1] * es;
    const uint8_t *pw = ing_ptr(w), *pb = bias ? ing_ptr(bias) : NULL;
    int64_t bs = bias ? bias->strides[0] * es : 0;
    ingot_tensor vx = *x, vd = *dst;
    vx.rank = vd.rank = r - 1;
    const ingot_tensor *ops[2] = {&vd, &vx};
    ing_it it;
    ing_it_init(&it, r - 1, x->shape, 2, ops);
    do {
        for (int64_t o = 0; o < OUT; o++) {
            double acc = pb ? ing_ld(bias->dtype, pb + o * bs) : 0.0;
            for (int64_t i = 0; i < IN; i++)
                acc += ing_ld(x->dtype, it.p[1] + i * xs) * ing_ld(w->dtype, pw + o * w0 + i * w1);
            ing_st(dst->dtype, it.p[0] + o * ds, acc);
        }
    } while (ing_it_next(&it));
    return INGOT_OK;
}

/* Spatial geometry padded to 3 axes (missing axes: size 1, kernel 1, stride 1). */
typedef struct geo3 {
    int64_t in[3], out[3], k[3], s[3], p[3], d[3];
    int64_t xs[3], ws[3], ds[3]; /* element strides of x, w, dst spatial axes */
} geo3;

static void geo_fill(geo3 *g, uint32_t nd, const ingot_tensor *x, const ingot_tensor *w,
                     const ingot_tensor *dst, const uint32_t *stride, const uint32_t *pad,
                     const uint32_t *dil, const uint32_t *kernel)
{
    for (int i = 0; i < 3; i++) {
        g->in[i] = g->out[i] = g->k[i] = g->s[i] = g->d[i] = 1;
        g->p[i] = g->xs[i] = g->ws[i] = g->ds[i] = 0;
    }
    for (uint32_t i = 0; i < nd; i++) {
        uint32_t j = 3 - nd + i;
        g->in[j] = x->shape[2 + i];
        g->out[j] = dst->shape[2 + i];
        g->k[j] = w ? w->shape[2 + i] : kernel[i];
        g->s[j] = stride[i] ? stride[i] : (w ? 1 : kernel[i]);
        g->p[j] = pad[i];
        g->d[j] = dil && dil[i] ? dil[i] : 1;
        g->xs[j] = x->strides[2 + i];
        g->ws[j] = w ? w->strides[2 + i] : 0;
        g->ds[j] = dst->strides[2 + i];
    }
}

ingot_status ingot__ref_conv(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *x,
                             const ingot_tensor *w, const ingot_tensor *bias,
                             const ingot_conv_params *p, ingot_error *err)
{
    (void)b;
    (void)err;
    geo3 g;
    geo_fill(&g, p->ndim, x, w, dst, p->stride, p->padding, p->dilation, NULL);
    int64_t N = x->shape[0], CO = w->shape[0], G = p->groups ? p->groups : 1;
    int64_t CIg = w->shape[1], COg = CO / G, es = (int64_t)ing_esize(x->dtype);
    const uint8_t *px = ing_ptr(x), *pw = ing_ptr(w), *pb = bias ? ing_ptr(bias) : NULL;
    uint8_t *pd = ing_ptr(dst);
    for (int64_t n = 0; n < N; n++)
        for (int64_t co = 0; co < CO; co++) {
            int64_t g0 = co / COg * CIg;
            for (int64_t o0 = 0; o0 < g.out[0]; o0++)
                for (int64_t o1 = 0; o1 < g.out[1]; o1++)
                    for (int64_t o2 = 0; o2 < g.out[2]; o2++) {
                        double acc = pb ? ing_ld(bias->dtype, pb + co * bias->strides[0] * es) : 0;
                        for (int64_t ci = 0; ci < CIg; ci++)
                            for (int64_t k0 = 0; k0 < g.k[0]; k0++) {
                                int64_t i0 = o0 * g.s[0] - g.p[0] + k0 * g.d[0];
                                if (i0 < 0 || i0 >= g.in[0]) continue;
                                for (int64_t k1 = 0; k1 < g.k[1]; k1++) {
                                    int64_t i1 = o1 * g.s[1] - g.p[1] + k1 * g.d[1];
                                    if (i1 < 0 || i1 >= g.in[1]) continue;
                                    for (int64_t k2 = 0; k2 < g.k[2]; k2++) {
                                        int64_t i2 = o2 * g.s[2] - g.p[2] + k2 * g.d[2];
                                        if (i2 < 0 || i2 >= g.in[2]) continue;
                                        int64_t xo = n * x->strides[0] + (g0 + ci) * x->strides[1] +
                                                     i0 * g.xs[0] + i1 * g.xs[1] + i2 * g.xs[2];
                                        int64_t wo = co * w->strides[0] + ci * w->strides[1] +
                                                     k0 * g.ws[0] + k1 * g.ws[1] + k2 * g.ws[2];
                                        acc += ing_ld(x->dtype, px + xo * es) *
                                               ing_ld(w->dtype, pw + wo * es);
                                    }
                                }
                            }
                        int64_t off = n * dst->strides[0] + co * dst->strides[1] + o0 * g.ds[0] +
                                      o1 * g.ds[1] + o2 * g.ds[2];
                        ing_st(dst->dtype, pd + off * es, acc);
                    }
        }
    return INGOT_OK;
}

ingot_status ingot__ref_pool(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *x,
                             const ingot_pool_params *p, ingot_error *err)
{
    (void)b;
    (void)err;
    geo3 g;
    geo_fill(&g, p->ndim, x, NULL, dst, p->stride, p->padding,
             p->kind == INGOT_POOL_MAX ? p->dilation : NULL, p->kernel);
    int64_t N = x->shape[0], C = x->shape[1], es = (int64_t)ing_esize(x->dtype);
    int64_t ksize = g.k[0] * g.k[1] * g.k[2];
    const uint8_t *px = ing_ptr(x);
    uint8_t *pd = ing_ptr(dst);
    bool mx = p->kind == INGOT_POOL_MAX;
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t o0 = 0; o0 < g.out[0]; o0++)
                for (int64_t o1 = 0; o1 < g.out[1]; o1++)
                    for (int64_t o2 = 0; o2 < g.out[2]; o2++) {
                        double acc = mx ? -INFINITY : 0.0;
                        int64_t cnt = 0;
                        for (int64_t k0 = 0; k0 < g.k[0]; k0++) {
                            int64_t i0 = o0 * g.s[0] - g.p[0] + k0 * g.d[0];
                            if (i0 < 0 || i0 >= g.in[0]) continue;
                            for (int64_t k1 = 0; k1 < g.k[1]; k1++) {
                                int64_t i1 = o1 * g.s[1] - g.p[1] + k1 * g.d[1];
                                if (i1 < 0 || i1 >= g.in[1]) continue;
                                for (int64_t k2 = 0; k2 < g.k[2]; k2++) {
                                    int64_t i2 = o2 * g.s[2] - g.p[2] + k2 * g.d[2];
                                    if (i2 < 0 || i2 >= g.in[2]) continue;
                                    int64_t xo = n * x->strides[0] + c * x->strides[1] +
                                                 i0 * g.xs[0] + i1 * g.xs[1] + i2 * g.xs[2];
                                    double v = ing_ld(x->dtype, px + xo * es);
                                    if (mx) acc = (v != v || v > acc) ? v : acc;
                                    else acc += v;
                                    cnt++;
                                }
                            }
                        }
                        if (!mx) {
                            /* torch: with padding, the divisor counts padded cells inside
                             * the padded input, not cells beyond it. */
                            int64_t div = cnt;
                            if (p->count_include_pad) {
                                div = 1;
                                int64_t o[3] = {o0, o1, o2};
                                for (int a = 0; a < 3; a++) {
                                    int64_t st = o[a] * g.s[a] - g.p[a];
                                    int64_t en = st + g.k[a];
                                    if (en > g.in[a] + g.p[a]) en = g.in[a] + g.p[a];
                                    div *= en - st;
                                }
                            }
                            acc = div ? acc / (double)div : 0.0;
                        }
                        (void)ksize;
                        int64_t off = n * dst->strides[0] + c * dst->strides[1] + o0 * g.ds[0] +
                                      o1 * g.ds[1] + o2 * g.ds[2];
                        ing_st(dst->dtype, pd + off * es, acc);
                    }
    return INGOT_OK;
}

/* Row walk over the last axis of x and dst. */
typedef void (*row_fn)(void *ctx, const uint8_t *px, uint8_t *pd, int64_t row_index);

static void rows_walk(const ingot_tensor *dst, const ingot_tensor *x, row_fn fn, void *ctx)
{
    ingot_tensor vx = *x, vd = *dst;
    vx.rank = vd.rank = x->rank - 1;
    const ingot_tensor *ops[2] = {&vd, &vx};
    ing_it it;
    ing_it_init(&it, x->rank - 1, x->shape, 2, ops);
    int64_t row = 0;
    do {
        fn(ctx, it.p[1], it.p[0], row++);
    } while (ing_it_next(&it));
}

typedef struct norm_ctx {
    const ingot_tensor *x, *dst, *w, *bias;
    double eps;
    int64_t n, xs, ds;
    bool rms;
} norm_ctx;

static void norm_row(void *vctx, const uint8_t *px, uint8_t *pd, int64_t row)
{
    (void)row;
    const norm_ctx *c = vctx;
    ingot_dtype dt = c->x->dtype;
    double mean = 0, var = 0;
    if (!c->rms) {
        for (int64_t i = 0; i < c->n; i++) mean += ing_ld(dt, px + i * c->xs);
        mean /= (double)c->n;
    }
    for (int64_t i = 0; i < c->n; i++) {
        double v = ing_ld(dt, px + i * c->xs) - mean;
        var += v * v;
    }
    var /= (double)c->n;
    double inv = 1.0 / sqrt(var + c->eps);
    int64_t es = (int64_t)ing_esize(dt);
    for (int64_t i = 0; i < c->n; i++) {
        double v = (ing_ld(dt, px + i * c->xs) - mean) * inv;
        if (c->w) v *= ing_ld(dt, ing_ptr(c->w) + i * c->w->strides[0] * es);
        if (c->bias) v += ing_ld(dt, ing_ptr(c->bias) + i * c->bias->strides[0] * es);
        ing_st(c->dst->dtype, pd + i * c->ds, v);
    }
}

static ingot_status norm_run(ingot_tensor *dst, const ingot_tensor *x, const ingot_tensor *w,
                             const ingot_tensor *bias, double eps, bool rms)
{
    int64_t es = (int64_t)ing_esize(x->dtype);
    norm_ctx c = {x, dst, w, bias, eps, x->shape[x->rank - 1], x->strides[x->rank - 1] * es,
                  dst->strides[x->rank - 1] * es, rms};
    rows_walk(dst, x, norm_row, &c);
    return INGOT_OK;
}

ingot_status ingot__ref_layer_norm(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *x,
                                   const ingot_tensor *w, const ingot_tensor *bias, double eps,
                                   ingot_error *err)
{
    (void)b;
    (void)err;
    return norm_run(dst, x, w, bias, eps, false);
}

ingot_status ingot__ref_rms_norm(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *x,
                                 const ingot_tensor *w, double eps, ingot_error *err)
{
    (void)b;
    (void)err;
    return norm_run(dst, x, w, NULL, eps, true);
}

ingot_status ingot__ref_batch_norm(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *x,
                                   const ingot_tensor *mean, const ingot_tensor *var,
                                   const ingot_tensor *w, const ingot_tensor *bias, double eps,
                                   ingot_error *err)
{
    (void)b;
    (void)err;
    const ingot_tensor *ops[2] = {dst, x};
    ing_it it;
    ing_it_init(&it, x->rank, x->shape, 2, ops);
    int64_t es = (int64_t)ing_esize(x->dtype);
    ingot_dtype dt = x->dtype;
    do {
        int64_t c = it.idx[1];
        double v = (ing_ld(dt, it.p[1]) - ing_ld(dt, ing_ptr(mean) + c * mean->strides[0] * es)) /
                   sqrt(ing_ld(dt, ing_ptr(var) + c * var->strides[0] * es) + eps);
        if (w) v *= ing_ld(dt, ing_ptr(w) + c * w->strides[0] * es);
        if (bias) v += ing_ld(dt, ing_ptr(bias) + c * bias->strides[0] * es);
        ing_st(dst->dtype, it.p[0], v);
    } while (ing_it_next(&it));
    return INGOT_OK;
}

typedef struct rope_ctx {
    const ingot_tensor *x, *dst, *pos;
    double theta;
    ingot_rope_mode mode;
    int64_t d, seq, xs, ds;
} rope_ctx;

static void rope_row(void *vctx, const uint8_t *px, uint8_t *pd, int64_t row)
{
    const rope_ctx *c = vctx;
    ingot_dtype dt = c->x->dtype;
    int64_t s = row % c->seq;
    double p = (double)ing_ldi(c->pos->dtype, ing_ptr(c->pos) + s * c->pos->strides[0] *
                                                                   (int64_t)ing_esize(c->pos->dtype));
    int64_t half = c->d / 2;
    for (int64_t i = 0; i < half; i++) {
        double ang = p * pow(c->theta, -2.0 * (double)i / (double)c->d);
        double cs = cos(ang), sn = sin(ang);
        int64_t i0 = c->mode == INGOT_ROPE_INTERLEAVED ? 2 * i : i;
        int64_t i1 = c->mode == INGOT_ROPE_INTERLEAVED ? 2 * i + 1 : i + half;
        double x0 = ing_ld(dt, px + i0 * c->xs), x1 = ing_ld(dt, px + i1 * c->xs);
        ing_st(c->dst->dtype, pd + i0 * c->ds, x0 * cs - x1 * sn);
        ing_st(c->dst->dtype, pd + i1 * c->ds, x0 * sn + x1 * cs);
    }
}

ingot_status ingot__ref_rope(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *x,
                             const ingot_tensor *pos, double theta, ingot_rope_mode mode,
                             ingot_error *err)
{
    (void)b;
    (void)err;
    int64_t es = (int64_t)ing_esize(x->dtype);
    uint32_t r = x->rank;
    rope_ctx c = {x, dst, pos, theta, mode, x->shape[r - 1], x->shape[r - 2],
                  x->strides[r - 1] * es, dst->strides[r - 1] * es};
    rows_walk(dst, x, rope_row, &c);
    return INGOT_OK;
}

ingot_status ingot__ref_attention(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *q,
                                  const ingot_tensor *k, const ingot_tensor *v,
                                  const ingot_attn_params *p, ingot_error *err)
{
    int64_t B = q->shape[0], H = q->shape[1], Lq = q->shape[2], D = q->shape[3];
    int64_t Hk = k->shape[1], Lk = k->shape[2], Dv = v->shape[3], grp = H / Hk;
    int64_t es = (int64_t)ing_esize(q->dtype);
    size_t nbytes = (size_t)(Lk ? Lk : 1) * sizeof(double);
    double *sc = ingot__alloc(&b->alloc, nbytes); /* documented scratch: Lk doubles per call */
    if (!sc)
        return ingot__err(err, INGOT_E_NOMEM, INGOT_NO_OFFSET, "attention", 9,
                          "attention: %zu bytes of scores", nbytes);
    const uint8_t *pq = ing_ptr(q), *pk = ing_ptr(k), *pv = ing_ptr(v);
    uint8_t *pd = ing_ptr(dst);
    for (int64_t bb = 0; bb < B; bb++)
        for (int64_t h = 0; h < H; h++) {
            int64_t hk = h / grp;
            for (int64_t i = 0; i < Lq; i++) {
                int64_t limit = p->causal ? i + (Lk - Lq) : Lk - 1; /* bottom-right aligned */
                double mx = -INFINITY;
                for (int64_t j = 0; j < Lk; j++) {
                    if (j > limit) {
                        sc[j] = -INFINITY;
                        continue;
                    }
                    double acc = 0;
                    for (int64_t d = 0; d < D; d++)
                        acc += ing_ld(q->dtype, pq + (bb * q->strides[0] + h * q->strides[1] +
                                                      i * q->strides[2] + d * q->strides[3]) * es) *
                               ing_ld(k->dtype, pk + (bb * k->strides[0] + hk * k->strides[1] +
                                                      j * k->strides[2] + d * k->strides[3]) * es);
                    sc[j] = acc * p->scale;
                    if (sc[j] > mx) mx = sc[j];
                }
                double sum = 0;
                for (int64_t j = 0; j < Lk; j++) {
                    sc[j] = j > limit || mx == -INFINITY ? 0.0 : exp(sc[j] - mx);
                    sum += sc[j];
                }
                for (int64_t e = 0; e < Dv; e++) {
                    double acc = 0;
                    for (int64_t j = 0; j <= limit && j < Lk; j++)
                        acc += sc[j] * ing_ld(v->dtype, pv + (bb * v->strides[0] +
                                                              hk * v->strides[1] +
                                                              j * v->strides[2] +
                                                              e * v->strides[3]) * es);
                    ing_st(dst->dtype,
                           pd + (bb * dst->strides[0] + h * dst->strides[1] + i * dst->strides[2] +
                                 e * dst->strides[3]) * es,
                           sum > 0 ? acc / sum : 0.0);
                }
            }
        }
    ingot__free(&b->alloc, sc, nbytes);
    return INGOT_OK;
}

typedef struct smax_ctx {
    ingot_dtype dt, ddt;
    int64_t n, as, ds;
    bool log;
} smax_ctx;

static void smax_row(void *vctx, const uint8_t *pa, uint8_t *pd)
{
    const smax_ctx *c = vctx;
    double mx = -INFINITY;
    bool nan = false;
    for (int64_t i = 0; i < c->n; i++) {
        double v = ing_ld(c->dt, pa + i * c->as);
        if (v != v) nan = true;
        if (v > mx) mx = v;
    }
    if (nan) mx = NAN;
    double sum = 0;
    for (int64_t i = 0; i < c->n; i++) sum += exp(ing_ld(c->dt, pa + i * c->as) - mx);
    double ls = log(sum);
    /* Read all inputs before writing: in-place rows are allowed. The second pass recomputes. */
    for (int64_t i = 0; i < c->n; i++) {
        double v = ing_ld(c->dt, pa + i * c->as) - mx;
        ing_st(c->ddt, pd + i * c->ds, c->log ? v - ls : exp(v) / sum);
    }
}

static void smax_walk(void *ctx, const uint8_t *pa, uint8_t *pd) { smax_row(ctx, pa, pd); }

ingot_status ingot__ref_softmax(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *a,
                                uint32_t axis, bool log, ingot_error *err)
{
    (void)b;
    (void)err;
    int64_t es = (int64_t)ing_esize(a->dtype);
    smax_ctx c = {a->dtype, dst->dtype, a->shape[axis], a->strides[axis] * es,
                  dst->strides[axis] * es, log};
    ingot_tensor va = *a, vd = *dst;
    va.shape[axis] = vd.shape[axis] = 1;
    const ingot_tensor *ops[2] = {&vd, &va};
    ing_it it;
    ing_it_init(&it, va.rank, va.shape, 2, ops);
    do {
        smax_walk(&c, it.p[1], it.p[0]);
    } while (ing_it_next(&it));
    return INGOT_OK;
}
