/*
 * test_npy.c - the .npy/.npz adapter and writers: every fixture in ../shared/fixtures/npy against
 * its sidecar (names, dtypes, shapes, flags, offsets, sha256 of the stored bytes and of the
 * C-order little-endian copy, first values), in mmap, pread and buffer modes; rejected dtypes;
 * writers (byte-exact against NumPy for C-order little-endian fixtures, deterministic, refusals,
 * notices, zip64, alignment); round trips npz -> .ingot -> npz; the malformed catalogue for the
 * npy header and the npz container.
 */
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <json-c/json.h>
#include <zlib.h>

#include "harness.h"
#include "files.h"
#include "io.h"
#include "sha256.h"
#include "writer_impl.h" /* ingot__write_chunk */
#include "zip.h"

/* 64 dimensions of 1 (INGOT_MAX_RANK), for rank limit rows */
#define ONES8 "1,1,1,1,1,1,1,1"
#define ONES64 ONES8 "," ONES8 "," ONES8 "," ONES8 "," ONES8 "," ONES8 "," ONES8 "," ONES8

#define FIX INGOT_FIXTURES "/npy/"

static int spill(const char *path, const void *p, size_t n)
{
    FILE *fp = fopen(path, "wb");
    if (!fp) return -1;
    size_t w = fwrite(p, 1, n, fp);
    fclose(fp);
    return w == n ? 0 : -1;
}

static ingot_dtype dtype_of_descr(const char *d)
{
    static const struct {
        const char *s;
        ingot_dtype dt;
    } m[] = {{"b1", INGOT_DTYPE_BOOL}, {"i1", INGOT_DTYPE_I8},  {"i2", INGOT_DTYPE_I16},
             {"i4", INGOT_DTYPE_I32},  {"i8", INGOT_DTYPE_I64}, {"u1", INGOT_DTYPE_U8},
             {"u2", INGOT_DTYPE_U16},  {"u4", INGOT_DTYPE_U32}, {"u8", INGOT_DTYPE_U64},
             {"f2", INGOT_DTYPE_F16},  {"f4", INGOT_DTYPE_F32}, {"f8", INGOT_DTYPE_F64},
             {"c8", INGOT_DTYPE_C64}};
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
        if (strcmp(d + 1, m[i].s) == 0) return m[i].dt;
    return INGOT_DTYPE_INVALID;
}

static double first_value(const uint8_t *p, ingot_dtype dt, size_t k)
{
    switch (dt) {
    case INGOT_DTYPE_F32: {
        float v;
        memcpy(&v, p + 4 * k, 4);
        return v;
    }
    case INGOT_DTYPE_F64: {
        double v;
        memcpy(&v, p + 8 * k, 8);
        return v;
    }
    case INGOT_DTYPE_I32: {
        int32_t v;
        memcpy(&v, p + 4 * k, 4);
        return v;
    }
    case INGOT_DTYPE_I64: {
        int64_t v;
        memcpy(&v, p + 8 * k, 8);
        return (double)v;
    }
    case INGOT_DTYPE_U8:
    case INGOT_DTYPE_BOOL: return p[k];
    default: return NAN;
    }
}

/* Checks every tensor of an open file against the sidecar's "tensors". */
static void check_against_sidecar(ingot_file *f, const char *file, json_object *js, bool npz)
{
    json_object *tens;
    CHECK(json_object_object_get_ex(js, "tensors", &tens), "%s: no tensors", file);
    size_t nt = json_object_array_length(tens);
    CHECK(ingot_file_tensor_count(f) == nt, "%s: %llu tensors, sidecar %zu", file,
          (unsigned long long)ingot_file_tensor_count(f), nt);
    char stem[256];
    snprintf(stem, sizeof stem, "%s", file);
    char *dot = strrchr(stem, '.');
    if (dot) *dot = 0;
    for (size_t i = 0; i < nt && i < ingot_file_tensor_count(f); i++) {
        json_object *jt = json_object_array_get_idx(tens, i), *v;
        ingot_tensor_info t;
        CHECK(ingot_file_tensor_at(f, i, &t) == INGOT_OK, "%s: tensor_at", file);
        const char *want_name = stem;
        if (json_object_object_get_ex(jt, "name", &v)) want_name = json_object_get_string(v);
        CHECK(strcmp(t.name, want_name) == 0, "%s: name %s want %s", file, t.name, want_name);
        ingot_tensor_info byname;
        CHECK(ingot_file_tensor_find(f, want_name, &byname) == INGOT_OK && byname.index == i,
              "%s: find %s", file, want_name);
        json_object_object_get_ex(jt, "dtype", &v);
        const char *descr = json_object_get_string(v);
        CHECK(t.dtype == dtype_of_descr(descr), "%s: dtype %s vs %s", file,
              ingot_dtype_name(t.dtype), descr);
        json_object_object_get_ex(jt, "shape", &v);
        CHECK(t.rank == json_object_array_length(v), "%s: rank", file);
        for (uint32_t k = 0; k < t.rank && k < json_object_array_length(v); k++)
            CHECK(t.shape[k] == (uint64_t)json_object_get_int64(json_object_array_get_idx(v, k)),
                  "%s: shape[%u]", file, k);
        json_object_object_get_ex(jt, "nbytes", &v);
        CHECK(t.nbytes == (uint64_t)json_object_get_int64(v), "%s: nbytes", file);
        json_object_object_get_ex(jt, "n_elements", &v);
        CHECK(t.nelem == (uint64_t)json_object_get_int64(v), "%s: nelem", file);
        bool be = descr[0] == '>' && t.dtype != INGOT_DTYPE_U8 && t.dtype != INGOT_DTYPE_I8 &&
                  t.dtype != INGOT_DTYPE_BOOL;
        CHECK(!!(t.flags & INGOT_TENSOR_BIG_ENDIAN) == be, "%s: big-endian flag", file);
        json_object_object_get_ex(jt, "fortran_order", &v);
        bool fo = json_object_get_boolean(v) && t.rank > 1;
        CHECK(!!(t.flags & INGOT_TENSOR_FORTRAN) == fo, "%s: fortran flag", file);
        if (json_object_object_get_ex(jt, "file_offset", &v) && !json_object_is_type(v, json_type_null)) {
            CHECK(t.offset == (uint64_t)json_object_get_int64(v), "%s: offset %llu", file,
                  (unsigned long long)t.offset);
            CHECK(!(t.flags & INGOT_TENSOR_NOT_MAPPED) == (t.data != NULL || t.nbytes == 0),
                  "%s: data pointer vs NOT_MAPPED", file);
        } else if (npz) {
            CHECK(t.flags & INGOT_TENSOR_NOT_MAPPED, "%s: deflated member must be NOT_MAPPED", file);
        }
        /* stored bytes */
        uint8_t *buf = malloc(t.nbytes + 1);
        char hex[65];
        ingot_error err;
        CHECK(ingot_file_tensor_read(f, i, 0, buf, t.nbytes, &err) == INGOT_OK, "%s: read: %s",
              file, err.msg);
        test_sha256_hex(buf, t.nbytes, hex);
        json_object_object_get_ex(jt, "sha256", &v);
        CHECK(strcmp(hex, json_object_get_string(v)) == 0, "%s/%s: sha256 of stored bytes", file,
              t.name);
        if (t.data) CHECK(memcmp(t.data, buf, t.nbytes) == 0, "%s: data pointer bytes", file);
        /* C-order little-endian copy */
        memset(buf, 0xAA, t.nbytes);
        CHECK(ingot_file_tensor_copy(f, i, buf, t.nbytes, &err) == INGOT_OK, "%s: copy: %s", file,
              err.msg);
        test_sha256_hex(buf, t.nbytes, hex);
        json_object_object_get_ex(jt, "sha256_c_order_le", &v);
        CHECK(strcmp(hex, json_object_get_string(v)) == 0, "%s/%s: sha256 of the C-order LE copy",
              file, t.name);
        if (json_object_object_get_ex(jt, "first4", &v))
            for (size_t k = 0; k < json_object_array_length(v) && k < t.nelem; k++) {
                double want = json_object_get_double(json_object_array_get_idx(v, k));
                double got = first_value(buf, t.dtype, k);
                if (!isnan(got)) CHECK(got == want, "%s: first4[%zu] %g vs %g", file, k, got, want);
            }
        free(buf);
        CHECK(ingot_file_tensor_verify(f, i, &err) == INGOT_OK, "%s: verify: %s", file, err.msg);
    }
    CHECK(ingot_file_meta_count(f) == 0, "%s: npy has no metadata", file);
}

