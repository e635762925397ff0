/*
 * fuzz_roundtrip_native.c - libFuzzer target: the input bytes describe a tensor set and metadata
 * (names, dtypes incl. quantized block types, shapes incl. zero dimensions, param ids, every
 * metadata type as scalar and array, alignment, how tensor data is streamed and in which chunk
 * sizes). The description is written with ingot_writer to memory, reopened, and every tensor and
 * metadata value compared byte for byte; then written again with different chunking and compared
 * with the first output (the writer is deterministic, zstd's check).
 *
 * Invalid requests are mixed in (bad names, duplicates, unknown dtypes, ranks above 8, shapes that
 * overflow, partial quantization blocks, bad alignments); each must fail with its exact status and
 * leave the writer usable.
 */
#include <math.h>

#include "file.h"        /* ingot__verify_chunk */
#include "fuzz_common.h"
#include "writer_impl.h" /* ingot__write_chunk */

/* ---- input reader: zeros once the bytes run out ---- */
typedef struct {
    const uint8_t *p;
    size_t n, at;
} src;

static uint8_t u8(src *s) { return s->at < s->n ? s->p[s->at++] : 0; }
static uint16_t u16(src *s) { return (uint16_t)(u8(s) | (u8(s) << 8)); }
static uint64_t u64(src *s)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)u8(s) << (8 * i);
    return v;
}

/* xorshift64*: bulk bytes (tensor data, array contents) from a seed taken from the input */
static uint64_t rnd(uint64_t *st)
{
    uint64_t x = *st;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *st = x;
    return x * 0x2545F4914F6CDD1Dull;
}

/* Bulk bytes are copied out of a fixed pseudo-random pool at a seed-chosen offset: memcpy keeps
 * the per-byte work out of the instrumented code (a loop here would cost a traced compare per
 * byte, which dominated the run time). */
#define POOL_BYTES (1u << 16)
static uint8_t rpool[2 * POOL_BYTES];

static void fill(uint8_t *p, size_t n, uint64_t seed)
{
    if (!rpool[0] && !rpool[1]) {
        uint64_t st = 0x243F6A8885A308D3ull;
        for (size_t i = 0; i < sizeof rpool; i++) rpool[i] = (uint8_t)(rnd(&st) >> 56);
        rpool[0] |= 1;
    }
    while (n) {
        size_t k = n < POOL_BYTES ? n : POOL_BYTES;
        memcpy(p, rpool + seed % POOL_BYTES, k);
        p += k;
        n -= k;
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    }
}

/* ---- the dtype table, from the public X-list ---- */
typedef struct {
    ingot_dtype dt;
    uint32_t be, bb;
} dtrow;
static const dtrow dtypes[] = {
#define FZ_X_(name, value, be, bb) {INGOT_DTYPE_##name, be, bb},
    INGOT_DTYPE_LIST(FZ_X_)
#undef FZ_X_
};
#define N_DTYPES (sizeof dtypes / sizeof dtypes[0])

/* ---- description ---- */
#define MAX_T 24
#define MAX_M 24
#define MAX_NAME 48
#define DATA_CAP (1u << 13) /* accepted tensors stay small (outer dims are cut to 1) */

typedef struct {
    char name[MAX_NAME + 1];
    ingot_dtype dt;
    uint32_t rank;
    uint64_t shape[INGOT_MAX_RANK];
    ingot_tensor_opts opts;
    bool use_opts;
    bool pushed;          /* data streamed with ingot_writer_write */
    ingot_status expect;  /* of ingot_writer_add_tensor */
    uint64_t nbytes;      /* when accepted */
    uint8_t *data;
} tdesc;

typedef struct {
    char key[MAX_NAME + 1];
    ingot_meta_type type;
    bool is_array;
    uint64_t bits;        /* numeric scalar: value bits */
    uint8_t *blob;        /* string/bytes scalar, numeric array elements (host order), or
                             string array contents back to back */
    size_t blob_len;
    uint64_t count;       /* array element count */
    size_t *lens;         /* string array element lengths */
    const void **ptrs;    /* string array element pointers (into blob) */
    ingot_status expect;
} mdesc;

typedef struct {
    uint32_t alignment;
    tdesc t[MAX_T];
    size_t nt;
    mdesc m[MAX_M];
    size_t nm;
    uint64_t seed;
    bool v10; /* the writer's ingot_v1_0 option: string/bytes arrays as v1.0 references */
} desc;

