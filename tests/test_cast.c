/*
 * test_cast.c - ingot_cast (quant.h) against NumPy and torch (tests/golden/cast/gen_cast.py):
 * every pair of float types on every F16/BF16/F8 code and on 65536 sampled F32/F64 values plus
 * the special values (zeros, infinities, NaN payloads, ties, overflow thresholds), compared as
 * SHA-256 digests of the output bytes; and hand-checked values of the rules quant.h states.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "ingot/ingot.h"
#include "sha256.h"

#define GOLD INGOT_SOURCE_DIR "/tests/golden/cast/golden.txt"

/* the same lists as gen_cast.py */
static const uint32_t special32[] = {
    0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u, 0x7FC00000u, 0x7F800001u, 0xFFC00001u,
    0x7FA00000u, 0x477FE000u, 0x477FF000u, 0x477FEFFFu, 0x477FF001u, 0x43E00000u, 0x43E80000u,
    0x43E80001u, 0x43F00000u, 0x47600000u, 0x47700000u, 0x476FFFFFu, 0x47800000u, 0x33800000u,
    0x33000000u, 0x33000001u, 0x32FFFFFFu, 0x3B000000u, 0x3A800000u, 0x3A800001u, 0x37800000u,
    0x3F800000u, 0xBF800000u, 0x3F801000u, 0x3F803000u, 0x3F808000u, 0x3F818000u, 0x3F810000u,
    0x00000001u, 0x807FFFFFu, 0x7F7FFFFFu, 0x3F7FFFFFu, 0x3F900000u, 0x3F880000u};
static const uint64_t special64[] = {
    0x0000000000000000ull, 0x8000000000000000ull, 0x7FF0000000000000ull,
    0xFFF0000000000000ull, 0x7FF8000000000000ull, 0x7FF0000000000001ull,
    0xFFF4000000000000ull, 0x7FF0040000000000ull, 0x40EFFE0000000000ull,
    0x40EFFDFFFFFFFFFFull, 0x40EFFC0000000000ull, 0x3E70000000000000ull,
    0x3E70000000000001ull, 0x3F70020000000000ull, 0x3FF0020000100000ull,
    0x3FF0020000000000ull, 0x3FF0060000000000ull, 0x3FF0010000000001ull,
    0x3FF0030000000000ull, 0x0000000000000001ull, 0x47EFFFFFE0000000ull,
    0x47EFFFFFF0000000ull, 0x36A0000000000000ull, 0x369FFFFFFFFFFFFFull};

static uint32_t sample32(uint64_t i) { return (uint32_t)(i * 2654435761u); }
static uint64_t sample64(uint64_t i) { return i * 0x9E3779B97F4A7C15ull; }

static uint32_t sample_f32_bits(uint64_t i)
{
    uint32_t u = sample32(i);
    if (i & 1) u = (u & 0x807FFFFFu) | (100 + ((u >> 23) & 0xFF) % 46) << 23;
    return u;
}

static uint64_t sample_f64_bits(uint64_t i)
{
    uint64_t u = sample64(i);
    return (u & 0x800FFFFFFFFFFFFFull) | (863 + ((u >> 52) & 0x7FF) % 320) << 52;
}

static void store_le(uint8_t *p, uint64_t v, unsigned size)
{
    for (unsigned k = 0; k < size; k++) p[k] = (uint8_t)(v >> (8 * k));
}

/* The inputs of one source dtype, as stored bytes; *n elements. */
static uint8_t *inputs(ingot_dtype dt, uint64_t *n)
{
    unsigned es = ingot_dtype_block_bytes(dt);
    size_t n32 = sizeof special32 / sizeof *special32, n64 = sizeof special64 / sizeof *special64;
    *n = dt == INGOT_DTYPE_F64 ? 65536 + n64 : dt == INGOT_DTYPE_F32 ? 65536 + n32
         : es == 2 ? 65536 : 256;
    uint8_t *p = malloc(*n * es);
    for (uint64_t i = 0; i < *n; i++) {
        uint64_t v;
        if (dt == INGOT_DTYPE_F64) v = i < 65536 ? sample_f64_bits(i) : special64[i - 65536];
        else if (dt == INGOT_DTYPE_F32) v = i < 65536 ? sample_f32_bits(i) : special32[i - 65536];
        else v = i;
        store_le(p + i * es, v, es);
    }
    return p;
}

TEST(golden)
{
    FILE *f = fopen(GOLD, "r");
    ASSERT_TRUE(f != NULL);
    char line[256];
    int pairs = 0;
    while (fgets(line, sizeof line, f)) {
        char s[32], d[32], sha[65];
        unsigned long long n;
        if (line[0] == '#') continue;
        ASSERT_EQ(sscanf(line, "cast %31s %31s %llu %64s", s, d, &n, sha), 4);
        ingot_dtype sd, dd;
        ASSERT_EQ(ingot_dtype_from_name(s, &sd), INGOT_OK);
        ASSERT_EQ(ingot_dtype_from_name(d, &dd), INGOT_OK);
        ASSERT_TRUE(ingot_cast_supported(sd, dd));
        uint64_t m;
        uint8_t *in = inputs(sd, &m);
        ASSERT_U64(m, n);
        size_t ob = (size_t)n * ingot_dtype_block_bytes(dd);
        uint8_t *out = malloc(ob);
        ingot_error e;
        ASSERT_OK(ingot_cast(sd, in, (size_t)n * ingot_dtype_block_bytes(sd), dd, out, ob, n, &e));
        char hex[65];
        test_sha256_hex(out, ob, hex);
        CHECK(strcmp(hex, sha) == 0, "cast %s -> %s differs from NumPy/torch", s, d);
        if (strcmp(hex, sha) != 0) { /* say where, for whoever debugs it */
            fprintf(stderr, "  (%s -> %s: %llu elements)\n", s, d, n);
        }
        free(in);
        free(out);
        pairs++;
    }
    fclose(f);
    ASSERT_EQ(pairs, 48);
}

