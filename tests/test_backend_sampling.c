/*
 * test_backend_sampling.c - ingot_op_multinomial on every backend. RNG streams never match
 * torch's, so sampling is checked by what does not depend on the stream: frequencies of many
 * draws against the (top-p filtered) distribution, tokens outside the filter never drawn, greedy
 * decoding (p = 0), and determinism (same seed, same tokens; on every backend and thread count).
 */
#include <math.h>

#include "harness.h"
#include "ingot/backend.h"

typedef struct htensor {
    ingot_buffer *buf;
    ingot_tensor t;
} htensor;

static htensor wrap(ingot_backend *b, void *data, ingot_dtype dt, uint32_t rank,
                    const int64_t *shape)
{
    htensor h = {0};
    int64_t n = 1;
    for (uint32_t i = 0; i < rank; i++) n *= shape[i];
    size_t es = dt == INGOT_DTYPE_I64 ? 8 : dt == INGOT_DTYPE_BOOL ? 1 : 4;
    ingot_buffer_wrap(b, data, (size_t)n * es, true, &h.buf, NULL);
    ingot_tensor_init(&h.t, h.buf, 0, dt, rank, shape, NULL);
    return h;
}

#define EACH_BACKEND(be)                                                                           \
    for (uint32_t bi_ = 0; bi_ < 2; bi_++)                                                         \
        for (ingot_backend *be = NULL;                                                             \
             !be && ingot_backend_new(ingot_backend_name_at(bi_), &opts_, &be, NULL) == INGOT_OK;) \
            for (int once_ = 0; !once_; once_ = 1, ingot_backend_free(be))

#define DRAWS 60000

/* Draws DRAWS tokens from `w` (V weights) and checks every frequency against w / sum within
 * 5 standard deviations (plus a hair), and that weight-0 tokens never come up. */
static void check_frequencies(ingot_backend *be, const float *w, int V)
{
    static int64_t tok[DRAWS];
    int64_t ps[2] = {1, V}, ds[2] = {1, DRAWS};
    htensor P = wrap(be, (void *)(uintptr_t)w, INGOT_DTYPE_F32, 2, ps);
    htensor D = wrap(be, tok, INGOT_DTYPE_I64, 2, ds);
    ingot_error e;
    ASSERT_OK(ingot_op_multinomial(be, &D.t, &P.t, &e));
    double sum = 0, count[16] = {0};
    for (int i = 0; i < V; i++) sum += w[i];
    for (int i = 0; i < DRAWS; i++) {
        ASSERT_TRUE(tok[i] >= 0 && tok[i] < V);
        count[tok[i]]++;
    }
    for (int i = 0; i < V; i++) {
        double p = w[i] / sum, f = count[i] / DRAWS, sd = sqrt(p * (1 - p) / DRAWS);
        if (w[i] == 0) CHECK(count[i] == 0, "%s: token %d of weight 0 drawn %g times",
                             ingot_backend_name(be), i, count[i]);
        CHECK(fabs(f - p) <= 5 * sd + 1e-9, "%s: token %d frequency %.5f, want %.5f (sd %.5f)",
              ingot_backend_name(be), i, f, p, sd);
    }
    ingot_buffer_free(P.buf);
    ingot_buffer_free(D.buf);
}

