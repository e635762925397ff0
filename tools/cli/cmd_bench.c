/*
 * cmd_bench.c - `ingot bench gemm [--threads N] [--json] [--quick] [--gemv | --sgemm]`: the CPU
 * kernels at the ISA level in effect (INGOT_ISA caps it) against baselines measured in the same
 * run:
 *   - f32 GEMM and GEMV against OpenBLAS (cblas_sgemm / cblas_sgemv, same thread count);
 *   - GEMV (decode) on f32, F16, BF16, int8, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K weights against the
 *     streaming read rate of the same weight buffer, rows of 8192 elements, and the quantized
 *     types again on the runtime's short rows (1024 and 2816 elements, a 246 M Llama's
 *     attention and FFN widths: per-row costs weigh more there);
 *   - quantized GEMM (prefill, 64 and 512 activation rows) against the f32 GEMM on the weights
 *     dequantized to f32.
 * Every figure is the median of several repetitions, ours and the baseline interleaved; ratios
 * are ours / baseline.
 *
 * OpenBLAS is loaded here, at run time (dlopen of libopenblas.so.0, Debian's libopenblas0), not
 * linked into the CLI: linked, its relocation and thread start-up cost every `ingot` command
 * (half of an `ingot info`'s 4.8 ms). The core type it picks is printed. Unless the caller set
 * OPENBLAS_CORETYPE, the bench sets it for the CPU (SkylakeX where AVX-512 runs, Haswell where
 * AVX2 is the widest: OpenBLAS 0.3.21 otherwise may pick Haswell kernels on an AVX-512 Xeon it
 * does not know); it also sets OPENBLAS_THREAD_TIMEOUT=4 unless set (OpenBLAS's idle workers
 * spin after each call and, with as many threads as cores, take the core our pool's worker
 * needs next). OpenBLAS reads both when it loads, so they are set before the dlopen; the values
 * are printed.
 *
 * Decode weights are sized by the last-level cache the CPU reports (sysconf, else sysfs): at
 * least twice the L3 (1.25 times with --quick), so that they stream from memory. The read rate is
 * a streaming read of the same buffer with the widest loads the CPU has (512-bit with AVX-512,
 * else 256-bit), every byte loaded, independent accumulators, one contiguous slice per thread,
 * the case's thread count: a GEMV reads its weights once, so bytes per second over this is the
 * fraction of the machine's read rate it reaches.
 */
#define _GNU_SOURCE /* sysconf(_SC_LEVEL3_CACHE_SIZE) */
#include <dlfcn.h>
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
#include "ingot/quant.h"

/* The OpenBLAS entry points the bench calls, found by dlsym. The enum arguments are CBLAS's
 * (passed as int): row-major 101, no transpose 111. */
enum { BLAS_ROW_MAJOR = 101, BLAS_NO_TRANS = 111 };
typedef struct blas_lib {
    void (*sgemm)(int order, int ta, int tb, int m, int n, int k, float alpha, const float *a,
                  int lda, const float *b, int ldb, float beta, float *c, int ldc);
    void (*sgemv)(int order, int ta, int m, int n, float alpha, const float *a, int lda,
                  const float *x, int incx, float beta, float *y, int incy);
    char *(*corename)(void);
    void (*set_threads)(int n);
} blas_lib;

/* Loads OpenBLAS; false (and *why set) when it is not installed or lacks a symbol. */
static bool blas_load(blas_lib *b, const char **why)
{
    static const char *const names[] = {"libopenblas.so.0", "libopenblas.so"};
    void *h = NULL;
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !h; i++)
        h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        *why = "none (libopenblas.so.0 not found: Debian's libopenblas0)";
        return false;
    }
    /* dlsym returns an object pointer: stored through a void ** view of each member (POSIX) */
    *(void **)(&b->sgemm) = dlsym(h, "cblas_sgemm");
    *(void **)(&b->sgemv) = dlsym(h, "cblas_sgemv");
    *(void **)(&b->corename) = dlsym(h, "openblas_get_corename");
    *(void **)(&b->set_threads) = dlsym(h, "openblas_set_num_threads");
    if (!b->sgemm || !b->sgemv || !b->corename || !b->set_threads) {
        *why = "none (libopenblas.so.0 lacks a cblas / openblas symbol)";
        memset(b, 0, sizeof *b);
        return false; /* the handle stays open: nothing else holds it, the process ends soon */
    }
    return true;
}

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

