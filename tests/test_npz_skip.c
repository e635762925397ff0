/* test_npz_skip.c - .npz files with string members open their numeric members and report each
 * string member as a notice (ingot_file_notice_*), and errors inside deflated members name the
 * offset in the inflated member. Vectors: tests/data/npy (numpy 1.24, gen_npz_vectors.py), each
 * checked against its sidecar (names, dtypes, shapes, sha256 computed by numpy).
 */
#include <json-c/json.h>
#include <unistd.h>

#include "harness.h"
#include "sha256.h"

#define DATA INGOT_SOURCE_DIR "/tests/data/npy/"

static json_object *sidecar(const char *file)
{
    char path[512];
    snprintf(path, sizeof path, DATA "%s.json", file);
    return json_object_from_file(path);
}

static const char *jstr(json_object *o, const char *k)
{
    json_object *v;
    return json_object_object_get_ex(o, k, &v) ? json_object_get_string(v) : NULL;
}

/* Opens DATA file in mode 0 (mmap), 1 (pread) or 2 (buffer held in *buf). */
static ingot_status open_mode(const char *file, int mode, ingot_file **f, ingot_error *e,
                              uint8_t **buf)
{
    char path[512];
    snprintf(path, sizeof path, DATA "%s", file);
    *buf = NULL;
    if (mode < 2) {
        ingot_open_opts o = {.io = mode ? INGOT_IO_PREAD : INGOT_IO_MMAP};
        return ingot_file_open(path, &o, f, e);
    }
    FILE *fp = fopen(path, "rb");
    if (!fp) return INGOT_NOT_FOUND;
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    *buf = malloc((size_t)n);
    size_t got = fread(*buf, 1, (size_t)n, fp);
    fclose(fp);
    return ingot_file_open_buffer(*buf, got, NULL, f, e);
}

/* The file opens in every mode with exactly the sidecar's tensors (bytes by sha256) and one
 * SKIPPED notice per string member, naming it and its descr. */
static void check_file(const char *file)
{
    json_object *side = sidecar(file), *tensors, *skipped;
    ASSERT_TRUE(side != NULL);
    ASSERT_TRUE(json_object_object_get_ex(side, "tensors", &tensors));
    ASSERT_TRUE(json_object_object_get_ex(side, "skipped", &skipped));
    for (int mode = 0; mode < 3; mode++) {
        ingot_file *f = NULL;
        ingot_error e;
        uint8_t *buf;
        ingot_status st = open_mode(file, mode, &f, &e, &buf);
        CHECK(st == INGOT_OK, "%s mode %d: %s %s", file, mode, ingot_status_name(st), e.msg);
        if (st != INGOT_OK) {
            free(buf);
            continue;
        }
        size_t nt = json_object_array_length(tensors);
        CHECK(ingot_file_tensor_count(f) == nt, "%s: %llu tensors, sidecar %zu", file,
              (unsigned long long)ingot_file_tensor_count(f), nt);
        for (size_t i = 0; i < nt; i++) {
            json_object *jt = json_object_array_get_idx(tensors, i), *shape;
            const char *name = jstr(jt, "name");
            ingot_tensor_info t;
            CHECK(ingot_file_tensor_find(f, name, &t) == INGOT_OK, "%s: no tensor %s", file, name);
            if (!t.name) continue;
            CHECK(strcmp(ingot_dtype_name(t.dtype), jstr(jt, "dtype")) == 0, "%s/%s: dtype %s",
                  file, name, ingot_dtype_name(t.dtype));
            json_object_object_get_ex(jt, "shape", &shape);
            CHECK(t.rank == json_object_array_length(shape), "%s/%s: rank %u", file, name, t.rank);
            for (uint32_t d = 0; d < t.rank && d < json_object_array_length(shape); d++)
                CHECK(t.shape[d] ==
                          (uint64_t)json_object_get_int64(json_object_array_get_idx(shape, d)),
                      "%s/%s: dim %u", file, name, d);
            void *b = malloc(t.nbytes ? t.nbytes : 1);
            char hex[65] = "";
            CHECK(ingot_file_tensor_copy(f, t.index, b, t.nbytes, &e) == INGOT_OK, "%s/%s: %s",
                  file, name, e.msg);
            test_sha256_hex(b, t.nbytes, hex);
            CHECK(strcmp(hex, jstr(jt, "sha256")) == 0, "%s/%s: sha256 %s", file, name, hex);
            free(b);
            CHECK(ingot_file_tensor_verify(f, t.index, &e) == INGOT_OK, "%s/%s: verify %s", file,
                  name, e.msg);
        }
        CHECK(ingot_file_verify(f, 1, &e) == INGOT_OK, "%s: verify %s", file, e.msg);
        size_t ns = json_object_array_length(skipped);
        CHECK(ingot_file_notice_count(f) == ns, "%s: %llu notices, sidecar %zu", file,
              (unsigned long long)ingot_file_notice_count(f), ns);
        for (size_t i = 0; i < ns && i < ingot_file_notice_count(f); i++) {
            json_object *js = json_object_array_get_idx(skipped, i);
            ingot_notice n;
            CHECK(ingot_file_notice_at(f, i, &n) == INGOT_OK, "%s: notice %zu", file, i);
            CHECK(n.kind == INGOT_NOTICE_SKIPPED, "%s: notice kind %d", file, (int)n.kind);
            CHECK(n.name_len == strlen(n.name) && strcmp(n.name, jstr(js, "name")) == 0,
                  "%s: notice %zu names '%s', sidecar '%s'", file, i, n.name, jstr(js, "name"));
            char descr[32];
            snprintf(descr, sizeof descr, "'%s'", jstr(js, "descr"));
            CHECK(strstr(n.reason, descr) != NULL && strstr(n.reason, "skipped") != NULL,
                  "%s: reason '%s' lacks %s", file, n.reason, descr);
            CHECK(n.offset < ingot_file_size(f), "%s: notice offset %llu", file,
                  (unsigned long long)n.offset);
            ingot_tensor_info t;
            CHECK(ingot_file_tensor_find(f, n.name, &t) == INGOT_NOT_FOUND,
                  "%s: skipped %s is a tensor", file, n.name);
        }
        ingot_notice n;
        memset(&n, 0x5a, sizeof n);
        CHECK(ingot_file_notice_at(f, ns, &n) == INGOT_RANGE && n.name == NULL && n.kind == 0,
              "%s: notice past the end", file);
        ingot_file_close(f);
        free(buf);
    }
    json_object_put(side);
}

