/*
 * fuzz_open_native.c - libFuzzer target: open a .ingot image from a buffer (VERIFY_NONE,
 * VERIFY_HEADER and VERIFY_ALL) and call every getter on it: every tensor by index and by name,
 * the first and last byte of its data (pointer and ingot_file_tensor_read), every metadata entry
 * by index and by key, every typed getter on every key (a mismatch must be WRONG_TYPE), arrays
 * element-wise, per-tensor and whole-file verification. Every result is checked against what the
 * file's bytes say, computed here independently of the reader.
 *
 * Fuzz builds define FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION, so the ingot_file adapter skips the
 * header CRC at open and the fuzzer gets past it (fuzz_native_strict keeps it on). The same source
 * runs in plain builds through replay_main.c; the checks hold in both modes.
 */
#include "file.h" /* ingot__verify_chunk: vary the verification chunking */
#include "fuzz_common.h"

typedef struct {
    const uint8_t *d;
    size_t size;
    const ingot_native *r; /* the freestanding reader over the same bytes (CRC skipped) */
} ctx;

/* What ingot_file_tensor_verify(i) must return, from the stored CRC and the padding bytes. */
static ingot_status expect_tensor_verify(const ctx *c, uint64_t i, const ingot_tensor_info *t,
                                         uint64_t count)
{
    uint32_t stored;
    FZ_ST(ingot_native_tensor_crc(c->r, i, &stored), INGOT_OK);
    if (ingot_crc32c(0, t->data, (size_t)t->nbytes) != stored) return INGOT_BAD_CHECKSUM;
    uint64_t end = t->offset + t->nbytes, next = end;
    if (i + 1 < count) {
        ingot_tensor_info n;
        FZ_ST(ingot_native_tensor_at(c->r, i + 1, &n), INGOT_OK);
        next = n.offset;
    }
    for (uint64_t k = end; k < next; k++)
        if (c->d[k]) return INGOT_BAD_LAYOUT;
    return INGOT_OK;
}

