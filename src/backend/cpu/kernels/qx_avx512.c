/*
 * qx_avx512.c - activation quantization (ingot__qx_quantize's per-block step) on AVX-512: the
 * same bits as qdot.c's scalar definition (max |x|, d = max / 127, 1 / d, x * (1 / d) rounded
 * half away from zero, clamped to [-127, 127]), 16 elements a step; prefill quantizes every
 * activation row of every linear, so this is on the hot path of the quantized GEMMs. Also the
 * repacking of Q4_K super-blocks at open (kernels.h), 64 nibble bytes a step.
 */
#include <math.h>
#include <string.h>

#include "cpu/kernels/qdot.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define TGT __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")))

/* Rounds x * id half away from zero and clamps to [-127, 127], as qdot.c's scalar loop:
 * t = trunc(|v|), plus one where |v| - t >= 0.5 (exact for |v| < 2^23; larger clamp anyway). */
TGT static inline __m512i round_q(__m512 x, __m512 id)
{
    const __m512 absm = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fffffff));
    __m512 v = _mm512_mul_ps(x, id), a = _mm512_and_ps(v, absm);
    __m512 t = _mm512_roundscale_ps(a, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    __mmask16 up = _mm512_cmp_ps_mask(_mm512_sub_ps(a, t), _mm512_set1_ps(0.5f), _CMP_GE_OQ);
    t = _mm512_mask_add_ps(t, up, t, _mm512_set1_ps(1.0f));
    t = _mm512_min_ps(t, _mm512_set1_ps(127.0f));
    __m512i q = _mm512_cvttps_epi32(t);
    __mmask16 neg = _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LT_OQ);
    return _mm512_mask_sub_epi32(q, neg, _mm512_setzero_si512(), q);
}

TGT bool ingot__qx_block_avx512(const float *x, size_t n, int8_t *q, float *d, int32_t *sum,
                                int16_t *bs)
{
    __m512 m = _mm512_setzero_ps();
    const __m512 absm = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fffffff));
    __mmask16 nan = 0;
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 v = _mm512_loadu_ps(x + i);
        nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
        m = _mm512_max_ps(m, _mm512_and_ps(v, absm));
    }
    __mmask16 tail = (__mmask16)((1u << (n - i)) - 1);
    if (i < n) {
        __m512 v = _mm512_maskz_loadu_ps(tail, x + i);
        nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
        m = _mm512_max_ps(m, _mm512_and_ps(v, absm));
    }
    float amax = _mm512_reduce_max_ps(m);
    if (nan || !(amax <= 3.4028235e38f)) return false; /* NaN or inf: the scalar definition */
    float db = amax / 127.0f, id = db != 0.0f ? 1.0f / db : 0.0f;
    *d = db;
    __m512 idv = _mm512_set1_ps(id);
    __m512i s = _mm512_setzero_si512();
    for (i = 0; i + 16 <= n; i += 16) {
        __m512i qi = round_q(_mm512_loadu_ps(x + i), idv);
        _mm_storeu_si128((__m128i *)(void *)(q + i), _mm512_cvtepi32_epi8(qi));
        if (bs) bs[i / 16] = (int16_t)_mm512_reduce_add_epi32(qi);
        s = _mm512_add_epi32(s, qi);
    }
    if (i < n) {
        __m512i qi = round_q(_mm512_maskz_loadu_ps(tail, x + i), idv);
        _mm_mask_storeu_epi8(q + i, tail, _mm512_cvtepi32_epi8(qi));
        s = _mm512_add_epi32(s, qi);
    }
    if (sum) *sum = _mm512_reduce_add_epi32(s);
    return true;
}
/* The nibbles of one 64-byte half of a super-block (GGML groups g, g + 1 of 32 bytes: lanes
 * A_g, C_g, A_g+1, C_g+1 of 16) in the repacked order: lane L of the result holds sub-block
 * 2g' + (L & 1) of group g' = g + L / 2, elements 0-15 in the low nibbles (from A), 16-31 in the
 * high ones (from C), as qdot.c's loop writes them. */
