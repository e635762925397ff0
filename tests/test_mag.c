/*
 * test_mag.c - magnetron .mag: every real fixture read exactly (names, dtypes, shapes, offsets,
 * element bytes, metadata), byte-exact rewrites, round trips through .ingot, the writer's
 * metadata mapping and refusals, dtype-era detection, and the hash/CRC reference values.
 * Malformed inputs are in test_mag_malformed.c.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "harness.h"
#include "files.h"
#include "ingot/ingot.h"
#include "mag_internal.h"
#include "sha256.h"

#define FIX INGOT_FIXTURES "/mag/"

static size_t unhex(const char *hex, uint8_t *out)
{
    size_t n = 0;
    for (const char *p = hex; *p;) {
        if (*p == ' ') {
            p++;
            continue;
        }
        unsigned v;
        sscanf(p, "%2x", &v);
        out[n++] = (uint8_t)v;
        p += 2;
    }
    return n;
}

/* ---- expected contents (fixtures/mag/README.md) ---- */

typedef struct {
    const char *name;
    ingot_dtype dt;
    uint32_t rank;
    uint64_t shape[4];
    uint64_t offset;
    const char *hex;
} xt;

typedef struct {
    const char *key;
    bool is_f64;
    uint64_t bits;
} xm;

#define W_HEX "00000000 0000803f 000020c0 00005040 6f12833a 00e07f47"
#define B_HEX "0000 003c 00c0 0038 ff7b 0100 0080 5535 4842 00bc 0040 0042"
#define I_HEX "00000080 ffffffff 00000000 01000000 ffffff7f"
#define M_HEX "01 00 01 01 00 01"
#define L_HEX "0000000000000080 0000000000000000 ffffffffffffff7f"
#define E_HEX "803f 00c0 4940"

static const xm mixed_meta[] = {{"pi", true, 0x400921FB54442D18ull},
                                {"lr", true, 0x3F50624DD2F1A9FCull},
                                {"neg", false, (uint64_t)-5},
                                {"epoch", false, 12}};

typedef struct {
    const char *file, *format, *version, *sha256;
    uint64_t size;
    const xt *t;
    size_t nt;
    const xm *m;
    size_t nm;
} xfile;

static const xt v100_t[] = {
    {"layer0.bias_f16", INGOT_DTYPE_F16, 3, {2, 2, 3}, 384, B_HEX},
    {"mask", INGOT_DTYPE_BOOL, 4, {1, 2, 1, 3}, 448, M_HEX},
    {"big.i64", INGOT_DTYPE_I64, 1, {3}, 512, L_HEX},
    {"ids.i32", INGOT_DTYPE_I32, 1, {5}, 576, I_HEX},
    {"layer0.weight", INGOT_DTYPE_F32, 2, {2, 3}, 640, W_HEX},
};
static const xt v1_t[] = {
    {"layer0.bias_f16", INGOT_DTYPE_F16, 3, {2, 2, 3}, 320, B_HEX},
    {"mask", INGOT_DTYPE_BOOL, 4, {1, 2, 1, 3}, 384, M_HEX},
    {"ids.i32", INGOT_DTYPE_I32, 1, {5}, 448, I_HEX},
    {"layer0.weight", INGOT_DTYPE_F32, 2, {2, 3}, 512, W_HEX},
};
static const xt one_t[] = {{"w", INGOT_DTYPE_F32, 1, {4}, 128, "0000803f 00000040 00004040 00008040"}};
static const xm one_m[] = {{"n", false, 7}};
static const xm answer_m[] = {{"answer", false, 42}};
static const xt snap_t[] = {
    {"ids.i32", INGOT_DTYPE_I32, 1, {5}, 382, I_HEX},
    {"layer0.bias_f16", INGOT_DTYPE_F16, 3, {2, 2, 3}, 402, B_HEX},
    {"layer0.weight", INGOT_DTYPE_F32, 2, {2, 3}, 426, W_HEX},
    {"big.i64", INGOT_DTYPE_I64, 1, {3}, 450, L_HEX},
    {"mask", INGOT_DTYPE_BOOL, 4, {1, 2, 1, 3}, 474, M_HEX},
    {"emb.bf16", INGOT_DTYPE_BF16, 2, {1, 3}, 480, E_HEX},
};
static const xt snap1_t[] = {{"w", INGOT_DTYPE_F32, 1, {4}, 93, "0000803f 00000040 00004040 00008040"}};

static const xfile files[] = {
    {"storage/storage_v100_mixed.mag", "mag", "100",
     "1118f0440fb6063e5f6601cff749fe364bfeff47a5d87524701fbeeb72034e1e", 832, v100_t, 5,
     mixed_meta, 4},
    {"storage/storage_v1_mixed.mag", "mag", "1",
     "0ffaede84fd2adfda2d5ba9e20dbec4862c143de65677461126c0cc77dbfcc13", 704, v1_t, 4, mixed_meta,
     4},
    {"storage/storage_v100_one_f32.mag", "mag", "100",
     "5226e11acb1ee6f3513e7f95422eb8146fd55e4f5c0133f8d0c880384c4a25c8", 192, one_t, 1, one_m, 1},
    {"storage/storage_v100_meta_only.mag", "mag", "100",
     "6d8401b8a13f43fb30806b43d4efeaf070dceef416e7bebb6c28e52e58369c34", 54, NULL, 0, answer_m, 1},
    {"storage/storage_v100_empty.mag", "mag", "100",
     "b38b8f1736723b3eb51b6d55f2e0e7172dd0fac0ce0174df642818bd8c3f67a6", 24, NULL, 0, NULL, 0},
    {"snapshot/snapshot_mixed.mag", "mag-snapshot", "100",
     "8245ccdb7e934a055e99dba08900411b647138b7d7adda9aeb52c4f3dc0eefdb", 486, snap_t, 6, NULL, 0},
    {"snapshot/snapshot_one_f32.mag", "mag-snapshot", "100",
     "ed519f8b46cb106bb1d0f28aef4186ab7a677e48fb76a7b025616ca7aee610e6", 109, snap1_t, 1, NULL, 0},
};
#define N_FILES (sizeof files / sizeof *files)

/* storage_v100_many.mag: file orders from the README (t_i = {i, -i} i32; k_i = i*i - 100). */
static const int many_t[] = {22, 2,  7,  9, 1,  10, 6,  11, 16, 14, 23, 12,
                             21, 5,  13, 19, 17, 0,  3, 15, 8,  18, 4,  20};
