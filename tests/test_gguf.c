/* test_gguf.c - the GGUF reader and writer against the fixtures written by gguf-py and llama.cpp
 * (../shared/fixtures/gguf, each with an .expected.json sidecar): names, dtypes, shapes
 * (outermost first; the sidecar's `ne` is the stored innermost-first order), sha256 of each
 * tensor's stored bytes, every metadata value (32k-token vocab arrays included, nested arrays as
 * BYTES), in buffer, mmap and pread mode. Then the writer: byte-exact rewrite of every fixture,
 * GGUF -> .ingot -> GGUF round trips, alignment, lossy metadata notices, refused tensors.
 * Hostile inputs are in test_gguf_malformed.c.
 */
#include <json-c/json.h>

#include "convert_mem.h"
#include "harness.h"
#include "files.h"
#include "sha256.h"

#define FIX INGOT_FIXTURES "/gguf/"

static const char *const fixtures[] = {
    "ggml-vocab-bert-bge.gguf", "ggml-vocab-llama-spm.gguf", "gguf_align64.gguf",
    "gguf_all_types.gguf",      "gguf_edge_shapes.gguf",     "gguf_kquants_random_blocks.gguf",
    "gguf_nested_arrays.gguf",  "gguf_zero_outer_dim.gguf",
};
#define N_FIX (sizeof fixtures / sizeof fixtures[0])

static uint32_t ld32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t ld64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

/* ---- sidecar helpers ---- */

static json_object *jget(json_object *o, const char *k)
{
    json_object *v = NULL;
    return json_object_object_get_ex(o, k, &v) ? v : NULL;
}

static ingot_meta_type meta_type_of(const char *gguf_name)
{
    static const struct { const char *n; ingot_meta_type t; } map[] = {
        {"UINT8", INGOT_META_U8},   {"INT8", INGOT_META_I8},     {"UINT16", INGOT_META_U16},
        {"INT16", INGOT_META_I16},  {"UINT32", INGOT_META_U32},  {"INT32", INGOT_META_I32},
        {"FLOAT32", INGOT_META_F32}, {"BOOL", INGOT_META_BOOL},  {"STRING", INGOT_META_STRING},
        {"UINT64", INGOT_META_U64}, {"INT64", INGOT_META_I64},   {"FLOAT64", INGOT_META_F64},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(map[i].n, gguf_name)) return map[i].t;
    return INGOT_META_INVALID;
}

/* One numeric/bool element in host order (as meta_array_read gives it) against a JSON value. */
static bool elem_eq(ingot_meta_type t, const uint8_t *p, json_object *j)
{
    switch (t) {
    case INGOT_META_U8: return p[0] == json_object_get_uint64(j);
    case INGOT_META_I8: return (int8_t)p[0] == json_object_get_int64(j);
    case INGOT_META_U16: { uint16_t v; memcpy(&v, p, 2); return v == json_object_get_uint64(j); }
    case INGOT_META_I16: { int16_t v; memcpy(&v, p, 2); return v == json_object_get_int64(j); }
    case INGOT_META_U32: { uint32_t v; memcpy(&v, p, 4); return v == json_object_get_uint64(j); }
    case INGOT_META_I32: { int32_t v; memcpy(&v, p, 4); return v == json_object_get_int64(j); }
    case INGOT_META_U64: { uint64_t v; memcpy(&v, p, 8); return v == json_object_get_uint64(j); }
    case INGOT_META_I64: { int64_t v; memcpy(&v, p, 8); return v == json_object_get_int64(j); }
    case INGOT_META_F32: { float v; memcpy(&v, p, 4); return (double)v == json_object_get_double(j); }
    case INGOT_META_F64: { double v; memcpy(&v, p, 8); return v == json_object_get_double(j); }
    case INGOT_META_BOOL: return p[0] == (json_object_get_boolean(j) ? 1 : 0);
    default: return false;
    }
}

static bool str_eq(const char *s, size_t len, json_object *j)
{
    return json_object_is_type(j, json_type_string) &&
           (size_t)json_object_get_string_len(j) == len &&
           memcmp(json_object_get_string(j), s, len) == 0;
}

/* Array element k of entry m against JSON value j. */
static bool array_elem_eq(const ingot_file *f, const ingot_meta_info *m, uint64_t k,
                          json_object *j)
{
    if (m->type == INGOT_META_STRING) {
        const char *s;
        size_t len;
        if (ingot_file_meta_array_string(f, m->index, k, &s, &len) != INGOT_OK) return false;
        return str_eq(s, len, j);
    }
    uint8_t v[8];
    if (ingot_file_meta_array_read(f, m->index, m->type, k, 1, v) != INGOT_OK) return false;
    return elem_eq(m->type, v, j);
}

/* Nested arrays: walks the BYTES encoding (u32 elem_type, u64 count, items) against a sidecar
 * node {item_type, count, items}. */
static const char *const vt_names[13] = {"UINT8", "INT8",  "UINT16", "INT16",  "UINT32",
                                         "INT32", "FLOAT32", "BOOL", "STRING", "ARRAY",
                                         "UINT64", "INT64", "FLOAT64"};
static const uint8_t vt_size[13] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};

static bool nested_eq(const uint8_t *b, size_t n, size_t *at, const char *item_type,
                      uint64_t count, json_object *items)
{
    if (*at + 12 > n) return false;
    uint32_t et = ld32(b + *at);
    uint64_t c = ld64(b + *at + 4);
    *at += 12;
    if (et >= 13 || strcmp(vt_names[et], item_type) || c != count ||
        (uint64_t)json_object_array_length(items) != c)
        return false;
    for (uint64_t k = 0; k < c; k++) {
        json_object *j = json_object_array_get_idx(items, (size_t)k);
        if (et == 9) {
            if (!nested_eq(b, n, at, json_object_get_string(jget(j, "item_type")),
                           (uint64_t)json_object_get_int64(jget(j, "count")), jget(j, "items")))
                return false;
        } else if (et == 8) {
            if (*at + 8 > n) return false;
            uint64_t len = ld64(b + *at);
            if (*at + 8 + len > n || !str_eq((const char *)b + *at + 8, (size_t)len, j))
                return false;
            *at += 8 + (size_t)len;
        } else {
            uint8_t v[8];
            if (*at + vt_size[et] > n) return false;
            memcpy(v, b + *at, vt_size[et]); /* little-endian host */
            if (!elem_eq(meta_type_of(vt_names[et]), v, j)) return false;
            *at += vt_size[et];
        }
    }
    return true;
}

