/*
 * test_rmd1.c - RMD1 (native_neural_network) reader and writer: the three hand-made fixtures
 * (values, metadata, zero-copy views, every I/O mode), byte-exact rewrites (RMD1 -> RMD1 and
 * RMD1 -> .ingot -> RMD1), a non-sequential layout with gaps, the writer's refusals, the
 * malformed catalogue (RELIABILITY.md §1) with exact codes, and the CLI.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "convert_mem.h"
#include "harness.h"
#include "files.h"
#include "ingot/ingot.h"
#include "support/sha256.h"

#define FIX INGOT_FIXTURES "/rmd1/handmade/"

static const ingot_open_opts force = {.format = "rmd1"};

static ingot_status open_buf(const void *b, size_t n, ingot_file **f)
{
    return ingot_file_open_buffer(b, n, &force, f, NULL);
}

static void st32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* ---- a model builder: header + records + data, with optional layout overrides ---- */

typedef struct {
    uint32_t L, W, B;
    uint8_t dtype;
    uint32_t in[4], out[4], woff[4], boff[4];
    uint8_t act[4];
} model;

static size_t build(const model *m, uint8_t *buf, size_t cap)
{
    uint32_t es = m->dtype ? 8 : 4;
    size_t n = 20 + 20 * (size_t)m->L + ((size_t)m->W + m->B) * es;
    if (n > cap) return 0;
    memset(buf, 0, n);
    memcpy(buf, "RMD1", 4);
    buf[4] = 1;
    buf[6] = m->dtype;
    st32(buf + 8, m->L);
    st32(buf + 12, m->W);
    st32(buf + 16, m->B);
    for (uint32_t k = 0; k < m->L; k++) {
        uint8_t *r = buf + 20 + 20 * k;
        st32(r, m->in[k]);
        st32(r + 4, m->out[k]);
        st32(r + 8, m->woff[k]);
        st32(r + 12, m->boff[k]);
        r[16] = m->act[k];
    }
    /* scalars: W[i] = i + 1, B[i] = -(i + 1) */
    uint8_t *d = buf + 20 + 20 * m->L;
    for (uint32_t i = 0; i < m->W + m->B; i++) {
        double v = i < m->W ? (double)(i + 1) : -(double)(i - m->W + 1);
        if (es == 4) {
            float x = (float)v;
            memcpy(d + 4 * i, &x, 4);
        } else {
            memcpy(d + 8 * i, &v, 8);
        }
    }
    return n;
}

/* The 2-3-1 fixture's model, as built here. */
static const model mlp231 = {2, 9, 4, 0, {2, 3}, {3, 1}, {0, 6}, {0, 3}, {1, 2}};

/* ---- conversions through the public writer ---- */

typedef struct {
    int count;
    char last[256];
} notices;

static void on_notice(void *ctx, const char *msg)
{
    notices *n = ctx;
    n->count++;
    snprintf(n->last, sizeof n->last, "%s", msg);
}

/* Converts f into `format` in memory. pushed: data streamed through ingot_writer_write in f's
 * tensor order (what the CLI does); else given as pointers. */
static ingot_status convert(const ingot_file *f, const char *format, bool pushed, notices *nt,
                            void **out, size_t *n, ingot_error *e)
{
    test_convert_opts o = {
        .format = format, .pushed = pushed, .notice = nt ? on_notice : NULL, .notice_ctx = nt};
    return test_convert_mem(f, &o, out, n, e);
}

/* ---- fixtures ---- */

static const char *fixtures[] = {"sample_2x1_identity_f32.rmd1", "mlp_2_3_1_relu_sigmoid_f32.rmd1",
                                 "sample_2x1_identity_f64.rmd1"};
static const char *fixture_sha[] = {
    "269b32d817fe63502e3621c742b9f90b1f1210e89b16de9b3e309b92cfe96393",
    "daa87667eccfeb667082c56c9dd519da4d61649537b3f05c662bf5ac859b74e6",
    "f270650120bb2581a06f1a0103a3047e10f7a6caded468a6f9333d410fbe23be"};

static double elem(const ingot_tensor_info *t, uint64_t i)
{
    if (t->dtype == INGOT_DTYPE_F64) {
        double d;
        memcpy(&d, (const uint8_t *)t->data + 8 * i, 8);
        return d;
    }
    float x;
    memcpy(&x, (const uint8_t *)t->data + 4 * i, 4);
    return x;
}

TEST(fixture_bytes_are_the_documented_ones)
{
    for (int i = 0; i < 3; i++) {
        char path[512], hex[65];
        size_t n;
        snprintf(path, sizeof path, FIX "%s", fixtures[i]);
        uint8_t *b = test_read_file(path, &n);
        ASSERT_TRUE(b);
        test_sha256_hex(b, n, hex);
        CHECK(strcmp(hex, fixture_sha[i]) == 0, "%s sha256 %s", fixtures[i], hex);
        free(b);
    }
}

