/*
 * gen_bad_corpus.c - builds the golden .ingot corpus of tests/corpus/{bad,good} in memory.
 *
 * Not a test of its own: tests/test_malformed.c includes this file, compares what it builds with
 * the files on disk byte for byte, and regenerates them with
 *     build/tests/test_malformed --regen <source>/tests/corpus
 * tests/test_corrupt.c includes it with GEN_BASE_ONLY defined, for the base file alone.
 *
 * Every bad file starts from one valid base file written by the real writer (9 tensors incl. two
 * quantized ones sharing one shape record, a scalar, a zero-sized one, a multi-byte UTF-8 name and
 * three param ids, one of them 0; 8 shape records; metadata of every type incl. numeric, bool,
 * string and bytes arrays; alignment 64), gets one field patched (or a section resized, with
 * everything after it moved), and then (unless the row is about checksums) has its header CRC-32C
 * recomputed so the structural check under test is what fires. Each row also states the byte
 * offset and the `where` the reader must report (docs/FORMAT.md §5.4 fixes which rule fires
 * first): "header" and the field for the fixed header, "shape record" and the offending field
 * (a record field, or the record's first dimension for the shape and size rules) for shape
 * records, the tensor's name and the field for tensor entries, the tensor's name and its u64 in the
 * param_ids section for param ids.
 */
#ifndef INGOT_GEN_BAD_CORPUS_C
#define INGOT_GEN_BAD_CORPUS_C

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ingot/ingot.h"
#include "native_layout.h"

#define GEN_CAP 8192u

typedef struct {
    uint8_t b[GEN_CAP];
    size_t n;
} gbuf;

/* ---- the base file --------------------------------------------------------------------------- */

/* Table order (= data order). blk.1.q shares blk.0.q's shape record; model.embed.T has the same
 * dtype and rank as model.embed and sorts after it both by name (a prefix) and by shape. */
enum {
    GT_EMBED, GT_Q, GT_BIAS, GT_UTF8, GT_EMPTY, GT_I64, GT_Q1, GT_EMBT, GT_TAIL, GT_N
};

static const char *const gen_tnames[GT_N] = {
    "model.embed", "blk.0.q", "bias", "h\xc3\xa9llo.w\xc3\xb6rld", "empty", "x.i64", "blk.1.q",
    "model.embed.T", "tail",
};

/* The base file's shape records, in their (dtype, rank, dims) order: GS_x is the record of
 * tensor GT_x. */
enum { GS_EMBED, GS_EMBT, GS_EMPTY, GS_BIAS, GS_I64, GS_UTF8, GS_TAIL, GS_Q, GS_N };
#define GEN_N_DIMS 11u /* 2 + 2 + 2 + 0 + 1 + 1 + 1 + 2 */

/* Deterministic tensor bytes (opaque to the format: no host byte order involved). */
static void gen_fill(uint8_t *p, size_t n, unsigned seed)
{
    for (size_t k = 0; k < n; k++) p[k] = (uint8_t)(seed * 31u + k * 7u + 1u);
}

/* Describes the base file into w. The same calls always give the same bytes. */
static bool gen_describe_base(ingot_writer *w)
{
    static uint8_t data[GT_N][32];
    for (unsigned i = 0; i < GT_N; i++) gen_fill(data[i], sizeof data[i], i);
    ingot_error e;
    bool ok = true;
    ok &= ingot_writer_set_u8(w, "a.u8", 200) == INGOT_OK;
    ok &= ingot_writer_set_u16(w, "a.u16", 60000) == INGOT_OK;
    ok &= ingot_writer_set_u32(w, "a.u32", 4000000000u) == INGOT_OK;
    ok &= ingot_writer_set_u64(w, "a.u64", 0x0123456789abcdefull) == INGOT_OK;
    ok &= ingot_writer_set_i8(w, "b.i8", -5) == INGOT_OK;
    ok &= ingot_writer_set_i16(w, "b.i16", -30000) == INGOT_OK;
    ok &= ingot_writer_set_i32(w, "b.i32", -2000000000) == INGOT_OK;
    ok &= ingot_writer_set_i64(w, "b.i64", INT64_MIN + 1) == INGOT_OK;
    ok &= ingot_writer_set_f32(w, "c.f32", 1.5f) == INGOT_OK;
    ok &= ingot_writer_set_f64(w, "c.f64", -0.125) == INGOT_OK;
    ok &= ingot_writer_set_bool(w, "d.bool", true) == INGOT_OK;
    static const uint8_t bytes[4] = {0x00, 0x01, 0xfe, 0xff};
    ok &= ingot_writer_set_bytes(w, "e.bytes", bytes, sizeof bytes) == INGOT_OK;
    ok &= ingot_writer_set_string(w, "e.string", "hello w\xc3\xb6rld") == INGOT_OK;
    static const uint8_t bools[4] = {1, 0, 1, 1};
    ok &= ingot_writer_set_array(w, "f.bool[]", INGOT_META_BOOL, bools, 4) == INGOT_OK;
    static const double f64s[2] = {1.0, -2.5};
    ok &= ingot_writer_set_array(w, "f.f64[]", INGOT_META_F64, f64s, 2) == INGOT_OK;
    static const uint16_t u16s[3] = {1, 2, 65535};
    ok &= ingot_writer_set_array(w, "f.u16[]", INGOT_META_U16, u16s, 3) == INGOT_OK;
    static const uint8_t blob0[2] = {0xff, 0x00};
    const void *blobs[2] = {blob0, ""};
    size_t blob_lens[2] = {2, 0};
    ok &= ingot_writer_set_string_array(w, "g.blobs[]", INGOT_META_BYTES, blobs, blob_lens, 2) ==
          INGOT_OK;
    const void *strs[3] = {"ab", "", "\xc3\xa7"};
    size_t str_lens[3] = {2, 0, 2};
    ok &= ingot_writer_set_string_array(w, "g.strs[]", INGOT_META_STRING, strs, str_lens, 3) ==
          INGOT_OK;
    /* sorted last, so the pool ends with bytes that are not NUL: rows about strings that run
     * exactly to the pool end are then caught by the bound check alone */
    ok &= ingot_writer_set_bytes(w, "z.tail", "xyz", 3) == INGOT_OK;

    static const uint64_t s_embed[2] = {2, 3}, s_q[2] = {1, 32}, s_utf8[1] = {3},
                          s_empty[2] = {4, 0}, s_i64[1] = {2}, s_embt[2] = {3, 2},
                          s_tail[1] = {5};
    ingot_tensor_opts pid7 = {true, 7}, pidmax = {true, UINT64_MAX}, pid0 = {true, 0};
    ok &= ingot_writer_add_tensor(w, gen_tnames[GT_EMBED], INGOT_DTYPE_F32, 2, s_embed, &pid7,
                                  data[GT_EMBED], &e) == INGOT_OK;
    ok &= ingot_writer_add_tensor(w, gen_tnames[GT_Q], INGOT_DTYPE_Q4_0, 2, s_q, NULL, data[GT_Q],
                                  &e) == INGOT_OK;
    ok &= ingot_writer_add_tensor(w, gen_tnames[GT_BIAS], INGOT_DTYPE_F16, 0, NULL, NULL,
                                  data[GT_BIAS], &e) == INGOT_OK;
    ok &= ingot_writer_add_tensor(w, gen_tnames[GT_UTF8], INGOT_DTYPE_I8, 1, s_utf8, NULL,
                                  data[GT_UTF8], &e) == INGOT_OK;
    ok &= ingot_writer_add_tensor(w, gen_tnames[GT_EMPTY], INGOT_DTYPE_F32, 2, s_empty, NULL,
                                  data[GT_EMPTY], &e) == INGOT_OK;
    ok &= ingot_writer_add_tensor(w, gen_tnames[GT_I64], INGOT_DTYPE_I64, 1, s_i64, &pidmax,
                                  data[GT_I64], &e) == INGOT_OK;
    ok &= ingot_writer_add_tensor(w, gen_tnames[GT_Q1], INGOT_DTYPE_Q4_0, 2, s_q, NULL,
                                  data[GT_Q1], &e) == INGOT_OK;
    ok &= ingot_writer_add_tensor(w, gen_tnames[GT_EMBT], INGOT_DTYPE_F32, 2, s_embt, &pid0,
                                  data[GT_EMBT], &e) == INGOT_OK;
    ok &= ingot_writer_add_tensor(w, gen_tnames[GT_TAIL], INGOT_DTYPE_U8, 1, s_tail, NULL,
                                  data[GT_TAIL], &e) == INGOT_OK;
    return ok;
}

/* Writes a described writer to memory and copies the bytes into g. */
static bool gen_finish(ingot_writer *w, gbuf *g)
{
    ingot_error e;
    void *p = NULL;
    size_t n = 0;
    bool ok = ingot_writer_begin_mem(w, &e) == INGOT_OK &&
              ingot_writer_commit_mem(w, &p, &n, &e) == INGOT_OK && n <= GEN_CAP;
    if (ok) {
        memset(g->b, 0, sizeof g->b);
        memcpy(g->b, p, n);
        g->n = n;
    }
    ingot_writer_free_mem(NULL, p, n);
    ingot_writer_free(w);
    return ok;
}

/* The valid base file every bad file is derived from. */
/* The base file (v1.0 form; with packed, the writer's default v1.1 form: its string and bytes
 * arrays packed, flags_required bit 0, minor 1). */
static bool gen_base_form(gbuf *g, bool packed)
{
    ingot_writer_opts o = {.alignment = 64, .ingot_v1_0 = !packed};
    ingot_writer *w;
    if (ingot_writer_new(&o, &w, NULL) != INGOT_OK) return false;
    if (!gen_describe_base(w)) {
        ingot_writer_free(w);
        return false;
    }
    return gen_finish(w, g);
}

static bool gen_base(gbuf *g) { return gen_base_form(g, false); }

#ifndef GEN_BASE_ONLY

static void gen_die(const char *what)
{
    fprintf(stderr, "gen_bad_corpus: %s\n", what);
    abort();
}

static uint64_t gld(const gbuf *g, uint64_t at, unsigned w)
{
    if (at + w > GEN_CAP) gen_die("load out of range");
    uint64_t v = 0;
    for (unsigned k = 0; k < w; k++) v |= (uint64_t)g->b[at + k] << (8 * k);
    return v;
}

static void gst(gbuf *g, uint64_t at, unsigned w, uint64_t v)
{
    if (at + w > GEN_CAP) gen_die("store out of range");
    for (unsigned k = 0; k < w; k++) g->b[at + k] = (uint8_t)(v >> (8 * k));
}

static uint64_t gen_round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

/* ---- field access on a file image ------------------------------------------------------------ */

static uint64_t g_hdr(const gbuf *g, uint32_t field) { return gld(g, field, 8); }
static uint64_t g_pool(const gbuf *g) { return g_hdr(g, HDR_POOL); }
static uint64_t g_data(const gbuf *g) { return g_hdr(g, HDR_DATA); }
static uint64_t g_ten(const gbuf *g, unsigned i)
{
    return g_hdr(g, HDR_TENSOR_TABLE) + (uint64_t)i * ING_TEN_SIZE;
}
static uint64_t g_names(const gbuf *g) { return g_hdr(g, HDR_NAMES); }
/* Absolute offset of tensor i's name, its length, and the offset of its data. */
static uint64_t g_tname(const gbuf *g, unsigned i)
{
    return g_names(g) + gld(g, g_ten(g, i) + TEN_NAME_OFF, 4);
}
static uint64_t g_tname_len(const gbuf *g, unsigned i)
{
    uint64_t next = i + 1 < g_hdr(g, HDR_N_TENSORS) ? gld(g, g_ten(g, i + 1) + TEN_NAME_OFF, 4)
                                                   : g_hdr(g, HDR_NAMES_SIZE);
    return next - gld(g, g_ten(g, i) + TEN_NAME_OFF, 4) - 1;
}
static uint64_t g_tdata(const gbuf *g, unsigned i)
{
    return g_data(g) + gld(g, g_ten(g, i) + TEN_OFFSET, 8);
}
/* Absolute offset of shape record k, of its first dimension, of tensor i's record. */
static uint64_t g_shp(const gbuf *g, uint64_t k)
{
    return g_hdr(g, HDR_SHAPES) + k * ING_SHP_SIZE;
}
static uint64_t g_sdims(const gbuf *g, uint64_t k)
{
    return g_hdr(g, HDR_DIMS) + 8 * gld(g, g_shp(g, k) + SHP_DIMS_AT, 4);
}
static uint64_t g_tshp(const gbuf *g, unsigned i)
{
    return g_shp(g, gld(g, g_ten(g, i) + TEN_SHAPE, 4));
}
/* Tensor i's byte size (its record's), and the absolute offset of its param id. */
static uint64_t g_tnbytes(const gbuf *g, unsigned i)
{
    return gld(g, g_tshp(g, i) + SHP_NBYTES, 8);
}
static uint64_t g_tpid(const gbuf *g, unsigned i) { return g_hdr(g, HDR_PARAMS) + 8 * (uint64_t)i; }
/* Offset of the metadata entry with this key. */
static uint64_t g_met(const gbuf *g, const char *key)
{
    uint64_t mt = g_hdr(g, HDR_META_TABLE), n = g_hdr(g, HDR_N_META);
    size_t kl = strlen(key);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t e = mt + i * ING_MET_SIZE;
        if (gld(g, e + MET_KEY_LEN, 4) == kl &&
            memcmp(g->b + g_pool(g) + gld(g, e + MET_KEY_OFF, 8), key, kl) == 0)
            return e;
    }
    gen_die("no such key in the base file");
    return 0;
}
/* Absolute offset of the value of the metadata entry at e (pool offset + pool). */
static uint64_t g_mval(const gbuf *g, uint64_t e) { return g_pool(g) + gld(g, e + MET_VALUE, 8); }

