/*
 * bench_backend.c - the "cpu" backend's hot ops against the CPU kernels called directly (and
 * OpenBLAS, when libopenblas.so.0 can be loaded at run time), measured in the same run:
 *   linear   y[B,1024] = x[B,1024] . W[1024,1024]^T + b through ingot_op_linear, against
 *            ingot__sgemv (B = 1) / ingot__sgemm (B > 1) with the bias preloaded (beta = 1),
 *            the calls the backend is meant to make;
 *   qlinear  the same with Q8_0 weights: ingot_op_linear against ingot__qx_quantize per row +
 *            ingot__qgemm onto the preloaded bias;
 *   mlp      ingot_mlp_forward of a 1024-1024-1024-1024 relu/relu/identity stack (written to an
 *            .ingot file, weights mapped), against the same layers composed from kernel calls.
 * Each rep times the backend and the kernel back to back, alternating which goes first; the
 * figures are medians, the ratio is the median of the per-rep ratios (backend time / kernel time:
 * 1.00 means the backend adds nothing to the kernel).
 *
 *   bench_backend [--threads N] [--reps N] [--dir DIR] [--no-openblas]
 *
 * `bench_backend --kernels [--reps N] [--levels a,b,...] [--types Q4_0,Q5_K,...]` measures the
 * kernels alone (the GEMVs of the listed weight types only, with --types), by thread
 * CPU time where one thread is measured (so that time slicing on a loaded machine drops out):
 *   pool     wall-clock microseconds per job of 64 empty tasks, 1 .. nproc threads (and 2 x);
 *   gemv     one thread, one activation row, for every weight type at every level, weights of
 *            at least 256 MiB and twice the L3 the CPU reports; ratio = median over reps of
 *            (time of a streaming read of the same buffer with the widest loads) / (kernel time);
 *   sgemm    1024^3, 2048^3, 4096^3 with B^T (the backend's linear) against OpenBLAS with one
 *            thread (OPENBLAS_CORETYPE as set by the caller, printed): best and median of the
 *            per-rep ratios.
 *
 * `bench_backend --sgemm-l2 [--reps N] [--threads N] [--levels a,b,...]` (issue 16, ninth round)
 * times the f32 GEMM with both of the AVX2 level's block choices (ingot__set_l2_bytes: 512 KiB
 * gives Zen's blocks, 2 MiB the large-L2 ones, whatever this CPU's L2) and OpenBLAS (core as
 * OPENBLAS_CORETYPE says, printed), the three in turn within every rep, the first one rotating:
 * 1024^3, 4096^3 and 256 x 4096 x 4096 (prefill-shaped), B as is (as `ingot bench gemm`) and
 * B^T, operands from malloc (as `ingot bench gemm`'s); one thread by thread CPU time, more by
 * the wall clock. Per contender: the median and best GFLOP/s, and the median over reps of
 * OpenBLAS time / its time.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "cpu/kernels/kernels.h"
#include "ingot/backend.h"
#include "ingot/ingot.h"
#include "ingot/runtime.h"
#include "ingot/writer.h"
#include "bench_util.h"

#define N 1024

static void fill(float *p, size_t n, uint32_t seed, float scale)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        p[i] = ((float)(seed >> 8) * (1.0f / 16777216.0f) - 0.5f) * scale;
    }
}

static void die(const char *what, const ingot_error *e)
{
    char msg[300];
    fprintf(stderr, "bench_backend: %s: %s\n", what, ingot_error_format(e, msg, sizeof msg));
    exit(1);
}

/* ---- OpenBLAS, loaded at run time (no build dependency) ---- */
typedef void (*sgemm_fn)(int, int, int, int, int, int, float, const float *, int, const float *,
                         int, float, float *, int);
typedef void (*sgemv_fn)(int, int, int, int, float, const float *, int, const float *, int, float,
                         float *, int);
typedef void (*setthreads_fn)(int);
typedef char *(*corename_fn)(void);
static sgemm_fn ob_sgemm;
static sgemv_fn ob_sgemv;
static setthreads_fn ob_threads;
static corename_fn ob_core;

