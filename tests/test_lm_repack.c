/*
 * test_lm_repack.c - repacked Q4_K as the default layout (docs/RUNTIME.md): every product of a
 * repacked linear (backend_export.h's ingot__linear_q4kr: the dots, the dequantizing GEMM and
 * the AMX tiles) against ingot_op_linear on the stored weights at every ISA level; a generated
 * all-Q4_K Llama with repacking on and off (the same logits bits and greedy tokens, decode token
 * by token against the full forward); the mapping neither read (poisoned after open) nor resident
 * (pagemap) after open; the off switches (ingot_lm_opts.no_repack, INGOT_LM_REPACK=0).
 */
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpu/kernels/kernels.h"
#include "export/backend_export.h"
#include "harness.h"
#include "ingot/ingot.h"
#include "ingot/lm.h"
#include "ingot/quant.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}
static float urand(void) { return (float)(next() >> 40) / 16777216.0f * 2.0f - 1.0f; }

/* Whether the level in effect runs the repacked kernel (the runtime repacks only then). */
static bool pays(void)
{
    return ingot__q4kr_fast();
}

/* ---- the products ---- */

/* y = x . w^T (+ bias) for a [rows, K] Q4_K weight, M activation rows: ingot_op_linear on the
 * stored blocks against ingot__linear_q4kr on the repacked copy. The same bits where the
 * repacked kernel runs and on the prefill routes (M >= INGOT__QGEMM_DEQUANT_ROWS: the same
 * decoded values); elsewhere the dots are its scalar route (the runtime does not repack there),
 * which sums the same exact integers per super-block in another float order: within 1e-5 of the
 * largest |y|. */
static void check_shape(ingot_backend *be, uint8_t *w, const uint8_t *rp, int64_t rows,
                        int64_t K, int64_t M, bool bias)
{
    size_t wb = (size_t)(rows * K / 256) * 144;
    ingot_buffer *wbuf = NULL, *xb = NULL, *y0b = NULL, *y1b = NULL, *bb = NULL;
    ingot_tensor wt, x, y0, y1, bt;
    int64_t ws[2] = {rows, K}, xs[2] = {M, K}, ys[2] = {M, rows}, bs[1] = {rows};
    ASSERT_OK(ingot_buffer_wrap(be, w, wb, false, &wbuf, NULL));
    ASSERT_OK(ingot_tensor_init(&wt, wbuf, 0, INGOT_DTYPE_Q4_K, 2, ws, NULL));
    ASSERT_OK(ingot_buffer_alloc(be, (size_t)(M * K) * 4, &xb, NULL));
    ASSERT_OK(ingot_buffer_alloc(be, (size_t)(M * rows) * 4, &y0b, NULL));
    ASSERT_OK(ingot_buffer_alloc(be, (size_t)(M * rows) * 4, &y1b, NULL));
    ASSERT_OK(ingot_buffer_alloc(be, (size_t)rows * 4, &bb, NULL));
    ASSERT_OK(ingot_tensor_init(&x, xb, 0, INGOT_DTYPE_F32, 2, xs, NULL));
    ASSERT_OK(ingot_tensor_init(&y0, y0b, 0, INGOT_DTYPE_F32, 2, ys, NULL));
    ASSERT_OK(ingot_tensor_init(&y1, y1b, 0, INGOT_DTYPE_F32, 2, ys, NULL));
    ASSERT_OK(ingot_tensor_init(&bt, bb, 0, INGOT_DTYPE_F32, 1, bs, NULL));
    float *px = ingot_buffer_host(xb), *pb = ingot_buffer_host(bb);
    for (int64_t i = 0; i < M * K; i++) px[i] = urand();
    for (int64_t i = 0; i < rows; i++) pb[i] = urand();
    float *p0 = ingot_buffer_host(y0b), *p1 = ingot_buffer_host(y1b);
    memset(p1, 0x7f, (size_t)(M * rows) * 4); /* every output must be written */
    ASSERT_OK(ingot_op_linear(be, &y0, &x, &wt, bias ? &bt : NULL, NULL));
    bool done = false;
    ASSERT_OK(ingot__linear_q4kr(be, &y1, &x, &wt, bias ? &bt : NULL, rp, &done, NULL));
    CHECK(done, "rows %lld K %lld M %lld: declined", (long long)rows, (long long)K, (long long)M);
    bool exact = pays() || M >= INGOT__QGEMM_DEQUANT_ROWS;
    if (exact) {
        CHECK(!memcmp(p0, p1, (size_t)(M * rows) * 4),
              "%s: rows %lld K %lld M %lld bias %d: repacked product differs",
              ingot__isa_name(ingot__get_isa()), (long long)rows, (long long)K, (long long)M,
              bias);
    } else {
        double mx = 0, d = 0;
        for (int64_t i = 0; i < M * rows; i++) {
            mx = fmax(mx, fabs(p0[i]));
            d = fmax(d, fabs((double)p0[i] - p1[i]));
        }
        CHECK(d <= 1e-5 * mx, "%s: rows %lld K %lld M %lld: %.3g of %.3g",
              ingot__isa_name(ingot__get_isa()), (long long)rows, (long long)K, (long long)M, d,
              mx);
    }
    ingot_buffer_free(wbuf);
    ingot_buffer_free(xb);
    ingot_buffer_free(y0b);
    ingot_buffer_free(y1b);
    ingot_buffer_free(bb);
}

