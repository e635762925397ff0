/*
 * test_kernels_prefill.c - the prefill-shaped kernels (issue 15's prefill, issue 16's GEMM
 * cases): activation quantization the same bits at every level, the AMX tile GEMMs for Q8_0,
 * int8, the block types through int8 tiles and F16 through BF16 tiles, against double references
 * and the scalar dots, odd shapes, and results independent of the thread count.
 */
#include <math.h>
#include <stdlib.h>

#include "cpu/kernels/amx.h"
#include "cpu/kernels/igemm.h"
#include "cpu/kernels/kernels.h"
#include "harness.h"
#include "support/ref_gemm.h"

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static uint64_t rng_next(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return rng;
}
static float frand(void) /* uniform in [-1, 1) */
{
    return (float)((rng_next() >> 40) * (1.0 / 8388608.0)) - 1.0f;
}

static bool level_on(int isa)
{
    if (!ingot__isa_supported((ingot__isa)isa)) return false;
    return ingot__set_isa((ingot__isa)isa) == (ingot__isa)isa;
}

static void say_levels(void)
{
    fprintf(stderr, "ISA levels run:");
    for (int l = 0; l < INGOT__ISA_COUNT; l++)
        if (ingot__isa_supported((ingot__isa)l))
            fprintf(stderr, " %s", ingot__isa_name((ingot__isa)l));
    fprintf(stderr, "; not supported here (not run):");
    for (int l = 0; l < INGOT__ISA_COUNT; l++)
        if (!ingot__isa_supported((ingot__isa)l))
            fprintf(stderr, " %s", ingot__isa_name((ingot__isa)l));
    fprintf(stderr, "\n");
}

static const ingot_dtype qtypes[] = {INGOT_DTYPE_I8, INGOT_DTYPE_Q8_0, INGOT_DTYPE_Q4_0,
                                     INGOT_DTYPE_Q4_K, INGOT_DTYPE_Q5_K, INGOT_DTYPE_Q6_K};

TEST(qx_quantize_same_bits_every_level)
{
    /* ingot__qx_quantize gives the same bytes (q, d, the sums) at every level: random rows at
     * several scales, exact halves (x / d = k + 0.5: rounded away from zero), an all-zero block,
     * blocks with NaN, inf, -0.0, and I8 rows of lengths that are not multiples of 16. */
    say_levels();
    static const size_t kq[] = {256, 768}, k32[] = {32, 96, 4352}, ki8[] = {1, 15, 17, 100, 1030};
    int compared = 0;
    for (size_t ti = 0; ti < 6; ti++) {
        ingot_dtype wt = qtypes[ti];
        const size_t *ks = wt == INGOT_DTYPE_I8                     ? ki8
                           : ingot_dtype_block_elems(wt) == 32 ? k32
                                                                : kq;
        size_t nk = wt == INGOT_DTYPE_I8 ? 5 : ingot_dtype_block_elems(wt) == 32 ? 3 : 2;
        for (size_t kk = 0; kk < nk; kk++)
            for (int variant = 0; variant < 4; variant++) {
                size_t K = ks[kk], n = ingot__qx_bytes(wt, K);
                float *x = malloc(K * 4);
                float scale = variant == 1 ? 1e-30f : variant == 2 ? 3e30f : 4.0f;
                for (size_t i = 0; i < K; i++) x[i] = frand() * scale;
                if (variant == 3) { /* exact halves: max 127, so d = 1 */
                    for (size_t i = 0; i < K; i++) x[i] = (float)((int)(i % 254) - 127) + 0.5f;
                    x[0] = 127.0f;
                    if (K > 40) x[33] = -0.0f, x[34] = -126.5f;
                }
                if (variant == 0 && K >= 64) {
                    for (size_t i = 0; i < 16 && i < K; i++) x[i] = 0.0f; /* part of a block */
                    x[K - 1] = NAN;
                    x[K / 2] = INFINITY;
                }
                if (variant == 1 && K >= 2) x[1] = -0.0f;
                uint8_t *a = aligned_alloc(64, n), *b = aligned_alloc(64, n);
                memset(a, 0xAB, n);
                memset(b, 0xAB, n);
                ingot__set_isa(INGOT__ISA_SCALAR);
                ingot__qx_quantize(wt, x, K, a);
                for (int isa = 1; isa < INGOT__ISA_COUNT; isa++) {
                    if (!level_on(isa)) continue;
                    ingot__qx_quantize(wt, x, K, b);
                    CHECK(memcmp(a, b, n) == 0, "%s K=%zu variant %d: %s differs from scalar",
                          ingot_dtype_name(wt), K, variant, ingot__isa_name((ingot__isa)isa));
                    compared++;
                }
                ingot__set_isa(ingot__cpu_isa());
                free(a), free(b), free(x);
            }
    }
    fprintf(stderr, "qx_quantize: %d level comparisons\n", compared);
}

