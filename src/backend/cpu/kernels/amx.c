/*
 * amx.c - the AMX level's tile GEMMs for prefill-sized batches (16 or more activation rows):
 * int8 weights with per-row scales and Q8_0 on quantized activations (TDPBSSD); BF16 weights in
 * place, F16 split exactly into two bf16 halves and the block types decoded and rounded to
 * bf16, 32 rows at a time, against f32 activations split in two (TDPBF16PS; accuracy in amx.h).
 * Intel SDM vol. 1 ch. 18 (AMX) and vol. 2 (LDTILECFG, TDP*).
 */
#include <stdatomic.h>
#include <string.h>

#include "cpu/kernels/amx.h"
#include "ingot/quant.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define AMX_TGT                                                                                    \
    __attribute__((target("amx-tile,amx-int8,amx-bf16,avx512f,avx512bw,avx512vl,avx512dq,"         \
                          "avx512bf16,avx2,fma,f16c")))

typedef struct {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tilecfg;

/* How a weight type meets the tiles. */
typedef enum {
    K_I8,   /* A = 16 weight rows x 64 bytes in place; one result per row and activation row */
    K_Q8,   /* A = 16 Q8_0 rows x one 32-byte block in place, scaled per block in f32 */
    K_BF16, /* A = 16 rows x 32 bf16 in place; B = activations hi and lo */
    K_DEC   /* A = bf16 panels of 32 decoded weight rows (F16: hi and lo); B = activations hi
             * and lo (dec_tiles) */
} amx_kind;

/* Tile shapes per kind; rows of A and C are the task's weight rows (ar <= 16). */
AMX_TGT static void configure(amx_kind kind, int ar)
{
    _Alignas(64) tilecfg c;
    memset(&c, 0, sizeof c);
    c.palette = 1;
    if (kind == K_Q8) { /* 0, 1: A (ar x 32); 2, 3: B (8 x 64); 4 to 7: C (ar x 64) */
        for (int t = 0; t < 2; t++) {
            c.rows[t] = (uint8_t)ar, c.colsb[t] = 32;
            c.rows[2 + t] = 8, c.colsb[2 + t] = 64;
            c.rows[4 + t] = c.rows[6 + t] = (uint8_t)ar, c.colsb[4 + t] = c.colsb[6 + t] = 64;
        }
    } else if (kind == K_DEC) { /* every tile 16 x 64 (dec_tiles) */
        for (int t = 0; t < 8; t++) c.rows[t] = 16, c.colsb[t] = 64;
    } else { /* 0, 1: A (ar x 64); 2, 3: B (16 x 64); 4: C (ar x 64) */
        for (int t = 0; t < 2; t++) {
            c.rows[t] = (uint8_t)ar, c.colsb[t] = 64;
            c.rows[2 + t] = 16, c.colsb[2 + t] = 64;
        }
        c.rows[4] = (uint8_t)ar, c.colsb[4] = 64;
    }
    _tile_loadconfig(&c);
}

typedef struct {
    ingot_dtype wt;
    amx_kind kind;
    size_t M, K, ldw, nx, nxb, ldy, nb, kb; /* nb: 32-blocks per row; kb: B bytes per group */
    const uint8_t *W;
    const float *wscale;
    uint8_t *B;       /* nxb groups of kb bytes (VNNI layout: 4 int8 or 2 bf16 per 32 bits) */
    float *dx;        /* I8: [nxb][16]; K_Q8: [nxb][nb][16] activation scales */
    const void *xq;   /* packing: quantized rows (I8, K_Q8), xstride bytes apart */
    const float *X;   /* packing: f32 rows (K_BF16, K_DEC), ldx floats apart */
    size_t xstride, ldx, nsc;
    size_t lead;      /* bytes of worker 0's scratch before its panel (B, dx) */
    size_t panel;     /* per-worker panel bytes */
    ingot__pool *pool;
    bool acc;
    bool rp;          /* Q4_K rows repacked by ingot__q4kr_repack (ingot__amx_gemm_q4kr) */
    atomic_int failed;
    float *Y;
} amx_job;

/* f[m * 16 + n] (weight row m, activation row n of the group) into Y[n0 + n][m0 + m]: a 16 x 16
 * transpose in registers (32-bit, 64-bit, then two 128-bit lane steps; rows past mr read as 0),
 * then one masked row store per activation row (16 gathers instead: 6% of a Q8_0 prefill). */
AMX_TGT static void put_t(const amx_job *j, size_t m0, size_t mr, size_t n0, const float *f)
{
    size_t nr = j->nx - n0 < 16 ? j->nx - n0 : 16;
    __mmask16 mk = (__mmask16)(mr >= 16 ? 0xffffu : (1u << mr) - 1);
    __m512 r[16], t[16];
    for (size_t i = 0; i < 16; i++)
        r[i] = i < mr ? _mm512_load_ps(f + 16 * i) : _mm512_setzero_ps();
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; i++) {
        __m512d a = _mm512_castps_pd(t[4 * i]), b = _mm512_castps_pd(t[4 * i + 2]);
        __m512d c = _mm512_castps_pd(t[4 * i + 1]), d = _mm512_castps_pd(t[4 * i + 3]);
        r[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, b));
        r[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, b));
        r[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(c, d));
        r[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(c, d));
    }
    for (int i = 0; i < 2; i++)
        for (int q = 0; q < 4; q++) {
            t[8 * i + q] = _mm512_shuffle_f32x4(r[8 * i + q], r[8 * i + 4 + q], 0x88);
            t[8 * i + 4 + q] = _mm512_shuffle_f32x4(r[8 * i + q], r[8 * i + 4 + q], 0xdd);
        }
    for (int q = 0; q < 8; q++) { /* r[n]: column n of f */
        r[q] = _mm512_shuffle_f32x4(t[q], t[8 + q], 0x88);
        r[8 + q] = _mm512_shuffle_f32x4(t[q], t[8 + q], 0xdd);
    }
    for (size_t n = 0; n < nr; n++) {
        float *y = j->Y + (n0 + n) * j->ldy + m0;
        __m512 v = r[n];
        if (j->acc) v = _mm512_add_ps(_mm512_maskz_loadu_ps(mk, y), v);
        _mm512_mask_storeu_ps(y, mk, v);
    }
}

