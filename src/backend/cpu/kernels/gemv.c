/*
 * gemv.c - matrix-vector kernels on float weights: f32 (A.x and A^T.x) and F16 / BF16 rows
 * against f32 activations (one to a few rows of them). All are memory-bound: they stream the
 * matrix once, split into row (or column) ranges over the pool's workers; each output is reduced
 * in a fixed order, whatever the thread count. The quantized dots are in qdot.c.
 */
#include <math.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HAVE_X86 1
#define AVX2_TARGET __attribute__((target("avx2,fma,f16c")))
#define AVX512_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")))
#endif

#include "cpu/kernels/amx.h"
#include "cpu/kernels/kernels.h"

#define COLS_PER_TASK 1024
/* Rows up to this many elements go sixteen at a time (AVX-512): see dot16_avx512. */
#define SHORT_ROW 1024
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
    /* the eight horizontal sums at once, by hsum256's tree (lane i + lane i + 4, then + 2, + 1):
     * rows 2j, 2j + 1 first, then pairs of those, then the last step */
    __m256 q0 = _mm256_add_ps(_mm256_permute2f128_ps(p0, p1, 0x20), _mm256_permute2f128_ps(p0, p1, 0x31));
    __m256 q1 = _mm256_add_ps(_mm256_permute2f128_ps(p2, p3, 0x20), _mm256_permute2f128_ps(p2, p3, 0x31));
    __m256 q2 = _mm256_add_ps(_mm256_permute2f128_ps(p4, p5, 0x20), _mm256_permute2f128_ps(p4, p5, 0x31));
    __m256 q3 = _mm256_add_ps(_mm256_permute2f128_ps(p6, p7, 0x20), _mm256_permute2f128_ps(p6, p7, 0x31));
    __m256 u0 = _mm256_add_ps(_mm256_shuffle_ps(q0, q1, 0x44), _mm256_shuffle_ps(q0, q1, 0xEE));
    __m256 u1 = _mm256_add_ps(_mm256_shuffle_ps(q2, q3, 0x44), _mm256_shuffle_ps(q2, q3, 0xEE));
    /* lane 4h + l: row 2l + h */
    __m256 v = _mm256_add_ps(_mm256_shuffle_ps(u0, u1, 0x88), _mm256_shuffle_ps(u0, u1, 0xDD));
    float t[8], w[8];
    _mm256_storeu_ps(w, v);
    for (int r = 0; r < 8; r++) t[r] = w[4 * (r & 1) + (r >> 1)];
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

#ifdef HAVE_X86
/* The AVX-512 forms of dot_avx2 / dot8_avx2: 16 lanes, the k tail (under 16) as one more masked
 * step, and each row's 16 lane sums added in one fixed tree (lane i with i + 8, then + 4, + 2,
 * + 1), written out in hsum512 for one row and transposed in dot16_avx512 for sixteen: a row
 * gives the same bits whichever path (and hence whichever thread split) computed it. */
AVX512_TARGET static inline float hsum512(__m512 v)
{
    __m256 a = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
    __m128 b = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    b = _mm_add_ps(b, _mm_movehl_ps(b, b));
    b = _mm_add_ss(b, _mm_movehdup_ps(b));
    return _mm_cvtss_f32(b);
}

AVX512_TARGET static float dot_avx512(const float *a, const float *x, size_t n)
{
    __m512 s0 = _mm512_setzero_ps();
    size_t k = 0;
    for (; k + 16 <= n; k += 16)
        s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + k), _mm512_loadu_ps(x + k), s0);
    if (k < n) {
        __mmask16 m = (__mmask16)((1u << (n - k)) - 1);
        s0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + k), _mm512_maskz_loadu_ps(m, x + k), s0);
    }
    return hsum512(s0);
}

AVX512_TARGET static void dot8_avx512(const float *a, size_t lda, const float *x, size_t n,
                                      float *out)
{
    __m512 p[8];
    for (int r = 0; r < 8; r++) p[r] = _mm512_setzero_ps();
    size_t k = 0;
    for (; k + 16 <= n; k += 16) {
        __m512 xv = _mm512_loadu_ps(x + k);
        for (int r = 0; r < 8; r++)
            p[r] = _mm512_fmadd_ps(_mm512_loadu_ps(a + (size_t)r * lda + k), xv, p[r]);
    }
    if (k < n) {
        __mmask16 m = (__mmask16)((1u << (n - k)) - 1);
        __m512 xv = _mm512_maskz_loadu_ps(m, x + k);
        for (int r = 0; r < 8; r++)
            p[r] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + (size_t)r * lda + k), xv, p[r]);
    }
    for (int r = 0; r < 8; r++) out[r] = hsum512(p[r]);
}

