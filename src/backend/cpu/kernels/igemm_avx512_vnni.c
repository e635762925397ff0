/*
 * igemm_avx512_vnni.c - the int8 prefill GEMM of the AVX-512 VNNI level (igemm.h): Q8_0, Q4_0,
 * Q4_K (plain and repacked), Q5_K and Q6_K weights decoded to unsigned bytes in 16-row groups,
 * f32 activations quantized per 32 elements, vpdpbusd tiles of 32 weight rows x 6 activation
 * rows (Q6_K's flushed per 16 elements, its scales' span).
 * The AMX level has its own tiles (amx.c); other levels and types keep the f32 route (qdot.c).
 */
#include <stdatomic.h>
#include <string.h>

#include "cpu/kernels/igemm.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define TGT __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")))

/* One 16-row group's 32-block in the panel: 8 x 64 bytes of u (zmm t holds bytes 4t..4t+3 of
 * each row, row r in dword r: what vpdpbusd multiplies), then 16 scales s and 16 offsets o
 * (Q6_K: the scales of the block's first and second 16 elements; its offset, -32 times the
 * scale, is in the int32 sums, which start at -32 times the activations' 16-element sums). */
#define GB 640
#define PROWS 64 /* weight rows per task (a multiple of the 32-row tile) */
#define NR 6     /* activation rows per tile */
#define NXC 256  /* activation rows per pass: their int8 copy stays in L2 */

typedef struct {
    ingot_dtype wt;
    bool rp, acc;
    size_t M, K, nb, ldw, nx, ldx, ldy, xs; /* nb: 32-blocks per row; xs: bytes per int8 row */
    const uint8_t *W;
    const float *X;
    float *Y;
    int8_t *xq;     /* [nx][xs] */
    float *dx, *sx; /* [nx][nb]: the block scale and scale times the sum of q */
    int32_t *x16;   /* Q6_K, else NULL: [nx][2 nb], -32 times the sum of q of each 16 */
    size_t lead, panel; /* worker 0's bytes before its panel; panel (and decode) bytes */
    ingot__pool *pool;
    atomic_int bad; /* activations with NaN or inf */
} ig_job;

static size_t up64(size_t n) { return (n + 63) & ~(size_t)63; }

/* ---- weights: a row's blocks [b0, b0 + nbk) as u[j][32], s[j], o[j] (j-th block at
 * u + j * 512: the 16 rows of a group 32 bytes apart, s and o 16 apart) ---- */

TGT static float h2f(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, 2);
    return _cvtsh_ss(h);
}

/* Blocks decoded at a time: one super-block for the K-quants, one block otherwise. */
static size_t unit_blocks(ingot_dtype wt)
{
    return wt == INGOT_DTYPE_Q4_K || wt == INGOT_DTYPE_Q5_K || wt == INGOT_DTYPE_Q6_K ? 8 : 1;
}

