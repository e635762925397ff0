/* test_gguf_malformed.c - hostile GGUF inputs (RELIABILITY.md §1 for GGUF, and the holes of
 * ../shared/formats/gguf.md §4.1): every truncation point, bad magic/version, overflowing counts,
 * lengths and dimensions, bad types, duplicates, layout and alignment violations, caps. Each file
 * is built in memory, opened from a buffer, by path with mmap and with pread, with the format
 * detected and forced, and must fail with the exact status, offset and key/tensor name, leaving
 * nothing allocated and allocating no more than the file size justifies. Each check also has an
 * accepting twin.
 */
#include <unistd.h>

#include "harness.h"

/* ---- a counting allocator ---- */

typedef struct {
    size_t live, peak_single;
} counter;

static void *count_alloc(void *ctx, size_t size, size_t align)
{
    counter *c = ctx;
    void *p = NULL;
    if (posix_memalign(&p, align < sizeof(void *) ? sizeof(void *) : align, size ? size : 1))
        return NULL;
    c->live += size;
    if (size > c->peak_single) c->peak_single = size;
    return p;
}

static void count_free(void *ctx, void *p, size_t size)
{
    counter *c = ctx;
    c->live -= size;
    free(p);
}

/* ---- building files ---- */

typedef struct {
    uint8_t *b;
    size_t n, cap;
} gb;

static void put(gb *g, const void *p, size_t n)
{
    if (g->n + n > g->cap) {
        g->cap = (g->n + n) * 2 + 64;
        g->b = realloc(g->b, g->cap);
    }
    if (n) memcpy(g->b + g->n, p, n);
    g->n += n;
}
static void put32(gb *g, uint32_t v) { put(g, &v, 4); }
static void put64(gb *g, uint64_t v) { put(g, &v, 8); }
static void putstr(gb *g, const char *s)
{
    put64(g, strlen(s));
    put(g, s, strlen(s));
}
static void st32(gb *g, size_t at, uint32_t v) { memcpy(g->b + at, &v, 4); }
static void st64(gb *g, size_t at, uint64_t v) { memcpy(g->b + at, &v, 8); }

/* KV helpers: key then type then payload */
static void kv_str(gb *g, const char *k, const char *v)
{
    putstr(g, k);
    put32(g, 8);
    putstr(g, v);
}
static void kv_u32(gb *g, const char *k, uint32_t type, uint32_t v)
{
    putstr(g, k);
    put32(g, type);
    put32(g, v);
}

typedef struct {
    const char *name;
    uint32_t nd;
    uint64_t ne[5];
    uint32_t type;
    bool off_set;
    uint64_t off;
} tspec;

typedef struct {
    uint32_t version;
    gb kv;
    uint64_t n_kv;
    tspec t[4];
    uint32_t n_t;
    uint32_t align;     /* 0: 32 */
    bool no_data;       /* stop after the infos (no padding, no data) */
    size_t info_at[4];  /* out: offset of each tensor info */
    size_t data_off;    /* out */
} fspec;

static uint64_t tbytes(const tspec *t)
{
    static const struct { uint32_t id, be, bb; } tt[] = {{0, 1, 4}, {1, 1, 2}, {2, 32, 18},
                                                         {28, 1, 8}, {12, 256, 144}};
    for (size_t i = 0; i < sizeof tt / sizeof tt[0]; i++)
        if (tt[i].id == t->type) {
            uint64_t n = 1;
            for (uint32_t d = 0; d < t->nd; d++) n *= t->ne[d];
            return n / tt[i].be * tt[i].bb;
        }
    return 0;
}

static gb build(fspec *s)
{
    gb g = {0};
    uint32_t align = s->align ? s->align : 32;
    put(&g, "GGUF", 4);
    put32(&g, s->version ? s->version : 3);
    put64(&g, s->n_t);
    put64(&g, s->n_kv);
    put(&g, s->kv.b, s->kv.n);
    uint64_t off = 0;
    for (uint32_t i = 0; i < s->n_t; i++) {
        tspec *t = &s->t[i];
        s->info_at[i] = g.n;
        putstr(&g, t->name);
        put32(&g, t->nd);
        for (uint32_t d = 0; d < t->nd; d++) put64(&g, t->ne[d]);
        put32(&g, t->type);
        put64(&g, t->off_set ? t->off : off);
        uint64_t nb = tbytes(t);
        off += (nb + align - 1) / align * align;
    }
    if (s->no_data || !s->n_t) {
        s->data_off = (g.n + align - 1) / align * align;
        return g;
    }
    while (g.n % align) put(&g, "", 1);
    s->data_off = g.n;
    for (uint64_t k = 0; k < off; k++) {
        uint8_t v = (uint8_t)(k * 7 + 1);
        put(&g, &v, 1);
    }
    return g;
}

/* Offsets of fields inside tensor info i. */
static size_t f_nd(const fspec *s, const gb *g, int i)
{
    uint64_t l;
    memcpy(&l, g->b + s->info_at[i], 8);
    return s->info_at[i] + 8 + (size_t)l;
}
static size_t f_ne(const fspec *s, const gb *g, int i, int d) { return f_nd(s, g, i) + 4 + 8 * (size_t)d; }
static size_t f_type(const fspec *s, const gb *g, int i) { return f_ne(s, g, i, (int)s->t[i].nd); }
static size_t f_off(const fspec *s, const gb *g, int i) { return f_type(s, g, i) + 4; }