/* Sixteen rows, for short rows (the small models' 64- to 1024-wide matrices), where one
 * horizontal sum per row cost as much as the row's multiply-adds: the sixteen accumulators are
 * summed together, by the tree of hsum512, in 30 shuffles and 15 additions. */
AVX512_TARGET static void dot16_avx512(const float *a, size_t lda, const float *x, size_t n,
                                       float *out)
{
    __m512 p[16];
    for (int r = 0; r < 16; r++) p[r] = _mm512_setzero_ps();
    size_t k = 0;
    for (; k + 16 <= n; k += 16) {
        __m512 xv = _mm512_loadu_ps(x + k);
        for (int r = 0; r < 16; r++)
            p[r] = _mm512_fmadd_ps(_mm512_loadu_ps(a + (size_t)r * lda + k), xv, p[r]);
    }
    if (k < n) {
        __mmask16 m = (__mmask16)((1u << (n - k)) - 1);
        __m512 xv = _mm512_maskz_loadu_ps(m, x + k);
        for (int r = 0; r < 16; r++)
            p[r] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + (size_t)r * lda + k), xv, p[r]);
    }
    __m512 q[8], s4[4], u[2];
    for (int j = 0; j < 8; j++) /* rows 2j, 2j+1: lane i (< 8) of each is lane i + lane i + 8 */
        q[j] = _mm512_add_ps(_mm512_shuffle_f32x4(p[2 * j], p[2 * j + 1], 0x44),
                             _mm512_shuffle_f32x4(p[2 * j], p[2 * j + 1], 0xEE));
    for (int j = 0; j < 4; j++) /* 128-bit group g: row 4j + g, lane i (< 4) + lane i + 4 */
        s4[j] = _mm512_add_ps(_mm512_shuffle_f32x4(q[2 * j], q[2 * j + 1], 0x88),
                              _mm512_shuffle_f32x4(q[2 * j], q[2 * j + 1], 0xDD));
    for (int j = 0; j < 2; j++) /* group g: rows 8j + g (lanes 0, 1), 8j + 4 + g (2, 3) */
        u[j] = _mm512_add_ps(_mm512_shuffle_ps(s4[2 * j], s4[2 * j + 1], 0x44),
                             _mm512_shuffle_ps(s4[2 * j], s4[2 * j + 1], 0xEE));
    /* lane 4g + l: row 4l + g */
    __m512 v = _mm512_add_ps(_mm512_shuffle_ps(u[0], u[1], 0x88), _mm512_shuffle_ps(u[0], u[1], 0xDD));
    const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    _mm512_storeu_ps(out, _mm512_permutexvar_ps(order, v));
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
    size_t rows;   /* per task */
    unsigned pass; /* rows read together (ingot__sgemv_rows) */
} gemv_job;

