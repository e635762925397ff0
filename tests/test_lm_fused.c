/*
 * test_lm_fused.c - the decode path's fused linears (ingot__linear_multi, backend_export.h: the
 * q/k/v and gate/up GEMVs of one activation row as one pool job) against one ingot_op_linear
 * per weight: bit for bit, for every block dtype the quantized dots take, mixed dtypes, biases,
 * row counts around the task splits and 1-3 threads; the cases it must decline; and a mixed-type
 * model decoded with the fusion on and off (INGOT_LM_FUSE=0) giving the same logits bits.
 */
#include <stdlib.h>
#include <string.h>

#include "cpu/kernels/kernels.h"
#include "export/backend_export.h"
#include "harness.h"
#include "ingot/lm.h"
#include "ingot/quant.h"

#define GDIR INGOT_SOURCE_DIR "/tests/golden/lm/"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static float urand(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((rng >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
}

typedef struct wmat {
    ingot_buffer *buf;
    ingot_tensor t;
} wmat;

/* A [rows, K] weight of dtype dt quantized from seeded values, wrapped read-only. */
static void make_w(ingot_backend *be, wmat *w, ingot_dtype dt, int64_t rows, int64_t K,
                   void **mem)
{
    size_t n = (size_t)(rows * K), bytes = n / ingot_dtype_block_elems(dt) *
                                           ingot_dtype_block_bytes(dt);
    float *f = malloc(n * 4);
    for (size_t i = 0; i < n; i++) f[i] = urand() * (1.0f + (float)(i % 7));
    *mem = malloc(bytes);
    if (dt == INGOT_DTYPE_F16 || dt == INGOT_DTYPE_BF16)
        ASSERT_OK(ingot_f32_encode(dt, f, n, *mem, bytes, NULL));
    else
        ASSERT_OK(ingot_quantize(dt, f, n, *mem, bytes, NULL));
    free(f);
    ASSERT_OK(ingot_buffer_wrap(be, *mem, bytes, false, &w->buf, NULL));
    int64_t shape[2] = {rows, K};
    ASSERT_OK(ingot_tensor_init(&w->t, w->buf, 0, dt, 2, shape, NULL));
}

/* f32 [1, n] (rank 2) or [n] (rank 1) over a fresh buffer of n floats (+ pad) */
static ingot_buffer *f32_row(ingot_backend *be, ingot_tensor *t, int64_t n, uint32_t rank)
{
    ingot_buffer *b = NULL;
    int64_t s2[2] = {1, n}, s1[1] = {n};
    if (ingot_buffer_alloc(be, (size_t)n * 4 + 64, &b, NULL) != INGOT_OK ||
        ingot_tensor_init(t, b, 0, INGOT_DTYPE_F32, rank, rank == 2 ? s2 : s1, NULL) != INGOT_OK)
        abort(); /* test scaffolding: cannot go on */
    return b;
}

typedef struct mcase {
    uint32_t n;
    ingot_dtype dt[4];
    int64_t rows[4];
    bool bias[4];
    int64_t K;
} mcase;

