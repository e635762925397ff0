/*
 * model_to_gguf.c - ingot_convert_hf_to_gguf (convert.h section 4): a Hugging Face folder
 * (config.json, safetensors / PyTorch weights, tokenizer.json) written as llama.cpp's
 * convert_hf_to_gguf.py writes it: names from the runtime's table, q/k rows permuted, Conv1D
 * weights transposed, experts stacked, general.* / {arch}.* keys and the tokenizer arrays.
 */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "alloc.h"
#include "error.h"
#include "model_impl.h"

#define NAME_CAP 160

typedef struct out_tensor {
    char name[NAME_CAP];  /* GGUF name */
    uint64_t src;         /* source tensor (the first expert's for a stacked one) */
    uint64_t *exp_src;    /* stacked: n_expert source indices, UINT64_MAX while missing */
    uint32_t layer;
    char qk;
    bool transpose, stacked;
    ingot_dtype dtype;
    uint32_t rank;
    uint64_t shape[INGOT_MAX_RANK];
} out_tensor;

typedef struct h2g {
    const char *dir;
    const ingot_convert_model_opts *o;
    ingot_lm_config cfg;
    char model_type[32];
    const char *arch;     /* GGUF architecture */
    bool permute;         /* q/k rows to interleaved pairs ("llama") */
    bool rope_theta_given;
    char name[256];
    ingot_file *f;
    out_tensor *t;
    size_t nt;
    uint32_t vocab;       /* embedding rows */
} h2g;

static void notice(const h2g *c, const char *msg)
{
    if (c->o && c->o->notice) c->o->notice(c->o->notice_ctx, msg);
}

static const char *tname(const h2g *c, uint64_t i)
{
    ingot_tensor_info t;
    ingot_file_tensor_at(c->f, i, &t);
    return t.name;
}

static void shape_str(char *buf, size_t cap, uint32_t rank, const uint64_t *shape)
{
    size_t o = 0;
    buf[0] = 0;
    for (uint32_t d = 0; d < rank && o + 24 < cap; d++)
        o += (size_t)snprintf(buf + o, cap - o, "%s%llu", d ? "x" : "",
                              (unsigned long long)shape[d]);
    if (rank == 0) snprintf(buf, cap, "scalar");
}

/* The shape config.json implies for GGUF tensor `name` (rank 0: not a tensor we know). */
static uint32_t expected(const h2g *c, const char *name, uint64_t *s)
{
    const ingot_lm_config *g = &c->cfg;
    uint64_t D = g->dim, V = c->vocab, F = g->ffn_dim, E = g->n_expert;
    uint64_t Q = (uint64_t)g->n_head * g->head_dim, K = (uint64_t)g->n_head_kv * g->head_dim;
    const char *x = name;
    if (!strncmp(x, "blk.", 4)) {
        x += 4;
        while (*x >= '0' && *x <= '9') x++;
        if (*x == '.') x++;
    }
    static const struct {
        const char *suffix;
        char dims[4]; /* D V F E Q K C(ontext) 3 (3D) */
    } tab[] = {
        {"token_embd.weight", "VD"},  {"position_embd.weight", "CD"}, {"output.weight", "VD"},
        {"output_norm.weight", "D"},  {"output_norm.bias", "D"},      {"attn_norm.weight", "D"},
        {"attn_norm.bias", "D"},      {"attn_q.weight", "QD"},        {"attn_q.bias", "Q"},
        {"attn_k.weight", "KD"},      {"attn_k.bias", "K"},           {"attn_v.weight", "KD"},
        {"attn_v.bias", "K"},         {"attn_output.weight", "DQ"},   {"attn_output.bias", "D"},
        {"attn_qkv.weight", "3D"},    {"attn_qkv.bias", "3"},         {"ffn_norm.weight", "D"},
        {"ffn_norm.bias", "D"},       {"ffn_gate.weight", "FD"},      {"ffn_up.weight", "FD"},
        {"ffn_up.bias", "F"},         {"ffn_down.weight", "DF"},      {"ffn_down.bias", "D"},
        {"ffn_gate_inp.weight", "ED"}, {"ffn_gate_exps.weight", "EFD"},
        {"ffn_up_exps.weight", "EFD"}, {"ffn_down_exps.weight", "EDF"},
    };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) {
        if (strcmp(x, tab[i].suffix)) continue;
        uint32_t r = 0;
        for (const char *d = tab[i].dims; *d; d++) {
            uint64_t v = *d == 'D' ? D : *d == 'V' ? V : *d == 'F' ? F : *d == 'E' ? E
                       : *d == 'Q' ? Q : *d == 'K' ? K : *d == 'C' ? g->ctx_train : 3 * D;
            s[r++] = v;
        }
        return r;
    }
    return 0;
}

