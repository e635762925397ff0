/* test_utf8.c - the UTF-8 validator (src/core/utf8.c) at every dispatch level the CPU has (portable,
 * SSE4.1, AVX2, AVX-512BW) against a reference written from the Unicode standard's table of
 * well-formed byte sequences (Table 3-7), not from the decoder: every 2-byte sequence, every 3- and
 * 4-byte lead with every second byte, overlongs, surrogates, code points above U+10FFFF, each
 * placed across every vector and block boundary; every truncation of mixed text at every length;
 * NUL bytes with and without allow_nul; inputs that end at an unmapped page; random text with
 * random damage. Each check compares the error position, not only the verdict. */
#define _GNU_SOURCE /* MAP_ANONYMOUS */
#include <sys/mman.h>
#include <unistd.h>

#include "harness.h"
#include "utf8.h"

/* Length of the longest well-formed prefix of s[0, n) by Table 3-7 (Unicode 15, §3.9). */
static size_t ref_prefix(const uint8_t *s, size_t n, bool allow_nul)
{
    size_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        uint8_t lo2 = 0x80, hi2 = 0xBF;
        size_t len;
        if (c <= 0x7F) {
            if (c == 0 && !allow_nul) return i;
            i++;
            continue;
        } else if (c >= 0xC2 && c <= 0xDF) {
            len = 2;
        } else if (c == 0xE0) {
            len = 3, lo2 = 0xA0;
        } else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) {
            len = 3;
        } else if (c == 0xED) {
            len = 3, hi2 = 0x9F;
        } else if (c == 0xF0) {
            len = 4, lo2 = 0x90;
        } else if (c >= 0xF1 && c <= 0xF3) {
            len = 4;
        } else if (c == 0xF4) {
            len = 4, hi2 = 0x8F;
        } else {
            return i;
        }
        if (n - i < len) return i;
        if (s[i + 1] < lo2 || s[i + 1] > hi2) return i;
        for (size_t k = 2; k < len; k++)
            if (s[i + k] < 0x80 || s[i + k] > 0xBF) return i;
        i += len;
    }
    return n;
}

static int levels[INGOT__UTF8_TOP + 1], n_levels;

/* The distinct levels this CPU has, lowest first; leaves the default in force. */
static void find_levels(void)
{
    if (n_levels) return;
    int last = -1;
    for (int l = 0; l <= INGOT__UTF8_TOP; l++) {
        int got = ingot__utf8_limit(l);
        if (got != last) levels[n_levels++] = got;
        last = got;
    }
    ingot__utf8_limit(INGOT__UTF8_TOP);
}

static int mismatches;

/* Checks s[0, n) at every level and with the portable entry point; reports the first few
 * mismatches with the bytes around the disagreement. */
static void check_all(const uint8_t *s, size_t n, bool allow_nul, const char *what)
{
    size_t want = ref_prefix(s, n, allow_nul);
    size_t sw = ingot__utf8_prefix_sw(s, n, allow_nul);
    if (sw != want && mismatches++ < 10)
        fprintf(stderr, "  %s: portable %zu, reference %zu (n %zu)\n", what, sw, want, n);
    for (int k = 0; k < n_levels; k++) {
        ingot__utf8_limit(levels[k]);
        size_t got = ingot__utf8_prefix(s, n, allow_nul);
        bool ok = ingot__utf8_valid(s, n, allow_nul);
        if ((got != want || ok != (want == n)) && mismatches++ < 10)
            fprintf(stderr, "  %s: level %d gives %zu (valid %d), reference %zu (n %zu)\n", what,
                    levels[k], got, ok, want, n);
    }
    ingot__utf8_limit(INGOT__UTF8_TOP);
}

/* Offsets that put a sequence across each 16-, 32- and 64-byte boundary of a 200-byte buffer. */
static const size_t spots[] = {0, 1, 13, 14, 15, 16, 29, 30, 31, 32, 61, 62, 63, 64, 65, 127, 128};

static void check_seq(const uint8_t *seq, size_t len, const char *what)
{
    uint8_t buf[200];
    for (size_t k = 0; k < sizeof spots / sizeof spots[0]; k++) {
        memset(buf, 'a', sizeof buf);
        memcpy(buf + spots[k], seq, len);
        /* the sequence in ASCII, then cut right after it (the end of the input) */
        check_all(buf, 150, true, what);
        check_all(buf, spots[k] + len, true, what);
    }
}

TEST(test_utf8_levels)
{
    find_levels();
    ASSERT_TRUE(n_levels >= 1);
    ASSERT_EQ(levels[0], 0);
    printf("  levels on this CPU:");
    for (int k = 0; k < n_levels; k++) printf(" %d", levels[k]);
    printf("\n");
}

