/*
 * test_kernels.c - the CPU backend's kernels (src/backend/cpu/kernels) against plain double
 * precision references written here: GEMM over edge shapes, transposes, alpha/beta and leading
 * dimensions on every ISA this CPU has, the streaming path for a few rows of C; results bitwise
 * independent of the thread count; GEMV both ways; int8 GEMV exact; Q8_0 quantisation and GEMV
 * against a block-by-block definition.
 */
#include <math.h>
#include <stdlib.h>

#include "cpu/kernels/amx.h"
#include "cpu/kernels/igemm.h"
#include "cpu/kernels/kernels.h"
#include "harness.h"
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

/* Levels this CPU runs (each test loops over them and leaves the best one set); the names of
 * those it cannot run are printed once. */
static bool level_on(int isa)
{
    static bool said;
    if (!said) {
        said = true;
        fprintf(stderr, "ISA levels run:");
        for (int l = 0; l < INGOT__ISA_COUNT; l++)
            if (ingot__isa_supported((ingot__isa)l))
                fprintf(stderr, " %s", ingot__isa_name((ingot__isa)l));
        fprintf(stderr, "; not supported here (not run):");
        int none = 1;
        for (int l = 0; l < INGOT__ISA_COUNT; l++)
            if (!ingot__isa_supported((ingot__isa)l))
                fprintf(stderr, " %s", ingot__isa_name((ingot__isa)l)), none = 0;
        fprintf(stderr, "%s\n", none ? " none" : "");
        fprintf(stderr, "streaming kernels: quantized: prefetch %s, %u read streams; F16 / BF16: "
                "prefetch %s, %u read streams; f32: %u rows a pass\n",
                ingot__cpu_prefetch() ? "on" : "off", ingot__gemv_streams(),
                ingot__cpu_prefetch_half() ? "on" : "off", ingot__gemv_streams_half(),
                ingot__sgemv_rows());
    }
    if (!ingot__isa_supported((ingot__isa)isa)) return false;
    return ingot__set_isa((ingot__isa)isa) == (ingot__isa)isa;
}

TEST(sgemm_shapes_isas_threads)
{
    static const size_t dims[] = {1, 5, 6, 7, 16, 17, 33, 130};
    static const size_t ks[] = {0, 1, 3, 8, 255, 257, 300};
    ingot__pool *pool2 = ingot__pool_create(NULL, 2);
    ASSERT_TRUE(pool2 != NULL);
    int cases = 0;
    for (int isa = 0; isa < INGOT__ISA_COUNT; isa++) {
        if (!level_on(isa)) continue;
        for (size_t mi = 0; mi < 8; mi++)
            for (size_t ni = 0; ni < 8; ni++)
                for (size_t ki = 0; ki < 7; ki++) {
                    if ((mi + ni + ki) % 3 && dims[mi] > 7 && dims[ni] > 7) continue; /* thin */
                    size_t M = dims[mi], N = dims[ni], K = ks[ki];
                    int variant = (int)(mi * 7 + ni * 3 + ki);
                    bool ta = variant & 1, tb = variant & 2;
                    float alpha = (variant & 4) ? 0.5f : 1.0f;
                    float beta = (variant % 3 == 0) ? 0.0f : (variant % 3 == 1 ? 1.0f : -2.0f);
                    size_t lda = (ta ? M : K) + (variant & 8 ? 3 : 0);
                    size_t ldb = (tb ? K : N) + (variant & 16 ? 5 : 0);
                    size_t ldc = N + (variant & 32 ? 2 : 0);
                    size_t arows = ta ? K : M, brows = tb ? N : K;
                    float *A = malloc((arows * lda + 1) * sizeof *A);
                    float *B = malloc((brows * ldb + 1) * sizeof *B);
                    float *C0 = malloc((M * ldc + 1) * sizeof *C0);
                    float *C1 = malloc((M * ldc + 1) * sizeof *C1);
                    float *C2 = malloc((M * ldc + 1) * sizeof *C2);
                    double *R = malloc((M * N + 1) * sizeof *R);
                    for (size_t i = 0; i < arows * lda; i++) A[i] = frand();
                    for (size_t i = 0; i < brows * ldb; i++) B[i] = frand();
                    for (size_t i = 0; i < M * ldc; i++) C0[i] = beta == 0.0f ? NAN : frand();
                    memcpy(C1, C0, M * ldc * sizeof *C0);
                    memcpy(C2, C0, M * ldc * sizeof *C0);
                    ref_sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C0, ldc, R);
                    CHECK(ingot__sgemm(NULL, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C1,
                                       ldc) == INGOT_OK, "sgemm 1 thread");
                    CHECK(ingot__sgemm(pool2, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C2,
                                       ldc) == INGOT_OK, "sgemm 2 threads");
                    float *packed = malloc((M * N + 1) * sizeof *packed);
                    for (size_t i = 0; i < M; i++) memcpy(packed + i * N, C1 + i * ldc, N * 4);
                    double e = nmse(packed, R, M * N);
                    CHECK(e <= 1e-10, "isa %s M=%zu N=%zu K=%zu ta=%d tb=%d a=%g b=%g: nmse %g",
                          ingot__isa_name((ingot__isa)isa), M, N, K, ta, tb, alpha, beta, e);
                    CHECK(memcmp(C1, C2, M * ldc * sizeof *C1) == 0 || (beta == 0.0f && ldc != N),
                          "isa %s M=%zu N=%zu K=%zu: 1 and 2 threads differ",
                          ingot__isa_name((ingot__isa)isa), M, N, K);
                    if (ldc != N) /* padding columns of C are never written */
                        for (size_t i = 0; i < M; i++)
                            for (size_t j = N; j < ldc; j++)
                                CHECK(memcmp(&C1[i * ldc + j], &C0[i * ldc + j], 4) == 0,
                                      "padding of C written at %zu,%zu", i, j);
                    free(A), free(B), free(C0), free(C1), free(C2), free(R), free(packed);
                    cases++;
                }
    }
    ingot__set_isa(ingot__cpu_isa());
    ingot__pool_destroy(pool2);
    ASSERT_TRUE(cases > 100);
}

TEST(sgemm_large_blocks_cross)
{
    /* Crosses every blocking boundary (KC 256 / 512, MC 120 / 48, NC 3072 / 1536) at least once. */
    size_t M = 250, N = 3100, K = 520;
    float *A = malloc(M * K * 4), *B = malloc(K * N * 4), *C = malloc(M * N * 4);
    double *R = malloc(M * N * sizeof *R);
    for (size_t i = 0; i < M * K; i++) A[i] = frand();
    for (size_t i = 0; i < K * N; i++) B[i] = frand();
    ingot__pool *pool = ingot__pool_create(NULL, 2);
    /* reference on a sample of rows (the full double loop would dominate the test's time) */
    for (size_t i = 0; i < M; i += 37)
        ref_sgemm(false, false, 1, N, K, 1.0f, A + i * K, K, B, N, 0.0f, NULL, 0, R + i * N);
    for (int isa = 0; isa < INGOT__ISA_COUNT; isa++) {
        if (!level_on(isa)) continue;
        ASSERT_OK(ingot__sgemm(pool, false, false, M, N, K, 1.0f, A, K, B, N, 0.0f, C, N));
        double num = 0, den = 0;
        for (size_t i = 0; i < M; i += 37)
            for (size_t j = 0; j < N; j++) {
                double d = C[i * N + j] - R[i * N + j];
                num += d * d, den += R[i * N + j] * R[i * N + j];
            }
        CHECK(num / den <= 1e-10, "%s: nmse %g", ingot__isa_name((ingot__isa)isa), num / den);
    }
    ingot__set_isa(ingot__cpu_isa());
    ingot__pool_destroy(pool);
    free(A), free(B), free(C), free(R);
}

/* The AVX-512 level's loop order (issue 16, eighth round): each 12-row strip of an A block runs
 * across the whole 512-column B block before the next strip, B panels packed during the first
 * strip, the next C tile prefetched during the current one. Shapes at +-1 of its blocks (MC 48,
 * KC 512, NC 512) and of the AVX2 ones (MC 120, KC 256), every transpose, padded leading
 * dimensions; every element against a double reference, and the same bits at 1, 2, 3 threads. */