/* Recomputes the header CRC-32C over [0,188) ++ [192, data_off) (data_off clamped to the image). */
static void g_fix_crc(gbuf *g)
{
    uint64_t d = g_data(g);
    if (d > g->n) d = g->n;
    if (d < ING_HDR_SIZE) return;
    uint32_t crc = ingot_crc32c(0, g->b, HDR_CRC);
    crc = ingot_crc32c(crc, g->b + ING_HDR_SIZE, (size_t)(d - ING_HDR_SIZE));
    gst(g, HDR_CRC, 4, crc);
}

/* The sections of an image in file order (docs/FORMAT.md §3): header field of the offset, and
 * size from the counts. */
#define GEN_N_SECS 8
typedef struct {
    uint32_t field;
    uint64_t size;
} gsec;

static void g_sections(const gbuf *g, gsec s[GEN_N_SECS])
{
    uint64_t nt = g_hdr(g, HDR_N_TENSORS);
    s[0] = (gsec){HDR_TENSOR_TABLE, nt * ING_TEN_SIZE};
    s[1] = (gsec){HDR_NAME_INDEX, (nt * 4 + 7) & ~7ull};
    s[2] = (gsec){HDR_SHAPES, g_hdr(g, HDR_N_SHAPES) * ING_SHP_SIZE};
    s[3] = (gsec){HDR_DIMS, g_hdr(g, HDR_N_DIMS) * 8};
    s[4] = (gsec){HDR_PARAMS, g_hdr(g, HDR_N_PARAMS) * 8};
    s[5] = (gsec){HDR_META_TABLE, g_hdr(g, HDR_N_META) * ING_MET_SIZE};
    s[6] = (gsec){HDR_POOL, g_hdr(g, HDR_POOL_SIZE)};
    s[7] = (gsec){HDR_NAMES, g_hdr(g, HDR_NAMES_SIZE)};
}

/* Header field of the section before the one at `field`. */
static uint32_t g_sec_before(uint32_t field)
{
    static const uint32_t order[GEN_N_SECS] = {HDR_TENSOR_TABLE, HDR_NAME_INDEX, HDR_SHAPES,
                                               HDR_DIMS, HDR_PARAMS, HDR_META_TABLE, HDR_POOL,
                                               HDR_NAMES};
    for (int i = 1; i < GEN_N_SECS; i++)
        if (order[i] == field) return order[i - 1];
    gen_die("no section before this one");
    return 0;
}

/* Copies the data section of src to `data` in g and sets the data offset and the sizes. */
static void g_place_data(gbuf *g, const gbuf *src, uint64_t data)
{
    uint64_t dsize = src->n - g_data(src);
    if (data + dsize > GEN_CAP) gen_die("file too large");
    memcpy(g->b + data, src->b + g_data(src), (size_t)dsize);
    gst(g, HDR_DATA, 8, data);
    g->n = (size_t)(data + dsize);
    gst(g, HDR_FILE_SIZE, 8, g->n);
}

/* The first step of rebuilding g section by section: returns a copy of g as it was (one static
 * buffer, reused by the next call), fills sec with its sections, and leaves g holding only the
 * fixed header. */
static const gbuf *g_rebuild_start(gbuf *g, gsec sec[GEN_N_SECS])
{
    static gbuf src;
    src = *g;
    g_sections(&src, sec);
    memset(g->b, 0, sizeof g->b);
    memcpy(g->b, src.b, ING_HDR_SIZE);
    return &src;
}

/* Rebuilds g in a relaxed layout a future minor version may use: header_size 192 + ext, `gap`
 * zero bytes before every section, and the data `extra` alignment units later than needed. */
static void g_relax(gbuf *g, uint16_t minor, uint32_t ext, uint32_t gap, uint32_t extra)
{
    gsec sec[GEN_N_SECS];
    const gbuf *src = g_rebuild_start(g, sec);
    uint64_t align = gld(src, HDR_ALIGNMENT, 4);
    uint64_t pos = ING_HDR_SIZE + ext;
    gst(g, HDR_HEADER_SIZE, 4, pos);
    gst(g, HDR_MINOR, 2, minor);
    for (int i = 0; i < GEN_N_SECS; i++) {
        pos += gap;
        if (pos + sec[i].size > GEN_CAP) gen_die("relaxed file too large");
        memcpy(g->b + pos, src->b + g_hdr(src, sec[i].field), (size_t)sec[i].size);
        gst(g, sec[i].field, 8, pos);
        pos += sec[i].size;
    }
    g_place_data(g, src, gen_round_up(pos, align) + extra * align);
    g_fix_crc(g);
}

/* Rebuilds g in the v1.0 layout with section `field` grown by `delta` zero bytes (delta > 0) or
 * shrunk by -delta bytes (delta < 0) at `at`, relative to the section's start; every later section
 * and the data move. The caller adjusts the count the section's size comes from. */
static void g_resize(gbuf *g, uint32_t field, uint64_t at, int64_t delta)
{
    gsec sec[GEN_N_SECS];
    const gbuf *src = g_rebuild_start(g, sec);
    uint64_t align = gld(src, HDR_ALIGNMENT, 4);
    uint64_t pos = ING_HDR_SIZE;
    for (int i = 0; i < GEN_N_SECS; i++) {
        uint64_t from = g_hdr(src, sec[i].field), size = sec[i].size;
        if (pos + size + (delta > 0 ? (uint64_t)delta : 0) > GEN_CAP)
            gen_die("resized file too large");
        gst(g, sec[i].field, 8, pos);
        if (sec[i].field != field) {
            memcpy(g->b + pos, src->b + from, (size_t)size);
        } else if (delta >= 0) {
            if (at > size) gen_die("resize position outside the section");
            memcpy(g->b + pos, src->b + from, (size_t)at);
            memcpy(g->b + pos + at + (uint64_t)delta, src->b + from + at, (size_t)(size - at));
            size += (uint64_t)delta;
        } else {
            uint64_t cut = (uint64_t)-delta;
            if (at + cut > size) gen_die("resize cut outside the section");
            memcpy(g->b + pos, src->b + from, (size_t)at);
            memcpy(g->b + pos + at, src->b + from + at + cut, (size_t)(size - at - cut));
            size -= cut;
        }
        pos += size;
    }
    g_place_data(g, src, gen_round_up(pos, align));
    gst(g, HDR_DATA_SIZE, 8, g->n - g_data(g));
}

/* Sanity checks of what the rows rely on: the base file's records and where each tensor's is. */
static bool gen_base_ok(const gbuf *g)
{
    static const uint8_t rec_of[GT_N] = {GS_EMBED, GS_Q,   GS_BIAS, GS_UTF8, GS_EMPTY,
                                         GS_I64,   GS_Q,   GS_EMBT, GS_TAIL};
    if (g_hdr(g, HDR_N_TENSORS) != GT_N || g_hdr(g, HDR_N_SHAPES) != GS_N ||
        g_hdr(g, HDR_N_DIMS) != GEN_N_DIMS || g_hdr(g, HDR_N_PARAMS) != GT_N)
        return false;
    for (unsigned i = 0; i < GT_N; i++)
        if (g_tshp(g, i) != g_shp(g, rec_of[i])) return false;
    /* padding before the data, and after the last record's dims nothing but the param ids */
    return g_names(g) + g_hdr(g, HDR_NAMES_SIZE) < g_data(g) &&
           g_sdims(g, GS_N - 1) + 16 == g_hdr(g, HDR_PARAMS);
}

/* ---- the bad rows -------------------------------------------------------------------------- */

/* What the reader must report for a row. */
typedef struct {
    gbuf *g;
    bool off_set;          /* check ingot_error.offset against off */
    uint64_t off;
    const char *where;     /* expected ingot_error.where (NULL: not checked) */
    size_t where_len;
    char where_buf[64];
    bool no_crc;           /* keep the header checksum as patched */
    bool native_differs;   /* ingot_native_open reports native_want at native_off instead */
    ingot_status native_want;
    uint64_t native_off;
} gx;

struct gcase;
typedef void (*gmake)(gx *x, const struct gcase *c);

typedef struct gcase {
    const char *file;
    ingot_status want;
    bool verify; /* open succeeds; ingot_file_verify reports `want` */
    gmake make;
    int idx;            /* tensor index for mk_ten */
    const char *key;    /* metadata key for mk_met */
    uint32_t field;     /* byte offset in the header / entry */
    uint32_t width;     /* 1, 2, 4 or 8 */
    uint64_t value;
    int32_t rep_field;  /* >= 0: the reader reports this field of the header/entry instead */
} gcase;

static void x_where(gx *x, const void *s, size_t n)
{
    if (n >= sizeof x->where_buf) n = sizeof x->where_buf - 1;
    memcpy(x->where_buf, s, n);
    x->where_buf[n] = 0;
    x->where = x->where_buf;
    x->where_len = n;
}
static void x_at(gx *x, uint64_t off, const char *where)
{
    x->off_set = true;
    x->off = off;
    if (where) x_where(x, where, strlen(where));
}
static uint32_t rep(const gcase *c) { return c->rep_field >= 0 ? (uint32_t)c->rep_field : c->field; }

/* Header field := value; reported at the field, where "header". */
static void mk_hdr(gx *x, const gcase *c)
{
    gst(x->g, c->field, c->width, c->value);
    x_at(x, rep(c), "header");
}

/* Tensor entry field := value; reported at that field, where = the tensor's name. */
static void mk_ten(gx *x, const gcase *c)
{
    uint64_t e = g_ten(x->g, (unsigned)c->idx);
    gst(x->g, e + c->field, c->width, c->value);
    x_at(x, e + rep(c), gen_tnames[c->idx]);
}

/* Metadata entry field := value; reported at that field, where = the key. */
static void mk_met(gx *x, const gcase *c)
{
    uint64_t e = g_met(x->g, c->key);
    gst(x->g, e + c->field, c->width, c->value);
    x_at(x, e + rep(c), c->key);
}

/* Tensor name offset / metadata key length or offset: reported at the entry, where = what it
 * is. */
static void mk_ten_name_field(gx *x, const gcase *c)
{
    uint64_t e = g_ten(x->g, (unsigned)c->idx);
    gst(x->g, e + c->field, c->width, c->value);
    x_at(x, e + TEN_NAME_OFF, "tensor name");
}

/* Where the name of tensor idx ends: the next entry's name offset := this one's + value
 * (width 0, mod 2^32) or names_size + value (width 1). Reported at tensor idx's name offset. */
static void mk_name_next(gx *x, const gcase *c)
{
    uint64_t e = g_ten(x->g, (unsigned)c->idx);
    uint64_t v = c->width ? g_hdr(x->g, HDR_NAMES_SIZE) + c->value
                          : gld(x->g, e + TEN_NAME_OFF, 4) + c->value;
    gst(x->g, e + ING_TEN_SIZE + TEN_NAME_OFF, 4, v);
    x_at(x, e + TEN_NAME_OFF, "tensor name");
}

/* The reader's copy of a name for `where`: control bytes shown as '?'. */
static void x_where_name(gx *x, uint64_t at, uint64_t len)
{
    x->off_set = true;
    x->off = at;
    x_where(x, x->g->b + at, (size_t)len);
    for (size_t k = 0; k < x->where_len; k++)
        if ((unsigned char)x->where_buf[k] < 0x20 || x->where_buf[k] == 0x7f) x->where_buf[k] = '?';
}

/* A gap of one byte before the name of tensor idx + 1: the name of idx then takes in its NUL. */
static void mk_name_gap(gx *x, const gcase *c)
{
    uint64_t e = g_ten(x->g, (unsigned)c->idx);
    uint64_t at = g_tname(x->g, (unsigned)c->idx), len = g_tname_len(x->g, (unsigned)c->idx);
    gst(x->g, e + ING_TEN_SIZE + TEN_NAME_OFF, 4, gld(x->g, e + ING_TEN_SIZE + TEN_NAME_OFF, 4) + 1);
    x_where_name(x, at, len + 1);
}

/* The names section one byte shorter: the last name loses its NUL. */
static void mk_names_short(gx *x, const gcase *c)
{
    (void)c;
    gst(x->g, HDR_NAMES_SIZE, 8, g_hdr(x->g, HDR_NAMES_SIZE) - 1);
    x_where_name(x, g_tname(x->g, GT_TAIL), g_tname_len(x->g, GT_TAIL));
}
static void mk_met_key_field(gx *x, const gcase *c)
{
    uint64_t e = g_met(x->g, c->key);
    gst(x->g, e + c->field, c->width, c->value);
    x_at(x, e + MET_KEY_OFF, "metadata key");
}

/* Key offset relative to the pool size: width 8: offset := pool_size + value; width 0: the key
 * becomes the pool's last 3 bytes ("xyz", valid UTF-8 without NUL), leaving no room for the
 * terminating NUL. */
static void mk_name_off_pool(gx *x, const gcase *c)
{
    uint64_t ps = g_hdr(x->g, HDR_POOL_SIZE);
    uint64_t e = g_met(x->g, c->key);
    if (c->width) {
        gst(x->g, e, 8, ps + c->value);
    } else {
        gst(x->g, e, 8, ps - 3);
        gst(x->g, e + MET_KEY_LEN, 4, 3);
    }
    x_at(x, e, "metadata key");
}

