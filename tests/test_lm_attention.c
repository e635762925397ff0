/*
 * test_lm_attention.c - the runtime's attention path for small head sizes
 * (ingot__attention_keys8, src/backend/export/attn_keys8.c) against a double-precision softmax
 * attention written here, and against ingot_op_attention: shapes with key counts around the
 * 8-key steps and 64-key blocks, grouped heads, causal and not, strided views, threads.
 */
#include <math.h>

#include "cpu/kernels/kernels.h"
#include "export/backend_export.h"
#include "harness.h"

static uint64_t rng = 0x243F6A8885A308D3ull;
static float urand(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((rng >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
}

typedef struct shape {
    int64_t B, H, Hk, Lq, Lk, D, Dv;
    bool causal;
} shape;

/* Contiguous [d0, d1, d2, d3] F32 tensor at byte offset off of buf. */
static void t4(ingot_tensor *t, ingot_buffer *buf, uint64_t off, int64_t d0, int64_t d1,
               int64_t d2, int64_t d3)
{
    int64_t s[4] = {d0, d1, d2, d3};
    ingot_tensor_init(t, buf, off, INGOT_DTYPE_F32, 4, s, NULL);
}

/* The definition, in double: softmax over the visible keys of scale q.k, times V. */
static void reference(const shape *s, const float *q, const float *k, const float *v,
                      double *out)
{
    double scale = 1.0 / sqrt((double)s->D);
    int64_t grp = s->H / s->Hk;
    for (int64_t b = 0; b < s->B; b++)
        for (int64_t h = 0; h < s->H; h++)
            for (int64_t i = 0; i < s->Lq; i++) {
                const float *qr = q + ((b * s->H + h) * s->Lq + i) * s->D;
                const float *kb = k + (b * s->Hk + h / grp) * s->Lk * s->D;
                const float *vb = v + (b * s->Hk + h / grp) * s->Lk * s->Dv;
                double *o = out + ((b * s->H + h) * s->Lq + i) * s->Dv;
                int64_t last = s->causal ? i + s->Lk - s->Lq : s->Lk - 1;
                double mx = -INFINITY, sum = 0;
                for (int64_t t = 0; t <= last; t++) {
                    double d = 0;
                    for (int64_t e = 0; e < s->D; e++) d += (double)qr[e] * kb[t * s->D + e];
                    mx = fmax(mx, d * scale);
                }
                for (int64_t e = 0; e < s->Dv; e++) o[e] = 0;
                for (int64_t t = 0; t <= last; t++) {
                    double d = 0;
                    for (int64_t e = 0; e < s->D; e++) d += (double)qr[e] * kb[t * s->D + e];
                    double w = exp(d * scale - mx);
                    sum += w;
                    for (int64_t e = 0; e < s->Dv; e++) o[e] += w * vb[t * s->Dv + e];
                }
                for (int64_t e = 0; e < s->Dv; e++) o[e] = sum > 0 ? o[e] / sum : 0;
            }
}

/* Runs one shape through keys8 (cpu, `threads`) and the cpu op; checks both against the
 * reference; returns keys8's output in got (caller-owned, B*H*Lq*Dv floats). */
static int run_shape(const shape *s, unsigned threads, float *got)
{
    int bad = 0;
    size_t nq = (size_t)(s->B * s->H * s->Lq * s->D), nk = (size_t)(s->B * s->Hk * s->Lk * s->D),
           nv = (size_t)(s->B * s->Hk * s->Lk * s->Dv), no = (size_t)(s->B * s->H * s->Lq * s->Dv);
    ingot_backend_opts bo = {0};
    bo.threads = threads;
    ingot_backend *be = NULL;
    ingot_buffer *bq = NULL, *bk = NULL, *bv = NULL, *bo1 = NULL, *bo2 = NULL;
    double *ref = malloc(no * sizeof *ref);
    if (!ref || ingot_backend_new("cpu", &bo, &be, NULL) ||
        ingot_buffer_alloc(be, nq * 4, &bq, NULL) || ingot_buffer_alloc(be, nk * 4, &bk, NULL) ||
        ingot_buffer_alloc(be, nv * 4, &bv, NULL) || ingot_buffer_alloc(be, no * 4, &bo1, NULL) ||
        ingot_buffer_alloc(be, no * 4, &bo2, NULL)) {
        bad = 1;
        goto done;
    }
    float *q = ingot_buffer_host(bq), *k = ingot_buffer_host(bk), *v = ingot_buffer_host(bv);
    for (size_t i = 0; i < nq; i++) q[i] = 2.0f * urand();
    for (size_t i = 0; i < nk; i++) k[i] = 2.0f * urand();
    for (size_t i = 0; i < nv; i++) v[i] = urand();
    reference(s, q, k, v, ref);
    ingot_tensor tq, tk, tv, to1, to2;
    t4(&tq, bq, 0, s->B, s->H, s->Lq, s->D);
    t4(&tk, bk, 0, s->B, s->Hk, s->Lk, s->D);
    t4(&tv, bv, 0, s->B, s->Hk, s->Lk, s->Dv);
    t4(&to1, bo1, 0, s->B, s->H, s->Lq, s->Dv);
    t4(&to2, bo2, 0, s->B, s->H, s->Lq, s->Dv);
    ingot_attn_params p = {0};
    p.causal = s->causal;
    if (!ingot__attention_keys8(be, &to1, &tq, &tk, &tv, &p) ||
        ingot_op_attention(be, &to2, &tq, &tk, &tv, &p, NULL) != INGOT_OK) {
        bad = 1;
        goto done;
    }
    const float *o1 = ingot_buffer_host(bo1), *o2 = ingot_buffer_host(bo2);
    double e1 = 0, e2 = 0;
    for (size_t i = 0; i < no; i++) {
        double den = fmax(1.0, fabs(ref[i]));
        e1 = fmax(e1, fabs(o1[i] - ref[i]) / den);
        e2 = fmax(e2, fabs(o2[i] - ref[i]) / den);
    }
    if (!(e1 <= 2e-6)) {
        fprintf(stderr, "  keys8 B%lld H%lld/%lld Lq%lld Lk%lld D%lld Dv%lld causal %d: %.3g "
                "from the reference (the op: %.3g)\n", (long long)s->B, (long long)s->H,
                (long long)s->Hk, (long long)s->Lq, (long long)s->Lk, (long long)s->D,
                (long long)s->Dv, s->causal, e1, e2);
        bad = 1;
    }
    memcpy(got, o1, no * 4);
done:
    free(ref);
    ingot_buffer_free(bq);
    ingot_buffer_free(bk);
    ingot_buffer_free(bv);
    ingot_buffer_free(bo1);
    ingot_buffer_free(bo2);
    ingot_backend_free(be);
    return bad;
}

static bool have_avx2(void)
{
    return ingot_cpu_isa_current() >= INGOT_CPU_ISA_AVX2;
}

/* The levels whose kernels the tests below run: the CPU's best (AVX-512: the 16-lane decode
 * kernel) and AVX2 (its 8-lane form), those the CPU has; n of them into lv. */
static int kernel_levels(ingot_cpu_isa lv[2])
{
    int n = 0;
    ingot_cpu_isa best = ingot_cpu_isa_current();
    if (best >= INGOT_CPU_ISA_AVX2) lv[n++] = best;
    if (best >= INGOT_CPU_ISA_AVX512) lv[n++] = INGOT_CPU_ISA_AVX2;
    return n;
}

TEST(keys8_matches_definition)
{
    if (!have_avx2()) {
        fprintf(stderr, "  (below AVX2: keys8 declines, checked in keys8_declines)\n");
        return;
    }
    static const shape shapes[] = {
        {1, 8, 4, 1, 1, 8, 8, true},       {1, 8, 4, 1, 7, 8, 8, true},
        {1, 8, 4, 1, 8, 8, 8, true},       {1, 8, 4, 1, 9, 8, 8, true},
        {1, 8, 4, 1, 63, 8, 8, true},      {1, 8, 4, 1, 64, 8, 8, true},
        {1, 8, 4, 1, 65, 8, 8, true},      {1, 8, 4, 1, 200, 8, 8, true},
        {1, 8, 4, 37, 37, 8, 8, true},     {1, 8, 4, 5, 130, 8, 8, true},
        {2, 4, 4, 3, 70, 16, 16, false},   {1, 6, 2, 4, 129, 16, 24, true},
        {1, 4, 1, 2, 100, 64, 64, true},   {1, 2, 2, 1, 77, 128, 128, true},
        {1, 3, 3, 6, 6, 40, 8, false},     {1, 2, 1, 1, 300, 8, 40, true},
        /* decode with grouped heads (four query heads of a KV head a task at AVX-512) */
        {1, 16, 4, 1, 1, 64, 64, true},    {1, 16, 4, 1, 3, 64, 64, true},
        {1, 16, 4, 1, 4, 64, 64, true},    {1, 16, 4, 1, 5, 64, 64, true},
        {1, 16, 4, 1, 63, 64, 64, true},   {1, 16, 4, 1, 64, 64, 64, true},
        {1, 16, 4, 1, 65, 64, 64, true},   {1, 16, 4, 1, 160, 64, 64, false},
        {2, 8, 2, 1, 130, 128, 128, true}, {1, 32, 4, 1, 77, 128, 128, true},
        {1, 8, 2, 1, 300, 256, 256, true}, {1, 4, 1, 1, 33, 64, 64, true},
    };
    ingot_cpu_isa lv[2], best = ingot_cpu_isa_current();
    int nl = kernel_levels(lv);
    fprintf(stderr, "  decode kernel (four query heads a task): ran %s, cache rows %s\n",
            nl == 2 ? "the AVX-512 and the AVX2 forms" : "the AVX2 form (no AVX-512 here)",
            ingot__cpu_prefetch() ? "prefetched" : "not prefetched");
    for (int li = 0; li < nl; li++) {
        ingot_cpu_isa_set_cap(lv[li]);
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
            const shape *s = &shapes[i];
            float *out = malloc((size_t)(s->B * s->H * s->Lq * s->Dv) * 4);
            ASSERT_TRUE(out);
            CHECK(run_shape(s, 1, out) == 0, "shape %zu (level %d)", i, (int)lv[li]);
            free(out);
        }
    }
    ingot_cpu_isa_set_cap(best);
}

TEST(keys8_same_bits_any_thread_count)
{
    if (!have_avx2()) return;
    static const shape shapes[] = {{1, 8, 4, 33, 160, 8, 8, true},
                                   {1, 16, 4, 1, 160, 64, 64, true}};
    ingot_cpu_isa lv[2], best = ingot_cpu_isa_current();
    int nl = kernel_levels(lv);
    for (int li = 0; li < nl; li++) {
        ingot_cpu_isa_set_cap(lv[li]);
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
            const shape *s = &shapes[i];
            size_t no = (size_t)(s->B * s->H * s->Lq * s->Dv);
            float *a = malloc(no * 4), *b = malloc(no * 4);
            ASSERT_TRUE(a && b);
            uint64_t seed = rng;
            ASSERT_EQ(run_shape(s, 1, a), 0);
            rng = seed; /* same inputs */
            ASSERT_EQ(run_shape(s, 3, b), 0);
            ASSERT_MEM(a, b, no * 4);
            free(a);
            free(b);
        }
    }
    ingot_cpu_isa_set_cap(best);
}