static ingot_status add_out(h2g *c, out_tensor *nt, ingot_error *err)
{
    if (!ingot__grow(NULL, (void **)&c->t, c->nt * sizeof *c->t, (c->nt + 1) * sizeof *c->t))
        return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "tensor list");
    c->t[c->nt++] = *nt;
    return INGOT_OK;
}

/* Maps every source tensor to its GGUF tensor (one-to-one, or an expert of a stacked one). */
static ingot_status map_tensors(h2g *c, ingot_error *err)
{
    uint64_t n = ingot_file_tensor_count(c->f);
    for (uint64_t i = 0; i < n; i++) {
        ingot_tensor_info ti;
        ingot_file_tensor_at(c->f, i, &ti);
        char gname[NAME_CAP];
        ingot_lm_name_info info;
        ingot_status st = ingot_lm_name_to_gguf(c->cfg.arch, ti.name, gname, sizeof gname, &info,
                                                err);
        if (st == INGOT_NOT_FOUND)
            return ingot__err(err, INGOT_UNSUPPORTED, INGOT_NO_OFFSET, ti.name, ti.name_len,
                              "tensor '%s' is not one of a %s model (no GGUF name for it)",
                              ti.name, c->model_type);
        ING_TRY(st);
        if (info.ignored) continue;
        if (ingot_dtype_is_quantized(ti.dtype))
            return ingot__err(err, INGOT_BAD_TYPE, INGOT_NO_OFFSET, ti.name, ti.name_len,
                              "tensor '%s' is %s: a Hugging Face checkpoint holds floats",
                              ti.name, ingot_dtype_name(ti.dtype));
        if (info.layer != UINT32_MAX && info.layer >= c->cfg.n_layer)
            return ingot__err(err, INGOT_BAD_SHAPE, INGOT_NO_OFFSET, ti.name, ti.name_len,
                              "tensor '%s' is of layer %u but config.json says %u layers",
                              ti.name, info.layer, c->cfg.n_layer);
        out_tensor *have = NULL;
        for (size_t k = 0; k < c->nt; k++)
            if (!strcmp(c->t[k].name, gname)) have = &c->t[k];
        if (info.stacked) {
            if (info.expert >= c->cfg.n_expert)
                return ingot__err(err, INGOT_BAD_SHAPE, INGOT_NO_OFFSET, ti.name, ti.name_len,
                                  "tensor '%s' is of expert %u but config.json says %u experts",
                                  ti.name, info.expert, c->cfg.n_expert);
            if (!have) {
                out_tensor nt = {0};
                memcpy(nt.name, gname, sizeof gname);
                nt.src = i;
                nt.layer = info.layer;
                nt.stacked = true;
                nt.exp_src = ingot__alloc(NULL, c->cfg.n_expert * sizeof *nt.exp_src);
                if (!nt.exp_src)
                    return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "experts");
                for (uint32_t e = 0; e < c->cfg.n_expert; e++) nt.exp_src[e] = UINT64_MAX;
                ingot_status st2 = add_out(c, &nt, err);
                if (st2 != INGOT_OK) {
                    ingot__free(NULL, nt.exp_src, c->cfg.n_expert * sizeof *nt.exp_src);
                    return st2;
                }
                have = &c->t[c->nt - 1];
            }
            if (have->exp_src[info.expert] != UINT64_MAX)
                return ingot__err(err, INGOT_DUPLICATE, INGOT_NO_OFFSET, ti.name, ti.name_len,
                                  "tensors '%s' and '%s' are the same expert", ti.name,
                                  tname(c, have->exp_src[info.expert]));
            have->exp_src[info.expert] = i;
            continue;
        }
        if (have)
            return ingot__err(err, INGOT_DUPLICATE, INGOT_NO_OFFSET, ti.name, ti.name_len,
                              "tensors '%s' and '%s' both become '%s'", tname(c, have->src),
                              ti.name, gname);
        out_tensor nt = {0};
        memcpy(nt.name, gname, sizeof gname);
        nt.src = i;
        nt.layer = info.layer;
        nt.qk = info.qk;
        nt.transpose = info.hf_transposed;
        ING_TRY(add_out(c, &nt, err));
    }
    return INGOT_OK;
}

static bool have_out(const h2g *c, const char *name)
{
    for (size_t k = 0; k < c->nt; k++)
        if (!strcmp(c->t[k].name, name)) return true;
    return false;
}

