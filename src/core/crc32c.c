/*
 * crc32c.c - CRC-32C (Castagnoli), the checksum of .ingot headers and tensors (docs/FORMAT.md §6).
 * Implementations, chosen once from CPUID:
 *   - portable slice-by-8 (any CPU; ~1.5 GB/s);
 *   - x86-64 SSE4.2: the crc32 instruction (latency 3, throughput 1: ~8 bytes per cycle with three
 *     independent streams, a third of that with one); three streams joined with a shift in GF(2)
 *     for inputs of 64 KiB and more, or of 192 bytes and more where PCLMULQDQ makes the shift cheap;
 *   - x86-64 Intel with VPCLMULQDQ + AVX-512F usable, inputs of 512 bytes and more: folding on
 *     eight zmm registers (512 bytes per iteration; 54-75 GB/s in cache on the Xeon of
 *     docs/PERFORMANCE.md, against 38-43 for the ymm path below); smaller ones as below;
 *   - x86-64 with VPCLMULQDQ + AVX2 (Ice Lake, Zen 3 and later), inputs of 256 bytes and more:
 *     carry-less multiply folding of eight ymm registers (256 bytes per iteration), merged as a tree
 *     and reduced with two crc32 instructions at the end; from 1280 bytes on, the same folding loop
 *     with four crc32 streams beside it. On Zen 4 a ymm VPCLMULQDQ issues every 2 cycles (folding
 *     alone: ~8 bytes per cycle, 22.9 GB/s) and crc32 once per cycle on an integer unit, so the
 *     loop that feeds both does ~15 bytes per cycle: 44 GB/s at 64 KiB in cache (gcc 12; 39 with
 *     clang 14), against 22.9. From RAM, five read streams get less help from the hardware
 *     prefetcher than one (why an earlier fused loop was dropped, docs/PERFORMANCE.md); inputs of
 *     128 KiB and more prefetch in software, which brings them back to the single-stream speed
 *     (~20 GB/s here); smaller ones can be slower than one stream from RAM (hybrid_update).
 * All give bit-identical results (tests/test_crc32c.c compares each with the portable code, and
 * the shifts with a GF(2) matrix reference; tests/test_crc32c_large.c runs them over 2-8.6 GB).
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

/* a * b mod P, both in the reflected representation (x^0 is bit 31). Bit-serial: ~32 iterations. */
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

/* x^(8n) mod P: the operator that appends n zero bytes to a raw CRC register, one multiplication
 * per set bit k of n by crc32c_zeros[k] = x^(8 * 2^k) mod P. Every bit of a uint64 has its entry:
 * x has order 2^31 - 1 modulo P, so x^(2^j) repeats every 31 steps of j, and a 32-entry table
 * indexed modulo 32 (as this code once had) is wrong from 2^29 bytes on. */
static uint32_t x8nmodp(uint64_t n)
{
    uint32_t p = 1u << 31;
    for (unsigned k = 0; n; k++, n >>= 1)
        if (n & 1) p = mulmodp(crc32c_zeros[k], p);
    return p;
}

static uint32_t shift_sw(uint32_t raw, uint64_t nbytes) { return mulmodp(x8nmodp(nbytes), raw); }

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
#define PCLMUL_TARGET __attribute__((target("sse4.2,pclmul")))
#define CLMUL_TARGET __attribute__((target("sse4.2,pclmul,avx2,vpclmulqdq")))
#define Z512_TARGET __attribute__((target("sse4.2,pclmul,avx2,vpclmulqdq,avx512f")))

/* One qword into a register kept 64 bits wide (crc32q zero-extends its result, so no move is
 * needed between two of them). */
HW_TARGET static inline uint64_t hw_q(uint64_t c, const uint8_t *p)
{
    uint64_t v;
    __builtin_memcpy(&v, p, 8);
    return __builtin_ia32_crc32di(c, v);
}

HW_TARGET static uint32_t hw_single(uint32_t crc, const uint8_t *p, size_t n)
{
    while (n && ((uintptr_t)p & 7)) {
        crc = __builtin_ia32_crc32qi(crc, *p++);
        n--;
    }
    uint64_t c = crc;
    while (n >= 32) {
        c = hw_q(c, p);
        c = hw_q(c, p + 8);
        c = hw_q(c, p + 16);
        c = hw_q(c, p + 24);
        p += 32;
        n -= 32;
    }
    while (n >= 8) {
        c = hw_q(c, p);
        p += 8;
        n -= 8;
    }
    crc = (uint32_t)c;
    while (n--) crc = __builtin_ia32_crc32qi(crc, *p++);
    return crc;
}