/* Name pieces: ASCII, 2-, 3- and 4-byte UTF-8, shared prefixes so sorting matters. */
static const char *const pieces[] = {"a", "b", "z", ".", "0", "_", "A", "~",
                                     "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\x7f",
                                     "layer", "weight", "\xc2\x80", "\xef\xbf\xbf"};

/* Makes a name; returns whether it is valid (invalid: empty, bad UTF-8, embedded NUL cut). */
static bool make_name(src *s, char *out)
{
    uint8_t h = u8(s);
    size_t len = 0;
    out[0] = 0;
    if (h == 0xFF) return false; /* empty */
    unsigned np = 1 + h % 6;
    for (unsigned k = 0; k < np; k++) {
        const char *p = pieces[u8(s) % (sizeof pieces / sizeof pieces[0])];
        size_t pl = strlen(p);
        if (len + pl > MAX_NAME) break;
        memcpy(out + len, p, pl);
        len += pl;
    }
    out[len] = 0;
    if (h == 0xFE && len < MAX_NAME) { /* a lone continuation byte: not UTF-8 */
        out[len] = (char)0x80;
        out[len + 1] = 0;
        return false;
    }
    if (h == 0xFD && len + 2 <= MAX_NAME) { /* overlong encoding of '/' */
        out[len] = (char)0xC0;
        out[len + 1] = (char)0xAF;
        out[len + 2] = 0;
        return false;
    }
    return true;
}

/* Expected status of add_tensor's shape checks, as core.h documents ingot_dtype_nbytes:
 * BAD_SHAPE when a dimension or the element count exceeds 2^63-1 (a zero dimension makes the
 * count 0 but does not excuse a dimension above 2^63-1); BAD_SIZE for a partial block in the
 * innermost dimension (GGML block types) or in the element count (packed sub-byte types) or a
 * byte size above 2^64-1. */
static ingot_status expect_shape(const tdesc *t, uint32_t be, uint32_t bb, uint64_t *nbytes)
{
    uint64_t n = 1;
    bool zero = false;
    for (uint32_t d = 0; d < t->rank; d++) {
        if (t->shape[d] > (uint64_t)INT64_MAX) return INGOT_BAD_SHAPE;
        if (t->shape[d] == 0) zero = true;
    }
    for (uint32_t d = 0; d < t->rank && !zero; d++)
        if (__builtin_mul_overflow(n, t->shape[d], &n) || n > (uint64_t)INT64_MAX)
            return INGOT_BAD_SHAPE;
    if (zero) n = 0;
    uint64_t inner = t->rank ? t->shape[t->rank - 1] : 1;
    if ((unsigned)t->dt >= 256 ? inner % be != 0 : n % be != 0) return INGOT_BAD_SIZE;
    if (__builtin_mul_overflow(n / be, (uint64_t)bb, nbytes)) return INGOT_BAD_SIZE;
    return INGOT_OK;
}

static bool name_taken(const desc *d, size_t upto, const char *name)
{
    for (size_t i = 0; i < upto; i++)
        if (d->t[i].expect == INGOT_OK && strcmp(d->t[i].name, name) == 0) return true;
    return false;
}

static bool key_taken(const desc *d, size_t upto, const char *key)
{
    for (size_t i = 0; i < upto; i++)
        if (d->m[i].expect == INGOT_OK && strcmp(d->m[i].key, key) == 0) return true;
    return false;
}

