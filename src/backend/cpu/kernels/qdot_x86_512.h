/*
 * qdot_x86_512.h - the 512-bit quantized dots, written once for two levels: qdot_avx512.c
 * includes it with VNNI 0 (AVX-512 BW: vpmaddubsw / vpmaddwd) and qdot_avx512_vnni.c with VNNI 1
 * (vpdpbusd / vpdpwssd). The includer defines TGT, VNNI and QN(name), as for
 * qdot_x86_256.h, whose comment explains the signed-product tricks used here too (AVX-512 has
 * no vpsignb: x takes w's sign through a mask from vpmovb2m).
 *
 * Fewer instructions per block is what reaches the read rate (a Q8_0 GEMV is compute-bound at
 * about 3 ns per block in one-block-per-step code): 16 Q8_0 / Q4_0 blocks per step, two per
 * register, their 16 exact integer dots reduced into one vector by a shuffle tree, the 16 weight
 * scales fetched by one gather, then one multiply-add in f32; K-quants take 64 elements per
 * instruction with the sub-block scales in the int16 step.
 */
#include <immintrin.h>
#include <string.h>

#include "cpu/kernels/qdot.h"
#include "cpu/kernels/tree16.h"

#define F TGT static inline
#define FA TGT static inline __attribute__((always_inline))
/* Unrolls a loop of constant trip count (GCC keeps them at -O2: qdot_x86_256.h). */
#define UNROLL _Pragma("GCC unroll 9")

F __m512i ld512(const void *p) { return _mm512_loadu_si512(p); }
F __m256i ld256(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }
F __m128i ld128(const void *p) { return _mm_loadu_si128((const __m128i *)p); }

/* Prefetch distance (bytes ahead along the weights). 8 KiB, as docs/BACKEND.md says: against
 * the 16 KiB used before it, decode at 2 threads ran 1.5-4% faster (Q4_K, Q8_0; the lines
 * arrive in time and fewer prefetches are in flight per core) and one thread within 1%; 32 and
 * 64 KiB were 5-12% slower (Xeon, docs/PERFORMANCE.md runtime "Fifth round"). */
#ifndef PFD
#define PFD 8192
#endif
#define PF(p, off)                                                                                 \
    do {                                                                                           \
        if (pf) _mm_prefetch((const char *)((uintptr_t)(p) + PFD + (off)), _MM_HINT_T0);           \
    } while (0)

F float hsum_f32(__m512 v) { return _mm512_reduce_add_ps(v); }

F float f16(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, 2);
    return _cvtsh_ss(h);
}

F void put(float *y, bool acc, float v) { *y = acc ? *y + v : v; }

/* acc + products of signed int8 w and x (|x| <= 127) in 16 int32 lanes; with VNNI plus
 * 128 * sum(x). */
F __m512i dot_s8(__m512i acc, __m512i w, __m512i x)
{
#if VNNI
    return _mm512_dpbusd_epi32(acc, _mm512_xor_si512(w, _mm512_set1_epi8(-128)), x);
#else
    __m512i xs = _mm512_mask_sub_epi8(x, _mm512_movepi8_mask(w), _mm512_setzero_si512(), x);
    __m512i p = _mm512_maddubs_epi16(_mm512_abs_epi8(w), xs);
    return _mm512_add_epi32(acc, _mm512_madd_epi16(p, _mm512_set1_epi16(1)));
#endif
}

F __m512i dot_u8(__m512i acc, __m512i u, __m512i x)
{
#if VNNI
    return _mm512_dpbusd_epi32(acc, u, x);
#else
    return _mm512_add_epi32(acc,
                            _mm512_madd_epi16(_mm512_maddubs_epi16(u, x), _mm512_set1_epi16(1)));
#endif
}

F __m512i dot_u8_scaled(__m512i acc, __m512i u, __m512i x, __m512i s16)
{
    __m512i p = _mm512_maddubs_epi16(u, x);
#if VNNI
    return _mm512_dpwssd_epi32(acc, p, s16);
#else
    return _mm512_add_epi32(acc, _mm512_madd_epi16(p, s16));
#endif
}

/* Eight vectors, each holding two blocks (lanes 0-7 block 2i, 8-15 block 2i + 1), to one vector
 * of the 16 block sums in order: 128-bit quarters, then pairs of lanes, then lanes are added. */
F __m512i reduce16(const __m512i v[8])
{
    __m512i s[4];
    UNROLL
    for (int p = 0; p < 4; p++) /* quarter j of s[p]: block 4p + j */
        s[p] = _mm512_add_epi32(_mm512_shuffle_i32x4(v[2 * p], v[2 * p + 1], 0x88),
                                _mm512_shuffle_i32x4(v[2 * p], v[2 * p + 1], 0xdd));
    /* quarter j: two partial sums of block j (or 8 + j), two of block 4 + j (or 12 + j) */
    __m512i w0 =
        _mm512_add_epi32(_mm512_unpacklo_epi64(s[0], s[1]), _mm512_unpackhi_epi64(s[0], s[1]));
    __m512i w1 =
        _mm512_add_epi32(_mm512_unpacklo_epi64(s[2], s[3]), _mm512_unpackhi_epi64(s[2], s[3]));
    __m512i x = _mm512_unpacklo_epi32(w0, w1), y = _mm512_unpackhi_epi32(w0, w1);
    /* quarter j: blocks j, 8 + j, 4 + j, 12 + j */
    __m512i z = _mm512_add_epi32(_mm512_unpacklo_epi64(x, y), _mm512_unpackhi_epi64(x, y));
    const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 2, 6, 10, 14, 1, 5, 9, 13, 3, 7, 11, 15);
    return _mm512_permutexvar_epi32(order, z);
}

/* The f16 scales of 16 blocks stride bytes apart as 16 floats (one gather). */
F __m512 scales16(const uint8_t *p, int stride)
{
    __m512i idx =
        _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                           _mm512_set1_epi32(stride));
    __m512i g = _mm512_i32gather_epi32(idx, (const void *)p, 1);
    return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(g));
}