TEST(test_npz_scipy_save_npz_opens)
{
    check_file("scipy_csr.npz");
}

TEST(test_npz_savez_with_strings_opens)
{
    check_file("savez_str.npz");
}

/* A file without anything skipped has no notices; the getters check their arguments. */
TEST(test_notice_api)
{
    ingot_file *f;
    uint8_t *buf;
    ingot_notice n;
    ASSERT_OK(open_mode("scipy_csr.npz", 0, &f, NULL, &buf));
    ASSERT_ST(ingot_file_notice_at(f, 0, NULL), INGOT_MISUSE);
    ASSERT_ST(ingot_file_notice_at(NULL, 0, &n), INGOT_MISUSE);
    ASSERT_U64(ingot_file_notice_count(NULL), 0);
    ingot_file_close(f);
    ASSERT_OK(ingot_file_open(INGOT_SOURCE_DIR "/tests/data/tiny.ingot", NULL, &f, NULL));
    ASSERT_U64(ingot_file_notice_count(f), 0);
    ASSERT_ST(ingot_file_notice_at(f, 0, &n), INGOT_RANGE);
    ingot_file_close(f);
}

/* A .npy holding a string array has nothing to open: still refused, as before. */
TEST(test_npy_text_alone_refused)
{
    static const char dict[] = "{'descr': '<U3', 'fortran_order': False, 'shape': (), }";
    uint8_t b[128 + 12] = "\x93NUMPY\x01\x00";
    size_t hlen = 128 - 10;
    b[8] = (uint8_t)hlen;
    memset(b + 10, ' ', hlen);
    memcpy(b + 10, dict, sizeof dict - 1);
    b[127] = '\n';
    ingot_file *f;
    ingot_error e;
    ASSERT_ST(ingot_file_open_buffer(b, sizeof b, NULL, &f, &e), INGOT_UNSUPPORTED);
    ASSERT_TRUE(strstr(e.msg, "'<U3'") != NULL);
    ASSERT_U64(e.offset, 10 + 11); /* the descr string */
}