static void gen_tensor(desc *d, src *s)
{
    tdesc *t = &d->t[d->nt];
    memset(t, 0, sizeof *t);
    bool name_ok = make_name(s, t->name);
    uint8_t kind = u8(s);
    const dtrow *row = &dtypes[kind % N_DTYPES];
    t->dt = row->dt;
    uint32_t be = row->be, bb = row->bb;
    uint8_t rk = u8(s);
    t->rank = rk % 9;
    uint8_t mode = u8(s);
    for (uint32_t k = 0; k < t->rank; k++) t->shape[k] = u8(s) % 4; /* 0..3: zero dims too */
    if (be > 1 && t->rank) t->shape[t->rank - 1] *= be; /* whole blocks */
    switch (mode % 16) {
    case 0: /* unknown dtype code */
        t->dt = (ingot_dtype)(u8(s) & 1 ? 0 : 16 + u16(s) % 240);
        if (ingot_dtype_valid(t->dt)) t->dt = (ingot_dtype)0;
        break;
    case 1: t->rank = 9 + u8(s) % 3; break;                     /* rank above the maximum */
    case 2: if (t->rank) t->shape[0] = UINT64_MAX - u8(s); break; /* dim > INT64_MAX */
    case 3: /* element count 2^63 or 2^64 (fine if another dimension is 0) */
        t->rank = 2 + u8(s) % 7;
        t->shape[0] = (uint64_t)1 << 32;
        t->shape[1] = (uint64_t)1 << (u8(s) & 1 ? 32 : 31);
        break;
    case 4: /* byte size overflows, element count does not: needs >= 4 bytes per element */
        if (be == 1 && bb >= 4) {
            memset(t->shape, 0, sizeof t->shape);
            t->rank = 1;
            t->shape[0] = (uint64_t)INT64_MAX - u8(s);
        }
        break;
    case 5: /* partial quantization block */
        if (be > 1 && t->rank) t->shape[t->rank - 1] += 1 + u8(s) % (be - 1);
        break;
    case 6: /* zero dim before a huge one: fine, 0 elements */
        if (t->rank >= 2) {
            t->shape[0] = 0;
            t->shape[1] = (uint64_t)1 << 62; /* a whole number of blocks of any type */
        }
        break;
    default: break;
    }
    for (uint32_t k = t->rank; k < INGOT_MAX_RANK; k++) t->shape[k] = 0; /* rank changed */
    uint8_t flags = u8(s);
    t->use_opts = flags & 1;
    t->opts.has_param_id = flags & 2;
    t->opts.param_id = t->opts.has_param_id ? u64(s) : 0;
    t->pushed = flags & 4;

    /* expected status, in the writer's order: name, rank, dtype/shape/size, duplicate */
    if (!name_ok) t->expect = INGOT_BAD_NAME;
    else if (t->rank > INGOT_MAX_RANK) t->expect = INGOT_BAD_NDIMS;
    else if (!ingot_dtype_valid(t->dt)) t->expect = INGOT_BAD_TYPE;
    else t->expect = expect_shape(t, be, bb, &t->nbytes);
    if (t->expect == INGOT_OK && name_taken(d, d->nt, t->name)) t->expect = INGOT_DUPLICATE;
    /* keep accepted tensors small: cut outer dimensions to 1 until the bytes fit */
    for (uint32_t k = 0; t->expect == INGOT_OK && t->nbytes > DATA_CAP && k + 1 < t->rank; k++) {
        if (t->shape[k] > 1) t->shape[k] = 1;
        /* a packed sub-byte type needs a whole number of bytes: keep one block in this dim */
        if (expect_shape(t, be, bb, &t->nbytes) == INGOT_BAD_SIZE) t->shape[k] = be;
        FZ_ST(expect_shape(t, be, bb, &t->nbytes), INGOT_OK);
    }
    FZ_CHECK(t->expect != INGOT_OK || t->nbytes <= DATA_CAP);
    if (t->expect == INGOT_OK) {
        t->data = malloc(t->nbytes ? t->nbytes : 1);
        FZ_CHECK(t->data);
        fill(t->data, t->nbytes, d->seed ^ (d->nt * 0x9E3779B97F4A7C15ull));
        if (t->dt == INGOT_DTYPE_BOOL) /* valid values only: VERIFY_ALL checks them */
            for (uint64_t k = 0; k < t->nbytes; k++) t->data[k] &= 1;
    }
    d->nt++;
}

