/*
 * amx.c - the AMX level's tile GEMMs for prefill-sized batches (16 or more activation rows):
 * int8 weights with per-row scales and Q8_0 weights (TDPBSSD, int8 x int8 into int32 tiles) and
 * BF16 weights (TDPBF16PS into f32 tiles, each activation split into two bf16 halves so that the
 * products keep f32 precision). Intel SDM vol. 1 ch. 18 (AMX) and vol. 2 (LDTILECFG, TDP*).
 *
 * Tiles: A = 16 weight rows (read in place, row stride = the row's bytes), B = 16 activation rows
 * packed once per call in the "VNNI" layout (row g of B holds elements 4g..4g+3 of each
 * activation row, or 2g..2g+1 for BF16), C = 16 weight rows x 16 activation rows. The tile
 * configuration is per thread: each task loads it and releases the tiles when done.
 */
#include <string.h>

#include "cpu/kernels/amx.h"

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

/* Tiles 0 (A: arows x kbytes), 1 (B: kbytes / 4 x 64), 2 and 3 (C: arows x 64, and a second B
 * for the BF16 low halves in tile 3). */
AMX_TGT static void configure(int arows, int kbytes)
{
    _Alignas(64) tilecfg c;
    memset(&c, 0, sizeof c);
    c.palette = 1;
    c.rows[0] = (uint8_t)arows, c.colsb[0] = (uint16_t)kbytes;
    c.rows[1] = (uint8_t)(kbytes / 4), c.colsb[1] = 64;
    c.rows[2] = (uint8_t)arows, c.colsb[2] = 64;
    c.rows[3] = (uint8_t)(kbytes / 4), c.colsb[3] = 64;
    _tile_loadconfig(&c);
}

typedef struct {
    ingot_dtype wt;
    size_t M, K, ldw, nx, nxb, ldy,
        kb; /* nxb: 16-row groups of activations; kb: B bytes per group */
    const uint8_t *W;
    const float *wscale;
    const uint8_t *B; /* nxb groups of kb bytes */
    const float *dx;  /* I8: nxb x 16 scales; Q8_0: nxb x nb x 16; BF16: unused */
    bool acc;
    float *Y;
} amx_job;

/* Y[n][m] for the valid rows / columns of a 16 x 16 f32 result block. */
static void put_block(const amx_job *j, size_t m0, size_t mr, size_t n0, const float *c)
{
    size_t nr = j->nx - n0 < 16 ? j->nx - n0 : 16;
    for (size_t m = 0; m < mr; m++)
        for (size_t n = 0; n < nr; n++) {
            float *y = j->Y + (n0 + n) * j->ldy + m0 + m;
            *y = j->acc ? *y + c[m * 16 + n] : c[m * 16 + n];
        }
}

AMX_TGT static void i8_block(const amx_job *j, size_t m0, size_t mr, size_t g)
{
    _Alignas(64) int32_t c[256];
    _Alignas(64) float f[256];
    const uint8_t *a = j->W + m0 * j->ldw, *b = j->B + g * j->kb;
    _tile_zero(2);
    for (size_t k = 0; k < j->K; k += 64) {
        _tile_loadd(0, a + k, (long)j->ldw);
        _tile_loadd(1, b + k * 16, 64);
        _tile_dpbssd(2, 0, 1);
    }
    _tile_stored(2, c, 64);
    const float *dx = j->dx + g * 16;
    for (size_t m = 0; m < mr; m++)
        for (size_t n = 0; n < 16; n++) /* the same formula as every level's int8 kernel */
            f[m * 16 + n] = (float)c[m * 16 + n] * (j->wscale[m0 + m] * dx[n]);
    put_block(j, m0, mr, g * 16, f);
}