TGT static void decode_unit(const ig_job *j, const uint8_t *row, size_t ub, uint8_t *u, float *s,
                            float *o)
{
    switch (j->wt) {
    case INGOT_DTYPE_Q8_0: {
        const uint8_t *p = row + ub * 34;
        float d = h2f(p);
        __m256i q = _mm256_loadu_si256((const __m256i *)(const void *)(p + 2));
        _mm256_storeu_si256((__m256i *)(void *)u, _mm256_xor_si256(q, _mm256_set1_epi8(-128)));
        s[0] = d, o[0] = -128.0f * d;
        return;
    }
    case INGOT_DTYPE_Q4_0: {
        const uint8_t *p = row + ub * 18;
        float d = h2f(p);
        __m128i q = _mm_loadu_si128((const __m128i *)(const void *)(p + 2));
        const __m128i m4 = _mm_set1_epi8(15);
        _mm_storeu_si128((__m128i *)(void *)u, _mm_and_si128(q, m4));
        _mm_storeu_si128((__m128i *)(void *)(u + 16), _mm_and_si128(_mm_srli_epi16(q, 4), m4));
        s[0] = d, o[0] = -8.0f * d;
        return;
    }
    case INGOT_DTYPE_Q4_K:
    case INGOT_DTYPE_Q5_K: {
        bool q5 = j->wt == INGOT_DTYPE_Q5_K;
        const uint8_t *p = row + ub * (q5 ? 176 : 144);
        uint8_t sc[8], mn[8];
        float d, dmin;
        if (j->rp) { /* repacked (kernels.h): 48-bit scale and min fields, then d, dmin */
            uint64_t scf = 0, mnf = 0;
            for (int i = 0; i < 6; i++) {
                scf |= (uint64_t)p[i] << 8 * i;
                mnf |= (uint64_t)p[8 + i] << 8 * i;
            }
            for (int k = 0; k < 8; k++) {
                sc[k] = (uint8_t)(scf >> 6 * k & 63);
                mn[k] = (uint8_t)(mnf >> 6 * k & 63);
            }
            d = h2f(p + 6), dmin = h2f(p + 14);
        } else {
            ingot__k_scale_min(p + 4, sc, mn);
            d = h2f(p), dmin = h2f(p + 2);
        }
        const uint8_t *qs = p + (q5 ? 48 : 16);
        const __m256i m4 = _mm256_set1_epi8(15), b4 = _mm256_set1_epi8(16);
        const __m256i qh = q5 ? _mm256_loadu_si256((const __m256i *)(const void *)(p + 16))
                              : _mm256_setzero_si256();
        for (int k = 0; k < 8; k++) {
            uint8_t *uk = u + (size_t)k * 512;
            __m256i v;
            if (j->rp) { /* element e of sub-block 4h + L at 16 + 64h + 16L + e, low nibble */
                __m128i b = _mm_loadu_si128(
                    (const __m128i *)(const void *)(qs + 64 * (k / 4) + 16 * (k % 4)));
                v = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(b, 4), b), m4);
            } else {
                __m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(qs + 32 * (k / 2)));
                v = _mm256_and_si256(k & 1 ? _mm256_srli_epi16(b, 4) : b, m4);
            }
            if (q5) { /* bit k of qh[e]: 16 */
                __m256i bit = _mm256_set1_epi8((char)(1 << k));
                __m256i hi = _mm256_cmpeq_epi8(_mm256_and_si256(qh, bit), bit);
                v = _mm256_or_si256(v, _mm256_and_si256(hi, b4));
            }
            _mm256_storeu_si256((__m256i *)(void *)uk, v);
            s[16 * k] = d * (float)sc[k], o[16 * k] = -(dmin * (float)mn[k]);
        }
        return;
    }
    case INGOT_DTYPE_Q6_K: { /* u = the 6 bits (0..63), w = d sc16 (u - 32) */
        const uint8_t *p = row + ub * 210;
        const int8_t *sc = (const int8_t *)(const void *)(p + 192);
        float d = h2f(p + 208);
        const __m256i m4 = _mm256_set1_epi8(15), m2 = _mm256_set1_epi8(3);
        /* block k = 4h + q, its element l (as ingot_dequantize): the low 4 bits nibble q / 2
         * of ql[64h + 32(q % 2) + l], the high 2 bits pair q of qh[32h + l] */
        for (int k = 0; k < 8; k++) {
            int h = k / 4, q = k % 4;
            const uint8_t *ql = p + 64 * h + 32 * (q & 1), *qh = p + 128 + 32 * h;
            __m256i lo = _mm256_loadu_si256((const __m256i *)(const void *)ql);
            __m256i hi = _mm256_loadu_si256((const __m256i *)(const void *)qh);
            lo = _mm256_and_si256(_mm256_srl_epi16(lo, _mm_cvtsi32_si128(4 * (q >> 1))), m4);
            hi = _mm256_and_si256(_mm256_srl_epi16(hi, _mm_cvtsi32_si128(2 * q)), m2);
            _mm256_storeu_si256((__m256i *)(void *)(u + (size_t)k * 512),
                                _mm256_or_si256(lo, _mm256_slli_epi16(hi, 4)));
            s[16 * k] = d * (float)sc[2 * k], o[16 * k] = d * (float)sc[2 * k + 1];
        }
        return;
    }
    default: return;
    }
}

/* Where row r of a 16-row group lies in tmp before the transpose (in 32-byte slots): the three
 * permute stages of decode_group leave slot bits 0, 3, 2, 1 as lane bits 3, 2, 1, 0, so slot
 * s(r) puts row r in lane r. */
static size_t slot(size_t r) { return (r & 7) << 1 | r >> 3; }

/* Rows [r0, r0 + n) of W (n <= 16; rows past n zero) into a group of the panel: the blocks a
 * unit at a time into tmp (row r in slot s(r)), then each block's 16 x 8 dwords transposed
 * by three stages of two-source permutes, stage k swapping register bit k with lane bit k
 * (24 vpermt2d a block: a quarter of the time of 8 gathers). */
