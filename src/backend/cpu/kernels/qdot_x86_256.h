/*
 * qdot_x86_256.h - the 256-bit quantized dots, written once for two levels: qdot_avx2.c includes
 * it with VNNI 0 (u8 x s8 products through vpmaddubsw + vpmaddwd) and qdot_avx_vnni.c with
 * VNNI 1 (vpdpbusd / vpdpwssd). The includer defines TGT (the target attribute), VNNI and
 * QN(name) (a level suffix). Activation layout: qdot.h.
 *
 * Signed int8 products: vpmaddubsw multiplies unsigned by signed bytes, so int8 weights enter as
 * |w| with w's sign moved onto x (exact for every w, -128 included: |x| <= 127 keeps each pair
 * sum within int16). vpdpbusd instead takes w ^ 0x80 = w + 128 as unsigned and subtracts
 * 128 * sum(x) afterwards (the activation row carries its block sums). 4-bit and 6-bit weights
 * are unsigned already; their offsets (-8, -32) and minimums come from the same sums.
 */
#include <immintrin.h>
#include <string.h>

#include "cpu/kernels/qdot.h"

#define F TGT static inline
/* Unrolls a loop of constant trip count: at -O2 GCC keeps these loops, and then spills their
 * arrays of vectors to the stack and builds the shuffle constants at run time (Q6_K at 0.64 of
 * the read rate; unrolled: see docs/PERFORMANCE.md). */
#define UNROLL _Pragma("GCC unroll 8")
/* Software prefetch 8 KiB ahead of the weights, one per cache line, on Intel only
 * (ingot__cpu_prefetch; see qdot_x86_512.h). pf is the kernel's local copy of the flag. */
#define PF(p, off)                                                                                 \
    do {                                                                                           \
        if (pf) _mm_prefetch((const char *)((uintptr_t)(p) + 8192 + (off)), _MM_HINT_T0);          \
    } while (0)

/* ---- small helpers ---- */

F __m256i ld256(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }
F __m128i ld128(const void *p) { return _mm_loadu_si128((const __m128i *)p); }

F int32_t hsum_i32(__m256i v)
{
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
}

F float hsum_f32(__m256 v)
{
    __m128 lo = _mm256_castps256_ps128(v), hi = _mm256_extractf128_ps(v, 1);
    lo = _mm_add_ps(lo, hi);
    lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
    lo = _mm_add_ss(lo, _mm_shuffle_ps(lo, lo, 1));
    return _mm_cvtss_f32(lo);
}

/* acc + sum of the products of signed int8 w and x (|x| <= 127) in 8 int32 lanes. Without VNNI
 * exact for any w; with VNNI it adds 128 * sum(x) too (see the file comment). */
F __m256i dot_s8(__m256i acc, __m256i w, __m256i x)
{
#if VNNI
    return _mm256_dpbusd_avx_epi32(acc, _mm256_xor_si256(w, _mm256_set1_epi8(-128)), x);
#else
    __m256i p = _mm256_maddubs_epi16(_mm256_abs_epi8(w), _mm256_sign_epi8(x, w));
    return _mm256_add_epi32(acc, _mm256_madd_epi16(p, _mm256_set1_epi16(1)));
#endif
}

/* acc + products of unsigned u (< 128) and signed x, in 8 int32 lanes. */
F __m256i dot_u8(__m256i acc, __m256i u, __m256i x)
{
#if VNNI
    return _mm256_dpbusd_avx_epi32(acc, u, x);
#else
    return _mm256_add_epi32(acc,
                            _mm256_madd_epi16(_mm256_maddubs_epi16(u, x), _mm256_set1_epi16(1)));
#endif
}

/* acc + s16 * (pair sums of u x): the K-quants' sub-block scales applied in the int16 step. */
F __m256i dot_u8_scaled(__m256i acc, __m256i u, __m256i x, __m256i s16)
{
    __m256i p = _mm256_maddubs_epi16(u, x);
#if VNNI
    return _mm256_dpwssd_avx_epi32(acc, p, s16);
#else
    return _mm256_add_epi32(acc, _mm256_madd_epi16(p, s16));
#endif
}