TEST(test_multinomial_frequencies_of_filtered_distribution)
{
    ingot_backend_opts opts_ = {0};
    opts_.seed = 42;
    /* Logits of 8 tokens; top-p 0.8 keeps the first few by rank, renormalised. */
    float logits[8] = {1.5f, -0.5f, 2.0f, 0.0f, -3.0f, 1.0f, 0.25f, -1.0f};
    EACH_BACKEND(be)
    {
        float filt[8];
        uint8_t keep[8];
        int64_t s[2] = {1, 8};
        htensor L = wrap(be, logits, INGOT_DTYPE_F32, 2, s), Fd = wrap(be, filt, INGOT_DTYPE_F32, 2, s);
        htensor K = wrap(be, keep, INGOT_DTYPE_BOOL, 2, s);
        ASSERT_OK(ingot_op_top_p(be, &Fd.t, &K.t, &L.t, 0.8, true, NULL));
        int nkeep = 0;
        for (int i = 0; i < 8; i++) nkeep += keep[i];
        ASSERT_TRUE(nkeep > 1 && nkeep < 8); /* the filter does something */
        check_frequencies(be, filt, 8);
        /* Unnormalised weights with zeros. */
        static const float w[6] = {1, 0, 3, 0.5f, 0, 2.5f};
        check_frequencies(be, w, 6);
        ingot_buffer_free(L.buf);
        ingot_buffer_free(Fd.buf);
        ingot_buffer_free(K.buf);
    }
}

/* top_p with p = 0 keeps only the most probable token: sampling from it is greedy decoding. */
TEST(test_multinomial_greedy_with_top_p_zero)
{
    ingot_backend_opts opts_ = {0};
    float logits[2][5] = {{0.3f, 2.5f, -1.0f, 2.5f, 0.0f}, {-4.0f, -2.0f, -3.0f, -2.5f, -9.0f}};
    EACH_BACKEND(be)
    {
        float filt[10];
        int64_t tok[2 * 50], am[2];
        int64_t s[2] = {2, 5}, ts[2] = {2, 50}, as[2] = {2, 1};
        htensor L = wrap(be, logits, INGOT_DTYPE_F32, 2, s), Fd = wrap(be, filt, INGOT_DTYPE_F32, 2, s);
        htensor T = wrap(be, tok, INGOT_DTYPE_I64, 2, ts), A = wrap(be, am, INGOT_DTYPE_I64, 2, as);
        ASSERT_OK(ingot_op_top_p(be, &Fd.t, NULL, &L.t, 0.0, true, NULL));
        ASSERT_OK(ingot_op_multinomial(be, &T.t, &Fd.t, NULL));
        ASSERT_OK(ingot_op_reduce(be, INGOT_REDUCE_ARGMAX, &A.t, &L.t, 1, NULL));
        ASSERT_TRUE(am[0] == 1 && am[1] == 1); /* first of the tied maxima */
        for (int i = 0; i < 100; i++) ASSERT_EQ(tok[i], am[i / 50]);
        ingot_buffer_free(L.buf);
        ingot_buffer_free(Fd.buf);
        ingot_buffer_free(T.buf);
        ingot_buffer_free(A.buf);
    }
}

/* Same seed, same tokens: across instances, backends and thread counts; rows consume the stream
 * in order (one call of two rows = two calls of one row); reseeding restarts the stream. */