static void gemv_task(void *ctx, size_t t, unsigned worker)
{
    (void)worker;
    const gemv_job *j = ctx;
    size_t lo = t * j->rows, hi = j->M - lo < j->rows ? j->M : lo + j->rows;
    for (size_t i = lo; i < hi;) {
        const float *row = j->A + i * j->lda;
        float d[16];
        size_t got = 1;
#ifdef HAVE_X86
        bool eight = i + 8 <= hi && j->pass >= 8;
        if (j->isa >= INGOT__ISA_AVX512 && i + 16 <= hi && j->N <= SHORT_ROW && j->pass >= 16)
            dot16_avx512(row, j->lda, j->x, j->N, d), got = 16;
        else if (j->isa >= INGOT__ISA_AVX512 && eight) dot8_avx512(row, j->lda, j->x, j->N, d), got = 8;
        else if (j->isa >= INGOT__ISA_AVX512) d[0] = dot_avx512(row, j->x, j->N);
        else if (j->isa >= INGOT__ISA_AVX2 && eight) dot8_avx2(row, j->lda, j->x, j->N, d), got = 8;
        else if (j->isa >= INGOT__ISA_AVX2) d[0] = dot_avx2(row, j->x, j->N);
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
    if (j->isa >= INGOT__ISA_AVX2)
        for (; i + 4 <= j->M; i += 4) axpy4_avx2(j->x + i, j->A + i * j->lda + lo, j->lda, acc, w);
#endif
    for (; i < j->M; i++) {
#ifdef HAVE_X86
        if (j->isa >= INGOT__ISA_AVX2) axpy_avx2(j->x[i], j->A + i * j->lda + lo, acc, w);
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
                  rows_per_task(M, N * sizeof(float), pool), ingot__sgemv_rows()};
    if (!trans) ingot__pool_run(pool, gemv_task, &j, (M + j.rows - 1) / j.rows);
    else ingot__pool_run(pool, gemvt_task, &j, (N + COLS_PER_TASK - 1) / COLS_PER_TASK);
}


/* ---- F16 / BF16 weight rows against f32 activation rows ----
 * One weight row against up to HX activation rows at a time (the row is widened once for all
 * of them); per activation row a fixed set of lane accumulators over k, summed horizontally in
 * a fixed order, then the k tail in scalar order: an output's bits do not depend on how many
 * activation rows shared the pass, nor on the thread split. */

#define HX 4

static float bf16_f32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static float half_at(bool bf, const uint8_t *w, size_t k)
{
    uint16_t h;
    memcpy(&h, w + 2 * k, 2);
    if (bf) return bf16_f32(h);
    uint32_t e = (h >> 10) & 31, m = h & 1023;
    float v = e == 0 ? ldexpf((float)m, -24) : e == 31 ? (m ? NAN : INFINITY)
                                                       : ldexpf((float)(m | 1024), (int)e - 25);
    return (h >> 15) ? -v : v;
}

static void half_row_scalar(bool bf, const uint8_t *w, size_t K, const float *X, size_t ldx,
                            size_t nx, float *out)
{
    for (size_t i = 0; i < nx; i++) {
        const float *x = X + i * ldx;
        float s[8] = {0};
        size_t k = 0;
        for (; k + 8 <= K; k += 8)
            for (int l = 0; l < 8; l++) s[l] += half_at(bf, w, k + (size_t)l) * x[k + (size_t)l];
        float t = ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7]));
        for (; k < K; k++) t += half_at(bf, w, k) * x[k];
        out[i] = t;
    }
}

#ifdef HAVE_X86
AVX2_TARGET static inline __m256 widen8(bool bf, const uint8_t *p)
{
    __m128i h = _mm_loadu_si128((const __m128i *)(const void *)p);
    if (bf) return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    return _mm256_cvtph_ps(h);
}

/* One activation row: four accumulators of 8 lanes (named, so they stay in registers), 32
 * elements a step, then 8-element steps into the first, summed as (a0 + a1) + (a2 + a3), then
 * the k tail in scalar order. half2_avx2 gives each of its two rows exactly these bits. With bf
 * a constant, each caller below gets its own loop. (An array of accumulators indexed by a
 * run-time row count lived on the stack: 0.70-0.72 of the read rate, Xeon, one thread.) */