static const int many_k[] = {7,  26, 6,  12, 1,  13, 3,  29, 5,  25, 4,  0,  2,  27, 10,
                             14, 19, 22, 23, 21, 28, 8,  11, 18, 17, 20, 9,  24, 16, 15};

/* Checks one open file against its expectation; `how` names the open mode in failures. */
static void check_file(ingot_file *f, const xfile *x, const char *how)
{
    CHECK(strcmp(ingot_file_format(f), x->format) == 0, "%s %s: format %s", x->file, how,
          ingot_file_format(f));
    CHECK(strcmp(ingot_file_version(f), x->version) == 0, "%s %s: version %s", x->file, how,
          ingot_file_version(f));
    CHECK(ingot_file_tensor_count(f) == x->nt, "%s %s: tensor count", x->file, how);
    CHECK(ingot_file_meta_count(f) == x->nm, "%s %s: meta count", x->file, how);
    for (size_t i = 0; i < x->nt && i < ingot_file_tensor_count(f); i++) {
        const xt *e = &x->t[i];
        ingot_tensor_info t, t2;
        CHECK(ingot_file_tensor_at(f, i, &t) == INGOT_OK, "tensor_at %zu", i);
        CHECK(strcmp(t.name, e->name) == 0 && t.name_len == strlen(e->name), "%s %s: name %s != %s",
              x->file, how, t.name, e->name);
        CHECK(t.dtype == e->dt, "%s: %s dtype %d", x->file, e->name, (int)t.dtype);
        CHECK(t.rank == e->rank, "%s: %s rank %u", x->file, e->name, t.rank);
        uint64_t nelem = 1;
        for (uint32_t d = 0; d < e->rank; d++) {
            CHECK(t.shape[d] == e->shape[d], "%s: %s dim %u", x->file, e->name, d);
            nelem *= e->shape[d];
        }
        uint8_t want[64], got[64];
        size_t nb = unhex(e->hex, want);
        CHECK(t.nelem == nelem && t.nbytes == nb, "%s: %s nelem/nbytes", x->file, e->name);
        CHECK(t.offset == e->offset, "%s %s: %s offset %llu != %llu", x->file, how, e->name,
              (unsigned long long)t.offset, (unsigned long long)e->offset);
        CHECK(t.index == i, "index");
        CHECK(ingot_file_tensor_read(f, i, 0, got, nb, NULL) == INGOT_OK &&
                  memcmp(got, want, nb) == 0,
              "%s %s: %s bytes", x->file, how, e->name);
        memset(got, 0, sizeof got);
        CHECK(ingot_file_tensor_copy(f, i, got, sizeof got, NULL) == INGOT_OK &&
                  memcmp(got, want, nb) == 0,
              "%s %s: %s copy", x->file, how, e->name);
        if (t.data) CHECK(memcmp(t.data, want, nb) == 0, "%s: %s mapped bytes", x->file, e->name);
        CHECK(ingot_file_tensor_find(f, e->name, &t2) == INGOT_OK && t2.index == i &&
                  t2.offset == t.offset,
              "%s: find %s", x->file, e->name);
        CHECK(ingot_file_tensor_verify(f, i, NULL) == INGOT_OK, "%s: verify %s", x->file, e->name);
    }
    for (size_t i = 0; i < x->nm && i < ingot_file_meta_count(f); i++) {
        const xm *e = &x->m[i];
        ingot_meta_info m;
        CHECK(ingot_file_meta_at(f, i, &m) == INGOT_OK, "meta_at");
        CHECK(m.key_len == strlen(e->key) && memcmp(m.key, e->key, m.key_len) == 0,
              "%s: meta %zu key %.*s != %s", x->file, i, (int)m.key_len, m.key, e->key);
        CHECK(!m.is_array && m.count == 1 && m.index == i, "%s: meta shape", x->file);
        if (e->is_f64) {
            double d;
            memcpy(&d, &e->bits, 8);
            double g = 0;
            CHECK(m.type == INGOT_META_F64 && m.v.f == d, "%s: %s f64", x->file, e->key);
            CHECK(ingot_file_meta_get_f64(f, e->key, &g) == INGOT_OK && g == d, "get_f64 %s",
                  e->key);
            int64_t iv;
            CHECK(ingot_file_meta_get_i64(f, e->key, &iv) == INGOT_WRONG_TYPE, "wrong type");
        } else {
            int64_t g = 0;
            CHECK(m.type == INGOT_META_I64 && m.v.i == (int64_t)e->bits, "%s: %s i64", x->file,
                  e->key);
            CHECK(ingot_file_meta_get_i64(f, e->key, &g) == INGOT_OK && g == (int64_t)e->bits,
                  "get_i64 %s", e->key);
        }
    }
    ingot_tensor_info t;
    ingot_meta_info m;
    CHECK(ingot_file_tensor_find(f, "absent", &t) == INGOT_NOT_FOUND, "absent tensor");
    CHECK(ingot_file_meta_find(f, "absent", &m) == INGOT_NOT_FOUND, "absent key");
    CHECK(ingot_file_tensor_at(f, x->nt, &t) == INGOT_RANGE, "tensor range");
    CHECK(ingot_file_meta_at(f, x->nm, &m) == INGOT_RANGE, "meta range");
    CHECK(ingot_file_verify(f, 2, NULL) == INGOT_OK, "%s %s: verify", x->file, how);
}

