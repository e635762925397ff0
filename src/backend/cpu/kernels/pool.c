/*
 * pool.c - persistent worker threads for the CPU kernels. A job is (fn, ctx, ntasks); tasks are
 * claimed from an atomic counter by every worker and by the caller, so uneven tasks balance
 * themselves. Workers sleep on a condition variable between jobs.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "alloc.h"
#include "cpu/kernels/kernels.h"

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

struct ingot__pool {
    ingot_allocator alloc;
    unsigned threads;   /* workers in use, the caller included */
    unsigned n_alloc;   /* length of the arrays below */
    pthread_t *tids;    /* [1, threads) are running */
    worker_arg *args;
    scratch *scr;       /* one per worker */

    pthread_mutex_t job_lock; /* serialises callers */
    pthread_mutex_t mu;
    pthread_cond_t start, done;
    uint64_t generation; /* bumped per job */
    bool quit;
    unsigned running; /* workers still in the current job */

    ingot__task_fn fn;
    void *ctx;
    size_t ntasks;
    atomic_size_t next;
};

static void work(ingot__pool *p, unsigned id)
{
    for (;;) {
        size_t t = atomic_fetch_add_explicit(&p->next, 1, memory_order_relaxed);
        if (t >= p->ntasks) break;
        p->fn(p->ctx, t, id);
    }
}

static void *worker_main(void *arg)
{
    const worker_arg *wa = arg;
    ingot__pool *p = wa->p;
    unsigned id = wa->id;
    uint64_t seen = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->quit && p->generation == seen) pthread_cond_wait(&p->start, &p->mu);
        if (p->quit) break;
        seen = p->generation;
        pthread_mutex_unlock(&p->mu);
        work(p, id);
        pthread_mutex_lock(&p->mu);
        if (--p->running == 0) pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

static void free_arrays(ingot__pool *p)
{
    if (p->scr)
        for (unsigned i = 0; i < p->n_alloc; i++) ingot__free(&p->alloc, p->scr[i].raw, p->scr[i].raw_len);
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
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->start, NULL);
    pthread_cond_init(&p->done, NULL);
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
    pthread_mutex_lock(&p->mu);
    p->quit = true;
    pthread_cond_broadcast(&p->start);
    pthread_mutex_unlock(&p->mu);
    for (unsigned i = 1; i < p->threads; i++) pthread_join(p->tids[i], NULL);
    pthread_cond_destroy(&p->start);
    pthread_cond_destroy(&p->done);
    pthread_mutex_destroy(&p->mu);
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
        return;
    }
    pthread_mutex_lock(&p->job_lock);
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->ctx = ctx;
    p->ntasks = ntasks;
    atomic_store_explicit(&p->next, 0, memory_order_relaxed);
    p->running = p->threads - 1;
    p->generation++;
    pthread_cond_broadcast(&p->start);
    pthread_mutex_unlock(&p->mu);
    work(p, 0);
    pthread_mutex_lock(&p->mu);
    while (p->running) pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
    pthread_mutex_unlock(&p->job_lock);
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
