/*
 * llama.c - the Llama-family forward pass (Llama 1/2/3, Mistral, TinyLlama, llama2.c models,
 * Qwen2-style q/k/v biases, Mixtral-style experts), one named backend op per step in the order
 * of llama2.c's forward(): RMSNorm, q/k/v projections, RoPE (interleaved or half-split, as the
 * weights were trained), K/V into the cache, grouped-query causal attention, output projection
 * and residual; RMSNorm, SwiGLU MLP (or the router's top-k experts) and residual.
 */
#include <math.h>
#include <string.h>

#include "backend_export.h"
#include "error.h"
#include "lm_internal.h"

/* [rows, heads * hd] rows viewed as [heads, rows, hd] (the rope op's [..., seq, d]). */
static void heads_view(ingot_tensor *out, const ingot_tensor *rows, uint32_t heads, uint32_t hd)
{
    *out = *rows;
    out->rank = 3;
    out->shape[0] = heads;
    out->shape[1] = rows->shape[0];
    out->shape[2] = hd;
    out->strides[0] = hd;
    out->strides[1] = rows->strides[0];
    out->strides[2] = 1;
}

/* One half of the rotation pairs among the first `rot` dims of a [heads, n, hd] view, as
 * [heads, n, rot/2]: the first (second = false) or second elements, interleaved (x[2i],
 * x[2i+1]) or half-split (x[i], x[i + rot/2]). */
static void pair_view(ingot_tensor *out, const ingot_tensor *t, int64_t rot, ingot_rope_mode mode,
                      bool second)
{
    int64_t half = rot / 2, st = t->strides[2];
    *out = *t;
    out->shape[2] = half;
    if (mode == INGOT_ROPE_INTERLEAVED) {
        out->strides[2] = 2 * st;
        out->offset += second ? (uint64_t)st * 4 : 0;
    } else {
        out->offset += second ? (uint64_t)(half * st) * 4 : 0;
    }
}

/* dst = RoPE(x), both [heads, n, hd] at positions s->pos..: the backend's rope op, or with
 * scaled frequencies or partial rotary (m->rope_scaled) the rotation from the session's cos/sin
 * tables: first' = first cos - second sin, second' = first sin + second cos (six binary ops,
 * the tables broadcast over the heads, temporaries in s->ao, free until attention), the pairs
 * within the first rope_dims of each head; the dims after them are copied unrotated. */
