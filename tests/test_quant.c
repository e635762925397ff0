/*
 * test_quant.c - include/ingot/quant.h against independent references:
 *   - every quantized tensor of the GGUF fixtures: sha256 of the decoded F32 values equals the
 *     sidecar's dequant_sha256_f32le (computed by llama.cpp's gguf-py), whole and row by row;
 *   - tests/golden/quant (gen_golden.py): random blocks of every type gguf-py decodes, with
 *     edge-case scales; every code of the 8- and 16-bit types (NumPy, torch, and an OCP-spec
 *     decoder for F8); sampled wide integers and F64 (NumPy); F32 -> F16 (NumPy) and -> BF16
 *     (torch) on a million inputs;
 *   - the safetensors fixtures' F8 statistics (values written by torch), big-endian .npy;
 *   - Q8_1 and Q8_K (no reference implementation decodes them) by hand from the spec;
 *   - errors: sizes, unsupported and invalid dtypes, ranges, NULL buffers.
 */
#include <json-c/json.h>
#include <math.h>

#include "harness.h"
#include "files.h"
#include "sha256.h"

#define GOLD INGOT_SOURCE_DIR "/tests/golden/quant/"

static json_object *jget(json_object *o, const char *k)
{
    json_object *v = NULL;
    return json_object_object_get_ex(o, k, &v) ? v : NULL;
}

/* sha256 of n floats as little-endian bytes (the host is little-endian on every CI target; the
 * check makes a big-endian host fail loudly instead of silently). */
static void sha_f32(const float *v, size_t n, char hex[65])
{
    const uint16_t one = 1;
    if (*(const uint8_t *)&one != 1) {
        snprintf(hex, 65, "big-endian host");
        return;
    }
    test_sha256_hex(v, n * sizeof *v, hex);
}

static float f32_of(uint32_t b)
{
    float f;
    memcpy(&f, &b, 4);
    return f;
}

static uint32_t bits_of(float f)
{
    uint32_t b;
    memcpy(&b, &f, 4);
    return b;
}

/* ---- GGUF fixtures -------------------------------------------------------------------------- */

static const char *const gguf_fixtures[] = {"gguf_all_types.gguf", "gguf_align64.gguf",
                                            "gguf_edge_shapes.gguf",
                                            "gguf_kquants_random_blocks.gguf"};

TEST(gguf_fixture_digests)
{
    int checked = 0;
    for (size_t fi = 0; fi < sizeof gguf_fixtures / sizeof *gguf_fixtures; fi++) {
        char path[600], side[640];
        snprintf(path, sizeof path, "%s/gguf/%s", INGOT_FIXTURES, gguf_fixtures[fi]);
        snprintf(side, sizeof side, "%s.expected.json", path);
        json_object *root = json_object_from_file(side);
        ASSERT_TRUE(root != NULL);
        ingot_file *f;
        ingot_error e;
        ASSERT_OK(ingot_file_open(path, NULL, &f, &e));
        json_object *ts = jget(root, "tensors");
        for (size_t k = 0; k < json_object_array_length(ts); k++) {
            json_object *jt = json_object_array_get_idx(ts, k);
            json_object *want = jget(jt, "dequant_sha256_f32le");
            if (!want) continue;
            const char *name = json_object_get_string(jget(jt, "name"));
            ingot_tensor_info t;
            CHECK(ingot_file_tensor_find(f, name, &t) == INGOT_OK, "%s missing", name);
            if (!t.name) continue;
            float *v = malloc((size_t)t.nelem * sizeof *v);
            char hex[65];
            /* whole tensor through the file API */
            ingot_status st = ingot_file_tensor_dequantize(f, t.index, 0, t.nelem, v, &e);
            CHECK(st == INGOT_OK, "%s: %s %s", name, ingot_status_name(st), e.msg);
            sha_f32(v, (size_t)t.nelem, hex);
            CHECK(strcmp(hex, json_object_get_string(want)) == 0, "%s (%s): %s", name,
                  ingot_dtype_name(t.dtype), hex);
            /* row by row from the mapping through the buffer API */
            uint64_t cols = t.shape[t.rank - 1], rows = t.nelem / cols;
            uint64_t row_bytes = cols / ingot_dtype_block_elems(t.dtype) *
                                 ingot_dtype_block_bytes(t.dtype);
            memset(v, 0xAB, (size_t)t.nelem * sizeof *v);
            for (uint64_t r = 0; r < rows; r++)
                CHECK(ingot_dequantize(t.dtype, (const uint8_t *)t.data + r * row_bytes,
                                       (size_t)row_bytes, v + r * cols, cols, &e) == INGOT_OK,
                      "%s row %llu: %s", name, (unsigned long long)r, e.msg);
            sha_f32(v, (size_t)t.nelem, hex);
            CHECK(strcmp(hex, json_object_get_string(want)) == 0, "%s rows: %s", name, hex);
            /* the statistics too (first4 exactly) */
            json_object *f4 = jget(jget(jt, "dequant"), "first4");
            for (size_t q = 0; f4 && q < json_object_array_length(f4) && q < t.nelem; q++)
                CHECK((double)v[q] == json_object_get_double(json_object_array_get_idx(f4, q)),
                      "%s first4[%zu] = %.9g", name, q, v[q]);
            free(v);
            checked++;
        }
        ingot_file_close(f);
        json_object_put(root);
    }
    ASSERT_EQ(checked, 9); /* Q8_0 x2, Q4_0 x2, Q4_1, Q5_0, Q5_1, Q4_K, Q6_K */
}