/* The base: two KVs, a string array, a u8 array; F32 [2,3] and Q4_0 [1,32]. */
static fspec base(void)
{
    fspec s = {0};
    kv_str(&s.kv, "general.architecture", "x");
    putstr(&s.kv, "test.strs");
    put32(&s.kv, 9);
    put32(&s.kv, 8);
    put64(&s.kv, 2);
    putstr(&s.kv, "ab");
    putstr(&s.kv, "c");
    putstr(&s.kv, "test.u8s");
    put32(&s.kv, 9);
    put32(&s.kv, 0);
    put64(&s.kv, 3);
    put(&s.kv, "\1\2\3", 3);
    s.n_kv = 3;
    s.t[0] = (tspec){"w", 2, {3, 2}, 0, false, 0};
    s.t[1] = (tspec){"q", 1, {32}, 2, false, 0};
    s.n_t = 2;
    return s;
}

/* ---- opening every way ---- */

static char tmp_path[512];

static ingot_status open_one(int via, bool detect, const uint8_t *b, size_t n, counter *cnt,
                             ingot_file **f, ingot_error *e)
{
    ingot_allocator a = {count_alloc, count_free, cnt};
    ingot_open_opts o = {.io = via == 2 ? INGOT_IO_PREAD : INGOT_IO_MMAP,
                         .allocator = &a,
                         .format = detect ? NULL : "gguf"};
    if (via == 0) return ingot_file_open_buffer(b, n, &o, f, e);
    return ingot_file_open(tmp_path, &o, f, e);
}

/* Every entry point fails with `want` (offset and where checked when given), or succeeds for
 * INGOT_OK. Returns false on any mismatch. */
static bool expect(const char *label, const uint8_t *b, size_t n, ingot_status want,
                   uint64_t off, const char *where)
{
    bool ok = true;
    FILE *fp = fopen(tmp_path, "wb");
    if (n) fwrite(b, 1, n, fp);
    fclose(fp);
    for (int via = 0; via < 3; via++) {
        for (int detect = 0; detect < 2; detect++) {
            counter cnt = {0};
            ingot_file *f = NULL;
            ingot_error e;
            memset(&e, 0x5a, sizeof e);
            ingot_status st = open_one(via, detect, b, n, &cnt, &f, &e);
            ingot_status w = want;
            if (detect && (n < 4 || memcmp(b, "GGUF", 4) != 0))
                w = n == 0 ? INGOT_TRUNCATED : INGOT_UNKNOWN_FORMAT;
            if (st != w) {
                CHECK(0, "%s via %d detect %d: got %s, want %s (%s)", label, via, detect,
                      ingot_status_name(st), ingot_status_name(w), st ? e.msg : "");
                ok = false;
            } else if (st != INGOT_OK) {
                CHECK(e.code == st && e.msg[0], "%s: error record not filled", label);
                if (w == want && off != INGOT_NO_OFFSET && e.offset != off) {
                    CHECK(0, "%s via %d: offset %" PRIu64 ", want %" PRIu64 " (%s)", label, via,
                          e.offset, off, e.msg);
                    ok = false;
                }
                if (w == want && where && strcmp(e.where, where) != 0) {
                    CHECK(0, "%s via %d: where '%s', want '%s' (%s)", label, via, e.where, where,
                          e.msg);
                    ok = false;
                }
                CHECK(f == NULL, "%s: handle on failure", label);
            } else {
                /* touch everything */
                for (uint64_t i = 0; i < ingot_file_meta_count(f); i++) {
                    ingot_meta_info m;
                    CHECK(ingot_file_meta_at(f, i, &m) == INGOT_OK, "%s: meta_at", label);
                }
                for (uint64_t i = 0; i < ingot_file_tensor_count(f); i++) {
                    ingot_tensor_info t;
                    CHECK(ingot_file_tensor_at(f, i, &t) == INGOT_OK, "%s: tensor_at", label);
                }
            }
            ingot_file_close(f);
            CHECK(cnt.live == 0, "%s via %d: %zu bytes leaked", label, via, cnt.live);
            CHECK(cnt.peak_single <= 2 * n + 4096, "%s via %d: allocation of %zu bytes for a "
                  "%zu-byte file", label, via, cnt.peak_single, n);
            if (cnt.live || cnt.peak_single > 2 * n + 4096) ok = false;
        }
    }
    return ok;
}

#define EXPECT(label, g, want, off, where) expect(label, (g).b, (g).n, want, off, where)

TEST(test_gguf_base_is_valid)
{
    fspec s = base();
    gb g = build(&s);
    ASSERT_TRUE(EXPECT("base", g, INGOT_OK, INGOT_NO_OFFSET, NULL));
    ingot_file *f;
    ASSERT_OK(ingot_file_open_buffer(g.b, g.n, NULL, &f, NULL));
    ingot_tensor_info t;
    ASSERT_OK(ingot_file_tensor_at(f, 0, &t));
    ASSERT_EQ(t.rank, 2);
    ASSERT_EQ(t.shape[0], 2); /* ne = [3, 2] is shape [2, 3] */
    ASSERT_EQ(t.shape[1], 3);
    ASSERT_EQ(t.offset, s.data_off);
    ingot_file_close(f);
    free(g.b);
    free(s.kv.b);
}

/* Row 1 and 16: every truncation point. Up to the end of the last tensor's data: TRUNCATED;
 * only the last tensor's padding may be missing. */
