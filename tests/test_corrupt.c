/* test_corrupt.c - corruption sweeps and randomized round trips of the native .ingot format.
 *
 *  (a) every truncation point of a valid file (9 tensors on 8 shape records, param ids, metadata
 *      of every type, alignment 64) fails cleanly, from a buffer, by path (mmap, pread) and
 *      through ingot_native_open();
 *  (b) every single-byte corruption (xor 0x01, xor 0xff) at every offset is detected by open or
 *      by ingot_file_verify(), with the status the region implies;
 *  (c) 200 seeded random tensor sets (every dtype, ranks 0..8, zero dims, UTF-8 names, metadata of
 *      every type, alignments 64..65536, param ids, pointer and chunked pushes) written to memory
 *      and to a file, byte-identical, reopened and compared field by field.
 */
#include <fcntl.h>
#include <stdalign.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "files.h"
#include "ingot/native.h"

#define GEN_BASE_ONLY
#include "gen_bad_corpus.c"



static uint64_t rd64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int k = 7; k >= 0; k--) v = v << 8 | p[k];
    return v;
}

static ingot_status open_path(const char *path, ingot_io_mode io, bool detect, ingot_file **f,
                              ingot_error *e)
{
    ingot_open_opts o = {.io = io, .format = detect ? NULL : "ingot"};
    return ingot_file_open(path, &o, f, e);
}

/* Touches everything an open file exposes, so ASan/UBSan see every pointer the reader hands out
 * for a file that passed validation (with or without checksums). */
static void exercise(const ingot_file *f)
{
    volatile uint8_t sink = 0;
    for (uint64_t i = 0; i < ingot_file_tensor_count(f); i++) {
        ingot_tensor_info t, u;
        if (ingot_file_tensor_at(f, i, &t) != INGOT_OK) continue;
        CHECK(ingot_file_tensor_findn(f, t.name, t.name_len, &u) == INGOT_OK && u.index == i,
              "tensor %" PRIu64 " not found by its name", i);
        if (t.data && t.nbytes) sink ^= ((const uint8_t *)t.data)[0] ^
                                        ((const uint8_t *)t.data)[t.nbytes - 1];
        uint8_t b;
        if (t.nbytes) {
            /* A flip in a BOOL tensor accepted with checksums off can leave a byte other than 0
             * or 1: reads refuse it. Without a data pointer (pread mode) the byte is unknown. */
            ingot_status st = ingot_file_tensor_read(f, i, t.nbytes - 1, &b, 1, NULL);
            bool is_bool = t.dtype == INGOT_DTYPE_BOOL;
            bool bad = is_bool && t.data && ((const uint8_t *)t.data)[t.nbytes - 1] > 1;
            CHECK(st == (bad ? INGOT_BAD_VALUE : INGOT_OK) ||
                      (is_bool && !t.data && st == INGOT_BAD_VALUE),
                  "tensor_read: %s", ingot_status_name(st));
        }
    }
    for (uint64_t i = 0; i < ingot_file_meta_count(f); i++) {
        ingot_meta_info m, m2;
        if (ingot_file_meta_at(f, i, &m) != INGOT_OK) continue;
        char key[256];
        size_t kl = m.key_len < sizeof key - 1 ? m.key_len : sizeof key - 1;
        memcpy(key, m.key, kl);
        key[kl] = 0;
        if (kl == m.key_len && !memchr(key, 0, kl))
            CHECK(ingot_file_meta_find(f, key, &m2) == INGOT_OK && m2.index == i, "meta find");
        if (!m.is_array && m.data && m.count) sink ^= ((const uint8_t *)m.data)[m.count - 1];
        if (m.is_array && (m.type == INGOT_META_STRING || m.type == INGOT_META_BYTES)) {
            for (uint64_t k = 0; k < m.count && k < 64; k++) {
                const char *s;
                size_t sl;
                if (ingot_file_meta_array_string(f, i, k, &s, &sl) == INGOT_OK && sl)
                    sink ^= (uint8_t)s[sl - 1];
            }
        } else if (m.is_array && m.count) {
            uint64_t v[8];
            uint64_t n = m.count < 8 ? m.count : 8;
            CHECK(ingot_file_meta_array_read(f, i, m.type, m.count - n, n, v) == INGOT_OK,
                  "array_read");
        }
    }
    (void)sink;
}

/* ---- (a) truncation ---- */

