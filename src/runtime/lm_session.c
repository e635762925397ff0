/*
 * lm_session.c - sessions of a language model (include/ingot/lm.h): the KV cache and every
 * scratch buffer, allocated once for n_ctx positions and n_batch rows; ingot_lm_eval (token
 * rows through the architecture's forward pass in chunks, then the output norm and head); and
 * the pieces the forward passes share: causal attention over the cache composed from backend
 * ops (matmul, mask_fill, softmax, matmul), KV stores, linear layers.
 *
 * Layouts: activations are row-major F32 [rows, width]; the cache holds per layer K then V, each
 * [n_head_kv, n_ctx, head_dim], so one head's keys are a contiguous [len, head_dim] matrix.
 */
#include <math.h>
#include <string.h>

#include "alloc.h"
#include "backend_export.h"
#include "checked.h"
#include "error.h"
#include "ingot/quant.h"
#include "lm_internal.h"

#define DEFAULT_BATCH 128u
#define DEFAULT_CTX 4096u

static uint64_t sat_mul(uint64_t a, uint64_t b)
{
    uint64_t r;
    return ing_mul(a, b, &r) ? r : UINT64_MAX;
}
static uint64_t sat_add(uint64_t a, uint64_t b)
{
    uint64_t r;
    return ing_add(a, b, &r) ? r : UINT64_MAX;
}

/* ---- sizes ---- */

typedef struct plan {
    uint32_t n_ctx, n_batch;
    ingot_dtype kv_dtype;
    uint64_t qkv, ffn, kv, kvf, router, rope, moe_rows, moe_sel;
} plan;

static void make_plan(const ingot_lm *m, const ingot_lm_session_opts *o, plan *p)
{
    const ingot_lm_config *c = &m->cfg;
    memset(p, 0, sizeof *p);
    p->n_ctx = o && o->n_ctx ? o->n_ctx : (c->ctx_train < DEFAULT_CTX ? c->ctx_train : DEFAULT_CTX);
    if (!(o && o->n_ctx) && c->sliding_window && p->n_ctx > c->sliding_window)
        p->n_ctx = c->sliding_window; /* the default stays where attention is exact */
    p->n_batch = o && o->n_batch ? o->n_batch : DEFAULT_BATCH;
    if (p->n_batch > p->n_ctx) p->n_batch = p->n_ctx;
    p->kv_dtype = o && o->kv_dtype ? o->kv_dtype : INGOT_DTYPE_F32;
    uint64_t H = c->n_head, Hk = c->n_head_kv, hd = c->head_dim;
    p->qkv = c->arch == INGOT_LM_ARCH_GPT2 ? 3 * (uint64_t)c->dim : (H + 2 * Hk) * hd;
    p->ffn = c->ffn_dim;
    size_t es = p->kv_dtype == INGOT_DTYPE_F16 ? 2 : 4;
    p->kv = sat_mul(sat_mul(sat_mul(2 * (uint64_t)c->n_layer, Hk), sat_mul(p->n_ctx, hd)), es);
    p->kvf = p->kv_dtype == INGOT_DTYPE_F32 ? 0 : sat_mul(sat_mul(2 * Hk, p->n_ctx), hd * 4);
    p->router = c->n_expert;
    if (c->n_expert) { /* gathered rows and outputs; picks: ids and weights, k + 1 per row */
        p->moe_rows = sat_mul((uint64_t)p->n_batch * 4, c->dim);
        p->moe_sel = (uint64_t)p->n_batch * 8 * ((uint64_t)c->n_expert_used + 1);
    }
    p->rope = m->rope_scaled ? sat_mul((uint64_t)p->n_ctx * 4, c->rope_dims) : 0; /* cos, sin */
}

