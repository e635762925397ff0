/*
 * test_zip.c - the zip container reader (src/core/zip.h): CRC-32, end records, zip64, central
 * directory rules, local headers, the real numpy archives, pread-mode sources, the malformed
 * catalogue (RELIABILITY.md §1 as it applies to zip), an allocation-failure loop, and the local
 * header prefetch of issue 17 (same verdicts as without it, one read per run of headers).
 */
#include <zlib.h>

#include "alloc.h"
#include "file.h"
#include "harness.h"
#include "files.h"
#include "zip.h"

/* ---------------------------------------------------------------------------------------------
 * A tiny zip builder for test archives (stored members; optional zip64 end records and extras).
 * ------------------------------------------------------------------------------------------- */

typedef struct {
    const char *name;
    const char *data;
    uint16_t method;
    uint16_t flags;
} zmem;

enum { Z_PLAIN = 0, Z_END64 = 1, Z_EXTRA64 = 2 };

typedef struct {
    uint8_t buf[1 << 16];
    size_t len;
    size_t lho[8], cdh[8];
    size_t cd_off, cd_size, eocd, z64eocd, z64loc;
} zimg;

static void put16(zimg *z, uint16_t v) { ing_st16(z->buf + z->len, v), z->len += 2; }
static void put32(zimg *z, uint32_t v) { ing_st32(z->buf + z->len, v), z->len += 4; }
static void put64(zimg *z, uint64_t v) { ing_st64(z->buf + z->len, v), z->len += 8; }
static void putb(zimg *z, const void *p, size_t n) { memcpy(z->buf + z->len, p, n), z->len += n; }

static void zbuild(zimg *z, const zmem *m, size_t n, int mode)
{
    memset(z, 0, sizeof *z);
    for (size_t i = 0; i < n; i++) {
        size_t nl = strlen(m[i].name), dl = strlen(m[i].data);
        uint32_t crc = (uint32_t)crc32(0, (const Bytef *)m[i].data, (uInt)dl);
        z->lho[i] = z->len;
        put32(z, 0x04034b50), put16(z, 20), put16(z, m[i].flags), put16(z, m[i].method);
        put32(z, 0), put32(z, crc), put32(z, (uint32_t)dl), put32(z, (uint32_t)dl);
        put16(z, (uint16_t)nl), put16(z, 0);
        putb(z, m[i].name, nl), putb(z, m[i].data, dl);
    }
    z->cd_off = z->len;
    for (size_t i = 0; i < n; i++) {
        size_t nl = strlen(m[i].name), dl = strlen(m[i].data);
        uint32_t crc = (uint32_t)crc32(0, (const Bytef *)m[i].data, (uInt)dl);
        bool x = mode == Z_EXTRA64;
        z->cdh[i] = z->len;
        put32(z, 0x02014b50), put16(z, 20), put16(z, 20), put16(z, m[i].flags);
        put16(z, m[i].method), put32(z, 0), put32(z, crc);
        put32(z, x ? 0xFFFFFFFFu : (uint32_t)dl), put32(z, x ? 0xFFFFFFFFu : (uint32_t)dl);
        put16(z, (uint16_t)nl), put16(z, x ? 28 : 0), put16(z, 0), put16(z, 0), put16(z, 0);
        put32(z, 0), put32(z, x ? 0xFFFFFFFFu : (uint32_t)z->lho[i]);
        putb(z, m[i].name, nl);
        if (x) put16(z, 1), put16(z, 24), put64(z, dl), put64(z, dl), put64(z, z->lho[i]);
    }
    z->cd_size = z->len - z->cd_off;
    if (mode != Z_PLAIN) {
        z->z64eocd = z->len;
        put32(z, 0x06064b50), put64(z, 44), put16(z, 45), put16(z, 45), put32(z, 0), put32(z, 0);
        put64(z, n), put64(z, n), put64(z, z->cd_size), put64(z, z->cd_off);
        z->z64loc = z->len;
        put32(z, 0x07064b50), put32(z, 0), put64(z, z->z64eocd), put32(z, 1);
    }
    z->eocd = z->len;
    bool s = mode != Z_PLAIN;
    put32(z, 0x06054b50), put16(z, 0), put16(z, 0);
    put16(z, s ? 0xFFFF : (uint16_t)n), put16(z, s ? 0xFFFF : (uint16_t)n);
    put32(z, s ? 0xFFFFFFFFu : (uint32_t)z->cd_size), put32(z, s ? 0xFFFFFFFFu : (uint32_t)z->cd_off);
    put16(z, 0);
}

static const zmem three[] = {
    {"a.npy", "hello", 0, 0},
    {"dir/b.npy", "", 0, 0},
    {"c", "0123456789abcdef", 0, 0},
};

static ingot_status zopen(ingot__zip *z, const zimg *im, size_t len, ingot_error *err)
{
    ingot__zip_source src = {im->buf, len, NULL, NULL, 0};
    return ingot__zip_open(z, &src, NULL, NULL, err);
}

/* Opens and locates every entry; returns the first failure. */
static ingot_status zopen_all(const uint8_t *buf, size_t len, ingot_error *err)
{
    ingot__zip z;
    ingot__zip_source src = {buf, len, NULL, NULL, 0};
    ingot_status st = ingot__zip_open(&z, &src, NULL, NULL, err);
    if (st != INGOT_OK) return st;
    for (uint64_t i = 0; i < z.count && st == INGOT_OK; i++) {
        st = ingot__zip_locate(&z, i, err);
        if (st == INGOT_OK && z.entries[i].method == 0)
            st = ingot__zip_check_stored_crc(&z, i, false, err);
    }
    ingot__zip_close(&z);
    return st;
}

/* ---------------------------------------------------------------------------------------------
 * CRC-32
 * ------------------------------------------------------------------------------------------- */

TEST(test_zip_crc32_known_vectors)
{
    ASSERT_U64(ingot__crc32(0, "123456789", 9), 0xCBF43926u);
    ASSERT_U64(ingot__crc32(0, "", 0), 0);
    ASSERT_U64(ingot__crc32(0, "a", 1), 0xE8B7BE43u);
}

TEST(test_zip_crc32_matches_zlib_every_length_and_alignment)
{
    static uint8_t buf[4096 + 16];
    uint32_t s = 12345;
    for (size_t i = 0; i < sizeof buf; i++) s = s * 1103515245u + 12345u, buf[i] = (uint8_t)(s >> 16);
    for (size_t al = 0; al < 16; al++)
        for (size_t n = 0; n < (al < 8 ? 2100u : 600u); n++) { /* folding from 256 bytes */
            uint32_t want = (uint32_t)crc32(0, buf + al, (uInt)n);
            if (ingot__crc32(0, buf + al, n) != want) FAIL_AT("align %zu len %zu", al, n);
            if (ingot__crc32_table(0, buf + al, n) != want) FAIL_AT("table: align %zu len %zu", al, n);
        }
    /* Continuation: crc(A||B) from crc(A), at every split (the folding path takes a running
     * register). */
    for (size_t a = 0; a <= 4096; a += a < 300 ? 1 : 97) {
        uint32_t c = ingot__crc32(0, buf, a);
        c = ingot__crc32(c, buf + a, 4096 - a);
        if (c != (uint32_t)crc32(0, buf, 4096)) FAIL_AT("split at %zu", a);
    }
    /* A large buffer (the 128-byte main loop many times), and all 0x00 / 0xFF bytes. */
    size_t big = 3u << 20;
    uint8_t *b = malloc(big + 1);
    for (size_t i = 0; i <= big; i++) s = s * 1103515245u + 12345u, b[i] = (uint8_t)(s >> 16);
    ASSERT_U64(ingot__crc32(0, b + 1, big), (uint32_t)crc32(0, b + 1, (uInt)big));
    memset(b, 0, big);
    ASSERT_U64(ingot__crc32(0, b, big), (uint32_t)crc32(0, b, (uInt)big));
    memset(b, 0xFF, big);
    ASSERT_U64(ingot__crc32(0x12345678u, b, big), (uint32_t)crc32(0x12345678u, b, (uInt)big));
    free(b);
    printf("  (CRC-32 path: %s)\n", ingot__crc32_clmul() ? "PCLMULQDQ folding" : "tables");
}

