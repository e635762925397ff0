/*
 * fuzz_gguf.c - libFuzzer target for the GGUF reader and writer: open an image from a buffer
 * (detected and forced), call every getter (every tensor by index and by name, first and last
 * byte through the pointer, ingot_file_tensor_read and _copy; every metadata entry by index and
 * by key, every typed getter, array elements and strings), per-tensor and whole-file
 * verification. Every pointer handed out must lie inside the input. Files that open are written
 * back with the GGUF writer; the result must open with the same tensors, and writing that again
 * must give the same bytes (the writer is a fixed point on its own output).
 * The same source runs in plain builds through replay_main.c.
 */
#include "fuzz_common.h"

static bool inside(const void *p, uint64_t n, const uint8_t *d, size_t size)
{
    const uint8_t *q = p;
    return q >= d && (uint64_t)(q - d) <= size && n <= size - (uint64_t)(q - d);
}

static void check_tensors(const ingot_file *f, const uint8_t *d, size_t size)
{
    uint64_t n = ingot_file_tensor_count(f), align = ingot_file_alignment(f);
    FZ_CHECK(n <= size / 25);
    uint64_t prev = 0;
    uint8_t *copy = NULL;
    for (uint64_t i = 0; i < n; i++) {
        ingot_tensor_info t, u;
        FZ_ST(ingot_file_tensor_at(f, i, &t), INGOT_OK);
        FZ_CHECK(t.index == i && t.name_len >= 1 && t.name_len <= 63);
        FZ_CHECK(strlen(t.name) == t.name_len);
        FZ_CHECK(ingot_dtype_valid(t.dtype) && t.rank <= 4);
        uint64_t ne, nb;
        FZ_ST(ingot_dtype_nbytes(t.dtype, t.rank, t.shape, &ne, &nb), INGOT_OK);
        FZ_CHECK(ne == t.nelem && nb == t.nbytes);
        FZ_CHECK(t.offset % align == 0 && t.offset >= prev);
        FZ_CHECK(inside(d + t.offset, t.nbytes, d, size));
        FZ_CHECK(t.data == d + t.offset);
        FZ_CHECK((t.flags & ~(uint32_t)INGOT_TENSOR_UNALIGNED) == 0);
        prev = t.offset + t.nbytes;
        uint8_t b = 0;
        if (t.nbytes) {
            const volatile uint8_t *p = t.data;
            FZ_ST(ingot_file_tensor_read(f, i, t.nbytes - 1, &b, 1, NULL), INGOT_OK);
            FZ_CHECK(b == p[t.nbytes - 1]);
            FZ_ST(ingot_file_tensor_read(f, i, 0, &b, 1, NULL), INGOT_OK);
            FZ_CHECK(b == p[0]);
        }
        FZ_ST(ingot_file_tensor_read(f, i, t.nbytes, &b, 1, NULL), INGOT_RANGE);
        copy = realloc(copy, t.nbytes ? (size_t)t.nbytes : 1);
        FZ_CHECK(copy != NULL);
        FZ_ST(ingot_file_tensor_copy(f, i, copy, (size_t)t.nbytes, NULL), INGOT_OK);
        FZ_CHECK(t.nbytes == 0 || memcmp(copy, t.data, (size_t)t.nbytes) == 0);
        FZ_ST(ingot_file_tensor_findn(f, t.name, t.name_len, &u), INGOT_OK);
        FZ_CHECK(u.index == i);
        ingot_error e;
        fz_err_reset(&e);
        ingot_status st = ingot_file_tensor_verify(f, i, &e);
        FZ_CHECK(st == INGOT_OK || st == INGOT_BAD_LAYOUT);
        fz_err_check(&e, st);
    }
    free(copy);
    ingot_tensor_info t;
    FZ_ST(ingot_file_tensor_at(f, n, &t), INGOT_RANGE);
    FZ_ST(ingot_file_tensor_findn(f, "", 0, &t), INGOT_NOT_FOUND);
}