/* ---- int8 rows, per-row scales: 64 per step, the tail through a masked load ---- */

TGT static void QN(i8)(const uint8_t *w, size_t ldw, size_t rows, const ingot__qx *x,
                       const float *wscale, bool acc, float *y)
{
    const bool pf = ingot__cpu_prefetch();
    size_t K = x->K, kv = K / 64 * 64;
    __mmask64 tail = K > kv ? ~0ull >> (64 - (K - kv)) : 0;
    for (size_t r = 0; r < rows; r++, w += ldw) {
        __m512i s0 = _mm512_setzero_si512(), s1 = s0;
        size_t k = 0;
        for (; k + 128 <= kv; k += 128) {
            PF(w + k, 0);
            PF(w + k, 64);
            s0 = dot_s8(s0, ld512(w + k), ld512(x->q + k));
            s1 = dot_s8(s1, ld512(w + k + 64), ld512(x->q + k + 64));
        }
        if (k < kv) s0 = dot_s8(s0, ld512(w + k), ld512(x->q + k)), k += 64;
        if (tail) /* past K: w bytes 0 (x is zero there too, so VNNI's w + 128 adds nothing) */
            s1 = dot_s8(s1, _mm512_maskz_loadu_epi8(tail, w + k), ld512(x->q + k));
        int32_t d = _mm512_reduce_add_epi32(_mm512_add_epi32(s0, s1));
#if VNNI
        d -= 128 * x->s[0];
#endif
        put(y + r, acc, (float)d * (wscale[r] * x->d[0]));
    }
}

/* ---- Q8_0 and Q4_0 ---- */

/* Up to 16 Q8_0 blocks from block b of a row (blk = its first), n of them (1..16), into sum:
 * two blocks a register, their 16 exact dots reduced by one shuffle tree, the 16 scales by one
 * gather. A row's last n % 16 blocks take this step, the missing blocks' scales 0 (they went
 * one at a time with a horizontal sum each: in L2 rows of 2816, 88 blocks, 1.15x slower). */
FA __m512 q8_0_step(const uint8_t *blk, const ingot__qx *x, size_t b, size_t n, __m512 sum,
                    bool pf)
{
    UNROLL
    for (int i = 0; i < 9; i++) PF(blk, 64 * i);
    __m512i v[8];
    UNROLL
    for (int i = 0; i < 8; i++) {
        if ((size_t)(2 * i) >= n) {
            v[i] = _mm512_setzero_si512();
            continue;
        }
        const uint8_t *p = blk + 68 * i + 2;
        __m256i hi = (size_t)(2 * i + 1) < n ? ld256(p + 34) : _mm256_setzero_si256();
        __m512i wv = _mm512_inserti64x4(_mm512_castsi256_si512(ld256(p)), hi, 1);
        v[i] = dot_s8(_mm512_setzero_si512(), wv, ld512(x->q + (b + 2 * (size_t)i) * 32));
    }
    __m512i d = reduce16(v);
    __mmask16 m = (__mmask16)((1u << n) - 1);
#if VNNI
    d = _mm512_sub_epi32(d, _mm512_slli_epi32(_mm512_maskz_loadu_epi32(m, x->s + b), 7));
#endif
    __m512 sc;
    if (n == 16) {
        sc = _mm512_mul_ps(scales16(blk, 34), _mm512_loadu_ps(x->d + b));
    } else { /* missing blocks get scale 0 (VNNI leaves 128 * sum(x) of what follows there) */
        __m512i idx = _mm512_mullo_epi32(
            _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
            _mm512_set1_epi32(34));
        __m512i g = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), m, idx, blk, 1);
        sc = _mm512_mul_ps(_mm512_cvtph_ps(_mm512_cvtepi32_epi16(g)),
                           _mm512_maskz_loadu_ps(m, x->d + b));
    }
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(d), sc, sum);
}

/* The first PFD bytes of each of the ns sub-ranges but the first (ingot__stream_row), which the
 * kernels' prefetches PFD ahead would not reach before they are read. */
F void stream_heads(const uint8_t *w, size_t ldw, size_t rows, size_t ns, bool pf)
{
    if (!pf || ns < 2 || rows < 2 * ns) return;
    for (size_t s = 1; s < ns; s++) {
        const uint8_t *p = w + ingot__stream_row(rows, ns, s) * ldw;
        for (size_t o = 0; o < PFD; o += 64) _mm_prefetch((const char *)p + o, _MM_HINT_T0);
    }
}

/* One row's dot: its 16-block steps, then the last n % 16 blocks as one more. */
FA float q8_0_row(const uint8_t *w, const ingot__qx *x, bool pf)
{
    size_t nb = x->nb, nv = nb / 16 * 16;
    __m512 sum = _mm512_setzero_ps();
    for (size_t b = 0; b < nv; b += 16) sum = q8_0_step(w + b * 34, x, b, 16, sum, pf);
    if (nv < nb) sum = q8_0_step(w + nv * 34, x, nv, nb - nv, sum, pf);
    return hsum_f32(sum);
}

/* NAME(w, ldw, r, ns, x, acc, y, pf): ns (2, 4 or 8: a constant once inlined) rows r[0..ns) of
 * a 32-element block type read in turn, one STEP of 16 blocks (BYTES each) of each row, every
 * row's steps in its one-row kernel's order (the same bits). */
#define BLOCK_GROUP(NAME, STEP, BYTES)                                                            \
    FA void NAME(const uint8_t *w, size_t ldw, const size_t *r, size_t ns, const ingot__qx *x,    \
                 bool acc, float *y, bool pf)                                                     \
    {                                                                                             \
        size_t nb = x->nb, nv = nb / 16 * 16;                                                     \
        __m512 sum[8];                                                                            \
        for (size_t s = 0; s < ns; s++) sum[s] = _mm512_setzero_ps();                             \
        for (size_t b = 0; b < nv; b += 16)                                                       \
            for (size_t s = 0; s < ns; s++)                                                       \
                sum[s] = STEP(w + r[s] * ldw + b * (BYTES), x, b, 16, sum[s], pf);                \
        if (nv < nb)                                                                              \
            for (size_t s = 0; s < ns; s++)                                                       \
                sum[s] = STEP(w + r[s] * ldw + nv * (BYTES), x, nv, nb - nv, sum[s], pf);         \
        for (size_t s = 0; s < ns; s++) put(y + r[s], acc, hsum_f32(sum[s]));                     \
    }