TEST(test_utf8_named_cases)
{
    find_levels();
    static const struct {
        const char *s;
        size_t n, want;
    } cases[] = {
        {"", 0, 0},
        {"a", 1, 1},
        {"\xC2\x80", 2, 2},           /* U+0080 */
        {"\xDF\xBF", 2, 2},           /* U+07FF */
        {"\xE0\xA0\x80", 3, 3},       /* U+0800 */
        {"\xEF\xBF\xBF", 3, 3},       /* U+FFFF */
        {"\xF0\x90\x80\x80", 4, 4},   /* U+10000 */
        {"\xF4\x8F\xBF\xBF", 4, 4},   /* U+10FFFF */
        {"\xC0\x80", 2, 0},           /* overlong NUL */
        {"\xC1\xBF", 2, 0},           /* overlong 2-byte */
        {"\xE0\x9F\xBF", 3, 0},       /* overlong 3-byte */
        {"\xF0\x8F\xBF\xBF", 4, 0},   /* overlong 4-byte */
        {"\xED\xA0\x80", 3, 0},       /* U+D800, a surrogate */
        {"\xED\xBF\xBF", 3, 0},       /* U+DFFF */
        {"\xED\x9F\xBF", 3, 3},       /* U+D7FF */
        {"\xF4\x90\x80\x80", 4, 0},   /* U+110000 */
        {"\xF5\x80\x80\x80", 4, 0},   /* lead above F4 */
        {"\xFF", 1, 0},
        {"\x80", 1, 0},               /* lone continuation */
        {"a\xC3", 2, 1},              /* cut sequence */
        {"ab\xE2\x82", 4, 2},
        {"\xF0\x9F\x98", 3, 0},
        {"\xC3\xA9\xC3", 3, 2},
        {"\xE2\x82\xAC\x80", 4, 3},   /* a continuation too many */
        {"\xC3\x28", 2, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const uint8_t *s = (const uint8_t *)cases[i].s;
        ASSERT_U64(ref_prefix(s, cases[i].n, true), cases[i].want);
        for (int k = 0; k < n_levels; k++) {
            ingot__utf8_limit(levels[k]);
            ASSERT_U64(ingot__utf8_prefix(s, cases[i].n, true), cases[i].want);
        }
        ingot__utf8_limit(INGOT__UTF8_TOP);
        check_seq(s, cases[i].n, cases[i].s);
    }
    ASSERT_EQ(mismatches, 0);
}

TEST(test_utf8_every_two_byte_sequence)
{
    find_levels();
    mismatches = 0;
    for (unsigned a = 0; a < 256; a++)
        for (unsigned b = 0; b < 256; b++) {
            uint8_t seq[2] = {(uint8_t)a, (uint8_t)b};
            uint8_t buf[200];
            memset(buf, 'a', sizeof buf);
            /* three places: inside a vector, across 16/32 and across a 64-byte block */
            for (size_t at = 0; at < 3; at++) {
                size_t p = at == 0 ? 5 : at == 1 ? 31 : 63;
                memcpy(buf + p, seq, 2);
                check_all(buf, 100, true, "two-byte");
                check_all(buf, p + 2, true, "two-byte cut");
                memset(buf + p, 'a', 2);
            }
        }
    ASSERT_EQ(mismatches, 0);
}

TEST(test_utf8_three_and_four_byte_leads)
{
    find_levels();
    mismatches = 0;
    /* Every lead E0..FF with every second byte, and third/fourth bytes from the edges of each
     * range (ASCII, continuation, lead). */
    static const uint8_t tails[] = {0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0,
                                    0xE0, 0xFF};
    const size_t nt = sizeof tails;
    for (unsigned a = 0xE0; a < 0x100; a++)
        for (unsigned b = 0; b < 256; b++)
            for (size_t c = 0; c < nt; c++) {
                uint8_t buf[200];
                memset(buf, 'a', sizeof buf);
                size_t p = (a + b + c) % 3 == 0 ? 14 : (a + b + c) % 3 == 1 ? 30 : 62;
                buf[p] = (uint8_t)a;
                buf[p + 1] = (uint8_t)b;
                buf[p + 2] = tails[c];
                if (a >= 0xF0) {
                    buf[p + 3] = tails[(c * 7 + b) % nt];
                    check_all(buf, p + 4, true, "four-byte cut");
                    buf[p + 3] = 0xBF;
                }
                check_all(buf, 100, true, "three/four-byte");
                check_all(buf, p + 3, true, "three/four-byte cut");
            }
    ASSERT_EQ(mismatches, 0);
}

/* Mixed text of 1- to 4-byte characters (every class, including the extremes). */
static size_t mixed(uint8_t *out, size_t cap, uint64_t seed)
{
    static const char *chars[] = {"a", "Z", " ", "\xC2\x80", "\xC3\xA9", "\xDF\xBF",
                                  "\xE0\xA0\x80", "\xE2\x82\xAC", "\xED\x9F\xBF", "\xEE\x80\x80",
                                  "\xEF\xBF\xBF", "\xF0\x90\x80\x80", "\xF0\x9F\x98\x80",
                                  "\xF3\xBF\xBF\xBF", "\xF4\x8F\xBF\xBF"};
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 7;
    size_t n = 0;
    for (;;) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        const char *c = chars[(x >> 20) % (sizeof chars / sizeof chars[0])];
        size_t l = strlen(c);
        if (n + l > cap) break;
        memcpy(out + n, c, l);
        n += l;
    }
    return n;
}