/* Bytes of every activation buffer for plan p (each rounded to 64 as the backend allocates). */
static uint64_t scratch_bytes(const ingot_lm *m, const plan *p)
{
    const ingot_lm_config *c = &m->cfg;
    uint64_t B = p->n_batch, D = c->dim, Q = (uint64_t)c->n_head * c->head_dim,
             KVW = (uint64_t)c->n_head_kv * c->head_dim;
    uint64_t f[] = {B * 4, (uint64_t)p->n_ctx * 4, B * D * 4, B * D * 4,
                    sat_mul(B, p->qkv * 4), B * Q * 4, B * KVW * 4, B * Q * 4, B * D * 4,
                    sat_mul(B, p->ffn * 4), sat_mul(B, p->ffn * 4),
                    sat_mul(B, (uint64_t)c->vocab * 4), p->kvf, B * p->router * 4 + 64, D * 4,
                    (uint64_t)c->vocab * 4 + (uint64_t)p->n_ctx * 4, B * m->lora_rank * 4,
                    B * m->lora_out * 4, p->rope, p->moe_rows, p->moe_rows, p->moe_sel};
    uint64_t t = 0;
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) t = sat_add(t, (f[i] + 63) & ~63ull);
    return t;
}

void ingot__lm_session_sizes(const ingot_lm *m, const ingot_lm_session_opts *o, uint64_t *kv,
                             uint64_t *scratch)
{
    plan p;
    make_plan(m, o, &p);
    *kv = p.kv;
    *scratch = scratch_bytes(m, &p);
}

/* ---- session lifetime ---- */

static ingot_status alloc_buf(ingot_lm_session *s, uint64_t n, ingot_buffer **out,
                              ingot_error *err)
{
    if (n > SIZE_MAX / 2)
        return ingot__err(err, INGOT_E_NOMEM, INGOT_NO_OFFSET, NULL, 0,
                          "lm: session buffer of %llu bytes", (unsigned long long)n);
    return ingot_buffer_alloc(s->m->be, n ? (size_t)n : 4, out, err);
}