BLOCK_GROUP(q8_0_group, q8_0_step, 34)

TGT static void QN(q8_0)(const uint8_t *w, size_t ldw, size_t rows, const ingot__qx *x,
                         const float *wscale, bool acc, float *y)
{
    const bool pf = ingot__cpu_prefetch();
    (void)wscale;
    size_t ns = ingot__gemv_streams(), g = rows / ns * ns, r[8];
    stream_heads(w, ldw, rows, ns, pf);
    /* ns streams (ingot__stream_row): groups of ns rows read in turn, then the rows left */
    for (size_t i = 0; ns > 1 && i < g; i += ns) {
        for (size_t s = 0; s < ns; s++) r[s] = ingot__stream_row(rows, ns, i + s);
        if (ns == 8) q8_0_group(w, ldw, r, 8, x, acc, y, pf);
        else if (ns == 4) q8_0_group(w, ldw, r, 4, x, acc, y, pf);
        else q8_0_group(w, ldw, r, 2, x, acc, y, pf);
    }
    for (size_t i = ns > 1 ? g : 0; i < rows; i++) {
        size_t ri = ingot__stream_row(rows, ns, i);
        put(y + ri, acc, q8_0_row(w + ri * ldw, x, pf));
    }
}

/* The f16 d of n (1..16) Q4_0 blocks from blk, 0 past n: block i's d is 16-bit word 9i, so
 * words 0-63 hold blocks 0-7 and words 72-135 blocks 8-15: four loads and two two-table word
 * permutes (a gather of 16, or 16 scalar loads, cost a quarter of the kernel's time). Loads
 * stop at byte 18n. */
F __m256i q4_0_scales(const uint8_t *blk, size_t n)
{
    static const int16_t idx[32] = {0, 9, 18, 27, 36, 45, 54, 63, 0, 9, 18, 27, 36, 45, 54, 63};
    __m512i za0, za1, zb0, zb1;
    if (n == 16) {
        za0 = ld512(blk), za1 = ld512(blk + 64), zb0 = ld512(blk + 144), zb1 = ld512(blk + 208);
    } else {
        size_t wn = 9 * n; /* words that lie in the n blocks */
#define WM(w0)                                                                                     \
    (wn <= (w0) ? 0 : wn >= (w0) + 32 ? ~(__mmask32)0 : ((__mmask32)1 << (wn - (w0))) - 1)
        za0 = _mm512_maskz_loadu_epi16(WM(0), blk);
        za1 = _mm512_maskz_loadu_epi16(WM(32), blk + 64);
        zb0 = _mm512_maskz_loadu_epi16(WM(72), blk + 144);
        zb1 = _mm512_maskz_loadu_epi16(WM(104), blk + 208);
#undef WM
    }
    __m512i i = ld512(idx);
    __m512i t = _mm512_mask_blend_epi16(0xff00, _mm512_permutex2var_epi16(za0, i, za1),
                                        _mm512_permutex2var_epi16(zb0, i, zb1));
    t = _mm512_maskz_mov_epi16((__mmask32)((1u << n) - 1), t);
    return _mm512_castsi512_si256(t);
}

/* Up to 16 Q4_0 blocks from block b of a row (blk = its first), n of them (1..16): sum + each
 * block's x->d[b] * d * (dot - 8 * sum of x) in lane b % 16. Four blocks share a register: their
 * 16 bytes of nibbles inserted from memory (no shuffle port), the low nibbles met by elements
 * 0-15 of the four blocks' activations and the high ones by 16-31 (two 64-byte loads of x
 * split by one 128-bit shuffle each), both into one accumulator; four such groups reduced
 * to the 16 block sums by six in-lane shuffles. Missing blocks (n < 16) enter as zero weights,
 * so the x read past them (within the activation buffer: q, then d and s) adds nothing; the
 * last step of a row takes its remaining blocks this way, where they went one at a time with a
 * horizontal sum each (rows of 2816: 88 blocks). Was: two blocks a register unpacked by three
 * shuffles and a 16-vector tree, the scales gathered (in L2 1.1-1.4x slower). */
FA __m512 q4_0_step(const uint8_t *blk, const ingot__qx *x, size_t b, size_t n, __m512 sum,
                    bool pf)
{
    const __m512i m4 = _mm512_set1_epi8(15);
    UNROLL
    for (int i = 0; i < 5; i++) PF(blk, 64 * i);
    __m512i V[4];
    UNROLL
    for (int g = 0; g < 4; g++) {
        if ((size_t)(4 * g) >= n) {
            V[g] = _mm512_setzero_si512();
            continue;
        }
        const uint8_t *p = blk + 72 * g + 2;
        __m512i z = _mm512_castsi128_si512(ld128(p));
        if ((size_t)(4 * g + 1) < n) z = _mm512_inserti32x4(z, ld128(p + 18), 1);
        if ((size_t)(4 * g + 2) < n) z = _mm512_inserti32x4(z, ld128(p + 36), 2);
        if ((size_t)(4 * g + 3) < n) z = _mm512_inserti32x4(z, ld128(p + 54), 3);
        if ((size_t)(4 * g + 1) >= n) z = _mm512_zextsi128_si512(_mm512_castsi512_si128(z));
        else if ((size_t)(4 * g + 2) >= n) z = _mm512_zextsi256_si512(_mm512_castsi512_si256(z));
        else if ((size_t)(4 * g + 3) >= n) z = _mm512_maskz_mov_epi32(0x0fff, z);
        const int8_t *xq = x->q + (b + 4 * (size_t)g) * 32;
        __m512i x0 = ld512(xq), x1 = ld512(xq + 64); /* blocks 4g, 4g + 1 | 4g + 2, 4g + 3 */
        __m512i lo = _mm512_and_si512(z, m4), hi = _mm512_and_si512(_mm512_srli_epi16(z, 4), m4);
        V[g] = dot_u8(dot_u8(_mm512_setzero_si512(), lo, _mm512_shuffle_i64x2(x0, x1, 0x88)), hi,
                      _mm512_shuffle_i64x2(x0, x1, 0xdd));
    }
    /* 128-bit lane i of V[g]: four partial sums of block 4g + i; c lane 4i + g: block 4g + i */
    __m512i a01 = _mm512_add_epi32(_mm512_unpacklo_epi32(V[0], V[1]),
                                   _mm512_unpackhi_epi32(V[0], V[1]));
    __m512i a23 = _mm512_add_epi32(_mm512_unpacklo_epi32(V[2], V[3]),
                                   _mm512_unpackhi_epi32(V[2], V[3]));
    __m512i c = _mm512_add_epi32(_mm512_unpacklo_epi64(a01, a23), _mm512_unpackhi_epi64(a01, a23));
    const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    __mmask16 m = (__mmask16)((1u << n) - 1);
    __m512i d = _mm512_sub_epi32(_mm512_permutexvar_epi32(order, c),
                                 _mm512_slli_epi32(_mm512_maskz_loadu_epi32(m, x->s + b), 3));
    __m512 sc =
        _mm512_mul_ps(_mm512_cvtph_ps(q4_0_scales(blk, n)), _mm512_maskz_loadu_ps(m, x->d + b));
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(d), sc, sum);
}

