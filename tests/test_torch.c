#define _GNU_SOURCE /* memmem */
/*
 * test_torch.c - the PyTorch adapter on real files: the shared fixtures against their sidecars,
 * the vectors of tests/data/torch (written by torch 1.13.1, see gen_torch_vectors.py) against
 * theirs (names, ingot dtypes, shapes, strides, sha256 of the C-order bytes from
 * ingot_file_tensor_copy, typed metadata, or the status a refused file must get), the spec's
 * hex-dump example (pytorch.md §8), and the malformed catalogue for the zip container: every
 * truncation, byte flips, and one crafted archive per zip-level rule (spec §2.5, §2.6).
 */
#include <json-c/json.h>
#include <math.h>

#include "file.h"
#include "harness.h"
#include "files.h"
#include "sha256.h"
#include "torch_pickle.h"
#include "zip.h"

#define DATA INGOT_SOURCE_DIR "/tests/data/torch/"
#define FIX INGOT_FIXTURES "/torch/"

static ingot_status open_buf(const void *b, size_t n, ingot_file **f, ingot_error *e)
{
    ingot_open_opts o = {0};
    o.format = "torch";
    return ingot_file_open_buffer(b, n, &o, f, e);
}

/* sha256 hex of tensor i's dense C-order bytes. */
static bool copy_sha(const ingot_file *f, uint64_t i, char hex[65])
{
    ingot_tensor_info t;
    if (ingot_file_tensor_at(f, i, &t) != INGOT_OK) return false;
    void *buf = malloc(t.nbytes ? t.nbytes : 1);
    ingot_error e;
    bool ok = ingot_file_tensor_copy(f, i, buf, t.nbytes, &e) == INGOT_OK;
    if (ok) test_sha256_hex(buf, t.nbytes, hex);
    else fprintf(stderr, "    copy of %s: %s\n", t.name, e.msg);
    free(buf);
    return ok;
}

