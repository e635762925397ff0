/*
 * fuzz_torch_zip.c - libFuzzer target: whole PyTorch checkpoints (zip and legacy) opened from a
 * buffer, probed and with the format forced, then every getter: each tensor by index and by name,
 * its bytes (pointer for contiguous tensors, ingot_file_tensor_read, ingot_file_tensor_copy into
 * an exactly sized buffer), per-tensor and whole-file verification, each metadata entry by index
 * and by key, typed getters, array elements. Checks that every pointer handed out lies inside the
 * input, that views reach only bytes inside the input, and that errors are well formed.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"

static void check_file(const ingot_file *f, const uint8_t *d, size_t size)
{
    uint64_t nn = strcmp(ingot_file_format(f), "torch") == 0 ? ingot_file_notice_count(f) : 0;
    uint64_t prev = 0; /* torch notices are placeholders, in file order */
    for (uint64_t i = 0; i < nn; i++) {
        ingot_notice nt;
        FZ_ST(ingot_file_notice_at(f, i, &nt), INGOT_OK);
        FZ_CHECK(nt.name && nt.name[nt.name_len] == '\0' && nt.name_len >= 1);
        FZ_CHECK(nt.reason && nt.reason[0]);
        FZ_CHECK(nt.offset < size && (i == 0 || nt.offset > prev));
        prev = nt.offset;
    }
    uint64_t n = ingot_file_tensor_count(f);
    for (uint64_t i = 0; i < n; i++) {
        ingot_tensor_info t, u;
        FZ_ST(ingot_file_tensor_at(f, i, &t), INGOT_OK);
        FZ_CHECK(t.index == i);
        FZ_CHECK(t.name && t.name_len >= 1 && strlen(t.name) == t.name_len);
        FZ_CHECK(fz_utf8((const uint8_t *)t.name, t.name_len, false));
        FZ_ST(ingot_file_tensor_find(f, t.name, &u), INGOT_OK);
        FZ_CHECK(u.index == i);
        FZ_CHECK(ingot_dtype_valid(t.dtype) && t.rank <= INGOT_MAX_RANK);
        uint64_t ne, nb;
        FZ_ST(ingot_dtype_nbytes(t.dtype, t.rank, t.shape, &ne, &nb), INGOT_OK);
        FZ_CHECK(ne == t.nelem && nb == t.nbytes);
        ingot_error e;
        fz_err_reset(&e);
        if (!(t.flags & INGOT_TENSOR_STRIDED)) {
            FZ_CHECK(fz_inside(t.data, t.nbytes, d, size) || t.nbytes == 0);
            if (t.nbytes) {
                uint8_t b0;
                const uint8_t *last = (const uint8_t *)t.data + t.nbytes - 1;
                ingot_status want = fz_values_status(t.dtype, last, 1); /* BOOL: 0 or 1 */
                FZ_ST(ingot_file_tensor_read(f, i, t.nbytes - 1, &b0, 1, &e), want);
                if (want == INGOT_OK) FZ_CHECK(b0 == *last);
            }
        } else {
            FZ_CHECK(t.offset <= size);
        }
        if (t.nbytes <= (64u << 20)) {
            uint8_t *c = malloc(t.nbytes ? t.nbytes : 1);
            fz_err_reset(&e);
            ingot_status st = ingot_file_tensor_copy(f, i, c, (size_t)t.nbytes, &e);
            fz_err_check(&e, st);
            FZ_CHECK(st == INGOT_OK || (st == INGOT_BAD_VALUE && t.dtype == INGOT_DTYPE_BOOL));
            free(c);
        }
        fz_err_reset(&e);
        ingot_status v = ingot_file_tensor_verify(f, i, &e);
        fz_err_check(&e, v);
        FZ_CHECK(v == INGOT_OK || v == INGOT_BAD_CHECKSUM ||
                 (v == INGOT_BAD_VALUE && t.dtype == INGOT_DTYPE_BOOL));
    }
    ingot_error e;
    fz_err_reset(&e);
    fz_err_check(&e, ingot_file_verify(f, 1, &e));
    uint64_t nm = ingot_file_meta_count(f);
    for (uint64_t i = 0; i < nm; i++) {
        ingot_meta_info m, m2;
        FZ_ST(ingot_file_meta_at(f, i, &m), INGOT_OK);
        FZ_CHECK(m.index == i && m.key_len >= 1);
        char key[70000];
        FZ_CHECK(m.key_len < sizeof key);
        memcpy(key, m.key, m.key_len);
        key[m.key_len] = 0;
        if (strlen(key) == m.key_len) {
            FZ_ST(ingot_file_meta_find(f, key, &m2), INGOT_OK);
            FZ_CHECK(m2.index == i);
        }
        if (m.is_array) {
            if (m.type == INGOT_META_STRING) {
                for (uint64_t k = 0; k < m.count; k++) {
                    const char *s;
                    size_t len;
                    FZ_ST(ingot_file_meta_array_string(f, i, k, &s, &len), INGOT_OK);
                    FZ_CHECK(fz_utf8((const uint8_t *)s, len, true));
                }
            } else {
                uint64_t v[4];
                uint64_t k = m.count < 4 ? m.count : 4;
                FZ_ST(ingot_file_meta_array_read(f, i, m.type, 0, k, v), INGOT_OK);
                FZ_ST(ingot_file_meta_array_read(f, i, m.type, m.count, 1, v), INGOT_RANGE);
            }
        } else if (m.type == INGOT_META_STRING || m.type == INGOT_META_BYTES) {
            FZ_CHECK(m.data != NULL || m.count == 0);
            if (m.count) {
                volatile uint8_t x = ((const uint8_t *)m.data)[m.count - 1];
                (void)x;
            }
        }
    }
    ingot_meta_info m;
    FZ_ST(ingot_file_meta_at(f, nm, &m), INGOT_RANGE);
    ingot_tensor_info t;
    FZ_ST(ingot_file_tensor_at(f, n, &t), INGOT_RANGE);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    for (int forced = 0; forced < 2; forced++) {
        ingot_open_opts o = {0};
        if (forced) o.format = "torch";
        ingot_file *f = NULL;
        ingot_error e;
        fz_err_reset(&e);
        ingot_status st = ingot_file_open_buffer(data, size, &o, &f, &e);
        fz_err_check(&e, st);
        if (st != INGOT_OK) {
            FZ_CHECK(f == NULL);
            continue;
        }
        if (!forced && strcmp(ingot_file_format(f), "torch") != 0) {
            ingot_file_close(f);
            continue;
        }
        check_file(f, data, size);
        ingot_file_close(f);
    }
    return 0;
}