static void check_meta(const ingot_file *f, const uint8_t *d, size_t size)
{
    uint64_t n = ingot_file_meta_count(f);
    FZ_CHECK(n <= size / 14);
    _Alignas(8) uint8_t buf[64];
    for (uint64_t i = 0; i < n; i++) {
        ingot_meta_info m, k;
        FZ_ST(ingot_file_meta_at(f, i, &m), INGOT_OK);
        FZ_CHECK(m.index == i && m.key_len >= 1 && inside(m.key, m.key_len, d, size));
        FZ_ST(ingot_file_meta_at(f, i, &k), INGOT_OK);
        char key[256];
        if (m.key_len < sizeof key && !memchr(m.key, 0, m.key_len)) {
            memcpy(key, m.key, m.key_len);
            key[m.key_len] = 0;
            FZ_ST(ingot_file_meta_find(f, key, &k), INGOT_OK);
            FZ_CHECK(k.index == i); /* keys are unique */
            /* exactly the getter of the stored type succeeds on a scalar */
            int ok = 0;
            ok += ingot_file_meta_get_u8(f, key, (uint8_t *)buf) == INGOT_OK;
            ok += ingot_file_meta_get_u16(f, key, (uint16_t *)(void *)buf) == INGOT_OK;
            ok += ingot_file_meta_get_u32(f, key, (uint32_t *)(void *)buf) == INGOT_OK;
            ok += ingot_file_meta_get_u64(f, key, (uint64_t *)(void *)buf) == INGOT_OK;
            ok += ingot_file_meta_get_i8(f, key, (int8_t *)buf) == INGOT_OK;
            ok += ingot_file_meta_get_i16(f, key, (int16_t *)(void *)buf) == INGOT_OK;
            ok += ingot_file_meta_get_i32(f, key, (int32_t *)(void *)buf) == INGOT_OK;
            ok += ingot_file_meta_get_i64(f, key, (int64_t *)(void *)buf) == INGOT_OK;
            ok += ingot_file_meta_get_f32(f, key, (float *)(void *)buf) == INGOT_OK;
            ok += ingot_file_meta_get_f64(f, key, (double *)(void *)buf) == INGOT_OK;
            ok += ingot_file_meta_get_bool(f, key, (bool *)buf) == INGOT_OK;
            const char *s;
            size_t l;
            const void *p;
            ok += ingot_file_meta_get_string(f, key, &s, &l) == INGOT_OK;
            ok += ingot_file_meta_get_bytes(f, key, &p, &l) == INGOT_OK;
            FZ_CHECK(ok == (m.is_array ? 0 : 1));
        }
        if (!m.is_array) {
            if (m.type == INGOT_META_STRING || m.type == INGOT_META_BYTES)
                FZ_CHECK(inside(m.data, m.count, d, size));
            if (m.type == INGOT_META_BOOL) FZ_CHECK(m.v.b == 0 || m.v.b == 1);
            FZ_ST(ingot_file_meta_array_read(f, i, m.type, 0, 0, buf), INGOT_WRONG_TYPE);
            continue;
        }
        if (m.type == INGOT_META_STRING) {
            FZ_CHECK(m.count <= size / 8);
            for (uint64_t e = 0; e < m.count; e++) {
                const char *s;
                size_t l;
                FZ_ST(ingot_file_meta_array_string(f, i, e, &s, &l), INGOT_OK);
                FZ_CHECK(inside(s, l, d, size));
            }
            const char *s;
            size_t l;
            FZ_ST(ingot_file_meta_array_string(f, i, m.count, &s, &l), INGOT_RANGE);
            FZ_ST(ingot_file_meta_array_read(f, i, INGOT_META_STRING, 0, 1, buf),
                  INGOT_WRONG_TYPE);
            continue;
        }
        uint32_t esz = ingot_meta_type_size(m.type);
        FZ_CHECK(esz && m.count <= size / esz);
        for (uint64_t e = 0; e < m.count; e += sizeof buf / esz) {
            uint64_t k2 = m.count - e < sizeof buf / esz ? m.count - e : sizeof buf / esz;
            FZ_ST(ingot_file_meta_array_read(f, i, m.type, e, k2, buf), INGOT_OK);
            if (m.type == INGOT_META_BOOL)
                for (uint64_t b = 0; b < k2; b++) FZ_CHECK(buf[b] <= 1);
        }
        FZ_ST(ingot_file_meta_array_read(f, i, m.type, m.count, 1, buf), INGOT_RANGE);
        const char *s;
        size_t l;
        FZ_ST(ingot_file_meta_array_string(f, i, 0, &s, &l), INGOT_WRONG_TYPE);
    }
    ingot_meta_info m;
    FZ_ST(ingot_file_meta_at(f, n, &m), INGOT_RANGE);
}

/* Writes f with the GGUF writer; NULL if some metadata cannot be set (a key or string that is
 * not UTF-8: the writer validates what the reader passes through). */
