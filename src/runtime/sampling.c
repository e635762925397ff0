/*
 * sampling.c - the token sampler of include/ingot/lm.h: penalties, top-k, top-p, min-p,
 * temperature and a draw from a private splitmix64 stream, on the host in double precision.
 * Single-threaded by design: the same seed gives the same tokens whatever the backend's thread
 * count. All scratch is allocated by ingot_sampler_new; sampling allocates nothing.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "error.h"
#include "lm_internal.h"

#define DEFAULT_PENALTY_WINDOW 64u

struct ingot_sampler {
    ingot_sampler_params p;
    ingot_allocator al;
    uint32_t vocab;
    uint64_t rng;
    float *logit;    /* penalised logits */
    uint32_t *idx;   /* candidates, ranked */
    double *prob;    /* candidate weights in rank order */
    uint32_t *count; /* occurrences in the penalty window (zero between calls) */
};

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static bool bad(double v) { return v != v || v < 0 || isinf(v); }

INGOT_API ingot_status ingot_sampler_new(const ingot_sampler_params *p, uint32_t vocab,
                                         const ingot_allocator *a, ingot_sampler **out,
                                         ingot_error *err)
{
    if (!p || !out)
        return ingot__err(err, INGOT_E_MISUSE, INGOT_NO_OFFSET, NULL, 0,
                          "sampler_new: NULL argument");
    *out = NULL;
    if (vocab == 0 || vocab > LM_MAX_VOCAB)
        return ingot__err(err, INGOT_E_RANGE, INGOT_NO_OFFSET, "vocab", 5,
                          "sampler: vocabulary of %u tokens", vocab);
    const char *name = NULL;
    if (p->temperature != p->temperature) name = "temperature";
    else if (bad(p->top_p)) name = "top_p";
    else if (bad(p->min_p) || p->min_p > 1) name = "min_p";
    else if (bad(p->repeat_penalty)) name = "repeat_penalty";
    else if (p->frequency_penalty != p->frequency_penalty || isinf(p->frequency_penalty))
        name = "frequency_penalty";
    else if (p->presence_penalty != p->presence_penalty || isinf(p->presence_penalty))
        name = "presence_penalty";
    if (name)
        return ingot__err(err, INGOT_E_RANGE, INGOT_NO_OFFSET, name, strlen(name),
                          "sampler: parameter '%s' is out of range", name);
    ingot_allocator al = {0};
    if (a) al = *a;
    ingot_sampler *s = ingot__calloc(&al, sizeof *s);
    if (!s) return ingot__err(err, INGOT_E_NOMEM, INGOT_NO_OFFSET, NULL, 0, "sampler");
    s->p = *p;
    s->al = al;
    s->vocab = vocab;
    s->rng = p->seed;
    s->logit = ingot__alloc(&al, (size_t)vocab * sizeof *s->logit);
    s->idx = ingot__alloc(&al, (size_t)vocab * sizeof *s->idx);
    s->prob = ingot__alloc(&al, (size_t)vocab * sizeof *s->prob);
    s->count = ingot__calloc(&al, (size_t)vocab * sizeof *s->count);
    if (!s->logit || !s->idx || !s->prob || !s->count) {
        ingot_sampler_free(s);
        return ingot__err(err, INGOT_E_NOMEM, INGOT_NO_OFFSET, NULL, 0, "sampler: scratch");
    }
    *out = s;
    return INGOT_OK;
}

INGOT_API void ingot_sampler_free(ingot_sampler *s)
{
    if (!s) return;
    ingot_allocator al = s->al;
    size_t v = s->vocab;
    if (s->logit) ingot__free(&al, s->logit, v * sizeof *s->logit);
    if (s->idx) ingot__free(&al, s->idx, v * sizeof *s->idx);
    if (s->prob) ingot__free(&al, s->prob, v * sizeof *s->prob);
    if (s->count) ingot__free(&al, s->count, v * sizeof *s->count);
    ingot__free(&al, s, sizeof *s);
}

INGOT_API void ingot_sampler_reseed(ingot_sampler *s, uint64_t seed)
{
    if (s) s->rng = seed;
}

/* Whether any penalty changes logits. */
static bool penalties_on(const ingot_sampler_params *p)
{
    return (p->repeat_penalty > 0 && p->repeat_penalty != 1.0) || p->frequency_penalty != 0 ||
           p->presence_penalty != 0;
}

static void penalise(ingot_sampler *s, const int32_t *hist, size_t nh)
{
    const ingot_sampler_params *p = &s->p;
    bool rep = p->repeat_penalty > 0 && p->repeat_penalty != 1.0;
    if (!penalties_on(p)) return;
    size_t w = p->penalty_last_n ? p->penalty_last_n : DEFAULT_PENALTY_WINDOW;
    const int32_t *h = nh > w ? hist + nh - w : hist;
    size_t n = nh > w ? w : nh;
    for (size_t i = 0; i < n; i++)
        if (h[i] >= 0 && (uint32_t)h[i] < s->vocab) s->count[h[i]]++;
    for (size_t i = 0; i < n; i++) {
        if (h[i] < 0 || (uint32_t)h[i] >= s->vocab) continue;
        uint32_t t = (uint32_t)h[i], c = s->count[t];
        if (!c) continue; /* already applied */
        float l = s->logit[t];
        if (rep) l = l > 0 ? (float)(l / p->repeat_penalty) : (float)(l * p->repeat_penalty);
        l -= (float)(c * p->frequency_penalty + p->presence_penalty);
        s->logit[t] = l;
        s->count[t] = 0;
    }
}