static const mcase CASES[] = {
    /* q, k, v of the llama-bench shape (1024 wide, 4 KV heads of 64) and gate/up */
    {3, {INGOT_DTYPE_Q4_K, INGOT_DTYPE_Q4_K, INGOT_DTYPE_Q4_K}, {1024, 256, 256}, {0}, 1024},
    {2, {INGOT_DTYPE_Q4_K, INGOT_DTYPE_Q4_K}, {2816, 2816}, {0}, 1024},
    {3, {INGOT_DTYPE_Q8_0, INGOT_DTYPE_Q8_0, INGOT_DTYPE_Q8_0}, {1024, 256, 256}, {0}, 1024},
    {3, {INGOT_DTYPE_Q4_0, INGOT_DTYPE_Q4_0, INGOT_DTYPE_Q4_0}, {520, 136, 136}, {0}, 512},
    /* Q4_K_M's mix: v in Q6_K; Q5_K shares Q4_K's activation layout; Q8_0 with Q4_0 */
    {3, {INGOT_DTYPE_Q4_K, INGOT_DTYPE_Q4_K, INGOT_DTYPE_Q6_K}, {1024, 256, 256}, {0}, 1024},
    {4, {INGOT_DTYPE_Q5_K, INGOT_DTYPE_Q4_K, INGOT_DTYPE_Q6_K, INGOT_DTYPE_Q5_K},
     {300, 77, 9, 1030}, {0}, 768},
    {3, {INGOT_DTYPE_Q8_0, INGOT_DTYPE_Q4_0, INGOT_DTYPE_Q8_0}, {33, 1, 4100}, {0}, 256},
    /* Qwen2-style biases on q, k and v; a bias on one segment only */
    {3, {INGOT_DTYPE_Q8_0, INGOT_DTYPE_Q8_0, INGOT_DTYPE_Q8_0}, {896, 128, 128}, {1, 1, 1}, 896},
    {2, {INGOT_DTYPE_Q6_K, INGOT_DTYPE_Q4_K}, {700, 900}, {0, 1}, 512},
    /* F16 / BF16 (x not quantized), alone and beside block types, a bias */
    {3, {INGOT_DTYPE_F16, INGOT_DTYPE_F16, INGOT_DTYPE_F16}, {1024, 256, 256}, {0}, 1024},
    {3, {INGOT_DTYPE_BF16, INGOT_DTYPE_Q8_0, INGOT_DTYPE_F16}, {130, 520, 77}, {0, 1, 1}, 544},
    /* one segment: the output head's shape */
    {1, {INGOT_DTYPE_Q4_K}, {4000}, {0}, 256},
};

/* Every case at 1, 2 and 3 threads: ingot__linear_multi writes what ingot_op_linear writes. */
TEST(linear_multi_same_bits_as_the_ops)
{
    for (unsigned th = 1; th <= 3; th++) {
        ingot_backend_opts bo = {0};
        bo.threads = th;
        ingot_backend *be = NULL;
        ASSERT_OK(ingot_backend_new("cpu", &bo, &be, NULL));
        for (size_t c = 0; c < sizeof CASES / sizeof CASES[0]; c++) {
            const mcase *mc = &CASES[c];
            wmat w[4];
            void *mem[4];
            ingot_tensor x, y[4], yr[4], bt[4];
            ingot_buffer *xb = f32_row(be, &x, mc->K, 2), *yb[4], *yrb[4], *bb[4] = {0};
            float *xp = ingot_buffer_host(xb);
            for (int64_t i = 0; i < mc->K; i++) xp[i] = urand() * 3.0f;
            const ingot_tensor *wp[4], *bp[4];
            ingot_tensor *yp[4];
            for (uint32_t i = 0; i < mc->n; i++) {
                make_w(be, &w[i], mc->dt[i], mc->rows[i], mc->K, &mem[i]);
                yb[i] = f32_row(be, &y[i], mc->rows[i], 2);
                yrb[i] = f32_row(be, &yr[i], mc->rows[i], 2);
                float *yh = ingot_buffer_host(yb[i]);
                for (int64_t r = 0; r < mc->rows[i]; r++) yh[r] = 1e30f; /* all overwritten */
                bp[i] = NULL;
                if (mc->bias[i]) {
                    bb[i] = f32_row(be, &bt[i], mc->rows[i], 1);
                    float *bh = ingot_buffer_host(bb[i]);
                    for (int64_t r = 0; r < mc->rows[i]; r++) bh[r] = urand();
                    bp[i] = &bt[i];
                }
                wp[i] = &w[i].t;
                yp[i] = &y[i];
                ASSERT_OK(ingot_op_linear(be, &yr[i], &x, &w[i].t, bp[i], NULL));
            }
            CHECK(ingot__linear_multi(be, mc->n, yp, &x, wp, bp, NULL), "case %zu declined", c);
            for (uint32_t i = 0; i < mc->n; i++) {
                const float *a = ingot_buffer_host(yb[i]), *b = ingot_buffer_host(yrb[i]);
                CHECK(!memcmp(a, b, (size_t)mc->rows[i] * 4),
                      "case %zu segment %u (%s, %lld rows) at %u threads: %g vs op %g", c, i,
                      ingot_dtype_name(mc->dt[i]), (long long)mc->rows[i], th, (double)a[0],
                      (double)b[0]);
                ingot_buffer_free(yb[i]);
                ingot_buffer_free(yrb[i]);
                ingot_buffer_free(bb[i]);
                ingot_buffer_free(w[i].buf);
                free(mem[i]);
            }
            ingot_buffer_free(xb);
        }
        ingot_backend_free(be);
    }
}

