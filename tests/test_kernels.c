/*
 * test_kernels.c - the CPU backend's kernels (src/backend/cpu/kernels) against plain double
 * precision references written here: GEMM over edge shapes, transposes, alpha/beta and leading
 * dimensions on every ISA this CPU has, the streaming path for a few rows of C; results bitwise
 * independent of the thread count; GEMV both ways; int8 GEMV exact; Q8_0 quantisation and GEMV
 * against a block-by-block definition.
 */
#include <math.h>

#include "cpu/kernels/kernels.h"
#include "harness.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static float frand(void) /* uniform in [-1, 1) */
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (float)((rng >> 40) * (1.0 / 8388608.0)) - 1.0f;
}

/* Normalised mean squared error of got against ref. */
static double nmse(const float *got, const double *ref, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double d = got[i] - ref[i];
        num += d * d;
        den += ref[i] * ref[i];
    }
    return den > 0 ? num / den : num;
}

static void ref_gemm(bool ta, bool tb, size_t M, size_t N, size_t K, float alpha, const float *A,
                     size_t lda, const float *B, size_t ldb, float beta, const float *C0,
                     size_t ldc, double *out)
{
    for (size_t i = 0; i < M; i++)
        for (size_t j = 0; j < N; j++) {
            double s = 0;
            for (size_t k = 0; k < K; k++) {
                double a = ta ? A[k * lda + i] : A[i * lda + k];
                double b = tb ? B[j * ldb + k] : B[k * ldb + j];
                s += a * b;
            }
            out[i * N + j] = alpha * s + (beta == 0.0f ? 0.0 : beta * (double)C0[i * ldc + j]);
        }
}

TEST(sgemm_shapes_isas_threads)
{
    static const size_t dims[] = {1, 5, 6, 7, 16, 17, 33, 130};
    static const size_t ks[] = {0, 1, 3, 8, 255, 257, 300};
    ingot__pool *pool2 = ingot__pool_create(NULL, 2);
    ASSERT_TRUE(pool2 != NULL);
    int cases = 0;
    for (int isa = 0; isa <= (int)ingot__cpu_isa(); isa++) {
        ingot__set_isa((ingot__isa)isa);
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
                    ref_gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C0, ldc, R);
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
    /* Crosses every blocking boundary (KC 256, MC 120, NC 3072) once. */
    size_t M = 250, N = 3100, K = 520;
    float *A = malloc(M * K * 4), *B = malloc(K * N * 4), *C = malloc(M * N * 4);
    double *R = malloc(M * N * sizeof *R);
    for (size_t i = 0; i < M * K; i++) A[i] = frand();
    for (size_t i = 0; i < K * N; i++) B[i] = frand();
    ingot__pool *pool = ingot__pool_create(NULL, 2);
    ASSERT_EQ(ingot__sgemm(pool, false, false, M, N, K, 1.0f, A, K, B, N, 0.0f, C, N), INGOT_OK);
    /* reference on a sample of rows (the full double loop would dominate the test's time) */
    for (size_t i = 0; i < M; i += 37) ref_gemm(false, false, 1, N, K, 1.0f, A + i * K, K, B, N, 0.0f, NULL, 0, R + i * N);
    double num = 0, den = 0;
    for (size_t i = 0; i < M; i += 37)
        for (size_t j = 0; j < N; j++) {
            double d = C[i * N + j] - R[i * N + j];
            num += d * d, den += R[i * N + j] * R[i * N + j];
        }
    ASSERT_TRUE(num / den <= 1e-10);
    ingot__pool_destroy(pool);
    free(A), free(B), free(C), free(R);
}

