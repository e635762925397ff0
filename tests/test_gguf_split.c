/*
 * test_gguf_split.c - llama.cpp's split GGUF models (src/formats/gguf/gguf_split.c): shards
 * written as gguf-split lays them out (split.no u16, split.count u16, split.tensors.count i32;
 * the model's metadata in the first) open as one model from any shard, equal tensor for tensor
 * and digest for digest to the unsplit model, convert back to one file without the split keys;
 * missing or inconsistent shards are refused naming the shard; a plain GGUF file, however named,
 * stays "gguf".
 */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "ingot/ingot.h"

static char dir[512];

static const char *at(const char *name)
{
    static char buf[4][1200];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

static float data[4][32];
static const char *const names[4] = {"token_embd.weight", "blk.0.attn_q.weight",
                                     "blk.0.ffn_up.weight", "output.weight"};

/* Writes a GGUF file with tensors [first, first + n) of the model; split < 0: no split keys;
 * the model's metadata only in shard 0 (and in an unsplit file). */
static void write_part(const char *path, int first, int n, int split, int count, int total)
{
    ingot_writer_opts wo = {0};
    wo.format = "gguf";
    wo.no_fsync = true;
    ingot_writer *w;
    ASSERT_OK(ingot_writer_new(&wo, &w, NULL));
    if (split <= 0) {
        ASSERT_OK(ingot_writer_set_string(w, "general.architecture", "llama"));
        ASSERT_OK(ingot_writer_set_u32(w, "llama.block_count", 1));
        const void *toks[3] = {"<s>", "a", "b"};
        size_t lens[3] = {3, 1, 1};
        ASSERT_OK(ingot_writer_set_string_array(w, "tokenizer.ggml.tokens", INGOT_META_STRING,
                                                toks, lens, 3));
    }
    if (split >= 0) {
        ASSERT_OK(ingot_writer_set_u16(w, "split.no", (uint16_t)split));
        ASSERT_OK(ingot_writer_set_u16(w, "split.count", (uint16_t)count));
        ASSERT_OK(ingot_writer_set_i32(w, "split.tensors.count", total));
    }
    uint64_t shape[2] = {2, 16};
    for (int i = first; i < first + n; i++)
        ASSERT_OK(
            ingot_writer_add_tensor(w, names[i], INGOT_DTYPE_F32, 2, shape, NULL, data[i], NULL));
    ASSERT_OK(ingot_writer_save(w, path, NULL));
    ingot_writer_free(w);
}

static void make_split(const char *prefix, int total_tensors)
{
    char p[600];
    snprintf(p, sizeof p, "%s-00001-of-00003.gguf", prefix);
    write_part(at(p), 0, 2, 0, 3, total_tensors);
    snprintf(p, sizeof p, "%s-00002-of-00003.gguf", prefix);
    write_part(at(p), 2, 1, 1, 3, total_tensors);
    snprintf(p, sizeof p, "%s-00003-of-00003.gguf", prefix);
    write_part(at(p), 3, 1, 2, 3, total_tensors);
}

TEST(opens_as_one_model)
{
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < 32; k++) data[i][k] = (float)(i * 100 + k);
    write_part(at("whole.gguf"), 0, 4, -1, 0, 0);
    make_split("m", 4);
    static const char *const which[] = {"m-00001-of-00003.gguf", "m-00003-of-00003.gguf"};
    ingot_file *whole;
    ASSERT_OK(ingot_file_open(at("whole.gguf"), NULL, &whole, NULL));
    ASSERT_STR(ingot_file_format(whole), "gguf");
    for (int k = 0; k < 2; k++) {
        ingot_file *f;
        ingot_error e;
        ASSERT_OK(ingot_file_open(at(which[k]), NULL, &f, &e));
        ASSERT_STR(ingot_file_format(f), "gguf-split");
        ASSERT_U64(ingot_file_tensor_count(f), 4);
        for (int i = 0; i < 4; i++) {
            ingot_tensor_info t;
            ASSERT_OK(ingot_file_tensor_at(f, (uint64_t)i, &t));
            ASSERT_STR(t.name, names[i]);
            ASSERT_U64(t.index, (uint64_t)i);
            float back[32];
            ASSERT_OK(ingot_file_tensor_read(f, (uint64_t)i, 0, back, sizeof back, NULL));
            ASSERT_MEM(back, data[i], sizeof back);
            ASSERT_MEM(t.data, data[i], sizeof back); /* zero-copy into the shard */
        }
        ingot_tensor_info t;
        ASSERT_OK(ingot_file_tensor_find(f, "blk.0.ffn_up.weight", &t));
        ASSERT_U64(t.index, 2);
        ASSERT_EQ(ingot_file_tensor_find(f, "nosuch", &t), INGOT_NOT_FOUND);
        /* the model's metadata, without the split keys */
        ASSERT_U64(ingot_file_meta_count(f), 3);
        ingot_meta_info m;
        ASSERT_EQ(ingot_file_meta_find(f, "split.count", &m), INGOT_NOT_FOUND);
        ASSERT_OK(ingot_file_meta_find(f, "tokenizer.ggml.tokens", &m));
        const char *s;
        size_t len;
        ASSERT_OK(ingot_file_meta_array_string(f, m.index, 2, &s, &len));
        ASSERT_TRUE(len == 1 && s[0] == 'b');
        for (uint64_t i = 0; i < ingot_file_meta_count(f); i++) {
            ASSERT_OK(ingot_file_meta_at(f, i, &m));
            ASSERT_TRUE(strncmp(m.key, "split.", 6) != 0);
        }
        ASSERT_OK(ingot_file_verify(f, 2, &e));
        uint8_t d1[32], d2[32];
        ASSERT_OK(ingot_file_digest(f, d1, NULL));
        ASSERT_OK(ingot_file_digest(whole, d2, NULL));
        ASSERT_MEM(d1, d2, 32);
        ingot_file_close(f);
    }
    ingot_file_close(whole);
}