TEST(test_mag_fixtures_exact)
{
    for (size_t k = 0; k < N_FILES; k++) {
        const xfile *x = &files[k];
        char path[512];
        snprintf(path, sizeof path, FIX "%s", x->file);
        size_t n;
        uint8_t *b = test_read_file(path, &n);
        ASSERT_TRUE(b);
        char hex[65];
        test_sha256_hex(b, n, hex);
        CHECK(n == x->size && strcmp(hex, x->sha256) == 0, "%s: not the README's file", x->file);
        /* mmap, pread, and a buffer at an odd address */
        for (int mode = 0; mode < 3; mode++) {
            ingot_open_opts o = {0};
            ingot_file *f = NULL;
            ingot_error e;
            uint8_t *odd = NULL;
            ingot_status st;
            if (mode == 2) {
                odd = malloc(n + 1);
                memcpy(odd + 1, b, n);
                st = ingot_file_open_buffer(odd + 1, n, &o, &f, &e);
            } else {
                o.io = mode ? INGOT_IO_PREAD : INGOT_IO_MMAP;
                st = ingot_file_open(path, &o, &f, &e);
            }
            CHECK(st == INGOT_OK, "%s mode %d: %s %s", x->file, mode, ingot_status_name(st), e.msg);
            if (st == INGOT_OK) {
                check_file(f, x, mode == 0 ? "mmap" : mode == 1 ? "pread" : "buffer");
                for (uint64_t i = 0; i < ingot_file_tensor_count(f); i++) {
                    ingot_tensor_info t;
                    ingot_file_tensor_at(f, i, &t);
                    uint32_t es = ingot_dtype_block_bytes(t.dtype);
                    if (mode == 1) {
                        CHECK(!t.data && (t.flags & INGOT_TENSOR_NOT_MAPPED), "pread: not mapped");
                        CHECK(!!(t.flags & INGOT_TENSOR_UNALIGNED) == (t.offset % es != 0),
                              "pread unaligned flag");
                    } else {
                        /* zero-copy: the view points into the file image */
                        const uint8_t *base = mode == 2 ? odd + 1 : NULL;
                        if (base) CHECK(t.data == base + t.offset, "buffer: zero-copy");
                        CHECK(!!(t.flags & INGOT_TENSOR_UNALIGNED) ==
                                  ((uintptr_t)t.data % es != 0),
                              "%s: %s unaligned flag", x->file, t.name);
                        CHECK(t.flags == (t.flags & INGOT_TENSOR_UNALIGNED), "no other flags");
                    }
                }
                ingot_file_close(f);
            }
            free(odd);
        }
        free(b);
    }
    /* the storage archive is 64-aligned in a mapping: no tensor is unaligned */
    ingot_file *f;
    ASSERT_OK(ingot_file_open(FIX "storage/storage_v100_mixed.mag", NULL, &f, NULL));
    ASSERT_EQ(ingot_file_alignment(f), 64);
    for (uint64_t i = 0; i < 5; i++) {
        ingot_tensor_info t;
        ingot_file_tensor_at(f, i, &t);
        ASSERT_EQ(t.flags, 0);
        ASSERT_EQ((uintptr_t)t.data % 64, 0);
    }
    ingot_file_close(f);
    /* the snapshot is packed: f32 "w" at byte 93 is unaligned in a mapping */
    ASSERT_OK(ingot_file_open(FIX "snapshot/snapshot_one_f32.mag", NULL, &f, NULL));
    ingot_tensor_info t;
    ASSERT_OK(ingot_file_tensor_at(f, 0, &t));
    ASSERT_EQ(t.flags, INGOT_TENSOR_UNALIGNED);
    ASSERT_EQ(ingot_file_alignment(f), 1);
    ingot_file_close(f);
}

TEST(test_mag_fixture_many)
{
    ingot_file *f;
    ASSERT_OK(ingot_file_open(FIX "storage/storage_v100_many.mag", NULL, &f, NULL));
    ASSERT_EQ(ingot_file_tensor_count(f), 24);
    ASSERT_EQ(ingot_file_meta_count(f), 30);
    for (int i = 0; i < 24; i++) {
        ingot_tensor_info t;
        ASSERT_OK(ingot_file_tensor_at(f, (uint64_t)i, &t));
        char want[8];
        snprintf(want, sizeof want, "t%02d", many_t[i]);
        ASSERT_STR(t.name, want);
        ASSERT_EQ(t.dtype, INGOT_DTYPE_I32);
        ASSERT_EQ(t.rank, 1);
        ASSERT_EQ(t.shape[0], 2);
        ASSERT_U64(t.offset, 1472 + 64 * (uint64_t)i);
        int32_t v[2];
        memcpy(v, t.data, 8);
        ASSERT_EQ(v[0], many_t[i]);
        ASSERT_EQ(v[1], -many_t[i]);
    }
    for (int i = 0; i < 30; i++) {
        ingot_meta_info m;
        ASSERT_OK(ingot_file_meta_at(f, (uint64_t)i, &m));
        char want[8];
        snprintf(want, sizeof want, "k%02d", many_k[i]);
        ASSERT_EQ(m.key_len, 3);
        ASSERT_MEM(m.key, want, 3);
        ASSERT_EQ(m.type, INGOT_META_I64);
        ASSERT_EQ(m.v.i, many_k[i] * many_k[i] - 100);
        int64_t g;
        ASSERT_OK(ingot_file_meta_get_i64(f, want, &g));
        ASSERT_EQ(g, m.v.i);
    }
    ASSERT_OK(ingot_file_verify(f, 1, NULL));
    ingot_file_close(f);
}

TEST(test_mag_reference_values)
{
    /* spec §1.7, §1.8 */
    ASSERT_U64(ingot__mag_hash("w", 1), 0xFB35E123632B76DCull);
    ASSERT_U64(ingot__mag_hash("pi", 2), 0x8DF72D37572F32E2ull);
    ASSERT_U64(ingot__mag_hash("epoch", 5), 0xE98C0C2A3A635936ull);
    const char *fox = "The quick brown fox jumps over the lazy dog";
    ASSERT_U64(ingot__mag_hash(fox, strlen(fox)), 0xecee2c672f1583c3ull);
    ASSERT_U64(ingot__mag_hash("w", 1) & 31, 28);
    uint8_t z[12] = {0};
    ASSERT_U64(ingot_crc32c(0, z, 12), 0x2B60B55Du);
    ASSERT_U64(ingot_crc32c(0, "123456789", 9), 0xE3069283u);
    /* code tables of the three eras */
    ASSERT_EQ(ingot__mag_dtype(MAG_ERA_A1, 3), INGOT_DTYPE_I32);
    ASSERT_EQ(ingot__mag_dtype(MAG_ERA_A1, 4), INGOT_DTYPE_INVALID);
    ASSERT_EQ(ingot__mag_dtype(MAG_ERA_A2, 3), INGOT_DTYPE_U8);
    ASSERT_EQ(ingot__mag_dtype(MAG_ERA_A2, 8), INGOT_DTYPE_I32);
    ASSERT_EQ(ingot__mag_dtype(MAG_ERA_A2, 10), INGOT_DTYPE_I64);
    ASSERT_EQ(ingot__mag_dtype(MAG_ERA_A2, 11), INGOT_DTYPE_INVALID);
    ASSERT_EQ(ingot__mag_dtype(MAG_ERA_B, 2), INGOT_DTYPE_BF16);
    ASSERT_EQ(ingot__mag_dtype(MAG_ERA_B, 11), INGOT_DTYPE_I64);
    ASSERT_EQ(ingot__mag_dtype(MAG_ERA_B, 12), INGOT_DTYPE_INVALID);
    /* a grown table: 23 keys move from 32 to 64 slots */
    uint64_t h[23];
    uint32_t order[23];
    for (int i = 0; i < 23; i++) h[i] = (uint64_t)i * 3; /* homes 0,3,..,66 wrap at 32 and 64 */
    ASSERT_OK(ingot__mag_slot_order(NULL, h, 23, order));
    /* in 64 slots: homes 0..63 sorted; i*3 >= 64 (i >= 22) wraps to 66 & 63 = 2 */
    ASSERT_EQ(order[0], 0);
    ASSERT_EQ(order[1], 22);
    ASSERT_EQ(order[2], 1);
}