/* ---------------------------------------------------------------------------------------------
 * Valid archives
 * ------------------------------------------------------------------------------------------- */

static void check_three(ingot__zip *z, const zimg *im)
{
    ASSERT_U64(z->count, 3);
    ASSERT_U64(z->cd_offset, im->cd_off);
    ASSERT_U64(z->cd_size, im->cd_size);
    uint64_t idx = 99;
    ASSERT_OK(ingot__zip_find(z, "c", 1, &idx));
    ASSERT_U64(idx, 2);
    ASSERT_OK(ingot__zip_find(z, "dir/b.npy", 9, &idx));
    ASSERT_U64(idx, 1);
    ASSERT_ST(ingot__zip_find(z, "a.np", 4, &idx), INGOT_NOT_FOUND);
    ASSERT_ST(ingot__zip_find(z, "a.npyy", 6, &idx), INGOT_NOT_FOUND);
    for (uint64_t i = 0; i < 3; i++) {
        ASSERT_OK(ingot__zip_locate(z, i, NULL));
        const ingot__zip_entry *e = &z->entries[i];
        ASSERT_U64(e->lho, im->lho[i]);
        ASSERT_U64(e->data_offset, im->lho[i] + 30 + strlen(three[i].name));
        ASSERT_U64(e->size, strlen(three[i].data));
        ASSERT_U64(e->comp_size, e->size);
        ASSERT_EQ(e->method, 0);
        ASSERT_TRUE(e->name_len == strlen(three[i].name) &&
                    memcmp(e->name, three[i].name, e->name_len) == 0);
        ASSERT_OK(ingot__zip_check_stored_crc(z, i, false, NULL));
    }
    ASSERT_U64(z->entries[0].limit, im->lho[1]);
    ASSERT_U64(z->entries[2].limit, im->cd_off);
}

TEST(test_zip_open_plain)
{
    static zimg im;
    zbuild(&im, three, 3, Z_PLAIN);
    ingot__zip z;
    ASSERT_OK(zopen(&z, &im, im.len, NULL));
    ASSERT_TRUE(!z.zip64);
    ASSERT_U64(z.end_records, im.eocd);
    check_three(&z, &im);
    ingot__zip_close(&z);
    ingot__zip_close(&z); /* zeroed: no-op */
}

TEST(test_zip_open_zip64_end_records_and_extras)
{
    static zimg im;
    for (int mode = Z_END64; mode <= Z_EXTRA64; mode++) {
        zbuild(&im, three, 3, mode);
        ingot__zip z;
        ASSERT_OK(zopen(&z, &im, im.len, NULL));
        ASSERT_TRUE(z.zip64);
        ASSERT_U64(z.end_records, im.z64eocd);
        check_three(&z, &im);
        if (mode == Z_EXTRA64) ASSERT_TRUE(z.entries[0].info & INGOT__ZIP_ENTRY_ZIP64);
        ingot__zip_close(&z);
    }
}

TEST(test_zip_open_empty_archive_and_comment)
{
    static zimg im;
    zbuild(&im, three, 0, Z_PLAIN);
    ASSERT_U64(im.len, 22);
    ingot__zip z;
    ASSERT_OK(zopen(&z, &im, im.len, NULL));
    ASSERT_U64(z.count, 0);
    uint64_t idx;
    ASSERT_ST(ingot__zip_find(&z, "a", 1, &idx), INGOT_NOT_FOUND);
    ingot__zip_close(&z);
    /* A comment that runs exactly to the end of the file is fine, even one holding a fake EOCD. */
    zbuild(&im, three, 3, Z_PLAIN);
    static const uint8_t fake[22] = {0x50, 0x4b, 0x05, 0x06};
    ing_st16(im.buf + im.eocd + 20, 30);
    memcpy(im.buf + im.len, fake, 22);
    memcpy(im.buf + im.len + 22, "12345678", 8);
    ASSERT_OK(zopen(&z, &im, im.len + 30, NULL));
    ASSERT_U64(z.count, 3);
    ingot__zip_close(&z);
}

TEST(test_zip_directory_entry_flagged)
{
    static const zmem m[] = {{"d/", "", 0, 0}, {"d/x", "1", 0, 0}};
    static zimg im;
    zbuild(&im, m, 2, Z_PLAIN);
    ingot__zip z;
    ASSERT_OK(zopen(&z, &im, im.len, NULL));
    ASSERT_TRUE(z.entries[0].info & INGOT__ZIP_ENTRY_DIR);
    ASSERT_TRUE(!(z.entries[1].info & INGOT__ZIP_ENTRY_DIR));
    ingot__zip_close(&z);
    static const zmem bad[] = {{"d/", "1", 0, 0}};
    zbuild(&im, bad, 1, Z_PLAIN);
    ingot_error err;
    ASSERT_ST(zopen(&z, &im, im.len, &err), INGOT_BAD_NAME);
}

/* pread-style source: every byte through a callback that copies from a private buffer. */
typedef struct {
    const uint8_t *p;
    size_t n;
    unsigned calls;
} cbsrc;

static ingot_status cb_read(void *ctx, uint64_t off, void *dst, size_t n, ingot_error *err)
{
    cbsrc *c = ctx;
    (void)err;
    if (off > c->n || n > c->n - off) return INGOT_IO;
    memcpy(dst, c->p + off, n);
    c->calls++;
    return INGOT_OK;
}

TEST(test_zip_read_callback_source)
{
    static zimg im;
    for (int mode = Z_PLAIN; mode <= Z_EXTRA64; mode++) {
        zbuild(&im, three, 3, mode);
        cbsrc c = {im.buf, im.len, 0};
        ingot__zip_source src = {NULL, im.len, cb_read, &c, 0};
        ingot__zip z;
        ASSERT_OK(ingot__zip_open(&z, &src, NULL, NULL, NULL));
        ASSERT_TRUE(z.cd_owned != NULL);
        check_three(&z, &im);
        ASSERT_TRUE(c.calls > 0);
        ingot__zip_close(&z);
    }
}

/* An allocator that fails the Nth allocation. */
typedef struct {
    int fail_at, count;
    long live;
} failalloc;

