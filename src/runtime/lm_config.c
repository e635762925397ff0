/*
 * lm_config.c - the hyper-parameters of a decoder, from GGUF-style metadata (llama.cpp's keys:
 * general.architecture, {arch}.block_count, {arch}.attention.head_count_kv, ...; the llama2.c
 * adapter exposes the same keys) or from a Hugging Face config.json (read with the in-tree JSON
 * scanner). Missing optional keys take explicit defaults; every value is range-checked before it
 * sizes anything (hostile files), and every error names the key.
 */
#include <math.h>
#include <string.h>

#include "error.h"
#include "json.h"
#include "lm_internal.h"

/* ---- GGUF keys ---- */

typedef struct gguf_arch {
    const char *name;
    ingot_lm_arch arch;
    ingot_rope_mode rope;
    bool qkv_bias;
} gguf_arch;

/* llama.cpp's rope type per architecture: its Llama converter permutes q/k rows so the file
 * rotates interleaved pairs (ggml NORMAL); Qwen2 is converted unpermuted (NEOX: half-split). */
static const gguf_arch gguf_archs[] = {
    {"llama", INGOT_LM_ARCH_LLAMA, INGOT_ROPE_INTERLEAVED, false},
    {"qwen2", INGOT_LM_ARCH_LLAMA, INGOT_ROPE_HALF, true},
    {"gpt2", INGOT_LM_ARCH_GPT2, INGOT_ROPE_INTERLEAVED, true},
};

static ingot_status key_err(ingot_error *err, ingot_status code, const char *key,
                            const char *what)
{
    return ingot__err(err, code, INGOT_NO_OFFSET, key, strlen(key), "lm: key '%s' %s", key, what);
}

/* An unsigned integer key of any integer type; *present false (and *out untouched) if absent. */
static ingot_status meta_uint(const ingot_file *f, const char *key, uint64_t *out, bool *present,
                              ingot_error *err)
{
    ingot_meta_info mi;
    *present = false;
    if (ingot_file_meta_find(f, key, &mi) != INGOT_OK) return INGOT_OK;
    if (mi.is_array) return key_err(err, INGOT_E_BAD_METADATA, key, "must be a scalar integer");
    switch (mi.type) {
    case INGOT_META_U8: case INGOT_META_U16: case INGOT_META_U32: case INGOT_META_U64:
        *out = mi.v.u;
        break;
    case INGOT_META_I8: case INGOT_META_I16: case INGOT_META_I32: case INGOT_META_I64:
        if (mi.v.i < 0) return key_err(err, INGOT_E_BAD_METADATA, key, "is negative");
        *out = (uint64_t)mi.v.i;
        break;
    default:
        return key_err(err, INGOT_E_BAD_METADATA, key, "must be an integer");
    }
    *present = true;
    return INGOT_OK;
}

static ingot_status meta_float(const ingot_file *f, const char *key, double *out, bool *present,
                               ingot_error *err)
{
    ingot_meta_info mi;
    *present = false;
    if (ingot_file_meta_find(f, key, &mi) != INGOT_OK) return INGOT_OK;
    if (mi.is_array || (mi.type != INGOT_META_F32 && mi.type != INGOT_META_F64))
        return key_err(err, INGOT_E_BAD_METADATA, key, "must be a float scalar");
    *out = mi.v.f;
    *present = true;
    return INGOT_OK;
}

/* A required u32 key "<arch>.<suffix>" in [lo, hi]. */
static ingot_status arch_u32(const ingot_file *f, const char *arch, const char *suffix,
                             bool required, uint32_t dflt, uint32_t lo, uint32_t hi,
                             uint32_t *out, ingot_error *err)
{
    char key[96];
    ingot__fmt(key, sizeof key, "%s.%s", arch, suffix);
    uint64_t v = dflt;
    bool present;
    ING_TRY(meta_uint(f, key, &v, &present, err));
    if (!present && required)
        return key_err(err, INGOT_E_BAD_METADATA, key, "is missing (the architecture needs it)");
    if (present && (v < lo || v > hi))
        return ingot__err(err, INGOT_E_BAD_METADATA, INGOT_NO_OFFSET, key, strlen(key),
                          "lm: key '%s' is %llu, expected %u..%u", key, (unsigned long long)v,
                          lo, hi);
    *out = (uint32_t)v;
    return INGOT_OK;
}