TEST(converts_to_one_file)
{
    ingot_file *f;
    ASSERT_OK(ingot_file_open(at("m-00002-of-00003.gguf"), NULL, &f, NULL));
    ingot_convert_plan *p;
    ASSERT_OK(ingot_convert_plan_new(f, &p, NULL));
    ingot_convert_opts o = {0};
    o.no_fsync = true;
    ASSERT_OK(ingot_convert_run(p, at("joined.gguf"), &o, NULL, NULL));
    ingot_convert_plan_free(p);
    ingot_file_close(f);
    ingot_file *g, *whole;
    ASSERT_OK(ingot_file_open(at("joined.gguf"), NULL, &g, NULL));
    ASSERT_OK(ingot_file_open(at("whole.gguf"), NULL, &whole, NULL));
    ASSERT_STR(ingot_file_format(g), "gguf");
    ingot_meta_info m;
    ASSERT_EQ(ingot_file_meta_find(g, "split.no", &m), INGOT_NOT_FOUND);
    uint8_t d1[32], d2[32];
    ASSERT_OK(ingot_file_digest(g, d1, NULL));
    ASSERT_OK(ingot_file_digest(whole, d2, NULL));
    ASSERT_MEM(d1, d2, 32);
    ingot_file_close(g);
    ingot_file_close(whole);
}

TEST(refusals)
{
    ingot_file *f;
    ingot_error e;
    /* a missing shard */
    make_split("gone", 4);
    unlink(at("gone-00003-of-00003.gguf"));
    ASSERT_EQ(ingot_file_open(at("gone-00001-of-00003.gguf"), NULL, &f, &e), INGOT_NOT_FOUND);
    ASSERT_STR(e.where, "gone-00003-of-00003.gguf");
    /* split.tensors.count disagreeing with the shards */
    make_split("count", 5);
    ASSERT_EQ(ingot_file_open(at("count-00001-of-00003.gguf"), NULL, &f, &e), INGOT_BAD_METADATA);
    ASSERT_TRUE(strstr(e.msg, "says 5 tensors, the 3 shards hold 4") != NULL);
    /* a shard whose split.no disagrees with its name */
    make_split("no", 4);
    write_part(at("no-00002-of-00003.gguf"), 2, 1, 2, 3, 4);
    ASSERT_EQ(ingot_file_open(at("no-00001-of-00003.gguf"), NULL, &f, &e), INGOT_BAD_METADATA);
    ASSERT_TRUE(strstr(e.msg, "disagree with the file name") != NULL);
    /* one tensor in two shards */
    make_split("dup", 4);
    write_part(at("dup-00003-of-00003.gguf"), 2, 1, 2, 3, 4);
    ASSERT_EQ(ingot_file_open(at("dup-00001-of-00003.gguf"), NULL, &f, &e), INGOT_DUPLICATE);
    ASSERT_STR(e.where, "blk.0.ffn_up.weight");
    /* plain GGUF named like a split: plain */
    write_part(at("plain-00001-of-00002.gguf"), 0, 4, -1, 0, 0);
    ASSERT_OK(ingot_file_open(at("plain-00001-of-00002.gguf"), NULL, &f, &e));
    ASSERT_STR(ingot_file_format(f), "gguf");
    ASSERT_U64(ingot_file_tensor_count(f), 4);
    ingot_file_close(f);
    /* a split file read from a buffer has no siblings: plain GGUF with its split keys */
    FILE *in = fopen(at("m-00001-of-00003.gguf"), "rb");
    static uint8_t buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf, in);
    fclose(in);
    ASSERT_OK(ingot_file_open_buffer(buf, n, NULL, &f, &e));
    ASSERT_STR(ingot_file_format(f), "gguf");
    ASSERT_U64(ingot_file_tensor_count(f), 2);
    ingot_file_close(f);
}

