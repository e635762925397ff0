/*
 * lora.c - PEFT LoRA adapters (ingot_lm_opts.lora_path) for the Llama family (attention, dense
 * MLP, Mixtral's router and experts) and GPT-2 (c_attn, c_proj, c_fc): adapter_config.json (r,
 * lora_alpha, target_modules matched as PEFT does, use_rslora; anything that changes the maths and
 * is not supported is refused, naming the key) and adapter_model.safetensors with PEFT's names
 * ("base_model.model.<module>.lora_A.weight" [r, in], ".lora_B.weight" [out, r]). Each targeted
 * matrix W [out, in] gets s * B A, s = scale * alpha / r (or / sqrt(r)): merged into an F32 copy
 * of W at open (in double), or kept as two F32 factors the runtime applies per call
 * (lm_session.c). GPT-2's Conv1D weights are stored [in, out] (HF) and bound as transposed views:
 * the same s * B A is added to the [out, in] copy (PEFT's (B A)^T in the stored orientation).
 * Expert matrices may be slices of GGUF's stacked ffn_*_exps tensors. On GGUF Llama weights,
 * whose q/k rows llama.cpp permuted for the interleaved rotation, B's rows are permuted the same
 * way. Every adapter tensor must be used.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "alloc.h"
#include "checked.h"
#include "error.h"
#include "ingot/quant.h"
#include "json.h"
#include "lm_internal.h"

#define MAX_TARGETS 32
#define MAX_RANK 4096u

typedef struct lora_cfg {
    uint64_t r;
    double alpha;
    bool rslora;
    bool fan_in_fan_out; /* PEFT's flag for Conv1D layers (GPT-2): allowed there only */
    char targets[MAX_TARGETS][48];
    uint32_t ntargets;
} lora_cfg;

static ingot_status cfg_err(ingot_error *err, const char *key, const char *what)
{
    return ingot__err(err, INGOT_E_UNSUPPORTED, INGOT_NO_OFFSET, key, strlen(key),
                      "adapter_config.json: '%s' %s", key, what);
}

static bool key_is(const ingot__json_tok *t, const char *k)
{
    return ingot__json_str_eq(t, k, strlen(k));
}