INGOT_API ingot_status ingot_lm_session_new(ingot_lm *m, const ingot_lm_session_opts *opts,
                                            ingot_lm_session **out, ingot_error *err)
{
    if (!m || !out)
        return ingot__err(err, INGOT_E_MISUSE, INGOT_NO_OFFSET, NULL, 0,
                          "lm_session_new: NULL argument");
    *out = NULL;
    const ingot_lm_config *c = &m->cfg;
    plan p;
    make_plan(m, opts, &p);
    if (p.kv_dtype != INGOT_DTYPE_F32 && p.kv_dtype != INGOT_DTYPE_F16)
        return ingot__err(err, INGOT_E_BAD_TYPE, INGOT_NO_OFFSET, "kv_dtype", 8,
                          "lm: KV cache dtype %s (F32 or F16)",
                          ingot_dtype_name(p.kv_dtype) ? ingot_dtype_name(p.kv_dtype) : "?");
    if (p.n_ctx > LM_MAX_CTX || (c->arch == INGOT_LM_ARCH_GPT2 && p.n_ctx > c->ctx_train))
        return ingot__err(err, INGOT_E_RANGE, INGOT_NO_OFFSET, "n_ctx", 5,
                          "lm: context of %u positions; the model addresses %u", p.n_ctx,
                          c->arch == INGOT_LM_ARCH_GPT2 ? c->ctx_train : LM_MAX_CTX);
    if (c->sliding_window && p.n_ctx > c->sliding_window)
        return ingot__err(err, INGOT_E_UNSUPPORTED, INGOT_NO_OFFSET, "sliding_window", 14,
                          "lm: a %u-position session exceeds the model's %u-position attention "
                          "window (sliding-window attention is not implemented)", p.n_ctx,
                          c->sliding_window);
    ingot_lm_session *s = ingot__calloc(m->al, sizeof *s);
    if (!s) return ingot__err(err, INGOT_E_NOMEM, INGOT_NO_OFFSET, NULL, 0, "lm: session");
    s->m = m;
    s->n_ctx = p.n_ctx;
    s->n_batch = p.n_batch;
    s->kv_dtype = p.kv_dtype;
    uint64_t B = p.n_batch, D = c->dim, Q = (uint64_t)c->n_head * c->head_dim,
             KVW = (uint64_t)c->n_head_kv * c->head_dim;
    s->kv_layer_bytes = p.kv / c->n_layer;
    ingot_status st = INGOT_OK;
    struct { ingot_buffer **b; uint64_t n; } bufs[] = {
        {&s->ids, B * 4}, {&s->posb, (uint64_t)p.n_ctx * 4},
        {&s->x, B * D * 4}, {&s->xn, B * D * 4}, {&s->q, sat_mul(B, p.qkv * 4)},
        {&s->qr, B * Q * 4}, {&s->kr, B * KVW * 4},
        {&s->ao, B * Q * 4}, {&s->tmp, B * D * 4}, {&s->g, sat_mul(B, p.ffn * 4)},
        {&s->u, sat_mul(B, p.ffn * 4)}, {&s->logits, sat_mul(B, (uint64_t)c->vocab * 4)},
        {&s->kv, p.kv}, {&s->kvf, p.kvf}, {&s->router, B * p.router * 4 + 64},
        {&s->eo, D * 4}, {&s->lr, B * m->lora_rank * 4}, {&s->lo, B * m->lora_out * 4},
        {&s->rope_cs, p.rope}, {&s->mx, p.moe_rows}, {&s->my, p.moe_rows},
        {&s->msel, p.moe_sel},
    };
    for (size_t i = 0; st == INGOT_OK && i < sizeof bufs / sizeof bufs[0]; i++)
        st = alloc_buf(s, bufs[i].n, bufs[i].b, err);
    if (st == INGOT_OK) {
        s->tokens = ingot__alloc(m->al, (size_t)p.n_ctx * sizeof *s->tokens);
        s->last_logits = ingot__alloc(m->al, (size_t)c->vocab * sizeof *s->last_logits);
        if (!s->tokens || !s->last_logits)
            st = ingot__err(err, INGOT_E_NOMEM, INGOT_NO_OFFSET, NULL, 0, "lm: session");
    }
    if (st == INGOT_OK) {
        /* positions 0..n_ctx-1 for RoPE / learned positions */
        int32_t *pos = ingot_buffer_host(s->posb);
        for (uint32_t i = 0; i < p.n_ctx; i++) pos[i] = (int32_t)i;
        if (m->rope_scaled) { /* cos and sin of every (position, frequency), in double */
            uint32_t half = c->rope_dims / 2;
            float *cs = ingot_buffer_host(s->rope_cs), *sn = cs + (size_t)p.n_ctx * half;
            for (uint32_t t = 0; t < p.n_ctx; t++)
                for (uint32_t i = 0; i < half; i++) {
                    double a = (double)t * m->rope_freq[i];
                    cs[(size_t)t * half + i] = (float)cos(a);
                    sn[(size_t)t * half + i] = (float)sin(a);
                }
        }
    }
    if (st != INGOT_OK) {
        ingot_lm_session_free(s);
        return st;
    }
    m->nsessions++;
    s->counted = true;
    *out = s;
    return INGOT_OK;
}

INGOT_API void ingot_lm_session_free(ingot_lm_session *s)
{
    if (!s) return;
    ingot_buffer *bufs[] = {s->ids, s->posb, s->x, s->xn, s->q, s->qr, s->kr, s->ao, s->tmp,
                            s->g, s->u, s->logits, s->kv, s->kvf, s->router, s->eo, s->lr, s->lo,
                            s->rope_cs, s->mx, s->my, s->msel};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) ingot_buffer_free(bufs[i]);
    const ingot_allocator *al = s->m->al;
    if (s->tokens) ingot__free(al, s->tokens, (size_t)s->n_ctx * sizeof *s->tokens);
    if (s->last_logits)
        ingot__free(al, s->last_logits, (size_t)s->m->cfg.vocab * sizeof *s->last_logits);
    if (s->counted) s->m->nsessions--;
    ingot__free(al, s, sizeof *s);
}

