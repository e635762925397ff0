/*
 * fuzz_llama2c.c - libFuzzer target for the llama2.c checkpoint reader: opens the input as
 * llama2c (forced and detected), and for an accepted input checks every tensor lies inside the
 * input, the arrays tile it exactly from the end of the header to the last byte (the format has
 * no gaps and nothing after the last array), every tensor is found by its own name, and every
 * metadata entry is readable by index and key. The same source runs in plain builds through
 * replay_main.c.
 */
#include "fuzz_common.h"

static void exercise(const ingot_file *f, const uint8_t *data, size_t size)
{
    FZ_CHECK(strcmp(ingot_file_format(f), "llama2c") == 0);
    uint64_t n = ingot_file_tensor_count(f), covered = 0;
    uint32_t version;
    FZ_ST(ingot_file_meta_get_u32(f, "llama2c.version", &version), INGOT_OK);
    FZ_CHECK(version <= 2);
    uint64_t start = version == 0 ? 28 : 256;
    FZ_CHECK(n >= 1);
    for (uint64_t i = 0; i < n; i++) {
        ingot_tensor_info t, u;
        FZ_ST(ingot_file_tensor_at(f, i, &t), INGOT_OK);
        FZ_CHECK(t.index == i && t.name && strlen(t.name) == t.name_len);
        FZ_CHECK(t.dtype == INGOT_DTYPE_F32 || (version == 2 && t.dtype == INGOT_DTYPE_I8));
        FZ_CHECK(t.nbytes > 0 && fz_inside(t.data, t.nbytes, data, size));
        FZ_CHECK(t.data == data + t.offset);
        /* file order, back to back */
        FZ_CHECK(t.offset == start + covered);
        covered += t.nbytes;
        FZ_ST(ingot_file_tensor_find(f, t.name, &u), INGOT_OK);
        FZ_CHECK(u.index == i && u.offset == t.offset && u.nbytes == t.nbytes);
        uint8_t b;
        FZ_ST(ingot_file_tensor_read(f, i, t.nbytes - 1, &b, 1, NULL), INGOT_OK);
        FZ_CHECK(b == data[t.offset + t.nbytes - 1]);
    }
    FZ_CHECK(start + covered == size);
    ingot_tensor_info t;
    FZ_ST(ingot_file_tensor_at(f, n, &t), INGOT_RANGE);
    FZ_ST(ingot_file_tensor_find(f, "blk.4294967296.attn_q.weight", &t), INGOT_NOT_FOUND);
    FZ_ST(ingot_file_tensor_find(f, "blk.0.attn_q.weight_scale_scale", &t), INGOT_NOT_FOUND);
    FZ_ST(ingot_file_verify(f, 1, NULL), INGOT_OK);
    for (uint64_t i = 0; i < ingot_file_meta_count(f); i++) {
        ingot_meta_info m, q;
        FZ_ST(ingot_file_meta_at(f, i, &m), INGOT_OK);
        FZ_ST(ingot_file_meta_find(f, m.key, &q), INGOT_OK);
        FZ_CHECK(q.index == i && q.type == m.type && !m.is_array);
    }
    uint32_t L, dim;
    FZ_ST(ingot_file_meta_get_u32(f, "llama.block_count", &L), INGOT_OK);
    FZ_ST(ingot_file_meta_get_u32(f, "llama.embedding_length", &dim), INGOT_OK);
    FZ_CHECK(L >= 1 && dim >= 1);
    char nm[48];
    snprintf(nm, sizeof nm, "blk.%u.attn_q.weight", L - 1);
    FZ_ST(ingot_file_tensor_find(f, nm, &t), INGOT_OK);
    snprintf(nm, sizeof nm, "blk.%u.attn_q.weight", L);
    FZ_ST(ingot_file_tensor_find(f, nm, &t), INGOT_NOT_FOUND);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ingot_open_opts force = {.format = "llama2c"};
    ingot_file *f = NULL, *g = NULL;
    ingot_error e, eg;
    fz_err_reset(&e);
    fz_err_reset(&eg);
    ingot_status st = ingot_file_open_buffer(data, size, &force, &f, &e);
    fz_err_check(&e, st);
    FZ_CHECK((st == INGOT_OK) == (f != NULL));
    if (st != INGOT_OK) FZ_CHECK(e.offset == INGOT_NO_OFFSET || e.offset <= size);
    ingot_status sg = ingot_file_open_buffer(data, size, NULL, &g, &eg);
    if (sg == INGOT_OK && strcmp(ingot_file_format(g), "llama2c") == 0) FZ_ST(st, INGOT_OK);
    /* Other adapters may claim the input when detecting: only ours is held to the contract. */
    if (size >= 4 && fz_ld32(data) == 0x616b3432u) fz_err_check(&eg, sg);
    if (st == INGOT_OK) exercise(f, data, size);
    ingot_file_close(g);
    ingot_file_close(f);
    return 0;
}
