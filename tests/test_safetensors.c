/* test_safetensors.c - the safetensors adapter and writer: every fixture against its sidecar (mmap,
 * pread and buffer), byte-exact rewrite of the fixtures the Rust crate wrote, round trips through
 * .ingot, sub-byte and new dtypes, alignment flags, metadata stringification with notices, the
 * malformed catalogue (RELIABILITY.md §1) with exact codes, every truncation and byte flips. */
#include <dirent.h>
#include <json-c/json.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "files.h"
#include "sha256.h"

#define FIX INGOT_FIXTURES "/safetensors"

/* 64 dimensions of 1 (INGOT_MAX_RANK), for rank limit rows */
#define ONES8 "1,1,1,1,1,1,1,1"
#define ONES64 ONES8 "," ONES8 "," ONES8 "," ONES8 "," ONES8 "," ONES8 "," ONES8 "," ONES8

/* Names of the fixture files (sorted), NULL-terminated; free with free_list. */
static char **list_fixtures(size_t *count)
{
    DIR *d = opendir(FIX);
    char **v = calloc(256, sizeof *v);
    size_t n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name);
        if (l > 12 && strcmp(e->d_name + l - 12, ".safetensors") == 0 && n < 255)
            v[n++] = strdup(e->d_name);
    }
    if (d) closedir(d);
    for (size_t i = 1; i < n; i++)
        for (size_t k = i; k > 0 && strcmp(v[k - 1], v[k]) > 0; k--) {
            char *t = v[k];
            v[k] = v[k - 1];
            v[k - 1] = t;
        }
    *count = n;
    return v;
}

static void free_list(char **v)
{
    for (size_t i = 0; v[i]; i++) free(v[i]);
    free(v);
}

/* Checks an open file against a sidecar; returns the number of mismatches. */
static int check_sidecar(ingot_file *f, json_object *side, const char *fname, bool mapped)
{
    int bad = 0;
    json_object *tensors = json_object_object_get(side, "tensors");
    size_t nt = json_object_array_length(tensors);
    CHECK(ingot_file_tensor_count(f) == nt, "%s: %llu tensors, sidecar %zu", fname,
          (unsigned long long)ingot_file_tensor_count(f), nt);
    if (ingot_file_tensor_count(f) != nt) return 1;
    for (size_t i = 0; i < nt; i++) {
        json_object *jt = json_object_array_get_idx(tensors, i);
        ingot_tensor_info t;
        if (ingot_file_tensor_at(f, i, &t) != INGOT_OK) {
            bad++;
            continue;
        }
        const char *want_name = json_object_get_string(json_object_object_get(jt, "name"));
        const char *want_dt = json_object_get_string(json_object_object_get(jt, "dtype"));
        CHECK(strcmp(t.name, want_name) == 0, "%s[%zu]: name %s want %s", fname, i, t.name, want_name);
        CHECK(strlen(t.name) == t.name_len, "%s: name_len", fname);
        CHECK(strcmp(ingot_dtype_name(t.dtype), want_dt) == 0, "%s %s: dtype %s want %s", fname,
              t.name, ingot_dtype_name(t.dtype), want_dt);
        json_object *shape = json_object_object_get(jt, "shape");
        CHECK(t.rank == json_object_array_length(shape), "%s %s: rank", fname, t.name);
        for (size_t k = 0; k < t.rank && k < json_object_array_length(shape); k++)
            CHECK(t.shape[k] == (uint64_t)json_object_get_int64(json_object_array_get_idx(shape, k)),
                  "%s %s: dim %zu", fname, t.name, k);
        CHECK(t.nelem == (uint64_t)json_object_get_int64(json_object_object_get(jt, "n_elements")),
              "%s %s: nelem", fname, t.name);
        CHECK(t.nbytes == (uint64_t)json_object_get_int64(json_object_object_get(jt, "nbytes")),
              "%s %s: nbytes", fname, t.name);
        CHECK(t.offset == (uint64_t)json_object_get_int64(json_object_object_get(jt, "file_offset")),
              "%s %s: offset %llu", fname, t.name, (unsigned long long)t.offset);
        CHECK(t.index == i, "%s: index", fname);
        uint8_t *buf = malloc(t.nbytes ? t.nbytes : 1);
        CHECK(ingot_file_tensor_read(f, i, 0, buf, (size_t)t.nbytes, NULL) == INGOT_OK, "%s %s: read",
              fname, t.name);
        char hex[65];
        test_sha256_hex(buf, (size_t)t.nbytes, hex);
        const char *want_sha = json_object_get_string(json_object_object_get(jt, "sha256"));
        if (strcmp(hex, want_sha) != 0) {
            CHECK(0, "%s %s: sha256 %s want %s", fname, t.name, hex, want_sha);
            bad++;
        }
        if (mapped) {
            CHECK(t.data != NULL && !(t.flags & INGOT_TENSOR_NOT_MAPPED), "%s: mapped", fname);
            if (t.data) CHECK(memcmp(t.data, buf, (size_t)t.nbytes) == 0, "%s: view bytes", fname);
        } else {
            CHECK(t.data == NULL && (t.flags & INGOT_TENSOR_NOT_MAPPED), "%s: not mapped", fname);
        }
        uint32_t es = ingot_dtype_block_elems(t.dtype) == 1 ? ingot_dtype_block_bytes(t.dtype) : 1;
        bool unaligned = (t.offset % es) != 0;
        CHECK(((t.flags & INGOT_TENSOR_UNALIGNED) != 0) == unaligned, "%s %s: UNALIGNED flag",
              fname, t.name);
        ingot_tensor_info g;
        CHECK(ingot_file_tensor_find(f, t.name, &g) == INGOT_OK && g.index == i, "%s %s: find",
              fname, t.name);
        uint8_t *cp = malloc(t.nbytes ? t.nbytes : 1);
        CHECK(ingot_file_tensor_copy(f, i, cp, (size_t)t.nbytes, NULL) == INGOT_OK &&
                  memcmp(cp, buf, (size_t)t.nbytes) == 0,
              "%s %s: copy", fname, t.name);
        free(cp);
        free(buf);
        CHECK(ingot_file_tensor_verify(f, i, NULL) == INGOT_OK, "%s: verify", fname);
    }
    ingot_tensor_info none;
    CHECK(ingot_file_tensor_find(f, "no such tensor", &none) == INGOT_NOT_FOUND, "%s: find absent",
          fname);
    json_object *meta = json_object_object_get(side, "metadata");
    size_t nm = meta ? (size_t)json_object_object_length(meta) : 0;
    CHECK(ingot_file_meta_count(f) == nm, "%s: %llu metadata entries, want %zu", fname,
          (unsigned long long)ingot_file_meta_count(f), nm);
    if (meta) {
        json_object_object_foreach(meta, key, val)
        {
            const char *s;
            size_t len;
            ingot_status st = ingot_file_meta_get_string(f, key, &s, &len);
            CHECK(st == INGOT_OK, "%s: meta %s: %s", fname, key, ingot_status_name(st));
            if (st == INGOT_OK) {
                const char *want = json_object_get_string(val);
                CHECK(len == strlen(want) && memcmp(s, want, len) == 0, "%s: meta %s value", fname,
                      key);
            }
        }
    }
    CHECK(ingot_file_verify(f, 2, NULL) == INGOT_OK, "%s: file verify", fname);
    return bad;
}

