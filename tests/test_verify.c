/*
 * test_verify.c - what verification claims and checks: ingot_file_verify_plan() for every format
 * (which checks exist, which tensors a stored checksum covers), BAD_VALUE for BOOL bytes other
 * than 0 or 1 (verify, read, copy, dequantize; contiguous, Fortran-order, deflated and strided
 * tensors; mmap and pread), and that opening such a file still succeeds (open is O(header)).
 */
#include <json-c/json.h>
#include <unistd.h>

#include "harness.h"
#include "files.h"
#include "file.h" /* ingot__verify_chunk: small chunks give many progress calls */
#include "zip.h" /* ingot__crc32 for hand-built zip archives */

#define FIX INGOT_FIXTURES "/"
#define TDATA INGOT_SOURCE_DIR "/tests/data/"

static const char *scratch(const char *name)
{
    static char buf[512];
    snprintf(buf, sizeof buf, "%s/test_verify_%s", INGOT_BINARY_DIR, name);
    return buf;
}

static bool write_file(const char *path, const void *p, size_t n)
{
    FILE *fp = fopen(path, "wb");
    if (!fp) return false;
    bool ok = fwrite(p, 1, n, fp) == n;
    return fclose(fp) == 0 && ok;
}

/* ---- status and check names ---- */

TEST(test_bad_value_status)
{
    /* appended: no released value moved */
    ASSERT_EQ(INGOT_BAD_VALUE, 30);
    ASSERT_EQ(INGOT_E_BAD_VALUE, 30);
    ASSERT_EQ(INGOT_BAD_FLAGS, 29);
    ASSERT_EQ(INGOT_BAD_CHECKSUM, 21);
    ASSERT_STR(ingot_status_name(INGOT_BAD_VALUE), "BAD_VALUE");
    ASSERT_TRUE(strstr(ingot_status_str(INGOT_BAD_VALUE), "BOOL") != NULL);
    ASSERT_EQ(INGOT_CANCELLED, 31); /* appended after BAD_VALUE (convert.h cancellation) */
    ASSERT_STR(ingot_status_name(INGOT_CANCELLED), "CANCELLED");
    ASSERT_STR(ingot_status_name((ingot_status)32), "UNKNOWN");
}

TEST(test_check_names)
{
    static const struct {
        uint32_t bit;
        const char *name;
    } want[] = {{INGOT_CHECK_STRUCTURE, "structure"},
                {INGOT_CHECK_HEADER_CRC32C, "header_crc32c"},
                {INGOT_CHECK_TENSOR_CRC32C, "tensor_crc32c"},
                {INGOT_CHECK_ZIP_CRC32, "zip_crc32"},
                {INGOT_CHECK_READABLE, "readable"},
                {INGOT_CHECK_PADDING, "padding"},
                {INGOT_CHECK_BOOL_VALUES, "bool_values"}};
    uint32_t all = 0;
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        ASSERT_STR(ingot_check_name(want[i].bit), want[i].name);
        ASSERT_EQ(want[i].bit, 1u << i); /* bits in list order, none shared */
        all |= want[i].bit;
    }
    ASSERT_TRUE(ingot_check_name(0) == NULL);
    ASSERT_TRUE(ingot_check_name(INGOT_CHECK_STRUCTURE | INGOT_CHECK_READABLE) == NULL);
    ASSERT_TRUE(ingot_check_name(1u << 7) == NULL);
    ASSERT_EQ(all, 0x7f);
}

/* ---- the plan of each format ---- */

typedef struct {
    const char *path;
    uint32_t checks;       /* without READABLE and BOOL_VALUES: derived from the tensors below */
    int with_checksum;     /* -1: every tensor; else this many */
    int64_t checksums;     /* -1: one per tensor */
} plan_case;