TEST(test_gguf_truncation_everywhere)
{
    fspec s = base();
    gb g = build(&s);
    size_t data_end = s.data_off + 32 + 18;
    for (size_t cut = 0; cut < g.n; cut++) {
        char label[64];
        snprintf(label, sizeof label, "cut at %zu", cut);
        counter cnt = {0};
        ingot_allocator a = {count_alloc, count_free, &cnt};
        ingot_open_opts o = {.allocator = &a, .format = "gguf"};
        ingot_file *f = NULL;
        ingot_error e;
        ingot_status st = ingot_file_open_buffer(g.b, cut, &o, &f, &e);
        CHECK(st == (cut < data_end ? INGOT_TRUNCATED : INGOT_OK), "%s: %s (%s)", label,
              ingot_status_name(st), e.msg);
        CHECK(cnt.live == (f ? cnt.live : 0), "%s: leak", label);
        ingot_file_close(f);
        CHECK(cnt.live == 0, "%s: leak", label);
    }
    /* the whole set of entry points at a few points */
    ASSERT_TRUE(expect("empty", g.b, 0, INGOT_TRUNCATED, INGOT_NO_OFFSET, NULL));
    ASSERT_TRUE(expect("cut 3", g.b, 3, INGOT_TRUNCATED, INGOT_NO_OFFSET, NULL));
    ASSERT_TRUE(expect("cut 23", g.b, 23, INGOT_TRUNCATED, INGOT_NO_OFFSET, NULL));
    ASSERT_TRUE(expect("cut in infos", g.b, s.info_at[1] + 3, INGOT_TRUNCATED, INGOT_NO_OFFSET,
                       NULL));
    ASSERT_TRUE(expect("data one byte short", g.b, data_end - 1, INGOT_TRUNCATED, data_end - 1,
                       "q"));
    ASSERT_TRUE(expect("last padding missing", g.b, data_end, INGOT_OK, 0, NULL));
    free(g.b);
    free(s.kv.b);
}

TEST(test_gguf_magic_and_version)
{
    fspec s = base();
    gb g = build(&s);
    g.b[3] = 'G';
    ASSERT_TRUE(EXPECT("magic GGUG", g, INGOT_BAD_MAGIC, 0, NULL));
    g.b[3] = 'F';
    static const struct { uint32_t v; ingot_status want; } rows[] = {
        {0, INGOT_BAD_VERSION},          {1, INGOT_BAD_VERSION}, {2, INGOT_OK},
        {3, INGOT_OK},                   {4, INGOT_BAD_VERSION}, {0x03000000u, INGOT_BAD_VERSION},
        {0xFFFFFFFFu, INGOT_BAD_VERSION}};
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        char label[64];
        snprintf(label, sizeof label, "version 0x%x", rows[r].v);
        st32(&g, 4, rows[r].v);
        ASSERT_TRUE(EXPECT(label, g, rows[r].want, 4, "header"));
    }
    free(g.b);
    free(s.kv.b);
}

/* Row 4 and 18: counts. */
TEST(test_gguf_counts)
{
    fspec s = base();
    gb g = build(&s);
    static const struct { size_t at; uint64_t v; ingot_status want; uint64_t off; } rows[] = {
        {8, 1ull << 63, INGOT_BAD_COUNT, 8},   {8, UINT64_MAX, INGOT_BAD_COUNT, 8},
        {8, 1ull << 40, INGOT_LIMIT, 8},       {8, 1000000, INGOT_TRUNCATED, 24},
        {8, 30, INGOT_TRUNCATED, 24},          {16, 1ull << 63, INGOT_BAD_COUNT, 16},
        {16, UINT64_MAX, INGOT_BAD_COUNT, 16}, {16, 1ull << 40, INGOT_LIMIT, 16},
        {16, 1000000, INGOT_TRUNCATED, 24},
    };
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        char label[64];
        snprintf(label, sizeof label, "count@%zu = %" PRIu64, rows[r].at, rows[r].v);
        gb c = {0};
        put(&c, g.b, g.n);
        st64(&c, rows[r].at, rows[r].v);
        ASSERT_TRUE(EXPECT(label, c, rows[r].want, rows[r].off, NULL));
        free(c.b);
    }
    /* a count that fits the file but runs into the tensor infos: they fail to parse as KVs */
    gb c = {0};
    put(&c, g.b, g.n);
    st64(&c, 16, 4);
    ASSERT_TRUE(EXPECT("n_kv one too many", c, INGOT_LIMIT, INGOT_NO_OFFSET, NULL));
    free(c.b);
    free(g.b);
    free(s.kv.b);
}

/* Rows 5, 17, 18: strings and keys. */
TEST(test_gguf_strings)
{
    fspec s = base();
    gb g = build(&s);
    gb c = {0};
    /* key length */
    static const struct { uint64_t v; ingot_status want; } rows[] = {
        {UINT64_MAX, INGOT_BAD_STRING}, {1ull << 63, INGOT_BAD_STRING},
        {1ull << 30, INGOT_LIMIT},      {0, INGOT_BAD_STRING},
        {5000, INGOT_TRUNCATED}};
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        char label[64];
        snprintf(label, sizeof label, "key length %" PRIu64, rows[r].v);
        c.n = 0;
        put(&c, g.b, g.n);
        st64(&c, 24, rows[r].v);
        ASSERT_TRUE(EXPECT(label, c, rows[r].want, 24, NULL));
    }
    /* string value length (KV 0's value at 24 + 8 + 20 + 4) */
    c.n = 0;
    put(&c, g.b, g.n);
    st64(&c, 56, UINT64_MAX);
    ASSERT_TRUE(EXPECT("value length -1", c, INGOT_BAD_STRING, 56, "general.architecture"));
    st64(&c, 56, 1ull << 30);
    ASSERT_TRUE(EXPECT("value length 1 GiB", c, INGOT_LIMIT, 56, "general.architecture"));
    st64(&c, 56, 1000);
    ASSERT_TRUE(EXPECT("value length > file", c, INGOT_TRUNCATED, 56, "general.architecture"));
    /* a 160-byte file declaring a 1 GiB string */
    fspec t = {0};
    putstr(&t.kv, "k");
    put32(&t.kv, 8);
    put64(&t.kv, 1ull << 30);
    put(&t.kv, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", 115);
    t.n_kv = 1;
    gb h = build(&t);
    ASSERT_TRUE(EXPECT("1 GiB string in 160 bytes", h, INGOT_LIMIT, 37, "k"));
    free(h.b);
    free(t.kv.b);
    /* a key of 65536 bytes (65535 is fine) */
    for (int k = 0; k < 2; k++) {
        fspec u = {0};
        size_t kl = k ? 65536 : 65535;
        char *key = malloc(kl + 1);
        memset(key, 'k', kl);
        key[kl] = 0;
        kv_u32(&u.kv, key, 4, 1);
        u.n_kv = 1;
        gb hb = build(&u);
        ASSERT_TRUE(EXPECT(k ? "key 65536" : "key 65535", hb, k ? INGOT_BAD_NAME : INGOT_OK, 24,
                           NULL));
        free(hb.b);
        free(u.kv.b);
        free(key);
    }
    free(c.b);
    free(g.b);
    free(s.kv.b);
}