static uint16_t f16_bits(float v)
{
    uint16_t h;
    ingot_f32_encode(INGOT_DTYPE_F16, &v, 1, &h, 2, NULL);
    return h;
}

/* Random valid weight rows of a block type (random quants; scales that keep the values near 1),
 * or F16 values in [-1, 1). */
static void fill_weights(ingot_dtype wt, uint8_t *w, size_t rows, size_t K)
{
    if (wt == INGOT_DTYPE_F16) {
        for (size_t i = 0; i < rows * K; i++) {
            uint16_t h = f16_bits(frand());
            memcpy(w + 2 * i, &h, 2);
        }
        return;
    }
    size_t bb = ingot_dtype_block_bytes(wt), be = ingot_dtype_block_elems(wt);
    size_t n = rows * (K / be) * bb;
    for (size_t i = 0; i < n; i++) w[i] = (uint8_t)(rng_next() >> 24);
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
}

static size_t row_bytes(ingot_dtype wt, size_t K)
{
    if (wt == INGOT_DTYPE_F16) return 2 * K;
    return K / ingot_dtype_block_elems(wt) * ingot_dtype_block_bytes(wt);
}

/* R[i * M + m] = sum_k deq(W)[m, k] X[i, k] in double. */
static void ref_gemm(ingot_dtype wt, const uint8_t *w, size_t M, size_t K, const float *X,
                     size_t nx, double *R)
{
    size_t ldw = row_bytes(wt, K);
    float *row = malloc(K * 4);
    for (size_t m = 0; m < M; m++) {
        ingot_dequantize(wt, w + m * ldw, ldw, row, K, NULL);
        for (size_t i = 0; i < nx; i++) {
            double sum = 0;
            for (size_t k = 0; k < K; k++) sum += (double)row[k] * X[i * K + k];
            R[i * M + m] = sum;
        }
    }
    free(row);
}

/* The prefill GEMM as the cpu backend calls it: f32 rows X, no quantized copy where the kernel
 * reads X (ingot__qgemm_reads_f32). */
static ingot_status prefill_gemm(ingot__pool *pool, ingot_dtype wt, size_t M, size_t K,
                                 const uint8_t *w, const float *X, size_t nx, bool acc, float *Y)
{
    size_t ldw = row_bytes(wt, K);
    if (wt == INGOT_DTYPE_F16) {
        ingot__gemm_half(pool, wt, M, K, w, K, nx, X, K, acc, Y, M);
        return INGOT_OK;
    }
    uint8_t *xq = NULL;
    if (!ingot__qgemm_reads_f32(wt, K, nx)) {
        size_t xb = ingot__qx_bytes(wt, K);
        xq = aligned_alloc(64, nx * xb);
        for (size_t i = 0; i < nx; i++) ingot__qx_quantize(wt, X + i * K, K, xq + i * xb);
    }
    ingot_status st = ingot__qgemm(pool, wt, M, K, w, ldw, NULL, xq, X, K, nx, acc, Y, M);
    free(xq);
    return st;
}

