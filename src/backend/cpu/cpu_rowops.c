/*
 * cpu_rowops.c - cpu routes for the small per-row ops a decoder runs between its matmuls, so
 * they cost what the arithmetic costs instead of ref's per-element dtype dispatch:
 *   - binary ADD/SUB/MUL/DIV on f32 operands of one contiguous shape (a or c may also be a
 *     one-element scalar), and binary_scalar on contiguous f32: the same values as ref (an f32
 *     op rounded once equals ref's double op rounded to f32);
 *   - RoPE on f32 [heads, seq, d] views with a contiguous last axis: ref's exact formula (double
 *     angle, cos, sin and products), each position's cos/sin computed once for all heads, the
 *     positions split over the pool;
 *   - RMSNorm and layer norm on f32 rows (ref's double sums and products, vectorised), rows
 *     split over the pool; copies of views with a contiguous last axis, a memmove per row;
 *   - casts f32 -> f16 and f16 -> f32 on such views (vcvtps2ph / vcvtph2ps), ref's bits;
 *   - SiLU on eight lanes with a polynomial e^x (the activation op's SILU, cpu.c).
 * Anything else runs the ref definition. Large element counts are split over the pool in chunks
 * fixed by the size alone.
 */
#include <math.h>
#include <string.h>

#include "cpu.h"
#include "cpu_vexp.h"
#include "ref/ref.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define ROW_X86 1
#define ROW_AVX2 __attribute__((target("avx2,fma")))
#endif

#define CHUNK 16384 /* elements per task */
#define MAX_HALF INGOT__CPU_ROPE_MAX_HALF /* RoPE pairs per row kept on the stack */

static bool f32c(const ingot_tensor *t)
{
    const uint8_t *p = ing_ptr(t);
    return t->dtype == INGOT_DTYPE_F32 && p && (uintptr_t)p % 4 == 0 &&
           ingot_tensor_is_contiguous(t);
}

typedef struct bin_job {
    ingot_binary_op op;
    const float *a, *c;
    float *d;
    bool a1, c1; /* scalar operand */
    double s;    /* binary_scalar */
    bool scalar;
} bin_job;

static void bin_task(void *arg, int64_t b, int64_t e)
{
    const bin_job *j = arg;
    for (int64_t i = b; i < e; i++) {
        float x = j->a[j->a1 ? 0 : i];
        if (j->scalar) {
            double y = j->s, r = 0;
            switch (j->op) {
            case INGOT_BINARY_ADD: r = (double)x + y; break;
            case INGOT_BINARY_SUB: r = (double)x - y; break;
            case INGOT_BINARY_MUL: r = (double)x * y; break;
            default: r = (double)x / y; break;
            }
            j->d[i] = (float)r;
            continue;
        }
        float y = j->c[j->c1 ? 0 : i];
        switch (j->op) {
        case INGOT_BINARY_ADD: j->d[i] = x + y; break;
        case INGOT_BINARY_SUB: j->d[i] = x - y; break;
        case INGOT_BINARY_MUL: j->d[i] = x * y; break;
        default: j->d[i] = x / y; break;
        }
    }
}

#ifdef ROW_X86
/* bin_task_vv's loop eight lanes a step: d may be a or c (x += y, the runtime's residual adds
 * and gate products run in place), which the compiler's overlap check sends to its scalar loop
 * (2816 elements: 0.9 us where the arithmetic takes 0.1). The ops validate that d is exactly a
 * or c or apart from both, so lane order does not matter; the same roundings. Returns where the
 * whole steps end (the tail is bin_task_vv's). */