static uint32_t lcg(uint32_t *s) { return *s = *s * 1664525u + 1013904223u; }

static void fill(float *p, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++) p[i] = (float)(lcg(&seed) >> 8) * (1.0f / 16777216.0f) - 0.5f;
}

typedef struct {
    char name[40];
    unsigned threads;
    double ours, base; /* GFLOP/s, or GB/s for read-rate cases */
    const char *unit, *base_name;
    double bytes; /* read-rate cases: bytes streamed */
} result;

/* ---- streaming read rate ---- */

typedef struct {
    const uint8_t *p;
    size_t n, per; /* bytes; bytes per slice (a multiple of 256) */
    int width;     /* 512, 256 or 0 (scalar) */
    float sums[256];
} bw_job;

#ifdef HAVE_X86
__attribute__((target("avx512f"))) static float bw_sum512(const uint8_t *p, size_t n)
{
    __m512 s[8];
    for (int i = 0; i < 8; i++) s[i] = _mm512_setzero_ps();
    size_t i = 0;
    for (; i + 512 <= n; i += 512)
        for (int k = 0; k < 8; k++)
            s[k] = _mm512_add_ps(
                s[k], _mm512_loadu_ps((const float *)(const void *)(p + i + 64 * (size_t)k)));
    for (int k = 1; k < 8; k++) s[0] = _mm512_add_ps(s[0], s[k]);
    float r = _mm512_reduce_add_ps(s[0]);
    for (; i < n; i++) r += p[i];
    return r;
}

__attribute__((target("avx2"))) static float bw_sum256(const uint8_t *p, size_t n)
{
    __m256 s[8];
    for (int i = 0; i < 8; i++) s[i] = _mm256_setzero_ps();
    size_t i = 0;
    for (; i + 256 <= n; i += 256)
        for (int k = 0; k < 8; k++)
            s[k] = _mm256_add_ps(
                s[k], _mm256_loadu_ps((const float *)(const void *)(p + i + 32 * (size_t)k)));
    for (int k = 1; k < 8; k++) s[0] = _mm256_add_ps(s[0], s[k]);
    float l[8], r = 0;
    _mm256_storeu_ps(l, s[0]);
    for (int k = 0; k < 8; k++) r += l[k];
    for (; i < n; i++) r += p[i];
    return r;
}
#endif

static float bw_sum_scalar(const uint8_t *p, size_t n)
{
    uint64_t s[8] = {0};
    size_t i = 0;
    for (; i + 64 <= n; i += 64)
        for (int k = 0; k < 8; k++) {
            uint64_t v;
            memcpy(&v, p + i + 8 * (size_t)k, 8);
            s[k] += v;
        }
    uint64_t r = s[0] ^ s[1] ^ s[2] ^ s[3] ^ s[4] ^ s[5] ^ s[6] ^ s[7];
    for (; i < n; i++) r += p[i];
    return (float)r;
}

static void bw_task(void *ctx, size_t t, unsigned worker)
{
    bw_job *j = ctx;
    size_t lo = t * j->per, n = j->n - lo < j->per ? j->n - lo : j->per;
    float s;
#ifdef HAVE_X86
    if (j->width == 512)
        s = bw_sum512(j->p + lo, n);
    else if (j->width == 256)
        s = bw_sum256(j->p + lo, n);
    else
#endif
        s = bw_sum_scalar(j->p + lo, n);
    j->sums[worker & 255] += s;
}

static int read_width(void)
{
    return ingot__isa_supported(INGOT__ISA_AVX512) ? 512
           : ingot__isa_supported(INGOT__ISA_AVX2) ? 256
                                                   : 0;
}

/* Seconds to read bytes bytes at p with the pool's threads (one slice each). */
static double bw_read(const void *p, size_t bytes, ingot__pool *pool)
{
    size_t threads = ingot__pool_threads(pool);
    bw_job j = {.p = p, .n = bytes, .width = read_width()};
    j.per = ((bytes + threads - 1) / threads + 255) / 256 * 256;
    double t0 = now();
    ingot__pool_run(pool, bw_task, &j, (bytes + j.per - 1) / j.per);
    double t = now() - t0;
    volatile float sink = j.sums[0];
    (void)sink;
    return t;
}