TEST(test_every_truncation_point)
{
    static gbuf g;
    ASSERT_TRUE(gen_base(&g));
    size_t n = g.n;
    uint64_t data_off = rd64(g.b + HDR_DATA);
    ASSERT_TRUE(n > 1500 && data_off > 1000); /* a header region of ~1 KiB, then the data */
    /* the prefix is copied to the END of an n-byte allocation: any read past it hits the
     * redzone under ASan */
    uint8_t *mem = malloc(n);
    static alignas(8) unsigned char ws[INGOT_NATIVE_WORKSPACE];
    size_t unknown = 0, truncated = 0;
    for (size_t len = 0; len < n; len++) {
        uint8_t *img = mem + (n - len);
        memcpy(img, g.b, len);
        ingot_open_opts forced = {.format = "ingot"};
        ingot_file *f = NULL;
        ingot_error e;
        e.code = INGOT_OK;
        ingot_status st = ingot_file_open_buffer(img, len, &forced, &f, &e);
        CHECK(st == INGOT_TRUNCATED && f == NULL && e.code == st,
              "prefix %zu forced: %s (%s)", len, ingot_status_name(st), e.msg);
        st = ingot_file_open_buffer(img, len, NULL, &f, &e);
        /* fewer than 8 bytes cannot be recognised as .ingot at all */
        ingot_status want = len > 0 && len < ING_MAGIC_LEN ? INGOT_UNKNOWN_FORMAT : INGOT_TRUNCATED;
        CHECK(st == want && f == NULL, "prefix %zu detect: %s", len, ingot_status_name(st));
        unknown += st == INGOT_UNKNOWN_FORMAT;
        truncated += st == INGOT_TRUNCATED;
        ingot_native *r;
        st = ingot_native_open(ws, sizeof ws, img, len, len, 0, &r, &e);
        CHECK(st == INGOT_TRUNCATED && r == NULL, "prefix %zu native: %s", len,
              ingot_status_name(st));
        /* the same prefix as a partial view of the full file: fine once the header region is
         * there */
        st = ingot_native_open(ws, sizeof ws, img, len, n, 0, &r, &e);
        want = len < data_off ? INGOT_TRUNCATED : INGOT_OK;
        CHECK(st == want, "prefix %zu of %zu native partial: %s", len, n, ingot_status_name(st));
        if (st == INGOT_OK) {
            ingot_tensor_info t;
            CHECK(ingot_native_tensor_at(r, 0, &t) == INGOT_OK && t.data == NULL, "partial data");
        }
    }
    free(mem);
    fprintf(stderr, "  %zu prefixes: %zu TRUNCATED, %zu UNKNOWN_FORMAT (< 8 bytes, detected)\n", n,
            truncated, unknown);

    /* by path: one file cut shorter and shorter */
    const char *path = test_tmp_path("trunc.ingot");
    int fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0644);
    ASSERT_TRUE(fd >= 0);
    ASSERT_TRUE(write(fd, g.b, n) == (ssize_t)n);
    for (size_t len = n; len-- > 0;) {
        ASSERT_TRUE(ftruncate(fd, (off_t)len) == 0);
        for (int io = 0; io < 2; io++) {
            ingot_file *f = NULL;
            ingot_error e;
            ingot_status st = open_path(path, (ingot_io_mode)io, true, &f, &e);
            ingot_status want =
                len > 0 && len < ING_MAGIC_LEN ? INGOT_UNKNOWN_FORMAT : INGOT_TRUNCATED;
            CHECK(st == want && f == NULL, "path prefix %zu io %d: %s", len, io,
                  ingot_status_name(st));
            if (len == 0) continue; /* forced format on an empty path: see test_malformed */
            st = open_path(path, (ingot_io_mode)io, false, &f, &e);
            CHECK(st == INGOT_TRUNCATED && f == NULL, "path prefix %zu io %d forced: %s", len, io,
                  ingot_status_name(st));
        }
    }
    close(fd);
    unlink(path);
}

/* ---- (b) single-byte corruption ---- */

typedef struct {
    uint64_t start, end; /* absolute [start, end) */
} span;

