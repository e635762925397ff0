/* test_crc32c.c - CRC-32C: published check values, every accelerated path against the portable
 * slice-by-8 code for all lengths and alignments around each path's thresholds and block
 * boundaries (the folding loop on ymm and on zmm registers, the loop that also runs four crc32
 * streams, its prefetching variant, the three-stream crc32 code with and without PCLMULQDQ), each
 * dispatch level down to the portable code, buffers that end at an unmapped page, continuation,
 * ingot_crc32c_combine and the shift, and the generated tables (scripts/gen_crc32c_tables.c re-run
 * here). */
#define _GNU_SOURCE /* MAP_ANONYMOUS */
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "crc32c.h"
#include "crc32c_ref.h" /* crc_bitwise, ref_shift: independent of crc32c.c */
#include "harness.h"

#include "crc32c_tables.h"

/* The generator, compiled into this test with its main renamed; its output is compared with the
 * checked-in header byte for byte. */
int gen_crc32c_tables_main(void);
#define main gen_crc32c_tables_main
#include "../scripts/gen_crc32c_tables.c"
#undef main


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

/* Every length 0..2100 at every alignment 0..15 (covers the 192-byte three-stream threshold, the
 * 256-byte folding threshold, the 256-byte main loop, the 32- and 16-byte tails, the 8-byte word
 * tail, the 1280-byte threshold of the loop with crc32 streams and its first iterations), for
 * ingot_crc32c (whatever path this CPU takes), the crc32 path alone and the folding path alone. */