/* NOT_FOUND naming GGUF tensor `gname` (expert e of a stacked one) as the folder would. */
static ingot_status missing(const h2g *c, const char *gname, uint32_t e, ingot_error *err)
{
    char hf[NAME_CAP];
    if (ingot_lm_name_to_hf(c->cfg.arch, gname, e, hf, sizeof hf, NULL, NULL) != INGOT_OK)
        snprintf(hf, sizeof hf, "%s", gname);
    return ingot__err(err, INGOT_NOT_FOUND, INGOT_NO_OFFSET, hf, strlen(hf),
                      "tensor '%s' is missing (a %s model with %u layers%s has it)", hf,
                      c->model_type, c->cfg.n_layer, c->cfg.n_expert ? " and experts" : "");
}

/* Every tensor the config implies is there. */
static ingot_status check_complete(const h2g *c, ingot_error *err)
{
    bool gpt2 = c->cfg.arch == INGOT_LM_ARCH_GPT2;
    const char *top_gpt2[] = {"token_embd.weight", "position_embd.weight", "output_norm.weight",
                              "output_norm.bias", NULL};
    const char *top_llama[] = {"token_embd.weight", "output_norm.weight", NULL};
    for (const char *const *p = gpt2 ? top_gpt2 : top_llama; *p; p++)
        if (!have_out(c, *p)) return missing(c, *p, 0, err);
    if (!gpt2 && !c->cfg.tied_head && !have_out(c, "output.weight"))
        return missing(c, "output.weight", 0, err);
    static const char *const l_gpt2[] = {"attn_norm.weight", "attn_norm.bias", "attn_qkv.weight",
                                         "attn_qkv.bias", "attn_output.weight",
                                         "attn_output.bias", "ffn_norm.weight", "ffn_norm.bias",
                                         "ffn_up.weight", "ffn_up.bias", "ffn_down.weight",
                                         "ffn_down.bias", NULL};
    static const char *const l_llama[] = {"attn_norm.weight", "attn_q.weight", "attn_k.weight",
                                          "attn_v.weight", "attn_output.weight",
                                          "ffn_norm.weight", NULL};
    static const char *const l_bias[] = {"attn_q.bias", "attn_k.bias", "attn_v.bias", NULL};
    static const char *const l_dense[] = {"ffn_gate.weight", "ffn_up.weight", "ffn_down.weight",
                                          NULL};
    static const char *const l_moe[] = {"ffn_gate_inp.weight", "ffn_gate_exps.weight",
                                        "ffn_up_exps.weight", "ffn_down_exps.weight", NULL};
    for (uint32_t l = 0; l < c->cfg.n_layer; l++) {
        const char *const *lists[3] = {gpt2 ? l_gpt2 : l_llama, NULL, NULL};
        if (!gpt2) {
            lists[1] = c->cfg.n_expert ? l_moe : l_dense;
            if (c->cfg.qkv_bias) lists[2] = l_bias;
        }
        for (int k = 0; k < 3; k++)
            for (const char *const *p = lists[k]; p && *p; p++) {
                char g[NAME_CAP];
                snprintf(g, sizeof g, "blk.%u.%s", l, *p);
                if (!have_out(c, g)) return missing(c, g, 0, err);
            }
    }
    for (size_t k = 0; k < c->nt; k++) {
        const out_tensor *t = &c->t[k];
        if (!t->stacked) continue;
        for (uint32_t e = 0; e < c->cfg.n_expert; e++)
            if (t->exp_src[e] == UINT64_MAX) return missing(c, t->name, e, err);
    }
    return INGOT_OK;
}

