/* test_safetensors_shard.c - sharded checkpoints: writing "<stem>.safetensors.index.json" with
 * max_shard_size gives HF-named shards plus the index; opening the index gives one logical file
 * (mmap and pread, reads and verify routed to the right shard); malformed indexes with exact
 * codes (missing shard, tensor not in its shard, duplicate, path traversal, ...). */
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

static char dir[512];

static void setup_dir(const char *name)
{
    snprintf(dir, sizeof dir, "%s/st_shard_%s", INGOT_BINARY_DIR, name);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", dir, dir);
    if (system(cmd) != 0) fprintf(stderr, "setup failed\n");
}

static void write_text(const char *name, const char *text)
{
    char p[1200];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *fp = fopen(p, "wb");
    fputs(text, fp);
    fclose(fp);
}

static bool exists(const char *name)
{
    char p[1200];
    struct stat sb;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return stat(p, &sb) == 0;
}

/* 10 tensors of 100 bytes each (F32 x 25, U8 x 100 alternating), plus metadata. */
static ingot_status write_model(const char *target, const char *max_shard, uint8_t *data,
                                ingot_error *e)
{
    ingot_writer_opts wo = {0};
    wo.format = "safetensors";
    wo.no_fsync = true;
    ingot_writer *w;
    ingot_status st = ingot_writer_new(&wo, &w, e);
    if (st != INGOT_OK) return st;
    if (max_shard) st = ingot_writer_set_option(w, "max_shard_size", max_shard, e);
    if (st == INGOT_OK) st = ingot_writer_set_string(w, "format", "pt");
    for (int i = 0; i < 10 && st == INGOT_OK; i++) {
        char name[32];
        snprintf(name, sizeof name, "layer.%d.w", 9 - i); /* declaration order != name order */
        uint64_t dim = i % 2 ? 100 : 25;
        st = ingot_writer_add_tensor(w, name, i % 2 ? INGOT_DTYPE_U8 : INGOT_DTYPE_F32, 1, &dim,
                                     NULL, data + 100 * i, e);
    }
    char path[800];
    snprintf(path, sizeof path, "%s/%s", dir, target);
    if (st == INGOT_OK) st = ingot_writer_save(w, path, e);
    ingot_writer_free(w);
    return st;
}