/* Overwrites bytes of a tensor name (idx >= 0) or key at position c->field with c->value's low
 * c->width bytes in memory order (first byte = lowest); reported at the name in the pool. */
static void mk_name_bytes(gx *x, const gcase *c)
{
    uint64_t at, len;
    if (c->key) {
        uint64_t e = g_met(x->g, c->key);
        at = g_pool(x->g) + gld(x->g, e + MET_KEY_OFF, 8);
        len = gld(x->g, e + MET_KEY_LEN, 4);
    } else {
        at = g_tname(x->g, (unsigned)c->idx);
        len = g_tname_len(x->g, (unsigned)c->idx);
    }
    gst(x->g, at + c->field, c->width, c->value);
    x_where_name(x, at, len); /* the (now invalid) bytes, as the reader copies them */
}

/* Overwrites bytes of a metadata value in the pool at c->field from the value's start. */
static void mk_mval_bytes(gx *x, const gcase *c)
{
    uint64_t e = g_met(x->g, c->key);
    uint64_t v = g_mval(x->g, e);
    if (c->idx >= 0) { /* string/bytes array element c->idx: patch its bytes instead */
        uint64_t ref = v + (uint64_t)c->idx * ING_STRREF_SIZE;
        v = g_pool(x->g) + gld(x->g, ref, 8);
    }
    gst(x->g, v + c->field, c->width, c->value);
    x_at(x, e + MET_VALUE, c->key);
}

/* String/bytes array element c->idx: ref field c->field (0 = offset, 8 = length) := value; width 0
 * with field 0: offset := pool_size + value; width 0 with field 8: the element becomes the
 * pool's last 3 bytes (no room for its NUL). */
static void mk_sref(gx *x, const gcase *c)
{
    uint64_t e = g_met(x->g, c->key);
    uint64_t ref = g_mval(x->g, e) + (uint64_t)c->idx * ING_STRREF_SIZE;
    uint64_t ps = g_hdr(x->g, HDR_POOL_SIZE);
    if (c->width == 0 && c->field == 0) {
        gst(x->g, ref, 8, ps + c->value);
    } else if (c->width == 0) {
        gst(x->g, ref, 8, ps - 3);
        gst(x->g, ref + 8, 8, 3);
    } else {
        gst(x->g, ref + c->field, 8, c->value);
    }
    x_at(x, e + MET_VALUE, c->key);
}

/* Metadata value offset relative to the pool: width 0: value := pool_size + c->value;
 * width 1: the value becomes the pool's last 3 bytes (a string with no room for its NUL). */
static void mk_mval_pool(gx *x, const gcase *c)
{
    uint64_t e = g_met(x->g, c->key);
    uint64_t ps = g_hdr(x->g, HDR_POOL_SIZE);
    if (c->width == 0) {
        gst(x->g, e + MET_VALUE, 8, ps + c->value);
    } else { /* the pool's last 3 bytes: valid UTF-8, but no room for the NUL */
        gst(x->g, e + MET_VALUE, 8, ps - 3);
        gst(x->g, e + MET_COUNT, 8, 3);
    }
    x_at(x, e + MET_VALUE, c->key);
}

/* Metadata value offset += c->value (misaligned arrays). */
static void mk_mval_shift(gx *x, const gcase *c)
{
    uint64_t e = g_met(x->g, c->key);
    gst(x->g, e + MET_VALUE, 8, gld(x->g, e + MET_VALUE, 8) + c->value);
    x_at(x, e + MET_VALUE, c->key);
}

/* Overwrites the NUL after a tensor name (idx >= 0) or key with 'x'. */
static void mk_name_nul(gx *x, const gcase *c)
{
    uint64_t at, len;
    if (c->key) {
        uint64_t e = g_met(x->g, c->key);
        at = g_pool(x->g) + gld(x->g, e + MET_KEY_OFF, 8);
        len = gld(x->g, e + MET_KEY_LEN, 4);
    } else {
        at = g_tname(x->g, (unsigned)c->idx);
        len = g_tname_len(x->g, (unsigned)c->idx);
    }
    x->g->b[at + len] = 'x';
    x->off_set = true;
    x->off = at;
    x_where(x, x->g->b + at, (size_t)len);
}

/* Overwrites the NUL after a string value (idx < 0) or string-array element idx with 'x'. */
static void mk_mval_nul(gx *x, const gcase *c)
{
    uint64_t e = g_met(x->g, c->key);
    uint64_t v = g_mval(x->g, e), len = gld(x->g, e + MET_COUNT, 8);
    if (c->idx >= 0) {
        uint64_t ref = v + (uint64_t)c->idx * ING_STRREF_SIZE;
        v = g_pool(x->g) + gld(x->g, ref, 8);
        len = gld(x->g, ref + 8, 8);
    }
    x->g->b[v + len] = 'x';
    x_at(x, e + MET_VALUE, c->key);
}

/* ---- rows on the packed base (v1.1, docs/FORMAT.md §7.1) ---- */

/* Replaces the row's file by the base written with packed arrays. */
static void use_packed(gx *x)
{
    static gbuf pb;
    static bool have;
    if (!have) {
        if (!gen_base_form(&pb, true)) gen_die("the packed base file");
        have = true;
    }
    *x->g = pb;
}

static void mk_pk_met(gx *x, const gcase *c)
{
    use_packed(x);
    mk_met(x, c);
}

static void mk_pk_mval_shift(gx *x, const gcase *c)
{
    use_packed(x);
    mk_mval_shift(x, c);
}

/* Packed array c->key: field 0: offset c->idx := value; field 1: offset c->idx := offset
 * c->idx - 1 - value (value 0: an empty element); field 2: offset c->idx := the room after the
 * column + value (past the pool); field 3: blob byte value := c->idx. Reported at that offset or
 * byte, where = the key. */
static void mk_pk_off(gx *x, const gcase *c)
{
    use_packed(x);
    uint64_t e = g_met(x->g, c->key), col = g_mval(x->g, e);
    uint64_t n = gld(x->g, e + MET_COUNT, 8), at = col + 4 * (uint64_t)c->idx;
    uint64_t room = g_pool(x->g) + g_hdr(x->g, HDR_POOL_SIZE) - (col + 4 * (n + 1));
    switch (c->field) {
    case 0: gst(x->g, at, 4, c->value); break;
    case 1: gst(x->g, at, 4, gld(x->g, at - 4, 4) - c->value); break;
    case 2: gst(x->g, at, 4, room + c->value); break;
    default:
        at = col + 4 * (n + 1) + c->value;
        x->g->b[at] = (uint8_t)c->idx;
        break;
    }
    x_at(x, at, c->key);
}

/* On the packed base: the header's flags_required := value (field 0; reported at the first
 * packed entry's flags, "g.blobs[]"), or minor := 0 (field 1; reported at flags_required), or
 * entry c->key's flags := value (field 2). */
static void mk_pk_flags(gx *x, const gcase *c)
{
    use_packed(x);
    if (c->field == 0) {
        gst(x->g, HDR_FLAGS_REQUIRED, 4, c->value);
        x_at(x, g_met(x->g, "g.blobs[]") + MET_FLAGS, "g.blobs[]");
    } else if (c->field == 1) {
        gst(x->g, HDR_MINOR, 2, 0);
        x_at(x, HDR_FLAGS_REQUIRED, "header");
    } else {
        uint64_t e = g_met(x->g, c->key);
        gst(x->g, e + MET_FLAGS, 1, c->value);
        x_at(x, e + MET_FLAGS, c->key);
    }
}

/* Header field += value (mod 2^64). */
static void mk_hdr_add(gx *x, const gcase *c)
{
    gst(x->g, c->field, c->width, gld(x->g, c->field, c->width) + c->value);
    x_at(x, rep(c), "header");
}

/* Tensor entry field += value (mod 2^64). */
static void mk_ten_add(gx *x, const gcase *c)
{
    uint64_t e = g_ten(x->g, (unsigned)c->idx);
    gst(x->g, e + c->field, c->width, gld(x->g, e + c->field, c->width) + c->value);
    x_at(x, e + rep(c), gen_tnames[c->idx]);
}

/* ---- custom rows ---- */

static void mk_empty(gx *x, const gcase *c)
{
    (void)c;
    x->g->n = 0;
    x_at(x, 0, NULL);
}

/* The file cut at c->value bytes (0: at the data offset; width 1: c->value bytes into the shape
 * records). */
static void mk_cut(gx *x, const gcase *c)
{
    x->g->n = c->width ? (size_t)(g_hdr(x->g, HDR_SHAPES) + c->value)
              : c->value ? (size_t)c->value
                         : (size_t)g_data(x->g);
    x->no_crc = true;
    if (x->g->n < ING_HDR_SIZE) {
        x_at(x, x->g->n, "header");
    } else {
        x_at(x, HDR_FILE_SIZE, "header"); /* the declared file size is checked first */
    }
}

static void mk_cut_last(gx *x, const gcase *c)
{
    (void)c;
    x->g->n--;
    x_at(x, HDR_FILE_SIZE, "header");
}

/* Appends bytes without declaring them (polyglot tail). */
static void mk_append(gx *x, const gcase *c)
{
    memset(x->g->b + x->g->n, 'A', (size_t)c->value);
    x->g->n += (size_t)c->value;
    x_at(x, HDR_FILE_SIZE, "header");
}

/* Appends zero bytes after the last tensor and declares them in file_size and data_size. */
static void mk_trailing(gx *x, const gcase *c)
{
    uint64_t end = x->g->n - g_data(x->g);
    memset(x->g->b + x->g->n, 0, (size_t)c->value);
    x->g->n += (size_t)c->value;
    gst(x->g, HDR_FILE_SIZE, 8, x->g->n);
    gst(x->g, HDR_DATA_SIZE, 8, x->g->n - g_data(x->g));
    x_at(x, g_data(x->g) + end, "data");
}

/* Bytes a header count stands for at the least: the count bound of docs/FORMAT.md §4 is
 * (file_size - header_size) / this. */
static uint64_t count_unit(uint32_t field)
{
    return field == HDR_N_TENSORS ? ING_TEN_MIN_BYTES
           : field == HDR_N_META  ? ING_MET_SIZE
           : field == HDR_N_SHAPES ? ING_SHP_SIZE
                                   : 8;
}

/* Header count := as many as the file's bytes allow + c->value; reported at rep(c). */
static void mk_count_room(gx *x, const gcase *c)
{
    uint64_t room = x->g->n - ING_HDR_SIZE;
    gst(x->g, c->field, 8, room / count_unit(c->field) + c->value);
    x_at(x, rep(c), "header");
}

/* n_tensors and n_params both one larger: the counts agree, the sections do not. */
static void mk_ntp_plus1(gx *x, const gcase *c)
{
    (void)c;
    gst(x->g, HDR_N_TENSORS, 8, g_hdr(x->g, HDR_N_TENSORS) + 1);
    gst(x->g, HDR_N_PARAMS, 8, g_hdr(x->g, HDR_N_PARAMS) + 1);
    x_at(x, HDR_NAME_INDEX, "header");
}

/* Alignment 128 in a file laid out for 64: data offset or a tensor offset is misaligned. */
static void mk_align128(gx *x, const gcase *c)
{
    (void)c;
    gst(x->g, HDR_ALIGNMENT, 4, 128);
    if (g_data(x->g) % 128) x_at(x, HDR_DATA, "header");
    else x_at(x, g_ten(x->g, GT_Q) + TEN_OFFSET, gen_tnames[GT_Q]);
}

static void mk_pad_before_data(gx *x, const gcase *c)
{
    uint64_t end = g_names(x->g) + g_hdr(x->g, HDR_NAMES_SIZE);
    if (end >= g_data(x->g)) gen_die("base file has no padding before the data");
    x->g->b[c->value ? g_data(x->g) - 1 : end] = 1;
    x_at(x, end, "header");
}

/* ---- shape records ---- */

/* The shape record of tensor c->idx: field := value; reported at that field (or c->rep_field),
 * where "shape record". */
static void mk_shp(gx *x, const gcase *c)
{
    uint64_t s = g_tshp(x->g, (unsigned)c->idx);
    gst(x->g, s + c->field, c->width, c->value);
    x_at(x, s + rep(c), "shape record");
}

/* The shape record of tensor c->idx: field += value (mod 2^(8 width)). */
static void mk_shp_add(gx *x, const gcase *c)
{
    uint64_t s = g_tshp(x->g, (unsigned)c->idx);
    gst(x->g, s + c->field, c->width, gld(x->g, s + c->field, c->width) + c->value);
    x_at(x, s + rep(c), "shape record");
}