TEST(fixtures_match_sidecars)
{
    size_t n;
    char **names = list_fixtures(&n);
    ASSERT_TRUE(n >= 25);
    for (size_t i = 0; i < n; i++) {
        char path[1024], side_path[1100];
        snprintf(path, sizeof path, "%s/%s", FIX, names[i]);
        snprintf(side_path, sizeof side_path, "%s.expected.json", path);
        json_object *side = json_object_from_file(side_path);
        CHECK(side != NULL, "%s: sidecar", names[i]);
        if (!side) continue;
        for (int mode = 0; mode < 3; mode++) {
            ingot_file *f = NULL;
            ingot_error e;
            ingot_open_opts o = {0};
            ingot_status st;
            size_t blen = 0;
            uint8_t *buf = NULL;
            if (mode == 2) {
                buf = test_read_file(path, &blen);
                st = ingot_file_open_buffer(buf, blen, NULL, &f, &e);
            } else {
                o.io = mode == 0 ? INGOT_IO_MMAP : INGOT_IO_PREAD;
                st = ingot_file_open(path, &o, &f, &e);
            }
            CHECK(st == INGOT_OK, "%s mode %d: %s %s", names[i], mode, ingot_status_name(st),
                  st ? e.msg : "");
            if (st == INGOT_OK) {
                CHECK(strcmp(ingot_file_format(f), "safetensors") == 0, "%s: format", names[i]);
                check_sidecar(f, side, names[i], mode != 1);
            }
            ingot_file_close(f);
            free(buf);
        }
        json_object_put(side);
    }
    free_list(names);
}

/* Writes f back as safetensors into memory in file order with its metadata. */
static ingot_status rewrite(ingot_file *f, const char *format, void **out, size_t *len,
                            ingot_error *e)
{
    ingot_writer_opts wo = {0};
    wo.format = format;
    ingot_writer *w;
    ingot_status st = ingot_writer_new(&wo, &w, e);
    if (st != INGOT_OK) return st;
    for (uint64_t i = 0; i < ingot_file_meta_count(f) && st == INGOT_OK; i++) {
        ingot_meta_info m;
        ingot_file_meta_at(f, i, &m);
        char key[512];
        snprintf(key, sizeof key, "%.*s", (int)m.key_len, m.key);
        st = ingot_writer_set_stringn(w, key, m.data, (size_t)m.count);
    }
    for (uint64_t i = 0; i < ingot_file_tensor_count(f) && st == INGOT_OK; i++) {
        ingot_tensor_info t;
        ingot_file_tensor_at(f, i, &t);
        st = ingot_writer_add_tensor(w, t.name, t.dtype, t.rank, t.shape, NULL, t.data, e);
    }
    if (st == INGOT_OK) st = ingot_writer_begin_mem(w, e);
    if (st == INGOT_OK) st = ingot_writer_commit_mem(w, out, len, e);
    ingot_writer_free(w);
    return st;
}

TEST(rewrite_is_byte_exact)
{
    size_t n;
    char **names = list_fixtures(&n);
    int exact = 0;
    for (size_t i = 0; i < n; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", FIX, names[i]);
        size_t blen;
        uint8_t *orig = test_read_file(path, &blen);
        ingot_file *f;
        ingot_error e;
        ASSERT_OK(ingot_file_open_buffer(orig, blen, NULL, &f, &e));
        void *out = NULL;
        size_t olen = 0;
        ingot_status st = rewrite(f, "safetensors", &out, &olen, &e);
        CHECK(st == INGOT_OK, "%s: %s", names[i], e.msg);
        bool same = st == INGOT_OK && olen == blen && memcmp(out, orig, blen) == 0;
        /* The 2022 samples have unpadded headers; every other fixture is reproduced exactly. */
        bool expect_exact = strncmp(names[i], "hfsamples_", 10) != 0;
        CHECK(same == expect_exact, "%s: byte-exact %d, expected %d", names[i], same, expect_exact);
        exact += same;
        if (!same && st == INGOT_OK) { /* still equivalent */
            ingot_file *g;
            ASSERT_OK(ingot_file_open_buffer(out, olen, NULL, &g, &e));
            ASSERT_EQ(ingot_file_tensor_count(g), ingot_file_tensor_count(f));
            uint64_t hn = 0;
            memcpy(&hn, out, 8);
            CHECK((8 + hn) % 8 == 0, "%s: data start aligned", names[i]);
            ingot_file_close(g);
        }
        ingot_writer_free_mem(NULL, out, olen);
        ingot_file_close(f);
        free(orig);
    }
    ASSERT_EQ(exact, 20); /* 25 fixtures, 5 of them hfsamples_* */
    free_list(names);
}

TEST(round_trip_through_ingot)
{
    size_t n;
    char **names = list_fixtures(&n);
    for (size_t i = 0; i < n; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", FIX, names[i]);
        size_t blen;
        uint8_t *orig = test_read_file(path, &blen);
        ingot_file *f, *g, *h;
        ingot_error e;
        ASSERT_OK(ingot_file_open_buffer(orig, blen, NULL, &f, &e));
        void *mid = NULL, *back = NULL;
        size_t mlen = 0, backlen = 0;
        ASSERT_OK(rewrite(f, "ingot", &mid, &mlen, &e));
        ASSERT_OK(ingot_file_open_buffer(mid, mlen, NULL, &g, &e));
        ASSERT_STR(ingot_file_format(g), "ingot");
        ASSERT_OK(rewrite(g, "safetensors", &back, &backlen, &e));
        ASSERT_OK(ingot_file_open_buffer(back, backlen, NULL, &h, &e));
        ASSERT_EQ(ingot_file_tensor_count(h), ingot_file_tensor_count(f));
        for (uint64_t k = 0; k < ingot_file_tensor_count(f); k++) {
            ingot_tensor_info a, b;
            ingot_file_tensor_at(f, k, &a);
            ingot_file_tensor_at(h, k, &b);
            CHECK(strcmp(a.name, b.name) == 0 && a.dtype == b.dtype && a.rank == b.rank &&
                      memcmp(a.shape, b.shape, sizeof a.shape) == 0 && a.nbytes == b.nbytes &&
                      (a.nbytes == 0 || memcmp(a.data, b.data, (size_t)a.nbytes) == 0),
                  "%s: tensor %llu differs", names[i], (unsigned long long)k);
        }
        ASSERT_EQ(ingot_file_meta_count(h), ingot_file_meta_count(f));
        for (uint64_t k = 0; k < ingot_file_meta_count(f); k++) {
            ingot_meta_info m;
            ingot_file_meta_at(f, k, &m);
            char key[512];
            snprintf(key, sizeof key, "%.*s", (int)m.key_len, m.key);
            const char *s;
            size_t len;
            CHECK(ingot_file_meta_get_string(h, key, &s, &len) == INGOT_OK && len == m.count &&
                      memcmp(s, m.data, len) == 0,
                  "%s: metadata %s", names[i], key);
        }
        /* .ingot sorts metadata by key, so bytes match whenever the order survives. */
        if (ingot_file_meta_count(f) <= 1 && strncmp(names[i], "hfsamples_", 10) != 0)
            CHECK(backlen == blen && memcmp(back, orig, blen) == 0, "%s: bytes after round trip",
                  names[i]);
        ingot_file_close(h);
        ingot_file_close(g);
        ingot_file_close(f);
        ingot_writer_free_mem(NULL, mid, mlen);
        ingot_writer_free_mem(NULL, back, backlen);
        free(orig);
    }
    free_list(names);
}

/* ---- hand-made files ---- */

/* Builds 8-byte length + header + data_len bytes (0xAB). */
static uint8_t *mk(const char *hdr, size_t data_len, size_t *n)
{
    size_t hn = strlen(hdr);
    *n = 8 + hn + data_len;
    uint8_t *b = malloc(*n);
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)((uint64_t)hn >> (8 * i));
    memcpy(b + 8, hdr, hn);
    memset(b + 8 + hn, 0xAB, data_len);
    return b;
}

