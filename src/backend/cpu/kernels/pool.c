/*
 * pool.c - persistent worker threads for the CPU kernels. A job is (fn, ctx, ntasks); tasks are
 * claimed from an atomic counter by the caller and by every worker that joins the job, so uneven
 * tasks balance themselves. No lock in the hot path: a job is announced by bumping an atomic
 * generation word; a worker joins it through one atomic word (the job's generation, a closed
 * flag and the count of workers in it), and the caller, once no task is left, closes the job and
 * waits only for the workers that joined. A worker that is not running when a job comes (a
 * loaded machine) simply misses it. Waiters spin a little, then sleep on the word (a futex on
 * Linux, else a mutex and condition variable used only for sleeping).
 */
#if defined(__linux__)
#define _DEFAULT_SOURCE /* syscall() */
#endif
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "alloc.h"
#include "cpu/kernels/kernels.h"

/* Spins (pause instructions) before a waiter sleeps: about 19 us on the Xeon of issue 16 (18 ns
 * per pause), a few us where pause is shorter; it covers the gap between the kernels of one
 * decode step without keeping a shared core from other work for long. */
#define SPINS 1024

typedef struct {
    uint8_t *raw; /* as allocated */
    size_t raw_len;
    void *aligned;
    size_t len; /* usable bytes from aligned */
} scratch;

typedef struct {
    struct ingot__pool *p;
    unsigned id;
} worker_arg;

/* A word threads wait on until it differs from a value they saw. */
typedef struct {
    _Atomic uint32_t v;
    _Atomic uint32_t sleepers; /* threads in (or about to enter) the sleeping wait */
#if !defined(__linux__)
    pthread_mutex_t mu;
    pthread_cond_t cv;
#endif
} wait_word;

struct ingot__pool {
    ingot_allocator alloc;
    unsigned threads; /* workers in use, the caller included */
    unsigned n_alloc; /* length of the arrays below */
    pthread_t *tids;  /* [1, threads) are running */
    worker_arg *args;
    scratch *scr; /* one per worker */

    pthread_mutex_t job_lock; /* serialises callers (one job at a time) */
    /* the job: written by the caller before gen is bumped, read-only while it runs */
    ingot__task_fn fn;
    void *ctx;
    size_t ntasks;
    _Atomic bool quit;

    _Alignas(64) wait_word gen;  /* bumped per job (and to quit) */
    _Alignas(64) wait_word done; /* bumped by the last worker to leave a closed job */
    /* (generation << 32) | CLOSED | workers in the job: joins and leaves are one atomic op */
    _Alignas(64) _Atomic uint64_t join;
    _Alignas(64) atomic_size_t next; /* next task to claim */
};

#define CLOSED ((uint64_t)1 << 31)
#define IN_JOB (CLOSED - 1)

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#endif
}

static void word_init(wait_word *w)
{
    atomic_init(&w->v, 0);
    atomic_init(&w->sleepers, 0);
#if !defined(__linux__)
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
#endif
}

static void word_fini(wait_word *w)
{
#if !defined(__linux__)
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
#else
    (void)w;
#endif
}

/* Returns once w differs from seen (spinning first, then sleeping). The sleeper count and the
 * value are both sequentially consistent, so a publisher that stores the value and then reads
 * no sleeper cannot miss one that is about to sleep: that one reads the new value first. */
static uint32_t word_wait(wait_word *w, uint32_t seen)
{
    uint32_t v;
    for (int i = 0; i < SPINS; i++) {
        if ((v = atomic_load_explicit(&w->v, memory_order_acquire)) != seen) return v;
        cpu_relax();
    }
    atomic_fetch_add(&w->sleepers, 1);
#if defined(__linux__)
    while ((v = atomic_load(&w->v)) == seen) /* the kernel rechecks the value: no lost wake */
        syscall(SYS_futex, &w->v, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
#else
    pthread_mutex_lock(&w->mu);
    while ((v = atomic_load(&w->v)) == seen) pthread_cond_wait(&w->cv, &w->mu);
    pthread_mutex_unlock(&w->mu);
#endif
    atomic_fetch_sub(&w->sleepers, 1);
    return v;
}

/* Bumps w and wakes its sleepers, if any (no system call when every waiter is spinning). */
static void word_bump(wait_word *w)
{
    atomic_fetch_add(&w->v, 1);
    if (atomic_load(&w->sleepers) == 0) return;
#if defined(__linux__)
    syscall(SYS_futex, &w->v, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
#else
    pthread_mutex_lock(&w->mu);
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
#endif
}

/* vzeroupper after a job: some kernels leave the upper halves of the vector registers dirty
 * (GCC does not always insert it in target("avx...") functions that call plain code), after
 * which every SSE instruction of the caller (ref ops, libm) runs many times slower on Intel. */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("avx"))) static void zero_upper(void) { _mm256_zeroupper(); }
static void clean_upper(void)
{
    if (ingot__isa_supported(INGOT__ISA_AVX2)) zero_upper();
}
#else
static void clean_upper(void) {}
#endif

static void work(ingot__pool *p, unsigned id)
{
    for (;;) {
        size_t t = atomic_fetch_add_explicit(&p->next, 1, memory_order_relaxed);
        if (t >= p->ntasks) break;
        p->fn(p->ctx, t, id);
    }
}

/* Joins the job of generation g unless it is closed (or already replaced). */
static bool join_job(ingot__pool *p, uint32_t g)
{
    uint64_t s = atomic_load(&p->join);
    for (;;) {
        if ((uint32_t)(s >> 32) != g || (s & CLOSED)) return false;
        if (atomic_compare_exchange_weak(&p->join, &s, s + 1)) return true; /* acquire: the job */
    }
}