TGT static void decode_group(const ig_job *j, size_t r0, size_t n, uint8_t *grp, uint8_t *tmp)
{
    size_t ub = unit_blocks(j->wt);
    float *s = (float *)(void *)(tmp + ub * 512), *o = s + ub * 16;
    __m512i ix[3][2]; /* stage k, output x: lane L from (L_k ? b : a)[L with bit k = x] */
    for (int k = 0; k < 3; k++)
        for (int x = 0; x < 2; x++) {
            _Alignas(64) int32_t v[16];
            for (int L = 0; L < 16; L++)
                v[L] = ((L >> k & 1) << 4) | (L & ~(1 << k)) | (x << k);
            ix[k][x] = _mm512_load_si512((const void *)v);
        }
    for (size_t b0 = 0, un = 0; b0 < j->nb; b0 += ub, un++) {
        for (size_t r = 0; r < 16; r++) {
            uint8_t *u = tmp + 32 * slot(r);
            if (r < n) {
                decode_unit(j, j->W + (r0 + r) * j->ldw, un, u, s + r, o + r);
            } else {
                for (size_t k = 0; k < ub; k++) {
                    memset(u + 512 * k, 0, 32);
                    s[16 * k + r] = 0.0f, o[16 * k + r] = 0.0f;
                }
            }
        }
        for (size_t k = 0; k < ub; k++) {
            uint8_t *dst = grp + (b0 + k) * GB;
            const uint8_t *src = tmp + 512 * k;
            __m512i z[8];
            for (int p = 0; p < 8; p++) z[p] = _mm512_loadu_si512((const void *)(src + 64 * p));
            for (int st = 0; st < 3; st++)
                for (int p = 0; p < 8; p++) {
                    if (p >> st & 1) continue;
                    int q = p | 1 << st;
                    __m512i a = z[p], b = z[q];
                    z[p] = _mm512_permutex2var_epi32(a, ix[st][0], b);
                    z[q] = _mm512_permutex2var_epi32(a, ix[st][1], b);
                }
            for (int t = 0; t < 8; t++) _mm512_store_si512((void *)(dst + 64 * t), z[t]);
            _mm512_store_ps(dst + 512, _mm512_loadu_ps(s + 16 * k));
            _mm512_store_ps(dst + 576, _mm512_loadu_ps(o + 16 * k));
        }
    }
}

/* A tile's rows of Y (mr <= 32 weight rows from m0, nr activation rows from i0): c0 / c1 hold
 * weight rows 0-15 / 16-31; stored, or added to Y with accumulate. */
__attribute__((always_inline)) TGT static inline void tile_store(const ig_job *j, const __m512 *c0,
                                                                 const __m512 *c1, size_t i0,
                                                                 int nr, size_t m0, size_t mr)
{
    __mmask16 k0 = (__mmask16)(mr >= 16 ? 0xffffu : (1u << mr) - 1);
    __mmask16 k1 = (__mmask16)(mr >= 32 ? 0xffffu : mr > 16 ? (1u << (mr - 16)) - 1 : 0);
#pragma GCC unroll 6
    for (int i = 0; i < nr; i++) {
        float *y = j->Y + (i0 + i) * j->ldy + m0;
        __m512 v0 = c0[i], v1 = c1[i];
        if (j->acc) {
            v0 = _mm512_add_ps(_mm512_maskz_loadu_ps(k0, y), v0);
            v1 = _mm512_add_ps(_mm512_maskz_loadu_ps(k1, y + 16), v1);
        }
        _mm512_mask_storeu_ps(y, k0, v0);
        _mm512_mask_storeu_ps(y + 16, k1, v1);
    }
}

/* ---- the tile: 32 weight rows (groups at pa, pa + nb GB) x nr activation rows from i0 ---- */