TEST(amx_decoded_tiles_against_f32)
{
    /* At the AMX level F16 and the block types (Q8_0, Q4_0, Q4_K, Q5_K, Q6_K) against 32 or
     * more f32 activation rows (INGOT__QGEMM_DEQUANT_ROWS) run on BF16 tiles, the activations
     * split into hi + lo; F16 weights split exactly into hi + lo (three products): against the
     * double reference on the decoded weights NMSE <= 1e-9 (f32 GEMM's accuracy); block types'
     * decoded weights rounded to one bf16 (8 significant bits: NMSE about 3e-6, <= 2e-5
     * asserted, against the 5e-4 of the 8-bit paths; the int8 dots on quantized activations
     * give about 1e-5); partial tiles of weight rows (1, 17,
     * 33: the second 16-row half empty, partial, full) and of activation rows (32, 33, 40, 47),
     * K with a partial 128-column chunk (96, 288; 256, 768 for the K-quants); 1, 2 and 3
     * threads give the same bits; accumulate adds onto Y. */
    if (!ingot__isa_supported(INGOT__ISA_AMX)) {
        fprintf(stderr, "amx: not supported here, not run\n");
        return;
    }
    static const ingot_dtype types[] = {INGOT_DTYPE_F16,  INGOT_DTYPE_Q8_0, INGOT_DTYPE_Q4_0,
                                        INGOT_DTYPE_Q4_K, INGOT_DTYPE_Q5_K, INGOT_DTYPE_Q6_K};
    static const size_t ms[] = {1, 17, 33, 172}, nxs[] = {32, 33, 40, 47};
    ingot__pool *p2 = ingot__pool_create(NULL, 2), *p3 = ingot__pool_create(NULL, 3);
    double worst = 0;
    for (size_t ti = 0; ti < 6; ti++)
        for (size_t ci = 0; ci < 4; ci++) {
            ingot_dtype wt = types[ti];
            bool kq = ingot_dtype_block_elems(wt) == 256;
            size_t M = ms[ci], nx = nxs[(ci + ti) % 4], K = kq ? (ci % 2 ? 768 : 256)
                                                                : (ci % 2 ? 288 : 96);
            ingot__set_isa(INGOT__ISA_AMX);
            ASSERT_TRUE(ingot__amx_ok(wt, K, nx, true));
            ASSERT_TRUE(wt == INGOT_DTYPE_F16 || ingot__qgemm_reads_f32(wt, K, nx));
            uint8_t *w = malloc(M * row_bytes(wt, K));
            float *X = malloc(nx * K * 4), *Y1 = malloc(nx * M * 4), *Y2 = malloc(nx * M * 4);
            float *Y3 = malloc(nx * M * 4);
            double *R = malloc(nx * M * sizeof *R);
            fill_weights(wt, w, M, K);
            for (size_t i = 0; i < nx * K; i++) X[i] = frand();
            ref_gemm(wt, w, M, K, X, nx, R);
            for (size_t i = 0; i < nx * M; i++) Y1[i] = NAN, Y3[i] = 2.0f;
            ASSERT_OK(prefill_gemm(NULL, wt, M, K, w, X, nx, false, Y1));
            ASSERT_OK(prefill_gemm(p2, wt, M, K, w, X, nx, false, Y2));
            ASSERT_OK(prefill_gemm(p3, wt, M, K, w, X, nx, true, Y3));
            double e = nmse(Y1, R, nx * M), lim = wt == INGOT_DTYPE_F16 ? 1e-9 : 2e-5;
            worst = e > worst ? e : worst;
            CHECK(e <= lim, "%s amx M=%zu nx=%zu K=%zu: nmse %g", ingot_dtype_name(wt), M, nx,
                  K, e);
            CHECK(memcmp(Y1, Y2, nx * M * 4) == 0, "%s M=%zu nx=%zu: 1 and 2 threads differ",
                  ingot_dtype_name(wt), M, nx);
            for (size_t i = 0; i < nx * M; i++)
                CHECK(Y3[i] == 2.0f + Y1[i], "%s M=%zu nx=%zu: 3 threads + accumulate at %zu",
                      ingot_dtype_name(wt), M, nx, i);
            ingot__set_isa(ingot__cpu_isa());
            free(w), free(X), free(Y1), free(Y2), free(Y3), free(R);
        }
    fprintf(stderr, "amx decoded tiles: worst nmse %g (block types; F16 <= 1e-9)\n", worst);
    ingot__pool_destroy(p2);
    ingot__pool_destroy(p3);
}