TEST(test_multinomial_deterministic)
{
    float w[3][7] = {{1, 2, 3, 4, 5, 6, 7}, {7, 0, 1, 0, 2, 0, 3}, {0.1f, 0.1f, 5, 0.1f, 0.1f, 0, 1}};
    int64_t first[3 * 40], got[3 * 40], one[40];
    int64_t ps[2] = {3, 7}, ds[2] = {3, 40}, ps1[2] = {1, 7}, ds1[2] = {1, 40};
    for (int run = 0; run < 4; run++) { /* ref, then cpu with 1, 2, 3 threads */
        ingot_backend_opts o = {0};
        o.seed = 1234;
        o.threads = (uint32_t)run;
        ingot_backend *be = NULL;
        ASSERT_OK(ingot_backend_new(run ? "cpu" : "ref", &o, &be, NULL));
        htensor P = wrap(be, w, INGOT_DTYPE_F32, 2, ps), D = wrap(be, got, INGOT_DTYPE_I64, 2, ds);
        htensor D1 = wrap(be, one, INGOT_DTYPE_I64, 2, ds1);
        ASSERT_OK(ingot_op_multinomial(be, &D.t, &P.t, NULL));
        if (run == 0) memcpy(first, got, sizeof got);
        ASSERT_MEM(got, first, sizeof got);
        /* Row by row after a reseed: the same tokens. */
        ingot_backend_seed(be, 1234);
        for (int r = 0; r < 3; r++) {
            ingot_tensor pr;
            ASSERT_OK(ingot_tensor_init(&pr, P.buf, (uint64_t)r * 7 * 4, INGOT_DTYPE_F32, 2, ps1,
                                        NULL));
            ASSERT_OK(ingot_op_multinomial(be, &D1.t, &pr, NULL));
            ASSERT_MEM(one, first + r * 40, sizeof one);
        }
        /* Another seed, another stream (120 draws cannot all agree by chance). */
        ingot_backend_seed(be, 99);
        ASSERT_OK(ingot_op_multinomial(be, &D.t, &P.t, NULL));
        ASSERT_TRUE(memcmp(got, first, sizeof got) != 0);
        for (int i = 0; i < 120; i++) ASSERT_TRUE(w[i / 40][got[i]] > 0);
        ingot_buffer_free(P.buf);
        ingot_buffer_free(D.buf);
        ingot_buffer_free(D1.buf);
        ingot_backend_free(be);
    }
}

TEST(test_multinomial_errors)
{
    ingot_backend_opts opts_ = {0};
    EACH_BACKEND(be)
    {
        float bad[3][3] = {{1, 2, 3}, {1, -1, 1}, {0, 0, 0}};
        int64_t tok[3];
        float ftok[3];
        int64_t ps[2] = {1, 3}, ds[2] = {1, 3}, d2[2] = {2, 1};
        htensor D = wrap(be, tok, INGOT_DTYPE_I64, 2, ds), Fd = wrap(be, ftok, INGOT_DTYPE_F32, 2, ds);
        htensor D2 = wrap(be, tok, INGOT_DTYPE_I64, 2, d2);
        ingot_error e;
        for (int r = 1; r < 3; r++) {
            htensor P = wrap(be, bad[r], INGOT_DTYPE_F32, 2, ps);
            ASSERT_ST(ingot_op_multinomial(be, &D.t, &P.t, &e), INGOT_E_RANGE);
            ASSERT_STR(e.where, "multinomial");
            ASSERT_TRUE(strstr(e.msg, "'probs'") && strstr(e.msg, "row 0"));
            ingot_buffer_free(P.buf);
        }
        bad[0][1] = NAN;
        htensor P = wrap(be, bad[0], INGOT_DTYPE_F32, 2, ps);
        ASSERT_ST(ingot_op_multinomial(be, &D.t, &P.t, &e), INGOT_E_RANGE);
        bad[0][1] = INFINITY;
        ASSERT_ST(ingot_op_multinomial(be, &D.t, &P.t, &e), INGOT_E_RANGE);
        ASSERT_ST(ingot_op_multinomial(be, &Fd.t, &P.t, &e), INGOT_E_BAD_TYPE);
        ASSERT_TRUE(strstr(e.msg, "'dst'") != NULL);
        ASSERT_ST(ingot_op_multinomial(be, &D2.t, &P.t, &e), INGOT_E_BAD_SHAPE);
        ASSERT_ST(ingot_op_multinomial(be, &D.t, &D.t, &e), INGOT_E_BAD_TYPE);
        ASSERT_TRUE(strstr(e.msg, "'probs'") != NULL);
        ingot_buffer_free(P.buf);
        ingot_buffer_free(D.buf);
        ingot_buffer_free(Fd.buf);
        ingot_buffer_free(D2.buf);
    }
}

RUN_TESTS(T(test_multinomial_frequencies_of_filtered_distribution),
          T(test_multinomial_greedy_with_top_p_zero), T(test_multinomial_deterministic),
          T(test_multinomial_errors))
