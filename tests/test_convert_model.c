/*
 * test_convert_model.c - model-aware HF <-> GGUF conversion (convert.h section 4).
 * Oracles: the real stories260K.gguf (ggml-org's conversion) round-tripped through an HF folder
 * gives back its tensors bit for bit and its keys with their types and values; the HF folder
 * runs in the runtime with the GGUF's logits and tokenizes the same; the seeded HF models of
 * tests/golden/lm (scripts/gen_lm_models.py) convert to exactly the tensors of the GGUFs that
 * script wrote in llama.cpp's layout, and the results run with torch's logits; the name table
 * API; errors naming the key or tensor.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "files.h"
#include "ingot/convert.h"
#include "ingot/lm.h"
#include "ingot/tokenizer.h"

#define GDIR INGOT_SOURCE_DIR "/tests/golden/lm/"
#define STORIES INGOT_FIXTURES "/models/stories260K/stories260K.gguf"

static char dir[512];

static const char *tmp(const char *name)
{
    static char buf[8][700];
    static int k;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

static ingot_file *open_or_null(const char *path)
{
    ingot_file *f = NULL;
    ingot_error e;
    if (ingot_file_open(path, NULL, &f, &e) != INGOT_OK) {
        char b[300];
        fprintf(stderr, "  open %s: %s\n", path, ingot_error_format(&e, b, sizeof b));
        return NULL;
    }
    return f;
}

static void *tensor_bytes(const ingot_file *f, uint64_t i, uint64_t *n)
{
    ingot_tensor_info t;
    ingot_file_tensor_at(f, i, &t);
    void *p = malloc(t.nbytes ? t.nbytes : 1);
    if (p && t.nbytes && ingot_file_tensor_copy(f, i, p, t.nbytes, NULL) != INGOT_OK) {
        free(p);
        return NULL;
    }
    *n = t.nbytes;
    return p;
}

/* Strips a leading "transformer." (GPT-2 hub checkpoints name tensors without it). */
static const char *bare(const char *s)
{
    return strncmp(s, "transformer.", 12) ? s : s + 12;
}

/* Every tensor of a is in b under the same name (or its bare form), with the same dtype, shape
 * and bytes, and b has no other; returns the number of differences (each reported). */
static int same_tensors(const ingot_file *a, const ingot_file *b, bool bare_names,
                        const char *what)
{
    int bad = 0;
    uint64_t na = ingot_file_tensor_count(a), nb = ingot_file_tensor_count(b), found = 0;
    for (uint64_t i = 0; i < na; i++) {
        ingot_tensor_info ta, tb;
        ingot_file_tensor_at(a, i, &ta);
        const char *an = bare_names ? bare(ta.name) : ta.name;
        bool hit = false;
        for (uint64_t j = 0; j < nb && !hit; j++) {
            ingot_file_tensor_at(b, j, &tb);
            if (strcmp(an, bare_names ? bare(tb.name) : tb.name)) continue;
            hit = true;
            found++;
            uint64_t la = 0, lb = 0;
            void *pa = tensor_bytes(a, i, &la), *pb = tensor_bytes(b, j, &lb);
            if (ta.dtype != tb.dtype || ta.rank != tb.rank ||
                memcmp(ta.shape, tb.shape, sizeof ta.shape) || la != lb || !pa || !pb ||
                memcmp(pa, pb, la)) {
                CHECK(0, "%s: tensor %s differs", what, ta.name);
                bad++;
            }
            free(pa);
            free(pb);
        }
        if (!hit) {
            CHECK(0, "%s: tensor %s missing", what, ta.name);
            bad++;
        }
    }
    if (found != nb) {
        CHECK(0, "%s: %" PRIu64 " tensors in the converted file, %" PRIu64 " expected", what, nb,
              found);
        bad++;
    }
    return bad;
}

/* Metadata entry `key` of a and b: same type, arity and value (arrays element by element,
 * bitwise for floats, so -0.0 stays -0.0). */
static bool same_meta(const ingot_file *a, const ingot_file *b, const char *key_p, size_t kl)
{
    char key[256];
    if (kl >= sizeof key) return false;
    memcpy(key, key_p, kl);
    key[kl] = 0;
    ingot_meta_info ma, mb;
    if (ingot_file_meta_find(a, key, &ma) != INGOT_OK) return false;
    if (ingot_file_meta_find(b, key, &mb) != INGOT_OK) return false;
    if (ma.type != mb.type || ma.is_array != mb.is_array) return false;
    if (!ma.is_array) {
        if (ma.type == INGOT_META_STRING || ma.type == INGOT_META_BYTES)
            return ma.count == mb.count && !memcmp(ma.data, mb.data, ma.count);
        if (ma.type == INGOT_META_F32 || ma.type == INGOT_META_F64) {
            double x = ma.v.f, y = mb.v.f;
            return !memcmp(&x, &y, sizeof x);
        }
        return ma.v.u == mb.v.u;
    }
    if (ma.count != mb.count) return false;
    for (uint64_t i = 0; i < ma.count; i++) {
        if (ma.type == INGOT_META_STRING) {
            const char *sa, *sb;
            size_t la, lb;
            if (ingot_file_meta_array_string(a, ma.index, i, &sa, &la) != INGOT_OK ||
                ingot_file_meta_array_string(b, mb.index, i, &sb, &lb) != INGOT_OK || la != lb ||
                memcmp(sa, sb, la))
                return false;
        } else {
            uint8_t ea[8] = {0}, eb[8] = {0};
            if (ingot_file_meta_array_read(a, ma.index, ma.type, i, 1, ea) != INGOT_OK ||
                ingot_file_meta_array_read(b, mb.index, mb.type, i, 1, eb) != INGOT_OK ||
                memcmp(ea, eb, sizeof ea))
                return false;
        }
    }
    return true;
}