/* Where it does not apply it returns false and writes nothing. */
TEST(linear_multi_declines)
{
    ingot_backend *cpu = NULL, *ref = NULL;
    ASSERT_OK(ingot_backend_new("cpu", NULL, &cpu, NULL));
    ASSERT_OK(ingot_backend_new("ref", NULL, &ref, NULL));
    ingot_backend *bes[2] = {cpu, ref};
    for (int bi = 0; bi < 2; bi++) {
        ingot_backend *be = bes[bi];
        wmat w, w2;
        void *mem, *mem2;
        make_w(be, &w, INGOT_DTYPE_Q8_0, 64, 256, &mem);
        make_w(be, &w2, INGOT_DTYPE_Q8_0, 64, 512, &mem2);
        ingot_tensor x, x2, y;
        ingot_buffer *xb = f32_row(be, &x, 256, 2), *yb = f32_row(be, &y, 64, 2);
        ingot_buffer *x2b = NULL;
        ASSERT_OK(ingot_buffer_alloc(be, 2 * 256 * 4, &x2b, NULL));
        int64_t s2[2] = {2, 256};
        ASSERT_OK(ingot_tensor_init(&x2, x2b, 0, INGOT_DTYPE_F32, 2, s2, NULL));
        float *yh = ingot_buffer_host(yb);
        for (int i = 0; i < 64; i++) yh[i] = 7.0f;
        ingot_tensor *yp[1] = {&y};
        const ingot_tensor *wp[1] = {&w.t}, *wp2[1] = {&w2.t};
        if (be == cpu)
            CHECK(ingot__linear_multi(be, 1, yp, &x, wp, NULL, NULL), "cpu Q8_0 declined");
        for (int i = 0; i < 64; i++) yh[i] = 7.0f;
        CHECK(be == cpu || !ingot__linear_multi(be, 1, yp, &x, wp, NULL, NULL),
              "ref backend taken");
        CHECK(!ingot__linear_multi(be, 1, yp, &x2, wp, NULL, NULL), "two rows taken");
        CHECK(!ingot__linear_multi(be, 1, yp, &x, wp2, NULL, NULL), "row length mismatch taken");
        CHECK(!ingot__linear_multi(be, 0, yp, &x, wp, NULL, NULL), "n = 0 taken");
        /* F32 weights: the GEMV of the op, not this path */
        ingot_tensor wf;
        ingot_buffer *wfb = NULL;
        ASSERT_OK(ingot_buffer_alloc(be, 64 * 256 * 4, &wfb, NULL));
        int64_t sw[2] = {64, 256};
        ASSERT_OK(ingot_tensor_init(&wf, wfb, 0, INGOT_DTYPE_F32, 2, sw, NULL));
        const ingot_tensor *wpf[1] = {&wf};
        CHECK(!ingot__linear_multi(be, 1, yp, &x, wpf, NULL, NULL), "F32 weights taken");
        for (int i = 0; i < 64; i++)
            if (yh[i] != 7.0f) {
                CHECK(0, "a declined call wrote dst[%d] = %g", i, (double)yh[i]);
                break;
            }
        ingot_buffer_free(wfb);
        ingot_buffer_free(xb);
        ingot_buffer_free(x2b);
        ingot_buffer_free(yb);
        ingot_buffer_free(w.buf);
        ingot_buffer_free(w2.buf);
        free(mem);
        free(mem2);
    }
    ingot_backend_free(cpu);
    ingot_backend_free(ref);
}

