/*
 * test_backend_cpu.c - the "cpu" backend's kernel routes (src/backend/cpu/cpu.c) at sizes the
 * golden file does not hold: f32 linear (GEMV for one row, the GEMM's small-M and blocked paths
 * above, threaded), batched matmul, Q8_0 and per-row int8 linear (short and long rows, -128 weights),
 * with contiguous, transposed, strided and flipped operands. Each result is compared with "ref"
 * (itself checked against torch by test_backend_conformance), checked bit-identical for 1, 2 and
 * 3 threads, and the f32 paths are checked to allocate nothing; the instance runs one pool. Also
 * attention (cpu_attention.c) against ref; RMSNorm, SiLU and row copies (cpu_rowops.c).
 */
#include <dirent.h>
#include <math.h>

#include "harness.h"
#include "ingot/backend.h"

static uint32_t seed = 12345;
static float frand(void)
{
    seed = seed * 1664525u + 1013904223u;
    return (float)(seed >> 8) * (2.0f / 16777216.0f) - 1.0f;
}

static size_t n_allocs;
static void *count_alloc(void *ctx, size_t n, size_t align)
{
    (void)ctx;
    (void)align;
    n_allocs++;
    return aligned_alloc(64, (n + 63) / 64 * 64);
}
static void count_free(void *ctx, void *p, size_t n)
{
    (void)ctx;
    (void)n;
    free(p);
}
static const ingot_allocator counting = {count_alloc, count_free, NULL};

/* One op on one backend: the inputs live in host arrays wrapped as buffers, each with its own
 * view (shape, strides, element offset), the output is a view of a zeroed array. */
typedef struct opnd {
    ingot_dtype dt;
    uint32_t rank;
    int64_t shape[4], strides[4], off; /* strides 0 entries: contiguous */
    void *data;
    size_t bytes;
} opnd;

typedef enum { OP_LINEAR, OP_MATMUL, OP_QLINEAR } opkind;

typedef struct gcase {
    const char *name;
    opkind op;
    opnd in[4];
    int nin;
    opnd out;
    double limit;
    bool in_place; /* f32 operands the kernels read and write through their strides */
} gcase;

static ingot_status view_of(ingot_backend *b, const opnd *o, ingot_buffer **buf, ingot_tensor *t,
                            bool writable)
{
    ingot_error e;
    ingot_status st = ingot_buffer_wrap(b, o->data, o->bytes, writable, buf, &e);
    if (st != INGOT_OK) return st;
    size_t es = o->dt == INGOT_DTYPE_I8 ? 1 : 4;
    bool strided = o->strides[0] != 0;
    if (o->dt == INGOT_DTYPE_Q8_0 || !strided)
        return ingot_tensor_init(t, *buf, (uint64_t)o->off * es, o->dt, o->rank, o->shape, &e);
    return ingot_tensor_init_strided(t, *buf, (uint64_t)o->off * es, o->dt, o->rank, o->shape,
                                     o->strides, &e);
}

/* Runs the case, leaving the output in out (host bytes of c->out). */
static ingot_status run_case(ingot_backend *b, const gcase *c, void *out)
{
    ingot_buffer *bufs[5] = {0};
    ingot_tensor t[5];
    ingot_status st = INGOT_OK;
    for (int i = 0; i < c->nin && st == INGOT_OK; i++) st = view_of(b, &c->in[i], &bufs[i], &t[i], false);
    opnd o = c->out;
    o.data = out;
    memset(out, 0, o.bytes);
    if (st == INGOT_OK) st = view_of(b, &o, &bufs[4], &t[4], true);
    ingot_error e;
    if (st == INGOT_OK) {
        switch (c->op) {
        case OP_LINEAR: st = ingot_op_linear(b, &t[4], &t[0], &t[1], c->nin > 2 ? &t[2] : NULL, &e); break;
        case OP_MATMUL: st = ingot_op_matmul(b, &t[4], &t[0], &t[1], &e); break;
        case OP_QLINEAR:
            st = ingot_op_qlinear(b, &t[4], &t[0], &t[1], c->in[1].dt == INGOT_DTYPE_I8 ? &t[2] : NULL,
                                  c->nin > 3 ? &t[3] : NULL, &e);
            break;
        }
        if (st != INGOT_OK) {
            char msg[300];
            fprintf(stderr, "  %s: %s\n", c->name, ingot_error_format(&e, msg, sizeof msg));
        }
    }
    for (int i = 0; i < 5; i++) ingot_buffer_free(bufs[i]);
    return st;
}

static float *fbuf(size_t n)
{
    float *p = malloc(n * 4);
    for (size_t i = 0; i < n; i++) p[i] = frand();
    return p;
}

static opnd dense2(ingot_dtype dt, int64_t r, int64_t c, void *data)
{
    opnd o = {dt, 2, {r, c}, {0}, 0, data, (size_t)(r * c) * (dt == INGOT_DTYPE_I8 ? 1 : 4)};
    if (dt == INGOT_DTYPE_Q8_0) o.bytes = (size_t)(r * c / 32 * 34);
    return o;
}

static opnd vec(int64_t n, float *data)
{
    opnd o = {INGOT_DTYPE_F32, 1, {n}, {0}, 0, data, (size_t)n * 4};
    return o;
}

/* Per-row int8 weights (scale = max|row| / 127) with some -128 entries. */
static void quant_i8(const float *w, int64_t rows, int64_t cols, int8_t *q, float *s, bool min128)
{
    for (int64_t r = 0; r < rows; r++) {
        float amax = 0;
        for (int64_t k = 0; k < cols; k++) amax = fmaxf(amax, fabsf(w[r * cols + k]));
        s[r] = amax / 127.0f;
        for (int64_t k = 0; k < cols; k++)
            q[r * cols + k] = (int8_t)roundf(s[r] ? w[r * cols + k] / s[r] : 0);
        if (min128 && r % 3 == 1)
            for (int64_t k = 0; k < cols; k += 5) q[r * cols + k] = -128;
    }
}

/* Q8_0 blocks as ggml: d = max|x| / 127 as f16, q = round(x / d). Written by ref's quantize. */
static void quant_q8(const float *w, int64_t rows, int64_t cols, void *out)
{
    ingot_backend *b = NULL;
    ingot_backend_new("ref", NULL, &b, NULL);
    ingot_buffer *wb = NULL, *qb = NULL;
    ingot_tensor wt, qt;
    ingot_buffer_wrap(b, w, (size_t)(rows * cols) * 4, false, &wb, NULL);
    ingot_buffer_wrap(b, out, (size_t)(rows * cols / 32 * 34), true, &qb, NULL);
    int64_t s[2] = {rows, cols};
    ingot_tensor_init(&wt, wb, 0, INGOT_DTYPE_F32, 2, s, NULL);
    ingot_tensor_init(&qt, qb, 0, INGOT_DTYPE_Q8_0, 2, s, NULL);
    ingot_op_quantize(b, &qt, NULL, &wt, NULL);
    ingot_buffer_free(wb);
    ingot_buffer_free(qb);
    ingot_backend_free(b);
}

#define MAXC 24
static gcase cases[MAXC];
static int ncases;
static void *owned[256];
static int nowned;
static void *keep(void *p)
{
    owned[nowned++] = p;
    return p;
}