TEST(sample_2x1_f32)
{
    ingot_file *f;
    ASSERT_OK(ingot_file_open(FIX "sample_2x1_identity_f32.rmd1", NULL, &f, NULL));
    ASSERT_STR(ingot_file_format(f), "rmd1");
    ASSERT_STR(ingot_file_version(f), "1");
    ASSERT_U64(ingot_file_alignment(f), 4);
    ASSERT_U64(ingot_file_tensor_count(f), 2);
    ingot_tensor_info w, b;
    ASSERT_OK(ingot_file_tensor_at(f, 0, &w));
    ASSERT_STR(w.name, "layers.0.weight");
    ASSERT_EQ(w.dtype, INGOT_DTYPE_F32);
    ASSERT_EQ(w.rank, 2);
    ASSERT_U64(w.shape[0], 1);
    ASSERT_U64(w.shape[1], 2);
    ASSERT_U64(w.offset, 40);
    ASSERT_U64(w.nbytes, 8);
    ASSERT_EQ(w.flags, 0);
    ASSERT_TRUE(elem(&w, 0) == 2.0 && elem(&w, 1) == -1.0);
    ASSERT_OK(ingot_file_tensor_find(f, "layers.0.bias", &b));
    ASSERT_EQ(b.index, 1);
    ASSERT_EQ(b.rank, 1);
    ASSERT_U64(b.shape[0], 1);
    ASSERT_U64(b.offset, 48);
    ASSERT_TRUE(elem(&b, 0) == 0.5);
    /* the crate's example: f([3, 4]) = 0.5 + 2*3 - 1*4 = 2.5 */
    ASSERT_TRUE(elem(&b, 0) + elem(&w, 0) * 3 + elem(&w, 1) * 4 == 2.5);
    ingot_tensor_info t;
    ASSERT_ST(ingot_file_tensor_find(f, "layers.1.weight", &t), INGOT_NOT_FOUND);
    ASSERT_ST(ingot_file_tensor_find(f, "layers.00.weight", &t), INGOT_NOT_FOUND);
    ASSERT_ST(ingot_file_tensor_find(f, "layers.0.weights", &t), INGOT_NOT_FOUND);
    ASSERT_ST(ingot_file_tensor_find(f, "layers..bias", &t), INGOT_NOT_FOUND);
    ASSERT_ST(ingot_file_tensor_at(f, 2, &t), INGOT_RANGE);

    uint32_t lc;
    ASSERT_OK(ingot_file_meta_get_u32(f, "mlp.layer_count", &lc));
    ASSERT_EQ(lc, 1);
    uint64_t cnt;
    ASSERT_OK(ingot_file_meta_get_array(f, "mlp.sizes", INGOT_META_U64, &cnt));
    ASSERT_U64(cnt, 2);
    ASSERT_OK(ingot_file_meta_get_array(f, "mlp.activations", INGOT_META_STRING, &cnt));
    ASSERT_U64(cnt, 1);
    uint16_t ver;
    uint8_t dt;
    ASSERT_OK(ingot_file_meta_get_u16(f, "rmd1.version", &ver));
    ASSERT_OK(ingot_file_meta_get_u8(f, "rmd1.dtype", &dt));
    ASSERT_EQ(ver, 1);
    ASSERT_EQ(dt, 0);
    ASSERT_U64(ingot_file_meta_count(f), 6); /* sequential layout: no rmd1 layout keys */
    ingot_meta_info m;
    ASSERT_ST(ingot_file_meta_find(f, "rmd1.weight_offsets", &m), INGOT_NOT_FOUND);
    ASSERT_OK(ingot_file_verify(f, 1, NULL));
    ingot_file_close(f);
}

TEST(mlp_2_3_1_metadata_and_values)
{
    ingot_file *f;
    ASSERT_OK(ingot_file_open(FIX "mlp_2_3_1_relu_sigmoid_f32.rmd1", NULL, &f, NULL));
    ASSERT_U64(ingot_file_tensor_count(f), 4);
    static const char *names[] = {"layers.0.weight", "layers.1.weight", "layers.0.bias",
                                  "layers.1.bias"};
    static const uint64_t shapes[4][2] = {{3, 2}, {1, 3}, {3, 0}, {1, 0}};
    static const uint64_t offs[] = {60, 84, 96, 108};
    static const double vals[4][6] = {
        {0.5, -1, 1, 2, -0.5, 0.25}, {1, -2, 0.5}, {0, -1, 0.5}, {0.25}};
    for (uint32_t i = 0; i < 4; i++) {
        ingot_tensor_info t, u;
        ASSERT_OK(ingot_file_tensor_at(f, i, &t));
        ASSERT_STR(t.name, names[i]);
        ASSERT_EQ(t.rank, i < 2 ? 2 : 1);
        ASSERT_U64(t.shape[0], shapes[i][0]);
        ASSERT_U64(t.shape[1], shapes[i][1]);
        ASSERT_U64(t.offset, offs[i]);
        for (uint64_t k = 0; k < t.nelem; k++) CHECK(elem(&t, k) == vals[i][k], "%s[%d]", t.name, (int)k);
        ASSERT_OK(ingot_file_tensor_find(f, names[i], &u));
        ASSERT_EQ(u.index, i);
        uint8_t copy[64];
        ASSERT_OK(ingot_file_tensor_copy(f, i, copy, sizeof copy, NULL));
        ASSERT_MEM(copy, t.data, t.nbytes);
    }
    uint64_t sizes[3];
    ingot_meta_info m;
    ASSERT_OK(ingot_file_meta_find(f, "mlp.sizes", &m));
    ASSERT_TRUE(m.is_array && m.type == INGOT_META_U64 && m.count == 3);
    ASSERT_OK(ingot_file_meta_array_read(f, m.index, INGOT_META_U64, 0, 3, sizes));
    ASSERT_U64(sizes[0], 2);
    ASSERT_U64(sizes[1], 3);
    ASSERT_U64(sizes[2], 1);
    ASSERT_ST(ingot_file_meta_array_read(f, m.index, INGOT_META_U64, 2, 2, sizes), INGOT_RANGE);
    ASSERT_ST(ingot_file_meta_array_read(f, m.index, INGOT_META_U32, 0, 1, sizes), INGOT_WRONG_TYPE);
    const char *s;
    size_t len;
    ASSERT_ST(ingot_file_meta_array_string(f, m.index, 0, &s, &len), INGOT_WRONG_TYPE);
    ASSERT_OK(ingot_file_meta_find(f, "mlp.activations", &m));
    ASSERT_OK(ingot_file_meta_array_string(f, m.index, 0, &s, &len));
    ASSERT_TRUE(len == 4 && memcmp(s, "relu", 4) == 0);
    ASSERT_OK(ingot_file_meta_array_string(f, m.index, 1, &s, &len));
    ASSERT_TRUE(len == 7 && memcmp(s, "sigmoid", 7) == 0);
    ASSERT_ST(ingot_file_meta_array_string(f, m.index, 2, &s, &len), INGOT_RANGE);
    uint8_t ids[2];
    ASSERT_OK(ingot_file_meta_find(f, "rmd1.activation_ids", &m));
    ASSERT_OK(ingot_file_meta_array_read(f, m.index, INGOT_META_U8, 0, 2, ids));
    ASSERT_TRUE(ids[0] == 1 && ids[1] == 2);
    uint32_t u32;
    ASSERT_ST(ingot_file_meta_get_u32(f, "mlp.sizes", &u32), INGOT_WRONG_TYPE);
    ASSERT_ST(ingot_file_meta_get_u64(f, "mlp.layer_count", &sizes[0]), INGOT_WRONG_TYPE);
    ASSERT_ST(ingot_file_meta_at(f, 6, &m), INGOT_RANGE);

    /* forward pass of the spec's example 2: f([1, 2]) = sigmoid(-7.5) */
    ingot_tensor_info w0, b0, w1, b1;
    ingot_file_tensor_find(f, "layers.0.weight", &w0);
    ingot_file_tensor_find(f, "layers.0.bias", &b0);
    ingot_file_tensor_find(f, "layers.1.weight", &w1);
    ingot_file_tensor_find(f, "layers.1.bias", &b1);
    double x[2] = {1, 2}, hid[3], y = elem(&b1, 0);
    for (int o = 0; o < 3; o++) {
        hid[o] = elem(&b0, (uint64_t)o) + elem(&w0, 2 * (uint64_t)o) * x[0] + elem(&w0, 2 * (uint64_t)o + 1) * x[1];
        if (hid[o] < 0) hid[o] = 0;
    }
    for (int i = 0; i < 3; i++) y += elem(&w1, (uint64_t)i) * hid[i];
    y = 1 / (1 + exp(-y));
    ASSERT_TRUE(fabs(y - 5.5278e-4) < 1e-7);
    ingot_file_close(f);
}