/* Row 5, non-UTF-8: keys and tensor names are refused at their first invalid byte (gguf-py
 * decodes both as UTF-8); string values keep any bytes (vocabularies hold raw-byte tokens). */
TEST(test_gguf_utf8)
{
    static const struct {
        const char *label, *bytes;
        size_t bad; /* index of the first invalid byte, or SIZE_MAX if valid */
    } rows[] = {
        {"0xFF", "ab\xff", 2},
        {"lone continuation", "\x80x", 0},
        {"overlong '/'", "k\xc0\xaf", 1},
        {"surrogate U+D800", "kk\xed\xa0\x80", 2},
        {"above U+10FFFF", "\xf4\x90\x80\x80", 0},
        {"truncated sequence at the end", "key\xe2\x82", 3},
        {"two bytes, valid", "h\xc3\xa9", SIZE_MAX},
        {"four bytes, valid", "\xf0\x9f\x98\x80.w", SIZE_MAX},
    };
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        bool valid = rows[r].bad == SIZE_MAX;
        char label[96];
        /* as a key: KV 0 of a file with one tensor */
        fspec s = {0};
        kv_u32(&s.kv, rows[r].bytes, 4, 7);
        s.n_kv = 1;
        s.t[0] = (tspec){"w", 1, {8}, 0, false, 0};
        s.n_t = 1;
        gb g = build(&s);
        snprintf(label, sizeof label, "key %s", rows[r].label);
        ASSERT_TRUE(EXPECT(label, g, valid ? INGOT_OK : INGOT_BAD_STRING,
                           valid ? INGOT_NO_OFFSET : 24 + 8 + rows[r].bad,
                           valid ? NULL : "KV 0"));
        if (valid) {
            ingot_file *f;
            ASSERT_OK(ingot_file_open_buffer(g.b, g.n, NULL, &f, NULL));
            uint32_t v = 0;
            ASSERT_OK(ingot_file_meta_get_u32(f, rows[r].bytes, &v));
            ASSERT_EQ(v, 7);
            ingot_file_close(f);
        }
        free(g.b);
        free(s.kv.b);
        /* as the second tensor's name */
        s = base();
        s.t[1].name = rows[r].bytes;
        g = build(&s);
        snprintf(label, sizeof label, "tensor name %s", rows[r].label);
        ASSERT_TRUE(EXPECT(label, g, valid ? INGOT_OK : INGOT_BAD_STRING,
                           valid ? INGOT_NO_OFFSET : s.info_at[1] + 8 + rows[r].bad,
                           valid ? NULL : "tensor 1"));
        if (!valid) {
            ingot_error e;
            ingot_file *f;
            ASSERT_ST(ingot_file_open_buffer(g.b, g.n, NULL, &f, &e), INGOT_BAD_STRING);
            ASSERT_TRUE(strstr(e.msg, "name is not valid UTF-8") != NULL);
        } else {
            ingot_file *f;
            ingot_tensor_info t;
            ASSERT_OK(ingot_file_open_buffer(g.b, g.n, NULL, &f, NULL));
            ASSERT_OK(ingot_file_tensor_find(f, rows[r].bytes, &t));
            ASSERT_EQ(t.index, 1);
            ingot_file_close(f);
        }
        free(g.b);
        free(s.kv.b);
        /* as a string value, alone and inside a string array: accepted, bytes unchanged */
        s = base();
        kv_str(&s.kv, "raw", rows[r].bytes);
        putstr(&s.kv, "raw.arr");
        put32(&s.kv, 9);
        put32(&s.kv, 8);
        put64(&s.kv, 2);
        putstr(&s.kv, "ok");
        putstr(&s.kv, rows[r].bytes);
        s.n_kv += 2;
        g = build(&s);
        snprintf(label, sizeof label, "string value %s", rows[r].label);
        ASSERT_TRUE(EXPECT(label, g, INGOT_OK, INGOT_NO_OFFSET, NULL));
        ingot_file *f;
        ASSERT_OK(ingot_file_open_buffer(g.b, g.n, NULL, &f, NULL));
        const char *v;
        size_t vl;
        ASSERT_OK(ingot_file_meta_get_string(f, "raw", &v, &vl));
        ASSERT_EQ(vl, strlen(rows[r].bytes));
        ASSERT_MEM(v, rows[r].bytes, vl);
        ingot_meta_info m;
        ASSERT_OK(ingot_file_meta_find(f, "raw.arr", &m));
        ASSERT_OK(ingot_file_meta_array_string(f, m.index, 1, &v, &vl));
        ASSERT_EQ(vl, strlen(rows[r].bytes));
        ASSERT_MEM(v, rows[r].bytes, vl);
        ingot_file_close(f);
        free(g.b);
        free(s.kv.b);
    }
}

