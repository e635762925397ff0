/* test_native_packed.c - .ingot v1.1 packed string/bytes arrays (docs/FORMAT.md §7.1, issue 17):
 * round trips of both forms through the writer and every accessor, the v1.0 golden file, every
 * reject rule with its status and byte offset at every vector level, the required-flag rules and
 * the header checksum over the packed bytes. Expected offsets and values are computed here from
 * the elements and the rules, not taken from the reader. */
#include "harness.h"
#include "ingot/convert.h"
#include "ingot/native.h"
#include "native_layout.h"
#include "support/utf8_levels.h"
#include "utf8.h"

typedef struct {
    const char *key;
    ingot_meta_type type;
    uint64_t n;
    const char *const *p;
    const size_t *l;
} arr;

typedef struct {
    uint8_t *img;
    size_t size;
} image;

/* A file with the arrays `a` (and a tensor and a scalar string), packed unless v10. */
static int build(image *im, const arr *a, int na, bool v10)
{
    ingot_writer_opts wo = {.format = "ingot", .alignment = 64, .ingot_v1_0 = v10};
    ingot_writer *w;
    ingot_error e;
    if (ingot_writer_new(&wo, &w, &e)) return 1;
    for (int k = 0; k < na; k++)
        if (ingot_writer_set_string_array(w, a[k].key, a[k].type, (const void *const *)a[k].p,
                                          a[k].l, a[k].n))
            return 2;
    uint8_t one = 1;
    uint64_t shape[1] = {1};
    if (ingot_writer_set_string(w, "zz.name", "packed") ||
        ingot_writer_add_tensor(w, "t", INGOT_DTYPE_U8, 1, shape, NULL, &one, &e) ||
        ingot_writer_begin_mem(w, &e) ||
        ingot_writer_commit_mem(w, (void **)&im->img, &im->size, &e))
        return 3;
    ingot_writer_free(w);
    return 0;
}

/* Absolute offset of the metadata entry with this key (the test's files are small: a scan). */
static uint64_t entry_of(const image *im, const char *key)
{
    const uint8_t *h = im->img;
    uint64_t mt = ing_ld64(h + HDR_META_TABLE), n = ing_ld64(h + HDR_N_META);
    uint64_t pool = ing_ld64(h + HDR_POOL);
    for (uint64_t i = 0; i < n; i++) {
        const uint8_t *e = h + mt + i * ING_MET_SIZE;
        if (ing_ld32(e + MET_KEY_LEN) == strlen(key) &&
            memcmp(h + pool + ing_ld64(e + MET_KEY_OFF), key, strlen(key)) == 0)
            return mt + i * ING_MET_SIZE;
    }
    return 0;
}

/* Opens the image at every vector level (header CRC checked unless skip_crc): the status, offset
 * and message must agree at all of them; returned from the first, with the error record. */
static ingot_status open_all(const image *im, bool skip_crc, ingot_error *out, int *disagree)
{
    ingot_status st = INGOT_OK;
    for (int k = 0; k < n_levels; k++) {
        ingot__utf8_limit(levels[k]);
        _Alignas(8) unsigned char ws[INGOT_NATIVE_WORKSPACE];
        ingot_native *r;
        ingot_error e;
        memset(&e, 0, sizeof e);
        ingot_status s = ingot_native_open(ws, sizeof ws, im->img, im->size, im->size,
                                           skip_crc ? INGOT_NATIVE_SKIP_HEADER_CRC : 0, &r, &e);
        if (k == 0) {
            st = s;
            *out = e;
        } else if (s != st || (s && (e.offset != out->offset || strcmp(e.msg, out->msg)))) {
            (*disagree)++;
        }
    }
    ingot__utf8_limit(INGOT__UTF8_TOP);
    return st;
}

static void fix_crc(image *im)
{
    uint64_t d = ing_ld64(im->img + HDR_DATA);
    uint32_t c = ingot_crc32c(0, im->img, HDR_CRC);
    c = ingot_crc32c(c, im->img + ING_HDR_SIZE, d - ING_HDR_SIZE);
    ing_st32(im->img + HDR_CRC, c);
}

/* ---- the arrays of the round trips ---- */

#define N_BIG 70000 /* more than 65535 elements */
static char big_text[N_BIG * 8];
static const char *big_p[N_BIG];
static size_t big_l[N_BIG];