TEST(repacked_products_every_level)
{
    ingot_backend_opts bo = {0};
    bo.threads = 2;
    ingot_backend *be = NULL;
    ASSERT_OK(ingot_backend_new("cpu", &bo, &be, NULL));
    ingot__isa top = ingot__get_isa();
    static const int64_t Ks[] = {256, 2816, 8192};
    for (int lv = INGOT__ISA_COUNT - 1; lv >= 0; lv--) {
        if (!ingot__isa_supported((ingot__isa)lv) || lv > (int)top) continue;
        if (ingot__set_isa((ingot__isa)lv) != (ingot__isa)lv) continue;
        fprintf(stderr, "  level %s (repacked kernel %s)\n", ingot__isa_name((ingot__isa)lv),
                pays() ? "runs" : "scalar");
        for (size_t k = 0; k < sizeof Ks / sizeof Ks[0]; k++)
            for (int64_t rows = 1; rows <= 18; rows++) {
                int64_t R = rows == 18 ? 172 : rows;
                size_t nblk = (size_t)(R * Ks[k] / 256), wb = nblk * 144;
                uint8_t *w = malloc(wb), *rp = malloc(wb);
                for (size_t b = 0; b < nblk; b++) { /* random blocks, d and dmin of 2^-15..2^-5 */
                    uint16_t d = (uint16_t)(0x0400 + next() % 0x2800);
                    uint16_t dm = (uint16_t)(0x0400 + next() % 0x2800);
                    memcpy(w + b * 144, &d, 2);
                    memcpy(w + b * 144 + 2, &dm, 2);
                    for (int i = 4; i < 144; i++) w[b * 144 + i] = (uint8_t)next();
                }
                ingot__q4kr_repack(w, rp, nblk);
                for (int64_t M = 1; M <= 18; M++) {
                    int64_t MM = M == 18 ? 64 : M;
                    /* where the runtime does not repack (the scalar route, slow): fewer */
                    if (!pays() && ((R % 8 != 1 && R != 172) || (M % 8 != 1 && M < 17)))
                        continue;
                    check_shape(be, w, rp, R, Ks[k], MM, (R + MM) % 3 == 0);
                }
                free(w);
                free(rp);
            }
    }
    ingot__set_isa(top);
    /* what it declines: another dtype, a shape the op refuses (nothing written) */
    bool done = true;
    ingot_buffer *b = NULL;
    ingot_tensor w, x, y;
    int64_t ws[2] = {4, 256}, xs[2] = {1, 256}, ys[2] = {1, 5};
    ASSERT_OK(ingot_buffer_alloc(be, 4 * 144 + 256 * 4 + 64, &b, NULL));
    ASSERT_OK(ingot_tensor_init(&w, b, 0, INGOT_DTYPE_Q8_0, 2, ws, NULL));
    ASSERT_OK(ingot_tensor_init(&x, b, 0, INGOT_DTYPE_F32, 2, xs, NULL));
    ASSERT_OK(ingot_tensor_init(&y, b, 1024, INGOT_DTYPE_F32, 2, ys, NULL));
    ASSERT_OK(ingot__linear_q4kr(be, &y, &x, &w, NULL, ingot_buffer_host(b), &done, NULL));
    CHECK(!done, "a Q8_0 weight was taken");
    ASSERT_OK(ingot_tensor_init(&w, b, 0, INGOT_DTYPE_Q4_K, 2, ws, NULL));
    done = true;
    ASSERT_OK(ingot__linear_q4kr(be, &y, &x, &w, NULL, ingot_buffer_host(b), &done, NULL));
    CHECK(!done, "dst of 5 columns for 4 weight rows was taken");
    ingot_buffer_free(b);
    ingot_backend_free(be);
}

