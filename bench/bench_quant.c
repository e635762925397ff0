/*
 * bench_quant.c - throughput of ingot_dequantize() per dtype (GB/s of F32 output) and of
 * ingot_f32_encode() to F16/BF16, each as a ratio to memcpy of the same output size measured in
 * the same run (the bandwidth ceiling of a streaming decode on this machine).
 *
 *   bench_quant [--elems N] [--reps R]     defaults: 4 Mi elements (16 MiB of F32), 15 reps
 *
 * Prints the median of R timed repetitions per row after one warm-up. Run it on a quiet machine
 * (wrap it in `flock /tmp/ingot-bench.lock`); see docs/PERFORMANCE.md for recorded figures.
 */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ingot/ingot.h"
#include "bench_util.h"

static uint32_t rng = 0x12345678u;
static uint8_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return (uint8_t)rng;
}

/* Random blocks; every f16 field that is a scale gets a small finite value (0x2000..0x2FFF). */
static void fill(ingot_dtype dt, uint8_t *p, size_t nbytes)
{
    for (size_t i = 0; i < nbytes; i++) p[i] = rnd();
    uint32_t bb = ingot_dtype_block_bytes(dt);
    int scales[2] = {-1, -1};
    switch (dt) {
    case INGOT_DTYPE_Q4_0: case INGOT_DTYPE_Q5_0: case INGOT_DTYPE_Q8_0: case INGOT_DTYPE_IQ4_NL:
    case INGOT_DTYPE_IQ4_XS: case INGOT_DTYPE_Q1_0: scales[0] = 0; break;
    case INGOT_DTYPE_Q4_1: case INGOT_DTYPE_Q5_1: case INGOT_DTYPE_Q4_K: case INGOT_DTYPE_Q5_K:
        scales[0] = 0, scales[1] = 2; break;
    case INGOT_DTYPE_Q2_K: scales[0] = 80, scales[1] = 82; break;
    case INGOT_DTYPE_Q3_K: scales[0] = 108; break;
    case INGOT_DTYPE_Q6_K: scales[0] = 208; break;
    case INGOT_DTYPE_TQ1_0: scales[0] = 52; break;
    case INGOT_DTYPE_TQ2_0: scales[0] = 64; break;
    case INGOT_DTYPE_Q8_K: /* f32 d */
        for (size_t b = 0; b + bb <= nbytes; b += bb) {
            float d = 1e-3f;
            memcpy(p + b, &d, 4);
        }
        return;
    case INGOT_DTYPE_F16: /* keep halves finite: clear the top exponent bit */
        for (size_t i = 1; i < nbytes; i += 2) p[i] &= 0xBF;
        return;
    default: return;
    }
    for (size_t b = 0; b + bb <= nbytes; b += bb)
        for (int k = 0; k < 2; k++)
            if (scales[k] >= 0) p[b + (size_t)scales[k] + 1] = (uint8_t)(0x20 | (p[b + (size_t)scales[k] + 1] & 0x0F));
}

static double median_time(int reps, void (*fn)(void *), void *ctx)
{
    double *t = malloc(sizeof *t * (size_t)reps);
    fn(ctx); /* warm-up: page faults, caches */
    for (int r = 0; r < reps; r++) {
        double t0 = bench_now_s();
        fn(ctx);
        t[r] = bench_now_s() - t0;
    }
    qsort(t, (size_t)reps, sizeof *t, bench_cmp_double);
    double m = t[reps / 2];
    free(t);
    return m;
}

typedef struct {
    ingot_dtype dt;
    const uint8_t *src;
    size_t src_bytes;
    void *dst;
    size_t n;
} job;

static void run_memcpy(void *c)
{
    job *j = c;
    memcpy(j->dst, j->src, j->n * sizeof(float));
}

static void run_dequant(void *c)
{
    job *j = c;
    if (ingot_dequantize(j->dt, j->src, j->src_bytes, j->dst, j->n, NULL) != INGOT_OK) abort();
}