TEST(test_every_byte_flip_detected)
{
    static gbuf g;
    ASSERT_TRUE(gen_base(&g));
    size_t n = g.n;
    /* where each byte belongs: header region, tensor data, or padding between tensors */
    ingot_file *f;
    ASSERT_OK(ingot_file_open_buffer(g.b, n, NULL, &f, NULL));
    uint64_t data_off = rd64(g.b + HDR_DATA);
    span tensors[GT_N];
    ASSERT_U64(ingot_file_tensor_count(f), GT_N);
    for (uint64_t i = 0; i < GT_N; i++) {
        ingot_tensor_info t;
        ASSERT_OK(ingot_file_tensor_at(f, i, &t));
        tensors[i] = (span){t.offset, t.offset + t.nbytes};
    }
    ingot_file_close(f);

    const char *path = test_tmp_path("flip.ingot");
    int fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0644);
    ASSERT_TRUE(fd >= 0);
    ASSERT_TRUE(write(fd, g.b, n) == (ssize_t)n);

    uint8_t *img = malloc(n);
    static alignas(8) unsigned char ws[INGOT_NATIVE_WORKSPACE];
    size_t by_code[64] = {0}, at_open = 0, at_verify = 0, accepted_without_crc = 0;
    static const uint8_t masks[2] = {0x01, 0xff};
    for (size_t k = 0; k < n; k++) {
        int region = -1; /* -1 header, -2 padding, else tensor index */
        if (k >= data_off) {
            region = -2;
            for (int i = 0; i < GT_N; i++)
                if (k >= tensors[i].start && k < tensors[i].end) region = i;
        }
        for (int mi = 0; mi < 2; mi++) {
            memcpy(img, g.b, n);
            img[k] ^= masks[mi];
            ingot_error e;
            ingot_status st = ingot_file_open_buffer(img, n, NULL, &f, &e);
            if (region == -1) {
                CHECK(st != INGOT_OK, "flip 0x%02x at %zu (header region) accepted at open",
                      masks[mi], k);
                if (st == INGOT_OK) ingot_file_close(f);
                else at_open++, by_code[st]++;
            } else {
                /* data and padding are not covered by the header checksum */
                CHECK(st == INGOT_OK, "flip at %zu (data) rejected at open: %s", k, e.msg);
                if (st != INGOT_OK) continue;
                st = ingot_file_verify(f, 1, &e);
                ingot_status want = region >= 0 ? INGOT_BAD_CHECKSUM : INGOT_BAD_LAYOUT;
                CHECK(st == want, "flip 0x%02x at %zu (region %d): verify %s, want %s",
                      masks[mi], k, region, ingot_status_name(st), ingot_status_name(want));
                if (st == want && region == -2)
                    CHECK(e.offset == k, "padding flip at %zu reported at %" PRIu64, k, e.offset);
                if (st == want && region >= 0)
                    CHECK(e.offset == tensors[region].start, "data flip at %zu reported at %" PRIu64,
                          k, e.offset);
                at_verify++;
                by_code[st]++;
                ingot_file_close(f);
            }
            /* without checksums the reader must still be safe on whatever it accepts */
            ingot_open_opts nocrc = {.verify = INGOT_VERIFY_NONE};
            if (ingot_file_open_buffer(img, n, &nocrc, &f, &e) == INGOT_OK) {
                accepted_without_crc++;
                exercise(f);
                CHECK(ingot_file_verify(f, 2, &e) != INGOT_OK, "flip at %zu passes verify", k);
                ingot_file_close(f);
            }
            ingot_native *r;
            st = ingot_native_open(ws, sizeof ws, img, n, n, INGOT_NATIVE_SKIP_HEADER_CRC, &r, &e);
            if (st == INGOT_OK) {
                bool bad = false;
                for (uint64_t i = 0; i < GT_N; i++)
                    bad |= ingot_native_tensor_verify(r, i, &e) != INGOT_OK;
                /* header-region flips that survive the structural checks are left to the CRC */
                CHECK(region == -1 || bad, "flip at %zu: native verify passes", k);
            }
        }
        /* by path (mmap): the same flip in a real file, then restored */
        uint8_t b = g.b[k] ^ 0xff;
        ASSERT_TRUE(pwrite(fd, &b, 1, (off_t)k) == 1);
        ingot_error e;
        ingot_status st = open_path(path, INGOT_IO_MMAP, true, &f, &e);
        if (st == INGOT_OK) {
            CHECK(region != -1, "path flip at %zu accepted at open", k);
            CHECK(ingot_file_verify(f, 1, &e) != INGOT_OK, "path flip at %zu passes verify", k);
            ingot_file_close(f);
        }
        ASSERT_TRUE(pwrite(fd, &g.b[k], 1, (off_t)k) == 1);
    }
    close(fd);
    unlink(path);
    free(img);
    fprintf(stderr, "  %zu offsets x 2 masks: %zu caught at open, %zu by verify;"
            " %zu opened with checksums off (all caught by verify)\n  codes:", n, at_open,
            at_verify, accepted_without_crc);
    for (int c = 0; c < 64; c++)
        if (by_code[c]) fprintf(stderr, " %s=%zu", ingot_status_name((ingot_status)c), by_code[c]);
    fprintf(stderr, "\n");
}

/* ---- (c) randomized round trips ---- */

static uint64_t rng_state;

static uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t rnd_below(uint64_t n) { return n ? rnd() % n : 0; }