ingot_status ingot__lm_config_gguf(const ingot_file *f, ingot_lm_config *c, ingot_error *err)
{
    memset(c, 0, sizeof *c);
    const char *s;
    size_t n;
    const char *key = "general.architecture";
    if (ingot_file_meta_get_string(f, key, &s, &n) != INGOT_OK)
        return key_err(err, INGOT_E_BAD_METADATA, key, "is missing or not a string");
    const gguf_arch *ga = NULL;
    for (size_t i = 0; i < sizeof gguf_archs / sizeof gguf_archs[0]; i++)
        if (strlen(gguf_archs[i].name) == n && !memcmp(gguf_archs[i].name, s, n))
            ga = &gguf_archs[i];
    if (!ga)
        return ingot__err(err, INGOT_E_UNSUPPORTED, INGOT_NO_OFFSET, key, strlen(key),
                          "lm: architecture '%.*s' is not one the runtime runs (llama, qwen2, "
                          "gpt2)", (int)(n > 40 ? 40 : n), s);
    const char *a = ga->name;
    c->arch = ga->arch;
    c->rope_mode = ga->rope;
    c->qkv_bias = ga->qkv_bias;
    c->naming = "gguf";
    ING_TRY(arch_u32(f, a, "block_count", true, 0, 1, LM_MAX_LAYERS, &c->n_layer, err));
    ING_TRY(arch_u32(f, a, "embedding_length", true, 0, 1, LM_MAX_DIM, &c->dim, err));
    ING_TRY(arch_u32(f, a, "feed_forward_length", true, 0, 1, LM_MAX_FFN, &c->ffn_dim, err));
    ING_TRY(arch_u32(f, a, "attention.head_count", true, 0, 1, LM_MAX_HEADS, &c->n_head, err));
    ING_TRY(arch_u32(f, a, "attention.head_count_kv", false, c->n_head, 1, LM_MAX_HEADS,
                     &c->n_head_kv, err));
    ING_TRY(arch_u32(f, a, "context_length", false, 2048, 1, LM_MAX_CTX, &c->ctx_train, err));
    ING_TRY(arch_u32(f, a, "attention.key_length", false, 0, 2, LM_MAX_HEAD_DIM, &c->head_dim,
                     err));
    ING_TRY(arch_u32(f, a, "expert_count", false, 0, 0, LM_MAX_EXPERTS, &c->n_expert, err));
    ING_TRY(arch_u32(f, a, "expert_used_count", false, 0, 0, LM_MAX_EXPERTS, &c->n_expert_used,
                     err));
    ING_TRY(arch_u32(f, a, "attention.sliding_window", false, 0, 0, LM_MAX_CTX,
                     &c->sliding_window, err));
    if (c->head_dim == 0 && c->n_head && c->dim % c->n_head == 0) c->head_dim = c->dim / c->n_head;
    if (c->arch == INGOT_LM_ARCH_LLAMA) {
        /* partial rotary: the first rope_dims of each head rotate (ggml's n_dims) */
        ING_TRY(arch_u32(f, a, "rope.dimension_count", false, c->head_dim, 0, LM_MAX_HEAD_DIM,
                         &c->rope_dims, err));
        if (c->head_dim && (c->rope_dims < 2 || c->rope_dims % 2 || c->rope_dims > c->head_dim)) {
            char k2[96];
            ingot__fmt(k2, sizeof k2, "%s.rope.dimension_count", a);
            return ingot__err(err, INGOT_E_BAD_METADATA, INGOT_NO_OFFSET, k2, strlen(k2),
                              "lm: %u rotary dims (even, 2..head size %u)", c->rope_dims,
                              c->head_dim);
        }
    }
    char key2[96];
    bool present;
    c->rope_theta = 10000.0;
    ingot__fmt(key2, sizeof key2, "%s.rope.freq_base", a);
    ING_TRY(meta_float(f, key2, &c->rope_theta, &present, err));
    c->norm_eps = 1e-5;
    ingot__fmt(key2, sizeof key2, "%s.attention.layer_norm%s_epsilon", a,
               c->arch == INGOT_LM_ARCH_GPT2 ? "" : "_rms");
    ING_TRY(meta_float(f, key2, &c->norm_eps, &present, err));
    /* Scaled RoPE variants change the angles; running them unscaled would be silently wrong:
     * linear runs (with its factor), the others are refused. (llama.cpp's converter stores the
     * Llama 3 rule as the tensor rope_freqs.weight, which lm_model.c reads.) */
    c->rope_factor = 1.0;
    ingot__fmt(key2, sizeof key2, "%s.rope.scaling.type", a);
    if (ingot_file_meta_get_string(f, key2, &s, &n) == INGOT_OK &&
        !(n == 4 && !memcmp(s, "none", 4))) {
        if (!(n == 6 && !memcmp(s, "linear", 6)))
            return ingot__err(err, INGOT_E_UNSUPPORTED, INGOT_NO_OFFSET, key2, strlen(key2),
                              "lm: RoPE scaling '%.*s' is not supported (linear)",
                              (int)(n > 20 ? 20 : n), s);
        ingot__fmt(key2, sizeof key2, "%s.rope.scaling.factor", a);
        ING_TRY(meta_float(f, key2, &c->rope_factor, &present, err));
        if (!present || !(c->rope_factor > 0 && c->rope_factor < 1e9))
            return key_err(err, INGOT_E_BAD_METADATA, key2,
                           "must be a positive float (linear RoPE scaling)");
        c->rope_scaling = INGOT_LM_ROPE_SCALING_LINEAR;
    }
    uint64_t v;
    c->bos = c->eos = -1;
    ING_TRY(meta_uint(f, "tokenizer.ggml.bos_token_id", &v, &present, err));
    if (present && v < LM_MAX_VOCAB) c->bos = (int32_t)v;
    ING_TRY(meta_uint(f, "tokenizer.ggml.eos_token_id", &v, &present, err));
    if (present && v < LM_MAX_VOCAB) c->eos = (int32_t)v;
    return INGOT_OK;
}

