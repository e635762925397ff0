/* test_open_fast.c - the fast paths of open (issue 17) give the verdicts and error records of the
 * exact code: string arrays of the native format validated as one section (every element's NUL,
 * bounds and UTF-8, element by element in order, at each vector level and in the portable code),
 * headers larger than INGOT__HEAD_COPY_MAX read through the mapping. Expected results come from
 * the damage each case does, not from the reader. */
#include <sys/resource.h>

#include "file.h"
#include "harness.h"
#include "ingot/native.h"
#include "native_layout.h"
#include "support/utf8_levels.h"
#include "utf8.h"

/* The AVX-512 reference pass: the first eight by the portable code, 24 steps of eight, a tail of
 * three */
#define N_STR 203

typedef struct {
    uint8_t *img;
    size_t size;
    uint64_t refs;          /* absolute offset of the first reference of "s" */
    uint64_t pool;          /* absolute offset of the pool */
    char strs[N_STR][24];   /* the elements as written */
} strfile;

/* Element k: ASCII, 2-, 3- and 4-byte characters, lengths 0..20. */
static void make_elem(char *s, int k)
{
    static const char *const parts[] = {"a", "\xC3\xA9", "\xE2\x96\x81", "\xF0\x9F\x98\x80", "xy"};
    s[0] = 0;
    for (int j = 0; j < k % 7; j++) strcat(s, parts[(k + j) % 5]);
}

static int build_rot(strfile *f, int rot)
{
    /* the reference form of v1.0 (the packed form of v1.1: test_native_packed.c) */
    ingot_writer_opts wo = {.format = "ingot", .ingot_v1_0 = true};
    ingot_writer *w;
    ingot_error e;
    if (ingot_writer_new(&wo, &w, &e)) return 1;
    const void *p[N_STR];
    size_t l[N_STR];
    for (int k = 0; k < N_STR; k++) {
        make_elem(f->strs[k], k + rot);
        p[k] = f->strs[k];
        l[k] = strlen(f->strs[k]);
    }
    uint8_t one = 1;
    uint64_t shape[1] = {1};
    if (ingot_writer_set_string_array(w, "s", INGOT_META_STRING, p, l, N_STR) ||
        ingot_writer_add_tensor(w, "t", INGOT_DTYPE_U8, 1, shape, NULL, &one, &e) ||
        ingot_writer_begin_mem(w, &e) || ingot_writer_commit_mem(w, (void **)&f->img, &f->size, &e))
        return 1;
    ingot_writer_free(w);
    const uint8_t *h = f->img;
    f->pool = ing_ld64(h + HDR_POOL);
    const uint8_t *m = h + ing_ld64(h + HDR_META_TABLE); /* the only entry */
    f->refs = f->pool + ing_ld64(m + MET_VALUE);
    return 0;
}

static int build(strfile *f) { return build_rot(f, 0); }

/* Opens the image (header CRC not checked: the cases damage the header) at every level; the
 * status and message must be the same at each, and are returned from the last. */
static ingot_status open_all(const strfile *f, char *msg, size_t cap, int *disagree)
{
    ingot_status st = INGOT_OK;
    char first[256] = "";
    for (int k = 0; k < n_levels; k++) {
        ingot__utf8_limit(levels[k]);
        _Alignas(8) unsigned char ws[INGOT_NATIVE_WORKSPACE];
        ingot_native *r;
        ingot_error e;
        memset(&e, 0, sizeof e);
        ingot_status s = ingot_native_open(ws, sizeof ws, f->img, f->size, f->size,
                                           INGOT_NATIVE_SKIP_HEADER_CRC, &r, &e);
        if (k == 0) {
            st = s;
            snprintf(first, sizeof first, "%s", s ? e.msg : "");
        } else if (s != st || strcmp(first, s ? e.msg : "") != 0) {
            (*disagree)++;
        }
    }
    ingot__utf8_limit(INGOT__UTF8_TOP);
    snprintf(msg, cap, "%s", first);
    return st;
}

static void set64(strfile *f, uint64_t at, uint64_t v) { ing_st64(f->img + at, v); }
static uint64_t ref_off(const strfile *f, int k) { return ing_ld64(f->img + f->refs + 16u * k); }
static uint64_t ref_len(const strfile *f, int k) { return ing_ld64(f->img + f->refs + 16u * k + 8); }