static void load_openblas(void)
{
    void *h = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!h) return;
    void *s1 = dlsym(h, "cblas_sgemm"), *s2 = dlsym(h, "cblas_sgemv");
    void *s3 = dlsym(h, "openblas_set_num_threads"), *s4 = dlsym(h, "openblas_get_corename");
    if (!s1 || !s2 || !s3 || !s4) return;
    memcpy(&ob_sgemm, &s1, sizeof s1); /* object -> function pointer without a pedantic cast */
    memcpy(&ob_sgemv, &s2, sizeof s2);
    memcpy(&ob_threads, &s3, sizeof s3);
    memcpy(&ob_core, &s4, sizeof s4);
}
enum { ROW_MAJOR = 101, NO_TRANS = 111, TRANS = 112 };

/* ---- the cases ---- */
typedef struct ctx {
    ingot_backend *be;
    ingot__pool *pool;
    unsigned threads;
    int reps;
    /* linear operands */
    float *x, *w, *bias, *y;
    ingot_buffer *xb, *wb, *bb, *yb, *qb;
    void *wq; /* W as Q8_0 blocks */
    void *xq; /* the rows of x quantized for Q8_0 weights (ingot__qx_quantize) */
    int64_t batch;
    /* mlp */
    ingot_mlp *mlp;
    float *ws[3], *bs[3], *h0, *h1;
    void *scratch;
    size_t scratch_n;
} ctx;

typedef void (*run_fn)(ctx *c);

static void lin_backend(ctx *c)
{
    ingot_tensor x, w, b, y;
    ingot_error e;
    int64_t xs[2] = {c->batch, N}, ws[2] = {N, N}, bs[1] = {N};
    ingot_tensor_init(&x, c->xb, 0, INGOT_DTYPE_F32, 2, xs, NULL);
    ingot_tensor_init(&w, c->wb, 0, INGOT_DTYPE_F32, 2, ws, NULL);
    ingot_tensor_init(&b, c->bb, 0, INGOT_DTYPE_F32, 1, bs, NULL);
    ingot_tensor_init(&y, c->yb, 0, INGOT_DTYPE_F32, 2, xs, NULL);
    if (ingot_op_linear(c->be, &y, &x, &w, &b, &e) != INGOT_OK) die("linear", &e);
}

static void preload_bias(float *y, const float *bias, int64_t rows)
{
    for (int64_t r = 0; r < rows; r++) memcpy(y + r * N, bias, N * sizeof(float));
}

static void lin_kernel(ctx *c)
{
    preload_bias(c->y, c->bias, c->batch);
    if (c->batch == 1) ingot__sgemv(c->pool, false, N, N, 1.0f, c->w, N, c->x, 1.0f, c->y);
    else
        ingot__sgemm(c->pool, false, true, (size_t)c->batch, N, N, 1.0f, c->x, N, c->w, N, 1.0f,
                     c->y, N);
}

static void lin_openblas(ctx *c)
{
    preload_bias(c->y, c->bias, c->batch);
    if (c->batch == 1) ob_sgemv(ROW_MAJOR, NO_TRANS, N, N, 1.0f, c->w, N, c->x, 1, 1.0f, c->y, 1);
    else
        ob_sgemm(ROW_MAJOR, NO_TRANS, TRANS, (int)c->batch, N, N, 1.0f, c->x, N, c->w, N, 1.0f,
                 c->y, N);
}

static void qlin_backend(ctx *c)
{
    ingot_tensor x, w, b, y;
    ingot_error e;
    int64_t xs[2] = {c->batch, N}, ws[2] = {N, N}, bs[1] = {N};
    ingot_tensor_init(&x, c->xb, 0, INGOT_DTYPE_F32, 2, xs, NULL);
    ingot_tensor_init(&w, c->qb, 0, INGOT_DTYPE_Q8_0, 2, ws, NULL);
    ingot_tensor_init(&b, c->bb, 0, INGOT_DTYPE_F32, 1, bs, NULL);
    ingot_tensor_init(&y, c->yb, 0, INGOT_DTYPE_F32, 2, xs, NULL);
    if (ingot_op_linear(c->be, &y, &x, &w, &b, &e) != INGOT_OK) die("qlinear", &e);
}

static void qlin_kernel(ctx *c)
{
    size_t xb = ingot__qx_bytes(INGOT_DTYPE_Q8_0, N);
    for (int64_t r = 0; r < c->batch; r++)
        ingot__qx_quantize(INGOT_DTYPE_Q8_0, c->x + r * N, N, (uint8_t *)c->xq + (size_t)r * xb);
    preload_bias(c->y, c->bias, c->batch);
    ingot__qgemm(c->pool, INGOT_DTYPE_Q8_0, N, N, c->wq, N / 32 * 34, NULL, c->xq, c->x, N,
                 (size_t)c->batch, true, c->y, N);
}