/* Shapes for mk_sdims: same rank as the record they go to, so the dims stay in place. */
static const struct {
    ingot_dtype dt; /* INVALID: keep the record's */
    uint64_t d[2];
} gen_shapes[] = {
    {INGOT_DTYPE_INVALID, {(uint64_t)INT64_MAX, 2}}, /* 0: nelem 2^64-2 fits u64, not int64 */
    {INGOT_DTYPE_U8, {(uint64_t)INT64_MAX, 2}},      /* 1: ... whatever the element size */
    {INGOT_DTYPE_INVALID, {(uint64_t)INT64_MAX, 3}}, /* 2: nelem overflows */
    {INGOT_DTYPE_INVALID, {1ull << 32, 1ull << 32}}, /* 3: 2^64 overflows */
    {INGOT_DTYPE_INVALID, {1ull << 63, 0}},          /* 4: one dim > 2^63-1 */
    {INGOT_DTYPE_INVALID, {UINT64_MAX, 0}},          /* 5: dim -1 */
    {INGOT_DTYPE_INVALID, {0, 1ull << 63}},          /* 6: a zero does not excuse a dim > 2^63-1 */
    {INGOT_DTYPE_INVALID, {1ull << 61, 0}},          /* 7: I64: nelem fits, bytes are 2^64 */
    {INGOT_DTYPE_INVALID, {1, 33}},                  /* 8: Q4_0 inner dim not a multiple of 32 */
    {INGOT_DTYPE_INVALID, {1, 16}},                  /* 9: Q4_0 inner dim below one block */
    {INGOT_DTYPE_Q4_0, {0, 0}},                      /* 10: Q4_0 scalar: 1 element, not a block */
    {INGOT_DTYPE_INVALID, {500, 0}},                 /* 11: U8 tail grown past the data section */
    {INGOT_DTYPE_F4, {3, 0}},                        /* 12: F4: 3 elements are not whole bytes */
    {INGOT_DTYPE_INVALID, {0, 16}},                  /* 13: Q4_0 [0, 16]: empty, inner dim bad */
    {INGOT_DTYPE_INVALID, {2, 3}},                   /* 14: F32 [3,2] -> [2,3]: previous record */
    {INGOT_DTYPE_INVALID, {2, 2}},                   /* 15: F32 [3,2] -> [2,2]: below [2,3] */
    {INGOT_DTYPE_F32, {0, 0}},                       /* 16: F16 scalar -> F32 scalar: (F32, 0) */
};

enum { SD_RULE, SD_ORDER, SD_DATA };

/* The record of tensor c->idx gets shape c->value of gen_shapes. c->width SD_RULE: the shape or
 * size rule fires, at the record's first dimension (the stored size is left as it was: the rule
 * comes first); SD_ORDER: the stored size is made right and the record's order fires, at the
 * record; SD_DATA: the stored size is made right and the tensor's data no longer fits, at its
 * data offset. */
static void mk_sdims(gx *x, const gcase *c)
{
    unsigned i = (unsigned)c->idx;
    uint64_t s = g_tshp(x->g, i);
    uint64_t d = g_hdr(x->g, HDR_DIMS) + 8 * gld(x->g, s + SHP_DIMS_AT, 4);
    uint32_t rank = x->g->b[s + SHP_RANK];
    for (uint32_t k = 0; k < rank; k++) gst(x->g, d + 8 * k, 8, gen_shapes[c->value].d[k]);
    if (gen_shapes[c->value].dt != INGOT_DTYPE_INVALID)
        gst(x->g, s + SHP_DTYPE, 2, (uint64_t)gen_shapes[c->value].dt);
    if (c->width == SD_RULE) {
        x_at(x, rank ? d : s + SHP_DTYPE, "shape record"); /* a scalar: the record itself */
        return;
    }
    uint64_t nb;
    if (ingot_dtype_nbytes((ingot_dtype)gld(x->g, s + SHP_DTYPE, 2), rank, gen_shapes[c->value].d,
                           NULL, &nb) != INGOT_OK)
        gen_die("mk_sdims: not a valid shape");
    gst(x->g, s + SHP_NBYTES, 8, nb);
    if (c->width == SD_ORDER) x_at(x, s, "shape record");
    else x_at(x, g_ten(x->g, i) + TEN_OFFSET, gen_tnames[i]);
}

static void g_swap(gbuf *g, uint64_t a, uint64_t b, uint64_t n)
{
    for (uint64_t k = 0; k < n; k++) {
        uint8_t t = g->b[a + k];
        g->b[a + k] = g->b[b + k];
        g->b[b + k] = t;
    }
}

/* Records k = c->value and k+1 (same rank) trade places with their dims, each keeping its dims_at,
 * and the tensors follow them: record k+1 then sorts before record k. */
static void mk_shp_swap(gx *x, const gcase *c)
{
    gbuf *g = x->g;
    uint64_t k = c->value, a = g_shp(g, k), b = g_shp(g, k + 1);
    uint32_t rank = g->b[a + SHP_RANK];
    if (g->b[b + SHP_RANK] != rank) gen_die("mk_shp_swap: ranks differ");
    g_swap(g, a, b, SHP_DIMS_AT);
    g_swap(g, a + SHP_NBYTES, b + SHP_NBYTES, 8);
    g_swap(g, g_sdims(g, k), g_sdims(g, k + 1), 8 * (uint64_t)rank);
    for (unsigned i = 0; i < GT_N; i++) {
        uint64_t e = g_ten(g, i) + TEN_SHAPE, s = gld(g, e, 4);
        if (s == k || s == k + 1) gst(g, e, 4, s == k ? k + 1 : k);
    }
    x_at(x, b, "shape record");
}

/* One zero dimension more at the end of the dims section than the records use. */
static void mk_dims_extra(gx *x, const gcase *c)
{
    (void)c;
    uint64_t nd = g_hdr(x->g, HDR_N_DIMS);
    g_resize(x->g, HDR_DIMS, 8 * nd, 8);
    gst(x->g, HDR_N_DIMS, 8, nd + 1);
    x_at(x, HDR_N_DIMS, "header");
}

/* The last dimension removed: the last record's dims run past n_dims. */
static void mk_dims_short(gx *x, const gcase *c)
{
    (void)c;
    uint64_t nd = g_hdr(x->g, HDR_N_DIMS);
    g_resize(x->g, HDR_DIMS, 8 * nd - 8, -8);
    gst(x->g, HDR_N_DIMS, 8, nd - 1);
    x_at(x, g_shp(x->g, GS_N - 1) + SHP_DIMS_AT, "shape record");
}

/* The last record (Q4_0 [1, 32]) and its dims removed: the records are fine, the first tensor
 * that used it names a record past n_shapes. */
static void mk_shapes_short(gx *x, const gcase *c)
{
    (void)c;
    uint64_t ns = g_hdr(x->g, HDR_N_SHAPES), nd = g_hdr(x->g, HDR_N_DIMS);
    uint64_t rank = x->g->b[g_shp(x->g, ns - 1) + SHP_RANK];
    g_resize(x->g, HDR_SHAPES, ING_SHP_SIZE * (ns - 1), -(int64_t)ING_SHP_SIZE);
    gst(x->g, HDR_N_SHAPES, 8, ns - 1);
    g_resize(x->g, HDR_DIMS, 8 * (nd - rank), -(int64_t)(8 * rank));
    gst(x->g, HDR_N_DIMS, 8, nd - rank);
    x_at(x, g_ten(x->g, GT_Q) + TEN_SHAPE, gen_tnames[GT_Q]);
}

/* ---- tensor shape index, flags and param ids ---- */

/* Tensor c->idx names shape record n_shapes + c->value. */
static void mk_ten_shape_n(gx *x, const gcase *c)
{
    uint64_t e = g_ten(x->g, (unsigned)c->idx);
    gst(x->g, e + TEN_SHAPE, 4, g_hdr(x->g, HDR_N_SHAPES) + c->value);
    x_at(x, e + TEN_SHAPE, gen_tnames[c->idx]);
}

/* The last tensor takes the (smaller) record of tensor c->value: its data then ends before the
 * data section does. */
static void mk_ten_shape_of(gx *x, const gcase *c)
{
    unsigned i = (unsigned)c->idx;
    uint64_t rec = gld(x->g, g_ten(x->g, (unsigned)c->value) + TEN_SHAPE, 4);
    gst(x->g, g_ten(x->g, i) + TEN_SHAPE, 4, rec);
    x_at(x, g_tdata(x->g, i) + g_tnbytes(x->g, i), "data");
}

/* The param ids section removed (n_params 0) and every flag cleared: still a valid file. */
static void g_drop_params(gbuf *g)
{
    uint64_t np = g_hdr(g, HDR_N_PARAMS);
    g_resize(g, HDR_PARAMS, 0, -(int64_t)(8 * np));
    gst(g, HDR_N_PARAMS, 8, 0);
    for (unsigned i = 0; i < GT_N; i++) gst(g, g_ten(g, i) + TEN_FLAGS, 4, 0);
}
/* ... then the param id flag set on tensor c->idx. */
static void mk_no_params(gx *x, const gcase *c)
{
    g_drop_params(x->g);
    uint64_t e = g_ten(x->g, (unsigned)c->idx);
    gst(x->g, e + TEN_FLAGS, 4, TEN_FLAG_PARAM_ID);
    x_at(x, e + TEN_FLAGS, gen_tnames[c->idx]);
}

/* Param id of tensor c->idx := value; reported at it, where = the tensor's name. */
static void mk_pid(gx *x, const gcase *c)
{
    gst(x->g, g_tpid(x->g, (unsigned)c->idx), 8, c->value);
    x_at(x, g_tpid(x->g, (unsigned)c->idx), gen_tnames[c->idx]);
}

/* The param id flag of tensor c->idx cleared, its (non-zero) param id left. */
static void mk_unflag(gx *x, const gcase *c)
{
    gst(x->g, g_ten(x->g, (unsigned)c->idx) + TEN_FLAGS, 4, 0);
    x_at(x, g_tpid(x->g, (unsigned)c->idx), gen_tnames[c->idx]);
}

/* Every flag cleared and every param id 0: a param ids section no tensor uses. */
static void mk_no_flags(gx *x, const gcase *c)
{
    (void)c;
    for (unsigned i = 0; i < GT_N; i++) {
        gst(x->g, g_ten(x->g, i) + TEN_FLAGS, 4, 0);
        gst(x->g, g_tpid(x->g, i), 8, 0);
    }
    x_at(x, HDR_N_PARAMS, "header");
}

/* Name index entry k := v (c->field = k, c->value = v). */
static void mk_index(gx *x, const gcase *c)
{
    uint64_t ni = g_hdr(x->g, HDR_NAME_INDEX);
    gst(x->g, ni + 4 * c->field, 4, c->value);
    x_at(x, ni + 4 * (c->rep_field >= 0 ? (uint32_t)c->rep_field : c->field), "name index");
}

static void mk_index_swap(gx *x, const gcase *c)
{
    (void)c;
    uint64_t ni = g_hdr(x->g, HDR_NAME_INDEX);
    uint64_t a = gld(x->g, ni, 4), b = gld(x->g, ni + 4, 4);
    gst(x->g, ni, 4, b);
    gst(x->g, ni + 4, 4, a);
    x_at(x, ni + 4, "name index");
}

/* The index names one tensor twice (a duplicate name as the index sees it). */
static void mk_index_repeat(gx *x, const gcase *c)
{
    (void)c;
    uint64_t ni = g_hdr(x->g, HDR_NAME_INDEX);
    uint64_t first = gld(x->g, ni, 4);
    gst(x->g, ni + 4, 4, first);
    x_at(x, ni + 4, gen_tnames[first]);
}

/* Two tensors with equal names: "tail" renamed "bias" in the pool, index re-sorted. */
static void mk_dup_tensor(gx *x, const gcase *c)
{
    (void)c;
    memcpy(x->g->b + g_tname(x->g, GT_TAIL), "bias", 4);
    static const uint32_t order[GT_N] = {GT_BIAS,  GT_TAIL,  GT_Q,    GT_Q1, GT_EMPTY,
                                         GT_UTF8, GT_EMBED, GT_EMBT, GT_I64};
    uint64_t ni = g_hdr(x->g, HDR_NAME_INDEX);
    for (unsigned k = 0; k < GT_N; k++) gst(x->g, ni + 4 * k, 4, order[k]);
    x_at(x, ni + 4, "bias");
}

/* Metadata entry for key c->key takes the key of the entry before it (duplicate). */
static void mk_dup_key(gx *x, const gcase *c)
{
    uint64_t e = g_met(x->g, c->key);
    memcpy(x->g->b + e, x->g->b + e - ING_MET_SIZE, 12);
    char prev[64];
    uint64_t kl = gld(x->g, e + MET_KEY_LEN, 4);
    memcpy(prev, x->g->b + g_pool(x->g) + gld(x->g, e + MET_KEY_OFF, 8), (size_t)kl);
    prev[kl] = 0;
    x_at(x, e + MET_KEY_OFF, prev);
}

/* Swaps the metadata entry of c->key with the one after it. */
static void mk_swap_meta(gx *x, const gcase *c)
{
    uint64_t e = g_met(x->g, c->key);
    uint8_t tmp[ING_MET_SIZE];
    memcpy(tmp, x->g->b + e, ING_MET_SIZE);
    memcpy(x->g->b + e, x->g->b + e + ING_MET_SIZE, ING_MET_SIZE);
    memcpy(x->g->b + e + ING_MET_SIZE, tmp, ING_MET_SIZE);
    x_at(x, e + ING_MET_SIZE + MET_KEY_OFF, c->key);
}

/* Future minor with a relaxed layout (header_size 200, 8 bytes before every section), then one
 * header field changed. c->idx: REL_SET: := value; REL_PAST_END: the section 8 bytes before the
 * end of the file (for the data offset: past the end); REL_OVERLAP: the section at the start of
 * the one before it; REL_ADD: += value. */
enum { REL_SET = -1, REL_PAST_END, REL_OVERLAP, REL_ADD };