/* ---- a generated all-Q4_K Llama ---- */

/* four query heads of 64 to one KV head: decode attention takes the grouped-heads kernel */
enum { DIM = 256, LAYERS = 2, HEADS = 4, KVH = 1, FFN = 512, VOCAB = 2048 };

/* Random valid Q4_K blocks (d, dmin moderate, random 6-bit scales and nibbles) or F32 values. */
static void fill(ingot_dtype dt, uint8_t *p, size_t nelem)
{
    if (dt == INGOT_DTYPE_F32) {
        for (size_t i = 0; i < nelem; i++) {
            float v = 1.0f + 0.1f * urand();
            memcpy(p + 4 * i, &v, 4);
        }
        return;
    }
    uint16_t d = 0, dmin = 0;
    float fd = 1.0f / (15.0f * 32.0f * 16.0f), fm = 1.0f / (64.0f * 16.0f);
    ASSERT_OK(ingot_f32_encode(INGOT_DTYPE_F16, &fd, 1, &d, 2, NULL));
    ASSERT_OK(ingot_f32_encode(INGOT_DTYPE_F16, &fm, 1, &dmin, 2, NULL));
    for (size_t b = 0; b < nelem / 256; b++, p += 144) {
        memcpy(p, &d, 2);
        memcpy(p + 2, &dmin, 2);
        for (int i = 0; i < 140; i++) p[4 + i] = (uint8_t)next();
    }
}