/* BF16 and F16 tensors of the fixtures: exact statistics (BF16's are exact in the sidecar). */
TEST(gguf_fixture_float_stats)
{
    char path[600], side[640];
    snprintf(path, sizeof path, "%s/gguf/gguf_all_types.gguf", INGOT_FIXTURES);
    snprintf(side, sizeof side, "%s.expected.json", path);
    json_object *root = json_object_from_file(side);
    ASSERT_TRUE(root != NULL);
    ingot_file *f;
    ingot_error e;
    ASSERT_OK(ingot_file_open(path, NULL, &f, &e));
    json_object *ts = jget(root, "tensors");
    int checked = 0;
    for (size_t k = 0; k < json_object_array_length(ts); k++) {
        json_object *jt = json_object_array_get_idx(ts, k);
        const char *dt = json_object_get_string(jget(jt, "dtype"));
        if (strcmp(dt, "BF16") && strcmp(dt, "F16") && strcmp(dt, "F64") && strcmp(dt, "I16") &&
            strcmp(dt, "I8"))
            continue;
        ingot_tensor_info t;
        ASSERT_OK(ingot_file_tensor_find(f, json_object_get_string(jget(jt, "name")), &t));
        float *v = malloc((size_t)t.nelem * sizeof *v);
        ASSERT_OK(ingot_file_tensor_dequantize(f, t.index, 0, t.nelem, v, &e));
        double sum = 0, mn = INFINITY, mx = -INFINITY;
        for (uint64_t q = 0; q < t.nelem; q++) {
            sum += v[q];
            mn = v[q] < mn ? v[q] : mn;
            mx = v[q] > mx ? v[q] : mx;
        }
        bool narrowed = strcmp(dt, "F64") == 0; /* F64 -> F32 rounds: compare as floats */
        double wmin = json_object_get_double(jget(jt, "min")), wmax = json_object_get_double(jget(jt, "max"));
        CHECK(narrowed ? (float)wmin == (float)mn : wmin == mn, "%s min %.17g", dt, mn);
        CHECK(narrowed ? (float)wmax == (float)mx : wmax == mx, "%s max %.17g", dt, mx);
        double ws = json_object_get_double(jget(jt, "sum"));
        CHECK(fabs(sum - ws) <= 1e-6 * (fabs(ws) + 1), "%s sum %.17g vs %.17g", dt, sum, ws);
        free(v);
        checked++;
    }
    CHECK(checked == 5, "%d float/int tensors checked", checked);
    ingot_file_close(f);
    json_object_put(root);
}

/* ---- golden files --------------------------------------------------------------------------- */

static uint32_t sample32(uint64_t i) { return (uint32_t)(i * 2654435761u); }
static uint64_t sample64(uint64_t i) { return i * 0x9E3779B97F4A7C15ull; }