AMX_TGT static void i8_block(const amx_job *j, size_t m0, size_t mr, size_t g)
{
    _Alignas(64) int32_t c[256];
    _Alignas(64) float f[256];
    const uint8_t *a = j->W + m0 * j->ldw, *b = j->B + g * j->kb;
    _tile_zero(4);
    for (size_t k = 0; k < j->K; k += 64) {
        _tile_loadd(0, a + k, (long)j->ldw);
        _tile_loadd(2, b + k * 16, 64);
        _tile_dpbssd(4, 0, 2);
    }
    _tile_stored(4, c, 64);
    __m512 dx = _mm512_loadu_ps(j->dx + g * 16);
    for (size_t m = 0; m < mr; m++) /* the same formula as every level's int8 kernel */
        _mm512_store_ps(f + m * 16,
                        _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_load_si512(c + m * 16)),
                                      _mm512_mul_ps(_mm512_set1_ps(j->wscale[m0 + m]), dx)));
    put_t(j, m0, mr, g * 16, f);
}

/* The f32 step of one 32-block: acc[m] += c[m] * (dx * s1[m]), as the dots scale a block. */
#define BLK_SCALE(cb, blk)                                                                         \
    do {                                                                                           \
        __m512 dxv = _mm512_loadu_ps(dx + (blk) * 16);                                             \
        const float *w1 = s1 + (blk) * 16;                                                         \
        _Pragma("GCC unroll 16") for (int m = 0; m < 16; m++)                                      \
        {                                                                                          \
            __m512 v = _mm512_cvtepi32_ps(_mm512_load_si512((cb) + m * 16));                      \
            acc[m] = _mm512_fmadd_ps(v, _mm512_mul_ps(dxv, _mm512_set1_ps(w1[m])), acc[m]);      \
        }                                                                                          \
    } while (0)

/* One block step on the tiles: C(tc) = A(ta) . B(tb), stored to cb. */
#define BLK_TILES(ta, tb, tc, cb, blk)                                                             \
    do {                                                                                           \
        _tile_zero(tc);                                                                            \
        _tile_loadd(ta, a + (blk) * astep, (long)lda);                                             \
        _tile_loadd(tb, b + (blk) * 512, 64);                                                      \
        _tile_dpbssd(tc, ta, tb);                                                                  \
        _tile_stored(tc, cb, 64);                                                                  \
    } while (0)

/* 16 Q8_0 weight rows (a: block 0 of row 0 in place, rows lda bytes apart, blocks astep
 * apart; s1: the rows' block scales, [nb][16]) against activation group g. Four blocks at a
 * time go through the tiles (four C tiles, four result buffers) before their f32 steps: a
 * vector load waits for the tile store it reads, so the stores are issued well ahead. A store
 * per 32-block still bounds this path (about 95 ns per 16 x 16 x 32 step, against 21 for three
 * bf16 products): it serves callers without f32 activations. */
AMX_TGT static void q8_block(const amx_job *j, const uint8_t *a, size_t lda, size_t astep,
                             const float *s1, size_t m0, size_t mr, size_t g)
{
    _Alignas(64) int32_t c0[256], c1[256], c2[256], c3[256];
    _Alignas(64) float f[256];
    if (mr < 16) { /* the rows past mr (scales 0) are computed but never written out */
        memset(c0, 0, sizeof c0);
        memset(c1, 0, sizeof c1);
        memset(c2, 0, sizeof c2);
        memset(c3, 0, sizeof c3);
    }
    size_t nb = j->nb;
    const uint8_t *b = j->B + g * j->kb;
    const float *dx = j->dx + g * nb * 16;
    __m512 acc[16];
    for (int m = 0; m < 16; m++) acc[m] = _mm512_setzero_ps();
    size_t blk = 0;
    for (; blk + 4 <= nb; blk += 4) {
        BLK_TILES(0, 2, 4, c0, blk);
        BLK_TILES(1, 3, 5, c1, blk + 1);
        BLK_TILES(0, 2, 6, c2, blk + 2);
        BLK_TILES(1, 3, 7, c3, blk + 3);
        BLK_SCALE(c0, blk);
        BLK_SCALE(c1, blk + 1);
        BLK_SCALE(c2, blk + 2);
        BLK_SCALE(c3, blk + 3);
    }
    for (; blk < nb; blk++) {
        BLK_TILES(0, 2, 4, c0, blk);
        BLK_SCALE(c0, blk);
    }
    for (int m = 0; m < 16; m++) _mm512_store_ps(f + m * 16, acc[m]);
    put_t(j, m0, mr, g * 16, f);
}