static void check_plan(const plan_case *c)
{
    ingot_file *f;
    ingot_error e;
    if (ingot_file_open(c->path, NULL, &f, &e) != INGOT_OK) {
        CHECK(false, "open %s: %s", c->path, e.msg);
        return;
    }
    uint64_t nt = ingot_file_tensor_count(f), bytes = 0;
    uint32_t want = c->checks | (nt ? INGOT_CHECK_READABLE : 0);
    for (uint64_t i = 0; i < nt; i++) {
        ingot_tensor_info t;
        ingot_file_tensor_at(f, i, &t);
        bytes += t.nbytes;
        if (t.dtype == INGOT_DTYPE_BOOL) want |= INGOT_CHECK_BOOL_VALUES;
    }
    uint64_t with = c->with_checksum < 0 ? nt : (uint64_t)c->with_checksum;
    uint64_t sums = c->checksums < 0 ? with : (uint64_t)c->checksums;
    ingot_verify_plan p;
    memset(&p, 0xa5, sizeof p);
    CHECK(ingot_file_verify_plan(f, &p) == INGOT_OK, "%s: plan", c->path);
    CHECK(p.checks == want, "%s: checks 0x%x, want 0x%x", c->path, p.checks, want);
    CHECK(p.tensors_with_checksum == with && p.tensors_without == nt - with,
          "%s: %" PRIu64 " with / %" PRIu64 " without, want %" PRIu64 " of %" PRIu64, c->path,
          p.tensors_with_checksum, p.tensors_without, with, nt);
    CHECK(p.checksums == sums, "%s: %" PRIu64 " checksums, want %" PRIu64, c->path, p.checksums,
          sums);
    CHECK(p.data_bytes == bytes, "%s: data_bytes", c->path);
    /* what the plan promises is what verify runs: these files are intact */
    CHECK(ingot_file_verify(f, 2, &e) == INGOT_OK, "%s: verify: %s", c->path, e.msg);
    ingot_file_close(f);
}

/* Number of entries of a sidecar's JSON array at obj[key1][key2] (key2 may be NULL). */
static int64_t sidecar_count(const char *path, const char *key1, const char *key2)
{
    char side[600];
    snprintf(side, sizeof side, "%s.expected.json", path);
    json_object *root = json_object_from_file(side), *o = NULL;
    int64_t n = -2;
    if (root && json_object_object_get_ex(root, key1, &o) &&
        (!key2 || json_object_object_get_ex(o, key2, &o)) &&
        json_object_is_type(o, json_type_array))
        n = (int64_t)json_object_array_length(o);
    json_object_put(root);
    return n;
}