static uint32_t sample_f32_bits(uint64_t i)
{
    uint32_t u = sample32(i);
    if (i & 1) u = (u & 0x807FFFFFu) | (100 + ((u >> 23) & 0xFF) % 46) << 23;
    return u;
}

static uint64_t sample_f64_bits(uint64_t i)
{
    uint64_t u = sample64(i);
    return (u & 0x800FFFFFFFFFFFFFull) | (863 + ((u >> 52) & 0x7FF) % 320) << 52;
}

static void store_le(uint8_t *p, uint64_t v, unsigned size)
{
    for (unsigned k = 0; k < size; k++) p[k] = (uint8_t)(v >> (8 * k));
}

TEST(golden)
{
    size_t nblob, ntxt;
    uint8_t *blob = test_read_file(GOLD "blocks.bin", &nblob);
    char *txt = (char *)test_read_file(GOLD "golden.txt", &ntxt);
    ASSERT_TRUE(blob && txt);
    int n_block = 0, n_table = 0, n_sample = 0, n_encode = 0;
    for (char *line = strtok(txt, "\n"); line; line = strtok(NULL, "\n")) {
        if (line[0] == '#') continue;
        char kind[16], dts[16], want[65];
        unsigned long long a = 0, b = 0, c = 0;
        ingot_dtype dt;
        ingot_error e;
        char hex[65];
        if (strncmp(line, "fixture ", 8) == 0) continue; /* for test_convert_matrix.c */
        if (sscanf(line, "%15s %15s", kind, dts) != 2 || ingot_dtype_from_name(dts, &dt) != INGOT_OK) {
            CHECK(0, "bad golden line: %s", line);
            continue;
        }
        if (strcmp(kind, "block") == 0) {
            ASSERT_TRUE(sscanf(line, "%*s %*s %llu %llu %llu %64s", &a, &b, &c, want) == 4);
            ASSERT_TRUE(a + b <= nblob);
            float *v = malloc((size_t)c * sizeof *v);
            ingot_status st = ingot_dequantize(dt, blob + a, (size_t)b, v, c, &e);
            CHECK(st == INGOT_OK, "%s: %s", dts, e.msg);
            sha_f32(v, (size_t)c, hex);
            CHECK(strcmp(hex, want) == 0, "%s blocks: %s", dts, hex);
            /* one block per call gives the same values */
            uint32_t be = ingot_dtype_block_elems(dt), bb = ingot_dtype_block_bytes(dt);
            memset(v, 0, (size_t)c * sizeof *v);
            for (uint64_t k = 0; k < c / be; k++)
                ingot_dequantize(dt, blob + a + k * bb, bb, v + k * be, be, &e);
            sha_f32(v, (size_t)c, hex);
            CHECK(strcmp(hex, want) == 0, "%s block by block: %s", dts, hex);
            free(v);
            n_block++;
        } else if (strcmp(kind, "table") == 0 || strcmp(kind, "sample") == 0) {
            ASSERT_TRUE(sscanf(line, "%*s %*s %llu %64s", &a, want) == 2);
            bool table = kind[0] == 't';
            unsigned es = ingot_dtype_block_bytes(dt);
            uint8_t *in = malloc((size_t)a * es);
            float *v = malloc((size_t)a * sizeof *v);
            for (uint64_t i = 0; i < a; i++) {
                uint64_t x = table ? i : dt == INGOT_DTYPE_F64 ? sample_f64_bits(i)
                                   : es == 8              ? sample64(i)
                                                          : sample32(i);
                store_le(in + i * es, x, es);
            }
            ingot_status st = ingot_dequantize(dt, in, (size_t)a * es, v, a, &e);
            CHECK(st == INGOT_OK, "%s: %s", dts, e.msg);
            sha_f32(v, (size_t)a, hex);
            CHECK(strcmp(hex, want) == 0, "%s %s: %s", kind, dts, hex);
            free(in);
            free(v);
            table ? n_table++ : n_sample++;
        } else if (strcmp(kind, "encode") == 0) {
            ASSERT_TRUE(sscanf(line, "%*s %*s %llu %64s", &a, want) == 2);
            float *x = malloc((size_t)a * sizeof *x);
            uint8_t *out = malloc((size_t)a * 2);
            for (uint64_t i = 0; i < a; i++) x[i] = f32_of(sample_f32_bits(i));
            CHECK(ingot_f32_encode(dt, x, a, out, (size_t)a * 2, &e) == INGOT_OK, "%s", e.msg);
            test_sha256_hex(out, (size_t)a * 2, hex);
            CHECK(strcmp(hex, want) == 0, "encode %s: %s", dts, hex);
            free(x);
            free(out);
            n_encode++;
        } else {
            CHECK(0, "unknown golden kind %s", kind);
        }
    }
    CHECK(n_block == 17 && n_table == 12 && n_sample == 5 && n_encode == 2,
          "golden lines: %d blocks, %d tables, %d samples, %d encodes", n_block, n_table, n_sample,
          n_encode);
    free(blob);
    free(txt);
}