/* ---- writing ---- */

typedef struct {
    int n;
    char last[256];
} notices;

static void on_notice(void *ctx, const char *msg)
{
    notices *nc = ctx;
    nc->n++;
    snprintf(nc->last, sizeof nc->last, "%s", msg);
}

static ingot_writer *new_writer(const char *fmt, notices *nc)
{
    ingot_writer_opts o = {0};
    o.format = fmt;
    o.no_fsync = true;
    ingot_writer *w = NULL;
    if (ingot_writer_new(&o, &w, NULL) != INGOT_OK) return NULL;
    if (nc) ingot_writer_set_notice(w, on_notice, nc);
    return w;
}

/* Copies f's metadata and tensors into w; tensors in `order` (names) if given, else file order;
 * with pushed, tensor bytes are streamed after begin in the declared order. */
static ingot_status describe(ingot_writer *w, ingot_file *f, const char *const *order, size_t n,
                             const char *const *korder, size_t nk)
{
    for (uint64_t i = 0; i < (korder ? nk : ingot_file_meta_count(f)); i++) {
        ingot_meta_info m;
        if (korder) ingot_file_meta_find(f, korder[i], &m);
        else ingot_file_meta_at(f, i, &m);
        char key[256];
        snprintf(key, sizeof key, "%.*s", (int)m.key_len, m.key);
        ingot_status st = m.type == INGOT_META_F64 ? ingot_writer_set_f64(w, key, m.v.f)
                                                   : ingot_writer_set_i64(w, key, m.v.i);
        if (st != INGOT_OK) return st;
    }
    for (uint64_t i = 0; i < (order ? n : ingot_file_tensor_count(f)); i++) {
        ingot_tensor_info t;
        if (order) ingot_file_tensor_find(f, order[i], &t);
        else ingot_file_tensor_at(f, i, &t);
        ingot_status st = ingot_writer_add_tensor(w, t.name, t.dtype, t.rank, t.shape, NULL,
                                                  t.data, NULL);
        if (st != INGOT_OK) return st;
    }
    return INGOT_OK;
}

static uint8_t *write_mem(ingot_writer *w, size_t *n, ingot_error *e)
{
    void *out = NULL;
    *n = 0;
    if (ingot_writer_begin_mem(w, e) != INGOT_OK) return NULL;
    if (ingot_writer_commit_mem(w, &out, n, e) != INGOT_OK) return NULL;
    return out;
}

static bool same_as(const uint8_t *b, size_t n, const char *fixture)
{
    size_t m;
    uint8_t *want = test_read_file(fixture, &m);
    bool ok = want && b && m == n && memcmp(want, b, n) == 0;
    if (!ok && want && b)
        for (size_t i = 0; i < n && i < m; i++)
            if (want[i] != b[i]) {
                fprintf(stderr, "  %s: first difference at byte %zu (%02x != %02x), sizes %zu/%zu\n",
                        fixture, i, b[i], want[i], n, m);
                break;
            }
    free(want);
    return ok;
}

/* Rewrites a fixture from its own contents: in the README's insertion order (what magnetron
 * was given) and in file order; both must give the original bytes. */
TEST(test_mag_rewrite_byte_exact)
{
    static const char *const ins_t[] = {"layer0.weight", "layer0.bias_f16", "ids.i32", "mask",
                                        "big.i64"};
    static const char *const ins_k[] = {"epoch", "neg", "lr", "pi"};
    static const struct {
        const char *file, *version;
        size_t nt;
    } cases[] = {
        {"storage/storage_v100_mixed.mag", "100", 5},  {"storage/storage_v1_mixed.mag", "1", 4},
        {"storage/storage_v100_one_f32.mag", "100", 0}, {"storage/storage_v100_meta_only.mag", "100", 0},
        {"storage/storage_v100_empty.mag", "100", 0},   {"storage/storage_v100_many.mag", "100", 0},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        char path[512];
        snprintf(path, sizeof path, FIX "%s", cases[k].file);
        ingot_file *f;
        ASSERT_OK(ingot_file_open(path, NULL, &f, NULL));
        for (int pass = 0; pass < 2; pass++) {
            bool readme = pass == 0 && cases[k].nt;
            notices nc = {0};
            ingot_writer *w = new_writer("mag", &nc);
            ASSERT_TRUE(w);
            ASSERT_OK(ingot_writer_set_option(w, "version", cases[k].version, NULL));
            ASSERT_OK(describe(w, f, readme ? ins_t : NULL, cases[k].nt, readme ? ins_k : NULL, 4));
            size_t n;
            ingot_error e;
            uint8_t *b = write_mem(w, &n, &e);
            CHECK(b && same_as(b, n, path), "%s pass %d differs", cases[k].file, pass);
            CHECK(nc.n == 0, "lossless: %s", nc.last);
            ingot_writer_free_mem(NULL, b, n);
            ingot_writer_free(w);
        }
        ingot_file_close(f);
    }
    /* many: inserted t00..t23 and k00..k29 in numeric order, as the fixture was made */
    ingot_file *f;
    ASSERT_OK(ingot_file_open(FIX "storage/storage_v100_many.mag", NULL, &f, NULL));
    char tn[24][4], kn[30][4];
    const char *tp[24], *kp[30];
    for (int i = 0; i < 24; i++) snprintf(tn[i], 4, "t%02d", i), tp[i] = tn[i];
    for (int i = 0; i < 30; i++) snprintf(kn[i], 4, "k%02d", i), kp[i] = kn[i];
    ingot_writer *w = new_writer("mag", NULL);
    ASSERT_OK(describe(w, f, tp, 24, kp, 30));
    size_t n;
    uint8_t *b = write_mem(w, &n, NULL);
    ASSERT_TRUE(b && same_as(b, n, FIX "storage/storage_v100_many.mag"));
    ingot_writer_free_mem(NULL, b, n);
    ingot_writer_free(w);
    ingot_file_close(f);
}