static void check_fixture(const char *file, ingot_io_mode io, bool buffer)
{
    char path[1024];
    snprintf(path, sizeof path, FIX "%s", file);
    snprintf(path + strlen(path), sizeof path - strlen(path), ".expected.json");
    json_object *js = json_object_from_file(path);
    CHECK(js != NULL, "%s: sidecar", file);
    if (!js) return;
    snprintf(path, sizeof path, FIX "%s", file);
    ingot_open_opts o = {0};
    o.io = io;
    ingot_file *f = NULL;
    ingot_error err;
    size_t n = 0;
    uint8_t *img = NULL;
    ingot_status st;
    if (buffer) {
        img = test_read_file(path, &n);
        st = ingot_file_open_buffer(img, n, &o, &f, &err);
    } else {
        st = ingot_file_open(path, &o, &f, &err);
    }
    bool npz = strstr(file, ".npz") != NULL;
    if (strstr(file, "_REJECT")) {
        CHECK(st == INGOT_UNSUPPORTED, "%s: got %s", file, ingot_status_name(st));
        CHECK(strstr(err.msg, "structured") && strstr(err.msg, "('a', '<i4')"),
              "%s: message names the descr: %s", file, err.msg);
    } else {
        CHECK(st == INGOT_OK, "%s: open: %s", file, err.msg);
        if (st == INGOT_OK) {
            CHECK(strcmp(ingot_file_format(f), npz ? "npz" : "npy") == 0, "%s: format", file);
            if (buffer && !npz) {
                /* a buffer has no path: the documented default name */
                ingot_tensor_info t;
                ingot_file_tensor_at(f, 0, &t);
                CHECK(strcmp(t.name, "array") == 0, "%s: buffer name %s", file, t.name);
            } else {
                check_against_sidecar(f, file, js, npz);
            }
            CHECK(ingot_file_verify(f, 1, &err) == INGOT_OK, "%s: verify %s", file, err.msg);
        }
    }
    ingot_file_close(f);
    free(img);
    json_object_put(js);
}

static void each_fixture(void (*fn)(const char *))
{
    DIR *d = opendir(FIX);
    if (!d) {
        fprintf(stderr, "no fixtures at %s\n", FIX);
        harness_failed++;
        return;
    }
    struct dirent *e;
    int count = 0;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l > 4 && (!strcmp(e->d_name + l - 4, ".npy") || !strcmp(e->d_name + l - 4, ".npz"))) {
            fn(e->d_name);
            count++;
        }
    }
    closedir(d);
    CHECK(count == 16, "expected 16 fixtures, found %d", count);
}

static void fx_mmap(const char *f) { check_fixture(f, INGOT_IO_MMAP, false); }
static void fx_pread(const char *f) { check_fixture(f, INGOT_IO_PREAD, false); }
static void fx_buffer(const char *f) { check_fixture(f, INGOT_IO_MMAP, true); }

TEST(test_npy_fixtures_mmap) { each_fixture(fx_mmap); }
TEST(test_npy_fixtures_pread) { each_fixture(fx_pread); }
TEST(test_npy_fixtures_buffer) { each_fixture(fx_buffer); }

TEST(test_npy_zero_copy_and_flags)
{
    ingot_file *f;
    ASSERT_OK(ingot_file_open(FIX "f4_128x256.npy", NULL, &f, NULL));
    ingot_tensor_info t;
    ASSERT_OK(ingot_file_tensor_at(f, 0, &t));
    ASSERT_TRUE(t.data != NULL);
    ASSERT_EQ(t.flags, 0);
    ASSERT_U64(t.offset, 128);
    ASSERT_U64(ingot_file_alignment(f), 64);
    ASSERT_STR(ingot_file_version(f), "1.0");
    ingot_file_close(f);
    ASSERT_OK(ingot_file_open(FIX "arrays_stored.npz", NULL, &f, NULL));
    ASSERT_OK(ingot_file_tensor_find(f, "bias", &t)); /* <i8 at 438: not 8-aligned */
    ASSERT_TRUE(t.data != NULL);
    ASSERT_EQ(t.flags, INGOT_TENSOR_UNALIGNED);
    ASSERT_OK(ingot_file_tensor_find(f, "flag", &t)); /* 0-d bool */
    ASSERT_EQ(t.rank, 0);
    ASSERT_U64(t.nelem, 1);
    ASSERT_OK(ingot_file_tensor_find(f, "empty", &t));
    ASSERT_U64(t.nbytes, 0);
    ASSERT_U64(t.shape[0], 0);
    ASSERT_U64(t.shape[1], 2);
    ASSERT_ST(ingot_file_tensor_find(f, "empty.npy", &t), INGOT_NOT_FOUND);
    ASSERT_ST(ingot_file_tensor_find(f, "arr", &t), INGOT_NOT_FOUND);
    ingot_file_close(f);
}

/* Deflated member read in random order and in chunks equals the full copy. */
TEST(test_npy_deflated_random_access)
{
    ingot_file *f;
    ASSERT_OK(ingot_file_open(FIX "arrays_compressed.npz", NULL, &f, NULL));
    ingot_tensor_info t;
    ASSERT_OK(ingot_file_tensor_find(f, "x", &t));
    uint8_t *all = malloc(t.nbytes), *part = malloc(t.nbytes);
    ASSERT_OK(ingot_file_tensor_read(f, t.index, 0, all, t.nbytes, NULL));
    /* backwards in 1000-byte pieces (cursor restarts), then forwards in odd pieces (continues) */
    for (uint64_t off = t.nbytes; off > 0;) {
        uint64_t k = off >= 1000 ? 1000 : off;
        off -= k;
        ASSERT_OK(ingot_file_tensor_read(f, t.index, off, part + off, k, NULL));
    }
    ASSERT_MEM(all, part, t.nbytes);
    memset(part, 0, t.nbytes);
    for (uint64_t off = 0; off < t.nbytes;) {
        uint64_t k = t.nbytes - off < 777 ? t.nbytes - off : 777;
        ASSERT_OK(ingot_file_tensor_read(f, t.index, off, part + off, k, NULL));
        off += k;
    }
    ASSERT_MEM(all, part, t.nbytes);
    /* interleave two members: the cursor switches */
    ingot_tensor_info y;
    ASSERT_OK(ingot_file_tensor_find(f, "y", &y));
    uint8_t yb[400];
    ASSERT_OK(ingot_file_tensor_read(f, y.index, 0, yb, 400, NULL));
    ASSERT_OK(ingot_file_tensor_read(f, t.index, 8000, part, 100, NULL));
    ASSERT_MEM(all + 8000, part, 100);
    int32_t y7;
    memcpy(&y7, yb + 28, 4);
    ASSERT_EQ(y7, 7);
    ASSERT_ST(ingot_file_tensor_read(f, t.index, t.nbytes - 1, part, 2, NULL), INGOT_RANGE);
    free(all);
    free(part);
    ingot_file_close(f);
}

/* ---------------------------------------------------------------------------------------------
 * Writers
 * ------------------------------------------------------------------------------------------- */

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

/* Copies every tensor of f (as its C-order LE copy) into a new writer of `format`. */
static ingot_status convert_mem(ingot_file *f, const char *format, const char *opt_k,
                                const char *opt_v, void **out, size_t *size, notices *nt)
{
    ingot_writer_opts wo = {0};
    wo.format = format;
    wo.no_fsync = true;
    ingot_writer *w;
    ingot_error err;
    ingot_status st = ingot_writer_new(&wo, &w, &err);
    if (st) return st;
    if (nt) ingot_writer_set_notice(w, on_notice, nt);
    if (opt_k && (st = ingot_writer_set_option(w, opt_k, opt_v, &err))) goto done;
    uint64_t n = ingot_file_tensor_count(f);
    void **bufs = calloc(n + 1, sizeof *bufs);
    for (uint64_t i = 0; i < n && !st; i++) {
        ingot_tensor_info t;
        ingot_file_tensor_at(f, i, &t);
        bufs[i] = malloc(t.nbytes + 1);
        st = ingot_file_tensor_copy(f, i, bufs[i], t.nbytes, &err);
        if (!st) st = ingot_writer_add_tensor(w, t.name, t.dtype, t.rank, t.shape, NULL,
                                              bufs[i], &err);
    }
    for (uint64_t i = 0; i < ingot_file_meta_count(f) && !st; i++) {
        ingot_meta_info m;
        ingot_file_meta_at(f, i, &m);
        if (m.type == INGOT_META_STRING && !m.is_array)
            st = ingot_writer_set_stringn(w, m.key, m.data, m.count);
    }
    if (!st) st = ingot_writer_begin_mem(w, &err);
    if (!st) st = ingot_writer_commit_mem(w, out, size, &err);
    if (st) fprintf(stderr, "  convert_mem(%s): %s\n", format, err.msg);
    for (uint64_t i = 0; i < n; i++) free(bufs[i]);
    free(bufs);
done:
    ingot_writer_free(w);
    return st;
}

