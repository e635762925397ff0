/*
 * test_lm_models.c - the language-model runtime on the seeded models of tests/golden/lm/
 * (scripts/gen_lm_models.py: files written by torch/numpy code in each ecosystem's layout, logits
 * from a float64 torch forward pass): Llama with HF names and half-split RoPE (sharded
 * safetensors, torch state dict) and in GGUF with permuted q/k, Qwen2-style q/k/v biases with a
 * tied head, Mixtral-style MoE (per-expert HF tensors, merged GGUF ones), GPT-2 (hub safetensors
 * with Conv1D [in, out] weights and mask buffers, a GPT2LMHeadModel state dict, GGUF). Each:
 * logits within 1e-4 x max(1, |ref|), the same 32 greedy tokens, decode token by token equal to
 * the full forward. Then config.json errors, each naming the key or tensor.
 */
#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "npy_load.h"
#include "ingot/lm.h"

#define GDIR INGOT_SOURCE_DIR "/tests/golden/lm/"


static ingot_lm *open_model(const char *backend, const char *path, ingot_backend **be,
                            ingot_error *e)
{
    ingot_backend_opts bo = {0};
    bo.threads = 2;
    if (ingot_backend_new(backend, &bo, be, e) != INGOT_OK) return NULL;
    ingot_lm *m = NULL;
    if (ingot_lm_open_path(*be, path, NULL, &m, e) != INGOT_OK) {
        ingot_backend_free(*be);
        *be = NULL;
    }
    return m;
}

typedef struct expect_cfg {
    ingot_lm_arch arch;
    ingot_rope_mode rope;
    bool tied;
    uint32_t experts;
    const char *naming;
} expect_cfg;

static void check_model(const char *backend, const char *base, const char *variant,
                        const expect_cfg *x)
{
    char path[512];
    uint64_t nt = 0, nl = 0, ng = 0;
    snprintf(path, sizeof path, GDIR "%s_tokens.npy", base);
    int32_t *tok = load_npy(path, INGOT_DTYPE_I32, &nt);
    snprintf(path, sizeof path, GDIR "%s_logits.npy", base);
    float *ref = load_npy(path, INGOT_DTYPE_F32, &nl);
    snprintf(path, sizeof path, GDIR "%s_greedy.npy", base);
    int32_t *gr = load_npy(path, INGOT_DTYPE_I32, &ng);
    ASSERT_TRUE(tok && ref && gr && ng == 33);
    snprintf(path, sizeof path, GDIR "%s", variant);
    ingot_backend *be = NULL;
    ingot_error e;
    ingot_lm *m = open_model(backend, path, &be, &e);
    if (!m) {
        char b[300];
        FAIL_AT("%s: %s", variant, ingot_error_format(&e, b, sizeof b));
    }
    const ingot_lm_config *c = ingot_lm_get_config(m);
    CHECK(c->arch == x->arch, "%s: arch", variant);
    CHECK(x->arch == INGOT_LM_ARCH_GPT2 || c->rope_mode == x->rope, "%s: rope mode %d", variant,
          c->rope_mode);
    CHECK(c->tied_head == x->tied, "%s: tied %d", variant, c->tied_head);
    CHECK(c->n_expert == x->experts, "%s: experts", variant);
    CHECK(!strcmp(c->naming, x->naming), "%s: naming %s", variant, c->naming);
    uint32_t V = c->vocab;
    ASSERT_EQ(nl, nt * V);
    float *got = malloc(nt * V * 4), *step = malloc(nt * V * 4);
    ingot_lm_session *s = NULL;
    ASSERT_OK(ingot_lm_session_new(m, NULL, &s, NULL));
    ASSERT_OK(ingot_lm_eval(s, tok, nt, INGOT_LM_LOGITS_ALL, got, nt * V, NULL));
    double d = 0, dk = 0;
    for (size_t i = 0; i < nt * V; i++)
        d = fmax(d, fabs((double)got[i] - ref[i]) / fmax(1.0, fabs((double)ref[i])));
    CHECK(d <= 1e-4, "%s/%s: logits differ from torch by %.3g", variant, backend, d);
    /* decode token by token: the same logits as the full forward */
    ASSERT_OK(ingot_lm_session_rewind(s, 0, NULL));
    for (size_t t = 0; t < nt; t++)
        ASSERT_OK(ingot_lm_eval(s, tok + t, 1, INGOT_LM_LOGITS_LAST, step + t * V, V, NULL));
    for (size_t i = 0; i < nt * V; i++)
        dk = fmax(dk, fabs((double)step[i] - got[i]) / fmax(1.0, fabs((double)got[i])));
    CHECK(dk <= 1e-5, "%s/%s: token-by-token decode differs from the full forward by %.3g",
          variant, backend, dk);
    /* 32 greedy tokens from BOS */
    ASSERT_OK(ingot_lm_session_rewind(s, 0, NULL));
    ingot_sampler *sp = NULL;
    ingot_sampler_params p = {0};
    ASSERT_OK(ingot_sampler_new(&p, V, NULL, &sp, NULL));
    ingot_lm_generate_opts go = {0};
    go.max_tokens = 32;
    go.ignore_eos = true;
    int32_t out[32];
    size_t n = 0;
    ASSERT_OK(ingot_lm_generate(s, sp, gr, 1, &go, out, 32, &n, NULL, NULL));
    ASSERT_EQ(n, 32);
    for (int i = 0; i < 32; i++)
        if (out[i] != gr[i + 1]) {
            CHECK(0, "%s/%s: greedy token %d is %d, torch %d", variant, backend, i, out[i],
                  gr[i + 1]);
            break;
        }
    ingot_sampler_free(sp);
    ingot_lm_session_free(s);
    ingot_lm_free(m);
    ingot_backend_free(be);
    free(got);
    free(step);
    free(tok);
    free(ref);
    free(gr);
}