static void *fa_alloc(void *ctx, size_t size, size_t align)
{
    failalloc *a = ctx;
    (void)align;
    if (++a->count == a->fail_at) return NULL;
    a->live++;
    return malloc(size);
}
static void fa_free(void *ctx, void *p, size_t size)
{
    failalloc *a = ctx;
    (void)size;
    if (p) a->live--;
    free(p);
}

TEST(test_zip_allocation_failure_loop)
{
    static zimg im;
    zbuild(&im, three, 3, Z_EXTRA64);
    cbsrc c = {im.buf, im.len, 0};
    ingot__zip_source src = {NULL, im.len, cb_read, &c, 0};
    int n;
    for (n = 1; n < 50; n++) {
        failalloc fa = {n, 0, 0};
        ingot_allocator al = {fa_alloc, fa_free, &fa};
        ingot__zip z;
        ingot_status st = ingot__zip_open(&z, &src, &al, NULL, NULL);
        if (st == INGOT_OK) {
            for (uint64_t i = 0; i < z.count && st == INGOT_OK; i++) {
                st = ingot__zip_locate(&z, i, NULL);
                if (st == INGOT_OK) st = ingot__zip_check_stored_crc(&z, i, false, NULL);
            }
            ingot__zip_close(&z);
            if (st == INGOT_NOMEM) {
                ASSERT_EQ(fa.live, 0);
                continue;
            }
            ASSERT_OK(st);
            ASSERT_EQ(fa.live, 0);
            break;
        }
        ASSERT_ST(st, INGOT_NOMEM);
        ASSERT_EQ(fa.live, 0);
        ASSERT_TRUE(z.entries == NULL && z.count == 0);
    }
    ASSERT_TRUE(n > 3 && n < 50);
}

/* The real numpy archives against their sidecars' zip facts. */
typedef struct {
    const char *name;
    uint16_t method;
    uint64_t csize, usize, lho, data;
    uint32_t crc;
} npz_fact;

static void check_npz(const char *file, const npz_fact *facts, size_t nf)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/npy/%s", INGOT_FIXTURES, file);
    size_t n;
    uint8_t *p = test_read_file(path, &n);
    ASSERT_TRUE(p != NULL);
    ingot__zip z;
    ingot__zip_source src = {p, n, NULL, NULL, 0};
    ingot_error err;
    ingot_status st = ingot__zip_open(&z, &src, NULL, NULL, &err);
    if (st != INGOT_OK) {
        free(p);
        FAIL_AT("%s: %s", file, err.msg);
    }
    CHECK(z.count == nf, "%s: count %llu", file, (unsigned long long)z.count);
    for (size_t i = 0; i < nf && i < z.count; i++) {
        const ingot__zip_entry *e = &z.entries[i];
        CHECK(ingot__zip_locate(&z, i, &err) == INGOT_OK, "%s", err.msg);
        CHECK(e->name_len == strlen(facts[i].name) && !memcmp(e->name, facts[i].name, e->name_len),
              "%s: name %zu", file, i);
        CHECK(e->method == facts[i].method, "%s: method", facts[i].name);
        CHECK(e->comp_size == facts[i].csize && e->size == facts[i].usize, "%s sizes", facts[i].name);
        CHECK(e->lho == facts[i].lho && e->data_offset == facts[i].data, "%s offsets %llu",
              facts[i].name, (unsigned long long)e->data_offset);
        CHECK(e->crc32 == facts[i].crc, "%s crc", facts[i].name);
        if (e->method == 0)
            CHECK(ingot__zip_check_stored_crc(&z, i, false, &err) == INGOT_OK, "%s", err.msg);
        else
            CHECK(crc32(0, NULL, 0) == 0 &&
                      ingot__zip_check_stored_crc(&z, i, false, NULL) == INGOT_UNSUPPORTED,
                  "deflated member CRC check must say UNSUPPORTED");
    }
    ingot__zip_close(&z);
    free(p);
}

TEST(test_zip_numpy_archives_match_sidecars)
{
    static const npz_fact stored[] = {
        {"weight.npy", 0, 192, 192, 0, 60, 0xbdf18a52u},
        {"bias.npy", 0, 152, 152, 252, 310, 0x8e5591bcu},
        {"flag.npy", 0, 129, 129, 462, 520, 0xd3f82d82u},
        {"empty.npy", 0, 128, 128, 649, 708, 0x52468febu},
        {"arr_0.npy", 0, 152, 152, 836, 895, 0x2a00e94fu},
    };
    check_npz("arrays_stored.npz", stored, 5);
    static const npz_fact deflated[] = {
        {"x.npy", 8, 15805, 16512, 0, 55, 0xe3dc546du},
        {"y.npy", 8, 237, 528, 15860, 15915, 0x629fed1bu},
        {"z.npy", 8, 133, 188, 16152, 16207, 0xfc69157cu},
    };
    check_npz("arrays_compressed.npz", deflated, 3);
}

/* ---------------------------------------------------------------------------------------------
 * Malformed catalogue
 * ------------------------------------------------------------------------------------------- */

#define EXPECT_OPEN(im, len, want)                                                                 \
    do {                                                                                           \
        ingot_error e_;                                                                            \
        memset(&e_, 0, sizeof e_);                                                                 \
        ingot_status s_ = zopen_all((im)->buf, (len), &e_);                                        \
        if (s_ != (want))                                                                          \
            FAIL_AT("got %s (%s), want %s", ingot_status_name(s_), e_.msg, ingot_status_name(want)); \
    } while (0)

TEST(test_zip_bad_truncation_every_byte)
{
    static zimg im;
    for (int mode = Z_PLAIN; mode <= Z_EXTRA64; mode++) {
        zbuild(&im, three, 3, mode);
        for (size_t n = 0; n < im.len; n++) {
            ingot_error e;
            ingot_status st = zopen_all(im.buf, n, &e);
            CHECK(st == INGOT_TRUNCATED, "mode %d len %zu: %s", mode, n, ingot_status_name(st));
        }
    }
}

TEST(test_zip_bad_not_a_zip)
{
    static zimg im;
    memset(im.buf, 'x', 100);
    EXPECT_OPEN(&im, 100, INGOT_BAD_MAGIC);
    EXPECT_OPEN(&im, 10, INGOT_TRUNCATED);
}

TEST(test_zip_bad_eocd_comment_and_trailing_bytes)
{
    static zimg im;
    zbuild(&im, three, 3, Z_PLAIN);
    im.buf[im.len] = 0;
    EXPECT_OPEN(&im, im.len + 1, INGOT_BAD_LAYOUT); /* one trailing byte */
    ing_st16(im.buf + im.eocd + 20, 5);
    EXPECT_OPEN(&im, im.len, INGOT_TRUNCATED); /* comment runs past the end */
}