static void convert_hf(const char *hf, const char *out)
{
    ingot_error e;
    ingot_convert_model_opts o = {0};
    o.no_fsync = true;
    if (ingot_convert_hf_to_gguf(hf, out, &o, NULL, &e) != INGOT_OK) {
        char b[300];
        fprintf(stderr, "  hf_to_gguf %s: %s\n", hf, ingot_error_format(&e, b, sizeof b));
        unlink(out);
    }
}

static void convert_gguf(const char *gguf, const char *out)
{
    ingot_file *f = open_or_null(gguf);
    if (!f) return;
    ingot_error e;
    ingot_convert_model_opts o = {0};
    o.no_fsync = true;
    if (ingot_convert_gguf_to_hf(f, out, &o, NULL, &e) != INGOT_OK) {
        char b[300];
        fprintf(stderr, "  gguf_to_hf %s: %s\n", gguf, ingot_error_format(&e, b, sizeof b));
    }
    ingot_file_close(f);
}

/* (a) stories260K.gguf -> HF folder -> GGUF: the same tensors, and every key the converter
 * wrote with its type and value (the -1 separator/padding ids, "none", have no HF form). */
TEST(stories_round_trip_tensors_and_keys)
{
    convert_gguf(STORIES, tmp("st_hf"));
    convert_hf(tmp("st_hf"), tmp("st.gguf"));
    ingot_file *a = open_or_null(STORIES), *b = open_or_null(tmp("st.gguf"));
    ASSERT_TRUE(a && b);
    ASSERT_EQ(same_tensors(a, b, false, "stories round trip"), 0);
    uint64_t nm = ingot_file_meta_count(a), checked = 0;
    for (uint64_t i = 0; i < nm; i++) {
        ingot_meta_info m;
        ingot_file_meta_at(a, i, &m);
        if (!m.is_array && m.type == INGOT_META_U32 && m.v.u == UINT32_MAX) continue;
        CHECK(same_meta(a, b, m.key, m.key_len), "key %.*s differs or is missing after the round "
              "trip", (int)m.key_len, m.key);
        checked++;
    }
    ASSERT_TRUE(checked >= 16); /* the tokenizer arrays, the hyperparameters, the ids */
    /* what the round trip adds is what llama.cpp's converter writes from an HF folder */
    static const char *const added[] = {"general.file_type", "tokenizer.ggml.merges",
                                        "llama.vocab_size", "tokenizer.ggml.pre",
                                        "tokenizer.ggml.add_bos_token",
                                        "tokenizer.ggml.add_eos_token"};
    for (uint64_t i = 0; i < ingot_file_meta_count(b); i++) {
        ingot_meta_info m, ma;
        ingot_file_meta_at(b, i, &m);
        char key[256];
        snprintf(key, sizeof key, "%.*s", (int)m.key_len, m.key);
        if (ingot_file_meta_find(a, key, &ma) == INGOT_OK) continue;
        bool ok = false;
        for (size_t k = 0; k < sizeof added / sizeof added[0]; k++) ok |= !strcmp(key, added[k]);
        CHECK(ok, "unexpected key %s", key);
    }
    uint32_t ft = 99;
    ASSERT_OK(ingot_file_meta_get_u32(b, "general.file_type", &ft));
    ASSERT_EQ(ft, 0); /* ALL_F32 */
    ingot_file_close(a);
    ingot_file_close(b);
}

static float *eval_all(const char *path, const int32_t *tok, size_t n, uint32_t *vocab)
{
    ingot_backend *be = NULL;
    ingot_backend_opts bo = {0};
    bo.threads = 2;
    ingot_error e;
    if (ingot_backend_new("cpu", &bo, &be, &e) != INGOT_OK) return NULL;
    ingot_lm *m = NULL;
    float *out = NULL;
    if (ingot_lm_open_path(be, path, NULL, &m, &e) == INGOT_OK) {
        *vocab = ingot_lm_get_config(m)->vocab;
        ingot_lm_session *s = NULL;
        out = malloc(n * *vocab * sizeof *out);
        if (!out || ingot_lm_session_new(m, NULL, &s, &e) != INGOT_OK ||
            ingot_lm_eval(s, tok, n, INGOT_LM_LOGITS_ALL, out, n * *vocab, &e) != INGOT_OK) {
            free(out);
            out = NULL;
        }
        ingot_lm_session_free(s);
    }
    if (!out) {
        char b[300];
        fprintf(stderr, "  eval %s: %s\n", path, ingot_error_format(&e, b, sizeof b));
    }
    ingot_lm_free(m);
    ingot_backend_free(be);
    return out;
}

static double max_rel(const float *a, const float *b, size_t n)
{
    double d = 0;
    for (size_t i = 0; i < n; i++)
        d = fmax(d, fabs((double)a[i] - b[i]) / fmax(1.0, fabs((double)b[i])));
    return d;
}