static void linear_case(const char *name, int64_t M, int64_t K, int64_t N, int xview, int wview,
                        int yview, bool bias)
{
    gcase *c = &cases[ncases++];
    c->name = name;
    c->op = OP_LINEAR;
    c->limit = 1e-7;
    c->in_place = xview == 0 && yview != 2;
    /* x: 0 contiguous, 1 every other element of a twice as long row, 2 reversed rows */
    float *x = keep(fbuf((size_t)(M * K * 2)));
    c->in[0] = dense2(INGOT_DTYPE_F32, M, K, x);
    c->in[0].bytes *= 2;
    if (xview == 1) c->in[0].strides[0] = 2 * K, c->in[0].strides[1] = 2;
    if (xview == 2) c->in[0].strides[0] = K, c->in[0].strides[1] = -1, c->in[0].off = K - 1;
    /* w: 0 [N, K] row-major, 1 stored [K, N] and viewed transposed (column-major) */
    float *w = keep(fbuf((size_t)(N * K)));
    c->in[1] = dense2(INGOT_DTYPE_F32, N, K, w);
    if (wview == 1) c->in[1].strides[0] = 1, c->in[1].strides[1] = N;
    c->nin = 2;
    if (bias) c->in[c->nin++] = vec(N, keep(fbuf((size_t)N)));
    /* y: 0 contiguous, 1 rows of a wider array (row stride N + 3), 2 transposed storage */
    c->out = dense2(INGOT_DTYPE_F32, M, N, NULL);
    c->out.bytes = (size_t)(M * (N + 3)) * 4;
    if (yview == 1) c->out.strides[0] = N + 3, c->out.strides[1] = 1;
    if (yview == 2) c->out.strides[0] = 1, c->out.strides[1] = M;
}

static void matmul_case(const char *name, int64_t B, int64_t M, int64_t K, int64_t N, int aview,
                        int bview)
{
    gcase *c = &cases[ncases++];
    c->name = name;
    c->op = OP_MATMUL;
    c->limit = 1e-7;
    c->in_place = aview != 2;
    c->nin = 2;
    opnd a = {INGOT_DTYPE_F32, 3, {B, M, K}, {0}, 0, keep(fbuf((size_t)(B * M * K))),
              (size_t)(B * M * K) * 4};
    if (aview == 1) a.strides[0] = M * K, a.strides[1] = 1, a.strides[2] = M; /* transposed */
    if (aview == 2) a.strides[0] = M * K, a.strides[1] = K, a.strides[2] = -1, a.off = K - 1;
    opnd b = {INGOT_DTYPE_F32, 2, {K, N}, {0}, 0, keep(fbuf((size_t)(K * N))), (size_t)(K * N) * 4};
    if (bview == 1) b.strides[0] = 1, b.strides[1] = K; /* transposed */
    c->in[0] = a;
    c->in[1] = b;
    opnd o = {INGOT_DTYPE_F32, 3, {B, M, N}, {0}, 0, NULL, (size_t)(B * M * N) * 4};
    c->out = o;
}

static void qlinear_case(const char *name, bool q8, int64_t M, int64_t K, int64_t N, bool min128)
{
    gcase *c = &cases[ncases++];
    c->name = name;
    c->op = OP_QLINEAR;
    c->limit = 5e-4;
    float *w = keep(fbuf((size_t)(N * K)));
    c->in[0] = dense2(INGOT_DTYPE_F32, M, K, keep(fbuf((size_t)(M * K))));
    if (q8) {
        void *q = keep(malloc((size_t)(N * K / 32 * 34)));
        quant_q8(w, N, K, q);
        c->in[1] = dense2(INGOT_DTYPE_Q8_0, N, K, q);
        c->in[2] = vec(N, keep(fbuf((size_t)N)));
        c->in[3] = vec(N, keep(fbuf((size_t)N)));
        c->nin = 4;
    } else {
        int8_t *q = keep(malloc((size_t)(N * K)));
        float *s = keep(malloc((size_t)N * 4));
        quant_i8(w, N, K, q, s, min128);
        c->in[1] = dense2(INGOT_DTYPE_I8, N, K, q);
        c->in[2] = vec(N, s);
        c->in[3] = vec(N, keep(fbuf((size_t)N)));
        c->nin = 4;
    }
    c->out = dense2(INGOT_DTYPE_F32, M, N, NULL);
}

static void build_cases(void)
{
    if (ncases) return;
    linear_case("linear 1x600->70", 1, 600, 70, 0, 0, 0, true);
    linear_case("linear 5x600->70 wT", 5, 600, 70, 0, 1, 0, true);
    linear_case("linear 8x300->33 x strided", 8, 300, 33, 1, 0, 1, false);
    linear_case("linear 9x300->33 gemm", 9, 300, 33, 0, 0, 0, true);
    linear_case("linear 40x600->70 gemm threaded", 40, 600, 70, 0, 0, 0, true);
    linear_case("linear 40x600->70 wT y wide", 40, 600, 70, 0, 1, 1, true);
    linear_case("linear 17x130->45 x flipped y transposed", 17, 130, 45, 2, 0, 2, true);
    matmul_case("matmul 3x37x290x45", 3, 37, 290, 45, 0, 0);
    matmul_case("matmul 2x30x200x50 aT bT", 2, 30, 200, 50, 1, 1);
    matmul_case("matmul 4x1x64x90 rows", 4, 1, 64, 90, 0, 0);
    matmul_case("matmul 4x1x64x90 rows bT", 4, 1, 64, 90, 0, 1);
    matmul_case("matmul 2x20x50x30 a flipped", 2, 20, 50, 30, 2, 0);
    qlinear_case("q8_0 1x1024->96", true, 1, 1024, 96, false);
    qlinear_case("q8_0 7x1024->96", true, 7, 1024, 96, false);
    qlinear_case("q8_0 2x16416->6 long rows", true, 2, 16416, 6, false);
    qlinear_case("i8 1x700->64", false, 1, 700, 64, false);
    qlinear_case("i8 6x700->64 with -128", false, 6, 700, 64, true);
}

static double nmse(const float *want, const float *got, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        num += ((double)want[i] - got[i]) * ((double)want[i] - got[i]);
        den += (double)want[i] * want[i];
    }
    return den > 0 ? num / den : num;
}

TEST(test_cpu_routes_match_ref_and_thread_count)
{
    build_cases();
    ingot_backend *ref = NULL, *cpu[3] = {0};
    ASSERT_OK(ingot_backend_new("ref", NULL, &ref, NULL));
    for (int t = 0; t < 3; t++) {
        ingot_backend_opts o = {0};
        o.threads = (uint32_t)t + 1;
        ASSERT_OK(ingot_backend_new("cpu", &o, &cpu[t], NULL));
    }
    for (int i = 0; i < ncases; i++) {
        const gcase *c = &cases[i];
        size_t n = c->out.bytes;
        float *want = malloc(n), *got[3];
        ASSERT_OK(run_case(ref, c, want));
        for (int t = 0; t < 3; t++) {
            got[t] = malloc(n);
            ASSERT_OK(run_case(cpu[t], c, got[t]));
        }
        double e = nmse(want, got[0], n / 4);
        CHECK(e <= c->limit, "%s: cpu NMSE %.3g against ref > %.3g", c->name, e, c->limit);
        CHECK(memcmp(got[0], got[1], n) == 0, "%s: 1 and 2 threads differ", c->name);
        CHECK(memcmp(got[0], got[2], n) == 0, "%s: 1 and 3 threads differ", c->name);
        free(want);
        for (int t = 0; t < 3; t++) free(got[t]);
    }
    ingot_backend_free(ref);
    for (int t = 0; t < 3; t++) ingot_backend_free(cpu[t]);
}

