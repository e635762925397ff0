/*
 * gen_seeds.c - writes the seed corpus of the .ingot fuzz targets: small valid files made with
 * ingot_writer covering every dtype, every metadata type as scalar and array (string and bytes
 * arrays included), ranks 0..8, zero-size tensors, param ids, every alignment, tensors sharing
 * shape records, plus variants of a valid file that exercise the reader's forward-compatibility
 * paths (a newer minor version, optional flags), with the header CRC fixed up. Seeds of
 * fuzz_roundtrip_native are byte strings.
 *
 *   fuzz_gen_seeds OUTDIR_FILES OUTDIR_ROUNDTRIP
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ingot/ingot.h"
#include "ingot/native.h"

static const char *out_dir;
static int n_written;

static void die(const char *what, ingot_status st)
{
    fprintf(stderr, "gen_seeds: %s: %s\n", what, ingot_status_name(st));
    exit(1);
}

static void put(const char *dir, const char *name, const void *p, size_t n)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *fp = fopen(path, "wb");
    if (!fp || fwrite(p, 1, n, fp) != n || fclose(fp) != 0) {
        perror(path);
        exit(1);
    }
    n_written++;
}

static ingot_writer *new_writer(uint32_t alignment)
{
    ingot_writer_opts o = {.alignment = alignment, .no_fsync = true};
    ingot_writer *w;
    ingot_status st = ingot_writer_new(&o, &w, NULL);
    if (st != INGOT_OK) die("writer_new", st);
    return w;
}

/* Finishes w into memory; writes the file unless keep is given (then hands the bytes over). */
static void finish(ingot_writer *w, const char *name, void **keep, size_t *keep_n)
{
    ingot_error e;
    ingot_status st = ingot_writer_begin_mem(w, &e);
    if (st != INGOT_OK) die(name, st);
    void *p;
    size_t n;
    st = ingot_writer_commit_mem(w, &p, &n, &e);
    if (st != INGOT_OK) die(name, st);
    ingot_writer_free(w);
    put(out_dir, name, p, n);
    if (keep) {
        *keep = p;
        *keep_n = n;
    } else {
        ingot_writer_free_mem(NULL, p, n);
    }
}

static void st32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static uint64_t ld64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* The header checksum (docs/FORMAT.md §4): CRC-32C of [0, 188) ++ [192, data_offset), stored at
 * 188; data_offset is the u64 at 160. */
static void fix_crc(uint8_t *d)
{
    uint64_t data_off = ld64(d + 160);
    uint32_t crc = ingot_crc32c(0, d, 188);
    crc = ingot_crc32c(crc, d + INGOT_NATIVE_HEADER_BYTES,
                       (size_t)(data_off - INGOT_NATIVE_HEADER_BYTES));
    st32(d + 188, crc);
}

static uint8_t pattern[4096];

static void add(ingot_writer *w, const char *name, ingot_dtype dt, uint32_t rank,
                const uint64_t *shape, const ingot_tensor_opts *to)
{
    ingot_error e;
    static const uint8_t bools[4096]; /* BOOL data must be 0 or 1 (the writer checks) */
    ingot_status st = ingot_writer_add_tensor(w, name, dt, rank, shape, to,
                                              dt == INGOT_DTYPE_BOOL ? bools : pattern, &e);
    if (st != INGOT_OK) die(name, st);
}

