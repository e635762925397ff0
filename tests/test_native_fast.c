/* test_native_fast.c - the vector passes of the native reader's open (issue 17: the tensor table
 * eight entries a step, the name index with mask compares, at every level the CPU has) accept the
 * files the exact checks accept and reject every damaged one with the exact checks' error: each
 * kind of damage is done to every tensor and index entry in turn (every lane of a step and the
 * tail), and the expected code and offset follow from the damage and docs/FORMAT.md §5, not from
 * the reader. Images are opened whole and as the header region alone (the adapter's copy), with
 * the header checksum recomputed after each change. */
#include "harness.h"
#include "ingot/native.h"
#include "native_layout.h"
#include "support/utf8_levels.h"
#include "utf8.h"

typedef struct {
    uint8_t *img;
    size_t size;
    uint64_t n, tt, ni, names, data_off, n_shapes;
    uint32_t align;
} image;

/* Tensor k's name: names sharing prefixes of 1 to more than 64 bytes (the vector compare takes
 * 32 bytes of each name), lengths 1 to 90. */
static void name_of(char *s, size_t cap, int k, int style)
{
    static const char *const pre =
        "a.very.long.common.prefix.of.more.than.sixty.four.bytes.for.the.name.index.compare.";
    switch (style == 0 ? k % 5 : 4) {
    case 0: snprintf(s, cap, "blk.%d.attn_q.weight", k); break;
    case 1: snprintf(s, cap, "model.layers.%d.self_attn.k_proj.weight", k); break;
    case 2: snprintf(s, cap, "%s%03d", pre, k); break;
    case 3: snprintf(s, cap, "%c", 'A' + k % 26); s[1] = 0; break;
    default: snprintf(s, cap, "t%d", k); break;
    }
    if (style == 0 && k % 5 == 3 && k >= 26) snprintf(s, cap, "%c%d", 'A' + k % 26, k);
}

/* n tensors; style 0: mixed names and four dtypes over few shapes; style 1: short names and n
 * distinct shapes (more than the sixteen the permute holds when n > 16). */
static int build(image *im, int n, int style)
{
    ingot_writer_opts wo = {.format = "ingot"};
    ingot_writer *w;
    ingot_error e;
    if (ingot_writer_new(&wo, &w, &e)) return 1;
    static uint8_t src[4096];
    for (int k = 0; k < n; k++) {
        char nm[128];
        name_of(nm, sizeof nm, k, style);
        static const ingot_dtype dts[4] = {INGOT_DTYPE_F32, INGOT_DTYPE_F16, INGOT_DTYPE_BF16,
                                           INGOT_DTYPE_U8};
        ingot_dtype dt = style == 0 ? dts[k % 4] : INGOT_DTYPE_U8;
        uint64_t shape[2] = {style == 0 ? (uint64_t)(k % 3 + 1) : (uint64_t)(k + 1), 5};
        if (ingot_writer_add_tensor(w, nm, dt, style == 0 ? 2 : 1, shape, NULL, src, &e)) {
            ingot_writer_free(w);
            return 1;
        }
    }
    if (ingot_writer_begin_mem(w, &e) || ingot_writer_commit_mem(w, (void **)&im->img, &im->size,
                                                                 &e))
        return 1;
    ingot_writer_free(w);
    const uint8_t *h = im->img;
    im->n = ing_ld64(h + HDR_N_TENSORS);
    im->tt = ing_ld64(h + HDR_TENSOR_TABLE);
    im->ni = ing_ld64(h + HDR_NAME_INDEX);
    im->names = ing_ld64(h + HDR_NAMES);
    im->data_off = ing_ld64(h + HDR_DATA);
    im->n_shapes = ing_ld64(h + HDR_N_SHAPES);
    im->align = ing_ld32(h + HDR_ALIGNMENT);
    return im->n == (uint64_t)n ? 0 : 1;
}

