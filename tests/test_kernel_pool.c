/*
 * test_kernel_pool.c - the kernels' thread pool (src/backend/cpu/kernels/pool.c): every task of
 * every job runs exactly once on a worker id in range, through many short jobs back to back and
 * from two calling threads sharing a pool; and every kernel gives the same bytes at 1, 2, 3 and
 * 7 threads on every ISA level this CPU has (more threads than cores included).
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "cpu/kernels/kernels.h"
#include "harness.h"

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static uint64_t rng_next(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return rng;
}
static float frand(void) /* uniform in [-1, 1) */
{
    return (float)((rng_next() >> 40) * (1.0 / 8388608.0)) - 1.0f;
}

static uint16_t f16_bits(float f) /* normal range only, truncating: test scales */
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000, e = (x >> 23) & 0xff, m = x & 0x7fffff;
    if (e < 113) return (uint16_t)sign;
    return (uint16_t)(sign | (e - 112) << 10 | m >> 13);
}

/* ---- the pool itself ---- */

#define MAXT 4096
typedef struct {
    _Atomic int hits[MAXT];
    _Atomic int bad_worker;
    _Atomic long finished;  /* tasks completed */
    _Atomic long by_others; /* tasks run by workers other than the caller */
    unsigned threads;
    int spin; /* busy iterations per task */
} count_ctx;

static volatile int spin_sink;

static void count_task(void *ctx, size_t t, unsigned worker)
{
    count_ctx *c = ctx;
    c->hits[t]++;
    for (int i = 0; i < c->spin; i++) spin_sink = i;
    if (worker >= c->threads) c->bad_worker++;
    if (worker != 0) c->by_others++;
    c->finished++;
}

TEST(pool_many_short_jobs)
{
    /* 5000 jobs of 1..64 tasks back to back (most shorter than a wake-up), then a few long
     * ones: every job must return with all its tasks done, each exactly once, and the workers
     * must take part (a lost wake-up leaves them asleep). */
    for (unsigned th = 2; th <= 7; th += 5) {
        ingot__pool *p = ingot__pool_create(NULL, th);
        ASSERT_TRUE(p != NULL);
        ASSERT_EQ(ingot__pool_threads(p), th);
        static count_ctx c;
        memset(&c, 0, sizeof c);
        c.threads = th;
        long want[64] = {0}, total = 0, early = 0;
        for (int j = 0; j < 5000; j++) {
            size_t n = 1 + (size_t)(rng_next() % 64);
            ingot__pool_run(p, count_task, &c, n);
            for (size_t t = 0; t < n; t++) want[t]++;
            total += (long)n;
            early += c.finished != total; /* returned before every task was done */
        }
        c.spin = 2000; /* long jobs after a pause: the workers, asleep by then, wake and join */
        nanosleep(&(struct timespec){0, 50 * 1000 * 1000}, NULL);
        for (int j = 0; j < 10; j++) {
            ingot__pool_run(p, count_task, &c, MAXT);
            total += MAXT;
            early += c.finished != total;
        }
        for (size_t t = 0; t < MAXT; t++) {
            long w = (t < 64 ? want[t] : 0) + 10;
            CHECK(c.hits[t] == w, "%u threads: task %zu ran %d times, want %ld", th, t,
                  (int)c.hits[t], w);
        }
        CHECK(early == 0, "%u threads: %ld jobs returned before their tasks were done", th, early);
        CHECK(c.bad_worker == 0, "%u threads: worker id out of range", th);
        CHECK(c.by_others > 0, "%u threads: the workers never ran a task", th);
        ingot__pool_destroy(p);
    }
}

typedef struct {
    ingot__pool *p;
    count_ctx *c;
} caller_arg;

static void *caller_main(void *arg)
{
    caller_arg *a = arg;
    for (int j = 0; j < 3000; j++) ingot__pool_run(a->p, count_task, a->c, 100);
    return NULL;
}