ROW_AVX2 static int64_t bin_vv_avx2(ingot_binary_op op, const float *a, const float *c, float *d,
                                    int64_t b, int64_t e)
{
    int64_t i = b;
    for (; i + 8 <= e; i += 8) {
        __m256 x = _mm256_loadu_ps(a + i), y = _mm256_loadu_ps(c + i), r;
        switch (op) {
        case INGOT_BINARY_ADD: r = _mm256_add_ps(x, y); break;
        case INGOT_BINARY_SUB: r = _mm256_sub_ps(x, y); break;
        case INGOT_BINARY_MUL: r = _mm256_mul_ps(x, y); break;
        default: r = _mm256_div_ps(x, y); break;
        }
        _mm256_storeu_ps(d + i, r);
    }
    return i;
}
#endif

/* Same-shape f32 operands: one loop per op (the same roundings as bin_task: one f32 operation
 * per element); eight lanes a step at the AVX2 levels. */
static void bin_task_vv(void *arg, int64_t b, int64_t e)
{
    const bin_job *j = arg;
    const float *a = j->a, *c = j->c;
    float *d = j->d;
#ifdef ROW_X86
    if (ingot__get_isa() >= INGOT__ISA_AVX2) b = bin_vv_avx2(j->op, a, c, d, b, e);
#endif
    switch (j->op) {
    case INGOT_BINARY_ADD:
        for (int64_t i = b; i < e; i++) d[i] = a[i] + c[i];
        break;
    case INGOT_BINARY_SUB:
        for (int64_t i = b; i < e; i++) d[i] = a[i] - c[i];
        break;
    case INGOT_BINARY_MUL:
        for (int64_t i = b; i < e; i++) d[i] = a[i] * c[i];
        break;
    default:
        for (int64_t i = b; i < e; i++) d[i] = a[i] / c[i];
        break;
    }
}

static bool arith(ingot_binary_op op)
{
    return op == INGOT_BINARY_ADD || op == INGOT_BINARY_SUB || op == INGOT_BINARY_MUL ||
           op == INGOT_BINARY_DIV;
}

static void run(ingot_backend *b, int64_t n, bin_job *j)
{
    cpu_range_fn fn = j->scalar || j->a1 || j->c1 ? bin_task : bin_task_vv;
    if (n <= CHUNK) fn(j, 0, n);
    else ingot__cpu_run(ingot_backend_ctx(b), n, CHUNK, fn, j);
}

ingot_status ingot__cpu_binary(ingot_backend *b, ingot_binary_op op, ingot_tensor *dst,
                               const ingot_tensor *a, const ingot_tensor *c, ingot_error *err)
{
    int64_t n = ing_nelem(dst), na = ing_nelem(a), nc = ing_nelem(c);
    if (!arith(op) || !f32c(dst) || !f32c(a) || !f32c(c) || (na != n && na != 1) ||
        (nc != n && nc != 1))
        return ingot__ref_binary(b, op, dst, a, c, err);
    bin_job j = {op, (const float *)(const void *)ing_ptr(a),
                 (const float *)(const void *)ing_ptr(c), (float *)(void *)ing_ptr(dst),
                 na == 1 && n > 1, nc == 1 && n > 1, 0.0, false};
    run(b, n, &j);
    return INGOT_OK;
}

ingot_status ingot__cpu_binary_scalar(ingot_backend *b, ingot_binary_op op, ingot_tensor *dst,
                                      const ingot_tensor *a, double s, ingot_error *err)
{
    if (!arith(op) || !f32c(dst) || !f32c(a))
        return ingot__ref_binary_scalar(b, op, dst, a, s, err);
    bin_job j = {op, (const float *)(const void *)ing_ptr(a), NULL, (float *)(void *)ing_ptr(dst),
                 false, false, s, true};
    run(b, ing_nelem(dst), &j);
    return INGOT_OK;
}

typedef struct rope_job {
    const uint8_t *px, *pp;
    uint8_t *pd;
    const double *freq; /* theta^(-2i/d), i < half */
    int64_t H, half, xs0, xs1, ds0, ds1, pstride, pes;
    ingot_dtype pdt;
    ingot_rope_mode mode;
    const double *cs, *sn; /* one position: its cos and sin, computed (NULL: from freq) */
} rope_job;

