/*
 * test_torch_c128.c - the C128 dtype (complex128, issue 18 section 5) across the formats that hold
 * it: the dtype table, a '<c16' .npy written by NumPy and complex128 checkpoints written by torch
 * 1.13 (zip and legacy) against values their writers computed, .ingot and .npy round trips, the
 * formats that cannot hold it refusing it by name, `ingot dump` text and JSON.
 */
#include <json-c/json.h>
#include <math.h>
#include <stdlib.h>

#include "harness.h"
#include "sha256.h"

#define NPY INGOT_SOURCE_DIR "/tests/data/torch_legacy/c128.npy"
#define PT INGOT_SOURCE_DIR "/tests/data/torch/complex128.pt"
#define PT_LEGACY INGOT_SOURCE_DIR "/tests/data/torch/complex128_legacy.pt"

static json_object *sidecar(void) { return json_object_from_file(NPY ".json"); }

/* Element k of the sidecar as two doubles (float.hex strings, exact). */
static void want_value(json_object *j, size_t k, double *re, double *im)
{
    json_object *vals, *v;
    json_object_object_get_ex(j, "values", &vals);
    v = json_object_array_get_idx(vals, k);
    *re = strtod(json_object_get_string(json_object_array_get_idx(v, 0)), NULL);
    *im = strtod(json_object_get_string(json_object_array_get_idx(v, 1)), NULL);
}

static bool same(double a, double b) { return memcmp(&a, &b, 8) == 0; }

TEST(dtype_table)
{
    ASSERT_EQ(INGOT_DTYPE_C128, 23); /* docs/FORMAT.md §11: the next free scalar code */
    ASSERT_STR(ingot_dtype_name(INGOT_DTYPE_C128), "C128");
    ingot_dtype dt;
    ASSERT_OK(ingot_dtype_from_name("C128", &dt));
    ASSERT_EQ(dt, INGOT_DTYPE_C128);
    ASSERT_EQ(ingot_dtype_block_elems(INGOT_DTYPE_C128), 1);
    ASSERT_EQ(ingot_dtype_block_bytes(INGOT_DTYPE_C128), 16);
    ASSERT_TRUE(!ingot_dtype_is_quantized(INGOT_DTYPE_C128));
    uint64_t shape[2] = {3, 5}, ne, nb;
    ASSERT_OK(ingot_dtype_nbytes(INGOT_DTYPE_C128, 2, shape, &ne, &nb));
    ASSERT_U64(nb, 240);
    uint64_t big = 1ull << 60; /* 2^60 x 16 bytes overflows */
    ASSERT_ST(ingot_dtype_nbytes(INGOT_DTYPE_C128, 1, &big, &ne, &nb), INGOT_BAD_SIZE);
    ASSERT_TRUE(!ingot_dtype_valid((ingot_dtype)24));
}

/* Checks tensor `name` of f against the sidecar's values (row-major). */
static void check_values(const ingot_file *f, const char *name, json_object *j)
{
    ingot_tensor_info t;
    ingot_error e;
    ASSERT_OK(ingot_file_tensor_find(f, name, &t));
    ASSERT_EQ(t.dtype, INGOT_DTYPE_C128);
    ASSERT_EQ(t.rank, 2);
    ASSERT_U64(t.shape[0], 2);
    ASSERT_U64(t.shape[1], 3);
    ASSERT_U64(t.nbytes, 96);
    double v[12];
    ASSERT_OK(ingot_file_tensor_copy(f, t.index, v, sizeof v, &e));
    for (size_t k = 0; k < 6; k++) {
        double re, im;
        want_value(j, k, &re, &im);
        CHECK(same(v[2 * k], re) && same(v[2 * k + 1], im), "%s[%zu] = %g%+gj, want %g%+gj", name,
              k, v[2 * k], v[2 * k + 1], re, im);
    }
    char hex[65];
    json_object *sha;
    json_object_object_get_ex(j, "sha256", &sha);
    test_sha256_hex(v, sizeof v, hex);
    ASSERT_STR(hex, json_object_get_string(sha));
}