static void mk_relaxed(gx *x, const gcase *c)
{
    g_relax(x->g, 2, 8, 8, 0);
    unsigned w = c->width ? c->width : 8;
    uint64_t v = c->value;
    if (c->idx == REL_PAST_END && c->field == HDR_DATA) {
        v = gen_round_up(x->g->n + 1, gld(x->g, HDR_ALIGNMENT, 4));
        gst(x->g, c->field, 8, v);
        x_at(x, HDR_DATA_SIZE, "header"); /* the data section cannot end at the file end */
        return;
    }
    if (c->idx == REL_PAST_END) v = (x->g->n - 8) & ~7ull;
    if (c->idx == REL_OVERLAP) v = g_hdr(x->g, g_sec_before(c->field));
    if (c->idx == REL_ADD) v = gld(x->g, c->field, w) + c->value;
    gst(x->g, c->field, w, v);
    x_at(x, rep(c), "header");
}

/* Future minor: data offset (aligned) below the end of the pool. */
static void mk_relaxed_data_low(gx *x, const gcase *c)
{
    (void)c;
    g_relax(x->g, 2, 8, 8, 0);
    uint64_t end = g_names(x->g) + g_hdr(x->g, HDR_NAMES_SIZE);
    gst(x->g, HDR_DATA, 8, (end - 1) / 64 * 64);
    x_at(x, HDR_DATA, "header");
}

/* Data offset far beyond the file. */
static void mk_data_off_huge(gx *x, const gcase *c)
{
    (void)c;
    gst(x->g, HDR_DATA, 8, 1ull << 40);
    x_at(x, HDR_DATA, "header"); /* not where v1.0 puts the data */
}

/* Checksums. */
static void mk_hdr_crc(gx *x, const gcase *c)
{
    (void)c;
    x->g->b[HDR_CRC] ^= 0x01;
    x->no_crc = true;
    x_at(x, HDR_CRC, "header");
}
static void mk_hdr_content(gx *x, const gcase *c)
{
    (void)c;
    uint64_t v = g_mval(x->g, g_met(x->g, "e.string"));
    x->g->b[v + 4] = 'p'; /* "hello" -> "hellp": still valid, only the checksum can tell */
    x->no_crc = true;
    x_at(x, HDR_CRC, "header");
}
static void mk_ten_crc_nofix(gx *x, const gcase *c)
{
    (void)c;
    x->g->b[g_ten(x->g, GT_Q) + TEN_CRC] ^= 0x80;
    x->no_crc = true;
    x_at(x, HDR_CRC, "header");
}
/* A param id can take any value: only the checksum sees a change. */
static void mk_pid_nofix(gx *x, const gcase *c)
{
    (void)c;
    x->g->b[g_tpid(x->g, GT_EMBED)] ^= 0x01;
    x->no_crc = true;
    x_at(x, HDR_CRC, "header");
}
/* verify rows */
static void mk_data_flip(gx *x, const gcase *c)
{
    uint64_t at = g_tdata(x->g, (unsigned)c->idx) + c->value;
    x->g->b[at] ^= 0x01;
    x->no_crc = true; /* data is not covered by the header checksum anyway */
    x_at(x, g_tdata(x->g, (unsigned)c->idx), gen_tnames[c->idx]);
}
static void mk_ten_crc_fixed(gx *x, const gcase *c)
{
    uint64_t e = g_ten(x->g, (unsigned)c->idx);
    gst(x->g, e + TEN_CRC, 4, gld(x->g, e + TEN_CRC, 4) ^ 0x00010000u);
    x_at(x, g_tdata(x->g, (unsigned)c->idx), gen_tnames[c->idx]);
}
/* A nonzero byte in the padding after tensor idx: c->value 0 = first pad byte, 1 = last. */
static void mk_data_pad(gx *x, const gcase *c)
{
    unsigned i = (unsigned)c->idx;
    uint64_t start = g_tdata(x->g, i) + g_tnbytes(x->g, i);
    uint64_t at = c->value ? g_tdata(x->g, i + 1) - 1 : start;
    x->g->b[at] = 0x5a;
    x->no_crc = true;
    x_at(x, at, gen_tnames[i]);
}

/* Row 18: a file of a few hundred bytes declaring something huge. c->value: 0 = 2^40 tensors,
 * 1 = 2^40 metadata entries (both in the 192-byte empty file), 2 = a 1 GiB string, 3 = a 1 GiB
 * u8 array (one-entry files of 256 bytes); 4 = the empty file with 8 bytes of names (alignment
 * 128, so that the names fit in the padding before the data). */
static void mk_tiny(gx *x, const gcase *c)
{
    ingot_writer_opts o = {.alignment = c->value == 4 ? 128 : 64, .ingot_v1_0 = true};
    ingot_writer *w;
    if (ingot_writer_new(&o, &w, NULL) != INGOT_OK) gen_die("writer");
    static const uint8_t one[1] = {1};
    if (c->value == 2 && ingot_writer_set_string(w, "k", "v") != INGOT_OK) gen_die("tiny");
    if (c->value == 3 && ingot_writer_set_array(w, "a", INGOT_META_U8, one, 1) != INGOT_OK)
        gen_die("tiny");
    if (!gen_finish(w, x->g)) gen_die("tiny");
    if (c->value == 4) { /* names without tensors */
        gst(x->g, HDR_NAMES_SIZE, 8, 8);
        x_at(x, HDR_NAMES_SIZE, "header");
        return;
    }
    if (c->value < 2) {
        uint32_t field = c->value == 0 ? HDR_N_TENSORS : HDR_N_META;
        gst(x->g, field, 8, 1ull << 40);
        x_at(x, field, "header");
        return;
    }
    uint64_t e = g_hdr(x->g, HDR_META_TABLE);
    gst(x->g, e + MET_COUNT, 8, 1ull << 30);
    x_at(x, e + (c->value == 2 ? MET_VALUE : MET_COUNT), c->value == 2 ? "k" : "a");
}