/* sha256 of an array's raw GGUF payload rebuilt from the API (elements LE; strings with their
 * u64 length prefixes), compared with the sidecar's payload_sha256. */
static bool payload_sha_eq(const ingot_file *f, const ingot_meta_info *m, const char *want)
{
    test_sha256 h;
    test_sha256_init(&h);
    uint8_t buf[4096];
    uint32_t esz = ingot_meta_type_size(m->type);
    for (uint64_t k = 0; k < m->count;) {
        if (m->type == INGOT_META_STRING) {
            const char *s;
            size_t len;
            if (ingot_file_meta_array_string(f, m->index, k, &s, &len) != INGOT_OK) return false;
            uint64_t l = len;
            test_sha256_update(&h, &l, 8);
            test_sha256_update(&h, s, len);
            k++;
        } else {
            uint64_t n = m->count - k < sizeof buf / esz ? m->count - k : sizeof buf / esz;
            if (ingot_file_meta_array_read(f, m->index, m->type, k, n, buf) != INGOT_OK)
                return false;
            test_sha256_update(&h, buf, (size_t)(n * esz));
            k += n;
        }
    }
    uint8_t d[32];
    char hex[65];
    test_sha256_final(&h, d);
    for (int i = 0; i < 32; i++) sprintf(hex + 2 * i, "%02x", d[i]);
    return strcmp(hex, want) == 0;
}

static void check_meta(const char *fx, const ingot_file *f, json_object *meta)
{
    uint64_t idx = 0;
    CHECK(ingot_file_meta_count(f) == (uint64_t)json_object_object_length(meta),
          "%s: meta count %" PRIu64, fx, ingot_file_meta_count(f));
    json_object_object_foreach(meta, key, jv)
    {
        ingot_meta_info m, at;
        if (ingot_file_meta_find(f, key, &m) != INGOT_OK) {
            CHECK(0, "%s: key %s not found", fx, key);
            idx++;
            continue;
        }
        CHECK(m.index == idx, "%s: %s at index %" PRIu64 ", want %" PRIu64, fx, key, m.index, idx);
        CHECK(ingot_file_meta_at(f, idx, &at) == INGOT_OK && at.key_len == strlen(key) &&
                  memcmp(at.key, key, at.key_len) == 0,
              "%s: meta_at(%" PRIu64 ") is not %s", fx, idx, key);
        idx++;
        const char *type = json_object_get_string(jget(jv, "type"));
        json_object *val = jget(jv, "value");
        if (strcmp(type, "ARRAY") != 0) {
            ingot_meta_type want = meta_type_of(type);
            CHECK(m.type == want && !m.is_array, "%s: %s type %d, want %d", fx, key, m.type, want);
            bool ok;
            if (want == INGOT_META_STRING) {
                ok = str_eq(m.data, (size_t)m.count, val);
            } else if (want == INGOT_META_F32 || want == INGOT_META_F64) {
                ok = m.v.f == json_object_get_double(val);
            } else if (want == INGOT_META_BOOL) {
                ok = m.v.b == json_object_get_boolean(val);
            } else if (want == INGOT_META_I8 || want == INGOT_META_I16 || want == INGOT_META_I32 ||
                       want == INGOT_META_I64) {
                ok = m.v.i == json_object_get_int64(val);
            } else {
                ok = m.v.u == json_object_get_uint64(val);
            }
            CHECK(ok, "%s: %s value differs", fx, key);
            continue;
        }
        const char *item = json_object_get_string(jget(jv, "item_type"));
        uint64_t count = (uint64_t)json_object_get_int64(jget(jv, "count"));
        if (!strcmp(item, "ARRAY")) { /* nested: BYTES holding the GGUF encoding */
            CHECK(m.type == INGOT_META_BYTES && !m.is_array, "%s: %s not BYTES", fx, key);
            const uint8_t *b = m.data;
            size_t at_ = 4;
            CHECK(m.count >= 16 && ld32(b) == 9 &&
                      nested_eq(b, (size_t)m.count, &at_, "ARRAY", count, val) &&
                      at_ == m.count,
                  "%s: nested %s differs", fx, key);
            continue;
        }
        CHECK(m.is_array && m.type == meta_type_of(item) && m.count == count,
              "%s: %s array type %d count %" PRIu64, fx, key, m.type, m.count);
        uint64_t c2 = 0;
        CHECK(ingot_file_meta_get_array(f, key, m.type, &c2) == INGOT_OK && c2 == count,
              "%s: get_array %s", fx, key);
        if (val) {
            for (uint64_t k = 0; k < count; k++)
                CHECK(array_elem_eq(f, &m, k, json_object_array_get_idx(val, (size_t)k)),
                      "%s: %s[%" PRIu64 "] differs", fx, key, k);
        } else {
            json_object *head = jget(jv, "head"), *tail = jget(jv, "tail");
            size_t nh = json_object_array_length(head), nt = json_object_array_length(tail);
            for (size_t k = 0; k < nh; k++)
                CHECK(array_elem_eq(f, &m, k, json_object_array_get_idx(head, k)),
                      "%s: %s head[%zu] differs", fx, key, k);
            for (size_t k = 0; k < nt; k++)
                CHECK(array_elem_eq(f, &m, count - nt + k, json_object_array_get_idx(tail, k)),
                      "%s: %s tail[%zu] differs", fx, key, k);
            CHECK(payload_sha_eq(f, &m, json_object_get_string(jget(jv, "payload_sha256"))),
                  "%s: %s payload sha256 differs", fx, key);
        }
    }
}