static uint8_t *rewrite(const ingot_file *f, size_t *out_n)
{
    ingot_writer_opts wo = {.format = "gguf"};
    ingot_writer *w;
    FZ_ST(ingot_writer_new(&wo, &w, NULL), INGOT_OK);
    ingot_status st = INGOT_OK;
    for (uint64_t i = 0; i < ingot_file_meta_count(f) && !st; i++) {
        ingot_meta_info m;
        ingot_file_meta_at(f, i, &m);
        char *key = malloc(m.key_len + 1);
        memcpy(key, m.key, m.key_len);
        key[m.key_len] = 0;
        if (memchr(m.key, 0, m.key_len)) st = INGOT_BAD_NAME;
        else if (m.is_array && m.type == INGOT_META_STRING) {
            const void **p = malloc((m.count + 1) * sizeof *p);
            size_t *l = malloc((m.count + 1) * sizeof *l);
            for (uint64_t k = 0; k < m.count; k++) {
                const char *s;
                ingot_file_meta_array_string(f, i, k, &s, &l[k]);
                p[k] = s;
            }
            st = ingot_writer_set_string_array(w, key, m.type, p, l, m.count);
            free(p);
            free(l);
        } else if (m.is_array) {
            void *buf = malloc(m.count * ingot_meta_type_size(m.type) + 1);
            ingot_file_meta_array_read(f, i, m.type, 0, m.count, buf);
            st = ingot_writer_set_array(w, key, m.type, buf, m.count);
            free(buf);
        } else {
            switch (m.type) {
            case INGOT_META_U8: st = ingot_writer_set_u8(w, key, (uint8_t)m.v.u); break;
            case INGOT_META_U16: st = ingot_writer_set_u16(w, key, (uint16_t)m.v.u); break;
            case INGOT_META_U32: st = ingot_writer_set_u32(w, key, (uint32_t)m.v.u); break;
            case INGOT_META_U64: st = ingot_writer_set_u64(w, key, m.v.u); break;
            case INGOT_META_I8: st = ingot_writer_set_i8(w, key, (int8_t)m.v.i); break;
            case INGOT_META_I16: st = ingot_writer_set_i16(w, key, (int16_t)m.v.i); break;
            case INGOT_META_I32: st = ingot_writer_set_i32(w, key, (int32_t)m.v.i); break;
            case INGOT_META_I64: st = ingot_writer_set_i64(w, key, m.v.i); break;
            case INGOT_META_F32: st = ingot_writer_set_f32(w, key, (float)m.v.f); break;
            case INGOT_META_F64: st = ingot_writer_set_f64(w, key, m.v.f); break;
            case INGOT_META_BOOL: st = ingot_writer_set_bool(w, key, m.v.b); break;
            case INGOT_META_STRING:
                st = ingot_writer_set_stringn(w, key, m.data, (size_t)m.count);
                break;
            default: st = ingot_writer_set_bytes(w, key, m.data, (size_t)m.count); break;
            }
        }
        free(key);
    }
    for (uint64_t i = 0; i < ingot_file_tensor_count(f) && !st; i++) {
        ingot_tensor_info t;
        ingot_file_tensor_at(f, i, &t);
        st = ingot_writer_add_tensor(w, t.name, t.dtype, t.rank, t.shape, NULL, t.data, NULL);
    }
    void *p = NULL;
    if (!st) st = ingot_writer_begin_mem(w, NULL);
    if (!st) FZ_ST(ingot_writer_commit_mem(w, &p, out_n, NULL), INGOT_OK);
    ingot_writer_free(w);
    if (st) return NULL;
    uint8_t *out = malloc(*out_n ? *out_n : 1);
    memcpy(out, p, *out_n);
    ingot_writer_free_mem(NULL, p, *out_n);
    return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    for (int forced = 0; forced < 2; forced++) {
        ingot_open_opts o = {.format = forced ? "gguf" : NULL};
        ingot_file *f = NULL;
        ingot_error e;
        fz_err_reset(&e);
        ingot_status st = ingot_file_open_buffer(data, size, &o, &f, &e);
        fz_err_check(&e, st);
        if (st != INGOT_OK) {
            FZ_CHECK(f == NULL);
            continue;
        }
        if (!forced) FZ_CHECK(!strcmp(ingot_file_format(f), "gguf") || size < 4 ||
                              memcmp(data, "GGUF", 4) != 0);
        if (strcmp(ingot_file_format(f), "gguf") != 0) {
            ingot_file_close(f);
            continue;
        }
        check_tensors(f, data, size);
        check_meta(f, data, size);
        fz_err_reset(&e);
        st = ingot_file_verify(f, 1 + (uint32_t)(size & 1), &e);
        FZ_CHECK(st == INGOT_OK || st == INGOT_BAD_LAYOUT);
        fz_err_check(&e, st);
        if (!forced) {
            size_t n1 = 0, n2 = 0;
            uint8_t *a = rewrite(f, &n1);
            if (a) {
                ingot_file *g;
                FZ_ST(ingot_file_open_buffer(a, n1, NULL, &g, NULL), INGOT_OK);
                FZ_CHECK(ingot_file_tensor_count(g) == ingot_file_tensor_count(f));
                FZ_CHECK(ingot_file_meta_count(g) >= ingot_file_meta_count(f));
                for (uint64_t i = 0; i < ingot_file_tensor_count(f); i++) {
                    ingot_tensor_info x, y;
                    ingot_file_tensor_at(f, i, &x);
                    ingot_file_tensor_at(g, i, &y);
                    FZ_CHECK(x.dtype == y.dtype && x.rank == y.rank && x.nbytes == y.nbytes &&
                             !strcmp(x.name, y.name) &&
                             memcmp(x.shape, y.shape, sizeof x.shape) == 0);
                    FZ_CHECK(!x.nbytes || memcmp(x.data, y.data, (size_t)x.nbytes) == 0);
                }
                FZ_ST(ingot_file_verify(g, 1, NULL), INGOT_OK);
                uint8_t *b = rewrite(g, &n2);
                FZ_CHECK(b && n2 == n1 && memcmp(a, b, n1) == 0);
                free(b);
                ingot_file_close(g);
                free(a);
            }
        }
        ingot_file_close(f);
    }
    return 0;
}