TEST(sharded_write_and_read)
{
    setup_dir("rw");
    uint8_t data[1000];
    for (int i = 0; i < 1000; i++) data[i] = (uint8_t)(i * 7);
    ingot_error e;
    ASSERT_OK(write_model("model.safetensors.index.json", "300", data, &e));
    /* 100-byte tensors, 300 bytes per shard: 4 shards (3+3+3+1). */
    ASSERT_TRUE(exists("model-00001-of-00004.safetensors"));
    ASSERT_TRUE(exists("model-00004-of-00004.safetensors"));
    ASSERT_TRUE(!exists("model-00005-of-00004.safetensors"));
    ASSERT_TRUE(exists("model.safetensors.index.json"));
    char p[1200];
    snprintf(p, sizeof p, "%s/model.safetensors.index.json", dir);
    FILE *fp = fopen(p, "rb");
    char idx[4096];
    size_t n = fread(idx, 1, sizeof idx - 1, fp);
    fclose(fp);
    idx[n] = 0;
    ASSERT_TRUE(strncmp(idx, "{\n  \"metadata\": {\n    \"total_size\": 1000\n  },\n  \"weight_map\": {\n"
                             "    \"layer.0.w\": \"model-00004-of-00004.safetensors\",\n",
                        strlen("{\n  \"metadata\": {\n    \"total_size\": 1000\n  },\n  \"weight_map\": {\n"
                               "    \"layer.0.w\": \"model-00004-of-00004.safetensors\",\n")) == 0);
    /* Each shard is a plain safetensors file. */
    ingot_file *s1;
    snprintf(p, sizeof p, "%s/model-00002-of-00004.safetensors", dir);
    ASSERT_OK(ingot_file_open(p, NULL, &s1, &e));
    ASSERT_STR(ingot_file_format(s1), "safetensors");
    ASSERT_EQ(ingot_file_tensor_count(s1), 3);
    ingot_tensor_info t;
    ASSERT_OK(ingot_file_tensor_at(s1, 0, &t));
    ASSERT_STR(t.name, "layer.6.w");
    ingot_file_close(s1);

    for (int mode = 0; mode < 2; mode++) {
        ingot_open_opts o = {0};
        o.io = mode ? INGOT_IO_PREAD : INGOT_IO_MMAP;
        ingot_file *f;
        snprintf(p, sizeof p, "%s/model.safetensors.index.json", dir);
        ASSERT_OK(ingot_file_open(p, &o, &f, &e));
        ASSERT_STR(ingot_file_format(f), "safetensors-index");
        ASSERT_EQ(ingot_file_tensor_count(f), 10);
        for (uint64_t i = 0; i < 10; i++) {
            ASSERT_OK(ingot_file_tensor_at(f, i, &t));
            ASSERT_EQ(t.index, i);
            /* weight_map order: sorted names, layer.0.w first = declared last */
            char want[32];
            snprintf(want, sizeof want, "layer.%d.w", (int)i);
            ASSERT_STR(t.name, want);
            int decl = 9 - (int)i;
            ASSERT_EQ(t.nbytes, 100);
            ASSERT_EQ(t.dtype, decl % 2 ? INGOT_DTYPE_U8 : INGOT_DTYPE_F32);
            uint8_t buf[100];
            ASSERT_OK(ingot_file_tensor_read(f, i, 0, buf, 100, &e));
            ASSERT_MEM(buf, data + 100 * decl, 100);
            ASSERT_OK(ingot_file_tensor_copy(f, i, buf, 100, &e));
            ASSERT_MEM(buf, data + 100 * decl, 100);
            if (mode == 0) ASSERT_MEM(t.data, data + 100 * decl, 100);
            else ASSERT_TRUE(t.data == NULL && (t.flags & INGOT_TENSOR_NOT_MAPPED));
            ingot_tensor_info g;
            ASSERT_OK(ingot_file_tensor_find(f, want, &g));
            ASSERT_EQ(g.index, i);
            ASSERT_OK(ingot_file_tensor_verify(f, i, &e));
        }
        ASSERT_ST(ingot_file_tensor_find(f, "nope", &t), INGOT_NOT_FOUND);
        const char *s;
        size_t len;
        ASSERT_OK(ingot_file_meta_get_string(f, "format", &s, &len));
        ASSERT_TRUE(len == 2 && memcmp(s, "pt", 2) == 0);
        ASSERT_EQ(ingot_file_meta_count(f), 1);
        ASSERT_OK(ingot_file_verify(f, 2, &e));
        ingot_file_close(f);
    }
    /* The writer picks the index format by name too. */
    ASSERT_STR(ingot_writer_format_for_path("x/model.safetensors.index.json"), "safetensors-index");
    ASSERT_STR(ingot_writer_format_for_path("x/model.safetensors"), "safetensors");
}

TEST(sharded_single_and_limits)
{
    setup_dir("single");
    uint8_t data[1000] = {0};
    ingot_error e;
    /* Fits in one shard: 1-of-1 plus the index. */
    ASSERT_OK(write_model("m.safetensors.index.json", "5GB", data, &e));
    ASSERT_TRUE(exists("m-00001-of-00001.safetensors"));
    /* A plain target that would need shards is refused (the index names the output). */
    ASSERT_ST(write_model("plain.safetensors", "500", data, &e), INGOT_BAD_PATH);
    ASSERT_TRUE(!exists("plain.safetensors"));
    /* ... and within the limit it is one ordinary file. */
    ASSERT_OK(write_model("ok.safetensors", "1KB", data, &e));
    ASSERT_TRUE(exists("ok.safetensors"));
    /* Tensors larger than max_shard_size get a shard each. */
    ASSERT_OK(write_model("big.safetensors.index.json", "50", data, &e));
    ASSERT_TRUE(exists("big-00010-of-00010.safetensors"));
    /* No temporaries left behind. */
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "ls '%s' | grep -q ingot-tmp", dir);
    ASSERT_TRUE(system(cmd) != 0);
}

