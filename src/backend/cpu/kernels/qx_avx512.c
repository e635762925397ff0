/*
 * qx_avx512.c - activation quantization (ingot__qx_quantize's per-block step) on AVX-512: the
 * same bits as qdot.c's scalar definition (max |x|, d = max / 127, 1 / d, x * (1 / d) rounded
 * half away from zero, clamped to [-127, 127]), 16 elements a step; prefill quantizes every
 * activation row of every linear, so this is on the hot path of the quantized GEMMs.
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
#else
bool ingot__qx_block_avx512(const float *x, size_t n, int8_t *q, float *d, int32_t *sum,
                            int16_t *bs)
{
    (void)x, (void)n, (void)q, (void)d, (void)sum, (void)bs;
    return false;
}
#endif
