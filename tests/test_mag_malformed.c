/*
 * test_mag_malformed.c - the RELIABILITY.md §1 catalogue for both .mag formats, on mutations of
 * the real fixtures: truncation at every byte, every single-byte flip of the structure, each
 * header and record rule with its exact status code, byte offset and name, and the CRC-32C
 * regions. Every structural case is checked with the checksum on and off (the structure is
 * validated first, so the code does not depend on it), from a buffer and through pread.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "files.h"
#include "ingot/ingot.h"

#define FIX INGOT_FIXTURES "/mag/"
#define MIXED FIX "storage/storage_v100_mixed.mag"
#define SNAP FIX "snapshot/snapshot_mixed.mag"

static void st32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void st64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static ingot_status open_mode(const uint8_t *b, size_t n, const char *fmt, ingot_verify_mode v,
                              bool pread, ingot_error *e)
{
    ingot_open_opts o = {0};
    o.format = fmt;
    o.verify = v;
    ingot_file *f = NULL;
    ingot_status st;
    memset(e, 0, sizeof *e);
    if (pread) {
        const char *path = INGOT_BINARY_DIR "/mag_malformed.tmp";
        FILE *fp = fopen(path, "wb");
        if (!fp) return INGOT_IO;
        fwrite(b, 1, n, fp);
        fclose(fp);
        o.io = INGOT_IO_PREAD;
        st = ingot_file_open(path, &o, &f, e);
    } else {
        st = ingot_file_open_buffer(b, n, &o, &f, e);
    }
    if ((st == INGOT_OK) != (f != NULL)) return INGOT_MISUSE; /* out-param contract */
    ingot_file_close(f);
    return st;
}

/* The same code (and offset/name when given) with the checksum on and off, buffer and pread. */
static int expect_at(int line, const uint8_t *b, size_t n, const char *fmt, ingot_status want,
                     uint64_t off, const char *where)
{
    int bad = 0;
    for (int mode = 0; mode < 4; mode++) {
        ingot_error e;
        ingot_status st = open_mode(b, n, fmt, mode & 1 ? INGOT_VERIFY_NONE : INGOT_VERIFY_HEADER,
                                    mode >= 2, &e);
        bool ok = st == want;
        if (ok && want != INGOT_OK && off != UINT64_MAX) ok = e.offset == off;
        if (ok && want != INGOT_OK && where) ok = strcmp(e.where, where) == 0;
        if (!ok) {
            char msg[512];
            fprintf(stderr, "  line %d mode %d: got %s (%s), want %s at %llu '%s'\n", line, mode,
                    ingot_status_name(st), ingot_error_format(&e, msg, sizeof msg),
                    ingot_status_name(want), (unsigned long long)off, where ? where : "");
            bad++;
        }
    }
    return bad;
}

#define EXPECT(b, n, fmt, want, off, where)                                                       \
    CHECK(expect_at(__LINE__, b, n, fmt, want, off, where) == 0, "case at line %d", __LINE__)
#define ANY UINT64_MAX

/* ---- truncation ---- */

typedef struct {
    const char *file;
    uint32_t nm, nt;
    uint64_t content_end;
} sfix;

static const sfix storage[] = {
    {"storage/storage_v100_mixed.mag", 4, 5, 704},  {"storage/storage_v1_mixed.mag", 4, 4, 576},
    {"storage/storage_v100_one_f32.mag", 1, 1, 192}, {"storage/storage_v100_meta_only.mag", 1, 0, 46},
    {"storage/storage_v100_empty.mag", 0, 0, 24},    {"storage/storage_v100_many.mag", 30, 24, 3008},
};

/* Expected code of a storage archive cut to `cut` bytes: counts are bounded by the bytes left
 * before anything is allocated (BAD_COUNT), then every record or data block running past the
 * end is TRUNCATED; the zero slack after the content may be cut freely. */
static ingot_status storage_cut(const sfix *s, uint64_t cut)
{
    if (cut < 24) return INGOT_TRUNCATED;
    if ((uint64_t)s->nm * 17 + (uint64_t)s->nt * 33 > cut - 24) return INGOT_BAD_COUNT;
    return cut < s->content_end ? INGOT_TRUNCATED : INGOT_OK;
}