static const expect_cfg LLAMA_HF = {INGOT_LM_ARCH_LLAMA, INGOT_ROPE_HALF, false, 0, "hf"};
static const expect_cfg LLAMA_GGUF = {INGOT_LM_ARCH_LLAMA, INGOT_ROPE_INTERLEAVED, false, 0,
                                      "gguf"};
static const expect_cfg QWEN2_HF = {INGOT_LM_ARCH_LLAMA, INGOT_ROPE_HALF, true, 0, "hf"};
static const expect_cfg QWEN2_GGUF = {INGOT_LM_ARCH_LLAMA, INGOT_ROPE_HALF, true, 0, "gguf"};
static const expect_cfg MOE_HF = {INGOT_LM_ARCH_LLAMA, INGOT_ROPE_HALF, false, 4, "hf"};
static const expect_cfg MOE_GGUF = {INGOT_LM_ARCH_LLAMA, INGOT_ROPE_INTERLEAVED, false, 4,
                                    "gguf"};
static const expect_cfg GPT2_TIED = {INGOT_LM_ARCH_GPT2, INGOT_ROPE_INTERLEAVED, true, 0, "hf"};
static const expect_cfg GPT2_HEAD = {INGOT_LM_ARCH_GPT2, INGOT_ROPE_INTERLEAVED, false, 0, "hf"};
static const expect_cfg GPT2_GGUF = {INGOT_LM_ARCH_GPT2, INGOT_ROPE_INTERLEAVED, true, 0,
                                     "gguf"};

TEST(llama_hf_sharded_safetensors) { check_model("cpu", "llama", "llama_hf", &LLAMA_HF); }
TEST(llama_hf_torch_state_dict) { check_model("cpu", "llama", "llama_pt", &LLAMA_HF); }
TEST(llama_gguf_permuted_qk) { check_model("cpu", "llama", "llama.gguf", &LLAMA_GGUF); }
TEST(llama_gguf_ref_backend) { check_model("ref", "llama", "llama.gguf", &LLAMA_GGUF); }
TEST(qwen2_qkv_bias_tied_hf) { check_model("cpu", "qwen2", "qwen2_hf", &QWEN2_HF); }
TEST(qwen2_qkv_bias_tied_gguf) { check_model("cpu", "qwen2", "qwen2.gguf", &QWEN2_GGUF); }
TEST(moe_hf_experts) { check_model("cpu", "moe", "moe_hf", &MOE_HF); }
TEST(moe_gguf_merged_experts) { check_model("cpu", "moe", "moe.gguf", &MOE_GGUF); }
TEST(moe_ref_backend) { check_model("ref", "moe", "moe_hf", &MOE_HF); }
TEST(gpt2_hub_safetensors) { check_model("cpu", "gpt2", "gpt2_hf", &GPT2_TIED); }
TEST(gpt2_lmhead_state_dict) { check_model("cpu", "gpt2", "gpt2_pt", &GPT2_HEAD); }
TEST(gpt2_gguf) { check_model("cpu", "gpt2", "gpt2.gguf", &GPT2_GGUF); }
TEST(gpt2_ref_backend) { check_model("ref", "gpt2", "gpt2_hf", &GPT2_TIED); }

/* Scaled RoPE: config.json rope_scaling linear (factor 4) and llama3 (factor 8, bands 1 / 4 of
 * an original context of 64: head size 8's four frequencies fall in all three bands); GGUF
 * rope.scaling.type "linear" + rope.scaling.factor, and rope_freqs.weight (llama.cpp's form of
 * the Llama 3 rule). Torch's reference rescales the frequencies as transformers does. */
static void check_scaled(const char *backend, const char *base, const char *variant,
                         const expect_cfg *x, ingot_lm_rope_scaling want)
{
    char path[512];
    snprintf(path, sizeof path, GDIR "%s", variant);
    ingot_backend *be = NULL;
    ingot_error e;
    ingot_lm *m = open_model("cpu", path, &be, &e);
    ASSERT_TRUE(m);
    const ingot_lm_config *c = ingot_lm_get_config(m);
    CHECK(c->rope_scaling == want, "%s: rope scaling %d, want %d", variant, c->rope_scaling,
          want);
    ingot_lm_free(m);
    ingot_backend_free(be);
    check_model(backend, base, variant, x);
}
TEST(rope_linear_hf)
{
    check_scaled("cpu", "llama_ropelin", "llama_ropelin_hf", &LLAMA_HF,
                 INGOT_LM_ROPE_SCALING_LINEAR);
}
TEST(rope_linear_gguf)
{
    check_scaled("cpu", "llama_ropelin", "llama_ropelin.gguf", &LLAMA_GGUF,
                 INGOT_LM_ROPE_SCALING_LINEAR);
}
TEST(rope_llama3_hf)
{
    check_scaled("cpu", "llama_rope3", "llama_rope3_hf", &LLAMA_HF,
                 INGOT_LM_ROPE_SCALING_LLAMA3);
}
TEST(rope_llama3_gguf_rope_freqs)
{
    check_scaled("cpu", "llama_rope3", "llama_rope3.gguf", &LLAMA_GGUF,
                 INGOT_LM_ROPE_SCALING_FREQS);
}

