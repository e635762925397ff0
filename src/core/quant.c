/*
 * quant.c - decoding stored elements to F32 (GGML block types, F8/E8M0, F16/BF16/F64, integers)
 * and encoding F32 to F16/BF16 (include/ingot/quant.h). Block layouts: ../shared/formats/gguf.md
 * §5. The arithmetic follows gguf-py's `gguf.quants` operation by operation (each product or sum
 * rounded to F32 in the same order), which is what makes the results bit-exact with it. Hosted
 * core, not part of the freestanding reader; allocates nothing.
 */
#include "ingot/quant.h"

#include "deps.h"
#include "error.h"
#include "half.h"

/* The reference rounds each product before the sum: no fused multiply-add. (GCC does not
 * contract in ISO C mode and rejects this pragma; clang honours it.) */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif
/* The decoders are element-wise loops written to vectorize (no reductions, so vector code gives
 * the same bits); GCC below -O3 does not try unless asked. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize")
#endif

/* Little-endian loads and stores: plain (vectorizable) accesses on a little-endian host, the
 * portable byte-wise ones elsewhere. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
static inline uint16_t ld16(const uint8_t *p)
{
    uint16_t v;
    ING_MEMCPY(&v, p, 2);
    return v;
}
static inline uint32_t ld32(const uint8_t *p)
{
    uint32_t v;
    ING_MEMCPY(&v, p, 4);
    return v;
}
static inline void st16(uint8_t *p, uint16_t v) { ING_MEMCPY(p, &v, 2); }
#else
#define ld16 ing_ld16
#define ld32 ing_ld32
#define st16 ing_st16
#endif

static inline float f32_from_bits(uint32_t b)
{
    float f;
    ING_MEMCPY(&f, &b, 4);
    return f;
}

static inline uint32_t bits_from_f32(float f)
{
    uint32_t b;
    ING_MEMCPY(&b, &f, 4);
    return b;
}

static inline uint32_t mask_if(bool c) { return 0u - (uint32_t)c; } /* all ones if c */

/* IEEE binary16 -> binary32, exact, NaN bits kept (signalling ones too, as NumPy does). The
 * exponent is rebiased in the integer domain; a subnormal is renormalised by one exact float
 * subtraction: (1 + m/1024) * 2^-14 - 2^-14 = m * 2^-24. Branch-free (selects), so loops of it
 * vectorize. */
static inline float half_to_f32(uint16_t h)
{
    uint32_t o = (uint32_t)(h & 0x7FFF) << 13, exp = o & 0x0F800000u;
    /* bias 15 -> 127; Inf/NaN: exponent all ones */
    uint32_t norm = o + 0x38000000u + (mask_if(exp == 0x0F800000u) & 0x38000000u);
    uint32_t sub = bits_from_f32(f32_from_bits(o + 0x38800000u) - 0x1p-14f), z = mask_if(exp == 0);
    return f32_from_bits((norm & ~z) | (sub & z) | (uint32_t)(h & 0x8000) << 16);
}

static inline float ld_half(const uint8_t *p) { return half_to_f32(ld16(p)); }

/* binary32 -> binary16, round to nearest even. (Branchy: GCC does not vectorize a branch-free
 * form of it for SSE2 either, and this one runs fewer instructions.) */