TEST(test_mag_truncation_every_byte)
{
    for (size_t k = 0; k < sizeof storage / sizeof *storage; k++) {
        char path[512];
        snprintf(path, sizeof path, FIX "%s", storage[k].file);
        size_t n;
        uint8_t *b = test_read_file(path, &n);
        ASSERT_TRUE(b);
        for (size_t cut = 0; cut < n; cut++) {
            ingot_status want = storage_cut(&storage[k], cut);
            ingot_error e;
            ingot_status st = open_mode(b, cut, "mag", INGOT_VERIFY_HEADER, false, &e);
            CHECK(st == want, "%s cut %zu: %s, want %s (%s)", storage[k].file, cut,
                  ingot_status_name(st), ingot_status_name(want), e.msg);
            /* detected from content: the same (a cut inside the magic is still claimed) */
            ingot_status st2 = open_mode(b, cut, NULL, INGOT_VERIFY_HEADER, false, &e);
            CHECK(st2 == (cut == 0 ? INGOT_TRUNCATED : want), "%s cut %zu detected: %s",
                  storage[k].file, cut, ingot_status_name(st2));
        }
        /* pread at a few cuts: the header is read in growing steps */
        for (size_t cut = 0; cut < n; cut += n / 7 + 1) {
            ingot_error e;
            ingot_status want = storage_cut(&storage[k], cut);
            CHECK(open_mode(b, cut, "mag", INGOT_VERIFY_HEADER, true, &e) == want, "pread cut %zu",
                  cut);
        }
        free(b);
    }
    static const struct {
        const char *file;
        uint32_t nt;
    } snaps[] = {{"snapshot/snapshot_mixed.mag", 6}, {"snapshot/snapshot_one_f32.mag", 1}};
    for (size_t k = 0; k < 2; k++) {
        char path[512];
        snprintf(path, sizeof path, FIX "%s", snaps[k].file);
        size_t n;
        uint8_t *b = test_read_file(path, &n);
        ASSERT_TRUE(b);
        for (size_t cut = 0; cut < n; cut++) {
            ingot_status want = cut < 32                                ? INGOT_TRUNCATED
                                : (uint64_t)snaps[k].nt * 29 > cut - 32 ? INGOT_BAD_COUNT
                                                                        : INGOT_TRUNCATED;
            ingot_error e;
            ingot_status st = open_mode(b, cut, "mag-snapshot", INGOT_VERIFY_HEADER, false, &e);
            CHECK(st == want, "%s cut %zu: %s, want %s (%s)", snaps[k].file, cut,
                  ingot_status_name(st), ingot_status_name(want), e.msg);
            /* detected: below 36 bytes the snapshot marker is cut off and the archive reader
             * answers; any error will do, never success */
            st = open_mode(b, cut, NULL, INGOT_VERIFY_HEADER, false, &e);
            CHECK(cut < 36 ? st != INGOT_OK : st == want, "%s cut %zu detected: %s", snaps[k].file,
                  cut, ingot_status_name(st));
        }
        free(b);
    }
}

/* ---- byte flips ---- */

typedef struct {
    uint64_t off, len;
} range;

/* Whether byte p (now v) of the file lies in a BOOL tensor of f and is neither 0 nor 1. */
static bool bad_bool_at(const ingot_file *f, uint64_t p, uint8_t v)
{
    for (uint64_t i = 0; f && i < ingot_file_tensor_count(f); i++) {
        ingot_tensor_info t;
        if (ingot_file_tensor_at(f, i, &t) == INGOT_OK && t.dtype == INGOT_DTYPE_BOOL &&
            p >= t.offset && p - t.offset < t.nbytes)
            return v > 1;
    }
    return false;
}

/* Every single-byte flip outside the tensor data is caught, at open or by verify; flips inside
 * the data are not (neither format checksums its data), except a BOOL byte flipped above 1. */