/* Three crc32 streams over three consecutive parts of `part` bytes (a multiple of 8): r[0] goes on
 * from its value, r[1] and r[2] should start at 0. */
HW_TARGET static inline void hw_three(uint64_t r[3], const uint8_t *p, size_t part)
{
    const uint8_t *b = p + part, *c = p + 2 * part;
    uint64_t ca = r[0], cb = r[1], cc = r[2];
    for (size_t i = 0; i < part; i += 8) {
        ca = hw_q(ca, p + i);
        cb = hw_q(cb, b + i);
        cc = hw_q(cc, c + i);
    }
    r[0] = ca;
    r[1] = cb;
    r[2] = cc;
}

/* Below this size one stream wins when the shifts are bit-serial (about 2k cycles for two). */
#define THREE_WAY_MIN (64u * 1024u)

HW_TARGET static uint32_t hw_update(uint32_t crc, const uint8_t *p, size_t n)
{
    if (n < THREE_WAY_MIN) return hw_single(crc, p, n);
    size_t part = (n / 3) & ~(size_t)7;
    uint64_t r[3] = {crc, 0, 0};
    hw_three(r, p, part);
    crc = shift_sw((uint32_t)r[0], part) ^ (uint32_t)r[1];
    crc = shift_sw(crc, part) ^ (uint32_t)r[2];
    return hw_single(crc, p + 3 * part, n - 3 * part);
}

/* ---- Multiplication mod P with PCLMULQDQ ------------------------------------------------------
 * a*b mod P for reflected a and b. The 64-bit carry-less product stands for a*b*x (reflected
 * operands: one degree short); shifted left one bit it is a*b exactly as a reflected 64-bit value,
 * that is its low half L times x^32 plus its high half H, and crc32l(0, L) = L*x^32 mod P. About
 * 15 cycles of latency, against ~100 for mulmodp. */
PCLMUL_TARGET static inline uint32_t mulmodp_clmul(uint32_t a, uint32_t b)
{
    __m128i prod = _mm_clmulepi64_si128(_mm_cvtsi32_si128((int)a), _mm_cvtsi32_si128((int)b), 0);
    uint64_t c = (uint64_t)_mm_cvtsi128_si64(prod) << 1;
    return __builtin_ia32_crc32si(0, (uint32_t)c) ^ (uint32_t)(c >> 32);
}

/* x^(8n) mod P with one multiplication per set bit of n (as x8nmodp). The loop's branches depend
 * on n only, so they resolve early and the dependent multiplications can overlap other work. */
PCLMUL_TARGET static uint32_t x8nmodp_clmul(uint64_t n)
{
    uint32_t p = 1u << 31;
    while (n) {
        unsigned k = (unsigned)__builtin_ctzll(n);
        p = mulmodp_clmul(crc32c_zeros[k], p);
        n &= n - 1;
    }
    return p;
}

/* Three streams are worth it from 96-160 bytes on (gcc, clang) when the shift is cheap (Zen 4: one
 * stream does ~2.7 bytes per cycle, three up to 8; the join is a chain of four to six dependent
 * multiplications, ~15 cycles each, that overlaps the streams only in part at these sizes). */
#define PC_THREE_WAY_MIN 192u