static inline uint16_t f32_to_half(float f)
{
    uint32_t x = bits_from_f32(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    x &= 0x7FFFFFFFu;
    if (x >= 0x7F800000u) {
        if (x == 0x7F800000u) return (uint16_t)(sign | 0x7C00);
        uint16_t r = (uint16_t)(0x7C00 | ((x >> 13) & 0x3FF)); /* NaN: top payload bits */
        if (r == 0x7C00) r = 0x7C01;                            /* ... and still a NaN */
        return (uint16_t)(sign | r);
    }
    if (x >= 0x477FF000u) return (uint16_t)(sign | 0x7C00); /* >= 65520 rounds to infinity */
    if (x >= 0x38800000u) {                                 /* normal: >= 2^-14 */
        uint32_t h = (x - 0x38000000u) >> 13, rem = x & 0x1FFF;
        h += (uint32_t)(rem > 0x1000) | ((uint32_t)(rem == 0x1000) & h); /* no data branch */
        return (uint16_t)(sign | h);
    }
    if (x <= 0x33000000u) return sign; /* <= 2^-25: zero (2^-25 itself ties to even) */
    /* Subnormal result: the value in units of 2^-24 is mant * 2^(e - 126). */
    uint32_t e = x >> 23, mant = (x & 0x7FFFFF) | 0x800000, shift = 126 - e;
    uint32_t h = mant >> shift, rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
    h += (uint32_t)(rem > half) | ((uint32_t)(rem == half) & h);
    return (uint16_t)(sign | h);
}

/* binary32 -> bfloat16, round to nearest even; NaN quieted with sign and top payload kept. */
static inline uint16_t f32_to_bf16(float f)
{
    uint32_t x = bits_from_f32(f), m = mask_if((x & 0x7FFFFFFFu) > 0x7F800000u);
    uint32_t r = (x + 0x7FFFu + ((x >> 16) & 1)) >> 16;
    return (uint16_t)((((x >> 16) | 0x40) & m) | (r & ~m));
}

/* ---------------------------------------------------------------------------------------------
 * GGML blocks. Each decoder takes nb whole blocks at p and writes nb * block_elems floats.
 * ------------------------------------------------------------------------------------------- */

/* Q4_0: f16 d; u8 qs[16]. Element j: low nibble of qs[j], element j+16: high nibble; d*(q-8). */
static void dq_q4_0(const uint8_t *p, float *y, size_t nb)
{
    for (size_t b = 0; b < nb; b++, p += 18, y += 32) {
        const float d = ld_half(p);
        const uint8_t *qs = p + 2;
        for (int j = 0; j < 16; j++) {
            y[j] = d * (float)((qs[j] & 0x0F) - 8);
            y[j + 16] = d * (float)((qs[j] >> 4) - 8);
        }
    }
}

/* Q4_1: f16 d; f16 m; u8 qs[16]; d*q + m. */
static void dq_q4_1(const uint8_t *p, float *y, size_t nb)
{
    for (size_t b = 0; b < nb; b++, p += 20, y += 32) {
        const float d = ld_half(p), m = ld_half(p + 2);
        const uint8_t *qs = p + 4;
        for (int j = 0; j < 16; j++) {
            y[j] = d * (float)(qs[j] & 0x0F) + m;
            y[j + 16] = d * (float)(qs[j] >> 4) + m;
        }
    }
}

/* 1 << j, so that "bit j of a word" is an AND and a compare (vectorizable) instead of a shift by
 * a per-element amount. */
static const uint32_t bit_of[32] = {
    1u << 0,  1u << 1,  1u << 2,  1u << 3,  1u << 4,  1u << 5,  1u << 6,  1u << 7,
    1u << 8,  1u << 9,  1u << 10, 1u << 11, 1u << 12, 1u << 13, 1u << 14, 1u << 15,
    1u << 16, 1u << 17, 1u << 18, 1u << 19, 1u << 20, 1u << 21, 1u << 22, 1u << 23,
    1u << 24, 1u << 25, 1u << 26, 1u << 27, 1u << 28, 1u << 29, 1u << 30, 1u << 31};

/* Q5_0: f16 d; u32 qh (bit j = 5th bit of element j); u8 qs[16]; d*(q-16). */
static void dq_q5_0(const uint8_t *p, float *y, size_t nb)
{
    for (size_t b = 0; b < nb; b++, p += 22, y += 32) {
        const float d = ld_half(p);
        const uint32_t qh = ld32(p + 2);
        const uint8_t *qs = p + 6;
        for (int j = 0; j < 16; j++) {
            int lo = (qs[j] & 0x0F) | ((qh & bit_of[j]) ? 16 : 0);
            y[j] = d * (float)(lo - 16);
        }
        for (int j = 0; j < 16; j++) {
            int hi = (qs[j] >> 4) | ((qh & bit_of[j + 16]) ? 16 : 0);
            y[j + 16] = d * (float)(hi - 16);
        }
    }
}

/* Q5_1: f16 d; f16 m; u32 qh; u8 qs[16]; d*q + m. */
static void dq_q5_1(const uint8_t *p, float *y, size_t nb)
{
    for (size_t b = 0; b < nb; b++, p += 24, y += 32) {
        const float d = ld_half(p), m = ld_half(p + 2);
        const uint32_t qh = ld32(p + 4);
        const uint8_t *qs = p + 8;
        for (int j = 0; j < 16; j++) {
            int lo = (qs[j] & 0x0F) | ((qh & bit_of[j]) ? 16 : 0);
            y[j] = d * (float)lo + m;
        }
        for (int j = 0; j < 16; j++) {
            int hi = (qs[j] >> 4) | ((qh & bit_of[j + 16]) ? 16 : 0);
            y[j + 16] = d * (float)hi + m;
        }
    }
}

/* Q8_0: f16 d; i8 qs[32]. Q8_1 adds f16 s (= d * sum q) before qs, unused to decode. */
static void dq_q8_x(const uint8_t *p, float *y, size_t nb, size_t bytes, size_t qoff)
{
    for (size_t b = 0; b < nb; b++, p += bytes, y += 32) {
        const float d = ld_half(p);
        const int8_t *qs = (const int8_t *)(p + qoff);
        for (int j = 0; j < 32; j++) y[j] = (float)qs[j] * d;
    }
}

/* Q2_K: u8 scales[16] (low nibble scale, high nibble min); u8 qs[64]; f16 d; f16 dmin.
 * Element e = h*128 + s*32 + l (h: half, s: 2-bit lane) is (qs[h*32+l] >> 2s) & 3, in group
 * e/16: dl*q - ml with dl = d*scale, ml = dmin*min. */
static void dq_q2_k(const uint8_t *p, float *y, size_t nb)
{
    for (size_t b = 0; b < nb; b++, p += 84, y += 256) {
        const uint8_t *sc = p, *qs = p + 16;
        const float d = ld_half(p + 80), dmin = ld_half(p + 82);
        for (int h = 0; h < 2; h++)
            for (int s = 0; s < 4; s++) {
                int e0 = h * 128 + s * 32;
                for (int g = 0; g < 2; g++) { /* two groups of 16 per lane */
                    int grp = (e0 >> 4) + g;
                    const float dl = d * (float)(sc[grp] & 0x0F);
                    const float ml = dmin * (float)(sc[grp] >> 4);
                    for (int l = g * 16; l < g * 16 + 16; l++)
                        y[e0 + l] = dl * (float)((qs[h * 32 + l] >> (2 * s)) & 3) - ml;
                }
            }
    }
}

/* Q3_K: u8 hmask[32]; u8 qs[64]; u8 scales[12] (16 6-bit scales); f16 d.
 * Scale k: low 4 bits from scales[k%8] (nibble k/8), high 2 bits from scales[8 + k%4] (pair
 * k/4), minus 32. Element e = h*128 + s*32 + l: low bits (qs[h*32+l] >> 2s) & 3, minus 4 unless
 * bit (h*4+s) of hmask[l] is set. */
static void dq_q3_k(const uint8_t *p, float *y, size_t nb)
{
    for (size_t b = 0; b < nb; b++, p += 110, y += 256) {
        const uint8_t *hm = p, *qs = p + 32, *sc = p + 96;
        const float d = ld_half(p + 108);
        float dl[16];
        for (int k = 0; k < 16; k++) {
            int lo = (sc[k % 8] >> (4 * (k / 8))) & 0x0F;
            int hi = (sc[8 + k % 4] >> (2 * (k / 4))) & 0x03;
            dl[k] = d * (float)((lo | hi << 4) - 32);
        }
        for (int h = 0; h < 2; h++)
            for (int s = 0; s < 4; s++) {
                int e0 = h * 128 + s * 32, bit = h * 4 + s;
                for (int g = 0; g < 2; g++) { /* two groups of 16 per lane */
                    const float dg = dl[(e0 >> 4) + g];
                    for (int l = g * 16; l < g * 16 + 16; l++) {
                        int q = ((qs[h * 32 + l] >> (2 * s)) & 3) - 4 + (((hm[l] >> bit) & 1) << 2);
                        y[e0 + l] = dg * (float)q;
                    }
                }
            }
    }
}

/* The 8 6-bit scales and mins of Q4_K/Q5_K, packed in 12 bytes. */
static void k_scale_min(const uint8_t *s, uint8_t sc[8], uint8_t mn[8])
{
    for (int i = 0; i < 4; i++) {
        sc[i] = s[i] & 0x3F;
        mn[i] = s[4 + i] & 0x3F;
        sc[4 + i] = (uint8_t)((s[8 + i] & 0x0F) | ((s[i] >> 2) & 0x30));
        mn[4 + i] = (uint8_t)((s[8 + i] >> 4) | ((s[4 + i] >> 2) & 0x30));
    }
}

/* Q4_K: f16 d; f16 dmin; u8 scales[12]; u8 qs[128]. Element e = c*64 + a*32 + l is nibble a of
 * qs[c*32+l], group k = e/32: (d*sc[k])*q - dmin*mn[k]. */
static void dq_q4_k(const uint8_t *p, float *y, size_t nb)
{
    for (size_t b = 0; b < nb; b++, p += 144, y += 256) {
        const float d = ld_half(p), dmin = ld_half(p + 2);
        uint8_t sc[8], mn[8];
        k_scale_min(p + 4, sc, mn);
        const uint8_t *qs = p + 16;
        for (int k = 0; k < 8; k++) {
            const float dk = d * (float)sc[k], mk = dmin * (float)mn[k];
            const uint8_t *q = qs + (k / 2) * 32;
            int sh = 4 * (k & 1);
            for (int l = 0; l < 32; l++) y[k * 32 + l] = dk * (float)((q[l] >> sh) & 0x0F) - mk;
        }
    }
}

/* Q5_K: f16 d; f16 dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]. As Q4_K plus a 5th bit: bit k
 * of qh[l] for element k*32 + l. */
static void dq_q5_k(const uint8_t *p, float *y, size_t nb)
{
    for (size_t b = 0; b < nb; b++, p += 176, y += 256) {
        const float d = ld_half(p), dmin = ld_half(p + 2);
        uint8_t sc[8], mn[8];
        k_scale_min(p + 4, sc, mn);
        const uint8_t *qh = p + 16, *qs = p + 48;
        for (int k = 0; k < 8; k++) {
            const float dk = d * (float)sc[k], mk = dmin * (float)mn[k];
            const uint8_t *q = qs + (k / 2) * 32;
            int sh = 4 * (k & 1);
            for (int l = 0; l < 32; l++) {
                int v = ((q[l] >> sh) & 0x0F) | ((qh[l] >> k) & 1) << 4;
                y[k * 32 + l] = dk * (float)v - mk;
            }
        }
    }
}

/* Q6_K: u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d. Element e = h*128 + r: low 4 bits are
 * nibble r/64 of ql[h*64 + r%64], high 2 bits are pair r/32 of qh[h*32 + r%32]; minus 32; times
 * (d*scale[e/16]). */
static void dq_q6_k(const uint8_t *p, float *y, size_t nb)
{
    for (size_t b = 0; b < nb; b++, p += 210, y += 256) {
        const uint8_t *ql = p, *qh = p + 128;
        const int8_t *sc = (const int8_t *)(p + 192);
        const float d = ld_half(p + 208);
        float ds[16];
        for (int k = 0; k < 16; k++) ds[k] = d * (float)sc[k];
        for (int h = 0; h < 2; h++)
            for (int s = 0; s < 4; s++) { /* r = s*32 + l within the half */
                const uint8_t *lq = ql + h * 64 + (s & 1) * 32, *hq = qh + h * 32;
                int ls = 4 * (s >> 1), hs = 2 * s, e0 = h * 128 + s * 32;
                for (int g = 0; g < 2; g++) {
                    const float dg = ds[(e0 >> 4) + g];
                    for (int l = g * 16; l < g * 16 + 16; l++) {
                        int q = ((lq[l] >> ls) & 0x0F) | ((hq[l] >> hs) & 0x03) << 4;
                        y[e0 + l] = dg * (float)(q - 32);
                    }
                }
            }
    }
}

/* Q8_K: f32 d; i8 qs[256]; i16 bsums[16] (unused to decode). */
static void dq_q8_k(const uint8_t *p, float *y, size_t nb)
{
    for (size_t b = 0; b < nb; b++, p += 292, y += 256) {
        const float d = f32_from_bits(ld32(p));
        const int8_t *qs = (const int8_t *)(p + 4);
        for (int j = 0; j < 256; j++) y[j] = d * (float)qs[j];
    }
}

/* The 16 levels of IQ4_NL/IQ4_XS (ggml's kvalues_iq4nl). */
static const int8_t iq4_levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                      1,    13,   25,  38,  53,  69,  89,  113};

