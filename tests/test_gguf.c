/* test_gguf.c - the GGUF reader and writer against the fixtures written by gguf-py and llama.cpp
 * (../shared/fixtures/gguf, each with an .expected.json sidecar): names, dtypes, shapes
 * (outermost first; the sidecar's `ne` is the stored innermost-first order), sha256 of each
 * tensor's stored bytes, every metadata value (32k-token vocab arrays included, nested arrays as
 * BYTES), in buffer, mmap and pread mode. Then the writer: byte-exact rewrite of every fixture,
 * GGUF -> .ingot -> GGUF round trips, alignment, lossy metadata notices, refused tensors.
 * Hostile inputs are in test_gguf_malformed.c.
 */
#include <json-c/json.h>

#include "harness.h"
#include "sha256.h"

#define FIX INGOT_FIXTURES "/gguf/"

static const char *const fixtures[] = {
    "ggml-vocab-bert-bge.gguf", "ggml-vocab-llama-spm.gguf", "gguf_align64.gguf",
    "gguf_all_types.gguf",      "gguf_edge_shapes.gguf",     "gguf_kquants_random_blocks.gguf",
    "gguf_nested_arrays.gguf",  "gguf_zero_outer_dim.gguf",
};
#define N_FIX (sizeof fixtures / sizeof fixtures[0])

static uint8_t *read_all(const char *path, size_t *n)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    fseek(fp, 0, SEEK_END);
    long len = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    uint8_t *p = malloc(len > 0 ? (size_t)len : 1);
    if (p && len > 0 && fread(p, 1, (size_t)len, fp) != (size_t)len) {
        free(p);
        p = NULL;
    }
    fclose(fp);
    *n = len > 0 ? (size_t)len : 0;
    return p;
}

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
    uint8_t *img = read_all(path, &n);
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

RUN_TESTS(T(test_gguf_fixtures_buffer), T(test_gguf_fixtures_mmap), T(test_gguf_fixtures_pread))