static uint16_t to_f16(float x)
{
    uint8_t o[2] = {0xEE, 0xEE};
    CHECK(ingot_cast(INGOT_DTYPE_F32, &x, 4, INGOT_DTYPE_F16, o, 2, 1, NULL) == INGOT_OK, "cast");
    return (uint16_t)(o[0] | o[1] << 8);
}

static uint8_t to_f8(float x, ingot_dtype dt)
{
    uint8_t o = 0xEE;
    CHECK(ingot_cast(INGOT_DTYPE_F32, &x, 4, dt, &o, 1, 1, NULL) == INGOT_OK, "cast");
    return o;
}

TEST(rules_by_hand)
{
    ASSERT_EQ(to_f16(65504.0f), 0x7BFF);
    ASSERT_EQ(to_f16(65519.99f), 0x7BFF);
    ASSERT_EQ(to_f16(65520.0f), 0x7C00); /* the tie rounds to even: infinity */
    ASSERT_EQ(to_f16(-INFINITY), 0xFC00);
    ASSERT_EQ(to_f8(448.0f, INGOT_DTYPE_F8_E4M3), 0x7E);
    ASSERT_EQ(to_f8(464.0f, INGOT_DTYPE_F8_E4M3), 0x7E);   /* tie to even: 448 */
    ASSERT_EQ(to_f8(464.5f, INGOT_DTYPE_F8_E4M3), 0x7F);   /* past 448: NaN */
    ASSERT_EQ(to_f8(-1e9f, INGOT_DTYPE_F8_E4M3), 0xFF);
    ASSERT_EQ(to_f8(INFINITY, INGOT_DTYPE_F8_E4M3), 0x7F);
    ASSERT_EQ(to_f8(57344.0f, INGOT_DTYPE_F8_E5M2), 0x7B);
    ASSERT_EQ(to_f8(61440.0f, INGOT_DTYPE_F8_E5M2), 0x7C);  /* tie to even: infinity */
    ASSERT_EQ(to_f8(61439.0f, INGOT_DTYPE_F8_E5M2), 0x7B);
    ASSERT_EQ(to_f8(-NAN, INGOT_DTYPE_F8_E5M2), 0xFF);
    ASSERT_EQ(to_f8(0x1p-17f, INGOT_DTYPE_F8_E5M2), 0x00); /* half the smallest: to even 0 */
    ASSERT_EQ(to_f8(0x1.8p-17f, INGOT_DTYPE_F8_E5M2), 0x01);
    ASSERT_EQ(to_f8(-0.0f, INGOT_DTYPE_F8_E4M3), 0x80);
    /* F64 -> F16 rounds once: 1 + 2^-11 + 2^-40 is above the tie, while through F32 it would
     * be the tie itself and round down to 1 */
    double d = 1.0 + 0x1p-11 + 0x1p-40;
    uint8_t o[2];
    ASSERT_OK(ingot_cast(INGOT_DTYPE_F64, &d, 8, INGOT_DTYPE_F16, o, 2, 1, NULL));
    ASSERT_EQ(o[0] | o[1] << 8, 0x3C01);
}

TEST(errors)
{
    uint8_t in[8] = {0}, out[8];
    ingot_error e;
    ASSERT_EQ(ingot_cast(INGOT_DTYPE_I32, in, 4, INGOT_DTYPE_F32, out, 4, 1, &e),
              INGOT_UNSUPPORTED);
    ASSERT_EQ(ingot_cast(INGOT_DTYPE_F32, in, 4, INGOT_DTYPE_Q8_0, out, 4, 1, &e),
              INGOT_UNSUPPORTED);
    ASSERT_EQ(ingot_cast(INGOT_DTYPE_F32, in, 4, INGOT_DTYPE_F8_E4M3FNUZ, out, 1, 1, &e),
              INGOT_UNSUPPORTED);
    ASSERT_EQ(ingot_cast(INGOT_DTYPE_F32, in, 8, INGOT_DTYPE_F16, out, 2, 1, &e), INGOT_BAD_SIZE);
    ASSERT_EQ(ingot_cast(INGOT_DTYPE_F32, in, 4, INGOT_DTYPE_F16, out, 4, 1, &e), INGOT_BAD_SIZE);
    ASSERT_EQ(ingot_cast(INGOT_DTYPE_F32, NULL, 4, INGOT_DTYPE_F16, out, 2, 1, &e), INGOT_MISUSE);
    ASSERT_EQ(ingot_cast((ingot_dtype)999, in, 4, INGOT_DTYPE_F16, out, 2, 1, &e), INGOT_BAD_TYPE);
}

RUN_TESTS(T(golden), T(rules_by_hand), T(errors))