TEST(sgemm_block_edges_rows_first)
{
    static const size_t shapes[][3] = {{49, 513, 513}, {97, 1030, 511}, {100, 511, 1025},
                                       {121, 1025, 512}, {47, 512, 257}, {241, 65, 1030}};
    ingot__pool *pools[3] = {NULL, ingot__pool_create(NULL, 2), ingot__pool_create(NULL, 3)};
    ASSERT_TRUE(pools[1] != NULL && pools[2] != NULL);
    int cases = 0;
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        size_t M = shapes[si][0], N = shapes[si][1], K = shapes[si][2];
        bool ta = si & 1, tb = (si >> 1) & 1;
        float beta = si % 3 == 0 ? 0.0f : 0.5f;
        size_t lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 5, ldc = N + 2;
        size_t arows = ta ? K : M, brows = tb ? N : K;
        float *A = malloc(arows * lda * sizeof *A), *B = malloc(brows * ldb * sizeof *B);
        float *C0 = malloc(M * ldc * sizeof *C0), *C[3], *packed = malloc(M * N * sizeof *packed);
        double *R = malloc(M * N * sizeof *R);
        ASSERT_TRUE(A && B && C0 && packed && R);
        for (int t = 0; t < 3; t++) ASSERT_TRUE((C[t] = malloc(M * ldc * sizeof *C0)) != NULL);
        for (size_t i = 0; i < arows * lda; i++) A[i] = frand();
        for (size_t i = 0; i < brows * ldb; i++) B[i] = frand();
        for (size_t i = 0; i < M * ldc; i++) C0[i] = frand();
        ref_sgemm(ta, tb, M, N, K, 1.0f, A, lda, B, ldb, beta, C0, ldc, R);
        for (int isa = 0; isa < INGOT__ISA_COUNT; isa++) {
            if (!level_on(isa)) continue;
            for (int t = 0; t < 3; t++) {
                memcpy(C[t], C0, M * ldc * sizeof *C0);
                ASSERT_OK(ingot__sgemm(pools[t], ta, tb, M, N, K, 1.0f, A, lda, B, ldb, beta, C[t],
                                       ldc));
            }
            for (size_t i = 0; i < M; i++) memcpy(packed + i * N, C[0] + i * ldc, N * 4);
            double e = nmse(packed, R, M * N);
            CHECK(e <= 1e-10, "isa %s M=%zu N=%zu K=%zu ta=%d tb=%d: nmse %g",
                  ingot__isa_name((ingot__isa)isa), M, N, K, ta, tb, e);
            for (int t = 1; t < 3; t++)
                CHECK(memcmp(C[0], C[t], M * ldc * sizeof *C0) == 0,
                      "isa %s M=%zu N=%zu K=%zu: 1 and %d threads differ",
                      ingot__isa_name((ingot__isa)isa), M, N, K, t + 1);
            for (size_t i = 0; i < M; i++) /* the padding columns of C are never written */
                CHECK(memcmp(C[0] + i * ldc + N, C0 + i * ldc + N, 2 * sizeof *C0) == 0,
                      "isa %s: padding of C row %zu written", ingot__isa_name((ingot__isa)isa), i);
            cases++;
        }
        for (int t = 0; t < 3; t++) free(C[t]);
        free(A), free(B), free(C0), free(packed), free(R);
    }
    ingot__set_isa(ingot__cpu_isa());
    ingot__pool_destroy(pools[1]);
    ingot__pool_destroy(pools[2]);
    ASSERT_TRUE(cases >= 6);
}

TEST(sgemm_small_m_streaming)
{
    /* Up to 16 rows of C, B is streamed rather than packed (AVX2): strips of 2048 columns, eight
     * k at a time, 2 x 4 dot-product tiles for B^T. Shapes cross those boundaries; results
     * must match a double reference and be bitwise the same with 1 and 2 threads. */
    static const size_t ms[] = {1, 3, 16}, ns[] = {5, 2053}, ks[] = {7, 8, 37};
    ingot__pool *pool2 = ingot__pool_create(NULL, 2);
    ASSERT_TRUE(pool2 != NULL);
    for (int isa = 0; isa < INGOT__ISA_COUNT; isa++) {
    if (!level_on(isa)) continue;
    for (int mi = 0; mi < 3; mi++)
        for (int ni = 0; ni < 2; ni++)
            for (int ki = 0; ki < 3; ki++)
                for (int tb = 0; tb < 2; tb++) {
                    size_t M = ms[mi], N = ns[ni], K = ks[ki], lda = K + 1;
                    size_t ldb = tb ? K + 2 : N + 3, ldc = N + 1;
                    float beta = (mi + ki) % 2 ? 0.5f : 0.0f;
                    size_t brows = tb ? N : K;
                    float *A = malloc(M * lda * 4), *B = malloc(brows * ldb * 4);
                    float *C0 = malloc(M * ldc * 4), *C1 = malloc(M * ldc * 4);
                    float *C2 = malloc(M * ldc * 4), *got = malloc(M * N * 4);
                    double *R = malloc(M * N * sizeof *R);
                    for (size_t i = 0; i < M * lda; i++) A[i] = frand();
                    for (size_t i = 0; i < brows * ldb; i++) B[i] = frand();
                    for (size_t i = 0; i < M * ldc; i++) C0[i] = frand();
                    memcpy(C1, C0, M * ldc * 4);
                    memcpy(C2, C0, M * ldc * 4);
                    ref_sgemm(false, tb, M, N, K, 1.5f, A, lda, B, ldb, beta, C0, ldc, R);
                    ASSERT_EQ(ingot__sgemm(NULL, false, tb, M, N, K, 1.5f, A, lda, B, ldb, beta,
                                           C1, ldc), INGOT_OK);
                    ASSERT_EQ(ingot__sgemm(pool2, false, tb, M, N, K, 1.5f, A, lda, B, ldb, beta,
                                           C2, ldc), INGOT_OK);
                    for (size_t i = 0; i < M; i++) memcpy(got + i * N, C1 + i * ldc, N * 4);
                    double e = nmse(got, R, M * N);
                    CHECK(e <= 1e-10, "%s M=%zu N=%zu K=%zu tb=%d: nmse %g",
                          ingot__isa_name((ingot__isa)isa), M, N, K, tb, e);
                    CHECK(memcmp(C1, C2, M * ldc * 4) == 0,
                          "M=%zu N=%zu K=%zu tb=%d: 1 and 2 threads differ", M, N, K, tb);
                    for (size_t i = 0; i < M; i++) /* the padding column is never written */
                        CHECK(memcmp(&C1[i * ldc + N], &C0[i * ldc + N], 4) == 0, "pad %zu", i);
                    free(A), free(B), free(C0), free(C1), free(C2), free(got), free(R);
                }
    }
    ingot__set_isa(ingot__cpu_isa());
    ingot__pool_destroy(pool2);
}

TEST(sgemv_both_ways)
{
    ingot__pool *pool = ingot__pool_create(NULL, 2);
    for (int isa = 0; isa < INGOT__ISA_COUNT; isa++) {
        if (!level_on(isa)) continue;
        static const size_t ms[] = {1, 7, 64, 65, 300}, ns[] = {1, 9, 31, 32, 1100};
        for (int a = 0; a < 5; a++)
            for (int b = 0; b < 5; b++) {
                size_t M = ms[a], N = ns[b], lda = N + 1;
                float *A = malloc(M * lda * 4), *x = malloc((M > N ? M : N) * 4);
                float *y = malloc((M > N ? M : N) * 4), *y0 = malloc((M > N ? M : N) * 4);
                double *r = malloc((M > N ? M : N) * sizeof *r);
                for (size_t i = 0; i < M * lda; i++) A[i] = frand();
                for (size_t i = 0; i < (M > N ? M : N); i++) x[i] = frand(), y0[i] = frand();
                for (int t = 0; t < 2; t++) { /* t = 1: y = 2 A^T x - y */
                    size_t out = t ? N : M, in = t ? M : N;
                    double *mag = malloc(out * sizeof *mag); /* sum of |terms| of each output */
                    for (size_t i = 0; i < out; i++) {
                        double s = 0, m = 0;
                        for (size_t k = 0; k < in; k++) {
                            double term = (double)(t ? A[k * lda + i] : A[i * lda + k]) * x[k];
                            s += term, m += fabs(term);
                        }
                        r[i] = t ? 2.0 * s - y0[i] : s;
                        mag[i] = t ? 2.0 * m + fabs(y0[i]) : m;
                    }
                    memcpy(y, y0, out * 4);
                    ingot__sgemv(pool, t, M, N, t ? 2.0f : 1.0f, A, lda, x, t ? -1.0f : 0.0f, y);
                    float *y1 = malloc(out * 4);
                    memcpy(y1, y0, out * 4);
                    ingot__sgemv(NULL, t, M, N, t ? 2.0f : 1.0f, A, lda, x, t ? -1.0f : 0.0f, y1);
                    CHECK(memcmp(y, y1, out * 4) == 0, "%s sgemv%s M=%zu N=%zu: 1 and 2 threads differ (%g vs %g)", ingot__isa_name((ingot__isa)isa), t ? "^T" : "", M, N, y[out - 1], y1[out - 1]);
                    free(y1);
                    /* f32 sums in any order: each output within (terms + 2) roundings of the
                     * sum of its terms' magnitudes (the forward error bound; an NMSE of a few
                     * outputs can be large where a sum cancels) */
                    for (size_t i = 0; i < out; i++)
                        CHECK(fabs(y[i] - r[i]) <= (double)(in + 2) * 0x1p-24 * mag[i],
                              "%s sgemv%s M=%zu N=%zu: output %zu off by %g (terms %g)",
                              ingot__isa_name((ingot__isa)isa), t ? "^T" : "", M, N, i,
                              fabs(y[i] - r[i]), mag[i]);
                    free(mag);
                }
                free(A), free(x), free(y), free(y0), free(r);
            }
    }
    ingot__set_isa(ingot__cpu_isa());
    ingot__pool_destroy(pool);
}

/* A row's bits do not depend on which rows share its pass (one, eight or sixteen at a time, at
 * any offset): each row of a matrix against the same row of the matrix started 1..17 rows
 * later, for short rows (the 16-row path), long ones and k tails. Fails if the paths reduce a
 * row in different orders. */
TEST(sgemv_rows_same_bits_any_offset)
{
    for (int isa = 0; isa < INGOT__ISA_COUNT; isa++) {
        if (!level_on(isa)) continue;
        static const size_t ns[] = {1, 9, 16, 31, 64, 172, 1024, 1100};
        for (size_t b = 0; b < sizeof ns / sizeof ns[0]; b++) {
            size_t M = 200, N = ns[b], lda = N + 3;
            float *A = malloc(M * lda * 4), *x = malloc(N * 4), *y = malloc(M * 4);
            float *y2 = malloc(M * 4);
            for (size_t i = 0; i < M * lda; i++) A[i] = frand();
            for (size_t i = 0; i < N; i++) x[i] = frand();
            ingot__set_isa((ingot__isa)isa);
            ingot__set_sgemv_rows(16);
            ingot__sgemv(NULL, false, M, N, 1.0f, A, lda, x, 0.0f, y);
            /* from every offset, and with 16, 8 or 1 rows read together */
            for (unsigned pass = 16; pass >= 1; pass = pass == 16 ? 8 : pass == 8 ? 1 : 0) {
                CHECK(ingot__set_sgemv_rows(pass) == pass, "sgemv rows %u not set", pass);
                for (size_t off = pass == 16 ? 1 : 0; off <= 17; off++) {
                    ingot__sgemv(NULL, false, M - off, N, 1.0f, A + off * lda, lda, x, 0.0f, y2);
                    CHECK(memcmp(y + off, y2, (M - off) * 4) == 0,
                          "%s sgemv N=%zu, %u rows a pass: rows from offset %zu differ",
                          ingot__isa_name((ingot__isa)isa), N, pass, off);
                }
            }
            ingot__set_sgemv_rows(0);
            free(A), free(x), free(y), free(y2);
        }
    }
    ingot__set_isa(ingot__cpu_isa());
}