/* The snapshot: one_f32 is byte-exact given its timestamp; mixed has upstream's random
 * descriptor order and a pool in insertion order, so it is compared structurally. */
TEST(test_mag_snapshot_write)
{
    ingot_file *f;
    ASSERT_OK(ingot_file_open(FIX "snapshot/snapshot_one_f32.mag", NULL, &f, NULL));
    ingot_writer *w = new_writer("mag-snapshot", NULL);
    ASSERT_OK(ingot_writer_set_option(w, "timestamp", "1795267622", NULL));
    ASSERT_OK(describe(w, f, NULL, 0, NULL, 0));
    size_t n;
    uint8_t *b = write_mem(w, &n, NULL);
    ASSERT_TRUE(b && same_as(b, n, FIX "snapshot/snapshot_one_f32.mag"));
    ingot_writer_free_mem(NULL, b, n);
    ingot_writer_free(w);
    ingot_file_close(f);

    ASSERT_OK(ingot_file_open(FIX "snapshot/snapshot_mixed.mag", NULL, &f, NULL));
    w = new_writer("mag-snapshot", NULL);
    ASSERT_OK(describe(w, f, NULL, 0, NULL, 0));
    b = write_mem(w, &n, NULL);
    ASSERT_TRUE(b);
    ASSERT_EQ(n, 486); /* same size: same names, ranks and data */
    ASSERT_EQ(b[8] | b[9] | b[10] | b[11], 0); /* timestamp 0 by default: deterministic */
    ingot_file *g;
    ASSERT_OK(ingot_file_open_buffer(b, n, NULL, &g, NULL));
    ASSERT_STR(ingot_file_format(g), "mag-snapshot");
    check_file(g, &files[5], "rewritten");
    ingot_file_close(g);
    ingot_writer_free_mem(NULL, b, n);
    ingot_writer_free(w);
    ingot_file_close(f);
}

/* Tensors pushed with ingot_writer_write arrive in declaration order: records and data then
 * follow the declaration instead of the slot order, and the file still reads back. */
TEST(test_mag_pushed_order)
{
    ingot_file *f;
    ASSERT_OK(ingot_file_open(FIX "storage/storage_v100_mixed.mag", NULL, &f, NULL));
    static const char *const ins_t[] = {"layer0.weight", "layer0.bias_f16", "ids.i32", "mask",
                                        "big.i64"};
    for (int declared_file_order = 0; declared_file_order < 2; declared_file_order++) {
        ingot_writer *w = new_writer("mag", NULL);
        for (uint64_t i = 0; i < 4; i++) {
            ingot_meta_info m;
            ingot_file_meta_at(f, i, &m);
            char key[16];
            snprintf(key, sizeof key, "%.*s", (int)m.key_len, m.key);
            if (m.type == INGOT_META_F64) ingot_writer_set_f64(w, key, m.v.f);
            else ingot_writer_set_i64(w, key, m.v.i);
        }
        ingot_tensor_info t;
        for (int i = 0; i < 5; i++) {
            if (declared_file_order) ingot_file_tensor_at(f, (uint64_t)i, &t);
            else ingot_file_tensor_find(f, ins_t[i], &t);
            ASSERT_OK(ingot_writer_add_tensor(w, t.name, t.dtype, t.rank, t.shape, NULL, NULL, NULL));
        }
        ASSERT_OK(ingot_writer_begin_mem(w, NULL));
        for (int i = 0; i < 5; i++) {
            if (declared_file_order) ingot_file_tensor_at(f, (uint64_t)i, &t);
            else ingot_file_tensor_find(f, ins_t[i], &t);
            ASSERT_OK(ingot_writer_write(w, t.data, (size_t)t.nbytes, NULL));
        }
        void *out;
        size_t n;
        ASSERT_OK(ingot_writer_commit_mem(w, &out, &n, NULL));
        if (declared_file_order) {
            ASSERT_TRUE(same_as(out, n, FIX "storage/storage_v100_mixed.mag"));
        } else {
            ingot_file *g;
            ASSERT_OK(ingot_file_open_buffer(out, n, NULL, &g, NULL));
            for (int i = 0; i < 5; i++) {
                ingot_tensor_info a, c;
                ASSERT_OK(ingot_file_tensor_at(g, (uint64_t)i, &a));
                ASSERT_STR(a.name, ins_t[i]);
                ASSERT_OK(ingot_file_tensor_find(f, ins_t[i], &c));
                ASSERT_EQ(a.nbytes, c.nbytes);
                ASSERT_MEM(a.data, c.data, (size_t)a.nbytes);
            }
            ASSERT_OK(ingot_file_verify(g, 1, NULL));
            ingot_file_close(g);
        }
        ingot_writer_free_mem(NULL, out, n);
        ingot_writer_free(w);
    }
    ingot_file_close(f);
}

/* mag -> .ingot -> mag reproduces every storage fixture; snapshot -> .ingot -> snapshot
 * reproduces snapshot_one_f32. */
TEST(test_mag_roundtrip_ingot)
{
    static const char *const names[] = {
        "storage/storage_v100_mixed.mag", "storage/storage_v100_one_f32.mag",
        "storage/storage_v100_meta_only.mag", "storage/storage_v100_empty.mag",
        "storage/storage_v100_many.mag", "storage/storage_v1_mixed.mag",
        "snapshot/snapshot_one_f32.mag"};
    for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
        char path[512];
        snprintf(path, sizeof path, FIX "%s", names[k]);
        ingot_file *f, *g;
        ASSERT_OK(ingot_file_open(path, NULL, &f, NULL));
        ingot_writer *w = new_writer("ingot", NULL);
        ASSERT_OK(describe(w, f, NULL, 0, NULL, 0));
        size_t n1, n2;
        uint8_t *mid = write_mem(w, &n1, NULL);
        ASSERT_TRUE(mid);
        ASSERT_OK(ingot_file_open_buffer(mid, n1, NULL, &g, NULL));
        ASSERT_STR(ingot_file_format(g), "ingot");
        bool snap = strstr(names[k], "snapshot") != NULL;
        ingot_writer *w2 = new_writer(snap ? "mag-snapshot" : "mag", NULL);
        if (strstr(names[k], "v1_")) ASSERT_OK(ingot_writer_set_option(w2, "version", "1", NULL));
        if (snap) ASSERT_OK(ingot_writer_set_option(w2, "timestamp", "1795267622", NULL));
        ASSERT_OK(describe(w2, g, NULL, 0, NULL, 0));
        uint8_t *back = write_mem(w2, &n2, NULL);
        CHECK(back && same_as(back, n2, path), "%s: mag -> ingot -> mag differs", names[k]);
        ingot_writer_free_mem(NULL, back, n2);
        ingot_writer_free(w2);
        ingot_file_close(g);
        ingot_writer_free_mem(NULL, mid, n1);
        ingot_writer_free(w);
        ingot_file_close(f);
    }
}