static void rope_task(void *arg, int64_t b, int64_t e)
{
    const rope_job *j = arg;
    double cs[MAX_HALF], sn[MAX_HALF];
    int64_t half = j->half;
    bool il = j->mode == INGOT_ROPE_INTERLEAVED;
    for (int64_t s = b; s < e; s++) {
        const double *cv = cs, *sv = sn;
        if (j->cs) {
            cv = j->cs, sv = j->sn;
        } else {
            double p = (double)ing_ldi(j->pdt, j->pp + s * j->pstride * j->pes);
            for (int64_t i = 0; i < half; i++) {
                double ang = p * j->freq[i]; /* ref: p * pow(theta, -2i/d), the same double */
                cs[i] = cos(ang);
                sn[i] = sin(ang);
            }
        }
        for (int64_t h = 0; h < j->H; h++) {
            const float *xr = (const float *)(const void *)j->px + h * j->xs0 + s * j->xs1;
            float *dr = (float *)(void *)j->pd + h * j->ds0 + s * j->ds1;
            for (int64_t i = 0; i < half; i++) {
                int64_t i0 = il ? 2 * i : i, i1 = il ? 2 * i + 1 : i + half;
                double x0 = xr[i0], x1 = xr[i1];
                dr[i0] = (float)(x0 * cv[i] - x1 * sv[i]);
                dr[i1] = (float)(x0 * sv[i] + x1 * cv[i]);
            }
        }
    }
}

ingot_status ingot__cpu_rope(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *x,
                             const ingot_tensor *pos, double theta, ingot_rope_mode mode,
                             ingot_error *err)
{
    const uint8_t *px = ing_ptr(x), *pp = ing_ptr(pos);
    uint8_t *pd = ing_ptr(dst);
    int64_t d = x->shape[2], half = d / 2;
    if (x->rank != 3 || x->dtype != INGOT_DTYPE_F32 || dst->dtype != INGOT_DTYPE_F32 || !px ||
        !pd || (uintptr_t)px % 4 || (uintptr_t)pd % 4 || x->strides[2] != 1 ||
        dst->strides[2] != 1 || half > MAX_HALF)
        return ingot__ref_rope(b, dst, x, pos, theta, mode, err);
    int64_t S = x->shape[1];
    rope_job j = {px, pp, pd, NULL, x->shape[0], half, x->strides[0], x->strides[1],
                  dst->strides[0], dst->strides[1], pos->strides[0],
                  (int64_t)ing_esize(pos->dtype), pos->dtype, mode, NULL, NULL};
    cpu_ctx *c = ingot_backend_ctx(b);
    double p0 = S == 1 ? (double)ing_ldi(pos->dtype, pp) : 0;
    if (S == 1 && c->rope_valid && c->rope_p == p0 && c->rope_theta == theta &&
        c->rope_d == d) {
        j.cs = c->rope_cs, j.sn = c->rope_sn; /* the angles of the previous call */
        rope_task(&j, 0, 1);
        return INGOT_OK;
    }
    double freq[MAX_HALF];
    for (int64_t i = 0; i < half; i++) freq[i] = pow(theta, -2.0 * (double)i / (double)d);
    j.freq = freq;
    if (S == 1) { /* the angles, kept for the next call at this position */
        for (int64_t i = 0; i < half; i++) {
            double ang = p0 * freq[i]; /* as rope_task computes it */
            c->rope_cs[i] = cos(ang);
            c->rope_sn[i] = sin(ang);
        }
        c->rope_valid = true, c->rope_p = p0, c->rope_theta = theta, c->rope_d = d;
        j.cs = c->rope_cs, j.sn = c->rope_sn;
    }
    int64_t per = j.H * half + 1; /* pairs per position */
    if (S < 2 || S * per < 8192) rope_task(&j, 0, S);
    else ingot__cpu_run(ingot_backend_ctx(b), S, (4096 + per - 1) / per, rope_task, &j);
    return INGOT_OK;
}

