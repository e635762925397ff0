/*
 * utf8.c - strict UTF-8 validation for names, keys and string values read from files, and for
 * whole sections of them in one pass. Implementations, chosen once from CPUID (as crc32c.c does):
 *   - portable: a byte decoder with an 8-byte ASCII fast path (any CPU; the freestanding core);
 *   - x86-64 SSE4.1, AVX2, AVX-512BW, AVX-512 VBMI: the nibble-table method of Keiser and Lemire
 *     ("Validating UTF-8 in less than one instruction per byte", 2021), 64 bytes per step, written
 *     from the paper's description. Each byte pair (previous, current) is classified by three
 *     16-entry table lookups (high and low nibble of the previous byte, high nibble of the current
 *     one) whose AND is non-zero exactly for the invalid pairs; a second rule requires a
 *     continuation byte wherever the byte two (three) back is a 3-byte (4-byte) lead. The tail is
 *     copied into a block padded with spaces (AVX-512: a masked load), so a sequence cut by the end
 *     meets a non-continuation byte. The vector code only says valid or not; an error position
 *     comes from the portable decoder, restarted at a character boundary just before the block
 *     that failed. With AVX-512, every block after the first takes the bytes one, two and three
 *     back from unaligned loads rather than lane shuffles (the shuffle port is the limit), and
 *     with VBMI the lookups are vpermb on tables repeated four times, which need no nibble masks.
 * All levels give the same answers (tests/test_utf8.c: every sequence class, every truncation at
 * every block boundary, random inputs, each level against the portable code; fuzz/fuzz_utf8.c).
 * Freestanding: no libc.
 */
#include "utf8.h"

/* The portable decoder: the index of the first byte of the first invalid sequence, or n. */
static size_t prefix_sw(const uint8_t *s, size_t n, bool allow_nul)
{
    size_t i = 0;
    while (i < n) {
        /* ASCII fast path, 8 bytes at a time (names are mostly ASCII). */
        while (n - i >= 8) {
            uint64_t w;
            ING_MEMCPY(&w, s + i, 8);
            if (w & 0x8080808080808080ull) break;
            if (!allow_nul && ((w - 0x0101010101010101ull) & ~w & 0x8080808080808080ull)) break;
            i += 8;
        }
        if (i >= n) break;
        uint8_t c = s[i];
        if (c < 0x80) {
            if (c == 0 && !allow_nul) return i;
            i++;
            continue;
        }
        size_t len;
        uint32_t cp;
        if (c >= 0xC2 && c <= 0xDF) len = 2, cp = c & 0x1F;
        else if (c >= 0xE0 && c <= 0xEF) len = 3, cp = c & 0x0F;
        else if (c >= 0xF0 && c <= 0xF4) len = 4, cp = c & 0x07;
        else return i;
        if (n - i < len) return i;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80) return i;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10FFFF ||
            (cp >= 0xD800 && cp <= 0xDFFF))
            return i;
        i += len;
    }
    return n;
}

