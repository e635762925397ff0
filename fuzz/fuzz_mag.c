/*
 * fuzz_mag.c - libFuzzer target for both magnetron .mag descriptors ("mag", the storage archive,
 * and "mag-snapshot"): open the input forced to each and detected, with VERIFY_NONE, _HEADER and
 * _ALL; call every getter (tensors by index and name, first/last data byte by pointer, tensor_read
 * and tensor_copy, metadata by index and key, typed getters with the mismatch answer); predict
 * ingot_file_verify from the bytes (header CRC-32C window, 0xFF block padding) computed here
 * independently of the reader; and, when it opens, write it back through the writer and check the
 * result reopens with the same contents and is deterministic.
 *
 * Fuzz builds define FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION, so open skips the CRC (verify
 * still checks it). The same source replays the corpus in plain builds; the checks hold in both.
 */
#include "fuzz_common.h"

static bool utf8_ok(const uint8_t *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        uint8_t c = s[i];
        if (c == 0) return false;
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 0;
        if (!len || c >= 0xf5 || c == 0xc0 || c == 0xc1 || i + len > n) return false;
        for (size_t k = 1; k < len; k++)
            if ((s[i + k] & 0xc0) != 0x80) return false;
        if (c == 0xe0 && s[i + 1] < 0xa0) return false;
        if (c == 0xed && s[i + 1] >= 0xa0) return false;
        if (c == 0xf0 && s[i + 1] < 0x90) return false;
        if (c == 0xf4 && s[i + 1] >= 0x90) return false;
        i += len;
    }
    return true;
}

/* End of the storage archive's records (the CRC window's end), walked here from the header. */
static uint64_t records_end_a(const uint8_t *d)
{
    uint64_t pos = 24;
    uint32_t nt = fz_ld32(d + 12), nm = fz_ld32(d + 16);
    for (uint32_t i = 0; i < nm; i++) pos += 16 + fz_ld32(d + pos + 12);
    for (uint32_t i = 0; i < nt; i++) {
        uint32_t rank = (fz_ld32(d + pos) >> 8) & 0xff;
        pos += 24 + 8 * (uint64_t)rank + fz_ld32(d + pos + 20 + 8 * (uint64_t)rank);
    }
    return pos;
}

/* What ingot_file_verify must say about an open file. */
static ingot_status expect_verify(const ingot_file *f, const uint8_t *d, size_t size, bool snap)
{
    uint64_t lo, hi;
    uint32_t stored;
    uint64_t nt = ingot_file_tensor_count(f);
    if (snap) {
        uint64_t data = size;
        for (uint64_t i = 0; i < nt; i++) {
            ingot_tensor_info t;
            FZ_ST(ingot_file_tensor_at(f, i, &t), INGOT_OK);
            data -= t.nbytes;
        }
        FZ_CHECK(data >= 36 && memcmp(d + data - 4, "BUF!", 4) == 0);
        lo = 20, hi = data - 4, stored = fz_ld32(d + 16);
    } else {
        lo = 12, hi = records_end_a(d), stored = fz_ld32(d + 8);
    }
    FZ_CHECK(hi <= size);
    if (ingot_crc32c(0, d + lo, (size_t)(hi - lo)) != stored) return INGOT_BAD_CHECKSUM;
    for (uint64_t i = 0; i < nt; i++) { /* per tensor: its padding, then its BOOL values */
        ingot_tensor_info t;
        FZ_ST(ingot_file_tensor_at(f, i, &t), INGOT_OK);
        for (uint64_t k = t.offset + t.nbytes; !snap && k % 64; k++)
            if (d[k] != 0xff) return INGOT_BAD_LAYOUT;
        ingot_status vs = fz_values_status(t.dtype, d + t.offset, t.nbytes);
        if (vs != INGOT_OK) return vs;
    }
    return INGOT_OK;
}