INGOT_API uint32_t ingot_lm_session_pos(const ingot_lm_session *s) { return s ? s->pos : 0; }
INGOT_API uint32_t ingot_lm_session_ctx(const ingot_lm_session *s) { return s ? s->n_ctx : 0; }
INGOT_API const int32_t *ingot_lm_session_tokens(const ingot_lm_session *s)
{
    return s ? s->tokens : NULL;
}
INGOT_API const float *ingot_lm_session_logits(const ingot_lm_session *s)
{
    return s && s->have_logits ? s->last_logits : NULL;
}

INGOT_API ingot_status ingot_lm_session_rewind(ingot_lm_session *s, uint32_t pos,
                                               ingot_error *err)
{
    if (!s) return ingot__err(err, INGOT_E_MISUSE, INGOT_NO_OFFSET, NULL, 0, "session is NULL");
    if (pos > s->pos)
        return ingot__err(err, INGOT_E_RANGE, INGOT_NO_OFFSET, "pos", 3,
                          "lm: rewind to %u, the session is at %u", pos, s->pos);
    s->pos = pos;
    s->have_logits = false;
    return INGOT_OK;
}

INGOT_API ingot_status ingot_lm_session_copy(ingot_lm_session *dst, const ingot_lm_session *src,
                                             ingot_error *err)
{
    if (!dst || !src)
        return ingot__err(err, INGOT_E_MISUSE, INGOT_NO_OFFSET, NULL, 0, "session is NULL");
    if (dst == src) return INGOT_OK;
    if (dst->m != src->m || dst->kv_dtype != src->kv_dtype)
        return ingot__err(err, INGOT_E_MISUSE, INGOT_NO_OFFSET, NULL, 0,
                          "lm: session_copy between different models or KV dtypes");
    if (src->pos > dst->n_ctx)
        return ingot__err(err, INGOT_E_RANGE, INGOT_NO_OFFSET, "n_ctx", 5,
                          "lm: %u positions do not fit a %u-position session", src->pos,
                          dst->n_ctx);
    const ingot_lm_config *c = &src->m->cfg;
    for (uint32_t l = 0; l < c->n_layer && src->pos; l++)
        for (int v = 0; v < 2; v++) {
            ingot_tensor a, b;
            ingot__lm_kv_view(src, l, v, 0, src->pos, &a);
            ingot__lm_kv_view(dst, l, v, 0, src->pos, &b);
            ING_TRY(ingot_op_copy(src->m->be, &b, &a, err));
        }
    memcpy(dst->tokens, src->tokens, (size_t)src->pos * sizeof *src->tokens);
    memcpy(dst->last_logits, src->last_logits, (size_t)c->vocab * sizeof *src->last_logits);
    dst->have_logits = src->have_logits;
    dst->pos = src->pos;
    return INGOT_OK;
}

/* ---- views and shared pieces ---- */

void ingot__lm_view2(ingot_tensor *t, ingot_buffer *buf, uint64_t off, int64_t rows,
                     int64_t cols)
{
    memset(t, 0, sizeof *t);
    t->buf = buf;
    t->offset = off * 4;
    t->dtype = INGOT_DTYPE_F32;
    t->rank = 2;
    t->shape[0] = rows;
    t->shape[1] = cols;
    t->strides[0] = cols;
    t->strides[1] = 1;
}

