/*
 * attn_keys8.c - scaled dot-product attention for the runtime (backend_export.h), vectorised
 * across keys rather than along the head: eight keys' scores per AVX2 step (the eight dot
 * products reduced together), the online softmax on eight lanes, the weighted values summed with
 * several accumulators. Head sizes of 8 or 16 (the small llama2.c models) leave the cpu
 * backend's per-key kernel mostly idle; this one runs them 4-6x faster. Same semantics and the
 * same row-per-task split as ingot_op_attention on the cpu backend; it declines (false) where it
 * does not apply, and the caller runs the op. Decode steps with grouped query heads take a
 * kernel of their own (below; AVX-512, and an AVX2 form): four query heads per pass over their
 * KV head's keys and values, from an F32 or F16 cache.
 */
#include "cpu/cpu.h"
#include "cpu/cpu_vexp.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define K8_X86 1
#define K8_TARGET __attribute__((target("avx2,fma,f16c")))
#define K16_TARGET __attribute__((target("avx512f,avx512dq,avx2,fma,f16c")))
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/tree16.h"
#endif

#define K8_BLOCK 64    /* keys per block of scores (on the stack) */
#define K8_MAX_DV 1024 /* accumulator on the stack */
#define K16_MAX_D 256  /* decode kernel: head sizes up to this, multiples of 64 (kgroup) */

typedef struct k8_job {
    const float *q, *k, *v;
    const uint16_t *kh, *vh; /* the decode kernel's F16 keys and values (half) */
    bool half;
    float *d;
    int64_t qs[4], ks[4], vs[4], ds[4];
    int64_t H, Lq, D, Lk, Dv, grp;
    float scale;
    bool causal;
} k8_job;

#ifdef K8_X86
/* e^x on eight lanes (x <= 0 here; cpu_vexp.h); below -87.3 the argument is clamped. */
K8_TARGET static __m256 exp8(__m256 x)
{
    return cpu_vexp8(_mm256_max_ps(x, _mm256_set1_ps(-87.3f)));
}

/* q . k for the eight keys at k0 + r ks (r < m; lanes r >= m repeat key m - 1), D a multiple
 * of 8: one 8-lane partial sum per key, the eight reduced together by pairwise horizontal adds;
 * lane r = key r. Named accumulators, so they stay in registers. */
K8_TARGET static __m256 dot8(const float *q, const float *k0, int64_t ks, int64_t m, int64_t D)
{
    const float *k1 = k0 + (m > 1 ? ks : 0), *k2 = k0 + (m > 2 ? 2 : m - 1) * ks;
    const float *k3 = k0 + (m > 3 ? 3 : m - 1) * ks, *k4 = k0 + (m > 4 ? 4 : m - 1) * ks;
    const float *k5 = k0 + (m > 5 ? 5 : m - 1) * ks, *k6 = k0 + (m > 6 ? 6 : m - 1) * ks;
    const float *k7 = k0 + (m > 7 ? 7 : m - 1) * ks;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0,
           a7 = a0;
    for (int64_t d = 0; d < D; d += 8) {
        __m256 qv = _mm256_loadu_ps(q + d);
        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(k0 + d), qv, a0);
        a1 = _mm256_fmadd_ps(_mm256_loadu_ps(k1 + d), qv, a1);
        a2 = _mm256_fmadd_ps(_mm256_loadu_ps(k2 + d), qv, a2);
        a3 = _mm256_fmadd_ps(_mm256_loadu_ps(k3 + d), qv, a3);
        a4 = _mm256_fmadd_ps(_mm256_loadu_ps(k4 + d), qv, a4);
        a5 = _mm256_fmadd_ps(_mm256_loadu_ps(k5 + d), qv, a5);
        a6 = _mm256_fmadd_ps(_mm256_loadu_ps(k6 + d), qv, a6);
        a7 = _mm256_fmadd_ps(_mm256_loadu_ps(k7 + d), qv, a7);
    }
    __m256 t0 = _mm256_hadd_ps(a0, a1), t1 = _mm256_hadd_ps(a2, a3);
    __m256 t2 = _mm256_hadd_ps(a4, a5), t3 = _mm256_hadd_ps(a6, a7);
    __m256 u0 = _mm256_hadd_ps(t0, t1), u1 = _mm256_hadd_ps(t2, t3);
    return _mm256_add_ps(_mm256_permute2f128_ps(u0, u1, 0x20),
                         _mm256_permute2f128_ps(u0, u1, 0x31));
}