static void flips(const char *path, const range *data, size_t nd, uint64_t skip_lo,
                  uint64_t skip_hi, bool has_padding)
{
    size_t n;
    uint8_t *b = test_read_file(path, &n);
    if (!b) {
        CHECK(0, "load %s", path);
        return;
    }
    int caught_open = 0, caught_verify = 0;
    for (size_t p = 0; p < n; p++) {
        bool in_data = p >= skip_lo && p < skip_hi;
        for (size_t d = 0; d < nd; d++) in_data |= p >= data[d].off && p < data[d].off + data[d].len;
        static const uint8_t xs[] = {0x01, 0x80, 0xff};
        for (size_t x = 0; x < sizeof xs; x++) {
            b[p] ^= xs[x];
            ingot_file *f = NULL;
            ingot_status st = ingot_file_open_buffer(b, n, NULL, &f, NULL);
            ingot_status vst = INGOT_OK;
            if (st == INGOT_OK) vst = ingot_file_verify(f, 1, NULL);
            if (st != INGOT_OK) caught_open++;
            else if (vst != INGOT_OK && vst != INGOT_BAD_VALUE) caught_verify++;
            /* a flip inside a BOOL tensor that leaves a byte above 1 is a BAD_VALUE */
            if (in_data)
                CHECK(st == INGOT_OK &&
                          vst == (bad_bool_at(f, p, b[p]) ? INGOT_BAD_VALUE : INGOT_OK),
                      "%s: data flip at %zu: %s", path, p, ingot_status_name(vst));
            else CHECK(st != INGOT_OK || vst != INGOT_OK, "%s: flip 0x%02x at %zu not caught", path,
                       xs[x], p);
            ingot_file_close(f);
            /* without the checksum: never a crash, and the getters work on what opens */
            ingot_open_opts o = {0};
            o.verify = INGOT_VERIFY_NONE;
            if (ingot_file_open_buffer(b, n, &o, &f, NULL) == INGOT_OK) {
                for (uint64_t i = 0; i < ingot_file_tensor_count(f); i++) {
                    ingot_tensor_info t;
                    CHECK(ingot_file_tensor_at(f, i, &t) == INGOT_OK && t.offset + t.nbytes <= n,
                          "view in bounds");
                }
                ingot_file_close(f);
            }
            b[p] ^= xs[x];
        }
    }
    CHECK(caught_open > 0 && (caught_verify > 0) == has_padding, "%s: caught %d at open, %d by verify",
          path, caught_open, caught_verify);
    free(b);
}

TEST(test_mag_byte_flips)
{
    static const range mixed_data[] = {{384, 24}, {448, 6}, {512, 24}, {576, 20}, {640, 24}};
    flips(MIXED, mixed_data, 5, 0, 0, true); /* block padding: caught by verify */
    /* snapshot: the data [382, 486) and the timestamp [8, 16) are not covered by anything */
    static const range snap_data[] = {{382, 104}};
    flips(SNAP, snap_data, 1, 8, 16, false);
}

/* ---- the storage archive, rule by rule ---- */

static uint8_t *mixed(size_t *n) { return test_read_file(MIXED, n); }

/* mixed: metadata pi@24 lr@42 neg@60 epoch@79; tensors bias@100 (rank 3) mask@163 (rank 4)
 * big.i64@223 ids.i32@262 weight@301 (rank 2); records end 354, data from 384, content 704. */
TEST(test_mag_storage_header_rules)
{
    size_t n;
    uint8_t *b = mixed(&n);
    ASSERT_TRUE(b);
    EXPECT(b, n, "mag", INGOT_OK, ANY, NULL);
    uint8_t c[1024];
#define FRESH() memcpy(c, b, n)
    FRESH();
    memcpy(c, "MAG?", 4);
    EXPECT(c, n, "mag", INGOT_BAD_MAGIC, 0, "header");
    CHECK(open_mode(c, n, NULL, INGOT_VERIFY_HEADER, false, &(ingot_error){0}) ==
              INGOT_UNKNOWN_FORMAT,
          "no magic: not claimed");
    static const uint32_t versions[] = {0, 2, 99, 101, 0x64000000u, 0x01000000u, UINT32_MAX};
    for (size_t i = 0; i < sizeof versions / sizeof *versions; i++) {
        FRESH();
        st32(c + 4, versions[i]);
        EXPECT(c, n, "mag", INGOT_BAD_VERSION, 4, "header");
    }
    FRESH(); /* version 1 means era A1: big.i64's code 10 is unknown there */
    st32(c + 4, 1);
    EXPECT(c, n, "mag", INGOT_BAD_TYPE, 223, "big.i64");
    FRESH();
    st32(c + 20, 1);
    EXPECT(c, n, "mag", INGOT_BAD_FLAGS, 20, "header");
    static const uint32_t counts[] = {UINT32_MAX, 0x80000000u, 23};
    for (size_t i = 0; i < 3; i++) {
        FRESH();
        st32(c + 12, counts[i]);
        EXPECT(c, n, "mag", INGOT_BAD_COUNT, 12, "header");
        FRESH();
        st32(c + 16, counts[i] == 23 ? 48 : counts[i]);
        EXPECT(c, n, "mag", INGOT_BAD_COUNT, 16, "header");
    }
    FRESH(); /* one tensor more: record 5 is the 0xFF fill, rank 255 */
    st32(c + 12, 6);
    EXPECT(c, n, "mag", INGOT_BAD_NDIMS, 354, "tensor record 5");
    FRESH(); /* one tensor fewer: the data would start at 320, bias says 384 */
    st32(c + 12, 4);
    EXPECT(c, n, "mag", INGOT_BAD_LAYOUT, 112, "layer0.bias_f16");
    FRESH(); /* one metadata record more: bias's tensor record read as metadata, its offset
              * field as a 384-byte key holding NULs */
    st32(c + 16, 5);
    EXPECT(c, n, "mag", INGOT_BAD_STRING, 116, "metadata record 4");
    /* a 160-byte file cannot declare more than fits */
    FRESH();
    st32(c + 12, 1000000);
    EXPECT(c, 160, "mag", INGOT_BAD_COUNT, 12, "header");
    free(b);
}