TEST(test_string_array_valid_and_contiguous)
{
    find_levels();
    strfile f;
    ASSERT_EQ(build(&f), 0);
    /* the writer lays elements back to back, each with its NUL: the fast path's case */
    for (int k = 1; k < N_STR; k++)
        ASSERT_U64(ref_off(&f, k), ref_off(&f, k - 1) + ref_len(&f, k - 1) + 1);
    char msg[256];
    int dis = 0;
    ASSERT_ST(open_all(&f, msg, sizeof msg, &dis), INGOT_OK);
    ASSERT_EQ(dis, 0);
    free(f.img);
}

/* One element damaged at a time, at every position (both sides of each vector boundary, the
 * tail): the error names exactly that element. */
TEST(test_string_array_each_element)
{
    find_levels();
    strfile f;
    ASSERT_EQ(build(&f), 0);
    uint8_t *orig = malloc(f.size);
    memcpy(orig, f.img, f.size);
    int dis = 0;
    for (int k = 0; k < N_STR; k++) {
        char msg[256], want[96];
        uint64_t so = ref_off(&f, k), sl = ref_len(&f, k);
        /* (a) its NUL is not 0 */
        f.img[f.pool + so + sl] = 'z';
        ASSERT_ST(open_all(&f, msg, sizeof msg, &dis), INGOT_BAD_STRING);
        snprintf(want, sizeof want, "element %d is not NUL-terminated UTF-8", k);
        if (!strstr(msg, want)) FAIL_AT("NUL of %d: %s", k, msg);
        memcpy(f.img, orig, f.size);
        /* (b) its first byte is no UTF-8 (elements of length 0 have none) */
        if (sl) {
            f.img[f.pool + so] = 0xFF;
            ASSERT_ST(open_all(&f, msg, sizeof msg, &dis), INGOT_BAD_STRING);
            if (!strstr(msg, want)) FAIL_AT("UTF-8 of %d: %s", k, msg);
            memcpy(f.img, orig, f.size);
            /* a cut sequence at its end: a lead byte where its last byte was */
            f.img[f.pool + so + sl - 1] = 0xE2;
            ASSERT_ST(open_all(&f, msg, sizeof msg, &dis), INGOT_BAD_STRING);
            if (!strstr(msg, want)) FAIL_AT("cut end of %d: %s", k, msg);
            memcpy(f.img, orig, f.size);
            /* a NUL inside an element is allowed in a value (in place of an ASCII byte) */
            if (f.img[f.pool + so] < 0x80) {
                f.img[f.pool + so] = 0;
                ASSERT_ST(open_all(&f, msg, sizeof msg, &dis), INGOT_OK);
                memcpy(f.img, orig, f.size);
            }
        }
        /* (c) outside the pool */
        set64(&f, f.refs + 16u * k, UINT64_MAX - 2);
        ASSERT_ST(open_all(&f, msg, sizeof msg, &dis), INGOT_BAD_STRING);
        snprintf(want, sizeof want, "element %d outside the pool", k);
        if (!strstr(msg, want)) FAIL_AT("bounds of %d: %s", k, msg);
        memcpy(f.img, orig, f.size);
        /* (d) a length of 2^32 + its own: past the pool */
        set64(&f, f.refs + 16u * k + 8, sl + (1ull << 32));
        ASSERT_ST(open_all(&f, msg, sizeof msg, &dis), INGOT_BAD_STRING);
        if (!strstr(msg, want)) FAIL_AT("length of %d: %s", k, msg);
        memcpy(f.img, orig, f.size);
    }
    ASSERT_EQ(dis, 0);
    free(orig);
    free(f.img);
}