void ingot__lm_kv_view(const ingot_lm_session *s, uint32_t layer, bool value, uint32_t from,
                       uint32_t len, ingot_tensor *t)
{
    const ingot_lm_config *c = &s->m->cfg;
    size_t es = s->kv_dtype == INGOT_DTYPE_F16 ? 2 : 4;
    uint64_t per = (uint64_t)c->n_head_kv * s->n_ctx * c->head_dim * es;
    memset(t, 0, sizeof *t);
    t->buf = s->kv;
    t->offset = s->kv_layer_bytes * layer + (value ? per : 0) +
                (uint64_t)from * c->head_dim * es;
    t->dtype = s->kv_dtype;
    t->rank = 3;
    t->shape[0] = c->n_head_kv;
    t->shape[1] = len;
    t->shape[2] = c->head_dim;
    t->strides[0] = (int64_t)s->n_ctx * c->head_dim;
    t->strides[1] = c->head_dim;
    t->strides[2] = 1;
}

ingot_status ingot__lm_kv_store(ingot_lm_session *s, uint32_t layer, bool value,
                                const ingot_tensor *rows, uint32_t n, ingot_error *err)
{
    const ingot_lm_config *c = &s->m->cfg;
    ingot_tensor src = *rows, dst;
    /* rows [n, Hkv*hd] -> [Hkv, n, hd] */
    int64_t rs = rows->strides[0];
    src.rank = 3;
    src.shape[0] = c->n_head_kv;
    src.shape[1] = n;
    src.shape[2] = c->head_dim;
    src.strides[0] = c->head_dim * rows->strides[1];
    src.strides[1] = rs;
    src.strides[2] = rows->strides[1];
    ingot__lm_kv_view(s, layer, value, s->pos, n, &dst);
    if (s->kv_dtype == INGOT_DTYPE_F32) return ingot_op_copy(s->m->be, &dst, &src, err);
    return ingot_op_cast(s->m->be, &dst, &src, err);
}

ingot_status ingot__lm_linear(ingot_lm_session *s, ingot_tensor *dst, const ingot_tensor *x,
                              const lm_w *w, const lm_w *b, ingot_error *err)
{
    ingot_backend *be = s->m->be;
    if (w->rp && !w->lora) { /* the repacked copy: one row as decode's job, else the GEMM */
        const ingot_tensor *wt[1] = {&w->t}, *bt[1] = {b && b->present ? &b->t : NULL};
        const void *rp[1] = {w->rp};
        ingot_tensor *d1[1] = {dst};
        if (ingot__linear_multi(be, 1, d1, x, wt, bt, rp)) return INGOT_OK;
        bool done = false;
        ING_TRY(ingot__linear_q4kr(be, dst, x, &w->t, bt[0], w->rp, &done, err));
        if (done) return INGOT_OK; /* (else: the op on the mapping, faulted back in) */
    }
    ING_TRY(ingot_op_linear(be, dst, x, &w->t, b && b->present ? &b->t : NULL, err));
    if (!w->lora) return INGOT_OK;
    /* run-time LoRA: dst += lscale * B (A x) */
    ingot_tensor ax, bax;
    int64_t n = dst->shape[0];
    ingot__lm_view2(&ax, s->lr, 0, n, w->la.shape[0]);
    ingot__lm_view2(&bax, s->lo, 0, n, w->lb.shape[0]);
    ING_TRY(ingot_op_linear(be, &ax, x, &w->la, NULL, err));
    ING_TRY(ingot_op_linear(be, &bax, &ax, &w->lb, NULL, err));
    ING_TRY(ingot_op_binary_scalar(be, INGOT_BINARY_MUL, &bax, &bax, w->lscale, err));
    return ingot_op_binary(be, INGOT_BINARY_ADD, dst, dst, &bax, err);
}

/* The fused job of ingot__lm_linears; false when it does not apply (nothing done then). */
static bool linears_fused(ingot_lm_session *s, uint32_t n, ingot_tensor *const dst[],
                          const ingot_tensor *x, const lm_w *const w[], const lm_w *const b[])
{
    const ingot_tensor *wt[8] = {0}, *bt[8] = {0};
    const void *rp[8] = {0};
    if (n > 8 || s->m->fuse_off) return false;
    for (uint32_t i = 0; i < n; i++) {
        if (w[i]->lora) return false;
        wt[i] = &w[i]->t;
        bt[i] = b && b[i]->present ? &b[i]->t : NULL;
        rp[i] = w[i]->rp;
    }
    return ingot__linear_multi(s->m->be, n, dst, x, wt, bt, rp);
}