/* ---- quantized dots ---- */

static double half(uint16_t h)
{
    int sg = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : ldexp(m + 1024, e - 25);
    return sg ? -v : v;
}

static uint16_t f16_bits(float v)
{
    uint16_t h;
    ingot_f32_encode(INGOT_DTYPE_F16, &v, 1, &h, 2, NULL);
    return h;
}

/* Random but valid weight rows of dtype wt: random quants and scales of a size that keeps the
 * dequantized values around 1 (K-quant d and dmin small, their 6-bit multipliers random). */
static void fill_weights(ingot_dtype wt, uint8_t *w, size_t rows, size_t K, float *wscale)
{
    size_t bb = ingot_dtype_block_bytes(wt), be = ingot_dtype_block_elems(wt);
    size_t n = wt == INGOT_DTYPE_I8 ? rows * K : rows * (K / be) * bb;
    for (size_t i = 0; i < n; i++) w[i] = (uint8_t)(rng_next() >> 24);
    if (wt == INGOT_DTYPE_I8) {
        for (size_t r = 0; r < rows; r++) wscale[r] = 0.01f * (1.0f + frand());
        w[0] = 0x80; /* -128 and 127: the extreme products */
        if (n > 1) w[1] = 0x7f;
        return;
    }
    for (size_t b = 0; b < n / bb; b++) {
        uint8_t *blk = w + b * bb;
        uint16_t d = f16_bits(frand() * 0.05f), dm = f16_bits(0.02f * (1.0f + frand()));
        if (wt == INGOT_DTYPE_Q6_K) memcpy(blk + 208, &d, 2);
        else memcpy(blk, &d, 2);
        if (wt == INGOT_DTYPE_Q4_K || wt == INGOT_DTYPE_Q5_K) {
            d = f16_bits(0.002f * (1.0f + frand()));
            memcpy(blk, &d, 2);
            memcpy(blk + 2, &dm, 2);
        }
    }
    if (wt == INGOT_DTYPE_Q8_0) w[2] = 0x80; /* a -128 quant (GGML's quantizer never makes one) */
}

static const ingot_dtype qtypes[] = {INGOT_DTYPE_I8, INGOT_DTYPE_Q8_0, INGOT_DTYPE_Q4_0,
                                     INGOT_DTYPE_Q4_K, INGOT_DTYPE_Q5_K, INGOT_DTYPE_Q6_K};

/* Reference: the weights dequantized by the core decoder (bit-exact with gguf-py) against the
 * unquantized activations, in double. */
static void ref_qgemm(ingot_dtype wt, const uint8_t *w, size_t ldw, const float *wscale, size_t M,
                      size_t K, const float *X, size_t nx, double *R)
{
    float *row = malloc(K * 4);
    for (size_t m = 0; m < M; m++) {
        if (wt == INGOT_DTYPE_I8)
            for (size_t k = 0; k < K; k++) row[k] = wscale[m] * (float)(int8_t)w[m * ldw + k];
        else
            ingot_dequantize(wt, w + m * ldw, ldw, row, K, NULL);
        for (size_t i = 0; i < nx; i++) {
            double s = 0;
            for (size_t k = 0; k < K; k++) s += (double)row[k] * X[i * K + k];
            R[i * M + m] = s;
        }
    }
    free(row);
}

/* The 256-bit Q4_0 dot rearranges the activations of rows up to 512 blocks (K <= 16384) once per
 * call and pairs them per row on longer rows (issue 16, eighth round): K at both sides of that
 * limit and with a tail past the last 8 blocks, 13 rows; every level against the double reference
 * on the activations as quantized (the same integer dots and f32 rounding only: NMSE <= 1e-9),
 * and each level's rows bitwise the same called one at a time as all together. */
TEST(q4_0_activation_rearranged_edges)
{
    static const size_t ks[] = {16384, 16416, 16640, 8192 + 96};
    size_t M = 13;
    int cases = 0;
    for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
        size_t K = ks[ki], ldw = K / 32 * 18;
        uint8_t *w = malloc(M * ldw), *xq = aligned_alloc(64, ingot__qx_bytes(INGOT_DTYPE_Q4_0, K));
        float *ws = malloc(M * 4), *X = malloc(K * 4), *Xq = malloc(K * 4);
        float *Y = malloc(M * 4), *Y1 = malloc(M * 4);
        double *R = malloc(M * sizeof *R);
        ASSERT_TRUE(w && xq && ws && X && Xq && Y && Y1 && R);
        fill_weights(INGOT_DTYPE_Q4_0, w, M, K, ws);
        for (size_t k = 0; k < K; k++) X[k] = frand();
        ingot__qx_quantize(INGOT_DTYPE_Q4_0, X, K, xq);
        const float *d = (const float *)(const void *)(xq + (K + 63) / 64 * 64);
        for (size_t k = 0; k < K; k++) Xq[k] = (float)((const int8_t *)xq)[k] * d[k / 32];
        ref_qgemm(INGOT_DTYPE_Q4_0, w, ldw, ws, M, K, Xq, 1, R);
        for (int isa = 0; isa < INGOT__ISA_COUNT; isa++) {
            if (!level_on(isa)) continue;
            ASSERT_OK(ingot__qgemm(NULL, INGOT_DTYPE_Q4_0, M, K, w, ldw, ws, xq, NULL, 0, 1, false,
                                   Y, M));
            double e = nmse(Y, R, M);
            CHECK(e <= 1e-9, "%s K=%zu: nmse %g", ingot__isa_name((ingot__isa)isa), K, e);
            for (size_t r = 0; r < M; r++)
                ASSERT_OK(ingot__qgemm(NULL, INGOT_DTYPE_Q4_0, 1, K, w + r * ldw, ldw, ws + r, xq,
                                       NULL, 0, 1, false, Y1 + r, 1));
            CHECK(memcmp(Y, Y1, M * 4) == 0, "%s K=%zu: rows alone differ",
                  ingot__isa_name((ingot__isa)isa), K);
            cases++;
        }
        free(w), free(xq), free(ws), free(X), free(Xq), free(Y), free(Y1), free(R);
    }
    ingot__set_isa(ingot__cpu_isa());
    ASSERT_TRUE(cases >= 4);
}

