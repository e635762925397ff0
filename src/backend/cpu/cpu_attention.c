/*
 * cpu_attention.c - the cpu backend's scaled dot-product attention (ingot_op_attention) for f32
 * operands whose last axis is contiguous: one task per (batch, head, query row), keys visited in
 * blocks with an online softmax (running maximum and sum, the accumulator rescaled when the
 * maximum grows), so there is no scores buffer and nothing is allocated whatever the key
 * length. Grouped-query heads and the bottom-right causal rule as ref defines them; a row whose
 * keys are all masked gives zeros. Other dtypes and layouts run the ref definition.
 * Determinism: every output row is computed by one task, keys in order, whatever the threads.
 *
 * Causal prefill at the AVX-512 levels (16 or more query rows, head sizes multiples of 16 up to
 * 256) runs blocked, flash-style: a task takes 16 query rows of one head, transposed once, and
 * walks the keys in blocks of 16: the 16 x 16 scores are 16 FMAs a head element (lane = query
 * row), the online softmax runs lane-wise, then P . V. A row's arithmetic depends only on the
 * row (key blocks start at key 0, its scores are one FMA chain over the head, keys it does not
 * see are skipped), so its bits depend neither on the rows it was blocked with nor on the
 * threads.
 */
#include <math.h>
#include <string.h>

#include "cpu.h"
#include "cpu_vexp.h"
#include "ref/ref.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define ATT_X86 1
#define ATT_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")))
#endif
#define QB 16      /* query rows per blocked task */
#define KB16 16    /* keys per block there */
#define MAX_D16 256 /* head sizes of the blocked path */

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

#ifdef ATT_X86
/* e^x on 16 lanes for x <= 0 (cpu_vexp.h; clamped at -87.3, e^0 is exactly 1), as exp_block;
 * lanes of keys a row does not see are zeroed by the caller. */
ATT_AVX512 static inline __m512 exp16(__m512 x)
{
    return cpu_vexp16(_mm512_max_ps(x, _mm512_set1_ps(-87.3f)));
}

/* Tasks: (batch, head, block of QB query rows). The block's queries are transposed once (qt[d]
 * holds element d of the 16 rows), so a key's scores for the 16 rows are one vector, lane =
 * row: s_k = sum_d qt[d] k[d], one FMA chain per key over d, 16 keys in flight. The online
 * softmax then runs lane-wise (each row's maximum, sum and rescaling in its own lane, keys in
 * order), and P . V adds each row's weighted value rows in key order. */