TEST(test_mag_storage_metadata_rules)
{
    size_t n;
    uint8_t *b = mixed(&n);
    ASSERT_TRUE(b);
    uint8_t c[1024];
    static const uint32_t types[] = {0, 3, 0xff};
    for (size_t i = 0; i < 3; i++) {
        FRESH();
        st32(c + 24, types[i]);
        EXPECT(c, n, "mag", INGOT_BAD_TYPE, 24, "pi");
    }
    FRESH();
    st32(c + 24, 0x102);
    EXPECT(c, n, "mag", INGOT_BAD_FLAGS, 24, "pi");
    FRESH();
    st32(c + 36, 0);
    EXPECT(c, n, "mag", INGOT_BAD_STRING, 36, "metadata record 0");
    FRESH();
    st32(c + 36, 65536);
    EXPECT(c, n, "mag", INGOT_BAD_NAME, 36, "metadata record 0");
    FRESH();
    st32(c + 36, UINT32_MAX);
    EXPECT(c, n, "mag", INGOT_BAD_NAME, 36, "metadata record 0");
    FRESH();
    st32(c + 36, 1000);
    EXPECT(c, n, "mag", INGOT_TRUNCATED, 36, "metadata record 0");
    FRESH();
    c[40] = 0xc0, c[41] = 0x80; /* overlong NUL */
    EXPECT(c, n, "mag", INGOT_BAD_STRING, 40, "metadata record 0");
    FRESH();
    c[40] = 0;
    EXPECT(c, n, "mag", INGOT_BAD_STRING, 40, "metadata record 0");
    FRESH();
    c[41] = 0xed; /* "p\xed": truncated sequence */
    EXPECT(c, n, "mag", INGOT_BAD_STRING, 40, "metadata record 0");
    FRESH(); /* "lr" -> "pi": same length, two "pi" */
    memcpy(c + 58, "pi", 2);
    EXPECT(c, n, "mag", INGOT_DUPLICATE, 42, "pi");
    free(b);
}