/* Eight vectors of 8 int32 lanes to one vector of their eight sums, in order. */
F __m256i reduce8(const __m256i v[8])
{
    __m256i a = _mm256_hadd_epi32(_mm256_hadd_epi32(v[0], v[1]), _mm256_hadd_epi32(v[2], v[3]));
    __m256i b = _mm256_hadd_epi32(_mm256_hadd_epi32(v[4], v[5]), _mm256_hadd_epi32(v[6], v[7]));
    return _mm256_add_epi32(_mm256_permute2x128_si256(a, b, 0x20),
                            _mm256_permute2x128_si256(a, b, 0x31));
}

/* The f16 scales of 8 blocks stride bytes apart (at p, p + stride, ...) as 8 floats. */
F __m256 scales8(const uint8_t *p, int stride)
{
    __m256i idx =
        _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(stride));
    __m256i g = _mm256_i32gather_epi32((const int *)(const void *)p, idx, 1);
    g = _mm256_and_si256(g, _mm256_set1_epi32(0xffff));
    g = _mm256_permute4x64_epi64(_mm256_packus_epi32(g, g), 0x08);
    return _mm256_cvtph_ps(_mm256_castsi256_si128(g));
}

F float f16(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, 2);
    return _cvtsh_ss(h);
}

F void put(float *y, bool acc, float v) { *y = acc ? *y + v : v; }

/* ---- int8 rows, per-row scales ---- */

TGT static void QN(i8)(const uint8_t *w, size_t ldw, size_t rows, const ingot__qx *x,
                       const float *wscale, bool acc, float *y)
{
    const bool pf = ingot__cpu_prefetch();
    size_t K = x->K, kv = K / 32 * 32;
#if VNNI
    int32_t xtail = 0; /* the correction covers the vector part only */
    for (size_t k = kv; k < K; k++) xtail += x->q[k];
#endif
    for (size_t r = 0; r < rows; r++, w += ldw) {
        const int8_t *wr = (const int8_t *)w;
        __m256i s0 = _mm256_setzero_si256(), s1 = s0;
        size_t k = 0;
        for (; k + 64 <= kv; k += 64) {
            PF(wr + k, 0);
            s0 = dot_s8(s0, ld256(wr + k), ld256(x->q + k));
            s1 = dot_s8(s1, ld256(wr + k + 32), ld256(x->q + k + 32));
        }
        if (k < kv) s0 = dot_s8(s0, ld256(wr + k), ld256(x->q + k));
        int32_t d = hsum_i32(_mm256_add_epi32(s0, s1));
#if VNNI
        d -= 128 * (x->s[0] - xtail);
#endif
        for (k = kv; k < K; k++) d += (int32_t)wr[k] * x->q[k];
        put(y + r, acc, (float)d * (wscale[r] * x->d[0]));
    }
}

/* ---- Q8_0 and Q4_0: eight blocks at a time, their exact integer dots reduced to one vector,
 * scaled by d_w * d_x in f32; the last nb % 8 blocks one by one. ---- */

F __m256i q4_0_quants(const uint8_t *qs) /* 16 bytes of nibbles -> 32 values 0..15, in order */
{
    __m128i v = ld128(qs);
    __m256i b = _mm256_inserti128_si256(_mm256_castsi128_si256(v), _mm_srli_epi16(v, 4), 1);
    return _mm256_and_si256(b, _mm256_set1_epi8(15));
}

F int32_t block_q8_0(const uint8_t *blk, const int8_t *xq, int32_t xs)
{
    int32_t d = hsum_i32(dot_s8(_mm256_setzero_si256(), ld256(blk + 2), ld256(xq)));
#if VNNI
    d -= 128 * xs;
#else
    (void)xs;
#endif
    return d;
}

F int32_t block_q4_0(const uint8_t *blk, const int8_t *xq, int32_t xs)
{
    return hsum_i32(dot_u8(_mm256_setzero_si256(), q4_0_quants(blk + 2), ld256(xq))) - 8 * xs;
}