/* Partial rotary (llama_partial: head size 16, the first 8 dims of each head rotate, the other
 * 8 pass): config.json partial_rotary_factor 0.5 (half-split pairs among the 8, frequencies
 * theta^(-2i/8), as transformers' partial models), GGUF rope.dimension_count 8 (ggml's n_dims:
 * interleaved pairs among the first 8, q/k rows permuted within them). */
static void check_partial(const char *backend, const char *variant, const expect_cfg *x)
{
    char path[512];
    snprintf(path, sizeof path, GDIR "%s", variant);
    ingot_backend *be = NULL;
    ingot_error e;
    ingot_lm *m = open_model("cpu", path, &be, &e);
    ASSERT_TRUE(m);
    const ingot_lm_config *c = ingot_lm_get_config(m);
    CHECK(c->head_dim == 16 && c->rope_dims == 8, "%s: head %u, rope dims %u", variant,
          c->head_dim, c->rope_dims);
    ingot_lm_free(m);
    ingot_backend_free(be);
    check_model(backend, "llama_partial", variant, x);
}
TEST(rope_partial_hf) { check_partial("cpu", "llama_partial_hf", &LLAMA_HF); }
TEST(rope_partial_gguf) { check_partial("cpu", "llama_partial.gguf", &LLAMA_GGUF); }
TEST(rope_partial_ref_backend) { check_partial("ref", "llama_partial.gguf", &LLAMA_GGUF); }
TEST(rope_partial_f16_kv)
{
    /* the F16 cache path stores rotated keys through scratch: the pass-through dims too */
    ingot_backend *be = NULL;
    ingot_error e;
    ingot_lm *m = open_model("cpu", GDIR "llama_partial_hf", &be, &e);
    ASSERT_TRUE(m);
    uint64_t nt = 0, nl = 0;
    int32_t *tok = load_npy(GDIR "llama_partial_tokens.npy", INGOT_DTYPE_I32, &nt);
    float *ref = load_npy(GDIR "llama_partial_logits.npy", INGOT_DTYPE_F32, &nl);
    ASSERT_TRUE(tok && ref);
    uint32_t V = ingot_lm_get_config(m)->vocab;
    float *got = malloc(nt * V * 4);
    ingot_lm_session_opts so = {0};
    so.kv_dtype = INGOT_DTYPE_F16;
    ingot_lm_session *s = NULL;
    ASSERT_OK(ingot_lm_session_new(m, &so, &s, NULL));
    ASSERT_OK(ingot_lm_eval(s, tok, nt, INGOT_LM_LOGITS_ALL, got, nt * V, NULL));
    /* against each row's largest logit, as test_lm's F16 check; the same argmax */
    double d = 0;
    for (size_t r = 0; r < nt; r++) {
        double big = 0;
        size_t ag = 0, ar = 0;
        for (size_t i = 0; i < V; i++) {
            big = fmax(big, fabs((double)ref[r * V + i]));
            if (got[r * V + i] > got[r * V + ag]) ag = i;
            if (ref[r * V + i] > ref[r * V + ar]) ar = i;
        }
        for (size_t i = 0; i < V; i++)
            d = fmax(d, fabs((double)got[r * V + i] - ref[r * V + i]) / big);
        CHECK(ag == ar, "F16 cache: argmax of row %zu is %zu, torch %zu", r, ag, ar);
    }
    CHECK(d <= 2e-3, "F16 cache: logits differ from torch by %.3g of the row's largest", d);
    ingot_lm_session_free(s);
    ingot_lm_free(m);
    ingot_backend_free(be);
    free(got);
    free(tok);
    free(ref);
}
TEST(rope_llama3_ref_backend)
{
    check_scaled("ref", "llama_rope3", "llama_rope3_hf", &LLAMA_HF,
                 INGOT_LM_ROPE_SCALING_LLAMA3);
}

/* ---- quantized GGUF files (scripts/gen_lm_quant.py): torch ran on the dequantized weights ---- */

static int notices;
static void count_notice(void *ctx, const char *msg)
{
    (void)ctx;
    if (strstr(msg, "converted")) notices++; /* (not the repacking notice) */
}

/* 2-norm of got - ref over the 2-norm of ref. */
static double rel_err(const float *got, const float *ref, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double a = got[i], b = ref[i];
        num += (a - b) * (a - b);
        den += b * b;
    }
    return sqrt(num / den);
}

/* The logits against torch's on the dequantized weights (2-norm of the difference over the
 * 2-norm of the reference, all positions) within tol, the same argmax at every position, the
 * same 32 greedy tokens. On the cpu backend the matmuls of the block types quantize their
 * activations to 8 bits (as ggml does), so the logits are also compared with torch's forward
 * pass that quantizes each matmul's activations the same way (<base>_logits_act8.npy,
 * scripts/gen_lm_quant.py) within tol_act8: what remains is float32 rounding. The ref
 * backend keeps f32 activations: tol_act8 < 0 skips that comparison. want_notices < 0: any. */