/* f32 linear and matmul whose operands the kernels read in place (row-major or transposed)
 * allocate nothing (the GEMM's packing buffers come with the instance), even on the first call. */
TEST(test_cpu_f32_paths_do_not_allocate)
{
    build_cases();
    ingot_backend_opts o = {0};
    o.allocator = &counting;
    o.threads = 2;
    ingot_backend *b = NULL;
    ASSERT_OK(ingot_backend_new("cpu", &o, &b, NULL));
    for (int i = 0; i < ncases; i++) {
        const gcase *c = &cases[i];
        if (!c->in_place) continue;
        float *got = malloc(c->out.bytes);
        /* Buffer wraps allocate their handles: count only inside the op. */
        ingot_buffer *bufs[5] = {0};
        ingot_tensor t[5];
        for (int k = 0; k < c->nin; k++) ASSERT_OK(view_of(b, &c->in[k], &bufs[k], &t[k], false));
        opnd out = c->out;
        out.data = got;
        ASSERT_OK(view_of(b, &out, &bufs[4], &t[4], true));
        size_t before = n_allocs;
        if (c->op == OP_LINEAR)
            ASSERT_OK(ingot_op_linear(b, &t[4], &t[0], &t[1], c->nin > 2 ? &t[2] : NULL, NULL));
        else
            ASSERT_OK(ingot_op_matmul(b, &t[4], &t[0], &t[1], NULL));
        CHECK(n_allocs == before, "%s allocated %zu times", c->name, n_allocs - before);
        for (int k = 0; k < 5; k++) ingot_buffer_free(bufs[k]);
        free(got);
    }
    ingot_backend_free(b);
}

#ifdef __linux__
static int count_threads(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') n++;
    closedir(d);
    return n;
}
#endif

/* One pool per instance: threads - 1 workers, whatever ops run (the kernels get the
 * instance's pool, never one of their own). */
TEST(test_cpu_one_pool)
{
#ifdef __linux__
    build_cases();
    int before = count_threads();
    ingot_backend_opts o = {0};
    o.threads = 3;
    ingot_backend *b = NULL;
    ASSERT_OK(ingot_backend_new("cpu", &o, &b, NULL));
    ASSERT_EQ(ingot_backend_threads(b), 3);
    ASSERT_EQ(count_threads(), before + 2);
    for (int i = 0; i < ncases; i++) {
        float *got = malloc(cases[i].out.bytes);
        ASSERT_OK(run_case(b, &cases[i], got));
        free(got);
    }
    ASSERT_EQ(count_threads(), before + 2);
    ingot_backend_free(b);
    ASSERT_EQ(count_threads(), before);
#endif
}

/* Attention on cpu (online softmax over key blocks) against ref at sizes the goldens do not
 * hold: several key blocks, grouped heads, causal with queries offset into the keys, a value
 * width that is not a multiple of 8, strided (non-contiguous) head axes as the LM runtime passes
 * its KV cache; bit-identical for 1/2/3 threads; no allocation. */
static void attn_case(int B, int H, int Hk, int Lq, int Lk, int D, int Dv, bool causal)
{
    size_t nq = (size_t)B * H * Lq * D, nk = (size_t)B * Hk * Lk * D, nv = (size_t)B * Hk * Lk * Dv,
           nd = (size_t)B * H * Lq * Dv;
    float *q = malloc(nq * 4), *k = malloc(2 * nk * 4), *v = malloc(nv * 4), *want = malloc(nd * 4);
    for (size_t i = 0; i < nq; i++) q[i] = frand();
    for (size_t i = 0; i < 2 * nk; i++) k[i] = frand();
    for (size_t i = 0; i < nv; i++) v[i] = frand();
    /* k is stored [B, Hk, 2*Lk, D] and viewed with a head stride of 2*Lk*D (a cache) */
    int64_t qs[4] = {B, H, Lq, D}, ks[4] = {B, Hk, Lk, D}, kst[4] = {(int64_t)Hk * 2 * Lk * D,
                                                                       2 * (int64_t)Lk * D, D, 1},
            vs[4] = {B, Hk, Lk, Dv}, ds[4] = {B, H, Lq, Dv};
    ingot_attn_params p = {0};
    p.causal = causal;
    float *got[3];
    for (int t = -1; t < 3; t++) {
        ingot_backend_opts o = {0};
        o.threads = t < 0 ? 0 : (uint32_t)t + 1;
        o.allocator = &counting;
        ingot_backend *b = NULL;
        ASSERT_OK(ingot_backend_new(t < 0 ? "ref" : "cpu", &o, &b, NULL));
        ingot_buffer *bq, *bk, *bv, *bd;
        float *out = t < 0 ? want : (got[t] = malloc(nd * 4));
        ASSERT_OK(ingot_buffer_wrap(b, q, nq * 4, false, &bq, NULL));
        ASSERT_OK(ingot_buffer_wrap(b, k, 2 * nk * 4, false, &bk, NULL));
        ASSERT_OK(ingot_buffer_wrap(b, v, nv * 4, false, &bv, NULL));
        ASSERT_OK(ingot_buffer_wrap(b, out, nd * 4, true, &bd, NULL));
        ingot_tensor tq, tk, tv, td;
        ASSERT_OK(ingot_tensor_init(&tq, bq, 0, INGOT_DTYPE_F32, 4, qs, NULL));
        ASSERT_OK(ingot_tensor_init_strided(&tk, bk, 0, INGOT_DTYPE_F32, 4, ks, kst, NULL));
        ASSERT_OK(ingot_tensor_init(&tv, bv, 0, INGOT_DTYPE_F32, 4, vs, NULL));
        ASSERT_OK(ingot_tensor_init(&td, bd, 0, INGOT_DTYPE_F32, 4, ds, NULL));
        size_t before = n_allocs;
        ASSERT_OK(ingot_op_attention(b, &td, &tq, &tk, &tv, &p, NULL));
        if (t >= 0) CHECK(n_allocs == before, "attention allocated %zu times", n_allocs - before);
        ingot_buffer_free(bq);
        ingot_buffer_free(bk);
        ingot_buffer_free(bv);
        ingot_buffer_free(bd);
        ingot_backend_free(b);
    }
    double e = nmse(want, got[0], nd);
    CHECK(e <= 1e-11, "attention %dx%dx%dx%d/%d keys %d: NMSE %.3g", B, H, Lq, D, Hk, Lk, e);
    CHECK(!memcmp(got[0], got[1], nd * 4) && !memcmp(got[0], got[2], nd * 4),
          "attention: thread counts differ");
    for (int t = 0; t < 3; t++) free(got[t]);
    free(q);
    free(k);
    free(v);
    free(want);
}

