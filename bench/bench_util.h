/*
 * bench_util.h - the clocks and the median the benchmark programs share (header-only: each
 * bench is one .c file linked against the library).
 */
#ifndef INGOT_BENCH_UTIL_H
#define INGOT_BENCH_UTIL_H

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Seconds on clock c (CLOCK_MONOTONIC: wall; CLOCK_PROCESS_CPUTIME_ID / CLOCK_THREAD_CPUTIME_ID:
 * CPU time, the fairer measure on a loaded machine). */
static inline double bench_clock_s(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline double bench_now_s(void) { return bench_clock_s(CLOCK_MONOTONIC); }
static inline double bench_process_cpu_s(void) { return bench_clock_s(CLOCK_PROCESS_CPUTIME_ID); }
static inline double bench_thread_cpu_s(void) { return bench_clock_s(CLOCK_THREAD_CPUTIME_ID); }

/* qsort order of doubles, ascending. */
static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y ? 1 : 0;
}

/* Median of v[0..n), n >= 1 (the mean of the middle two for even n); v is left as it was. */
static inline double bench_median(const double *v, int n)
{
    double one, *t = n > 1 ? malloc(sizeof *t * (size_t)n) : &one;
    if (!t) abort();
    memcpy(t, v, sizeof *t * (size_t)n);
    qsort(t, (size_t)n, sizeof *t, bench_cmp_double);
    double m = n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
    if (t != &one) free(t);
    return m;
}

#endif