BLOCK_GROUP(q4_0_group, q4_0_step, 18)

TGT static void QN(q4_0)(const uint8_t *w, size_t ldw, size_t rows, const ingot__qx *x,
                         const float *wscale, bool acc, float *y)
{
    const bool pf = ingot__cpu_prefetch();
    (void)wscale;
    size_t nb = x->nb, nv = nb / 16 * 16, ns = ingot__gemv_streams(), g = rows / ns * ns, r[8];
    stream_heads(w, ldw, rows, ns, pf);
    for (size_t i = 0; ns > 1 && i < g; i += ns) { /* as in QN(q8_0) */
        for (size_t s = 0; s < ns; s++) r[s] = ingot__stream_row(rows, ns, i + s);
        if (ns == 8) q4_0_group(w, ldw, r, 8, x, acc, y, pf);
        else if (ns == 4) q4_0_group(w, ldw, r, 4, x, acc, y, pf);
        else q4_0_group(w, ldw, r, 2, x, acc, y, pf);
    }
    for (size_t i = ns > 1 ? g : 0; i < rows; i++) {
        size_t ri = ingot__stream_row(rows, ns, i);
        const uint8_t *wr = w + ri * ldw;
        __m512 sum = _mm512_setzero_ps();
        for (size_t b = 0; b < nv; b += 16) sum = q4_0_step(wr + b * 18, x, b, 16, sum, pf);
        if (nv < nb) sum = q4_0_step(wr + nv * 18, x, nv, nb - nv, sum, pf);
        put(y + ri, acc, hsum_f32(sum));
    }
}

/* ---- K-quants ---- */

/* Q4_K / Q5_K packed scales (the 12 bytes at s; 16 are read, the block goes on past them): the
 * bytes v = [sc 0-3, sc 4-7, mn 0-3, mn 4-7] in every 128-bit lane of *scb (k_sc16 makes the
 * int16 scale vectors of the dot from it by one in-lane vpshufb each), and the 8 mins each twice
 * (lanes 2k, 2k + 1: sub-block k) as int16 in *mn16. The 6-bit fields are unpacked in one
 * vector: [u0, u2, u1, u2 >> 4] & [3f, 0f, 3f, 0f] | ([u0, u0, u1, u1] >> 2) & [0, 30, 0, 30]
 * (per byte). */
F void k_scales(const uint8_t *s, __m512i *scb, __m256i *mn16)
{
    /* loaded, not built: GCC otherwise rebuilds such constants with broadcasts in the loop */
    static const int32_t c[3][4] = {{0, 0, 0, 4},
                                    {0x3f3f3f3f, 0x0f0f0f0f, 0x3f3f3f3f, 0x0f0f0f0f},
                                    {0, 0x30303030, 0, 0x30303030}};
    /* int16 lanes 2k, 2k + 1 = byte 8 + k (mn k), zero-extended (0x80: a zero byte) */
    static const uint8_t mc[32] = {8,  128, 8,  128, 9,  128, 9,  128, 10, 128, 10,
                                   128, 11, 128, 11, 128, 12, 128, 12, 128, 13, 128,
                                   13, 128, 14, 128, 14, 128, 15, 128, 15, 128};
    __m128i u = ld128(s);
    __m128i p = _mm_srlv_epi32(_mm_shuffle_epi32(u, 0x98), ld128(c[0]));
    p = _mm_and_si128(p, ld128(c[1]));
    __m128i q = _mm_and_si128(_mm_srli_epi32(_mm_shuffle_epi32(u, 0x50), 2), ld128(c[2]));
    *scb = _mm512_broadcast_i32x4(_mm_or_si128(p, q));
    *mn16 = _mm256_shuffle_epi8(_mm512_castsi512_si256(*scb), ld256(mc));
}

/* vpshufb controls: int16 lanes 0-15 = scale 4h + k, lanes 16-31 = scale 4h + k + 2 (bytes of
 * v, zero-extended), for [2h + k] (the sub-blocks of qs bytes 64h.., low nibbles k = 0, high
 * k = 1). A vpshufb is one shuffle-port uop where the vpermw it replaced was two (Ice Lake,
 * Sapphire Rapids); the scales are the same integers, so are the dots. */
#define KC(a) a, 128, a, 128, a, 128, a, 128, a, 128, a, 128, a, 128, a, 128
static const uint8_t k_ctl[4][64] = {{KC(0), KC(0), KC(2), KC(2)},
                                     {KC(1), KC(1), KC(3), KC(3)},
                                     {KC(4), KC(4), KC(6), KC(6)},
                                     {KC(5), KC(5), KC(7), KC(7)}};
