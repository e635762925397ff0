/* test_roundtrip.c - write -> read round trips through the public API: tensors, every metadata
 * type, param ids, alignments, chunked pushes, determinism, randomized tensor sets. */
#include <unistd.h>

#include "crc32c.h"
#include "harness.h"
#include "files.h"
#include "ingot/native.h"


TEST(test_roundtrip_basic)
{
    float w[12];
    for (int i = 0; i < 12; i++) w[i] = (float)i * 0.5f;
    int32_t b[3] = {-1, 0, 7};
    ingot_writer *wr;
    ingot_error e;
    ASSERT_OK(ingot_writer_new(NULL, &wr, &e));
    ASSERT_OK(ingot_writer_set_string(wr, "name", "tiny"));
    ASSERT_OK(ingot_writer_set_u32(wr, "layers", 2));
    ASSERT_OK(ingot_writer_set_f64(wr, "lr", 0.125));
    ASSERT_OK(ingot_writer_set_i8(wr, "neg", -5));
    ASSERT_OK(ingot_writer_set_bool(wr, "flag", true));
    uint16_t arr[4] = {1, 2, 300, 65535};
    ASSERT_OK(ingot_writer_set_array(wr, "arr", INGOT_META_U16, arr, 4));
    const void *strs[2] = {"ab", "cde"};
    size_t lens[2] = {2, 3};
    ASSERT_OK(ingot_writer_set_string_array(wr, "vocab", INGOT_META_STRING, strs, lens, 2));
    uint64_t ws[2] = {4, 3}, bs[1] = {3};
    ingot_tensor_opts to = {true, 42};
    ASSERT_OK(ingot_writer_add_tensor(wr, "fc.weight", INGOT_DTYPE_F32, 2, ws, &to, w, &e));
    ASSERT_OK(ingot_writer_add_tensor(wr, "fc.bias", INGOT_DTYPE_I32, 1, bs, NULL, b, &e));
    ASSERT_ST(ingot_writer_add_tensor(wr, "fc.bias", INGOT_DTYPE_I32, 1, bs, NULL, b, &e),
              INGOT_DUPLICATE);
    const char *path = test_tmp_path("basic.ingot");
    ASSERT_OK(ingot_writer_save(wr, path, &e));
    ingot_writer_free(wr);

    ingot_file *f;
    ASSERT_OK(ingot_file_open(path, NULL, &f, &e));
    ASSERT_STR(ingot_file_format(f), "ingot");
    ASSERT_U64(ingot_file_tensor_count(f), 2);
    ingot_tensor_info t;
    ASSERT_OK(ingot_file_tensor_find(f, "fc.weight", &t));
    ASSERT_EQ(t.dtype, INGOT_DTYPE_F32);
    ASSERT_EQ(t.rank, 2);
    ASSERT_U64(t.shape[0], 4);
    ASSERT_U64(t.shape[1], 3);
    ASSERT_U64(t.nbytes, 48);
    ASSERT_TRUE(t.flags & INGOT_TENSOR_HAS_PARAM_ID);
    ASSERT_U64(t.param_id, 42);
    ASSERT_U64(t.offset % 256, 0);
    ASSERT_MEM(t.data, w, sizeof w);
    ASSERT_OK(ingot_file_tensor_find(f, "fc.bias", &t));
    ASSERT_MEM(t.data, b, sizeof b);
    ASSERT_ST(ingot_file_tensor_find(f, "nope", &t), INGOT_NOT_FOUND);
    uint32_t u;
    ASSERT_OK(ingot_file_meta_get_u32(f, "layers", &u));
    ASSERT_EQ(u, 2);
    double d;
    ASSERT_OK(ingot_file_meta_get_f64(f, "lr", &d));
    ASSERT_TRUE(d == 0.125);
    int8_t i8;
    ASSERT_OK(ingot_file_meta_get_i8(f, "neg", &i8));
    ASSERT_EQ(i8, -5);
    bool fl;
    ASSERT_OK(ingot_file_meta_get_bool(f, "flag", &fl));
    ASSERT_TRUE(fl);
    ASSERT_ST(ingot_file_meta_get_u64(f, "layers", &t.param_id), INGOT_WRONG_TYPE);
    const char *s;
    size_t sl;
    ASSERT_OK(ingot_file_meta_get_string(f, "name", &s, &sl));
    ASSERT_EQ(sl, 4);
    ASSERT_MEM(s, "tiny", 4);
    uint64_t cnt;
    ASSERT_OK(ingot_file_meta_get_array(f, "arr", INGOT_META_U16, &cnt));
    ASSERT_U64(cnt, 4);
    ingot_meta_info m;
    ASSERT_OK(ingot_file_meta_find(f, "arr", &m));
    uint16_t back[4];
    ASSERT_OK(ingot_file_meta_array_read(f, m.index, INGOT_META_U16, 0, 4, back));
    ASSERT_MEM(back, arr, sizeof arr);
    ASSERT_OK(ingot_file_meta_find(f, "vocab", &m));
    ASSERT_OK(ingot_file_meta_array_string(f, m.index, 1, &s, &sl));
    ASSERT_EQ(sl, 3);
    ASSERT_MEM(s, "cde", 3);
    ASSERT_OK(ingot_file_verify(f, 2, &e));
    ingot_file_close(f);
    ASSERT_EQ(unlink(path), 0);
}

