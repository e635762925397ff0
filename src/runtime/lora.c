/*
 * lora.c - PEFT LoRA adapters for the Llama family (ingot_lm_opts.lora_path): adapter_config.json
 * (r, lora_alpha, target_modules, use_rslora; anything that changes the maths and is not
 * supported is refused, naming the key) and adapter_model.safetensors with PEFT's names
 * ("base_model.model.<module>.lora_A.weight" [r, in], ".lora_B.weight" [out, r]). Each targeted
 * matrix W gets s * B A, s = scale * alpha / r (or / sqrt(r)): merged into an F32 copy of W at
 * open (in double), or kept as two F32 factors the runtime applies per call (lm_session.c). On
 * GGUF Llama weights, whose q/k rows llama.cpp permuted for the interleaved rotation, B's rows
 * are permuted the same way. Every adapter tensor must be used.
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
            else if (on)
                return cfg_err(err, key_is(&t, "use_dora") ? "use_dora" : "fan_in_fan_out",
                               "is not supported");
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

/* The roles a Llama LoRA can target, and their PEFT module names. */
static const struct {
    lm_role role;
    const char *module;
} targets[] = {
    {LM_ATTN_Q, "q_proj"}, {LM_ATTN_K, "k_proj"}, {LM_ATTN_V, "v_proj"},
    {LM_ATTN_OUT, "o_proj"}, {LM_FFN_GATE, "gate_proj"}, {LM_FFN_UP, "up_proj"},
    {LM_FFN_DOWN, "down_proj"},
};

static lm_w *role_weight(lm_layer *ly, lm_role r)
{
    switch (r) {
    case LM_ATTN_Q: return &ly->wq;
    case LM_ATTN_K: return &ly->wk;
    case LM_ATTN_V: return &ly->wv;
    case LM_ATTN_OUT: return &ly->wo;
    case LM_FFN_GATE: return &ly->w_gate;
    case LM_FFN_UP: return &ly->w_up;
    case LM_FFN_DOWN: return &ly->w_down;
    default: return NULL;
    }
}

static bool targeted(const lora_cfg *c, const char *module)
{
    for (uint32_t i = 0; i < c->ntargets; i++)
        if (!strcmp(c->targets[i], module)) return true;
    return false;
}

/* Reads an adapter tensor of shape [rows, cols] as F32 (any float dtype). */
static ingot_status read_factor(ingot_lm *m, const ingot_file *af, const char *name,
                                uint64_t rows, uint64_t cols, float *dst, ingot_error *err)
{
    ingot_tensor_info ti;
    if (ingot_file_tensor_find(af, name, &ti) != INGOT_OK)
        return ingot__err(err, INGOT_E_NOT_FOUND, INGOT_NO_OFFSET, name, strlen(name),
                          "lora: tensor '%s' is missing from the adapter", name);
    if (ti.rank != 2 || ti.shape[0] != rows || ti.shape[1] != cols)
        return ingot__err(err, INGOT_E_BAD_SHAPE, INGOT_NO_OFFSET, name, strlen(name),
                          "lora: expected [%llu, %llu]", (unsigned long long)rows,
                          (unsigned long long)cols);
    (void)m;
    return ingot_file_tensor_dequantize(af, ti.index, 0, ti.nelem, dst, err);
}

/* llama.cpp's q/k row order for the interleaved rotation: within each head, new row 2i + j is
 * HF row j * hd/2 + i. Permutes B's rows (out dim) in place via tmp (rows * r floats). */
static void permute_rows(float *b, float *tmp, uint32_t heads, uint32_t hd, uint64_t r)
{
    memcpy(tmp, b, (size_t)heads * hd * r * sizeof *b);
    for (uint32_t h = 0; h < heads; h++)
        for (uint32_t i = 0; i < hd / 2; i++)
            for (uint32_t j = 0; j < 2; j++)
                memcpy(b + ((uint64_t)h * hd + 2 * i + j) * r,
                       tmp + ((uint64_t)h * hd + j * (hd / 2) + i) * r, r * sizeof *b);
}