/* Typed metadata -> .mag: i64/f64 exact; other numbers widened with a notice; what .mag cannot
 * hold dropped with a notice. */
TEST(test_mag_metadata_mapping)
{
    notices nc = {0};
    ingot_writer *w = new_writer("mag", &nc);
    ASSERT_OK(ingot_writer_set_i64(w, "i64", INT64_MIN));
    ASSERT_OK(ingot_writer_set_f64(w, "f64", -0.125));
    ASSERT_EQ(nc.n, 0);
    ASSERT_OK(ingot_writer_set_u8(w, "u8", 200));
    ASSERT_OK(ingot_writer_set_i8(w, "i8", -3));
    ASSERT_OK(ingot_writer_set_u16(w, "u16", 65535));
    ASSERT_OK(ingot_writer_set_i16(w, "i16", -30000));
    ASSERT_OK(ingot_writer_set_u32(w, "u32", 4000000000u));
    ASSERT_OK(ingot_writer_set_i32(w, "i32", -2000000000));
    ASSERT_OK(ingot_writer_set_u64(w, "u64", 1ull << 62));
    ASSERT_OK(ingot_writer_set_u64(w, "u64big", UINT64_MAX));
    ASSERT_OK(ingot_writer_set_bool(w, "bool", true));
    ASSERT_OK(ingot_writer_set_f32(w, "f32", 0.1f));
    ASSERT_OK(ingot_writer_set_string(w, "str", "x"));
    ASSERT_OK(ingot_writer_set_bytes(w, "bytes", "ab", 2));
    int32_t arr[2] = {1, 2};
    ASSERT_OK(ingot_writer_set_array(w, "arr", INGOT_META_I32, arr, 2));
    size_t n;
    uint8_t *b = write_mem(w, &n, NULL);
    ASSERT_TRUE(b);
    ASSERT_EQ(nc.n, 13); /* 9 widened, 4 dropped */
    ingot_file *f;
    ASSERT_OK(ingot_file_open_buffer(b, n, NULL, &f, NULL));
    ASSERT_EQ(ingot_file_meta_count(f), 11);
    int64_t i;
    double d;
    ASSERT_OK(ingot_file_meta_get_i64(f, "i64", &i));
    ASSERT_EQ(i, INT64_MIN);
    ASSERT_OK(ingot_file_meta_get_f64(f, "f64", &d));
    ASSERT_TRUE(d == -0.125);
    static const struct {
        const char *k;
        int64_t v;
    } ints[] = {{"u8", 200},        {"i8", -3},           {"u16", 65535}, {"i16", -30000},
                {"u32", 4000000000}, {"i32", -2000000000}, {"u64", 1ll << 62}, {"bool", 1}};
    for (size_t k = 0; k < sizeof ints / sizeof *ints; k++) {
        CHECK(ingot_file_meta_get_i64(f, ints[k].k, &i) == INGOT_OK && i == ints[k].v, "%s",
              ints[k].k);
    }
    ASSERT_OK(ingot_file_meta_get_f64(f, "f32", &d));
    ASSERT_TRUE(d == (double)0.1f);
    ingot_meta_info m;
    ASSERT_ST(ingot_file_meta_find(f, "str", &m), INGOT_NOT_FOUND);
    ASSERT_ST(ingot_file_meta_find(f, "u64big", &m), INGOT_NOT_FOUND);
    ASSERT_ST(ingot_file_meta_array_read(f, 0, INGOT_META_I64, 0, 1, &i), INGOT_WRONG_TYPE);
    ingot_file_close(f);
    ingot_writer_free_mem(NULL, b, n);
    ingot_writer_free(w);

    /* the snapshot has no metadata: every entry dropped with a notice */
    nc.n = 0;
    w = new_writer("mag-snapshot", &nc);
    ASSERT_OK(ingot_writer_set_i64(w, "a", 1));
    uint64_t shape[1] = {2};
    float v[2] = {1, 2};
    ASSERT_OK(ingot_writer_add_tensor(w, "x", INGOT_DTYPE_F32, 1, shape, NULL, v, NULL));
    b = write_mem(w, &n, NULL);
    ASSERT_TRUE(b);
    ASSERT_EQ(nc.n, 1);
    ASSERT_TRUE(strstr(nc.last, "'a'") != NULL);
    ingot_writer_free_mem(NULL, b, n);
    ingot_writer_free(w);

    /* a param id has no place in .mag */
    nc.n = 0;
    w = new_writer("mag", &nc);
    ingot_tensor_opts to = {true, 7};
    ASSERT_OK(ingot_writer_add_tensor(w, "x", INGOT_DTYPE_F32, 1, shape, &to, v, NULL));
    b = write_mem(w, &n, NULL);
    ASSERT_TRUE(b);
    ASSERT_EQ(nc.n, 1);
    ingot_writer_free_mem(NULL, b, n);
    ingot_writer_free(w);
}

/* A tensor .mag cannot hold is refused with UNSUPPORTED naming it, at begin. */
static void refuse(const char *fmt, const char *ver, ingot_dtype dt, uint32_t rank,
                   const uint64_t *shape, ingot_status want)
{
    ingot_writer *w = new_writer(fmt, NULL);
    if (ver) ingot_writer_set_option(w, "version", ver, NULL);
    static uint8_t data[4096];
    ingot_error e;
    memset(&e, 0, sizeof e);
    ingot_status st = ingot_writer_add_tensor(w, "bad.tensor", dt, rank, shape, NULL, data, &e);
    if (st == INGOT_OK) st = ingot_writer_begin_mem(w, &e);
    CHECK(st == want, "%s v%s dtype %s rank %u: got %s", fmt, ver ? ver : "-",
          ingot_dtype_name(dt), rank, ingot_status_name(st));
    if (want == INGOT_UNSUPPORTED) CHECK(strcmp(e.where, "bad.tensor") == 0, "where '%s'", e.where);
    ingot_writer_free(w);
}

