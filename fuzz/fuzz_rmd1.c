/*
 * fuzz_rmd1.c - libFuzzer target for the RMD1 reader and writer: opens the input as RMD1 (forced
 * and detected), calls every getter, checks each tensor view lies inside the input and matches
 * its layer record, and then rewrites the file through the RMD1 writer from its metadata and
 * tensors (streamed in file order, as `ingot convert` does): every accepted input must come back
 * byte for byte. The same source runs in plain builds through replay_main.c.
 */
#include "fuzz_common.h"

static ingot_status copy_meta(ingot_writer *w, const ingot_file *f, const ingot_meta_info *m)
{
    char key[64];
    FZ_CHECK(m->key_len < sizeof key);
    memcpy(key, m->key, m->key_len);
    key[m->key_len] = 0;
    if (!m->is_array) {
        switch (m->type) {
        case INGOT_META_U8: return ingot_writer_set_u8(w, key, (uint8_t)m->v.u);
        case INGOT_META_U16: return ingot_writer_set_u16(w, key, (uint16_t)m->v.u);
        case INGOT_META_U32: return ingot_writer_set_u32(w, key, (uint32_t)m->v.u);
        case INGOT_META_BYTES: return ingot_writer_set_bytes(w, key, m->data, (size_t)m->count);
        default: FZ_CHECK(!"unexpected scalar type"); return INGOT_BAD_TYPE;
        }
    }
    if (m->type == INGOT_META_STRING) {
        const void **el = calloc(m->count + 1, sizeof *el);
        size_t *lens = calloc(m->count + 1, sizeof *lens);
        FZ_CHECK(el && lens);
        for (uint64_t k = 0; k < m->count; k++) {
            const char *s;
            FZ_ST(ingot_file_meta_array_string(f, m->index, k, &s, &lens[k]), INGOT_OK);
            el[k] = s;
        }
        ingot_status st = ingot_writer_set_string_array(w, key, m->type, el, lens, m->count);
        free(el);
        free(lens);
        return st;
    }
    uint32_t esz = ingot_meta_type_size(m->type);
    FZ_CHECK(esz);
    uint8_t *buf = malloc(m->count * esz + 1);
    FZ_CHECK(buf);
    FZ_ST(ingot_file_meta_array_read(f, m->index, m->type, 0, m->count, buf), INGOT_OK);
    ingot_status st = ingot_writer_set_array(w, key, m->type, buf, m->count);
    free(buf);
    return st;
}