/* ---- config.json ---- */

enum jv { JV_U32, JV_F64, JV_BOOL, JV_STR, JV_TOKEN, JV_ROPE };

typedef struct json_key {
    const char *key;
    enum jv type;
    size_t field;  /* offsetof into cfg_json */
} json_key;

typedef struct cfg_json {
    char model_type[32];
    char act[32];
    uint32_t hidden, inter, layers, heads, kv_heads, head_dim, vocab, ctx, experts, experts_used;
    uint32_t window;
    double rms_eps, ln_eps, theta;
    bool tie, attn_bias;
    /* rope_scaling: type 0 null/"default", 1 linear, 2 llama3 (ingot_lm_rope_scaling) */
    uint32_t rs_type;
    double rs_factor, rs_low, rs_high;
    uint32_t rs_orig;
    bool rs_have[4]; /* factor, low_freq_factor, high_freq_factor, original_max_pos... */
    double partial;  /* partial_rotary_factor */
    int32_t bos, eos;
    uint64_t seen; /* bit per json_keys entry */
} cfg_json;

#define OFF(m) offsetof(cfg_json, m)
static const json_key json_keys[] = {
    {"model_type", JV_STR, OFF(model_type)},
    {"hidden_act", JV_STR, OFF(act)},
    {"activation_function", JV_STR, OFF(act)},
    {"hidden_size", JV_U32, OFF(hidden)},
    {"n_embd", JV_U32, OFF(hidden)},
    {"intermediate_size", JV_U32, OFF(inter)},
    {"n_inner", JV_U32, OFF(inter)},
    {"num_hidden_layers", JV_U32, OFF(layers)},
    {"n_layer", JV_U32, OFF(layers)},
    {"num_attention_heads", JV_U32, OFF(heads)},
    {"n_head", JV_U32, OFF(heads)},
    {"num_key_value_heads", JV_U32, OFF(kv_heads)},
    {"head_dim", JV_U32, OFF(head_dim)},
    {"vocab_size", JV_U32, OFF(vocab)},
    {"max_position_embeddings", JV_U32, OFF(ctx)},
    {"n_positions", JV_U32, OFF(ctx)},
    {"num_local_experts", JV_U32, OFF(experts)},
    {"num_experts_per_tok", JV_U32, OFF(experts_used)},
    {"sliding_window", JV_U32, OFF(window)},
    {"rms_norm_eps", JV_F64, OFF(rms_eps)},
    {"layer_norm_epsilon", JV_F64, OFF(ln_eps)},
    {"rope_theta", JV_F64, OFF(theta)},
    {"tie_word_embeddings", JV_BOOL, OFF(tie)},
    {"attention_bias", JV_BOOL, OFF(attn_bias)},
    {"rope_scaling", JV_ROPE, OFF(rs_type)}, /* null or an object (rope_scaling_value) */
    {"partial_rotary_factor", JV_F64, OFF(partial)},
    {"bos_token_id", JV_TOKEN, OFF(bos)},
    {"eos_token_id", JV_TOKEN, OFF(eos)},
};
#undef OFF
#define N_JSON_KEYS (sizeof json_keys / sizeof json_keys[0])