TEST(test_plan_per_format)
{
    const uint32_t S = INGOT_CHECK_STRUCTURE, PAD = INGOT_CHECK_PADDING;
    const uint32_t HDR = INGOT_CHECK_HEADER_CRC32C, ZIP = INGOT_CHECK_ZIP_CRC32;
    /* Storages of the torch fixture, from its sidecar (one zip record each). */
    int64_t st_f32 = sidecar_count(FIX "torch/torch_tinynet_f32.pt", "torch", "storages");
    ASSERT_TRUE(st_f32 > 0);
    const plan_case cases[] = {
        {TDATA "tiny.ingot", S | HDR | INGOT_CHECK_TENSOR_CRC32C | PAD, -1, -1},
        /* formats that store no checksum: verify reads (and checks padding where fixed) */
        {FIX "safetensors/burn_boolean.safetensors", S, 0, 0},
        {FIX "gguf/gguf_all_types.gguf", S | PAD, 0, 0},
        {FIX "npy/b1_2x3.npy", S, 0, 0},
        {FIX "burnpack/synthetic/b_multi_dtype_v021.bpk", S | PAD, 0, 0},
        {FIX "torch/torch_tinynet_legacy.pt", S, 0, 0},
        {FIX "rmd1/handmade/mlp_2_3_1_relu_sigmoid_f32.rmd1", S, 0, 0},
        /* a header CRC, but nothing over the data */
        {FIX "mag/storage/storage_v100_mixed.mag", S | HDR | PAD, 0, 0},
        {FIX "mag/snapshot/snapshot_mixed.mag", S | HDR, 0, 0},
        {FIX "mag/storage/storage_v100_meta_only.mag", S | HDR | PAD, 0, 0},
        /* zip CRC-32: one per member */
        {FIX "npy/arrays_stored.npz", S | ZIP, -1, -1},
        {FIX "npy/arrays_compressed.npz", S | ZIP, -1, -1},
        {FIX "torch/torch_tinynet_f32.pt", S | ZIP, -1, st_f32},
        /* seven tensors over two storages (views and a tied weight) */
        {TDATA "torch/views.pt", S | ZIP, -1, 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_plan(&cases[i]);
    /* the npz fixtures: one member per array, as the sidecar lists them */
    ASSERT_EQ(sidecar_count(FIX "npy/arrays_stored.npz", "npz", "members"), 5);
    ingot_file *f;
    ASSERT_OK(ingot_file_open(FIX "npy/arrays_stored.npz", NULL, &f, NULL));
    ASSERT_U64(ingot_file_tensor_count(f), 5);
    ingot_file_close(f);
}

TEST(test_plan_shared_storage)
{
    ingot_file *f;
    ASSERT_OK(ingot_file_open(TDATA "torch/bool_views.pt", NULL, &f, NULL));
    ingot_verify_plan p;
    ASSERT_OK(ingot_file_verify_plan(f, &p));
    ASSERT_U64(p.tensors_with_checksum, 4);
    ASSERT_U64(p.tensors_without, 0);
    ASSERT_U64(p.checksums, 1); /* one BoolStorage record */
    ASSERT_EQ(p.checks, INGOT_CHECK_STRUCTURE | INGOT_CHECK_ZIP_CRC32 | INGOT_CHECK_READABLE |
                            INGOT_CHECK_BOOL_VALUES);
    ASSERT_ST(ingot_file_verify_plan(f, NULL), INGOT_MISUSE);
    ASSERT_ST(ingot_file_verify_plan(NULL, &p), INGOT_MISUSE);
    ASSERT_U64(p.checks, 0); /* zeroed on failure */
    ingot_file_close(f);
}

/* A file of a format without checksums whose tensor bytes were overwritten verifies: verify
 * cannot know, and the plan says so (tensors_with_checksum 0). This is the contract. */
TEST(test_no_checksum_formats_accept_overwritten_data)
{
    static const char *const paths[] = {FIX "safetensors/burn_conv2d.safetensors",
                                        FIX "gguf/gguf_align64.gguf", FIX "npy/f4_2x3.npy"};
    for (size_t i = 0; i < 3; i++) {
        size_t n;
        uint8_t *b = test_read_file(paths[i], &n);
        ASSERT_TRUE(b);
        ingot_file *f;
        ASSERT_OK(ingot_file_open_buffer(b, n, NULL, &f, NULL));
        ingot_tensor_info t = {0};
        uint64_t k = 0;
        while (k < ingot_file_tensor_count(f) &&
               (ingot_file_tensor_at(f, k, &t) != INGOT_OK || t.nbytes == 0 ||
                t.dtype == INGOT_DTYPE_BOOL))
            k++;
        ASSERT_TRUE(k < ingot_file_tensor_count(f));
        ingot_file_close(f);
        b[t.offset] ^= 0x01; /* keep a copy of the bytes: the open below is a new view */
        ASSERT_OK(ingot_file_open_buffer(b, n, NULL, &f, NULL));
        ingot_verify_plan p;
        ASSERT_OK(ingot_file_verify_plan(f, &p));
        ASSERT_U64(p.tensors_with_checksum, 0);
        ASSERT_EQ(p.checks & (INGOT_CHECK_TENSOR_CRC32C | INGOT_CHECK_ZIP_CRC32 |
                              INGOT_CHECK_HEADER_CRC32C),
                  0);
        ingot_error e;
        ASSERT_OK(ingot_file_verify(f, 1, &e));
        ingot_file_close(f);
        free(b);
    }
}

/* ---- BOOL values ---- */

/* An .npy image (version 1.0, header padded to 64 bytes as NumPy does) of `dict` and data. */
static size_t npy_image(uint8_t *out, const char *dict, const void *data, size_t n)
{
    size_t dl = strlen(dict), hl = (10 + dl + 1 + 63) / 64 * 64 - 10;
    memcpy(out, "\x93NUMPY\x01\x00", 8);
    out[8] = (uint8_t)hl, out[9] = (uint8_t)(hl >> 8);
    memcpy(out + 10, dict, dl);
    memset(out + 10 + dl, ' ', hl - dl - 1);
    out[10 + hl - 1] = '\n';
    memcpy(out + 10 + hl, data, n);
    return 10 + hl + n;
}

/* Every way to get at the data of tensor 0 of f refuses it with BAD_VALUE at byte `at` of the file
 * (INGOT_NO_OFFSET: not a file extent), naming tensor `name`. */
static void expect_bad(const ingot_file *f, const char *name, uint64_t at, const char *ctx)
{
    ingot_error e;
    ingot_tensor_info t;
    ASSERT_OK(ingot_file_tensor_at(f, 0, &t));
    e.code = INGOT_OK;
    CHECK(ingot_file_verify(f, 1, &e) == INGOT_BAD_VALUE && e.offset == at &&
              strcmp(e.where, name) == 0,
          "%s: verify: %s at %" PRIu64 " [%s]", ctx, ingot_status_name(e.code), e.offset, e.where);
    e.code = INGOT_OK;
    CHECK(ingot_file_verify(f, 3, &e) == INGOT_BAD_VALUE && e.offset == at, "%s: verify x3", ctx);
    e.code = INGOT_OK;
    CHECK(ingot_file_tensor_verify(f, 0, &e) == INGOT_BAD_VALUE && e.offset == at,
          "%s: tensor_verify: %s", ctx, ingot_status_name(e.code));
    uint8_t buf[64];
    ASSERT_TRUE(t.nbytes <= sizeof buf);
    e.code = INGOT_OK;
    CHECK(ingot_file_tensor_read(f, 0, 0, buf, (size_t)t.nbytes, &e) == INGOT_BAD_VALUE &&
              e.offset == at && strcmp(e.where, name) == 0,
          "%s: read: %s at %" PRIu64, ctx, ingot_status_name(e.code), e.offset);
    e.code = INGOT_OK;
    CHECK(ingot_file_tensor_copy(f, 0, buf, sizeof buf, &e) == INGOT_BAD_VALUE && e.offset == at,
          "%s: copy: %s at %" PRIu64, ctx, ingot_status_name(e.code), e.offset);
    float v[64];
    CHECK(ingot_file_tensor_dequantize(f, 0, 0, t.nelem, v, &e) == INGOT_BAD_VALUE,
          "%s: dequantize", ctx);
}

TEST(test_bool_bad_bytes_npy)
{
    uint8_t img[256];
    const char *dict = "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }";
    size_t n = npy_image(img, dict, "bad", 3);
    ASSERT_U64(n, 128 + 3); /* NumPy's 128-byte header for this dict */
    const char *path = scratch("bad.npy");
    ASSERT_TRUE(write_file(path, img, n));
    for (int io = 0; io < 3; io++) { /* mmap, pread, buffer */
        ingot_open_opts o = {.io = io == 1 ? INGOT_IO_PREAD : INGOT_IO_MMAP};
        ingot_file *f;
        ingot_error e;
        /* open reads the header only: the bad bytes do not stop it */
        if (io < 2) ASSERT_OK(ingot_file_open(path, &o, &f, &e));
        else ASSERT_OK(ingot_file_open_buffer(img, n, NULL, &f, &e));
        /* .npy names its tensor after the file's stem, "array" for a buffer */
        expect_bad(f, io < 2 ? "test_verify_bad" : "array", 128,
                   io == 0 ? "mmap" : io == 1 ? "pread" : "buffer");
        /* a read of valid bytes only is fine: byte 1 is 'a' (bad too), so none here; and a read
         * past the first bad byte names the exact byte */
        uint8_t b;
        ASSERT_ST(ingot_file_tensor_read(f, 0, 2, &b, 1, &e), INGOT_BAD_VALUE);
        ASSERT_U64(e.offset, 130);
        ASSERT_TRUE(strstr(e.msg, "0x64") != NULL); /* 'd' */
        ingot_open_opts all = {.verify = INGOT_VERIFY_ALL};
        ingot_file *g = (ingot_file *)1;
        if (io < 2) {
            all.io = o.io;
            ASSERT_ST(ingot_file_open(path, &all, &g, &e), INGOT_BAD_VALUE);
        } else {
            ASSERT_ST(ingot_file_open_buffer(img, n, &all, &g, &e), INGOT_BAD_VALUE);
        }
        ASSERT_TRUE(g == NULL);
        ingot_file_close(f);
    }
    /* 0 and 1 are the only valid bytes: 0x01 passes, 0x02 and 0xff do not */
    static const uint8_t cases[][3] = {{0, 1, 1}, {0, 0, 2}, {1, 0xff, 0}};
    for (int c = 0; c < 3; c++) {
        n = npy_image(img, dict, cases[c], 3);
        ingot_file *f;
        ingot_error e;
        ASSERT_OK(ingot_file_open_buffer(img, n, NULL, &f, &e));
        if (c == 0) {
            uint8_t back[3];
            ASSERT_OK(ingot_file_verify(f, 1, &e));
            ASSERT_OK(ingot_file_tensor_read(f, 0, 0, back, 3, &e));
            ASSERT_MEM(back, cases[c], 3);
        } else {
            uint64_t k = c == 1 ? 2 : 1;
            ASSERT_ST(ingot_file_verify(f, 1, &e), INGOT_BAD_VALUE);
            ASSERT_U64(e.offset, 128 + k);
            uint8_t b;
            ASSERT_OK(ingot_file_tensor_read(f, 0, 0, &b, 1, &e)); /* byte 0 alone is valid */
        }
        ingot_file_close(f);
    }
    unlink(path);
}

/* The scan works in 512-byte blocks: a bad byte at every kind of position (first, last of a
 * block, first of the next, the tail) is found exactly, and the first of two wins. */
TEST(test_bool_bad_byte_positions)
{
    enum { N = 1500 };
    static uint8_t data[N], img[N + 256];
    static const size_t pos[] = {0, 7, 8, 511, 512, 1023, 1024, 1400, N - 1};
    static const uint8_t vals[] = {2, 0x80, 0xff};
    char dict[128];
    snprintf(dict, sizeof dict, "{'descr': '|b1', 'fortran_order': False, 'shape': (%d,), }", N);
    for (size_t i = 0; i < N; i++) data[i] = (uint8_t)(i * 7 % 3 == 0);
    size_t n = npy_image(img, dict, data, N);
    ingot_file *f;
    ingot_error e;
    ASSERT_OK(ingot_file_open_buffer(img, n, NULL, &f, &e));
    ASSERT_OK(ingot_file_verify(f, 1, &e));
    ingot_file_close(f);
    for (size_t p = 0; p < sizeof pos / sizeof pos[0]; p++) {
        for (size_t v = 0; v < sizeof vals / sizeof vals[0]; v++) {
            n = npy_image(img, dict, data, N);
            img[128 + pos[p]] = vals[v];
            if (pos[p] + 600 < N) img[128 + pos[p] + 600] = 0x40; /* a later one, not reported */
            ASSERT_OK(ingot_file_open_buffer(img, n, NULL, &f, &e));
            e.offset = 0;
            CHECK(ingot_file_verify(f, 1, &e) == INGOT_BAD_VALUE && e.offset == 128 + pos[p],
                  "byte %zu = 0x%02x: verify at %" PRIu64, pos[p], vals[v], e.offset);
            static uint8_t back[N];
            e.offset = 0;
            CHECK(ingot_file_tensor_read(f, 0, 0, back, N, &e) == INGOT_BAD_VALUE &&
                      e.offset == 128 + pos[p],
                  "byte %zu = 0x%02x: read at %" PRIu64, pos[p], vals[v], e.offset);
            e.offset = 0;
            CHECK(ingot_file_tensor_copy(f, 0, back, N, &e) == INGOT_BAD_VALUE &&
                      e.offset == 128 + pos[p],
                  "byte %zu = 0x%02x: copy at %" PRIu64, pos[p], vals[v], e.offset);
            ingot_file_close(f);
        }
    }
}

/* Fortran order: copy transposes, and still names the file byte (not the C-order position). */
TEST(test_bool_bad_bytes_fortran)
{
    uint8_t img[256];
    /* shape (2, 3) column-major: stored byte k is element [k % 2][k / 2] */
    const uint8_t stored[6] = {0, 1, 1, 0, 7, 1}; /* stored byte 4: element [0][2] */
    size_t n = npy_image(img, "{'descr': '|b1', 'fortran_order': True, 'shape': (2, 3), }",
                         stored, 6);
    ingot_file *f;
    ingot_error e;
    ASSERT_OK(ingot_file_open_buffer(img, n, NULL, &f, &e));
    ingot_tensor_info t;
    ASSERT_OK(ingot_file_tensor_at(f, 0, &t));
    ASSERT_TRUE(t.flags & INGOT_TENSOR_FORTRAN);
    ASSERT_U64(t.offset, 128);
    uint8_t buf[6];
    ASSERT_ST(ingot_file_tensor_copy(f, 0, buf, sizeof buf, &e), INGOT_BAD_VALUE);
    ASSERT_U64(e.offset, 128 + 4);
    ASSERT_TRUE(strstr(e.msg, "element 2 (C order)") != NULL); /* [0][2] */
    ASSERT_ST(ingot_file_verify(f, 1, &e), INGOT_BAD_VALUE);
    ASSERT_U64(e.offset, 128 + 4);
    ingot_file_close(f);
}

static uint32_t rd32(const uint8_t *p) { return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24; }
static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static void wr32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> 8 * i);
}

