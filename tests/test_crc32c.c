/* test_crc32c.c - CRC-32C: published check values, every accelerated path against the portable
 * slice-by-8 code for all lengths and alignments around each path's thresholds, continuation,
 * ingot_crc32c_combine, and the generated tables (scripts/gen_crc32c_tables.c re-run here). */
#include <fcntl.h>
#include <unistd.h>

#include "crc32c.h"
#include "harness.h"

#include "crc32c_tables.h"

/* The generator, compiled into this test with its main renamed; its output is compared with the
 * checked-in header byte for byte. */
int gen_crc32c_tables_main(void);
#define main gen_crc32c_tables_main
#include "../scripts/gen_crc32c_tables.c"
#undef main

/* Bit-at-a-time reference, independent of every table. */
static uint32_t crc_bitwise(uint32_t crc, const uint8_t *p, size_t n)
{
    crc = ~crc;
    while (n--) {
        crc ^= *p++;
        for (int k = 0; k < 8; k++) crc = (crc & 1) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
    }
    return ~crc;
}

static uint8_t *pattern(size_t n, uint64_t seed)
{
    uint8_t *b = malloc(n ? n : 1);
    if (!b) abort();
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        b[i] = (uint8_t)(x >> 24);
    }
    return b;
}

TEST(test_crc32c_check_values)
{
    /* "123456789" is the catalogue check value; the 32-byte vectors are RFC 3720 B.4. */
    ASSERT_EQ(ingot_crc32c(0, "123456789", 9), 0xE3069283u);
    ASSERT_EQ(ingot__crc32c_sw(0, "123456789", 9), 0xE3069283u);
    ASSERT_EQ(ingot__crc32c_sse42(0, "123456789", 9), 0xE3069283u);
    ASSERT_EQ(crc_bitwise(0, (const uint8_t *)"123456789", 9), 0xE3069283u);
    uint8_t v[32];
    memset(v, 0, sizeof v);
    ASSERT_EQ(ingot_crc32c(0, v, 32), 0x8A9136AAu);
    memset(v, 0xFF, sizeof v);
    ASSERT_EQ(ingot_crc32c(0, v, 32), 0x62A8AB43u);
    for (int i = 0; i < 32; i++) v[i] = (uint8_t)i;
    ASSERT_EQ(ingot_crc32c(0, v, 32), 0x46DD794Eu);
    for (int i = 0; i < 32; i++) v[i] = (uint8_t)(31 - i);
    ASSERT_EQ(ingot_crc32c(0, v, 32), 0x113FDB5Cu);
    ASSERT_EQ(ingot_crc32c(0, NULL, 0), 0u);
    ASSERT_EQ(ingot_crc32c(0x12345678u, NULL, 0), 0x12345678u);
}

TEST(test_crc32c_portable_matches_bitwise)
{
    uint8_t *b = pattern(4096 + 16, 1);
    for (size_t n = 0; n <= 300; n++)
        for (size_t a = 0; a < 8; a++) {
            uint32_t want = crc_bitwise(0, b + a, n);
            if (ingot__crc32c_sw(0, b + a, n) != want) {
                free(b);
                FAIL_AT("slice-by-8 differs from bitwise at n=%zu align=%zu", n, a);
            }
        }
    ASSERT_EQ(ingot__crc32c_sw(0, b, 4096), crc_bitwise(0, b, 4096));
    free(b);
}

/* Every length 0..2100 at every alignment 0..15 (covers the 512-byte folding threshold, the
 * 256-byte main loop, the 16-byte lane tail and the 8-byte word tail), for ingot_crc32c (whatever
 * path this CPU takes) and for the SSE4.2 path alone. */
TEST(test_crc32c_hw_all_lengths_alignments)
{
    size_t max = 2100;
    uint8_t *b = pattern(max + 64, 2);
    for (size_t a = 0; a < 16; a++)
        for (size_t n = 0; n <= max; n++) {
            uint32_t want = ingot__crc32c_sw(0, b + a, n);
            uint32_t got = ingot_crc32c(0, b + a, n);
            uint32_t got42 = ingot__crc32c_sse42(0, b + a, n);
            if (got != want || got42 != want) {
                free(b);
                FAIL_AT("n=%zu align=%zu: sw 0x%08x, ingot_crc32c 0x%08x, sse42 0x%08x", n, a, want,
                        got, got42);
            }
        }
    free(b);
}

/* Sizes around the SSE4.2 three-stream threshold (64 KiB) and large odd sizes, unaligned, with a
 * non-zero starting CRC. */
