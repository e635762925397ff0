/*
 * native_read.c - the freestanding .ingot v1 reader: validation at open, O(log n) lookups,
 * typed metadata and checksum verification over a caller-provided image. No allocation, no stdio.
 * Normative spec: docs/FORMAT.md; byte offsets: native_layout.h.
 *
 * Open validates every field before any use (RELIABILITY.md §0-1): fixed header, section layout,
 * shape records, tensor entries, names, param ids, name index, metadata entries, then the header
 * checksum. After a
 * successful open every accessor is a bounds-free read of validated data.
 *
 * The tensor table, the names and the name index are checked twice over, by two codes that accept
 * exactly the same files: a fast one (fast_tensors, fast_names, fast_index: straight loops that only
 * say yes or no, a few nanoseconds per tensor) and, when it says no, the exact one (check_tensors,
 * check_index), which walks the same rules in the order of docs/FORMAT.md and names the first
 * broken field. A file is accepted only if one of them accepts it; the fast one accepting a file
 * the exact one rejects would be a bug, which fuzz builds check on every input. On x86-64 the
 * tensor-table pass, the names scan and the string-array reference pass have AVX-512 versions,
 * taken at run time (ingot__utf8_level() >= 3) beside the portable code; tests/test_native_fast.c
 * damages every entry and checks every level against the exact rules.
 */
#include "checked.h"
#include "crc32c.h"
#include "error.h"
#include "ingot/native.h"
#include "native_layout.h"
#include "utf8.h"

struct ingot_native {
    const uint8_t *buf;
    uint64_t avail, file_size;
    uint64_t header_size, n_tensors, n_meta, n_shapes, n_dims, n_params;
    uint64_t tt_off, ni_off, sh_off, dm_off, pa_off, mt_off, pool_off, pool_size, names_off,
        names_size;
    uint64_t data_off, data_size;
    uint64_t max_nbytes; /* the largest size of a shape record */
    uint32_t minor, alignment;
    uint32_t freq; /* flags_required: ING_FREQ_PACKED or 0 */
};

_Static_assert(sizeof(struct ingot_native) <= INGOT_NATIVE_WORKSPACE, "workspace too small");

#define ERR(code, off, where, wlen, ...) ingot__err(err, code, off, where, wlen, __VA_ARGS__)
#define HERR(code, field, ...) ingot__err(err, code, field, "header", 6, __VA_ARGS__)

static const uint8_t *tentry(const ingot_native *r, uint64_t i)
{
    return r->buf + r->tt_off + i * ING_TEN_SIZE;
}
static const uint8_t *mentry(const ingot_native *r, uint64_t i)
{
    return r->buf + r->mt_off + i * ING_MET_SIZE;
}
static const uint8_t *pool(const ingot_native *r) { return r->buf + r->pool_off; }
static const uint8_t *names(const ingot_native *r) { return r->buf + r->names_off; }
static const uint8_t *shape_rec(const ingot_native *r, uint64_t k)
{
    return r->buf + r->sh_off + k * ING_SHP_SIZE;
}
static const uint8_t *dims(const ingot_native *r) { return r->buf + r->dm_off; }

/* Where tensor i's name ends (its NUL) relative to the names section: the next name's offset
 * minus one, or the section's end. Only meaningful once the table is validated. */
static uint64_t name_next(const ingot_native *r, uint64_t i)
{
    return i + 1 < r->n_tensors ? ing_ld32(tentry(r, i + 1) + TEN_NAME_OFF) : r->names_size;
}

static void tensor_name(const ingot_native *r, uint64_t i, const uint8_t **s, uint64_t *len)
{
    uint64_t off = ing_ld32(tentry(r, i) + TEN_NAME_OFF);
    *s = names(r) + off;
    *len = name_next(r, i) - off - 1;
}

/* Compares two byte strings: memcmp order, then shorter first (= code point order for UTF-8). */
static int bytes_cmp(const uint8_t *a, uint64_t alen, const uint8_t *b, uint64_t blen)
{
    uint64_t n = alen < blen ? alen : blen;
    int c = n ? ING_MEMCMP(a, b, (size_t)n) : 0;
    if (c) return c;
    return alen < blen ? -1 : alen > blen ? 1 : 0;
}

static bool all_zero(const uint8_t *p, uint64_t n)
{
    uint64_t acc = 0, i = 0;
    for (; i + 8 <= n; i += 8) acc |= ing_ld64(p + i);
    for (; i < n; i++) acc |= p[i];
    return acc == 0;
}

ingot_status ingot_native_header_size(const void *head, size_t n, uint64_t *needed,
                                      ingot_error *err)
{
    const uint8_t *h = (const uint8_t *)head;
    if (!needed || (!head && n)) return INGOT_MISUSE;
    *needed = 0;
    if (n < ING_HDR_SIZE)
        return HERR(INGOT_TRUNCATED, n, "file of %zu bytes is shorter than the %d-byte header", n,
                    ING_HDR_SIZE);
    if (ING_MEMCMP(h, ING_MAGIC, ING_MAGIC_LEN) != 0)
        return HERR(INGOT_BAD_MAGIC, 0, "magic is not \\x89INGOT\\r\\n");
    if (ing_ld16(h + HDR_MAJOR) != ING_VERSION_MAJOR)
        return HERR(INGOT_BAD_VERSION, HDR_MAJOR, "major version %u (this reader reads 1)",
                    ing_ld16(h + HDR_MAJOR));
    uint64_t d = ing_ld64(h + HDR_DATA);
    if (d < ING_HDR_SIZE)
        return HERR(INGOT_BAD_LAYOUT, HDR_DATA, "data offset %llu inside the fixed header",
                    (unsigned long long)d);
    *needed = d;
    return INGOT_OK;
}

/* Validates the fixed header and the section layout; fills r. */
static ingot_status check_header(ingot_native *r, const uint8_t *h, ingot_error *err)
{
    if (ING_MEMCMP(h, ING_MAGIC, ING_MAGIC_LEN) != 0)
        return HERR(INGOT_BAD_MAGIC, 0, "magic is not \\x89INGOT\\r\\n");
    uint32_t major = ing_ld16(h + HDR_MAJOR);
    if (major != ING_VERSION_MAJOR)
        return HERR(INGOT_BAD_VERSION, HDR_MAJOR, "major version %u (this reader reads 1)", major);
    r->minor = ing_ld16(h + HDR_MINOR);
    bool known = r->minor <= ING_VERSION_MINOR;

    r->header_size = ing_ld32(h + HDR_HEADER_SIZE);
    if (r->header_size < ING_HDR_SIZE || (r->header_size & 7) ||
        (known && r->header_size != ING_HDR_SIZE))
        return HERR(INGOT_BAD_HEADER_SIZE, HDR_HEADER_SIZE, "header size %llu (expected %d)",
                    (unsigned long long)r->header_size, ING_HDR_SIZE);
    uint32_t freq = ing_ld32(h + HDR_FLAGS_REQUIRED);
    if (freq & ~ING_FREQ_PACKED)
        return HERR(INGOT_BAD_FLAGS, HDR_FLAGS_REQUIRED,
                    "required feature flags 0x%x unknown to this reader", freq & ~ING_FREQ_PACKED);
    if (freq && r->minor < 1)
        return HERR(INGOT_BAD_FLAGS, HDR_FLAGS_REQUIRED,
                    "required flag 0x%x (packed arrays) in a minor-0 file", freq);
    r->freq = freq;
    /* flags_optional: unknown bits are ignored by design. */
    if (known) {
        static const struct { uint8_t at, size; } resv[3] = {
            {HDR_RESERVED0, 4}, {HDR_RESERVED1, 8}, {HDR_RESERVED2, 4}};
        for (int i = 0; i < 3; i++)
            if (resv[i].size == 8 ? ing_ld64(h + resv[i].at) : ing_ld32(h + resv[i].at))
                return HERR(INGOT_BAD_FLAGS, resv[i].at,
                            "reserved header field at byte %u is not zero", resv[i].at);
    }

    r->alignment = ing_ld32(h + HDR_ALIGNMENT);
    if (!ing_is_pow2(r->alignment) || r->alignment < ING_ALIGN_MIN || r->alignment > ING_ALIGN_MAX)
        return HERR(INGOT_BAD_ALIGN, HDR_ALIGNMENT,
                    "alignment %u is not a power of two in 64..65536", r->alignment);

    uint64_t fsz = ing_ld64(h + HDR_FILE_SIZE);
    if (fsz > r->file_size)
        return HERR(INGOT_TRUNCATED, HDR_FILE_SIZE, "header declares %llu bytes, file has %llu",
                    (unsigned long long)fsz, (unsigned long long)r->file_size);
    if (fsz < r->file_size)
        return HERR(INGOT_BAD_LAYOUT, HDR_FILE_SIZE,
                    "%llu trailing bytes after the declared end of file",
                    (unsigned long long)(r->file_size - fsz));

    if (r->header_size > r->file_size)
        return HERR(INGOT_BAD_HEADER_SIZE, HDR_HEADER_SIZE, "header size %llu exceeds the file",
                    (unsigned long long)r->header_size);
    r->n_tensors = ing_ld64(h + HDR_N_TENSORS);
    r->n_meta = ing_ld64(h + HDR_N_META);
    r->n_shapes = ing_ld64(h + HDR_N_SHAPES);
    r->n_dims = ing_ld64(h + HDR_N_DIMS);
    r->n_params = ing_ld64(h + HDR_N_PARAMS);
    uint64_t room = r->file_size - r->header_size;
    if (r->n_tensors > UINT32_MAX || r->n_tensors > room / ING_TEN_MIN_BYTES)
        return HERR(INGOT_BAD_COUNT, HDR_N_TENSORS, "tensor count %llu exceeds what the file holds",
                    (unsigned long long)r->n_tensors);
    if (r->n_meta > room / ING_MET_SIZE)
        return HERR(INGOT_BAD_COUNT, HDR_N_META, "metadata count %llu exceeds what the file holds",
                    (unsigned long long)r->n_meta);
    if (r->n_shapes > UINT32_MAX || r->n_shapes > room / ING_SHP_SIZE)
        return HERR(INGOT_BAD_COUNT, HDR_N_SHAPES,
                    "shape record count %llu exceeds what the file holds",
                    (unsigned long long)r->n_shapes);
    if (r->n_dims > UINT32_MAX || r->n_dims > room / 8)
        return HERR(INGOT_BAD_COUNT, HDR_N_DIMS, "dimension count %llu exceeds what the file holds",
                    (unsigned long long)r->n_dims);
    if (r->n_params != 0 && r->n_params != r->n_tensors)
        return HERR(INGOT_BAD_COUNT, HDR_N_PARAMS, "%llu param ids for %llu tensors (0 or all)",
                    (unsigned long long)r->n_params, (unsigned long long)r->n_tensors);

    r->tt_off = ing_ld64(h + HDR_TENSOR_TABLE);
    r->ni_off = ing_ld64(h + HDR_NAME_INDEX);
    r->sh_off = ing_ld64(h + HDR_SHAPES);
    r->dm_off = ing_ld64(h + HDR_DIMS);
    r->pa_off = ing_ld64(h + HDR_PARAMS);
    r->mt_off = ing_ld64(h + HDR_META_TABLE);
    r->pool_off = ing_ld64(h + HDR_POOL);
    r->pool_size = ing_ld64(h + HDR_POOL_SIZE);
    r->names_off = ing_ld64(h + HDR_NAMES);
    r->names_size = ing_ld64(h + HDR_NAMES_SIZE);
    r->data_off = ing_ld64(h + HDR_DATA);
    r->data_size = ing_ld64(h + HDR_DATA_SIZE);

    /* Each section: start after the previous one (8-aligned, except the names), size from the
     * counts. Counts are bounded by the file size above, so the products cannot overflow. */
    struct {
        uint64_t off, size;
        uint32_t field, align_mask;
        const char *name;
    } sec[8] = {
        {r->tt_off, r->n_tensors * ING_TEN_SIZE, HDR_TENSOR_TABLE, 7, "tensor table"},
        {r->ni_off, (r->n_tensors * 4 + 7) & ~(uint64_t)7, HDR_NAME_INDEX, 7, "name index"},
        {r->sh_off, r->n_shapes * ING_SHP_SIZE, HDR_SHAPES, 7, "shape records"},
        {r->dm_off, r->n_dims * 8, HDR_DIMS, 7, "dims"},
        {r->pa_off, r->n_params * 8, HDR_PARAMS, 7, "param ids"},
        {r->mt_off, r->n_meta * ING_MET_SIZE, HDR_META_TABLE, 7, "metadata table"},
        {r->pool_off, r->pool_size, HDR_POOL, 7, "pool"},
        {r->names_off, r->names_size, HDR_NAMES, 0, "names"},
    };
    uint64_t end = r->header_size;
    for (int i = 0; i < 8; i++) {
        if ((sec[i].off & sec[i].align_mask) || sec[i].off < end || (known && sec[i].off != end))
            return HERR(INGOT_BAD_LAYOUT, sec[i].field, "%s offset %llu (expected %llu)",
                        sec[i].name, (unsigned long long)sec[i].off, (unsigned long long)end);
        if (!ing_in_bounds(sec[i].off, sec[i].size, r->file_size))
            return HERR(INGOT_TRUNCATED, sec[i].field, "%s of %llu bytes at %llu runs past the end",
                        sec[i].name, (unsigned long long)sec[i].size,
                        (unsigned long long)sec[i].off);
        end = sec[i].off + sec[i].size;
    }
    if (r->names_size > UINT32_MAX)
        return HERR(INGOT_BAD_LAYOUT, HDR_NAMES_SIZE, "names section of %llu bytes (at most 2^32-1)",
                    (unsigned long long)r->names_size);
    if (r->data_off % r->alignment)
        return HERR(INGOT_BAD_ALIGN, HDR_DATA, "data offset %llu is not a multiple of %u",
                    (unsigned long long)r->data_off, r->alignment);
    uint64_t want = 0;
    if (!ing_round_up(end, r->alignment, &want) || r->data_off < end ||
        (known && r->data_off != want))
        return HERR(INGOT_BAD_LAYOUT, HDR_DATA, "data offset %llu (expected %llu)",
                    (unsigned long long)r->data_off, (unsigned long long)want);
    if (r->data_off > r->file_size || r->data_size != r->file_size - r->data_off)
        return HERR(r->data_off > r->file_size ? INGOT_TRUNCATED : INGOT_BAD_LAYOUT,
                    HDR_DATA_SIZE, "data section [%llu, +%llu) does not end at the file end %llu",
                    (unsigned long long)r->data_off, (unsigned long long)r->data_size,
                    (unsigned long long)r->file_size);
    if (r->avail < r->data_off)
        return HERR(INGOT_TRUNCATED, r->avail, "only %llu of the %llu header bytes are available",
                    (unsigned long long)r->avail, (unsigned long long)r->data_off);
    return INGOT_OK;
}