static void make_big(void)
{
    static const char *const parts[] = {"a", "\xC3\xA9", "\xE2\x96\x81", "\xF0\x9F\x98\x80", "x"};
    size_t at = 0;
    for (int k = 0; k < N_BIG; k++) {
        big_p[k] = big_text + at;
        size_t n = 0;
        for (int j = 0; j < k % 4; j++) { /* lengths 0..7 bytes, mixed widths */
            const char *s = parts[(k + j) % 5];
            memcpy(big_text + at + n, s, strlen(s));
            n += strlen(s);
        }
        big_l[k] = n;
        at += n;
    }
}

static const char *const s_mixed[] = {"", "hello", "caf\xC3\xA9", "x\0y", "\xF0\x9F\x98\x80!",
                                      "\xE2\x96\x81tok", "\xF4\x8F\xBF\xBF"};
static const size_t l_mixed[] = {0, 5, 5, 3, 5, 6, 4};
static const char *const s_empties[] = {"", "", ""};
static const size_t l_empties[] = {0, 0, 0};
static const char *const s_one[] = {"only"};
static const size_t l_one[] = {4};
static const char *const b_mixed[] = {"", "\x00\x01\xff", "z", "", "\x00"};
static const size_t l_bmixed[] = {0, 3, 1, 0, 1};

static void arrays(arr *a)
{
    make_big();
    a[0] = (arr){"a.empty", INGOT_META_STRING, 0, NULL, NULL};
    a[1] = (arr){"b.empties", INGOT_META_STRING, 3, s_empties, l_empties};
    a[2] = (arr){"c.one", INGOT_META_STRING, 1, s_one, l_one};
    a[3] = (arr){"d.mixed", INGOT_META_STRING, 7, s_mixed, l_mixed};
    a[4] = (arr){"e.big", INGOT_META_STRING, N_BIG, big_p, big_l};
    a[5] = (arr){"f.bytes", INGOT_META_BYTES, 5, b_mixed, l_bmixed};
    a[6] = (arr){"g.nobytes", INGOT_META_BYTES, 0, NULL, NULL};
}
#define N_ARR 7

/* The packed bytes of array a as docs/FORMAT.md §7.1 lays them out, compared with the image. */
static int layout_matches(const image *im, const arr *a)
{
    const uint8_t *h = im->img;
    uint64_t e = entry_of(im, a->key), pool = ing_ld64(h + HDR_POOL);
    bool str = a->type == INGOT_META_STRING;
    if (!e || h[e + MET_FLAGS] != (MET_FLAG_ARRAY | MET_FLAG_PACKED)) return 1;
    if (ing_ld64(h + e + MET_COUNT) != a->n) return 2;
    uint64_t v = ing_ld64(h + e + MET_VALUE);
    if (v % 8) return 3; /* the writer's §8 rule: arrays at multiples of 8 */
    const uint8_t *col = h + pool + v, *blob = col + 4 * (a->n + 1);
    uint64_t off = 0;
    if (ing_ld32(col) != 0) return 4;
    for (uint64_t k = 0; k < a->n; k++) {
        if (a->l[k] && memcmp(blob + off, a->p[k], a->l[k])) return 5;
        off += a->l[k];
        if (str && blob[off++] != 0) return 6;
        if (ing_ld32(col + 4 * (k + 1)) != off) return 7;
    }
    return 0;
}

static int elements_match(const ingot_file *f, const arr *a)
{
    ingot_meta_info m;
    if (ingot_file_meta_find(f, a->key, &m) || !m.is_array || m.type != a->type || m.count != a->n)
        return 1;
    for (uint64_t k = 0; k < a->n; k++) {
        const char *s;
        size_t len;
        if (ingot_file_meta_array_string(f, m.index, k, &s, &len) || len != a->l[k] ||
            (len && memcmp(s, a->p[k], len)) || (a->type == INGOT_META_STRING && s[len] != 0))
            return 2;
    }
    const char *s;
    size_t len;
    if (ingot_file_meta_array_string(f, m.index, a->n, &s, &len) != INGOT_RANGE) return 3;
    return 0;
}

