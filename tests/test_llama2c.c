/*
 * test_llama2c.c - the llama2c adapter (src/formats/llama2c/): the real stories260K.bin (legacy
 * layout, detected by exact size) read as GGUF-named tensors and llama.* keys and run to the same
 * logits as stories260K.gguf; the versioned "ak42" layouts 1 and 2 built here from llama2.c's
 * export.py description (the weights of stories260K rewritten, and tiny synthetic files); every
 * header field's rejection with its exact code; name lookup edge cases.
 */
#include <math.h>

#include "harness.h"
#include "ingot/lm.h"

#define MDIR INGOT_FIXTURES "/models/stories260K/"

/* ---- building files (independent of the adapter: written from export.py's layouts) ---- */

typedef struct cfg {
    int32_t dim, hidden, L, heads, kv, vocab, seq; /* vocab > 0 */
    bool shared;
} cfg;

typedef struct buf {
    uint8_t *p;
    size_t n, cap;
} buf;

static void put(buf *b, const void *d, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 256;
        b->p = realloc(b->p, b->cap);
    }
    memcpy(b->p + b->n, d, n);
    b->n += n;
}
static void put_i32(buf *b, int32_t v) { put(b, &v, 4); }

/* The arrays of a model, by kind, in one order-independent place. */
enum { A_EMBD, A_ATTN_NORM, A_Q, A_K, A_V, A_O, A_FFN_NORM, A_W1, A_W2, A_W3, A_NORM, A_FRE,
       A_FIM, A_CLS, A_COUNT };

typedef struct model {
    cfg c;
    const float *a[A_COUNT]; /* per-layer kinds: all layers back to back */
} model;

static size_t elems(const cfg *c, int k)
{
    size_t d = (size_t)c->dim, kv = (size_t)(c->dim / c->heads * c->kv), h = (size_t)c->hidden;
    switch (k) {
    case A_EMBD: case A_CLS: return (size_t)c->vocab * d;
    case A_ATTN_NORM: case A_FFN_NORM: case A_NORM: return d;
    case A_Q: case A_O: return d * d;
    case A_K: case A_V: return kv * d;
    case A_W1: case A_W2: case A_W3: return h * d;
    default: return (size_t)c->seq * (size_t)(c->dim / c->heads / 2);
    }
}
static bool per_layer(int k) { return k >= A_ATTN_NORM && k <= A_W3; }
static size_t total(const cfg *c, int k) { return elems(c, k) * (per_layer(k) ? (size_t)c->L : 1); }

static void put_cfg(buf *b, const cfg *c, int32_t vocab)
{
    int32_t v[7] = {c->dim, c->hidden, c->L, c->heads, c->kv, vocab, c->seq};
    put(b, v, sizeof v);
}

static buf write_legacy(const model *m)
{
    buf b = {0};
    put_cfg(&b, &m->c, m->c.shared ? m->c.vocab : -m->c.vocab);
    static const int order[] = {A_EMBD, A_ATTN_NORM, A_Q, A_K, A_V, A_O, A_FFN_NORM, A_W1, A_W2,
                                A_W3, A_NORM, A_FRE, A_FIM, A_CLS};
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++)
        if (order[i] != A_CLS || !m->c.shared) put(&b, m->a[order[i]], total(&m->c, order[i]) * 4);
    return b;
}

static void ak42_header(buf *b, const cfg *c, int32_t version, int32_t gs)
{
    put_i32(b, 0x616b3432);
    put_i32(b, version);
    put_cfg(b, c, c->vocab);
    uint8_t shared = c->shared;
    put(b, &shared, 1);
    if (version == 2) put_i32(b, gs);
    uint8_t z[256] = {0};
    put(b, z, 256 - b->n);
}

static const int order_v1[] = {A_EMBD, A_Q, A_K, A_V, A_O, A_W1, A_W2, A_W3, A_CLS};

static buf write_v1(const model *m)
{
    buf b = {0};
    ak42_header(&b, &m->c, 1, 0);
    put(&b, m->a[A_ATTN_NORM], total(&m->c, A_ATTN_NORM) * 4);
    put(&b, m->a[A_FFN_NORM], total(&m->c, A_FFN_NORM) * 4);
    put(&b, m->a[A_NORM], total(&m->c, A_NORM) * 4);
    for (size_t i = 0; i < sizeof order_v1 / sizeof order_v1[0]; i++)
        if (order_v1[i] != A_CLS || !m->c.shared)
            put(&b, m->a[order_v1[i]], total(&m->c, order_v1[i]) * 4);
    return b;
}