/* A metadata key: pool-relative (off, len), NUL after it, valid UTF-8 without NUL. */
static ingot_status check_name(const ingot_native *r, uint64_t off, uint64_t len,
                               uint64_t field_abs, const char *what, ingot_error *err)
{
    if (len == 0 || len > ING_NAME_MAX)
        return ERR(INGOT_BAD_NAME, field_abs, what, ing_strlen(what),
                   "%s length %llu not in 1..65535", what, (unsigned long long)len);
    if (off >= r->pool_size || len >= r->pool_size - off)
        return ERR(INGOT_BAD_STRING, field_abs, what, ing_strlen(what),
                   "%s [%llu, +%llu] outside the pool", what, (unsigned long long)off,
                   (unsigned long long)len);
    const uint8_t *s = pool(r) + off;
    if (s[len] != 0 || !ingot__utf8_valid(s, len, false))
        return ERR(INGOT_BAD_STRING, r->pool_off + off, (const char *)s, len,
                   "%s is not NUL-terminated UTF-8 without NUL", what);
    return INGOT_OK;
}

/* ---- the exact checks: first broken rule, in the order of docs/FORMAT.md §5 ---- */

static ingot_status check_tensors(const ingot_native *r, ingot_error *err)
{
    uint64_t pos = 0;     /* end of the previous tensor, relative to the data section */
    uint64_t name_at = 0; /* where the next name starts in the names section */
    for (uint64_t i = 0; i < r->n_tensors; i++) {
        const uint8_t *e = tentry(r, i);
        uint64_t at = r->tt_off + i * ING_TEN_SIZE;
        uint64_t noff = ing_ld32(e + TEN_NAME_OFF), next = name_next(r, i);
        if (noff != name_at)
            return ERR(INGOT_BAD_LAYOUT, at + TEN_NAME_OFF, "tensor name", 11,
                       "name at %llu, expected %llu (names are stored in table order, each after "
                       "the previous one's NUL)",
                       (unsigned long long)noff, (unsigned long long)name_at);
        uint64_t nlen = next > noff ? next - noff - 1 : 0;
        if (nlen == 0 || nlen > ING_NAME_MAX)
            return ERR(INGOT_BAD_NAME, at + TEN_NAME_OFF, "tensor name", 11,
                       "tensor name length %llu not in 1..65535 (next name at %llu)",
                       (unsigned long long)nlen, (unsigned long long)next);
        if (next > r->names_size)
            return ERR(INGOT_BAD_STRING, at + TEN_NAME_OFF, "tensor name", 11,
                       "tensor name [%llu, +%llu] outside the names section of %llu bytes",
                       (unsigned long long)noff, (unsigned long long)nlen,
                       (unsigned long long)r->names_size);
        const char *name = (const char *)names(r) + noff;
        if (name[nlen] != 0 || !ingot__utf8_valid((const uint8_t *)name, nlen, false))
            return ERR(INGOT_BAD_STRING, r->names_off + noff, name, nlen,
                       "tensor name is not NUL-terminated UTF-8 without NUL");
        name_at = next;
#define TERR(code, field, ...) ERR(code, at + (field), name, nlen, __VA_ARGS__)
        uint64_t shape = ing_ld32(e + TEN_SHAPE);
        if (shape >= r->n_shapes)
            return TERR(INGOT_BAD_LAYOUT, TEN_SHAPE, "shape record %llu of %llu",
                        (unsigned long long)shape, (unsigned long long)r->n_shapes);
        uint32_t fl = ing_ld32(e + TEN_FLAGS);
        if (fl & ~TEN_FLAG_PARAM_ID)
            return TERR(INGOT_BAD_FLAGS, TEN_FLAGS, "unknown tensor flags 0x%x", fl);
        if ((fl & TEN_FLAG_PARAM_ID) && r->n_params == 0)
            return TERR(INGOT_BAD_FLAGS, TEN_FLAGS,
                        "param id flag set in a file without param ids");
        uint64_t nbytes = ing_ld64(shape_rec(r, shape) + SHP_NBYTES);
        uint64_t off = ing_ld64(e + TEN_OFFSET), want = 0;
        if (off % r->alignment)
            return TERR(INGOT_BAD_ALIGN, TEN_OFFSET, "data offset %llu not a multiple of %u",
                        (unsigned long long)off, r->alignment);
        if (!ing_round_up(pos, r->alignment, &want) || off != want)
            return TERR(INGOT_BAD_LAYOUT, TEN_OFFSET,
                        "data offset %llu, expected %llu (tensors are stored in table order "
                        "without gaps or overlaps)",
                        (unsigned long long)off, (unsigned long long)want);
        if (!ing_in_bounds(off, nbytes, r->data_size))
            return TERR(INGOT_BAD_LAYOUT, TEN_OFFSET, "data [%llu, +%llu) past the data section",
                        (unsigned long long)off, (unsigned long long)nbytes);
        pos = off + nbytes;
#undef TERR
    }
    if (name_at != r->names_size)
        return HERR(INGOT_BAD_LAYOUT, HDR_NAMES_SIZE,
                    "names section of %llu bytes, the names fill %llu",
                    (unsigned long long)r->names_size, (unsigned long long)name_at);
    if (pos != r->data_size)
        return ERR(INGOT_BAD_LAYOUT, r->data_off + pos, "data", 4,
                   "%llu bytes after the last tensor", (unsigned long long)(r->data_size - pos));
    return INGOT_OK;
}

/* Param ids (§5.3): with n_params = n_tensors, some tensor has one, and the others hold 0. The
 * flags themselves were checked with the entries. */
static ingot_status check_params(const ingot_native *r, ingot_error *err)
{
    if (r->n_params == 0) return INGOT_OK;
    uint32_t any = 0;
    for (uint64_t i = 0; i < r->n_tensors; i++) {
        uint32_t fl = ing_ld32(tentry(r, i) + TEN_FLAGS) & TEN_FLAG_PARAM_ID;
        any |= fl;
        if (!fl && ing_ld64(r->buf + r->pa_off + 8 * i) != 0) {
            const uint8_t *s;
            uint64_t len;
            tensor_name(r, i, &s, &len);
            return ERR(INGOT_BAD_LAYOUT, r->pa_off + 8 * i, (const char *)s, len,
                       "param id of a tensor without the param id flag is not 0");
        }
    }
    if (!any)
        return HERR(INGOT_BAD_LAYOUT, HDR_N_PARAMS,
                    "param id section present but no tensor has a param id");
    return INGOT_OK;
}