TEST(f64_fixture_alignment_and_modes)
{
    size_t n;
    uint8_t *img = test_read_file(FIX "sample_2x1_identity_f64.rmd1", &n);
    ASSERT_TRUE(img && n == 64);
    ingot_file *f;
    /* L = 1: the weights start at byte 40, a multiple of 8 */
    ASSERT_OK(ingot_file_open(FIX "sample_2x1_identity_f64.rmd1", NULL, &f, NULL));
    ASSERT_U64(ingot_file_alignment(f), 8);
    ingot_tensor_info t;
    ASSERT_OK(ingot_file_tensor_at(f, 0, &t));
    ASSERT_EQ(t.dtype, INGOT_DTYPE_F64);
    ASSERT_EQ(t.flags, 0);
    ASSERT_TRUE(elem(&t, 0) == 2.0 && elem(&t, 1) == -1.0);
    ASSERT_OK(ingot_file_tensor_at(f, 1, &t));
    ASSERT_TRUE(elem(&t, 0) == 0.5);
    ingot_file_close(f);
    /* pread: data not mapped, read through ingot_file_tensor_read */
    ingot_open_opts pr = {.io = INGOT_IO_PREAD};
    ASSERT_OK(ingot_file_open(FIX "sample_2x1_identity_f64.rmd1", &pr, &f, NULL));
    ASSERT_OK(ingot_file_tensor_at(f, 0, &t));
    ASSERT_TRUE(t.data == NULL && t.flags == INGOT_TENSOR_NOT_MAPPED);
    double d[2];
    ASSERT_OK(ingot_file_tensor_read(f, 0, 0, d, 16, NULL));
    ASSERT_TRUE(d[0] == 2.0 && d[1] == -1.0);
    ASSERT_OK(ingot_file_verify(f, 2, NULL));
    ingot_file_close(f);
    /* a buffer one byte off 8-alignment: UNALIGNED views, tensor_copy still gives the values */
    uint8_t *raw = malloc(n + 9);
    uint8_t *mis = raw + ((8 - ((uintptr_t)raw & 7)) & 7) + 1;
    memcpy(mis, img, n);
    ASSERT_OK(open_buf(mis, n, &f));
    ASSERT_OK(ingot_file_tensor_at(f, 0, &t));
    ASSERT_TRUE(t.flags & INGOT_TENSOR_UNALIGNED);
    ASSERT_OK(ingot_file_tensor_copy(f, 0, d, sizeof d, NULL));
    ASSERT_TRUE(d[0] == 2.0 && d[1] == -1.0);
    ingot_file_close(f);
    /* two f64 layers: weights at 60, not a multiple of 8 */
    model m = {2, 4, 3, 1, {1, 2}, {2, 1}, {0, 2}, {0, 2}, {3, 0}};
    uint8_t buf[256];
    size_t bn = build(&m, buf, sizeof buf);
    uint8_t *big = malloc(bn + 16), *a8 = big + ((8 - ((uintptr_t)big & 7)) & 7);
    memcpy(a8, buf, bn);
    ASSERT_OK(ingot_file_open_buffer(a8, bn, NULL, &f, NULL));
    ASSERT_U64(ingot_file_alignment(f), 4);
    ASSERT_OK(ingot_file_tensor_at(f, 0, &t));
    ASSERT_U64(t.offset, 60);
    ASSERT_TRUE(t.flags & INGOT_TENSOR_UNALIGNED);
    ingot_file_close(f);
    free(big);
    free(raw);
    free(img);
}

/* ---- round trips ---- */