/* Writes a described writer to memory and frees it; returns a malloc'd copy of the file (NULL on
 * failure) and its size in *n. */
static uint8_t *write_to_heap(ingot_writer *wr, size_t *n)
{
    ingot_error e;
    void *buf = NULL;
    uint8_t *img = NULL;
    if (ingot_writer_begin_mem(wr, &e) == INGOT_OK &&
        ingot_writer_commit_mem(wr, &buf, n, &e) == INGOT_OK) {
        img = malloc(*n);
        if (img) memcpy(img, buf, *n);
        ingot_writer_free_mem(NULL, buf, *n);
    }
    ingot_writer_free(wr);
    return img;
}

/* Opens buf with VERIFY_NONE (structure only) and returns the status. */
static ingot_status open_status(const void *buf, size_t n)
{
    ingot_open_opts o = {0};
    o.verify = INGOT_VERIFY_NONE;
    ingot_file *f;
    ingot_status st = ingot_file_open_buffer(buf, n, &o, &f, NULL);
    if (st == INGOT_OK) ingot_file_close(f);
    return st;
}

/* 3000 tensors with long, shared-prefix names (a 130 KB names section: the name-index check's
 * second 16-byte window, the names scan's blocks of 255 vectors), eight shapes, param ids on
 * every third tensor. Opened and damaged under both names scans: AVX2 and SSE2 (the CRC level
 * limit masks AVX2). */