/* (b) the HF folder runs with the GGUF's logits and tokenizes as the GGUF does */
TEST(stories_hf_folder_runs_and_tokenizes_like_the_gguf)
{
    convert_gguf(STORIES, tmp("st_hf2"));
    static const char *const texts[] = {
        "Once upon a time, there was a little girl named Lily. She loved to play outside.",
        "  two spaces, a tab\there, new\nline, digits 12345, UTF-8: caf\xc3\xa9 \xe6\x97\xa5",
        "Tim said, \"I don't know!\" and ran away."};
    ingot_tokenizer *tg = NULL, *th = NULL;
    ASSERT_OK(ingot_tokenizer_open(STORIES, NULL, &tg, NULL));
    ASSERT_OK(ingot_tokenizer_open(tmp("st_hf2"), NULL, &th, NULL));
    ASSERT_STR(ingot_tokenizer_kind(th), "bpe-fallback");
    int32_t first[64];
    size_t nfirst = 0;
    for (size_t k = 0; k < sizeof texts / sizeof texts[0]; k++) {
        int32_t a[256], b[256];
        size_t na = 0, nb = 0;
        ASSERT_OK(ingot_tokenizer_encode(tg, texts[k], strlen(texts[k]), INGOT_ENCODE_ADD_SPECIAL,
                                         a, 256, &na, NULL, 0, NULL));
        ASSERT_OK(ingot_tokenizer_encode(th, texts[k], strlen(texts[k]), INGOT_ENCODE_ADD_SPECIAL,
                                         b, 256, &nb, NULL, 0, NULL));
        ASSERT_EQ(na, nb);
        for (size_t i = 0; i < na; i++) CHECK(a[i] == b[i], "text %zu token %zu", k, i);
        if (k == 0) {
            nfirst = na < 64 ? na : 64;
            memcpy(first, a, nfirst * sizeof *a);
        }
    }
    ingot_tokenizer_close(tg);
    ingot_tokenizer_close(th);
    ASSERT_TRUE(nfirst > 10 && first[0] == 1);
    uint32_t va = 0, vb = 0;
    float *la = eval_all(STORIES, first, nfirst, &va), *lb = eval_all(tmp("st_hf2"), first, nfirst,
                                                                        &vb);
    ASSERT_TRUE(la && lb && va == 512 && vb == 512);
    /* half-split and interleaved RoPE round differently (the q.k sums run in another order):
     * the difference is float rounding, 1e-5 of the logits' scale at most */
    double dmax = 0, scale = 1;
    for (size_t i = 0; i < nfirst * va; i++) {
        dmax = fmax(dmax, fabs((double)lb[i] - la[i]));
        scale = fmax(scale, fabs((double)la[i]));
    }
    CHECK(dmax <= 1e-5 * scale, "HF folder logits differ from the GGUF's by %.3g (scale %.3g)",
          dmax, scale);
    free(la);
    free(lb);
}

static void *load_npy(const char *path, uint64_t *nelem)
{
    ingot_file *f = open_or_null(path);
    if (!f) return NULL;
    uint64_t nb = 0;
    void *p = tensor_bytes(f, 0, &nb);
    ingot_tensor_info t;
    ingot_file_tensor_at(f, 0, &t);
    *nelem = t.nelem;
    ingot_file_close(f);
    return p;
}

/* (c) the seeded HF models -> GGUF: exactly the tensors of the GGUFs gen_lm_models.py wrote in
 * llama.cpp's layout (names, q/k permutation, stacked experts, GPT-2's transposes), their keys,
 * and torch's logits when run. */
static void seeded_to_gguf(const char *base, const char *gguf_arch)
{
    char hf[600], ref[600], out[600], p[600];
    snprintf(hf, sizeof hf, GDIR "%s_hf", base);
    snprintf(ref, sizeof ref, GDIR "%s.gguf", base);
    snprintf(out, sizeof out, "%s", tmp(base));
    strcat(out, ".gguf");
    convert_hf(hf, out);
    ingot_file *a = open_or_null(ref), *b = open_or_null(out);
    ASSERT_TRUE(a && b);
    CHECK(same_tensors(a, b, false, base) == 0, "%s: tensors", base);
    const char *s;
    size_t n;
    ASSERT_OK(ingot_file_meta_get_string(b, "general.architecture", &s, &n));
    CHECK(n == strlen(gguf_arch) && !memcmp(s, gguf_arch, n), "%s: architecture", base);
    uint64_t checked = 0;
    for (uint64_t i = 0; i < ingot_file_meta_count(a); i++) {
        ingot_meta_info m;
        ingot_file_meta_at(a, i, &m);
        if (m.key_len == 12 && !memcmp(m.key, "general.name", 12)) continue; /* a label */
        CHECK(same_meta(a, b, m.key, m.key_len), "%s: key %.*s", base, (int)m.key_len, m.key);
        checked++;
    }
    ASSERT_TRUE(checked >= 7);
    ingot_file_close(a);
    ingot_file_close(b);
    uint64_t nt = 0, nl = 0;
    snprintf(p, sizeof p, GDIR "%s_tokens.npy", base);
    int32_t *tok = load_npy(p, &nt);
    snprintf(p, sizeof p, GDIR "%s_logits.npy", base);
    float *lref = load_npy(p, &nl);
    ASSERT_TRUE(tok && lref);
    uint32_t v = 0, vh = 0;
    float *got = eval_all(out, tok, nt, &v), *gh = eval_all(hf, tok, nt, &vh);
    ASSERT_TRUE(got && gh && (uint64_t)v * nt == nl && v == vh);
    double d = max_rel(got, lref, nl), dh = max_rel(got, gh, nl);
    CHECK(d <= 1e-4, "%s: converted GGUF logits differ from torch by %.3g", base, d);
    CHECK(dh <= 1e-5, "%s: converted GGUF logits differ from the HF folder's by %.3g", base, dh);
    free(tok);
    free(lref);
    free(got);
    free(gh);
}

