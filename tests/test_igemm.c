/*
 * test_igemm.c - the AVX-512 VNNI level's int8 prefill GEMM (igemm.h) through ingot__qgemm:
 * Q8_0, Q4_0, Q4_K (plain and repacked), Q5_K and Q6_K against a double-precision product of
 * the dequantized weights and the exact f32 activations, at and around the tile, panel and pass
 * edges (Q6_K also on random bytes: every 6-bit value, scales -128..127); results independent
 * of the thread count; the route taken (not the f32 one); NaN rows handed to the f32 route;
 * NOMEM before any output is written. Skipped, with a line saying so, where the CPU lacks
 * AVX-512 VNNI.
 */
#include <math.h>
#include <stdlib.h>

#include "cpu/kernels/igemm.h"
#include "cpu/kernels/kernels.h"
#include "harness.h"
#include "ingot/quant.h"
#include "support/ref_gemm.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t rng_next(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return rng;
}
static float frand(void) /* uniform in [-1, 1) */
{
    return (float)((rng_next() >> 40) * (1.0 / 8388608.0)) - 1.0f;
}

static const ingot_dtype types[] = {INGOT_DTYPE_Q8_0, INGOT_DTYPE_Q4_0, INGOT_DTYPE_Q4_K,
                                    INGOT_DTYPE_Q5_K, INGOT_DTYPE_Q6_K};
#define NTYPES 5

/* The level the route runs at, or false (with the line) where this CPU has no AVX-512 VNNI. */
static bool vnni_on(void)
{
    if (!ingot__isa_supported(INGOT__ISA_AVX512_VNNI)) {
        fprintf(stderr, "AVX-512 VNNI not supported here: the int8 prefill route not run\n");
        return false;
    }
    return ingot__set_isa(INGOT__ISA_AVX512_VNNI) == INGOT__ISA_AVX512_VNNI;
}

/* M x K weights of dtype wt (rows ldw bytes apart) from random values, and their decoding. */
typedef struct {
    size_t M, K, ldw;
    uint8_t *W;
    float *Wf;
} wmat;

static wmat make_w(ingot_dtype wt, size_t M, size_t K)
{
    wmat w = {M, K, K / ingot_dtype_block_elems(wt) * ingot_dtype_block_bytes(wt), NULL, NULL};
    w.W = malloc(M * w.ldw);
    w.Wf = malloc(M * K * sizeof(float));
    float *row = malloc(K * sizeof(float));
    for (size_t m = 0; m < M; m++) {
        float sc = 0.02f * (1.0f + (float)(m % 7)); /* rows of different scales */
        for (size_t k = 0; k < K; k++) row[k] = frand() * sc + (m % 3 == 0 ? 0.01f : 0.0f);
        if (ingot_quantize(wt, row, K, w.W + m * w.ldw, w.ldw, NULL) != INGOT_OK) abort();
        if (ingot_dequantize(wt, w.W + m * w.ldw, w.ldw, w.Wf + m * K, K, NULL) != INGOT_OK)
            abort();
    }
    free(row);
    return w;
}

static void free_w(wmat *w) { free(w->W), free(w->Wf); }

/* ref[i * M + m] = Y0 (if acc) + sum_k Wf[m, k] X[i, k] in double */
static void reference(const wmat *w, const float *X, size_t ldx, size_t nx, bool acc,
                      const float *Y0, size_t ldy, double *ref)
{
    for (size_t i = 0; i < nx; i++)
        for (size_t m = 0; m < w->M; m++) {
            double s = acc ? Y0[i * ldy + m] : 0.0;
            for (size_t k = 0; k < w->K; k++)
                s += (double)w->Wf[m * w->K + k] * X[i * ldx + k];
            ref[i * w->M + m] = s;
        }
}

static float *make_x(size_t nx, size_t ldx)
{
    float *X = malloc(nx * ldx * sizeof(float));
    for (size_t i = 0; i < nx * ldx; i++) X[i] = frand() * (1.0f + (float)(i % 5));
    return X;
}