TEST(test_cpu_attention_matches_ref)
{
    attn_case(1, 8, 4, 1, 300, 8, 8, true);     /* decode: one query over 5 key blocks */
    attn_case(2, 6, 2, 7, 150, 16, 20, true);   /* prefill rows offset into the keys */
    attn_case(1, 4, 4, 33, 33, 32, 32, true);   /* square causal */
    attn_case(1, 2, 1, 5, 130, 12, 3, false);   /* not causal, odd widths */
    attn_case(1, 2, 1, 9, 4, 8, 8, false);      /* more queries than keys, not causal */
    /* causal prefill blocks (AVX-512: 16 query rows x 16 keys): grouped heads, offset, tails */
    attn_case(2, 8, 2, 40, 70, 64, 64, true);
    attn_case(1, 2, 1, 16, 16, 48, 16, true);
    attn_case(1, 4, 1, 17, 300, 16, 32, true);
}

/* A query row's bits do not depend on the rows it is computed with: the last 16 rows of a
 * 40-row causal prefill over 70 keys, computed alone, are the same bits (the blocked kernel
 * groups rows 16 at a time from the first). */
TEST(test_cpu_attention_rows_independent)
{
    enum { H = 4, Hk = 2, Lq = 40, Lk = 70, D = 64 };
    float *q = malloc(H * Lq * D * 4), *k = malloc(Hk * Lk * D * 4), *v = malloc(Hk * Lk * D * 4);
    float *full = malloc(H * Lq * D * 4), *part = malloc(H * 16 * D * 4);
    for (int i = 0; i < H * Lq * D; i++) q[i] = frand() * 2;
    for (int i = 0; i < Hk * Lk * D; i++) k[i] = frand() * 2, v[i] = frand();
    ingot_backend *b = NULL;
    ASSERT_OK(ingot_backend_new("cpu", NULL, &b, NULL));
    ingot_attn_params p = {0};
    p.causal = true;
    for (int pass = 0; pass < 2; pass++) {
        int64_t lq = pass ? 16 : Lq, row0 = Lq - lq;
        ingot_buffer *bq, *bk, *bv, *bd;
        ASSERT_OK(ingot_buffer_wrap(b, q, H * Lq * D * 4, false, &bq, NULL));
        ASSERT_OK(ingot_buffer_wrap(b, k, Hk * Lk * D * 4, false, &bk, NULL));
        ASSERT_OK(ingot_buffer_wrap(b, v, Hk * Lk * D * 4, false, &bv, NULL));
        ASSERT_OK(ingot_buffer_wrap(b, pass ? part : full, (size_t)(H * lq * D * 4), true, &bd,
                                    NULL));
        int64_t qs[4] = {1, H, lq, D}, qst[4] = {H * Lq * D, Lq * D, D, 1};
        int64_t ks[4] = {1, Hk, Lk, D}, ds[4] = {1, H, lq, D};
        ingot_tensor tq, tk, tv, td;
        ASSERT_OK(ingot_tensor_init_strided(&tq, bq, (uint64_t)(row0 * D * 4), INGOT_DTYPE_F32, 4,
                                            qs, qst, NULL));
        ASSERT_OK(ingot_tensor_init(&tk, bk, 0, INGOT_DTYPE_F32, 4, ks, NULL));
        ASSERT_OK(ingot_tensor_init(&tv, bv, 0, INGOT_DTYPE_F32, 4, ks, NULL));
        ASSERT_OK(ingot_tensor_init(&td, bd, 0, INGOT_DTYPE_F32, 4, ds, NULL));
        ASSERT_OK(ingot_op_attention(b, &td, &tq, &tk, &tv, &p, NULL));
        ingot_buffer_free(bq);
        ingot_buffer_free(bk);
        ingot_buffer_free(bv);
        ingot_buffer_free(bd);
    }
    for (int h = 0; h < H; h++)
        CHECK(!memcmp(part + h * 16 * D, full + (h * Lq + Lq - 16) * D, 16 * D * 4),
              "head %d: rows computed alone differ from the same rows in the full prefill", h);
    ingot_backend_free(b);
    free(q);
    free(k);
    free(v);
    free(full);
    free(part);
}

/* The per-row routes (cpu_rowops.c) give ref's values bit for bit: binary with same-shape and
 * scalar operands (in place: test_cpu_binary_in_place), binary_scalar, and RoPE in both pairings
 * on a strided head view. */
TEST(test_cpu_rowops_equal_ref)
{
    enum { H = 3, S = 5, D = 12, N = 40000 };
    float *a = malloc(N * 4), *c = malloc(N * 4), *r1 = malloc(N * 4), *r2 = malloc(N * 4);
    for (int i = 0; i < N; i++) a[i] = frand() * 3, c[i] = frand() + (i % 7 ? 0.0f : 2.0f);
    ingot_backend *be[2];
    ASSERT_OK(ingot_backend_new("ref", NULL, &be[0], NULL));
    ASSERT_OK(ingot_backend_new("cpu", NULL, &be[1], NULL));
    float *out[2] = {r1, r2};
    for (int op = INGOT_BINARY_ADD; op <= INGOT_BINARY_DIV; op++)
        for (int scalar = 0; scalar < 3; scalar++) {
            for (int k = 0; k < 2; k++) {
                ingot_buffer *ba, *bc, *bd;
                ASSERT_OK(ingot_buffer_wrap(be[k], a, N * 4, false, &ba, NULL));
                ASSERT_OK(ingot_buffer_wrap(be[k], c, N * 4, false, &bc, NULL));
                ASSERT_OK(ingot_buffer_wrap(be[k], out[k], N * 4, true, &bd, NULL));
                ingot_tensor ta, tc, td;
                int64_t sh[1] = {N}, one[1] = {1};
                ASSERT_OK(ingot_tensor_init(&ta, ba, 0, INGOT_DTYPE_F32, 1, sh, NULL));
                ASSERT_OK(ingot_tensor_init(&tc, bc, 0, INGOT_DTYPE_F32, 1, scalar == 1 ? one : sh,
                                            NULL));
                ASSERT_OK(ingot_tensor_init(&td, bd, 0, INGOT_DTYPE_F32, 1, sh, NULL));
                if (scalar == 2)
                    ASSERT_OK(ingot_op_binary_scalar(be[k], (ingot_binary_op)op, &td, &ta, 0.1,
                                                     NULL));
                else
                    ASSERT_OK(ingot_op_binary(be[k], (ingot_binary_op)op, &td, &ta, &tc, NULL));
                ingot_buffer_free(ba);
                ingot_buffer_free(bc);
                ingot_buffer_free(bd);
            }
            CHECK(!memcmp(r1, r2, N * 4), "binary op %d (scalar %d): cpu differs from ref", op,
                  scalar);
        }
    for (int mode = 0; mode < 2; mode++) {
        int32_t pos[S] = {0, 1, 7, 100, 4095};
        for (int k = 0; k < 2; k++) {
            ingot_buffer *bx, *bp, *bd;
            ASSERT_OK(ingot_buffer_wrap(be[k], a, N * 4, false, &bx, NULL));
            ASSERT_OK(ingot_buffer_wrap(be[k], pos, sizeof pos, false, &bp, NULL));
            ASSERT_OK(ingot_buffer_wrap(be[k], out[k], N * 4, true, &bd, NULL));
            /* rows of [S, H*D] viewed as [H, S, D] */
            int64_t sh[3] = {H, S, D}, st[3] = {D, H * D, 1}, ps[1] = {S};
            ingot_tensor tx, tp, td;
            ASSERT_OK(ingot_tensor_init_strided(&tx, bx, 0, INGOT_DTYPE_F32, 3, sh, st, NULL));
            ASSERT_OK(ingot_tensor_init(&tp, bp, 0, INGOT_DTYPE_I32, 1, ps, NULL));
            ASSERT_OK(ingot_tensor_init_strided(&td, bd, 0, INGOT_DTYPE_F32, 3, sh, st, NULL));
            ASSERT_OK(ingot_op_rope(be[k], &td, &tx, &tp, 10000.0, (ingot_rope_mode)mode, NULL));
            ingot_buffer_free(bx);
            ingot_buffer_free(bp);
            ingot_buffer_free(bd);
        }
        CHECK(!memcmp(r1, r2, (size_t)H * S * D * 4), "rope mode %d: cpu differs from ref", mode);
    }
    ingot_backend_free(be[0]);
    ingot_backend_free(be[1]);
    free(a);
    free(c);
    free(r1);
    free(r2);
}