K8_TARGET static float hsum8(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
}

K8_TARGET static float hmax8(__m256 v)
{
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
}

/* acc[0, Dv) += sum_t w[t] v[t] over n keys (row stride vs). */
K8_TARGET static void acc_values(float *acc, const float *w, const float *v, int64_t vs,
                                 int64_t n, int64_t Dv)
{
    int64_t e = 0;
    for (; e + 32 <= Dv; e += 32) { /* four columns of lanes: independent chains already */
        __m256 a0 = _mm256_loadu_ps(acc + e), a1 = _mm256_loadu_ps(acc + e + 8);
        __m256 a2 = _mm256_loadu_ps(acc + e + 16), a3 = _mm256_loadu_ps(acc + e + 24);
        for (int64_t t = 0; t < n; t++) {
            const float *vr = v + t * vs + e;
            __m256 wt = _mm256_broadcast_ss(w + t);
            a0 = _mm256_fmadd_ps(wt, _mm256_loadu_ps(vr), a0);
            a1 = _mm256_fmadd_ps(wt, _mm256_loadu_ps(vr + 8), a1);
            a2 = _mm256_fmadd_ps(wt, _mm256_loadu_ps(vr + 16), a2);
            a3 = _mm256_fmadd_ps(wt, _mm256_loadu_ps(vr + 24), a3);
        }
        _mm256_storeu_ps(acc + e, a0);
        _mm256_storeu_ps(acc + e + 8, a1);
        _mm256_storeu_ps(acc + e + 16, a2);
        _mm256_storeu_ps(acc + e + 24, a3);
    }
    for (; e < Dv; e += 8) { /* one column of lanes: four chains over the keys, summed after */
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        const float *vr = v + e;
        int64_t t = 0;
        for (; t + 4 <= n; t += 4, vr += 4 * vs) {
            a0 = _mm256_fmadd_ps(_mm256_broadcast_ss(w + t), _mm256_loadu_ps(vr), a0);
            a1 = _mm256_fmadd_ps(_mm256_broadcast_ss(w + t + 1), _mm256_loadu_ps(vr + vs), a1);
            a2 = _mm256_fmadd_ps(_mm256_broadcast_ss(w + t + 2), _mm256_loadu_ps(vr + 2 * vs), a2);
            a3 = _mm256_fmadd_ps(_mm256_broadcast_ss(w + t + 3), _mm256_loadu_ps(vr + 3 * vs), a3);
        }
        for (; t < n; t++, vr += vs)
            a0 = _mm256_fmadd_ps(_mm256_broadcast_ss(w + t), _mm256_loadu_ps(vr), a0);
        __m256 s = _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3));
        _mm256_storeu_ps(acc + e, _mm256_add_ps(_mm256_loadu_ps(acc + e), s));
    }
}

