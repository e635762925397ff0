/*
 * quant_rules.c - which tensors llama.cpp's llama-quantize quantizes, and to what, for the types
 * and mixes of ingot_convert_plan_quantize (include/ingot/convert.h). Written from the
 * published behaviour of llama-quantize (which tensors stay in higher precision, the _S/_M
 * mixes, the fallbacks for rows that are not whole blocks); no importance matrix.
 */
#include <stdio.h>
#include <string.h>

#include "convert_impl.h"
#include "error.h"

/* One quantization preset: its base type, llama.cpp's LLAMA_FTYPE number and the mix. */
typedef enum { MIX_NONE, MIX_S, MIX_M } mix_kind;

typedef struct {
    const char *name;
    ingot_dtype base;
    uint32_t ftype;
    mix_kind mix;
} preset;

static const preset presets[] = {
    {"Q4_0", INGOT_DTYPE_Q4_0, 2, MIX_NONE},   {"Q4_1", INGOT_DTYPE_Q4_1, 3, MIX_NONE},
    {"Q8_0", INGOT_DTYPE_Q8_0, 7, MIX_NONE},   {"Q5_0", INGOT_DTYPE_Q5_0, 8, MIX_NONE},
    {"Q5_1", INGOT_DTYPE_Q5_1, 9, MIX_NONE},   {"Q4_K_S", INGOT_DTYPE_Q4_K, 14, MIX_S},
    {"Q4_K_M", INGOT_DTYPE_Q4_K, 15, MIX_M},   {"Q4_K", INGOT_DTYPE_Q4_K, 15, MIX_M},
    {"Q5_K_S", INGOT_DTYPE_Q5_K, 16, MIX_S},   {"Q5_K_M", INGOT_DTYPE_Q5_K, 17, MIX_M},
    {"Q5_K", INGOT_DTYPE_Q5_K, 17, MIX_M},     {"Q6_K", INGOT_DTYPE_Q6_K, 18, MIX_NONE},
};

/* Roles of tensors the rules single out; GGUF names first, then Hugging Face ones. */
typedef enum {
    ROLE_OTHER, ROLE_OUTPUT, ROLE_TOKEN_EMBD, ROLE_ATTN_V, ROLE_ATTN_K, ROLE_ATTN_OUTPUT,
    ROLE_ATTN_QKV, ROLE_FFN_DOWN, ROLE_KEEP
} role;