static void mlp_backend(ctx *c)
{
    ingot_error e;
    if (ingot_mlp_forward(c->mlp, c->x, (uint64_t)c->batch, c->y, c->scratch, c->scratch_n, &e) !=
        INGOT_OK)
        die("mlp_forward", &e);
}

static void mlp_kernel(ctx *c)
{
    const float *in = c->x;
    for (int k = 0; k < 3; k++) {
        float *out = k == 2 ? c->y : k == 0 ? c->h0 : c->h1;
        preload_bias(out, c->bs[k], c->batch);
        if (c->batch == 1) ingot__sgemv(c->pool, false, N, N, 1.0f, c->ws[k], N, in, 1.0f, out);
        else
            ingot__sgemm(c->pool, false, true, (size_t)c->batch, N, N, 1.0f, in, N, c->ws[k], N,
                         1.0f, out, N);
        if (k < 2)
            for (int64_t i = 0; i < c->batch * N; i++) out[i] = out[i] < 0 ? 0.0f : out[i];
        in = out;
    }
}

static double time_one(run_fn f, ctx *c)
{
    double t0 = bench_now_s();
    f(c);
    return bench_now_s() - t0;
}

static void measure(const char *name, ctx *c, run_fn be, run_fn ker, run_fn ob, double flops)
{
    double tb[256], tk[256], r[256], to[256];
    int reps = c->reps;
    be(c), ker(c); /* warm up: pages, pool scratch, caches */
    for (int i = 0; i < reps; i++) {
        if (i % 2) {
            tk[i] = time_one(ker, c);
            tb[i] = time_one(be, c);
        } else {
            tb[i] = time_one(be, c);
            tk[i] = time_one(ker, c);
        }
        r[i] = tb[i] / tk[i];
    }
    double mb = bench_median(tb, reps), mk = bench_median(tk, reps);
    printf("%-8s B=%-5lld T=%u  backend %9.3f ms %7.1f GFLOP/s | kernel %9.3f ms %7.1f GFLOP/s"
           " | backend/kernel time %.3f",
           name, (long long)c->batch, c->threads, mb * 1e3, flops / mb * 1e-9, mk * 1e3,
           flops / mk * 1e-9, bench_median(r, reps));
    if (ob) {
        ob(c);
        for (int i = 0; i < reps; i++) to[i] = time_one(ob, c);
        double mo = bench_median(to, reps);
        printf(" | openblas %7.1f GFLOP/s", flops / mo * 1e-9);
    }
    printf("\n");
    fflush(stdout);
}

static void write_mlp(const char *path, float *const *ws, float *const *bs)
{
    ingot_writer_opts wo = {0};
    wo.no_fsync = true;
    ingot_writer *w = NULL;
    ingot_error e;
    if (ingot_writer_new(&wo, &w, &e) != INGOT_OK) die("writer", &e);
    uint64_t sizes[4] = {N, N, N, N};
    ingot_writer_set_u32(w, "mlp.layer_count", 3);
    ingot_writer_set_array(w, "mlp.sizes", INGOT_META_U64, sizes, 4);
    const void *names[3] = {"relu", "relu", "identity"};
    size_t lens[3] = {4, 4, 8};
    ingot_writer_set_string_array(w, "mlp.activations", INGOT_META_STRING, names, lens, 3);
    for (int k = 0; k < 3; k++) {
        char nm[32];
        uint64_t wsh[2] = {N, N}, bsh[1] = {N};
        snprintf(nm, sizeof nm, "layers.%d.weight", k);
        if (ingot_writer_add_tensor(w, nm, INGOT_DTYPE_F32, 2, wsh, NULL, ws[k], &e) != INGOT_OK)
            die("add_tensor", &e);
        snprintf(nm, sizeof nm, "layers.%d.bias", k);
        if (ingot_writer_add_tensor(w, nm, INGOT_DTYPE_F32, 1, bsh, NULL, bs[k], &e) != INGOT_OK)
            die("add_tensor", &e);
    }
    if (ingot_writer_save(w, path, &e) != INGOT_OK) die("save", &e);
    ingot_writer_free(w);
}

