/*
 * test_inspect.c - include/ingot/inspect.h: SHA-256 against FIPS 180-4's examples and the
 * tests' own SHA-256 (tests/support) on many lengths; tensor digests equal to SHA-256 of the
 * prefix and the C-order little-endian bytes (the numpy fixtures' sha256_c_order_le sidecars),
 * the same for a big-endian or column-major .npy and its .ingot conversion; statistics against
 * the fixtures' sum, min and max (written by NumPy).
 */
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "ingot/ingot.h"
#include "sha256.h"

#define NPY INGOT_FIXTURES "/npy/"

static void hex(const uint8_t d[32], char out[65])
{
    for (int i = 0; i < 32; i++) snprintf(out + 2 * i, 3, "%02x", d[i]);
}

TEST(sha256_vectors)
{
    uint8_t d[32];
    char h[65];
    ingot_sha256("abc", 3, d);
    hex(d, h);
    ASSERT_STR(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    ingot_sha256("", 0, d);
    hex(d, h);
    ASSERT_STR(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    static uint8_t buf[1000];
    for (size_t i = 0; i < sizeof buf; i++) buf[i] = (uint8_t)(i * 131 + 7);
    for (size_t n = 0; n <= sizeof buf; n += n < 130 ? 1 : 37) {
        char want[65];
        test_sha256_hex(buf, n, want);
        ingot_sha256(buf, n, d);
        hex(d, h);
        CHECK(!strcmp(h, want), "length %zu", n);
    }
}

static json_object *sidecar_tensor(const char *npy)
{
    char path[600];
    snprintf(path, sizeof path, NPY "%s.expected.json", npy);
    json_object *root = json_object_from_file(path), *ts, *t0;
    if (!root || !json_object_object_get_ex(root, "tensors", &ts)) return NULL;
    t0 = json_object_array_get_idx(ts, 0);
    json_object_get(t0);
    json_object_put(root);
    return t0;
}

static const char *jstr(json_object *o, const char *k)
{
    json_object *v;
    return json_object_object_get_ex(o, k, &v) ? json_object_get_string(v) : "";
}

static double jnum(json_object *o, const char *k)
{
    json_object *v;
    return json_object_object_get_ex(o, k, &v) ? json_object_get_double(v) : NAN;
}

/* The digest is SHA-256 of the prefix then the C-order LE bytes, whose own SHA-256 the sidecar
 * gives: check the bytes through a .ingot conversion (plain LE storage), and that the digests
 * of the original and the conversion agree. */
static void digest_case(const char *npy, const char *dtype)
{
    json_object *t = sidecar_tensor(npy);
    ASSERT_TRUE(t != NULL);
    char src[600], out[600];
    snprintf(src, sizeof src, NPY "%s", npy);
    snprintf(out, sizeof out, "%s/inspect_%s.ingot", INGOT_BINARY_DIR, npy);
    ingot_file *f, *g;
    ASSERT_OK(ingot_file_open(src, NULL, &f, NULL));
    ingot_convert_plan *p;
    ASSERT_OK(ingot_convert_plan_new(f, &p, NULL));
    ingot_convert_opts o = {0};
    o.no_fsync = true;
    ASSERT_OK(ingot_convert_run(p, out, &o, NULL, NULL));
    ingot_convert_plan_free(p);
    ASSERT_OK(ingot_file_open(out, NULL, &g, NULL));
    ingot_tensor_info ti;
    ASSERT_OK(ingot_file_tensor_at(g, 0, &ti));
    uint8_t *bytes = malloc(ti.nbytes);
    ASSERT_OK(ingot_file_tensor_read(g, 0, 0, bytes, (size_t)ti.nbytes, NULL));
    char h[65];
    test_sha256_hex(bytes, (size_t)ti.nbytes, h);
    ASSERT_STR(h, jstr(t, "sha256_c_order_le"));
    /* the digest computed here from its definition */
    size_t pre = 16 + strlen(dtype) + 1 + 4 + 8 * ti.rank;
    uint8_t *msg = malloc(pre + ti.nbytes), *q = msg;
    memcpy(q, "ingot-tensor-v1", 16), q += 16;
    memcpy(q, dtype, strlen(dtype) + 1), q += strlen(dtype) + 1;
    for (int k = 0; k < 4; k++) *q++ = (uint8_t)(ti.rank >> (8 * k));
    for (uint32_t d = 0; d < ti.rank; d++)
        for (int k = 0; k < 8; k++) *q++ = (uint8_t)(ti.shape[d] >> (8 * k));
    memcpy(q, bytes, ti.nbytes);
    char want[65];
    test_sha256_hex(msg, pre + ti.nbytes, want);
    uint8_t d1[32], d2[32];
    ASSERT_OK(ingot_file_tensor_digest(f, 0, d1, NULL));
    ASSERT_OK(ingot_file_tensor_digest(g, 0, d2, NULL));
    hex(d1, h);
    ASSERT_STR(h, want);
    ASSERT_MEM(d1, d2, 32);
    ASSERT_OK(ingot_file_digest(f, d1, NULL));
    ASSERT_OK(ingot_file_digest(g, d2, NULL));
    ASSERT_MEM(d1, d2, 32);
    /* statistics against NumPy's sum, min, max */
    ingot_tensor_stats s;
    ASSERT_OK(ingot_file_tensor_stats(f, 0, &s, NULL));
    ASSERT_U64(s.count, ti.nelem);
    CHECK(s.min == jnum(t, "min") && s.max == jnum(t, "max"), "%s: min %g max %g", npy, s.min,
          s.max);
    CHECK(fabs(s.mean * (double)s.count - jnum(t, "sum")) < 1e-9 * (1 + fabs(jnum(t, "sum"))),
          "%s: mean %.17g sum %.17g", npy, s.mean, jnum(t, "sum"));
    free(bytes);
    free(msg);
    ingot_file_close(g);
    ingot_file_close(f);
    json_object_put(t);
}

TEST(digest_big_endian) { digest_case("be_f4_3x2.npy", "F32"); }
TEST(digest_fortran) { digest_case("fortran_f4_3x4.npy", "F32"); }
TEST(digest_plain) { digest_case("f4_128x256.npy", "F32"); }

TEST(stats_nan_inf)
{
    float x[6] = {1, NAN, 3, INFINITY, -1, 5};
    ingot_writer *w;
    ingot_writer_opts wo = {0};
    wo.no_fsync = true;
    ASSERT_OK(ingot_writer_new(&wo, &w, NULL));
    uint64_t sh[1] = {6};
    ASSERT_OK(ingot_writer_add_tensor(w, "x", INGOT_DTYPE_F32, 1, sh, NULL, x, NULL));
    char path[600];
    snprintf(path, sizeof path, "%s/inspect_nan.ingot", INGOT_BINARY_DIR);
    ASSERT_OK(ingot_writer_save(w, path, NULL));
    ingot_writer_free(w);
    ingot_file *f;
    ASSERT_OK(ingot_file_open(path, NULL, &f, NULL));
    ingot_tensor_stats s;
    ASSERT_OK(ingot_file_tensor_stats(f, 0, &s, NULL));
    ASSERT_U64(s.count, 6);
    ASSERT_U64(s.nan, 1);
    ASSERT_U64(s.inf, 1);
    ASSERT_TRUE(s.min == -1 && s.max == 5 && s.mean == 2.0);
    ASSERT_TRUE(fabs(s.std - sqrt(5.0)) < 1e-12); /* (1 + 1 + 9 + 9) / 4 */
    ingot_file_close(f);
}

RUN_TESTS(T(sha256_vectors), T(digest_big_endian), T(digest_fortran), T(digest_plain),
          T(stats_nan_inf))