K8_TARGET static void k8_rows(void *arg, int64_t begin, int64_t end)
{
    const k8_job *j = arg;
    float acc[K8_MAX_DV], w[K8_BLOCK];
    const __m256 ninf = _mm256_set1_ps(-INFINITY), sc = _mm256_set1_ps(j->scale);
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
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
        for (int64_t j0 = 0; j0 <= last; j0 += K8_BLOCK) {
            int64_t n = last + 1 - j0 < K8_BLOCK ? last + 1 - j0 : K8_BLOCK;
            __m256 vmx = ninf;
            for (int64_t t = 0; t < n; t += 8) {
                int64_t m = n - t < 8 ? n - t : 8;
                /* lanes past the last key repeat its score: the maximum is unchanged, and
                 * their weights are zeroed below */
                __m256 s = _mm256_mul_ps(dot8(q, kb + (j0 + t) * j->ks[2], j->ks[2], m, j->D), sc);
                vmx = _mm256_max_ps(vmx, s);
                _mm256_storeu_ps(w + t, s);
            }
            float bmx = hmax8(vmx);
            if (bmx > mx) { /* a new maximum: rescale what was summed so far */
                float corr = mx == -INFINITY ? 0.0f : expf(mx - bmx);
                sum *= corr;
                for (int64_t e = 0; e < Dv; e++) acc[e] *= corr;
                mx = bmx;
            }
            __m256 vsum = _mm256_setzero_ps(), vm = _mm256_set1_ps(mx);
            for (int64_t t = 0; t < n; t += 8) {
                __m256 p = exp8(_mm256_sub_ps(_mm256_loadu_ps(w + t), vm));
                if (n - t < 8)
                    p = _mm256_and_ps(p, _mm256_castsi256_ps(_mm256_cmpgt_epi32(
                                             _mm256_set1_epi32((int)(n - t)), lane)));
                vsum = _mm256_add_ps(vsum, p);
                _mm256_storeu_ps(w + t, p);
            }
            sum += hsum8(vsum);
            acc_values(acc, w, vb + j0 * j->vs[2], j->vs[2], n, Dv);
        }
        float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
        for (int64_t e = 0; e < Dv; e++) out[e * j->ds[3]] = acc[e] * inv;
    }
}
#endif

/* ---- decode: one query row a head, four query heads of one KV head together ----
 * Scores of four keys for four query heads as sixteen 16-lane partial sums reduced by one
 * transposed tree (each key row loaded once for the four heads), the online softmax on 16 lanes
 * a head, and the weighted values accumulated for the four heads from each value row loaded
 * once: the grouped-query decode step, where the eight-key kernel above re-reads a KV head's
 * keys and values for every query head and reduces each score on its own. A task is one group of
 * four query heads; a row's bits depend only on the row. */
#define K16_G 4 /* query heads a pass */
#define K16_UNROLL _Pragma("GCC unroll 16")
_Static_assert(K16_G == 4, "four query heads a pass: the score stores below take four");

/* A decode task's group of K16_G query heads (both forms of the decode kernel below): where its
 * query rows, keys and values are, and its running softmax state. */
typedef struct {
    int64_t b, h0, kb, vb; /* batch, first query head, offsets of its KV head's keys / values */
    const float *q[K16_G];
    float mx[K16_G], sum[K16_G];
} kgroup;

static inline void kgroup_begin(const k8_job *j, int64_t r, kgroup *g, float (*acc)[K16_MAX_D])
{
    int64_t per = j->H / K16_G;
    g->b = r / per, g->h0 = r % per * K16_G;
    int64_t hk = g->h0 / j->grp;
    g->kb = g->b * j->ks[0] + hk * j->ks[1], g->vb = g->b * j->vs[0] + hk * j->vs[1];
    for (int h = 0; h < K16_G; h++) {
        g->q[h] = j->q + g->b * j->qs[0] + (g->h0 + h) * j->qs[1];
        g->mx[h] = -INFINITY, g->sum[h] = 0.0f;
        for (int64_t e = 0; e < j->D; e++) acc[h][e] = 0.0f;
    }
}

/* Software prefetch of a decode task's cache rows (where ingot__cpu_prefetch says the streaming
 * kernels prefetch): the key rows KV_PF_BYTES ahead of the scores being computed and the value
 * rows of those scores, which the block's values pass reads next. Without it the step waited on
 * the cache's reads one stream at a time: on Zen 5 a layer's attention over 144 positions took
 * 21 us, as long as its o product (docs/PERFORMANCE.md). Rows past the last are not touched. */
#define KV_PF_BYTES 4096

