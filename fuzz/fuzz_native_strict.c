/*
 * fuzz_native_strict.c - libFuzzer target for the freestanding reader, ingot_native_open(), with
 * the header checksum enforced: the one target that never skips it (RELIABILITY.md §2), so the
 * fuzzer must learn to write valid CRC-32Cs and the checksum path itself is fuzzed.
 *
 * Per input: the header-size probe; open over the whole image (strict and with the CRC skipped,
 * which must agree but for BAD_CHECKSUM); open over the header bytes only (tensor data not
 * mapped, verification UNSUPPORTED) and over one byte less (TRUNCATED); argument misuse; then
 * every accessor of an accepted image, checked against the bytes, and the hosted ingot_file API
 * on the same image.
 */
#include "fuzz_common.h"

static void walk(const ingot_native *r, const ingot_native *h, const uint8_t *d, size_t size)
{
    uint64_t n = ingot_native_tensor_count(r), data_off = ingot_native_data_offset(r);
    uint32_t align = ingot_native_alignment(r);
    FZ_CHECK(align >= 64 && align <= 65536 && (align & (align - 1)) == 0);
    FZ_CHECK(data_off >= 192 && data_off <= size && data_off % align == 0);
    FZ_CHECK(data_off == fz_ld64(d + 160));
    FZ_CHECK(ingot_native_version_minor(r) == (uint32_t)(d[10] | d[11] << 8));
    FZ_CHECK(n == ingot_native_tensor_count(h) && n <= size / 30);
    FZ_CHECK(ingot_native_meta_count(r) == ingot_native_meta_count(h));
    uint64_t end = data_off;
    for (uint64_t i = 0; i < n; i++) {
        ingot_tensor_info t, th, u;
        FZ_ST(ingot_native_tensor_at(r, i, &t), INGOT_OK);
        FZ_ST(ingot_native_tensor_at(h, i, &th), INGOT_OK);
        FZ_CHECK(t.index == i && th.index == i);
        FZ_CHECK(fz_inside(t.name, t.name_len + 1, d, size) && strlen(t.name) == t.name_len);
        FZ_CHECK(t.name_len >= 1 && fz_utf8((const uint8_t *)t.name, t.name_len, false));
        FZ_CHECK(t.offset >= end && t.offset % align == 0);
        FZ_CHECK(t.offset <= size && t.nbytes <= size - t.offset);
        FZ_CHECK(t.data == d + t.offset && !(t.flags & INGOT_TENSOR_NOT_MAPPED));
        FZ_CHECK(th.data == NULL && (th.flags & INGOT_TENSOR_NOT_MAPPED));
        FZ_CHECK(th.name == t.name && th.offset == t.offset && th.nbytes == t.nbytes &&
                 th.dtype == t.dtype && th.rank == t.rank && th.param_id == t.param_id);
        FZ_CHECK(memcmp(th.shape, t.shape, sizeof t.shape) == 0);
        uint64_t ne, nb;
        FZ_ST(ingot_dtype_nbytes(t.dtype, t.rank, t.shape, &ne, &nb), INGOT_OK);
        FZ_CHECK(ne == t.nelem && nb == t.nbytes);
        for (uint32_t k = t.rank; k < INGOT_MAX_RANK; k++) FZ_CHECK(t.shape[k] == 0);
        if (t.nbytes) {
            const volatile uint8_t *p = t.data;
            (void)p[0];
            (void)p[t.nbytes - 1];
        }
        end = t.offset + t.nbytes;

        FZ_ST(ingot_native_tensor_find(r, t.name, t.name_len, &u), INGOT_OK);
        FZ_CHECK(u.index == i);
        FZ_ST(ingot_native_tensor_find(h, t.name, t.name_len, &u), INGOT_OK);
        FZ_CHECK(u.index == i);

        uint32_t crc;
        FZ_ST(ingot_native_tensor_crc(r, i, &crc), INGOT_OK);
        ingot_status want = INGOT_OK;
        if (ingot_crc32c(0, t.data, (size_t)t.nbytes) != crc) {
            want = INGOT_BAD_CHECKSUM;
        } else {
            uint64_t next = size;
            if (i + 1 < n) {
                FZ_ST(ingot_native_tensor_at(r, i + 1, &u), INGOT_OK);
                next = u.offset;
            }
            for (uint64_t k = t.offset + t.nbytes; k < next; k++)
                if (d[k]) want = INGOT_BAD_LAYOUT;
        }
        ingot_error e;
        fz_err_reset(&e);
        ingot_status st = ingot_native_tensor_verify(r, i, &e);
        FZ_ST(st, want);
        fz_err_check(&e, st);
        FZ_ST(ingot_native_tensor_verify(h, i, NULL), INGOT_UNSUPPORTED);
    }
    FZ_CHECK(end == size); /* nothing after the last tensor */
    ingot_tensor_info t;
    uint32_t crc;
    FZ_ST(ingot_native_tensor_at(r, n, &t), INGOT_RANGE);
    FZ_ST(ingot_native_tensor_crc(r, n, &crc), INGOT_RANGE);
    FZ_ST(ingot_native_tensor_verify(r, n, NULL), INGOT_RANGE);
    FZ_ST(ingot_native_tensor_find(r, "\xc0", 1, &t), INGOT_NOT_FOUND);

    uint64_t nm = ingot_native_meta_count(r);
    FZ_CHECK(nm <= size / 32);
    for (uint64_t i = 0; i < nm; i++) {
        ingot_meta_info m, q;
        FZ_ST(ingot_native_meta_at(r, i, &m), INGOT_OK);
        FZ_CHECK(m.index == i && m.type >= INGOT_META_U8 && m.type <= INGOT_META_BYTES);
        FZ_CHECK(fz_inside(m.key, m.key_len + 1, d, size) && strlen(m.key) == m.key_len);
        FZ_ST(ingot_native_meta_find(r, m.key, m.key_len, &q), INGOT_OK);
        FZ_CHECK(q.index == i);
        FZ_ST(ingot_native_meta_find(h, m.key, m.key_len, &q), INGOT_OK);
        FZ_CHECK(q.index == i && q.count == m.count && q.data == m.data);
        uint32_t esz = ingot_meta_type_size(m.type);
        uint8_t buf[8];
        const char *s;
        size_t len;
        if (!m.is_array) {
            FZ_ST(ingot_native_meta_array_read(r, i, m.type, 0, 0, buf), INGOT_WRONG_TYPE);
            FZ_ST(ingot_native_meta_array_string(r, i, 0, &s, &len), INGOT_WRONG_TYPE);
            if (!esz) {
                FZ_CHECK(fz_inside(m.data, m.count, d, size));
                if (m.type == INGOT_META_STRING)
                    FZ_CHECK(fz_inside(m.data, m.count + 1, d, size) &&
                             ((const char *)m.data)[m.count] == 0 &&
                             fz_utf8(m.data, m.count, true));
            }
            continue;
        }
        if (esz) {
            FZ_CHECK(m.count <= size / esz);
            for (uint64_t k = 0; k < m.count; k++) {
                FZ_ST(ingot_native_meta_array_read(r, i, m.type, k, 1, buf), INGOT_OK);
                if (m.type == INGOT_META_BOOL) FZ_CHECK(buf[0] <= 1);
            }
            FZ_ST(ingot_native_meta_array_read(r, i, m.type, m.count, 1, buf), INGOT_RANGE);
            FZ_ST(ingot_native_meta_array_string(r, i, 0, &s, &len), INGOT_WRONG_TYPE);
        } else {
            FZ_CHECK(m.count <= size / 4); /* 4 bytes of offsets a packed element at least */
            for (uint64_t k = 0; k < m.count; k++) {
                FZ_ST(ingot_native_meta_array_string(r, i, k, &s, &len), INGOT_OK);
                FZ_CHECK(fz_inside(s, len, d, size));
                if (m.type == INGOT_META_STRING)
                    FZ_CHECK(fz_inside(s, (uint64_t)len + 1, d, size) && s[len] == 0 &&
                             fz_utf8((const uint8_t *)s, len, true));
            }
            FZ_ST(ingot_native_meta_array_string(r, i, m.count, &s, &len), INGOT_RANGE);
            FZ_ST(ingot_native_meta_array_read(r, i, m.type, 0, 0, buf), INGOT_WRONG_TYPE);
        }
    }
    ingot_meta_info m;
    FZ_ST(ingot_native_meta_at(r, nm, &m), INGOT_RANGE);
    FZ_ST(ingot_native_meta_find(r, "", 0, &m), INGOT_NOT_FOUND);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    _Alignas(8) unsigned char ws[INGOT_NATIVE_WORKSPACE + 8], ws_h[INGOT_NATIVE_WORKSPACE];
    ingot_native *r = (ingot_native *)1, *rs = NULL, *h = NULL;
    ingot_error e;

    /* argument checks never read the image */
    FZ_ST(ingot_native_open(ws + 4, INGOT_NATIVE_WORKSPACE, data, size, size, 0, &r, NULL),
          INGOT_MISUSE);
    FZ_CHECK(r == NULL);
    FZ_ST(ingot_native_open(ws, 8, data, size, size, 0, &r, NULL), INGOT_MISUSE);
    if (size) FZ_ST(ingot_native_open(ws, sizeof ws, data, size, size - 1, 0, &r, NULL),
                    INGOT_MISUSE);

    fz_err_reset(&e);
    ingot_status st = ingot_native_open(ws, sizeof ws, data, size, size, 0, &r, &e);
    fz_err_check(&e, st);
    FZ_CHECK((st == INGOT_OK) == (r != NULL));
    _Alignas(8) unsigned char ws_s[INGOT_NATIVE_WORKSPACE];
    ingot_status ss = ingot_native_open(ws_s, sizeof ws_s, data, size, size,
                                        INGOT_NATIVE_SKIP_HEADER_CRC, &rs, NULL);
    if (ss == INGOT_OK)
        FZ_ST(st, fz_header_crc_ok(data, size) ? INGOT_OK : INGOT_BAD_CHECKSUM);
    else
        FZ_ST(st, ss);

    /* Header-only open: the same verdict from the first data_offset bytes. */
    uint64_t need = 0;
    fz_err_reset(&e);
    ingot_status sz = ingot_native_header_size(data, size, &need, &e);
    fz_err_check(&e, sz);
    if (size < 192) FZ_ST(sz, INGOT_TRUNCATED);
    if (sz == INGOT_OK) {
        FZ_CHECK(need >= 192 && need == fz_ld64(data + 160));
        if (need <= size) {
            ingot_status sh = ingot_native_open(ws_h, sizeof ws_h, data, (size_t)need, size, 0,
                                                &h, NULL);
            FZ_ST(sh, st);
            if (need > 192) { /* one byte less than the header region: never accepted */
                _Alignas(8) unsigned char ws_t[INGOT_NATIVE_WORKSPACE];
                ingot_native *t = NULL;
                ingot_status st_t = ingot_native_open(ws_t, sizeof ws_t, data, (size_t)need - 1,
                                                      size, 0, &t, NULL);
                if (st == INGOT_OK) FZ_ST(st_t, INGOT_TRUNCATED);
                else FZ_CHECK(st_t != INGOT_OK);
            }
        } else {
            FZ_CHECK(st != INGOT_OK);
        }
    } else {
        FZ_CHECK(st != INGOT_OK && need == 0);
    }

    if (st == INGOT_OK) {
        FZ_CHECK(h != NULL);
        walk(r, h, data, size);
        /* The hosted API accepts what the strict reader accepts, header checksum included. */
        ingot_file *f = NULL;
        ingot_open_opts o = {.verify = INGOT_VERIFY_HEADER};
        FZ_ST(ingot_file_open_buffer(data, size, &o, &f, NULL), INGOT_OK);
        FZ_CHECK(ingot_file_tensor_count(f) == ingot_native_tensor_count(r));
        ingot_file_close(f);
    }
    return 0;
}