/* Recomputes the CRC-32 of the stored member `name` in a zip image, in its local header and its
 * central directory entry (after a test patched the member's bytes). Returns false if absent. */
static bool zip_fix_crc(uint8_t *z, size_t n, const char *name)
{
    size_t nl = strlen(name);
    uint32_t crc = 0;
    bool found = false;
    for (size_t i = 0; i + 46 <= n; i++) {
        if (memcmp(z + i, "PK\3\4", 4) == 0 && rd16(z + i + 26) == nl && i + 30 + nl <= n &&
            memcmp(z + i + 30, name, nl) == 0) {
            size_t data = i + 30 + nl + rd16(z + i + 28), size = rd32(z + i + 18);
            if (data + size > n) return false;
            crc = ingot__crc32(0, z + data, size);
            wr32(z + i + 14, crc);
            found = true;
        } else if (found && memcmp(z + i, "PK\1\2", 4) == 0 && rd16(z + i + 28) == nl &&
                   i + 46 + nl <= n && memcmp(z + i + 46, name, nl) == 0) {
            wr32(z + i + 16, crc);
            return true;
        }
    }
    return false;
}

/* An .npz whose member holds bytes that are not valid BOOLs (ingot's writer refuses to write
 * them, so the test patches a valid file and fixes the member's CRC-32): the zip CRC-32 matches
 * (the member is intact), the values do not. */
