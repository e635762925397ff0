/*
 * test_lm_sampling.c - the token sampler of include/ingot/lm.h. RNG streams are not torch's, so
 * (BACKEND-NOTES) sampling is tested greedily, by the set of tokens that can ever be drawn, and by
 * frequencies against the filtered distribution computed here independently (every frequency
 * within 5 standard deviations over 60,000 draws); plus penalties, seeds, bad parameters, and the
 * same tokens from a real model whatever the backend's thread count.
 */
#include <math.h>

#include "harness.h"
#include "ingot/lm.h"

enum { V = 8, N = 60000 };

static const float logits[V] = {1.0f, 3.0f, -0.5f, 2.5f, 0.0f, 2.5f, -INFINITY, 1.5f};

static ingot_sampler *mk(ingot_sampler_params p)
{
    ingot_sampler *s = NULL;
    if (ingot_sampler_new(&p, V, NULL, &s, NULL) != INGOT_OK) return NULL;
    return s;
}

/* Draws N tokens; every frequency must match want[] (a distribution over V) within 5 sigma, and
 * tokens of probability 0 must never appear. */
static void check_freq(ingot_sampler_params p, const double *want, const char *what)
{
    ingot_sampler *s = mk(p);
    ASSERT_TRUE(s);
    uint32_t cnt[V] = {0};
    for (int i = 0; i < N; i++) {
        int32_t t;
        ASSERT_OK(ingot_sampler_sample(s, logits, NULL, 0, &t, NULL));
        ASSERT_TRUE(t >= 0 && t < V);
        cnt[t]++;
    }
    for (int i = 0; i < V; i++) {
        double e = N * want[i], sd = sqrt(N * want[i] * (1 - want[i]));
        if (want[i] == 0) CHECK(cnt[i] == 0, "%s: token %d drawn %u times", what, i, cnt[i]);
        else CHECK(fabs(cnt[i] - e) <= 5 * sd + 1, "%s: token %d: %u draws, expected %.0f +- %.0f",
                   what, i, cnt[i], e, sd);
    }
    ingot_sampler_free(s);
}

/* softmax(l / T) over the tokens in keep[], 0 elsewhere */
static void dist(const int *keep, int nk, double T, double *out)
{
    double sum = 0;
    for (int i = 0; i < V; i++) out[i] = 0;
    for (int j = 0; j < nk; j++) sum += out[keep[j]] = exp(logits[keep[j]] / T);
    for (int j = 0; j < nk; j++) out[keep[j]] /= sum;
}

TEST(greedy_is_the_first_maximum)
{
    ingot_sampler_params p = {0};
    ingot_sampler *s = mk(p);
    int32_t t = -1;
    ASSERT_OK(ingot_sampler_sample(s, logits, NULL, 0, &t, NULL));
    ASSERT_EQ(t, 1);
    float tie[V] = {0, 5, 5, 1, 5, 0, 0, 0};
    ASSERT_OK(ingot_sampler_sample(s, tie, NULL, 0, &t, NULL));
    ASSERT_EQ(t, 1);
    float nan[V] = {NAN, 1, 2, NAN, 0, 0, 0, 0};
    ASSERT_OK(ingot_sampler_sample(s, nan, NULL, 0, &t, NULL));
    ASSERT_EQ(t, 2); /* NaN is never chosen */
    float none[V];
    for (int i = 0; i < V; i++) none[i] = i % 2 ? -INFINITY : NAN;
    ingot_error e;
    ASSERT_ST(ingot_sampler_sample(s, none, NULL, 0, &t, &e), INGOT_E_RANGE);
    ingot_sampler_free(s);
}

/* Greedy without penalties reads the logits directly (sampling.c): over 1003 logits (past the
 * eight-lane steps) with ties, NaN, -inf and +inf at the front, the back and in between, it picks
 * what the general path picks (the same sampler settings plus a frequency penalty and an empty
 * history, which change nothing but the route): the first of the largest. */