static const char *torch_to_ingot(const char *torch_name)
{
    static const char *const map[][2] = {
        {"torch.float64", "F64"}, {"torch.float32", "F32"}, {"torch.float16", "F16"},
        {"torch.bfloat16", "BF16"}, {"torch.int64", "I64"}, {"torch.int32", "I32"},
        {"torch.int16", "I16"}, {"torch.int8", "I8"}, {"torch.uint8", "U8"},
        {"torch.bool", "BOOL"}, {"torch.complex64", "C64"},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (strcmp(map[i][0], torch_name) == 0) return map[i][1];
    return torch_name;
}

static const char *jstr(json_object *o, const char *k)
{
    json_object *v;
    return json_object_object_get_ex(o, k, &v) ? json_object_get_string(v) : NULL;
}

/* Checks one open file against a tensor list; `shared` selects the shared-fixture schema. */
static void check_tensors(const ingot_file *f, json_object *tensors, bool shared, const char *file)
{
    size_t n = json_object_array_length(tensors);
    CHECK(ingot_file_tensor_count(f) == n, "%s: %" PRIu64 " tensors, sidecar %zu", file,
          ingot_file_tensor_count(f), n);
    for (size_t i = 0; i < n && i < ingot_file_tensor_count(f); i++) {
        json_object *jt = json_object_array_get_idx(tensors, i);
        ingot_tensor_info t;
        CHECK(ingot_file_tensor_at(f, i, &t) == INGOT_OK, "%s: tensor_at %zu", file, i);
        const char *name = jstr(jt, "name");
        CHECK(strcmp(t.name, name) == 0, "%s: tensor %zu is '%s', sidecar '%s'", file, i, t.name,
              name);
        ingot_tensor_info byname;
        CHECK(ingot_file_tensor_find(f, name, &byname) == INGOT_OK && byname.index == i,
              "%s: find '%s'", file, name);
        const char *dt = jstr(jt, "dtype");
        if (shared) dt = torch_to_ingot(dt);
        CHECK(strcmp(ingot_dtype_name(t.dtype), dt) == 0, "%s/%s: dtype %s, sidecar %s", file,
              name, ingot_dtype_name(t.dtype), dt);
        json_object *shape, *stride, *contig;
        json_object_object_get_ex(jt, "shape", &shape);
        json_object_object_get_ex(jt, "stride", &stride);
        CHECK(t.rank == json_object_array_length(shape), "%s/%s: rank", file, name);
        bool contiguous = true;
        if (json_object_object_get_ex(jt, "contiguous", &contig))
            contiguous = json_object_get_boolean(contig);
        for (uint32_t d = 0; d < t.rank && d < json_object_array_length(shape); d++) {
            CHECK(t.shape[d] == (uint64_t)json_object_get_int64(json_object_array_get_idx(shape, d)),
                  "%s/%s: shape[%u]", file, name, d);
            if (!contiguous)
                CHECK(t.strides[d] == json_object_get_int64(json_object_array_get_idx(stride, d)),
                      "%s/%s: stride[%u]", file, name, d);
        }
        CHECK(!!(t.flags & INGOT_TENSOR_STRIDED) == !contiguous, "%s/%s: STRIDED flag", file, name);
        char hex[65] = "";
        CHECK(copy_sha(f, i, hex), "%s/%s: copy failed", file, name);
        CHECK(strcmp(hex, jstr(jt, "sha256")) == 0, "%s/%s: sha256 %s, sidecar %s", file, name,
              hex, jstr(jt, "sha256"));
        json_object *off;
        if (shared && contiguous && json_object_object_get_ex(jt, "data_file_offset", &off))
            CHECK(t.offset == (uint64_t)json_object_get_int64(off), "%s/%s: offset %" PRIu64, file,
                  name, t.offset);
        if (contiguous && t.nbytes) { /* zero-copy: the pointer is the file's bytes */
            uint8_t *b = malloc(t.nbytes);
            CHECK(ingot_file_tensor_read(f, i, 0, b, t.nbytes, NULL) == INGOT_OK, "read");
            if (t.data) CHECK(memcmp(b, t.data, t.nbytes) == 0, "%s/%s: data pointer", file, name);
            free(b);
        } else if (!contiguous) {
            uint8_t b[4];
            CHECK(ingot_file_tensor_read(f, i, 0, b, t.nbytes < 4 ? t.nbytes : 4, NULL) ==
                      INGOT_UNSUPPORTED,
                  "%s/%s: tensor_read of a strided view", file, name);
        }
    }
}

static void check_meta(const ingot_file *f, json_object *meta, const char *file)
{
    uint64_t n = ingot_file_meta_count(f);
    size_t want = meta ? (size_t)json_object_object_length(meta) : 0;
    CHECK(n == want, "%s: %" PRIu64 " metadata entries, sidecar %zu", file, n, want);
    if (!meta) return;
    json_object_object_foreach(meta, key, val)
    {
        const char *type = json_object_get_string(json_object_array_get_idx(val, 0));
        json_object *v = json_object_array_get_idx(val, 1);
        ingot_meta_info m;
        if (ingot_file_meta_find(f, key, &m) != INGOT_OK) {
            CHECK(0, "%s: metadata '%s' missing", file, key);
            continue;
        }
        if (strcmp(type, "i64") == 0) {
            int64_t x;
            CHECK(ingot_file_meta_get_i64(f, key, &x) == INGOT_OK && x == json_object_get_int64(v),
                  "%s: %s", file, key);
        } else if (strcmp(type, "f64") == 0) {
            double x;
            CHECK(ingot_file_meta_get_f64(f, key, &x) == INGOT_OK && x == json_object_get_double(v),
                  "%s: %s", file, key);
        } else if (strcmp(type, "bool") == 0) {
            bool x;
            CHECK(ingot_file_meta_get_bool(f, key, &x) == INGOT_OK && x == json_object_get_boolean(v),
                  "%s: %s", file, key);
        } else if (strcmp(type, "string") == 0) {
            const char *s;
            size_t len;
            const char *w = json_object_get_string(v);
            CHECK(ingot_file_meta_get_string(f, key, &s, &len) == INGOT_OK && len == strlen(w) &&
                      memcmp(s, w, len) == 0,
                  "%s: %s", file, key);
        } else if (strcmp(type, "bytes") == 0) {
            const void *p;
            size_t len;
            const char *w = json_object_get_string(v);
            uint8_t want_b[64];
            size_t wl = strlen(w) / 2;
            for (size_t k = 0; k < wl && k < sizeof want_b; k++) {
                unsigned x;
                sscanf(w + 2 * k, "%2x", &x);
                want_b[k] = (uint8_t)x;
            }
            CHECK(ingot_file_meta_get_bytes(f, key, &p, &len) == INGOT_OK && len == wl &&
                      memcmp(p, want_b, wl) == 0,
                  "%s: %s", file, key);
        } else { /* arrays */
            size_t cnt = json_object_array_length(v);
            ingot_meta_type mt = type[0] == 'i' ? INGOT_META_I64
                                 : type[0] == 'f' ? INGOT_META_F64
                                 : type[0] == 'b' ? INGOT_META_BOOL
                                                  : INGOT_META_STRING;
            uint64_t c;
            CHECK(ingot_file_meta_get_array(f, key, mt, &c) == INGOT_OK && c == cnt, "%s: %s",
                  file, key);
            for (size_t k = 0; k < cnt && c == cnt; k++) {
                json_object *jv = json_object_array_get_idx(v, k);
                if (mt == INGOT_META_STRING) {
                    const char *s;
                    size_t len;
                    CHECK(ingot_file_meta_array_string(f, m.index, k, &s, &len) == INGOT_OK &&
                              len == strlen(json_object_get_string(jv)),
                          "%s: %s[%zu]", file, key, k);
                } else if (mt == INGOT_META_I64) {
                    int64_t x;
                    CHECK(ingot_file_meta_array_read(f, m.index, mt, k, 1, &x) == INGOT_OK &&
                              x == json_object_get_int64(jv),
                          "%s: %s[%zu]", file, key, k);
                } else if (mt == INGOT_META_F64) {
                    double x;
                    CHECK(ingot_file_meta_array_read(f, m.index, mt, k, 1, &x) == INGOT_OK &&
                              x == json_object_get_double(jv),
                          "%s: %s[%zu]", file, key, k);
                } else {
                    uint8_t x;
                    CHECK(ingot_file_meta_array_read(f, m.index, mt, k, 1, &x) == INGOT_OK &&
                              x == json_object_get_boolean(jv),
                          "%s: %s[%zu]", file, key, k);
                }
            }
        }
    }
}

/* Placeholder notices against the sidecar's [path, class] pairs (none when places is NULL), as a
 * set (the sidecar lists them in the order Python reaches them, ingot in file order, which is
 * checked separately): the name, the class in the reason, and the byte at the offset is the
 * opcode the reason names. Python 3 writes builtins as __builtin__ at protocol 2 (fix_imports);
 * the sidecar says builtins. */
static void check_places(const ingot_file *f, json_object *places, const uint8_t *buf,
                         size_t len, const char *file)
{
    size_t n = places ? json_object_array_length(places) : 0;
    uint64_t nn = ingot_file_notice_count(f);
    CHECK(nn == n, "%s: %" PRIu64 " notices, sidecar %zu", file, nn, n);
    bool used[256] = {false};
    CHECK(nn <= 256, "%s: too many notices for this test", file);
    for (size_t i = 0; i < n; i++) {
        json_object *jp = json_object_array_get_idx(places, i);
        const char *name = json_object_get_string(json_object_array_get_idx(jp, 0));
        const char *cls = json_object_get_string(json_object_array_get_idx(jp, 1));
        char want[256];
        if (strncmp(cls, "builtins.", 9) == 0)
            snprintf(want, sizeof want, " __builtin__.%s ", cls + 9);
        else snprintf(want, sizeof want, " %s ", cls);
        bool found = false;
        for (uint64_t k = 0; k < nn && k < 256 && !found; k++) {
            ingot_notice nt;
            if (used[k] || ingot_file_notice_at(f, k, &nt) != INGOT_OK) continue;
            if (nt.kind != INGOT_NOTICE_SKIPPED || strcmp(nt.name, name) != 0 ||
                !strstr(nt.reason, want))
                continue;
            found = used[k] = true;
        }
        CHECK(found, "%s: no notice '%s' naming%s", file, name, want);
    }
    uint64_t prev = 0;
    for (uint64_t k = 0; k < nn; k++) {
        ingot_notice nt;
        CHECK(ingot_file_notice_at(f, k, &nt) == INGOT_OK, "%s: notice %" PRIu64, file, k);
        CHECK(nt.offset < len && (k == 0 || nt.offset > prev), "%s/%s: offset %" PRIu64
              " not in file order", file, nt.name, nt.offset);
        if (nt.offset >= len) continue;
        prev = nt.offset;
        uint8_t op = buf[nt.offset];
        bool ok = strstr(nt.reason, "(GLOBAL at") ? op == 'c' || op == 0x93
                  : strstr(nt.reason, "(REDUCE at") ? op == 'R'
                  : strstr(nt.reason, "(NEWOBJ at") ? op == 0x81
                                                     : false;
        char at[32];
        snprintf(at, sizeof at, "byte %" PRIu64 ")", nt.offset);
        CHECK(ok && strstr(nt.reason, at), "%s/%s: byte 0x%02x at %" PRIu64 " for '%s'", file,
              nt.name, op, nt.offset, nt.reason);
    }
}

/* Opens `path` by path (mmap), by path (pread) and from a buffer; runs check on each. */
static void check_all_modes(const char *path, json_object *tensors, json_object *meta,
                            json_object *places, bool shared, const char *refuse)
{
    size_t len;
    uint8_t *buf = test_read_file(path, &len);
    CHECK(buf != NULL, "cannot read %s", path);
    if (!buf) return;
    for (int mode = 0; mode < 3; mode++) {
        ingot_file *f = NULL;
        ingot_error e;
        ingot_open_opts o = {0};
        o.io = mode == 1 ? INGOT_IO_PREAD : INGOT_IO_MMAP;
        ingot_status st = mode == 2 ? ingot_file_open_buffer(buf, len, &o, &f, &e)
                                    : ingot_file_open(path, &o, &f, &e);
        if (refuse) {
            CHECK(st != INGOT_OK && strcmp(ingot_status_name(st), refuse) == 0,
                  "%s (mode %d): got %s, want %s", path, mode, ingot_status_name(st), refuse);
            ingot_file_close(f);
            continue;
        }
        if (st != INGOT_OK) {
            CHECK(0, "%s (mode %d): %s: %s", path, mode, ingot_status_name(st), e.msg);
            continue;
        }
        CHECK(strcmp(ingot_file_format(f), "torch") == 0, "format");
        check_tensors(f, tensors, shared, path);
        check_meta(f, meta, path);
        check_places(f, places, buf, len, path);
        CHECK(ingot_file_verify(f, 1, &e) == INGOT_OK, "%s (mode %d): verify: %s", path, mode,
              e.msg);
        ingot_file_close(f);
    }
    free(buf);
}

TEST(fixtures_match_sidecars)
{
    static const char *const files[] = {"torch_tinynet_f32.pt", "torch_tinynet_f16_bf16.pt",
                                        "torch_tinynet_legacy.pt"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char path[512], side[600];
        snprintf(path, sizeof path, "%s%s", FIX, files[i]);
        snprintf(side, sizeof side, "%s.expected.json", path);
        json_object *j = json_object_from_file(side);
        if (!j) FAIL_AT("cannot read %s", side);
        json_object *tensors, *meta = NULL;
        json_object_object_get_ex(j, "tensors", &tensors);
        json_object_object_get_ex(j, "metadata", &meta);
        if (meta && json_object_get_type(meta) == json_type_null) meta = NULL;
        check_all_modes(path, tensors, meta, NULL, true, NULL);
        json_object_put(j);
    }
}

TEST(vectors_match_sidecars)
{
    static const char *const files[] = {
        "views.pt",   "views_legacy.pt", "dtypes.pt",       "dtypes_legacy.pt",
        "checkpoint.pt", "checkpoint_legacy.pt", "proto4.pt", "proto4_legacy.pt",
        "root.pt",    "params.pt",       "many.pt",         "quantized.pt",    "sparse.pt",
        "complex128.pt",   "complex128_legacy.pt", "proto1.pt",       "plain_pickle.pt",
        /* issue 18 §5: objects outside the allow-list, GPU locations (gen_torch_legacy.py) */
        "../torch_legacy/onmt_legacy.pt", "../torch_legacy/gpu_legacy.pt",
        "../torch_legacy/gpu.pt", "../torch_legacy/module_legacy.pt",
        "../torch_legacy/module.pt", "../torch_legacy/tar_legacy.pt",
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char path[512], side[600];
        snprintf(path, sizeof path, "%s%s", DATA, files[i]);
        snprintf(side, sizeof side, "%s.json", path);
        json_object *j = json_object_from_file(side);
        if (!j) FAIL_AT("cannot read %s", side);
        json_object *tensors = NULL, *meta = NULL, *refuse = NULL, *places = NULL;
        json_object_object_get_ex(j, "tensors", &tensors);
        json_object_object_get_ex(j, "metadata", &meta);
        json_object_object_get_ex(j, "refuse", &refuse);
        json_object_object_get_ex(j, "placeholders", &places);
        check_all_modes(path, tensors, meta, places, false,
                        refuse ? json_object_get_string(refuse) : NULL);
        json_object_put(j);
    }
}

/* Spec §8: tiny.pt, rebuilt from the spec's hex dump (tests/data/torch/tiny_spec.pt). */
TEST(spec_hex_example)
{
    size_t len;
    uint8_t *b = test_read_file(DATA "tiny_spec.pt", &len);
    ASSERT_TRUE(b);
    char hex[65];
    test_sha256_hex(b, len, hex);
    ASSERT_STR(hex, "a238f5a2074c4f07f34d76e1e6e998be1d977eb21941493747a6790bb256214e");
    ASSERT_U64(len, 1051);
    ingot_file *f;
    ingot_error e;
    ASSERT_OK(ingot_file_open_buffer(b, len, NULL, &f, &e));
    ASSERT_STR(ingot_file_format(f), "torch");
    ASSERT_STR(ingot_file_version(f), "3");
    ASSERT_U64(ingot_file_alignment(f), 64);
    ASSERT_U64(ingot_file_tensor_count(f), 2);
    ASSERT_U64(ingot_file_meta_count(f), 0); /* _metadata is an attribute, not an item */
    ingot_tensor_info t;
    ASSERT_OK(ingot_file_tensor_at(f, 0, &t));
    ASSERT_STR(t.name, "fc.weight");
    ASSERT_EQ(t.dtype, INGOT_DTYPE_F32);
    ASSERT_EQ(t.rank, 2);
    ASSERT_U64(t.shape[0], 2);
    ASSERT_U64(t.shape[1], 3);
    ASSERT_U64(t.offset, 448);
    ASSERT_U64(t.nbytes, 24);
    ASSERT_TRUE(t.data == b + 448);
    ASSERT_EQ(t.flags, 0);
    float w[6];
    memcpy(w, t.data, 24);
    for (int k = 0; k < 6; k++) ASSERT_TRUE(w[k] == (float)k);
    ASSERT_OK(ingot_file_tensor_find(f, "fc.bias", &t));
    ASSERT_U64(t.offset, 576);
    ASSERT_U64(t.nbytes, 8);
    memcpy(w, t.data, 8);
    ASSERT_TRUE(w[0] == 0.5f && w[1] == -1.0f);
    ASSERT_OK(ingot_file_verify(f, 1, &e));
    ingot_file_close(f);
    /* A flipped tensor byte: open is fine (CRCs are checked lazily), verify names the tensor. */
    b[450] ^= 1;
    ASSERT_OK(ingot_file_open_buffer(b, len, NULL, &f, &e));
    ASSERT_ST(ingot_file_tensor_verify(f, 0, &e), INGOT_BAD_CHECKSUM);
    ASSERT_STR(e.where, "fc.weight");
    ASSERT_OK(ingot_file_tensor_verify(f, 1, &e));
    ingot_open_opts o = {0};
    o.verify = INGOT_VERIFY_ALL;
    ingot_file_close(f);
    ASSERT_ST(ingot_file_open_buffer(b, len, &o, &f, &e), INGOT_BAD_CHECKSUM);
    free(b);
}

TEST(views_and_tied_weights)
{
    ingot_file *f;
    ingot_error e;
    ASSERT_OK(ingot_file_open(DATA "views.pt", NULL, &f, &e));
    ingot_tensor_info base, tied, tr, ex, rs;
    ASSERT_OK(ingot_file_tensor_find(f, "base", &base));
    ASSERT_OK(ingot_file_tensor_find(f, "tied", &tied));
    ASSERT_OK(ingot_file_tensor_find(f, "transposed", &tr));
    ASSERT_OK(ingot_file_tensor_find(f, "expanded", &ex));
    ASSERT_OK(ingot_file_tensor_find(f, "row_slice", &rs));
    ASSERT_TRUE(base.data == tied.data && base.offset == tied.offset); /* shared storage */
    ASSERT_U64(rs.offset, base.offset + 24);                          /* contiguous slice */
    ASSERT_EQ(rs.flags & INGOT_TENSOR_STRIDED, 0);
    ASSERT_TRUE(tr.flags & INGOT_TENSOR_STRIDED);
    ASSERT_EQ(tr.strides[0], 1);
    ASSERT_EQ(tr.strides[1], 6);
    ASSERT_U64(tr.nbytes, 96);
    ASSERT_TRUE(ex.flags & INGOT_TENSOR_STRIDED);
    ASSERT_EQ(ex.strides[0], 0);
    float v[24];
    ASSERT_OK(ingot_file_tensor_copy(f, tr.index, v, sizeof v, &e));
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 4; j++) ASSERT_TRUE(v[i * 4 + j] == (float)(j * 6 + i));
    ASSERT_OK(ingot_file_tensor_copy(f, ex.index, v, sizeof v, &e));
    for (int i = 0; i < 12; i++) ASSERT_TRUE(v[i] == (float)(i % 3 + 1));
    ingot_file_close(f);
}