TEST(test_crc32c_hw_large_sizes)
{
    static const size_t sizes[] = {65535, 65536, 65537, 65536 + 7, 3 * 65536 + 5,
                                   (1u << 20) + 255, (1u << 20) + 256, (3u << 20) + 13};
    size_t max = (3u << 20) + 64;
    uint8_t *b = pattern(max, 3);
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        for (size_t a = 0; a < 9; a += 4) {
            size_t n = sizes[i];
            uint32_t want = ingot__crc32c_sw(0xDEADBEEFu, b + a, n);
            uint32_t got = ingot_crc32c(0xDEADBEEFu, b + a, n);
            uint32_t got42 = ingot__crc32c_sse42(0xDEADBEEFu, b + a, n);
            if (got != want || got42 != want) {
                free(b);
                FAIL_AT("n=%zu align=%zu: sw 0x%08x, ingot_crc32c 0x%08x, sse42 0x%08x", n, a, want,
                        got, got42);
            }
        }
    /* All-zero and all-one inputs exercise the folding constants with no data cancelling out. */
    memset(b, 0, max);
    ASSERT_EQ(ingot_crc32c(0, b, max), ingot__crc32c_sw(0, b, max));
    memset(b, 0xFF, max);
    ASSERT_EQ(ingot_crc32c(0, b, max), ingot__crc32c_sw(0, b, max));
    free(b);
}

/* Mid-size inputs, where the folding loop runs many times and then leaves a tail of lanes and
 * words: every length in windows around a few sizes, at every alignment, plus pseudo-random
 * lengths up to 200 KB with a non-zero starting CRC. */
TEST(test_crc32c_hw_mid_sizes)
{
    size_t max = 200000;
    uint8_t *b = pattern(max + 16, 6);
    static const size_t centers[] = {4096, 7936, 5 * 7936, 65536};
    for (size_t c = 0; c < sizeof centers / sizeof centers[0]; c++)
        for (size_t n = centers[c] - 40; n <= centers[c] + 40; n++)
            for (size_t a = 0; a < 16; a++) {
                uint32_t want = ingot__crc32c_sw(0x01020304u, b + a, n);
                uint32_t got = ingot_crc32c(0x01020304u, b + a, n);
                if (got != want) {
                    free(b);
                    FAIL_AT("n=%zu align=%zu: sw 0x%08x, ingot_crc32c 0x%08x", n, a, want, got);
                }
            }
    uint64_t x = 12345;
    for (int i = 0; i < 200; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        size_t n = (size_t)(x >> 33) % max, a = (size_t)(x >> 20) % 16;
        uint32_t want = ingot__crc32c_sw(0x9ABCDEF0u, b + a, n);
        uint32_t got = ingot_crc32c(0x9ABCDEF0u, b + a, n);
        if (got != want) {
            free(b);
            FAIL_AT("n=%zu align=%zu: sw 0x%08x, ingot_crc32c 0x%08x", n, a, want, got);
        }
    }
    free(b);
}

/* Feeding a buffer in pieces gives the CRC of the whole, whatever the cut points. */
TEST(test_crc32c_continuation)
{
    size_t n = 70000;
    uint8_t *b = pattern(n, 4);
    uint32_t whole = ingot__crc32c_sw(0, b, n);
    static const size_t cuts[] = {0, 1, 7, 8, 15, 16, 511, 512, 513, 4096, 65536, 69999, 70000};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        size_t c = cuts[i];
        uint32_t crc = ingot_crc32c(0, b, c);
        crc = ingot_crc32c(crc, b + c, n - c);
        if (crc != whole) {
            free(b);
            FAIL_AT("cut at %zu: 0x%08x != 0x%08x", c, crc, whole);
        }
    }
    /* Many small pieces of varying size. */
    uint32_t crc = 0;
    size_t at = 0, step = 1;
    while (at < n) {
        size_t k = step < n - at ? step : n - at;
        crc = ingot_crc32c(crc, b + at, k);
        at += k;
        step = step * 3 % 1031 + 1;
    }
    ASSERT_EQ(crc, whole);
    free(b);
}