TEST(test_zip_bad_eocd_fields)
{
    static zimg im;
    zbuild(&im, three, 3, Z_PLAIN);
    ing_st32(im.buf + im.eocd + 16, (uint32_t)im.cd_off + 1); /* cd offset off by one: gap */
    EXPECT_OPEN(&im, im.len, INGOT_BAD_LAYOUT);
    zbuild(&im, three, 3, Z_PLAIN);
    ing_st32(im.buf + im.eocd + 16, 0xFFFFFFF0u); /* cd offset + size wraps 32 bits, past file */
    EXPECT_OPEN(&im, im.len, INGOT_BAD_LAYOUT);
    zbuild(&im, three, 3, Z_PLAIN);
    ing_st32(im.buf + im.eocd + 16, 0xFFFFFFFFu); /* sentinel without zip64 */
    EXPECT_OPEN(&im, im.len, INGOT_BAD_LAYOUT);
    zbuild(&im, three, 3, Z_PLAIN);
    ing_st16(im.buf + im.eocd + 8, 4), ing_st16(im.buf + im.eocd + 10, 4); /* 4 > 153 / 46 */
    EXPECT_OPEN(&im, im.len, INGOT_BAD_COUNT);
    zbuild(&im, three, 3, Z_PLAIN);
    ing_st16(im.buf + im.eocd + 8, 2), ing_st16(im.buf + im.eocd + 10, 2); /* fewer entries */
    EXPECT_OPEN(&im, im.len, INGOT_BAD_LAYOUT);
    zbuild(&im, three, 3, Z_PLAIN);
    ing_st16(im.buf + im.eocd + 8, 50), ing_st16(im.buf + im.eocd + 10, 50); /* > cd_size/46 */
    EXPECT_OPEN(&im, im.len, INGOT_BAD_COUNT);
    zbuild(&im, three, 3, Z_PLAIN);
    ing_st16(im.buf + im.eocd + 8, 2); /* disk count != total */
    EXPECT_OPEN(&im, im.len, INGOT_BAD_LAYOUT);
    zbuild(&im, three, 3, Z_PLAIN);
    ing_st16(im.buf + im.eocd + 4, 1); /* multi-disk */
    EXPECT_OPEN(&im, im.len, INGOT_UNSUPPORTED);
}

TEST(test_zip_bad_zip64_records)
{
    static zimg im;
    zbuild(&im, three, 3, Z_END64);
    ing_st64(im.buf + im.z64loc + 8, UINT64_MAX); /* locator offset overflows */
    EXPECT_OPEN(&im, im.len, INGOT_BAD_LAYOUT);
    zbuild(&im, three, 3, Z_END64);
    ing_st64(im.buf + im.z64loc + 8, im.z64eocd - 1); /* points before the record */
    EXPECT_OPEN(&im, im.len, INGOT_BAD_LAYOUT);
    zbuild(&im, three, 3, Z_END64);
    ing_st64(im.buf + im.z64eocd + 4, UINT64_MAX - 5); /* record size wraps */
    EXPECT_OPEN(&im, im.len, INGOT_BAD_LAYOUT);
    zbuild(&im, three, 3, Z_END64);
    ing_st64(im.buf + im.z64eocd + 48, UINT64_MAX - 8); /* cd offset + size wraps */
    EXPECT_OPEN(&im, im.len, INGOT_BAD_LAYOUT);
    zbuild(&im, three, 3, Z_END64);
    ing_st64(im.buf + im.z64eocd + 24, 1ull << 63), ing_st64(im.buf + im.z64eocd + 32, 1ull << 63);
    EXPECT_OPEN(&im, im.len, INGOT_BAD_COUNT); /* 2^63 entries */
    zbuild(&im, three, 3, Z_END64);
    ing_st64(im.buf + im.z64eocd + 24, UINT64_MAX), ing_st64(im.buf + im.z64eocd + 32, UINT64_MAX);
    EXPECT_OPEN(&im, im.len, INGOT_BAD_COUNT);
    zbuild(&im, three, 3, Z_END64);
    ing_st16(im.buf + im.eocd + 10, 2), ing_st16(im.buf + im.eocd + 8, 2); /* classic disagrees */
    EXPECT_OPEN(&im, im.len, INGOT_BAD_LAYOUT);
    zbuild(&im, three, 3, Z_END64);
    ing_st32(im.buf + im.z64eocd, 0x06064b51); /* bad zip64 EOCD signature */
    EXPECT_OPEN(&im, im.len, INGOT_BAD_LAYOUT);
    zbuild(&im, three, 3, Z_END64);
    ing_st32(im.buf + im.z64loc + 16, 2); /* two disks */
    EXPECT_OPEN(&im, im.len, INGOT_UNSUPPORTED);
    /* zip64 extra in the central directory */
    zbuild(&im, three, 3, Z_EXTRA64);
    ing_st64(im.buf + im.cdh[0] + 46 + 5 + 4 + 16, UINT64_MAX); /* lho = 2^64-1 */
    EXPECT_OPEN(&im, im.len, INGOT_BAD_LAYOUT);
    zbuild(&im, three, 3, Z_EXTRA64);
    ing_st64(im.buf + im.cdh[0] + 46 + 5 + 4 + 8, UINT64_MAX); /* compressed size */
    EXPECT_OPEN(&im, im.len, INGOT_BAD_LAYOUT);
    zbuild(&im, three, 3, Z_EXTRA64);
    ing_st16(im.buf + im.cdh[0] + 46 + 5 + 2, 16); /* extra too short for 3 sentinels */
    EXPECT_OPEN(&im, im.len, INGOT_BAD_LAYOUT);
    zbuild(&im, three, 3, Z_EXTRA64);
    ing_st16(im.buf + im.cdh[0] + 46 + 5, 7); /* not a zip64 extra: sentinels unresolved */
    EXPECT_OPEN(&im, im.len, INGOT_BAD_LAYOUT);
    zbuild(&im, three, 3, Z_EXTRA64);
    ing_st16(im.buf + im.cdh[0] + 46 + 5 + 2, 60); /* extra record overruns the block */
    EXPECT_OPEN(&im, im.len, INGOT_BAD_LAYOUT);
}