static void check_tensors(const char *fx, const ingot_file *f, json_object *tensors, bool mapped)
{
    size_t n = json_object_array_length(tensors);
    CHECK(ingot_file_tensor_count(f) == n, "%s: %" PRIu64 " tensors, want %zu", fx,
          ingot_file_tensor_count(f), n);
    for (size_t i = 0; i < n && i < ingot_file_tensor_count(f); i++) {
        json_object *jt = json_object_array_get_idx(tensors, i);
        ingot_tensor_info t, t2;
        if (ingot_file_tensor_at(f, i, &t) != INGOT_OK) {
            CHECK(0, "%s: tensor_at %zu", fx, i);
            continue;
        }
        const char *name = json_object_get_string(jget(jt, "name"));
        CHECK(!strcmp(t.name, name) && t.name_len == strlen(name), "%s: tensor %zu name %s", fx,
              i, t.name);
        CHECK(ingot_file_tensor_find(f, name, &t2) == INGOT_OK && t2.index == i,
              "%s: find %s", fx, name);
        CHECK(!strcmp(ingot_dtype_name(t.dtype), json_object_get_string(jget(jt, "dtype"))),
              "%s: %s dtype %s", fx, name, ingot_dtype_name(t.dtype));
        json_object *shape = jget(jt, "shape"), *ne = jget(jt, "ne");
        size_t r = json_object_array_length(shape);
        CHECK(t.rank == r, "%s: %s rank %u want %zu", fx, name, t.rank, r);
        for (size_t d = 0; d < r && d < t.rank; d++) {
            uint64_t s = (uint64_t)json_object_get_int64(json_object_array_get_idx(shape, d));
            uint64_t e = (uint64_t)json_object_get_int64(json_object_array_get_idx(ne, r - 1 - d));
            CHECK(t.shape[d] == s && t.shape[d] == e, "%s: %s shape[%zu] %" PRIu64, fx, name, d,
                  t.shape[d]);
        }
        CHECK(t.nelem == (uint64_t)json_object_get_int64(jget(jt, "n_elements")) &&
                  t.nbytes == (uint64_t)json_object_get_int64(jget(jt, "nbytes")) &&
                  t.offset == (uint64_t)json_object_get_int64(jget(jt, "file_offset")),
              "%s: %s nelem/nbytes/offset %" PRIu64 "/%" PRIu64 "/%" PRIu64, fx, name, t.nelem,
              t.nbytes, t.offset);
        CHECK((t.flags & ~(uint32_t)INGOT_TENSOR_NOT_MAPPED) == 0, "%s: %s flags %x", fx, name,
              t.flags);
        const char *want = json_object_get_string(jget(jt, "sha256"));
        char hex[65];
        uint8_t *buf = malloc(t.nbytes ? (size_t)t.nbytes : 1);
        CHECK(ingot_file_tensor_read(f, i, 0, buf, (size_t)t.nbytes, NULL) == INGOT_OK,
              "%s: read %s", fx, name);
        test_sha256_hex(buf, (size_t)t.nbytes, hex);
        CHECK(!strcmp(hex, want), "%s: %s sha256 of read bytes %s", fx, name, hex);
        if (mapped && t.nbytes) {
            CHECK(t.data != NULL, "%s: %s not mapped", fx, name);
            if (t.data) {
                test_sha256_hex(t.data, (size_t)t.nbytes, hex);
                CHECK(!strcmp(hex, want), "%s: %s sha256 of the view %s", fx, name, hex);
            }
        }
        memset(buf, 0xEE, t.nbytes);
        CHECK(ingot_file_tensor_copy(f, i, buf, (size_t)t.nbytes, NULL) == INGOT_OK,
              "%s: copy %s", fx, name);
        test_sha256_hex(buf, (size_t)t.nbytes, hex);
        CHECK(!strcmp(hex, want), "%s: %s sha256 of the copy %s", fx, name, hex);
        free(buf);
    }
}

static json_object *sidecar(const char *fx)
{
    char path[512];
    snprintf(path, sizeof path, FIX "%s.expected.json", fx);
    return json_object_from_file(path);
}

static void check_fixture(const char *fx, int mode)
{
    char path[512];
    snprintf(path, sizeof path, FIX "%s", fx);
    json_object *j = sidecar(fx);
    if (!j) {
        CHECK(0, "%s: no sidecar", fx);
        return;
    }
    size_t n = 0;
    uint8_t *img = test_read_file(path, &n);
    ingot_file *f = NULL;
    ingot_error e;
    ingot_open_opts o = {.io = mode == 2 ? INGOT_IO_PREAD : INGOT_IO_MMAP};
    ingot_status st = mode == 0 ? ingot_file_open_buffer(img, n, &o, &f, &e)
                                : ingot_file_open(path, &o, &f, &e);
    CHECK(st == INGOT_OK, "%s mode %d: open %s: %s", fx, mode, ingot_status_name(st),
          st ? e.msg : "");
    if (st == INGOT_OK) {
        json_object *g = jget(j, "gguf");
        CHECK(!strcmp(ingot_file_format(f), "gguf"), "%s: format", fx);
        char ver[16];
        snprintf(ver, sizeof ver, "%d.0", (int)json_object_get_int(jget(g, "version")));
        CHECK(!strcmp(ingot_file_version(f), ver), "%s: version %s", fx, ingot_file_version(f));
        CHECK(ingot_file_alignment(f) == (uint64_t)json_object_get_int(jget(g, "alignment")),
              "%s: alignment %" PRIu64, fx, ingot_file_alignment(f));
        CHECK(ingot_file_size(f) == (uint64_t)json_object_get_int64(jget(j, "file_size")),
              "%s: size", fx);
        check_meta(fx, f, jget(j, "metadata"));
        check_tensors(fx, f, jget(j, "tensors"), mode != 2);
        CHECK(ingot_file_verify(f, 1, &e) == INGOT_OK, "%s: verify: %s", fx, e.msg);
        CHECK(ingot_file_verify(f, 3, &e) == INGOT_OK, "%s: verify x3: %s", fx, e.msg);
    }
    ingot_file_close(f);
    free(img);
    json_object_put(j);
}