AMX_TGT static inline float f16f(const uint8_t *p) /* exact, as ingot__kq_f16_to_f32 */
{
    uint16_t h;
    memcpy(&h, p, 2);
    return _cvtsh_ss(h);
}

/* Rows [m0, m0 + mr) of Q8_0 weights: their block scales as f32, [nb][16] (zero past mr). */
AMX_TGT static void q8_scales(const amx_job *j, size_t m0, size_t mr, float *s1)
{
    memset(s1, 0, j->nb * 16 * sizeof(float));
    for (size_t m = 0; m < mr; m++) {
        const uint8_t *w = j->W + (m0 + m) * j->ldw;
        for (size_t b = 0; b < j->nb; b++) s1[b * 16 + m] = f16f(w + b * 34);
    }
}

/* 16 BF16 weight rows in place (A = a, rows lda bytes apart) against every activation group
 * (B = the activations' hi and lo halves): w xh + w xl. k runs in chunks of KC whose A stays in
 * L1 while every group meets it; each group's f32 result waits in cbuf ([nxb][16][16]) between
 * chunks (stored and reloaded exactly: the sums run in the same order as in one pass). */
#define KC 256
AMX_TGT static void bf16_tiles(const amx_job *j, const uint8_t *a, long lda, size_t m0, size_t mr,
                               float *cbuf)
{
    size_t K = j->K, half = j->kb / 2;
    for (size_t k0 = 0; k0 < K; k0 += KC) {
        size_t k1 = K - k0 < KC ? K : k0 + KC;
        for (size_t g = 0; g < j->nxb; g++) {
            float *cg = cbuf + g * 256;
            const uint8_t *b = j->B + g * j->kb;
            if (k0 == 0) _tile_zero(4);
            else _tile_loadd(4, cg, 64);
            for (size_t k = k0; k < k1; k += 32) { /* 32 bf16 = 64 bytes of a row */
                _tile_loadd(0, a + 2 * k, lda);
                _tile_loadd(2, b + k * 32, 64);
                _tile_dpbf16ps(4, 0, 2);
                _tile_loadd(3, b + half + k * 32, 64);
                _tile_dpbf16ps(4, 0, 3);
            }
            _tile_stored(4, cg, 64);
        }
    }
    for (size_t g = 0; g < j->nxb; g++) put_t(j, m0, mr, g * 16, cbuf + g * 256);
}

/* K_DEC: 32 decoded weight rows (two 16-row panel pairs ph0 / pl0 and ph1 / pl1, in chunks of
 * KC2 columns: [K / KC2][16][KC2] bf16) against every activation group, three products each
 * (wh xh + wh xl + wl xh), or two (wh xh + wh xl) where the weights were rounded to one bf16
 * (pl0, pl1 NULL): each B load (the activations, from L2) serves two A pairs, whose chunk stays
 * in L1 while every group meets it. Tiles 0, 1: A hi / lo of rows 0-15; 2, 3: B hi / lo; 4, 5:
 * A hi / lo of rows 16-31; 6, 7: C. (Rows K apart instead of chunks: the 16 rows of a tile fall
 * into two L1 sets, 4-5x slower.) */
#define KC2 128
#define CHUNKED(k) (((k) / KC2) * 16 * KC2 + (k) % KC2) /* element k of row 0 in a panel */
AMX_TGT static void dec_tiles(const amx_job *j, const uint8_t *ph0, const uint8_t *pl0,
                              const uint8_t *ph1, const uint8_t *pl1, size_t m0, size_t mr,
                              float *cbuf)
{
    size_t K = j->K, half = j->kb / 2;
    const long ld = 2 * KC2;
    for (size_t k0 = 0; k0 < K; k0 += KC2) {
        size_t k1 = K - k0 < KC2 ? K : k0 + KC2;
        for (size_t g = 0; g < j->nxb; g++) {
            float *c0 = cbuf + g * 512, *c1 = c0 + 256;
            const uint8_t *b = j->B + g * j->kb;
            if (k0 == 0) {
                _tile_zero(6);
                _tile_zero(7);
            } else {
                _tile_loadd(6, c0, 64);
                _tile_loadd(7, c1, 64);
            }
            for (size_t k = k0; pl0 && k < k1; k += 32) {
                _tile_loadd(2, b + k * 32, 64);
                size_t o = 2 * CHUNKED(k);
                _tile_loadd(0, ph0 + o, ld);
                _tile_dpbf16ps(6, 0, 2);
                _tile_loadd(4, ph1 + o, ld);
                _tile_dpbf16ps(7, 4, 2);
                _tile_loadd(1, pl0 + o, ld);
                _tile_dpbf16ps(6, 1, 2);
                _tile_loadd(5, pl1 + o, ld);
                _tile_dpbf16ps(7, 5, 2);
                _tile_loadd(3, b + half + k * 32, 64);
                _tile_dpbf16ps(6, 0, 3);
                _tile_dpbf16ps(7, 4, 3);
            }
            for (size_t k = k0; !pl0 && k < k1; k += 32) { /* weights rounded to bf16 */
                _tile_loadd(2, b + k * 32, 64);
                size_t o = 2 * CHUNKED(k);
                _tile_loadd(0, ph0 + o, ld);
                _tile_dpbf16ps(6, 0, 2);
                _tile_loadd(4, ph1 + o, ld);
                _tile_dpbf16ps(7, 4, 2);
                _tile_loadd(3, b + half + k * 32, 64);
                _tile_dpbf16ps(6, 0, 3);
                _tile_dpbf16ps(7, 4, 3);
            }
            _tile_stored(6, c0, 64);
            _tile_stored(7, c1, 64);
        }
    }
    for (size_t g = 0; g < j->nxb; g++) {
        put_t(j, m0, mr < 16 ? mr : 16, g * 16, cbuf + g * 512);
        if (mr > 16) put_t(j, m0 + 16, mr - 16, g * 16, cbuf + g * 512 + 256);
    }
}