/* The keys that change the maths; everything else (paths, task type, ...) is skipped. */
static ingot_status parse_cfg(const void *buf, size_t n, lora_cfg *c, ingot_error *err)
{
    memset(c, 0, sizeof *c);
    ingot__json j;
    ingot__json_init(&j, buf, n, 64, 0);
    ingot__json_tok t, v;
    bool have_r = false, have_alpha = false, have_targets = false;
    ING_TRY(ingot__json_next(&j, &t, err));
    if (t.type != ING_JSON_OBJECT)
        return ingot__err(err, INGOT_E_BAD_METADATA, t.pos, "adapter_config.json", 19,
                          "adapter_config.json: the top level must be an object");
    for (;;) {
        ING_TRY(ingot__json_next(&j, &t, err));
        if (t.type == ING_JSON_OBJECT_END) break;
        ING_TRY(ingot__json_next(&j, &v, err));
        if (key_is(&t, "r")) {
            if (v.type != ING_JSON_NUMBER || ingot__json_u64(&j, &v, &c->r, NULL) != INGOT_OK ||
                c->r < 1 || c->r > MAX_RANK)
                return ingot__err(err, INGOT_E_BAD_METADATA, v.pos, "r", 1,
                                  "adapter_config.json: 'r' must be an integer 1..%u", MAX_RANK);
            have_r = true;
        } else if (key_is(&t, "lora_alpha")) {
            if (v.type != ING_JSON_NUMBER || ingot__json_f64(&j, &v, &c->alpha, NULL) != INGOT_OK)
                return ingot__err(err, INGOT_E_BAD_METADATA, v.pos, "lora_alpha", 10,
                                  "adapter_config.json: 'lora_alpha' must be a number");
            have_alpha = true;
        } else if (key_is(&t, "use_rslora") || key_is(&t, "fan_in_fan_out") ||
                   key_is(&t, "use_dora")) {
            bool on = v.type == ING_JSON_TRUE;
            if (v.type != ING_JSON_TRUE && v.type != ING_JSON_FALSE && v.type != ING_JSON_NULL)
                return ingot__err(err, INGOT_E_BAD_METADATA, v.pos, "adapter_config.json", 19,
                                  "adapter_config.json: a flag must be true or false");
            if (key_is(&t, "use_rslora")) c->rslora = on;
            else if (key_is(&t, "fan_in_fan_out")) c->fan_in_fan_out = on;
            else if (on)
                return cfg_err(err, "use_dora", "is not supported");
        } else if (key_is(&t, "bias")) {
            if (!(v.type == ING_JSON_STRING && ingot__json_str_eq(&v, "none", 4)))
                return cfg_err(err, "bias", "must be \"none\" (trained biases are not supported)");
        } else if (key_is(&t, "peft_type")) {
            if (!(v.type == ING_JSON_STRING && ingot__json_str_eq(&v, "LORA", 4)))
                return cfg_err(err, "peft_type", "must be \"LORA\"");
        } else if (key_is(&t, "layers_to_transform") || key_is(&t, "rank_pattern") ||
                   key_is(&t, "alpha_pattern")) {
            /* null or empty only: per-layer ranks and subsets are not supported */
            const char *k = key_is(&t, "rank_pattern") ? "rank_pattern"
                            : key_is(&t, "alpha_pattern") ? "alpha_pattern"
                                                          : "layers_to_transform";
            if (v.type == ING_JSON_OBJECT || v.type == ING_JSON_ARRAY) {
                ingot__json_tok e;
                ING_TRY(ingot__json_next(&j, &e, err));
                if (e.type != ING_JSON_OBJECT_END && e.type != ING_JSON_ARRAY_END)
                    return cfg_err(err, k, "is not supported");
            } else if (v.type != ING_JSON_NULL) {
                return cfg_err(err, k, "is not supported");
            }
        } else if (key_is(&t, "target_modules")) {
            if (v.type != ING_JSON_ARRAY)
                return cfg_err(err, "target_modules", "must be a list of module names (a regex "
                                                      "string is not supported)");
            for (;;) {
                ING_TRY(ingot__json_next(&j, &v, err));
                if (v.type == ING_JSON_ARRAY_END) break;
                size_t len;
                if (v.type != ING_JSON_STRING || c->ntargets == MAX_TARGETS || v.dlen >= 48 ||
                    ingot__json_str(&v, c->targets[c->ntargets], 47, &len, NULL) != INGOT_OK)
                    return ingot__err(err, INGOT_E_BAD_METADATA, v.pos, "target_modules", 14,
                                      "adapter_config.json: at most %d names of < 48 bytes",
                                      MAX_TARGETS);
                c->targets[c->ntargets++][len] = 0;
            }
            have_targets = true;
        } else {
            ING_TRY(ingot__json_skip(&j, &v, err));
        }
    }
    if (!have_r || !have_alpha || !have_targets)
        return ingot__err(err, INGOT_E_BAD_METADATA, INGOT_NO_OFFSET,
                          !have_r ? "r" : !have_alpha ? "lora_alpha" : "target_modules", 
                          !have_r ? 1 : !have_alpha ? 10 : 14,
                          "adapter_config.json: 'r', 'lora_alpha' and 'target_modules' are "
                          "required");
    return INGOT_OK;
}

/* The matrices of layer l an adapter can target: (role, expert, weight). */
typedef struct lora_slot {
    lm_role role;
    uint32_t expert;
    lm_w *w;
} lora_slot;