TEST(sgemm_small_m_streaming)
{
    /* Up to 16 rows of C, B is streamed rather than packed (AVX2): strips of 2048 columns, eight
     * k at a time, 2 x 4 dot-product tiles for B^T. Shapes cross those boundaries; results
     * must match a double reference and be bitwise the same with 1 and 2 threads. */
    static const size_t ms[] = {1, 3, 16}, ns[] = {5, 2053}, ks[] = {7, 8, 37};
    ingot__pool *pool2 = ingot__pool_create(NULL, 2);
    ASSERT_TRUE(pool2 != NULL);
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
                    ref_gemm(false, tb, M, N, K, 1.5f, A, lda, B, ldb, beta, C0, ldc, R);
                    ASSERT_EQ(ingot__sgemm(NULL, false, tb, M, N, K, 1.5f, A, lda, B, ldb, beta,
                                           C1, ldc), INGOT_OK);
                    ASSERT_EQ(ingot__sgemm(pool2, false, tb, M, N, K, 1.5f, A, lda, B, ldb, beta,
                                           C2, ldc), INGOT_OK);
                    for (size_t i = 0; i < M; i++) memcpy(got + i * N, C1 + i * ldc, N * 4);
                    double e = nmse(got, R, M * N);
                    CHECK(e <= 1e-10, "M=%zu N=%zu K=%zu tb=%d: nmse %g", M, N, K, tb, e);
                    CHECK(memcmp(C1, C2, M * ldc * 4) == 0,
                          "M=%zu N=%zu K=%zu tb=%d: 1 and 2 threads differ", M, N, K, tb);
                    for (size_t i = 0; i < M; i++) /* the padding column is never written */
                        CHECK(memcmp(&C1[i * ldc + N], &C0[i * ldc + N], 4) == 0, "pad %zu", i);
                    free(A), free(B), free(C0), free(C1), free(C2), free(got), free(R);
                }
    ingot__pool_destroy(pool2);
}

TEST(sgemv_both_ways)
{
    ingot__pool *pool = ingot__pool_create(NULL, 2);
    for (int isa = 0; isa <= (int)ingot__cpu_isa(); isa++) {
        ingot__set_isa((ingot__isa)isa);
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
                    for (size_t i = 0; i < out; i++) {
                        double s = 0;
                        for (size_t k = 0; k < in; k++)
                            s += (double)(t ? A[k * lda + i] : A[i * lda + k]) * x[k];
                        r[i] = t ? 2.0 * s - y0[i] : s;
                    }
                    memcpy(y, y0, out * 4);
                    ingot__sgemv(pool, t, M, N, t ? 2.0f : 1.0f, A, lda, x, t ? -1.0f : 0.0f, y);
                    float *y1 = malloc(out * 4);
                    memcpy(y1, y0, out * 4);
                    ingot__sgemv(NULL, t, M, N, t ? 2.0f : 1.0f, A, lda, x, t ? -1.0f : 0.0f, y1);
                    CHECK(memcmp(y, y1, out * 4) == 0, "%s sgemv%s M=%zu N=%zu: 1 and 2 threads differ (%g vs %g)", ingot__isa_name((ingot__isa)isa), t ? "^T" : "", M, N, y[out - 1], y1[out - 1]);
                    free(y1);
                    double e = nmse(y, r, out);
                    CHECK(e <= 1e-10, "%s sgemv%s M=%zu N=%zu nmse %g",
                          ingot__isa_name((ingot__isa)isa), t ? "^T" : "", M, N, e);
                }
                free(A), free(x), free(y), free(y0), free(r);
            }
    }
    ingot__set_isa(ingot__cpu_isa());
    ingot__pool_destroy(pool);
}

TEST(gemv_i8_exact)
{
    size_t M = 70, K = 1000;
    int8_t *W = malloc(M * K), *x = malloc(K);
    float ws[70], y[70];
    for (size_t i = 0; i < M * K; i++) W[i] = (int8_t)(frand() * 127.0f);
    for (size_t i = 0; i < K; i++) x[i] = (int8_t)(frand() * 127.0f);
    W[0] = -127, x[0] = -127, W[1] = -127, x[1] = 127; /* the extreme products */
    W[K] = 127, x[2] = 127;
    for (size_t i = 0; i < M; i++) ws[i] = 0.01f * (float)(i + 1);
    for (int isa = 0; isa <= (int)ingot__cpu_isa(); isa++) {
        ingot__set_isa((ingot__isa)isa);
        ingot__gemv_i8(NULL, M, K, W, K, ws, x, 0.5f, y);
        for (size_t i = 0; i < M; i++) {
            int64_t s = 0;
            for (size_t k = 0; k < K; k++) s += (int64_t)W[i * K + k] * x[k];
            CHECK(y[i] == (float)s * (ws[i] * 0.5f), "%s row %zu: %g vs %lld",
                  ingot__isa_name((ingot__isa)isa), i, y[i], (long long)s);
        }
    }
    ingot__set_isa(ingot__cpu_isa());
    free(W), free(x);
}

static double half(uint16_t h)
{
    int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : ldexp(m + 1024, e - 25);
    return s ? -v : v;
}

