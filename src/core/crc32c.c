/*
 * crc32c.c - CRC-32C (Castagnoli), the checksum of .ingot headers and tensors (docs/FORMAT.md §6).
 * Three implementations, chosen once from CPUID:
 *   - portable slice-by-8 (any CPU; ~1.5 GB/s);
 *   - x86-64 SSE4.2: the crc32 instruction over three interleaved streams (latency 3, throughput 1,
 *     so three independent streams keep the unit busy), joined with a shift in GF(2); ~8 bytes per
 *     cycle;
 *   - x86-64 with VPCLMULQDQ + AVX2 (Ice Lake, Zen 3 and later), inputs of 512 bytes and more:
 *     carry-less multiply folding of eight 128-bit lanes (256 bytes per iteration), reduced with
 *     two crc32 instructions at the end. One sequential stream: 2-3x the SSE4.2 code for 1-64 KiB
 *     inputs (which it runs as one stream), about the same for large ones on Zen 4, where a ymm
 *     VPCLMULQDQ issues every 2 cycles (docs/PERFORMANCE.md has the figures, and why a loop that
 *     feeds both units at once was not kept).
 * All give bit-identical results (tests/test_crc32c.c compares each with the portable code).
 * Freestanding: no libc.
 */
#include "crc32c.h"

#include "ingot/core.h"

#include "crc32c_tables.h"

#define POLY 0x82F63B78u

static uint32_t sw_update(uint32_t crc, const uint8_t *p, size_t n)
{
    while (n && ((uintptr_t)p & 7)) {
        crc = (crc >> 8) ^ crc32c_table[0][(crc ^ *p++) & 0xff];
        n--;
    }
    while (n >= 8) {
        uint32_t lo = crc ^ ing_ld32(p);
        uint32_t hi = ing_ld32(p + 4);
        crc = crc32c_table[7][lo & 0xff] ^ crc32c_table[6][(lo >> 8) & 0xff] ^
              crc32c_table[5][(lo >> 16) & 0xff] ^ crc32c_table[4][lo >> 24] ^
              crc32c_table[3][hi & 0xff] ^ crc32c_table[2][(hi >> 8) & 0xff] ^
              crc32c_table[1][(hi >> 16) & 0xff] ^ crc32c_table[0][hi >> 24];
        p += 8;
        n -= 8;
    }
    while (n--) crc = (crc >> 8) ^ crc32c_table[0][(crc ^ *p++) & 0xff];
    return crc;
}

/* a * b mod P, both in the reflected representation (x^0 is bit 31). */
static uint32_t mulmodp(uint32_t a, uint32_t b)
{
    uint32_t m = 1u << 31, p = 0;
    for (;;) {
        if (a & m) {
            p ^= b;
            if ((a & (m - 1)) == 0) break;
        }
        m >>= 1;
        b = (b & 1) ? (b >> 1) ^ POLY : b >> 1;
    }
    return p;
}

/* x^(8n) mod P: the operator that appends n zero bytes to a raw CRC register. */
static uint32_t x8nmodp(uint64_t n)
{
    uint32_t p = 1u << 31;
    unsigned k = 3;
    while (n) {
        if (n & 1) p = mulmodp(crc32c_x2n[k & 31], p);
        n >>= 1;
        k++;
    }
    return p;
}

uint32_t ingot__crc32c_shift(uint32_t raw, uint64_t nbytes) { return mulmodp(x8nmodp(nbytes), raw); }

uint32_t ingot_crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b)
{
    /* With pre/post inversion, crc(A||B) = shift(crc(A), |B|) ^ crc(B): the inversions cancel. */
    return ingot__crc32c_shift(crc_a, len_b) ^ crc_b;
}