TEST(llama_hf_to_gguf) { seeded_to_gguf("llama", "llama"); }
TEST(qwen2_hf_to_gguf_unpermuted_biases) { seeded_to_gguf("qwen2", "qwen2"); }
TEST(mixtral_hf_to_gguf_stacked_experts) { seeded_to_gguf("moe", "llama"); }
TEST(gpt2_hf_to_gguf_transposed) { seeded_to_gguf("gpt2", "gpt2"); }

/* and back: the GGUFs -> HF folders hold the seeded HF tensors (GPT-2 with "transformer."),
 * and the config.json written opens in the runtime with the same hyperparameters */
static void seeded_to_hf(const char *base, bool bare_names)
{
    char hf[600], ref[600], out[600];
    snprintf(ref, sizeof ref, GDIR "%s.gguf", base);
    snprintf(hf, sizeof hf, GDIR "%s_hf", base);
    snprintf(out, sizeof out, "%s_back", tmp(base));
    convert_gguf(ref, out);
    char a_path[700], b_path[700];
    struct stat sb;
    snprintf(a_path, sizeof a_path, "%s/model.safetensors", hf);
    if (stat(a_path, &sb) != 0) snprintf(a_path, sizeof a_path, "%s/model.safetensors.index.json",
                                         hf);
    snprintf(b_path, sizeof b_path, "%s/model.safetensors", out);
    ingot_file *a = open_or_null(a_path), *b = open_or_null(b_path);
    ASSERT_TRUE(a && b);
    /* the hub GPT-2 file also holds the attn.bias / masked_bias buffers: compare parameters */
    int bad = 0;
    for (uint64_t j = 0; j < ingot_file_tensor_count(b); j++) {
        ingot_tensor_info tb, ta;
        ingot_file_tensor_at(b, j, &tb);
        const char *want = bare_names ? bare(tb.name) : tb.name;
        if (ingot_file_tensor_find(a, want, &ta) != INGOT_OK) {
            CHECK(0, "%s: %s not in the seeded folder", base, tb.name);
            bad++;
            continue;
        }
        uint64_t la = 0, lb = 0;
        void *pa = tensor_bytes(a, ta.index, &la), *pb = tensor_bytes(b, j, &lb);
        if (ta.dtype != tb.dtype || memcmp(ta.shape, tb.shape, sizeof ta.shape) || la != lb ||
            memcmp(pa, pb, la)) {
            CHECK(0, "%s: %s differs from the seeded HF tensor", base, tb.name);
            bad++;
        }
        free(pa);
        free(pb);
    }
    ASSERT_EQ(bad, 0);
    char cfg[700];
    snprintf(cfg, sizeof cfg, "%s/config.json", out);
    ingot_lm_config c1, c2;
    snprintf(a_path, sizeof a_path, "%s/config.json", hf);
    ASSERT_OK(ingot_lm_config_read(NULL, a_path, &c1, NULL));
    ASSERT_OK(ingot_lm_config_read(NULL, cfg, &c2, NULL));
    CHECK(c1.n_layer == c2.n_layer && c1.dim == c2.dim && c1.n_head == c2.n_head &&
              c1.n_head_kv == c2.n_head_kv && c1.ffn_dim == c2.ffn_dim &&
              c1.n_expert == c2.n_expert && c1.n_expert_used == c2.n_expert_used &&
              (float)c1.norm_eps == (float)c2.norm_eps && c1.tied_head == c2.tied_head &&
              c1.qkv_bias == c2.qkv_bias && c1.ctx_train == c2.ctx_train &&
              (c1.arch == INGOT_LM_ARCH_GPT2 || (float)c1.rope_theta == (float)c2.rope_theta) &&
              c1.rope_scaling == c2.rope_scaling && (float)c1.rope_factor == (float)c2.rope_factor,
          "%s: config.json differs from the seeded one", base);
    ingot_file_close(a);
    ingot_file_close(b);
}

/* RoPE scaling crosses both ways (it used to be dropped, and the converted model ran unscaled):
 * linear as rope.scaling.type / .factor and back to rope_scaling, Llama 3's rule as
 * rope_freqs.weight (the keys and tensors of the generator's llama.cpp-layout GGUFs, logits
 * against torch); a GGUF's rope_freqs.weight has no config.json form and is refused by name. */
TEST(rope_scaling_linear_both_ways)
{
    seeded_to_gguf("llama_ropelin", "llama");
    seeded_to_hf("llama_ropelin", false);
}
TEST(rope_scaling_llama3_to_gguf)
{
    seeded_to_gguf("llama_rope3", "llama");
    ingot_file *f = open_or_null(GDIR "llama_rope3.gguf");
    ASSERT_TRUE(f);
    ingot_error e;
    ingot_convert_model_opts o = {0};
    o.no_fsync = true;
    char out[600];
    snprintf(out, sizeof out, "%s", tmp("rope3_hf"));
    ASSERT_EQ(ingot_convert_gguf_to_hf(f, out, &o, NULL, &e), INGOT_UNSUPPORTED);
    ASSERT_STR(e.where, "rope_freqs.weight");
    ingot_file_close(f);
    struct stat sb;
    ASSERT_TRUE(stat(out, &sb) != 0); /* nothing left behind */
}