/* The bound: the activations are rounded to int8 per 32 elements, error uniform within
 * +-d/2, d = max|x| / 127, so each element's error has variance d^2 / 12. With the test's
 * activations (uniform on [-a, a], a from 1 to 5 in a repeating pattern, so a block's max|x| is
 * about the largest a in it, 5) the per-element NMSE of x is about (5/127)^2 / 12 over the mean
 * square (mean of a^2 / 3 = 11/3): 3.5e-5, and a dot with independent weights keeps that
 * relative error: NMSE(y) ~ 3.5e-5. Bound 1e-4 (3x margin); f32 accumulation adds ~1e-13. A
 * wrong scale or offset anywhere gives O(1). */
#define NMSE_BOUND 1e-4

/* Y = qgemm (W, X) through the route, with Y's padding and accumulate; the NMSE against the
 * double reference, and the rows' padding left alone. */
static void run_case(ingot__pool *pool, ingot_dtype wt, const wmat *w, size_t nx, size_t ldx,
                     size_t ldy, bool acc, double *e)
{
    *e = INFINITY;
    float *X = make_x(nx, ldx);
    float *Y = malloc(nx * ldy * sizeof(float)), *Y0 = malloc(nx * ldy * sizeof(float));
    double *ref = malloc(nx * w->M * sizeof(double));
    for (size_t i = 0; i < nx * ldy; i++) Y0[i] = Y[i] = acc ? frand() : (float)i;
    reference(w, X, ldx, nx, acc, Y0, ldy, ref);
    ASSERT_OK(ingot__qgemm(pool, wt, w->M, w->K, w->W, w->ldw, NULL, NULL, X, ldx, nx, acc, Y,
                           ldy));
    float *g = malloc(nx * w->M * sizeof(float));
    for (size_t i = 0; i < nx; i++) {
        memcpy(g + i * w->M, Y + i * ldy, w->M * sizeof(float));
        for (size_t m = w->M; m < ldy; m++) ASSERT_TRUE(Y[i * ldy + m] == Y0[i * ldy + m]);
    }
    *e = nmse(g, ref, nx * w->M);
    free(X), free(Y), free(Y0), free(ref), free(g);
}

TEST(igemm_each_type_against_double_at_the_edges)
{
    if (!vnni_on()) return;
    ingot__pool *pool = ingot__pool_create(NULL, 2);
    ASSERT_TRUE(pool != NULL);
    /* M around the 32-row tile and the 64-row task; nx around the 6-row tile, from the route's
     * 32 on; K one and several 256-blocks (and 32-blocks for Q8_0 / Q4_0) */
    static const size_t Ms[] = {1, 31, 33, 64, 65, 97}, nxs[] = {32, 37, 200};
    static const size_t Kk[] = {256, 768}, K32[] = {32, 96, 768};
    double worst[NTYPES] = {0};
    int cases = 0;
    for (size_t t = 0; t < NTYPES; t++) {
        ingot_dtype wt = types[t];
        bool k32 = ingot_dtype_block_elems(wt) == 32;
        const size_t *Ks = k32 ? K32 : Kk;
        size_t nK = k32 ? 3 : 2;
        for (size_t a = 0; a < nK; a++)
            for (size_t b = 0; b < 6; b++) {
                size_t K = Ks[a], M = Ms[b], nx = nxs[(a + b) % 3];
                ASSERT_TRUE(ingot__igemm_ok(wt, K));
                wmat w = make_w(wt, M, K);
                bool acc = (a + b) & 1;
                size_t ldx = K + (b & 1 ? 5 : 0), ldy = M + (b & 2 ? 3 : 0);
                double e;
                run_case(pool, wt, &w, nx, ldx, ldy, acc, &e);
                if (!(e <= NMSE_BOUND))
                    fprintf(stderr, "  %s M %zu K %zu nx %zu acc %d: NMSE %.3g\n",
                            ingot_dtype_name(wt), M, K, nx, acc, e);
                ASSERT_TRUE(e <= NMSE_BOUND);
                if (!acc) ASSERT_TRUE(e > 1e-9); /* int8 activations: not the exact product */
                worst[t] = e > worst[t] ? e : worst[t];
                cases++;
                free_w(&w);
            }
    }
    fprintf(stderr, "  %d cases (bound %g), worst NMSE:", cases, NMSE_BOUND);
    for (size_t t = 0; t < NTYPES; t++)
        fprintf(stderr, " %s %.3g", ingot_dtype_name(types[t]), worst[t]);
    fprintf(stderr, "\n");
    ingot__pool_destroy(pool);
    ingot__isa_reset();
}