AMX_TGT static void q8_block(const amx_job *j, size_t m0, size_t mr, size_t g)
{
    _Alignas(64) int32_t c[256];
    _Alignas(64) float f[256];
    size_t nb = j->K / 32;
    const uint8_t *a = j->W + m0 * j->ldw, *b = j->B + g * j->kb;
    const float *dx = j->dx + g * nb * 16;
    __m512 acc[16];
    for (int m = 0; m < 16; m++) acc[m] = _mm512_setzero_ps();
    for (size_t blk = 0; blk < nb; blk++) {
        _tile_zero(2);
        _tile_loadd(0, a + blk * 34 + 2, (long)j->ldw);
        _tile_loadd(1, b + blk * 512, 64);
        _tile_dpbssd(2, 0, 1);
        _tile_stored(2, c, 64);
        __m512 dxv = _mm512_loadu_ps(dx + blk * 16);
        for (size_t m = 0; m < mr; m++) {
            uint16_t h;
            memcpy(&h, a + m * j->ldw + blk * 34, 2);
            __m512 s = _mm512_mul_ps(dxv, _mm512_set1_ps(_cvtsh_ss(h)));
            __m512 v = _mm512_cvtepi32_ps(_mm512_load_si512(c + m * 16));
            acc[m] = _mm512_fmadd_ps(v, s, acc[m]);
        }
    }
    for (size_t m = 0; m < mr; m++) _mm512_store_ps(f + m * 16, acc[m]);
    put_block(j, m0, mr, g * 16, f);
}

AMX_TGT static void bf16_block(const amx_job *j, size_t m0, size_t mr, size_t g)
{
    _Alignas(64) float f[256];
    const uint8_t *a = j->W + m0 * j->ldw, *b = j->B + g * j->kb;
    size_t half = j->kb / 2; /* high halves, then low halves */
    _tile_zero(2);
    for (size_t k = 0; k < j->K; k += 32) { /* 32 bf16 = 64 bytes of a weight row */
        _tile_loadd(0, a + 2 * k, (long)j->ldw);
        _tile_loadd(1, b + k * 32, 64);
        _tile_loadd(3, b + half + k * 32, 64);
        _tile_dpbf16ps(2, 0, 1);
        _tile_dpbf16ps(2, 0, 3);
    }
    _tile_stored(2, f, 64);
    put_block(j, m0, mr, g * 16, f);
}

AMX_TGT static void amx_task(void *ctx, size_t t, unsigned worker)
{
    (void)worker;
    const amx_job *j = ctx;
    size_t m0 = t * 16, mr = j->M - m0 < 16 ? j->M - m0 : 16;
    int kbytes = j->wt == INGOT_DTYPE_Q8_0 ? 32 : 64;
    configure((int)mr, kbytes);
    for (size_t g = 0; g < j->nxb; g++) {
        if (j->wt == INGOT_DTYPE_I8)
            i8_block(j, m0, mr, g);
        else if (j->wt == INGOT_DTYPE_Q8_0)
            q8_block(j, m0, mr, g);
        else
            bf16_block(j, m0, mr, g);
    }
    _tile_release();
}

/* Activation group of 16 rows (fewer at the end, zero-filled) into B: byte 4g + j of row n of the
 * group goes to B[g * 64 + n * 4 + j]. */
static void pack_i8(const int8_t *const *q, size_t rows, size_t K, uint8_t *B)
{
    memset(B, 0, K * 16);
    for (size_t n = 0; n < rows; n++)
        for (size_t k = 0; k < K; k += 4) memcpy(B + k * 16 + n * 4, q[n] + k, 4);
}

static uint16_t bf16_rne(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40);
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1)) >> 16);
}

static float bf16_f32(uint16_t h)
{
    uint32_t x = (uint32_t)h << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}

size_t ingot__amx_scratch(ingot_dtype wt, size_t K, size_t nx)
{
    size_t nxb = (nx + 15) / 16;
    if (wt == INGOT_DTYPE_BF16) return nxb * K * 2 * 16 * 2;
    size_t nb = wt == INGOT_DTYPE_Q8_0 ? K / 32 : 1;
    return nxb * K * 16 + nxb * nb * 16 * sizeof(float);
}