TEST(rewrite_is_byte_exact_for_every_fixture)
{
    for (int i = 0; i < 3; i++) {
        char path[512];
        size_t n;
        snprintf(path, sizeof path, FIX "%s", fixtures[i]);
        uint8_t *orig = test_read_file(path, &n);
        ingot_file *f, *g;
        ASSERT_OK(ingot_file_open(path, NULL, &f, NULL));
        for (int pushed = 0; pushed < 2; pushed++) {
            void *out;
            size_t on;
            notices nt = {0};
            ingot_error e;
            ASSERT_OK(convert(f, "rmd1", pushed, &nt, &out, &on, &e));
            CHECK(on == n && memcmp(out, orig, n) == 0, "%s: RMD1 -> RMD1 differs", fixtures[i]);
            ASSERT_EQ(nt.count, 0);
            ingot_writer_free_mem(NULL, out, on);
        }
        /* through .ingot and back, the way `ingot convert` streams it */
        void *ing, *back;
        size_t in_, bn;
        ingot_error e;
        ASSERT_OK(convert(f, "ingot", true, NULL, &ing, &in_, &e));
        ASSERT_OK(ingot_file_open_buffer(ing, in_, NULL, &g, NULL));
        ASSERT_STR(ingot_file_format(g), "ingot");
        ASSERT_OK(convert(g, "rmd1", true, NULL, &back, &bn, &e));
        CHECK(bn == n && memcmp(back, orig, n) == 0, "%s: RMD1 -> .ingot -> RMD1 differs",
              fixtures[i]);
        ingot_writer_free_mem(NULL, back, bn);
        ingot_file_close(g);
        ingot_writer_free_mem(NULL, ing, in_);
        ingot_file_close(f);
        free(orig);
    }
}

TEST(non_sequential_layout_with_gaps_round_trips)
{
    /* layer 1's weights first, a 2-scalar gap between, a gap at the end of B */
    model m = {2, 11, 6, 0, {2, 3}, {3, 1}, {5, 0}, {1, 4}, {3, 4}};
    uint8_t buf[512];
    size_t n = build(&m, buf, sizeof buf);
    ingot_file *f;
    ingot_error e;
    ASSERT_OK(ingot_file_open_buffer(buf, n, NULL, &f, &e));
    ASSERT_U64(ingot_file_meta_count(f), 12);
    ingot_tensor_info t;
    ASSERT_OK(ingot_file_tensor_find(f, "layers.0.weight", &t));
    ASSERT_TRUE(elem(&t, 0) == 6 && elem(&t, 5) == 11);
    ASSERT_OK(ingot_file_tensor_find(f, "layers.1.weight", &t));
    ASSERT_TRUE(elem(&t, 0) == 1 && elem(&t, 2) == 3);
    ASSERT_OK(ingot_file_tensor_find(f, "layers.1.bias", &t));
    ASSERT_TRUE(elem(&t, 0) == -5);
    const void *p;
    size_t len;
    ASSERT_OK(ingot_file_meta_get_bytes(f, "rmd1.weights_fill", &p, &len));
    ASSERT_U64(len, 8); /* scalars 4 and 5 of W */
    float fl[2];
    memcpy(fl, p, 8);
    ASSERT_TRUE(fl[0] == 4 && fl[1] == 5);
    ASSERT_OK(ingot_file_meta_get_bytes(f, "rmd1.biases_fill", &p, &len));
    ASSERT_U64(len, 8); /* B[0] and B[5] */
    memcpy(fl, p, 8);
    ASSERT_TRUE(fl[0] == -1 && fl[1] == -6);
    for (int pushed = 0; pushed < 2; pushed++) {
        void *out;
        size_t on;
        ingot_status st = convert(f, "rmd1", pushed, NULL, &out, &on, &e);
        ASSERT_OK(st);
        CHECK(on == n && memcmp(out, buf, n) == 0, "non-sequential rewrite differs (pushed %d)", pushed);
        ingot_writer_free_mem(NULL, out, on);
    }
    /* through .ingot: the layout keys travel with it */
    void *ing, *back;
    size_t in_, bn;
    ingot_file *g;
    ASSERT_OK(convert(f, "ingot", true, NULL, &ing, &in_, &e));
    ASSERT_OK(ingot_file_open_buffer(ing, in_, NULL, &g, NULL));
    ASSERT_OK(convert(g, "rmd1", true, NULL, &back, &bn, &e));
    CHECK(bn == n && memcmp(back, buf, n) == 0, "via .ingot differs");
    ingot_writer_free_mem(NULL, back, bn);
    ingot_file_close(g);
    ingot_writer_free_mem(NULL, ing, in_);
    ingot_file_close(f);
}

/* ---- the writer from scratch, and its refusals ---- */

typedef struct {
    uint32_t L;
    uint64_t sizes[4];
    const char *acts[3];
    ingot_dtype dt;
} topo;

static ingot_writer *writer_with(const topo *tp, bool keys, notices *nt)
{
    ingot_writer_opts wo = {.format = "rmd1"};
    ingot_writer *w = NULL;
    if (ingot_writer_new(&wo, &w, NULL) != INGOT_OK) return NULL;
    if (nt) ingot_writer_set_notice(w, on_notice, nt);
    if (keys) {
        size_t lens[3];
        for (uint32_t k = 0; k < tp->L; k++) lens[k] = strlen(tp->acts[k]);
        ingot_writer_set_u32(w, "mlp.layer_count", tp->L);
        ingot_writer_set_array(w, "mlp.sizes", INGOT_META_U64, tp->sizes, tp->L + 1);
        ingot_writer_set_string_array(w, "mlp.activations", INGOT_META_STRING,
                                      (const void *const *)tp->acts, lens, tp->L);
    }
    return w;
}

static float zeros[64];

static ingot_status add_layers(ingot_writer *w, const topo *tp, bool biases_first, ingot_error *e)
{
    for (int part = 0; part < 2; part++) {
        bool bias = biases_first ? part == 0 : part == 1;
        for (uint32_t k = 0; k < tp->L; k++) {
            char name[32];
            snprintf(name, sizeof name, "layers.%u.%s", k, bias ? "bias" : "weight");
            uint64_t shape[2] = {tp->sizes[k + 1], tp->sizes[k]};
            ingot_status st = ingot_writer_add_tensor(w, name, tp->dt, bias ? 1 : 2, shape, NULL,
                                                      zeros, e);
            if (st != INGOT_OK) return st;
        }
    }
    return INGOT_OK;
}