/* ---------------------------------------------------------------------------------------------
 * A torch-style zip writer for crafted archives: stored members, FB padding to 64, descriptors,
 * zip64 end records (spec §2.3).
 * ------------------------------------------------------------------------------------------- */

typedef struct {
    const char *name;
    const void *data;
    size_t len;
    uint16_t method;
} zrec;

static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8); }
static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static size_t zbuild(const zrec *r, size_t n, uint8_t *out)
{
    size_t pos = 0, lho[16];
    for (size_t i = 0; i < n; i++) {
        size_t nl = strlen(r[i].name);
        lho[i] = pos;
        uint8_t *h = out + pos;
        memset(h, 0, 30);
        put32(h, 0x04034b50);
        put16(h + 6, r[i].len ? 0x0808 : 0x0800);
        put16(h + 8, r[i].method);
        put16(h + 26, (uint16_t)nl);
        size_t base = pos + 30 + nl + 4;
        size_t pad = (64 - base % 64) % 64;
        put16(h + 28, (uint16_t)(4 + pad));
        memcpy(h + 30, r[i].name, nl);
        h[30 + nl] = 'F', h[31 + nl] = 'B';
        put16(h + 32 + nl, (uint16_t)pad);
        memset(h + 34 + nl, 'Z', pad);
        pos = base + pad;
        memcpy(out + pos, r[i].data, r[i].len);
        pos += r[i].len;
        if (r[i].len) {
            put32(out + pos, 0x08074b50);
            put32(out + pos + 4, ingot__crc32(0, r[i].data, r[i].len));
            put32(out + pos + 8, (uint32_t)r[i].len);
            put32(out + pos + 12, (uint32_t)r[i].len);
            pos += 16;
        }
    }
    size_t cd = pos;
    for (size_t i = 0; i < n; i++) {
        size_t nl = strlen(r[i].name);
        uint8_t *h = out + pos;
        memset(h, 0, 46);
        put32(h, 0x02014b50);
        put16(h + 8, r[i].len ? 0x0808 : 0x0800);
        put16(h + 10, r[i].method);
        put32(h + 16, ingot__crc32(0, r[i].data, r[i].len));
        put32(h + 20, (uint32_t)r[i].len);
        put32(h + 24, (uint32_t)r[i].len);
        put16(h + 28, (uint16_t)nl);
        put32(h + 42, (uint32_t)lho[i]);
        memcpy(h + 46, r[i].name, nl);
        pos += 46 + nl;
    }
    size_t cd_size = pos - cd, z64 = pos;
    uint8_t *h = out + pos;
    memset(h, 0, 56 + 20 + 22);
    put32(h, 0x06064b50);
    put64(h + 4, 44);
    put16(h + 12, 0x031E);
    put16(h + 14, 45);
    put64(h + 24, n);
    put64(h + 32, n);
    put64(h + 40, cd_size);
    put64(h + 48, cd);
    put32(h + 56, 0x07064b50);
    put64(h + 64, z64);
    put32(h + 72, 1);
    put32(h + 76, 0x06054b50);
    put16(h + 84, (uint16_t)n);
    put16(h + 86, (uint16_t)n);
    put32(h + 88, (uint32_t)cd_size);
    put32(h + 92, (uint32_t)cd);
    return pos + 98;
}