/* ---- --kernels: the kernels alone ---- */

#if defined(__x86_64__)
__attribute__((target("avx512f"))) static float read512(const uint8_t *p, size_t n)
{
    __m512 s[8];
    for (int i = 0; i < 8; i++) s[i] = _mm512_setzero_ps();
    for (size_t i = 0; i + 512 <= n; i += 512)
        for (int k = 0; k < 8; k++)
            s[k] = _mm512_add_ps(s[k], _mm512_loadu_ps((const void *)(p + i + 64 * (size_t)k)));
    for (int k = 1; k < 8; k++) s[0] = _mm512_add_ps(s[0], s[k]);
    return _mm512_reduce_add_ps(s[0]);
}

__attribute__((target("avx2"))) static float read256(const uint8_t *p, size_t n)
{
    __m256 s[8];
    for (int i = 0; i < 8; i++) s[i] = _mm256_setzero_ps();
    for (size_t i = 0; i + 256 <= n; i += 256)
        for (int k = 0; k < 8; k++)
            s[k] = _mm256_add_ps(s[k], _mm256_loadu_ps((const void *)(p + i + 32 * (size_t)k)));
    for (int k = 1; k < 8; k++) s[0] = _mm256_add_ps(s[0], s[k]);
    float l[8];
    _mm256_storeu_ps(l, s[0]);
    return l[0] + l[1] + l[2] + l[3] + l[4] + l[5] + l[6] + l[7];
}
#endif

static float read_all(const uint8_t *p, size_t n, int width)
{
#if defined(__x86_64__)
    if (width == 512) return read512(p, n);
    if (width == 256) return read256(p, n);
#endif
    uint64_t s = 0;
    for (size_t i = 0; i + 8 <= n; i += 8) {
        uint64_t v;
        memcpy(&v, p + i, 8);
        s += v;
    }
    return (float)s;
}

static volatile float read_sink;

static void nop_task(void *arg, size_t t, unsigned worker) { (void)arg, (void)t, (void)worker; }

static uint16_t half_bits(float f) /* f16, truncating; finite scales for the weights */
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000, e = (x >> 23) & 0xff, m = x & 0x7fffff;
    if (e < 113) return (uint16_t)sign;
    return (uint16_t)(sign | (e - 112) << 10 | m >> 13);
}

