/*
 * lm_names.c - tensor names are data (STYLE.md §7b): one row per (architecture, role) with the
 * name in llama.cpp's GGUF naming and in Hugging Face's. "%u" is the layer, a second "%u" the
 * expert. HF GPT-2 names carry "transformer." (GPT2LMHeadModel); lm_model.c also tries them
 * without it (GPT2Model checkpoints, e.g. the hub's model.safetensors).
 */
#include <string.h>

#include "alloc.h"
#include "error.h"
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

/* ---- the table for converters (lm.h section 6) ---- */

/* HF buffers that are no parameters: a converter leaves them out (suffixes). */
static const char *const hf_buffers[] = {".attn.bias", ".attn.masked_bias",
                                         ".rotary_emb.inv_freq"};

/* Whether name matches fmt, each "%u" a decimal number (no sign, at most 9 digits; no leading
 * zero unless it is "0"); the numbers go to *a and *b. */
static bool match_fmt(const char *fmt, const char *name, uint32_t *a, uint32_t *b)
{
    unsigned nth = 0;
    const char *n = name;
    for (const char *p = fmt; *p; p++) {
        if (p[0] == '%' && p[1] == 'u') {
            uint32_t v = 0;
            size_t nd = 0;
            while (n[nd] >= '0' && n[nd] <= '9' && nd < 10) v = v * 10 + (uint32_t)(n[nd++] - '0');
            if (nd == 0 || nd > 9 || (nd > 1 && n[0] == '0')) return false;
            if (nth++ == 0) *a = v;
            else *b = v;
            n += nd;
            p++;
            continue;
        }
        if (*n++ != *p) return false;
    }
    return *n == 0;
}

static lm_role exps_role(lm_role r, bool to_stacked)
{
    static const lm_role per[3] = {LM_FFN_GATE_EXP, LM_FFN_UP_EXP, LM_FFN_DOWN_EXP};
    static const lm_role stk[3] = {LM_FFN_GATE_EXPS, LM_FFN_UP_EXPS, LM_FFN_DOWN_EXPS};
    for (int i = 0; i < 3; i++) {
        if (to_stacked && r == per[i]) return stk[i];
        if (!to_stacked && r == stk[i]) return per[i];
    }
    return LM_ROLE_COUNT;
}

static void info_init(ingot_lm_name_info *info, const name_row *r, uint32_t layer, bool has_layer,
                      uint32_t expert)
{
    if (!info) return;
    memset(info, 0, sizeof *info);
    info->layer = has_layer ? layer : UINT32_MAX;
    info->expert = expert;
    if (!r) return;
    info->hf_transposed = r->hf_transposed;
    if (r->role == LM_ATTN_Q || r->role == LM_ATTN_Q_B) info->qk = 'q';
    if (r->role == LM_ATTN_K || r->role == LM_ATTN_K_B) info->qk = 'k';
}

static ingot_status name_out(const char *fmt, uint32_t a, uint32_t b, char *buf, size_t cap,
                             const char *src, ingot_error *err)
{
    if (!expand(fmt, a, b, buf, cap))
        return ingot__err(err, INGOT_RANGE, INGOT_NO_OFFSET, src, strlen(src),
                          "lm: the name for '%s' does not fit in %zu bytes", src, cap);
    return INGOT_OK;
}