TEST(qdot_levels_conformance)
{
    /* Every weight type on every level: rows of 1, 17 and 172, K of one block, of blocks that
     * leave a tail after the 8- and 16-block steps, and long rows; 1, 3 and 17 activation rows.
     * Scalar against the double reference on the dequantized weights and the activations as
     * quantized (NMSE <= 1e-9: f32 rounding only) and, over all shapes of a type, on the
     * unquantized activations (NMSE <= 5e-4: the 8-bit activations' error); every other level
     * against scalar (the same integer dots: NMSE <= 1e-9), accumulate included. */
    static const size_t ms[] = {1, 17, 172}, nxs[] = {1, 3, 17};
    ingot__pool *pool = ingot__pool_create(NULL, 2);
    int cases = 0;
    double num[6] = {0}, den[6] = {0};
    for (size_t ti = 0; ti < sizeof qtypes / sizeof qtypes[0]; ti++) {
        ingot_dtype wt = qtypes[ti];
        size_t be = wt == INGOT_DTYPE_I8 ? 1 : ingot_dtype_block_elems(wt);
        size_t ks32[] = {32, 96, 544, 4128}, ksk[] = {256, 768, 4352};
        size_t ksi[] = {1, 33, 100, 1000, 4097};
        const size_t *ks = be == 32 ? ks32 : be == 256 ? ksk : ksi;
        size_t nk = be == 32 ? 4 : be == 256 ? 3 : 5;
        for (size_t ki = 0; ki < nk; ki++)
            for (size_t mi = 0; mi < 3; mi++) {
                size_t K = ks[ki], M = ms[mi], nx = nxs[(ki + mi) % 3];
                size_t ldw = wt == INGOT_DTYPE_I8 ? K : K / be * ingot_dtype_block_bytes(wt);
                uint8_t *w = malloc(M * ldw);
                float *ws = malloc(M * 4), *X = malloc(nx * K * 4);
                fill_weights(wt, w, M, K, ws);
                for (size_t i = 0; i < nx * K; i++) X[i] = frand();
                if (K >= 64) memset(X, 0, 32 * 4); /* an all-zero block: d = 0 */
                size_t xb = ingot__qx_bytes(wt, K);
                uint8_t *xq = aligned_alloc(64, nx * xb);
                double *R = malloc(nx * M * sizeof *R);
                float *Y0 = malloc(nx * M * 4), *Y = malloc(nx * M * 4), *Y2 = malloc(nx * M * 4);
                ref_qgemm(wt, w, ldw, ws, M, K, X, nx, R);
                ingot__set_isa(INGOT__ISA_SCALAR);
                for (size_t i = 0; i < nx; i++) ingot__qx_quantize(wt, X + i * K, K, xq + i * xb);
                ASSERT_OK(ingot__qgemm(NULL, wt, M, K, w, ldw, ws, xq, NULL, 0, nx, false, Y0, M));
                /* the same reference on the quantized activations (q * d, as laid out): only
                 * f32 rounding apart */
                float *Xq = malloc(nx * K * 4);
                double *Rq = malloc(nx * M * sizeof *Rq);
                for (size_t i = 0; i < nx; i++) {
                    const uint8_t *p = xq + i * xb;
                    const float *d = (const float *)(const void *)(p + (K + 63) / 64 * 64);
                    size_t B = wt == INGOT_DTYPE_I8 ? K : be;
                    for (size_t k = 0; k < K; k++)
                        Xq[i * K + k] = (float)(int8_t)p[ingot__qx_index(wt, k)] * d[k / B];
                }
                ref_qgemm(wt, w, ldw, ws, M, K, Xq, nx, Rq);
                double e0 = nmse(Y0, Rq, nx * M);
                CHECK(e0 <= 1e-9, "%s scalar M=%zu K=%zu nx=%zu: nmse %g vs the quantized-x "
                      "reference", ingot_dtype_name(wt), M, K, nx, e0);
                for (size_t i = 0; i < nx * M; i++) {
                    num[ti] += (Y0[i] - R[i]) * (Y0[i] - R[i]);
                    den[ti] += R[i] * R[i];
                }
                free(Xq), free(Rq);
                for (int isa = 1; isa < INGOT__ISA_COUNT; isa++) {
                    if (!level_on(isa)) continue;
                    for (size_t i = 0; i < nx; i++)
                        ingot__qx_quantize(wt, X + i * K, K, xq + i * xb);
                    ASSERT_OK(
                        ingot__qgemm(pool, wt, M, K, w, ldw, ws, xq, NULL, 0, nx, false, Y, M));
                    double d[1];
                    for (size_t i = 0; i < nx * M; i++) Y2[i] = 1.0f; /* accumulate onto ones */
                    ASSERT_OK(
                        ingot__qgemm(NULL, wt, M, K, w, ldw, ws, xq, NULL, 0, nx, true, Y2, M));
                    double *R0 = malloc(nx * M * sizeof *R0), *R1 = malloc(nx * M * sizeof *R1);
                    for (size_t i = 0; i < nx * M; i++) R0[i] = Y0[i], R1[i] = Y[i] + 1.0;
                    d[0] = nmse(Y, R0, nx * M);
                    CHECK(d[0] <= 1e-9, "%s %s M=%zu K=%zu nx=%zu: nmse %g vs scalar",
                          ingot_dtype_name(wt), ingot__isa_name((ingot__isa)isa), M, K, nx, d[0]);
                    CHECK(nmse(Y2, R1, nx * M) <= 1e-12, "%s %s: accumulate", ingot_dtype_name(wt),
                          ingot__isa_name((ingot__isa)isa));
                    if (wt == INGOT_DTYPE_I8) /* exact int32 dots, the same f32 scaling */
                        CHECK(memcmp(Y, Y0, nx * M * 4) == 0, "I8 %s M=%zu K=%zu: not exact",
                              ingot__isa_name((ingot__isa)isa), M, K);
                    free(R0), free(R1);
                    cases++;
                }
                ingot__set_isa(ingot__cpu_isa());
                free(w), free(ws), free(X), free(xq), free(R), free(Y0), free(Y), free(Y2);
            }
    }
    ingot__pool_destroy(pool);
    for (size_t ti = 0; ti < sizeof qtypes / sizeof qtypes[0]; ti++)
        CHECK(num[ti] / den[ti] <= 5e-4, "%s: nmse %g against the unquantized activations",
              ingot_dtype_name(qtypes[ti]), num[ti] / den[ti]);
    ASSERT_TRUE(cases > 0 || ingot__cpu_isa() == INGOT__ISA_SCALAR);
}

TEST(qdot_threads_bitwise)
{
    /* Weights of several hundred KiB are split over the workers: 1, 2 and 3 threads give the
     * same bits on every level, for one and for several activation rows. */
    size_t M = 300, K = 4096;
    ingot__pool *p2 = ingot__pool_create(NULL, 2), *p3 = ingot__pool_create(NULL, 3);
    for (size_t ti = 0; ti < sizeof qtypes / sizeof qtypes[0]; ti++) {
        ingot_dtype wt = qtypes[ti];
        size_t ldw = wt == INGOT_DTYPE_I8 ? K : K / ingot_dtype_block_elems(wt) *
                                                ingot_dtype_block_bytes(wt);
        uint8_t *w = malloc(M * ldw);
        float ws[300], *X = malloc(5 * K * 4), *y1 = malloc(5 * M * 4), *y2 = malloc(5 * M * 4),
              *y3 = malloc(5 * M * 4);
        fill_weights(wt, w, M, K, ws);
        for (size_t i = 0; i < 5 * K; i++) X[i] = frand();
        size_t xb = ingot__qx_bytes(wt, K);
        uint8_t *xq = aligned_alloc(64, 5 * xb);
        for (size_t i = 0; i < 5; i++) ingot__qx_quantize(wt, X + i * K, K, xq + i * xb);
        for (int isa = 0; isa < INGOT__ISA_COUNT; isa++) {
            if (!level_on(isa)) continue;
            for (size_t nx = 1; nx <= 5; nx += 4) {
                ASSERT_OK(ingot__qgemm(NULL, wt, M, K, w, ldw, ws, xq, NULL, 0, nx, false, y1, M));
                ASSERT_OK(ingot__qgemm(p2, wt, M, K, w, ldw, ws, xq, NULL, 0, nx, false, y2, M));
                ASSERT_OK(ingot__qgemm(p3, wt, M, K, w, ldw, ws, xq, NULL, 0, nx, false, y3, M));
                CHECK(memcmp(y1, y2, nx * M * 4) == 0 && memcmp(y1, y3, nx * M * 4) == 0,
                      "%s %s nx=%zu: 1, 2 and 3 threads differ", ingot_dtype_name(wt),
                      ingot__isa_name((ingot__isa)isa), nx);
            }
        }
        ingot__set_isa(ingot__cpu_isa());
        free(w), free(X), free(y1), free(y2), free(y3), free(xq);
    }
    ingot__pool_destroy(p2);
    ingot__pool_destroy(p3);
}

TEST(qdot_rows_same_bits_any_offset)
{
    /* A weight row gives the same bits whichever call, row offset or row count computed it: the
     * K-quant dots take several short rows per step at the AVX-512 levels (their super-blocks
     * sixteen at a time across rows), the 32-element blocks sixteen blocks per step with the
     * rest masked; rows of 1 to 17 blocks and more, and the runtime's 1024 and 2816. */
    static const size_t kq[] = {256, 1024, 2816, 4352}, k32[] = {32, 96, 1024, 2816, 4128};
    size_t M = 120;
    for (size_t ti = 1; ti < sizeof qtypes / sizeof qtypes[0]; ti++) {
        ingot_dtype wt = qtypes[ti];
        size_t be = ingot_dtype_block_elems(wt), nk = be == 256 ? 4 : 5;
        for (size_t ki = 0; ki < nk; ki++) {
            size_t K = be == 256 ? kq[ki] : k32[ki], ldw = K / be * ingot_dtype_block_bytes(wt);
            uint8_t *w = malloc(M * ldw);
            float ws[120], *X = malloc(K * 4), *y = malloc(M * 4), *y2 = malloc(M * 4);
            fill_weights(wt, w, M, K, ws);
            for (size_t i = 0; i < K; i++) X[i] = frand();
            uint8_t *xq = aligned_alloc(64, ingot__qx_bytes(wt, K));
            for (int isa = 0; isa < INGOT__ISA_COUNT; isa++) {
                if (!level_on(isa)) continue;
                ingot__qx_quantize(wt, X, K, xq);
                ASSERT_OK(ingot__qgemm(NULL, wt, M, K, w, ldw, ws, xq, NULL, 0, 1, false, y, M));
                for (size_t off = 1; off <= 17; off++)
                    for (size_t len = 1; len <= M - off; len += len < 20 ? 1 : 37) {
                        ASSERT_OK(ingot__qgemm(NULL, wt, len, K, w + off * ldw, ldw, ws + off, xq,
                                               NULL, 0, 1, false, y2, len));
                        CHECK(memcmp(y + off, y2, len * 4) == 0,
                              "%s %s K=%zu: rows %zu..%zu alone differ from the full call",
                              ingot_dtype_name(wt), ingot__isa_name((ingot__isa)isa), K, off,
                              off + len - 1);
                    }
            }
            ingot__set_isa(ingot__cpu_isa());
            free(w), free(X), free(y), free(y2), free(xq);
        }
    }
}

/* One weight row against x through the kernels, for rows [0, c) of w: y (+)= W x. */
static void gemv_rows(ingot_dtype wt, const uint8_t *w, size_t ldw, const float *ws, size_t c,
                      size_t K, const float *X, const uint8_t *xq, bool acc, float *y)
{
    if (wt == INGOT_DTYPE_F16 || wt == INGOT_DTYPE_BF16)
        ingot__gemm_half(NULL, wt, c, K, w, ldw / 2, 1, X, K, acc, y, c);
    else
        ASSERT_OK(ingot__qgemm(NULL, wt, c, K, w, ldw, ws, xq, NULL, 0, 1, acc, y, c));
}