TEST(test_mag_storage_tensor_rules)
{
    size_t n;
    uint8_t *b = mixed(&n);
    ASSERT_TRUE(b);
    uint8_t c[1024];
    FRESH();
    st32(c + 100, 0x001); /* rank 0 */
    EXPECT(c, n, "mag", INGOT_BAD_NDIMS, 100, "tensor record 0");
    FRESH();
    st32(c + 100, 0x901); /* rank 9 */
    EXPECT(c, n, "mag", INGOT_BAD_NDIMS, 100, "tensor record 0");
    FRESH();
    st32(c + 100, 0xff01);
    EXPECT(c, n, "mag", INGOT_BAD_NDIMS, 100, "tensor record 0");
    static const uint32_t codes[] = {11, 12, 0x7f, 0xff};
    for (size_t i = 0; i < 4; i++) {
        FRESH();
        st32(c + 100, 0x300 | codes[i]);
        EXPECT(c, n, "mag", INGOT_BAD_TYPE, 100, "layer0.bias_f16");
    }
    FRESH();
    st32(c + 100, 0x10301);
    EXPECT(c, n, "mag", INGOT_BAD_FLAGS, 100, "layer0.bias_f16");
    FRESH();
    st32(c + 144, 0);
    EXPECT(c, n, "mag", INGOT_BAD_STRING, 144, "tensor record 0");
    FRESH();
    st32(c + 144, 70000);
    EXPECT(c, n, "mag", INGOT_BAD_NAME, 144, "tensor record 0");
    FRESH();
    st32(c + 144, 800);
    EXPECT(c, n, "mag", INGOT_TRUNCATED, 144, "tensor record 0");
    FRESH();
    c[150] = 0xff;
    EXPECT(c, n, "mag", INGOT_BAD_STRING, 148, "tensor record 0");
    /* shapes */
    FRESH();
    st64(c + 120, 0);
    EXPECT(c, n, "mag", INGOT_BAD_SHAPE, 120, "layer0.bias_f16");
    FRESH();
    st64(c + 128, UINT64_MAX); /* dim -1 */
    EXPECT(c, n, "mag", INGOT_BAD_SHAPE, 128, "layer0.bias_f16");
    FRESH();
    st64(c + 128, 1ull << 63);
    EXPECT(c, n, "mag", INGOT_BAD_SHAPE, 128, "layer0.bias_f16");
    FRESH(); /* (2^32, 2^32) */
    st64(c + 321, 1ull << 32);
    st64(c + 329, 1ull << 32);
    EXPECT(c, n, "mag", INGOT_BAD_SHAPE, 329, "layer0.weight");
    FRESH(); /* (INT64_MAX, 2) */
    st64(c + 321, (uint64_t)INT64_MAX);
    st64(c + 329, 2);
    EXPECT(c, n, "mag", INGOT_BAD_SHAPE, 329, "layer0.weight");
    FRESH();
    st64(c + 104, 13); /* numel != 12 */
    EXPECT(c, n, "mag", INGOT_BAD_SHAPE, 104, "layer0.bias_f16");
    FRESH(); /* i64 [2^62]: the element count fits, the byte size does not */
    st64(c + 227, 1ull << 62);
    st64(c + 243, 1ull << 62);
    EXPECT(c, n, "mag", INGOT_BAD_SIZE, 227, "big.i64");
    /* offsets */
    FRESH();
    st64(c + 112, 385);
    EXPECT(c, n, "mag", INGOT_BAD_ALIGN, 112, "layer0.bias_f16");
    FRESH();
    st64(c + 112, 320); /* inside the records' fill */
    EXPECT(c, n, "mag", INGOT_BAD_LAYOUT, 112, "layer0.bias_f16");
    FRESH();
    st64(c + 175, 384); /* overlaps bias */
    EXPECT(c, n, "mag", INGOT_BAD_LAYOUT, 175, "mask");
    FRESH();
    st64(c + 313, 704); /* a gap */
    EXPECT(c, n, "mag", INGOT_BAD_LAYOUT, 313, "layer0.weight");
    FRESH();
    st64(c + 313, UINT64_MAX - 63); /* off + size wraps */
    EXPECT(c, n, "mag", INGOT_BAD_LAYOUT, 313, "layer0.weight");
    /* duplicates: "big.i64" -> "ids.i32"; reported at the later record */
    FRESH();
    memcpy(c + 255, "ids.i32", 7);
    EXPECT(c, n, "mag", INGOT_DUPLICATE, 262, "ids.i32");
    /* fill, padding, slack */
    FRESH();
    c[360] = 0xfe;
    EXPECT(c, n, "mag", INGOT_BAD_LAYOUT, 360, "records");
    FRESH();
    c[831] = 1;
    EXPECT(c, n, "mag", INGOT_BAD_LAYOUT, 831, "trailer");
    FRESH();
    c[704] = 0xff; /* the slack is zeros */
    EXPECT(c, n, "mag", INGOT_BAD_LAYOUT, 704, "trailer");
    FRESH();
    c[n] = 0; /* one byte past the reference writer's estimate */
    EXPECT(c, n + 1, "mag", INGOT_BAD_LAYOUT, 832, "trailer");
    EXPECT(c, 704, "mag", INGOT_OK, ANY, NULL); /* slack trimmed: fine */
    /* block padding: not read at open (O(header)); verify and VERIFY_ALL catch it */
    FRESH();
    c[408] = 0;
    EXPECT(c, n, "mag", INGOT_OK, ANY, NULL);
    ingot_file *f;
    ingot_error e;
    ASSERT_OK(ingot_file_open_buffer(c, n, NULL, &f, NULL));
    ASSERT_ST(ingot_file_verify(f, 1, &e), INGOT_BAD_LAYOUT);
    ASSERT_U64(e.offset, 408);
    ASSERT_STR(e.where, "layer0.bias_f16");
    ASSERT_ST(ingot_file_tensor_verify(f, 0, &e), INGOT_BAD_LAYOUT);
    ASSERT_OK(ingot_file_tensor_verify(f, 1, &e));
    ingot_file_close(f);
    ingot_open_opts o = {0};
    o.verify = INGOT_VERIFY_ALL;
    ASSERT_ST(ingot_file_open_buffer(c, n, &o, &f, NULL), INGOT_BAD_LAYOUT);
    free(b);
}