TEST(test_round_trip_both_forms)
{
    find_levels();
    arr a[N_ARR];
    arrays(a);
    for (int v10 = 0; v10 < 2; v10++) {
        image im;
        ASSERT_EQ(build(&im, a, N_ARR, v10), 0);
        ASSERT_U64(ing_ld16(im.img + HDR_MINOR), v10 ? 0 : 1);
        ASSERT_U64(ing_ld32(im.img + HDR_FLAGS_REQUIRED), v10 ? 0 : ING_FREQ_PACKED);
        for (int k = 0; k < N_ARR; k++) {
            if (!v10) CHECK(layout_matches(&im, &a[k]) == 0, "layout of %s", a[k].key);
            else
                CHECK(im.img[entry_of(&im, a[k].key) + MET_FLAGS] == MET_FLAG_ARRAY, "flags %s",
                      a[k].key);
        }
        ingot_error e;
        int dis = 0;
        ASSERT_ST(open_all(&im, false, &e, &dis), INGOT_OK);
        ASSERT_EQ(dis, 0);
        ingot_file *f;
        ASSERT_OK(ingot_file_open_buffer(im.img, im.size, NULL, &f, NULL));
        ASSERT_STR(ingot_file_version(f), v10 ? "1.0" : "1.1");
        for (int k = 0; k < N_ARR; k++) CHECK(elements_match(f, &a[k]) == 0, "%s", a[k].key);
        ingot_file_close(f);
        /* the same through the freestanding reader, header region only */
        _Alignas(8) unsigned char ws[INGOT_NATIVE_WORKSPACE];
        ingot_native *r;
        uint64_t need;
        ASSERT_OK(ingot_native_header_size(im.img, im.size, &need, NULL));
        ASSERT_OK(ingot_native_open(ws, sizeof ws, im.img, need, im.size, 0, &r, NULL));
        ingot_meta_info m;
        ASSERT_OK(ingot_native_meta_find(r, "d.mixed", 7, &m));
        const char *s;
        size_t len;
        ASSERT_OK(ingot_native_meta_array_string(r, m.index, 3, &s, &len));
        ASSERT_U64(len, 3);
        ASSERT_MEM(s, "x\0y", 4);
        free(im.img);
    }
}

/* The packed form is smaller, the v1.0 form unchanged, and a file without string/bytes arrays
 * stays v1.0 byte for byte whatever the option. */
TEST(test_forms_and_minor)
{
    arr a[N_ARR];
    arrays(a);
    image p, r, n0, n1;
    ASSERT_EQ(build(&p, a + 4, 1, false), 0);
    ASSERT_EQ(build(&r, a + 4, 1, true), 0);
    /* 70000 references of 16 bytes against 70001 offsets of 4 */
    ASSERT_U64(ing_ld64(r.img + HDR_POOL_SIZE) - ing_ld64(p.img + HDR_POOL_SIZE),
               16ull * N_BIG - 4ull * (N_BIG + 1));
    ASSERT_EQ(build(&n0, NULL, 0, false), 0);
    ASSERT_EQ(build(&n1, NULL, 0, true), 0);
    ASSERT_U64(n0.size, n1.size);
    ASSERT_TRUE(memcmp(n0.img, n1.img, n0.size) == 0);
    ASSERT_U64(ing_ld16(n0.img + HDR_MINOR), 0);
    ASSERT_U64(ing_ld32(n0.img + HDR_FLAGS_REQUIRED), 0);
    free(p.img), free(r.img), free(n0.img), free(n1.img);
}

/* tests/data/strarr_v1_0.ingot was written by the writer before the packed form (commit
 * 6ff964d4); it still reads, and the v1.0 option still writes it byte for byte. */