/* Every C-order little-endian .npy fixture written back is byte-identical to NumPy's file. */
TEST(test_npy_writer_byte_exact_vs_numpy)
{
    static const char *files[] = {"b1_2x3.npy", "empty_f4_0.npy", "empty_i8_3x0.npy",
                                  "f2_3x2.npy", "f4_128x256.npy", "f4_2x3.npy", "f8_5.npy",
                                  "i4_2x2x3.npy", "i8_4.npy", "scalar_f8.npy", "u1_10.npy"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char path[512];
        snprintf(path, sizeof path, FIX "%s", files[i]);
        size_t n;
        uint8_t *want = test_read_file(path, &n);
        ingot_file *f;
        ASSERT_OK(ingot_file_open(path, NULL, &f, NULL));
        void *out = NULL;
        size_t size = 0;
        notices nt = {0};
        ASSERT_OK(convert_mem(f, "npy", NULL, NULL, &out, &size, &nt));
        CHECK(size == n && memcmp(out, want, n) == 0, "%s: written file differs from NumPy's",
              files[i]);
        CHECK(nt.count == 1 && strstr(nt.last, "not stored"), "%s: name notice", files[i]);
        ingot_writer_free_mem(NULL, out, size);
        ingot_file_close(f);
        free(want);
    }
}

/* Big-endian and Fortran fixtures are written as their C-order LE copy; reopened they hash to
 * the sidecar's sha256_c_order_le. */