/* ---- weights ---- */

static uint64_t l3_bytes(void)
{
    long v = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (v > 0) return (uint64_t)v;
    FILE *f = fopen("/sys/devices/system/cpu/cpu0/cache/index3/size", "r");
    unsigned long n = 0;
    char unit = 0;
    if (f) {
        if (fscanf(f, "%lu%c", &n, &unit) < 1) n = 0;
        fclose(f);
    }
    return unit == 'M' ? (uint64_t)n << 20 : unit == 'K' ? (uint64_t)n << 10 : n;
}

/* Bytes of one row of K elements of dtype wt. */
static size_t row_bytes(ingot_dtype wt, size_t K)
{
    if (wt == INGOT_DTYPE_F32) return K * 4;
    if (wt == INGOT_DTYPE_F16 || wt == INGOT_DTYPE_BF16) return K * 2;
    if (wt == INGOT_DTYPE_I8) return K;
    return K / ingot_dtype_block_elems(wt) * ingot_dtype_block_bytes(wt);
}

/* rows x K weights of dtype wt in w: float values in [-0.5, 0.5) for the float types, random
 * quants with f16 scales of a sane size for the block types (every byte pattern is valid). */
static void fill_weights(ingot_dtype wt, uint8_t *w, size_t rows, size_t K, uint32_t seed)
{
    size_t rb = row_bytes(wt, K), n = rows * rb;
    if (wt == INGOT_DTYPE_F32) {
        fill((float *)(void *)w, n / 4, seed);
        return;
    }
    if (wt == INGOT_DTYPE_F16 || wt == INGOT_DTYPE_BF16) {
        float tmp[1024];
        for (size_t i = 0; i < n / 2; i += 1024) {
            size_t c = n / 2 - i < 1024 ? n / 2 - i : 1024;
            fill(tmp, c, seed + (uint32_t)i);
            ingot_f32_encode(wt, tmp, c, w + 2 * i, 2 * c, NULL);
        }
        return;
    }
    for (size_t i = 0; i + 4 <= n; i += 4) {
        uint32_t v = lcg(&seed);
        memcpy(w + i, &v, 4);
    }
    if (wt == INGOT_DTYPE_I8) return;
    size_t bb = ingot_dtype_block_bytes(wt), off = wt == INGOT_DTYPE_Q6_K ? 208 : 0;
    uint16_t d = 0x1c00, dmin = 0x2000; /* 2^-8 and 2^-7 */
    for (size_t b = 0; b < n / bb; b++) {
        memcpy(w + b * bb + off, &d, 2);
        if (wt == INGOT_DTYPE_Q4_K || wt == INGOT_DTYPE_Q5_K) memcpy(w + b * bb + 2, &dmin, 2);
    }
}

/* One GEMV (decode) on the weights, activations quantized inside the timed call as the backend
 * does. */
typedef struct {
    ingot_dtype wt;
    size_t M, K;
    const uint8_t *w;
    const float *x, *wscale;
    void *xq;
    float *y;
} gemv_case;

static void run_gemv(const gemv_case *c, ingot__pool *pool)
{
    size_t rb = row_bytes(c->wt, c->K);
    if (c->wt == INGOT_DTYPE_F32)
        ingot__sgemv(pool, false, c->M, c->K, 1.0f, (const float *)(const void *)c->w, c->K, c->x,
                     0.0f, c->y);
    else if (c->wt == INGOT_DTYPE_F16 || c->wt == INGOT_DTYPE_BF16)
        ingot__gemm_half(pool, c->wt, c->M, c->K, c->w, c->K, 1, c->x, c->K, false, c->y, c->M);
    else {
        ingot__qx_quantize(c->wt, c->x, c->K, c->xq);
        ingot__qgemm(pool, c->wt, c->M, c->K, c->w, rb, c->wscale, c->xq, c->x, c->K, 1, false,
                     c->y, c->M);
    }
}