TEST(test_gguf_fixtures_buffer)
{
    for (size_t i = 0; i < N_FIX; i++) check_fixture(fixtures[i], 0);
}
TEST(test_gguf_fixtures_mmap)
{
    for (size_t i = 0; i < N_FIX; i++) check_fixture(fixtures[i], 1);
}
TEST(test_gguf_fixtures_pread)
{
    for (size_t i = 0; i < N_FIX; i++) check_fixture(fixtures[i], 2);
}

/* ---- writer ---- */

/* Copies metadata entry m of f into w with the same type (what `ingot convert` does). */
typedef struct {
    int count;
    char last[512];
} notices;

static void on_notice(void *ctx, const char *msg)
{
    notices *n = ctx;
    n->count++;
    snprintf(n->last, sizeof n->last, "%s", msg);
}

/* Writes every tensor and metadata entry of f with a new writer of `format` into memory. */
static ingot_status convert_mem(const ingot_file *f, const char *format, uint32_t align,
                                notices *nt, uint8_t **out, size_t *n, ingot_error *e)
{
    test_convert_opts o = {.format = format,
                           .alignment = align,
                           .notice = nt ? on_notice : NULL,
                           .notice_ctx = nt};
    void *p = NULL;
    ingot_status st = test_convert_mem(f, &o, &p, n, e);
    if (st) return st;
    *out = malloc(*n ? *n : 1);
    memcpy(*out, p, *n);
    ingot_writer_free_mem(NULL, p, *n);
    return INGOT_OK;
}

TEST(test_gguf_rewrite_is_byte_exact)
{
    for (size_t i = 0; i < N_FIX; i++) {
        char path[512];
        snprintf(path, sizeof path, FIX "%s", fixtures[i]);
        size_t n = 0, m = 0;
        uint8_t *img = test_read_file(path, &n), *out = NULL;
        ingot_file *f;
        ingot_error e;
        ASSERT_OK(ingot_file_open_buffer(img, n, NULL, &f, &e));
        notices nt = {0};
        ingot_status st = convert_mem(f, "gguf", 0, &nt, &out, &m, &e);
        CHECK(st == INGOT_OK, "%s: %s %s", fixtures[i], ingot_status_name(st), e.msg);
        CHECK(nt.count == 0, "%s: %d notices (%s)", fixtures[i], nt.count, nt.last);
        if (!st) {
            size_t d = 0;
            while (d < n && d < m && img[d] == out[d]) d++;
            CHECK(m == n && d == n, "%s: rewrite differs at byte %zu (%zu vs %zu bytes)",
                  fixtures[i], d, m, n);
        }
        free(out);
        ingot_file_close(f);
        free(img);
    }
}

/* Same metadata (by key: type, count, values) and tensors (name, dtype, shape, bytes). */
static void same_content(const char *fx, const ingot_file *a, const ingot_file *b)
{
    CHECK(ingot_file_meta_count(a) == ingot_file_meta_count(b), "%s: meta count", fx);
    for (uint64_t i = 0; i < ingot_file_meta_count(a); i++) {
        ingot_meta_info x, y;
        ingot_file_meta_at(a, i, &x);
        char key[1024];
        snprintf(key, sizeof key, "%.*s", (int)x.key_len, x.key);
        if (ingot_file_meta_find(b, key, &y) != INGOT_OK) {
            CHECK(0, "%s: %s lost", fx, key);
            continue;
        }
        bool ok = x.type == y.type && x.is_array == y.is_array && x.count == y.count;
        if (ok && (x.type == INGOT_META_STRING || x.type == INGOT_META_BYTES) && !x.is_array)
            ok = memcmp(x.data, y.data, (size_t)x.count) == 0;
        else if (ok && !x.is_array)
            ok = memcmp(&x.v, &y.v, sizeof x.v) == 0 || (x.type == INGOT_META_BOOL && x.v.b == y.v.b);
        for (uint64_t k = 0; ok && x.is_array && k < x.count; k++) {
            if (x.type == INGOT_META_STRING) {
                const char *s1, *s2;
                size_t l1, l2;
                ingot_file_meta_array_string(a, x.index, k, &s1, &l1);
                ingot_file_meta_array_string(b, y.index, k, &s2, &l2);
                ok = l1 == l2 && memcmp(s1, s2, l1) == 0;
            } else {
                uint8_t v1[8], v2[8];
                ingot_file_meta_array_read(a, x.index, x.type, k, 1, v1);
                ingot_file_meta_array_read(b, y.index, y.type, k, 1, v2);
                ok = memcmp(v1, v2, ingot_meta_type_size(x.type)) == 0;
            }
        }
        CHECK(ok, "%s: %s differs", fx, key);
    }
    CHECK(ingot_file_tensor_count(a) == ingot_file_tensor_count(b), "%s: tensor count", fx);
    for (uint64_t i = 0; i < ingot_file_tensor_count(a); i++) {
        ingot_tensor_info x, y;
        ingot_file_tensor_at(a, i, &x);
        if (ingot_file_tensor_find(b, x.name, &y) != INGOT_OK) {
            CHECK(0, "%s: %s lost", fx, x.name);
            continue;
        }
        CHECK(x.dtype == y.dtype && x.rank == y.rank &&
                  memcmp(x.shape, y.shape, sizeof x.shape) == 0 && x.nbytes == y.nbytes &&
                  (!x.nbytes || memcmp(x.data, y.data, (size_t)x.nbytes) == 0),
              "%s: tensor %s differs", fx, x.name);
    }
}