ingot_status ingot__lm_linears(ingot_lm_session *s, uint32_t n, ingot_tensor *const dst[],
                               const ingot_tensor *x, const lm_w *const w[],
                               const lm_w *const b[], ingot_error *err)
{
    if (linears_fused(s, n, dst, x, w, b)) return INGOT_OK;
    for (uint32_t i = 0; i < n; i++)
        ING_TRY(ingot__lm_linear(s, dst[i], x, w[i], b ? b[i] : NULL, err));
    return INGOT_OK;
}

/* q rows [n, H*hd] as [1, H, n, hd], the cache's keys K and values V as [1, Hkv, L, hd], the
 * output rows likewise: the runtime's kernels where they apply, else (with op) the backend's
 * op; *ran says whether it ran. */
static ingot_status attend(ingot_lm_session *s, const ingot_tensor *q, uint32_t n, uint32_t L,
                           const ingot_tensor *K, const ingot_tensor *V, bool op, bool *ran,
                           ingot_error *err)
{
    const ingot_lm_config *c = &s->m->cfg;
    ingot_backend *be = s->m->be;
    int64_t Hk = c->n_head_kv, hd = c->head_dim;
    ingot_tensor qv = *q, kv = *K, vv = *V, dv;
    qv.rank = kv.rank = vv.rank = 4;
    int64_t qs[4] = {1, c->n_head, n, hd}, qst[4] = {(int64_t)n * q->strides[0],
                                                     (int64_t)hd * q->strides[1], q->strides[0],
                                                     q->strides[1]};
    memcpy(qv.shape, qs, sizeof qs);
    memcpy(qv.strides, qst, sizeof qst);
    int64_t ks[4] = {1, Hk, L, hd}, kst[4] = {Hk * K->strides[0], K->strides[0], K->strides[1], 1};
    memcpy(kv.shape, ks, sizeof ks);
    memcpy(kv.strides, kst, sizeof kst);
    memcpy(vv.shape, ks, sizeof ks);
    memcpy(vv.strides, kst, sizeof kst);
    ingot__lm_view2(&dv, s->ao, 0, n, (int64_t)c->n_head * hd);
    dv.rank = 4;
    int64_t dst[4] = {(int64_t)n * c->n_head * hd, hd, (int64_t)c->n_head * hd, 1};
    memcpy(dv.shape, qs, sizeof qs);
    memcpy(dv.strides, dst, sizeof dst);
    ingot_attn_params ap = {0};
    ap.causal = true; /* bottom-right: query i sees keys 0 .. pos + i */
    /* prefill rows with head sizes of 16k: the op's blocked kernel at the AVX-512 levels (16
     * query rows share each key block); else eight keys per step (or, decoding, four query
     * heads of a KV head at a time), else the op */
    bool blocked = n >= 16 && hd % 16 == 0 && hd <= 256 &&
                   ingot_cpu_isa_current() >= INGOT_CPU_ISA_AVX512;
    *ran = true;
    if (!blocked && ingot__attention_keys8(be, &dv, &qv, &kv, &vv, &ap)) return INGOT_OK;
    if (!op) {
        *ran = false;
        return INGOT_OK;
    }
    return ingot_op_attention(be, &dv, &qv, &kv, &vv, &ap, err);
}