TEST(greedy_direct_matches_the_general_path)
{
    enum { NV = 1003 };
    ingot_sampler_params p = {0}, q = {0};
    q.frequency_penalty = 0.5;
    ingot_sampler *a = NULL, *b = NULL;
    ASSERT_OK(ingot_sampler_new(&p, NV, NULL, &a, NULL));
    ASSERT_OK(ingot_sampler_new(&q, NV, NULL, &b, NULL));
    static float l[NV];
    uint32_t x = 12345;
    for (int round = 0; round < 400; round++) {
        for (int i = 0; i < NV; i++) {
            x = x * 1664525u + 1013904223u;
            l[i] = (float)(x >> 20) / 64.0f - 32.0f; /* coarse: ties happen */
        }
        int pos[3] = {round % NV, NV - 1 - round % 7, (round * 131) % NV};
        switch (round % 6) {
        case 1: l[pos[0]] = NAN, l[pos[1]] = NAN; break;
        case 2: l[pos[2]] = INFINITY, l[pos[1]] = INFINITY; break;
        case 3: for (int i = 0; i < NV; i++) l[i] = i % 3 ? -INFINITY : NAN;
                l[pos[0]] = 1.0f; break;
        case 4: l[pos[1]] = 1e30f, l[pos[0]] = 1e30f; break;
        case 5: for (int i = 0; i < NV; i++) l[i] = -INFINITY;
                l[NV - 1] = -1.0f; break;
        default: break;
        }
        int32_t ta = -1, tb = -2;
        ASSERT_OK(ingot_sampler_sample(a, l, NULL, 0, &ta, NULL));
        ASSERT_OK(ingot_sampler_sample(b, l, NULL, 0, &tb, NULL));
        CHECK(ta == tb, "round %d: direct greedy %d, general path %d", round, ta, tb);
        int32_t want = -1;
        for (int i = 0; i < NV; i++)
            if (l[i] == l[i] && l[i] != -INFINITY && (want < 0 || l[i] > l[want])) want = i;
        CHECK(ta == want, "round %d: %d, the first maximum is %d", round, ta, want);
    }
    for (int i = 0; i < NV; i++) l[i] = i % 2 ? -INFINITY : NAN;
    int32_t t;
    ASSERT_ST(ingot_sampler_sample(a, l, NULL, 0, &t, NULL), INGOT_E_RANGE);
    ASSERT_ST(ingot_sampler_sample(b, l, NULL, 0, &t, NULL), INGOT_E_RANGE);
    ingot_sampler_free(a);
    ingot_sampler_free(b);
}

TEST(temperature_frequencies)
{
    int all[7] = {0, 1, 2, 3, 4, 5, 7};
    double want[V];
    ingot_sampler_params p = {0};
    p.seed = 1;
    p.temperature = 1.0;
    dist(all, 7, 1.0, want);
    check_freq(p, want, "T=1");
    p.temperature = 0.5;
    dist(all, 7, 0.5, want);
    check_freq(p, want, "T=0.5");
    p.temperature = 2.0;
    dist(all, 7, 2.0, want);
    check_freq(p, want, "T=2");
}

TEST(top_k_keeps_the_k_best)
{
    /* ranks: 1 (3.0), 3 (2.5), 5 (2.5: tie, higher id), 7, 0, 4, 2 */
    int k3[3] = {1, 3, 5}, k2[2] = {1, 3};
    double want[V];
    ingot_sampler_params p = {0};
    p.seed = 2;
    p.temperature = 1.0;
    p.top_k = 3;
    dist(k3, 3, 1.0, want);
    check_freq(p, want, "top-k 3");
    p.top_k = 2; /* the tie between 3 and 5 goes to the lower id */
    dist(k2, 2, 1.0, want);
    check_freq(p, want, "top-k 2");
    p.top_k = 1;
    double one[V] = {0, 1, 0, 0, 0, 0, 0, 0};
    check_freq(p, one, "top-k 1");
}

TEST(top_p_keeps_while_the_mass_before_is_below_p)
{
    int all[7] = {0, 1, 2, 3, 4, 5, 7};
    double full[V];
    dist(all, 7, 1.0, full);
    /* in rank order 1, 3, 5, 7, 0, 4, 2: find the cut for p = 0.8 independently */
    int order[7] = {1, 3, 5, 7, 0, 4, 2}, keep[7], nk = 0;
    double before = 0;
    for (int j = 0; j < 7; j++) {
        if (j > 0 && before >= 0.8) break;
        keep[nk++] = order[j];
        before += full[order[j]];
    }
    ASSERT_TRUE(nk >= 2 && nk < 7);
    double want[V];
    ingot_sampler_params p = {0};
    p.seed = 3;
    p.temperature = 1.0;
    p.top_p = 0.8;
    dist(keep, nk, 1.0, want);
    check_freq(p, want, "top-p 0.8");
    /* with temperature 0.7 the cut is still made on the T=1 distribution */
    p.temperature = 0.7;
    dist(keep, nk, 0.7, want);
    check_freq(p, want, "top-p 0.8, T=0.7");
    p.top_p = 1e-9; /* only the first */
    double one[V] = {0, 1, 0, 0, 0, 0, 0, 0};
    check_freq(p, one, "top-p ~0");
}

