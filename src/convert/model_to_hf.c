/*
 * model_to_hf.c - ingot_convert_gguf_to_hf (convert.h section 4): a model with llama.cpp's names
 * and keys written as a Hugging Face folder: model.safetensors (or shards + index) with HF names,
 * q/k rows back in half-split order, Conv1D weights transposed back, stacked experts split;
 * config.json from the keys; tokenizer.json + tokenizer_config.json from tokenizer.ggml.*.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "alloc.h"
#include "error.h"
#include "json.h"
#include "model_impl.h"

#define NAME_CAP 160
#define SHARD_DEFAULT 5000000000ull /* transformers' save_pretrained default, 5 GB */

typedef struct hf_tensor {
    char name[NAME_CAP];
    uint64_t src;
    uint32_t expert;   /* slice of a stacked tensor, UINT32_MAX for a whole one */
    char qk;
    bool transpose;
    ingot_dtype dtype;
    uint32_t rank;
    uint64_t shape[INGOT_MAX_RANK];
    uint64_t nbytes;
} hf_tensor;

typedef struct g2h {
    const ingot_file *f;
    const char *dir;
    const ingot_convert_model_opts *o;
    ingot_lm_config cfg;
    char arch[32];
    bool permute;
    hf_tensor *t;
    size_t nt;
    uint32_t vocab;
    bool tied, q_bias;
} g2h;

static void notice(const g2h *c, const char *msg)
{
    if (c->o && c->o->notice) c->o->notice(c->o->notice_ctx, msg);
}

static ingot_status map_tensors(g2h *c, ingot_error *err)
{
    uint64_t n = ingot_file_tensor_count(c->f);
    c->tied = true;
    for (uint64_t i = 0; i < n; i++) {
        ingot_tensor_info ti;
        ingot_file_tensor_at(c->f, i, &ti);
        if (ingot_dtype_is_quantized(ti.dtype))
            return ingot__err(err, INGOT_BAD_TYPE, INGOT_NO_OFFSET, ti.name, ti.name_len,
                              "tensor '%s' is %s, which safetensors cannot hold: dequantize it "
                              "first (ingot convert --dequantize F32|F16|BF16)",
                              ti.name, ingot_dtype_name(ti.dtype));
        if (!strcmp(ti.name, "output.weight")) c->tied = false;
        if (!strcmp(ti.name, "blk.0.attn_q.bias")) c->q_bias = true;
        if (!strcmp(ti.name, "token_embd.weight") && ti.rank == 2)
            c->vocab = (uint32_t)ti.shape[0];
        ingot_lm_name_info info;
        char hn[NAME_CAP];
        ingot_status st = ingot_lm_name_to_hf(c->cfg.arch, ti.name, 0, hn, sizeof hn, &info, err);
        if (st == INGOT_NOT_FOUND)
            return ingot__err(err, INGOT_UNSUPPORTED, INGOT_NO_OFFSET, ti.name, ti.name_len,
                              "tensor '%s' has no Hugging Face name in a %s model", ti.name,
                              c->arch);
        ING_TRY(st);
        uint32_t parts = info.stacked ? c->cfg.n_expert : 1;
        if (info.stacked && (ti.rank < 2 || ti.shape[0] != parts))
            return ingot__err(err, INGOT_BAD_SHAPE, INGOT_NO_OFFSET, ti.name, ti.name_len,
                              "stacked experts '%s' do not have %u experts outermost", ti.name,
                              parts);
        if (info.hf_transposed && ti.rank != 2)
            return ingot__err(err, INGOT_BAD_SHAPE, INGOT_NO_OFFSET, ti.name, ti.name_len,
                              "tensor '%s' has rank %u, not 2", ti.name, ti.rank);
        for (uint32_t e = 0; e < parts; e++) {
            hf_tensor h = {0};
            if (info.stacked)
                ING_TRY(ingot_lm_name_to_hf(c->cfg.arch, ti.name, e, h.name, sizeof h.name, NULL,
                                            err));
            else
                memcpy(h.name, hn, sizeof hn);
            h.src = i;
            h.expert = info.stacked ? e : UINT32_MAX;
            h.qk = info.qk;
            h.transpose = info.hf_transposed;
            h.dtype = ti.dtype;
            uint32_t off = info.stacked ? 1 : 0;
            h.rank = ti.rank - off;
            for (uint32_t d = 0; d < h.rank; d++)
                h.shape[d] = ti.shape[off + (h.transpose ? h.rank - 1 - d : d)];
            h.nbytes = ti.nbytes / parts;
            if (h.qk && c->permute) {
                uint32_t heads = h.qk == 'q' ? c->cfg.n_head : c->cfg.n_head_kv;
                if (h.rank < 1 || h.shape[0] % (2 * (uint64_t)heads))
                    return ingot__err(err, INGOT_BAD_SHAPE, INGOT_NO_OFFSET, ti.name, ti.name_len,
                                      "tensor '%s': %llu rows do not split into 2 x %u heads",
                                      ti.name, (unsigned long long)h.shape[0], heads);
            }
            if (!ingot__grow(NULL, (void **)&c->t, c->nt * sizeof *c->t,
                             (c->nt + 1) * sizeof *c->t))
                return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "tensor list");
            c->t[c->nt++] = h;
        }
    }
    if (!c->vocab)
        return ingot__err(err, INGOT_NOT_FOUND, INGOT_NO_OFFSET, "token_embd.weight", 17,
                          "tensor 'token_embd.weight' is missing");
    return INGOT_OK;
}