TEST(test_golden_v1_0)
{
    static const char *const s[] = {"", "hello", "caf\xC3\xA9", "x\0y", "\xF0\x9F\x98\x80!",
                                    "\xE2\x96\x81tok"};
    static const size_t sl[] = {0, 5, 5, 3, 5, 6};
    static const char *const b[] = {"", "\x00\x01\xff", "z"};
    static const size_t bl[] = {0, 3, 1};
    arr a[2] = {{"a.strs", INGOT_META_STRING, 6, s, sl}, {"b.bytes", INGOT_META_BYTES, 3, b, bl}};
    ingot_file *f;
    ASSERT_OK(ingot_file_open(INGOT_SOURCE_DIR "/tests/data/strarr_v1_0.ingot", NULL, &f, NULL));
    ASSERT_STR(ingot_file_version(f), "1.0");
    ASSERT_EQ(elements_match(f, &a[0]), 0);
    ASSERT_EQ(elements_match(f, &a[1]), 0);
    ingot_file_close(f);

    FILE *fp = fopen(INGOT_SOURCE_DIR "/tests/data/strarr_v1_0.ingot", "rb");
    ASSERT_TRUE(fp != NULL);
    static uint8_t gold[4096];
    size_t gn = fread(gold, 1, sizeof gold, fp);
    fclose(fp);
    ingot_writer_opts wo = {.format = "ingot", .alignment = 64, .ingot_v1_0 = true};
    ingot_writer *w;
    ASSERT_OK(ingot_writer_new(&wo, &w, NULL));
    ASSERT_OK(ingot_writer_set_string_array(w, "a.strs", INGOT_META_STRING,
                                            (const void *const *)s, sl, 6));
    ASSERT_OK(ingot_writer_set_string_array(w, "b.bytes", INGOT_META_BYTES,
                                            (const void *const *)b, bl, 3));
    ASSERT_OK(ingot_writer_set_string(w, "c.name", "golden"));
    float d[2] = {1, 2};
    uint64_t sh[1] = {2};
    ASSERT_OK(ingot_writer_add_tensor(w, "t", INGOT_DTYPE_F32, 1, sh, NULL, d, NULL));
    image im;
    ASSERT_OK(ingot_writer_begin_mem(w, NULL));
    ASSERT_OK(ingot_writer_commit_mem(w, (void **)&im.img, &im.size, NULL));
    ingot_writer_free(w);
    ASSERT_U64(im.size, gn);
    ASSERT_TRUE(memcmp(im.img, gold, gn) == 0);
    free(im.img);
}

/* ---- reject rules: one damage each, the status and offset of docs/FORMAT.md §7.1 ---- */

typedef struct {
    image im;
    uint64_t ent, col, blob; /* absolute offsets: the entry, the column, the blob */
    uint64_t count;
    bool str;
} packed;

static int build_one(packed *p, const arr *a)
{
    if (build(&p->im, a, 1, false)) return 1;
    p->ent = entry_of(&p->im, a->key);
    p->col = ing_ld64(p->im.img + HDR_POOL) + ing_ld64(p->im.img + p->ent + MET_VALUE);
    p->count = a->n;
    p->blob = p->col + 4 * (a->n + 1);
    p->str = a->type == INGOT_META_STRING;
    return 0;
}

static uint32_t off_at(const packed *p, uint64_t i) { return ing_ld32(p->im.img + p->col + 4 * i); }

/* Opens a copy damaged by fn(i); expects want at offset want_off at every level. */
#define EXPECT(p, want, want_off, what)                                                            \
    do {                                                                                           \
        ingot_error e_;                                                                            \
        int dis_ = 0;                                                                              \
        ingot_status st_ = open_all(&(p)->im, true, &e_, &dis_);                                   \
        CHECK(st_ == (want) && e_.offset == (uint64_t)(want_off) && dis_ == 0,                     \
              "%s: got %s at %" PRIu64 " (%s), want %s at %" PRIu64 ", %d levels disagree",        \
              what, ingot_status_name(st_), e_.offset, e_.msg, ingot_status_name(want),          \
              (uint64_t)(want_off), dis_);                                                         \
    } while (0)