static void check_quant(const char *backend, const char *base, int want_notices, double tol,
                        double tol_act8)
{
    char path[512];
    uint64_t nt = 0, nl = 0, ng = 0, na = 0;
    snprintf(path, sizeof path, GDIR "%s_tokens.npy", base);
    int32_t *tok = load_npy(path, INGOT_DTYPE_I32, &nt);
    snprintf(path, sizeof path, GDIR "%s_logits.npy", base);
    float *ref = load_npy(path, INGOT_DTYPE_F32, &nl);
    snprintf(path, sizeof path, GDIR "%s_logits_act8.npy", base);
    float *ref8 = load_npy(path, INGOT_DTYPE_F32, &na);
    snprintf(path, sizeof path, GDIR "%s_greedy.npy", base);
    int32_t *gr = load_npy(path, INGOT_DTYPE_I32, &ng);
    ASSERT_TRUE(tok && ref && ref8 && gr && ng == 33 && na == nl);
    ingot_backend *be = NULL;
    ASSERT_OK(ingot_backend_new(backend, NULL, &be, NULL));
    ingot_lm_opts o = {0};
    o.notice = count_notice;
    notices = 0;
    ingot_lm *m = NULL;
    snprintf(path, sizeof path, GDIR "%s.gguf", base);
    ASSERT_OK(ingot_lm_open_path(be, path, &o, &m, NULL));
    /* one notice per tensor whose dtype the backend has no linear for (converted to F32 once) */
    CHECK(want_notices < 0 || notices == want_notices, "%s: %d conversion notices, want %d", base,
          notices, want_notices);
    uint32_t V = ingot_lm_get_config(m)->vocab;
    ASSERT_EQ(nl, nt * V);
    float *got = malloc(nt * V * 4);
    ingot_lm_session *s = NULL;
    ASSERT_OK(ingot_lm_session_new(m, NULL, &s, NULL));
    ASSERT_OK(ingot_lm_eval(s, tok, nt, INGOT_LM_LOGITS_ALL, got, nt * V, NULL));
    for (size_t r = 0; r < nt; r++) {
        size_t ba = 0, bb = 0;
        for (size_t i = 0; i < V; i++) {
            if (got[r * V + i] > got[r * V + ba]) ba = i;
            if (ref[r * V + i] > ref[r * V + bb]) bb = i;
        }
        CHECK(ba == bb, "%s: row %zu argmax %zu, torch %zu", base, r, ba, bb);
    }
    double e = rel_err(got, ref, nl), e8 = rel_err(got, ref8, nl);
    CHECK(e <= tol, "%s (%s): logits differ from torch by %.3g (2-norm relative)", base, backend,
          e);
    CHECK(tol_act8 < 0 || e8 <= tol_act8,
          "%s (%s): logits differ from torch with 8-bit activations by %.3g", base, backend, e8);
    ASSERT_OK(ingot_lm_session_rewind(s, 0, NULL));
    ingot_sampler *sp = NULL;
    ingot_sampler_params p = {0};
    ASSERT_OK(ingot_sampler_new(&p, V, NULL, &sp, NULL));
    ingot_lm_generate_opts go = {0};
    go.max_tokens = 32;
    go.ignore_eos = true;
    int32_t out[32];
    size_t n = 0;
    ASSERT_OK(ingot_lm_generate(s, sp, gr, 1, &go, out, 32, &n, NULL, NULL));
    ASSERT_EQ(n, 32);
    for (int i = 0; i < 32; i++)
        if (out[i] != gr[i + 1]) {
            CHECK(0, "%s: greedy token %d is %d, torch %d", base, i, out[i], gr[i + 1]);
            break;
        }
    ingot_sampler_free(sp);
    ingot_lm_session_free(s);
    ingot_lm_free(m);
    ingot_backend_free(be);
    free(got);
    free(tok);
    free(ref);
    free(ref8);
    free(gr);
}

/* Q4_K Q5_K Q6_K Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 F16 BF16 mixed per tensor. Q4_1, Q5_0 and Q5_1 are
 * converted to F32 at load (3 notices); every other type runs natively. The logits are
 * 1.25e-2 (2-norm relative) from torch's on the dequantized weights, above issue 15's 1e-2,
 * and 0.8e-7 to 1.9e-7 (every ISA level) from torch's with the activations quantized as the
 * cpu backend quantizes them: the whole difference is the 8-bit activations (llama.cpp's
 * scheme gives 1.39e-2 on this model; gen_lm_quant.py prints the share of each tensor: the Q6_K
 * head, one 256-element block per row, 0.78e-2 alone). The ref backend, with f32 activations,
 * is within 1e-7. Every argmax and all 32 greedy tokens are identical. docs/RUNTIME.md has the
 * figures. */
TEST(quantized_mixed_types) { check_quant("cpu", "quant", 3, 1.5e-2, 1e-6); }
TEST(quantized_mixed_types_f32_activations) { check_quant("ref", "quant", -1, 1e-6, -1); }
/* the real stories260K in Q8_0; ffn_down (rows of 172) stays F16, which the backend runs
 * natively: no conversion notice. 0.54e-2 from torch, 0.50e-2 with llama.cpp's scheme. */
TEST(quantized_stories_q8_0) { check_quant("cpu", "stories_q8", 0, 1e-2, 1e-6); }
TEST(quantized_stories_q8_0_f32_activations) { check_quant("ref", "stories_q8", -1, 1e-6, -1); }

/* ---- LoRA: torch merged each adapter into its model at scale 0.5 (gen_lm_models.py) ----
 * llama_lora: r 4, alpha 8 on q/k/v and down; gpt2_lora: c_attn, c_proj (attention and MLP),
 * c_fc with fan_in_fan_out (Conv1D); moe_lora: q, o, the router and every expert's w1/w2/w3. */

/* Owned bytes of a LoRA over `n` matrices [out, in] per layer, 2 layers: merged, F32 copies;
 * run time, only the factors A [r, in] and B [out, r] (r = 4). */
