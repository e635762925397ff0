/*
 * test_copy.c - ingot_file_tensor_copy(), the core's one conversion path, through a tiny test
 * adapter whose tensors carry every layout flag: big-endian, Fortran order, strided views (with
 * zero, reversed-order and negative strides), unmapped (pread) files, block types, a view reaching
 * outside the file. Expected values are computed here element by element from the definitions,
 * independently of copy.c's walk.
 */
#include <math.h>

#include "file.h"
#include "harness.h"

/* The test file: 4096 bytes where byte k = k * 7 + 3 (mod 256); tensors are views on it. */
#define IMG 4096
static uint8_t img[IMG];

typedef struct {
    const char *name;
    ingot_dtype dt;
    uint32_t rank;
    uint64_t shape[4];
    int64_t strides[4];
    uint64_t offset;
    uint32_t flags;
} ttensor;

static const ttensor tt[] = {
    {"plain", INGOT_DTYPE_F32, 2, {3, 4}, {0}, 64, 0},
    {"be_i32", INGOT_DTYPE_I32, 2, {2, 3}, {0}, 128, INGOT_TENSOR_BIG_ENDIAN},
    {"fortran_u16", INGOT_DTYPE_U16, 3, {2, 3, 4}, {0}, 256, INGOT_TENSOR_FORTRAN},
    {"fortran_be_f64", INGOT_DTYPE_F64, 2, {3, 2}, {0}, 512,
     INGOT_TENSOR_FORTRAN | INGOT_TENSOR_BIG_ENDIAN},
    {"transposed", INGOT_DTYPE_F32, 2, {4, 3}, {1, 4}, 64, INGOT_TENSOR_STRIDED},
    {"broadcast", INGOT_DTYPE_I16, 2, {5, 3}, {0, 1}, 1024, INGOT_TENSOR_STRIDED},
    {"step2", INGOT_DTYPE_U8, 3, {2, 2, 3}, {40, 12, 2}, 2000, INGOT_TENSOR_STRIDED},
    {"reversed", INGOT_DTYPE_I32, 1, {5}, {-1}, 1040, INGOT_TENSOR_STRIDED},
    {"scalar_view", INGOT_DTYPE_F64, 0, {0}, {0}, 3000, INGOT_TENSOR_STRIDED},
    {"empty_view", INGOT_DTYPE_F32, 2, {0, 7}, {7, 1}, 3500, INGOT_TENSOR_STRIDED},
    {"outside", INGOT_DTYPE_F32, 1, {10}, {100}, 3000, INGOT_TENSOR_STRIDED},
    {"before_start", INGOT_DTYPE_I32, 1, {4}, {-10}, 8, INGOT_TENSOR_STRIDED},
    {"q_be", INGOT_DTYPE_Q8_0, 1, {32}, {0}, 3200, INGOT_TENSOR_BIG_ENDIAN},
    {"be_c64", INGOT_DTYPE_C64, 1, {3}, {0}, 1200, INGOT_TENSOR_BIG_ENDIAN},
};
#define NT (sizeof tt / sizeof tt[0])

static int probe(const uint8_t *h, size_t n)
{
    return n >= 4 && memcmp(h, "TCPY", 4) == 0 ? 100 : 0;
}
static ingot_status topen(ingot_file *f, ingot_error *e)
{
    (void)e;
    f->alignment = 1;
    return INGOT_OK;
}
static uint64_t tcount(const ingot_file *f)
{
    (void)f;
    return NT;
}
static ingot_status tat(const ingot_file *f, uint64_t i, ingot_tensor_info *o)
{
    if (i >= NT) return INGOT_RANGE;
    const ttensor *t = &tt[i];
    memset(o, 0, sizeof *o);
    o->name = t->name;
    o->name_len = strlen(t->name);
    o->dtype = t->dt;
    o->rank = t->rank;
    memcpy(o->shape, t->shape, sizeof t->shape);
    if (t->flags & INGOT_TENSOR_STRIDED) memcpy(o->strides, t->strides, sizeof t->strides);
    ingot_dtype_nbytes(t->dt, t->rank, t->shape, &o->nelem, &o->nbytes);
    o->offset = t->offset;
    o->data = f->base ? f->base + t->offset : NULL;
    o->flags = t->flags | (f->base ? 0 : INGOT_TENSOR_NOT_MAPPED);
    o->index = (uint32_t)i;
    return INGOT_OK;
}
static ingot_status tfind(const ingot_file *f, const char *n, size_t len, ingot_tensor_info *o)
{
    for (uint64_t i = 0; i < NT; i++)
        if (strlen(tt[i].name) == len && memcmp(tt[i].name, n, len) == 0) return tat(f, i, o);
    return INGOT_NOT_FOUND;
}
static uint64_t mcount(const ingot_file *f)
{
    (void)f;
    return 0;
}