TGT static void QN(q8_0)(const uint8_t *w, size_t ldw, size_t rows, const ingot__qx *x,
                         const float *wscale, bool acc, float *y)
{
    const bool pf = ingot__cpu_prefetch();
    (void)wscale;
    size_t nb = x->nb, nv = nb / 8 * 8;
    for (size_t r = 0; r < rows; r++, w += ldw) {
        __m256 sum = _mm256_setzero_ps();
        for (size_t b = 0; b < nv; b += 8) {
            const uint8_t *blk = w + b * 34;
            UNROLL
            for (int i = 0; i < 5; i++) PF(blk, 64 * i);
            __m256i v[8];
            UNROLL
            for (int i = 0; i < 8; i++)
                v[i] = dot_s8(_mm256_setzero_si256(), ld256(blk + i * 34 + 2),
                              ld256(x->q + (b + (size_t)i) * 32));
            __m256i d = reduce8(v);
#if VNNI
            d = _mm256_sub_epi32(d, _mm256_slli_epi32(ld256(x->s + b), 7));
#endif
            __m256 sc = _mm256_mul_ps(scales8(blk, 34), _mm256_loadu_ps(x->d + b));
            sum = _mm256_fmadd_ps(_mm256_cvtepi32_ps(d), sc, sum);
        }
        float t = hsum_f32(sum);
        for (size_t b = nv; b < nb; b++)
            t +=
                (float)block_q8_0(w + b * 34, x->q + b * 32, x->s[b]) * (f16(w + b * 34) * x->d[b]);
        put(y + r, acc, t);
    }
}

/* Blocks b and b + 4 of a group of 8: both blocks' nibbles in one register (the second through
 * a load folded into vinserti128, which unlike its register form needs no shuffle port), low
 * nibbles (elements 0-15) and high nibbles (16-31) against the matching halves of x; the pair
 * sums of the two halves added in int16 (|sum| <= 4 * 15 * 127) before one vpmaddwd. Lanes 0-3
 * hold block b's partial sums, 4-7 block b + 4's. */
F __m256i pair_q4_0(const uint8_t *w0, const uint8_t *w4, const int8_t *x0, const int8_t *x4)
{
    const __m256i m4 = _mm256_set1_epi8(15);
    __m256i v = _mm256_inserti128_si256(_mm256_castsi128_si256(ld128(w0)), ld128(w4), 1);
    __m256i lo = _mm256_and_si256(v, m4), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
    __m256i xl = _mm256_inserti128_si256(_mm256_castsi128_si256(ld128(x0)), ld128(x4), 1);
    __m256i xh =
        _mm256_inserti128_si256(_mm256_castsi128_si256(ld128(x0 + 16)), ld128(x4 + 16), 1);
#if VNNI
    return _mm256_dpbusd_avx_epi32(_mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), lo, xl), hi,
                                   xh);
#else
    __m256i p = _mm256_add_epi16(_mm256_maddubs_epi16(lo, xl), _mm256_maddubs_epi16(hi, xh));
    return _mm256_madd_epi16(p, _mm256_set1_epi16(1));
#endif
}

/* pair_q4_0 with the activations already in its layout: xl = [x0[0..15] | x4[0..15]], xh the
 * same for elements 16..31 (q4_0_xr). The same integers. */
F __m256i pair_q4_0_xr(const uint8_t *w0, const uint8_t *w4, const int8_t *xl, const int8_t *xh)
{
    const __m256i m4 = _mm256_set1_epi8(15);
    __m256i v = _mm256_inserti128_si256(_mm256_castsi128_si256(ld128(w0)), ld128(w4), 1);
    __m256i lo = _mm256_and_si256(v, m4), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
#if VNNI
    return _mm256_dpbusd_avx_epi32(_mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), lo, ld256(xl)),
                                   hi, ld256(xh));
#else
    __m256i p = _mm256_add_epi16(_mm256_maddubs_epi16(lo, ld256(xl)),
                                 _mm256_maddubs_epi16(hi, ld256(xh)));
    return _mm256_madd_epi16(p, _mm256_set1_epi16(1));