static ingot_status open_index(const char *text, ingot_error *e)
{
    write_text("x.safetensors.index.json", text);
    char p[1200];
    snprintf(p, sizeof p, "%s/x.safetensors.index.json", dir);
    ingot_file *f = NULL;
    memset(e, 0, sizeof *e);
    ingot_status st = ingot_file_open(p, NULL, &f, e);
    ingot_file_close(f);
    return st;
}

TEST(malformed_indexes)
{
    setup_dir("bad");
    uint8_t data[1000] = {0};
    ingot_error e;
    ASSERT_OK(write_model("m.safetensors.index.json", "300", data, &e));
    ASSERT_OK(open_index("{\"weight_map\":{\"layer.0.w\":\"m-00004-of-00004.safetensors\"}}", &e));
    ASSERT_ST(open_index("{\"weight_map\":{\"layer.0.w\":\"missing.safetensors\"}}", &e),
              INGOT_NOT_FOUND);
    ASSERT_STR(e.where, "missing.safetensors");
    ASSERT_ST(open_index("{\"weight_map\":{\"layer.0.w\":\"m-00001-of-00004.safetensors\"}}", &e),
              INGOT_BAD_METADATA);
    ASSERT_STR(e.where, "layer.0.w");
    ASSERT_ST(open_index("{\"weight_map\":{\"layer.0.w\":\"m-00004-of-00004.safetensors\","
                         "\"layer.0.w\":\"m-00004-of-00004.safetensors\"}}", &e),
              INGOT_DUPLICATE);
    ASSERT_ST(open_index("{\"weight_map\":{},\"weight_map\":{}}", &e), INGOT_DUPLICATE);
    ASSERT_ST(open_index("{\"weight_map\":{\"a\":\"../m-00004-of-00004.safetensors\"}}", &e),
              INGOT_BAD_PATH);
    ASSERT_ST(open_index("{\"weight_map\":{\"a\":\"/etc/passwd\"}}", &e), INGOT_BAD_PATH);
    ASSERT_ST(open_index("{\"weight_map\":{\"a\":\"..\"}}", &e), INGOT_BAD_PATH);
    ASSERT_ST(open_index("{\"weight_map\":{\"a\":\"\"}}", &e), INGOT_BAD_PATH);
    ASSERT_ST(open_index("{\"weight_map\":{\"a\":1}}", &e), INGOT_WRONG_TYPE);
    ASSERT_ST(open_index("{\"weight_map\":[]}", &e), INGOT_BAD_METADATA);
    ASSERT_ST(open_index("{\"metadata\":{\"total_size\":1},\"x\":1}", &e), INGOT_BAD_METADATA);
    ASSERT_ST(open_index("{\"weight_map\":{\"a\":\"m-00004-of-00004.safetensors\"", &e),
              INGOT_BAD_METADATA);
    /* weight_map past the probe window: still found by open. */
    char big[2048];
    snprintf(big, sizeof big, "{\"metadata\":{\"pad\":\"%0900d\"},\"weight_map\":{}}", 0);
    ASSERT_OK(open_index(big, &e));
    snprintf(big, sizeof big, "{\"metadata\":{\"pad\":\"%0900d\"}}", 0);
    ASSERT_ST(open_index(big, &e), INGOT_BAD_METADATA);
    /* A shard that is not safetensors. */
    write_text("junk.safetensors", "not a safetensors file at all");
    ASSERT_ST(open_index("{\"weight_map\":{\"a\":\"junk.safetensors\"}}", &e), INGOT_UNKNOWN_FORMAT);
    /* An index opened from memory has no directory for its shards. */
    const char *text = "{\"weight_map\":{}}";
    ingot_file *f = NULL;
    ASSERT_ST(ingot_file_open_buffer(text, strlen(text), NULL, &f, &e), INGOT_UNSUPPORTED);
}

RUN_TESTS(T(sharded_write_and_read), T(sharded_single_and_limits), T(malformed_indexes))