/* tiny.pt's pieces (spec §8). */
static uint8_t tiny_pkl[314], tiny_w[24], tiny_b[8];

static bool load_tiny(void)
{
    size_t len;
    uint8_t *b = test_read_file(DATA "tiny_spec.pt", &len);
    if (!b || len != 1051) return false;
    memcpy(tiny_pkl, b + 64, 314);
    memcpy(tiny_w, b + 448, 24);
    memcpy(tiny_b, b + 576, 8);
    free(b);
    return true;
}

static ingot_status open_zip(const zrec *r, size_t n, ingot_error *e, ingot_file **keep)
{
    static uint8_t img[8192];
    size_t len = zbuild(r, n, img);
    ingot_file *f = NULL;
    ingot_status st = open_buf(img, len, &f, e);
    if (keep) *keep = f;
    else ingot_file_close(f);
    return st;
}

#define TINY_RECS(pkl, pkl_len)                                                                    \
    {"tiny/data.pkl", pkl, pkl_len, 0}, {"tiny/data/0", tiny_w, 24, 0},                            \
        {"tiny/data/1", tiny_b, 8, 0}, { "tiny/version", "3\n", 2, 0 }

TEST(zip_builder_round_trip)
{
    ASSERT_TRUE(load_tiny());
    zrec r[] = {TINY_RECS(tiny_pkl, 314)};
    uint8_t img[8192];
    size_t len = zbuild(r, 4, img);
    size_t ref_len;
    uint8_t *ref = test_read_file(DATA "tiny_spec.pt", &ref_len);
    ASSERT_U64(len, ref_len); /* the builder writes what torch writes */
    ASSERT_MEM(img, ref, len);
    free(ref);
}

/* Storage records are matched to the pickle's storage keys by exact name, in any member order:
 * names that only look like data/<key> do not stand for it, unreferenced records are ignored,
 * and the first storage without a record is the one named in the error. */
TEST(zip_storage_records_by_key)
{
    ASSERT_TRUE(load_tiny());
    ingot_error e;
    ingot_file *f;
    { /* records listed out of key order, with look-alike and unreferenced members around them */
        zrec r[] = {{"tiny/data.pkl", tiny_pkl, 314, 0}, {"tiny/data/00", "xxxx", 4, 0},
                    {"tiny/data/1", tiny_b, 8, 0},       {"tiny/data/", "", 0, 0},
                    {"tiny/data/0", tiny_w, 24, 0},      {"tiny/data/9", "yy", 2, 0},
                    {"tiny/datax0", "zz", 2, 0},         {"tiny/version", "3\n", 2, 0}};
        ASSERT_OK(open_zip(r, 8, &e, &f));
        ASSERT_U64(ingot_file_tensor_count(f), 2);
        for (uint64_t i = 0; i < 2; i++) {
            ingot_tensor_info t;
            ASSERT_OK(ingot_file_tensor_at(f, i, &t));
            const uint8_t *want = t.nbytes == 24 ? tiny_w : tiny_b;
            ASSERT_TRUE(t.nbytes == 24 || t.nbytes == 8);
            ASSERT_MEM(t.data, want, t.nbytes);
        }
        ingot_file_close(f);
        /* the key "0" has only look-alikes left: missing, named at its BINPERSID */
        r[4].name = "tiny/data/0/";
        r[4].len = 0;
        ASSERT_ST(open_zip(r, 8, &e, NULL), INGOT_BAD_LAYOUT);
        ASSERT_TRUE(strstr(e.msg, "missing storage record data/0") != NULL);
        ASSERT_STR(e.where, "0");
        /* both missing: the first storage of the pickle ("0") is reported */
        r[2].name = "tiny/data/1x";
        ASSERT_ST(open_zip(r, 8, &e, NULL), INGOT_BAD_LAYOUT);
        ASSERT_STR(e.where, "0");
        /* only "1" missing */
        r[4].name = "tiny/data/0", r[4].len = 24;
        ASSERT_ST(open_zip(r, 8, &e, NULL), INGOT_BAD_LAYOUT);
        ASSERT_TRUE(strstr(e.msg, "missing storage record data/1") != NULL);
        ASSERT_STR(e.where, "1");
    }
}

