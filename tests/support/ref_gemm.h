/*
 * ref_gemm.h - the double-precision references of the f32 kernel tests (test_kernels.c,
 * test_sgemm_blocks.c, test_kernels_prefill.c): a GEMM with both transposes and alpha/beta, and
 * the normalised mean squared error of a float result against it. Header-only: each test
 * program takes its copy.
 */
#ifndef INGOT_TEST_REF_GEMM_H
#define INGOT_TEST_REF_GEMM_H

#include <stdbool.h>
#include <stddef.h>

/* Normalised mean squared error of got against ref. */
static inline double nmse(const float *got, const double *ref, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double d = got[i] - ref[i];
        num += d * d;
        den += ref[i] * ref[i];
    }
    return den > 0 ? num / den : num;
}

/* out[M, N] = alpha * op(A) op(B) + beta * C0 in double (C0 not read when beta is 0). */
static inline void ref_sgemm(bool ta, bool tb, size_t M, size_t N, size_t K, float alpha,
                             const float *A, size_t lda, const float *B, size_t ldb, float beta,
                             const float *C0, size_t ldc, double *out)
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

#endif
