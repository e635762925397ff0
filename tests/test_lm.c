/*
 * test_lm.c - the language-model runtime (include/ingot/lm.h) on the real pretrained stories260K
 * (../shared/fixtures/models/stories260K: GGUF, F32): logits at 32 positions against the torch
 * float32 reference, 200 greedy tokens exactly, token-by-token decode against one full forward,
 * chunked prefill, F16 KV cache, thread-count determinism, no allocation in the decode loop, the
 * vector registers' upper halves clean after a GEMM-path linear, and the errors (a missing tensor
 * or key named, bad tokens, a full cache).
 */
#include <math.h>

#include "harness.h"
#include "npy_load.h"
#include "ingot/lm.h"
#include "lm_internal.h"

#define MDIR INGOT_FIXTURES "/models/stories260K/"

/* ---- helpers ---- */


static double max_rel(const float *a, const float *b, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]) / fmax(1.0, fabs((double)b[i]));
        if (!(d <= m)) m = d; /* NaN wins */
    }
    return m;
}

static int argmax(const float *x, size_t n)
{
    size_t b = 0;
    for (size_t i = 1; i < n; i++)
        if (x[i] > x[b]) b = i;
    return (int)b;
}

typedef struct counting {
    size_t allocs;
} counting;

static void *c_alloc(void *ctx, size_t n, size_t align)
{
    ((counting *)ctx)->allocs++;
    void *p = NULL;
    if (posix_memalign(&p, align < sizeof(void *) ? sizeof(void *) : align, n ? n : 1)) return NULL;
    return p;
}
static void c_free(void *ctx, void *p, size_t n)
{
    (void)ctx;
    (void)n;
    free(p);
}

static ingot_lm *open_stories(const char *backend, unsigned threads, ingot_backend **be,
                              const ingot_allocator *al)
{
    ingot_backend_opts bo = {0};
    bo.threads = threads;
    bo.allocator = al;
    ingot_error e;
    if (ingot_backend_new(backend, &bo, be, &e) != INGOT_OK) return NULL;
    ingot_lm *m = NULL;
    if (ingot_lm_open_path(*be, MDIR "stories260K.gguf", NULL, &m, &e) != INGOT_OK) {
        char buf[300];
        fprintf(stderr, "  open: %s\n", ingot_error_format(&e, buf, sizeof buf));
        ingot_backend_free(*be);
        *be = NULL;
    }
    return m;
}

/* ---- the real model ---- */

TEST(stories_config_from_gguf_keys)
{
    ingot_backend *be;
    ingot_lm *m = open_stories("cpu", 1, &be, NULL);
    ASSERT_TRUE(m);
    const ingot_lm_config *c = ingot_lm_get_config(m);
    ASSERT_EQ(c->arch, INGOT_LM_ARCH_LLAMA);
    ASSERT_EQ(c->n_layer, 5);
    ASSERT_EQ(c->dim, 64);
    ASSERT_EQ(c->n_head, 8);
    ASSERT_EQ(c->n_head_kv, 4);
    ASSERT_EQ(c->head_dim, 8);
    ASSERT_EQ(c->ffn_dim, 172);
    ASSERT_EQ(c->vocab, 512);
    ASSERT_EQ(c->ctx_train, 2048);
    ASSERT_EQ(c->rope_mode, INGOT_ROPE_INTERLEAVED);
    ASSERT_TRUE(c->rope_theta == 10000.0); /* the file has no freq_base: the default */
    ASSERT_TRUE(fabs(c->norm_eps - 1e-5) < 1e-9);
    ASSERT_EQ(c->bos, 1);
    ASSERT_EQ(c->eos, 2);
    ASSERT_STR(c->naming, "gguf");
    ingot_lm_estimate est;
    ingot_lm_estimate_plan(m, 512, INGOT_DTYPE_F32, 0, &est);
    /* 5 layers x (q 64x64 + k,v 32x64 + o 64x64 + 3 x 172x64) + head 512x64 + norms, F32 */
    uint64_t lin = 5 * (64 * 64 + 2 * 32 * 64 + 64 * 64 + 3 * 172 * 64) + 512 * 64;
    ASSERT_U64(est.flops_per_token, 2 * lin);
    ASSERT_U64(est.weight_bytes, 4 * (lin + 5 * 2 * 64 + 64));
    ASSERT_U64(est.kv_bytes, 2ull * 5 * 4 * 512 * 8 * 4);
    ASSERT_U64(est.owned_bytes, 0);
    ingot_lm_free(m);
    ingot_backend_free(be);
}