ingot_status ingot__lm_attention(ingot_lm_session *s, uint32_t layer, const ingot_tensor *q,
                                 uint32_t n, ingot_error *err)
{
    const ingot_lm_config *c = &s->m->cfg;
    ingot_backend *be = s->m->be;
    uint32_t L = s->pos + n, Hk = c->n_head_kv, hd = c->head_dim;
    ingot_tensor K, V;
    ingot__lm_kv_view(s, layer, false, 0, L, &K);
    ingot__lm_kv_view(s, layer, true, 0, L, &V);
    bool ran = false;
    if (s->kv_dtype != INGOT_DTYPE_F32 && n == 1) { /* decode reads an F16 cache in place */
        ING_TRY(attend(s, q, n, L, &K, &V, false, &ran, err));
        if (ran) return INGOT_OK;
    }
    if (s->kv_dtype != INGOT_DTYPE_F32) {
        /* F16 cache: this layer's keys and values to F32 scratch first */
        ingot_tensor kf = K, vf = V;
        kf.buf = vf.buf = s->kvf;
        kf.dtype = vf.dtype = INGOT_DTYPE_F32;
        kf.offset = 0;
        vf.offset = (uint64_t)Hk * s->n_ctx * hd * 4;
        ING_TRY(ingot_op_cast(be, &kf, &K, err));
        ING_TRY(ingot_op_cast(be, &vf, &V, err));
        K = kf;
        V = vf;
    }
    return attend(s, q, n, L, &K, &V, true, &ran, err);
}

/* ---- embedding rows, output head, eval ---- */

/* x[i] = table row ids[i] (decoded from the file: no allocation, any dtype). */
static ingot_status embed_rows(ingot_lm_session *s, const lm_table *t, const int32_t *ids,
                               uint32_t n, ingot_buffer *dstbuf, ingot_error *err)
{
    uint64_t D = s->m->cfg.dim;
    float *dst = ingot_buffer_host(dstbuf);
    if (t->copy.present) {
        const float *src = ingot_buffer_host(t->copy.buf);
        for (uint32_t i = 0; i < n; i++) memcpy(dst + i * D, src + (uint64_t)ids[i] * D, D * 4);
        return INGOT_OK;
    }
    for (uint32_t i = 0; i < n; i++)
        ING_TRY(ingot_file_tensor_dequantize(s->m->f, t->index, (uint64_t)ids[i] * D, D,
                                             dst + i * D, err));
    return INGOT_OK;
}

ingot_status ingot__lm_embed(ingot_lm_session *s, const int32_t *tokens, uint32_t n,
                             ingot_error *err)
{
    ingot_lm *m = s->m;
    ING_TRY(embed_rows(s, &m->tok_embd, tokens, n, s->x, err));
    if (m->cfg.arch == INGOT_LM_ARCH_GPT2) {
        const int32_t *pos = (const int32_t *)ingot_buffer_host(s->posb) + s->pos;
        ING_TRY(embed_rows(s, &m->pos_embd, pos, n, s->xn, err));
        ingot_tensor x, p;
        ingot__lm_view2(&x, s->x, 0, n, m->cfg.dim);
        ingot__lm_view2(&p, s->xn, 0, n, m->cfg.dim);
        ING_TRY(ingot_op_binary(m->be, INGOT_BINARY_ADD, &x, &x, &p, err));
    }
    return INGOT_OK;
}

/* Output norm and head for rows [first, first+n) of s->x into s->logits [n, vocab]. */
static ingot_status head(ingot_lm_session *s, uint32_t first, uint32_t n, ingot_error *err)
{
    ingot_lm *m = s->m;
    const ingot_lm_config *c = &m->cfg;
    ingot_tensor x, xn, lg;
    ingot__lm_view2(&x, s->x, (uint64_t)first * c->dim, n, c->dim);
    ingot__lm_view2(&xn, s->xn, 0, n, c->dim);
    ingot__lm_view2(&lg, s->logits, 0, n, c->vocab);
    if (c->arch == INGOT_LM_ARCH_GPT2)
        ING_TRY(ingot_op_layer_norm(m->be, &xn, &x, &m->out_norm.t, &m->out_norm_b.t,
                                    c->norm_eps, err));
    else
        ING_TRY(ingot_op_rms_norm(m->be, &xn, &x, &m->out_norm.t, c->norm_eps, err));
    /* (the head carries no LoRA: ingot__lm_linear is the op, or its repacked copy) */
    return ingot__lm_linear(s, &lg, &xn, &m->output, NULL, err);
}