static ingot_status save(ingot_writer *w, void **out, size_t *n, ingot_error *e)
{
    ingot_status st = ingot_writer_begin_mem(w, e);
    if (st == INGOT_OK) st = ingot_writer_commit_mem(w, out, n, e);
    return st;
}

TEST(writer_from_topology_keys)
{
    topo tp = {2, {2, 3, 1}, {"relu", "sigmoid"}, INGOT_DTYPE_F32};
    notices nt = {0};
    ingot_writer *w = writer_with(&tp, true, &nt);
    ASSERT_TRUE(w);
    ASSERT_OK(ingot_writer_set_string(w, "general.name", "demo"));
    ingot_error e;
    /* biases first, with data pointers: reordered to all weights, then all biases */
    ASSERT_OK(add_layers(w, &tp, true, &e));
    void *out;
    size_t n;
    ASSERT_OK(save(w, &out, &n, &e));
    ASSERT_EQ(nt.count, 1);
    ASSERT_TRUE(strstr(nt.last, "general.name") != NULL);
    ASSERT_U64(n, 112);
    size_t fn;
    uint8_t *fx = test_read_file(FIX "mlp_2_3_1_relu_sigmoid_f32.rmd1", &fn);
    ASSERT_MEM(out, fx, 60); /* header and layer table equal the fixture's */
    free(fx);
    ingot_writer_free_mem(NULL, out, n);
    ingot_writer_free(w);
}

TEST(writer_reads_keys_from_json_text)
{
    /* safetensors holds only strings: the topology comes back as "2", "[2,3,1]", ... */
    ingot_writer_opts wo = {.format = "rmd1"};
    ingot_writer *w;
    ingot_error e;
    ASSERT_OK(ingot_writer_new(&wo, &w, &e));
    ingot_writer_set_string(w, "mlp.layer_count", "2");
    ingot_writer_set_string(w, "mlp.sizes", "[2, 3, 1]");
    ingot_writer_set_string(w, "mlp.activations", "[\"relu\",\"sigmoid\"]");
    ingot_writer_set_string(w, "rmd1.activation_ids", "[1,2]");
    topo tp = {2, {2, 3, 1}, {"relu", "sigmoid"}, INGOT_DTYPE_F32};
    ASSERT_OK(add_layers(w, &tp, false, &e));
    void *out;
    size_t n, fn;
    ASSERT_OK(save(w, &out, &n, &e));
    uint8_t *fx = test_read_file(FIX "mlp_2_3_1_relu_sigmoid_f32.rmd1", &fn);
    ASSERT_TRUE(n == fn);
    ASSERT_MEM(out, fx, 60);
    free(fx);
    ingot_writer_free_mem(NULL, out, n);
    ingot_writer_free(w);
    static const char *bad[][3] = {{"2x", "[2,3,1]", "[\"relu\",\"sigmoid\"]"},
                                   {"2", "[2,3]", "[\"relu\",\"sigmoid\"]"},
                                   {"2", "[2,3,-1]", "[\"relu\",\"sigmoid\"]"},
                                   {"2", "[2,3,1]", "[\"relu\"]"},
                                   {"2", "[2,3,1]", "relu,sigmoid"}};
    static const char *where[] = {"mlp.layer_count", "mlp.sizes", "mlp.sizes", "mlp.activations",
                                  "mlp.activations"};
    for (int i = 0; i < 5; i++) {
        ASSERT_OK(ingot_writer_new(&wo, &w, &e));
        ingot_writer_set_string(w, "mlp.layer_count", bad[i][0]);
        ingot_writer_set_string(w, "mlp.sizes", bad[i][1]);
        ingot_writer_set_string(w, "mlp.activations", bad[i][2]);
        ASSERT_OK(add_layers(w, &tp, false, &e));
        ASSERT_ST(save(w, &out, &n, &e), INGOT_BAD_METADATA);
        ASSERT_STR(e.where, where[i]);
        ingot_writer_free(w);
    }
}