/* Same-shape binary ops updating an operand in place (d = a or d = c: the runtime's residual adds
 * and gate products) at the scalar level and the CPU's best, lengths with every tail past the
 * eight-lane steps: ref's bits. */
TEST(test_cpu_binary_in_place)
{
    enum { N = 2816 + 7 };
    float a[N], c[N], d[2][N];
    for (int i = 0; i < N; i++) a[i] = frand() * 3, c[i] = frand() + (i % 7 ? 0.0f : 2.0f);
    ingot_backend *be[2];
    ASSERT_OK(ingot_backend_new("ref", NULL, &be[0], NULL));
    ASSERT_OK(ingot_backend_new("cpu", NULL, &be[1], NULL));
    ingot_cpu_isa best = ingot_cpu_isa_current(), lv[2] = {INGOT_CPU_ISA_SCALAR, best};
    int checks = 0;
    for (int li = 0; li < 2; li++) {
        ingot_cpu_isa_set_cap(lv[li]);
        for (int op = INGOT_BINARY_ADD; op <= INGOT_BINARY_DIV; op++)
            for (int which = 0; which < 2; which++) /* d = a, d = c */
                for (int n = N - 8; n <= N; n++) {
                    for (int k = 0; k < 2; k++) {
                        memcpy(d[k], which ? c : a, (size_t)n * 4);
                        ingot_buffer *bo, *bd;
                        ASSERT_OK(ingot_buffer_wrap(be[k], which ? a : c, (size_t)n * 4, false,
                                                    &bo, NULL));
                        ASSERT_OK(ingot_buffer_wrap(be[k], d[k], (size_t)n * 4, true, &bd, NULL));
                        ingot_tensor to, td;
                        int64_t sh[1] = {n};
                        ASSERT_OK(ingot_tensor_init(&to, bo, 0, INGOT_DTYPE_F32, 1, sh, NULL));
                        ASSERT_OK(ingot_tensor_init(&td, bd, 0, INGOT_DTYPE_F32, 1, sh, NULL));
                        ASSERT_OK(ingot_op_binary(be[k], (ingot_binary_op)op, &td,
                                                  which ? &to : &td, which ? &td : &to, NULL));
                        ingot_buffer_free(bo);
                        ingot_buffer_free(bd);
                    }
                    CHECK(!memcmp(d[0], d[1], (size_t)n * 4),
                          "level %d binary op %d in place (d = %s), %d elements: cpu differs "
                          "from ref", (int)lv[li], op, which ? "c" : "a", n);
                    checks++;
                }
    }
    ingot_cpu_isa_set_cap(best);
    CHECK(checks == 2 * 4 * 2 * 9, "checks %d", checks);
    ingot_backend_free(be[0]);
    ingot_backend_free(be[1]);
}

/* cast f32 -> f16 and f16 -> f32 (cpu_rowops.c: the f16 KV cache's stores and widenings) give
 * ref's bits at the scalar level and the CPU's best: every f16 pattern widened; narrowed, every
 * half's f32 value, its neighbours and the ties and near-ties above it, a sweep of the f32
 * patterns, signaling and quiet NaNs; flat and as strided [heads, positions, head] views with
 * rows of 37 (tails past the eight-lane steps). */
static ingot_status cast_on(ingot_backend *be, ingot_dtype dt, ingot_dtype st, void *dst,
                            const void *src, int64_t n, bool strided)
{
    size_t ed = dt == INGOT_DTYPE_F16 ? 2 : 4, es = st == INGOT_DTYPE_F16 ? 2 : 4;
    ingot_buffer *bs, *bd;
    ingot_status r = ingot_buffer_wrap(be, (void *)src, (size_t)n * es, false, &bs, NULL);
    if (r != INGOT_OK) return r;
    r = ingot_buffer_wrap(be, dst, (size_t)n * ed, true, &bd, NULL);
    if (r != INGOT_OK) {
        ingot_buffer_free(bs);
        return r;
    }
    ingot_tensor ts, td;
    if (strided) { /* [3, P, 37] inside rows of 40 (source) and 41 (destination) elements */
        int64_t P = n / (3 * 41), sh[3] = {3, P, 37}, ss[3] = {P * 40, 40, 1},
                ds[3] = {P * 41, 41, 1};
        r = ingot_tensor_init_strided(&ts, bs, 0, st, 3, sh, ss, NULL);
        if (r == INGOT_OK) r = ingot_tensor_init_strided(&td, bd, 0, dt, 3, sh, ds, NULL);
    } else {
        int64_t sh[1] = {n};
        r = ingot_tensor_init(&ts, bs, 0, st, 1, sh, NULL);
        if (r == INGOT_OK) r = ingot_tensor_init(&td, bd, 0, dt, 1, sh, NULL);
    }
    if (r == INGOT_OK) r = ingot_op_cast(be, &td, &ts, NULL);
    ingot_buffer_free(bs);
    ingot_buffer_free(bd);
    return r;
}