bool ingot__amx_ok(ingot_dtype wt, size_t K, size_t nx)
{
    if (nx < 16 || !ingot__isa_supported(INGOT__ISA_AMX)) return false;
    if (wt == INGOT_DTYPE_I8) return K % 64 == 0 && K <= 65536;
    if (wt == INGOT_DTYPE_Q8_0) return K % 32 == 0;
    if (wt == INGOT_DTYPE_BF16) return K % 32 == 0;
    return false;
}

void ingot__amx_gemm(ingot__pool *pool, ingot_dtype wt, size_t M, size_t K, const void *W,
                     size_t ldw, const float *wscale, const void *x, size_t xstride, size_t nx,
                     bool accumulate, float *Y, size_t ldy, void *scratch)
{
    size_t nxb = (nx + 15) / 16;
    uint8_t *B = scratch;
    amx_job j = {wt, M, K, ldw, nx, nxb, ldy, 0, W, wscale, B, NULL, accumulate, Y};
    if (wt == INGOT_DTYPE_BF16) {
        /* x rows are f32 (xstride floats apart): hi = bf16(x), lo = bf16(x - hi), pairs of k */
        j.kb = K * 2 * 16 * 2;
        memset(B, 0, nxb * j.kb);
        for (size_t n = 0; n < nx; n++) {
            const float *xr = (const float *)x + n * xstride;
            uint8_t *bh = B + (n / 16) * j.kb, *bl = bh + j.kb / 2;
            for (size_t k = 0; k < K; k++) {
                uint16_t h = bf16_rne(xr[k]);
                float hf = bf16_f32(h), r = hf - hf == 0.0f ? xr[k] - hf : 0.0f; /* inf: no lo */
                uint16_t l = bf16_rne(r);
                size_t o = (k / 2) * 64 + (n % 16) * 4 + (k % 2) * 2;
                memcpy(bh + o, &h, 2);
                memcpy(bl + o, &l, 2);
            }
        }
    } else {
        /* x rows are quantized activation rows (qdot.h layout), xstride bytes apart */
        j.kb = K * 16;
        size_t nb = wt == INGOT_DTYPE_Q8_0 ? K / 32 : 1;
        float *dx = (float *)(void *)(B + nxb * j.kb);
        memset(dx, 0, nxb * nb * 16 * sizeof(float));
        for (size_t g = 0; g < nxb; g++) {
            const int8_t *q[16];
            size_t rows = nx - g * 16 < 16 ? nx - g * 16 : 16;
            for (size_t n = 0; n < rows; n++) {
                ingot__qx v;
                ingot__qx_view(wt, K, (const uint8_t *)x + (g * 16 + n) * xstride, &v);
                q[n] = v.q;
                for (size_t b = 0; b < nb; b++) dx[(g * nb + b) * 16 + n] = v.d[b];
            }
            pack_i8(q, rows, K, B + g * j.kb);
        }
        j.dx = dx;
    }
    ingot__pool_run(pool, amx_task, &j, (M + 15) / 16);
}
#else
size_t ingot__amx_scratch(ingot_dtype wt, size_t K, size_t nx)
{
    (void)wt, (void)K, (void)nx;
    return 0;
}

bool ingot__amx_ok(ingot_dtype wt, size_t K, size_t nx)
{
    (void)wt, (void)K, (void)nx;
    return false;
}

void ingot__amx_gemm(ingot__pool *pool, ingot_dtype wt, size_t M, size_t K, const void *W,
                     size_t ldw, const float *wscale, const void *x, size_t xstride, size_t nx,
                     bool accumulate, float *Y, size_t ldy, void *scratch)
{
    (void)pool, (void)wt, (void)M, (void)K, (void)W, (void)ldw, (void)wscale, (void)x;
    (void)xstride, (void)nx, (void)accumulate, (void)Y, (void)ldy, (void)scratch;
}
#endif