TEST(test_utf8_every_truncation)
{
    find_levels();
    mismatches = 0;
    uint8_t buf[600];
    for (uint64_t seed = 1; seed <= 4; seed++) {
        size_t n = mixed(buf, sizeof buf, seed);
        ASSERT_U64(ref_prefix(buf, n, true), n);
        for (size_t len = 0; len <= n; len++) check_all(buf, len, true, "truncation");
        /* and from every start offset (alignment, a cut lead at the start) */
        for (size_t at = 0; at < 70; at++) check_all(buf + at, n - at, true, "offset");
    }
    ASSERT_EQ(mismatches, 0);
}

TEST(test_utf8_nul_bytes)
{
    find_levels();
    mismatches = 0;
    uint8_t buf[300];
    size_t n = mixed(buf, sizeof buf, 9);
    for (size_t at = 0; at < n; at++) {
        uint8_t keep = buf[at];
        buf[at] = 0;
        check_all(buf, n, false, "nul");
        check_all(buf, n, true, "nul allowed");
        buf[at] = keep;
    }
    /* a NUL is found in ASCII blocks too, and padding is not taken for one */
    memset(buf, 'x', sizeof buf);
    for (size_t len = 0; len < 200; len++) {
        check_all(buf, len, false, "ascii no nul");
        if (len) {
            buf[len - 1] = 0;
            check_all(buf, len, false, "ascii nul at end");
            buf[len - 1] = 'x';
        }
    }
    ASSERT_EQ(mismatches, 0);
}

TEST(test_utf8_ends_at_unmapped_page)
{
    find_levels();
    mismatches = 0;
    long pg = sysconf(_SC_PAGESIZE);
    uint8_t *m = mmap(NULL, (size_t)pg * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                      -1, 0);
    ASSERT_TRUE(m != MAP_FAILED);
    ASSERT_EQ(mprotect(m + pg, (size_t)pg, PROT_NONE), 0);
    uint8_t src[300];
    size_t n = mixed(src, sizeof src, 3);
    for (size_t len = 0; len <= n; len++) {
        uint8_t *s = m + pg - len;
        memcpy(s, src, len);
        check_all(s, len, true, "page end");
        check_all(s, len, false, "page end");
    }
    munmap(m, (size_t)pg * 2);
    ASSERT_EQ(mismatches, 0);
}

TEST(test_utf8_random_damage)
{
    find_levels();
    mismatches = 0;
    uint8_t buf[1200];
    uint64_t x = 88172645463325252ull;
    for (int round = 0; round < 3000; round++) {
        size_t n = mixed(buf, (size_t)(round % 1100) + 1, (uint64_t)round + 100);
        int flips = round % 4;
        for (int k = 0; k < flips && n; k++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            buf[(x >> 8) % n] = (uint8_t)(x >> 40);
        }
        check_all(buf, n, round & 1, "random");
    }
    ASSERT_EQ(mismatches, 0);
}

TEST(test_utf8_section_of_strings)
{
    /* Strings separated by NULs validate in one pass exactly when each string is valid. */
    find_levels();
    uint8_t sec[4000];
    size_t n = 0;
    for (int i = 0; i < 200; i++) {
        n += mixed(sec + n, (size_t)(i % 17), (uint64_t)i);
        sec[n++] = 0;
    }
    for (int k = 0; k < n_levels; k++) {
        ingot__utf8_limit(levels[k]);
        ASSERT_TRUE(ingot__utf8_valid(sec, n, true));
        ASSERT_TRUE(!ingot__utf8_valid(sec, n, false));
    }
    ingot__utf8_limit(INGOT__UTF8_TOP);
    /* a lead byte right before a separator: the string is cut, the section invalid there */
    size_t at = 0;
    while (sec[at + 1] != 0) at++;
    sec[at] = 0xE2;
    for (int k = 0; k < n_levels; k++) {
        ingot__utf8_limit(levels[k]);
        ASSERT_U64(ingot__utf8_prefix(sec, n, true), ref_prefix(sec, n, true));
    }
    ingot__utf8_limit(INGOT__UTF8_TOP);
}

RUN_TESTS(T(test_utf8_levels), T(test_utf8_named_cases), T(test_utf8_every_two_byte_sequence),
          T(test_utf8_three_and_four_byte_leads), T(test_utf8_every_truncation),
          T(test_utf8_nul_bytes), T(test_utf8_ends_at_unmapped_page), T(test_utf8_random_damage),
          T(test_utf8_section_of_strings))