size_t ingot__utf8_prefix_sw(const uint8_t *s, size_t n, bool allow_nul)
{
    return prefix_sw(s, n, allow_nul);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(INGOT_NO_SIMD)
#include <cpuid.h>
#include <immintrin.h>
#include <stdatomic.h>

/* The vector code found no error in [0, b): the first error lies at or after the last character
 * boundary before b. That boundary is the last byte of s[b-4, b) that is no continuation byte:
 * the checks of the bytes before b passed, so no sequence that starts before it runs past it.
 * (Four continuation bytes in a row would have failed those checks; then start from 0.) */
static size_t prefix_from_block(const uint8_t *s, size_t n, bool allow_nul, size_t b)
{
    size_t p = 0;
    for (size_t k = b; k > 0 && k + 4 > b; k--)
        if ((s[k - 1] & 0xC0) != 0x80) {
            p = k - 1;
            break;
        }
    return p + prefix_sw(s + p, n - p, allow_nul);
}

/* Error classes of a byte pair (previous byte, current byte). A bit set in all three lookups is
 * an error; TWO_CONTS is an error unless the rule of 3- and 4-byte sequences asks for it. */
#define TOO_SHORT (1 << 0)  /* lead byte, then no continuation byte */
#define TOO_LONG (1 << 1)   /* ASCII byte, then a continuation byte */
#define OVERLONG_3 (1 << 2) /* E0, then 80..9F */
#define TOO_LARGE (1 << 3)  /* F4, then 90..BF; F5..FF, then 90..BF */
#define SURROGATE (1 << 4)  /* ED, then A0..BF */
#define OVERLONG_2 (1 << 5) /* C0 or C1, then a continuation byte */
#define TOO_LARGE_1000 (1 << 6) /* F5..FF, then 80..8F */
#define OVERLONG_4 (1 << 6)     /* F0, then 80..8F */
#define TWO_CONTS (1 << 7)      /* continuation byte, then a continuation byte */
#define CARRY (TOO_SHORT | TOO_LONG | TWO_CONTS) /* classes decided by the high nibbles alone */

/* Indexed by the previous byte's high nibble. */
#define TAB_PREV_HIGH                                                                              \
    TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, TWO_CONTS,      \
        TWO_CONTS, TWO_CONTS, TWO_CONTS, TOO_SHORT | OVERLONG_2, TOO_SHORT,                         \
        TOO_SHORT | OVERLONG_3 | SURROGATE, TOO_SHORT | TOO_LARGE | TOO_LARGE_1000 | OVERLONG_4
/* Indexed by the previous byte's low nibble. */
#define TAB_PREV_LOW                                                                               \
    CARRY | OVERLONG_3 | OVERLONG_2 | OVERLONG_4, CARRY | OVERLONG_2, CARRY, CARRY,               \
        CARRY | TOO_LARGE, CARRY | TOO_LARGE | TOO_LARGE_1000,                                      \
        CARRY | TOO_LARGE | TOO_LARGE_1000, CARRY | TOO_LARGE | TOO_LARGE_1000,                     \
        CARRY | TOO_LARGE | TOO_LARGE_1000, CARRY | TOO_LARGE | TOO_LARGE_1000,                     \
        CARRY | TOO_LARGE | TOO_LARGE_1000, CARRY | TOO_LARGE | TOO_LARGE_1000,                     \
        CARRY | TOO_LARGE | TOO_LARGE_1000, CARRY | TOO_LARGE | TOO_LARGE_1000 | SURROGATE,         \
        CARRY | TOO_LARGE | TOO_LARGE_1000, CARRY | TOO_LARGE | TOO_LARGE_1000
/* Indexed by the current byte's high nibble. */
#define TAB_CUR_HIGH                                                                               \
    TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT,         \
        TOO_LONG | OVERLONG_2 | TWO_CONTS | OVERLONG_3 | TOO_LARGE_1000 | OVERLONG_4,               \
        TOO_LONG | OVERLONG_2 | TWO_CONTS | OVERLONG_3 | TOO_LARGE,                                 \
        TOO_LONG | OVERLONG_2 | TWO_CONTS | SURROGATE | TOO_LARGE,                                  \
        TOO_LONG | OVERLONG_2 | TWO_CONTS | SURROGATE | TOO_LARGE, TOO_SHORT, TOO_SHORT, TOO_SHORT, \
        TOO_SHORT

static const uint8_t tab_prev_high[16] = {TAB_PREV_HIGH};
static const uint8_t tab_prev_low[16] = {TAB_PREV_LOW};
static const uint8_t tab_cur_high[16] = {TAB_CUR_HIGH};
/* A sequence still open at the end of a vector: its last byte >= C0, or the one before >= E0,
 * or the one before that >= F0 (saturating subtraction of these leaves a non-zero byte). */
#define FF8 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF
static const uint8_t tab_open_end[64] = {FF8, FF8, FF8, FF8, FF8, FF8, FF8,
                                         0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xEF, 0xDF, 0xBF};

#define BLOCK 64

/* ---- SSE4.1 (pshufb, palignr: SSSE3; ptest: SSE4.1), four vectors per block ---- */

#define SSE_TARGET __attribute__((target("sse4.1")))

typedef struct {
    __m128i th, tl, tc, nib, err, prev, open;
} sse_st;

SSE_TARGET static inline void sse_check(sse_st *st, __m128i in)
{
    __m128i p1 = _mm_alignr_epi8(in, st->prev, 15);
    __m128i p2 = _mm_alignr_epi8(in, st->prev, 14);
    __m128i p3 = _mm_alignr_epi8(in, st->prev, 13);
    __m128i a = _mm_shuffle_epi8(st->th, _mm_and_si128(_mm_srli_epi16(p1, 4), st->nib));
    __m128i b = _mm_shuffle_epi8(st->tl, _mm_and_si128(p1, st->nib));
    __m128i c = _mm_shuffle_epi8(st->tc, _mm_and_si128(_mm_srli_epi16(in, 4), st->nib));
    __m128i sc = _mm_and_si128(_mm_and_si128(a, b), c);
    __m128i must = _mm_or_si128(_mm_subs_epu8(p2, _mm_set1_epi8((char)(0xE0 - 0x80))),
                                _mm_subs_epu8(p3, _mm_set1_epi8((char)(0xF0 - 0x80))));
    must = _mm_and_si128(must, _mm_set1_epi8((char)0x80));
    st->err = _mm_or_si128(st->err, _mm_xor_si128(must, sc));
    st->prev = in;
}

/* One block of 64 bytes at p; false if an error has been seen. */
SSE_TARGET static inline bool sse_block(sse_st *st, const uint8_t *p, bool allow_nul)
{
    __m128i v0 = _mm_loadu_si128((const __m128i *)(const void *)p);
    __m128i v1 = _mm_loadu_si128((const __m128i *)(const void *)(p + 16));
    __m128i v2 = _mm_loadu_si128((const __m128i *)(const void *)(p + 32));
    __m128i v3 = _mm_loadu_si128((const __m128i *)(const void *)(p + 48));
    __m128i all = _mm_or_si128(_mm_or_si128(v0, v1), _mm_or_si128(v2, v3));
    if (!allow_nul) {
        __m128i z = _mm_setzero_si128();
        __m128i m = _mm_min_epu8(_mm_min_epu8(v0, v1), _mm_min_epu8(v2, v3));
        st->err = _mm_or_si128(st->err, _mm_cmpeq_epi8(m, z));
    }
    if (_mm_movemask_epi8(all) == 0) {
        st->err = _mm_or_si128(st->err, st->open);
        st->open = _mm_setzero_si128();
        st->prev = v3;
    } else {
        sse_check(st, v0);
        sse_check(st, v1);
        sse_check(st, v2);
        sse_check(st, v3);
        st->open = _mm_subs_epu8(v3, _mm_loadu_si128((const __m128i *)(const void *)
                                                     (tab_open_end + 48)));
    }
    return _mm_testz_si128(st->err, st->err);
}

SSE_TARGET static size_t prefix_sse(const uint8_t *s, size_t n, bool allow_nul)
{
    sse_st st;
    st.th = _mm_loadu_si128((const __m128i *)(const void *)tab_prev_high);
    st.tl = _mm_loadu_si128((const __m128i *)(const void *)tab_prev_low);
    st.tc = _mm_loadu_si128((const __m128i *)(const void *)tab_cur_high);
    st.nib = _mm_set1_epi8(0x0F);
    st.err = st.prev = st.open = _mm_setzero_si128();
    size_t b = 0;
    for (; n - b >= BLOCK; b += BLOCK)
        if (!sse_block(&st, s + b, allow_nul)) return prefix_from_block(s, n, allow_nul, b);
    uint8_t tail[BLOCK];
    ING_MEMSET(tail, ' ', BLOCK);
    ING_MEMCPY(tail, s + b, n - b);
    if (!sse_block(&st, tail, allow_nul)) return prefix_from_block(s, n, allow_nul, b);
    return n;
}

/* ---- AVX2, two vectors per block ---- */

#define AVX2_TARGET __attribute__((target("avx2")))

typedef struct {
    __m256i th, tl, tc, nib, err, prev, open;
} avx2_st;

AVX2_TARGET static inline void avx2_check(avx2_st *st, __m256i in)
{
    /* palignr works within 128-bit lanes: pair each lane with the one before it */
    __m256i t = _mm256_permute2x128_si256(st->prev, in, 0x21);
    __m256i p1 = _mm256_alignr_epi8(in, t, 15);
    __m256i p2 = _mm256_alignr_epi8(in, t, 14);
    __m256i p3 = _mm256_alignr_epi8(in, t, 13);
    __m256i a = _mm256_shuffle_epi8(st->th, _mm256_and_si256(_mm256_srli_epi16(p1, 4), st->nib));
    __m256i b = _mm256_shuffle_epi8(st->tl, _mm256_and_si256(p1, st->nib));
    __m256i c = _mm256_shuffle_epi8(st->tc, _mm256_and_si256(_mm256_srli_epi16(in, 4), st->nib));
    __m256i sc = _mm256_and_si256(_mm256_and_si256(a, b), c);
    __m256i must =
        _mm256_or_si256(_mm256_subs_epu8(p2, _mm256_set1_epi8((char)(0xE0 - 0x80))),
                        _mm256_subs_epu8(p3, _mm256_set1_epi8((char)(0xF0 - 0x80))));
    must = _mm256_and_si256(must, _mm256_set1_epi8((char)0x80));
    st->err = _mm256_or_si256(st->err, _mm256_xor_si256(must, sc));
    st->prev = in;
}

AVX2_TARGET static inline bool avx2_block(avx2_st *st, const uint8_t *p, bool allow_nul)
{
    __m256i v0 = _mm256_loadu_si256((const __m256i *)(const void *)p);
    __m256i v1 = _mm256_loadu_si256((const __m256i *)(const void *)(p + 32));
    if (!allow_nul) {
        __m256i m = _mm256_min_epu8(v0, v1);
        st->err = _mm256_or_si256(st->err, _mm256_cmpeq_epi8(m, _mm256_setzero_si256()));
    }
    if (_mm256_movemask_epi8(_mm256_or_si256(v0, v1)) == 0) {
        st->err = _mm256_or_si256(st->err, st->open);
        st->open = _mm256_setzero_si256();
        st->prev = v1;
    } else {
        avx2_check(st, v0);
        avx2_check(st, v1);
        st->open = _mm256_subs_epu8(v1, _mm256_loadu_si256((const __m256i *)(const void *)
                                                           (tab_open_end + 32)));
    }
    return _mm256_testz_si256(st->err, st->err);
}

AVX2_TARGET static size_t prefix_avx2(const uint8_t *s, size_t n, bool allow_nul)
{
    avx2_st st;
    st.th = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)
                                                        tab_prev_high));
    st.tl = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)
                                                        tab_prev_low));
    st.tc = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)
                                                        tab_cur_high));
    st.nib = _mm256_set1_epi8(0x0F);
    st.err = st.prev = st.open = _mm256_setzero_si256();
    size_t b = 0;
    for (; n - b >= BLOCK; b += BLOCK)
        if (!avx2_block(&st, s + b, allow_nul)) return prefix_from_block(s, n, allow_nul, b);
    uint8_t tail[BLOCK];
    ING_MEMSET(tail, ' ', BLOCK);
    ING_MEMCPY(tail, s + b, n - b);
    if (!avx2_block(&st, tail, allow_nul)) return prefix_from_block(s, n, allow_nul, b);
    return n;
}