__attribute__((always_inline)) AVX2_TARGET static inline float
half1_avx2(bool bf, const uint8_t *w, size_t K, const float *x, bool pf)
{
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    size_t k = 0;
    for (; k + 32 <= K; k += 32) {
        if (pf) _mm_prefetch((const char *)((uintptr_t)w + 2 * k + 8192), _MM_HINT_T0);
        a0 = _mm256_fmadd_ps(widen8(bf, w + 2 * k), _mm256_loadu_ps(x + k), a0);
        a1 = _mm256_fmadd_ps(widen8(bf, w + 2 * k + 16), _mm256_loadu_ps(x + k + 8), a1);
        a2 = _mm256_fmadd_ps(widen8(bf, w + 2 * k + 32), _mm256_loadu_ps(x + k + 16), a2);
        a3 = _mm256_fmadd_ps(widen8(bf, w + 2 * k + 48), _mm256_loadu_ps(x + k + 24), a3);
    }
    for (; k + 8 <= K; k += 8)
        a0 = _mm256_fmadd_ps(widen8(bf, w + 2 * k), _mm256_loadu_ps(x + k), a0);
    float t = hsum256(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    for (; k < K; k++) t += half_at(bf, w, k) * x[k];
    return t;
}

/* Two activation rows (x and x + ldx) against one weight row, widened once for both. */
__attribute__((always_inline)) AVX2_TARGET static inline void
half2_avx2(bool bf, const uint8_t *w, size_t K, const float *x, size_t ldx, bool pf, float *out)
{
    const float *y = x + ldx;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    __m256 b0 = a0, b1 = a0, b2 = a0, b3 = a0;
    size_t k = 0;
    for (; k + 32 <= K; k += 32) {
        if (pf) _mm_prefetch((const char *)((uintptr_t)w + 2 * k + 8192), _MM_HINT_T0);
        __m256 w0 = widen8(bf, w + 2 * k), w1 = widen8(bf, w + 2 * k + 16);
        __m256 w2 = widen8(bf, w + 2 * k + 32), w3 = widen8(bf, w + 2 * k + 48);
        a0 = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x + k), a0);
        a1 = _mm256_fmadd_ps(w1, _mm256_loadu_ps(x + k + 8), a1);
        a2 = _mm256_fmadd_ps(w2, _mm256_loadu_ps(x + k + 16), a2);
        a3 = _mm256_fmadd_ps(w3, _mm256_loadu_ps(x + k + 24), a3);
        b0 = _mm256_fmadd_ps(w0, _mm256_loadu_ps(y + k), b0);
        b1 = _mm256_fmadd_ps(w1, _mm256_loadu_ps(y + k + 8), b1);
        b2 = _mm256_fmadd_ps(w2, _mm256_loadu_ps(y + k + 16), b2);
        b3 = _mm256_fmadd_ps(w3, _mm256_loadu_ps(y + k + 24), b3);
    }
    for (; k + 8 <= K; k += 8) {
        __m256 w0 = widen8(bf, w + 2 * k);
        a0 = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x + k), a0);
        b0 = _mm256_fmadd_ps(w0, _mm256_loadu_ps(y + k), b0);
    }
    float t = hsum256(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    float u = hsum256(_mm256_add_ps(_mm256_add_ps(b0, b1), _mm256_add_ps(b2, b3)));
    for (; k < K; k++) t += half_at(bf, w, k) * x[k];
    for (k = K / 8 * 8; k < K; k++) u += half_at(bf, w, k) * y[k];
    out[0] = t, out[1] = u;
}

AVX2_TARGET static void half_rows_avx2_f16(const uint8_t *w, size_t K, const float *X,
                                           size_t ldx, size_t nx, float *out, bool pf)
{
    size_t i = 0;
    for (; i + 2 <= nx; i += 2) half2_avx2(false, w, K, X + i * ldx, ldx, pf, out + i);
    if (i < nx) out[i] = half1_avx2(false, w, K, X + i * ldx, pf);
}

AVX2_TARGET static void half_rows_avx2_bf16(const uint8_t *w, size_t K, const float *X,
                                            size_t ldx, size_t nx, float *out, bool pf)
{
    size_t i = 0;
    for (; i + 2 <= nx; i += 2) half2_avx2(true, w, K, X + i * ldx, ldx, pf, out + i);
    if (i < nx) out[i] = half1_avx2(true, w, K, X + i * ldx, pf);
}

AVX2_TARGET static void half_row_avx2(bool bf, const uint8_t *w, size_t K, const float *X,
                                      size_t ldx, size_t nx, float *out)
{
    const bool pf = ingot__cpu_prefetch_half();
    if (bf) half_rows_avx2_bf16(w, K, X, ldx, nx, out, pf);
    else half_rows_avx2_f16(w, K, X, ldx, nx, out, pf);
}

AVX512_TARGET static inline __m512 widen16(bool bf, const uint8_t *p)
{
    __m256i h = _mm256_loadu_si256((const __m256i *)(const void *)p);
    if (bf) return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    return _mm512_cvtph_ps(h);
}

/* Four accumulators of 16 lanes per activation row, 64 elements a step, then one more 16-element
 * step at a time into the first. */
