/*
 * cpu_attention.c - the cpu backend's scaled dot-product attention (ingot_op_attention) for f32
 * operands whose last axis is contiguous: one task per (batch, head, query row), keys visited in
 * blocks with an online softmax (running maximum and sum, the accumulator rescaled when the
 * maximum grows), so there is no scores buffer and nothing is allocated whatever the key
 * length. Grouped-query heads and the bottom-right causal rule as ref defines them; a row whose
 * keys are all masked gives zeros. Other dtypes and layouts run the ref definition.
 * Determinism: every output row is computed by one task, keys in order, whatever the threads.
 */
#include <math.h>
#include <string.h>

#include "cpu.h"
#include "ref/ref.h"

#define KBLOCK 64     /* keys per block of scores (on the stack) */
#define MAX_DV 1024   /* accumulator on the stack */

typedef struct att_job {
    const float *q, *k, *v;
    float *d;
    int64_t qs[4], ks[4], vs[4], ds[4];
    int64_t H, Lq, D, Lk, Dv, grp;
    float scale;
    bool causal;
} att_job;

/* w[t] = e^(w[t] - mx) over a block (w[t] <= mx), four lanes at a time (GCC/clang vector
 * extensions: SSE on the x86-64 baseline), within 2 ulp of expf: Cephes' range reduction
 * (x = n ln2 + r, ln2 split in two) and degree-6 polynomial, 2^n built in the exponent field.
 * Below -87.3 the argument is clamped (e^-87.3 ~ 1e-38: nothing next to the maximum's 1). */
typedef float v4f __attribute__((vector_size(16)));
typedef int32_t v4i __attribute__((vector_size(16)));

static void exp_block(float *w, int64_t n, float mx)
{
    int64_t t = 0;
    for (; t + 4 <= n; t += 4) {
        v4f x;
        memcpy(&x, w + t, sizeof x);
        x -= mx;
        v4f lo = {-87.3f, -87.3f, -87.3f, -87.3f};
        v4i below = x < lo, xi, li;
        memcpy(&xi, &x, sizeof xi);
        memcpy(&li, &lo, sizeof li);
        xi = (below & li) | (~below & xi); /* max(x, lo), NaN kept */
        memcpy(&x, &xi, sizeof x);
        v4f n4 = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
        v4f r = x - n4 * 0.693359375f + n4 * 2.12194440e-4f;
        v4f p = r * 1.9875691500e-4f + 1.3981999507e-3f;
        p = p * r + 8.3334519073e-3f;
        p = p * r + 4.1665795894e-2f;
        p = p * r + 1.6666665459e-1f;
        p = p * r + 5.0000001201e-1f;
        p = p * r * r + r + 1.0f;
        v4i e = (__builtin_convertvector(n4, v4i) + 127) << 23;
        v4f scale;
        memcpy(&scale, &e, sizeof scale);
        p *= scale;
        memcpy(w + t, &p, sizeof p);
    }
    for (; t < n; t++) w[t] = expf(w[t] - mx);
}

/* q . k over n elements with 8 independent partial sums (no reduction chain; vectorisable). */
static float dot(const float *a, const float *b, int64_t n)
{
    float p[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int u = 0; u < 8; u++) p[u] += a[i + u] * b[i + u];
    float s = ((p[0] + p[4]) + (p[1] + p[5])) + ((p[2] + p[6]) + (p[3] + p[7]));
    for (; i < n; i++) s += a[i] * b[i];
    return s;
}