/* The crc32 path on CPUs with PCLMULQDQ but no VPCLMULQDQ (Westmere to Skylake, Zen 1 and 2). */
PCLMUL_TARGET static uint32_t pc_update(uint32_t crc, const uint8_t *p, size_t n)
{
    if (n < PC_THREE_WAY_MIN) return hw_single(crc, p, n);
    size_t part = (n / 3) & ~(size_t)7;
    uint32_t k1 = x8nmodp_clmul(part);
    uint32_t k2 = mulmodp_clmul(k1, k1);
    uint64_t r[3] = {crc, 0, 0};
    hw_three(r, p, part);
    crc = mulmodp_clmul((uint32_t)r[0], k2) ^ mulmodp_clmul((uint32_t)r[1], k1) ^ (uint32_t)r[2];
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
 * lane that lies F bits further on is simply XORed in. At the end, X*x^32 mod P is two crc32
 * instructions: crc32q(crc32q(0, A), B) = (B + A*x^64)*x^32 mod P. */

/* Fold constants x^(F+31) mod P and x^(F-33) mod P (reflected, as mulmodp represents them) for
 * F = 8 * the distance in bytes: 256 (the main loop: eight ymm registers of two lanes each), then
 * 128, 64, 32 and 16 for the tree that merges the registers. That is x^n mod P for n = 2079, 2015,
 * 1055, 991, 543, 479, 287, 223, 159 and 95 (x^n: start from bit 31 set, n times shift right and
 * XOR POLY when bit 0 was set). A wrong one breaks every length that reaches it, and
 * tests/test_crc32c.c checks every length around each path against the portable code. */
#define K_FOLD256_A 0xdcb17aa4u
#define K_FOLD256_B 0xb9e02b86u
#define K_FOLD128_A 0x6992cea2u
#define K_FOLD128_B 0x0d3b6092u
#define K_FOLD64_A 0x740eef02u
#define K_FOLD64_B 0x9e4addf8u
#define K_FOLD32_A 0x3da6d0cbu
#define K_FOLD32_B 0xba4fc28eu
#define K_FOLD16_A 0xf20c0dfeu
#define K_FOLD16_B 0x493c7d27u

#define KY(a, b) _mm256_set_epi64x((long long)(b), (long long)(a), (long long)(b), (long long)(a))

/* x folded forward over the distance its constant k encodes, plus the register found there. */
CLMUL_TARGET static inline __m256i fold_y(__m256i x, __m256i k, __m256i next)
{
    __m256i lo = _mm256_clmulepi64_epi128(x, k, 0x00);
    __m256i hi = _mm256_clmulepi64_epi128(x, k, 0x11);
    return _mm256_xor_si256(_mm256_xor_si256(lo, hi), next);
}

CLMUL_TARGET static inline __m256i ldy(const uint8_t *p)
{
    const void *q = p;
    return _mm256_loadu_si256(q);
}

CLMUL_TARGET static inline __m128i fold16(__m128i x, __m128i k, __m128i next)
{
    __m128i lo = _mm_clmulepi64_si128(x, k, 0x00);
    __m128i hi = _mm_clmulepi64_si128(x, k, 0x11);
    return _mm_xor_si128(_mm_xor_si128(lo, hi), next);
}

/* The raw CRC register of 256 message bytes held in x[0..7] (in message order), followed by n < 256
 * more bytes at p. The n / 32 whole registers of the tail are each folded onto the oldest one
 * (256 bytes ahead; independent of each other), then the eight are merged as a tree (128, 64, 32
 * and 16 bytes: four dependent steps instead of fifteen), one more 16-byte lane, and the last
 * n % 16 bytes with crc32. */
CLMUL_TARGET static uint32_t fold_finish(__m256i x[8], const uint8_t *p, size_t n)
{
    const __m256i k256 = KY(K_FOLD256_A, K_FOLD256_B);
    unsigned q = (unsigned)(n / 32);
    for (unsigned j = 0; j < q; j++) x[j] = fold_y(x[j], k256, ldy(p + 32 * j));
    p += 32 * q;
    n -= 32 * (size_t)q;
    /* In message order the registers are now x[q], ..., x[7], x[0], ..., x[q - 1]. */
    const __m256i k128 = KY(K_FOLD128_A, K_FOLD128_B);
    __m256i y0 = fold_y(x[q & 7], k128, x[(q + 4) & 7]);
    __m256i y1 = fold_y(x[(q + 1) & 7], k128, x[(q + 5) & 7]);
    __m256i y2 = fold_y(x[(q + 2) & 7], k128, x[(q + 6) & 7]);
    __m256i y3 = fold_y(x[(q + 3) & 7], k128, x[(q + 7) & 7]);
    const __m256i k64 = KY(K_FOLD64_A, K_FOLD64_B);
    y0 = fold_y(y0, k64, y2);
    y1 = fold_y(y1, k64, y3);
    y0 = fold_y(y0, KY(K_FOLD32_A, K_FOLD32_B), y1);
    const __m128i k16 = _mm_set_epi64x(K_FOLD16_B, K_FOLD16_A);
    __m128i acc = fold16(_mm256_castsi256_si128(y0), k16, _mm256_extracti128_si256(y0, 1));
    if (n >= 16) {
        const void *v = p;
        acc = fold16(acc, k16, _mm_loadu_si128(v));
        p += 16;
        n -= 16;
    }
    uint64_t c = __builtin_ia32_crc32di(0, (uint64_t)_mm_cvtsi128_si64(acc));
    c = __builtin_ia32_crc32di(c, (uint64_t)_mm_extract_epi64(acc, 1));
    return hw_single((uint32_t)c, p, n);
}

/* The first 256 bytes into x0..x7, with the incoming CRC register XORed into the first lane. */
#define LOAD_ALL(p, crc)                                                                           \
    __m256i x0 = _mm256_xor_si256(ldy(p), _mm256_set_epi64x(0, 0, 0, (long long)(crc)));          \
    __m256i x1 = ldy(p + 32), x2 = ldy(p + 64), x3 = ldy(p + 96), x4 = ldy(p + 128);               \
    __m256i x5 = ldy(p + 160), x6 = ldy(p + 192), x7 = ldy(p + 224)

#define FOLD_ALL(k, p)                                                                             \
    do {                                                                                           \
        x0 = fold_y(x0, k, ldy(p));                                                                \
        x1 = fold_y(x1, k, ldy(p + 32));                                                           \
        x2 = fold_y(x2, k, ldy(p + 64));                                                           \
        x3 = fold_y(x3, k, ldy(p + 96));                                                           \
        x4 = fold_y(x4, k, ldy(p + 128));                                                          \
        x5 = fold_y(x5, k, ldy(p + 160));                                                          \
        x6 = fold_y(x6, k, ldy(p + 192));                                                          \
        x7 = fold_y(x7, k, ldy(p + 224));                                                          \
    } while (0)

/* Folding alone, one sequential stream; inputs of INGOT__CRC32C_FOLD_MIN bytes and more. */
CLMUL_TARGET static uint32_t fold_update(uint32_t crc, const uint8_t *p, size_t n)
{
    if (n < INGOT__CRC32C_FOLD_MIN) return pc_update(crc, p, n);
    const __m256i k = KY(K_FOLD256_A, K_FOLD256_B);
    LOAD_ALL(p, crc);
    p += 256;
    n -= 256;
    while (n >= 256) {
        FOLD_ALL(k, p);
        p += 256;
        n -= 256;
    }
    __m256i x[8] = {x0, x1, x2, x3, x4, x5, x6, x7};
    return fold_finish(x, p, n);
}

/* ---- Folding and crc32 side by side ------------------------------------------------------------
 * The folding loop keeps the carry-less multiplier busy and leaves the crc32 unit idle, so this
 * loop feeds both. The input is cut into A (the first n - 4s bytes) and B (the last 4s bytes:
 * four streams of s bytes, one after the other). Each iteration folds 256 bytes of A (16
 * VPCLMULQDQ: 32 cycles on Zen 4) and advances each stream by 8 qwords (32 crc32: 32 cycles), so
 * the two units finish together; INGOT__CRC32C_HYBRID_UNIT = 512 bytes per iteration. s is a whole
 * number of iterations and A takes what is left (less than one iteration's worth more than the
 * loop covers), finished as fold_update does. The streams start from a zero register, so with
 * K = x^(8s) mod P the raw CRC of the whole is
 *     (((crcA*K ^ c1)*K ^ c2)*K ^ c3)*K ^ c4  =  crcA*K^4 ^ c1*K^3 ^ c2*K^2 ^ c3*K ^ c4,
 * the powers of K computed before the loop so that they overlap it, the four products independent.
 * Instruction order matters: compilers group the 16 VPCLMULQDQ and the 32 crc32 of an iteration,
 * and in-order dispatch then stalls on whichever scheduler is full while the other unit runs dry
 * (37 against 44 GB/s at 64 KiB here). An empty asm statement that claims to modify the registers
 * of one step keeps each ymm fold next to its four crc32s.
 * From RAM the five streams get less from the hardware prefetcher than one stream. Measured here
 * (Zen 4 VM, GB/s, single-stream folding first): one 64 KiB input at a random place 14 and 14;
 * consecutive 64 KiB pieces of a long buffer 19-20 and 13-15 (one stream just carries on from one
 * call to the next). From INGOT__CRC32C_HYBRID_PREFETCH_MIN bytes on the loop prefetches A 2 KiB
 * and each stream 256 bytes ahead, which costs 5% in cache and brings inputs of 128 KiB and more
 * back to the single-stream speed from RAM or above it (4 MiB: 20 and 20-22). Prefetches never
 * fault; their addresses are computed as integers, so pointers never leave the buffer. */

/* One ymm register folded 256 bytes on (data at p + 32j) and one qword on each stream. */
#define HY_STEP1(x, j)                                                                             \
    do {                                                                                           \
        x = fold_y(x, k, ldy(p + 32 * (j)));                                                       \
        c1 = hw_q(c1, q1 + 8 * (j));                                                               \
        c2 = hw_q(c2, q2 + 8 * (j));                                                               \
        c3 = hw_q(c3, q3 + 8 * (j));                                                               \
        c4 = hw_q(c4, q4 + 8 * (j));                                                               \
        __asm__("" : "+x"(x), "+r"(c1), "+r"(c2), "+r"(c3), "+r"(c4));                            \
    } while (0)

/* The empty asm at the end hides how the five pointers relate: without it clang addresses the
 * streams as one base plus an index register, and crc32 with such a memory operand makes this loop
 * ~20% slower on Zen 4 (base + displacement, as gcc does: full speed). */
#define HY_ITER()                                                                                  \
    do {                                                                                           \
        HY_STEP1(x0, 0);                                                                           \
        HY_STEP1(x1, 1);                                                                           \
        HY_STEP1(x2, 2);                                                                           \
        HY_STEP1(x3, 3);                                                                           \
        HY_STEP1(x4, 4);                                                                           \
        HY_STEP1(x5, 5);                                                                           \
        HY_STEP1(x6, 6);                                                                           \
        HY_STEP1(x7, 7);                                                                           \
        p += 256;                                                                                  \
        q1 += HY_STEP;                                                                             \
        q2 += HY_STEP;                                                                             \
        q3 += HY_STEP;                                                                             \
        q4 += HY_STEP;                                                                             \
        __asm__("" : "+r"(p), "+r"(q1), "+r"(q2), "+r"(q3), "+r"(q4));                             \
    } while (0)

#define HY_STEP (INGOT__CRC32C_HYBRID_UNIT / 8) /* bytes per stream and iteration: 64 */
#define HY_PF_A 2048u
#define HY_PF_B 256u
#define PREFETCH(base, off) _mm_prefetch((const char *)((uintptr_t)(base) + (off)), _MM_HINT_T0)

CLMUL_TARGET static uint32_t hybrid_update(uint32_t crc, const uint8_t *p, size_t n)
{
    size_t m = (n - 256) / INGOT__CRC32C_HYBRID_UNIT; /* iterations */
    size_t s = HY_STEP * m;
    const uint8_t *b = p + (n - 4 * s);
    const uint8_t *q1 = b, *q2 = b + s, *q3 = b + 2 * s, *q4 = b + 3 * s;
    uint32_t k1 = x8nmodp_clmul(s);
    uint32_t k2 = mulmodp_clmul(k1, k1);
    uint32_t k3 = mulmodp_clmul(k2, k1);
    uint32_t k4 = mulmodp_clmul(k2, k2);
    const __m256i k = KY(K_FOLD256_A, K_FOLD256_B);
    LOAD_ALL(p, crc);
    p += 256;
    uint64_t c1 = 0, c2 = 0, c3 = 0, c4 = 0;
    if (n < INGOT__CRC32C_HYBRID_PREFETCH_MIN) {
        for (size_t i = 0; i < m; i++) HY_ITER();
    } else {
        for (size_t i = 0; i < m; i++) {
            PREFETCH(p, HY_PF_A);
            PREFETCH(p, HY_PF_A + 64);
            PREFETCH(p, HY_PF_A + 128);
            PREFETCH(p, HY_PF_A + 192);
            PREFETCH(q1, HY_PF_B);
            PREFETCH(q2, HY_PF_B);
            PREFETCH(q3, HY_PF_B);
            PREFETCH(q4, HY_PF_B);
            HY_ITER();
        }
    }
    size_t rest = (size_t)(b - p);
    while (rest >= 256) {
        FOLD_ALL(k, p);
        p += 256;
        rest -= 256;
    }
    __m256i x[8] = {x0, x1, x2, x3, x4, x5, x6, x7};
    uint32_t ca = fold_finish(x, p, rest);
    return mulmodp_clmul(ca, k4) ^ mulmodp_clmul((uint32_t)c1, k3) ^
           mulmodp_clmul((uint32_t)c2, k2) ^ mulmodp_clmul((uint32_t)c3, k1) ^ (uint32_t)c4;
}

CLMUL_TARGET static uint32_t clmul_update(uint32_t crc, const uint8_t *p, size_t n)
{
    if (n >= INGOT__CRC32C_HYBRID_MIN) return hybrid_update(crc, p, n);
    return fold_update(crc, p, n);
}

/* ---- Folding on zmm registers (AVX-512F + VPCLMULQDQ) --------------------------------------
 * The folding of fold_update on 512-bit registers: eight zmm accumulators (32 lanes, 512 bytes
 * per iteration), each folded 512 bytes on per iteration. On the Xeon of docs/PERFORMANCE.md a
 * zmm VPCLMULQDQ issues about once a cycle like a ymm one, so an iteration moves twice the bytes
 * of the ymm loop for the same instructions; eight accumulators cover the multiply's latency (a
 * fold is a multiply and a three-way XOR, one vpternlogq). At the end the eight are folded 256
 * bytes onto the next four, one more 256-byte step takes what is left in whole steps, and the four
 * zmm registers become the eight ymm ones that fold_finish reduces. In cache there: 54-75 GB/s
 * from 1 KiB to 1 MiB against 38-43 for the ymm loop with crc32 streams. That joint loop moved to
 * zmm (512 folded bytes and 16 crc32 per iteration) was slower than folding alone here (52 KB:
 * 62 against 67 GB/s; 1 MiB: 48 against 58), so this path folds only; on Intel the crc32 unit
 * shares port 1 with the 512-bit vector work. */
#define K_FOLD512_A 0xbd6f81f8u /* x^4127 mod P */
#define K_FOLD512_B 0xdd7e3b0cu /* x^4063 mod P */

#define KZ(a, b) _mm512_broadcast_i32x4(_mm_set_epi64x((long long)(b), (long long)(a)))

/* x folded forward over the distance its constant k encodes, XORed with next (one vpternlogq). */
Z512_TARGET static inline __m512i fold_z(__m512i x, __m512i k, __m512i next)
{
    __m512i lo = _mm512_clmulepi64_epi128(x, k, 0x00);
    __m512i hi = _mm512_clmulepi64_epi128(x, k, 0x11);
    return _mm512_ternarylogic_epi64(lo, hi, next, 0x96);
}

Z512_TARGET static inline __m512i ldz(const uint8_t *p)
{
    const void *q = p;
    return _mm512_loadu_si512(q);
}

#define ZFOLD8(k, p)                                                                               \
    do {                                                                                           \
        z0 = fold_z(z0, k, ldz(p));                                                                \
        z1 = fold_z(z1, k, ldz(p + 64));                                                           \
        z2 = fold_z(z2, k, ldz(p + 128));                                                          \
        z3 = fold_z(z3, k, ldz(p + 192));                                                          \
        z4 = fold_z(z4, k, ldz(p + 256));                                                          \
        z5 = fold_z(z5, k, ldz(p + 320));                                                          \
        z6 = fold_z(z6, k, ldz(p + 384));                                                          \
        z7 = fold_z(z7, k, ldz(p + 448));                                                          \
    } while (0)

/* The raw CRC of the 512 bytes in z0..z7 (message order) followed by n < 512 bytes at p. */
Z512_TARGET static uint32_t zfold_finish(__m512i z0, __m512i z1, __m512i z2, __m512i z3,
                                         __m512i z4, __m512i z5, __m512i z6, __m512i z7,
                                         const uint8_t *p, size_t n)
{
    const __m512i k256 = KZ(K_FOLD256_A, K_FOLD256_B);
    z0 = fold_z(z0, k256, z4);
    z1 = fold_z(z1, k256, z5);
    z2 = fold_z(z2, k256, z6);
    z3 = fold_z(z3, k256, z7);
    if (n >= 256) {
        z0 = fold_z(z0, k256, ldz(p));
        z1 = fold_z(z1, k256, ldz(p + 64));
        z2 = fold_z(z2, k256, ldz(p + 128));
        z3 = fold_z(z3, k256, ldz(p + 192));
        p += 256;
        n -= 256;
    }
    __m256i x[8] = {_mm512_castsi512_si256(z0), _mm512_extracti64x4_epi64(z0, 1),
                    _mm512_castsi512_si256(z1), _mm512_extracti64x4_epi64(z1, 1),
                    _mm512_castsi512_si256(z2), _mm512_extracti64x4_epi64(z2, 1),
                    _mm512_castsi512_si256(z3), _mm512_extracti64x4_epi64(z3, 1)};
    return fold_finish(x, p, n);
}

/* Inputs of INGOT__CRC32C_ZFOLD_MIN bytes and more (at least 512); smaller ones as clmul_update. */
Z512_TARGET static uint32_t zfold_update(uint32_t crc, const uint8_t *p, size_t n)
{
    if (n < INGOT__CRC32C_ZFOLD_MIN) return clmul_update(crc, p, n);
    const __m512i k512 = KZ(K_FOLD512_A, K_FOLD512_B);
    __m512i z0 = _mm512_xor_si512(ldz(p), _mm512_set_epi64(0, 0, 0, 0, 0, 0, 0, (long long)crc));
    __m512i z1 = ldz(p + 64), z2 = ldz(p + 128), z3 = ldz(p + 192), z4 = ldz(p + 256);
    __m512i z5 = ldz(p + 320), z6 = ldz(p + 384), z7 = ldz(p + 448);
    p += 512;
    n -= 512;
    while (n >= 512) {
        ZFOLD8(k512, p);
        p += 512;
        n -= 512;
    }
    return zfold_finish(z0, z1, z2, z3, z4, z5, z6, z7, p, n);
}

/* Capabilities, probed once (racing first calls compute the same value): CAP_CRC = SSE4.2 crc32,
 * CAP_PCLMUL = that and PCLMULQDQ, CAP_CLMUL = those and VPCLMULQDQ + AVX2 usable (the OS saves
 * the ymm state); CAPS_KNOWN: probe done. ingot__crc32c_limit may mask some off. */
#define CAP_CRC 1
#define CAP_CLMUL 2
#define CAPS_KNOWN 4
#define CAP_PCLMUL 8
#define CAP_AVX2 16 /* AVX2 usable; ingot__crc32c_limit below 3 masks it too */
#define CAP_Z512 32 /* CAP_CLMUL and AVX-512F usable (the OS saves the zmm state), on Intel */
static atomic_int hw_caps;

/* Level 4 is taken on Intel CPUs only: it was measured faster on the Xeon of docs/PERFORMANCE.md,
 * while AMD Zen 4 runs a zmm VPCLMULQDQ as two 256-bit halves, where folding alone cannot beat the
 * ymm loop with crc32 streams (44 GB/s there against 23 for ymm folding alone); no AMD machine
 * was available to measure it. */
static bool intel(void)
{
    unsigned a, b, c, d;
    return __get_cpuid(0, &a, &b, &c, &d) && b == 0x756e6547u && d == 0x49656e69u &&
           c == 0x6c65746eu; /* "GenuineIntel" */
}

static int probe_caps(void)
{
    unsigned a, b, c, d;
    int s = CAPS_KNOWN;
    if (__get_cpuid(1, &a, &b, &c, &d)) {
        bool sse42 = c & (1u << 20), pclmul = c & (1u << 1);
        bool osxsave = c & (1u << 27), avx = c & (1u << 28);
        if (sse42) s |= CAP_CRC;
        if (sse42 && pclmul) s |= CAP_PCLMUL;
        if (sse42 && pclmul && osxsave && avx) {
            unsigned lo, hi;
            __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
            bool ymm_state = (lo & 6u) == 6u;
            if (ymm_state && __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & (1u << 5))) {
                s |= CAP_AVX2;
                if (c & (1u << 10)) s |= CAP_CLMUL;
                if ((c & (1u << 10)) && (b & (1u << 16)) && (lo & 0xE6u) == 0xE6u && intel())
                    s |= CAP_Z512;
            }
        }
    }
    return s;
}