/* Writes the model to path (GGUF, llama.cpp naming, untied Q4_K head, Q4_K embedding table). */
static void write_model(const char *path)
{
    ingot_writer_opts wo = {0};
    wo.format = "gguf";
    wo.alignment = 64;
    wo.no_fsync = true;
    ingot_writer *w = NULL;
    ASSERT_OK(ingot_writer_new(&wo, &w, NULL));
    ASSERT_OK(ingot_writer_set_string(w, "general.architecture", "llama"));
    ASSERT_OK(ingot_writer_set_u32(w, "llama.block_count", LAYERS));
    ASSERT_OK(ingot_writer_set_u32(w, "llama.context_length", 256));
    ASSERT_OK(ingot_writer_set_u32(w, "llama.embedding_length", DIM));
    ASSERT_OK(ingot_writer_set_u32(w, "llama.feed_forward_length", FFN));
    ASSERT_OK(ingot_writer_set_u32(w, "llama.attention.head_count", HEADS));
    ASSERT_OK(ingot_writer_set_u32(w, "llama.attention.head_count_kv", KVH));
    ASSERT_OK(ingot_writer_set_f32(w, "llama.rope.freq_base", 10000.0f));
    ASSERT_OK(ingot_writer_set_f32(w, "llama.attention.layer_norm_rms_epsilon", 1e-5f));
    struct { char name[48]; uint64_t r, c; } t[3 + 9 * LAYERS];
    size_t nt = 0;
#define ADD(nm, rr, cc)                                                                            \
    do {                                                                                           \
        snprintf(t[nt].name, sizeof t[nt].name, "%s", nm);                                         \
        t[nt].r = rr, t[nt].c = cc, nt++;                                                          \
    } while (0)
    ADD("token_embd.weight", VOCAB, DIM);
    const char *mats[7] = {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up",
                           "ffn_down"};
    const uint64_t mr[7] = {DIM, DIM / HEADS * KVH, DIM / HEADS * KVH, DIM, FFN, FFN, DIM};
    const uint64_t mc[7] = {DIM, DIM, DIM, DIM, DIM, DIM, FFN};
    for (int l = 0; l < LAYERS; l++) {
        char nm[48];
        snprintf(nm, sizeof nm, "blk.%d.attn_norm.weight", l);
        ADD(nm, DIM, 0);
        for (int k = 0; k < 7; k++) {
            if (k == 4) {
                snprintf(nm, sizeof nm, "blk.%d.ffn_norm.weight", l);
                ADD(nm, DIM, 0);
            }
            snprintf(nm, sizeof nm, "blk.%d.%s.weight", l, mats[k]);
            ADD(nm, mr[k], mc[k]);
        }
    }
    ADD("output_norm.weight", DIM, 0);
    ADD("output.weight", VOCAB, DIM);
#undef ADD
    for (size_t i = 0; i < nt; i++) {
        uint64_t shape[2] = {t[i].r, t[i].c};
        ASSERT_OK(ingot_writer_add_tensor(w, t[i].name,
                                          t[i].c ? INGOT_DTYPE_Q4_K : INGOT_DTYPE_F32,
                                          t[i].c ? 2 : 1, shape, NULL, NULL, NULL));
    }
    ASSERT_OK(ingot_writer_begin(w, path, NULL));
    for (size_t i = 0; i < nt; i++) {
        size_t n = (size_t)(t[i].c ? t[i].r * t[i].c : t[i].r);
        size_t bytes = t[i].c ? n / 256 * 144 : n * 4;
        uint8_t *buf = malloc(bytes);
        fill(t[i].c ? INGOT_DTYPE_Q4_K : INGOT_DTYPE_F32, buf, n);
        ASSERT_OK(ingot_writer_write(w, buf, bytes, NULL));
        free(buf);
    }
    ASSERT_OK(ingot_writer_commit(w, NULL));
    ingot_writer_free(w);
}

static char model_path[256];