static ingot_status open_mk(const char *hdr, size_t data_len, ingot_error *e)
{
    size_t n;
    uint8_t *b = mk(hdr, data_len, &n);
    ingot_file *f = NULL;
    ingot_open_opts o = {0};
    o.format = "safetensors";
    ingot_status st = ingot_file_open_buffer(b, n, &o, &f, e);
    if (st == INGOT_OK) {
        /* Exercise every getter on what was accepted. */
        for (uint64_t i = 0; i < ingot_file_tensor_count(f); i++) {
            ingot_tensor_info t;
            ingot_file_tensor_at(f, i, &t);
        }
        for (uint64_t i = 0; i < ingot_file_meta_count(f); i++) {
            ingot_meta_info m;
            ingot_file_meta_at(f, i, &m);
        }
    }
    ingot_file_close(f);
    free(b);
    return st;
}

/* The same file with a space after every ':' and ',' outside strings in its header: equal JSON
 * that the reader's byte-exact fast path for compact tensor entries never matches, so the general
 * scanner parses every entry. */
static uint8_t *respace(const uint8_t *img, size_t n, size_t *out_n)
{
    uint64_t hn = 0;
    for (int i = 0; i < 8 && (size_t)i < n; i++) hn |= (uint64_t)img[i] << (8 * i);
    if (n < 8 || hn > n - 8) return NULL;
    uint8_t *o = malloc(n + 2 * (size_t)hn + 1);
    size_t k = 8;
    bool in_str = false;
    for (size_t i = 8; i < 8 + hn; i++) {
        uint8_t c = img[i];
        o[k++] = c;
        if (in_str) {
            if (c == '\\' && i + 1 < 8 + hn) o[k++] = img[++i];
            else if (c == '"') in_str = false;
        } else if (c == '"') {
            in_str = true;
        } else if (c == ':' || c == ',') {
            o[k++] = ' ';
        }
    }
    uint64_t hn2 = k - 8;
    for (int i = 0; i < 8; i++) o[i] = (uint8_t)(hn2 >> (8 * i));
    memcpy(o + k, img + 8 + hn, n - 8 - (size_t)hn);
    *out_n = k + (n - 8 - (size_t)hn);
    return o;
}

/* Opens img and its respaced twin: the same status, tensor table (data offsets relative to the
 * data section) and metadata. Returns the status. */
static ingot_status open_both_paths(const uint8_t *img, size_t n, const char *what)
{
    size_t n2 = 0;
    uint8_t *img2 = respace(img, n, &n2);
    ingot_open_opts o = {0};
    o.format = "safetensors";
    ingot_file *f = NULL, *g = NULL;
    ingot_error e, e2;
    memset(&e, 0, sizeof e);
    memset(&e2, 0, sizeof e2);
    ingot_status st = ingot_file_open_buffer(img, n, &o, &f, &e);
    if (!img2) {
        ingot_file_close(f);
        return st;
    }
    ingot_status st2 = ingot_file_open_buffer(img2, n2, &o, &g, &e2);
    CHECK(st == st2, "%s: compact %s (%s), spaced %s (%s)", what, ingot_status_name(st), e.msg,
          ingot_status_name(st2), e2.msg);
    if (st != INGOT_OK && st == st2)
        CHECK(strcmp(e.where, e2.where) == 0, "%s: error names %s and %s", what, e.where, e2.where);
    if (st == INGOT_OK && st2 == INGOT_OK) {
        uint64_t d1 = 8, d2 = 8; /* data section starts */
        for (int i = 0; i < 8; i++) {
            d1 += (uint64_t)img[i] << (8 * i);
            d2 += (uint64_t)img2[i] << (8 * i);
        }
        CHECK(ingot_file_tensor_count(f) == ingot_file_tensor_count(g), "%s: tensor counts", what);
        for (uint64_t i = 0; i < ingot_file_tensor_count(f) && i < ingot_file_tensor_count(g); i++) {
            ingot_tensor_info x, y;
            ingot_file_tensor_at(f, i, &x);
            ingot_file_tensor_at(g, i, &y);
            CHECK(strcmp(x.name, y.name) == 0 && x.dtype == y.dtype && x.rank == y.rank &&
                      memcmp(x.shape, y.shape, sizeof x.shape) == 0 && x.nelem == y.nelem &&
                      x.nbytes == y.nbytes && x.offset - d1 == y.offset - d2,
                  "%s: tensor %llu (%s) differs between the paths", what, (unsigned long long)i,
                  x.name);
        }
        CHECK(ingot_file_meta_count(f) == ingot_file_meta_count(g), "%s: metadata counts", what);
        for (uint64_t i = 0; i < ingot_file_meta_count(f) && i < ingot_file_meta_count(g); i++) {
            ingot_meta_info x, y;
            ingot_file_meta_at(f, i, &x);
            ingot_file_meta_at(g, i, &y);
            CHECK(x.key_len == y.key_len && memcmp(x.key, y.key, x.key_len) == 0 &&
                      x.count == y.count && memcmp(x.data, y.data, (size_t)x.count) == 0,
                  "%s: metadata %llu differs between the paths", what, (unsigned long long)i);
        }
    }
    ingot_file_close(f);
    ingot_file_close(g);
    free(img2);
    return st;
}

#define TF(name, dt, shape, b, e) "\"" name "\":{\"dtype\":\"" dt "\",\"shape\":" shape ",\"data_offsets\":[" #b "," #e "]}"

TEST(sub_byte_and_new_dtypes)
{
    ingot_error e;
    ASSERT_OK(open_mk("{" TF("a", "F4", "[4]", 0, 2) "}", 2, &e));
    ASSERT_ST(open_mk("{" TF("a", "F4", "[3]", 0, 2) "}", 2, &e), INGOT_BAD_SIZE);
    ASSERT_OK(open_mk("{" TF("a", "F6_E2M3", "[2,2]", 0, 3) "}", 3, &e));
    ASSERT_OK(open_mk("{" TF("a", "F6_E3M2", "[8]", 0, 6) "}", 6, &e));
    ASSERT_ST(open_mk("{" TF("a", "F6_E3M2", "[3]", 0, 3) "}", 3, &e), INGOT_BAD_SIZE);
    ASSERT_OK(open_mk("{" TF("a", "F8_E8M0", "[5]", 0, 5) "}", 5, &e));
    ASSERT_OK(open_mk("{" TF("a", "C64", "[2]", 0, 16) "}", 16, &e));
    ASSERT_OK(open_mk("{" TF("a", "F8_E4M3FNUZ", "[2]", 0, 2) "}", 2, &e));
    ASSERT_OK(open_mk("{" TF("a", "F8_E5M2FNUZ", "[3]", 0, 3) "}", 3, &e));
    ASSERT_ST(open_mk("{" TF("a", "F128", "[2]", 0, 32) "}", 32, &e), INGOT_BAD_TYPE);
    ASSERT_ST(open_mk("{" TF("a", "f32", "[2]", 0, 8) "}", 8, &e), INGOT_BAD_TYPE);
    /* Shapes and types as the tensor view reports them. */
    size_t n;
    uint8_t *b = mk("{" TF("x", "F4", "[2,3]", 0, 3) "," TF("y", "C64", "[]", 3, 11) "}", 11, &n);
    ingot_file *f;
    ASSERT_OK(ingot_file_open_buffer(b, n, NULL, &f, &e));
    ingot_tensor_info t;
    ASSERT_OK(ingot_file_tensor_find(f, "x", &t));
    ASSERT_EQ(t.dtype, INGOT_DTYPE_F4);
    ASSERT_EQ(t.nelem, 6);
    ASSERT_EQ(t.nbytes, 3);
    ASSERT_TRUE(!(t.flags & INGOT_TENSOR_UNALIGNED)); /* byte-granular */
    ASSERT_OK(ingot_file_tensor_find(f, "y", &t));
    ASSERT_EQ(t.dtype, INGOT_DTYPE_C64);
    ASSERT_EQ(t.rank, 0);
    ASSERT_EQ(t.nelem, 1);
    ASSERT_EQ(t.offset % 8 != 0, (t.flags & INGOT_TENSOR_UNALIGNED) != 0);
    ingot_file_close(f);
    free(b);
}