static void check_file(const ingot_file *f, const uint8_t *d, size_t size, bool snap)
{
    FZ_CHECK(strcmp(ingot_file_format(f), snap ? "mag-snapshot" : "mag") == 0);
    FZ_CHECK(ingot_file_alignment(f) == (snap ? 1u : 64u));
    uint64_t n = ingot_file_tensor_count(f), prev_end = 0;
    FZ_CHECK(n <= size / 24);
    for (uint64_t i = 0; i < n; i++) {
        ingot_tensor_info t, u;
        FZ_ST(ingot_file_tensor_at(f, i, &t), INGOT_OK);
        FZ_CHECK(t.index == i && t.name && t.name_len >= 1 && t.name_len <= 65535);
        FZ_CHECK(strlen(t.name) == t.name_len && utf8_ok((const uint8_t *)t.name, t.name_len));
        FZ_CHECK(ingot_dtype_valid(t.dtype) && ingot_dtype_block_elems(t.dtype) == 1);
        FZ_CHECK(snap ? t.rank <= INGOT_MAX_RANK : t.rank >= 1 && t.rank <= INGOT_MAX_RANK);
        uint64_t ne, nb;
        FZ_ST(ingot_dtype_nbytes(t.dtype, t.rank, t.shape, &ne, &nb), INGOT_OK);
        FZ_CHECK(ne == t.nelem && nb == t.nbytes && ne >= 1);
        for (uint32_t k = 0; k < INGOT_MAX_RANK; k++) {
            FZ_CHECK(t.strides[k] == 0);
            if (k < t.rank) FZ_CHECK(t.shape[k] >= 1);
            else FZ_CHECK(t.shape[k] == 0);
        }
        FZ_CHECK(t.offset >= prev_end && t.offset <= size && t.nbytes <= size - t.offset);
        if (!snap) FZ_CHECK(t.offset % 64 == 0);
        else FZ_CHECK(i == 0 || t.offset == prev_end);
        prev_end = t.offset + t.nbytes;
        FZ_CHECK(t.data == d + t.offset);
        uint32_t es = ingot_dtype_block_bytes(t.dtype);
        FZ_CHECK(t.flags == (((uintptr_t)t.data % es) ? (uint32_t)INGOT_TENSOR_UNALIGNED : 0u));
        uint8_t b = 0;
        const uint8_t *last = d + t.offset + t.nbytes - 1;
        ingot_status want = fz_values_status(t.dtype, last, 1);
        FZ_ST(ingot_file_tensor_read(f, i, t.nbytes - 1, &b, 1, NULL), want);
        if (want == INGOT_OK) FZ_CHECK(b == *last);
        want = fz_values_status(t.dtype, d + t.offset, 1);
        FZ_ST(ingot_file_tensor_read(f, i, 0, &b, 1, NULL), want);
        if (want == INGOT_OK) FZ_CHECK(b == d[t.offset]);
        FZ_ST(ingot_file_tensor_read(f, i, t.nbytes, &b, 1, NULL), INGOT_RANGE);
        if (t.nbytes <= 4096) {
            uint8_t buf[4096];
            want = fz_values_status(t.dtype, t.data, t.nbytes);
            FZ_ST(ingot_file_tensor_copy(f, i, buf, sizeof buf, NULL), want);
            if (want == INGOT_OK) FZ_CHECK(memcmp(buf, t.data, (size_t)t.nbytes) == 0);
        }
        FZ_ST(ingot_file_tensor_findn(f, t.name, t.name_len, &u), INGOT_OK);
        FZ_CHECK(u.index == i && u.offset == t.offset); /* names are unique */
    }
    ingot_tensor_info t;
    FZ_ST(ingot_file_tensor_at(f, n, &t), INGOT_RANGE);
    uint64_t m = ingot_file_meta_count(f);
    if (snap) FZ_CHECK(m == 0);
    for (uint64_t i = 0; i < m; i++) {
        ingot_meta_info e, g;
        FZ_ST(ingot_file_meta_at(f, i, &e), INGOT_OK);
        FZ_CHECK(e.index == i && !e.is_array && e.count == 1 && !e.data);
        FZ_CHECK(e.type == INGOT_META_I64 || e.type == INGOT_META_F64);
        FZ_CHECK(e.key_len >= 1 && e.key_len <= 65535);
        FZ_CHECK((const uint8_t *)e.key >= d && (const uint8_t *)e.key + e.key_len <= d + size);
        FZ_CHECK(utf8_ok((const uint8_t *)e.key, e.key_len));
        char key[65536];
        memcpy(key, e.key, e.key_len);
        key[e.key_len] = 0;
        FZ_ST(ingot_file_meta_find(f, key, &g), INGOT_OK);
        FZ_CHECK(g.index == i);
        int64_t iv;
        double dv;
        if (e.type == INGOT_META_I64) {
            FZ_ST(ingot_file_meta_get_i64(f, key, &iv), INGOT_OK);
            FZ_CHECK(iv == e.v.i);
            FZ_ST(ingot_file_meta_get_f64(f, key, &dv), INGOT_WRONG_TYPE);
        } else {
            FZ_ST(ingot_file_meta_get_f64(f, key, &dv), INGOT_OK);
            FZ_ST(ingot_file_meta_get_i64(f, key, &iv), INGOT_WRONG_TYPE);
        }
        FZ_ST(ingot_file_meta_array_read(f, i, INGOT_META_I64, 0, 1, &iv), INGOT_WRONG_TYPE);
    }
    ingot_status want = expect_verify(f, d, size, snap);
    FZ_ST(ingot_file_verify(f, 1, NULL), want);
    if (want == INGOT_OK)
        for (uint64_t i = 0; i < n; i++) FZ_ST(ingot_file_tensor_verify(f, i, NULL), INGOT_OK);
}