static void fix_crc(uint8_t *img)
{
    uint64_t d = ing_ld64(img + HDR_DATA);
    uint32_t c = ingot_crc32c(ingot_crc32c(0, img, HDR_CRC), img + ING_HDR_SIZE, d - ING_HDR_SIZE);
    ing_st32(img + HDR_CRC, c);
}

static int failures;

/* Opens img whole and as its header region, at every level: each open must give code `want` at
 * offset `at` (any offset when want is OK), and the same message at every level. */
static void expect(const image *im, const uint8_t *img, ingot_status want, uint64_t at,
                   const char *what, uint64_t k)
{
    char first[256] = "";
    for (int part = 0; part < 2; part++) {
        size_t avail = part ? (size_t)im->data_off : im->size;
        for (int l = 0; l < n_levels; l++) {
            ingot__utf8_limit(levels[l]);
            _Alignas(8) unsigned char ws[INGOT_NATIVE_WORKSPACE];
            ingot_native *r;
            ingot_error e;
            memset(&e, 0, sizeof e);
            ingot_status st = ingot_native_open(ws, sizeof ws, img, avail, im->size, 0, &r, &e);
            bool bad = st != want || (want != INGOT_OK && e.offset != at);
            if (!bad && part == 0 && l == 0) snprintf(first, sizeof first, "%s", st ? e.msg : "");
            else if (!bad && strcmp(first, st ? e.msg : "") != 0) bad = true;
            if (bad && failures++ < 8)
                FAIL_AT("%s at %llu, level %d, %s: got %s at %llu (%s), want %s at %llu", what,
                        (unsigned long long)k, levels[l], part ? "header only" : "whole image",
                        ingot_status_name(st), (unsigned long long)e.offset, e.msg,
                        ingot_status_name(want), (unsigned long long)at);
        }
    }
    ingot__utf8_limit(INGOT__UTF8_TOP);
}

static uint64_t noff(const uint8_t *img, const image *im, uint64_t k)
{
    return ing_ld32(img + im->tt + k * ING_TEN_SIZE + TEN_NAME_OFF);
}