/* export.py's quantize_q80: per group, scale = max|w| / 127, q = round(w / scale) (torch.round:
 * half to even, which nearbyintf gives in the default rounding mode). deq receives q * scale. */
static void quantize(const float *w, size_t n, int gs, int8_t *q, float *s, float *deq)
{
    for (size_t g = 0; g < n / (size_t)gs; g++) {
        float mx = 0;
        for (int i = 0; i < gs; i++) mx = fmaxf(mx, fabsf(w[g * gs + i]));
        float sc = mx / 127.0f;
        s[g] = sc;
        for (int i = 0; i < gs; i++) {
            float v = sc != 0 ? nearbyintf(w[g * gs + i] / sc) : 0.0f;
            q[g * gs + i] = (int8_t)v;
            deq[g * gs + i] = (float)q[g * gs + i] * sc;
        }
    }
}

/* Version 2; *deq receives a model with the dequantized weights (owned arrays in deq_store). */
static buf write_v2(const model *m, int gs, model *deq, float **deq_store)
{
    buf b = {0};
    ak42_header(&b, &m->c, 2, gs);
    put(&b, m->a[A_ATTN_NORM], total(&m->c, A_ATTN_NORM) * 4);
    put(&b, m->a[A_FFN_NORM], total(&m->c, A_FFN_NORM) * 4);
    put(&b, m->a[A_NORM], total(&m->c, A_NORM) * 4);
    *deq = *m;
    for (size_t i = 0; i < sizeof order_v1 / sizeof order_v1[0]; i++) {
        int k = order_v1[i];
        if (k == A_CLS && m->c.shared) continue;
        size_t n = elems(&m->c, k), reps = per_layer(k) ? (size_t)m->c.L : 1;
        float *d = deq_store[k] = malloc(n * reps * 4);
        int8_t *q = malloc(n);
        float *s = malloc(n / (size_t)gs * 4);
        for (size_t r = 0; r < reps; r++) {
            quantize(m->a[k] + r * n, n, gs, q, s, d + r * n);
            put(&b, q, n);
            put(&b, s, n / (size_t)gs * 4);
        }
        deq->a[k] = d;
        free(q);
        free(s);
    }
    return b;
}

/* The arrays of a legacy image (read here from the layout, not by the adapter). */
static bool read_legacy(const uint8_t *p, size_t n, model *m)
{
    int32_t v[7];
    memcpy(v, p, 28);
    m->c = (cfg){v[0], v[1], v[2], v[3], v[4], abs(v[5]), v[6], v[5] > 0};
    static const int order[] = {A_EMBD, A_ATTN_NORM, A_Q, A_K, A_V, A_O, A_FFN_NORM, A_W1, A_W2,
                                A_W3, A_NORM, A_FRE, A_FIM, A_CLS};
    size_t off = 28;
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        if (order[i] == A_CLS && m->c.shared) {
            m->a[A_CLS] = m->a[A_EMBD];
            continue;
        }
        m->a[order[i]] = (const float *)(const void *)(p + off);
        off += total(&m->c, order[i]) * 4;
    }
    return off == n;
}

static uint8_t *read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *p = malloc(*n);
    if (p && fread(p, 1, *n, f) != *n) {
        free(p);
        p = NULL;
    }
    fclose(f);
    return p;
}

/* A tiny synthetic model: value j of array k (layer folded in) = a distinct small number. */
static model tiny(bool shared, float *store[A_COUNT])
{
    model m = {{8, 12, 2, 2, 1, 10, 4, shared}, {0}};
    for (int k = 0; k < A_COUNT; k++) {
        size_t n = total(&m.c, k);
        store[k] = malloc(n * 4);
        for (size_t j = 0; j < n; j++) store[k][j] = (float)(k * 1000 + (int)(j % 997)) / 512.0f;
        m.a[k] = store[k];
    }
    return m;
}

/* ---- the real file ---- */

static ingot_lm *open_lm(ingot_backend *be, const ingot_file *f)
{
    ingot_lm *m = NULL;
    ingot_error e;
    if (ingot_lm_open(be, f, NULL, &m, &e) != INGOT_OK) {
        char b[300];
        fprintf(stderr, "  lm_open: %s\n", ingot_error_format(&e, b, sizeof b));
    }
    return m;
}