static inline void kv_prefetch_rows(const k8_job *j, bool value, int64_t base, int64_t r0,
                                    int64_t rows, int64_t last)
{
    int64_t stride = value ? j->vs[2] : j->ks[2], len = value ? j->Dv : j->D;
    size_t es = j->half ? 2 : 4;
    const uint8_t *p = j->half ? (const uint8_t *)(value ? j->vh : j->kh)
                               : (const uint8_t *)(value ? j->v : j->k);
    for (int64_t r = r0; r < r0 + rows && r <= last; r++) {
        uintptr_t a = (uintptr_t)(p + (size_t)(base + r * stride) * es), e = a + (size_t)len * es;
        for (a &= ~(uintptr_t)63; a < e; a += 64) _mm_prefetch((const char *)a, _MM_HINT_T0);
    }
}

/* Rows of keys a task prefetches ahead: KV_PF_BYTES of them, at least 4. */
static inline int64_t kv_prefetch_ahead(const k8_job *j)
{
    int64_t row = j->D * (j->half ? 2 : 4), n = (KV_PF_BYTES + row - 1) / row;
    return n < 4 ? 4 : n;
}

static inline void kgroup_end(const k8_job *j, const kgroup *g, const float (*acc)[K16_MAX_D])
{
    for (int h = 0; h < K16_G; h++) {
        float inv = g->sum[h] > 0.0f ? 1.0f / g->sum[h] : 0.0f;
        float *out = j->d + g->b * j->ds[0] + (g->h0 + h) * j->ds[1];
        for (int64_t e = 0; e < j->D; e++) out[e * j->ds[3]] = acc[h][e] * inv;
    }
}

K16_TARGET static inline __m512 k16_sum16(const __m512 *p)
{
    __m512 r;
    TREE16_PS(r, p);
    return r;
}

/* 16 keys' or values' elements from F32 or F16 storage (the cache as the runtime keeps it) */
K16_TARGET static inline __attribute__((always_inline)) __m512 k16_ld(const float *f,
                                                                      const uint16_t *h,
                                                                      int64_t i, bool half)
{
    return half ? _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(h + i)))
                : _mm512_loadu_ps(f + i);
}

