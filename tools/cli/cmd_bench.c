/*
 * cmd_bench.c - `ingot bench gemm [--threads N] [--json] [--quick]`: the CPU kernels against
 * OpenBLAS measured in the same run (cblas_sgemm / cblas_sgemv with the same thread count), and
 * the GEMVs against this machine's streaming read bandwidth. Every figure is the median of
 * several repetitions; ratios are ours / baseline. OpenBLAS's core type is printed: the
 * environment variable OPENBLAS_CORETYPE forces one (Haswell halves it on AVX-512 cores).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "cpu/kernels/kernels.h"

#ifdef INGOT_HAVE_OPENBLAS
#include <cblas.h>
char *openblas_get_corename(void);
void openblas_set_num_threads(int n);
#endif

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void fill(float *p, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        p[i] = (float)(seed >> 8) * (1.0f / 16777216.0f) - 0.5f;
    }
}

typedef struct {
    const char *name;
    unsigned threads;
    double ours, base; /* GFLOP/s, or GB/s for bandwidth cases */
    const char *unit;
    const char *base_name;
} result;

/* Streaming read bandwidth over the same buffer: one load per 64-byte line (the hardware reads
 * whole lines), eight independent sums, chunks spread over the pool like the GEMV rows. */
typedef struct {
    const float *p;
    size_t n;
    float sums[256];
} bw_job;

#define BW_CHUNK ((size_t)1 << 18) /* floats per task: 1 MiB */

static void bw_task(void *ctx, size_t t, unsigned worker)
{
    bw_job *j = ctx;
    const float *p = j->p + t * BW_CHUNK;
    size_t n = j->n - t * BW_CHUNK < BW_CHUNK ? j->n - t * BW_CHUNK : BW_CHUNK;
    float s[8] = {0};
    for (size_t i = 0; i + 128 <= n; i += 128)
        for (int k = 0; k < 8; k++) s[k] += p[i + 16 * (size_t)k];
    j->sums[worker & 255] += s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];
}

static double bw_read(const float *p, size_t n, ingot__pool *pool)
{
    bw_job j = {.p = p, .n = n};
    double t0 = now();
    ingot__pool_run(pool, bw_task, &j, (n + BW_CHUNK - 1) / BW_CHUNK);
    double t = now() - t0;
    volatile float sink = j.sums[0];
    (void)sink;
    return t;
}

int ingot_cli_bench(int argc, char **argv)
{
    if (argc < 1 || strcmp(argv[0], "gemm") != 0) {
        fprintf(stderr, "usage: ingot bench gemm [--threads N] [--json] [--quick]\n");
        return 2;
    }
    unsigned only = 0;
    int json = 0, quick = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) json = 1;
        else if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) only = (unsigned)atoi(argv[++i]);
        else {
            fprintf(stderr, "ingot bench: unknown argument %s\n", argv[i]);
            return 2;
        }
    }
    const char *coretype_env = getenv("OPENBLAS_CORETYPE");
#ifdef INGOT_HAVE_OPENBLAS
    const char *core = openblas_get_corename();
#else
    const char *core = "none (OpenBLAS not found at build time)";