TEST(test_mag_storage_v1_rules)
{
    size_t n;
    uint8_t *b = test_read_file(FIX "storage/storage_v1_mixed.mag", &n);
    ASSERT_TRUE(b);
    uint8_t c[1024];
    /* v1 tensors: bias@100 (rank 3) */
    FRESH();
    st32(c + 100, 0x701); /* rank 7: version 1 allows 6 */
    EXPECT(c, n, "mag", INGOT_BAD_NDIMS, 100, "tensor record 0");
    FRESH();
    st32(c + 100, 0x304); /* code 4: era A1 has 0..3 */
    EXPECT(c, n, "mag", INGOT_BAD_TYPE, 100, "layer0.bias_f16");
    FRESH(); /* version 100: code 3 (ids.i32) is u8 there, but its padding holds data, and
              * the A1 reading fits: still i32 */
    st32(c + 4, 100);
    ingot_file *f;
    ASSERT_OK(ingot_file_open_buffer(c, n, &(ingot_open_opts){.verify = INGOT_VERIFY_NONE}, &f,
                                     NULL));
    ingot_tensor_info t;
    ASSERT_OK(ingot_file_tensor_find(f, "ids.i32", &t));
    ASSERT_EQ(t.dtype, INGOT_DTYPE_I32);
    ingot_file_close(f);
    free(b);
}

/* ---- checksums ---- */

TEST(test_mag_crc_regions)
{
    size_t n;
    uint8_t *b = mixed(&n);
    ASSERT_TRUE(b);
    uint8_t c[1024];
    /* storage: one window [12, 354): header counts/aux, metadata records, tensor records */
    static const struct {
        uint64_t at;
        uint8_t v;
        const char *what;
    } hits[] = {
        {8, 0x00, "stored CRC"},  {41, 'j', "metadata key"}, {28, 0x19, "metadata value"},
        {71, 0x08, "i64 value"},  {221, 'n', "tensor key"},   {344, 'X', "last tensor key"},
    };
    for (size_t i = 0; i < sizeof hits / sizeof *hits; i++) {
        FRESH();
        c[hits[i].at] = hits[i].v;
        ingot_error e;
        ingot_status st = open_mode(c, n, "mag", INGOT_VERIFY_HEADER, false, &e);
        CHECK(st == INGOT_BAD_CHECKSUM && e.offset == 8 && strcmp(e.where, "header and records") == 0,
              "%s: %s at %llu '%s'", hits[i].what, ingot_status_name(st),
              (unsigned long long)e.offset, e.where);
        /* INGOT_VERIFY_NONE skips it at open; ingot_file_verify still checks it */
        ingot_file *f;
        ingot_open_opts o = {0};
        o.verify = INGOT_VERIFY_NONE;
        CHECK(ingot_file_open_buffer(c, n, &o, &f, NULL) == INGOT_OK, "%s: VERIFY_NONE opens",
              hits[i].what);
        CHECK(ingot_file_verify(f, 1, &e) == INGOT_BAD_CHECKSUM, "%s: verify", hits[i].what);
        ingot_file_close(f);
    }
    /* outside the window: the data is not covered (documented) */
    FRESH();
    c[700] ^= 0xff; /* weight's padding */
    c[640] ^= 0x01; /* weight's data */
    EXPECT(c, n, "mag", INGOT_OK, ANY, NULL);
    free(b);

    /* snapshot: window [20, 378) */
    b = test_read_file(SNAP, &n);
    ASSERT_TRUE(b);
    static const uint64_t snap_hits[] = {16, 69, 100};
    for (size_t i = 0; i < 3; i++) {
        FRESH();
        c[snap_hits[i]] ^= 0x01; /* stored CRC; "layer0.weight" -> "lbyer0..."; a pool byte */
        ingot_error e;
        ingot_status st = open_mode(c, n, "mag-snapshot", INGOT_VERIFY_HEADER, false, &e);
        CHECK(st == INGOT_BAD_CHECKSUM && e.offset == 16 &&
                  strcmp(e.where, "header, pool and descriptors") == 0,
              "snapshot byte %llu: %s '%s'", (unsigned long long)snap_hits[i],
              ingot_status_name(st), e.where);
        CHECK(open_mode(c, n, "mag-snapshot", INGOT_VERIFY_NONE, false, &e) == INGOT_OK,
              "snapshot VERIFY_NONE");
    }
    FRESH();
    c[400] ^= 0x01; /* data */
    c[9] ^= 0x01;   /* timestamp */
    EXPECT(c, n, "mag-snapshot", INGOT_OK, ANY, NULL);
    free(b);
}

