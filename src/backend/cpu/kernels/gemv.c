/*
 * gemv.c - matrix-vector kernels: f32 (A.x and A^T.x), int8 x int8 with per-row scales, and GGML
 * Q8_0 blocks. All are memory-bound: they stream the matrix once, split into row (or column)
 * ranges over the pool's workers; each output is reduced in a fixed order, whatever the thread
 * count.
 */
#include <math.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HAVE_X86 1
#define AVX2_TARGET __attribute__((target("avx2,fma")))
#endif

#include "cpu/kernels/kernels.h"

#define COLS_PER_TASK 1024
#define TASKS_PER_THREAD 4

/* Rows per task: a few contiguous ranges per worker (the pool's counter balances them), in
 * multiples of 8 rows; everything in one task when the matrix is under SMALL_BYTES (waking
 * workers costs more than the work). Results do not depend on it: every row is reduced the
 * same way. */
#define SMALL_BYTES ((size_t)256 << 10)
static size_t rows_per_task(size_t M, size_t row_bytes, ingot__pool *pool)
{
    if (M == 0 || row_bytes <= SMALL_BYTES / M) return M ? M : 1;
    size_t parts = (size_t)ingot__pool_threads(pool) * TASKS_PER_THREAD;
    size_t r = (M + parts - 1) / parts;
    r = (r + 7) / 8 * 8;
    return r < 16 ? 16 : r;
}

/* ---- f16 <-> f32 (Q8_0 scales) ---- */

static float f16_to_f32(uint16_t h)
{
    uint32_t s = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 31, m = h & 1023;
    float v;
    if (e == 0) v = ldexpf((float)m, -24);
    else if (e == 31) v = m ? NAN : INFINITY;
    else v = ldexpf((float)(m | 1024), (int)e - 25);
    return s ? -v : v;
}

static uint16_t f32_to_f16(float f) /* round to nearest even */
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000, ax = x & 0x7fffffff;
    if (ax >= 0x7f800000) return (uint16_t)(sign | (ax > 0x7f800000 ? 0x7e00 : 0x7c00));
    if (ax >= 0x477ff000) return (uint16_t)(sign | 0x7c00); /* rounds to >= 65520: inf */
    if (ax < 0x38800000) { /* subnormal half (or zero) */
        float a;
        memcpy(&a, &ax, 4);
        float q = a * 16777216.0f; /* a / 2^-24 */
        uint32_t r = (uint32_t)lrintf(q);
        return (uint16_t)(sign | r);
    }
    uint32_t mant = ax & 0x7fffff, exp = (ax >> 23) - 112;
    uint32_t h = exp << 10 | mant >> 13, rest = mant & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) h++;
    return (uint16_t)(sign | h);
}

/* ---- f32 ---- */

static float dot_scalar(const float *a, const float *x, size_t n)
{
    float s[8] = {0};
    size_t k = 0;
    for (; k + 8 <= n; k += 8)
        for (int l = 0; l < 8; l++) s[l] += a[k + l] * x[k + l];
    float t = ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7]));
    for (; k < n; k++) t += a[k] * x[k];
    return t;
}

#ifdef HAVE_X86
AVX2_TARGET static float hsum256(__m256 v)
{
    __m128 lo = _mm256_castps256_ps128(v), hi = _mm256_extractf128_ps(v, 1);
    lo = _mm_add_ps(lo, hi);
    lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
    lo = _mm_add_ss(lo, _mm_shuffle_ps(lo, lo, 1));
    return _mm_cvtss_f32(lo);
}

/* One row: one 8-lane sum over 8-element steps, summed horizontally, then the tail. dot8_avx2
 * computes eight rows with exactly this shape, so every row gives the same bits whichever path
 * (and hence whichever thread split) computed it. */
AVX2_TARGET static float dot_avx2(const float *a, const float *x, size_t n)
{
    __m256 s0 = _mm256_setzero_ps();
    size_t k = 0;
    for (; k + 8 <= n; k += 8) s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + k), _mm256_loadu_ps(x + k), s0);
    float t = hsum256(s0);
    for (; k < n; k++) t += a[k] * x[k];
    return t;
}

/* Eight rows against one x, x loaded once for the eight. Streams faster than four or two rows
 * at a time (four: 20% slower, two: 40%; 4096^2, one thread, Zen). */