TEST(test_bool_bad_bytes_npz_stored)
{
    ingot_writer_opts wo = {.format = "npz"};
    ingot_writer *w;
    ASSERT_OK(ingot_writer_new(&wo, &w, NULL));
    const uint64_t s3[1] = {3};
    ASSERT_OK(ingot_writer_add_tensor(w, "ok", INGOT_DTYPE_F32, 0, NULL, NULL, "\0\0\x80?", NULL));
    ASSERT_OK(ingot_writer_add_tensor(w, "mask", INGOT_DTYPE_BOOL, 1, s3, NULL, "\1\1\0", NULL));
    void *mem;
    size_t n;
    ASSERT_OK(ingot_writer_begin_mem(w, NULL));
    ASSERT_OK(ingot_writer_commit_mem(w, &mem, &n, NULL));
    ingot_writer_free(w);
    ingot_file *f;
    ingot_error e;
    ASSERT_OK(ingot_file_open_buffer(mem, n, NULL, &f, &e));
    ingot_tensor_info t;
    ASSERT_OK(ingot_file_tensor_find(f, "mask", &t));
    ingot_file_close(f);
    ((uint8_t *)mem)[t.offset + 1] = 'b';
    ASSERT_TRUE(zip_fix_crc(mem, n, "mask.npy"));
    ASSERT_OK(ingot_file_open_buffer(mem, n, NULL, &f, &e));
    ASSERT_OK(ingot_file_tensor_find(f, "mask", &t));
    ASSERT_OK(ingot_file_tensor_verify(f, 0, &e)); /* "ok" */
    ASSERT_ST(ingot_file_tensor_verify(f, t.index, &e), INGOT_BAD_VALUE);
    ASSERT_U64(e.offset, t.offset + 1);
    ASSERT_STR(e.where, "mask");
    ASSERT_ST(ingot_file_verify(f, 1, &e), INGOT_BAD_VALUE);
    ASSERT_U64(e.offset, t.offset + 1);
    ingot_file_close(f);
    ingot_writer_free_mem(NULL, mem, n);
}