TEST(npy_written_by_numpy)
{
    json_object *j = sidecar();
    ASSERT_TRUE(j);
    for (int mode = 0; mode < 2; mode++) {
        ingot_open_opts o = {0};
        o.io = mode ? INGOT_IO_PREAD : INGOT_IO_MMAP;
        ingot_file *f;
        ingot_error e;
        ASSERT_OK(ingot_file_open(NPY, &o, &f, &e));
        ASSERT_STR(ingot_file_format(f), "npy");
        check_values(f, "c128", j);
        ingot_file_close(f);
    }
    json_object_put(j);
}

/* The same values written by torch: complex128.pt holds them as 'c' (and the transposed view
 * 't'); gen_torch_vectors.py builds the tensor from the same literals as gen_c128_npy.py. */
TEST(torch_complex128_zip_and_legacy)
{
    json_object *j = sidecar();
    ASSERT_TRUE(j);
    const char *files[] = {PT, PT_LEGACY};
    for (int i = 0; i < 2; i++) {
        ingot_file *f;
        ingot_error e;
        ASSERT_OK(ingot_file_open(files[i], NULL, &f, &e));
        /* element [1][1] is complex(-0.0, -0.0) in NumPy but -0.0 - 0.0j in torch's literal:
         * +0.0 imaginary; compare everything else */
        ingot_tensor_info t;
        ASSERT_OK(ingot_file_tensor_find(f, "c", &t));
        ASSERT_EQ(t.dtype, INGOT_DTYPE_C128);
        double v[12];
        ASSERT_OK(ingot_file_tensor_copy(f, t.index, v, sizeof v, &e));
        for (size_t k = 0; k < 6; k++) {
            double re, im;
            want_value(j, k, &re, &im);
            if (k == 4) im = 0.0;
            CHECK(same(v[2 * k], re) && same(v[2 * k + 1], im), "%s: c[%zu]", files[i], k);
        }
        ASSERT_OK(ingot_file_tensor_find(f, "t", &t)); /* strided view: gathered per element */
        ASSERT_TRUE(t.flags & INGOT_TENSOR_STRIDED);
        double w[12];
        ASSERT_OK(ingot_file_tensor_copy(f, t.index, w, sizeof w, &e));
        for (size_t r = 0; r < 3; r++)
            for (size_t c = 0; c < 2; c++) {
                ASSERT_TRUE(same(w[2 * (r * 2 + c)], v[2 * (c * 3 + r)]));
                ASSERT_TRUE(same(w[2 * (r * 2 + c) + 1], v[2 * (c * 3 + r) + 1]));
            }
        ingot_file_close(f);
    }
    json_object_put(j);
}

static int run(const char *cmd) { return system(cmd) == 0 ? 0 : 1; }

