/*
 * cpu_rowops.c - cpu routes for the small per-row ops a decoder runs between its matmuls, so
 * they cost what the arithmetic costs instead of ref's per-element dtype dispatch:
 *   - binary ADD/SUB/MUL/DIV on f32 operands of one contiguous shape (a or c may also be a
 *     one-element scalar), and binary_scalar on contiguous f32: the same values as ref (an f32
 *     op rounded once equals ref's double op rounded to f32);
 *   - RoPE on f32 [heads, seq, d] views with a contiguous last axis: ref's exact formula (double
 *     angle, cos, sin and products), each position's cos/sin computed once for all heads.
 * Anything else runs the ref definition. Large element counts are split over the pool in chunks
 * fixed by the size alone.
 */
#include <math.h>

#include "cpu.h"
#include "ref/ref.h"

#define CHUNK 16384 /* elements per task */
#define MAX_HALF 2048 /* RoPE pairs per row kept on the stack */

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

static bool arith(ingot_binary_op op)
{
    return op == INGOT_BINARY_ADD || op == INGOT_BINARY_SUB || op == INGOT_BINARY_MUL ||
           op == INGOT_BINARY_DIV;
}

static void run(ingot_backend *b, int64_t n, bin_job *j)
{
    if (n <= CHUNK) bin_task(j, 0, n);
    else ingot__cpu_run(ingot_backend_ctx(b), n, CHUNK, bin_task, j);
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
    double cs[MAX_HALF], sn[MAX_HALF];
    int64_t H = x->shape[0], S = x->shape[1], pes = (int64_t)ing_esize(pos->dtype);
    for (int64_t s = 0; s < S; s++) {
        double p = (double)ing_ldi(pos->dtype, pp + s * pos->strides[0] * pes);
        for (int64_t i = 0; i < half; i++) {
            double ang = p * pow(theta, -2.0 * (double)i / (double)d);
            cs[i] = cos(ang);
            sn[i] = sin(ang);
        }
        for (int64_t h = 0; h < H; h++) {
            const float *xr = (const float *)(const void *)px + h * x->strides[0] +
                              s * x->strides[1];
            float *dr = (float *)(void *)pd + h * dst->strides[0] + s * dst->strides[1];
            for (int64_t i = 0; i < half; i++) {
                int64_t i0 = mode == INGOT_ROPE_INTERLEAVED ? 2 * i : i;
                int64_t i1 = mode == INGOT_ROPE_INTERLEAVED ? 2 * i + 1 : i + half;
                double x0 = xr[i0], x1 = xr[i1];
                dr[i0] = (float)(x0 * cs[i] - x1 * sn[i]);
                dr[i1] = (float)(x0 * sn[i] + x1 * cs[i]);
            }
        }
    }
    return INGOT_OK;
}