TEST(test_gguf_roundtrip_via_ingot)
{
    for (size_t i = 0; i < N_FIX; i++) {
        char path[512];
        snprintf(path, sizeof path, FIX "%s", fixtures[i]);
        size_t n = 0, n1 = 0, n2 = 0;
        uint8_t *img = test_read_file(path, &n), *ing = NULL, *back = NULL;
        ingot_file *f, *fi = NULL, *fb = NULL;
        ingot_error e;
        ASSERT_OK(ingot_file_open_buffer(img, n, NULL, &f, &e));
        ingot_status st = convert_mem(f, "ingot", 0, NULL, &ing, &n1, &e);
        CHECK(st == INGOT_OK, "%s -> ingot: %s %s", fixtures[i], ingot_status_name(st), e.msg);
        if (!st) st = ingot_file_open_buffer(ing, n1, NULL, &fi, &e);
        CHECK(st == INGOT_OK && !strcmp(ingot_file_format(fi), "ingot"), "%s: open .ingot",
              fixtures[i]);
        if (!st) same_content(fixtures[i], f, fi);
        notices nt = {0};
        if (!st) st = convert_mem(fi, "gguf", 0, &nt, &back, &n2, &e);
        CHECK(st == INGOT_OK, "%s -> ingot -> gguf: %s %s", fixtures[i], ingot_status_name(st),
              e.msg);
        CHECK(nt.count == 0, "%s: %d notices (%s)", fixtures[i], nt.count, nt.last);
        if (!st) st = ingot_file_open_buffer(back, n2, NULL, &fb, &e);
        CHECK(st == INGOT_OK, "%s: reopen: %s", fixtures[i], e.msg);
        if (!st) {
            same_content(fixtures[i], f, fb);
            CHECK(ingot_file_alignment(fb) == ingot_file_alignment(f), "%s: alignment",
                  fixtures[i]);
        }
        ingot_file_close(fb);
        ingot_file_close(fi);
        ingot_file_close(f);
        free(back);
        free(ing);
        free(img);
    }
}

/* Builds a small GGUF in memory with the given writer options/tensors. */
static ingot_status write_small(uint32_t align, const char *opt_align, bool kv_align,
                                uint32_t kv_value, notices *nt, uint8_t **out, size_t *n,
                                ingot_error *e)
{
    ingot_writer_opts wo = {.format = "gguf", .alignment = align, .no_fsync = true};
    ingot_writer *w;
    ingot_status st = ingot_writer_new(&wo, &w, e);
    if (st) return st;
    ingot_writer_set_notice(w, on_notice, nt);
    if (opt_align) st = ingot_writer_set_option(w, "alignment", opt_align, e);
    if (!st) st = ingot_writer_set_string(w, "general.architecture", "x");
    if (!st && kv_align) st = ingot_writer_set_u32(w, "general.alignment", kv_value);
    static const float a[3] = {1, 2, 3};
    static const uint16_t b[5] = {1, 2, 3, 4, 5};
    uint64_t s3 = 3, s5[2] = {5, 1};
    if (!st) st = ingot_writer_add_tensor(w, "a", INGOT_DTYPE_F32, 1, &s3, NULL, a, e);
    if (!st) st = ingot_writer_add_tensor(w, "b", INGOT_DTYPE_F16, 2, s5, NULL, b, e);
    if (!st) st = ingot_writer_begin_mem(w, e);
    void *p = NULL;
    if (!st) st = ingot_writer_commit_mem(w, &p, n, e);
    ingot_writer_free(w);
    if (st) return st;
    *out = malloc(*n);
    memcpy(*out, p, *n);
    ingot_writer_free_mem(NULL, p, *n);
    return INGOT_OK;
}

TEST(test_gguf_writer_alignment)
{
    struct {
        uint32_t opt;
        const char *opt_s;
        bool kv;
        uint32_t kv_v, want;
        int notices;
        bool appended;
    } rows[] = {
        {0, NULL, false, 0, 32, 0, false},   /* default: no general.alignment written */
        {64, NULL, false, 0, 64, 0, true},   /* writer option: KV appended */
        {0, "128", false, 0, 128, 0, true},  /* format option */
        {0, NULL, true, 16, 16, 0, false},   /* the KV sets it */
        {64, NULL, true, 16, 64, 1, false},  /* explicit wins, KV rewritten, notice */
        {0, NULL, true, 32, 32, 0, false},   /* explicit default KV kept */
    };
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        notices nt = {0};
        uint8_t *img = NULL;
        size_t n = 0;
        ingot_error e;
        ingot_status st = write_small(rows[r].opt, rows[r].opt_s, rows[r].kv, rows[r].kv_v, &nt,
                                      &img, &n, &e);
        CHECK(st == INGOT_OK, "row %zu: %s %s", r, ingot_status_name(st), e.msg);
        if (st) continue;
        ingot_file *f;
        st = ingot_file_open_buffer(img, n, NULL, &f, &e);
        CHECK(st == INGOT_OK, "row %zu: reopen %s", r, e.msg);
        if (!st) {
            CHECK(ingot_file_alignment(f) == rows[r].want, "row %zu: alignment %" PRIu64, r,
                  ingot_file_alignment(f));
            uint32_t v = 0;
            ingot_status g = ingot_file_meta_get_u32(f, "general.alignment", &v);
            bool has = rows[r].kv || rows[r].appended;
            CHECK(has ? g == INGOT_OK && v == rows[r].want : g == INGOT_NOT_FOUND,
                  "row %zu: general.alignment %s %u", r, ingot_status_name(g), v);
            if (rows[r].appended) {
                ingot_meta_info m;
                ingot_file_meta_find(f, "general.alignment", &m);
                CHECK(m.index == ingot_file_meta_count(f) - 1, "row %zu: not appended", r);
            }
            ingot_tensor_info t;
            for (uint64_t i = 0; i < 2; i++) {
                ingot_file_tensor_at(f, i, &t);
                CHECK(t.offset % rows[r].want == 0, "row %zu: offset %" PRIu64, r, t.offset);
            }
            CHECK(n % rows[r].want == 0, "row %zu: size %zu not padded", r, n);
            CHECK(ingot_file_verify(f, 1, &e) == INGOT_OK, "row %zu: verify %s", r, e.msg);
        }
        CHECK(nt.count == rows[r].notices, "row %zu: %d notices", r, nt.count);
        ingot_file_close(f);
        free(img);
    }
    /* bad values */
    ingot_writer_opts wo = {.format = "gguf"};
    ingot_writer *w;
    ingot_error e;
    ASSERT_OK(ingot_writer_new(&wo, &w, &e));
    ASSERT_ST(ingot_writer_set_option(w, "alignment", "48", &e), INGOT_BAD_METADATA);
    ASSERT_ST(ingot_writer_set_option(w, "alignment", "", &e), INGOT_BAD_METADATA);
    ASSERT_ST(ingot_writer_set_option(w, "alignment", "2097152", &e), INGOT_BAD_METADATA);
    ASSERT_ST(ingot_writer_set_option(w, "version", "2", &e), INGOT_UNSUPPORTED);
    ASSERT_OK(ingot_writer_set_i32(w, "general.alignment", 32));
    ASSERT_ST(ingot_writer_begin_mem(w, &e), INGOT_BAD_METADATA);
    ASSERT_STR(e.where, "general.alignment");
    ingot_writer_free(w);
    ASSERT_OK(ingot_writer_new(&wo, &w, &e));
    ASSERT_OK(ingot_writer_set_u32(w, "general.alignment", 24));
    ASSERT_ST(ingot_writer_begin_mem(w, &e), INGOT_BAD_METADATA);
    ingot_writer_free(w);
}

