/*
 * test_backend_traps.c - one test per silent-mismatch trap of BACKEND-NOTES, on every backend,
 * plus the interface's contracts: errors name the op and operand, aliasing and read-only
 * buffers are refused, empty tensors are no-ops, views are metadata only, zero-copy wrapping of
 * file tensors, registration by name, UNSUPPORTED for a missing op group.
 *
 * Expected values come from torch 1.13 (printed by scripts/gen_backend_goldens.py's formulas)
 * or are exact by construction.
 */
#include <math.h>

#include "harness.h"
#include "ingot/backend.h"

/* A host F32 tensor over a caller array (wrapped, zero-copy). */
typedef struct htensor {
    ingot_buffer *buf;
    ingot_tensor t;
} htensor;

static htensor wrapf(ingot_backend *b, float *data, uint32_t rank, const int64_t *shape)
{
    htensor h = {0};
    int64_t n = 1;
    for (uint32_t i = 0; i < rank; i++) n *= shape[i];
    ingot_buffer_wrap(b, data, (size_t)n * 4, true, &h.buf, NULL);
    ingot_tensor_init(&h.t, h.buf, 0, INGOT_DTYPE_F32, rank, shape, NULL);
    return h;
}

static htensor wrapi(ingot_backend *b, int64_t *data, uint32_t rank, const int64_t *shape)
{
    htensor h = {0};
    int64_t n = 1;
    for (uint32_t i = 0; i < rank; i++) n *= shape[i];
    ingot_buffer_wrap(b, data, (size_t)n * 8, true, &h.buf, NULL);
    ingot_tensor_init(&h.t, h.buf, 0, INGOT_DTYPE_I64, rank, shape, NULL);
    return h;
}

#define EACH_BACKEND(be)                                                                           \
    for (uint32_t bi_ = 0; bi_ < ingot_backend_count(); bi_++)                                     \
        for (ingot_backend *be = NULL; !be && ingot_backend_new(ingot_backend_name_at(bi_), NULL,  \
                                                                &be, NULL) == INGOT_OK;)           \
            for (int once_ = 0; !once_; once_ = 1, ingot_backend_free(be))

/* GELU: erf form and tanh form differ; each matches its torch value. */
TEST(test_trap_gelu_tanh_vs_erf)
{
    /* torch.nn.functional.gelu(x) and gelu(x, approximate='tanh') at x = -2, -0.5, 1, 3. */
    float x[4] = {-2.0f, -0.5f, 1.0f, 3.0f};
    const double erf_ref[4] = {-0.04550026389635842, -0.15426876936299344, 0.841344746068543,
                               2.99595030590511};
    const double tanh_ref[4] = {-0.04540230591222494, -0.15428599017485606, 0.8411919906082768,
                                2.996362607918227};
    EACH_BACKEND(be)
    {
        float y1[4], y2[4];
        int64_t s[1] = {4};
        htensor a = wrapf(be, x, 1, s), d1 = wrapf(be, y1, 1, s), d2 = wrapf(be, y2, 1, s);
        ASSERT_OK(ingot_op_activation(be, INGOT_ACT_GELU_ERF, &d1.t, &a.t, 0, NULL));
        ASSERT_OK(ingot_op_activation(be, INGOT_ACT_GELU_TANH, &d2.t, &a.t, 0, NULL));
        for (int i = 0; i < 4; i++) {
            CHECK(fabs(y1[i] - erf_ref[i]) < 1e-6, "gelu erf[%d] %.9g", i, y1[i]);
            CHECK(fabs(y2[i] - tanh_ref[i]) < 1e-6, "gelu tanh[%d] %.9g", i, y2[i]);
        }
        CHECK(fabs(y1[1] - y2[1]) > 1e-5, "the two GELU forms must differ");
        ingot_buffer_free(a.buf);
        ingot_buffer_free(d1.buf);
        ingot_buffer_free(d2.buf);
    }
}