TEST(test_crc32c_combine)
{
    size_t n = 200000;
    uint8_t *b = pattern(n, 5);
    static const size_t splits[] = {0, 1, 3, 8, 100, 512, 4096, 65536, 131071, 199999, 200000};
    for (size_t i = 0; i < sizeof splits / sizeof splits[0]; i++) {
        size_t c = splits[i];
        uint32_t ca = ingot_crc32c(0, b, c), cb = ingot_crc32c(0, b + c, n - c);
        uint32_t want = ingot__crc32c_sw(0, b, n);
        uint32_t got = ingot_crc32c_combine(ca, cb, n - c);
        if (got != want) {
            free(b);
            FAIL_AT("split %zu: combine 0x%08x != 0x%08x", c, got, want);
        }
    }
    /* Combining with an empty B is the identity; combining an empty A gives B. */
    uint32_t cb = ingot_crc32c(0, b, 1000);
    ASSERT_EQ(ingot_crc32c_combine(0x12345678u, 0, 0), 0x12345678u);
    ASSERT_EQ(ingot_crc32c_combine(0, cb, 1000), cb);
    /* Associativity at lengths too large to hash here (2^40 and 2^62 bytes): both groupings must
     * agree, which only holds if the x^(8n) shift is right for every bit of n. */
    uint32_t x = 0x11111111u, y = 0x22222222u, z = 0x33333333u;
    uint64_t ly = (uint64_t)1 << 40, lz = ((uint64_t)1 << 62) + 12345;
    ASSERT_EQ(ingot_crc32c_combine(ingot_crc32c_combine(x, y, ly), z, lz),
              ingot_crc32c_combine(x, ingot_crc32c_combine(y, z, lz), ly + lz));
    /* The shift of a raw register over n zero bytes equals running the CRC over the zeros. */
    uint8_t *zeros = calloc(1, 70001);
    if (!zeros) abort();
    static const size_t zl[] = {1, 2, 5, 64, 1000, 70001};
    for (size_t i = 0; i < sizeof zl / sizeof zl[0]; i++) {
        uint32_t raw = 0xA5A5A5A5u;
        uint32_t want = ~ingot__crc32c_sw(~raw, zeros, zl[i]);
        ASSERT_EQ(ingot__crc32c_shift(raw, zl[i]), want);
    }
    free(zeros);
    free(b);
}

/* crc32c_tables.h is exactly what scripts/gen_crc32c_tables.c prints, and its values are right. */
TEST(test_crc32c_tables_regenerate)
{
    char path[512];
    snprintf(path, sizeof path, "%s/crc32c-gen-%d.h", INGOT_BINARY_DIR, (int)getpid());
    fflush(stdout);
    int saved = dup(1);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ASSERT_TRUE(saved >= 0 && fd >= 0);
    dup2(fd, 1);
    close(fd);
    int rc = gen_crc32c_tables_main();
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    ASSERT_EQ(rc, 0);

    char hdr[512];
    snprintf(hdr, sizeof hdr, "%s/src/core/crc32c_tables.h", INGOT_SOURCE_DIR);
    FILE *a = fopen(path, "rb"), *b = fopen(hdr, "rb");
    ASSERT_TRUE(a && b);
    static char ba[65536], bb[65536];
    size_t na = fread(ba, 1, sizeof ba, a), nb = fread(bb, 1, sizeof bb, b);
    fclose(a);
    fclose(b);
    unlink(path);
    ASSERT_TRUE(na > 1000 && na < sizeof ba);
    ASSERT_U64(na, nb);
    ASSERT_MEM(ba, bb, na);

    /* Independent check of the values: table 0 by bits, table k as one more zero byte, and
     * x^(2^k) as repeated squaring checked against the zero-byte shift. */
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        ASSERT_EQ(crc32c_table[0][i], c);
        for (int s = 1; s < 8; s++) {
            c = (c >> 8) ^ crc32c_table[0][c & 0xff];
            ASSERT_EQ(crc32c_table[s][i], c);
        }
    }
    ASSERT_EQ(crc32c_x2n[0], 1u << 30); /* x^1 */
    ASSERT_EQ(crc32c_x2n[3], ingot__crc32c_shift(1u << 31, 1)); /* x^8 = one zero byte */
    ASSERT_EQ(crc32c_x2n[13], ingot__crc32c_shift(1u << 31, 1024)); /* x^8192 */
}

RUN_TESTS(T(test_crc32c_check_values), T(test_crc32c_portable_matches_bitwise),
          T(test_crc32c_hw_all_lengths_alignments), T(test_crc32c_hw_large_sizes),
          T(test_crc32c_hw_mid_sizes),
          T(test_crc32c_continuation), T(test_crc32c_combine), T(test_crc32c_tables_regenerate))