/* f16 bits of v, which must be 0 or a normal half exactly (the test's values are) */
static uint16_t half_of(float v)
{
    uint32_t x;
    memcpy(&x, &v, 4);
    if (!(x & 0x7fffffff)) return (uint16_t)(x >> 16);
    return (uint16_t)((x >> 16 & 0x8000) | (((x >> 23 & 0xff) - 112) << 10) | (x >> 13 & 0x3ff));
}

/* Decode straight from an F16 KV cache (the runtime's --kv f16): at the AVX-512 and AVX2 levels
 * the decode kernel reads the halves in place and matches the definition on their values, the
 * same bits at 1 and 3 threads; it declines below AVX2, for more than one query row and for F16
 * queries (the runtime then casts the cache to F32 and runs the other paths). */
static void f16_cache_shapes(void);
TEST(decode_reads_f16_cache)
{
    ingot_cpu_isa lv[2], best = ingot_cpu_isa_current();
    int nl = kernel_levels(lv);
    for (int li = 0; li < nl; li++) {
        ingot_cpu_isa_set_cap(lv[li]);
        f16_cache_shapes();
    }
    ingot_cpu_isa_set_cap(best);
    if (!nl) f16_cache_shapes(); /* below AVX2: declined, as checked there */
}

static void f16_cache_shapes(void)
{
    static const shape shapes[] = {{1, 16, 4, 1, 1, 64, 64, true},
                                   {1, 16, 4, 1, 67, 64, 64, true},
                                   {2, 8, 2, 1, 200, 128, 128, false},
                                   {1, 8, 1, 1, 130, 256, 256, true}};
    bool kernel = ingot_cpu_isa_current() >= INGOT_CPU_ISA_AVX2;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        const shape *s = &shapes[i];
        size_t nq = (size_t)(s->B * s->H * s->D), nk = (size_t)(s->B * s->Hk * s->Lk * s->D);
        size_t no = (size_t)(s->B * s->H * s->Dv);
        float *q = malloc(nq * 4), *kf = malloc(nk * 4), *vf = malloc(nk * 4);
        double *ref = malloc(no * sizeof *ref);
        ASSERT_TRUE(q && kf && vf && ref);
        for (size_t e = 0; e < nq; e++) q[e] = 2.0f * urand();
        for (size_t e = 0; e < nk; e++) /* multiples of 1/1024 in [-2, 2]: exact halves */
            kf[e] = (float)(int)(2048.0f * urand()) / 1024.0f,
            vf[e] = (float)(int)(1024.0f * urand()) / 1024.0f;
        reference(s, q, kf, vf, ref);
        float *out[2] = {NULL, NULL};
        for (int th = 0; th < 2; th++) {
            ingot_backend_opts bo = {0};
            bo.threads = th ? 3 : 1;
            ingot_backend *be = NULL;
            ingot_buffer *bq, *bk, *bv, *bd;
            ASSERT_OK(ingot_backend_new("cpu", &bo, &be, NULL));
            ASSERT_OK(ingot_buffer_alloc(be, nq * 4, &bq, NULL));
            ASSERT_OK(ingot_buffer_alloc(be, nk * 2, &bk, NULL));
            ASSERT_OK(ingot_buffer_alloc(be, nk * 2, &bv, NULL));
            ASSERT_OK(ingot_buffer_alloc(be, no * 4, &bd, NULL));
            memcpy(ingot_buffer_host(bq), q, nq * 4);
            uint16_t *kh = ingot_buffer_host(bk), *vh = ingot_buffer_host(bv);
            for (size_t e = 0; e < nk; e++) kh[e] = half_of(kf[e]), vh[e] = half_of(vf[e]);
            ingot_tensor tq, tk, tv, td;
            int64_t ks[4] = {s->B, s->Hk, s->Lk, s->D};
            t4(&tq, bq, 0, s->B, s->H, 1, s->D);
            ASSERT_OK(ingot_tensor_init(&tk, bk, 0, INGOT_DTYPE_F16, 4, ks, NULL));
            ASSERT_OK(ingot_tensor_init(&tv, bv, 0, INGOT_DTYPE_F16, 4, ks, NULL));
            t4(&td, bd, 0, s->B, s->H, 1, s->Dv);
            ingot_attn_params p = {0};
            p.causal = s->causal;
            bool ran = ingot__attention_keys8(be, &td, &tq, &tk, &tv, &p);
            CHECK(ran == kernel, "shape %zu: f16 cache %s", i, ran ? "taken" : "declined");
            if (ran) {
                out[th] = malloc(no * 4);
                memcpy(out[th], ingot_buffer_host(bd), no * 4);
                double worst = 0;
                for (size_t e = 0; e < no; e++)
                    worst = fmax(worst, fabs(out[th][e] - ref[e]) / fmax(1.0, fabs(ref[e])));
                CHECK(worst <= 2e-6, "shape %zu: f16 cache %.3g from the reference", i, worst);
            }
            /* two query rows: not decode, declined */
            t4(&tq, bq, 0, s->B, s->H / 2, 2, s->D);
            t4(&td, bd, 0, s->B, s->H / 2, 2, s->Dv);
            CHECK(!ingot__attention_keys8(be, &td, &tq, &tk, &tv, &p), "shape %zu: f16 prefill",
                  i);
            ingot_buffer_free(bq);
            ingot_buffer_free(bk);
            ingot_buffer_free(bv);
            ingot_buffer_free(bd);
            ingot_backend_free(be);
        }
        if (out[0] && out[1])
            CHECK(!memcmp(out[0], out[1], no * 4), "shape %zu: 1 and 3 threads differ", i);
        free(out[0]), free(out[1]), free(q), free(kf), free(vf), free(ref);
    }
    if (!kernel) fprintf(stderr, "  (below AVX2: the f16 cache is declined, as checked)\n");
}