/* RoPE: interleaved pairs (x0,x1) vs half-split pairs (x0,x2) for d = 4 at position 1. */
TEST(test_trap_rope_interleaved_vs_half)
{
    float x[4] = {1, 2, 3, 4};
    int64_t pos[1] = {1};
    /* theta = 10000, d = 4: angles 1 and 0.01 for pairs i = 0, 1. */
    double c0 = cos(1.0), s0 = sin(1.0), c1 = cos(0.01), s1 = sin(0.01);
    double inter[4] = {1 * c0 - 2 * s0, 1 * s0 + 2 * c0, 3 * c1 - 4 * s1, 3 * s1 + 4 * c1};
    double half[4] = {1 * c0 - 3 * s0, 2 * c1 - 4 * s1, 1 * s0 + 3 * c0, 2 * s1 + 4 * c1};
    EACH_BACKEND(be)
    {
        float y1[4], y2[4];
        int64_t s[2] = {1, 4}, ps[1] = {1};
        htensor a = wrapf(be, x, 2, s), d1 = wrapf(be, y1, 2, s), d2 = wrapf(be, y2, 2, s);
        htensor p = wrapi(be, pos, 1, ps);
        ASSERT_OK(ingot_op_rope(be, &d1.t, &a.t, &p.t, 10000.0, INGOT_ROPE_INTERLEAVED, NULL));
        ASSERT_OK(ingot_op_rope(be, &d2.t, &a.t, &p.t, 10000.0, INGOT_ROPE_HALF, NULL));
        for (int i = 0; i < 4; i++) {
            CHECK(fabs(y1[i] - inter[i]) < 1e-6, "interleaved[%d] %.9g vs %.9g", i, y1[i], inter[i]);
            CHECK(fabs(y2[i] - half[i]) < 1e-6, "half[%d] %.9g vs %.9g", i, y2[i], half[i]);
        }
        ingot_buffer_free(a.buf);
        ingot_buffer_free(d1.buf);
        ingot_buffer_free(d2.buf);
        ingot_buffer_free(p.buf);
    }
}

/* Linear takes [out, in] weights; a Burn-style [in, out] weight is refused by shape (or must be
 * transposed as a view first), never silently multiplied the wrong way. */
TEST(test_trap_linear_out_in_layout)
{
    float x[3] = {1, 2, 3};                  /* [1, 3] */
    float w[6] = {1, 0, 0, 0, 1, 1};         /* [out=2, in=3] */
    float y[2];
    EACH_BACKEND(be)
    {
        int64_t xs[2] = {1, 3}, ws[2] = {2, 3}, wt[2] = {3, 2}, ys[2] = {1, 2};
        htensor a = wrapf(be, x, 2, xs), W = wrapf(be, w, 2, ws), d = wrapf(be, y, 2, ys);
        ASSERT_OK(ingot_op_linear(be, &d.t, &a.t, &W.t, NULL, NULL));
        ASSERT_TRUE(y[0] == 1.0f && y[1] == 5.0f);
        /* The same bytes read as Burn's [in, out] = [3, 2]: refused with a named operand. */
        ingot_tensor burn;
        ingot_error e;
        ASSERT_OK(ingot_tensor_init(&burn, W.buf, 0, INGOT_DTYPE_F32, 2, wt, NULL));
        ASSERT_ST(ingot_op_linear(be, &d.t, &a.t, &burn, NULL, &e), INGOT_E_BAD_SHAPE);
        ASSERT_TRUE(strstr(e.msg, "'w'") && strstr(e.msg, "[out, in]"));
        /* ...and accepted once transposed as a view ([in,out] -> [out,in], no copy). */
        ingot_tensor fixed;
        ASSERT_OK(ingot_tensor_transpose(&fixed, &burn, NULL));
        ASSERT_OK(ingot_op_linear(be, &d.t, &a.t, &fixed, NULL, NULL));
        /* burn^T rows: (w0, w2, w4) = (1,0,1) and (w1, w3, w5) = (0,0,1). */
        ASSERT_TRUE(y[0] == 4.0f && y[1] == 3.0f);
        ingot_buffer_free(a.buf);
        ingot_buffer_free(W.buf);
        ingot_buffer_free(d.buf);
    }
}

/* Causal mask with a KV cache is bottom-right aligned: the last query sees every key. */
TEST(test_trap_causal_mask_kv_cache)
{
    /* q_len 1, kv_len 3, D 1: q = 1, k = (0, 0, 0) -> uniform weights; v = (1, 2, 6).
     * Bottom-right: the single query sees all 3 keys -> mean 3. Top-left would see key 0 only
     * -> 1. Then q_len 2: query 0 sees keys 0..1 (mean 1.5), query 1 all (3). */
    float q[2] = {1, 1}, k[3] = {0, 0, 0}, v[3] = {1, 2, 6}, y[2];
    EACH_BACKEND(be)
    {
        int64_t qs[4] = {1, 1, 1, 1}, ks[4] = {1, 1, 3, 1}, q2[4] = {1, 1, 2, 1};
        htensor Q = wrapf(be, q, 4, qs), K = wrapf(be, k, 4, ks), V = wrapf(be, v, 4, ks);
        htensor Y = wrapf(be, y, 4, qs);
        ingot_attn_params p = {0, true};
        ASSERT_OK(ingot_op_attention(be, &Y.t, &Q.t, &K.t, &V.t, &p, NULL));
        CHECK(fabsf(y[0] - 3.0f) < 1e-6f, "decode step: %.9g (top-left alignment gives 1)", y[0]);
        htensor Q2 = wrapf(be, q, 4, q2), Y2 = wrapf(be, y, 4, q2);
        ASSERT_OK(ingot_op_attention(be, &Y2.t, &Q2.t, &K.t, &V.t, &p, NULL));
        CHECK(fabsf(y[0] - 1.5f) < 1e-6f && fabsf(y[1] - 3.0f) < 1e-6f, "chunk: %g %g", y[0],
              y[1]);
        ingot_buffer_free(Q.buf);
        ingot_buffer_free(K.buf);
        ingot_buffer_free(V.buf);
        ingot_buffer_free(Y.buf);
        ingot_buffer_free(Q2.buf);
        ingot_buffer_free(Y2.buf);
    }
}