K16_TARGET static inline __attribute__((always_inline)) void
k16_body(const k8_job *j, int64_t begin, int64_t end, bool half)
{
    _Alignas(64) float acc[K16_G][K16_MAX_D], sc[K16_G][K8_BLOCK];
    const int64_t D = j->D, last = j->Lk - 1, ahead = kv_prefetch_ahead(j);
    const bool pf = ingot__cpu_prefetch();
    for (int64_t r = begin; r < end; r++) {
        kgroup G;
        kgroup_begin(j, r, &G, acc);
        const float *const *q = G.q;
        const int64_t kb = G.kb, vb = G.vb;
        float *mx = G.mx, *sum = G.sum;
        if (pf) kv_prefetch_rows(j, false, kb, 0, ahead, last);
        for (int64_t j0 = 0; j0 <= last; j0 += K8_BLOCK) {
            int64_t n = last + 1 - j0 < K8_BLOCK ? last + 1 - j0 : K8_BLOCK;
            for (int64_t t = 0; t < n; t += 4) { /* keys past the last repeat it (unused) */
                if (pf) {
                    kv_prefetch_rows(j, false, kb, j0 + t + ahead, 4, last);
                    kv_prefetch_rows(j, true, vb, j0 + t, 4, last);
                }
                int64_t kr[4];
                for (int k = 0; k < 4; k++)
                    kr[k] = kb + (j0 + (t + k < n ? t + k : n - 1)) * j->ks[2];
                __m512 a[16];
                K16_UNROLL
                for (int i = 0; i < 16; i++) a[i] = _mm512_setzero_ps();
                for (int64_t c = 0; c < D; c += 16) {
                    __m512 kv[4], qv[K16_G];
                    K16_UNROLL
                    for (int k = 0; k < 4; k++) kv[k] = k16_ld(j->k, j->kh, kr[k] + c, half);
                    K16_UNROLL
                    for (int g = 0; g < K16_G; g++) qv[g] = _mm512_loadu_ps(q[g] + c);
                    K16_UNROLL
                    for (int g = 0; g < K16_G; g++)
                        K16_UNROLL
                        for (int k = 0; k < 4; k++)
                            a[g * 4 + k] = _mm512_fmadd_ps(kv[k], qv[g], a[g * 4 + k]);
                }
                /* lanes 4g .. 4g + 3: head g's scores of the four keys (past n: unused) */
                __m512 sv = _mm512_mul_ps(k16_sum16(a), _mm512_set1_ps(j->scale));
                _mm_storeu_ps(sc[0] + t, _mm512_castps512_ps128(sv));
                _mm_storeu_ps(sc[1] + t, _mm512_extractf32x4_ps(sv, 1));
                _mm_storeu_ps(sc[2] + t, _mm512_extractf32x4_ps(sv, 2));
                _mm_storeu_ps(sc[3] + t, _mm512_extractf32x4_ps(sv, 3));
            }
            for (int g = 0; g < K16_G; g++) { /* online softmax over the block, 16 lanes */
                __m512 vmx = _mm512_set1_ps(-INFINITY);
                for (int64_t t = 0; t < n; t += 16) {
                    __mmask16 m = (__mmask16)(n - t >= 16 ? 0xFFFF : (1u << (n - t)) - 1);
                    vmx = _mm512_mask_max_ps(vmx, m, vmx, _mm512_loadu_ps(sc[g] + t));
                }
                float bmx = _mm512_reduce_max_ps(vmx);
                if (bmx > mx[g]) { /* a new maximum: rescale what was summed so far */
                    float corr = mx[g] == -INFINITY ? 0.0f : expf(mx[g] - bmx);
                    sum[g] *= corr;
                    __m512 cv = _mm512_set1_ps(corr);
                    for (int64_t e = 0; e < D; e += 16)
                        _mm512_store_ps(acc[g] + e, _mm512_mul_ps(_mm512_load_ps(acc[g] + e), cv));
                    mx[g] = bmx;
                }
                __m512 vsum = _mm512_setzero_ps(), vm = _mm512_set1_ps(mx[g]);
                for (int64_t t = 0; t < n; t += 16) {
                    __mmask16 m = (__mmask16)(n - t >= 16 ? 0xFFFF : (1u << (n - t)) - 1);
                    __m512 x = _mm512_maskz_loadu_ps(m, sc[g] + t);
                    __m512 pz = _mm512_maskz_mov_ps(
                        m, cpu_vexp16(_mm512_max_ps(_mm512_sub_ps(x, vm), _mm512_set1_ps(-87.3f))));
                    vsum = _mm512_add_ps(vsum, pz);
                    _mm512_mask_storeu_ps(sc[g] + t, m, pz);
                }
                sum[g] += _mm512_reduce_add_ps(vsum);
            }
            for (int64_t c = 0; c < D; c += 64) { /* values: 64 columns of four heads at a time */
                __m512 o[K16_G][4];
                K16_UNROLL
                for (int g = 0; g < K16_G; g++)
                    K16_UNROLL
                    for (int u = 0; u < 4; u++) o[g][u] = _mm512_load_ps(acc[g] + c + 16 * u);
                int64_t vr = vb + j0 * j->vs[2] + c;
                for (int64_t t = 0; t < n; t++, vr += j->vs[2]) {
                    __m512 vv[4];
                    K16_UNROLL
                    for (int u = 0; u < 4; u++) vv[u] = k16_ld(j->v, j->vh, vr + 16 * u, half);
                    K16_UNROLL
                    for (int g = 0; g < K16_G; g++) {
                        __m512 w = _mm512_set1_ps(sc[g][t]);
                        K16_UNROLL
                        for (int u = 0; u < 4; u++) o[g][u] = _mm512_fmadd_ps(w, vv[u], o[g][u]);
                    }
                }
                K16_UNROLL
                for (int g = 0; g < K16_G; g++)
                    K16_UNROLL
                    for (int u = 0; u < 4; u++) _mm512_store_ps(acc[g] + c + 16 * u, o[g][u]);
            }
        }
        kgroup_end(j, &G, (const float(*)[K16_MAX_D])acc);
    }
}