static void run_encode(void *c)
{
    job *j = c;
    if (ingot_f32_encode(j->dt, (const float *)(const void *)j->src, j->n, j->dst, j->n * 2, NULL) != INGOT_OK)
        abort();
}

int main(int argc, char **argv)
{
    size_t n = (size_t)4 << 20;
    int reps = 15;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--elems") && i + 1 < argc) n = (size_t)strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: bench_quant [--elems N] [--reps R]\n");
            return 2;
        }
    }
    n = n / 256 * 256;
    if (!n || reps < 1) return 2;
    static const ingot_dtype types[] = {
        INGOT_DTYPE_Q8_0,  INGOT_DTYPE_Q4_0,   INGOT_DTYPE_Q4_1,   INGOT_DTYPE_Q5_0,
        INGOT_DTYPE_Q5_1,  INGOT_DTYPE_Q2_K,   INGOT_DTYPE_Q3_K,   INGOT_DTYPE_Q4_K,
        INGOT_DTYPE_Q5_K,  INGOT_DTYPE_Q6_K,   INGOT_DTYPE_Q8_K,   INGOT_DTYPE_IQ4_NL,
        INGOT_DTYPE_IQ4_XS, INGOT_DTYPE_TQ1_0, INGOT_DTYPE_TQ2_0,  INGOT_DTYPE_MXFP4,
        INGOT_DTYPE_F16,   INGOT_DTYPE_BF16,   INGOT_DTYPE_F8_E4M3};
    uint8_t *src = malloc(n * 8);
    float *dst = malloc(n * sizeof *dst);
    if (!src || !dst) return 1;
    memset(dst, 1, n * sizeof *dst);
    job j = {INGOT_DTYPE_F32, src, n * 4, dst, n};
    for (size_t i = 0; i < n * 4; i++) src[i] = rnd();
    double t_copy = median_time(reps, run_memcpy, &j);
    double gb = (double)(n * sizeof(float)) / 1e9;
    printf("bench_quant: %zu elements (%.1f MiB of F32 out), median of %d\n", n,
           (double)(n * 4) / (1 << 20), reps);
    printf("%-10s %10s %12s %10s\n", "dtype", "in MiB", "GB/s out", "x memcpy");
    printf("%-10s %10.1f %12.2f %10.2f\n", "memcpy", gb * 1e9 / (1 << 20), gb / t_copy, 1.0);
    for (size_t k = 0; k < sizeof types / sizeof *types; k++) {
        ingot_dtype dt = types[k];
        uint64_t nbytes;
        uint64_t shape[1] = {n};
        if (ingot_dtype_nbytes(dt, 1, shape, NULL, &nbytes) != INGOT_OK) return 1;
        fill(dt, src, (size_t)nbytes);
        job d = {dt, src, (size_t)nbytes, dst, n};
        double t = median_time(reps, run_dequant, &d);
        t_copy = median_time(reps, run_memcpy, &j); /* re-measured beside each row: drift */
        printf("%-10s %10.1f %12.2f %10.2f\n", ingot_dtype_name(dt), (double)nbytes / (1 << 20),
               gb / t, t_copy / t);
    }
    /* F32 -> F16 / BF16: GB/s of F32 read */
    for (size_t i = 0; i < n; i++) {
        float v = (float)((int)(rnd() - 128)) * 0.01f;
        memcpy(src + 4 * i, &v, 4);
    }
    for (int k = 0; k < 2; k++) {
        job d = {k ? INGOT_DTYPE_BF16 : INGOT_DTYPE_F16, src, n * 4, dst, n};
        double t = median_time(reps, run_encode, &d);
        t_copy = median_time(reps, run_memcpy, &j);
        printf("%-10s %10.1f %12.2f %10.2f   (F32 in, GB/s of input)\n",
               k ? "F32->BF16" : "F32->F16", gb * 1e9 / (1 << 20), gb / t, t_copy / t);
    }
    free(src);
    free(dst);
    return 0;
}