TEST(zip_rules)
{
    ASSERT_TRUE(load_tiny());
    ingot_error e;
    ingot_file *f;
    { /* byteorder big: zero-copy pointer flagged BIG_ENDIAN, the copy swaps */
        uint8_t wbe[24];
        for (int i = 0; i < 24; i++) wbe[i] = tiny_w[(i / 4) * 4 + 3 - i % 4];
        zrec r[] = {{"tiny/data.pkl", tiny_pkl, 314, 0}, {"tiny/byteorder", "big", 3, 0},
                    {"tiny/data/0", wbe, 24, 0}, {"tiny/data/1", tiny_b, 8, 0},
                    {"tiny/version", "3\n", 2, 0}};
        ASSERT_OK(open_zip(r, 5, &e, &f));
        ingot_tensor_info t;
        ASSERT_OK(ingot_file_tensor_at(f, 0, &t));
        ASSERT_TRUE(t.flags & INGOT_TENSOR_BIG_ENDIAN);
        float w[6];
        ASSERT_OK(ingot_file_tensor_copy(f, 0, w, sizeof w, &e));
        for (int k = 0; k < 6; k++) ASSERT_TRUE(w[k] == (float)k);
        ingot_file_close(f);
        r[1].data = "little", r[1].len = 6;
        r[2].data = tiny_w;
        ASSERT_OK(open_zip(r, 5, &e, NULL));
        r[1].data = "middle";
        ASSERT_ST(open_zip(r, 5, &e, NULL), INGOT_BAD_METADATA);
        r[1].name = "tiny/.storage_alignment", r[1].data = "64", r[1].len = 2;
        ASSERT_OK(open_zip(r, 5, &e, NULL));
        r[1].data = "48";
        ASSERT_ST(open_zip(r, 5, &e, NULL), INGOT_BAD_ALIGN);
    }
    { /* version */
        zrec r[] = {TINY_RECS(tiny_pkl, 314)};
        static const char *const bad[] = {"0", "11", "x", "", "3\n\n", "99999999999"};
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            r[3].data = bad[i], r[3].len = strlen(bad[i]);
            CHECK(open_zip(r, 4, &e, NULL) == INGOT_BAD_VERSION, "version '%s'", bad[i]);
        }
        r[3].data = "10", r[3].len = 2;
        ASSERT_OK(open_zip(r, 4, &e, NULL));
        r[3].name = "tiny/.data/version";
        ASSERT_OK(open_zip(r, 4, &e, NULL));
        r[3].name = "tiny/other";
        ASSERT_ST(open_zip(r, 4, &e, NULL), INGOT_BAD_LAYOUT); /* no version record */
    }
    { /* records */
        zrec r[] = {TINY_RECS(tiny_pkl, 314)};
        r[1].name = "tiny/data/7";
        ASSERT_ST(open_zip(r, 4, &e, NULL), INGOT_BAD_LAYOUT); /* missing storage record */
        ASSERT_TRUE(strstr(e.msg, "missing storage record"));
        r[1].name = "tiny/data/0";
        r[1].len = 20;
        ASSERT_ST(open_zip(r, 4, &e, NULL), INGOT_BAD_SIZE); /* record != numel x 4 */
        r[1].len = 24;
        r[1].method = 8;
        ASSERT_ST(open_zip(r, 4, &e, NULL), INGOT_UNSUPPORTED); /* compressed storage */
        r[1].method = 0;
        r[0].method = 8;
        ASSERT_ST(open_zip(r, 4, &e, NULL), INGOT_UNSUPPORTED); /* compressed data.pkl */
        r[0].method = 0;
        r[2].name = "other/data/1";
        ASSERT_ST(open_zip(r, 4, &e, NULL), INGOT_BAD_LAYOUT); /* outside the prefix */
        r[2].name = "tiny/data/1";
        r[0].name = "data.pkl";
        ASSERT_ST(open_zip(r, 4, &e, NULL), INGOT_BAD_LAYOUT); /* first name without '/' */
        r[0].name = "tiny/other.pkl";
        ASSERT_ST(open_zip(r, 4, &e, NULL), INGOT_BAD_LAYOUT); /* no data.pkl */
        r[0].name = "tiny/data.pkl";
    }
    { /* TorchScript and torch.package archives */
        zrec r[] = {TINY_RECS(tiny_pkl, 314), {"tiny/constants.pkl", "\x80\x02).", 4, 0}};
        ASSERT_ST(open_zip(r, 5, &e, NULL), INGOT_UNSUPPORTED);
        ASSERT_TRUE(strstr(e.msg, "TorchScript"));
        r[4].name = "tiny/.data/extern_modules";
        ASSERT_ST(open_zip(r, 5, &e, NULL), INGOT_UNSUPPORTED);
        r[4].name = "tiny/.data/0.storage";
        ASSERT_ST(open_zip(r, 5, &e, NULL), INGOT_UNSUPPORTED);
    }
    { /* bytes after STOP; a pickle cut before STOP */
        uint8_t pk[320];
        memcpy(pk, tiny_pkl, 314);
        pk[314] = 'N';
        zrec r[] = {TINY_RECS(pk, 315)};
        ASSERT_ST(open_zip(r, 4, &e, NULL), INGOT_BAD_LAYOUT);
        r[0].len = 313;
        ASSERT_ST(open_zip(r, 4, &e, NULL), INGOT_TRUNCATED);
    }
    { /* newer writers' extra records are ignored; a CRC of 0 means "not computed" */
        zrec r[] = {{"tiny/data.pkl", tiny_pkl, 314, 0}, {"tiny/.format_version", "1", 1, 0},
                    {"tiny/.storage_alignment", "64", 2, 0}, {"tiny/byteorder", "little", 6, 0},
                    {"tiny/data/0", tiny_w, 24, 0}, {"tiny/data/1", tiny_b, 8, 0},
                    {"tiny/version", "3\n", 2, 0},
                    {"tiny/.data/serialization_id", "1234567890123456789012345678901234567890", 40, 0}};
        static uint8_t img[8192];
        size_t len = zbuild(r, 8, img);
        ASSERT_OK(open_buf(img, len, &f, &e));
        ASSERT_OK(ingot_file_verify(f, 1, &e));
        ingot_verify_plan p;
        ASSERT_OK(ingot_file_verify_plan(f, &p));
        ASSERT_U64(p.tensors_with_checksum, 2);
        ASSERT_U64(p.checksums, 2);
        ASSERT_TRUE(p.checks & INGOT_CHECK_ZIP_CRC32);
        ingot_file_close(f);
        /* zero the CRC of data/0 in the central directory (entry 5): verify still passes */
        uint8_t *cd = memmem(img, len, "PK\1\2", 4);
        for (int k = 0; k < 4 && cd; k++) cd = memmem(cd + 4, len - (size_t)(cd + 4 - img), "PK\1\2", 4);
        ASSERT_TRUE(cd && memcmp(cd + 46, "tiny/data/0", 11) == 0);
        memset(cd + 16, 0, 4);
        ASSERT_OK(open_buf(img, len, &f, &e));
        ASSERT_OK(ingot_file_tensor_verify(f, 0, &e));
        /* ... and the plan does not count fc.weight as checksummed: nothing was checked */
        ASSERT_OK(ingot_file_verify_plan(f, &p));
        ASSERT_U64(p.tensors_with_checksum, 1);
        ASSERT_U64(p.tensors_without, 1);
        ASSERT_U64(p.checksums, 1);
        ingot_file_close(f);
        /* a wrong non-zero CRC is a mismatch */
        cd[16] = 1;
        ASSERT_OK(open_buf(img, len, &f, &e));
        ASSERT_ST(ingot_file_tensor_verify(f, 0, &e), INGOT_BAD_CHECKSUM);
        ASSERT_STR(e.where, "fc.weight");
        ingot_file_close(f);
    }
    { /* an empty storage record has no descriptor and flags 0x0800 */
        zrec r[] = {TINY_RECS(tiny_pkl, 314)};
        ASSERT_OK(open_zip(r, 4, &e, NULL));
    }
}

TEST(zip_refused_containers)
{
    ingot_error e;
    ingot_file *f;
    static const uint8_t preview[] = "PYTORCH1\0\0\0\0\0\0\0\0";
    ASSERT_ST(ingot_file_open_buffer(preview, sizeof preview, NULL, &f, &e), INGOT_UNSUPPORTED);
    uint8_t tar[1024] = {0};
    memcpy(tar, "sys_info", 8);
    memcpy(tar + 257, "ustar", 5);
    /* torch <= 0.1.9 tar checkpoints are read (tar_* tests); this header's checksum is wrong */
    ASSERT_ST(ingot_file_open_buffer(tar, sizeof tar, NULL, &f, &e), INGOT_BAD_CHECKSUM);
    ASSERT_U64(e.offset, 148);
    /* A zip prefixed by junk is not a torch file (torch decides by the first four bytes). */
    size_t len;
    uint8_t *b = test_read_file(DATA "tiny_spec.pt", &len);
    uint8_t *p = malloc(len + 4);
    memcpy(p, "JUNK", 4);
    memcpy(p + 4, b, len);
    ASSERT_ST(open_buf(p, len + 4, &f, &e), INGOT_BAD_MAGIC);
    /* Trailing bytes after the EOCD. */
    memcpy(p, b, len);
    p[len] = 0;
    ASSERT_ST(open_buf(p, len + 1, &f, &e), INGOT_BAD_LAYOUT);
    free(p);
    free(b);
}

/* Catalogue #1: every truncation of a zip checkpoint is TRUNCATED (with the format forced, so
 * the probe's need for the first member name does not hide it). */
TEST(zip_truncation_every_byte)
{
    size_t len;
    uint8_t *b = test_read_file(DATA "tiny_spec.pt", &len);
    ASSERT_TRUE(b);
    for (size_t n = 0; n < len; n++) {
        uint8_t *c = malloc(n ? n : 1);
        memcpy(c, b, n);
        ingot_file *f = NULL;
        ingot_error e;
        ingot_status st = open_buf(c, n, &f, &e);
        CHECK(st == INGOT_TRUNCATED, "cut at %zu: %s (%s)", n, ingot_status_name(st), e.msg);
        ingot_file_close(f);
        st = ingot_file_open_buffer(c, n, NULL, &f, &e); /* detected: TRUNCATED or not claimed */
        CHECK(st == INGOT_TRUNCATED || st == INGOT_UNKNOWN_FORMAT, "cut at %zu, probed: %s", n,
              ingot_status_name(st));
        ingot_file_close(f);
        free(c);
    }
    free(b);
}

/* Every single-byte change of tiny.pt either opens (and then every getter and the copy work) or
 * is refused with a defined status; run under ASan/UBSan in the sanitizer build. */
