/*
 * fuzz_tenzor.c - libFuzzer target for the `.tenzor` reader and writer: opens the input (forced
 * and detected), calls every getter (tensors by index, by name and by #hash; metadata by index and
 * key, arrays element-wise), checks each view lies inside the input, then rewrites the file through
 * the tenzor writer and checks the rewrite is a fixpoint: reading it back gives the same tensors,
 * and rewriting that gives the same bytes. The same source runs in plain builds (replay_main.c).
 */
#include "fuzz_common.h"

static void copy_meta(ingot_writer *w, const ingot_file *f, const ingot_meta_info *m)
{
    char *key = malloc(m->key_len + 1);
    FZ_CHECK(key);
    memcpy(key, m->key, m->key_len);
    key[m->key_len] = 0;
    ingot_status st;
    if (!m->is_array) {
        switch (m->type) {
        case INGOT_META_U64: st = ingot_writer_set_u64(w, key, m->v.u); break;
        case INGOT_META_I64: st = ingot_writer_set_i64(w, key, m->v.i); break;
        case INGOT_META_F64: st = ingot_writer_set_f64(w, key, m->v.f); break;
        case INGOT_META_BOOL: st = ingot_writer_set_bool(w, key, m->v.b); break;
        case INGOT_META_STRING:
            FZ_CHECK(((const char *)m->data)[m->count] == 0);
            st = ingot_writer_set_stringn(w, key, m->data, (size_t)m->count);
            break;
        default: FZ_CHECK(!"unexpected scalar type"); return;
        }
    } else if (m->type == INGOT_META_STRING) {
        const void **el = calloc(m->count + 1, sizeof *el);
        size_t *lens = calloc(m->count + 1, sizeof *lens);
        FZ_CHECK(el && lens);
        for (uint64_t k = 0; k < m->count; k++) {
            const char *s;
            FZ_ST(ingot_file_meta_array_string(f, m->index, k, &s, &lens[k]), INGOT_OK);
            el[k] = s;
        }
        const char *s;
        size_t len;
        FZ_ST(ingot_file_meta_array_string(f, m->index, m->count, &s, &len), INGOT_RANGE);
        st = ingot_writer_set_string_array(w, key, m->type, el, lens, m->count);
        free(el);
        free(lens);
    } else {
        uint32_t esz = ingot_meta_type_size(m->type);
        FZ_CHECK(esz == 1 || esz == 8);
        uint8_t *buf = malloc(m->count * esz + 1), one[8];
        FZ_CHECK(buf);
        FZ_ST(ingot_file_meta_array_read(f, m->index, m->type, 0, m->count, buf), INGOT_OK);
        FZ_ST(ingot_file_meta_array_read(f, m->index, m->type, m->count, 1, one), INGOT_RANGE);
        FZ_ST(ingot_file_meta_array_read(f, m->index, INGOT_META_U8 + (m->type == INGOT_META_U8),
                                         0, 0, one),
              INGOT_WRONG_TYPE);
        if (m->type == INGOT_META_BOOL)
            for (uint64_t k = 0; k < m->count; k++) FZ_CHECK(buf[k] <= 1);
        st = ingot_writer_set_array(w, key, m->type, buf, m->count);
        free(buf);
    }
    FZ_ST(st, INGOT_OK);
    free(key);
}

/* Rewrites f as tenzor in memory (tensors pushed in index order). */
static void rewrite(const ingot_file *f, void **out, size_t *n)
{
    ingot_writer_opts wo = {.format = "tenzor"};
    ingot_writer *w;
    ingot_error e;
    FZ_ST(ingot_writer_new(&wo, &w, &e), INGOT_OK);
    for (uint64_t i = 0; i < ingot_file_meta_count(f); i++) {
        ingot_meta_info m, q;
        FZ_ST(ingot_file_meta_at(f, i, &m), INGOT_OK);
        FZ_ST(ingot_file_meta_find(f, m.key, &q), INGOT_OK);
        FZ_CHECK(q.index == i);
        copy_meta(w, f, &m);
    }
    uint64_t nt = ingot_file_tensor_count(f);
    for (uint64_t i = 0; i < nt; i++) {
        ingot_tensor_info t;
        FZ_ST(ingot_file_tensor_at(f, i, &t), INGOT_OK);
        FZ_ST(ingot_writer_add_tensor(w, t.name, t.dtype, t.rank, t.shape, NULL, NULL, &e),
              INGOT_OK);
    }
    ingot_status st = ingot_writer_begin_mem(w, &e);
    if (st != INGOT_OK) fprintf(stderr, "begin: %s %s\n", ingot_status_name(st), e.msg);
    FZ_ST(st, INGOT_OK);
    for (uint64_t i = 0; i < nt; i++) {
        ingot_tensor_info t;
        FZ_ST(ingot_file_tensor_at(f, i, &t), INGOT_OK);
        FZ_ST(ingot_writer_write(w, t.data, (size_t)t.nbytes, &e), INGOT_OK);
    }
    FZ_ST(ingot_writer_commit_mem(w, out, n, &e), INGOT_OK);
    ingot_writer_free(w);
}

