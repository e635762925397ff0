/*
 * cmd_bench.c - `ingot bench gemm [--threads N] [--json] [--quick]`: the CPU kernels against
 * OpenBLAS measured in the same run (cblas_sgemm / cblas_sgemv with the same thread count), and
 * the GEMVs against this machine's streaming read bandwidth. Every figure is the median of
 * several repetitions, ours and the baseline interleaved; ratios are ours / baseline.
 * OpenBLAS's core type is printed: the environment variable OPENBLAS_CORETYPE forces one
 * (Haswell halves it on AVX-512 cores).
 *
 * The read bandwidth is a streaming read of the GEMV's own weight buffer (64 MiB or more, twice
 * the L3 of the machines this was tuned on): every byte loaded (256-bit loads with AVX2), eight
 * independent accumulators, each thread one contiguous slice, as many threads as the case. A
 * GEMV reads its weights once, so its bytes per second over this figure is the fraction of the
 * machine's read bandwidth it reaches.
 *
 * OpenBLAS's idle workers spin (yielding) for a while after each call. With as many threads as
 * cores, that spinning takes the core our pool's worker needs in the next repetition, and our
 * 2-thread figures (and the 2-thread read baseline) halve at random. Unless the caller set
 * OPENBLAS_THREAD_TIMEOUT, the bench re-executes itself once with it set to 4 (OpenBLAS's
 * shortest spin), which OpenBLAS reads only when it loads; the value used is printed.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HAVE_X86 1
#endif

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
    double bytes; /* bandwidth cases: bytes streamed */
} result;

/* Streaming read bandwidth: one contiguous slice of the buffer per thread, summed as floats
 * with every byte loaded and eight independent accumulators (the sums are kept so the loads
 * cannot be dropped). */
typedef struct {
    const float *p;
    size_t n; /* floats */
    size_t per; /* floats per slice, a multiple of 64 */
    bool avx2;
    float sums[256];
} bw_job;

#ifdef HAVE_X86
__attribute__((target("avx2"))) static float bw_sum_avx2(const float *p, size_t n)
{
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0, s4 = s0, s5 = s0, s6 = s0, s7 = s0;
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        s0 = _mm256_add_ps(s0, _mm256_loadu_ps(p + i));
        s1 = _mm256_add_ps(s1, _mm256_loadu_ps(p + i + 8));
        s2 = _mm256_add_ps(s2, _mm256_loadu_ps(p + i + 16));
        s3 = _mm256_add_ps(s3, _mm256_loadu_ps(p + i + 24));
        s4 = _mm256_add_ps(s4, _mm256_loadu_ps(p + i + 32));
        s5 = _mm256_add_ps(s5, _mm256_loadu_ps(p + i + 40));
        s6 = _mm256_add_ps(s6, _mm256_loadu_ps(p + i + 48));
        s7 = _mm256_add_ps(s7, _mm256_loadu_ps(p + i + 56));
    }
    __m256 t = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)),
                             _mm256_add_ps(_mm256_add_ps(s4, s5), _mm256_add_ps(s6, s7)));
    float l[8];
    _mm256_storeu_ps(l, t);
    float r = l[0] + l[1] + l[2] + l[3] + l[4] + l[5] + l[6] + l[7];
    for (; i < n; i++) r += p[i];
    return r;
}
#endif

static float bw_sum_scalar(const float *p, size_t n)
{
    float s[8] = {0};
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) s[k] += p[i + (size_t)k];
    float r = s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];
    for (; i < n; i++) r += p[i];
    return r;
}

static void bw_task(void *ctx, size_t t, unsigned worker)
{
    bw_job *j = ctx;
    size_t lo = t * j->per, n = j->n - lo < j->per ? j->n - lo : j->per;
    float s;
#ifdef HAVE_X86
    if (j->avx2) s = bw_sum_avx2(j->p + lo, n);
    else
#endif
        s = bw_sum_scalar(j->p + lo, n);
    j->sums[worker & 255] += s;
}

/* Seconds to read bytes bytes at p with the pool's threads (one slice each). */
static double bw_read(const void *p, size_t bytes, ingot__pool *pool)
{
    size_t threads = ingot__pool_threads(pool), n = bytes / sizeof(float);
    bw_job j = {.p = p, .n = n, .avx2 = ingot__get_isa() == INGOT__ISA_AVX2};
    j.per = ((n + threads - 1) / threads + 63) / 64 * 64;
    double t0 = now();
    ingot__pool_run(pool, bw_task, &j, (n + j.per - 1) / j.per);
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
    const char *only_s = "";
    int json = 0, quick = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) json = 1;
        else if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc && atoi(argv[i + 1]) > 0)
            only_s = argv[++i], only = (unsigned)atoi(only_s);
        else {
            fprintf(stderr, "ingot bench: unknown argument %s\n", argv[i]);
            return 2;
        }
    }
    const char *coretype_env = getenv("OPENBLAS_CORETYPE");