TEST(igemm_long_batches_in_passes)
{
    /* 300 rows: two passes of the route's 256 (the second reuses the first's scratch; Q6_K's
     * 16-element sums included) */
    if (!vnni_on()) return;
    static const ingot_dtype wts[] = {INGOT_DTYPE_Q4_K, INGOT_DTYPE_Q6_K};
    for (int c = 0; c < 2; c++) {
        wmat w = make_w(wts[c], 70, 512);
        double e;
        run_case(NULL, wts[c], &w, 300, 512 + 16, 70 + 2, true, &e);
        ASSERT_TRUE(e <= NMSE_BOUND);
        free_w(&w);
    }
    ingot__isa_reset();
}

TEST(igemm_q6_k_every_quant_and_scale)
{
    /* Q6_K blocks of random bytes (d a sane f16 per block): every 6-bit value, 0 and 63
     * included, and int8 scales from -128 to 127, against the double reference; one block with
     * all quants 0 and all 63 and scales -128 / 127, the extremes of the int32 sums. */
    if (!vnni_on()) return;
    size_t M = 50, K = 768, nx = 38;
    wmat w = {M, K, K / 256 * 210, malloc(M * (K / 256 * 210)), malloc(M * K * sizeof(float))};
    for (size_t i = 0; i < M * w.ldw; i++) w.W[i] = (uint8_t)(rng_next() >> 24);
    for (size_t b = 0; b < M * K / 256; b++) {
        float dv = 0.001f * (1.0f + 0.5f * frand());
        uint16_t h;
        ingot_f32_encode(INGOT_DTYPE_F16, &dv, 1, &h, 2, NULL);
        memcpy(w.W + b * 210 + 208, &h, 2);
    }
    memset(w.W, 0xff, 192);         /* row 0, first block: every q6 63 */
    memset(w.W + w.ldw, 0x00, 192); /* row 1, first block: every q6 0 */
    for (int k = 0; k < 16; k++) w.W[192 + k] = (uint8_t)(k & 1 ? 0x80 : 0x7f);
    for (int k = 0; k < 16; k++) w.W[w.ldw + 192 + k] = (uint8_t)(k & 1 ? 0x7f : 0x80);
    for (size_t m = 0; m < M; m++)
        ASSERT_OK(ingot_dequantize(INGOT_DTYPE_Q6_K, w.W + m * w.ldw, w.ldw, w.Wf + m * K, K,
                                   NULL));
    double e;
    run_case(NULL, INGOT_DTYPE_Q6_K, &w, nx, K, M, false, &e);
    fprintf(stderr, "  random-byte Q6_K: NMSE %.3g (bound %g)\n", e, NMSE_BOUND);
    ASSERT_TRUE(e <= NMSE_BOUND);
    free_w(&w);
    ingot__isa_reset();
}

TEST(igemm_same_bits_for_1_2_3_threads)
{
    if (!vnni_on()) return;
    for (size_t t = 0; t < NTYPES; t++) {
        ingot_dtype wt = types[t];
        size_t M = 200, K = 512, nx = 45, ldy = M + 1;
        wmat w = make_w(wt, M, K);
        float *X = make_x(nx, K), *Y[3];
        for (unsigned th = 1; th <= 3; th++) {
            ingot__pool *pool = ingot__pool_create(NULL, th);
            ASSERT_TRUE(pool != NULL);
            Y[th - 1] = calloc(nx * ldy, sizeof(float));
            ASSERT_OK(ingot__qgemm(pool, wt, M, K, w.W, w.ldw, NULL, NULL, X, K, nx, false,
                                   Y[th - 1], ldy));
            ingot__pool_destroy(pool);
        }
        ASSERT_MEM(Y[0], Y[1], nx * ldy * sizeof(float));
        ASSERT_MEM(Y[0], Y[2], nx * ldy * sizeof(float));
        for (int i = 0; i < 3; i++) free(Y[i]);
        free(X);
        free_w(&w);
    }
    ingot__isa_reset();
}

