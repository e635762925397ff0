/*
 * test_io_private.c - INGOT_IO_MMAP_PRIVATE: tensor memory of a copy-on-write mapping can be
 * written in place (what torch does to a zero-copy tensor); the file, a second handle and the
 * page cache keep the original bytes, for every format ingot writes that maps its data.
 */
#include <unistd.h>

#include "harness.h"
#include "files.h"


enum { N = 4096 };

static void write_and_check(const char *format, const char *name)
{
    static float w[N];
    for (int i = 0; i < N; i++) w[i] = (float)i * 0.25f;
    ingot_writer_opts wo = {0};
    wo.format = format;
    ingot_writer *wr;
    ingot_error e;
    ASSERT_OK(ingot_writer_new(&wo, &wr, &e));
    uint64_t shape[1] = {N};
    ASSERT_OK(ingot_writer_add_tensor(wr, "w", INGOT_DTYPE_F32, 1, shape, NULL, w, &e));
    const char *p = test_tmp_path(name);
    char path[512];
    snprintf(path, sizeof path, "%s", p);
    ASSERT_OK(ingot_writer_save(wr, path, &e));
    ingot_writer_free(wr);
    size_t n0 = 0;
    uint8_t *before = test_read_file(path, &n0);
    ASSERT_TRUE(before != NULL);

    ingot_open_opts o = {0};
    o.io = INGOT_IO_MMAP_PRIVATE;
    ingot_file *f, *g;
    ASSERT_OK(ingot_file_open(path, &o, &f, &e));
    ASSERT_OK(ingot_file_open(path, NULL, &g, &e)); /* a read-only handle beside it */
    ingot_tensor_info t, u;
    ASSERT_OK(ingot_file_tensor_at(f, 0, &t));
    ASSERT_OK(ingot_file_tensor_at(g, 0, &u));
    ASSERT_TRUE(t.data != NULL && !(t.flags & INGOT_TENSOR_NOT_MAPPED));
    float *x = (float *)(uintptr_t)t.data; /* the documented cast */
    for (int i = 0; i < N; i++) x[i] += 1.0f; /* in place, as t.add_(1) */
    const float *y = u.data;
    for (int i = 0; i < N; i++) {
        ASSERT_TRUE(x[i] == (float)i * 0.25f + 1.0f);
        ASSERT_TRUE(y[i] == (float)i * 0.25f);
    }
    /* the read-only handle still verifies; the file's bytes did not change */
    ASSERT_OK(ingot_file_verify(g, 1, &e));
    ingot_file_close(f);
    ingot_file_close(g);
    size_t n1 = 0;
    uint8_t *after = test_read_file(path, &n1);
    ASSERT_TRUE(after != NULL && n1 == n0 && memcmp(before, after, n0) == 0);
    /* and a fresh handle in the new mode sees the file, not the old private pages */
    ASSERT_OK(ingot_file_open(path, &o, &f, &e));
    ASSERT_OK(ingot_file_tensor_at(f, 0, &t));
    ASSERT_TRUE(((const float *)t.data)[N - 1] == (float)(N - 1) * 0.25f);
    ingot_file_close(f);
    free(before);
    free(after);
    unlink(path);
}

TEST(private_mapping_ingot) { write_and_check("ingot", "p.ingot"); }
TEST(private_mapping_safetensors) { write_and_check("safetensors", "p.safetensors"); }
TEST(private_mapping_gguf) { write_and_check("gguf", "p.gguf"); }
TEST(private_mapping_npy) { write_and_check("npy", "p.npy"); }

RUN_TESTS(T(private_mapping_ingot), T(private_mapping_safetensors), T(private_mapping_gguf),
          T(private_mapping_npy))