TEST(min_p_drops_tokens_below_a_fraction_of_the_best)
{
    /* p_i / p_max = exp(l_i - 3): >= 0.3 keeps 1 (1), 3 and 5 (0.61), 7 (0.22: dropped) */
    int keep[3] = {1, 3, 5};
    double want[V];
    ingot_sampler_params p = {0};
    p.seed = 4;
    p.temperature = 1.0;
    p.min_p = 0.3;
    dist(keep, 3, 1.0, want);
    check_freq(p, want, "min-p 0.3");
}

TEST(penalties)
{
    ingot_sampler_params p = {0};
    int32_t t;
    /* repeat penalty 2: token 1 (3.0 -> 1.5) falls below 3 and 5 (2.5): greedy picks 3 */
    p.repeat_penalty = 2.0;
    ingot_sampler *s = mk(p);
    int32_t h1[2] = {1, 1};
    ASSERT_OK(ingot_sampler_sample(s, logits, h1, 2, &t, NULL));
    ASSERT_EQ(t, 3);
    /* a negative logit is multiplied: token 2 (-0.5) becomes -1.0, never above the others */
    ingot_sampler_free(s);
    /* frequency penalty 0.3 x 2 occurrences + presence 0.1: 3.0 -> 2.3 < 2.5 */
    memset(&p, 0, sizeof p);
    p.frequency_penalty = 0.3;
    p.presence_penalty = 0.1;
    s = mk(p);
    ASSERT_OK(ingot_sampler_sample(s, logits, h1, 2, &t, NULL));
    ASSERT_EQ(t, 3);
    int32_t h2[1] = {1}; /* one occurrence: 3.0 - 0.3 - 0.1 = 2.6 > 2.5 */
    ASSERT_OK(ingot_sampler_sample(s, logits, h2, 1, &t, NULL));
    ASSERT_EQ(t, 1);
    ingot_sampler_free(s);
    /* the window: with penalty_last_n 2 an older occurrence does not count */
    memset(&p, 0, sizeof p);
    p.repeat_penalty = 2.0;
    p.penalty_last_n = 2;
    s = mk(p);
    int32_t h3[3] = {1, 4, 4};
    ASSERT_OK(ingot_sampler_sample(s, logits, h3, 3, &t, NULL));
    ASSERT_EQ(t, 1);
    int32_t h4[3] = {4, 1, 4};
    ASSERT_OK(ingot_sampler_sample(s, logits, h4, 3, &t, NULL));
    ASSERT_EQ(t, 3);
    /* out-of-range history ids are ignored, the logits are left unchanged */
    int32_t h5[2] = {-5, 99};
    float copy[V];
    memcpy(copy, logits, sizeof copy);
    ASSERT_OK(ingot_sampler_sample(s, copy, h5, 2, &t, NULL));
    ASSERT_EQ(t, 1);
    ASSERT_MEM(copy, logits, sizeof copy);
    ingot_sampler_free(s);
}

TEST(seeds_reproduce_and_differ)
{
    ingot_sampler_params p = {0};
    p.temperature = 1.5;
    p.seed = 99;
    ingot_sampler *a = mk(p), *b = mk(p);
    p.seed = 100;
    ingot_sampler *c = mk(p);
    int same = 0, diff = 0;
    for (int i = 0; i < 200; i++) {
        int32_t x, y, z;
        ASSERT_OK(ingot_sampler_sample(a, logits, NULL, 0, &x, NULL));
        ASSERT_OK(ingot_sampler_sample(b, logits, NULL, 0, &y, NULL));
        ASSERT_OK(ingot_sampler_sample(c, logits, NULL, 0, &z, NULL));
        same += x == y;
        diff += x != z;
    }
    ASSERT_EQ(same, 200);
    ASSERT_TRUE(diff > 50);
    ingot_sampler_reseed(a, 99);
    ingot_sampler_reseed(b, 99);
    int32_t x, y;
    ASSERT_OK(ingot_sampler_sample(a, logits, NULL, 0, &x, NULL));
    ASSERT_OK(ingot_sampler_sample(b, logits, NULL, 0, &y, NULL));
    ASSERT_EQ(x, y);
    ingot_sampler_free(a);
    ingot_sampler_free(b);
    ingot_sampler_free(c);
}