static void check_tensors(const ingot_file *f, const ctx *c, ingot_status *first_fail)
{
    uint64_t n = ingot_file_tensor_count(f), align = ingot_file_alignment(f);
    FZ_CHECK(n == ingot_native_tensor_count(c->r));
    FZ_CHECK(n <= c->size / 30); /* entry, index slot, 1-byte name and NUL */
    uint64_t prev_end = 0;
    for (uint64_t i = 0; i < n; i++) {
        ingot_tensor_info t, u;
        FZ_ST(ingot_file_tensor_at(f, i, &t), INGOT_OK);
        FZ_CHECK(t.index == i);
        FZ_CHECK(t.name && t.name_len >= 1 && t.name_len <= 65535);
        FZ_CHECK(fz_inside(t.name, t.name_len + 1, c->d, c->size));
        FZ_CHECK(strlen(t.name) == t.name_len); /* NUL after, none inside */
        FZ_CHECK(fz_utf8((const uint8_t *)t.name, t.name_len, false));
        FZ_CHECK(ingot_dtype_valid(t.dtype) && ingot_dtype_name(t.dtype) != NULL);
        FZ_CHECK(t.rank <= INGOT_MAX_RANK);
        for (uint32_t d = 0; d < INGOT_MAX_RANK; d++) {
            FZ_CHECK(t.strides[d] == 0);
            if (d >= t.rank) FZ_CHECK(t.shape[d] == 0);
        }
        uint64_t ne, nb;
        FZ_ST(ingot_dtype_nbytes(t.dtype, t.rank, t.shape, &ne, &nb), INGOT_OK);
        FZ_CHECK(ne == t.nelem && nb == t.nbytes);
        uint64_t be = ingot_dtype_block_elems(t.dtype), bb = ingot_dtype_block_bytes(t.dtype);
        FZ_CHECK(be && bb && t.nelem % be == 0 && t.nbytes == t.nelem / be * bb);
        FZ_CHECK(t.offset % align == 0 && t.offset >= prev_end);
        FZ_CHECK(t.offset <= c->size && t.nbytes <= c->size - t.offset);
        FZ_CHECK(t.data == c->d + t.offset);
        FZ_CHECK((t.flags & ~(uint32_t)(INGOT_TENSOR_HAS_CHECKSUM | INGOT_TENSOR_HAS_PARAM_ID)) ==
                 0);
        FZ_CHECK(t.flags & INGOT_TENSOR_HAS_CHECKSUM);
        if (!(t.flags & INGOT_TENSOR_HAS_PARAM_ID)) FZ_CHECK(t.param_id == 0);
        prev_end = t.offset + t.nbytes;

        /* the stored bytes: first and last through the pointer and through tensor_read */
        uint8_t b = 0xEE;
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
        FZ_ST(ingot_file_tensor_read(f, i, t.nbytes, &b, 0, NULL), INGOT_OK);
        ingot_error e;
        fz_err_reset(&e);
        ingot_status st = ingot_file_tensor_read(f, i, t.nbytes, &b, 1, &e);
        FZ_ST(st, INGOT_RANGE);
        fz_err_check(&e, st);
        FZ_ST(ingot_file_tensor_read(f, i, UINT64_MAX, &b, 1, NULL), INGOT_RANGE);

        /* lookups by name find this very tensor */
        FZ_ST(ingot_file_tensor_find(f, t.name, &u), INGOT_OK);
        FZ_CHECK(u.index == i && u.offset == t.offset && u.name == t.name);
        FZ_ST(ingot_file_tensor_findn(f, t.name, t.name_len, &u), INGOT_OK);
        FZ_CHECK(u.index == i);
        ingot_status pst = ingot_file_tensor_findn(f, t.name, t.name_len - 1, &u);
        FZ_CHECK(pst == INGOT_OK || pst == INGOT_NOT_FOUND);
        if (pst == INGOT_OK) FZ_CHECK(u.name_len == t.name_len - 1 && u.index != i);

        /* checksum and padding, against an independent computation; then (ingot_file_* only,
         * not the freestanding reader) the BOOL values */
        ingot_status want = expect_tensor_verify(c, i, &t, n);
        FZ_ST(ingot_native_tensor_verify(c->r, i, NULL), want);
        if (want == INGOT_OK) want = fz_values_status(t.dtype, t.data, t.nbytes);
        fz_err_reset(&e);
        st = ingot_file_tensor_verify(f, i, &e);
        FZ_ST(st, want);
        fz_err_check(&e, st);
        if (want != INGOT_OK && *first_fail == INGOT_OK) *first_fail = want;
    }
    ingot_tensor_info t;
    FZ_ST(ingot_file_tensor_at(f, n, &t), INGOT_RANGE);
    FZ_ST(ingot_file_tensor_read(f, n, 0, &t, 0, NULL), INGOT_RANGE);
    FZ_ST(ingot_file_tensor_verify(f, n, NULL), INGOT_RANGE);
    FZ_ST(ingot_file_tensor_findn(f, "\xff", 1, &t), INGOT_NOT_FOUND); /* never valid UTF-8 */
    FZ_ST(ingot_file_tensor_findn(f, NULL, 0, &t), INGOT_NOT_FOUND);   /* names are non-empty */
    /* the data section ends with the last tensor, at the end of the file */
    FZ_CHECK((n ? prev_end : ingot_native_data_offset(c->r)) == c->size);
}