TEST(test_npy_writer_converts_layout)
{
    static const struct {
        const char *file, *sha;
    } cases[] = {
        {"be_f4_3x2.npy", "043847bc3bf09bad4f7358651674ac0ff31c75ccb265e7db19a710b6deff1fb6"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[512];
        snprintf(path, sizeof path, FIX "%s", cases[i].file);
        ingot_file *f, *g;
        ASSERT_OK(ingot_file_open(path, NULL, &f, NULL));
        void *out;
        size_t size;
        ASSERT_OK(convert_mem(f, "npy", NULL, NULL, &out, &size, NULL));
        ASSERT_OK(ingot_file_open_buffer(out, size, NULL, &g, NULL));
        ingot_tensor_info t;
        ASSERT_OK(ingot_file_tensor_at(g, 0, &t));
        ASSERT_EQ(t.flags, 0);
        char hex[65];
        test_sha256_hex(t.data, t.nbytes, hex);
        ASSERT_STR(hex, cases[i].sha);
        ingot_file_close(g);
        ingot_file_close(f);
        ingot_writer_free_mem(NULL, out, size);
    }
}

static void same_tensors(ingot_file *a, ingot_file *b)
{
    ASSERT_U64(ingot_file_tensor_count(a), ingot_file_tensor_count(b));
    for (uint64_t i = 0; i < ingot_file_tensor_count(a); i++) {
        ingot_tensor_info ta, tb;
        ASSERT_OK(ingot_file_tensor_at(a, i, &ta));
        ASSERT_OK(ingot_file_tensor_find(b, ta.name, &tb));
        ASSERT_EQ(ta.dtype, tb.dtype);
        ASSERT_EQ(ta.rank, tb.rank);
        ASSERT_MEM(ta.shape, tb.shape, sizeof ta.shape);
        uint8_t *x = malloc(ta.nbytes + 1), *y = malloc(tb.nbytes + 1);
        ASSERT_OK(ingot_file_tensor_copy(a, i, x, ta.nbytes, NULL));
        ASSERT_OK(ingot_file_tensor_copy(b, tb.index, y, tb.nbytes, NULL));
        ASSERT_MEM(x, y, ta.nbytes);
        free(x);
        free(y);
    }
}

TEST(test_npy_roundtrip_npz_ingot_npz)
{
    static const char *files[] = {"arrays_stored.npz", "arrays_compressed.npz"};
    for (size_t k = 0; k < 2; k++) {
        char path[512];
        snprintf(path, sizeof path, FIX "%s", files[k]);
        ingot_file *f, *g, *h;
        ASSERT_OK(ingot_file_open(path, NULL, &f, NULL));
        void *ing, *npz, *npz2;
        size_t ing_n, npz_n, npz2_n;
        ASSERT_OK(convert_mem(f, "ingot", NULL, NULL, &ing, &ing_n, NULL));
        ASSERT_OK(ingot_file_open_buffer(ing, ing_n, NULL, &g, NULL));
        ASSERT_STR(ingot_file_format(g), "ingot");
        same_tensors(f, g);
        ASSERT_OK(convert_mem(g, "npz", NULL, NULL, &npz, &npz_n, NULL));
        ASSERT_OK(ingot_file_open_buffer(npz, npz_n, NULL, &h, NULL));
        ASSERT_STR(ingot_file_format(h), "npz");
        same_tensors(f, h);
        ASSERT_OK(ingot_file_verify(h, 1, NULL));
        /* aligned and zero-copy: every member's data starts at a multiple of 64 */
        for (uint64_t i = 0; i < ingot_file_tensor_count(h); i++) {
            ingot_tensor_info t;
            ingot_file_tensor_at(h, i, &t);
            CHECK(t.offset % 64 == 0 && t.data && !(t.flags & ~INGOT_TENSOR_FORTRAN),
                  "%s: offset %llu flags %x", t.name, (unsigned long long)t.offset, t.flags);
        }
        /* deterministic */
        ASSERT_OK(convert_mem(g, "npz", NULL, NULL, &npz2, &npz2_n, NULL));
        ASSERT_TRUE(npz_n == npz2_n && memcmp(npz, npz2, npz_n) == 0);
        ingot_file_close(h);
        ingot_file_close(g);
        ingot_file_close(f);
        ingot_writer_free_mem(NULL, ing, ing_n);
        ingot_writer_free_mem(NULL, npz, npz_n);
        ingot_writer_free_mem(NULL, npz2, npz2_n);
    }
}

/* Output that NumPy reads: src/formats/npy/tools/numpy_check.py verified these exact
 * bytes with numpy 1.24.2 (np.load, allow_pickle=False) and printed their sha256. */
#define GOLDEN_STORED_SHA "64c1be0aa9d004a7611a250b06a517587bf3c500d95fe77243f9644bb88f32ea"
#define GOLDEN_ZIP64_SHA "29717dc65f73f3813b7a8e303f0412122374d1ba2ad9d6441c916b4ccddb57b5"
#define GOLDEN_ALIGN1_SHA "65652ac7604a13a3aec36b6b85f3c49b3189f1e1d5079cc62ea9ffd8305c57e5"

TEST(test_npy_writer_numpy_golden)
{
    ingot_file *f;
    ASSERT_OK(ingot_file_open(FIX "arrays_stored.npz", NULL, &f, NULL));
    static const struct {
        const char *k, *v, *sha, *out;
    } cases[] = {
        {NULL, NULL, GOLDEN_STORED_SHA, "npy_golden_stored.npz"},
        {"zip64", "always", GOLDEN_ZIP64_SHA, "npy_golden_zip64.npz"},
        {"align", "1", GOLDEN_ALIGN1_SHA, "npy_golden_align1.npz"},
    };
    for (size_t i = 0; i < 3; i++) {
        void *out;
        size_t n;
        ASSERT_OK(convert_mem(f, "npz", cases[i].k, cases[i].v, &out, &n, NULL));
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", INGOT_BINARY_DIR, cases[i].out);
        ASSERT_EQ(spill(path, out, n), 0);
        char hex[65];
        test_sha256_hex(out, n, hex);
        CHECK(strcmp(hex, cases[i].sha) == 0, "%s: sha256 %s (NumPy-checked: %s)", cases[i].out,
              hex, cases[i].sha);
        ingot_file *g;
        ASSERT_OK(ingot_file_open_buffer(out, n, NULL, &g, NULL));
        same_tensors(f, g);
        ingot_file_close(g);
        ingot_writer_free_mem(NULL, out, n);
    }
    ingot_file_close(f);
}

TEST(test_npy_writer_refusals_and_notices)
{
    ingot_writer_opts wo = {0};
    ingot_writer *w;
    ingot_error err;
    uint16_t bf[4] = {0};
    uint64_t shape[1] = {4};
    static const char *fmts[] = {"npy", "npz"};
    for (int k = 0; k < 2; k++) {
        wo.format = fmts[k];
        ASSERT_OK(ingot_writer_new(&wo, &w, NULL));
        ASSERT_ST(ingot_writer_add_tensor(w, "wbf16", INGOT_DTYPE_BF16, 1, shape, NULL, bf, &err),
                  INGOT_UNSUPPORTED);
        ASSERT_TRUE(strstr(err.msg, "BF16") != NULL); /* where: see the report (core) */
        uint8_t q[18] = {0};
        uint64_t qs[1] = {32};
        ASSERT_ST(ingot_writer_add_tensor(w, "q", INGOT_DTYPE_Q4_0, 1, qs, NULL, q, &err),
                  INGOT_UNSUPPORTED);
        ingot_writer_free(w);
    }
    /* npy: exactly one tensor */
    wo.format = "npy";
    ASSERT_OK(ingot_writer_new(&wo, &w, NULL));
    float a[4] = {1, 2, 3, 4};
    ASSERT_OK(ingot_writer_add_tensor(w, "a", INGOT_DTYPE_F32, 1, shape, NULL, a, NULL));
    ASSERT_OK(ingot_writer_add_tensor(w, "b", INGOT_DTYPE_F32, 1, shape, NULL, a, NULL));
    ASSERT_ST(ingot_writer_begin_mem(w, &err), INGOT_UNSUPPORTED);
    ASSERT_TRUE(strstr(err.msg, "exactly one") != NULL);
    ingot_writer_free(w);
    /* metadata dropped with one notice per entry */
    wo.format = "npz";
    ASSERT_OK(ingot_writer_new(&wo, &w, NULL));
    notices nt = {0};
    ingot_writer_set_notice(w, on_notice, &nt);
    ASSERT_OK(ingot_writer_set_string(w, "author", "me"));
    ASSERT_OK(ingot_writer_set_u32(w, "step", 7));
    ASSERT_OK(ingot_writer_add_tensor(w, "a", INGOT_DTYPE_F32, 1, shape, NULL, a, NULL));
    ASSERT_ST(ingot_writer_set_option(w, "zip64", "sometimes", NULL), INGOT_BAD_METADATA);
    ASSERT_ST(ingot_writer_set_option(w, "align", "3", NULL), INGOT_BAD_METADATA);
    ASSERT_ST(ingot_writer_set_option(w, "level", "9", NULL), INGOT_UNSUPPORTED);
    ASSERT_OK(ingot_writer_begin_mem(w, NULL));
    void *out;
    size_t n;
    ASSERT_OK(ingot_writer_commit_mem(w, &out, &n, NULL));
    ASSERT_EQ(nt.count, 2);
    ASSERT_TRUE(strstr(nt.last, "metadata") != NULL);
    ingot_writer_free(w);
    ingot_writer_free_mem(NULL, out, n);
    /* an empty npz is the 22-byte end record numpy writes for np.savez(path) */
    ASSERT_OK(ingot_writer_new(&wo, &w, NULL));
    ASSERT_OK(ingot_writer_begin_mem(w, NULL));
    ASSERT_OK(ingot_writer_commit_mem(w, &out, &n, NULL));
    ASSERT_U64(n, 22);
    ingot_file *f;
    ingot_open_opts oo = {0};
    oo.format = "npz";
    ASSERT_OK(ingot_file_open_buffer(out, n, &oo, &f, NULL));
    ASSERT_U64(ingot_file_tensor_count(f), 0);
    ingot_file_close(f);
    ingot_writer_free(w);
    ingot_writer_free_mem(NULL, out, n);
}

TEST(test_npy_writer_to_file_and_extension)
{
    ASSERT_STR(ingot_writer_format_for_path("x/y.npz"), "npz");
    ASSERT_STR(ingot_writer_format_for_path("x/y.npy"), "npy");
    ingot_file *f, *g;
    ASSERT_OK(ingot_file_open(FIX "arrays_compressed.npz", NULL, &f, NULL));
    ingot_writer_opts wo = {0};
    wo.format = "npz";
    wo.no_fsync = true;
    ingot_writer *w;
    ASSERT_OK(ingot_writer_new(&wo, &w, NULL));
    uint8_t *bufs[3];
    for (uint64_t i = 0; i < 3; i++) {
        ingot_tensor_info t;
        ingot_file_tensor_at(f, i, &t);
        bufs[i] = malloc(t.nbytes);
        ASSERT_OK(ingot_file_tensor_copy(f, i, bufs[i], t.nbytes, NULL));
        ASSERT_OK(ingot_writer_add_tensor(w, t.name, t.dtype, t.rank, t.shape, NULL, NULL,
                                          NULL));
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/npy_test_out.npz", INGOT_BINARY_DIR);
    ASSERT_OK(ingot_writer_begin(w, path, NULL));
    for (uint64_t i = 0; i < 3; i++) { /* pushed in odd chunks */
        ingot_tensor_info t;
        ingot_file_tensor_at(f, i, &t);
        for (uint64_t off = 0; off < t.nbytes; off += 333)
            ASSERT_OK(ingot_writer_write(w, bufs[i] + off, t.nbytes - off < 333 ? t.nbytes - off : 333,
                                         NULL));
    }
    ASSERT_OK(ingot_writer_commit(w, NULL));
    ingot_writer_free(w);
    ASSERT_OK(ingot_file_open(path, NULL, &g, NULL));
    same_tensors(f, g);
    ASSERT_OK(ingot_file_verify(g, 1, NULL));
    ingot_file_close(g);
    ingot_file_close(f);
    for (int i = 0; i < 3; i++) free(bufs[i]);
    remove(path);
}

/* ---------------------------------------------------------------------------------------------
 * npz CRC-32 computed while the data streams (the writer's data_chunk hook), never read back
 * ------------------------------------------------------------------------------------------- */

/* Expected members: src/formats/npy/tools/chunked_crc.py (NumPy's own .npy bytes for the same
 * arrays, zlib's CRC-32), run with /usr/bin/python3 (numpy 1.24). */
static const struct {
    const char *name;
    uint32_t crc, size;
} streamed_want[] = {
    {"a", 0xed6aa383u, 4128u},
    {"b", 0x990cbcbfu, 233u},
    {"c", 0x735b4836u, 128u},
    {"d", 0xb817dd94u, 66794u},
    {"e", 0xd6f93af2u, 132u},
    {"f", 0x06c49686u, 32904u},
    {"g", 0x39d21c49u, 134u},
};
static const struct {
    ingot_dtype dt;
    uint32_t rank;
    uint64_t shape[3];
} streamed_t[] = {
    {INGOT_DTYPE_F32, 1, {1000}},  {INGOT_DTYPE_U8, 3, {3, 5, 7}}, {INGOT_DTYPE_F64, 1, {0}},
    {INGOT_DTYPE_I16, 1, {33333}}, {INGOT_DTYPE_F32, 0, {0}},      {INGOT_DTYPE_I64, 1, {4097}},
    {INGOT_DTYPE_BOOL, 2, {2, 3}},
};
#define NSTREAMED (sizeof streamed_want / sizeof streamed_want[0])

/* Reads of any kind while the writer runs: read-only opens (not of directories), preads, mmaps. */
static int g_reads;
static int watch_open(const char *path, int flags, int mode)
{
    if ((flags & O_ACCMODE) != O_WRONLY && !(flags & O_DIRECTORY)) g_reads++;
    return ingot__io_libc.open(path, flags, mode);
}
static ssize_t watch_pread(int fd, void *buf, size_t n, off_t off)
{
    g_reads++;
    return ingot__io_libc.pread(fd, buf, n, off);
}
static void *watch_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    g_reads++;
    return ingot__io_libc.mmap(addr, len, prot, flags, fd, off);
}

/* Writes the streamed_t tensors to npz: pointer (bit i of by_ptr set) or pushed, pushes cut into
 * chunk sizes cycling through 1, 7, 333, 4096, 65537 (spanning tensors), the core's chunk size
 * set to `chunk`. To `path`, or to memory when path is NULL. */
static void write_streamed(uint8_t **data, unsigned by_ptr, size_t chunk, const char *opt_k,
                           const char *opt_v, const char *path, void **out, size_t *out_n)
{
    ingot_writer_opts wo = {0};
    wo.format = "npz";
    wo.no_fsync = true;
    ingot_writer *w;
    ingot_error e;
    ASSERT_OK(ingot_writer_new(&wo, &w, &e));
    if (opt_k) ASSERT_OK(ingot_writer_set_option(w, opt_k, opt_v, &e));
    size_t pushed_n = 0;
    for (size_t i = 0; i < NSTREAMED; i++) {
        uint64_t nb = 0;
        ASSERT_OK(ingot_dtype_nbytes(streamed_t[i].dt, streamed_t[i].rank, streamed_t[i].shape,
                                     NULL, &nb));
        ASSERT_OK(ingot_writer_add_tensor(w, streamed_want[i].name, streamed_t[i].dt,
                                          streamed_t[i].rank, streamed_t[i].shape, NULL,
                                          (by_ptr >> i) & 1 ? data[i] : NULL, &e));
        if (!((by_ptr >> i) & 1)) pushed_n += (size_t)nb;
    }
    /* The pushed tensors' bytes back to back, as a caller streams them. */
    uint8_t *stream = malloc(pushed_n + 1);
    size_t o = 0;
    for (size_t i = 0; i < NSTREAMED; i++) {
        uint64_t nb = 0;
        ingot_dtype_nbytes(streamed_t[i].dt, streamed_t[i].rank, streamed_t[i].shape, NULL, &nb);
        if (!((by_ptr >> i) & 1)) memcpy(stream + o, data[i], (size_t)nb), o += (size_t)nb;
    }
    size_t saved = ingot__write_chunk;
    ingot__write_chunk = chunk;
    static const size_t cuts[] = {1, 7, 333, 4096, 65537};
    if (path) {
        static ingot__io_ops watch;
        watch = ingot__io_libc;
        watch.open = watch_open;
        watch.pread = watch_pread;
        watch.mmap = watch_mmap;
        g_reads = 0;
        ingot__io_set(&watch);
        ingot_status st = ingot_writer_begin(w, path, &e);
        for (size_t off = 0, k = 0; st == INGOT_OK && off < pushed_n; k++) {
            size_t c = cuts[k % 5] < pushed_n - off ? cuts[k % 5] : pushed_n - off;
            st = ingot_writer_write(w, stream + off, c, &e);
            off += c;
        }
        if (st == INGOT_OK) st = ingot_writer_commit(w, &e);
        ingot__io_set(NULL);
        ASSERT_OK(st);
        CHECK(g_reads == 0, "the npz writer read %d times (its output or anything else)", g_reads);
        *out = test_read_file(path, out_n);
        ASSERT_TRUE(*out != NULL);
    } else {
        ASSERT_OK(ingot_writer_begin_mem(w, &e));
        for (size_t off = 0, k = 0; off < pushed_n; k++) {
            size_t c = cuts[k % 5] < pushed_n - off ? cuts[k % 5] : pushed_n - off;
            ASSERT_OK(ingot_writer_write(w, stream + off, c, &e));
            off += c;
        }
        void *m;
        ASSERT_OK(ingot_writer_commit_mem(w, &m, out_n, &e));
        *out = malloc(*out_n);
        memcpy(*out, m, *out_n);
        ingot_writer_free_mem(NULL, m, *out_n);
    }
    ingot__write_chunk = saved;
    ingot_writer_free(w);
    free(stream);
}

/* Every member's CRC-32 in the central directory and in its local header is NumPy's (no data
 * descriptor); our reader's verify agrees. */
static void check_streamed(const uint8_t *img, size_t n, const char *what)
{
    ingot__zip z;
    ingot__zip_source src = {.base = img, .size = n};
    ASSERT_OK(ingot__zip_open(&z, &src, NULL, NULL, NULL));
    ASSERT_U64(z.count, NSTREAMED);
    for (size_t i = 0; i < NSTREAMED; i++) {
        char nm[16];
        snprintf(nm, sizeof nm, "%s.npy", streamed_want[i].name);
        uint64_t k;
        ASSERT_OK(ingot__zip_find(&z, nm, strlen(nm), &k));
        const ingot__zip_entry *en = &z.entries[k];
        CHECK(en->crc32 == streamed_want[i].crc && en->size == streamed_want[i].size,
              "%s: %s crc %08x size %llu, NumPy's %08x %u", what, nm, en->crc32,
              (unsigned long long)en->size, streamed_want[i].crc, streamed_want[i].size);
        CHECK((en->flags & 8) == 0, "%s: %s has a data descriptor", what, nm);
        uint32_t local = (uint32_t)img[en->lho + 14] | (uint32_t)img[en->lho + 15] << 8 |
                         (uint32_t)img[en->lho + 16] << 16 | (uint32_t)img[en->lho + 17] << 24;
        CHECK(local == streamed_want[i].crc, "%s: %s local header crc %08x", what, nm, local);
        ASSERT_OK(ingot__zip_locate(&z, k, NULL));
        ASSERT_OK(ingot__zip_check_stored_crc(&z, k, false, NULL));
    }
    ingot__zip_close(&z);
    ingot_file *f;
    ASSERT_OK(ingot_file_open_buffer(img, n, NULL, &f, NULL));
    ASSERT_OK(ingot_file_verify(f, 1, NULL));
    ingot_file_close(f);
}

TEST(test_npz_crc_streamed)
{
    uint8_t *data[NSTREAMED];
    for (size_t i = 0; i < NSTREAMED; i++) {
        uint64_t nb = 0;
        ASSERT_OK(ingot_dtype_nbytes(streamed_t[i].dt, streamed_t[i].rank, streamed_t[i].shape,
                                     NULL, &nb));
        data[i] = malloc((size_t)nb + 1);
        for (uint64_t k = 0; k < nb; k++) {
            uint8_t b = (uint8_t)((k * 31 + i * 17 + (k >> 8)) & 0xFF);
            data[i][k] = streamed_t[i].dt == INGOT_DTYPE_BOOL ? (uint8_t)(b & 1) : b;
        }
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/npy_streamed.npz", INGOT_BINARY_DIR);
    static const struct {
        unsigned by_ptr;
        size_t chunk;
        bool to_file;
    } v[] = {
        {0x00, 1u << 20, true},  /* every tensor pushed */
        {0x7F, 1000, true},      /* every tensor by pointer, cut into 1000-byte chunks */
        {0x55, 777, true},       /* mixed */
        {0x2A, 1u << 20, false}, /* mixed, memory sink */
        {0x00, 1, false},        /* pushed, one byte at a time through the core */
    };
    void *first = NULL;
    size_t first_n = 0;
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        void *img;
        size_t n;
        char what[64];
        snprintf(what, sizeof what, "variant %zu", i);
        write_streamed(data, v[i].by_ptr, v[i].chunk, NULL, NULL, v[i].to_file ? path : NULL,
                       &img, &n);
        check_streamed(img, n, what);
        if (!first) {
            first = img, first_n = n;
        } else { /* the bytes do not depend on how the data arrived */
            CHECK(n == first_n && memcmp(img, first, n) == 0, "%s: bytes differ", what);
            free(img);
        }
    }
    /* Other layouts (zip64 extras, no alignment extra): same CRCs. */
    void *img;
    size_t n;
    write_streamed(data, 0x0F, 500, "zip64", "always", path, &img, &n);
    check_streamed(img, n, "zip64=always");
    free(img);
    write_streamed(data, 0x30, 64, "align", "1", NULL, &img, &n);
    check_streamed(img, n, "align=1");
    free(img);
    free(first);
    remove(path);
    for (size_t i = 0; i < NSTREAMED; i++) free(data[i]);
}

/* ---------------------------------------------------------------------------------------------
 * Malformed catalogue: .npy header
 * ------------------------------------------------------------------------------------------- */

/* Builds a .npy image: version, dict text (padded with spaces + '\n' to 64), ndata data bytes. */
static size_t make_npy(uint8_t *out, int major, const char *dict, size_t ndata, bool newline)
{
    size_t pre = major == 1 ? 10 : 12, dl = strlen(dict);
    size_t hlen = dl + 1;
    size_t total = (pre + hlen + 63) / 64 * 64;
    hlen = total - pre;
    memcpy(out, "\x93NUMPY", 6);
    out[6] = (uint8_t)major;
    out[7] = 0;
    if (major == 1) {
        out[8] = (uint8_t)hlen;
        out[9] = (uint8_t)(hlen >> 8);
    } else {
        for (int i = 0; i < 4; i++) out[8 + i] = (uint8_t)(hlen >> (8 * i));
    }
    memcpy(out + pre, dict, dl);
    memset(out + pre + dl, ' ', hlen - dl);
    if (newline) out[total - 1] = '\n';
    for (size_t i = 0; i < ndata; i++) out[total + i] = (uint8_t)(i * 7);
    return total + ndata;
}

static ingot_status open_img(const uint8_t *p, size_t n, const char *fmt, ingot_error *err)
{
    ingot_open_opts o = {0};
    o.format = fmt;
    ingot_file *f = NULL;
    ingot_status st = ingot_file_open_buffer(p, n, &o, &f, err);
    if (st == INGOT_OK) {
        for (uint64_t i = 0; i < ingot_file_tensor_count(f); i++) {
            ingot_tensor_info t;
            ingot_file_tensor_at(f, i, &t);
            if (t.nbytes <= 1 << 20) {
                uint8_t *b = malloc(t.nbytes + 1);
                ingot_status s2 = ingot_file_tensor_copy(f, i, b, t.nbytes, NULL);
                (void)s2;
                free(b);
            }
        }
        st = ingot_file_verify(f, 1, err);
    }
    ingot_file_close(f);
    return st;
}

typedef struct {
    int major;
    const char *dict;
    size_t ndata;
    ingot_status want;
} hcase;

TEST(test_npy_header_grammar)
{
    static const hcase cases[] = {
        /* accepted variants */
        {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 24, INGOT_OK},
        {1, "{'shape': (2, 3), 'fortran_order': False, 'descr': '<f4'}", 24, INGOT_OK},
        {1, "{\"descr\":\"<f4\",\"fortran_order\":True,\"shape\":(2,3,)}", 24, INGOT_OK},
        {1, "{ 'descr' : '=i2' ,\n 'fortran_order' : False , 'shape' : ( 3 , ) , }", 6, INGOT_OK},
        {1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2L, 1L), }", 16, INGOT_OK},
        {2, "{'descr': '>u2', 'fortran_order': False, 'shape': (4,), }", 8, INGOT_OK},
        {3, "{'descr': '<c8', 'fortran_order': False, 'shape': (), }", 8, INGOT_OK},
        {1, "{'descr': '>i1', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, 1, 1, 1), }", 1,
         INGOT_OK},
        {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 99999999999), }", 0, INGOT_OK},
        /* rejected */
        {1, "{'descr': '<f4', 'fortran_order': False}", 0, INGOT_BAD_METADATA},
        {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", 8,
         INGOT_BAD_METADATA},
        {1, "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", 8,
         INGOT_DUPLICATE},
        {1, "{'descr': '<f4' 'fortran_order': False, 'shape': (2,)}", 8, INGOT_BAD_METADATA},
        {1, "['descr', '<f4']", 8, INGOT_BAD_METADATA},
        {1, "{'descr': '<f4', 'fortran_order': 0, 'shape': (2,)}", 8, INGOT_BAD_METADATA},
        {1, "{'descr': '<f4', 'fortran_order': Falsey, 'shape': (2,)}", 8, INGOT_BAD_METADATA},
        {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} x", 8, INGOT_BAD_METADATA},
        {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,)", 8, INGOT_BAD_METADATA},
        {1, "{'descr': '<f\\x34', 'fortran_order': False, 'shape': (2,)}", 8, INGOT_BAD_STRING},
        {1, "{'descr': '<f4, 'fortran_order': False, 'shape': (2,)}", 8, INGOT_BAD_TYPE},
        {1, "{'descr': '<x4', 'fortran_order': False, 'shape': (2,)}", 8, INGOT_BAD_TYPE},
        {1, "{'descr': 'f4', 'fortran_order': False, 'shape': (2,)}", 8, INGOT_BAD_TYPE},
        {1, "{'descr': '|f4', 'fortran_order': False, 'shape': (2,)}", 8, INGOT_BAD_TYPE},
        {1, "{'descr': '<f', 'fortran_order': False, 'shape': (2,)}", 8, INGOT_BAD_TYPE},
        {1, "{'descr': '<f99999999999', 'fortran_order': False, 'shape': (2,)}", 8, INGOT_BAD_TYPE},
        {1, "{'descr': '<U3', 'fortran_order': False, 'shape': (2,)}", 24, INGOT_UNSUPPORTED},
        {1, "{'descr': '|S3', 'fortran_order': False, 'shape': (2,)}", 6, INGOT_UNSUPPORTED},
        {1, "{'descr': '|O', 'fortran_order': False, 'shape': (2,)}", 16, INGOT_UNSUPPORTED},
        {1, "{'descr': '|V8', 'fortran_order': False, 'shape': (2,)}", 16, INGOT_UNSUPPORTED},
        {1, "{'descr': '<M8[s]', 'fortran_order': False, 'shape': (2,)}", 16, INGOT_UNSUPPORTED},
        {1, "{'descr': '<c32', 'fortran_order': False, 'shape': (2,)}", 64, INGOT_UNSUPPORTED},
        {1, "{'descr': '<f16', 'fortran_order': False, 'shape': (2,)}", 32, INGOT_UNSUPPORTED},
        {1, "{'descr': '>c8', 'fortran_order': False, 'shape': (2,)}", 16, INGOT_UNSUPPORTED},
        {1, "{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (2,)}", 8,
         INGOT_UNSUPPORTED},
        {1, "{'descr': [('a', '<i4', 'fortran_order': False, 'shape': (2,)}", 8,
         INGOT_BAD_METADATA},
        {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,)}", 8, INGOT_BAD_SHAPE},
        {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3)}", 12, INGOT_BAD_SHAPE},
        {1, "{'descr': '<f4', 'fortran_order': False, 'shape': 3}", 12, INGOT_BAD_SHAPE},
        {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (03,)}", 12, INGOT_BAD_METADATA},
        {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,,)}", 8, INGOT_BAD_METADATA},
        {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (9223372036854775808,)}", 0,
         INGOT_BAD_SHAPE},
        {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (18446744073709551616,)}", 0,
         INGOT_BAD_SHAPE},
        {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296)}", 0,
         INGOT_BAD_SHAPE},
        {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (9223372036854775807, 2)}", 0,
         INGOT_BAD_SHAPE},
        {1, "{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904,)}", 0,
         INGOT_BAD_SIZE},
        {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (" ONES64 ",)}", 4, INGOT_OK},
        {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (" ONES64 ",1)}", 4,
         INGOT_BAD_NDIMS},
        {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 7, INGOT_TRUNCATED},
        {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 9, INGOT_BAD_LAYOUT},
        {3, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), '\xff': 1}", 8,
         INGOT_BAD_STRING},
    };
    static uint8_t img[4096];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n = make_npy(img, cases[i].major, cases[i].dict, cases[i].ndata, true);
        ingot_error err;
        memset(&err, 0, sizeof err);
        ingot_status st = open_img(img, n, NULL, &err);
        CHECK(st == cases[i].want, "case %zu %s: got %s (%s), want %s", i, cases[i].dict,
              ingot_status_name(st), err.msg, ingot_status_name(cases[i].want));
        if (st != INGOT_OK) CHECK(err.where[0] != 0, "case %zu: error names the tensor", i);
    }
    /* no trailing newline */
    size_t n = make_npy(img, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 8,
                        false);
    ASSERT_ST(open_img(img, n, NULL, NULL), INGOT_BAD_METADATA);
}