TEST(test_many_tensors)
{
    enum { N = 3000 };
    static float data[64];
    for (int i = 0; i < 64; i++) data[i] = (float)i;
    ingot_writer *wr;
    ingot_error e;
    ASSERT_OK(ingot_writer_new(NULL, &wr, &e));
    char name[96];
    for (int i = 0; i < N; i++) {
        static const char *const part[3] = {"self_attn.q_proj", "self_attn.v_proj", "mlp.up"};
        snprintf(name, sizeof name, "model.layers.%04d.%s.weight", i / 3, part[i % 3]);
        uint64_t shape[2] = {(uint64_t)(1 + i % 8), 8};
        ingot_tensor_opts to = {i % 3 == 0, (uint64_t)i * 7};
        ASSERT_OK(ingot_writer_add_tensor(wr, name, INGOT_DTYPE_F32, 2, shape, &to, data, &e));
    }
    size_t n = 0;
    uint8_t *buf = write_to_heap(wr, &n), *img = malloc(n);
    ASSERT_TRUE(buf != NULL && img != NULL);
    for (int level = INGOT__CRC32C_TOP; level >= 0; level -= INGOT__CRC32C_TOP) {
        ingot__crc32c_limit(level);
        memcpy(img, buf, n);
        ingot_file *f;
        ASSERT_OK(ingot_file_open_buffer(img, n, NULL, &f, &e));
        ASSERT_U64(ingot_file_tensor_count(f), N);
        for (int i = 0; i < N; i += 7) {
            ingot_tensor_info t;
            ASSERT_OK(ingot_file_tensor_at(f, (uint64_t)i, &t));
            ingot_tensor_info u;
            ASSERT_OK(ingot_file_tensor_find(f, t.name, &u));
            ASSERT_EQ(u.index, i);
            ASSERT_U64(t.shape[0], 1 + i % 8);
            ASSERT_U64(t.nbytes, (1 + i % 8) * 32);
            ASSERT_EQ(!!(t.flags & INGOT_TENSOR_HAS_PARAM_ID), i % 3 == 0);
            if (i % 3 == 0) ASSERT_U64(t.param_id, (uint64_t)i * 7);
            ASSERT_MEM(t.data, data, t.nbytes);
        }
        /* where names lie in the image: a NUL, a byte with the high bit or an order change in
         * any name must be refused */
        size_t at[3];
        for (int k = 0; k < 3; k++) {
            ingot_tensor_info t;
            ASSERT_OK(ingot_file_tensor_at(f, (uint64_t)(k * (N - 1) / 2), &t));
            at[k] = (size_t)((const uint8_t *)t.name - img);
        }
        ingot_file_close(f);
        for (int k = 0; k < 3; k++) {
            memcpy(img, buf, n);
            img[at[k] + 20] = 0; /* "model.layers.NNNN.s" + NUL inside the name */
            ASSERT_ST(open_status(img, n), INGOT_BAD_STRING);
            memcpy(img, buf, n);
            img[at[k] + 3] = 0xff; /* not UTF-8 */
            ASSERT_ST(open_status(img, n), INGOT_BAD_STRING);
            memcpy(img, buf, n);
            img[at[k] + 13] = '9'; /* "model.layers.0NNN" -> "9NNN": sorts after its neighbours */
            ASSERT_ST(open_status(img, n), INGOT_BAD_LAYOUT);
        }
    }
    ingot__crc32c_limit(INGOT__CRC32C_TOP);
    free(img);
    free(buf);
}

/* The last two names start within 16 bytes of the end of the header region: opened over the
 * header bytes only, the name-index check compares them bytewise (a 16-byte load would run past
 * the buffer), and must still see a wrong order and a duplicate. */
TEST(test_index_names_at_buffer_end)
{
    static const char *const names[3] = {"aaaaaa", "b", "c"};
    static const uint8_t byte = 7;
    ingot_writer *wr;
    ingot_error e;
    ingot_writer_opts wo = {0};
    wo.alignment = 64;
    ASSERT_OK(ingot_writer_new(&wo, &wr, &e));
    for (int i = 0; i < 3; i++)
        ASSERT_OK(ingot_writer_add_tensor(wr, names[i], INGOT_DTYPE_U8, 0, NULL, NULL, &byte, &e));
    size_t n = 0;
    uint8_t *img = write_to_heap(wr, &n);
    ASSERT_TRUE(img != NULL);
    uint64_t need = 0;
    ASSERT_OK(ingot_native_header_size(img, n, &need, &e));
    static unsigned char ws[INGOT_NATIVE_WORKSPACE] __attribute__((aligned(8)));
    ingot_native *r;
    ingot_tensor_info t;
    ASSERT_OK(ingot_native_open(ws, sizeof ws, img, (size_t)need, n, 0, &r, &e));
    ASSERT_OK(ingot_native_tensor_at(r, 2, &t));
    size_t at_c = (size_t)((const uint8_t *)t.name - img);
    ASSERT_TRUE(need - at_c < 16); /* the case under test: "c" starts near the buffer's end */
    for (int i = 0; i < 3; i++) {
        ASSERT_OK(ingot_native_tensor_find(r, names[i], strlen(names[i]), &t));
        ASSERT_EQ(t.index, i);
    }
    img[at_c - 2] = 'd'; /* "b" -> "d": a, d, c is not sorted */
    ASSERT_ST(ingot_native_open(ws, sizeof ws, img, (size_t)need, n, INGOT_NATIVE_SKIP_HEADER_CRC,
                                &r, &e),
              INGOT_BAD_LAYOUT);
    img[at_c - 2] = 'c'; /* a, c, c: a duplicate */
    ASSERT_ST(ingot_native_open(ws, sizeof ws, img, (size_t)need, n, INGOT_NATIVE_SKIP_HEADER_CRC,
                                &r, &e),
              INGOT_DUPLICATE);
    free(img);
}