TEST(test_crc32c_hw_all_lengths_alignments)
{
    size_t max = 2100;
    uint8_t *b = pattern(max + 64, 2);
    for (size_t a = 0; a < 16; a++)
        for (size_t n = 0; n <= max; n++) {
            uint32_t want = ingot__crc32c_sw(0, b + a, n);
            uint32_t got = ingot_crc32c(0, b + a, n);
            uint32_t got42 = ingot__crc32c_sse42(0, b + a, n);
            uint32_t gotf = ingot__crc32c_fold(0, b + a, n);
            if (got != want || got42 != want || gotf != want) {
                free(b);
                FAIL_AT("n=%zu align=%zu: sw 0x%08x, ingot_crc32c 0x%08x, sse42 0x%08x, fold 0x%08x",
                        n, a, want, got, got42, gotf);
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

typedef uint32_t (*crc_fn)(uint32_t, const void *, size_t);

/* Checks f against the portable code for every length n <= max for which pick(n) holds, on the
 * bytes at p, starting from crc init. The reference for length n + 1 is the one for n advanced by
 * one byte, so a sweep costs one portable pass plus the calls of f. Returns the first bad length,
 * or SIZE_MAX. */
static size_t sweep(crc_fn f, const uint8_t *p, size_t max, uint32_t init, bool (*pick)(size_t n))
{
    uint32_t ref = init;
    for (size_t n = 0;; n++) {
        if (pick(n) && f(init, p, n) != ref) return n;
        if (n == max) return SIZE_MAX;
        ref = ingot__crc32c_sw(ref, p + n, 1);
    }
}

static bool pick_all(size_t n)
{
    (void)n;
    return true;
}

/* Lengths within 40 bytes of a place where the work of the loop with crc32 streams changes shape:
 * its threshold, each whole number of iterations (A then ends with no tail) and each half
 * iteration (A's tail holds one more 256-byte block), for iteration counts 1-5 and around powers
 * of two up to 2048 (the streams then lie a power of two apart), the prefetch threshold, and the
 * 64 KiB three-stream threshold of the crc32-only code. */
static bool pick_edges(size_t n)
{
    static const size_t iters[] = {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 63, 64, 65,
                                   127, 128, 129, 255, 256, 511, 512, 513, 1023, 1024, 2047, 2048};
    enum { NI = sizeof iters / sizeof iters[0], W = 40 };
    static size_t centers[2 * NI + 4];
    if (!centers[0]) {
        size_t nc = 0;
        for (size_t i = 0; i < NI; i++) {
            centers[nc++] = 256 + iters[i] * INGOT__CRC32C_HYBRID_UNIT;
            centers[nc++] = 256 + iters[i] * INGOT__CRC32C_HYBRID_UNIT + 256;
        }
        centers[nc++] = INGOT__CRC32C_HYBRID_MIN;
        centers[nc++] = INGOT__CRC32C_HYBRID_PREFETCH_MIN;
        centers[nc++] = 65536;
        centers[nc++] = 65792;
    }
    for (size_t i = 0; i < sizeof centers / sizeof centers[0]; i++)
        if (n + W >= centers[i] && n <= centers[i] + W) return true;
    return false;
}

static size_t edges_max(void) { return 256 + 2048 * INGOT__CRC32C_HYBRID_UNIT + 256 + 40; }

/* The loop with crc32 streams (and the folding path alone) at every length around its edges,
 * at 16 alignments for the short ones and 4 for the long ones, from several initial values. */
TEST(test_crc32c_hybrid_edges)
{
    size_t max = edges_max();
    uint8_t *b = pattern(max + 64, 7);
    static const uint32_t inits[] = {0, 0xFFFFFFFFu, 0xDEADBEEFu, 0x01020304u};
    for (size_t a = 0; a < 16; a++) {
        size_t lim = (a == 0 || a == 1 || a == 7 || a == 13) ? max : 70000;
        uint32_t init = inits[a % 4];
        size_t bad = sweep(ingot_crc32c, b + a, lim, init, pick_edges);
        size_t badf = sweep(ingot__crc32c_fold, b + a, a < 4 ? 70000 : 4000, init, pick_edges);
        /* the memory-bound variant switches from folding to the joint loop at the prefetch size */
        size_t bads = a < 2 ? sweep(ingot__crc32c_stream, b + a, lim, init, pick_edges) : SIZE_MAX;
        if (bads != SIZE_MAX) badf = bads;
        if (bad != SIZE_MAX || badf != SIZE_MAX) {
            free(b);
            FAIL_AT("align %zu, init 0x%08x: ingot_crc32c first wrong at n=%zu, fold at n=%zu "
                    "(SIZE_MAX: none)", a, init, bad, badf);
        }
    }
    /* Every length up to 20000 at two alignments (every remainder of the iteration count). */
    for (size_t a = 0; a < 2; a++) {
        size_t bad = sweep(ingot_crc32c, b + 3 * a, 20000, 0x5A5A5A5Au, pick_all);
        if (bad != SIZE_MAX) {
            free(b);
            FAIL_AT("align %zu: ingot_crc32c first wrong at n=%zu", 3 * a, bad);
        }
    }
    free(b);
}

/* Large inputs, of random lengths up to 9 MiB at random offsets from random initial values (the
 * prefetching loop, streams far apart), and inputs of all-equal bytes. */
TEST(test_crc32c_large_random)
{
    size_t max = 9u << 20;
    uint8_t *b = pattern(max + 64, 8);
    uint64_t x = 987654321;
    for (int i = 0; i < 24; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        size_t n = (size_t)(x >> 20) % max + 1, a = (size_t)(x >> 7) % 64;
        uint32_t init = (uint32_t)(x >> 32);
        uint32_t want = ingot__crc32c_sw(init, b + a, n), got = ingot_crc32c(init, b + a, n);
        if (got != want) {
            free(b);
            FAIL_AT("n=%zu align=%zu init=0x%08x: sw 0x%08x, ingot_crc32c 0x%08x", n, a, init, want,
                    got);
        }
    }
    static const uint8_t fills[] = {0x00, 0xFF, 0x5A};
    for (size_t f = 0; f < sizeof fills; f++) {
        memset(b, fills[f], max);
        for (size_t n = (1u << 20) - 3; n < max; n = n * 3 + 1) {
            uint32_t want = ingot__crc32c_sw(0x1234u, b + 1, n), got = ingot_crc32c(0x1234u, b + 1, n);
            if (got != want) {
                free(b);
                FAIL_AT("fill 0x%02x n=%zu: sw 0x%08x, ingot_crc32c 0x%08x", fills[f], n, want, got);
            }
        }
    }
    free(b);
}

/* Inputs that end right before an unmapped page and start right after one: a read past either end
 * faults here, in any build (ASan builds also check the heap buffers of the other tests). */
TEST(test_crc32c_guard_pages)
{
    static const size_t sizes[] = {1, 7, 8, 15, 16, 17, 31, 32, 33, 127, 128, 129, 255, 256, 257,
                                   288, 300, 511, 512, 513, 1279, 1280, 1281, 1535, 1536, 1537,
                                   1791, 1792, 1793, 4095, 4096, 4097, 65535, 65536, 65792, 70001,
                                   INGOT__CRC32C_HYBRID_PREFETCH_MIN - 1,
                                   INGOT__CRC32C_HYBRID_PREFETCH_MIN,
                                   INGOT__CRC32C_HYBRID_PREFETCH_MIN + 1, (1u << 20) + 77};
    long pg = sysconf(_SC_PAGESIZE);
    ASSERT_TRUE(pg > 0);
    size_t page = (size_t)pg;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t n = sizes[i], span = (n + page - 1) / page * page;
        uint8_t *m = mmap(NULL, span + 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                          -1, 0);
        ASSERT_TRUE(m != MAP_FAILED);
        ASSERT_TRUE(mprotect(m, page, PROT_NONE) == 0);
        ASSERT_TRUE(mprotect(m + page + span, page, PROT_NONE) == 0);
        uint8_t *src = pattern(n, 9 + i);
        uint8_t *at_end = m + page + span - n, *at_start = m + page;
        memcpy(at_end, src, n);
        uint32_t want = ingot__crc32c_sw(0x77777777u, src, n);
        uint32_t e1 = ingot_crc32c(0x77777777u, at_end, n);
        uint32_t e2 = ingot__crc32c_fold(0x77777777u, at_end, n);
        uint32_t e3 = ingot__crc32c_sse42(0x77777777u, at_end, n);
        memmove(at_start, at_end, n);
        uint32_t s1 = ingot_crc32c(0x77777777u, at_start, n);
        uint32_t s2 = ingot__crc32c_fold(0x77777777u, at_start, n);
        free(src);
        munmap(m, span + 2 * page);
        if (e1 != want || e2 != want || e3 != want || s1 != want || s2 != want)
            FAIL_AT("n=%zu: sw 0x%08x; at the end of a mapping 0x%08x 0x%08x 0x%08x, at its start "
                    "0x%08x 0x%08x", n, want, e1, e2, e3, s1, s2);
    }
}

/* Lengths checked at every dispatch level: all up to 3000, then a few past the 64 KiB three-stream
 * threshold of the crc32 code with bit-serial shifts. */
static bool pick_levels(size_t n)
{
    return n <= 3000 || (n >= 65530 && n <= 65545) || n == 99999 || n == 200001;
}

/* Each dispatch level in turn (as far as this CPU goes): ingot_crc32c, the crc32 path, the folding
 * path, the shift and combine, all against the portable code; level 0 is the software fallback that
 * CPUs without SSE4.2 and other architectures run. */
static const char *check_level(int level, const uint8_t *b, size_t max)
{
    static char msg[160];
    static const crc_fn fns[] = {ingot_crc32c, ingot__crc32c_sse42, ingot__crc32c_fold,
                                 ingot__crc32c_stream};
    static const char *const names[] = {"ingot_crc32c", "sse42", "fold", "stream"};
    for (size_t f = 0; f < 4; f++)
        for (size_t a = 0; a < 8; a += 3) {
            size_t bad = sweep(fns[f], b + a, max, 0xC0FFEE00u + (uint32_t)a, pick_levels);
            if (bad != SIZE_MAX) {
                snprintf(msg, sizeof msg, "level %d: %s wrong at n=%zu align=%zu", level, names[f],
                         bad, a);
                return msg;
            }
        }
    uint8_t zeros[300];
    memset(zeros, 0, sizeof zeros);
    for (size_t n = 0; n <= sizeof zeros; n++) {
        uint32_t raw = 0x9E3779B9u ^ (uint32_t)n;
        if (ingot__crc32c_shift(raw, n) != ~ingot__crc32c_sw(~raw, zeros, n)) {
            snprintf(msg, sizeof msg, "level %d: shift over %zu zero bytes", level, n);
            return msg;
        }
    }
    uint32_t whole = ingot__crc32c_sw(0, b, 70000);
    for (size_t c = 0; c <= 70000; c += 6997) {
        uint32_t got = ingot_crc32c_combine(ingot_crc32c(0, b, c), ingot_crc32c(0, b + c, 70000 - c),
                                            70000 - c);
        if (got != whole) {
            snprintf(msg, sizeof msg, "level %d: combine split at %zu", level, c);
            return msg;
        }
    }
    return NULL;
}

TEST(test_crc32c_levels)
{
    size_t max = 200001;
    uint8_t *b = pattern(max + 16, 10);
    int top = ingot__crc32c_limit(INGOT__CRC32C_TOP);
    const char *err = NULL;
    for (int level = 0; level <= INGOT__CRC32C_TOP && !err; level++) {
        int got = ingot__crc32c_limit(level);
        if (got != (level < top ? level : top)) {
            err = "ingot__crc32c_limit returned the wrong level";
            break;
        }
        err = check_level(level, b, max);
    }
    ingot__crc32c_limit(INGOT__CRC32C_TOP);
    free(b);
    if (err) FAIL_AT("%s", err);
    (void)top;
}

/* The zmm folding path (level 4: AVX-512F and VPCLMULQDQ, Intel only) is in force wherever the
 * CPU and the OS have it, and it and the stream entry agree with the portable code at every
 * alignment to a 64-byte line and every length up to 4200 (its 512-byte threshold, the 512-byte
 * loop, the last 256-byte step, the ymm tree below it, the 16-byte and crc32 tails), from a
 * non-zero register. Where level 4 is not there, the same sweep runs over the path in force at
 * fewer alignments. */
TEST(test_crc32c_zmm_lengths_alignments)
{
    __builtin_cpu_init();
    int want = __builtin_cpu_is("intel") && __builtin_cpu_supports("avx512f") &&
               __builtin_cpu_supports("vpclmulqdq") && __builtin_cpu_supports("avx2") &&
               __builtin_cpu_supports("sse4.2") && __builtin_cpu_supports("pclmul");
    int level = ingot__crc32c_limit(INGOT__CRC32C_TOP);
#if defined(__x86_64__) && !defined(INGOT_NO_SIMD)
    /* gcc's __builtin_cpu_supports("avx512f") also checks that the OS saves the zmm state */
    if (want) ASSERT_EQ(level, 4);
    else ASSERT_TRUE(level < 4);
#else
    (void)want;
#endif
    size_t max = 4200;
    uint8_t *b = pattern(max + 64, 11);
    static const crc_fn fns[] = {ingot_crc32c, ingot__crc32c_stream};
    for (size_t a = 0; a < 64; a += level == 4 ? 1 : 7)
        for (size_t f = 0; f < 2; f++) {
            size_t bad = sweep(fns[f], b + a, max, 0x5EED0000u + (uint32_t)a, pick_all);
            if (bad != SIZE_MAX) {
                free(b);
                FAIL_AT("level %d: %s wrong at n=%zu align=%zu", level,
                        f ? "stream" : "ingot_crc32c", bad, a);
            }
        }
    free(b);
}

/* The PCLMULQDQ shift against the bit-serial one (level 1) for random registers and lengths of
 * every magnitude up to 2^64 - 1 bytes. */
TEST(test_crc32c_shift_fast)
{
    enum { N = 400 };
    static uint32_t raw[N], fast[N];
    static uint64_t len[N];
    uint64_t x = 42;
    for (int i = 0; i < N; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        raw[i] = (uint32_t)(x >> 32);
        len[i] = i < 64 ? (uint64_t)i : (x ^ (x << 17)) >> (i % 64);
        if (i == N - 1) len[i] = UINT64_MAX;
        fast[i] = ingot__crc32c_shift(raw[i], len[i]);
    }
    int top = ingot__crc32c_limit(1);
    int bad = -1;
    for (int i = 0; i < N && bad < 0; i++)
        if (ingot__crc32c_shift(raw[i], len[i]) != fast[i]) bad = i;
    ingot__crc32c_limit(INGOT__CRC32C_TOP);
    if (bad >= 0)
        FAIL_AT("shift of 0x%08x over %llu bytes: default 0x%08x, bit-serial 0x%08x", raw[bad],
                (unsigned long long)len[bad], fast[bad], ingot__crc32c_shift(raw[bad], len[bad]));
    (void)top; /* 0: no crc32 instruction, so one path was compared with itself */
}

/* The matrix reference itself, against the bitwise CRC over real zero bytes (so the huge-length
 * checks below rest on nothing but the definition). */
TEST(test_crc32c_ref_self_check)
{
    static uint8_t zeros[70001];
    for (size_t n = 0; n <= 600; n++) {
        uint32_t raw = 0x9E3779B9u * (uint32_t)(n + 1);
        ASSERT_EQ(ref_shift(raw, n), ~crc_bitwise(~raw, zeros, n));
        ASSERT_EQ(ref_zero_run(0x1234567u, n), crc_bitwise(0x1234567u, zeros, n));
    }
    ASSERT_EQ(ref_shift(0xA5A5A5A5u, 70001), ~crc_bitwise(~0xA5A5A5A5u, zeros, 70001));
    uint8_t *b = pattern(5000, 11);
    ASSERT_EQ(ref_combine(crc_bitwise(0, b, 1234), crc_bitwise(0, b + 1234, 3766), 3766),
              crc_bitwise(0, b, 5000));
    free(b);
}

/* Lengths of every magnitude: 2^k - 1, 2^k and 2^k + 1 for k = 0..63, more around 2^29 (where
 * a 32-entry x^(2^k) table indexed with k + 3 wrapped), 2^31, 2^32, 2^33 and 2^40, sums of
 * several high bits, and 2^64 - 1. Returns the count. */
static size_t huge_lengths(uint64_t *out)
{
    size_t m = 0;
    for (int k = 0; k < 64; k++) {
        uint64_t p = (uint64_t)1 << k;
        out[m++] = p - 1;
        out[m++] = p;
        out[m++] = p + 1;
    }
    static const int ks[] = {28, 29, 30, 31, 32, 33, 34, 40};
    for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
        uint64_t p = (uint64_t)1 << ks[i];
        out[m++] = p - 8;
        out[m++] = p + 8;
        out[m++] = p - 4095;
        out[m++] = p + 4097;
        out[m++] = p + p / 2 + 12345;
        out[m++] = 3 * p - 1;
    }
    out[m++] = 4600000000u;       /* the 4.6 GB buffer */
    out[m++] = (uint64_t)5 << 30; /* its 5 GiB file */
    out[m++] = ((uint64_t)1 << 40) + ((uint64_t)1 << 33) + ((uint64_t)1 << 32) +
               ((uint64_t)1 << 31) + ((uint64_t)1 << 29) + 7;
    out[m++] = UINT64_MAX;
    return m;
}

/* At one dispatch level: the shift, ingot_crc32c_combine, and the CRC of a message H || 0^n || T
 * built from small real buffers with combine alone (the CRC of 2^k zero bytes as two of 2^(k-1)
 * combined, those summed over the bits of n), all against the matrix reference. Associativity of
 * combine with lengths whose sum carries across 2^29..2^34. NULL when all agree. */
static const char *check_huge(int level)
{
    static char msg[200];
    static uint64_t lens[300];
    size_t nl = huge_lengths(lens);
    uint8_t *h = pattern(333, 12), *t = pattern(777, 13);
    uint8_t zero = 0;
    uint32_t crc_h = ingot_crc32c(0, h, 333), crc_t = ingot_crc32c(0, t, 777);
    uint32_t z[64]; /* z[k]: CRC of 2^k zero bytes, by the library */
    z[0] = ingot_crc32c(0, &zero, 1);
    for (int k = 1; k < 64; k++)
        z[k] = ingot_crc32c_combine(z[k - 1], z[k - 1], (uint64_t)1 << (k - 1));
    const char *err = NULL;
    for (size_t i = 0; i < nl && !err; i++) {
        uint64_t n = lens[i];
        uint32_t raw = 0xC3A5C85Cu ^ (uint32_t)(n * 0x9E3779B97F4A7C15ull >> 32);
        uint32_t got = ingot__crc32c_shift(raw, n), want = ref_shift(raw, n);
        if (got != want) {
            snprintf(msg, sizeof msg,
                     "level %d: shift of 0x%08x over %llu bytes: 0x%08x, want 0x%08x", level, raw,
                     (unsigned long long)n, got, want);
            err = msg;
            break;
        }
        got = ingot_crc32c_combine(raw, ~raw, n);
        want = ref_combine(raw, ~raw, n);
        if (got != want) {
            snprintf(msg, sizeof msg, "level %d: combine over %llu bytes: 0x%08x, want 0x%08x",
                     level, (unsigned long long)n, got, want);
            err = msg;
            break;
        }
        if (n == UINT64_MAX) continue; /* |H| + n + |T| would not fit a byte count */
        uint32_t zn = 0;
        for (int k = 0; k < 64; k++)
            if (n >> k & 1) zn = ingot_crc32c_combine(zn, z[k], (uint64_t)1 << k);
        got = ingot_crc32c_combine(ingot_crc32c_combine(crc_h, zn, n), crc_t, 777);
        want = crc_bitwise(ref_zero_run(crc_bitwise(0, h, 333), n), t, 777);
        if (got != want) {
            snprintf(msg, sizeof msg, "level %d: H || %llu zero bytes || T: 0x%08x, want 0x%08x",
                     level, (unsigned long long)n, got, want);
            err = msg;
        }
    }
    for (size_t i = 0; i < nl && !err; i++)
        for (size_t j = 0; j < nl && !err; j += 7) {
            uint64_t la = lens[i], lb = lens[j];
            if (la > UINT64_MAX - lb) continue;
            uint32_t x = 0x11111111u * (uint32_t)(i % 15 + 1), y = ~x, w = x ^ 0x5A5A5A5Au;
            uint32_t left = ingot_crc32c_combine(ingot_crc32c_combine(x, y, la), w, lb);
            uint32_t right = ingot_crc32c_combine(x, ingot_crc32c_combine(y, w, lb), la + lb);
            if (left != right) {
                snprintf(msg, sizeof msg, "level %d: combine not associative for %llu + %llu bytes",
                         level, (unsigned long long)la, (unsigned long long)lb);
                err = msg;
            }
        }
    free(h);
    free(t);
    return err;
}

TEST(test_crc32c_huge_lengths)
{
    const char *err = NULL;
    for (int level = 0; level <= INGOT__CRC32C_TOP && !err; level++)
        err = check_huge(ingot__crc32c_limit(level));
    ingot__crc32c_limit(INGOT__CRC32C_TOP);
    if (err) FAIL_AT("%s", err);
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
    /* crc32c_zeros[k] = x^(8 * 2^k) mod P is the register 1 (x^0: bit 31) after 2^k zero bytes,
     * by the matrix reference; every one of the 64. */
    for (int k = 0; k < 64; k++) {
        uint32_t want = ref_shift(1u << 31, (uint64_t)1 << k);
        if (crc32c_zeros[k] != want)
            FAIL_AT("crc32c_zeros[%d] = 0x%08x, want 0x%08x", k, crc32c_zeros[k], want);
    }
    ASSERT_EQ(crc32c_zeros[0], 0x00800000u); /* x^8: bit 31 - 8 */
    /* Why the table cannot wrap at 32 entries: x^(2^31) = x (2^28 bytes), x^(2^32) = x^2. */
    ASSERT_EQ(ref_shift(1u << 31, (uint64_t)1 << 28), 1u << 30);
    ASSERT_EQ(ref_shift(1u << 31, (uint64_t)1 << 29), 1u << 29);
}

RUN_TESTS(T(test_crc32c_check_values), T(test_crc32c_portable_matches_bitwise),
          T(test_crc32c_hw_all_lengths_alignments), T(test_crc32c_hw_large_sizes),
          T(test_crc32c_hw_mid_sizes), T(test_crc32c_hybrid_edges), T(test_crc32c_large_random),
          T(test_crc32c_guard_pages), T(test_crc32c_levels), T(test_crc32c_zmm_lengths_alignments),
          T(test_crc32c_shift_fast),
          T(test_crc32c_continuation), T(test_crc32c_combine), T(test_crc32c_ref_self_check),
          T(test_crc32c_huge_lengths), T(test_crc32c_tables_regenerate))