uint32_t ingot__crc32c_sw(uint32_t crc, const void *buf, size_t n)
{
    return ~sw_update(~crc, (const uint8_t *)buf, n);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(INGOT_NO_SIMD)
#include <cpuid.h>
#include <immintrin.h>
#include <stdatomic.h>

#define HW_TARGET __attribute__((target("sse4.2")))

HW_TARGET static inline uint32_t hw_u64(uint32_t c, const uint8_t *p)
{
    uint64_t v;
    __builtin_memcpy(&v, p, 8);
    return (uint32_t)__builtin_ia32_crc32di(c, v);
}

HW_TARGET static uint32_t hw_single(uint32_t crc, const uint8_t *p, size_t n)
{
    while (n && ((uintptr_t)p & 7)) {
        crc = __builtin_ia32_crc32qi(crc, *p++);
        n--;
    }
    while (n >= 32) {
        crc = hw_u64(crc, p);
        crc = hw_u64(crc, p + 8);
        crc = hw_u64(crc, p + 16);
        crc = hw_u64(crc, p + 24);
        p += 32;
        n -= 32;
    }
    while (n >= 8) {
        crc = hw_u64(crc, p);
        p += 8;
        n -= 8;
    }
    while (n--) crc = __builtin_ia32_crc32qi(crc, *p++);
    return crc;
}

/* Below this size one stream wins: the two shifts cost about 2k cycles. */
#define THREE_WAY_MIN (64u * 1024u)

HW_TARGET static uint32_t hw_update(uint32_t crc, const uint8_t *p, size_t n)
{
    if (n < THREE_WAY_MIN) return hw_single(crc, p, n);
    size_t part = (n / 3) & ~(size_t)7;
    const uint8_t *a = p, *b = p + part, *c = p + 2 * part;
    uint32_t ca = crc, cb = 0, cc = 0;
    for (size_t i = 0; i < part; i += 8) {
        ca = hw_u64(ca, a + i);
        cb = hw_u64(cb, b + i);
        cc = hw_u64(cc, c + i);
    }
    crc = ingot__crc32c_shift(ca, part) ^ cb;
    crc = ingot__crc32c_shift(crc, part) ^ cc;
    return hw_single(crc, p + 3 * part, n - 3 * part);
}

/* ---- Carry-less multiply folding ------------------------------------------------------------
 * Bit order: a 128-bit lane X, loaded little-endian from 16 message bytes, is the polynomial whose
 * x^127 coefficient is bit 0 (the first message bit), as the reflected CRC sees it. Its low qword A
 * holds the high-degree half, so X = A*x^64 + B with B the high qword.
 * Invariant: the raw CRC register of everything consumed so far equals X*x^32 mod P, where X is
 * the (pending) lane content; folding X forward over F more message bits is
 *     X*x^F = A*x^(F+64) + B*x^F  ==  clmul(A, x^(F+31) mod P) ^ clmul(B, x^(F-33) mod P)  (mod P)
 * with each constant held as a 32-bit reflected value in the low half of a qword: such a value
 * stands for K*x^32, and a carry-less product of two reflected operands is one degree short, hence
 * 31 = 64 - 32 - 1 and -33 = -32 - 1. Every product has degree < 96, so it fits the lane, and the
 * next message lane is simply XORed in. At the end, X*x^32 mod P is two crc32 instructions:
 * crc32q(crc32q(0, A), B) = (B + A*x^64)*x^32 mod P. */

#define CLMUL_TARGET __attribute__((target("sse4.2,pclmul,avx2,vpclmulqdq")))

/* Fold constants x^n mod P (reflected, as mulmodp above represents them), n = 2048+31, 2048-33 for
 * the main loop (eight lanes in four ymm registers: 256 bytes ahead) and 128+31, 128-33 for one
 * lane; tests/test_crc32c.c checks every length against the portable code. */
#define K_FOLD256_A 0xdcb17aa4u
#define K_FOLD256_B 0xb9e02b86u
#define K_FOLD16_A 0xf20c0dfeu
#define K_FOLD16_B 0x493c7d27u

CLMUL_TARGET static inline __m256i fold256(__m256i x, __m256i k, const uint8_t *next)
{
    __m256i lo = _mm256_clmulepi64_epi128(x, k, 0x00);
    __m256i hi = _mm256_clmulepi64_epi128(x, k, 0x11);
    const void *q = next;
    return _mm256_xor_si256(_mm256_xor_si256(lo, hi), _mm256_loadu_si256(q));
}

CLMUL_TARGET static inline __m128i fold16(__m128i x, __m128i k, __m128i next)
{
    __m128i lo = _mm_clmulepi64_si128(x, k, 0x00);
    __m128i hi = _mm_clmulepi64_si128(x, k, 0x11);
    return _mm_xor_si128(_mm_xor_si128(lo, hi), next);
}

/* Smallest input the folding path takes: below it the setup and the final lane merge cost more
 * than the single-stream crc32 loop. */
#define CLMUL_MIN 512u

CLMUL_TARGET static uint32_t clmul_update(uint32_t crc, const uint8_t *p, size_t n)
{
    if (n < CLMUL_MIN) return hw_update(crc, p, n);
    const void *q = p;
    __m256i x0 = _mm256_loadu_si256(q);
    q = p + 32;
    __m256i x1 = _mm256_loadu_si256(q);
    q = p + 64;
    __m256i x2 = _mm256_loadu_si256(q);
    q = p + 96;
    __m256i x3 = _mm256_loadu_si256(q);
    x0 = _mm256_xor_si256(x0, _mm256_set_epi64x(0, 0, 0, (long long)crc));
    const __m256i k = _mm256_set_epi64x(K_FOLD256_B, K_FOLD256_A, K_FOLD256_B, K_FOLD256_A);
    p += 128;
    n -= 128;
    __m256i y0, y1, y2, y3;
    q = p;
    y0 = _mm256_loadu_si256(q);
    q = p + 32;
    y1 = _mm256_loadu_si256(q);
    q = p + 64;
    y2 = _mm256_loadu_si256(q);
    q = p + 96;
    y3 = _mm256_loadu_si256(q);
    p += 128;
    n -= 128;
    /* Now eight registers hold 256 consecutive bytes: x0..x3 then y0..y3. */
    while (n >= 256) {
        x0 = fold256(x0, k, p);
        x1 = fold256(x1, k, p + 32);
        x2 = fold256(x2, k, p + 64);
        x3 = fold256(x3, k, p + 96);
        y0 = fold256(y0, k, p + 128);
        y1 = fold256(y1, k, p + 160);
        y2 = fold256(y2, k, p + 192);
        y3 = fold256(y3, k, p + 224);
        p += 256;
        n -= 256;
    }
    /* Merge the sixteen lanes in message order, one lane-fold each. */
    const __m128i k16 = _mm_set_epi64x(K_FOLD16_B, K_FOLD16_A);
    __m256i regs[8] = {x0, x1, x2, x3, y0, y1, y2, y3};
    __m128i acc = _mm256_castsi256_si128(regs[0]);
    acc = fold16(acc, k16, _mm256_extracti128_si256(regs[0], 1));
    for (int r = 1; r < 8; r++) {
        acc = fold16(acc, k16, _mm256_castsi256_si128(regs[r]));
        acc = fold16(acc, k16, _mm256_extracti128_si256(regs[r], 1));
    }
    while (n >= 16) {
        q = p;
        acc = fold16(acc, k16, _mm_loadu_si128(q));
        p += 16;
        n -= 16;
    }
    uint64_t a = (uint64_t)_mm_cvtsi128_si64(acc);
    uint64_t b = (uint64_t)_mm_extract_epi64(acc, 1);
    crc = (uint32_t)__builtin_ia32_crc32di(0, a);
    crc = (uint32_t)__builtin_ia32_crc32di(crc, b);
    return hw_single(crc, p, n);
}

/* Capabilities, probed once (racing first calls compute the same value): CAP_CRC = SSE4.2 crc32,
 * CAP_CLMUL = VPCLMULQDQ + AVX2 usable (the OS saves the ymm state); CAPS_KNOWN: probe done. */
#define CAP_CRC 1
#define CAP_CLMUL 2
#define CAPS_KNOWN 4
static atomic_int hw_caps;

static int caps(void)
{
    int s = atomic_load_explicit(&hw_caps, memory_order_relaxed);
    if (s & CAPS_KNOWN) return s;
    unsigned a, b, c, d;
    s = CAPS_KNOWN;
    if (__get_cpuid(1, &a, &b, &c, &d)) {
        bool sse42 = c & (1u << 20), pclmul = c & (1u << 1);
        bool osxsave = c & (1u << 27), avx = c & (1u << 28);
        if (sse42) s |= CAP_CRC;
        if (sse42 && pclmul && osxsave && avx) {
            unsigned lo, hi;
            __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
            bool ymm_state = (lo & 6u) == 6u;
            if (ymm_state && __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & (1u << 5)) &&
                (c & (1u << 10))) {
                s |= CAP_CLMUL;
            }
        }
    }
    atomic_store_explicit(&hw_caps, s, memory_order_relaxed);
    return s;
}