/* The mixed-type model (Q4_K, Q5_K, Q6_K, Q8_0, Q4_0, F16, BF16 per tensor): a prompt, then 24
 * tokens decoded one at a time, with the fused linears (the default) and without
 * (INGOT_LM_FUSE=0, read at open): every logit the same bits, at 1 and 2 threads; and the
 * stories260K Q8_0 model likewise. */
static void decode_logits_rp(const char *path, unsigned threads, bool fuse, const char *repack,
                             const int32_t *tok, size_t np, size_t nd, float *out,
                             uint32_t *vocab, uint64_t *owned)
{
    if (fuse) unsetenv("INGOT_LM_FUSE");
    else setenv("INGOT_LM_FUSE", "0", 1);
    if (repack) setenv("INGOT_LM_REPACK", repack, 1);
    else unsetenv("INGOT_LM_REPACK");
    ingot_backend_opts bo = {0};
    bo.threads = threads;
    ingot_backend *be = NULL;
    ASSERT_OK(ingot_backend_new("cpu", &bo, &be, NULL));
    ingot_lm *m = NULL;
    ASSERT_OK(ingot_lm_open_path(be, path, NULL, &m, NULL));
    unsetenv("INGOT_LM_FUSE");
    unsetenv("INGOT_LM_REPACK");
    ingot_lm_estimate est;
    ingot_lm_estimate_plan(m, 64, INGOT_DTYPE_F32, 0, &est);
    if (owned) *owned = est.owned_bytes;
    uint32_t V = ingot_lm_get_config(m)->vocab;
    *vocab = V;
    ingot_lm_session *s = NULL;
    ASSERT_OK(ingot_lm_session_new(m, NULL, &s, NULL));
    ASSERT_OK(ingot_lm_eval(s, tok, np, INGOT_LM_LOGITS_LAST, out, V, NULL));
    for (size_t i = 0; i < nd; i++)
        ASSERT_OK(ingot_lm_eval(s, &tok[np + i], 1, INGOT_LM_LOGITS_LAST, out + (i + 1) * V, V,
                                NULL));
    ingot_lm_session_free(s);
    ingot_lm_free(m);
    ingot_backend_free(be);
}

static void decode_logits(const char *path, unsigned threads, bool fuse, const int32_t *tok,
                          size_t np, size_t nd, float *out, uint32_t *vocab)
{
    decode_logits_rp(path, threads, fuse, NULL, tok, np, nd, out, vocab, NULL);
}

static void check_fused_model(const char *path)
{
    int32_t tok[32];
    for (int i = 0; i < 32; i++) tok[i] = (int32_t)((i * 37 + 5) % 60) + 2;
    size_t np = 5, nd = 24;
    uint32_t V = 0;
    for (unsigned th = 1; th <= 2; th++) {
        float *a = malloc((nd + 1) * 40000 * 4), *b = malloc((nd + 1) * 40000 * 4);
        decode_logits(path, th, true, tok, np, nd, a, &V);
        ASSERT_TRUE(V <= 40000);
        decode_logits(path, th, false, tok, np, nd, b, &V);
        for (size_t i = 0; i <= nd; i++)
            if (memcmp(a + i * V, b + i * V, (size_t)V * 4)) {
                CHECK(0, "%s, %u threads: step %zu logits differ fused / unfused", path, th, i);
                break;
            }
        free(a);
        free(b);
    }
}