static void flip_all(const char *path, bool zip)
{
    size_t len;
    uint8_t *b = test_read_file(path, &len);
    if (!b) {
        CHECK(0, "cannot read %s", path);
        return;
    }
    int ok = 0, refused = 0;
    static const uint8_t deltas[] = {0x01, 0x80, 0xFF};
    for (size_t i = 0; i < len; i++)
        for (size_t d = 0; d < sizeof deltas; d++) {
            b[i] ^= deltas[d];
            ingot_file *f = NULL;
            ingot_error e;
            ingot_status st = open_buf(b, len, &f, &e);
            if (st == INGOT_OK) {
                ok++;
                for (uint64_t k = 0; k < ingot_file_tensor_count(f); k++) {
                    ingot_tensor_info t;
                    CHECK(ingot_file_tensor_at(f, k, &t) == INGOT_OK, "at");
                    void *c = malloc(t.nbytes ? t.nbytes : 1);
                    CHECK(ingot_file_tensor_copy(f, k, c, t.nbytes, &e) == INGOT_OK,
                          "flip %zu^%02x: copy %s: %s", i, deltas[d], t.name, e.msg);
                    free(c);
                    ingot_status v = ingot_file_tensor_verify(f, k, &e);
                    CHECK(v == INGOT_OK || (zip && v == INGOT_BAD_CHECKSUM), "verify %s",
                          ingot_status_name(v));
                }
                ingot_file_close(f);
            } else {
                refused++;
                CHECK(f == NULL && e.code == st && strcmp(ingot_status_name(st), "UNKNOWN") != 0,
                      "flip %zu: bad error record", i);
            }
            b[i] ^= deltas[d];
        }
    CHECK(ok + refused == (int)(3 * len), "count");
    fprintf(stderr, "    %s: %zu flips, %d opened, %d refused\n", path, 3 * len, ok, refused);
    free(b);
}

TEST(zip_byte_flips) { flip_all(DATA "tiny_spec.pt", true); }
TEST(legacy_byte_flips) { flip_all(FIX "torch_tinynet_legacy.pt", false); }

/* ---------------------------------------------------------------------------------------------
 * Tar checkpoints of torch <= 0.1.9 (tests/data/torch_legacy/tar_legacy.pt, written by
 * gen_torch_legacy.py following torch 1.13's tar loader; its sidecar comes from torch.load)
 * ------------------------------------------------------------------------------------------- */

#define TAR DATA "../torch_legacy/tar_legacy.pt"

typedef struct {
    char name[100];
    uint8_t type;
    uint8_t *data;
    size_t n;
} tmem;

/* A ustar archive of the members (valid checksums), two zero blocks at the end. */
static size_t tar_build(const tmem *m, size_t k, uint8_t *out)
{
    size_t pos = 0;
    for (size_t i = 0; i < k; i++) {
        uint8_t *h = out + pos;
        memset(h, 0, 512);
        memcpy(h, m[i].name, strlen(m[i].name));
        memcpy(h + 100, "0000644", 7);
        memcpy(h + 108, "0000000", 7);
        memcpy(h + 116, "0000000", 7);
        snprintf((char *)h + 124, 12, "%011zo", m[i].n);
        memcpy(h + 136, "00000000000", 11);
        h[156] = m[i].type ? m[i].type : '0';
        memcpy(h + 257, "ustar\0" "00", 8);
        memset(h + 148, ' ', 8);
        unsigned sum = 0;
        for (int j = 0; j < 512; j++) sum += h[j];
        snprintf((char *)h + 148, 8, "%06o", sum);
        pos += 512;
        memcpy(out + pos, m[i].data, m[i].n);
        memset(out + pos + m[i].n, 0, (512 - m[i].n % 512) % 512);
        pos += (m[i].n + 511) / 512 * 512;
    }
    memset(out + pos, 0, 1024);
    return pos + 1024;
}

/* The members of tar_legacy.pt (pointing into b). */
static size_t tar_split(uint8_t *b, size_t len, tmem *m)
{
    size_t k = 0;
    for (size_t pos = 0; pos + 512 <= len && b[pos]; k++) {
        size_t n = (size_t)strtoull((const char *)b + pos + 124, NULL, 8);
        snprintf(m[k].name, sizeof m[k].name, "%s", (const char *)b + pos);
        m[k].type = b[pos + 156];
        m[k].data = b + pos + 512;
        m[k].n = n;
        pos += 512 + (n + 511) / 512 * 512;
    }
    return k;
}

static ingot_status tar_open(const tmem *m, size_t k, ingot_error *e, uint64_t *ntensors)
{
    static uint8_t out[1 << 16];
    size_t n = tar_build(m, k, out);
    ingot_file *f = NULL;
    ingot_status st = open_buf(out, n, &f, e);
    if (ntensors) *ntensors = st == INGOT_OK ? ingot_file_tensor_count(f) : 0;
    ingot_file_close(f);
    return st;
}

static size_t find_member(tmem *m, size_t k, const char *name)
{
    for (size_t i = 0; i < k; i++)
        if (strcmp(m[i].name, name) == 0) return i;
    return k;
}

/* End of the pickle starting at d[0]. */
static size_t pickle_len(const uint8_t *d, size_t n)
{
    uint64_t end = 0;
    ingot_error e;
    bool stopped = false;
    if (ingot__tp_scan_end(d, n, 0, 0, &end, &stopped, &e) != INGOT_OK || !stopped) return 0;
    return (size_t)end;
}