static void put16(uint8_t *p, uint32_t v) { p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8); }
static void put32(uint8_t *p, uint32_t v) { put16(p, v), put16(p + 2, v >> 16); }

/* A one-member zip whose member is deflated as a single stored deflate block (RFC 1951 §3.2.4):
 * method 8 without needing a compressor. */
static size_t zip_deflated(uint8_t *out, const char *name, const uint8_t *data, size_t n)
{
    size_t nl = strlen(name), csize = 5 + n, pos = 0;
    uint32_t crc = ingot__crc32(0, data, n);
    uint8_t *h = out;
    memset(h, 0, 30);
    put32(h, 0x04034b50), put16(h + 4, 20), put16(h + 8, 8), put32(h + 14, crc);
    put32(h + 18, (uint32_t)csize), put32(h + 22, (uint32_t)n), put16(h + 26, (uint32_t)nl);
    memcpy(h + 30, name, nl);
    pos = 30 + nl;
    out[pos] = 1; /* BFINAL, BTYPE 00 */
    put16(out + pos + 1, (uint32_t)n), put16(out + pos + 3, (uint32_t)~n & 0xffff);
    memcpy(out + pos + 5, data, n);
    pos += csize;
    size_t cd = pos;
    h = out + pos;
    memset(h, 0, 46);
    put32(h, 0x02014b50), put16(h + 4, 20), put16(h + 6, 20), put16(h + 10, 8);
    put32(h + 16, crc), put32(h + 20, (uint32_t)csize), put32(h + 24, (uint32_t)n);
    put16(h + 28, (uint32_t)nl);
    memcpy(h + 46, name, nl);
    pos += 46 + nl;
    h = out + pos;
    memset(h, 0, 22);
    put32(h, 0x06054b50), put16(h + 8, 1), put16(h + 10, 1);
    put32(h + 12, (uint32_t)(pos - cd)), put32(h + 16, (uint32_t)cd);
    return pos + 22;
}

/* Deflated: the bytes exist only inflated, so the error names the byte of the tensor's data and
 * no file offset. */
