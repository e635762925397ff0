/*
 * lm_names.c - tensor names are data (STYLE.md §7b): one row per (architecture, role) with the
 * name in llama.cpp's GGUF naming and in Hugging Face's. "%u" is the layer, a second "%u" the
 * expert. HF GPT-2 names carry "transformer." (GPT2LMHeadModel); lm_model.c also tries them
 * without it (GPT2Model checkpoints, e.g. the hub's model.safetensors).
 */
#include "lm_internal.h"

#define A_LLAMA (1u << INGOT_LM_ARCH_LLAMA)
#define A_GPT2 (1u << INGOT_LM_ARCH_GPT2)

typedef struct name_row {
    lm_role role;
    unsigned arch;       /* A_* mask */
    const char *gguf;    /* NULL: no such tensor in this naming */
    const char *hf;
    bool hf_transposed;  /* HF stores it [in, out] (Conv1D) */
} name_row;

static const name_row rows[] = {
    {LM_TOK_EMBD, A_LLAMA, "token_embd.weight", "model.embed_tokens.weight", false},
    {LM_TOK_EMBD, A_GPT2, "token_embd.weight", "transformer.wte.weight", false},
    {LM_POS_EMBD, A_GPT2, "position_embd.weight", "transformer.wpe.weight", false},
    {LM_OUT_NORM, A_LLAMA, "output_norm.weight", "model.norm.weight", false},
    {LM_OUT_NORM, A_GPT2, "output_norm.weight", "transformer.ln_f.weight", false},
    {LM_OUT_NORM_B, A_GPT2, "output_norm.bias", "transformer.ln_f.bias", false},
    {LM_OUTPUT, A_LLAMA | A_GPT2, "output.weight", "lm_head.weight", false},

    {LM_ATTN_NORM, A_LLAMA, "blk.%u.attn_norm.weight", "model.layers.%u.input_layernorm.weight",
     false},
    {LM_ATTN_Q, A_LLAMA, "blk.%u.attn_q.weight", "model.layers.%u.self_attn.q_proj.weight", false},
    {LM_ATTN_Q_B, A_LLAMA, "blk.%u.attn_q.bias", "model.layers.%u.self_attn.q_proj.bias", false},
    {LM_ATTN_K, A_LLAMA, "blk.%u.attn_k.weight", "model.layers.%u.self_attn.k_proj.weight", false},
    {LM_ATTN_K_B, A_LLAMA, "blk.%u.attn_k.bias", "model.layers.%u.self_attn.k_proj.bias", false},
    {LM_ATTN_V, A_LLAMA, "blk.%u.attn_v.weight", "model.layers.%u.self_attn.v_proj.weight", false},
    {LM_ATTN_V_B, A_LLAMA, "blk.%u.attn_v.bias", "model.layers.%u.self_attn.v_proj.bias", false},
    {LM_ATTN_OUT, A_LLAMA, "blk.%u.attn_output.weight", "model.layers.%u.self_attn.o_proj.weight",
     false},
    {LM_ATTN_OUT_B, A_LLAMA, "blk.%u.attn_output.bias", "model.layers.%u.self_attn.o_proj.bias",
     false},
    {LM_FFN_NORM, A_LLAMA, "blk.%u.ffn_norm.weight",
     "model.layers.%u.post_attention_layernorm.weight", false},
    {LM_FFN_GATE, A_LLAMA, "blk.%u.ffn_gate.weight", "model.layers.%u.mlp.gate_proj.weight", false},
    {LM_FFN_UP, A_LLAMA, "blk.%u.ffn_up.weight", "model.layers.%u.mlp.up_proj.weight", false},
    {LM_FFN_DOWN, A_LLAMA, "blk.%u.ffn_down.weight", "model.layers.%u.mlp.down_proj.weight", false},
    {LM_FFN_ROUTER, A_LLAMA, "blk.%u.ffn_gate_inp.weight",
     "model.layers.%u.block_sparse_moe.gate.weight", false},
    {LM_FFN_GATE_EXPS, A_LLAMA, "blk.%u.ffn_gate_exps.weight", NULL, false},
    {LM_FFN_UP_EXPS, A_LLAMA, "blk.%u.ffn_up_exps.weight", NULL, false},
    {LM_FFN_DOWN_EXPS, A_LLAMA, "blk.%u.ffn_down_exps.weight", NULL, false},
    {LM_FFN_GATE_EXP, A_LLAMA, "blk.%u.ffn_gate.%u.weight",
     "model.layers.%u.block_sparse_moe.experts.%u.w1.weight", false},
    {LM_FFN_UP_EXP, A_LLAMA, "blk.%u.ffn_up.%u.weight",
     "model.layers.%u.block_sparse_moe.experts.%u.w3.weight", false},
    {LM_FFN_DOWN_EXP, A_LLAMA, "blk.%u.ffn_down.%u.weight",
     "model.layers.%u.block_sparse_moe.experts.%u.w2.weight", false},

    {LM_ATTN_NORM, A_GPT2, "blk.%u.attn_norm.weight", "transformer.h.%u.ln_1.weight", false},
    {LM_ATTN_NORM_B, A_GPT2, "blk.%u.attn_norm.bias", "transformer.h.%u.ln_1.bias", false},
    {LM_ATTN_QKV, A_GPT2, "blk.%u.attn_qkv.weight", "transformer.h.%u.attn.c_attn.weight", true},
    {LM_ATTN_QKV_B, A_GPT2, "blk.%u.attn_qkv.bias", "transformer.h.%u.attn.c_attn.bias", false},
    {LM_ATTN_OUT, A_GPT2, "blk.%u.attn_output.weight", "transformer.h.%u.attn.c_proj.weight",
     true},
    {LM_ATTN_OUT_B, A_GPT2, "blk.%u.attn_output.bias", "transformer.h.%u.attn.c_proj.bias", false},
    {LM_FFN_NORM, A_GPT2, "blk.%u.ffn_norm.weight", "transformer.h.%u.ln_2.weight", false},
    {LM_FFN_NORM_B, A_GPT2, "blk.%u.ffn_norm.bias", "transformer.h.%u.ln_2.bias", false},
    {LM_FFN_UP, A_GPT2, "blk.%u.ffn_up.weight", "transformer.h.%u.mlp.c_fc.weight", true},
    {LM_FFN_UP_B, A_GPT2, "blk.%u.ffn_up.bias", "transformer.h.%u.mlp.c_fc.bias", false},
    {LM_FFN_DOWN, A_GPT2, "blk.%u.ffn_down.weight", "transformer.h.%u.mlp.c_proj.weight", true},
    {LM_FFN_DOWN_B, A_GPT2, "blk.%u.ffn_down.bias", "transformer.h.%u.mlp.c_proj.bias", false},
};