/* Every damage to every tensor entry and index entry of one image. */
static void damage_all(const image *im)
{
    uint8_t *c = malloc(im->size);
    ASSERT_TRUE(c != NULL);
    expect(im, im->img, INGOT_OK, 0, "valid file", 0);
    for (uint64_t k = 0; k < im->n; k++) {
        uint64_t e = im->tt + k * ING_TEN_SIZE;
#define DAMAGE(what, code, at, stmt)                                                               \
    do {                                                                                           \
        memcpy(c, im->img, im->size);                                                              \
        stmt;                                                                                      \
        fix_crc(c);                                                                                \
        expect(im, c, code, at, what, k);                                                          \
    } while (0)
        DAMAGE("shape id = n_shapes", INGOT_BAD_LAYOUT, e + TEN_SHAPE,
               ing_st32(c + e + TEN_SHAPE, (uint32_t)im->n_shapes));
        DAMAGE("shape id = 2^32-1", INGOT_BAD_LAYOUT, e + TEN_SHAPE,
               ing_st32(c + e + TEN_SHAPE, UINT32_MAX));
        DAMAGE("unknown flag", INGOT_BAD_FLAGS, e + TEN_FLAGS, ing_st32(c + e + TEN_FLAGS, 2));
        DAMAGE("param id flag without param ids", INGOT_BAD_FLAGS, e + TEN_FLAGS,
               ing_st32(c + e + TEN_FLAGS, TEN_FLAG_PARAM_ID));
        DAMAGE("data offset one alignment on", INGOT_BAD_LAYOUT, e + TEN_OFFSET,
               ing_st64(c + e + TEN_OFFSET, ing_ld64(c + e + TEN_OFFSET) + im->align));
        DAMAGE("data offset 8 bytes on", INGOT_BAD_ALIGN, e + TEN_OFFSET,
               ing_st64(c + e + TEN_OFFSET, ing_ld64(c + e + TEN_OFFSET) + 8));
        DAMAGE("data offset 2^63", INGOT_BAD_LAYOUT, e + TEN_OFFSET,
               ing_st64(c + e + TEN_OFFSET, 1ull << 63));
        /* the name's NUL: the byte before the next name, or the section's last byte */
        uint64_t end = k + 1 < im->n ? noff(im->img, im, k + 1)
                                     : ing_ld64(im->img + HDR_NAMES_SIZE);
        DAMAGE("name terminator not NUL", INGOT_BAD_STRING, im->names + noff(im->img, im, k),
               c[im->names + end - 1] = 'x');
        DAMAGE("NUL inside the name", INGOT_BAD_STRING, im->names + noff(im->img, im, k),
               c[im->names + end - 2] = 0);
        if (k > 0) {
            /* the previous name then runs into this one's first byte */
            DAMAGE("name offset one on", INGOT_BAD_STRING, im->names + noff(im->img, im, k - 1),
                   ing_st32(c + e + TEN_NAME_OFF, (uint32_t)noff(im->img, im, k) + 1));
            DAMAGE("name offset 2^32-1", INGOT_BAD_NAME, e - ING_TEN_SIZE + TEN_NAME_OFF,
                   ing_st32(c + e + TEN_NAME_OFF, UINT32_MAX));
            /* the previous name then ends before it starts; its NUL would be byte -1 */
            DAMAGE("name offset 0", INGOT_BAD_NAME, e - ING_TEN_SIZE + TEN_NAME_OFF,
                   ing_st32(c + e + TEN_NAME_OFF, 0));
        }
        /* index entry k */
        uint64_t x = im->ni + 4 * k;
        DAMAGE("index entry = n", INGOT_BAD_LAYOUT, x, ing_st32(c + x, (uint32_t)im->n));
        if (k > 0) {
            DAMAGE("index entry repeats the previous", INGOT_DUPLICATE, x,
                   ing_st32(c + x, ing_ld32(c + x - 4)));
            DAMAGE("index entries swapped", INGOT_BAD_LAYOUT, x, {
                uint32_t a = ing_ld32(c + x - 4);
                ing_st32(c + x - 4, ing_ld32(c + x));
                ing_st32(c + x, a);
            });
        }
#undef DAMAGE
    }
    if (im->n & 1) {
        memcpy(c, im->img, im->size);
        ing_st32(c + im->ni + 4 * im->n, 1);
        fix_crc(c);
        expect(im, c, INGOT_BAD_LAYOUT, im->ni + 4 * im->n, "index padding", im->n);
    }
    free(c);
}

TEST(test_every_count_valid)
{
    find_levels();
    for (int style = 0; style < 2; style++)
        for (int n = 0; n <= 41; n++) {
            image im;
            ASSERT_EQ(build(&im, n, style), 0);
            expect(&im, im.img, INGOT_OK, 0, "valid file of n tensors", (uint64_t)n);
            free(im.img);
        }
    ASSERT_EQ(failures, 0);
}

TEST(test_damage_mixed_names_few_shapes)
{
    find_levels();
    static const int counts[] = {1, 7, 8, 9, 16, 37};
    for (size_t i = 0; i < sizeof counts / sizeof *counts; i++) {
        image im;
        ASSERT_EQ(build(&im, counts[i], 0), 0);
        ASSERT_TRUE(im.n_shapes <= 16);
        damage_all(&im);
        free(im.img);
    }
    ASSERT_EQ(failures, 0);
}

TEST(test_damage_many_shapes)
{
    find_levels();
    image im;
    ASSERT_EQ(build(&im, 27, 1), 0);
    ASSERT_U64(im.n_shapes, 27); /* past the sixteen sizes the permute holds: the gather */
    damage_all(&im);
    free(im.img);
    ASSERT_EQ(failures, 0);
}

RUN_TESTS(T(test_every_count_valid), T(test_damage_mixed_names_few_shapes),
          T(test_damage_many_shapes))