/* NumPy's own layout is parsed by a fast path (npy_header.c: canonical); "{ " (a space after the
 * brace, which the grammar allows) sends the same dict through the general scanner. Every
 * mutation of canonical dicts (each byte replaced by bytes that matter to the grammar, or
 * deleted) must get the same verdict both ways, and the same tensor where accepted. */
static ingot_status open_info(const uint8_t *p, size_t n, ingot_tensor_info *ti)
{
    ingot_file *f = NULL;
    ingot_status st = ingot_file_open_buffer(p, n, NULL, &f, NULL);
    memset(ti, 0, sizeof *ti);
    if (st == INGOT_OK && ingot_file_tensor_count(f) == 1) ingot_file_tensor_at(f, 0, ti);
    ingot_file_close(f);
    return st;
}

TEST(test_npy_canonical_fast_path_agrees)
{
    static const char *const dicts[] = {
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
        "{'descr': '|b1', 'fortran_order': True, 'shape': (3, 2), }",
        "{'descr': '>i8', 'fortran_order': False, 'shape': (3,), }",
        "{'descr': '<c16', 'fortran_order': False, 'shape': (), }",
        "{'descr': '<u2', 'fortran_order': True, 'shape': (1, 1, 3), }",
    };
    static const size_t sizes[] = {24, 6, 24, 16, 6};
    static const char subst[] = " '\",()0129xT}{:\\\n\x01";
    static uint8_t a[512], b[512];
    char m[200], m2[208];
    size_t compared = 0, accepted = 0;
    for (size_t d = 0; d < sizeof dicts / sizeof dicts[0]; d++) {
        char base[200];
        snprintf(base, sizeof base, "%s   ", dicts[d]); /* and three bytes of the padding */
        size_t len = strlen(base);
        for (size_t pos = 1; pos < len; pos++) {
            for (size_t k = 0; k <= sizeof subst - 1; k++) {
                /* k == sizeof subst - 1: the byte deleted */
                memcpy(m, base, len + 1);
                if (k < sizeof subst - 1) m[pos] = subst[k];
                else memmove(m + pos, m + pos + 1, len - pos);
                snprintf(m2, sizeof m2, "{ %s", m + 1);
                size_t na = make_npy(a, 1, m, sizes[d], true);
                size_t nb = make_npy(b, 1, m2, sizes[d], true);
                ingot_tensor_info ta, tb;
                ingot_status sa = open_info(a, na, &ta), sb = open_info(b, nb, &tb);
                CHECK(sa == sb, "%s: fast path %s, general scanner %s", m,
                      ingot_status_name(sa), ingot_status_name(sb));
                if (sa == INGOT_OK && sb == INGOT_OK) {
                    accepted++;
                    CHECK(ta.dtype == tb.dtype && ta.rank == tb.rank && ta.nbytes == tb.nbytes &&
                              !memcmp(ta.shape, tb.shape, sizeof ta.shape) &&
                              ta.flags == tb.flags,
                          "%s: the two paths give different tensors", m);
                }
                compared++;
            }
        }
    }
    CHECK(compared > 2000 && accepted > 50, "compared %zu, accepted %zu", compared, accepted);
}