static ingot_status write_tensor(ingot_writer *w, const g2h *c, const hf_tensor *h,
                                 ingot_error *err)
{
    void *buf = NULL, *tmp = NULL;
    size_t n = 0, nfull = 0;
    ING_TRY(ingot__model_read(c->f, h->src, &buf, &nfull, err));
    const uint8_t *part = buf;
    n = (size_t)h->nbytes;
    if (h->expert != UINT32_MAX) part += (size_t)h->expert * n;
    ingot_status st = INGOT_OK;
    if (n && (h->transpose || (h->qk && c->permute))) {
        tmp = ingot__alloc(NULL, n);
        if (!tmp) {
            st = ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, h->name, strlen(h->name),
                            "no memory to reorder the tensor");
        } else if (h->transpose) { /* GGUF [out, in] -> HF Conv1D [in, out] */
            ingot__model_transpose(part, tmp, h->shape[1], h->shape[0],
                                   ingot_dtype_block_bytes(h->dtype));
        } else {
            ingot__model_permute(part, tmp, h->shape[0], n / h->shape[0],
                                 h->qk == 'q' ? c->cfg.n_head : c->cfg.n_head_kv, true);
        }
    }
    if (st == INGOT_OK) st = ingot_writer_write(w, tmp ? tmp : part, n, err);
    if (tmp) ingot__free(NULL, tmp, n);
    ingot__free(NULL, buf, nfull ? nfull : 1);
    return st;
}

/* ---- config.json ---- */

typedef struct text {
    char buf[8192];
    size_t n;
} text;

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 2, 3)))
#endif
static void put(text *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (t->n < sizeof t->buf) {
        int k = vsnprintf(t->buf + t->n, sizeof t->buf - t->n, fmt, ap);
        if (k > 0) t->n += (size_t)k;
    }
    va_end(ap);
}

static const char *torch_dtype(const g2h *c)
{
    uint64_t n32 = 0, n16 = 0, nb = 0;
    for (size_t k = 0; k < c->nt; k++) {
        if (c->t[k].rank < 2) continue;
        n32 += c->t[k].dtype == INGOT_DTYPE_F32;
        n16 += c->t[k].dtype == INGOT_DTYPE_F16;
        nb += c->t[k].dtype == INGOT_DTYPE_BF16;
    }
    return n16 > n32 && n16 >= nb ? "float16" : nb > n32 ? "bfloat16" : "float32";
}

static bool meta_float(const ingot_file *f, const char *key, double *v)
{
    ingot_meta_info mi;
    if (ingot_file_meta_find(f, key, &mi) != INGOT_OK || mi.is_array ||
        (mi.type != INGOT_META_F32 && mi.type != INGOT_META_F64))
        return false;
    *v = mi.v.f;
    return true;
}