static void check_logits(const char *backend, unsigned threads, ingot_dtype kv, double tol)
{
    uint64_t nt = 0, nl = 0;
    int32_t *tok = load_npy(MDIR "golden/tokens_greedy_bos_plus_200.npy", INGOT_DTYPE_I32, &nt);
    float *ref = load_npy(MDIR "golden/logits_first32.npy", INGOT_DTYPE_F32, &nl);
    ingot_backend *be = NULL;
    ingot_lm *m = open_stories(backend, threads, &be, NULL);
    ingot_lm_session *s = NULL;
    float *got = malloc(32 * 512 * sizeof *got);
    ingot_lm_session_opts so = {0};
    so.kv_dtype = kv;
    CHECK(tok && ref && nt == 201 && nl == 32 * 512 && m, "fixtures");
    if (tok && ref && m && ingot_lm_session_new(m, &so, &s, NULL) == INGOT_OK) {
        ingot_status st = ingot_lm_eval(s, tok, 32, INGOT_LM_LOGITS_ALL, got, 32 * 512, NULL);
        CHECK(st == INGOT_OK, "eval: %s", ingot_status_name(st));
        /* F32 cache: per element against max(1, |ref|); F16: against the row's largest logit
         * (the half-precision keys and values perturb every logit by a similar amount) */
        double d = 0;
        for (int r = 0; r < 32; r++) {
            double big = 0, dr;
            for (int i = 0; i < 512; i++) big = fmax(big, fabs(ref[r * 512 + i]));
            dr = kv == INGOT_DTYPE_F32 ? max_rel(got + r * 512, ref + r * 512, 512) : 0;
            for (int i = 0; kv != INGOT_DTYPE_F32 && i < 512; i++)
                dr = fmax(dr, fabs(got[r * 512 + i] - ref[r * 512 + i]) / big);
            d = fmax(d, dr);
        }
        CHECK(d <= tol, "%s/%u threads: max relative delta %.3g > %.3g", backend, threads, d,
              tol);
        for (int r = 0; r < 32 && kv == INGOT_DTYPE_F32; r++)
            CHECK(argmax(got + r * 512, 512) == argmax(ref + r * 512, 512), "argmax row %d", r);
        CHECK(ingot_lm_session_pos(s) == 32, "pos");
    }
    ingot_lm_session_free(s);
    ingot_lm_free(m);
    ingot_backend_free(be);
    free(got);
    free(tok);
    free(ref);
}

TEST(stories_logits_match_torch_cpu) { check_logits("cpu", 2, INGOT_DTYPE_F32, 1e-4); }
TEST(stories_logits_match_torch_ref) { check_logits("ref", 1, INGOT_DTYPE_F32, 1e-4); }
/* llama.cpp's F16 cache moves logits by about 1e-3 relative (fixtures README); here at most
 * 7e-4 of the row's largest logit. */
TEST(stories_logits_f16_kv_close) { check_logits("cpu", 1, INGOT_DTYPE_F16, 2e-3); }

static void check_greedy(const char *backend, unsigned threads)
{
    uint64_t nt = 0;
    int32_t *ref = load_npy(MDIR "golden/tokens_greedy_bos_plus_200.npy", INGOT_DTYPE_I32, &nt);
    ingot_backend *be = NULL;
    ingot_lm *m = open_stories(backend, threads, &be, NULL);
    ingot_lm_session *s = NULL;
    ingot_sampler *sp = NULL;
    ingot_sampler_params p = {0}; /* temperature 0: greedy */
    int32_t out[200];
    size_t n = 0;
    ingot_lm_stats st;
    ASSERT_TRUE(ref && nt == 201 && m);
    ASSERT_OK(ingot_lm_session_new(m, NULL, &s, NULL));
    ASSERT_OK(ingot_sampler_new(&p, 512, NULL, &sp, NULL));
    ingot_lm_generate_opts go = {0};
    go.max_tokens = 200;
    ASSERT_OK(ingot_lm_generate(s, sp, NULL, 0, &go, out, 200, &n, &st, NULL)); /* from BOS */
    ASSERT_EQ(n, 200);
    ASSERT_EQ(st.prompt_tokens, 1);
    ASSERT_EQ(st.stop, INGOT_LM_STOP_LENGTH);
    for (size_t i = 0; i < 200; i++)
        if (out[i] != ref[i + 1]) FAIL_AT("token %zu: %d, torch %d", i, out[i], ref[i + 1]);
    /* the session holds BOS and the first 199 generated tokens (the last is not evaluated) */
    ASSERT_EQ(ingot_lm_session_pos(s), 200);
    ASSERT_MEM(ingot_lm_session_tokens(s), ref, 200 * 4);
    ingot_sampler_free(sp);
    ingot_lm_session_free(s);
    ingot_lm_free(m);
    ingot_backend_free(be);
    free(ref);
}