TEST(amx_long_batches_in_passes)
{
    /* Batches longer than one pass of 256 activation rows run pass by pass: 270 rows (a last
     * pass of 14, under a tile's 16 and under the 32 that pick the bf16 route: it must keep
     * the batch's route, and needs no quantized rows) and 300, against the double reference
     * (limits as above), 1 and 2 threads bitwise, accumulate. */
    if (!ingot__isa_supported(INGOT__ISA_AMX)) {
        fprintf(stderr, "amx: not supported here, not run\n");
        return;
    }
    static const ingot_dtype types[] = {INGOT_DTYPE_F16, INGOT_DTYPE_Q8_0, INGOT_DTYPE_Q4_K};
    ingot__pool *p2 = ingot__pool_create(NULL, 2);
    for (size_t ti = 0; ti < 3; ti++)
        for (size_t ci = 0; ci < 2; ci++) {
            ingot_dtype wt = types[ti];
            size_t M = 40, nx = ci ? 300 : 270, K = wt == INGOT_DTYPE_Q4_K ? 256 : 288;
            ingot__set_isa(INGOT__ISA_AMX);
            uint8_t *w = malloc(M * row_bytes(wt, K));
            float *X = malloc(nx * K * 4), *Y1 = malloc(nx * M * 4), *Y2 = malloc(nx * M * 4);
            double *R = malloc(nx * M * sizeof *R);
            fill_weights(wt, w, M, K);
            for (size_t i = 0; i < nx * K; i++) X[i] = frand();
            ref_gemm(wt, w, M, K, X, nx, R);
            for (size_t i = 0; i < nx * M; i++) Y2[i] = 2.0f;
            ASSERT_OK(prefill_gemm(NULL, wt, M, K, w, X, nx, false, Y1));
            ASSERT_OK(prefill_gemm(p2, wt, M, K, w, X, nx, true, Y2));
            double e = nmse(Y1, R, nx * M), lim = wt == INGOT_DTYPE_F16 ? 1e-9 : 2e-5;
            CHECK(e <= lim, "%s nx=%zu: nmse %g", ingot_dtype_name(wt), nx, e);
            double tail = nmse(Y1 + 256 * M, R + 256 * M, (nx - 256) * M);
            CHECK(tail <= lim, "%s nx=%zu: last pass nmse %g", ingot_dtype_name(wt), nx, tail);
            for (size_t i = 0; i < nx * M; i++)
                CHECK(Y2[i] == 2.0f + Y1[i], "%s nx=%zu: 2 threads + accumulate at %zu",
                      ingot_dtype_name(wt), nx, i);
            ingot__set_isa(ingot__cpu_isa());
            free(w), free(X), free(Y1), free(Y2), free(R);
        }
    ingot__pool_destroy(p2);
}

TEST(amx_q8_0_int8_tiles_block_tails)
{
    /* Q8_0 without f32 activations stays on int8 tiles, four 32-blocks in flight: row lengths
     * of 3, 7 and 9 blocks (the one-block tail alone, and after whole fours) against the scalar
     * dots on the same quantized activations (NMSE <= 1e-9), 1 and 2 threads bitwise. */
    if (!ingot__isa_supported(INGOT__ISA_AMX)) {
        fprintf(stderr, "amx: not supported here, not run\n");
        return;
    }
    static const size_t ks[] = {96, 224, 288}, ms[] = {5, 16, 40};
    ingot__pool *p2 = ingot__pool_create(NULL, 2);
    for (size_t ci = 0; ci < 3; ci++) {
        ingot_dtype wt = INGOT_DTYPE_Q8_0;
        size_t K = ks[ci], M = ms[ci], nx = 16 + ci * 9, ldw = row_bytes(wt, K);
        size_t xb = ingot__qx_bytes(wt, K);
        uint8_t *w = malloc(M * ldw), *xq = aligned_alloc(64, nx * xb);
        float *X = malloc(nx * K * 4), *Y0 = malloc(nx * M * 4), *Y1 = malloc(nx * M * 4);
        float *Y2 = malloc(nx * M * 4);
        double *R = malloc(nx * M * sizeof *R);
        fill_weights(wt, w, M, K);
        for (size_t i = 0; i < nx * K; i++) X[i] = frand();
        for (size_t i = 0; i < nx; i++) ingot__qx_quantize(wt, X + i * K, K, xq + i * xb);
        ingot__set_isa(INGOT__ISA_SCALAR);
        ASSERT_OK(ingot__qgemm(NULL, wt, M, K, w, ldw, NULL, xq, NULL, 0, nx, false, Y0, M));
        ingot__set_isa(INGOT__ISA_AMX);
        ASSERT_OK(ingot__qgemm(NULL, wt, M, K, w, ldw, NULL, xq, NULL, 0, nx, false, Y1, M));
        ASSERT_OK(ingot__qgemm(p2, wt, M, K, w, ldw, NULL, xq, NULL, 0, nx, false, Y2, M));
        for (size_t i = 0; i < nx * M; i++) R[i] = Y0[i];
        double e = nmse(Y1, R, nx * M);
        CHECK(e <= 1e-9, "Q8_0 int8 tiles K=%zu M=%zu nx=%zu: nmse %g vs scalar", K, M, nx, e);
        CHECK(memcmp(Y1, Y2, nx * M * 4) == 0, "Q8_0 int8 tiles K=%zu: threads differ", K);
        ingot__set_isa(ingot__cpu_isa());
        free(w), free(xq), free(X), free(Y0), free(Y1), free(Y2), free(R);
    }
    ingot__pool_destroy(p2);
}