__attribute__((always_inline)) TGT static inline void tile(const ig_job *j, const uint8_t *pa,
                                                           size_t i0, int nr, size_t m0,
                                                           size_t mr)
{
    const size_t nb = j->nb, xs = j->xs;
    const uint8_t *pb = pa + nb * GB;
    const int8_t *xq = j->xq + i0 * xs;
    const float *dx = j->dx + i0 * nb, *sx = j->sx + i0 * nb;
    __m512 c0[NR], c1[NR];
#pragma GCC unroll 6
    for (int i = 0; i < nr; i++) c0[i] = c1[i] = _mm512_setzero_ps();
    for (size_t b = 0; b < nb; b++, pa += GB, pb += GB) {
        __m512i s0[NR], s1[NR];
#pragma GCC unroll 6
        for (int i = 0; i < nr; i++) s0[i] = s1[i] = _mm512_setzero_si512();
#pragma GCC unroll 8
        for (int t = 0; t < 8; t++) {
            __m512i a0 = _mm512_load_si512((const void *)(pa + 64 * t));
            __m512i a1 = _mm512_load_si512((const void *)(pb + 64 * t));
#pragma GCC unroll 6
            for (int i = 0; i < nr; i++) {
                int32_t v;
                memcpy(&v, xq + i * xs + 32 * b + 4 * t, 4);
                __m512i bx = _mm512_set1_epi32(v);
                s0[i] = _mm512_dpbusd_epi32(s0[i], a0, bx);
                s1[i] = _mm512_dpbusd_epi32(s1[i], a1, bx);
            }
        }
        __m512 sw0 = _mm512_load_ps(pa + 512), mw0 = _mm512_load_ps(pa + 576);
        __m512 sw1 = _mm512_load_ps(pb + 512), mw1 = _mm512_load_ps(pb + 576);
#pragma GCC unroll 6
        for (int i = 0; i < nr; i++) {
            __m512 d = _mm512_set1_ps(dx[i * nb + b]), sm = _mm512_set1_ps(sx[i * nb + b]);
            c0[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s0[i]), _mm512_mul_ps(sw0, d), c0[i]);
            c0[i] = _mm512_fmadd_ps(mw0, sm, c0[i]);
            c1[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s1[i]), _mm512_mul_ps(sw1, d), c1[i]);
            c1[i] = _mm512_fmadd_ps(mw1, sm, c1[i]);
        }
    }
    tile_store(j, c0, c1, i0, nr, m0, mr);
}

TGT static void tile_n(const ig_job *j, const uint8_t *pa, size_t i0, int nr, size_t m0,
                       size_t mr)
{
    switch (nr) {
    case 6: tile(j, pa, i0, 6, m0, mr); break;
    case 5: tile(j, pa, i0, 5, m0, mr); break;
    case 4: tile(j, pa, i0, 4, m0, mr); break;
    case 3: tile(j, pa, i0, 3, m0, mr); break;
    case 2: tile(j, pa, i0, 2, m0, mr); break;
    default: tile(j, pa, i0, 1, m0, mr); break;
    }
}

/* Q6_K's tile: each 32-block's int32 sums in two halves of 16 elements (t = 0..3, 4..7),
 * each starting at -32 times its activations' sum of q and flushed with its own scale
 * (y += s16 dx isum16), first half then second, in block order. */
__attribute__((always_inline)) TGT static inline void tile6(const ig_job *j, const uint8_t *pa,
                                                            size_t i0, int nr, size_t m0,
                                                            size_t mr)
{
    const size_t nb = j->nb, xs = j->xs;
    const uint8_t *pb = pa + nb * GB;
    const int8_t *xq = j->xq + i0 * xs;
    const float *dx = j->dx + i0 * nb;
    const int32_t *x16 = j->x16 + i0 * 2 * nb;
    __m512 c0[NR], c1[NR];
#pragma GCC unroll 6
    for (int i = 0; i < nr; i++) c0[i] = c1[i] = _mm512_setzero_ps();
    for (size_t b = 0; b < nb; b++, pa += GB, pb += GB) {
#pragma GCC unroll 2
        for (int hf = 0; hf < 2; hf++) {
            __m512i s0[NR], s1[NR];
#pragma GCC unroll 6
            for (int i = 0; i < nr; i++)
                s0[i] = s1[i] = _mm512_set1_epi32(x16[i * 2 * nb + 2 * b + hf]);
#pragma GCC unroll 4
            for (int t = 4 * hf; t < 4 * hf + 4; t++) {
                __m512i a0 = _mm512_load_si512((const void *)(pa + 64 * t));
                __m512i a1 = _mm512_load_si512((const void *)(pb + 64 * t));
#pragma GCC unroll 6
                for (int i = 0; i < nr; i++) {
                    int32_t v;
                    memcpy(&v, xq + i * xs + 32 * b + 4 * t, 4);
                    __m512i bx = _mm512_set1_epi32(v);
                    s0[i] = _mm512_dpbusd_epi32(s0[i], a0, bx);
                    s1[i] = _mm512_dpbusd_epi32(s1[i], a1, bx);
                }
            }
            __m512 sw0 = _mm512_load_ps(pa + 512 + 64 * hf);
            __m512 sw1 = _mm512_load_ps(pb + 512 + 64 * hf);
#pragma GCC unroll 6
            for (int i = 0; i < nr; i++) {
                __m512 d = _mm512_set1_ps(dx[i * nb + b]);
                c0[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s0[i]), _mm512_mul_ps(sw0, d), c0[i]);
                c1[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s1[i]), _mm512_mul_ps(sw1, d), c1[i]);
            }
        }
    }
    tile_store(j, c0, c1, i0, nr, m0, mr);
}