static const ingot__format test_fmt = {
    .name = "test-copy",
    .probe = probe,
    .open = topen,
    .tensor_count = tcount,
    .tensor_at = tat,
    .tensor_find = tfind,
    .meta_count = mcount,
};
static const ingot__format *const fmts[] = {&test_fmt, NULL};

/* Element at logical C-order position `lin` of tensor t, as little-endian bytes, straight from
 * the definitions. */
static void expected_elem(const ttensor *t, uint64_t lin, uint8_t *out, uint32_t es)
{
    uint64_t idx[4] = {0};
    for (uint32_t k = t->rank; k-- > 0;) {
        idx[k] = lin % t->shape[k];
        lin /= t->shape[k];
    }
    int64_t e = 0;
    if (t->flags & INGOT_TENSOR_STRIDED) {
        for (uint32_t k = 0; k < t->rank; k++) e += (int64_t)idx[k] * t->strides[k];
    } else if (t->flags & INGOT_TENSOR_FORTRAN) {
        int64_t m = 1;
        for (uint32_t k = 0; k < t->rank; k++) {
            e += (int64_t)idx[k] * m;
            m *= (int64_t)t->shape[k];
        }
    } else {
        int64_t m = 1;
        for (uint32_t k = t->rank; k-- > 0;) {
            e += (int64_t)idx[k] * m;
            m *= (int64_t)t->shape[k];
        }
    }
    const uint8_t *src = img + (int64_t)t->offset + e * (int64_t)es;
    /* a big-endian complex number is two big-endian floats, real part first */
    uint32_t unit = t->dt == INGOT_DTYPE_C64 ? 4 : es;
    for (uint32_t b = 0; b < es; b++)
        out[b] = (t->flags & INGOT_TENSOR_BIG_ENDIAN) ? src[(b / unit) * unit + unit - 1 - b % unit]
                                                      : src[b];
}