TEST(decode_fused_equals_unfused_mixed_types) { check_fused_model(GDIR "quant.gguf"); }

/* Repacking (the default; INGOT_LM_REPACK=0 turns it off, docs/RUNTIME.md): the mixed-type
 * model's Q4_K linears repacked where the level runs the repacked kernel (AVX-512 VNNI with
 * VBMI), the copies (and the norm vectors copied with them) counted in the estimate's owned
 * bytes; a prompt (prefill through the repacked layout too) then 24 decode steps, fused and
 * unfused, 1 and 2 threads: every logit the same bits as without repacking (the kernel computes
 * the same integers per super-block), so the same greedy tokens. Elsewhere nothing is repacked
 * (owned bytes unchanged) and the logits are those of the default. */
TEST(decode_repacked_q4k_same_bits)
{
    const char *path = GDIR "quant.gguf";
    int32_t tok[32];
    for (int i = 0; i < 32; i++) tok[i] = (int32_t)((i * 41 + 3) % 60) + 2;
    size_t np = 5, nd = 24;
    uint32_t V = 0;
    /* the bytes the model then owns: its Q4_K linear weights (every Q4_K tensor but the
     * embedding table) and its F32 norm vectors (copied with them), each 64-byte aligned */
    ingot_file *f = NULL;
    ASSERT_OK(ingot_file_open(path, NULL, &f, NULL));
    uint64_t q4k = 0, nt = ingot_file_tensor_count(f);
    for (uint64_t i = 0; i < nt; i++) {
        ingot_tensor_info ti;
        ASSERT_OK(ingot_file_tensor_at(f, i, &ti));
        if ((ti.dtype == INGOT_DTYPE_Q4_K && ti.rank == 2 &&
             strcmp(ti.name, "token_embd.weight")) ||
            (ti.dtype == INGOT_DTYPE_F32 && ti.rank == 1 && strstr(ti.name, "norm")))
            q4k += (ti.nbytes + 63) / 64 * 64;
    }
    ingot_file_close(f);
    CHECK(q4k > 0, "the model has no Q4_K linear");
    bool pays = ingot__cpu_vbmi() && (ingot__get_isa() == INGOT__ISA_AVX512_VNNI ||
                                      ingot__get_isa() == INGOT__ISA_AMX);
    fprintf(stderr, "  repacked kernel %s at level %s\n", pays ? "runs" : "does not run",
            ingot__isa_name(ingot__get_isa()));
    for (unsigned th = 1; th <= 2; th++)
        for (int fuse = 0; fuse <= 1; fuse++) {
            float *a = malloc((nd + 1) * 40000 * 4), *b = malloc((nd + 1) * 40000 * 4);
            uint64_t oa = 0, ob = 0;
            decode_logits_rp(path, th, fuse, "0", tok, np, nd, a, &V, &oa);
            ASSERT_TRUE(V <= 40000);
            decode_logits_rp(path, th, fuse, "1", tok, np, nd, b, &V, &ob);
            CHECK(ob - oa == (pays ? q4k : 0), "%u threads: owned bytes %llu -> %llu, want +%llu",
                  th, (unsigned long long)oa, (unsigned long long)ob,
                  (unsigned long long)(pays ? q4k : 0));
            for (size_t i = 0; i <= nd; i++)
                if (memcmp(a + i * V, b + i * V, (size_t)V * 4)) {
                    CHECK(0, "%u threads, fuse %d: step %zu logits differ with repacking", th,
                          fuse, i);
                    break;
                }
            free(a);
            free(b);
        }
}
TEST(decode_fused_equals_unfused_stories_q8_0) { check_fused_model(GDIR "stories_q8.gguf"); }

RUN_TESTS(T(linear_multi_same_bits_as_the_ops), T(linear_multi_declines),
          T(decode_fused_equals_unfused_mixed_types), T(decode_fused_equals_unfused_stories_q8_0),
          T(decode_repacked_q4k_same_bits))