static ingot_status write_config(const g2h *c, ingot_error *err)
{
    const ingot_lm_config *g = &c->cfg;
    bool gpt2 = g->arch == INGOT_LM_ARCH_GPT2, moe = g->n_expert > 0;
    bool qwen2 = !strcmp(c->arch, "qwen2");
    text t = {.n = 0};
    char num[40], key[96];
    put(&t, "{\n  \"architectures\": [\"%s\"],\n  \"model_type\": \"%s\",\n",
        gpt2 ? "GPT2LMHeadModel" : qwen2 ? "Qwen2ForCausalLM"
        : moe ? "MixtralForCausalLM" : "LlamaForCausalLM",
        gpt2 ? "gpt2" : qwen2 ? "qwen2" : moe ? "mixtral" : "llama");
    const char *name;
    size_t nl;
    if (c->o && c->o->name) {
        name = c->o->name;
        nl = strlen(name);
    } else if (ingot_file_meta_get_string(c->f, "general.name", &name, &nl) != INGOT_OK) {
        name = NULL;
    }
    if (name) {
        char q[600];
        if (nl < 256 && ingot__json_quote(q, sizeof q, name, nl) < sizeof q) {
            q[ingot__json_quote(NULL, 0, name, nl)] = 0;
            put(&t, "  \"_name_or_path\": %s,\n", q);
        }
    }
    snprintf(key, sizeof key, "%s.attention.layer_norm%s_epsilon", c->arch, gpt2 ? "" : "_rms");
    double eps = g->norm_eps;
    bool eps32 = true;
    ingot_meta_info mi;
    if (ingot_file_meta_find(c->f, key, &mi) == INGOT_OK) eps32 = mi.type == INGOT_META_F32;
    ingot__model_fmt_float(num, sizeof num, eps, eps32);
    if (gpt2) {
        put(&t, "  \"n_embd\": %u,\n  \"n_layer\": %u,\n  \"n_head\": %u,\n  \"n_inner\": %u,\n"
                "  \"n_positions\": %u,\n  \"n_ctx\": %u,\n  \"layer_norm_epsilon\": %s,\n"
                "  \"activation_function\": \"gelu_new\",\n",
            g->dim, g->n_layer, g->n_head, g->ffn_dim, g->ctx_train, g->ctx_train, num);
    } else {
        put(&t, "  \"hidden_size\": %u,\n  \"intermediate_size\": %u,\n"
                "  \"num_hidden_layers\": %u,\n  \"num_attention_heads\": %u,\n"
                "  \"num_key_value_heads\": %u,\n  \"max_position_embeddings\": %u,\n"
                "  \"rms_norm_eps\": %s,\n  \"hidden_act\": \"silu\",\n",
            g->dim, g->ffn_dim, g->n_layer, g->n_head, g->n_head_kv, g->ctx_train, num);
        if (g->head_dim * g->n_head != g->dim) put(&t, "  \"head_dim\": %u,\n", g->head_dim);
        snprintf(key, sizeof key, "%s.rope.freq_base", c->arch);
        double theta;
        if (meta_float(c->f, key, &theta)) {
            ingot_file_meta_find(c->f, key, &mi);
            ingot__model_fmt_float(num, sizeof num, theta, mi.type == INGOT_META_F32);
            put(&t, "  \"rope_theta\": %s,\n", num);
        }
        if (g->rope_scaling == INGOT_LM_ROPE_SCALING_LINEAR) { /* the GGUF's factor is an f32 */
            ingot__model_fmt_float(num, sizeof num, g->rope_factor, true);
            put(&t, "  \"rope_scaling\": {\"rope_type\": \"linear\", \"factor\": %s},\n", num);
        }
        if (moe)
            put(&t, "  \"num_local_experts\": %u,\n  \"num_experts_per_tok\": %u,\n", g->n_expert,
                g->n_expert_used);
        if (c->q_bias && !qwen2) put(&t, "  \"attention_bias\": true,\n");
    }
    if (g->bos >= 0) put(&t, "  \"bos_token_id\": %d,\n", g->bos);
    if (g->eos >= 0) put(&t, "  \"eos_token_id\": %d,\n", g->eos);
    put(&t, "  \"vocab_size\": %u,\n  \"tie_word_embeddings\": %s,\n  \"torch_dtype\": \"%s\"\n}\n",
        c->vocab, c->tied ? "true" : "false", torch_dtype(c));
    if (t.n >= sizeof t.buf)
        return ingot__err(err, INGOT_LIMIT, INGOT_NO_OFFSET, "config.json", 11, "too long");
    char path[4096];
    if (!ingot__model_path(path, sizeof path, c->dir, "config.json"))
        return ingot__err(err, INGOT_RANGE, INGOT_NO_OFFSET, 0, 0, "path too long");
    return ingot__model_write_text(path, t.buf, t.n, c->o && c->o->no_fsync, err);
}

/* ---- tokenizer ---- */