/* f32 values v[16] into h[o..] as bf16 hi (the top 16 bits: truncation) and l[o..] as lo =
 * rne(v - hi) (0 where hi is not finite): hi + lo holds 16 significant bits, all 11 of an f16.
 * l NULL: h = rne(v) alone. */
AMX_TGT static inline void split16(__m512 v, uint16_t *h, uint16_t *l, size_t o)
{
    if (!l) {
        _mm256_storeu_si256((__m256i *)(void *)(h + o), (__m256i)_mm512_cvtneps_pbh(v));
        return;
    }
    __m512 hf = _mm512_castsi512_ps(
        _mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32((int)0xffff0000u)));
    __mmask16 fin =
        _mm512_cmp_ps_mask(_mm512_sub_ps(hf, hf), _mm512_setzero_ps(), _CMP_EQ_OQ);
    __m256bh lb = _mm512_cvtneps_pbh(_mm512_maskz_sub_ps(fin, v, hf));
    _mm256_storeu_si256((__m256i *)(void *)(h + o),
                        _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_castps_si512(hf), 16)));
    _mm256_storeu_si256((__m256i *)(void *)(l + o), (__m256i)lb);
}

/* Bytes of one panel (16 rows, K columns in chunks of KC2). */
static size_t panel_elems(size_t K) { return (K + KC2 - 1) / KC2 * 16 * KC2; }

/* Rows [m0, m0 + mr) of the weights decoded to f32 (F16 by vcvtph2ps, each block type by its
 * own AVX-512 decoder with ingot_dequantize's formula; any other type by ingot_dequantize into
 * rowf) and split into bf16 panels ph / pl (dec_tiles' chunked layout), zero rows past mr. */