K16_TARGET static void k16_groups(void *arg, int64_t begin, int64_t end)
{
    k16_body(arg, begin, end, false);
}

K16_TARGET static void k16_groups_half(void *arg, int64_t begin, int64_t end)
{
    k16_body(arg, begin, end, true);
}

/* ---- the same decode step at the AVX2 levels (the AMD machines without AVX-512): four query
 * heads of one KV head a task, two keys a step, their eight 8-lane partial sums reduced together
 * by horizontal adds (lane 2g + k: head g, key k), the online softmax on 8 lanes a head, the
 * values 16 columns of the four heads at a time; F16 caches read in place by vcvtph2ps. */
K8_TARGET static inline __attribute__((always_inline)) __m256 k8d_ld(const float *f,
                                                                     const uint16_t *h,
                                                                     int64_t i, bool half)
{
    return half ? _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(h + i)))
                : _mm256_loadu_ps(f + i);
}

K8_TARGET static inline __attribute__((always_inline)) void
k8d_body(const k8_job *j, int64_t begin, int64_t end, bool half)
{
    _Alignas(32) float acc[K16_G][K16_MAX_D], sc[K16_G][K8_BLOCK + 8];
    const int64_t D = j->D, last = j->Lk - 1, ahead = kv_prefetch_ahead(j);
    const bool pf = ingot__cpu_prefetch();
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (int64_t r = begin; r < end; r++) {
        kgroup G;
        kgroup_begin(j, r, &G, acc);
        const float *const *q = G.q;
        const int64_t kb = G.kb, vb = G.vb;
        float *mx = G.mx, *sum = G.sum;
        if (pf) kv_prefetch_rows(j, false, kb, 0, ahead, last);
        for (int64_t j0 = 0; j0 <= last; j0 += K8_BLOCK) {
            int64_t n = last + 1 - j0 < K8_BLOCK ? last + 1 - j0 : K8_BLOCK;
            for (int64_t t = 0; t < n; t += 2) { /* a key past the last repeats it (unused) */
                if (pf) {
                    kv_prefetch_rows(j, false, kb, j0 + t + ahead, 2, last);
                    kv_prefetch_rows(j, true, vb, j0 + t, 2, last);
                }
                int64_t k0 = kb + (j0 + t) * j->ks[2];
                int64_t k1 = kb + (j0 + (t + 1 < n ? t + 1 : t)) * j->ks[2];
                __m256 a[8];
                K16_UNROLL
                for (int i = 0; i < 8; i++) a[i] = _mm256_setzero_ps();
                for (int64_t c = 0; c < D; c += 8) {
                    __m256 kv0 = k8d_ld(j->k, j->kh, k0 + c, half);
                    __m256 kv1 = k8d_ld(j->k, j->kh, k1 + c, half);
                    K16_UNROLL
                    for (int g = 0; g < K16_G; g++) {
                        __m256 qv = _mm256_loadu_ps(q[g] + c);
                        a[2 * g] = _mm256_fmadd_ps(kv0, qv, a[2 * g]);
                        a[2 * g + 1] = _mm256_fmadd_ps(kv1, qv, a[2 * g + 1]);
                    }
                }
                __m256 t0 = _mm256_hadd_ps(a[0], a[1]), t1 = _mm256_hadd_ps(a[2], a[3]);
                __m256 t2 = _mm256_hadd_ps(a[4], a[5]), t3 = _mm256_hadd_ps(a[6], a[7]);
                __m256 u0 = _mm256_hadd_ps(t0, t1), u1 = _mm256_hadd_ps(t2, t3);
                __m256 sv = _mm256_mul_ps(_mm256_add_ps(_mm256_permute2f128_ps(u0, u1, 0x20),
                                                        _mm256_permute2f128_ps(u0, u1, 0x31)),
                                          _mm256_set1_ps(j->scale));
                _Alignas(32) float o8[8];
                _mm256_store_ps(o8, sv);
                for (int g = 0; g < K16_G; g++) sc[g][t] = o8[2 * g], sc[g][t + 1] = o8[2 * g + 1];
            }
            for (int g = 0; g < K16_G; g++) /* the lanes past n that the 8-lane loads read */
                for (int64_t t = n; t < ((n + 7) & ~(int64_t)7); t++) sc[g][t] = 0.0f;
            for (int g = 0; g < K16_G; g++) { /* online softmax over the block, 8 lanes */
                __m256 vmx = _mm256_set1_ps(-INFINITY);
                for (int64_t t = 0; t < n; t += 8) {
                    __m256 x = _mm256_loadu_ps(sc[g] + t);
                    if (n - t < 8)
                        x = _mm256_blendv_ps(_mm256_set1_ps(-INFINITY), x,
                                             _mm256_castsi256_ps(_mm256_cmpgt_epi32(
                                                 _mm256_set1_epi32((int)(n - t)), lane)));
                    vmx = _mm256_max_ps(vmx, x);
                }
                float bmx = hmax8(vmx);
                if (bmx > mx[g]) { /* a new maximum: rescale what was summed so far */
                    float corr = mx[g] == -INFINITY ? 0.0f : expf(mx[g] - bmx);
                    sum[g] *= corr;
                    __m256 cv = _mm256_set1_ps(corr);
                    for (int64_t e = 0; e < D; e += 8)
                        _mm256_store_ps(acc[g] + e, _mm256_mul_ps(_mm256_load_ps(acc[g] + e), cv));
                    mx[g] = bmx;
                }
                __m256 vsum = _mm256_setzero_ps(), vm = _mm256_set1_ps(mx[g]);
                for (int64_t t = 0; t < n; t += 8) {
                    __m256 p = exp8(_mm256_sub_ps(_mm256_loadu_ps(sc[g] + t), vm));
                    if (n - t < 8)
                        p = _mm256_and_ps(p, _mm256_castsi256_ps(_mm256_cmpgt_epi32(
                                                 _mm256_set1_epi32((int)(n - t)), lane)));
                    vsum = _mm256_add_ps(vsum, p);
                    _mm256_storeu_ps(sc[g] + t, p);
                }
                sum[g] += hsum8(vsum);
            }
            for (int64_t c = 0; c < D; c += 16) { /* values: 16 columns of four heads at a time */
                __m256 o[K16_G][2];
                K16_UNROLL
                for (int g = 0; g < K16_G; g++)
                    o[g][0] = _mm256_load_ps(acc[g] + c), o[g][1] = _mm256_load_ps(acc[g] + c + 8);
                int64_t vr = vb + j0 * j->vs[2] + c;
                for (int64_t t = 0; t < n; t++, vr += j->vs[2]) {
                    __m256 v0 = k8d_ld(j->v, j->vh, vr, half), v1 = k8d_ld(j->v, j->vh, vr + 8, half);
                    K16_UNROLL
                    for (int g = 0; g < K16_G; g++) {
                        __m256 w = _mm256_broadcast_ss(&sc[g][t]);
                        o[g][0] = _mm256_fmadd_ps(w, v0, o[g][0]);
                        o[g][1] = _mm256_fmadd_ps(w, v1, o[g][1]);
                    }
                }
                K16_UNROLL
                for (int g = 0; g < K16_G; g++)
                    _mm256_store_ps(acc[g] + c, o[g][0]), _mm256_store_ps(acc[g] + c + 8, o[g][1]);
            }
        }
        kgroup_end(j, &G, (const float(*)[K16_MAX_D])acc);
    }
}