/* Calls every typed scalar getter on key; exactly the one of the stored type may succeed. */
static void check_scalar_getters(const ingot_file *f, const ingot_meta_info *m)
{
    const char *k = m->key;
    bool sc = !m->is_array;
    union {
        uint8_t u8;
        uint16_t u16;
        uint32_t u32;
        uint64_t u64;
        int8_t i8;
        int16_t i16;
        int32_t i32;
        int64_t i64;
        float f32;
        double f64;
        bool b;
    } v;
#define GET(fn, T, field, expect)                                                                  \
    do {                                                                                           \
        ingot_status st_ = fn(f, k, &v.field);                                                     \
        if (sc && m->type == INGOT_META_##T) {                                                     \
            FZ_ST(st_, INGOT_OK);                                                                  \
            FZ_CHECK(expect);                                                                      \
        } else {                                                                                   \
            FZ_ST(st_, INGOT_WRONG_TYPE);                                                          \
        }                                                                                          \
    } while (0)
    GET(ingot_file_meta_get_u8, U8, u8, v.u8 == m->v.u && m->v.u <= UINT8_MAX);
    GET(ingot_file_meta_get_u16, U16, u16, v.u16 == m->v.u && m->v.u <= UINT16_MAX);
    GET(ingot_file_meta_get_u32, U32, u32, v.u32 == m->v.u && m->v.u <= UINT32_MAX);
    GET(ingot_file_meta_get_u64, U64, u64, v.u64 == m->v.u);
    GET(ingot_file_meta_get_i8, I8, i8, v.i8 == m->v.i);
    GET(ingot_file_meta_get_i16, I16, i16, v.i16 == m->v.i);
    GET(ingot_file_meta_get_i32, I32, i32, v.i32 == m->v.i);
    GET(ingot_file_meta_get_i64, I64, i64, v.i64 == m->v.i);
    GET(ingot_file_meta_get_f32, F32, f32,
        (v.f32 != v.f32 && m->v.f != m->v.f) || (double)v.f32 == m->v.f);
    GET(ingot_file_meta_get_f64, F64, f64,
        (v.f64 != v.f64 && m->v.f != m->v.f) || memcmp(&v.f64, &m->v.f, 8) == 0);
    GET(ingot_file_meta_get_bool, BOOL, b, v.b == m->v.b);
#undef GET
    const char *s = NULL;
    const void *p = NULL;
    size_t len = 0;
    ingot_status st = ingot_file_meta_get_string(f, k, &s, &len);
    if (sc && m->type == INGOT_META_STRING) {
        FZ_ST(st, INGOT_OK);
        FZ_CHECK(s == m->data && len == m->count);
    } else {
        FZ_ST(st, INGOT_WRONG_TYPE);
    }
    st = ingot_file_meta_get_bytes(f, k, &p, &len);
    if (sc && m->type == INGOT_META_BYTES) {
        FZ_ST(st, INGOT_OK);
        FZ_CHECK(p == m->data && len == m->count);
    } else {
        FZ_ST(st, INGOT_WRONG_TYPE);
    }
    for (int t = INGOT_META_U8; t <= INGOT_META_BYTES; t++) {
        uint64_t cnt = UINT64_MAX;
        st = ingot_file_meta_get_array(f, k, (ingot_meta_type)t, &cnt);
        if (m->is_array && m->type == (ingot_meta_type)t) {
            FZ_ST(st, INGOT_OK);
            FZ_CHECK(cnt == m->count);
        } else {
            FZ_ST(st, INGOT_WRONG_TYPE);
        }
    }
}

static void check_array(const ingot_file *f, const ctx *c, const ingot_meta_info *m)
{
    uint64_t i = m->index, n = m->count;
    ingot_meta_type other = (ingot_meta_type)(m->type % INGOT_META_BYTES + 1);
    uint32_t esz = ingot_meta_type_size(m->type);
    if (esz) {
        FZ_CHECK(n <= c->size / esz);
        uint8_t *all = malloc(n * esz + 1);
        FZ_CHECK(all);
        FZ_ST(ingot_file_meta_array_read(f, i, m->type, 0, n, all), INGOT_OK);
        for (uint64_t k = 0; k < n; k++) {
            uint8_t one[8];
            FZ_ST(ingot_file_meta_array_read(f, i, m->type, k, 1, one), INGOT_OK);
            FZ_CHECK(memcmp(one, all + k * esz, esz) == 0);
            if (m->type == INGOT_META_BOOL) FZ_CHECK(one[0] <= 1);
        }
        free(all);
        uint8_t one[8];
        FZ_ST(ingot_file_meta_array_read(f, i, m->type, n, 0, one), INGOT_OK);
        FZ_ST(ingot_file_meta_array_read(f, i, m->type, n, 1, one), INGOT_RANGE);
        FZ_ST(ingot_file_meta_array_read(f, i, m->type, 1, UINT64_MAX, one), INGOT_RANGE);
        FZ_ST(ingot_file_meta_array_read(f, i, m->type, UINT64_MAX, 1, one), INGOT_RANGE);
        FZ_ST(ingot_file_meta_array_read(f, i, other, 0, 0, one), INGOT_WRONG_TYPE);
        const char *s;
        size_t len;
        FZ_ST(ingot_file_meta_array_string(f, i, 0, &s, &len), INGOT_WRONG_TYPE);
        return;
    }
    FZ_CHECK(n <= c->size / 4); /* a packed element takes 4 bytes of offsets at least */
    for (uint64_t k = 0; k < n; k++) {
        const char *s = NULL;
        size_t len = SIZE_MAX;
        FZ_ST(ingot_file_meta_array_string(f, i, k, &s, &len), INGOT_OK);
        FZ_CHECK(fz_inside(s, len, c->d, c->size));
        if (m->type == INGOT_META_STRING) {
            FZ_CHECK(fz_inside(s, (uint64_t)len + 1, c->d, c->size) && s[len] == 0);
            FZ_CHECK(fz_utf8((const uint8_t *)s, len, true));
        }
    }
    const char *s;
    size_t len;
    FZ_ST(ingot_file_meta_array_string(f, i, n, &s, &len), INGOT_RANGE);
    uint8_t one[8];
    FZ_ST(ingot_file_meta_array_read(f, i, m->type, 0, 0, one), INGOT_WRONG_TYPE);
    FZ_ST(ingot_file_meta_array_read(f, i, INGOT_META_U8, 0, 0, one), INGOT_WRONG_TYPE);
}