/* Row 6: arrays. */
TEST(test_gguf_arrays)
{
    fspec s = base();
    gb g = build(&s);
    /* test.strs: key at 24+8+20+4+8+1 = 65; type at 65+8+9 = 82, elem type 86, count 90 */
    size_t cnt = 90;
    ASSERT_EQ(g.b[82], 9);
    gb c = {0};
    static const struct { uint64_t v; ingot_status want; uint64_t off; } rows[] = {
        {UINT64_MAX, INGOT_BAD_ARRAY, 90}, {1ull << 63, INGOT_BAD_ARRAY, 90},
        {1ull << 40, INGOT_LIMIT, 90},     {1ull << 30, INGOT_LIMIT, 90},
        {1ull << 27, INGOT_TRUNCATED, 98}, {3, INGOT_BAD_TYPE, INGOT_NO_OFFSET}};
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        char label[64];
        snprintf(label, sizeof label, "string array count %" PRIu64, rows[r].v);
        c.n = 0;
        put(&c, g.b, g.n);
        st64(&c, cnt, rows[r].v);
        ASSERT_TRUE(EXPECT(label, c, rows[r].want, rows[r].off, rows[r].v == 3 ? NULL : "test.strs"));
    }
    static const struct { uint32_t v; ingot_status want; } et[] = {
        {13, INGOT_BAD_TYPE}, {0xFFFFFFFFu, INGOT_BAD_TYPE}, {0x7FFFFFFF, INGOT_BAD_TYPE}};
    for (size_t r = 0; r < 3; r++) {
        c.n = 0;
        put(&c, g.b, g.n);
        st32(&c, 86, et[r].v);
        ASSERT_TRUE(EXPECT("array elem type", c, et[r].want, 86, "test.strs"));
    }
    /* u8 array count larger than the bytes left */
    size_t u8cnt = 90 + 8 + 10 + 9 + 8 + 8 + 4 + 4; /* after the strings: key test.u8s */
    ASSERT_EQ(g.b[u8cnt - 4], 0);
    c.n = 0;
    put(&c, g.b, g.n);
    st64(&c, u8cnt, 100000);
    ASSERT_TRUE(EXPECT("u8 array past the end", c, INGOT_TRUNCATED, u8cnt + 8, "test.u8s"));
    st64(&c, u8cnt, 1ull << 30); /* a 1 GiB array */
    ASSERT_TRUE(EXPECT("u8 array of 1 GiB", c, INGOT_LIMIT, u8cnt, "test.u8s"));

    /* nested arrays: accepted to depth 7, a deeper bomb is BAD_ARRAY */
    for (int depth = 2; depth <= 9; depth++) {
        fspec n = {0};
        putstr(&n.kv, "nest");
        put32(&n.kv, 9);
        for (int d = 0; d < depth - 1; d++) {
            put32(&n.kv, 9);
            put64(&n.kv, 1);
        }
        put32(&n.kv, 5);
        put64(&n.kv, 1);
        put32(&n.kv, 42);
        n.n_kv = 1;
        gb h = build(&n);
        char label[64];
        snprintf(label, sizeof label, "nested depth %d", depth);
        ASSERT_TRUE(EXPECT(label, h, depth <= 8 ? INGOT_OK : INGOT_BAD_ARRAY, INGOT_NO_OFFSET,
                           "nest"));
        free(h.b);
        free(n.kv.b);
    }
    /* an inner array with a bad element type */
    fspec n = {0};
    putstr(&n.kv, "nest");
    put32(&n.kv, 9);
    put32(&n.kv, 9);
    put64(&n.kv, 1);
    put32(&n.kv, 77);
    put64(&n.kv, 0);
    n.n_kv = 1;
    gb h = build(&n);
    ASSERT_TRUE(EXPECT("inner elem type 77", h, INGOT_BAD_TYPE, 24 + 12 + 16, "nest"));
    free(h.b);
    free(n.kv.b);
    free(c.b);
    free(g.b);
    free(s.kv.b);
}