/* A header of exactly 123 bytes starts the file with '{' (0x7B) and names a tensor "weight_map":
 * still safetensors, not a shard index. */
TEST(probe_not_confused_with_index)
{
    char hdr[124];
    snprintf(hdr, sizeof hdr, "%-123s", "{" TF("weight_map", "U8", "[1]", 0, 1) "}");
    ASSERT_EQ(strlen(hdr), 123);
    size_t n;
    uint8_t *b = mk(hdr, 1, &n);
    ASSERT_EQ(b[0], '{');
    ingot_file *f;
    ingot_error e;
    ASSERT_OK(ingot_file_open_buffer(b, n, NULL, &f, &e));
    ASSERT_STR(ingot_file_format(f), "safetensors");
    ingot_file_close(f);
    free(b);
}

TEST(malformed_catalogue)
{
    static const struct {
        const char *what, *hdr;
        size_t data;
        ingot_status want;
    } cases[] = {
        /* 5: strings */
        {"invalid UTF-8 in a name", "{\"\xff\":{}}", 0, INGOT_BAD_STRING},
        {"lone surrogate", "{\"\\ud800\":{}}", 0, INGOT_BAD_STRING},
        {"empty name", "{" TF("", "U8", "[1]", 0, 1) "}", 1, INGOT_BAD_NAME},
        {"NUL in name", "{" TF("a\\u0000b", "U8", "[1]", 0, 1) "}", 1, INGOT_BAD_NAME},
        /* 6: depth bomb, nested arrays */
        {"depth bomb", "{\"a\":{\"shape\":[[[[[1]]]]]}}", 0, INGOT_BAD_ARRAY},
        {"nested shape", "{\"a\":{\"dtype\":\"U8\",\"shape\":[[1]],\"data_offsets\":[0,1]}}", 1,
         INGOT_BAD_ARRAY},
        /* 7: types */
        {"unknown dtype", "{" TF("a", "Q4_0", "[32]", 0, 18) "}", 18, INGOT_BAD_TYPE},
        {"dtype not a string", "{\"a\":{\"dtype\":7,\"shape\":[1],\"data_offsets\":[0,1]}}", 1,
         INGOT_WRONG_TYPE},
        /* 8: wrong type */
        {"metadata value integer", "{\"__metadata__\":{\"k\":1}}", 0, INGOT_WRONG_TYPE},
        {"metadata value null", "{\"__metadata__\":{\"k\":null}}", 0, INGOT_WRONG_TYPE},
        {"metadata array", "{\"__metadata__\":[\"a\"]}", 0, INGOT_BAD_METADATA},
        /* 9: duplicates */
        {"duplicate tensor (identical)", "{" TF("a", "U8", "[1]", 0, 1) "," TF("a", "U8", "[1]", 0, 1) "}",
         1, INGOT_DUPLICATE},
        {"duplicate tensor (different)", "{" TF("a", "U8", "[1]", 0, 1) "," TF("a", "U8", "[1]", 1, 2) "}",
         2, INGOT_DUPLICATE},
        {"duplicate metadata key", "{\"__metadata__\":{\"k\":\"a\",\"k\":\"b\"}}", 0, INGOT_DUPLICATE},
        {"duplicate __metadata__", "{\"__metadata__\":{},\"__metadata__\":{}}", 0, INGOT_DUPLICATE},
        {"duplicate field", "{\"a\":{\"dtype\":\"U8\",\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}",
         1, INGOT_DUPLICATE},
        {"escaped duplicate", "{" TF("ab", "U8", "[1]", 0, 1) "," TF("a\\u0062", "U8", "[1]", 1, 2) "}",
         2, INGOT_DUPLICATE},
        /* 10: rank */
        {"rank 65", "{" TF("a", "U8", "[" ONES64 ",1]", 0, 1) "}", 1, INGOT_BAD_NDIMS},
        /* 11: shape */
        {"negative dim", "{" TF("a", "U8", "[-1]", 0, 1) "}", 1, INGOT_BAD_SHAPE},
        {"fractional dim", "{" TF("a", "U8", "[2.0]", 0, 2) "}", 2, INGOT_BAD_SHAPE},
        {"dim 2^64", "{" TF("a", "U8", "[18446744073709551616]", 0, 1) "}", 1, INGOT_BAD_SHAPE},
        {"product overflow", "{" TF("a", "U8", "[9223372036854775807,2]", 0, 1) "}", 1, INGOT_BAD_SHAPE},
        {"product 2^32 x 2^32", "{" TF("a", "U8", "[4294967296,4294967296]", 0, 1) "}", 1, INGOT_BAD_SHAPE},
        {"shape not array", "{" TF("a", "U8", "3", 0, 3) "}", 3, INGOT_BAD_SHAPE},
        /* 12: size */
        {"nbytes overflow", "{" TF("a", "F64", "[4611686018427387904]", 0, 1) "}", 1, INGOT_BAD_SIZE},
        {"span != size", "{" TF("a", "F32", "[2]", 0, 4) "}", 4, INGOT_BAD_SIZE},
        {"partial byte F4", "{" TF("a", "F4", "[1]", 0, 1) "}", 1, INGOT_BAD_SIZE},
        /* 13: layout */
        {"negative offset", "{" TF("a", "U8", "[1]", -1, 0) "}", 1, INGOT_BAD_LAYOUT},
        {"end before begin", "{" TF("a", "U8", "[0]", 2, 1) "}", 2, INGOT_BAD_LAYOUT},
        {"offset 2^64", "{" TF("a", "U8", "[1]", 18446744073709551615, 18446744073709551616) "}", 1,
         INGOT_BAD_LAYOUT},
        {"three offsets", "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1,2]}}", 1, INGOT_BAD_LAYOUT},
        {"one offset", "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0]}}", 1, INGOT_BAD_LAYOUT},
        {"gap", "{" TF("a", "U8", "[1]", 0, 1) "," TF("b", "U8", "[1]", 2, 3) "}", 3, INGOT_BAD_LAYOUT},
        {"first not at 0", "{" TF("a", "U8", "[1]", 1, 2) "}", 2, INGOT_BAD_LAYOUT},
        {"overlap", "{" TF("a", "U8", "[2]", 0, 2) "," TF("b", "U8", "[2]", 1, 3) "}", 3, INGOT_BAD_LAYOUT},
        {"aliasing", "{" TF("a", "U8", "[2]", 0, 2) "," TF("b", "U8", "[2]", 0, 2) "}", 2, INGOT_BAD_LAYOUT},
        {"trailing byte", "{" TF("a", "U8", "[2]", 0, 2) "}", 3, INGOT_BAD_LAYOUT},
        {"{} with data", "{}", 1, INGOT_BAD_LAYOUT},
        {"offset past data", "{" TF("a", "U8", "[8]", 0, 8) "}", 4, INGOT_TRUNCATED},
        /* 16: data one byte short */
        {"data short", "{" TF("a", "U8", "[2]", 0, 2) "}", 1, INGOT_TRUNCATED},
        /* 17: name length */
        /* grammar and entry shape */
        {"top-level array", "[]", 0, INGOT_BAD_METADATA},
        {"BOM", "\xef\xbb\xbf{}", 0, INGOT_BAD_METADATA},
        {"NUL padding", "{}\0", 0, INGOT_BAD_METADATA},
        {"trailing garbage", "{}x", 0, INGOT_BAD_METADATA},
        {"entry not object", "{\"a\":[]}", 0, INGOT_BAD_METADATA},
        {"missing shape", "{\"a\":{\"dtype\":\"U8\",\"data_offsets\":[0,1]}}", 1, INGOT_BAD_METADATA},
        {"unknown field", "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1],\"x\":1}}", 1,
         INGOT_BAD_METADATA},
        {"truncated JSON", "{\"a\":", 0, INGOT_BAD_METADATA},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ingot_error e;
        memset(&e, 0, sizeof e);
        /* "NUL padding" needs its explicit length. */
        ingot_status st;
        if (strcmp(cases[i].what, "NUL padding") == 0) {
            uint8_t b[8 + 3] = {3, 0, 0, 0, 0, 0, 0, 0, '{', '}', 0};
            ingot_file *f = NULL;
            st = ingot_file_open_buffer(b, sizeof b, NULL, &f, &e);
            ingot_file_close(f);
        } else {
            st = open_mk(cases[i].hdr, cases[i].data, &e);
            size_t n;
            uint8_t *b = mk(cases[i].hdr, cases[i].data, &n);
            open_both_paths(b, n, cases[i].what);
            free(b);
        }
        CHECK(st == cases[i].want, "%s: got %s want %s (%s)", cases[i].what, ingot_status_name(st),
              ingot_status_name(cases[i].want), e.msg);
    }
    /* Accepting twins of the rejecting cases (reference behaviour). */
    ingot_error e;
    ASSERT_OK(open_mk("{\"__metadata__\":null}", 0, &e));
    ASSERT_OK(open_mk("  \n{}", 0, &e));
    ASSERT_OK(open_mk("{}      ", 0, &e));
    ASSERT_OK(open_mk("{" TF("a", "U8", "[0]", 0, 0) "," TF("b", "U8", "[0]", 0, 0) "}", 0, &e));
    ASSERT_OK(open_mk("{" TF("s", "F32", "[]", 0, 4) "," TF("z", "I32", "[3,0]", 4, 4) "}", 4, &e));
    ASSERT_OK(open_mk("{" TF("b", "U8", "[1]", 1, 2) "," TF("a", "U8", "[1]", 0, 1) "}", 2, &e));
    ASSERT_OK(open_mk("{" TF("a", "U8", "[1,1,1,1,1,1,1,1]", 0, 1) "}", 1, &e));
    ASSERT_OK(open_mk("{\"__metadata__\":{\"k\":\"\"}}", 0, &e));
    /* Offsets: the error names the tensor and a byte offset inside the header. */
    ASSERT_ST(open_mk("{" TF("a", "U8", "[1]", 0, 1) "," TF("bb", "U8", "[1]", 2, 3) "}", 3, &e),
              INGOT_BAD_LAYOUT);
    ASSERT_STR(e.where, "bb");
    ASSERT_TRUE(e.offset > 8 && e.offset < 100);
    /* 3: header size field */
    uint8_t b[16] = {0};
    ingot_file *f = NULL;
    ingot_open_opts o = {0};
    o.format = "safetensors";
    uint64_t big = 100000001;
    memcpy(b, &big, 8);
    ASSERT_ST(ingot_file_open_buffer(b, 16, &o, &f, &e), INGOT_BAD_HEADER_SIZE);
    big = UINT64_MAX; /* 8 + N wraps */
    memcpy(b, &big, 8);
    ASSERT_ST(ingot_file_open_buffer(b, 16, &o, &f, &e), INGOT_BAD_HEADER_SIZE);
    big = UINT64_MAX - 7;
    memcpy(b, &big, 8);
    ASSERT_ST(ingot_file_open_buffer(b, 16, &o, &f, &e), INGOT_BAD_HEADER_SIZE);
    big = 100; /* past the file: truncated */
    memcpy(b, &big, 8);
    ASSERT_ST(ingot_file_open_buffer(b, 16, &o, &f, &e), INGOT_TRUNCATED);
    big = 1;
    memcpy(b, &big, 8);
    ASSERT_ST(ingot_file_open_buffer(b, 16, &o, &f, &e), INGOT_BAD_HEADER_SIZE);
    ASSERT_ST(ingot_file_open_buffer(b, 0, &o, &f, &e), INGOT_TRUNCATED);
    ASSERT_ST(ingot_file_open_buffer(b, 7, &o, &f, &e), INGOT_TRUNCATED);
    /* 17: a name of 65536 bytes */
    size_t ln = 65536;
    char *hdr = malloc(ln + 128);
    memcpy(hdr, "{\"", 2);
    memset(hdr + 2, 'n', ln);
    strcpy(hdr + 2 + ln, "\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]}}");
    ASSERT_ST(open_mk(hdr, 0, &e), INGOT_BAD_NAME);
    hdr[2 + 1] = '"';
    hdr[2 + 1 + 1] = ':';
    free(hdr);
}