/* ---- safetensors F8 (values written by torch), big-endian and Fortran .npy ------------------ */

TEST(safetensors_f8_stats)
{
    static const char *const files[] = {"flux_model_torch.safetensors", "st_all_dtypes.safetensors"};
    int checked = 0;
    for (int fi = 0; fi < 2; fi++) {
        char path[600], side[640];
        snprintf(path, sizeof path, "%s/safetensors/%s", INGOT_FIXTURES, files[fi]);
        snprintf(side, sizeof side, "%s.expected.json", path);
        json_object *root = json_object_from_file(side);
        ASSERT_TRUE(root != NULL);
        ingot_file *f;
        ingot_error e;
        ASSERT_OK(ingot_file_open(path, NULL, &f, &e));
        json_object *ts = jget(root, "tensors");
        for (size_t k = 0; k < json_object_array_length(ts); k++) {
            json_object *jt = json_object_array_get_idx(ts, k);
            const char *dt = json_object_get_string(jget(jt, "dtype"));
            if (strncmp(dt, "F8_", 3) != 0) continue;
            const char *name = json_object_get_string(jget(jt, "name"));
            ingot_tensor_info t;
            ASSERT_OK(ingot_file_tensor_find(f, name, &t));
            float *v = malloc((size_t)t.nelem * sizeof *v + 1);
            ASSERT_OK(ingot_file_tensor_dequantize(f, t.index, 0, t.nelem, v, &e));
            json_object *f4 = jget(jt, "first4");
            for (size_t q = 0; q < json_object_array_length(f4); q++)
                CHECK((double)v[q] == json_object_get_double(json_object_array_get_idx(f4, q)),
                      "%s[%zu] = %.9g", name, q, v[q]);
            double sum = 0, mn = INFINITY, mx = -INFINITY;
            for (uint64_t q = 0; q < t.nelem; q++) {
                sum += v[q];
                mn = v[q] < mn ? v[q] : mn;
                mx = v[q] > mx ? v[q] : mx;
            }
            double ws = json_object_get_double(jget(jt, "sum"));
            CHECK(mn == json_object_get_double(jget(jt, "min")), "%s min %.9g", name, mn);
            CHECK(mx == json_object_get_double(jget(jt, "max")), "%s max %.9g", name, mx);
            CHECK(fabs(sum - ws) <= 1e-9 * (fabs(ws) + 1), "%s sum %.17g vs %.17g", name, sum, ws);
            free(v);
            checked++;
        }
        ingot_file_close(f);
        json_object_put(root);
    }
    CHECK(checked == 8, "%d F8 tensors", checked);
}