TEST(tar_members_and_layout)
{
    size_t len;
    uint8_t *b = test_read_file(TAR, &len);
    ASSERT_TRUE(b);
    tmem m[8], w[8];
    size_t k = tar_split(b, len, m);
    ASSERT_U64(k, 4);
    ASSERT_STR(m[0].name, "sys_info");
    ingot_error e;
    uint64_t nt;
    ASSERT_OK(tar_open(m, k, &e, &nt)); /* the rebuilt archive opens the same */
    ASSERT_U64(nt, 9);
    size_t ip = find_member(m, k, "pickle"), it = find_member(m, k, "tensors"),
           is = find_member(m, k, "storages");
    ASSERT_TRUE(ip < k && it < k && is < k);
    /* each member missing; one listed twice; a symlink member */
    for (size_t drop = 1; drop < k; drop++) {
        memcpy(w, m, sizeof m);
        memmove(w + drop, w + drop + 1, (k - drop - 1) * sizeof *w);
        ASSERT_ST(tar_open(w, k - 1, &e, NULL), INGOT_BAD_LAYOUT);
        ASSERT_STR(e.where, m[drop].name);
    }
    memcpy(w, m, sizeof m);
    w[k] = m[it];
    ASSERT_ST(tar_open(w, k + 1, &e, NULL), INGOT_DUPLICATE);
    ASSERT_STR(e.where, "tensors");
    memcpy(w, m, sizeof m);
    w[k] = (tmem){"link", '2', m[0].data, 0};
    ASSERT_ST(tar_open(w, k + 1, &e, NULL), INGOT_UNSUPPORTED);
    /* directories and other files are ignored; a pax header renames the next member */
    static uint8_t paxrec[] = "15 path=pickle\n";
    memcpy(w, m, sizeof m);
    w[k] = (tmem){"notes/", '5', m[0].data, 0};
    w[k + 1] = (tmem){"README", '0', (uint8_t *)"hello", 5};
    ASSERT_OK(tar_open(w, k + 2, &e, &nt));
    ASSERT_U64(nt, 9);
    tmem v[8];
    size_t n = 0;
    for (size_t i = 0; i < k; i++) {
        if (i == ip) {
            v[n++] = (tmem){"PaxHeaders/x", 'x', paxrec, 15};
            v[n] = m[i];
            strcpy(v[n++].name, "renamed");
        } else {
            v[n++] = m[i];
        }
    }
    ASSERT_OK(tar_open(v, n, &e, &nt));
    ASSERT_U64(nt, 9);
    /* big-endian writer */
    static uint8_t be[] = "\x80\x02}X\x0d\0\0\0little_endian\x89s.";
    memcpy(w, m, sizeof m);
    w[0].data = be;
    w[0].n = sizeof be - 1;
    ASSERT_ST(tar_open(w, k, &e, NULL), INGOT_UNSUPPORTED);
    /* storages: a count beyond the member, views, trailing bytes */
    static uint8_t buf[8192];
    memcpy(w, m, sizeof m);
    memcpy(buf, "\x80\x02J\x40\x42\x0f\x00.", 8); /* 1000000 */
    size_t c0 = pickle_len(m[is].data, m[is].n);
    ASSERT_TRUE(c0 > 0);
    memcpy(buf + 8, m[is].data + c0, m[is].n - c0);
    w[is].data = buf;
    w[is].n = m[is].n - c0 + 8;
    ASSERT_ST(tar_open(w, k, &e, NULL), INGOT_BAD_COUNT);
    memcpy(w, m, sizeof m);
    memcpy(buf, m[is].data, m[is].n);
    static const uint8_t noviews[] = "\x80\x02]q\x00.";
    ASSERT_MEM(buf + m[is].n - 6, noviews, 6);
    memcpy(buf + m[is].n - 6, "\x80\x02](K\x01K\x02K\x00K\x01ta.", 15);
    w[is].data = buf;
    w[is].n = m[is].n - 6 + 15;
    ASSERT_ST(tar_open(w, k, &e, NULL), INGOT_UNSUPPORTED);
    memcpy(buf, m[is].data, m[is].n);
    memcpy(buf + m[is].n, "xx", 2);
    w[is].n = m[is].n + 2;
    ASSERT_ST(tar_open(w, k, &e, NULL), INGOT_BAD_LAYOUT);
    w[is].n = m[is].n - 7; /* the last storage cut short, no views */
    ASSERT_TRUE(tar_open(w, k, &e, NULL) != INGOT_OK);
    /* tensors: ndim 65, a negative size, the last record dropped (the object pickle then names
     * a key nobody defines), trailing bytes */
    memcpy(w, m, sizeof m);
    memcpy(buf, m[it].data, m[it].n);
    w[it].data = buf;
    size_t p0 = pickle_len(buf, m[it].n);
    size_t r0 = p0 + pickle_len(buf + p0, m[it].n - p0); /* first record's ndim */
    ASSERT_TRUE(p0 > 0 && r0 > p0);
    ASSERT_EQ(buf[r0], 2);
    buf[r0] = 65;
    ASSERT_ST(tar_open(w, k, &e, NULL), INGOT_BAD_NDIMS);
    buf[r0] = 2;
    buf[r0 + 8 + 7] = 0x80; /* size[0] < 0 */
    ASSERT_ST(tar_open(w, k, &e, NULL), INGOT_BAD_SHAPE);
    buf[r0 + 8 + 7] = 0;
    buf[r0 + 8] = 3; /* 3 rows: past the storage */
    ASSERT_ST(tar_open(w, k, &e, NULL), INGOT_BAD_LAYOUT);
    buf[r0 + 8] = 2;
    ASSERT_OK(tar_open(w, k, &e, NULL));
    size_t pos = p0, last = 0;
    for (int i = 0; i < 7; i++) { /* 7 records: 'tied' is fc.weight, 'storage' a storage */
        last = pos;
        pos += pickle_len(buf + pos, m[it].n - pos);
        uint32_t nd = buf[pos];
        pos += 8 + 16 * nd + 8;
    }
    ASSERT_U64(pos, m[it].n);
    ASSERT_MEM(buf, "\x80\x02K\x07.", 5);
    buf[3] = 6;
    w[it].n = last;
    ASSERT_ST(tar_open(w, k, &e, NULL), INGOT_BAD_LAYOUT);
    ASSERT_TRUE(strstr(e.msg, "no tensor or storage has key") != NULL);
    buf[3] = 7;
    memcpy(buf + m[it].n, "x", 1);
    w[it].n = m[it].n + 1;
    ASSERT_ST(tar_open(w, k, &e, NULL), INGOT_BAD_LAYOUT);
    /* the object pickle: trailing bytes after STOP */
    memcpy(w, m, sizeof m);
    memcpy(buf, m[ip].data, m[ip].n);
    buf[m[ip].n] = 'N';
    w[ip].data = buf;
    w[ip].n = m[ip].n + 1;
    ASSERT_ST(tar_open(w, k, &e, NULL), INGOT_BAD_LAYOUT);
    /* a header with a size field that is not octal */
    uint8_t *c = malloc(len);
    memcpy(c, b, len);
    memcpy(c + 124, "00000000x00", 11);
    ingot_file *f = NULL;
    ASSERT_TRUE(open_buf(c, len, &f, &e) != INGOT_OK);
    free(c);
    free(b);
}

TEST(tar_truncation_and_flips)
{
    size_t len;
    uint8_t *b = test_read_file(TAR, &len);
    ASSERT_TRUE(b);
    tmem m[8];
    size_t k = tar_split(b, len, m);
    /* the end-of-archive block follows the last member */
    size_t eoa = (size_t)(m[k - 1].data - b) + (m[k - 1].n + 511) / 512 * 512 + 512;
    for (size_t n = 0; n < len; n++) {
        ingot_file *f = NULL;
        ingot_error e;
        ingot_status st = open_buf(b, n, &f, &e);
        if (n < eoa) /* a prefix of "sys_info\0..." is a truncated tar header */
            CHECK(st == INGOT_TRUNCATED, "cut at %zu: %s (%s)", n, ingot_status_name(st), e.msg);
        else CHECK(st == INGOT_OK, "cut at %zu after the end block: %s", n, ingot_status_name(st));
        ingot_file_close(f);
        if (n % 13) continue;
        const char *tmp = INGOT_BINARY_DIR "/torch_trunc.tar";
        FILE *fp = fopen(tmp, "wb");
        ASSERT_TRUE(fp);
        fwrite(b, 1, n, fp);
        fclose(fp);
        ingot_open_opts o = {0};
        o.io = INGOT_IO_PREAD;
        o.format = "torch";
        ingot_status st2 = ingot_file_open(tmp, &o, &f, &e);
        CHECK(st2 == st, "cut at %zu, pread: %s (%s)", n, ingot_status_name(st2), e.msg);
        ingot_file_close(f);
    }
    remove(INGOT_BINARY_DIR "/torch_trunc.tar");
    free(b);
    flip_all(TAR, false);
}

TEST(legacy_truncation_every_byte)
{
    size_t len;
    uint8_t *b = test_read_file(FIX "torch_tinynet_legacy.pt", &len);
    ASSERT_TRUE(b);
    for (size_t n = 0; n < len; n++) {
        ingot_file *f = NULL;
        ingot_error e;
        ingot_status st = open_buf(b, n, &f, &e);
        CHECK(st == INGOT_TRUNCATED, "cut at %zu: %s (%s)", n, ingot_status_name(st), e.msg);
        ingot_file_close(f);
        if (n % 7) continue;
        /* pread mode reads the pickles in growing steps: same answer */
        const char *tmp = INGOT_BINARY_DIR "/torch_trunc.pt";
        FILE *fp = fopen(tmp, "wb");
        ASSERT_TRUE(fp);
        fwrite(b, 1, n, fp);
        fclose(fp);
        ingot_open_opts o = {0};
        o.io = INGOT_IO_PREAD;
        o.format = "torch";
        ingot_status st2 = ingot_file_open(tmp, &o, &f, &e);
        CHECK(st2 == st, "cut at %zu, pread: %s (%s)", n, ingot_status_name(st2), e.msg);
        ingot_file_close(f);
    }
    remove(INGOT_BINARY_DIR "/torch_trunc.pt");
    free(b);
}