/* Strided views as the runtime passes them: q rows [n, H*hd] seen as [1, H, n, hd], keys in a
 * cache [Hk, n_ctx, hd] of which the first L positions are used, output rows [n, H*hd]. */
TEST(keys8_strided_views)
{
    if (!have_avx2()) return;
    enum { H = 8, HK = 4, HD = 8, N = 3, CTX = 40, L = 20 };
    ingot_backend *be = NULL;
    ASSERT_OK(ingot_backend_new("cpu", NULL, &be, NULL));
    ingot_buffer *bq, *bk, *bv, *bo;
    ASSERT_OK(ingot_buffer_alloc(be, N * H * HD * 4, &bq, NULL));
    ASSERT_OK(ingot_buffer_alloc(be, HK * CTX * HD * 4, &bk, NULL));
    ASSERT_OK(ingot_buffer_alloc(be, HK * CTX * HD * 4, &bv, NULL));
    ASSERT_OK(ingot_buffer_alloc(be, N * H * HD * 4, &bo, NULL));
    float *q = ingot_buffer_host(bq), *k = ingot_buffer_host(bk), *v = ingot_buffer_host(bv);
    for (int i = 0; i < N * H * HD; i++) q[i] = urand();
    for (int i = 0; i < HK * CTX * HD; i++) k[i] = urand(), v[i] = urand();
    int64_t qs[4] = {1, H, N, HD}, qst[4] = {N * H * HD, HD, H * HD, 1};
    int64_t ks[4] = {1, HK, L, HD}, kst[4] = {HK * CTX * HD, CTX * HD, HD, 1};
    ingot_tensor tq, tk, tv, to;
    ingot_tensor_init_strided(&tq, bq, 0, INGOT_DTYPE_F32, 4, qs, qst, NULL);
    ingot_tensor_init_strided(&tk, bk, 0, INGOT_DTYPE_F32, 4, ks, kst, NULL);
    ingot_tensor_init_strided(&tv, bv, 0, INGOT_DTYPE_F32, 4, ks, kst, NULL);
    ingot_tensor_init_strided(&to, bo, 0, INGOT_DTYPE_F32, 4, qs, qst, NULL);
    ingot_attn_params p = {0};
    p.causal = true;
    ASSERT_TRUE(ingot__attention_keys8(be, &to, &tq, &tk, &tv, &p));
    const float *o = ingot_buffer_host(bo);
    double worst = 0;
    for (int h = 0; h < H; h++)
        for (int i = 0; i < N; i++) { /* row i sees keys 0 .. L - N + i */
            const float *qr = q + i * H * HD + h * HD;
            const float *kb = k + (h / 2) * CTX * HD, *vb = v + (h / 2) * CTX * HD;
            double w[L], mx = -INFINITY, sum = 0;
            int last = L - N + i;
            for (int t = 0; t <= last; t++) {
                double d = 0;
                for (int e = 0; e < HD; e++) d += (double)qr[e] * kb[t * HD + e];
                w[t] = d / sqrt((double)HD);
                mx = fmax(mx, w[t]);
            }
            for (int t = 0; t <= last; t++) sum += (w[t] = exp(w[t] - mx));
            for (int e = 0; e < HD; e++) {
                double r = 0;
                for (int t = 0; t <= last; t++) r += w[t] * vb[t * HD + e];
                worst = fmax(worst, fabs(o[i * H * HD + h * HD + e] - r / sum));
            }
        }
    CHECK(worst <= 2e-6, "strided: %.3g from the reference", worst);
    ingot_buffer_free(bq);
    ingot_buffer_free(bk);
    ingot_buffer_free(bv);
    ingot_buffer_free(bo);
    ingot_backend_free(be);
}