static int kernels_mode(int reps, const char *levels, const char *types_only)
{
    long nproc = sysconf(_SC_NPROCESSORS_ONLN);
    if (nproc < 1) nproc = 1;
    printf("pool round trip (wall clock, median of 9 x 2000 jobs of 64 empty tasks):\n");
    for (long t = 1; t <= 2 * nproc && t <= 256; t++) {
        if (t > nproc && t != 2 * nproc) continue;
        ingot__pool *p = ingot__pool_create(NULL, (unsigned)t);
        if (!p) return 1;
        double r[9];
        for (int k = 0; k < 9; k++) {
            double t0 = bench_now_s();
            for (int i = 0; i < 2000; i++) ingot__pool_run(p, nop_task, NULL, 64);
            r[k] = (bench_now_s() - t0) / 2000 * 1e6;
        }
        printf("  threads %ld%s: %.2f us per job\n", t, t > nproc ? " (2 x cores)" : "",
               bench_median(r, 9));
        ingot__pool_destroy(p);
    }

    long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
    size_t bytes = (size_t)256 << 20;
    if (l3 > 0 && (size_t)l3 * 2 > bytes) bytes = (size_t)l3 * 2;
    int width = ingot__isa_supported(INGOT__ISA_AVX512) ? 512
                : ingot__isa_supported(INGOT__ISA_AVX2) ? 256 : 64;
    printf("gemv, one thread, thread CPU time, median of %d; weights >= %zu MiB (L3 reported: "
           "%ld KiB), read rate with %d-bit loads of the same buffer\n",
           reps, bytes >> 20, l3 > 0 ? l3 >> 10 : -1L, width);
    static const ingot_dtype types[] = {INGOT_DTYPE_F32,  INGOT_DTYPE_F16,  INGOT_DTYPE_BF16,
                                        INGOT_DTYPE_I8,   INGOT_DTYPE_Q8_0, INGOT_DTYPE_Q4_0,
                                        INGOT_DTYPE_Q4_K, INGOT_DTYPE_Q5_K, INGOT_DTYPE_Q6_K};
    size_t K = 8192;
    float *x = malloc(K * 4), *ws = NULL, *y = NULL;
    fill(x, K, 7, 2.0f);
    for (size_t ti = 0; ti < sizeof types / sizeof *types; ti++) {
        ingot_dtype wt = types[ti];
        if (types_only && !strstr(types_only, ingot_dtype_name(wt))) continue;
        bool half = wt == INGOT_DTYPE_F16 || wt == INGOT_DTYPE_BF16;
        size_t rb = wt == INGOT_DTYPE_F32 ? K * 4 : half ? K * 2 : wt == INGOT_DTYPE_I8 ? K :
                    K / ingot_dtype_block_elems(wt) * ingot_dtype_block_bytes(wt);
        size_t M = (bytes + rb - 1) / rb, wb = M * rb;
        uint8_t *w = aligned_alloc(64, (wb + 63) / 64 * 64);
        ws = realloc(ws, M * 4), y = realloc(y, M * 4);
        if (!w || !ws || !y) return 1;
        uint32_t seed = 99;
        for (size_t i = 0; i < wb; i++)
            seed = seed * 1664525u + 1013904223u, w[i] = (uint8_t)(seed >> 24);
        if (wt == INGOT_DTYPE_F32) fill((float *)(void *)w, wb / 4, 5, 1.0f);
        if (half) { /* values in [-1, 1), no subnormals (BF16 ones would take FMA assists) */
            uint16_t *h = (uint16_t *)(void *)w;
            for (size_t i = 0; i < wb / 2; i++) {
                seed = seed * 1664525u + 1013904223u;
                float f = (float)(seed >> 8) * (1.0f / 8388608.0f) - 1.0f;
                uint32_t u;
                memcpy(&u, &f, 4);
                h[i] = wt == INGOT_DTYPE_BF16 ? (uint16_t)(u >> 16) : half_bits(f);
            }
        }
        for (size_t r = 0; r < M; r++) ws[r] = 0.01f;
        if (!half && wt != INGOT_DTYPE_F32 && wt != INGOT_DTYPE_I8) {
            size_t bb = ingot_dtype_block_bytes(wt);
            for (size_t b = 0; b < wb / bb; b++) {
                uint16_t d = half_bits(0.01f);
                memcpy(w + b * bb + (wt == INGOT_DTYPE_Q6_K ? 208 : 0), &d, 2);
                if (wt == INGOT_DTYPE_Q4_K || wt == INGOT_DTYPE_Q5_K) memcpy(w + b * bb + 2, &d, 2);
            }
        }
        void *xq = NULL;
        if (ingot__qdot_supported(wt)) {
            xq = aligned_alloc(64, ingot__qx_bytes(wt, K));
            if (!xq) return 1;
            ingot__qx_quantize(wt, x, K, xq);
        }
        for (int l = INGOT__ISA_AVX2; l < INGOT__ISA_COUNT; l++) {
            if (!ingot__isa_supported((ingot__isa)l)) continue;
            if (levels && !strstr(levels, ingot__isa_name((ingot__isa)l))) continue;
            ingot__set_isa((ingot__isa)l);
            double r[256], g[256], rr[256];
            for (int k = 0; k < reps; k++) {
                double t0 = bench_thread_cpu_s();
                read_sink = read_all(w, wb, width);
                double t1 = bench_thread_cpu_s();
                if (wt == INGOT_DTYPE_F32)
                    ingot__sgemv(NULL, false, M, K, 1.0f, (const float *)(const void *)w, K, x,
                                 0.0f, y);
                else if (half) ingot__gemm_half(NULL, wt, M, K, w, K, 1, x, K, false, y, M);
                else ingot__qgemm(NULL, wt, M, K, w, rb, ws, xq, NULL, 0, 1, false, y, M);
                double t2 = bench_thread_cpu_s();
                r[k] = (t1 - t0) / (t2 - t1);
                g[k] = (double)wb / (t2 - t1) * 1e-9;
                rr[k] = (double)wb / (t1 - t0) * 1e-9;
            }
            printf("  %-5s %-12s %4zu MiB: %6.2f GB/s, read %6.2f GB/s, ratio %.2f\n",
                   ingot_dtype_name(wt), ingot__isa_name((ingot__isa)l), wb >> 20,
                   bench_median(g, reps), bench_median(rr, reps), bench_median(r, reps));
        }
        ingot__set_isa(ingot__cpu_isa());
        free(w), free(xq);
    }
    free(ws), free(y);

    if (ob_sgemm) {
        ob_threads(1);
        const char *env = getenv("OPENBLAS_CORETYPE");
        printf("sgemm B^T, one thread, thread CPU time, level %s, OpenBLAS core %s "
               "(OPENBLAS_CORETYPE=%s):\n",
               ingot__isa_name(ingot__get_isa()), ob_core(), env ? env : "unset");
        for (size_t n = 1024; n <= 4096; n *= 2) {
            float *A = aligned_alloc(64, n * n * 4), *B = aligned_alloc(64, n * n * 4);
            float *C = aligned_alloc(64, n * n * 4);
            if (!A || !B || !C) return 1;
            fill(A, n * n, 11, 1.0f);
            fill(B, n * n, 12, 1.0f);
            int rp = n >= 4096 ? (reps + 1) / 2 : reps;
            double ro[256], rb2[256], rat[256], fl = 2.0 * (double)n * (double)n * (double)n;
            for (int k = 0; k < rp; k++) {
                double t0 = bench_thread_cpu_s();
                ingot__sgemm(NULL, false, true, n, n, n, 1.0f, A, n, B, n, 0.0f, C, n);
                double t1 = bench_thread_cpu_s();
                ob_sgemm(ROW_MAJOR, NO_TRANS, TRANS, (int)n, (int)n, (int)n, 1.0f, A, (int)n, B,
                         (int)n, 0.0f, C, (int)n);
                double t2 = bench_thread_cpu_s();
                ro[k] = fl / (t1 - t0) * 1e-9, rb2[k] = fl / (t2 - t1) * 1e-9;
                rat[k] = (t2 - t1) / (t1 - t0);
            }
            qsort(ro, (size_t)rp, sizeof *ro, bench_cmp_double);
            qsort(rb2, (size_t)rp, sizeof *rb2, bench_cmp_double);
            printf("  %zu^3: ours best %.1f GFLOP/s, OpenBLAS best %.1f: best/best %.3f, median "
                   "of ratios %.3f (%d reps)\n",
                   n, ro[rp - 1], rb2[rp - 1], ro[rp - 1] / rb2[rp - 1], bench_median(rat, rp), rp);
            free(A), free(B), free(C);
        }
    }
    free(x);
    return 0;
}