/* Copies fmt into buf with the first "%u" replaced by a, the second by b. */
static bool expand(const char *fmt, uint32_t a, uint32_t b, char *buf, size_t cap)
{
    size_t o = 0;
    unsigned nth = 0;
    for (const char *p = fmt; *p; p++) {
        if (p[0] == '%' && p[1] == 'u') {
            char dig[12];
            size_t nd = 0;
            uint32_t v = nth++ == 0 ? a : b;
            do {
                dig[nd++] = (char)('0' + v % 10);
                v /= 10;
            } while (v);
            while (nd) {
                if (o + 1 >= cap) return false;
                buf[o++] = dig[--nd];
            }
            p++;
            continue;
        }
        if (o + 1 >= cap) return false;
        buf[o++] = *p;
    }
    if (o >= cap) return false;
    buf[o] = 0;
    return true;
}

bool ingot__lm_role_name(lm_naming naming, ingot_lm_arch arch, lm_role role, uint32_t layer,
                         uint32_t expert, char *buf, size_t cap, bool *hf_transposed)
{
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const name_row *r = &rows[i];
        if (r->role != role || !(r->arch & (1u << arch))) continue;
        const char *fmt = naming == LM_NAMES_GGUF ? r->gguf : r->hf;
        if (!fmt) return false;
        if (!expand(fmt, layer, expert, buf, cap)) return false;
        if (hf_transposed) *hf_transposed = naming == LM_NAMES_HF && r->hf_transposed;
        return true;
    }
    return false;
}