TEST(round_trips_and_refusals)
{
    json_object *j = sidecar();
    ASSERT_TRUE(j);
    char cmd[2048];
    static const char *const keep[] = {"ingot", "npy", "npz"};
    for (size_t i = 0; i < 3; i++) {
        char out[512];
        snprintf(out, sizeof out, "%s/c128_rt.%s", INGOT_BINARY_DIR, keep[i]);
        snprintf(cmd, sizeof cmd, "%s convert %s %s > /dev/null 2>&1", INGOT_CLI, NPY, out);
        ASSERT_EQ(run(cmd), 0);
        ingot_file *f;
        ingot_error e;
        ASSERT_OK(ingot_file_open(out, NULL, &f, &e));
        ingot_tensor_info t;
        ASSERT_OK(ingot_file_tensor_at(f, 0, &t));
        check_values(f, t.name, j);
        ingot_file_close(f);
        remove(out);
    }
    /* the .npy written back says '<c16' */
    snprintf(cmd, sizeof cmd,
             "%s convert %s %s/c128_rt2.npy > /dev/null 2>&1 && grep -q \"'descr': '<c16'\" "
             "%s/c128_rt2.npy",
             INGOT_CLI, NPY, INGOT_BINARY_DIR, INGOT_BINARY_DIR);
    ASSERT_EQ(run(cmd), 0);
    /* formats without complex128 refuse it by name, writing nothing */
    static const char *const no[] = {"safetensors", "gguf", "tenzor", "bpk", "mag"};
    for (size_t i = 0; i < 5; i++) {
        snprintf(cmd, sizeof cmd,
                 "%s convert %s %s/c128_no.%s 2>&1 >/dev/null | grep -q 'UNSUPPORTED.*C128' && "
                 "! test -e %s/c128_no.%s",
                 INGOT_CLI, NPY, INGOT_BINARY_DIR, no[i], INGOT_BINARY_DIR, no[i]);
        CHECK(run(cmd) == 0, "%s", no[i]);
    }
    /* a big-endian complex128 .npy is refused like '>c8' */
    size_t len;
    FILE *fp = fopen(NPY, "rb");
    ASSERT_TRUE(fp);
    uint8_t b[512];
    len = fread(b, 1, sizeof b, fp);
    fclose(fp);
    uint8_t *d = memchr(b, '<', len);
    ASSERT_TRUE(d && memcmp(d, "<c16", 4) == 0);
    *d = '>';
    ingot_file *f;
    ingot_error e;
    ASSERT_ST(ingot_file_open_buffer(b, len, NULL, &f, &e), INGOT_UNSUPPORTED);
    ASSERT_TRUE(strstr(e.msg, "big-endian complex") != NULL);
    /* not castable or decodable: C128 is not a float dtype */
    ASSERT_TRUE(!ingot_dequantize_supported(INGOT_DTYPE_C128));
    remove(INGOT_BINARY_DIR "/c128_rt2.npy");
    json_object_put(j);
}

TEST(dump_text_and_json)
{
    json_object *j = sidecar();
    ASSERT_TRUE(j);
    char cmd[1024], line[1024] = "", want[1024] = "";
    snprintf(cmd, sizeof cmd, "%s dump %s c128 | tail -n 1", INGOT_CLI, NPY);
    FILE *p = popen(cmd, "r");
    ASSERT_TRUE(p);
    if (!fgets(line, sizeof line, p)) line[0] = 0;
    pclose(p);
    line[strcspn(line, "\n")] = 0;
    json_object *dump;
    json_object_object_get_ex(j, "dump", &dump);
    for (size_t k = 0; k < json_object_array_length(dump); k++) {
        if (k) strcat(want, " ");
        strcat(want, json_object_get_string(json_object_array_get_idx(dump, k)));
    }
    ASSERT_STR(line, want);
    snprintf(cmd, sizeof cmd, "%s dump --json %s c128", INGOT_CLI, NPY);
    p = popen(cmd, "r");
    ASSERT_TRUE(p);
    char js[4096];
    size_t n = fread(js, 1, sizeof js - 1, p);
    js[n] = 0;
    pclose(p);
    json_object *o = json_tokener_parse(js), *ts, *vals;
    ASSERT_TRUE(o);
    json_object_object_get_ex(o, "tensors", &ts);
    json_object_object_get_ex(json_object_array_get_idx(ts, 0), "values", &vals);
    ASSERT_U64(json_object_array_length(vals), 6);
    for (size_t k = 0; k < 6; k++) {
        double re, im;
        want_value(j, k, &re, &im);
        json_object *v = json_object_array_get_idx(vals, k);
        ASSERT_TRUE(same(json_object_get_double(json_object_array_get_idx(v, 0)), re));
        ASSERT_TRUE(same(json_object_get_double(json_object_array_get_idx(v, 1)), im));
    }
    json_object_put(o);
    json_object_put(j);
}

RUN_TESTS(T(dtype_table), T(npy_written_by_numpy), T(torch_complex128_zip_and_legacy),
          T(round_trips_and_refusals), T(dump_text_and_json))