/* Softmax of an all -inf row is NaN (torch); attention's fully masked row is defined as 0. */
TEST(test_trap_softmax_all_neg_inf)
{
    float x[6] = {-INFINITY, -INFINITY, -INFINITY, 0, 1, 2}, y[6];
    EACH_BACKEND(be)
    {
        int64_t s[2] = {2, 3};
        htensor a = wrapf(be, x, 2, s), d = wrapf(be, y, 2, s);
        ASSERT_OK(ingot_op_softmax(be, &d.t, &a.t, 1, false, NULL));
        for (int i = 0; i < 3; i++) CHECK(isnan(y[i]), "all -inf row [%d] = %g, want NaN", i, y[i]);
        CHECK(fabs(y[5] - 0.6652409557748218) < 1e-6, "normal row %.9g", y[5]);
        ingot_buffer_free(a.buf);
        ingot_buffer_free(d.buf);
    }
}

/* Top-k ties: documented order is the lower index first; tied indices compared as sets. */
TEST(test_trap_topk_ties)
{
    float x[6] = {1, 5, 3, 5, 5, 0}, v[3];
    int64_t ix[3];
    EACH_BACKEND(be)
    {
        int64_t s[1] = {6}, ks[1] = {3};
        htensor a = wrapf(be, x, 1, s), V = wrapf(be, v, 1, ks), I = wrapi(be, ix, 1, ks);
        ASSERT_OK(ingot_op_topk(be, &V.t, &I.t, &a.t, 3, true, NULL));
        ASSERT_TRUE(v[0] == 5 && v[1] == 5 && v[2] == 5);
        /* As a set: {1, 3, 4} (torch returns the same set in an unspecified order). */
        ASSERT_EQ(ix[0] + ix[1] + ix[2], 8);
        ASSERT_TRUE(ix[0] != ix[1] && ix[1] != ix[2] && ix[0] != ix[2]);
        /* ingot's documented order. */
        ASSERT_TRUE(ix[0] == 1 && ix[1] == 3 && ix[2] == 4);
        ingot_buffer_free(a.buf);
        ingot_buffer_free(V.buf);
        ingot_buffer_free(I.buf);
    }
}

/* Greedy decoding needs argmax with a defined tie rule (first index), never RNG streams. */
TEST(test_trap_argmax_first_index_greedy)
{
    float x[5] = {0.1f, 0.7f, 0.2f, 0.7f, NAN};
    int64_t out[1];
    EACH_BACKEND(be)
    {
        int64_t s[1] = {4}, os[1] = {1}, s5[1] = {5};
        htensor a = wrapf(be, x, 1, s), o = wrapi(be, out, 1, os), a5 = wrapf(be, x, 1, s5);
        ASSERT_OK(ingot_op_reduce(be, INGOT_REDUCE_ARGMAX, &o.t, &a.t, 0, NULL));
        ASSERT_EQ(out[0], 1);
        ASSERT_OK(ingot_op_reduce(be, INGOT_REDUCE_ARGMAX, &o.t, &a5.t, 0, NULL));
        ASSERT_EQ(out[0], 4); /* NaN counts as the largest, as torch */
        ingot_buffer_free(a.buf);
        ingot_buffer_free(a5.buf);
        ingot_buffer_free(o.buf);
    }
}

/* Top-p keeps a token while the probability mass ranked before it is < p (not <= p, not the
 * mass including it), always keeps the first, breaks ties by the lower index, keeps only the top
 * token for p <= 0 and everything for p >= 1. All values below are exact in binary. */
typedef struct topp_case {
    float x[4];
    double p;
    bool logits;
    uint8_t keep[4];
} topp_case;