/* IQ4_NL: f16 d; u8 qs[16]; nibbles as Q4_0, each a level index. */
static void dq_iq4_nl(const uint8_t *p, float *y, size_t nb)
{
    for (size_t b = 0; b < nb; b++, p += 18, y += 32) {
        const float d = ld_half(p);
        const uint8_t *qs = p + 2;
        float t[16]; /* the 16 products, once per block (the same roundings as per element) */
        for (int k = 0; k < 16; k++) t[k] = d * (float)iq4_levels[k];
        for (int j = 0; j < 16; j++) {
            y[j] = t[qs[j] & 0x0F];
            y[j + 16] = t[qs[j] >> 4];
        }
    }
}

/* IQ4_XS: f16 d; u16 scales_h; u8 scales_l[4]; u8 qs[128]. Sub-block k (32 elements): 6-bit
 * scale = nibble k%2 of scales_l[k/2] | bits 2k..2k+1 of scales_h << 4, minus 32. Element
 * k*32 + a*16 + l is level index nibble a of qs[k*16 + l]. */
static void dq_iq4_xs(const uint8_t *p, float *y, size_t nb)
{
    for (size_t b = 0; b < nb; b++, p += 136, y += 256) {
        const float d = ld_half(p);
        const uint16_t sh = ld16(p + 2);
        const uint8_t *sl = p + 4, *qs = p + 8;
        for (int k = 0; k < 8; k++) {
            int ls = ((sl[k / 2] >> (4 * (k % 2))) & 0x0F) | ((sh >> (2 * k)) & 3) << 4;
            const float dl = d * (float)(ls - 32);
            float t[16];
            for (int v = 0; v < 16; v++) t[v] = dl * (float)iq4_levels[v];
            for (int l = 0; l < 16; l++) {
                uint8_t q = qs[k * 16 + l];
                y[k * 32 + l] = t[q & 0x0F];
                y[k * 32 + 16 + l] = t[q >> 4];
            }
        }
    }
}