/* A bad npy header inside a member: a stored member's error offset is the file offset of the
 * fault; a deflated member's is the file offset of its compressed data, and the message gives
 * the offset in the inflated member (computed by the generator from the bytes it wrote). */
TEST(test_npz_error_offsets_in_deflated_members)
{
    static const char *const files[] = {"bad_header_stored.npz", "bad_header_deflated.npz"};
    for (size_t k = 0; k < 2; k++) {
        json_object *side = sidecar(files[k]), *inflated;
        ASSERT_TRUE(side != NULL);
        json_object *off;
        json_object_object_get_ex(side, "offset", &off);
        json_object_object_get_ex(side, "inflated_offset", &inflated);
        for (int mode = 0; mode < 3; mode++) {
            ingot_file *f = NULL;
            ingot_error e;
            uint8_t *buf;
            ingot_status st = open_mode(files[k], mode, &f, &e, &buf);
            CHECK(st == INGOT_BAD_METADATA, "%s mode %d: %s", files[k], mode,
                  ingot_status_name(st));
            CHECK(f == NULL, "%s: handle", files[k]);
            CHECK(e.offset == (uint64_t)json_object_get_int64(off), "%s mode %d: offset %llu, "
                  "sidecar %lld (%s)", files[k], mode, (unsigned long long)e.offset,
                  (long long)json_object_get_int64(off), e.msg);
            CHECK(strcmp(e.where, jstr(side, "where")) == 0, "%s: where '%s'", files[k], e.where);
            CHECK(strstr(e.msg, "unknown key 'bogus'") != NULL, "%s: msg %s", files[k], e.msg);
            char want[96];
            if (inflated && json_object_get_type(inflated) == json_type_int) {
                snprintf(want, sizeof want, "offset %lld in the inflated member 'a.npy': ",
                         (long long)json_object_get_int64(inflated));
                CHECK(strncmp(e.msg, want, strlen(want)) == 0, "%s: msg '%s', want '%s...'",
                      files[k], e.msg, want);
            } else {
                CHECK(strstr(e.msg, "inflated") == NULL, "%s: msg %s", files[k], e.msg);
            }
            free(buf);
        }
        json_object_put(side);
    }
}

/* An allocation failure anywhere in an open that records notices: NOMEM, nothing leaked; the
 * first run that gets all its allocations opens the file with its notice. */
typedef struct {
    long fail_at, n;
    size_t live;
} failing;

static void *fail_alloc(void *ctx, size_t size, size_t align)
{
    failing *c = ctx;
    if (c->n++ == c->fail_at) return NULL;
    void *p = NULL;
    if (posix_memalign(&p, align < sizeof(void *) ? sizeof(void *) : align, size ? size : 1))
        return NULL;
    c->live += size;
    return p;
}

static void fail_free(void *ctx, void *p, size_t size)
{
    failing *c = ctx;
    c->live -= size;
    free(p);
}

TEST(test_npz_skip_oom_loop)
{
    int opened = 0;
    for (long k = 0; k < 1000 && !opened; k++) {
        failing c = {k, 0, 0};
        ingot_allocator a = {fail_alloc, fail_free, &c};
        ingot_open_opts o = {.allocator = &a};
        ingot_file *f = NULL;
        ingot_error e;
        ingot_status st = ingot_file_open(DATA "scipy_csr.npz", &o, &f, &e);
        if (st == INGOT_OK) {
            opened = 1;
            CHECK(ingot_file_notice_count(f) == 1 && ingot_file_tensor_count(f) == 4,
                  "fail at %ld: %llu notices", k, (unsigned long long)ingot_file_notice_count(f));
            ingot_file_close(f);
        } else {
            CHECK(st == INGOT_NOMEM && f == NULL, "fail at %ld: %s", k, ingot_status_name(st));
        }
        CHECK(c.live == 0, "fail at %ld: %zu bytes leaked", k, c.live);
    }
    ASSERT_TRUE(opened);
}

int main(int argc, char **argv)
{
    static const test_case cases[] = {
        T(test_npz_scipy_save_npz_opens),
        T(test_npz_savez_with_strings_opens),
        T(test_notice_api),
        T(test_npy_text_alone_refused),
        T(test_npz_error_offsets_in_deflated_members),
        T(test_npz_skip_oom_loop),
    };
    return harness_run(cases, sizeof cases / sizeof cases[0], argc, argv);
}