AMX_TGT static void half_panel(const amx_job *j, size_t m0, size_t mr, uint16_t *ph, uint16_t *pl,
                               float *rowf)
{
    size_t K = j->K;
    if (mr < 16) {
        memset(ph, 0, panel_elems(K) * 2);
        if (pl) memset(pl, 0, panel_elems(K) * 2);
    }
    for (size_t m = 0; m < mr; m++) {
        const uint8_t *w = j->W + (m0 + m) * j->ldw;
        uint16_t *h = ph + m * KC2, *l = pl ? pl + m * KC2 : NULL;
        if (j->wt == INGOT_DTYPE_F16) {
            for (size_t k = 0; k < K; k += 16)
                split16(_mm512_cvtph_ps(
                            _mm256_loadu_si256((const __m256i *)(const void *)(w + 2 * k))),
                        h, l, CHUNKED(k));
            continue;
        }
        if (j->wt == INGOT_DTYPE_Q8_0) { /* d * q, as ingot_dequantize */
            for (size_t k = 0; k < K; k += 32) {
                const uint8_t *blk = w + k / 32 * 34;
                __m512 d = _mm512_set1_ps(f16f(blk));
                for (size_t i = 0; i < 32; i += 16) {
                    __m128i q = _mm_loadu_si128((const __m128i *)(const void *)(blk + 2 + i));
                    split16(_mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q))), h,
                            l, CHUNKED(k + i));
                }
            }
            continue;
        }
        if (j->wt == INGOT_DTYPE_Q4_0) { /* d (q - 8), as ingot_dequantize */
            for (size_t k = 0; k < K; k += 32) {
                const uint8_t *blk = w + k / 32 * 18;
                __m512 d = _mm512_set1_ps(f16f(blk));
                __m128i q = _mm_loadu_si128((const __m128i *)(const void *)(blk + 2));
                __m128i lo = _mm_and_si128(q, _mm_set1_epi8(15));
                __m128i hi = _mm_and_si128(_mm_srli_epi16(q, 4), _mm_set1_epi8(15));
                const __m512i eight = _mm512_set1_epi32(8);
                __m512i il = _mm512_sub_epi32(_mm512_cvtepu8_epi32(lo), eight);
                __m512i ih = _mm512_sub_epi32(_mm512_cvtepu8_epi32(hi), eight);
                __m512 vl = _mm512_cvtepi32_ps(il), vh = _mm512_cvtepi32_ps(ih);
                split16(_mm512_mul_ps(d, vl), h, l, CHUNKED(k));
                split16(_mm512_mul_ps(d, vh), h, l, CHUNKED(k + 16));
            }
            continue;
        }
        if (j->rp) { /* repacked Q4_K: the same values as below, read from their new places */
            for (size_t k = 0; k < K; k += 256) {
                const uint8_t *blk = w + k / 256 * 144, *qs = blk + 16;
                uint64_t scf = 0, mnf = 0;
                for (int i = 0; i < 6; i++) {
                    scf |= (uint64_t)blk[i] << 8 * i;
                    mnf |= (uint64_t)blk[8 + i] << 8 * i;
                }
                float d = f16f(blk + 6), dmin = f16f(blk + 14);
                for (size_t sb = 0; sb < 8; sb++) {
                    __m512 s1 = _mm512_set1_ps(d * (float)(scf >> 6 * sb & 63));
                    __m512 s2 = _mm512_set1_ps(dmin * (float)(mnf >> 6 * sb & 63));
                    __m128i q = _mm_loadu_si128(
                        (const __m128i *)(const void *)(qs + sb / 4 * 64 + sb % 4 * 16));
                    __m128i lo = _mm_and_si128(q, _mm_set1_epi8(15));
                    __m128i hi = _mm_and_si128(_mm_srli_epi16(q, 4), _mm_set1_epi8(15));
                    __m512 vl = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(lo));
                    __m512 vh = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(hi));
                    size_t e = k + sb * 32;
                    split16(_mm512_sub_ps(_mm512_mul_ps(s1, vl), s2), h, l, CHUNKED(e));
                    split16(_mm512_sub_ps(_mm512_mul_ps(s1, vh), s2), h, l, CHUNKED(e + 16));
                }
            }
            continue;
        }
        if (j->wt == INGOT_DTYPE_Q4_K || j->wt == INGOT_DTYPE_Q5_K) {
            /* (d sc) q - (dmin mn) per 32, as ingot_dequantize; Q5_K: bit k of qh[l] is the
             * fifth bit of element 32 k + l */
            bool five = j->wt == INGOT_DTYPE_Q5_K;
            for (size_t k = 0; k < K; k += 256) {
                const uint8_t *blk = w + k / 256 * (five ? 176 : 144), *qh = blk + 16;
                const uint8_t *qs = blk + (five ? 48 : 16);
                uint8_t sc[8], mn[8];
                ingot__k_scale_min(blk + 4, sc, mn);
                float d = f16f(blk), dmin = f16f(blk + 2);
                for (size_t sb = 0; sb < 8; sb++) {
                    __m512 s1 = _mm512_set1_ps(d * (float)sc[sb]);
                    __m512 s2 = _mm512_set1_ps(dmin * (float)mn[sb]);
                    for (size_t i = 0; i < 32; i += 16) {
                        __m128i q = _mm_loadu_si128(
                            (const __m128i *)(const void *)(qs + sb / 2 * 32 + i));
                        if (sb & 1) q = _mm_srli_epi16(q, 4);
                        q = _mm_and_si128(q, _mm_set1_epi8(15));
                        if (five) {
                            __m128i hb = _mm_loadu_si128((const __m128i *)(const void *)(qh + i));
                            hb = _mm_and_si128(_mm_srl_epi16(hb, _mm_cvtsi32_si128((int)sb)),
                                               _mm_set1_epi8(1));
                            q = _mm_or_si128(q, _mm_slli_epi16(hb, 4));
                        }
                        __m512 v = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(q));
                        size_t e = k + sb * 32 + i;
                        split16(_mm512_sub_ps(_mm512_mul_ps(s1, v), s2), h, l, CHUNKED(e));
                    }
                }
            }
            continue;
        }
        if (j->wt == INGOT_DTYPE_Q6_K) { /* (d sc) (q - 32) per 16, as ingot_dequantize */
            const __m128i m4 = _mm_set1_epi8(15), m2 = _mm_set1_epi8(3);
            for (size_t k = 0; k < K; k += 256) {
                const uint8_t *blk = w + k / 256 * 210, *ql = blk, *qh = blk + 128;
                const int8_t *sc = (const int8_t *)(blk + 192);
                float d = f16f(blk + 208);
                for (size_t e = 0; e < 256; e += 16) { /* e = h 128 + s 32 + l */
                    size_t hh = e / 128, ss = e % 128 / 32, o = e % 32;
                    __m128i lo = _mm_loadu_si128(
                        (const __m128i *)(const void *)(ql + hh * 64 + (ss & 1) * 32 + o));
                    __m128i hi = _mm_loadu_si128((const __m128i *)(const void *)(qh + hh * 32 + o));
                    __m128i ls = _mm_cvtsi32_si128(4 * (int)(ss >> 1));
                    lo = _mm_and_si128(_mm_srl_epi16(lo, ls), m4);
                    hi = _mm_and_si128(_mm_srl_epi16(hi, _mm_cvtsi32_si128(2 * (int)ss)), m2);
                    __m512i q = _mm512_cvtepu8_epi32(_mm_or_si128(lo, _mm_slli_epi16(hi, 4)));
                    __m512 v = _mm512_cvtepi32_ps(_mm512_sub_epi32(q, _mm512_set1_epi32(32)));
                    split16(_mm512_mul_ps(_mm512_set1_ps(d * (float)sc[e / 16]), v), h, l,
                            CHUNKED(k + e));
                }
            }
            continue;
        }
        (void)ingot_dequantize(j->wt, w, j->ldw, rowf, K, NULL);
        for (size_t k = 0; k < K; k += 16)
            split16(_mm512_loadu_ps(rowf + k), h, l, CHUNKED(k));
    }
}