TEST(stories_greedy_200_tokens_cpu) { check_greedy("cpu", 2); }
TEST(stories_greedy_200_tokens_ref) { check_greedy("ref", 1); }

/* Decoding token by token, and prefilling in chunks of 5, against one forward of 48 tokens. */
static void kv_decode(const char *backend, double tol)
{
    uint64_t nt = 0;
    int32_t *tok = load_npy(MDIR "golden/tokens_greedy_bos_plus_200.npy", INGOT_DTYPE_I32, &nt);
    ingot_backend *be = NULL;
    ingot_lm *m = open_stories(backend, 1, &be, NULL);
    ASSERT_TRUE(tok && m);
    enum { T = 48, V = 512 };
    static float full[T * V], step[T * V], chunk[T * V];
    ingot_lm_session *s = NULL, *c = NULL;
    ingot_lm_session_opts co = {0};
    co.n_batch = 5;
    ASSERT_OK(ingot_lm_session_new(m, NULL, &s, NULL));
    ASSERT_OK(ingot_lm_session_new(m, &co, &c, NULL));
    ASSERT_OK(ingot_lm_eval(s, tok, T, INGOT_LM_LOGITS_ALL, full, T * V, NULL));
    ASSERT_OK(ingot_lm_eval(c, tok, T, INGOT_LM_LOGITS_ALL, chunk, T * V, NULL));
    ASSERT_OK(ingot_lm_session_rewind(s, 0, NULL));
    for (int i = 0; i < T; i++) {
        ASSERT_OK(ingot_lm_eval(s, tok + i, 1, INGOT_LM_LOGITS_LAST, step + i * V, V, NULL));
        ASSERT_MEM(ingot_lm_session_logits(s), step + i * V, V * 4);
    }
    double d1 = max_rel(step, full, T * V), d2 = max_rel(chunk, full, T * V);
    CHECK(d1 <= tol, "%s: token by token vs full: %.3g", backend, d1);
    CHECK(d2 <= tol, "%s: chunks of 5 vs full: %.3g", backend, d2);
    for (int i = 0; i < T; i++) CHECK(argmax(step + i * V, V) == argmax(full + i * V, V), "%d", i);
    /* rewinding to the middle and re-running the rest gives the same bits */
    ASSERT_OK(ingot_lm_session_rewind(s, 20, NULL));
    ASSERT_OK(ingot_lm_eval(s, tok + 20, 1, INGOT_LM_LOGITS_LAST, full, V, NULL));
    ASSERT_MEM(full, step + 20 * V, V * 4);
    ingot_lm_session_free(s);
    ingot_lm_session_free(c);
    ingot_lm_free(m);
    ingot_backend_free(be);
    free(tok);
}

/* ref accumulates in double: the cache path agrees to 1e-7. cpu runs one row through the GEMV and
 * many through the GEMM, which sum in different orders; this small model amplifies that f32
 * rounding to about 1.5e-5 of the logits (the same size as its distance to torch). */
TEST(stories_kv_decode_equals_full_forward_cpu) { kv_decode("cpu", 3e-5); }
TEST(stories_kv_decode_equals_full_forward_ref) { kv_decode("ref", 1e-7); }