/* W becomes an owned, writable, contiguous F32 [out, in] copy (re-read from the file). */
static ingot_status own_f32(ingot_lm *m, lm_w *w, const char *name, ingot_error *err)
{
    if (w->t.dtype == INGOT_DTYPE_F32 && w->buf && ingot_buffer_writable(w->buf) &&
        ingot_tensor_is_contiguous(&w->t))
        return INGOT_OK;
    ingot_tensor_info ti;
    if (ingot_file_tensor_find(m->f, name, &ti) != INGOT_OK)
        return ingot__err(err, INGOT_E_NOT_FOUND, INGOT_NO_OFFSET, name, strlen(name),
                          "lora: base tensor vanished");
    uint64_t nb = ti.nelem * 4;
    ingot_buffer *nbuf = NULL;
    ING_TRY(ingot_buffer_alloc(m->be, (size_t)nb, &nbuf, err));
    ingot_status st = ingot_file_tensor_dequantize(m->f, ti.index, 0, ti.nelem,
                                                   ingot_buffer_host(nbuf), err);
    int64_t shape[2] = {(int64_t)ti.shape[0], (int64_t)ti.shape[1]};
    ingot_tensor t;
    if (st == INGOT_OK) st = ingot_tensor_init(&t, nbuf, 0, INGOT_DTYPE_F32, 2, shape, err);
    if (st != INGOT_OK) {
        ingot_buffer_free(nbuf);
        return st;
    }
    m->weight_bytes += nb - (w->buf && ingot_buffer_writable(w->buf) ? nb : ti.nbytes);
    if (!(w->buf && ingot_buffer_writable(w->buf))) m->owned_bytes += nb;
    ingot_buffer_free(w->buf);
    w->buf = nbuf;
    w->t = t;
    char msg[256];
    snprintf(msg, sizeof msg, "lm: %s: merged with its LoRA into an F32 copy (%llu bytes)", name,
             (unsigned long long)nb);
    ingot__lm_notice(m, msg);
    return INGOT_OK;
}

static ingot_status apply_one(ingot_lm *m, const ingot_file *af, const lora_cfg *c, double s,
                              lm_w *w, lm_role role, const char *base, const char *module,
                              bool runtime, uint64_t *used, ingot_error *err)
{
    const ingot_lm_config *cfg = &m->cfg;
    uint64_t out = (uint64_t)w->t.shape[0], in = (uint64_t)w->t.shape[1], r = c->r;
    char an[224], bn[224];
    snprintf(an, sizeof an, "base_model.model.%s.lora_A.weight", module);
    snprintf(bn, sizeof bn, "base_model.model.%s.lora_B.weight", module);
    uint64_t abytes = r * in * 4, bbytes = out * r * 4;
    ingot_buffer *lb = NULL;
    ING_TRY(ingot_buffer_alloc(m->be, (size_t)(abytes + bbytes + out * r * 4), &lb, err));
    float *A = ingot_buffer_host(lb), *B = A + r * in, *tmp = B + out * r;
    ingot_status st = read_factor(m, af, an, r, in, A, err);
    if (st == INGOT_OK) st = read_factor(m, af, bn, out, r, B, err);
    if (st == INGOT_OK && m->naming == LM_NAMES_GGUF && cfg->rope_mode == INGOT_ROPE_INTERLEAVED &&
        (role == LM_ATTN_Q || role == LM_ATTN_K))
        permute_rows(B, tmp, role == LM_ATTN_Q ? cfg->n_head : cfg->n_head_kv, cfg->head_dim, r);
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
            *used += 2;
            return INGOT_OK;
        }
    }
    if (st == INGOT_OK) st = own_f32(m, w, base, err);
    if (st == INGOT_OK) {
        float *W = ingot_buffer_host(w->buf);
        for (uint64_t o = 0; o < out; o++)
            for (uint64_t i = 0; i < in; i++) {
                double acc = 0;
                for (uint64_t k = 0; k < r; k++) acc += (double)B[o * r + k] * A[k * in + i];
                W[o * in + i] = (float)(W[o * in + i] + s * acc);
            }
        *used += 2;
    }
    ingot_buffer_free(lb);
    return st;
}