static uint64_t lora_owned(const int (*mats)[2], size_t n, bool runtime)
{
    uint64_t b = 0;
    for (size_t i = 0; i < n; i++)
        b += runtime ? 4 * (uint64_t)(mats[i][1] + mats[i][0]) : (uint64_t)mats[i][0] * mats[i][1];
    return 2 * b * 4;
}

static void check_lora_on(const char *model, const char *base, const char *adapter, bool runtime,
                          uint64_t owned)
{
    uint64_t nt = 0, nl = 0;
    char tp[512], lp[512];
    snprintf(tp, sizeof tp, GDIR "%s_tokens.npy", model);
    snprintf(lp, sizeof lp, GDIR "%s_lora_logits.npy", model);
    int32_t *tok = load_npy(tp, INGOT_DTYPE_I32, &nt);
    float *ref = load_npy(lp, INGOT_DTYPE_F32, &nl);
    ASSERT_TRUE(tok && ref);
    ingot_backend *be = NULL;
    ASSERT_OK(ingot_backend_new("cpu", NULL, &be, NULL));
    ingot_lm_opts o = {0};
    o.lora_path = adapter;
    o.lora_scale = 0.5;
    o.lora_runtime = runtime;
    ingot_lm *m = NULL;
    ingot_error e;
    char path[512];
    snprintf(path, sizeof path, GDIR "%s", base);
    if (ingot_lm_open_path(be, path, &o, &m, &e) != INGOT_OK) {
        char b[300];
        ingot_backend_free(be);
        free(tok);
        free(ref);
        FAIL_AT("%s: %s", base, ingot_error_format(&e, b, sizeof b));
    }
    ingot_lm_estimate est;
    ingot_lm_estimate_plan(m, 64, INGOT_DTYPE_F32, 0, &est);
    CHECK(est.owned_bytes == owned, "%s: %llu owned bytes, want %llu", base,
          (unsigned long long)est.owned_bytes, (unsigned long long)owned);
    uint32_t V = ingot_lm_get_config(m)->vocab;
    CHECK(nl == nt * V, "%s: reference of %llu logits", base, (unsigned long long)nl);
    float *got = malloc(nt * V * 4), *one = malloc(V * 4);
    ingot_lm_session *s = NULL;
    ASSERT_OK(ingot_lm_session_new(m, NULL, &s, NULL));
    /* prefill (the GEMM; MoE: each expert over its rows) */
    ASSERT_OK(ingot_lm_eval(s, tok, nt, INGOT_LM_LOGITS_ALL, got, nt * V, NULL));
    double d = 0, dd = 0;
    for (size_t i = 0; i < nt * V; i++)
        d = fmax(d, fabs((double)got[i] - ref[i]) / fmax(1.0, fabs((double)ref[i])));
    /* decode token by token (the GEMV; MoE: one row's k experts) */
    ASSERT_OK(ingot_lm_session_rewind(s, 0, NULL));
    for (size_t t = 0; t < nt; t++) {
        ASSERT_OK(ingot_lm_eval(s, tok + t, 1, INGOT_LM_LOGITS_LAST, one, V, NULL));
        for (size_t i = 0; i < V; i++)
            dd = fmax(dd, fabs((double)one[i] - ref[t * V + i]) /
                              fmax(1.0, fabs((double)ref[t * V + i])));
    }
    CHECK(d <= 1e-4 && dd <= 1e-4,
          "%s + %s (%s): logits differ from torch's merged model by %.3g (decode %.3g)", base,
          adapter, runtime ? "run time" : "merged", d, dd);
    ingot_lm_session_free(s);
    ingot_lm_free(m);
    ingot_backend_free(be);
    free(got);
    free(one);
    free(tok);
    free(ref);
}

/* llama: per layer q 32x32, k and v 16x32, down 32x64 */
static const int llama_mats[][2] = {{32, 32}, {16, 32}, {16, 32}, {32, 64}};
static void check_lora(const char *base, const char *adapter, bool runtime)
{
    check_lora_on("llama", base, adapter, runtime, lora_owned(llama_mats, 4, runtime));
}

TEST(lora_merged_hf) { check_lora("llama_hf", GDIR "llama_lora", false); }
TEST(lora_runtime_hf) { check_lora("llama_hf", GDIR "llama_lora", true); }
/* GGUF q/k rows are permuted for the interleaved rotation: so must B's rows be */
TEST(lora_merged_gguf) { check_lora("llama.gguf", GDIR "llama_lora/adapter_model.safetensors",
                                    false); }
TEST(lora_runtime_gguf) { check_lora("llama.gguf", GDIR "llama_lora", true); }

/* GPT-2: c_attn 96x32, attn.c_proj 32x32, c_fc 128x32, mlp.c_proj 32x128 ([out, in]); HF weights
 * are stored [in, out] (transposed views), GGUF's [out, in] */
static const int gpt2_mats[][2] = {{96, 32}, {32, 32}, {128, 32}, {32, 128}};
static void check_lora_gpt2(const char *base, bool runtime)
{
    check_lora_on("gpt2", base, GDIR "gpt2_lora", runtime, lora_owned(gpt2_mats, 4, runtime));
}
/* hub safetensors: names without "transformer.", the adapter's with it */
TEST(lora_gpt2_merged_hf) { check_lora_gpt2("gpt2_hf", false); }
TEST(lora_gpt2_runtime_hf) { check_lora_gpt2("gpt2_hf", true); }
TEST(lora_gpt2_merged_pt) { check_lora_gpt2("gpt2_pt", false); }
TEST(lora_gpt2_merged_gguf) { check_lora_gpt2("gpt2.gguf", false); }
TEST(lora_gpt2_runtime_gguf) { check_lora_gpt2("gpt2.gguf", true); }