static bool ends_with(const char *s, size_t n, const char *suffix)
{
    size_t k = strlen(suffix);
    return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

static bool has(const char *s, const char *part) { return strstr(s, part) != NULL; }

static role role_of(const char *name, size_t n)
{
    /* never quantized (llama-quantize keeps them) */
    if (has(name, "_norm.weight") || has(name, "ffn_gate_inp.weight") ||
        has(name, "block_sparse_moe.gate.weight") || !strcmp(name, "position_embd.weight") ||
        !strcmp(name, "token_types.weight") || has(name, "ssm_conv1d.weight"))
        return ROLE_KEEP;
    if (!strcmp(name, "output.weight") || !strcmp(name, "lm_head.weight")) return ROLE_OUTPUT;
    if (!strcmp(name, "token_embd.weight") || ends_with(name, n, "embed_tokens.weight"))
        return ROLE_TOKEN_EMBD;
    if (has(name, "attn_v.weight") || ends_with(name, n, "v_proj.weight")) return ROLE_ATTN_V;
    if (has(name, "attn_k.weight") || ends_with(name, n, "k_proj.weight")) return ROLE_ATTN_K;
    if (has(name, "attn_output.weight") || ends_with(name, n, "o_proj.weight"))
        return ROLE_ATTN_OUTPUT;
    if (has(name, "attn_qkv.weight")) return ROLE_ATTN_QKV;
    if (has(name, "ffn_down") || ends_with(name, n, "down_proj.weight") ||
        ends_with(name, n, ".w2.weight"))
        return ROLE_FFN_DOWN;
    return ROLE_OTHER;
}

static bool use_more_bits(uint64_t i, uint64_t n)
{
    return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

/* `{general.architecture}.expert_count` of the source, 0 if absent. */
static uint64_t expert_count(const ingot_file *f)
{
    const char *arch;
    size_t len;
    if (ingot_file_meta_get_string(f, "general.architecture", &arch, &len) != INGOT_OK ||
        len > 200)
        return 0;
    char key[256];
    snprintf(key, sizeof key, "%.*s.expert_count", (int)len, arch);
    ingot_meta_info m;
    if (ingot_file_meta_find(f, key, &m) != INGOT_OK || m.is_array) return 0;
    switch (m.type) {
    case INGOT_META_U8: case INGOT_META_U16: case INGOT_META_U32: case INGOT_META_U64:
        return m.v.u;
    case INGOT_META_I8: case INGOT_META_I16: case INGOT_META_I32: case INGOT_META_I64:
        return m.v.i > 0 ? (uint64_t)m.v.i : 0;
    default: return 0;
    }
}

/* Whether llama-quantize quantizes a tensor of this name and shape at all. */
static bool quantizable(const char *name, size_t n, const ingot_tensor_info *t, role r)
{
    if (r == ROLE_KEEP || !ends_with(name, n, "weight")) return false;
    for (uint32_t d = 0; d + 1 < t->rank; d++) /* a dimension other than the innermost > 1 */
        if (t->shape[d] > 1) return true;
    return false;
}

ingot_status ingot_convert_plan_quantize(ingot_convert_plan *p, const char *type,
                                         ingot_error *err)
{
    if (!p || !type) return ingot__err(err, INGOT_MISUSE, INGOT_NO_OFFSET, 0, 0, "NULL argument");
    const preset *q = NULL;
    for (size_t k = 0; k < sizeof presets / sizeof *presets; k++)
        if (!strcmp(presets[k].name, type)) q = &presets[k];
    if (!q)
        return ingot__err(err, INGOT_UNSUPPORTED, INGOT_NO_OFFSET, type, strlen(type),
                          "no quantization type '%s' (Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q6_K, mixes "
                          "Q4_K_S Q4_K_M Q5_K_S Q5_K_M; Q4_K = Q4_K_M, Q5_K = Q5_K_M)",
                          type);
    /* counts over the kept float tensors, as llama-quantize counts over the model */
    uint64_t n_attn_v = 0, n_ffn_down = 0, i_attn_v = 0, i_ffn_down = 0;
    bool has_output = false;
    for (uint64_t i = 0; i < p->nt; i++) {
        if (p->t[i].action == INGOT_CONVERT_DROP) continue;
        size_t n;
        const char *name = ingot__plan_name(p, i, &n);
        role r = role_of(name, n);
        n_attn_v += r == ROLE_ATTN_V;
        n_ffn_down += r == ROLE_FFN_DOWN;
        has_output |= r == ROLE_OUTPUT;
    }
    const bool eight_experts = expert_count(p->src) == 8;
    for (uint64_t i = 0; i < p->nt; i++) {
        ingot__plan_tensor *e = &p->t[i];
        if (e->action == INGOT_CONVERT_DROP) continue;
        ingot_tensor_info t;
        ingot_file_tensor_at(p->src, i, &t);
        size_t n;
        const char *name = ingot__plan_name(p, i, &n);
        role r = role_of(name, n);
        uint64_t iv = i_attn_v, id = i_ffn_down;
        i_attn_v += r == ROLE_ATTN_V;
        i_ffn_down += r == ROLE_FFN_DOWN;
        if (!ingot__is_float_dtype(t.dtype) || !quantizable(name, n, &t, r)) continue;
        ingot_dtype nt = q->base;
        const uint64_t row = t.shape[t.rank - 1];
        if (r == ROLE_OUTPUT || (r == ROLE_TOKEN_EMBD && !has_output)) {
            if (row % 256) nt = INGOT_DTYPE_Q8_0;
            else if (nt != INGOT_DTYPE_Q8_0) nt = INGOT_DTYPE_Q6_K;
        } else if (r == ROLE_ATTN_V) {
            if (q->mix == MIX_M && use_more_bits(iv, n_attn_v)) nt = INGOT_DTYPE_Q6_K;
            else if (q->mix == MIX_S && q->base == INGOT_DTYPE_Q4_K && iv < 4)
                nt = INGOT_DTYPE_Q5_K;
            if (eight_experts) nt = INGOT_DTYPE_Q8_0;
        } else if (r == ROLE_ATTN_K) {
            if (eight_experts) nt = INGOT_DTYPE_Q8_0;
        } else if (r == ROLE_FFN_DOWN) {
            if (q->mix == MIX_M && use_more_bits(id, n_ffn_down)) nt = INGOT_DTYPE_Q6_K;
            else if (q->mix == MIX_S && q->base == INGOT_DTYPE_Q4_K && id < n_ffn_down / 8)
                nt = INGOT_DTYPE_Q5_K;
        } else if (r == ROLE_ATTN_OUTPUT) {
            if (eight_experts && q->base == INGOT_DTYPE_Q4_K) nt = INGOT_DTYPE_Q5_K;
        } else if (r == ROLE_ATTN_QKV && q->mix == MIX_M) {
            nt = q->base == INGOT_DTYPE_Q4_K ? INGOT_DTYPE_Q5_K : INGOT_DTYPE_Q6_K;
        }
        /* rows that are not whole super-blocks: llama-quantize's fallbacks */
        if (ingot_dtype_block_elems(nt) == 256 && row % 256) {
            nt = nt == INGOT_DTYPE_Q4_K ? INGOT_DTYPE_Q5_0
                 : nt == INGOT_DTYPE_Q5_K ? INGOT_DTYPE_Q5_1
                                          : INGOT_DTYPE_Q8_0;
        }
        if (row % ingot_dtype_block_elems(nt)) {
            e->action = t.dtype == INGOT_DTYPE_F16 ? INGOT_CONVERT_KEEP : INGOT_CONVERT_CAST;
            e->dtype = INGOT_DTYPE_F16;
            continue;
        }
        e->action = INGOT_CONVERT_QUANTIZE;
        e->dtype = nt;
    }
    uint32_t two = 2;
    ING_TRY(ingot_convert_plan_meta_set(p, "general.quantization_version", INGOT_META_U32, false,
                                        &two, 1, err));
    return ingot_convert_plan_meta_set(p, "general.file_type", INGOT_META_U32, false, &q->ftype,
                                       1, err);
}