AVX512_TARGET static void half_row_avx512(bool bf, const uint8_t *w, size_t K, const float *X,
                                          size_t ldx, size_t nx, float *out)
{
    const bool pf = ingot__cpu_prefetch_half();
    __m512 a[HX][4];
    for (size_t i = 0; i < HX; i++) a[i][0] = a[i][1] = a[i][2] = a[i][3] = _mm512_setzero_ps();
    size_t k = 0;
    for (; k + 64 <= K; k += 64) {
        /* 8 KiB ahead, one prefetch per line, on Intel, as the quantized dots (F16 / BF16 GEMV
         * 0.73-0.82 -> 0.85-1.01 of the read rate, one thread, Xeon) */
        if (pf) {
            _mm_prefetch((const char *)((uintptr_t)w + 2 * k + 8192), _MM_HINT_T0);
            _mm_prefetch((const char *)((uintptr_t)w + 2 * k + 8256), _MM_HINT_T0);
        }
        __m512 w0 = widen16(bf, w + 2 * k), w1 = widen16(bf, w + 2 * k + 32);
        __m512 w2 = widen16(bf, w + 2 * k + 64), w3 = widen16(bf, w + 2 * k + 96);
        for (size_t i = 0; i < nx; i++) {
            const float *x = X + i * ldx + k;
            a[i][0] = _mm512_fmadd_ps(w0, _mm512_loadu_ps(x), a[i][0]);
            a[i][1] = _mm512_fmadd_ps(w1, _mm512_loadu_ps(x + 16), a[i][1]);
            a[i][2] = _mm512_fmadd_ps(w2, _mm512_loadu_ps(x + 32), a[i][2]);
            a[i][3] = _mm512_fmadd_ps(w3, _mm512_loadu_ps(x + 48), a[i][3]);
        }
    }
    for (; k + 16 <= K; k += 16) {
        __m512 w0 = widen16(bf, w + 2 * k);
        for (size_t i = 0; i < nx; i++)
            a[i][0] = _mm512_fmadd_ps(w0, _mm512_loadu_ps(X + i * ldx + k), a[i][0]);
    }
    for (size_t i = 0; i < nx; i++) {
        const float *x = X + i * ldx;
        __m512 s = _mm512_add_ps(_mm512_add_ps(a[i][0], a[i][1]), _mm512_add_ps(a[i][2], a[i][3]));
        float t = _mm512_reduce_add_ps(s);
        for (size_t q = k; q < K; q++) t += half_at(bf, w, q) * x[q];
        out[i] = t;
    }
}

/* ns (2 or 4: a constant once inlined) weight rows wr[0..ns) against one activation row x, read
 * in turn 64 elements of each (ns read streams: ingot__gemv_streams): every row's accumulators,
 * steps and sums are those of half_row_avx512 with nx = 1, so each gets the same bits. */
__attribute__((always_inline)) AVX512_TARGET static inline void
half_group_avx512(bool bf, const uint8_t *const *wr, size_t ns, size_t K, const float *x,
                  float *out, bool pf)
{
    __m512 a[4][4];
    _Pragma("GCC unroll 4")
    for (size_t s = 0; s < ns; s++) a[s][0] = a[s][1] = a[s][2] = a[s][3] = _mm512_setzero_ps();
    size_t k = 0;
    for (; k + 64 <= K; k += 64) {
        __m512 x0 = _mm512_loadu_ps(x + k), x1 = _mm512_loadu_ps(x + k + 16);
        __m512 x2 = _mm512_loadu_ps(x + k + 32), x3 = _mm512_loadu_ps(x + k + 48);
        _Pragma("GCC unroll 4")
        for (size_t s = 0; s < ns; s++) {
            const uint8_t *w = wr[s];
            if (pf) {
                _mm_prefetch((const char *)((uintptr_t)w + 2 * k + 8192), _MM_HINT_T0);
                _mm_prefetch((const char *)((uintptr_t)w + 2 * k + 8256), _MM_HINT_T0);
            }
            a[s][0] = _mm512_fmadd_ps(widen16(bf, w + 2 * k), x0, a[s][0]);
            a[s][1] = _mm512_fmadd_ps(widen16(bf, w + 2 * k + 32), x1, a[s][1]);
            a[s][2] = _mm512_fmadd_ps(widen16(bf, w + 2 * k + 64), x2, a[s][2]);
            a[s][3] = _mm512_fmadd_ps(widen16(bf, w + 2 * k + 96), x3, a[s][3]);
        }
    }
    for (; k + 16 <= K; k += 16) {
        __m512 xv = _mm512_loadu_ps(x + k);
        _Pragma("GCC unroll 4")
        for (size_t s = 0; s < ns; s++)
            a[s][0] = _mm512_fmadd_ps(widen16(bf, wr[s] + 2 * k), xv, a[s][0]);
    }
    _Pragma("GCC unroll 4")
    for (size_t s = 0; s < ns; s++) {
        __m512 v = _mm512_add_ps(_mm512_add_ps(a[s][0], a[s][1]), _mm512_add_ps(a[s][2], a[s][3]));
        float t = _mm512_reduce_add_ps(v);
        for (size_t q = k; q < K; q++) t += half_at(bf, wr[s], q) * x[q];
        out[s] = t;
    }
}