TEST(llama_gguf_to_hf) { seeded_to_hf("llama", false); }
TEST(qwen2_gguf_to_hf) { seeded_to_hf("qwen2", false); }
TEST(mixtral_gguf_to_hf) { seeded_to_hf("moe", false); }
TEST(gpt2_gguf_to_hf) { seeded_to_hf("gpt2", true); }

/* The name table: the runtime's rows, both ways. */
TEST(name_table_api)
{
    char b[160];
    ingot_lm_name_info in;
    ASSERT_OK(ingot_lm_name_to_gguf(INGOT_LM_ARCH_LLAMA, "model.layers.12.self_attn.k_proj.weight",
                                    b, sizeof b, &in, NULL));
    ASSERT_STR(b, "blk.12.attn_k.weight");
    ASSERT_EQ(in.layer, 12);
    ASSERT_EQ(in.qk, 'k');
    ASSERT_OK(ingot_lm_name_to_gguf(INGOT_LM_ARCH_LLAMA,
                                    "model.layers.3.block_sparse_moe.experts.7.w2.weight", b,
                                    sizeof b, &in, NULL));
    ASSERT_STR(b, "blk.3.ffn_down_exps.weight");
    ASSERT_TRUE(in.stacked && in.expert == 7 && in.layer == 3);
    ASSERT_OK(ingot_lm_name_to_hf(INGOT_LM_ARCH_LLAMA, "blk.3.ffn_up_exps.weight", 5, b,
                                  sizeof b, &in, NULL));
    ASSERT_STR(b, "model.layers.3.block_sparse_moe.experts.5.w3.weight");
    ASSERT_OK(ingot_lm_name_to_gguf(INGOT_LM_ARCH_GPT2, "h.0.mlp.c_fc.weight", b, sizeof b, &in,
                                    NULL));
    ASSERT_STR(b, "blk.0.ffn_up.weight");
    ASSERT_TRUE(in.hf_transposed && in.qk == 0);
    ASSERT_OK(ingot_lm_name_to_gguf(INGOT_LM_ARCH_GPT2, "h.1.attn.masked_bias", b, sizeof b, &in,
                                    NULL));
    ASSERT_TRUE(in.ignored && b[0] == 0);
    ASSERT_OK(ingot_lm_name_to_hf(INGOT_LM_ARCH_GPT2, "output_norm.bias", 0, b, sizeof b, &in,
                                  NULL));
    ASSERT_STR(b, "transformer.ln_f.bias");
    ASSERT_EQ(in.layer, UINT32_MAX);
    ingot_error e;
    ASSERT_EQ(ingot_lm_name_to_gguf(INGOT_LM_ARCH_LLAMA, "model.layers.0.mlp.fc9.weight", b,
                                    sizeof b, &in, &e),
              INGOT_NOT_FOUND);
    ASSERT_STR(e.where, "model.layers.0.mlp.fc9.weight");
    ASSERT_EQ(ingot_lm_name_to_gguf(INGOT_LM_ARCH_LLAMA, "model.layers.01.mlp.up_proj.weight", b,
                                    sizeof b, &in, NULL),
              INGOT_NOT_FOUND);
    ASSERT_EQ(ingot_lm_name_to_hf(INGOT_LM_ARCH_LLAMA, "blk.0.attn_q.weight", 0, b, 8, &in, NULL),
              INGOT_RANGE);
}

/* ---- (d) errors name the key or tensor ---- */

static void copy_file(const char *from, const char *to)
{
    FILE *a = fopen(from, "rb"), *b = fopen(to, "wb");
    char buf[65536];
    size_t n;
    while (a && b && (n = fread(buf, 1, sizeof buf, a)) > 0) fwrite(buf, 1, n, b);
    if (a) fclose(a);
    if (b) fclose(b);
}

/* A copy of llama_hf with its weights in one file (less the tensors `drop` names, if any) and
 * config.json with `from` replaced by `to`. */
static const char *bad_folder(const char *name, const char *from, const char *to,
                              const char *drop)
{
    const char *d = tmp(name);
    mkdir(d, 0777);
    char p[800];
    ingot_file *f = open_or_null(GDIR "llama_hf/model.safetensors.index.json");
    ingot_convert_plan *pl = NULL;
    if (f && ingot_convert_plan_new(f, &pl, NULL) == INGOT_OK) {
        ingot_convert_rule r = {drop ? drop : "nothing-matches", false};
        ingot_convert_plan_select(pl, &r, 1, NULL);
        ingot_convert_opts o = {0};
        o.no_fsync = true;
        snprintf(p, sizeof p, "%s/model.safetensors", d);
        ingot_convert_run(pl, p, &o, NULL, NULL);
    }
    ingot_convert_plan_free(pl);
    ingot_file_close(f);
    FILE *in = fopen(GDIR "llama_hf/config.json", "rb");
    char cfg[4096] = "", out[4096];
    size_t n = in ? fread(cfg, 1, sizeof cfg - 1, in) : 0;
    if (in) fclose(in);
    cfg[n] = 0;
    char *at = from ? strstr(cfg, from) : NULL;
    if (at)
        snprintf(out, sizeof out, "%.*s%s%s", (int)(at - cfg), cfg, to, at + strlen(from));
    else
        snprintf(out, sizeof out, "%s", cfg);
    snprintf(p, sizeof p, "%s/config.json", d);
    FILE *o = fopen(p, "wb");
    if (o) {
        fputs(out, o);
        fclose(o);
    }
    (void)copy_file;
    return d;
}