static void gen_meta(desc *d, src *s)
{
    mdesc *m = &d->m[d->nm];
    memset(m, 0, sizeof *m);
    bool key_ok = make_name(s, m->key);
    uint8_t h = u8(s);
    m->type = (ingot_meta_type)(1 + h % 13);
    m->is_array = h & 0x80;
    uint32_t esz = ingot_meta_type_size(m->type);
    bool str_ok = true;
    uint64_t seed = d->seed ^ ((d->nm + 1) * 0xD1B54A32D192ED03ull);
    if (!m->is_array && esz) {
        m->bits = u64(s);
        if (esz < 8) m->bits &= (((uint64_t)1 << (8 * esz)) - 1);
        if (m->type == INGOT_META_BOOL) m->bits &= 1;
    } else if (!m->is_array) { /* string or bytes scalar */
        m->blob_len = u8(s) % 40;
        m->blob = malloc(m->blob_len + 1);
        FZ_CHECK(m->blob);
        for (size_t k = 0; k < m->blob_len; k++) m->blob[k] = u8(s);
        if (m->type == INGOT_META_STRING) str_ok = fz_utf8(m->blob, m->blob_len, true);
    } else if (esz) { /* numeric array */
        m->count = u8(s) % 64;
        m->blob_len = (size_t)m->count * esz;
        m->blob = malloc(m->blob_len + 1);
        FZ_CHECK(m->blob);
        fill(m->blob, m->blob_len, seed);
    } else { /* string/bytes array */
        m->count = u8(s) % 12;
        m->lens = malloc((size_t)(m->count + 1) * sizeof *m->lens);
        m->ptrs = malloc((size_t)(m->count + 1) * sizeof *m->ptrs);
        FZ_CHECK(m->lens && m->ptrs);
        size_t total = 0;
        for (uint64_t k = 0; k < m->count; k++) total += m->lens[k] = u8(s) % 24;
        m->blob_len = total;
        m->blob = malloc(total + 1);
        FZ_CHECK(m->blob);
        size_t at = 0;
        for (uint64_t k = 0; k < m->count; k++) {
            /* mostly printable text from the pieces, sometimes raw bytes */
            uint8_t *e = m->blob + at;
            for (size_t b = 0; b < m->lens[k]; b++) e[b] = u8(s);
            if (m->type == INGOT_META_STRING && m->lens[k] && !(e[0] & 1))
                for (size_t b = 0; b < m->lens[k]; b++) e[b] = (uint8_t)('a' + e[b] % 26);
            if (m->type == INGOT_META_STRING && !fz_utf8(e, m->lens[k], true)) str_ok = false;
            m->ptrs[k] = m->lens[k] ? e : (h & 0x40 ? NULL : e);
            at += m->lens[k];
        }
    }
    /* expected, in the writer's order: value encoding, key, duplicate */
    if (!str_ok) m->expect = INGOT_BAD_STRING;
    else if (!key_ok) m->expect = INGOT_BAD_NAME;
    else if (key_taken(d, d->nm, m->key)) m->expect = INGOT_DUPLICATE;
    else m->expect = INGOT_OK;
    d->nm++;
}

static void free_desc(desc *d)
{
    for (size_t i = 0; i < d->nt; i++) free(d->t[i].data);
    for (size_t i = 0; i < d->nm; i++) {
        free(d->m[i].blob);
        free(d->m[i].lens);
        free(d->m[i].ptrs);
    }
}

static ingot_status set_meta(ingot_writer *w, const mdesc *m)
{
    if (m->is_array && ingot_meta_type_size(m->type))
        return ingot_writer_set_array(w, m->key, m->type, m->blob, m->count);
    if (m->is_array)
        return ingot_writer_set_string_array(w, m->key, m->type, m->ptrs, m->lens, m->count);
    uint64_t b = m->bits;
    switch (m->type) {
    case INGOT_META_U8: return ingot_writer_set_u8(w, m->key, (uint8_t)b);
    case INGOT_META_U16: return ingot_writer_set_u16(w, m->key, (uint16_t)b);
    case INGOT_META_U32: return ingot_writer_set_u32(w, m->key, (uint32_t)b);
    case INGOT_META_U64: return ingot_writer_set_u64(w, m->key, b);
    case INGOT_META_I8: return ingot_writer_set_i8(w, m->key, (int8_t)(uint8_t)b);
    case INGOT_META_I16: return ingot_writer_set_i16(w, m->key, (int16_t)(uint16_t)b);
    case INGOT_META_I32: return ingot_writer_set_i32(w, m->key, (int32_t)(uint32_t)b);
    case INGOT_META_I64: return ingot_writer_set_i64(w, m->key, (int64_t)b);
    case INGOT_META_F32: {
        uint32_t x = (uint32_t)b;
        float v;
        memcpy(&v, &x, 4);
        return ingot_writer_set_f32(w, m->key, v);
    }
    case INGOT_META_F64: {
        double v;
        memcpy(&v, &b, 8);
        return ingot_writer_set_f64(w, m->key, v);
    }
    case INGOT_META_BOOL: return ingot_writer_set_bool(w, m->key, b != 0);
    case INGOT_META_STRING:
        return ingot_writer_set_stringn(w, m->key, (const char *)m->blob, m->blob_len);
    case INGOT_META_BYTES: return ingot_writer_set_bytes(w, m->key, m->blob, m->blob_len);
    case INGOT_META_INVALID: break;
    }
    return INGOT_MISUSE;
}