/* The writer refuses BOOL bytes other than 0 and 1 (every reader's verify would refuse the file):
 * with the data given at add time and pushed in chunks, in the native and a foreign format, and
 * a refused save leaves neither the target nor a temporary behind. */
TEST(test_writer_refuses_bad_bool)
{
    static const char *formats[] = {"ingot", "safetensors", "npy"};
    uint8_t good[9] = {0, 1, 1, 0, 1, 0, 0, 0, 1}, bad[9];
    memcpy(bad, good, sizeof bad);
    bad[6] = 0x02;
    uint64_t shape[1] = {9};
    for (size_t fi = 0; fi < sizeof formats / sizeof formats[0]; fi++) {
        ingot_writer_opts o = {.format = formats[fi], .no_fsync = true};
        ingot_writer *wr;
        ingot_error e;
        /* data given at add time */
        ASSERT_OK(ingot_writer_new(&o, &wr, &e));
        ASSERT_OK(ingot_writer_add_tensor(wr, "mask", INGOT_DTYPE_BOOL, 1, shape, NULL, bad, &e));
        const char *path = test_tmp_path("bad_bool.out");
        ASSERT_ST(ingot_writer_save(wr, path, &e), INGOT_BAD_VALUE);
        ASSERT_STR(e.where, "mask");
        ASSERT_TRUE(strstr(e.msg, "BOOL byte 6 ") != NULL);
        ingot_writer_free(wr);
        ASSERT_TRUE(access(path, F_OK) != 0);
        /* pushed in chunks: the bad byte in the second chunk still gets its tensor offset */
        ASSERT_OK(ingot_writer_new(&o, &wr, &e));
        ASSERT_OK(ingot_writer_add_tensor(wr, "mask", INGOT_DTYPE_BOOL, 1, shape, NULL, NULL, &e));
        ASSERT_OK(ingot_writer_begin_mem(wr, &e));
        ASSERT_OK(ingot_writer_write(wr, bad, 4, &e));
        ASSERT_ST(ingot_writer_write(wr, bad + 4, 5, &e), INGOT_BAD_VALUE);
        ASSERT_TRUE(strstr(e.msg, "BOOL byte 6 ") != NULL);
        ingot_writer_free(wr);
        /* the valid bytes still write and read back */
        ASSERT_OK(ingot_writer_new(&o, &wr, &e));
        ASSERT_OK(ingot_writer_add_tensor(wr, "mask", INGOT_DTYPE_BOOL, 1, shape, NULL, good, &e));
        ASSERT_OK(ingot_writer_save(wr, path, &e));
        ingot_writer_free(wr);
        ingot_file *f;
        ASSERT_OK(ingot_file_open(path, NULL, &f, &e));
        uint8_t back[9];
        ASSERT_OK(ingot_file_tensor_read(f, 0, 0, back, sizeof back, &e));
        ASSERT_MEM(back, good, sizeof good);
        ASSERT_OK(ingot_file_verify(f, 1, &e));
        ingot_file_close(f);
        unlink(path);
    }
    /* nothing named after the target is left in the directory (no temporary) */
    char cmd[400];
    snprintf(cmd, sizeof cmd, "test -z \"$(ls -A %s | grep bad_bool)\"", test_tmp_dir());
    ASSERT_EQ(system(cmd), 0);
}

RUN_TESTS(T(test_roundtrip_basic), T(test_many_tensors), T(test_index_names_at_buffer_end),
          T(test_writer_refuses_bad_bool))