TEST(test_gguf_writer_refuses_what_gguf_cannot_hold)
{
    static const ingot_dtype bad[] = {
        INGOT_DTYPE_F8_E4M3, INGOT_DTYPE_F8_E5M2, INGOT_DTYPE_F8_E8M0, INGOT_DTYPE_BOOL,
        INGOT_DTYPE_U8,      INGOT_DTYPE_U16,     INGOT_DTYPE_U32,     INGOT_DTYPE_U64,
        INGOT_DTYPE_C64,     INGOT_DTYPE_F4,      INGOT_DTYPE_F6_E2M3, INGOT_DTYPE_F6_E3M2,
    };
    uint8_t data[64] = {0};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ingot_writer_opts wo = {.format = "gguf"};
        ingot_writer *w;
        ingot_error e;
        ASSERT_OK(ingot_writer_new(&wo, &w, &e));
        uint64_t shape = 8;
        ingot_status st = ingot_writer_add_tensor(w, "ok", INGOT_DTYPE_F32, 1, &shape, NULL, data, &e);
        CHECK(st == INGOT_OK, "add ok");
        st = ingot_writer_add_tensor(w, "weird.tensor", bad[i], 1, &shape, NULL, data, &e);
        if (st == INGOT_OK) st = ingot_writer_begin_mem(w, &e);
        CHECK(st == INGOT_UNSUPPORTED && !strcmp(e.where, "weird.tensor") &&
                  strstr(e.msg, ingot_dtype_name(bad[i])),
              "%s: %s where '%s' msg '%s'", ingot_dtype_name(bad[i]), ingot_status_name(st),
              e.where, e.msg);
        ingot_writer_free(w);
    }
    /* rank 5, and a name of 64 bytes (63 is the most ggml reads) */
    char name64[65], name63[64];
    memset(name64, 'n', 64);
    name64[64] = 0;
    memset(name63, 'n', 63);
    name63[63] = 0;
    uint64_t s5[5] = {1, 1, 1, 1, 2};
    struct { const char *name; uint32_t rank; ingot_status want; } rows[] = {
        {"r5", 5, INGOT_UNSUPPORTED}, {name64, 1, INGOT_BAD_NAME}, {name63, 1, INGOT_OK}};
    for (size_t r = 0; r < 3; r++) {
        ingot_writer_opts wo = {.format = "gguf"};
        ingot_writer *w;
        ingot_error e;
        ASSERT_OK(ingot_writer_new(&wo, &w, &e));
        ingot_status st = ingot_writer_add_tensor(w, rows[r].name, INGOT_DTYPE_F32, rows[r].rank,
                                                  s5 + 5 - rows[r].rank, NULL, data, &e);
        if (st == INGOT_OK) st = ingot_writer_begin_mem(w, &e);
        CHECK(st == rows[r].want, "row %zu: %s", r, ingot_status_name(st));
        if (rows[r].want) CHECK(!strncmp(e.where, rows[r].name, 63), "row %zu: where", r);
        ingot_writer_free(w);
    }
}