#if defined(INGOT_HAVE_OPENBLAS) && defined(__linux__)
    /* argv is main's argv + 2 ("ingot", "bench"): re-execute the whole command line once. */
    if (!getenv("OPENBLAS_THREAD_TIMEOUT") && setenv("OPENBLAS_THREAD_TIMEOUT", "4", 1) == 0) {
        fflush(stdout);
        execv("/proc/self/exe", argv - 2);
        /* exec failed: measure anyway, the timeout line below says "unset" */
        unsetenv("OPENBLAS_THREAD_TIMEOUT");
    }
#endif
    const char *timeout_env = getenv("OPENBLAS_THREAD_TIMEOUT");
#ifdef INGOT_HAVE_OPENBLAS
    const char *core = openblas_get_corename();
#else
    const char *core = "none (OpenBLAS not found at build time)";
#endif
    /* f32 GEMM n^3 for n = 1024 and big; f32 GEMV gv x gv (64 MiB); int8 and Q8_0 GEMV
     * qv x qv (64 and 68 MiB): every GEMV's weights are twice a 32 MiB L3, so they stream from
     * memory. */
    size_t big = quick ? 2048 : 4096, gv = 4096, qv = 8192;
    if (!json) {
        printf("ingot bench gemm%s%s%s: kernels isa %s; OpenBLAS core %s (OPENBLAS_CORETYPE=%s, "
               "OPENBLAS_THREAD_TIMEOUT=%s)\n",
               only ? " --threads " : "", only_s, quick ? " --quick" : "",
               ingot__isa_name(ingot__get_isa()), core, coretype_env ? coretype_env : "unset",
               timeout_env ? timeout_env : "unset");
        printf("read bandwidth: streaming read of each GEMV's weights (%s loads of every byte, 8 "
               "accumulators, one contiguous slice per thread, same threads as the case)\n",
               ingot__get_isa() == INGOT__ISA_AVX2 ? "256-bit" : "scalar");
    }
    size_t maxn = (big > gv ? big : gv) * (big > gv ? big : gv), qrow = qv / 32 * 34;
    float *A = malloc(maxn * sizeof *A), *B = malloc(maxn * sizeof *B), *C = malloc(maxn * sizeof *C);
    int8_t *Wi = malloc(qv * qv);
    float *x = malloc(qv * sizeof *x), *y = malloc(qv * sizeof *y), *ws = malloc(qv * sizeof *ws);
    void *xi = aligned_alloc(64, ingot__qx_bytes(INGOT_DTYPE_I8, qv));
    uint8_t *Wq = malloc(qv * qrow), *xq = aligned_alloc(64, ingot__qx_bytes(INGOT_DTYPE_Q8_0, qv));
    if (!A || !B || !C || !Wi || !x || !y || !ws || !xi || !Wq || !xq) {
        fprintf(stderr, "ingot bench: out of memory\n");
        free(A), free(B), free(C), free(Wi), free(x), free(y), free(ws), free(xi), free(Wq), free(xq);
        return 1;
    }
    fill(A, maxn, 1), fill(B, maxn, 2), fill(x, qv, 3);
    for (size_t i = 0; i < qv * qv; i++) Wi[i] = (int8_t)((int)(i * 2654435761u >> 24) % 255 - 127);
    for (size_t i = 0; i < qv; i++) ws[i] = 1e-3f;
    ingot__qx_quantize(INGOT_DTYPE_I8, x, qv, xi);
    for (size_t r = 0; r < qv; r++) /* rows of A's values, qv at a time */
        ingot__quantize_q8_0(A + r * qv % (maxn - qv + 1), qv, Wq + r * qrow);
    ingot__qx_quantize(INGOT_DTYPE_Q8_0, x, qv, xq);

    result res[32];
    int nres = 0;
    unsigned tlist[2] = {1, 2};
    int nt = only ? 1 : 2;
    if (only) tlist[0] = only;
    for (int ti = 0; ti < nt; ti++) {
        unsigned th = tlist[ti];
        ingot__pool *pool = ingot__pool_create(NULL, th);
        if (!pool) {
            fprintf(stderr, "ingot bench: cannot start %u threads\n", th);
            break;
        }
#ifdef INGOT_HAVE_OPENBLAS
        openblas_set_num_threads((int)th);
#endif
        size_t sizes[2] = {1024, big};
        for (int si = 0; si < 2; si++) {
            size_t n = sizes[si];
            int reps = n <= 1024 ? 11 : 5;
            double flops = 2.0 * n * n * n, t1[11], t2[11];
            ingot__sgemm(pool, false, false, n, n, n, 1.0f, A, n, B, n, 0.0f, C, n); /* warm */
            for (int r = 0; r < reps; r++) {
                for (int half = 0; half < 2; half++) { /* ours first on even reps */
                    double t0 = now();
                    if ((half ^ r) & 1) {
#ifdef INGOT_HAVE_OPENBLAS
                        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n,
                                    (int)n, 1.0f, A, (int)n, B, (int)n, 0.0f, C, (int)n);
                        t2[r] = now() - t0;
#else
                        t2[r] = NAN;
#endif
                    } else {
                        ingot__sgemm(pool, false, false, n, n, n, 1.0f, A, n, B, n, 0.0f, C, n);
                        t1[r] = now() - t0;
                    }
                }
            }
            static char names[2][32];
            snprintf(names[si], sizeof names[si], "sgemm_%zu", n);
            res[nres++] = (result){names[si], th, flops / median(t1, reps) * 1e-9,
                                   flops / median(t2, reps) * 1e-9, "GFLOP/s", "openblas", 0};
        }
        enum { REPS = 15 };
        /* GEMV gv^2 f32 vs OpenBLAS (GFLOP/s) and vs the read bandwidth (bytes of A/s). */
        {
            double t1[REPS], t2[REPS], t3[REPS], bytes = (double)gv * gv * 4;
            for (int r = 0; r < REPS; r++) {
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
                t3[r] = bw_read(A, gv * gv * sizeof(float), pool);
            }
            double flops = 2.0 * gv * gv, m1 = median(t1, REPS), m3 = median(t3, REPS);
            res[nres++] = (result){"sgemv_4096", th, flops / m1 * 1e-9,
                                   flops / median(t2, REPS) * 1e-9, "GFLOP/s", "openblas", 0};
            res[nres++] = (result){"sgemv_4096_bandwidth", th, bytes / m1 * 1e-9,
                                   bytes / m3 * 1e-9, "GB/s", "read_bandwidth", bytes};
        }
        /* int8 and Q8_0 GEMV qv^2: bytes of the weights per second vs the read bandwidth of
         * the same weights. */
        for (int q = 0; q < 2; q++) {
            double t1[REPS], t3[REPS], bytes = q ? (double)qv * qrow : (double)qv * qv;
            for (int r = 0; r < REPS; r++) {
                double t0 = now();
                if (q) ingot__qgemm(pool, INGOT_DTYPE_Q8_0, qv, qv, Wq, qrow, NULL, xq, 1, false, y, qv);
                else ingot__qgemm(pool, INGOT_DTYPE_I8, qv, qv, Wi, qv, ws, xi, 1, false, y, qv);
                t1[r] = now() - t0;
                t3[r] = bw_read(q ? (const void *)Wq : (const void *)Wi, (size_t)bytes, pool);
            }
            res[nres++] = (result){q ? "gemv_q8_0_8192_bandwidth" : "gemv_i8_8192_bandwidth", th,
                                   bytes / median(t1, REPS) * 1e-9,
                                   bytes / median(t3, REPS) * 1e-9, "GB/s", "read_bandwidth",
                                   bytes};
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
                       "\"openblas_core\": \"%s\", \"openblas_coretype_env\": \"%s\", "
                       "\"openblas_thread_timeout_env\": \"%s\"}",
                       r->ours, r->base, ratio, core, coretype_env ? coretype_env : "",
                       timeout_env ? timeout_env : "");
            else
                printf("\"gbps\": %.2f, \"read_bandwidth_gbps\": %.2f, \"ratio\": %.3f, "
                       "\"bytes\": %.0f, \"read_bandwidth_method\": \"streaming read of the same "
                       "buffer, %s loads of every byte, 8 accumulators, %u contiguous slice%s\"}",
                       r->ours, r->base, ratio, r->bytes,
                       ingot__get_isa() == INGOT__ISA_AVX2 ? "256-bit" : "scalar", r->threads,
                       r->threads == 1 ? "" : "s");
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
