/*
 * fuzz_safetensors.c - libFuzzer target: open a safetensors image from a buffer (forced adapter and
 * detection by content) and call every getter: every tensor by index and by name, its first and
 * last byte through the pointer and ingot_file_tensor_read, range errors, per-tensor and file
 * verification, every metadata entry by index and key with every typed getter. Invariants are
 * checked against the bytes (the tensors tile the data section exactly). An accepted file is then
 * written back with the safetensors writer: the copy must reopen with the same tensors and
 * metadata, and a second write must give the same bytes (determinism). The same header respaced
 * (general JSON path only) must open to the same tables and errors.
 */
#include "fuzz_common.h"
#include "json.h"

static void check_meta(const ingot_file *f, const uint8_t *d, size_t size)
{
    uint64_t n = ingot_file_meta_count(f);
    FZ_CHECK(n <= size / 6);
    for (uint64_t i = 0; i < n; i++) {
        ingot_meta_info m, q;
        FZ_ST(ingot_file_meta_at(f, i, &m), INGOT_OK);
        FZ_CHECK(m.index == i && m.type == INGOT_META_STRING && !m.is_array);
        FZ_CHECK(m.key_len >= 1 && m.key_len <= 65535);
        FZ_CHECK(fz_utf8((const uint8_t *)m.key, m.key_len, true));
        FZ_CHECK(fz_utf8(m.data, m.count, true));
        FZ_CHECK(m.count <= size);
        char *key = malloc(m.key_len + 1);
        memcpy(key, m.key, m.key_len);
        key[m.key_len] = 0;
        if (strlen(key) == m.key_len) { /* keys with NUL cannot be looked up by C string */
            FZ_ST(ingot_file_meta_find(f, key, &q), INGOT_OK);
            FZ_CHECK(q.index == i && q.data == m.data && q.count == m.count);
            const char *s;
            size_t len;
            FZ_ST(ingot_file_meta_get_string(f, key, &s, &len), INGOT_OK);
            FZ_CHECK(s == m.data && len == m.count);
            uint32_t u;
            FZ_ST(ingot_file_meta_get_u32(f, key, &u), INGOT_WRONG_TYPE);
            uint64_t cnt;
            FZ_ST(ingot_file_meta_get_array(f, key, INGOT_META_STRING, &cnt), INGOT_WRONG_TYPE);
        }
        free(key);
        uint8_t one[8];
        const char *s;
        size_t len;
        FZ_ST(ingot_file_meta_array_read(f, i, INGOT_META_U8, 0, 0, one), INGOT_WRONG_TYPE);
        FZ_ST(ingot_file_meta_array_string(f, i, 0, &s, &len), INGOT_WRONG_TYPE);
    }
    ingot_meta_info m;
    FZ_ST(ingot_file_meta_at(f, n, &m), INGOT_RANGE);
    FZ_ST(ingot_file_meta_find(f, "\xff", &m), INGOT_NOT_FOUND);
    (void)d;
}

static void check_tensors(const ingot_file *f, const uint8_t *d, size_t size)
{
    uint64_t n = ingot_file_tensor_count(f);
    uint64_t hn = fz_ld64(d), start = 8 + hn, total = 0;
    FZ_CHECK(hn <= 100000000 && start <= size);
    FZ_CHECK(n <= hn / 8);
    ingot_status vwant = INGOT_OK; /* what verify must say: the first bad BOOL, if any */
    for (uint64_t i = 0; i < n; i++) {
        ingot_tensor_info t, u;
        FZ_ST(ingot_file_tensor_at(f, i, &t), INGOT_OK);
        FZ_CHECK(t.index == i && t.name && t.name_len >= 1 && strlen(t.name) == t.name_len);
        FZ_CHECK(fz_utf8((const uint8_t *)t.name, t.name_len, false));
        FZ_CHECK(ingot_dtype_valid(t.dtype) && !ingot_dtype_is_quantized(t.dtype));
        FZ_CHECK(t.rank <= INGOT_MAX_RANK);
        uint64_t ne, nb;
        FZ_ST(ingot_dtype_nbytes(t.dtype, t.rank, t.shape, &ne, &nb), INGOT_OK);
        FZ_CHECK(ne == t.nelem && nb == t.nbytes);
        FZ_CHECK(t.offset >= start && t.offset <= size && t.nbytes <= size - t.offset);
        FZ_CHECK(t.data == d + t.offset);
        uint32_t es = ingot_dtype_block_elems(t.dtype) == 1 ? ingot_dtype_block_bytes(t.dtype) : 1;
        FZ_CHECK(((t.flags & INGOT_TENSOR_UNALIGNED) != 0) == (((uintptr_t)t.data % es) != 0));
        FZ_CHECK((t.flags & ~(uint32_t)INGOT_TENSOR_UNALIGNED) == 0);
        total += t.nbytes;
        uint8_t b = 0;
        if (t.nbytes) {
            const volatile uint8_t *p = t.data;
            uint8_t first = p[0], last = p[t.nbytes - 1];
            ingot_status want = fz_values_status(t.dtype, &first, 1); /* BOOL: 0 or 1 */
            FZ_ST(ingot_file_tensor_read(f, i, 0, &b, 1, NULL), want);
            if (want == INGOT_OK) FZ_CHECK(b == first);
            want = fz_values_status(t.dtype, &last, 1);
            FZ_ST(ingot_file_tensor_read(f, i, t.nbytes - 1, &b, 1, NULL), want);
            if (want == INGOT_OK) FZ_CHECK(b == last);
        }
        FZ_ST(ingot_file_tensor_read(f, i, t.nbytes, &b, 1, NULL), INGOT_RANGE);
        FZ_ST(ingot_file_tensor_find(f, t.name, &u), INGOT_OK);
        FZ_CHECK(u.index == i && u.name == t.name);
        ingot_status want = fz_values_status(t.dtype, t.data, t.nbytes);
        FZ_ST(ingot_file_tensor_verify(f, i, NULL), want);
        if (vwant == INGOT_OK) vwant = want;
    }
    FZ_CHECK(total == size - start); /* exact coverage: no gaps, overlaps or trailing bytes */
    ingot_tensor_info t;
    FZ_ST(ingot_file_tensor_at(f, n, &t), INGOT_RANGE);
    FZ_ST(ingot_file_tensor_findn(f, "", 0, &t), INGOT_NOT_FOUND);
    FZ_ST(ingot_file_verify(f, 1, NULL), vwant);
}