/* The reader matches compact entries ({"dtype":..,"shape":[..],"data_offsets":[..]}, no spaces,
 * this key order) byte for byte and hands everything else to the general scanner. Both must give
 * the same tables and the same errors: every fixture, a writer output with every dtype and rank,
 * and entries at the edges of what the fast path takes. */
TEST(fast_and_general_paths_agree)
{
    size_t nf = 0;
    char **fx = list_fixtures(&nf);
    for (size_t i = 0; fx[i]; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", FIX, fx[i]);
        size_t n;
        uint8_t *b = test_read_file(path, &n);
        ASSERT_TRUE(b != NULL);
        open_both_paths(b, n, fx[i]);
        free(b);
    }
    free_list(fx);

    /* Writer output: ranks 0..8, zero dimensions, every dtype safetensors holds. */
    ingot_writer_opts wo = {0};
    wo.format = "safetensors";
    ingot_writer *w;
    ingot_error e;
    ASSERT_OK(ingot_writer_new(&wo, &w, &e));
    ASSERT_OK(ingot_writer_set_string(w, "format", "pt"));
    static const uint8_t zeros[4096];
    int added = 0;
    for (int dt = 0; dt < 64; dt++) {
        if (!ingot_dtype_valid((ingot_dtype)dt) || ingot_dtype_is_quantized((ingot_dtype)dt)) continue;
        for (uint32_t rank = 0; rank <= INGOT_MAX_RANK; rank++) {
            uint64_t shape[INGOT_MAX_RANK];
            for (uint32_t k = 0; k < rank; k++) shape[k] = (k + (uint32_t)dt) % 3 == 0 ? 0 : 2;
            char name[64];
            snprintf(name, sizeof name, "layers.%d.rank%u.weight", dt, rank);
            if (ingot_writer_add_tensor(w, name, (ingot_dtype)dt, rank, shape, NULL, zeros, NULL) ==
                INGOT_OK)
                added++;
        }
    }
    ASSERT_TRUE(added > 100);
    void *mem = NULL;
    size_t ml = 0;
    ASSERT_OK(ingot_writer_begin_mem(w, &e));
    ASSERT_OK(ingot_writer_commit_mem(w, &mem, &ml, &e));
    ingot_writer_free(w);
    ASSERT_OK(open_both_paths(mem, ml, "writer output"));
    ingot_writer_free_mem(NULL, mem, ml);

    /* Edges of the fast path (compact form), each also parsed spaced. */
    static const struct {
        const char *hdr;
        size_t data;
        ingot_status want;
    } edge[] = {
        {"{" TF("a", "U8", "[]", 0, 1) "}", 1, INGOT_OK},
        {"{" TF("a", "U8", "[1,1,1,1,1,1,1,1]", 0, 1) "}", 1, INGOT_OK},
        {"{" TF("a", "U8", "[1,1,1,1,1,1,1,1,1]", 0, 1) "}", 1, INGOT_OK},
        {"{" TF("a", "U8", "[" ONES64 "]", 0, 1) "}", 1, INGOT_OK},
        {"{" TF("a", "U8", "[" ONES64 ",1]", 0, 1) "}", 1, INGOT_BAD_NDIMS},
        {"{" TF("a", "U8", "[01]", 0, 1) "}", 1, INGOT_BAD_METADATA},
        {"{" TF("a", "U8", "[1]", 00, 1) "}", 1, INGOT_BAD_METADATA},
        {"{" TF("a", "U8", "[0,9999999999999999999]", 0, 0) "}", 0, INGOT_BAD_SHAPE},
        {"{" TF("a", "U8", "[0,10000000000000000000]", 0, 0) "}", 0, INGOT_BAD_SHAPE},
        {"{" TF("a", "U8", "[0]", 9999999999999999999, 9999999999999999999) "}", 0, INGOT_BAD_LAYOUT},
        {"{" TF("a", "U8", "[0]", 10000000000000000000, 10000000000000000000) "}", 0, INGOT_BAD_LAYOUT},
        {"{" TF("a", "U8", "[1.5]", 0, 1) "}", 1, INGOT_BAD_SHAPE},
        {"{" TF("a", "U8", "[1e0]", 0, 1) "}", 1, INGOT_BAD_SHAPE},
        {"{" TF("a", "U8", "[1]", 0, 1e0) "}", 1, INGOT_BAD_LAYOUT},
        {"{" TF("a", "U8", "[2]", 2, 0) "}", 2, INGOT_BAD_LAYOUT},
        {"{" TF("a", "F8_E4M3FNUZ", "[2]", 0, 2) "}", 2, INGOT_OK},
        {"{" TF("a", "F8_E4M3FNUZX", "[2]", 0, 2) "}", 2, INGOT_BAD_TYPE},
        {"{" TF("a", "F3", "[2]", 0, 2) "}", 2, INGOT_BAD_TYPE},
        {"{" TF("a", "F\\u00332", "[2]", 0, 8) "}", 8, INGOT_BAD_TYPE},
        {"{" TF("a\\u0062", "U8", "[2]", 0, 2) "}", 2, INGOT_OK},
        {"{" TF("\xc3\xa9", "U8", "[2]", 0, 2) "}", 2, INGOT_OK},
        {"{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2] }}", 2, INGOT_OK},
        {"{\"a\":{\"shape\":[2],\"dtype\":\"U8\",\"data_offsets\":[0,2]}}", 2, INGOT_OK},
        {"{\"a\":{\"data_offsets\":[0,2],\"shape\":[2],\"dtype\":\"U8\"}}", 2, INGOT_OK},
        {"{\"a\":{\"data_offsets\":[0,2],\"shape\":[2],\"data_offsets\":[0,2]}}", 2, INGOT_DUPLICATE},
        {"{\"a\":{\"dtype\":\"U8\",\"shape\":[2]}}", 2, INGOT_BAD_METADATA},
        {"{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2],\"dtype\":\"U8\"}}", 2,
         INGOT_DUPLICATE},
        {"{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2],}}", 2, INGOT_BAD_METADATA},
        {"{\"a\":{}}", 0, INGOT_BAD_METADATA},
        {"{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2],\"x\":1}}", 2, INGOT_BAD_METADATA},
        {"{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}", 2, INGOT_BAD_METADATA},
        {"{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}}}", 2, INGOT_BAD_METADATA},
        {"{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]", 2, INGOT_BAD_METADATA},
        {"{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2", 2, INGOT_BAD_METADATA},
        {"{\"a\":{\"dtype\":\"U8\",\"shape\":[2", 2, INGOT_BAD_METADATA},
        {"{\"a\":{\"dtype\":\"U8", 2, INGOT_BAD_STRING},
        {"{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]},\"a\":{\"dtype\":\"U8\","
         "\"shape\":[0],\"data_offsets\":[2,2]}}", 2, INGOT_DUPLICATE},
        {"{" TF("b", "U8", "[1]", 1, 2) "," TF("a", "U8", "[1]", 0, 1) "," TF("c", "U8", "[0]", 2, 2) "}", 2,
         INGOT_OK},
    };
    for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++) {
        size_t n;
        uint8_t *b = mk(edge[i].hdr, edge[i].data, &n);
        char what[32];
        snprintf(what, sizeof what, "edge %zu", i);
        ingot_status st = open_both_paths(b, n, what);
        CHECK(st == edge[i].want, "edge %zu (%s): got %s want %s", i, edge[i].hdr,
              ingot_status_name(st), ingot_status_name(edge[i].want));
        free(b);
    }
}