/* The decode kernel on the runtime's views (the query row [1, H*hd] as [1, H, 1, hd], the first L
 * positions of a cache [Hk, CTX, hd], the output row likewise), F32 and F16 caches, against the
 * definition on the cache's values. Where the kernel runs (AVX-512 and AVX2: both forms). */
TEST(decode_strided_cache_views)
{
    ingot_cpu_isa lv[2], best = ingot_cpu_isa_current();
    int nl = kernel_levels(lv);
    enum { H = 8, HK = 2, HD = 64, CTX = 100, L = 70 };
    for (int run = 0; run < 2 * nl; run++) {
        int half = run % 2;
        ingot_cpu_isa_set_cap(lv[run / 2]);
        size_t es = half ? 2 : 4;
        ingot_backend *be = NULL;
        ASSERT_OK(ingot_backend_new("cpu", NULL, &be, NULL));
        ingot_buffer *bq, *bk, *bv, *bo;
        ASSERT_OK(ingot_buffer_alloc(be, H * HD * 4, &bq, NULL));
        ASSERT_OK(ingot_buffer_alloc(be, HK * CTX * HD * es, &bk, NULL));
        ASSERT_OK(ingot_buffer_alloc(be, HK * CTX * HD * es, &bv, NULL));
        ASSERT_OK(ingot_buffer_alloc(be, H * HD * 4, &bo, NULL));
        float *q = ingot_buffer_host(bq), *k = malloc(HK * CTX * HD * 4),
              *v = malloc(HK * CTX * HD * 4);
        ASSERT_TRUE(k && v);
        for (int i = 0; i < H * HD; i++) q[i] = urand();
        for (int i = 0; i < HK * CTX * HD; i++)
            k[i] = (float)(int)(1024.0f * urand()) / 512.0f,
            v[i] = (float)(int)(1024.0f * urand()) / 1024.0f;
        if (half) {
            uint16_t *kh = ingot_buffer_host(bk), *vh = ingot_buffer_host(bv);
            for (int i = 0; i < HK * CTX * HD; i++) kh[i] = half_of(k[i]), vh[i] = half_of(v[i]);
        } else {
            memcpy(ingot_buffer_host(bk), k, HK * CTX * HD * 4);
            memcpy(ingot_buffer_host(bv), v, HK * CTX * HD * 4);
        }
        int64_t qs[4] = {1, H, 1, HD}, qst[4] = {H * HD, HD, H * HD, 1};
        int64_t ks[4] = {1, HK, L, HD}, kst[4] = {HK * CTX * HD, CTX * HD, HD, 1};
        ingot_dtype kd = half ? INGOT_DTYPE_F16 : INGOT_DTYPE_F32;
        ingot_tensor tq, tk, tv, to;
        ASSERT_OK(ingot_tensor_init_strided(&tq, bq, 0, INGOT_DTYPE_F32, 4, qs, qst, NULL));
        ASSERT_OK(ingot_tensor_init_strided(&tk, bk, 0, kd, 4, ks, kst, NULL));
        ASSERT_OK(ingot_tensor_init_strided(&tv, bv, 0, kd, 4, ks, kst, NULL));
        ASSERT_OK(ingot_tensor_init_strided(&to, bo, 0, INGOT_DTYPE_F32, 4, qs, qst, NULL));
        ingot_attn_params p = {0};
        p.causal = true;
        ASSERT_TRUE(ingot__attention_keys8(be, &to, &tq, &tk, &tv, &p));
        const float *o = ingot_buffer_host(bo);
        double worst = 0;
        for (int h = 0; h < H; h++) {
            const float *qr = q + h * HD;
            const float *kb = k + (h / (H / HK)) * CTX * HD, *vb = v + (h / (H / HK)) * CTX * HD;
            double w[L], mx = -INFINITY, sum = 0;
            for (int t = 0; t < L; t++) {
                double d = 0;
                for (int e = 0; e < HD; e++) d += (double)qr[e] * kb[t * HD + e];
                w[t] = d / sqrt((double)HD);
                mx = fmax(mx, w[t]);
            }
            for (int t = 0; t < L; t++) sum += (w[t] = exp(w[t] - mx));
            for (int e = 0; e < HD; e++) {
                double r = 0;
                for (int t = 0; t < L; t++) r += w[t] * vb[t * HD + e];
                worst = fmax(worst, fabs(o[h * HD + e] - r / sum));
            }
        }
        CHECK(worst <= 2e-6, "%s cache views: %.3g from the reference", half ? "f16" : "f32",
              worst);
        free(k), free(v);
        ingot_buffer_free(bq);
        ingot_buffer_free(bk);
        ingot_buffer_free(bv);
        ingot_buffer_free(bo);
        ingot_backend_free(be);
    }
    ingot_cpu_isa_set_cap(best);
}