/* ---- the snapshot, rule by rule ---- */

/* snapshot_mixed: SRP!@32 count@36 offsets@40..67 blob@68..121 MDT!@122 DSC!@126; descriptors
 * ids@130 (rank 1) bias@162 (3) weight@210 (2) big@250 (1) mask@282 (4) emb@338 (2); BUF!@378,
 * data 382..486. */
TEST(test_mag_snapshot_rules)
{
    size_t n;
    uint8_t *b = test_read_file(SNAP, &n);
    ASSERT_TRUE(b);
    uint8_t c[1024];
    const char *S = "mag-snapshot";
    EXPECT(b, n, S, INGOT_OK, ANY, NULL);
    static const uint32_t versions[] = {0, 1, 99, 101, 0x64000000u};
    for (size_t i = 0; i < 5; i++) {
        FRESH();
        st32(c + 4, versions[i]);
        EXPECT(c, n, S, INGOT_BAD_VERSION, 4, "header");
        EXPECT(c, n, NULL, INGOT_BAD_VERSION, 4, "header"); /* detected: no fallback success */
    }
    FRESH();
    memcpy(c, "MAG?", 4);
    EXPECT(c, n, S, INGOT_BAD_MAGIC, 0, "header");
    FRESH();
    st32(c + 20, 1);
    EXPECT(c, n, S, INGOT_BAD_FLAGS, 20, "header");
    FRESH();
    st32(c + 24, 1);
    EXPECT(c, n, S, INGOT_UNSUPPORTED, 24, "header");
    FRESH();
    st32(c + 28, UINT32_MAX);
    EXPECT(c, n, S, INGOT_BAD_COUNT, 28, "header");
    FRESH();
    st32(c + 28, 5);
    EXPECT(c, n, S, INGOT_BAD_COUNT, 36, "SRP!");
    FRESH();
    st32(c + 36, 7);
    EXPECT(c, n, S, INGOT_BAD_COUNT, 36, "SRP!");
    static const struct {
        uint64_t at;
        const char *name;
    } markers[] = {{32, "SRP!"}, {122, "MDT!"}, {126, "DSC!"}, {378, "BUF!"}};
    for (size_t i = 0; i < 4; i++) {
        FRESH();
        c[markers[i].at + 1] = 'x';
        EXPECT(c, n, S, INGOT_BAD_MAGIC, markers[i].at, markers[i].name);
    }
    /* pool */
    FRESH();
    st32(c + 40, 1);
    EXPECT(c, n, S, INGOT_BAD_STRING, 40, "SRP!");
    FRESH();
    st32(c + 48, 13); /* string 1 empty */
    EXPECT(c, n, S, INGOT_BAD_STRING, 48, "SRP!");
    FRESH();
    st32(c + 48, 12); /* decreasing */
    EXPECT(c, n, S, INGOT_BAD_STRING, 48, "SRP!");
    FRESH();
    st32(c + 64, 200u << 20);
    EXPECT(c, n, S, INGOT_LIMIT, 64, "SRP!");
    FRESH();
    st32(c + 64, 1000); /* past the file */
    EXPECT(c, n, S, INGOT_TRUNCATED, 64, "SRP!");
    FRESH();
    c[70] = 0xff;
    EXPECT(c, n, S, INGOT_BAD_STRING, 68, "SRP!");
    FRESH(); /* "ids.i32" -> "big.i64": two equal keys */
    memcpy(c + 68 + 28, "big.i64", 7);
    EXPECT(c, n, S, INGOT_DUPLICATE, 250, "big.i64");
    /* descriptors */
    FRESH();
    st32(c + 134, 6);
    EXPECT(c, n, S, INGOT_BAD_NAME, 134, "descriptor 0");
    FRESH();
    st32(c + 134, 1); /* bias's key id, used again by descriptor 1 */
    EXPECT(c, n, S, INGOT_DUPLICATE, 166, "layer0.bias_f16");
    FRESH();
    c[132] = 1;
    EXPECT(c, n, S, INGOT_BAD_FLAGS, 130, "ids.i32");
    FRESH();
    c[130] = 65; /* magnetron writes at most 64 (and reads below 64); ingot reads up to 64 */
    EXPECT(c, n, S, INGOT_BAD_NDIMS, 130, "ids.i32");
    FRESH();
    c[130] = 255;
    EXPECT(c, n, S, INGOT_BAD_NDIMS, 130, "ids.i32");
    FRESH();
    c[131] = 12;
    EXPECT(c, n, S, INGOT_BAD_TYPE, 131, "ids.i32");
    FRESH();
    c[131] = 0xff;
    EXPECT(c, n, S, INGOT_BAD_TYPE, 131, "ids.i32");
    FRESH();
    st64(c + 138, 6);
    EXPECT(c, n, S, INGOT_BAD_SHAPE, 138, "ids.i32");
    FRESH();
    st64(c + 138, 0);
    st64(c + 154, 0);
    EXPECT(c, n, S, INGOT_BAD_SHAPE, 154, "ids.i32");
    FRESH();
    st64(c + 154, UINT64_MAX);
    EXPECT(c, n, S, INGOT_BAD_SHAPE, 154, "ids.i32");
    FRESH(); /* i64 [2^62]: byte size overflows */
    st64(c + 258, 1ull << 62);
    st64(c + 274, 1ull << 62);
    EXPECT(c, n, S, INGOT_BAD_SIZE, 258, "big.i64");
    FRESH();
    st64(c + 146, 1);
    EXPECT(c, n, S, INGOT_BAD_LAYOUT, 146, "ids.i32");
    FRESH();
    st64(c + 178, 0); /* bias overlapping ids */
    EXPECT(c, n, S, INGOT_BAD_LAYOUT, 178, "layer0.bias_f16");
    /* exact length */
    FRESH();
    c[n] = 0;
    EXPECT(c, n + 1, S, INGOT_BAD_LAYOUT, 486, "BUF!");
    EXPECT(b, n - 1, S, INGOT_TRUNCATED, 382, "BUF!");
    free(b);
}