/* Target dtype and shape of each tensor, checked against config.json. */
static ingot_status shapes(h2g *c, ingot_error *err)
{
    for (size_t k = 0; k < c->nt; k++) {
        out_tensor *t = &c->t[k];
        ingot_tensor_info ti;
        ingot_file_tensor_at(c->f, t->stacked ? t->exp_src[0] : t->src, &ti);
        if (t->stacked)
            for (uint32_t e = 1; e < c->cfg.n_expert; e++) {
                ingot_tensor_info te;
                ingot_file_tensor_at(c->f, t->exp_src[e], &te);
                if (te.dtype != ti.dtype || te.rank != ti.rank ||
                    memcmp(te.shape, ti.shape, sizeof te.shape))
                    return ingot__err(err, INGOT_BAD_SHAPE, INGOT_NO_OFFSET, te.name,
                                      te.name_len, "expert tensor '%s' differs in dtype or shape "
                                      "from '%s'", te.name, ti.name);
            }
        if (ti.rank + (t->stacked ? 1u : 0u) > INGOT_MAX_RANK || (t->transpose && ti.rank != 2))
            return ingot__err(err, INGOT_BAD_SHAPE, INGOT_NO_OFFSET, ti.name, ti.name_len,
                              "tensor '%s' has rank %u", ti.name, ti.rank);
        t->dtype = ti.dtype;
        t->rank = 0;
        if (t->stacked) t->shape[t->rank++] = c->cfg.n_expert;
        for (uint32_t d = 0; d < ti.rank; d++)
            t->shape[t->rank++] = ti.shape[t->transpose ? ti.rank - 1 - d : d];
        uint64_t want[INGOT_MAX_RANK];
        uint32_t wr = expected(c, t->name, want);
        if (wr && (wr != t->rank || memcmp(want, t->shape, wr * sizeof *want))) {
            char got_s[96], want_s[96];
            uint64_t hf_want[INGOT_MAX_RANK];
            uint32_t off = t->stacked ? 1 : 0;
            for (uint32_t d = off; d < wr; d++)
                hf_want[d - off] = want[t->transpose ? wr - 1 - (d - off) : d];
            shape_str(got_s, sizeof got_s, ti.rank, ti.shape);
            shape_str(want_s, sizeof want_s, wr - off, hf_want);
            return ingot__err(err, INGOT_BAD_SHAPE, INGOT_NO_OFFSET, ti.name, ti.name_len,
                              "tensor '%s' is %s but config.json implies %s", ti.name, got_s,
                              want_s);
        }
        if (t->qk) {
            uint32_t h = t->qk == 'q' ? c->cfg.n_head : c->cfg.n_head_kv;
            if (t->rank < 1 || t->shape[0] % (2 * (uint64_t)h))
                return ingot__err(err, INGOT_BAD_SHAPE, INGOT_NO_OFFSET, ti.name, ti.name_len,
                                  "tensor '%s': %llu rows do not split into 2 x %u heads",
                                  ti.name, (unsigned long long)t->shape[0], h);
        }
    }
    return INGOT_OK;
}

/* ---- metadata ---- */

#define TRYW(expr)                                                                            \
    do {                                                                                      \
        ingot_status st_ = (expr);                                                            \
        if (st_ != INGOT_OK)                                                                  \
            return ingot__err(err, st_, INGOT_NO_OFFSET, 0, 0, "writing the metadata");       \
    } while (0)

static ingot_status set_u32(ingot_writer *w, const h2g *c, const char *suffix, uint32_t v,
                            ingot_error *err)
{
    char key[96];
    snprintf(key, sizeof key, "%s.%s", c->arch, suffix);
    TRYW(ingot_writer_set_u32(w, key, v));
    return INGOT_OK;
}

static ingot_status set_f32(ingot_writer *w, const h2g *c, const char *suffix, double v,
                            ingot_error *err)
{
    char key[96];
    snprintf(key, sizeof key, "%s.%s", c->arch, suffix);
    TRYW(ingot_writer_set_f32(w, key, (float)v));
    return INGOT_OK;
}

/* llama.cpp's LLAMA_FTYPE of the weights (matrices decide): ALL_F32 0, MOSTLY_F16 1,
 * MOSTLY_BF16 32; UINT32_MAX when they are another float type. */
static uint32_t file_type(const h2g *c)
{
    uint64_t n32 = 0, n16 = 0, nb16 = 0, other = 0;
    for (size_t k = 0; k < c->nt; k++) {
        if (c->t[k].rank < 2) continue;
        ingot_dtype d = c->t[k].dtype;
        if (d == INGOT_DTYPE_F32) n32++;
        else if (d == INGOT_DTYPE_F16) n16++;
        else if (d == INGOT_DTYPE_BF16) nb16++;
        else other++;
    }
    if (other > n32 && other > n16 && other > nb16) return UINT32_MAX;
    return n16 >= n32 && n16 >= nb16 ? (n16 ? 1u : 0u) : nb16 > n32 ? 32u : 0u;
}