static const ingot_dtype gemv_types[] = {INGOT_DTYPE_F32,  INGOT_DTYPE_F16,  INGOT_DTYPE_BF16,
                                         INGOT_DTYPE_I8,   INGOT_DTYPE_Q8_0, INGOT_DTYPE_Q4_0,
                                         INGOT_DTYPE_Q4_K, INGOT_DTYPE_Q5_K, INGOT_DTYPE_Q6_K};
/* The runtime's short rows (1024 and 2816 elements): the quantized types a model file holds. */
static const ingot_dtype short_types[] = {INGOT_DTYPE_Q4_K, INGOT_DTYPE_Q5_K, INGOT_DTYPE_Q6_K,
                                          INGOT_DTYPE_Q8_0, INGOT_DTYPE_Q4_0};
static const ingot_dtype gemm_types[] = {INGOT_DTYPE_F16,  INGOT_DTYPE_BF16, INGOT_DTYPE_I8,
                                         INGOT_DTYPE_Q8_0, INGOT_DTYPE_Q4_0, INGOT_DTYPE_Q4_K,
                                         INGOT_DTYPE_Q6_K};

static const char *lname(ingot_dtype wt)
{
    switch (wt) {
    case INGOT_DTYPE_F32: return "f32";
    case INGOT_DTYPE_F16: return "f16";
    case INGOT_DTYPE_BF16: return "bf16";
    case INGOT_DTYPE_I8: return "i8";
    case INGOT_DTYPE_Q8_0: return "q8_0";
    case INGOT_DTYPE_Q4_0: return "q4_0";
    case INGOT_DTYPE_Q4_K: return "q4_k";
    case INGOT_DTYPE_Q5_K: return "q5_k";
    case INGOT_DTYPE_Q6_K: return "q6_k";
    default: return "?";
    }
}

/* Quantized / half GEMM of nx activation rows on [M, K] weights, activations quantized inside
 * the timed call. */
static ingot_status run_gemm(ingot_dtype wt, size_t M, size_t K, const uint8_t *w,
                             const float *wscale, const float *X, size_t nx, void *xq, float *Y,
                             ingot__pool *pool)
{
    if (wt == INGOT_DTYPE_F16 || wt == INGOT_DTYPE_BF16) {
        ingot__gemm_half(pool, wt, M, K, w, K, nx, X, K, false, Y, M);
        return INGOT_OK;
    }
    size_t xb = ingot__qx_bytes(wt, K);
    for (size_t i = 0; i < nx; i++) ingot__qx_quantize(wt, X + i * K, K, (uint8_t *)xq + i * xb);
    return ingot__qgemm(pool, wt, M, K, w, row_bytes(wt, K), wscale, xq, X, K, nx, false, Y, M);
}

#define MAXRES 96