/* logits of tokens under teacher forcing */
static bool run(ingot_backend *be, const ingot_file *f, const int32_t *t, size_t n, float *out)
{
    ingot_lm *m = open_lm(be, f);
    ingot_lm_session *s = NULL;
    bool ok = m && ingot_lm_session_new(m, NULL, &s, NULL) == INGOT_OK &&
              ingot_lm_eval(s, t, n, INGOT_LM_LOGITS_ALL, out, n * ingot_lm_get_config(m)->vocab,
                            NULL) == INGOT_OK;
    ingot_lm_session_free(s);
    ingot_lm_free(m);
    return ok;
}

static const int32_t toks[12] = {1, 403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315};

TEST(stories_bin_detected_by_exact_size)
{
    ingot_file *f = NULL;
    ASSERT_OK(ingot_file_open(MDIR "stories260K.bin", NULL, &f, NULL));
    ASSERT_STR(ingot_file_format(f), "llama2c");
    ASSERT_STR(ingot_file_version(f), "0");
    ASSERT_EQ(ingot_file_tensor_count(f), 1 + 9 * 5 + 3); /* shared classifier: no output */
    uint32_t v;
    ASSERT_OK(ingot_file_meta_get_u32(f, "llama.block_count", &v));
    ASSERT_EQ(v, 5);
    ASSERT_OK(ingot_file_meta_get_u32(f, "llama.attention.head_count_kv", &v));
    ASSERT_EQ(v, 4);
    ASSERT_OK(ingot_file_meta_get_u32(f, "llama.context_length", &v));
    ASSERT_EQ(v, 512);
    bool shared;
    ASSERT_OK(ingot_file_meta_get_bool(f, "llama2c.shared_classifier", &shared));
    ASSERT_TRUE(shared);
    /* offsets from the legacy layout: 28 + 4 x (embedding 512x64, norms 5x64, wq 5x64x64, wk
     * 5x32x64) for blk.2.attn_v */
    ingot_tensor_info t;
    ASSERT_OK(ingot_file_tensor_find(f, "blk.2.attn_v.weight", &t));
    ASSERT_U64(t.offset, 28 + 4 * (512 * 64 + 5 * 64 + 5 * 64 * 64 + 5 * 32 * 64 + 2 * 32 * 64));
    ASSERT_EQ(t.shape[0], 32);
    ASSERT_EQ(t.shape[1], 64);
    ASSERT_OK(ingot_file_tensor_find(f, "blk.4.ffn_down.weight", &t));
    ASSERT_EQ(t.shape[0], 64);
    ASSERT_EQ(t.shape[1], 172);
    ASSERT_OK(ingot_file_tensor_find(f, "freq_cis_imag", &t));
    ASSERT_EQ(t.shape[0], 512);
    ASSERT_EQ(t.shape[1], 4);
    ASSERT_U64(t.offset + t.nbytes, ingot_file_size(f));
    ASSERT_ST(ingot_file_tensor_find(f, "output.weight", &t), INGOT_NOT_FOUND);
    ASSERT_ST(ingot_file_tensor_find(f, "blk.5.attn_q.weight", &t), INGOT_NOT_FOUND);
    ASSERT_ST(ingot_file_tensor_find(f, "blk.02.attn_q.weight", &t), INGOT_NOT_FOUND);
    ASSERT_ST(ingot_file_tensor_find(f, "blk.2.attn_q.weight_scale", &t), INGOT_NOT_FOUND);
    ASSERT_ST(ingot_file_tensor_find(f, "blk..attn_q.weight", &t), INGOT_NOT_FOUND);
    ASSERT_OK(ingot_file_verify(f, 1, NULL));
    ingot_file_close(f);
}

TEST(stories_bin_runs_like_the_gguf)
{
    ingot_file *bin = NULL, *gguf = NULL;
    ingot_open_opts pread = {0};
    pread.io = INGOT_IO_PREAD; /* tensors copied in: the runtime does not need the mapping */
    ASSERT_OK(ingot_file_open(MDIR "stories260K.bin", &pread, &bin, NULL));
    ASSERT_OK(ingot_file_open(MDIR "stories260K.gguf", NULL, &gguf, NULL));
    ingot_backend *be = NULL;
    ASSERT_OK(ingot_backend_new("cpu", NULL, &be, NULL));
    static float a[12 * 512], b[12 * 512];
    ASSERT_TRUE(run(be, bin, toks, 12, a));
    ASSERT_TRUE(run(be, gguf, toks, 12, b));
    ASSERT_MEM(a, b, sizeof a); /* the same weights: the same bits */
    ingot_backend_free(be);
    ingot_file_close(bin);
    ingot_file_close(gguf);
}