TEST(test_gguf_writer_metadata_mapping)
{
    ingot_writer_opts wo = {.format = "gguf", .no_fsync = true};
    ingot_writer *w;
    ingot_error e;
    ASSERT_OK(ingot_writer_new(&wo, &w, &e));
    notices nt = {0};
    ingot_writer_set_notice(w, on_notice, &nt);
    static const uint8_t raw[3] = {1, 0, 255};
    const void *el[2] = {"ab", "c"};
    size_t ll[2] = {2, 1};
    ASSERT_OK(ingot_writer_set_bytes(w, "blob", raw, 3));
    ASSERT_OK(ingot_writer_set_string_array(w, "blobs", INGOT_META_BYTES, el, ll, 2));
    ASSERT_OK(ingot_writer_set_string_array(w, "strs", INGOT_META_STRING, el, ll, 2));
    static const uint8_t bools[3] = {1, 0, 1};
    ASSERT_OK(ingot_writer_set_array(w, "bools", INGOT_META_BOOL, bools, 3));
    ASSERT_OK(ingot_writer_set_u16(w, "u16", 65535));
    ASSERT_OK(ingot_writer_set_f32(w, "f32", 0.5f));
    uint64_t none = 0;
    static const float scalar = 7.0f;
    ASSERT_OK(ingot_writer_add_tensor(w, "scalar", INGOT_DTYPE_F32, 0, &none, NULL, &scalar, &e));
    void *p;
    size_t n;
    ASSERT_OK(ingot_writer_begin_mem(w, &e));
    ASSERT_OK(ingot_writer_commit_mem(w, &p, &n, &e));
    ingot_writer_free(w);
    ASSERT_EQ(nt.count, 2); /* bytes -> u8 array, bytes array -> nested */
    ingot_file *f;
    ASSERT_OK(ingot_file_open_buffer(p, n, NULL, &f, &e));
    ingot_meta_info m;
    uint8_t got[3];
    ASSERT_OK(ingot_file_meta_find(f, "blob", &m));
    ASSERT_TRUE(m.is_array && m.type == INGOT_META_U8 && m.count == 3);
    ASSERT_OK(ingot_file_meta_array_read(f, m.index, INGOT_META_U8, 0, 3, got));
    ASSERT_MEM(got, raw, 3);
    ASSERT_OK(ingot_file_meta_find(f, "blobs", &m));
    ASSERT_TRUE(!m.is_array && m.type == INGOT_META_BYTES); /* a nested array */
    ASSERT_OK(ingot_file_meta_find(f, "bools", &m));
    ASSERT_OK(ingot_file_meta_array_read(f, m.index, INGOT_META_BOOL, 0, 3, got));
    ASSERT_MEM(got, bools, 3);
    uint16_t u16;
    float f32;
    ASSERT_OK(ingot_file_meta_get_u16(f, "u16", &u16));
    ASSERT_EQ(u16, 65535);
    ASSERT_OK(ingot_file_meta_get_f32(f, "f32", &f32));
    ASSERT_TRUE(f32 == 0.5f);
    ingot_tensor_info t;
    ASSERT_OK(ingot_file_tensor_find(f, "scalar", &t));
    ASSERT_EQ(t.rank, 0); /* n_dims 0 */
    ASSERT_EQ(t.nelem, 1);
    ASSERT_MEM(t.data, &scalar, 4);
    /* the nested BYTES value written back by a second writer is kept verbatim */
    ASSERT_OK(ingot_writer_new(&wo, &w, &e));
    ASSERT_OK(ingot_file_meta_find(f, "blobs", &m));
    ASSERT_OK(ingot_writer_set_bytes(w, "blobs", m.data, (size_t)m.count));
    nt.count = 0;
    ingot_writer_set_notice(w, on_notice, &nt);
    void *p2;
    size_t n2;
    ASSERT_OK(ingot_writer_begin_mem(w, &e));
    ASSERT_OK(ingot_writer_commit_mem(w, &p2, &n2, &e));
    ASSERT_EQ(nt.count, 0);
    ingot_file *f2;
    ASSERT_OK(ingot_file_open_buffer(p2, n2, NULL, &f2, &e));
    ingot_meta_info m2;
    ASSERT_OK(ingot_file_meta_find(f2, "blobs", &m2));
    ASSERT_TRUE(m2.type == INGOT_META_BYTES && m2.count == m.count);
    ASSERT_MEM(m2.data, m.data, (size_t)m.count);
    ingot_file_close(f2);
    ingot_writer_free_mem(NULL, p2, n2);
    ingot_writer_free(w);
    ingot_file_close(f);
    ingot_writer_free_mem(NULL, p, n);
}

/* Shape order in the bytes: a [2, 3] F32 tensor is stored with ne = [3, 2]. */
TEST(test_gguf_shape_is_reversed_on_disk)
{
    ingot_writer_opts wo = {.format = "gguf"};
    ingot_writer *w;
    ingot_error e;
    ASSERT_OK(ingot_writer_new(&wo, &w, &e));
    static const float d[6] = {0};
    uint64_t shape[2] = {2, 3};
    ASSERT_OK(ingot_writer_add_tensor(w, "t", INGOT_DTYPE_F32, 2, shape, NULL, d, &e));
    void *p;
    size_t n;
    ASSERT_OK(ingot_writer_begin_mem(w, &e));
    ASSERT_OK(ingot_writer_commit_mem(w, &p, &n, &e));
    const uint8_t *b = p;
    /* header 24, name len 8 + "t", n_dims at 33, ne at 37 and 45, type at 53, offset at 57 */
    ASSERT_EQ(ld32(b + 33), 2);
    ASSERT_EQ(ld64(b + 37), 3);
    ASSERT_EQ(ld64(b + 45), 2);
    ASSERT_EQ(ld32(b + 53), 0);
    ASSERT_EQ(ld64(b + 57), 0);
    ASSERT_EQ(n, 96 + 32); /* infos end at 65: data at 96, 24 bytes padded to 32 */
    ingot_writer_free_mem(NULL, p, n);
    ingot_writer_free(w);
}

TEST(test_gguf_writer_is_deterministic)
{
    char path[512];
    snprintf(path, sizeof path, FIX "gguf_all_types.gguf");
    ingot_file *f;
    ingot_error e;
    ASSERT_OK(ingot_file_open(path, NULL, &f, &e));
    uint8_t *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    ASSERT_OK(convert_mem(f, "gguf", 64, NULL, &a, &na, &e));
    ASSERT_OK(convert_mem(f, "gguf", 64, NULL, &b, &nb, &e));
    ASSERT_EQ(na, nb);
    ASSERT_MEM(a, b, na);
    free(a);
    free(b);
    ingot_file_close(f);
}

/* Metadata API corners on the 32k vocab: random access to every token equals a sequential walk
 * of the bytes; type and range errors. */