#define M(call)                                                                                    \
    do {                                                                                           \
        ingot_status m_st_ = (call);                                                               \
        if (m_st_ != INGOT_OK) die(#call, m_st_);                                                  \
    } while (0)

static void meta_all(ingot_writer *w)
{
    M(ingot_writer_set_u8(w, "m.u8", 200));
    M(ingot_writer_set_u16(w, "m.u16", 60000));
    M(ingot_writer_set_u32(w, "m.u32", 4000000000u));
    M(ingot_writer_set_u64(w, "m.u64", UINT64_MAX));
    M(ingot_writer_set_i8(w, "m.i8", -100));
    M(ingot_writer_set_i16(w, "m.i16", -30000));
    M(ingot_writer_set_i32(w, "m.i32", -2000000000));
    M(ingot_writer_set_i64(w, "m.i64", INT64_MIN));
    M(ingot_writer_set_f32(w, "m.f32", 1.5f));
    M(ingot_writer_set_f64(w, "m.f64", -0.25));
    M(ingot_writer_set_bool(w, "m.bool", true));
    M(ingot_writer_set_string(w, "m.string", "h\xc3\xa9llo \xf0\x9f\x98\x80"));
    M(ingot_writer_set_stringn(w, "m.string0", "", 0));
    M(ingot_writer_set_bytes(w, "m.bytes", "\x00\x01\xff", 3));
    static const uint8_t a8[5] = {1, 2, 3, 254, 255};
    static const uint16_t a16[3] = {1, 300, 65535};
    static const uint32_t a32[3] = {7, 0, 0xdeadbeef};
    static const uint64_t a64[2] = {1, UINT64_MAX};
    static const int8_t i8[2] = {-1, 127};
    static const int16_t i16[2] = {-2, 2};
    static const int32_t i32[3] = {-3, 0, 3};
    static const int64_t i64[1] = {-4};
    static const float f32[3] = {0.5f, -1.0f, 3.25f};
    static const double f64[2] = {1e300, -2.5};
    static const uint8_t bl[4] = {1, 0, 1, 1};
    M(ingot_writer_set_array(w, "a.u8", INGOT_META_U8, a8, 5));
    M(ingot_writer_set_array(w, "a.u16", INGOT_META_U16, a16, 3));
    M(ingot_writer_set_array(w, "a.u32", INGOT_META_U32, a32, 3));
    M(ingot_writer_set_array(w, "a.u64", INGOT_META_U64, a64, 2));
    M(ingot_writer_set_array(w, "a.i8", INGOT_META_I8, i8, 2));
    M(ingot_writer_set_array(w, "a.i16", INGOT_META_I16, i16, 2));
    M(ingot_writer_set_array(w, "a.i32", INGOT_META_I32, i32, 3));
    M(ingot_writer_set_array(w, "a.i64", INGOT_META_I64, i64, 1));
    M(ingot_writer_set_array(w, "a.f32", INGOT_META_F32, f32, 3));
    M(ingot_writer_set_array(w, "a.f64", INGOT_META_F64, f64, 2));
    M(ingot_writer_set_array(w, "a.bool", INGOT_META_BOOL, bl, 4));
    M(ingot_writer_set_array(w, "a.empty", INGOT_META_U32, NULL, 0));
    const void *strs[4] = {"a", "", "tok\xc3\xa9", "<0x0A>"};
    size_t lens[4] = {1, 0, 5, 6};
    M(ingot_writer_set_string_array(w, "a.string", INGOT_META_STRING, strs, lens, 4));
    const void *bys[2] = {"\x00\x00", "\xff"};
    size_t blens[2] = {2, 1};
    M(ingot_writer_set_string_array(w, "a.bytes", INGOT_META_BYTES, bys, blens, 2));
    M(ingot_writer_set_string_array(w, "a.string_empty", INGOT_META_STRING, NULL, NULL, 0));
}

static void gen_files(void)
{
    for (size_t i = 0; i < sizeof pattern; i++) pattern[i] = (uint8_t)(i * 131 + 7);
    char name[128];

    /* empty file of each alignment (65536: the file is exactly 64 KiB) */
    for (uint32_t a = 64; a <= 65536; a *= 2) {
        if (a > 4096 && a != 65536) continue;
        snprintf(name, sizeof name, "empty_align%u.ingot", a);
        finish(new_writer(a), name, NULL, NULL);
    }

    /* every dtype: one small tensor each (quantized: one block) */
    static const struct { ingot_dtype dt; const char *n; } dts[] = {
#define X(name, value, be, bb) {INGOT_DTYPE_##name, #name},
        INGOT_DTYPE_LIST(X)
#undef X
    };
    for (size_t i = 0; i < sizeof dts / sizeof dts[0]; i++) {
        ingot_writer *w = new_writer(64);
        uint32_t be = ingot_dtype_block_elems(dts[i].dt);
        uint64_t shape[2] = {2, be > 1 ? be : 3};
        add(w, dts[i].n, dts[i].dt, 2, shape, NULL);
        snprintf(name, sizeof name, "dtype_%s.ingot", dts[i].n);
        finish(w, name, NULL, NULL);
    }

    /* ranks 0..8, zero-size tensors, param ids, several tensors sorted differently */
    {
        ingot_writer *w = new_writer(64);
        uint64_t shape[8] = {1, 2, 1, 2, 1, 1, 2, 1};
        for (uint32_t r = 0; r <= 8; r++) {
            snprintf(name, sizeof name, "rank%u", 8 - r);
            ingot_tensor_opts to = {r & 1, 1000 + r};
            add(w, name, INGOT_DTYPE_F32, 8 - r, shape, &to);
        }
        uint64_t z[3] = {4, 0, 5};
        add(w, "zero.mid", INGOT_DTYPE_F16, 3, z, NULL);
        uint64_t z1[1] = {0};
        add(w, "zero.q", INGOT_DTYPE_Q4_K, 1, z1, NULL);
        finish(w, "ranks.ingot", NULL, NULL);
    }

    /* layers of one model: few shape records, each used by several tensors; param ids on some */
    {
        ingot_writer *w = new_writer(64);
        uint64_t sq[2] = {16, 16}, sup[2] = {4, 64}, snorm[1] = {16};
        for (uint32_t l = 0; l < 3; l++) {
            ingot_tensor_opts to = {true, 100 + l};
            snprintf(name, sizeof name, "blk.%u.attn_q", l);
            add(w, name, INGOT_DTYPE_F16, 2, sq, &to);
            snprintf(name, sizeof name, "blk.%u.attn_k", l);
            add(w, name, INGOT_DTYPE_F16, 2, sq, NULL);
            snprintf(name, sizeof name, "blk.%u.ffn_up", l);
            add(w, name, INGOT_DTYPE_Q8_0, 2, sup, NULL);
            snprintf(name, sizeof name, "blk.%u.norm", l);
            add(w, name, INGOT_DTYPE_F32, 1, snorm, NULL);
        }
        finish(w, "shared_shapes.ingot", NULL, NULL);
    }

    /* every metadata type, no tensors; and with tensors at each alignment */
    {
        ingot_writer *w = new_writer(64);
        meta_all(w);
        finish(w, "meta_all.ingot", NULL, NULL);
    }
    void *base = NULL;
    size_t base_n = 0;
    for (uint32_t a = 64; a <= 4096; a *= 4) {
        ingot_writer *w = new_writer(a);
        meta_all(w);
        uint64_t s1[2] = {3, 5}, s2[1] = {64};
        ingot_tensor_opts to = {true, 7};
        add(w, "model.layers.0.attn.weight", INGOT_DTYPE_BF16, 2, s1, &to);
        add(w, "model.layers.0.attn.bias", INGOT_DTYPE_Q8_0, 1, s2, NULL);
        add(w, "\xc3\xa9t\xc3\xa9", INGOT_DTYPE_I64, 0, NULL, NULL); /* scalar */
        add(w, "a", INGOT_DTYPE_BOOL, 1, s2, NULL);
        snprintf(name, sizeof name, "mixed_align%u.ingot", a);
        finish(w, name, a == 64 ? &base : NULL, &base_n);
    }

    /* forward compatibility on the 64-aligned mixed file: newer minor, optional flags */
    uint8_t *v = malloc(base_n);
    if (!v) exit(1);
    memcpy(v, base, base_n);
    v[10] = 2; /* minor 2: layout rules relax for unknown minors */
    fix_crc(v);
    put(out_dir, "minor2.ingot", v, base_n);
    memcpy(v, base, base_n);
    v[20] = 0x5a; /* unknown optional flags are ignored */
    fix_crc(v);
    put(out_dir, "optflags.ingot", v, base_n);
    free(v);
    ingot_writer_free_mem(NULL, base, base_n);
}

/* packed string/bytes arrays (FORMAT.md §7.1): a vocabulary-like array long enough for every
 * vector step and tail, empty strings, NULs inside, non-ASCII; and the same as v1.0 references */
static void gen_packed(void)
{
    static char text[300 * 8];
    const void *p[300];
    size_t l[300], at = 0;
    static const char *const parts[] = {"a", "\xc3\xa9", "\xe2\x96\x81", "\xf0\x9f\x98\x80", ""};
    for (int k = 0; k < 300; k++) {
        p[k] = text + at;
        size_t n = 0;
        for (int j = 0; j < k % 3; j++) {
            const char *s = parts[(k + j) % 5];
            memcpy(text + at + n, s, strlen(s));
            n += strlen(s);
        }
        if (k % 17 == 5) text[at + n++] = 0; /* a NUL inside */
        l[k] = n;
        at += n;
    }
    for (int v10 = 0; v10 < 2; v10++) {
        ingot_writer_opts o = {.alignment = 64, .no_fsync = true, .ingot_v1_0 = v10};
        ingot_writer *w;
        if (ingot_writer_new(&o, &w, NULL) != INGOT_OK) die("writer", INGOT_MISUSE);
        M(ingot_writer_set_string_array(w, "tokenizer.tokens", INGOT_META_STRING, p, l, 300));
        M(ingot_writer_set_string_array(w, "tokenizer.bytes", INGOT_META_BYTES, p, l, 37));
        M(ingot_writer_set_string_array(w, "tokenizer.none", INGOT_META_STRING, NULL, NULL, 0));
        uint64_t s1[1] = {4};
        add(w, "w", INGOT_DTYPE_F32, 1, s1, NULL);
        finish(w, v10 ? "packed_v10.ingot" : "packed.ingot", NULL, NULL);
    }
}

static void gen_roundtrip(const char *dir)
{
    /* byte strings: the target derives everything from them */
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (int k = 0; k < 24; k++) {
        uint8_t buf[512];
        size_t n = 16 + (size_t)k * 20;
        for (size_t i = 0; i < n; i++) {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            buf[i] = (uint8_t)((x * 0x2545F4914F6CDD1Dull) >> 56);
        }
        buf[3] = (uint8_t)(k % 25); /* tensor count */
        buf[4] = (uint8_t)((k * 7) % 25); /* metadata count */
        char name[64];
        snprintf(name, sizeof name, "rt_%02d.bin", k);
        put(dir, name, buf, n);
    }
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s OUTDIR_FILES OUTDIR_ROUNDTRIP\n", argv[0]);
        return 1;
    }
    for (int i = 1; i < 3; i++)
        if (mkdir(argv[i], 0755) != 0 && errno != EEXIST) {
            perror(argv[i]);
            return 1;
        }
    out_dir = argv[1];
    gen_files();
    gen_packed();
    gen_roundtrip(argv[2]);
    printf("wrote %d seeds\n", n_written);
    return 0;
}