TEST(pool_shared_by_two_callers)
{
    /* Two threads run jobs on one pool at once: the pool serialises them, each job complete. */
    ingot__pool *p = ingot__pool_create(NULL, 3);
    ASSERT_TRUE(p != NULL);
    static count_ctx c1, c2;
    memset(&c1, 0, sizeof c1);
    memset(&c2, 0, sizeof c2);
    c1.threads = c2.threads = 3;
    caller_arg a1 = {p, &c1}, a2 = {p, &c2};
    pthread_t t1, t2;
    ASSERT_EQ(pthread_create(&t1, NULL, caller_main, &a1), 0);
    ASSERT_EQ(pthread_create(&t2, NULL, caller_main, &a2), 0);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    for (size_t t = 0; t < 100; t++)
        CHECK(c1.hits[t] == 3000 && c2.hits[t] == 3000, "task %zu ran %d / %d times", t,
              (int)c1.hits[t], (int)c2.hits[t]);
    CHECK(c1.bad_worker == 0 && c2.bad_worker == 0, "worker id out of range");
    ingot__pool_destroy(p);
}

/* ---- every kernel: the same bytes whatever the thread count ---- */

static const unsigned thread_counts[] = {1, 2, 3, 7};
#define NTC (sizeof thread_counts / sizeof thread_counts[0])

static ingot__pool *pools[NTC];

static bool level_on(int isa)
{
    if (!ingot__isa_supported((ingot__isa)isa)) return false;
    return ingot__set_isa((ingot__isa)isa) == (ingot__isa)isa;
}

/* Runs call(pool, out) for each thread count; every output must equal the 1-thread one. */
#define SAME_BYTES(out, n, what, ...)                                                             \
    do {                                                                                           \
        float *ref_ = malloc((n) * sizeof(float));                                                 \
        for (size_t ti_ = 0; ti_ < NTC; ti_++) {                                                   \
            ingot__pool *pool = pools[ti_];                                                        \
            for (size_t q_ = 0; q_ < (n); q_++) (out)[q_] = NAN;                                   \
            __VA_ARGS__;                                                                           \
            if (ti_ == 0) memcpy(ref_, out, (n) * sizeof(float));                                  \
            else                                                                                   \
                CHECK(memcmp(ref_, out, (n) * sizeof(float)) == 0,                                 \
                      "%s at %s: %u threads differ from 1", what,                                  \
                      ingot__isa_name(ingot__get_isa()), thread_counts[ti_]);                      \
        }                                                                                          \
        free(ref_);                                                                                \
    } while (0)

TEST(f32_kernels_same_bytes_any_threads)
{
    size_t M = 333, N = 517, K = 300;
    float *A = malloc(M * K * 4), *B = malloc(K * N * 4), *C = malloc(M * N * 4);
    float *x = malloc(1024 * 4), *y = malloc(1024 * 4);
    for (size_t i = 0; i < M * K; i++) A[i] = frand();
    for (size_t i = 0; i < K * N; i++) B[i] = frand();
    for (size_t i = 0; i < 1024; i++) x[i] = frand();
    /* a GEMV matrix above the kernels' one-task size (256 KiB) */
    size_t gm = 700, gn = 1000;
    float *G = malloc(gm * gn * 4);
    for (size_t i = 0; i < gm * gn; i++) G[i] = frand();
    int runs = 0;
    for (int isa = 0; isa < INGOT__ISA_COUNT; isa++) {
        if (!level_on(isa)) continue;
        runs++;
        size_t ms[] = {1, 5, 16, 17, M};
        for (size_t mi = 0; mi < 5; mi++)
            for (int tb = 0; tb < 2; tb++) {
                size_t m = ms[mi];
                SAME_BYTES(C, m * N, tb ? "sgemm B^T" : "sgemm",
                           ASSERT_OK(ingot__sgemm(pool, false, tb, m, N, K, 1.0f, A, K, B,
                                                  tb ? K : N, 0.0f, C, N)));
            }
        SAME_BYTES(y, gm, "sgemv", ingot__sgemv(pool, false, gm, gn, 1.0f, G, gn, x, 0.0f, y));
        SAME_BYTES(y, gn, "sgemv^T", ingot__sgemv(pool, true, gm, gn, 1.0f, G, gn, x, 0.0f, y));
    }
    ingot__set_isa(ingot__cpu_isa());
    ASSERT_TRUE(runs >= 1);
    free(A), free(B), free(C), free(x), free(y), free(G);
}