#endif
}

/* The activations of blocks [0, nv) (nv a multiple of 8) in pair_q4_0_xr's layout, once per call
 * rather than once per row: for each group of 8 blocks and pair j < 4 (blocks j, j + 4), 32
 * bytes xl then 32 bytes xh, 256 bytes a group as in q. */
F void q4_0_xr(const int8_t *q, size_t nv, int8_t *xr)
{
    for (size_t b = 0; b < nv; b += 8, q += 256)
        for (int j = 0; j < 4; j++, xr += 64) {
            const int8_t *x0 = q + 32 * j, *x4 = x0 + 128;
            __m256i xl = _mm256_inserti128_si256(_mm256_castsi128_si256(ld128(x0)), ld128(x4), 1);
            __m256i xh =
                _mm256_inserti128_si256(_mm256_castsi128_si256(ld128(x0 + 16)), ld128(x4 + 16), 1);
            _mm256_storeu_si256((__m256i *)(void *)xr, xl);
            _mm256_storeu_si256((__m256i *)(void *)(xr + 32), xh);
        }
}

/* The f16 d of 8 Q4_0 blocks from blk as 8 floats without a gather: block i's d is at byte 18i,
 * so four 32-byte loads hold them at distinct 4-byte slots of their 128-bit halves (blocks 2j
 * and 2j + 1 in slot j of the low and high half of load j); three dword blends take slot j from
 * load j, one byte shuffle moves the low half's words to even and the high half's to odd word
 * positions, and the two halves are or-ed: 0 .. 7 in order. */
F __m256 scales8_q4_0(const uint8_t *blk)
{
    __m256i t = _mm256_blend_epi32(ld256(blk), ld256(blk + 32), 0x22);
    t = _mm256_blend_epi32(t, ld256(blk + 64), 0x44);
    t = _mm256_blend_epi32(t, ld256(blk + 96), 0x88);
    t = _mm256_shuffle_epi8(t, _mm256_setr_epi8(0, 1, -1, -1, 4, 5, -1, -1, 8, 9, -1, -1, 12, 13,
                                                -1, -1, -1, -1, 2, 3, -1, -1, 6, 7, -1, -1, 10,
                                                11, -1, -1, 14, 15));
    __m128i h = _mm_or_si128(_mm256_castsi256_si128(t), _mm256_extracti128_si256(t, 1));
    return _mm256_cvtph_ps(h);
}

/* Eight blocks' exact dots from four pairs: two rounds of vphaddd leave blocks 0-3 in the low
 * half and 4-7 in the high half, in order (three vphaddd against the seven of reduce8: the
 * shuffle port was the limit, 0.79-0.87 of the read rate before). Rows of up to Q4_0_XR_BLOCKS
 * blocks take the activations rearranged once per call (q4_0_xr: eight vinserti128 fewer per 8
 * blocks, a seventh of the vector uops); longer ones pair them per row. Either way the same
 * integers and the same float operations, so the same bits. */
