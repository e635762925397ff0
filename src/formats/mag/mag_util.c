/*
 * mag_util.c - magnetron's key hash (MurmurHash3_x86_128, low 64 bits), the emulation of its
 * open-addressing table that fixes the record order of storage archives (spec §1.8), the dtype
 * code tables of the three eras (spec §1.4, §7.3) and a small index sort.
 */
#include <string.h>

#include "alloc.h"
#include "error.h"
#include "mag_internal.h"

/* ---- dtype codes ---- */

static const ingot_dtype era_a1[] = {INGOT_DTYPE_F32, INGOT_DTYPE_F16, INGOT_DTYPE_BOOL,
                                     INGOT_DTYPE_I32};
static const ingot_dtype era_a2[] = {INGOT_DTYPE_F32, INGOT_DTYPE_F16, INGOT_DTYPE_BOOL,
                                     INGOT_DTYPE_U8,  INGOT_DTYPE_I8,  INGOT_DTYPE_U16,
                                     INGOT_DTYPE_I16, INGOT_DTYPE_U32, INGOT_DTYPE_I32,
                                     INGOT_DTYPE_U64, INGOT_DTYPE_I64};
static const ingot_dtype era_b[] = {INGOT_DTYPE_F32, INGOT_DTYPE_F16, INGOT_DTYPE_BF16,
                                    INGOT_DTYPE_BOOL, INGOT_DTYPE_U8,  INGOT_DTYPE_I8,
                                    INGOT_DTYPE_U16, INGOT_DTYPE_I16, INGOT_DTYPE_U32,
                                    INGOT_DTYPE_I32, INGOT_DTYPE_U64, INGOT_DTYPE_I64};

static const ingot_dtype *era_table(int era, uint32_t *n)
{
    switch (era) {
    case MAG_ERA_A1: *n = sizeof era_a1 / sizeof *era_a1; return era_a1;
    case MAG_ERA_A2: *n = sizeof era_a2 / sizeof *era_a2; return era_a2;
    default: *n = sizeof era_b / sizeof *era_b; return era_b;
    }
}

uint32_t ingot__mag_code_count(int era)
{
    uint32_t n;
    era_table(era, &n);
    return n;
}

ingot_dtype ingot__mag_dtype(int era, uint32_t code)
{
    uint32_t n;
    const ingot_dtype *t = era_table(era, &n);
    return code < n ? t[code] : INGOT_DTYPE_INVALID;
}

int ingot__mag_code(int era, ingot_dtype dt)
{
    uint32_t n;
    const ingot_dtype *t = era_table(era, &n);
    for (uint32_t i = 0; i < n; i++)
        if (t[i] == dt) return (int)i;
    return -1;
}

/* ---- MurmurHash3_x86_128, seed 0 (public-domain algorithm by Austin Appleby) ---- */

static uint32_t rotl32(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

static uint32_t fmix32(uint32_t h)
{
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    return h;
}

uint64_t ingot__mag_hash(const void *key, size_t len)
{
    const uint8_t *p = key;
    const uint32_t c1 = 0x239b961bu, c2 = 0xab0e9789u, c3 = 0x38b34ae5u, c4 = 0xa1e38b93u;
    uint32_t h1 = 0, h2 = 0, h3 = 0, h4 = 0;
    size_t nblocks = len / 16;
    for (size_t i = 0; i < nblocks; i++, p += 16) {
        uint32_t k1 = ing_ld32(p), k2 = ing_ld32(p + 4), k3 = ing_ld32(p + 8),
                 k4 = ing_ld32(p + 12);
        k1 *= c1, k1 = rotl32(k1, 15), k1 *= c2, h1 ^= k1;
        h1 = rotl32(h1, 19), h1 += h2, h1 = h1 * 5 + 0x561ccd1bu;
        k2 *= c2, k2 = rotl32(k2, 16), k2 *= c3, h2 ^= k2;
        h2 = rotl32(h2, 17), h2 += h3, h2 = h2 * 5 + 0x0bcaa747u;
        k3 *= c3, k3 = rotl32(k3, 17), k3 *= c4, h3 ^= k3;
        h3 = rotl32(h3, 15), h3 += h4, h3 = h3 * 5 + 0x96cd1c35u;
        k4 *= c4, k4 = rotl32(k4, 18), k4 *= c1, h4 ^= k4;
        h4 = rotl32(h4, 13), h4 += h1, h4 = h4 * 5 + 0x32ac3b17u;
    }
    uint32_t k[4] = {0, 0, 0, 0};
    size_t tail = len & 15;
    for (size_t i = 0; i < tail; i++) k[i / 4] ^= (uint32_t)p[i] << (8 * (i % 4));
    if (tail > 12) k[3] *= c4, k[3] = rotl32(k[3], 18), k[3] *= c1, h4 ^= k[3];
    if (tail > 8) k[2] *= c3, k[2] = rotl32(k[2], 17), k[2] *= c4, h3 ^= k[2];
    if (tail > 4) k[1] *= c2, k[1] = rotl32(k[1], 16), k[1] *= c3, h2 ^= k[1];
    if (tail > 0) k[0] *= c1, k[0] = rotl32(k[0], 15), k[0] *= c2, h1 ^= k[0];
    uint32_t l = (uint32_t)len;
    h1 ^= l, h2 ^= l, h3 ^= l, h4 ^= l;
    h1 += h2, h1 += h3, h1 += h4;
    h2 += h1, h3 += h1, h4 += h1;
    h1 = fmix32(h1), h2 = fmix32(h2), h3 = fmix32(h3), h4 = fmix32(h4);
    h1 += h2, h1 += h3, h1 += h4;
    h2 += h1; /* h3, h4 finish the upper 64 bits, which magnetron discards */
    return ((uint64_t)h2 << 32) | h1;
}

/* ---- the table emulation ---- */

static void place(uint32_t *slots, size_t cap, const uint64_t *hashes, uint32_t item)
{
    size_t i = (size_t)(hashes[item] & (cap - 1));
    while (slots[i] != UINT32_MAX) i = (i + 1) & (cap - 1);
    slots[i] = item;
}

ingot_status ingot__mag_slot_order(const ingot_allocator *a, const uint64_t *hashes, size_t n,
                                   uint32_t *order)
{
    size_t cap = 32;
    while ((n + 1) * 10 > cap * 7 && cap < SIZE_MAX / 4 / sizeof(uint32_t)) cap *= 2;
    /* Two buffers of the final size: growth re-inserts the old slots in slot order. */
    size_t bytes = cap * 2 * sizeof(uint32_t);
    uint32_t *buf = ingot__alloc(a, bytes);
    if (!buf) return INGOT_NOMEM;
    uint32_t *cur = buf, *next = buf + cap;
    size_t c = 32, count = 0;
    memset(cur, 0xff, c * sizeof *cur);
    for (size_t k = 0; k < n; k++) {
        if ((count + 1) * 10 > c * 7) {
            memset(next, 0xff, 2 * c * sizeof *next);
            for (size_t s = 0; s < c; s++)
                if (cur[s] != UINT32_MAX) place(next, 2 * c, hashes, cur[s]);
            uint32_t *t = cur;
            cur = next;
            next = t;
            c *= 2;
        }
        place(cur, c, hashes, (uint32_t)k);
        count++;
    }
    size_t o = 0;
    for (size_t s = 0; s < c; s++)
        if (cur[s] != UINT32_MAX) order[o++] = cur[s];
    ingot__free(a, buf, bytes);
    return INGOT_OK;
}

/* ---- sorting ---- */