TEST(stories_as_version_1_and_2)
{
    size_t n = 0;
    uint8_t *img = read_file(MDIR "stories260K.bin", &n);
    model m;
    ASSERT_TRUE(img && read_legacy(img, n, &m));
    buf v1 = write_v1(&m);
    model dq;
    float *store[A_COUNT] = {0};
    buf v2 = write_v2(&m, 64, &dq, store);
    buf v1dq = write_v1(&dq);
    ingot_file *f0 = NULL, *f1 = NULL, *f2 = NULL, *f3 = NULL;
    ASSERT_OK(ingot_file_open_buffer(img, n, NULL, &f0, NULL));
    ASSERT_OK(ingot_file_open_buffer(v1.p, v1.n, NULL, &f1, NULL));
    ASSERT_OK(ingot_file_open_buffer(v2.p, v2.n, NULL, &f2, NULL));
    ASSERT_OK(ingot_file_open_buffer(v1dq.p, v1dq.n, NULL, &f3, NULL));
    ASSERT_STR(ingot_file_format(f1), "llama2c");
    ASSERT_STR(ingot_file_version(f1), "1");
    ASSERT_STR(ingot_file_version(f2), "2");
    uint32_t gs;
    ASSERT_OK(ingot_file_meta_get_u32(f2, "llama2c.group_size", &gs));
    ASSERT_EQ(gs, 64);
    ingot_tensor_info t;
    ASSERT_OK(ingot_file_tensor_find(f2, "blk.3.ffn_down.weight", &t));
    ASSERT_EQ(t.dtype, INGOT_DTYPE_I8);
    ASSERT_OK(ingot_file_tensor_find(f2, "blk.3.ffn_down.weight_scale", &t));
    ASSERT_EQ(t.dtype, INGOT_DTYPE_F32);
    ASSERT_U64(t.nelem, 64 * 172 / 64);
    ingot_backend *be = NULL;
    ASSERT_OK(ingot_backend_new("cpu", NULL, &be, NULL));
    static float a[12 * 512], b[12 * 512], c[12 * 512], d[12 * 512];
    ASSERT_TRUE(run(be, f0, toks, 12, a));
    ASSERT_TRUE(run(be, f1, toks, 12, b));
    ASSERT_TRUE(run(be, f2, toks, 12, c));
    ASSERT_TRUE(run(be, f3, toks, 12, d));
    ASSERT_MEM(a, b, sizeof a); /* version 1 holds the same floats */
    ASSERT_MEM(c, d, sizeof c); /* version 2 = its dequantized weights, bit for bit */
    double mx = 0;
    for (size_t i = 0; i < 12 * 512; i++) mx = fmax(mx, fabs(a[i] - c[i]));
    CHECK(mx > 0 && mx < 0.5, "int8 weights move the logits by %g", mx);
    ingot_backend_free(be);
    ingot_file_close(f0);
    ingot_file_close(f1);
    ingot_file_close(f2);
    ingot_file_close(f3);
    for (int k = 0; k < A_COUNT; k++) free(store[k]);
    free(v1.p);
    free(v2.p);
    free(v1dq.p);
    free(img);
}

/* ---- tiny synthetic files: every tensor where the layout says ---- */