/* Rows 7, 8, 9, 14: value types, general.alignment, duplicate keys, bool values. */
TEST(test_gguf_kv_rules)
{
    fspec s = base();
    gb g = build(&s);
    gb c = {0};
    static const uint32_t bad_vt[] = {13, 0x7FFFFFFF, 0xFFFFFFFFu};
    for (size_t r = 0; r < 3; r++) {
        c.n = 0;
        put(&c, g.b, g.n);
        st32(&c, 52, bad_vt[r]);
        ASSERT_TRUE(EXPECT("value type", c, INGOT_BAD_TYPE, 52, "general.architecture"));
    }
    free(c.b);

    struct { const char *label; uint32_t type; uint32_t v; ingot_status want; } al[] = {
        {"alignment 64", 4, 64, INGOT_OK},       {"alignment 4 (ggml accepts)", 4, 4, INGOT_OK},
        {"alignment 1", 4, 1, INGOT_OK},         {"alignment 0", 4, 0, INGOT_BAD_ALIGN},
        {"alignment 13", 4, 13, INGOT_BAD_ALIGN}, {"alignment 48", 4, 48, INGOT_BAD_ALIGN},
        {"alignment 2^31", 4, 1u << 31, INGOT_BAD_ALIGN},
        {"alignment 2^21", 4, 1u << 21, INGOT_BAD_ALIGN},
        {"alignment as INT32", 5, 32, INGOT_WRONG_TYPE},
    };
    for (size_t r = 0; r < sizeof al / sizeof al[0]; r++) {
        fspec a = base();
        kv_u32(&a.kv, "general.alignment", al[r].type, al[r].v);
        a.n_kv++;
        a.align = al[r].want == INGOT_OK ? al[r].v : 32;
        gb h = build(&a);
        size_t at = 24 + (a.kv.n - 4 - 4); /* the value type field of the new KV */
        ASSERT_TRUE(EXPECT(al[r].label, h, al[r].want,
                           al[r].want == INGOT_WRONG_TYPE ? at : at + 4, "general.alignment"));
        if (al[r].want == INGOT_OK) {
            ingot_file *f;
            ASSERT_OK(ingot_file_open_buffer(h.b, h.n, NULL, &f, NULL));
            ASSERT_EQ(ingot_file_alignment(f), al[r].v);
            ingot_tensor_info t;
            ASSERT_OK(ingot_file_tensor_at(f, 1, &t));
            ASSERT_EQ(t.offset % al[r].v, 0);
            /* F32 data at alignment 1 or 4 is still 4-aligned here: no UNALIGNED flag */
            ingot_file_close(f);
        }
        free(h.b);
        free(a.kv.b);
    }
    /* general.alignment as u64 */
    {
        fspec a = base();
        putstr(&a.kv, "general.alignment");
        put32(&a.kv, 10);
        put64(&a.kv, 32);
        a.n_kv++;
        gb h = build(&a);
        ASSERT_TRUE(EXPECT("alignment as UINT64", h, INGOT_WRONG_TYPE, INGOT_NO_OFFSET,
                           "general.alignment"));
        free(h.b);
        free(a.kv.b);
    }
    /* duplicate key: the second copy is named, at its offset */
    {
        fspec a = base();
        size_t at = 24 + a.kv.n;
        kv_str(&a.kv, "general.architecture", "y");
        a.n_kv++;
        gb h = build(&a);
        ASSERT_TRUE(EXPECT("duplicate key", h, INGOT_DUPLICATE, at, "general.architecture"));
        free(h.b);
        free(a.kv.b);
    }
    /* bool 2: accepted as true (as ggml); bool array too */
    {
        fspec a = base();
        putstr(&a.kv, "b");
        put32(&a.kv, 7);
        put(&a.kv, "\2", 1);
        a.n_kv++;
        gb h = build(&a);
        ASSERT_TRUE(EXPECT("bool 2", h, INGOT_OK, 0, NULL));
        ingot_file *f;
        ASSERT_OK(ingot_file_open_buffer(h.b, h.n, NULL, &f, NULL));
        bool b = false;
        ASSERT_OK(ingot_file_meta_get_bool(f, "b", &b));
        ASSERT_TRUE(b);
        ingot_file_close(f);
        free(h.b);
        free(a.kv.b);
    }
    free(g.b);
    free(s.kv.b);
}

/* Rows 9-15 for tensor infos, and the spec's holes. */
typedef struct {
    const char *label;
    tspec t0;
    ingot_status want;
    int field; /* 0 info start, 1 nd, 2 ne0, 3 type, 4 offset, -1 unchecked */
} trow;