/* ---- AVX-512BW, one vector per block; the tail through a masked load ---- */

#define AVX512_TARGET __attribute__((target("avx512f,avx512bw")))

typedef struct {
    __m512i th, tl, tc, nib, err, prev, open;
} avx512_st;

/* The rules on one block in, given the vectors of the byte one, two and three back (p1, p2, p3):
 * errors into st->err, a sequence left open at its end into st->open. */
AVX512_TARGET static inline void avx512_rules(avx512_st *st, __m512i in, __m512i p1, __m512i p2,
                                              __m512i p3)
{
    __m512i a = _mm512_shuffle_epi8(st->th, _mm512_and_si512(_mm512_srli_epi16(p1, 4), st->nib));
    __m512i b = _mm512_shuffle_epi8(st->tl, _mm512_and_si512(p1, st->nib));
    __m512i c = _mm512_shuffle_epi8(st->tc, _mm512_and_si512(_mm512_srli_epi16(in, 4), st->nib));
    __m512i sc = _mm512_ternarylogic_epi32(a, b, c, 0x80); /* a & b & c */
    /* bit 7 of (p2 -sat 0x60) | (p3 -sat 0x70): the byte two back >= E0 or three back >= F0 */
    __m512i must = _mm512_ternarylogic_epi32(
        _mm512_subs_epu8(p2, _mm512_set1_epi8((char)(0xE0 - 0x80))),
        _mm512_subs_epu8(p3, _mm512_set1_epi8((char)(0xF0 - 0x80))),
        _mm512_set1_epi8((char)0x80), 0xA8); /* (x | y) & z */
    st->err = _mm512_ternarylogic_epi32(st->err, must, sc, 0xF6); /* err | (must ^ sc) */
    st->open = _mm512_subs_epu8(in, _mm512_loadu_si512((const void *)tab_open_end));
}