TEST(test_zip_bad_central_entries)
{
    static zimg im;
    zbuild(&im, three, 3, Z_PLAIN);
    im.buf[im.cdh[1]] = 'Q'; /* signature */
    EXPECT_OPEN(&im, im.len, INGOT_BAD_LAYOUT);
    zbuild(&im, three, 3, Z_PLAIN);
    ing_st16(im.buf + im.cdh[2] + 28, 200); /* name runs past the directory */
    EXPECT_OPEN(&im, im.len, INGOT_BAD_LAYOUT);
    zbuild(&im, three, 3, Z_PLAIN);
    ing_st16(im.buf + im.cdh[0] + 8, 1); /* encrypted */
    EXPECT_OPEN(&im, im.len, INGOT_UNSUPPORTED);
    zbuild(&im, three, 3, Z_PLAIN);
    ing_st16(im.buf + im.cdh[0] + 34, 1); /* on disk 1 */
    EXPECT_OPEN(&im, im.len, INGOT_UNSUPPORTED);
    zbuild(&im, three, 3, Z_PLAIN);
    ing_st32(im.buf + im.cdh[0] + 20, 4); /* stored, compressed 4 != size 5 */
    EXPECT_OPEN(&im, im.len, INGOT_BAD_LAYOUT);
    zbuild(&im, three, 3, Z_PLAIN);
    im.buf[im.cdh[0] + 46] = 0xff; /* non-UTF-8 name */
    EXPECT_OPEN(&im, im.len, INGOT_BAD_NAME);
    zbuild(&im, three, 3, Z_PLAIN);
    im.buf[im.cdh[0] + 47] = 0; /* NUL in name */
    EXPECT_OPEN(&im, im.len, INGOT_BAD_NAME);
    static const zmem dup[] = {{"x", "1", 0, 0}, {"y", "2", 0, 0}, {"x", "3", 0, 0}};
    zbuild(&im, dup, 3, Z_PLAIN);
    EXPECT_OPEN(&im, im.len, INGOT_DUPLICATE);
    /* duplicates in a directory otherwise in name order (first, middle, last pair): the later
     * entry is named, at its central header */
    static const zmem dups[3][4] = {
        {{"a", "1", 0, 0}, {"a", "2", 0, 0}, {"b", "3", 0, 0}, {"c", "4", 0, 0}},
        {{"a", "1", 0, 0}, {"b", "2", 0, 0}, {"b", "3", 0, 0}, {"c", "4", 0, 0}},
        {{"a", "1", 0, 0}, {"b", "2", 0, 0}, {"cc", "3", 0, 0}, {"cc", "4", 0, 0}},
    };
    for (int k = 0; k < 3; k++) {
        zbuild(&im, dups[k], 4, Z_PLAIN);
        ingot__zip z;
        ingot_error e;
        ASSERT_ST(zopen(&z, &im, im.len, &e), INGOT_DUPLICATE);
        ASSERT_U64(e.offset, im.cdh[k + 1]);
        ASSERT_STR(e.where, dups[k][k + 1].name);
    }
    static const zmem empty_name[] = {{"", "1", 0, 0}};
    zbuild(&im, empty_name, 1, Z_PLAIN);
    EXPECT_OPEN(&im, im.len, INGOT_BAD_NAME);
}

TEST(test_zip_bad_overlap_and_offsets)
{
    static zimg im;
    zbuild(&im, three, 3, Z_PLAIN);
    ing_st32(im.buf + im.cdh[1] + 42, (uint32_t)im.lho[0]); /* same local header twice */
    EXPECT_OPEN(&im, im.len, INGOT_BAD_LAYOUT);
    zbuild(&im, three, 3, Z_PLAIN);
    ing_st32(im.buf + im.cdh[2] + 42, (uint32_t)im.lho[0] + 31); /* inside member 0 */
    EXPECT_OPEN(&im, im.len, INGOT_BAD_LAYOUT);
    zbuild(&im, three, 3, Z_PLAIN);
    ing_st32(im.buf + im.cdh[2] + 42, (uint32_t)im.cd_off); /* local header in the CD */
    EXPECT_OPEN(&im, im.len, INGOT_BAD_LAYOUT);
    /* local extra length pushes data into the next member: caught at locate */
    zbuild(&im, three, 3, Z_PLAIN);
    ing_st16(im.buf + im.lho[0] + 28, 3);
    EXPECT_OPEN(&im, im.len, INGOT_BAD_LAYOUT);
    /* stored size larger than the gap to the next member */
    zbuild(&im, three, 3, Z_PLAIN);
    ing_st32(im.buf + im.cdh[0] + 20, 40), ing_st32(im.buf + im.cdh[0] + 24, 40);
    EXPECT_OPEN(&im, im.len, INGOT_BAD_LAYOUT);
}

TEST(test_zip_bad_local_headers)
{
    static zimg im;
    zbuild(&im, three, 3, Z_PLAIN);
    im.buf[im.lho[1]] = 'Q'; /* local signature */
    EXPECT_OPEN(&im, im.len, INGOT_BAD_LAYOUT);
    zbuild(&im, three, 3, Z_PLAIN);
    im.buf[im.lho[0] + 30] = 'b'; /* local name differs */
    EXPECT_OPEN(&im, im.len, INGOT_BAD_LAYOUT);
    zbuild(&im, three, 3, Z_PLAIN);
    ing_st16(im.buf + im.lho[0] + 8, 8); /* local method differs */
    EXPECT_OPEN(&im, im.len, INGOT_BAD_LAYOUT);
    zbuild(&im, three, 3, Z_PLAIN);
    ing_st32(im.buf + im.lho[0] + 14, 1234); /* local CRC differs, no descriptor flag */
    EXPECT_OPEN(&im, im.len, INGOT_BAD_LAYOUT);
    zbuild(&im, three, 3, Z_PLAIN);
    ing_st16(im.buf + im.lho[0] + 6, 8), ing_st32(im.buf + im.lho[0] + 14, 0);
    ing_st32(im.buf + im.lho[0] + 18, 0), ing_st32(im.buf + im.lho[0] + 22, 0);
    EXPECT_OPEN(&im, im.len, INGOT_OK); /* descriptor flag: local CRC/sizes are 0 (torch) */
    zbuild(&im, three, 3, Z_PLAIN);
    ing_st16(im.buf + im.lho[0] + 6, 1); /* local encryption flag */
    EXPECT_OPEN(&im, im.len, INGOT_UNSUPPORTED);
}

TEST(test_zip_bad_crc_mismatch)
{
    static zimg im;
    zbuild(&im, three, 3, Z_PLAIN);
    im.buf[im.lho[2] + 31 + 3] ^= 1; /* one data byte of "c" */
    EXPECT_OPEN(&im, im.len, INGOT_BAD_CHECKSUM);
    zbuild(&im, three, 3, Z_PLAIN);
    ing_st32(im.buf + im.cdh[0] + 16, 0), ing_st32(im.buf + im.lho[0] + 14, 0);
    EXPECT_OPEN(&im, im.len, INGOT_BAD_CHECKSUM); /* CRC 0 is a mismatch unless accepted */
    ingot__zip z;
    ASSERT_OK(zopen(&z, &im, im.len, NULL));
    ASSERT_OK(ingot__zip_locate(&z, 0, NULL));
    ASSERT_OK(ingot__zip_check_stored_crc(&z, 0, true, NULL));
    ingot_error e;
    ASSERT_ST(ingot__zip_check_stored_crc(&z, 0, false, &e), INGOT_BAD_CHECKSUM);
    ASSERT_STR(e.where, "a.npy");
    ingot__zip_close(&z);
}

TEST(test_zip_bad_method_kept_for_adapter)
{
    static const zmem m[] = {{"a", "xyz", 12, 0}};
    static zimg im;
    zbuild(&im, m, 1, Z_PLAIN);
    ingot__zip z;
    ASSERT_OK(zopen(&z, &im, im.len, NULL));
    ASSERT_EQ(z.entries[0].method, 12);
    ASSERT_STR(ingot__zip_method_name(12), "bzip2");
    ASSERT_STR(ingot__zip_method_name(77), "unknown");
    ASSERT_OK(ingot__zip_locate(&z, 0, NULL));
    ASSERT_ST(ingot__zip_check_stored_crc(&z, 0, false, NULL), INGOT_UNSUPPORTED);
    ingot__zip_close(&z);
}

TEST(test_zip_limits)
{
    static zimg im;
    zbuild(&im, three, 3, Z_PLAIN);
    ingot__zip z;
    ingot__zip_source src = {im.buf, im.len, NULL, NULL, 0};
    ingot__zip_limits lim = {2, 0};
    ASSERT_ST(ingot__zip_open(&z, &src, NULL, &lim, NULL), INGOT_LIMIT);
    lim.max_entries = 3;
    lim.max_cd_bytes = 10;
    ASSERT_ST(ingot__zip_open(&z, &src, NULL, &lim, NULL), INGOT_LIMIT);
}