static void check_meta(const ingot_file *f, const ctx *c)
{
    uint64_t n = ingot_file_meta_count(f);
    FZ_CHECK(n == ingot_native_meta_count(c->r));
    FZ_CHECK(n <= c->size / 32);
    const char *prev = NULL;
    size_t prev_len = 0;
    for (uint64_t i = 0; i < n; i++) {
        ingot_meta_info m, q;
        FZ_ST(ingot_file_meta_at(f, i, &m), INGOT_OK);
        FZ_CHECK(m.index == i);
        FZ_CHECK(m.key_len >= 1 && m.key_len <= 65535);
        FZ_CHECK(fz_inside(m.key, m.key_len + 1, c->d, c->size));
        FZ_CHECK(strlen(m.key) == m.key_len);
        FZ_CHECK(fz_utf8((const uint8_t *)m.key, m.key_len, false));
        FZ_CHECK(m.type >= INGOT_META_U8 && m.type <= INGOT_META_BYTES);
        FZ_CHECK(ingot_meta_type_name(m.type) != NULL);
        if (prev) FZ_CHECK(fz_bytes_cmp(prev, prev_len, m.key, m.key_len) < 0);
        prev = m.key;
        prev_len = m.key_len;

        FZ_ST(ingot_file_meta_find(f, m.key, &q), INGOT_OK);
        FZ_CHECK(q.index == i && q.key == m.key && q.type == m.type &&
                 q.is_array == m.is_array && q.count == m.count && q.data == m.data);

        bool blob = m.type == INGOT_META_STRING || m.type == INGOT_META_BYTES;
        if (!m.is_array && blob) {
            FZ_CHECK(fz_inside(m.data, m.count, c->d, c->size));
            if (m.type == INGOT_META_STRING) {
                FZ_CHECK(fz_inside(m.data, m.count + 1, c->d, c->size));
                FZ_CHECK(((const char *)m.data)[m.count] == 0);
                FZ_CHECK(fz_utf8(m.data, m.count, true));
            }
        } else if (!m.is_array) {
            FZ_CHECK(m.count == 1 && m.data == NULL);
        } else {
            FZ_CHECK(m.data == NULL);
        }
        check_scalar_getters(f, &m);
        if (m.is_array) {
            check_array(f, c, &m);
        } else {
            uint8_t one[8];
            const char *s;
            size_t len;
            FZ_ST(ingot_file_meta_array_read(f, i, m.type, 0, 0, one), INGOT_WRONG_TYPE);
            FZ_ST(ingot_file_meta_array_string(f, i, 0, &s, &len), INGOT_WRONG_TYPE);
        }
    }
    ingot_meta_info m;
    FZ_ST(ingot_file_meta_at(f, n, &m), INGOT_RANGE);
    FZ_ST(ingot_file_meta_find(f, "", &m), INGOT_NOT_FOUND);
    FZ_ST(ingot_file_meta_find(f, "\xff", &m), INGOT_NOT_FOUND);
    uint8_t one[8];
    const char *s;
    size_t len;
    FZ_ST(ingot_file_meta_array_read(f, n, INGOT_META_U8, 0, 0, one), INGOT_RANGE);
    FZ_ST(ingot_file_meta_array_string(f, n, 0, &s, &len), INGOT_RANGE);
    uint32_t u32;
    FZ_ST(ingot_file_meta_get_u32(f, "\xff", &u32), INGOT_NOT_FOUND);
}