TEST(test_gguf_tensor_rules)
{
    const uint64_t M = UINT64_MAX;
    const trow rows[] = {
        {"n_dims 5", {"w", 5, {1, 1, 1, 1, 2}, 0, false, 0}, INGOT_BAD_NDIMS, 1},
        {"n_dims 4", {"w", 4, {1, 1, 2, 3}, 0, false, 0}, INGOT_OK, -1},
        {"n_dims 0 (scalar)", {"w", 0, {0}, 0, false, 0}, INGOT_OK, -1},
        {"dim -1", {"w", 2, {M, 2}, 0, false, 0}, INGOT_BAD_SHAPE, 2},
        {"dim 0", {"w", 2, {0, 4}, 0, false, 0}, INGOT_OK, -1},
        {"outer dim 0 (ggml SIGFPE)", {"w", 2, {8, 0}, 1, false, 0}, INGOT_OK, -1},
        {"0 x huge", {"w", 2, {0, 1ull << 62}, 0, false, 0}, INGOT_OK, -1},
        {"(INT64_MAX, 2)", {"w", 2, {(uint64_t)INT64_MAX, 2}, 0, false, 0}, INGOT_BAD_SHAPE, 2},
        {"(2^32, 2^32): wraps to 0 in ggml", {"w", 2, {1ull << 32, 1ull << 32}, 0, false, 0},
         INGOT_BAD_SHAPE, 2},
        {"(2^40, 2^40): wraps to 0", {"w", 2, {1ull << 40, 1ull << 40}, 0, false, 0},
         INGOT_BAD_SHAPE, 2},
        {"(16, 2^60): wraps to 0", {"w", 2, {16, 1ull << 60}, 0, false, 0}, INGOT_BAD_SHAPE, 2},
        {"(3, 2^62, 4): wraps to 0", {"w", 3, {3, 1ull << 62, 4}, 0, false, 0}, INGOT_BAD_SHAPE,
         2},
        {"(3, 2^62): negative", {"w", 2, {3, 1ull << 62}, 0, false, 0}, INGOT_BAD_SHAPE, 2},
        {"F64 2^62: bytes overflow", {"w", 1, {1ull << 62}, 28, false, 0}, INGOT_BAD_SIZE, 2},
        {"GGML_PAD wrap: F32 (2^64-1)/4", {"w", 1, {(M / 4)}, 0, false, 0}, INGOT_BAD_ALIGN, 0},
        {"Q4_0 ne0 33", {"w", 1, {33}, 2, false, 0}, INGOT_BAD_SIZE, 2},
        {"Q4_0 ne0 32", {"w", 1, {32}, 2, false, 0}, INGOT_OK, -1},
        {"Q4_K ne0 128", {"w", 1, {128}, 12, false, 0}, INGOT_BAD_SIZE, 2},
        {"removed type 4", {"w", 1, {32}, 4, false, 0}, INGOT_BAD_TYPE, 3},
        {"removed type 31", {"w", 1, {32}, 31, false, 0}, INGOT_BAD_TYPE, 3},
        {"type 43", {"w", 1, {32}, 43, false, 0}, INGOT_BAD_TYPE, 3},
        {"type -1", {"w", 1, {32}, 0xFFFFFFFFu, false, 0}, INGOT_BAD_TYPE, 3},
        {"type 0x7fffffff", {"w", 1, {32}, 0x7FFFFFFF, false, 0}, INGOT_BAD_TYPE, 3},
        {"offset -1", {"w", 1, {8}, 0, true, M}, INGOT_BAD_ALIGN, 4},
        {"offset misaligned", {"w", 1, {8}, 0, true, 8}, INGOT_BAD_ALIGN, 4},
        {"offset gap", {"w", 1, {8}, 0, true, 32}, INGOT_BAD_LAYOUT, 4},
        {"offset -32", {"w", 1, {8}, 0, true, M - 31}, INGOT_BAD_LAYOUT, 4},
        {"name of 64 bytes", {"wwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwww", 1, {8}, 0,
          false, 0}, INGOT_BAD_NAME, 0},
        {"name of 63 bytes", {"wwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwww", 1, {8}, 0,
          false, 0}, INGOT_OK, -1},
        {"empty name", {"", 1, {8}, 0, false, 0}, INGOT_BAD_NAME, 0},
    };
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        fspec s = base();
        s.t[0] = rows[r].t0;
        gb g = build(&s);
        size_t fo[5] = {s.info_at[0], f_nd(&s, &g, 0), f_ne(&s, &g, 0, 0), f_type(&s, &g, 0),
                        f_off(&s, &g, 0)};
        uint64_t off = rows[r].field < 0 ? INGOT_NO_OFFSET : fo[rows[r].field];
        char where[64]; /* ingot_error.where holds 63 bytes */
        snprintf(where, sizeof where, "%s", rows[r].t0.name);
        /* the second tensor's offset is derived from the first's size: when that size is
         * absurd the layout check would fire instead; keep the row about the first tensor */
        ASSERT_TRUE(EXPECT(rows[r].label, g, rows[r].want, off, rows[r].want ? (where[0] ? where : "") : NULL));
        free(g.b);
        free(s.kv.b);
    }
    /* a NUL inside a name */
    {
        fspec s = base();
        gb g = build(&s);
        gb c = {0};
        put(&c, g.b, g.n);
        free(g.b);
        ASSERT_TRUE(EXPECT("base again", c, INGOT_OK, 0, NULL));
        c.b[s.info_at[1] + 8] = 0; /* "q" -> "\0" */
        ASSERT_TRUE(EXPECT("NUL in name", c, INGOT_BAD_NAME, s.info_at[1], NULL));
        free(c.b);
        free(s.kv.b);
    }
    /* duplicate tensor name, second tensor out of order / overlapping */
    {
        fspec s = base();
        s.t[1].name = "w";
        s.t[1].type = 0;
        s.t[1].nd = 1;
        s.t[1].ne[0] = 4;
        gb g = build(&s);
        ASSERT_TRUE(EXPECT("duplicate tensor", g, INGOT_DUPLICATE, s.info_at[1], "w"));
        free(g.b);
        s.t[1].name = "v";
        s.t[1].off_set = true;
        s.t[1].off = 0;
        g = build(&s);
        ASSERT_TRUE(EXPECT("overlap", g, INGOT_BAD_LAYOUT, f_off(&s, &g, 1), "v"));
        free(g.b);
        s.t[1].off = 64;
        g = build(&s);
        ASSERT_TRUE(EXPECT("gap", g, INGOT_BAD_LAYOUT, f_off(&s, &g, 1), "v"));
        free(g.b);
        free(s.kv.b);
    }
    /* Row 15: the sum of padded sizes overflows int64 */
    {
        fspec s = base();
        s.t[0] = (tspec){"a", 1, {1ull << 60}, 0, false, 0};
        s.t[1] = (tspec){"b", 1, {1ull << 60}, 0, true, 1ull << 62};
        s.no_data = true;
        gb g = build(&s);
        ASSERT_TRUE(EXPECT("data size overflows", g, INGOT_BAD_SIZE, s.info_at[1], "b"));
        free(g.b);
        free(s.kv.b);
    }
    /* the GGML_PAD wrap of the spec: first tensor of 2^64-4 bytes, second at offset 0 */
    {
        fspec s = base();
        s.t[0] = (tspec){"a", 1, {UINT64_MAX / 4}, 0, false, 0};
        s.t[1] = (tspec){"b", 1, {4}, 0, true, 0};
        s.no_data = true;
        gb g = build(&s);
        ASSERT_TRUE(EXPECT("GGML_PAD wrap", g, INGOT_BAD_ALIGN, s.info_at[0], "a"));
        free(g.b);
        free(s.kv.b);
    }
}