/* An empty snapshot and the smallest archive are valid. */
TEST(test_mag_minimal_files)
{
    static const uint8_t empty_a[24] = {'M', 'A', 'G', '!', 100, 0, 0, 0, 0x5d, 0xb5, 0x60, 0x2b};
    EXPECT(empty_a, 24, NULL, INGOT_OK, ANY, NULL);
    ingot_writer_opts wo = {0};
    wo.format = "mag-snapshot";
    ingot_writer *w;
    ASSERT_OK(ingot_writer_new(&wo, &w, NULL));
    ASSERT_OK(ingot_writer_begin_mem(w, NULL));
    void *out;
    size_t n;
    ASSERT_OK(ingot_writer_commit_mem(w, &out, &n, NULL));
    ASSERT_EQ(n, 32 + 8 + 4 + 8 + 4);
    EXPECT(out, n, NULL, INGOT_OK, ANY, NULL);
    ingot_writer_free_mem(NULL, out, n);
    ingot_writer_free(w);
}

RUN_TESTS(T(test_mag_truncation_every_byte), T(test_mag_byte_flips),
          T(test_mag_storage_header_rules), T(test_mag_storage_metadata_rules),
          T(test_mag_storage_tensor_rules), T(test_mag_storage_v1_rules), T(test_mag_crc_regions),
          T(test_mag_snapshot_rules), T(test_mag_minimal_files))