/* Appends one random code point (1..4 UTF-8 bytes) to s; never NUL unless allow_nul. */
static size_t rnd_utf8(char *s, bool allow_nul)
{
    static const uint32_t pool[] = {'a', 'z', '.', '_', '0', '9', 'Q', 0xe9, 0x3a9, 0x7ff, 0x800,
                                    0x20ac, 0x4e2d, 0xfffd, 0xffff, 0x10000, 0x1f600, 0x10ffff};
    uint32_t cp = rnd_below(4) ? (uint32_t)('a' + rnd_below(26))
                               : pool[rnd_below(sizeof pool / sizeof pool[0])];
    if (allow_nul && rnd_below(20) == 0) cp = 0;
    if (cp < 0x80) {
        s[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        s[0] = (char)(0xc0 | cp >> 6);
        s[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        s[0] = (char)(0xe0 | cp >> 12);
        s[1] = (char)(0x80 | (cp >> 6 & 0x3f));
        s[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    s[0] = (char)(0xf0 | cp >> 18);
    s[1] = (char)(0x80 | (cp >> 12 & 0x3f));
    s[2] = (char)(0x80 | (cp >> 6 & 0x3f));
    s[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

#define MAX_T 12
#define MAX_M 16
#define NAME_CAP 160

typedef struct {
    char name[NAME_CAP];
    ingot_dtype dtype;
    uint32_t rank;
    uint64_t shape[INGOT_MAX_RANK];
    uint64_t nelem, nbytes;
    uint8_t *data;
    bool has_pid;
    uint64_t pid;
} rtensor;

typedef struct {
    char key[NAME_CAP];
    ingot_meta_type type;
    bool is_array;
    uint64_t bits;         /* scalar numeric/bool: value bits as stored */
    double f;              /* F32/F64 scalar value */
    uint8_t blob[256];     /* string/bytes value, or numeric array in host order */
    size_t blob_len;
    uint64_t count;        /* array elements */
    char elems[8][16];     /* string/bytes array elements */
    size_t elem_lens[8];
} rmeta;

typedef struct {
    uint32_t alignment;
    rtensor t[MAX_T];
    size_t nt;
    rmeta m[MAX_M];
    size_t nm;
} rset;

static const ingot_dtype all_dtypes[] = {
#define X(name, value, be, bb) INGOT_DTYPE_##name,
    INGOT_DTYPE_LIST(X)
#undef X
};
#define N_DTYPES (sizeof all_dtypes / sizeof all_dtypes[0])

static void rnd_name(char *out, bool (*taken)(const rset *, const char *), const rset *s)
{
    do {
        size_t len = 0, cps = 1 + rnd_below(rnd_below(10) == 0 ? 30 : 8);
        for (size_t i = 0; i < cps; i++) len += rnd_utf8(out + len, false);
        out[len] = 0;
    } while (taken(s, out));
}

static bool tname_taken(const rset *s, const char *n)
{
    for (size_t i = 0; i < s->nt; i++)
        if (strcmp(s->t[i].name, n) == 0) return true;
    return false;
}

static bool key_taken(const rset *s, const char *n)
{
    for (size_t i = 0; i < s->nm; i++)
        if (strcmp(s->m[i].key, n) == 0) return true;
    return false;
}

static void rnd_set(rset *s, unsigned dtype_cursor)
{
    memset(s, 0, sizeof *s);
    s->alignment = 64u << rnd_below(11); /* 64 .. 65536 */
    size_t nt = rnd_below(MAX_T + 1);
    for (size_t i = 0; i < nt; i++) {
        rtensor *t = &s->t[i];
        rnd_name(t->name, tname_taken, s);
        /* cycle through every dtype across the sets, with random ones in between */
        t->dtype = i == 0 ? all_dtypes[dtype_cursor % N_DTYPES] : all_dtypes[rnd_below(N_DTYPES)];
        uint32_t be = ingot_dtype_block_elems(t->dtype);
        /* mostly 0..8, one in eight anywhere up to INGOT_MAX_RANK */
        t->rank = (uint32_t)rnd_below(rnd_below(8) == 0 ? INGOT_MAX_RANK + 1 : 9);
        if (be > 1 && t->rank == 0) t->rank = 1; /* a block type is never a scalar */
        uint64_t budget = 512;
        for (uint32_t d = 0; d < t->rank; d++) {
            uint64_t dim = rnd_below(12) == 0 ? 0 : 1 + rnd_below(budget > 3 ? 3 : budget);
            if (d + 1 == t->rank && be > 1) dim = rnd_below(10) == 0 ? 0 : be * (1 + rnd_below(2));
            t->shape[d] = dim;
            if (dim) budget = budget / dim ? budget / dim : 1;
        }
        ingot_status st = ingot_dtype_nbytes(t->dtype, t->rank, t->shape, &t->nelem, &t->nbytes);
        if (st != INGOT_OK) abort();
        t->data = malloc(t->nbytes ? t->nbytes : 1);
        for (uint64_t k = 0; k < t->nbytes; k++) t->data[k] = (uint8_t)rnd();
        if (t->dtype == INGOT_DTYPE_BOOL) /* valid BOOL values only: the set must verify */
            for (uint64_t k = 0; k < t->nbytes; k++) t->data[k] &= 1;
        t->has_pid = rnd_below(3) == 0;
        t->pid = t->has_pid ? rnd() : 0;
        s->nt = i + 1;
    }
    s->nm = rnd_below(MAX_M + 1);
    size_t nm = s->nm;
    s->nm = 0;
    for (size_t i = 0; i < nm; i++) {
        rmeta *m = &s->m[i];
        rnd_name(m->key, key_taken, s);
        s->nm = i + 1;
        m->type = (ingot_meta_type)(1 + (i + rnd_below(2) * 7) % 13); /* covers all 13 */
        m->is_array = rnd_below(5) < 2;
        uint32_t esz = ingot_meta_type_size(m->type);
        if (m->type == INGOT_META_STRING || m->type == INGOT_META_BYTES) {
            bool str = m->type == INGOT_META_STRING;
            if (m->is_array) {
                m->count = rnd_below(9);
                for (uint64_t k = 0; k < m->count; k++) {
                    size_t len = 0, want = rnd_below(4);
                    if (str)
                        for (size_t c = 0; c < want; c++) len += rnd_utf8(m->elems[k] + len, true);
                    else
                        for (; len < want * 3; len++) m->elems[k][len] = (char)rnd();
                    m->elem_lens[k] = len;
                }
            } else {
                size_t len = 0, want = rnd_below(40);
                if (str)
                    for (size_t c = 0; c < want; c++) len += rnd_utf8((char *)m->blob + len, true);
                else
                    for (; len < want; len++) m->blob[len] = (uint8_t)rnd();
                m->blob_len = len;
            }
        } else if (m->is_array) {
            m->count = rnd_below(24);
            m->blob_len = m->count * esz;
            for (size_t k = 0; k < m->blob_len; k++) m->blob[k] = (uint8_t)rnd();
            if (m->type == INGOT_META_BOOL)
                for (size_t k = 0; k < m->count; k++) m->blob[k] &= 1;
        } else {
            uint64_t r = rnd();
            switch (m->type) {
            case INGOT_META_F32: {
                float v = (float)(int16_t)r / 64.0f;
                uint32_t b;
                memcpy(&b, &v, 4);
                m->bits = b;
                m->f = v;
                break;
            }
            case INGOT_META_F64: {
                double v = (double)((int64_t)r >> 11) / 4096.0;
                memcpy(&m->bits, &v, 8);
                m->f = v;
                break;
            }
            case INGOT_META_BOOL: m->bits = r & 1; break;
            default: m->bits = esz == 8 ? r : r & ((1ull << (8 * esz)) - 1); break;
            }
            m->count = 1;
        }
    }
}

static void free_set(rset *s)
{
    for (size_t i = 0; i < s->nt; i++) free(s->t[i].data);
}

/* Describes s into a new writer; `pointer_mask` picks which tensors carry a data pointer. */
static ingot_writer *describe(const rset *s, uint64_t pointer_mask)
{
    ingot_writer_opts o = {.alignment = s->alignment, .no_fsync = true};
    ingot_writer *w;
    if (ingot_writer_new(&o, &w, NULL) != INGOT_OK) return NULL;
    bool ok = true;
    for (size_t i = 0; i < s->nm; i++) {
        const rmeta *m = &s->m[i];
        ingot_status st = INGOT_OK;
        if (m->is_array && (m->type == INGOT_META_STRING || m->type == INGOT_META_BYTES)) {
            const void *p[8];
            for (uint64_t k = 0; k < m->count; k++) p[k] = m->elems[k];
            st = ingot_writer_set_string_array(w, m->key, m->type, p, m->elem_lens, m->count);
        } else if (m->is_array) {
            st = ingot_writer_set_array(w, m->key, m->type, m->blob, m->count);
        } else {
            switch (m->type) {
            case INGOT_META_U8: st = ingot_writer_set_u8(w, m->key, (uint8_t)m->bits); break;
            case INGOT_META_U16: st = ingot_writer_set_u16(w, m->key, (uint16_t)m->bits); break;
            case INGOT_META_U32: st = ingot_writer_set_u32(w, m->key, (uint32_t)m->bits); break;
            case INGOT_META_U64: st = ingot_writer_set_u64(w, m->key, m->bits); break;
            case INGOT_META_I8: st = ingot_writer_set_i8(w, m->key, (int8_t)(uint8_t)m->bits); break;
            case INGOT_META_I16:
                st = ingot_writer_set_i16(w, m->key, (int16_t)(uint16_t)m->bits);
                break;
            case INGOT_META_I32:
                st = ingot_writer_set_i32(w, m->key, (int32_t)(uint32_t)m->bits);
                break;
            case INGOT_META_I64: st = ingot_writer_set_i64(w, m->key, (int64_t)m->bits); break;
            case INGOT_META_F32: st = ingot_writer_set_f32(w, m->key, (float)m->f); break;
            case INGOT_META_F64: st = ingot_writer_set_f64(w, m->key, m->f); break;
            case INGOT_META_BOOL: st = ingot_writer_set_bool(w, m->key, m->bits != 0); break;
            case INGOT_META_STRING:
                st = ingot_writer_set_stringn(w, m->key, (const char *)m->blob, m->blob_len);
                break;
            case INGOT_META_BYTES: st = ingot_writer_set_bytes(w, m->key, m->blob, m->blob_len); break;
            case INGOT_META_INVALID: st = INGOT_MISUSE; break;
            }
        }
        if (st != INGOT_OK) fprintf(stderr, "  set %s: %s\n", m->key, ingot_status_name(st));
        ok &= st == INGOT_OK;
    }
    for (size_t i = 0; i < s->nt; i++) {
        const rtensor *t = &s->t[i];
        ingot_tensor_opts to = {t->has_pid, t->pid};
        ingot_error e;
        ingot_status st = ingot_writer_add_tensor(w, t->name, t->dtype, t->rank, t->shape,
                                                  t->has_pid ? &to : NULL,
                                                  (pointer_mask >> i & 1) ? t->data : NULL, &e);
        if (st != INGOT_OK) fprintf(stderr, "  add %s: %s\n", t->name, e.msg);
        ok &= st == INGOT_OK;
    }
    if (!ok) {
        ingot_writer_free(w);
        return NULL;
    }
    return w;
}

/* Pushes the bytes of every pointer-less tensor, in order, in random chunks across tensors. */
static bool push_all(ingot_writer *w, const rset *s, uint64_t pointer_mask)
{
    size_t total = 0;
    for (size_t i = 0; i < s->nt; i++)
        if (!(pointer_mask >> i & 1)) total += s->t[i].nbytes;
    uint8_t *stream = malloc(total ? total : 1);
    size_t at = 0;
    for (size_t i = 0; i < s->nt; i++)
        if (!(pointer_mask >> i & 1)) {
            memcpy(stream + at, s->t[i].data, s->t[i].nbytes);
            at += s->t[i].nbytes;
        }
    bool ok = true;
    ingot_error e;
    for (size_t done = 0; done < total && ok;) {
        size_t k = rnd_below(4) == 0 ? 1 + rnd_below(total) : 1 + rnd_below(97);
        if (k > total - done) k = total - done;
        ok = ingot_writer_write(w, stream + done, k, &e) == INGOT_OK;
        done += k;
    }
    if (ok && rnd_below(2)) ok = ingot_writer_write(w, stream, 0, &e) == INGOT_OK; /* empty push */
    free(stream);
    return ok;
}

/* Compares an open file with the description. Returns the number of mismatches. */
static int compare(const ingot_file *f, const rset *s, bool mapped, const char *ctx)
{
    int before = harness_failed;
    CHECK(ingot_file_tensor_count(f) == s->nt, "%s: %" PRIu64 " tensors, want %zu", ctx,
          ingot_file_tensor_count(f), s->nt);
    CHECK(ingot_file_alignment(f) == s->alignment, "%s: alignment", ctx);
    for (size_t i = 0; i < s->nt && i < ingot_file_tensor_count(f); i++) {
        const rtensor *t = &s->t[i];
        ingot_tensor_info ti, tf;
        CHECK(ingot_file_tensor_at(f, i, &ti) == INGOT_OK, "%s: tensor_at %zu", ctx, i);
        CHECK(ti.name_len == strlen(t->name) && memcmp(ti.name, t->name, ti.name_len) == 0 &&
                  ti.name[ti.name_len] == 0,
              "%s: tensor %zu name", ctx, i);
        CHECK(ti.dtype == t->dtype && ti.rank == t->rank, "%s: tensor %zu dtype/rank", ctx, i);
        CHECK(memcmp(ti.shape, t->shape, sizeof ti.shape) == 0, "%s: tensor %zu shape", ctx, i);
        CHECK(ti.nelem == t->nelem && ti.nbytes == t->nbytes, "%s: tensor %zu sizes", ctx, i);
        CHECK(!!(ti.flags & INGOT_TENSOR_HAS_PARAM_ID) == t->has_pid && ti.param_id == t->pid,
              "%s: tensor %zu param id", ctx, i);
        CHECK(ti.offset % s->alignment == 0, "%s: tensor %zu offset %" PRIu64, ctx, i, ti.offset);
        CHECK(ingot_file_tensor_find(f, t->name, &tf) == INGOT_OK && tf.index == i,
              "%s: find '%s'", ctx, t->name);
        if (mapped) {
            CHECK(ti.data != NULL && (t->nbytes == 0 || memcmp(ti.data, t->data, t->nbytes) == 0),
                  "%s: tensor %zu bytes", ctx, i);
        } else {
            /* pread mode: no data pointers, except when the data section is empty and the
             * header read already covers the whole file */
            uint64_t data_bytes = 0;
            for (size_t k = 0; k < s->nt; k++) data_bytes += s->t[k].nbytes;
            CHECK(data_bytes == 0 || (ti.data == NULL && (ti.flags & INGOT_TENSOR_NOT_MAPPED)),
                  "%s: pread data pointer %p (%" PRIu64 " data bytes)", ctx, ti.data, data_bytes);
        }
        uint8_t *back = malloc(t->nbytes ? t->nbytes : 1);
        CHECK(ingot_file_tensor_read(f, i, 0, back, t->nbytes, NULL) == INGOT_OK &&
                  memcmp(back, t->data, t->nbytes) == 0,
              "%s: tensor %zu read", ctx, i);
        free(back);
    }
    CHECK(ingot_file_meta_count(f) == s->nm, "%s: %" PRIu64 " meta, want %zu", ctx,
          ingot_file_meta_count(f), s->nm);
    for (size_t i = 0; i < s->nm; i++) {
        const rmeta *m = &s->m[i];
        ingot_meta_info mi;
        if (ingot_file_meta_find(f, m->key, &mi) != INGOT_OK) {
            CHECK(false, "%s: key '%s' missing", ctx, m->key);
            continue;
        }
        CHECK(mi.type == m->type && mi.is_array == m->is_array, "%s: '%s' type", ctx, m->key);
        CHECK(mi.key_len == strlen(m->key), "%s: '%s' key_len", ctx, m->key);
        bool strlike = m->type == INGOT_META_STRING || m->type == INGOT_META_BYTES;
        if (m->is_array && strlike) {
            CHECK(mi.count == m->count, "%s: '%s' count", ctx, m->key);
            for (uint64_t k = 0; k < m->count && k < mi.count; k++) {
                const char *p;
                size_t len;
                CHECK(ingot_file_meta_array_string(f, mi.index, k, &p, &len) == INGOT_OK &&
                          len == m->elem_lens[k] && memcmp(p, m->elems[k], len) == 0,
                      "%s: '%s'[%" PRIu64 "]", ctx, m->key, k);
            }
        } else if (m->is_array) {
            uint64_t cnt = 0;
            CHECK(ingot_file_meta_get_array(f, m->key, m->type, &cnt) == INGOT_OK &&
                      cnt == m->count,
                  "%s: '%s' array count", ctx, m->key);
            uint8_t back[256];
            CHECK(ingot_file_meta_array_read(f, mi.index, m->type, 0, m->count, back) ==
                          INGOT_OK &&
                      memcmp(back, m->blob, m->blob_len) == 0,
                  "%s: '%s' array values", ctx, m->key);
        } else if (strlike) {
            const char *p = NULL;
            size_t len = 0;
            ingot_status st = m->type == INGOT_META_STRING
                                  ? ingot_file_meta_get_string(f, m->key, &p, &len)
                                  : ingot_file_meta_get_bytes(f, m->key, (const void **)&p, &len);
            CHECK(st == INGOT_OK && len == m->blob_len && memcmp(p, m->blob, len) == 0,
                  "%s: '%s' value", ctx, m->key);
        } else {
            bool ok = false;
            switch (m->type) {
            case INGOT_META_U8: { uint8_t v; ok = !ingot_file_meta_get_u8(f, m->key, &v) && v == m->bits; break; }
            case INGOT_META_U16: { uint16_t v; ok = !ingot_file_meta_get_u16(f, m->key, &v) && v == m->bits; break; }
            case INGOT_META_U32: { uint32_t v; ok = !ingot_file_meta_get_u32(f, m->key, &v) && v == m->bits; break; }
            case INGOT_META_U64: { uint64_t v; ok = !ingot_file_meta_get_u64(f, m->key, &v) && v == m->bits; break; }
            case INGOT_META_I8: { int8_t v; ok = !ingot_file_meta_get_i8(f, m->key, &v) && v == (int8_t)(uint8_t)m->bits; break; }
            case INGOT_META_I16: { int16_t v; ok = !ingot_file_meta_get_i16(f, m->key, &v) && v == (int16_t)(uint16_t)m->bits; break; }
            case INGOT_META_I32: { int32_t v; ok = !ingot_file_meta_get_i32(f, m->key, &v) && v == (int32_t)(uint32_t)m->bits; break; }
            case INGOT_META_I64: { int64_t v; ok = !ingot_file_meta_get_i64(f, m->key, &v) && v == (int64_t)m->bits; break; }
            case INGOT_META_F32: { float v; ok = !ingot_file_meta_get_f32(f, m->key, &v) && v == (float)m->f; break; }
            case INGOT_META_F64: { double v; ok = !ingot_file_meta_get_f64(f, m->key, &v) && v == m->f; break; }
            case INGOT_META_BOOL: { bool v; ok = !ingot_file_meta_get_bool(f, m->key, &v) && v == (m->bits != 0); break; }
            default: break;
            }
            CHECK(ok, "%s: '%s' scalar value (type %d)", ctx, m->key, (int)m->type);
            CHECK(mi.count == 1, "%s: '%s' count", ctx, m->key);
        }
    }
    /* metadata is stored sorted by key bytes */
    for (uint64_t i = 1; i < ingot_file_meta_count(f); i++) {
        ingot_meta_info a, b;
        ingot_file_meta_at(f, i - 1, &a);
        ingot_file_meta_at(f, i, &b);
        size_t n = a.key_len < b.key_len ? a.key_len : b.key_len;
        int c = memcmp(a.key, b.key, n);
        CHECK(c < 0 || (c == 0 && a.key_len < b.key_len), "%s: keys not sorted at %" PRIu64, ctx,
              i);
    }
    ingot_error e;
    CHECK(ingot_file_verify(f, 1 + (uint32_t)rnd_below(4), &e) == INGOT_OK, "%s: verify: %s", ctx,
          e.msg);
    return harness_failed - before;
}

TEST(test_random_roundtrips)
{
    rng_state = 0x1a2b3c4d5e6f7788ull;
    const char *path = test_tmp_path("rt.ingot");
    static rset s;
    size_t total_bytes = 0, total_tensors = 0, total_meta = 0, dtypes_seen[512] = {0};
    unsigned ranks_seen = 0, meta_seen = 0, arrays_seen = 0, max_rank = 0;
    size_t zero_sized = 0, quantized = 0, with_pid = 0;
    for (unsigned iter = 0; iter < 200; iter++) {
        rnd_set(&s, iter);
        char ctx[64];
        snprintf(ctx, sizeof ctx, "set %u", iter);
        /* 1: memory, random pointer/push mix */
        uint64_t mask1 = rnd(), mask2 = rnd();
        ingot_writer *w = describe(&s, mask1);
        CHECK(w != NULL, "%s: describe", ctx);
        if (!w) {
            free_set(&s);
            continue;
        }
        ingot_error e;
        void *mem = NULL;
        size_t mem_n = 0;
        bool ok = ingot_writer_begin_mem(w, &e) == INGOT_OK && push_all(w, &s, mask1) &&
                  ingot_writer_commit_mem(w, &mem, &mem_n, &e) == INGOT_OK;
        CHECK(ok, "%s: memory write: %s", ctx, e.msg);
        ingot_writer_free(w);
        /* 2: file, another mix: identical bytes */
        w = describe(&s, mask2);
        ok = w && ingot_writer_begin(w, path, &e) == INGOT_OK && push_all(w, &s, mask2) &&
             ingot_writer_commit(w, &e) == INGOT_OK;
        CHECK(ok, "%s: file write: %s", ctx, e.msg);
        ingot_writer_free(w);
        FILE *fp = fopen(path, "rb");
        uint8_t *disk = malloc(mem_n + 1);
        size_t disk_n = fp ? fread(disk, 1, mem_n + 1, fp) : 0;
        if (fp) fclose(fp);
        CHECK(disk_n == mem_n && memcmp(disk, mem, mem_n) == 0,
              "%s: file (%zu bytes) and memory (%zu bytes) writes differ", ctx, disk_n, mem_n);
        free(disk);
        /* 3: reopen every way */
        ingot_file *f;
        if (ingot_file_open_buffer(mem, mem_n, NULL, &f, &e) == INGOT_OK) {
            compare(f, &s, true, ctx);
            ingot_file_close(f);
        } else {
            CHECK(false, "%s: buffer open: %s", ctx, e.msg);
        }
        for (int io = 0; io < 2; io++) {
            if (open_path(path, (ingot_io_mode)io, true, &f, &e) == INGOT_OK) {
                compare(f, &s, io == INGOT_IO_MMAP, ctx);
                ingot_file_close(f);
            } else {
                CHECK(false, "%s: path open io %d: %s", ctx, io, e.msg);
            }
        }
        ingot_writer_free_mem(NULL, mem, mem_n);
        total_bytes += mem_n;
        total_tensors += s.nt;
        total_meta += s.nm;
        for (size_t i = 0; i < s.nt; i++) {
            dtypes_seen[s.t[i].dtype]++;
            if (s.t[i].rank <= 8) ranks_seen |= 1u << s.t[i].rank;
            if (s.t[i].rank > max_rank) max_rank = s.t[i].rank;
            zero_sized += s.t[i].nelem == 0;
            quantized += ingot_dtype_is_quantized(s.t[i].dtype);
            with_pid += s.t[i].has_pid;
        }
        for (size_t i = 0; i < s.nm; i++) {
            meta_seen |= 1u << s.m[i].type;
            if (s.m[i].is_array) arrays_seen |= 1u << s.m[i].type;
        }
        free_set(&s);
    }
    unlink(path);
    size_t dtypes = 0;
    for (size_t i = 0; i < N_DTYPES; i++) dtypes += dtypes_seen[all_dtypes[i]] > 0;
    ASSERT_U64(dtypes, N_DTYPES);
    ASSERT_EQ(ranks_seen, 0x1ff);        /* ranks 0..8 */
    ASSERT_TRUE(max_rank > 48);          /* and high ranks up to INGOT_MAX_RANK */
    ASSERT_EQ(meta_seen, 0x3ffe);        /* types 1..13 */
    ASSERT_EQ(arrays_seen, 0x3ffe);      /* arrays of every type */
    ASSERT_TRUE(zero_sized > 0 && quantized > 0 && with_pid > 0);
    fprintf(stderr, "  200 sets: %zu tensors (%zu zero-sized, %zu quantized, %zu with param id), "
            "%zu metadata entries, %zu bytes written\n", total_tensors, zero_sized, quantized,
            with_pid, total_meta, total_bytes);
}

int main(int argc, char **argv)
{
    static const test_case cases[] = {
        T(test_every_truncation_point),
        T(test_every_byte_flip_detected),
        T(test_random_roundtrips),
    };
    return harness_run(cases, sizeof cases / sizeof cases[0], argc, argv);
}