static void exercise(const ingot_file *f, const uint8_t *data, size_t size)
{
    uint64_t n = ingot_file_tensor_count(f);
    FZ_CHECK(n == fz_ld32(data + 16));
    ingot_status vwant = INGOT_OK; /* what verify must say: the first bad BOOL, if any */
    for (uint64_t i = 0; i < n; i++) {
        ingot_tensor_info t, u;
        FZ_ST(ingot_file_tensor_at(f, i, &t), INGOT_OK);
        FZ_CHECK(t.index == i && t.name && t.name_len && strlen(t.name) == t.name_len);
        FZ_CHECK(t.rank <= 5 && ingot_dtype_valid(t.dtype));
        FZ_CHECK(t.data == data + t.offset && fz_inside(t.data, t.nbytes, data, size));
        uint64_t hash = fz_ld64(data + fz_ld64(data + 24) + 48 * i);
        char hx[18];
        snprintf(hx, sizeof hx, "#%016llx", (unsigned long long)hash);
        FZ_ST(ingot_file_tensor_find(f, t.name, &u), INGOT_OK);
        FZ_CHECK(u.index == i);
        ingot_status hs = ingot_file_tensor_find(f, hx, &u);
        FZ_CHECK(hs == INGOT_OK ? u.index == i : strcmp(t.name, hx) != 0);
        if (t.nbytes) {
            uint8_t b;
            const uint8_t *last = data + t.offset + t.nbytes - 1;
            ingot_status want = fz_values_status(t.dtype, last, 1); /* BOOL: 0 or 1 */
            FZ_ST(ingot_file_tensor_read(f, i, t.nbytes - 1, &b, 1, NULL), want);
            if (want == INGOT_OK) FZ_CHECK(b == *last);
        }
        if (vwant == INGOT_OK) vwant = fz_values_status(t.dtype, t.data, t.nbytes);
    }
    FZ_ST(ingot_file_verify(f, 1, NULL), vwant);

    void *b1, *b2;
    size_t n1, n2;
    rewrite(f, &b1, &n1);
    ingot_file *g;
    ingot_error e;
    ingot_status st = ingot_file_open_buffer(b1, n1, NULL, &g, &e);
    if (st != INGOT_OK) fprintf(stderr, "reopen: %s %s\n", ingot_status_name(st), e.msg);
    FZ_ST(st, INGOT_OK);
    FZ_CHECK(ingot_file_tensor_count(g) == n);
    for (uint64_t i = 0; i < n; i++) {
        ingot_tensor_info t, u;
        FZ_ST(ingot_file_tensor_at(f, i, &t), INGOT_OK);
        FZ_ST(ingot_file_tensor_at(g, i, &u), INGOT_OK);
        FZ_CHECK(strcmp(t.name, u.name) == 0 && t.dtype == u.dtype && t.rank == u.rank &&
                 t.nbytes == u.nbytes && memcmp(t.shape, u.shape, sizeof t.shape) == 0);
        FZ_CHECK(t.nbytes == 0 || memcmp(t.data, u.data, (size_t)t.nbytes) == 0);
    }
    rewrite(g, &b2, &n2);
    FZ_CHECK(n1 == n2 && memcmp(b1, b2, n1) == 0);
    ingot_file_close(g);
    ingot_writer_free_mem(NULL, b1, n1);
    ingot_writer_free_mem(NULL, b2, n2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ingot_open_opts force = {.format = "tenzor"};
    ingot_file *f = NULL, *g = NULL;
    ingot_error e, eg;
    fz_err_reset(&e);
    fz_err_reset(&eg);
    ingot_status st = ingot_file_open_buffer(data, size, &force, &f, &e);
    fz_err_check(&e, st);
    FZ_CHECK((st == INGOT_OK) == (f != NULL));
    ingot_status sg = ingot_file_open_buffer(data, size, NULL, &g, &eg);
    /* Other adapters may claim the input when detecting: only ours is held to the contract. */
    if (size >= 8 && memcmp(data, "TENZOR\0\0", 8) == 0) fz_err_check(&eg, sg);
    if (size >= 8 && memcmp(data, "TENZOR\0\0", 8) == 0) FZ_ST(sg, st);
    if (st == INGOT_OK) exercise(f, data, size);
    ingot_file_close(g);
    ingot_file_close(f);
    return 0;
}