static ingot_status write_tokenizer(ingot_writer *w, h2g *c, ingot_tokenizer *tok,
                                    ingot_error *err)
{
    uint32_t n = ingot_tokenizer_vocab_size(tok), V = c->vocab;
    bool spm = strcmp(ingot_tokenizer_gguf_model(tok), "gpt2") != 0;
    bool fallback = !strcmp(ingot_tokenizer_kind(tok), "bpe-fallback");
    if (n > V)
        return ingot__err(err, INGOT_BAD_SHAPE, INGOT_NO_OFFSET, "tokenizer.json", 14,
                          "the tokenizer has %u tokens but the embedding only %u rows", n, V);
    if (n < V) {
        char msg[160];
        snprintf(msg, sizeof msg, "vocabulary padded from %u to %u tokens ([PADn], unused) to "
                                  "match the embedding", n, V);
        notice(c, msg);
    }
    ingot_status st = INGOT_OK;
    const void **texts = ingot__calloc(NULL, (size_t)V * sizeof *texts);
    size_t *lens = ingot__calloc(NULL, (size_t)V * sizeof *lens);
    float *scores = ingot__calloc(NULL, (size_t)V * sizeof *scores);
    int32_t *types = ingot__calloc(NULL, (size_t)V * sizeof *types);
    char *pads = ingot__calloc(NULL, (size_t)(V - n) * 16 + 1);
    int32_t *pairs = NULL;
    const void **mt = NULL;
    size_t *ml = NULL;
    char *mblob = NULL;
    size_t nm = 0, mblob_n = 0;
    if (!texts || !lens || !scores || !types || !pads) goto nomem;
    ingot_tokenizer_vocab_attrs(tok, scores, types, V);
    for (uint32_t i = 0; i < V; i++) {
        if (i < n) {
            const char *s;
            size_t l;
            ingot_tokenizer_token_text(tok, (int32_t)i, &s, &l);
            texts[i] = s;
            lens[i] = l;
        } else {
            char *p = pads + (size_t)(i - n) * 16;
            lens[i] = (size_t)snprintf(p, 16, "[PAD%u]", i);
            texts[i] = p;
            scores[i] = -1000.0f;
            types[i] = 5; /* unused */
        }
    }
    if (!spm || fallback) {
        if ((st = ingot_tokenizer_merges(tok, NULL, 0, &nm, err)) != INGOT_OK) goto done;
        pairs = ingot__alloc(NULL, (nm ? nm : 1) * 2 * sizeof *pairs);
        mt = ingot__alloc(NULL, (nm ? nm : 1) * sizeof *mt);
        ml = ingot__alloc(NULL, (nm ? nm : 1) * sizeof *ml);
        if (!pairs || !mt || !ml) goto nomem;
        if ((st = ingot_tokenizer_merges(tok, pairs, nm, &nm, err)) != INGOT_OK) goto done;
        for (size_t m = 0; m < nm; m++) mblob_n += lens[pairs[2 * m]] + lens[pairs[2 * m + 1]] + 1;
        mblob = ingot__alloc(NULL, mblob_n ? mblob_n : 1);
        if (!mblob) goto nomem;
        size_t o = 0;
        for (size_t m = 0; m < nm; m++) {
            int32_t l = pairs[2 * m], r = pairs[2 * m + 1];
            mt[m] = mblob + o;
            memcpy(mblob + o, texts[l], lens[l]);
            mblob[o + lens[l]] = ' ';
            memcpy(mblob + o + lens[l] + 1, texts[r], lens[r]);
            ml[m] = lens[l] + 1 + lens[r];
            o += ml[m];
        }
    }
    if ((st = ingot_writer_set_string(w, "tokenizer.ggml.model",
                                      ingot_tokenizer_gguf_model(tok))) != INGOT_OK)
        goto werr;
    /* llama.cpp names SentencePiece's (absent) pre-tokenizer "default" */
    if ((st = ingot_writer_set_string(w, "tokenizer.ggml.pre",
                                      spm ? "default" : ingot_tokenizer_pre(tok))) != INGOT_OK)
        goto werr;
    if ((st = ingot_writer_set_string_array(w, "tokenizer.ggml.tokens", INGOT_META_STRING, texts,
                                            lens, V)) != INGOT_OK)
        goto werr;
    if (spm && (st = ingot_writer_set_array(w, "tokenizer.ggml.scores", INGOT_META_F32, scores,
                                            V)) != INGOT_OK)
        goto werr;
    if ((st = ingot_writer_set_array(w, "tokenizer.ggml.token_type", INGOT_META_I32, types, V)) !=
        INGOT_OK)
        goto werr;
    if ((!spm || fallback) &&
        (st = ingot_writer_set_string_array(w, "tokenizer.ggml.merges", INGOT_META_STRING,
                                            (const void *const *)mt, ml, nm)) != INGOT_OK)
        goto werr;
    static const struct { ingot_token_role role; const char *key; } ids[] = {
        {INGOT_TOKEN_BOS, "tokenizer.ggml.bos_token_id"},
        {INGOT_TOKEN_EOS, "tokenizer.ggml.eos_token_id"},
        {INGOT_TOKEN_UNK, "tokenizer.ggml.unknown_token_id"},
        {INGOT_TOKEN_PAD, "tokenizer.ggml.padding_token_id"},
    };
    for (size_t k = 0; k < sizeof ids / sizeof ids[0]; k++) {
        int32_t id = ingot_tokenizer_special(tok, ids[k].role);
        if (id < 0 && ids[k].role == INGOT_TOKEN_BOS) id = c->cfg.bos;
        if (id < 0 && ids[k].role == INGOT_TOKEN_EOS) id = c->cfg.eos;
        if (id >= 0 && (st = ingot_writer_set_u32(w, ids[k].key, (uint32_t)id)) != INGOT_OK)
            goto werr;
    }
    /* SentencePiece vocabularies state both; byte-level ones only what is on (GPT-2's
     * tokenizer_config.json has neither, and llama.cpp then writes neither) */
    bool bos = ingot_tokenizer_adds_bos(tok), eos = ingot_tokenizer_adds_eos(tok);
    if ((spm || bos) &&
        (st = ingot_writer_set_bool(w, "tokenizer.ggml.add_bos_token", bos)) != INGOT_OK)
        goto werr;
    if ((spm || eos) &&
        (st = ingot_writer_set_bool(w, "tokenizer.ggml.add_eos_token", eos)) != INGOT_OK)
        goto werr;
    goto done;
werr:
    st = ingot__err(err, st, INGOT_NO_OFFSET, "tokenizer.ggml", 14, "writing the vocabulary");
    goto done;
nomem:
    st = ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "vocabulary arrays");