static void check_all(ingot_file *f, const char *mode)
{
    for (uint64_t i = 0; i < NT; i++) {
        const ttensor *t = &tt[i];
        ingot_tensor_info ti;
        CHECK(ingot_file_tensor_at(f, i, &ti) == INGOT_OK, "%s: tensor_at %s", mode, t->name);
        uint8_t dst[1024], want[1024];
        ingot_error e;
        memset(&e, 0, sizeof e);
        ingot_status st = ingot_file_tensor_copy(f, i, dst, sizeof dst, &e);
        if (!strcmp(t->name, "outside") || !strcmp(t->name, "before_start")) {
            CHECK(st == INGOT_BAD_LAYOUT, "%s: %s: got %s", mode, t->name, ingot_status_name(st));
            CHECK(strcmp(e.where, t->name) == 0, "%s: error names '%s'", mode, e.where);
            continue;
        }
        if (!strcmp(t->name, "q_be")) {
            CHECK(st == INGOT_BAD_TYPE, "%s: block type with a layout flag: %s", mode,
                  ingot_status_name(st));
            continue;
        }
        CHECK(st == INGOT_OK, "%s: copy %s: %s %s", mode, t->name, ingot_status_name(st), e.msg);
        uint32_t es = ingot_dtype_block_bytes(t->dt);
        CHECK(ti.nbytes == ti.nelem * es, "%s: %s nbytes %llu", mode, t->name,
              (unsigned long long)ti.nbytes);
        for (uint64_t k = 0; k < ti.nelem; k++) expected_elem(t, k, want + k * es, es);
        CHECK(memcmp(dst, want, (size_t)ti.nbytes) == 0, "%s: %s values differ", mode, t->name);
        /* too small a destination is refused, not overrun */
        if (ti.nbytes) {
            st = ingot_file_tensor_copy(f, i, dst, (size_t)ti.nbytes - 1, &e);
            CHECK(st == INGOT_RANGE, "%s: %s small dst: %s", mode, t->name, ingot_status_name(st));
        }
        /* stored bytes: refused for views (no contiguous bytes), the raw bytes otherwise */
        st = ingot_file_tensor_read(f, i, 0, dst, (size_t)(ti.nbytes ? 1 : 0), &e);
        if (t->flags & INGOT_TENSOR_STRIDED)
            CHECK(st == INGOT_UNSUPPORTED, "%s: read of view %s: %s", mode, t->name,
                  ingot_status_name(st));
        else
            CHECK(st == INGOT_OK && (!ti.nbytes || dst[0] == img[t->offset]), "%s: read %s", mode,
                  t->name);
    }
}

TEST(copy_buffer_and_pread)
{
    for (int k = 0; k < IMG; k++) img[k] = (uint8_t)(k * 7 + 3);
    memcpy(img, "TCPY", 4);
    ingot_file *f = NULL;
    ingot_error e;
    ASSERT_EQ(ingot__file_open_buffer(fmts, img, IMG, NULL, &f, &e), INGOT_OK);
    check_all(f, "buffer");
    ingot_file_close(f);

    char path[512];
    snprintf(path, sizeof path, "%s/test_copy.bin", INGOT_BINARY_DIR);
    FILE *o = fopen(path, "wb");
    ASSERT_TRUE(o != NULL);
    ASSERT_EQ(fwrite(img, 1, IMG, o), IMG);
    fclose(o);
    ingot_open_opts po = {.io = INGOT_IO_PREAD};
    ASSERT_EQ(ingot__file_open_path(fmts, path, &po, &f, &e), INGOT_OK);
    check_all(f, "pread");
    ingot_file_close(f);
    ingot_open_opts mo = {.io = INGOT_IO_MMAP};
    ASSERT_EQ(ingot__file_open_path(fmts, path, &mo, &f, &e), INGOT_OK);
    check_all(f, "mmap");
    ingot_file_close(f);
    remove(path);
}

TEST(copy_known_values)
{
    /* A 2x3 big-endian int32 and a column-major 2x2 float, with values written out by hand. */
    static uint8_t buf[IMG];
    memset(buf, 0, sizeof buf);
    memcpy(buf, "TCPY", 4);
    const int32_t vals[6] = {1, -2, 300, 40000, -5000000, 7};
    for (int k = 0; k < 6; k++) {
        uint32_t u = (uint32_t)vals[k];
        uint8_t *p = buf + 128 + 4 * k;
        p[0] = (uint8_t)(u >> 24), p[1] = (uint8_t)(u >> 16), p[2] = (uint8_t)(u >> 8), p[3] = (uint8_t)u;
    }
    memcpy(img, buf, sizeof buf); /* the adapter serves img */
    ingot_file *f = NULL;
    ingot_error e;
    ASSERT_EQ(ingot__file_open_buffer(fmts, img, IMG, NULL, &f, &e), INGOT_OK);
    int32_t got[6];
    ASSERT_EQ(ingot_file_tensor_copy(f, 1, got, sizeof got, &e), INGOT_OK);
    for (int k = 0; k < 6; k++) ASSERT_EQ(got[k], vals[k]);
    ingot_file_close(f);
}

RUN_TESTS(T(copy_buffer_and_pread), T(copy_known_values))