TEST(gemv_streams_same_bits)
{
    /* The one-row GEMVs read a call's rows as 2, 4 or 8 interleaved streams
     * (ingot__gemv_streams): every row must give the bits it gives alone, in its own place,
     * for row counts under one group, not a multiple of the streams and larger, with y
     * overwritten and accumulated, and nothing written past the last row. */
    static const size_t counts[] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10,  11, 12,
                                    13, 15, 16, 17, 23, 31, 33, 64, 130, 257};
    static const ingot_dtype types[] = {INGOT_DTYPE_Q8_0, INGOT_DTYPE_Q4_0, INGOT_DTYPE_Q4_K,
                                        INGOT_DTYPE_Q5_K, INGOT_DTYPE_Q6_K, INGOT_DTYPE_I8,
                                        INGOT_DTYPE_F16,  INGOT_DTYPE_BF16};
    const size_t M = 257;
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        ingot_dtype wt = types[ti];
        bool half = wt == INGOT_DTYPE_F16 || wt == INGOT_DTYPE_BF16;
        size_t be = half ? 1 : ingot_dtype_block_elems(wt);
        static const size_t kq[] = {1024, 2816}, kh[] = {203, 1024};
        for (size_t ki = 0; ki < 2; ki++) {
            size_t K = half ? kh[ki] : kq[ki];
            size_t ldw = half                   ? K * 2
                         : wt == INGOT_DTYPE_I8 ? K
                                                : K / be * ingot_dtype_block_bytes(wt);
            uint8_t *w = malloc(M * ldw);
            uint8_t *xq = aligned_alloc(64, half ? 64 : ingot__qx_bytes(wt, K));
            float *ws = malloc(M * 4), *X = malloc(K * 4), *y1 = malloc(M * 4);
            float *yb = malloc(M * 4), *y = malloc((M + 1) * 4);
            if (half) {
                float *wf = malloc(M * K * 4);
                for (size_t i = 0; i < M * K; i++) wf[i] = frand();
                ingot_f32_encode(wt, wf, M * K, w, M * K * 2, NULL);
                free(wf);
            } else {
                fill_weights(wt, w, M, K, ws);
            }
            for (size_t i = 0; i < K; i++) X[i] = frand();
            for (size_t i = 0; i < M; i++) yb[i] = frand();
            for (int isa = 0; isa < INGOT__ISA_COUNT; isa++) {
                if (!level_on(isa)) continue;
                if (!half) ingot__qx_quantize(wt, X, K, xq);
                ingot__set_gemv_streams(1);
                for (size_t r = 0; r < M; r++) /* each row alone */
                    gemv_rows(wt, w + r * ldw, ldw, ws + r, 1, K, X, xq, false, y1 + r);
                for (unsigned ns = 2; ns <= 8; ns *= 2) {
                    CHECK(ingot__set_gemv_streams(ns) == ns && ingot__gemv_streams_half() == ns,
                          "streams %u not set", ns);
                    for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++)
                        for (int acc = 0; acc < 2; acc++) {
                            size_t c = counts[ci];
                            for (size_t r = 0; r <= M; r++) y[r] = r < c && acc ? yb[r] : -7.0f;
                            gemv_rows(wt, w, ldw, ws, c, K, X, xq, acc, y);
                            size_t bad = c;
                            for (size_t r = 0; r < c && bad == c; r++) {
                                float e = acc ? yb[r] + y1[r] : y1[r];
                                if (memcmp(&e, &y[r], 4) != 0) bad = r;
                            }
                            CHECK(bad == c, "%s %s K=%zu, %u streams, %zu rows%s: row %zu differs "
                                  "from the row alone", ingot_dtype_name(wt),
                                  ingot__isa_name((ingot__isa)isa), K, ns, c,
                                  acc ? " (accumulated)" : "", bad);
                            CHECK(y[c] == -7.0f,
                                  "%s %s K=%zu, %u streams, %zu rows: wrote past them",
                                  ingot_dtype_name(wt), ingot__isa_name((ingot__isa)isa), K, ns,
                                  c);
                        }
                }
            }
            ingot__set_isa(ingot__cpu_isa());
            ingot__set_gemv_streams(0);
            free(w), free(xq), free(ws), free(X), free(y1), free(yb), free(y);
        }
    }
}

TEST(qx_quantize_rounding)
{
    /* Per block d = max|x| / 127 and q = round(x / d) half away from zero; the sums the dots
     * use are the sums of q; an all-zero block has d = 0; NaN makes d NaN (the dot then NaN). */
    size_t K = 512;
    float *x = malloc(K * 4);
    for (size_t i = 0; i < K; i++) x[i] = frand() * 3.0f;
    for (size_t i = 0; i < 32; i++) x[i] = 0.0f;
    for (size_t ti = 0; ti < sizeof qtypes / sizeof qtypes[0]; ti++) {
        ingot_dtype wt = qtypes[ti];
        uint8_t *q = aligned_alloc(64, ingot__qx_bytes(wt, K));
        ingot__qx_quantize(wt, x, K, q);
        size_t B = wt == INGOT_DTYPE_I8 ? K : ingot_dtype_block_elems(wt);
        const float *d = (const float *)(const void *)(q + K);
        for (size_t b = 0; b < K / B; b++) {
            double amax = 0;
            for (size_t i = 0; i < B; i++) amax = fmax(amax, fabs(x[b * B + i]));
            CHECK(d[b] == (float)amax / 127.0f, "%s block %zu: d %g, amax %g",
                  ingot_dtype_name(wt), b, d[b], amax);
            int sum = 0;
            for (size_t i = 0; i < B; i++) {
                int qi = (int8_t)q[ingot__qx_index(wt, b * B + i)];
                double want = amax > 0 ? x[b * B + i] / ((float)amax / 127.0f) : 0;
                CHECK(abs(qi) <= 127 && fabs(qi - want) <= 0.5 + 1e-4, "%s elem %zu: %d vs %g",
                      ingot_dtype_name(wt), b * B + i, qi, want);
                sum += qi;
            }
            if (B != 256) {
                const uint8_t *sp = q + K + (K / B * 4 + 63) / 64 * 64;
                const int32_t *s = (const int32_t *)(const void *)sp;
                CHECK(s[b] == sum, "%s block %zu: sum %d vs %d", ingot_dtype_name(wt), b, s[b],
                      sum);
            }
        }
        free(q);
    }
    x[7] = NAN;
    uint8_t *q = aligned_alloc(64, ingot__qx_bytes(INGOT_DTYPE_Q8_0, K));
    ingot__qx_quantize(INGOT_DTYPE_Q8_0, x, K, q);
    ASSERT_TRUE(isnan(((const float *)(const void *)(q + K))[0]));
    free(q);
    free(x);
}

TEST(q8_0_ggml_blocks)
{
    /* ingot__quantize_q8_0 (the GGML reference quantizer): per block an f16 d = amax / 127 and
     * q = round(x / d) half away from zero; an all-zero block gives d = 0 and q = 0. */
    size_t K = 256, nb = K / 32;
    float *x = malloc(K * 4);
    for (size_t i = 0; i < K; i++) x[i] = frand();
    for (size_t i = 0; i < 32; i++) x[i] = 0.0f;
    uint8_t *xq = malloc(nb * 34);
    ingot__quantize_q8_0(x, K, xq);
    for (size_t b = 0; b < nb; b++) {
        uint16_t h;
        memcpy(&h, xq + b * 34, 2);
        double amax = 0;
        for (int i = 0; i < 32; i++) amax = fmax(amax, fabs(x[b * 32 + i]));
        double d = half(h);
        CHECK(fabs(d - amax / 127.0) <= amax / 127.0 * 1e-3 + 1e-12, "block %zu d %g", b, d);
        for (int i = 0; i < 32; i++) {
            int q = (int8_t)xq[b * 34 + 2 + i];
            double want = amax > 0 ? round(x[b * 32 + i] / (amax / 127.0)) : 0;
            CHECK(abs(q - (int)want) <= 1, "block %zu elem %d: q %d want %g", b, i, q, want);
        }
    }
    free(x), free(xq);
}

TEST(gemm_half_rows_independent)
{
    /* A row of activations gives the same bits whether it shares a pass over the weights with
     * up to four others or runs alone (K with 32-element steps, an 8-element step and a tail). */
    size_t M = 37, K = 203, nx = 5;
    uint16_t *w = malloc(M * K * 2);
    float *X = malloc(nx * K * 4), *Y = malloc(nx * M * 4), *Y1 = malloc(M * 4);
    for (int bf = 0; bf < 2; bf++) {
        ingot_dtype wt = bf ? INGOT_DTYPE_BF16 : INGOT_DTYPE_F16;
        float *wf = malloc(M * K * 4);
        for (size_t i = 0; i < M * K; i++) wf[i] = frand();
        ingot_f32_encode(wt, wf, M * K, w, M * K * 2, NULL);
        free(wf);
        for (size_t i = 0; i < nx * K; i++) X[i] = frand();
        for (int isa = 0; isa < INGOT__ISA_COUNT; isa++) {
            if (!level_on(isa)) continue;
            ingot__gemm_half(NULL, wt, M, K, w, K, nx, X, K, false, Y, M);
            for (size_t i = 0; i < nx; i++) {
                ingot__gemm_half(NULL, wt, M, K, w, K, 1, X + i * K, K, false, Y1, M);
                CHECK(memcmp(Y1, Y + i * M, M * 4) == 0, "%s %s: row %zu of %zu differs alone",
                      ingot_dtype_name(wt), ingot__isa_name((ingot__isa)isa), i, nx);
            }
        }
        ingot__set_isa(ingot__cpu_isa());
    }
    free(w), free(X), free(Y), free(Y1);
}