TEST(bad_parameters_are_range)
{
    ingot_sampler_params p = {0};
    ingot_sampler *s = NULL;
    ingot_error e;
    p.top_p = -0.1;
    ASSERT_ST(ingot_sampler_new(&p, V, NULL, &s, &e), INGOT_E_RANGE);
    ASSERT_STR(e.where, "top_p");
    p.top_p = 0;
    p.min_p = 1.5;
    ASSERT_ST(ingot_sampler_new(&p, V, NULL, &s, &e), INGOT_E_RANGE);
    ASSERT_STR(e.where, "min_p");
    p.min_p = 0;
    p.temperature = NAN;
    ASSERT_ST(ingot_sampler_new(&p, V, NULL, &s, &e), INGOT_E_RANGE);
    p.temperature = 0;
    p.repeat_penalty = -1;
    ASSERT_ST(ingot_sampler_new(&p, V, NULL, &s, &e), INGOT_E_RANGE);
    p.repeat_penalty = 0;
    ASSERT_ST(ingot_sampler_new(&p, 0, NULL, &s, &e), INGOT_E_RANGE);
    ASSERT_TRUE(s == NULL);
}

/* Sampled generation from the real model: the same seed gives the same tokens for 1, 2 and 3
 * backend threads (the sampler has its own stream), another seed other tokens. */
TEST(generate_same_tokens_for_any_thread_count)
{
    int32_t out[4][48];
    size_t n[4] = {0};
    for (int r = 0; r < 4; r++) {
        ingot_backend_opts bo = {0};
        bo.threads = r < 3 ? (uint32_t)r + 1 : 2;
        ingot_backend *be = NULL;
        ASSERT_OK(ingot_backend_new("cpu", &bo, &be, NULL));
        ingot_lm *m = NULL;
        ASSERT_OK(ingot_lm_open_path(be, INGOT_FIXTURES "/models/stories260K/stories260K.gguf",
                                     NULL, &m, NULL));
        ingot_lm_session *s = NULL;
        ASSERT_OK(ingot_lm_session_new(m, NULL, &s, NULL));
        ingot_sampler_params p = {0};
        p.temperature = 0.9;
        p.top_k = 40;
        p.top_p = 0.95;
        p.repeat_penalty = 1.1;
        p.seed = r < 3 ? 42 : 43;
        ingot_sampler *sp = NULL;
        ASSERT_OK(ingot_sampler_new(&p, 512, NULL, &sp, NULL));
        ingot_lm_generate_opts go = {0};
        go.max_tokens = 48;
        go.ignore_eos = true;
        ASSERT_OK(ingot_lm_generate(s, sp, NULL, 0, &go, out[r], 48, &n[r], NULL, NULL));
        ingot_sampler_free(sp);
        ingot_lm_session_free(s);
        ingot_lm_free(m);
        ingot_backend_free(be);
    }
    ASSERT_EQ(n[0], 48);
    ASSERT_MEM(out[0], out[1], sizeof out[0]);
    ASSERT_MEM(out[0], out[2], sizeof out[0]);
    ASSERT_TRUE(memcmp(out[0], out[3], sizeof out[0]) != 0);
}

RUN_TESTS(T(greedy_is_the_first_maximum), T(greedy_direct_matches_the_general_path),
          T(temperature_frequencies), T(top_k_keeps_the_k_best),
          T(top_p_keeps_while_the_mass_before_is_below_p),
          T(min_p_drops_tokens_below_a_fraction_of_the_best), T(penalties),
          T(seeds_reproduce_and_differ), T(bad_parameters_are_range),
          T(generate_same_tokens_for_any_thread_count))