/* TQ1_0: u8 qs[48] (5 trits per byte, as a fixed-point fraction); u8 qh[4] (4 per byte); f16 d.
 * Trit t of byte x is ((x * 3^t mod 256) * 3) >> 8, minus 1. Element order: qs[0..31] trit t at
 * t*32 + l, qs[32..47] at 160 + t*16 + l, qh at 240 + t*4 + l. */
static void dq_tq1_0(const uint8_t *p, float *y, size_t nb)
{
    static const uint8_t pow3[5] = {1, 3, 9, 27, 81};
    for (size_t b = 0; b < nb; b++, p += 54, y += 256) {
        const uint8_t *qs = p, *qh = p + 48;
        const float d = ld_half(p + 52);
        for (int t = 0; t < 5; t++) {
            for (int l = 0; l < 32; l++) {
                uint8_t v = (uint8_t)(qs[l] * pow3[t]);
                y[t * 32 + l] = d * (float)(((v * 3) >> 8) - 1);
            }
            for (int l = 0; l < 16; l++) {
                uint8_t v = (uint8_t)(qs[32 + l] * pow3[t]);
                y[160 + t * 16 + l] = d * (float)(((v * 3) >> 8) - 1);
            }
        }
        for (int t = 0; t < 4; t++)
            for (int l = 0; l < 4; l++) {
                uint8_t v = (uint8_t)(qh[l] * pow3[t]);
                y[240 + t * 4 + l] = d * (float)(((v * 3) >> 8) - 1);
            }
    }
}

/* TQ2_0: u8 qs[64] (2 bits each); f16 d. Element h*128 + s*32 + l is ((qs[h*32+l] >> 2s) & 3) - 1. */
static void dq_tq2_0(const uint8_t *p, float *y, size_t nb)
{
    for (size_t b = 0; b < nb; b++, p += 66, y += 256) {
        const float d = ld_half(p + 64);
        for (int h = 0; h < 2; h++)
            for (int s = 0; s < 4; s++)
                for (int l = 0; l < 32; l++)
                    y[h * 128 + s * 32 + l] = d * (float)(((p[h * 32 + l] >> (2 * s)) & 3) - 1);
    }
}