static const char *model(void)
{
    if (!model_path[0]) {
        snprintf(model_path, sizeof model_path, "%s/test_lm_repack_%d.gguf",
                 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
        write_model(model_path);
    }
    return model_path;
}

static int notices_repacked;
static void on_notice(void *ctx, const char *msg)
{
    (void)ctx;
    if (strstr(msg, "repacked")) notices_repacked++;
}

/* Opens the model (from f when given, else from its path) with repacking as `mode` says:
 * 0 default, 1 opts.no_repack, 2 INGOT_LM_REPACK=0. */
static void open_model_(ingot_backend *be, const ingot_file *f, int mode, ingot_lm **out)
{
    ingot_lm_opts o = {0};
    o.notice = on_notice;
    o.no_repack = mode == 1;
    if (mode == 2) setenv("INGOT_LM_REPACK", "0", 1);
    else unsetenv("INGOT_LM_REPACK");
    ingot_lm *m = NULL;
    notices_repacked = 0;
    if (f) ASSERT_OK(ingot_lm_open(be, f, &o, &m, NULL));
    else ASSERT_OK(ingot_lm_open_path(be, model(), &o, &m, NULL));
    unsetenv("INGOT_LM_REPACK");
    *out = m;
}

static ingot_lm *open_model(ingot_backend *be, const ingot_file *f, int mode)
{
    ingot_lm *m = NULL;
    open_model_(be, f, mode, &m);
    if (!m) abort(); /* test scaffolding: cannot go on (the failure is reported) */
    return m;
}

enum { NT = 48 };

static void tokens(int32_t *tok)
{
    for (int i = 0; i < NT; i++) tok[i] = (int32_t)((i * 37 + 11) % 100) + 3; /* low ids only */
}

/* Logits of NT tokens: all positions of one forward (n_batch NT: the prefill routes), then the
 * same tokens one by one (decode), then 16 greedy tokens. */
static void run(ingot_lm *m, float *full, float *step, int32_t *greedy)
{
    int32_t tok[NT];
    tokens(tok);
    ingot_lm_session_opts so = {0};
    so.n_ctx = 128;
    so.n_batch = NT;
    ingot_lm_session *s = NULL;
    ASSERT_OK(ingot_lm_session_new(m, &so, &s, NULL));
    ASSERT_OK(ingot_lm_eval(s, tok, NT, INGOT_LM_LOGITS_ALL, full, (size_t)NT * VOCAB, NULL));
    ASSERT_OK(ingot_lm_session_rewind(s, 0, NULL));
    for (int i = 0; i < NT; i++)
        ASSERT_OK(ingot_lm_eval(s, tok + i, 1, INGOT_LM_LOGITS_LAST, step + (size_t)i * VOCAB,
                                VOCAB, NULL));
    int32_t t = tok[NT - 1];
    static float last[VOCAB];
    const float *lg = step + (size_t)(NT - 1) * VOCAB;
    for (int g = 0; g < 16; g++) {
        int32_t best = 0;
        for (int32_t v = 1; v < VOCAB; v++)
            if (lg[v] > lg[best]) best = v;
        greedy[g] = t = best;
        ASSERT_OK(ingot_lm_eval(s, &t, 1, INGOT_LM_LOGITS_LAST, last, VOCAB, NULL));
        lg = last;
    }
    ingot_lm_session_free(s);
}

static uint64_t owned(const ingot_lm *m)
{
    ingot_lm_estimate e;
    ingot_lm_estimate_plan(m, 64, INGOT_DTYPE_F32, 0, &e);
    return e.owned_bytes;
}

/* Repacking on (the default) and off (both switches), 1 and 2 threads: the same logits bits at
 * every position of the full forward and of the decode steps, so the same greedy tokens; the
 * repacked copies counted in the owned bytes (every Q4_K linear, the head included, and the norm
 * vectors copied with them, each 64-byte aligned); one notice saying so. Decode token by token
 * against the full forward: the decode quantizes its activations to 8 bits (the dots), the
 * 48-row forward does not (the prefill routes), so they agree to the 8-bit activations' error:
 * within 2e-2 of the logits' 2-norm, with repacking as without. */
TEST(model_repacked_same_logits_and_tokens)
{
    size_t n = (size_t)NT * VOCAB;
    float *f0 = malloc(n * 4), *s0 = malloc(n * 4), *f1 = malloc(n * 4), *s1 = malloc(n * 4);
    uint64_t want = 0;
    {
        ingot_file *f = NULL;
        ASSERT_OK(ingot_file_open(model(), NULL, &f, NULL));
        for (uint64_t i = 0; i < ingot_file_tensor_count(f); i++) {
            ingot_tensor_info ti;
            ASSERT_OK(ingot_file_tensor_at(f, i, &ti));
            if (strcmp(ti.name, "token_embd.weight")) want += (ti.nbytes + 63) / 64 * 64;
        }
        ingot_file_close(f);
    }
    fprintf(stderr, "  repacked kernel %s at level %s\n", pays() ? "runs" : "does not run",
            ingot__isa_name(ingot__get_isa()));
    for (unsigned th = 1; th <= 2; th++)
        for (int mode = 1; mode <= 2; mode++) {
            ingot_backend_opts bo = {0};
            bo.threads = th;
            ingot_backend *be = NULL;
            ASSERT_OK(ingot_backend_new("cpu", &bo, &be, NULL));
            int32_t g0[16], g1[16];
            ingot_lm *off = open_model(be, NULL, mode);
            CHECK(notices_repacked == 0, "mode %d: a repacking notice with repacking off", mode);
            run(off, f0, s0, g0);
            ingot_lm *on = open_model(be, NULL, 0);
            CHECK(notices_repacked == (pays() ? 1 : 0), "%d repacking notices", notices_repacked);
            run(on, f1, s1, g1);
            CHECK(owned(on) - owned(off) == (pays() ? want : 0),
                  "owned bytes %llu -> %llu, want +%llu", (unsigned long long)owned(off),
                  (unsigned long long)owned(on), (unsigned long long)(pays() ? want : 0));
            CHECK(!memcmp(f0, f1, n * 4), "%u threads, mode %d: full-forward logits differ", th,
                  mode);
            CHECK(!memcmp(s0, s1, n * 4), "%u threads, mode %d: decode logits differ", th, mode);
            CHECK(!memcmp(g0, g1, sizeof g0), "%u threads, mode %d: greedy tokens differ", th,
                  mode);
            double num = 0, den = 0;
            for (size_t i = 0; i < n; i++) {
                num += ((double)s1[i] - f1[i]) * ((double)s1[i] - f1[i]);
                den += (double)f1[i] * f1[i];
            }
            CHECK(sqrt(num / den) <= 2e-2, "%u threads: decode vs full forward %.3g", th,
                  sqrt(num / den));
            if (th == 1 && mode == 1)
                fprintf(stderr, "  decode vs full forward: %.3g of the logits' 2-norm\n",
                        sqrt(num / den));
            ingot_lm_free(on);
            ingot_lm_free(off);
            ingot_backend_free(be);
        }
    free(f0);
    free(s0);
    free(f1);
    free(s1);
}

/* After open the repacked tensors' stored bytes are never read: the file opened from a buffer,
 * the model opened, then every tensor but the embedding table overwritten with garbage; the
 * logits (full forward and decode) keep their bits. The same poisoning with repacking off
 * changes them (the check bites). */
TEST(mapping_not_read_after_open)
{
    FILE *fp = fopen(model(), "rb");
    ASSERT_TRUE(fp != NULL);
    fseek(fp, 0, SEEK_END);
    size_t sz = (size_t)ftell(fp);
    fseek(fp, 0, SEEK_SET);
    uint8_t *img = malloc(sz), *img2 = malloc(sz);
    ASSERT_TRUE(fread(img, 1, sz, fp) == sz);
    fclose(fp);
    size_t n = (size_t)NT * VOCAB;
    float *fa = malloc(n * 4), *sa = malloc(n * 4), *fb = malloc(n * 4), *sb = malloc(n * 4);
    ingot_backend *be = NULL;
    ASSERT_OK(ingot_backend_new("cpu", NULL, &be, NULL));
    for (int mode = 0; mode <= 1; mode++) { /* 0: repacking on, 1: off */
        memcpy(img2, img, sz);
        ingot_file *f = NULL;
        ASSERT_OK(ingot_file_open_buffer(img2, sz, NULL, &f, NULL));
        ingot_lm *m = open_model(be, f, mode);
        int32_t ga[16], gb[16];
        run(m, fa, sa, ga);
        for (uint64_t i = 0; i < ingot_file_tensor_count(f); i++) {
            ingot_tensor_info ti;
            ASSERT_OK(ingot_file_tensor_at(f, i, &ti));
            if (strcmp(ti.name, "token_embd.weight"))
                memset(img2 + ti.offset, 0x5a, (size_t)ti.nbytes);
        }
        run(m, fb, sb, gb);
        bool same = !memcmp(fa, fb, n * 4) && !memcmp(sa, sb, n * 4);
        if (mode == 0 && pays())
            CHECK(same, "the stored weights were read after open");
        else
            CHECK(!same, "mode %d: poisoning the stored weights changed nothing", mode);
        ingot_lm_free(m);
        ingot_file_close(f);
    }
    ingot_backend_free(be);
    free(img);
    free(img2);
    free(fa);
    free(sa);
    free(fb);
    free(sb);
}

/* Pages of ti's stored bytes (whole pages inside it) present in this process (pagemap bit 63). */
static uint64_t resident(int pm, const ingot_tensor_info *ti)
{
    uintptr_t ps = (uintptr_t)sysconf(_SC_PAGESIZE), a = (uintptr_t)ti->data;
    uint64_t c = 0;
    for (uintptr_t p = (a + ps - 1) / ps; p < (a + (uintptr_t)ti->nbytes) / ps; p++) {
        uint64_t v = 0;
        if (pread(pm, &v, 8, (off_t)(p * 8)) == 8 && v >> 63) c++;
    }
    return c;
}

/* Mapped (the default ingot_file_open): after open no whole page of a repacked tensor is
 * resident in the process (ingot_file_tensor_release), and after a prompt and decode steps
 * still none (nothing reads the mapping near them: the norm vectors were copied before the
 * release); with repacking off they are (the products read them). */
TEST(released_pages_stay_out)
{
    int pm = open("/proc/self/pagemap", O_RDONLY);
    ASSERT_TRUE(pm >= 0);
    ingot_backend *be = NULL;
    ASSERT_OK(ingot_backend_new("cpu", NULL, &be, NULL));
    size_t n = (size_t)NT * VOCAB;
    float *fa = malloc(n * 4), *sa = malloc(n * 4);
    for (int mode = 0; mode <= 1; mode++) {
        ingot_file *f = NULL;
        ASSERT_OK(ingot_file_open(model(), NULL, &f, NULL));
        ingot_lm *m = open_model(be, f, mode);
        uint64_t at_open = 0, after = 0, total = 0;
        for (int pass = 0; pass < 2; pass++) {
            if (pass) {
                int32_t g[16];
                run(m, fa, sa, g);
            }
            for (uint64_t i = 0; i < ingot_file_tensor_count(f); i++) {
                ingot_tensor_info ti;
                ASSERT_OK(ingot_file_tensor_at(f, i, &ti));
                if (ti.dtype != INGOT_DTYPE_Q4_K || !strcmp(ti.name, "token_embd.weight"))
                    continue;
                uint64_t r = resident(pm, &ti);
                if (pass) after += r;
                else at_open += r, total += ti.nbytes / 4096;
            }
        }
        fprintf(stderr, "  repacking %s: %llu / %llu pages of the Q4_K linears resident after "
                "open, %llu after running\n", mode ? "off" : "on", (unsigned long long)at_open,
                (unsigned long long)total, (unsigned long long)after);
        if (mode == 0 && pays()) {
            CHECK(at_open == 0 && after == 0, "released pages resident: %llu at open, %llu after",
                  (unsigned long long)at_open, (unsigned long long)after);
        } else {
            CHECK(after >= total / 2, "repacking off: only %llu of %llu pages resident",
                  (unsigned long long)after, (unsigned long long)total);
        }
        ingot_lm_free(m);
        ingot_file_close(f);
    }
    close(pm);
    free(fa);
    free(sa);
    ingot_backend_free(be);
}

/* ingot_file_tensor_release itself: the pages of a read tensor leave the process and a later
 * read maps them back with the same bytes; nothing is released in pread or copy-on-write mode,
 * for a buffer, or for a tensor without a whole page; RANGE past the last tensor. */
TEST(file_tensor_release)
{
    int pm = open("/proc/self/pagemap", O_RDONLY);
    ASSERT_TRUE(pm >= 0);
    ingot_file *f = NULL;
    ASSERT_OK(ingot_file_open(model(), NULL, &f, NULL));
    ingot_tensor_info ti, tn;
    ASSERT_OK(ingot_file_tensor_find(f, "blk.0.ffn_gate.weight", &ti));
    ASSERT_OK(ingot_file_tensor_find(f, "blk.0.attn_norm.weight", &tn));
    uint8_t *copy = malloc((size_t)ti.nbytes);
    memcpy(copy, ti.data, (size_t)ti.nbytes);
    uint64_t pages = ti.nbytes / 4096 - 1; /* whole pages inside it, at least */
    CHECK(resident(pm, &ti) >= pages, "read, yet %llu pages resident",
          (unsigned long long)resident(pm, &ti));
    uint64_t rel = 1;
    ASSERT_OK(ingot_file_tensor_release(f, ti.index, &rel, NULL));
    CHECK(rel >= pages * 4096 && rel <= ti.nbytes && rel % 4096 == 0, "released %llu of %llu",
          (unsigned long long)rel, (unsigned long long)ti.nbytes);
    CHECK(resident(pm, &ti) == 0, "%llu pages still resident",
          (unsigned long long)resident(pm, &ti));
    CHECK(!memcmp(copy, ti.data, (size_t)ti.nbytes), "the bytes changed after the release");
    ASSERT_OK(ingot_file_tensor_release(f, tn.index, &rel, NULL));
    CHECK(rel == 0, "a 1 KiB tensor released %llu bytes", (unsigned long long)rel);
    ASSERT_ST(ingot_file_tensor_release(f, ingot_file_tensor_count(f), &rel, NULL), INGOT_RANGE);
    ASSERT_OK(ingot_file_tensor_release(f, ti.index, NULL, NULL));
    ingot_file_close(f);
    for (int io = 1; io <= 2; io++) {
        ingot_open_opts oo = {0};
        oo.io = io == 1 ? INGOT_IO_PREAD : INGOT_IO_MMAP_PRIVATE;
        ASSERT_OK(ingot_file_open(model(), &oo, &f, NULL));
        rel = 1;
        ASSERT_OK(ingot_file_tensor_release(f, ti.index, &rel, NULL));
        CHECK(rel == 0, "io mode %d released %llu bytes", io, (unsigned long long)rel);
        ingot_file_close(f);
    }
    FILE *fp = fopen(model(), "rb");
    ASSERT_TRUE(fp != NULL);
    fseek(fp, 0, SEEK_END);
    size_t sz = (size_t)ftell(fp);
    fseek(fp, 0, SEEK_SET);
    uint8_t *img = malloc(sz);
    ASSERT_TRUE(fread(img, 1, sz, fp) == sz);
    fclose(fp);
    ASSERT_OK(ingot_file_open_buffer(img, sz, NULL, &f, NULL));
    rel = 1;
    ASSERT_OK(ingot_file_tensor_release(f, ti.index, &rel, NULL));
    CHECK(rel == 0, "a buffer released %llu bytes", (unsigned long long)rel);
    ingot_file_close(f);
    free(img);
    free(copy);
    close(pm);
}

static void cleanup(void)
{
    if (model_path[0]) unlink(model_path);
}

int main(int argc, char **argv)
{
    static const test_case cases[] = {T(repacked_products_every_level),
                                      T(model_repacked_same_logits_and_tokens),
                                      T(mapping_not_read_after_open), T(released_pages_stay_out),
                                      T(file_tensor_release)};
    int rc = harness_run(cases, sizeof cases / sizeof cases[0], argc, argv);
    cleanup();
    return rc;
}