static void att_rows(void *arg, int64_t begin, int64_t end)
{
    const att_job *j = arg;
    float acc[MAX_DV], w[KBLOCK];
    for (int64_t r = begin; r < end; r++) {
        int64_t b = r / (j->H * j->Lq), h = r / j->Lq % j->H, i = r % j->Lq, hk = h / j->grp;
        int64_t last = j->causal ? i + (j->Lk - j->Lq) : j->Lk - 1, Dv = j->Dv;
        if (last > j->Lk - 1) last = j->Lk - 1;
        const float *q = j->q + b * j->qs[0] + h * j->qs[1] + i * j->qs[2];
        const float *kb = j->k + b * j->ks[0] + hk * j->ks[1];
        const float *vb = j->v + b * j->vs[0] + hk * j->vs[1];
        float *out = j->d + b * j->ds[0] + h * j->ds[1] + i * j->ds[2];
        for (int64_t e = 0; e < Dv; e++) acc[e] = 0.0f;
        float mx = -INFINITY, sum = 0.0f;
        for (int64_t j0 = 0; j0 <= last; j0 += KBLOCK) {
            int64_t n = last + 1 - j0 < KBLOCK ? last + 1 - j0 : KBLOCK;
            float bmx = -INFINITY;
            for (int64_t t = 0; t < n; t++) {
                w[t] = dot(q, kb + (j0 + t) * j->ks[2], j->D) * j->scale;
                bmx = w[t] > bmx ? w[t] : bmx;
            }
            if (bmx > mx) { /* a new maximum: rescale what was summed so far */
                float corr = mx == -INFINITY ? 0.0f : expf(mx - bmx);
                sum *= corr;
                for (int64_t e = 0; e < Dv; e++) acc[e] *= corr;
                mx = bmx;
            }
            exp_block(w, n, mx);
            for (int64_t t = 0; t < n; t++) sum += w[t];
            /* acc += w . V[block], eight columns at a time kept in registers */
            const float *vr = vb + j0 * j->vs[2];
            int64_t e0 = 0;
            for (; e0 + 8 <= Dv; e0 += 8) {
                float a[8];
                for (int u = 0; u < 8; u++) a[u] = acc[e0 + u];
                for (int64_t t = 0; t < n; t++) {
                    const float *v = vr + t * j->vs[2] + e0;
                    for (int u = 0; u < 8; u++) a[u] += w[t] * v[u];
                }
                for (int u = 0; u < 8; u++) acc[e0 + u] = a[u];
            }
            for (; e0 < Dv; e0++)
                for (int64_t t = 0; t < n; t++) acc[e0] += w[t] * vr[t * j->vs[2] + e0];
        }
        float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
        for (int64_t e = 0; e < Dv; e++) out[e * j->ds[3]] = acc[e] * inv;
    }
}

static bool f32_rows(const ingot_tensor *t)
{
    const uint8_t *p = ing_ptr(t);
    return t->dtype == INGOT_DTYPE_F32 && p && (uintptr_t)p % 4 == 0 &&
           (t->shape[3] <= 1 || t->strides[3] == 1);
}

ingot_status ingot__cpu_attention(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *q,
                                  const ingot_tensor *k, const ingot_tensor *v,
                                  const ingot_attn_params *p, ingot_error *err)
{
    if (!f32_rows(q) || !f32_rows(k) || !f32_rows(v) || dst->dtype != INGOT_DTYPE_F32 ||
        !ing_ptr(dst) || (uintptr_t)ing_ptr(dst) % 4 || v->shape[3] > MAX_DV)
        return ingot__ref_attention(b, dst, q, k, v, p, err);
    att_job j;
    j.q = (const float *)(const void *)ing_ptr(q);
    j.k = (const float *)(const void *)ing_ptr(k);
    j.v = (const float *)(const void *)ing_ptr(v);
    j.d = (float *)(void *)ing_ptr(dst);
    for (int a = 0; a < 4; a++) {
        j.qs[a] = q->strides[a];
        j.ks[a] = k->strides[a];
        j.vs[a] = v->strides[a];
        j.ds[a] = dst->strides[a];
    }
    j.H = q->shape[1];
    j.Lq = q->shape[2];
    j.D = q->shape[3];
    j.Lk = k->shape[2];
    j.Dv = v->shape[3];
    j.grp = j.H / k->shape[1];
    j.scale = (float)p->scale;
    j.causal = p->causal;
    int64_t rows = q->shape[0] * j.H * j.Lq, work = (j.Lk + 1) * (j.D + j.Dv);
    /* chunks fixed by the shape alone: about 64 Ki multiply-adds each */
    int64_t chunk = work >= 65536 ? 1 : 65536 / work;
    ingot__cpu_run(ingot_backend_ctx(b), rows, chunk, att_rows, &j);
    return INGOT_OK;
}