static void expect_fail(const char *folder, ingot_status code, const char *where,
                        const char *msg_part)
{
    ingot_error e;
    memset(&e, 0, sizeof e);
    ingot_convert_model_opts o = {0};
    o.no_fsync = true;
    const char *out = tmp("bad.gguf");
    unlink(out);
    ingot_status st = ingot_convert_hf_to_gguf(folder, out, &o, NULL, &e);
    CHECK(st == code, "%s: status %s, want %s (%s)", folder, ingot_status_name(st),
          ingot_status_name(code), e.msg);
    CHECK(!strcmp(e.where, where), "%s: names '%s', want '%s'", folder, e.where, where);
    CHECK(strstr(e.msg, msg_part) != NULL, "%s: message '%s' lacks '%s'", folder, e.msg,
          msg_part);
    struct stat sb;
    CHECK(stat(out, &sb) != 0, "%s: a failed conversion left its target", folder);
}

TEST(errors_name_the_key_or_tensor)
{
    /* the folder itself converts (the copies below differ by one thing each) */
    const char *ok = bad_folder("ok_hf", NULL, NULL, NULL);
    ingot_error e;
    ingot_convert_model_opts o = {0};
    o.no_fsync = true;
    ASSERT_OK(ingot_convert_hf_to_gguf(ok, tmp("ok.gguf"), &o, NULL, &e));
    expect_fail(bad_folder("arch_hf", "\"llama\"", "\"bert\"", NULL), INGOT_UNSUPPORTED,
                "model_type", "bert");
    expect_fail(bad_folder("missing_hf", NULL, NULL, "model.layers.1.self_attn.v_proj.weight"),
                INGOT_NOT_FOUND, "model.layers.1.self_attn.v_proj.weight", "missing");
    expect_fail(bad_folder("shape_hf", "\"num_key_value_heads\": 2", "\"num_key_value_heads\": 4",
                           NULL),
                INGOT_BAD_SHAPE, "model.layers.0.self_attn.k_proj.weight", "config.json implies");
    /* GGUF -> HF: an architecture the table does not have */
    ingot_file *f = open_or_null(GDIR "llama.gguf"), *g = NULL;
    ingot_convert_plan *pl = NULL;
    ASSERT_TRUE(f != NULL);
    ASSERT_OK(ingot_convert_plan_new(f, &pl, NULL));
    ASSERT_OK(ingot_convert_plan_meta_set_text(pl, "general.architecture=bert", NULL));
    ingot_convert_opts co = {0};
    co.no_fsync = true;
    ASSERT_OK(ingot_convert_run(pl, tmp("bert.gguf"), &co, NULL, NULL));
    ingot_convert_plan_free(pl);
    ingot_file_close(f);
    g = open_or_null(tmp("bert.gguf"));
    ASSERT_TRUE(g != NULL);
    memset(&e, 0, sizeof e);
    ASSERT_EQ(ingot_convert_gguf_to_hf(g, tmp("bert_hf"), &o, NULL, &e), INGOT_UNSUPPORTED);
    ASSERT_STR(e.where, "general.architecture");
    ingot_file_close(g);
    struct stat sb;
    CHECK(stat(tmp("bert_hf"), &sb) != 0, "a refused conversion created the folder");
    expect_fail(bad_folder("layers_hf", "\"num_hidden_layers\": 2", "\"num_hidden_layers\": 1",
                           NULL),
                INGOT_BAD_SHAPE, "model.layers.1.input_layernorm.weight", "1 layers");
}

/* ---- vocabularies against llama.cpp's own conversions ---- */

#define VOCABS INGOT_FIXTURES "/tokenizers/"

static void write_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(p, 1, n, f);
        fclose(f);
    }
}

/* llama.cpp's test vectors (.inp cases split by "\n__ggml_vocab_test__\n", .out one line of ids
 * each, no BOS): how many `t` encodes differently. */
static int vector_mismatches(const ingot_tokenizer *t, const char *inp, const char *outp,
                             int *cases)
{
    size_t ni, no;
    char *in = test_read_file(inp, &ni), *out = test_read_file(outp, &no);
    int bad = 0;
    *cases = 0;
    if (!in || !out) {
        free(in);
        free(out);
        return -1;
    }
    static const char sep[] = "\n__ggml_vocab_test__\n";
    char *p = in, *q = out;
    for (char *e; (e = strstr(p, sep)) != NULL; p = e + sizeof sep - 1) {
        char *eol = strchr(q, '\n');
        if (!eol) eol = q + strlen(q);
        int32_t want[1024], got[4096];
        size_t nw = 0, ng = 0;
        for (char *x = q; x < eol && nw < 1024;) {
            char *end;
            long v = strtol(x, &end, 10);
            if (end == x) break;
            want[nw++] = (int32_t)v;
            x = end;
        }
        q = *eol ? eol + 1 : eol;
        if (ingot_tokenizer_encode(t, p, (size_t)(e - p), 0, got, 4096, &ng, NULL, 0, NULL) !=
                INGOT_OK ||
            ng != nw || memcmp(got, want, nw * sizeof *got))
            bad++;
        (*cases)++;
    }
    free(in);
    free(out);
    return bad;
}

/* GPT-2's encoder.json + vocab.bpe in an HF folder (a tiny GPT-2 of its 50257-token vocabulary)
 * -> GGUF: the tokenizer.ggml.* entries of llama.cpp's ggml-vocab-gpt-2.gguf, value for value */