/* Two faults: the earlier element is named, whichever kind each is. */
TEST(test_string_array_first_fault_wins)
{
    find_levels();
    strfile f;
    ASSERT_EQ(build(&f), 0);
    uint8_t *orig = malloc(f.size);
    memcpy(orig, f.img, f.size);
    int dis = 0;
    static const int pairs[][2] = {{3, 150}, {150, 3}, {0, 202}, {201, 202}, {9, 10}};
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        int a = pairs[i][0], b = pairs[i][1], lo = a < b ? a : b;
        char msg[256], want[96];
        /* a: bad UTF-8 (element a has length a % 7; pick a non-empty one), b: no NUL */
        if (ref_len(&f, a)) f.img[f.pool + ref_off(&f, a)] = 0xC0;
        else f.img[f.pool + ref_off(&f, a)] = 'q'; /* its NUL, then */
        f.img[f.pool + ref_off(&f, b) + ref_len(&f, b)] = 'z';
        ASSERT_ST(open_all(&f, msg, sizeof msg, &dis), INGOT_BAD_STRING);
        snprintf(want, sizeof want, "element %d is not NUL-terminated UTF-8", lo);
        if (!strstr(msg, want)) FAIL_AT("pair %d/%d: %s", a, b, msg);
        memcpy(f.img, orig, f.size);
        /* a out of the pool, b bad UTF-8 */
        set64(&f, f.refs + 16u * a, UINT64_MAX);
        if (ref_len(&f, b)) f.img[f.pool + ref_off(&f, b)] = 0x80;
        else f.img[f.pool + ref_off(&f, b)] = 'q';
        ASSERT_ST(open_all(&f, msg, sizeof msg, &dis), INGOT_BAD_STRING);
        snprintf(want, sizeof want, a < b ? "element %d outside the pool"
                                          : "element %d is not NUL-terminated UTF-8", lo);
        if (!strstr(msg, want)) FAIL_AT("pair %d/%d (bounds): %s", a, b, msg);
        memcpy(f.img, orig, f.size);
    }
    ASSERT_EQ(dis, 0);
    free(orig);
    free(f.img);
}

/* Valid arrays the fast path does not take: elements out of order, one element twice, a gap. */
TEST(test_string_array_other_layouts)
{
    find_levels();
    strfile f;
    ASSERT_EQ(build(&f), 0);
    uint8_t *orig = malloc(f.size);
    memcpy(orig, f.img, f.size);
    int dis = 0;
    char msg[256];
    for (int k = 0; k + 1 < N_STR; k += 37) {
        /* swap references k and k+1 */
        uint8_t t[16];
        memcpy(t, f.img + f.refs + 16u * k, 16);
        memcpy(f.img + f.refs + 16u * k, f.img + f.refs + 16u * (k + 1), 16);
        memcpy(f.img + f.refs + 16u * (k + 1), t, 16);
        ASSERT_ST(open_all(&f, msg, sizeof msg, &dis), INGOT_OK);
        /* and make the one now at k+1 (element k) invalid: named at its new place */
        if (ref_len(&f, k + 1)) {
            f.img[f.pool + ref_off(&f, k + 1)] = 0xFE;
            ASSERT_ST(open_all(&f, msg, sizeof msg, &dis), INGOT_BAD_STRING);
            char want[96];
            snprintf(want, sizeof want, "element %d is not", k + 1);
            if (!strstr(msg, want)) FAIL_AT("swapped %d: %s", k, msg);
        }
        memcpy(f.img, orig, f.size);
        /* reference k+1 repeats reference k */
        memcpy(f.img + f.refs + 16u * (k + 1), f.img + f.refs + 16u * k, 16);
        ASSERT_ST(open_all(&f, msg, sizeof msg, &dis), INGOT_OK);
        memcpy(f.img, orig, f.size);
    }
    /* a shorter element leaves a gap before the next one (its NUL moves forward) */
    uint64_t so = ref_off(&f, 6), sl = ref_len(&f, 6);
    ASSERT_TRUE(sl >= 2);
    set64(&f, f.refs + 16u * 6 + 8, sl - 1);
    f.img[f.pool + so + sl - 1] = 0;
    f.img[f.pool + so + sl - 2] = 'a'; /* keep the text whole */
    ASSERT_ST(open_all(&f, msg, sizeof msg, &dis), INGOT_OK);
    ASSERT_EQ(dis, 0);
    free(orig);
    free(f.img);
}

/* Element k moved one byte on with its end kept (start + 1, length - 1): it loses its first
 * byte, which stays in the pool as a gap before it. Where that byte led a multi-byte character the
 * element now starts with a continuation byte and must be refused by name, though the pool's text
 * is unchanged and still valid as a whole; elsewhere the file is valid. Every k, so every link
 * between references (in the first eight, across each step of the vector pass, into the tail) is
 * the one broken somewhere. */