static ingot_status jerr(ingot_error *err, ingot_status code, const ingot__json *j,
                         const ingot__json_tok *t, const char *key, const char *what)
{
    return ingot__err(err, code, j->base_offset + t->pos, key, strlen(key),
                      "config.json: '%s' %s", key, what);
}

/* rope_scaling: null, or {"rope_type" (or "type"): "default" | "linear" | "llama3", "factor",
 * and for llama3 "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"};
 * other members are skipped, other types refused naming them. */
static ingot_status rope_scaling_value(ingot__json *j, const ingot__json_tok *t, cfg_json *cj,
                                       ingot_error *err)
{
    if (t->type == ING_JSON_NULL) return INGOT_OK;
    if (t->type != ING_JSON_OBJECT)
        return jerr(err, INGOT_E_BAD_METADATA, j, t, "rope_scaling", "must be null or an object");
    static const char *const nums[] = {"factor", "low_freq_factor", "high_freq_factor",
                                       "original_max_position_embeddings"};
    bool have_type = false;
    ingot__json_tok k, v;
    for (;;) {
        ING_TRY(ingot__json_next(j, &k, err));
        if (k.type == ING_JSON_OBJECT_END) break;
        ING_TRY(ingot__json_next(j, &v, err));
        if (ingot__json_str_eq(&k, "rope_type", 9) || ingot__json_str_eq(&k, "type", 4)) {
            char ty[32];
            size_t len;
            if (v.type != ING_JSON_STRING || v.dlen >= sizeof ty ||
                ingot__json_str(&v, ty, sizeof ty - 1, &len, NULL) != INGOT_OK)
                return jerr(err, INGOT_E_BAD_METADATA, j, &v, "rope_scaling.rope_type",
                            "must be a short string");
            ty[len] = 0;
            if (!strcmp(ty, "default")) cj->rs_type = INGOT_LM_ROPE_SCALING_NONE;
            else if (!strcmp(ty, "linear")) cj->rs_type = INGOT_LM_ROPE_SCALING_LINEAR;
            else if (!strcmp(ty, "llama3")) cj->rs_type = INGOT_LM_ROPE_SCALING_LLAMA3;
            else
                return ingot__err(err, INGOT_E_UNSUPPORTED, j->base_offset + v.pos,
                                  "rope_scaling.rope_type", 22,
                                  "config.json: RoPE scaling '%s' is not supported (linear, "
                                  "llama3)", ty);
            have_type = true;
            continue;
        }
        size_t i = 0;
        while (i < 4 && !ingot__json_str_eq(&k, nums[i], strlen(nums[i]))) i++;
        if (i == 4) {
            ING_TRY(ingot__json_skip(j, &v, err));
            continue;
        }
        double d;
        if (v.type != ING_JSON_NUMBER || ingot__json_f64(j, &v, &d, NULL) != INGOT_OK ||
            !(d > 0 && d < 1e9))
            return jerr(err, INGOT_E_BAD_METADATA, j, &v, nums[i],
                        "must be a positive number (rope_scaling)");
        double *dst[3] = {&cj->rs_factor, &cj->rs_low, &cj->rs_high};
        if (i < 3) *dst[i] = d;
        else cj->rs_orig = (uint32_t)d;
        cj->rs_have[i] = true;
    }
    if (!have_type)
        return jerr(err, INGOT_E_BAD_METADATA, j, t, "rope_scaling.rope_type", "is missing");
    int need = cj->rs_type == INGOT_LM_ROPE_SCALING_LINEAR   ? 1
               : cj->rs_type == INGOT_LM_ROPE_SCALING_LLAMA3 ? 4
                                                            : 0;
    for (int i = 0; i < need; i++)
        if (!cj->rs_have[i])
            return ingot__err(err, INGOT_E_BAD_METADATA, j->base_offset + t->pos, nums[i],
                              strlen(nums[i]), "config.json: rope_scaling '%s' is missing",
                              nums[i]);
    if (need == 4 && !(cj->rs_high > cj->rs_low && cj->rs_orig >= 1))
        return jerr(err, INGOT_E_BAD_METADATA, j, t, "rope_scaling",
                    "needs high_freq_factor > low_freq_factor and an original context");
    return INGOT_OK;
}