TEST(gpt2_vocabulary_as_llama_cpp_writes_it)
{
    const char *d = tmp("gpt2_vocab_hf");
    ASSERT_EQ(mkdir(d, 0777), 0);
    char p[800];
    snprintf(p, sizeof p, "%s/config.json", d);
    const char *cfg = "{\"model_type\": \"gpt2\", \"n_embd\": 4, \"n_layer\": 1, \"n_head\": 1, "
                      "\"n_positions\": 8, \"vocab_size\": 50257, \"bos_token_id\": 50256, "
                      "\"eos_token_id\": 50256}";
    write_file(p, cfg, strlen(cfg));
    static const struct { const char *name; uint64_t r, c; } ts[] = {
        {"wte.weight", 50257, 4}, {"wpe.weight", 8, 4}, {"ln_f.weight", 4, 0},
        {"ln_f.bias", 4, 0}, {"h.0.ln_1.weight", 4, 0}, {"h.0.ln_1.bias", 4, 0},
        {"h.0.attn.c_attn.weight", 4, 12}, {"h.0.attn.c_attn.bias", 12, 0},
        {"h.0.attn.c_proj.weight", 4, 4}, {"h.0.attn.c_proj.bias", 4, 0},
        {"h.0.ln_2.weight", 4, 0}, {"h.0.ln_2.bias", 4, 0}, {"h.0.mlp.c_fc.weight", 4, 16},
        {"h.0.mlp.c_fc.bias", 16, 0}, {"h.0.mlp.c_proj.weight", 16, 4},
        {"h.0.mlp.c_proj.bias", 4, 0}};
    static float zeros[50257 * 4];
    ingot_writer_opts wo = {0};
    wo.format = "safetensors";
    wo.no_fsync = true;
    ingot_writer *w = NULL;
    ASSERT_OK(ingot_writer_new(&wo, &w, NULL));
    for (size_t k = 0; k < sizeof ts / sizeof ts[0]; k++) {
        uint64_t shape[2] = {ts[k].r, ts[k].c};
        ASSERT_OK(ingot_writer_add_tensor(w, ts[k].name, INGOT_DTYPE_F32, ts[k].c ? 2 : 1, shape,
                                          NULL, zeros, NULL));
    }
    snprintf(p, sizeof p, "%s/model.safetensors", d);
    ASSERT_OK(ingot_writer_save(w, p, NULL));
    ingot_writer_free(w);
    size_t n;
    char *b = test_read_file(VOCABS "gpt2/encoder.json", &n);
    snprintf(p, sizeof p, "%s/encoder.json", d);
    write_file(p, b, n);
    free(b);
    b = test_read_file(VOCABS "gpt2/vocab.bpe", &n);
    snprintf(p, sizeof p, "%s/vocab.bpe", d);
    write_file(p, b, n);
    free(b);
    convert_hf(d, tmp("gpt2_vocab.gguf"));
    ingot_file *ref = open_or_null(VOCABS "llama.cpp/ggml-vocab-gpt-2.gguf");
    ingot_file *got = open_or_null(tmp("gpt2_vocab.gguf"));
    ASSERT_TRUE(ref && got);
    int keys = 0;
    for (uint64_t i = 0; i < ingot_file_meta_count(ref); i++) {
        ingot_meta_info m;
        ingot_file_meta_at(ref, i, &m);
        if (m.key_len < 16 || memcmp(m.key, "tokenizer.ggml.", 15)) continue;
        CHECK(same_meta(ref, got, m.key, m.key_len), "key %.*s", (int)m.key_len, m.key);
        keys++;
    }
    ASSERT_EQ(keys, 7); /* model, pre, tokens, token_type, merges, bos, eos */
    for (uint64_t i = 0; i < ingot_file_meta_count(got); i++) {
        ingot_meta_info m, mr;
        ingot_file_meta_at(got, i, &m);
        char key[256];
        snprintf(key, sizeof key, "%.*s", (int)m.key_len, m.key);
        CHECK(strncmp(key, "tokenizer.", 10) || ingot_file_meta_find(ref, key, &mr) == INGOT_OK,
              "key %s is not in llama.cpp's file", key);
    }
    ingot_file_close(ref);
    ingot_file_close(got);
}

/* Llama 2's SentencePiece vocabulary -> tokenizer.json (merges derived from the scores, as
 * transformers does) -> reloaded: the same tokens and types, the scores where SentencePiece
 * BPE's -k holds, and llama.cpp's 46 test vectors tokenized exactly */