/* E2M1 values doubled (the scales below are halved to match), as ggml's kvalues_mxfp4. */
static const int8_t e2m1_x2[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

/* ggml's E8M0 "half" scale: 2^(e-128), built bitwise (e = 0, 1 are subnormals). */
static inline float e8m0_half(uint8_t e)
{
    return f32_from_bits(e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23);
}

/* MXFP4: u8 e (E8M0 shared scale); u8 qs[16] (E2M1 codes, nibbles as Q4_0). */
static void dq_mxfp4(const uint8_t *p, float *y, size_t nb)
{
    for (size_t b = 0; b < nb; b++, p += 17, y += 32) {
        const float d = e8m0_half(p[0]);
        const uint8_t *qs = p + 1;
        float t[16];
        for (int k = 0; k < 16; k++) t[k] = d * (float)e2m1_x2[k];
        for (int j = 0; j < 16; j++) {
            y[j] = t[qs[j] & 0x0F];
            y[j + 16] = t[qs[j] >> 4];
        }
    }
}

/* UE4M3 scale of NVFP4, halved (the levels are doubled): bias 7, sign bit ignored, 0x7F -> 0. */
static inline float ue4m3_half(uint8_t x)
{
    if (x == 0 || x == 0x7F) return 0.0f;
    int e = (x >> 3) & 0x0F, m = x & 7;
    float v = e == 0 ? (float)m * 0x1p-9f : f32_from_bits((uint32_t)(e + 120) << 23 | (uint32_t)m << 20);
    return v * 0.5f;
}

/* NVFP4: u8 d[4] (UE4M3 scale per 16 elements); u8 qs[32]. Group g: elements 0..7 are the low
 * nibbles of qs[g*8 .. g*8+7], elements 8..15 their high nibbles. */
static void dq_nvfp4(const uint8_t *p, float *y, size_t nb)
{
    for (size_t b = 0; b < nb; b++, p += 36, y += 64)
        for (int g = 0; g < 4; g++) {
            const float d = ue4m3_half(p[g]);
            const uint8_t *qs = p + 4 + g * 8;
            for (int j = 0; j < 8; j++) {
                y[g * 16 + j] = d * (float)e2m1_x2[qs[j] & 0x0F];
                y[g * 16 + 8 + j] = d * (float)e2m1_x2[qs[j] >> 4];
            }
        }
}

/* Q1_0: f16 d; u8 qs[16]; element j is +d if bit j%8 of qs[j/8] is set, else -d. */
static void dq_q1_0(const uint8_t *p, float *y, size_t nb)
{
    for (size_t b = 0; b < nb; b++, p += 18, y += 128) {
        const float d = ld_half(p);
        for (int j = 0; j < 128; j++) y[j] = ((p[2 + j / 8] >> (j % 8)) & 1) ? d : -d;
    }
}

/* ---------------------------------------------------------------------------------------------
 * Scalar types
 * ------------------------------------------------------------------------------------------- */

#define QNAN_POS 0x7FC00000u

/* One byte -> float through a 256-entry table built per call (1 KiB of stack, 256 steps). */
typedef float (*byte_fn)(uint8_t b);

static float f8_e4m3(uint8_t b) /* OCP E4M3 ("FN"): bias 7, no infinities, S.1111.111 NaN */
{
    uint32_t s = (uint32_t)(b & 0x80) << 24, e = (b >> 3) & 15, m = b & 7;
    if (e == 15 && m == 7) return f32_from_bits(s | QNAN_POS);
    if (e == 0) return f32_from_bits(s | bits_from_f32((float)m * 0x1p-9f));
    return f32_from_bits(s | (e + 120) << 23 | m << 20);
}

static float f8_e5m2(uint8_t b) /* OCP E5M2: bias 15, IEEE-like; the top byte of a binary16 */
{
    uint32_t s = (uint32_t)(b & 0x80) << 24, e = (b >> 2) & 31, m = b & 3;
    if (e == 31) return f32_from_bits(s | (m ? QNAN_POS : 0x7F800000u));
    if (e == 0) return f32_from_bits(s | bits_from_f32((float)m * 0x1p-16f));
    return f32_from_bits(s | (e + 112) << 23 | m << 21);
}

static float f8_e4m3fnuz(uint8_t b) /* bias 8, no infinities or -0, 0x80 the only NaN */
{
    uint32_t s = (uint32_t)(b & 0x80) << 24, e = (b >> 3) & 15, m = b & 7;
    if (b == 0x80) return f32_from_bits(QNAN_POS);
    if (e == 0) return f32_from_bits(s | bits_from_f32((float)m * 0x1p-10f));
    return f32_from_bits(s | (e + 119) << 23 | m << 20);
}

static float f8_e5m2fnuz(uint8_t b) /* bias 16, no infinities or -0, 0x80 the only NaN */
{
    uint32_t s = (uint32_t)(b & 0x80) << 24, e = (b >> 2) & 31, m = b & 3;
    if (b == 0x80) return f32_from_bits(QNAN_POS);
    if (e == 0) return f32_from_bits(s | bits_from_f32((float)m * 0x1p-17f));
    return f32_from_bits(s | (e + 111) << 23 | m << 21);
}

static float f8_e8m0(uint8_t b) /* OCP E8M0: 2^(b-127), 0xFF NaN */
{
    if (b == 0xFF) return f32_from_bits(QNAN_POS);
    return f32_from_bits(b ? (uint32_t)b << 23 : 0x00400000u);
}

static float u8_val(uint8_t b) { return (float)b; }
static float i8_val(uint8_t b) { return (float)(int8_t)b; }
static float bool_val(uint8_t b) { return b ? 1.0f : 0.0f; }

static void by_table(byte_fn fn, const uint8_t *p, float *y, size_t n)
{
    float t[256];
    for (int i = 0; i < 256; i++) t[i] = fn((uint8_t)i);
    for (size_t i = 0; i < n; i++) y[i] = t[p[i]];
}

static void dq_scalar(ingot_dtype dt, const uint8_t *p, float *y, size_t n)
{
    switch (dt) {
    case INGOT_DTYPE_F32:
        for (size_t i = 0; i < n; i++) y[i] = f32_from_bits(ld32(p + 4 * i));
        break;
    case INGOT_DTYPE_F64:
        for (size_t i = 0; i < n; i++) {
            uint64_t u = ing_ld64(p + 8 * i);
            double v;
            ING_MEMCPY(&v, &u, 8);
            y[i] = (float)v; /* nearest even; a NaN comes out quiet, sign and top payload kept */
        }
        break;
    case INGOT_DTYPE_F16:
        for (size_t i = 0; i < n; i++) y[i] = half_to_f32(ld16(p + 2 * i));
        break;
    case INGOT_DTYPE_BF16:
        for (size_t i = 0; i < n; i++) y[i] = f32_from_bits((uint32_t)ld16(p + 2 * i) << 16);
        break;
    case INGOT_DTYPE_F8_E4M3: by_table(f8_e4m3, p, y, n); break;
    case INGOT_DTYPE_F8_E5M2: by_table(f8_e5m2, p, y, n); break;
    case INGOT_DTYPE_F8_E4M3FNUZ: by_table(f8_e4m3fnuz, p, y, n); break;
    case INGOT_DTYPE_F8_E5M2FNUZ: by_table(f8_e5m2fnuz, p, y, n); break;
    case INGOT_DTYPE_F8_E8M0: by_table(f8_e8m0, p, y, n); break;
    case INGOT_DTYPE_U8: by_table(u8_val, p, y, n); break;
    case INGOT_DTYPE_I8: by_table(i8_val, p, y, n); break;
    case INGOT_DTYPE_BOOL: by_table(bool_val, p, y, n); break;
    case INGOT_DTYPE_I16:
        for (size_t i = 0; i < n; i++) y[i] = (float)(int16_t)ld16(p + 2 * i);
        break;
    case INGOT_DTYPE_U16:
        for (size_t i = 0; i < n; i++) y[i] = (float)ld16(p + 2 * i);
        break;
    case INGOT_DTYPE_I32:
        for (size_t i = 0; i < n; i++) y[i] = (float)(int32_t)ld32(p + 4 * i);
        break;
    case INGOT_DTYPE_U32:
        for (size_t i = 0; i < n; i++) y[i] = (float)ld32(p + 4 * i);
        break;
    case INGOT_DTYPE_I64:
        for (size_t i = 0; i < n; i++) y[i] = (float)(int64_t)ing_ld64(p + 8 * i);
        break;
    case INGOT_DTYPE_U64:
        for (size_t i = 0; i < n; i++) y[i] = (float)ing_ld64(p + 8 * i);
        break;
    default: break; /* not reached: checked by supported() */
    }
}

/* ---------------------------------------------------------------------------------------------
 * Dispatch
 * ------------------------------------------------------------------------------------------- */

typedef void (*block_fn)(const uint8_t *p, float *y, size_t nb);

static void dq_q8_0(const uint8_t *p, float *y, size_t nb) { dq_q8_x(p, y, nb, 34, 2); }
static void dq_q8_1(const uint8_t *p, float *y, size_t nb) { dq_q8_x(p, y, nb, 36, 4); }

static block_fn block_decoder(ingot_dtype dt)
{
    switch (dt) {
    case INGOT_DTYPE_Q4_0: return dq_q4_0;
    case INGOT_DTYPE_Q4_1: return dq_q4_1;
    case INGOT_DTYPE_Q5_0: return dq_q5_0;
    case INGOT_DTYPE_Q5_1: return dq_q5_1;
    case INGOT_DTYPE_Q8_0: return dq_q8_0;
    case INGOT_DTYPE_Q8_1: return dq_q8_1;
    case INGOT_DTYPE_Q2_K: return dq_q2_k;
    case INGOT_DTYPE_Q3_K: return dq_q3_k;
    case INGOT_DTYPE_Q4_K: return dq_q4_k;
    case INGOT_DTYPE_Q5_K: return dq_q5_k;
    case INGOT_DTYPE_Q6_K: return dq_q6_k;
    case INGOT_DTYPE_Q8_K: return dq_q8_k;
    case INGOT_DTYPE_IQ4_NL: return dq_iq4_nl;
    case INGOT_DTYPE_IQ4_XS: return dq_iq4_xs;
    case INGOT_DTYPE_TQ1_0: return dq_tq1_0;
    case INGOT_DTYPE_TQ2_0: return dq_tq2_0;
    case INGOT_DTYPE_MXFP4: return dq_mxfp4;
    case INGOT_DTYPE_NVFP4: return dq_nvfp4;
    case INGOT_DTYPE_Q1_0: return dq_q1_0;
    default: return 0;
    }
}

static bool scalar_supported(ingot_dtype dt)
{
    switch (dt) {
    case INGOT_DTYPE_F32: case INGOT_DTYPE_F64: case INGOT_DTYPE_F16: case INGOT_DTYPE_BF16:
    case INGOT_DTYPE_F8_E4M3: case INGOT_DTYPE_F8_E5M2: case INGOT_DTYPE_F8_E4M3FNUZ:
    case INGOT_DTYPE_F8_E5M2FNUZ: case INGOT_DTYPE_F8_E8M0:
    case INGOT_DTYPE_I8: case INGOT_DTYPE_I16: case INGOT_DTYPE_I32: case INGOT_DTYPE_I64:
    case INGOT_DTYPE_U8: case INGOT_DTYPE_U16: case INGOT_DTYPE_U32: case INGOT_DTYPE_U64:
    case INGOT_DTYPE_BOOL:
        return true;
    default: return false;
    }
}

bool ingot_dequantize_supported(ingot_dtype dt)
{
    return scalar_supported(dt) || block_decoder(dt) != 0;
}

static ingot_status no_decoder(ingot_error *err, ingot_dtype dt, const char *where, size_t wl)
{
    const char *name = ingot_dtype_name(dt);
    if (!name)
        return ingot__err(err, INGOT_BAD_TYPE, INGOT_NO_OFFSET, where, wl, "dtype %u is not a dtype",
                          (unsigned)dt);
    if (!where) where = name, wl = ing_strlen(name);
    return ingot__err(err, INGOT_UNSUPPORTED, INGOT_NO_OFFSET, where, wl,
                      "no decoder for dtype %s (ingot decodes GGML blocks except IQ1/IQ2/IQ3 "
                      "and Q2_0, and every scalar dtype except F4, F6, C64 and C128)",
                      name);
}

ingot_status ingot_dequantize(ingot_dtype src_dtype, const void *src, size_t src_nbytes,
                              float *dst, uint64_t n_elems, ingot_error *err)
{
    if (!ingot_dequantize_supported(src_dtype)) return no_decoder(err, src_dtype, 0, 0);
    const char *name = ingot_dtype_name(src_dtype);
    size_t nl = ing_strlen(name);
    if (n_elems && (!src || !dst))
        return ingot__err(err, INGOT_MISUSE, INGOT_NO_OFFSET, name, nl, "NULL buffer");
    uint64_t be = ingot_dtype_block_elems(src_dtype), bb = ingot_dtype_block_bytes(src_dtype);
    if (n_elems > SIZE_MAX / sizeof(float) || n_elems % be || n_elems / be > UINT64_MAX / bb ||
        n_elems / be * bb != src_nbytes)
        return ingot__err(err, INGOT_BAD_SIZE, INGOT_NO_OFFSET, name, nl,
                          "%zu bytes of %s do not hold exactly %llu elements", src_nbytes, name,
                          (unsigned long long)n_elems);
    block_fn fn = block_decoder(src_dtype);
    if (fn) fn(src, dst, (size_t)(n_elems / be));
    else dq_scalar(src_dtype, src, dst, (size_t)n_elems);
    return INGOT_OK;
}

/* ---------------------------------------------------------------------------------------------
 * From a file
 * ------------------------------------------------------------------------------------------- */

static void swap_elems(uint8_t *p, size_t n, uint32_t size)
{
    for (size_t i = 0; i < n; i++, p += size)
        for (uint32_t a = 0, b = size - 1; a < b; a++, b--) {
            uint8_t t = p[a];
            p[a] = p[b];
            p[b] = t;
        }
}

ingot_status ingot_file_tensor_dequantize(const ingot_file *f, uint64_t i, uint64_t first,
                                          uint64_t n, float *dst, ingot_error *err)
{
    if (!f || (!dst && n)) return INGOT_MISUSE;
    ingot_tensor_info t;
    if (ingot_file_tensor_at(f, i, &t) != INGOT_OK)
        return ingot__err(err, INGOT_RANGE, INGOT_NO_OFFSET, 0, 0, "no tensor %llu",
                          (unsigned long long)i);
    if (!ingot_dequantize_supported(t.dtype)) return no_decoder(err, t.dtype, t.name, t.name_len);
    if (t.flags & (INGOT_TENSOR_FORTRAN | INGOT_TENSOR_STRIDED))
        return ingot__err(err, INGOT_UNSUPPORTED, t.offset, t.name, t.name_len,
                          "column-major or strided data: materialise it with "
                          "ingot_file_tensor_copy(), then use ingot_dequantize()");
    uint32_t be = ingot_dtype_block_elems(t.dtype), bb = ingot_dtype_block_bytes(t.dtype);
    if (first > t.nelem || n > t.nelem - first || first % be || n % be)
        return ingot__err(err, INGOT_RANGE, t.offset, t.name, t.name_len,
                          "elements [%llu, +%llu) of %llu: out of range or not whole %u-element "
                          "blocks",
                          (unsigned long long)first, (unsigned long long)n,
                          (unsigned long long)t.nelem, be);
    uint8_t buf[8192];
    const uint64_t per = sizeof buf / bb; /* blocks (or elements) per piece */
    uint64_t unit = first / be, units = n / be;
    for (uint64_t done = 0; done < units;) {
        uint64_t k = units - done < per ? units - done : per;
        ING_TRY(ingot_file_tensor_read(f, i, (unit + done) * bb, buf, (size_t)(k * bb), err));
        if ((t.flags & INGOT_TENSOR_BIG_ENDIAN) && be == 1 && bb > 1) swap_elems(buf, (size_t)k, bb);
        ING_TRY(ingot_dequantize(t.dtype, buf, (size_t)(k * bb), dst + done * be, k * be, err));
        done += k;
    }
    return INGOT_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Encoding F32
 * ------------------------------------------------------------------------------------------- */

static void encode_f16(const float *src, uint8_t *o, size_t n)
{
    for (size_t i = 0; i < n; i++) st16(o + 2 * i, f32_to_half(src[i]));
}

static void encode_bf16(const float *src, uint8_t *o, size_t n)
{
    for (size_t i = 0; i < n; i++) st16(o + 2 * i, f32_to_bf16(src[i]));
}

ingot_status ingot_f32_encode(ingot_dtype dst_dtype, const float *src, uint64_t n_elems, void *dst,
                              size_t dst_nbytes, ingot_error *err)
{
    const char *name = ingot_dtype_name(dst_dtype);
    if (!name)
        return ingot__err(err, INGOT_BAD_TYPE, INGOT_NO_OFFSET, 0, 0, "dtype %u is not a dtype",
                          (unsigned)dst_dtype);
    size_t nl = ing_strlen(name);
    uint32_t size;
    switch (dst_dtype) {
    case INGOT_DTYPE_F32: size = 4; break;
    case INGOT_DTYPE_F64: size = 8; break;
    case INGOT_DTYPE_F16: case INGOT_DTYPE_BF16: size = 2; break;
    default:
        return ingot__err(err, INGOT_UNSUPPORTED, INGOT_NO_OFFSET, name, nl,
                          "F32 encodes to F32, F64, F16 or BF16, not %s", name);
    }
    if (n_elems && (!src || !dst))
        return ingot__err(err, INGOT_MISUSE, INGOT_NO_OFFSET, name, nl, "NULL buffer");
    if (n_elems > SIZE_MAX / size || n_elems * size != dst_nbytes)
        return ingot__err(err, INGOT_BAD_SIZE, INGOT_NO_OFFSET, name, nl,
                          "%zu bytes do not hold exactly %llu %s elements", dst_nbytes,
                          (unsigned long long)n_elems, name);
    uint8_t *o = dst;
    size_t n = (size_t)n_elems;
    switch (dst_dtype) {
    case INGOT_DTYPE_F32:
        for (size_t i = 0; i < n; i++) ing_st32(o + 4 * i, bits_from_f32(src[i]));
        break;
    case INGOT_DTYPE_F64:
        for (size_t i = 0; i < n; i++) {
            double v = src[i];
            uint64_t u;
            ING_MEMCPY(&u, &v, 8);
            ing_st64(o + 8 * i, u);
        }
        break;
    case INGOT_DTYPE_F16: encode_f16(src, o, n); break;
    default: encode_bf16(src, o, n); break;
    }
    return INGOT_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Casting between float types (quant.h section 4)
 * ------------------------------------------------------------------------------------------- */

uint16_t ingot__f32_to_f16(float f) { return f32_to_half(f); }
float ingot__f16_to_f32(uint16_t h) { return half_to_f32(h); }

/* The value mant * 2^exp2 (mant > 0, below 2^53) rounded to nearest, ties to even, into a
 * binary format of mbits stored mantissa bits and exponent bias `bias`, returned as its
 * magnitude bits: subnormals included, and a result at or above the format's infinity code when
 * it overflows (the carry of the rounding runs into the exponent field, as it should). Integer
 * arithmetic only. */
static uint32_t round_mag(uint64_t mant, int exp2, int mbits, int bias)
{
    int lg = exp2 - 1;
    for (uint64_t m = mant; m; m >>= 1) lg++; /* floor(log2(value)) */
    int emin = 1 - bias, qe = (lg > emin ? lg : emin) - mbits; /* exponent of one unit */
    uint64_t r;
    if (exp2 >= qe) {
        r = mant << (exp2 - qe);
    } else {
        int shift = qe - exp2;
        if (shift > 60) return 0; /* below a quarter unit: rounds to zero */
        uint64_t rem = mant & ((UINT64_C(1) << shift) - 1), half = UINT64_C(1) << (shift - 1);
        r = mant >> shift;
        r += (uint64_t)(rem > half || (rem == half && (r & 1)));
    }
    if (lg < emin) return (uint32_t)r; /* subnormal (2^mbits itself is the smallest normal) */
    return (uint32_t)(((uint64_t)(lg + bias) << mbits) + (r - (UINT64_C(1) << mbits)));
}

/* binary64 -> binary16 rounded once (NumPy's npy_double_to_half); NaN: top 10 payload bits,
 * the lowest set if they are all zero. */
static uint16_t f64_to_half(uint64_t x)
{
    uint16_t sign = (uint16_t)((x >> 48) & 0x8000);
    uint64_t e = (x >> 52) & 0x7FF, frac = x & ((UINT64_C(1) << 52) - 1);
    if (e == 0x7FF) {
        if (!frac) return (uint16_t)(sign | 0x7C00);
        uint16_t r = (uint16_t)(0x7C00 | (frac >> 42));
        return (uint16_t)(sign | (r == 0x7C00 ? 0x7C01 : r));
    }
    if (e == 0 && frac == 0) return sign;
    uint64_t mant = e ? frac | (UINT64_C(1) << 52) : frac;
    uint32_t m = round_mag(mant, e ? (int)e - 1075 : -1074, 10, 15);
    return (uint16_t)(sign | (m >= 0x7C00 ? 0x7C00 : m));
}

/* binary32 -> OCP FP8: E4M3 ("FN": no infinity, overflow and infinities give NaN 0x7F) or E5M2
 * (overflow gives infinity), as torch's float8_e4m3fn / float8_e5m2; NaN -> 0x7F, sign kept. */
static uint8_t f32_to_f8(float f, bool e4m3)
{
    uint32_t x = bits_from_f32(f);
    uint8_t sign = (uint8_t)((x >> 24) & 0x80);
    uint32_t e = (x >> 23) & 0xFF, frac = x & 0x7FFFFF;
    if (e == 0xFF) return (uint8_t)(sign | (frac || e4m3 ? 0x7F : 0x7C));
    if (e == 0 && frac == 0) return sign;
    uint64_t mant = e ? frac | 0x800000u : frac;
    uint32_t m = round_mag(mant, e ? (int)e - 150 : -149, e4m3 ? 3 : 2, e4m3 ? 7 : 15);
    if (e4m3) return (uint8_t)(sign | (m > 0x7E ? 0x7F : m));
    return (uint8_t)(sign | (m >= 0x7C ? 0x7C : m));
}

static bool cast_src_ok(ingot_dtype dt)
{
    switch (dt) {
    case INGOT_DTYPE_F64: case INGOT_DTYPE_F32: case INGOT_DTYPE_F16: case INGOT_DTYPE_BF16:
    case INGOT_DTYPE_F8_E4M3: case INGOT_DTYPE_F8_E5M2: case INGOT_DTYPE_F8_E4M3FNUZ:
    case INGOT_DTYPE_F8_E5M2FNUZ: case INGOT_DTYPE_F8_E8M0:
        return true;
    default: return false;
    }
}

static bool cast_dst_ok(ingot_dtype dt)
{
    switch (dt) {
    case INGOT_DTYPE_F64: case INGOT_DTYPE_F32: case INGOT_DTYPE_F16: case INGOT_DTYPE_BF16:
    case INGOT_DTYPE_F8_E4M3: case INGOT_DTYPE_F8_E5M2:
        return true;
    default: return false;
    }
}

bool ingot_cast_supported(ingot_dtype src, ingot_dtype dst)
{
    return cast_src_ok(src) && cast_dst_ok(dst);
}

ingot_status ingot_cast(ingot_dtype src_dtype, const void *src, size_t src_nbytes,
                        ingot_dtype dst_dtype, void *dst, size_t dst_nbytes, uint64_t n_elems,
                        ingot_error *err)
{
    const char *sn = ingot_dtype_name(src_dtype), *dn = ingot_dtype_name(dst_dtype);
    if (!sn || !dn)
        return ingot__err(err, INGOT_BAD_TYPE, INGOT_NO_OFFSET, 0, 0, "dtype %u is not a dtype",
                          (unsigned)(sn ? dst_dtype : src_dtype));
    size_t nl = ing_strlen(sn);
    if (!ingot_cast_supported(src_dtype, dst_dtype))
        return ingot__err(err, INGOT_UNSUPPORTED, INGOT_NO_OFFSET, sn, nl,
                          "no cast from %s to %s (floats F64 F32 F16 BF16 F8_* to F64 F32 F16 "
                          "BF16 F8_E4M3 F8_E5M2)",
                          sn, dn);
    if (n_elems && (!src || !dst))
        return ingot__err(err, INGOT_MISUSE, INGOT_NO_OFFSET, sn, nl, "NULL buffer");
    uint32_t ss = ingot_dtype_block_bytes(src_dtype), ds = ingot_dtype_block_bytes(dst_dtype);
    if (n_elems > SIZE_MAX / 8 || n_elems * ss != src_nbytes || n_elems * ds != dst_nbytes)
        return ingot__err(err, INGOT_BAD_SIZE, INGOT_NO_OFFSET, sn, nl,
                          "%zu and %zu bytes do not hold exactly %llu elements of %s and %s",
                          src_nbytes, dst_nbytes, (unsigned long long)n_elems, sn, dn);
    const uint8_t *p = src;
    uint8_t *o = dst;
    size_t n = (size_t)n_elems;
    if (src_dtype == dst_dtype) {
        if (n) ING_MEMCPY(o, p, n * ss);
        return INGOT_OK;
    }
    if (dst_dtype == INGOT_DTYPE_F32) { /* every source is exact in F32 but F64 (C cast) */
        float tmp[256];
        for (size_t i = 0; i < n; i += 256) {
            size_t k = n - i < 256 ? n - i : 256;
            dq_scalar(src_dtype, p + i * ss, tmp, k);
            for (size_t j = 0; j < k; j++) ing_st32(o + 4 * (i + j), bits_from_f32(tmp[j]));
        }
        return INGOT_OK;
    }
    if (dst_dtype == INGOT_DTYPE_F16 && src_dtype == INGOT_DTYPE_F64) {
        for (size_t i = 0; i < n; i++) st16(o + 2 * i, f64_to_half(ing_ld64(p + 8 * i)));
        return INGOT_OK;
    }
    float tmp[256];
    for (size_t i = 0; i < n; i += 256) {
        size_t k = n - i < 256 ? n - i : 256;
        dq_scalar(src_dtype, p + i * ss, tmp, k); /* exact, or F64 rounded to F32 (torch) */
        for (size_t j = 0; j < k; j++) {
            size_t at = i + j;
            switch (dst_dtype) {
            case INGOT_DTYPE_F64: {
                double v = tmp[j];
                uint64_t u;
                ING_MEMCPY(&u, &v, 8);
                ing_st64(o + 8 * at, u);
                break;
            }
            case INGOT_DTYPE_F16: st16(o + 2 * at, f32_to_half(tmp[j])); break;
            case INGOT_DTYPE_BF16: st16(o + 2 * at, f32_to_bf16(tmp[j])); break;
            case INGOT_DTYPE_F8_E4M3: o[at] = f32_to_f8(tmp[j], true); break;
            default: o[at] = f32_to_f8(tmp[j], false); break;
            }
        }
    }
    return INGOT_OK;
}