#undef KC

/* Q5_K: the bit of qh that holds bit 4 of sub-block 4h + k's elements, int16 lanes 0-15, and of
 * sub-block 4h + k + 2, lanes 16-31, for [2h + k] (a vpsrlw count vector). */
static const int16_t k_idx[4][32] = {
    {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
     2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2},
    {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
     3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3},
    {4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
     6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6},
    {5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5,
     7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7}};

/* int16 lanes 0-15 = lane a of s, lanes 16-31 = lane b (a vpermw index). */
F __m512i two16(int a, int b)
{
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set1_epi16((short)a)),
                              _mm256_set1_epi16((short)b), 1);
}

F __m512i sum16x16(const __m512i *p)
{
    __m512i r;
    TREE16(__m512i, _mm512_add_epi32, _mm512_shuffle_i32x4, SHI, r, p);
    return r;
}

F __m512 sum16x16_ps(const __m512 *p)
{
    __m512 r;
    TREE16_PS(r, p);
    return r;
}

/* The per-row sum of a row's per-super-block terms t[0..n): lane j of a 16-lane sum takes the
 * terms j, j + 16, ... in order, then the lanes are added by hsum_f32. Every Q4_K / Q5_K row goes
 * through this whatever rows it was computed with, so one row gives the same bits on any path.
 * acc carries the lanes over a row computed in pieces of a multiple of 16 terms. */
F __m512 k_lanes(__m512 acc, const float *t, size_t n)
{
    size_t c = 0;
    for (; c + 16 <= n; c += 16) acc = _mm512_add_ps(acc, _mm512_loadu_ps(t + c));
    if (c < n) acc = _mm512_add_ps(acc, _mm512_maskz_loadu_ps((__mmask16)((1u << (n - c)) - 1),
                                                              t + c));
    return acc;
}

/* The terms of up to 16 super-blocks (n of them) into t: x->d * (d * A - dmin * M) from their
 * integer dots A (16 lanes each), minimums' dots M (8 lanes each), f16 d and dmin and the
 * activation scales xd. */
FA void k_store16(const __m512i *Av, const __m256i *Ms, const uint16_t *dv, const uint16_t *dmv,
                  const float *xd, size_t n, float *t)
{
    __m512i Mv[8];
    UNROLL
    for (int k = 0; k < 8; k++) /* (inserts from memory take no shuffle port) */
        Mv[k] = _mm512_inserti64x4(_mm512_castsi256_si512(Ms[2 * k]), Ms[2 * k + 1], 1);
    __m512 a = _mm512_cvtepi32_ps(sum16x16(Av));
    __m512 m = _mm512_cvtepi32_ps(reduce16(Mv));
    __m512 xv = _mm512_load_ps(xd);
    __m512 d = _mm512_mul_ps(_mm512_cvtph_ps(ld256(dv)), xv);
    __m512 dm = _mm512_mul_ps(_mm512_cvtph_ps(ld256(dmv)), xv);
    _mm512_mask_storeu_ps(t, (__mmask16)((1u << n) - 1),
                          _mm512_fmsub_ps(a, d, _mm512_mul_ps(m, dm)));
}

/* Terms of super-blocks b0 .. b0 + nbs - 1 of nrows rows (rp[0..nrows), in that order) into
 * t[i * nbs + j] = x->d[b] * (d * A - dmin * M) for row i, super-block b = b0 + j, where A is the
 * exact scaled dot and M the exact minimums' dot. Sixteen super-blocks at a time, in row order
 * and across rows when rows are short (the runtime's 1024-wide rows have 4): their integer dots
 * summed by one transposed tree and scaled as one vector, where one super-block at a time paid
 * its own fold, conversions and broadcasts of d and dmin, and a row its own horizontal sum
 * (llvm-mca: 25 cycles a Q4_K super-block, the shuffle port the limit; measured in L2 now 1.2x
 * faster on the runtime's rows, docs/PERFORMANCE.md). The scales are unpacked in vectors and
 * the constants loaded (GCC rebuilt the vpermw indices with broadcasts in the loop). */