TEST(prefill_f32_route_every_level)
{
    /* Where ingot__qgemm_reads_f32 says so, the quantized copy may be left out (xq NULL): on
     * every level, 40 activation rows (the f32 routes: bf16 tiles at AMX, NMSE <= 2e-5 as
     * above; dequantized panels and f32 GEMM below, NMSE <= 1e-9; at AVX-512 VNNI the int8
     * route instead, NMSE <= 1e-4) against the double reference;
     * with 8 rows the dots run and need xq (reads_f32 false). */
    static const ingot_dtype types[] = {INGOT_DTYPE_Q8_0, INGOT_DTYPE_Q4_0, INGOT_DTYPE_Q4_K,
                                        INGOT_DTYPE_Q5_K, INGOT_DTYPE_Q6_K};
    size_t M = 37, nx = 40;
    for (size_t ti = 0; ti < 5; ti++) {
        ingot_dtype wt = types[ti];
        size_t K = ingot_dtype_block_elems(wt) == 256 ? 512 : 160;
        uint8_t *w = malloc(M * row_bytes(wt, K));
        float *X = malloc(nx * K * 4), *Y = malloc(nx * M * 4);
        double *R = malloc(nx * M * sizeof *R);
        fill_weights(wt, w, M, K);
        for (size_t i = 0; i < nx * K; i++) X[i] = frand();
        ref_gemm(wt, w, M, K, X, nx, R);
        for (int isa = 0; isa < INGOT__ISA_COUNT; isa++) {
            if (!level_on(isa)) continue;
            CHECK(ingot__qgemm_reads_f32(wt, K, nx), "%s %s: 40 rows not on an f32 route",
                  ingot_dtype_name(wt), ingot__isa_name((ingot__isa)isa));
            CHECK(!ingot__qgemm_reads_f32(wt, K, 8), "%s %s: 8 rows said to read f32",
                  ingot_dtype_name(wt), ingot__isa_name((ingot__isa)isa));
            ASSERT_OK(ingot__qgemm(NULL, wt, M, K, w, row_bytes(wt, K), NULL, NULL, X, K, nx,
                                   false, Y, M));
            /* AVX-512 VNNI: int8 activations per 32 elements for all five types, Q6_K
             * included (igemm.h; the bound of test_igemm.c); the f32 route, still there for
             * NaN, checked beside it */
            bool i8 = isa == INGOT__ISA_AVX512_VNNI && ingot__igemm_ok(wt, K);
            double e = nmse(Y, R, nx * M),
                   lim = isa == INGOT__ISA_AMX ? 2e-5 : i8 ? 1e-4 : 1e-9;
            CHECK(e <= lim, "%s %s: nmse %g", ingot_dtype_name(wt),
                  ingot__isa_name((ingot__isa)isa), e);
            if (i8) {
                ASSERT_OK(ingot__dequant_gemm(NULL, wt, M, K, w, row_bytes(wt, K), X, K, nx,
                                              false, Y, M));
                e = nmse(Y, R, nx * M);
                CHECK(e <= 1e-9, "%s f32 route: nmse %g", ingot_dtype_name(wt), e);
            }
        }
        ingot__set_isa(ingot__cpu_isa());
        free(w), free(X), free(Y), free(R);
    }
    ASSERT_TRUE(!ingot__qgemm_reads_f32(INGOT_DTYPE_I8, 256, 64)); /* int8 always quantized */
}

RUN_TESTS(T(qx_quantize_same_bits_every_level), T(amx_decoded_tiles_against_f32),
          T(amx_long_batches_in_passes), T(amx_q8_0_int8_tiles_block_tails),
          T(prefill_f32_route_every_level))