static int write_back(const ingot_file *f, void **out, size_t *len)
{
    ingot_writer_opts wo = {.format = "safetensors"};
    ingot_writer *w;
    ingot_error e;
    FZ_ST(ingot_writer_new(&wo, &w, &e), INGOT_OK);
    for (uint64_t i = 0; i < ingot_file_meta_count(f); i++) {
        ingot_meta_info m;
        ingot_file_meta_at(f, i, &m);
        char *key = malloc(m.key_len + 1);
        memcpy(key, m.key, m.key_len);
        key[m.key_len] = 0;
        /* A key with NUL (\u0000): ingot keys are C strings and cannot hold it (the writer
         * would take the bytes before the NUL, a different key). */
        ingot_status st = strlen(key) == m.key_len
                              ? ingot_writer_set_stringn(w, key, m.data, (size_t)m.count)
                              : INGOT_BAD_NAME;
        free(key);
        if (st != INGOT_OK) {
            ingot_writer_free(w);
            return 0;
        }
    }
    for (uint64_t i = 0; i < ingot_file_tensor_count(f); i++) {
        ingot_tensor_info t;
        ingot_file_tensor_at(f, i, &t);
        FZ_ST(ingot_writer_add_tensor(w, t.name, t.dtype, t.rank, t.shape, NULL, t.data, &e),
              INGOT_OK);
    }
    ingot_status st = ingot_writer_begin_mem(w, &e);
    if (st == INGOT_OK) st = ingot_writer_commit_mem(w, out, len, &e);
    ingot_writer_free(w);
    FZ_ST(st, INGOT_OK);
    return 1;
}

static void round_trip(const ingot_file *f)
{
    void *a = NULL, *b = NULL;
    size_t al = 0, bl = 0;
    if (!write_back(f, &a, &al)) return;
    FZ_CHECK(write_back(f, &b, &bl));
    FZ_CHECK(al == bl && memcmp(a, b, al) == 0);
    ingot_file *g;
    FZ_ST(ingot_file_open_buffer(a, al, NULL, &g, NULL), INGOT_OK);
    FZ_CHECK(ingot_file_tensor_count(g) == ingot_file_tensor_count(f));
    FZ_CHECK(ingot_file_meta_count(g) == ingot_file_meta_count(f));
    for (uint64_t i = 0; i < ingot_file_tensor_count(f); i++) {
        ingot_tensor_info x, y;
        ingot_file_tensor_at(f, i, &x);
        ingot_file_tensor_at(g, i, &y);
        FZ_CHECK(strcmp(x.name, y.name) == 0 && x.dtype == y.dtype && x.rank == y.rank &&
                 memcmp(x.shape, y.shape, sizeof x.shape) == 0 && x.nbytes == y.nbytes &&
                 (x.nbytes == 0 || memcmp(x.data, y.data, (size_t)x.nbytes) == 0));
        FZ_CHECK(!(y.flags & INGOT_TENSOR_UNALIGNED) || (y.offset % 8) != 0);
    }
    for (uint64_t i = 0; i < ingot_file_meta_count(f); i++) {
        ingot_meta_info x, y;
        ingot_file_meta_at(f, i, &x);
        ingot_file_meta_at(g, i, &y);
        FZ_CHECK(x.key_len == y.key_len && memcmp(x.key, y.key, x.key_len) == 0);
        FZ_CHECK(x.count == y.count && memcmp(x.data, y.data, (size_t)x.count) == 0);
    }
    FZ_CHECK((8 + fz_ld64(a)) % 8 == 0);
    ingot_file_close(g);
    ingot_writer_free_mem(NULL, a, al);
    ingot_writer_free_mem(NULL, b, bl);
}