#define NO_REP (-1)
#define HDR(file, st, f, w, v) {file, INGOT_##st, false, mk_hdr, -1, NULL, f, w, v, NO_REP}
#define HDR_R(file, st, f, w, v, r) {file, INGOT_##st, false, mk_hdr, -1, NULL, f, w, v, r}
#define HDRADD(file, st, f, v) {file, INGOT_##st, false, mk_hdr_add, -1, NULL, f, 8, v, NO_REP}
#define HDRADD_R(file, st, f, v, r) {file, INGOT_##st, false, mk_hdr_add, -1, NULL, f, 8, v, r}
#define TEN(file, st, i, f, w, v) {file, INGOT_##st, false, mk_ten, i, NULL, f, w, v, NO_REP}
#define TENADD(file, st, i, f, v) {file, INGOT_##st, false, mk_ten_add, i, NULL, f, 8, v, NO_REP}
#define SHP(file, st, i, f, w, v) {file, INGOT_##st, false, mk_shp, i, NULL, f, w, v, NO_REP}
#define SHPADD(file, st, i, f, w, v) {file, INGOT_##st, false, mk_shp_add, i, NULL, f, w, v, NO_REP}
#define SDIMS(file, st, i, n, m) {file, INGOT_##st, false, mk_sdims, i, NULL, 0, m, n, NO_REP}
#define MET(file, st, k, f, w, v) {file, INGOT_##st, false, mk_met, -1, k, f, w, v, NO_REP}
#define MET_R(file, st, k, f, w, v, r) {file, INGOT_##st, false, mk_met, -1, k, f, w, v, r}
#define FN(file, st, fn, i, k, f, w, v) {file, INGOT_##st, false, fn, i, k, f, w, v, NO_REP}
#define FN_R(file, st, fn, i, k, f, w, v, r) {file, INGOT_##st, false, fn, i, k, f, w, v, r}
#define REL(file, st, mode, f, w, v)                                                              \
    {file, INGOT_##st, false, mk_relaxed, mode, NULL, f, w, v, NO_REP}
#define VERIFY(file, st, fn, i, v) {file, INGOT_##st, true, fn, i, NULL, 0, 0, v, NO_REP}

/* The rows. File names say what is wrong; RELIABILITY.md §1 rows in the comments. */
static const gcase gen_cases[] = {
    /* row 1, 16: truncation */
    FN("trunc_empty.ingot", TRUNCATED, mk_empty, -1, NULL, 0, 0, 0),
    FN("trunc_in_fixed_header.ingot", TRUNCATED, mk_cut, -1, NULL, 0, 0, 100),
    FN("trunc_before_header_crc.ingot", TRUNCATED, mk_cut, -1, NULL, 0, 0, HDR_CRC),
    FN("trunc_in_tensor_table.ingot", TRUNCATED, mk_cut, -1, NULL, 0, 0, 300),
    FN("trunc_in_shape_records.ingot", TRUNCATED, mk_cut, -1, NULL, 0, 1, 20),
    FN("trunc_no_data.ingot", TRUNCATED, mk_cut, -1, NULL, 0, 0, 0),
    FN("trunc_data_one_byte_short.ingot", TRUNCATED, mk_cut_last, -1, NULL, 0, 0, 0),
    /* row 2: magic and version */
    HDR_R("hdr_magic_byte1.ingot", BAD_MAGIC, 1, 1, 'J', HDR_MAGIC),
    HDR_R("hdr_magic_crlf_mangled.ingot", BAD_MAGIC, 6, 2, 0x0a0a, HDR_MAGIC),
    HDR("hdr_major_0.ingot", BAD_VERSION, HDR_MAJOR, 2, 0),
    HDR("hdr_major_2.ingot", BAD_VERSION, HDR_MAJOR, 2, 2),
    HDR("hdr_major_byteswapped.ingot", BAD_VERSION, HDR_MAJOR, 2, 0x0100),
    HDR("hdr_major_ffff.ingot", BAD_VERSION, HDR_MAJOR, 2, 0xffff),
    /* row 3: header size */
    HDR("hdr_size_0.ingot", BAD_HEADER_SIZE, HDR_HEADER_SIZE, 4, 0),
    HDR("hdr_size_120.ingot", BAD_HEADER_SIZE, HDR_HEADER_SIZE, 4, 120),
    HDR("hdr_size_129.ingot", BAD_HEADER_SIZE, HDR_HEADER_SIZE, 4, 129),
    HDR("hdr_size_160_before_v1_0.ingot", BAD_HEADER_SIZE, HDR_HEADER_SIZE, 4, 160),
    HDR("hdr_size_193.ingot", BAD_HEADER_SIZE, HDR_HEADER_SIZE, 4, 193),
    HDR("hdr_size_200_minor0.ingot", BAD_HEADER_SIZE, HDR_HEADER_SIZE, 4, 200),
    HDR("hdr_size_u32max.ingot", BAD_HEADER_SIZE, HDR_HEADER_SIZE, 4, UINT32_MAX),
    REL("minor2_hdr_size_196.ingot", BAD_HEADER_SIZE, REL_SET, HDR_HEADER_SIZE, 4, 196),
    REL("minor2_hdr_size_184.ingot", BAD_HEADER_SIZE, REL_SET, HDR_HEADER_SIZE, 4, 184),
    REL("minor2_hdr_size_past_end.ingot", BAD_HEADER_SIZE, REL_SET, HDR_HEADER_SIZE, 4,
        0xfffffff8u),
    /* feature flags and reserved fields */
    HDR("hdr_flags_required_1.ingot", BAD_FLAGS, HDR_FLAGS_REQUIRED, 4, 1),
    HDR("hdr_flags_required_high.ingot", BAD_FLAGS, HDR_FLAGS_REQUIRED, 4, 0x80000000u),
    HDR("hdr_reserved0.ingot", BAD_FLAGS, HDR_RESERVED0, 4, 1),
    HDR("hdr_reserved1.ingot", BAD_FLAGS, HDR_RESERVED1, 8, 1ull << 63),
    HDR("hdr_reserved2.ingot", BAD_FLAGS, HDR_RESERVED2, 4, 0x100),
    /* row 14: alignment */
    HDR("hdr_align_0.ingot", BAD_ALIGN, HDR_ALIGNMENT, 4, 0),
    HDR("hdr_align_13.ingot", BAD_ALIGN, HDR_ALIGNMENT, 4, 13),
    HDR("hdr_align_12.ingot", BAD_ALIGN, HDR_ALIGNMENT, 4, 12),
    HDR("hdr_align_32.ingot", BAD_ALIGN, HDR_ALIGNMENT, 4, 32),
    HDR("hdr_align_2p31.ingot", BAD_ALIGN, HDR_ALIGNMENT, 4, 1u << 31),
    HDR("hdr_align_131072.ingot", BAD_ALIGN, HDR_ALIGNMENT, 4, 131072),
    HDR("hdr_align_u32max.ingot", BAD_ALIGN, HDR_ALIGNMENT, 4, UINT32_MAX),
    FN("hdr_align_128_misaligned.ingot", BAD_ALIGN, mk_align128, -1, NULL, 0, 0, 0),
    /* declared file size; row 13 polyglot tail */
    HDRADD("hdr_file_size_plus1.ingot", TRUNCATED, HDR_FILE_SIZE, 1),
    HDRADD("hdr_file_size_minus1.ingot", BAD_LAYOUT, HDR_FILE_SIZE, UINT64_MAX),
    HDR("hdr_file_size_u64max.ingot", TRUNCATED, HDR_FILE_SIZE, 8, UINT64_MAX),
    HDR("hdr_file_size_0.ingot", BAD_LAYOUT, HDR_FILE_SIZE, 8, 0),
    FN("trailing_undeclared_bytes.ingot", BAD_LAYOUT, mk_append, -1, NULL, 0, 0, 100),
    /* rows 4, 18: counts, bounded by the file size before anything is multiplied */
    HDR("hdr_n_tensors_2p63.ingot", BAD_COUNT, HDR_N_TENSORS, 8, 1ull << 63),
    HDR("hdr_n_tensors_u64max.ingot", BAD_COUNT, HDR_N_TENSORS, 8, UINT64_MAX),
    HDR("hdr_n_tensors_2p40.ingot", BAD_COUNT, HDR_N_TENSORS, 8, 1ull << 40),
    HDR("hdr_n_tensors_2p32.ingot", BAD_COUNT, HDR_N_TENSORS, 8, 1ull << 32),
    HDR("hdr_n_tensors_1e6.ingot", BAD_COUNT, HDR_N_TENSORS, 8, 1000000),
    FN("hdr_n_tensors_room_plus1.ingot", BAD_COUNT, mk_count_room, -1, NULL, HDR_N_TENSORS, 8, 1),
    HDR("hdr_n_meta_2p63.ingot", BAD_COUNT, HDR_N_META, 8, 1ull << 63),
    HDR("hdr_n_meta_u64max.ingot", BAD_COUNT, HDR_N_META, 8, UINT64_MAX),
    HDR("hdr_n_meta_2p40.ingot", BAD_COUNT, HDR_N_META, 8, 1ull << 40),
    FN("hdr_n_meta_room_plus1.ingot", BAD_COUNT, mk_count_room, -1, NULL, HDR_N_META, 8, 1),
    HDR("hdr_n_shapes_2p32.ingot", BAD_COUNT, HDR_N_SHAPES, 8, 1ull << 32),
    HDR("hdr_n_shapes_u64max.ingot", BAD_COUNT, HDR_N_SHAPES, 8, UINT64_MAX),
    FN("hdr_n_shapes_room_plus1.ingot", BAD_COUNT, mk_count_room, -1, NULL, HDR_N_SHAPES, 8, 1),
    FN_R("hdr_n_shapes_at_room.ingot", TRUNCATED, mk_count_room, -1, NULL, HDR_N_SHAPES, 8, 0,
         HDR_SHAPES),
    HDR("hdr_n_dims_2p32.ingot", BAD_COUNT, HDR_N_DIMS, 8, 1ull << 32),
    HDR("hdr_n_dims_u64max.ingot", BAD_COUNT, HDR_N_DIMS, 8, UINT64_MAX),
    FN("hdr_n_dims_room_plus1.ingot", BAD_COUNT, mk_count_room, -1, NULL, HDR_N_DIMS, 8, 1),
    FN_R("hdr_n_dims_at_room.ingot", TRUNCATED, mk_count_room, -1, NULL, HDR_N_DIMS, 8, 0,
         HDR_DIMS),
    HDR("hdr_n_params_1.ingot", BAD_COUNT, HDR_N_PARAMS, 8, 1),
    HDRADD("hdr_n_params_plus1.ingot", BAD_COUNT, HDR_N_PARAMS, 1),
    HDRADD("hdr_n_params_minus1.ingot", BAD_COUNT, HDR_N_PARAMS, UINT64_MAX),
    HDR("hdr_n_params_u64max.ingot", BAD_COUNT, HDR_N_PARAMS, 8, UINT64_MAX),
    FN("tiny_2p40_tensors.ingot", BAD_COUNT, mk_tiny, -1, NULL, 0, 0, 0),
    FN("tiny_2p40_meta.ingot", BAD_COUNT, mk_tiny, -1, NULL, 0, 0, 1),
    FN("tiny_1gib_string.ingot", BAD_STRING, mk_tiny, -1, NULL, 0, 0, 2),
    FN("tiny_1gib_array.ingot", BAD_ARRAY, mk_tiny, -1, NULL, 0, 0, 3),
    /* counts that pass their bounds but do not match the sections */
    HDRADD_R("hdr_n_tensors_plus1.ingot", BAD_COUNT, HDR_N_TENSORS, 1, HDR_N_PARAMS),
    FN("hdr_n_tensors_and_params_plus1.ingot", BAD_LAYOUT, mk_ntp_plus1, -1, NULL, 0, 0, 0),
    HDRADD_R("hdr_n_meta_plus1.ingot", BAD_LAYOUT, HDR_N_META, 1, HDR_POOL),
    HDRADD_R("hdr_n_shapes_plus1.ingot", BAD_LAYOUT, HDR_N_SHAPES, 1, HDR_DIMS),
    HDRADD_R("hdr_n_dims_plus1.ingot", BAD_LAYOUT, HDR_N_DIMS, 1, HDR_PARAMS),
    HDR_R("hdr_n_params_0_section_kept.ingot", BAD_LAYOUT, HDR_N_PARAMS, 8, 0, HDR_META_TABLE),
    /* section offsets */
    HDRADD("sec_tensor_table_plus8.ingot", BAD_LAYOUT, HDR_TENSOR_TABLE, 8),
    HDRADD("sec_tensor_table_unaligned.ingot", BAD_LAYOUT, HDR_TENSOR_TABLE, 1),
    HDRADD("sec_name_index_minus8.ingot", BAD_LAYOUT, HDR_NAME_INDEX, (uint64_t)-8),
    HDRADD("sec_shapes_plus8.ingot", BAD_LAYOUT, HDR_SHAPES, 8),
    HDRADD("sec_shapes_minus16.ingot", BAD_LAYOUT, HDR_SHAPES, (uint64_t)-16),
    HDRADD("sec_dims_plus8.ingot", BAD_LAYOUT, HDR_DIMS, 8),
    HDRADD("sec_dims_minus8.ingot", BAD_LAYOUT, HDR_DIMS, (uint64_t)-8),
    HDRADD("sec_params_plus8.ingot", BAD_LAYOUT, HDR_PARAMS, 8),
    HDRADD("sec_params_minus8.ingot", BAD_LAYOUT, HDR_PARAMS, (uint64_t)-8),
    HDRADD("sec_params_unaligned.ingot", BAD_LAYOUT, HDR_PARAMS, 1),
    HDR("sec_params_2p40.ingot", BAD_LAYOUT, HDR_PARAMS, 8, 1ull << 40),
    HDRADD("sec_meta_table_plus4.ingot", BAD_LAYOUT, HDR_META_TABLE, 4),
    HDRADD("sec_pool_plus8.ingot", BAD_LAYOUT, HDR_POOL, 8),
    HDR_R("sec_pool_size_u64max.ingot", TRUNCATED, HDR_POOL_SIZE, 8, UINT64_MAX, HDR_POOL),
    HDR_R("sec_pool_size_huge.ingot", TRUNCATED, HDR_POOL_SIZE, 8, 1ull << 40, HDR_POOL),
    HDRADD_R("sec_pool_size_plus64.ingot", BAD_LAYOUT, HDR_POOL_SIZE, 64, HDR_NAMES),
    HDRADD("sec_names_plus1.ingot", BAD_LAYOUT, HDR_NAMES, 1),
    HDR_R("sec_names_size_huge.ingot", TRUNCATED, HDR_NAMES_SIZE, 8, 1ull << 40, HDR_NAMES),
    REL("minor2_tensor_table_past_end.ingot", TRUNCATED, REL_PAST_END, HDR_TENSOR_TABLE, 0, 0),
    REL("minor2_sections_overlap.ingot", BAD_LAYOUT, REL_OVERLAP, HDR_NAME_INDEX, 0, 0),
    REL("minor2_shapes_past_end.ingot", TRUNCATED, REL_PAST_END, HDR_SHAPES, 0, 0),
    REL("minor2_dims_past_end.ingot", TRUNCATED, REL_PAST_END, HDR_DIMS, 0, 0),
    REL("minor2_dims_over_shapes.ingot", BAD_LAYOUT, REL_OVERLAP, HDR_DIMS, 0, 0),
    REL("minor2_params_past_end.ingot", TRUNCATED, REL_PAST_END, HDR_PARAMS, 0, 0),
    REL("minor2_params_unaligned.ingot", BAD_LAYOUT, REL_ADD, HDR_PARAMS, 0, 4),
    /* data offset and size */
    HDRADD("data_off_plus8_misaligned.ingot", BAD_ALIGN, HDR_DATA, 8),
    HDRADD("data_off_plus64.ingot", BAD_LAYOUT, HDR_DATA, 64),
    HDRADD("data_off_minus64.ingot", BAD_LAYOUT, HDR_DATA, (uint64_t)-64),
    HDR("data_off_0.ingot", BAD_LAYOUT, HDR_DATA, 8, 0),
    FN("data_off_2p40.ingot", BAD_LAYOUT, mk_data_off_huge, -1, NULL, 0, 0, 0),
    HDRADD("data_size_plus1.ingot", BAD_LAYOUT, HDR_DATA_SIZE, 1),
    HDRADD("data_size_minus1.ingot", BAD_LAYOUT, HDR_DATA_SIZE, UINT64_MAX),
    REL("minor2_data_past_end.ingot", TRUNCATED, REL_PAST_END, HDR_DATA, 0, 0),
    FN("minor2_data_inside_pool.ingot", BAD_LAYOUT, mk_relaxed_data_low, -1, NULL, 0, 0, 0),
    FN("pad_before_data_first.ingot", BAD_LAYOUT, mk_pad_before_data, -1, NULL, 0, 0, 0),
    FN("pad_before_data_last.ingot", BAD_LAYOUT, mk_pad_before_data, -1, NULL, 0, 0, 1),
    /* row 7: shape record dtypes (codes 1..22 and 258..298 with gaps) */
    SHP("dtype_0.ingot", BAD_TYPE, GT_EMBED, SHP_DTYPE, 2, 0),
    SHP("dtype_ffff.ingot", BAD_TYPE, GT_Q, SHP_DTYPE, 2, 0xffff),
    SHP("dtype_7fff.ingot", BAD_TYPE, GT_BIAS, SHP_DTYPE, 2, 0x7fff),
    SHP("dtype_24_gap.ingot", BAD_TYPE, GT_UTF8, SHP_DTYPE, 2, 24),
    SHP("dtype_257_gap.ingot", BAD_TYPE, GT_I64, SHP_DTYPE, 2, 257),
    SHP("dtype_280_gap.ingot", BAD_TYPE, GT_TAIL, SHP_DTYPE, 2, 280),
    SHP("dtype_299_after_last.ingot", BAD_TYPE, GT_EMBT, SHP_DTYPE, 2, 299),
    /* row 10: rank; the reserved byte */
    SHP("rank_65.ingot", BAD_NDIMS, GT_EMBED, SHP_RANK, 1, 65), /* INGOT_MAX_RANK + 1 */
    SHP("rank_255.ingot", BAD_NDIMS, GT_Q, SHP_RANK, 1, 255),
    SHP("shape_reserved_1.ingot", BAD_FLAGS, GT_BIAS, SHP_RESERVED, 1, 1),
    SHP("shape_reserved_80.ingot", BAD_FLAGS, GT_TAIL, SHP_RESERVED, 1, 0x80),
    /* rows 11, 12: dims_at and n_dims */
    SHP("dims_at_first_not_0.ingot", BAD_LAYOUT, GT_EMBED, SHP_DIMS_AT, 4, 1),
    SHPADD("dims_at_plus1.ingot", BAD_LAYOUT, GT_I64, SHP_DIMS_AT, 4, 1),
    SHPADD("dims_at_minus1.ingot", BAD_LAYOUT, GT_EMBT, SHP_DIMS_AT, 4, UINT32_MAX),
    SHPADD("dims_at_scalar_plus1.ingot", BAD_LAYOUT, GT_BIAS, SHP_DIMS_AT, 4, 1),
    SHP("dims_at_u32max.ingot", BAD_LAYOUT, GT_Q, SHP_DIMS_AT, 4, UINT32_MAX),
    FN_R("dims_past_n_dims.ingot", BAD_LAYOUT, mk_shp_add, GT_Q, NULL, SHP_RANK, 1, 1,
         SHP_DIMS_AT),
    FN("dims_one_short.ingot", BAD_LAYOUT, mk_dims_short, -1, NULL, 0, 0, 0),
    FN("dims_one_unused.ingot", BAD_LAYOUT, mk_dims_extra, -1, NULL, 0, 0, 0),
    /* rows 12, 15: shape and size rules, at the record's first dimension */
    SDIMS("shape_i64max_x2_f32.ingot", BAD_SHAPE, GT_EMBED, 0, SD_RULE),
    SDIMS("shape_i64max_x2_u8.ingot", BAD_SHAPE, GT_EMPTY, 1, SD_RULE),
    SDIMS("shape_i64max_x3.ingot", BAD_SHAPE, GT_EMBED, 2, SD_RULE),
    SDIMS("shape_2p32_x_2p32.ingot", BAD_SHAPE, GT_EMBT, 3, SD_RULE),
    SDIMS("shape_dim_2p63.ingot", BAD_SHAPE, GT_TAIL, 4, SD_RULE),
    SDIMS("shape_dim_minus1.ingot", BAD_SHAPE, GT_TAIL, 5, SD_RULE),
    SDIMS("shape_zero_then_2p63.ingot", BAD_SHAPE, GT_EMPTY, 6, SD_RULE),
    SDIMS("size_i64_bytes_overflow.ingot", BAD_SIZE, GT_I64, 7, SD_RULE),
    SDIMS("size_q4_0_inner_33.ingot", BAD_SIZE, GT_Q, 8, SD_RULE),
    SDIMS("size_q4_0_inner_16.ingot", BAD_SIZE, GT_Q1, 9, SD_RULE),
    SDIMS("size_q4_0_scalar.ingot", BAD_SIZE, GT_BIAS, 10, SD_RULE),
    SDIMS("size_q4_0_empty_inner_16.ingot", BAD_SIZE, GT_Q, 13, SD_RULE),
    SDIMS("size_f4_odd_count.ingot", BAD_SIZE, GT_UTF8, 12, SD_RULE),
    /* row 15: the stored size */
    SHPADD("nbytes_plus1.ingot", BAD_SIZE, GT_EMBED, SHP_NBYTES, 8, 1),
    SHPADD("nbytes_minus1.ingot", BAD_SIZE, GT_Q, SHP_NBYTES, 8, UINT64_MAX),
    SHP("nbytes_0.ingot", BAD_SIZE, GT_I64, SHP_NBYTES, 8, 0),
    SHP("nbytes_1_for_empty.ingot", BAD_SIZE, GT_EMPTY, SHP_NBYTES, 8, 1),
    SHP("nbytes_2p63.ingot", BAD_SIZE, GT_TAIL, SHP_NBYTES, 8, 1ull << 63),
    SHP("nbytes_u64max.ingot", BAD_SIZE, GT_BIAS, SHP_NBYTES, 8, UINT64_MAX),
    /* record order: dtype, rank, dims */
    FN("shapes_swapped_dims_order.ingot", BAD_LAYOUT, mk_shp_swap, -1, NULL, 0, 0, GS_EMBED),
    FN("shapes_swapped_dtype_order.ingot", BAD_LAYOUT, mk_shp_swap, -1, NULL, 0, 0, GS_UTF8),
    SDIMS("shapes_rank_order.ingot", BAD_LAYOUT, GT_BIAS, 16, SD_ORDER),
    SDIMS("shapes_last_dim_order.ingot", BAD_LAYOUT, GT_EMBT, 15, SD_ORDER),
    SDIMS("shapes_equal_neighbour.ingot", DUPLICATE, GT_EMBT, 14, SD_ORDER),
    FN("shapes_last_record_missing.ingot", BAD_LAYOUT, mk_shapes_short, -1, NULL, 0, 0, 0),
    /* rows 5, 17: tensor names (a name ends where the next one starts; the last one at the end
     * of the names section) */
    FN("name_len_0.ingot", BAD_NAME, mk_name_next, GT_EMBED, NULL, 0, 0, 1),
    FN("name_len_65536.ingot", BAD_NAME, mk_name_next, GT_EMBED, NULL, 0, 0, 65537),
    FN("name_next_before.ingot", BAD_NAME, mk_name_next, GT_Q, NULL, 0, 0, 0xffffffffu),
    FN("name_end_past_names.ingot", BAD_STRING, mk_name_next, GT_I64, NULL, 0, 1, 1),
    /* a middle name ending far past the names section and the file: nothing may read there */
    FN("name_end_far_past_names.ingot", BAD_STRING, mk_name_next, GT_Q, NULL, 0, 1, 60000),
    FN("name_first_not_at_0.ingot", BAD_LAYOUT, mk_ten_name_field, GT_EMBED, NULL, TEN_NAME_OFF, 4,
       1),
    FN("name_gap.ingot", BAD_STRING, mk_name_gap, GT_BIAS, NULL, 0, 0, 0),
    FN("names_last_without_nul.ingot", BAD_STRING, mk_names_short, -1, NULL, 0, 0, 0),
    FN("names_without_tensors.ingot", BAD_LAYOUT, mk_tiny, -1, NULL, 0, 0, 4),
    FN("name_not_nul_terminated.ingot", BAD_STRING, mk_name_nul, GT_EMBED, NULL, 0, 0, 0),
    FN("name_utf8_overlong2.ingot", BAD_STRING, mk_name_bytes, GT_EMBED, NULL, 0, 2, 0xafc0),
    FN("name_utf8_overlong3.ingot", BAD_STRING, mk_name_bytes, GT_EMBED, NULL, 0, 3, 0xaf80e0),
    FN("name_utf8_surrogate.ingot", BAD_STRING, mk_name_bytes, GT_EMBED, NULL, 1, 3, 0x80a0ed),
    FN("name_utf8_above_10ffff.ingot", BAD_STRING, mk_name_bytes, GT_EMBED, NULL, 0, 4,
       0x808090f4u),
    FN("name_utf8_lone_continuation.ingot", BAD_STRING, mk_name_bytes, GT_EMBED, NULL, 5, 1, 0x80),
    FN("name_utf8_bad_lead_f8.ingot", BAD_STRING, mk_name_bytes, GT_EMBED, NULL, 0, 1, 0xf8),
    FN("name_utf8_cut_sequence.ingot", BAD_STRING, mk_name_bytes, GT_EMBED, NULL, 10, 1, 0xe2),
    FN("name_embedded_nul.ingot", BAD_STRING, mk_name_bytes, GT_EMBED, NULL, 5, 1, 0),
    /* tensor entries: shape record index, flags */
    FN("tensor_shape_n_shapes.ingot", BAD_LAYOUT, mk_ten_shape_n, GT_Q1, NULL, 0, 0, 0),
    TEN("tensor_shape_u32max.ingot", BAD_LAYOUT, GT_EMBED, TEN_SHAPE, 4, UINT32_MAX),
    FN("tensor_shape_smaller_record.ingot", BAD_LAYOUT, mk_ten_shape_of, GT_TAIL, NULL, 0, 0,
       GT_EMPTY),
    TEN("tensor_flags_unknown_02.ingot", BAD_FLAGS, GT_BIAS, TEN_FLAGS, 4, 0x02),
    TEN("tensor_flags_unknown_81.ingot", BAD_FLAGS, GT_EMBED, TEN_FLAGS, 4, 0x81),
    TEN("tensor_flags_unknown_100.ingot", BAD_FLAGS, GT_UTF8, TEN_FLAGS, 4, 0x100),
    TEN("tensor_flags_unknown_high.ingot", BAD_FLAGS, GT_TAIL, TEN_FLAGS, 4, 0x80000000u),
    TEN("tensor_flags_param_and_02.ingot", BAD_FLAGS, GT_I64, TEN_FLAGS, 4, 0x03),
    FN("tensor_param_flag_without_params.ingot", BAD_FLAGS, mk_no_params, GT_I64, NULL, 0, 0, 0),
    /* row 13: tensor data layout */
    TENADD("layout_offset_misaligned.ingot", BAD_ALIGN, GT_Q, TEN_OFFSET, 1),
    TEN("layout_offset_u64max.ingot", BAD_ALIGN, GT_TAIL, TEN_OFFSET, 8, UINT64_MAX),
    TEN("layout_offset_wraps.ingot", BAD_LAYOUT, GT_TAIL, TEN_OFFSET, 8, (uint64_t)-64),
    TENADD("layout_gap.ingot", BAD_LAYOUT, GT_Q, TEN_OFFSET, 64),
    TEN("layout_first_not_at_0.ingot", BAD_LAYOUT, GT_EMBED, TEN_OFFSET, 8, 64),
    TENADD("layout_overlap.ingot", BAD_LAYOUT, GT_Q, TEN_OFFSET, (uint64_t)-64),
    TENADD("layout_gap_after_empty.ingot", BAD_LAYOUT, GT_I64, TEN_OFFSET, 64),
    SDIMS("layout_past_data_end.ingot", BAD_LAYOUT, GT_TAIL, 11, SD_DATA),
    FN("layout_trailing_data.ingot", BAD_LAYOUT, mk_trailing, -1, NULL, 0, 0, 64),
    /* param ids */
    FN("param_id_flag_cleared.ingot", BAD_LAYOUT, mk_unflag, GT_EMBED, NULL, 0, 0, 0),
    FN("param_id_unflagged_1.ingot", BAD_LAYOUT, mk_pid, GT_BIAS, NULL, 0, 0, 1),
    FN("param_id_unflagged_last.ingot", BAD_LAYOUT, mk_pid, GT_TAIL, NULL, 0, 0, UINT64_MAX),
    FN("param_ids_none_flagged.ingot", BAD_LAYOUT, mk_no_flags, -1, NULL, 0, 0, 0),
    /* row 9 and the name index */
    FN("index_out_of_range.ingot", BAD_LAYOUT, mk_index, -1, NULL, 0, 0, GT_N),
    FN("index_u32max.ingot", BAD_LAYOUT, mk_index, -1, NULL, 3, 0, UINT32_MAX),
    FN("index_unsorted.ingot", BAD_LAYOUT, mk_index_swap, -1, NULL, 0, 0, 0),
    FN("index_repeats_entry.ingot", DUPLICATE, mk_index_repeat, -1, NULL, 0, 0, 0),
    FN("index_padding_nonzero.ingot", BAD_LAYOUT, mk_index, -1, NULL, GT_N, 0, 1),
    FN("dup_tensor_name.ingot", DUPLICATE, mk_dup_tensor, -1, NULL, 0, 0, 0),
    /* rows 5, 9, 17: metadata keys */
    FN("key_len_0.ingot", BAD_NAME, mk_met_key_field, -1, "a.u32", MET_KEY_LEN, 4, 0),
    FN("key_len_65536.ingot", BAD_NAME, mk_met_key_field, -1, "a.u32", MET_KEY_LEN, 4, 65536),
    FN("key_off_past_pool.ingot", BAD_STRING, mk_name_off_pool, -1, "a.u32", 0, 8, 1),
    FN("key_ends_at_pool_end.ingot", BAD_STRING, mk_name_off_pool, -1, "z.tail", 0, 0, 0),
    FN("key_not_nul_terminated.ingot", BAD_STRING, mk_name_nul, -1, "a.u32", 0, 0, 0),
    FN("key_utf8_overlong.ingot", BAD_STRING, mk_name_bytes, -1, "a.u32", 0, 2, 0x81c1),
    FN("key_utf8_surrogate.ingot", BAD_STRING, mk_name_bytes, -1, "c.f64", 1, 3, 0xbfbfed),
    FN("key_embedded_nul.ingot", BAD_STRING, mk_name_bytes, -1, "c.f64", 1, 1, 0),
    FN("key_duplicate.ingot", DUPLICATE, mk_dup_key, -1, "a.u32", 0, 0, 0),
    FN("key_unsorted.ingot", BAD_LAYOUT, mk_swap_meta, -1, "a.u16", 0, 0, 0),
    /* row 7: metadata types; flags; scalar encoding */
    MET("meta_type_0.ingot", BAD_TYPE, "a.u32", MET_TYPE, 1, 0),
    MET("meta_type_14.ingot", BAD_TYPE, "a.u32", MET_TYPE, 1, 14),
    MET("meta_type_255.ingot", BAD_TYPE, "a.u32", MET_TYPE, 1, 255),
    MET("meta_flags_02.ingot", BAD_FLAGS, "a.u32", MET_FLAGS, 1, 0x02),
    MET("meta_flags_81.ingot", BAD_FLAGS, "f.u16[]", MET_FLAGS, 1, 0x81),
    MET("meta_reserved.ingot", BAD_FLAGS, "a.u32", MET_RESERVED, 2, 0x100),
    MET("meta_scalar_count_0.ingot", BAD_COUNT, "a.u32", MET_COUNT, 8, 0),
    MET("meta_scalar_count_2.ingot", BAD_COUNT, "c.f64", MET_COUNT, 8, 2),
    MET("meta_u8_high_bytes.ingot", BAD_METADATA, "a.u8", MET_VALUE, 8, 0x1c8),
    MET("meta_u32_high_bytes.ingot", BAD_METADATA, "a.u32", MET_VALUE, 8, 1ull << 32),
    MET("meta_i8_sign_extended.ingot", BAD_METADATA, "b.i8", MET_VALUE, 8, UINT64_MAX),
    MET("meta_bool_2.ingot", BAD_METADATA, "d.bool", MET_VALUE, 8, 2),
    MET("meta_bool_ff.ingot", BAD_METADATA, "d.bool", MET_VALUE, 8, 0xff),
    /* rows 5, 18: string and bytes values */
    FN("meta_string_off_past_pool.ingot", BAD_STRING, mk_mval_pool, -1, "e.string", 0, 0, 1),
    MET_R("meta_string_len_u64max.ingot", BAD_STRING, "e.string", MET_COUNT, 8, UINT64_MAX,
          MET_VALUE),
    MET_R("meta_string_len_1gib.ingot", BAD_STRING, "e.string", MET_COUNT, 8, 1ull << 30,
          MET_VALUE),
    FN("meta_string_to_pool_end.ingot", BAD_STRING, mk_mval_pool, -1, "e.string", 0, 1, 0),
    FN("meta_string_not_nul_terminated.ingot", BAD_STRING, mk_mval_nul, -1, "e.string", 0, 0, 0),
    FN("meta_string_utf8_overlong.ingot", BAD_STRING, mk_mval_bytes, -1, "e.string", 0, 2, 0x80c0),
    FN("meta_string_utf8_surrogate.ingot", BAD_STRING, mk_mval_bytes, -1, "e.string", 1, 3,
       0x80a0ed),
    FN("meta_string_utf8_cut.ingot", BAD_STRING, mk_mval_bytes, -1, "e.string", 11, 1, 0xc3),
    FN("meta_bytes_off_past_pool.ingot", BAD_STRING, mk_mval_pool, -1, "e.bytes", 0, 0, 0),
    MET_R("meta_bytes_len_1gib.ingot", BAD_STRING, "e.bytes", MET_COUNT, 8, 1ull << 30, MET_VALUE),
    /* rows 6, 18: numeric arrays */
    MET("array_count_x_size_wraps.ingot", BAD_ARRAY, "f.f64[]", MET_COUNT, 8, 1ull << 61),
    MET("array_count_u64max.ingot", BAD_ARRAY, "f.u16[]", MET_COUNT, 8, UINT64_MAX),
    MET("array_count_past_pool.ingot", BAD_ARRAY, "f.u16[]", MET_COUNT, 8, 100000),
    MET("array_1gib.ingot", BAD_ARRAY, "f.f64[]", MET_COUNT, 8, 1ull << 27),
    FN("array_u16_misaligned.ingot", BAD_ALIGN, mk_mval_shift, -1, "f.u16[]", 0, 0, 1),
    FN("array_f64_misaligned.ingot", BAD_ALIGN, mk_mval_shift, -1, "f.f64[]", 0, 0, 4),
    FN("array_bool_2.ingot", BAD_METADATA, mk_mval_bytes, -1, "f.bool[]", 1, 1, 2),
    FN("array_bool_ff.ingot", BAD_METADATA, mk_mval_bytes, -1, "f.bool[]", 3, 1, 0xff),
    /* rows 5, 6: string and bytes arrays */
    MET("strarr_count_x16_wraps.ingot", BAD_ARRAY, "g.strs[]", MET_COUNT, 8, 1ull << 60),
    MET("strarr_count_past_pool.ingot", BAD_ARRAY, "g.strs[]", MET_COUNT, 8, 1000),
    FN("strarr_misaligned.ingot", BAD_ALIGN, mk_mval_shift, -1, "g.strs[]", 0, 0, 4),
    FN("strarr_elem_off_past_pool.ingot", BAD_STRING, mk_sref, 0, "g.strs[]", 0, 0, 0),
    FN("strarr_elem_len_u64max.ingot", BAD_STRING, mk_sref, 1, "g.strs[]", 8, 8, UINT64_MAX),
    FN("strarr_elem_to_pool_end.ingot", BAD_STRING, mk_sref, 2, "g.strs[]", 8, 0, 0),
    FN("strarr_elem_not_nul_terminated.ingot", BAD_STRING, mk_mval_nul, 0, "g.strs[]", 0, 0, 0),
    FN("strarr_elem_utf8_bad.ingot", BAD_STRING, mk_mval_bytes, 2, "g.strs[]", 1, 1, 0x41),
    FN("bytesarr_elem_off_past_pool.ingot", BAD_STRING, mk_sref, 0, "g.blobs[]", 0, 0, 1),
    FN("bytesarr_elem_len_1gib.ingot", BAD_STRING, mk_sref, 1, "g.blobs[]", 8, 8, 1ull << 30),
    /* rows 5, 6, 14: packed string and bytes arrays (v1.1; "g.strs[]" is ab, "" and a 2-byte
     * character: offsets 0, 3, 4, 7; "g.blobs[]" is ff 00 and nothing: 0, 2, 2) */
    FN("pk_strarr_misaligned.ingot", BAD_ALIGN, mk_pk_mval_shift, -1, "g.strs[]", 0, 0, 2),
    {"pk_strarr_count_past_pool.ingot", INGOT_BAD_ARRAY, false, mk_pk_met, -1, "g.strs[]",
     MET_COUNT, 8, 1000, NO_REP},
    {"pk_strarr_count_u64max.ingot", INGOT_BAD_ARRAY, false, mk_pk_met, -1, "g.strs[]",
     MET_COUNT, 8, UINT64_MAX, NO_REP},
    FN("pk_strarr_first_offset_1.ingot", BAD_ARRAY, mk_pk_off, 0, "g.strs[]", 0, 0, 1),
    FN("pk_strarr_offset_decreasing.ingot", BAD_ARRAY, mk_pk_off, 2, "g.strs[]", 1, 0, 1),
    FN("pk_strarr_last_past_pool.ingot", BAD_ARRAY, mk_pk_off, 3, "g.strs[]", 2, 0, 1),
    FN("pk_strarr_elem_no_nul_byte.ingot", BAD_STRING, mk_pk_off, 2, "g.strs[]", 1, 0, 0),
    FN("pk_strarr_elem_not_nul_terminated.ingot", BAD_STRING, mk_pk_off, 'x', "g.strs[]", 3, 0,
       2),
    FN("pk_strarr_elem_utf8_bad.ingot", BAD_STRING, mk_pk_off, 0xff, "g.strs[]", 3, 0, 4),
    FN("pk_bytesarr_offset_decreasing.ingot", BAD_ARRAY, mk_pk_off, 2, "g.blobs[]", 1, 0, 2),
    FN("pk_bytesarr_last_past_pool.ingot", BAD_ARRAY, mk_pk_off, 2, "g.blobs[]", 2, 0, 1),
    FN("pk_flag_without_required_bit.ingot", BAD_FLAGS, mk_pk_flags, -1, NULL, 0, 0, 0),
    FN("pk_required_bit_in_minor0.ingot", BAD_FLAGS, mk_pk_flags, -1, NULL, 1, 0, 0),
    FN("pk_flag_on_u16_array.ingot", BAD_FLAGS, mk_pk_flags, -1, "f.u16[]", 2, 0,
       MET_FLAG_ARRAY | MET_FLAG_PACKED),
    FN("pk_flag_on_string_scalar.ingot", BAD_FLAGS, mk_pk_flags, -1, "e.string", 2, 0,
       MET_FLAG_PACKED),
    /* row 21: checksums */
    FN("crc_header_field_flipped.ingot", BAD_CHECKSUM, mk_hdr_crc, -1, NULL, 0, 0, 0),
    FN("crc_header_content_changed.ingot", BAD_CHECKSUM, mk_hdr_content, -1, NULL, 0, 0, 0),
    FN("crc_tensor_field_unfixed.ingot", BAD_CHECKSUM, mk_ten_crc_nofix, -1, NULL, 0, 0, 0),
    FN("crc_param_id_unfixed.ingot", BAD_CHECKSUM, mk_pid_nofix, -1, NULL, 0, 0, 0),
    VERIFY("verify_data_first_byte.ingot", BAD_CHECKSUM, mk_data_flip, GT_Q, 0),
    VERIFY("verify_data_last_byte.ingot", BAD_CHECKSUM, mk_data_flip, GT_TAIL, 4),
    VERIFY("verify_data_shared_shape.ingot", BAD_CHECKSUM, mk_data_flip, GT_Q1, 17),
    VERIFY("verify_tensor_crc_field.ingot", BAD_CHECKSUM, mk_ten_crc_fixed, GT_EMBED, 0),
    VERIFY("verify_empty_tensor_crc.ingot", BAD_CHECKSUM, mk_ten_crc_fixed, GT_EMPTY, 0),
    VERIFY("verify_pad_after_first.ingot", BAD_LAYOUT, mk_data_pad, GT_EMBED, 0),
    VERIFY("verify_pad_utf8_name.ingot", BAD_LAYOUT, mk_data_pad, GT_UTF8, 0),
    VERIFY("verify_pad_before_last.ingot", BAD_LAYOUT, mk_data_pad, GT_EMBT, 1),
};

#define GEN_N_CASES (sizeof gen_cases / sizeof gen_cases[0])

/* Builds row c into g and its expectations into x. */
static bool gen_case(const gcase *c, gbuf *g, gx *x)
{
    static gbuf base;
    static bool have_base;
    if (!have_base) {
        if (!gen_base(&base)) return false;
        if (!gen_base_ok(&base)) gen_die("the base file is not what the rows expect");
        have_base = true;
    }
    *g = base;
    memset(x, 0, sizeof *x);
    x->g = g;
    c->make(x, c);
    if (!x->no_crc) g_fix_crc(g);
    return true;
}

/* ---- the good seeds -------------------------------------------------------------------------- */

static bool gen_good_empty(gbuf *g)
{
    ingot_writer_opts o = {.alignment = 64, .ingot_v1_0 = true};
    ingot_writer *w;
    if (ingot_writer_new(&o, &w, NULL) != INGOT_OK) return false;
    return gen_finish(w, g);
}

/* A future minor version (1.2) with every relaxation a reader must accept: longer header, gaps
 * between sections, data one alignment unit late, nonzero reserved fields, optional flags. */
static bool gen_good_minor2(gbuf *g)
{
    if (!gen_base(g)) return false;
    g_relax(g, 2, 8, 8, 1);
    gst(g, HDR_RESERVED0, 4, 7);
    gst(g, HDR_RESERVED1, 8, 0x1122334455667788ull);
    gst(g, HDR_RESERVED2, 4, 9);
    gst(g, HDR_FLAGS_OPTIONAL, 4, 0xffffffffu);
    g->b[ING_HDR_SIZE] = 0xee; /* unknown header extension bytes */
    g_fix_crc(g);
    return true;
}

/* Shapes at the edges: rank 8, zero-sized with huge other dims, a 1-byte name, 2 KiB of metadata
 * names; alignment 128. */
static bool gen_good_edges(gbuf *g)
{
    ingot_writer_opts o = {.alignment = 128, .ingot_v1_0 = true};
    ingot_writer *w;
    if (ingot_writer_new(&o, &w, NULL) != INGOT_OK) return false;
    static const uint64_t r8[8] = {1, 1, 1, 1, 1, 1, 1, 2};
    static const uint64_t zero_huge[3] = {0, (uint64_t)INT64_MAX, 1ull << 62};
    static const uint64_t q[1] = {256};
    static uint8_t d[256];
    gen_fill(d, sizeof d, 9);
    ingot_error e;
    bool ok = ingot_writer_add_tensor(w, "r8", INGOT_DTYPE_F32, 8, r8, NULL, d, &e) == INGOT_OK &&
              ingot_writer_add_tensor(w, "x", INGOT_DTYPE_BF16, 3, zero_huge, NULL, d, &e) ==
                  INGOT_OK &&
              ingot_writer_add_tensor(w, "q6k", INGOT_DTYPE_Q6_K, 1, q, NULL, d, &e) == INGOT_OK &&
              ingot_writer_set_string(w, "\xf0\x9f\x98\x80", "") == INGOT_OK &&
              ingot_writer_set_stringn(w, "nul.inside", "a\0b", 3) == INGOT_OK &&
              ingot_writer_set_bytes(w, "bytes.not.utf8", "\xff\xfe", 2) == INGOT_OK &&
              ingot_writer_set_array(w, "empty.array", INGOT_META_I32, NULL, 0) == INGOT_OK;
    if (!ok) {
        ingot_writer_free(w);
        return false;
    }
    return gen_finish(w, g);
}

typedef struct {
    const char *file;
    bool (*make)(gbuf *g);
} ggood;

static const ggood gen_goods[] = {
    {"base.ingot", gen_base},
    {"empty.ingot", gen_good_empty},
    {"minor2_relaxed.ingot", gen_good_minor2},
    {"edges.ingot", gen_good_edges},
};

#define GEN_N_GOODS (sizeof gen_goods / sizeof gen_goods[0])

/* The manifest text: "file STATUS open|verify\n" per row, in table order. */
static size_t gen_manifest(char *buf, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < GEN_N_CASES; i++) {
        int k = snprintf(buf + n, cap - n, "%s %s %s\n", gen_cases[i].file,
                         ingot_status_name(gen_cases[i].want),
                         gen_cases[i].verify ? "verify" : "open");
        if (k < 0 || (size_t)k >= cap - n) gen_die("manifest buffer too small");
        n += (size_t)k;
    }
    return n;
}