#endif
    if (!json) {
        printf("ingot bench gemm%s%s%s: kernels isa %s; OpenBLAS core %s (OPENBLAS_CORETYPE=%s)\n",
               only ? " --threads " : "", only ? argv[2] : "", quick ? " --quick" : "",
               ingot__isa_name(ingot__get_isa()), core, coretype_env ? coretype_env : "unset");
    }
    size_t big = quick ? 2048 : 4096, gv = 4096;
    size_t maxn = (big > gv ? big : gv) * (big > gv ? big : gv);
    float *A = malloc(maxn * sizeof *A), *B = malloc(maxn * sizeof *B), *C = malloc(maxn * sizeof *C);
    int8_t *Wi = malloc(gv * gv);
    float *x = malloc(gv * sizeof *x), *y = malloc(gv * sizeof *y), *ws = malloc(gv * sizeof *ws);
    int8_t *xi = malloc(gv);
    uint8_t *Wq = malloc(gv * gv / 32 * 34), *xq = malloc(gv / 32 * 34);
    if (!A || !B || !C || !Wi || !x || !y || !ws || !xi || !Wq || !xq) {
        fprintf(stderr, "ingot bench: out of memory\n");
        return 1;
    }
    fill(A, maxn, 1), fill(B, maxn, 2), fill(x, gv, 3);
    for (size_t i = 0; i < gv * gv; i++) Wi[i] = (int8_t)((int)(i * 2654435761u >> 24) % 255 - 127);
    for (size_t i = 0; i < gv; i++) xi[i] = (int8_t)((int)(i * 40503u >> 8) % 255 - 127), ws[i] = 1e-3f;
    for (size_t r = 0; r < gv; r++) ingot__quantize_q8_0(A + r * gv, gv, Wq + r * (gv / 32) * 34);
    ingot__quantize_q8_0(x, gv, xq);

    result res[32];
    int nres = 0;
    unsigned tlist[2] = {1, 2};
    int nt = only ? 1 : 2;
    if (only) tlist[0] = only;
    for (int ti = 0; ti < nt; ti++) {
        unsigned th = tlist[ti];
        ingot__pool *pool = ingot__pool_create(NULL, th);
#ifdef INGOT_HAVE_OPENBLAS
        openblas_set_num_threads((int)th);
#endif
        size_t sizes[2] = {1024, big};
        for (int si = 0; si < 2; si++) {
            size_t n = sizes[si];
            int reps = n <= 1024 ? 9 : 3;
            double flops = 2.0 * n * n * n, t1[9], t2[9];
            ingot__sgemm(pool, false, false, n, n, n, 1.0f, A, n, B, n, 0.0f, C, n); /* warm */
            for (int r = 0; r < reps; r++) {
                double t0 = now();
                ingot__sgemm(pool, false, false, n, n, n, 1.0f, A, n, B, n, 0.0f, C, n);
                t1[r] = now() - t0;
#ifdef INGOT_HAVE_OPENBLAS
                t0 = now();
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n, (int)n,
                            1.0f, A, (int)n, B, (int)n, 0.0f, C, (int)n);
                t2[r] = now() - t0;
#else
                t2[r] = NAN;
#endif
            }
            static char names[2][32];
            snprintf(names[si], sizeof names[si], "sgemm_%zu", n);
            res[nres++] = (result){names[si], th, flops / median(t1, reps) * 1e-9,
                                   flops / median(t2, reps) * 1e-9, "GFLOP/s", "openblas"};
        }
        /* GEMV 4096^2 f32 vs OpenBLAS and vs read bandwidth (bytes of A per second). */
        {
            int reps = 15;
            double t1[15], t2[15], t3[15];
            double bytes = (double)gv * gv * 4;
            for (int r = 0; r < reps; r++) {
                double t0 = now();
                ingot__sgemv(pool, false, gv, gv, 1.0f, A, gv, x, 0.0f, y);
                t1[r] = now() - t0;
#ifdef INGOT_HAVE_OPENBLAS
                t0 = now();
                cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)gv, (int)gv, 1.0f, A, (int)gv, x, 1,
                            0.0f, y, 1);
                t2[r] = now() - t0;
#else
                t2[r] = NAN;
#endif
                t3[r] = bw_read(A, gv * gv, pool);
            }
            double flops = 2.0 * gv * gv;
            res[nres++] = (result){"sgemv_4096", th, flops / median(t1, reps) * 1e-9,
                                   flops / median(t2, reps) * 1e-9, "GFLOP/s", "openblas"};
            double m1 = median(t1, reps), m3 = median(t3, reps);
            res[nres++] = (result){"sgemv_4096_bandwidth", th, bytes / m1 * 1e-9,
                                   bytes / m3 * 1e-9, "GB/s", "read_bandwidth"};
            /* int8 and Q8_0 GEMV: bytes of the weights per second vs the same read bandwidth. */
            for (int r = 0; r < reps; r++) {
                double t0 = now();
                ingot__gemv_i8(pool, gv, gv, Wi, gv, ws, xi, 1.0f, y);
                t1[r] = now() - t0;
                t0 = now();
                ingot__gemv_q8_0(pool, gv, gv, Wq, xq, y);
                t2[r] = now() - t0;
            }
            double bi8 = (double)gv * gv, bq8 = (double)gv * gv / 32 * 34;
            res[nres++] = (result){"gemv_i8_4096_bandwidth", th, bi8 / median(t1, reps) * 1e-9,
                                   bytes / m3 * 1e-9, "GB/s", "read_bandwidth"};
            res[nres++] = (result){"gemv_q8_0_4096_bandwidth", th, bq8 / median(t2, reps) * 1e-9,
                                   bytes / m3 * 1e-9, "GB/s", "read_bandwidth"};
        }
        ingot__pool_destroy(pool);
    }
    if (json) printf("[");
    for (int i = 0; i < nres; i++) {
        const result *r = &res[i];
        double ratio = r->ours / r->base;
        if (json) {
            printf("%s\n {\"case\": \"%s\", \"threads\": %u, \"isa\": \"%s\", \"unit\": \"%s\", ",
                   i ? "," : "", r->name, r->threads, ingot__isa_name(ingot__get_isa()), r->unit);
            if (!strcmp(r->base_name, "openblas"))
                printf("\"gflops\": %.2f, \"openblas_gflops\": %.2f, \"ratio\": %.3f, "
                       "\"openblas_core\": \"%s\", \"openblas_coretype_env\": \"%s\"}",
                       r->ours, r->base, ratio, core, coretype_env ? coretype_env : "");
            else
                printf("\"gbps\": %.2f, \"read_bandwidth_gbps\": %.2f, \"ratio\": %.3f}", r->ours,
                       r->base, ratio);
        } else {
            printf("  %-26s %u thread%s  ours %8.2f %-7s  %-14s %8.2f  ratio %.3f\n", r->name,
                   r->threads, r->threads == 1 ? " " : "s", r->ours, r->unit, r->base_name,
                   r->base, ratio);
        }
    }
    if (json) printf("\n]\n");
    free(A), free(B), free(C), free(Wi), free(x), free(y), free(ws), free(xi), free(Wq), free(xq);
    return 0;
}