TEST(igemm_repacked_q4_k_same_bits_as_plain)
{
    if (!vnni_on()) return;
    ingot__pool *pool = ingot__pool_create(NULL, 2);
    static const size_t Ms[] = {33, 128}, nxs[] = {32, 71};
    for (int c = 0; c < 2; c++) {
        size_t M = Ms[c], K = 768, nx = nxs[c];
        wmat w = make_w(INGOT_DTYPE_Q4_K, M, K);
        uint8_t *Wr = malloc(M * w.ldw);
        ingot__q4kr_repack(w.W, Wr, M * K / 256);
        float *X = make_x(nx, K + 3);
        float *Y1 = malloc(nx * M * sizeof(float)), *Y2 = malloc(nx * M * sizeof(float));
        for (size_t i = 0; i < nx * M; i++) Y1[i] = Y2[i] = frand();
        ASSERT_OK(ingot__qgemm(pool, INGOT_DTYPE_Q4_K, M, K, w.W, w.ldw, NULL, NULL, X, K + 3,
                               nx, c == 1, Y1, M));
        ASSERT_OK(ingot__qgemm_q4kr(pool, M, K, Wr, NULL, X, K + 3, nx, c == 1, Y2, M));
        ASSERT_MEM(Y1, Y2, nx * M * sizeof(float));
        free(Wr), free(X), free(Y1), free(Y2);
        free_w(&w);
    }
    ingot__pool_destroy(pool);
    ingot__isa_reset();
}

TEST(igemm_route_taken_not_the_f32_one)
{
    /* At the VNNI level the results differ from the f32 route's (ingot__dequant_gemm: the same
     * weights, exact activations); capped at avx512 they are the f32 route's bit for bit. */
    if (!vnni_on()) return;
    for (size_t t = 0; t < NTYPES; t++) {
        ingot_dtype wt = types[t];
        size_t M = 40, K = 256, nx = 33;
        wmat w = make_w(wt, M, K);
        float *X = make_x(nx, K);
        float *Yi = malloc(nx * M * 4), *Yf = malloc(nx * M * 4), *Yc = malloc(nx * M * 4);
        ASSERT_TRUE(ingot__set_isa(INGOT__ISA_AVX512_VNNI) == INGOT__ISA_AVX512_VNNI);
        ASSERT_OK(ingot__qgemm(NULL, wt, M, K, w.W, w.ldw, NULL, NULL, X, K, nx, false, Yi, M));
        ASSERT_OK(ingot__dequant_gemm(NULL, wt, M, K, w.W, w.ldw, X, K, nx, false, Yf, M));
        ASSERT_TRUE(memcmp(Yi, Yf, nx * M * 4) != 0);
        ingot__set_isa(INGOT__ISA_AVX512);
        ASSERT_OK(ingot__qgemm(NULL, wt, M, K, w.W, w.ldw, NULL, NULL, X, K, nx, false, Yc, M));
        ASSERT_MEM(Yc, Yf, nx * M * 4);
        free(X), free(Yi), free(Yf), free(Yc);
        free_w(&w);
    }
    ingot__isa_reset();
}