TEST(stories_threads_bit_identical)
{
    uint64_t nt = 0;
    int32_t *tok = load_npy(MDIR "golden/tokens_greedy_bos_plus_200.npy", INGOT_DTYPE_I32, &nt);
    ASSERT_TRUE(tok);
    static float a[3][40 * 512];
    for (unsigned th = 1; th <= 3; th++) {
        ingot_backend *be = NULL;
        ingot_lm *m = open_stories("cpu", th, &be, NULL);
        ingot_lm_session *s = NULL;
        ASSERT_TRUE(m);
        ASSERT_OK(ingot_lm_session_new(m, NULL, &s, NULL));
        ASSERT_OK(ingot_lm_eval(s, tok, 30, INGOT_LM_LOGITS_ALL, a[th - 1], 30 * 512, NULL));
        for (int i = 30; i < 40; i++)
            ASSERT_OK(ingot_lm_eval(s, tok + i, 1, INGOT_LM_LOGITS_LAST, a[th - 1] + i * 512, 512,
                                    NULL));
        ingot_lm_session_free(s);
        ingot_lm_free(m);
        ingot_backend_free(be);
    }
    ASSERT_MEM(a[0], a[1], sizeof a[0]);
    ASSERT_MEM(a[0], a[2], sizeof a[0]);
    free(tok);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
/* The upper halves of ymm0-15 / zmm0-15 in use (XINUSE bits 2 and 6, xgetbv with ecx = 1);
 * -1 where the CPU cannot say. */
static int upper_in_use(void)
{
    unsigned a, b, c, d, lo, hi;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c >> 27 & 1)) return -1; /* OSXSAVE */
    if (!__get_cpuid_count(0xd, 1, &a, &b, &c, &d) || !(a >> 2 & 1)) return -1;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(1));
    (void)hi;
    return (lo & 0x44u) != 0;
}
#else
static int upper_in_use(void) { return -1; }
#endif

/* Several rows through the GEMM kernels, some of which return with the upper register halves
 * dirty (sgemm's edge tiles call plain SSE code first): the kernel pool clears them after every
 * job (vzeroupper), else the SSE code after it (ref ops, libm, the caller's) runs many times
 * slower (SiLU: 7 -> 300 ns per element on this Xeon; a 128-token prefill 3.5x). */
TEST(linear_leaves_vector_state_clean)
{
    if (upper_in_use() < 0) {
        fprintf(stderr, "  (XINUSE not readable on this CPU)\n");
        return;
    }
    enum { M = 64, K = 256, N = 256 };
    ingot_backend_opts bo = {0};
    bo.threads = 1;
    ingot_backend *be = NULL;
    ASSERT_OK(ingot_backend_new("cpu", &bo, &be, NULL));
    struct ingot_lm m;
    struct ingot_lm_session s;
    memset(&m, 0, sizeof m);
    memset(&s, 0, sizeof s);
    m.be = be;
    s.m = &m;
    ingot_buffer *xb, *wb, *yb;
    ASSERT_OK(ingot_buffer_alloc(be, M * K * 4, &xb, NULL));
    ASSERT_OK(ingot_buffer_alloc(be, N * K * 4, &wb, NULL));
    ASSERT_OK(ingot_buffer_alloc(be, M * N * 4, &yb, NULL));
    float *x = ingot_buffer_host(xb), *w = ingot_buffer_host(wb);
    for (int i = 0; i < M * K; i++) x[i] = (float)(i % 7) * 0.1f;
    for (int i = 0; i < N * K; i++) w[i] = (float)(i % 5) * 0.01f;
    int64_t xs[2] = {M, K}, ws[2] = {N, K}, ys[2] = {M, N};
    ingot_tensor X, Y;
    lm_w W;
    memset(&W, 0, sizeof W);
    W.present = true;
    ASSERT_OK(ingot_tensor_init(&X, xb, 0, INGOT_DTYPE_F32, 2, xs, NULL));
    ASSERT_OK(ingot_tensor_init(&W.t, wb, 0, INGOT_DTYPE_F32, 2, ws, NULL));
    ASSERT_OK(ingot_tensor_init(&Y, yb, 0, INGOT_DTYPE_F32, 2, ys, NULL));
    ASSERT_OK(ingot__lm_linear(&s, &Y, &X, &W, NULL, NULL));
    int dirty = upper_in_use();
    const float *y = ingot_buffer_host(yb);
    double want = 0; /* y[3][5], independently */
    for (int k = 0; k < K; k++) want += (double)x[3 * K + k] * w[5 * K + k];
    ASSERT_EQ(dirty, 0);
    CHECK(fabs(y[3 * N + 5] - want) <= 1e-4 * fabs(want), "y[3][5] %g, want %g", y[3 * N + 5],
          want);
    ingot_buffer_free(xb);
    ingot_buffer_free(wb);
    ingot_buffer_free(yb);
    ingot_backend_free(be);
}