TEST(npy_layouts)
{
    char path[600];
    ingot_file *f;
    ingot_error e;
    ingot_tensor_info t;
    float v[12];
    /* big-endian <f4 stored as >f4: swapped on the way */
    snprintf(path, sizeof path, "%s/npy/be_f4_3x2.npy", INGOT_FIXTURES);
    ASSERT_OK(ingot_file_open(path, NULL, &f, &e));
    ASSERT_OK(ingot_file_tensor_at(f, 0, &t));
    ASSERT_TRUE(t.flags & INGOT_TENSOR_BIG_ENDIAN);
    ASSERT_OK(ingot_file_tensor_dequantize(f, 0, 0, 6, v, &e));
    CHECK(v[0] == 1.0f && v[1] == -2.0f && v[2] == 3.5f && v[3] == 0.1f, "be: %g %g %g %g", v[0],
          v[1], v[2], v[3]);
    ASSERT_OK(ingot_file_tensor_dequantize(f, 0, 3, 1, v, &e)); /* an unaligned single element */
    CHECK(v[0] == 0.1f, "be[3] = %g", v[0]);
    ingot_file_close(f);
    /* Fortran order: refused by the range API, named */
    snprintf(path, sizeof path, "%s/npy/fortran_f4_3x4.npy", INGOT_FIXTURES);
    ASSERT_OK(ingot_file_open(path, NULL, &f, &e));
    ASSERT_ST(ingot_file_tensor_dequantize(f, 0, 0, 12, v, &e), INGOT_UNSUPPORTED);
    ingot_file_close(f);
    /* pread mode: the same bytes, read on demand */
    ingot_open_opts o = {.io = INGOT_IO_PREAD};
    snprintf(path, sizeof path, "%s/gguf/gguf_align64.gguf", INGOT_FIXTURES);
    ASSERT_OK(ingot_file_open(path, &o, &f, &e));
    ASSERT_OK(ingot_file_tensor_find(f, "c.q8_0_1x32", &t));
    float q[32];
    ASSERT_OK(ingot_file_tensor_dequantize(f, t.index, 0, 32, q, &e));
    char hex[65];
    sha_f32(q, 32, hex);
    ASSERT_STR(hex, "41378f2590ef4cc96450a377b26a5d05186a622a7abf710f4b44c010c1fbc342");
    ingot_file_close(f);
}

/* ---- by hand from the spec ------------------------------------------------------------------ */

TEST(q8_1_and_q8_k_by_hand)
{
    /* Q8_1: f16 d = 0.5 (0x3800), f16 s (ignored), i8 q[j] = j - 16 */
    uint8_t b1[36] = {0x00, 0x38, 0xAA, 0xBB};
    for (int j = 0; j < 32; j++) b1[4 + j] = (uint8_t)(int8_t)(j - 16);
    float v[256];
    ingot_error e;
    ASSERT_OK(ingot_dequantize(INGOT_DTYPE_Q8_1, b1, sizeof b1, v, 32, &e));
    for (int j = 0; j < 32; j++) CHECK(v[j] == 0.5f * (float)(j - 16), "q8_1[%d] = %g", j, v[j]);
    /* Q8_K: f32 d = -0.25, i8 q[j] = (j * 7) mod 256 as i8, bsums ignored */
    uint8_t bk[292];
    memset(bk, 0x5A, sizeof bk);
    uint32_t d = bits_of(-0.25f);
    store_le(bk, d, 4);
    for (int j = 0; j < 256; j++) bk[4 + j] = (uint8_t)(j * 7);
    ASSERT_OK(ingot_dequantize(INGOT_DTYPE_Q8_K, bk, sizeof bk, v, 256, &e));
    for (int j = 0; j < 256; j++)
        CHECK(v[j] == -0.25f * (float)(int8_t)(uint8_t)(j * 7), "q8_k[%d] = %g", j, v[j]);
}