TGT static void tile6_n(const ig_job *j, const uint8_t *pa, size_t i0, int nr, size_t m0,
                        size_t mr)
{
    switch (nr) {
    case 6: tile6(j, pa, i0, 6, m0, mr); break;
    case 5: tile6(j, pa, i0, 5, m0, mr); break;
    case 4: tile6(j, pa, i0, 4, m0, mr); break;
    case 3: tile6(j, pa, i0, 3, m0, mr); break;
    case 2: tile6(j, pa, i0, 2, m0, mr); break;
    default: tile6(j, pa, i0, 1, m0, mr); break;
    }
}

/* ---- tasks ---- */

/* Activation rows [8t, 8t + 8) quantized (the bits of ingot__qx_quantize's 32-blocks; for
 * Q6_K also -32 times each 16 elements' sum of q). */
TGT static void quant_task(void *ctx, size_t t, unsigned worker)
{
    (void)worker;
    ig_job *j = ctx;
    for (size_t i = 8 * t; i < j->nx && i < 8 * t + 8; i++)
        for (size_t b = 0; b < j->nb; b++) {
            int32_t sum;
            int16_t bs[2];
            float *d = j->dx + i * j->nb + b;
            if (!ingot__qx_block_avx512(j->X + i * j->ldx + 32 * b, 32, j->xq + i * j->xs + 32 * b,
                                        d, &sum, j->x16 ? bs : NULL)) {
                atomic_store(&j->bad, 1);
                return;
            }
            j->sx[i * j->nb + b] = *d * (float)sum;
            if (j->x16) {
                j->x16[(i * j->nb + b) * 2] = -32 * (int32_t)bs[0];
                j->x16[(i * j->nb + b) * 2 + 1] = -32 * (int32_t)bs[1];
            }
        }
}

/* Weight rows [PROWS t, PROWS t + PROWS) decoded into the worker's panel, then each 32-row pair
 * of groups against every activation row of the pass, NR at a time (the pair's panel, 40 KB at
 * K = 1024, stays in L1 while the activations stream: 5-10% faster than activations outer). */
TGT static void mul_task(void *ctx, size_t t, unsigned worker)
{
    ig_job *j = ctx;
    size_t r0 = t * PROWS, n = j->M - r0 < PROWS ? j->M - r0 : PROWS;
    uint8_t *s = ingot__pool_scratch(j->pool, worker, (worker ? 0 : j->lead) + j->panel);
    if (!s) return; /* grown before the job: cannot happen */
    uint8_t *panel = s + (worker ? 0 : j->lead);
    size_t gbytes = j->nb * GB, ngroups = (n + 31) / 32 * 2;
    uint8_t *tmp = panel + PROWS / 16 * gbytes;
    for (size_t g = 0; g < ngroups; g++) {
        size_t gr = g * 16 < n ? (n - g * 16 < 16 ? n - g * 16 : 16) : 0;
        decode_group(j, r0 + g * 16, gr, panel + g * gbytes, tmp);
    }
    for (size_t p = 0; p < ngroups / 2; p++) {
        size_t m0 = r0 + 32 * p, mr = n - 32 * p < 32 ? n - 32 * p : 32;
        for (size_t i0 = 0; i0 < j->nx; i0 += NR) {
            int nr = j->nx - i0 < NR ? (int)(j->nx - i0) : NR;
            if (j->x16)
                tile6_n(j, panel + 2 * p * gbytes, i0, nr, m0, mr);
            else
                tile_n(j, panel + 2 * p * gbytes, i0, nr, m0, mr);
        }
    }
}

TGT static bool all_finite(const float *X, size_t ldx, size_t nx, size_t K)
{
    __mmask16 bad = 0;
    for (size_t i = 0; i < nx; i++)
        for (size_t k = 0; k < K; k += 16) /* K: a multiple of 32 */
            bad |= _mm512_fpclass_ps_mask(_mm512_loadu_ps(X + i * ldx + k), 0x99);
    return bad == 0;
}