AMX_TGT static void amx_task(void *ctx, size_t t, unsigned worker)
{
    amx_job *j = ctx;
    size_t rows = j->kind == K_DEC ? 32 : 16; /* weight rows per task */
    size_t m0 = t * rows, mr = j->M - m0 < rows ? j->M - m0 : rows, K = j->K;
    uint8_t *panel = NULL;
    if (j->panel) { /* grown before the job (ingot__amx_gemm): no allocation here */
        uint8_t *s = ingot__pool_scratch(j->pool, worker, (worker ? 0 : j->lead) + j->panel);
        if (!s) {
            atomic_store(&j->failed, 1);
            return;
        }
        panel = s + (worker ? 0 : j->lead);
    }
    configure(j->kind, j->kind == K_DEC ? 16 : (int)mr); /* panels are zero-padded to 16 rows */
    if (j->kind == K_Q8) {
        float *s1 = (float *)(void *)panel;
        q8_scales(j, m0, mr, s1);
        for (size_t g = 0; g < j->nxb; g++)
            q8_block(j, j->W + m0 * j->ldw + 2, j->ldw, 34, s1, m0, mr, g);
    } else if (j->kind == K_DEC) {
        size_t pe = panel_elems(K);
        uint16_t *ph = (uint16_t *)(void *)panel, *pl = NULL, *ph1 = ph + pe, *pl1 = NULL;
        if (j->wt == INGOT_DTYPE_F16) /* F16: hi and lo; block types: one bf16 */
            pl = ph + pe, ph1 = pl + pe, pl1 = ph1 + pe;
        float *rowf = (float *)(void *)(ph1 + (pl1 ? 2 : 1) * pe), *cbuf = rowf + K;
        size_t mr1 = mr > 16 ? mr - 16 : 0;
        half_panel(j, m0, mr < 16 ? mr : 16, ph, pl, rowf);
        half_panel(j, m0 + 16, mr1, ph1, pl1, rowf);
        dec_tiles(j, (const uint8_t *)ph, (const uint8_t *)pl, (const uint8_t *)ph1,
                  (const uint8_t *)pl1, m0, mr, cbuf);
    } else if (j->kind == K_BF16) {
        bf16_tiles(j, j->W + m0 * j->ldw, (long)j->ldw, m0, mr, (float *)(void *)panel);
    } else {
        for (size_t g = 0; g < j->nxb; g++) i8_block(j, m0, mr, g);
    }
    _tile_release();
}

/* Group of up to 16 rows of 32-bit units (rows[n], K4 units each) into B: unit u of row n goes
 * to B[u * 64 + n * 4] (zero for rows past nr). */
AMX_TGT static void pack32(const uint8_t *const *rows, size_t nr, size_t K4, uint8_t *B)
{
    _Alignas(64) int64_t off[16];
    for (size_t n = 0; n < 16; n++) off[n] = n < nr ? (int64_t)(rows[n] - rows[0]) : 0;
    __mmask16 mk = (__mmask16)(nr >= 16 ? 0xffffu : (1u << nr) - 1);
    __m512i lo = _mm512_load_si512(off), hi = _mm512_load_si512(off + 8);
    __mmask8 mlo = (__mmask8)(mk & 0xff), mhi = (__mmask8)(mk >> 8);
    for (size_t u = 0; u < K4; u++) {
        const int *base = (const int *)(const void *)(rows[0] + u * 4);
        __m256i a = _mm512_mask_i64gather_epi32(_mm256_setzero_si256(), mlo, lo, base, 1);
        __m256i b = _mm512_mask_i64gather_epi32(_mm256_setzero_si256(), mhi, hi, base, 1);
        _mm512_store_si512(B + u * 64, _mm512_inserti64x4(_mm512_castsi256_si512(a), b, 1));
    }
}

/* f32 rows split into bf16 hi = rne(x) and lo = rne(x - hi) (0 where hi is not finite), into
 * th / tl (K bf16 each per row), then packed in pairs. */
AMX_TGT static void pack_bf16(const float *X, size_t ldx, size_t n0, size_t nr, size_t K,
                              uint16_t *th, uint16_t *tl, uint8_t *Bh, uint8_t *Bl)
{
    const uint8_t *rh[16] = {NULL}, *rl[16] = {NULL};
    for (size_t n = 0; n < nr; n++) {
        const float *x = X + (n0 + n) * ldx;
        uint16_t *h = th + n * K, *l = tl + n * K;
        for (size_t k = 0; k < K; k += 16) {
            __m512 v = _mm512_loadu_ps(x + k);
            __m256bh hb = _mm512_cvtneps_pbh(v);
            __m512 hf = _mm512_castsi512_ps(
                _mm512_slli_epi32(_mm512_cvtepu16_epi32((__m256i)hb), 16));
            __mmask16 fin = _mm512_cmp_ps_mask(_mm512_sub_ps(hf, hf), _mm512_setzero_ps(),
                                               _CMP_EQ_OQ);
            __m256bh lb = _mm512_cvtneps_pbh(_mm512_maskz_sub_ps(fin, v, hf));
            _mm256_storeu_si256((__m256i *)(void *)(h + k), (__m256i)hb);
            _mm256_storeu_si256((__m256i *)(void *)(l + k), (__m256i)lb);
        }
        rh[n] = (const uint8_t *)h, rl[n] = (const uint8_t *)l;
    }
    pack32(rh, nr, K / 2, Bh);
    pack32(rl, nr, K / 2, Bl);
}