FA void q45_terms(const uint8_t *const *rp, size_t nrows, size_t b0, size_t nbs,
                  const ingot__qx *x, bool five, float *t)
{
    const bool pf = ingot__cpu_prefetch();
    size_t bb = five ? 176 : 144, total = nrows * nbs;
    static const uint8_t c15[64] = {15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15,
                                    15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15,
                                    15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15,
                                    15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15};
    __m512i m4 = ld512(c15);
    const __m512i one = _mm512_set1_epi8(1);
    /* opaque, so that GCC keeps it in a register: it rebuilt it by a mov and a vpbroadcastd
     * (a shuffle-port uop) every super-block */
    __asm__("" : "+v"(m4));
    __m512i Av[16];
    __m256i Ms[16];
    _Alignas(64) uint16_t dv[16], dmv[16];
    _Alignas(64) float xd[16];
    /* pointers walked a super-block at a time (the row's block, the activations' quants, their
     * 16-element sums and scale), reset at each row's first super-block b0: the index
     * arithmetic they replace was a quarter of a super-block's instructions */
    const int8_t *const xq0 = x->q + b0 * 256;
    const int16_t *const bs0 = x->bs + b0 * 16;
    const float *const xd0 = x->d + b0;
    const uint8_t *blk = rp[0] + b0 * bb;
    const int8_t *xq = xq0;
    const int16_t *bsp = bs0;
    const float *xdp = xd0;
    size_t j = 0, ri = 0; /* super-block index within the current row's range, the row */
    for (size_t e0 = 0; e0 < total; e0 += 16) {
        size_t n = total - e0 < 16 ? total - e0 : 16;
        _Pragma("GCC unroll 4")
        for (size_t i = 0; i < 16; i++) {
            if (i >= n) {
                Av[i] = _mm512_setzero_si512();
                Ms[i] = _mm256_setzero_si256();
                dv[i] = dmv[i] = 0, xd[i] = 0.0f;
                continue;
            }
            const uint8_t *qs = blk + (five ? 48 : 16);
            PF(blk, 0);
            PF(blk, 64);
            PF(blk, 128);
            __m512i scb;
            __m256i mn16;
            k_scales(blk + 4, &scb, &mn16);
            __m512i qh = five ? _mm512_broadcast_i64x4(ld256(blk + 16)) : _mm512_setzero_si512();
            __m512i A = _mm512_setzero_si512();
            UNROLL
            for (int h = 0; h < 2; h++) { /* qs bytes 64h..64h+63: sub-blocks 4h..4h+3 */
                __m512i q = ld512(qs + 64 * h);
                /* low nibbles: sub-blocks 4h, 4h + 2; high: 4h + 1, 4h + 3 (the order
                 * ingot__qx_index stores the activations in) */
                __m512i z[2] = {_mm512_and_si512(q, m4),
                                _mm512_and_si512(_mm512_srli_epi16(q, 4), m4)};
                UNROLL
                for (int k = 0; k < 2; k++) {
                    if (five) { /* bit k of qh[l] is bit 4 of sub-block k's element l */
                        __m512i idx = ld512(k_idx[2 * h + k]);
                        __m512i hb = _mm512_and_si512(_mm512_srlv_epi16(qh, idx), one);
                        z[k] = _mm512_or_si512(z[k], _mm512_slli_epi16(hb, 4));
                    }
                    A = dot_u8_scaled(A, z[k], ld512(xq + 128 * h + 64 * k),
                                      _mm512_shuffle_epi8(scb, ld512(k_ctl[2 * h + k])));
                }
            }
            Ms[i] = _mm256_madd_epi16(mn16, ld256(bsp));
            Av[i] = A;
            memcpy(&dv[i], blk, 2);
            memcpy(&dmv[i], blk + 2, 2);
            xd[i] = *xdp;
            blk += bb, xq += 256, bsp += 16, xdp++;
            if (++j == nbs && ++ri < nrows)
                j = 0, blk = rp[ri] + b0 * bb, xq = xq0, bsp = bs0, xdp = xd0;
        }
        k_store16(Av, Ms, dv, dmv, xd, n, t + e0);
    }
}

#if VNNI
/* Repacked Q4_K (kernels.h, ingot__q4kr_repack): the terms of q45_terms, the same integers A and
 * M per super-block (so the same bits), in fewer instructions: the scales and mins come out of
 * one broadcast load by one vpmultishiftqb and an and (VBMI; q45_terms' k_scales takes eight
 * instructions), and each 64-byte load of nibbles holds 16 elements of each of four sub-blocks
 * in its low nibbles and the next 16 in its high ones, so the two vpmaddubsw products share one
 * scale vector: they are added as int16 (at most 2 * 2 * 15 * 127, no saturation) and scaled by
 * one vpdpwssd, two per super-block where q45_terms takes four, and two vpshufb for the scale
 * vectors where it takes four. */
#define TGTV                                                                                       \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512vbmi,avx2,fma,"     \
                          "f16c")))
TGTV static void q4kr_terms(const uint8_t *const *rp, size_t nrows, size_t b0, size_t nbs,
                            const ingot__qx *x, float *t)
{
    const bool pf = ingot__cpu_prefetch();
    size_t total = nrows * nbs;
    /* loaded, not built (see q45_terms) */
    static const uint8_t c15[64] = {15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15,
                                    15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15,
                                    15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15,
                                    15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15};
    /* vpmultishiftqb: byte k of each quadword = its bits 6k..6k+7 (the 6-bit field k, and two
     * bits of the next, cleared by the and with 63) */
#define MS8 0, 6, 12, 18, 24, 30, 36, 42
    static const uint8_t msc[64] = {MS8, MS8, MS8, MS8, MS8, MS8, MS8, MS8};
#undef MS8
#define C63 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63
    static const uint8_t c63[64] = {C63, C63, C63, C63};
#undef C63
    /* int16 lanes 2k, 2k + 1 = byte 8 + k (min k), zero-extended (as in k_scales) */
    static const uint8_t mc[32] = {8,  128, 8,  128, 9,  128, 9,  128, 10, 128, 10,
                                   128, 11, 128, 11, 128, 12, 128, 12, 128, 13, 128,
                                   13, 128, 14, 128, 14, 128, 15, 128, 15, 128};
    /* vpshufb: the int16 lanes of 128-bit lane L = scale 4h + L, zero-extended, for [h] */
#define K8(a) a, 128, a, 128, a, 128, a, 128, a, 128, a, 128, a, 128, a, 128
    static const uint8_t rctl[2][64] = {{K8(0), K8(1), K8(2), K8(3)},
                                        {K8(4), K8(5), K8(6), K8(7)}};
#undef K8
    __m512i m4 = ld512(c15), m63 = ld512(c63), ms = ld512(msc);
    __asm__("" : "+v"(m4), "+v"(m63), "+v"(ms)); /* kept in registers (see q45_terms) */
    __m512i Av[16];
    __m256i Ms[16];
    _Alignas(64) uint16_t dv[16], dmv[16];
    _Alignas(64) float xd[16];
    /* pointers walked a super-block at a time, as in q45_terms */
    const int8_t *const xq0 = x->q + b0 * 256;
    const int16_t *const bs0 = x->bs + b0 * 16;
    const float *const xd0 = x->d + b0;
    const uint8_t *blk = rp[0] + b0 * 144;
    const int8_t *xq = xq0;
    const int16_t *bsp = bs0;
    const float *xdp = xd0;
    size_t j = 0, ri = 0;
    for (size_t e0 = 0; e0 < total; e0 += 16) {
        size_t n = total - e0 < 16 ? total - e0 : 16;
        _Pragma("GCC unroll 4")
        for (size_t i = 0; i < 16; i++) {
            if (i >= n) {
                Av[i] = _mm512_setzero_si512();
                Ms[i] = _mm256_setzero_si256();
                dv[i] = dmv[i] = 0, xd[i] = 0.0f;
                continue;
            }
            const uint8_t *qs = blk + 16;
            PF(blk, 0);
            PF(blk, 64);
            PF(blk, 128);
            __m512i scb = _mm512_and_si512(
                _mm512_multishift_epi64_epi8(ms, _mm512_broadcast_i32x4(ld128(blk))), m63);
            __m256i mn16 = _mm256_shuffle_epi8(_mm512_castsi512_si256(scb), ld256(mc));
            __m512i p[2];
            UNROLL
            for (int h = 0; h < 2; h++) {
                __m512i q = ld512(qs + 64 * h);
                __m512i lo = _mm512_and_si512(q, m4);
                __m512i hi = _mm512_and_si512(_mm512_srli_epi16(q, 4), m4);
                p[h] = _mm512_add_epi16(_mm512_maddubs_epi16(lo, ld512(xq + 128 * h)),
                                        _mm512_maddubs_epi16(hi, ld512(xq + 128 * h + 64)));
            }
            /* vpmaddwd, then vpdpwssd onto it: no zeroed accumulator to copy in */
            __m512i A = _mm512_madd_epi16(p[0], _mm512_shuffle_epi8(scb, ld512(rctl[0])));
            A = _mm512_dpwssd_epi32(A, p[1], _mm512_shuffle_epi8(scb, ld512(rctl[1])));
            Ms[i] = _mm256_madd_epi16(mn16, ld256(bsp));
            Av[i] = A;
            memcpy(&dv[i], blk + 6, 2);
            memcpy(&dmv[i], blk + 14, 2);
            xd[i] = *xdp;
            blk += 144, xq += 256, bsp += 16, xdp++;
            if (++j == nbs && ++ri < nrows)
                j = 0, blk = rp[ri] + b0 * 144, xq = xq0, bsp = bs0, xdp = xd0;
        }
        k_store16(Av, Ms, dv, dmv, xd, n, t + e0);
    }
}
#undef TGTV
#endif