AVX512_TARGET static void half_group4_f16(const uint8_t *const *wr, size_t K, const float *x,
                                          float *out, bool pf)
{
    half_group_avx512(false, wr, 4, K, x, out, pf);
}

AVX512_TARGET static void half_group4_bf16(const uint8_t *const *wr, size_t K, const float *x,
                                           float *out, bool pf)
{
    half_group_avx512(true, wr, 4, K, x, out, pf);
}

AVX512_TARGET static void half_group2_f16(const uint8_t *const *wr, size_t K, const float *x,
                                          float *out, bool pf)
{
    half_group_avx512(false, wr, 2, K, x, out, pf);
}

AVX512_TARGET static void half_group2_bf16(const uint8_t *const *wr, size_t K, const float *x,
                                           float *out, bool pf)
{
    half_group_avx512(true, wr, 2, K, x, out, pf);
}
#endif

typedef struct {
    bool bf, acc;
    size_t M, K, ldw, nx, ldx, ldy, rows;
    const uint8_t *W;
    const float *X;
    float *Y;
    ingot__isa isa;
} half_job;

#define HALF_BLOCK_BYTES ((size_t)32 << 10)

/* out[i] = row w . X_i for i < nx <= HX, by the level's kernel */
static void half_row(ingot__isa isa, bool bf, const uint8_t *w, size_t K, const float *X,
                     size_t ldx, size_t nx, float *out)
{
#ifdef HAVE_X86
    if (isa >= INGOT__ISA_AVX512) half_row_avx512(bf, w, K, X, ldx, nx, out);
    else if (isa >= INGOT__ISA_AVX2) half_row_avx2(bf, w, K, X, ldx, nx, out);
    else
#endif
        half_row_scalar(bf, w, K, X, ldx, nx, out);
}

/* Rows [0, rows) of W (ldw elements apart) against one activation row x: y[r] (+)= W[r] . x.
 * At the AVX-512 levels the rows are read as up to four streams (ingot__gemv_streams_half,
 * in the order of ingot__stream_row), each row still reduced as half_row reduces it alone. */
static void half_rows1(ingot__isa isa, bool bf, const uint8_t *W, size_t ldw, size_t rows,
                       size_t K, const float *x, bool accumulate, float *y)
{
    size_t ns = 1, g = 0;
#ifdef HAVE_X86
    if (isa >= INGOT__ISA_AVX512) {
        ns = ingot__gemv_streams_half();
        ns = ns > 4 ? 4 : ns;
        g = ns > 1 ? rows / ns * ns : 0;
        const bool pf = ingot__cpu_prefetch_half();
        if (pf && g && rows >= 2 * ns) /* the sub-ranges' first 8 KiB, as qdot's stream_heads */
            for (size_t s = 1; s < ns; s++) {
                const uint8_t *p = W + ingot__stream_row(rows, ns, s) * ldw * 2;
                for (size_t o = 0; o < 8192; o += 64)
                    _mm_prefetch((const char *)p + o, _MM_HINT_T0);
            }
        for (size_t i = 0; i < g; i += ns) {
            const uint8_t *wr[4];
            size_t r[4];
            float out[4];
            for (size_t s = 0; s < ns; s++)
                r[s] = ingot__stream_row(rows, ns, i + s), wr[s] = W + r[s] * ldw * 2;
            if (ns == 4) (bf ? half_group4_bf16 : half_group4_f16)(wr, K, x, out, pf);
            else (bf ? half_group2_bf16 : half_group2_f16)(wr, K, x, out, pf);
            for (size_t s = 0; s < ns; s++)
                y[r[s]] = accumulate ? y[r[s]] + out[s] : out[s];
        }
    }
#endif
    for (size_t i = g; i < rows; i++) {
        size_t r = ingot__stream_row(rows, ns, i);
        float out[HX];
        half_row(isa, bf, W + r * ldw * 2, K, x, K, 1, out);
        y[r] = accumulate ? y[r] + out[0] : out[0];
    }
}