/* Writes the description to memory. Interleaves metadata and tensor declarations by `order`,
 * streams pushed tensors in chunks from `chunk_seed`. */
static void write_desc(const desc *d, uint64_t order, uint64_t chunk_seed, void **out,
                       size_t *size)
{
    ingot_writer_opts o = {.alignment = d->alignment, .no_fsync = true, .ingot_v1_0 = d->v10};
    ingot_writer *w = NULL;
    ingot_error e;
    fz_err_reset(&e);
    ingot_status st = ingot_writer_new(&o, &w, &e);
    fz_err_check(&e, st);
    FZ_ST(st, INGOT_OK);
    size_t ti = 0, mi = 0;
    while (ti < d->nt || mi < d->nm) {
        bool take_meta = mi < d->nm && (ti >= d->nt || (order & 1));
        order = order >> 1 | order << 63;
        if (take_meta) {
            FZ_ST(set_meta(w, &d->m[mi]), d->m[mi].expect);
            mi++;
            continue;
        }
        const tdesc *t = &d->t[ti++];
        fz_err_reset(&e);
        st = ingot_writer_add_tensor(w, t->name, t->dt, t->rank, t->shape,
                                     t->use_opts ? &t->opts : NULL, t->pushed ? NULL : t->data,
                                     &e);
        fz_err_check(&e, st);
        FZ_ST(st, t->expect);
    }
    fz_err_reset(&e);
    st = ingot_writer_begin_mem(w, &e);
    fz_err_check(&e, st);
    FZ_ST(st, INGOT_OK);
    FZ_ST(ingot_writer_set_u8(w, "late", 1), INGOT_MISUSE);

    /* The pushed tensors' bytes form one stream, pushed in random chunk sizes: a chunk may end
     * inside a tensor or span several (tensors with a data pointer in between are copied by the
     * writer when the stream reaches them). */
    size_t total = 0;
    for (size_t i = 0; i < d->nt; i++)
        if (d->t[i].expect == INGOT_OK && d->t[i].pushed) total += (size_t)d->t[i].nbytes;
    uint8_t *stream = malloc(total + 1);
    FZ_CHECK(stream);
    size_t at = 0;
    for (size_t i = 0; i < d->nt; i++)
        if (d->t[i].expect == INGOT_OK && d->t[i].pushed) {
            memcpy(stream + at, d->t[i].data, (size_t)d->t[i].nbytes);
            at += (size_t)d->t[i].nbytes;
        }
    uint64_t rs = chunk_seed | 1;
    for (size_t off = 0; off < total;) {
        uint64_t r = rnd(&rs);
        /* mostly large pieces; every write runs one SIGBUS-guarded CRC step (a sigsetjmp that
         * saves the signal mask: a syscall), so tiny pieces are kept to a few */
        size_t k = (size_t)(r % 16 == 0 ? r % 7 + 1 : r % 4099 + 1);
        if (k > total - off) k = total - off;
        FZ_ST(ingot_writer_write(w, stream + off, k, NULL), INGOT_OK);
        off += k;
    }
    free(stream);
    fz_err_reset(&e);
    st = ingot_writer_commit_mem(w, out, size, &e);
    fz_err_check(&e, st);
    FZ_ST(st, INGOT_OK);
    void *again = (void *)1;
    size_t again_size = 1;
    FZ_ST(ingot_writer_commit_mem(w, &again, &again_size, NULL), INGOT_MISUSE);
    FZ_CHECK(again == NULL && again_size == 0);
    ingot_writer_free(w);
}

