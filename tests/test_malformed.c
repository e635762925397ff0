/* test_malformed.c - the hostile-input suite of the native .ingot reader (RELIABILITY.md §0-1).
 *
 * Every file of tests/corpus/bad/MANIFEST is opened from a buffer, by path (mmap and pread) and
 * with the freestanding ingot_native_open(), and must fail with the exact status, a filled
 * ingot_error (code, message, offset, where) and no memory left allocated. `verify` rows must
 * open and fail in ingot_file_verify(). The corpus is rebuilt in memory by gen_bad_corpus.c and
 * compared byte for byte with the files on disk. Each check also has accepting twins.
 *
 * Regenerate the corpus: build/tests/test_malformed --regen <source>/tests/corpus
 */
#include <dirent.h>
#include <stdalign.h>
#include <time.h>

#include "harness.h"
#include "files.h"
#include "ingot/native.h"

#include "gen_bad_corpus.c"

#define CORPUS INGOT_SOURCE_DIR "/tests/corpus"


static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- a counting allocator: nothing may stay allocated after a failed open, and no single
 * allocation may exceed what the file size justifies (RELIABILITY.md §1 "allocation <=
 * min(cap, file size)") ---- */

typedef struct {
    size_t live, peak_single, calls;
} counter;

static void *count_alloc(void *ctx, size_t size, size_t align)
{
    counter *c = ctx;
    void *p = NULL;
    if (posix_memalign(&p, align < sizeof(void *) ? sizeof(void *) : align, size) != 0) return NULL;
    c->live += size;
    c->calls++;
    if (size > c->peak_single) c->peak_single = size;
    return p;
}

static void count_free(void *ctx, void *p, size_t size)
{
    counter *c = ctx;
    c->live -= size;
    free(p);
}

/* ---- opening one image every way ---- */

typedef enum { VIA_BUFFER, VIA_MMAP, VIA_PREAD, VIA_COUNT } via;
static const char *const via_name[VIA_COUNT] = {"buffer", "mmap", "pread"};

/* Opens image (buf, n) or path `path` via v with format forced to "ingot" (or detected when
 * detect is true) and the given verify mode. */
static ingot_status open_via(via v, const uint8_t *buf, size_t n, const char *path, bool detect,
                             ingot_verify_mode vm, counter *cnt, ingot_file **f, ingot_error *e)
{
    ingot_allocator a = {count_alloc, count_free, cnt};
    ingot_open_opts o = {.io = v == VIA_PREAD ? INGOT_IO_PREAD : INGOT_IO_MMAP,
                         .verify = vm,
                         .allocator = &a,
                         .format = detect ? NULL : "ingot"};
    if (v == VIA_BUFFER) return ingot_file_open_buffer(buf, n, &o, f, e);
    return ingot_file_open(path, &o, f, e);
}

/* Checks an ingot_error against a row's expectations. */
static void check_err(const char *ctx, const char *file, const ingot_error *e, ingot_status want,
                      bool off_set, uint64_t off, const char *where)
{
    CHECK(e->code == want, "%s %s: err.code %s, want %s", file, ctx, ingot_status_name(e->code),
          ingot_status_name(want));
    CHECK(e->msg[0] != 0, "%s %s: empty message", file, ctx);
    if (off_set)
        CHECK(e->offset == off, "%s %s: err.offset %" PRIu64 ", want %" PRIu64 " (%s)", file, ctx,
              e->offset, off, e->msg);
    if (where)
        CHECK(strcmp(e->where, where) == 0, "%s %s: err.where '%s', want '%s'", file, ctx,
              e->where, where);
}

static void fill_garbage(ingot_error *e)
{
    memset(e, 0x5a, sizeof *e);
    e->where[sizeof e->where - 1] = 0;
    e->msg[sizeof e->msg - 1] = 0;
    e->msg[0] = 0;
}

/* One `open` row: every entry point fails with the exact status and detail. */
static void run_open_row(const gcase *c, const gx *x, const uint8_t *img, size_t n,
                         const char *path)
{
    const char *file = c->file;
    /* status when the format is detected from content: a bad magic or fewer than 8 bytes is
     * simply not recognised as .ingot */
    ingot_status detect_want =
        c->want == INGOT_BAD_MAGIC || (n > 0 && n < ING_MAGIC_LEN) ? INGOT_UNKNOWN_FORMAT : c->want;
    for (int v = 0; v < VIA_COUNT; v++) {
        for (int detect = 0; detect < 2; detect++) {
            counter cnt = {0, 0, 0};
            ingot_file *f = (ingot_file *)&cnt; /* must be reset to NULL */
            ingot_error e;
            fill_garbage(&e);
            double t0 = now_s();
            ingot_status st = open_via((via)v, img, n, path, detect, INGOT_VERIFY_HEADER, &cnt,
                                       &f, &e);
            double dt = now_s() - t0;
            ingot_status want = detect ? detect_want : c->want;
            char ctx[64];
            snprintf(ctx, sizeof ctx, "%s%s", via_name[v], detect ? "+detect" : "");
            CHECK(st == want, "%s %s: got %s, want %s (%s)", file, ctx, ingot_status_name(st),
                  ingot_status_name(want), e.msg);
            CHECK(f == NULL, "%s %s: out-param not NULL on failure", file, ctx);
            if (st == INGOT_OK) ingot_file_close(f);
            CHECK(cnt.live == 0, "%s %s: %zu bytes still allocated after a failed open", file, ctx,
                  cnt.live);
            CHECK(cnt.peak_single <= 4096 + n, "%s %s: allocated %zu bytes for a %zu-byte file",
                  file, ctx, cnt.peak_single, n);
            CHECK(dt < 1.0, "%s %s: took %.3f s", file, ctx, dt);
            if (detect) check_err(ctx, file, &e, want, false, 0, NULL);
            else check_err(ctx, file, &e, want, x->off_set, x->off, x->where);
        }
    }

    /* Skipping the header checksum changes nothing but the checksum rows. */
    ingot_status nocrc_want = c->want == INGOT_BAD_CHECKSUM ? INGOT_OK : c->want;
    for (int v = 0; v < VIA_COUNT; v++) {
        counter cnt = {0, 0, 0};
        ingot_file *f;
        ingot_error e;
        ingot_status st = open_via((via)v, img, n, path, false, INGOT_VERIFY_NONE, &cnt, &f, &e);
        CHECK(st == nocrc_want, "%s %s+VERIFY_NONE: got %s, want %s", file, via_name[v],
              ingot_status_name(st), ingot_status_name(nocrc_want));
        if (st == INGOT_OK) {
            /* ... and ingot_file_verify() still catches the header checksum */
            fill_garbage(&e);
            CHECK(ingot_file_verify(f, 1, &e) == INGOT_BAD_CHECKSUM, "%s %s: verify passed",
                  file, via_name[v]);
            check_err("verify", file, &e, INGOT_BAD_CHECKSUM, true, HDR_CRC, "header");
            ingot_file_close(f);
        }
        CHECK(cnt.live == 0, "%s %s+VERIFY_NONE: leak of %zu bytes", file, via_name[v], cnt.live);
    }

    /* The freestanding reader on the same bytes. */
    static alignas(8) unsigned char ws[INGOT_NATIVE_WORKSPACE];
    ingot_status nwant = x->native_differs ? x->native_want : c->want;
    uint64_t noff = x->native_differs ? x->native_off : x->off;
    for (int skip = 0; skip < 2; skip++) {
        ingot_native *r = (ingot_native *)ws;
        ingot_error e;
        fill_garbage(&e);
        ingot_status st = ingot_native_open(ws, sizeof ws, img, n, n,
                                            skip ? INGOT_NATIVE_SKIP_HEADER_CRC : 0, &r, &e);
        ingot_status w = skip && nwant == INGOT_BAD_CHECKSUM ? INGOT_OK : nwant;
        CHECK(st == w, "%s native%s: got %s, want %s (%s)", file, skip ? "+skipcrc" : "",
              ingot_status_name(st), ingot_status_name(w), e.msg);
        CHECK((st == INGOT_OK) == (r != NULL), "%s native: out-param", file);
        if (st != INGOT_OK) check_err("native", file, &e, w, x->off_set, noff, x->where);
    }
}

/* One `verify` row: opens fine everywhere, every verification entry point reports the row. */
static void run_verify_row(const gcase *c, const gx *x, const uint8_t *img, size_t n,
                           const char *path)
{
    const char *file = c->file;
    for (int v = 0; v < VIA_COUNT; v++) {
        counter cnt = {0, 0, 0};
        ingot_file *f;
        ingot_error e;
        ingot_status st = open_via((via)v, img, n, path, v == VIA_MMAP, INGOT_VERIFY_HEADER, &cnt,
                                   &f, &e);
        CHECK(st == INGOT_OK, "%s %s: open failed: %s %s", file, via_name[v],
              ingot_status_name(st), e.msg);
        if (st != INGOT_OK) continue;
        for (uint32_t threads = 1; threads <= 4; threads += 3) {
            fill_garbage(&e);
            st = ingot_file_verify(f, threads, &e);
            CHECK(st == c->want, "%s %s verify(%u): got %s, want %s", file, via_name[v], threads,
                  ingot_status_name(st), ingot_status_name(c->want));
            check_err("verify", file, &e, c->want, x->off_set, x->off, x->where);
        }
        for (uint64_t i = 0; i < ingot_file_tensor_count(f); i++) {
            fill_garbage(&e);
            st = ingot_file_tensor_verify(f, i, &e);
            ingot_status w = i == (uint64_t)c->idx ? c->want : INGOT_OK;
            CHECK(st == w, "%s %s tensor_verify(%" PRIu64 "): got %s, want %s", file, via_name[v],
                  i, ingot_status_name(st), ingot_status_name(w));
            if (w != INGOT_OK) check_err("tensor_verify", file, &e, w, x->off_set, x->off, x->where);
        }
        ingot_file_close(f);
        CHECK(cnt.live == 0, "%s %s: leak", file, via_name[v]);

        /* INGOT_VERIFY_ALL moves the failure into open */
        cnt = (counter){0, 0, 0};
        f = (ingot_file *)&cnt;
        fill_garbage(&e);
        st = open_via((via)v, img, n, path, false, INGOT_VERIFY_ALL, &cnt, &f, &e);
        CHECK(st == c->want && f == NULL, "%s %s VERIFY_ALL: got %s", file, via_name[v],
              ingot_status_name(st));
        check_err("VERIFY_ALL", file, &e, c->want, x->off_set, x->off, x->where);
        CHECK(cnt.live == 0, "%s %s VERIFY_ALL: leak of %zu bytes", file, via_name[v], cnt.live);
    }

    static alignas(8) unsigned char ws[INGOT_NATIVE_WORKSPACE];
    ingot_native *r;
    ingot_error e;
    CHECK(ingot_native_open(ws, sizeof ws, img, n, n, 0, &r, &e) == INGOT_OK, "%s native open",
          file);
    if (r) {
        for (uint64_t i = 0; i < ingot_native_tensor_count(r); i++) {
            fill_garbage(&e);
            ingot_status st = ingot_native_tensor_verify(r, i, &e);
            ingot_status w = i == (uint64_t)c->idx ? c->want : INGOT_OK;
            CHECK(st == w, "%s native tensor_verify(%" PRIu64 "): got %s, want %s", file, i,
                  ingot_status_name(st), ingot_status_name(w));
            if (w != INGOT_OK) check_err("native verify", file, &e, w, x->off_set, x->off, x->where);
        }
    }
}

static const gcase *find_case(const char *file)
{
    for (size_t i = 0; i < GEN_N_CASES; i++)
        if (strcmp(gen_cases[i].file, file) == 0) return &gen_cases[i];
    return NULL;
}

/* ---- the corpus on disk is what the generator builds ---- */

TEST(test_corpus_is_generated)
{
    static gbuf g;
    gx x;
    size_t n;
    char path[1024];
    for (size_t i = 0; i < GEN_N_CASES; i++) {
        ASSERT_TRUE(gen_case(&gen_cases[i], &g, &x));
        snprintf(path, sizeof path, CORPUS "/bad/%s", gen_cases[i].file);
        uint8_t *disk = test_read_file(path, &n);
        CHECK(disk != NULL, "%s missing (run test_malformed --regen)", path);
        if (!disk) continue;
        CHECK(n == g.n && memcmp(disk, g.b, n) == 0, "%s differs from the generator", path);
        CHECK(n < 8192, "%s is %zu bytes", path, n);
        free(disk);
        for (size_t j = 0; j < i; j++)
            CHECK(strcmp(gen_cases[i].file, gen_cases[j].file) != 0, "duplicate row %s",
                  gen_cases[i].file);
    }
    static char manifest[32768];
    size_t mn = gen_manifest(manifest, sizeof manifest);
    uint8_t *disk = test_read_file(CORPUS "/bad/MANIFEST", &n);
    ASSERT_TRUE(disk != NULL);
    CHECK(n == mn && memcmp(disk, manifest, n) == 0, "MANIFEST differs from the generator");
    free(disk);
    for (size_t i = 0; i < GEN_N_GOODS; i++) {
        ASSERT_TRUE(gen_goods[i].make(&g));
        snprintf(path, sizeof path, CORPUS "/good/%s", gen_goods[i].file);
        disk = test_read_file(path, &n);
        CHECK(disk && n == g.n && memcmp(disk, g.b, n) == 0, "%s differs from the generator",
              path);
        free(disk);
    }
    /* no stray files */
    DIR *d = opendir(CORPUS "/bad");
    ASSERT_TRUE(d != NULL);
    size_t files = 0;
    for (struct dirent *de; (de = readdir(d));) {
        if (de->d_name[0] == '.' || strcmp(de->d_name, "MANIFEST") == 0) continue;
        files++;
        CHECK(find_case(de->d_name) != NULL, "stray file tests/corpus/bad/%s", de->d_name);
    }
    closedir(d);
    ASSERT_U64(files, GEN_N_CASES);
    fprintf(stderr, "  %zu bad files, %zu good seeds\n", (size_t)GEN_N_CASES, (size_t)GEN_N_GOODS);
}

/* ---- every manifest row, every entry point ---- */

TEST(test_manifest_rows)
{
    size_t n;
    uint8_t *text = test_read_file(CORPUS "/bad/MANIFEST", &n);
    ASSERT_TRUE(text != NULL);
    char *save = NULL, *line;
    size_t rows = 0, offsets_checked = 0, verify_rows = 0;
    double t0 = now_s();
    static gbuf g;
    text = realloc(text, n + 1);
    text[n] = 0;
    for (line = strtok_r((char *)text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char file[256], status[64], mode[16];
        CHECK(sscanf(line, "%255s %63s %15s", file, status, mode) == 3, "bad manifest line '%s'",
              line);
        const gcase *c = find_case(file);
        CHECK(c != NULL, "manifest row %s unknown to the generator", file);
        if (!c) continue;
        CHECK(strcmp(status, ingot_status_name(c->want)) == 0, "%s: manifest says %s", file,
              status);
        CHECK(strcmp(mode, c->verify ? "verify" : "open") == 0, "%s: manifest mode %s", file,
              mode);
        gx x;
        ASSERT_TRUE(gen_case(c, &g, &x));
        char path[1024];
        snprintf(path, sizeof path, CORPUS "/bad/%s", file);
        size_t len;
        uint8_t *disk = test_read_file(path, &len);
        CHECK(disk != NULL, "cannot read %s", path);
        if (!disk) continue;
        /* an exactly sized heap copy, so ASan sees any read past the end */
        uint8_t *img = malloc(len ? len : 1);
        memcpy(img, disk, len);
        free(disk);
        if (c->verify) run_verify_row(c, &x, img, len, path), verify_rows++;
        else run_open_row(c, &x, img, len, path);
        free(img);
        rows++;
        offsets_checked += x.off_set;
    }
    free(text);
    double dt = now_s() - t0;
    ASSERT_U64(rows, GEN_N_CASES);
    ASSERT_TRUE(offsets_checked >= 12);
    fprintf(stderr, "  %zu rows (%zu verify), offsets checked on %zu, %.3f s\n", rows, verify_rows,
            offsets_checked, dt);
}

/* ---- accepting twins ---- */

/* Opens an image every way and checks it is accepted and verifies. Returns the buffer-opened
 * file for further checks (caller closes), or NULL. */
static ingot_file *accept_all(const char *what, const uint8_t *img, size_t n)
{
    char path[512];
    snprintf(path, sizeof path, "%s/malformed-accept.ingot", INGOT_BINARY_DIR);
    FILE *fp = fopen(path, "wb");
    if (!fp || fwrite(img, 1, n, fp) != n || fclose(fp) != 0) {
        CHECK(false, "%s: cannot write %s", what, path);
        return NULL;
    }
    ingot_file *keep = NULL;
    for (int v = 0; v < VIA_COUNT; v++) {
        for (int vm = 0; vm < 3; vm++) {
            counter cnt = {0, 0, 0};
            ingot_file *f;
            ingot_error e;
            ingot_status st = open_via((via)v, img, n, path, vm == 1, (ingot_verify_mode)vm, &cnt,
                                       &f, &e);
            CHECK(st == INGOT_OK, "%s %s verify mode %d: %s %s at %" PRIu64, what, via_name[v], vm,
                  ingot_status_name(st), e.msg, e.offset);
            if (st != INGOT_OK) continue;
            CHECK(ingot_file_verify(f, 2, &e) == INGOT_OK, "%s %s: verify: %s", what, via_name[v],
                  e.msg);
            ingot_file_close(f);
            CHECK(cnt.live == 0, "%s: leak", what);
        }
    }
    static alignas(8) unsigned char ws[INGOT_NATIVE_WORKSPACE];
    ingot_native *r;
    ingot_error e;
    CHECK(ingot_native_open(ws, sizeof ws, img, n, n, 0, &r, &e) == INGOT_OK, "%s native: %s",
          what, e.msg);
    if (r)
        for (uint64_t i = 0; i < ingot_native_tensor_count(r); i++)
            CHECK(ingot_native_tensor_verify(r, i, &e) == INGOT_OK, "%s native verify %" PRIu64,
                  what, i);
    remove(path);
    CHECK(ingot_file_open_buffer(img, n, NULL, &keep, &e) == INGOT_OK, "%s reopen", what);
    return keep;
}

/* Writes a writer to memory; returns the image (free with free()). */
static uint8_t *write_mem(ingot_writer *w, size_t *n)
{
    ingot_error e;
    void *p = NULL;
    *n = 0;
    if (ingot_writer_begin_mem(w, &e) != INGOT_OK ||
        ingot_writer_commit_mem(w, &p, n, &e) != INGOT_OK) {
        fprintf(stderr, "  write_mem: %s\n", e.msg);
        ingot_writer_free(w);
        return NULL;
    }
    ingot_writer_free(w);
    uint8_t *copy = malloc(*n ? *n : 1);
    memcpy(copy, p, *n);
    ingot_writer_free_mem(NULL, p, *n);
    return copy;
}

TEST(test_accept_good_corpus)
{
    static gbuf base;
    ASSERT_TRUE(gen_base(&base));
    for (size_t i = 0; i < GEN_N_GOODS; i++) {
        char path[1024];
        snprintf(path, sizeof path, CORPUS "/good/%s", gen_goods[i].file);
        size_t n;
        uint8_t *img = test_read_file(path, &n);
        ASSERT_TRUE(img != NULL);
        ingot_file *f = accept_all(gen_goods[i].file, img, n);
        ASSERT_TRUE(f != NULL);
        if (strcmp(gen_goods[i].file, "minor2_relaxed.ingot") == 0) {
            /* a future minor: same tensors and metadata as the base it was relaid from */
            ASSERT_STR(ingot_file_version(f), "1.2");
            ingot_file *b;
            ASSERT_OK(ingot_file_open_buffer(base.b, base.n, NULL, &b, NULL));
            ASSERT_U64(ingot_file_tensor_count(f), GT_N);
            for (uint64_t t = 0; t < GT_N; t++) {
                ingot_tensor_info x, y;
                ASSERT_OK(ingot_file_tensor_at(f, t, &x));
                ASSERT_OK(ingot_file_tensor_at(b, t, &y));
                ASSERT_STR(x.name, y.name);
                ASSERT_U64(x.nbytes, y.nbytes);
                ASSERT_EQ(x.dtype, y.dtype);
                ASSERT_U64(x.param_id, y.param_id);
                if (x.nbytes) ASSERT_MEM(x.data, y.data, x.nbytes);
                ASSERT_U64(x.offset % 64, 0);
            }
            ASSERT_U64(ingot_file_meta_count(f), ingot_file_meta_count(b));
            const char *s;
            size_t sl;
            ASSERT_OK(ingot_file_meta_get_string(f, "e.string", &s, &sl));
            ASSERT_EQ(sl, 12);
            ingot_file_close(b);
        } else if (strcmp(gen_goods[i].file, "empty.ingot") == 0) {
            /* row twin of "empty file": a valid file with nothing in it */
            ASSERT_U64(n, 192); /* the fixed header, padded to the alignment (64) */
            ASSERT_U64(ingot_file_tensor_count(f), 0);
            ASSERT_U64(ingot_file_meta_count(f), 0);
        } else if (strcmp(gen_goods[i].file, "edges.ingot") == 0) {
            ingot_tensor_info t;
            ASSERT_OK(ingot_file_tensor_find(f, "r8", &t)); /* rank 8 accepted; 9 is rejected */
            ASSERT_EQ(t.rank, 8);
            ASSERT_U64(t.nelem, 2);
            ASSERT_OK(ingot_file_tensor_find(f, "x", &t)); /* zero dim beside huge dims */
            ASSERT_U64(t.nelem, 0);
            ASSERT_U64(t.nbytes, 0);
            ASSERT_U64(t.shape[1], (uint64_t)INT64_MAX);
            ASSERT_U64(ingot_file_alignment(f), 128);
            const char *s;
            size_t sl;
            ASSERT_OK(ingot_file_meta_get_string(f, "nul.inside", &s, &sl)); /* NUL in a value */
            ASSERT_EQ(sl, 3);
            ASSERT_MEM(s, "a\0b", 3);
            const void *p;
            ASSERT_OK(ingot_file_meta_get_bytes(f, "bytes.not.utf8", &p, &sl));
            ASSERT_MEM(p, "\xff\xfe", 2);
            ASSERT_OK(ingot_file_meta_get_string(f, "\xf0\x9f\x98\x80", &s, &sl));
            ASSERT_EQ(sl, 0);
            uint64_t cnt = 1;
            ASSERT_OK(ingot_file_meta_get_array(f, "empty.array", INGOT_META_I32, &cnt));
            ASSERT_U64(cnt, 0);
        }
        ingot_file_close(f);
        free(img);
    }
}

/* Alignment: every power of two in 64..65536 accepted (twins of hdr_align_*). */
TEST(test_accept_alignments)
{
    static const uint32_t aligns[] = {64, 128, 256, 4096, 65536};
    for (size_t k = 0; k < sizeof aligns / sizeof aligns[0]; k++) {
        ingot_writer_opts o = {.alignment = aligns[k]};
        ingot_writer *w;
        ASSERT_OK(ingot_writer_new(&o, &w, NULL));
        uint8_t d[40];
        gen_fill(d, sizeof d, 3);
        uint64_t s1[1] = {40}, s2[1] = {5};
        ASSERT_OK(ingot_writer_add_tensor(w, "a", INGOT_DTYPE_U8, 1, s1, NULL, d, NULL));
        ASSERT_OK(ingot_writer_add_tensor(w, "b", INGOT_DTYPE_I8, 1, s2, NULL, d, NULL));
        size_t n;
        uint8_t *img = write_mem(w, &n);
        ASSERT_TRUE(img != NULL);
        ingot_file *f = accept_all("alignment", img, n);
        ASSERT_TRUE(f != NULL);
        ASSERT_U64(ingot_file_alignment(f), aligns[k]);
        ingot_tensor_info t;
        ASSERT_OK(ingot_file_tensor_at(f, 1, &t));
        ASSERT_U64(t.offset % aligns[k], 0);
        ingot_file_close(f);
        free(img);
    }
    ingot_writer_opts bad = {.alignment = 32};
    ingot_writer *w = NULL;
    ASSERT_ST(ingot_writer_new(&bad, &w, NULL), INGOT_BAD_ALIGN);
    bad.alignment = 131072;
    ASSERT_ST(ingot_writer_new(&bad, &w, NULL), INGOT_BAD_ALIGN);
}

/* Name and key length 65535 accepted (twins of name_len_65536 / key_len_65536). */
TEST(test_accept_name_65535)
{
    char *name = malloc(65537);
    memset(name, 'n', 65536);
    name[65536] = 0;
    ingot_writer *w;
    ingot_error e;
    ASSERT_OK(ingot_writer_new(NULL, &w, NULL));
    uint64_t s[1] = {1};
    uint8_t d = 7;
    ASSERT_ST(ingot_writer_add_tensor(w, name, INGOT_DTYPE_U8, 1, s, NULL, &d, &e), INGOT_BAD_NAME);
    ASSERT_ST(ingot_writer_set_u8(w, name, 1), INGOT_BAD_NAME);
    name[65535] = 0;
    ASSERT_OK(ingot_writer_add_tensor(w, name, INGOT_DTYPE_U8, 1, s, NULL, &d, &e));
    name[0] = 'k';
    ASSERT_OK(ingot_writer_set_u8(w, name, 9));
    size_t n;
    uint8_t *img = write_mem(w, &n);
    ASSERT_TRUE(img != NULL);
    ingot_file *f = accept_all("name 65535", img, n);
    ASSERT_TRUE(f != NULL);
    ingot_tensor_info t;
    name[0] = 'n';
    ASSERT_OK(ingot_file_tensor_find(f, name, &t));
    ASSERT_U64(t.name_len, 65535);
    uint8_t v = 0;
    name[0] = 'k';
    ASSERT_OK(ingot_file_meta_get_u8(f, name, &v));
    ASSERT_EQ(v, 9);
    ingot_file_close(f);
    free(img);
    free(name);
}

/* The same patch as a bad row, one step on the accepting side. */
typedef void (*patch_fn)(gbuf *g);

static void accept_patched(const char *what, patch_fn p, ingot_status want)
{
    static gbuf g;
    if (!gen_base(&g)) {
        CHECK(false, "base");
        return;
    }
    p(&g);
    g_fix_crc(&g);
    if (want == INGOT_OK) {
        ingot_file *f = accept_all(what, g.b, g.n);
        CHECK(f != NULL, "%s rejected", what);
        ingot_file_close(f);
        return;
    }
    ingot_file *f;
    ingot_error e;
    ingot_status st = ingot_file_open_buffer(g.b, g.n, NULL, &f, &e);
    CHECK(st == want, "%s: got %s, want %s (%s)", what, ingot_status_name(st),
          ingot_status_name(want), e.msg);
}

static void p_count_room_t(gbuf *g) /* exactly as many tensors (and param ids) as bytes allow */
{
    gst(g, HDR_N_TENSORS, 8, (g->n - ING_HDR_SIZE) / ING_TEN_MIN_BYTES);
    gst(g, HDR_N_PARAMS, 8, (g->n - ING_HDR_SIZE) / ING_TEN_MIN_BYTES);
}
static void p_count_room_m(gbuf *g)
{
    gst(g, HDR_N_META, 8, (g->n - ING_HDR_SIZE) / ING_MET_SIZE);
}
static void p_count_room_s(gbuf *g)
{
    gst(g, HDR_N_SHAPES, 8, (g->n - ING_HDR_SIZE) / ING_SHP_SIZE);
}
static void p_count_room_d(gbuf *g) { gst(g, HDR_N_DIMS, 8, (g->n - ING_HDR_SIZE) / 8); }
static void p_u8_ff(gbuf *g) { gst(g, g_met(g, "a.u8") + MET_VALUE, 8, 0xff); }
static void p_i8_min(gbuf *g) { gst(g, g_met(g, "b.i8") + MET_VALUE, 8, 0x80); }
static void p_u32_max(gbuf *g) { gst(g, g_met(g, "a.u32") + MET_VALUE, 8, UINT32_MAX); }
static void p_bool_0(gbuf *g) { gst(g, g_met(g, "d.bool") + MET_VALUE, 8, 0); }
static void p_bytes_at_pool_end(gbuf *g) /* empty bytes value exactly at the pool end */
{
    uint64_t e = g_met(g, "e.bytes");
    gst(g, e + MET_VALUE, 8, g_hdr(g, HDR_POOL_SIZE));
    gst(g, e + MET_COUNT, 8, 0);
}
static void p_string_empty_last_nul(gbuf *g) /* empty string whose NUL is the last one in the pool */
{
    uint64_t e = g_met(g, "e.string");
    gst(g, e + MET_VALUE, 8, g_hdr(g, HDR_POOL_SIZE) - 4); /* the NUL after key "z.tail" */
    gst(g, e + MET_COUNT, 8, 0);
}
static void p_bytes_to_pool_end(gbuf *g) /* bytes need no NUL: may end exactly at the pool end */
{
    uint64_t e = g_met(g, "e.bytes");
    gst(g, e + MET_VALUE, 8, g_hdr(g, HDR_POOL_SIZE) - 3);
    gst(g, e + MET_COUNT, 8, 3);
}
static void p_blob_elem_to_pool_end(gbuf *g)
{
    uint64_t ref = g_mval(g, g_met(g, "g.blobs[]"));
    gst(g, ref, 8, g_hdr(g, HDR_POOL_SIZE) - 3);
    gst(g, ref + 8, 8, 3);
}
static void p_blob_elem_at_pool_end(gbuf *g)
{
    uint64_t ref = g_mval(g, g_met(g, "g.blobs[]")) + ING_STRREF_SIZE; /* element 1 (empty) */
    gst(g, ref, 8, g_hdr(g, HDR_POOL_SIZE));
}
static void p_flags_optional(gbuf *g) { gst(g, HDR_FLAGS_OPTIONAL, 4, 0xffffffffu); }
static void p_dim_i64max(gbuf *g) /* U8 [INT64_MAX]: the shape is fine, its bytes are not there */
{
    uint64_t s = g_tshp(g, GT_TAIL);
    gst(g, g_sdims(g, GS_TAIL), 8, (uint64_t)INT64_MAX);
    gst(g, s + SHP_NBYTES, 8, (uint64_t)INT64_MAX);
}
static void p_param_id_0(gbuf *g) { gst(g, g_tpid(g, GT_EMBED), 8, 0); } /* a flagged 0: valid */
/* the param id flag on a tensor whose id is 0 (twin of param_id_unflagged_1) */
static void p_flag_pid_0(gbuf *g) { gst(g, g_ten(g, GT_BIAS) + TEN_FLAGS, 4, TEN_FLAG_PARAM_ID); }
/* every flag cleared, and the param ids section with them (twin of
 * tensor_param_flag_without_params and param_ids_none_flagged) */
static void p_no_params(gbuf *g) { g_drop_params(g); }
/* a record no tensor uses is harmless (docs/FORMAT.md §5.2): model.embed.T takes model.embed's
 * record, of the same size, so its bytes and checksum stay right */
static void p_unused_record(gbuf *g)
{
    gst(g, g_ten(g, GT_EMBT) + TEN_SHAPE, 4, GS_EMBED);
}
/* ... and so is one more record at the end: Q8_0 [32], with its dim */
static void p_extra_record(gbuf *g)
{
    uint64_t ns = g_hdr(g, HDR_N_SHAPES), nd = g_hdr(g, HDR_N_DIMS);
    g_resize(g, HDR_SHAPES, ns * ING_SHP_SIZE, ING_SHP_SIZE);
    gst(g, HDR_N_SHAPES, 8, ns + 1);
    g_resize(g, HDR_DIMS, nd * 8, 8);
    gst(g, HDR_N_DIMS, 8, nd + 1);
    uint64_t s = g_shp(g, ns);
    gst(g, s + SHP_DTYPE, 2, INGOT_DTYPE_Q8_0);
    gst(g, s + SHP_RANK, 1, 1);
    gst(g, s + SHP_DIMS_AT, 4, nd);
    gst(g, s + SHP_NBYTES, 8, 34);
    gst(g, g_sdims(g, ns), 8, 32);
}
/* records that differ only in the last dim (twin of shapes_last_dim_order): model.embed.T's
 * F32 [3,2] becomes [2,4], after model.embed's [2,3]; its 24 bytes and 8 bytes of the zero padding
 * after them (still below 64: the data layout holds) make the 32, with their checksum */
static void p_record_last_dim(gbuf *g)
{
    uint64_t s = g_tshp(g, GT_EMBT), d = g_sdims(g, GS_EMBT);
    gst(g, d, 8, 2);
    gst(g, d + 8, 8, 4);
    gst(g, s + SHP_NBYTES, 8, 32);
    gst(g, g_ten(g, GT_EMBT) + TEN_CRC, 4, ingot_crc32c(0, g->b + g_tdata(g, GT_EMBT), 32));
}
static void p_minor_ffff(gbuf *g) { g_relax(g, 0xffff, 0, 0, 0); }
static void p_minor2_big(gbuf *g) { g_relax(g, 2, 64, 16, 3); }

TEST(test_accept_boundaries)
{
    /* counts exactly at the bound pass the count check and fail on the layout instead */
    accept_patched("n_tensors at the bound", p_count_room_t, INGOT_BAD_LAYOUT);
    accept_patched("n_meta at the bound", p_count_room_m, INGOT_TRUNCATED);
    accept_patched("n_shapes at the bound", p_count_room_s, INGOT_TRUNCATED);
    accept_patched("n_dims at the bound", p_count_room_d, INGOT_TRUNCATED);
    /* dim 2^63-1 is a valid shape (fails later, on the data layout) while 2^63 is BAD_SHAPE */
    accept_patched("dim INT64_MAX", p_dim_i64max, INGOT_BAD_LAYOUT);
    accept_patched("u8 = 255", p_u8_ff, INGOT_OK);
    accept_patched("i8 = -128", p_i8_min, INGOT_OK);
    accept_patched("u32 = max", p_u32_max, INGOT_OK);
    accept_patched("bool = 0", p_bool_0, INGOT_OK);
    accept_patched("bytes at pool end", p_bytes_at_pool_end, INGOT_OK);
    accept_patched("empty string, NUL last", p_string_empty_last_nul, INGOT_OK);
    accept_patched("bytes element at pool end", p_blob_elem_at_pool_end, INGOT_OK);
    accept_patched("bytes to pool end", p_bytes_to_pool_end, INGOT_OK);
    accept_patched("bytes element to pool end", p_blob_elem_to_pool_end, INGOT_OK);
    accept_patched("optional flags", p_flags_optional, INGOT_OK);
    accept_patched("param id 0", p_param_id_0, INGOT_OK);
    accept_patched("flag on a param id of 0", p_flag_pid_0, INGOT_OK);
    accept_patched("no param ids", p_no_params, INGOT_OK);
    accept_patched("unused shape record", p_unused_record, INGOT_OK);
    accept_patched("extra shape record", p_extra_record, INGOT_OK);
    accept_patched("records differing in the last dim", p_record_last_dim, INGOT_OK);
    accept_patched("minor 0xffff", p_minor_ffff, INGOT_OK);
    accept_patched("minor 2, wide gaps", p_minor2_big, INGOT_OK);

    static gbuf g;
    ASSERT_TRUE(gen_base(&g));
    ingot_file *f;
    ASSERT_OK(ingot_file_open_buffer(g.b, g.n, NULL, &f, NULL));
    ASSERT_STR(ingot_file_version(f), "1.0");
    ingot_file_close(f);
    p_u8_ff(&g);
    p_i8_min(&g);
    p_bool_0(&g);
    g_fix_crc(&g);
    ASSERT_OK(ingot_file_open_buffer(g.b, g.n, NULL, &f, NULL));
    uint8_t u8 = 0;
    int8_t i8 = 0;
    bool b = true;
    ASSERT_OK(ingot_file_meta_get_u8(f, "a.u8", &u8));
    ASSERT_EQ(u8, 255);
    ASSERT_OK(ingot_file_meta_get_i8(f, "b.i8", &i8));
    ASSERT_EQ(i8, -128);
    ASSERT_OK(ingot_file_meta_get_bool(f, "d.bool", &b));
    ASSERT_TRUE(!b);
    ingot_file_close(f);
}

/* Zero-sized dims (twin of shape_zero_then_2p63) and every rank 0..64 via the writer (twin of
 * rank_65). */
TEST(test_accept_zero_dims_and_ranks)
{
    ingot_writer *w;
    ASSERT_OK(ingot_writer_new(NULL, &w, NULL));
    uint64_t z1[2] = {3, 0}, z2[3] = {0, (uint64_t)INT64_MAX, (uint64_t)INT64_MAX};
    uint64_t q[2] = {0, 32}, big[2] = {(uint64_t)INT64_MAX, 2};
    ingot_error e;
    ASSERT_OK(ingot_writer_add_tensor(w, "z1", INGOT_DTYPE_F32, 2, z1, NULL, NULL, &e));
    ASSERT_OK(ingot_writer_add_tensor(w, "z2", INGOT_DTYPE_F64, 3, z2, NULL, NULL, &e));
    ASSERT_OK(ingot_writer_add_tensor(w, "q0", INGOT_DTYPE_Q4_0, 2, q, NULL, NULL, &e));
    /* the element count must fit in int64 (BAD_SHAPE), whatever the dtype */
    ASSERT_ST(ingot_writer_add_tensor(w, "big", INGOT_DTYPE_F32, 2, big, NULL, NULL, &e),
              INGOT_BAD_SHAPE);
    uint8_t d[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    uint64_t ones[INGOT_MAX_RANK + 1];
    for (uint32_t k = 0; k <= INGOT_MAX_RANK; k++) ones[k] = 1;
    for (uint32_t r = 0; r <= INGOT_MAX_RANK; r++) {
        char nm[8];
        snprintf(nm, sizeof nm, "r%u", r);
        ASSERT_OK(ingot_writer_add_tensor(w, nm, INGOT_DTYPE_U8, r, ones, NULL, d, &e));
    }
    ASSERT_ST(ingot_writer_add_tensor(w, "r65", INGOT_DTYPE_U8, 65, ones, NULL, d, &e),
              INGOT_BAD_NDIMS);
    ASSERT_TRUE(strstr(e.msg, "rank 65 exceeds 64") != NULL);
    size_t n;
    uint8_t *img = write_mem(w, &n);
    ASSERT_TRUE(img != NULL);
    ingot_file *f = accept_all("zero dims", img, n);
    ASSERT_TRUE(f != NULL);
    ingot_tensor_info t;
    ASSERT_OK(ingot_file_tensor_find(f, "z2", &t));
    ASSERT_U64(t.nbytes, 0);
    ASSERT_U64(t.nelem, 0);
    ASSERT_OK(ingot_file_tensor_find(f, "r0", &t));
    ASSERT_U64(t.nelem, 1);
    ASSERT_OK(ingot_file_tensor_find(f, "r8", &t));
    ASSERT_EQ(t.rank, 8);
    ASSERT_OK(ingot_file_tensor_find(f, "r64", &t));
    ASSERT_EQ(t.rank, 64);
    ASSERT_U64(t.nelem, 1);
    for (uint32_t k = 0; k < 64; k++) ASSERT_U64(t.shape[k], 1);
    ingot_file_close(f);
    free(img);
}

/* Row 8: right key, wrong type. Out-parameters stay untouched. */
TEST(test_wrong_type)
{
    static gbuf g;
    ASSERT_TRUE(gen_base(&g));
    ingot_file *f;
    ASSERT_OK(ingot_file_open_buffer(g.b, g.n, NULL, &f, NULL));
    uint32_t u32 = 77;
    uint16_t u16 = 0;
    int64_t i64 = 77;
    float f32 = 77;
    bool b = false;
    const char *s = "x";
    size_t sl = 77;
    const void *p = "x";
    uint64_t cnt = 77;
    ASSERT_OK(ingot_file_meta_get_u16(f, "a.u16", &u16));
    ASSERT_EQ(u16, 60000);
    ASSERT_ST(ingot_file_meta_get_u32(f, "a.u16", &u32), INGOT_WRONG_TYPE);
    ASSERT_ST(ingot_file_meta_get_i64(f, "a.u64", &i64), INGOT_WRONG_TYPE);
    ASSERT_ST(ingot_file_meta_get_f32(f, "c.f64", &f32), INGOT_WRONG_TYPE);
    ASSERT_ST(ingot_file_meta_get_bool(f, "a.u8", &b), INGOT_WRONG_TYPE);
    ASSERT_ST(ingot_file_meta_get_u16(f, "f.u16[]", &u16), INGOT_WRONG_TYPE); /* array as scalar */
    ASSERT_ST(ingot_file_meta_get_string(f, "e.bytes", &s, &sl), INGOT_WRONG_TYPE);
    ASSERT_ST(ingot_file_meta_get_bytes(f, "e.string", &p, &sl), INGOT_WRONG_TYPE);
    ASSERT_ST(ingot_file_meta_get_array(f, "f.u16[]", INGOT_META_U32, &cnt), INGOT_WRONG_TYPE);
    ASSERT_ST(ingot_file_meta_get_array(f, "a.u16", INGOT_META_U16, &cnt), INGOT_WRONG_TYPE);
    ASSERT_ST(ingot_file_meta_get_u32(f, "no.such", &u32), INGOT_NOT_FOUND);
    ASSERT_EQ(u32, 77);
    ASSERT_EQ(i64, 77);
    ASSERT_TRUE(f32 == 77.0f && !b && sl == 77 && cnt == 77);
    ingot_meta_info m;
    ASSERT_OK(ingot_file_meta_find(f, "f.u16[]", &m));
    uint32_t dst[3];
    ASSERT_ST(ingot_file_meta_array_read(f, m.index, INGOT_META_U32, 0, 1, dst), INGOT_WRONG_TYPE);
    ASSERT_ST(ingot_file_meta_array_string(f, m.index, 0, &s, &sl), INGOT_WRONG_TYPE);
    ASSERT_ST(ingot_file_meta_array_read(f, m.index, INGOT_META_U16, 2, 2, dst), INGOT_RANGE);
    ASSERT_OK(ingot_file_meta_find(f, "g.strs[]", &m));
    ASSERT_ST(ingot_file_meta_array_read(f, m.index, INGOT_META_STRING, 0, 1, dst),
              INGOT_WRONG_TYPE);
    ASSERT_ST(ingot_file_meta_array_string(f, m.index, 3, &s, &sl), INGOT_RANGE);
    ingot_file_close(f);
}

/* The freestanding entry with partial buffers and bad arguments. */
TEST(test_native_partial_and_misuse)
{
    static gbuf g;
    ASSERT_TRUE(gen_base(&g));
    uint64_t need = 0;
    ingot_error e;
    ASSERT_OK(ingot_native_header_size(g.b, ING_HDR_SIZE, &need, &e));
    ASSERT_U64(need, g_data(&g));
    uint64_t none = 1;
    ASSERT_ST(ingot_native_header_size(g.b, ING_HDR_SIZE - 1, &none, &e), INGOT_TRUNCATED);
    ASSERT_U64(none, 0);
    ASSERT_U64(e.offset, ING_HDR_SIZE - 1);
    static uint8_t h[ING_HDR_SIZE];
    memcpy(h, g.b, ING_HDR_SIZE);
    h[0] = 0;
    ASSERT_ST(ingot_native_header_size(h, ING_HDR_SIZE, &none, &e), INGOT_BAD_MAGIC);
    memcpy(h, g.b, ING_HDR_SIZE);
    h[HDR_MAJOR] = 2;
    ASSERT_ST(ingot_native_header_size(h, ING_HDR_SIZE, &none, &e), INGOT_BAD_VERSION);
    h[HDR_MAJOR] = 1;
    memset(h + HDR_DATA, 0, 8);
    h[HDR_DATA] = 64;
    ASSERT_ST(ingot_native_header_size(h, ING_HDR_SIZE, &none, &e), INGOT_BAD_LAYOUT);
    ASSERT_U64(e.offset, HDR_DATA);
    static alignas(8) unsigned char ws[INGOT_NATIVE_WORKSPACE + 8];
    ingot_native *r;
    /* header only: opens, data not mapped, tensor verify unsupported */
    ASSERT_OK(ingot_native_open(ws, INGOT_NATIVE_WORKSPACE, g.b, (size_t)need, g.n, 0, &r, &e));
    ingot_tensor_info t;
    ASSERT_OK(ingot_native_tensor_at(r, GT_TAIL, &t));
    ASSERT_TRUE(t.data == NULL && (t.flags & INGOT_TENSOR_NOT_MAPPED));
    ASSERT_ST(ingot_native_tensor_verify(r, GT_TAIL, &e), INGOT_UNSUPPORTED);
    /* one byte less than the header region */
    fill_garbage(&e);
    ASSERT_ST(ingot_native_open(ws, INGOT_NATIVE_WORKSPACE, g.b, (size_t)need - 1, g.n, 0, &r, &e),
              INGOT_TRUNCATED);
    ASSERT_TRUE(r == NULL);
    ASSERT_U64(e.offset, need - 1);
    /* misuse */
    ASSERT_ST(ingot_native_open(ws, 16, g.b, g.n, g.n, 0, &r, &e),
              INGOT_MISUSE);
    ASSERT_ST(ingot_native_open(ws + 4, INGOT_NATIVE_WORKSPACE, g.b, g.n, g.n, 0, &r, &e),
              INGOT_MISUSE);
    ASSERT_ST(ingot_native_open(ws, INGOT_NATIVE_WORKSPACE, g.b, g.n, g.n - 1, 0, &r, &e),
              INGOT_MISUSE);
    ASSERT_ST(ingot_native_open(ws, INGOT_NATIVE_WORKSPACE, NULL, 5, 5, 0, &r, &e), INGOT_MISUSE);
    ASSERT_ST(ingot_native_open(ws, INGOT_NATIVE_WORKSPACE, NULL, 0, 0, 0, &r, &e),
              INGOT_TRUNCATED);
    /* lookups on the full image */
    ASSERT_OK(ingot_native_open(ws, INGOT_NATIVE_WORKSPACE, g.b, g.n, g.n, 0, &r, &e));
    ASSERT_OK(ingot_native_tensor_find(r, gen_tnames[GT_UTF8], strlen(gen_tnames[GT_UTF8]), &t));
    ASSERT_EQ(t.index, GT_UTF8);
    ASSERT_ST(ingot_native_tensor_find(r, "bia", 3, &t), INGOT_NOT_FOUND);
    ASSERT_ST(ingot_native_tensor_find(r, "biass", 5, &t), INGOT_NOT_FOUND);
    ingot_meta_info m;
    ASSERT_OK(ingot_native_meta_find(r, "g.strs[]", 8, &m));
    ASSERT_U64(m.count, 3);
    ASSERT_ST(ingot_native_meta_find(r, "g.strs", 6, &m), INGOT_NOT_FOUND);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--regen") == 0)
        return gen_regen(argc > 2 ? argv[2] : CORPUS);
    static const test_case cases[] = {
        T(test_corpus_is_generated),  T(test_manifest_rows),
        T(test_accept_good_corpus),   T(test_accept_alignments),
        T(test_accept_name_65535),    T(test_accept_boundaries),
        T(test_accept_zero_dims_and_ranks), T(test_wrong_type),
        T(test_native_partial_and_misuse),
    };
    return harness_run(cases, sizeof cases / sizeof cases[0], argc, argv);
}