#define Q4_0_XR_BLOCKS 512 /* 16 KiB of stack: K up to 16384 */
TGT static void QN(q4_0)(const uint8_t *w, size_t ldw, size_t rows, const ingot__qx *x,
                         const float *wscale, bool acc, float *y)
{
    const bool pf = ingot__cpu_prefetch();
    (void)wscale;
    size_t nb = x->nb, nv = nb / 8 * 8;
    _Alignas(32) int8_t xr[Q4_0_XR_BLOCKS * 32];
    bool rx = nv <= Q4_0_XR_BLOCKS;
    if (rx) q4_0_xr(x->q, nv, xr);
    for (size_t r = 0; r < rows; r++, w += ldw) {
        __m256 sum = _mm256_setzero_ps();
        for (size_t b = 0; b < nv; b += 8) {
            const uint8_t *blk = w + b * 18;
            const int8_t *xq = x->q + b * 32, *xg = xr + b * 32;
            PF(blk, 0);
            PF(blk, 64);
            PF(blk, 128);
            __m256i m0, m1, m2, m3;
            if (rx) {
                m0 = pair_q4_0_xr(blk + 2, blk + 4 * 18 + 2, xg, xg + 32);
                m1 = pair_q4_0_xr(blk + 18 + 2, blk + 5 * 18 + 2, xg + 64, xg + 96);
                m2 = pair_q4_0_xr(blk + 2 * 18 + 2, blk + 6 * 18 + 2, xg + 128, xg + 160);
                m3 = pair_q4_0_xr(blk + 3 * 18 + 2, blk + 7 * 18 + 2, xg + 192, xg + 224);
            } else {
                m0 = pair_q4_0(blk + 2, blk + 4 * 18 + 2, xq, xq + 4 * 32);
                m1 = pair_q4_0(blk + 18 + 2, blk + 5 * 18 + 2, xq + 32, xq + 5 * 32);
                m2 = pair_q4_0(blk + 2 * 18 + 2, blk + 6 * 18 + 2, xq + 64, xq + 6 * 32);
                m3 = pair_q4_0(blk + 3 * 18 + 2, blk + 7 * 18 + 2, xq + 96, xq + 7 * 32);
            }
            __m256i d = _mm256_hadd_epi32(_mm256_hadd_epi32(m0, m1), _mm256_hadd_epi32(m2, m3));
            d = _mm256_sub_epi32(d, _mm256_slli_epi32(ld256(x->s + b), 3));
            __m256 sc = _mm256_mul_ps(scales8_q4_0(blk), _mm256_loadu_ps(x->d + b));
            sum = _mm256_fmadd_ps(_mm256_cvtepi32_ps(d), sc, sum);
        }
        float t = hsum_f32(sum);
        for (size_t b = nv; b < nb; b++)
            t +=
                (float)block_q4_0(w + b * 18, x->q + b * 32, x->s[b]) * (f16(w + b * 18) * x->d[b]);
        put(y + r, acc, t);
    }
}

/* ---- K-quants: per super-block, the exact int32 sum over sub-blocks of scale * dot (the scale
 * enters as the int16 multiplier of the pair sums), and the minimums / offsets from the
 * activation's sums per 16; then d * d_x (and dmin * d_x) in f32. ---- */

/* Q4_K / Q5_K packed scales and mins: the 8 scales as int16 in both halves of sc16, the mins as
 * 16 int16 (each value twice, for the pair sums), lanes 2k and 2k + 1 holding sub-block k. */
F void k_scales(const uint8_t *s, __m256i *sc16, __m256i *mn16)
{
    /* The 6-bit fields unpacked in one vector (16 bytes read; the block goes on past the 12):
     * [u0, u2, u1, u2 >> 4] & [3f, 0f, 3f, 0f] | ([u0, u0, u1, u1] >> 2) & [0, 30, 0, 30] per
     * byte = [sc 0-3, sc 4-7, mn 0-3, mn 4-7]; the constants loaded, not built in the loop. */
    static const int32_t c[4][4] = {{0, 0, 0, 4},
                                    {0x3f3f3f3f, 0x0f0f0f0f, 0x3f3f3f3f, 0x0f0f0f0f},
                                    {0, 0x30303030, 0, 0x30303030},
                                    {0x09090808, 0x0b0b0a0a, 0x0d0d0c0c, 0x0f0f0e0e}};
    __m128i u = ld128(s);
    __m128i p = _mm_srlv_epi32(_mm_shuffle_epi32(u, 0x98), ld128(c[0]));
    p = _mm_and_si128(p, ld128(c[1]));
    __m128i q = _mm_and_si128(_mm_srli_epi32(_mm_shuffle_epi32(u, 0x50), 2), ld128(c[2]));
    __m128i v = _mm_or_si128(p, q);
    *sc16 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(v)); /* 8 scales, in both halves */
    *mn16 = _mm256_cvtepu8_epi16(_mm_shuffle_epi8(v, ld128(c[3])));
}