TEST(test_reject_rules)
{
    find_levels();
    arr a[N_ARR];
    arrays(a);
    /* 40 elements of 0..7 bytes (steps of 16 and 8 and a tail); 300 of them (the VBMI pass's
     * 128-byte windows); 200 with a 100-byte element every 9 (windows too wide for a half step) */
    arr b40 = {"s", INGOT_META_BYTES, 40, big_p, big_l};
    static char longs[200][101];
    static const char *lp[200];
    static size_t ll[200];
    for (int k = 0; k < 200; k++) {
        size_t n = k % 9 == 4 ? 100 : big_l[k];
        memset(longs[k], 'a' + k % 26, n);
        if (n < 100) memcpy(longs[k], big_p[k], n);
        lp[k] = longs[k];
        ll[k] = n;
    }
    arr sets[3] = {{"s", INGOT_META_STRING, 40, big_p, big_l},
                   {"s", INGOT_META_STRING, 300, big_p, big_l},
                   {"s", INGOT_META_STRING, 200, lp, ll}};
    packed p;
    uint8_t *img, *orig;
    size_t size;
    ingot_error e;
    int dis = 0;
    for (int set = 0; set < 3; set++) {
        ASSERT_EQ(build_one(&p, &sets[set]), 0);
        img = p.im.img;
        size = p.im.size;
        orig = malloc(size);
        memcpy(orig, img, size);
    #define RESET() memcpy(img, orig, size)
        ASSERT_ST(open_all(&p.im, true, &e, &dis), INGOT_OK);

        /* 1. value a multiple of 4 */
        ing_st64(img + p.ent + MET_VALUE, ing_ld64(img + p.ent + MET_VALUE) + 2);
        EXPECT(&p, INGOT_BAD_ALIGN, p.ent + MET_VALUE, "value % 4");
        RESET();
        /* 2. the column inside the pool */
        uint64_t pool_size = ing_ld64(img + HDR_POOL_SIZE);
        ing_st64(img + p.ent + MET_COUNT, pool_size / 4);
        EXPECT(&p, INGOT_BAD_ARRAY, p.ent + MET_COUNT, "count past the pool");
        ing_st64(img + p.ent + MET_COUNT, UINT64_MAX);
        EXPECT(&p, INGOT_BAD_ARRAY, p.ent + MET_COUNT, "count 2^64-1");
        RESET();
        ing_st64(img + p.ent + MET_VALUE, (pool_size - 4 * 41 + 4) & ~3ull);
        EXPECT(&p, INGOT_BAD_ARRAY, p.ent + MET_COUNT, "column end past the pool");
        RESET();
        /* 3. off[0] = 0 (element 0 is empty here, so 1 also breaks the order: below, an array
         * where only this rule catches it) */
        ing_st32(img + p.col, 1);
        EXPECT(&p, INGOT_BAD_ARRAY, p.col, "first offset");
        RESET();
        {
            packed q;
            ASSERT_EQ(build_one(&q, &a[2]), 0); /* ["only"]: off = 0, 5 */
            ing_st32(q.im.img + q.col, 1);     /* element 0 would read "nly" */
            EXPECT(&q, INGOT_BAD_ARRAY, q.col, "first offset of [\"only\"]");
            free(q.im.img);
        }
        /* 4. per element, every lane: decreasing, past the pool, empty string, no NUL */
        uint64_t room = ing_ld64(img + HDR_POOL) + pool_size - p.blob;
        for (uint64_t i = 0; i < p.count; i++) {
            uint64_t at = p.col + 4 * (i + 1), o = off_at(&p, i + 1), prev = off_at(&p, i);
            if (prev > 0) {
                ing_st32(img + at, (uint32_t)prev - 1);
                EXPECT(&p, INGOT_BAD_ARRAY, at, "decreasing offset");
                RESET();
            }
            ing_st32(img + at, (uint32_t)room + 1);
            EXPECT(&p, INGOT_BAD_ARRAY, at, "offset past the pool");
            ing_st32(img + at, 0xFFFFFFFFu);
            EXPECT(&p, INGOT_BAD_ARRAY, at, "offset 2^32-1");
            RESET();
            ing_st32(img + at, (uint32_t)prev);
            EXPECT(&p, INGOT_BAD_STRING, at, "empty string element");
            RESET();
            img[p.blob + o - 1] = 'x';
            EXPECT(&p, INGOT_BAD_STRING, p.blob + o - 1, "no NUL");
            RESET();
            /* 5. UTF-8: a stray continuation byte at the element's first byte, a truncated 4-byte
             * sequence at its last text byte */
            if (o - prev >= 2) {
                img[p.blob + prev] = 0x80;
                EXPECT(&p, INGOT_BAD_STRING, p.blob + prev, "bad UTF-8");
                RESET();
                memset(img + p.blob + prev, 'a', o - prev - 1);
                img[p.blob + o - 2] = 0xF0;
                EXPECT(&p, INGOT_BAD_STRING, p.blob + o - 2, "truncated sequence");
                RESET();
            }
        }
        /* the first broken rule wins: a decreasing offset before a missing NUL */
        ing_st32(img + p.col + 4 * 20, off_at(&p, 19) > 0 ? off_at(&p, 19) - 1 : 0);
        img[p.blob + off_at(&p, 10) - 1] = 'x';
        EXPECT(&p, INGOT_BAD_STRING, p.blob + off_at(&p, 10) - 1, "element 9's NUL first");
        RESET();
        free(orig);
        free(img);
    }

    /* bytes: no NUL rule, empty elements allowed, the order and bounds rules hold */
    ASSERT_EQ(build_one(&p, &b40), 0);
    img = p.im.img;
    size = p.im.size;
    orig = malloc(size);
    memcpy(orig, img, size);
    ASSERT_ST(open_all(&p.im, true, &e, &dis), INGOT_OK);
    ASSERT_TRUE(off_at(&p, 1) == 0); /* element 0 is empty */
    for (uint64_t i = 0; i < p.count; i++) {
        uint64_t at = p.col + 4 * (i + 1), prev = off_at(&p, i);
        ing_st32(img + at, (uint32_t)prev); /* an empty element: valid */
        if (i + 1 < p.count) EXPECT(&p, INGOT_OK, 0, "empty bytes element");
        RESET();
        if (prev > 0) {
            ing_st32(img + at, (uint32_t)prev - 1);
            EXPECT(&p, INGOT_BAD_ARRAY, at, "bytes: decreasing offset");
            RESET();
        }
        img[p.blob + prev] = 0xFF; /* any byte */
        EXPECT(&p, INGOT_OK, 0, "bytes: any byte");
        RESET();
    }
    free(orig);
    free(img);
#undef RESET
}