static size_t layer_slots(ingot_lm *m, uint32_t l, lora_slot *out, size_t cap)
{
    lm_layer *ly = &m->layers[l];
    size_t n = 0;
#define SLOT(r, e, wp)                                                                             \
    do {                                                                                           \
        if (n < cap) out[n] = (lora_slot){(r), (e), (wp)};                                         \
        n++;                                                                                       \
    } while (0)
    if (m->cfg.arch == INGOT_LM_ARCH_GPT2) {
        SLOT(LM_ATTN_QKV, 0, &ly->wqkv);
        SLOT(LM_ATTN_OUT, 0, &ly->wo);
        SLOT(LM_FFN_UP, 0, &ly->w_up);
        SLOT(LM_FFN_DOWN, 0, &ly->w_down);
        return n;
    }
    SLOT(LM_ATTN_Q, 0, &ly->wq);
    SLOT(LM_ATTN_K, 0, &ly->wk);
    SLOT(LM_ATTN_V, 0, &ly->wv);
    SLOT(LM_ATTN_OUT, 0, &ly->wo);
    if (!m->cfg.n_expert) {
        SLOT(LM_FFN_GATE, 0, &ly->w_gate);
        SLOT(LM_FFN_UP, 0, &ly->w_up);
        SLOT(LM_FFN_DOWN, 0, &ly->w_down);
        return n;
    }
    SLOT(LM_FFN_ROUTER, 0, &ly->router);
    for (uint32_t e = 0; e < m->cfg.n_expert; e++) {
        SLOT(LM_FFN_GATE_EXP, e, &ly->exp[(size_t)e * 3]);
        SLOT(LM_FFN_UP_EXP, e, &ly->exp[(size_t)e * 3 + 1]);
        SLOT(LM_FFN_DOWN_EXP, e, &ly->exp[(size_t)e * 3 + 2]);
    }
#undef SLOT
    return n;
}

/* PEFT's rule (check_target_module_exists): a module is targeted when its full name equals a
 * target or ends with "." + target. */
static bool targeted(const lora_cfg *c, const char *module)
{
    size_t ml = strlen(module);
    for (uint32_t i = 0; i < c->ntargets; i++) {
        size_t tl = strlen(c->targets[i]);
        if (tl > ml || strcmp(module + ml - tl, c->targets[i])) continue;
        if (tl == ml || module[ml - tl - 1] == '.') return true;
    }
    return false;
}

/* Reads an adapter tensor of shape [rows, cols] as F32 (any float dtype); marks it used. */
static ingot_status read_factor(const ingot_file *af, const char *name, uint64_t rows,
                                uint64_t cols, float *dst, bool *used, ingot_error *err)
{
    ingot_tensor_info ti;
    if (ingot_file_tensor_find(af, name, &ti) != INGOT_OK)
        return ingot__err(err, INGOT_E_NOT_FOUND, INGOT_NO_OFFSET, name, strlen(name),
                          "lora: tensor '%s' is missing from the adapter", name);
    if (ti.rank != 2 || ti.shape[0] != rows || ti.shape[1] != cols)
        return ingot__err(err, INGOT_E_BAD_SHAPE, INGOT_NO_OFFSET, name, strlen(name),
                          "lora: expected [%llu, %llu]", (unsigned long long)rows,
                          (unsigned long long)cols);
    used[ti.index] = true;
    return ingot_file_tensor_dequantize(af, ti.index, 0, ti.nelem, dst, err);
}

/* llama.cpp's q/k row order for the interleaved rotation: within each head, new row 2i + j is
 * HF row j * rot/2 + i for the first rot (rotated) rows; the rows after them stay. Permutes B's
 * rows (out dim) in place via tmp (rows * r floats). */
static void permute_rows(float *b, float *tmp, uint32_t heads, uint32_t hd, uint32_t rot,
                         uint64_t r)
{
    memcpy(tmp, b, (size_t)heads * hd * r * sizeof *b);
    for (uint32_t h = 0; h < heads; h++)
        for (uint32_t i = 0; i < rot / 2; i++)
            for (uint32_t j = 0; j < 2; j++)
                memcpy(b + ((uint64_t)h * hd + 2 * i + j) * r,
                       tmp + ((uint64_t)h * hd + j * (rot / 2) + i) * r, r * sizeof *b);
}