/* Reads the value after key k (token t already pulled) into the struct. */
static ingot_status json_value(ingot__json *j, const ingot__json_tok *t, const json_key *k,
                               cfg_json *cj, ingot_error *err)
{
    void *dst = (char *)cj + k->field;
    switch (k->type) {
    case JV_ROPE:
        return rope_scaling_value(j, t, cj, err);
    case JV_U32: {
        if (t->type == ING_JSON_NULL) return INGOT_OK; /* GPT-2's n_inner: null = default */
        uint64_t v;
        if (t->type != ING_JSON_NUMBER || ingot__json_u64(j, t, &v, NULL) != INGOT_OK ||
            v > UINT32_MAX)
            return jerr(err, INGOT_E_BAD_METADATA, j, t, k->key,
                        "must be a non-negative integer below 2^32");
        uint32_t u = (uint32_t)v;
        memcpy(dst, &u, sizeof u);
        return INGOT_OK;
    }
    case JV_F64: {
        double v;
        if (t->type != ING_JSON_NUMBER || ingot__json_f64(j, t, &v, NULL) != INGOT_OK)
            return jerr(err, INGOT_E_BAD_METADATA, j, t, k->key, "must be a number");
        memcpy(dst, &v, sizeof v);
        return INGOT_OK;
    }
    case JV_BOOL: {
        bool v;
        if (t->type == ING_JSON_TRUE || t->type == ING_JSON_FALSE) {
            v = t->type == ING_JSON_TRUE;
        } else {
            return jerr(err, INGOT_E_BAD_METADATA, j, t, k->key, "must be true or false");
        }
        memcpy(dst, &v, sizeof v);
        return INGOT_OK;
    }
    case JV_STR: {
        size_t len;
        char *s = dst;
        if (t->type != ING_JSON_STRING || t->dlen >= 32 ||
            ingot__json_str(t, s, 31, &len, NULL) != INGOT_OK)
            return jerr(err, INGOT_E_BAD_METADATA, j, t, k->key,
                        "must be a string of at most 31 bytes");
        s[len] = 0;
        return INGOT_OK;
    }
    case JV_TOKEN: {
        /* an id, null, or a list of ids (the first is used) */
        int32_t id = -1;
        ingot__json_tok e = *t;
        bool list = t->type == ING_JSON_ARRAY;
        if (list) ING_TRY(ingot__json_next(j, &e, err));
        if (e.type == ING_JSON_NUMBER) {
            uint64_t v;
            if (ingot__json_u64(j, &e, &v, NULL) != INGOT_OK || v >= LM_MAX_VOCAB)
                return jerr(err, INGOT_E_BAD_METADATA, j, &e, k->key, "is not a token id");
            id = (int32_t)v;
        } else if (e.type != ING_JSON_NULL && !(list && e.type == ING_JSON_ARRAY_END)) {
            return jerr(err, INGOT_E_BAD_METADATA, j, &e, k->key,
                        "must be a token id, a list of them or null");
        }
        if (list && e.type != ING_JSON_ARRAY_END) {
            for (;;) { /* the rest of the list: numbers only */
                ING_TRY(ingot__json_next(j, &e, err));
                if (e.type == ING_JSON_ARRAY_END) break;
                if (e.type != ING_JSON_NUMBER)
                    return jerr(err, INGOT_E_BAD_METADATA, j, &e, k->key,
                                "must be a list of token ids");
            }
        }
        memcpy(dst, &id, sizeof id);
        return INGOT_OK;
    }
    }
    return INGOT_OK;
}