static int caps(void)
{
    int s = atomic_load_explicit(&hw_caps, memory_order_relaxed);
    if (s & CAPS_KNOWN) return s;
    s = probe_caps();
    atomic_store_explicit(&hw_caps, s, memory_order_relaxed);
    return s;
}

static int caps_level(int s)
{
    return (s & CAP_Z512) ? 4 : (s & CAP_CLMUL) ? 3 : (s & CAP_PCLMUL) ? 2 : (s & CAP_CRC) ? 1 : 0;
}

int ingot__crc32c_limit(int level)
{
    int s = probe_caps();
    if (level < 4) s &= ~CAP_Z512;
    if (level < 3) s &= ~(CAP_CLMUL | CAP_AVX2);
    if (level < 2) s &= ~CAP_PCLMUL;
    if (level < 1) s &= ~CAP_CRC;
    atomic_store_explicit(&hw_caps, s, memory_order_relaxed);
    return caps_level(s);
}

uint32_t ingot_crc32c(uint32_t crc, const void *buf, size_t n)
{
    int s = caps();
    if (s & CAP_Z512) return ~zfold_update(~crc, (const uint8_t *)buf, n);
    if (s & CAP_CLMUL) return ~clmul_update(~crc, (const uint8_t *)buf, n);
    if (s & CAP_PCLMUL) return ~pc_update(~crc, (const uint8_t *)buf, n);
    if (s & CAP_CRC) return ~hw_update(~crc, (const uint8_t *)buf, n);
    return ~sw_update(~crc, (const uint8_t *)buf, n);
}