/* Name sort and uniqueness at open (order.c): headers sorted, in two sorted runs (by dtype, then
 * name, as the reference writer stores them), in many runs, reversed; a duplicate anywhere. */
TEST(name_index_orders_and_duplicates)
{
    enum { NT = 300 };
    static const int kinds[] = {0, 1, 2, 3};
    for (size_t kind = 0; kind < sizeof kinds / sizeof kinds[0]; kind++) {
        for (int dup = -1; dup < NT; dup += 37) {
            size_t cap = NT * 96 + 16, o = 0;
            char *h = malloc(cap);
            h[o++] = '{';
            for (int i = 0; i < NT; i++) {
                int k = kind == 0 ? i                            /* sorted */
                        : kind == 1 ? (i % 2 ? NT / 2 + i / 2 : i / 2) /* two interleaved runs */
                        : kind == 2 ? (i * 7919) % NT            /* scattered */
                                    : NT - 1 - i;                /* reversed */
                if (dup >= 0 && i == dup) k = (k + 1) % NT; /* collides with another name */
                o += (size_t)snprintf(h + o, cap - o,
                                      "%s\"w.%04d\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[%d,%d]}",
                                      i ? "," : "", k, i, i + 1);
            }
            h[o++] = '}';
            h[o] = 0;
            size_t n;
            uint8_t *b = mk(h, NT, &n);
            ingot_file *f = NULL;
            ingot_error e;
            ingot_status st = ingot_file_open_buffer(b, n, NULL, &f, &e);
            if (dup >= 0) {
                CHECK(st == INGOT_DUPLICATE, "kind %zu dup %d: got %s", kind, dup, ingot_status_name(st));
            } else {
                ASSERT_OK(st);
                for (int k = 0; k < NT; k++) {
                    char name[16];
                    snprintf(name, sizeof name, "w.%04d", k);
                    ingot_tensor_info t;
                    ASSERT_OK(ingot_file_tensor_find(f, name, &t));
                    ASSERT_STR(t.name, name);
                }
                ingot_tensor_info t;
                ASSERT_ST(ingot_file_tensor_find(f, "w.", &t), INGOT_NOT_FOUND);
                ASSERT_ST(ingot_file_tensor_find(f, "w.99999", &t), INGOT_NOT_FOUND);
            }
            ingot_file_close(f);
            free(b);
            free(h);
        }
    }
}