static void check_top_p(ingot_backend *be, const topp_case *c, int n)
{
    float y[4], y2[4];
    uint8_t k[4], k2[4];
    int64_t s[2] = {1, n};
    htensor a = wrapf(be, (float *)c->x, 2, s), d = wrapf(be, y, 2, s), d2 = wrapf(be, y2, 2, s);
    ingot_buffer *kb = NULL, *kb2 = NULL;
    ingot_tensor kt, kt2;
    ingot_buffer_wrap(be, k, sizeof k, true, &kb, NULL);
    ingot_buffer_wrap(be, k2, sizeof k2, true, &kb2, NULL);
    ingot_tensor_init(&kt, kb, 0, INGOT_DTYPE_BOOL, 2, s, NULL);
    ingot_tensor_init(&kt2, kb2, 0, INGOT_DTYPE_BOOL, 2, s, NULL);
    ingot_error e;
    ASSERT_OK(ingot_op_top_p(be, &d.t, &kt, &a.t, c->p, c->logits, &e));
    /* Each output alone gives the same. */
    ASSERT_OK(ingot_op_top_p(be, &d2.t, NULL, &a.t, c->p, c->logits, &e));
    ASSERT_OK(ingot_op_top_p(be, NULL, &kt2, &a.t, c->p, c->logits, &e));
    double kept = 0;
    for (int i = 0; i < n; i++) {
        CHECK(k[i] == c->keep[i], "%s p=%.9g: keep[%d] = %d, want %d", ingot_backend_name(be),
              c->p, i, k[i], c->keep[i]);
        CHECK(k2[i] == k[i] && memcmp(&y2[i], &y[i], 4) == 0, "outputs alone differ at %d", i);
        if (c->keep[i]) kept += c->logits ? 0 : c->x[i];
    }
    if (!c->logits)
        for (int i = 0; i < n; i++) {
            double want = c->keep[i] ? c->x[i] / kept : 0;
            CHECK(fabs(y[i] - want) < 1e-7, "p=%.9g: dst[%d] = %.9g, want %.9g", c->p, i, y[i],
                  want);
        }
    ingot_buffer_free(a.buf);
    ingot_buffer_free(d.buf);
    ingot_buffer_free(d2.buf);
    ingot_buffer_free(kb);
    ingot_buffer_free(kb2);
}

TEST(test_trap_top_p_mass_before_at_least_one_ties)
{
    const float L2 = 0.6931471805599453f; /* ln 2: logits 0, ln 2, 0, -inf -> .25 .5 .25 0 */
    static const topp_case cases[] = {
        /* mass before index 2 is .75: not < .75, dropped ("mass including it <= p" would keep
         * index 1 only; "mass before <= p" would keep index 2 too) */
        {{.5f, .25f, .125f, .125f}, .75, false, {1, 1, 0, 0}},
        /* just above: index 2 kept, its tie index 3 (higher index) not */
        {{.5f, .25f, .125f, .125f}, .7500001, false, {1, 1, 1, 0}},
        {{.25f, .25f, .25f, .25f}, .5, false, {1, 1, 0, 0}},      /* ties: lower indices */
        {{.125f, .5f, .125f, .25f}, .75, false, {0, 1, 0, 1}},    /* ranked, not in index order */
        {{.1f, .4f, .4f, .1f}, 0.0, false, {0, 1, 0, 0}},         /* p = 0: the top token only */
        {{.1f, .4f, .4f, .1f}, -3.0, false, {0, 1, 0, 0}},        /* p < 0: the same */
        {{.5f, .5f, 0.0f, 0.0f}, 1.0, false, {1, 1, 1, 1}},       /* p = 1: no filtering at all */
        {{.5f, .5f, 0.0f, 0.0f}, 0.999999, false, {1, 1, 0, 0}},  /* below 1: zeros dropped */
        {{.5f, .5f, 0.0f, 0.0f}, 7.0, false, {1, 1, 1, 1}},       /* p > 1: no filtering */
        {{0.0f, L2, 0.0f, -INFINITY}, 0.6, true, {1, 1, 0, 0}},   /* logits: softmax first */
        {{0.0f, L2, 0.0f, -INFINITY}, 1.0, true, {1, 1, 1, 1}},
    };
    EACH_BACKEND(be)
    {
        for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) check_top_p(be, &cases[i], 4);
        /* A NaN ranks first (as sort) and is then the only kept token. */
        float x[3] = {0.2f, NAN, 0.3f}, y[3];
        uint8_t k[3];
        int64_t s[1] = {3};
        htensor a = wrapf(be, x, 1, s), d = wrapf(be, y, 1, s);
        ingot_buffer *kb = NULL;
        ingot_tensor kt;
        ingot_buffer_wrap(be, k, 3, true, &kb, NULL);
        ingot_tensor_init(&kt, kb, 0, INGOT_DTYPE_BOOL, 1, s, NULL);
        ASSERT_OK(ingot_op_top_p(be, &d.t, &kt, &a.t, 0.9, false, NULL));
        ASSERT_TRUE(k[0] == 0 && k[1] == 1 && k[2] == 0 && isnan(y[1]) && y[0] == 0 && y[2] == 0);
        /* Errors name the op and operand. */
        ingot_error e;
        ASSERT_ST(ingot_op_top_p(be, NULL, NULL, &a.t, 0.5, false, &e), INGOT_E_MISUSE);
        ASSERT_STR(e.where, "top_p");
        ASSERT_ST(ingot_op_top_p(be, &d.t, &kt, &a.t, NAN, false, &e), INGOT_E_RANGE);
        ASSERT_ST(ingot_op_top_p(be, &kt, NULL, &a.t, 0.5, false, &e), INGOT_E_BAD_TYPE);
        ASSERT_TRUE(strstr(e.msg, "'dst'") != NULL);
        ASSERT_ST(ingot_op_top_p(be, &d.t, &kt, &kt, 0.5, false, &e), INGOT_E_BAD_TYPE);
        ASSERT_TRUE(strstr(e.msg, "'a'") != NULL);
        ingot_buffer_free(a.buf);
        ingot_buffer_free(d.buf);
        ingot_buffer_free(kb);
    }
}