/* ---- RMSNorm ---- */

typedef struct norm_job {
    const float *x, *w, *bias; /* bias: layer norm's, or NULL */
    float *d;
    int64_t xs, ds, n;
    double eps;
    bool layer; /* layer norm (mean subtracted) rather than RMSNorm */
    bool avx2;
} norm_job;

/* sum of x[i] in double, four partial sums */
static double sum_d(const float *x, int64_t n)
{
    double p[4] = {0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        for (int u = 0; u < 4; u++) p[u] += (double)x[i + u];
    double s = (p[0] + p[2]) + (p[1] + p[3]);
    for (; i < n; i++) s += (double)x[i];
    return s;
}

/* sum of (x[i] - m)^2 in double, four partial sums */
static double sumsq(const float *x, int64_t n, double m)
{
    double p[4] = {0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        for (int u = 0; u < 4; u++) p[u] += ((double)x[i + u] - m) * ((double)x[i + u] - m);
    double s = (p[0] + p[2]) + (p[1] + p[3]);
    for (; i < n; i++) s += ((double)x[i] - m) * ((double)x[i] - m);
    return s;
}

/* ref's per-element formula: ((x - mean) inv) w (+ bias) in double, rounded once */
static void norm_out(const norm_job *j, const float *x, float *d, int64_t i0, double m,
                     double inv)
{
    for (int64_t i = i0; i < j->n; i++) {
        double v = ((double)x[i] - m) * inv * (double)j->w[i];
        if (j->bias) v += (double)j->bias[i];
        d[i] = (float)v;
    }
}

static void norm_rows_scalar(const norm_job *j, int64_t b, int64_t e)
{
    for (int64_t r = b; r < e; r++) {
        const float *x = j->x + r * j->xs;
        double m = j->layer ? sum_d(x, j->n) / (double)j->n : 0.0;
        double inv = 1.0 / sqrt(sumsq(x, j->n, m) / (double)j->n + j->eps);
        norm_out(j, x, j->d + r * j->ds, 0, m, inv);
    }
}

#ifdef ROW_X86
/* sum of (x[i] - m)^2 (sq) or of x[i] (!sq) in double, sixteen partial sums */
ROW_AVX2 static double sum_avx2(const float *x, int64_t n, double m, bool sq)
{
    __m256d s0 = _mm256_setzero_pd(), s1 = s0, s2 = s0, s3 = s0, vm = _mm256_set1_pd(m);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256d a0 = _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + i)), vm);
        __m256d a1 = _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + i + 4)), vm);
        __m256d a2 = _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + i + 8)), vm);
        __m256d a3 = _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + i + 12)), vm);
        if (sq) {
            s0 = _mm256_fmadd_pd(a0, a0, s0);
            s1 = _mm256_fmadd_pd(a1, a1, s1);
            s2 = _mm256_fmadd_pd(a2, a2, s2);
            s3 = _mm256_fmadd_pd(a3, a3, s3);
        } else {
            s0 = _mm256_add_pd(a0, s0);
            s1 = _mm256_add_pd(a1, s1);
            s2 = _mm256_add_pd(a2, s2);
            s3 = _mm256_add_pd(a3, s3);
        }
    }
    __m256d s4 = _mm256_add_pd(_mm256_add_pd(s0, s2), _mm256_add_pd(s1, s3));
    double t[4];
    _mm256_storeu_pd(t, s4);
    double s = (t[0] + t[2]) + (t[1] + t[3]);
    for (; i < n; i++) s += sq ? ((double)x[i] - m) * ((double)x[i] - m) : (double)x[i] - m;
    return s;
}

/* norm_rows_scalar's formula with the sums sixteen doubles at a time and the output four
 * elements a step (the same double operations per element, rounded once to f32). */