TEST(many_tiny_tensors_limit_time)
{
    /* 18: 200k tiny tensors: opens (it is a valid file), memory bounded by the header size. */
    size_t nt = 200000;
    size_t cap = nt * 80 + 16;
    char *h = malloc(cap);
    size_t o = 0;
    h[o++] = '{';
    for (size_t i = 0; i < nt; i++)
        o += (size_t)snprintf(h + o, cap - o, "%s\"t%zu\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[%zu,%zu]}",
                              i ? "," : "", i, i, i + 1);
    h[o++] = '}';
    h[o] = 0;
    ingot_error e;
    size_t n;
    uint8_t *b = mk(h, nt, &n);
    ingot_file *f;
    ASSERT_OK(ingot_file_open_buffer(b, n, NULL, &f, &e));
    ASSERT_EQ(ingot_file_tensor_count(f), nt);
    ingot_tensor_info t;
    ASSERT_OK(ingot_file_tensor_find(f, "t123456", &t));
    ASSERT_EQ(t.index, 123456);
    ingot_file_close(f);
    free(b);
    free(h);
}

TEST(every_truncation_and_byte_flips)
{
    size_t n;
    uint8_t *orig = test_read_file(FIX "/st_scalars_and_empty.safetensors", &n);
    ASSERT_TRUE(orig != NULL);
    ingot_open_opts o = {0};
    o.format = "safetensors";
    for (size_t k = 0; k < n; k++) {
        ingot_file *f = NULL;
        ingot_error e;
        ingot_status st = ingot_file_open_buffer(orig, k, &o, &f, &e);
        CHECK(st == INGOT_TRUNCATED, "prefix %zu: %s", k, ingot_status_name(st));
        ingot_file_close(f);
        if (k >= 9) { /* detected by content too */
            st = ingot_file_open_buffer(orig, k, NULL, &f, &e);
            CHECK(st == INGOT_TRUNCATED, "prefix %zu (probe): %s", k, ingot_status_name(st));
            ingot_file_close(f);
        }
    }
    /* Flip every header byte through a few values: no crash, sanitizers quiet. */
    uint8_t *cp = malloc(n);
    static const uint8_t vals[] = {0x00, 0x20, 0x22, 0x2c, 0x30, 0x39, 0x5b, 0x5c, 0x7b, 0x7d, 0x80, 0xff};
    size_t ok = 0;
    uint64_t hn;
    memcpy(&hn, orig, 8);
    for (size_t k = 0; k < 8 + hn; k++)
        for (size_t v = 0; v < sizeof vals; v++) {
            memcpy(cp, orig, n);
            cp[k] ^= vals[v] ? vals[v] : 1;
            ingot_file *f = NULL;
            if (ingot_file_open_buffer(cp, n, &o, &f, NULL) == INGOT_OK) {
                ok++;
                for (uint64_t i = 0; i < ingot_file_tensor_count(f); i++) {
                    ingot_tensor_info t;
                    ingot_file_tensor_at(f, i, &t);
                    if (t.nbytes) {
                        volatile uint8_t x = ((const uint8_t *)t.data)[t.nbytes - 1];
                        (void)x;
                    }
                }
                ingot_file_close(f);
            }
        }
    ASSERT_TRUE(ok > 0); /* e.g. names changed to other valid names */
    free(cp);
    free(orig);
}

/* ---- writer ---- */

static char notices[4096];
static int n_notices;
static void on_notice(void *ctx, const char *msg)
{
    (void)ctx;
    n_notices++;
    strncat(notices, msg, sizeof notices - strlen(notices) - 2);
    strcat(notices, "\n");
}

TEST(writer_metadata_stringified_with_notices)
{
    ingot_writer_opts wo = {0};
    wo.format = "safetensors";
    ingot_writer *w;
    ingot_error e;
    ASSERT_OK(ingot_writer_new(&wo, &w, &e));
    notices[0] = 0;
    n_notices = 0;
    ingot_writer_set_notice(w, on_notice, NULL);
    ASSERT_OK(ingot_writer_set_string(w, "format", "pt"));
    ASSERT_OK(ingot_writer_set_u32(w, "u", 42));
    ASSERT_OK(ingot_writer_set_i64(w, "i", -7));
    ASSERT_OK(ingot_writer_set_f32(w, "f", 0.1f));
    ASSERT_OK(ingot_writer_set_f64(w, "d", 1e300));
    ASSERT_OK(ingot_writer_set_bool(w, "b", true));
    ASSERT_OK(ingot_writer_set_bytes(w, "y", "\x01\xfe", 2));
    int32_t arr[3] = {1, -2, 3};
    ASSERT_OK(ingot_writer_set_array(w, "a", INGOT_META_I32, arr, 3));
    const char *strs[2] = {"x\"y", "z"};
    size_t lens[2] = {3, 1};
    ASSERT_OK(ingot_writer_set_string_array(w, "s", INGOT_META_STRING, (const void *const *)strs,
                                            lens, 2));
    float fa[2] = {1.5f, 0.0f / 0.0f};
    ASSERT_OK(ingot_writer_set_array(w, "fa", INGOT_META_F32, fa, 2));
    float x[2] = {1, 2};
    uint64_t shape[1] = {2};
    ASSERT_OK(ingot_writer_add_tensor(w, "x", INGOT_DTYPE_F32, 1, shape, NULL, x, &e));
    ASSERT_OK(ingot_writer_begin_mem(w, &e));
    void *out;
    size_t len;
    ASSERT_OK(ingot_writer_commit_mem(w, &out, &len, &e));
    ingot_writer_free(w);
    ASSERT_EQ(n_notices, 9);
    ASSERT_TRUE(strstr(notices, "'u': u32 value stored as the string \"42\"") != NULL);
    ingot_file *f;
    ASSERT_OK(ingot_file_open_buffer(out, len, NULL, &f, &e));
    static const char *want[][2] = {{"format", "pt"}, {"u", "42"}, {"i", "-7"}, {"f", "0.1"},
                                    {"d", "1e+300"}, {"b", "true"}, {"y", "01fe"},
                                    {"a", "[1,-2,3]"}, {"s", "[\"x\\\"y\",\"z\"]"},
                                    {"fa", "[1.5,\"nan\"]"}};
    ASSERT_EQ(ingot_file_meta_count(f), 10);
    for (size_t k = 0; k < 10; k++) {
        ingot_meta_info m;
        ASSERT_OK(ingot_file_meta_at(f, k, &m));
        CHECK(m.key_len == strlen(want[k][0]) && memcmp(m.key, want[k][0], m.key_len) == 0,
              "key %zu", k);
        CHECK(m.count == strlen(want[k][1]) && memcmp(m.data, want[k][1], (size_t)m.count) == 0,
              "%s: \"%.*s\" want \"%s\"", want[k][0], (int)m.count, (const char *)m.data, want[k][1]);
    }
    uint64_t hn;
    memcpy(&hn, out, 8);
    ASSERT_EQ((8 + hn) % 8, 0);
    ingot_file_close(f);
    ingot_writer_free_mem(NULL, out, len);
}

/* A tensor safetensors cannot hold is refused at add_tensor, naming it. */
static void expect_refused(const char *name, ingot_dtype dt, uint64_t dim, ingot_status want)
{
    ingot_writer_opts wo = {0};
    wo.format = "safetensors";
    ingot_writer *w;
    ingot_error e;
    memset(&e, 0, sizeof e);
    if (ingot_writer_new(&wo, &w, &e) != INGOT_OK) FAIL_AT("writer_new");
    uint8_t q[64] = {0};
    ingot_status st = ingot_writer_add_tensor(w, name, dt, 1, &dim, NULL, q, &e);
    ingot_writer_free(w);
    CHECK(st == want, "%s: %s", name, ingot_status_name(st));
    CHECK(strcmp(e.where, name) == 0, "where \"%s\" want \"%s\"", e.where, name);
}