static bool seen(const cfg_json *cj, const char *key)
{
    for (size_t i = 0; i < N_JSON_KEYS; i++)
        if (!strcmp(json_keys[i].key, key)) return (cj->seen >> i) & 1;
    return false;
}

static bool known_type(const char *mt, ingot_lm_arch *arch)
{
    static const char *const llama_like[] = {"llama", "mistral", "mixtral", "qwen2"};
    for (size_t i = 0; i < sizeof llama_like / sizeof llama_like[0]; i++)
        if (!strcmp(mt, llama_like[i])) {
            *arch = INGOT_LM_ARCH_LLAMA;
            return true;
        }
    if (!strcmp(mt, "gpt2")) {
        *arch = INGOT_LM_ARCH_GPT2;
        return true;
    }
    return false;
}

static ingot_status parse_json(const void *json, size_t n, const char *path, ingot_lm_config *c,
                               ingot_error *err)
{
    memset(c, 0, sizeof *c);
    cfg_json cj;
    memset(&cj, 0, sizeof cj);
    cj.bos = cj.eos = -1;
    ingot__json j;
    ingot__json_init(&j, json, n, 64, 0);
    ingot__json_tok t;
    ING_TRY(ingot__json_next(&j, &t, err));
    if (t.type != ING_JSON_OBJECT)
        return ingot__err(err, INGOT_E_BAD_METADATA, t.pos, "config.json", 11,
                          "config.json: the top level must be an object (%s)", path);
    for (;;) {
        ING_TRY(ingot__json_next(&j, &t, err));
        if (t.type == ING_JSON_OBJECT_END) break;
        /* t is a KEY at depth 1 */
        const json_key *k = NULL;
        size_t ki = 0;
        for (; ki < N_JSON_KEYS; ki++)
            if (ingot__json_str_eq(&t, json_keys[ki].key, strlen(json_keys[ki].key))) {
                k = &json_keys[ki];
                break;
            }
        ingot__json_tok keytok = t;
        ING_TRY(ingot__json_next(&j, &t, err));
        if (!k) {
            ING_TRY(ingot__json_skip(&j, &t, err));
            continue;
        }
        if (cj.seen & (1ull << ki))
            return jerr(err, INGOT_E_DUPLICATE, &j, &keytok, k->key, "appears twice");
        cj.seen |= 1ull << ki;
        ING_TRY(json_value(&j, &t, k, &cj, err));
    }
    ING_TRY(ingot__json_next(&j, &t, err));
    if (t.type != ING_JSON_END)
        return ingot__err(err, INGOT_E_BAD_METADATA, t.pos, "config.json", 11,
                          "config.json: data after the top-level object (%s)", path);
    if (!cj.model_type[0])
        return ingot__err(err, INGOT_E_BAD_METADATA, INGOT_NO_OFFSET, "model_type", 10,
                          "config.json: 'model_type' is missing (%s)", path);
    if (!known_type(cj.model_type, &c->arch))
        return ingot__err(err, INGOT_E_UNSUPPORTED, INGOT_NO_OFFSET, "model_type", 10,
                          "config.json: model_type '%s' is not one the runtime runs (llama, "
                          "mistral, mixtral, qwen2, gpt2)", cj.model_type);
    if (cj.rs_type && c->arch != INGOT_LM_ARCH_LLAMA)
        return ingot__err(err, INGOT_E_UNSUPPORTED, INGOT_NO_OFFSET, "rope_scaling", 12,
                          "config.json: RoPE scaling on a model without RoPE (%s)",
                          cj.model_type);
    c->rope_scaling = (ingot_lm_rope_scaling)cj.rs_type;
    c->rope_factor = cj.rs_type ? cj.rs_factor : 1.0;
    c->rope_low_freq_factor = cj.rs_low;
    c->rope_high_freq_factor = cj.rs_high;
    c->rope_orig_ctx = cj.rs_orig;
    c->naming = "hf";
    c->n_layer = cj.layers;
    c->dim = cj.hidden;
    c->n_head = cj.heads;
    c->n_head_kv = cj.kv_heads ? cj.kv_heads : cj.heads;
    c->head_dim = cj.head_dim;
    c->vocab = cj.vocab;
    c->ctx_train = cj.ctx ? cj.ctx : 2048;
    c->n_expert = cj.experts;
    c->n_expert_used = cj.experts_used;
    c->bos = cj.bos;
    c->eos = cj.eos;
    c->sliding_window = cj.window;
    const char *need[] = {"num_hidden_layers", "hidden_size", "num_attention_heads"};
    uint32_t have[] = {c->n_layer, c->dim, c->n_head};
    if (c->arch == INGOT_LM_ARCH_GPT2) {
        need[0] = "n_layer";
        need[1] = "n_embd";
        need[2] = "n_head";
    }
    for (int i = 0; i < 3; i++)
        if (!have[i])
            return ingot__err(err, INGOT_E_BAD_METADATA, INGOT_NO_OFFSET, need[i],
                              strlen(need[i]), "config.json: '%s' is missing or 0", need[i]);
    if (c->arch == INGOT_LM_ARCH_GPT2) {
        c->rope_mode = INGOT_ROPE_INTERLEAVED; /* unused */
        c->ffn_dim = cj.inter ? cj.inter : 4 * c->dim;
        c->norm_eps = seen(&cj, "layer_norm_epsilon") ? cj.ln_eps : 1e-5;
        c->qkv_bias = true;
        if (cj.act[0] && strcmp(cj.act, "gelu_new") && strcmp(cj.act, "gelu_pytorch_tanh"))
            return ingot__err(err, INGOT_E_UNSUPPORTED, INGOT_NO_OFFSET, "activation_function",
                              19, "config.json: GPT-2 activation '%s' (the runtime runs "
                              "gelu_new, the tanh form)", cj.act);
    } else {
        c->rope_mode = INGOT_ROPE_HALF;
        if (!cj.inter)
            return ingot__err(err, INGOT_E_BAD_METADATA, INGOT_NO_OFFSET, "intermediate_size",
                              17, "config.json: 'intermediate_size' is missing or 0");
        c->ffn_dim = cj.inter;
        c->norm_eps = seen(&cj, "rms_norm_eps") ? cj.rms_eps : 1e-6;
        c->rope_theta = seen(&cj, "rope_theta") ? cj.theta : 10000.0;
        c->qkv_bias = cj.attn_bias || !strcmp(cj.model_type, "qwen2");
        c->tied_head = cj.tie;
        if (cj.act[0] && strcmp(cj.act, "silu"))
            return ingot__err(err, INGOT_E_UNSUPPORTED, INGOT_NO_OFFSET, "hidden_act", 10,
                              "config.json: activation '%s' (the runtime runs silu)", cj.act);
        /* partial rotary: int(head_dim * factor) dims rotate, as transformers computes them */
        uint32_t hd = c->head_dim ? c->head_dim
                      : c->n_head && c->dim % c->n_head == 0 ? c->dim / c->n_head : 0;
        c->rope_dims = hd;
        if (seen(&cj, "partial_rotary_factor")) {
            double rd = (double)hd * cj.partial;
            if (!(cj.partial > 0 && cj.partial <= 1) || (uint32_t)rd < 2 || (uint32_t)rd % 2)
                return ingot__err(err, INGOT_E_BAD_METADATA, INGOT_NO_OFFSET,
                                  "partial_rotary_factor", 21, "config.json: "
                                  "'partial_rotary_factor' %g of head size %u gives %u rotary "
                                  "dims (even, 2..head size)", cj.partial, hd, (uint32_t)rd);
            c->rope_dims = (uint32_t)rd;
        }
        if (!strcmp(cj.model_type, "mixtral") && (!c->n_expert || !c->n_expert_used))
            return ingot__err(err, INGOT_E_BAD_METADATA, INGOT_NO_OFFSET, "num_local_experts",
                              17, "config.json: mixtral needs num_local_experts and "
                              "num_experts_per_tok");
    }
    return INGOT_OK;
}