/* The flags: the packed entry flag needs the header's required bit, which needs minor >= 1;
 * unknown bits are refused; the packed flag only on string/bytes arrays. */
TEST(test_flag_rules)
{
    find_levels();
    arr a[N_ARR];
    arrays(a);
    packed p;
    ASSERT_EQ(build_one(&p, &a[3]), 0);
    uint8_t *img = p.im.img;
    ing_st32(img + HDR_FLAGS_REQUIRED, 0);
    EXPECT(&p, INGOT_BAD_FLAGS, p.ent + MET_FLAGS, "packed without the header bit");
    ing_st32(img + HDR_FLAGS_REQUIRED, ING_FREQ_PACKED);
    ing_st16(img + HDR_MINOR, 0);
    EXPECT(&p, INGOT_BAD_FLAGS, HDR_FLAGS_REQUIRED, "required bit in a minor-0 file");
    ing_st16(img + HDR_MINOR, 1);
    /* a bit this reader does not know: what a v1.0 reader does with bit 0 */
    ing_st32(img + HDR_FLAGS_REQUIRED, ING_FREQ_PACKED | 2);
    EXPECT(&p, INGOT_BAD_FLAGS, HDR_FLAGS_REQUIRED, "unknown required bit");
    ing_st32(img + HDR_FLAGS_REQUIRED, ING_FREQ_PACKED);
    img[p.ent + MET_FLAGS] = MET_FLAG_PACKED;
    EXPECT(&p, INGOT_BAD_FLAGS, p.ent + MET_FLAGS, "packed scalar");
    img[p.ent + MET_FLAGS] = MET_FLAG_ARRAY | MET_FLAG_PACKED | 4;
    EXPECT(&p, INGOT_BAD_FLAGS, p.ent + MET_FLAGS, "unknown entry bit");
    img[p.ent + MET_FLAGS] = MET_FLAG_ARRAY | MET_FLAG_PACKED;
    img[p.ent + MET_TYPE] = INGOT_META_U32;
    EXPECT(&p, INGOT_BAD_FLAGS, p.ent + MET_FLAGS, "packed u32 array");
    img[p.ent + MET_TYPE] = INGOT_META_STRING;
    ingot_error e;
    int dis = 0;
    ASSERT_ST(open_all(&p.im, true, &e, &dis), INGOT_OK);
    /* a required bit without a packed entry is allowed (it says "may") */
    image v;
    ASSERT_EQ(build(&v, NULL, 0, false), 0);
    ing_st16(v.img + HDR_MINOR, 1);
    ing_st32(v.img + HDR_FLAGS_REQUIRED, ING_FREQ_PACKED);
    fix_crc(&v);
    ASSERT_ST(open_all(&v, false, &e, &dis), INGOT_OK);
    ASSERT_EQ(dis, 0);
    free(v.img);
    free(p.im.img);
}

/* The header checksum covers the column and the blob: any single-byte change of the pool is
 * refused, by a rule or by the checksum. */