/* sort is stable in both directions (equal keys, -0.0 and 0.0 included, keep input order) and
 * ranks NaN above every number, as torch.sort(stable=True). */
TEST(test_sort_stable_nan_and_outputs)
{
    float x[7] = {3, 1, NAN, 1, -0.0f, 0.0f, 3};
    static const int64_t asc[7] = {4, 5, 1, 3, 0, 6, 2}, desc[7] = {2, 0, 6, 1, 3, 4, 5};
    EACH_BACKEND(be)
    {
        float v[7];
        int64_t ix[7], ix2[7];
        int64_t s[1] = {7};
        htensor a = wrapf(be, x, 1, s), V = wrapf(be, v, 1, s), I = wrapi(be, ix, 1, s),
                I2 = wrapi(be, ix2, 1, s);
        for (int d = 0; d < 2; d++) {
            const int64_t *want = d ? desc : asc;
            ASSERT_OK(ingot_op_sort(be, &V.t, &I.t, &a.t, 0, d == 1, NULL));
            for (int i = 0; i < 7; i++) {
                CHECK(ix[i] == want[i], "%s %s: index[%d] = %lld, want %lld",
                      ingot_backend_name(be), d ? "desc" : "asc", i, (long long)ix[i],
                      (long long)want[i]);
                CHECK(memcmp(&v[i], &x[want[i]], 4) == 0, "value[%d] is not x[%lld]", i,
                      (long long)want[i]);
            }
            ASSERT_OK(ingot_op_sort(be, NULL, &I2.t, &a.t, 0, d == 1, NULL)); /* indices only */
            ASSERT_MEM(ix, ix2, sizeof ix);
            ASSERT_OK(ingot_op_sort(be, &V.t, NULL, &a.t, 0, d == 1, NULL)); /* values only */
            ASSERT_TRUE(signbit(v[d ? 5 : 0]) && !signbit(v[d ? 6 : 1]));
        }
        ingot_error e;
        ASSERT_ST(ingot_op_sort(be, NULL, NULL, &a.t, 0, false, &e), INGOT_E_MISUSE);
        ASSERT_STR(e.where, "sort");
        ASSERT_ST(ingot_op_sort(be, &V.t, &I.t, &a.t, 1, false, &e), INGOT_E_RANGE);
        ASSERT_ST(ingot_op_sort(be, &I.t, NULL, &a.t, 0, false, &e), INGOT_E_BAD_TYPE);
        ASSERT_TRUE(strstr(e.msg, "'values'") != NULL);
        ingot_buffer_free(a.buf);
        ingot_buffer_free(V.buf);
        ingot_buffer_free(I.buf);
        ingot_buffer_free(I2.buf);
    }
}

/* ---- interface contracts ---- */

TEST(test_errors_name_op_and_operand)
{
    float a[6] = {0}, c[4] = {0}, d[6];
    EACH_BACKEND(be)
    {
        int64_t sa[2] = {2, 3}, sc[2] = {2, 2};
        htensor A = wrapf(be, a, 2, sa), C = wrapf(be, c, 2, sc), D = wrapf(be, d, 2, sa);
        ingot_error e;
        ASSERT_ST(ingot_op_binary(be, INGOT_BINARY_ADD, &D.t, &A.t, &C.t, &e), INGOT_E_BAD_SHAPE);
        ASSERT_STR(e.where, "add");
        ASSERT_TRUE(strstr(e.msg, "'b'") != NULL);
        ingot_tensor i64;
        ASSERT_OK(ingot_tensor_init(&i64, C.buf, 0, INGOT_DTYPE_I32, 2, sc, NULL));
        ASSERT_ST(ingot_op_matmul(be, &D.t, &A.t, &i64, &e), INGOT_E_BAD_TYPE);
        ASSERT_STR(e.where, "matmul");
        ASSERT_TRUE(strstr(e.msg, "'b'") && strstr(e.msg, "I32"));
        ASSERT_ST(ingot_op_reduce(be, INGOT_REDUCE_SUM, &D.t, &A.t, 5, &e), INGOT_E_RANGE);
        ASSERT_ST(ingot_op_unary(be, INGOT_UNARY_EXP, NULL, &A.t, &e), INGOT_E_MISUSE);
        ASSERT_TRUE(strstr(e.msg, "'dst'") != NULL);
        ingot_buffer_free(A.buf);
        ingot_buffer_free(C.buf);
        ingot_buffer_free(D.buf);
    }
}