TEST(encode_edges)
{
    static const struct {
        uint32_t in;
        uint16_t f16, bf16;
    } c[] = {
        {0x00000000, 0x0000, 0x0000}, {0x80000000, 0x8000, 0x8000}, /* +-0 */
        {0x477FE000, 0x7BFF, 0x4780}, /* 65504 */
        {0x477FEFFF, 0x7BFF, 0x4780}, /* just below 65520 */
        {0x477FF000, 0x7C00, 0x4780}, /* 65520 ties to even: infinity */
        {0x7F7FFFFF, 0x7C00, 0x7F80}, /* FLT_MAX: bf16 rounds up to infinity */
        {0x33000000, 0x0000, 0x3300}, /* 2^-25: tie, to even zero */
        {0x33000001, 0x0001, 0x3300}, /* just above: smallest subnormal */
        {0x33C00000, 0x0002, 0x33C0}, /* 1.5 * 2^-24: tie, to even 2 */
        {0x387FC000, 0x03FF, 0x3880}, /* largest f16 subnormal */
        {0x387FE000, 0x0400, 0x3880}, /* tie between it and 2^-14: to even, the normal */
        {0x387FF000, 0x0400, 0x3880}, /* rounds up into the normals */
        {0x3F808000, 0x3C04, 0x3F80}, /* 1 + 2^-8: bf16 tie to even (down) */
        {0x3F818000, 0x3C0C, 0x3F82}, /* 1 + 3*2^-8: bf16 tie to even (up) */
        {0x7F800000, 0x7C00, 0x7F80}, {0xFF800000, 0xFC00, 0xFF80}, /* +-inf */
        {0x7FC00000, 0x7E00, 0x7FC0}, /* quiet NaN */
        {0xFF800001, 0xFC01, 0xFFC0}, /* signalling NaN, payload only in low bits */
        {0x7FA00000, 0x7D00, 0x7FE0}, /* signalling NaN with a high payload */
    }; /* F16 column: NumPy 1.24 astype(float16); BF16: torch 1.13 except NaN (ggml's rule) */
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        float x = f32_of(c[i].in);
        uint8_t h[2], b[2];
        ASSERT_OK(ingot_f32_encode(INGOT_DTYPE_F16, &x, 1, h, 2, NULL));
        ASSERT_OK(ingot_f32_encode(INGOT_DTYPE_BF16, &x, 1, b, 2, NULL));
        uint16_t hv = (uint16_t)(h[0] | h[1] << 8), bv = (uint16_t)(b[0] | b[1] << 8);
        CHECK(hv == c[i].f16, "f16(0x%08x) = 0x%04x, want 0x%04x", c[i].in, hv, c[i].f16);
        CHECK(bv == c[i].bf16, "bf16(0x%08x) = 0x%04x, want 0x%04x", c[i].in, bv, c[i].bf16);
    }
    /* F32 and F64 targets */
    float x[2] = {1.5f, -0.1f};
    uint8_t o[16];
    ASSERT_OK(ingot_f32_encode(INGOT_DTYPE_F32, x, 2, o, 8, NULL));
    ASSERT_MEM(o, x, 8);
    ASSERT_OK(ingot_f32_encode(INGOT_DTYPE_F64, x, 2, o, 16, NULL));
    double d[2];
    memcpy(d, o, 16);
    CHECK(d[0] == 1.5 && d[1] == (double)-0.1f, "f64 %g %g", d[0], d[1]);
    /* Round trip: every F16 and BF16 code decodes and encodes back to itself (NaNs included). */
    for (uint32_t u = 0; u < 65536; u++) {
        uint8_t in[2] = {(uint8_t)u, (uint8_t)(u >> 8)}, out[2];
        float v;
        ASSERT_OK(ingot_dequantize(INGOT_DTYPE_BF16, in, 2, &v, 1, NULL));
        ASSERT_OK(ingot_f32_encode(INGOT_DTYPE_BF16, &v, 1, out, 2, NULL));
        bool nan = (u & 0x7FFF) > 0x7F80, quiet_nan = nan && (u & 0x40);
        if (!nan || quiet_nan) CHECK(!memcmp(in, out, 2), "bf16 0x%04x -> 0x%02x%02x", u, out[1], out[0]);
        ASSERT_OK(ingot_dequantize(INGOT_DTYPE_F16, in, 2, &v, 1, NULL));
        ASSERT_OK(ingot_f32_encode(INGOT_DTYPE_F16, &v, 1, out, 2, NULL));
        CHECK(!memcmp(in, out, 2), "f16 0x%04x -> 0x%02x%02x", u, out[1], out[0]);
    }
}

/* ---- errors --------------------------------------------------------------------------------- */