TEST(qgemm_prefill_through_f32)
{
    /* From INGOT__QGEMM_DEQUANT_ROWS activation rows on, block-type weights (and F16 / BF16) are
     * widened to f32 a panel of rows at a time and multiplied by the blocked f32 GEMM with the
     * unquantized activations: against the double reference on the dequantized weights
     * (NMSE <= 1e-9; on AMX tiles BF16 / F16 1e-7 and the block types, whose weights are
     * rounded to bf16 there, 5e-4; at AVX-512 VNNI Q8_0, Q4_0, Q4_K and Q5_K take the int8
     * route, 1e-4, and the f32 route is checked directly), bitwise the same for 1 and 2
     * threads, panels of rows crossed (300 rows), accumulate adds onto y. */
    static const ingot_dtype types[] = {INGOT_DTYPE_Q8_0, INGOT_DTYPE_Q4_0, INGOT_DTYPE_Q4_K,
                                        INGOT_DTYPE_Q5_K, INGOT_DTYPE_Q6_K, INGOT_DTYPE_F16,
                                        INGOT_DTYPE_BF16};
    ingot__pool *pool = ingot__pool_create(NULL, 2);
    for (int ti = 0; ti < 7; ti++)
        for (int ci = 0; ci < 2; ci++) {
            ingot_dtype wt = types[ti];
            bool half = wt == INGOT_DTYPE_F16 || wt == INGOT_DTYPE_BF16;
            size_t M = ci ? 300 : 17, K = ci ? 4352 : 256;
            size_t nx = ci ? 40 : INGOT__QGEMM_DEQUANT_ROWS;
            size_t ldw = half ? K * 2 : K / ingot_dtype_block_elems(wt) *
                                            ingot_dtype_block_bytes(wt);
            uint8_t *w = malloc(M * ldw);
            float *X = malloc(nx * K * 4), *Y1 = malloc(nx * M * 4), *Y2 = malloc(nx * M * 4);
            float *row = malloc(K * 4), ws[1];
            double *R = malloc(nx * M * sizeof *R);
            if (half) {
                for (size_t i = 0; i < M * K; i++) {
                    float v = frand();
                    ingot_f32_encode(wt, &v, 1, w + 2 * i, 2, NULL);
                }
            } else {
                fill_weights(wt, w, M, K, ws);
            }
            for (size_t i = 0; i < nx * K; i++) X[i] = frand();
            for (size_t m = 0; m < M; m++) {
                ingot_dequantize(wt, w + m * ldw, ldw, row, K, NULL);
                for (size_t i = 0; i < nx; i++) {
                    double sum = 0;
                    for (size_t k = 0; k < K; k++) sum += (double)row[k] * X[i * K + k];
                    R[i * M + m] = sum + 1.0;
                }
            }
            size_t xb = half ? 0 : ingot__qx_bytes(wt, K);
            uint8_t *xq = aligned_alloc(64, half ? 64 : nx * xb);
            for (size_t i = 0; !half && i < nx; i++)
                ingot__qx_quantize(wt, X + i * K, K, xq + i * xb);
            for (int isa = 0; isa < INGOT__ISA_COUNT; isa++) {
                if (!level_on(isa)) continue;
                for (size_t i = 0; i < nx * M; i++) Y1[i] = Y2[i] = 1.0f;
                if (half) {
                    ingot__gemm_half(NULL, wt, M, K, w, K, nx, X, K, true, Y1, M);
                    ingot__gemm_half(pool, wt, M, K, w, K, nx, X, K, true, Y2, M);
                } else {
                    ASSERT_OK(ingot__qgemm(NULL, wt, M, K, w, ldw, NULL, xq, X, K, nx, true, Y1,
                                           M));
                    ASSERT_OK(ingot__qgemm(pool, wt, M, K, w, ldw, NULL, xq, X, K, nx, true, Y2,
                                           M));
                }
                double e = nmse(Y1, R, nx * M);
                /* AMX: BF16 / F16 tiles with hi + lo activations; the block types' weights
                 * rounded to bf16 there (amx.h) */
                /* AVX-512 VNNI: the block types' int8 route (igemm.h; test_igemm.c's bound),
                 * the f32 route itself checked below */
                bool i8 = isa == INGOT__ISA_AVX512_VNNI && !half && ingot__igemm_ok(wt, K);
                double lim = i8 ? 1e-4 : isa != INGOT__ISA_AMX ? 1e-9 : half ? 1e-7 : 5e-4;
                CHECK(e <= lim, "%s %s M=%zu K=%zu nx=%zu: nmse %g", ingot_dtype_name(wt),
                      ingot__isa_name((ingot__isa)isa), M, K, nx, e);
                CHECK(memcmp(Y1, Y2, nx * M * 4) == 0, "%s %s: 1 and 2 threads differ",
                      ingot_dtype_name(wt), ingot__isa_name((ingot__isa)isa));
                if (i8) {
                    for (size_t i = 0; i < nx * M; i++) Y1[i] = 1.0f;
                    ASSERT_OK(ingot__dequant_gemm(pool, wt, M, K, w, ldw, X, K, nx, true, Y1, M));
                    e = nmse(Y1, R, nx * M);
                    CHECK(e <= 1e-9, "%s f32 route M=%zu: nmse %g", ingot_dtype_name(wt), M, e);
                }
            }
            ingot__set_isa(ingot__cpu_isa());
            free(w), free(X), free(Y1), free(Y2), free(row), free(R), free(xq);
        }
    ingot__pool_destroy(pool);
}

/* ---- F16 / BF16 weights ---- */

TEST(gemm_half_levels)
{
    /* F16 and BF16 weight rows against 1..5 f32 activation rows, K with and without tails of
     * the 16- and 64-element steps, on every level: against a double reference of the exactly
     * widened weights (NMSE <= 1e-7), bitwise the same for 1 and 2 threads, accumulate adds. */
    static const size_t ks[] = {1, 15, 64, 100, 1030}, ms[] = {1, 9, 172};
    ingot__pool *pool = ingot__pool_create(NULL, 2);
    for (int bf = 0; bf < 2; bf++) {
        ingot_dtype wt = bf ? INGOT_DTYPE_BF16 : INGOT_DTYPE_F16;
        for (size_t ki = 0; ki < 5; ki++)
            for (size_t mi = 0; mi < 3; mi++) {
                size_t K = ks[ki], M = ms[mi], nx = 1 + (ki + mi) % 5, ldw = K + 3;
                float *wf = malloc(M * ldw * 4), *X = malloc(nx * K * 4);
                uint16_t *w = malloc(M * ldw * 2);
                for (size_t i = 0; i < M * ldw; i++) wf[i] = frand();
                ingot_f32_encode(wt, wf, M * ldw, w, M * ldw * 2, NULL);
                ingot_dequantize(wt, w, M * ldw * 2, wf, M * ldw, NULL); /* exact widening */
                for (size_t i = 0; i < nx * K; i++) X[i] = frand();
                double *R = malloc(nx * M * sizeof *R);
                for (size_t i = 0; i < nx; i++)
                    for (size_t m = 0; m < M; m++) {
                        double s = 0;
                        for (size_t k = 0; k < K; k++) s += (double)wf[m * ldw + k] * X[i * K + k];
                        R[i * M + m] = s;
                    }
                float *Y1 = malloc(nx * M * 4), *Y2 = malloc(nx * M * 4);
                for (int isa = 0; isa < INGOT__ISA_COUNT; isa++) {
                    if (!level_on(isa)) continue;
                    ingot__gemm_half(NULL, wt, M, K, w, ldw, nx, X, K, false, Y1, M);
                    for (size_t i = 0; i < nx * M; i++) Y2[i] = 2.0f;
                    ingot__gemm_half(pool, wt, M, K, w, ldw, nx, X, K, true, Y2, M);
                    double e = nmse(Y1, R, nx * M);
                    CHECK(e <= 1e-7, "%s %s M=%zu K=%zu nx=%zu: nmse %g", ingot_dtype_name(wt),
                          ingot__isa_name((ingot__isa)isa), M, K, nx, e);
                    for (size_t i = 0; i < nx * M; i++)
                        CHECK(Y2[i] == 2.0f + Y1[i], "%s %s: 2 threads + accumulate differ at %zu",
                              ingot_dtype_name(wt), ingot__isa_name((ingot__isa)isa), i);
                }
                ingot__set_isa(ingot__cpu_isa());
                free(wf), free(X), free(w), free(R), free(Y1), free(Y2);
            }
    }
    ingot__pool_destroy(pool);
}

/* ---- AMX tiles ---- */

