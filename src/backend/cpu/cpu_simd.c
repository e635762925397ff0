/*
 * cpu_simd.c - interim kernels of the cpu backend (AVX2+FMA and scalar), chosen at run time with
 * __builtin_cpu_supports. The tuned kernels (cache-blocked GEMM, AVX-512, VNNI) will come from
 * src/backend/cpu/kernels/ behind the same cpu_kernels table (see cpu.h).
 *
 * Determinism: within one ISA, every output of linear_f32 is reduced in the same order whatever
 * tile computes it (8-lane FMA accumulation over k, fixed horizontal sum, scalar tail, + bias),
 * so results do not depend on how rows and columns are split between threads.
 */
#include "cpu.h"

#if defined(__x86_64__) || defined(__i386__)
#define ING_X86 1
#include <immintrin.h>
#else
#define ING_X86 0
#endif

/* ---- scalar ---- */

static void linear_f32_scalar(const float *x, int64_t ldx, const float *w, int64_t ldw,
                              const float *bias, float *y, int64_t ldy, int64_t M, int64_t o0,
                              int64_t o1, int64_t k)
{
    for (int64_t m = 0; m < M; m++)
        for (int64_t o = o0; o < o1; o++) {
            const float *a = x + m * ldx, *c = w + o * ldw;
            double acc = 0;
            for (int64_t i = 0; i < k; i++) acc += (double)a[i] * (double)c[i];
            if (bias) acc += bias[o];
            y[m * ldy + o] = (float)acc;
        }
}

static inline float blk_d(const uint8_t *blk)
{
    uint16_t h;
    memcpy(&h, blk, 2);
    return ing_f16_to_f32(h);
}

static float dot_q8_0_scalar(const uint8_t *wblk, const int8_t *qa, const float *da,
                             int64_t nblocks)
{
    float acc = 0;
    for (int64_t b = 0; b < nblocks; b++) {
        const uint8_t *blk = wblk + b * 34;
        int32_t s = 0;
        for (int j = 0; j < 32; j++) s += (int32_t)(int8_t)blk[2 + j] * (int32_t)qa[b * 32 + j];
        acc += blk_d(blk) * da[b] * (float)s;
    }
    return acc;
}

/* ---- AVX2 + FMA ---- */
#if ING_X86

__attribute__((target("avx2,fma"))) static inline float hsum8(__m256 v)
{
    __m128 lo = _mm256_castps256_ps128(v), hi = _mm256_extractf128_ps(v, 1);
    lo = _mm_add_ps(lo, hi);
    lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
    lo = _mm_add_ss(lo, _mm_shuffle_ps(lo, lo, 1));
    return _mm_cvtss_f32(lo);
}

__attribute__((target("avx2,fma"))) static inline float finish(__m256 acc, const float *a,
                                                               const float *c, int64_t k8,
                                                               int64_t k, const float *bias,
                                                               int64_t o)
{
    float s = hsum8(acc);
    for (int64_t i = k8; i < k; i++) s = fmaf(a[i], c[i], s);
    if (bias) s += bias[o];
    return s;
}