TEST(test_string_array_start_moved)
{
    find_levels();
    int dis = 0, refused = 0;
    for (int rot = 0; rot < 5; rot++) { /* element k's first character: part (k + rot) % 5 */
        strfile f;
        ASSERT_EQ(build_rot(&f, rot), 0);
        uint8_t *orig = malloc(f.size);
        memcpy(orig, f.img, f.size);
        for (int k = 1; k < N_STR; k++) {
            uint64_t so = ref_off(&f, k), sl = ref_len(&f, k);
            if (!sl) continue;
            set64(&f, f.refs + 16u * k, so + 1);
            set64(&f, f.refs + 16u * k + 8, sl - 1);
            char msg[256], want[96];
            ingot_status st = open_all(&f, msg, sizeof msg, &dis);
            if (f.img[f.pool + so] >= 0x80) {
                ASSERT_ST(st, INGOT_BAD_STRING);
                snprintf(want, sizeof want, "element %d is not NUL-terminated UTF-8", k);
                if (!strstr(msg, want)) FAIL_AT("start of %d moved: %s", k, msg);
                refused++;
            } else {
                ASSERT_ST(st, INGOT_OK);
            }
            memcpy(f.img, orig, f.size);
        }
        free(orig);
        free(f.img);
    }
    ASSERT_TRUE(refused > 500);
    ASSERT_EQ(dis, 0);
}

static long minor_faults(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt;
}

/* An npz of 200 members 64 KiB apart: each local header on a page of its own. */
static const char *write_npz(void)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/test_open_fast.npz", INGOT_BINARY_DIR);
    ingot_writer_opts wo = {.format = "npz"};
    ingot_writer *w;
    ingot_error e;
    if (ingot_writer_new(&wo, &w, &e)) return NULL;
    static float data[16384];
    for (int i = 0; i < 16384; i++) data[i] = (float)i;
    for (int k = 0; k < 200; k++) {
        char name[32];
        snprintf(name, sizeof name, "m%03d", (k * 7) % 200); /* not in name order */
        uint64_t shape[2] = {64, 256};
        if (ingot_writer_add_tensor(w, name, INGOT_DTYPE_F32, 2, shape, NULL, data, &e))
            return NULL;
    }
    if (ingot_writer_save(w, path, &e)) return NULL;
    ingot_writer_free(w);
    return path;
}

/* The npz reader reads its local and npy headers with pread at open: the fresh mapping takes no
 * page fault per member (it took one each before), and the tables are those of a pread-mode and
 * a buffer open. */
TEST(test_npz_open_reads_no_member_page)
{
    const char *path = write_npz();
    ASSERT_TRUE(path != NULL);
    ingot_file *f, *g, *h;
    ingot_open_opts po = {.io = INGOT_IO_PREAD};
    /* warm: page cache, allocator; then the faults of a pread-mode open (the same allocations,
     * no mapping) are the yardstick, so allocator effects (ASan's shadow) cancel */
    for (int k = 0; k < 2; k++) {
        ASSERT_OK(ingot_file_open(path, k ? &po : NULL, &f, NULL));
        ingot_file_close(f);
    }
    long before = minor_faults();
    ASSERT_OK(ingot_file_open(path, &po, &g, NULL));
    long pread_faults = minor_faults() - before;
    ingot_file_close(g);
    before = minor_faults();
    ASSERT_OK(ingot_file_open(path, NULL, &f, NULL));
    long faults = minor_faults() - before;
    ASSERT_OK(ingot_file_open(path, &po, &g, NULL));
    FILE *fp = fopen(path, "rb");
    ASSERT_TRUE(fp != NULL);
    static uint8_t img[14u << 20];
    size_t n = fread(img, 1, sizeof img, fp);
    fclose(fp);
    ASSERT_TRUE(n < sizeof img);
    ASSERT_OK(ingot_file_open_buffer(img, n, NULL, &h, NULL));
    printf("  minor faults of an open of 200 members: mmap %ld, pread %ld\n", faults,
           pread_faults);
    ASSERT_TRUE(faults < pread_faults + 40);
    ASSERT_U64(ingot_file_tensor_count(f), 200);
    for (uint64_t i = 0; i < 200; i++) {
        ingot_tensor_info a, b, c;
        ASSERT_OK(ingot_file_tensor_at(f, i, &a));
        ASSERT_OK(ingot_file_tensor_at(g, i, &b));
        ASSERT_OK(ingot_file_tensor_at(h, i, &c));
        ASSERT_STR(a.name, b.name);
        ASSERT_STR(a.name, c.name);
        ASSERT_U64(a.offset, b.offset);
        ASSERT_U64(a.offset, c.offset);
        ASSERT_U64(a.nbytes, 65536);
        ASSERT_TRUE(a.shape[0] == 64 && a.shape[1] == 256 && c.shape[1] == 256);
        ASSERT_TRUE(a.data && memcmp(a.data, c.data, 65536) == 0);
        ingot_tensor_info t;
        ASSERT_OK(ingot_file_tensor_find(f, a.name, &t));
        ASSERT_U64(t.index, i);
    }
    ingot_file_close(f);
    ingot_file_close(g);
    ingot_file_close(h);
    remove(path);
}