/* MoE: q 32x32, o 32x32, router 4x32, 4 experts x (w1 64x32, w3 64x32, w2 32x64) */
static const int moe_mats[][2] = {{32, 32}, {32, 32}, {4, 32}, {64, 32}, {64, 32}, {32, 64},
                                  {64, 32}, {64, 32}, {32, 64}, {64, 32}, {64, 32}, {32, 64},
                                  {64, 32}, {64, 32}, {32, 64}};
static void check_lora_moe(const char *base, bool runtime)
{
    check_lora_on("moe", base, GDIR "moe_lora", runtime, lora_owned(moe_mats, 15, runtime));
}
/* per-expert HF tensors; GGUF's stacked ffn_*_exps (each expert a slice) with permuted q */
TEST(lora_moe_merged_hf) { check_lora_moe("moe_hf", false); }
TEST(lora_moe_runtime_hf) { check_lora_moe("moe_hf", true); }
TEST(lora_moe_merged_gguf) { check_lora_moe("moe.gguf", false); }
TEST(lora_moe_runtime_gguf) { check_lora_moe("moe.gguf", true); }

/* An adapter made for another architecture: what has no module here is refused, named */
static void expect_foreign_adapter(const char *base, const char *adapter, ingot_status code,
                                   const char *where)
{
    ingot_backend *be = NULL;
    ASSERT_OK(ingot_backend_new("cpu", NULL, &be, NULL));
    ingot_lm_opts o = {0};
    o.lora_path = adapter;
    ingot_lm *m = NULL;
    ingot_error e;
    memset(&e, 0, sizeof e);
    ASSERT_ST(ingot_lm_open_path(be, base, &o, &m, &e), code);
    CHECK(!strncmp(e.where, where, sizeof e.where - 1), /* where holds 63 bytes */
          "%s on %s: where '%s', want '%s' (%s)", adapter, base,
          e.where, where, e.msg);
    ingot_backend_free(be);
}

TEST(lora_foreign_adapters_refused)
{
    /* the MoE adapter on the dense llama: q and o fit, the router's factors have no module */
    expect_foreign_adapter(GDIR "llama_hf", GDIR "moe_lora", INGOT_E_UNSUPPORTED,
                           "base_model.model.model.layers.0.block_sparse_moe.gate.lora_A.weight");
    /* GPT-2's (fan_in_fan_out: Conv1D layers) on a Llama */
    expect_foreign_adapter(GDIR "llama_hf", GDIR "gpt2_lora", INGOT_E_UNSUPPORTED,
                           "fan_in_fan_out");
    /* Llama's on GPT-2: no q_proj there */
    expect_foreign_adapter(GDIR "gpt2_hf", GDIR "llama_lora", INGOT_E_UNSUPPORTED,
                           "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight");
}

static char lora_dir[256];

/* An adapter folder: the golden adapter's tensors with adapter_config.json = golden with `from`
 * replaced by `to`. */
static void lora_with_config(const char *from, const char *to)
{
    snprintf(lora_dir, sizeof lora_dir, INGOT_BINARY_DIR "/lm_lora_test");
    mkdir(lora_dir, 0755);
    char p[600], cfg[4096] = {0}, out[4096];
    FILE *f = fopen(GDIR "llama_lora/adapter_config.json", "rb");
    size_t n = f ? fread(cfg, 1, sizeof cfg - 1, f) : 0;
    if (f) fclose(f);
    char *at = strstr(cfg, from);
    if (at) {
        *at = 0;
        snprintf(out, sizeof out, "%s%s%s", cfg, to, at + strlen(from));
    } else {
        snprintf(out, sizeof out, "%.*s", (int)n, cfg);
    }
    snprintf(p, sizeof p, "%s/adapter_config.json", lora_dir);
    f = fopen(p, "wb");
    fputs(out, f);
    fclose(f);
    snprintf(p, sizeof p, "%s/adapter_model.safetensors", lora_dir);
    unlink(p);
    if (symlink(GDIR "llama_lora/adapter_model.safetensors", p) != 0) perror("symlink");
}

static void expect_lora_error(const char *from, const char *to, ingot_status code,
                              const char *where)
{
    lora_with_config(from, to);
    ingot_backend *be = NULL;
    ASSERT_OK(ingot_backend_new("cpu", NULL, &be, NULL));
    ingot_lm_opts o = {0};
    o.lora_path = lora_dir;
    ingot_lm *m = NULL;
    ingot_error e;
    memset(&e, 0, sizeof e);
    ASSERT_ST(ingot_lm_open_path(be, GDIR "llama_hf", &o, &m, &e), code);
    CHECK(!strcmp(e.where, where), "'%s' -> '%s': where '%s', want '%s' (%s)", from, to, e.where,
          where, e.msg);
    ingot_backend_free(be);
}