done:
    ingot__free(NULL, texts, (size_t)V * sizeof *texts);
    ingot__free(NULL, lens, (size_t)V * sizeof *lens);
    ingot__free(NULL, scores, (size_t)V * sizeof *scores);
    ingot__free(NULL, types, (size_t)V * sizeof *types);
    ingot__free(NULL, pads, (size_t)(V - n) * 16 + 1);
    ingot__free(NULL, pairs, (nm ? nm : 1) * 2 * sizeof *pairs);
    ingot__free(NULL, mt, (nm ? nm : 1) * sizeof *mt);
    ingot__free(NULL, ml, (nm ? nm : 1) * sizeof *ml);
    ingot__free(NULL, mblob, mblob_n ? mblob_n : 1);
    return st;
}

static ingot_status write_meta(ingot_writer *w, h2g *c, ingot_tokenizer *tok, ingot_error *err)
{
    const ingot_lm_config *g = &c->cfg;
    bool gpt2 = g->arch == INGOT_LM_ARCH_GPT2;
    TRYW(ingot_writer_set_string(w, "general.architecture", c->arch));
    TRYW(ingot_writer_set_string(w, "general.name", c->name));
    ING_TRY(set_u32(w, c, "block_count", g->n_layer, err));
    ING_TRY(set_u32(w, c, "context_length", g->ctx_train, err));
    ING_TRY(set_u32(w, c, "embedding_length", g->dim, err));
    ING_TRY(set_u32(w, c, "feed_forward_length", g->ffn_dim, err));
    ING_TRY(set_u32(w, c, "attention.head_count", g->n_head, err));
    if (gpt2) {
        ING_TRY(set_f32(w, c, "attention.layer_norm_epsilon", g->norm_eps, err));
    } else {
        ING_TRY(set_u32(w, c, "attention.head_count_kv", g->n_head_kv, err));
        if (c->rope_theta_given) ING_TRY(set_f32(w, c, "rope.freq_base", g->rope_theta, err));
        if (g->rope_scaling == INGOT_LM_ROPE_SCALING_LINEAR) { /* llama3: rope_freqs.weight */
            char key[96];
            snprintf(key, sizeof key, "%s.rope.scaling.type", c->arch);
            TRYW(ingot_writer_set_string(w, key, "linear"));
            ING_TRY(set_f32(w, c, "rope.scaling.factor", g->rope_factor, err));
        }
        ING_TRY(set_f32(w, c, "attention.layer_norm_rms_epsilon", g->norm_eps, err));
        if (g->n_expert) {
            ING_TRY(set_u32(w, c, "expert_count", g->n_expert, err));
            ING_TRY(set_u32(w, c, "expert_used_count", g->n_expert_used, err));
        }
    }
    uint32_t ft = file_type(c);
    if (ft != UINT32_MAX) TRYW(ingot_writer_set_u32(w, "general.file_type", ft));
    if (!gpt2) {
        if (!strcmp(c->arch, "llama")) ING_TRY(set_u32(w, c, "vocab_size", c->vocab, err));
        ING_TRY(set_u32(w, c, "rope.dimension_count", g->head_dim, err));
        if (g->head_dim * g->n_head != g->dim) {
            ING_TRY(set_u32(w, c, "attention.key_length", g->head_dim, err));
            ING_TRY(set_u32(w, c, "attention.value_length", g->head_dim, err));
        }
    }
    if (tok) return write_tokenizer(w, c, tok, err);
    /* no vocabulary: the special ids config.json gives */
    if (g->bos >= 0) TRYW(ingot_writer_set_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)g->bos));
    if (g->eos >= 0) TRYW(ingot_writer_set_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)g->eos));
    return INGOT_OK;
}