TEST(test_npy_bad_preamble)
{
    static uint8_t img[256];
    const char *d = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
    size_t n = make_npy(img, 1, d, 8, true);
    ingot_error err;
    /* every truncation point */
    for (size_t k = 0; k < n; k++) {
        ingot_status st = open_img(img, k, "npy", &err);
        CHECK(st == INGOT_TRUNCATED, "len %zu: %s", k, ingot_status_name(st));
    }
    ASSERT_OK(open_img(img, n, NULL, NULL));
    img[1] = 'X';
    ASSERT_ST(open_img(img, n, "npy", NULL), INGOT_BAD_MAGIC);
    ASSERT_ST(open_img(img, n, NULL, NULL), INGOT_UNKNOWN_FORMAT);
    img[1] = 'N';
    static const uint8_t vers[][2] = {{0, 0}, {4, 0}, {1, 1}, {0, 1}, {255, 255}};
    for (size_t i = 0; i < 5; i++) {
        img[6] = vers[i][0], img[7] = vers[i][1];
        ASSERT_ST(open_img(img, n, NULL, NULL), INGOT_BAD_VERSION);
    }
    img[6] = 1, img[7] = 0;
    /* header length past the file, and above the cap */
    img[8] = 0xff, img[9] = 0xff;
    ASSERT_ST(open_img(img, n, NULL, NULL), INGOT_TRUNCATED);
    n = make_npy(img, 2, d, 8, true);
    img[8] = img[9] = img[10] = img[11] = 0xff;
    ASSERT_ST(open_img(img, n, NULL, &err), INGOT_BAD_HEADER_SIZE);
    /* header length too short: the dict is cut */
    n = make_npy(img, 1, d, 8, true);
    img[8] = 20;
    ASSERT_ST(open_img(img, n, NULL, NULL), INGOT_BAD_METADATA);
    img[8] = 0;
    ASSERT_ST(open_img(img, n, NULL, NULL), INGOT_BAD_METADATA);
}