TEST(lora_errors_name_the_key_or_tensor)
{
    expect_lora_error("\"use_dora\": false", "\"use_dora\": true", INGOT_E_UNSUPPORTED,
                      "use_dora");
    expect_lora_error("\"fan_in_fan_out\": false", "\"fan_in_fan_out\": true",
                      INGOT_E_UNSUPPORTED, "fan_in_fan_out");
    expect_lora_error("\"bias\": \"none\"", "\"bias\": \"all\"", INGOT_E_UNSUPPORTED, "bias");
    expect_lora_error("\"rank_pattern\": {}", "\"rank_pattern\": {\"q_proj\": 2}",
                      INGOT_E_UNSUPPORTED, "rank_pattern");
    expect_lora_error("\"r\": 4", "\"r\": 0", INGOT_E_BAD_METADATA, "r");
    /* a target without tensors in the file */
    expect_lora_error("\"down_proj\"", "\"down_proj\", \"o_proj\"", INGOT_E_NOT_FOUND,
                      "base_model.model.model.layers.0.self_attn.o_proj.lora_A.weight");
    /* tensors for a module not targeted: refused, not silently dropped */
    expect_lora_error("\"down_proj\"", "\"gate_proj\"", INGOT_E_NOT_FOUND,
                      "base_model.model.model.layers.0.mlp.gate_proj.lora_A.weight");
    expect_lora_error(",\n    \"down_proj\"", "", INGOT_E_UNSUPPORTED,
                      "base_model.model.model.layers.0.mlp.down_proj.lora_A.weight");
}

/* ---- config.json errors ---- */

static char tmpdir[256];

/* A folder with the llama weights and config.json = the golden one with `from` replaced by
 * `to` (or `to` as the whole file when from is NULL). */
static void folder_with_config(const char *from, const char *to)
{
    snprintf(tmpdir, sizeof tmpdir, INGOT_BINARY_DIR "/lm_cfg_test");
    char p[600], cfg[4096] = {0};
    mkdir(tmpdir, 0755);
    FILE *f = fopen(GDIR "llama_pt/config.json", "rb");
    size_t n = f ? fread(cfg, 1, sizeof cfg - 1, f) : 0;
    if (f) fclose(f);
    cfg[n] = 0;
    char out[4096];
    if (!from) {
        snprintf(out, sizeof out, "%s", to);
    } else {
        char *at = strstr(cfg, from);
        if (!at) {
            out[0] = 0;
        } else {
            *at = 0;
            snprintf(out, sizeof out, "%s%s%s", cfg, to, at + strlen(from));
        }
    }
    snprintf(p, sizeof p, "%s/config.json", tmpdir);
    f = fopen(p, "wb");
    fputs(out, f);
    fclose(f);
    snprintf(p, sizeof p, "%s/pytorch_model.bin", tmpdir);
    unlink(p);
    if (symlink(GDIR "llama_pt/pytorch_model.bin", p) != 0) perror("symlink");
}

static void expect_error(const char *from, const char *to, ingot_status code, const char *where)
{
    folder_with_config(from, to);
    ingot_backend *be = NULL;
    ingot_error e;
    memset(&e, 0, sizeof e);
    ingot_lm *m = open_model("cpu", tmpdir, &be, &e);
    ingot_backend_free(be);
    ASSERT_TRUE(m == NULL);
    CHECK(e.code == code, "'%s' -> '%s': %s, want %s (%s)", from ? from : "", to,
          ingot_status_name(e.code), ingot_status_name(code), e.msg);
    CHECK(!strcmp(e.where, where), "'%s' -> '%s': where '%s', want '%s'", from ? from : "", to,
          e.where, where);
}

TEST(config_json_errors_name_the_key_or_tensor)
{
    expect_error("\"hidden_size\": 32", "\"hidden_size\": 48", INGOT_E_BAD_SHAPE,
                 "model.embed_tokens.weight");
    expect_error("\"num_hidden_layers\": 2", "\"num_hidden_layers\": 3", INGOT_E_NOT_FOUND,
                 "model.layers.2.input_layernorm.weight");
    expect_error("\"num_key_value_heads\": 2", "\"num_key_value_heads\": 4", INGOT_E_BAD_SHAPE,
                 "model.layers.0.self_attn.k_proj.weight");
    expect_error("\"model_type\": \"llama\"", "\"model_type\": \"bert\"", INGOT_E_UNSUPPORTED,
                 "model_type");
    expect_error("\"rope_scaling\": null", "\"rope_scaling\": {\"type\": \"linear\"}",
                 INGOT_E_BAD_METADATA, "factor");
    expect_error("\"rope_scaling\": null",
                 "\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4.0}",
                 INGOT_E_UNSUPPORTED, "rope_scaling.rope_type");
    expect_error("\"rope_scaling\": null",
                 "\"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8.0, "
                 "\"low_freq_factor\": 1.0, \"original_max_position_embeddings\": 64}",
                 INGOT_E_BAD_METADATA, "high_freq_factor");
    expect_error("\"rope_scaling\": null", "\"rope_scaling\": {\"factor\": 2.0}",
                 INGOT_E_BAD_METADATA, "rope_scaling.rope_type");
    expect_error("\"rope_scaling\": null",
                 "\"rope_scaling\": {\"type\": \"linear\", \"factor\": -1}",
                 INGOT_E_BAD_METADATA, "factor");
    expect_error("\"rope_scaling\": null", "\"rope_scaling\": 3", INGOT_E_BAD_METADATA,
                 "rope_scaling");
    expect_error("\"hidden_act\": \"silu\"", "\"hidden_act\": \"gelu\"", INGOT_E_UNSUPPORTED,
                 "hidden_act");
    expect_error("\"intermediate_size\": 64,", "", INGOT_E_BAD_METADATA, "intermediate_size");
    expect_error("\"num_attention_heads\": 4", "\"num_attention_heads\": 3", INGOT_E_BAD_METADATA,
                 "config.json");
    expect_error("\"vocab_size\": 64", "\"vocab_size\": -1", INGOT_E_BAD_METADATA, "vocab_size");
    expect_error("\"vocab_size\": 64", "\"vocab_size\": 64, \"vocab_size\": 64",
                 INGOT_E_DUPLICATE, "vocab_size");
    expect_error(NULL, "[1, 2]", INGOT_E_BAD_METADATA, "config.json");
    expect_error(NULL, "{\"model_type\": \"llama\",", INGOT_E_BAD_METADATA, "config.json");
    expect_error("\"rope_scaling\": null", "\"rope_scaling\": null, \"sliding_window\": -5",
                 INGOT_E_BAD_METADATA, "sliding_window");
    expect_error("\"tie_word_embeddings\": false", "\"tie_word_embeddings\": 0",
                 INGOT_E_BAD_METADATA, "tie_word_embeddings");
    /* partial rotary of head size 8: 0.1 gives 0 dims, 0.375 an odd 3, 1.5 more than the head */
    expect_error("\"rope_scaling\": null", "\"rope_scaling\": null, \"partial_rotary_factor\": 0.1",
                 INGOT_E_BAD_METADATA, "partial_rotary_factor");
    expect_error("\"rope_scaling\": null",
                 "\"rope_scaling\": null, \"partial_rotary_factor\": 0.375", INGOT_E_BAD_METADATA,
                 "partial_rotary_factor");
    expect_error("\"rope_scaling\": null", "\"rope_scaling\": null, \"partial_rotary_factor\": 1.5",
                 INGOT_E_BAD_METADATA, "partial_rotary_factor");
}