static void check_tiny(const buf *b, const model *m, const char *version)
{
    ingot_file *f = NULL;
    ingot_error e;
    ASSERT_OK(ingot_file_open_buffer(b->p, b->n, NULL, &f, &e));
    ASSERT_STR(ingot_file_format(f), "llama2c");
    ASSERT_STR(ingot_file_version(f), version);
    static const char *const names[A_COUNT] = {
        "token_embd.weight", "blk.1.attn_norm.weight", "blk.1.attn_q.weight",
        "blk.1.attn_k.weight", "blk.1.attn_v.weight", "blk.1.attn_output.weight",
        "blk.1.ffn_norm.weight", "blk.1.ffn_gate.weight", "blk.1.ffn_down.weight",
        "blk.1.ffn_up.weight", "output_norm.weight", "freq_cis_real", "freq_cis_imag",
        "output.weight"};
    for (int k = 0; k < A_COUNT; k++) {
        ingot_tensor_info t;
        ingot_status st = ingot_file_tensor_find(f, names[k], &t);
        bool absent = (k == A_CLS && m->c.shared) || (version[0] != '0' && (k == A_FRE ||
                                                                             k == A_FIM));
        if (absent) {
            CHECK(st == INGOT_NOT_FOUND, "%s should be absent", names[k]);
            continue;
        }
        CHECK(st == INGOT_OK, "%s: %s", names[k], ingot_status_name(st));
        if (st != INGOT_OK) continue;
        size_t n = elems(&m->c, k);
        CHECK(t.nelem == n, "%s: %llu elements, want %zu", names[k],
              (unsigned long long)t.nelem, n);
        const float *want = m->a[k] + (per_layer(k) ? n : 0); /* layer 1 */
        if (t.dtype == INGOT_DTYPE_F32) {
            CHECK(memcmp(t.data, want, n * 4) == 0, "%s: data differs", names[k]);
        } else {
            ingot_tensor_info sc;
            char sn[64];
            snprintf(sn, sizeof sn, "%s_scale", names[k]);
            CHECK(ingot_file_tensor_find(f, sn, &sc) == INGOT_OK, "%s", sn);
            const int8_t *q = t.data;
            const float *s = sc.data;
            size_t gs = n / sc.nelem;
            for (size_t j = 0; j < n; j++)
                if (fabsf((float)q[j] * s[j / gs] - want[j]) > s[j / gs] * 0.5f + 1e-6f) {
                    CHECK(0, "%s: element %zu", names[k], j);
                    break;
                }
        }
    }
    ingot_file_close(f);
}

TEST(tiny_files_every_layout)
{
    float *store[A_COUNT], *dstore[A_COUNT] = {0};
    for (int shared = 0; shared < 2; shared++) {
        model m = tiny(shared, store), dq;
        buf b0 = write_legacy(&m), b1 = write_v1(&m), b2 = write_v2(&m, 4, &dq, dstore);
        check_tiny(&b0, &m, "0");
        check_tiny(&b1, &m, "1");
        check_tiny(&b2, &m, "2");
        free(b0.p);
        free(b1.p);
        free(b2.p);
        for (int k = 0; k < A_COUNT; k++) {
            free(store[k]);
            free(dstore[k]);
            dstore[k] = NULL;
        }
    }
}

/* ---- malformed headers: exact codes, forced and detected ---- */

static void expect(const buf *b, ingot_status forced, ingot_status detected)
{
    ingot_open_opts force = {0};
    force.format = "llama2c";
    ingot_file *f = NULL;
    ingot_error e;
    ingot_status st = ingot_file_open_buffer(b->p, b->n, &force, &f, &e);
    CHECK(st == forced, "forced: %s, want %s (%s)", ingot_status_name(st),
          ingot_status_name(forced), st ? e.msg : "");
    ingot_file_close(f);
    f = NULL;
    st = ingot_file_open_buffer(b->p, b->n, NULL, &f, &e);
    CHECK(st == detected, "detected: %s, want %s (%s)", ingot_status_name(st),
          ingot_status_name(detected), st ? e.msg : "");
    ingot_file_close(f);
}

static void set_i32(buf *b, size_t off, int32_t v) { memcpy(b->p + off, &v, 4); }

TEST(legacy_truncation_and_trailing_bytes)
{
    float *store[A_COUNT];
    model m = tiny(false, store);
    buf b = write_legacy(&m);
    size_t full = b.n;
    /* every truncation point: never detected (the size no longer agrees), TRUNCATED if forced */
    for (size_t n = 0; n < full; n += n < 64 ? 1 : 97) {
        b.n = n;
        expect(&b, INGOT_TRUNCATED, n == 0 ? INGOT_TRUNCATED : INGOT_UNKNOWN_FORMAT);
    }
    b.n = full;
    uint8_t z = 0;
    put(&b, &z, 1);
    expect(&b, INGOT_BAD_LAYOUT, INGOT_UNKNOWN_FORMAT);
    b.n = full;
    expect(&b, INGOT_OK, INGOT_OK);
    free(b.p);
    for (int k = 0; k < A_COUNT; k++) free(store[k]);
}