/* Everything on one opened file; returns what ingot_file_verify() must report (and checks it). */
static ingot_status exercise(const ingot_file *f, const ctx *c)
{
    FZ_CHECK(strcmp(ingot_file_format(f), "ingot") == 0);
    FZ_CHECK(ingot_file_size(f) == c->size);
    const char *ver = ingot_file_version(f);
    FZ_CHECK(ver && ver[0] == '1' && ver[1] == '.');
    uint64_t a = ingot_file_alignment(f);
    FZ_CHECK(a >= 64 && a <= 65536 && (a & (a - 1)) == 0);
    FZ_CHECK(a == ingot_native_alignment(c->r));

    ingot_status first_fail = INGOT_OK;
    check_tensors(f, c, &first_fail);
    check_meta(f, c);

    ingot_status want = !fz_header_crc_ok(c->d, c->size) ? INGOT_BAD_CHECKSUM : first_fail;
    ingot_error e;
    fz_err_reset(&e);
    ingot_status st = ingot_file_verify(f, 1, &e);
    FZ_ST(st, want);
    fz_err_check(&e, st);
    return want;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* Small verification chunks sometimes, so chunk CRCs are combined (results must not change). */
    size_t saved_chunk = ingot__verify_chunk;
    ingot__verify_chunk = (size & 3) == 1 ? 61 + size % 193 : saved_chunk;

    /* The .ingot adapter by name: with detection, bytes in another registered format (a 24-byte
     * "MAG!" file, say) open through that format's adapter, which this target does not test. */
    ingot_open_opts none = {.verify = INGOT_VERIFY_NONE, .format = "ingot"};
    ingot_open_opts hdr = {.verify = INGOT_VERIFY_HEADER, .format = "ingot"};
    ingot_open_opts all = {.verify = INGOT_VERIFY_ALL, .threads = 1, .format = "ingot"};
    ingot_file *fn = (ingot_file *)1, *fh = (ingot_file *)1, *fa = (ingot_file *)1;
    ingot_error en, eh, ea;
    fz_err_reset(&en);
    fz_err_reset(&eh);
    fz_err_reset(&ea);
    ingot_status sn = ingot_file_open_buffer(data, size, &none, &fn, &en);
    ingot_status sh = ingot_file_open_buffer(data, size, &hdr, &fh, &eh);
    fz_err_check(&en, sn);
    fz_err_check(&eh, sh);
    FZ_CHECK((sn == INGOT_OK) == (fn != NULL));
    FZ_CHECK((sh == INGOT_OK) == (fh != NULL));

    /* The freestanding reader over the same bytes agrees on acceptance. */
    _Alignas(8) unsigned char ws[INGOT_NATIVE_WORKSPACE];
    ingot_native *r = NULL;
    ingot_status sr = ingot_native_open(ws, sizeof ws, data, size, size,
                                        INGOT_NATIVE_SKIP_HEADER_CRC, &r, NULL);
    FZ_CHECK((sr == INGOT_OK) == (sn == INGOT_OK));
    if (size == 0) FZ_ST(sn, INGOT_TRUNCATED);

    bool crc_ok = sn == INGOT_OK && fz_header_crc_ok(data, size);
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
    FZ_ST(sh, sn); /* the header CRC is skipped in fuzz builds */
#else
    if (sn == INGOT_OK) FZ_ST(sh, crc_ok ? INGOT_OK : INGOT_BAD_CHECKSUM);
    else FZ_ST(sh, sn);
#endif
    if (sn == INGOT_OK) {
        ctx c = {data, size, r};
        ingot_status want = exercise(fn, &c);
        /* VERIFY_ALL at open reports exactly what ingot_file_verify() reports. */
        ingot_status sa = ingot_file_open_buffer(data, size, &all, &fa, &ea);
        fz_err_check(&ea, sa);
        FZ_ST(sa, want);
        if (fh) {
            FZ_CHECK(ingot_file_tensor_count(fh) == ingot_file_tensor_count(fn));
            FZ_CHECK(ingot_file_meta_count(fh) == ingot_file_meta_count(fn));
        }
    } else {
        ingot_status sa = ingot_file_open_buffer(data, size, &all, &fa, &ea);
        fz_err_check(&ea, sa);
        FZ_ST(sa, sn);
    }
    FZ_CHECK((fa == NULL) == (ea.code != FZ_ERR_SENTINEL));
    (void)crc_ok;
    ingot_file_close(fa);
    ingot_file_close(fh);
    ingot_file_close(fn);
    ingot__verify_chunk = saved_chunk;
    return 0;
}
