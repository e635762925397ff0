/*
 * test_convert_api.c - the conversion API (include/ingot/convert.h): plans and their runs.
 * Selection, renames (and their collisions), casts and quantization (the stored bytes equal
 * ingot_cast / ingot_quantize of the source, whose bits test_cast.c and test_quantize.c pin),
 * llama.cpp's quantization rules on a model-shaped plan, the q/k row permutation, metadata
 * edits with their types, lossy records, the dequantize fallback, cancellation (target as it
 * was, no temporary), writing over the source itself.
 */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "ingot/ingot.h"

static char dir[512];

static const char *path_in(const char *name)
{
    static char buf[4][700];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

/* A small model: 4 float tensors, an int tensor, typed metadata. Values are deterministic. */
static float w_a[2 * 64], w_b[3 * 64], bias[64];
static uint16_t h16[64];

static void make_model(const char *path)
{
    for (int i = 0; i < 128; i++) w_a[i] = sinf((float)i * 0.7f) * 0.1f;
    for (int i = 0; i < 192; i++) w_b[i] = cosf((float)i * 0.3f) * (float)(i % 5);
    for (int i = 0; i < 64; i++) bias[i] = (float)i / 3.0f;
    for (int i = 0; i < 64; i++) h16[i] = (uint16_t)(0x3C00 + i); /* F16 1 + i/1024 */
    int32_t step[3] = {7, 8, 9};
    ingot_writer_opts wo = {0};
    wo.no_fsync = true;
    ingot_writer *w;
    ASSERT_OK(ingot_writer_new(&wo, &w, NULL));
    ASSERT_OK(ingot_writer_set_u32(w, "layers", 2));
    ASSERT_OK(ingot_writer_set_string(w, "name", "demo"));
    ASSERT_OK(ingot_writer_set_f64(w, "lr", 0.5));
    uint64_t sa[2] = {2, 64}, sb[2] = {3, 64}, s1[1] = {64}, s3[1] = {3};
    ASSERT_OK(
        ingot_writer_add_tensor(w, "model/a.weight", INGOT_DTYPE_F32, 2, sa, NULL, w_a, NULL));
    ASSERT_OK(
        ingot_writer_add_tensor(w, "model/b.weight", INGOT_DTYPE_F32, 2, sb, NULL, w_b, NULL));
    ASSERT_OK(ingot_writer_add_tensor(w, "model/b.bias", INGOT_DTYPE_F32, 1, s1, NULL, bias, NULL));
    ASSERT_OK(ingot_writer_add_tensor(w, "model/h", INGOT_DTYPE_F16, 1, s1, NULL, h16, NULL));
    ASSERT_OK(
        ingot_writer_add_tensor(w, "optimizer/step", INGOT_DTYPE_I32, 1, s3, NULL, step, NULL));
    ASSERT_OK(ingot_writer_save(w, path, NULL));
    ingot_writer_free(w);
}

static ingot_file *open_ok(const char *path)
{
    ingot_file *f = NULL;
    ingot_error e;
    if (ingot_file_open(path, NULL, &f, &e) != INGOT_OK) {
        char buf[300];
        CHECK(0, "open %s: %s", path, ingot_error_format(&e, buf, sizeof buf));
    }
    return f;
}

static ingot_convert_opts quiet(void)
{
    ingot_convert_opts o = {0};
    o.no_fsync = true;
    return o;
}

static void tensor_bytes(const ingot_file *f, const char *name, void *dst, size_t n)
{
    ingot_tensor_info t;
    ASSERT_OK(ingot_file_tensor_find(f, name, &t));
    ASSERT_U64(t.nbytes, n);
    ASSERT_OK(ingot_file_tensor_read(f, t.index, 0, dst, n, NULL));
}

TEST(select_rename_keep)
{
    const char *src = path_in("model.ingot"), *out = path_in("sel.safetensors");
    make_model(src);
    ingot_file *f = open_ok(src);
    ingot_convert_plan *p;
    ASSERT_OK(ingot_convert_plan_new(f, &p, NULL));
    ASSERT_U64(ingot_convert_plan_tensor_count(p), 5);
    ingot_convert_rule rules[] = {{"optimizer/*", false}};
    ASSERT_OK(ingot_convert_plan_select(p, rules, 1, NULL));
    ASSERT_OK(ingot_convert_plan_rename(p, "^model/", "", NULL));
    ASSERT_OK(ingot_convert_plan_rename(p, "^([a-z])\\.(weight|bias)$", "blk.\\1.\\2", NULL));
    ingot_convert_tensor ct;
    ASSERT_OK(ingot_convert_plan_tensor_at(p, 0, &ct));
    ASSERT_STR(ct.name, "blk.a.weight");
    ASSERT_OK(ingot_convert_plan_tensor_at(p, 4, &ct));
    ASSERT_EQ(ct.action, INGOT_CONVERT_DROP);
    ingot_convert_opts o = quiet();
    ingot_convert_result *r;
    ASSERT_OK(ingot_convert_run(p, out, &o, &r, NULL));
    ingot_convert_summary s;
    ingot_convert_result_summary(r, &s);
    ASSERT_U64(s.tensors, 4);
    ASSERT_U64(s.dropped, 1);
    ASSERT_STR(s.format, "safetensors");
    /* safetensors keeps only strings: u32 and f64 written as text, one METADATA record each */
    ASSERT_U64(s.metadata_lossy, 2);
    ASSERT_U64(ingot_convert_result_lossy_count(r), 2);
    ingot_lossy l;
    ASSERT_OK(ingot_convert_result_lossy_at(r, 0, &l));
    ASSERT_EQ(l.kind, INGOT_LOSSY_METADATA);
    ingot_convert_result_free(r);
    ingot_file *g = open_ok(out);
    ASSERT_U64(ingot_file_tensor_count(g), 4);
    float back[128];
    tensor_bytes(g, "blk.a.weight", back, sizeof back);
    ASSERT_MEM(back, w_a, sizeof back);
    ingot_tensor_info t;
    ASSERT_EQ(ingot_file_tensor_find(g, "optimizer/step", &t), INGOT_NOT_FOUND);
    ASSERT_OK(ingot_file_tensor_find(g, "h", &t));
    ASSERT_EQ(t.dtype, INGOT_DTYPE_F16);
    ingot_file_close(g);
    /* include rules: only what they match */
    ingot_convert_plan *q;
    ASSERT_OK(ingot_convert_plan_new(f, &q, NULL));
    ingot_convert_rule inc[] = {{"model/b.*", false}, {"model/*", true}};
    ASSERT_OK(ingot_convert_plan_select(q, inc, 2, NULL));
    for (uint64_t i = 0; i < 5; i++) {
        ASSERT_OK(ingot_convert_plan_tensor_at(q, i, &ct));
        bool kept = ct.action != INGOT_CONVERT_DROP;
        CHECK(kept == (i == 0 || i == 3), "entry %llu kept %d", (unsigned long long)i, kept);
    }
    ingot_convert_plan_free(q);
    ingot_convert_plan_free(p);
    ingot_file_close(f);
}

TEST(rename_collision_names_both)
{
    ingot_file *f = open_ok(path_in("model.ingot"));
    ingot_convert_plan *p;
    ASSERT_OK(ingot_convert_plan_new(f, &p, NULL));
    ingot_error e;
    ASSERT_EQ(ingot_convert_plan_rename(p, "\\.(weight|bias)$", "", &e), INGOT_DUPLICATE);
    ASSERT_TRUE(strstr(e.msg, "'model/b.weight' and 'model/b.bias' would both be named 'model/b'"));
    ingot_convert_tensor ct; /* the plan is unchanged */
    ASSERT_OK(ingot_convert_plan_tensor_at(p, 1, &ct));
    ASSERT_STR(ct.name, "model/b.weight");
    ASSERT_EQ(ingot_convert_plan_rename(p, "^.*$", "", &e), INGOT_BAD_NAME);
    ASSERT_EQ(ingot_convert_plan_rename(p, "([", "x", &e), INGOT_BAD_METADATA);
    /* a drop resolves it */
    ingot_convert_rule rules[] = {{"*.bias", false}};
    ASSERT_OK(ingot_convert_plan_select(p, rules, 1, NULL));
    ASSERT_OK(ingot_convert_plan_rename(p, "\\.(weight|bias)$", "", &e));
    ingot_convert_plan_free(p);
    ingot_file_close(f);
}

TEST(cast_and_quantize_bytes)
{
    ingot_file *f = open_ok(path_in("model.ingot"));
    const char *out = path_in("cq.ingot");
    ingot_convert_plan *p;
    ASSERT_OK(ingot_convert_plan_new(f, &p, NULL));
    ASSERT_OK(ingot_convert_plan_cast(p, INGOT_DTYPE_INVALID, INGOT_DTYPE_BF16, NULL));
    ASSERT_OK(ingot_convert_plan_cast(p, INGOT_DTYPE_F16, INGOT_DTYPE_F8_E4M3, NULL));
    ingot_convert_tensor ct = {0};
    ct.src_index = 1;
    ct.action = INGOT_CONVERT_QUANTIZE;
    ct.dtype = INGOT_DTYPE_Q8_0;
    ASSERT_OK(ingot_convert_plan_set_tensor(p, 1, &ct, NULL));
    ct.src_index = 0;
    ct.dtype = INGOT_DTYPE_Q4_K; /* rows of 64: not whole 256-blocks */
    ingot_error e;
    ASSERT_EQ(ingot_convert_plan_set_tensor(p, 0, &ct, &e), INGOT_BAD_SHAPE);
    ct.src_index = 4;
    ct.dtype = INGOT_DTYPE_Q8_0;
    ASSERT_EQ(ingot_convert_plan_set_tensor(p, 4, &ct, &e), INGOT_UNSUPPORTED); /* I32 */
    ingot_convert_opts o = quiet();
    ingot_convert_result *r;
    ASSERT_OK(ingot_convert_run(p, out, &o, &r, NULL));
    ingot_convert_summary s;
    ingot_convert_result_summary(r, &s);
    ASSERT_U64(s.cast, 3);
    ASSERT_U64(s.quantized, 1);
    /* records: F32 -> BF16 (2 tensors), F16 -> F8_E4M3, F32 -> Q8_0 */
    ASSERT_U64(ingot_convert_result_lossy_count(r), 3);
    ingot_lossy l;
    ASSERT_OK(ingot_convert_result_lossy_at(r, 0, &l));
    ASSERT_EQ(l.kind, INGOT_LOSSY_CAST);
    ASSERT_U64(l.count, 2);
    ASSERT_STR(l.message, "2 F32 tensors cast to BF16 (first 'model/a.weight')");
    ASSERT_OK(ingot_convert_result_lossy_at(r, 2, &l));
    ASSERT_EQ(l.kind, INGOT_LOSSY_QUANTIZED);
    ASSERT_STR(l.message, "1 F32 tensor quantized to Q8_0 (first 'model/b.weight')");
    ingot_convert_result_free(r);
    ingot_file *g = open_ok(out);
    uint16_t got16[128], want16[128];
    tensor_bytes(g, "model/a.weight", got16, sizeof got16);
    ASSERT_OK(ingot_cast(INGOT_DTYPE_F32, w_a, sizeof w_a, INGOT_DTYPE_BF16, want16,
                         sizeof want16, 128, NULL));
    ASSERT_MEM(got16, want16, sizeof got16);
    uint8_t got8[64], want8[64];
    tensor_bytes(g, "model/h", got8, sizeof got8);
    ASSERT_OK(ingot_cast(INGOT_DTYPE_F16, h16, sizeof h16, INGOT_DTYPE_F8_E4M3, want8,
                         sizeof want8, 64, NULL));
    ASSERT_MEM(got8, want8, sizeof got8);
    uint8_t gq[6 * 34], wq[6 * 34];
    tensor_bytes(g, "model/b.weight", gq, sizeof gq);
    ASSERT_OK(ingot_quantize(INGOT_DTYPE_Q8_0, w_b, 192, wq, sizeof wq, NULL));
    ASSERT_MEM(gq, wq, sizeof gq);
    int32_t step[3];
    tensor_bytes(g, "optimizer/step", step, sizeof step);
    ASSERT_EQ(step[2], 9);
    ingot_file_close(g);
    ingot_convert_plan_free(p);
    ingot_file_close(f);
}

/* llama-quantize's choices for an 8-layer model, by the rules in convert.h: use_more_bits(i, 8)
 * holds for i = 0, 3, 6, 7 (i < 1, i >= 7, (i - 1) % 3 == 2). */
TEST(quantize_rules_q4_k_m)
{
    const char *src = path_in("llama8.ingot");
    ingot_writer_opts wo = {0};
    wo.no_fsync = true;
    ingot_writer *w;
    ASSERT_OK(ingot_writer_new(&wo, &w, NULL));
    ASSERT_OK(ingot_writer_set_string(w, "general.architecture", "llama"));
    uint64_t big[2] = {2, 256}, odd[2] = {2, 96}, tiny[2] = {2, 40}, vec[1] = {256};
    static float zeros[2 * 256];
    char name[64];
    ASSERT_OK(ingot_writer_add_tensor(w, "token_embd.weight", INGOT_DTYPE_F32, 2, big, NULL, zeros,
                                      NULL));
    for (int i = 0; i < 8; i++) {
        snprintf(name, sizeof name, "blk.%d.attn_v.weight", i);
        ASSERT_OK(ingot_writer_add_tensor(w, name, INGOT_DTYPE_F32, 2, big, NULL, zeros, NULL));
        snprintf(name, sizeof name, "blk.%d.ffn_down.weight", i);
        ASSERT_OK(ingot_writer_add_tensor(w, name, INGOT_DTYPE_F16, 2, big, NULL, zeros, NULL));
        snprintf(name, sizeof name, "blk.%d.attn_norm.weight", i);
        ASSERT_OK(ingot_writer_add_tensor(w, name, INGOT_DTYPE_F32, 1, vec, NULL, zeros, NULL));
    }
    ASSERT_OK(ingot_writer_add_tensor(w, "blk.0.attn_q.weight", INGOT_DTYPE_F32, 2, odd, NULL,
                                      zeros, NULL));
    ASSERT_OK(ingot_writer_add_tensor(w, "blk.0.attn_k.weight", INGOT_DTYPE_F32, 2, tiny, NULL,
                                      zeros, NULL));
    ASSERT_OK(
        ingot_writer_add_tensor(w, "output.weight", INGOT_DTYPE_F32, 2, big, NULL, zeros, NULL));
    ASSERT_OK(ingot_writer_save(w, src, NULL));
    ingot_writer_free(w);
    ingot_file *f = open_ok(src);
    ingot_convert_plan *p;
    ASSERT_OK(ingot_convert_plan_new(f, &p, NULL));
    ASSERT_OK(ingot_convert_plan_quantize(p, "Q4_K_M", NULL));
    for (uint64_t i = 0; i < ingot_convert_plan_tensor_count(p); i++) {
        ingot_convert_tensor ct;
        ASSERT_OK(ingot_convert_plan_tensor_at(p, i, &ct));
        int layer = -1;
        sscanf(ct.name, "blk.%d.", &layer);
        bool more = layer == 0 || layer == 3 || layer == 6 || layer == 7;
        ingot_dtype want;
        if (strstr(ct.name, "norm")) want = INGOT_DTYPE_F32; /* kept */
        else if (strstr(ct.name, "attn_v") || strstr(ct.name, "ffn_down"))
            want = more ? INGOT_DTYPE_Q6_K : INGOT_DTYPE_Q4_K;
        else if (!strcmp(ct.name, "output.weight")) want = INGOT_DTYPE_Q6_K;
        else if (!strcmp(ct.name, "blk.0.attn_q.weight")) want = INGOT_DTYPE_Q5_0; /* 96 */
        else if (!strcmp(ct.name, "blk.0.attn_k.weight")) want = INGOT_DTYPE_F16;  /* 40 */
        else want = INGOT_DTYPE_Q4_K; /* token_embd: there is an output tensor */
        CHECK(ct.dtype == want, "%s: %s, want %s", ct.name, ingot_dtype_name(ct.dtype),
              ingot_dtype_name(want));
    }
    uint64_t nm = ingot_convert_plan_meta_count(p);
    ASSERT_U64(nm, 3);
    const char *key;
    ASSERT_OK(ingot_convert_plan_meta_at(p, 2, &key, NULL, NULL));
    ASSERT_STR(key, "general.file_type");
    ingot_error e;
    ASSERT_EQ(ingot_convert_plan_quantize(p, "Q3_K_M", &e), INGOT_UNSUPPORTED);
    /* and written: every quantized tensor decodes (zeros stay zeros) */
    ingot_convert_opts o = quiet();
    ASSERT_OK(ingot_convert_run(p, path_in("llama8.gguf"), &o, NULL, NULL));
    ingot_file *g = open_ok(path_in("llama8.gguf"));
    uint32_t ft;
    ASSERT_OK(ingot_file_meta_get_u32(g, "general.file_type", &ft));
    ASSERT_EQ(ft, 15);
    ingot_tensor_info t;
    ASSERT_OK(ingot_file_tensor_find(g, "blk.3.attn_v.weight", &t));
    ASSERT_EQ(t.dtype, INGOT_DTYPE_Q6_K);
    float y[512];
    ASSERT_OK(ingot_file_tensor_dequantize(g, t.index, 0, 512, y, NULL));
    for (int i = 0; i < 512; i++) ASSERT_TRUE(y[i] == 0);
    ingot_file_close(g);
    ingot_convert_plan_free(p);
    ingot_file_close(f);
}

TEST(permute_rows)
{
    const char *src = path_in("qk.ingot");
    float rows[8][2];
    for (int r = 0; r < 8; r++) rows[r][0] = (float)r, rows[r][1] = (float)(10 * r);
    ingot_writer_opts wo = {0};
    wo.no_fsync = true;
    ingot_writer *w;
    ASSERT_OK(ingot_writer_new(&wo, &w, NULL));
    uint64_t sh[2] = {8, 2};
    ASSERT_OK(ingot_writer_add_tensor(w, "q", INGOT_DTYPE_F32, 2, sh, NULL, rows, NULL));
    ASSERT_OK(ingot_writer_save(w, src, NULL));
    ingot_writer_free(w);
    ingot_file *f = open_ok(src);
    ingot_convert_plan *p;
    ASSERT_OK(ingot_convert_plan_new(f, &p, NULL));
    ingot_convert_tensor ct = {0};
    ct.src_index = 0;
    ct.dtype = INGOT_DTYPE_F32;
    ct.permute_heads = 2;
    ASSERT_OK(ingot_convert_plan_set_tensor(p, 0, &ct, NULL));
    ingot_convert_opts o = quiet();
    ASSERT_OK(ingot_convert_run(p, path_in("qk_gguf.ingot"), &o, NULL, NULL));
    ingot_file *g = open_ok(path_in("qk_gguf.ingot"));
    float got[8][2];
    tensor_bytes(g, "q", got, sizeof got);
    /* W.reshape(2, 2, 2, 2).swapaxes(1, 2): row (h, a, b) <- row (h, b, a) */
    static const int want[8] = {0, 2, 1, 3, 4, 6, 5, 7};
    for (int r = 0; r < 8; r++) {
        CHECK(got[r][0] == (float)want[r] && got[r][1] == (float)(10 * want[r]), "row %d: %g", r,
              got[r][0]);
    }
    /* the inverse brings the rows back */
    ingot_convert_plan *q;
    ASSERT_OK(ingot_convert_plan_new(g, &q, NULL));
    ct.permute_inverse = true;
    ASSERT_OK(ingot_convert_plan_set_tensor(q, 0, &ct, NULL));
    ASSERT_OK(ingot_convert_run(q, path_in("qk_back.ingot"), &o, NULL, NULL));
    ingot_file *h = open_ok(path_in("qk_back.ingot"));
    tensor_bytes(h, "q", got, sizeof got);
    ASSERT_MEM(got, rows, sizeof got);
    ct.permute_heads = 3; /* 8 rows do not split into 6 */
    ingot_error e;
    ASSERT_EQ(ingot_convert_plan_set_tensor(q, 0, &ct, &e), INGOT_BAD_SHAPE);
    ingot_file_close(h);
    ingot_convert_plan_free(q);
    ingot_file_close(g);
    ingot_convert_plan_free(p);
    ingot_file_close(f);
}

TEST(metadata_edits_in_place)
{
    const char *path = path_in("edit.ingot");
    make_model(path);
    ingot_file *f = open_ok(path);
    ingot_convert_plan *p;
    ASSERT_OK(ingot_convert_plan_new(f, &p, NULL));
    ingot_error e;
    ASSERT_OK(ingot_convert_plan_meta_set_text(p, "layers:u32=8", &e));
    ASSERT_OK(ingot_convert_plan_meta_set_text(p, "tags:string[]=a,b,c", &e));
    ASSERT_OK(ingot_convert_plan_meta_set_text(p, "ids:i64[]=1,-2,9007199254740993", &e));
    ASSERT_OK(ingot_convert_plan_meta_set_text(p, "blob:bytes=00ff", &e));
    ASSERT_OK(ingot_convert_plan_meta_set_text(p, "a:b=c", &e)); /* unknown type: part of the key */
    ASSERT_OK(ingot_convert_plan_meta_delete(p, "lr", &e));
    ASSERT_OK(ingot_convert_plan_meta_rename(p, "name", "general.name", &e));
    ASSERT_EQ(ingot_convert_plan_meta_set_text(p, "n:u8=300", &e), INGOT_BAD_METADATA);
    ASSERT_EQ(ingot_convert_plan_meta_set_text(p, "n:u8[]=1,x", &e), INGOT_BAD_METADATA);
    ASSERT_EQ(ingot_convert_plan_meta_set_text(p, "n:i32", &e), INGOT_BAD_METADATA);
    ASSERT_EQ(ingot_convert_plan_meta_delete(p, "lr", &e), INGOT_NOT_FOUND);
    ASSERT_EQ(ingot_convert_plan_meta_rename(p, "layers", "general.name", &e), INGOT_DUPLICATE);
    ingot_convert_opts o = quiet();
    o.format = ingot_file_format(f);
    ASSERT_OK(ingot_convert_run(p, path, &o, NULL, NULL)); /* over the mapped source */
    ingot_convert_plan_free(p);
    ingot_file_close(f);
    ingot_file *g = open_ok(path);
    uint32_t layers;
    ASSERT_OK(ingot_file_meta_get_u32(g, "layers", &layers));
    ASSERT_EQ(layers, 8);
    const char *s;
    size_t n;
    ASSERT_OK(ingot_file_meta_get_string(g, "general.name", &s, &n));
    ASSERT_TRUE(n == 4 && !memcmp(s, "demo", 4));
    ingot_meta_info m;
    ASSERT_EQ(ingot_file_meta_find(g, "lr", &m), INGOT_NOT_FOUND);
    ASSERT_OK(ingot_file_meta_find(g, "ids", &m));
    ASSERT_TRUE(m.is_array && m.type == INGOT_META_I64 && m.count == 3);
    int64_t ids[3];
    ASSERT_OK(ingot_file_meta_array_read(g, m.index, INGOT_META_I64, 0, 3, ids));
    ASSERT_TRUE(ids[1] == -2 && ids[2] == 9007199254740993ll);
    ASSERT_OK(ingot_file_meta_find(g, "tags", &m));
    ASSERT_TRUE(m.is_array && m.type == INGOT_META_STRING && m.count == 3);
    ASSERT_OK(ingot_file_meta_find(g, "blob", &m));
    ASSERT_TRUE(m.type == INGOT_META_BYTES && m.count == 2);
    ASSERT_OK(ingot_file_meta_find(g, "a:b", &m));
    float back[128];
    tensor_bytes(g, "model/a.weight", back, sizeof back);
    ASSERT_MEM(back, w_a, sizeof back);
    ingot_file_close(g);
}

static bool cancel_now(void *ctx)
{
    int *calls = ctx;
    return ++*calls > 1;
}

TEST(cancel_leaves_target)
{
    make_model(path_in("model.ingot"));
    ingot_file *f = open_ok(path_in("model.ingot"));
    const char *out = path_in("cancel.ingot");
    FILE *o = fopen(out, "w");
    fputs("old", o);
    fclose(o);
    ingot_convert_plan *p;
    ASSERT_OK(ingot_convert_plan_new(f, &p, NULL));
    ASSERT_OK(ingot_convert_plan_cast(p, INGOT_DTYPE_INVALID, INGOT_DTYPE_F16, NULL));
    int calls = 0;
    ingot_convert_opts op = quiet();
    op.cancel = cancel_now;
    op.cancel_ctx = &calls;
    ingot_error e;
    ASSERT_EQ(ingot_convert_run(p, out, &op, NULL, &e), INGOT_CANCELLED);
    char buf[8] = {0};
    o = fopen(out, "r");
    ASSERT_TRUE(fread(buf, 1, sizeof buf, o) == 3 && !strcmp(buf, "old"));
    fclose(o);
    DIR *d = opendir(dir);
    struct dirent *de;
    while ((de = readdir(d)))
        CHECK(!strstr(de->d_name, "ingot-tmp"), "temporary left: %s", de->d_name);
    closedir(d);
    ingot_convert_plan_free(p);
    ingot_file_close(f);
}

/* The dequantize fallback and its record; KEEP of what the target refuses fails naming it. */
TEST(dequantize_fallback)
{
    const char *src = path_in("q.ingot");
    ingot_writer_opts wo = {0};
    wo.no_fsync = true;
    ingot_writer *w;
    ASSERT_OK(ingot_writer_new(&wo, &w, NULL));
    float x[64];
    for (int i = 0; i < 64; i++) x[i] = (float)i - 20;
    uint8_t q[68];
    ASSERT_OK(ingot_quantize(INGOT_DTYPE_Q8_0, x, 64, q, sizeof q, NULL));
    uint64_t sh[2] = {2, 32};
    ASSERT_OK(ingot_writer_add_tensor(w, "w", INGOT_DTYPE_Q8_0, 2, sh, NULL, q, NULL));
    ASSERT_OK(ingot_writer_save(w, src, NULL));
    ingot_writer_free(w);
    ingot_file *f = open_ok(src);
    ingot_convert_plan *p;
    ASSERT_OK(ingot_convert_plan_new(f, &p, NULL));
    ingot_convert_opts o = quiet();
    ingot_convert_result *r;
    ingot_error e;
    ASSERT_EQ(ingot_convert_run(p, path_in("q.safetensors"), &o, &r, &e), INGOT_UNSUPPORTED);
    ingot_convert_summary s;
    ingot_convert_result_summary(r, &s);
    ASSERT_EQ(s.failed_stage, INGOT_CONVERT_STAGE_TARGET);
    ASSERT_U64(s.failed_tensor, 0);
    ingot_convert_result_free(r);
    o.format = "safetensors";
    ASSERT_TRUE(ingot_convert_target_accepts(p, &o, 0, INGOT_DTYPE_F32));
    ASSERT_TRUE(!ingot_convert_target_accepts(p, &o, 0, INGOT_DTYPE_Q8_0));
    o.dequantize = INGOT_DTYPE_F32;
    ASSERT_OK(ingot_convert_run(p, path_in("q.safetensors"), &o, &r, NULL));
    ingot_lossy l;
    ASSERT_OK(ingot_convert_result_lossy_at(r, 0, &l));
    ASSERT_EQ(l.kind, INGOT_LOSSY_DEQUANTIZED);
    ASSERT_STR(l.message,
               "1 Q8_0 tensor dequantized to F32 (the target cannot store Q8_0; first 'w')");
    ingot_convert_result_free(r);
    ingot_file *g = open_ok(path_in("q.safetensors"));
    float y[64], want[64];
    tensor_bytes(g, "w", y, sizeof y);
    ASSERT_OK(ingot_dequantize(INGOT_DTYPE_Q8_0, q, sizeof q, want, 64, NULL));
    ASSERT_MEM(y, want, sizeof y);
    ingot_file_close(g);
    ingot_convert_plan_free(p);
    ingot_file_close(f);
}

int main(int argc, char **argv)
{
    snprintf(dir, sizeof dir, "%s/convert_api", INGOT_BINARY_DIR);
    mkdir(dir, 0755);
    static const test_case cases[] = {T(select_rename_keep), T(rename_collision_names_both),
                                      T(cast_and_quantize_bytes), T(quantize_rules_q4_k_m),
                                      T(permute_rows), T(metadata_edits_in_place),
                                      T(cancel_leaves_target), T(dequantize_fallback)};
    return harness_run(cases, sizeof cases / sizeof *cases, argc, argv);
}