AVX2_TARGET static void dot8_avx2(const float *a, size_t lda, const float *x, size_t n,
                                  float *out)
{
    const float *a0 = a, *a1 = a0 + lda, *a2 = a1 + lda, *a3 = a2 + lda;
    const float *a4 = a3 + lda, *a5 = a4 + lda, *a6 = a5 + lda, *a7 = a6 + lda;
    __m256 p0 = _mm256_setzero_ps(), p1 = p0, p2 = p0, p3 = p0, p4 = p0, p5 = p0, p6 = p0, p7 = p0;
    size_t k = 0;
    for (; k + 8 <= n; k += 8) {
        __m256 xv = _mm256_loadu_ps(x + k);
        p0 = _mm256_fmadd_ps(_mm256_loadu_ps(a0 + k), xv, p0);
        p1 = _mm256_fmadd_ps(_mm256_loadu_ps(a1 + k), xv, p1);
        p2 = _mm256_fmadd_ps(_mm256_loadu_ps(a2 + k), xv, p2);
        p3 = _mm256_fmadd_ps(_mm256_loadu_ps(a3 + k), xv, p3);
        p4 = _mm256_fmadd_ps(_mm256_loadu_ps(a4 + k), xv, p4);
        p5 = _mm256_fmadd_ps(_mm256_loadu_ps(a5 + k), xv, p5);
        p6 = _mm256_fmadd_ps(_mm256_loadu_ps(a6 + k), xv, p6);
        p7 = _mm256_fmadd_ps(_mm256_loadu_ps(a7 + k), xv, p7);
    }
    float t[8] = {hsum256(p0), hsum256(p1), hsum256(p2), hsum256(p3),
                  hsum256(p4), hsum256(p5), hsum256(p6), hsum256(p7)};
    for (int r = 0; r < 8; r++) {
        const float *ar = a + (size_t)r * lda;
        for (size_t q = k; q < n; q++) t[r] += ar[q] * x[q];
        out[r] = t[r];
    }
}

AVX2_TARGET static void axpy_avx2(float a, const float *x, float *y, size_t n)
{
    __m256 va = _mm256_set1_ps(a);
    size_t k = 0;
    for (; k + 8 <= n; k += 8)
        _mm256_storeu_ps(y + k, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + k), _mm256_loadu_ps(y + k)));
    for (; k < n; k++) y[k] += a * x[k];
}

/* Four axpys (rows a, a + lda, ...) in one pass over y: the same multiply-adds in the same
 * order per element as four axpy_avx2 calls, with a quarter of the loads and stores of y. */
AVX2_TARGET static void axpy4_avx2(const float *s, const float *a, size_t lda, float *y, size_t n)
{
    const float *a0 = a, *a1 = a + lda, *a2 = a + 2 * lda, *a3 = a + 3 * lda;
    __m256 v0 = _mm256_set1_ps(s[0]), v1 = _mm256_set1_ps(s[1]);
    __m256 v2 = _mm256_set1_ps(s[2]), v3 = _mm256_set1_ps(s[3]);
    size_t k = 0;
    for (; k + 8 <= n; k += 8) {
        __m256 acc = _mm256_fmadd_ps(v0, _mm256_loadu_ps(a0 + k), _mm256_loadu_ps(y + k));
        acc = _mm256_fmadd_ps(v1, _mm256_loadu_ps(a1 + k), acc);
        acc = _mm256_fmadd_ps(v2, _mm256_loadu_ps(a2 + k), acc);
        _mm256_storeu_ps(y + k, _mm256_fmadd_ps(v3, _mm256_loadu_ps(a3 + k), acc));
    }
    for (; k < n; k++) {
        y[k] += s[0] * a0[k];
        y[k] += s[1] * a1[k];
        y[k] += s[2] * a2[k];
        y[k] += s[3] * a3[k];
    }
}
#endif

static void axpy_scalar(float a, const float *x, float *y, size_t n)
{
    for (size_t k = 0; k < n; k++) y[k] += a * x[k];
}

typedef struct {
    size_t M, N, lda;
    float alpha, beta;
    const float *A, *x;
    float *y;
    ingot__isa isa;
    size_t rows; /* per task */
} gemv_job;

static void gemv_task(void *ctx, size_t t, unsigned worker)
{
    (void)worker;
    const gemv_job *j = ctx;
    size_t lo = t * j->rows, hi = j->M - lo < j->rows ? j->M : lo + j->rows;
    for (size_t i = lo; i < hi;) {
        const float *row = j->A + i * j->lda;
        float d[8];
        size_t got = 1;
#ifdef HAVE_X86
        if (j->isa == INGOT__ISA_AVX2 && i + 8 <= hi) dot8_avx2(row, j->lda, j->x, j->N, d), got = 8;
        else if (j->isa == INGOT__ISA_AVX2) d[0] = dot_avx2(row, j->x, j->N);
        else
#endif
            d[0] = dot_scalar(row, j->x, j->N);
        for (size_t r = 0; r < got; r++, i++)
            j->y[i] = j->beta == 0.0f ? j->alpha * d[r] : j->alpha * d[r] + j->beta * j->y[i];
    }
}