static ingot_status name_map(ingot_lm_arch arch, bool to_gguf, const char *name, uint32_t expert,
                             char *buf, size_t cap, ingot_lm_name_info *info, ingot_error *err)
{
    if (!name || !buf || !cap)
        return ingot__err(err, INGOT_MISUSE, INGOT_NO_OFFSET, 0, 0, "lm: NULL argument");
    buf[0] = 0;
    size_t nl = strlen(name);
    if (to_gguf) {
        for (size_t i = 0; i < sizeof hf_buffers / sizeof hf_buffers[0]; i++) {
            size_t sl = strlen(hf_buffers[i]);
            if (nl > sl && !strcmp(name + nl - sl, hf_buffers[i])) {
                info_init(info, NULL, 0, false, UINT32_MAX);
                if (info) info->ignored = true;
                return INGOT_OK;
            }
        }
    }
    for (int pass = 0; pass < 2; pass++) {
        /* GPT2Model checkpoints name tensors without "transformer." (pass 1 adds it) */
        char alt[256];
        const char *nm = name;
        if (pass == 1) {
            if (!to_gguf || arch != INGOT_LM_ARCH_GPT2 || !strncmp(name, "transformer.", 12) ||
                nl + 13 > sizeof alt)
                break;
            memcpy(alt, "transformer.", 12);
            memcpy(alt + 12, name, nl + 1);
            nm = alt;
        }
        for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
            const name_row *r = &rows[i];
            if (!(r->arch & (1u << arch))) continue;
            const char *from = to_gguf ? r->hf : r->gguf;
            uint32_t a = 0, b = 0;
            if (!from || !match_fmt(from, nm, &a, &b)) continue;
            bool has_layer = strstr(from, "%u") != NULL;
            lm_role other = exps_role(r->role, to_gguf);
            if (other == LM_ROLE_COUNT) { /* a one-to-one name */
                const char *to = to_gguf ? r->gguf : r->hf;
                if (!to) break;
                const char *second = has_layer ? strstr(strstr(from, "%u") + 2, "%u") : NULL;
                info_init(info, r, a, has_layer, second ? b : UINT32_MAX);
                return name_out(to, a, b, buf, cap, name, err);
            }
            /* per-expert HF <-> stacked GGUF */
            for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++) {
                const name_row *o = &rows[k];
                if (o->role != other || !(o->arch & (1u << arch))) continue;
                const char *to = to_gguf ? o->gguf : o->hf;
                if (!to) break;
                info_init(info, r, a, true, to_gguf ? b : expert);
                if (info) info->stacked = true;
                return name_out(to, a, to_gguf ? 0 : expert, buf, cap, name, err);
            }
        }
    }
    return ingot__err(err, INGOT_NOT_FOUND, INGOT_NO_OFFSET, name, nl,
                      "lm: tensor '%s' has no %s name for the %s architecture", name,
                      to_gguf ? "GGUF" : "Hugging Face",
                      arch == INGOT_LM_ARCH_GPT2 ? "GPT-2" : "Llama-family");
}

ingot_status ingot_lm_name_to_gguf(ingot_lm_arch arch, const char *hf, char *buf, size_t cap,
                                   ingot_lm_name_info *info, ingot_error *err)
{
    return name_map(arch, true, hf, 0, buf, cap, info, err);
}

ingot_status ingot_lm_name_to_hf(ingot_lm_arch arch, const char *gguf, uint32_t expert,
                                 char *buf, size_t cap, ingot_lm_name_info *info,
                                 ingot_error *err)
{
    return name_map(arch, false, gguf, expert, buf, cap, info, err);
}

ingot_status ingot_lm_config_read(const ingot_file *f, const char *config_json,
                                  ingot_lm_config *out, ingot_error *err)
{
    if (!out || (!f && !config_json))
        return ingot__err(err, INGOT_MISUSE, INGOT_NO_OFFSET, 0, 0, "lm: NULL argument");
    const char *where = "general.architecture";
    if (config_json) {
        void *buf = NULL;
        size_t n = 0;
        ING_TRY(ingot__lm_read_file(NULL, config_json, &buf, &n, err));
        ingot_status st = ingot__lm_config_json(buf, n, config_json, out, err);
        ingot__free(NULL, buf, n ? n : 1);
        ING_TRY(st);
        where = "config.json";
    } else {
        ING_TRY(ingot__lm_config_gguf(f, out, err));
    }
    return ingot__lm_config_check(out, where, err);
}