K8_TARGET static void k8d_groups(void *arg, int64_t begin, int64_t end)
{
    k8d_body(arg, begin, end, false);
}

K8_TARGET static void k8d_groups_half(void *arg, int64_t begin, int64_t end)
{
    k8d_body(arg, begin, end, true);
}

static bool k8_operand(const ingot_tensor *t, bool half)
{
    const uint8_t *p = t->buf ? ingot_buffer_host(t->buf) : NULL;
    size_t es = half ? 2 : 4;
    return t->rank == 4 && t->dtype == (half ? INGOT_DTYPE_F16 : INGOT_DTYPE_F32) && p &&
           (uintptr_t)(p + t->offset) % es == 0 && t->strides[3] == 1;
}

bool ingot__attention_keys8(ingot_backend *b, ingot_tensor *dst, const ingot_tensor *q,
                            const ingot_tensor *k, const ingot_tensor *v,
                            const ingot_attn_params *p)
{
#ifdef K8_X86
    bool half = k && k->dtype == INGOT_DTYPE_F16; /* the decode kernel's F16 cache */
    if (!b || b->ops != &ingot__backend_cpu || ingot__get_isa() < INGOT__ISA_AVX2 || !q || !k ||
        !v || !dst || !k8_operand(q, false) || !k8_operand(k, half) || !k8_operand(v, half) ||
        !k8_operand(dst, false))
        return false;
    int64_t D = q->shape[3], Dv = v->shape[3], H = q->shape[1], Hk = k->shape[1];
    if (D <= 0 || D % 8 || Dv <= 0 || Dv % 8 || Dv > K8_MAX_DV || Hk <= 0 || H % Hk ||
        k->shape[3] != D || q->shape[2] > k->shape[2] || !dst->buf->writable)
        return false;
    /* decode (one query row): four query heads of one KV head a task (AVX-512 or AVX2) */
    bool dec = q->shape[2] == 1 && D == Dv && D % 64 == 0 && D <= K16_MAX_D &&
               (H / Hk) % K16_G == 0;
    bool wide = ingot__get_isa() >= INGOT__ISA_AVX512;
    if (half && !dec) return false;
    k8_job j;
    j.half = half;
    const uint8_t *base[4] = {ingot_buffer_host(q->buf), ingot_buffer_host(k->buf),
                              ingot_buffer_host(v->buf), ingot_buffer_host(dst->buf)};
    j.q = (const float *)(const void *)(base[0] + q->offset);
    j.k = (const float *)(const void *)(base[1] + k->offset);
    j.v = (const float *)(const void *)(base[2] + v->offset);
    j.kh = (const uint16_t *)(const void *)(base[1] + k->offset);
    j.vh = (const uint16_t *)(const void *)(base[2] + v->offset);
    j.d = (float *)(void *)((uint8_t *)ingot_buffer_host(dst->buf) + dst->offset);
    for (int a = 0; a < 4; a++) {
        j.qs[a] = q->strides[a];
        j.ks[a] = k->strides[a];
        j.vs[a] = v->strides[a];
        j.ds[a] = dst->strides[a];
    }
    j.H = H;
    j.Lq = q->shape[2];
    j.D = D;
    j.Lk = k->shape[2];
    j.Dv = Dv;
    j.grp = H / Hk;
    j.scale = (float)(p && p->scale != 0 ? p->scale : 1.0 / sqrt((double)D));
    j.causal = p && p->causal;
    int64_t rows = q->shape[0] * H * j.Lq, work = (j.Lk + 1) * (D + Dv);
    if (rows <= 0) return true;
    cpu_ctx *cx = ingot_backend_ctx(b);
    if (dec) {
        ingot__cpu_run(cx, q->shape[0] * (H / K16_G), 1,
                       wide ? (half ? k16_groups_half : k16_groups)
                            : (half ? k8d_groups_half : k8d_groups),
                       &j);
        return true;
    }
    int64_t chunk = work >= 65536 ? 1 : 65536 / work;
    cpu_ctx *c = cx;
    /* decode (one query row a head, a short context): the heads split over every thread once
     * they carry 16K multiply-adds together, so the workers share them instead of waiting while
     * one thread runs them all (at most 1 + the threads' count of tasks). Each row is computed
     * alone, so the split does not change a bit. */
    int64_t th = c->threads > 1 ? (int64_t)c->threads : 1;
    if (th > 1 && rows * work >= 16384 && chunk * th > rows) chunk = (rows + th - 1) / th;
    ingot__cpu_run(c, rows, chunk, k8_rows, &j);
    return true;
#else
    (void)b, (void)dst, (void)q, (void)k, (void)v, (void)p;
    return false;
#endif
}
