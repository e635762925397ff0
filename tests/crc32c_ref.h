/* crc32c_ref.h - references for the CRC-32C tests, independent of src/core/crc32c.c and its
 * tables: a bit-at-a-time CRC, and the shift of a raw register over n zero bytes computed with
 * 32x32 matrices over GF(2) (the operator of one zero bit, squared again and again), which uses
 * no arithmetic modulo the polynomial and no x^(2^k) table. */
#ifndef INGOT_TEST_CRC32C_REF_H
#define INGOT_TEST_CRC32C_REF_H

#include <stddef.h>
#include <stdint.h>

#define REF_POLY 0x82F63B78u

/* Bit-at-a-time CRC-32C (pre- and post-inverted), continuing from crc. */
static inline uint32_t crc_bitwise(uint32_t crc, const uint8_t *p, size_t n)
{
    crc = ~crc;
    while (n--) {
        crc ^= *p++;
        for (int k = 0; k < 8; k++) crc = (crc & 1) ? (crc >> 1) ^ REF_POLY : crc >> 1;
    }
    return ~crc;
}

/* A linear map of 32-bit registers: col[i] is the image of bit i. */
typedef struct {
    uint32_t col[32];
} gf2_mat;

static inline uint32_t gf2_apply(const gf2_mat *m, uint32_t v)
{
    uint32_t r = 0;
    for (int i = 0; v; i++, v >>= 1)
        if (v & 1) r ^= m->col[i];
    return r;
}

/* a after b */
static inline gf2_mat gf2_mul(const gf2_mat *a, const gf2_mat *b)
{
    gf2_mat r;
    for (int i = 0; i < 32; i++) r.col[i] = gf2_apply(a, b->col[i]);
    return r;
}

/* ref_zeros[k]: the map that appends 2^k zero bytes (2^(k+3) zero bits) to a raw register. */
static gf2_mat ref_zeros[64];
static int ref_zeros_ready;

static inline void ref_init(void)
{
    if (ref_zeros_ready) return;
    gf2_mat m; /* one zero bit: r -> (r >> 1) ^ (r & 1 ? POLY : 0) */
    m.col[0] = REF_POLY;
    for (int i = 1; i < 32; i++) m.col[i] = 1u << (i - 1);
    for (int s = 0; s < 3; s++) m = gf2_mul(&m, &m); /* 8 bits */
    ref_zeros[0] = m;
    for (int k = 1; k < 64; k++) ref_zeros[k] = gf2_mul(&ref_zeros[k - 1], &ref_zeros[k - 1]);
    ref_zeros_ready = 1;
}

/* The raw (non-inverted) register raw followed by n zero bytes. */
static inline uint32_t ref_shift(uint32_t raw, uint64_t n)
{
    ref_init();
    for (int k = 0; n; k++, n >>= 1)
        if (n & 1) raw = gf2_apply(&ref_zeros[k], raw);
    return raw;
}

/* crc(A||B) from crc(A), crc(B) and |B| (the inversions cancel). */
static inline uint32_t ref_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b)
{
    return ref_shift(crc_a, len_b) ^ crc_b;
}

/* crc of n zero bytes, continuing from crc. */
static inline uint32_t ref_zero_run(uint32_t crc, uint64_t n) { return ~ref_shift(~crc, n); }

#endif
