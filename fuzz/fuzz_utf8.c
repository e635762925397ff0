/*
 * fuzz_utf8.c - libFuzzer target for the UTF-8 validator (src/core/utf8.c): every dispatch level
 * the CPU has (portable, SSE4.1, AVX2, AVX-512BW) must give the portable decoder's prefix length
 * on the input and on each of its first 64 suffixes (every alignment and block phase), with and
 * without NUL bytes allowed, and the verdict must match the independent checker of fuzz_common.h.
 * The input is copied into a buffer of exactly its size, so over-reads show under ASan.
 */
#include "fuzz_common.h"
#include "utf8.h"

static void check(const uint8_t *s, size_t n, bool allow_nul, const int *levels, int nl)
{
    size_t want = ingot__utf8_prefix_sw(s, n, allow_nul);
    FZ_CHECK(want <= n);
    FZ_CHECK((want == n) == fz_utf8(s, n, allow_nul));
    /* the prefix itself is valid, and so is nothing longer that ends at the error */
    FZ_CHECK(ingot__utf8_prefix_sw(s, want, allow_nul) == want);
    for (int k = 0; k < nl; k++) {
        ingot__utf8_limit(levels[k]);
        FZ_CHECK(ingot__utf8_prefix(s, n, allow_nul) == want);
        FZ_CHECK(ingot__utf8_valid(s, n, allow_nul) == (want == n));
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int levels[INGOT__UTF8_TOP + 1], nl;
    if (!nl) {
        int last = -1;
        for (int l = 0; l <= INGOT__UTF8_TOP; l++) {
            int got = ingot__utf8_limit(l);
            if (got != last) levels[nl++] = got;
            last = got;
        }
    }
    uint8_t *buf = malloc(size ? size : 1);
    FZ_CHECK(buf != NULL);
    if (size) memcpy(buf, data, size);
    for (size_t at = 0; at <= size && at < 64; at++) {
        check(buf + at, size - at, true, levels, nl);
        check(buf + at, size - at, false, levels, nl);
    }
    ingot__utf8_limit(INGOT__UTF8_TOP);
    free(buf);
    return 0;
}