/* Opens, prefetches the local headers (ingot__zip_prefetch) and locates every entry, the archive
 * given as how: 0 a byte image (nothing to prefetch), 1 an image whose structures are read by
 * callback (copy_max, as a mapped file while it opens), 2 a read callback alone (pread mode).
 * Returns the first failure; *calls counts the callback's reads during the prefetch. */
static ingot_status zopen_pf(const uint8_t *buf, size_t len, int how, ingot_error *err,
                             unsigned *calls)
{
    cbsrc c = {buf, len, 0};
    ingot__zip_source src = {how == 2 ? NULL : buf, len, how ? cb_read : NULL, &c,
                             how == 1 ? 1u << 17 : 0};
    ingot__zip z;
    ingot_status st = ingot__zip_open(&z, &src, NULL, NULL, err);
    if (st != INGOT_OK) return st;
    unsigned before = c.calls;
    st = ingot__zip_prefetch(&z, 16, err);
    if (calls) *calls = c.calls - before;
    for (uint64_t i = 0; i < z.count && st == INGOT_OK; i++) st = ingot__zip_locate(&z, i, err);
    ingot__zip_close(&z);
    return st;
}

/* Same verdict, offset and message whether local headers come from the prefetched windows or
 * from the image, for every single-bit damage of three layouts. */
static int same_verdicts(const zimg *im)
{
    int bad = 0;
    ingot_error e0, e;
    ingot_status s0 = zopen_pf(im->buf, im->len, 0, &e0, NULL);
    for (int how = 1; how <= 2; how++) {
        memset(&e, 0, sizeof e);
        ingot_status s = zopen_pf(im->buf, im->len, how, &e, NULL);
        if (s != s0 || (s0 && (e.offset != e0.offset || strcmp(e.msg, e0.msg) != 0))) {
            if (bad++ < 5)
                fprintf(stderr, "  how %d: %s at %llu (%s), image: %s at %llu (%s)\n", how,
                        ingot_status_name(s), (unsigned long long)e.offset, e.msg,
                        ingot_status_name(s0), (unsigned long long)e0.offset, e0.msg);
        }
    }
    return bad;
}

TEST(test_zip_byte_flips_never_crash)
{
    static zimg im;
    int bad = 0;
    for (int mode = Z_PLAIN; mode <= Z_EXTRA64; mode++) {
        zbuild(&im, three, 3, mode);
        for (size_t i = 0; i < im.len; i++)
            for (int b = 0; b < 8; b += 3) {
                im.buf[i] ^= (uint8_t)(1u << b);
                (void)zopen_all(im.buf, im.len, NULL);
                bad += same_verdicts(&im);
                im.buf[i] ^= (uint8_t)(1u << b);
            }
    }
    ASSERT_EQ(bad, 0);
}

/* Members' local headers come in one read per run of headers at most 4 KiB apart, in offset
 * order, and the located entries are those of the image. */
TEST(test_zip_prefetch_reads)
{
    static zimg im;
    static char big[3][5000];
    for (int k = 0; k < 3; k++) memset(big[k], 'a' + k, sizeof big[k] - 1);
    const zmem m[6] = {{"a", "x", 0, 0},       {"b", "yy", 0, 0},     {"c", big[0], 0, 0},
                       {"d", big[1], 0, 0},    {"e", big[2], 0, 0},   {"f", "z", 0, 0}};
    zbuild(&im, m, 6, Z_PLAIN);
    unsigned calls = 0;
    ASSERT_OK(zopen_pf(im.buf, im.len, 1, NULL, &calls));
    /* a, b, c close together (one read); d and e each 5 KB after the previous header; f 5 KB
     * after e's: four reads in all */
    ASSERT_EQ(calls, 4);
    ASSERT_OK(zopen_pf(im.buf, im.len, 2, NULL, &calls));
    ASSERT_EQ(calls, 4);
    ASSERT_OK(zopen_pf(im.buf, im.len, 0, NULL, &calls));
    ASSERT_EQ(calls, 0); /* a byte image: nothing to prefetch */
    /* the same data offsets either way, and peek serves member bytes from the windows */
    cbsrc c = {im.buf, im.len, 0};
    ingot__zip_source s1 = {im.buf, im.len, cb_read, &c, 1u << 17};
    ingot__zip_source s0 = {im.buf, im.len, NULL, NULL, 0};
    ingot__zip z1, z0;
    ASSERT_OK(ingot__zip_open(&z1, &s1, NULL, NULL, NULL));
    ASSERT_OK(ingot__zip_open(&z0, &s0, NULL, NULL, NULL));
    ASSERT_OK(ingot__zip_prefetch(&z1, 16, NULL));
    for (uint64_t i = 0; i < 6; i++) {
        ASSERT_OK(ingot__zip_locate(&z1, i, NULL));
        ASSERT_OK(ingot__zip_locate(&z0, i, NULL));
        ASSERT_U64(z1.entries[i].data_offset, z0.entries[i].data_offset);
        ASSERT_U64(z1.entries[i].data_offset, im.lho[i] + 30 + 1);
        size_t dl = strlen(m[i].data), pk = dl < 16 ? dl : 16;
        const uint8_t *p = ingot__zip_peek(&z1, i, z1.entries[i].data_offset, pk);
        ASSERT_TRUE(p != NULL && memcmp(p, m[i].data, pk) == 0);
        ASSERT_TRUE(p < im.buf || p >= im.buf + im.len); /* from the windows, not the image */
        /* past the window: not served */
        ASSERT_TRUE(ingot__zip_peek(&z1, i, z1.entries[i].data_offset, 16 + 96 + 1) == NULL ||
                    dl < 17);
    }
    ingot__zip_close(&z1);
    ingot__zip_close(&z0);
}

/* ---------------------------------------------------------------------------------------------
 * Prefetch batches (issue 17, fifth round): archives of many members with any data size, local
 * extra fields of any length (odd ones too) and local zip64 extras, read through a callback that
 * records every read.
 * ------------------------------------------------------------------------------------------- */

typedef struct {
    uint32_t dl; /* data bytes: (index * 31 + k) & 0xff */
    uint16_t lx; /* local extra filler bytes (after the zip64 extra when z64) */
    bool z64;    /* local sizes 0xFFFFFFFF + zip64 extra; central sizes, offset in zip64 extra */
} bmem;

#define BMAX 160
typedef struct {
    uint8_t buf[1 << 19];
    size_t len, lho[BMAX], data[BMAX], cd_off;
} bimg;

static uint8_t bbyte(size_t i, size_t k) { return (uint8_t)(i * 31 + k); }