/* One block. valid: the bytes of the block that belong to the input (the others read as 0 and
 * count as the end of the input, not as NUL bytes). NUL bytes, when not allowed, go to *nul. */
AVX512_TARGET static inline void avx512_block(avx512_st *st, __m512i in, __mmask64 valid,
                                              bool allow_nul, __mmask64 *nul)
{
    if (!allow_nul) *nul |= _mm512_mask_testn_epi8_mask(valid, in, in);
    if (_mm512_movepi8_mask(in) == 0) {
        st->err = _mm512_or_si512(st->err, st->open);
        st->open = _mm512_setzero_si512();
    } else {
        /* lanes of 128 bits again: the vector of the lane before each lane */
        __m512i t = _mm512_alignr_epi64(in, st->prev, 6);
        __m512i p1 = _mm512_alignr_epi8(in, t, 15);
        __m512i p2 = _mm512_alignr_epi8(in, t, 14);
        __m512i p3 = _mm512_alignr_epi8(in, t, 13);
        avx512_rules(st, in, p1, p2, p3);
    }
    st->prev = in;
}

/* A block at s, not the first one of the input: the vectors of the byte one, two and three back
 * come from unaligned loads at s - 1, s - 2, s - 3, which leaves the shuffle port to the three
 * table lookups (the shifts by lanes above take four more shuffles). The whole block is input. */