TEST(test_cpu_cast_f16_equal_ref)
{
    /* f32 inputs: per half h, its value's bits + {-1, 0, 1, 0xFFF, 0x1000, 0x1001}; a sweep */
    size_t nh = 65536, n32 = nh * 6 + (((size_t)1 << 32) - 1) / 4093 + 1 + 8;
    uint32_t *f = malloc(n32 * 4);
    uint16_t *h = malloc(nh * 2), *o16[2] = {malloc(n32 * 2), malloc(n32 * 2)};
    float *o32[2] = {malloc(nh * 4), malloc(nh * 4)};
    ASSERT_TRUE(f && h && o16[0] && o16[1] && o32[0] && o32[1]);
    for (size_t i = 0; i < nh; i++) h[i] = (uint16_t)i;
    ingot_backend *be[2];
    ASSERT_OK(ingot_backend_new("ref", NULL, &be[0], NULL));
    ASSERT_OK(ingot_backend_new("cpu", NULL, &be[1], NULL));
    /* the halves' values through ref */
    ASSERT_OK(cast_on(be[0], INGOT_DTYPE_F32, INGOT_DTYPE_F16, o32[0], h, (int64_t)nh, false));
    size_t m = 0;
    static const int32_t near[6] = {-1, 0, 1, 0xFFF, 0x1000, 0x1001};
    for (size_t i = 0; i < nh; i++) {
        uint32_t u;
        memcpy(&u, &o32[0][i], 4);
        for (int k = 0; k < 6; k++) f[m++] = u + (uint32_t)near[k];
    }
    for (uint64_t u = 0; u < ((uint64_t)1 << 32); u += 4093) f[m++] = (uint32_t)u;
    static const uint32_t nans[8] = {0x7f800001u, 0x7fa00000u, 0xff800001u, 0x7fc00000u,
                                     0xffffffffu, 0x7f802000u, 0x7fffe000u, 0x7f801fffu};
    for (int k = 0; k < 8; k++) f[m++] = nans[k];
    ASSERT_TRUE(m == n32);
    ingot_cpu_isa best = ingot_cpu_isa_current(), lv[2] = {INGOT_CPU_ISA_SCALAR, best};
    int checks = 0;
    for (int li = 0; li < 2; li++) {
        ingot_cpu_isa_set_cap(lv[li]);
        for (int strided = 0; strided < 2; strided++) {
            int64_t n = strided ? 3 * 41 * 1000 : (int64_t)n32, cmp = strided ? n - 41 : n;
            for (int k = 0; k < 2; k++) {
                memset(o16[k], 0, (size_t)n * 2);
                ASSERT_OK(cast_on(be[k], INGOT_DTYPE_F16, INGOT_DTYPE_F32, o16[k], f, n, strided));
            }
            CHECK(!memcmp(o16[0], o16[1], (size_t)cmp * 2),
                  "level %d f32 -> f16 (%s): cpu differs from ref", (int)lv[li],
                  strided ? "strided" : "flat");
            int64_t nw = strided ? 3 * 41 * 500 : (int64_t)nh;
            for (int k = 0; k < 2; k++) {
                memset(o32[k], 0, (size_t)nw * 4);
                ASSERT_OK(cast_on(be[k], INGOT_DTYPE_F32, INGOT_DTYPE_F16, o32[k], h, nw,
                                  strided));
            }
            CHECK(!memcmp(o32[0], o32[1], (size_t)(strided ? nw - 41 : nw) * 4),
                  "level %d f16 -> f32 (%s): cpu differs from ref", (int)lv[li],
                  strided ? "strided" : "flat");
            checks += 2;
        }
    }
    ingot_cpu_isa_set_cap(best);
    CHECK(checks == 8, "checks %d", checks);
    ingot_backend_free(be[0]);
    ingot_backend_free(be[1]);
    free(f);
    free(h);
    free(o16[0]);
    free(o16[1]);
    free(o32[0]);
    free(o32[1]);
}

/* One-position RoPE (decode) keeps the angles of its last position for the next call
 * (cpu_rowops.c): a sequence of calls that changes one key at a time (position, theta, head
 * size, the mode, several positions in between, the same position again) gives ref's bits at
 * every call, on one cpu instance. */
TEST(test_cpu_rope_one_position_calls)
{
    enum { H = 4, DMAX = 64 };
    float x[H * DMAX], out[2][H * DMAX];
    for (int i = 0; i < H * DMAX; i++) x[i] = frand() * 2;
    ingot_backend *be[2];
    ASSERT_OK(ingot_backend_new("ref", NULL, &be[0], NULL));
    ASSERT_OK(ingot_backend_new("cpu", NULL, &be[1], NULL));
    static const struct {
        int32_t pos[2];
        int S, D, mode;
        double theta;
    } calls[] = {
        {{5}, 1, 64, 0, 10000.0},   {{5}, 1, 64, 1, 10000.0},  {{6}, 1, 64, 0, 10000.0},
        {{6}, 1, 64, 0, 500000.0},  {{6}, 1, 32, 0, 500000.0}, {{6}, 1, 34, 0, 500000.0},
        {{6}, 1, 32, 0, 500000.0},  {{9, 6}, 2, 32, 0, 500000.0}, {{6}, 1, 32, 0, 500000.0},
        {{5}, 1, 64, 0, 10000.0},   {{-3}, 1, 64, 1, 10000.0}, {{5}, 1, 64, 0, 10000.0},
    };
    for (size_t c = 0; c < sizeof calls / sizeof *calls; c++) {
        int S = calls[c].S, D = calls[c].D;
        for (int k = 0; k < 2; k++) {
            memset(out[k], 0, sizeof out[k]);
            ingot_buffer *bx, *bp, *bd;
            ASSERT_OK(ingot_buffer_wrap(be[k], x, sizeof x, false, &bx, NULL));
            ASSERT_OK(ingot_buffer_wrap(be[k], (void *)calls[c].pos, sizeof calls[c].pos, false,
                                        &bp, NULL));
            ASSERT_OK(ingot_buffer_wrap(be[k], out[k], sizeof out[k], true, &bd, NULL));
            int64_t sh[3] = {H / S, S, D}, ps[1] = {S};
            ingot_tensor tx, tp, td;
            ASSERT_OK(ingot_tensor_init(&tx, bx, 0, INGOT_DTYPE_F32, 3, sh, NULL));
            ASSERT_OK(ingot_tensor_init(&tp, bp, 0, INGOT_DTYPE_I32, 1, ps, NULL));
            ASSERT_OK(ingot_tensor_init(&td, bd, 0, INGOT_DTYPE_F32, 3, sh, NULL));
            ASSERT_OK(ingot_op_rope(be[k], &td, &tx, &tp, calls[c].theta,
                                    (ingot_rope_mode)calls[c].mode, NULL));
            ingot_buffer_free(bx);
            ingot_buffer_free(bp);
            ingot_buffer_free(bd);
        }
        CHECK(!memcmp(out[0], out[1], sizeof out[0]), "rope call %zu: cpu differs from ref", c);
    }
    ingot_backend_free(be[0]);
    ingot_backend_free(be[1]);
}

/* RMSNorm rows (cpu_rowops.c) against ref's double definition: within one f32 rounding (the
 * double sums are added in another order), bit-identical for 1, 2 and 3 threads and for any
 * number of rows (a row's bits do not depend on the batch it came in: KV decode equals the full
 * forward); rows of a wider array and a row length that is not a multiple of 16. */