static ingot_status write_tokenizer(const g2h *c, bool *done, ingot_error *err)
{
    *done = false;
    ingot_tokenizer *tok = NULL;
    ingot_error terr;
    ingot_status st = ingot_tokenizer_open_file(c->f, NULL, &tok, &terr);
    if (st == INGOT_NOT_FOUND) {
        notice(c, "the file has no tokenizer.ggml.model: no tokenizer.json written");
        return INGOT_OK;
    }
    if (st != INGOT_OK) {
        if (err) *err = terr;
        return st;
    }
    if (!strcmp(ingot_tokenizer_kind(tok), "spm")) {
        /* tokenizer.json holds no scores: a converter back gives SentencePiece BPE's -k */
        uint32_t n = ingot_tokenizer_vocab_size(tok), k = 0, differ = 0;
        float *sc = ingot__alloc(NULL, (size_t)n * sizeof *sc);
        int32_t *ty = ingot__alloc(NULL, (size_t)n * sizeof *ty);
        if (sc && ty && ingot_tokenizer_vocab_attrs(tok, sc, ty, n) == INGOT_OK)
            for (uint32_t i = 0; i < n; i++) {
                float want = ty[i] == 1 ? -(float)k++ : 0.0f;
                differ += memcmp(&sc[i], &want, sizeof want) != 0;
            }
        ingot__free(NULL, sc, (size_t)n * sizeof *sc);
        ingot__free(NULL, ty, (size_t)n * sizeof *ty);
        if (differ) {
            char msg[200];
            snprintf(msg, sizeof msg, "tokenizer.json holds no scores: %u of %u SentencePiece "
                                      "scores are not the -k a converter back assumes", differ, n);
            notice(c, msg);
        }
    }
    char *json = NULL, *cfg = NULL;
    size_t jn = 0, cn = 0;
    st = ingot_tokenizer_export_json(tok, &json, &jn, &cfg, &cn, err);
    ingot_tokenizer_close(tok);
    ING_TRY(st);
    char path[4096];
    bool nf = c->o && c->o->no_fsync;
    if (!ingot__model_path(path, sizeof path, c->dir, "tokenizer.json"))
        st = ingot__err(err, INGOT_RANGE, INGOT_NO_OFFSET, 0, 0, "path too long");
    if (st == INGOT_OK) st = ingot__model_write_text(path, json, jn, nf, err);
    if (st == INGOT_OK && !ingot__model_path(path, sizeof path, c->dir, "tokenizer_config.json"))
        st = ingot__err(err, INGOT_RANGE, INGOT_NO_OFFSET, 0, 0, "path too long");
    if (st == INGOT_OK) st = ingot__model_write_text(path, cfg, cn, nf, err);
    ingot_tokenizer_export_free(json, jn);
    ingot_tokenizer_export_free(cfg, cn);
    *done = st == INGOT_OK;
    return st;
}

/* ---- the whole ---- */