INGOT_API ingot_status ingot_lm_eval(ingot_lm_session *s, const int32_t *tokens, size_t n,
                                     ingot_lm_logits which, float *logits, size_t cap,
                                     ingot_error *err)
{
    if (!s || (n && !tokens))
        return ingot__err(err, INGOT_E_MISUSE, INGOT_NO_OFFSET, NULL, 0, "lm_eval: NULL argument");
    ingot_lm *m = s->m;
    const ingot_lm_config *c = &m->cfg;
    if (which != INGOT_LM_LOGITS_NONE && which != INGOT_LM_LOGITS_LAST &&
        which != INGOT_LM_LOGITS_ALL)
        return ingot__err(err, INGOT_E_MISUSE, INGOT_NO_OFFSET, NULL, 0,
                          "lm_eval: unknown logits mode %d", (int)which);
    if (n == 0) return INGOT_OK;
    if (n > s->n_ctx - s->pos)
        return ingot__err(err, INGOT_E_RANGE, INGOT_NO_OFFSET, "n_ctx", 5,
                          "lm: %zu tokens at position %u overflow the %u-position cache", n,
                          s->pos, s->n_ctx);
    uint64_t need = which == INGOT_LM_LOGITS_ALL ? (uint64_t)n * c->vocab
                    : which == INGOT_LM_LOGITS_LAST ? c->vocab : 0;
    if (need && (!logits || cap < need))
        return ingot__err(err, INGOT_E_RANGE, INGOT_NO_OFFSET, "logits", 6,
                          "lm: room for %zu logits, %llu needed", logits ? cap : 0,
                          (unsigned long long)need);
    for (size_t i = 0; i < n; i++)
        if (tokens[i] < 0 || (uint32_t)tokens[i] >= c->vocab)
            return ingot__err(err, INGOT_E_RANGE, INGOT_NO_OFFSET, "tokens", 6,
                              "lm: token %d at index %zu is outside the vocabulary [0, %u)",
                              tokens[i], i, c->vocab);
    s->have_logits = false;
    for (size_t done = 0; done < n;) {
        uint32_t k = n - done < s->n_batch ? (uint32_t)(n - done) : s->n_batch;
        memcpy(ingot_buffer_host(s->ids), tokens + done, (size_t)k * 4);
        ING_TRY(ingot__lm_embed(s, tokens + done, k, err));
        ING_TRY(c->arch == INGOT_LM_ARCH_GPT2 ? ingot__gpt2_forward(s, k, err)
                                              : ingot__llama_forward(s, k, err));
        memcpy(s->tokens + s->pos, tokens + done, (size_t)k * 4);
        s->pos += k;
        bool last = done + k == n;
        const float *lg = ingot_buffer_host(s->logits);
        if (which == INGOT_LM_LOGITS_ALL) {
            ING_TRY(head(s, 0, k, err));
            memcpy(logits + done * c->vocab, lg, (size_t)k * c->vocab * 4);
            if (last) memcpy(s->last_logits, lg + (size_t)(k - 1) * c->vocab, (size_t)c->vocab * 4);
        } else if (which == INGOT_LM_LOGITS_LAST && last) {
            ING_TRY(head(s, k - 1, 1, err));
            memcpy(s->last_logits, lg, (size_t)c->vocab * 4);
            if (logits != s->last_logits) memcpy(logits, lg, (size_t)c->vocab * 4);
        }
        if (last && which != INGOT_LM_LOGITS_NONE) s->have_logits = true;
        done += k;
    }
    return INGOT_OK;
}