/* Rank order: larger logit first, lower id first among equals. */
static int rank_cmp(const void *a, const void *b, const float *l)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    if (l[x] != l[y]) return l[x] > l[y] ? -1 : 1;
    return x < y ? -1 : x > y;
}

/* Heap sift-down for a min-heap by rank (the worst-ranked candidate on top). */
static void sift(uint32_t *h, size_t n, size_t i, const float *l)
{
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) return;
        if (c + 1 < n && rank_cmp(&h[c + 1], &h[c], l) > 0) c++;
        if (rank_cmp(&h[c], &h[i], l) <= 0) return;
        uint32_t t = h[c];
        h[c] = h[i];
        h[i] = t;
        i = c;
    }
}

/* Sorts idx[0..n) by rank (heap sort: no recursion, no allocation, deterministic). */
static void rank_sort(uint32_t *idx, size_t n, const float *l)
{
    for (size_t i = n / 2; i-- > 0;) sift(idx, n, i, l);
    for (size_t e = n; e > 1; e--) {
        uint32_t t = idx[0];
        idx[0] = idx[e - 1];
        idx[e - 1] = t;
        sift(idx, e - 1, 0, l);
    }
}

/* Greedy with no penalty in effect: the first largest logit that is neither NaN nor -inf (the
 * general path's choice), in two passes the compiler vectorises, without the copy and the
 * candidate list (118 us for 32,000 logits before). False when there is none. */
static bool greedy_direct(const float *l, uint32_t V, int32_t *token)
{
    float m[8];
    for (int k = 0; k < 8; k++) m[k] = -INFINITY;
    uint32_t i = 0;
    for (; i + 8 <= V; i += 8)
        for (int k = 0; k < 8; k++) m[k] = l[i + k] > m[k] ? l[i + k] : m[k]; /* NaN: no */
    float mx = m[0];
    for (int k = 1; k < 8; k++) mx = m[k] > mx ? m[k] : mx;
    for (; i < V; i++) mx = l[i] > mx ? l[i] : mx;
    if (mx == -INFINITY) return false;
    for (i = 0; l[i] != mx; i++) {
    }
    *token = (int32_t)i;
    return true;
}

INGOT_API ingot_status ingot_sampler_sample(ingot_sampler *s, const float *logits,
                                            const int32_t *history, size_t n_history,
                                            int32_t *token, ingot_error *err)
{
    if (!s || !logits || !token || (n_history && !history))
        return ingot__err(err, INGOT_E_MISUSE, INGOT_NO_OFFSET, NULL, 0,
                          "sampler_sample: NULL argument");
    const ingot_sampler_params *p = &s->p;
    uint32_t V = s->vocab;
    if (p->temperature <= 0 && !penalties_on(p)) {
        if (greedy_direct(logits, V, token)) return INGOT_OK;
        return ingot__err(err, INGOT_E_RANGE, INGOT_NO_OFFSET, "logits", 6,
                          "sampler: every logit is NaN or -inf");
    }
    memcpy(s->logit, logits, (size_t)V * sizeof *s->logit);
    penalise(s, history, n_history);
    const float *l = s->logit;
    /* candidates: finite logits (NaN and -inf can never be drawn) */
    size_t n = 0;
    uint32_t best = V;
    for (uint32_t i = 0; i < V; i++) {
        if (l[i] != l[i] || l[i] == -INFINITY) continue;
        if (best == V || l[i] > l[best]) best = i;
        s->idx[n++] = i;
    }
    if (n == 0)
        return ingot__err(err, INGOT_E_RANGE, INGOT_NO_OFFSET, "logits", 6,
                          "sampler: every logit is NaN or -inf");
    if (p->temperature <= 0 || l[best] == INFINITY) {
        *token = (int32_t)best;
        return INGOT_OK;
    }
    /* top-k: keep the k best ranked (a heap of the k best, then sorted) */
    size_t k = p->top_k && p->top_k < n ? p->top_k : n;
    if (k < n) {
        uint32_t *h = s->idx;
        /* min-heap by rank on the first k; push the rest through it */
        for (size_t i = k / 2; i-- > 0;) sift(h, k, i, l);
        for (size_t i = k; i < n; i++)
            if (rank_cmp(&h[i], &h[0], l) < 0) {
                h[0] = h[i];
                sift(h, k, 0, l);
            }
        n = k;
    }
    rank_sort(s->idx, n, l);
    /* the temperature-1 distribution over the candidates */
    double mx = l[s->idx[0]], sum = 0;
    for (size_t i = 0; i < n; i++) sum += s->prob[i] = exp((double)l[s->idx[i]] - mx);
    if (p->top_p > 0 && p->top_p < 1) {
        double before = 0;
        size_t keep = 0;
        while (keep < n && (keep == 0 || before < p->top_p * sum)) before += s->prob[keep++];
        n = keep;
    }
    if (p->min_p > 0) {
        double floor_p = p->min_p * s->prob[0];
        size_t keep = 1;
        while (keep < n && s->prob[keep] >= floor_p) keep++;
        n = keep;
    }
    /* temperature, then one draw in rank order */
    sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += s->prob[i] = exp(((double)l[s->idx[i]] - mx) / p->temperature);
    double u = (double)(splitmix64(&s->rng) >> 11) * 0x1.0p-53 * sum, run = 0;
    for (size_t i = 0; i < n; i++) {
        run += s->prob[i];
        if (run > u) {
            *token = (int32_t)s->idx[i];
            return INGOT_OK;
        }
    }
    *token = (int32_t)s->idx[n - 1];
    return INGOT_OK;
}