ingot_status ingot__lm_config_json(const void *json, size_t n, const char *path,
                                   ingot_lm_config *c, ingot_error *err)
{
    ingot_status st = parse_json(json, n, path, c, err);
    /* the JSON scanner's own errors name a region, not the file: say which file */
    if (st != INGOT_OK && err && (!err->where[0] || !strcmp(err->where, "header")))
        ingot__fmt(err->where, sizeof err->where, "config.json");
    return st;
}

ingot_status ingot__lm_config_check(ingot_lm_config *c, const char *where, ingot_error *err)
{
    size_t wl = strlen(where);
#define BAD(...)                                                                              \
    return ingot__err(err, INGOT_E_BAD_METADATA, INGOT_NO_OFFSET, where, wl, __VA_ARGS__)
    if (c->n_layer < 1 || c->n_layer > LM_MAX_LAYERS) BAD("lm: %u layers (1..%u)", c->n_layer,
                                                          LM_MAX_LAYERS);
    if (c->dim < 1 || c->dim > LM_MAX_DIM) BAD("lm: width %u (1..%u)", c->dim, LM_MAX_DIM);
    if (c->ffn_dim < 1 || c->ffn_dim > LM_MAX_FFN) BAD("lm: ffn width %u (1..%u)", c->ffn_dim,
                                                       LM_MAX_FFN);
    if (c->n_head < 1 || c->n_head > LM_MAX_HEADS || c->n_head_kv < 1 ||
        c->n_head_kv > c->n_head || c->n_head % c->n_head_kv)
        BAD("lm: %u heads and %u kv heads (kv heads must divide heads)", c->n_head, c->n_head_kv);
    if (c->head_dim == 0) {
        if (c->dim % c->n_head) BAD("lm: width %u is not a multiple of %u heads", c->dim,
                                    c->n_head);
        c->head_dim = c->dim / c->n_head;
    }
    if (c->head_dim < 2 || c->head_dim > LM_MAX_HEAD_DIM || c->head_dim % 2)
        BAD("lm: head size %u (even, 2..%u)", c->head_dim, LM_MAX_HEAD_DIM);
    if (c->arch == INGOT_LM_ARCH_GPT2 && c->head_dim * c->n_head != c->dim)
        BAD("lm: GPT-2 needs heads x head size = width (%u x %u != %u)", c->n_head, c->head_dim,
            c->dim);
    if (c->ctx_train < 1 || c->ctx_train > LM_MAX_CTX) BAD("lm: context %u (1..%u)",
                                                           c->ctx_train, LM_MAX_CTX);
    if (c->n_expert > LM_MAX_EXPERTS || c->n_expert_used > c->n_expert ||
        (c->n_expert && !c->n_expert_used) || c->n_expert == 1)
        BAD("lm: %u experts, %u used per token", c->n_expert, c->n_expert_used);
    if (!(c->norm_eps > 0 && c->norm_eps < 1)) BAD("lm: norm epsilon out of range (0, 1)");
    if (c->arch == INGOT_LM_ARCH_LLAMA && !(c->rope_theta > 1 && c->rope_theta < 1e12))
        BAD("lm: rope theta out of range (1, 1e12)");
    if (c->arch != INGOT_LM_ARCH_LLAMA) c->rope_dims = 0;
    else if (c->rope_dims == 0) c->rope_dims = c->head_dim;
    if (c->arch == INGOT_LM_ARCH_LLAMA &&
        (c->rope_dims < 2 || c->rope_dims % 2 || c->rope_dims > c->head_dim))
        BAD("lm: %u rotary dims (even, 2..head size %u)", c->rope_dims, c->head_dim);
    if (c->vocab > LM_MAX_VOCAB) BAD("lm: vocabulary %u (at most %u)", c->vocab, LM_MAX_VOCAB);
#undef BAD
    return INGOT_OK;
}