/* Packs activation group g into B (and its scales into dx), in the worker's panel scratch
 * (grown beforehand) for the bf16 halves. */
AMX_TGT static void pack_task(void *ctx, size_t g, unsigned worker)
{
    amx_job *j = ctx;
    size_t K = j->K, n0 = g * 16, nr = j->nx - n0 < 16 ? j->nx - n0 : 16;
    uint8_t *Bg = j->B + g * j->kb;
    if (j->kind == K_BF16 || j->kind == K_DEC) {
        uint8_t *s = ingot__pool_scratch(j->pool, worker, (worker ? 0 : j->lead) + j->panel);
        if (!s) { /* cannot happen: grown beforehand */
            atomic_store(&j->failed, 1);
            return;
        }
        uint16_t *th = (uint16_t *)(void *)(s + (worker ? 0 : j->lead));
        pack_bf16(j->X, j->ldx, n0, nr, K, th, th + 16 * K, Bg, Bg + j->kb / 2);
        return;
    }
    const uint8_t *rows[16] = {NULL};
    float *dg = j->dx + g * j->nsc;
    if (nr < 16) memset(dg, 0, j->nsc * sizeof(float));
    for (size_t n = 0; n < nr; n++) {
        ingot__qx v;
        ingot__qx_view(j->wt, K, (const uint8_t *)j->xq + (n0 + n) * j->xstride, &v);
        rows[n] = (const uint8_t *)v.q;
        if (j->kind == K_I8) dg[n] = v.d[0];
        else
            for (size_t b = 0; b < j->nb; b++) dg[b * 16 + n] = v.d[b];
    }
    pack32(rows, nr, K / 4, Bg);
}

bool ingot__amx_ok(ingot_dtype wt, size_t K, size_t nx, bool have_f32)
{
    if (nx < 16 || !ingot__isa_supported(INGOT__ISA_AMX) || K == 0) return false;
    /* block types meet f32 activations from INGOT__QGEMM_DEQUANT_ROWS rows on, as at every
     * level; fewer rows keep the quantized activations of the dots (Q8_0: int8 tiles) */
    bool f32_rows = have_f32 && nx >= INGOT__QGEMM_DEQUANT_ROWS;
    switch (wt) {
    case INGOT_DTYPE_I8: return K % 64 == 0 && K <= 65536;
    case INGOT_DTYPE_Q8_0: return K % 32 == 0;
    case INGOT_DTYPE_BF16:
    case INGOT_DTYPE_F16: return K % 32 == 0 && have_f32;
    case INGOT_DTYPE_Q4_0: return K % 32 == 0 && f32_rows;
    case INGOT_DTYPE_Q4_K:
    case INGOT_DTYPE_Q5_K:
    case INGOT_DTYPE_Q6_K: return K % 256 == 0 && f32_rows;
    default: return false;
    }
}

static size_t up64(size_t n) { return (n + 63) & ~(size_t)63; }

/* One pass of at most NXC activation rows (ingot__amx_gemm splits longer batches: every weight
 * task streams all the packed activations, 4 bytes an element, which should stay in L2). */
#define NXC 256
static ingot_status amx_pass(ingot__pool *pool, amx_kind kind, ingot_dtype wt, size_t M,
                             size_t K, const void *W, size_t ldw, const float *wscale,
                             const void *xq, size_t xstride, const float *X, size_t ldx,
                             size_t nx, bool accumulate, float *Y, size_t ldy, bool rp)
{
    size_t nxb = (nx + 15) / 16, nb = K / 32;
    amx_job j = {.wt = wt, .M = M, .K = K, .ldw = ldw, .nx = nx, .nxb = nxb, .ldy = ldy,
                 .nb = nb, .W = W, .wscale = wscale, .pool = pool, .acc = accumulate, .Y = Y,
                 .rp = rp};
    atomic_init(&j.failed, 0);
    j.kind = kind;
    bool half = j.kind == K_BF16 || j.kind == K_DEC;
    j.kb = half ? K * 2 * 16 * 2 : K * 16;
    size_t nsc = j.kind == K_I8 ? 16 : nb * 16; /* activation scales per group */
    size_t bbytes = up64(nxb * j.kb), dbytes = half ? 0 : up64(nxb * nsc * sizeof(float));
    j.lead = bbytes + dbytes;
    size_t npanels = wt == INGOT_DTYPE_F16 ? 4 : 2;
    j.panel = j.kind == K_Q8     ? nb * 16 * sizeof(float)
              : j.kind == K_DEC  ? npanels * panel_elems(K) * 2 + K * sizeof(float) + nxb * 2048
              : j.kind == K_BF16 ? nxb * 1024
                                 : 0;
    if (half && j.panel < 16 * K * 2 * 2) j.panel = 16 * K * 2 * 2; /* pack_task's halves */
    /* Every worker's scratch grown now: the tasks then cannot fail halfway through Y. */
    bool ok = true;
    for (unsigned w = 1; j.panel && w < ingot__pool_threads(pool); w++)
        ok = ok && ingot__pool_scratch(pool, w, j.panel);
    uint8_t *s = ok ? ingot__pool_scratch(pool, 0, j.lead + j.panel) : NULL;
    if (!s) return INGOT_NOMEM;
    j.B = s, j.dx = half ? NULL : (float *)(void *)(s + bbytes);
    j.xq = xq, j.X = X, j.xstride = xstride, j.ldx = ldx, j.nsc = nsc;
    ingot__pool_run(pool, pack_task, &j, nxb); /* one group of 16 activation rows a task */
    size_t rows = j.kind == K_DEC ? 32 : 16;
    ingot__pool_run(pool, amx_task, &j, (M + rows - 1) / rows);
    return atomic_load(&j.failed) ? INGOT_NOMEM : INGOT_OK;
}

