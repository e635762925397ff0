/*
 * cpu_pool.c - the cpu backend's persistent thread pool: workers are created once per backend
 * instance and sleep on a condition variable between jobs. A job is a range [0, n) cut into
 * fixed chunks handed out through an atomic counter; the calling thread works too. Which thread
 * runs a chunk never changes what the chunk computes, so results do not depend on the thread
 * count.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "cpu.h"

struct cpu_pool {
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    pthread_t *threads;
    uint32_t nthreads; /* workers, without the caller */
    uint32_t nalloc;   /* pthread_t slots allocated */
    uint64_t gen;      /* job generation, bumped per job */
    uint32_t busy;     /* workers still in the current job */
    bool quit;
    /* the current job */
    ing_task_fn fn;
    void *arg;
    int64_t n, chunk;
    atomic_llong next;
    const ingot_allocator *alloc;
};

static void run_chunks(cpu_pool *p)
{
    for (;;) {
        int64_t b = (int64_t)atomic_fetch_add(&p->next, p->chunk);
        if (b >= p->n) return;
        int64_t e = b + p->chunk < p->n ? b + p->chunk : p->n;
        p->fn(p->arg, b, e);
    }
}

static void *worker(void *vp)
{
    cpu_pool *p = vp;
    uint64_t seen = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->quit && p->gen == seen) pthread_cond_wait(&p->wake, &p->mu);
        if (p->quit) break;
        seen = p->gen;
        pthread_mutex_unlock(&p->mu);
        run_chunks(p);
        pthread_mutex_lock(&p->mu);
        if (--p->busy == 0) pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

ingot_status ingot__cpu_pool_new(const ingot_allocator *al, uint32_t threads, cpu_pool **out)
{
    *out = NULL;
    cpu_pool *p = ingot__calloc(al, sizeof *p);
    if (!p) return INGOT_E_NOMEM;
    p->alloc = al;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    uint32_t nw = threads > 1 ? threads - 1 : 0;
    if (nw) {
        p->threads = ingot__calloc(al, sizeof(pthread_t) * nw);
        p->nalloc = nw;
        if (!p->threads) {
            ingot__cpu_pool_free(p);
            return INGOT_E_NOMEM;
        }
        for (uint32_t i = 0; i < nw; i++) {
            if (pthread_create(&p->threads[i], NULL, worker, p) != 0) break;
            p->nthreads++;
        }
    }
    *out = p;
    return INGOT_OK;
}

void ingot__cpu_pool_free(cpu_pool *p)
{
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->quit = true;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (uint32_t i = 0; i < p->nthreads; i++) pthread_join(p->threads[i], NULL);
    if (p->threads) ingot__free(p->alloc, p->threads, sizeof(pthread_t) * p->nalloc);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->done);
    ingot__free(p->alloc, p, sizeof *p);
}

uint32_t ingot__cpu_pool_threads(const cpu_pool *p) { return p ? p->nthreads + 1 : 1; }

void ingot__cpu_pool_run(cpu_pool *p, int64_t n, int64_t chunk, ing_task_fn fn, void *arg)
{
    if (n <= 0) return;
    if (chunk < 1) chunk = 1;
    if (!p || p->nthreads == 0 || n <= chunk) {
        for (int64_t b = 0; b < n; b += chunk) fn(arg, b, b + chunk < n ? b + chunk : n);
        return;
    }
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->arg = arg;
    p->n = n;
    p->chunk = chunk;
    atomic_store(&p->next, 0);
    p->busy = p->nthreads;
    p->gen++;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    run_chunks(p);
    pthread_mutex_lock(&p->mu);
    while (p->busy) pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
}