/* Rows 13, 16: where the data may lie. */
TEST(test_gguf_data_section)
{
    fspec s = base();
    gb g = build(&s);
    /* trailing bytes after the aligned end (polyglot) */
    gb c = {0};
    put(&c, g.b, g.n);
    put(&c, "trailer", 7);
    ASSERT_TRUE(EXPECT("trailing bytes", c, INGOT_BAD_LAYOUT, g.n, NULL));
    free(c.b);
    /* vocab-only: no tensors, nothing after the KVs (data offset past the end): fine */
    fspec v = {0};
    kv_str(&v.kv, "general.architecture", "x");
    v.n_kv = 1;
    gb h = build(&v);
    ASSERT_TRUE(h.n % 32 != 0);
    ASSERT_TRUE(EXPECT("vocab-only", h, INGOT_OK, 0, NULL));
    while (h.n % 32) put(&h, "", 1); /* ggml's writer pads: fine too */
    ASSERT_TRUE(EXPECT("vocab-only padded", h, INGOT_OK, 0, NULL));
    put(&h, "x", 1);
    ASSERT_TRUE(EXPECT("vocab-only plus a byte", h, INGOT_BAD_LAYOUT, h.n - 1, NULL));
    free(h.b);
    free(v.kv.b);
    /* tensors (all empty) but no room for the padding: the data section lies past the end */
    fspec e = {0};
    e.t[0] = (tspec){"e", 1, {0}, 0, false, 0};
    e.n_t = 1;
    e.no_data = true;
    h = build(&e);
    ASSERT_TRUE(EXPECT("empty tensor, no padding", h, INGOT_TRUNCATED, INGOT_NO_OFFSET, "e"));
    while (h.n % 32) put(&h, "", 1);
    ASSERT_TRUE(EXPECT("empty tensor, padded", h, INGOT_OK, 0, NULL));
    free(h.b);
    /* an empty tensor after the last data, the padding before it missing: its offset lies
     * past the end of the file (found by fuzz_gguf: verify scanned past the buffer) */
    fspec z = base();
    z.t[2] = (tspec){"z", 1, {0}, 0, false, 0};
    z.n_t = 3;
    h = build(&z);
    ASSERT_TRUE(EXPECT("empty tensor at the aligned end", h, INGOT_OK, 0, NULL));
    size_t cut = z.data_off + 32 + 18; /* end of q's data: z's offset is 64 past data_off */
    ASSERT_TRUE(expect("empty tensor past the end", h.b, cut, INGOT_TRUNCATED, cut, "z"));
    free(h.b);
    free(z.kv.b);
    /* non-zero padding opens, and fails ingot_file_verify() */
    c = (gb){0};
    put(&c, g.b, g.n);
    c.b[s.data_off + 24] = 0xAA; /* padding after the first tensor */
    ingot_file *f;
    ingot_error err;
    ASSERT_OK(ingot_file_open_buffer(c.b, c.n, NULL, &f, &err));
    ASSERT_ST(ingot_file_verify(f, 1, &err), INGOT_BAD_LAYOUT);
    ASSERT_U64(err.offset, s.data_off + 24);
    ASSERT_STR(err.where, "w");
    ingot_file_close(f);
    c.b[s.data_off + 24] = 0;
    c.b[s.data_off - 1] = 0xAA; /* padding before the data section */
    ASSERT_OK(ingot_file_open_buffer(c.b, c.n, NULL, &f, &err));
    ASSERT_ST(ingot_file_verify(f, 1, &err), INGOT_BAD_LAYOUT);
    ASSERT_U64(err.offset, s.data_off - 1);
    ingot_file_close(f);
    free(c.b);
    free(g.b);
    free(s.kv.b);
    free(e.kv.b);
}

/* Byte flips all over the header: never a crash, always a known status, never a leak. */
TEST(test_gguf_byte_flips)
{
    fspec s = base();
    gb g = build(&s);
    for (size_t at = 0; at < s.data_off; at++) {
        for (int k = 0; k < 3; k++) {
            static const uint8_t x[3] = {0xFF, 0x80, 0x01};
            g.b[at] ^= x[k];
            counter cnt = {0};
            ingot_allocator a = {count_alloc, count_free, &cnt};
            ingot_open_opts o = {.allocator = &a, .format = "gguf"};
            ingot_file *f = NULL;
            ingot_status st = ingot_file_open_buffer(g.b, g.n, &o, &f, NULL);
            CHECK(ingot_status_name(st)[0] != 'U' || st == INGOT_UNSUPPORTED, "flip %zu", at);
            if (f) {
                for (uint64_t i = 0; i < ingot_file_tensor_count(f); i++) {
                    ingot_tensor_info t;
                    ingot_file_tensor_at(f, i, &t);
                }
                ingot_file_verify(f, 1, NULL);
            }
            ingot_file_close(f);
            CHECK(cnt.live == 0, "flip %zu: leak", at);
            g.b[at] ^= x[k];
        }
    }
    free(g.b);
    free(s.kv.b);
}

int main(int argc, char **argv)
{
    snprintf(tmp_path, sizeof tmp_path, "%s/test_gguf_malformed.%d.gguf", INGOT_BINARY_DIR,
             (int)getpid());
    static const test_case cases[] = {
        T(test_gguf_base_is_valid), T(test_gguf_truncation_everywhere),
        T(test_gguf_magic_and_version), T(test_gguf_counts), T(test_gguf_strings),
        T(test_gguf_utf8),
        T(test_gguf_arrays), T(test_gguf_kv_rules), T(test_gguf_tensor_rules),
        T(test_gguf_data_section), T(test_gguf_byte_flips),
    };
    int rc = harness_run(cases, sizeof cases / sizeof cases[0], argc, argv);
    remove(tmp_path);
    return rc;
}