static bool gen_write_file(const char *dir, const char *name, const void *p, size_t n)
{
    char path[1024];
    int len = snprintf(path, sizeof path, "%s/%s", dir, name);
    if (len < 0 || (size_t)len >= sizeof path) return false;
    FILE *fp = fopen(path, "wb");
    if (!fp) return false;
    bool ok = fwrite(p, 1, n, fp) == n;
    return fclose(fp) == 0 && ok;
}

/* Writes <dir>/bad/<every row>, <dir>/bad/MANIFEST and <dir>/good/<every seed>. */
static int gen_regen(const char *dir)
{
    static gbuf g;
    static char manifest[32768];
    char sub[1024];
    gx x;
    snprintf(sub, sizeof sub, "%s/bad", dir);
    for (size_t i = 0; i < GEN_N_CASES; i++)
        if (!gen_case(&gen_cases[i], &g, &x) || !gen_write_file(sub, gen_cases[i].file, g.b, g.n))
            return fprintf(stderr, "failed: %s\n", gen_cases[i].file), 1;
    size_t mn = gen_manifest(manifest, sizeof manifest);
    if (!gen_write_file(sub, "MANIFEST", manifest, mn)) return 1;
    snprintf(sub, sizeof sub, "%s/good", dir);
    for (size_t i = 0; i < GEN_N_GOODS; i++)
        if (!gen_goods[i].make(&g) || !gen_write_file(sub, gen_goods[i].file, g.b, g.n))
            return fprintf(stderr, "failed: %s\n", gen_goods[i].file), 1;
    fprintf(stderr, "wrote %zu bad files and %zu good files under %s\n", (size_t)GEN_N_CASES,
            (size_t)GEN_N_GOODS, dir);
    return 0;
}

#endif /* GEN_BASE_ONLY */
#endif /* INGOT_GEN_BAD_CORPUS_C */