/* W becomes an owned, writable, contiguous F32 [out, in] copy of what it is bound to: a mapped
 * or converted matrix, a transposed view (GPT-2's Conv1D), a slice of stacked experts, in any
 * dtype ingot_dequantize decodes. Expert bytes are counted apart (MoE reads k of them). */
static ingot_status own_f32(ingot_lm *m, lm_w *w, const char *name, bool expert,
                            ingot_error *err)
{
    ingot_tensor *t = &w->t;
    bool owned = w->buf && ingot_buffer_writable(w->buf);
    if (t->dtype == INGOT_DTYPE_F32 && owned && ingot_tensor_is_contiguous(t)) return INGOT_OK;
    uint64_t out = (uint64_t)t->shape[0], in = (uint64_t)t->shape[1], ne = out * in, nb = ne * 4;
    uint64_t stored = t->dtype == INGOT_DTYPE_F32
                          ? nb
                          : ne / ingot_dtype_block_elems(t->dtype) *
                                ingot_dtype_block_bytes(t->dtype);
    const uint8_t *src = (const uint8_t *)ingot_buffer_host(t->buf) + t->offset;
    ingot_buffer *nbuf = NULL;
    ING_TRY(ingot_buffer_alloc(m->be, (size_t)nb, &nbuf, err));
    float *dst = ingot_buffer_host(nbuf);
    ingot_status st = INGOT_OK;
    if (t->dtype == INGOT_DTYPE_F32) {
        const float *f = (const float *)(const void *)src;
        for (uint64_t o = 0; o < out; o++)
            for (uint64_t i = 0; i < in; i++)
                dst[o * in + i] = f[(int64_t)o * t->strides[0] + (int64_t)i * t->strides[1]];
    } else if (!ingot_tensor_is_contiguous(t)) {
        st = ingot__err(err, INGOT_E_UNSUPPORTED, INGOT_NO_OFFSET, name, strlen(name),
                        "lora: %s is a strided %s view", name, ingot_dtype_name(t->dtype));
    } else {
        st = ingot_dequantize(t->dtype, src, (size_t)stored, dst, ne, err);
    }
    int64_t shape[2] = {(int64_t)out, (int64_t)in};
    ingot_tensor nt;
    if (st == INGOT_OK) st = ingot_tensor_init(&nt, nbuf, 0, INGOT_DTYPE_F32, 2, shape, err);
    if (st != INGOT_OK) {
        ingot_buffer_free(nbuf);
        return st;
    }
    uint64_t *read = expert ? &m->expert_bytes : &m->weight_bytes;
    *read = *read + nb - stored;
    m->owned_bytes = m->owned_bytes + nb - (owned ? stored : 0);
    ingot_buffer_free(w->buf);
    w->buf = nbuf;
    w->t = nt;
    char msg[256];
    snprintf(msg, sizeof msg, "lm: %s: merged with its LoRA into an F32 copy (%llu bytes)", name,
             (unsigned long long)nb);
    ingot__lm_notice(m, msg);
    return INGOT_OK;
}

/* The adapter names of module `hf` (its HF name without ".weight"); GPT-2's are tried with and
 * without "transformer." (GPT2LMHeadModel and GPT2Model bases). False: the adapter has no A. */
static bool adapter_names(const ingot_file *af, const char *hf, char *an, char *bn, size_t cap)
{
    ingot_tensor_info ti;
    for (int k = 0; k < 2; k++) {
        const char *mod = hf;
        if (k == 1) {
            if (strncmp(hf, "transformer.", 12)) break;
            mod = hf + 12;
        }
        snprintf(an, cap, "base_model.model.%s.lora_A.weight", mod);
        snprintf(bn, cap, "base_model.model.%s.lora_B.weight", mod);
        if (ingot_file_tensor_find(af, an, &ti) == INGOT_OK) return true;
    }
    snprintf(an, cap, "base_model.model.%s.lora_A.weight", hf);
    snprintf(bn, cap, "base_model.model.%s.lora_B.weight", hf);
    return false;
}