TEST(test_gguf_meta_api)
{
    char path[512];
    snprintf(path, sizeof path, FIX "ggml-vocab-llama-spm.gguf");
    size_t n = 0;
    uint8_t *img = test_read_file(path, &n);
    ingot_file *f;
    ingot_error e;
    ASSERT_OK(ingot_file_open_buffer(img, n, NULL, &f, &e));
    ingot_meta_info m;
    ASSERT_OK(ingot_file_meta_find(f, "tokenizer.ggml.tokens", &m));
    ASSERT_EQ(m.count, 32000);
    /* payload_file_offset 641 from the sidecar */
    size_t at = 641;
    for (uint64_t k = 0; k < m.count; k++) {
        const char *s;
        size_t len;
        ASSERT_OK(ingot_file_meta_array_string(f, m.index, k, &s, &len));
        ASSERT_EQ(len, ld64(img + at));
        ASSERT_TRUE(s == (const char *)img + at + 8); /* zero-copy: points into the buffer */
        at += 8 + len;
    }
    /* backwards too (checkpoints, not a cursor) */
    for (uint64_t k = m.count; k-- > 31990;) {
        const char *s;
        size_t len;
        ASSERT_OK(ingot_file_meta_array_string(f, m.index, k, &s, &len));
    }
    const char *s;
    size_t len;
    ASSERT_ST(ingot_file_meta_array_string(f, m.index, 32000, &s, &len), INGOT_RANGE);
    uint8_t buf[8];
    ASSERT_ST(ingot_file_meta_array_read(f, m.index, INGOT_META_STRING, 0, 1, buf),
              INGOT_WRONG_TYPE);
    ingot_meta_info sc;
    ASSERT_OK(ingot_file_meta_find(f, "tokenizer.ggml.scores", &sc));
    ASSERT_ST(ingot_file_meta_array_read(f, sc.index, INGOT_META_I32, 0, 1, buf),
              INGOT_WRONG_TYPE); /* stored as FLOAT32 */
    ASSERT_ST(ingot_file_meta_array_read(f, sc.index, INGOT_META_F32, 31999, 2, buf),
              INGOT_RANGE);
    ASSERT_ST(ingot_file_meta_array_string(f, sc.index, 0, &s, &len), INGOT_WRONG_TYPE);
    float last;
    ASSERT_OK(ingot_file_meta_array_read(f, sc.index, INGOT_META_F32, 31999, 1, &last));
    ASSERT_TRUE(last == -31740.0f);
    uint32_t u;
    ASSERT_ST(ingot_file_meta_get_u32(f, "tokenizer.ggml.model", &u), INGOT_WRONG_TYPE);
    ASSERT_ST(ingot_file_meta_get_u32(f, "no.such.key", &u), INGOT_NOT_FOUND);
    ASSERT_ST(ingot_file_meta_at(f, 22, &m), INGOT_RANGE);
    uint64_t c;
    ASSERT_ST(ingot_file_meta_get_array(f, "tokenizer.ggml.scores", INGOT_META_F64, &c),
              INGOT_WRONG_TYPE);
    /* scalar entries are not arrays */
    ingot_meta_info bos;
    ASSERT_OK(ingot_file_meta_find(f, "tokenizer.ggml.bos_token_id", &bos));
    ASSERT_ST(ingot_file_meta_array_read(f, bos.index, INGOT_META_U32, 0, 1, buf),
              INGOT_WRONG_TYPE);
    ASSERT_ST(ingot_file_meta_array_read(f, 99, INGOT_META_U32, 0, 1, buf), INGOT_RANGE);
    ingot_tensor_info t;
    ASSERT_ST(ingot_file_tensor_at(f, 0, &t), INGOT_RANGE);
    ASSERT_ST(ingot_file_tensor_find(f, "x", &t), INGOT_NOT_FOUND);
    ingot_file_close(f);
    free(img);
}

/* The CLI on a fixture: info --json, verify, convert to .ingot and back. */
TEST(test_gguf_cli)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "%s info --json " FIX "gguf_align64.gguf | grep -q '\"Q8_0\"' && %s verify " FIX
             "gguf_all_types.gguf >/dev/null && %s convert " FIX
             "gguf_all_types.gguf %s/gguf_cli.ingot >/dev/null && %s convert %s/gguf_cli.ingot "
             "%s/gguf_cli.gguf >/dev/null && %s verify %s/gguf_cli.gguf >/dev/null",
             INGOT_CLI, INGOT_CLI, INGOT_CLI, INGOT_BINARY_DIR, INGOT_CLI, INGOT_BINARY_DIR,
             INGOT_BINARY_DIR, INGOT_CLI, INGOT_BINARY_DIR);
    ASSERT_EQ(system(cmd), 0);
    char p1[512];
    snprintf(p1, sizeof p1, "%s/gguf_cli.gguf", INGOT_BINARY_DIR);
    ingot_file *a, *b;
    ingot_error e;
    ASSERT_OK(ingot_file_open(FIX "gguf_all_types.gguf", NULL, &a, &e));
    ASSERT_OK(ingot_file_open(p1, NULL, &b, &e));
    same_content("cli", a, b);
    ingot_file_close(a);
    ingot_file_close(b);
    snprintf(p1, sizeof p1, "%s/gguf_cli.gguf", INGOT_BINARY_DIR);
    remove(p1);
    snprintf(p1, sizeof p1, "%s/gguf_cli.ingot", INGOT_BINARY_DIR);
    remove(p1);
}

/* A caller buffer at an odd address: scalar tensors say UNALIGNED, bytes are still right. */
TEST(test_gguf_unaligned_buffer)
{
    size_t n = 0;
    uint8_t *img = test_read_file(FIX "gguf_all_types.gguf", &n);
    uint8_t *odd = malloc(n + 1);
    memcpy(odd + 1, img, n);
    ingot_file *f;
    ingot_error e;
    ASSERT_OK(ingot_file_open_buffer(odd + 1, n, NULL, &f, &e));
    int unaligned = 0;
    for (uint64_t i = 0; i < ingot_file_tensor_count(f); i++) {
        ingot_tensor_info t;
        ASSERT_OK(ingot_file_tensor_at(f, i, &t));
        bool scalar = !ingot_dtype_is_quantized(t.dtype) && ingot_dtype_block_bytes(t.dtype) > 1;
        ASSERT_EQ(!!(t.flags & INGOT_TENSOR_UNALIGNED), scalar);
        unaligned += scalar;
        uint8_t *buf = malloc(t.nbytes + 1);
        ASSERT_OK(ingot_file_tensor_copy(f, i, buf, (size_t)t.nbytes, &e));
        ASSERT_MEM(buf, img + t.offset, (size_t)t.nbytes);
        free(buf);
    }
    ASSERT_TRUE(unaligned > 5);
    ingot_file_close(f);
    free(odd);
    free(img);
}

RUN_TESTS(T(test_gguf_fixtures_buffer), T(test_gguf_fixtures_mmap), T(test_gguf_fixtures_pread),
          T(test_gguf_rewrite_is_byte_exact), T(test_gguf_roundtrip_via_ingot),
          T(test_gguf_writer_alignment), T(test_gguf_writer_refuses_what_gguf_cannot_hold),
          T(test_gguf_writer_metadata_mapping), T(test_gguf_shape_is_reversed_on_disk),
          T(test_gguf_writer_is_deterministic), T(test_gguf_meta_api), T(test_gguf_cli),
          T(test_gguf_unaligned_buffer))
