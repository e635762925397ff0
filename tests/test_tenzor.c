/*
 * test_tenzor.c - `.tenzor` reader and writer: the three hand-made fixtures (names as hashes,
 * lookup by hashing, unaligned packing, metadata), byte-exact rewrites (tenzor -> tenzor,
 * tenzor -> .ingot -> tenzor, and upstream's unit-test file from real names with names=false),
 * names kept through ingot -> tenzor -> ingot, the JSON mapping both ways with its notices,
 * RMD1 -> tenzor -> RMD1, the writer's refusals, the malformed catalogue with exact codes, CLI.
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

#define FIX INGOT_FIXTURES "/tenzor/handmade/"

static const ingot_open_opts force = {.format = "tenzor"};

static void st32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void st64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t fnv(const char *s)
{
    uint64_t h = 0xCBF29CE484222325ull;
    for (; *s; s++) {
        h ^= (uint8_t)*s;
        h *= 0x100000001B3ull;
    }
    return h;
}

/* ---- conversions through the public writer (as in test_rmd1.c) ---- */

typedef struct {
    int count;
    char all[2048];
} notices;

static void on_notice(void *ctx, const char *msg)
{
    notices *n = ctx;
    n->count++;
    size_t l = strlen(n->all);
    snprintf(n->all + l, sizeof n->all - l, "%s\n", msg);
}

static ingot_status convert(const ingot_file *f, const char *format, bool pushed, notices *nt,
                            void **out, size_t *n, ingot_error *e)
{
    test_convert_opts o = {
        .format = format, .pushed = pushed, .notice = nt ? on_notice : NULL, .notice_ctx = nt};
    return test_convert_mem(f, &o, out, n, e);
}

/* ---- a file builder: canonical layout around a JSON text and index entries ---- */

typedef struct {
    uint64_t hash;
    uint8_t code, ndim;
    uint32_t shape[5];
    uint64_t size;
} entry;

static size_t tz_build(const char *json, const entry *e, uint32_t n, uint8_t *buf, size_t cap)
{
    size_t js = strlen(json), io = (64 + js + 7) & ~(size_t)7;
    size_t de = io + 48 * (size_t)n, dof = (de + 4095) & ~(size_t)4095, total = dof;
    for (uint32_t i = 0; i < n; i++) total += e[i].size;
    if (total > cap) return 0;
    memset(buf, 0, total);
    memcpy(buf, "TENZOR\0\0", 8);
    st32(buf + 8, 1);
    st32(buf + 16, n);
    st64(buf + 24, io);
    st64(buf + 32, dof);
    st32(buf + 40, (uint32_t)js);
    memcpy(buf + 64, json, js);
    uint64_t pos = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint8_t *p = buf + io + 48 * i;
        st64(p, e[i].hash);
        p[8] = e[i].code;
        p[9] = e[i].ndim;
        for (int d = 0; d < 5; d++) st32(p + 12 + 4 * d, e[i].shape[d]);
        st64(p + 32, pos);
        st64(p + 40, e[i].size);
        for (uint64_t k = 0; k < e[i].size; k++) buf[dof + pos + k] = (uint8_t)(k * 7 + i);
        pos += e[i].size;
    }
    return total;
}

static ingot_status open_err(const uint8_t *b, size_t n, ingot_error *e)
{
    ingot_file *f = NULL;
    ingot_status st = ingot_file_open_buffer(b, n, &force, &f, e);
    ingot_file_close(f);
    return st;
}

/* ---- fixtures ---- */

static const char *fixtures[] = {"two_f32_like_upstream_test.tenzor", "empty.tenzor",
                                 "mixed_dtypes.tenzor"};
static const char *fixture_sha[] = {
    "24f74974bea71a27dda6e050df757b6afb82ee157774261f8357c5eff2c48ec0",
    "e5212c45ea937a17742189d8e2515dfcc44aa698d5eaf63e663f33b3a417179d",
    "c46c6ee04e8e91255d1b9ff58063dc86c65b95e921490b9c6bc5d9fa0307d66d"};