static ingot_status rope(ingot_lm_session *s, ingot_tensor *dst, const ingot_tensor *x,
                         const ingot_tensor *pos, uint32_t n, ingot_error *err)
{
    const ingot_lm_config *c = &s->m->cfg;
    ingot_backend *be = s->m->be;
    if (!s->m->rope_scaled) return ingot_op_rope(be, dst, x, pos, c->rope_theta, c->rope_mode, err);
    int64_t heads = x->shape[0], rot = c->rope_dims, half = rot / 2;
    ingot_tensor x1, x2, d1, d2, cs, sn, t1, t2;
    if (rot < (int64_t)c->head_dim) { /* partial rotary: the rest of each head as it is */
        ingot_tensor xp = *x, dp = *dst;
        xp.shape[2] = dp.shape[2] = (int64_t)c->head_dim - rot;
        xp.offset += (uint64_t)(rot * x->strides[2]) * 4;
        dp.offset += (uint64_t)(rot * dst->strides[2]) * 4;
        ING_TRY(ingot_op_copy(be, &dp, &xp, err));
    }
    pair_view(&x1, x, rot, c->rope_mode, false);
    pair_view(&x2, x, rot, c->rope_mode, true);
    pair_view(&d1, dst, rot, c->rope_mode, false);
    pair_view(&d2, dst, rot, c->rope_mode, true);
    ingot__lm_view2(&cs, s->rope_cs, (uint64_t)s->pos * half, n, half);
    ingot__lm_view2(&sn, s->rope_cs, ((uint64_t)s->n_ctx + s->pos) * half, n, half);
    cs.rank = sn.rank = 3; /* [1, n, half] */
    cs.shape[2] = sn.shape[2] = half;
    cs.shape[1] = sn.shape[1] = n;
    cs.shape[0] = sn.shape[0] = 1;
    cs.strides[2] = sn.strides[2] = 1;
    cs.strides[1] = sn.strides[1] = half;
    cs.strides[0] = sn.strides[0] = (int64_t)n * half;
    ingot__lm_view2(&t1, s->ao, 0, heads * n, half);
    ingot__lm_view2(&t2, s->ao, (uint64_t)(heads * n * half), heads * n, half);
    t1.rank = t2.rank = 3;
    t1.shape[0] = t2.shape[0] = heads;
    t1.shape[1] = t2.shape[1] = n;
    t1.shape[2] = t2.shape[2] = half;
    t1.strides[0] = t2.strides[0] = (int64_t)n * half;
    t1.strides[1] = t2.strides[1] = half;
    t1.strides[2] = t2.strides[2] = 1;
    ING_TRY(ingot_op_binary(be, INGOT_BINARY_MUL, &t1, &x1, &cs, err));
    ING_TRY(ingot_op_binary(be, INGOT_BINARY_MUL, &t2, &x2, &sn, err));
    ING_TRY(ingot_op_binary(be, INGOT_BINARY_SUB, &d1, &t1, &t2, err));
    ING_TRY(ingot_op_binary(be, INGOT_BINARY_MUL, &t1, &x1, &sn, err));
    ING_TRY(ingot_op_binary(be, INGOT_BINARY_MUL, &t2, &x2, &cs, err));
    return ingot_op_binary(be, INGOT_BINARY_ADD, &d2, &t1, &t2, err);
}

/* Mixtral routing: softmax over the router logits, the top k experts (ties: lower index),
 * their probabilities renormalised to sum 1; the SwiGLU experts' outputs weighted and summed
 * into tmp. One row (decode): its k experts through the GEMV. Several rows (prefill): each
 * expert once, over the rows that picked it gathered into s->mx (the GEMM), its weighted output
 * rows added back to theirs, experts in index order. */
