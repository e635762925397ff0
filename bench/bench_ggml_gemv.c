/*
 * bench_ggml_gemv.c - decode-shaped matrix-vector products on the same quantized weights through
 * ingot's CPU kernels and through ggml's mul_mat, in one process and the same minutes (issue
 * 16's "ggml's mul_mat is 1.1-1.3x faster on the same weights"). ggml is not in Debian 12: its
 * libraries come from a prebuilt copy (node-llama-cpp's npm package ships libggml-base.so and one
 * libggml-cpu-<level>.so per x86 level; docs/PERFORMANCE.md has the command) loaded with dlopen,
 * so the build never needs them.
 *
 *   bench_ggml_gemv --ggml-dir DIR --cpu-variant sapphirerapids [--threads T] [--reps N]
 *                   [--types q8_0,q4_0,q4_k,q6_k,f16] [--shapes 8192,2816,1024] [--mib M]
 *
 * For each type and row length K: M rows filling --mib MiB of weights (default 256: beyond the
 * last-level cache of the machines we have), quantized once by ggml's own ggml_quantize_chunk from
 * seeded random floats, so both sides read the very same bytes. Timed per rep, in an order that
 * rotates: ingot (activation quantization inside the call, as the backend does it), ggml
 * (ggml_graph_compute_with_ctx on a one-node graph; its thread start-up is inside, about 0.1 ms
 * against the tens of ms of one product). Wall-clock medians; the weight bytes over the time
 * in GB/s; the results of the two sides compared (relative L2 error) so a wrong layout shows.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu/kernels/kernels.h"
#include "bench_util.h"

#define MAX_REPS 101

/* ggml.h's declarations that this uses (the init parameters go by value). */
struct peer_init_params {
    size_t mem_size;
    void *mem_buffer;
    bool no_alloc;
};
enum { G_F32 = 0, G_F16 = 1, G_Q4_0 = 2, G_Q8_0 = 8, G_Q4_K = 12, G_Q6_K = 14 };
static void *(*g_init)(struct peer_init_params);
static void (*g_free)(void *);
static void *(*g_new_2d)(void *, int, int64_t, int64_t);
static void *(*g_data)(const void *);
static void *(*g_mul_mat)(void *, void *, void *);
static void *(*g_new_graph)(void *);
static void (*g_expand)(void *, void *);
static int (*g_compute)(void *, void *, int);
static size_t (*g_quantize)(int, const float *, void *, int64_t, int64_t, int64_t,
                            const float *);
static void (*g_cpu_init)(void);
static void (*g_to_f16)(const float *, void *, int64_t);

static void die(const char *a, const char *b)
{
    fprintf(stderr, "bench_ggml_gemv: %s%s%s\n", a, b ? ": " : "", b ? b : "");
    exit(1);
}

static void *sym(void *h, const char *name)
{
    void *p = dlsym(h, name);
    if (!p) die("missing symbol", name);
    return p;
}

static uint64_t rng = 0x243F6A8885A308D3ull;
static float urand(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (float)(rng >> 40) / 16777216.0f * 2.0f - 1.0f;
}

static const struct {
    const char *name;
    ingot_dtype dt;
    int gt;
    size_t blk, bytes;
} types[] = {{"q8_0", INGOT_DTYPE_Q8_0, G_Q8_0, 32, 34},
             {"q4_0", INGOT_DTYPE_Q4_0, G_Q4_0, 32, 18},
             {"q4_k", INGOT_DTYPE_Q4_K, G_Q4_K, 256, 144},
             {"q6_k", INGOT_DTYPE_Q6_K, G_Q6_K, 256, 210},
             {"f16", INGOT_DTYPE_F16, G_F16, 1, 2}};