TEST(header_fields_rejected_with_exact_codes)
{
    float *store[A_COUNT], *dstore[A_COUNT] = {0};
    model m = tiny(true, store), dq;
    buf l = write_legacy(&m), v1 = write_v1(&m), v2 = write_v2(&m, 4, &dq, dstore);
    struct {
        buf *b;
        size_t off;
        int32_t v;
        ingot_status forced, detected;
    } cases[] = {
        {&l, 0, 0, INGOT_BAD_METADATA, INGOT_UNKNOWN_FORMAT},      /* dim 0 */
        {&l, 4, -1, INGOT_BAD_METADATA, INGOT_UNKNOWN_FORMAT},     /* hidden < 0 */
        {&l, 8, 0, INGOT_BAD_METADATA, INGOT_UNKNOWN_FORMAT},      /* no layers */
        {&l, 12, 3, INGOT_BAD_METADATA, INGOT_UNKNOWN_FORMAT},     /* 3 heads do not divide 8 */
        {&l, 12, 8, INGOT_BAD_METADATA, INGOT_UNKNOWN_FORMAT},     /* head size 1: odd */
        {&l, 16, 3, INGOT_BAD_METADATA, INGOT_UNKNOWN_FORMAT},     /* kv heads > heads */
        {&l, 20, 0, INGOT_BAD_METADATA, INGOT_UNKNOWN_FORMAT},     /* vocab 0 */
        {&l, 20, INT32_MIN, INGOT_BAD_METADATA, INGOT_UNKNOWN_FORMAT},
        {&l, 20, -10, INGOT_TRUNCATED, INGOT_UNKNOWN_FORMAT},      /* a classifier is missing */
        {&l, 24, 0, INGOT_BAD_METADATA, INGOT_UNKNOWN_FORMAT},     /* seq_len 0 */
        {&l, 8, 5000, INGOT_LIMIT, INGOT_UNKNOWN_FORMAT},          /* layers over the cap */
        {&l, 0, 0x40000000, INGOT_BAD_SIZE, INGOT_UNKNOWN_FORMAT}, /* sizes overflow 64 bits */
        {&v1, 4, 3, INGOT_BAD_VERSION, INGOT_BAD_VERSION},
        {&v1, 4, 0, INGOT_BAD_VERSION, INGOT_BAD_VERSION},
        {&v1, 28, -10, INGOT_BAD_METADATA, INGOT_BAD_METADATA},    /* negative vocab in v1 */
        {&v1, 36, 2, INGOT_BAD_METADATA, INGOT_BAD_METADATA},      /* shared flag 2 */
        {&v1, 100, 1, INGOT_BAD_LAYOUT, INGOT_BAD_LAYOUT},         /* padding not zero */
        {&v2, 37, 0, INGOT_BAD_METADATA, INGOT_BAD_METADATA},      /* group size 0 */
        {&v2, 37, 3, INGOT_BAD_SIZE, INGOT_BAD_SIZE},              /* 3 does not divide 8 x 8 */
        {&v2, 37, 8, INGOT_BAD_LAYOUT, INGOT_BAD_LAYOUT},          /* group size 8 halves the
                                                                      scales: bytes left over */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        buf *b = cases[i].b;
        int32_t old;
        uint8_t oldb = b->p[cases[i].off];
        memcpy(&old, b->p + cases[i].off, 4);
        if (cases[i].off == 36) b->p[36] = (uint8_t)cases[i].v;
        else if (cases[i].off == 100) b->p[100] = (uint8_t)cases[i].v;
        else set_i32(b, cases[i].off, cases[i].v);
        int before = harness_failed;
        expect(b, cases[i].forced, cases[i].detected);
        if (harness_failed != before)
            fprintf(stderr, "  (case %zu: offset %zu value %d)\n", i, cases[i].off, cases[i].v);
        if (cases[i].off == 36 || cases[i].off == 100) b->p[cases[i].off] = oldb;
        else set_i32(b, cases[i].off, old);
    }
    /* a v2 file cut inside its 256-byte header */
    size_t full = v2.n;
    v2.n = 200;
    expect(&v2, INGOT_TRUNCATED, INGOT_TRUNCATED);
    v2.n = full;
    expect(&v2, INGOT_OK, INGOT_OK);
    free(l.p);
    free(v1.p);
    free(v2.p);
    for (int k = 0; k < A_COUNT; k++) {
        free(store[k]);
        free(dstore[k]);
    }
}

RUN_TESTS(T(stories_bin_detected_by_exact_size), T(stories_bin_runs_like_the_gguf),
          T(stories_as_version_1_and_2), T(tiny_files_every_layout),
          T(legacy_truncation_and_trailing_bytes), T(header_fields_rejected_with_exact_codes))
