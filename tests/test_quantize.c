/*
 * test_quantize.c - ingot_quantize (quant.h) against llama.cpp's reference quantizers written in
 * NumPy from their published description (tests/golden/quantize/gen_quantize.py): the same
 * blocks, byte for byte, on synthetic blocks and on the real weights of stories260K; the
 * normalised error of the result, decoded by ingot_dequantize (bit-exact with gguf-py), no
 * worse than the reference's; round trips, edge blocks and refusals.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "files.h"
#include "ingot/ingot.h"
#include "sha256.h"

#define GOLD INGOT_SOURCE_DIR "/tests/golden/quantize/"

static double nmse(const float *x, const float *y, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)x[i] - y[i];
        num += d * d;
        den += (double)x[i] * x[i];
    }
    return num / den;
}

TEST(matches_reference_blocks_and_error)
{
    size_t nin, ntxt;
    float *x = test_read_file(GOLD "input.bin", &nin);
    char *txt = test_read_file(GOLD "golden.txt", &ntxt);
    ASSERT_TRUE(x && txt);
    int lines = 0;
    for (char *line = strtok(txt, "\n"); line; line = strtok(NULL, "\n")) {
        char name[16], sha[65];
        unsigned long long first, n;
        double ref;
        if (line[0] == '#') continue;
        ASSERT_EQ(sscanf(line, "quant %15s %llu %llu %64s %lf", name, &first, &n, sha, &ref), 5);
        ASSERT_TRUE((first + n) * 4 <= nin);
        ingot_dtype dt;
        ASSERT_EQ(ingot_dtype_from_name(name, &dt), INGOT_OK);
        size_t bytes = (size_t)(n / ingot_dtype_block_elems(dt) * ingot_dtype_block_bytes(dt));
        uint8_t *q = malloc(bytes);
        float *y = malloc(n * sizeof *y);
        ingot_error e;
        ASSERT_EQ(ingot_quantize(dt, x + first, n, q, bytes, &e), INGOT_OK);
        char hex[65];
        test_sha256_hex(q, bytes, hex);
        CHECK(strcmp(hex, sha) == 0, "%s [%llu, +%llu): blocks differ from the reference", name,
              first, n);
        ASSERT_EQ(ingot_dequantize(dt, q, bytes, y, n, &e), INGOT_OK);
        double err = nmse(x + first, y, (size_t)n);
        CHECK(err <= ref * (1 + 1e-9), "%s: NMSE %.6e, reference %.6e", name, err, ref);
        fprintf(stderr, "  %-5s %-22s NMSE %.4e (reference %.4e)\n", name,
                first ? "stories260K token_embd" : "synthetic blocks", err, ref);
        free(q);
        free(y);
        lines++;
    }
    ASSERT_EQ(lines, 16);
    free(x);
    free(txt);
}

/* Requantizing the decoded values of a block gives the same block for the 32-blocks, whose
 * scales are fixed points of their own grid (absmax and min/max are taken again exactly). */
TEST(q8_0_is_stable)
{
    float x[64], y[64], z[64];
    for (int i = 0; i < 64; i++) x[i] = sinf((float)i * 0.37f) * (float)(i % 7 + 1);
    uint8_t a[68], b[68];
    ASSERT_EQ(ingot_quantize(INGOT_DTYPE_Q8_0, x, 64, a, sizeof a, NULL), INGOT_OK);
    ASSERT_EQ(ingot_dequantize(INGOT_DTYPE_Q8_0, a, sizeof a, y, 64, NULL), INGOT_OK);
    for (int i = 0; i < 64; i++) ASSERT_TRUE(fabsf(y[i] - x[i]) <= 7.0f / 127 * 0.5f * 1.01f);
    ASSERT_EQ(ingot_quantize(INGOT_DTYPE_Q8_0, y, 64, b, sizeof b, NULL), INGOT_OK);
    ASSERT_EQ(ingot_dequantize(INGOT_DTYPE_Q8_0, b, sizeof b, z, 64, NULL), INGOT_OK);
    ASSERT_EQ(memcmp(y, z, sizeof y), 0);
}

TEST(zero_and_constant_blocks)
{
    static const ingot_dtype types[] = {INGOT_DTYPE_Q8_0, INGOT_DTYPE_Q4_0, INGOT_DTYPE_Q4_1,
                                        INGOT_DTYPE_Q5_0, INGOT_DTYPE_Q5_1, INGOT_DTYPE_Q4_K,
                                        INGOT_DTYPE_Q5_K, INGOT_DTYPE_Q6_K};
    float zero[256] = {0}, y[256];
    uint8_t q[8 * 34]; /* the largest: Q8_0, 8 blocks of 34 bytes */
    for (size_t k = 0; k < sizeof types / sizeof *types; k++) {
        ingot_dtype dt = types[k];
        size_t n = 256, bytes = n / ingot_dtype_block_elems(dt) * ingot_dtype_block_bytes(dt);
        ASSERT_EQ(ingot_quantize(dt, zero, n, q, bytes, NULL), INGOT_OK);
        ASSERT_EQ(ingot_dequantize(dt, q, bytes, y, n, NULL), INGOT_OK);
        for (size_t i = 0; i < n; i++)
            CHECK(y[i] == 0, "%s zero block decodes %g", ingot_dtype_name(dt), y[i]);
    }
}

TEST(refusals)
{
    float x[256] = {0};
    uint8_t q[300];
    ingot_error e;
    ASSERT_EQ(ingot_quantize(INGOT_DTYPE_Q8_0, x, 31, q, 34, &e), INGOT_BAD_SIZE);
    ASSERT_EQ(ingot_quantize(INGOT_DTYPE_Q8_0, x, 32, q, 35, &e), INGOT_BAD_SIZE);
    ASSERT_EQ(ingot_quantize(INGOT_DTYPE_Q2_K, x, 256, q, 84, &e), INGOT_UNSUPPORTED);
    ASSERT_EQ(ingot_quantize(INGOT_DTYPE_F16, x, 256, q, 84, &e), INGOT_UNSUPPORTED);
    x[40] = NAN;
    ASSERT_EQ(ingot_quantize(INGOT_DTYPE_Q4_0, x, 64, q, 36, &e), INGOT_BAD_VALUE);
    ASSERT_TRUE(strstr(e.msg, "element 40 is NaN") != NULL);
    x[40] = -INFINITY;
    ASSERT_EQ(ingot_quantize(INGOT_DTYPE_Q6_K, x, 256, q, 210, &e), INGOT_BAD_VALUE);
    ASSERT_TRUE(strstr(e.msg, "infinite") != NULL);
    ASSERT_TRUE(ingot_quantize_supported(INGOT_DTYPE_Q5_K));
    ASSERT_TRUE(!ingot_quantize_supported(INGOT_DTYPE_Q3_K));
}

RUN_TESTS(T(matches_reference_blocks_and_error), T(q8_0_is_stable), T(zero_and_constant_blocks),
          T(refusals))