/* Sub-block k's int16 scale in all 16 lanes, from 8 int16 scales in both halves of s. (A 32-bit
 * broadcast from a stored copy, a load instead of a shuffle, saved 13% of the uops by llvm-mca's
 * count and ran 1-5% slower: the store-forwarding latency.) */
F __m256i bcast16(__m256i s, int k)
{
    return _mm256_shuffle_epi8(s, _mm256_set1_epi16((short)(0x0100 * (2 * k + 1) + 2 * k)));
}

F void q45_k(const uint8_t *w, size_t ldw, size_t rows, const ingot__qx *x, bool acc, float *y,
             bool five)
{
    const bool pf = ingot__cpu_prefetch();
    size_t bb = five ? 176 : 144;
    const __m256i m4 = _mm256_set1_epi8(15), bit = _mm256_set1_epi8(0x10);
    for (size_t r = 0; r < rows; r++, w += ldw) {
        __m256 sum = _mm256_setzero_ps();
        for (size_t b = 0; b < x->nb; b++) {
            const uint8_t *blk = w + b * bb, *qs = blk + (five ? 48 : 16);
            const int8_t *xq = x->q + b * 256;
            PF(blk, 0);
            PF(blk, 64);
            PF(blk, 128);
            __m256i sc16, mn16;
            k_scales(blk + 4, &sc16, &mn16);
            __m256i qh = five ? ld256(blk + 16) : _mm256_setzero_si256();
            /* two accumulators: with VNNI each vpdpwssd waits on the last (5 cycles), and eight
             * in a row took longer than the rest of the super-block; int32, so the same sum */
            __m256i A = _mm256_setzero_si256(), A1 = A;
            UNROLL
            for (int c = 0; c < 4; c++) {
                __m256i q = ld256(qs + 32 * c);
                __m256i lo = _mm256_and_si256(q, m4);
                __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
                if (five) { /* bit k of qh[l] is bit 4 of sub-block k's element l */
                    __m256i hl = c < 2    ? _mm256_slli_epi16(qh, 4 - 2 * c)
                                 : c == 2 ? qh
                                          : _mm256_srli_epi16(qh, 2);
                    __m256i hh =
                        c < 2 ? _mm256_slli_epi16(qh, 3 - 2 * c) : _mm256_srli_epi16(qh, 2 * c - 3);
                    lo = _mm256_or_si256(lo, _mm256_and_si256(hl, bit));
                    hi = _mm256_or_si256(hi, _mm256_and_si256(hh, bit));
                }
                /* sub-blocks 2c and 2c + 1 where ingot__qx_index put them */
                const int8_t *x0 = xq + 128 * (c / 2) + 32 * (c & 1);
                A = dot_u8_scaled(A, lo, ld256(x0), bcast16(sc16, 2 * c));
                A1 = dot_u8_scaled(A1, hi, ld256(x0 + 64), bcast16(sc16, 2 * c + 1));
            }
            __m256i M = _mm256_madd_epi16(mn16, ld256(x->bs + b * 16));
            /* d and dmin (f16, adjacent) converted together, times d_x: the same products */
            int32_t dd;
            memcpy(&dd, blk, 4);
            __m128 dm = _mm_mul_ps(_mm_cvtph_ps(_mm_cvtsi32_si128(dd)), _mm_set1_ps(x->d[b]));
            A = _mm256_add_epi32(A, A1);
            sum = _mm256_fmadd_ps(_mm256_cvtepi32_ps(A), _mm256_broadcastss_ps(dm), sum);
            sum = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(M),
                                   _mm256_broadcastss_ps(_mm_movehdup_ps(dm)), sum);
        }
        put(y + r, acc, hsum_f32(sum));
    }
}

TGT static void QN(q4_k)(const uint8_t *w, size_t ldw, size_t rows, const ingot__qx *x,
                         const float *wscale, bool acc, float *y)
{
    (void)wscale;
    q45_k(w, ldw, rows, x, acc, y, false);
}