static ingot_status apply_one(ingot_lm *m, const ingot_file *af, const lora_cfg *c, double s,
                              const lora_slot *sl, const char *base, const char *module,
                              bool runtime, bool *used, uint64_t *nused, ingot_error *err)
{
    const ingot_lm_config *cfg = &m->cfg;
    lm_w *w = sl->w;
    lm_role role = sl->role;
    uint64_t out = (uint64_t)w->t.shape[0], in = (uint64_t)w->t.shape[1], r = c->r;
    char an[224], bn[224];
    adapter_names(af, module, an, bn, sizeof an);
    uint64_t abytes = r * in * 4, bbytes = out * r * 4;
    ingot_buffer *lb = NULL;
    ING_TRY(ingot_buffer_alloc(m->be, (size_t)(abytes + bbytes + out * r * 4), &lb, err));
    float *A = ingot_buffer_host(lb), *B = A + r * in, *tmp = B + out * r;
    ingot_status st = read_factor(af, an, r, in, A, used, err);
    if (st == INGOT_OK) st = read_factor(af, bn, out, r, B, used, err);
    if (st == INGOT_OK && m->naming == LM_NAMES_GGUF && cfg->rope_mode == INGOT_ROPE_INTERLEAVED &&
        (role == LM_ATTN_Q || role == LM_ATTN_K))
        permute_rows(B, tmp, role == LM_ATTN_Q ? cfg->n_head : cfg->n_head_kv, cfg->head_dim,
                     cfg->rope_dims, r);
    if (st == INGOT_OK && runtime) {
        int64_t as[2] = {(int64_t)r, (int64_t)in}, bs[2] = {(int64_t)out, (int64_t)r};
        st = ingot_tensor_init(&w->la, lb, 0, INGOT_DTYPE_F32, 2, as, err);
        if (st == INGOT_OK) st = ingot_tensor_init(&w->lb, lb, abytes, INGOT_DTYPE_F32, 2, bs, err);
        if (st == INGOT_OK) {
            w->lbuf = lb;
            w->lscale = (float)s;
            w->lora = true;
            if (r > m->lora_rank) m->lora_rank = (uint32_t)r;
            if (out > m->lora_out) m->lora_out = (uint32_t)out;
            m->owned_bytes += abytes + bbytes;
            *nused += 2;
            return INGOT_OK;
        }
    }
    bool expert = role == LM_FFN_GATE_EXP || role == LM_FFN_UP_EXP || role == LM_FFN_DOWN_EXP;
    if (st == INGOT_OK) st = own_f32(m, w, base, expert, err);
    if (st == INGOT_OK) {
        float *W = ingot_buffer_host(w->buf);
        for (uint64_t o = 0; o < out; o++)
            for (uint64_t i = 0; i < in; i++) {
                double acc = 0;
                for (uint64_t k = 0; k < r; k++) acc += (double)B[o * r + k] * A[k * in + i];
                W[o * in + i] = (float)(W[o * in + i] + s * acc);
            }
        *nused += 2;
    }
    ingot_buffer_free(lb);
    return st;
}

/* Every (layer, slot) the adapter targets gets its factors. */
static ingot_status apply_all(ingot_lm *m, const ingot_file *af, const lora_cfg *c, double s,
                              bool runtime, bool *used, uint64_t *nused, ingot_error *err)
{
    size_t cap = 8 + 3 * (size_t)m->cfg.n_expert;
    lora_slot slots[8 + 3 * LM_MAX_EXPERTS];
    for (uint32_t l = 0; l < m->cfg.n_layer; l++) {
        size_t n = layer_slots(m, l, slots, cap);
        for (size_t k = 0; k < n; k++) {
            char hf[160], base[176];
            bool hf_t;
            if (!ingot__lm_role_name(LM_NAMES_HF, m->cfg.arch, slots[k].role, l, slots[k].expert,
                                     hf, sizeof hf, &hf_t))
                continue;
            hf[strlen(hf) - 7] = 0; /* drop ".weight": the module path */
            if (!targeted(c, hf)) continue;
            /* the weight's own name, for messages (a slice of GGUF's stacked experts: the
             * per-expert name) */
            if (!ingot__lm_role_name(m->naming, m->cfg.arch, slots[k].role, l, slots[k].expert,
                                     base, sizeof base, &hf_t))
                snprintf(base, sizeof base, "%s.weight", hf);
            ING_TRY(apply_one(m, af, c, s, &slots[k], base, hf, runtime, used, nused, err));
        }
    }
    return INGOT_OK;
}