TEST(test_npy_byte_flips_never_crash)
{
    static uint8_t img[256];
    size_t n = make_npy(img, 1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }",
                        16, true);
    for (size_t i = 0; i < n; i++)
        for (int b = 0; b < 8; b++) {
            img[i] ^= (uint8_t)(1u << b);
            (void)open_img(img, n, NULL, NULL);
            img[i] ^= (uint8_t)(1u << b);
        }
    ASSERT_OK(open_img(img, n, NULL, NULL));
}

/* ---------------------------------------------------------------------------------------------
 * Malformed catalogue: .npz container and members
 * ------------------------------------------------------------------------------------------- */

static size_t find_sig(const uint8_t *p, size_t n, uint32_t sig, size_t from)
{
    for (size_t i = from; i + 4 <= n; i++)
        if ((uint32_t)(p[i] | p[i + 1] << 8 | p[i + 2] << 16 | (uint32_t)p[i + 3] << 24) == sig)
            return i;
    return SIZE_MAX;
}

TEST(test_npz_truncation_every_byte)
{
    size_t n;
    uint8_t *p = test_read_file(FIX "arrays_stored.npz", &n);
    ASSERT_TRUE(p != NULL);
    for (size_t k = 0; k < n; k++) {
        ingot_status st = open_img(p, k, "npz", NULL);
        CHECK(st == INGOT_TRUNCATED, "len %zu: %s", k, ingot_status_name(st));
    }
    ASSERT_OK(open_img(p, n, NULL, NULL));
    free(p);
}

TEST(test_npz_bad_members)
{
    size_t n;
    uint8_t *p = test_read_file(FIX "arrays_stored.npz", &n);
    ASSERT_TRUE(p != NULL);
    ingot_error err;
    /* CRC mismatch: one data byte of weight (data at 60 + 128) */
    p[60 + 128 + 5] ^= 0x40;
    ASSERT_ST(open_img(p, n, NULL, &err), INGOT_BAD_CHECKSUM);
    ASSERT_STR(err.where, "weight");
    p[60 + 128 + 5] ^= 0x40;
    /* bad method: 12 (bzip2) in the first local and central header */
    size_t cd = find_sig(p, n, 0x02014b50u, 0);
    ASSERT_TRUE(cd != SIZE_MAX);
    p[8] = 12, p[cd + 10] = 12;
    ASSERT_ST(open_img(p, n, NULL, &err), INGOT_UNSUPPORTED);
    ASSERT_TRUE(strstr(err.msg, "bzip2") != NULL);
    p[8] = 0, p[cd + 10] = 0;
    /* the member's npy header declares one element more than the member holds */
    ASSERT_TRUE(memcmp(p + 60 + 60, "(4, 4)", 6) == 0);
    p[60 + 64] = '5';
    ASSERT_ST(open_img(p, n, NULL, &err), INGOT_TRUNCATED);
    p[60 + 64] = '3'; /* fewer: bytes left over in the member */
    ASSERT_ST(open_img(p, n, NULL, &err), INGOT_BAD_LAYOUT);
    p[60 + 64] = '4';
    /* structured member */
    memcpy(p + 60 + 21, "|V4", 3);
    ASSERT_ST(open_img(p, n, NULL, &err), INGOT_UNSUPPORTED);
    memcpy(p + 60 + 21, "<f4", 3);
    ASSERT_OK(open_img(p, n, NULL, NULL));
    free(p);
}