TGT static void QN(q5_k)(const uint8_t *w, size_t ldw, size_t rows, const ingot__qx *x,
                         const float *wscale, bool acc, float *y)
{
    (void)wscale;
    q45_k(w, ldw, rows, x, acc, y, true);
}

TGT static void QN(q6_k)(const uint8_t *w, size_t ldw, size_t rows, const ingot__qx *x,
                         const float *wscale, bool acc, float *y)
{
    const bool pf = ingot__cpu_prefetch();
    (void)wscale;
    const __m256i m4 = _mm256_set1_epi8(15), m30 = _mm256_set1_epi8(0x30);
    for (size_t r = 0; r < rows; r++, w += ldw) {
        __m256 sum = _mm256_setzero_ps();
        for (size_t b = 0; b < x->nb; b++) {
            const uint8_t *blk = w + b * 210;
            const int8_t *xq = x->q + b * 256;
            PF(blk, 0);
            PF(blk, 64);
            PF(blk, 128);
            PF(blk, 192);
            __m128i sc8 = ld128(blk + 192);
            __m256i sc16 = _mm256_cvtepi8_epi16(sc8);
            __m256i A = _mm256_setzero_si256();
            UNROLL
            for (int h = 0; h < 2; h++) {
                __m256i ql0 = ld256(blk + 64 * h), ql1 = ld256(blk + 64 * h + 32);
                __m256i qh = ld256(blk + 128 + 32 * h);
                __m256i q[4];
                q[0] = _mm256_or_si256(_mm256_and_si256(ql0, m4),
                                       _mm256_and_si256(_mm256_slli_epi16(qh, 4), m30));
                q[1] = _mm256_or_si256(_mm256_and_si256(ql1, m4),
                                       _mm256_and_si256(_mm256_slli_epi16(qh, 2), m30));
                q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), m4),
                                       _mm256_and_si256(qh, m30));
                q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), m4),
                                       _mm256_and_si256(_mm256_srli_epi16(qh, 2), m30));
                /* scales of groups 8h .. 8h + 7, in both halves */
                __m256i s = _mm256_broadcastsi128_si256(h ? _mm256_extracti128_si256(sc16, 1)
                                                          : _mm256_castsi256_si128(sc16));
                UNROLL
                for (int i = 0; i < 4; i++) { /* groups 8h + 2i (low half), 8h + 2i + 1 */
                    __m256i si = _mm256_shuffle_epi8(
                        s, _mm256_setr_epi8((char)(4 * i), (char)(4 * i + 1), (char)(4 * i),
                                            (char)(4 * i + 1), (char)(4 * i), (char)(4 * i + 1),
                                            (char)(4 * i), (char)(4 * i + 1), (char)(4 * i),
                                            (char)(4 * i + 1), (char)(4 * i), (char)(4 * i + 1),
                                            (char)(4 * i), (char)(4 * i + 1), (char)(4 * i),
                                            (char)(4 * i + 1), (char)(4 * i + 2), (char)(4 * i + 3),
                                            (char)(4 * i + 2), (char)(4 * i + 3), (char)(4 * i + 2),
                                            (char)(4 * i + 3), (char)(4 * i + 2), (char)(4 * i + 3),
                                            (char)(4 * i + 2), (char)(4 * i + 3), (char)(4 * i + 2),
                                            (char)(4 * i + 3), (char)(4 * i + 2), (char)(4 * i + 3),
                                            (char)(4 * i + 2), (char)(4 * i + 3)));
                    A = dot_u8_scaled(A, q[i], ld256(xq + 128 * h + 32 * i), si);
                }
            }
            /* the -32 offset: 32 * sum_g sc_g * (sum of x over group g) */
            __m256i off = _mm256_madd_epi16(sc16, ld256(x->bs + b * 16));
            A = _mm256_sub_epi32(A, _mm256_slli_epi32(off, 5));
            sum = _mm256_fmadd_ps(_mm256_cvtepi32_ps(A), _mm256_set1_ps(f16(blk + 208) * x->d[b]),
                                  sum);
        }
        put(y + r, acc, hsum_f32(sum));
    }
}

#undef F
#undef UNROLL