static ingot_status check_index(const ingot_native *r, ingot_error *err)
{
    const uint8_t *ix = r->buf + r->ni_off;
    const uint8_t *prev = 0;
    uint64_t prev_len = 0;
    for (uint64_t k = 0; k < r->n_tensors; k++) {
        uint32_t i = ing_ld32(ix + 4 * k);
        if (i >= r->n_tensors)
            return ERR(INGOT_BAD_LAYOUT, r->ni_off + 4 * k, "name index", 10,
                       "entry %llu names tensor %u of %llu", (unsigned long long)k, i,
                       (unsigned long long)r->n_tensors);
        const uint8_t *s;
        uint64_t len;
        tensor_name(r, i, &s, &len);
        if (prev) {
            int c = bytes_cmp(prev, prev_len, s, len);
            if (c == 0)
                return ERR(INGOT_DUPLICATE, r->ni_off + 4 * k, (const char *)s, len,
                           "tensor name appears twice");
            if (c > 0)
                return ERR(INGOT_BAD_LAYOUT, r->ni_off + 4 * k, "name index", 10,
                           "name index is not sorted at entry %llu", (unsigned long long)k);
        }
        prev = s;
        prev_len = len;
    }
    if ((r->n_tensors & 1) && ing_ld32(ix + 4 * r->n_tensors))
        return ERR(INGOT_BAD_LAYOUT, r->ni_off + 4 * r->n_tensors, "name index", 10,
                   "padding is not zero");
    return INGOT_OK;
}

/* ---- the fast checks: yes or no, same rules ---- */

typedef uint8_t v16u8 __attribute__((vector_size(16)));
typedef char v16i8 __attribute__((vector_size(16)));

/* Per dtype code: bytes per block | log2(elements per block) << 12
 * | (elements per block - 1) << 16; 0 for codes that are not dtypes. Every block size is a power
 * of two of at most 2^8 elements and at most 16 bytes per element (C128), so from an element
 * count below 2^59 the size stays below 2^63. dt_elem_bytes holds the byte size of the types of
 * one element per block (0 for the others), for the common case. */
#define DT_LOG2(be)                                                                                \
    ((be) == 1 ? 0 : (be) == 2 ? 1 : (be) == 4 ? 2 : (be) == 8 ? 3 : (be) == 16 ? 4                \
     : (be) == 32 ? 5 : (be) == 64 ? 6 : (be) == 128 ? 7 : (be) == 256 ? 8 : 15)
static const uint8_t dt_elem_bytes[] = {
#define X(name, value, be, bb) [value] = (uint8_t)((be) == 1 ? (bb) : 0),
    INGOT_DTYPE_LIST(X)
#undef X
};
static const uint32_t dt_block[] = {
#define X(name, value, be, bb) [value] = (uint32_t)(bb) | DT_LOG2(be) << 12 | ((be) - 1u) << 16,
    INGOT_DTYPE_LIST(X)
#undef X
};
#define DT_TAB_N (sizeof dt_block / sizeof dt_block[0])
_Static_assert(sizeof dt_elem_bytes == DT_TAB_N, "one size per dtype table");
#define X(name, value, be, bb)                                                                     \
    _Static_assert(DT_LOG2(be) <= 8 && (bb) > 0 && (bb) < 4096 && (bb) <= 16 * (be),             \
                   "dt_block: " #name);
INGOT_DTYPE_LIST(X)
#undef X

/* Byte size of dtype dt (a valid code) and the rank dimensions at d, from the tables, when no
 * product of the dimensions can overflow; false sends the caller to the exact rule (a zero or a
 * large dimension, a partial block). */
static inline bool table_nbytes(uint32_t dt, uint32_t rank, const uint8_t *d, uint64_t *out)
{
    uint64_t nel, inner;
    bool big;
    if (rank == 2) {
        uint64_t a = ing_ld64(d);
        inner = ing_ld64(d + 8);
        nel = a * inner;
        big = (a | inner) >> 29;
    } else if (rank == 1) {
        nel = inner = ing_ld64(d);
        big = nel >> 59;
    } else {
        uint64_t all = 0;
        nel = inner = 1;
        for (uint32_t k = 0; k < rank; k++) {
            inner = ing_ld64(d + 8 * k);
            nel *= inner;
            all |= inner;
        }
        /* below 2^(59/rank) each, no product reaches 2^59; above rank 59 any non-zero
         * dimension takes the exact rule; a scalar (rank 0) is one element */
        big = rank ? all >> (59 / rank) : 0;
    }
    uint64_t nb = nel * dt_elem_bytes[dt];
    if (ING_UNLIKELY(nb == 0 || big)) {
        /* a block type, or a case for the exact rule */
        uint32_t blk = dt_block[dt];
        nb = (nel >> (blk >> 12 & 15)) * (blk & 0xfff);
        if (nb == 0 || big || (inner & (blk >> 16))) return false;
    }
    *out = nb;
    return true;
}

/* Order of two validated records: dtype, rank, then the dimensions as unsigned integers. */
static int shape_cmp(const ingot_native *r, const uint8_t *a, const uint8_t *b)
{
    uint32_t ka = (uint32_t)ing_ld16(a + SHP_DTYPE) << 8 | a[SHP_RANK];
    uint32_t kb = (uint32_t)ing_ld16(b + SHP_DTYPE) << 8 | b[SHP_RANK];
    if (ka != kb) return ka < kb ? -1 : 1;
    const uint8_t *da = dims(r) + 8 * (uint64_t)ing_ld32(a + SHP_DIMS_AT);
    const uint8_t *db = dims(r) + 8 * (uint64_t)ing_ld32(b + SHP_DIMS_AT);
    for (uint32_t k = 0; k < a[SHP_RANK]; k++) {
        uint64_t x = ing_ld64(da + 8 * k), y = ing_ld64(db + 8 * k);
        if (x != y) return x < y ? -1 : 1;
    }
    return 0;
}

/* Shape records (§5.2), in order, each as dtype, rank, reserved, dims_at, shape and size, nbytes,
 * order; then n_dims. One code for yes/no and for the error: a file has few distinct shapes, and
 * the common sizes come from the tables. */
static ingot_status check_shapes(ingot_native *r, ingot_error *err)
{
    uint64_t dim = 0, max_nb = 0;
    const uint8_t *prev = 0;
    for (uint64_t k = 0; k < r->n_shapes; k++) {
        const uint8_t *s = shape_rec(r, k);
        uint64_t at = r->sh_off + k * ING_SHP_SIZE;
#define SERR(code, field, ...) ERR(code, at + (field), "shape record", 12, __VA_ARGS__)
        uint32_t dt = ing_ld16(s + SHP_DTYPE), rank = s[SHP_RANK];
        if (dt >= DT_TAB_N || !dt_block[dt])
            return SERR(INGOT_BAD_TYPE, SHP_DTYPE, "shape record %llu: unknown dtype code %u",
                        (unsigned long long)k, dt);
        if (rank > INGOT_MAX_RANK)
            return SERR(INGOT_BAD_NDIMS, SHP_RANK, "shape record %llu: rank %u exceeds %d",
                        (unsigned long long)k, rank, INGOT_MAX_RANK);
        if (s[SHP_RESERVED])
            return SERR(INGOT_BAD_FLAGS, SHP_RESERVED, "shape record %llu: reserved byte is %u",
                        (unsigned long long)k, s[SHP_RESERVED]);
        uint64_t da = ing_ld32(s + SHP_DIMS_AT);
        if (da != dim)
            return SERR(INGOT_BAD_LAYOUT, SHP_DIMS_AT,
                        "shape record %llu: dims at %llu, expected %llu (stored in record order)",
                        (unsigned long long)k, (unsigned long long)da, (unsigned long long)dim);
        if (rank > r->n_dims - dim)
            return SERR(INGOT_BAD_LAYOUT, SHP_DIMS_AT,
                        "shape record %llu: dims [%llu, +%u) past the %llu of the file",
                        (unsigned long long)k, (unsigned long long)dim, rank,
                        (unsigned long long)r->n_dims);
        const uint8_t *d = dims(r) + 8 * dim;
        /* a shape error points at the first dimension, or at the record of a scalar */
        uint64_t shape_at = rank ? r->dm_off + 8 * dim : at + SHP_DTYPE;
        uint64_t nb;
        if (!table_nbytes(dt, rank, d, &nb)) {
            uint64_t shape[INGOT_MAX_RANK];
            for (uint32_t j = 0; j < rank; j++) shape[j] = ing_ld64(d + 8 * j);
            ingot_status st = ingot_dtype_nbytes((ingot_dtype)dt, rank, shape, 0, &nb);
            if (st == INGOT_BAD_SHAPE)
                return ERR(st, shape_at, "shape record", 12,
                           "shape record %llu: element count or a dimension exceeds 2^63-1",
                           (unsigned long long)k);
            if (st != INGOT_OK)
                return ERR(st, shape_at, "shape record", 12,
                           "shape record %llu: not a whole number of %s blocks (innermost "
                           "dimension, or element count for sub-byte types), or the byte size "
                           "overflows",
                           (unsigned long long)k, ingot_dtype_name((ingot_dtype)dt));
        }
        uint64_t stored = ing_ld64(s + SHP_NBYTES);
        if (stored != nb)
            return SERR(INGOT_BAD_SIZE, SHP_NBYTES,
                        "shape record %llu: stored size %llu, dtype %s and shape give %llu",
                        (unsigned long long)k, (unsigned long long)stored,
                        ingot_dtype_name((ingot_dtype)dt), (unsigned long long)nb);
        if (prev) {
            int c = shape_cmp(r, prev, s);
            if (c == 0)
                return SERR(INGOT_DUPLICATE, SHP_DTYPE,
                            "shape record %llu repeats the previous one", (unsigned long long)k);
            if (c > 0)
                return SERR(INGOT_BAD_LAYOUT, SHP_DTYPE,
                            "shape record %llu sorts before the previous one "
                            "(records are in dtype, rank, dims order)",
                            (unsigned long long)k);
        }
#undef SERR
        max_nb = nb > max_nb ? nb : max_nb;
        prev = s;
        dim += rank;
    }
    r->max_nbytes = max_nb;
    if (dim != r->n_dims)
        return HERR(INGOT_BAD_LAYOUT, HDR_N_DIMS, "%llu dims, the shape records use %llu",
                    (unsigned long long)r->n_dims, (unsigned long long)dim);
    return INGOT_OK;
}

/* Tensor table: name lengths and terminators (the names are contiguous and in table order),
 * shape record ids, flags and data offsets. Every load is bounded before it happens (a name end
 * past the names section stops the loop before its byte is read), and branches that are never
 * taken cost less here than accumulating flags. Data ends rise from 0 and stay within data_size.
 * Sizes are the records' (check_shapes ran first). tensors_from checks the entries from e on,
 * given the end of the previous tensor's data (pos) and where entry e's name starts (name). */
static bool tensors_from(const ingot_native *r, const uint8_t *e, uint64_t pos, uint64_t name)
{
    const uint8_t *sh = r->buf + r->sh_off + SHP_NBYTES, *nm = names(r);
    const uint64_t ns = r->n_shapes, am1 = (uint64_t)r->alignment - 1;
    const uint64_t dsz = r->data_size, nsz = r->names_size;
    const uint32_t maxfl = r->n_params ? TEN_FLAG_PARAM_ID : 0;
    const uint8_t *end = r->buf + r->tt_off + r->n_tensors * ING_TEN_SIZE;
    for (; e < end; e += ING_TEN_SIZE) {
        /* name i ends (with its NUL) where entry i+1's starts, the last one at the end of the
         * names section. For the last entry this reads 4 bytes of the name index, which follows
         * the table, and does not use them. */
        uint64_t next = ing_ld32(e + ING_TEN_SIZE + TEN_NAME_OFF);
        next = e + ING_TEN_SIZE < end ? next : nsz;
        if (next - name - 2 > ING_NAME_MAX - 1 || next > nsz || nm[next - 1]) return false;
        name = next;
        uint64_t s = ing_ld32(e + TEN_SHAPE);
        if (s >= ns || ing_ld32(e + TEN_FLAGS) > maxfl) return false;
        uint64_t at = ing_ld64(e + TEN_OFFSET);
        if (at != ((pos + am1) & ~am1)) return false;
        pos = at + ing_ld64(sh + s * ING_SHP_SIZE);
        if (pos > dsz) return false;
    }
    return pos == dsz;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(INGOT_NO_SIMD)
#include <immintrin.h>
#define HAVE_X86_512 1
/* The rules of tensors_from, eight entries (192 bytes, three vectors) a step with AVX-512: the
 * entries' three quadwords (name offset | shape id << 32, data offset, crc | flags << 32) become
 * three columns by two permutes each; the next name offsets are the column moved by one lane; each
 * name's last byte and each size come by a gather (sizes by a permute when there are at most 16
 * records); the expected data offsets are the previous ends, moved by one lane and rounded up. The
 * checks of a step are ORed into one mask. Returns the number of entries it checked (a multiple
 * of 8), with *pos the end of the last one's data; 0 with *pos = ~0 when a rule fails. */
__attribute__((target("avx512f,avx512bw,avx512vl"))) static uint64_t tensors512(
    const ingot_native *r, uint64_t *pos)
{
    const uint8_t *t = r->buf + r->tt_off, *sh = r->buf + r->sh_off + SHP_NBYTES;
    const uint8_t *nm1 = names(r) - 1;
    const uint64_t n = r->n_tensors, ns = r->n_shapes, nsz = r->names_size;
    const __m512i v_ns = _mm512_set1_epi64((long long)ns), v_nsz = _mm512_set1_epi64((long long)nsz);
    const __m512i v_maxfl = _mm512_set1_epi64(r->n_params ? TEN_FLAG_PARAM_ID : 0);
    const __m512i v_am1 = _mm512_set1_epi64((long long)r->alignment - 1);
    const __m512i v_dsz = _mm512_set1_epi64((long long)r->data_size);
    const __m512i v_lenmax = _mm512_set1_epi64(ING_NAME_MAX - 1), two = _mm512_set1_epi64(2);
    const __m512i lo32 = _mm512_set1_epi64(0xFFFFFFFFll);
    /* quadword 3k + c of the three vectors is column c of entry k: first from the first two
     * vectors (indices 0-15), then the third one's fill the rest (indices 8-15 of that permute) */
    const __m512i c0a = _mm512_setr_epi64(0, 3, 6, 9, 12, 15, 0, 0);
    const __m512i c0b = _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 10, 13);
    const __m512i c1a = _mm512_setr_epi64(1, 4, 7, 10, 13, 0, 0, 0);
    const __m512i c1b = _mm512_setr_epi64(0, 1, 2, 3, 4, 8, 11, 14);
    const __m512i c2a = _mm512_setr_epi64(2, 5, 8, 11, 14, 0, 0, 0);
    const __m512i c2b = _mm512_setr_epi64(0, 1, 2, 3, 4, 9, 12, 15);
    /* sizes of records 0-15 for the permute: quadword 2k + 1 of each record pair */
    __m512i tab0 = _mm512_setzero_si512(), tab1 = _mm512_setzero_si512();
    const bool small_tab = ns <= 16;
    if (small_tab) {
        __m512i idx = _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14);
        const uint8_t *rec = r->buf + r->sh_off;
        __m512i a = _mm512_maskz_loadu_epi64((__mmask8)(ns >= 4 ? 0xFF : (1u << (2 * ns)) - 1),
                                             rec);
        __m512i b = _mm512_maskz_loadu_epi64(
            (__mmask8)(ns >= 8 ? 0xFF : ns <= 4 ? 0 : (1u << (2 * (ns - 4))) - 1), rec + 64);
        tab0 = _mm512_permutex2var_epi64(a, _mm512_add_epi64(idx, _mm512_set1_epi64(1)), b);
        if (ns > 8) {
            a = _mm512_maskz_loadu_epi64(
                (__mmask8)(ns >= 12 ? 0xFF : (1u << (2 * (ns - 8))) - 1), rec + 128);
            b = _mm512_maskz_loadu_epi64(
                (__mmask8)(ns >= 16 ? 0xFF : ns <= 12 ? 0 : (1u << (2 * (ns - 12))) - 1),
                rec + 192);
            tab1 = _mm512_permutex2var_epi64(a, _mm512_add_epi64(idx, _mm512_set1_epi64(1)), b);
        }
    }
    const __m512i v_last = _mm512_set1_epi64((long long)(ns ? ns - 1 : 0));
    __m512i prev = _mm512_setzero_si512(); /* lane 7: the end of the previous entry's data */
    __mmask8 bad = 0;
    uint32_t nul = 0;
    uint64_t k = 0;
    for (; k + 8 <= n; k += 8) {
        const uint8_t *e = t + k * ING_TEN_SIZE;
        __m512i x = _mm512_loadu_si512((const void *)e);
        __m512i y = _mm512_loadu_si512((const void *)(e + 64));
        __m512i z = _mm512_loadu_si512((const void *)(e + 128));
        __m512i q0 = _mm512_permutex2var_epi64(_mm512_permutex2var_epi64(x, c0a, y), c0b, z);
        __m512i q1 = _mm512_permutex2var_epi64(_mm512_permutex2var_epi64(x, c1a, y), c1b, z);
        __m512i q2 = _mm512_permutex2var_epi64(_mm512_permutex2var_epi64(x, c2a, y), c2b, z);
        /* names: entry k+8's name offset (4 bytes of the name index after the last entry, not
         * used) or the section end closes the last one */
        uint64_t nx = k + 8 < n ? ing_ld32(e + 8 * ING_TEN_SIZE) : nsz;
        __m512i noff = _mm512_and_si512(q0, lo32);
        __m512i next = _mm512_alignr_epi64(_mm512_set1_epi64((long long)nx), noff, 1);
        bad |= _mm512_cmpgt_epu64_mask(_mm512_sub_epi64(_mm512_sub_epi64(next, noff), two),
                                       v_lenmax);
        bad |= _mm512_cmpgt_epu64_mask(next, v_nsz);
        /* each name's last byte, its NUL, at nm1 + next (next clamped into the section; the
         * reader's buffer starts 192 bytes or more before the names, so nm1 = nm - 1 lies in it
         * and next = 0 reads inside it): eight scalar loads cost less than a gather here */
        uint64_t nd[8];
        _mm512_storeu_si512((void *)nd, _mm512_min_epu64(next, v_nsz));
        nul |= nm1[nd[0]] | nm1[nd[1]] | nm1[nd[2]] | nm1[nd[3]] | nm1[nd[4]] | nm1[nd[5]] |
               nm1[nd[6]] | nm1[nd[7]];
        /* shape ids and flags */
        __m512i shape = _mm512_srli_epi64(q0, 32);
        bad |= _mm512_cmpge_epu64_mask(shape, v_ns);
        bad |= _mm512_cmpgt_epu64_mask(_mm512_srli_epi64(q2, 32), v_maxfl);
        /* data offsets: each the previous end rounded up, each end within the data section */
        __m512i sid = _mm512_min_epu64(shape, v_last), size;
        if (small_tab) size = _mm512_permutex2var_epi64(tab0, sid, tab1);
        else size = _mm512_i64gather_epi64(_mm512_slli_epi64(sid, 1), sh, 8);
        __m512i ends = _mm512_add_epi64(q1, size);
        __m512i want = _mm512_alignr_epi64(ends, prev, 7);
        want = _mm512_andnot_si512(v_am1, _mm512_add_epi64(want, v_am1));
        bad |= _mm512_cmpneq_epu64_mask(q1, want);
        bad |= _mm512_cmpgt_epu64_mask(ends, v_dsz);
        prev = ends;
        if (bad | nul) {
            *pos = ~(uint64_t)0;
            return 0;
        }
    }
    uint64_t last[8];
    _mm512_storeu_si512((void *)last, prev);
    *pos = last[7];
    return k;
}
#endif