TEST(igemm_nan_rows_take_the_f32_route)
{
    /* A NaN or inf in X: the f32 route's results, bits included (one pass and two) */
    if (!vnni_on()) return;
    static const size_t nxs[] = {40, 260};
    static const ingot_dtype wts[] = {INGOT_DTYPE_Q8_0, INGOT_DTYPE_Q6_K};
    for (int c = 0; c < 4; c++) {
        ingot_dtype wt = wts[c / 2];
        size_t M = 48, K = 256, nx = nxs[c % 2];
        wmat w = make_w(wt, M, K);
        float *X = make_x(nx, K);
        X[(nx - 1) * K + 7] = c % 2 ? INFINITY : NAN;
        float *Yi = malloc(nx * M * 4), *Yf = malloc(nx * M * 4);
        ASSERT_OK(ingot__qgemm(NULL, wt, M, K, w.W, w.ldw, NULL, NULL, X, K, nx, false, Yi, M));
        ASSERT_OK(ingot__dequant_gemm(NULL, wt, M, K, w.W, w.ldw, X, K, nx, false, Yf, M));
        ASSERT_MEM(Yi, Yf, nx * M * 4);
        ASSERT_TRUE(!isfinite(Yi[(nx - 1) * M]));
        free(X), free(Yi), free(Yf);
        free_w(&w);
    }
    ingot__isa_reset();
}

/* An allocator that fails from its limit-th call on (the pool's own allocations included). */
typedef struct {
    int calls, limit;
} failing;
static void *fail_alloc(void *ctx, size_t size, size_t align)
{
    failing *f = ctx;
    if (f->calls++ >= f->limit) return NULL;
    return aligned_alloc(align < 64 ? 64 : align, (size + 63) & ~(size_t)63);
}
static void fail_free(void *ctx, void *p, size_t size)
{
    (void)ctx, (void)size;
    free(p);
}

TEST(igemm_nomem_before_any_output)
{
    /* Pool scratch failing at every allocation in turn (worker 1's panel, worker 0's
     * activations and panel): NOMEM with Y untouched, or OK with the bits of a pool that does
     * not fail. */
    if (!vnni_on()) return;
    static const ingot_dtype wts[] = {INGOT_DTYPE_Q4_K, INGOT_DTYPE_Q6_K};
    for (int c = 0; c < 2; c++) {
        ingot_dtype wt = wts[c];
        size_t M = 70, K = 512, nx = 40;
        wmat w = make_w(wt, M, K);
        float *X = make_x(nx, K), *Y = malloc(nx * M * 4), *want = malloc(nx * M * 4);
        ASSERT_OK(ingot__qgemm(NULL, wt, M, K, w.W, w.ldw, NULL, NULL, X, K, nx, false, want, M));
        int nomem = 0, ok = 0;
        for (int limit = 0; limit < 64 && ok < 2; limit++) {
            failing f = {0, limit};
            ingot_allocator a = {fail_alloc, fail_free, &f};
            ingot__pool *pool = ingot__pool_create(&a, 2);
            if (!pool) continue;
            for (size_t i = 0; i < nx * M; i++) Y[i] = -7.0f;
            ingot_status st =
                ingot__qgemm(pool, wt, M, K, w.W, w.ldw, NULL, NULL, X, K, nx, false, Y, M);
            if (st == INGOT_NOMEM) {
                nomem++;
                for (size_t i = 0; i < nx * M; i++) ASSERT_TRUE(Y[i] == -7.0f);
            } else {
                ASSERT_OK(st);
                ok++;
                ASSERT_MEM(Y, want, nx * M * 4);
            }
            ingot__pool_destroy(pool);
        }
        fprintf(stderr, "  %s: %d limits gave NOMEM (Y untouched), %d OK\n", ingot_dtype_name(wt),
                nomem, ok);
        ASSERT_TRUE(nomem >= 1 && ok >= 1);
        free(X), free(Y), free(want);
        free_w(&w);
    }
    ingot__isa_reset();
}

RUN_TESTS(T(igemm_each_type_against_double_at_the_edges), T(igemm_long_batches_in_passes),
          T(igemm_q6_k_every_quant_and_scale), T(igemm_same_bits_for_1_2_3_threads),
          T(igemm_repacked_q4_k_same_bits_as_plain), T(igemm_route_taken_not_the_f32_one),
          T(igemm_nan_rows_take_the_f32_route), T(igemm_nomem_before_any_output))
