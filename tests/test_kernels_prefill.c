/*
 * test_kernels_prefill.c - the prefill-shaped kernels (issue 15's prefill, issue 16's GEMM
 * cases): activation quantization the same bits at every level, the AMX tile GEMMs for Q8_0,
 * int8, the block types through int8 tiles and F16 through BF16 tiles, against double references
 * and the scalar dots, odd shapes, and results independent of the thread count.
 */
#include <math.h>
#include <stdlib.h>

#include "cpu/kernels/amx.h"
#include "cpu/kernels/kernels.h"
#include "harness.h"

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
        if (ingot__isa_supported((ingot__isa)l)) fprintf(stderr, " %s", ingot__isa_name((ingot__isa)l));
    fprintf(stderr, "; not supported here (not run):");
    for (int l = 0; l < INGOT__ISA_COUNT; l++)
        if (!ingot__isa_supported((ingot__isa)l)) fprintf(stderr, " %s", ingot__isa_name((ingot__isa)l));
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
        const size_t *ks = wt == INGOT_DTYPE_I8 ? ki8 : ingot_dtype_block_elems(wt) == 32 ? k32 : kq;
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

RUN_TESTS(T(qx_quantize_same_bits_every_level))