ROW_AVX2 static void norm_rows_avx2(const norm_job *j, int64_t b, int64_t e)
{
    int64_t n = j->n;
    for (int64_t r = b; r < e; r++) {
        const float *x = j->x + r * j->xs;
        float *d = j->d + r * j->ds;
        double m = j->layer ? sum_avx2(x, n, 0.0, false) / (double)n : 0.0;
        double inv = 1.0 / sqrt(sum_avx2(x, n, m, true) / (double)n + j->eps);
        __m256d vi = _mm256_set1_pd(inv), vm = _mm256_set1_pd(m);
        int64_t i = 0;
        for (; i + 4 <= n; i += 4) {
            __m256d v = _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + i)), vm);
            v = _mm256_mul_pd(_mm256_mul_pd(v, vi), _mm256_cvtps_pd(_mm_loadu_ps(j->w + i)));
            if (j->bias) v = _mm256_add_pd(v, _mm256_cvtps_pd(_mm_loadu_ps(j->bias + i)));
            _mm_storeu_ps(d + i, _mm256_cvtpd_ps(v));
        }
        norm_out(j, x, d, i, m, inv);
    }
}
#endif

static void norm_task(void *arg, int64_t b, int64_t e)
{
    const norm_job *j = arg;
#ifdef ROW_X86
    if (j->avx2) {
        norm_rows_avx2(j, b, e);
        return;
    }
#endif
    norm_rows_scalar(j, b, e);
}

static bool f32_vec(const ingot_tensor *t)
{
    return t && t->dtype == INGOT_DTYPE_F32 && ing_ptr(t) && (uintptr_t)ing_ptr(t) % 4 == 0 &&
           (t->shape[0] <= 1 || t->strides[0] == 1);
}

/* Both norms: x rows with a contiguous last axis, f32 w (and bias) with unit stride. */
static bool norm_run(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *x,
                     const ingot_tensor *w, const ingot_tensor *bias, double eps, bool layer)
{
    int64_t rx, ldx, rd, ldd;
    if (x->dtype != INGOT_DTYPE_F32 || !f32_vec(w) || (bias && !f32_vec(bias)) ||
        !ing_ptr(x) || !ing_ptr(dst) || (uintptr_t)ing_ptr(x) % 4 ||
        (uintptr_t)ing_ptr(dst) % 4 || !ingot__cpu_rows_view(x, &rx, &ldx) ||
        !ingot__cpu_rows_view(dst, &rd, &ldd))
        return false;
    norm_job j = {(const float *)(const void *)ing_ptr(x), (const float *)(const void *)ing_ptr(w),
                  bias ? (const float *)(const void *)ing_ptr(bias) : NULL,
                  (float *)(void *)ing_ptr(dst), ldx, ldd, x->shape[x->rank - 1], eps, layer,
                  false};
#ifdef ROW_X86
    j.avx2 = ingot__get_isa() >= INGOT__ISA_AVX2;
#endif
    if (rx * j.n < 32768) norm_task(&j, 0, rx);
    else ingot__cpu_run(ingot_backend_ctx(b), rx, (8192 + j.n - 1) / j.n, norm_task, &j);
    return true;
}

ingot_status ingot__cpu_rms_norm(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *x,
                                 const ingot_tensor *w, double eps, ingot_error *err)
{
    if (norm_run(b, dst, x, w, NULL, eps, false)) return INGOT_OK;
    return ingot__ref_rms_norm(b, dst, x, w, eps, err);
}

ingot_status ingot__cpu_layer_norm(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *x,
                                   const ingot_tensor *w, const ingot_tensor *bias, double eps,
                                   ingot_error *err)
{
    if (norm_run(b, dst, x, w, bias, eps, true)) return INGOT_OK;
    return ingot__ref_layer_norm(b, dst, x, w, bias, eps, err);
}

/* ---- copies ---- */