TEST(writer_refusals)
{
    topo tp = {2, {2, 3, 1}, {"relu", "sigmoid"}, INGOT_DTYPE_F32};
    ingot_error e;
    void *out;
    size_t n;
    uint64_t shape[2] = {3, 2};

    /* no topology keys */
    ingot_writer *w = writer_with(&tp, false, NULL);
    ASSERT_OK(add_layers(w, &tp, false, &e));
    ASSERT_ST(save(w, &out, &n, &e), INGOT_BAD_METADATA);
    ASSERT_STR(e.where, "mlp.layer_count");
    ingot_writer_free(w);

    /* F16 tensor, a foreign tensor name, a wrong rank: refused at add_tensor, naming it */
    static const struct {
        const char *name;
        ingot_dtype dt;
        uint32_t rank;
        ingot_status want;
    } bt[] = {{"layers.0.weight", INGOT_DTYPE_F16, 2, INGOT_UNSUPPORTED},
              {"embed.weight", INGOT_DTYPE_F32, 2, INGOT_UNSUPPORTED},
              {"layers.0.bias", INGOT_DTYPE_F32, 2, INGOT_BAD_SHAPE}};
    for (int i = 0; i < 3; i++) {
        w = writer_with(&tp, true, NULL);
        ASSERT_ST(ingot_writer_add_tensor(w, bt[i].name, bt[i].dt, bt[i].rank, shape, NULL, zeros, &e),
                  bt[i].want);
        ASSERT_STR(e.where, bt[i].name);
        ingot_writer_free(w);
    }

    /* unknown activation */
    topo bad = tp;
    bad.acts[1] = "gelu";
    w = writer_with(&bad, true, NULL);
    ASSERT_OK(add_layers(w, &bad, false, &e));
    ASSERT_ST(save(w, &out, &n, &e), INGOT_UNSUPPORTED);
    ASSERT_STR(e.where, "mlp.activations");
    ingot_writer_free(w);

    /* sizes inconsistent with a tensor */
    w = writer_with(&tp, true, NULL);
    topo other = tp;
    other.sizes[1] = 4;
    ASSERT_OK(add_layers(w, &other, false, &e));
    ASSERT_ST(save(w, &out, &n, &e), INGOT_BAD_SHAPE);
    ASSERT_STR(e.where, "layers.0.weight");
    ingot_writer_free(w);

    /* a layer's tensors missing */
    w = writer_with(&tp, true, NULL);
    topo one = tp;
    one.L = 1;
    ASSERT_OK(add_layers(w, &one, false, &e));
    ASSERT_ST(save(w, &out, &n, &e), INGOT_BAD_METADATA);
    ingot_writer_free(w);

    /* a layer index past the count */
    w = writer_with(&one, true, NULL);
    ASSERT_OK(add_layers(w, &one, false, &e));
    uint64_t s1[1] = {1};
    ASSERT_OK(ingot_writer_add_tensor(w, "layers.5.bias", INGOT_DTYPE_F32, 1, s1, NULL, zeros, &e));
    ASSERT_ST(save(w, &out, &n, &e), INGOT_BAD_METADATA);
    ingot_writer_free(w);

    /* mixed dtypes */
    w = writer_with(&one, true, NULL);
    ASSERT_OK(ingot_writer_add_tensor(w, "layers.0.weight", INGOT_DTYPE_F32, 2, shape, NULL, zeros, &e));
    ASSERT_OK(ingot_writer_add_tensor(w, "layers.0.bias", INGOT_DTYPE_F64, 1, shape, NULL, zeros, &e));
    ASSERT_ST(save(w, &out, &n, &e), INGOT_UNSUPPORTED);
    ASSERT_STR(e.where, "layers.0.bias");
    ingot_writer_free(w);

    /* ids that disagree with the names; a dtype key that disagrees; version 2 */
    w = writer_with(&tp, true, NULL);
    uint8_t ids[2] = {1, 3};
    ingot_writer_set_array(w, "rmd1.activation_ids", INGOT_META_U8, ids, 2);
    ASSERT_OK(add_layers(w, &tp, false, &e));
    ASSERT_ST(save(w, &out, &n, &e), INGOT_BAD_METADATA);
    ASSERT_STR(e.where, "rmd1.activation_ids");
    ingot_writer_free(w);
    w = writer_with(&tp, true, NULL);
    ingot_writer_set_u8(w, "rmd1.dtype", 1);
    ASSERT_OK(add_layers(w, &tp, false, &e));
    ASSERT_ST(save(w, &out, &n, &e), INGOT_BAD_METADATA);
    ASSERT_STR(e.where, "rmd1.dtype");
    ingot_writer_free(w);
    w = writer_with(&tp, true, NULL);
    ingot_writer_set_u16(w, "rmd1.version", 2);
    ASSERT_OK(add_layers(w, &tp, false, &e));
    ASSERT_ST(save(w, &out, &n, &e), INGOT_UNSUPPORTED);
    ingot_writer_free(w);

    /* layer count of the wrong type; negative sizes */
    w = writer_with(&tp, false, NULL);
    ingot_writer_set_string(w, "mlp.layer_count", "2");
    ASSERT_OK(add_layers(w, &tp, false, &e));
    ASSERT_ST(save(w, &out, &n, &e), INGOT_BAD_METADATA);
    ingot_writer_free(w);
    w = writer_with(&tp, false, NULL);
    int64_t neg[3] = {2, -3, 1};
    size_t lens[2] = {4, 7};
    ingot_writer_set_i64(w, "mlp.layer_count", 2); /* signed types are accepted */
    ingot_writer_set_array(w, "mlp.sizes", INGOT_META_I64, neg, 3);
    ingot_writer_set_string_array(w, "mlp.activations", INGOT_META_STRING,
                                  (const void *const *)tp.acts, lens, 2);
    ASSERT_OK(add_layers(w, &tp, false, &e));
    ASSERT_ST(save(w, &out, &n, &e), INGOT_BAD_METADATA);
    ASSERT_STR(e.where, "mlp.sizes");
    ingot_writer_free(w);

    /* layout keys with an overlap; fill of the wrong length */
    w = writer_with(&tp, true, NULL);
    uint32_t wo[2] = {0, 5};
    ingot_writer_set_array(w, "rmd1.weight_offsets", INGOT_META_U32, wo, 2);
    ASSERT_OK(add_layers(w, &tp, false, &e));
    ASSERT_ST(save(w, &out, &n, &e), INGOT_BAD_METADATA);
    ASSERT_STR(e.where, "rmd1.weight_offsets");
    ingot_writer_free(w);
    w = writer_with(&tp, true, NULL);
    ingot_writer_set_u32(w, "rmd1.weights_len", 10);
    ASSERT_OK(add_layers(w, &tp, false, &e));
    ASSERT_ST(save(w, &out, &n, &e), INGOT_BAD_METADATA);
    ASSERT_STR(e.where, "rmd1.weights_fill");
    ingot_writer_free(w);

    /* pushed data out of file order cannot be rearranged */
    w = writer_with(&one, true, NULL);
    uint64_t s3[1] = {3};
    ASSERT_OK(ingot_writer_add_tensor(w, "layers.0.bias", INGOT_DTYPE_F32, 1, s3, NULL, NULL, &e));
    ASSERT_OK(ingot_writer_add_tensor(w, "layers.0.weight", INGOT_DTYPE_F32, 2, shape, NULL, NULL, &e));
    ASSERT_ST(ingot_writer_begin_mem(w, &e), INGOT_UNSUPPORTED);
    ingot_writer_free(w);

    /* accepted: signed integer keys, F64 */
    topo t64 = {1, {2, 3}, {"tanh"}, INGOT_DTYPE_F64};
    w = writer_with(&t64, false, NULL);
    int64_t sz[2] = {2, 3};
    size_t l1 = 4;
    ingot_writer_set_i64(w, "mlp.layer_count", 1);
    ingot_writer_set_array(w, "mlp.sizes", INGOT_META_I64, sz, 2);
    ingot_writer_set_string_array(w, "mlp.activations", INGOT_META_STRING,
                                  (const void *const *)t64.acts, &l1, 1);
    ASSERT_OK(add_layers(w, &t64, false, &e));
    ASSERT_OK(save(w, &out, &n, &e));
    ASSERT_U64(n, 20 + 20 + 9 * 8);
    ASSERT_EQ(((uint8_t *)out)[6], 1);
    ASSERT_EQ(((uint8_t *)out)[36], 3);
    ingot_writer_free_mem(NULL, out, n);
    ingot_writer_free(w);
}