AVX512_TARGET static inline void avx512_block_at(avx512_st *st, const uint8_t *s, bool allow_nul,
                                                 __mmask64 *nul)
{
    __m512i in = _mm512_loadu_si512((const void *)s);
    if (!allow_nul) *nul |= _mm512_testn_epi8_mask(in, in);
    if (_mm512_movepi8_mask(in) == 0) {
        st->err = _mm512_or_si512(st->err, st->open);
        st->open = _mm512_setzero_si512();
    } else {
        avx512_rules(st, in, _mm512_loadu_si512((const void *)(s - 1)),
                     _mm512_loadu_si512((const void *)(s - 2)),
                     _mm512_loadu_si512((const void *)(s - 3)));
    }
    st->prev = in;
}

AVX512_TARGET static inline bool avx512_ok(const avx512_st *st, __mmask64 nul)
{
    return !nul && !_mm512_test_epi64_mask(st->err, st->err);
}

AVX512_TARGET static size_t prefix_avx512(const uint8_t *s, size_t n, bool allow_nul)
{
    avx512_st st;
    st.th = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(const void *)tab_prev_high));
    st.tl = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(const void *)tab_prev_low));
    st.tc = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(const void *)tab_cur_high));
    st.nib = _mm512_set1_epi8(0x0F);
    st.err = st.prev = st.open = _mm512_setzero_si512();
    const __mmask64 all = ~(__mmask64)0;
    __mmask64 nul = 0;
    size_t b = 0;
    if (n >= BLOCK) {
        avx512_block(&st, _mm512_loadu_si512((const void *)s), all, allow_nul, &nul);
        if (!avx512_ok(&st, nul)) return prefix_from_block(s, n, allow_nul, 0);
        b = BLOCK;
        /* two blocks per check: an error is placed in the pair, the portable code finds it */
        for (; n - b >= 2 * BLOCK; b += 2 * BLOCK) {
            avx512_block_at(&st, s + b, allow_nul, &nul);
            avx512_block_at(&st, s + b + BLOCK, allow_nul, &nul);
            if (!avx512_ok(&st, nul)) return prefix_from_block(s, n, allow_nul, b);
        }
        if (n - b >= BLOCK) {
            avx512_block_at(&st, s + b, allow_nul, &nul);
            if (!avx512_ok(&st, nul)) return prefix_from_block(s, n, allow_nul, b);
            b += BLOCK;
        }
    }
    /* Masked-off bytes are not read (no fault past the end) and load as 0: the end. */
    __mmask64 m = n - b ? ~0ull >> (BLOCK - (n - b)) : 0;
    avx512_block(&st, _mm512_maskz_loadu_epi8(m, s + b), m, allow_nul, &nul);
    if (!avx512_ok(&st, nul)) return prefix_from_block(s, n, allow_nul, b);
    return n;
}