int ingot_cli_bench(int argc, char **argv)
{
    if (argc >= 1 && !strcmp(argv[0], "generate"))
        return ingot_cli_bench_generate(argc - 1, argv + 1);
    if (argc < 1 || strcmp(argv[0], "gemm") != 0) {
        fprintf(stderr, "usage: ingot bench gemm [--threads N] [--json] [--quick]"
                        " [--gemv | --sgemm]\n"
                        "       ingot bench generate MODEL [--threads N] [--json]\n");
        return 2;
    }
    unsigned only = 0;
    const char *only_s = "";
    /* --gemv: the GEMV cases alone; --sgemm: the f32 GEMM cases alone */
    int json = 0, quick = 0, gemv_only = 0, sgemm_only = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json"))
            json = 1;
        else if (!strcmp(argv[i], "--gemv"))
            gemv_only = 1;
        else if (!strcmp(argv[i], "--sgemm"))
            sgemm_only = 1;
        else if (!strcmp(argv[i], "--quick"))
            quick = 1;
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc && atoi(argv[i + 1]) > 0)
            only_s = argv[++i], only = (unsigned)atoi(only_s);
        else {
            fprintf(stderr, "ingot bench: unknown argument %s\n", argv[i]);
            return 2;
        }
    }
    const char *want_core = ingot__isa_supported(INGOT__ISA_AVX512) ? "SkylakeX"
                            : ingot__isa_supported(INGOT__ISA_AVX2) ? "Haswell"
                                                                    : NULL;
    bool set_c = !getenv("OPENBLAS_CORETYPE") && want_core;
    if (!getenv("OPENBLAS_THREAD_TIMEOUT")) setenv("OPENBLAS_THREAD_TIMEOUT", "4", 1);
    if (set_c) setenv("OPENBLAS_CORETYPE", want_core, 1);
    blas_lib blas = {0};
    const char *core = NULL;
    bool have_blas = blas_load(&blas, &core);
    if (have_blas) core = blas.corename();
    const char *coretype_env = getenv("OPENBLAS_CORETYPE"),
               *timeout_env = getenv("OPENBLAS_THREAD_TIMEOUT");
    bool coretype_ours = set_c;
    const char *isa = ingot__isa_name(ingot__get_isa());
    uint64_t l3 = l3_bytes();
    /* Decode weights: K = 8192 columns, rows for at least 2 x L3 (64 MiB when unknown). */
    size_t K = 8192, target = l3 ? (size_t)(quick ? l3 * 5 / 4 : l3 * 2) : (size_t)64 << 20;
    if (target < ((size_t)64 << 20)) target = (size_t)64 << 20;
    size_t big = quick ? 2048 : 4096, pk = quick ? 2048 : 4096; /* GEMM sizes; prefill K = N */
    if (!json) {
        printf("ingot bench gemm%s%s%s: kernels isa %s; OpenBLAS core %s (OPENBLAS_CORETYPE=%s%s, "
               "OPENBLAS_THREAD_TIMEOUT=%s)\n",
               only ? " --threads " : "", only_s, quick ? " --quick" : "", isa, core,
               coretype_env ? coretype_env : "unset", coretype_ours ? ", set by the bench" : "",
               timeout_env ? timeout_env : "unset");
        printf("last-level cache reported: %.1f MiB; decode weights %.0f MiB each (%s x L3), K = "
               "%zu\n",
               (double)l3 / 1048576.0, (double)target / 1048576.0, quick ? "1.25" : "2", K);
        printf("read rate: streaming read of each GEMV's weights (%d-bit loads of every byte, one "
               "contiguous slice per thread, same threads as the case)\n",
               read_width());
    }
    size_t maxn = big * big;
    float *A = malloc(maxn * sizeof *A), *B = malloc(maxn * sizeof *B),
          *C = malloc(maxn * sizeof *C);
    size_t wbytes = target + ((size_t)1 << 20);
    uint8_t *W = aligned_alloc(64, wbytes);
    /* Q4_0 has the fewest bytes a row (K / 32 * 18), on the short rows of 1024 the most rows */
    size_t maxrows = target / (1024 / 2) + 1024;
    float *x = malloc(K * sizeof *x), *y = malloc(maxrows * sizeof *y);
    float *ws = malloc(maxrows * sizeof *ws);
    void *xq = aligned_alloc(64, 512 * (2 * pk + 256) + 4 * K); /* > any ingot__qx_bytes */
    float *X = malloc(512 * pk * sizeof *X), *Yg = malloc(512 * pk * sizeof *Yg);
    float *Wd = malloc(pk * pk * sizeof *Wd);
    if (!A || !B || !C || !W || !x || !y || !ws || !xq || !X || !Yg || !Wd) {
        fprintf(stderr, "ingot bench: out of memory\n");
        free(A), free(B), free(C), free(W), free(x), free(y), free(ws), free(xq), free(X);
        free(Yg), free(Wd);
        return 1;
    }
    fill(A, maxn, 1), fill(B, maxn, 2), fill(x, K, 3), fill(X, 512 * pk, 4);
    for (size_t i = 0; i < maxrows; i++) ws[i] = 1e-3f;

    result res[MAXRES];
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
        if (have_blas) blas.set_threads((int)th);
        /* f32 GEMM n^3 against OpenBLAS */
        size_t sizes[2] = {1024, big};
        for (int si = 0; si < (gemv_only ? 0 : 2); si++) {
            size_t n = sizes[si];
            int reps = n <= 1024 ? 11 : 5;
            double flops = 2.0 * n * n * n, t1[11], t2[11];
            ingot__sgemm(pool, false, false, n, n, n, 1.0f, A, n, B, n, 0.0f, C, n); /* warm */
            for (int r = 0; r < reps; r++)
                for (int half = 0; half < 2; half++) { /* ours first on even reps */
                    double t0 = now();
                    if ((half ^ r) & 1) {
                        if (have_blas)
                            blas.sgemm(BLAS_ROW_MAJOR, BLAS_NO_TRANS, BLAS_NO_TRANS, (int)n,
                                       (int)n, (int)n, 1.0f, A, (int)n, B, (int)n, 0.0f, C,
                                       (int)n);
                        t2[r] = have_blas ? now() - t0 : NAN;
                    } else {
                        ingot__sgemm(pool, false, false, n, n, n, 1.0f, A, n, B, n, 0.0f, C, n);
                        t1[r] = now() - t0;
                    }
                }
            result *r = &res[nres++];
            *r = (result){"",
                          th,
                          flops / median(t1, reps) * 1e-9,
                          flops / median(t2, reps) * 1e-9,
                          "GFLOP/s",
                          "openblas",
                          0};
            snprintf(r->name, sizeof r->name, "sgemm_%zu", n);
        }
        /* GEMV (decode) on every weight type against the read rate of the same buffer; f32 also
         * against OpenBLAS's sgemv. */
        enum { REPS = 9 };
        size_t ngemv = sizeof gemv_types / sizeof gemv_types[0];
        size_t nshort = sizeof short_types / sizeof short_types[0];
        for (size_t ci = 0; ci < (sgemm_only ? 0 : ngemv + 2 * nshort); ci++) {
            /* every type on rows of K, then the quantized ones on rows of 1024 and 2816 */
            bool sh = ci >= ngemv;
            size_t gi = sh ? (ci - ngemv) % nshort : ci;
            ingot_dtype wt = sh ? short_types[gi] : gemv_types[gi];
            size_t kc = !sh ? K : ci - ngemv < nshort ? 1024 : 2816;
            size_t rb = row_bytes(wt, kc), M = (target / rb + 63) / 64 * 64, bytes = M * rb;
            if (bytes > wbytes) M = wbytes / rb, bytes = M * rb;
            fill_weights(wt, W, M, kc, 7 + (uint32_t)ci);
            gemv_case c = {wt, M, kc, W, x, ws, xq, y};
            run_gemv(&c, pool); /* warm */
            double t1[REPS], t2[REPS] = {0}, t3[REPS];
            (void)t2; /* OpenBLAS's sgemv times, when it is there */
            for (int r = 0; r < REPS; r++) {
                double t0 = now();
                run_gemv(&c, pool);
                t1[r] = now() - t0;
                t3[r] = bw_read(W, bytes, pool);
                if (wt == INGOT_DTYPE_F32 && have_blas) {
                    t0 = now();
                    blas.sgemv(BLAS_ROW_MAJOR, BLAS_NO_TRANS, (int)M, (int)kc, 1.0f,
                               (const float *)(const void *)W, (int)kc, x, 1, 0.0f, y, 1);
                    t2[r] = now() - t0;
                }
            }
            double m1 = median(t1, REPS);
            if (wt == INGOT_DTYPE_F32) {
                double m2 = have_blas ? median(t2, REPS) : NAN;
                result *r = &res[nres++];
                *r = (result){
                    "",         th, 2.0 * M * kc / m1 * 1e-9, 2.0 * M * kc / m2 * 1e-9, "GFLOP/s",
                    "openblas", 0};
                snprintf(r->name, sizeof r->name, "sgemv_%zux%zu", M, kc);
            }
            result *r = &res[nres++];
            *r = (result){"",     th,          bytes / m1 * 1e-9, bytes / median(t3, REPS) * 1e-9,
                          "GB/s", "read_rate", (double)bytes};
            snprintf(r->name, sizeof r->name, "gemv_%s_%zux%zu", lname(wt), M, kc);
        }
        /* Prefill: nx activation rows against [pk, pk] weights, against the f32 GEMM on the
         * weights dequantized (x . W^T, the backend's linear). */
        size_t nxs[2] = {64, 512};
        for (int ni = 0; ni < (gemv_only || sgemm_only ? 0 : quick ? 1 : 2); ni++) {
            size_t nx = nxs[ni];
            for (size_t gi = 0; gi < sizeof gemm_types / sizeof gemm_types[0]; gi++) {
                ingot_dtype wt = gemm_types[gi];
                size_t rb = row_bytes(wt, pk);
                fill_weights(wt, W, pk, pk, 11 + (uint32_t)gi);
                for (size_t m = 0; m < pk; m++) {
                    if (wt == INGOT_DTYPE_I8)
                        for (size_t k = 0; k < pk; k++)
                            Wd[m * pk + k] = ws[m] * (float)(int8_t)W[m * rb + k];
                    else
                        ingot_dequantize(wt, W + m * rb, rb, Wd + m * pk, pk, NULL);
                }
                int reps = nx > 64 ? 3 : 5;
                double t1[5], t2[5], flops = 2.0 * nx * pk * pk;
                if (run_gemm(wt, pk, pk, W, ws, X, nx, xq, Yg, pool) != INGOT_OK) {
                    fprintf(stderr, "ingot bench: out of memory\n");
                    break;
                }
                for (int r = 0; r < reps; r++) {
                    double t0 = now();
                    run_gemm(wt, pk, pk, W, ws, X, nx, xq, Yg, pool);
                    t1[r] = now() - t0;
                    t0 = now();
                    ingot__sgemm(pool, false, true, nx, pk, pk, 1.0f, X, pk, Wd, pk, 0.0f, Yg, pk);
                    t2[r] = now() - t0;
                }
                result *r = &res[nres++];
                *r = (result){"",
                              th,
                              flops / median(t1, reps) * 1e-9,
                              flops / median(t2, reps) * 1e-9,
                              "GFLOP/s",
                              "f32_gemm_dequantized",
                              0};
                snprintf(r->name, sizeof r->name, "gemm_%s_%zux%zux%zu", lname(wt), nx, pk, pk);
            }
        }
        ingot__pool_destroy(pool);
    }
    if (json) printf("[");
    for (int i = 0; i < nres; i++) {
        const result *r = &res[i];
        double ratio = r->ours / r->base;
        if (json) {
            printf("%s\n {\"case\": \"%s\", \"threads\": %u, \"isa\": \"%s\", \"unit\": \"%s\", ",
                   i ? "," : "", r->name, r->threads, isa, r->unit);
            if (!strcmp(r->base_name, "openblas"))
                printf("\"gflops\": %.2f, \"openblas_gflops\": %.2f, \"ratio\": %.3f, "
                       "\"openblas_core\": \"%s\", \"openblas_coretype_env\": \"%s\", "
                       "\"openblas_coretype_set_by_bench\": %s, "
                       "\"openblas_thread_timeout_env\": \"%s\"}",
                       r->ours, r->base, ratio, core, coretype_env ? coretype_env : "",
                       coretype_ours ? "true" : "false", timeout_env ? timeout_env : "");
            else if (!strcmp(r->base_name, "read_rate"))
                printf("\"gbps\": %.2f, \"read_rate_gbps\": %.2f, \"ratio\": %.3f, "
                       "\"bytes\": %.0f, \"l3_bytes\": %llu, \"read_rate_method\": \"streaming "
                       "read of the same buffer, %d-bit loads of every byte, %u contiguous "
                       "slice%s\"}",
                       r->ours, r->base, ratio, r->bytes, (unsigned long long)l3, read_width(),
                       r->threads, r->threads == 1 ? "" : "s");
            else
                printf("\"gflops\": %.2f, \"f32_gemm_dequantized_gflops\": %.2f, \"ratio\": %.3f}",
                       r->ours, r->base, ratio);
        } else {
            printf("  %-26s %u thread%s %-12s ours %8.2f %-7s  %-20s %8.2f  ratio %.3f\n", r->name,
                   r->threads, r->threads == 1 ? " " : "s", isa, r->ours, r->unit, r->base_name,
                   r->base, ratio);
        }
    }
    if (json) printf("\n]\n");
    free(A), free(B), free(C), free(W), free(x), free(y), free(ws), free(xq), free(X), free(Yg);
    free(Wd);
    return 0;
}