TEST(stories_decode_loop_allocates_nothing)
{
    counting cnt = {0};
    ingot_allocator al = {c_alloc, c_free, &cnt};
    ingot_backend *be = NULL;
    ingot_lm *m = open_stories("cpu", 2, &be, &al);
    ASSERT_TRUE(m);
    ingot_lm_session *s = NULL;
    ingot_sampler *sp = NULL;
    ingot_sampler_params p = {0};
    p.temperature = 0.9;
    p.top_k = 40;
    p.top_p = 0.9;
    p.min_p = 0.02;
    p.repeat_penalty = 1.1;
    p.seed = 7;
    ASSERT_OK(ingot_lm_session_new(m, NULL, &s, NULL));
    ASSERT_OK(ingot_sampler_new(&p, 512, &al, &sp, NULL));
    int32_t bos = 1, out[64];
    size_t n = 0;
    /* warm-up: the first prefill and decode size the backend's scratch */
    static float lg[512];
    ASSERT_OK(ingot_lm_eval(s, &bos, 1, INGOT_LM_LOGITS_LAST, lg, 512, NULL));
    ingot_lm_generate_opts go = {0};
    go.max_tokens = 4;
    go.ignore_eos = true;
    ASSERT_OK(ingot_lm_generate(s, sp, NULL, 0, &go, out, 64, &n, NULL, NULL));
    size_t before = cnt.allocs;
    go.max_tokens = 60;
    int32_t next = out[n - 1];
    ASSERT_OK(ingot_lm_generate(s, sp, &next, 1, &go, out, 64, &n, NULL, NULL));
    ASSERT_EQ(n, 60);
    ASSERT_EQ(cnt.allocs, before);
    ingot_sampler_free(sp);
    ingot_lm_session_free(s);
    ingot_lm_free(m);
    ingot_backend_free(be);
}

static bool stop_after_five(void *ctx, int32_t t)
{
    (void)t;
    return ++*(int *)ctx < 5;
}

TEST(generate_stops)
{
    ingot_backend *be = NULL;
    ingot_lm *m = open_stories("cpu", 1, &be, NULL);
    ASSERT_TRUE(m);
    ingot_lm_session *s = NULL;
    ingot_lm_session_opts so = {0};
    so.n_ctx = 10;
    ASSERT_OK(ingot_lm_session_new(m, &so, &s, NULL));
    ingot_sampler *sp = NULL;
    ingot_sampler_params p = {0};
    ASSERT_OK(ingot_sampler_new(&p, 512, NULL, &sp, NULL));
    int32_t out[16];
    size_t n = 0;
    ingot_lm_stats st;
    /* greedy from BOS is 403 407 261 378 ...: a stop token ends it and is reported */
    int32_t stop = 261;
    ingot_lm_generate_opts go = {0};
    go.stop_tokens = &stop;
    go.n_stop_tokens = 1;
    ASSERT_OK(ingot_lm_generate(s, sp, NULL, 0, &go, out, 16, &n, &st, NULL));
    ASSERT_EQ(n, 3);
    ASSERT_EQ(out[2], 261);
    ASSERT_EQ(st.stop, INGOT_LM_STOP_EOS);
    /* the callback */
    int calls = 0;
    ASSERT_OK(ingot_lm_session_rewind(s, 0, NULL));
    memset(&go, 0, sizeof go);
    go.on_token = stop_after_five;
    go.ctx = &calls;
    ASSERT_OK(ingot_lm_generate(s, sp, NULL, 0, &go, out, 16, &n, &st, NULL));
    ASSERT_EQ(n, 5);
    ASSERT_EQ(st.stop, INGOT_LM_STOP_CALLBACK);
    /* a full cache: BOS + 9 evaluated, the 10th token sampled but not evaluated */
    ASSERT_OK(ingot_lm_session_rewind(s, 0, NULL));
    memset(&go, 0, sizeof go);
    ASSERT_OK(ingot_lm_generate(s, sp, NULL, 0, &go, out, 16, &n, &st, NULL));
    ASSERT_EQ(st.stop, INGOT_LM_STOP_CONTEXT);
    ASSERT_EQ(n, 10);
    ASSERT_EQ(ingot_lm_session_pos(s), 10);
    /* max_tokens, and out_cap as a limit */
    ASSERT_OK(ingot_lm_session_rewind(s, 0, NULL));
    go.max_tokens = 4;
    ASSERT_OK(ingot_lm_generate(s, sp, NULL, 0, &go, out, 16, &n, &st, NULL));
    ASSERT_EQ(n, 4);
    ASSERT_EQ(st.stop, INGOT_LM_STOP_LENGTH);
    ASSERT_OK(ingot_lm_session_rewind(s, 0, NULL));
    ASSERT_OK(ingot_lm_generate(s, sp, NULL, 0, NULL, out, 2, &n, &st, NULL));
    ASSERT_EQ(n, 2);
    /* continuing with an empty prompt uses the session's last logits */
    ASSERT_OK(ingot_lm_session_rewind(s, 0, NULL));
    int32_t bos = 1;
    static float lg[512];
    ASSERT_OK(ingot_lm_eval(s, &bos, 1, INGOT_LM_LOGITS_LAST, lg, 512, NULL));
    ASSERT_OK(ingot_lm_generate(s, sp, NULL, 0, NULL, out, 2, &n, &st, NULL));
    ASSERT_EQ(out[0], 403);
    ASSERT_EQ(out[1], 407);
    ingot_sampler_free(sp);
    ingot_lm_session_free(s);
    ingot_lm_free(m);
    ingot_backend_free(be);
}