/* --sgemm-l2: see the top of the file. */
static int sgemm_l2_mode(int reps, unsigned threads, const char *levels)
{
    if (!ob_sgemm) {
        fprintf(stderr, "bench_backend --sgemm-l2: OpenBLAS (libopenblas.so.0) not loaded\n");
        return 1;
    }
    if (threads < 1) threads = 1;
    ob_threads((int)threads);
    ingot__pool *pool = ingot__pool_create(NULL, threads);
    if (!pool) return 1;
    const char *env = getenv("OPENBLAS_CORETYPE");
    printf("sgemm, AVX2 blocks by L2 size, %u thread(s), %s, OpenBLAS core %s "
           "(OPENBLAS_CORETYPE=%s), this CPU's L2 %zu bytes:\n",
           threads, threads == 1 ? "thread CPU time" : "wall clock", ob_core(),
           env ? env : "unset", ingot__cpu_l2_bytes());
    static const char *const names[3] = {"L2 512K (Zen's)", "L2 2M (large)", "OpenBLAS"};
    static const size_t l2s[2] = {512 * 1024, 2 * 1024 * 1024};
    for (int l = 0; l < INGOT__ISA_COUNT; l++) {
        bool want = levels ? strstr(levels, ingot__isa_name((ingot__isa)l)) != NULL
                           : l == (int)ingot__get_isa();
        if (!want || ingot__set_isa((ingot__isa)l) != (ingot__isa)l) continue;
        /* M x n x n: 1024^3, 4096^3, and a prefill-shaped 256 x 4096 x 4096 */
        static const size_t shapes[3][2] = {{1024, 1024}, {4096, 4096}, {256, 4096}};
        for (int si = 0; si < 3; si++)
            for (int tb = 0; tb < 2; tb++) {
                size_t m = shapes[si][0], n = shapes[si][1];
                float *A = malloc(m * n * 4), *B = malloc(n * n * 4), *C = malloc(m * n * 4);
                if (!A || !B || !C) return 1;
                fill(A, m * n, 11, 1.0f);
                fill(B, n * n, 12, 1.0f);
                int rp = si == 1 ? (reps + 2) / 3 : reps;
                double t[3][256], fl = 2.0 * (double)m * (double)n * (double)n;
                for (int k = -1; k < rp; k++) /* k = -1: warm-up, not kept */
                    for (int q = 0; q < 3; q++) {
                        int w = (q + (k < 0 ? 0 : k)) % 3;
                        double t0 = threads == 1 ? bench_thread_cpu_s() : bench_now_s();
                        if (w < 2) {
                            ingot__set_l2_bytes(l2s[w]);
                            ingot__sgemm(pool, false, tb, m, n, n, 1.0f, A, n, B, n, 0.0f, C, n);
                        } else {
                            ob_sgemm(ROW_MAJOR, NO_TRANS, tb ? TRANS : NO_TRANS, (int)m, (int)n,
                                     (int)n, 1.0f, A, (int)n, B, (int)n, 0.0f, C, (int)n);
                        }
                        double t1 = threads == 1 ? bench_thread_cpu_s() : bench_now_s();
                        if (k >= 0) t[w][k] = t1 - t0;
                    }
                ingot__set_l2_bytes(0);
                printf("  %-11s %4zu x %zu^2%s:", ingot__isa_name((ingot__isa)l), m, n,
                       tb ? " B^T" : "    ");
                for (int w = 0; w < 3; w++) {
                    double g[256], r[256], best = 0;
                    for (int k = 0; k < rp; k++) {
                        g[k] = fl / t[w][k] * 1e-9, r[k] = t[2][k] / t[w][k];
                        best = g[k] > best ? g[k] : best;
                    }
                    printf(" %s %.1f (best %.1f)", names[w], bench_median(g, rp), best);
                    if (w < 2) printf(" ratio %.3f;", bench_median(r, rp));
                }
                printf(" GFLOP/s, %d reps\n", rp);
                free(A), free(B), free(C);
            }
    }
    ingot__set_isa(ingot__cpu_isa());
    ingot__pool_destroy(pool);
    return 0;
}