ingot_status ingot__lm_lora_apply(ingot_lm *m, const ingot_lm_opts *o, ingot_error *err)
{
    const char *path = o->lora_path;
    size_t pl = strlen(path);
    if (pl > 3000)
        return ingot__err(err, INGOT_E_BAD_PATH, INGOT_NO_OFFSET, NULL, 0, "lora: path too long");
    char weights[4096], config[4096];
    struct stat stt;
    if (stat(path, &stt) == 0 && S_ISDIR(stt.st_mode)) {
        snprintf(weights, sizeof weights, "%s/adapter_model.safetensors", path);
        snprintf(config, sizeof config, "%s/adapter_config.json", path);
    } else {
        snprintf(weights, sizeof weights, "%s", path);
        const char *slash = strrchr(path, '/');
        int dl = slash ? (int)(slash - path) : 1;
        snprintf(config, sizeof config, "%.*s/adapter_config.json", dl, slash ? path : ".");
    }
    void *buf = NULL;
    size_t n = 0;
    ING_TRY(ingot__lm_read_file(m->al, config, &buf, &n, err));
    lora_cfg c;
    ingot_status st = parse_cfg(buf, n, &c, err);
    ingot__free(m->al, buf, n ? n : 1);
    ING_TRY(st);
    /* PEFT sets fan_in_fan_out for Conv1D layers (GPT-2's, stored [in, out]); on Linear layers
     * it would mean the adapter was made for another layout */
    if (c.fan_in_fan_out && m->cfg.arch != INGOT_LM_ARCH_GPT2)
        return cfg_err(err, "fan_in_fan_out", "is for Conv1D layers (GPT-2), not this model's");
    double scale = o->lora_scale != 0 ? o->lora_scale : 1.0;
    double s = scale * c.alpha / (c.rslora ? sqrt((double)c.r) : (double)c.r);
    ingot_open_opts oo = {0};
    oo.allocator = m->al;
    ingot_file *af = NULL;
    ING_TRY(ingot_file_open(weights, &oo, &af, err));
    uint64_t count = ingot_file_tensor_count(af), nused = 0;
    bool *used = ingot__calloc(m->al, count ? count : 1);
    if (!used) st = ingot__err(err, INGOT_E_NOMEM, INGOT_NO_OFFSET, NULL, 0, "lora: tensors");
    if (st == INGOT_OK) st = apply_all(m, af, &c, s, o->lora_runtime, used, &nused, err);
    /* name the first adapter tensor that was not used: refused, not silently dropped */
    for (uint64_t i = 0; st == INGOT_OK && i < count; i++) {
        ingot_tensor_info ti;
        if (used[i] || ingot_file_tensor_at(af, i, &ti) != INGOT_OK) continue;
        st = ingot__err(err, INGOT_E_UNSUPPORTED, INGOT_NO_OFFSET, ti.name, ti.name_len,
                        "lora: adapter tensor '%s' targets nothing this runtime adapts",
                        ti.name);
    }
    if (used) ingot__free(m->al, used, count ? count : 1);
    ingot_file_close(af);
    if (st == INGOT_OK) {
        char msg[320];
        snprintf(msg, sizeof msg, "lm: LoRA %s: r %llu, alpha %g, scale %g, %llu matrices %s",
                 path, (unsigned long long)c.r, c.alpha, scale, (unsigned long long)nused / 2,
                 o->lora_runtime ? "applied at run time" : "merged");
        ingot__lm_notice(m, msg);
    }
    return st;
}