TEST(errors)
{
    uint8_t buf[400] = {0};
    float v[300];
    ingot_error e;
    /* sizes: a byte too many or too few, elements not a whole block */
    ASSERT_ST(ingot_dequantize(INGOT_DTYPE_Q8_0, buf, 35, v, 32, &e), INGOT_BAD_SIZE);
    ASSERT_STR(e.where, "Q8_0");
    ASSERT_ST(ingot_dequantize(INGOT_DTYPE_Q8_0, buf, 33, v, 32, &e), INGOT_BAD_SIZE);
    ASSERT_ST(ingot_dequantize(INGOT_DTYPE_Q4_K, buf, 144, v, 255, &e), INGOT_BAD_SIZE);
    ASSERT_ST(ingot_dequantize(INGOT_DTYPE_Q4_K, buf, 144, v, 0, &e), INGOT_BAD_SIZE);
    ASSERT_ST(ingot_dequantize(INGOT_DTYPE_F16, buf, 7, v, 3, &e), INGOT_BAD_SIZE);
    ASSERT_ST(ingot_dequantize(INGOT_DTYPE_F32, buf, 8, v, UINT64_MAX / 2, &e), INGOT_BAD_SIZE);
    /* zero elements: fine, nothing touched */
    ASSERT_OK(ingot_dequantize(INGOT_DTYPE_Q6_K, NULL, 0, NULL, 0, &e));
    /* unsupported, named; not a dtype */
    static const ingot_dtype unsupported[] = {
        INGOT_DTYPE_IQ2_XXS, INGOT_DTYPE_IQ2_XS, INGOT_DTYPE_IQ3_XXS, INGOT_DTYPE_IQ1_S,
        INGOT_DTYPE_IQ3_S,   INGOT_DTYPE_IQ2_S,  INGOT_DTYPE_IQ1_M,   INGOT_DTYPE_Q2_0,
        INGOT_DTYPE_F4,      INGOT_DTYPE_F6_E2M3, INGOT_DTYPE_F6_E3M2, INGOT_DTYPE_C64,
        INGOT_DTYPE_C128};
    for (size_t i = 0; i < sizeof unsupported / sizeof *unsupported; i++) {
        ingot_dtype dt = unsupported[i];
        CHECK(!ingot_dequantize_supported(dt), "%s supported?", ingot_dtype_name(dt));
        uint32_t be = ingot_dtype_block_elems(dt), bb = ingot_dtype_block_bytes(dt);
        ingot_status st = ingot_dequantize(dt, buf, bb, v, be, &e);
        CHECK(st == INGOT_UNSUPPORTED && strcmp(e.where, ingot_dtype_name(dt)) == 0 &&
                  strstr(e.msg, ingot_dtype_name(dt)),
              "%s: %s where '%s' msg '%s'", ingot_dtype_name(dt), ingot_status_name(st), e.where,
              e.msg);
    }
    ASSERT_ST(ingot_dequantize((ingot_dtype)24, buf, 1, v, 1, &e), INGOT_BAD_TYPE);
    ASSERT_ST(ingot_dequantize(INGOT_DTYPE_INVALID, buf, 1, v, 1, &e), INGOT_BAD_TYPE);
    /* NULL buffers */
    ASSERT_ST(ingot_dequantize(INGOT_DTYPE_Q8_0, NULL, 34, v, 32, &e), INGOT_MISUSE);
    ASSERT_ST(ingot_dequantize(INGOT_DTYPE_Q8_0, buf, 34, NULL, 32, &e), INGOT_MISUSE);
    /* every supported dtype of the table decodes one block of zeros to zeros (or -0, or the
     * constant its zero code means) without complaint */
    int supported = 0;
    for (unsigned dt = 1; dt < 300; dt++) {
        if (!ingot_dtype_valid((ingot_dtype)dt) || !ingot_dequantize_supported((ingot_dtype)dt))
            continue;
        uint32_t be = ingot_dtype_block_elems((ingot_dtype)dt), bb = ingot_dtype_block_bytes((ingot_dtype)dt);
        CHECK(ingot_dequantize((ingot_dtype)dt, buf, bb, v, be, &e) == INGOT_OK, "%s: %s",
              ingot_dtype_name((ingot_dtype)dt), e.msg);
        supported++;
    }
    CHECK(supported == 37, "%d dtypes supported", supported);
    /* encode */
    ASSERT_ST(ingot_f32_encode(INGOT_DTYPE_Q8_0, v, 32, buf, 34, &e), INGOT_UNSUPPORTED);
    ASSERT_STR(e.where, "Q8_0");
    ASSERT_ST(ingot_f32_encode(INGOT_DTYPE_F8_E4M3, v, 1, buf, 1, &e), INGOT_UNSUPPORTED);
    ASSERT_ST(ingot_f32_encode(INGOT_DTYPE_F16, v, 3, buf, 5, &e), INGOT_BAD_SIZE);
    ASSERT_ST(ingot_f32_encode((ingot_dtype)999, v, 1, buf, 4, &e), INGOT_BAD_TYPE);
    ASSERT_ST(ingot_f32_encode(INGOT_DTYPE_F16, NULL, 1, buf, 2, &e), INGOT_MISUSE);
    ASSERT_OK(ingot_f32_encode(INGOT_DTYPE_BF16, NULL, 0, NULL, 0, &e));
}