TEST(test_bool_bad_bytes_npz_deflated)
{
    uint8_t npy[256], img[1024];
    size_t nn = npy_image(npy, "{'descr': '|b1', 'fortran_order': False, 'shape': (4,), }",
                          "\0\1\1\x10", 4);
    size_t n = zip_deflated(img, "flags.npy", npy, nn);
    ingot_file *f;
    ingot_error e;
    ASSERT_OK(ingot_file_open_buffer(img, n, NULL, &f, &e));
    ASSERT_STR(ingot_file_format(f), "npz");
    ingot_tensor_info t;
    ASSERT_OK(ingot_file_tensor_at(f, 0, &t));
    ASSERT_TRUE(t.flags & INGOT_TENSOR_NOT_MAPPED);
    uint8_t b[4];
    ASSERT_OK(ingot_file_tensor_read(f, 0, 0, b, 3, &e)); /* the valid prefix */
    ASSERT_MEM(b, "\0\1\1", 3);
    ASSERT_ST(ingot_file_tensor_read(f, 0, 0, b, 4, &e), INGOT_BAD_VALUE);
    ASSERT_U64(e.offset, INGOT_NO_OFFSET);
    ASSERT_STR(e.where, "flags");
    ASSERT_TRUE(strstr(e.msg, "byte 3 ") && strstr(e.msg, "0x10"));
    ASSERT_ST(ingot_file_verify(f, 1, &e), INGOT_BAD_VALUE); /* after the zip CRC-32 passed */
    ASSERT_STR(e.where, "flags");
    ingot_file_close(f);
}

/* PyTorch views over one BoolStorage holding 0x62 at index 2 (tests/data/torch/gen_bool_views.py):
 * exactly the views that reach that byte are refused, at its file offset, strided or not. */
TEST(test_bool_bad_bytes_torch_views)
{
    json_object *side = json_object_from_file(TDATA "torch/bool_views.pt.json"), *arr;
    ASSERT_TRUE(side && json_object_object_get_ex(side, "tensors", &arr));
    for (int io = 0; io < 2; io++) {
        ingot_open_opts o = {.io = io ? INGOT_IO_PREAD : INGOT_IO_MMAP};
        ingot_file *f;
        ingot_error e;
        ASSERT_OK(ingot_file_open(TDATA "torch/bool_views.pt", &o, &f, &e));
        ASSERT_U64(ingot_file_tensor_count(f), json_object_array_length(arr));
        uint64_t storage_at = UINT64_MAX; /* file offset of the storage record's data */
        ingot_status first = INGOT_OK;
        uint64_t first_at = 0;
        for (size_t k = 0; k < json_object_array_length(arr); k++) {
            json_object *j = json_object_array_get_idx(arr, k), *v;
            json_object_object_get_ex(j, "name", &v);
            const char *name = json_object_get_string(v);
            ingot_tensor_info t;
            ASSERT_OK(ingot_file_tensor_find(f, name, &t));
            json_object_object_get_ex(j, "storage_offset", &v);
            uint64_t base = t.offset - (uint64_t)json_object_get_int64(v); /* BOOL: 1 byte */
            if (storage_at == UINT64_MAX) storage_at = base;
            ASSERT_U64(base, storage_at); /* one storage */
            json_object *bad_el, *bad_ix;
            json_object_object_get_ex(j, "bad_element", &bad_el);
            json_object_object_get_ex(j, "bad_storage_index", &bad_ix);
            uint8_t buf[16];
            e.code = INGOT_OK;
            ingot_status cs = ingot_file_tensor_copy(f, t.index, buf, sizeof buf, &e);
            ingot_status vs = ingot_file_tensor_verify(f, t.index, NULL);
            if (!bad_el) {
                CHECK(cs == INGOT_OK && vs == INGOT_OK, "%s io %d: valid view refused: %s", name,
                      io, ingot_status_name(cs));
                continue;
            }
            uint64_t at = storage_at + (uint64_t)json_object_get_int64(bad_ix);
            char elem[32];
            snprintf(elem, sizeof elem, "element %lld (C order)",
                     (long long)json_object_get_int64(bad_el));
            CHECK(cs == INGOT_BAD_VALUE && e.offset == at && strcmp(e.where, name) == 0,
                  "%s io %d: copy %s at %" PRIu64 ", want BAD_VALUE at %" PRIu64, name, io,
                  ingot_status_name(cs), e.offset, at);
            CHECK((t.flags & INGOT_TENSOR_STRIDED) == 0 || strstr(e.msg, elem),
                  "%s: message '%s' lacks '%s'", name, e.msg, elem);
            CHECK(vs == INGOT_BAD_VALUE, "%s io %d: tensor_verify %s", name, io,
                  ingot_status_name(vs));
            if (first == INGOT_OK) first = INGOT_BAD_VALUE, first_at = at;
        }
        /* the whole file: the zip CRC-32 matches; the first bad view (file order) is reported */
        ASSERT_ST(ingot_file_verify(f, 2, &e), first);
        ASSERT_U64(e.offset, first_at);
        ASSERT_STR(e.where, "transposed");
        ingot_file_close(f);
    }
    json_object_put(side);
}

/* ---- progress: the same checks, with or without a callback ---- */