TGT static inline __m512i q4kr_half(__m512i q)
{
    const __m512i m4 = _mm512_set1_epi8(0x0F), mf0 = _mm512_set1_epi8((char)0xF0);
    __m512i a = _mm512_shuffle_i64x2(q, q, _MM_SHUFFLE(2, 2, 0, 0)); /* A_g A_g A_g+1 A_g+1 */
    __m512i c = _mm512_shuffle_i64x2(q, q, _MM_SHUFFLE(3, 3, 1, 1)); /* C_g C_g C_g+1 C_g+1 */
    __m512i even = _mm512_or_si512(_mm512_and_si512(a, m4),
                                   _mm512_slli_epi16(_mm512_and_si512(c, m4), 4));
    __m512i odd = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(a, 4), m4),
                                  _mm512_and_si512(c, mf0));
    return _mm512_mask_blend_epi8((__mmask64)0xFFFF0000FFFF0000ull, even, odd);
}

/* 8 bytes of at most 6 bits each, packed: byte k's bits at 6k (the 48-bit field). */
static inline uint64_t pack6(uint64_t v)
{
    v = (v & 0x003F003F003F003Full) | (v >> 2 & 0x0FC00FC00FC00FC0ull);       /* 12 bits / 16 */
    v = (v & 0x00000FFF00000FFFull) | (v >> 4 & 0x00FFF00000FFF000ull);       /* 24 bits / 32 */
    return (v & 0xFFFFFFull) | (v >> 8 & 0xFFFFFF000000ull);                  /* 48 bits */
}

/* ingot__q4kr_head without byte arrays: GGML's 12 scale bytes q (get_scale_min_k4: sc j < 4 =
 * q[j] & 63, mn = q[j + 4] & 63; j >= 4: sc = q[j + 4] & 15 | (q[j - 4] >> 6) << 4, mn =
 * q[j + 4] >> 4 | (q[j] >> 6) << 4) as two words of eight bytes, then packed. */
static inline void q4kr_head_fast(const uint8_t *s, uint8_t *out)
{
    uint64_t lo;
    uint32_t hi;
    memcpy(&lo, s + 4, 8);
    memcpy(&hi, s + 12, 4);
    uint32_t a = (uint32_t)lo, b = (uint32_t)(lo >> 32);
    uint64_t sc = (uint64_t)(a & 0x3F3F3F3Fu) |
                  (uint64_t)((hi & 0x0F0F0F0Fu) | (a >> 6 & 0x03030303u) << 4) << 32;
    uint64_t mn = (uint64_t)(b & 0x3F3F3F3Fu) |
                  (uint64_t)((hi >> 4 & 0x0F0F0F0Fu) | (b >> 6 & 0x03030303u) << 4) << 32;
    uint64_t scf = pack6(sc), mnf = pack6(mn);
    memcpy(out, &scf, 6); /* little-endian: the field's bytes 0-5 (x86) */
    memcpy(out + 6, s, 2);
    memcpy(out + 8, &mnf, 6);
    memcpy(out + 14, s + 2, 2);
}

TGT bool ingot__q4kr_repack_avx512(const void *src, void *dst, size_t nblocks)
{
    const uint8_t *s = src;
    uint8_t *o = dst;
    for (size_t b = 0; b < nblocks; b++, s += 144, o += 144) {
        uint8_t head[16];
        q4kr_head_fast(s, head);
        __m512i q0 = _mm512_loadu_si512(s + 16), q1 = _mm512_loadu_si512(s + 80);
        memcpy(o, head, 16); /* (everything of s read first: src == dst allowed) */
        _mm512_storeu_si512(o + 16, q4kr_half(q0));
        _mm512_storeu_si512(o + 80, q4kr_half(q1));
    }
    return true;
}
#else
bool ingot__q4kr_repack_avx512(const void *src, void *dst, size_t nblocks)
{
    (void)src, (void)dst, (void)nblocks;
    return false;
}

bool ingot__qx_block_avx512(const float *x, size_t n, int8_t *q, float *d, int32_t *sum,
                            int16_t *bs)
{
    (void)x, (void)n, (void)q, (void)d, (void)sum, (void)bs;
    return false;
}
#endif