void ingot__half_rows(ingot_dtype wt, const void *W, size_t ldw, size_t rows, size_t K,
                      const float *x, bool accumulate, float *y)
{
    half_rows1(ingot__get_isa(), wt == INGOT_DTYPE_BF16, W, ldw, rows, K, x, accumulate, y);
}

static void half_task(void *ctx, size_t t, unsigned worker)
{
    (void)worker;
    const half_job *j = ctx;
    size_t lo = t * j->rows, hi = j->M - lo < j->rows ? j->M : lo + j->rows;
    if (j->nx == 1) { /* decode */
        half_rows1(j->isa, j->bf, j->W + lo * j->ldw * 2, j->ldw, hi - lo, j->K, j->X, j->acc,
                   j->Y + lo);
        return;
    }
    size_t rb = j->K * 2, br = HALF_BLOCK_BYTES / (rb ? rb : 1);
    if (br < 1 || j->nx <= HX) br = hi - lo; /* one pass: the rows meet every x row at once */
    for (size_t r0 = lo; r0 < hi; r0 += br) {
        size_t r1 = hi - r0 < br ? hi : r0 + br;
        for (size_t i0 = 0; i0 < j->nx; i0 += HX) {
            size_t nx = j->nx - i0 < HX ? j->nx - i0 : HX;
            const float *X = j->X + i0 * j->ldx;
            for (size_t r = r0; r < r1; r++) {
                const uint8_t *w = j->W + r * j->ldw * 2;
                float out[HX];
                half_row(j->isa, j->bf, w, j->K, X, j->ldx, nx, out);
                for (size_t i = 0; i < nx; i++) {
                    float *y = j->Y + (i0 + i) * j->ldy + r;
                    *y = j->acc ? *y + out[i] : out[i];
                }
            }
        }
    }
}

#ifdef HAVE_X86
AVX512_TARGET static void widen_avx512(bool bf, const uint8_t *p, float *y, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, widen16(bf, p + 2 * i));
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, widen8(bf, p + 2 * i));
    for (; i < n; i++) y[i] = half_at(bf, p, i);
}

AVX2_TARGET static void widen_avx2(bool bf, const uint8_t *p, float *y, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, widen8(bf, p + 2 * i));
    for (; i < n; i++) y[i] = half_at(bf, p, i);
}
#endif

void ingot__half_to_f32(ingot_dtype wt, const void *src, float *dst, size_t n)
{
    bool bf = wt == INGOT_DTYPE_BF16;
#ifdef HAVE_X86
    ingot__isa isa = ingot__get_isa();
    if (isa >= INGOT__ISA_AVX512) {
        widen_avx512(bf, src, dst, n);
        return;
    }
    if (isa >= INGOT__ISA_AVX2) {
        widen_avx2(bf, src, dst, n);
        return;
    }
#endif
    for (size_t i = 0; i < n; i++) dst[i] = half_at(bf, src, i);
}

void ingot__gemm_half(ingot__pool *pool, ingot_dtype wt, size_t M, size_t K, const void *W,
                      size_t ldw, size_t nx, const float *X, size_t ldx, bool accumulate,
                      float *Y, size_t ldy)
{
    if (M == 0 || nx == 0) return;
    /* AMX: BF16 in place, F16 split into two bf16 halves (no scratch: the paths below) */
    if (ingot__get_isa() == INGOT__ISA_AMX && ingot__amx_ok(wt, K, nx, true) && ldx >= K &&
        ingot__amx_gemm(pool, wt, M, K, W, ldw * 2, NULL, NULL, 0, X, ldx, nx, accumulate, Y,
                        ldy) == INGOT_OK)
        return;
    if (nx >= INGOT__QGEMM_DEQUANT_ROWS &&
        ingot__dequant_gemm(pool, wt, M, K, W, ldw * 2, X, ldx, nx, accumulate, Y, ldy) ==
            INGOT_OK)
        return; /* else (no scratch) the streaming kernels below */
    half_job j = {wt == INGOT_DTYPE_BF16, accumulate, M, K, ldw, nx, ldx, ldy,
                  rows_per_task(M, K * 2 * nx, pool), W, X, Y, ingot__get_isa()};
    ingot__pool_run(pool, half_task, &j, (M + j.rows - 1) / j.rows);
}