__attribute__((noinline)) static bool fast_tensors(const ingot_native *r)
{
    const uint8_t *t = r->buf + r->tt_off;
    const uint64_t n = r->n_tensors;
    if (n == 0) return r->names_size == 0 && r->data_size == 0;
    /* below 2^62 no sum of an offset and a size (check_shapes found every size below 2^62 when
     * max_nbytes says so) can wrap */
    if ((r->data_size | r->max_nbytes) >> 62 || ing_ld32(t + TEN_NAME_OFF) != 0) return false;
#ifdef HAVE_X86_512
    /* the vector code also needs a shape record (n > 0 has one in a valid file) */
    if (n >= 8 && r->n_shapes && ingot__utf8_level() >= 3) {
        uint64_t pos, k = tensors512(r, &pos);
        if (k == 0) return false;
        const uint8_t *e = t + k * ING_TEN_SIZE;
        return tensors_from(r, e, pos, k < n ? ing_ld32(e + TEN_NAME_OFF) : r->names_size);
    }
#endif
    return tensors_from(r, t, 0, 0);
}

/* NUL bytes and the OR of all bytes of p[0, n), 16 bytes at a time: the counting part of
 * fast_names. */
static uint64_t scan16(const uint8_t *p, uint64_t n, uint8_t *or_all)
{
    uint64_t i = 0, zeros = 0;
    v16u8 high = {0};
    while (i + 16 <= n) {
        /* blocks of at most 255 vectors: each byte lane counts up to 255 zero bytes */
        v16u8 cnt = {0};
        uint64_t stop = n - i > 16 * 255 ? i + 16 * 255 : n;
        for (; i + 16 <= stop; i += 16) {
            v16u8 v;
            ING_MEMCPY(&v, p + i, 16);
            high |= v;
            cnt -= (v16u8)(v == 0); /* a lane that is 0 compares to all ones: -1 */
        }
        for (int k = 0; k < 16; k++) zeros += cnt[k];
    }
    uint8_t hb = 0;
    for (int k = 0; k < 16; k++) hb |= high[k];
    for (; i < n; i++) {
        hb |= p[i];
        zeros += p[i] == 0;
    }
    *or_all = hb;
    return zeros;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(INGOT_NO_SIMD)
#define HAVE_SCAN32 1
typedef uint8_t v32u8 __attribute__((vector_size(32)));
/* scan16 with AVX2, two vectors per step; the tail goes to scan16. */
__attribute__((target("avx2"))) static uint64_t scan32(const uint8_t *p, uint64_t n,
                                                       uint8_t *or_all)
{
    uint64_t i = 0, zeros = 0;
    v32u8 high = {0};
    while (i + 64 <= n) {
        v32u8 c0 = {0}, c1 = {0};
        uint64_t stop = n - i > 64 * 255 ? i + 64 * 255 : n;
        for (; i + 64 <= stop; i += 64) {
            v32u8 a, b;
            ING_MEMCPY(&a, p + i, 32);
            ING_MEMCPY(&b, p + i + 32, 32);
            high |= a | b;
            c0 -= (v32u8)(a == 0);
            c1 -= (v32u8)(b == 0);
        }
        for (int k = 0; k < 32; k++) zeros += (uint64_t)c0[k] + c1[k];
    }
    uint8_t hb = 0;
    for (int k = 0; k < 32; k++) hb |= high[k];
    zeros += scan16(p + i, n - i, or_all);
    *or_all |= hb;
    return zeros;
}
#endif

/* Names section: exactly n NUL bytes (the terminators fast_tensors checked, so none inside a
 * name) and valid UTF-8 as a whole, which, with NUL separators, is each name being valid. */
#ifdef HAVE_X86_512
/* scan16 with AVX-512, 64 bytes a step: the NULs of a step are the population count of a mask;
 * the tail comes through a masked load. */
__attribute__((target("avx512f,avx512bw,popcnt"))) static uint64_t scan64(const uint8_t *p,
                                                                          uint64_t n,
                                                                          uint8_t *or_all)
{
    uint64_t i = 0, zeros = 0;
    __m512i high = _mm512_setzero_si512();
    for (; i + 64 <= n; i += 64) {
        __m512i v = _mm512_loadu_si512((const void *)(p + i));
        high = _mm512_or_si512(high, v);
        zeros += (uint64_t)__builtin_popcountll(_mm512_testn_epi8_mask(v, v));
    }
    __mmask64 m = n - i ? ~0ull >> (64 - (n - i)) : 0;
    __m512i v = _mm512_maskz_loadu_epi8(m, p + i);
    high = _mm512_or_si512(high, v);
    zeros += (uint64_t)__builtin_popcountll(_mm512_mask_testn_epi8_mask(m, v, v));
    *or_all = _mm512_movepi8_mask(high) ? 0x80 : 0;
    return zeros;
}
#endif

__attribute__((noinline)) static bool fast_names(const ingot_native *r)
{
    const uint8_t *p = names(r);
    uint64_t n = r->names_size, zeros;
    uint8_t hb;
#ifdef HAVE_X86_512
    if (ingot__utf8_level() >= 3) zeros = scan64(p, n, &hb);
    else
#endif
#ifdef HAVE_SCAN32
    if (ingot__cpu_avx2()) zeros = scan32(p, n, &hb);
    else
#endif
        zeros = scan16(p, n, &hb);
    if (zeros != r->n_tensors) return false;
    return !(hb & 0x80) || ingot__utf8_valid(p, (size_t)n, true);
}

/* One bit per byte lane of a comparison result (bit k: lane k all ones). */
static unsigned mask16(v16u8 m)
{
#if defined(__SSE2__)
    return (unsigned)__builtin_ia32_pmovmskb128((v16i8)m);
#else
    unsigned b = 0;
    for (int k = 15; k >= 0; k--) b = b << 1 | (m[k] >> 7);
    return b;
#endif
}

/* Name index: a permutation of the tensors in strictly increasing name order; zero padding.
 * fast_tensors checked that every name ends with its NUL and fast_names that no other NUL lies
 * in the names section, so two names compare as C strings: the first byte where they differ or
 * where the first one has its NUL decides, and no read goes past the shorter name's NUL, which
 * spares loading the names' lengths. Names that start within 16 bytes of the end of the buffer
 * compare bytewise. */
__attribute__((noinline)) static bool fast_index(const ingot_native *r)
{
    const uint64_t n = r->n_tensors;
    if (n == 0) return true;
    const uint8_t *ix = r->buf + r->ni_off, *t = r->buf + r->tt_off, *nm = names(r);
    const uint64_t safe = r->avail - r->names_off >= 16 ? r->avail - r->names_off - 16 : 0;
    uint64_t cur = ing_ld32(ix);
    if (cur >= n) return false;
    uint64_t po = ing_ld32(t + cur * ING_TEN_SIZE + TEN_NAME_OFF);
    for (const uint8_t *p = ix + 4, *end = ix + 4 * n; p < end; p += 4) {
        cur = ing_ld32(p);
        if (cur >= n) return false;
        uint64_t co = ing_ld32(t + cur * ING_TEN_SIZE + TEN_NAME_OFF);
        for (uint64_t j = 0;; j += 16) {
            if (ING_UNLIKELY(po + j > safe || co + j > safe)) {
                const uint8_t *a = nm + po + j, *b = nm + co + j;
                while (*a && *a == *b) a++, b++;
                if (*a >= *b) return false; /* equal (both NUL) or decreasing */
                break;
            }
            v16u8 x, y;
            ING_MEMCPY(&x, nm + po + j, 16);
            ING_MEMCPY(&y, nm + co + j, 16);
            unsigned stop = mask16((v16u8)(x != y) | (v16u8)(x == 0));
            if (ING_LIKELY(stop)) {
                /* The first lane that differs or holds x's NUL decides: x's byte must be below
                 * y's there (equal names stop at their NULs, 0 against 0: a duplicate). */
                unsigned d = (unsigned)__builtin_ctz(stop);
                if (nm[po + j + d] >= nm[co + j + d]) return false;
                break;
            }
        }
        po = co;
    }
    return !(n & 1) || ing_ld32(ix + 4 * n) == 0;
}

static bool is_numeric(uint32_t t) { return t >= INGOT_META_U8 && t <= INGOT_META_BOOL; }

/* Elements [j, m) of a string array lie back to back in the pool, each followed by its NUL (the
 * writer's layout), from byte `from` to byte `to` (the last NUL). Validates them as one section:
 * the NULs are valid characters that no sequence can span, so the section is valid exactly when
 * every element is, and its first error lies in the first invalid element. Returns m when valid,
 * else the index of that element. */
static uint64_t run_utf8(const ingot_native *r, const uint8_t *refs, uint64_t j, uint64_t m,
                         uint64_t from, uint64_t to)
{
    size_t ok = ingot__utf8_prefix(pool(r) + from, (size_t)(to - from), true);
    if (ok == to - from) return m;
    uint64_t at = from + ok; /* never a NUL: it lies inside an element */
    for (; j < m; j++) {
        const uint8_t *ref = refs + j * ING_STRREF_SIZE;
        if (at < ing_ld64(ref) + ing_ld64(ref + 8)) break;
    }
    return j;
}

/* Whether references [0, count) of a string array (count >= 2) follow each other and end with a
 * NUL: each start is the previous start + length + 1, no length reaches 2^32 (so no sum wraps),
 * and the byte before each start from the second on is 0. Every such byte is read at an index
 * clamped to `final` (the last element's NUL, inside the pool), so a broken chain never reads
 * outside the pool; its verdict is no in any case. */
static bool refs_follow(const uint8_t *pl, const uint8_t *refs, uint64_t count, uint64_t final)
{
    uint64_t off_run = 0, lens = 0;
    uint32_t nul = 0;
    for (const uint8_t *ref = refs, *end = refs + (count - 1) * ING_STRREF_SIZE; ref < end;
         ref += ING_STRREF_SIZE) {
        uint64_t so = ing_ld64(ref), sl = ing_ld64(ref + 8), e = so + sl;
        off_run |= ing_ld64(ref + ING_STRREF_SIZE) ^ (e + 1);
        lens |= sl;
        nul |= pl[e < final ? e : final];
    }
    return !off_run && !(lens >> 32) && !nul;
}

#ifdef HAVE_X86_512
#define HAVE_REFS512 1
/* refs_follow with AVX-512, eight references (two vectors) per step after the first eight: two
 * permutes split them into starts and lengths; the ends + 1, moved by one lane with the last of
 * the previous step, must equal the starts; one gather reads the dword that ends at each NUL
 * position (end, clamped to [3, final]; from reference 8 on a valid end is at least 8). On the
 * Xeon of issue 17 the vocab open takes 0.88-0.91x the time of the four-reference step it
 * replaced, which moved each position from a vector register to a general one (port 5: ~7.5
 * cycles per four references); a store and four reloads instead were twice as slow (the 64-byte
 * store does not forward to 8-byte loads there). Not measured on AMD. */
__attribute__((target("avx512f,avx512bw"))) static bool refs_follow512(const uint8_t *pl,
                                                                       const uint8_t *refs,
                                                                       uint64_t count,
                                                                       uint64_t final)
{
    /* the first eight links by the portable code (their NUL positions may lie below 3) */
    if (count < 24 || final < 16) return refs_follow(pl, refs, count, final);
    if (!refs_follow(pl, refs, 9, final)) return false;
    const __m512i ev = _mm512_set_epi64(14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i od = _mm512_set_epi64(15, 13, 11, 9, 7, 5, 3, 1);
    const __m512i one = _mm512_set1_epi64(1), three = _mm512_set1_epi64(3);
    const __m512i v_final = _mm512_set1_epi64((long long)final);
    __m512i off_run = _mm512_setzero_si512(), lens = _mm512_setzero_si512();
    __m256i nul = _mm256_setzero_si256();
    uint64_t k = 8;
    __m512i prev1 = _mm512_set1_epi64((long long)ing_ld64(refs + k * ING_STRREF_SIZE));
    for (; k + 8 < count; k += 8) {
        const uint8_t *q = refs + k * ING_STRREF_SIZE;
        __m512i x0 = _mm512_loadu_si512((const void *)q);
        __m512i x1 = _mm512_loadu_si512((const void *)(q + 64));
        __m512i st = _mm512_permutex2var_epi64(x0, ev, x1);
        __m512i ln = _mm512_permutex2var_epi64(x0, od, x1);
        __m512i e = _mm512_add_epi64(st, ln);
        __m512i e1 = _mm512_add_epi64(e, one);
        /* lane i: the end of reference k+i-1, + 1 (lane 0 from the previous step) */
        off_run = _mm512_ternarylogic_epi64(off_run, _mm512_alignr_epi64(e1, prev1, 7), st, 0xF6);
        lens = _mm512_or_si512(lens, ln);
        __m512i at = _mm512_sub_epi64(_mm512_min_epu64(_mm512_max_epu64(e, three), v_final), three);
        nul = _mm256_or_si256(nul, _mm512_i64gather_epi32(at, (const void *)pl, 1));
        prev1 = e1;
    }
    __m128i last = _mm512_extracti32x4_epi32(prev1, 3); /* the end of reference k-1, + 1 */
    uint64_t link = ing_ld64(refs + k * ING_STRREF_SIZE) ^ (uint64_t)_mm_extract_epi64(last, 1);
    if (link || _mm512_test_epi64_mask(off_run, off_run) ||
        !_mm256_testz_si256(nul, _mm256_set1_epi32((int)0xFF000000u)) ||
        _mm512_test_epi64_mask(lens, _mm512_set1_epi64((long long)0xFFFFFFFF00000000ull)))
        return false;
    return count - k < 2 || refs_follow(pl, refs + k * ING_STRREF_SIZE, count - k, final);
}
#endif

/* The common case of str_elems, yes or no: every element starts right after the previous one's
 * NUL, lies inside the pool and has its NUL, and the whole run is valid UTF-8. A no sends the
 * caller to the exact code, which finds the element at fault. */
static bool str_elems_fast(const ingot_native *r, const uint8_t *refs, uint64_t count)
{
    const uint8_t *pl = pool(r);
    const uint64_t ps = r->pool_size;
    const uint8_t *lref = refs + (count - 1) * ING_STRREF_SIZE;
    const uint64_t first = ing_ld64(refs), lsl = ing_ld64(lref + 8);
    const uint64_t final = ing_ld64(lref) + lsl; /* the last NUL, if the run holds */
    if (lsl >> 32 || first >= ps || final >= ps || final < first || pl[final]) return false;
    /* with the starts following from `first` up to the last one, below `final`, every element
     * lies in the pool */
#ifdef HAVE_REFS512
    if (count > 1 && !(ingot__utf8_level() >= 3 ? refs_follow512(pl, refs, count, final)
                                                : refs_follow(pl, refs, count, final)))
        return false;
#else
    if (count > 1 && !refs_follow(pl, refs, count, final)) return false;
#endif
    return ingot__utf8_valid(pl + first, (size_t)(final - first), true);
}

/* The elements of a STRING array (count refs at refs, bounded by the caller): each inside the
 * pool with a NUL after it, and valid UTF-8 (NUL allowed). The same verdict as checking them one
 * by one in order: 0 if all pass; else 1 (outside the pool) or 2 (no NUL, or not UTF-8) with *at
 * the first element that fails. Runs of back-to-back elements are validated in one pass each. */
static uint64_t str_elems(const ingot_native *r, const uint8_t *refs, uint64_t count,
                          uint64_t *at)
{
    const uint8_t *pl = pool(r);
    const uint64_t ps = r->pool_size;
    uint64_t j = 0, from = 0, end = 0, kind = 0, k = 0;
    for (; k < count; k++) {
        const uint8_t *ref = refs + k * ING_STRREF_SIZE;
        uint64_t so = ing_ld64(ref), sl = ing_ld64(ref + 8);
        if (so > ps || sl >= ps - so) { /* the element and its NUL must lie inside the pool */
            kind = 1;
            break;
        }
        if (pl[so + sl]) {
            kind = 2;
            break;
        }
        if (k == j) {
            from = so;
        } else if (so != end + 1) { /* a new run: validate the one that ends here */
            uint64_t bad = run_utf8(r, refs, j, k, from, end);
            if (bad < k) {
                *at = bad;
                return 2;
            }
            j = k;
            from = so;
        }
        end = so + sl;
    }
    if (k > j) {
        uint64_t bad = run_utf8(r, refs, j, k, from, end);
        if (bad < k) {
            *at = bad;
            return 2;
        }
    }
    *at = k;
    return kind;
}

/* ---- packed string/bytes arrays (docs/FORMAT.md §7.1) ---- */

/* The column's rules for offsets [k, count] (off[k] = prev, checked), yes or no, in the portable
 * code: each offset at least the previous one (strings: greater), and for strings the blob byte
 * before each is 0. With off[0] = 0 and off[count] = last <= room checked by the caller, order
 * alone keeps every offset in [0, last]. Reads stay in [blob - 1, blob + last): an offset is
 * clamped to `last`, and the byte before the blob is the column's. */
static bool col_sw(const uint8_t *col, uint64_t k, uint64_t count, const uint8_t *blob,
                   uint32_t last, bool str)
{
    const uint8_t *b1 = blob - 1;
    uint32_t prev = ing_ld32(col + 4 * k), bad = 0;
    uint8_t nul = 0;
    if (str) {
        for (uint64_t i = k + 1; i <= count; i++) {
            uint32_t o = ing_ld32(col + 4 * i);
            bad |= (uint32_t)(o <= prev);
            nul |= b1[o < last ? o : last];
            prev = o;
        }
    } else {
        for (uint64_t i = k + 1; i <= count; i++) {
            uint32_t o = ing_ld32(col + 4 * i);
            bad |= (uint32_t)(o < prev);
            prev = o;
        }
    }
    return !bad && !nul;
}

#ifdef HAVE_X86_512
/* col_sw with AVX-512, sixteen offsets a step: each compared with the one before it (a second
 * load one lane on); for strings a gather reads the dword that ends at each NUL
 * position (offset clamped to `last`; blob - 4 and on lies in the pool, the column being at least
 * 8 bytes). last < 2^31: the gather's indices are signed. The tail goes to col_sw. */
__attribute__((target("avx512f,avx512bw"))) static bool col512(const uint8_t *col,
                                                               uint64_t count,
                                                               const uint8_t *blob, uint32_t last,
                                                               bool str)
{
    const __m512i v_last = _mm512_set1_epi32((int)last);
    __mmask16 bad = 0;
    __m512i nul = _mm512_setzero_si512();
    uint64_t k = 0;
    for (; k + 16 <= count; k += 16) {
        __m512i cur = _mm512_loadu_si512((const void *)(col + 4 * k));
        __m512i nxt = _mm512_loadu_si512((const void *)(col + 4 * k + 4));
        bad |= str ? _mm512_cmple_epu32_mask(nxt, cur) : _mm512_cmplt_epu32_mask(nxt, cur);
        if (str)
            nul = _mm512_or_si512(nul, _mm512_i32gather_epi32(_mm512_min_epu32(nxt, v_last),
                                                              (const void *)(blob - 4), 1));
    }
    if (bad || _mm512_test_epi32_mask(nul, _mm512_set1_epi32((int)0xFF000000u))) return false;
    return col_sw(col, k, count, blob, last, str);
}

/* col512 with AVX2, eight offsets a step; unsigned order by flipping the sign bit. */
__attribute__((target("avx2"))) static bool col256(const uint8_t *col, uint64_t count,
                                                   const uint8_t *blob, uint32_t last, bool str)
{
    const __m256i sign = _mm256_set1_epi32((int)0x80000000u);
    const __m256i v_last = _mm256_set1_epi32((int)last);
    __m256i bad = _mm256_setzero_si256(), nul = _mm256_setzero_si256();
    uint64_t k = 0;
    for (; k + 8 <= count; k += 8) {
        __m256i cur = _mm256_loadu_si256((const __m256i *)(const void *)(col + 4 * k));
        __m256i nxt = _mm256_loadu_si256((const __m256i *)(const void *)(col + 4 * k + 4));
        __m256i sc = _mm256_xor_si256(cur, sign), sn = _mm256_xor_si256(nxt, sign);
        /* strings: nxt > cur, else nxt >= cur, i.e. not cur > nxt */
        if (str) bad = _mm256_or_si256(bad, _mm256_andnot_si256(_mm256_cmpgt_epi32(sn, sc), sign));
        else bad = _mm256_or_si256(bad, _mm256_cmpgt_epi32(sc, sn));
        if (str)
            nul = _mm256_or_si256(nul, _mm256_i32gather_epi32((const int *)(const void *)(blob - 4),
                                                              _mm256_min_epu32(nxt, v_last), 1));
    }
    if (!_mm256_testz_si256(bad, bad) ||
        !_mm256_testz_si256(nul, _mm256_set1_epi32((int)0xFF000000u)))
        return false;
    return col_sw(col, k, count, blob, last, str);
}
#endif

/* Every rule of a packed array whose column lies in the pool, yes or no: a no sends the caller to
 * packed_exact, which names the first broken rule. */
static bool packed_fast(const uint8_t *col, uint64_t count, const uint8_t *blob, uint64_t room,
                        bool str)
{
    uint64_t last = ing_ld32(col + 4 * count);
    if (ing_ld32(col) != 0 || last > room) return false;
    if (count == 0) return true;
    if (str && last == 0) return false; /* a string holds at least its NUL */
    bool ok;
#ifdef HAVE_X86_512
    int level = ingot__utf8_level();
    if (level >= 3 && last < 0x80000000u) ok = col512(col, count, blob, (uint32_t)last, str);
    else if (level >= 2 && last < 0x80000000u) ok = col256(col, count, blob, (uint32_t)last, str);
    else
#endif
        ok = col_sw(col, 0, count, blob, (uint32_t)last, str);
    return ok && (!str || ingot__utf8_valid(blob, (size_t)last, true));
}

/* The rules of §7.1 after the column's bounds, one by one in order: the first broken one, with
 * the file offset of its field or byte. */
static ingot_status packed_exact(const ingot_native *r, const uint8_t *col, uint64_t count,
                                 const uint8_t *blob, uint64_t room, bool str, const uint8_t *key,
                                 uint64_t klen, ingot_error *err)
{
    const char *k = (const char *)key;
    uint64_t col_at = r->pool_off + (uint64_t)(col - pool(r));
    uint64_t blob_at = col_at + 4 * (count + 1);
    uint64_t prev = ing_ld32(col);
    if (prev != 0)
        return ERR(INGOT_BAD_ARRAY, col_at, k, klen, "packed array: first offset %llu is not 0",
                   (unsigned long long)prev);
    for (uint64_t i = 0; i < count; i++) {
        uint64_t o = ing_ld32(col + 4 * (i + 1)), at = col_at + 4 * (i + 1);
        if (o < prev || o > room)
            return ERR(INGOT_BAD_ARRAY, at, k, klen,
                       "packed array: element %llu ends at %llu, %s %llu", (unsigned long long)i,
                       (unsigned long long)o, o < prev ? "before its start" : "past the pool, room",
                       (unsigned long long)(o < prev ? prev : room));
        if (str && o == prev)
            return ERR(INGOT_BAD_STRING, at, k, klen,
                       "packed string %llu has no byte for its NUL", (unsigned long long)i);
        if (str && blob[o - 1] != 0)
            return ERR(INGOT_BAD_STRING, blob_at + o - 1, k, klen,
                       "packed string %llu is not NUL-terminated", (unsigned long long)i);
        prev = o;
    }
    if (str) {
        size_t ok = ingot__utf8_prefix(blob, (size_t)prev, true);
        if (ok != prev) {
            /* the element holding the first bad byte: the last one starting at or before it */
            uint64_t lo = 0, hi = count;
            while (hi - lo > 1) {
                uint64_t mid = lo + (hi - lo) / 2;
                if (ing_ld32(col + 4 * mid) <= ok) lo = mid;
                else hi = mid;
            }
            return ERR(INGOT_BAD_STRING, blob_at + ok, k, klen,
                       "packed string %llu is not valid UTF-8 (blob byte %llu)",
                       (unsigned long long)lo, (unsigned long long)ok);
        }
    }
    return INGOT_OK;
}

/* A packed STRING or BYTES array of `count` elements whose column starts at pool offset val,
 * for the metadata entry at file offset at. */
static ingot_status check_packed(const ingot_native *r, uint64_t at, const uint8_t *key,
                                 uint64_t klen, bool str, uint64_t count, uint64_t val,
                                 ingot_error *err)
{
    if (val & 3)
        return ERR(INGOT_BAD_ALIGN, at + MET_VALUE, (const char *)key, klen,
                   "packed array at pool offset %llu is not a multiple of 4",
                   (unsigned long long)val);
    if (count >= r->pool_size / 4 || val > r->pool_size - 4 * (count + 1))
        return ERR(INGOT_BAD_ARRAY, at + MET_COUNT, (const char *)key, klen,
                   "packed array of %llu elements: its offsets at pool offset %llu run past the "
                   "pool of %llu bytes",
                   (unsigned long long)count, (unsigned long long)val,
                   (unsigned long long)r->pool_size);
    const uint8_t *col = pool(r) + val, *blob = col + 4 * (count + 1);
    uint64_t room = r->pool_size - val - 4 * (count + 1);
    if (packed_fast(col, count, blob, room, str)) {
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
        /* The fast pass must never accept what the exact one rejects. */
        if (packed_exact(r, col, count, blob, room, str, key, klen, 0) != INGOT_OK)
            __builtin_trap();
#endif
        return INGOT_OK;
    }
    return packed_exact(r, col, count, blob, room, str, key, klen, err);
}

static ingot_status check_meta(const ingot_native *r, ingot_error *err)
{
    const uint8_t *prev = 0;
    uint64_t prev_len = 0;
    for (uint64_t i = 0; i < r->n_meta; i++) {
        const uint8_t *e = mentry(r, i);
        uint64_t at = r->mt_off + i * ING_MET_SIZE;
        uint64_t koff = ing_ld64(e + MET_KEY_OFF), klen = ing_ld32(e + MET_KEY_LEN);
        ING_TRY(check_name(r, koff, klen, at + MET_KEY_OFF, "metadata key", err));
        const uint8_t *key = pool(r) + koff;
#define MERR(code, field, ...) ERR(code, at + (field), (const char *)key, klen, __VA_ARGS__)
        if (prev) {
            int c = bytes_cmp(prev, prev_len, key, klen);
            if (c == 0) return MERR(INGOT_DUPLICATE, MET_KEY_OFF, "metadata key appears twice");
            if (c > 0) return MERR(INGOT_BAD_LAYOUT, MET_KEY_OFF, "metadata table not sorted by key");
        }
        prev = key;
        prev_len = klen;
        uint32_t type = e[MET_TYPE], fl = e[MET_FLAGS];
        if (type < INGOT_META_U8 || type > INGOT_META_BYTES)
            return MERR(INGOT_BAD_TYPE, MET_TYPE, "unknown metadata type %u", type);
        uint32_t fl_ok = MET_FLAG_ARRAY | (r->freq & ING_FREQ_PACKED ? MET_FLAG_PACKED : 0);
        if (fl & ~fl_ok)
            return MERR(INGOT_BAD_FLAGS, MET_FLAGS, "metadata flags 0x%x%s", fl,
                        fl & ~(MET_FLAG_ARRAY | MET_FLAG_PACKED)
                            ? " unknown"
                            : ": packed without the header's required flag 0x1");
        if ((fl & MET_FLAG_PACKED) &&
            (!(fl & MET_FLAG_ARRAY) || (type != INGOT_META_STRING && type != INGOT_META_BYTES)))
            return MERR(INGOT_BAD_FLAGS, MET_FLAGS,
                        "packed flag on a %s of type %u (only string and bytes arrays)",
                        fl & MET_FLAG_ARRAY ? "array" : "scalar", type);
        if (ing_ld16(e + MET_RESERVED))
            return MERR(INGOT_BAD_FLAGS, MET_RESERVED, "reserved field is not zero");
        uint64_t count = ing_ld64(e + MET_COUNT), val = ing_ld64(e + MET_VALUE);
        uint32_t esz = ingot_meta_type_size((ingot_meta_type)type);
        bool arr = fl & MET_FLAG_ARRAY;
        if (!arr && is_numeric(type)) {
            if (count != 1) return MERR(INGOT_BAD_COUNT, MET_COUNT, "scalar with count %llu",
                                        (unsigned long long)count);
            if (esz < 8 && (val >> (8 * esz)))
                return MERR(INGOT_BAD_METADATA, MET_VALUE, "unused value bytes are not zero");
            if (type == INGOT_META_BOOL && val > 1)
                return MERR(INGOT_BAD_METADATA, MET_VALUE, "bool value %llu", (unsigned long long)val);
            continue;
        }
        if (!arr) { /* string or bytes scalar: count bytes at pool offset val */
            bool str = type == INGOT_META_STRING;
            if (!ing_in_bounds(val, count, r->pool_size) || (str && count == r->pool_size - val))
                return MERR(INGOT_BAD_STRING, MET_VALUE, "value [%llu, +%llu) outside the pool",
                            (unsigned long long)val, (unsigned long long)count);
            if (str && (pool(r)[val + count] != 0 || !ingot__utf8_valid(pool(r) + val, count, true)))
                return MERR(INGOT_BAD_STRING, MET_VALUE, "string value is not NUL-terminated UTF-8");
            continue;
        }
        if (is_numeric(type)) {
            uint64_t bytes;
            if (!ing_mul(count, esz, &bytes) || !ing_in_bounds(val, bytes, r->pool_size))
                return MERR(INGOT_BAD_ARRAY, MET_COUNT, "array of %llu x %u bytes outside the pool",
                            (unsigned long long)count, esz);
            if (val % esz)
                return MERR(INGOT_BAD_ALIGN, MET_VALUE, "array at pool offset %llu not aligned to %u",
                            (unsigned long long)val, esz);
            if (type == INGOT_META_BOOL)
                for (uint64_t k = 0; k < count; k++)
                    if (pool(r)[val + k] > 1)
                        return MERR(INGOT_BAD_METADATA, MET_VALUE, "bool element %llu is %u",
                                    (unsigned long long)k, pool(r)[val + k]);
            continue;
        }
        if (fl & MET_FLAG_PACKED) {
            ING_TRY(check_packed(r, at, key, klen, type == INGOT_META_STRING, count, val, err));
            continue;
        }
        uint64_t bytes;
        if (!ing_mul(count, ING_STRREF_SIZE, &bytes) || !ing_in_bounds(val, bytes, r->pool_size))
            return MERR(INGOT_BAD_ARRAY, MET_COUNT, "array of %llu strings outside the pool",
                        (unsigned long long)count);
        if (val & 7)
            return MERR(INGOT_BAD_ALIGN, MET_VALUE, "string array not 8-aligned");
        if (type == INGOT_META_BYTES) {
            for (uint64_t k = 0; k < count; k++) {
                const uint8_t *ref = pool(r) + val + k * ING_STRREF_SIZE;
                if (!ing_in_bounds(ing_ld64(ref), ing_ld64(ref + 8), r->pool_size))
                    return MERR(INGOT_BAD_STRING, MET_VALUE, "element %llu outside the pool",
                                (unsigned long long)k);
            }
            continue;
        }
        if (count == 0) continue;
        if (str_elems_fast(r, pool(r) + val, count)) {
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
            /* The fast pass must never accept what the exact one rejects. */
            uint64_t first_bad = 0;
            if (str_elems(r, pool(r) + val, count, &first_bad) != 0) __builtin_trap();
#endif
            continue;
        }
        uint64_t k = 0, bad = str_elems(r, pool(r) + val, count, &k);
        if (bad == 1)
            return MERR(INGOT_BAD_STRING, MET_VALUE, "element %llu outside the pool",
                        (unsigned long long)k);
        if (bad == 2)
            return MERR(INGOT_BAD_STRING, MET_VALUE, "element %llu is not NUL-terminated UTF-8",
                        (unsigned long long)k);
#undef MERR
    }
    return INGOT_OK;
}

ingot_status ingot_native_open(void *ws, size_t ws_size, const void *buf, size_t avail,
                               uint64_t file_size, uint32_t flags, ingot_native **out,
                               ingot_error *err)
{
    if (!out) return INGOT_MISUSE;
    *out = 0;
    if (!ws || ws_size < sizeof(ingot_native) || ((uintptr_t)ws & 7) || (!buf && avail) ||
        avail > file_size)
        return ERR(INGOT_MISUSE, INGOT_NO_OFFSET, 0, 0, "bad workspace or buffer arguments");
    if (avail < ING_HDR_SIZE)
        return HERR(INGOT_TRUNCATED, avail, "file of %llu bytes is shorter than the %d-byte header",
                    (unsigned long long)avail, ING_HDR_SIZE);
    ingot_native *r = (ingot_native *)ws;
    ING_MEMSET(r, 0, sizeof *r);
    r->buf = (const uint8_t *)buf;
    r->avail = avail;
    r->file_size = file_size;
    ING_TRY(check_header(r, r->buf, err));
    /* The checksum first, verdict last (after every structural check, whose errors come first):
     * its pass brings the header region into the cache for the checks below. */
    uint32_t crc = 0;
    bool check_crc = !(flags & INGOT_NATIVE_SKIP_HEADER_CRC);
    if (check_crc) {
        crc = ingot_crc32c(0, r->buf, HDR_CRC);
        crc = ingot_crc32c(crc, r->buf + ING_HDR_SIZE, r->data_off - ING_HDR_SIZE);
    }
    uint64_t hdr_end = r->names_off + r->names_size;
    if (!all_zero(r->buf + hdr_end, r->data_off - hdr_end))
        return ERR(INGOT_BAD_LAYOUT, hdr_end, "header", 6,
                   "padding before the data section is not zero");
    ING_TRY(check_shapes(r, err));
    bool fast = fast_tensors(r) && fast_names(r) && fast_index(r);
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
    /* The fast checks must never accept what the exact ones reject. */
    if (fast && (check_tensors(r, 0) != INGOT_OK || check_index(r, 0) != INGOT_OK))
        __builtin_trap();
#endif
    if (!fast) ING_TRY(check_tensors(r, err));
    ING_TRY(check_params(r, err));
    if (!fast) ING_TRY(check_index(r, err));
    ING_TRY(check_meta(r, err));
    if (check_crc) {
        uint32_t want = ing_ld32(r->buf + HDR_CRC);
        if (crc != want)
            return HERR(INGOT_BAD_CHECKSUM, HDR_CRC,
                        "header checksum 0x%08x, computed 0x%08x over bytes [0, %llu)", want, crc,
                        (unsigned long long)r->data_off);
    }
    *out = r;
    return INGOT_OK;
}

uint64_t ingot_native_tensor_count(const ingot_native *r) { return r ? r->n_tensors : 0; }
uint64_t ingot_native_meta_count(const ingot_native *r) { return r ? r->n_meta : 0; }
uint32_t ingot_native_alignment(const ingot_native *r) { return r ? r->alignment : 0; }
uint64_t ingot_native_data_offset(const ingot_native *r) { return r ? r->data_off : 0; }
uint32_t ingot_native_version_minor(const ingot_native *r) { return r ? r->minor : 0; }

/* Tensor i's byte size (validated at open); with out, also its dtype, shape and param id. */
static uint64_t tensor_nbytes(const ingot_native *r, uint64_t i, ingot_tensor_info *out)
{
    const uint8_t *e = tentry(r, i);
    const uint8_t *s = shape_rec(r, ing_ld32(e + TEN_SHAPE));
    uint64_t nbytes = ing_ld64(s + SHP_NBYTES);
    if (out) {
        uint32_t rank = s[SHP_RANK];
        const uint8_t *d = dims(r) + 8 * (uint64_t)ing_ld32(s + SHP_DIMS_AT);
        uint64_t nelem = 1;
        for (uint32_t k = 0; k < rank; k++) {
            out->shape[k] = ing_ld64(d + 8 * k);
            nelem *= out->shape[k]; /* validated: no overflow, or a 0 somewhere */
        }
        out->dtype = (ingot_dtype)ing_ld16(s + SHP_DTYPE);
        out->rank = rank;
        out->nelem = nelem;
        out->nbytes = nbytes;
        if (ing_ld32(e + TEN_FLAGS) & TEN_FLAG_PARAM_ID) {
            out->flags |= INGOT_TENSOR_HAS_PARAM_ID;
            out->param_id = ing_ld64(r->buf + r->pa_off + 8 * i);
        }
    }
    return nbytes;
}

ingot_status ingot_native_tensor_at(const ingot_native *r, uint64_t i, ingot_tensor_info *out)
{
    if (!r || !out) return INGOT_MISUSE;
    ING_MEMSET(out, 0, sizeof *out);
    if (i >= r->n_tensors) return INGOT_RANGE;
    const uint8_t *s;
    uint64_t slen;
    tensor_name(r, i, &s, &slen);
    out->name = (const char *)s;
    out->name_len = slen;
    out->flags = INGOT_TENSOR_HAS_CHECKSUM;
    tensor_nbytes(r, i, out);
    out->offset = r->data_off + ing_ld64(tentry(r, i) + TEN_OFFSET);
    if (r->avail == r->file_size)
        out->data = r->buf + out->offset;
    else
        out->flags |= INGOT_TENSOR_NOT_MAPPED;
    out->index = (uint32_t)i;
    return INGOT_OK;
}

ingot_status ingot_native_tensor_find(const ingot_native *r, const char *name, size_t len,
                                      ingot_tensor_info *out)
{
    if (!r || (!name && len) || !out) return INGOT_MISUSE;
    const uint8_t *ix = r->buf + r->ni_off;
    uint64_t lo = 0, hi = r->n_tensors;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        uint32_t i = ing_ld32(ix + 4 * mid);
        const uint8_t *s;
        uint64_t slen;
        tensor_name(r, i, &s, &slen);
        int c = bytes_cmp(s, slen, (const uint8_t *)name, len);
        if (c == 0) return ingot_native_tensor_at(r, i, out);
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    ING_MEMSET(out, 0, sizeof *out);
    return INGOT_NOT_FOUND;
}

ingot_status ingot_native_tensor_crc(const ingot_native *r, uint64_t i, uint32_t *crc)
{
    if (!r || !crc) return INGOT_MISUSE;
    if (i >= r->n_tensors) return INGOT_RANGE;
    *crc = ing_ld32(tentry(r, i) + TEN_CRC);
    return INGOT_OK;
}

ingot_status ingot_native_tensor_verify(const ingot_native *r, uint64_t i, ingot_error *err)
{
    if (!r) return INGOT_MISUSE;
    if (i >= r->n_tensors) return INGOT_RANGE;
    if (r->avail != r->file_size)
        return ERR(INGOT_UNSUPPORTED, INGOT_NO_OFFSET, 0, 0, "tensor data is not in the buffer");
    const uint8_t *e = tentry(r, i);
    const uint8_t *s;
    uint64_t slen;
    tensor_name(r, i, &s, &slen);
    uint64_t off = ing_ld64(e + TEN_OFFSET), n = tensor_nbytes(r, i, 0);
    uint32_t want = ing_ld32(e + TEN_CRC);
    uint32_t got = ingot__crc32c_stream(0, r->buf + r->data_off + off, n);
    if (got != want)
        return ERR(INGOT_BAD_CHECKSUM, r->data_off + off, (const char *)s, slen,
                   "tensor data checksum 0x%08x, stored 0x%08x", got, want);
    uint64_t end = i + 1 < r->n_tensors ? ing_ld64(tentry(r, i + 1) + TEN_OFFSET) : off + n;
    const uint8_t *pad = r->buf + r->data_off + off + n;
    for (uint64_t k = 0; k < end - off - n; k++)
        if (pad[k])
            return ERR(INGOT_BAD_LAYOUT, r->data_off + off + n + k, (const char *)s, slen,
                       "padding after the tensor is not zero");
    return INGOT_OK;
}

static void meta_fill(const ingot_native *r, uint64_t i, ingot_meta_info *out)
{
    const uint8_t *e = mentry(r, i);
    ING_MEMSET(out, 0, sizeof *out);
    out->key = (const char *)pool(r) + ing_ld64(e + MET_KEY_OFF);
    out->key_len = ing_ld32(e + MET_KEY_LEN);
    out->type = (ingot_meta_type)e[MET_TYPE];
    out->is_array = e[MET_FLAGS] & MET_FLAG_ARRAY;
    out->count = ing_ld64(e + MET_COUNT);
    out->index = i;
    uint64_t v = ing_ld64(e + MET_VALUE);
    if (out->is_array) return;
    switch (out->type) {
    case INGOT_META_U8: case INGOT_META_U16: case INGOT_META_U32: case INGOT_META_U64:
        out->v.u = v;
        break;
    case INGOT_META_I8: out->v.i = (int8_t)(uint8_t)v; break;
    case INGOT_META_I16: out->v.i = (int16_t)(uint16_t)v; break;
    case INGOT_META_I32: out->v.i = (int32_t)(uint32_t)v; break;
    case INGOT_META_I64: out->v.i = (int64_t)v; break;
    case INGOT_META_F32: {
        uint32_t b = (uint32_t)v;
        float f;
        ING_MEMCPY(&f, &b, 4);
        out->v.f = f;
        break;
    }
    case INGOT_META_F64: ING_MEMCPY(&out->v.f, &v, 8); break;
    case INGOT_META_BOOL: out->v.b = v != 0; break;
    case INGOT_META_STRING: case INGOT_META_BYTES: out->data = pool(r) + v; break;
    case INGOT_META_INVALID: break;
    }
}

ingot_status ingot_native_meta_at(const ingot_native *r, uint64_t i, ingot_meta_info *out)
{
    if (!r || !out) return INGOT_MISUSE;
    if (i >= r->n_meta) {
        ING_MEMSET(out, 0, sizeof *out);
        return INGOT_RANGE;
    }
    meta_fill(r, i, out);
    return INGOT_OK;
}

ingot_status ingot_native_meta_find(const ingot_native *r, const char *key, size_t len,
                                    ingot_meta_info *out)
{
    if (!r || (!key && len) || !out) return INGOT_MISUSE;
    uint64_t lo = 0, hi = r->n_meta;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        const uint8_t *e = mentry(r, mid);
        int c = bytes_cmp(pool(r) + ing_ld64(e + MET_KEY_OFF), ing_ld32(e + MET_KEY_LEN),
                          (const uint8_t *)key, len);
        if (c == 0) {
            meta_fill(r, mid, out);
            return INGOT_OK;
        }
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    ING_MEMSET(out, 0, sizeof *out);
    return INGOT_NOT_FOUND;
}

ingot_status ingot_native_meta_array_read(const ingot_native *r, uint64_t index,
                                          ingot_meta_type type, uint64_t first, uint64_t n,
                                          void *dst)
{
    if (!r || (!dst && n)) return INGOT_MISUSE;
    if (index >= r->n_meta) return INGOT_RANGE;
    const uint8_t *e = mentry(r, index);
    if (!(e[MET_FLAGS] & MET_FLAG_ARRAY) || e[MET_TYPE] != (uint8_t)type || !is_numeric(type))
        return INGOT_WRONG_TYPE;
    uint64_t count = ing_ld64(e + MET_COUNT);
    if (first > count || n > count - first) return INGOT_RANGE;
    uint32_t esz = ingot_meta_type_size(type);
    const uint8_t *src = pool(r) + ing_ld64(e + MET_VALUE) + first * esz;
    uint8_t *d = (uint8_t *)dst;
    for (uint64_t k = 0; k < n; k++) {
        /* Stored little-endian; assemble in host order whatever the host is. */
        uint64_t v = 0;
        for (uint32_t b = 0; b < esz; b++) v |= (uint64_t)src[k * esz + b] << (8 * b);
        switch (esz) {
        case 1: d[k] = (uint8_t)v; break;
        case 2: { uint16_t x = (uint16_t)v; ING_MEMCPY(d + 2 * k, &x, 2); break; }
        case 4: { uint32_t x = (uint32_t)v; ING_MEMCPY(d + 4 * k, &x, 4); break; }
        default: ING_MEMCPY(d + 8 * k, &v, 8); break;
        }
    }
    return INGOT_OK;
}

ingot_status ingot_native_meta_array_string(const ingot_native *r, uint64_t index, uint64_t elem,
                                            const char **s, size_t *len)
{
    if (!r || !s || !len) return INGOT_MISUSE;
    if (index >= r->n_meta) return INGOT_RANGE;
    const uint8_t *e = mentry(r, index);
    if (!(e[MET_FLAGS] & MET_FLAG_ARRAY) ||
        (e[MET_TYPE] != INGOT_META_STRING && e[MET_TYPE] != INGOT_META_BYTES))
        return INGOT_WRONG_TYPE;
    uint64_t count = ing_ld64(e + MET_COUNT);
    if (elem >= count) return INGOT_RANGE;
    if (e[MET_FLAGS] & MET_FLAG_PACKED) {
        const uint8_t *col = pool(r) + ing_ld64(e + MET_VALUE);
        uint32_t a = ing_ld32(col + 4 * elem), b = ing_ld32(col + 4 * elem + 4);
        *s = (const char *)col + 4 * (count + 1) + a;
        *len = (size_t)(b - a) - (e[MET_TYPE] == INGOT_META_STRING ? 1 : 0);
        return INGOT_OK;
    }
    const uint8_t *ref = pool(r) + ing_ld64(e + MET_VALUE) + elem * ING_STRREF_SIZE;
    *s = (const char *)pool(r) + ing_ld64(ref);
    *len = (size_t)ing_ld64(ref + 8);
    return INGOT_OK;
}