int main(int argc, char **argv)
{
    unsigned only = 0;
    int reps = 15;
    bool use_ob = true;
    const char *dir = BENCH_DEFAULT_DIR, *levels = NULL, *types_only = NULL;
    bool kernels = false, sgemm_l2 = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc) only = (unsigned)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--dir") && i + 1 < argc) dir = argv[++i];
        else if (!strcmp(argv[i], "--no-openblas")) use_ob = false;
        else if (!strcmp(argv[i], "--kernels")) kernels = true;
        else if (!strcmp(argv[i], "--levels") && i + 1 < argc) levels = argv[++i];
        else if (!strcmp(argv[i], "--types") && i + 1 < argc) types_only = argv[++i];
        else if (!strcmp(argv[i], "--sgemm-l2")) sgemm_l2 = true;
        else {
            fprintf(stderr, "usage: bench_backend [--threads N] [--reps N] [--dir DIR] "
                            "[--no-openblas]\n"
                            "       bench_backend --kernels [--reps N] [--levels a,b,...] "
                            "[--types T,T,...] [--no-openblas]\n"
                            "       bench_backend --sgemm-l2 [--reps N] [--threads N] "
                            "[--levels a,b,...]\n");
            return 2;
        }
    }
    if (reps < 1) reps = 1;
    if (reps > 256) reps = 256;
    if (use_ob) load_openblas();
    if (kernels) return kernels_mode(reps, levels, types_only);
    if (sgemm_l2) return sgemm_l2_mode(reps, only, levels);
    const char *env = getenv("OPENBLAS_CORETYPE");
    printf("bench_backend: kernels isa %s; OpenBLAS %s (OPENBLAS_CORETYPE=%s); %d reps\n",
           ingot__isa_name(ingot__get_isa()), ob_core ? ob_core() : "not loaded",
           env ? env : "unset", reps);

    size_t big = (size_t)N * N;
    float *x = aligned_alloc(64, big * 4), *y = aligned_alloc(64, big * 4);
    float *w = aligned_alloc(64, big * 4), *bias = aligned_alloc(64, N * 4);
    float *h0 = aligned_alloc(64, big * 4), *h1 = aligned_alloc(64, big * 4);
    void *wq = malloc(big / 32 * 34);
    void *xq = aligned_alloc(64, (size_t)N * ingot__qx_bytes(INGOT_DTYPE_Q8_0, N)); /* N rows */
    float *mw[3], *mb[3];
    fill(x, big, 1, 2.0f);
    fill(w, big, 2, 0.1f);
    fill(bias, N, 3, 0.2f);
    for (int r = 0; r < N; r++) ingot__quantize_q8_0(w + (size_t)r * N, N, (uint8_t *)wq + (size_t)r * (N / 32 * 34));
    for (int k = 0; k < 3; k++) {
        mw[k] = malloc(big * 4);
        mb[k] = malloc(N * 4);
        fill(mw[k], big, 10 + (uint32_t)k, 0.1f);
        fill(mb[k], N, 20 + (uint32_t)k, 0.1f);
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/bench_backend_mlp.ingot", dir);
    write_mlp(path, mw, mb);
    ingot_error e;
    ingot_file *f = NULL;
    if (ingot_file_open(path, NULL, &f, &e) != INGOT_OK) die("open", &e);

    for (unsigned t = 1; t <= 2; t++) {
        if (only && t != only) continue;
        ctx c = {0};
        c.threads = t;
        c.reps = reps;
        ingot_backend_opts o = {0};
        o.threads = t;
        if (ingot_backend_new("cpu", &o, &c.be, &e) != INGOT_OK) die("backend", &e);
        c.pool = ingot__pool_create(NULL, t);
        if (ob_threads) ob_threads((int)t);
        c.x = x, c.w = w, c.bias = bias, c.y = y, c.wq = wq, c.xq = xq, c.h0 = h0, c.h1 = h1;
        if (ingot_buffer_wrap(c.be, x, big * 4, false, &c.xb, &e) != INGOT_OK ||
            ingot_buffer_wrap(c.be, w, big * 4, false, &c.wb, &e) != INGOT_OK ||
            ingot_buffer_wrap(c.be, bias, N * 4, false, &c.bb, &e) != INGOT_OK ||
            ingot_buffer_wrap(c.be, y, big * 4, true, &c.yb, &e) != INGOT_OK ||
            ingot_buffer_wrap(c.be, wq, big / 32 * 34, false, &c.qb, &e) != INGOT_OK)
            die("wrap", &e);
        if (ingot_mlp_open(c.be, f, NULL, &c.mlp, &e) != INGOT_OK) die("mlp_open", &e);
        for (int k = 0; k < 3; k++) c.ws[k] = mw[k], c.bs[k] = mb[k];
        c.scratch_n = ingot_mlp_scratch_size(c.mlp, N);
        c.scratch = aligned_alloc(64, (c.scratch_n + 63) / 64 * 64);

        static const int64_t lin_b[] = {1, 8, 64, 1024};
        for (size_t i = 0; i < sizeof lin_b / sizeof *lin_b; i++) {
            c.batch = lin_b[i];
            measure("linear", &c, lin_backend, lin_kernel, ob_sgemm ? lin_openblas : NULL,
                    2.0 * (double)c.batch * N * N);
        }
        static const int64_t q_b[] = {1, 8, 64};
        for (size_t i = 0; i < sizeof q_b / sizeof *q_b; i++) {
            c.batch = q_b[i];
            measure("qlinear", &c, qlin_backend, qlin_kernel, NULL, 2.0 * (double)c.batch * N * N);
        }
        static const int64_t m_b[] = {1, 64};
        for (size_t i = 0; i < sizeof m_b / sizeof *m_b; i++) {
            c.batch = m_b[i];
            measure("mlp", &c, mlp_backend, mlp_kernel, NULL, 3 * 2.0 * (double)c.batch * N * N);
        }
        free(c.scratch);
        ingot_mlp_free(c.mlp);
        ingot_buffer_free(c.xb);
        ingot_buffer_free(c.wb);
        ingot_buffer_free(c.bb);
        ingot_buffer_free(c.yb);
        ingot_buffer_free(c.qb);
        ingot__pool_destroy(c.pool);
        ingot_backend_free(c.be);
    }
    ingot_file_close(f);
    remove(path);
    for (int k = 0; k < 3; k++) free(mw[k]), free(mb[k]);
    free(x), free(y), free(w), free(bias), free(h0), free(h1), free(wq), free(xq);
    return 0;
}