TEST(eval_rejects_bad_calls)
{
    ingot_backend *be = NULL;
    ingot_lm *m = open_stories("cpu", 1, &be, NULL);
    ASSERT_TRUE(m);
    ingot_lm_session *s = NULL;
    ingot_lm_session_opts so = {0};
    so.n_ctx = 8;
    ASSERT_OK(ingot_lm_session_new(m, &so, &s, NULL));
    static float lg[16 * 512];
    int32_t toks[10] = {1, 2, 3, 512, 5, 6, 7, 8, 9, 10};
    ingot_error e;
    ASSERT_ST(ingot_lm_eval(s, toks, 5, INGOT_LM_LOGITS_LAST, lg, 512, &e), INGOT_E_RANGE);
    ASSERT_TRUE(strstr(e.msg, "index 3") != NULL);
    ASSERT_EQ(ingot_lm_session_pos(s), 0); /* nothing was evaluated */
    toks[3] = 4;
    ASSERT_ST(ingot_lm_eval(s, toks, 9, INGOT_LM_LOGITS_LAST, lg, 512, &e), INGOT_E_RANGE);
    ASSERT_STR(e.where, "n_ctx");
    ASSERT_ST(ingot_lm_eval(s, toks, 2, INGOT_LM_LOGITS_ALL, lg, 512, &e), INGOT_E_RANGE);
    ASSERT_STR(e.where, "logits");
    ASSERT_OK(ingot_lm_eval(s, toks, 8, INGOT_LM_LOGITS_LAST, lg, 512, &e));
    ASSERT_ST(ingot_lm_eval(s, toks, 1, INGOT_LM_LOGITS_LAST, lg, 512, &e), INGOT_E_RANGE);
    ASSERT_ST(ingot_lm_session_rewind(s, 9, &e), INGOT_E_RANGE);
    ingot_lm_session_opts bad = {0};
    bad.kv_dtype = INGOT_DTYPE_BF16;
    ingot_lm_session *s2 = NULL;
    ASSERT_ST(ingot_lm_session_new(m, &bad, &s2, &e), INGOT_E_BAD_TYPE);
    ASSERT_TRUE(s2 == NULL);
    ingot_lm_session_free(s);
    ingot_lm_free(m);
    ingot_backend_free(be);
}

/* ---- damaged copies of the model: what is missing is named ---- */

/* Copies every metadata entry and tensor of src into an in-memory GGUF, leaving out the key or
 * tensor named `drop`, and opens it. */
/* The copy's u32 key set_key = set_val (replacing the source's), when set_key is not NULL. */
static const char *set_key;
static uint32_t set_val;