static ingot_status amx_gemm(ingot__pool *pool, ingot_dtype wt, size_t M, size_t K,
                             const void *W, size_t ldw, const float *wscale, const void *xq,
                             size_t xstride, const float *X, size_t ldx, size_t nx,
                             bool accumulate, float *Y, size_t ldy, bool rp)
{
    if (M == 0 || nx == 0) return INGOT_OK;
    ingot__pool *own = NULL;
    if (!pool && !(pool = own = ingot__pool_create(NULL, 1))) return INGOT_NOMEM;
    /* Q8_0 with f32 activations (32 rows or more): decoded as the other block types (2-4x
     * faster than its int8 tiles, and closer to the exact result). Chosen from the whole
     * batch: a short last pass takes the same route (and needs no xq). */
    bool q8_f32 = X && nx >= INGOT__QGEMM_DEQUANT_ROWS;
    amx_kind kind = wt == INGOT_DTYPE_I8                 ? K_I8
                    : wt == INGOT_DTYPE_Q8_0 && !q8_f32 ? K_Q8
                    : wt == INGOT_DTYPE_BF16              ? K_BF16
                                                          : K_DEC;
    /* The first pass is the longest: its scratch serves the rest, so only it can fail (before
     * anything is written). */
    ingot_status st = INGOT_OK;
    for (size_t n0 = 0; n0 < nx && st == INGOT_OK; n0 += NXC) {
        size_t n = nx - n0 < NXC ? nx - n0 : NXC;
        st = amx_pass(pool, kind, wt, M, K, W, ldw, wscale,
                      xq ? (const uint8_t *)xq + n0 * xstride : NULL, xstride,
                      X ? X + n0 * ldx : NULL, ldx, n, accumulate, Y + n0 * ldy, ldy, rp);
    }
    ingot__pool_destroy(own);
    return st;
}

ingot_status ingot__amx_gemm(ingot__pool *pool, ingot_dtype wt, size_t M, size_t K,
                             const void *W, size_t ldw, const float *wscale, const void *xq,
                             size_t xstride, const float *X, size_t ldx, size_t nx,
                             bool accumulate, float *Y, size_t ldy)
{
    return amx_gemm(pool, wt, M, K, W, ldw, wscale, xq, xstride, X, ldx, nx, accumulate, Y, ldy,
                    false);
}

ingot_status ingot__amx_gemm_q4kr(ingot__pool *pool, size_t M, size_t K, const void *W,
                                  size_t ldw, const float *X, size_t ldx, size_t nx,
                                  bool accumulate, float *Y, size_t ldy)
{
    if (!X) return INGOT_E_UNSUPPORTED;
    return amx_gemm(pool, INGOT_DTYPE_Q4_K, M, K, W, ldw, NULL, NULL, 0, X, ldx, nx, accumulate,
                    Y, ldy, true);
}
#else
bool ingot__amx_ok(ingot_dtype wt, size_t K, size_t nx, bool have_f32)
{
    (void)wt, (void)K, (void)nx, (void)have_f32;
    return false;
}

ingot_status ingot__amx_gemm(ingot__pool *pool, ingot_dtype wt, size_t M, size_t K,
                             const void *W, size_t ldw, const float *wscale, const void *xq,
                             size_t xstride, const float *X, size_t ldx, size_t nx,
                             bool accumulate, float *Y, size_t ldy)
{
    (void)pool, (void)wt, (void)M, (void)K, (void)W, (void)ldw, (void)wscale, (void)xq;
    (void)xstride, (void)X, (void)ldx, (void)nx, (void)accumulate, (void)Y, (void)ldy;
    return INGOT_E_UNSUPPORTED;
}

ingot_status ingot__amx_gemm_q4kr(ingot__pool *pool, size_t M, size_t K, const void *W,
                                  size_t ldw, const float *X, size_t ldx, size_t nx,
                                  bool accumulate, float *Y, size_t ldy)
{
    (void)pool, (void)M, (void)K, (void)W, (void)ldw, (void)X, (void)ldx, (void)nx;
    (void)accumulate, (void)Y, (void)ldy;
    return INGOT_E_UNSUPPORTED;
}
#endif