/* The terms of kind 0 (Q4_K), 1 (Q5_K) or 2 (repacked Q4_K, the VNNI level only). */
FA void k_terms(int kind, const uint8_t *const *rp, size_t nrows, size_t b0, size_t nbs,
                const ingot__qx *x, float *t)
{
#if VNNI
    if (kind == 2) {
        q4kr_terms(rp, nrows, b0, nbs, x, t);
        return;
    }
#endif
    q45_terms(rp, nrows, b0, nbs, x, kind == 1, t);
}

/* Rows in windows of at most QK_TERMS terms: a window's terms, then each row's sum. */
#define QK_TERMS 512
/* Rows of up to K_STREAM_NB super-blocks are read in the order of ingot__stream_row (ns
 * interleaved streams, one row of each in turn: a row's terms do not depend on its neighbours,
 * so the bits stay those of one stream). Longer rows keep one stream: with four, rows of 8192
 * ran 0.87-0.94x, where rows of 1024 and 2816 ran 1.05-1.3x (docs/PERFORMANCE.md). */
#define K_STREAM_NB 16
FA void q45_k(const uint8_t *w, size_t ldw, size_t rows, const ingot__qx *x, bool acc, float *y,
              int kind)
{
    _Alignas(64) float t[QK_TERMS + 16]; /* (+16: read past the last row below, masked off) */
    size_t nb = x->nb, ns = nb <= K_STREAM_NB ? ingot__gemv_streams() : 1;
    if (nb > QK_TERMS) { /* long rows: one row at a time, in pieces of QK_TERMS terms */
        for (size_t r = 0; r < rows; r++, w += ldw) {
            __m512 lanes = _mm512_setzero_ps();
            for (size_t b = 0; b < nb; b += QK_TERMS) {
                size_t n = nb - b < QK_TERMS ? nb - b : QK_TERMS;
                k_terms(kind, &w, 1, b, n, x, t);
                lanes = k_lanes(lanes, t, n);
            }
            put(y + r, acc, hsum_f32(lanes));
        }
        return;
    }
    size_t per = QK_TERMS / nb;
    stream_heads(w, ldw, rows, ns, ingot__cpu_prefetch());
    const uint8_t *rp[QK_TERMS];
    size_t ri[QK_TERMS];
    /* ingot__stream_row's order from the first row of each sub-range (its closed form, cheaper
     * per row: 6% at K = 1024 in L1) */
    unsigned sh = ns == 8 ? 3 : ns == 4 ? 2 : ns == 2 ? 1 : 0;
    size_t first[8], full = rows >> sh << sh;
    for (size_t s = 0; s < ns; s++) first[s] = ingot__stream_row(rows, ns, s);
    memset(t + QK_TERMS, 0, 16 * sizeof(float));
    for (size_t r0 = 0; r0 < rows; r0 += per) {
        size_t n = rows - r0 < per ? rows - r0 : per;
        for (size_t i = 0; i < n; i++) {
            size_t idx = r0 + i;
            ri[i] = idx < full ? first[idx & (ns - 1)] + (idx >> sh)
                               : ingot__stream_row(rows, ns, idx);
            rp[i] = w + ri[i] * ldw;
        }
        k_terms(kind, rp, n, 0, nb, x, t);
        size_t i = 0;
        for (; i + 16 <= n; i += 16) { /* sixteen rows' lanes summed by one tree */
            __m512 l[16];
            if (nb < 16) { /* a row's terms in one vector: a plain load, the lanes past nb
                            * zeroed (k_lanes' masked load cost 6% at K = 1024; +0 added as
                            * there, so -0 terms give the same bits) */
                const __mmask16 mk = (__mmask16)((1u << nb) - 1);
                UNROLL
                for (int k = 0; k < 16; k++) {
                    __m512 v = _mm512_maskz_mov_ps(mk, _mm512_loadu_ps(t + (i + k) * nb));
                    l[k] = _mm512_add_ps(_mm512_setzero_ps(), v);
                }
            } else {
                UNROLL
                for (int k = 0; k < 16; k++)
                    l[k] = k_lanes(_mm512_setzero_ps(), t + (i + k) * nb, nb);
            }
            _Alignas(64) float s16[16];
            _mm512_store_ps(s16, sum16x16_ps(l));
            for (int k = 0; k < 16; k++) put(y + ri[i + k], acc, s16[k]);
        }
        for (; i < n; i++)
            put(y + ri[i], acc, hsum_f32(k_lanes(_mm512_setzero_ps(), t + i * nb, nb)));
    }
}

