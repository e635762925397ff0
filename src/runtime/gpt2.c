/*
 * gpt2.c - the GPT-2 forward pass: LayerNorm, the fused q/k/v projection with its bias (the
 * three are column slices of one output, no copy), K/V into the cache, causal attention (no
 * RoPE: positions were added to the embeddings), output projection with bias and residual;
 * LayerNorm, c_fc + bias, tanh GELU ("gelu_new", never the erf form), c_proj + bias, residual.
 */
#include "error.h"
#include "lm_internal.h"

ingot_status ingot__gpt2_forward(ingot_lm_session *s, uint32_t n, ingot_error *err)
{
    ingot_lm *m = s->m;
    const ingot_lm_config *c = &m->cfg;
    ingot_backend *be = m->be;
    uint64_t D = c->dim, F = c->ffn_dim;
    ingot_tensor x, xn, qkv, q, k, v, ao, tmp, g;
    ingot__lm_view2(&x, s->x, 0, n, D);
    ingot__lm_view2(&xn, s->xn, 0, n, D);
    ingot__lm_view2(&qkv, s->q, 0, n, 3 * D);
    ingot__lm_view2(&ao, s->ao, 0, n, D);
    ingot__lm_view2(&tmp, s->tmp, 0, n, D);
    ingot__lm_view2(&g, s->g, 0, n, F);
    q = k = v = qkv;
    q.shape[1] = k.shape[1] = v.shape[1] = (int64_t)D;
    k.offset += D * 4;
    v.offset += 2 * D * 4;
    for (uint32_t l = 0; l < c->n_layer; l++) {
        const lm_layer *ly = &m->layers[l];
        ING_TRY(ingot_op_layer_norm(be, &xn, &x, &ly->attn_norm.t, &ly->attn_norm_b.t,
                                    c->norm_eps, err));
        ING_TRY(ingot__lm_linear(s, &qkv, &xn, &ly->wqkv, &ly->bqkv, err));
        ING_TRY(ingot__lm_kv_store(s, l, false, &k, n, err));
        ING_TRY(ingot__lm_kv_store(s, l, true, &v, n, err));
        ING_TRY(ingot__lm_attention(s, l, &q, n, err));
        ING_TRY(ingot__lm_linear(s, &tmp, &ao, &ly->wo, &ly->bo, err));
        ING_TRY(ingot_op_binary(be, INGOT_BINARY_ADD, &x, &x, &tmp, err));
        ING_TRY(ingot_op_layer_norm(be, &xn, &x, &ly->ffn_norm.t, &ly->ffn_norm_b.t,
                                    c->norm_eps, err));
        ING_TRY(ingot__lm_linear(s, &g, &xn, &ly->w_up, &ly->b_up, err));
        ING_TRY(ingot_op_activation(be, INGOT_ACT_GELU_TANH, &g, &g, 0.0, err));
        ING_TRY(ingot__lm_linear(s, &tmp, &g, &ly->w_down, &ly->b_down, err));
        ING_TRY(ingot_op_binary(be, INGOT_BINARY_ADD, &x, &x, &tmp, err));
    }
    return INGOT_OK;
}