static ingot_status convert(g2h *c, ingot_convert_model_summary *sum, ingot_error *err)
{
    ING_TRY(ingot_lm_config_read(c->f, NULL, &c->cfg, err));
    const char *a;
    size_t al;
    ING_TRY(ingot_file_meta_get_string(c->f, "general.architecture", &a, &al));
    snprintf(c->arch, sizeof c->arch, "%.*s", (int)(al < 31 ? al : 31), a);
    /* partial rotary (the runtime reads it): refused, as COMPAT.md says */
    if (c->cfg.arch == INGOT_LM_ARCH_LLAMA && c->cfg.rope_dims != c->cfg.head_dim) {
        char k[64];
        snprintf(k, sizeof k, "%s.rope.dimension_count", c->arch);
        return ingot__err(err, INGOT_UNSUPPORTED, INGOT_NO_OFFSET, k, strlen(k),
                          "partial rotary embeddings (%u of %u dims) are not converted",
                          c->cfg.rope_dims, c->cfg.head_dim);
    }
    /* llama.cpp's form of Llama 3 RoPE scaling: divisors, whose rule parameters (factor, bands,
     * original context) config.json needs and the tensor does not keep */
    ingot_tensor_info rf;
    if (ingot_file_tensor_find(c->f, "rope_freqs.weight", &rf) == INGOT_OK)
        return ingot__err(err, INGOT_UNSUPPORTED, INGOT_NO_OFFSET, rf.name, rf.name_len,
                          "RoPE frequency divisors (rope_freqs.weight, Llama 3 scaling) have no "
                          "config.json form: not converted");
    c->permute = !strcmp(c->arch, "llama");
    ING_TRY(map_tensors(c, err));

    struct stat sb;
    if (stat(c->dir, &sb) != 0) {
        if (mkdir(c->dir, 0777) != 0)
            return ingot__err(err, INGOT_IO, INGOT_NO_OFFSET, c->dir, strlen(c->dir),
                              "cannot create the folder %s (errno %d)", c->dir, errno);
    } else if (!S_ISDIR(sb.st_mode)) {
        return ingot__err(err, INGOT_MISUSE, INGOT_NO_OFFSET, c->dir, strlen(c->dir),
                          "%s exists and is not a folder", c->dir);
    }
    uint64_t total = 0;
    for (size_t k = 0; k < c->nt; k++) total += c->t[k].nbytes;
    bool shard_opt = false;
    for (size_t i = 0; c->o && i < c->o->n_options; i++)
        shard_opt |= !strncmp(c->o->options[i], "max_shard_size=", 15);
    bool sharded = shard_opt || total > SHARD_DEFAULT;
    char path[4096];
    if (!ingot__model_path(path, sizeof path, c->dir,
                           sharded ? "model.safetensors.index.json" : "model.safetensors"))
        return ingot__err(err, INGOT_RANGE, INGOT_NO_OFFSET, 0, 0, "path too long");

    ingot_writer_opts wo = {0};
    wo.format = "safetensors";
    wo.no_fsync = c->o && c->o->no_fsync;
    ingot_writer *w = NULL;
    ingot_status st = ingot_writer_new(&wo, &w, err);
    if (st == INGOT_OK && c->o && c->o->notice)
        ingot_writer_set_notice(w, c->o->notice, c->o->notice_ctx);
    if (st == INGOT_OK && sharded && !shard_opt)
        st = ingot_writer_set_option(w, "max_shard_size", "5GB", err);
    for (size_t i = 0; st == INGOT_OK && c->o && i < c->o->n_options; i++) {
        const char *kv = c->o->options[i], *eq = strchr(kv, '=');
        char key[128];
        if (!eq || (size_t)(eq - kv) >= sizeof key) {
            st = ingot__err(err, INGOT_MISUSE, INGOT_NO_OFFSET, kv, strlen(kv),
                            "writer option '%s' is not KEY=VALUE", kv);
            break;
        }
        memcpy(key, kv, (size_t)(eq - kv));
        key[eq - kv] = 0;
        st = ingot_writer_set_option(w, key, eq + 1, err);
    }
    if (st == INGOT_OK) st = ingot_writer_set_string(w, "format", "pt");
    for (size_t k = 0; st == INGOT_OK && k < c->nt; k++)
        st = ingot_writer_add_tensor(w, c->t[k].name, c->t[k].dtype, c->t[k].rank,
                                     c->t[k].shape, NULL, NULL, err);
    if (st == INGOT_OK) st = ingot_writer_begin(w, path, err);
    for (size_t k = 0; st == INGOT_OK && k < c->nt; k++) st = write_tensor(w, c, &c->t[k], err);
    if (st == INGOT_OK) st = ingot_writer_commit(w, err);
    ingot_writer_free(w);
    ING_TRY(st);
    ING_TRY(write_config(c, err));
    bool tok = false;
    ING_TRY(write_tokenizer(c, &tok, err));
    if (sum) {
        sum->arch = !strcmp(c->arch, "gpt2") ? "gpt2" : !strcmp(c->arch, "qwen2") ? "qwen2"
                                                                                 : "llama";
        sum->tensors = c->nt;
        sum->tokenizer = tok;
        sum->sharded = sharded;
    }
    return INGOT_OK;
}

ingot_status ingot_convert_gguf_to_hf(const ingot_file *src, const char *dir,
                                      const ingot_convert_model_opts *opts,
                                      ingot_convert_model_summary *summary, ingot_error *err)
{
    if (summary) memset(summary, 0, sizeof *summary);
    if (!src || !dir)
        return ingot__err(err, INGOT_MISUSE, INGOT_NO_OFFSET, 0, 0, "NULL argument");
    g2h c;
    memset(&c, 0, sizeof c);
    c.f = src;
    c.dir = dir;
    c.o = opts;
    ingot_status st = convert(&c, summary, err);
    if (c.t) ingot__free(NULL, c.t, c.nt * sizeof *c.t);
    return st;
}