TGT static void QN(q4_k)(const uint8_t *w, size_t ldw, size_t rows, const ingot__qx *x,
                         const float *wscale, bool acc, float *y)
{
    (void)wscale;
    q45_k(w, ldw, rows, x, acc, y, 0);
}

TGT static void QN(q5_k)(const uint8_t *w, size_t ldw, size_t rows, const ingot__qx *x,
                         const float *wscale, bool acc, float *y)
{
    (void)wscale;
    q45_k(w, ldw, rows, x, acc, y, 1);
}

#if VNNI
TGT static void QN(q4kr)(const uint8_t *w, size_t ldw, size_t rows, const ingot__qx *x,
                        const float *wscale, bool acc, float *y)
{
    (void)wscale;
    q45_k(w, ldw, rows, x, acc, y, 2);
}
#endif

/* int16 lanes 8j .. 8j + 7 = lane g + j, for j < 4 (a vpermw index). */
F __m512i four16(int g)
{
    return _mm512_inserti64x4(
        _mm512_castsi256_si512(_mm256_inserti128_si256(
            _mm256_castsi128_si256(_mm_set1_epi16((short)g)), _mm_set1_epi16((short)(g + 1)), 1)),
        _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_set1_epi16((short)(g + 2))),
                                _mm_set1_epi16((short)(g + 3)), 1),
        1);
}

/* One Q6_K super-block b of a row (blk = its first byte) into sum. */
FA __m512 q6_k_sb(const uint8_t *blk, const ingot__qx *x, size_t b, __m512 sum, bool pf)
{
    const __m512i m4 = _mm512_set1_epi8(15), m30 = _mm512_set1_epi8(0x30);
    const __m512i sh_a = two16(4, 2), sh_b = two16(0, 2);
    const int8_t *xq = x->q + b * 256;
    PF(blk, 0);
    PF(blk, 64);
    PF(blk, 128);
    PF(blk, 192);
    __m256i sc16 = _mm256_cvtepi8_epi16(ld128(blk + 192));
    __m512i scz = _mm512_castsi256_si512(sc16);
    __m512i A = _mm512_setzero_si512();
    UNROLL
    for (int h = 0; h < 2; h++) {
        __m512i l = ld512(blk + 64 * h); /* ql bytes of elements 128h + 0..63 */
        __m512i qh = _mm512_broadcast_i64x4(ld256(blk + 128 + 32 * h));
        /* [r 0..31 | r 32..63]: qh bits 0-1 | bits 2-3 as bits 4-5 */
        __m512i qa = _mm512_or_si512(_mm512_and_si512(l, m4),
                                     _mm512_and_si512(_mm512_sllv_epi16(qh, sh_a), m30));
        /* [r 64..95 | r 96..127]: high nibbles, qh bits 4-5 | bits 6-7 */
        __m512i qb = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l, 4), m4),
                                     _mm512_and_si512(_mm512_srlv_epi16(qh, sh_b), m30));
        A = dot_u8_scaled(A, qa, ld512(xq + 128 * h),
                          _mm512_permutexvar_epi16(four16(8 * h), scz));
        A = dot_u8_scaled(A, qb, ld512(xq + 128 * h + 64),
                          _mm512_permutexvar_epi16(four16(8 * h + 4), scz));
    }
    __m256i off = _mm256_madd_epi16(sc16, ld256(x->bs + b * 16));
    A = _mm512_sub_epi32(A, _mm512_zextsi256_si512(_mm256_slli_epi32(off, 5)));
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(A), _mm512_set1_ps(f16(blk + 208) * x->d[b]), sum);
}

/* ns (2, 4 or 8: a constant once inlined) rows r[0..ns) read in turn, a super-block of each. */
FA void q6_k_group(const uint8_t *w, size_t ldw, const size_t *r, size_t ns, const ingot__qx *x,
                   bool acc, float *y, bool pf)
{
    __m512 sum[8];
    for (size_t s = 0; s < ns; s++) sum[s] = _mm512_setzero_ps();
    for (size_t b = 0; b < x->nb; b++)
        for (size_t s = 0; s < ns; s++)
            sum[s] = q6_k_sb(w + r[s] * ldw + b * 210, x, b, sum[s], pf);
    for (size_t s = 0; s < ns; s++) put(y + r[s], acc, hsum_f32(sum[s]));
}

TGT static void QN(q6_k)(const uint8_t *w, size_t ldw, size_t rows, const ingot__qx *x,
                         const float *wscale, bool acc, float *y)
{
    const bool pf = ingot__cpu_prefetch();
    (void)wscale;
    size_t ns = ingot__gemv_streams(), g = rows / ns * ns, r[8];
    stream_heads(w, ldw, rows, ns, pf);
    for (size_t i = 0; ns > 1 && i < g; i += ns) { /* as in QN(q8_0) */
        for (size_t s = 0; s < ns; s++) r[s] = ingot__stream_row(rows, ns, i + s);
        if (ns == 8) q6_k_group(w, ldw, r, 8, x, acc, y, pf);
        else if (ns == 4) q6_k_group(w, ldw, r, 4, x, acc, y, pf);
        else q6_k_group(w, ldw, r, 2, x, acc, y, pf);
    }
    for (size_t i = ns > 1 ? g : 0; i < rows; i++) {
        size_t ri = ingot__stream_row(rows, ns, i);
        __m512 sum = _mm512_setzero_ps();
        for (size_t b = 0; b < x->nb; b++) sum = q6_k_sb(w + ri * ldw + b * 210, x, b, sum, pf);
        put(y + ri, acc, hsum_f32(sum));
    }
}

#undef F
#undef FA
#undef UNROLL
#undef SHI
#undef TREE16
#undef QK_TERMS
#undef K_STREAM_NB