static ingot_status moe(ingot_lm_session *s, const lm_layer *ly, const ingot_tensor *xn,
                        ingot_tensor *tmp, uint32_t n, ingot_error *err)
{
    ingot_lm *m = s->m;
    const ingot_lm_config *c = &m->cfg;
    ingot_backend *be = m->be;
    uint32_t E = c->n_expert, K = c->n_expert_used, D = c->dim;
    ingot_tensor r;
    ingot__lm_view2(&r, s->router, 0, n, E);
    ING_TRY(ingot__lm_linear(s, &r, xn, &ly->router, NULL, err)); /* + run-time LoRA */
    ING_TRY(ingot_op_softmax(be, &r, &r, 1, false, err));
    ING_TRY(ingot_op_fill(be, tmp, 0.0, err));
    const float *p = ingot_buffer_host(s->router);
    uint32_t *sel = ingot_buffer_host(s->msel), *rows = sel + (size_t)s->n_batch * K;
    float *sw = (float *)(void *)(rows + s->n_batch), *rw = sw + (size_t)s->n_batch * K;
    for (uint32_t i = 0; i < n; i++) {
        const float *pi = p + (size_t)i * E;
        bool used[LM_MAX_EXPERTS] = {false};
        double sum = 0;
        for (uint32_t k = 0; k < K; k++) {
            uint32_t best = E;
            for (uint32_t e = 0; e < E; e++)
                if (!used[e] && (best == E || pi[e] > pi[best])) best = e;
            used[best] = true;
            sel[(size_t)i * K + k] = best;
            sum += pi[best];
        }
        for (uint32_t k = 0; k < K; k++)
            sw[(size_t)i * K + k] = (float)(sum > 0 ? pi[sel[(size_t)i * K + k]] / sum : 0.0);
    }
    ingot_tensor g, u, eo;
    if (n == 1) {
        ingot__lm_view2(&g, s->g, 0, 1, c->ffn_dim);
        ingot__lm_view2(&u, s->u, 0, 1, c->ffn_dim);
        ingot__lm_view2(&eo, s->eo, 0, 1, D);
        for (uint32_t k = 0; k < K; k++) {
            const lm_w *ex = &ly->exp[(size_t)sel[k] * 3], *gu[2] = {&ex[0], &ex[1]};
            ingot_tensor *gud[2] = {&g, &u};
            ING_TRY(ingot__lm_linears(s, 2, gud, xn, gu, NULL, err));
            ING_TRY(ingot_op_activation(be, INGOT_ACT_SILU, &g, &g, 0.0, err));
            ING_TRY(ingot_op_binary(be, INGOT_BINARY_MUL, &g, &g, &u, err));
            ING_TRY(ingot__lm_linear(s, &eo, &g, &ex[2], NULL, err));
            ING_TRY(ingot_op_binary_scalar(be, INGOT_BINARY_MUL, &eo, &eo, sw[k], err));
            ING_TRY(ingot_op_binary(be, INGOT_BINARY_ADD, tmp, tmp, &eo, err));
        }
        return INGOT_OK;
    }
    const float *xp = (const float *)(const void *)((const uint8_t *)ingot_buffer_host(xn->buf) +
                                                    xn->offset);
    float *tp = (float *)(void *)((uint8_t *)ingot_buffer_host(tmp->buf) + tmp->offset);
    float *mx = ingot_buffer_host(s->mx);
    const float *my = ingot_buffer_host(s->my);
    int64_t xs = xn->strides[0], ts = tmp->strides[0];
    for (uint32_t e = 0; e < E; e++) {
        uint32_t cnt = 0;
        for (uint32_t i = 0; i < n; i++)
            for (uint32_t k = 0; k < K; k++)
                if (sel[(size_t)i * K + k] == e) {
                    rows[cnt] = i;
                    rw[cnt] = sw[(size_t)i * K + k];
                    memcpy(mx + (size_t)cnt * D, xp + (size_t)i * xs, (size_t)D * 4);
                    cnt++;
                }
        if (!cnt) continue;
        const lm_w *ex = &ly->exp[(size_t)e * 3];
        ingot_tensor X, Y;
        ingot__lm_view2(&X, s->mx, 0, cnt, D);
        ingot__lm_view2(&Y, s->my, 0, cnt, D);
        ingot__lm_view2(&g, s->g, 0, cnt, c->ffn_dim);
        ingot__lm_view2(&u, s->u, 0, cnt, c->ffn_dim);
        ING_TRY(ingot__lm_linear(s, &g, &X, &ex[0], NULL, err));
        ING_TRY(ingot__lm_linear(s, &u, &X, &ex[1], NULL, err));
        ING_TRY(ingot_op_activation(be, INGOT_ACT_SILU, &g, &g, 0.0, err));
        ING_TRY(ingot_op_binary(be, INGOT_BINARY_MUL, &g, &g, &u, err));
        ING_TRY(ingot__lm_linear(s, &Y, &g, &ex[2], NULL, err));
        for (uint32_t j = 0; j < cnt; j++) { /* as the one-row path: (w y) rounded, then added */
            float *t = tp + (size_t)rows[j] * ts;
            const float *y = my + (size_t)j * D;
            for (uint32_t d = 0; d < D; d++) t[d] += rw[j] * y[d];
        }
    }
    return INGOT_OK;
}