/* Where it does not apply it returns false and leaves dst alone (the runtime runs the op). */
TEST(keys8_declines)
{
    ingot_backend *ref = NULL, *cpu = NULL;
    ASSERT_OK(ingot_backend_new("ref", NULL, &ref, NULL));
    ASSERT_OK(ingot_backend_new("cpu", NULL, &cpu, NULL));
    ingot_buffer *b;
    ASSERT_OK(ingot_buffer_alloc(cpu, 4096, &b, NULL));
    memset(ingot_buffer_host(b), 0x7f, 4096);
    ingot_tensor q, k, v, o;
    t4(&q, b, 0, 1, 2, 1, 12);      /* D = 12: not a multiple of 8 */
    t4(&k, b, 256, 1, 2, 4, 12);
    t4(&v, b, 512, 1, 2, 4, 8);
    t4(&o, b, 1024, 1, 2, 1, 8);
    ingot_attn_params p = {0};
    ASSERT_TRUE(!ingot__attention_keys8(cpu, &o, &q, &k, &v, &p));
    t4(&q, b, 0, 1, 2, 1, 8);
    t4(&k, b, 256, 1, 2, 4, 8);
    ASSERT_TRUE(!ingot__attention_keys8(ref, &o, &q, &k, &v, &p)); /* not the cpu backend */
    ingot_tensor h = q;
    h.dtype = INGOT_DTYPE_F16;
    ASSERT_TRUE(!ingot__attention_keys8(cpu, &o, &h, &k, &v, &p));
    ingot_cpu_isa was = ingot_cpu_isa_current();
    ingot_cpu_isa_set_cap(INGOT_CPU_ISA_SCALAR);
    bool ran = ingot__attention_keys8(cpu, &o, &q, &k, &v, &p);
    ingot_cpu_isa_set_cap(was);
    ASSERT_TRUE(!ran);
    const uint8_t *bytes = ingot_buffer_host(b);
    for (int i = 1024; i < 1024 + 64; i++) CHECK(bytes[i] == 0x7f, "dst written at %d", i);
    if (have_avx2()) ASSERT_TRUE(ingot__attention_keys8(cpu, &o, &q, &k, &v, &p));
    ingot_buffer_free(b);
    ingot_backend_free(cpu);
    ingot_backend_free(ref);
}

RUN_TESTS(T(keys8_matches_definition), T(keys8_same_bits_any_thread_count),
          T(keys8_strided_views), T(keys8_declines), T(decode_reads_f16_cache),
          T(decode_strided_cache_views))