TEST(test_cpu_rms_norm_matches_ref)
{
    enum { R = 70, N = 1030, LD = 1041 };
    float *x = malloc(R * LD * 4), *w = malloc(N * 4), *want = malloc(R * N * 4);
    float *got[3], *one = malloc(N * 4);
    for (int i = 0; i < R * LD; i++) x[i] = frand() * (i % 13 ? 1.0f : 40.0f);
    for (int i = 0; i < N; i++) w[i] = frand() + 0.5f;
    ingot_backend *be[4];
    ASSERT_OK(ingot_backend_new("ref", NULL, &be[0], NULL));
    for (int t = 1; t < 4; t++) {
        ingot_backend_opts o = {0};
        o.threads = (uint32_t)t;
        ASSERT_OK(ingot_backend_new("cpu", &o, &be[t], NULL));
    }
    for (int k = 0; k < 4; k++) {
        float *out = k ? (got[k - 1] = malloc(R * N * 4)) : want;
        for (int rows = R; rows >= 1; rows -= R - 1) { /* all rows, then the last one alone */
            ingot_buffer *bx, *bw, *bd;
            ASSERT_OK(ingot_buffer_wrap(be[k], x, R * LD * 4, false, &bx, NULL));
            ASSERT_OK(ingot_buffer_wrap(be[k], w, N * 4, false, &bw, NULL));
            ASSERT_OK(ingot_buffer_wrap(be[k], rows == R ? out : one, R * N * 4, true, &bd, NULL));
            int64_t sh[2] = {rows, N}, st[2] = {LD, 1}, ws[1] = {N};
            ingot_tensor tx, tw, td;
            ASSERT_OK(ingot_tensor_init_strided(&tx, bx, (uint64_t)(R - rows) * LD * 4,
                                                INGOT_DTYPE_F32, 2, sh, st, NULL));
            ASSERT_OK(ingot_tensor_init(&tw, bw, 0, INGOT_DTYPE_F32, 1, ws, NULL));
            ASSERT_OK(ingot_tensor_init(&td, bd, 0, INGOT_DTYPE_F32, 2, sh, NULL));
            ASSERT_OK(ingot_op_rms_norm(be[k], &td, &tx, &tw, 1e-5, NULL));
            ingot_buffer_free(bx);
            ingot_buffer_free(bw);
            ingot_buffer_free(bd);
        }
        CHECK(!memcmp(one, out + (R - 1) * N, N * 4), "backend %d: the last row alone differs", k);
    }
    /* ref against the formula in long double, then cpu against ref */
    for (int r = 0; r < R; r++) {
        long double ss = 0;
        for (int i = 0; i < N; i++) ss += (long double)x[r * LD + i] * x[r * LD + i];
        long double inv = 1.0L / sqrtl(ss / N + 1e-5L);
        for (int i = 0; i < N; i++) {
            long double e = (long double)x[r * LD + i] * inv * w[i];
            CHECK(fabsl(e - want[r * N + i]) <= fabsl(e) * 1.2e-7L, "ref row %d [%d]", r, i);
        }
    }
    double worst = 0;
    for (int i = 0; i < R * N; i++) {
        double d = fabs((double)got[0][i] - want[i]) / (fabs((double)want[i]) + 1e-30);
        worst = d > worst ? d : worst;
    }
    CHECK(worst <= 1.2e-7, "cpu RMSNorm %.3g from ref (more than one rounding)", worst);
    CHECK(!memcmp(got[0], got[1], R * N * 4) && !memcmp(got[0], got[2], R * N * 4),
          "RMSNorm: the thread count changes the bits");
    for (int k = 0; k < 4; k++) ingot_backend_free(be[k]);
    for (int t = 0; t < 3; t++) free(got[t]);
    free(x);
    free(w);
    free(want);
    free(one);
}

/* Layer norm rows (cpu_rowops.c, GPT-2's norm) against ref: within one f32 rounding, the same
 * bits for 1 and 3 threads, with and without a bias. */
TEST(test_cpu_layer_norm_matches_ref)
{
    enum { R = 50, N = 777 };
    float *x = malloc(R * N * 4), *w = malloc(N * 4), *bias = malloc(N * 4), *out[3];
    for (int i = 0; i < R * N; i++) x[i] = frand() * 3 + (float)(i / N % 5);
    for (int i = 0; i < N; i++) w[i] = frand() + 0.5f, bias[i] = frand();
    for (int with_bias = 0; with_bias < 2; with_bias++) {
        for (int k = 0; k < 3; k++) {
            ingot_backend *be;
            ingot_backend_opts o = {0};
            o.threads = k == 2 ? 3 : 1;
            ASSERT_OK(ingot_backend_new(k ? "cpu" : "ref", &o, &be, NULL));
            out[k] = malloc(R * N * 4);
            ingot_buffer *bx, *bw, *bb, *bd;
            ASSERT_OK(ingot_buffer_wrap(be, x, R * N * 4, false, &bx, NULL));
            ASSERT_OK(ingot_buffer_wrap(be, w, N * 4, false, &bw, NULL));
            ASSERT_OK(ingot_buffer_wrap(be, bias, N * 4, false, &bb, NULL));
            ASSERT_OK(ingot_buffer_wrap(be, out[k], R * N * 4, true, &bd, NULL));
            int64_t sh[2] = {R, N}, ws[1] = {N};
            ingot_tensor tx, tw, tb, td;
            ASSERT_OK(ingot_tensor_init(&tx, bx, 0, INGOT_DTYPE_F32, 2, sh, NULL));
            ASSERT_OK(ingot_tensor_init(&tw, bw, 0, INGOT_DTYPE_F32, 1, ws, NULL));
            ASSERT_OK(ingot_tensor_init(&tb, bb, 0, INGOT_DTYPE_F32, 1, ws, NULL));
            ASSERT_OK(ingot_tensor_init(&td, bd, 0, INGOT_DTYPE_F32, 2, sh, NULL));
            ASSERT_OK(ingot_op_layer_norm(be, &td, &tx, &tw, with_bias ? &tb : NULL, 1e-5, NULL));
            ingot_buffer_free(bx);
            ingot_buffer_free(bw);
            ingot_buffer_free(bb);
            ingot_buffer_free(bd);
            ingot_backend_free(be);
        }
        int bad = 0;
        for (int i = 0; i < R * N; i++)
            if (fabs((double)out[1][i] - out[0][i]) > 1.2e-7 * fabs((double)out[0][i]) + 1e-12)
                bad++;
        CHECK(bad == 0, "layer norm (bias %d): %d elements more than one rounding from ref",
              with_bias, bad);
        CHECK(!memcmp(out[1], out[2], R * N * 4), "layer norm: the thread count changes bits");
        /* and ref is what the formula says: row 7's mean is about 1 + its shift, not 0 */
        double m = 0;
        for (int i = 0; i < N; i++) m += out[0][7 * N + i] - (with_bias ? bias[i] : 0.0f);
        CHECK(fabs(m / N) < 0.2, "ref layer norm row 7 mean %.3g", m / N);
        for (int k = 0; k < 3; k++) free(out[k]);
    }
    free(x);
    free(w);
    free(bias);
}

/* SiLU (the activation op, cpu.c / cpu_rowops.c) within 4 ulp of x / (1 + e^-x) computed in
 * double, over [-100, 100] plus the edges (0, -0, huge, NaN); an element's bits do not depend on
 * where it sits (tails of 1..7 elements give the same values as the full run) or on the thread
 * count. */