/* The rows of two views of one shape: both contiguous, one row of every element; else last axes
 * contiguous (rank 2-4), the leading axes right-aligned into three, their strides in bytes of
 * each view's element size; false for other views. */
typedef struct {
    int64_t sh[3], ss[3], ds[3], n; /* n: elements a row */
} row_views;

static bool rows_of(const ingot_tensor *dst, const ingot_tensor *src, row_views *v)
{
    uint32_t r = src->rank;
    if (!ing_ptr(src) || !ing_ptr(dst)) return false;
    for (int k = 0; k < 3; k++) v->sh[k] = 1, v->ss[k] = v->ds[k] = 0;
    if (ingot_tensor_is_contiguous(src) && ingot_tensor_is_contiguous(dst)) {
        v->n = ing_nelem(src);
        return true;
    }
    if (r < 2 || r > 4 || src->strides[r - 1] != 1 || dst->strides[r - 1] != 1) return false;
    int64_t es = (int64_t)ing_esize(src->dtype), ed = (int64_t)ing_esize(dst->dtype);
    for (uint32_t a = 0; a + 1 < r; a++) {
        uint32_t k = 3 - (r - 1) + a;
        v->sh[k] = src->shape[a];
        v->ss[k] = src->strides[a] * es;
        v->ds[k] = dst->strides[a] * ed;
    }
    v->n = src->shape[r - 1];
    return true;
}

ingot_status ingot__cpu_copy(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *src,
                             ingot_error *err)
{
    row_views v;
    if ((ingot_tensor_is_contiguous(src) && ingot_tensor_is_contiguous(dst)) ||
        !rows_of(dst, src, &v))
        return ingot__ref_copy(b, dst, src, err); /* both contiguous: one memmove there */
    const uint8_t *ps = ing_ptr(src);
    uint8_t *pd = ing_ptr(dst);
    size_t row = (size_t)v.n * ing_esize(src->dtype);
    for (int64_t i0 = 0; i0 < v.sh[0]; i0++)
        for (int64_t i1 = 0; i1 < v.sh[1]; i1++)
            for (int64_t i2 = 0; i2 < v.sh[2]; i2++)
                memmove(pd + i0 * v.ds[0] + i1 * v.ds[1] + i2 * v.ds[2],
                        ps + i0 * v.ss[0] + i1 * v.ss[1] + i2 * v.ss[2], row);
    return INGOT_OK;
}

/* ---- casts between f32 and f16 (the runtime's f16 KV cache: each decode step's keys and
 * values stored, a layer's cache widened for prefill) ---- */

/* ref's conversions, element by element (backend_internal.h): f32 -> f16 rounds to nearest even,
 * any NaN to the quiet NaN 0x7e00 with its sign; f16 -> f32 is exact with a NaN quieted (ref
 * loads through double). */
static inline uint16_t narrow1(float f) { return ing_f32_to_f16(f); }

static inline float widen1(uint16_t h)
{
    float f = ing_f16_to_f32(h);
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x7fffffu)) u |= 0x400000u;
    memcpy(&f, &u, 4);
    return f;
}

#ifdef ROW_X86
#define ROW_F16C __attribute__((target("avx2,f16c")))
/* Eight lanes a step by vcvtps2ph (the IEEE rounding ref spells out) unless a lane is a NaN
 * (vcvtps2ph keeps its payload), and by vcvtph2ps (which quiets a NaN as ref does). */
ROW_F16C static void narrow_row(const float *s, uint16_t *d, int64_t n)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 x = _mm256_loadu_ps(s + i);
        if (_mm256_movemask_ps(_mm256_cmp_ps(x, x, _CMP_UNORD_Q))) {
            for (int k = 0; k < 8; k++) d[i + k] = narrow1(s[i + k]);
            continue;
        }
        _mm_storeu_si128((__m128i *)(void *)(d + i),
                         _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    }
    for (; i < n; i++) d[i] = narrow1(s[i]);
}