/* ---- AVX-512 VBMI: as above, with vpermb for the lookups ---- */

#define VBMI_TARGET __attribute__((target("avx512f,avx512bw,avx512vbmi")))

/* The rules of avx512_rules with vpermb, whose index takes bits 0-5 of each byte: with the
 * 16-entry tables repeated four times, a byte's low nibble selects the same entry whatever its
 * bits 4-7, and so does the high nibble after a 16-bit shift (bits 4-7 of the low byte of each
 * pair then hold the next byte's low nibble), which spares the three masks of the nibbles. A
 * sequence left open at the end of a block is found from st->prev when the next block is ASCII
 * (vbmi_block_at) or at the end, so it is not computed for every block. */
VBMI_TARGET static inline void vbmi_block_at(avx512_st *st, const uint8_t *s, bool allow_nul,
                                             __mmask64 *nul)
{
    __m512i in = _mm512_loadu_si512((const void *)s);
    if (!allow_nul) *nul |= _mm512_testn_epi8_mask(in, in);
    if (_mm512_movepi8_mask(in) == 0) {
        st->err = _mm512_or_si512(
            st->err, _mm512_subs_epu8(st->prev, _mm512_loadu_si512((const void *)tab_open_end)));
    } else {
        __m512i p1 = _mm512_loadu_si512((const void *)(s - 1));
        __m512i a = _mm512_permutexvar_epi8(_mm512_srli_epi16(p1, 4), st->th);
        __m512i b = _mm512_permutexvar_epi8(p1, st->tl);
        __m512i c = _mm512_permutexvar_epi8(_mm512_srli_epi16(in, 4), st->tc);
        __m512i sc = _mm512_ternarylogic_epi32(a, b, c, 0x80); /* a & b & c */
        __m512i must = _mm512_ternarylogic_epi32(
            _mm512_subs_epu8(_mm512_loadu_si512((const void *)(s - 2)),
                             _mm512_set1_epi8((char)(0xE0 - 0x80))),
            _mm512_subs_epu8(_mm512_loadu_si512((const void *)(s - 3)),
                             _mm512_set1_epi8((char)(0xF0 - 0x80))),
            _mm512_set1_epi8((char)0x80), 0xA8); /* (x | y) & z */
        st->err = _mm512_ternarylogic_epi32(st->err, must, sc, 0xF6); /* err | (must ^ sc) */
    }
    st->prev = in;
}

VBMI_TARGET static size_t prefix_vbmi(const uint8_t *s, size_t n, bool allow_nul)
{
    avx512_st st;
    st.th = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(const void *)tab_prev_high));
    st.tl = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(const void *)tab_prev_low));
    st.tc = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(const void *)tab_cur_high));
    st.nib = _mm512_set1_epi8(0x0F);
    st.err = st.prev = st.open = _mm512_setzero_si512();
    const __mmask64 all = ~(__mmask64)0;
    __mmask64 nul = 0;
    size_t b = 0;
    if (n >= BLOCK) {
        avx512_block(&st, _mm512_loadu_si512((const void *)s), all, allow_nul, &nul);
        if (!avx512_ok(&st, nul)) return prefix_from_block(s, n, allow_nul, 0);
        b = BLOCK;
        for (; n - b >= 2 * BLOCK; b += 2 * BLOCK) {
            vbmi_block_at(&st, s + b, allow_nul, &nul);
            vbmi_block_at(&st, s + b + BLOCK, allow_nul, &nul);
            if (!avx512_ok(&st, nul)) return prefix_from_block(s, n, allow_nul, b);
        }
        if (n - b >= BLOCK) {
            vbmi_block_at(&st, s + b, allow_nul, &nul);
            if (!avx512_ok(&st, nul)) return prefix_from_block(s, n, allow_nul, b);
            b += BLOCK;
        }
        st.open = _mm512_subs_epu8(st.prev, _mm512_loadu_si512((const void *)tab_open_end));
    }
    __mmask64 m = n - b ? ~0ull >> (BLOCK - (n - b)) : 0;
    avx512_block(&st, _mm512_maskz_loadu_epi8(m, s + b), m, allow_nul, &nul);
    if (!avx512_ok(&st, nul)) return prefix_from_block(s, n, allow_nul, b);
    return n;
}