/* ---- malformed catalogue ---- */

static ingot_status open_err(const uint8_t *b, size_t n, ingot_error *e)
{
    ingot_file *f = NULL;
    ingot_status st = ingot_file_open_buffer(b, n, &force, &f, e);
    ingot_file_close(f);
    return st;
}

#define BAD(mutate, code)                                                                          \
    do {                                                                                           \
        uint8_t b_[512];                                                                           \
        size_t n_ = build(&mlp231, b_, sizeof b_);                                                 \
        mutate;                                                                                    \
        ingot_error e_;                                                                            \
        ingot_status st_ = open_err(b_, n_, &e_);                                                  \
        CHECK(st_ == (code), "%s: got %s (%s), want %s", #mutate, ingot_status_name(st_),          \
              st_ ? e_.msg : "", ingot_status_name(code));                                         \
    } while (0)

TEST(malformed_catalogue)
{
    uint8_t b[512];
    size_t n = build(&mlp231, b, sizeof b);
    ASSERT_U64(n, 112);
    /* the builder agrees with the fixture byte for byte */
    size_t fn;
    uint8_t *fx = test_read_file(FIX "mlp_2_3_1_relu_sigmoid_f32.rmd1", &fn);
    ASSERT_U64(fn, n);
    ASSERT_MEM(b + 20, fx + 20, 40);
    free(fx);
    ASSERT_OK(open_err(b, n, NULL));
    /* 1: every truncation point, forced and detected */
    for (size_t k = 0; k < n; k++) {
        ingot_status st = open_err(b, k, NULL);
        CHECK(st == INGOT_TRUNCATED, "truncated to %zu: %s", k, ingot_status_name(st));
        ingot_file *f = NULL;
        st = ingot_file_open_buffer(b, k, NULL, &f, NULL);
        CHECK(st == (k < 4 && k > 0 ? INGOT_UNKNOWN_FORMAT : INGOT_TRUNCATED),
              "detected, truncated to %zu: %s", k, ingot_status_name(st));
        ingot_file_close(f);
    }
    /* 2: magic and version */
    BAD(b_[0] = 'X', INGOT_BAD_MAGIC);
    BAD(b_[3] = '2', INGOT_BAD_MAGIC);
    BAD(b_[4] = 0, INGOT_BAD_VERSION);
    BAD(b_[4] = 2, INGOT_BAD_VERSION);
    BAD((b_[4] = 0, b_[5] = 1), INGOT_BAD_VERSION); /* byte-swapped 1 */
    BAD(b_[5] = 0xff, INGOT_BAD_VERSION);
    /* 7: dtype and activation enums */
    BAD(b_[6] = 2, INGOT_BAD_TYPE);
    BAD(b_[6] = 0xff, INGOT_BAD_TYPE);
    BAD(b_[20 + 16] = 5, INGOT_BAD_TYPE);
    BAD(b_[40 + 16] = 0xff, INGOT_BAD_TYPE);
    /* reserved bytes */
    BAD(b_[7] = 1, INGOT_BAD_FLAGS);
    BAD(b_[20 + 17] = 1, INGOT_BAD_FLAGS);
    BAD(b_[40 + 19] = 0x80, INGOT_BAD_FLAGS);
    /* 4: counts */
    BAD(st32(b_ + 8, 0), INGOT_BAD_COUNT);
    BAD(st32(b_ + 8, 0xffffffff), INGOT_BAD_COUNT);
    BAD(st32(b_ + 8, 5), INGOT_BAD_COUNT); /* more layers than biases */
    BAD((st32(b_ + 8, 1000000), st32(b_ + 12, 0xffffffff), st32(b_ + 16, 0xffffffff)),
        INGOT_LIMIT); /* 18: a tiny file declaring 10^6 layers */
    /* 16: declared sizes larger than the file */
    BAD(st32(b_ + 12, 10), INGOT_TRUNCATED);
    BAD(st32(b_ + 16, 0xffffffff), INGOT_TRUNCATED);
    BAD(st32(b_ + 8, 3), INGOT_TRUNCATED);
    /* 13: trailing bytes, ranges */
    BAD(n_++, INGOT_BAD_LAYOUT);
    BAD((st32(b_ + 12, 8), n_ -= 4), INGOT_BAD_LAYOUT); /* layer 1's weights past W */
    BAD(st32(b_ + 40 + 8, 7), INGOT_BAD_LAYOUT);
    BAD(st32(b_ + 40 + 8, 0xffffffff), INGOT_BAD_LAYOUT); /* w_off + n wraps u32 */
    BAD(st32(b_ + 40 + 12, 4), INGOT_BAD_LAYOUT);
    BAD(st32(b_ + 40 + 12, 0xfffffffe), INGOT_BAD_LAYOUT);
    BAD(st32(b_ + 40 + 8, 3), INGOT_BAD_LAYOUT); /* overlaps layer 0's weights */
    BAD(st32(b_ + 40 + 12, 2), INGOT_BAD_LAYOUT); /* overlaps layer 0's biases */
    /* 11: shapes and the chain */
    BAD(st32(b_ + 20, 0), INGOT_BAD_SHAPE);
    BAD(st32(b_ + 24, 0), INGOT_BAD_SHAPE);
    BAD(st32(b_ + 40, 2), INGOT_BAD_SHAPE); /* in_1 != out_0 */
    BAD((st32(b_ + 20, 0xffffffff), st32(b_ + 24, 0xffffffff)), INGOT_BAD_LAYOUT);

    /* byte flips anywhere in header and table: an error or a valid file, never a crash */
    for (size_t k = 0; k < 60; k++)
        for (int bit = 0; bit < 8; bit++) {
            uint8_t c[512];
            memcpy(c, b, n);
            c[k] ^= (uint8_t)(1u << bit);
            ingot_file *f = NULL;
            ingot_error e;
            ingot_status st = ingot_file_open_buffer(c, n, &force, &f, &e);
            if (st == INGOT_OK) {
                for (uint64_t i = 0; i < ingot_file_tensor_count(f); i++) {
                    ingot_tensor_info t;
                    CHECK(ingot_file_tensor_at(f, i, &t) == INGOT_OK, "flip %zu.%d", k, bit);
                    CHECK(t.offset + t.nbytes <= n, "flip %zu.%d: tensor outside", k, bit);
                }
                CHECK(ingot_file_verify(f, 1, NULL) == INGOT_OK, "flip %zu.%d", k, bit);
            } else {
                CHECK(e.code == st && e.offset <= n, "flip %zu.%d: error record", k, bit);
            }
            ingot_file_close(f);
        }
}