TEST(test_npz_bad_deflate)
{
    size_t n;
    uint8_t *p = test_read_file(FIX "arrays_compressed.npz", &n);
    ASSERT_TRUE(p != NULL);
    ingot_error err;
    /* corrupt the middle of x's deflate stream (data 55 .. 55+15805) */
    uint8_t save[64];
    memcpy(save, p + 8000, 64);
    memset(p + 8000, 0xff, 64);
    ingot_status st = open_img(p, n, NULL, &err);
    CHECK(st == INGOT_BAD_LAYOUT || st == INGOT_BAD_CHECKSUM || st == INGOT_BAD_SIZE ||
              st == INGOT_TRUNCATED,
          "corrupt stream: %s",
          ingot_status_name(st));
    memcpy(p + 8000, save, 64);
    /* CRC mismatch in the directory */
    size_t cd = find_sig(p, n, 0x02014b50u, 0);
    p[cd + 16] ^= 1;
    p[14] ^= 1; /* keep the local header consistent */
    ASSERT_ST(open_img(p, n, NULL, &err), INGOT_BAD_CHECKSUM);
    ASSERT_STR(err.where, "x");
    p[cd + 16] ^= 1;
    p[14] ^= 1;
    /* declared size larger than what the stream inflates to */
    ASSERT_OK(open_img(p, n, NULL, NULL));
    free(p);
}

TEST(test_npz_probe)
{
    size_t n;
    uint8_t *p = test_read_file(FIX "arrays_stored.npz", &n);
    ingot_file *f;
    ASSERT_OK(ingot_file_open_buffer(p, n, NULL, &f, NULL));
    ASSERT_STR(ingot_file_format(f), "npz");
    ingot_file_close(f);
    /* first member not *.npy: not claimed by content */
    p[30 + 8] = 'x'; /* "weight.npy" -> "weight.xpy" */
    ASSERT_ST(ingot_file_open_buffer(p, n, NULL, &f, NULL), INGOT_UNKNOWN_FORMAT);
    free(p);
}

/* An allocator that counts calls. */
static void *cnt_alloc(void *ctx, size_t size, size_t align)
{
    (void)align;
    ++*(long *)ctx;
    return malloc(size);
}

static void cnt_free(void *ctx, void *p, size_t size)
{
    (void)ctx, (void)size;
    free(p);
}

/* The members' names and shapes come from a few arena chunks, not one allocation per member:
 * an npz of 600 arrays of ranks 0 to 5 opens with far fewer allocations than members (it took
 * 600 more before), from a file (mmap and pread mode) and from a buffer, and every name and
 * shape reads back. */
TEST(test_npz_names_from_an_arena)
{
    enum { N = 600 };
    ingot_writer_opts wo = {0};
    wo.format = "npz";
    wo.no_fsync = true;
    ingot_writer *w;
    ASSERT_OK(ingot_writer_new(&wo, &w, NULL));
    static float data[64];
    for (int i = 0; i < 64; i++) data[i] = (float)i;
    for (int i = 0; i < N; i++) {
        char nm[64];
        snprintf(nm, sizeof nm, "layer_%d_%.*s", i, i % 40,
                 "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN");
        uint32_t rank = (uint32_t)(i % 6);
        uint64_t shape[5] = {2, 1, 2, 2, 2};
        ASSERT_OK(ingot_writer_add_tensor(w, nm, INGOT_DTYPE_F32, rank, shape, NULL, data, NULL));
    }
    void *img;
    size_t n;
    ASSERT_OK(ingot_writer_begin_mem(w, NULL));
    ASSERT_OK(ingot_writer_commit_mem(w, &img, &n, NULL));
    ingot_writer_free(w);
    char path[] = "/tmp/ingot_test_npz_arena_XXXXXX";
    int fd = mkstemp(path);
    ASSERT_TRUE(fd >= 0);
    ASSERT_TRUE(write(fd, img, n) == (ssize_t)n);
    close(fd);
    for (int mode = 0; mode < 3; mode++) {
        long calls = 0;
        ingot_allocator a = {cnt_alloc, cnt_free, &calls};
        ingot_open_opts o = {.io = mode == 1 ? INGOT_IO_PREAD : INGOT_IO_MMAP, .allocator = &a};
        ingot_file *f;
        if (mode == 2) ASSERT_OK(ingot_file_open_buffer(img, n, &o, &f, NULL));
        else ASSERT_OK(ingot_file_open(path, &o, &f, NULL));
        CHECK(calls < 60, "mode %d: %ld allocations for %d members", mode, calls, N);
        ASSERT_U64(ingot_file_tensor_count(f), N);
        for (int i = 0; i < N; i++) {
            char nm[64];
            snprintf(nm, sizeof nm, "layer_%d_%.*s", i, i % 40,
                     "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN");
            ingot_tensor_info t;
            ASSERT_OK(ingot_file_tensor_find(f, nm, &t));
            ASSERT_STR(t.name, nm);
            ASSERT_EQ(t.rank, (uint32_t)(i % 6));
            static const uint64_t want[5] = {2, 1, 2, 2, 2};
            for (uint32_t k = 0; k < t.rank; k++) ASSERT_U64(t.shape[k], want[k]);
        }
        ingot_file_close(f);
    }
    unlink(path);
    ingot_writer_free_mem(NULL, img, n);
}

/* An allocator that keeps the largest request. */
static void *max_alloc(void *ctx, size_t size, size_t align)
{
    (void)align;
    size_t *m = ctx;
    if (size > *m) *m = size;
    return malloc(size);
}

/* The name arena's first chunk is no larger than the file (RELIABILITY: no allocation past the
 * file's size): a 4 KiB chunk for a small .npy was. The largest allocation of opening a .npy of
 * 8 floats from a buffer stays below 1 KiB, whatever its other parts take. */
TEST(test_npy_small_file_small_allocations)
{
    ingot_writer_opts wo = {0};
    wo.format = "npy";
    wo.no_fsync = true;
    ingot_writer *w;
    ASSERT_OK(ingot_writer_new(&wo, &w, NULL));
    static const float data[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    uint64_t shape[1] = {8};
    ASSERT_OK(ingot_writer_add_tensor(w, "x", INGOT_DTYPE_F32, 1, shape, NULL, data, NULL));
    void *img;
    size_t n;
    ASSERT_OK(ingot_writer_begin_mem(w, NULL));
    ASSERT_OK(ingot_writer_commit_mem(w, &img, &n, NULL));
    ingot_writer_free(w);
    size_t largest = 0;
    ingot_allocator a = {max_alloc, cnt_free, &largest};
    ingot_open_opts o = {.allocator = &a};
    ingot_file *f;
    ASSERT_OK(ingot_file_open_buffer(img, n, &o, &f, NULL));
    ingot_tensor_info t;
    ASSERT_OK(ingot_file_tensor_at(f, 0, &t));
    ASSERT_U64(t.shape[0], 8);
    CHECK(largest < 1024, "largest allocation %zu bytes for a file of %zu", largest, n);
    ingot_file_close(f);
    ingot_writer_free_mem(NULL, img, n);
}

RUN_TESTS(T(test_npy_small_file_small_allocations), T(test_npy_fixtures_mmap), T(test_npy_fixtures_pread), T(test_npy_fixtures_buffer),
          T(test_npy_zero_copy_and_flags), T(test_npy_deflated_random_access),
          T(test_npy_writer_byte_exact_vs_numpy), T(test_npy_writer_converts_layout),
          T(test_npy_roundtrip_npz_ingot_npz), T(test_npy_writer_numpy_golden),
          T(test_npy_writer_refusals_and_notices), T(test_npy_writer_to_file_and_extension),
          T(test_npy_header_grammar), T(test_npy_canonical_fast_path_agrees),
          T(test_npy_bad_preamble), T(test_npy_byte_flips_never_crash),
          T(test_npz_truncation_every_byte), T(test_npz_bad_members), T(test_npz_bad_deflate),
          T(test_npz_probe), T(test_npz_crc_streamed),
          T(test_npz_names_from_an_arena))