/* Writing: convert --opt max_shard_size / max_shard_tensors lays shards out as gguf-split does;
 * they read back as the model, shard 0 with the metadata, the others with the split keys only. */
TEST(writes_shards)
{
    ingot_file *whole;
    ASSERT_OK(ingot_file_open(at("whole.gguf"), NULL, &whole, NULL));
    ingot_convert_plan *p;
    ASSERT_OK(ingot_convert_plan_new(whole, &p, NULL));
    static const char *const opts[] = {"max_shard_tensors=3", "alignment=64"};
    ingot_convert_opts o = {0};
    o.no_fsync = true;
    o.options = opts;
    o.n_options = 2;
    ASSERT_OK(ingot_convert_run(p, at("w.gguf"), &o, NULL, NULL));
    ASSERT_TRUE(access(at("w.gguf"), F_OK) != 0); /* the target names the shards' prefix */
    ingot_file *f;
    ASSERT_OK(ingot_file_open(at("w-00001-of-00002.gguf"), NULL, &f, NULL));
    ASSERT_STR(ingot_file_format(f), "gguf-split");
    uint8_t d1[32], d2[32];
    ASSERT_OK(ingot_file_digest(f, d1, NULL));
    ASSERT_OK(ingot_file_digest(whole, d2, NULL));
    ASSERT_MEM(d1, d2, 32);
    ASSERT_U64(ingot_file_meta_count(f), 4); /* the model's 3 and general.alignment */
    ingot_file_close(f);
    /* each shard alone, as plain GGUF from a buffer: the keys gguf-split writes */
    for (int k = 0; k < 2; k++) {
        const char *name = k ? "w-00002-of-00002.gguf" : "w-00001-of-00002.gguf";
        FILE *in = fopen(at(name), "rb");
        static uint8_t buf[1 << 16];
        size_t n = fread(buf, 1, sizeof buf, in);
        fclose(in);
        ingot_file *g;
        ASSERT_OK(ingot_file_open_buffer(buf, n, NULL, &g, NULL));
        uint16_t no, count;
        int32_t total;
        uint32_t align;
        ASSERT_OK(ingot_file_meta_get_u16(g, "split.no", &no));
        ASSERT_OK(ingot_file_meta_get_u16(g, "split.count", &count));
        ASSERT_OK(ingot_file_meta_get_i32(g, "split.tensors.count", &total));
        ASSERT_OK(ingot_file_meta_get_u32(g, "general.alignment", &align));
        ASSERT_TRUE(no == k && count == 2 && total == 4 && align == 64);
        ASSERT_U64(ingot_file_tensor_count(g), k ? 1 : 3);
        ASSERT_U64(ingot_file_meta_count(g), k ? 4 : 7);
        ASSERT_OK(ingot_file_verify(g, 1, NULL));
        ingot_file_close(g);
    }
    /* by size: 2 x 16 floats of 128 bytes, padded to 128: at most two per 300 bytes */
    static const char *const by_size[] = {"max_shard_size=300"};
    o.options = by_size;
    o.n_options = 1;
    ASSERT_OK(ingot_convert_run(p, at("s.gguf"), &o, NULL, NULL));
    ASSERT_OK(ingot_file_open(at("s-00002-of-00002.gguf"), NULL, &f, NULL));
    ASSERT_U64(ingot_file_tensor_count(f), 4);
    ingot_file_close(f);
    static const char *const bad[] = {"max_shard_size=0"};
    o.options = bad;
    ingot_error e;
    ASSERT_EQ(ingot_convert_run(p, at("b.gguf"), &o, NULL, &e), INGOT_BAD_METADATA);
    ingot_convert_plan_free(p);
    ingot_file_close(whole);
}

int main(int argc, char **argv)
{
    snprintf(dir, sizeof dir, "%s/gguf_split", INGOT_BINARY_DIR);
    mkdir(dir, 0755);
    static const test_case cases[] = {T(opens_as_one_model), T(converts_to_one_file),
                                      T(refusals), T(writes_shards)};
    return harness_run(cases, sizeof cases / sizeof *cases, argc, argv);
}