TEST(fnv1a_vectors)
{
    ASSERT_TRUE(fnv("") == 0xCBF29CE484222325ull);
    ASSERT_TRUE(fnv("a") == 0xAF63DC4C8601EC8Cull);
    ASSERT_TRUE(fnv("foobar") == 0x85944171F73967E8ull);
    ASSERT_TRUE(fnv("tensor1") == 0x91B44B411A252B0Full);
    ASSERT_TRUE(fnv("conv1.weight") == 0x69A29A2CEE47D254ull);
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

TEST(upstream_test_file)
{
    ingot_file *f;
    ASSERT_OK(ingot_file_open(FIX "two_f32_like_upstream_test.tenzor", NULL, &f, NULL));
    ASSERT_STR(ingot_file_format(f), "tenzor");
    ASSERT_STR(ingot_file_version(f), "1");
    ASSERT_U64(ingot_file_tensor_count(f), 2);
    ASSERT_U64(ingot_file_meta_count(f), 0);
    ingot_tensor_info t, u;
    ASSERT_OK(ingot_file_tensor_at(f, 0, &t));
    ASSERT_STR(t.name, "#91b44b411a252b0f");
    ASSERT_EQ(t.dtype, INGOT_DTYPE_F32);
    ASSERT_EQ(t.rank, 2);
    ASSERT_TRUE(t.shape[0] == 2 && t.shape[1] == 3);
    ASSERT_U64(t.offset, 4096);
    ASSERT_EQ(t.flags, 0);
    float v[6];
    memcpy(v, t.data, 24);
    for (int i = 0; i < 6; i++) CHECK(v[i] == (float)(i + 1), "tensor1[%d]", i);
    /* lookup by the real name works by hashing, by the #hash name too */
    ASSERT_OK(ingot_file_tensor_find(f, "tensor2", &u));
    ASSERT_EQ(u.index, 1);
    ASSERT_STR(u.name, "#91b44c411a252cc2");
    memcpy(v, u.data, 12);
    ASSERT_TRUE(v[0] == 0.1f && v[1] == 0.2f && v[2] == 0.3f);
    ASSERT_OK(ingot_file_tensor_find(f, "#91b44b411a252b0f", &u));
    ASSERT_EQ(u.index, 0);
    ASSERT_ST(ingot_file_tensor_find(f, "tensor3", &u), INGOT_NOT_FOUND);
    ASSERT_ST(ingot_file_tensor_find(f, "#91B44B411A252B0F", &u), INGOT_NOT_FOUND);
    ASSERT_ST(ingot_file_tensor_find(f, "", &u), INGOT_NOT_FOUND);
    ASSERT_OK(ingot_file_verify(f, 1, NULL));
    ingot_file_close(f);
    /* pread */
    ingot_open_opts pr = {.io = INGOT_IO_PREAD};
    ASSERT_OK(ingot_file_open(FIX "two_f32_like_upstream_test.tenzor", &pr, &f, NULL));
    ASSERT_OK(ingot_file_tensor_at(f, 1, &t));
    ASSERT_TRUE(t.data == NULL && (t.flags & INGOT_TENSOR_NOT_MAPPED));
    ASSERT_OK(ingot_file_tensor_read(f, 1, 0, v, 12, NULL));
    ASSERT_TRUE(v[2] == 0.3f);
    ASSERT_OK(ingot_file_verify(f, 2, NULL));
    ingot_file_close(f);
}

TEST(mixed_dtypes_fixture)
{
    static const struct {
        const char *name;
        uint64_t hash;
        ingot_dtype dt;
        uint32_t rank;
        uint64_t shape[5];
        uint64_t off;
    } want[] = {
        {"emb.f16", 0x745F3420DF7CC464ull, INGOT_DTYPE_F16, 1, {3}, 0},
        {"w.f32", 0x53CFA16AE63CEC2Bull, INGOT_DTYPE_F32, 2, {2, 2}, 6},
        {"ids.i64", 0xC0399C73AF375806ull, INGOT_DTYPE_I64, 1, {2}, 22},
        {"mask.u8", 0x1C26DF12B09599B8ull, INGOT_DTYPE_U8, 2, {1, 4}, 38},
        {"scale.bf16", 0xDE2F7B46DEA52312ull, INGOT_DTYPE_BF16, 0, {0}, 42},
        {"r5.i32", 0xE6B690293598A2E4ull, INGOT_DTYPE_I32, 5, {1, 2, 1, 1, 2}, 44},
        {"d.f64", 0x9424D5C92B00ED11ull, INGOT_DTYPE_F64, 1, {1}, 60},
    };
    ingot_file *f;
    ASSERT_OK(ingot_file_open(FIX "mixed_dtypes.tenzor", NULL, &f, NULL));
    ASSERT_U64(ingot_file_tensor_count(f), 7);
    for (uint32_t i = 0; i < 7; i++) {
        ingot_tensor_info t, u;
        ASSERT_OK(ingot_file_tensor_at(f, i, &t));
        CHECK(fnv(want[i].name) == want[i].hash, "%s hash", want[i].name);
        char hx[18];
        snprintf(hx, sizeof hx, "#%016llx", (unsigned long long)want[i].hash);
        ASSERT_STR(t.name, hx);
        ASSERT_EQ(t.dtype, want[i].dt);
        ASSERT_EQ(t.rank, want[i].rank);
        for (uint32_t d = 0; d < t.rank; d++) ASSERT_U64(t.shape[d], want[i].shape[d]);
        ASSERT_U64(t.offset, 4096 + want[i].off);
        uint32_t es = ingot_dtype_block_bytes(t.dtype);
        CHECK(((t.flags & INGOT_TENSOR_UNALIGNED) != 0) == (want[i].off % es != 0), "%s flags",
              want[i].name);
        ASSERT_OK(ingot_file_tensor_find(f, want[i].name, &u));
        ASSERT_EQ(u.index, i);
    }
    ingot_tensor_info t;
    uint8_t buf[64];
    ASSERT_OK(ingot_file_tensor_find(f, "w.f32", &t));
    ASSERT_TRUE(t.flags & INGOT_TENSOR_UNALIGNED);
    ASSERT_OK(ingot_file_tensor_copy(f, t.index, buf, sizeof buf, NULL));
    float w[4];
    memcpy(w, buf, 16);
    ASSERT_TRUE(w[0] == 1.5f && w[1] == -2 && w[2] == 0.25f && w[3] == 1024);
    ASSERT_OK(ingot_file_tensor_find(f, "ids.i64", &t));
    int64_t ids[2];
    ASSERT_OK(ingot_file_tensor_copy(f, t.index, ids, sizeof ids, NULL));
    ASSERT_TRUE(ids[0] == INT64_MIN && ids[1] == INT64_MAX);
    ASSERT_OK(ingot_file_tensor_find(f, "scale.bf16", &t));
    ASSERT_TRUE(t.nelem == 1 && t.nbytes == 2);
    ASSERT_TRUE(((const uint8_t *)t.data)[0] == 0x49 && ((const uint8_t *)t.data)[1] == 0x40);
    ASSERT_OK(ingot_file_tensor_find(f, "d.f64", &t));
    double d;
    ASSERT_OK(ingot_file_tensor_copy(f, t.index, &d, 8, NULL));
    ASSERT_TRUE(d == 3.141592653589793);
    /* metadata {"model":"tiny","epoch":3}; the member order is not sorted, so it is exposed */
    ASSERT_U64(ingot_file_meta_count(f), 3);
    const char *s;
    size_t len;
    int64_t ep;
    ASSERT_OK(ingot_file_meta_get_string(f, "model", &s, &len));
    ASSERT_TRUE(len == 4 && memcmp(s, "tiny", 4) == 0);
    ASSERT_OK(ingot_file_meta_get_i64(f, "epoch", &ep));
    ASSERT_EQ(ep, 3);
    ingot_meta_info m;
    ASSERT_OK(ingot_file_meta_at(f, 0, &m));
    ASSERT_TRUE(m.key_len == 5 && memcmp(m.key, "model", 5) == 0); /* file order */
    ASSERT_ST(ingot_file_meta_find(f, "ingot.tensor_names", &m), INGOT_NOT_FOUND);
    ASSERT_OK(ingot_file_meta_find(f, "tenzor.key_order", &m));
    ASSERT_TRUE(m.is_array && m.type == INGOT_META_STRING && m.count == 2 && m.index == 2);
    ASSERT_OK(ingot_file_meta_array_string(f, m.index, 1, &s, &len));
    ASSERT_TRUE(len == 5 && memcmp(s, "epoch", 5) == 0);
    ingot_file_close(f);
}

TEST(rewrites_are_byte_exact)
{
    for (int i = 0; i < 3; i++) {
        char path[512];
        size_t n;
        snprintf(path, sizeof path, FIX "%s", fixtures[i]);
        uint8_t *orig = test_read_file(path, &n);
        ingot_file *f, *g;
        ingot_error e;
        ASSERT_OK(ingot_file_open(path, NULL, &f, &e));
        for (int pushed = 0; pushed < 2; pushed++) {
            void *out;
            size_t on;
            notices nt = {0};
            ASSERT_OK(convert(f, "tenzor", pushed, &nt, &out, &on, &e));
            CHECK(on == n && memcmp(out, orig, n) == 0, "%s: tenzor -> tenzor differs", fixtures[i]);
            CHECK(nt.count == 0, "%s: notices %s", fixtures[i], nt.all);
            ingot_writer_free_mem(NULL, out, on);
        }
        void *ing, *back;
        size_t in_, bn;
        ASSERT_OK(convert(f, "ingot", true, NULL, &ing, &in_, &e));
        ASSERT_OK(ingot_file_open_buffer(ing, in_, NULL, &g, NULL));
        ASSERT_OK(convert(g, "tenzor", true, NULL, &back, &bn, &e));
        CHECK(bn == n && memcmp(back, orig, n) == 0, "%s: via .ingot differs", fixtures[i]);
        ingot_writer_free_mem(NULL, back, bn);
        ingot_file_close(g);
        ingot_writer_free_mem(NULL, ing, in_);
        ingot_file_close(f);
        free(orig);
    }
}

static ingot_writer *new_tz(notices *nt)
{
    ingot_writer_opts wo = {.format = "tenzor"};
    ingot_writer *w = NULL;
    if (ingot_writer_new(&wo, &w, NULL) != INGOT_OK) return NULL;
    if (nt) ingot_writer_set_notice(w, on_notice, nt);
    return w;
}

static ingot_status save(ingot_writer *w, void **out, size_t *n, ingot_error *e)
{
    ingot_status st = ingot_writer_begin_mem(w, e);
    if (st == INGOT_OK) st = ingot_writer_commit_mem(w, out, n, e);
    return st;
}

static const float t1[6] = {1, 2, 3, 4, 5, 6};
static const float t2[3] = {0.1f, 0.2f, 0.3f};

TEST(upstream_unit_test_written_from_names)
{
    /* names=false: exactly what upstream's writer makes of its own unit test */
    ingot_error e;
    uint64_t s1[2] = {2, 3}, s2[1] = {3};
    void *out;
    size_t n, fn;
    uint8_t *fx = test_read_file(FIX "two_f32_like_upstream_test.tenzor", &fn);
    notices nt = {0};
    ingot_writer *w = new_tz(&nt);
    ASSERT_OK(ingot_writer_set_option(w, "names", "false", &e));
    ASSERT_OK(ingot_writer_add_tensor(w, "tensor1", INGOT_DTYPE_F32, 2, s1, NULL, t1, &e));
    ASSERT_OK(ingot_writer_add_tensor(w, "tensor2", INGOT_DTYPE_F32, 1, s2, NULL, t2, &e));
    ASSERT_OK(save(w, &out, &n, &e));
    ASSERT_TRUE(n == fn && memcmp(out, fx, n) == 0);
    ASSERT_EQ(nt.count, 1); /* names not recorded */
    ingot_writer_free_mem(NULL, out, n);
    ingot_writer_free(w);

    /* default: names recorded in the JSON; reading back keeps them */
    w = new_tz(NULL);
    ASSERT_OK(ingot_writer_add_tensor(w, "tensor1", INGOT_DTYPE_F32, 2, s1, NULL, t1, &e));
    ASSERT_OK(ingot_writer_add_tensor(w, "tensor2", INGOT_DTYPE_F32, 1, s2, NULL, t2, &e));
    ASSERT_OK(save(w, &out, &n, &e));
    static const char js[] = "{\"ingot.tensor_names\":[\"tensor1\",\"tensor2\"]}";
    ASSERT_TRUE(memcmp((uint8_t *)out + 64, js, sizeof js - 1) == 0);
    ASSERT_MEM((uint8_t *)out + 4096, fx + 4096, 36); /* same index entries and data */
    ASSERT_MEM((uint8_t *)out + 112, fx + 72, 96);
    ingot_file *f;
    ASSERT_OK(ingot_file_open_buffer(out, n, NULL, &f, NULL));
    ingot_tensor_info t;
    ASSERT_OK(ingot_file_tensor_at(f, 1, &t));
    ASSERT_STR(t.name, "tensor2");
    ASSERT_OK(ingot_file_tensor_find(f, "tensor1", &t));
    ASSERT_EQ(t.index, 0);
    ASSERT_ST(ingot_file_tensor_find(f, "#91b44b411a252b0f", &t), INGOT_NOT_FOUND);
    ASSERT_U64(ingot_file_meta_count(f), 0);
    ingot_file_close(f);
    ingot_writer_free_mem(NULL, out, n);
    ingot_writer_free(w);
    free(fx);

    /* options */
    w = new_tz(NULL);
    ASSERT_ST(ingot_writer_set_option(w, "names", "maybe", &e), INGOT_BAD_METADATA);
    ASSERT_ST(ingot_writer_set_option(w, "alignment", "8", &e), INGOT_UNSUPPORTED);
    ingot_writer_free(w);
}

TEST(metadata_mapping_both_ways)
{
    notices nt = {0};
    ingot_writer *w = new_tz(&nt);
    ingot_error e;
    ASSERT_OK(ingot_writer_set_i64(w, "epoch", -7));
    ASSERT_OK(ingot_writer_set_f64(w, "loss", 0.125));
    ASSERT_OK(ingot_writer_set_f64(w, "lr", 1e-8));
    ASSERT_OK(ingot_writer_set_f64(w, "whole", 3.0));
    ASSERT_OK(ingot_writer_set_bool(w, "ok", true));
    ASSERT_OK(ingot_writer_set_string(w, "name", "a \"quoted\"\n\xc3\xa9"));
    ASSERT_OK(ingot_writer_set_u32(w, "n_layers", 12));           /* notice: reads back i64 */
    ASSERT_OK(ingot_writer_set_u64(w, "big", UINT64_MAX));        /* notice: reads back u64 */
    ASSERT_OK(ingot_writer_set_f32(w, "f32", 0.5f));               /* notice: reads back f64 */
    ASSERT_OK(ingot_writer_set_f64(w, "nan", NAN));                /* notice: a string */
    ASSERT_OK(ingot_writer_set_bytes(w, "blob", "\x01\x02", 2));   /* notice: dropped */
    int64_t ia[3] = {1, -2, 3};
    double fa[2] = {0.5, 2};
    bool ba[2] = {true, false};
    ASSERT_OK(ingot_writer_set_array(w, "ints", INGOT_META_I64, ia, 3));
    ASSERT_OK(ingot_writer_set_array(w, "floats", INGOT_META_F64, fa, 2));
    ASSERT_OK(ingot_writer_set_array(w, "bools", INGOT_META_BOOL, ba, 2));
    const char *sa[2] = {"x", "yz"};
    size_t sl[2] = {1, 2};
    ASSERT_OK(ingot_writer_set_string_array(w, "strs", INGOT_META_STRING, (const void *const *)sa, sl, 2));
    ASSERT_OK(ingot_writer_set_string(w, "ingot.tensor_names", "x")); /* notice: reserved */
    uint64_t sh[1] = {2};
    uint8_t bools[2] = {1, 0};
    ASSERT_OK(ingot_writer_add_tensor(w, "mask", INGOT_DTYPE_BOOL, 1, sh, NULL, bools, &e)); /* notice */
    void *out;
    size_t n;
    ASSERT_OK(save(w, &out, &n, &e));
    ASSERT_EQ(nt.count, 7);
    ASSERT_TRUE(strstr(nt.all, "n_layers") && strstr(nt.all, "blob") && strstr(nt.all, "nan") &&
                strstr(nt.all, "mask") && strstr(nt.all, "ingot.tensor_names") &&
                strstr(nt.all, "f32") && strstr(nt.all, "big"));
    ingot_writer_free(w);

    ingot_file *f;
    ASSERT_OK(ingot_file_open_buffer(out, n, NULL, &f, &e));
    int64_t i64;
    uint64_t u64;
    double d;
    bool b;
    const char *s;
    size_t len;
    ASSERT_OK(ingot_file_meta_get_i64(f, "epoch", &i64));
    ASSERT_EQ(i64, -7);
    ASSERT_OK(ingot_file_meta_get_f64(f, "loss", &d));
    ASSERT_TRUE(d == 0.125);
    ASSERT_OK(ingot_file_meta_get_f64(f, "lr", &d));
    ASSERT_TRUE(d == 1e-8);
    ASSERT_OK(ingot_file_meta_get_f64(f, "whole", &d));
    ASSERT_TRUE(d == 3.0);
    ASSERT_OK(ingot_file_meta_get_bool(f, "ok", &b));
    ASSERT_TRUE(b);
    ASSERT_OK(ingot_file_meta_get_string(f, "name", &s, &len));
    ASSERT_TRUE(len == 13 && memcmp(s, "a \"quoted\"\n\xc3\xa9", 13) == 0);
    ASSERT_OK(ingot_file_meta_get_i64(f, "n_layers", &i64));
    ASSERT_EQ(i64, 12);
    ASSERT_OK(ingot_file_meta_get_u64(f, "big", &u64));
    ASSERT_TRUE(u64 == UINT64_MAX);
    ASSERT_OK(ingot_file_meta_get_f64(f, "f32", &d));
    ASSERT_TRUE(d == 0.5);
    ASSERT_OK(ingot_file_meta_get_string(f, "nan", &s, &len));
    ASSERT_TRUE(len == 3 && memcmp(s, "NaN", 3) == 0);
    ingot_meta_info m;
    ASSERT_ST(ingot_file_meta_find(f, "blob", &m), INGOT_NOT_FOUND);
    uint64_t cnt;
    ASSERT_OK(ingot_file_meta_get_array(f, "ints", INGOT_META_I64, &cnt));
    ASSERT_U64(cnt, 3);
    ASSERT_OK(ingot_file_meta_find(f, "ints", &m));
    int64_t ib[3];
    ASSERT_OK(ingot_file_meta_array_read(f, m.index, INGOT_META_I64, 0, 3, ib));
    ASSERT_TRUE(ib[0] == 1 && ib[1] == -2 && ib[2] == 3);
    ASSERT_OK(ingot_file_meta_find(f, "floats", &m));
    double fb[2];
    ASSERT_OK(ingot_file_meta_array_read(f, m.index, INGOT_META_F64, 0, 2, fb));
    ASSERT_TRUE(fb[0] == 0.5 && fb[1] == 2);
    ASSERT_OK(ingot_file_meta_find(f, "bools", &m));
    uint8_t bb[2];
    ASSERT_OK(ingot_file_meta_array_read(f, m.index, INGOT_META_BOOL, 0, 2, bb));
    ASSERT_TRUE(bb[0] == 1 && bb[1] == 0);
    ASSERT_OK(ingot_file_meta_find(f, "strs", &m));
    ASSERT_OK(ingot_file_meta_array_string(f, m.index, 1, &s, &len));
    ASSERT_TRUE(len == 2 && memcmp(s, "yz", 2) == 0);
    ingot_tensor_info t;
    ASSERT_OK(ingot_file_tensor_find(f, "mask", &t));
    ASSERT_EQ(t.dtype, INGOT_DTYPE_U8);
    ingot_file_close(f);
    ingot_writer_free_mem(NULL, out, n);
}

TEST(json_reading_rules)
{
    uint8_t buf[16384];
    entry one = {0xCBF29CE484222325ull ^ 1, 8, 1, {2}, 2};
    ingot_file *f;
    ingot_error e;
    size_t n = tz_build("{\"o\":{\"a\":[1,{}]},\"z\":null,\"mix\":[1,\"a\"],\"e\":[],"
                        "\"u\":18446744073709551615,\"neg\":-9223372036854775809,"
                        "\"fl\":[1,2.5,-3],\"ul\":[1,18446744073709551615],\"ix\":[1,-1]}",
                        &one, 1, buf, sizeof buf);
    ASSERT_OK(ingot_file_open_buffer(buf, n, NULL, &f, &e));
    const char *s;
    size_t len;
    ASSERT_OK(ingot_file_meta_get_string(f, "o", &s, &len));
    ASSERT_TRUE(len == 12 && memcmp(s, "{\"a\":[1,{}]}", 12) == 0);
    ASSERT_OK(ingot_file_meta_get_string(f, "z", &s, &len));
    ASSERT_TRUE(len == 4 && memcmp(s, "null", 4) == 0);
    ASSERT_OK(ingot_file_meta_get_string(f, "mix", &s, &len));
    ASSERT_TRUE(len == 7 && memcmp(s, "[1,\"a\"]", 7) == 0);
    uint64_t cnt, u;
    double d;
    ASSERT_OK(ingot_file_meta_get_array(f, "e", INGOT_META_STRING, &cnt));
    ASSERT_U64(cnt, 0);
    ASSERT_OK(ingot_file_meta_get_u64(f, "u", &u));
    ASSERT_TRUE(u == UINT64_MAX);
    ASSERT_OK(ingot_file_meta_get_f64(f, "neg", &d));
    ASSERT_TRUE(d == -9223372036854775808.0);
    ASSERT_OK(ingot_file_meta_get_array(f, "fl", INGOT_META_F64, &cnt));
    ASSERT_OK(ingot_file_meta_get_array(f, "ul", INGOT_META_U64, &cnt));
    ASSERT_OK(ingot_file_meta_get_array(f, "ix", INGOT_META_I64, &cnt));
    ingot_tensor_info t;
    ASSERT_OK(ingot_file_tensor_at(f, 0, &t));
    ASSERT_STR(t.name, "#cbf29ce484222324");
    ingot_file_close(f);

    static const struct {
        const char *json;
        ingot_status want;
    } bad[] = {
        {"[]", INGOT_BAD_METADATA},
        {"\"x\"", INGOT_BAD_METADATA},
        {"{", INGOT_BAD_METADATA},
        {"{\"a\":1,}", INGOT_BAD_METADATA},
        {"{\"a\":1} x", INGOT_BAD_METADATA},
        {"", INGOT_BAD_METADATA},
        {"{\"a\":1,\"a\":2}", INGOT_DUPLICATE},
        {"{\"\":1}", INGOT_BAD_STRING},
        {"{\"a\\u0000\":1}", INGOT_BAD_STRING},
        {"{\"a\":\"\xff\"}", INGOT_BAD_STRING},
        {"{\"a\":\"\xc0\xaf\"}", INGOT_BAD_STRING},
        {"{\"a\":1e999}", INGOT_BAD_METADATA},
        {"{\"ingot.tensor_names\":[\"x\",\"y\"]}", INGOT_BAD_METADATA},
        {"{\"ingot.tensor_names\":[\"x\"]}", INGOT_BAD_METADATA},
        {"{\"ingot.tensor_names\":\"x\"}", INGOT_BAD_METADATA},
        {"{\"ingot.tensor_names\":[1]}", INGOT_BAD_METADATA},
        {"{\"ingot.tensor_names\":[\"#cbf29ce484222324\"],\"ingot.tensor_names\":[]}", INGOT_DUPLICATE},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        n = tz_build(bad[i].json, &one, 1, buf, sizeof buf);
        ingot_status st = open_err(buf, n, &e);
        CHECK(st == bad[i].want, "%s: got %s (%s), want %s", bad[i].json, ingot_status_name(st),
              e.msg, ingot_status_name(bad[i].want));
    }
    /* a depth bomb */
    char deep[1200];
    size_t k = 0;
    k += (size_t)snprintf(deep, sizeof deep, "{\"a\":");
    for (int i = 0; i < 500; i++) deep[k++] = '[';
    for (int i = 0; i < 500; i++) deep[k++] = ']';
    deep[k++] = '}';
    deep[k] = 0;
    n = tz_build(deep, &one, 1, buf, sizeof buf);
    ASSERT_ST(open_err(buf, n, &e), INGOT_BAD_ARRAY);
    /* names that hash right, including a #hash name */
    entry two[2] = {{0x91B44B411A252B0Full, 0, 1, {1}, 4}, {0x1234ull, 0, 1, {1}, 4}};
    n = tz_build("{\"ingot.tensor_names\":[\"tensor1\",\"#0000000000001234\"]}", two, 2, buf, sizeof buf);
    ASSERT_OK(ingot_file_open_buffer(buf, n, NULL, &f, &e));
    ASSERT_OK(ingot_file_tensor_at(f, 0, &t));
    ASSERT_STR(t.name, "tensor1");
    ASSERT_OK(ingot_file_tensor_find(f, "#0000000000001234", &t));
    ASSERT_EQ(t.index, 1);
    ingot_file_close(f);
    n = tz_build("{\"ingot.tensor_names\":[\"tensor2\",\"#0000000000001234\"]}", two, 2, buf, sizeof buf);
    ASSERT_ST(open_err(buf, n, &e), INGOT_BAD_METADATA);
    n = tz_build("{\"ingot.tensor_names\":[\"tensor1\",\"\"]}", two, 2, buf, sizeof buf);
    ASSERT_ST(open_err(buf, n, &e), INGOT_BAD_METADATA);
}

TEST(writer_refusals)
{
    ingot_error e;
    void *out;
    size_t n;
    uint64_t s6[6] = {1, 1, 1, 1, 1, 1}, big[1] = {(uint64_t)1 << 32}, s1[1] = {32};
    static uint8_t data[256];
    const struct {
        ingot_dtype dt;
        uint32_t rank;
        const uint64_t *shape;
    } bad[] = {{INGOT_DTYPE_C64, 1, s1}, {INGOT_DTYPE_F8_E4M3, 1, s1}, {INGOT_DTYPE_Q4_0, 1, s1},
               {INGOT_DTYPE_F32, 6, s6}, {INGOT_DTYPE_U8, 1, big}};
    for (int i = 0; i < 5; i++) {
        ingot_writer *w = new_tz(NULL);
        ASSERT_ST(ingot_writer_add_tensor(w, "t", bad[i].dt, bad[i].rank, bad[i].shape, NULL,
                                          NULL, &e),
                  INGOT_UNSUPPORTED);
        ASSERT_STR(e.where, "t");
        ingot_writer_free(w);
    }
    /* a name and the #hash of that name collide */
    ingot_writer *w = new_tz(NULL);
    ASSERT_OK(ingot_writer_add_tensor(w, "tensor1", INGOT_DTYPE_U8, 1, s1, NULL, data, &e));
    ASSERT_OK(ingot_writer_add_tensor(w, "#91b44b411a252b0f", INGOT_DTYPE_U8, 1, s1, NULL, data, &e));
    ASSERT_ST(save(w, &out, &n, &e), INGOT_DUPLICATE);
    ASSERT_STR(e.where, "#91b44b411a252b0f");
    ingot_writer_free(w);
}

TEST(rmd1_through_tenzor_is_byte_exact)
{
    size_t n;
    uint8_t *orig = test_read_file(INGOT_FIXTURES "/rmd1/handmade/mlp_2_3_1_relu_sigmoid_f32.rmd1", &n);
    ASSERT_TRUE(orig);
    ingot_file *f, *g;
    ingot_error e;
    ASSERT_OK(ingot_file_open_buffer(orig, n, NULL, &f, &e));
    void *tz, *back;
    size_t tn, bn;
    notices nt = {0};
    ASSERT_OK(convert(f, "tenzor", true, &nt, &tz, &tn, &e));
    ASSERT_TRUE(nt.count > 0); /* u32/u64/u8 keys widen to i64 */
    ASSERT_OK(ingot_file_open_buffer(tz, tn, NULL, &g, &e));
    ingot_tensor_info t;
    ASSERT_OK(ingot_file_tensor_at(g, 2, &t));
    ASSERT_STR(t.name, "layers.0.bias");
    ASSERT_OK(convert(g, "rmd1", true, NULL, &back, &bn, &e));
    ASSERT_TRUE(bn == n && memcmp(back, orig, n) == 0);
    ingot_writer_free_mem(NULL, back, bn);
    ingot_file_close(g);
    ingot_writer_free_mem(NULL, tz, tn);
    ingot_file_close(f);
    free(orig);
}

/* ---- malformed catalogue ---- */

static uint8_t base[8192];
static size_t base_n;

#define BAD(mutate, code)                                                                          \
    do {                                                                                           \
        uint8_t b_[8192];                                                                          \
        size_t n_ = base_n;                                                                        \
        memcpy(b_, base, base_n);                                                                  \
        mutate;                                                                                    \
        ingot_error e_;                                                                            \
        ingot_status st_ = open_err(b_, n_, &e_);                                                  \
        CHECK(st_ == (code), "%s: got %s (%s), want %s", #mutate, ingot_status_name(st_),          \
              st_ ? e_.msg : "", ingot_status_name(code));                                         \
    } while (0)

TEST(malformed_catalogue)
{
    uint8_t *fx = test_read_file(FIX "two_f32_like_upstream_test.tenzor", &base_n);
    ASSERT_TRUE(fx && base_n == 4132);
    memcpy(base, fx, base_n);
    free(fx);
    /* 1 and 16: every truncation point */
    for (size_t k = 0; k < base_n; k++) {
        ingot_status st = open_err(base, k, NULL);
        CHECK(st == INGOT_TRUNCATED, "truncated to %zu: %s", k, ingot_status_name(st));
        if (k < 8 && k) continue;
        ingot_file *f = NULL;
        st = ingot_file_open_buffer(base, k, NULL, &f, NULL);
        CHECK(st == INGOT_TRUNCATED, "detected, truncated to %zu: %s", k, ingot_status_name(st));
        ingot_file_close(f);
    }
    /* 2 */
    BAD(b_[0] = 'X', INGOT_BAD_MAGIC);
    BAD(b_[7] = 1, INGOT_BAD_MAGIC);
    BAD(st32(b_ + 8, 0), INGOT_BAD_VERSION);
    BAD(st32(b_ + 8, 2), INGOT_BAD_VERSION);
    BAD(st32(b_ + 8, 0x01000000), INGOT_BAD_VERSION);
    /* flags, pads, reserved */
    BAD(b_[12] = 1, INGOT_BAD_FLAGS);
    BAD(b_[20] = 1, INGOT_BAD_FLAGS);
    BAD(b_[63] = 1, INGOT_BAD_FLAGS);
    BAD(b_[72 + 10] = 1, INGOT_BAD_FLAGS);
    /* 3: metadata size against the index */
    BAD(st32(b_ + 40, 0xffffffff), INGOT_BAD_HEADER_SIZE);
    BAD(st32(b_ + 40, 9), INGOT_BAD_HEADER_SIZE);
    BAD(st64(b_ + 24, 64), INGOT_BAD_HEADER_SIZE);
    BAD(st64(b_ + 24, UINT64_MAX), INGOT_BAD_LAYOUT);
    BAD(st64(b_ + 24, 80), INGOT_BAD_LAYOUT);
    BAD(st64(b_ + 24, 73), INGOT_BAD_LAYOUT);
    /* 4: counts */
    BAD(st32(b_ + 16, 0xffffffff), INGOT_BAD_COUNT);
    BAD(st32(b_ + 16, 86), INGOT_BAD_COUNT);
    BAD(st32(b_ + 16, 3), INGOT_BAD_SIZE);  /* entry 2 is zeros: data_size 0 != 4 (f32 scalar) */
    /* 14: data offset */
    BAD(st64(b_ + 32, 4097), INGOT_BAD_ALIGN);
    BAD(st64(b_ + 32, 8192), INGOT_BAD_LAYOUT);
    BAD(st64(b_ + 32, 0), INGOT_BAD_COUNT);
    BAD(st64(b_ + 32, UINT64_MAX - 4095), INGOT_BAD_LAYOUT);
    /* 7, 10, 11, 12 on entry 0 */
    BAD(b_[72 + 8] = 12, INGOT_BAD_TYPE);
    BAD(b_[72 + 8] = 0xff, INGOT_BAD_TYPE);
    BAD(b_[72 + 9] = 6, INGOT_BAD_NDIMS);
    BAD(b_[72 + 9] = 0xff, INGOT_BAD_NDIMS);
    BAD(st32(b_ + 72 + 20, 1), INGOT_BAD_SHAPE); /* shape[2] past ndim 2 */
    BAD((b_[72 + 9] = 5, memset(b_ + 72 + 12, 0xff, 20)), INGOT_BAD_SHAPE);
    BAD(st32(b_ + 72 + 12, 3), INGOT_BAD_SIZE);
    BAD(st64(b_ + 72 + 40, 25), INGOT_BAD_SIZE);
    BAD(b_[72 + 8] = 3, INGOT_BAD_SIZE); /* f64 needs 48 bytes */
    /* 13: offsets, trailing bytes, padding */
    BAD(st64(b_ + 120 + 32, 25), INGOT_BAD_LAYOUT);
    BAD(st64(b_ + 120 + 32, 23), INGOT_BAD_LAYOUT);
    BAD(st64(b_ + 72 + 32, UINT64_MAX), INGOT_BAD_LAYOUT);
    BAD(n_++, INGOT_BAD_LAYOUT);
    BAD(b_[66] = 1, INGOT_BAD_LAYOUT);
    BAD(b_[4095] = 1, INGOT_BAD_LAYOUT);
    BAD((st32(b_ + 120 + 12, 6), st64(b_ + 120 + 40, 24)), INGOT_TRUNCATED);
    /* 9: duplicate name hashes */
    BAD(memcpy(b_ + 120, b_ + 72, 8), INGOT_DUPLICATE);
    /* JSON errors (metadata "{}" -> "[]", "{{") */
    BAD(memcpy(b_ + 64, "[]", 2), INGOT_BAD_METADATA);
    BAD(memcpy(b_ + 64, "{{", 2), INGOT_BAD_METADATA);

    /* byte flips over header, JSON and index: an error or a valid file, never a crash */
    for (size_t k = 0; k < 168; k++)
        for (int bit = 0; bit < 8; bit++) {
            uint8_t c[8192];
            memcpy(c, base, base_n);
            c[k] ^= (uint8_t)(1u << bit);
            ingot_file *f = NULL;
            ingot_error e;
            ingot_status st = ingot_file_open_buffer(c, base_n, &force, &f, &e);
            if (st == INGOT_OK) {
                for (uint64_t i = 0; i < ingot_file_tensor_count(f); i++) {
                    ingot_tensor_info t;
                    CHECK(ingot_file_tensor_at(f, i, &t) == INGOT_OK, "flip %zu.%d", k, bit);
                    CHECK(t.offset + t.nbytes <= base_n, "flip %zu.%d: outside", k, bit);
                }
            } else {
                CHECK(e.code == st, "flip %zu.%d: error record", k, bit);
            }
            ingot_file_close(f);
        }
}

TEST(huge_declarations)
{
    /* a small file declaring 4 GiB of JSON: refused before anything is allocated */
    uint8_t b[4200];
    entry one = {1, 8, 1, {1}, 1};
    size_t n = tz_build("{}", &one, 1, b, sizeof b);
    uint64_t ms = 0xfffffff0ull, io = (64 + ms + 7) & ~7ull, dof = (io + 48 + 4095) & ~4095ull;
    st32(b + 40, (uint32_t)ms);
    st64(b + 24, io);
    st64(b + 32, dof);
    ingot_error e;
    ASSERT_ST(open_err(b, n, &e), INGOT_TRUNCATED);
    ASSERT_U64(e.offset, n);
}

/* ---- CLI ---- */

static int sh(const char *cmd)
{
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

#define OUTD INGOT_BINARY_DIR "/tenzor_cli"

TEST(cli_info_verify_convert)
{
    ASSERT_EQ(sh("mkdir -p " OUTD), 0);
    ASSERT_EQ(sh(INGOT_CLI " info --json " FIX "mixed_dtypes.tenzor > " OUTD "/info.json"), 0);
    size_t n;
    char *js = (char *)test_read_file(OUTD "/info.json", &n);
    ASSERT_TRUE(js);
    js = realloc(js, n + 1);
    js[n] = 0;
    ASSERT_TRUE(strstr(js, "\"tenzor\"") && strstr(js, "#745f3420df7cc464") && strstr(js, "tiny"));
    free(js);
    ASSERT_EQ(sh(INGOT_CLI " verify " FIX "mixed_dtypes.tenzor > /dev/null"), 0);
    ASSERT_EQ(sh(INGOT_CLI " convert " FIX "mixed_dtypes.tenzor " OUTD "/m.ingot > /dev/null"), 0);
    ASSERT_EQ(sh(INGOT_CLI " convert " OUTD "/m.ingot " OUTD "/m.tenzor > /dev/null"), 0);
    size_t a, c;
    uint8_t *orig = test_read_file(FIX "mixed_dtypes.tenzor", &a), *back = test_read_file(OUTD "/m.tenzor", &c);
    ASSERT_TRUE(orig && back && a == c && memcmp(orig, back, a) == 0);
    free(orig);
    free(back);
    ASSERT_EQ(sh(INGOT_CLI " dump " FIX "mixed_dtypes.tenzor w.f32 > /dev/null"), 0);
    ASSERT_EQ(sh("rm -rf " OUTD), 0);
}

RUN_TESTS(T(fnv1a_vectors), T(upstream_test_file), T(mixed_dtypes_fixture),
          T(rewrites_are_byte_exact), T(upstream_unit_test_written_from_names),
          T(metadata_mapping_both_ways), T(json_reading_rules), T(writer_refusals),
          T(rmd1_through_tenzor_is_byte_exact), T(malformed_catalogue), T(huge_declarations),
          T(cli_info_verify_convert))