/* y[N] = alpha * A^T x + beta * y: each task owns a column range and walks every row. */
static void gemvt_task(void *ctx, size_t t, unsigned worker)
{
    (void)worker;
    const gemv_job *j = ctx;
    size_t lo = t * COLS_PER_TASK, hi = lo + COLS_PER_TASK < j->N ? lo + COLS_PER_TASK : j->N;
    float acc[COLS_PER_TASK]; /* 4 KiB: this task's slice of y, summed over every row in order */
    size_t w = hi - lo;
    memset(acc, 0, w * sizeof(float));
    size_t i = 0;
#ifdef HAVE_X86
    if (j->isa == INGOT__ISA_AVX2)
        for (; i + 4 <= j->M; i += 4) axpy4_avx2(j->x + i, j->A + i * j->lda + lo, j->lda, acc, w);
#endif
    for (; i < j->M; i++) {
#ifdef HAVE_X86
        if (j->isa == INGOT__ISA_AVX2) axpy_avx2(j->x[i], j->A + i * j->lda + lo, acc, w);
        else
#endif
            axpy_scalar(j->x[i], j->A + i * j->lda + lo, acc, w);
    }
    for (size_t c = 0; c < w; c++)
        j->y[lo + c] = j->beta == 0.0f ? j->alpha * acc[c] : j->alpha * acc[c] + j->beta * j->y[lo + c];
}

void ingot__sgemv(ingot__pool *pool, bool trans, size_t M, size_t N, float alpha, const float *A,
                  size_t lda, const float *x, float beta, float *y)
{
    gemv_job j = {M, N, lda, alpha, beta, A, x, y, ingot__get_isa(),
                  rows_per_task(M, N * sizeof(float), pool)};
    if (!trans) ingot__pool_run(pool, gemv_task, &j, (M + j.rows - 1) / j.rows);
    else ingot__pool_run(pool, gemvt_task, &j, (N + COLS_PER_TASK - 1) / COLS_PER_TASK);
}

/* ---- int8 ---- */

static int32_t dot_i8_scalar(const int8_t *a, const int8_t *b, size_t n)
{
    int32_t s = 0;
    for (size_t k = 0; k < n; k++) s += (int32_t)a[k] * b[k];
    return s;
}

#ifdef HAVE_X86
/* Unaligned 32-byte load from any byte pointer (void * converts without a cast-align cast). */
AVX2_TARGET static inline __m256i load32(const void *p) { return _mm256_loadu_si256(p); }

/* 32 int8 products w * x summed into 8 int32 lanes, given ax = |x|: |x| (as u8) times w with x's
 * sign, pairs added in int16 (at most 2 * 127 * 127 = 32258 in magnitude: never saturates),
 * then pairs of int16 into int32. */
AVX2_TARGET static inline __m256i dot32_i8(__m256i w, __m256i x, __m256i ax)
{
    __m256i p16 = _mm256_maddubs_epi16(ax, _mm256_sign_epi8(w, x));
    return _mm256_madd_epi16(p16, _mm256_set1_epi16(1));
}

AVX2_TARGET static int32_t hsum_i32(__m256i v)
{
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
}

/* One row of W against x. (Four rows sharing the loads of x, as the f32 GEMV does, streamed
 * 20% slower here: int8 rows are a quarter as long.) */
AVX2_TARGET static int32_t dot_i8_avx2(const int8_t *w, const int8_t *x, size_t n)
{
    __m256i s0 = _mm256_setzero_si256();
    size_t k = 0;
    for (; k + 32 <= n; k += 32) {
        __m256i xv = load32(x + k);
        s0 = _mm256_add_epi32(s0, dot32_i8(load32(w + k), xv, _mm256_abs_epi8(xv)));
    }
    return hsum_i32(s0) + dot_i8_scalar(w + k, x + k, n - k);
}
#endif

typedef struct {
    size_t M, K, ldw;
    const int8_t *W, *x;
    const float *wscale;
    float xscale;
    float *y;
    ingot__isa isa;
    size_t rows; /* per task */
} i8_job;

static void i8_task(void *ctx, size_t t, unsigned worker)
{
    (void)worker;
    const i8_job *j = ctx;
    size_t lo = t * j->rows, hi = j->M - lo < j->rows ? j->M : lo + j->rows;
    for (size_t i = lo; i < hi; i++) {
        int32_t d;
#ifdef HAVE_X86
        if (j->isa == INGOT__ISA_AVX2) d = dot_i8_avx2(j->W + i * j->ldw, j->x, j->K);
        else
#endif
            d = dot_i8_scalar(j->W + i * j->ldw, j->x, j->K);
        j->y[i] = (float)d * (j->wscale[i] * j->xscale);
    }
}