ingot_status ingot__lm_lora_apply(ingot_lm *m, const ingot_lm_opts *o, ingot_error *err)
{
    const char *path = o->lora_path;
    size_t pl = strlen(path);
    if (m->cfg.arch != INGOT_LM_ARCH_LLAMA || m->cfg.n_expert)
        return ingot__err(err, INGOT_E_UNSUPPORTED, INGOT_NO_OFFSET, path, pl,
                          "lora: adapters are supported for dense Llama-family models");
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
    double scale = o->lora_scale != 0 ? o->lora_scale : 1.0;
    double s = scale * c.alpha / (c.rslora ? sqrt((double)c.r) : (double)c.r);
    ingot_open_opts oo = {0};
    oo.allocator = m->al;
    ingot_file *af = NULL;
    ING_TRY(ingot_file_open(weights, &oo, &af, err));
    uint64_t used = 0;
    for (uint32_t l = 0; st == INGOT_OK && l < m->cfg.n_layer; l++)
        for (size_t k = 0; st == INGOT_OK && k < sizeof targets / sizeof targets[0]; k++) {
            if (!targeted(&c, targets[k].module)) continue;
            char hf[160], base[160];
            bool hf_t;
            if (!ingot__lm_role_name(LM_NAMES_HF, m->cfg.arch, targets[k].role, l, 0, hf,
                                     sizeof hf, &hf_t) ||
                !ingot__lm_role_name(m->naming, m->cfg.arch, targets[k].role, l, 0, base,
                                     sizeof base, &hf_t))
                continue;
            hf[strlen(hf) - 7] = 0; /* drop ".weight": the module path */
            st = apply_one(m, af, &c, s, role_weight(&m->layers[l], targets[k].role),
                           targets[k].role, base, hf, o->lora_runtime, &used, err);
        }
    if (st == INGOT_OK && used != ingot_file_tensor_count(af)) {
        /* name the first adapter tensor that was not used */
        for (uint64_t i = 0; i < ingot_file_tensor_count(af); i++) {
            ingot_tensor_info ti;
            ingot_file_tensor_at(af, i, &ti);
            bool known = false;
            for (uint32_t l = 0; !known && l < m->cfg.n_layer; l++)
                for (size_t k = 0; !known && k < sizeof targets / sizeof targets[0]; k++) {
                    char hf[160], want[224];
                    bool hf_t;
                    if (!targeted(&c, targets[k].module) ||
                        !ingot__lm_role_name(LM_NAMES_HF, m->cfg.arch, targets[k].role, l, 0, hf,
                                             sizeof hf, &hf_t))
                        continue;
                    hf[strlen(hf) - 7] = 0;
                    for (int ab = 0; ab < 2 && !known; ab++) {
                        snprintf(want, sizeof want, "base_model.model.%s.lora_%c.weight", hf,
                                 ab ? 'B' : 'A');
                        known = !strcmp(want, ti.name);
                    }
                }
            if (!known) {
                st = ingot__err(err, INGOT_E_UNSUPPORTED, INGOT_NO_OFFSET, ti.name, ti.name_len,
                                "lora: adapter tensor '%s' targets nothing this runtime adapts",
                                ti.name);
                break;
            }
        }
    }
    ingot_file_close(af);
    if (st == INGOT_OK) {
        char msg[320];
        snprintf(msg, sizeof msg, "lm: LoRA %s: r %llu, alpha %g, scale %g, %llu matrices %s",
                 path, (unsigned long long)c.r, c.alpha, scale, (unsigned long long)used / 2,
                 o->lora_runtime ? "applied at run time" : "merged");
        ingot__lm_notice(m, msg);
    }
    return st;
}