static void *worker_main(void *arg)
{
    const worker_arg *wa = arg;
    ingot__pool *p = wa->p;
    unsigned id = wa->id;
    uint32_t seen = 0;
    for (;;) {
        seen = word_wait(&p->gen, seen);
        if (atomic_load_explicit(&p->quit, memory_order_relaxed)) break;
        if (!join_job(p, seen)) continue;
        work(p, id);
        clean_upper(); /* the worker spins in plain code next */
        /* release: this worker's writes are visible to the caller, which acquires below; the
         * last one out of a closed job wakes the caller */
        uint64_t s = atomic_fetch_sub(&p->join, 1);
        if ((s & CLOSED) && (s & IN_JOB) == 1) word_bump(&p->done);
    }
    return NULL;
}

static void free_arrays(ingot__pool *p)
{
    if (p->scr)
        for (unsigned i = 0; i < p->n_alloc; i++)
            ingot__free(&p->alloc, p->scr[i].raw, p->scr[i].raw_len);
    ingot__free(&p->alloc, p->scr, sizeof *p->scr * p->n_alloc);
    ingot__free(&p->alloc, p->args, sizeof *p->args * p->n_alloc);
    ingot__free(&p->alloc, p->tids, sizeof *p->tids * p->n_alloc);
}

ingot__pool *ingot__pool_create(const ingot_allocator *a, unsigned nthreads)
{
    if (nthreads == 0) nthreads = 1;
    if (nthreads > 256) nthreads = 256;
    ingot_allocator al = {0};
    if (a) al = *a;
    ingot__pool *p = ingot__calloc(&al, sizeof *p);
    if (!p) return NULL;
    p->alloc = al;
    p->n_alloc = nthreads;
    p->scr = ingot__calloc(&al, sizeof *p->scr * nthreads);
    p->tids = ingot__calloc(&al, sizeof *p->tids * nthreads);
    p->args = ingot__calloc(&al, sizeof *p->args * nthreads);
    if (!p->scr || !p->tids || !p->args) {
        free_arrays(p);
        ingot__free(&al, p, sizeof *p);
        return NULL;
    }
    pthread_mutex_init(&p->job_lock, NULL);
    word_init(&p->gen);
    word_init(&p->done);
    atomic_init(&p->quit, false);
    atomic_init(&p->join, 0);
    atomic_init(&p->next, 0);
    p->threads = 1;
    for (unsigned i = 1; i < nthreads; i++) {
        p->args[i] = (worker_arg){p, i};
        if (pthread_create(&p->tids[i], NULL, worker_main, &p->args[i]) != 0) break;
        p->threads++;
    }
    if (p->threads != nthreads) { /* could not start them all: fail cleanly */
        ingot__pool_destroy(p);
        return NULL;
    }
    return p;
}

void ingot__pool_destroy(ingot__pool *p)
{
    if (!p) return;
    atomic_store(&p->quit, true);
    word_bump(&p->gen);
    for (unsigned i = 1; i < p->threads; i++) pthread_join(p->tids[i], NULL);
    word_fini(&p->gen);
    word_fini(&p->done);
    pthread_mutex_destroy(&p->job_lock);
    free_arrays(p);
    ingot_allocator al = p->alloc;
    ingot__free(&al, p, sizeof *p);
}

unsigned ingot__pool_threads(const ingot__pool *p) { return p ? p->threads : 1; }


void ingot__pool_run(ingot__pool *p, ingot__task_fn fn, void *ctx, size_t ntasks)
{
    if (ntasks == 0) return;
    if (!p || p->threads == 1 || ntasks == 1) {
        for (size_t t = 0; t < ntasks; t++) fn(ctx, t, 0);
        clean_upper();
        return;
    }
    pthread_mutex_lock(&p->job_lock);
    p->fn = fn;
    p->ctx = ctx;
    p->ntasks = ntasks;
    atomic_store_explicit(&p->next, 0, memory_order_relaxed);
    uint32_t g = atomic_load_explicit(&p->gen.v, memory_order_relaxed) + 1;
    atomic_store(&p->join, (uint64_t)g << 32); /* open, nobody in it yet */
    word_bump(&p->gen);                        /* seq_cst: publishes the fields above */
    work(p, 0);
    /* No task left: close the job to late joiners, then wait for those inside. */
    uint32_t done = atomic_load(&p->done.v);
    uint64_t s = atomic_fetch_or(&p->join, CLOSED);
    while ((s & IN_JOB) != 0) {
        done = word_wait(&p->done, done);
        s = atomic_load(&p->join);
    }
    pthread_mutex_unlock(&p->job_lock);
    clean_upper();
}

static void *grow(const ingot_allocator *a, scratch *s, size_t n)
{
    if (s->aligned && s->len >= n) return s->aligned;
    if (s->raw) ingot__free(a, s->raw, s->raw_len);
    s->raw = NULL;
    s->aligned = NULL;
    s->len = 0;
    if (n > SIZE_MAX - 64) return NULL;
    s->raw_len = n + 64;
    s->raw = ingot__alloc(a, s->raw_len);
    if (!s->raw) return NULL;
    uintptr_t u = ((uintptr_t)s->raw + 63) & ~(uintptr_t)63;
    s->aligned = (void *)u;
    s->len = n;
    return s->aligned;
}

void *ingot__pool_scratch(ingot__pool *p, unsigned worker, size_t n)
{
    if (!p || worker >= p->threads) return NULL;
    return grow(&p->alloc, &p->scr[worker], n);
}