uint32_t ingot__crc32c_shift(uint32_t raw, uint64_t nbytes)
{
    if (caps() & CAP_PCLMUL) return mulmodp_clmul(x8nmodp_clmul(nbytes), raw);
    return shift_sw(raw, nbytes);
}

bool ingot__crc32c_hw(void) { return caps() & CAP_CRC; }
bool ingot__crc32c_clmul(void) { return caps() & CAP_CLMUL; }
bool ingot__cpu_avx2(void) { return caps() & CAP_AVX2; }

uint32_t ingot__crc32c_sse42(uint32_t crc, const void *buf, size_t n)
{
    int s = caps();
    if (s & CAP_PCLMUL) return ~pc_update(~crc, (const uint8_t *)buf, n);
    if (s & CAP_CRC) return ~hw_update(~crc, (const uint8_t *)buf, n);
    return ingot__crc32c_sw(crc, buf, n);
}

uint32_t ingot__crc32c_fold(uint32_t crc, const void *buf, size_t n)
{
    if (caps() & CAP_CLMUL) return ~fold_update(~crc, (const uint8_t *)buf, n);
    return ingot__crc32c_sse42(crc, buf, n);
}

uint32_t ingot__crc32c_stream(uint32_t crc, const void *buf, size_t n)
{
    /* Below the prefetching size the joint loop's five streams read memory more slowly than one
     * folding stream (consecutive 64 KiB tensors from RAM: 15.7 against 19.1 GB/s). */
    int s = caps();
    if ((s & CAP_CLMUL) && !(s & CAP_Z512) && n < INGOT__CRC32C_HYBRID_PREFETCH_MIN)
        return ~fold_update(~crc, (const uint8_t *)buf, n);
    return ingot_crc32c(crc, buf, n);
}

#else

uint32_t ingot_crc32c(uint32_t crc, const void *buf, size_t n)
{
    return ~sw_update(~crc, (const uint8_t *)buf, n);
}

uint32_t ingot__crc32c_shift(uint32_t raw, uint64_t nbytes) { return shift_sw(raw, nbytes); }

bool ingot__crc32c_hw(void) { return false; }
bool ingot__crc32c_clmul(void) { return false; }
bool ingot__cpu_avx2(void) { return false; }

int ingot__crc32c_limit(int level)
{
    (void)level;
    return 0;
}

uint32_t ingot__crc32c_sse42(uint32_t crc, const void *buf, size_t n)
{
    return ingot__crc32c_sw(crc, buf, n);
}

uint32_t ingot__crc32c_fold(uint32_t crc, const void *buf, size_t n)
{
    return ingot__crc32c_sw(crc, buf, n);
}

uint32_t ingot__crc32c_stream(uint32_t crc, const void *buf, size_t n)
{
    return ingot__crc32c_sw(crc, buf, n);
}

#endif