static void exercise(const ingot_file *f, const uint8_t *data, size_t size)
{
    FZ_CHECK(strcmp(ingot_file_format(f), "rmd1") == 0);
    uint32_t L = fz_ld32(data + 8), es = data[6] ? 8 : 4;
    uint64_t n = ingot_file_tensor_count(f);
    FZ_CHECK(n == 2 * (uint64_t)L);
    uint32_t lc;
    FZ_ST(ingot_file_meta_get_u32(f, "mlp.layer_count", &lc), INGOT_OK);
    FZ_CHECK(lc == L);
    uint64_t bias_base = 20 + 20 * (uint64_t)L + (uint64_t)fz_ld32(data + 12) * es;
    for (uint64_t i = 0; i < n; i++) {
        ingot_tensor_info t, u;
        FZ_ST(ingot_file_tensor_at(f, i, &t), INGOT_OK);
        FZ_CHECK(t.index == i && t.name && strlen(t.name) == t.name_len);
        FZ_CHECK(t.dtype == (es == 8 ? INGOT_DTYPE_F64 : INGOT_DTYPE_F32));
        FZ_CHECK(fz_inside(t.data, t.nbytes, data, size));
        FZ_CHECK(t.data == data + t.offset && t.nbytes == t.nelem * es);
        FZ_CHECK(((uintptr_t)t.data % es != 0) == ((t.flags & INGOT_TENSOR_UNALIGNED) != 0));
        bool bias = t.offset >= bias_base;
        FZ_CHECK(t.rank == (bias ? 1u : 2u));
        /* the record of its layer says the same */
        unsigned k = 0;
        FZ_CHECK(sscanf(t.name, "layers.%u.", &k) == 1 && k < L);
        const uint8_t *r = data + 20 + 20 * (size_t)k;
        FZ_CHECK(t.shape[0] == fz_ld32(r + 4));
        if (!bias) FZ_CHECK(t.shape[1] == fz_ld32(r));
        FZ_CHECK(t.offset == (bias ? bias_base + (uint64_t)fz_ld32(r + 12) * es
                                   : 20 + 20 * (uint64_t)L + (uint64_t)fz_ld32(r + 8) * es));
        FZ_ST(ingot_file_tensor_find(f, t.name, &u), INGOT_OK);
        FZ_CHECK(u.index == i && u.offset == t.offset);
        uint8_t b;
        FZ_ST(ingot_file_tensor_read(f, i, t.nbytes - 1, &b, 1, NULL), INGOT_OK);
        FZ_CHECK(b == data[t.offset + t.nbytes - 1]);
    }
    ingot_tensor_info t;
    FZ_ST(ingot_file_tensor_at(f, n, &t), INGOT_RANGE);
    FZ_ST(ingot_file_tensor_find(f, "layers.4294967296.bias", &t), INGOT_NOT_FOUND);
    FZ_ST(ingot_file_verify(f, 1, NULL), INGOT_OK);

    /* every metadata entry by index and key; arrays element by element */
    for (uint64_t i = 0; i < ingot_file_meta_count(f); i++) {
        ingot_meta_info m, q;
        FZ_ST(ingot_file_meta_at(f, i, &m), INGOT_OK);
        FZ_ST(ingot_file_meta_find(f, m.key, &q), INGOT_OK);
        FZ_CHECK(q.index == i && q.type == m.type && q.count == m.count);
        if (m.is_array && m.type != INGOT_META_STRING) {
            uint8_t one[8];
            FZ_ST(ingot_file_meta_array_read(f, i, m.type, m.count, 1, one), INGOT_RANGE);
            FZ_ST(ingot_file_meta_array_read(f, i, m.type, 1, UINT64_MAX, one), INGOT_RANGE);
        }
    }

    /* rewrite: byte-identical */
    ingot_writer_opts wo = {.format = "rmd1"};
    ingot_writer *w;
    ingot_error e;
    FZ_ST(ingot_writer_new(&wo, &w, &e), INGOT_OK);
    for (uint64_t i = 0; i < ingot_file_meta_count(f); i++) {
        ingot_meta_info m;
        FZ_ST(ingot_file_meta_at(f, i, &m), INGOT_OK);
        FZ_ST(copy_meta(w, f, &m), INGOT_OK);
    }
    for (uint64_t i = 0; i < n; i++) {
        FZ_ST(ingot_file_tensor_at(f, i, &t), INGOT_OK);
        FZ_ST(ingot_writer_add_tensor(w, t.name, t.dtype, t.rank, t.shape, NULL, NULL, &e),
              INGOT_OK);
    }
    ingot_status st = ingot_writer_begin_mem(w, &e);
    if (st != INGOT_OK) fprintf(stderr, "begin: %s %s\n", ingot_status_name(st), e.msg);
    FZ_ST(st, INGOT_OK);
    for (uint64_t i = 0; i < n; i++) {
        FZ_ST(ingot_file_tensor_at(f, i, &t), INGOT_OK);
        FZ_ST(ingot_writer_write(w, t.data, (size_t)t.nbytes, &e), INGOT_OK);
    }
    void *out = NULL;
    size_t on = 0;
    FZ_ST(ingot_writer_commit_mem(w, &out, &on, &e), INGOT_OK);
    FZ_CHECK(on == size && memcmp(out, data, size) == 0);
    ingot_writer_free_mem(NULL, out, on);
    ingot_writer_free(w);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ingot_open_opts force = {.format = "rmd1"};
    ingot_file *f = NULL, *g = NULL;
    ingot_error e, eg;
    fz_err_reset(&e);
    fz_err_reset(&eg);
    ingot_status st = ingot_file_open_buffer(data, size, &force, &f, &e);
    fz_err_check(&e, st);
    FZ_CHECK((st == INGOT_OK) == (f != NULL));
    if (st != INGOT_OK) FZ_CHECK(e.offset == INGOT_NO_OFFSET || e.offset <= size);
    ingot_status sg = ingot_file_open_buffer(data, size, NULL, &g, &eg);
    /* Other adapters may claim the input when detecting: only ours is held to the contract. */
    if (size >= 4 && memcmp(data, "RMD1", 4) == 0) fz_err_check(&eg, sg);
    if (sg == INGOT_OK && strcmp(ingot_file_format(g), "rmd1") == 0) FZ_ST(st, INGOT_OK);
    if (st == INGOT_OK) exercise(f, data, size);
    ingot_file_close(g);
    ingot_file_close(f);
    return 0;
}