int main(int argc, char **argv)
{
    const char *dir = NULL, *variant = NULL, *tlist = "q8_0,q4_0,q4_k,q6_k,f16";
    const char *slist = "8192,2816,1024";
    int threads = 1, reps = 9;
    size_t mib = 256;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--ggml-dir")) dir = argv[i + 1];
        else if (!strcmp(argv[i], "--cpu-variant")) variant = argv[i + 1];
        else if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--types")) tlist = argv[i + 1];
        else if (!strcmp(argv[i], "--shapes")) slist = argv[i + 1];
        else if (!strcmp(argv[i], "--mib")) mib = (size_t)atol(argv[i + 1]);
        else die("unknown option", argv[i]);
    }
    if (!dir || !variant || threads < 1 || reps < 1 || reps > MAX_REPS || !mib) {
        fprintf(stderr, "usage: bench_ggml_gemv --ggml-dir DIR --cpu-variant NAME [--threads T] "
                        "[--reps N] [--types LIST] [--shapes LIST] [--mib M]\n");
        return 2;
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/libggml-base.so", dir);
    void *hb = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (!hb) die("dlopen", dlerror());
    snprintf(path, sizeof path, "%s/libggml-cpu-%s.so", dir, variant);
    void *hc = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (!hc) die("dlopen", dlerror());
    /* dlsym returns an object pointer: stored through a void ** view of each (POSIX) */
    *(void **)&g_init = sym(hb, "ggml_init");
    *(void **)&g_free = sym(hb, "ggml_free");
    *(void **)&g_new_2d = sym(hb, "ggml_new_tensor_2d");
    *(void **)&g_data = sym(hb, "ggml_get_data");
    *(void **)&g_mul_mat = sym(hb, "ggml_mul_mat");
    *(void **)&g_new_graph = sym(hb, "ggml_new_graph");
    *(void **)&g_expand = sym(hb, "ggml_build_forward_expand");
    *(void **)&g_quantize = sym(hb, "ggml_quantize_chunk");
    *(void **)&g_to_f16 = sym(hb, "ggml_fp32_to_fp16_row");
    *(void **)&g_compute = sym(hc, "ggml_graph_compute_with_ctx");
    *(void **)&g_cpu_init = sym(hc, "ggml_cpu_init");
    g_cpu_init();
    ingot__pool *pool = ingot__pool_create(NULL, (unsigned)threads);
    printf("ggml %s (libggml-cpu-%s), ingot level %s, %d thread(s), wall-clock medians of %d\n",
           dir, variant, ingot__isa_name(ingot__get_isa()), threads, reps);
    printf("%-6s %6s %8s %8s | %10s %10s | %8s | %9s\n", "type", "K", "M", "MiB", "ingot GB/s",
           "ggml GB/s", "ratio", "rel. diff");
    char tl[256], sl[256];
    snprintf(tl, sizeof tl, "%s", tlist);
    for (char *tsv = NULL, *tn = strtok_r(tl, ",", &tsv); tn; tn = strtok_r(NULL, ",", &tsv)) {
        size_t ti = 0;
        while (ti < sizeof types / sizeof types[0] && strcmp(types[ti].name, tn)) ti++;
        if (ti == sizeof types / sizeof types[0]) die("unknown type", tn);
        snprintf(sl, sizeof sl, "%s", slist);
        for (char *ssv = NULL, *sn = strtok_r(sl, ",", &ssv); sn; sn = strtok_r(NULL, ",", &ssv)) {
            size_t K = (size_t)atol(sn);
            if (K % types[ti].blk) die("row length not a multiple of the block", sn);
            size_t rb = K / types[ti].blk * types[ti].bytes, M = (mib << 20) / rb;
            size_t ctx_bytes = M * rb + 3 * K * sizeof(float) + M * sizeof(float) + (64u << 20);
            void *ctx = g_init((struct peer_init_params){ctx_bytes, NULL, false});
            if (!ctx) die("ggml_init", NULL);
            void *W = g_new_2d(ctx, types[ti].gt, (int64_t)K, (int64_t)M);
            void *X = g_new_2d(ctx, G_F32, (int64_t)K, 1);
            void *Yt = g_mul_mat(ctx, W, X);
            void *gf = g_new_graph(ctx);
            g_expand(gf, Yt);
            uint8_t *w = g_data(W);
            float *x = g_data(X), *yg = g_data(Yt);
            float *rowf = malloc(K * 64 * sizeof *rowf);
            for (size_t r0 = 0; r0 < M; r0 += 64) { /* 64 rows at a time */
                size_t n = M - r0 < 64 ? M - r0 : 64;
                for (size_t k = 0; k < n * K; k++) rowf[k] = urand() * 0.05f;
                if (types[ti].gt == G_F16)
                    g_to_f16(rowf, w + r0 * K * 2, (int64_t)(n * K));
                else
                    g_quantize(types[ti].gt, rowf, w + r0 * rb, 0, (int64_t)n, (int64_t)K, NULL);
            }
            free(rowf);
            for (size_t k = 0; k < K; k++) x[k] = urand();
            float *yi = malloc(M * sizeof *yi);
            void *xq = aligned_alloc(64, ingot__qx_bytes(types[ti].dt, K) + 64);
            double ti_[MAX_REPS], tg[MAX_REPS];
            for (int r = -1; r < reps; r++) {
                for (int s = 0; s < 2; s++) {
                    double t0 = bench_now_s();
                    if ((s + r) % 2 == 0) {
                        if (types[ti].dt == INGOT_DTYPE_F16)
                            ingot__gemm_half(pool, INGOT_DTYPE_F16, M, K, w, K, 1, x, K, false,
                                             yi, M);
                        else {
                            ingot__qx_quantize(types[ti].dt, x, K, xq);
                            ingot__qgemm(pool, types[ti].dt, M, K, w, rb, NULL, xq, x, K, 1,
                                         false, yi, M);
                        }
                        if (r >= 0) ti_[r] = bench_now_s() - t0;
                    } else {
                        if (g_compute(ctx, gf, threads) != 0) die("ggml compute", NULL);
                        if (r >= 0) tg[r] = bench_now_s() - t0;
                    }
                }
            }
            double num = 0, den = 0;
            for (size_t m = 0; m < M; m++) {
                double d = (double)yi[m] - yg[m];
                num += d * d, den += (double)yg[m] * yg[m];
            }
            double bytes = (double)M * rb, a = bench_median(ti_, reps), b = bench_median(tg, reps);
            printf("%-6s %6zu %8zu %8.0f | %10.2f %10.2f | %7.2fx | %9.2e\n", types[ti].name, K,
                   M, bytes / 1048576.0, bytes / a * 1e-9, bytes / b * 1e-9, b / a,
                   sqrt(num / (den > 0 ? den : 1)));
            fflush(stdout);
            free(yi);
            free(xq);
            g_free(ctx);
        }
    }
    ingot__pool_destroy(pool);
    return 0;
}