/* Member i is named "m%03zu" (4 bytes); end64 adds zip64 end records. */
static void bbuild(bimg *z, const bmem *m, size_t n, bool end64)
{
    z->len = 0;
#define B16(v) (ing_st16(z->buf + z->len, (uint16_t)(v)), z->len += 2)
#define B32(v) (ing_st32(z->buf + z->len, (uint32_t)(v)), z->len += 4)
#define B64(v) (ing_st64(z->buf + z->len, (uint64_t)(v)), z->len += 8)
    uint32_t crc[BMAX];
    for (size_t i = 0; i < n; i++) {
        char nm[24];
        snprintf(nm, sizeof nm, "m%03zu", i);
        uint8_t *d = malloc(m[i].dl + 1);
        for (size_t k = 0; k < m[i].dl; k++) d[k] = bbyte(i, k);
        crc[i] = (uint32_t)crc32(0, d, m[i].dl);
        z->lho[i] = z->len;
        B32(0x04034b50), B16(45), B16(0), B16(0), B32(0), B32(crc[i]);
        B32(m[i].z64 ? 0xFFFFFFFFu : m[i].dl), B32(m[i].z64 ? 0xFFFFFFFFu : m[i].dl);
        B16(4), B16(m[i].lx + (m[i].z64 ? 20 : 0));
        memcpy(z->buf + z->len, nm, 4), z->len += 4;
        if (m[i].z64) B16(1), B16(16), B64(m[i].dl), B64(m[i].dl);
        memset(z->buf + z->len, 0xEE, m[i].lx), z->len += m[i].lx;
        z->data[i] = z->len;
        memcpy(z->buf + z->len, d, m[i].dl), z->len += m[i].dl;
        free(d);
    }
    z->cd_off = z->len;
    for (size_t i = 0; i < n; i++) {
        char nm[24];
        snprintf(nm, sizeof nm, "m%03zu", i);
        bool x = m[i].z64;
        B32(0x02014b50), B16(45), B16(45), B16(0), B16(0), B32(0), B32(crc[i]);
        B32(x ? 0xFFFFFFFFu : m[i].dl), B32(x ? 0xFFFFFFFFu : m[i].dl);
        B16(4), B16(x ? 28 : 0), B16(0), B16(0), B16(0), B32(0);
        B32(x ? 0xFFFFFFFFu : z->lho[i]);
        memcpy(z->buf + z->len, nm, 4), z->len += 4;
        if (x) B16(1), B16(24), B64(m[i].dl), B64(m[i].dl), B64(z->lho[i]);
    }
    size_t cd_size = z->len - z->cd_off;
    if (end64) {
        size_t rec = z->len;
        B32(0x06064b50), B64(44), B16(45), B16(45), B32(0), B32(0);
        B64(n), B64(n), B64(cd_size), B64(z->cd_off);
        B32(0x07064b50), B32(0), B64(rec), B32(1);
    }
    B32(0x06054b50), B16(0), B16(0), B16(end64 ? 0xFFFF : n), B16(end64 ? 0xFFFF : n);
    B32(end64 ? 0xFFFFFFFFu : cd_size), B32(end64 ? 0xFFFFFFFFu : z->cd_off), B16(0);
#undef B16
#undef B32
#undef B64
}

/* A read callback that records each read's offset and length. */
typedef struct {
    const uint8_t *p;
    size_t n;
    unsigned calls;
    uint64_t off[4096], len[4096];
} recsrc;

static ingot_status rec_read(void *ctx, uint64_t off, void *dst, size_t n, ingot_error *err)
{
    recsrc *c = ctx;
    (void)err;
    if (off > c->n || n > c->n - off) return INGOT_IO;
    memcpy(dst, c->p + off, n);
    if (c->calls < 4096) c->off[c->calls] = off, c->len[c->calls] = n;
    c->calls++;
    return INGOT_OK;
}

/* Opens (how: 0 byte image, 1 image + copy_max, 2 callback only), prefetches with a data prefix
 * of 16 and locates every entry in order; data offsets into offs[] (when not NULL). The reads of
 * the prefetch alone are left in *c (how 1, 2). */
static ingot_status bopen(const bimg *im, int how, recsrc *c, uint64_t *offs, ingot_error *err)
{
    memset(c, 0, sizeof *c);
    c->p = im->buf, c->n = im->len;
    ingot__zip_source src = {how == 2 ? NULL : im->buf, im->len, how ? rec_read : NULL, c,
                             how == 1 ? 1u << 17 : 0};
    ingot__zip z;
    ingot_status st = ingot__zip_open(&z, &src, NULL, NULL, err);
    if (st != INGOT_OK) return st;
    c->calls = 0;
    st = ingot__zip_prefetch(&z, 16, err);
    unsigned pf_calls = c->calls;
    for (uint64_t i = 0; i < z.count && st == INGOT_OK; i++) {
        st = ingot__zip_locate(&z, i, err);
        if (st == INGOT_OK && offs) offs[i] = z.entries[i].data_offset;
        /* the member's first bytes through peek, when its window holds them */
        if (st == INGOT_OK && z.entries[i].size) {
            size_t k = z.entries[i].size < 16 ? (size_t)z.entries[i].size : 16;
            const uint8_t *q = ingot__zip_peek(&z, i, z.entries[i].data_offset, k);
            for (size_t j = 0; q && j < k; j++)
                if (q[j] != bbyte(i, j)) st = INGOT_IO; /* caught by the callers' ASSERT_OK */
        }
    }
    c->calls = pf_calls;
    ingot__zip_close(&z);
    return st;
}

/* The window bounds of the prefetch (zip.h): 30 + name (4) + 96 + data prefix (16), cut at the
 * next member's local header or the central directory. */
static uint64_t bwin(const bimg *im, size_t n, size_t i)
{
    uint64_t room = (i + 1 < n ? im->lho[i + 1] : im->cd_off) - im->lho[i];
    return room < 146 ? room : 146;
}

/* The gap rule: windows 4096 bytes apart share a read, 4097 apart do not. */
TEST(test_zip_prefetch_gap_rule)
{
    static bimg im;
    /* member 0: window 146 bytes, then the gap to member 1's header: 34 + dl - 146 */
    const bmem m[4] = {{4208, 0, false}, {4209, 0, false}, {5, 0, false}, {0, 0, false}};
    bbuild(&im, m, 4, false);
    ASSERT_U64(im.lho[1] - (im.lho[0] + bwin(&im, 4, 0)), 4096);
    ASSERT_U64(im.lho[2] - (im.lho[1] + bwin(&im, 4, 1)), 4097);
    static recsrc c;
    uint64_t offs[4];
    for (int how = 1; how <= 2; how++) {
        ASSERT_OK(bopen(&im, how, &c, offs, NULL));
        ASSERT_EQ(c.calls, 2); /* [m000, m001], [m002, m003] */
        ASSERT_U64(c.off[0], im.lho[0]);
        ASSERT_U64(c.off[0] + c.len[0], im.lho[1] + bwin(&im, 4, 1));
        ASSERT_U64(c.off[1], im.lho[2]);
        ASSERT_U64(c.off[1] + c.len[1], im.cd_off); /* the last member ends at the directory */
        for (size_t i = 0; i < 4; i++) ASSERT_U64(offs[i], im.data[i]);
    }
}

/* 150 members of every size class, odd local extras, local zip64 extras, zip64 end records:
 * every window lies whole inside one read, reads go up in offset order and stay within 64 KiB,
 * windows closer than 4 KiB share a read, and every entry locates where the image says. */