TEST(test_mag_writer_refusals)
{
    uint64_t s1[1] = {4}, s0[2] = {2, 0}, s7[7] = {1, 1, 1, 1, 1, 1, 2}, s9[8] = {1, 1, 1, 1, 1, 1, 1, 2};
    refuse("mag", NULL, INGOT_DTYPE_BF16, 1, s1, INGOT_UNSUPPORTED);
    refuse("mag", NULL, INGOT_DTYPE_F64, 1, s1, INGOT_UNSUPPORTED);
    refuse("mag", NULL, INGOT_DTYPE_Q8_0, 1, (const uint64_t[]){32}, INGOT_UNSUPPORTED);
    refuse("mag", "1", INGOT_DTYPE_I64, 1, s1, INGOT_UNSUPPORTED);
    refuse("mag", "1", INGOT_DTYPE_U8, 1, s1, INGOT_UNSUPPORTED);
    refuse("mag", "1", INGOT_DTYPE_I32, 1, s1, INGOT_OK);
    refuse("mag", NULL, INGOT_DTYPE_F32, 0, NULL, INGOT_UNSUPPORTED); /* scalar */
    refuse("mag", NULL, INGOT_DTYPE_F32, 2, s0, INGOT_UNSUPPORTED);   /* empty */
    refuse("mag", "1", INGOT_DTYPE_F32, 7, s7, INGOT_UNSUPPORTED);    /* v1: rank <= 6 */
    refuse("mag", NULL, INGOT_DTYPE_F32, 7, s7, INGOT_OK);
    refuse("mag", NULL, INGOT_DTYPE_F32, 8, s9, INGOT_OK);
    refuse("mag-snapshot", NULL, INGOT_DTYPE_F64, 1, s1, INGOT_UNSUPPORTED);
    refuse("mag-snapshot", NULL, INGOT_DTYPE_F32, 2, s0, INGOT_UNSUPPORTED);
    refuse("mag-snapshot", NULL, INGOT_DTYPE_BF16, 1, s1, INGOT_OK);
    refuse("mag-snapshot", NULL, INGOT_DTYPE_F32, 0, NULL, INGOT_OK); /* scalars are fine */

    ingot_writer *w = new_writer("mag", NULL);
    ASSERT_ST(ingot_writer_set_option(w, "version", "2", NULL), INGOT_BAD_METADATA);
    ASSERT_ST(ingot_writer_set_option(w, "codes", "a3", NULL), INGOT_BAD_METADATA);
    ASSERT_ST(ingot_writer_set_option(w, "alignment", "64", NULL), INGOT_UNSUPPORTED);
    ingot_writer_free(w);
    w = new_writer("mag-snapshot", NULL);
    ASSERT_ST(ingot_writer_set_option(w, "timestamp", "-1", NULL), INGOT_BAD_METADATA);
    ASSERT_ST(ingot_writer_set_option(w, "version", "1", NULL), INGOT_UNSUPPORTED);
    ingot_writer_free(w);
    ASSERT_STR(ingot_writer_format_for_path("model.mag"), "mag");
}

/* Writes one tensor to a v100 archive with the given dtype codes; returns the file. */
static uint8_t *one_tensor(const char *codes, ingot_dtype dt, const void *data, uint64_t n,
                           size_t *len)
{
    ingot_writer *w = new_writer("mag", NULL);
    ingot_writer_set_option(w, "codes", codes, NULL);
    uint64_t shape[1] = {n};
    uint8_t *b = NULL;
    if (ingot_writer_add_tensor(w, "t", dt, 1, shape, NULL, data, NULL) == INGOT_OK)
        b = write_mem(w, len, NULL);
    ingot_writer_free(w);
    return b;
}

/* Version 100 code 3: u8 (era A2) or i32 (era A1); the block padding tells them apart. */
TEST(test_mag_era_detection)
{
    int32_t iv[5] = {-2, 7, 0, 1, 300};
    uint8_t uv[5] = {1, 2, 3, 4, 5};
    int32_t ones[16];
    memset(ones, 0xff, sizeof ones);
    size_t n;
    ingot_file *f;
    ingot_tensor_info t;
    uint8_t *b = one_tensor("a1", INGOT_DTYPE_I32, iv, 5, &n);
    ASSERT_TRUE(b);
    ASSERT_EQ(b[4], 100);
    ASSERT_EQ(b[24], 3); /* the tensor record's dtype code */
    ASSERT_OK(ingot_file_open_buffer(b, n, NULL, &f, NULL));
    ASSERT_OK(ingot_file_tensor_at(f, 0, &t));
    ASSERT_EQ(t.dtype, INGOT_DTYPE_I32);
    ASSERT_EQ(t.nbytes, 20);
    ASSERT_MEM(t.data, iv, 20);
    ingot_file_close(f);
    ingot_writer_free_mem(NULL, b, n);

    b = one_tensor("a2", INGOT_DTYPE_U8, uv, 5, &n);
    ASSERT_OK(ingot_file_open_buffer(b, n, NULL, &f, NULL));
    ASSERT_OK(ingot_file_tensor_at(f, 0, &t));
    ASSERT_EQ(t.dtype, INGOT_DTYPE_U8);
    ingot_file_close(f);
    ingot_writer_free_mem(NULL, b, n);

    /* i32 [16] of -1: as u8 the padding is all 0xFF too, so both readings are consistent;
     * the reader then takes era A2 (documented ambiguity) */
    b = one_tensor("a1", INGOT_DTYPE_I32, ones, 16, &n);
    ASSERT_OK(ingot_file_open_buffer(b, n, NULL, &f, NULL));
    ASSERT_OK(ingot_file_tensor_at(f, 0, &t));
    ASSERT_EQ(t.dtype, INGOT_DTYPE_U8);
    ASSERT_EQ(t.nbytes, 16);
    ingot_file_close(f);
    ingot_writer_free_mem(NULL, b, n);

    /* era A1 in version 100 has no u8: refused */
    ASSERT_TRUE(one_tensor("a1", INGOT_DTYPE_U8, uv, 5, &n) == NULL);
}