ingot_status ingot__llama_forward(ingot_lm_session *s, uint32_t n, ingot_error *err)
{
    ingot_lm *m = s->m;
    const ingot_lm_config *c = &m->cfg;
    ingot_backend *be = m->be;
    uint32_t H = c->n_head, Hk = c->n_head_kv, hd = c->head_dim;
    uint64_t D = c->dim, Q = (uint64_t)H * hd, KVW = (uint64_t)Hk * hd, F = c->ffn_dim;
    ingot_tensor x, xn, q, k, v, qr, kr, ao, tmp, g, u, pos, qh, qrh, kh, krh, kc;
    ingot__lm_view2(&x, s->x, 0, n, D);
    ingot__lm_view2(&xn, s->xn, 0, n, D);
    ingot__lm_view2(&q, s->q, 0, n, Q);
    ingot__lm_view2(&k, s->q, n * Q, n, KVW);
    ingot__lm_view2(&v, s->q, n * (Q + KVW), n, KVW);
    ingot__lm_view2(&qr, s->qr, 0, n, Q);
    ingot__lm_view2(&kr, s->kr, 0, n, KVW);
    ingot__lm_view2(&ao, s->ao, 0, n, Q);
    ingot__lm_view2(&tmp, s->tmp, 0, n, D);
    ingot__lm_view2(&g, s->g, 0, n, F);
    ingot__lm_view2(&u, s->u, 0, n, F);
    memset(&pos, 0, sizeof pos);
    pos.buf = s->posb;
    pos.offset = (uint64_t)s->pos * 4;
    pos.dtype = INGOT_DTYPE_I32;
    pos.rank = 1;
    pos.shape[0] = n;
    pos.strides[0] = 1;
    heads_view(&qh, &q, H, hd);
    heads_view(&qrh, &qr, H, hd);
    heads_view(&kh, &k, Hk, hd);
    heads_view(&krh, &kr, Hk, hd);
    bool f32kv = s->kv_dtype == INGOT_DTYPE_F32;
    for (uint32_t l = 0; l < c->n_layer; l++) {
        const lm_layer *ly = &m->layers[l];
        ING_TRY(ingot_op_rms_norm(be, &xn, &x, &ly->attn_norm.t, c->norm_eps, err));
        const lm_w *qkv[3] = {&ly->wq, &ly->wk, &ly->wv}, *qkvb[3] = {&ly->bq, &ly->bk, &ly->bv};
        ingot_tensor *qkvd[3] = {&q, &k, &v};
        ING_TRY(ingot__lm_linears(s, 3, qkvd, &xn, qkv, qkvb, err));
        ING_TRY(rope(s, &qrh, &qh, &pos, n, err));
        if (f32kv) { /* rotated keys straight into the cache */
            ingot__lm_kv_view(s, l, false, s->pos, n, &kc);
            ING_TRY(rope(s, &kc, &kh, &pos, n, err));
        } else {
            ING_TRY(rope(s, &krh, &kh, &pos, n, err));
            ING_TRY(ingot__lm_kv_store(s, l, false, &kr, n, err));
        }
        ING_TRY(ingot__lm_kv_store(s, l, true, &v, n, err));
        ING_TRY(ingot__lm_attention(s, l, &qr, n, err));
        ING_TRY(ingot__lm_linear(s, &tmp, &ao, &ly->wo, &ly->bo, err));
        ING_TRY(ingot_op_binary(be, INGOT_BINARY_ADD, &x, &x, &tmp, err));
        ING_TRY(ingot_op_rms_norm(be, &xn, &x, &ly->ffn_norm.t, c->norm_eps, err));
        if (c->n_expert) {
            ING_TRY(moe(s, ly, &xn, &tmp, n, err));
        } else {
            const lm_w *gu[2] = {&ly->w_gate, &ly->w_up};
            ingot_tensor *gud[2] = {&g, &u};
            ING_TRY(ingot__lm_linears(s, 2, gud, &xn, gu, NULL, err));
            ING_TRY(ingot_op_activation(be, INGOT_ACT_SILU, &g, &g, 0.0, err));
            ING_TRY(ingot_op_binary(be, INGOT_BINARY_MUL, &g, &g, &u, err));
            ING_TRY(ingot__lm_linear(s, &tmp, &g, &ly->w_down, NULL, err));
        }
        ING_TRY(ingot_op_binary(be, INGOT_BINARY_ADD, &x, &x, &tmp, err));
    }
    return INGOT_OK;
}