typedef struct {
    uint64_t calls, last, total, backwards;
} prog_rec;

static void prog_cb(void *ctx, uint64_t done, uint64_t total)
{
    prog_rec *r = ctx;
    if (done < r->last || done > total) r->backwards++;
    r->calls++;
    r->last = done;
    r->total = total;
}

/* verify_progress on `path` at 1, 2 and 3 threads: same status as ingot_file_verify, calls
 * monotonic and within the total, the last one done == total (on success). */
static void progress_case(const char *path, ingot_status want)
{
    ingot_file *f;
    ingot_error e;
    if (ingot_file_open(path, NULL, &f, &e) != INGOT_OK) {
        CHECK(false, "open %s: %s", path, e.msg);
        return;
    }
    ingot_verify_plan plan;
    CHECK(ingot_file_verify_plan(f, &plan) == INGOT_OK, "%s: plan", path);
    for (uint32_t threads = 1; threads <= 3; threads++) {
        ingot_error e1, e2;
        ingot_status s1 = ingot_file_verify(f, threads, &e1);
        prog_rec r = {0};
        ingot_status s2 = ingot_file_verify_progress(f, threads, prog_cb, &r, &e2);
        CHECK(s1 == want && s2 == want, "%s, %u threads: %s / %s, want %s", path, threads,
              ingot_status_name(s1), ingot_status_name(s2), ingot_status_name(want));
        CHECK(s1 == INGOT_OK || e1.offset == e2.offset, "%s: offsets %" PRIu64 " / %" PRIu64,
              path, e1.offset, e2.offset);
        CHECK(r.backwards == 0, "%s: %" PRIu64 " calls went backwards", path, r.backwards);
        if (want == INGOT_OK) {
            CHECK(r.calls >= 1 && r.last == plan.data_bytes && r.total == plan.data_bytes,
                  "%s, %u threads: %" PRIu64 " calls, last %" PRIu64 " of %" PRIu64
                  ", data %" PRIu64, path, threads, r.calls, r.last, r.total, plan.data_bytes);
        }
    }
    ingot_file_close(f);
}

TEST(test_verify_progress)
{
    size_t saved = ingot__verify_chunk;
    ingot__verify_chunk = 64; /* many pieces, so several progress calls per tensor */
    progress_case(INGOT_SOURCE_DIR "/tests/data/tiny.ingot", INGOT_OK);
    progress_case(FIX "gguf/gguf_align64.gguf", INGOT_OK);
    progress_case(FIX "gguf/gguf_all_types.gguf", INGOT_OK);
    progress_case(FIX "npy/f4_2x3.npy", INGOT_OK);

    /* Nonzero padding between two GGUF tensors: the progress path must find it too (the CLI's
     * progress bar once verified tensor by tensor and skipped the file-level checks). */
    size_t n;
    uint8_t *img = test_read_file(FIX "gguf/gguf_align64.gguf", &n);
    ASSERT_TRUE(img != NULL);
    ingot_file *f;
    ingot_error e;
    ASSERT_EQ(ingot_file_open_buffer(img, n, NULL, &f, &e), INGOT_OK);
    uint64_t gap = UINT64_MAX, nt = ingot_file_tensor_count(f);
    for (uint64_t i = 0; i < nt && gap == UINT64_MAX; i++) {
        ingot_tensor_info t;
        ingot_file_tensor_at(f, i, &t);
        uint64_t end = t.offset + t.nbytes, next = UINT64_MAX;
        for (uint64_t j = 0; j < nt; j++) {
            ingot_tensor_info u;
            ingot_file_tensor_at(f, j, &u);
            if (u.offset >= end && u.offset < next) next = u.offset;
        }
        if (next != UINT64_MAX && next > end) gap = end;
    }
    ingot_file_close(f);
    ASSERT_TRUE(gap != UINT64_MAX); /* the fixture has padding between tensors */
    img[gap] = 0x5a;
    const char *bad = scratch("bad_padding.gguf");
    ASSERT_TRUE(write_file(bad, img, n));
    free(img);
    progress_case(bad, INGOT_BAD_LAYOUT);
    unlink(bad);
    ingot__verify_chunk = saved;
}

RUN_TESTS(T(test_bad_value_status), T(test_check_names), T(test_plan_per_format),
          T(test_plan_shared_storage), T(test_no_checksum_formats_accept_overwritten_data),
          T(test_bool_bad_bytes_npy), T(test_bool_bad_byte_positions),
          T(test_bool_bad_bytes_fortran),
          T(test_bool_bad_bytes_npz_stored), T(test_bool_bad_bytes_npz_deflated),
          T(test_bool_bad_bytes_torch_views), T(test_verify_progress))