/* "SRP!" at byte 32 of a storage archive (the first metadata value's upper half) is a chance
 * match of the snapshot probe: the reader falls back to the archive. */
TEST(test_mag_probe_fallback)
{
    ingot_writer *w = new_writer("mag", NULL);
    ASSERT_OK(ingot_writer_set_i64(w, "a", (int64_t)0x2150525300000000ll));
    size_t n;
    uint8_t *b = write_mem(w, &n, NULL);
    ASSERT_TRUE(b);
    ASSERT_MEM(b + 32, "SRP!", 4);
    ingot_file *f;
    ASSERT_OK(ingot_file_open_buffer(b, n, NULL, &f, NULL));
    ASSERT_STR(ingot_file_format(f), "mag");
    int64_t v;
    ASSERT_OK(ingot_file_meta_get_i64(f, "a", &v));
    ASSERT_EQ(v, 0x2150525300000000ll);
    ingot_file_close(f);
    ingot_open_opts o = {0};
    o.format = "mag-snapshot"; /* named: no fallback */
    /* bytes 24..27 (the first record's type 1) read as a metadata map length */
    ASSERT_ST(ingot_file_open_buffer(b, n, &o, &f, NULL), INGOT_UNSUPPORTED);
    ingot_writer_free_mem(NULL, b, n);
    ingot_writer_free(w);
}

TEST(test_mag_writer_deterministic)
{
    ingot_file *f;
    ASSERT_OK(ingot_file_open(FIX "storage/storage_v100_many.mag", NULL, &f, NULL));
    uint8_t *b[2];
    size_t n[2];
    for (int k = 0; k < 2; k++) {
        ingot_writer *w = new_writer("mag", NULL);
        ASSERT_OK(describe(w, f, NULL, 0, NULL, 0));
        b[k] = write_mem(w, &n[k], NULL);
        ingot_writer_free(w);
    }
    ASSERT_TRUE(b[0] && b[1] && n[0] == n[1]);
    ASSERT_MEM(b[0], b[1], n[0]);
    ingot_writer_free_mem(NULL, b[0], n[0]);
    ingot_writer_free_mem(NULL, b[1], n[1]);
    ingot_file_close(f);
}

/* ---- CLI ---- */

static int sh(const char *cmd)
{
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

TEST(test_mag_cli)
{
    char cmd[2048];
    const char *bin = INGOT_BINARY_DIR;
    snprintf(cmd, sizeof cmd, "%s info --json %s > %s/mag_info.json", INGOT_CLI,
             FIX "storage/storage_v100_mixed.mag", bin);
    ASSERT_EQ(sh(cmd), 0);
    size_t n;
    char *js = (char *)test_read_file(INGOT_BINARY_DIR "/mag_info.json", &n);
    ASSERT_TRUE(js);
    js = realloc(js, n + 1);
    js[n] = 0;
    ASSERT_TRUE(strstr(js, "\"mag\"") && strstr(js, "layer0.bias_f16") && strstr(js, "epoch"));
    free(js);
    snprintf(cmd, sizeof cmd, "%s verify %s > /dev/null", INGOT_CLI,
             FIX "snapshot/snapshot_mixed.mag");
    ASSERT_EQ(sh(cmd), 0);
    /* mag -> ingot -> mag through the CLI, byte for byte */
    snprintf(cmd, sizeof cmd,
             "%s convert %s %s/mag_cli.ingot > /dev/null && %s convert %s/mag_cli.ingot "
             "%s/mag_cli.mag --opt version=1 > /dev/null",
             INGOT_CLI, FIX "storage/storage_v1_mixed.mag", bin, INGOT_CLI, bin, bin);
    ASSERT_EQ(sh(cmd), 0);
    uint8_t *back = test_read_file(INGOT_BINARY_DIR "/mag_cli.mag", &n);
    ASSERT_TRUE(back && same_as(back, n, FIX "storage/storage_v1_mixed.mag"));
    free(back);
    /* to the snapshot by name; a bad option is rejected */
    snprintf(cmd, sizeof cmd,
             "%s convert %s %s/mag_cli_snap.mag --to mag-snapshot > /dev/null 2>&1 && %s info "
             "%s/mag_cli_snap.mag | grep -q mag-snapshot",
             INGOT_CLI, FIX "storage/storage_v100_mixed.mag", bin, INGOT_CLI, bin);
    ASSERT_EQ(sh(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s convert %s %s/mag_cli_bad.mag --opt version=7 > /dev/null 2>&1",
             INGOT_CLI, FIX "storage/storage_v100_mixed.mag", bin);
    ASSERT_TRUE(sh(cmd) != 0);
    /* a corrupt file is rejected with the region named */
    uint8_t *b = test_read_file(FIX "storage/storage_v100_one_f32.mag", &n);
    ASSERT_TRUE(b);
    b[0x49] = 'x'; /* the key "w" -> "x": structure intact, checksum wrong */
    snprintf(cmd, sizeof cmd, "%s/mag_cli_corrupt.mag", bin);
    FILE *fp = fopen(cmd, "wb");
    ASSERT_TRUE(fp);
    fwrite(b, 1, n, fp);
    fclose(fp);
    free(b);
    snprintf(cmd, sizeof cmd, "%s info %s/mag_cli_corrupt.mag 2> %s/mag_cli_err.txt > /dev/null",
             INGOT_CLI, bin, bin);
    ASSERT_TRUE(sh(cmd) != 0);
    char *msg = (char *)test_read_file(INGOT_BINARY_DIR "/mag_cli_err.txt", &n);
    ASSERT_TRUE(msg);
    msg = realloc(msg, n + 1);
    msg[n] = 0;
    CHECK(strstr(msg, "BAD_CHECKSUM") && strstr(msg, "header and records"), "stderr: %s", msg);
    free(msg);
}

RUN_TESTS(T(test_mag_fixtures_exact), T(test_mag_fixture_many), T(test_mag_reference_values),
          T(test_mag_rewrite_byte_exact), T(test_mag_snapshot_write), T(test_mag_pushed_order),
          T(test_mag_roundtrip_ingot), T(test_mag_metadata_mapping), T(test_mag_writer_refusals),
          T(test_mag_era_detection), T(test_mag_probe_fallback), T(test_mag_writer_deterministic),
          T(test_mag_cli))