TEST(test_zip_prefetch_batches_match_image)
{
    static bimg im;
    static bmem m[150];
    static const uint16_t lxs[] = {0, 1, 3, 7, 67, 0, 200, 5};
    for (size_t i = 0; i < 150; i++) {
        uint32_t cls = (uint32_t)(i * 7 % 5);
        uint32_t dl = cls == 0 ? (uint32_t)(i % 3) : cls == 1 ? 100 + (uint32_t)i * 3
                    : cls == 2 ? 1500 + (uint32_t)i * 11 : cls == 3 ? 3900 + (uint32_t)i
                                                                    : 4500 + (uint32_t)i * 13;
        m[i] = (bmem){dl, lxs[i % 8], i % 5 == 2};
    }
    for (int end64 = 0; end64 <= 1; end64++) {
        bbuild(&im, m, 150, end64);
        ASSERT_TRUE(im.len <= sizeof im.buf);
        static recsrc c;
        static uint64_t o0[150], o[150];
        ASSERT_OK(bopen(&im, 0, &c, o0, NULL));
        for (size_t i = 0; i < 150; i++) ASSERT_U64(o0[i], im.data[i]);
        for (int how = 1; how <= 2; how++) {
            ASSERT_OK(bopen(&im, how, &c, o, NULL));
            for (size_t i = 0; i < 150; i++) ASSERT_U64(o[i], im.data[i]);
            ASSERT_TRUE(c.calls > 1 && c.calls < 150);
            for (unsigned r = 0; r < c.calls; r++) {
                ASSERT_TRUE(c.len[r] <= 65536);
                if (r) ASSERT_TRUE(c.off[r] >= c.off[r - 1] + c.len[r - 1]);
            }
            /* each window inside exactly one read; consecutive windows in different reads are
             * more than 4 KiB apart or would have made a read over 64 KiB */
            unsigned prev_r = 0;
            for (size_t i = 0; i < 150; i++) {
                uint64_t a = im.lho[i], b = a + bwin(&im, 150, i);
                unsigned r = 0;
                while (r < c.calls && !(c.off[r] <= a && b <= c.off[r] + c.len[r])) r++;
                ASSERT_TRUE(r < c.calls);
                if (i && r != prev_r) {
                    uint64_t pend = im.lho[i - 1] + bwin(&im, 150, i - 1);
                    ASSERT_TRUE(a - pend > 4096 || b - c.off[prev_r] > 65536);
                    ASSERT_EQ(r, prev_r + 1);
                }
                if (i && r == prev_r) ASSERT_TRUE(a - (im.lho[i - 1] + bwin(&im, 150, i - 1)) <=
                                                  4096);
                prev_r = r;
            }
        }
    }
}

/* A local header that disagrees with the central directory is refused with the same status,
 * offset and message whether its window came in a shared read (first, middle or last of a
 * batch, or the first after a read reached 64 KiB) or from the image. */
TEST(test_zip_prefetch_bad_local_header_in_batch)
{
    static bimg im;
    static bmem m[60];
    for (size_t i = 0; i < 60; i++) m[i] = (bmem){2000 + (uint32_t)i, (uint16_t)(i % 2 ? 3 : 0),
                                                  i % 7 == 3};
    bbuild(&im, m, 60, false);
    static recsrc c;
    ASSERT_OK(bopen(&im, 1, &c, NULL, NULL));
    ASSERT_TRUE(c.calls >= 2);
    /* the first member of the second read: its window follows a read cut at 64 KiB */
    size_t cut = 0;
    while (cut < 60 && im.lho[cut] != c.off[1]) cut++;
    ASSERT_TRUE(cut > 2 && cut < 59);
    const size_t targets[] = {0, 1, cut / 2, cut - 1, cut, cut + 1, 59};
    static bimg bad;
    for (size_t ti = 0; ti < sizeof targets / sizeof targets[0]; ti++) {
        size_t i = targets[ti];
        uint64_t L = im.lho[i];
        for (int kind = 0; kind < 7; kind++) {
            memcpy(&bad, &im, sizeof im);
            ingot_status want = INGOT_BAD_LAYOUT;
            uint64_t at = L;
            switch (kind) {
            case 0: bad.buf[L] ^= 1; break;                                  /* signature */
            case 1: bad.buf[L + 30 + 3] ^= 1, at = L + 30; break;            /* name */
            case 2: ing_st16(bad.buf + L + 8, 8), at = L + 8; break;         /* method */
            case 3: bad.buf[L + 14] ^= 1, at = L + 14; break;                /* CRC */
            case 4: ing_st16(bad.buf + L + 26, 5), at = L + 26; break;       /* name length */
            case 5: /* an extra length that pushes the data past the next header */
                ing_st16(bad.buf + L + 28, (uint16_t)(ing_ld16(bad.buf + L + 28) + 1)),
                    at = L + 28;
                break;
            default: ing_st16(bad.buf + L + 6, 1), want = INGOT_UNSUPPORTED, at = L + 6; /* enc. */
            }
            ingot_error e0, e;
            memset(&e0, 0, sizeof e0);
            ingot_status s0 = bopen(&bad, 0, &c, NULL, &e0);
            CHECK(s0 == want && e0.offset == at, "member %zu kind %d: %s at %llu, want %s at %llu",
                  i, kind, ingot_status_name(s0), (unsigned long long)e0.offset,
                  ingot_status_name(want), (unsigned long long)at);
            for (int how = 1; how <= 2; how++) {
                memset(&e, 0, sizeof e);
                ingot_status s1 = bopen(&bad, how, &c, NULL, &e);
                CHECK(s1 == s0 && e.offset == e0.offset && strcmp(e.msg, e0.msg) == 0,
                      "member %zu kind %d how %d: %s at %llu (%s), image: %s at %llu (%s)", i,
                      kind, how, ingot_status_name(s1), (unsigned long long)e.offset, e.msg,
                      ingot_status_name(s0), (unsigned long long)e0.offset, e0.msg);
            }
        }
    }
}

RUN_TESTS(T(test_zip_crc32_known_vectors), T(test_zip_crc32_matches_zlib_every_length_and_alignment),
          T(test_zip_open_plain), T(test_zip_open_zip64_end_records_and_extras),
          T(test_zip_open_empty_archive_and_comment), T(test_zip_directory_entry_flagged),
          T(test_zip_read_callback_source), T(test_zip_allocation_failure_loop),
          T(test_zip_numpy_archives_match_sidecars), T(test_zip_bad_truncation_every_byte),
          T(test_zip_bad_not_a_zip), T(test_zip_bad_eocd_comment_and_trailing_bytes),
          T(test_zip_bad_eocd_fields), T(test_zip_bad_zip64_records),
          T(test_zip_bad_central_entries), T(test_zip_bad_overlap_and_offsets),
          T(test_zip_bad_local_headers), T(test_zip_bad_crc_mismatch),
          T(test_zip_bad_method_kept_for_adapter), T(test_zip_limits),
          T(test_zip_byte_flips_never_crash), T(test_zip_prefetch_reads),
          T(test_zip_prefetch_gap_rule), T(test_zip_prefetch_batches_match_image),
          T(test_zip_prefetch_bad_local_header_in_batch))