TEST(test_cpu_silu_accuracy)
{
    enum { N = 50021 };
    float *a = malloc(N * 4), *d[3], *tail = malloc(8 * 4);
    for (int i = 0; i < N; i++) a[i] = frand() * (i % 3 ? 8.0f : 100.0f);
    a[0] = 0.0f, a[1] = -0.0f, a[2] = 1e30f, a[3] = -1e30f, a[4] = NAN, a[5] = -88.5f;
    a[6] = 88.5f, a[7] = -87.0f;
    for (int t = 0; t < 3; t++) {
        ingot_backend *be;
        ingot_backend_opts o = {0};
        o.threads = (uint32_t)t + 1;
        ASSERT_OK(ingot_backend_new("cpu", &o, &be, NULL));
        d[t] = malloc(N * 4);
        ingot_buffer *ba, *bd;
        ASSERT_OK(ingot_buffer_wrap(be, a, N * 4, false, &ba, NULL));
        ASSERT_OK(ingot_buffer_wrap(be, d[t], N * 4, true, &bd, NULL));
        int64_t sh[1] = {N};
        ingot_tensor ta, td;
        ASSERT_OK(ingot_tensor_init(&ta, ba, 0, INGOT_DTYPE_F32, 1, sh, NULL));
        ASSERT_OK(ingot_tensor_init(&td, bd, 0, INGOT_DTYPE_F32, 1, sh, NULL));
        ASSERT_OK(ingot_op_activation(be, INGOT_ACT_SILU, &td, &ta, 0.0, NULL));
        if (t == 0)
            for (int n = 1; n < 8; n++) { /* a[N - n ..] alone: the tail path */
                ingot_tensor tx = ta, ty = td;
                ingot_buffer *bt;
                ASSERT_OK(ingot_buffer_wrap(be, tail, 8 * 4, true, &bt, NULL));
                int64_t s1[1] = {n};
                ASSERT_OK(ingot_tensor_init(&tx, ba, (uint64_t)(N - n) * 4, INGOT_DTYPE_F32, 1,
                                            s1, NULL));
                ASSERT_OK(ingot_tensor_init(&ty, bt, 0, INGOT_DTYPE_F32, 1, s1, NULL));
                ASSERT_OK(ingot_op_activation(be, INGOT_ACT_SILU, &ty, &tx, 0.0, NULL));
                CHECK(!memcmp(tail, d[0] + N - n, (size_t)n * 4), "SiLU tail of %d differs", n);
                ingot_buffer_free(bt);
            }
        ingot_buffer_free(ba);
        ingot_buffer_free(bd);
        ingot_backend_free(be);
    }
    CHECK(d[0][0] == 0.0f && !signbit(d[0][0]), "silu(0) = %g", d[0][0]);
    CHECK(d[0][1] == 0.0f && signbit(d[0][1]), "silu(-0) = %g", d[0][1]);
    CHECK(d[0][2] == 1e30f, "silu(1e30) = %g", d[0][2]);
    CHECK(d[0][3] == 0.0f && fabsf(d[0][3]) < 1e-30f, "silu(-1e30) = %g", d[0][3]);
    CHECK(isnan(d[0][4]), "silu(NaN) = %g", d[0][4]);
    double worst = 0;
    for (int i = 5; i < N; i++) {
        double x = a[i], e = x / (1.0 + exp(-x));
        if (fabs(e) < 1e-30) {
            CHECK(fabs(d[0][i]) < 1e-30, "silu(%g) = %g", x, d[0][i]);
            continue;
        }
        double ulp = ldexp(1.0, ilogb(e) - 23), r = fabs(d[0][i] - e) / ulp;
        worst = r > worst ? r : worst;
    }
    CHECK(worst <= 4.0, "SiLU %.2f ulp from the double definition", worst);
    CHECK(!memcmp(d[0], d[1], N * 4) && !memcmp(d[0], d[2], N * 4),
          "SiLU: the thread count changes the bits");
    for (int t = 0; t < 3; t++) free(d[t]);
    free(a);
    free(tail);
}

/* Copies of views whose last axis is contiguous (the KV cache stores: [rows, heads*hd] as
 * [heads, rows, hd] into [heads, n_ctx, hd]): the same bytes as ref, rank 2 to 4, F32 and F16. */
TEST(test_cpu_copy_views_equal_ref)
{
    enum { H = 4, S = 9, D = 24, CTX = 13 };
    uint32_t *src = malloc(H * S * D * 4), *out[2];
    for (int i = 0; i < H * S * D; i++) src[i] = (uint32_t)i * 2654435761u;
    ingot_backend *be[2];
    ASSERT_OK(ingot_backend_new("ref", NULL, &be[0], NULL));
    ASSERT_OK(ingot_backend_new("cpu", NULL, &be[1], NULL));
    for (int dt = 0; dt < 2; dt++) {
        ingot_dtype t = dt ? INGOT_DTYPE_F16 : INGOT_DTYPE_F32;
        int64_t es = dt ? 2 : 4;
        for (int k = 0; k < 2; k++) {
            out[k] = calloc(2 * H * CTX * D, 4);
            ingot_buffer *bs, *bd;
            ASSERT_OK(ingot_buffer_wrap(be[k], src, H * S * D * 4, false, &bs, NULL));
            ASSERT_OK(ingot_buffer_wrap(be[k], out[k], 2 * H * CTX * D * 4, true, &bd, NULL));
            int64_t sh[3] = {H, S, D}, ss[3] = {D, H * D, 1}, ds[3] = {CTX * D, D, 1};
            ingot_tensor ts, td;
            ASSERT_OK(ingot_tensor_init_strided(&ts, bs, 0, t, 3, sh, ss, NULL));
            ASSERT_OK(ingot_tensor_init_strided(&td, bd, (uint64_t)(2 * D * es), t, 3, sh, ds,
                                                NULL));
            ASSERT_OK(ingot_op_copy(be[k], &td, &ts, NULL));
            /* rank 4: [2, 2, S, D] of the same rows */
            int64_t sh4[4] = {2, 2, S, D}, ss4[4] = {2 * D, D, H * D, 1};
            int64_t ds4[4] = {2 * CTX * D, CTX * D, D, 1};
            ASSERT_OK(ingot_tensor_init_strided(&ts, bs, 0, t, 4, sh4, ss4, NULL));
            ASSERT_OK(ingot_tensor_init_strided(&td, bd, (uint64_t)(H * CTX * D * es), t,
                                                4, sh4, ds4, NULL));
            ASSERT_OK(ingot_op_copy(be[k], &td, &ts, NULL));
            ingot_buffer_free(bs);
            ingot_buffer_free(bd);
        }
        CHECK(!memcmp(out[0], out[1], 2 * H * CTX * D * 4),
              "copy dtype %d: cpu differs from ref", dt);
        /* and ref put element (h, s, e) at (h, 2 + s, e) */
        if (!dt)
            CHECK(out[0][(1 * CTX + 2 + 3) * D + 5] == src[3 * H * D + 1 * D + 5],
                  "ref copy misplaced an element");
        free(out[0]);
        free(out[1]);
    }
    ingot_backend_free(be[0]);
    ingot_backend_free(be[1]);
    free(src);
}

static void cleanup(void)
{
    for (int i = 0; i < nowned; i++) free(owned[i]);
}

TEST(test_cleanup) { cleanup(); }

RUN_TESTS(T(test_cpu_routes_match_ref_and_thread_count), T(test_cpu_f32_paths_do_not_allocate),
          T(test_cpu_one_pool), T(test_cpu_attention_matches_ref),
          T(test_cpu_attention_rows_independent),
          T(test_cpu_rowops_equal_ref), T(test_cpu_binary_in_place),
          T(test_cpu_cast_f16_equal_ref), T(test_cpu_rope_one_position_calls),
          T(test_cpu_rms_norm_matches_ref),
          T(test_cpu_layer_norm_matches_ref),
          T(test_cpu_silu_accuracy), T(test_cpu_copy_views_equal_ref), T(test_cleanup))
