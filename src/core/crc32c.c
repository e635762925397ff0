/*
 * crc32c.c - CRC-32C (Castagnoli), the checksum of .ingot headers and tensors (docs/FORMAT.md §6).
 * Portable slice-by-8, and on x86-64 the SSE4.2 crc32 instruction over three interleaved streams
 * (the instruction has a latency of 3 and a throughput of 1, so three independent streams keep the
 * unit busy), joined with a shift in GF(2). Freestanding: no libc.
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

static atomic_int hw_state; /* 0 unknown, 1 yes, 2 no */

static bool have_hw(void)
{
    int s = atomic_load_explicit(&hw_state, memory_order_relaxed);
    if (s == 0) {
        unsigned a, b, c, d;
        s = (__get_cpuid(1, &a, &b, &c, &d) && (c & bit_SSE4_2)) ? 1 : 2;
        atomic_store_explicit(&hw_state, s, memory_order_relaxed);
    }
    return s == 1;
}

uint32_t ingot_crc32c(uint32_t crc, const void *buf, size_t n)
{
    if (have_hw()) return ~hw_update(~crc, (const uint8_t *)buf, n);
    return ~sw_update(~crc, (const uint8_t *)buf, n);
}

bool ingot__crc32c_hw(void) { return have_hw(); }

#else

uint32_t ingot_crc32c(uint32_t crc, const void *buf, size_t n)
{
    return ~sw_update(~crc, (const uint8_t *)buf, n);
}

bool ingot__crc32c_hw(void) { return false; }

#endif