TEST(file_errors)
{
    /* a file with a Q4_K tensor [2, 512], an IQ2_XXS one and a Q8_0 one */
    ingot_writer *w;
    ingot_error e;
    ingot_writer_opts o = {.no_fsync = true};
    ASSERT_OK(ingot_writer_new(&o, &w, &e));
    static uint8_t q4k[4 * 144], iq[66], q8[2 * 34];
    uint64_t s1[2] = {2, 512}, s2[1] = {256}, s3[1] = {64};
    ASSERT_OK(ingot_writer_add_tensor(w, "k", INGOT_DTYPE_Q4_K, 2, s1, NULL, q4k, &e));
    ASSERT_OK(ingot_writer_add_tensor(w, "layers.0.iq2", INGOT_DTYPE_IQ2_XXS, 1, s2, NULL, iq, &e));
    ASSERT_OK(ingot_writer_add_tensor(w, "q8", INGOT_DTYPE_Q8_0, 1, s3, NULL, q8, &e));
    ASSERT_OK(ingot_writer_begin_mem(w, &e));
    void *mem;
    size_t size;
    ASSERT_OK(ingot_writer_commit_mem(w, &mem, &size, &e));
    ingot_writer_free(w);
    ingot_file *f;
    ASSERT_OK(ingot_file_open_buffer(mem, size, NULL, &f, &e));
    float v[1024];
    ASSERT_OK(ingot_file_tensor_dequantize(f, 0, 512, 512, v, &e)); /* the second row */
    ASSERT_OK(ingot_file_tensor_dequantize(f, 0, 256, 256, v, &e)); /* one block */
    ASSERT_ST(ingot_file_tensor_dequantize(f, 0, 100, 256, v, &e), INGOT_RANGE);
    ASSERT_STR(e.where, "k");
    ASSERT_ST(ingot_file_tensor_dequantize(f, 0, 0, 100, v, &e), INGOT_RANGE);
    ASSERT_ST(ingot_file_tensor_dequantize(f, 0, 768, 512, v, &e), INGOT_RANGE);
    ASSERT_ST(ingot_file_tensor_dequantize(f, 0, UINT64_MAX - 255, 512, v, &e), INGOT_RANGE);
    ASSERT_OK(ingot_file_tensor_dequantize(f, 0, 1024, 0, v, &e));
    ASSERT_ST(ingot_file_tensor_dequantize(f, 1, 0, 256, v, &e), INGOT_UNSUPPORTED);
    ASSERT_STR(e.where, "layers.0.iq2");
    CHECK(strstr(e.msg, "IQ2_XXS") != NULL, "msg: %s", e.msg);
    ASSERT_ST(ingot_file_tensor_dequantize(f, 3, 0, 0, v, &e), INGOT_RANGE);
    ASSERT_ST(ingot_file_tensor_dequantize(f, 2, 0, 64, NULL, &e), INGOT_MISUSE);
    ASSERT_ST(ingot_file_tensor_dequantize(NULL, 0, 0, 0, v, &e), INGOT_MISUSE);
    ingot_file_close(f);
    ingot_writer_free_mem(NULL, mem, size);
}

RUN_TESTS(T(gguf_fixture_digests), T(gguf_fixture_float_stats), T(golden), T(safetensors_f8_stats),
          T(npy_layouts), T(q8_1_and_q8_k_by_hand), T(encode_edges), T(errors), T(file_errors))