TEST(spm_vocabulary_to_tokenizer_json)
{
    ingot_tokenizer *t = NULL, *r = NULL;
    ASSERT_OK(ingot_tokenizer_open(VOCABS "llama.cpp/ggml-vocab-llama-spm.gguf", NULL, &t, NULL));
    char *json = NULL, *cfg = NULL;
    size_t jn = 0, cn = 0;
    ASSERT_OK(ingot_tokenizer_export_json(t, &json, &jn, &cfg, &cn, NULL));
    const char *d = tmp("spm_tok");
    ASSERT_EQ(mkdir(d, 0777), 0);
    char p[800];
    snprintf(p, sizeof p, "%s/tokenizer.json", d);
    write_file(p, json, jn);
    snprintf(p, sizeof p, "%s/tokenizer_config.json", d);
    write_file(p, cfg, cn);
    ingot_tokenizer_export_free(json, jn);
    ingot_tokenizer_export_free(cfg, cn);
    ingot_error e;
    if (ingot_tokenizer_open(d, NULL, &r, &e) != INGOT_OK) {
        char b[300];
        FAIL_AT("reopen: %s", ingot_error_format(&e, b, sizeof b));
    }
    ASSERT_STR(ingot_tokenizer_kind(r), "bpe-fallback");
    ASSERT_EQ(ingot_tokenizer_vocab_size(r), ingot_tokenizer_vocab_size(t));
    uint32_t k = 0, kept = 0, nv = ingot_tokenizer_vocab_size(t);
    float *sa_all = malloc(nv * sizeof(float)), *sb_all = malloc(nv * sizeof(float));
    int32_t *ya_all = malloc(nv * sizeof(int32_t)), *yb_all = malloc(nv * sizeof(int32_t));
    ASSERT_OK(ingot_tokenizer_vocab_attrs(t, sa_all, ya_all, nv));
    ASSERT_OK(ingot_tokenizer_vocab_attrs(r, sb_all, yb_all, nv));
    for (int32_t i = 0; i < (int32_t)nv; i += 997) { /* the single-id call agrees */
        float f;
        int32_t y;
        ASSERT_OK(ingot_tokenizer_token_attrs(r, i, &f, &y));
        CHECK(!memcmp(&f, &sb_all[i], sizeof f) && y == yb_all[i], "attrs of %d", i);
    }
    for (int32_t i = 0; i < (int32_t)nv; i++) {
        const char *sa, *sb;
        size_t la, lb;
        float fa = sa_all[i], fb = sb_all[i];
        int32_t ya = ya_all[i], yb = yb_all[i];
        ingot_tokenizer_token_text(t, i, &sa, &la);
        ingot_tokenizer_token_text(r, i, &sb, &lb);
        CHECK(la == lb && !memcmp(sa, sb, la) && ya == yb, "token %d", i);
        float rule = ya == 1 ? -(float)k++ : 0.0f;
        if (!memcmp(&fa, &rule, sizeof fa)) {
            CHECK(!memcmp(&fa, &fb, sizeof fa), "score of token %d", i);
            kept++;
        }
    }
    free(sa_all);
    free(sb_all);
    free(ya_all);
    free(yb_all);
    ASSERT_TRUE(kept > 31900);
    CHECK(ingot_tokenizer_adds_bos(r) && !ingot_tokenizer_adds_eos(r), "add_bos/add_eos");
    int cases = 0;
    ASSERT_EQ(vector_mismatches(r, VOCABS "llama.cpp/ggml-vocab-llama-spm.gguf.inp",
                                VOCABS "llama.cpp/ggml-vocab-llama-spm.gguf.out", &cases),
              0);
    ASSERT_EQ(cases, 46);
    ingot_tokenizer_close(t);
    ingot_tokenizer_close(r);
}

/* Llama 3's tokenizer.json -> exported -> reloaded: the llama-bpe vectors still exact */
TEST(llama3_tokenizer_json_round_trip)
{
    ingot_tokenizer *t = NULL, *r = NULL;
    ASSERT_OK(ingot_tokenizer_open(VOCABS "llama3/tokenizer.json", NULL, &t, NULL));
    char *json = NULL;
    size_t jn = 0, nm_t = 0, nm_r = 0;
    ASSERT_OK(ingot_tokenizer_export_json(t, &json, &jn, NULL, NULL, NULL));
    ingot_status st = ingot_tokenizer_open_buffer(json, jn, NULL, &r, NULL);
    ingot_tokenizer_export_free(json, jn);
    ASSERT_OK(st);
    ASSERT_STR(ingot_tokenizer_pre(r), "llama-bpe");
    ASSERT_OK(ingot_tokenizer_merges(t, NULL, 0, &nm_t, NULL));
    ASSERT_OK(ingot_tokenizer_merges(r, NULL, 0, &nm_r, NULL));
    ASSERT_EQ(nm_t, nm_r);
    ASSERT_TRUE(nm_t > 280000);
    int cases = 0;
    ASSERT_EQ(vector_mismatches(r, VOCABS "llama.cpp/ggml-vocab-llama-bpe.gguf.inp",
                                VOCABS "llama.cpp/ggml-vocab-llama-bpe.gguf.out", &cases),
              0);
    ASSERT_EQ(cases, 46);
    ingot_tokenizer_close(t);
    ingot_tokenizer_close(r);
}

TEST(setup)
{
    snprintf(dir, sizeof dir, "%s/test_convert_model.%d", INGOT_BINARY_DIR, (int)getpid());
    ASSERT_EQ(mkdir(dir, 0777), 0);
}

RUN_TESTS(T(setup), T(stories_round_trip_tensors_and_keys),
          T(stories_hf_folder_runs_and_tokenizes_like_the_gguf), T(llama_hf_to_gguf),
          T(qwen2_hf_to_gguf_unpermuted_biases), T(mixtral_hf_to_gguf_stacked_experts),
          T(gpt2_hf_to_gguf_transposed), T(rope_scaling_linear_both_ways),
          T(rope_scaling_llama3_to_gguf), T(llama_gguf_to_hf), T(qwen2_gguf_to_hf),
          T(mixtral_gguf_to_hf), T(gpt2_gguf_to_hf), T(name_table_api),
          T(errors_name_the_key_or_tensor), T(gpt2_vocabulary_as_llama_cpp_writes_it),
          T(spm_vocabulary_to_tokenizer_json), T(llama3_tokenizer_json_round_trip))