/* An allocator that counts. */
typedef struct {
    long calls, live;
} counting;

static void *cnt_alloc(void *ctx, size_t size, size_t align)
{
    counting *c = ctx;
    (void)align;
    c->calls++;
    c->live++;
    return malloc(size);
}

static void cnt_free(void *ctx, void *p, size_t size)
{
    counting *c = ctx;
    (void)size;
    c->live--;
    free(p);
}

/* GGUF in pread mode reads the header in growing pieces but parses it once: the parse allocates
 * its index once (it allocated it, and freed it, once per piece: 64 KiB, 128 KiB, ...), and every
 * mode gives the same tables. */
TEST(test_gguf_pread_parses_once)
{
    const char *path = INGOT_FIXTURES "/gguf/ggml-vocab-llama-spm.gguf";
    long calls[3];
    ingot_file *f[3];
    counting cs[3] = {{0, 0}, {0, 0}, {0, 0}}; /* live while the files are open */
    ingot_allocator as[3];
    for (int mode = 0; mode < 3; mode++) {
        counting *cp = &cs[mode];
        as[mode] = (ingot_allocator){cnt_alloc, cnt_free, cp};
        ingot_allocator *ap = &as[mode];
        ingot_open_opts o = {.io = mode == 2 ? INGOT_IO_PREAD : INGOT_IO_MMAP, .allocator = ap};
        ASSERT_OK(ingot_file_open(path, &o, &f[mode], NULL));
        calls[mode] = cp->calls;
        if (mode == 1) {
            ingot_file_close(f[1]);
            ASSERT_EQ(cp->live, 0);
            ASSERT_OK(ingot_file_open(path, NULL, &f[1], NULL));
        }
    }
    printf("  allocations at open: mmap %ld, pread %ld\n", calls[0], calls[2]);
    /* the file, its path, the header pieces (4 KiB, then as the lengths say), the index and the
     * names: a parse per piece would add two per piece */
    ASSERT_TRUE(calls[2] <= 9);
    for (int k = 1; k < 3; k++) {
        ASSERT_U64(ingot_file_meta_count(f[k]), ingot_file_meta_count(f[0]));
        for (uint64_t i = 0; i < ingot_file_meta_count(f[0]); i++) {
            ingot_meta_info a, b;
            ASSERT_OK(ingot_file_meta_at(f[0], i, &a));
            ASSERT_OK(ingot_file_meta_at(f[k], i, &b));
            ASSERT_STR(a.key, b.key);
            ASSERT_U64(a.count, b.count);
            if (a.is_array && a.type == INGOT_META_STRING) {
                for (uint64_t j = 0; j < a.count; j += 997) {
                    const char *x, *y;
                    size_t xl, yl;
                    ASSERT_OK(ingot_file_meta_array_string(f[0], i, j, &x, &xl));
                    ASSERT_OK(ingot_file_meta_array_string(f[k], i, j, &y, &yl));
                    ASSERT_TRUE(xl == yl && memcmp(x, y, xl) == 0);
                }
            }
        }
    }
    for (int k = 0; k < 3; k++) ingot_file_close(f[k]);
}

RUN_TESTS(T(test_string_array_valid_and_contiguous), T(test_string_array_each_element),
          T(test_string_array_first_fault_wins), T(test_string_array_other_layouts),
          T(test_string_array_start_moved),
          T(test_npz_open_reads_no_member_page), T(test_gguf_pread_parses_once))