TEST(test_aliasing_and_read_only)
{
    float a[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    const float ro[4] = {1, 2, 3, 4};
    EACH_BACKEND(be)
    {
        int64_t s4[1] = {4}, s2[2] = {2, 2};
        for (int i = 0; i < 8; i++) a[i] = (float)(i + 1);
        htensor A = wrapf(be, a, 1, s4);
        ingot_error e;
        /* In place with the identical view: allowed. */
        ASSERT_OK(ingot_op_unary(be, INGOT_UNARY_NEG, &A.t, &A.t, &e));
        ASSERT_TRUE(a[0] == -1 && a[3] == -4);
        /* Shifted overlap: refused. */
        ingot_tensor shifted;
        ASSERT_OK(ingot_tensor_init(&shifted, A.buf, 4, INGOT_DTYPE_F32, 1, (int64_t[]){3}, NULL));
        ingot_tensor head;
        ASSERT_OK(ingot_tensor_init(&head, A.buf, 0, INGOT_DTYPE_F32, 1, (int64_t[]){3}, NULL));
        ASSERT_ST(ingot_op_unary(be, INGOT_UNARY_NEG, &shifted, &head, &e), INGOT_E_MISUSE);
        ASSERT_TRUE(strstr(e.msg, "overlaps") && strstr(e.msg, "'a'"));
        /* matmul never in place. */
        ingot_tensor m;
        ASSERT_OK(ingot_tensor_init(&m, A.buf, 0, INGOT_DTYPE_F32, 2, s2, NULL));
        ASSERT_ST(ingot_op_matmul(be, &m, &m, &m, &e), INGOT_E_MISUSE);
        /* A read-only wrapped buffer (mapped weights) is never written. */
        ingot_buffer *rb;
        ASSERT_OK(ingot_buffer_wrap(be, ro, sizeof ro, false, &rb, &e));
        ingot_tensor R;
        ASSERT_OK(ingot_tensor_init(&R, rb, 0, INGOT_DTYPE_F32, 1, s4, NULL));
        ASSERT_ST(ingot_op_fill(be, &R, 0, &e), INGOT_E_MISUSE);
        ASSERT_TRUE(strstr(e.msg, "read-only") != NULL);
        ASSERT_ST(ingot_buffer_write(rb, 0, a, 4, &e), INGOT_E_MISUSE);
        /* A broadcast dst is refused. */
        ingot_tensor bc;
        ASSERT_OK(ingot_tensor_broadcast_to(&bc, &head, 2, (int64_t[]){2, 3}, NULL));
        ASSERT_ST(ingot_op_fill(be, &bc, 0, &e), INGOT_E_MISUSE);
        ingot_buffer_free(rb);
        ingot_buffer_free(A.buf);
    }
}

TEST(test_views_and_empty)
{
    float a[6] = {1, 2, 3, 4, 5, 6}, d[6];
    EACH_BACKEND(be)
    {
        int64_t s[2] = {2, 3};
        htensor A = wrapf(be, a, 2, s);
        ingot_tensor t, f, sl, r;
        ASSERT_OK(ingot_tensor_transpose(&t, &A.t, NULL));
        ASSERT_TRUE(!ingot_tensor_is_contiguous(&t) && t.shape[0] == 3 && t.strides[0] == 1);
        ASSERT_ST(ingot_tensor_reshape(&r, &t, 1, (int64_t[]){6}, NULL), INGOT_E_UNSUPPORTED);
        int64_t ds[2] = {3, 2};
        htensor D = wrapf(be, d, 2, ds);
        ASSERT_OK(ingot_op_copy(be, &D.t, &t, NULL));
        ASSERT_TRUE(d[0] == 1 && d[1] == 4 && d[2] == 2 && d[5] == 6);
        ASSERT_OK(ingot_tensor_flip(&f, &A.t, 1, NULL));
        ASSERT_OK(ingot_tensor_slice(&sl, &f, 1, 0, 3, 2, NULL)); /* cols 2, 0 */
        ingot_tensor d2;
        ASSERT_OK(ingot_tensor_init(&d2, D.buf, 0, INGOT_DTYPE_F32, 2, (int64_t[]){2, 2}, NULL));
        ASSERT_OK(ingot_op_copy(be, &d2, &sl, NULL));
        ASSERT_TRUE(d[0] == 3 && d[1] == 1 && d[2] == 6 && d[3] == 4);
        /* Empty tensors: every op is a no-op, even without a buffer. */
        ingot_tensor e0, e1;
        ASSERT_OK(ingot_tensor_init(&e0, NULL, 0, INGOT_DTYPE_F32, 2, (int64_t[]){0, 4}, NULL));
        ASSERT_OK(ingot_tensor_init(&e1, NULL, 0, INGOT_DTYPE_F32, 2, (int64_t[]){0, 4}, NULL));
        ASSERT_OK(ingot_op_unary(be, INGOT_UNARY_EXP, &e1, &e0, NULL));
        ASSERT_OK(ingot_op_softmax(be, &e1, &e0, 1, false, NULL));
        ASSERT_EQ(ingot_tensor_nelem(&e0), 0);
        ingot_buffer_free(A.buf);
        ingot_buffer_free(D.buf);
    }
}

TEST(test_registry_and_unsupported)
{
    ASSERT_TRUE(ingot_backend_count() >= 2);
    ASSERT_STR(ingot_backend_name_at(0), "ref");
    ASSERT_STR(ingot_backend_name_at(1), "cpu");
    ingot_error e;
    ingot_backend *b = NULL;
    ASSERT_ST(ingot_backend_new("nope", NULL, &b, &e), INGOT_E_NOT_FOUND);
    ingot_backend_opts o = {0};
    o.track_grad = true;
    ASSERT_ST(ingot_backend_new("ref", &o, &b, &e), INGOT_E_UNSUPPORTED);
    /* A backend with only float element ops: module ops are UNSUPPORTED naming the op. */
    static ingot_tensor_ops fl;
    fl = *ingot_backend_ref_ops()->float_ops;
    static const ingot_backend_ops mini = {
        .abi_version = INGOT_BACKEND_ABI, .name = "mini_test", .float_ops = &fl};
    ASSERT_OK(ingot_backend_register(&mini, &e));
    ASSERT_ST(ingot_backend_register(&mini, &e), INGOT_E_DUPLICATE);
    static const ingot_backend_ops badname = {.abi_version = 1, .name = "Bad-Name"};
    ASSERT_ST(ingot_backend_register(&badname, &e), INGOT_E_BAD_NAME);
    static const ingot_backend_ops future = {.abi_version = INGOT_BACKEND_ABI + 1, .name = "fut"};
    ASSERT_ST(ingot_backend_register(&future, &e), INGOT_E_BAD_VERSION);
    ASSERT_TRUE(ingot_backend_find("mini_test") == &mini);
    ASSERT_OK(ingot_backend_new("mini_test", NULL, &b, &e));
    float x[4] = {1, 2, 3, 4}, y[4];
    int64_t s[2] = {2, 2};
    htensor X = wrapf(b, x, 2, s), Y = wrapf(b, y, 2, s);
    ASSERT_OK(ingot_op_binary(b, INGOT_BINARY_ADD, &Y.t, &X.t, &X.t, &e));
    ASSERT_TRUE(y[3] == 8);
    ASSERT_ST(ingot_op_linear(b, &Y.t, &X.t, &X.t, NULL, &e), INGOT_E_UNSUPPORTED);
    ASSERT_TRUE(strstr(e.msg, "mini_test") && strstr(e.msg, "linear"));
    /* cat is a documented fallback (views + copy), so it works without a member. */
    int64_t cs[2] = {2, 4};
    float z[8];
    htensor Z = wrapf(b, z, 2, cs);
    const ingot_tensor *parts[2] = {&X.t, &X.t};
    ASSERT_OK(ingot_op_cat(b, &Z.t, parts, 2, 1, &e));
    ASSERT_TRUE(z[0] == 1 && z[2] == 1 && z[7] == 4);
    ingot_buffer_free(X.buf);
    ingot_buffer_free(Y.buf);
    ingot_buffer_free(Z.buf);
    ingot_backend_free(b);
}

/* A table written against ABI 1 has no sort member and no sampling table: the wrappers never
 * read them (members past its version are poisoned here), sort falls back to a full top-k and
 * the sampling ops are UNSUPPORTED. */
static ingot_status poisoned_sort(ingot_backend *b, ingot_tensor *v, ingot_tensor *i,
                                  const ingot_tensor *a, uint32_t axis, bool desc, ingot_error *e)
{
    (void)b, (void)v, (void)i, (void)a, (void)axis, (void)desc, (void)e;
    abort();
}

TEST(test_abi1_table_fallbacks)
{
    static ingot_tensor_ops fl;
    fl = *ingot_backend_ref_ops()->float_ops;
    fl.sort = poisoned_sort;
    static const ingot_sampling_ops *poison = (const ingot_sampling_ops *)(uintptr_t)1;
    static ingot_backend_ops v1;
    v1 = *ingot_backend_ref_ops();
    v1.abi_version = 1;
    v1.name = "abi1_test";
    v1.float_ops = &fl;
    v1.sampling_ops = poison;
    ingot_error e;
    ASSERT_OK(ingot_backend_register(&v1, &e));
    ingot_backend *b = NULL;
    ASSERT_OK(ingot_backend_new("abi1_test", NULL, &b, &e));
    float x[6] = {2, 9, 2, 1, 5, 9}, v[6];
    int64_t ix[6], s[2] = {2, 3};
    htensor X = wrapf(b, x, 2, s), V = wrapf(b, v, 2, s), I = wrapi(b, ix, 2, s);
    ASSERT_OK(ingot_op_sort(b, &V.t, &I.t, &X.t, 1, true, &e)); /* via topk */
    ASSERT_TRUE(v[0] == 9 && v[1] == 2 && v[2] == 2 && ix[1] == 0 && ix[2] == 2);
    ASSERT_TRUE(v[3] == 9 && v[5] == 1 && ix[3] == 2 && ix[5] == 0);
    ASSERT_OK(ingot_op_sort(b, &V.t, &I.t, &X.t, 0, false, &e)); /* another axis, via views */
    ASSERT_TRUE(v[0] == 1 && v[3] == 2 && ix[0] == 1 && ix[3] == 0 && v[1] == 5 && ix[4] == 0);
    ASSERT_ST(ingot_op_sort(b, NULL, &I.t, &X.t, 1, true, &e), INGOT_E_UNSUPPORTED);
    ASSERT_ST(ingot_op_top_p(b, &V.t, NULL, &X.t, 0.5, false, &e), INGOT_E_UNSUPPORTED);
    ASSERT_TRUE(strstr(e.msg, "top_p") && strstr(e.msg, "sampling") && strstr(e.msg, "abi1_test"));
    ASSERT_ST(ingot_op_multinomial(b, &I.t, &X.t, &e), INGOT_E_UNSUPPORTED);
    ingot_buffer_free(X.buf);
    ingot_buffer_free(V.buf);
    ingot_buffer_free(I.buf);
    ingot_backend_free(b);
}

TEST(test_tensor_from_file_zero_copy)
{
    ingot_writer_opts wo = {0};
    wo.no_fsync = true;
    ingot_writer *w = NULL;
    ingot_error e;
    ASSERT_OK(ingot_writer_new(&wo, &w, &e));
    float data[6] = {1, 2, 3, 4, 5, 6};
    uint64_t shape[2] = {2, 3};
    ASSERT_OK(ingot_writer_add_tensor(w, "w", INGOT_DTYPE_F32, 2, shape, NULL, data, &e));
    const char *path = INGOT_BINARY_DIR "/test_backend_traps.ingot";
    ASSERT_OK(ingot_writer_save(w, path, &e));
    ingot_writer_free(w);
    ingot_file *f = NULL;
    ASSERT_OK(ingot_file_open(path, NULL, &f, &e));
    ingot_tensor_info ti;
    ASSERT_OK(ingot_file_tensor_find(f, "w", &ti));
    EACH_BACKEND(be)
    {
        ingot_tensor t;
        ingot_buffer *buf = NULL;
        ASSERT_OK(ingot_tensor_from_file(be, f, "w", &t, &buf, &e));
        ASSERT_TRUE(ingot_tensor_host(&t) == ti.data); /* zero copy */
        ASSERT_TRUE(!ingot_buffer_writable(buf));
        ingot_buffer_free(buf);
        ASSERT_ST(ingot_tensor_from_file(be, f, "missing", &t, &buf, &e), INGOT_E_NOT_FOUND);
        ASSERT_TRUE(buf == NULL);
    }
    ingot_file_close(f);
    remove(path);
}

RUN_TESTS(T(test_trap_gelu_tanh_vs_erf), T(test_trap_rope_interleaved_vs_half),
          T(test_trap_linear_out_in_layout), T(test_trap_causal_mask_kv_cache),
          T(test_trap_softmax_all_neg_inf), T(test_trap_topk_ties),
          T(test_trap_argmax_first_index_greedy), T(test_trap_top_p_mass_before_at_least_one_ties),
          T(test_sort_stable_nan_and_outputs), T(test_errors_name_op_and_operand),
          T(test_aliasing_and_read_only), T(test_views_and_empty),
          T(test_registry_and_unsupported), T(test_abi1_table_fallbacks),
          T(test_tensor_from_file_zero_copy))
