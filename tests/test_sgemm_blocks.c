/*
 * test_sgemm_blocks.c - the f32 GEMM's blocks chosen by the L2 size (issue 16, ninth round): the
 * L2 size read from the CPU and its override, and both AVX2 choices (the column walk with Zen's
 * blocks, the rows-first walk with a B block in a large L2) run whatever this machine's L2 is,
 * over shapes at +-1 of every block, every transpose and padded leading dimensions, against a
 * double reference, bitwise the same at 1, 2 and 3 threads and through ingot__sgemm_serial.
 */
#define _GNU_SOURCE /* sysconf(_SC_LEVEL2_CACHE_SIZE) */
#include <stdlib.h>
#include <unistd.h>

#include "cpu/kernels/kernels.h"
#include "harness.h"
#include "support/ref_gemm.h"

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static float frand(void) /* uniform in [-1, 1) */
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (float)((rng >> 40) * (1.0 / 8388608.0)) - 1.0f;
}

TEST(l2_size_and_override)
{
    size_t cpu = ingot__cpu_l2_bytes();
#if defined(__x86_64__) && defined(_SC_LEVEL2_CACHE_SIZE)
    /* glibc reads the same CPUID leaves on its own; the two must agree where both know */
    long sc = sysconf(_SC_LEVEL2_CACHE_SIZE);
    if (!getenv("INGOT_L2_BYTES") && sc > 0) ASSERT_U64(cpu, (uint64_t)sc);
#endif
    fprintf(stderr, "  L2 %zu bytes: AVX2 GEMM blocks %s\n", cpu,
            ingot__sgemm_avx2_large_l2() ? "large-L2 (rows first)" : "Zen's (column walk)");
    ingot__set_l2_bytes(512 * 1024);
    ASSERT_U64(ingot__cpu_l2_bytes(), 512 * 1024);
    ASSERT_TRUE(!ingot__sgemm_avx2_large_l2());
    ingot__set_l2_bytes(1024 * 1024); /* Zen 4's 1 MB keeps the blocks measured there */
    ASSERT_TRUE(!ingot__sgemm_avx2_large_l2());
    ingot__set_l2_bytes(1024 * 1024 + 1);
    ASSERT_TRUE(ingot__sgemm_avx2_large_l2());
    ingot__set_l2_bytes(2 * 1024 * 1024);
    ASSERT_TRUE(ingot__sgemm_avx2_large_l2());
    ingot__set_l2_bytes(0);
    ASSERT_U64(ingot__cpu_l2_bytes(), cpu);
    ASSERT_EQ(ingot__sgemm_avx2_large_l2(), cpu > 1024 * 1024);
}

/* The two AVX2 choices at every level (the others do not depend on it: checked too). Shapes
 * at +-1 of the large-L2 blocks (MC 72, KC 384, NC 768) and of Zen's (MC 120, KC 256, NC 3072);
 * M > 16 or A transposed, so that the blocked path runs. */