static ingot_file *copy_without(const ingot_file *src, const char *drop, void **mem, size_t *size)
{
    ingot_writer_opts wo = {0};
    wo.format = "gguf";
    ingot_writer *w = NULL;
    ingot_error e;
    if (ingot_writer_new(&wo, &w, &e) != INGOT_OK) return NULL;
    for (uint64_t i = 0; i < ingot_file_meta_count(src); i++) {
        ingot_meta_info mi;
        ingot_file_meta_at(src, i, &mi);
        char key[128];
        snprintf(key, sizeof key, "%.*s", (int)mi.key_len, mi.key);
        if (!strcmp(key, drop) || (set_key && !strcmp(key, set_key))) continue;
        if (mi.is_array && (mi.type == INGOT_META_STRING || mi.type == INGOT_META_BYTES)) {
            const void **ptrs = malloc(mi.count * sizeof *ptrs);
            size_t *lens = malloc(mi.count * sizeof *lens);
            for (uint64_t k = 0; k < mi.count; k++)
                ingot_file_meta_array_string(src, mi.index, k, (const char **)&ptrs[k], &lens[k]);
            ingot_writer_set_string_array(w, key, mi.type, (const void *const *)ptrs, lens,
                                          mi.count);
            free(ptrs);
            free(lens);
        } else if (mi.is_array) {
            void *buf = malloc(mi.count * ingot_meta_type_size(mi.type) + 1);
            ingot_file_meta_array_read(src, mi.index, mi.type, 0, mi.count, buf);
            ingot_writer_set_array(w, key, mi.type, buf, mi.count);
            free(buf);
        } else if (mi.type == INGOT_META_STRING) {
            ingot_writer_set_stringn(w, key, mi.data, (size_t)mi.count);
        } else if (mi.type == INGOT_META_U32) {
            ingot_writer_set_u32(w, key, (uint32_t)mi.v.u);
        } else if (mi.type == INGOT_META_F32) {
            ingot_writer_set_f32(w, key, (float)mi.v.f);
        }
    }
    if (set_key) ingot_writer_set_u32(w, set_key, set_val);
    for (uint64_t i = 0; i < ingot_file_tensor_count(src); i++) {
        ingot_tensor_info ti;
        ingot_file_tensor_at(src, i, &ti);
        if (!strcmp(ti.name, drop)) continue;
        ingot_writer_add_tensor(w, ti.name, ti.dtype, ti.rank, ti.shape, NULL, ti.data, &e);
    }
    ingot_file *f = NULL;
    if (ingot_writer_begin_mem(w, &e) == INGOT_OK &&
        ingot_writer_commit_mem(w, mem, size, &e) == INGOT_OK)
        ingot_file_open_buffer(*mem, *size, NULL, &f, &e);
    ingot_writer_free(w);
    return f;
}

static void expect_open_error(const char *drop, ingot_status code, const char *where)
{
    ingot_file *src = NULL;
    ASSERT_OK(ingot_file_open(MDIR "stories260K.gguf", NULL, &src, NULL));
    void *mem = NULL;
    size_t size = 0;
    ingot_file *f = copy_without(src, drop, &mem, &size);
    ASSERT_TRUE(f);
    ingot_backend *be = NULL;
    ASSERT_OK(ingot_backend_new("cpu", NULL, &be, NULL));
    ingot_lm *m = NULL;
    ingot_error e;
    memset(&e, 0, sizeof e);
    ASSERT_ST(ingot_lm_open(be, f, NULL, &m, &e), code);
    ASSERT_TRUE(m == NULL);
    ASSERT_STR(e.where, where);
    ingot_backend_free(be);
    ingot_file_close(f);
    ingot_writer_free_mem(NULL, mem, size);
    ingot_file_close(src);
}