TEST(error_records_name_the_place)
{
    ingot_error e;
    uint8_t b[512];
    size_t n = build(&mlp231, b, sizeof b);
    st32(b + 40, 2);
    ASSERT_ST(open_err(b, n, &e), INGOT_BAD_SHAPE);
    ASSERT_STR(e.where, "layer 1");
    ASSERT_U64(e.offset, 40);
    n = build(&mlp231, b, sizeof b);
    b[40 + 16] = 9;
    ASSERT_ST(open_err(b, n, &e), INGOT_BAD_TYPE);
    ASSERT_U64(e.offset, 56);
    n = build(&mlp231, b, sizeof b);
    st32(b + 40 + 8, 3);
    ASSERT_ST(open_err(b, n, &e), INGOT_BAD_LAYOUT);
    ASSERT_STR(e.where, "layers.1.weight");
}

TEST(probe_scores)
{
    /* detection by content only; a 4-byte "RMD1" prefix alone is not a valid file */
    ingot_file *f = NULL;
    uint8_t b[512];
    size_t n = build(&mlp231, b, sizeof b);
    ASSERT_OK(ingot_file_open_buffer(b, n, NULL, &f, NULL));
    ASSERT_STR(ingot_file_format(f), "rmd1");
    ingot_file_close(f);
    ASSERT_ST(ingot_file_open_buffer("RMD1", 4, NULL, &f, NULL), INGOT_TRUNCATED);
    ASSERT_ST(ingot_file_open_buffer("RMD0xxxxxxxxxxxxxxxxxxxx", 24, &force, &f, NULL),
              INGOT_BAD_MAGIC);
}

/* ---- CLI ---- */

static int sh(const char *cmd)
{
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

#define OUTD INGOT_BINARY_DIR "/rmd1_cli"

TEST(cli_info_verify_convert)
{
    const char *fx = FIX "mlp_2_3_1_relu_sigmoid_f32.rmd1";
    ASSERT_EQ(sh("mkdir -p " OUTD), 0);
    ASSERT_EQ(sh(INGOT_CLI " info --json " FIX "mlp_2_3_1_relu_sigmoid_f32.rmd1 > " OUTD "/info.json"), 0);
    size_t n;
    char *js = (char *)test_read_file(OUTD "/info.json", &n);
    ASSERT_TRUE(js);
    js = realloc(js, n + 1);
    js[n] = 0;
    ASSERT_TRUE(strstr(js, "\"rmd1\"") && strstr(js, "layers.1.bias") &&
                strstr(js, "mlp.activations") && strstr(js, "sigmoid"));
    free(js);
    ASSERT_EQ(sh(INGOT_CLI " verify " FIX "mlp_2_3_1_relu_sigmoid_f32.rmd1 > /dev/null"), 0);
    ASSERT_EQ(sh(INGOT_CLI " convert " FIX "mlp_2_3_1_relu_sigmoid_f32.rmd1 " OUTD "/m.ingot > /dev/null"), 0);
    ASSERT_EQ(sh(INGOT_CLI " convert " OUTD "/m.ingot " OUTD "/m.rmd1 > /dev/null"), 0);
    size_t a, c;
    uint8_t *orig = test_read_file(fx, &a), *back = test_read_file(OUTD "/m.rmd1", &c);
    ASSERT_TRUE(orig && back && a == c && memcmp(orig, back, a) == 0);
    free(orig);
    free(back);
    ASSERT_EQ(sh(INGOT_CLI " dump " FIX "mlp_2_3_1_relu_sigmoid_f32.rmd1 layers.0.weight > /dev/null"), 0);
    /* through safetensors (string metadata) and back: still byte-exact */
    ASSERT_EQ(sh(INGOT_CLI " convert " FIX "mlp_2_3_1_relu_sigmoid_f32.rmd1 " OUTD "/m.safetensors > /dev/null 2>&1"), 0);
    ASSERT_EQ(sh(INGOT_CLI " convert " OUTD "/m.safetensors " OUTD "/m2.rmd1 > /dev/null"), 0);
    orig = test_read_file(fx, &a);
    back = test_read_file(OUTD "/m2.rmd1", &c);
    ASSERT_TRUE(orig && back && a == c && memcmp(orig, back, a) == 0);
    free(orig);
    free(back);
    ASSERT_EQ(sh("rm -rf " OUTD), 0);
}

RUN_TESTS(T(fixture_bytes_are_the_documented_ones), T(sample_2x1_f32),
          T(mlp_2_3_1_metadata_and_values), T(f64_fixture_alignment_and_modes),
          T(rewrite_is_byte_exact_for_every_fixture), T(non_sequential_layout_with_gaps_round_trips),
          T(writer_from_topology_keys), T(writer_reads_keys_from_json_text), T(writer_refusals), T(malformed_catalogue),
          T(error_records_name_the_place), T(probe_scores), T(cli_info_verify_convert))