/* Mistral's sliding window: a session longer than it would attend differently: refused */
TEST(sliding_window_bounds_the_session)
{
    folder_with_config("\"rope_scaling\": null", "\"rope_scaling\": null, \"sliding_window\": 16");
    ingot_backend *be = NULL;
    ingot_error e;
    ingot_lm *m = open_model("cpu", tmpdir, &be, &e);
    ASSERT_TRUE(m);
    ASSERT_EQ(ingot_lm_get_config(m)->sliding_window, 16);
    ingot_lm_session *s = NULL;
    ASSERT_OK(ingot_lm_session_new(m, NULL, &s, &e)); /* the default: the window */
    ASSERT_EQ(ingot_lm_session_ctx(s), 16);
    ingot_lm_session_free(s);
    ingot_lm_session_opts so = {0};
    so.n_ctx = 17;
    ASSERT_ST(ingot_lm_session_new(m, &so, &s, &e), INGOT_E_UNSUPPORTED);
    ASSERT_STR(e.where, "sliding_window");
    ingot_lm_free(m);
    ingot_backend_free(be);
}

TEST(weights_without_config_are_refused)
{
    ingot_backend *be = NULL;
    ASSERT_OK(ingot_backend_new("cpu", NULL, &be, NULL));
    ingot_file *f = NULL;
    ASSERT_OK(ingot_file_open(GDIR "llama_pt/pytorch_model.bin", NULL, &f, NULL));
    ingot_lm *m = NULL;
    ingot_error e;
    ASSERT_ST(ingot_lm_open(be, f, NULL, &m, &e), INGOT_E_BAD_METADATA);
    ASSERT_STR(e.where, "config.json");
    ingot_lm_opts o = {0};
    o.config_path = GDIR "llama_pt/config.json";
    ASSERT_OK(ingot_lm_open(be, f, &o, &m, &e));
    ASSERT_EQ(ingot_lm_get_config(m)->n_head_kv, 2);
    ingot_lm_free(m);
    o.config_path = GDIR "no_such_config.json";
    ASSERT_ST(ingot_lm_open(be, f, &o, &m, &e), INGOT_E_NOT_FOUND);
    ingot_file_close(f);
    ingot_backend_free(be);
}

RUN_TESTS(T(llama_hf_sharded_safetensors), T(llama_hf_torch_state_dict),
          T(llama_gguf_permuted_qk), T(llama_gguf_ref_backend), T(qwen2_qkv_bias_tied_hf),
          T(qwen2_qkv_bias_tied_gguf), T(moe_hf_experts), T(moe_gguf_merged_experts),
          T(moe_ref_backend), T(gpt2_hub_safetensors), T(gpt2_lmhead_state_dict), T(gpt2_gguf),
          T(gpt2_ref_backend), T(rope_linear_hf), T(rope_linear_gguf), T(rope_llama3_hf),
          T(rope_llama3_gguf_rope_freqs), T(rope_partial_hf), T(rope_partial_gguf),
          T(rope_partial_ref_backend), T(rope_partial_f16_kv), T(rope_llama3_ref_backend),
          T(quantized_mixed_types),
          T(quantized_mixed_types_f32_activations),
          T(quantized_stories_q8_0), T(quantized_stories_q8_0_f32_activations),
          T(lora_merged_hf), T(lora_runtime_hf), T(lora_merged_gguf), T(lora_runtime_gguf),
          T(lora_gpt2_merged_hf), T(lora_gpt2_runtime_hf), T(lora_gpt2_merged_pt),
          T(lora_gpt2_merged_gguf), T(lora_gpt2_runtime_gguf), T(lora_moe_merged_hf),
          T(lora_moe_runtime_hf), T(lora_moe_merged_gguf), T(lora_moe_runtime_gguf),
          T(lora_foreign_adapters_refused),
          T(lora_errors_name_the_key_or_tensor), T(config_json_errors_name_the_key_or_tensor),
          T(sliding_window_bounds_the_session), T(weights_without_config_are_refused))