TEST(q8_0_quantize_and_gemv)
{
    size_t M = 33, K = 256, nb = K / 32;
    float *Wf = malloc(M * K * 4), *x = malloc(K * 4), y[33], y1[33], y2[33];
    for (size_t i = 0; i < M * K; i++) Wf[i] = frand() * 3.0f;
    for (size_t i = 0; i < K; i++) x[i] = frand();
    for (size_t i = 0; i < 32; i++) x[i] = 0.0f; /* an all-zero block: d = 0 */
    uint8_t *Wq = malloc(M * nb * 34), *xq = malloc(nb * 34);
    for (size_t i = 0; i < M; i++) ingot__quantize_q8_0(Wf + i * K, K, Wq + i * nb * 34);
    ingot__quantize_q8_0(x, K, xq);
    /* quantisation: per block d = amax / 127 (as f16), q = round(x / d) */
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
    ingot__set_isa(INGOT__ISA_SCALAR);
    ingot__gemv_q8_0(NULL, M, K, Wq, xq, y);
    ingot__set_isa(ingot__cpu_isa());
    ingot__pool *pool = ingot__pool_create(NULL, 2);
    ingot__gemv_q8_0(NULL, M, K, Wq, xq, y1);
    ingot__gemv_q8_0(pool, M, K, Wq, xq, y2);
    ingot__pool_destroy(pool);
    for (size_t i = 0; i < M; i++) {
        double s = 0;
        for (size_t b = 0; b < nb; b++) {
            uint16_t hw, hx;
            memcpy(&hw, Wq + (i * nb + b) * 34, 2);
            memcpy(&hx, xq + b * 34, 2);
            long dot = 0;
            for (int k = 0; k < 32; k++)
                dot += (long)(int8_t)Wq[(i * nb + b) * 34 + 2 + k] * (int8_t)xq[b * 34 + 2 + k];
            s += half(hw) * half(hx) * (double)dot;
        }
        CHECK(fabs(y[i] - s) <= 1e-4 * (1 + fabs(s)), "row %zu: %g vs %g", i, y[i], s);
        CHECK(fabs(y1[i] - s) <= 1e-4 * (1 + fabs(s)), "row %zu: %s %g vs %g", i,
              ingot__isa_name(ingot__cpu_isa()), y1[i], s);
        CHECK(y1[i] == y2[i], "row %zu: 1 and 2 threads differ", i);
    }
    free(Wf), free(x), free(Wq), free(xq);
}

TEST(gemv_q8_0_i8_threads)
{
    /* Large enough (over 256 KiB of weights) to be split over the workers: results must not
     * depend on the thread count, and the int8 ones stay exact. */
    size_t M = 300, K = 1024, nb = K / 32;
    float *Wf = malloc(M * K * 4), *x = malloc(K * 4), *y1 = malloc(M * 4), *y2 = malloc(M * 4);
    uint8_t *Wq = malloc(M * nb * 34), *xq = malloc(nb * 34);
    int8_t *Wi = malloc(M * K), *xi = malloc(K);
    float *ws = malloc(M * 4);
    for (size_t i = 0; i < M * K; i++) Wf[i] = frand(), Wi[i] = (int8_t)(frand() * 127.0f);
    for (size_t i = 0; i < K; i++) x[i] = frand(), xi[i] = (int8_t)(frand() * 127.0f);
    for (size_t i = 0; i < M; i++) ws[i] = 1.0f;
    for (size_t i = 0; i < M; i++) ingot__quantize_q8_0(Wf + i * K, K, Wq + i * nb * 34);
    ingot__quantize_q8_0(x, K, xq);
    ingot__pool *pool = ingot__pool_create(NULL, 2);
    ingot__gemv_q8_0(NULL, M, K, Wq, xq, y1);
    ingot__gemv_q8_0(pool, M, K, Wq, xq, y2);
    CHECK(memcmp(y1, y2, M * 4) == 0, "Q8_0: 1 and 2 threads differ");
    ingot__gemv_i8(pool, M, K, Wi, K, ws, xi, 1.0f, y2);
    for (size_t i = 0; i < M; i++) {
        int64_t s = 0;
        for (size_t k = 0; k < K; k++) s += (int64_t)Wi[i * K + k] * xi[k];
        CHECK(y2[i] == (float)s, "int8 row %zu: %g vs %lld", i, y2[i], (long long)s);
    }
    ingot__pool_destroy(pool);
    free(Wf), free(x), free(y1), free(y2), free(Wq), free(xq), free(Wi), free(xi), free(ws);
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

RUN_TESTS(T(sgemm_shapes_isas_threads), T(sgemm_large_blocks_cross), T(sgemm_small_m_streaming),
          T(sgemv_both_ways), T(gemv_i8_exact), T(q8_0_quantize_and_gemv),
          T(gemv_q8_0_i8_threads), T(pool_runs_every_task_once))