/* The reader takes compact tensor entries through a byte-exact fast path and everything else
 * through the general scanner. The same header with a space after every ':' and ',' outside
 * strings goes through the general path only: when the header is valid JSON both opens must agree
 * on the status, the name an error gives, and every table entry. */
static void both_paths(const uint8_t *data, size_t size, ingot_status st, const ingot_file *f,
                       const ingot_error *e)
{
    if (size < 8) return;
    uint64_t hn = fz_ld64(data);
    if (hn > size - 8 || hn > (1u << 20)) return;
    ingot__json j;
    ingot__json_init(&j, data + 8, (size_t)hn, 0, 8);
    ingot__json_tok t;
    do {
        if (ingot__json_next(&j, &t, NULL) != INGOT_OK) return; /* not valid JSON */
    } while (t.type != ING_JSON_END);
    uint8_t *o = malloc(size + 2 * (size_t)hn + 1);
    FZ_CHECK(o);
    size_t k = 8;
    bool in_str = false;
    for (size_t i = 8; i < 8 + hn; i++) {
        uint8_t c = data[i];
        o[k++] = c;
        if (in_str) {
            if (c == '\\') o[k++] = data[++i]; /* valid JSON: an escape never ends the header */
            else if (c == '"') in_str = false;
        } else if (c == '"') {
            in_str = true;
        } else if (c == ':' || c == ',') {
            o[k++] = ' ';
        }
    }
    uint64_t hn2 = k - 8;
    for (int i = 0; i < 8; i++) o[i] = (uint8_t)(hn2 >> (8 * i));
    memcpy(o + k, data + 8 + hn, size - 8 - (size_t)hn);
    size_t size2 = k + (size - 8 - (size_t)hn);
    ingot_open_opts forced = {.format = "safetensors"};
    ingot_file *g = NULL;
    ingot_error e2;
    fz_err_reset(&e2);
    ingot_status st2 = ingot_file_open_buffer(o, size2, &forced, &g, &e2);
    FZ_ST(st2, st);
    if (st != INGOT_OK) FZ_CHECK(strcmp(e->where, e2.where) == 0);
    if (st == INGOT_OK) {
        FZ_CHECK(ingot_file_tensor_count(g) == ingot_file_tensor_count(f));
        FZ_CHECK(ingot_file_meta_count(g) == ingot_file_meta_count(f));
        for (uint64_t i = 0; i < ingot_file_tensor_count(f); i++) {
            ingot_tensor_info x, y;
            ingot_file_tensor_at(f, i, &x);
            ingot_file_tensor_at(g, i, &y);
            FZ_CHECK(strcmp(x.name, y.name) == 0 && x.dtype == y.dtype && x.rank == y.rank &&
                     memcmp(x.shape, y.shape, sizeof x.shape) == 0 && x.nelem == y.nelem &&
                     x.nbytes == y.nbytes && x.offset - (8 + hn) == y.offset - (8 + hn2));
        }
        for (uint64_t i = 0; i < ingot_file_meta_count(f); i++) {
            ingot_meta_info x, y;
            ingot_file_meta_at(f, i, &x);
            ingot_file_meta_at(g, i, &y);
            FZ_CHECK(x.key_len == y.key_len && memcmp(x.key, y.key, x.key_len) == 0);
            FZ_CHECK(x.count == y.count && memcmp(x.data, y.data, (size_t)x.count) == 0);
        }
    }
    ingot_file_close(g);
    free(o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ingot_open_opts forced = {.format = "safetensors"};
    ingot_file *f = NULL, *g = NULL;
    ingot_error e, e2;
    fz_err_reset(&e);
    fz_err_reset(&e2);
    ingot_status st = ingot_file_open_buffer(data, size, &forced, &f, &e);
    fz_err_check(&e, st);
    FZ_CHECK((st == INGOT_OK) == (f != NULL));
    if (size < 8) FZ_ST(st, INGOT_TRUNCATED);
    /* Detection by content agrees whenever the probe claims the bytes. */
    ingot_status sd = ingot_file_open_buffer(data, size, NULL, &g, &e2);
    fz_err_check(&e2, sd);
    if (g && strcmp(ingot_file_format(g), "safetensors") == 0) FZ_ST(st, INGOT_OK);
    if (st == INGOT_OK) {
        FZ_CHECK(strcmp(ingot_file_format(f), "safetensors") == 0);
        FZ_CHECK(ingot_file_size(f) == size && ingot_file_alignment(f) == 1);
        check_tensors(f, data, size);
        check_meta(f, data, size);
        round_trip(f);
    }
    both_paths(data, size, st, f, &e);
    ingot_file_close(g);
    ingot_file_close(f);
    return 0;
}