TEST(amx_tiles_against_dots)
{
    /* Batches of 16 and more activation rows run on AMX tiles at the AMX level (int8 with K a
     * multiple of 64, Q8_0, BF16): int8 gives the same bits as the dot kernels (exact int32 sums,
     * the same f32 scaling), Q8_0 matches the scalar dots (NMSE <= 1e-9), BF16 the double
     * reference (NMSE <= 1e-7: activations split into two bf16 halves); 1 and 2 threads agree
     * bitwise; partial tiles (17 weight rows, 17 and 33 activation rows) included. */
    if (!ingot__isa_supported(INGOT__ISA_AMX)) {
        fprintf(stderr, "amx: not supported here, not run\n");
        return;
    }
    ingot__pool *pool = ingot__pool_create(NULL, 2);
    static const size_t ms[] = {16, 17, 172}, nxs[] = {16, 17, 33};
    static const ingot_dtype types[] = {INGOT_DTYPE_I8, INGOT_DTYPE_Q8_0, INGOT_DTYPE_BF16};
    for (int ti = 0; ti < 3; ti++)
        for (int ci = 0; ci < 3; ci++) {
            ingot_dtype wt = types[ti];
            size_t M = ms[ci], nx = nxs[(ci + (size_t)ti) % 3], K = ci == 2 ? 4096 : 128;
            ASSERT_TRUE(ingot__amx_ok(wt, K, nx, true));
            size_t ldw = wt == INGOT_DTYPE_I8 ? K : wt == INGOT_DTYPE_Q8_0 ? K / 32 * 34 : K * 2;
            uint8_t *w = malloc(M * ldw);
            float *ws = malloc(M * 4), *X = malloc(nx * K * 4), *Y0 = malloc(nx * M * 4);
            float *Y1 = malloc(nx * M * 4), *Y2 = malloc(nx * M * 4);
            for (size_t i = 0; i < nx * K; i++) X[i] = frand();
            if (wt == INGOT_DTYPE_BF16) {
                float *wf = malloc(M * K * 4);
                for (size_t i = 0; i < M * K; i++) wf[i] = frand();
                ingot_f32_encode(wt, wf, M * K, w, M * ldw, NULL);
                ingot_dequantize(wt, w, M * ldw, wf, M * K, NULL);
                double *R = malloc(nx * M * sizeof *R);
                for (size_t i = 0; i < nx; i++)
                    for (size_t m = 0; m < M; m++) {
                        double sum = 0;
                        for (size_t k = 0; k < K; k++) sum += (double)wf[m * K + k] * X[i * K + k];
                        R[i * M + m] = sum;
                    }
                ingot__set_isa(INGOT__ISA_AMX);
                ingot__gemm_half(NULL, wt, M, K, w, K, nx, X, K, false, Y1, M);
                ingot__gemm_half(pool, wt, M, K, w, K, nx, X, K, false, Y2, M);
                double e = nmse(Y1, R, nx * M);
                CHECK(e <= 1e-7, "BF16 amx M=%zu nx=%zu K=%zu: nmse %g", M, nx, K, e);
                free(wf), free(R);
            } else {
                fill_weights(wt, w, M, K, ws);
                size_t xb = ingot__qx_bytes(wt, K);
                uint8_t *xq = aligned_alloc(64, nx * xb);
                for (size_t i = 0; i < nx; i++) ingot__qx_quantize(wt, X + i * K, K, xq + i * xb);
                ingot__set_isa(INGOT__ISA_SCALAR);
                ASSERT_OK(ingot__qgemm(NULL, wt, M, K, w, ldw, ws, xq, NULL, 0, nx, false, Y0, M));
                ingot__set_isa(INGOT__ISA_AMX);
                ASSERT_OK(ingot__qgemm(NULL, wt, M, K, w, ldw, ws, xq, NULL, 0, nx, false, Y1, M));
                ASSERT_OK(ingot__qgemm(pool, wt, M, K, w, ldw, ws, xq, NULL, 0, nx, false, Y2, M));
                double *R0 = malloc(nx * M * sizeof *R0);
                for (size_t i = 0; i < nx * M; i++) R0[i] = Y0[i];
                double e = nmse(Y1, R0, nx * M);
                if (wt == INGOT_DTYPE_I8)
                    CHECK(memcmp(Y0, Y1, nx * M * 4) == 0, "I8 amx M=%zu nx=%zu: not exact", M, nx);
                else
                    CHECK(e <= 1e-9, "Q8_0 amx M=%zu nx=%zu K=%zu: nmse %g vs scalar", M, nx, K, e);
                free(xq), free(R0);
            }
            CHECK(memcmp(Y1, Y2, nx * M * 4) == 0, "%s amx M=%zu nx=%zu: 1 and 2 threads differ",
                  ingot_dtype_name(wt), M, nx);
            ingot__set_isa(ingot__cpu_isa());
            free(w), free(ws), free(X), free(Y0), free(Y1), free(Y2);
        }
    ingot__pool_destroy(pool);
}

/* ---- levels ---- */

TEST(isa_levels_and_cap)
{
    /* Names round-trip; the scalar level is always there; a cap picks the best supported level
     * at or below it; INGOT_ISA caps at first use (re-read after a reset); an unknown name is
     * ignored and reported. */
    for (int l = 0; l < INGOT_CPU_ISA_COUNT; l++) {
        ingot_cpu_isa back;
        ASSERT_OK(ingot_cpu_isa_from_name(ingot_cpu_isa_name((ingot_cpu_isa)l), &back));
        ASSERT_EQ(back, l);
    }
    ASSERT_ST(ingot_cpu_isa_from_name("avx1024", NULL), INGOT_E_NOT_FOUND);
    ASSERT_TRUE(ingot_cpu_isa_name((ingot_cpu_isa)99) == NULL);
    ASSERT_TRUE(ingot_cpu_isa_supported(INGOT_CPU_ISA_SCALAR));
    ASSERT_TRUE(!ingot_cpu_isa_supported((ingot_cpu_isa)INGOT_CPU_ISA_COUNT));
    for (int cap = 0; cap < INGOT_CPU_ISA_COUNT; cap++) {
        int want = 0;
        for (int l = 0; l <= cap; l++)
            if (ingot_cpu_isa_supported((ingot_cpu_isa)l)) want = l;
        ASSERT_EQ(ingot_cpu_isa_set_cap((ingot_cpu_isa)cap), want);
        ASSERT_EQ(ingot_cpu_isa_current(), want);
    }
    ASSERT_EQ(ingot_cpu_isa_current(), ingot__cpu_isa());
    setenv("INGOT_ISA", "avx2", 1);
    ingot__isa_reset();
    ASSERT_EQ(ingot__get_isa(), ingot__isa_supported(INGOT__ISA_AVX2) ? INGOT__ISA_AVX2
                                                                       : INGOT__ISA_SCALAR);
    ASSERT_TRUE(!ingot__isa_env_ignored());
    setenv("INGOT_ISA", "scalar", 1);
    ingot__isa_reset();
    ASSERT_EQ(ingot__get_isa(), INGOT__ISA_SCALAR);
    setenv("INGOT_ISA", "fastest", 1);
    ingot__isa_reset();
    ASSERT_EQ(ingot__get_isa(), ingot__cpu_isa());
    ASSERT_TRUE(ingot__isa_env_ignored());
    unsetenv("INGOT_ISA");
    ingot__isa_reset();
    ASSERT_EQ(ingot__get_isa(), ingot__cpu_isa());
    ASSERT_TRUE(!ingot__isa_env_ignored());
}

static _Atomic int hits[1000];
static _Atomic int workers_seen[2];

static void count_task(void *ctx, size_t t, unsigned worker)
{
    (void)ctx;
    hits[t]++;
    if (worker < 2) workers_seen[worker] = 1;
}

TEST(pool_runs_every_task_once)
{
    ingot__pool *p = ingot__pool_create(NULL, 2);
    ASSERT_TRUE(p != NULL);
    ASSERT_EQ(ingot__pool_threads(p), 2);
    for (int round = 0; round < 200; round++) ingot__pool_run(p, count_task, NULL, 1000);
    for (int t = 0; t < 1000; t++) CHECK(hits[t] == 200, "task %d ran %d times", t, hits[t]);
    ingot__pool_run(p, count_task, NULL, 0); /* no tasks: returns at once */
    ingot__pool_destroy(p);
    ingot__pool_destroy(NULL);
    ASSERT_EQ(ingot__pool_threads(NULL), 1);
    ASSERT_TRUE(workers_seen[0] == 1);
}

/* Repacked Q4_K (kernels.h, the runtime's INGOT_LM_REPACK): the repacking round-trips every
 * byte; a repacked segment of ingot__qgemv_multi gives, at every level, the bits of the in-place
 * Q4_K kernel of a level that runs the repacked kernel (AVX-512 VNNI with VBMI; the same
 * integers per super-block) and elsewhere those of the scalar Q4_K kernel (its route there), is
 * within the 8-bit bound of the dequantized reference (NMSE over all cases), and is the same with 1, 2 and 3 threads
 * and beside an in-place segment in one job: 1..17 rows and rows of 172, K = 256 .. 8192. */
TEST(q4k_repacked_rows)
{
    static const size_t Ks[] = {256, 512, 1024, 2816, 4096, 8192};
    static const size_t Ms[] = {1, 2, 3, 4, 5, 7, 8, 9, 13, 15, 16, 17, 172};
    const ingot_dtype wt = INGOT_DTYPE_Q4_K;
    ingot__pool *p2 = ingot__pool_create(NULL, 2), *p3 = ingot__pool_create(NULL, 3);
    int fast_levels = 0;
    double num = 0, den = 0;
    for (size_t ki = 0; ki < sizeof Ks / sizeof Ks[0]; ki++)
        for (size_t mi = 0; mi < sizeof Ms / sizeof Ms[0]; mi++) {
            size_t K = Ks[ki], M = Ms[mi], ldw = K / 256 * 144, nblk = M * K / 256;
            uint8_t *w = malloc(M * ldw), *wr = malloc(M * ldw), *back = malloc(M * ldw);
            fill_weights(wt, w, M, K, NULL);
            ingot__q4kr_repack(w, wr, nblk);
            ingot__q4kr_unpack(wr, back, nblk);
            CHECK(memcmp(w, back, M * ldw) == 0, "K=%zu M=%zu: repacking does not round-trip",
                  K, M);
            float *X = malloc(K * 4), *y0 = malloc(M * 4), *yi = malloc(M * 4),
                  *yr[3] = {malloc(M * 4), malloc(M * 4), malloc(M * 4)}, *ym = malloc(M * 8);
            double *R = malloc(M * 8);
            for (size_t i = 0; i < K; i++) X[i] = frand();
            size_t xb = ingot__qx_bytes(wt, K);
            uint8_t *xq = aligned_alloc(64, xb), *xr = aligned_alloc(64, xb);
            ingot__qx_quantize(wt, X, K, xq);
            memcpy(xr, xq, xb);
            ingot__qx_q4kr_order(xr, K);
            ref_qgemm(wt, w, ldw, NULL, M, K, X, 1, R);
            ingot__qx v;
            ingot__qx_view(wt, K, xq, &v);
            ingot__qdot_scalar(wt)(w, ldw, M, &v, NULL, false, y0);
            for (int isa = 0; isa < INGOT__ISA_COUNT; isa++) {
                if (!level_on(isa)) continue;
                bool fast = ingot__q4kr_fast();
                fast_levels += fast && ki == 0 && mi == 0;
                ingot__qseg si = {wt, w, xq, ldw, M, yi, false, false};
                ingot__qgemv_multi(NULL, K, &si, 1);
                ingot__pool *pools[3] = {NULL, p2, p3};
                for (int pi = 0; pi < 3; pi++) {
                    ingot__qseg sr = {wt, wr, xr, ldw, M, yr[pi], false, true};
                    ingot__qgemv_multi(pools[pi], K, &sr, 1);
                }
                const float *want = fast ? yi : y0;
                CHECK(memcmp(yr[0], want, M * 4) == 0 && memcmp(yr[1], want, M * 4) == 0 &&
                          memcmp(yr[2], want, M * 4) == 0,
                      "%s K=%zu M=%zu: repacked rows differ from the %s kernel's bits",
                      ingot__isa_name((ingot__isa)isa), K, M, fast ? "in-place" : "scalar");
                for (size_t m = 0; m < M; m++) { /* NMSE over every case (few rows vary) */
                    num += (yr[0][m] - R[m]) * (yr[0][m] - R[m]);
                    den += R[m] * R[m];
                }
                /* an in-place and a repacked segment in one job, on 2 threads */
                ingot__qseg two[2] = {{wt, w, xq, ldw, M, ym, false, false},
                                      {wt, wr, xr, ldw, M, ym + M, false, true}};
                ingot__qgemv_multi(p2, K, two, 2);
                CHECK(memcmp(ym, yi, M * 4) == 0 && memcmp(ym + M, want, M * 4) == 0,
                      "%s K=%zu M=%zu: mixed job differs", ingot__isa_name((ingot__isa)isa), K,
                      M);
            }
            ingot__set_isa(ingot__cpu_isa());
            free(w), free(wr), free(back), free(X), free(y0), free(yi), free(ym), free(R);
            free(yr[0]), free(yr[1]), free(yr[2]), free(xq), free(xr);
        }
    CHECK(num / den <= 5e-4, "repacked Q4_K: NMSE %.3g against the dequantized reference",
          num / den);
    fprintf(stderr, "  repacked Q4_K kernel ran at %d level(s)%s\n", fast_levels,
            ingot__cpu_vbmi() ? "" : " (no AVX-512 VBMI here: the scalar route only)");
    ingot__pool_destroy(p2);
    ingot__pool_destroy(p3);
}