/* ---- data ---- */

static ingot_status write_tensor(ingot_writer *w, const h2g *c, const out_tensor *t,
                                 ingot_error *err)
{
    uint32_t parts = t->stacked ? c->cfg.n_expert : 1;
    for (uint32_t e = 0; e < parts; e++) {
        uint64_t si = t->stacked ? t->exp_src[e] : t->src;
        void *buf = NULL, *tmp = NULL;
        size_t n = 0;
        ING_TRY(ingot__model_read(c->f, si, &buf, &n, err));
        ingot_tensor_info ti;
        ingot_file_tensor_at(c->f, si, &ti);
        size_t es = ingot_dtype_block_bytes(ti.dtype);
        ingot_status st = INGOT_OK;
        if ((t->transpose || (t->qk && c->permute)) && n) {
            tmp = ingot__alloc(NULL, n);
            if (!tmp) st = ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, ti.name, ti.name_len,
                                      "no memory to reorder the tensor");
            else if (t->transpose)
                ingot__model_transpose(buf, tmp, ti.shape[0], ti.shape[1], es);
            else
                ingot__model_permute(buf, tmp, ti.shape[0], n / ti.shape[0],
                                     t->qk == 'q' ? c->cfg.n_head : c->cfg.n_head_kv, false);
        }
        if (st == INGOT_OK) st = ingot_writer_write(w, tmp ? tmp : buf, n, err);
        if (tmp) ingot__free(NULL, tmp, n);
        ingot__free(NULL, buf, n ? n : 1);
        ING_TRY(st);
    }
    return INGOT_OK;
}

static const char *weights_file(const char *dir, char *buf, size_t cap)
{
    static const char *const names[] = {"model.safetensors", "model.safetensors.index.json",
                                        "pytorch_model.bin"};
    struct stat sb;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (ingot__model_path(buf, cap, dir, names[i]) && stat(buf, &sb) == 0) return buf;
    return NULL;
}

