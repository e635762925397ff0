/*
 * fuzz_burnpack.c - libFuzzer target for the Burnpack reader and writer: open an image from a
 * buffer (format forced and detected), call every getter (tensors by index and name, first and
 * last data byte, metadata by index and key, the u64 shape arrays), verify; then, for an accepted
 * file, write it back with the burnpack writer, reopen the result (same tensors, bytes, param ids
 * and metadata) and write it again (the two outputs are byte-identical).
 */
#include "fuzz_common.h"

static void check_file(const ingot_file *f, const uint8_t *data, size_t size)
{
    FZ_CHECK(strcmp(ingot_file_format(f), "burnpack") == 0);
    const char *v = ingot_file_version(f);
    FZ_CHECK(v && strncmp(v, "0.", 2) == 0);
    uint64_t n = ingot_file_tensor_count(f), a = ingot_file_alignment(f);
    FZ_CHECK(a == 1 || a == 256);
    FZ_CHECK(n <= size / 32);
    for (uint64_t i = 0; i < n; i++) {
        ingot_tensor_info t, u;
        FZ_ST(ingot_file_tensor_at(f, i, &t), INGOT_OK);
        FZ_CHECK(t.index == i && t.name && strlen(t.name) == t.name_len && t.name_len);
        FZ_CHECK(fz_utf8((const uint8_t *)t.name, t.name_len, false));
        FZ_CHECK(t.offset <= size && t.nbytes <= size - t.offset);
        FZ_CHECK(t.data == data + t.offset);
        uint64_t ne, nb;
        FZ_ST(ingot_dtype_nbytes(t.dtype, t.rank, t.shape, &ne, &nb), INGOT_OK);
        FZ_CHECK(ne == t.nelem && nb == t.nbytes);
        if (t.nbytes) {
            uint8_t b;
            const uint8_t *last = data + t.offset + t.nbytes - 1;
            ingot_status want = fz_values_status(t.dtype, last, 1); /* BOOL: 0 or 1 */
            FZ_ST(ingot_file_tensor_read(f, i, t.nbytes - 1, &b, 1, NULL), want);
            if (want == INGOT_OK) FZ_CHECK(b == *last);
        }
        FZ_ST(ingot_file_tensor_find(f, t.name, &u), INGOT_OK);
        FZ_CHECK(u.index == i);
        if (i) {
            ingot_tensor_info p;
            FZ_ST(ingot_file_tensor_at(f, i - 1, &p), INGOT_OK);
            FZ_CHECK(p.offset + p.nbytes <= t.offset); /* data order, no overlap */
        }
        ingot_error e;
        fz_err_reset(&e);
        ingot_status st = ingot_file_tensor_verify(f, i, &e);
        fz_err_check(&e, st);
        FZ_CHECK(st == INGOT_OK || st == INGOT_BAD_LAYOUT ||
                 (st == INGOT_BAD_VALUE && t.dtype == INGOT_DTYPE_BOOL));
    }
    ingot_tensor_info t;
    FZ_ST(ingot_file_tensor_at(f, n, &t), INGOT_RANGE);
    for (uint64_t i = 0; i < ingot_file_meta_count(f); i++) {
        ingot_meta_info m, q;
        FZ_ST(ingot_file_meta_at(f, i, &m), INGOT_OK);
        FZ_CHECK(m.key_len && fz_utf8((const uint8_t *)m.key, m.key_len, false));
        char key[70000];
        FZ_CHECK(m.key_len < sizeof key);
        memcpy(key, m.key, m.key_len);
        key[m.key_len] = 0;
        FZ_ST(ingot_file_meta_find(f, key, &q), INGOT_OK);
        FZ_CHECK(q.index == i);
        if (m.is_array) {
            uint64_t dims[INGOT_MAX_RANK];
            FZ_CHECK(m.type == INGOT_META_U64 && m.count <= INGOT_MAX_RANK);
            FZ_ST(ingot_file_meta_array_read(f, i, INGOT_META_U64, 0, m.count, dims), INGOT_OK);
            FZ_ST(ingot_file_meta_array_read(f, i, INGOT_META_U64, m.count, 1, dims), INGOT_RANGE);
        } else {
            FZ_CHECK(m.type == INGOT_META_STRING && fz_utf8(m.data, m.count, true));
            const char *s;
            size_t len;
            FZ_ST(ingot_file_meta_get_string(f, key, &s, &len), INGOT_OK);
            FZ_CHECK(s == m.data && len == m.count);
        }
    }
    ingot_error e;
    fz_err_reset(&e);
    ingot_status st = ingot_file_verify(f, 1, &e);
    fz_err_check(&e, st);
}