/* ingot__qgemv_multi's tasks (qdot.c) when a job is split over threads: jobs above the split
 * threshold (256 KiB of weights), one to three segments of several dtypes with the last one
 * large, small or of a row count that is not a multiple of 8, accumulating into y: at 1, 2 and
 * 3 threads every row is written once with the bits of the one-thread job (a row skipped or
 * computed twice by the task arithmetic shows). */
TEST(qgemv_multi_task_tails)
{
    static const struct {
        ingot_dtype wt[3];
        size_t M[3], nseg, K;
    } cases[] = {
        {{INGOT_DTYPE_Q8_0}, {300}, 1, 1024},
        {{INGOT_DTYPE_Q4_K, INGOT_DTYPE_Q4_K, INGOT_DTYPE_Q4_K}, {1024, 256, 256}, 3, 1024},
        {{INGOT_DTYPE_Q4_K, INGOT_DTYPE_Q4_K}, {2816, 2816}, 2, 1024},
        {{INGOT_DTYPE_Q6_K, INGOT_DTYPE_Q8_0}, {700, 13}, 2, 2048},
        {{INGOT_DTYPE_Q8_0, INGOT_DTYPE_Q4_0, INGOT_DTYPE_Q8_0}, {257, 9, 1001}, 3, 2048},
        {{INGOT_DTYPE_Q4_K}, {32000}, 1, 256},
    };
    ingot__pool *pools[3] = {NULL, ingot__pool_create(NULL, 2), ingot__pool_create(NULL, 3)};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        size_t K = cases[c].K, nseg = cases[c].nseg, total = 0;
        uint8_t *w[3], *xq[3];
        ingot__qseg seg[3];
        float *X = malloc(K * 4);
        for (size_t i = 0; i < K; i++) X[i] = frand();
        for (size_t s = 0; s < nseg; s++) {
            ingot_dtype wt = cases[c].wt[s];
            size_t M = cases[c].M[s], ldw = K / ingot_dtype_block_elems(wt) *
                                            ingot_dtype_block_bytes(wt);
            w[s] = malloc(M * ldw);
            fill_weights(wt, w[s], M, K, NULL);
            xq[s] = aligned_alloc(64, ingot__qx_bytes(wt, K));
            ingot__qx_quantize(wt, X, K, xq[s]);
            seg[s] = (ingot__qseg){wt, w[s], xq[s], ldw, M, NULL, true, false};
            total += M;
        }
        float *want = malloc(total * 4), *got = malloc(total * 4);
        for (int pi = 0; pi < 3; pi++) {
            float *y = pi ? got : want;
            for (size_t i = 0; i < total; i++) y[i] = 0.25f * (float)(i % 7);
            for (size_t s = 0, o = 0; s < nseg; o += seg[s].M, s++) seg[s].Y = y + o;
            ingot__qgemv_multi(pools[pi], K, seg, nseg);
            if (pi)
                CHECK(memcmp(got, want, total * 4) == 0,
                      "case %zu, %d threads: rows differ from the one-thread job", c, pi + 1);
        }
        for (size_t s = 0; s < nseg; s++) free(w[s]), free(xq[s]);
        free(X), free(want), free(got);
    }
    ingot__pool_destroy(pools[1]);
    ingot__pool_destroy(pools[2]);
}

/* The repacking itself at every level: the AVX-512 one (qx_avx512.c: nibbles 64 bytes a step,
 * the scale fields by word arithmetic) writes the scalar loop's bytes, from a separate buffer and
 * in place, for super-blocks of arbitrary bytes (every scale and min bit pattern), and unpacking
 * gives the input back. */
TEST(q4k_repack_levels_same_bytes)
{
    static const size_t counts[] = {1, 2, 3, 7, 37, 300};
    for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++) {
        size_t n = counts[ci], bytes = n * 144;
        uint8_t *src = malloc(bytes), *ref = malloc(bytes), *out = malloc(bytes),
                *back = malloc(bytes);
        for (size_t i = 0; i < bytes; i++) src[i] = (uint8_t)(rng_next() >> 56);
        ASSERT_TRUE(level_on(INGOT__ISA_SCALAR));
        ingot__q4kr_repack(src, ref, n);
        int levels = 0;
        for (int isa = 0; isa < INGOT__ISA_COUNT; isa++) {
            if (!level_on(isa)) continue;
            levels++;
            memset(out, 0xA5, bytes);
            ingot__q4kr_repack(src, out, n);
            CHECK(memcmp(out, ref, bytes) == 0, "%s, %zu blocks: repacked bytes differ",
                  ingot__isa_name((ingot__isa)isa), n);
            memcpy(out, src, bytes);
            ingot__q4kr_repack(out, out, n); /* in place */
            CHECK(memcmp(out, ref, bytes) == 0, "%s, %zu blocks: in place differs",
                  ingot__isa_name((ingot__isa)isa), n);
            ingot__q4kr_unpack(out, back, n);
            CHECK(memcmp(back, src, bytes) == 0, "%s, %zu blocks: no round trip",
                  ingot__isa_name((ingot__isa)isa), n);
        }
        ASSERT_TRUE(levels >= 1);
        ingot__set_isa(ingot__cpu_isa());
        free(src), free(ref), free(out), free(back);
    }
}

TEST(half_to_f32_every_level)
{
    /* The prefill route's widening of F16 / BF16 weight panels: every 16-bit pattern, at every
     * level, runs of 1..70 elements from every start (the 16-, 8- and 1-element steps), the
     * same bits as ingot_dequantize (a NaN only as a NaN: vcvtph2ps quiets it), nothing written
     * past the run. */
    static const ingot_dtype types[] = {INGOT_DTYPE_F16, INGOT_DTYPE_BF16};
    uint16_t *h = malloc(65536 * 2);
    float *ref = malloc(65536 * 4), *got = malloc((65536 + 1) * 4);
    for (size_t i = 0; i < 65536; i++) h[i] = (uint16_t)i;
    for (int ti = 0; ti < 2; ti++) {
        ingot_dtype wt = types[ti];
        ASSERT_OK(ingot_dequantize(wt, h, 65536 * 2, ref, 65536, NULL));
        for (int isa = 0; isa < INGOT__ISA_COUNT; isa++) {
            if (!level_on(isa)) continue;
            for (size_t n = 1; n <= 70; n++)
                for (size_t at = 0; at + n <= 65536; at += n == 70 ? 1 : 4099) {
                    got[at + n] = -7.0f;
                    ingot__half_to_f32(wt, h + at, got + at, n);
                    CHECK(got[at + n] == -7.0f, "%s %s: wrote past %zu elements",
                          ingot_dtype_name(wt), ingot__isa_name((ingot__isa)isa), n);
                }
            size_t bad = 65536;
            for (size_t i = 0; i < 65536 && bad == 65536; i++)
                if (isnan(ref[i]) ? !isnan(got[i]) : memcmp(&ref[i], &got[i], 4) != 0) bad = i;
            CHECK(bad == 65536, "%s %s: 0x%04zx widened to %a, ingot_dequantize %a",
                  ingot_dtype_name(wt), ingot__isa_name((ingot__isa)isa), bad,
                  (double)got[bad % 65536], (double)ref[bad % 65536]);
        }
        ingot__set_isa(ingot__cpu_isa());
    }
    free(h), free(ref), free(got);
}

RUN_TESTS(T(isa_levels_and_cap), T(sgemm_shapes_isas_threads), T(sgemm_large_blocks_cross),
          T(sgemm_small_m_streaming), T(sgemv_both_ways), T(sgemv_rows_same_bits_any_offset),
          T(qdot_rows_same_bits_any_offset), T(gemv_streams_same_bits), T(qx_quantize_rounding),
          T(q8_0_ggml_blocks),
          T(qdot_levels_conformance), T(qdot_threads_bitwise),
          T(gemm_half_levels), T(gemm_half_rows_independent), T(qgemm_prefill_through_f32),
          T(amx_tiles_against_dots), T(q4k_repacked_rows), T(qgemv_multi_task_tails),
          T(q4k_repack_levels_same_bytes),
          T(pool_runs_every_task_once),
          /* last, so that the tests above draw the same random data as before them */
          T(sgemm_block_edges_rows_first), T(q4_0_activation_rearranged_edges),
          T(half_to_f32_every_level))
