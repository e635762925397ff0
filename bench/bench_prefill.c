/*
 * bench_prefill.c - the prefill GEMMs of a Llama layer as the cpu backend runs them (activations
 * f32, quantized first only where the kernel reads the quantized copy), per weight dtype, beside
 * the blocked f32 GEMM on the same weights dequantized, measured in the same run. Shapes: the
 * 246 M llama-bench model's linears (q, k, v, o: 1024 / 256 rows of 1024; gate, up: 2816 x 1024;
 * down: 1024 x 2816) against NX activation rows. Thread CPU time of the calling thread plus the
 * pool's (process CPU time), median of REPS; one JSON object per dtype on stdout. Block types
 * whose route at this level is not the f32 one on dequantized panels (the AMX tiles, the
 * AVX-512 VNNI int8 GEMM) are also timed through that route (ingot__dequant_gemm,
 * "dequant_layer_ms_cpu"), the one they had before.
 *
 *   bench_prefill [--nx NX] [--threads T] [--reps R] [--dtypes F16,Q8_0,...]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu/kernels/qdot.h"
#include "ingot/quant.h"
#include "bench_util.h"

static double cpu_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static float uni(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (float)(rng >> 40) / 8388608.0f - 1.0f;
}

typedef struct {
    size_t M, K;
} shape;

/* one layer's linears (q, k, v, o, gate, up, down) */
static const shape layer[] = {{1024, 1024}, {256, 1024}, {256, 1024}, {1024, 1024},
                              {2816, 1024}, {2816, 1024}, {1024, 2816}};
#define NLIN (sizeof layer / sizeof layer[0])

int main(int argc, char **argv)
{
    size_t nx = 128;
    unsigned threads = 1;
    int reps = 7;
    const char *dts = "F16,Q8_0,Q4_K,Q6_K";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--nx") && i + 1 < argc) nx = (size_t)atol(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            threads = (unsigned)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--dtypes") && i + 1 < argc) dts = argv[++i];
        else {
            fprintf(stderr, "usage: bench_prefill [--nx NX] [--threads T] [--reps R] "
                            "[--dtypes F16,Q8_0,...]\n");
            return 2;
        }
    }
    if (nx < 1 || threads < 1 || reps < 1 || reps > 99) return 2;
    ingot__pool *pool = ingot__pool_create(NULL, threads);
    size_t maxw = 2816 * 1024;
    float *X = malloc(nx * 2816 * 4), *Y = malloc(nx * 2816 * 4), *Wf = malloc(maxw * 4);
    uint8_t *W = malloc(maxw * 4);
    uint8_t *xq = aligned_alloc(64, nx * ingot__qx_bytes(INGOT_DTYPE_I8, 4096));
    if (!pool || !X || !Y || !Wf || !W || !xq) return 1;
    for (size_t i = 0; i < nx * 2816; i++) X[i] = uni();
    char list[256];
    snprintf(list, sizeof list, "%s", dts);
    for (char *name = strtok(list, ","); name; name = strtok(NULL, ",")) {
        ingot_dtype wt;
        if (ingot_dtype_from_name(name, &wt) != INGOT_OK) {
            fprintf(stderr, "bench_prefill: unknown dtype %s\n", name);
            continue;
        }
        double ours = 0, f32 = 0, deq = 0, flops = 0;
        bool vs_deq = wt != INGOT_DTYPE_F16 && wt != INGOT_DTYPE_I8;
        for (size_t li = 0; li < NLIN; li++) {
            size_t M = layer[li].M, K = layer[li].K;
            size_t ldw = wt == INGOT_DTYPE_F16 ? 2 * K
                                               : K / ingot_dtype_block_elems(wt) *
                                                     ingot_dtype_block_bytes(wt);
            for (size_t i = 0; i < M * K; i++) Wf[i] = uni() * 0.05f;
            ingot_status st = wt == INGOT_DTYPE_F16
                                  ? ingot_f32_encode(wt, Wf, M * K, W, M * ldw, NULL)
                                  : ingot_quantize(wt, Wf, M * K, W, M * ldw, NULL);
            if (st != INGOT_OK) {
                fprintf(stderr, "bench_prefill: cannot make %s weights\n", name);
                return 1;
            }
            for (size_t m = 0; m < M; m++) /* the f32 GEMM meets the same (decoded) weights */
                ingot_dequantize(wt, W + m * ldw, ldw, Wf + m * K, K, NULL);
            double t1[99], t2[99], t3[99];
            size_t xb = wt == INGOT_DTYPE_F16 ? 0 : ingot__qx_bytes(wt, K);
            for (int r = 0; r < reps; r++) {
                double t0 = cpu_now();
                if (wt == INGOT_DTYPE_F16) {
                    ingot__gemm_half(pool, wt, M, K, W, K, nx, X, K, false, Y, M);
                } else {
                    bool rf = ingot__qgemm_reads_f32(wt, K, nx);
                    for (size_t i = 0; !rf && i < nx; i++)
                        ingot__qx_quantize(wt, X + i * K, K, xq + i * xb);
                    if (ingot__qgemm(pool, wt, M, K, W, ldw, NULL, rf ? NULL : xq, X, K, nx,
                                     false, Y, M) != INGOT_OK)
                        return 1;
                }
                t1[r] = cpu_now() - t0;
                t0 = cpu_now();
                ingot__sgemm(pool, false, true, nx, M, K, 1.0f, X, K, Wf, K, 0.0f, Y, M);
                t2[r] = cpu_now() - t0;
                t0 = cpu_now();
                if (vs_deq && ingot__dequant_gemm(pool, wt, M, K, W, ldw, X, K, nx, false, Y,
                                                  M) != INGOT_OK)
                    return 1;
                t3[r] = cpu_now() - t0;
            }
            qsort(t1, (size_t)reps, sizeof t1[0], bench_cmp_double);
            qsort(t2, (size_t)reps, sizeof t2[0], bench_cmp_double);
            qsort(t3, (size_t)reps, sizeof t3[0], bench_cmp_double);
            ours += t1[reps / 2], f32 += t2[reps / 2], flops += 2.0 * (double)(M * K * nx);
            deq += vs_deq ? t3[reps / 2] : 0.0;
        }
        printf("{\"dtype\": \"%s\", \"isa\": \"%s\", \"threads\": %u, \"nx\": %zu, "
               "\"layer_ms_cpu\": %.3f, \"gflops_per_cpu_s\": %.1f, \"f32_gemm_layer_ms_cpu\": "
               "%.3f, \"f32_gemm_gflops_per_cpu_s\": %.1f, \"ratio\": %.3f",
               name, ingot__isa_name(ingot__get_isa()), threads, nx, ours * 1e3,
               flops / ours * 1e-9, f32 * 1e3, flops / f32 * 1e-9, f32 / ours);
        if (vs_deq)
            printf(", \"dequant_layer_ms_cpu\": %.3f, \"vs_dequant\": %.3f", deq * 1e3,
                   deq / ours);
        printf("}\n");
        fflush(stdout);
    }
    ingot__pool_destroy(pool);
    free(X), free(Y), free(Wf), free(W), free(xq);
    return 0;
}