ATT_AVX512 static void att_blocks(void *arg, int64_t begin, int64_t end)
{
    const att_job *j = arg;
    int64_t nqb = (j->Lq + QB - 1) / QB, D = j->D, Dv = j->Dv;
    _Alignas(64) float qt[MAX_D16 * QB];  /* qt[d * QB + row] */
    _Alignas(64) float acc[QB * MAX_D16]; /* acc[row * Dv + e] */
    _Alignas(64) float pw[KB16 * QB];     /* the block's weights, pw[key * QB + row] */
    _Alignas(64) float cw[QB];
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512 ninf = _mm512_set1_ps(-INFINITY);
    for (int64_t t = begin; t < end; t++) {
        int64_t b = t / (j->H * nqb), h = t / nqb % j->H, i0 = t % nqb * QB, hk = h / j->grp;
        int64_t nq = j->Lq - i0 < QB ? j->Lq - i0 : QB, off = j->Lk - j->Lq;
        const float *kb = j->k + b * j->ks[0] + hk * j->ks[1];
        const float *vb = j->v + b * j->vs[0] + hk * j->vs[1];
        for (int64_t r = 0; r < QB; r++) { /* rows past nq repeat the last one */
            const float *q = j->q + b * j->qs[0] + h * j->qs[1] +
                             (i0 + (r < nq ? r : nq - 1)) * j->qs[2];
            for (int64_t d = 0; d < D; d++) qt[d * QB + r] = q[d];
        }
        memset(acc, 0, sizeof(float) * (size_t)(QB * Dv));
        __m512 mx = ninf, sum = _mm512_setzero_ps();
        /* lane r sees keys <= i0 + r + off */
        __m512i lastv = _mm512_add_epi32(lane, _mm512_set1_epi32((int32_t)(i0 + off)));
        int64_t last_blk = i0 + nq - 1 + off;
        for (int64_t j0 = 0; j0 <= last_blk; j0 += KB16) {
            int64_t nk = j->Lk - j0 < KB16 ? j->Lk - j0 : KB16;
            const float *kr[KB16];
            for (int64_t kk = 0; kk < KB16; kk++)
                kr[kk] = kb + (j0 + (kk < nk ? kk : nk - 1)) * j->ks[2];
            __m512 s[KB16];
            for (int64_t kk = 0; kk < KB16; kk++) s[kk] = _mm512_setzero_ps();
            for (int64_t d = 0; d < D; d++) {
                __m512 qv = _mm512_load_ps(qt + d * QB);
                s[0] = _mm512_fmadd_ps(qv, _mm512_set1_ps(kr[0][d]), s[0]);
                s[1] = _mm512_fmadd_ps(qv, _mm512_set1_ps(kr[1][d]), s[1]);
                s[2] = _mm512_fmadd_ps(qv, _mm512_set1_ps(kr[2][d]), s[2]);
                s[3] = _mm512_fmadd_ps(qv, _mm512_set1_ps(kr[3][d]), s[3]);
                s[4] = _mm512_fmadd_ps(qv, _mm512_set1_ps(kr[4][d]), s[4]);
                s[5] = _mm512_fmadd_ps(qv, _mm512_set1_ps(kr[5][d]), s[5]);
                s[6] = _mm512_fmadd_ps(qv, _mm512_set1_ps(kr[6][d]), s[6]);
                s[7] = _mm512_fmadd_ps(qv, _mm512_set1_ps(kr[7][d]), s[7]);
                s[8] = _mm512_fmadd_ps(qv, _mm512_set1_ps(kr[8][d]), s[8]);
                s[9] = _mm512_fmadd_ps(qv, _mm512_set1_ps(kr[9][d]), s[9]);
                s[10] = _mm512_fmadd_ps(qv, _mm512_set1_ps(kr[10][d]), s[10]);
                s[11] = _mm512_fmadd_ps(qv, _mm512_set1_ps(kr[11][d]), s[11]);
                s[12] = _mm512_fmadd_ps(qv, _mm512_set1_ps(kr[12][d]), s[12]);
                s[13] = _mm512_fmadd_ps(qv, _mm512_set1_ps(kr[13][d]), s[13]);
                s[14] = _mm512_fmadd_ps(qv, _mm512_set1_ps(kr[14][d]), s[14]);
                s[15] = _mm512_fmadd_ps(qv, _mm512_set1_ps(kr[15][d]), s[15]);
            }
            /* lane-wise: the block's maximum over the keys each row sees */
            __mmask16 vis[KB16];
            __m512 bmx = ninf;
            for (int64_t kk = 0; kk < KB16; kk++) {
                s[kk] = _mm512_mul_ps(s[kk], _mm512_set1_ps(j->scale));
                vis[kk] = kk < nk ? _mm512_cmp_epi32_mask(_mm512_set1_epi32((int32_t)(j0 + kk)),
                                                          lastv, _MM_CMPINT_LE)
                                  : 0;
                bmx = _mm512_mask_max_ps(bmx, vis[kk], bmx, s[kk]);
            }
            /* rows whose maximum grows: rescale (a row without a maximum yet: by 0) */
            __mmask16 grow = _mm512_cmp_ps_mask(bmx, mx, _CMP_GT_OQ);
            __mmask16 first = _mm512_cmp_ps_mask(mx, ninf, _CMP_EQ_OQ);
            __m512 nmx = _mm512_mask_mov_ps(mx, grow, bmx);
            __m512 corr = _mm512_mask_mov_ps(_mm512_set1_ps(1.0f), grow,
                                             exp16(_mm512_sub_ps(mx, nmx)));
            corr = _mm512_mask_mov_ps(corr, (__mmask16)(grow & first), _mm512_setzero_ps());
            sum = _mm512_mask_mul_ps(sum, grow, sum, corr);
            mx = nmx;
            if (grow) {
                _mm512_store_ps(cw, corr);
                for (int64_t r = 0; r < nq; r++) {
                    if (!(grow >> r & 1)) continue;
                    __m512 c = _mm512_set1_ps(cw[r]);
                    float *a = acc + r * Dv;
                    for (int64_t e = 0; e < Dv; e += 16)
                        _mm512_store_ps(a + e, _mm512_mul_ps(_mm512_load_ps(a + e), c));
                }
            }
            for (int64_t kk = 0; kk < KB16; kk++) { /* weights, summed in key order */
                __m512 p = _mm512_maskz_mov_ps(vis[kk], exp16(_mm512_sub_ps(s[kk], mx)));
                sum = _mm512_mask_add_ps(sum, vis[kk], sum, p);
                _mm512_store_ps(pw + kk * QB, p);
            }
            /* acc[r] += sum_k pw[k][r] V[j0 + k], keys in order, four rows at a time; a key a
             * row does not see is skipped (not added as 0) */
            for (int64_t e = 0; e < Dv; e += 16) {
                __m512 vv[KB16];
                for (int64_t kk = 0; kk < nk; kk++)
                    vv[kk] = _mm512_loadu_ps(vb + (j0 + kk) * j->vs[2] + e);
                for (int64_t r0 = 0; r0 < nq; r0 += 4) { /* named: kept in registers */
                    float *a0 = acc + r0 * Dv + e, *a1 = a0 + Dv, *a2 = a1 + Dv, *a3 = a2 + Dv;
                    __m512 x0 = _mm512_load_ps(a0), x1 = _mm512_load_ps(a1);
                    __m512 x2 = _mm512_load_ps(a2), x3 = _mm512_load_ps(a3);
                    for (int64_t kk = 0; kk < nk; kk++) {
                        const float *p = pw + kk * QB + r0;
                        unsigned m = (unsigned)(vis[kk] >> r0);
                        x0 = _mm512_mask3_fmadd_ps(_mm512_set1_ps(p[0]), vv[kk], x0,
                                                   (__mmask16)(m & 1 ? 0xffff : 0));
                        x1 = _mm512_mask3_fmadd_ps(_mm512_set1_ps(p[1]), vv[kk], x1,
                                                   (__mmask16)(m & 2 ? 0xffff : 0));
                        x2 = _mm512_mask3_fmadd_ps(_mm512_set1_ps(p[2]), vv[kk], x2,
                                                   (__mmask16)(m & 4 ? 0xffff : 0));
                        x3 = _mm512_mask3_fmadd_ps(_mm512_set1_ps(p[3]), vv[kk], x3,
                                                   (__mmask16)(m & 8 ? 0xffff : 0));
                    }
                    _mm512_store_ps(a0, x0);
                    _mm512_store_ps(a1, x1);
                    _mm512_store_ps(a2, x2);
                    _mm512_store_ps(a3, x3);
                }
            }
        }
        _mm512_store_ps(cw, sum);
        for (int64_t r = 0; r < nq; r++) {
            float inv = cw[r] > 0.0f ? 1.0f / cw[r] : 0.0f;
            float *out = j->d + b * j->ds[0] + h * j->ds[1] + (i0 + r) * j->ds[2];
            const float *a = acc + r * Dv;
            if (j->ds[3] == 1) {
                __m512 iv = _mm512_set1_ps(inv);
                for (int64_t e = 0; e < Dv; e += 16)
                    _mm512_storeu_ps(out + e, _mm512_mul_ps(_mm512_load_ps(a + e), iv));
            } else {
                for (int64_t e = 0; e < Dv; e++) out[e * j->ds[3]] = a[e] * inv;
            }
        }
    }
}
#endif

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
#ifdef ATT_X86
    if (j.causal && j.Lq >= QB && j.Lk >= j.Lq && j.D % 16 == 0 && j.Dv % 16 == 0 &&
        j.D <= MAX_D16 && j.Dv <= MAX_D16 && ingot__get_isa() >= INGOT__ISA_AVX512) {
        int64_t tasks = q->shape[0] * j.H * ((j.Lq + QB - 1) / QB);
        ingot__cpu_run(ingot_backend_ctx(b), tasks, 1, att_blocks, &j);
        return INGOT_OK;
    }
#endif
    int64_t rows = q->shape[0] * j.H * j.Lq, work = (j.Lk + 1) * (j.D + j.Dv);
    /* chunks fixed by the shape alone: about 64 Ki multiply-adds each */
    int64_t chunk = work >= 65536 ? 1 : 65536 / work;
    ingot__cpu_run(ingot_backend_ctx(b), rows, chunk, att_rows, &j);
    return INGOT_OK;
}