TEST(writer_refuses_what_safetensors_cannot_hold)
{
    expect_refused("q.weight", INGOT_DTYPE_Q4_0, 32, INGOT_UNSUPPORTED);
    expect_refused("k.weight", INGOT_DTYPE_Q4_K, 256, INGOT_UNSUPPORTED);
    expect_refused("m.weight", INGOT_DTYPE_MXFP4, 32, INGOT_UNSUPPORTED);
    expect_refused("__metadata__", INGOT_DTYPE_F32, 2, INGOT_BAD_NAME);
    /* Sub-byte and new dtypes are written, and read back the same. */
    static const ingot_dtype ok[] = {INGOT_DTYPE_F4, INGOT_DTYPE_F6_E2M3, INGOT_DTYPE_F6_E3M2,
                                     INGOT_DTYPE_F8_E8M0, INGOT_DTYPE_C64, INGOT_DTYPE_BOOL};
    ingot_writer_opts wo = {0};
    wo.format = "safetensors";
    ingot_writer *w;
    ingot_error e;
    ASSERT_OK(ingot_writer_new(&wo, &w, &e));
    uint8_t data[64];
    for (int i = 0; i < 64; i++) data[i] = (uint8_t)i;
    static const uint8_t bools[4] = {1, 0, 0, 1}; /* the writer refuses other BOOL bytes */
    for (size_t k = 0; k < sizeof ok / sizeof ok[0]; k++) {
        char name[16];
        snprintf(name, sizeof name, "t%zu", k);
        uint64_t dim = 4;
        ASSERT_OK(ingot_writer_add_tensor(w, name, ok[k], 1, &dim, NULL,
                                          ok[k] == INGOT_DTYPE_BOOL ? bools : data, &e));
    }
    ASSERT_OK(ingot_writer_begin_mem(w, &e));
    void *out;
    size_t len;
    ASSERT_OK(ingot_writer_commit_mem(w, &out, &len, &e));
    ingot_writer_free(w);
    ingot_file *f;
    ASSERT_OK(ingot_file_open_buffer(out, len, NULL, &f, &e));
    for (size_t k = 0; k < sizeof ok / sizeof ok[0]; k++) {
        ingot_tensor_info t;
        ASSERT_OK(ingot_file_tensor_at(f, k, &t));
        ASSERT_EQ(t.dtype, ok[k]);
        ASSERT_EQ(t.nelem, 4);
        ASSERT_MEM(t.data, ok[k] == INGOT_DTYPE_BOOL ? bools : data, (size_t)t.nbytes);
    }
    ingot_file_close(f);
    ingot_writer_free_mem(NULL, out, len);
}

TEST(writer_alignment_and_determinism)
{
    for (int pass = 0; pass < 2; pass++) {
        ingot_writer_opts wo = {0};
        wo.format = "safetensors";
        ingot_writer *w;
        ingot_error e;
        ASSERT_OK(ingot_writer_new(&wo, &w, &e));
        ASSERT_ST(ingot_writer_set_option(w, "alignment", "12", &e), INGOT_BAD_ALIGN);
        ASSERT_ST(ingot_writer_set_option(w, "nope", "1", &e), INGOT_UNSUPPORTED);
        ASSERT_ST(ingot_writer_set_option(w, "max_shard_size", "5XB", &e), INGOT_BAD_METADATA);
        ASSERT_OK(ingot_writer_set_option(w, "alignment", pass ? "4096" : "64", &e));
        uint8_t d[3] = {1, 2, 3};
        uint64_t shape[1] = {3};
        ASSERT_OK(ingot_writer_add_tensor(w, "a", INGOT_DTYPE_U8, 1, shape, NULL, d, &e));
        ASSERT_OK(ingot_writer_add_tensor(w, "b", INGOT_DTYPE_I8, 1, shape, NULL, d, &e));
        ASSERT_OK(ingot_writer_begin_mem(w, &e));
        void *out, *out2;
        size_t len, len2;
        ASSERT_OK(ingot_writer_commit_mem(w, &out, &len, &e));
        ingot_writer_free(w);
        uint64_t hn;
        memcpy(&hn, out, 8);
        ASSERT_EQ((8 + hn) % (pass ? 4096 : 64), 0);
        ASSERT_EQ(((const uint8_t *)out)[8 + hn - 1], ' ');
        ingot_file *f;
        ASSERT_OK(ingot_file_open_buffer(out, len, NULL, &f, &e));
        ASSERT_EQ(ingot_file_tensor_count(f), 2);
        ingot_file_close(f);
        /* Same description, same bytes. */
        ASSERT_OK(ingot_writer_new(&wo, &w, &e));
        ASSERT_OK(ingot_writer_set_option(w, "alignment", pass ? "4096" : "64", &e));
        ASSERT_OK(ingot_writer_add_tensor(w, "a", INGOT_DTYPE_U8, 1, shape, NULL, d, &e));
        ASSERT_OK(ingot_writer_add_tensor(w, "b", INGOT_DTYPE_I8, 1, shape, NULL, d, &e));
        ASSERT_OK(ingot_writer_begin_mem(w, &e));
        ASSERT_OK(ingot_writer_commit_mem(w, &out2, &len2, &e));
        ingot_writer_free(w);
        ASSERT_EQ(len, len2);
        ASSERT_MEM(out, out2, len);
        ingot_writer_free_mem(NULL, out, len);
        ingot_writer_free_mem(NULL, out2, len2);
    }
}

/* CLI smoke: info --json, convert to .ingot and back, verify. */
TEST(cli_smoke)
{
    char cmd[8192], a[600], b[600], c[600];
    snprintf(a, sizeof a, "%s/st_cli_info.json", INGOT_BINARY_DIR);
    snprintf(b, sizeof b, "%s/st_cli.ingot", INGOT_BINARY_DIR);
    snprintf(c, sizeof c, "%s/st_cli.safetensors", INGOT_BINARY_DIR);
    snprintf(cmd, sizeof cmd, "'%s' info --json '%s/hfsamples_f_f32.safetensors' > '%s'", INGOT_CLI, FIX, a);
    ASSERT_EQ(system(cmd), 0);
    size_t n;
    char *txt = (char *)test_read_file(a, &n);
    ASSERT_TRUE(txt != NULL);
    txt = realloc(txt, n + 1);
    txt[n] = 0;
    ASSERT_TRUE(strstr(txt, "\"format\": \"safetensors\"") != NULL);
    ASSERT_TRUE(strstr(txt, "\"dtype\": \"F32\"") != NULL);
    free(txt);
    snprintf(cmd, sizeof cmd, "'%s' convert '%s/fastsafetensors_a.safetensors' '%s' >/dev/null && '%s' convert '%s' '%s' >/dev/null && '%s' verify '%s' >/dev/null && cmp -s '%s' '%s/fastsafetensors_a.safetensors'",
             INGOT_CLI, FIX, b, INGOT_CLI, b, c, INGOT_CLI, c, c, FIX);
    ASSERT_EQ(system(cmd), 0); /* one metadata key: the round trip is byte-exact */
}

RUN_TESTS(T(fixtures_match_sidecars), T(rewrite_is_byte_exact), T(round_trip_through_ingot),
          T(sub_byte_and_new_dtypes), T(probe_not_confused_with_index), T(malformed_catalogue),
          T(fast_and_general_paths_agree), T(name_index_orders_and_duplicates),
          T(many_tiny_tensors_limit_time),
          T(every_truncation_and_byte_flips), T(writer_metadata_stringified_with_notices),
          T(writer_refuses_what_safetensors_cannot_hold),
          T(writer_alignment_and_determinism), T(cli_smoke))