/* Writes f with the burnpack writer into memory; NULL on failure (which must not happen). */
static uint8_t *write_back(const ingot_file *f, size_t *n)
{
    ingot_writer_opts wo = {0};
    wo.format = "burnpack";
    ingot_writer *w;
    ingot_error e;
    FZ_ST(ingot_writer_new(&wo, &w, &e), INGOT_OK);
    for (uint64_t i = 0; i < ingot_file_meta_count(f); i++) {
        ingot_meta_info m;
        ingot_file_meta_at(f, i, &m);
        char *key = strndup(m.key, m.key_len);
        if (m.is_array) {
            uint64_t dims[INGOT_MAX_RANK];
            ingot_file_meta_array_read(f, i, INGOT_META_U64, 0, m.count, dims);
            FZ_ST(ingot_writer_set_array(w, key, INGOT_META_U64, dims, m.count), INGOT_OK);
        } else {
            FZ_ST(ingot_writer_set_stringn(w, key, m.data, (size_t)m.count), INGOT_OK);
        }
        free(key);
    }
    for (uint64_t i = 0; i < ingot_file_tensor_count(f); i++) {
        ingot_tensor_info t;
        ingot_file_tensor_at(f, i, &t);
        ingot_tensor_opts to = {(t.flags & INGOT_TENSOR_HAS_PARAM_ID) != 0, t.param_id};
        FZ_ST(ingot_writer_add_tensor(w, t.name, t.dtype, t.rank, t.shape, &to, t.data, &e),
              INGOT_OK);
    }
    void *mem = NULL;
    ingot_status st = ingot_writer_begin_mem(w, &e);
    if (st == INGOT_OK) st = ingot_writer_commit_mem(w, &mem, n, &e);
    if (st != INGOT_OK) fprintf(stderr, "write back: %s: %s\n", ingot_status_name(st), e.msg);
    FZ_ST(st, INGOT_OK);
    uint8_t *out = malloc(*n ? *n : 1);
    memcpy(out, mem, *n);
    ingot_writer_free_mem(NULL, mem, *n);
    ingot_writer_free(w);
    return out;
}

static void same_content(const ingot_file *a, const ingot_file *b)
{
    FZ_CHECK(ingot_file_tensor_count(a) == ingot_file_tensor_count(b));
    for (uint64_t i = 0; i < ingot_file_tensor_count(a); i++) {
        ingot_tensor_info x, y;
        ingot_file_tensor_at(a, i, &x);
        ingot_file_tensor_at(b, i, &y);
        FZ_CHECK(strcmp(x.name, y.name) == 0 && x.dtype == y.dtype && x.rank == y.rank);
        FZ_CHECK(memcmp(x.shape, y.shape, sizeof x.shape) == 0 && x.nbytes == y.nbytes);
        FZ_CHECK((x.flags & INGOT_TENSOR_HAS_PARAM_ID) == (y.flags & INGOT_TENSOR_HAS_PARAM_ID));
        FZ_CHECK(x.param_id == y.param_id);
        FZ_CHECK(x.nbytes == 0 || memcmp(x.data, y.data, (size_t)x.nbytes) == 0);
    }
    FZ_CHECK(ingot_file_meta_count(a) == ingot_file_meta_count(b));
    for (uint64_t i = 0; i < ingot_file_meta_count(a); i++) {
        ingot_meta_info x, y;
        ingot_file_meta_at(a, i, &x);
        char key[70000];
        memcpy(key, x.key, x.key_len);
        key[x.key_len] = 0;
        FZ_ST(ingot_file_meta_find(b, key, &y), INGOT_OK);
        FZ_CHECK(x.type == y.type && x.is_array == y.is_array && x.count == y.count);
        if (!x.is_array) FZ_CHECK(memcmp(x.data, y.data, (size_t)x.count) == 0);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ingot_open_opts forced = {.format = "burnpack"};
    ingot_file *f = NULL, *g = NULL;
    ingot_error e;
    fz_err_reset(&e);
    ingot_status st = ingot_file_open_buffer(data, size, &forced, &f, &e);
    fz_err_check(&e, st);
    FZ_CHECK((st == INGOT_OK) == (f != NULL));
    if (size >= 4 && memcmp(data, "NRUB", 4) == 0) {
        ingot_status sd = ingot_file_open_buffer(data, size, NULL, &g, NULL);
        FZ_ST(sd, st);
        ingot_file_close(g);
    }
    if (st != INGOT_OK) return 0;
    check_file(f, data, size);
    if (size <= (1u << 20)) {
        size_t n1, n2;
        uint8_t *w1 = write_back(f, &n1);
        ingot_file *r;
        fz_err_reset(&e);
        st = ingot_file_open_buffer(w1, n1, &forced, &r, &e);
        if (st != INGOT_OK) fprintf(stderr, "reopen: %s: %s\n", ingot_status_name(st), e.msg);
        FZ_ST(st, INGOT_OK);
        check_file(r, w1, n1);
        same_content(f, r);
        uint8_t *w2 = write_back(r, &n2);
        FZ_CHECK(n1 == n2 && memcmp(w1, w2, n1) == 0);
        ingot_file_close(r);
        free(w1);
        free(w2);
    }
    ingot_file_close(f);
    return 0;
}