static ingot_status convert(h2g *c, const char *path, ingot_convert_model_summary *sum,
                            ingot_error *err)
{
    char cpath[4096], wpath[4096];
    if (!ingot__model_path(cpath, sizeof cpath, c->dir, "config.json"))
        return ingot__err(err, INGOT_RANGE, INGOT_NO_OFFSET, 0, 0, "path too long");
    char *cj = NULL;
    size_t cn = 0;
    ING_TRY(ingot__model_slurp(cpath, &cj, &cn, err));
    ingot_status st = ingot_lm_config_read(NULL, cpath, &c->cfg, err);
    if (st == INGOT_OK) {
        ingot__model_json_string(cj, cn, "model_type", c->model_type, sizeof c->model_type);
        c->rope_theta_given = ingot__model_json_has(cj, cn, "rope_theta");
        if (!(c->o && c->o->name) &&
            !ingot__model_json_string(cj, cn, "_name_or_path", c->name, sizeof c->name))
            c->name[0] = 0;
    }
    ingot__free(NULL, cj, cn + 1);
    ING_TRY(st);
    /* the runtime reads partial rotary (rope_dims < head size); converting it would need the q/k
     * permutation within the rotated dims and rope.dimension_count: refused, as COMPAT.md says */
    if (c->cfg.arch == INGOT_LM_ARCH_LLAMA && c->cfg.rope_dims != c->cfg.head_dim)
        return ingot__err(err, INGOT_UNSUPPORTED, INGOT_NO_OFFSET, "partial_rotary_factor", 21,
                          "partial rotary embeddings (%u of %u dims) are not converted",
                          c->cfg.rope_dims, c->cfg.head_dim);
    if (c->o && c->o->name) snprintf(c->name, sizeof c->name, "%s", c->o->name);
    if (!c->name[0]) { /* the folder's name */
        size_t dl = strlen(c->dir);
        while (dl > 1 && c->dir[dl - 1] == '/') dl--;
        size_t b = dl;
        while (b > 0 && c->dir[b - 1] != '/') b--;
        snprintf(c->name, sizeof c->name, "%.*s", (int)(dl - b), c->dir + b);
    }
    c->arch = c->cfg.arch == INGOT_LM_ARCH_GPT2 ? "gpt2"
            : !strcmp(c->model_type, "qwen2")   ? "qwen2" : "llama";
    c->permute = !strcmp(c->arch, "llama");
    if (!weights_file(c->dir, wpath, sizeof wpath))
        return ingot__err(err, INGOT_NOT_FOUND, INGOT_NO_OFFSET, "model.safetensors", 17,
                          "%s has no model.safetensors, model.safetensors.index.json or "
                          "pytorch_model.bin", c->dir);
    ING_TRY(ingot_file_open(wpath, NULL, &c->f, err));
    ING_TRY(map_tensors(c, err));
    /* vocabulary size: config.json, else the embedding's rows */
    c->vocab = c->cfg.vocab;
    for (size_t k = 0; !c->vocab && k < c->nt; k++)
        if (!strcmp(c->t[k].name, "token_embd.weight")) {
            ingot_tensor_info ti;
            ingot_file_tensor_at(c->f, c->t[k].src, &ti);
            c->vocab = ti.rank == 2 ? (uint32_t)ti.shape[0] : 0;
        }
    ING_TRY(check_complete(c, err));
    ING_TRY(shapes(c, err));

    ingot_tokenizer *tok = NULL;
    ingot_error terr;
    st = ingot_tokenizer_open(c->dir, NULL, &tok, &terr);
    if (st == INGOT_NOT_FOUND) {
        notice(c, "the folder has no tokenizer (tokenizer.json, vocab.json + merges.txt, ...): "
                  "no tokenizer.ggml.* arrays written");
    } else if (st != INGOT_OK) {
        if (err) *err = terr;
        return st;
    }
    ingot_writer_opts wo = {0};
    wo.format = c->o && c->o->format ? c->o->format : ingot_writer_format_for_path(path);
    wo.no_fsync = c->o && c->o->no_fsync;
    ingot_writer *w = NULL;
    st = ingot_writer_new(&wo, &w, err);
    if (st == INGOT_OK && c->o && c->o->notice) ingot_writer_set_notice(w, c->o->notice,
                                                                        c->o->notice_ctx);
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
    if (st == INGOT_OK) st = write_meta(w, c, tok, err);
    for (size_t k = 0; st == INGOT_OK && k < c->nt; k++)
        st = ingot_writer_add_tensor(w, c->t[k].name, c->t[k].dtype, c->t[k].rank,
                                     c->t[k].shape, NULL, NULL, err);
    /* Llama 3 RoPE scaling goes into GGUF as llama.cpp's converter writes it: the frequencies'
     * divisors as the F32 tensor rope_freqs.weight [rope_dims / 2] (the runtime divides by it) */
    float *div = NULL;
    uint64_t half = c->cfg.rope_dims / 2;
    if (st == INGOT_OK && c->cfg.rope_scaling == INGOT_LM_ROPE_SCALING_LLAMA3) {
        div = ingot__alloc(NULL, half * sizeof *div);
        if (!div) st = ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, "rope_freqs.weight", 17,
                                  "no memory for rope_freqs.weight");
        if (st == INGOT_OK) st = ingot_lm_rope_divisors(&c->cfg, div, half, err);
        if (st == INGOT_OK)
            st = ingot_writer_add_tensor(w, "rope_freqs.weight", INGOT_DTYPE_F32, 1, &half, NULL,
                                         NULL, err);
    }
    if (st == INGOT_OK) st = ingot_writer_begin(w, path, err);
    for (size_t k = 0; st == INGOT_OK && k < c->nt; k++) st = write_tensor(w, c, &c->t[k], err);
    if (st == INGOT_OK && div) st = ingot_writer_write(w, div, half * sizeof *div, err);
    if (div) ingot__free(NULL, div, half * sizeof *div);
    if (st == INGOT_OK) st = ingot_writer_commit(w, err);
    ingot_writer_free(w);
    if (st == INGOT_OK && sum) {
        sum->arch = c->arch;
        sum->tensors = c->nt + (c->cfg.rope_scaling == INGOT_LM_ROPE_SCALING_LLAMA3);
        sum->tokenizer = tok != NULL;
    }
    ingot_tokenizer_close(tok);
    return st;
}

ingot_status ingot_convert_hf_to_gguf(const char *hf_dir, const char *path,
                                      const ingot_convert_model_opts *opts,
                                      ingot_convert_model_summary *summary, ingot_error *err)
{
    if (summary) memset(summary, 0, sizeof *summary);
    if (!hf_dir || !path)
        return ingot__err(err, INGOT_MISUSE, INGOT_NO_OFFSET, 0, 0, "NULL argument");
    h2g c;
    memset(&c, 0, sizeof c);
    c.dir = hf_dir;
    c.o = opts;
    ingot_status st = convert(&c, path, summary, err);
    for (size_t k = 0; k < c.nt; k++)
        if (c.t[k].exp_src) ingot__free(NULL, c.t[k].exp_src,
                                        c.cfg.n_expert * sizeof *c.t[k].exp_src);
    if (c.t) ingot__free(NULL, c.t, c.nt * sizeof *c.t);
    ingot_file_close(c.f);
    return st;
}