TEST(test_checksum_covers_packed)
{
    arr a[N_ARR];
    arrays(a);
    arr two[2] = {a[3], a[5]};
    image im;
    ASSERT_EQ(build(&im, two, 2, false), 0);
    uint64_t pool = ing_ld64(im.img + HDR_POOL), ps = ing_ld64(im.img + HDR_POOL_SIZE);
    int ok = 0, by_crc = 0;
    for (uint64_t k = pool; k < pool + ps; k++) {
        im.img[k] ^= 0x01;
        _Alignas(8) unsigned char ws[INGOT_NATIVE_WORKSPACE];
        ingot_native *r;
        ingot_status st = ingot_native_open(ws, sizeof ws, im.img, im.size, im.size, 0, &r, NULL);
        ok += st == INGOT_OK;
        by_crc += st == INGOT_BAD_CHECKSUM;
        im.img[k] ^= 0x01;
    }
    ASSERT_EQ(ok, 0);
    ASSERT_TRUE(by_crc > 0);
    free(im.img);
}

/* The writer option "version" (ingot convert --opt version=1.0) chooses the form. */
TEST(test_version_option)
{
    static const char *const s[] = {"a", "b"};
    static const size_t l[] = {1, 1};
    for (int k = 0; k < 3; k++) {
        ingot_writer_opts wo = {.format = "ingot", .ingot_v1_0 = k == 2};
        ingot_writer *w;
        ASSERT_OK(ingot_writer_new(&wo, &w, NULL));
        ASSERT_ST(ingot_writer_set_option(w, "layout", "1.0", NULL), INGOT_UNSUPPORTED);
        ASSERT_ST(ingot_writer_set_option(w, "version", "1.2", NULL), INGOT_BAD_METADATA);
        ASSERT_OK(ingot_writer_set_option(w, "version", k == 0 ? "1.0" : "1.1", NULL));
        ASSERT_OK(ingot_writer_set_string_array(w, "s", INGOT_META_STRING,
                                                (const void *const *)s, l, 2));
        image im;
        ASSERT_OK(ingot_writer_begin_mem(w, NULL));
        ASSERT_OK(ingot_writer_commit_mem(w, (void **)&im.img, &im.size, NULL));
        ingot_writer_free(w);
        ASSERT_U64(ing_ld16(im.img + HDR_MINOR), k == 0 ? 0 : 1);
        free(im.img);
    }
}

/* ingot convert of a GGUF vocabulary: the tokens packed (or references with version=1.0), every
 * token the GGUF's. */
TEST(test_convert_gguf_vocab)
{
    ingot_file *g;
    ASSERT_OK(ingot_file_open(INGOT_FIXTURES "/gguf/ggml-vocab-llama-spm.gguf", NULL, &g, NULL));
    ingot_meta_info gm;
    ASSERT_OK(ingot_file_meta_find(g, "tokenizer.ggml.tokens", &gm));
    ASSERT_TRUE(gm.count > 30000);
    for (int v10 = 0; v10 < 2; v10++) {
        char out[700];
        snprintf(out, sizeof out, "%s/test_native_packed_vocab%d.ingot", INGOT_BINARY_DIR, v10);
        ingot_convert_plan *p;
        ASSERT_OK(ingot_convert_plan_new(g, &p, NULL));
        const char *opt[1] = {"version=1.0"};
        ingot_convert_opts o = {.no_fsync = true, .options = opt, .n_options = v10 ? 1 : 0};
        ASSERT_OK(ingot_convert_run(p, out, &o, NULL, NULL));
        ingot_convert_plan_free(p);
        ingot_file *f;
        ASSERT_OK(ingot_file_open(out, NULL, &f, NULL));
        ASSERT_STR(ingot_file_version(f), v10 ? "1.0" : "1.1");
        ingot_meta_info m;
        ASSERT_OK(ingot_file_meta_find(f, "tokenizer.ggml.tokens", &m));
        ASSERT_U64(m.count, gm.count);
        int bad = 0;
        for (uint64_t k = 0; k < m.count; k++) {
            const char *a, *b;
            size_t al, bl;
            if (ingot_file_meta_array_string(f, m.index, k, &a, &al) ||
                ingot_file_meta_array_string(g, gm.index, k, &b, &bl) || al != bl ||
                memcmp(a, b, al) || a[al] != 0)
                bad++;
        }
        ASSERT_EQ(bad, 0);
        ingot_file_close(f);
        remove(out);
    }
    ingot_file_close(g);
}

RUN_TESTS(T(test_convert_gguf_vocab), T(test_version_option), T(test_round_trip_both_forms),
          T(test_forms_and_minor), T(test_golden_v1_0), T(test_reject_rules), T(test_flag_rules),
          T(test_checksum_covers_packed))