/* rope.dimension_count: partial rotary must be even and at most the head size (8 here) */
TEST(bad_rotary_dims_are_named)
{
    static const uint32_t bad[] = {0, 3, 10};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        set_key = "llama.rope.dimension_count";
        set_val = bad[i];
        expect_open_error("-", INGOT_E_BAD_METADATA, "llama.rope.dimension_count");
    }
    /* 4 of 8 is accepted: half of each head rotates */
    set_val = 4;
    ingot_file *src = NULL;
    ASSERT_OK(ingot_file_open(MDIR "stories260K.gguf", NULL, &src, NULL));
    void *mem = NULL;
    size_t size = 0;
    ingot_file *f = copy_without(src, "-", &mem, &size);
    set_key = NULL;
    ASSERT_TRUE(f);
    ingot_backend *be = NULL;
    ASSERT_OK(ingot_backend_new("cpu", NULL, &be, NULL));
    ingot_lm *m = NULL;
    ASSERT_OK(ingot_lm_open(be, f, NULL, &m, NULL));
    ASSERT_EQ(ingot_lm_get_config(m)->rope_dims, 4);
    ASSERT_EQ(ingot_lm_get_config(m)->head_dim, 8);
    ingot_lm_free(m);
    ingot_backend_free(be);
    ingot_file_close(f);
    ingot_writer_free_mem(NULL, mem, size);
    ingot_file_close(src);
}

TEST(missing_tensor_is_named)
{
    expect_open_error("blk.3.ffn_up.weight", INGOT_E_NOT_FOUND, "blk.3.ffn_up.weight");
    expect_open_error("output_norm.weight", INGOT_E_NOT_FOUND, "output_norm.weight");
    expect_open_error("token_embd.weight", INGOT_E_NOT_FOUND, "token_embd.weight");
}

TEST(missing_key_is_named)
{
    expect_open_error("llama.block_count", INGOT_E_BAD_METADATA, "llama.block_count");
    expect_open_error("llama.embedding_length", INGOT_E_BAD_METADATA, "llama.embedding_length");
    expect_open_error("general.architecture", INGOT_E_BAD_METADATA, "config.json");
}

TEST(copy_without_output_weight_ties_the_head)
{
    /* The fixture carries output.weight (a copy of the embedding); without it the head is the
     * embedding table and the logits are the same. */
    ingot_file *src = NULL;
    ASSERT_OK(ingot_file_open(MDIR "stories260K.gguf", NULL, &src, NULL));
    void *mem = NULL;
    size_t size = 0;
    ingot_file *f = copy_without(src, "output.weight", &mem, &size);
    ASSERT_TRUE(f);
    ingot_backend *be = NULL;
    ASSERT_OK(ingot_backend_new("cpu", NULL, &be, NULL));
    ingot_lm *m = NULL, *m2 = NULL;
    ASSERT_OK(ingot_lm_open(be, f, NULL, &m, NULL));
    ASSERT_OK(ingot_lm_open(be, src, NULL, &m2, NULL));
    ASSERT_TRUE(ingot_lm_get_config(m)->tied_head);
    ASSERT_TRUE(!ingot_lm_get_config(m2)->tied_head);
    ingot_lm_session *s = NULL, *s2 = NULL;
    ASSERT_OK(ingot_lm_session_new(m, NULL, &s, NULL));
    ASSERT_OK(ingot_lm_session_new(m2, NULL, &s2, NULL));
    int32_t t[4] = {1, 403, 407, 261};
    static float a[4 * 512], b[4 * 512];
    ASSERT_OK(ingot_lm_eval(s, t, 4, INGOT_LM_LOGITS_ALL, a, 4 * 512, NULL));
    ASSERT_OK(ingot_lm_eval(s2, t, 4, INGOT_LM_LOGITS_ALL, b, 4 * 512, NULL));
    ASSERT_MEM(a, b, sizeof a);
    ingot_lm_session_free(s);
    ingot_lm_session_free(s2);
    ingot_lm_free(m);
    ingot_lm_free(m2);
    ingot_backend_free(be);
    ingot_file_close(f);
    ingot_writer_free_mem(NULL, mem, size);
    ingot_file_close(src);
}

RUN_TESTS(T(stories_config_from_gguf_keys), T(bad_rotary_dims_are_named),
          T(stories_logits_match_torch_cpu),
          T(stories_logits_match_torch_ref), T(stories_logits_f16_kv_close),
          T(stories_greedy_200_tokens_cpu), T(stories_greedy_200_tokens_ref),
          T(stories_kv_decode_equals_full_forward_cpu),
          T(stories_kv_decode_equals_full_forward_ref), T(stories_threads_bit_identical),
          T(stories_decode_loop_allocates_nothing), T(linear_leaves_vector_state_clean),
          T(generate_stops), T(eval_rejects_bad_calls),
          T(missing_tensor_is_named), T(missing_key_is_named),
          T(copy_without_output_weight_ties_the_head))