void ingot__gemv_i8(ingot__pool *pool, size_t M, size_t K, const int8_t *W, size_t ldw,
                    const float *wscale, const int8_t *x, float xscale, float *y)
{
    i8_job j = {M, K, ldw, W, x, wscale, xscale, y, ingot__get_isa(), rows_per_task(M, K, pool)};
    ingot__pool_run(pool, i8_task, &j, (M + j.rows - 1) / j.rows);
}

/* ---- Q8_0 ---- */

#define Q8_BLOCK 32
#define Q8_BYTES 34

static float q8_row_scalar(const uint8_t *w, const uint8_t *x, size_t nb)
{
    float s = 0.0f;
    for (size_t b = 0; b < nb; b++, w += Q8_BYTES, x += Q8_BYTES) {
        uint16_t dw, dx;
        memcpy(&dw, w, 2);
        memcpy(&dx, x, 2);
        int32_t d = dot_i8_scalar((const int8_t *)w + 2, (const int8_t *)x + 2, Q8_BLOCK);
        s += (float)d * (f16_to_f32(dw) * f16_to_f32(dx));
    }
    return s;
}

#ifdef HAVE_X86
/* One Q8_0 row against x. Per block: the exact int32 dot in 8 lanes, scaled by d_w * d_x and
 * accumulated in 8 float lanes (no horizontal sum per block); scales decoded with F16C, |x|
 * computed once per block for the sign trick. Rounding differs from the scalar path's
 * per-block sums (both are within float rounding of the exact value); a row's result does not
 * depend on the thread count. (Four rows sharing x's loads streamed 20-30% slower.) */
#define Q8_TARGET __attribute__((target("avx2,fma,f16c")))
Q8_TARGET static float q8_row_avx2(const uint8_t *w, const uint8_t *x, size_t nb)
{
    __m256 acc = _mm256_setzero_ps();
    for (size_t b = 0; b < nb; b++, w += Q8_BYTES, x += Q8_BYTES) {
        uint16_t dw, dx;
        memcpy(&dw, w, 2);
        memcpy(&dx, x, 2);
        __m256i xv = load32(x + 2);
        __m256i p = dot32_i8(load32(w + 2), xv, _mm256_abs_epi8(xv));
        __m256 sc = _mm256_set1_ps(_cvtsh_ss(dw) * _cvtsh_ss(dx));
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), sc, acc);
    }
    return hsum256(acc);
}
#endif

typedef struct {
    size_t M, nb;
    const uint8_t *W, *x;
    float *y;
    ingot__isa isa;
    size_t rows; /* per task */
} q8_job;

static void q8_task(void *ctx, size_t t, unsigned worker)
{
    (void)worker;
    const q8_job *j = ctx;
    size_t lo = t * j->rows, hi = j->M - lo < j->rows ? j->M : lo + j->rows;
    size_t ldw = j->nb * Q8_BYTES;
    for (size_t i = lo; i < hi; i++) {
        const uint8_t *row = j->W + i * ldw;
#ifdef HAVE_X86
        if (j->isa == INGOT__ISA_AVX2) {
            j->y[i] = q8_row_avx2(row, j->x, j->nb);
            continue;
        }
#endif
        j->y[i] = q8_row_scalar(row, j->x, j->nb);
    }
}

void ingot__gemv_q8_0(ingot__pool *pool, size_t M, size_t K, const void *W, const void *x,
                      float *y)
{
    size_t nb = K / Q8_BLOCK;
    q8_job j = {M, nb, W, x, y, ingot__get_isa(), rows_per_task(M, nb * Q8_BYTES, pool)};
    ingot__pool_run(pool, q8_task, &j, (M + j.rows - 1) / j.rows);
}

void ingot__quantize_q8_0(const float *x, size_t K, void *out)
{
    uint8_t *o = out;
    for (size_t b = 0; b < K / Q8_BLOCK; b++, x += Q8_BLOCK, o += Q8_BYTES) {
        float amax = 0.0f;
        for (int i = 0; i < Q8_BLOCK; i++) amax = fmaxf(amax, fabsf(x[i]));
        float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        uint16_t h = f32_to_f16(d);
        memcpy(o, &h, 2);
        for (int i = 0; i < Q8_BLOCK; i++) o[2 + i] = (uint8_t)(int8_t)roundf(x[i] * id); /* ggml rounds half away from zero */
    }
}