ROW_F16C static void widen_row(const uint16_t *s, float *d, int64_t n)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
        _mm256_storeu_ps(d + i, _mm256_cvtph_ps(h));
    }
    for (; i < n; i++) d[i] = widen1(s[i]);
}
#endif

/* f32 -> f16 and f16 -> f32 on views with contiguous rows, a row at a time (ref's per-element
 * dtype dispatch took 3.5 us for a decode step's 256 values); ref's bits. Anything else: ref. */
ingot_status ingot__cpu_cast(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *src,
                             ingot_error *err)
{
    row_views v;
    bool narrow = src->dtype == INGOT_DTYPE_F32 && dst->dtype == INGOT_DTYPE_F16;
    bool widen = src->dtype == INGOT_DTYPE_F16 && dst->dtype == INGOT_DTYPE_F32;
    const uint8_t *ps = ing_ptr(src);
    uint8_t *pd = ing_ptr(dst);
    if ((!narrow && !widen) || !rows_of(dst, src, &v) ||
        (uintptr_t)(narrow ? ps : pd) % 4 || (uintptr_t)(narrow ? pd : ps) % 2)
        return ingot__ref_cast(b, dst, src, err);
#ifdef ROW_X86
    bool simd = ingot__get_isa() >= INGOT__ISA_AVX2;
#endif
    for (int64_t i0 = 0; i0 < v.sh[0]; i0++)
        for (int64_t i1 = 0; i1 < v.sh[1]; i1++)
            for (int64_t i2 = 0; i2 < v.sh[2]; i2++) {
                const void *rs = ps + i0 * v.ss[0] + i1 * v.ss[1] + i2 * v.ss[2];
                void *rd = pd + i0 * v.ds[0] + i1 * v.ds[1] + i2 * v.ds[2];
#ifdef ROW_X86
                if (simd) {
                    if (widen) widen_row(rs, rd, v.n);
                    else narrow_row(rs, rd, v.n);
                    continue;
                }
#endif
                for (int64_t k = 0; k < v.n; k++) {
                    if (widen) ((float *)rd)[k] = widen1(((const uint16_t *)rs)[k]);
                    else ((uint16_t *)rd)[k] = narrow1(((const float *)rs)[k]);
                }
            }
    return INGOT_OK;
}

/* ---- SiLU ---- */

#ifdef ROW_X86
/* e^x on eight lanes (cpu_vexp.h), x clamped to [-87.3, 89] (NaN kept): below, e^x is under
 * 1e-38; above 88.7 (n = 128) the exponent field makes it +inf, as expf overflows. */
ROW_AVX2 static inline __m256 exp8(__m256 x)
{
    x = _mm256_max_ps(_mm256_set1_ps(-87.3f), x); /* NaN in the second operand is kept */
    return cpu_vexp8(_mm256_min_ps(_mm256_set1_ps(89.0f), x));
}

ROW_AVX2 static inline __m256 silu8(__m256 x)
{
    __m256 e = exp8(_mm256_sub_ps(_mm256_setzero_ps(), x));
    return _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
}

ROW_AVX2 static void silu_avx2(const float *a, float *d, int64_t n)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(d + i, silu8(_mm256_loadu_ps(a + i)));
    if (i < n) { /* the tail through the same lanes */
        float t[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        memcpy(t, a + i, (size_t)(n - i) * 4);
        _mm256_storeu_ps(t, silu8(_mm256_loadu_ps(t)));
        memcpy(d + i, t, (size_t)(n - i) * 4);
    }
}
#endif

void ingot__cpu_silu(const float *a, float *d, int64_t n)
{
#ifdef ROW_X86
    if (ingot__get_isa() >= INGOT__ISA_AVX2) {
        silu_avx2(a, d, n);
        return;
    }
#endif
    for (int64_t i = 0; i < n; i++) d[i] = a[i] / (1.0f + expf(-a[i]));
}