#define CAP_SSE 1
#define CAP_AVX2 2
#define CAP_AVX512 4
#define CAP_VBMI 16
#define CAPS_KNOWN 8
static atomic_int caps_state, caps_probed; /* in force; what the CPU has (CPUID is slow in VMs) */

static int probe(void)
{
    unsigned a, b, c, d;
    int s = CAPS_KNOWN;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return s;
    bool ssse3 = c & (1u << 9), sse41 = c & (1u << 19);
    if (ssse3 && sse41) s |= CAP_SSE;
    bool osxsave = c & (1u << 27), avx = c & (1u << 28);
    if (!(s & CAP_SSE) || !osxsave || !avx) return s;
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    if ((lo & 6u) != 6u || !__get_cpuid_count(7, 0, &a, &b, &c, &d)) return s;
    if (b & (1u << 5)) s |= CAP_AVX2;
    /* AVX-512F (b16), BW (b30) and VL (b31: the native reader's scans use it); the OS saves
     * opmask and ZMM state (XCR0 bits 5-7) */
    bool f512 = b & (1u << 16), bw = b & (1u << 30), vl = b & (1u << 31);
    if ((s & CAP_AVX2) && f512 && bw && vl && (lo & 0xE0u) == 0xE0u) s |= CAP_AVX512;
    if ((s & CAP_AVX512) && (c & (1u << 1))) s |= CAP_VBMI; /* AVX512_VBMI: ecx bit 1 */
    return s;
}

static int caps(void)
{
    int s = atomic_load_explicit(&caps_state, memory_order_relaxed);
    if (s & CAPS_KNOWN) return s;
    s = probe();
    atomic_store_explicit(&caps_state, s, memory_order_relaxed);
    return s;
}

static int level_of(int c)
{
    return (c & CAP_VBMI)     ? 4
           : (c & CAP_AVX512) ? 3
           : (c & CAP_AVX2)   ? 2
           : (c & CAP_SSE)    ? 1
                              : 0;
}

int ingot__utf8_limit(int level)
{
    int s = atomic_load_explicit(&caps_probed, memory_order_relaxed);
    if (!(s & CAPS_KNOWN)) {
        s = probe();
        atomic_store_explicit(&caps_probed, s, memory_order_relaxed);
    }
    if (level < 4) s &= ~CAP_VBMI;
    if (level < 3) s &= ~CAP_AVX512;
    if (level < 2) s &= ~CAP_AVX2;
    if (level < 1) s &= ~CAP_SSE;
    atomic_store_explicit(&caps_state, s, memory_order_relaxed);
    return level_of(s);
}

int ingot__utf8_level(void) { return level_of(caps()); }

/* Below this length the portable code's ASCII loop is as fast (most names and keys). */
#define VECTOR_MIN 16

size_t ingot__utf8_prefix(const uint8_t *s, size_t n, bool allow_nul)
{
    if (n < VECTOR_MIN) return prefix_sw(s, n, allow_nul);
    int c = caps();
    if (c & CAP_VBMI) return prefix_vbmi(s, n, allow_nul);
    if (c & CAP_AVX512) return prefix_avx512(s, n, allow_nul);
    if (c & CAP_AVX2) return prefix_avx2(s, n, allow_nul);
    if (c & CAP_SSE) return prefix_sse(s, n, allow_nul);
    return prefix_sw(s, n, allow_nul);
}

#else

int ingot__utf8_limit(int level)
{
    (void)level;
    return 0;
}

int ingot__utf8_level(void) { return 0; }

size_t ingot__utf8_prefix(const uint8_t *s, size_t n, bool allow_nul)
{
    return prefix_sw(s, n, allow_nul);
}

#endif

bool ingot__utf8_valid(const uint8_t *s, size_t n, bool allow_nul)
{
    return ingot__utf8_prefix(s, n, allow_nul) == n;
}