/* Legacy stream rules (spec §5), by editing the fixture's tail and pickles. */
TEST(legacy_rules)
{
    size_t len;
    uint8_t *b = test_read_file(FIX "torch_tinynet_legacy.pt", &len);
    ASSERT_TRUE(b);
    uint8_t *c = malloc(len + 16);
    ingot_file *f;
    ingot_error e;
    memcpy(c, b, len);
    c[len] = 0;
    ASSERT_ST(open_buf(c, len + 1, &f, &e), INGOT_BAD_LAYOUT); /* trailing byte */
    memcpy(c, b, len);
    c[839] ^= 1; /* the first storage's element count (file_offset 847 - 8) */
    ASSERT_ST(open_buf(c, len, &f, &e), INGOT_BAD_SIZE);
    memcpy(c, b, len);
    c[5] ^= 1; /* magic */
    ASSERT_ST(open_buf(c, len, &f, &e), INGOT_BAD_MAGIC);
    memcpy(c, b, len);
    c[18] = 0xEA; /* protocol version 1002 */
    ASSERT_ST(open_buf(c, len, &f, &e), INGOT_BAD_VERSION);
    memcpy(c, b, len);
    c[0x49] = 0x89; /* little_endian NEWTRUE -> NEWFALSE */
    ASSERT_ST(open_buf(c, len, &f, &e), INGOT_UNSUPPORTED);
    /* Key list: a key the pickle never referenced / a referenced key missing / a key twice. */
    const char *keys = (const char *)memmem(b + 600, len - 600, "373496016q", 10);
    ASSERT_TRUE(keys);
    size_t ko = (size_t)((const uint8_t *)keys - b);
    memcpy(c, b, len);
    c[ko] = '9';
    ASSERT_ST(open_buf(c, len, &f, &e), INGOT_BAD_LAYOUT);
    memcpy(c, b, len);
    memcpy(c + ko, "396578608", 9); /* the second key, listed twice */
    ASSERT_ST(open_buf(c, len, &f, &e), INGOT_DUPLICATE);
    free(c);
    free(b);
}

TEST(pread_matches_mmap_for_views)
{
    /* covered for every vector by vectors_match_sidecars; here the strided copy in pread mode */
    ingot_file *f;
    ingot_error e;
    ingot_open_opts o = {0};
    o.io = INGOT_IO_PREAD;
    ASSERT_OK(ingot_file_open(DATA "views_legacy.pt", &o, &f, &e));
    ingot_tensor_info t;
    ASSERT_OK(ingot_file_tensor_find(f, "col_slice", &t));
    ASSERT_TRUE(t.flags & INGOT_TENSOR_NOT_MAPPED);
    ASSERT_TRUE(t.data == NULL);
    float v[8];
    ASSERT_OK(ingot_file_tensor_copy(f, t.index, v, sizeof v, &e));
    for (int i = 0; i < 4; i++) ASSERT_TRUE(v[2 * i] == (float)(6 * i + 2) && v[2 * i + 1] == (float)(6 * i + 3));
    ingot_file_close(f);
}

/* OOM loop (RELIABILITY.md §3): allocation N fails, N = 0.. until open succeeds; every failure is
 * NOMEM and leaves nothing allocated (ASan's leak check in the sanitizer build). */
typedef struct {
    long left, live;
} oom_ctx;

static void *oom_alloc(void *ctx, size_t n, size_t align)
{
    oom_ctx *c = ctx;
    (void)align;
    if (c->left-- == 0) return NULL;
    c->live++;
    return malloc(n);
}

static void oom_free(void *ctx, void *p, size_t n)
{
    (void)n;
    ((oom_ctx *)ctx)->live--;
    free(p);
}

TEST(oom_loop)
{
    static const char *const files[] = {DATA "checkpoint.pt", DATA "checkpoint_legacy.pt",
                                        DATA "views.pt", DATA "../torch_legacy/onmt_legacy.pt",
                                        DATA "../torch_legacy/tar_legacy.pt"};
    for (size_t k = 0; k < 5; k++) {
        size_t len;
        uint8_t *b = test_read_file(files[k], &len);
        ASSERT_TRUE(b);
        for (long n = 0;; n++) {
            oom_ctx c = {n, 0};
            ingot_allocator a = {oom_alloc, oom_free, &c};
            ingot_open_opts o = {0};
            o.allocator = &a;
            ingot_file *f = NULL;
            ingot_error e;
            ingot_status st = ingot_file_open_buffer(b, len, &o, &f, &e);
            if (st == INGOT_OK) {
                CHECK(ingot_file_tensor_count(f) > 0, "tensors");
                ingot_file_close(f);
                CHECK(c.live == 0, "%s: %ld blocks left after close", files[k], c.live);
                fprintf(stderr, "    %s: opened after %ld failing allocations\n", files[k], n);
                break;
            }
            CHECK(st == INGOT_NOMEM, "%s: allocation %ld failed: %s (%s)", files[k], n,
                  ingot_status_name(st), e.msg);
            CHECK(c.live == 0, "%s: allocation %ld failed, %ld blocks leaked", files[k], n, c.live);
            if (n > 100000) break;
        }
        free(b);
    }
}

static int run(const char *cmd)
{
    int r = system(cmd);
    return r;
}

TEST(cli_smoke)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s info --json %sviews.pt | grep -q '\"stride\": \\[1, 6\\]'",
             INGOT_CLI, DATA);
    ASSERT_EQ(run(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s verify %stiny_spec.pt > /dev/null", INGOT_CLI, DATA);
    ASSERT_EQ(run(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s convert %scheckpoint.pt %s/torch_ckpt.ingot > /dev/null",
             INGOT_CLI, DATA, INGOT_BINARY_DIR);
    ASSERT_EQ(run(cmd), 0);
    /* The converted file holds the same tensors (C order) and metadata. */
    ingot_file *a, *b;
    ingot_error e;
    ASSERT_OK(ingot_file_open(DATA "checkpoint.pt", NULL, &a, &e));
    ASSERT_OK(ingot_file_open(INGOT_BINARY_DIR "/torch_ckpt.ingot", NULL, &b, &e));
    ASSERT_U64(ingot_file_tensor_count(a), ingot_file_tensor_count(b));
    ASSERT_U64(ingot_file_meta_count(a), ingot_file_meta_count(b));
    for (uint64_t i = 0; i < ingot_file_tensor_count(a); i++) {
        ingot_tensor_info t, u;
        ASSERT_OK(ingot_file_tensor_at(a, i, &t));
        ASSERT_OK(ingot_file_tensor_find(b, t.name, &u));
        char h1[65], h2[65];
        ASSERT_TRUE(copy_sha(a, i, h1) && copy_sha(b, u.index, h2));
        ASSERT_STR(h1, h2);
    }
    int64_t epoch;
    ASSERT_OK(ingot_file_meta_get_i64(b, "epoch", &epoch));
    ASSERT_EQ(epoch, 7);
    ingot_file_close(a);
    ingot_file_close(b);
    remove(INGOT_BINARY_DIR "/torch_ckpt.ingot");
    /* Placeholders in info: the class and where (key path, byte offset of the opcode). */
    snprintf(cmd, sizeof cmd,
             "%s info %s../torch_legacy/onmt_legacy.pt | grep -q '^  opt  *inert placeholder "
             "for an object made by argparse.Namespace (NEWOBJ at byte [0-9]*)'",
             INGOT_CLI, DATA);
    ASSERT_EQ(run(cmd), 0);
    snprintf(cmd, sizeof cmd,
             "%s info --json %s../torch_legacy/onmt_legacy.pt | grep -q '{\"name\": \"opt\", "
             "\"reason\": \"inert placeholder for an object made by argparse.Namespace "
             "(NEWOBJ at byte [0-9]*): never imported or called\", \"offset\": [0-9]*}'",
             INGOT_CLI, DATA);
    ASSERT_EQ(run(cmd), 0);
    /* and the tensors around them convert */
    snprintf(cmd, sizeof cmd, "%s convert %s../torch_legacy/onmt_legacy.pt %s/onmt.safetensors "
             "> /dev/null 2>&1 && %s info %s/onmt.safetensors | grep -q 'model/weight_ih_l0'",
             INGOT_CLI, DATA, INGOT_BINARY_DIR, INGOT_CLI, INGOT_BINARY_DIR);
    ASSERT_EQ(run(cmd), 0);
    remove(INGOT_BINARY_DIR "/onmt.safetensors");
}

RUN_TESTS(T(fixtures_match_sidecars), T(vectors_match_sidecars), T(spec_hex_example),
          T(views_and_tied_weights), T(zip_builder_round_trip), T(zip_rules),
          T(zip_storage_records_by_key),
          T(zip_refused_containers), T(zip_truncation_every_byte), T(zip_byte_flips),
          T(legacy_byte_flips), T(tar_members_and_layout), T(tar_truncation_and_flips),
          T(legacy_truncation_every_byte), T(legacy_rules),
          T(pread_matches_mmap_for_views), T(oom_loop), T(cli_smoke))