TEST(sgemm_both_l2_choices)
{
    static const size_t shapes[][3] = {{71, 769, 385}, {73, 767, 383}, {72, 768, 384},
                                       {145, 1537, 97}, {121, 300, 257}, {19, 3073, 255},
                                       {17, 100, 769}, {7, 50, 400}};
    static const size_t l2s[2] = {512 * 1024, 2 * 1024 * 1024};
    ingot__pool *pools[3] = {NULL, ingot__pool_create(NULL, 2), ingot__pool_create(NULL, 3)};
    ASSERT_TRUE(pools[1] != NULL && pools[2] != NULL);
    void *scratch = aligned_alloc(64, ingot__sgemm_scratch_bytes());
    ASSERT_TRUE(scratch != NULL);
    int cases = 0, differ = 0;
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        size_t M = shapes[si][0], N = shapes[si][1], K = shapes[si][2];
        bool ta = si & 1 || si == 7, tb = (si >> 1) & 1;
        float alpha = si % 4 == 3 ? -0.75f : 1.0f, beta = si % 3 == 0 ? 0.0f : 0.5f;
        size_t lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 5, ldc = N + 2;
        size_t arows = ta ? K : M, brows = tb ? N : K;
        float *A = malloc(arows * lda * sizeof *A), *B = malloc(brows * ldb * sizeof *B);
        float *C0 = malloc(M * ldc * sizeof *C0), *C[4], *packed = malloc(M * N * sizeof *packed);
        float *first = malloc(M * ldc * sizeof *first);
        double *R = malloc(M * N * sizeof *R);
        ASSERT_TRUE(A && B && C0 && packed && R && first);
        for (int t = 0; t < 4; t++) ASSERT_TRUE((C[t] = malloc(M * ldc * sizeof *C0)) != NULL);
        for (size_t i = 0; i < arows * lda; i++) A[i] = frand();
        for (size_t i = 0; i < brows * ldb; i++) B[i] = frand();
        for (size_t i = 0; i < M * ldc; i++) C0[i] = frand();
        ref_sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C0, ldc, R);
        for (int isa = 0; isa < INGOT__ISA_COUNT; isa++) {
            if (!ingot__isa_supported((ingot__isa)isa)) continue;
            ASSERT_EQ(ingot__set_isa((ingot__isa)isa), isa);
            for (int li = 0; li < 2; li++) {
                ingot__set_l2_bytes(l2s[li]);
                for (int t = 0; t < 4; t++) {
                    memcpy(C[t], C0, M * ldc * sizeof *C0);
                    if (t < 3)
                        ASSERT_OK(ingot__sgemm(pools[t], ta, tb, M, N, K, alpha, A, lda, B, ldb,
                                               beta, C[t], ldc));
                    else
                        ingot__sgemm_serial(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C[t],
                                            ldc, scratch);
                }
                const char *lv = ingot__isa_name((ingot__isa)isa);
                for (size_t i = 0; i < M; i++) memcpy(packed + i * N, C[0] + i * ldc, N * 4);
                double e = nmse(packed, R, M * N);
                CHECK(e <= 1e-7, "isa %s L2 %zu M=%zu N=%zu K=%zu ta=%d tb=%d: nmse %g", lv,
                      l2s[li], M, N, K, ta, tb, e);
                for (int t = 1; t < 4; t++)
                    CHECK(memcmp(C[0], C[t], M * ldc * sizeof *C0) == 0,
                          "isa %s L2 %zu M=%zu N=%zu K=%zu: %s differs from 1 thread", lv,
                          l2s[li], M, N, K, t == 3 ? "ingot__sgemm_serial" : t == 1 ? "2 threads"
                                                                                  : "3 threads");
                for (size_t i = 0; i < M; i++) /* the padding columns of C are never written */
                    CHECK(memcmp(C[0] + i * ldc + N, C0 + i * ldc + N, 2 * sizeof *C0) == 0,
                          "isa %s L2 %zu: padding of C row %zu written", lv, l2s[li], i);
                /* At the AVX2 levels the choices block K differently (256 / 384), so past one
                 * block the bits differ: evidence that each choice ran its own blocks. */
                if (li == 0)
                    memcpy(first, C[0], M * ldc * sizeof *C0);
                else if (isa == INGOT__ISA_AVX2 && K > 256)
                    differ += memcmp(first, C[0], M * ldc * sizeof *C0) != 0;
                cases++;
            }
        }
        for (int t = 0; t < 4; t++) free(C[t]);
        free(A), free(B), free(C0), free(packed), free(R), free(first);
    }
    ingot__set_l2_bytes(0);
    ingot__set_isa(ingot__cpu_isa());
    ingot__pool_destroy(pools[1]);
    ingot__pool_destroy(pools[2]);
    free(scratch);
    ASSERT_TRUE(cases >= 16);
#if defined(__x86_64__)
    if (ingot__isa_supported(INGOT__ISA_AVX2)) ASSERT_EQ(differ, 6);
#endif
}

RUN_TESTS(T(l2_size_and_override), T(sgemm_both_l2_choices))