static void check_file(const desc *d, const uint8_t *buf, size_t size)
{
    ingot_file *f = NULL;
    ingot_open_opts all = {.verify = INGOT_VERIFY_ALL, .threads = 1};
    ingot_error e;
    fz_err_reset(&e);
    ingot_status st = ingot_file_open_buffer(buf, size, &all, &f, &e);
    fz_err_check(&e, st);
    FZ_ST(st, INGOT_OK); /* VERIFY_ALL: header CRC (also in fuzz builds), tensor CRCs, padding */
    FZ_CHECK(ingot_file_alignment(f) == d->alignment);
    /* minor 1 exactly when a string/bytes array was written packed (FORMAT.md §8) */
    bool packed = false;
    for (size_t i = 0; i < d->nm; i++)
        packed |= !d->v10 && d->m[i].expect == INGOT_OK && d->m[i].is_array &&
                  (d->m[i].type == INGOT_META_STRING || d->m[i].type == INGOT_META_BYTES);
    FZ_CHECK(strcmp(ingot_file_version(f), packed ? "1.1" : "1.0") == 0);
    FZ_CHECK(fz_ld32(buf + 16) == (packed ? 1u : 0u)); /* flags_required: packed arrays */

    uint64_t idx = 0, end = fz_ld64(buf + 160); /* data offset (FORMAT.md §4) */
    for (size_t i = 0; i < d->nt; i++) {
        const tdesc *t = &d->t[i];
        if (t->expect != INGOT_OK) continue;
        ingot_tensor_info x;
        FZ_ST(ingot_file_tensor_at(f, idx, &x), INGOT_OK);
        FZ_CHECK(strcmp(x.name, t->name) == 0 && x.name_len == strlen(t->name));
        FZ_CHECK(x.dtype == t->dt && x.rank == t->rank && x.nbytes == t->nbytes);
        FZ_CHECK(memcmp(x.shape, t->shape, sizeof x.shape) == 0);
        bool pid = t->use_opts && t->opts.has_param_id;
        FZ_CHECK(!!(x.flags & INGOT_TENSOR_HAS_PARAM_ID) == pid);
        FZ_CHECK(x.param_id == (pid ? t->opts.param_id : 0));
        FZ_CHECK(x.offset % d->alignment == 0 && x.offset >= end);
        FZ_CHECK(x.offset - end < d->alignment); /* no gap beyond padding */
        FZ_CHECK(t->nbytes == 0 || memcmp(x.data, t->data, t->nbytes) == 0);
        end = x.offset + x.nbytes;
        ingot_tensor_info y;
        FZ_ST(ingot_file_tensor_find(f, t->name, &y), INGOT_OK);
        FZ_CHECK(y.index == idx);
        idx++;
    }
    FZ_CHECK(ingot_file_tensor_count(f) == idx);
    FZ_CHECK(end == size);

    uint64_t nm = 0;
    for (size_t i = 0; i < d->nm; i++) {
        const mdesc *m = &d->m[i];
        if (m->expect != INGOT_OK) continue;
        nm++;
        ingot_meta_info x;
        FZ_ST(ingot_file_meta_find(f, m->key, &x), INGOT_OK);
        FZ_CHECK(x.type == m->type && x.is_array == m->is_array);
        uint32_t esz = ingot_meta_type_size(m->type);
        if (!m->is_array && esz) {
            FZ_CHECK(x.count == 1);
            switch (m->type) {
            case INGOT_META_U8: case INGOT_META_U16: case INGOT_META_U32: case INGOT_META_U64:
                FZ_CHECK(x.v.u == m->bits);
                break;
            case INGOT_META_I8: FZ_CHECK(x.v.i == (int8_t)(uint8_t)m->bits); break;
            case INGOT_META_I16: FZ_CHECK(x.v.i == (int16_t)(uint16_t)m->bits); break;
            case INGOT_META_I32: FZ_CHECK(x.v.i == (int32_t)(uint32_t)m->bits); break;
            case INGOT_META_I64: FZ_CHECK(x.v.i == (int64_t)m->bits); break;
            case INGOT_META_F32: {
                uint32_t b = (uint32_t)m->bits;
                float v, got;
                memcpy(&v, &b, 4);
                FZ_ST(ingot_file_meta_get_f32(f, m->key, &got), INGOT_OK);
                if (isnan(v)) FZ_CHECK(isnan(got));
                else FZ_CHECK(memcmp(&got, &v, 4) == 0);
                break;
            }
            case INGOT_META_F64: {
                double v, got;
                memcpy(&v, &m->bits, 8);
                FZ_ST(ingot_file_meta_get_f64(f, m->key, &got), INGOT_OK);
                if (isnan(v)) FZ_CHECK(isnan(got));
                else FZ_CHECK(memcmp(&got, &v, 8) == 0);
                break;
            }
            case INGOT_META_BOOL: FZ_CHECK(x.v.b == (m->bits != 0)); break;
            default: FZ_CHECK(0);
            }
        } else if (!m->is_array) {
            FZ_CHECK(x.count == m->blob_len);
            FZ_CHECK(m->blob_len == 0 || memcmp(x.data, m->blob, m->blob_len) == 0);
        } else if (esz) {
            FZ_CHECK(x.count == m->count);
            uint8_t *got = malloc(m->blob_len + 1);
            FZ_CHECK(got);
            FZ_ST(ingot_file_meta_array_read(f, x.index, m->type, 0, m->count, got), INGOT_OK);
            if (m->type == INGOT_META_BOOL) {
                for (uint64_t k = 0; k < m->count; k++) FZ_CHECK(got[k] == (m->blob[k] != 0));
            } else {
                FZ_CHECK(m->blob_len == 0 || memcmp(got, m->blob, m->blob_len) == 0);
            }
            free(got);
        } else {
            FZ_CHECK(x.count == m->count);
            size_t at = 0;
            for (uint64_t k = 0; k < m->count; k++) {
                const char *sp;
                size_t sl;
                FZ_ST(ingot_file_meta_array_string(f, x.index, k, &sp, &sl), INGOT_OK);
                FZ_CHECK(sl == m->lens[k] && (sl == 0 || memcmp(sp, m->blob + at, sl) == 0));
                at += sl;
            }
        }
    }
    FZ_CHECK(ingot_file_meta_count(f) == nm);
    ingot_file_close(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    src s = {data, size, 0};
    static desc d; /* large: keep it off the stack */
    memset(&d, 0, sizeof d);

    uint8_t a = u8(&s);
    static const uint32_t bad_align[] = {1, 32, 63, 96, 100, 131072, 0x80000000u, 13};
    ingot_writer_opts bo = {.alignment = bad_align[a % 8]};
    ingot_writer *bw = (ingot_writer *)1;
    FZ_ST(ingot_writer_new(&bo, &bw, NULL), INGOT_BAD_ALIGN);
    FZ_CHECK(bw == NULL);
    /* 0 = the default (256); large alignments are rare, their padding is costly to check */
    static const uint32_t aligns[32] = {0,   0,   0,   0,    0,    0,    0,     0,
                                        64,  64,  64,  64,   128,  128,  128,   128,
                                        256, 256, 256, 256,  512,  512,  512,   1024,
                                        1024, 2048, 2048, 4096, 8192, 16384, 32768, 65536};
    d.alignment = aligns[a >> 3];
    d.seed = u64(&s);
    uint8_t chunks = u8(&s);
    d.v10 = chunks & 0x80; /* bits 0-6 choose the chunk sizes */
    size_t nt = u8(&s) % (MAX_T + 1), nm = u8(&s) % (MAX_M + 1);
    if (d.alignment >= 4096 && nt > 3) nt = 3; /* padding is checked byte by byte: keep it cheap */
    uint64_t order = u64(&s);
    while (d.nt < nt || d.nm < nm) {
        if (d.nt < nt) gen_tensor(&d, &s);
        if (d.nm < nm) gen_meta(&d, &s);
    }
    uint32_t align = d.alignment ? d.alignment : 256;

    size_t saved_w = ingot__write_chunk, saved_v = ingot__verify_chunk;
    /* Small CRC chunks when writing and verifying, now and then (each write chunk costs a
     * guarded call, so not too small too often). */
    ingot__write_chunk = (chunks & 7) == 1 ? 1u + chunks % 97u : (chunks & 7) == 2 ? 509u : saved_w;
    ingot__verify_chunk = (chunks & 0x18) == 0x08 ? 16u + chunks % 131u : saved_v;

    void *b1 = NULL, *b2 = NULL;
    size_t n1 = 0, n2 = 0;
    write_desc(&d, order, d.seed ^ 0x1111, &b1, &n1);
    d.alignment = align; /* what the file must state */
    check_file(&d, b1, n1);

    /* again, with other chunk sizes for the CRC and the pushes: byte-identical output */
    ingot__write_chunk = (chunks & 0x60) == 0x20 ? 61u + chunks % 61u : saved_w;
    write_desc(&d, order, d.seed ^ 0x2222, &b2, &n2);
    FZ_CHECK(n1 == n2 && memcmp(b1, b2, n1) == 0);

    ingot_writer_free_mem(NULL, b1, n1);
    ingot_writer_free_mem(NULL, b2, n2);
    ingot__write_chunk = saved_w;
    ingot__verify_chunk = saved_v;
    free_desc(&d);
    return 0;
}