__attribute__((target("avx2,fma"))) static void linear_f32_avx2(const float *x, int64_t ldx,
                                                                const float *w, int64_t ldw,
                                                                const float *bias, float *y,
                                                                int64_t ldy, int64_t M, int64_t o0,
                                                                int64_t o1, int64_t k)
{
    int64_t k8 = k & ~(int64_t)7;
    int64_t m = 0;
    for (; m + 2 <= M; m += 2) {
        const float *a0 = x + m * ldx, *a1 = a0 + ldx;
        int64_t o = o0;
        for (; o + 4 <= o1; o += 4) {
            const float *c0 = w + o * ldw, *c1 = c0 + ldw, *c2 = c1 + ldw, *c3 = c2 + ldw;
            __m256 s00 = _mm256_setzero_ps(), s01 = s00, s02 = s00, s03 = s00;
            __m256 s10 = s00, s11 = s00, s12 = s00, s13 = s00;
            for (int64_t i = 0; i < k8; i += 8) {
                __m256 va = _mm256_loadu_ps(a0 + i), vb = _mm256_loadu_ps(a1 + i);
                __m256 w0 = _mm256_loadu_ps(c0 + i), w1 = _mm256_loadu_ps(c1 + i);
                __m256 w2 = _mm256_loadu_ps(c2 + i), w3 = _mm256_loadu_ps(c3 + i);
                s00 = _mm256_fmadd_ps(va, w0, s00);
                s01 = _mm256_fmadd_ps(va, w1, s01);
                s02 = _mm256_fmadd_ps(va, w2, s02);
                s03 = _mm256_fmadd_ps(va, w3, s03);
                s10 = _mm256_fmadd_ps(vb, w0, s10);
                s11 = _mm256_fmadd_ps(vb, w1, s11);
                s12 = _mm256_fmadd_ps(vb, w2, s12);
                s13 = _mm256_fmadd_ps(vb, w3, s13);
            }
            float *y0 = y + m * ldy, *y1 = y0 + ldy;
            y0[o] = finish(s00, a0, c0, k8, k, bias, o);
            y0[o + 1] = finish(s01, a0, c1, k8, k, bias, o + 1);
            y0[o + 2] = finish(s02, a0, c2, k8, k, bias, o + 2);
            y0[o + 3] = finish(s03, a0, c3, k8, k, bias, o + 3);
            y1[o] = finish(s10, a1, c0, k8, k, bias, o);
            y1[o + 1] = finish(s11, a1, c1, k8, k, bias, o + 1);
            y1[o + 2] = finish(s12, a1, c2, k8, k, bias, o + 2);
            y1[o + 3] = finish(s13, a1, c3, k8, k, bias, o + 3);
        }
        for (; o < o1; o++) {
            const float *c0 = w + o * ldw;
            __m256 s0 = _mm256_setzero_ps(), s1 = s0;
            for (int64_t i = 0; i < k8; i += 8) {
                __m256 wv = _mm256_loadu_ps(c0 + i);
                s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a0 + i), wv, s0);
                s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a1 + i), wv, s1);
            }
            y[m * ldy + o] = finish(s0, a0, c0, k8, k, bias, o);
            y[(m + 1) * ldy + o] = finish(s1, a1, c0, k8, k, bias, o);
        }
    }
    for (; m < M; m++) {
        const float *a0 = x + m * ldx;
        int64_t o = o0;
        for (; o + 4 <= o1; o += 4) {
            const float *c0 = w + o * ldw, *c1 = c0 + ldw, *c2 = c1 + ldw, *c3 = c2 + ldw;
            __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
            for (int64_t i = 0; i < k8; i += 8) {
                __m256 va = _mm256_loadu_ps(a0 + i);
                s0 = _mm256_fmadd_ps(va, _mm256_loadu_ps(c0 + i), s0);
                s1 = _mm256_fmadd_ps(va, _mm256_loadu_ps(c1 + i), s1);
                s2 = _mm256_fmadd_ps(va, _mm256_loadu_ps(c2 + i), s2);
                s3 = _mm256_fmadd_ps(va, _mm256_loadu_ps(c3 + i), s3);
            }
            float *y0 = y + m * ldy;
            y0[o] = finish(s0, a0, c0, k8, k, bias, o);
            y0[o + 1] = finish(s1, a0, c1, k8, k, bias, o + 1);
            y0[o + 2] = finish(s2, a0, c2, k8, k, bias, o + 2);
            y0[o + 3] = finish(s3, a0, c3, k8, k, bias, o + 3);
        }
        for (; o < o1; o++) {
            const float *c0 = w + o * ldw;
            __m256 s0 = _mm256_setzero_ps();
            for (int64_t i = 0; i < k8; i += 8)
                s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a0 + i), _mm256_loadu_ps(c0 + i), s0);
            y[m * ldy + o] = finish(s0, a0, c0, k8, k, bias, o);
        }
    }
}

__attribute__((target("avx2,fma"))) static float dot_q8_0_avx2(const uint8_t *wblk,
                                                               const int8_t *qa, const float *da,
                                                               int64_t nblocks)
{
    __m256 acc = _mm256_setzero_ps();
    const __m256i ones = _mm256_set1_epi16(1);
    for (int64_t b = 0; b < nblocks; b++) {
        const uint8_t *blk = wblk + b * 34;
        __m256i c = _mm256_loadu_si256((const __m256i *)(const void *)(qa + b * 32));
        __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)(blk + 2));
        /* maddubs needs unsigned x signed: |a| x sign(c, a). */
        __m256i p16 = _mm256_maddubs_epi16(_mm256_sign_epi8(a, a), _mm256_sign_epi8(c, a));
        __m256i p32 = _mm256_madd_epi16(p16, ones);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(blk_d(blk) * da[b]), _mm256_cvtepi32_ps(p32), acc);
    }
    return hsum8(acc);
}
#endif

void ingot__cpu_pick_kernels(cpu_kernels *k)
{
    k->isa = "scalar";
    k->linear_f32 = linear_f32_scalar;
    k->dot_q8_0 = dot_q8_0_scalar;
#if ING_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        k->isa = "avx2+fma";
        k->linear_f32 = linear_f32_avx2;
        k->dot_q8_0 = dot_q8_0_avx2;
    }
#endif
}
