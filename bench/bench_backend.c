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
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu/kernels/kernels.h"
#include "ingot/backend.h"
#include "ingot/ingot.h"
#include "ingot/runtime.h"
#include "ingot/writer.h"

#define N 1024

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(const double *v, int n)
{
    double t[256];
    memcpy(t, v, sizeof *t * (size_t)n);
    qsort(t, (size_t)n, sizeof *t, cmp_d);
    return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

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
    double t0 = now_s();
    f(c);
    return now_s() - t0;
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
    double mb = median(tb, reps), mk = median(tk, reps);
    printf("%-8s B=%-5lld T=%u  backend %9.3f ms %7.1f GFLOP/s | kernel %9.3f ms %7.1f GFLOP/s"
           " | backend/kernel time %.3f",
           name, (long long)c->batch, c->threads, mb * 1e3, flops / mb * 1e-9, mk * 1e3,
           flops / mk * 1e-9, median(r, reps));
    if (ob) {
        ob(c);
        for (int i = 0; i < reps; i++) to[i] = time_one(ob, c);
        double mo = median(to, reps);
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

int main(int argc, char **argv)
{
    unsigned only = 0;
    int reps = 15;
    bool use_ob = true;
    const char *dir = BENCH_DEFAULT_DIR;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc) only = (unsigned)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--dir") && i + 1 < argc) dir = argv[++i];
        else if (!strcmp(argv[i], "--no-openblas")) use_ob = false;
        else {
            fprintf(stderr, "usage: bench_backend [--threads N] [--reps N] [--dir DIR] "
                            "[--no-openblas]\n");
            return 2;
        }
    }
    if (reps < 1) reps = 1;
    if (reps > 256) reps = 256;
    if (use_ob) load_openblas();
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