uint32_t ingot_crc32c(uint32_t crc, const void *buf, size_t n)
{
    int s = caps();
    if (s & CAP_CLMUL) return ~clmul_update(~crc, (const uint8_t *)buf, n);
    if (s & CAP_CRC) return ~hw_update(~crc, (const uint8_t *)buf, n);
    return ~sw_update(~crc, (const uint8_t *)buf, n);
}

bool ingot__crc32c_hw(void) { return caps() & CAP_CRC; }
bool ingot__crc32c_clmul(void) { return caps() & CAP_CLMUL; }

uint32_t ingot__crc32c_sse42(uint32_t crc, const void *buf, size_t n)
{
    if (!(caps() & CAP_CRC)) return ingot__crc32c_sw(crc, buf, n);
    return ~hw_update(~crc, (const uint8_t *)buf, n);
}

#else

uint32_t ingot_crc32c(uint32_t crc, const void *buf, size_t n)
{
    return ~sw_update(~crc, (const uint8_t *)buf, n);
}

bool ingot__crc32c_hw(void) { return false; }
bool ingot__crc32c_clmul(void) { return false; }

uint32_t ingot__crc32c_sse42(uint32_t crc, const void *buf, size_t n)
{
    return ingot__crc32c_sw(crc, buf, n);
}

#endif