TEST(half_and_quant_kernels_same_bytes_any_threads)
{
    static const ingot_dtype qt[] = {INGOT_DTYPE_I8,   INGOT_DTYPE_Q8_0, INGOT_DTYPE_Q4_0,
                                     INGOT_DTYPE_Q4_K, INGOT_DTYPE_Q5_K, INGOT_DTYPE_Q6_K};
    size_t M = 300, K = 2048, NX = 40;
    float *X = malloc(NX * K * 4), *Y = malloc(NX * M * 4), ws[300];
    for (size_t i = 0; i < NX * K; i++) X[i] = frand();
    for (size_t r = 0; r < M; r++) ws[r] = 0.01f * (1.5f + frand());
    uint16_t *H = malloc(M * K * 2);
    size_t nxs[] = {1, 5, NX}; /* decode, a few rows, prefill (panels / tiles) */
    for (int isa = 0; isa < INGOT__ISA_COUNT; isa++) {
        if (!level_on(isa)) continue;
        for (int bf = 0; bf < 2; bf++) {
            for (size_t i = 0; i < M * K; i++) {
                float f = frand();
                uint32_t u;
                memcpy(&u, &f, 4);
                H[i] = bf ? (uint16_t)(u >> 16) : f16_bits(f); /* bf16: the top half */
            }
            ingot_dtype wt = bf ? INGOT_DTYPE_BF16 : INGOT_DTYPE_F16;
            for (size_t k = 0; k < 3; k++)
                SAME_BYTES(Y, nxs[k] * M, ingot_dtype_name(wt),
                           ingot__gemm_half(pool, wt, M, K, H, K, nxs[k], X, K, false, Y, M));
        }
        for (size_t ti = 0; ti < sizeof qt / sizeof qt[0]; ti++) {
            ingot_dtype wt = qt[ti];
            size_t bb = ingot_dtype_block_bytes(wt), be = ingot_dtype_block_elems(wt);
            size_t ldw = wt == INGOT_DTYPE_I8 ? K : K / be * bb;
            uint8_t *w = malloc(M * ldw);
            for (size_t i = 0; i < M * ldw; i++) w[i] = (uint8_t)(rng_next() >> 24);
            if (wt != INGOT_DTYPE_I8)
                for (size_t b = 0; b < M * ldw / bb; b++) { /* finite scales */
                    uint16_t d = f16_bits(0.01f * frand()), dm = f16_bits(0.002f * frand());
                    memcpy(w + b * bb + (wt == INGOT_DTYPE_Q6_K ? 208 : 0), &d, 2);
                    if (wt == INGOT_DTYPE_Q4_K || wt == INGOT_DTYPE_Q5_K)
                        memcpy(w + b * bb + 2, &dm, 2);
                }
            size_t xb = ingot__qx_bytes(wt, K);
            uint8_t *xq = aligned_alloc(64, NX * xb);
            for (size_t i = 0; i < NX; i++) ingot__qx_quantize(wt, X + i * K, K, xq + i * xb);
            for (size_t k = 0; k < 3; k++)
                SAME_BYTES(Y, nxs[k] * M, ingot_dtype_name(wt),
                           ASSERT_OK(ingot__qgemm(pool, wt, M, K, w, ldw, ws, xq, X, K, nxs[k],
                                                  false, Y, M)));
            free(w), free(xq);
        }
    }
    ingot__set_isa(ingot__cpu_isa());
    free(X), free(Y), free(H);
}

static void make_pools(void)
{
    for (size_t i = 0; i < NTC; i++) pools[i] = ingot__pool_create(NULL, thread_counts[i]);
}

TEST(pools_created)
{
    make_pools();
    for (size_t i = 0; i < NTC; i++) {
        ASSERT_TRUE(pools[i] != NULL);
        ASSERT_EQ(ingot__pool_threads(pools[i]), thread_counts[i]);
    }
}

TEST(pools_destroyed)
{
    for (size_t i = 0; i < NTC; i++) ingot__pool_destroy(pools[i]);
    ASSERT_EQ(ingot__pool_threads(NULL), 1);
}

RUN_TESTS(T(pool_many_short_jobs), T(pool_shared_by_two_callers), T(pools_created),
          T(f32_kernels_same_bytes_any_threads), T(half_and_quant_kernels_same_bytes_any_threads),
          T(pools_destroyed))