bool ingot__igemm_ok(ingot_dtype wt, size_t K)
{
    if (!ingot__isa_supported(INGOT__ISA_AVX512_VNNI) || K == 0 || K > 65536) return false;
    switch (wt) {
    case INGOT_DTYPE_Q8_0:
    case INGOT_DTYPE_Q4_0: return K % 32 == 0;
    case INGOT_DTYPE_Q4_K:
    case INGOT_DTYPE_Q5_K:
    case INGOT_DTYPE_Q6_K: return K % 256 == 0;
    default: return false;
    }
}

ingot_status ingot__igemm(ingot__pool *pool, ingot_dtype wt, bool rp, size_t M, size_t K,
                          const void *W, size_t ldw, const float *X, size_t ldx, size_t nx,
                          bool accumulate, float *Y, size_t ldy, bool *taken)
{
    *taken = true;
    if (M == 0 || nx == 0) return INGOT_OK;
    /* NaN or inf anywhere: the f32 route (a later pass could not turn back) */
    if (nx > NXC && !all_finite(X, ldx, nx, K)) {
        *taken = false;
        return INGOT_OK;
    }
    ingot__pool *own = NULL;
    if (!pool && !(pool = own = ingot__pool_create(NULL, 1))) return INGOT_NOMEM;
    size_t nb = K / 32, xs = up64(K), np = nx < NXC ? nx : NXC;
    ig_job j = {.wt = wt, .rp = rp, .acc = accumulate, .M = M, .K = K, .nb = nb, .ldw = ldw,
                .ldx = ldx, .ldy = ldy, .xs = xs, .W = W, .pool = pool};
    atomic_init(&j.bad, 0);
    size_t ub = unit_blocks(wt);
    j.panel = PROWS / 16 * nb * GB + ub * (512 + 2 * 16 * sizeof(float));
    bool q6 = wt == INGOT_DTYPE_Q6_K;
    j.lead = up64(np * xs) + 2 * up64(np * nb * sizeof(float)) +
             (q6 ? up64(np * 2 * nb * sizeof(int32_t)) : 0);
    /* Every worker's scratch grown now (worker 0's last: it holds the activations), so the
     * tasks cannot fail halfway through Y. */
    bool ok = true;
    for (unsigned w = 1; ok && w < ingot__pool_threads(pool); w++)
        ok = ingot__pool_scratch(pool, w, j.panel) != NULL;
    uint8_t *s = ok ? ingot__pool_scratch(pool, 0, j.lead + j.panel) : NULL;
    if (!s) {
        ingot__pool_destroy(own);
        return INGOT_NOMEM;
    }
    j.xq = (int8_t *)s;
    j.dx = (float *)(void *)(s + up64(np * xs));
    j.sx = j.dx + up64(np * nb * sizeof(float)) / sizeof(float);
    if (q6) j.x16 = (int32_t *)(void *)(j.sx + up64(np * nb * sizeof(float)) / sizeof(float));
    for (size_t n0 = 0; n0 < nx; n0 += NXC) {
        j.nx = nx - n0 < NXC ? nx - n0 : NXC;
        j.X = X + n0 * ldx;
        j.Y = Y + n0 * ldy;
        ingot__pool_run(pool, quant_task, &j, (j.nx + 7) / 8);
        if (atomic_load(&j.bad)) { /* only in the first pass (all_finite above) */
            *taken = false;
            break;
        }
        ingot__pool_run(pool, mul_task, &j, (M + PROWS - 1) / PROWS);
    }
    ingot__pool_destroy(own);
    return INGOT_OK;
}

#else
bool ingot__igemm_ok(ingot_dtype wt, size_t K)
{
    (void)wt, (void)K;
    return false;
}

ingot_status ingot__igemm(ingot__pool *pool, ingot_dtype wt, bool rp, size_t M, size_t K,
                          const void *W, size_t ldw, const float *X, size_t ldx, size_t nx,
                          bool accumulate, float *Y, size_t ldy, bool *taken)
{
    (void)pool, (void)wt, (void)rp, (void)M, (void)K, (void)W, (void)ldw, (void)X, (void)ldx;
    (void)nx, (void)accumulate, (void)Y, (void)ldy;
    *taken = false;
    return INGOT_OK;
}
#endif