/* Writes f back in its own format; the result must reopen with the same contents, and a second
 * write must give the same bytes. A snapshot holding a rank-64 tensor (upstream writes it) is
 * refused instead: upstream's reader takes ranks below 64. */
static void rewrite(const ingot_file *f, bool snap)
{
    uint8_t *out[2] = {NULL, NULL};
    size_t len[2] = {0, 0};
    bool rank64 = false;
    ingot_status values = INGOT_OK; /* the writer refuses BOOL bytes other than 0 and 1 */
    for (uint64_t i = 0; i < ingot_file_tensor_count(f); i++) {
        ingot_tensor_info t;
        FZ_ST(ingot_file_tensor_at(f, i, &t), INGOT_OK);
        rank64 = rank64 || t.rank >= 64;
        if (values == INGOT_OK) values = fz_values_status(t.dtype, t.data, t.nbytes);
    }
    for (int k = 0; k < 2; k++) {
        ingot_writer_opts o = {0};
        o.format = snap ? "mag-snapshot" : "mag";
        ingot_writer *w;
        FZ_ST(ingot_writer_new(&o, &w, NULL), INGOT_OK);
        if (!snap && strcmp(ingot_file_version(f), "1") == 0)
            FZ_ST(ingot_writer_set_option(w, "version", "1", NULL), INGOT_OK);
        for (uint64_t i = 0; i < ingot_file_meta_count(f); i++) {
            ingot_meta_info e;
            FZ_ST(ingot_file_meta_at(f, i, &e), INGOT_OK);
            char key[65536];
            memcpy(key, e.key, e.key_len);
            key[e.key_len] = 0;
            FZ_ST(e.type == INGOT_META_I64 ? ingot_writer_set_i64(w, key, e.v.i)
                                           : ingot_writer_set_f64(w, key, e.v.f),
                  INGOT_OK);
        }
        for (uint64_t i = 0; i < ingot_file_tensor_count(f); i++) {
            ingot_tensor_info t;
            FZ_ST(ingot_file_tensor_at(f, i, &t), INGOT_OK);
            FZ_ST(ingot_writer_add_tensor(w, t.name, t.dtype, t.rank, t.shape, NULL, t.data, NULL),
                  INGOT_OK);
        }
        void *p = NULL;
        if (snap && rank64) {
            FZ_ST(ingot_writer_begin_mem(w, NULL), INGOT_UNSUPPORTED);
            ingot_writer_free(w);
            return;
        }
        if (values != INGOT_OK) {
            FZ_ST(ingot_writer_begin_mem(w, NULL), values);
            ingot_writer_free(w);
            return;
        }
        FZ_ST(ingot_writer_begin_mem(w, NULL), INGOT_OK);
        FZ_ST(ingot_writer_commit_mem(w, &p, &len[k], NULL), INGOT_OK);
        out[k] = p;
        ingot_writer_free(w);
    }
    FZ_CHECK(len[0] == len[1] && memcmp(out[0], out[1], len[0]) == 0);
    ingot_file *g = NULL;
    ingot_open_opts o = {0};
    o.format = snap ? "mag-snapshot" : "mag";
    FZ_ST(ingot_file_open_buffer(out[0], len[0], &o, &g, NULL), INGOT_OK);
    FZ_ST(ingot_file_verify(g, 1, NULL), INGOT_OK); /* only valid values were written */
    FZ_CHECK(ingot_file_tensor_count(g) == ingot_file_tensor_count(f));
    FZ_CHECK(ingot_file_meta_count(g) == ingot_file_meta_count(f));
    for (uint64_t i = 0; i < ingot_file_tensor_count(f); i++) {
        ingot_tensor_info a, b;
        FZ_ST(ingot_file_tensor_at(f, i, &a), INGOT_OK);
        FZ_ST(ingot_file_tensor_find(g, a.name, &b), INGOT_OK);
        FZ_CHECK(a.dtype == b.dtype && a.rank == b.rank && a.nbytes == b.nbytes);
        FZ_CHECK(memcmp(a.shape, b.shape, sizeof a.shape) == 0);
        FZ_CHECK(memcmp(a.data, b.data, (size_t)a.nbytes) == 0);
    }
    for (uint64_t i = 0; i < ingot_file_meta_count(f); i++) {
        ingot_meta_info a, b;
        FZ_ST(ingot_file_meta_at(f, i, &a), INGOT_OK);
        char key[65536];
        memcpy(key, a.key, a.key_len);
        key[a.key_len] = 0;
        FZ_ST(ingot_file_meta_find(g, key, &b), INGOT_OK);
        FZ_CHECK(a.type == b.type && a.v.u == b.v.u);
    }
    ingot_file_close(g);
    ingot_writer_free_mem(NULL, out[0], len[0]);
    ingot_writer_free_mem(NULL, out[1], len[1]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const fmts[] = {"mag", "mag-snapshot", NULL};
    for (int k = 0; k < 3; k++) {
        for (int v = 0; v < 3; v++) {
            ingot_open_opts o = {0};
            o.format = fmts[k];
            o.verify = (ingot_verify_mode)v;
            ingot_file *f = NULL;
            ingot_error e;
            e.code = FZ_ERR_SENTINEL;
            ingot_status st = ingot_file_open_buffer(data, size, &o, &f, &e);
            FZ_CHECK(fz_known_status(st));
            if (st != INGOT_OK) {
                FZ_CHECK(!f && e.code == st);
                continue;
            }
            const char *name = ingot_file_format(f);
            bool snap = strcmp(name, "mag-snapshot") == 0;
            if (!snap && strcmp(name, "mag") != 0) { /* detected as another format */
                FZ_CHECK(k == 2);
                ingot_file_close(f);
                continue;
            }
            if (k < 2) FZ_CHECK(strcmp(name, fmts[k]) == 0); /* forced: no fallback */
            if (v == INGOT_VERIFY_ALL) FZ_ST(expect_verify(f, data, size, snap), INGOT_OK);
            check_file(f, data, size, snap);
            uint64_t total = 0;
            for (uint64_t i = 0; i < ingot_file_tensor_count(f); i++) {
                ingot_tensor_info t;
                ingot_file_tensor_at(f, i, &t);
                total += t.nbytes;
            }
            if (v == INGOT_VERIFY_NONE && total <= (1u << 20)) rewrite(f, snap);
            ingot_file_close(f);
        }
    }
    return 0;
}
